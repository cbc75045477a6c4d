//! QBVI: quasi black-box variational inference with natural gradients (Magris, Shabani &
//! Iosifidis 2022, arXiv 2205.11568), as specified in `specs/qbvi.md`.
//!
//! A Gaussian q on the unconstrained ζ (full covariance, §3, or diagonal, §4) is fitted by
//! natural-gradient steps estimated from values of the log density alone (score-function
//! estimator, §2.2). This module implements the default algorithm of §12:
//! - the residual form of the update, f = L − log q (§2.3, §10);
//! - per-component control variates estimated from the previous batch, with a pilot batch at
//!   t = 0 (§5.3, §5.5);
//! - the second-order retraction of the precision with step halving (§8.1, §8.3);
//! - redrawing of batches with non-finite log densities (§6);
//! - the smoothed-ELBO exit rule with window and patience, returning the kept (μ, P) (§7.2);
//! - the dimension-aware default step size (§11).
//!
//! Departures for the diagonal family ([X], measured on the digits BNN, docs/bnn_methods.md):
//! the mean step is limited to a trust region of [`QbviSettings::trust_region`] sds of q per
//! coordinate ([`MEAN_TRUST_REGION`]), and on minibatches the default step size is lowered with
//! N/M so that the batch noise of the mean iterate stays small
//! ([`QbviSettings::effective_step_size_minibatch`]); on minibatches the lagged control-variate
//! coefficients are shifted to the level of the batch in use (`inference::vi::BatchAnchor`,
//! a departure from §5.3 that keeps §5.1's unbiasedness).
//!
//! Reproducibility: the ε of each batch are drawn sequentially from one random stream
//! (`inference::rng::stream(seed, 0)` for the pilot batch, `stream(seed, 1)` for the
//! iterations); only the N_s log-density evaluations run in parallel (rayon), and their results
//! are collected in draw order, so a fit is bit-identical for any number of threads.
//!
//! Options: gradient-based estimates of the same natural gradient ([`Estimator::Gradient`], a
//! departure for large d, see there), the paper's conjugate form, with a Gaussian prior on ζ entering through its natural
//! parameter ([`Form::Conjugate`], §2.3, §3.3, §4), and exact control-variate denominators
//! ([`QbviSettings::analytic_denominators`], §5.4).
//!
//! Not implemented (optional in the spec): the reference-split form (§2.3), momentum, norm
//! clipping and β decay (§6), the multiplicative diagonal update (§8.2), RQMC draws (§3.4), the
//! mean-field inverse-gamma block (§9).
//!
//! ```
//! use bayesc::inference::qbvi::{fit_qbvi, Control, QbviSettings};
//! use bayesc::inference::{DensityError, LogDensity};
//!
//! /// L(ζ) = −½‖ζ − (1, 2)‖², a standard normal centred at (1, 2).
//! struct Target;
//! impl LogDensity for Target {
//!     fn dim(&self) -> usize { 2 }
//!     fn log_density(&self, z: &[f64]) -> Result<f64, DensityError> {
//!         Ok(-0.5 * ((z[0] - 1.0).powi(2) + (z[1] - 2.0).powi(2)))
//!     }
//!     fn log_density_grad(&self, _: &[f64], _: &mut [f64]) -> Result<f64, DensityError> {
//!         Err(DensityError::fatal("not needed by QBVI"))
//!     }
//! }
//!
//! let fit = fit_qbvi(&Target, &[0.0, 0.0], &QbviSettings::default(), &mut |_| Control::Continue)
//!     .unwrap();
//! assert!((fit.mean[0] - 1.0).abs() < 0.05 && (fit.mean[1] - 2.0).abs() < 0.05);
//! assert!((fit.covariance[0] - 1.0).abs() < 0.05); // Σ is 2×2 row-major
//! ```

use crate::inference::density::{DensityError, LogDensity, MinibatchDensity};
use crate::inference::minibatch::{EpochBatches, EpochElbo, EpochExit, MinibatchSettings};
use crate::inference::rng;
use crate::inference::vi::{
    Batch, BatchAnchor, ConjugatePrior, ControlVariates, DiagonalGaussian, Family, FullGaussian,
    RunRecord, Tracker, TrustRecord, ViError, stein_directions,
};

pub use crate::inference::vi::{
    Control, Covariance, FULL_COVARIANCE_MAX_DIM, GaussianFit, MEAN_TRUST_REGION, Progress,
    StopReason,
};

/// The result of a QBVI fit: the common [`GaussianFit`] of the variational methods.
pub type QbviFit = GaussianFit;

