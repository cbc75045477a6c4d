//! Hamiltonian Monte Carlo: the multinomial NUTS and static HMC transitions, with Stan's warmup
//! adaptation of step size and metric (`specs/nuts.md`).
//!
//! [`AdaptiveHmc`] runs one chain's transitions and adaptation; `inference::mcmc` drives chains.

pub mod integrator;
pub mod nuts;
pub mod static_hmc;

pub use integrator::{Metric, PhasePoint};
pub use nuts::Nuts;
pub use static_hmc::StaticHmc;

use crate::inference::adapt::{DualAveraging, WelfordCov, WelfordVar, WindowSchedule};
use crate::inference::density::{DensityError, LogDensity};
use crate::inference::rng::StreamRng;
use integrator::{hamiltonian, leapfrog};
use rand::RngExt;

/// Initial nominal step size ε̄ before the heuristic. `specs/nuts.md` §5.1, Stan default.
pub const INITIAL_STEP_SIZE: f64 = 1.0;
/// The heuristic doubles or halves ε̄ until the one-step acceptance crosses 0.8.
/// `specs/nuts.md` §4, Stan's `base_hmc.hpp`.
pub const HEURISTIC_ACCEPT: f64 = 0.8;
/// Above this ε̄ the heuristic gives up: "posterior is improper" (Stan's bound), or its scale
/// is beyond 10⁷ units, which the message says too: a unit-metric step of 10⁷ cannot tell a
/// flat density from one of scale 3e13. `specs/nuts.md` §4.
pub const MAX_STEP_SIZE: f64 = 1e7;

/// Per-transition sampler statistics (`specs/nuts.md` §2.6).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TransitionStats {
    /// L(q) at the new position (`lp__`).
    pub log_density: f64,
    /// Mean acceptance statistic over the trajectory's states (`accept_stat__`), in [0, 1].
    pub accept_stat: f64,
    /// The step size actually used, after jitter (`stepsize__`).
    pub step_size: f64,
    /// Successful doublings (`treedepth__`); 0 for static HMC.
    pub tree_depth: u32,
    /// Leapfrog steps taken (`n_leapfrog__`).
    pub n_leapfrog: u32,
    /// Whether the energy error exceeded ΔH_max (`divergent__`).
    pub divergent: bool,
    /// H of the returned state (`energy__`).
    pub energy: f64,
}

/// Why an HMC chain could not continue.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum TransitionError {
    /// An unrecoverable error from the log density.
    #[error("{0}")]
    Density(DensityError),
    /// The step-size heuristic failed (`specs/nuts.md` §4).
    #[error("{0}")]
    StepSize(String),
}

impl From<DensityError> for TransitionError {
    fn from(e: DensityError) -> Self {
        TransitionError::Density(e)
    }
}

/// The transition kernel of an [`AdaptiveHmc`] chain.
#[derive(Clone, Debug)]
pub enum Kernel {
    /// Multinomial NUTS (`specs/nuts.md` §2).
    Nuts(Box<Nuts>),
    /// Static HMC with a fixed number of steps, or `None` for L = max(1, ⌊2π/ε̄⌋)
    /// recomputed from ε̄ (`specs/nuts.md` §7).
    Static(StaticHmc, Option<usize>),
}

/// One HMC chain with its warmup adaptation (`specs/nuts.md` §3–§5): the kernel, the metric,
/// the nominal step size ε̄, dual averaging and the windowed variance estimator.
#[derive(Clone, Debug)]
pub struct AdaptiveHmc {
    kernel: Kernel,
    /// The current inverse metric.
    pub metric: Metric,
    /// The nominal step size ε̄.
    pub step_size: f64,
    /// Step-size jitter j ∈ [0, 1] (`specs/nuts.md` §2.2; default 0).
    pub jitter: f64,
    dual: DualAveraging,
    schedule: WindowSchedule,
    var: WelfordVar,
    cov: Option<WelfordCov>,
    buffer: Vec<f64>,
    current: PhasePoint,
    scratch: PhasePoint,
    velocity: Vec<f64>,
    /// For static HMC with the default integration time: the NUTS kernel that runs warmup
    /// until the terminal buffer (see [`AdaptiveHmc::adapt_with_nuts`]).
    warmup_nuts: Option<Box<Nuts>>,
}

