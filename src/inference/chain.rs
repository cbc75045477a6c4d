//! One MCMC chain: its initialisation, warmup and sampling loops, and the watch for a warmup
//! that collapses (issue 13 item 8). `inference::mcmc` runs the chains in parallel.
//!
//! A collapsed warmup: a chain started where the density is ill-conditioned (e.g. an MA(1)
//! model with |θ| > 1, where the recursion explodes) adapts its step size down by many orders
//! of magnitude, saturates the tree depth and creeps instead of moving; it costs 100× the time
//! of a healthy chain and only R-hat shows it afterwards. [`CollapseWatch`] looks at each
//! block of [`WATCH_BLOCK`] warmup iterations; a collapsed chain is started afresh from a new
//! uniform(−R, R) draw of its own random stream ([`restart_stream`]), at most
//! [`MAX_RESTARTS`] times, and then fails with [`McmcError::Stuck`].

use crate::inference::density::LogDensity;
use crate::inference::hmc::{
    AdaptiveHmc, Kernel, Metric, Nuts, PhasePoint, StaticHmc, TransitionError, TransitionStats,
};
use crate::inference::mcmc::{
    ChainOutput, ChainProgress, DrawSink, MAX_INIT_ATTEMPTS, McmcError, McmcSettings, Method,
    SamplerStats,
};
use crate::inference::mh::AdaptiveMh;
use crate::inference::rng::{StreamRng, stream};
use rand::RngExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Find an initial point for chain `chain` (0-based) per `specs/nuts.md` §3: `init` is tried
/// once; otherwise up to [`MAX_INIT_ATTEMPTS`] uniform(−R, R) draws. `need_gradient` also
/// requires a finite gradient (HMC).
pub(crate) fn initialize(
    density: &dyn LogDensity,
    init: Option<&[f64]>,
    radius: f64,
    need_gradient: bool,
    chain: usize,
    rng: &mut StreamRng,
) -> Result<PhasePoint, McmcError> {
    let d = density.dim();
    let mut z = PhasePoint::new(d);
    let attempts = if init.is_some() { 1 } else { MAX_INIT_ATTEMPTS };
    let mut message = String::new();
    // whether `message` names a statement of the model (a density error with a location)
    let mut named = false;
    // whether every attempt failed with the same message (see the advice below)
    let mut first_message: Option<String> = None;
    let mut same_every_time = true;
    for _ in 0..attempts {
        match init {
            Some(v) => z.q.copy_from_slice(v),
            None => {
                for q in z.q.iter_mut() {
                    *q = if radius > 0.0 {
                        rng.random_range(-radius..radius)
                    } else {
                        0.0
                    };
                }
            }
        }
        let result = if need_gradient {
            density.log_density_grad(&z.q, &mut z.grad)
        } else {
            density.log_density(&z.q)
        };
        match result {
            Ok(lp) if !lp.is_finite() => {
                message = format!("the log density is {lp} at the initial values");
                named = false;
            }
            Ok(lp) => {
                if need_gradient && let Some(i) = z.grad.iter().position(|g| !g.is_finite()) {
                    message = format!(
                        "the gradient of the log density with respect to {} is {} at the initial values",
                        density.coordinate_name(i),
                        z.grad[i]
                    );
                    named = false;
                    continue;
                }
                z.log_density = lp;
                return Ok(z);
            }
            Err(e) if e.recoverable => {
                named = e.location.is_some();
                message = e.to_string();
                match &first_message {
                    None => first_message = Some(message.clone()),
                    Some(f) => same_every_time &= *f == message,
                }
            }
            Err(error) => {
                return Err(McmcError::Density {
                    chain: chain + 1,
                    error,
                });
            }
        }
    }
    let what = if named {
        "the statement named above"
    } else {
        "every statement of the model"
    };
    // A value that is the same at every random start does not move with the parameters: the
    // usual cause is data or a constant outside the density's support, which no initial value
    // can fix, so the advice says that rather than blaming the starting region.
    let constant = named && init.is_none() && radius > 0.0 && attempts > 1 && same_every_time;
    let advice = if constant {
        crate::inference::init::constant_error_advice(&message, attempts)
    } else {
        format!(
            "Check that {what} can have a finite log density for parameter values near zero on \
             the unconstrained scale (bounds, positive scales, data in the support)"
        )
    };
    Err(McmcError::Initialization {
        chain: chain + 1,
        attempts,
        message: format!("{message}. {advice}"),
    })
}

