//! Running MCMC chains in parallel: settings, initialisation, warmup and sampling loops, and
//! the per-chain output (unconstrained draws, sampler statistics, adapted tuning, timing).
//!
//! Chain c draws all its randomness from `rng::stream(seed, c + 1)`, so results are identical
//! for any number of threads (STYLE.md habit 10). Initialisation follows `specs/nuts.md` §3 and
//! `specs/mh.md` §6.
//!
//! ```
//! use bayesc::inference::mcmc::{McmcSettings, sample};
//! use bayesc::inference::{DensityError, LogDensity};
//! use std::sync::atomic::AtomicBool;
//!
//! /// A standard normal in two dimensions.
//! struct Normal2;
//! impl LogDensity for Normal2 {
//!     fn dim(&self) -> usize { 2 }
//!     fn log_density(&self, x: &[f64]) -> Result<f64, DensityError> {
//!         Ok(-0.5 * (x[0] * x[0] + x[1] * x[1]))
//!     }
//!     fn log_density_grad(&self, x: &[f64], g: &mut [f64]) -> Result<f64, DensityError> {
//!         g[0] = -x[0];
//!         g[1] = -x[1];
//!         self.log_density(x)
//!     }
//! }
//!
//! let settings = McmcSettings { chains: 2, warmup: 200, samples: 100, seed: 1, ..Default::default() };
//! let out = sample(&Normal2, &settings, &[], &|_progress| {}, &AtomicBool::new(false)).unwrap();
//! assert_eq!(out.chains[0].draws.len(), 100 * 2); // kept draws × d, unconstrained
//! assert_eq!(out.chains[1].stats.treedepth.len(), 100);
//! ```

use crate::inference::chain::run_chain;
use crate::inference::density::{DensityError, LogDensity};
use crate::inference::hmc::{INITIAL_STEP_SIZE, Metric, TransitionStats};
use crate::inference::mh::MhOptions;
use rayon::prelude::*;
use std::sync::atomic::AtomicBool;

/// Initial-value attempts per chain before giving up. `specs/nuts.md` §3, Stan's
/// `initialize.hpp`.
pub const MAX_INIT_ATTEMPTS: usize = crate::inference::init::MAX_INIT_ATTEMPTS;
/// Default number of chains. `specs/nuts.md` §5.1.
pub const DEFAULT_CHAINS: usize = 4;
/// Default warmup iterations per chain (HMC). `specs/nuts.md` §5.1.
pub const DEFAULT_WARMUP: usize = 1000;
/// Default post-warmup iterations per chain (HMC). `specs/nuts.md` §5.1.
pub const DEFAULT_SAMPLES: usize = 1000;
/// Default radius R of the uniform(−R, R) initial values. `specs/nuts.md` §3, Stan default.
pub const DEFAULT_INIT_RADIUS: f64 = crate::inference::init::INIT_RADIUS;

/// The MCMC algorithm.
#[derive(Clone, Debug, PartialEq)]
pub enum Method {
    /// Multinomial NUTS with windowed adaptation (`specs/nuts.md` §2–§5).
    Nuts,
    /// Static HMC (`specs/nuts.md` §7) with `n_leapfrog` steps per transition, or `None` for
    /// L = max(1, ⌊2π/ε̄⌋) recomputed from the adapted step size.
    StaticHmc {
        /// Fixed number of leapfrog steps (≥ 1), or `None` for integration time 2π.
        n_leapfrog: Option<usize>,
    },
    /// Adaptive random-walk Metropolis–Hastings (`specs/mh.md`); options in
    /// [`McmcSettings::mh`].
    Mh,
}