/// Halvings of β tried before an update is skipped (§8.3).
const MAX_HALVINGS: usize = 10;
/// Which natural-gradient expression drives the update (`specs/qbvi.md` §2.3, §10).
#[derive(Clone, Debug, PartialEq)]
pub enum Form {
    /// f = L(ζ) − log q(ζ) inside the score estimator, where the density is the full log
    /// joint L; any prior and Jacobian (§2.3 residual form, §10 rule 2). The default.
    Residual,
    /// The paper's conjugate form (§2.3, §3.3, §4): the density passed to [`fit_qbvi`] is the
    /// log-likelihood ℓ(ζ) alone, and the prior is the Gaussian N(prior_mean, prior_precision⁻¹)
    /// on ζ, entering exactly through its natural parameter. Only for models whose prior on ζ is
    /// Gaussian with no Jacobian term (§10 rule 3). The ELBO trace still uses the full log joint
    /// ℓ + log N(ζ; prior) (§7.1). With a diagonal q, the precision update uses the diagonal of
    /// the prior precision and the mean update the full matrix (§4).
    Conjugate {
        /// μ₀, length d.
        prior_mean: Vec<f64>,
        /// P₀ = Σ₀⁻¹, d×d row-major, symmetric positive definite.
        prior_precision: Vec<f64>,
    },
}

/// How the natural-gradient directions E_q[a·f] and E_q[B·f] are estimated each iteration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Estimator {
    /// The paper's values-only score-function estimate with lagged control variates
    /// (`specs/qbvi.md` §5.1–§5.3): only L is evaluated. The default.
    Score,
    /// [X], a departure from the paper for models with gradients: the same two expectations by
    /// the Bonnet/Price (Stein) identities of §3.2, E[a·f] = E[∇L] and
    /// E[B·f] = −E[P(ζ − μ)∇Lᵀ] − P (residual form; [`super::vi`]'s `stein_directions`, as NGVI
    /// uses them, `specs/survey_vi.md` §9), from ∇L at the same draws; no control variates.
    /// The step is the plain P + βG where it is positive definite, with the §8.1 retraction as
    /// a guard only (as NGVI). Why: the score estimate's noise grows with d and with the spread
    /// of L − log q; on the diabetes BNN (d = 602) it is 10³ times what the step size tolerates
    /// (docs/bnn_methods.md), while the gradient estimate's noise stays that of ∇L. bayesc's
    /// driver uses it for d > 50.
    Gradient,
}

/// Settings of a QBVI fit. `Default` gives the defaults of `specs/qbvi.md` §11.
#[derive(Clone, Debug, PartialEq)]
pub struct QbviSettings {
    /// The variational family. Default `Full` (§11: full if d ≤ 50; see
    /// [`Covariance::for_dimension`]).
    pub covariance: Covariance,
    /// The gradient form. Default `Residual` (§10 rule 2); see [`Form`].
    pub form: Form,
    /// N_s, draws per iteration; at least 2. Default 100 (§5.5, §11, paper's recommendation).
    pub n_samples: usize,
    /// β in (0, 1). `None` (default) chooses the §11 rule: 0.05 for the diagonal family,
    /// min(0.05, 0.005·N_s/d) for the full family (§14 check 6).
    pub step_size: Option<f64>,
    /// W, the smoothing window of the exit rule: the smoothed ELBO averages W + 1 values.
    /// Default 30 (§7.2, §11, authors' code).
    pub window: usize,
    /// P_max: stop after this many consecutive iterations without a new best smoothed ELBO
    /// (stops when the count exceeds it). Default 50 (§11).
    pub patience: usize,
    /// T_max, the maximum number of iterations (ELBO evaluations). Default 5000 (§11).
    pub max_iter: usize,
    /// Initial covariance Σ_0 = init_variance·I (a variance, not an sd). Default 0.01 (§11).
    pub init_variance: f64,
    /// Initial precision P_0 as a d×d row-major matrix, overriding `init_variance` when given
    /// (the diagonal family uses its diagonal). bayesc's driver passes the negative Hessian at
    /// the mode when it is positive definite (a Laplace start, [X]). Default `None`.
    pub init_precision: Option<Vec<f64>>,
    /// Seed of the random streams (`inference::rng`). Default 0.
    pub seed: u64,
    /// Use the exact variances of the score directions as control-variate denominators (§5.4)
    /// instead of their sample variances. Default `false` (§5.4: the authors' code uses the
    /// sample variance).
    pub analytic_denominators: bool,
    /// Return the (μ, P) kept by the exit rule (best smoothed ELBO, §7.2) when `true` (default);
    /// the last iterate when `false`. The last iterate is preferable when the target lies in the
    /// family, so that f becomes constant and the iterates converge exactly (§14 check 2).
    pub keep_best: bool,
    /// Draw the N_s standard normals in antithetic pairs (ε, −ε) when N_s is even ([X], not in
    /// the paper; an unbiased variance reduction). The mean direction a is odd in ε, so the
    /// pair cancels the even part of f — for a posterior near the Gaussian family, nearly all of
    /// f's variation — and the mean update becomes almost noise-free near the optimum; the
    /// covariance directions B are even in ε, so they lose the odd part of f (but average N_s/2
    /// independent pairs). Used with the residual form only: in the conjugate form f = ℓ keeps
    /// its curvature and the B estimates would get noisier. Default `true`.
    pub antithetic: bool,
    /// The estimator of the natural gradient. Default [`Estimator::Score`] (the paper's).
    pub estimator: Estimator,
    /// κ, the trust region of the diagonal family's mean step in standard deviations of q per
    /// coordinate ([X], a departure from §4, whose step is unbounded; see
    /// [`crate::inference::vi::MEAN_TRUST_REGION`] for the measurements). Default 0.5;
    /// `f64::INFINITY` turns it off. The full family takes none.
    pub trust_region: f64,
}