/// CPU time of the calling thread in seconds, from the first field of Linux's
/// `/proc/thread-self/schedstat` (nanoseconds on CPU); `None` where unavailable.
fn thread_cpu_seconds() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: f64 = text.split_whitespace().next()?.parse().ok()?;
    Some(ns * 1e-9)
}

/// One chain's sampler.
enum ChainSampler {
    Hmc(Box<AdaptiveHmc>),
    Mh(Box<AdaptiveMh>),
}

impl ChainSampler {
    fn step(
        &mut self,
        density: &dyn LogDensity,
        rng: &mut StreamRng,
        warmup: Option<usize>,
    ) -> Result<TransitionStats, TransitionError> {
        match self {
            ChainSampler::Hmc(h) => match warmup {
                Some(c) => h.warmup_iteration(density, rng, c),
                None => h.transition(density, rng),
            },
            ChainSampler::Mh(m) => {
                let s = m.iterate(density, rng, warmup)?;
                Ok(TransitionStats {
                    log_density: s.log_density,
                    accept_stat: s.accept_prob,
                    step_size: m.scale(),
                    tree_depth: 0,
                    n_leapfrog: 0,
                    divergent: false,
                    energy: f64::NAN,
                })
            }
        }
    }

    fn position(&self) -> &[f64] {
        match self {
            ChainSampler::Hmc(h) => h.position(),
            ChainSampler::Mh(m) => m.position(),
        }
    }
}

/// Warmup iterations per block that [`CollapseWatch`] judges; the first block is not judged
/// (a chain far from the typical set legitimately drifts while it converges).
pub const WATCH_BLOCK: usize = 50;
/// A chain whose nominal step size fell below this fraction of the initial one (the user's,
/// before the heuristic; 1 by default) has collapsed: measured on an MA(1) model started at
/// |θ| > 1, the heuristic halves ε̄ from 1 to 1.5e-39 there, and warmup then creeps at ε̄ ≈ 5e-5
/// with the tree depth saturated while the healthy chains settle at ε̄ ≈ 0.8.
pub const COLLAPSE_STEP_RATIO: f64 = 1e-8;
/// A creeping chain, judged from the third block on (after the first metric update), in two
/// blocks in a row: at least this share of its transitions saturate the tree depth ...
/// (measured on the MA(1) chain started at θ = 1.05: 20–64% saturated, E-BFMI 0.01–0.04 and
/// ε̄ ≈ 1e-4 in every block of warmup; healthy chains: none saturated, E-BFMI 0.7–1.9, ε̄ ≈ 1)
pub const CREEP_SATURATED_SHARE: f64 = 0.25;
/// ... the block's E-BFMI (energy change between iterations against the energy's spread) is
/// below this (a healthy chain's is near 1; Stan warns below 0.3) ...
pub const CREEP_MAX_EBFMI: f64 = 0.05;
/// ... and the step size is below this fraction of the initial one.
pub const CREEP_STEP_RATIO: f64 = 1e-3;
/// Fresh starts of a collapsed chain before it fails with [`McmcError::Stuck`]. Restart a
/// draws from uniform(−R/2^a, R/2^a): ill-conditioned regions are usually far from zero on the
/// unconstrained scale (an MA(1) start with |θ| > 1 collapses about half the time at R = 2,
/// never at R = 1).
pub const MAX_RESTARTS: usize = 4;

