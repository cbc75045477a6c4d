//! Newton's method for the mode (CmdStan's `optimize algorithm=newton`): the Hessian by finite
//! differences of the gradient ([`super::hessian::hessian`]), modified where it is not negative
//! definite, and a backtracking line search (Nocedal & Wright 2006, §3.1 and §3.4).
//!
//! The modification is the eigenvalue one of Nocedal & Wright §3.4: with −∇²L = Σ λ_k q_k q_kᵀ,
//! the step is p = Σ q_k (q_kᵀ∇L) / max(|λ_k|, 1e-8·max|λ|), the exact Newton step where −∇²L is
//! positive definite and an ascent direction everywhere else (a saddle's negative curvature is
//! followed uphill instead of toward the saddle). Stan does the same (it divides by |λ_k|).
//!
//! Stopping, as CmdStan's Newton optimizer: when an iteration raises L by less than
//! [`NEWTON_TOL_LP`], or after `max_iter` iterations; the L-BFGS tolerances do not apply.

use faer::{Mat, Side};

use super::density::{DensityError, LogDensity};
use super::hessian::{HessianError, hessian};
use super::optimize::{OptimizeError, OptimizeResult, OptimizeSettings, probe_coordinates};

/// Maximum number of coordinate probes that may overturn Newton's convergence test in one run
/// (as L-BFGS's `MAX_COORD_PROBES`, [X]).
const MAX_COORD_PROBES: usize = 5;

/// An iteration that raises L by less than this ends the run (CmdStan's Newton rule).
pub const NEWTON_TOL_LP: f64 = 1e-8;

/// Armijo constant of the backtracking line search (Nocedal & Wright eq. 3.4).
const ARMIJO_C1: f64 = 1e-4;

/// Halvings of the step before the line search gives up (2^-60 ≈ 1e-18 of the Newton step).
const MAX_HALVINGS: usize = 60;

/// L and ∇L at `x`; non-finite values and recoverable errors give L = −∞.
fn eval(density: &dyn LogDensity, x: &[f64], g: &mut [f64]) -> Result<f64, DensityError> {
    match density.log_density_grad(x, g) {
        Ok(lp) if lp.is_finite() && g.iter().all(|v| v.is_finite()) => Ok(lp),
        Ok(_) => Ok(f64::NEG_INFINITY),
        Err(e) if e.recoverable => Ok(f64::NEG_INFINITY),
        Err(e) => Err(e),
    }
}

/// The modified Newton step p (module docs) at a point with gradient `g` and Hessian `h` of L
/// (d × d row-major), and whether the Hessian had any curvature (false: it is zero to its
/// finite-difference precision and p is the gradient); `None` when the eigensolver fails or the
/// Hessian is not finite.
fn modified_step(g: &[f64], h: &[f64]) -> Option<(Vec<f64>, bool)> {
    let d = g.len();
    if h.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let neg = Mat::<f64>::from_fn(d, d, |i, j| -0.5 * (h[i * d + j] + h[j * d + i]));
    let evd = neg.self_adjoint_eigen(Side::Lower).ok()?;
    let (q, lambda) = (evd.U(), evd.S().column_vector());
    let largest = (0..d).map(|k| lambda[k].abs()).fold(0.0, f64::max);
    if !(largest.is_finite() && largest > 0.0) {
        // no curvature at all: a gradient step
        return Some((g.to_vec(), false));
    }
    let floor = 1e-8 * largest;
    let mut p = vec![0.0; d];
    for k in 0..d {
        let proj: f64 = (0..d).map(|i| q[(i, k)] * g[i]).sum();
        let c = proj / lambda[k].abs().max(floor);
        for (i, pi) in p.iter_mut().enumerate() {
            *pi += c * q[(i, k)];
        }
    }
    Some((p, true))
}

/// Why a run whose Hessian had no curvature is not called converged: a gain below
/// [`NEWTON_TOL_LP`] from a gradient step of length ‖∇L‖ says nothing when ‖∇L‖ is tiny because
/// the posterior's scale is huge (`mu ~ normal(1.23e15, 3e13)` from a start near 0: ‖∇L‖ ≈
/// 1e-12, a zero finite-difference Hessian, 840 still to gain). [X], fresh-user finding.
const NO_CURVATURE: &str = "the finite-difference Hessian is zero here (the curvature of the \
     log density is below its rounding, as for a parameter whose posterior scale is huge or a \
     flat direction), so Newton's method cannot judge whether this is an optimum; use the \
     default --algorithm lbfgs";