impl Default for QbviSettings {
    fn default() -> Self {
        QbviSettings {
            covariance: Covariance::Full,
            form: Form::Residual,
            n_samples: 100,
            step_size: None,
            window: 30,
            patience: 50,
            max_iter: 5000,
            init_variance: 0.01,
            init_precision: None,
            seed: 0,
            analytic_denominators: false,
            keep_best: true,
            antithetic: true,
            estimator: Estimator::Score,
            trust_region: MEAN_TRUST_REGION,
        }
    }
}

impl QbviSettings {
    /// The step size β actually used for dimension d on the full data (§11 rule when
    /// `step_size` is `None`).
    pub fn effective_step_size(&self, d: usize) -> f64 {
        match (self.step_size, self.covariance) {
            (Some(b), _) => b,
            (None, Covariance::Diagonal) => 0.05,
            (None, Covariance::Full) => f64::min(0.05, 0.005 * self.n_samples as f64 / d as f64),
        }
    }

    /// The step size β used for dimension d when each iteration sees a minibatch of `m` of the
    /// `n` rows (`m = n` is the full data): a given `step_size`, else
    /// min(β₀, 2·r/(N/M − 1)) with β₀ the §11 default and r = [`MINIBATCH_NOISE_RATIO`].
    ///
    /// [X], a departure from §11 (whose β = 0.05 assumes the full data). Why: near the optimum
    /// the mean iterate follows μ_{t+1} − μ* = (1 − β)(μ_t − μ*) + β·ξ_t/p with ξ the batch noise
    /// of ĝ_a, so its stationary variance is β·Var(ξ)/(2p²). Sampling M of N rows gives
    /// Var(ξ) ≈ N·(N/M − 1)·v̄ (v̄ the per-row gradient variance) and p ≈ N·h̄ (h̄ the per-row
    /// curvature), so the iterate's spread in units of q's own variance is
    /// r = β·(N/M − 1)/2·v̄/h̄ ≈ β·(N/M − 1)/2 where the information identity v̄ ≈ h̄ holds; each
    /// coordinate then loses about r/2 nats of ELBO. Capping r at 0.1 keeps the iterate within
    /// about 0.3 sd of the optimum. Measured on the digits BNN (N/M = 1347/64 = 21, d = 3760):
    /// β = 0.05 (r ≈ 0.5) plateaued at a full-data ELBO near 1000, about d·r/2 ≈ 940 nats below
    /// the ≈ 1950 that β = 0.01 (this rule) and β = 0.005 reach (test accuracy 0.92 against 0.97).
    ///
    /// A smaller r was measured in session 18 and not adopted (docs/bnn_methods.md, "Session 18";
    /// docs/minibatch.md): on labour (`--diagonal`, M = 5, 16, 32, 100, 200, 376, seeds 1–5)
    /// r = 0.03 converged 30 of 30 default fits and r = 0.05 29 of 30, against 25 of 30 at
    /// r = 0.1; but at r = 0.03 minibatch QBVI stopped at its 5000-iteration cap, not converged,
    /// in all 3 Boston (N/M = 14.2) and all 3 digits (N/M = 21) fits at seeds 1–3 (converged today
    /// after 1428–2898 and 2058–4242 iterations; the Boston fits needed 6076–9940 iterations to
    /// converge, at test RMSE and lppd within the seed-to-seed spread), and at r = 0.05 in 2 of 3
    /// Boston fits.
    pub fn effective_step_size_minibatch(&self, d: usize, n: usize, m: usize) -> f64 {
        let beta = self.effective_step_size(d);
        if self.step_size.is_some() || m >= n || m == 0 {
            return beta;
        }
        let excess = n as f64 / m as f64 - 1.0;
        f64::min(beta, 2.0 * MINIBATCH_NOISE_RATIO / excess)
    }
}

