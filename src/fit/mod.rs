//! Running an inference method on a compiled model and mapping its draws to the constrained
//! scale: the step after [`crate::pipeline::compile`], shared by the CLI and the REPL.

pub mod args;
mod diagonal_step;
mod fixed_param;
mod gq_failures;
pub mod inits;
mod limits;
mod mcmc_fit;
pub mod mh_length;
mod mode;
mod options;
mod pathfinder_fit;
pub mod refine;
pub mod refine_full;
pub mod stationarity;
mod status;
mod survey_fit;
mod vi_checks;
mod vi_degenerate;
mod vi_diverged;
pub mod vi_gate;
mod whitening;

pub use gq_failures::gq_failure_note;
pub(crate) use gq_failures::{GqTally, constrained_row};
pub use limits::*;
pub use mcmc_fit::{McmcStream, trim_interrupted};
use mode::*;
pub use options::*;
pub use vi_checks::*;
pub use vi_degenerate::*;
pub use vi_diverged::{DIVERGED_RISE, diverged_phrase};
pub use vi_gate::{ViGate, ViVerdict, judge, khat_number};

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crate::diagnostics::psis::{KHat, Psis, psis};
use crate::graph::Model;
use crate::graph::batch::MinibatchModel;
use crate::graph::separability::Separability;
use crate::inference::laplace::{self, LaplaceFit, LaplaceSettings};
use crate::inference::mcmc::{self, ChainProgress, McmcOutput, McmcSettings};
use crate::inference::minibatch::MinibatchSettings;
use crate::inference::optimize::{self, OptimizeResult, OptimizeSettings};
use crate::inference::pathfinder::{PathfinderFit, PathfinderSettings};
use crate::inference::qbvi::{self, Control, QbviFit, QbviSettings};
use crate::inference::qnvb::{self, QnvbFit, QnvbSettings};
use crate::inference::rng::{StreamRng, stream};
use crate::inference::vi::bbb::{self, BbbSettings};
use crate::inference::vi::bbvi::{self, BbviSettings};
use crate::inference::vi::ivon::{self, IvonSettings};
use crate::inference::vi::manifold::ManifoldSettings;
use crate::inference::vi::mcdropout::{self, DropoutUnit, McDropoutSettings};
use crate::inference::vi::ngbbvi::{self, NgbbviSettings};
use crate::inference::vi::ngvi::{self, NgviSettings};
use crate::inference::vi::vadam::{self, VadamSettings};
use crate::inference::vi::vlaplace::{self, VlaplaceSettings};
use crate::inference::vi::vogn::{self, VognSettings};
use crate::inference::vi::von::{self, VonSettings};
use crate::inference::vi::{GaussianFit, ViError};
use crate::inference::vi::{emgvb, mgvb};
use crate::inference::{DensityError, Draws, LogDensity};

