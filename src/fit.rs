//! Running an inference method on a compiled model and mapping its draws to the constrained
//! scale: the step after [`crate::pipeline::compile`], shared by the CLI and the REPL.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crate::diagnostics::psis::{KHat, Psis, psis};
use crate::graph::Model;
use crate::inference::laplace::{self, LaplaceFit, LaplaceSettings};
use crate::inference::mcmc::{self, ChainProgress, McmcOutput, McmcSettings};
use crate::inference::optimize::{self, OptimizeResult, OptimizeSettings};
use crate::inference::qbvi::{self, Control, QbviFit, QbviSettings};
use crate::inference::qnvb::{self, QnvbFit, QnvbSettings};
use crate::inference::rng::{StreamRng, stream};
use crate::inference::{DensityError, Draws, LogDensity};

/// The inference methods bayesc offers.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Method {
    /// Quasi black-box variational inference (Gaussian on the unconstrained scale).
    Qbvi,
    /// Quasi-Newton variational Bayes (mean-field Gaussian on the unconstrained scale,
    /// specs/qnvb.md).
    Qnvb,
    /// L-BFGS mode finding (Stan's `optimize`): a (penalised) maximum-likelihood estimate or
    /// posterior mode with standard errors from the Hessian.
    Optimize,
    /// The Laplace approximation: a Gaussian at the mode of the unconstrained log density with
    /// the inverse negative Hessian as covariance (Stan's `laplace`).
    Laplace,
    /// The no-U-turn sampler with Stan-style warmup.
    Nuts,
    /// Static Hamiltonian Monte Carlo (fixed number of leapfrog steps).
    Hmc,
    /// Adaptive random-walk Metropolis-Hastings.
    Mh,
}

impl Method {
    /// True for the MCMC samplers (several chains, R-hat and ESS apply).
    pub fn is_mcmc(self) -> bool {
        matches!(self, Method::Nuts | Method::Hmc | Method::Mh)
    }

    /// True for the methods that fit an approximation q and report the PSIS k̂ of it
    /// (QBVI, QNVB, Laplace).
    pub fn is_variational(self) -> bool {
        matches!(self, Method::Qbvi | Method::Qnvb | Method::Laplace)
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Method::Qbvi => "qbvi",
            Method::Qnvb => "qnvb",
            Method::Optimize => "optimize",
            Method::Laplace => "laplace",
            Method::Nuts => "nuts",
            Method::Hmc => "hmc",
            Method::Mh => "mh",
        })
    }
}

/// Where the mean of a variational approximation starts.
///
/// The specification's default (`specs/qbvi.md` §11) is a random point, uniform(−2, 2) on the
/// unconstrained scale, with Σ₀ = 0.01·I. From such a point far from the posterior the
/// smoothed-ELBO exit rule (§7.2) can fire while the ELBO is still climbing (seen on the labour
/// model: a stop at iteration 82 with ELBO ≈ −31,000), and on a badly scaled, correlated
/// posterior the iterates drift along flat ridges for hundreds of iterations. bayesc therefore
/// starts at the mode of the log density on the unconstrained scale (L-BFGS from the random
/// point, polished by Newton steps) with the negative Hessian there as the initial precision —
/// the Laplace approximation — when it is positive definite ([X], a design decision). The cost
/// is a few hundred gradient evaluations, about one QBVI iteration's worth of work per 20.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ViInit {
    /// The Laplace approximation at the mode (falling back to the random point and Σ₀ = 0.01·I
    /// when the optimiser fails or the Hessian is not negative definite).
    Mode,
    /// The random point uniform(−2, 2) and Σ₀ = 0.01·I, as the specification says.
    Random,
}

/// Which standard errors `Method::Optimize` reports.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum StdErrorKind {
    /// Classical: Σ = (−H)⁻¹, H the Hessian of the maximised log density (Stan's, statsmodels').
    Hessian,
    /// Robust (Huber–White sandwich; Bollerslev–Wooldridge for GARCH, the `arch` package's
    /// default): Σ = H⁻¹ B H⁻¹ with B the n/(n−1)-scaled covariance of the per-observation
    /// scores of [`Model::pointwise_log_likelihood`] ([`crate::inference::sandwich`]). H is
    /// the Hessian of the maximised density (priors and, with `jacobian`, the Jacobian
    /// adjustment included) and B comes from the observations only, so for an MLE (no priors,
    /// no Jacobian) this is the textbook sandwich. Needs at least two observations.
    Robust,
}

impl fmt::Display for StdErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StdErrorKind::Hessian => "hessian",
            StdErrorKind::Robust => "robust",
        })
    }
}

/// Everything a fit needs besides the model.
#[derive(Clone, Debug)]
pub struct FitOptions {
    /// Which algorithm.
    pub method: Method,
    /// The user seed; every random stream derives from it (`inference::rng`).
    pub seed: u64,
    /// Number of draws taken from a variational approximation (default 1000).
    pub vi_draws: usize,
    /// QBVI settings (its `seed` field is overwritten by `seed`).
    pub qbvi: QbviSettings,
    /// Where a variational fit starts (default: the Laplace approximation at the mode).
    pub vi_init: ViInit,
    /// MCMC settings for NUTS, static HMC and Metropolis-Hastings (`seed` and `method` are
    /// overwritten from the fields above).
    pub mcmc: McmcSettings,
    /// QNVB settings (specs/qnvb.md §7 defaults; the initial mean comes from `vi_init`).
    pub qnvb: QnvbSettings,
    /// L-BFGS settings of `Method::Optimize` and of the mode search of `Method::Laplace`
    /// (Stan's defaults).
    pub optimize: OptimizeSettings,
    /// `Method::Optimize` only: include the Jacobian adjustment of the constraining transforms
    /// (the mode of the unconstrained density) or not (default `false`, as Stan's
    /// `optimize jacobian=0`: the mode on the constrained scale, i.e. a penalised
    /// maximum-likelihood estimate, or the MLE when the model has no priors). QNVB, QBVI and
    /// Laplace always use the Jacobian.
    pub jacobian: bool,
    /// `Method::Optimize` only: classical (default) or robust (sandwich) standard errors.
    pub std_errors: StdErrorKind,
    /// Draws of the fitted q used for the PSIS k̂ of a variational fit (default 1000; at least
    /// 25; 0 skips the diagnostic).
    pub psis_draws: usize,
    /// Report `vi_draws` draws importance-resampled (systematic resampling with the Pareto-
    /// smoothed weights) from the `psis_draws` draws of q, instead of fresh draws of q.
    pub psis_resample: bool,
}