/// The random stream of chain `chain`'s (0-based) `attempt`-th start: the chain's own stream
/// `chain + 1` for attempt 0, and for a restart `10_000 + 16·chain + attempt`, a stream no
/// other part of a fit uses, so a seed gives the same fit at any thread count.
pub fn restart_stream(chain: usize, attempt: usize) -> u64 {
    if attempt == 0 {
        chain as u64 + 1
    } else {
        10_000 + 16 * chain as u64 + attempt as u64
    }
}

/// Watches the warmup of one HMC chain for a collapse (module docs).
#[derive(Debug)]
pub struct CollapseWatch {
    /// The initial step size, before the heuristic.
    first_step: f64,
    max_depth: u32,
    saturated: usize,
    energies: Vec<f64>,
    blocks: usize,
    /// Consecutive blocks that looked like creeping.
    creeping: usize,
}

impl CollapseWatch {
    /// A watch for a chain with initial step size `first_step` (before the heuristic) and NUTS
    /// maximum tree depth `max_depth` (0 for static HMC, whose transitions never saturate).
    pub fn new(first_step: f64, max_depth: u32) -> Self {
        CollapseWatch {
            first_step,
            max_depth,
            saturated: 0,
            energies: Vec::with_capacity(WATCH_BLOCK),
            blocks: 0,
            creeping: 0,
        }
    }

    /// The cause if step size `step_size` has collapsed ([`COLLAPSE_STEP_RATIO`]).
    pub fn check_step(&self, step_size: f64) -> Option<String> {
        let ratio = step_size / self.first_step;
        (!(ratio >= COLLAPSE_STEP_RATIO)).then(|| {
            format!(
                "its step size collapsed to {step_size:.3e} (from {:.3e}; below {COLLAPSE_STEP_RATIO:e} of it)",
                self.first_step
            )
        })
    }

    /// Records one warmup transition; `step_size` is the nominal step size after it. At the end
    /// of a block, returns the cause if the chain has collapsed.
    pub fn observe(&mut self, s: &TransitionStats, step_size: f64) -> Option<String> {
        self.saturated += (self.max_depth > 0 && s.tree_depth >= self.max_depth) as usize;
        self.energies.push(s.energy);
        if self.energies.len() < WATCH_BLOCK {
            return None;
        }
        self.blocks += 1;
        let share = self.saturated as f64 / self.energies.len() as f64;
        let ebfmi = ebfmi(&self.energies);
        self.saturated = 0;
        self.energies.clear();
        if self.blocks < 2 {
            return None;
        }
        if let Some(cause) = self.check_step(step_size) {
            return Some(cause);
        }
        let ratio = step_size / self.first_step;
        let creeping = self.blocks >= 3
            && share >= CREEP_SATURATED_SHARE
            && ebfmi < CREEP_MAX_EBFMI
            && ratio < CREEP_STEP_RATIO;
        self.creeping = if creeping { self.creeping + 1 } else { 0 };
        if self.creeping >= 2 {
            return Some(format!(
                "it stopped moving: its step size fell to {step_size:.3e} (from {:.3e}), {:.0}% of \
                 the last {WATCH_BLOCK} transitions hit the maximum tree depth and their E-BFMI is \
                 {ebfmi:.3} (in two blocks in a row)",
                self.first_step,
                100.0 * share
            ));
        }
        None
    }
}

/// E-BFMI of a run of energies: Σ(Eₜ − Eₜ₋₁)² / Σ(Eₜ − Ē)²; 1 when the energy is constant
/// (nothing to explore), NaN-free for finite input.
pub fn ebfmi(e: &[f64]) -> f64 {
    let n = e.len() as f64;
    let mean = e.iter().sum::<f64>() / n;
    let var: f64 = e.iter().map(|x| (x - mean).powi(2)).sum();
    let diff: f64 = e.windows(2).map(|w| (w[1] - w[0]).powi(2)).sum();
    if var > 0.0 && var.is_finite() {
        diff / var
    } else {
        1.0
    }
}

