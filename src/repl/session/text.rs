//! Text of the REPL's answers: help, fit headers and results, posterior-expression
//! reductions (quantiles, MCSE), aligned tables and the ELBO sparkline.

use super::*;

pub(super) fn help_text() -> String {
    let w = COMMANDS
        .iter()
        .map(|(c, a, _)| c.len() + a.len() + 1)
        .max()
        .unwrap_or(0);
    let mut s = String::from("commands:\n");
    for (c, a, h) in COMMANDS {
        let left = if a.is_empty() {
            c.to_string()
        } else {
            format!("{c} {a}")
        };
        let _ = writeln!(s, "  {left:<w$}  {h}");
    }
    s.push_str(
        "\nmodel text: a line starting with a block keyword (data, parameters, model, …) begins a\n\
         model; it continues until the braces balance, and consecutive blocks form the current model\n\
         (a typed model replaces a loaded one, with a note; blocks typed after a command begin anew).\n\
         A line starting with a command (`:fit`, `:q`, …) ends an unfinished entry, which is reported.\n\
         expressions: anything else is evaluated per draw of the last fit, e.g. `mean(beta[1] < 0)`,\n\
         `quantile(alpha, 0.9)`, `sd(alpha + beta[2])`, `median(exp(alpha))`; a bare expression\n\
         prints its mean with Monte Carlo standard error and its 5% and 95% quantiles.\n",
    );
    s
}

pub(super) fn stop_reason(s: StopReason, skipped: usize) -> &'static str {
    match s {
        StopReason::ExitRule if skipped > 0 => {
            "NOT converged (the exit rule fired after skipped updates: q stopped moving)"
        }
        StopReason::ExitRule => "converged (the smoothed-ELBO exit rule fired)",
        StopReason::MaxIterations => {
            "iteration cap reached before the exit rule fired (may not have converged)"
        }
        StopReason::Interrupted => "interrupted (Ctrl-C)",
    }
}

pub(super) fn fit_header(f: &StoredFit) -> String {
    if f.result.method == fit::Method::Optimize {
        return format!(
            "{}: optimize (seed {}), point estimate, model {}",
            f.name, f.result.seed, f.model_name
        );
    }
    format!(
        "{}: {} (seed {}), {} chain(s) × {} draws, model {}{}",
        f.name,
        f.result.method,
        f.result.seed,
        f.result.draws.chains.len(),
        f.result.draws.n_draws(),
        f.model_name,
        if f.interrupted { ", INTERRUPTED" } else { "" }
    )
}

/// Runs the fit with a progress bar and the session's stop flag.
pub(super) fn run_fit(
    model: &Model,
    options: &FitOptions,
    stop: &AtomicBool,
    fitting: &AtomicBool,
    progress: bool,
) -> Result<FitResult, fit::FitError> {
    let (len, template) = if options.method.is_mcmc() {
        (
            ((options.mcmc.warmup + options.mcmc.samples) * options.mcmc.chains) as u64,
            "{bar:30} {pos}/{len} iterations (all chains) {msg} [{elapsed} < {eta}] Ctrl-C stops"
                .to_string(),
        )
    } else {
        (
            options.qbvi.max_iter as u64,
            crate::output::progress::iteration_template(options.method, " Ctrl-C stops"),
        )
    };
    let bar = DelayedBar::new(len, template, progress);
    let chain_pos: Vec<AtomicUsize> = (0..options.mcmc.chains)
        .map(|_| AtomicUsize::new(0))
        .collect();
    let on_progress = |e: ProgressEvent| match e {
        ProgressEvent::Qbvi(p) => bar.update(p.iteration as u64, || match p.smoothed_elbo {
            Some(s) => format!("smoothed ELBO {}", fit::fmt_elbo(s)),
            None => format!("ELBO {}", fit::fmt_elbo(p.elbo)),
        }),
        ProgressEvent::Chain(p) => {
            if let Some(slot) = chain_pos.get(p.chain) {
                slot.store(p.iteration, Ordering::Relaxed);
            }
            let pos: usize = chain_pos.iter().map(|a| a.load(Ordering::Relaxed)).sum();
            bar.update(pos as u64, || {
                if p.warmup { "warmup" } else { "sampling" }.into()
            });
        }
    };
    stop.store(false, Ordering::SeqCst);
    crate::inference::interrupt::clear();
    fitting.store(true, Ordering::SeqCst);
    let monitor = Monitor {
        on_progress: &on_progress,
        stop,
    };
    let r = fit::fit(model, options, &monitor);
    fitting.store(false, Ordering::SeqCst);
    stop.store(false, Ordering::SeqCst);
    bar.finish();
    r
}