impl AdaptiveHmc {
    /// A chain at `init` (L and ∇L already evaluated and finite) with initial ε̄ =
    /// `step_size_user`, target acceptance `delta` and `num_warmup` warmup iterations.
    pub fn new(
        kernel: Kernel,
        metric: Metric,
        init: PhasePoint,
        step_size_user: f64,
        delta: f64,
        num_warmup: usize,
        jitter: f64,
    ) -> Self {
        let d = init.q.len();
        let dense = matches!(metric, Metric::Dense { .. });
        AdaptiveHmc {
            kernel,
            metric,
            step_size: step_size_user,
            jitter,
            dual: DualAveraging::new(step_size_user, delta),
            schedule: WindowSchedule::new(num_warmup),
            var: WelfordVar::new(if dense { 0 } else { d }),
            cov: dense.then(|| WelfordCov::new(d)),
            buffer: vec![0.0; if dense { d * d } else { d }],
            current: init,
            scratch: PhasePoint::new(d),
            velocity: vec![0.0; d],
            warmup_nuts: None,
        }
    }

    /// Runs warmup with `nuts` until the terminal buffer, and with this chain's own kernel in
    /// the terminal buffer only. For static HMC with L = ⌊2π/ε̄⌋ (`specs/nuts.md` §7).
    ///
    /// Departure from Stan, which warms up static HMC with the static kernel throughout:
    /// before the metric is adapted the posterior can be far narrower than the unit metric,
    /// so dual averaging drives ε̄ down and L = 2π/ε̄ up to thousands of leapfrog steps per
    /// iteration (labour: 95 s of warmup where NUTS needs 5 s). The metric is a property of
    /// the posterior, not of the kernel, so NUTS, whose trajectory length adapts to the
    /// unadapted geometry, estimates it; the step size is then tuned afresh for the static
    /// kernel in the terminal buffer, where dual averaging restarts anyway (§5.3). Without
    /// metric adaptation (fewer than 20 warmup iterations) the static kernel runs throughout.
    pub fn adapt_with_nuts(mut self, nuts: Nuts) -> Self {
        if matches!(self.kernel, Kernel::Static(..)) && self.schedule.adapt_metric {
            self.warmup_nuts = Some(Box::new(nuts));
        }
        self
    }

    /// Turns metric adaptation off (Stan's `unit_e`, or any metric kept as given): warmup
    /// adapts only the step size, by dual averaging over all of warmup without restarts. Call
    /// before [`AdaptiveHmc::adapt_with_nuts`] (which then keeps the static kernel).
    pub fn without_metric_adaptation(mut self) -> Self {
        self.schedule.adapt_metric = false;
        self
    }

    /// The current position q (unconstrained).
    pub fn position(&self) -> &[f64] {
        &self.current.q
    }

    /// ∇L at the current position (length d).
    pub fn gradient(&self) -> &[f64] {
        &self.current.grad
    }

    /// The step-size initialisation heuristic of `specs/nuts.md` §4, from the current position.
    /// Only ε̄ changes. Errors: "posterior is improper" (ε̄ > 10⁷), "no acceptable small step
    /// size" (ε̄ = 0), or an unrecoverable density error.
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    pub fn init_step_size(
        &mut self,
        density: &dyn LogDensity,
        rng: &mut StreamRng,
    ) -> Result<(), TransitionError> {
        let eps = self.step_size;
        if self.current.q.is_empty() || eps == 0.0 || eps > MAX_STEP_SIZE || eps.is_nan() {
            return Ok(());
        }
        let log_target = HEURISTIC_ACCEPT.ln();
        // The negated comparisons are deliberate: a NaN energy change ends the search (§4).
        let mut delta_h = self.one_step_energy_change(density, rng)?;
        let direction_up = delta_h > log_target;
        loop {
            delta_h = self.one_step_energy_change(density, rng)?;
            if direction_up && !(delta_h > log_target) {
                break;
            }
            if !direction_up && !(delta_h < log_target) {
                break;
            }
            self.step_size = if direction_up {
                2.0 * self.step_size
            } else {
                0.5 * self.step_size
            };
            if self.step_size > MAX_STEP_SIZE {
                return Err(TransitionError::StepSize(
                    "the step size grew beyond 1e7 during initialisation: the log density \
                     barely changes over 1e7 units of the unconstrained parameters, so the \
                     posterior is improper, or its scale is beyond 1e7 (e.g. a prior \
                     normal(1.23e15, 3e13)); check the priors, or put a parameter of such a \
                     scale on a unit scale (declare it `real<offset=…, multiplier=…>` with its \
                     location and scale, or model it in those units); --method optimize or \
                     laplace finds the mode of such a posterior"
                        .into(),
                ));
            }
            if self.step_size == 0.0 {
                return Err(TransitionError::StepSize(
                    "no acceptable small step size was found during initialisation: the log \
                     density or its gradient is not finite near the initial values"
                        .into(),
                ));
            }
        }
        Ok(())
    }