/// Settings of an MCMC run. [`Default`] gives the Stan defaults of `specs/nuts.md` §5.1 with
/// NUTS; [`McmcSettings::mh_defaults`] the defaults of `specs/mh.md` §6.
#[derive(Clone, Debug, PartialEq)]
pub struct McmcSettings {
    /// The algorithm (default NUTS).
    pub method: Method,
    /// Number of chains (default 4).
    pub chains: usize,
    /// Warmup iterations per chain (default 1000). Warmup draws are never part of summaries.
    pub warmup: usize,
    /// Post-warmup iterations per chain (default 1000), before thinning.
    pub samples: usize,
    /// Keep every `thin`-th iteration (default 1, ≥ 1); iteration i is kept if i mod thin = 0.
    pub thin: usize,
    /// User seed; chain c uses `rng::stream(seed, c + 1)` (default 0).
    pub seed: u64,
    /// HMC: target mean accept_stat δ of dual averaging, in (0, 1) (default 0.8).
    pub adapt_delta: f64,
    /// NUTS: maximum tree depth D_max ≥ 1 (default 10): at most 2^D_max − 1 leapfrog steps per
    /// accepted doubling sequence.
    pub max_depth: usize,
    /// HMC: which inverse metric warmup adapts (default [`MetricChoice::Auto`]).
    pub metric: MetricChoice,
    /// Radius R ≥ 0 of the uniform(−R, R) random initial values (default 2; 0 = all zeros).
    pub init_radius: f64,
    /// HMC: step-size jitter j ∈ [0, 1] (default 0): ε = ε̄·(1 + j·(2u − 1)).
    pub jitter: f64,
    /// HMC: initial nominal step size ε̄ > 0 before the heuristic (default 1).
    pub step_size: f64,
    /// HMC: initial inverse metric (`specs/nuts.md` §3), `None` for the unit metric (default).
    /// Length d (positive variances) for the diagonal metric, d² (row-major, symmetric
    /// positive-definite) when the metric is dense ([`McmcSettings::dense`]). Warmup adapts it
    /// further.
    pub inv_metric: Option<Vec<f64>>,
    /// Also return the warmup draws and statistics (default false).
    pub save_warmup: bool,
    /// Report progress every this many iterations per chain (CmdStan's `refresh`; 0: never
    /// during the run, only when a chain ends); `None` (default): every 1% of the iterations.
    pub refresh: Option<usize>,
    /// The gradient's work as the number of data values the log density reads per evaluation,
    /// for the [`MetricChoice::Auto`] cost model; `None` (the default) when unknown. Set by the
    /// fit pipeline from the model (`graph::Model::gradient_work`).
    pub gradient_work: Option<usize>,
    /// Options of Metropolis–Hastings, used when `method` is [`Method::Mh`].
    pub mh: MhOptions,
}

/// Which inverse metric (mass matrix) HMC/NUTS warmup adapts (`specs/nuts.md` §3, §6).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MetricChoice {
    /// Dense when it pays, diagonal otherwise (the default; [`McmcSettings::dense`]): always
    /// when d ≤ [`AUTO_DENSE_MAX_DIM`], and up to d = [`AUTO_DENSE_COST_MAX_DIM`] when its
    /// O(d²) work per leapfrog step is small next to the gradient's
    /// ([`McmcSettings::gradient_work`], [`AUTO_DENSE_COST_SHARE`]). A departure from Stan's
    /// default `diag_e`: a dense metric removes the posterior correlations that make the
    /// diagonal metric take long trajectories. Measured with `cargo bench --bench mcmc` (4 × 1000
    /// × 1000, 1 thread, same seed, busy machine): min ESS_bulk per CPU-second rose from 143 to
    /// 916 on labour (d = 8, unstandardised predictors, correlations up to −0.9), from 309 to
    /// 486 on GARCH (d = 4) and from 7775 to 10590 on eight schools (d = 10); on the posteriordb
    /// case diamonds (d = 26, N = 5000 rows of 24 correlated predictors) the diagonal metric
    /// saturates the tree depth (1213 s wall), the dense one takes 27 CPU-s.
    #[default]
    Auto,
    /// Diagonal metric, Stan's `diag_e` (windowed variance estimates, §6).
    Diag,
    /// Dense metric, Stan's `dense_e` (windowed covariance estimates, §6).
    Dense,
    /// The unit metric, Stan's `unit_e`: the identity (or `inv_metric` as given), never
    /// adapted; warmup tunes only the step size.
    Unit,
}

/// Largest d for which [`MetricChoice::Auto`] always adapts a dense metric: the last slow window
/// of the default warmup (500 draws per chain) estimates d(d+1)/2 = 136 covariances at d = 16
/// with several draws per entry.
pub const AUTO_DENSE_MAX_DIM: usize = 16;

/// Largest d for which [`MetricChoice::Auto`] may adapt a dense metric when it is cheap: with
/// n = 500 draws in the last slow window the sample covariance's eigenvalues are off by factors
/// up to about (1 ± √(d/n))², a condition number of at most ≈ 3.7 at d = 50, far less than the
/// correlations a dense metric removes; beyond that the diagonal estimate is the safer default.
pub const AUTO_DENSE_COST_MAX_DIM: usize = 50;

/// Above [`AUTO_DENSE_MAX_DIM`], [`MetricChoice::Auto`] adapts a dense metric when its work per
/// leapfrog step, a d × d product (2d² flops), is at most this share of the gradient's, taken as
/// 4 flops (forward and reverse) per data value read ([`McmcSettings::gradient_work`]): then even
/// a trajectory shortened by only 10% pays for it.
pub const AUTO_DENSE_COST_SHARE: f64 = 0.1;

impl McmcSettings {
    /// Whether HMC/NUTS uses a dense metric for a model of dimension d.
    pub fn dense(&self, d: usize) -> bool {
        self.metric_reason(d).0
    }

