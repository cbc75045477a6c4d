//! The run length of Metropolis–Hastings chosen from measured mixing (issue 13, item 10).
//!
//! Random-walk Metropolis mixes slowly on correlated posteriors: at the fixed default length
//! max(2000, 200·d) (`specs/mh.md` §6), six correlated posteriors with d = 4–10 ended at R-hat
//! 1.011–1.032, unbiased, and passed at 20 000 draws. When the user gave no `--samples`, the
//! fit instead runs in rounds: after each round the bulk-ESS and rank-normalised split R-hat of
//! every column (Vehtari et al. 2021, `specs/diagnostics.md`) are measured, and the fit stops
//! once min bulk-ESS ≥ [`MH_ESS_TARGET`] and max R-hat < [`MH_RHAT_TARGET`] (the thresholds
//! of the convergence warnings). Otherwise the next length is the one those measurements say
//! is needed (ESS grows in proportion to the length; R-hat − 1 shrinks about as 1/length for
//! chains that have found the same distribution) times [`MH_LENGTH_MARGIN`], at least
//! [`MH_MIN_GROWTH`] and at most [`MH_MAX_GROWTH`] times the last, within the budget: [`MH_MAX_SAMPLES`] draws per chain, at
//! most [`MH_MAX_ROUNDS`] rounds, and the memory check of `fit::limits`. A round is a complete
//! run with the same seed and the new length (warmup included), so the result is reproducible
//! and is exactly what `--samples N` with the chosen N gives.

use super::*;

/// Total bulk-ESS the default MH run aims for (over all chains; 100 per chain for 4 chains).
pub const MH_ESS_TARGET: f64 = 400.0;
/// R-hat below which the default MH run counts as mixed.
pub const MH_RHAT_TARGET: f64 = 1.01;
/// Budget of the default MH run: post-warmup draws per chain (the slow-mixing cases
/// passed at 20 000; the ESS and R-hat of a chain that does not mix cost time superlinear in
/// its length: 1.6 s at 4 × 20 000 draws, 11 s at 4 × 50 000 on a bimodal target).
pub const MH_MAX_SAMPLES: usize = 20_000;
/// Largest growth of the length between rounds.
pub const MH_MAX_GROWTH: f64 = 4.0;
/// Budget of the default MH run: rounds.
pub const MH_MAX_ROUNDS: usize = 6;
/// Safety factor on the estimated length needed.
pub const MH_LENGTH_MARGIN: f64 = 1.3;
/// Smallest growth of the length between rounds.
pub const MH_MIN_GROWTH: f64 = 1.5;

/// (max R-hat, min bulk-ESS) over the columns of `draws` that vary (NaN-free), with the names
/// of the worst columns; `None` when no column can be measured.
fn mixing(draws: &Draws) -> Option<(f64, String, f64, String)> {
    let mut worst: Option<(f64, String, f64, String)> = None;
    for (j, name) in draws.names.iter().enumerate() {
        let cols = draws.column(j);
        let slices: Vec<&[f64]> = cols.iter().map(Vec::as_slice).collect();
        let (Ok(r), Ok(e)) = (
            crate::diagnostics::rhat(&slices),
            crate::diagnostics::ess::ess_bulk(&slices),
        ) else {
            continue;
        };
        if !r.is_finite() || !e.is_finite() {
            continue;
        }
        let w = worst.get_or_insert((r, name.clone(), e, name.clone()));
        if r > w.0 {
            (w.0, w.1) = (r, name.clone());
        }
        if e < w.2 {
            (w.2, w.3) = (e, name.clone());
        }
    }
    worst
}

/// Runs Metropolis–Hastings (`options.method == Method::Mh`) with the length chosen from
/// measured mixing (see the module doc), starting from `options.mcmc.samples`. The returned
/// [`FitResult::run_length`] says the length chosen and why, or, when the budget ran out, a
/// line starting "WARNING" with the length estimated to be needed. An interrupted round is
/// returned as it is. Errors: those of the MCMC fit.
pub(super) fn fit_mh_auto(
    model: &Model,
    options: &FitOptions,
    monitor: &Monitor<'_>,
    start: Instant,
) -> Result<FitResult, FitError> {
    let mut o = options.clone();
    let mut n = o.mcmc.samples.max(1);
    let mut round = 0;
    loop {
        round += 1;
        o.mcmc.samples = n;
        let mut r = mcmc_fit::fit_mcmc(model, &o, monitor, start, None)?;
        if matches!(&r.details, FitDetails::Mcmc(m) if m.interrupted) {
            return Ok(r);
        }
        let Some((rhat, rname, ess, ename)) = mixing(&r.draws) else {
            return Ok(r);
        };
        // with thinning, n iterations per chain keep fewer draws (those measured)
        let length = if o.mcmc.thin > 1 {
            format!(
                "{n} iterations per chain ({} draws kept, thin = {})",
                r.draws.n_draws(),
                o.mcmc.thin
            )
        } else {
            format!("{n} draws per chain")
        };
        let mix = format!("bulk-ESS {ess:.0} (min, {ename}), R-hat {rhat:.3} (max, {rname})");
        let measured = format!("{mix} at {length}");
        if rhat < MH_RHAT_TARGET && ess >= MH_ESS_TARGET {
            r.run_length = Some(format!(
                "run length: {length}, chosen from measured mixing in {round} round(s): {mix} meet the targets bulk-ESS >= {MH_ESS_TARGET:.0} and R-hat < {MH_RHAT_TARGET} (--samples N fixes the length)"
            ));
            return Ok(r);
        }
        let by_ess = n as f64 * MH_ESS_TARGET / ess.max(1.0);
        let by_rhat = n as f64 * (rhat - 1.0).max(0.0) / (MH_RHAT_TARGET - 1.0);
        let needed = (by_ess.max(by_rhat) * MH_LENGTH_MARGIN)
            .max(n as f64 * MH_MIN_GROWTH)
            .ceil();
        let capped = needed.min(n as f64 * MH_MAX_GROWTH);
        let mut next = (capped.min(MH_MAX_SAMPLES as f64)) as usize;
        let mut trial = o.clone();
        trial.mcmc.samples = next;
        if check_memory(model, &trial).is_err() {
            // the largest length that fits, if any is longer than this round
            let mut lo = n;
            let mut hi = next;
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                trial.mcmc.samples = mid;
                if check_memory(model, &trial).is_ok() {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            next = lo;
        }
        if round >= MH_MAX_ROUNDS || next <= n {
            let why = if next <= n && n < MH_MAX_SAMPLES {
                "the memory available".to_string()
            } else if round >= MH_MAX_ROUNDS {
                format!("{MH_MAX_ROUNDS} rounds")
            } else {
                format!("{MH_MAX_SAMPLES} draws per chain")
            };
            r.run_length = Some(format!(
                "WARNING: run length: the budget ({why}) ran out before the chains mixed: {measured}; about {:.0} draws per chain are estimated to be needed for bulk-ESS >= {MH_ESS_TARGET:.0} and R-hat < {MH_RHAT_TARGET}. Use --method nuts, or run with --samples {:.0}.",
                needed, needed
            ));
            return Ok(r);
        }
        n = next;
    }
}
