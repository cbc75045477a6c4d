//! The per-coordinate (diagonal Newton) probe of [`super::optimize`]: a guard against a false
//! "converged" when one coordinate's scale differs from the others' by many orders of magnitude.
//!
//! Fresh-user finding (session 19): with `mu ~ normal(1.23e15, 3e13); z ~ normal(1, 0.1)` the
//! gradient along mu is about 1e-12 at a random start (mu ≈ 1), below every default tolerance
//! and hidden in −∇f by z's component, so L-BFGS stopped at mu ≈ 1.25 saying "converged" (seeds
//! 1, 3, 6; with `real<lower=0> z` seeds 1, 2, 5, 6) — 41 standard deviations from the mode.
//! Every convergence test (Stan's, [`super::OptimizeSettings`]) reads ‖∇f‖, the last step or
//! the curvature estimate, and none of them sees that coordinate.

use super::{Objective, OptimizeError, OptimizeSettings, Trial, line_search};

/// The tolerance τ of [`coordinate_probe`], in standard deviations: ζ is not accepted as a mode
/// while some coordinate's one-dimensional Newton step is longer than τ of its conditional
/// standard deviation 1/√h_j (h_j = ∂²f/∂ζ_j²), |g_j|/√h_j > τ; equivalently, while moving that
/// coordinate alone would raise the log density by more than τ²/2 = 0.5. [X], a design decision
/// from measurements (session 20): over 390 stops of L-BFGS at the default tolerances on the
/// 28 example models (examples/ and examples/posteriordb; optimize seeds 1–5, QBVI seeds 1–2,
/// Laplace and Pathfinder seed 1), max_j |g_j|/√h_j was below 0.01 everywhere except
/// posteriordb's earnings-earn_height, at 0.36 on every run (its intercept, correlated −0.998
/// with the slope, so one conditional sd is a sliver of the marginal one; the Newton polish
/// finishes it). A τ below 0.36 would move that mode and every fit started from it; the far
/// prior `mu ~ normal(1.23e15, 3e13)` beside `z ~ normal(1, 0.1)` stops at 41. (τ = 1e-3, the
/// first version, fired on 32 of the 390, among them labour.)
pub(super) const COORD_TOL: f64 = 1.0;
/// Largest d for which [`coordinate_probe`] runs (d function evaluations per call), as
/// `flat::FLAT_COMBINATION_MAX_DIM` ([X]: a BNN with 5000 weights would pay 5000 evaluations).
pub(super) const COORD_MAX_DIM: usize = 200;
/// Maximum number of [`coordinate_probe`]s that may overturn a convergence test in one run ([X]:
/// one is enough for each far coordinate seen; a coordinate that keeps gaining is reported as
/// not converged rather than probed without end).
pub(super) const MAX_COORD_PROBES: usize = 5;
/// Maximum number of secant steps on the slope after [`coordinate_probe`]'s line search ([X]:
/// on the far prior one reaches the optimum of the quadratic to rounding; a few more cover a
/// coordinate whose log density is not quite quadratic).
const SECANT_STEPS: usize = 4;

/// Which of Stan's convergence tests stopped an iteration of [`super::optimize`] (the iteration
/// limit is not a convergence and is never probed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum StopTest {
    /// |Δf| < `tol_obj`.
    Obj,
    /// ‖∇f‖ < `tol_grad`.
    Grad,
    /// ‖Δζ‖ < `tol_param`.
    Param,
    /// relative |Δf| < `tol_rel_obj`·ε.
    RelObj,
    /// gᵀHg / max(|f|, 1) < `tol_rel_grad`·ε.
    RelGrad,
}

/// Whether [`coordinate_probe`] may overturn a stop by `test`: only when that test's tolerance
/// in `settings` is no looser than its default ([`OptimizeSettings::default`]). The probe guards
/// against a false "converged" at the default tolerances; a tolerance the user loosened (e.g.
/// `--tol-grad 1`) is a request to stop there, and the run stops where that tolerance says
/// (tests/optimize_algorithms.rs `tolerances_stop_where_documented`). [X], a design decision.
pub(super) fn may_probe(settings: &OptimizeSettings, test: StopTest) -> bool {
    let d = OptimizeSettings::default();
    match test {
        StopTest::Obj => settings.tol_obj <= d.tol_obj,
        StopTest::Grad => settings.tol_grad <= d.tol_grad,
        StopTest::Param => settings.tol_param <= d.tol_param,
        StopTest::RelObj => settings.tol_rel_obj <= d.tol_rel_obj,
        StopTest::RelGrad => settings.tol_rel_grad <= d.tol_rel_grad,
    }
}