/// r, the largest stationary spread of the minibatch mean iterate in units of q's variance that
/// the default minibatch step size allows ([`QbviSettings::effective_step_size_minibatch`]; [X]).
pub const MINIBATCH_NOISE_RATIO: f64 = 0.1;

/// Errors of [`fit_qbvi`].
#[derive(Debug, thiserror::Error)]
pub enum QbviError {
    /// A setting or argument is out of range.
    #[error("invalid QBVI settings: {0}")]
    InvalidSettings(String),
    /// The log density at the initial point is an error or not finite.
    #[error("the log density is not finite at the initial point: {0}")]
    InitialPoint(String),
    /// Every one of the 10 consecutive batches had a non-finite log density (§6).
    #[error(
        "the log density is not finite under the variational distribution: {attempts} \
         consecutive batches of draws at iteration {iteration} contained a non-finite value \
         or an error (last: {last})"
    )]
    NonFiniteDensity {
        /// Iteration (0 = pilot batch).
        iteration: usize,
        /// Batches drawn.
        attempts: usize,
        /// Description of the last failure.
        last: String,
    },
    /// The model reported an unrecoverable error.
    #[error("the log density failed: {0}")]
    Density(DensityError),
}

impl From<ViError> for QbviError {
    fn from(e: ViError) -> Self {
        match e {
            ViError::NonFiniteDensity {
                iteration,
                attempts,
                last,
            } => QbviError::NonFiniteDensity {
                iteration,
                attempts,
                last,
            },
            // QBVI's own loop does not raise it; kept as the non-finite density it is
            e @ ViError::Diverged { iteration, .. } => QbviError::NonFiniteDensity {
                iteration,
                attempts: 1,
                last: e.to_string(),
            },
            ViError::Density(d) => QbviError::Density(d),
            ViError::InitialPoint(m) => QbviError::InitialPoint(m),
            ViError::InvalidSettings(m) | ViError::Unsuitable(m) => QbviError::InvalidSettings(m),
        }
    }
}

/// Fits q by QBVI (`specs/qbvi.md` §12; §4 for the diagonal family).
///
/// - `density`: L(ζ), the log joint on the unconstrained scale; only values are used (and
///   gradients with [`Estimator::Gradient`]). With
///   [`Form::Conjugate`] it is the log-likelihood ℓ(ζ) alone (the prior is in the settings).
/// - `init`: the initial mean μ_0, length `density.dim()`; L must be finite there.
/// - `progress`: called after every iteration; returning [`Control::Stop`] ends the fit with
///   the kept parameters and [`StopReason::Interrupted`].
///
/// Errors: [`QbviError::InvalidSettings`] (d = 0, `init` of the wrong length, N_s < 2, β outside
/// (0, 1), a non-positive initial variance, `max_iter` = 0); [`QbviError::InitialPoint`];
/// [`QbviError::NonFiniteDensity`] after 10 consecutive non-finite batches (§6);
/// [`QbviError::Density`] when the model reports an unrecoverable error.
pub fn fit_qbvi(
    density: &dyn LogDensity,
    init: &[f64],
    settings: &QbviSettings,
    progress: &mut dyn FnMut(Progress) -> Control,
) -> Result<QbviFit, QbviError> {
    fit_inner(density, None, init, settings, progress)
}