    /// Whether HMC/NUTS uses a dense metric for a model of dimension d, and for
    /// [`MetricChoice::Auto`] why (for the settings line), e.g. "auto: d ≤ 16" or "auto: d = 26,
    /// d² = 676 per step vs 125000 data values per gradient".
    pub fn metric_reason(&self, d: usize) -> (bool, String) {
        match self.metric {
            MetricChoice::Diag | MetricChoice::Unit => (false, String::new()),
            MetricChoice::Dense => (true, String::new()),
            MetricChoice::Auto if d <= AUTO_DENSE_MAX_DIM => {
                (true, format!("auto: d ≤ {AUTO_DENSE_MAX_DIM}"))
            }
            MetricChoice::Auto if d > AUTO_DENSE_COST_MAX_DIM => {
                (false, format!("auto: d > {AUTO_DENSE_COST_MAX_DIM}"))
            }
            MetricChoice::Auto => match self.gradient_work {
                Some(w) => {
                    let dense = 2.0 * (d * d) as f64 <= AUTO_DENSE_COST_SHARE * 4.0 * w as f64;
                    let verdict = if dense { "cheap" } else { "not cheap" };
                    (
                        dense,
                        format!(
                            "auto: d = {d}, d² = {} per step, {verdict} next to a gradient over {w} \
                             data values",
                            d * d
                        ),
                    )
                }
                None => (
                    false,
                    format!("auto: d > {AUTO_DENSE_MAX_DIM}, gradient cost unknown"),
                ),
            },
        }
    }
}

impl Default for McmcSettings {
    fn default() -> Self {
        McmcSettings {
            method: Method::Nuts,
            chains: DEFAULT_CHAINS,
            warmup: DEFAULT_WARMUP,
            samples: DEFAULT_SAMPLES,
            thin: 1,
            seed: 0,
            adapt_delta: crate::inference::adapt::dual_averaging::TARGET_ACCEPT,
            max_depth: crate::inference::hmc::nuts::MAX_DEPTH,
            metric: MetricChoice::Auto,
            init_radius: DEFAULT_INIT_RADIUS,
            jitter: 0.0,
            step_size: INITIAL_STEP_SIZE,
            inv_metric: None,
            save_warmup: false,
            refresh: None,
            gradient_work: None,
            mh: MhOptions::default(),
        }
    }
}

impl McmcSettings {
    /// Metropolis–Hastings with the defaults of `specs/mh.md` §6 for dimension `dim`:
    /// warmup max(2000, 500·d), samples max(2000, 200·d), 4 chains, dense shape.
    pub fn mh_defaults(dim: usize) -> Self {
        McmcSettings {
            method: Method::Mh,
            warmup: crate::inference::mh::default_warmup(dim),
            samples: crate::inference::mh::default_samples(dim),
            ..McmcSettings::default()
        }
    }

    fn validate(&self, dim: usize, inits: &[Vec<f64>]) -> Result<(), McmcError> {
        let bad = |m: String| Err(McmcError::InvalidSettings(m));
        if self.chains == 0 {
            return bad("the number of chains must be at least 1".into());
        }
        if self.thin == 0 {
            return bad("thin must be at least 1".into());
        }
        if !(self.adapt_delta > 0.0 && self.adapt_delta < 1.0) {
            return bad(format!(
                "adapt_delta is {}, but must be in (0, 1)",
                self.adapt_delta
            ));
        }
        if self.max_depth == 0 {
            return bad("max_depth must be at least 1".into());
        }
        if !(self.init_radius >= 0.0 && self.init_radius.is_finite()) {
            return bad(format!(
                "init radius is {}, but must be finite and >= 0",
                self.init_radius
            ));
        }
        if !(0.0..=1.0).contains(&self.jitter) {
            return bad(format!("jitter is {}, but must be in [0, 1]", self.jitter));
        }
        if !(self.step_size > 0.0 && self.step_size.is_finite()) {
            return bad(format!(
                "step size is {}, but must be positive",
                self.step_size
            ));
        }
        if let Some(m) = &self.inv_metric {
            let expected = if self.dense(dim) { dim * dim } else { dim };
            if m.len() != expected {
                return bad(format!(
                    "the initial inverse metric has {} values, but {expected} are needed",
                    m.len()
                ));
            }
            let ok = if self.dense(dim) {
                Metric::unit_dense(dim).set_dense(m)
            } else {
                m.iter().all(|v| *v > 0.0 && v.is_finite())
            };
            if !ok {
                return bad(
                    "the initial inverse metric must be positive-definite and finite".into(),
                );
            }
        }
        if let Method::StaticHmc {
            n_leapfrog: Some(0),
        } = self.method
        {
            return bad("static HMC needs at least 1 leapfrog step".into());
        }
        if self.method == Method::Mh {
            let o = &self.mh;
            if !(o.kappa_rm > 0.5 && o.kappa_rm <= 1.0) {
                return bad(format!(
                    "the Robbins-Monro exponent is {}, but must be in (0.5, 1]",
                    o.kappa_rm
                ));
            }
            if !(0.0..1.0).contains(&o.beta_mix) {
                return bad(format!("beta_mix is {}, but must be in [0, 1)", o.beta_mix));
            }
            if let Some(t) = o.target_accept
                && !(t > 0.0 && t < 1.0)
            {
                return bad(format!(
                    "the MH target acceptance is {t}, but must be in (0, 1)"
                ));
            }
            if let Some(c0) = &o.initial_shape
                && (c0.len() != dim || c0.iter().any(|v| !(*v > 0.0 && v.is_finite())))
            {
                return bad(format!(
                    "the initial MH shape must be {dim} positive finite values"
                ));
            }
        }
        if !inits.is_empty() {
            if inits.len() != self.chains {
                return bad(format!(
                    "{} initial-value vectors were given for {} chains",
                    inits.len(),
                    self.chains
                ));
            }
            if let Some(v) = inits.iter().find(|v| v.len() != dim) {
                return bad(format!(
                    "an initial-value vector has length {}, but the model has {dim} unconstrained parameters",
                    v.len()
                ));
            }
        }
        Ok(())
    }
}

