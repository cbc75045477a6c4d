//! The MCMC methods in the fit pipeline: NUTS, static HMC and Metropolis-Hastings
//! (`inference::mcmc`), their starts (`McmcInit`), constrained draws and interrupted runs.

use super::*;
use crate::inference::mcmc::DrawSink;
use std::sync::Mutex;

/// Receives an MCMC fit's output as the chains make it, on the constrained scale (for
/// streaming the draws to files: `output::stan_stream`). Called from the chains' threads;
/// chain `c`'s (0-based) calls come in order: [`McmcStream::start`], [`McmcStream::adapted`]
/// when its warmup ends, one [`McmcStream::row`] per kept post-warmup draw, and
/// [`McmcStream::finish`].
pub trait McmcStream: Sync {
    /// Chain `chain` starts; `dense`: whether its metric (MH: proposal shape) is dense.
    fn start(&self, chain: usize, dense: bool);
    /// Its warmup ended with this step size and inverse metric (length d, or d² row-major
    /// when `dense`), the values the chain's [`McmcOutput`] will hold.
    fn adapted(&self, chain: usize, step_size: f64, inv_metric: &[f64], dense: bool);
    /// A kept draw: `sampler` in the order of `inference::mcmc::sampler_columns`, `values` the
    /// constrained parameters, transformed parameters and generated quantities ([`draw_names`]
    /// order), exactly the row [`FitResult::draws`] will hold.
    fn row(&self, chain: usize, sampler: &[f64], values: &[f64]);
    /// With `save_warmup`: a kept warmup draw, as [`McmcStream::row`]; all of a chain's come
    /// just before its [`McmcStream::adapted`]. The default ignores them.
    fn warmup_row(&self, _chain: usize, _sampler: &[f64], _values: &[f64]) {}
    /// The chain ended (finished or stopped), with its warmup and sampling wall-clock seconds.
    fn finish(&self, chain: usize, warmup_seconds: f64, sampling_seconds: f64);
}

/// One chain's constrained rows, computed as its draws arrive.
struct ChainRows {
    /// Stream 1000 + c of the seed, as [`constrained_draws`] uses.
    rng: StreamRng,
    /// Kept rows × k values.
    values: Vec<f64>,
    /// Stream 2000 + c of the seed, for the generated quantities of the warmup draws (so that
    /// saving them leaves the post-warmup draws unchanged).
    warmup_rng: StreamRng,
    /// Kept warmup rows × k values (`save_warmup`).
    warmup_values: Vec<f64>,
    /// The first failure of `write_array` outside the generated quantities (the parameters'
    /// transforms or the transformed parameters); later draws of the chain are then ignored.
    error: Option<DensityError>,
    /// The kept draws at which generated quantities failed (written as NaN), per quantity,
    /// with the first failure and its 1-based draw number.
    gq_failures: GqTally,
}

impl ChainRows {
    /// The constrained row of `q` (parameters, transformed parameters, generated quantities)
    /// from `rng` (`warmup`: the warmup stream). A generated quantity that fails at this draw
    /// (an `_rng` argument outside its support, say) holds NaN and the others keep their values
    /// ([`constrained_row`]); the failure is counted for the fit's warnings: the rest of the
    /// run is not thrown away.
    fn row(&mut self, model: &Model, q: &[f64], warmup: bool) -> Result<Vec<f64>, DensityError> {
        let rng = if warmup {
            &mut self.warmup_rng
        } else {
            &mut self.rng
        };
        let (v, failure) = constrained_row(model, q, rng)?;
        if let Some(f) = failure
            && !warmup
        {
            let at = self.values.len() / v.len().max(1) + 1;
            self.gq_failures.add(at, f);
        }
        Ok(v)
    }
}

/// Maps each chain's unconstrained draws through the model as they are made (the same values,
/// in the same order, as [`constrained_draws`] afterwards), keeps them, and forwards them to the
/// optional [`McmcStream`].
struct Constrainer<'a> {
    model: &'a Model,
    chains: Vec<Mutex<ChainRows>>,
    stream: Option<&'a dyn McmcStream>,
}

