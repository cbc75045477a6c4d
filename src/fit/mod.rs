//! Running an inference method on a compiled model and mapping its draws to the constrained
//! scale: the step after [`crate::pipeline::compile`], shared by the CLI and the REPL.

pub mod args;
mod fixed_param;
pub mod inits;
mod limits;
mod mcmc_fit;
pub mod mh_length;
mod mode;
mod pathfinder_fit;
mod survey_fit;
mod vi_checks;
pub mod vi_gate;

pub use limits::*;
pub use mcmc_fit::{McmcStream, trim_interrupted};
use mode::*;
pub use vi_checks::*;
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
    /// CmdStan's `fixed_param` sampler: the parameters stay at their initial values and each
    /// iteration draws the generated quantities afresh ([`fixed_param`]); also what the MCMC
    /// methods run on a model without parameters.
    FixedParam,
    /// IVON, improved variational online Newton (mean-field Gaussian; `specs/survey_vi.md` §17).
    Ivon,
    /// Bayes-by-backprop (mean-field Gaussian, reparameterisation; `specs/survey_vi.md` §5).
    Bbb,
    /// Black-box VI with Rao–Blackwellisation and lagged control variates (mean-field
    /// Gaussian, score function; `specs/survey_vi.md` §7).
    Bbvi,
    /// MGVB, manifold Gaussian VB (full covariance, score function; `specs/survey_vi.md` §14).
    Mgvb,
    /// EMGVB, exact manifold Gaussian VB on the precision (full covariance, score function;
    /// `specs/survey_vi.md` §15).
    Emgvb,
    /// NGVI, natural-gradient Gaussian VI with reparameterised gradients and Stein's identity
    /// (full covariance or diagonal; `specs/survey_vi.md` §9).
    Ngvi,
    /// Multi-path Pathfinder (Zhang et al. 2022): Gaussians along L-BFGS paths, their
    /// mixture importance-resampled (`inference::pathfinder`).
    Pathfinder,
    /// NG-BBVI, black-box VI with the natural gradient and Adam (mean-field Gaussian, score
    /// function; `specs/survey_vi.md` §8).
    Ngbbvi,
    /// VON, variational online Newton (full covariance or diagonal, Hessian at one draw;
    /// `specs/survey_vi.md` §10).
    Von,
    /// Vadam, variational Adam (mean-field Gaussian, squared minibatch gradients;
    /// `specs/survey_vi.md` §11).
    Vadam,
    /// VOGN, variational online Gauss–Newton (mean-field Gaussian, per-example squared
    /// gradients; `specs/survey_vi.md` §12).
    Vogn,
    /// Variational Laplace (mean-field Gaussian from the second-order expansion of the ELBO
    /// with the diagonal curvature at the mean; `specs/survey_vi.md` §16).
    Vlaplace,
    /// MC dropout (Bernoulli masks on the units of `@dropout` parameters, Adam on the masked
    /// log joint; `specs/survey_vi.md` §4).
    Mcdropout,
}

impl Method {
    /// True for the MCMC samplers (several chains, R-hat and ESS apply).
    pub fn is_mcmc(self) -> bool {
        matches!(
            self,
            Method::Nuts | Method::Hmc | Method::Mh | Method::FixedParam
        )
    }

    /// True for the methods that fit an approximation q and report the PSIS k̂ of it
    /// (QBVI, QNVB, Laplace).
    pub fn is_variational(self) -> bool {
        matches!(
            self,
            Method::Qbvi | Method::Qnvb | Method::Laplace | Method::Pathfinder
        ) || self.is_survey()
    }

    /// True for the survey's variational methods (`specs/survey_vi.md`), which fit a Gaussian
    /// by iterating under the common exit rule and report a [`GaussianFit`].
    pub fn is_survey(self) -> bool {
        matches!(
            self,
            Method::Ivon
                | Method::Bbb
                | Method::Bbvi
                | Method::Mgvb
                | Method::Emgvb
                | Method::Ngvi
                | Method::Ngbbvi
                | Method::Von
                | Method::Vadam
                | Method::Vogn
                | Method::Vlaplace
                | Method::Mcdropout
        )
    }

    /// True for the methods that need the per-observation gradients of a log density split
    /// over rows (Vadam, VOGN: `specs/survey_vi.md` §2 table), so a [`MinibatchPlan`] even
    /// without `--batch-size`.
    pub fn needs_rows(self) -> bool {
        matches!(self, Method::Vadam | Method::Vogn)
    }

