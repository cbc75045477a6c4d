//! CmdStan's `fixed_param` sampler: simulation from the generated quantities. Each chain keeps
//! the parameters at one initial point and every iteration evaluates the transformed
//! parameters and generated quantities afresh (their `_rng` calls draw new values), so the
//! draws are independent simulations. It is what `--method fixed_param` runs, and what the
//! MCMC methods run on a model without parameters (d = 0), as CmdStan switches to it.
//!
//! The draws have CmdStan's fixed_param columns `lp__` (the log density at the fixed point,
//! 0 when d = 0) and `accept_stat__` (always 0), and no warmup. Chain c starts from stream
//! c + 1 of the seed (uniform(−R, R) on the unconstrained scale, R = `--init`, retried up to
//! [`MAX_INIT_TRIES`] times for a finite log density), or at the values of `--init FILE` and draws its generated quantities from
//! stream 1000 + c, as the other samplers do.

use rayon::prelude::*;

use super::*;
use crate::inference::mcmc::{ChainOutput, McmcOutput, SamplerStats};
use rand::RngExt;

/// Random starts tried per chain before giving up on a finite log density.
const MAX_INIT_TRIES: usize = 100;

/// The fixed point of chain `chain`: `given` (from `--init FILE`), else uniform(−R, R) from
/// stream chain + 1 (zeros when R = 0) with a finite log density; the log density there.
fn fixed_point(
    model: &Model,
    options: &FitOptions,
    chain: usize,
    given: Option<&[f64]>,
) -> Result<(Vec<f64>, f64), FitError> {
    let d = model.dim();
    if d == 0 {
        return Ok((Vec::new(), 0.0));
    }
    if let Some(q) = given {
        // `--init FILE`: checked finite by `inits::initial_point`
        let lp = model.log_density(q).map_err(FitError::Model)?;
        return Ok((q.to_vec(), lp));
    }
    let r = options.mcmc.init_radius;
    let mut rng = stream(options.seed, chain as u64 + 1);
    let mut last = String::new();
    for _ in 0..MAX_INIT_TRIES {
        let q: Vec<f64> = (0..d)
            .map(|_| {
                if r > 0.0 {
                    rng.random_range(-r..r)
                } else {
                    0.0
                }
            })
            .collect();
        match model.log_density(&q) {
            Ok(lp) if lp.is_finite() => return Ok((q, lp)),
            Ok(lp) => last = format!("the log density is {lp}"),
            Err(e) if e.recoverable => last = e.to_string(),
            Err(e) => return Err(FitError::Model(e)),
        }
    }
    Err(FitError::Algorithm {
        method: Method::FixedParam,
        message: format!(
            "chain {}: no initial point with a finite log density in {MAX_INIT_TRIES} tries \
             (last: {last}); give a smaller --init radius",
            chain + 1
        ),
    })
}