/// The coordinate with the largest finite |g[i]|, and g[i].
fn steepest(g: &[f64]) -> Option<(usize, f64)> {
    (0..g.len())
        .filter(|&i| g[i].is_finite())
        .max_by(|&a, &b| g[a].abs().total_cmp(&g[b].abs()))
        .map(|i| (i, g[i]))
}

/// The outcome of one start of a chain.
enum Attempt {
    /// The chain ran to the end (or was stopped: `true`).
    Done(Box<ChainOutput>, bool),
    /// Warmup collapsed: the cause, and the model coordinate with the largest |gradient| at
    /// the chain's position with that gradient.
    Collapsed(String, Option<(usize, f64)>),
}

/// Runs chain `chain` (0-based): starts it (from `init` if given, else uniform(−R, R)), and
/// restarts it from a fresh random start when its warmup collapses (module docs).
pub(crate) fn run_chain(
    density: &dyn LogDensity,
    settings: &McmcSettings,
    init: Option<&[f64]>,
    chain: usize,
    progress: &(dyn Fn(ChainProgress) + Sync),
    stop: &AtomicBool,
    sink: &dyn DrawSink,
) -> Result<(ChainOutput, bool), McmcError> {
    let d = density.dim();
    let is_hmc = settings.method != Method::Mh;
    sink.start(
        chain,
        if is_hmc {
            settings.dense(d)
        } else {
            settings.mh.dense
        },
    );
    let mut restarts = Vec::new();
    let mut attempt = 0;
    loop {
        let rng = stream(settings.seed, restart_stream(chain, attempt));
        let start = if attempt == 0 { init } else { None };
        let radius = settings.init_radius / f64::powi(2.0, attempt as i32);
        match run_attempt(
            density, settings, start, radius, chain, rng, progress, stop, sink,
        )? {
            Attempt::Done(mut out, interrupted) => {
                out.restarts = restarts;
                return Ok((*out, interrupted));
            }
            Attempt::Collapsed(cause, steep) => {
                let steep = steep
                    .map(|(i, g)| {
                        format!(
                            "; the gradient there is largest along {} ({g:.3e})",
                            density.coordinate_name(i)
                        )
                    })
                    .unwrap_or_default();
                if attempt == MAX_RESTARTS {
                    return Err(McmcError::Stuck {
                        chain: chain + 1,
                        message: format!(
                            "warmup collapsed from each of {} starts: {cause}{steep}. The density is \
                             ill-conditioned where the chain starts; give a narrower start (--init \
                             with a smaller radius, or --init pathfinder), reparameterise the \
                             model, or constrain the parameter named",
                            MAX_RESTARTS + 1
                        ),
                    });
                }
                attempt += 1;
                restarts.push(format!(
                    "chain {} was re-initialised from a fresh random start in (-{r}, {r}) \
                     (restart {attempt} of at most {MAX_RESTARTS}): during warmup {cause}{steep}",
                    chain + 1,
                    r = settings.init_radius / f64::powi(2.0, attempt as i32)
                ));
            }
        }
    }
}