/// Progress of one chain, reported about 100 times per chain and at its end.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChainProgress {
    /// Chain index, 0-based.
    pub chain: usize,
    /// Iterations completed (warmup + sampling).
    pub iteration: usize,
    /// Total iterations planned (warmup + samples).
    pub total: usize,
    /// Whether the chain is still in warmup.
    pub warmup: bool,
    /// Divergent transitions so far (post-warmup only).
    pub divergences: usize,
}

/// Why sampling failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum McmcError {
    /// The settings or the initial values are inconsistent.
    #[error("invalid MCMC settings: {0}")]
    InvalidSettings(String),
    /// No initial point with finite log density and gradient was found (`specs/nuts.md` §3).
    #[error("chain {chain}: initialisation failed after {attempts} attempt(s): {message}")]
    Initialization {
        /// Chain number, 1-based.
        chain: usize,
        /// Attempts made.
        attempts: usize,
        /// The last reason, with the model location when the density gave one, followed by
        /// what to check ("the statement named above" only when a statement was named).
        message: String,
    },
    /// The step-size heuristic failed (`specs/nuts.md` §4).
    #[error("chain {chain}: {message}")]
    StepSize {
        /// Chain number, 1-based.
        chain: usize,
        /// "posterior is improper" or "no acceptable small step size".
        message: String,
    },
    /// The chain's warmup collapsed (its step size fell to almost nothing, or it stopped
    /// moving) from every start tried (issue 13 item 8; [`crate::inference::chain`]).
    #[error("chain {chain}: {message}")]
    Stuck {
        /// Chain number, 1-based.
        chain: usize,
        /// The cause, the starts tried and the coordinate with the largest gradient.
        message: String,
    },
    /// An unrecoverable error from the log density.
    #[error("chain {chain}: {error}")]
    Density {
        /// Chain number, 1-based.
        chain: usize,
        /// The error, with its model location.
        error: DensityError,
    },
}

/// Sampler statistics per kept draw, column-wise, with Stan's names (`specs/nuts.md` §6).
/// For Metropolis–Hastings only `lp` and `accept_stat` are filled; the others are empty.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SamplerStats {
    /// `lp__`: L(q) (log density on the unconstrained scale, with Jacobian).
    pub lp: Vec<f64>,
    /// `accept_stat__`: NUTS mean acceptance over the trajectory; HMC/MH acceptance probability.
    pub accept_stat: Vec<f64>,
    /// `stepsize__`: the step size used.
    pub stepsize: Vec<f64>,
    /// `treedepth__`.
    pub treedepth: Vec<u32>,
    /// `n_leapfrog__`.
    pub n_leapfrog: Vec<u32>,
    /// `divergent__`.
    pub divergent: Vec<bool>,
    /// `energy__`: the Hamiltonian of the returned state.
    pub energy: Vec<f64>,
}

impl SamplerStats {
    pub(crate) fn push(&mut self, s: &TransitionStats, hmc: bool) {
        self.lp.push(s.log_density);
        self.accept_stat.push(s.accept_stat);
        if hmc {
            self.stepsize.push(s.step_size);
            self.treedepth.push(s.tree_depth);
            self.n_leapfrog.push(s.n_leapfrog);
            self.divergent.push(s.divergent);
            self.energy.push(s.energy);
        }
    }

    /// The filled columns as (Stan name, values), in Stan's order.
    pub fn columns(&self) -> Vec<(&'static str, Vec<f64>)> {
        let mut out = vec![
            ("lp__", self.lp.clone()),
            ("accept_stat__", self.accept_stat.clone()),
        ];
        if !self.stepsize.is_empty() {
            out.push(("stepsize__", self.stepsize.clone()));
            out.push((
                "treedepth__",
                self.treedepth.iter().map(|&v| v as f64).collect(),
            ));
            out.push((
                "n_leapfrog__",
                self.n_leapfrog.iter().map(|&v| v as f64).collect(),
            ));
            out.push((
                "divergent__",
                self.divergent.iter().map(|&v| v as u8 as f64).collect(),
            ));
            out.push(("energy__", self.energy.clone()));
        }
        out
    }

    /// Number of kept draws.
    pub fn len(&self) -> usize {
        self.lp.len()
    }

    /// Whether no draws were kept.
    pub fn is_empty(&self) -> bool {
        self.lp.is_empty()
    }
}