/// The result of `Method::Optimize`: the optimum on both scales with standard errors.
#[derive(Clone, Debug)]
pub struct OptimizeFit {
    /// The optimizer's run, L-BFGS by default (its `point` is before the Newton polish).
    pub lbfgs: OptimizeResult,
    /// Which optimizer made `lbfgs` (`--algorithm`).
    pub algorithm: optimize::Algorithm,
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
    /// True when L-BFGS reported convergence (see `lbfgs.message`) or the Newton polish ended
    /// at a verified optimum (`polished`), and no flat direction or missing mode was found.
    pub converged: bool,
    /// The Newton decrement ½ gᵀ(−H)⁻¹g at ζ̂ (the log-density gain a further Newton step
    /// promises; Boyd & Vandenberghe 2004, §9.5.1) when −H is positive definite there and it is
    /// below [`crate::inference::newton::NEWTON_TOL_LP`]: ζ̂ is then a local optimum whatever L-BFGS reported
    /// (on labour, seed 3, L-BFGS ran into its 2000-iteration cap along the badly scaled age
    /// terms and the polish finished the job). `None` otherwise.
    pub polished: Option<f64>,
    /// Parameters (unconstrained coordinates) along which the density is flat from ζ̂ out to
    /// 100 units on one side ([`crate::inference::flat::flat_at_point`]; probed only when −H is
    /// not positive definite): there is no optimum, and ζ̂ is an arbitrary point. A coordinate
    /// flat only towards a bound it has reached is in `at_bound` instead.
    pub flat: Vec<String>,
    /// Why there is no optimum although nothing is flat: a scale ran to 0 where the density
    /// grows without bound (`mode::interpolation_reason`, `mode::funnel_reason`), so the
    /// estimate is the optimizer's last point on its way to the boundary. `None` otherwise.
    pub no_mode: Option<String>,
    /// Parameters whose optimum is at a bound (`mode::bound_modes`, only without the Jacobian):
    /// (name, "lower" or "upper", estimate). The maximised density rises towards the bound and
    /// levels off there, so the optimum is the bound itself: a mode on the boundary of a proper
    /// posterior, not an improper one. Their standard errors are NaN. Empty otherwise.
    pub at_bound: Vec<(String, &'static str, f64)>,
}

/// Algorithm-specific results kept beside the draws.
#[derive(Clone, Debug)]
pub enum FitDetails {
    /// The fitted Gaussian, the ELBO trace and the stopping reason of QBVI or of one of the
    /// survey's methods (IVON, BBB, BBVI: [`FitResult::method`] says which; [`QbviFit`] is
    /// the common [`GaussianFit`]).
    Qbvi(QbviFit),
    /// Per-chain unconstrained draws, sampler statistics, adaptation and timing.
    Mcmc(Box<McmcOutput>),
    /// The fitted mean-field Gaussian and the ELBO trace of QNVB.
    Qnvb(QnvbFit),
    /// The optimum with standard errors.
    Optimize(OptimizeFit),
    /// The Laplace approximation at the mode.
    Laplace(LaplaceFit),
    /// The paths of multi-path Pathfinder and the mixture of their best Gaussians.
    Pathfinder(PathfinderFit),
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
    /// Metropolis–Hastings with [`FitOptions::mh_auto_length`]: the length chosen and why, or
    /// a line starting "WARNING" when the budget ran out (with the length estimated to be
    /// needed). `None` otherwise.
    pub run_length: Option<String>,
    /// Per reported draw of a variational or Laplace fit, in the order of `draws`:
    /// (log p(ζ), log q(ζ)) on the unconstrained scale, log p the model's log density with the
    /// Jacobian adjustment (NaN where it cannot be evaluated), log q normalised. CmdStan's
    /// `log_p__` and `log_g__` columns. Empty for MCMC and optimisation.
    pub approx_log_densities: Vec<(f64, f64)>,
    /// The quantities (parameters, transformed parameters, generated quantities; the columns of
    /// `draws`) at the mean of the fitted Gaussian, for QBVI and QNVB: the first row of CmdStan's
    /// variational output. `None` for other methods.
    pub approx_mean_row: Option<Vec<f64>>,
    /// MCMC with `save_warmup`: the kept warmup draws on the constrained scale, one chain per
    /// chain of `draws` (same columns; generated quantities from their own random stream, so
    /// the post-warmup draws are those of a run without `save_warmup`). Never in summaries.
    pub warmup_draws: Option<Draws>,
    /// The error when the generated quantities failed at some draws of the fit (any method),
    /// which then hold NaN for them and keep everything else ([`gq_failure_note`]); `None`
    /// otherwise. Reports print it as `ERROR:`; `bayesc fit` writes its outputs whole and
    /// then exits with status 3 (docs/generated_quantities.md).
    pub gq_note: Option<String>,
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
    // the generated quantities may fail at the mean as at any draw: NaN for them there
    let row = match mean {
        Some(m) => Some(
            constrained_row(model, m, &mut stream(seed, 999))
                .map_err(FitError::Constrain)?
                .0,
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
    /// The model cannot be evaluated at any point: an unrecoverable error of the density
    /// (e.g. a size mismatch in an assignment, an index out of range), with its location.
    #[error("the model cannot be evaluated: {0}")]
    Model(DensityError),
    /// The algorithm failed.
    #[error("{method} failed: {message}")]
    Algorithm { method: Method, message: String },
    /// Mapping draws to the constrained scale or evaluating generated quantities failed.
    #[error("computing constrained draws failed: {0}")]
    Constrain(DensityError),
    /// The requested draws would not fit in memory ([`check_memory`]).
    #[error("{0}")]
    TooLarge(String),
    /// The initial values of `--init FILE` cannot be used ([`inits`]): the message names the
    /// file and the variable (and element) at fault.
    #[error("{0}")]
    InitValues(String),
}

impl FitError {
    /// The error of a failed random initialisation: [`FitError::Init`] when every attempted
    /// point was rejected, [`FitError::Model`] when the density failed unrecoverably (no point
    /// would do; issue 13, item 9: a size mismatch used to read "initialisation failed").
    pub fn from_init(e: DensityError) -> FitError {
        if e.recoverable || crate::inference::init::is_exhausted(&e) {
            FitError::Init(e)
        } else {
            FitError::Model(e)
        }
    }
}

/// What [`finish_gaussian`] computes for a fitted Gaussian approximation.
struct GaussianOutputs {
    draws: Draws,
    vi: Option<ViDiagnostics>,
    approx_log_densities: Vec<(f64, f64)>,
    approx_mean_row: Option<Vec<f64>>,
    /// [`FitResult::gq_note`].
    gq_note: Option<String>,
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
            run_length: None,
            approx_log_densities: self.approx_log_densities,
            approx_mean_row: self.approx_mean_row,
            warmup_draws: None,
            gq_note: self.gq_note,
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
    let (draws, gq_note) = constrained_draws(model, std::slice::from_ref(&zetas), seed)
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
        gq_note,
    })
}

/// The model under a minibatch plan.
fn minibatch_model<'m>(
    model: &'m Model,
    plan: &MinibatchPlan,
    method: Method,
) -> Result<MinibatchModel<'m>, FitError> {
    model
        .minibatch(&plan.separability)
        .map_err(|message| FitError::Algorithm { method, message })
}