/// Whether Ctrl-C stopped the fit early. An interrupted MCMC run arrives already trimmed to
/// chains of equal length by [`fit::trim_interrupted`].
pub(super) fn was_interrupted(r: &FitResult) -> bool {
    match &r.details {
        FitDetails::Qbvi(q) => q.stop == StopReason::Interrupted,
        FitDetails::Qnvb(q) => q.stop == crate::inference::qnvb::QnvbStop::Interrupted,
        FitDetails::Mcmc(out) => out.interrupted,
        _ => false,
    }
}

/// The printed result of a fit: how it ended, the summary table and warnings; the MCMC,
/// optimisation and variational-diagnostic parts are shared with the CLI (`output::report`).
pub(super) fn result_text(
    r: &FitResult,
    options: &FitOptions,
    interrupted: bool,
    unpriored: &[String],
) -> String {
    let mut s = String::new();
    match &r.details {
        FitDetails::Mcmc(out) => return mcmc_text(r, out, options),
        FitDetails::Optimize(o) => return optimize_text(r, o),
        FitDetails::Pathfinder(p) => {
            s.push_str(&crate::output::report::pathfinder_text(r, p));
            s.push_str(&summary::format_table(
                &summary::summarize(&r.draws, false),
                false,
            ));
            s.push_str(&vi_diagnostics_text_with(r, Some(unpriored)));
            return s;
        }
        FitDetails::Qbvi(q) => {
            let worse = fit::not_converged_phrase(q, r, options);
            let diverged = fit::diverged_phrase(q, r.method);
            if let (Some(d), StopReason::ExitRule | StopReason::MaxIterations) = (&diverged, q.stop)
            {
                // as `bayesc fit` says it: the cause, and no "best" ELBO quoted
                let _ = writeln!(
                    s,
                    "NOT converged after {} iterations ({:.2} s): {} diverged: {d}",
                    q.iterations,
                    r.seconds,
                    r.method.display_name()
                );
                // what else is wrong (vlaplace's non-positive curvature)
                if let Some(w) = &worse {
                    let _ = writeln!(s, "WARNING: {w}");
                }
            } else if let (Some(w), StopReason::ExitRule | StopReason::MaxIterations) =
                (&worse, q.stop)
            {
                let _ = writeln!(
                    s,
                    "NOT converged after {} iterations ({:.2} s): {w}",
                    q.iterations, r.seconds
                );
            } else if r.method == fit::Method::Mcdropout
                && q.stop == StopReason::ExitRule
                && q.skipped_steps == 0
            {
                let _ = writeln!(
                    s,
                    "{}",
                    crate::output::report::mcdropout_stop_line(
                        q.iterations,
                        r.seconds,
                        q.best_smoothed_elbo
                    )
                );
            } else if let (Some(why), StopReason::ExitRule) =
                (exit_rule_not_converged(r, q, options), q.stop)
            {
                // the verdict of `bayesc fit` (one shared function): a collapsed q, a drift
                // along an improper direction or skipped updates are no convergence
                let _ = writeln!(
                    s,
                    "NOT converged after {} iterations ({:.2} s): {why}; best smoothed ELBO = {}",
                    q.iterations,
                    r.seconds,
                    crate::output::report::smoothed_elbo_text(q.best_smoothed_elbo)
                );
            } else {
                let _ = writeln!(
                    s,
                    "{} after {} iterations ({:.2} s); best smoothed ELBO = {}",
                    stop_reason(q.stop, q.skipped_steps),
                    q.iterations,
                    r.seconds,
                    crate::output::report::smoothed_elbo_text(q.best_smoothed_elbo)
                );
            }
            // the fit's notes, as `bayesc fit` prints them (the refinement of the mean, the
            // minibatch notes)
            for note in &q.notes {
                let _ = writeln!(s, "note: {note}");
            }
        }
        FitDetails::Qnvb(q) => {
            use crate::inference::qnvb::QnvbStop;
            let moving = r.vi.as_ref().and_then(|v| v.moving.as_deref());
            let how = match q.stop {
                QnvbStop::Converged if r.vi.as_ref().is_some_and(|v| !v.unbounded.is_empty()) => {
                    "NOT converged (the exit rule fired while q drifts along an improper \
                     direction, see below)"
                        .to_string()
                }
                QnvbStop::Converged if moving.is_some() => format!(
                    "NOT converged ({}): the exit rule fired",
                    moving.unwrap_or_default()
                ),
                QnvbStop::Converged => "converged (the smoothed-ELBO exit rule fired)".to_string(),
                QnvbStop::MaxIterations => {
                    "NOT converged: stopped at the iteration cap".to_string()
                }
                QnvbStop::Interrupted => "INTERRUPTED".to_string(),
            };
            let _ = writeln!(
                s,
                "{how} after {} iterations ({:.2} s)",
                q.iterations, r.seconds
            );
            if let (Some(plan), Some(last)) = (&options.minibatch, q.epoch_elbo.last()) {
                let _ = writeln!(
                    s,
                    "{}",
                    crate::output::report::epoch_line(plan, q.iterations, *last)
                );
            }
            // the refinement's note, as `bayesc fit` prints it
            for note in &q.notes {
                let _ = writeln!(s, "note: {note}");
            }
        }
        _ => {
            let _ = writeln!(
                s,
                "{} {} in {:.2} s",
                r.method,
                if interrupted {
                    "INTERRUPTED"
                } else {
                    "finished"
                },
                r.seconds
            );
        }
    }
    s.push('\n');
    if r.method == fit::Method::Mcdropout {
        s.push_str(&crate::output::report::mcdropout_table(&r.draws));
    } else {
        s.push_str(&summary::format_table(
            &summary::summarize(&r.draws, false),
            false,
        ));
    }
    s.push_str(&vi_diagnostics_text_with(r, Some(unpriored)));
    s
}