/// Diagonal QBVI (§4) on minibatches (specs/survey_vi.md §2): iteration t draws its N_s
/// samples against one batch B_t of M rows, L̂_{B_t} = π + (N/M)·Σ_{i∈B_t} ℓ_i (common random
/// numbers: the control variates and LB_t compare draws on the same data); the control-variate
/// coefficients come from the previous iteration's batch (§5.3, survey §2 table), shifted to
/// the level of this iteration's batch by the change of L̂_B(μ) − log q(μ) (the score estimator
/// only; [X], see `inference::vi::BatchAnchor` for why and what it measured). Batches from
/// [`EpochBatches`] on `settings.seed`.
///
/// Exit rule: LB_t (kept in `elbo_trace`) carries the batch noise, so the patience rule of §7.2
/// runs on the full-data ELBO from 10 fixed draws at the end of every epoch, counted in epochs
/// (survey_vi.md §1; `inference::minibatch`). The default step size is
/// [`QbviSettings::effective_step_size_minibatch`] (lowered with N/M, [X]); the full-data ELBO of
/// the initial q is recorded as [`GaussianFit::start_elbo`]. The last iterate is returned (not the kept one:
/// the kept iterate maximises the 10-draw epoch ELBO, whose maximiser over μ is offset from the
/// ELBO's by O(σ/√10); measured on T2 of survey_vi.md, M = 5 of 20: μ₁ off by 0.069 with the
/// kept iterate, by 0.023 with the last). `window`, `patience` and `keep_best` are not used;
/// `max_iter` bounds the iterations.
///
/// Errors: as [`fit_qbvi`], plus [`QbviError::InvalidSettings`] for a full covariance (only the
/// diagonal family is minibatched), the conjugate form, or a batch size outside 1..=N.
pub fn fit_qbvi_minibatch(
    density: &dyn MinibatchDensity,
    init: &[f64],
    settings: &QbviSettings,
    minibatch: &MinibatchSettings,
    progress: &mut dyn FnMut(Progress) -> Control,
) -> Result<QbviFit, QbviError> {
    if settings.covariance != Covariance::Diagonal {
        return Err(QbviError::InvalidSettings(
            "minibatch QBVI fits the diagonal family only (bayesc's minibatch path is \
             implemented for it alone): drop --full, or drop --batch-size for the full covariance"
                .into(),
        ));
    }
    if settings.form != Form::Residual {
        return Err(QbviError::InvalidSettings(
            "minibatch QBVI needs the residual form".into(),
        ));
    }
    fit_inner(
        density,
        Some((density, minibatch)),
        init,
        settings,
        progress,
    )
}

type Minibatch<'a> = Option<(&'a dyn MinibatchDensity, &'a MinibatchSettings)>;

fn fit_inner(
    density: &dyn LogDensity,
    minibatch: Minibatch<'_>,
    init: &[f64],
    settings: &QbviSettings,
    progress: &mut dyn FnMut(Progress) -> Control,
) -> Result<QbviFit, QbviError> {
    let d = density.dim();
    validate(d, init, settings)?;
    match density.log_density(init) {
        Ok(v) if v.is_finite() => {}
        Ok(v) => return Err(QbviError::InitialPoint(format!("log density is {v}"))),
        Err(e) => return Err(QbviError::InitialPoint(e.to_string())),
    }
    let prior = match &settings.form {
        Form::Residual => None,
        Form::Conjugate {
            prior_mean,
            prior_precision,
        } => Some(
            ConjugatePrior::new(d, prior_mean, prior_precision)
                .map_err(QbviError::InvalidSettings)?,
        ),
    };
    let prior = prior.as_ref();
    match settings.covariance {
        Covariance::Full => {
            let q = match &settings.init_precision {
                Some(p) => FullGaussian::from_precision(init, p).ok_or_else(|| {
                    QbviError::InvalidSettings("init_precision is not positive definite".into())
                })?,
                None => FullGaussian::isotropic(init, settings.init_variance),
            };
            let (q, run, _) = run(density, None, q, prior, settings, progress)?;
            Ok(GaussianFit::full(&q, run))
        }
        Covariance::Diagonal => {
            let q = match &settings.init_precision {
                Some(p) => DiagonalGaussian::from_precision(init, p).ok_or_else(|| {
                    QbviError::InvalidSettings("init_precision has a non-positive diagonal".into())
                })?,
                None => DiagonalGaussian::isotropic(init, settings.init_variance),
            };
            let mb =
                minibatch.map(|(m, ms)| (m, ms, diagonal_sd as fn(&DiagonalGaussian) -> Vec<f64>));
            let (q, run, tail) = run(density, mb, q, prior, settings, progress)?;
            // minibatch: the average of the last epochs' iterates (EpochExit::tail_average)
            let (mean, precision) = match tail {
                Some((m, sd)) => (m, sd.iter().map(|s| 1.0 / (s * s)).collect()),
                None => (q.mean().to_vec(), q.precision().to_vec()),
            };
            Ok(GaussianFit::diagonal(mean, precision, run))
        }
    }
}

