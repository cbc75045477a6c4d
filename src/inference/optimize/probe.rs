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
/// The rounding allowance of [`coordinate_probe`]'s gain threshold θ, in units of ε·|f|: a gain
/// of τ²/2 = 0.5 nats is material whatever |f| is, as long as it stands above the rounding of
/// f. [X], fresh-user finding (session 20): with `y ~ normal(mu, 0.01)` on y = ±1e5
/// (|f| = 7.4e14, ε·|f| = 0.16) the earlier allowance 100·ε·|f| = 16 hid a gain of 2 nats in
/// `b ~ normal(3, 1)` (b stopped at 0.99 "converged"); 4·ε·|f| = 0.66 lets it through and keeps
/// several ulps of f between a gain and noise.
const ROUNDING_ULPS: f64 = 4.0;
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
/// The short step (in ζ) at which [`coordinate_probe`] reads the slope along e_j when the trial
/// step t_j gains nothing: a slope no less steep than at ζ means f is concave (L convex) there,
/// a stretch that cannot hold an optimum of a proper density, and an expanding line search
/// follows it. [X], a design decision (fresh-user finding, session 20: `real<lower=0> mu;
/// mu ~ normal(1.23e15, 3e13)` stopped at mu = 3.48, where L is convex in log mu and
/// t_j = 2e11 overflows); at a true optimum the slope there is less steep and nothing changes.
const CURVATURE_STEP: f64 = 1e-3;

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
/// step t_j = 2θ/|g_j| along e_j, θ = max(τ²/2, [`ROUNDING_ULPS`]·ε·|f|) with τ = [`COORD_TOL`]. Under a
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
/// does not fire on is bit-for-bit the run without it. When no coordinate gains at t_j, a
/// coordinate whose slope at the short step [`CURVATURE_STEP`] is no less steep (f concave, L
/// convex along e_j: no optimum there) is followed by [`climb`], and kept when it gains > θ. Cost: d evaluations of f and ∇f, plus
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
    let theta = (0.5 * COORD_TOL * COORD_TOL).max(ROUNDING_ULPS * f64::EPSILON * f.abs());
    let mut best: Option<(usize, f64, f64)> = None; // (j, gain, t_j)
    let mut stretch: Vec<(usize, f64)> = Vec::new(); // (j, step) where f is not convex
    let mut gz = vec![0.0; d];
    for j in 0..d {
        if g[j] == 0.0 || !g[j].is_finite() {
            continue;
        }
        let t = 2.0 * theta / g[j].abs();
        let mut z = x.to_vec();
        z[j] -= t * g[j].signum();
        // an error at a trial point (far out on an ordinary coordinate) is no evidence
        let trial = if z[j] == x[j] || !z[j].is_finite() {
            None
        } else {
            obj.eval(&z, &mut gz).ok()
        };
        // still descending at z: under a quadratic model the same condition as the gain
        // (|g_j|/√h_j > τ), and it keeps a point beyond another mode's basin from firing
        if let Some(fz) = trial
            && f - fz > theta
            && gz[j] * g[j] > 0.0
        {
            let gain = f - fz;
            if best.is_none_or(|(_, b, _)| gain > b) {
                best = Some((j, gain, t));
            }
            continue;
        }
        // The quadratic model fails where f is concave along e_j (L convex: the far prior on
        // log mu, ζ = 1.25, slope 5e-12; t_j = 2e11 overflows): the slope at a short step that
        // is no less steep marks a stretch that cannot hold an optimum of a proper density.
        if best.is_none() {
            let h = CURVATURE_STEP.min(t);
            let mut z = x.to_vec();
            z[j] -= h * g[j].signum();
            if z[j] != x[j]
                && let Ok(fz) = obj.eval(&z, &mut gz)
                && fz.is_finite()
                && gz[j] * g[j].signum() >= g[j].abs()
            {
                stretch.push((j, h));
            }
        }
    }
    if let Some((j, _, t)) = best {
        return follow(obj, x, f, g, j, t);
    }
    // a concave stretch of f: an expanding line search from the short step, kept only when
    // it gains more than θ
    let mut found: Option<Trial> = None;
    for (j, h) in stretch {
        if let Some(t) = climb(obj, x, f, g, j, h)?
            && f - t.f > theta
            && found.as_ref().is_none_or(|b| t.f < b.f)
        {
            found = Some(t);
        }
    }
    Ok(found)
}

