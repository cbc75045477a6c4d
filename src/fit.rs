//! Running an inference method on a compiled model and mapping its draws to the constrained
//! scale: the step after [`crate::pipeline::compile`], shared by the CLI and the REPL.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crate::graph::Model;
use crate::inference::mcmc::{self, ChainProgress, McmcOutput, McmcSettings};
use crate::inference::optimize::{self, OptimizeSettings};
use crate::inference::qbvi::{self, Control, QbviFit, QbviSettings};
use crate::inference::rng::stream;
use crate::inference::{DensityError, Draws};

/// The inference methods bayesc offers.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Method {
    /// Quasi black-box variational inference (Gaussian on the unconstrained scale).
    Qbvi,
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
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Method::Qbvi => "qbvi",
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
        }
    }
}

/// Algorithm-specific results kept beside the draws.
#[derive(Clone, Debug)]
pub enum FitDetails {
    /// The fitted Gaussian, the ELBO trace and the stopping reason.
    Qbvi(QbviFit),
    /// Per-chain unconstrained draws, sampler statistics, adaptation and timing.
    Mcmc(Box<McmcOutput>),
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
    /// Wall time of the algorithm, seconds (excluding compilation and output).
    pub seconds: f64,
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
}

/// Runs `options.method` on `model`.
///
/// Errors: see [`FitError`]. Reproducible: the same `options` give the same result whatever the
/// number of threads.
pub fn fit(
    model: &Model,
    options: &FitOptions,
    monitor: &Monitor<'_>,
) -> Result<FitResult, FitError> {
    let seed = options.seed;
    let start = Instant::now();
    match options.method {
        Method::Qbvi => {
            let (init, init_precision) = vi_start(model, options.vi_init, seed)?;
            let mut settings = QbviSettings {
                seed,
                ..options.qbvi.clone()
            };
            if settings.init_precision.is_none() {
                settings.init_precision = init_precision;
            }
            let mut progress = |p: qbvi::Progress| {
                (monitor.on_progress)(ProgressEvent::Qbvi(p));
                if monitor.stop.load(Ordering::Relaxed) {
                    Control::Stop
                } else {
                    Control::Continue
                }
            };
            let fit = qbvi::fit_qbvi(model, &init, &settings, &mut progress).map_err(|e| {
                FitError::Algorithm {
                    method: Method::Qbvi,
                    message: e.to_string(),
                }
            })?;
            let seconds = start.elapsed().as_secs_f64();
            let zetas = fit.sample(options.vi_draws, &mut stream(seed, 1));
            let draws = constrained_draws(model, &[zetas], seed).map_err(FitError::Constrain)?;
            Ok(FitResult {
                method: Method::Qbvi,
                seed,
                draws,
                details: FitDetails::Qbvi(fit),
                seconds,
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
            let progress = |p: ChainProgress| (monitor.on_progress)(ProgressEvent::Chain(p));
            let out =
                mcmc::sample(model, &settings, &[], &progress, monitor.stop).map_err(|e| {
                    FitError::Algorithm {
                        method: options.method,
                        message: e.to_string(),
                    }
                })?;
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
            let draws = constrained_draws(model, &chains, seed).map_err(FitError::Constrain)?;
            Ok(FitResult {
                method: options.method,
                seed,
                draws,
                details: FitDetails::Mcmc(Box::new(out)),
                seconds,
            })
        }
    }
}

/// Maximum Newton steps that polish the L-BFGS mode before a variational fit.
const NEWTON_STEPS: usize = 20;

/// The start of a variational fit (see [`ViInit`]): the initial mean and, at a mode where the
/// negative Hessian is positive definite, that matrix as the initial precision (d×d row-major).
/// Random draws use stream 0 of `seed`.
fn vi_start(
    model: &Model,
    how: ViInit,
    seed: u64,
) -> Result<(Vec<f64>, Option<Vec<f64>>), FitError> {
    let random =
        crate::inference::init::random_init(model, &mut stream(seed, 0)).map_err(FitError::Init)?;
    if how == ViInit::Random {
        return Ok((random, None));
    }
    let mode = match optimize::optimize(model, &random, &OptimizeSettings::default()) {
        Ok(r) if r.log_density.is_finite() => r.point,
        _ => return Ok((random, None)),
    };
    // Newton polish: L-BFGS may stop along a flat ridge; the refined mode and the negative
    // Hessian there give the Laplace approximation that QBVI starts from.
    match optimize::newton_refine(model, &mode, NEWTON_STEPS) {
        Some(r) => {
            let d = r.point.len();
            let sane = (0..d)
                .all(|i| r.neg_hessian[i * d + i] > 1e-8 && r.neg_hessian[i * d + i].is_finite());
            Ok((r.point, sane.then_some(r.neg_hessian)))
        }
        None => Ok((mode, None)),
    }
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