impl DrawSink for Constrainer<'_> {
    fn start(&self, chain: usize, dense: bool) {
        if let Some(s) = self.stream {
            s.start(chain, dense);
        }
    }
    fn adapted(&self, chain: usize, step_size: f64, inv_metric: &[f64], dense: bool) {
        if let Some(s) = self.stream {
            s.adapted(chain, step_size, inv_metric, dense);
        }
    }
    fn draw(&self, chain: usize, sampler: &[f64], q: &[f64]) {
        let mut rows = self.chains[chain].lock().unwrap_or_else(|e| e.into_inner());
        if rows.error.is_some() {
            return;
        }
        let rows = &mut *rows;
        match rows.row(self.model, q, false) {
            Ok(v) => {
                if let Some(s) = self.stream {
                    s.row(chain, sampler, &v);
                }
                rows.values.extend(v);
            }
            Err(e) => rows.error = Some(e),
        }
    }
    fn warmup_draw(&self, chain: usize, sampler: &[f64], q: &[f64]) {
        let mut rows = self.chains[chain].lock().unwrap_or_else(|e| e.into_inner());
        if rows.error.is_some() {
            return;
        }
        let rows = &mut *rows;
        match rows.row(self.model, q, true) {
            Ok(v) => {
                if let Some(s) = self.stream {
                    s.warmup_row(chain, sampler, &v);
                }
                rows.warmup_values.extend(v);
            }
            Err(e) => rows.error = Some(e),
        }
    }
    fn finish(&self, chain: usize, warmup_seconds: f64, sampling_seconds: f64) {
        if let Some(s) = self.stream {
            s.finish(chain, warmup_seconds, sampling_seconds);
        }
    }
}

/// The error of `method` with message `e`.
fn algorithm(method: Method) -> impl Fn(&dyn fmt::Display) -> FitError {
    move |e: &dyn fmt::Display| FitError::Algorithm {
        method,
        message: e.to_string(),
    }
}