/// Most doublings of [`climb`] (2⁸⁰ times a step of 1e-3 is 1e21 in ζ).
const MAX_DOUBLINGS: usize = 80;

/// The search of [`coordinate_probe`] along a concave stretch of f: from ζ = `x` along
/// −sign(g_j)·e_j, steps h, 2h, 4h, … while f does not rise, stays finite and still descends
/// (in a flat-to-rounding stretch the strong-Wolfe search of [`follow`] cannot start: f does not
/// change while the slope steepens); from the last such point, [`follow`]. Returns the best
/// point found, `None` when none is lower than f. Errors: an unrecoverable density error.
fn climb(
    obj: &Objective,
    x: &[f64],
    f: f64,
    g: &[f64],
    j: usize,
    h: f64,
) -> Result<Option<Trial>, OptimizeError> {
    let d = x.len();
    let dir = -g[j].signum();
    let mut best: Option<Trial> = None;
    let mut a = h;
    for _ in 0..MAX_DOUBLINGS {
        let mut z = x.to_vec();
        z[j] += a * dir;
        let mut gz = vec![0.0; d];
        let Ok(fz) = obj.eval(&z, &mut gz) else {
            break;
        };
        if !fz.is_finite() || !z[j].is_finite() || fz > best.as_ref().map_or(f, |b| b.f) {
            break;
        }
        let df = gz[j] * dir;
        best = Some(Trial {
            alpha: a,
            f: fz,
            df,
            x: z,
            g: gz,
        });
        if df >= 0.0 {
            break;
        }
        a *= 2.0;
    }
    let Some(b) = best else {
        return Ok(None);
    };
    if b.g[j] == 0.0 || !b.g[j].is_finite() {
        return Ok((b.f < f).then_some(b));
    }
    let further = follow(obj, &b.x, b.f, &b.g, j, b.alpha)?;
    Ok(match further {
        Some(t) if t.f < b.f => Some(t),
        _ => (b.f < f).then_some(b),
    })
}