/// One start of chain `chain` with random stream `rng`, from `init` or uniform(−radius, radius).
#[allow(clippy::too_many_arguments)]
fn run_attempt(
    density: &dyn LogDensity,
    settings: &McmcSettings,
    init: Option<&[f64]>,
    radius: f64,
    chain: usize,
    mut rng: StreamRng,
    progress: &(dyn Fn(ChainProgress) + Sync),
    stop: &AtomicBool,
    sink: &dyn DrawSink,
) -> Result<Attempt, McmcError> {
    let d = density.dim();
    let is_hmc = settings.method != Method::Mh;
    let start = initialize(density, init, radius, is_hmc, chain, &mut rng)?;
    let map_err = |e: TransitionError| match e {
        TransitionError::Density(error) => McmcError::Density {
            chain: chain + 1,
            error,
        },
        TransitionError::StepSize(message) => McmcError::StepSize {
            chain: chain + 1,
            message,
        },
    };
    let mut watch = None;
    let mut sampler = if is_hmc {
        let kernel = match settings.method {
            Method::StaticHmc { n_leapfrog } => Kernel::Static(StaticHmc::new(d), n_leapfrog),
            _ => Kernel::Nuts(Box::new(Nuts::new(d, settings.max_depth))),
        };
        let dense = settings.dense(d);
        let mut metric = if dense {
            Metric::unit_dense(d)
        } else {
            Metric::unit_diag(d)
        };
        match (&settings.inv_metric, dense) {
            (Some(m), true) => {
                // Validated as positive-definite in `McmcSettings::validate`.
                metric.set_dense(m);
            }
            (Some(m), false) => metric.set_diag(m),
            (None, _) => {}
        }
        let mut h = AdaptiveHmc::new(
            kernel,
            metric,
            start,
            settings.step_size,
            settings.adapt_delta,
            settings.warmup,
            settings.jitter,
        );
        if settings.metric == crate::inference::mcmc::MetricChoice::Unit {
            h = h.without_metric_adaptation();
        }
        let nuts_warmup = match settings.method {
            Method::StaticHmc { n_leapfrog: None } => {
                h = h.adapt_with_nuts(Nuts::new(d, settings.max_depth));
                true
            }
            Method::StaticHmc { .. } => false,
            _ => true,
        };
        h.init_step_size(density, &mut rng).map_err(map_err)?;
        let depth = if nuts_warmup {
            settings.max_depth as u32
        } else {
            0
        };
        let w = CollapseWatch::new(settings.step_size, depth);
        if settings.warmup > 0
            && let Some(cause) = w.check_step(h.step_size)
        {
            return Ok(Attempt::Collapsed(cause, steepest(h.gradient())));
        }
        watch = (settings.warmup > 0).then_some(w);
        ChainSampler::Hmc(Box::new(h))
    } else {
        ChainSampler::Mh(Box::new(AdaptiveMh::new(
            start.q,
            start.log_density,
            settings.mh.clone(),
            settings.warmup,
        )))
    };

    let total = settings.warmup + settings.samples;
    let report_every = match settings.refresh {
        Some(0) => usize::MAX,
        Some(n) => n,
        None => (total / 100).max(1),
    };
    let kept = |n: usize| n.div_ceil(settings.thin);
    let mut out = ChainOutput {
        draws: Vec::with_capacity(kept(settings.samples) * d),
        stats: SamplerStats::default(),
        warmup_draws: Vec::new(),
        warmup_stats: SamplerStats::default(),
        step_size: 0.0,
        inv_metric: Vec::new(),
        dense: false,
        divergences: 0,
        rejections: (0, None),
        warmup_divergences: 0,
        max_treedepth_hits: 0,
        warmup_seconds: 0.0,
        sampling_seconds: 0.0,
        warmup_cpu_seconds: None,
        sampling_cpu_seconds: None,
        n_gradients: 0,
        restarts: Vec::new(),
        iterations: 0,
    };
    let mut interrupted = false;
    let t0 = Instant::now();
    let cpu0 = thread_cpu_seconds();
    let mut done = 0;
    for c in 0..settings.warmup {
        if stop.load(Ordering::Relaxed) {
            interrupted = true;
            break;
        }
        let s = sampler.step(density, &mut rng, Some(c)).map_err(map_err)?;
        out.n_gradients += u64::from(s.n_leapfrog);
        done = c + 1;
        out.warmup_divergences += s.divergent as usize;
        if let (Some(w), ChainSampler::Hmc(h)) = (&mut watch, &sampler)
            && let Some(cause) = w.observe(&s, h.step_size)
        {
            return Ok(Attempt::Collapsed(cause, steepest(h.gradient())));
        }
        if settings.save_warmup && c % settings.thin == 0 {
            out.warmup_draws.extend_from_slice(sampler.position());
            out.warmup_stats.push(&s, is_hmc);
        }
        if (c + 1) % report_every == 0 {
            progress(ChainProgress {
                chain,
                iteration: c + 1,
                total,
                warmup: true,
                divergences: 0,
            });
        }
    }
    if settings.warmup > 0 {
        match &mut sampler {
            ChainSampler::Hmc(h) => h.finish_warmup(),
            ChainSampler::Mh(m) => m.finish_warmup(),
        }
    }
    out.warmup_seconds = t0.elapsed().as_secs_f64();
    let cpu1 = thread_cpu_seconds();
    out.warmup_cpu_seconds = cpu0.zip(cpu1).map(|(a, b)| b - a);
    match &sampler {
        ChainSampler::Hmc(h) => {
            out.step_size = h.step_size;
            out.inv_metric = h.metric.inverse_metric().to_vec();
            out.dense = matches!(h.metric, Metric::Dense { .. });
        }
        ChainSampler::Mh(m) => {
            out.step_size = m.scale();
            out.inv_metric = m.shape().to_vec();
            out.dense = settings.mh.dense;
        }
    }
    // the kept warmup draws, sent once warmup is over (so that an attempt whose warmup
    // collapses and is restarted sends none), or when a stop ended it: those made so far,
    // since with save_warmup nothing the user fitted is lost ([X]: fresh-user finding,
    // session 19: a Ctrl-C in warmup deleted the streamed files of a --save-warmup run)
    let cols = out.warmup_stats.columns();
    for i in 0..out.warmup_stats.len() {
        let row: Vec<f64> = cols.iter().map(|(_, v)| v[i]).collect();
        sink.warmup_draw(chain, &row, &out.warmup_draws[i * d..(i + 1) * d]);
    }
    if !interrupted {
        sink.adapted(chain, out.step_size, &out.inv_metric, out.dense);
    }
    let t1 = Instant::now();
    let mut row = Vec::with_capacity(7);
    if !interrupted {
        for i in 0..settings.samples {
            if stop.load(Ordering::Relaxed) {
                interrupted = true;
                break;
            }
            let s = sampler.step(density, &mut rng, None).map_err(map_err)?;
            out.n_gradients += u64::from(s.n_leapfrog);
            out.divergences += s.divergent as usize;
            if is_hmc
                && matches!(settings.method, Method::Nuts)
                && s.tree_depth as usize >= settings.max_depth
            {
                out.max_treedepth_hits += 1;
            }
            if i % settings.thin == 0 {
                out.draws.extend_from_slice(sampler.position());
                out.stats.push(&s, is_hmc);
                row.clear();
                row.extend([s.log_density, s.accept_stat]);
                if is_hmc {
                    row.extend([
                        s.step_size,
                        f64::from(s.tree_depth),
                        f64::from(s.n_leapfrog),
                        s.divergent as u8 as f64,
                        s.energy,
                    ]);
                }
                sink.draw(chain, &row, sampler.position());
            }
            done = settings.warmup + i + 1;
            if done % report_every == 0 {
                progress(ChainProgress {
                    chain,
                    iteration: done,
                    total,
                    warmup: false,
                    divergences: out.divergences,
                });
            }
        }
    }
    out.sampling_seconds = t1.elapsed().as_secs_f64();
    out.sampling_cpu_seconds = cpu1.zip(thread_cpu_seconds()).map(|(a, b)| b - a);
    sink.finish(chain, out.warmup_seconds, out.sampling_seconds);
    out.iterations = done;
    progress(ChainProgress {
        chain,
        iteration: done,
        total,
        warmup: done < settings.warmup,
        divergences: out.divergences,
    });
    Ok(Attempt::Done(Box::new(out), interrupted))
}