fn validate(d: usize, init: &[f64], s: &QbviSettings) -> Result<(), QbviError> {
    let bad = |m: String| Err(QbviError::InvalidSettings(m));
    if d == 0 {
        return bad("the model has no parameters (d = 0)".into());
    }
    if init.len() != d {
        return bad(format!(
            "the initial point has length {}, but the model has d = {d} parameters",
            init.len()
        ));
    }
    if init.iter().any(|x| !x.is_finite()) {
        return Err(QbviError::InitialPoint(
            "the initial point has a non-finite coordinate".into(),
        ));
    }
    if s.n_samples < 2 {
        return bad(format!(
            "n_samples is {}, but at least 2 draws per iteration are needed",
            s.n_samples
        ));
    }
    let beta = s.effective_step_size(d);
    if !(beta > 0.0 && beta < 1.0) {
        return bad(format!("step size is {beta}, but must lie in (0, 1)"));
    }
    if let Some(p) = &s.init_precision
        && p.len() != d * d
    {
        return bad(format!(
            "init_precision has {} entries, but must be d×d = {}",
            p.len(),
            d * d
        ));
    }
    if !(s.init_variance > 0.0
        && s.init_variance.is_finite()
        && (1.0 / s.init_variance).is_finite())
    {
        return bad(format!(
            "init_variance is {}, but must be positive and finite",
            s.init_variance
        ));
    }
    if s.max_iter == 0 {
        return bad("max_iter is 0; at least one iteration is needed".into());
    }
    if s.trust_region.is_nan() || s.trust_region <= 0.0 {
        return bad(format!(
            "trust_region is {}, but must be positive (infinity turns it off)",
            s.trust_region
        ));
    }
    Ok(())
}

/// The black-box integrand of the gradient estimate: ℓ (conjugate form) or L − log q
/// (residual form), §10.
fn integrand(batch: &Batch, conjugate: bool) -> &[f64] {
    if conjugate { &batch.value } else { &batch.f }
}

/// f̂ = L(μ) − log q(μ), the residual-form integrand at the mean of q, on `density` (the
/// iteration's batch); `None` where L fails there. The anchor of [`BatchAnchor`].
fn value_at_mean<F: Family>(q: &F, density: &dyn LogDensity) -> Option<f64> {
    let d = q.dim();
    let (mut zeta, mut log_q, mut u) = (vec![0.0; d], [0.0], vec![0.0; q.n_directions()]);
    q.prepare(&vec![0.0; d], &mut zeta, &mut log_q, &mut u);
    density.log_density(q.mean()).ok().map(|v| v - log_q[0])
}

/// σ of the diagonal family.
fn diagonal_sd(q: &DiagonalGaussian) -> Vec<f64> {
    q.precision().iter().map(|p| 1.0 / p.sqrt()).collect()
}

/// Minibatch state of a run: the density, σ of the family, the schedule and the exit rule.
type Batching<'a, F> = Option<(
    &'a dyn MinibatchDensity,
    fn(&F) -> Vec<f64>,
    EpochBatches,
    EpochElbo,
    EpochExit,
)>;

/// The data of one iteration: `None` for the full density, or the next minibatch's view, and
/// whether that batch ends its epoch.
#[allow(clippy::type_complexity)]
fn next_view<'a, F>(
    batches: &mut Batching<'a, F>,
) -> Result<(Option<Box<dyn LogDensity + 'a>>, bool), QbviError> {
    match batches {
        Some((m, _, b, ..)) => {
            let m: &'a dyn MinibatchDensity = *m;
            let (rows, last) = b.next_batch();
            Ok((Some(m.batch(rows).map_err(QbviError::Density)?), last))
        }
        None => Ok((None, false)),
    }
}