    /// H₀ − H after one leapfrog step with ε̄ and a fresh momentum, from the current position.
    fn one_step_energy_change(
        &mut self,
        density: &dyn LogDensity,
        rng: &mut StreamRng,
    ) -> Result<f64, DensityError> {
        let z = &mut self.scratch;
        z.assign(&self.current);
        self.metric.sample_momentum(rng, &mut z.p);
        self.metric.sharp(&z.p, &mut self.velocity);
        let h0 = hamiltonian(z.log_density, &z.p, &self.velocity);
        leapfrog(density, &self.metric, z, self.step_size, &mut self.velocity)?;
        self.metric.sharp(&z.p, &mut self.velocity);
        Ok(h0 - hamiltonian(z.log_density, &z.p, &self.velocity))
    }

    /// One transition with the current ε̄ (jittered) and metric; no adaptation.
    pub fn transition(
        &mut self,
        density: &dyn LogDensity,
        rng: &mut StreamRng,
    ) -> Result<TransitionStats, TransitionError> {
        let eps = if self.jitter > 0.0 {
            let u: f64 = rng.random();
            self.step_size * (1.0 + self.jitter * (2.0 * u - 1.0))
        } else {
            self.step_size
        };
        let stats = match &mut self.kernel {
            Kernel::Nuts(nuts) => {
                nuts.transition(density, &self.metric, eps, rng, &mut self.current)
            }
            Kernel::Static(hmc, steps) => {
                let n = steps.unwrap_or_else(|| {
                    static_hmc::steps_for_time(static_hmc::INTEGRATION_TIME, self.step_size)
                });
                hmc.transition(density, &self.metric, eps, n, rng, &mut self.current)
            }
        }?;
        Ok(stats)
    }

    /// Warmup iteration `c` (zero-based): transition, dual-averaging update, variance
    /// accumulation and, at a window end, metric update + heuristic + dual-averaging restart
    /// (`specs/nuts.md` §5.3, order of operations).
    pub fn warmup_iteration(
        &mut self,
        density: &dyn LogDensity,
        rng: &mut StreamRng,
        c: usize,
    ) -> Result<TransitionStats, TransitionError> {
        let before_term_buffer = c + self.schedule.term_buffer < self.schedule.num_warmup;
        let stats = match (&mut self.warmup_nuts, before_term_buffer) {
            (Some(nuts), true) => {
                let eps = self.step_size;
                nuts.transition(density, &self.metric, eps, rng, &mut self.current)?
            }
            _ => self.transition(density, rng)?,
        };
        self.step_size = self.dual.update(stats.accept_stat);
        if self.schedule.in_slow_window(c) {
            match &mut self.cov {
                Some(cov) => cov.add(&self.current.q),
                None => self.var.add(&self.current.q),
            }
            if self.schedule.is_window_end(c) {
                match &mut self.cov {
                    Some(cov) => {
                        cov.regularized_covariance(&mut self.buffer);
                        cov.clear();
                        // The regularisation keeps Σ positive-definite; if round-off breaks
                        // that, the previous metric is kept.
                        self.metric.set_dense(&self.buffer);
                    }
                    None => {
                        self.var.regularized_variance(&mut self.buffer);
                        self.var.clear();
                        self.metric.set_diag(&self.buffer);
                    }
                }
                self.init_step_size(density, rng)?;
                self.dual.restart(self.step_size);
            }
        }
        Ok(stats)
    }

    /// End of warmup: freeze ε̄ = exp(x̄) (`specs/nuts.md` §5.2). Call only if warmup ran.
    pub fn finish_warmup(&mut self) {
        self.step_size = self.dual.final_step_size();
    }
}