impl FitOptions {
    /// Defaults for `method` with `seed`.
    pub fn new(method: Method, seed: u64) -> Self {
        FitOptions {
            method,
            seed,
            vi_draws: 1000,
            qbvi: QbviSettings::default(),
            vi_init: ViInit::Mode,
            mcmc: McmcSettings::default(),
            qnvb: QnvbSettings::default(),
            optimize: OptimizeSettings::default(),
            jacobian: false,
            std_errors: StdErrorKind::Hessian,
            psis_draws: 1000,
            psis_resample: false,
        }
    }
}

/// The result of `Method::Optimize`: the optimum on both scales with standard errors.
#[derive(Clone, Debug)]
pub struct OptimizeFit {
    /// The L-BFGS run (its `point` is before the Newton polish).
    pub lbfgs: OptimizeResult,
    /// Newton steps of [`optimize::newton_refine`] after L-BFGS (0 when it could not run).
    pub newton_steps: usize,
    /// Whether the Jacobian adjustment was part of the maximised density.
    pub jacobian: bool,
    /// The optimum ζ̂ on the unconstrained scale (length d).
    pub point: Vec<f64>,
    /// The maximised log density at ζ̂ (with or without the Jacobian, as `jacobian` says).
    /// Statements `y ~ dist(…)` drop constant terms; `target += dist_lpdf(y | …)` keeps them.
    pub log_density: f64,
    /// Which standard errors these are (classical inverse-Hessian or robust sandwich).
    pub std_error_kind: StdErrorKind,
    /// Standard errors of ζ̂: √diag(Σ) with Σ = (−H)⁻¹ (`StdErrorKind::Hessian`) or the
    /// sandwich H⁻¹ B H⁻¹ (`StdErrorKind::Robust`), H the finite-difference Hessian of the
    /// maximised density at ζ̂ ([`crate::inference::hessian`]); NaN when −H is not positive
    /// definite.
    pub unconstrained_se: Vec<f64>,
    /// Names of the constrained parameters and transformed parameters.
    pub names: Vec<String>,
    /// θ(ζ̂): parameters and transformed parameters on the constrained scale.
    pub estimates: Vec<f64>,
    /// Delta-method standard errors of `estimates`: se_k = √(J_k Σ J_kᵀ) with Σ as above and
    /// J = ∂θ/∂ζ at ζ̂ by central differences of the constraining map. For a scalar
    /// parameter transformed on its own this is |dθ/dζ|·se_ζ. NaN when Σ is unavailable.
    pub std_errors: Vec<f64>,
    /// True when L-BFGS reported convergence (see `lbfgs.message`).
    pub converged: bool,
}

/// VI diagnostics of a fitted approximation q (specs/diagnostics.md §6.2): the PSIS k̂ and an
/// ELBO estimate from S draws ζ_s ~ q, and the trace of the fit.
#[derive(Clone, Debug)]
pub struct ViDiagnostics {
    /// Pareto k̂ of log r_s = L(ζ_s) − log q(ζ_s); +∞ when the ratios are not finite or the
    /// tail fit failed, −∞ when they are constant (q ∝ target). < 0.5 good, 0.5–0.7 usable,
    /// > 0.7 unreliable (Yao et al. 2018 §3.2).
    pub khat: f64,
    /// PSIS effective sample size of the S draws.
    pub psis_ess: f64,
    /// S, the number of draws of q used.
    pub n_draws: usize,
    /// Monte Carlo ELBO estimate mean_s(log r_s) from the same draws (log-density scale of the
    /// model, with the Jacobian).
    pub elbo: f64,
    /// (iteration, ELBO, smoothed ELBO) per iteration of the fit; empty for Laplace. The
    /// smoothed value is NaN before the smoothing window is full.
    pub trace: Vec<(usize, f64, f64)>,
    /// Whether the reported draws were importance-resampled.
    pub resampled: bool,
    /// Parameters whose marginal in q has collapsed to a point (see [`collapsed_parameters`]):
    /// (name, mean, sd) on the constrained scale. Non-empty means the fit is degenerate,
    /// whatever k̂ says.
    pub collapsed: Vec<(String, f64, f64)>,
    /// Why the fit did not start at the mode although asked to (`ViInit::Mode`): the log
    /// density has no interior mode (see `find_mode`), so the fit started from the random point
    /// of specs/qbvi.md §11. `None` otherwise (and always for Laplace).
    pub no_mode: Option<String>,
    /// When `no_mode` is set: the unconstrained coordinates (parameter names when every
    /// parameter is one coordinate, else `zeta[i]`, 1-based) along which q would gain ELBO by
    /// shifting its mean (see [`UNBOUNDED_GAIN`]): the fit drifted along a direction in
    /// which the log density does not decay, i.e. the posterior is improper there. Empty
    /// otherwise.
    pub unbounded: Vec<String>,
}

/// The warning for a non-empty [`ViDiagnostics::collapsed`] list; `list` names the collapsed
/// parameters. Not knowing which parameters have priors: see [`collapse_warning_for`]. Shared
/// by the CLI and the REPL renderers.
pub fn collapse_warning(list: &str) -> String {
    collapse_warning_for(list, None)
}

