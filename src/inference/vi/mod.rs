//! The shared core of the Gaussian variational methods: QBVI (`specs/qbvi.md`), QNVB's PSIS
//! check and the survey's methods (`specs/survey_vi.md`). It holds
//! - the Gaussian families on ζ — mean-field ([`DiagonalGaussian`]) and full-covariance in
//!   precision form ([`FullGaussian`]) — with sampling, log q, score directions and the
//!   second-order retraction of the precision (`qbvi.md` §3, §4, §8.1);
//! - the lagged per-component control variates (`qbvi.md` §5.3, [`ControlVariates`]);
//! - step-size schedules and Adam ([`schedule`]);
//! - the ELBO trace and the common exit rule with the kept iterate ([`Tracker`], `qbvi.md` §7.2,
//!   `survey_vi.md` §1);
//! - the common fit result [`GaussianFit`] and settings [`ViSettings`], which the post-fit
//!   checks of `fit::vi_checks` (PSIS k̂, collapse, drift) consume.
//!
//! The methods themselves live one per file beside it (`ivon`, `bbb`, ...), see
//! [`crate::inference::vi`]'s submodules.

mod batch;
mod diagonal;
mod estimator;
mod exit;
mod family;
mod full;
mod gaussian;
pub mod manifold;
mod obs;
mod prior;
mod reparam;
pub mod schedule;

pub mod bbb;
pub mod bbvi;
pub mod emgvb;
pub mod ivon;
pub mod mcdropout;
pub mod mgvb;
pub mod ngbbvi;
pub mod ngvi;
pub mod vadam;
pub mod vlaplace;
pub mod vogn;
pub mod von;

pub(crate) use batch::Batch;
pub(crate) use diagonal::DiagonalGaussian;
pub(crate) use estimator::{BatchAnchor, ControlVariates, stein_directions};
pub(crate) use exit::{RunRecord, Tracker, WindowMeanSd, WindowSums};
pub use family::MEAN_TRUST_REGION;
pub(crate) use family::{Family, HALF_LN_2PI, TrustRecord};
pub(crate) use full::{FullGaussian, cholesky_lower};
pub(crate) use gaussian::Factor;
pub(crate) use prior::ConjugatePrior;
pub(crate) use reparam::PROBE_DRAWS;

pub use exit::{Control, DRIFT_SDS, MeanDrift, Progress, StopReason};
pub use gaussian::GaussianFit;

/// Dimension above which §11 recommends the diagonal family.
pub const FULL_COVARIANCE_MAX_DIM: usize = 50;

/// Which Gaussian family q is fitted on ζ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Covariance {
    /// q = N(μ, Σ) with a dense d×d covariance (`specs/qbvi.md` §3).
    Full,
    /// q = ∏ N(μ_i, s_i), mean-field (`specs/qbvi.md` §4).
    Diagonal,
}

impl Covariance {
    /// The §11 rule: full covariance if d ≤ 50, else diagonal.
    pub fn for_dimension(d: usize) -> Self {
        if d <= FULL_COVARIANCE_MAX_DIM {
            Covariance::Full
        } else {
            Covariance::Diagonal
        }
    }
}

/// Settings every survey method shares: the exit rule (`survey_vi.md` §1: W = 30, P_max = 50,
/// T_max), the seed, and whether to return the kept iterate. Each method's own settings embed
/// one of these as `common`.
#[derive(Clone, Debug, PartialEq)]
pub struct ViSettings {
    /// W, the smoothing window: the smoothed ELBO averages W + 1 values. Default 30.
    pub window: usize,
    /// P_max, patience of the exit rule (iterations without a new best smoothed ELBO).
    /// Default 50.
    pub patience: usize,
    /// T_max, the maximum number of iterations. Default 5000.
    pub max_iter: usize,
    /// T_min: the exit rule does not stop a run before this many iterations. Default 0; the
    /// stochastic-gradient mean-field methods set more ([X]: on labour their smoothed ELBO
    /// flattens while the mean still drifts along the correlated directions, and the exit rule
    /// fired after ~100 iterations with means 0.25 posterior sd from NUTS; the papers train for
    /// a fixed number of epochs, `survey_vi.md` §1).
    pub min_iter: usize,
    /// Seed of the random streams (`inference::rng`). Default 0.
    pub seed: u64,
    /// Return the iterate kept by the exit rule (`true`, default) or the last one.
    pub keep_best: bool,
}