/// The per-coordinate (diagonal Newton) test of a point ζ (length d) that passed a convergence
/// test at tolerances [`may_probe`] allows, for d ≤ [`COORD_MAX_DIM`]; `f` = f(ζ) = −L(ζ) and
/// `g` = ∇f(ζ) (length d). For each coordinate j with ∂f/∂ζ_j ≠ 0, f is evaluated at the descent
/// step t_j = 2θ/|g_j| along e_j, θ = max(τ²/2, 100·ε·|f|) with τ = [`COORD_TOL`]. Under a
/// quadratic model with curvature h_j the decrease there is 2θ − 2h_j·θ²/g_j², which exceeds θ
/// exactly when the one-dimensional Newton decrease g_j²/(2h_j) does, i.e. when |g_j|/√h_j > τ,
/// and the slope at the trial point still descends under the same condition; both are
/// required, so a trial point that lands beyond a coordinate's optimum in a better basin far
/// away does not count. No curvature estimate is needed, so a curvature of 1e-27 (a prior sd of
/// 3e13) is judged as well as one of 1. A trial point where the density fails counts as no
/// gain. When some coordinate gains, the one with the largest gain is followed by the line
/// search from ζ along e_j (starting at t_j, expanding tenfold while the slope does not change)
/// and up to [`SECANT_STEPS`] secant steps on the slope along e_j, and that point (with f and
/// ∇f) is returned; `None` otherwise, and always when the probe does not fire, so a run it
/// does not fire on is bit-for-bit the run without it. Cost: d evaluations of f and ∇f, plus
/// one line search when it fires. Errors: an unrecoverable density error in that line search
/// ([`OptimizeError::Density`]). [X], a design decision (fresh-user finding, session 19;
/// threshold measured in session 20, see [`COORD_TOL`]).
pub(super) fn coordinate_probe(
    obj: &Objective,
    x: &[f64],
    f: f64,
    g: &[f64],
) -> Result<Option<Trial>, OptimizeError> {
    let d = x.len();
    if d > COORD_MAX_DIM || !f.is_finite() {
        return Ok(None);
    }
    let theta = (0.5 * COORD_TOL * COORD_TOL).max(100.0 * f64::EPSILON * f.abs());
    let mut best: Option<(usize, f64, f64)> = None; // (j, gain, t_j)
    let mut gz = vec![0.0; d];
    for j in 0..d {
        if g[j] == 0.0 || !g[j].is_finite() {
            continue;
        }
        let t = 2.0 * theta / g[j].abs();
        let mut z = x.to_vec();
        z[j] -= t * g[j].signum();
        if z[j] == x[j] || !z[j].is_finite() {
            continue;
        }
        // an error at a trial point (far out on an ordinary coordinate) is no evidence
        let Ok(fz) = obj.eval(&z, &mut gz) else {
            continue;
        };
        let gain = f - fz;
        // still descending at z: under a quadratic model the same condition as the gain
        // (|g_j|/√h_j > τ), and it keeps a point beyond another mode's basin from firing
        let descending = gz[j] * g[j] > 0.0;
        if gain > theta && descending && best.is_none_or(|(_, b, _)| gain > b) {
            best = Some((j, gain, t));
        }
    }
    let Some((j, _, t)) = best else {
        return Ok(None);
    };
    let mut p = vec![0.0; d];
    p[j] = -g[j].signum();
    let df0 = -g[j].abs();
    let Some(mut cur) = line_search(obj, x, f, df0, &p, t)
        .map_err(OptimizeError::Density)?
        .filter(|s| s.f < f)
    else {
        return Ok(None);
    };
    // The strong-Wolfe line search stops once the slope has fallen by 10% (C2 = 0.9); along a
    // coordinate of scale 3e13 that is a few hundredths of the way to its optimum, and L-BFGS
    // afterwards sees the same blindness again. Secant steps on the slope along e_j (exact
    // for a quadratic) take the point to the one-dimensional optimum.
    let mut prev = (0.0, df0);
    for _ in 0..SECANT_STEPS {
        let (a0, s0) = prev;
        let (a1, s1) = (cur.alpha, cur.df);
        if !(s1.is_finite() && s1 != s0) || s1 == 0.0 {
            break;
        }
        let a = a1 - s1 * (a1 - a0) / (s1 - s0);
        if !(a.is_finite() && a > 0.0) || a == a1 {
            break;
        }
        let mut z = x.to_vec();
        z[j] += a * p[j];
        let mut gz = vec![0.0; d];
        let Ok(fz) = obj.eval(&z, &mut gz) else {
            break;
        };
        if !(fz < cur.f) {
            break;
        }
        prev = (a1, s1);
        let df = gz[j] * p[j];
        cur = Trial {
            alpha: a,
            f: fz,
            df,
            x: z,
            g: gz,
        };
    }
    Ok(Some(cur))
}