/// Runs `fixed_param` (module docs) with `options.mcmc.chains`, `samples` and `thin`; draws
/// are sent to `stream` as they are made. Ctrl-C or SIGTERM (the monitor's flag) stops every
/// chain at its next iteration, also from inside a long loop of the generated quantities (the
/// evaluation stops at `inference::interrupt`'s flag and its draw is dropped); the chains are
/// then trimmed to a common length ([`trim_interrupted`]).
///
/// A generated quantity that fails at a draw holds NaN there, the others keep their values,
/// and the failures are counted into [`FitResult::gq_note`] (the draw and chain of the first),
/// as for the other samplers: the draws file is written whole and `bayesc fit` exits with
/// status 3.
///
/// Errors: [`FitError::Algorithm`] when no finite starting point is found;
/// [`FitError::Constrain`] when the transformed parameters fail; [`FitError::Model`] for an
/// unrecoverable model error.
pub(super) fn fit_fixed_param(
    model: &Model,
    options: &FitOptions,
    monitor: &Monitor<'_>,
    start: Instant,
    stream: Option<&dyn McmcStream>,
) -> Result<FitResult, FitError> {
    let m = &options.mcmc;
    let d = model.dim();
    let names = draw_names(model);
    let k = names.len();
    let report_every = match m.refresh {
        Some(0) => usize::MAX,
        Some(n) => n,
        None => (m.samples / 100).max(1),
    };
    let starts = if d > 0 {
        inits::user_starts(model, options, m.chains)?
    } else {
        None
    };
    type Chain = (ChainOutput, Vec<f64>, bool, GqTally);
    let chains: Vec<Result<Chain, FitError>> = (0..m.chains)
        .into_par_iter()
        .map(|c| {
            let t0 = Instant::now();
            let given = starts.as_ref().and_then(|s| s.get(c)).map(Vec::as_slice);
            let (q, lp) = fixed_point(model, options, c, given)?;
            if let Some(s) = stream {
                s.start(c, false);
            }
            let mut gq_rng = stream_rng(options.seed, 1000 + c as u64);
            let mut stats = SamplerStats::default();
            let mut values = Vec::with_capacity(m.samples.div_ceil(m.thin.max(1)) * k);
            let mut draws = Vec::new();
            let mut interrupted = false;
            let mut done = 0;
            let mut gq_failures = GqTally::default();
            for i in 0..m.samples {
                if monitor.stop.load(Ordering::Relaxed) {
                    interrupted = true;
                    break;
                }
                if i % m.thin.max(1) == 0 {
                    // a generated quantity that fails at this draw holds NaN and is counted
                    // ([`constrained_row`]), as for the other samplers
                    let stopping = || {
                        monitor.stop.load(Ordering::Relaxed)
                            || crate::inference::interrupt::requested()
                    };
                    let row = match constrained_row(model, &q, &mut gq_rng) {
                        // Ctrl-C or SIGTERM inside a long loop of the generated quantities
                        // (`inference::interrupt`): that draw is dropped, the earlier ones kept
                        Ok((_, Some(_))) | Err(_) if stopping() => {
                            interrupted = true;
                            break;
                        }
                        Ok((row, failure)) => {
                            if let Some(f) = failure {
                                gq_failures.add(stats.lp.len() + 1, f);
                            }
                            row
                        }
                        Err(e) => return Err(FitError::Constrain(e)),
                    };
                    if let Some(s) = stream {
                        s.row(c, &[lp, 0.0], &row);
                    }
                    values.extend_from_slice(&row);
                    draws.extend_from_slice(&q);
                    stats.lp.push(lp);
                    stats.accept_stat.push(0.0);
                }
                done = i + 1;
                if done % report_every == 0 || done == m.samples {
                    (monitor.on_progress)(ProgressEvent::Chain(mcmc::ChainProgress {
                        chain: c,
                        iteration: done,
                        total: m.samples,
                        warmup: false,
                        divergences: 0,
                    }));
                }
            }
            let seconds = t0.elapsed().as_secs_f64();
            if let Some(s) = stream {
                s.finish(c, 0.0, seconds);
            }
            let out = ChainOutput {
                draws,
                stats,
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
                sampling_seconds: seconds,
                warmup_cpu_seconds: None,
                sampling_cpu_seconds: None,
                n_gradients: 0,
                restarts: Vec::new(),
                iterations: done,
            };
            Ok((out, values, interrupted, gq_failures))
        })
        .collect();
    let mut outputs = Vec::with_capacity(chains.len());
    let mut rows = Vec::with_capacity(chains.len());
    let mut interrupted = false;
    let mut gq_failures = GqTally::default();
    let mut first_gq_chain = None;
    let mut chain_ends = Vec::with_capacity(chains.len());
    for (i, c) in chains.into_iter().enumerate() {
        let (out, values, stopped, tally) = c?;
        chain_ends.push(mcmc::ChainEnd::of(&out, stopped, 0));
        if first_gq_chain.is_none() && tally.first.is_some() {
            first_gq_chain = Some(i + 1);
        }
        gq_failures.merge(tally);
        outputs.push(out);
        rows.push(values);
        interrupted |= stopped;
    }
    let mut out = McmcOutput {
        dim: d,
        // lp__ and accept_stat__ only, as Metropolis writes them
        method: mcmc::Method::Mh,
        chains: outputs,
        interrupted,
        flat: Vec::new(),
        flat_direction: None,
        notes: Vec::new(),
        parallel_chains: rayon::current_num_threads().clamp(1, chain_ends.len().max(1)),
        chain_ends,
        warmup_stopped: Vec::new(),
    };
    let mut draws = Draws {
        names,
        chains: rows,
    };
    if out.interrupted {
        trim_interrupted(&mut out, &mut draws);
    }
    let kept: usize = out.chains.iter().map(|c| c.stats.lp.len()).sum();
    let gq_note = gq_failures.note(kept, |at| {
        format!("draw {at} of chain {}", first_gq_chain.unwrap_or(1))
    });
    Ok(FitResult {
        method: Method::FixedParam,
        seed: options.seed,
        draws,
        details: FitDetails::Mcmc(Box::new(out)),
        seconds: start.elapsed().as_secs_f64(),
        vi: None,
        run_length: None,
        approx_log_densities: Vec::new(),
        approx_mean_row: None,
        warmup_draws: None,
        gq_note,
    })
}

/// Random stream `id` of `seed` (the same streams the other samplers use).
fn stream_rng(seed: u64, id: u64) -> crate::inference::rng::StreamRng {
    crate::inference::rng::stream(seed, id)
}