    /// True for the methods that accept `--batch-size` ([`MINIBATCH_METHODS`]); `diagonal`
    /// says whether `--diagonal` was given (QBVI and VON minibatch only their mean-field family).
    pub fn takes_batches(self, diagonal: bool) -> bool {
        match self {
            Method::Qnvb
            | Method::Ivon
            | Method::Bbb
            | Method::Vadam
            | Method::Vogn
            | Method::Vlaplace
            | Method::Mcdropout => true,
            Method::Qbvi | Method::Von => diagonal,
            _ => false,
        }
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
            Method::FixedParam => "fixed_param",
            Method::Ivon => "ivon",
            Method::Bbb => "bbb",
            Method::Bbvi => "bbvi",
            Method::Mgvb => "mgvb",
            Method::Emgvb => "emgvb",
            Method::Ngvi => "ngvi",
            Method::Pathfinder => "pathfinder",
            Method::Ngbbvi => "ngbbvi",
            Method::Von => "von",
            Method::Vadam => "vadam",
            Method::Vogn => "vogn",
            Method::Vlaplace => "vlaplace",
            Method::Mcdropout => "mcdropout",
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
    /// Draws of the fitted q used for the PSIS k̂ and the reliability gate of a variational fit
    /// (default 4000, in [`vi_gate::PSIS_BATCHES`] batches; at least 25; 0 skips the
    /// diagnostic).
    pub psis_draws: usize,
    /// Report `vi_draws` draws importance-resampled (systematic resampling with the Pareto-
    /// smoothed weights) from the `psis_draws` draws of q, instead of fresh draws of q.
    pub psis_resample: bool,
    /// QNVB and diagonal QBVI only: fit on minibatches of rows (`--batch-size`; docs/minibatch.md).
    pub minibatch: Option<MinibatchPlan>,
    /// True when the QBVI covariance family was chosen from d by
    /// [`crate::inference::qbvi::Covariance::for_dimension`] rather than asked for (the settings
    /// line then says so). Default false.
    pub covariance_by_dimension: bool,
    /// IVON settings (`survey_vi.md` §17; seed, initial mean and Hessian come from the fit).
    pub ivon: IvonSettings,
    /// Bayes-by-backprop settings (`survey_vi.md` §5; seed, initial mean and σ from the fit).
    pub bbb: BbbSettings,
    /// BBVI settings (`survey_vi.md` §7; seed, initial mean and σ from the fit).
    pub bbvi: BbviSettings,
    /// MGVB settings (`survey_vi.md` §14; seed, initial mean and precision from the fit).
    pub mgvb: ManifoldSettings,
    /// EMGVB settings (`survey_vi.md` §15; seed, initial mean and precision from the fit).
    pub emgvb: ManifoldSettings,
    /// NGVI settings (`survey_vi.md` §9; seed, initial mean and precision from the fit).
    pub ngvi: NgviSettings,
    /// Variational-Laplace settings (`survey_vi.md` §16; seed, initial mean and curvature
    /// from the fit).
    pub vlaplace: VlaplaceSettings,
    /// MC-dropout settings (`survey_vi.md` §4; seed, initial weights and the units of the
    /// model's `@dropout` sites from the fit).
    pub mcdropout: McDropoutSettings,
    /// NG-BBVI settings (`survey_vi.md` §8; seed, initial mean and σ from the fit).
    pub ngbbvi: NgbbviSettings,
    /// VON settings (`survey_vi.md` §10; seed, initial mean and precision from the fit).
    pub von: VonSettings,
    /// Vadam settings (`survey_vi.md` §11; seed, initial mean and precision from the fit).
    pub vadam: VadamSettings,
    /// VOGN settings (`survey_vi.md` §12; seed, initial mean and precision from the fit).
    pub vogn: VognSettings,
    /// Settings of `Method::Pathfinder` (its `seed` is overwritten by [`FitOptions::seed`]), also
    /// used by `McmcInit::Pathfinder`.
    pub pathfinder: PathfinderSettings,
    /// Where MCMC chains start.
    pub mcmc_init: McmcInit,
    /// Metropolis–Hastings only: choose the number of draws from measured mixing, starting
    /// from `mcmc.samples` ([`mh_length`]; `bayesc fit --method mh` without `--samples`).
    /// Default false: exactly `mcmc.samples` draws.
    pub mh_auto_length: bool,
    /// Significant digits of the numbers in the draws files (`--sig-figs`, CmdStan's
    /// `sig_figs`, 1..=18); `None` (default) writes full round-trip precision.
    pub sig_figs: Option<usize>,
    /// `--init FILE`: a JSON file of initial values on the constrained scale ([`inits`]; with
    /// several chains or paths, CmdStan's `FILE_1.json` … convention). Every method starts
    /// there: the MCMC chains, fixed_param's fixed point, the optimizer, Laplace's mode search,
    /// the variational methods' start (the mode search from it, or the point itself with
    /// `ViInit::Random`) and Pathfinder's paths. Parameters it leaves out start uniform(−R, R)
    /// with R = `mcmc.init_radius`. `None` (default): random starts.
    pub init_file: Option<std::path::PathBuf>,
}

/// Where the chains of an MCMC fit start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum McmcInit {
    /// uniform(−R, R) on the unconstrained scale, R = `McmcSettings::init_radius` (Stan's).
    Random,
    /// One PSIS-resampled draw of multi-path Pathfinder per chain (as Stan's
    /// `pathfinder` initialisation; `pathfinder_fit::pathfinder_inits`).
    Pathfinder,
}