impl Default for ViSettings {
    fn default() -> Self {
        ViSettings {
            window: 30,
            patience: 50,
            max_iter: 5000,
            min_iter: 0,
            seed: 0,
            keep_best: true,
        }
    }
}

impl ViSettings {
    /// A [`Tracker`] for these settings.
    pub(crate) fn tracker<S: Clone>(&self) -> Tracker<S> {
        let mut t = Tracker::new(self.window, self.patience, self.max_iter, self.keep_best);
        t.min_iter = self.min_iter;
        t
    }

    /// Checks the shared settings and the initial point against d; the message names the
    /// problem.
    pub(crate) fn validate(&self, d: usize, init: &[f64]) -> Result<(), ViError> {
        if d == 0 {
            return Err(ViError::InvalidSettings(
                "the model has no parameters (d = 0)".into(),
            ));
        }
        if init.len() != d {
            return Err(ViError::InvalidSettings(format!(
                "the initial point has length {}, but the model has d = {d} parameters",
                init.len()
            )));
        }
        if init.iter().any(|x| !x.is_finite()) {
            return Err(ViError::InitialPoint(
                "the initial point has a non-finite coordinate".into(),
            ));
        }
        if self.max_iter == 0 {
            return Err(ViError::InvalidSettings(
                "max_iter is 0; at least one iteration is needed".into(),
            ));
        }
        Ok(())
    }
}

/// How far, in initial sds of q per coordinate, q's mean must have moved from its start for a
/// non-finite log density at its draws to count as divergence ([`ViError::Diverged`]) rather
/// than q reaching the edge of the model's support ([X]: 10⁴; a fit that converges moves a few
/// tens at most — on labour from the random start with Σ₀ = 0.01·I the posterior is about 40 away,
/// while MGVB's diverged mean had moved 10²⁸⁵).
pub const DIVERGED_SDS: f64 = 1e4;

/// Errors of the survey methods' fits.
#[derive(Debug, thiserror::Error)]
pub enum ViError {
    /// A setting or argument is out of range.
    #[error("invalid settings: {0}")]
    InvalidSettings(String),
    /// The log density at the initial point is an error or not finite.
    #[error("the log density is not finite at the initial point: {0}")]
    InitialPoint(String),
    /// Repeated draws of q all gave a non-finite log density or gradient.
    #[error(
        "the log density is not finite under the variational distribution: {attempts} \
         consecutive draws at iteration {iteration} failed (last: {last})"
    )]
    NonFiniteDensity {
        /// Iteration.
        iteration: usize,
        /// Draws tried.
        attempts: usize,
        /// Description of the last failure.
        last: String,
    },
    /// The steps diverged: q's mean ran far from its start (by `moved` of q's initial sds, at
    /// least [`DIVERGED_SDS`]) until the log density was not finite at its draws (a
    /// [`ViError::NonFiniteDensity`] that the loop recognised as divergence). `start_sd` is the
    /// sd of log p − log q over the first batch of draws (the noise of the score-function
    /// gradient at the start), NaN when the method did not measure it.
    #[error(
        "the steps diverged: by iteration {iteration} the mean of q had moved {moved:.1e} of its \
         initial sds from the start, until the log density was not finite at q's draws (last: \
         {last})"
    )]
    Diverged {
        /// Iteration of the failure.
        iteration: usize,
        /// max_i |μ_i − μ0_i| / sd0_i at the failure.
        moved: f64,
        /// sd of log p − log q over the first batch of draws.
        start_sd: f64,
        /// Description of the last failure.
        last: String,
    },
    /// The model reported an unrecoverable error.
    #[error("the log density failed: {0}")]
    Density(crate::inference::DensityError),
    /// The model breaks an assumption of the method (the message says what to use instead).
    #[error("{0}")]
    Unsuitable(String),
}