/// Maximises L = `density.log_density` from `init` by Newton's method (module docs), calling
/// `on_iterate(ζ_k, L(ζ_k), ∇L(ζ_k))` at the start and after every accepted step. Reads
/// `settings.max_iter` only. Cost per iteration: 2d + 1 gradients for the Hessian, an O(d³)
/// eigendecomposition and the line search's evaluations.
///
/// `converged` is true when an iteration gained less than [`NEWTON_TOL_LP`] (also when the line
/// search finds no increase and the predicted gain ∇Lᵀp is below it: a mode to working
/// precision); false at the iteration limit, when the Hessian cannot be computed, when the
/// line search fails with a larger predicted gain, or when the Hessian was zero at that
/// iteration (`NO_CURVATURE`: a tiny gain then says nothing).
///
/// Errors: as [`super::optimize::optimize`].
pub fn newton(
    density: &dyn LogDensity,
    init: &[f64],
    settings: &OptimizeSettings,
    on_iterate: &mut dyn FnMut(&[f64], f64, &[f64]),
) -> Result<OptimizeResult, OptimizeError> {
    let d = density.dim();
    if init.len() != d {
        return Err(OptimizeError::DimensionMismatch {
            expected: d,
            got: init.len(),
        });
    }
    let mut x = init.to_vec();
    let mut g = vec![0.0; d];
    let mut f = match eval(density, &x, &mut g) {
        Ok(f) if f.is_finite() => f,
        Ok(_) => {
            return Err(OptimizeError::BadInit(
                "the log density or its gradient is not finite at the initial point".into(),
            ));
        }
        Err(e) => return Err(OptimizeError::BadInit(e.to_string())),
    };
    on_iterate(&x, f, &g);
    let done = |x: Vec<f64>, f: f64, it: usize, converged: bool, msg: String| OptimizeResult {
        point: x,
        log_density: f,
        iterations: it,
        converged,
        message: msg,
    };
    let mut it = 0;
    let mut coord_probes = 0;
    while it < settings.max_iter {
        it += 1;
        let h = match hessian(density, &x) {
            Ok(h) => h,
            Err(HessianError::Density(e)) if !e.recoverable => {
                return Err(OptimizeError::Density(e));
            }
            Err(e) => return Ok(done(x, f, it, false, e.to_string())),
        };
        let Some((p, curved)) = modified_step(&g, &h) else {
            return Ok(done(
                x,
                f,
                it,
                false,
                "the Hessian is not finite or its eigendecomposition failed".into(),
            ));
        };
        let slope: f64 = g.iter().zip(&p).map(|(a, b)| a * b).sum();
        let mut t = 1.0;
        let mut accepted = None;
        for _ in 0..MAX_HALVINGS {
            let trial: Vec<f64> = x.iter().zip(&p).map(|(xi, pi)| xi + t * pi).collect();
            let mut g_trial = vec![0.0; d];
            let f_trial = eval(density, &trial, &mut g_trial).map_err(OptimizeError::Density)?;
            if f_trial.is_finite() && f_trial >= f + ARMIJO_C1 * t * slope {
                accepted = Some((trial, g_trial, f_trial));
                break;
            }
            t *= 0.5;
        }
        let Some((x_new, g_new, f_new)) = accepted else {
            if !curved {
                return Ok(done(x, f, it, false, NO_CURVATURE.into()));
            }
            let at_mode = slope < NEWTON_TOL_LP;
            if at_mode
                && coord_probes < MAX_COORD_PROBES
                && let Some((xn, fnew, gn)) = probe_coordinates(density, &x, f, &g)?
            {
                coord_probes += 1;
                (x, f, g) = (xn, fnew, gn);
                on_iterate(&x, f, &g);
                continue;
            }
            let msg = if at_mode {
                "no increase along the Newton direction; predicted gain below 1e-8"
            } else {
                "line search failed to find a sufficient increase; no more progress can be made"
            };
            return Ok(done(x, f, it, at_mode, msg.into()));
        };
        let gain = f_new - f;
        x = x_new;
        g = g_new;
        f = f_new;
        on_iterate(&x, f, &g);
        if gain < NEWTON_TOL_LP && !curved {
            return Ok(done(x, f, it, false, NO_CURVATURE.into()));
        }
        if gain < NEWTON_TOL_LP {
            // a coordinate whose scale hides it from the Hessian's rounding (see
            // optimize::probe_coordinates): not a mode while one coordinate alone still gains
            if coord_probes < MAX_COORD_PROBES
                && let Some((xn, fnew, gn)) = probe_coordinates(density, &x, f, &g)?
            {
                coord_probes += 1;
                (x, f, g) = (xn, fnew, gn);
                on_iterate(&x, f, &g);
                continue;
            }
            return Ok(done(
                x,
                f,
                it,
                true,
                "change in log density below 1e-8 (Newton)".into(),
            ));
        }
    }
    Ok(done(
        x,
        f,
        it,
        false,
        "maximum number of iterations reached; may not be at an optimum".into(),
    ))
}