/// Everything one chain produced.
#[derive(Clone, Debug, PartialEq)]
pub struct ChainOutput {
    /// Post-warmup draws, unconstrained, row-major (kept draws × d).
    pub draws: Vec<f64>,
    /// Statistics of the kept post-warmup draws.
    pub stats: SamplerStats,
    /// Warmup draws (thinned like the others), empty unless `save_warmup`.
    pub warmup_draws: Vec<f64>,
    /// Statistics of the kept warmup draws, empty unless `save_warmup`.
    pub warmup_stats: SamplerStats,
    /// HMC: the adapted nominal step size ε̄. MH: the final proposal scale λ.
    pub step_size: f64,
    /// HMC: the adapted inverse metric; MH: the proposal shape C. Length d (diagonal) or
    /// d² (dense, row-major), see `dense`.
    pub inv_metric: Vec<f64>,
    /// Whether `inv_metric` is a dense d × d matrix.
    pub dense: bool,
    /// Post-warmup divergent transitions (all iterations, not only kept ones).
    pub divergences: usize,
    /// Evaluations of the log density that failed with a recoverable error (warmup and
    /// sampling; the sampler rejects such a point, which HMC counts as a divergence), and the
    /// first error's message with its model location ([`RejectionLog`]).
    pub rejections: (usize, Option<String>),
    /// Warmup divergent transitions (informational, `specs/nuts.md` §6).
    pub warmup_divergences: usize,
    /// Post-warmup transitions that hit the maximum tree depth (NUTS).
    pub max_treedepth_hits: usize,
    /// Wall-clock seconds spent in warmup.
    pub warmup_seconds: f64,
    /// Wall-clock seconds spent sampling after warmup.
    pub sampling_seconds: f64,
    /// CPU seconds of the chain's thread during warmup, where the OS reports per-thread CPU time
    /// (Linux `/proc/thread-self/schedstat`, updated at scheduler ticks, so accurate to a few
    /// milliseconds); `None` elsewhere. Includes any other rayon work
    /// the thread picked up while the density itself ran in parallel.
    pub warmup_cpu_seconds: Option<f64>,
    /// CPU seconds of the chain's thread while sampling (same caveats).
    pub sampling_cpu_seconds: Option<f64>,
    /// Leapfrog steps (gradient evaluations) of all transitions, warmup and sampling, whether or
    /// not their draws are kept; 0 for Metropolis-Hastings.
    pub n_gradients: u64,
    /// One note per time the chain's warmup collapsed and the chain was started afresh
    /// (issue 13 item 8), e.g. "chain 2 was re-initialised …"; empty normally.
    pub restarts: Vec<String>,
    /// Iterations (warmup and sampling, before thinning) the chain's last start ran:
    /// `warmup + samples` when it finished, fewer when it was stopped, 0 when the stop came
    /// before its first iteration.
    pub iterations: usize,
}

/// Where one chain of a run was when it ended (read for an interrupted run, to say which
/// chains had finished, were running, or had not started).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChainEnd {
    /// The chain ran all its iterations.
    Finished,
    /// Stopped while sampling, with this many kept post-warmup draws.
    Sampling(usize),
    /// Stopped during warmup, after this many warmup iterations (no post-warmup draws).
    Warmup(usize),
    /// Stopped before its first iteration: the chain was waiting for a free thread (chains run
    /// in parallel, at most [`McmcOutput::parallel_chains`] at a time).
    NotStarted,
}

/// The result of [`sample`].
#[derive(Clone, Debug, PartialEq)]
pub struct McmcOutput {
    /// d, the number of unconstrained parameters (row length of the draws).
    pub dim: usize,
    /// The algorithm used.
    pub method: Method,
    /// One entry per chain, in chain order.
    pub chains: Vec<ChainOutput>,
    /// True if `stop` was raised: the chains hold the draws made so far (possibly fewer than
    /// requested, or none if stopped during warmup).
    pub interrupted: bool,
    /// Unconstrained coordinates along which the log density was flat over the draws
    /// ([`crate::inference::flat::flat_in_draws`]): the posterior is improper there. Named
    /// `zeta[i]` (1-based) by [`sample`]; the caller may rename them after the parameters.
    pub flat: Vec<String>,
    /// The unit direction of a flat combination of coordinates
    /// ([`crate::inference::flat::flat_combination_in_draws`]) when no single coordinate is
    /// flat; `flat` then holds its description with `zeta[i]` names, which the caller may
    /// redo with the parameters' names ([`crate::inference::flat::describe_direction`]).
    pub flat_direction: Option<Vec<f64>>,
    /// Warnings the caller adds about the run (e.g. draws whose generated quantities failed),
    /// printed with [`McmcOutput::warnings`]. Empty from [`sample`].
    pub notes: Vec<String>,
    /// One entry per requested chain, in chain order, where it was when the run ended (all
    /// [`ChainEnd::Finished`] unless `interrupted`). Unlike `chains`, not trimmed by
    /// `fit::trim_interrupted`.
    pub chain_ends: Vec<ChainEnd>,
    /// How many chains could run at once: the rayon pool's threads (the core count, or
    /// `--threads`), at most the number of chains. The others wait for a free thread.
    pub parallel_chains: usize,
    /// With `save_warmup`, for an interrupted run: the chains stopped in warmup with kept
    /// warmup draws, which `fit::trim_interrupted` drops from `chains` (they have no
    /// post-warmup draws); filled by the fit layer, empty from [`sample`].
    pub warmup_stopped: Vec<super::chain_end::WarmupStopped>,
}