/// The loop of §12 for any family; returns the kept (or last) q and the record. With
/// `minibatch`, each iteration sees one batch and the exit rule runs once per epoch on the
/// full-data ELBO (see [`fit_qbvi_minibatch`]), and the third value is the average (μ̄, σ̄) of
/// the last epochs' iterates ([`EpochExit::tail_average`]), the q to return.
#[allow(clippy::type_complexity)]
fn run<F: Family>(
    density: &dyn LogDensity,
    minibatch: Option<(
        &dyn MinibatchDensity,
        &MinibatchSettings,
        fn(&F) -> Vec<f64>,
    )>,
    mut q: F,
    prior: Option<&ConjugatePrior>,
    settings: &QbviSettings,
    progress: &mut dyn FnMut(Progress) -> Control,
) -> Result<(F, RunRecord, Option<crate::inference::minibatch::MeanSd>), QbviError> {
    let d = q.dim();
    let n = settings.n_samples;
    let k = q.n_directions();
    let beta = match minibatch {
        Some((m, ms, _)) => settings.effective_step_size_minibatch(d, m.n_obs(), ms.batch_size),
        None => settings.effective_step_size(d),
    };
    let gradient = settings.estimator == Estimator::Gradient;
    let mut batch = Batch::new(n, d, k);
    if gradient {
        batch = batch.with_gradients();
    }
    batch.antithetic = settings.antithetic && n.is_multiple_of(2) && prior.is_none();
    let mut cv = ControlVariates::new(k);
    let mut g = vec![0.0; k];
    let mut variances = vec![0.0; k];
    let analytic = settings.analytic_denominators;
    // Minibatch score estimate: the lagged coefficients follow the batch's level (BatchAnchor).
    let anchored = minibatch.is_some() && !gradient;
    let mut anchor = BatchAnchor::default();

    let mut batches: Batching<'_, F> = match minibatch {
        Some((m, ms, sd)) => Some((
            m,
            sd,
            EpochBatches::new(m.n_obs(), ms.batch_size, settings.seed)
                .map_err(QbviError::InvalidSettings)?,
            EpochElbo::new(d, ms.elbo_draws, settings.seed),
            EpochExit::new(ms),
        )),
        None => None,
    };
    // Pilot batch at t = 0: only its control-variate coefficients are used (§5.5). The
    // gradient estimator has no control variates and draws no pilot batch.
    if !gradient {
        let mut pilot_rng = rng::stream(settings.seed, 0);
        let (view, _) = next_view(&mut batches)?;
        batch.draw(&q, view.as_deref().unwrap_or(density), &mut pilot_rng, 0)?;
        if analytic {
            q.direction_variances(&mut variances);
        }
        if anchored {
            anchor.rebase(
                &mut cv,
                value_at_mean(&q, view.as_deref().unwrap_or(density)),
            );
        }
        cv.estimate(
            &batch.u,
            integrand(&batch, prior.is_some()),
            analytic.then_some(&variances[..]),
        );
    }

    // Minibatch: the full-data ELBO of the initial q, from the epoch statistic's draws, so
    // that the report can tell a fit that ended below its start (GaussianFit::worsened).
    let start_elbo = match &batches {
        Some((_, sd_of, _, epoch_elbo, _)) => Some(
            epoch_elbo
                .value(density, q.mean(), &sd_of(&q))
                .map_err(QbviError::Density)?,
        ),
        None => None,
    };
    let mut rng = rng::stream(settings.seed, 1);
    let mut tracker = Tracker::new(
        settings.window,
        settings.patience,
        settings.max_iter,
        settings.keep_best,
    );
    tracker.record.start_elbo = start_elbo;
    let mut noise = NoiseRecord::default();
    let mut limits = TrustRecord::default();
    let mut old_mean = vec![0.0; d];
    for t in 1..=settings.max_iter {
        let (view, epoch_end) = next_view(&mut batches)?;
        batch.draw(&q, view.as_deref().unwrap_or(density), &mut rng, t)?;
        if gradient {
            stein_directions(&batch.u, &batch.grad, d, &mut g);
            if prior.is_none() {
                // Residual form: E[B·f] has −∇² log q = P subtracted (the conjugate form adds
                // P₀ − P below instead).
                for (gk, pk) in g[d..].iter_mut().zip(q.precision_packed()) {
                    *gk -= pk;
                }
            }
        } else {
            // Gradient with the coefficients of the previous batch, then new coefficients (§5.3).
            if anchored {
                anchor.rebase(
                    &mut cv,
                    value_at_mean(&q, view.as_deref().unwrap_or(density)),
                );
            }
            let h = integrand(&batch, prior.is_some());
            noise.observe(t, h, beta);
            cv.gradient(&batch.u, h, &mut g);
            if analytic {
                // Exact denominators at the parameters that drew this batch (§5.4).
                q.direction_variances(&mut variances);
            }
            cv.estimate(&batch.u, h, analytic.then_some(&variances[..]));
        }
        // LB_t = mean of L − log q (§7.1); in the residual form that is exactly f (§12).
        let lb = match prior {
            None => batch.f.iter().sum::<f64>() / n as f64,
            Some(p) => {
                let d = q.dim();
                (0..n)
                    .map(|s| batch.f[s] + p.log_density(&batch.zeta[s * d..(s + 1) * d]))
                    .sum::<f64>()
                    / n as f64
            }
        };
        let stop = match &mut batches {
            None => {
                tracker.watch(t, q.mean());
                tracker.observe(t, lb, &q, progress)
            }
            Some((_, sd_of, _, epoch_elbo, epoch_exit)) => {
                // Minibatch: LB_t is a batch estimate; the exit rule sees the full-data ELBO
                // once per epoch, and the average of the last epochs' iterates is returned.
                tracker.record.elbo_trace.push(lb);
                let (mut smoothed, mut epoch_stop) = (None, false);
                let sd = sd_of(&q);
                epoch_exit.iterate(q.mean(), &sd);
                if epoch_end {
                    let e = epoch_elbo
                        .value(density, q.mean(), &sd)
                        .map_err(QbviError::Density)?;
                    let (sm, improved, stop) = epoch_exit.observe(e, t);
                    if improved {
                        tracker.record.best_smoothed_elbo = sm;
                    }
                    smoothed = Some(sm);
                    epoch_stop = stop;
                }
                let control = progress(Progress {
                    iteration: t,
                    elbo: lb,
                    smoothed_elbo: smoothed,
                });
                let reason = if control == Control::Stop {
                    Some(StopReason::Interrupted)
                } else if epoch_stop {
                    Some(StopReason::ExitRule)
                } else if t >= settings.max_iter {
                    Some(StopReason::MaxIterations)
                } else {
                    None
                };
                if let Some(r) = reason {
                    tracker.record.stop = r;
                }
                reason
            }
        };
        if stop.is_some() {
            break;
        }
        if let Some(p) = prior {
            q.add_conjugate_prior(p, &mut g);
        }
        old_mean.copy_from_slice(q.mean());
        let stepped = if gradient {
            q.step_guarded(&g, beta, MAX_HALVINGS)
        } else {
            q.step(&g, beta, MAX_HALVINGS)
        };
        if !stepped {
            tracker.record.skipped_steps += 1;
        } else {
            limits.observe(q.limit_mean_step(&old_mean, settings.trust_region));
        }
    }
    let mut tail = None;
    if let Some((.., epoch_exit)) = &batches {
        tracker.record.epoch_elbo = epoch_exit.trace().to_vec();
        tracker.record.epoch_checks = epoch_exit.checks().to_vec();
        tracker.record.epoch_means = epoch_exit.recent_means();
        tail = epoch_exit.tail_average();
    }
    if let Some(note) = noise.note(n) {
        tracker.record.notes.push(note);
    }
    if let Some(note) = limits.note(settings.trust_region) {
        tracker.record.notes.push(note);
    }
    let (q, record) = tracker.finish(q);
    Ok((q, record, tail))
}