/// The line search of [`coordinate_probe`] from ζ = `x` (f = `f`, ∇f = `g`) along −sign(g_j)·e_j
/// starting at step `t`, followed by up to [`SECANT_STEPS`] secant steps on the slope; `None`
/// when it gains nothing. Errors: an unrecoverable density error.
fn follow(
    obj: &Objective,
    x: &[f64],
    f: f64,
    g: &[f64],
    j: usize,
    t: f64,
) -> Result<Option<Trial>, OptimizeError> {
    let d = x.len();
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

/// The largest log-density gain a convergence test may leave unclaimed, in nats: the predicted
/// gain ½∇Lᵀ(−∇²L)⁻¹∇L of a Newton step at a point the tests of [`super::optimize`] accept when
/// the log density's rounding hides gains of this size ([`rounding_hides_gains`]). A gain of
/// 1e-4 is a displacement of √(2·1e-4) ≈ 0.014 conditional standard deviations. [X], a design
/// decision (fresh-user finding, session 21): with |L| = 7.4e14 the relative-objective test
/// tolerates gains of 1.6e5 nats, and L-BFGS stopped with `s ~ lognormal(0, 1)` at s = 0.674,
/// 0.6 sd from its mode 0.368 (predicted gain 0.18, seeds 2, 7, 13, 14, 15, 21 and 27 of 1–30).
pub(super) const MATERIAL_GAIN: f64 = 1e-4;

/// Most Newton steps that [`rounding_check`] may take in one run ([X]: on a quadratic one
/// suffices; a log density whose Newton steps keep gaining more than [`MATERIAL_GAIN`] after
/// ten is reported as not converged).
pub(super) const MAX_ROUNDING_STEPS: usize = 10;

/// Whether the tests of [`super::optimize`] that read changes of f = −L (|Δf| < `tol_obj`, the
/// relative change and the relative gradient, both scaled by |f|) can pass while a material
/// gain remains: when the gain the relative-objective test tolerates, `tol_rel_obj`·ε·|f|, or
/// the rounding of f itself ([`ROUNDING_ULPS`]·ε·|f|) exceeds [`MATERIAL_GAIN`]. With the
/// default `tol_rel_obj` = 1e4 that is |f| > 4.5e7. The gradient is computed term by term in
/// reverse mode and is not rounded to the size of f, so it still judges the point there.
pub(super) fn rounding_hides_gains(f: f64, settings: &OptimizeSettings) -> bool {
    settings.tol_rel_obj.max(ROUNDING_ULPS) * f64::EPSILON * f.abs().max(1.0) > MATERIAL_GAIN
}

/// The verdict of [`rounding_check`] on a point whose f-based convergence test fired where
/// [`rounding_hides_gains`].
pub(super) enum RoundingVerdict {
    /// The Newton decrement confirms the stop: the predicted gain (nats) is at most
    /// [`MATERIAL_GAIN`].
    Confirmed(f64),
    /// A material gain remained; the Newton step was taken: the new point with f and ∇f.
    Stepped(Trial),
    /// The stop cannot be confirmed: why, in words.
    Unconfirmed(String),
}

/// The gradient-based judgement of a stop at ζ = `x` (f = `f`, ∇f = `g`, length d) by a test
/// that reads f where [`rounding_hides_gains`]: the finite-difference Hessian of L there
/// ([`crate::inference::hessian::hessian`], 2d gradients) gives the Newton decrement
/// ½∇Lᵀ(−∇²L)⁻¹∇L, the gain a Newton step predicts. At most [`MATERIAL_GAIN`]: the stop
/// stands. Above it: the line search along the Newton direction (whose approximate Wolfe
/// conditions judge the slope when f is flat to rounding) from step 1, when `may_step`; that
/// point is returned. When −∇²L is not positive definite, the Hessian cannot be computed, or
/// the line search fails, the stop is not confirmed. Errors: an unrecoverable density error.
/// [X], a design decision (see [`MATERIAL_GAIN`]).
pub(super) fn rounding_check(
    obj: &Objective,
    x: &[f64],
    f: f64,
    g: &[f64],
    may_step: bool,
) -> Result<RoundingVerdict, OptimizeError> {
    use crate::inference::hessian::{HessianError, hessian};
    let d = x.len();
    let h = match hessian(obj.density, x) {
        Ok(h) => h,
        Err(HessianError::Density(e)) if !e.recoverable => {
            return Err(OptimizeError::Density(e));
        }
        Err(e) => return Ok(RoundingVerdict::Unconfirmed(e.to_string())),
    };
    let neg = faer::Mat::<f64>::from_fn(d, d, |i, j| -0.5 * (h[i * d + j] + h[j * d + i]));
    let Ok(llt) = neg.llt(faer::Side::Lower) else {
        return Ok(RoundingVerdict::Unconfirmed(
            "the finite-difference Hessian is not negative definite here".into(),
        ));
    };
    use faer::linalg::solvers::Solve;
    // (−∇²L)⁻¹∇L = −(−∇²L)⁻¹∇f: the Newton direction, a descent direction of f
    let sol = llt.solve(faer::Mat::from_fn(d, 1, |i, _| g[i]));
    let p: Vec<f64> = (0..d).map(|i| -sol[(i, 0)]).collect();
    let gain = 0.5 * (0..d).map(|i| g[i] * sol[(i, 0)]).sum::<f64>();
    if !gain.is_finite() {
        return Ok(RoundingVerdict::Unconfirmed(
            "the Newton decrement is not finite".into(),
        ));
    }
    if gain <= MATERIAL_GAIN {
        return Ok(RoundingVerdict::Confirmed(gain));
    }
    let unconfirmed = format!("a Newton step still predicts a gain of {gain:.2e}");
    if !may_step {
        return Ok(RoundingVerdict::Unconfirmed(unconfirmed));
    }
    let df0 = -2.0 * gain;
    let step = line_search(obj, x, f, df0, &p, 1.0).map_err(OptimizeError::Density)?;
    Ok(match step {
        Some(t) => RoundingVerdict::Stepped(t),
        None => RoundingVerdict::Unconfirmed(unconfirmed),
    })
}
