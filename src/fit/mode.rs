//! Finding the mode: the `optimize` method (L-BFGS, Newton polish, standard errors) and the
//! start of the variational methods (Laplace at the mode, or random when there is none).

use super::*;

/// `Method::Optimize`: L-BFGS from a random point (stream 0) or the `--init FILE` point, Newton polish, the Hessian of the
/// maximised density there and delta-method standard errors on the constrained scale (the
/// sandwich of a robust covariance transforms like the classical one at an interior optimum).
///
/// Errors: as [`fit`]; with `StdErrorKind::Robust`, [`FitError::Algorithm`] when the model has
/// fewer than two observations or their scores cannot be computed.
pub(super) fn run_optimize(model: &Model, options: &FitOptions) -> Result<OptimizeFit, FitError> {
    use faer::linalg::solvers::DenseSolveCore;
    let density = model.with_jacobian(options.jacobian);
    let init = match super::inits::user_start(model, options)? {
        Some(z) => z,
        None => crate::inference::init::random_init(&density, &mut stream(options.seed, 0))
            .map_err(FitError::from_init)?,
    };
    let lbfgs = optimize::optimize(&density, &init, &options.optimize).map_err(|e| {
        FitError::Algorithm {
            method: Method::Optimize,
            message: e.to_string(),
        }
    })?;
    let d = lbfgs.point.len();
    let (point, log_density, neg_h, newton_steps) =
        match optimize::newton_refine(&density, &lbfgs.point, NEWTON_STEPS) {
            Some(r) if r.log_density >= lbfgs.log_density => {
                (r.point, r.log_density, Some(r.neg_hessian), r.steps)
            }
            _ => {
                let h = crate::inference::hessian::hessian(&density, &lbfgs.point).ok();
                let neg = h.map(|h| h.iter().map(|v| -v).collect::<Vec<f64>>());
                (lbfgs.point.clone(), lbfgs.log_density, neg, 0)
            }
        };
    // Σ = (−H)⁻¹ when −H is positive definite
    let neg_h_kept = neg_h.clone();
    let polished = neg_h
        .as_ref()
        .and_then(|nh| newton_decrement(&density, &point, nh))
        .filter(|&dec| dec <= crate::inference::newton::NEWTON_TOL_LP);
    let cov: Option<Vec<f64>> = neg_h.and_then(|nh| {
        let m = faer::Mat::from_fn(d, d, |i, j| 0.5 * (nh[i * d + j] + nh[j * d + i]));
        let inv = m.llt(faer::Side::Lower).ok()?.inverse();
        Some((0..d * d).map(|k| inv[(k / d, k % d)]).collect())
    });
    let cov = match (cov, options.std_errors) {
        (Some(c), StdErrorKind::Robust) => Some(
            crate::inference::sandwich::robust_covariance(
                &|z: &[f64]| model.pointwise_log_likelihood(z),
                &point,
                &c,
            )
            .map_err(|e| FitError::Algorithm {
                method: Method::Optimize,
                message: e.to_string(),
            })?,
        ),
        (c, _) => c,
    };
    let unconstrained_se = match &cov {
        Some(c) => (0..d).map(|i| c[i * d + i].sqrt()).collect(),
        None => vec![f64::NAN; d],
    };
    let mut rng = stream(options.seed, 1000);
    let estimates = model
        .write_array(&point, true, false, &mut rng)
        .map_err(FitError::Constrain)?;
    let mut names = model.parameter_names();
    names.extend(model.transformed_parameter_names());
    let p = estimates.len();
    let std_errors = match &cov {
        Some(c) => {
            // J = ∂θ/∂ζ (p×d) by central differences, steps as the Hessian's
            let mut jac = vec![0.0; p * d];
            let mut x = point.clone();
            for j in 0..d {
                let h = crate::inference::hessian::finite_diff_step(point[j]);
                x[j] = point[j] + h;
                let up = model.write_array(&x, true, false, &mut rng);
                x[j] = point[j] - h;
                let down = model.write_array(&x, true, false, &mut rng);
                x[j] = point[j];
                match (up, down) {
                    (Ok(u), Ok(dn)) => {
                        for k in 0..p {
                            jac[k * d + j] = (u[k] - dn[k]) / (2.0 * h);
                        }
                    }
                    _ => {
                        for k in 0..p {
                            jac[k * d + j] = f64::NAN;
                        }
                    }
                }
            }
            (0..p)
                .map(|k| {
                    let row = &jac[k * d..(k + 1) * d];
                    let mut v = 0.0;
                    for i in 0..d {
                        for j in 0..d {
                            v += row[i] * c[i * d + j] * row[j];
                        }
                    }
                    v.max(0.0).sqrt()
                })
                .collect()
        }
        None => vec![f64::NAN; p],
    };
    // a scale run to 0 along which the density rises without bound: no mode at all. Checked
    // before the flat directions: in a funnel's neck the curvature 1/tau² (10³² at tau = 5e-17,
    // BFGS on the centred eight schools) swamps every other term, so the likelihood's slope
    // along the common shift of mu and the theta fell below the flat probe's rounding threshold
    // and that shift was reported as "a direction the data and priors do not identify"
    let no_mode = interpolation_reason(model, &point)
        .or_else(|| funnel_reason(model, &density, options.jacobian, &point));
    // −H not positive definite: probe the coordinates with a zero Hessian row (all of them
    // when there is no Hessian) for a flat direction, O(d) gradients (issue 13, item 2)
    // A finite-difference Hessian of a ridge can come out invertible by rounding (standard
    // errors of 10⁷ on `y ~ normal(a + b, 1)`), so small models are probed either way; the
    // directional-derivative test out to 100 units keeps a proper optimum from being called
    // flat.
    let flat = if no_mode.is_none()
        && (cov.is_none() || (d <= MODE_START_MAX_D && neg_h_kept.is_some()))
    {
        crate::inference::flat::flat_directions(
            &density,
            &point,
            neg_h_kept.as_deref(),
            &model.parameter_names(),
        )
    } else {
        Vec::new()
    };
    // A coordinate flat only towards a bound it has reached is a mode on the boundary (the
    // density of `s ~ exponential(1)` is largest at s = 0), not an improper direction.
    // (only where something was found flat: elsewhere nothing changes and nothing is paid)
    let at_bound = if flat.is_empty() {
        Vec::new()
    } else {
        bound_modes(model, &density, &point, options.jacobian)
    };
    let flat: Vec<String> = flat
        .into_iter()
        .filter(|n| !at_bound.iter().any(|(_, name, _, _)| name == n))
        .collect();
    let (mut std_errors, mut unconstrained_se) = (std_errors, unconstrained_se);
    for (i, ..) in &at_bound {
        std_errors[*i] = f64::NAN;
        unconstrained_se[*i] = f64::NAN;
    }
    let at_bound: Vec<(String, &'static str, f64)> = at_bound
        .into_iter()
        .map(|(_, name, side, x)| (name, side, x))
        .collect();
    // no standard errors along a flat direction: the curvature there is rounding
    let (std_errors, unconstrained_se) = if flat.is_empty() {
        (std_errors, unconstrained_se)
    } else {
        (
            vec![f64::NAN; std_errors.len()],
            vec![f64::NAN; unconstrained_se.len()],
        )
    };
    let (std_errors, unconstrained_se) = if no_mode.is_none() {
        (std_errors, unconstrained_se)
    } else {
        (
            vec![f64::NAN; std_errors.len()],
            vec![f64::NAN; unconstrained_se.len()],
        )
    };
    Ok(OptimizeFit {
        algorithm: options.optimize.algorithm,
        converged: (lbfgs.converged || polished.is_some()) && flat.is_empty() && no_mode.is_none(),
        polished,
        no_mode,
        flat,
        at_bound,
        lbfgs,
        newton_steps,
        jacobian: options.jacobian,
        std_error_kind: options.std_errors,
        point,
        log_density,
        unconstrained_se,
        names,
        estimates,
        std_errors,
    })
}

/// The parameters whose optimum, without the Jacobian adjustment, is at a bound: coordinate i
/// (parameters mapping one-to-one to coordinates) such that moving ζ_i by 100 further on one
/// side moves the constrained value θ_i by at most 1e-6·max(1, |θ_i|) (θ_i has reached the
/// limit of its constraining map, the bound), the density is flat towards that side
/// ([`crate::inference::flat::flat_on_side`]) and not flat on the other. The maximised density
/// (on the constrained scale) then rises towards the bound and levels off at a finite value
/// there: its supremum is the bound itself. That is no improper posterior: a density bounded
/// near a finite bound is integrable there, as `s ~ exponential(1)` is (its mode is s = 0).
/// With the Jacobian adjustment the same flatness means a density ∝ 1/θ at the bound, which is
/// not integrable, so none is reported then. Returns (i, name, "lower" or "upper", θ_i).
/// [X], fresh-user finding (session 21): `real<lower=0> s; s ~ exponential(1);` was reported
/// as "no optimum … the posterior is improper".
fn bound_modes(
    model: &Model,
    density: &dyn LogDensity,
    point: &[f64],
    jacobian: bool,
) -> Vec<(usize, String, &'static str, f64)> {
    use crate::inference::flat::{FLAT_STEPS, flat_on_side};
    let names = model.parameter_names();
    let d = point.len();
    if jacobian || names.len() != d {
        return Vec::new();
    }
    let mut rng = stream(0, 0);
    let Ok(x0) = model.write_array(point, false, false, &mut rng) else {
        return Vec::new();
    };
    let far = FLAT_STEPS[FLAT_STEPS.len() - 1];
    let mut found = Vec::new();
    for i in 0..d {
        for sign in [-1.0, 1.0] {
            let mut at = |t: f64| {
                let mut z = point.to_vec();
                z[i] += sign * t;
                model
                    .write_array(&z, false, false, &mut rng)
                    .ok()
                    .and_then(|x| x.get(i).copied())
            };
            let (Some(x_far), Some(x_away)) = (at(far), at(-far)) else {
                continue;
            };
            let pinned = (x_far - x0[i]).abs() <= 1e-6 * x0[i].abs().max(1.0);
            if pinned
                && flat_on_side(density, point, i, sign)
                && !flat_on_side(density, point, i, -sign)
            {
                // larger away from the bound: a lower bound
                let side = if x_away > x0[i] { "lower" } else { "upper" };
                found.push((i, names[i].clone(), side, x0[i]));
                break;
            }
        }
    }
    found
}

/// Maximum Newton steps that polish the L-BFGS mode before a variational fit.
pub(super) const NEWTON_STEPS: usize = 20;

/// Above this d the mode search before a variational fit takes at most
/// [`NEWTON_STEPS_LARGE`] Newton steps: each step needs a finite-difference Hessian (2d
/// gradients, O(d) log-density evaluations), so 20 steps cost 40d gradients — 19 s for a BNN
/// with d = 602 at 0.8 ms per gradient ([X], a design decision).
pub const NEWTON_FULL_MAX_DIM: usize = 100;

/// Newton steps of the mode search above [`NEWTON_FULL_MAX_DIM`]: 2, so at most 3 Hessians
/// (6d gradient evaluations) whatever the dimension.
pub const NEWTON_STEPS_LARGE: usize = 2;

/// The number of Newton steps of the mode search for dimension `d`.
pub(super) fn newton_steps(d: usize) -> usize {
    if d > NEWTON_FULL_MAX_DIM {
        NEWTON_STEPS_LARGE
    } else {
        NEWTON_STEPS
    }
}

/// The start of a variational fit (see [`ViInit`]).
#[derive(Clone, Debug)]
pub(super) struct ViStart {
    /// The initial mean (length d).
    pub(super) mean: Vec<f64>,
    /// The initial precision (d×d row-major): the negative Hessian at the mode, or `None` for
    /// the specification's Σ₀ = 0.01·I.
    pub(super) precision: Option<Vec<f64>>,
    /// Why the mode start was abandoned for the random one (see [`find_mode`]); `None` with
    /// `ViInit::Random` or when the mode start was used.
    pub(super) no_mode: Option<String>,
}

/// The start of a variational fit (see [`ViInit`]): the Laplace approximation at the mode
/// found by [`find_mode`] or, when there is none (or with `ViInit::Random`), the random point
/// uniform(−2, 2) of stream 0 of `seed` with Σ₀ = 0.01·I (specs/qbvi.md §11).
///
/// `start` (from `--init FILE`, [`super::inits::user_start`]) replaces the random point: the
/// mode search starts there, and `ViInit::Random` starts at it.
pub(super) fn vi_start(
    model: &Model,
    how: ViInit,
    seed: u64,
    start: Option<Vec<f64>>,
) -> Result<ViStart, FitError> {
    let random = match start {
        Some(z) => z,
        None => crate::inference::init::random_init(model, &mut stream(seed, 0))
            .map_err(FitError::from_init)?,
    };
    if how == ViInit::Random {
        return Ok(ViStart {
            mean: random,
            precision: None,
            no_mode: None,
        });
    }
    Ok(match find_mode(model, &random) {
        Ok((mode, neg_hessian)) => ViStart {
            mean: mode,
            precision: Some(neg_hessian),
            no_mode: None,
        },
        Err(reason) => ViStart {
            mean: random,
            precision: None,
            no_mode: Some(reason),
        },
    })
}

/// Condition number of the Jacobi-scaled negative Hessian above which the mode found is taken
/// to be degenerate: the curvature of one direction dwarfs another's by more than the
/// 10¹⁰ that any proper, data-identified posterior shows after rescaling each coordinate
/// (e.g. the funnel of a centred hierarchical model at τ → 0, where the curvature in θ is
/// 1/τ² and that along the ridge θ = μ stays O(1)). [X], a design decision.
pub(super) const MODE_MAX_CONDITION: f64 = 1e10;

/// Newton decrement ∇Lᵀ(−H)⁻¹∇L above which the end point of the mode search is not a mode
/// (twice the log-density gain a further Newton step predicts). [X].
pub(super) const MODE_MAX_DECREMENT: f64 = 1e-3;

/// An interior mode of the unconstrained log density for the Laplace start of a variational
/// fit: L-BFGS from `init` polished by Newton steps, with −H there (d×d row-major).
///
/// Errors (a sentence saying why there is no interior mode, for the user): the optimiser fails
/// or ends at a non-finite density; the Hessian at its end point is not negative definite (a
/// flat or improper direction); the Jacobi-scaled −H has a condition number above
/// [`MODE_MAX_CONDITION`] or the Newton decrement stays above [`MODE_MAX_DECREMENT`] (the
/// density keeps growing towards the boundary of the unconstrained space, as in a funnel).
/// Either way the log density has no interior mode that a Laplace approximation could use.
pub(super) fn find_mode(model: &Model, init: &[f64]) -> Result<(Vec<f64>, Vec<f64>), String> {
    let lbfgs = optimize::optimize(model, init, &OptimizeSettings::default())
        .map_err(|e| format!("the mode search failed: {e}"))?;
    if !lbfgs.log_density.is_finite() {
        return Err("the mode search ended where the log density is not finite".into());
    }
    // Every failure below is explained by interpolation when a scale ran to 0, or by a density
    // that rises without bound as it does (a funnel's neck: IVON on the centred eight schools
    // was told only "the Hessian … is not negative definite (a flat or unbounded direction)")
    let unbounded = || {
        interpolation_reason(model, &lbfgs.point)
            .or_else(|| funnel_reason(model, model, true, &lbfgs.point))
    };
    find_mode_from(model, &lbfgs.point).map_err(|e| unbounded().unwrap_or(e))
}

/// The start of [`flat_reason`]'s message.
pub const FLAT: &str = "the log density stops changing along";

/// Why there is no interior mode when the log density is flat along `flat` (named directions)
/// beyond the end point of a mode search, for [`super::start_message_for`].
pub(super) fn flat_reason(flat: &[String]) -> String {
    format!(
        "{FLAT} {} beyond the end point of the mode search, out \
         to 100 units on the unconstrained scale, so the posterior is improper along it, as \
         when a likelihood saturates under a flat prior: a logistic regression whose outcomes a \
         predictor separates",
        crate::words::name_list(flat, 6)
    )
}

/// The start of [`interpolation_reason`]'s message (for [`super::start_message`]).
pub const INTERPOLATION: &str = "the likelihood is unbounded";

/// ζ below which a parameter with lower bound 0 (ζ = log x) counts as run to its bound at the
/// end of a failed mode search: x < e⁻¹⁰ ≈ 4.5·10⁻⁵ ([X], a design decision; only consulted
/// when no interior mode was found).
pub const INTERPOLATION_LOG_SCALE: f64 = -10.0;

/// Why the mode search found no interior mode, when the reason is interpolation: at its end
/// point `zeta` a parameter bounded below by 0 (a scale σ, unconstrained as ζ = log σ) lies
/// below e^[`INTERPOLATION_LOG_SCALE`] and the log-likelihood
/// ([`Model::pointwise_log_likelihood`], summed) drops by more than 1 when σ grows e-fold. The model then fits its data exactly, and the likelihood
/// ∏ N(y_n | f_n, σ) grows like σ^−N as σ → 0, so the log density is unbounded even with proper
/// priors. `None` otherwise (or when parameters do not map one-to-one to coordinates).
pub(super) fn interpolation_reason(model: &Model, zeta: &[f64]) -> Option<String> {
    let names = model.parameter_names();
    let log_lik = |z: &[f64]| {
        model
            .pointwise_log_likelihood(z)
            .ok()
            .map(|v| v.iter().sum::<f64>())
    };
    let here = log_lik(zeta)?;
    let scales: Vec<String> = scales_at_zero(model, zeta)?
        .into_iter()
        .filter(|&(i, _)| {
            // A noise scale: the likelihood itself falls when the scale grows e-fold (by about
            // N for exactly fitted rows). A hierarchical scale at 0 (a funnel) leaves the
            // likelihood unchanged.
            let mut up = zeta.to_vec();
            up[i] += 1.0;
            log_lik(&up).is_some_and(|l| here - l > 1.0)
        })
        .map(|(i, x)| format!("`{}` = {x:.1e}", names[i]))
        .collect();
    if scales.is_empty() {
        return None;
    }
    Some(format!(
        "{INTERPOLATION} as the scale {} goes to 0: the model fits its data exactly (it \
         interpolates them, as an over-parameterised network does), and the density of exactly \
         fitted data grows without bound as the noise scale shrinks, even with proper priors. Give \
         the scale a prior bounded away from 0 (e.g. `sigma ~ inv_gamma(2, 1)` or a lower bound \
         such as `real<lower=0.01> sigma`), use fewer parameters (fewer hidden units), or a \
         sampling method (`--method nuts`)",
        scales.join(", ")
    ))
}

/// The parameters bounded below by 0 (unconstrained as ζ = log x) that lie below
/// e^[`INTERPOLATION_LOG_SCALE`] at `zeta`, the end point of a mode search: (coordinate, x).
/// `None` when parameters do not map one-to-one to coordinates.
fn scales_at_zero(model: &Model, zeta: &[f64]) -> Option<Vec<(usize, f64)>> {
    if model.parameter_names().len() != zeta.len() {
        return None;
    }
    let x = model
        .write_array(zeta, false, false, &mut stream(0, 0))
        .ok()?;
    Some(
        (0..zeta.len())
            .filter(|&i| {
                let e = zeta[i].exp();
                zeta[i] < INTERPOLATION_LOG_SCALE && (x[i] - e).abs() <= 1e-9 * e
            })
            .map(|i| (i, x[i]))
            .collect(),
    )
}

/// The start of [`funnel_reason`]'s message.
pub const NO_MODE: &str = "there is no mode: the log density grows without bound";

/// Marker in [`funnel_reason`]'s message when the rise needs other parameters to coincide (the
/// neck of a funnel), for [`super::start_message_for`].
pub const FUNNEL_NECK: &str = "the neck of a funnel";

/// How far [`funnel_reason`] moves each other coordinate to tell a funnel from a density that is
/// unbounded by itself: this many times the scale's value x (at least 10⁻⁶ of the coordinate's
/// size). Children at (θ_j − μ)/x ≈ 100 lose ~5000 nats per e-fold of x, which a funnel's rise
/// of J nats per e-fold cannot offset for J below thousands. [X], a design decision.
const NECK_OFFSET: f64 = 100.0;

/// Largest d for which [`funnel_reason`] moves the other coordinates one at a time to name the
/// ones that meet in the neck (2 density evaluations each). [X].
const NECK_NAMED_MAX_DIM: usize = 1000;

/// Why an optimisation found no mode when a scale ran to 0 and the density rises without bound
/// there ([`scales_at_zero`], not a noise scale of [`interpolation_reason`]): at the end point
/// `zeta` the maximised `density` (with the Jacobian adjustment when `jacobian`) still rises when
/// the scale shrinks e-fold further (probed with the scale raised to 10⁶ ulps of the other
/// coordinates when it ended within 1000 ulps of them, where their differences are rounding).
/// Two causes are told apart by moving the other coordinates
/// off their values by [`NECK_OFFSET`] times the scale:
/// - the rise stops: the neck of a funnel. A centred hierarchical model's `theta ~ normal(mu,
///   tau)` with every `theta` at `mu` has density ∝ tau^−J, unbounded as tau → 0 only while
///   the `theta` coincide with `mu`; the coordinates whose move alone stops the rise are named
///   (d ≤ [`NECK_NAMED_MAX_DIM`]).
/// - it goes on: the density of the scale itself is unbounded at 0, as a gamma(a, b) prior with
///   shape a < 1 (density ∝ s^(a−1)), which is proper; not a funnel. The rise per e-fold r of the
///   density without the Jacobian gives s^−r, and the message says whether the density with the
///   Jacobian (that of log s, rise r − 1) has a mode: gamma(0.5, 1) has one at s = 0.5.
///
/// Whether the claim holds with and without `--jacobian` is measured (both densities at the
/// same points), not assumed ([X]: fresh-user finding, session 21: `s ~ gamma(0.5, 1)` was
/// called "the funnel of a centred hierarchical model … with or without --jacobian", and
/// --jacobian gives the mode s = 0.5). `None` when no scale at 0 rises.
pub(super) fn funnel_reason(
    model: &Model,
    density: &dyn LogDensity,
    jacobian: bool,
    zeta: &[f64],
) -> Option<String> {
    let names = model.parameter_names();
    density.log_density(zeta).ok()?;
    let rises = |dens: &dyn LogDensity, z: &[f64], i: usize| -> Option<f64> {
        let at = dens.log_density(z).ok().filter(|v| v.is_finite())?;
        let mut down = z.to_vec();
        down[i] -= 1.0;
        let l = dens.log_density(&down).ok().filter(|v| v.is_finite())?;
        (l > at + 1e-6).then_some(l - at)
    };
    // (coordinate, scale, the point probed): the end point, or, when the scale there is
    // within 1000 ulps of the other coordinates (whose differences then cannot be resolved
    // below it), the end point with the scale raised to 10⁶ ulps of them. BFGS on the centred
    // eight schools ended at tau = 5e-17 beside mu = 0.67, where theta − mu is rounding of the
    // size of tau and one e-fold less tau made the density fall. [X]
    let rising: Vec<(usize, f64, Vec<f64>)> = scales_at_zero(model, zeta)?
        .into_iter()
        .filter_map(|(i, x)| {
            if rises(density, zeta, i).is_some() {
                return Some((i, x, zeta.to_vec()));
            }
            let size = (0..zeta.len())
                .filter(|&k| k != i)
                .fold(1.0f64, |m, k| m.max(zeta[k].abs()));
            let raised = (1e6 * f64::EPSILON * size)
                .ln()
                .min(INTERPOLATION_LOG_SCALE);
            if !(x < 1e3 * f64::EPSILON * size && raised > zeta[i]) {
                return None;
            }
            let mut z = zeta.to_vec();
            z[i] = raised;
            rises(density, &z, i).map(|_| (i, x, z))
        })
        .collect();
    if rising.is_empty() {
        return None;
    }
    let d = zeta.len();
    // every other coordinate moved by a distinct offset, alternating in sign, so that no two
    // of them stay equal; `base` is the point probed, `x` the scale there
    let offset = |k: usize, base: &[f64], x: f64| {
        let size = (NECK_OFFSET * x).max(1e-6 * (1.0 + base[k].abs()));
        let sign = if k % 2 == 0 { 1.0 } else { -1.0 };
        sign * size * (1.0 + k as f64 / d as f64)
    };
    let scale_at = |i: usize, base: &[f64]| base[i].exp();
    let moved_all = |i: usize, base: &[f64]| -> Vec<f64> {
        let x = scale_at(i, base);
        (0..d)
            .map(|k| {
                if k == i {
                    base[k]
                } else {
                    base[k] + offset(k, base, x)
                }
            })
            .collect()
    };
    let (neck, own): (Vec<(usize, f64, Vec<f64>)>, Vec<(usize, f64, Vec<f64>)>) = rising
        .into_iter()
        .partition(|(i, _, base)| d > 1 && rises(density, &moved_all(*i, base), *i).is_none());
    let other = model.with_jacobian(!jacobian);
    let jac_phrase = |scales: &[(usize, f64, Vec<f64>)]| -> String {
        let both = scales
            .iter()
            .all(|(i, _, base)| rises(&other, base, *i).is_some());
        match (both, jacobian) {
            (true, _) => ", with or without --jacobian".into(),
            (false, false) => " without --jacobian; with it (the density of the log of the \
                               scale) the rise stops here"
                .into(),
            (false, true) => " with --jacobian; without it the rise stops here".into(),
        }
    };
    let list = |scales: &[(usize, f64, Vec<f64>)]| {
        let v: Vec<String> = scales
            .iter()
            .map(|(i, x, _)| format!("`{}` (at {x:.1e})", names[*i]))
            .collect();
        crate::words::name_list(&v, 6)
    };
    if let Some((i, _, base)) = neck.first() {
        let (i, x) = (*i, scale_at(*i, base));
        let meeting: Vec<String> = if d <= NECK_NAMED_MAX_DIM {
            (0..d)
                .filter(|&k| k != i)
                .filter(|&k| {
                    let mut z = base.clone();
                    z[k] += offset(k, base, x);
                    rises(density, &z, i).is_none()
                })
                .map(|k| format!("`{}`", names[k]))
                .collect()
        } else {
            Vec::new()
        };
        let meeting = if meeting.len() >= 2 {
            format!(
                " while {} stay equal to within it (moving any one of them apart makes the \
                 density fall instead)",
                crate::words::name_list(&meeting, 6)
            )
        } else {
            " while the other parameters stay where they are (moving them apart makes the \
             density fall instead)"
                .to_string()
        };
        return Some(format!(
            "{NO_MODE} as {} goes to 0{meeting}, so a mode search only runs towards that \
             boundary. This is {FUNNEL_NECK}, as in a centred hierarchical model: a prior such \
             as `theta ~ normal(mu, tau)` with every `theta` at `mu` has a density that grows \
             like tau^-J as tau shrinks, so the joint posterior density has no maximum (a MAP \
             estimate does not exist{}). Use a non-centred parameterisation (`theta = mu + tau \
             * theta_raw` with `theta_raw ~ normal(0, 1)`), which has a mode, or fit the \
             posterior with --method nuts",
            list(&neck),
            jac_phrase(&neck)
        ));
    }
    // the rise per e-fold of the density without the Jacobian: density ∝ x^-r near 0
    let plain = model.with_jacobian(false);
    let r = own
        .iter()
        .filter_map(|(i, _, base)| rises(&plain, base, *i))
        .fold(f64::NAN, f64::max);
    let power = if r.is_finite() {
        format!(" like x^-{r:.2} in the scale x")
    } else {
        String::new()
    };
    let proper = if r < 1.0 {
        " Such a density is still proper (its integral near 0 is finite), so the posterior \
         exists:"
    } else if r >= 1.0 {
        " With a rise this steep the posterior itself is improper at 0 (its integral near 0 \
         diverges):"
    } else {
        ""
    };
    let others = if d > 1 {
        ", whatever values the other parameters take"
    } else {
        ""
    };
    let remedy = if r < 1.0 && !jacobian {
        " use --jacobian (the mode of the unconstrained density, which exists here), give the \
         scale a prior whose density is finite at 0 (gamma shape ≥ 1) if a MAP estimate is \
         wanted, or fit the posterior with --method nuts"
    } else if r < 1.0 {
        " give the scale a prior whose density is finite at 0 (gamma shape ≥ 1) if a mode is \
         wanted, or fit the posterior with --method nuts"
    } else if r >= 1.0 {
        " give the scale a proper prior"
    } else {
        " Fit the posterior with --method nuts"
    };
    Some(format!(
        "{NO_MODE} as {} goes to 0, so a mode search only runs towards that boundary. This is not \
         a funnel: the density rises{power}{others}, so the \
         density of the scale itself is unbounded at 0, as that of a gamma or Weibull prior \
         with shape below 1 (∝ x^(shape-1)) is, and the density has no maximum{}.{proper}{remedy}",
        list(&own),
        jac_phrase(&own)
    ))
}

/// The flat directions (named, [`crate::inference::flat::flat_directions`]) where a mode
/// search from `init` ends: L-BFGS, then the Newton polish of [`find_mode`] (which walks on
/// along a density that only flattens out), probed with −H there, or with the
/// finite-difference Hessian at the L-BFGS end point when the polish fails. Empty when there
/// is none, the search fails, or d > [`crate::inference::flat::FLAT_COMBINATION_MAX_DIM`].
/// For the fits that do not start from [`find_mode`] (Pathfinder).
pub(super) fn flat_beyond_mode(model: &Model, init: &[f64]) -> Vec<String> {
    use crate::inference::flat;
    if init.len() > flat::FLAT_COMBINATION_MAX_DIM {
        return Vec::new();
    }
    let Ok(lbfgs) = optimize::optimize(model, init, &OptimizeSettings::default()) else {
        return Vec::new();
    };
    let names = model.parameter_names();
    match optimize::newton_refine(model, &lbfgs.point, newton_steps(init.len())) {
        Some(r) => flat::flat_directions(model, &r.point, Some(&r.neg_hessian), &names),
        None => super::flat_at_end(model, &lbfgs.point),
    }
}

/// ½ gᵀ(−H)⁻¹g at `point` for the negative Hessian `neg_h` there (d × d row-major): the gain
/// a Newton step promises (Boyd & Vandenberghe 2004, §9.5.1). `None` when −H is not positive
/// definite or the gradient cannot be computed.
fn newton_decrement(density: &dyn LogDensity, point: &[f64], neg_h: &[f64]) -> Option<f64> {
    use faer::linalg::solvers::Solve;
    let d = point.len();
    let mut g = vec![0.0; d];
    density.log_density_grad(point, &mut g).ok()?;
    let a = faer::Mat::<f64>::from_fn(d, d, |i, j| 0.5 * (neg_h[i * d + j] + neg_h[j * d + i]));
    let llt = a.llt(faer::Side::Lower).ok()?;
    let dir = llt.solve(faer::Mat::from_fn(d, 1, |i, _| g[i]));
    let dec = 0.5 * (0..d).map(|i| g[i] * dir[(i, 0)]).sum::<f64>();
    dec.is_finite().then_some(dec)
}

/// [`find_mode`] after the L-BFGS search: Newton polish and the checks at `start`.
fn find_mode_from(model: &Model, start: &[f64]) -> Result<(Vec<f64>, Vec<f64>), String> {
    // Newton polish: L-BFGS may stop along a flat ridge; the refined mode and the negative
    // Hessian there give the Laplace approximation that QBVI starts from.
    let r = optimize::newton_refine(model, start, newton_steps(start.len())).ok_or_else(|| {
        "the Hessian at the end point of the mode search is not negative definite (a flat or \
         unbounded direction)"
            .to_string()
    })?;
    let d = r.point.len();
    let nh = &r.neg_hessian;
    let scale: Vec<f64> = (0..d).map(|i| nh[i * d + i].sqrt()).collect();
    if scale.iter().any(|s| !(s.is_finite() && *s > 0.0)) {
        return Err(
            "the Hessian at the end point of the mode search is not negative definite".into(),
        );
    }
    let m = faer::Mat::<f64>::from_fn(d, d, |i, j| nh[i * d + j] / (scale[i] * scale[j]));
    let cond = match m.self_adjoint_eigen(faer::Side::Lower) {
        Ok(evd) => {
            let s = evd.S().column_vector();
            let (lo, hi) = (0..d).fold((f64::INFINITY, 0.0_f64), |(lo, hi), k| {
                (lo.min(s[k]), hi.max(s[k]))
            });
            if lo > 0.0 { hi / lo } else { f64::INFINITY }
        }
        Err(_) => f64::INFINITY,
    };
    // gᵀ(−H)⁻¹g, twice the gain a further Newton step promises
    let decrement = newton_decrement(model, &r.point, nh).map_or(f64::INFINITY, |half| 2.0 * half);
    if !(cond <= MODE_MAX_CONDITION) || !(decrement <= MODE_MAX_DECREMENT) {
        return Err(format!(
            "the log density keeps growing towards the boundary of the unconstrained space, as \
             in a funnel or an improper posterior (at the end point of the mode search the \
             scaled Hessian has condition number {cond:.1e} and the Newton decrement is \
             {decrement:.1e})"
        ));
    }
    // A likelihood that only saturates (a logistic regression whose outcomes the predictors
    // separate, under a flat prior) passes the checks above far out along the saturating
    // direction, where the curvature is tiny but still negative: probe there for flatness, as
    // `laplace` and `optimize` do, so that no method starts from (or reports) such a "mode".
    if d <= crate::inference::flat::FLAT_COMBINATION_MAX_DIM {
        let flat = crate::inference::flat::flat_directions(
            model,
            &r.point,
            Some(nh),
            &model.parameter_names(),
        );
        if !flat.is_empty() {
            return Err(flat_reason(&flat));
        }
    }
    Ok((r.point, r.neg_hessian))
}