/// A log density that counts the recoverable errors of the density it wraps and keeps the
/// first one's message (with its location), for one chain: the sampler rejects such points
/// silently, and the count tells a model undefined in part of the space from a step size too
/// large for its curvature ([`McmcOutput::warnings`]). One per chain (the atomics only make it
/// `Sync`, as [`LogDensity`] requires; a chain runs on one thread).
pub(crate) struct RejectionLog<'a> {
    inner: &'a dyn LogDensity,
    count: std::sync::atomic::AtomicUsize,
    first: std::sync::Mutex<Option<String>>,
}

impl<'a> RejectionLog<'a> {
    /// A log around `inner` with nothing recorded.
    pub(crate) fn new(inner: &'a dyn LogDensity) -> Self {
        RejectionLog {
            inner,
            count: std::sync::atomic::AtomicUsize::new(0),
            first: std::sync::Mutex::new(None),
        }
    }

    /// (failed evaluations, the first failure's message).
    pub(crate) fn take(&self) -> (usize, Option<String>) {
        let first = self.first.lock().ok().and_then(|mut f| f.take());
        (self.count.load(std::sync::atomic::Ordering::Relaxed), first)
    }

    fn note<T>(&self, r: Result<T, DensityError>) -> Result<T, DensityError> {
        if let Err(e) = &r
            && e.recoverable
        {
            self.count
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if let Ok(mut first) = self.first.lock()
                && first.is_none()
            {
                *first = Some(match &e.location {
                    Some(at) => format!("{} ({at})", e.message),
                    None => e.message.clone(),
                });
            }
        }
        r
    }
}

impl LogDensity for RejectionLog<'_> {
    fn dim(&self) -> usize {
        self.inner.dim()
    }
    fn log_density(&self, theta: &[f64]) -> Result<f64, DensityError> {
        self.note(self.inner.log_density(theta))
    }
    fn log_density_grad(&self, theta: &[f64], grad: &mut [f64]) -> Result<f64, DensityError> {
        self.note(self.inner.log_density_grad(theta, grad))
    }
    fn coordinate_name(&self, i: usize) -> String {
        self.inner.coordinate_name(i)
    }
}

/// Largest dimension for which Metropolis–Hastings is recommended. `specs/mh.md` §6.
pub const MH_MAX_RECOMMENDED_DIM: usize = 20;

impl ChainOutput {
    /// Mean `accept_stat` over the kept post-warmup draws (NaN if none).
    pub fn mean_accept_stat(&self) -> f64 {
        let a = &self.stats.accept_stat;
        a.iter().sum::<f64>() / a.len() as f64
    }
}

