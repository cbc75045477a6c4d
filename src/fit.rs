//! Running an inference method on a compiled model and mapping its draws to the constrained
//! scale: the step after [`crate::pipeline::compile`], shared by the CLI and the REPL.

use std::fmt;
use std::time::Instant;

use crate::graph::Model;
use crate::inference::optimize::{self, OptimizeSettings};
use crate::inference::qbvi::{self, Control, QbviFit, QbviSettings};
use crate::inference::rng::stream;
use crate::inference::{DensityError, Draws};

/// The inference methods bayesc offers.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Method {
    /// Quasi black-box variational inference (Gaussian on the unconstrained scale).
    Qbvi,
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Method::Qbvi => "qbvi",
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
    /// Where a variational fit starts (default: the posterior mode).
    pub vi_init: ViInit,
}

/// Where the mean of a variational approximation starts.
///
/// The specification's default (`specs/qbvi.md` §11) is a random point, uniform(−2, 2) on the
/// unconstrained scale. From such a point far from the posterior, the smoothed-ELBO exit rule
/// (§7.2) can fire while the ELBO is still climbing slowly (seen on the labour model: a stop at
/// iteration 82 with ELBO ≈ −31,000). bayesc therefore starts at the mode of the log density
/// on the unconstrained scale, found by L-BFGS from the random point (a design decision, [X]);
/// this costs a few dozen gradient evaluations, a small fraction of one QBVI iteration's
/// 100 log-density evaluations per ten iterations.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ViInit {
    /// L-BFGS to the mode from a random point; the random point itself if the optimiser fails.
    Mode,
    /// The random point uniform(−2, 2) on the unconstrained scale, as the specification says.
    Random,
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
        }
    }
}

/// Algorithm-specific results kept beside the draws.
#[derive(Clone, Debug)]
pub enum FitDetails {
    /// The fitted Gaussian, the ELBO trace and the stopping reason.
    Qbvi(QbviFit),
}

/// A finished fit: constrained draws (parameters, transformed parameters, generated quantities)
/// plus the algorithm's own output.
#[derive(Clone, Debug)]
pub struct FitResult {
    pub method: Method,
    pub seed: u64,
    pub draws: Draws,
    pub details: FitDetails,
    /// Wall time of the algorithm, seconds (excluding compilation and output).
    pub seconds: f64,
}

/// Progress reported during a fit (for progress bars); return [`Control::Stop`] to interrupt.
pub type ProgressFn<'a> = dyn FnMut(&str) -> Control + 'a;

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
    progress: &mut dyn FnMut(qbvi::Progress) -> Control,
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
            let fit = qbvi::fit_qbvi(model, &init, &settings, progress).map_err(|e| {
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
    }
}

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

/// Maximum Newton steps that polish the L-BFGS mode before a variational fit.
const NEWTON_STEPS: usize = 20;

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
    let names = draw_names(model);
    let mut out = Vec::with_capacity(chains.len());
    for (c, zetas) in chains.iter().enumerate() {
        let mut rng = stream(seed, 1000 + c as u64);
        let mut flat = Vec::with_capacity(zetas.len() * names.len());
        for z in zetas {
            flat.extend(model.write_array(z, true, true, &mut rng)?);
        }
        out.push(flat);
    }
    Ok(Draws { names, chains: out })
}