/// Runs `options.method` (NUTS, HMC or MH) with `options.mcmc`; `start` is when the fit
/// started; `stream` receives the draws as they are made. An interrupted run is trimmed by
/// [`trim_interrupted`].
///
/// Errors: see [`FitError`]; d = 0 is an algorithm error.
pub(super) fn fit_mcmc(
    model: &Model,
    options: &FitOptions,
    monitor: &Monitor<'_>,
    start: Instant,
    stream: Option<&dyn McmcStream>,
) -> Result<FitResult, FitError> {
    let seed = options.seed;
    let mut settings = McmcSettings {
        seed,
        ..options.mcmc.clone()
    };
    settings.gradient_work = settings.gradient_work.or(Some(model.gradient_work()));
    settings.method = match options.method {
        Method::Nuts => mcmc::Method::Nuts,
        Method::Hmc => match settings.method {
            mcmc::Method::StaticHmc { n_leapfrog } => mcmc::Method::StaticHmc { n_leapfrog },
            _ => mcmc::Method::StaticHmc { n_leapfrog: None },
        },
        _ => mcmc::Method::Mh,
    };
    let inits = match options.mcmc_init {
        McmcInit::Random => {
            inits::user_starts(model, options, settings.chains)?.unwrap_or_default()
        }
        McmcInit::Pathfinder => pathfinder_fit::pathfinder_inits(model, options)?,
    };
    let progress = |p: ChainProgress| (monitor.on_progress)(ProgressEvent::Chain(p));
    let sink = Constrainer {
        model,
        chains: (0..settings.chains)
            .map(|c| {
                Mutex::new(ChainRows {
                    rng: crate::inference::rng::stream(seed, 1000 + c as u64),
                    values: Vec::new(),
                    warmup_rng: crate::inference::rng::stream(seed, 2000 + c as u64),
                    warmup_values: Vec::new(),
                    error: None,
                    gq_failures: GqTally::default(),
                })
            })
            .collect(),
        stream,
    };
    let mut out = mcmc::sample_with_sink(model, &settings, &inits, &progress, monitor.stop, &sink)
        .map_err(|e| match e {
            // the model fails at every point (a size mismatch, an index out of range)
            mcmc::McmcError::Density { error, .. } if !error.recoverable => FitError::Model(error),
            e => algorithm(options.method)(&e),
        })?;
    let names = model.parameter_names();
    if names.len() == model.dim() {
        if let Some(v) = &out.flat_direction {
            out.flat = vec![crate::inference::flat::describe_direction(v, &names)];
        }
        for n in out.flat.iter_mut() {
            if let Some(i) = n
                .strip_prefix("zeta[")
                .and_then(|r| r.strip_suffix(']'))
                .and_then(|r| r.parse::<usize>().ok())
            {
                *n = names[i - 1].clone();
            }
        }
    }
    if out.flat.is_empty()
        && let Some(note) = improper_flat_prior_note(model, &out)
    {
        // first among the notes: the divergences and poor mixing that follow come from it
        out.notes.insert(0, note);
    }
    let seconds = start.elapsed().as_secs_f64();
    // the constrained rows were made as the draws came (`Constrainer`): the same values as
    // `constrained_draws` gives afterwards
    let mut rows = Vec::with_capacity(sink.chains.len());
    let mut warmup_rows = Vec::with_capacity(sink.chains.len());
    let mut gq_failures = GqTally::default();
    let mut first_gq_chain = None;
    for (c, m) in sink.chains.into_iter().enumerate() {
        let r = m.into_inner().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = r.error {
            return Err(FitError::Constrain(e));
        }
        if first_gq_chain.is_none() && r.gq_failures.first.is_some() {
            first_gq_chain = Some(c + 1);
        }
        gq_failures.merge(r.gq_failures);
        rows.push(r.values);
        warmup_rows.push(r.warmup_values);
    }
    let mut draws = Draws {
        names: draw_names(model),
        chains: rows,
    };
    if out.interrupted && settings.save_warmup {
        // the chains stopped in warmup keep their warmup draws (nothing the user fitted is
        // lost), as the streamed files of `bayesc fit --output` do
        for (c, chain) in out.chains.iter().enumerate() {
            if chain.stats.is_empty() && !chain.warmup_stats.is_empty() {
                out.warmup_stopped
                    .push(crate::inference::chain_end::WarmupStopped {
                        id: c,
                        chain: chain.clone(),
                        values: warmup_rows.get(c).cloned().unwrap_or_default(),
                    });
            }
        }
    }
    if out.interrupted {
        // the chains `trim_interrupted` keeps: those with post-warmup draws
        let mut kept = out.chains.iter().map(|c| !c.stats.is_empty());
        warmup_rows.retain(|_| kept.next().unwrap_or(false));
        trim_interrupted(&mut out, &mut draws);
    }
    let warmup_draws = settings.save_warmup.then(|| Draws {
        names: draws.names.clone(),
        chains: warmup_rows,
    });
    let kept: usize = out.chains.iter().map(|c| c.stats.len()).sum();
    let gq_note = gq_failures.note(kept, |at| {
        format!("draw {at} of chain {}", first_gq_chain.unwrap_or(1))
    });
    Ok(FitResult {
        method: options.method,
        seed,
        draws,
        details: FitDetails::Mcmc(Box::new(out)),
        seconds,
        vi: None,
        run_length: None,
        approx_log_densities: Vec::new(),
        approx_mean_row: None,
        warmup_draws,
        gq_note,
    })
}

/// |ζ| beyond which a coordinate's draws count as running off ([X]: e^50 ≈ 5·10²¹; the draws
/// of a parameter bounded on both sides with a flat prior, logistic on the unconstrained
/// scale, pass 50 with probability about e^−50).
pub const RUNAWAY_ZETA: f64 = 50.0;