impl McmcOutput {
    /// The post-run sampler warnings of `specs/nuts.md` §6 (divergences, maximum tree depth) and
    /// `specs/mh.md` §5–6 (acceptance outside [`crate::inference::mh::accept_flag_band`],
    /// [0.1, 0.7] for the default targets; dimension above 20), plus a note if the run was
    /// interrupted. `settings` must be those passed to [`sample`].
    /// E-BFMI, R-hat and ESS are computed by `diagnostics`, not here.
    pub fn warnings(&self, settings: &McmcSettings) -> Vec<String> {
        let mut out = Vec::new();
        if self.interrupted {
            out.push("sampling was interrupted: the draws are those made before the stop".into());
        }
        if !self.flat.is_empty() {
            out.push(format!(
                "the log density does not change along {} anywhere the chains went (its \
                 gradient there is 0 at every checked draw): the posterior is improper in that \
                 direction, so these draws are not from a posterior. Give it a proper prior, or \
                 check that the likelihood depends on it",
                self.flat.join(", ")
            ));
        }
        out.extend(self.notes.iter().cloned());
        let kept: usize = self.chains.iter().map(|c| c.stats.len()).sum();
        let divergent: usize = self.chains.iter().map(|c| c.divergences).sum();
        if divergent > 0 {
            // Under Stan's 150 adaptation iterations (75 + 25 + 50) the step size has not
            // settled, so the first remedy is the warmup, not adapt_delta.
            let advice = if self.method != Method::Mh && settings.warmup < 150 {
                format!(
                    "--warmup {} is too short for the step size to adapt (Stan's adaptation \
                     windows take 150 iterations): run with the default warmup of 1000 before \
                     changing adapt_delta or the model",
                    settings.warmup
                )
            } else if settings.adapt_delta < 0.95 {
                "Increase adapt_delta (e.g. 0.95) or reparameterise the model".to_string()
            } else if settings.adapt_delta < 0.99 {
                format!(
                    "Increase adapt_delta further (e.g. 0.99; it is {}) or reparameterise the \
                     model (e.g. a non-centred parameterisation of a hierarchical scale)",
                    settings.adapt_delta
                )
            } else {
                // past 0.99 smaller steps rarely remove what is left: the geometry is the cause
                format!(
                    "adapt_delta is already {}: reparameterise the model (e.g. a non-centred \
                     parameterisation of a hierarchical scale); a higher adapt_delta only \
                     shrinks the step size further",
                    settings.adapt_delta
                )
            };
            // A log density that cannot be evaluated in part of the space (a transformed
            // parameter NaN there, an argument out of its domain) shows as divergences that
            // no adapt_delta removes (`t = log(mu)` with mu unbounded: 2025 of 4000 at 0.8,
            // 1953 at 0.99), and cuts the posterior off at the edge of where it is defined.
            let rejected: usize = self.chains.iter().map(|c| c.rejections.0).sum();
            let first = self.chains.iter().find_map(|c| c.rejections.1.clone());
            let advice = match (rejected, first) {
                // as many failed evaluations as divergences: the failures are the cause (the
                // centred eight schools, a funnel, has 19 divergences and 1 overflow)
                // (a bounded parameter that overflowed once is not that: at least 10 failures)
                (n, Some(why)) if n >= divergent.max(10) && self.method != Method::Mh => {
                    format!(
                    "The log density could not be evaluated at {n} points the sampler tried \
                     (first: {why}): the model is undefined in part of the parameter space, so \
                     the draws stop at its edge and the posterior there is cut off. {}, rather \
                     than changing adapt_delta",
                    crate::distributions::multivariate::ordered_logistic::unordered_cuts_remedy(
                        &why
                    )
                    .unwrap_or_else(|| "Declare the bounds that keep the parameters where the \
                                        model is defined (e.g. <lower=0>)"
                        .to_string())
                )
                }
                _ => advice,
            };
            out.push(format!(
                "{divergent} post-warmup transitions diverged: the results may be biased. {advice}"
            ));
        }
        let fewest = self.chains.iter().map(|c| c.stats.len()).min().unwrap_or(0);
        // Split-chain R-hat needs halves of 2 draws, the ESS halves of 3 (specs/diagnostics.md §2–3).
        if !self.interrupted && fewest < 6 {
            out.push(format!(
                "only {fewest} post-warmup draw{} per chain: R-hat needs at least 4 and the ESS \
                 and MCSE at least 6 (below that they are shown as NaN), and the summary rests on \
                 {kept} draws in all; run longer (--samples)",
                if fewest == 1 { "" } else { "s" }
            ));
        }
        let max_depth: usize = self.chains.iter().map(|c| c.max_treedepth_hits).sum();
        if max_depth > 0 {
            out.push(format!(
                "{max_depth} post-warmup transitions hit the maximum tree depth {}: an efficiency \
                 problem, not a validity one; consider a larger max_depth",
                settings.max_depth
            ));
        }
        if self.method == Method::Mh {
            let target = settings
                .mh
                .target_accept
                .unwrap_or_else(|| crate::inference::mh::target_accept(self.dim));
            let (lo, hi) = crate::inference::mh::accept_flag_band(target);
            let ids = self.chain_ids();
            for (c, chain) in self.chains.iter().enumerate() {
                let c = ids.get(c).copied().unwrap_or(c);
                let a = chain.mean_accept_stat();
                if kept > 0 && !(lo..=hi).contains(&a) {
                    out.push(format!(
                        "chain {}: mean acceptance {a:.3} is outside [{lo:.2}, {hi:.2}]; the \
                         proposal is poorly tuned (use a longer warmup)",
                        c + 1
                    ));
                }
            }
            if self.dim > MH_MAX_RECOMMENDED_DIM {
                out.push(format!(
                    "Metropolis-Hastings is recommended only up to about {MH_MAX_RECOMMENDED_DIM} \
                     parameters and this model has {}: consider NUTS",
                    self.dim
                ));
            }
        }
        out
    }
}

/// Run `settings.chains` chains in parallel (rayon) on `density`.
///
/// `inits`: one unconstrained vector per chain (single attempt each), or empty for uniform
/// (−R, R) draws retried up to 100 times (`specs/nuts.md` §3). `progress` is called from the
/// chains' threads; `stop` ends all chains early (the output then has `interrupted = true`).
/// Errors: [`McmcError`]; when several chains fail, the error of the lowest chain is returned.
pub fn sample(
    density: &dyn LogDensity,
    settings: &McmcSettings,
    inits: &[Vec<f64>],
    progress: &(dyn Fn(ChainProgress) + Sync),
    stop: &AtomicBool,
) -> Result<McmcOutput, McmcError> {
    sample_with_sink(density, settings, inits, progress, stop, &NoSink)
}