/// Watches the noise of the score-function estimate (`specs/qbvi.md` §5.1, §8.1): with f the
/// integrand over the N_s draws of an iteration, the precision direction has variance
/// ≈ 2p²·Var(f)/N_s per coordinate, and the second-order retraction p + βg + β²g²/(2p) then
/// adds β²·Var(g)/(2p) ≈ p·β·Var(f)/N_s · β to p on average against a pull of about β·p back:
/// once r = β·Var(f)/N_s exceeds 1 the noise alone grows the precisions without bound and q
/// collapses to a point (measured: the diabetes BNN at d = 602 from a random start, M = 64, has
/// sd(f) = 1.4·10³ and r = 988 at the first iteration, and every sd ended near 10⁻¹⁵). That
/// collapse was mostly the batch offset in the lagged control variates: since they follow the
/// batch (`inference::vi::BatchAnchor`) the same fit has r > 1 in its first 108 iterations
/// but recovers (converged, test RMSE 0.723), so the note says q *can* collapse.
#[derive(Default)]
struct NoiseRecord {
    /// Iterations with r > 1.
    count: usize,
    /// The first such iteration.
    first: usize,
    /// The largest r and the sd(f) at it.
    worst: (f64, f64),
}

impl NoiseRecord {
    fn observe(&mut self, t: usize, f: &[f64], beta: f64) {
        let n = f.len() as f64;
        let mean = f.iter().sum::<f64>() / n;
        let var = f.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0);
        let r = beta * var / n;
        if r > 1.0 {
            if self.count == 0 {
                self.first = t;
            }
            self.count += 1;
        }
        if r > self.worst.0 {
            self.worst = (r, var.sqrt());
        }
    }

    /// The note for the fit's report when r exceeded 1, naming the cause and the remedies.
    /// More draws divide r by their factor, so `--mc-samples` is advised only when ten times
    /// the draws would bring the worst r below 1 (a tester followed that advice with 1000 draws
    /// where r was about 10⁶ and got the same failure).
    fn note(&self, n_samples: usize) -> Option<String> {
        (self.count > 0).then(|| {
            let more = if self.worst.0 <= 10.0 {
                format!(
                    " raise --mc-samples (to {} or more),",
                    (n_samples as f64 * self.worst.0).ceil() as usize
                )
            } else {
                String::new()
            };
            format!(
                "the score-function gradient was too noisy for the step size in {} iterations \
                 (first at iteration {}): the sd of log p - log q over the N_s = {n_samples} \
                 draws reached {:.3e}, so step size x variance / N_s = {:.2e} > 1, where the \
                 precision update is driven by noise and q can collapse; start nearer the \
                 posterior (the start at the mode where the density has one),{more} or estimate \
                 the same natural gradient from gradients (--estimator gradient, the default \
                 for d > 50)",
                self.count, self.first, self.worst.1, self.worst.0
            )
        })
    }
}