/// The draws restricted to the columns `cols`.
pub(super) fn select(d: &Draws, cols: &[usize]) -> Draws {
    let k = d.names.len();
    Draws {
        names: cols.iter().map(|&j| d.names[j].clone()).collect(),
        chains: d
            .chains
            .iter()
            .map(|c| {
                c.chunks(k)
                    .flat_map(|row| cols.iter().map(move |&j| row[j]))
                    .collect()
            })
            .collect(),
    }
}

/// Left-aligned first column, right-aligned others.
pub(super) fn align(cells: &[Vec<String>]) -> String {
    let cols = cells.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..cols)
        .map(|j| {
            cells
                .iter()
                .map(|r| r[j].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in cells {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(j, (c, w))| {
                if j == 0 {
                    format!("{c:<w$}")
                } else {
                    format!("{c:>w$}")
                }
            })
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// Type-7 quantile of unsorted values (NaN if any is NaN or there are none).
pub(super) fn quantile(values: &[f64], p: f64) -> f64 {
    if values.is_empty() || values.iter().any(|v| v.is_nan()) {
        return f64::NAN;
    }
    let mut v = values.to_vec();
    v.sort_unstable_by(f64::total_cmp);
    crate::diagnostics::quantile::quantile_sorted(&v, p)
}

/// Monte Carlo standard error of the mean: `diagnostics::mcse_mean` for MCMC (0 for constant
/// draws), sd/√S for independent variational draws.
pub(super) fn mcse_mean(chains: &[Vec<f64>], mcmc: bool) -> Option<f64> {
    let pooled: Vec<f64> = chains.iter().flatten().copied().collect();
    let s = pooled.len() as f64;
    if pooled.len() < 2 {
        return None;
    }
    if pooled[0].is_finite() && pooled.iter().all(|v| *v == pooled[0]) {
        return Some(0.0);
    }
    if mcmc {
        let slices: Vec<&[f64]> = chains.iter().map(Vec::as_slice).collect();
        diagnostics::mcse_mean(&slices).ok()
    } else {
        Some(diagnostics::mean_sd(&pooled).1 / s.sqrt())
    }
}

/// The printed value of a reduced expression.
pub(super) fn reduce(
    text: &str,
    r: Reduction,
    chains: &[Vec<f64>],
    mcmc: bool,
    fit: &str,
) -> String {
    let pooled: Vec<f64> = chains.iter().flatten().copied().collect();
    let (mean, sd) = diagnostics::mean_sd(&pooled);
    let mcse = mcse_mean(chains, mcmc)
        .map(|v| format_sig(v, 2))
        .unwrap_or_else(|| "NA".into());
    let n = pooled.len();
    let line = match r {
        Reduction::Summary => format!(
            "{text} = {}  (MCSE {mcse}; sd {}; 5% {}, 95% {}; {n} draws of {fit})",
            format_sig(mean, 4),
            format_sig(sd, 4),
            format_sig(quantile(&pooled, 0.05), 4),
            format_sig(quantile(&pooled, 0.95), 4)
        ),
        Reduction::Mean => format!(
            "{text} = {}  (MCSE {mcse}; {n} draws of {fit})",
            format_sig(mean, 4)
        ),
        Reduction::Sd => format!("{text} = {}  ({n} draws of {fit})", format_sig(sd, 4)),
        Reduction::Quantile(p) => format!(
            "{text} = {}  ({n} draws of {fit})",
            format_sig(quantile(&pooled, p), 4)
        ),
        Reduction::Median => format!(
            "{text} = {}  ({n} draws of {fit})",
            format_sig(quantile(&pooled, 0.5), 4)
        ),
    };
    line + &non_finite_note(&pooled)
}

/// A text sparkline of `values` in at most `width` cells (bucket means), using ▁▂▃▄▅▆▇█. The
/// scale runs from the 5% quantile of the bucket means (lower values print as ▁, so a poor
/// start does not flatten the rest) to their maximum. Returns the line and the scale ends.
pub fn sparkline(values: &[f64], width: usize) -> (String, f64, f64) {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if finite.is_empty() || width == 0 {
        return (String::new(), f64::NAN, f64::NAN);
    }
    let cells = width.min(finite.len());
    let buckets: Vec<f64> = (0..cells)
        .map(|i| {
            let a = i * finite.len() / cells;
            let b = ((i + 1) * finite.len() / cells).max(a + 1);
            finite[a..b].iter().sum::<f64>() / (b - a) as f64
        })
        .collect();
    let lo = quantile(&buckets, 0.05);
    let hi = buckets.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let line = buckets
        .iter()
        .map(|&v| {
            if hi - lo <= 0.0 {
                BARS[3]
            } else {
                let t = ((v - lo) / (hi - lo)).clamp(0.0, 1.0);
                BARS[((t * 7.0).round() as usize).min(7)]
            }
        })
        .collect();
    (line, lo, hi)
}

/// A note after a reduced expression whose draws are not all finite, so that a NaN or ∞ in the
/// answer is explained: how many draws are NaN (an argument outside a function's domain) or
/// infinite (a division by 0 or an overflow); empty when every draw is finite.
fn non_finite_note(pooled: &[f64]) -> String {
    let nan = pooled.iter().filter(|v| v.is_nan()).count();
    let inf = pooled.iter().filter(|v| v.is_infinite()).count();
    let n = pooled.len();
    let mut parts = Vec::new();
    if nan > 0 {
        parts.push(format!(
            "NaN at {nan} of {n} draws (an argument outside a function's domain, such as the \
             log of a negative value or 0/0)"
        ));
    }
    if inf > 0 {
        parts.push(format!(
            "infinite at {inf} of {n} draws (a division by 0 or an overflow, such as exp of a \
             large value)"
        ));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!("\nnote: the expression is {}", parts.join(", and "))
    }
}