/// Runs `options.method` on `model`.
///
/// Random streams of `options.seed` (`inference::rng::stream`): 0 the initial point, 1 the
/// reported draws of a variational fit, 2 the draws of q for the PSIS diagnostic, 3 the uniform
/// of importance resampling, 4 the draws of the unboundedness check, 1000 + c generated quantities of chain c; an MCMC
/// chain c restarted after a collapsed warmup uses 10 000 + 16c + a for its restart a
/// (`inference::chain`).
///
/// An MCMC run stopped by `monitor.stop` is returned trimmed by [`trim_interrupted`] (chains
/// without post-warmup draws dropped, the others cut to the shortest; possibly no chains).
/// MCMC on a model with no parameters (d = 0) and no outputs (transformed parameters or
/// generated quantities) is an error ([`FitError::Algorithm`]), as is any other method at
/// d = 0.
///
/// Errors: see [`FitError`]. Reproducible: the same `options` give the same result whatever the
/// number of threads.
pub fn fit(
    model: &Model,
    options: &FitOptions,
    monitor: &Monitor<'_>,
) -> Result<FitResult, FitError> {
    fit_with_stream(model, options, monitor, None)
}

/// [`fit`], also handing an MCMC fit's draws to `stream` as they are made (issue 13 item 7:
/// `bayesc fit --output` writes them to the chain files at once, so an interrupted run keeps
/// them); other methods ignore `stream`. The result is the same as [`fit`]'s.
///
/// Errors: as [`fit`].
pub fn fit_with_stream(
    model: &Model,
    options: &FitOptions,
    monitor: &Monitor<'_>,
    stream: Option<&dyn McmcStream>,
) -> Result<FitResult, FitError> {
    check_mh_dimension(model.dim(), options.method)?;
    check_memory(model, options)?;
    let outputs =
        model.generated_quantity_names().len() + model.transformed_parameter_names().len();
    if model.dim() == 0 && options.method.is_mcmc() && outputs == 0 {
        return Err(FitError::Algorithm {
            method: options.method,
            message: "the model has no parameters (d = 0) and no generated quantities: there \
                      is nothing to sample; declare parameters in a `parameters` block, or \
                      quantities to simulate in `generated quantities`"
                .into(),
        });
    }
    if model.dim() == 0 && !options.method.is_mcmc() {
        // Without parameters there is no density to approximate or maximise; the MCMC
        // methods run fixed_param sampling instead.
        return Err(FitError::Algorithm {
            method: options.method,
            message: "the model has no parameters (d = 0): there is nothing to fit or \
                      approximate; declare parameters in a `parameters` block, or simulate \
                      from the generated quantities with --method fixed_param"
                .into(),
        });
    }
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
            let start_point = vi_start(
                model,
                options.vi_init_for(model.dim()),
                seed,
                inits::user_start(model, options)?,
            )?;
            let init = start_point.mean.clone();
            let mut settings = QbviSettings {
                seed,
                ..options.qbvi.clone()
            };
            if settings.init_precision.is_none() {
                settings.init_precision = start_point.precision.clone();
            }
            let mut progress = vi_progress(monitor);
            let fit = match &options.minibatch {
                None => qbvi::fit_qbvi(model, &init, &settings, &mut progress),
                Some(plan) => {
                    let mm = minibatch_model(model, plan, Method::Qbvi)?;
                    qbvi::fit_qbvi_minibatch(&mm, &init, &settings, &plan.settings, &mut progress)
                }
            }
            .map_err(|e| match (&e, start_point.no_mode.as_deref()) {
                (qbvi::QbviError::NonFiniteDensity { .. }, Some(why)) => FitError::Algorithm {
                    method: Method::Qbvi,
                    message: format!("{e}. {}", survey_fit::improper_hint(why, &e.to_string())),
                },
                _ => algorithm(Method::Qbvi)(&e),
            })?;
            let mut fit = GaussianFit {
                random_start: options.random_start_by_request(model.dim()),
                ..fit
            };
            let seconds = start.elapsed().as_secs_f64();
            let out = finish_gaussian_fit(
                model,
                options,
                &mut fit,
                settings.window,
                start_point.no_mode.clone(),
            )?;
            Ok(out.into_result(Method::Qbvi, seed, FitDetails::Qbvi(fit), seconds))
        }
        Method::Vlaplace | Method::Mcdropout => {
            survey_fit::fit_survey(model, options, monitor, start)
        }
        m if m.is_survey() => survey_fit::fit_survey(model, options, monitor, start),
        Method::Qnvb => {
            let start_point = vi_start(
                model,
                options.vi_init_for(model.dim()),
                seed,
                inits::user_start(model, options)?,
            )?;
            let init = start_point.mean.clone();
            let mut settings = QnvbSettings {
                seed,
                ..options.qnvb.clone()
            };
            if options.minibatch.is_some() {
                // Under batch noise the signed curvature mean goes negative in flat directions
                // and the floor then walks σ up to σ_max (measured: the diabetes BNN diverged
                // within 40 steps); the reference RMS rule (specs/qnvb.md §5 step 5), which the
                // reference code uses with minibatches, stays positive.
                settings.curvature = qnvb::CurvatureAverage::Rms;
            }
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
            let fit = match &options.minibatch {
                None => qnvb::fit_qnvb(model, &init, &settings, &mut progress),
                Some(plan) => {
                    let mm = minibatch_model(model, plan, Method::Qnvb)?;
                    qnvb::fit_qnvb_minibatch(&mm, &init, &settings, &plan.settings, &mut progress)
                }
            }
            .map_err(|e| algorithm(Method::Qnvb)(&e))?;
            let mut fit = fit;
            // the refinement of the mean and sds after the exit rule, as for the other
            // mean-field fits (`refine`, the ELBO's fixed-point sds): minibatch QNVB on labour
            // said "converged" 0.15–0.27 NUTS sds from the NUTS means (M = 16–200, seeds 1–12)
            let attempted = options.refine_mean
                && fit.stop == qnvb::QnvbStop::Converged
                && fit.dim() <= stationarity::NEWTON_MAX_D;
            let refined = attempted
                .then(|| {
                    let precision = fit.variance.iter().map(|v| 1.0 / v).collect();
                    let mut q = GaussianFit::diagonal(
                        fit.mean.clone(),
                        precision,
                        crate::inference::vi::RunRecord::empty(),
                    );
                    let r = refine::refine_mean(model, seed, &mut q, refine::Sds::Elbo)?;
                    fit.mean = q.mean.clone();
                    fit.variance = q.variances();
                    Some(r)
                })
                .flatten();
            let seconds = start.elapsed().as_secs_f64();
            let mut smooth = Smoother::new(w);
            // minibatch: the per-iteration values are batch estimates, which nothing smooths
            // (the exit rule smooths the full-data ELBO of `epoch_checks`)
            let minibatch = !fit.epoch_checks.is_empty();
            let trace = fit
                .elbo_trace
                .iter()
                .enumerate()
                .map(|(i, &e)| {
                    let sm = smooth.push(e).filter(|_| !minibatch);
                    (i + 1, e, sm.unwrap_or(f64::NAN))
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
            let mut out = out;
            let mut offset = None;
            // The stationarity check (see `finish_gaussian_fit`).
            if let (Some(vi), qnvb::QnvbStop::Converged) = (out.vi.as_mut(), fit.stop) {
                let names = model.parameter_names();
                let random_start = options.vi_init_for(model.dim()) == ViInit::Random;
                vi.moving = refine::unsettled(refined.as_ref(), &names, options, random_start);
                if vi.moving.is_none() {
                    let verdict = stationarity::phrase(
                        model,
                        options,
                        |n, rng| fit.sample(n, rng),
                        &fit.mean,
                        &fit.sd(),
                        true,
                        match (attempted, &refined) {
                            (_, Some(r)) if r.steps > 0 => stationarity::Refined::Moved,
                            (true, _) => stationarity::Refined::Tried,
                            (false, _) => stationarity::Refined::No,
                        },
                        &fit.epoch_means,
                        refined
                            .as_ref()
                            .and_then(|r| r.sd_refused)
                            .map(|(coordinate, ratio)| stationarity::OffOptimum::Scale {
                                coordinate,
                                ratio,
                            }),
                    );
                    vi.moving = verdict.moving;
                    offset = verdict.offset.filter(|_| vi.moving.is_none());
                }
            }
            fit.notes.extend(refine::note(
                &model.parameter_names(),
                refined.as_ref(),
                offset,
                Method::Qnvb,
            ));
            Ok(out.into_result(Method::Qnvb, seed, FitDetails::Qnvb(fit), seconds))
        }
        Method::Laplace => {
            let start_point = vi_start(
                model,
                ViInit::Mode,
                seed,
                inits::user_start(model, options)?,
            )?;
            if let Some(reason) = start_point.no_mode.filter(|r| {
                r.starts_with(mode::INTERPOLATION)
                    || r.starts_with(mode::FLAT)
                    || r.starts_with(mode::NO_MODE)
            }) {
                let message = if reason.starts_with(mode::FLAT) {
                    format!(
                        "the posterior is improper: {reason}. There is no mode to approximate: \
                         give the parameter a proper prior or check that the likelihood depends \
                         on it"
                    )
                } else {
                    reason
                };
                return Err(FitError::Algorithm {
                    method: Method::Laplace,
                    message,
                });
            }
            let mode = start_point.mean;
            let settings = LaplaceSettings {
                optimize: options.optimize.clone(),
            };
            let fit = match laplace::laplace(model, &mode, &settings) {
                Ok(fit) => {
                    // A mode search can stop on a density that only flattens out (separated
                    // logistic data under flat priors: sds of 10⁶ and a "mode" at the
                    // tolerance), so small models are probed there as `optimize` does.
                    if model.dim() <= 200 {
                        let end = &fit.optimization.point;
                        if let Some(e) = improper_at(model, end) {
                            return Err(e);
                        }
                    }
                    fit
                }
                Err(e) if e == laplace::LaplaceError::NotMaximum => {
                    // −H not positive definite: name the flat directions, if any (issue 13,
                    // item 2), where the mode search ended (run again: it is deterministic), not
                    // at its start: along a ridge the gradient there is ≈ 0 across the ridge,
                    // so the directional-derivative test can tell the flat combination (at the
                    // start, a large gradient times the finite-difference eigenvector's
                    // rounding hid `a − b` of `y ~ normal(a + b, 1)`).
                    let end =
                        crate::inference::optimize::optimize(model, &mode, &settings.optimize)
                            .map_or_else(|_| mode.clone(), |r| r.point);
                    return Err(
                        improper_at(model, &end).unwrap_or_else(|| algorithm(Method::Laplace)(&e))
                    );
                }
                Err(e) => {
                    // the mode pressed against the edge where two cut-points meet: say so
                    let text = e.to_string();
                    return Err(
                        match crate::distributions::multivariate::ordered_logistic::unordered_cuts_remedy(&text) {
                            Some(remedy) => FitError::Algorithm {
                                method: Method::Laplace,
                                message: format!("{text}. {remedy}"),
                            },
                            None => algorithm(Method::Laplace)(&e),
                        },
                    );
                }
            };
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
        Method::Pathfinder => pathfinder_fit::fit_pathfinder(model, options, start),
        Method::Optimize => {
            let fit = run_optimize(model, options)?;
            let seconds = start.elapsed().as_secs_f64();
            let (draws, gq_note) = constrained_draws(model, &[vec![fit.point.clone()]], seed)
                .map_err(FitError::Constrain)?;
            Ok(FitResult {
                method: Method::Optimize,
                seed,
                draws,
                details: FitDetails::Optimize(fit),
                seconds,
                vi: None,
                run_length: None,
                approx_log_densities: Vec::new(),
                approx_mean_row: None,
                warmup_draws: None,
                gq_note,
            })
        }
        // CmdStan's `fixed_param`, asked for or (as CmdStan) for MCMC on a model without
        // parameters
        Method::FixedParam => fixed_param::fit_fixed_param(model, options, monitor, start, stream),
        m if m.is_mcmc() && model.dim() == 0 => {
            fixed_param::fit_fixed_param(model, options, monitor, start, stream)
        }
        // MH's automatic length reruns the chains in rounds: nothing is streamed (the caller
        // writes the final round's draws at the end).
        Method::Mh if options.mh_auto_length => {
            mh_length::fit_mh_auto(model, options, monitor, start)
        }
        _ => mcmc_fit::fit_mcmc(model, options, monitor, start, stream),
    }
}

/// The progress callback of the Gaussian variational methods: reports each iteration to the
/// monitor and asks the method to stop once Ctrl-C has set the monitor's flag.
fn vi_progress<'a>(monitor: &'a Monitor<'a>) -> impl FnMut(qbvi::Progress) -> Control + 'a {
    move |p: qbvi::Progress| {
        (monitor.on_progress)(ProgressEvent::Qbvi(p));
        if monitor.stop.load(Ordering::Relaxed) {
            Control::Stop
        } else {
            Control::Continue
        }
    }
}

/// The post-fit checks and draws of a [`GaussianFit`] (QBVI and the survey methods): its ELBO
/// trace as (iteration, ELBO, smoothed ELBO) rows, with the smoothed value NaN until the window
/// of `w + 1` values is full (and always for a minibatch fit, whose per-iteration values are
/// batch estimates; its smoothed full-data ELBO is in `epoch_checks`), then [`finish_gaussian`].
fn finish_gaussian_fit(
    model: &Model,
    options: &FitOptions,
    fit: &mut GaussianFit,
    w: usize,
    no_mode: Option<String>,
) -> Result<GaussianOutputs, FitError> {
    // the Newton refinement of the mean (`refine`) of a fit the exit rule stopped, whose mean
    // the checks below then judge at a tighter bar (not MC dropout's point estimate)
    let attempted = options.refine_mean
        && fit.stop == crate::inference::vi::StopReason::ExitRule
        && fit.unusable.is_none()
        && fit.drift.is_none()
        && options.method != Method::Mcdropout
        && fit.dim() <= stationarity::NEWTON_MAX_D;
    let rule = refine::Sds::of(options.method, &fit.factor);
    let refined = attempted
        .then(|| refine::refine_mean(model, options.seed, fit, rule))
        .flatten();
    let mut notes = Vec::new();
    // a trace thinned by a stride k smooths over ⌈W/k⌉ + 1 of its values (Tracker::with_stride)
    let w = w.div_ceil(fit.trace_stride.max(1));
    let trace = fit
        .elbo_trace
        .iter()
        .enumerate()
        .map(|(i, &e)| {
            let sm = if i >= w && fit.epoch_checks.is_empty() {
                fit.smoothed_elbo.get(i - w).copied().unwrap_or(f64::NAN)
            } else {
                f64::NAN
            };
            (fit.trace_iteration(i), e, sm)
        })
        .collect();
    let mut out = finish_gaussian(
        model,
        options,
        |n, rng| fit.sample(n, rng),
        |z| fit.log_q(z),
        Some(&fit.mean),
        trace,
        no_mode,
    )?;
    let mut offset = None;
    if let Some(vi) = out.vi.as_mut() {
        let random_start = options.vi_init_for(model.dim()) == ViInit::Random;
        let names = model.parameter_names();
        vi.moving = fit
            .unusable
            .clone()
            .or_else(|| drift_phrase(fit, &names, random_start, options.method));
        // MC dropout's q is not the Gaussian's: its mean is a point estimate of the weights.
        // Minibatch fits are checked up to a size, against their batch noise
        // (`stationarity::phrase`).
        // a refinement that did not settle: the mean is not at the optimum, whatever the
        // check estimates afterwards (it under-reads distances along ridges)
        if vi.moving.is_none() {
            vi.moving = refine::unsettled(refined.as_ref(), &names, options, random_start);
        }
        if vi.moving.is_none()
            && fit.stop == crate::inference::vi::StopReason::ExitRule
            && options.method != Method::Mcdropout
        {
            // VOGN, Vadam, vlaplace: the mean was refined at the ELBO's fixed-point sds, and
            // is checked there (`refine::Sds::Curvature`); the others at q
            let working = refined
                .as_ref()
                .and_then(|r| r.working_sd.as_ref())
                .and_then(|sd| {
                    let mut w = fit.clone();
                    w.set_diagonal_sd(sd).then_some(w)
                });
            let checked: &GaussianFit = working.as_ref().unwrap_or(fit);
            let sd: Vec<f64> = checked.variances().iter().map(|v| v.sqrt()).collect();
            // the sds' fixed-point step of the refinement was too long to take: q's variance
            // is off the ELBO's optimum (`refine::SD_STEP_MAX`)
            let known = refined
                .as_ref()
                .and_then(|r| r.sd_refused)
                .map(|(coordinate, ratio)| stationarity::OffOptimum::Scale { coordinate, ratio });
            let verdict = stationarity::phrase(
                model,
                options,
                |n, rng| checked.sample(n, rng),
                &checked.mean,
                &sd,
                fit.family == crate::inference::vi::Covariance::Diagonal,
                match (attempted, &refined) {
                    (_, Some(r)) if r.steps > 0 => stationarity::Refined::Moved,
                    (true, _) => stationarity::Refined::Tried,
                    (false, _) => stationarity::Refined::No,
                },
                &fit.epoch_means,
                known,
            );
            vi.moving = verdict.moving;
            offset = verdict.offset.filter(|_| vi.moving.is_none());
        }
    }
    // the refinement is reported whatever the verdict: it moved the mean that is reported
    notes.extend(refine::note(
        &model.parameter_names(),
        refined.as_ref(),
        offset,
        options.method,
    ));
    fit.notes.extend(notes);
    Ok(out)
}

/// Column names of the draws: parameters, then transformed parameters, then generated quantities.
pub fn draw_names(model: &Model) -> Vec<String> {
    let mut names = model.parameter_names();
    names.extend(model.transformed_parameter_names());
    names.extend(model.generated_quantity_names());
    names
}

/// Maps unconstrained draws (one `Vec` of points per chain) through the model into [`Draws`];
/// chain `c` uses random stream `1000 + c` of `seed` for generated quantities. As for MCMC
/// ([`constrained_row`]), a generated quantity that fails at a draw holds NaN there and the
/// others keep their values; the second value is then the warning that counts the failures
/// per quantity and quotes the first ([`gq_failure_note`]). An error of the parameters'
/// transforms or of the transformed parameters still fails the whole conversion.
pub fn constrained_draws(
    model: &Model,
    chains: &[Vec<Vec<f64>>],
    seed: u64,
) -> Result<(Draws, Option<String>), DensityError> {
    use rayon::prelude::*;
    let names = draw_names(model);
    let out = chains
        .par_iter()
        .enumerate()
        .map(|(c, zetas)| {
            let mut rng = stream(seed, 1000 + c as u64);
            let mut flat = Vec::with_capacity(zetas.len() * names.len());
            let mut tally = GqTally::default();
            for (i, z) in zetas.iter().enumerate() {
                let (row, failure) = constrained_row(model, z, &mut rng)?;
                if let Some(f) = failure {
                    tally.add(i + 1, f);
                }
                flat.extend(row);
            }
            Ok((flat, tally))
        })
        .collect::<Result<Vec<(Vec<f64>, GqTally)>, DensityError>>()?;
    let total: usize = chains.iter().map(Vec::len).sum();
    // the first failure is placed in the first chain that has one
    let first_chain = out.iter().position(|c| c.1.first.is_some()).unwrap_or(0);
    let mut tally = GqTally::default();
    let mut rows = Vec::with_capacity(out.len());
    for (flat, t) in out {
        tally.merge(t);
        rows.push(flat);
    }
    let note = tally.note(total, |at| {
        if chains.len() > 1 {
            format!("draw {at} of chain {}", first_chain + 1)
        } else {
            format!("draw {at}")
        }
    });
    Ok((
        Draws {
            names,
            chains: rows,
        },
        note,
    ))
}

/// Laplace's error when the log density is flat at `end` (where the mode search ended) along a
/// coordinate or a combination ([`crate::inference::flat::flat_directions`], with the negative
/// finite-difference Hessian there): no mode to approximate. `None` when nothing is flat.
fn improper_at(model: &Model, end: &[f64]) -> Option<FitError> {
    let flat = flat_at_end(model, end);
    (!flat.is_empty()).then(|| FitError::Algorithm {
        method: Method::Laplace,
        message: format!(
            "the posterior is improper: the log density does not change along {} (its gradient \
             is 0 from the mode search's end point out to 100 units on the unconstrained \
             scale), so there is no mode to approximate; give it a proper prior or check that \
             the likelihood depends on it",
            crate::words::name_list(&flat, 6)
        ),
    })
}

/// The flat directions ([`crate::inference::flat::flat_directions`], named) at `end`, the end
/// point of a mode search, probed with the finite-difference Hessian there; empty when there
/// is none. O(d) gradients plus the Hessian.
fn flat_at_end(model: &Model, end: &[f64]) -> Vec<String> {
    let nh: Option<Vec<f64>> = crate::inference::hessian::hessian(model, end)
        .ok()
        .map(|h| h.iter().map(|v| -v).collect());
    crate::inference::flat::flat_directions(model, end, nh.as_deref(), &model.parameter_names())
}