/// The warning when the posterior is improper along a parameter bounded on one side only
/// (`real<lower=0> s;`) that has no prior and no data informing it (a data set of zero rows):
/// the log density without the Jacobian adjustment does not change along its coordinate at
/// any checked draw ([`crate::inference::flat::flat_in_draws`] of
/// [`Model::with_jacobian`]`(false)`), so its posterior is the improper flat prior, and its
/// unconstrained draws ran off beyond ±[`RUNAWAY_ZETA`]. The sampler's own flat check misses
/// this, since the Jacobian (e^ζ for a lower bound) still slopes. `None` otherwise. The
/// wording follows the variational fits' improper-posterior warning.
fn improper_flat_prior_note(model: &Model, out: &McmcOutput) -> Option<String> {
    let d = out.dim;
    if d == 0 {
        return None;
    }
    let draws: Vec<&[f64]> = out.chains.iter().flat_map(|c| c.draws.chunks(d)).collect();
    let runaway: Vec<usize> =
        crate::inference::flat::flat_in_draws(&model.with_jacobian(false), &draws)
            .into_iter()
            .filter(|&i| {
                draws
                    .iter()
                    .any(|z| z[i].is_nan() || z[i].abs() > RUNAWAY_ZETA)
            })
            .collect();
    if runaway.is_empty() {
        return None;
    }
    let names = crate::inference::flat::coordinate_names(&model.parameter_names(), d, &runaway);
    let names: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    Some(format!(
        "the posterior is improper: {} {} no prior (an improper flat prior) and the data do \
         not inform {} (the log density without the Jacobian adjustment does not change along \
         {} at any checked draw, as with a data set of zero rows), so the draws run off to \
         infinity and are not from a posterior; the divergences and poor mixing reported \
         follow from this. Give {} or check that the data identify {}",
        crate::words::name_list(&names, 6),
        if names.len() == 1 { "has" } else { "have" },
        if names.len() == 1 { "it" } else { "them" },
        if names.len() == 1 { "it" } else { "them" },
        if names.len() == 1 {
            "it a proper prior"
        } else {
            "them proper priors"
        },
        if names.len() == 1 { "it" } else { "them" },
    ))
}

/// The rule for an interrupted MCMC run (Ctrl-C): its chains stop at different iterations and
/// some may not have reached sampling (on 2 cores chains 3–4 may not even have started). Chains
/// with no post-warmup draws are dropped, the others are trimmed to the shortest of them, so that
/// `draws` (chain c of `draws` is chain c of `out`) and the sampler statistics of `out` stay
/// rectangular, as R-hat and ESS need. When no chain has post-warmup draws, both are left with
/// no chains. Generated quantities keep the random streams of their original chain numbers
/// (they are computed before the trim).
pub fn trim_interrupted(out: &mut McmcOutput, draws: &mut Draws) {
    let keep: Vec<bool> = out.chains.iter().map(|c| !c.stats.is_empty()).collect();
    let n = out
        .chains
        .iter()
        .map(|c| c.stats.len())
        .filter(|&n| n > 0)
        .min()
        .unwrap_or(0);
    let (d, k) = (out.dim, draws.names.len());
    let mut flags = keep.iter();
    out.chains.retain(|_| *flags.next().unwrap_or(&false));
    let mut flags = keep.iter();
    draws.chains.retain(|_| *flags.next().unwrap_or(&false));
    for c in &mut out.chains {
        let s = &mut c.stats;
        s.lp.truncate(n);
        s.accept_stat.truncate(n);
        s.stepsize.truncate(n);
        s.treedepth.truncate(n);
        s.n_leapfrog.truncate(n);
        s.divergent.truncate(n);
        s.energy.truncate(n);
        c.draws.truncate(n * d);
    }
    for c in &mut draws.chains {
        c.truncate(n * k);
    }
}