/// A proved minibatch plan: the separability of the model over its observation axis
/// (`graph::separability`), N, and the schedule settings (`inference::minibatch`).
#[derive(Clone, Debug)]
pub struct MinibatchPlan {
    /// Sliced variables and scaled statements, from the compiler's proof.
    pub separability: Separability,
    /// N, the number of rows.
    pub n_obs: usize,
    /// M and the epoch exit rule.
    pub settings: MinibatchSettings,
}

impl MinibatchPlan {
    /// Batches per epoch, ⌊N/M⌋.
    pub fn batches_per_epoch(&self) -> usize {
        self.n_obs / self.settings.batch_size.max(1)
    }
}

/// The methods that accept `--batch-size`, for messages.
pub const MINIBATCH_METHODS: &str =
    "qnvb, ivon, bbb, vadam, vogn, vlaplace, mcdropout, and qbvi or von with --diagonal";

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
            psis_draws: 4000,
            psis_resample: false,
            minibatch: None,
            covariance_by_dimension: false,
            ivon: IvonSettings::default(),
            bbb: BbbSettings::default(),
            bbvi: BbviSettings::default(),
            mgvb: ManifoldSettings::default(),
            emgvb: ManifoldSettings::default(),
            ngvi: NgviSettings::default(),
            pathfinder: PathfinderSettings::default(),
            mcmc_init: McmcInit::Random,
            mh_auto_length: false,
            sig_figs: None,
            init_file: None,
            ngbbvi: NgbbviSettings::default(),
            von: VonSettings::default(),
            vadam: VadamSettings::default(),
            vogn: VognSettings::default(),
            vlaplace: VlaplaceSettings::default(),
            mcdropout: McDropoutSettings::default(),
        }
    }
}

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
    /// True when L-BFGS reported convergence (see `lbfgs.message`) and no flat direction was
    /// found.
    pub converged: bool,
    /// Parameters (unconstrained coordinates) along which the density is flat from ζ̂ out to
    /// 100 units on one side ([`crate::inference::flat::flat_at_point`]; probed only when −H is
    /// not positive definite): there is no optimum, and ζ̂ is an arbitrary point.
    pub flat: Vec<String>,
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
                options.vi_init,
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
            .map_err(|e| algorithm(Method::Qbvi)(&e))?;
            let seconds = start.elapsed().as_secs_f64();
            let out = finish_gaussian_fit(
                model,
                options,
                &fit,
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
                options.vi_init,
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
            let start_point = vi_start(
                model,
                ViInit::Mode,
                seed,
                inits::user_start(model, options)?,
            )?;
            if let Some(reason) = start_point
                .no_mode
                .filter(|r| r.starts_with(mode::INTERPOLATION))
            {
                return Err(FitError::Algorithm {
                    method: Method::Laplace,
                    message: reason,
                });
            }
            let mode = start_point.mean;
            let settings = LaplaceSettings {
                optimize: options.optimize.clone(),
            };
            let fit = laplace::laplace(model, &mode, &settings).map_err(|e| {
                // −H not positive definite: name the flat directions, if any (issue 13, item 2)
                let d = mode.len();
                let flat = if e == laplace::LaplaceError::NotMaximum {
                    let nh: Option<Vec<f64>> = crate::inference::hessian::hessian(model, &mode)
                        .ok()
                        .map(|h| h.iter().map(|v| -v).collect());
                    let candidates = match &nh {
                        Some(nh) => crate::inference::flat::null_rows(nh, d),
                        None => (0..d).collect(),
                    };
                    let coords = crate::inference::flat::flat_at_point(model, &mode, &candidates);
                    crate::inference::flat::coordinate_names(&model.parameter_names(), d, &coords)
                } else {
                    Vec::new()
                };
                if flat.is_empty() {
                    algorithm(Method::Laplace)(&e)
                } else {
                    FitError::Algorithm {
                        method: Method::Laplace,
                        message: format!(
                            "the posterior is improper: the log density does not change along \
                             {} (its gradient is 0 from the mode search's end point out to 100 \
                             units on the unconstrained scale), so there is no mode to \
                             approximate; give it a proper prior or check that the likelihood \
                             depends on it",
                            flat.join(", ")
                        ),
                    }
                }
            })?;
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
            let draws = constrained_draws(model, &[vec![fit.point.clone()]], seed)
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
/// of `w + 1` values is full, then [`finish_gaussian`].
fn finish_gaussian_fit(
    model: &Model,
    options: &FitOptions,
    fit: &GaussianFit,
    w: usize,
    no_mode: Option<String>,
) -> Result<GaussianOutputs, FitError> {
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
    finish_gaussian(
        model,
        options,
        |n, rng| fit.sample(n, rng),
        |z| fit.log_q(z),
        Some(&fit.mean),
        trace,
        no_mode,
    )
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