/// [`sample`], also handing each chain's header facts, adaptation and kept post-warmup draws to
/// `sink` as they are made (for streaming them to files; [`DrawSink`]). The draws and the
/// output are the same as [`sample`]'s.
pub fn sample_with_sink(
    density: &dyn LogDensity,
    settings: &McmcSettings,
    inits: &[Vec<f64>],
    progress: &(dyn Fn(ChainProgress) + Sync),
    stop: &AtomicBool,
    sink: &dyn DrawSink,
) -> Result<McmcOutput, McmcError> {
    let dim = density.dim();
    settings.validate(dim, inits)?;
    let results: Vec<Result<(ChainOutput, bool), McmcError>> = (0..settings.chains)
        .into_par_iter()
        .map(|c| {
            let init = inits.get(c).map(|v| v.as_slice());
            let log = RejectionLog::new(density);
            let (mut chain, stopped) = run_chain(&log, settings, init, c, progress, stop, sink)?;
            chain.rejections = log.take();
            Ok((chain, stopped))
        })
        .collect();
    let mut chains = Vec::with_capacity(settings.chains);
    let mut chain_ends = Vec::with_capacity(settings.chains);
    let mut interrupted = false;
    for r in results {
        let (chain, stopped) = r?;
        interrupted |= stopped;
        chain_ends.push(ChainEnd::of(&chain, stopped, settings.warmup));
        chains.push(chain);
    }
    let (flat, flat_direction) = if dim > 0 {
        let draws: Vec<&[f64]> = chains.iter().flat_map(|c| c.draws.chunks(dim)).collect();
        let coords = super::flat::flat_in_draws(density, &draws);
        if coords.is_empty()
            && let Some(v) = super::flat::flat_combination_in_draws(density, &draws)
        {
            (vec![super::flat::describe_direction(&v, &[])], Some(v))
        } else {
            (
                coords.iter().map(|i| format!("zeta[{}]", i + 1)).collect(),
                None,
            )
        }
    } else {
        (Vec::new(), None)
    };
    Ok(McmcOutput {
        dim,
        method: settings.method.clone(),
        chains,
        interrupted,
        flat,
        flat_direction,
        notes: Vec::new(),
        chain_ends,
        parallel_chains: rayon::current_num_threads().clamp(1, settings.chains.max(1)),
        warmup_stopped: Vec::new(),
    })
}

/// The sampler columns a chain of `method` reports, in Stan's order: `lp__`, `accept_stat__`,
/// and for HMC/NUTS `stepsize__`, `treedepth__`, `n_leapfrog__`, `divergent__`, `energy__`
/// (the order of [`SamplerStats::columns`] and of [`DrawSink::draw`]'s `sampler` values).
pub fn sampler_columns(method: &Method) -> &'static [&'static str] {
    match method {
        Method::Mh => &["lp__", "accept_stat__"],
        _ => &[
            "lp__",
            "accept_stat__",
            "stepsize__",
            "treedepth__",
            "n_leapfrog__",
            "divergent__",
            "energy__",
        ],
    }
}

/// Receives what the chains make, as they make it (issue 13 item 7: draws streamed to files so
/// an interrupted run keeps them). Called from the chains' threads; the calls of one chain come
/// from one thread, in order: [`DrawSink::start`], then (if warmup ends) the kept warmup draws
/// when saved and [`DrawSink::adapted`], the kept post-warmup draws, and [`DrawSink::finish`]. Chain indices
/// are 0-based. The default methods do nothing.
pub trait DrawSink: Sync {
    /// Chain `chain` starts; `dense` says whether its metric (MH: proposal shape) is dense.
    fn start(&self, _chain: usize, _dense: bool) {}
    /// Warmup ended with the adapted step size (MH: proposal scale) and inverse metric (MH:
    /// shape), as [`ChainOutput::step_size`] and [`ChainOutput::inv_metric`] will hold them.
    fn adapted(&self, _chain: usize, _step_size: f64, _inv_metric: &[f64], _dense: bool) {}
    /// A kept post-warmup draw: `sampler` in the order of [`sampler_columns`], `q` the
    /// unconstrained position (length d).
    fn draw(&self, _chain: usize, _sampler: &[f64], _q: &[f64]) {}
    /// With [`McmcSettings::save_warmup`]: a kept warmup draw, as [`DrawSink::draw`]. They
    /// come all at once when warmup ends, just before [`DrawSink::adapted`] (a chain whose
    /// warmup collapses and restarts sends only the last attempt's), or, when a stop ends the
    /// warmup, those made so far, before [`DrawSink::finish`] (and no `adapted`).
    fn warmup_draw(&self, _chain: usize, _sampler: &[f64], _q: &[f64]) {}
    /// The chain ended (finished or stopped), with its warmup and sampling wall-clock seconds.
    fn finish(&self, _chain: usize, _warmup_seconds: f64, _sampling_seconds: f64) {}
}

/// A [`DrawSink`] that ignores everything.
pub struct NoSink;

impl DrawSink for NoSink {}