/// [`collapse_warning`] with `unpriored`, which lists the parameters without a prior (`Checked::unpriored`) when
/// known: when it is known to be empty the advice does not blame priors but names the other
/// causes (a funnel, or q stuck where the log density is extremely steep).
pub fn collapse_warning_for(list: &str, unpriored: Option<&[String]>) -> String {
    match unpriored {
        Some([]) => format!(
            "WARNING: the approximation collapsed to a point in {list}. Every parameter has a \
             prior, so the cause is not an improper flat prior: q got stuck where the log \
             density is extremely steep (e.g. a recursion that explodes for some parameter \
             values, or a start far from the posterior), or the posterior has a funnel (a \
             hierarchical scale going to 0) that a Gaussian cannot follow. Use --method nuts, \
             try another --seed, or a non-centred parameterisation. The summary above is not a \
             posterior."
        ),
        Some(names) => format!(
            "WARNING: the approximation collapsed to a point in {list}: the posterior may be \
             improper ({} get an improper flat prior) or unbounded, or has a funnel that a \
             Gaussian cannot follow; give those parameters proper priors, try a non-centred \
             parameterisation, or use --method nuts. The summary above is not a posterior.",
            names
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        None => format!(
            "WARNING: the approximation collapsed to a point in {list}: the posterior is \
             improper or unbounded, or has a funnel (a hierarchical scale going to 0) that a \
             Gaussian cannot follow, or q got stuck where the log density is extremely steep; \
             check priors, try a non-centred parameterisation, or use --method nuts. The \
             summary above is not a posterior."
        ),
    }
}

/// Why the end point of a variational fit is not a converged optimum of the ELBO, if it is not
/// (a phrase for messages): QBVI stopped by its exit rule after updates the positive-
/// definiteness guard skipped (the ELBO stopped improving because q stopped moving), by the
/// iteration cap, or by an interruption; QNVB by its cap or an interruption. `None` for a clean
/// stop and for the other methods.
pub fn vi_not_converged(details: &FitDetails) -> Option<String> {
    match details {
        FitDetails::Qbvi(f) => match f.stop {
            qbvi::StopReason::ExitRule if f.skipped_steps == 0 => None,
            qbvi::StopReason::ExitRule => Some(format!(
                "{} of {} updates were skipped by the positive-definiteness guard, so the ELBO \
                 stopped improving because q stopped moving",
                f.skipped_steps, f.iterations
            )),
            qbvi::StopReason::MaxIterations => Some(format!(
                "the fit stopped at the iteration cap ({} iterations)",
                f.iterations
            )),
            qbvi::StopReason::Interrupted => Some("the fit was interrupted".to_string()),
        },
        FitDetails::Qnvb(f) => match f.stop {
            qnvb::QnvbStop::Converged => None,
            qnvb::QnvbStop::MaxIterations => Some(format!(
                "the fit stopped at the iteration cap ({} iterations)",
                f.iterations
            )),
            qnvb::QnvbStop::Interrupted => Some("the fit was interrupted".to_string()),
        },
        _ => None,
    }
}

/// The note or warning about the start of a variational fit ([`ViDiagnostics::no_mode`],
/// [`ViDiagnostics::unbounded`]): `None` when the fit started at the mode (or randomly on
/// request). A line starting "WARNING" when q drifted along an unbounded direction, else a
/// "note" line. Shared by the CLI and the REPL renderers; [`start_message_for`] also knows how
/// the fit stopped and which parameters have priors.
pub fn start_message(vi: &ViDiagnostics) -> Option<String> {
    start_message_for(vi, None, None)
}

/// [`start_message`] knowing [`vi_not_converged`] of the fit and the parameters without a prior
/// (`Checked::unpriored`, `None` when unknown). With `not_converged` set, q is not at an
/// optimum, so a drift says nothing about the posterior being improper and the warning names
/// that cause instead; with `unpriored` known to be empty it does not advise proper priors.
pub fn start_message_for(
    vi: &ViDiagnostics,
    not_converged: Option<&str>,
    unpriored: Option<&[String]>,
) -> Option<String> {
    let reason = vi.no_mode.as_ref()?;
    Some(if vi.unbounded.is_empty() {
        format!("note: start: random (the density has no interior mode: {reason})")
    } else if let Some(cause) = not_converged {
        match unpriored {
            // every parameter has a prior: the drift is the unfinished fit, not impropriety
            Some([]) => format!(
                "WARNING: the approximation did not converge ({cause}); it is still moving \
                 along {} after a random start (the density has no interior mode there: \
                 {reason}). The summary above is not a posterior: use --method nuts, or check \
                 the initial values and the model where the log density is extremely steep.",
                vi.unbounded.join(", ")
            ),
            // both causes are possible: say which evidence points where
            _ => format!(
                "WARNING: the approximation did not converge ({cause}) and is still moving along \
                 {} after a random start (the density has no interior mode there: {reason}); \
                 the posterior may be improper{}, or the fit was stopped too early. The summary \
                 above is not a posterior: check the priors, or use --method nuts.",
                vi.unbounded.join(", "),
                match unpriored {
                    Some(names) => format!(
                        " ({} get an improper flat prior)",
                        names
                            .iter()
                            .map(|n| format!("`{n}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    None => String::new(),
                }
            ),
        }
    } else if unpriored == Some(&[]) {
        format!(
            "WARNING: the posterior may be improper or unbounded: the density has no interior \
             mode ({reason}), and the approximation drifts along {}. Every parameter has a \
             prior, so check that the likelihood does not grow without bound along it (e.g. a \
             scale going to 0 at a repeated value) and that the data identify it; use --method \
             nuts to confirm. The summary above is not a posterior.",
            vi.unbounded.join(", ")
        )
    } else {
        format!(
            "WARNING: the posterior may be improper: the density has no interior mode ({reason}), \
             and the approximation drifts along {}; give the parameters proper priors \
             or check that the data identify them. The summary above is not a posterior.",
            vi.unbounded.join(", ")
        )
    })
}

/// Gain threshold of the unboundedness check ([X], a design decision). Shifting the mean of a
/// Gaussian q by c standard deviations σ_i along unconstrained coordinate i (c =
/// [`UNBOUNDED_SHIFT`], common draws, entropy unchanged) changes the ELBO by
/// Δ_i = mean_s[L(ζ_s ± cσ_i e_i) − L(ζ_s)]. At an optimum of the ELBO over Gaussians,
/// E_q[−∇²L] = Σ⁻¹ (the fixed point of the natural-gradient update), so for a quadratic L
/// Δ_i = −½c² Σ_ii (Σ⁻¹)_ii ≤ −4.5. When the log density does not decay along i (an improper
/// direction) there is no optimum and one of the two shifts loses nothing or gains. A coordinate
/// with max(Δ_i⁺, Δ_i⁻) above this threshold is reported as unbounded. On the centred
/// eight-schools funnel (proper, far from Gaussian) the largest Δ over seeds 1–8 was −2.3; on
/// flat-prior posteriors it is ≥ 0.
pub const UNBOUNDED_GAIN: f64 = -1.0;

/// |μ_i| on the unconstrained scale beyond which q counts as drifted along coordinate i without
/// further test (e^100 for a positive parameter), after a start that found no mode ([X]). A
/// heavy-tailed q can make the Monte Carlo gain of [`UNBOUNDED_GAIN`] −∞ through a few draws
/// while the mean has run off (seen with QNVB on a flat-prior scale: log σ ≈ 360).
pub const UNBOUNDED_MEAN: f64 = 100.0;

/// The shift of the unboundedness check in standard deviations of q (see [`UNBOUNDED_GAIN`]).
pub const UNBOUNDED_SHIFT: f64 = 3.0;

/// Draws of q used by the unboundedness check (stream 4 of the seed).
const UNBOUNDED_DRAWS: usize = 200;

/// The unconstrained coordinates along which shifting q's mean by [`UNBOUNDED_SHIFT`] standard
/// deviations does not lower the ELBO by more than [`UNBOUNDED_GAIN`], or whose mean lies beyond
/// ±[`UNBOUNDED_MEAN`], named as in [`ViDiagnostics::unbounded`];
/// `draws` are draws of q, `mean` its mean. Draws where L is not finite are left out (all
/// coordinates are reported when that is more than half of them); a draw whose shifted log
/// density cannot be evaluated counts as −∞ (bounded).
fn unbounded_directions(model: &Model, draws: &[Vec<f64>], mean: &[f64]) -> Vec<String> {
    use rayon::prelude::*;
    let d = mean.len();
    let n = draws.len() as f64;
    let names = model.parameter_names();
    let name = |i: usize| {
        if names.len() == d {
            names[i].clone()
        } else {
            format!("zeta[{}]", i + 1)
        }
    };
    let lp = |z: &[f64]| match model.log_density(z) {
        Ok(v) if v.is_finite() => v,
        _ => f64::NEG_INFINITY,
    };
    // Draws where L cannot be evaluated (e.g. a scale overflowing to +∞) are left out; when
    // most of q lies there, q has drifted off the representable range in every coordinate.
    let (draws, base): (Vec<&Vec<f64>>, Vec<f64>) = draws
        .par_iter()
        .map(|z| (z, lp(z)))
        .filter(|(_, b)| b.is_finite())
        .unzip();
    if 2 * draws.len() < n as usize {
        return (0..d).map(name).collect();
    }
    let n = draws.len() as f64;
    (0..d)
        .filter(|&i| {
            if !(mean[i].abs() <= UNBOUNDED_MEAN) {
                return true;
            }
            let var = draws.iter().map(|z| (z[i] - mean[i]).powi(2)).sum::<f64>() / (n - 1.0);
            let sd = var.sqrt();
            [sd, -sd].iter().any(|&sd| {
                let shift = UNBOUNDED_SHIFT * sd;
                let change: Vec<f64> = draws
                    .par_iter()
                    .zip(base.par_iter())
                    .map(|(z, b)| {
                        let mut w = (*z).clone();
                        w[i] += shift;
                        lp(&w) - b
                    })
                    .collect();
                let gain = change.iter().sum::<f64>() / n;
                gain > UNBOUNDED_GAIN
            })
        })
        .map(name)
        .collect()
}

/// Relative scale sd/|mean| below which a marginal of a variational fit counts as collapsed:
/// a proper posterior from n observations has sd/|mean| of order 1/√n, far above 1e-8 for any
/// data set that fits in memory.
pub const COLLAPSE_RELATIVE_SD: f64 = 1e-8;

/// The parameters (the first `n_params` columns of `draws`) whose draws have
/// sd ≤ [`COLLAPSE_RELATIVE_SD`]·|mean| (or sd = 0), as (name, mean, sd). A variational fit
/// drifts onto such a spike when the posterior is improper or unbounded, e.g. a scale parameter
/// with a flat prior going to 0 while the other parameters interpolate the data exactly; the
/// log ratios log p − log q are then dominated by rounding and k̂ cannot flag it.
pub fn collapsed_parameters(draws: &Draws, n_params: usize) -> Vec<(String, f64, f64)> {
    collapsed_among(draws, n_params, &[])
}

/// The components of the constrained parameters that are fixed by their type whatever the
/// unconstrained point (the unit diagonal of a correlation matrix, the zeros above the diagonal
/// of a Cholesky factor): equal at three spread-out points ζ. They are constant in every draw
/// and must not count as a collapse.
fn structural_constants(model: &Model) -> Vec<bool> {
    let d = model.dim();
    let mut rng = stream(0, 0);
    let mut at = |c: f64| -> Option<Vec<f64>> {
        let z: Vec<f64> = (0..d).map(|i| c * (1.0 + 0.37 * i as f64).sin()).collect();
        model.write_array(&z, false, false, &mut rng).ok()
    };
    match (at(0.0), at(0.9), at(-1.3)) {
        (Some(a), Some(b), Some(c)) => a
            .iter()
            .zip(&b)
            .zip(&c)
            .map(|((x, y), z)| x == y && y == z)
            .collect(),
        _ => Vec::new(),
    }
}

/// [`collapsed_parameters`], skipping the columns flagged in `fixed`.
fn collapsed_among(draws: &Draws, n_params: usize, fixed: &[bool]) -> Vec<(String, f64, f64)> {
    let k = draws.names.len();
    let mut out = Vec::new();
    for j in 0..n_params.min(k) {
        if fixed.get(j).copied().unwrap_or(false) {
            continue;
        }
        let col: Vec<f64> = draws.column(j).concat();
        if col.len() < 2 || col.iter().any(|v| !v.is_finite()) {
            continue;
        }
        let n = col.len() as f64;
        let mean = col.iter().sum::<f64>() / n;
        let var = col.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1.0);
        let sd = var.sqrt();
        if sd == 0.0 || sd <= COLLAPSE_RELATIVE_SD * mean.abs() {
            out.push((draws.names[j].clone(), mean, sd));
        }
    }
    out
}

/// k̂ above which a variational approximation is unreliable (Yao et al. 2018 §3.2).
pub const KHAT_BAD: f64 = 0.7;
/// k̂ above which a variational approximation is usable but estimates may be noisy.
pub const KHAT_OK: f64 = 0.5;

/// Algorithm-specific results kept beside the draws.
#[derive(Clone, Debug)]
pub enum FitDetails {
    /// The fitted Gaussian, the ELBO trace and the stopping reason.
    Qbvi(QbviFit),
    /// Per-chain unconstrained draws, sampler statistics, adaptation and timing.
    Mcmc(Box<McmcOutput>),
    /// The fitted mean-field Gaussian and the ELBO trace of QNVB.
    Qnvb(QnvbFit),
    /// The optimum with standard errors.
    Optimize(OptimizeFit),
    /// The Laplace approximation at the mode.
    Laplace(LaplaceFit),
}

/// A finished fit: constrained draws (parameters, transformed parameters, generated quantities)
/// plus the algorithm's own output.
#[derive(Clone, Debug)]
pub struct FitResult {
    pub method: Method,
    pub seed: u64,
    /// One chain for variational fits, one per MCMC chain otherwise.
    pub draws: Draws,
    pub details: FitDetails,
    /// Wall time of the algorithm, seconds (excluding compilation, output and the PSIS
    /// diagnostic).
    pub seconds: f64,
    /// PSIS k̂, ELBO estimate and trace of a variational fit (QBVI, QNVB, Laplace); `None` for
    /// MCMC and optimisation, or when `psis_draws` is 0.
    pub vi: Option<ViDiagnostics>,
    /// Per reported draw of a variational or Laplace fit, in the order of `draws`:
    /// (log p(ζ), log q(ζ)) on the unconstrained scale, log p the model's log density with the
    /// Jacobian adjustment (NaN where it cannot be evaluated), log q normalised. CmdStan's
    /// `log_p__` and `log_g__` columns. Empty for MCMC and optimisation.
    pub approx_log_densities: Vec<(f64, f64)>,
    /// The quantities (parameters, transformed parameters, generated quantities; the columns of
    /// `draws`) at the mean of the fitted Gaussian, for QBVI and QNVB: the first row of CmdStan's
    /// variational output. `None` for other methods.
    pub approx_mean_row: Option<Vec<f64>>,
}

/// [`FitResult::approx_log_densities`] of unconstrained draws `zetas` (in parallel) and
/// [`FitResult::approx_mean_row`] at `mean` (generated quantities use stream 999 of `seed`).
fn approx_outputs(
    model: &Model,
    zetas: &[Vec<f64>],
    log_q: impl Fn(&[f64]) -> f64 + Sync,
    mean: Option<&[f64]>,
    seed: u64,
) -> Result<(Vec<(f64, f64)>, Option<Vec<f64>>), FitError> {
    use rayon::prelude::*;
    let lp = zetas
        .par_iter()
        .map(|z| (model.log_density(z).unwrap_or(f64::NAN), log_q(z)))
        .collect();
    let row = match mean {
        Some(m) => Some(
            model
                .write_array(m, true, true, &mut stream(seed, 999))
                .map_err(FitError::Constrain)?,
        ),
        None => None,
    };
    Ok((lp, row))
}

/// Progress of a running fit, for progress bars.
#[derive(Clone, Copy, Debug)]
pub enum ProgressEvent {
    /// One QBVI iteration finished.
    Qbvi(qbvi::Progress),
    /// An MCMC chain advanced.
    Chain(ChainProgress),
}

/// How a caller watches and interrupts a fit: `on_progress` is called from worker threads;
/// setting `stop` ends the fit early and cleanly (the result is then marked interrupted).
pub struct Monitor<'a> {
    pub on_progress: &'a (dyn Fn(ProgressEvent) + Sync),
    pub stop: &'a AtomicBool,
}

/// A fit that could not run or finish.
#[derive(Debug, thiserror::Error)]
pub enum FitError {
    /// No initial point with a finite log density (the message names the failing statement).
    #[error("initialisation failed: {0}")]
    Init(DensityError),
    /// The algorithm failed.
    #[error("{method} failed: {message}")]
    Algorithm { method: Method, message: String },
    /// Mapping draws to the constrained scale or evaluating generated quantities failed.
    #[error("computing constrained draws failed: {0}")]
    Constrain(DensityError),
    /// The requested draws would not fit in memory ([`check_memory`]).
    #[error("{0}")]
    TooLarge(String),
}

/// Bytes the draws of `options` need for `model`: MCMC keeps chains × ⌈samples/thin⌉ rows (plus
/// warmup rows when saved) of d unconstrained values, the draw columns and 7 sampler statistics;
/// variational fits keep vi_draws + psis_draws rows and QBVI N_s Monte Carlo points per
/// iteration. Saturates instead of overflowing.
pub fn draws_memory_bytes(model: &Model, options: &FitOptions) -> u128 {
    let d = model.dim() as u128;
    let cols = draw_names(model).len() as u128;
    let m = &options.mcmc;
    let rows = match options.method {
        Method::Nuts | Method::Hmc | Method::Mh => {
            let per_chain = (m.samples as u128).div_ceil(m.thin.max(1) as u128)
                + if m.save_warmup { m.warmup as u128 } else { 0 };
            m.chains as u128 * per_chain
        }
        Method::Qbvi => {
            options.vi_draws as u128 + options.psis_draws as u128 + options.qbvi.n_samples as u128
        }
        _ => options.vi_draws as u128 + options.psis_draws as u128,
    };
    rows.saturating_mul(d + cols + 7).saturating_mul(8)
}

/// Refuses options whose draws need more memory than the machine has available (Linux
/// `MemAvailable`; no check where it is unknown), before anything is allocated: an allocation
/// failure would abort the process. Errors: [`FitError::TooLarge`] saying how much and what to
/// lower.
pub fn check_memory(model: &Model, options: &FitOptions) -> Result<(), FitError> {
    let need = draws_memory_bytes(model, options);
    let available = std::fs::read_to_string("/proc/meminfo").ok().and_then(|t| {
        t.lines()
            .find_map(|l| l.strip_prefix("MemAvailable:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u128>().ok())
            .map(|kb| kb * 1024)
    });
    match available {
        Some(avail) if need > avail => {
            let what = if options.method.is_mcmc() {
                "--samples, --chains or raise --thin"
            } else {
                "--draws or --mc-samples"
            };
            Err(FitError::TooLarge(format!(
                "the draws would need {:.1} GB of memory but {:.1} GB are available; lower {what}",
                need as f64 / 1e9,
                avail as f64 / 1e9
            )))
        }
        _ => Ok(()),
    }
}

/// What [`finish_gaussian`] computes for a fitted Gaussian approximation.
struct GaussianOutputs {
    draws: Draws,
    vi: Option<ViDiagnostics>,
    approx_log_densities: Vec<(f64, f64)>,
    approx_mean_row: Option<Vec<f64>>,
}

impl GaussianOutputs {
    fn into_result(
        self,
        method: Method,
        seed: u64,
        details: FitDetails,
        seconds: f64,
    ) -> FitResult {
        FitResult {
            method,
            seed,
            draws: self.draws,
            details,
            seconds,
            vi: self.vi,
            approx_log_densities: self.approx_log_densities,
            approx_mean_row: self.approx_mean_row,
        }
    }
}

/// The common end of QBVI, QNVB and Laplace fits, given q's sampler and log density: the
/// reported draws and PSIS diagnostics ([`vi_draws`]), the constrained draws, the collapse check
/// ([`collapsed_parameters`]), the drift check ([`unbounded_directions`], around `mean`, when the
/// start found no mode: `no_mode`), and CmdStan's per-draw log densities and mean row
/// ([`approx_outputs`]; the mean row only when `mean` is given).
#[allow(clippy::too_many_arguments)]
fn finish_gaussian(
    model: &Model,
    options: &FitOptions,
    sample: impl Fn(usize, &mut StreamRng) -> Vec<Vec<f64>>,
    log_q: impl Fn(&[f64]) -> f64 + Sync,
    mean: Option<&[f64]>,
    trace: Vec<(usize, f64, f64)>,
    no_mode: Option<String>,
) -> Result<GaussianOutputs, FitError> {
    let seed = options.seed;
    let (zetas, vi) = vi_draws(model, options, &sample, &log_q, trace)?;
    let draws = constrained_draws(model, std::slice::from_ref(&zetas), seed)
        .map_err(FitError::Constrain)?;
    let unbounded = match (&no_mode, mean) {
        (Some(_), Some(m)) => {
            unbounded_directions(model, &sample(UNBOUNDED_DRAWS, &mut stream(seed, 4)), m)
        }
        _ => Vec::new(),
    };
    let vi = vi.map(|v| ViDiagnostics {
        collapsed: collapsed_among(
            &draws,
            model.parameter_names().len(),
            &structural_constants(model),
        ),
        no_mode,
        unbounded,
        ..v
    });
    let (approx_log_densities, approx_mean_row) =
        approx_outputs(model, &zetas, &log_q, mean, seed)?;
    Ok(GaussianOutputs {
        draws,
        vi,
        approx_log_densities,
        approx_mean_row,
    })
}

/// Runs `options.method` on `model`.
///
/// Random streams of `options.seed` (`inference::rng::stream`): 0 the initial point, 1 the
/// reported draws of a variational fit, 2 the draws of q for the PSIS diagnostic, 3 the uniform
/// of importance resampling, 4 the draws of the unboundedness check, 1000 + c generated quantities of chain c.
///
/// An MCMC run stopped by `monitor.stop` is returned trimmed by [`trim_interrupted`] (chains
/// without post-warmup draws dropped, the others cut to the shortest; possibly no chains).
/// MCMC on a model with no parameters (d = 0) is an error ([`FitError::Algorithm`]).
///
/// Errors: see [`FitError`]. Reproducible: the same `options` give the same result whatever the
/// number of threads.
pub fn fit(
    model: &Model,
    options: &FitOptions,
    monitor: &Monitor<'_>,
) -> Result<FitResult, FitError> {
    check_memory(model, options)?;
    let seed = options.seed;
    let start = Instant::now();
    let algorithm = |method: Method| {
        move |e: &dyn fmt::Display| FitError::Algorithm {
            method,
            message: e.to_string(),
        }
    };
    match options.method {
        Method::Qbvi => {
            let start_point = vi_start(model, options.vi_init, seed)?;
            let init = start_point.mean.clone();
            let mut settings = QbviSettings {
                seed,
                ..options.qbvi.clone()
            };
            if settings.init_precision.is_none() {
                settings.init_precision = start_point.precision.clone();
            }
            let mut progress = |p: qbvi::Progress| {
                (monitor.on_progress)(ProgressEvent::Qbvi(p));
                if monitor.stop.load(Ordering::Relaxed) {
                    Control::Stop
                } else {
                    Control::Continue
                }
            };
            let fit = qbvi::fit_qbvi(model, &init, &settings, &mut progress)
                .map_err(|e| algorithm(Method::Qbvi)(&e))?;
            let seconds = start.elapsed().as_secs_f64();
            let w = settings.window;
            let trace = fit
                .elbo_trace
                .iter()
                .enumerate()
                .map(|(i, &e)| {
                    let sm = if i >= w {
                        fit.smoothed_elbo.get(i - w).copied().unwrap_or(f64::NAN)
                    } else {
                        f64::NAN
                    };
                    (i + 1, e, sm)
                })
                .collect();
            let out = finish_gaussian(
                model,
                options,
                |n, rng| fit.sample(n, rng),
                |z| fit.log_q(z),
                Some(&fit.mean),
                trace,
                start_point.no_mode.clone(),
            )?;
            Ok(out.into_result(Method::Qbvi, seed, FitDetails::Qbvi(fit), seconds))
        }
        Method::Qnvb => {
            let start_point = vi_start(model, options.vi_init, seed)?;
            let init = start_point.mean.clone();
            let settings = QnvbSettings {
                seed,
                ..options.qnvb.clone()
            };
            let w = settings.window;
            let mut smooth = Smoother::new(w);
            let mut progress = |t: usize, elbo: f64| {
                let sm = smooth.push(elbo);
                (monitor.on_progress)(ProgressEvent::Qbvi(qbvi::Progress {
                    iteration: t + 1,
                    elbo,
                    smoothed_elbo: sm,
                }));
                !monitor.stop.load(Ordering::Relaxed)
            };
            let fit = qnvb::fit_qnvb(model, &init, &settings, &mut progress)
                .map_err(|e| algorithm(Method::Qnvb)(&e))?;
            let seconds = start.elapsed().as_secs_f64();
            let mut smooth = Smoother::new(w);
            let trace = fit
                .elbo_trace
                .iter()
                .enumerate()
                .map(|(i, &e)| (i + 1, e, smooth.push(e).unwrap_or(f64::NAN)))
                .collect();
            let out = finish_gaussian(
                model,
                options,
                |n, rng| fit.sample(n, rng),
                |z| fit.log_q(z),
                Some(&fit.mean),
                trace,
                start_point.no_mode.clone(),
            )?;
            Ok(out.into_result(Method::Qnvb, seed, FitDetails::Qnvb(fit), seconds))
        }
        Method::Laplace => {
            let mode = vi_start(model, ViInit::Mode, seed)?.mean;
            let settings = LaplaceSettings {
                optimize: options.optimize.clone(),
            };
            let fit = laplace::laplace(model, &mode, &settings)
                .map_err(|e| algorithm(Method::Laplace)(&e))?;
            let seconds = start.elapsed().as_secs_f64();
            let out = finish_gaussian(
                model,
                options,
                |n, rng| fit.sample(n, rng),
                |z| fit.log_q(z),
                None,
                Vec::new(),
                None,
            )?;
            Ok(out.into_result(Method::Laplace, seed, FitDetails::Laplace(fit), seconds))
        }
        Method::Optimize => {
            let fit = run_optimize(model, options)?;
            let seconds = start.elapsed().as_secs_f64();
            let draws = constrained_draws(model, &[vec![fit.point.clone()]], seed)
                .map_err(FitError::Constrain)?;
            Ok(FitResult {
                method: Method::Optimize,
                seed,
                draws,
                details: FitDetails::Optimize(fit),
                seconds,
                vi: None,
                approx_log_densities: Vec::new(),
                approx_mean_row: None,
            })
        }
        Method::Nuts | Method::Hmc | Method::Mh => {
            let mut settings = McmcSettings {
                seed,
                ..options.mcmc.clone()
            };
            settings.method = match options.method {
                Method::Nuts => mcmc::Method::Nuts,
                Method::Hmc => match settings.method {
                    mcmc::Method::StaticHmc { n_leapfrog } => {
                        mcmc::Method::StaticHmc { n_leapfrog }
                    }
                    _ => mcmc::Method::StaticHmc { n_leapfrog: None },
                },
                _ => mcmc::Method::Mh,
            };
            if model.dim() == 0 {
                return Err(FitError::Algorithm {
                    method: options.method,
                    message: if model.generated_quantity_names().is_empty() {
                        "the model has no parameters (d = 0): there is nothing to sample".into()
                    } else {
                        "the model has no parameters (d = 0), only generated quantities: \
                         fixed_param sampling is not supported"
                            .into()
                    },
                });
            }
            let progress = |p: ChainProgress| (monitor.on_progress)(ProgressEvent::Chain(p));
            let mut out = mcmc::sample(model, &settings, &[], &progress, monitor.stop)
                .map_err(|e| algorithm(options.method)(&e))?;
            let seconds = start.elapsed().as_secs_f64();
            let d = out.dim;
            let chains: Vec<Vec<Vec<f64>>> = out
                .chains
                .iter()
                .map(|c| {
                    if d == 0 {
                        vec![Vec::new(); c.stats.len()]
                    } else {
                        c.draws.chunks(d).map(<[f64]>::to_vec).collect()
                    }
                })
                .collect();
            let mut draws = constrained_draws(model, &chains, seed).map_err(FitError::Constrain)?;
            if out.interrupted {
                trim_interrupted(&mut out, &mut draws);
            }
            Ok(FitResult {
                method: options.method,
                seed,
                draws,
                details: FitDetails::Mcmc(Box::new(out)),
                seconds,
                vi: None,
                approx_log_densities: Vec::new(),
                approx_mean_row: None,
            })
        }
    }
}

/// The rule for an interrupted MCMC run (Ctrl-C): its chains stop at different iterations and
/// some may not have reached sampling (on 2 cores chains 3–4 may not even have started). Chains
/// with no post-warmup draws are dropped, the others are trimmed to the shortest of them, so that
/// `draws` (chain c of `draws` is chain c of `out`) and the sampler statistics of `out` stay
/// rectangular, as R-hat and ESS need. When no chain has post-warmup draws, both are left with
/// no chains. Generated quantities keep the random streams of their original chain numbers
/// (they are computed before the trim).
pub fn trim_interrupted(out: &mut McmcOutput, draws: &mut Draws) {
    let keep: Vec<bool> = out.chains.iter().map(|c| !c.stats.is_empty()).collect();
    let n = out
        .chains
        .iter()
        .map(|c| c.stats.len())
        .filter(|&n| n > 0)
        .min()
        .unwrap_or(0);
    let (d, k) = (out.dim, draws.names.len());
    let mut flags = keep.iter();
    out.chains.retain(|_| *flags.next().unwrap_or(&false));
    let mut flags = keep.iter();
    draws.chains.retain(|_| *flags.next().unwrap_or(&false));
    for c in &mut out.chains {
        let s = &mut c.stats;
        s.lp.truncate(n);
        s.accept_stat.truncate(n);
        s.stepsize.truncate(n);
        s.treedepth.truncate(n);
        s.n_leapfrog.truncate(n);
        s.divergent.truncate(n);
        s.energy.truncate(n);
        c.draws.truncate(n * d);
    }
    for c in &mut draws.chains {
        c.truncate(n * k);
    }
}

/// The smoothed ELBO of specs/qnvb.md §7.5: the mean of the last W + 1 values, once there
/// are that many.
struct Smoother {
    window: usize,
    values: std::collections::VecDeque<f64>,
    sum: f64,
}

impl Smoother {
    fn new(window: usize) -> Self {
        Smoother {
            window,
            values: std::collections::VecDeque::new(),
            sum: 0.0,
        }
    }

    fn push(&mut self, v: f64) -> Option<f64> {
        self.values.push_back(v);
        self.sum += v;
        if self.values.len() > self.window + 1 {
            self.sum -= self.values.pop_front().unwrap_or(0.0);
        }
        (self.values.len() == self.window + 1).then(|| self.sum / self.values.len() as f64)
    }
}

/// The reported unconstrained draws of a variational fit and its diagnostics: `psis_draws`
/// draws of q (stream 2) give k̂ and the ELBO estimate; the reported `vi_draws` draws are fresh
/// draws of q (stream 1) or, with `psis_resample`, systematic importance resampling of the
/// PSIS draws (uniform from stream 3).
fn vi_draws(
    model: &Model,
    options: &FitOptions,
    sample: impl Fn(usize, &mut StreamRng) -> Vec<Vec<f64>>,
    log_q: impl Fn(&[f64]) -> f64 + Sync,
    trace: Vec<(usize, f64, f64)>,
) -> Result<(Vec<Vec<f64>>, Option<ViDiagnostics>), FitError> {
    let seed = options.seed;
    let s = options.psis_draws;
    if s == 0 {
        let zetas = sample(options.vi_draws, &mut stream(seed, 1));
        return Ok((zetas, None));
    }
    let q_draws = sample(s, &mut stream(seed, 2));
    let (fit, elbo) = psis_of(model, &log_q, &q_draws).map_err(|message| FitError::Algorithm {
        method: options.method,
        message,
    })?;
    let khat = match fit.khat {
        KHat::Estimate(k) => k,
        KHat::Undefined => f64::NEG_INFINITY,
        KHat::FitFailed | KHat::NonFinite => f64::INFINITY,
    };
    let resample = options.psis_resample && fit.ess.is_finite();
    let zetas = if resample {
        use rand::RngExt;
        let u: f64 = stream(seed, 3).random();
        fit.resample(options.vi_draws, u)
            .into_iter()
            .map(|i| q_draws[i].clone())
            .collect()
    } else {
        sample(options.vi_draws, &mut stream(seed, 1))
    };
    Ok((
        zetas,
        Some(ViDiagnostics {
            khat,
            psis_ess: fit.ess,
            n_draws: s,
            elbo,
            trace,
            resampled: resample,
            collapsed: Vec::new(),
            no_mode: None,
            unbounded: Vec::new(),
        }),
    ))
}

/// PSIS of the log ratios L(ζ) − log q(ζ) over `draws` (evaluated in parallel; a recoverable
/// density error counts as L = −∞) and their mean (the ELBO estimate). Ratios that differ only
/// by rounding (q ∝ target) give k̂ undefined.
fn psis_of(
    model: &Model,
    log_q: &(impl Fn(&[f64]) -> f64 + Sync),
    draws: &[Vec<f64>],
) -> Result<(Psis, f64), String> {
    use rayon::prelude::*;
    let pairs: Vec<(f64, f64)> = draws
        .par_iter()
        .map(|z| match model.log_density(z) {
            Ok(lp) => {
                let lq = log_q(z);
                Ok((lp - lq, lp.abs().max(lq.abs())))
            }
            Err(e) if e.recoverable => Ok((f64::NEG_INFINITY, 0.0)),
            Err(e) => Err(format!(
                "cannot evaluate the log density at a draw of the approximation: {e}"
            )),
        })
        .collect::<Result<_, _>>()?;
    let ratios: Vec<f64> = pairs.iter().map(|p| p.0).collect();
    let elbo = ratios.iter().sum::<f64>() / ratios.len() as f64;
    let mut fit = psis(&ratios).map_err(|e| e.to_string())?;
    if ratios.iter().all(|r| r.is_finite()) {
        let scale = pairs.iter().map(|p| p.1).fold(0.0, f64::max);
        let lo = ratios.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if hi - lo <= 256.0 * f64::EPSILON * scale.max(1.0) {
            fit.khat = KHat::Undefined;
        }
    }
    Ok((fit, elbo))
}

/// `Method::Optimize`: L-BFGS from a random point (stream 0), Newton polish, the Hessian of the
/// maximised density there and delta-method standard errors on the constrained scale (the
/// sandwich of a robust covariance transforms like the classical one at an interior optimum).
///
/// Errors: as [`fit`]; with `StdErrorKind::Robust`, [`FitError::Algorithm`] when the model has
/// fewer than two observations or their scores cannot be computed.
fn run_optimize(model: &Model, options: &FitOptions) -> Result<OptimizeFit, FitError> {
    use faer::linalg::solvers::DenseSolveCore;
    let density = model.with_jacobian(options.jacobian);
    let init = crate::inference::init::random_init(&density, &mut stream(options.seed, 0))
        .map_err(FitError::Init)?;
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
    Ok(OptimizeFit {
        converged: lbfgs.converged,
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

/// Maximum Newton steps that polish the L-BFGS mode before a variational fit.
const NEWTON_STEPS: usize = 20;

/// The start of a variational fit (see [`ViInit`]).
#[derive(Clone, Debug)]
struct ViStart {
    /// The initial mean (length d).
    mean: Vec<f64>,
    /// The initial precision (d×d row-major): the negative Hessian at the mode, or `None` for
    /// the specification's Σ₀ = 0.01·I.
    precision: Option<Vec<f64>>,
    /// Why the mode start was abandoned for the random one (see [`find_mode`]); `None` with
    /// `ViInit::Random` or when the mode start was used.
    no_mode: Option<String>,
}

/// The start of a variational fit (see [`ViInit`]): the Laplace approximation at the mode
/// found by [`find_mode`] or, when there is none (or with `ViInit::Random`), the random point
/// uniform(−2, 2) of stream 0 of `seed` with Σ₀ = 0.01·I (specs/qbvi.md §11).
fn vi_start(model: &Model, how: ViInit, seed: u64) -> Result<ViStart, FitError> {
    let random =
        crate::inference::init::random_init(model, &mut stream(seed, 0)).map_err(FitError::Init)?;
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
const MODE_MAX_CONDITION: f64 = 1e10;

/// Newton decrement ∇Lᵀ(−H)⁻¹∇L above which the end point of the mode search is not a mode
/// (twice the log-density gain a further Newton step predicts). [X].
const MODE_MAX_DECREMENT: f64 = 1e-3;

/// An interior mode of the unconstrained log density for the Laplace start of a variational
/// fit: L-BFGS from `init` polished by Newton steps, with −H there (d×d row-major).
///
/// Errors (a sentence saying why there is no interior mode, for the user): the optimiser fails
/// or ends at a non-finite density; the Hessian at its end point is not negative definite (a
/// flat or improper direction); the Jacobi-scaled −H has a condition number above
/// [`MODE_MAX_CONDITION`] or the Newton decrement stays above [`MODE_MAX_DECREMENT`] (the
/// density keeps growing towards the boundary of the unconstrained space, as in a funnel).
/// Either way the log density has no interior mode that a Laplace approximation could use.
fn find_mode(model: &Model, init: &[f64]) -> Result<(Vec<f64>, Vec<f64>), String> {
    let lbfgs = optimize::optimize(model, init, &OptimizeSettings::default())
        .map_err(|e| format!("the mode search failed: {e}"))?;
    if !lbfgs.log_density.is_finite() {
        return Err("the mode search ended where the log density is not finite".into());
    }
    // Newton polish: L-BFGS may stop along a flat ridge; the refined mode and the negative
    // Hessian there give the Laplace approximation that QBVI starts from.
    let r = optimize::newton_refine(model, &lbfgs.point, NEWTON_STEPS).ok_or_else(|| {
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
    let mut g = vec![0.0; d];
    let decrement = match model.log_density_grad(&r.point, &mut g) {
        Ok(_) => {
            use faer::linalg::solvers::Solve;
            let a = faer::Mat::<f64>::from_fn(d, d, |i, j| nh[i * d + j]);
            match a.llt(faer::Side::Lower) {
                Ok(llt) => {
                    let dir = llt.solve(faer::Mat::from_fn(d, 1, |i, _| g[i]));
                    (0..d).map(|i| g[i] * dir[(i, 0)]).sum::<f64>()
                }
                Err(_) => f64::INFINITY,
            }
        }
        Err(_) => f64::INFINITY,
    };
    if !(cond <= MODE_MAX_CONDITION) || !(decrement <= MODE_MAX_DECREMENT) {
        return Err(format!(
            "the log density keeps growing towards the boundary of the unconstrained space, as \
             in a funnel or an improper posterior (at the end point of the mode search the \
             scaled Hessian has condition number {cond:.1e} and the Newton decrement is \
             {decrement:.1e})"
        ));
    }
    Ok((r.point, r.neg_hessian))
}

/// Column names of the draws: parameters, then transformed parameters, then generated quantities.
pub fn draw_names(model: &Model) -> Vec<String> {
    let mut names = model.parameter_names();
    names.extend(model.transformed_parameter_names());
    names.extend(model.generated_quantity_names());
    names
}

/// Maps unconstrained draws (one `Vec` of points per chain) through the model into [`Draws`];
/// chain `c` uses random stream `1000 + c` of `seed` for generated quantities.
pub fn constrained_draws(
    model: &Model,
    chains: &[Vec<Vec<f64>>],
    seed: u64,
) -> Result<Draws, DensityError> {
    use rayon::prelude::*;
    let names = draw_names(model);
    let out = chains
        .par_iter()
        .enumerate()
        .map(|(c, zetas)| {
            let mut rng = stream(seed, 1000 + c as u64);
            let mut flat = Vec::with_capacity(zetas.len() * names.len());
            for z in zetas {
                flat.extend(model.write_array(z, true, true, &mut rng)?);
            }
            Ok(flat)
        })
        .collect::<Result<Vec<_>, DensityError>>()?;
    Ok(Draws { names, chains: out })
}
