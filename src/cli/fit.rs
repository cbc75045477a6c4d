//! `bayesc fit`: compile a model against data, run an inference method, print the summary and
//! write the requested outputs.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use rand::RngExt;

use crate::fit::args::check_args;
pub use crate::fit::args::{FitArgs, MethodArg};
use crate::fit::{self, FitDetails, FitOptions, FitResult, McmcStream, Monitor, ProgressEvent};
use crate::inference::LogDensity;
use crate::inference::qbvi::StopReason;
use crate::inference::qnvb::QnvbStop;
use crate::output::fit_files::{
    check_output_folders, place_in_output_dir, write_elbo, write_outputs,
};
use crate::output::progress::DelayedBar;
use crate::output::report::{fit_preamble, mcmc_text, optimize_text, vi_diagnostics_text_with};
use crate::output::stan_stream::ChainFiles;
use crate::output::summary;
use crate::pipeline;
use crate::syntax::source::SourceMap;

/// Prints CmdStan's progress line for chain `chain` (0-based) at `iteration` of `total`
/// (`--refresh`): `Chain [1] Iteration:  100 / 2000 [  5%]  (Warmup)`.
fn refresh_line(chain: usize, iteration: usize, total: usize, warmup: bool) -> String {
    let width = total.to_string().len();
    let pct = (100 * iteration).checked_div(total).unwrap_or(100);
    format!(
        "Chain [{}] Iteration: {iteration:>width$} / {total} [{pct:>3}%]  ({})",
        chain + 1,
        if warmup { "Warmup" } else { "Sampling" }
    )
}

/// Runs the fit; returns the exit code.
pub fn run(mut args: FitArgs) -> i32 {
    if let Err(msg) = check_args(&args) {
        eprintln!("error: {msg}");
        return super::EXIT_USAGE;
    }
    if let Err(msg) = place_in_output_dir(&mut args) {
        eprintln!("error: {msg}");
        return super::EXIT_ERROR;
    }
    if let Some(n) = args.threads {
        // The global pool can be set once per process; `bayesc fit` runs one fit.
        if let Err(e) = rayon::ThreadPoolBuilder::new()
            .num_threads(n as usize)
            .build_global()
        {
            eprintln!("error: cannot set --threads {n}: {e}");
            return super::EXIT_ERROR;
        }
    }
    // Fail before a long fit, not after it, when an output cannot be written.
    if let Err(msg) = check_output_folders(&args) {
        eprintln!("error: {msg}");
        return super::EXIT_ERROR;
    }
    let mut sources = SourceMap::new();
    let checked = match pipeline::check_file_with_data(&mut sources, &args.model, &args.data) {
        Ok(c) => c,
        Err(f) => return super::report_failure(&sources, f),
    };
    super::report_warnings(&sources, &checked.warnings);
    if args.data.is_empty() && !checked.program.data.is_empty() {
        eprintln!(
            "error: the model declares data ({}) but no data file was given; pass it with `--data FILE` (CSV or JSON)",
            checked
                .program
                .data
                .iter()
                .map(|d| d.name.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        return super::EXIT_USAGE;
    }
    super::warn_unused_data(&checked.program, &args.data);
    let data = match pipeline::load_data(&args.data) {
        Ok(d) => d,
        Err(f) => return super::report_failure(&sources, f),
    };
    let model = match pipeline::compile(&checked, &sources, &data) {
        Ok(m) => m,
        Err(f) => return super::report_failure(&sources, f),
    };
    let seed = args
        .seed
        .unwrap_or_else(|| rand::rng().random::<u32>() as u64);
    // the same options as the REPL's `:fit` (pipeline::fit_options)
    let mut options = match pipeline::fit_options(&checked, &data, &model, &args, seed) {
        Ok(setup) => {
            if let Some(note) = setup.note {
                println!("{note}");
            }
            setup.options
        }
        Err(f) => return super::report_failure(&sources, f),
    };
    // The model holds what it needs; a matrix bound from CSV columns is its own copy, so the
    // loaded files are released before fitting (docs/memory.md).
    drop(data);
    // a method refused at this dimension is said before any settings line, which would
    // otherwise describe a run that never starts (MH at d = 752: a first round of 150400 draws)
    if let Err(e) = fit::check_mh_dimension(model.dim(), options.method) {
        eprintln!("error: {e}");
        return super::EXIT_ERROR;
    }
    if !args.quiet {
        print!("{}", fit_preamble(&options, &model));
    }

    // Ctrl-C stops the fit at its next iteration; the draws made so far are reported, marked
    // as interrupted. A second Ctrl-C exits at once (status 130, nothing written): the way out
    // of a model whose log density never returns (e.g. `while (1) {}`). (Installing the handler
    // fails only if one is already installed.)
    STOP.store(false, Ordering::SeqCst);
    crate::inference::interrupt::clear();
    // SIGTERM (`kill`, a batch scheduler's time limit) stops the fit the same way.
    #[cfg(unix)]
    install_sigterm_handler();
    let _ = ctrlc::set_handler(|| {
        // also stops a long `while` loop inside one evaluation of the model
        crate::inference::interrupt::request();
        if STOP.swap(true, Ordering::SeqCst) {
            eprintln!("\ninterrupted twice: exiting without output");
            std::process::exit(130);
        }
        eprintln!("\ninterrupted: stopping at the next iteration (Ctrl-C again to quit at once)");
    });
    // MCMC draws go to the chain files as they are made (issue 13 item 7)
    let streamed = args
        .output
        .as_ref()
        // (not MH's automatic length, which reruns its chains in rounds: the last round's draws
        // are written at the end)
        .filter(|_| options.method.is_mcmc() && !options.mh_auto_length)
        .map(|path| {
            ChainFiles::new(
                path,
                &args.model,
                &options,
                &fit::draw_names(&model),
                model.dim(),
            )
        });
    // --refresh N: CmdStan's progress lines instead of the bar (N = 0: none)
    let refresh = args
        .refresh
        .filter(|_| options.method.is_mcmc() && !args.quiet);
    let result = fit_with_progress(
        &model,
        &options,
        &STOP,
        !args.quiet,
        refresh,
        streamed.as_ref().map(|f| f as &dyn McmcStream),
    );
    let result = match result {
        Ok(r) => r,
        Err(e) => {
            if let Some(files) = streamed {
                files.discard();
            }
            eprintln!("error: {e}");
            return super::EXIT_ERROR;
        }
    };
    print_result(&result, &options, Some(&checked.unpriored));
    if let (Some(path), Some(_)) = (&args.elbo_output, &result.vi) {
        match write_elbo(path, &result, &options) {
            Ok(()) => println!("\nELBO trace written to {}", path.display()),
            Err(e) => {
                eprintln!(
                    "error: cannot write the ELBO trace to `{}`: {e}",
                    path.display()
                );
                return super::EXIT_ERROR;
            }
        }
    }
    if options.mh_auto_length && !result.draws.chains.is_empty() {
        // the draws files' configuration records the length the rounds chose
        options.mcmc.samples = result.draws.n_draws() * options.mcmc.thin;
    }
    let no_draws = result.draws.chains.is_empty();
    // with --save-warmup a run stopped in warmup keeps the warmup draws streamed to its files
    let warmup_kept = no_draws && options.mcmc.save_warmup && streamed.is_some();
    if no_draws && !warmup_kept && (args.output.is_some() || args.save_fit.is_some()) {
        println!("\nnothing written: the fit has no draws");
    }
    if let Some(path) = args.output.as_ref() {
        let written = match streamed {
            Some(files) => files.finish(&result),
            None if no_draws => Ok(Vec::new()),
            None => write_outputs(path, &result, &options, &args.model),
        };
        match written {
            Ok(files) if files.is_empty() && warmup_kept => {
                println!("\nnothing written: the fit has no draws")
            }
            Ok(files) if files.is_empty() => {}
            Ok(files) if no_draws => println!(
                "\nwarmup draws written to {} (the run was stopped in warmup, so there are no \
                 post-warmup draws; each ends with `# interrupted: … (in warmup)`)",
                files.join(", ")
            ),
            Ok(files) if fit_was_interrupted(&result) => println!(
                "\ndraws written to {} ({})",
                files.join(", "),
                interrupted_files_note(&result, &options)
            ),
            Ok(files) => println!("\ndraws written to {}", files.join(", ")),
            Err(e) => {
                eprintln!("error: cannot write draws to `{}`: {e}", path.display());
                return super::EXIT_ERROR;
            }
        }
    }
    if let Some(path) = args.save_fit.as_ref().filter(|_| !no_draws) {
        let text = sources.text(checked.file);
        let mut saved = crate::predict::SavedFit::from_fit(
            &model,
            &args.model.display().to_string(),
            text,
            &result,
        )
        .with_verdict(crate::output::report::vi_not_converged(&result, &options));
        saved.interrupted = fit_was_interrupted(&result);
        if let Err(e) = saved.save(path) {
            eprintln!("error: {e}");
            return super::EXIT_ERROR;
        }
        println!("fit saved to {}", path.display());
    }
    if fit_was_interrupted(&result) {
        // The conventional exit status of a process stopped by SIGINT (128 + 2) or SIGTERM
        // (128 + 15), so that scripts do not take an incomplete fit for a finished one.
        return if TERMINATED.load(Ordering::SeqCst) {
            EXIT_TERMINATED
        } else {
            EXIT_INTERRUPTED
        };
    }
    if result.gq_note.is_some() {
        // an error of the model's generated quantities (Stan's reference manual: errors there
        // are fatal), after the outputs were written whole, as CmdStan writes them, with NaN
        // where the quantities failed (docs/generated_quantities.md)
        eprintln!(
            "error: the generated quantities failed at some draws (the ERROR above says where \
             and why); every output was written whole, with NaN for the quantities that failed \
             at those draws; exit status {}",
            super::EXIT_GQ_FAILED
        );
        return super::EXIT_GQ_FAILED;
    }
    0
}

/// Runs [`fit::fit_with_stream`] with `bayesc fit`'s progress bar on standard error (shown after
/// a second, and only when `show_bar` and standard error is a terminal; never for `optimize` and
/// `laplace`, which do not iterate visibly). Raising `stop` ends the fit at its next iteration,
/// keeping what was made (the result is then marked interrupted). Shared with the Python
/// package, whose fits show the same bar. `refresh` (MCMC only, `--refresh N`) prints
/// CmdStan's progress lines every N iterations instead of the bar (N = 0: none).
///
/// Errors: those of [`fit::fit_with_stream`].
pub fn fit_with_progress(
    model: &crate::graph::Model,
    options: &FitOptions,
    stop: &AtomicBool,
    show_bar: bool,
    refresh: Option<u64>,
    stream: Option<&dyn McmcStream>,
) -> Result<FitResult, fit::FitError> {
    // fixed_param runs no warmup
    let warmup = if options.method == fit::Method::FixedParam {
        0
    } else {
        options.mcmc.warmup
    };
    let mcmc_total = (warmup + options.mcmc.samples) * options.mcmc.chains;
    let (len, template) = if options.method.is_mcmc() {
        (
            mcmc_total as u64,
            "{bar:30} {pos}/{len} iterations (all chains) {msg} [{elapsed} < {eta}]".to_string(),
        )
    } else if options.method == fit::Method::Qnvb {
        (
            options.qnvb.max_iter as u64,
            crate::output::progress::iteration_template(options.method, ""),
        )
    } else {
        (
            options.qbvi.max_iter as u64,
            crate::output::progress::iteration_template(options.method, ""),
        )
    };
    let iterative = !matches!(options.method, fit::Method::Optimize | fit::Method::Laplace);
    let bar = DelayedBar::new(len, template, show_bar && iterative && refresh.is_none());
    let last_line: Vec<AtomicUsize> = (0..options.mcmc.chains)
        .map(|_| AtomicUsize::new(usize::MAX))
        .collect();
    let chain_pos: Vec<AtomicUsize> = (0..options.mcmc.chains)
        .map(|_| AtomicUsize::new(0))
        .collect();
    let on_progress = |e: ProgressEvent| match e {
        ProgressEvent::Qbvi(p) => bar.update(p.iteration as u64, || match p.smoothed_elbo {
            Some(s) => format!("smoothed ELBO {}", fit::fmt_elbo(s)),
            None => format!("ELBO {}", fit::fmt_elbo(p.elbo)),
        }),
        ProgressEvent::Chain(p) if refresh.is_some() => {
            let again = last_line
                .get(p.chain)
                .is_some_and(|l| l.swap(p.iteration, Ordering::Relaxed) == p.iteration);
            if refresh != Some(0) && !again {
                println!("{}", refresh_line(p.chain, p.iteration, p.total, p.warmup));
            }
        }
        ProgressEvent::Chain(p) => {
            if let Some(slot) = chain_pos.get(p.chain) {
                slot.store(p.iteration, Ordering::Relaxed);
            }
            let pos: usize = chain_pos.iter().map(|a| a.load(Ordering::Relaxed)).sum();
            bar.update(pos as u64, || {
                if p.warmup {
                    "warmup".into()
                } else {
                    "sampling".into()
                }
            });
        }
    };
    let monitor = Monitor {
        on_progress: &on_progress,
        stop,
    };
    let r = fit::fit_with_stream(model, options, &monitor, stream);
    bar.finish();
    r
}

/// Exit status after SIGTERM stopped a fit (its partial results were printed and written).
const EXIT_TERMINATED: i32 = 143;

/// Set by the SIGTERM handler (with [`STOP`]).
static TERMINATED: AtomicBool = AtomicBool::new(false);

/// Makes SIGTERM stop the fit as Ctrl-C does: the first one raises [`STOP`] (the chains stop at
/// their next iteration and what was sampled is kept and written, marked incomplete), a second
/// one exits at once with status 143. The handler only stores atomics and calls `write(2)` and
/// `_exit`, which are async-signal-safe.
#[cfg(unix)]
/// Milliseconds of the monotonic clock (`clock_gettime` is async-signal-safe).
#[cfg(unix)]
fn monotonic_ms() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write into.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64) * 1000 + (ts.tv_nsec as u64) / 1_000_000
}

/// When the first SIGTERM arrived (monotonic ms; 0 before any).
#[cfg(unix)]
static FIRST_SIGTERM_MS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A SIGTERM within this many milliseconds of the first is the same request delivered twice.
#[cfg(unix)]
const SIGNAL_REPEAT_MS: u64 = 1000;

fn install_sigterm_handler() {
    extern "C" fn on_sigterm(_signal: libc::c_int) {
        TERMINATED.store(true, Ordering::SeqCst);
        // also stops a long `while` or `for` loop inside one evaluation (an atomic store)
        crate::inference::interrupt::request();
        let now = monotonic_ms();
        let first = FIRST_SIGTERM_MS.load(Ordering::SeqCst);
        if first != 0 && now.saturating_sub(first) < SIGNAL_REPEAT_MS {
            // The same termination delivered twice (GNU `timeout` signals the process and
            // its group): not a second request.
            return;
        }
        if STOP.swap(true, Ordering::SeqCst) {
            // SAFETY: `_exit` is async-signal-safe.
            unsafe { libc::_exit(EXIT_TERMINATED) };
        }
        FIRST_SIGTERM_MS.store(now.max(1), Ordering::SeqCst);
        let msg = b"\nterminated (SIGTERM): stopping at the next iteration; the draws made so far are kept (SIGTERM again to quit at once)\n";
        // SAFETY: `write` is async-signal-safe; `msg` is a valid buffer of that length.
        unsafe { libc::write(2, msg.as_ptr().cast(), msg.len()) };
    }
    let handler: extern "C" fn(libc::c_int) = on_sigterm;
    // SAFETY: installs a handler that only touches atomics and async-signal-safe calls.
    unsafe { libc::signal(libc::SIGTERM, handler as libc::sighandler_t) };
}

/// Exit status after Ctrl-C stopped a fit (its partial results were printed and written).
const EXIT_INTERRUPTED: i32 = 130;

/// Whether Ctrl-C stopped the fit before it finished.
/// Variational and MCMC fits say so themselves (a Ctrl-C that arrives after a variational fit
/// converged, during its PSIS check or generated quantities, does not make it incomplete); for
/// the other methods, whether the stop flag was raised.
fn fit_was_interrupted(result: &FitResult) -> bool {
    result
        .stopped_early()
        .unwrap_or_else(|| STOP.load(Ordering::SeqCst))
}

/// The note after `draws written to FILES` for an interrupted fit: MCMC's kept and requested
/// draw counts, or for a variational fit the iteration it was stopped at.
fn interrupted_files_note(result: &FitResult, options: &FitOptions) -> String {
    match (&result.details, result.vi_iterations()) {
        (FitDetails::Mcmc(_), _) => format!(
            "incomplete: each ends with `# interrupted: {} of {} draws`",
            result.draws.n_draws(),
            options.mcmc.samples.div_ceil(options.mcmc.thin)
        ),
        (_, Some(k)) => format!(
            "incomplete: the fit was interrupted at iteration {k} before its exit rule; the {} \
             draws come from the approximation at that point, as the file's last comment says",
            result.draws.n_draws()
        ),
        _ => "incomplete: the fit was interrupted".to_string(),
    }
}

/// Set by the Ctrl-C handler; polled by the running fit.
static STOP: AtomicBool = AtomicBool::new(false);

/// For a minibatch fit: how many epochs ran and what the exit rule looked at.
fn epoch_note(s: &mut String, epoch_elbo: &[f64], iterations: usize, options: &FitOptions) {
    use std::fmt::Write as _;
    if let (Some(plan), Some(last)) = (&options.minibatch, epoch_elbo.last()) {
        let _ = writeln!(
            s,
            "{}",
            crate::output::report::epoch_line(plan, iterations, *last)
        );
    }
}

/// Prints convergence information and the summary table of a fit ([`result_report`]).
fn print_result(result: &FitResult, options: &FitOptions, unpriored: Option<&[String]>) {
    print!("{}", result_report(result, options, unpriored));
}

/// The text `bayesc fit` prints after a fit (without the settings line): how the method stopped
/// or converged, notes and warnings, the posterior summary table and the method's diagnostics
/// (PSIS k̂ for the approximations; R-hat, ESS, divergences for MCMC). `unpriored` names the
/// parameters without a prior (from [`crate::pipeline::Checked::unpriored`]), which the
/// variational verdicts mention. The Python package prints the same text.
pub fn result_report(
    result: &FitResult,
    options: &FitOptions,
    unpriored: Option<&[String]>,
) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    macro_rules! outln {
        ($($t:tt)*) => {{
            let _ = writeln!(s, $($t)*);
        }};
    }
    macro_rules! out {
        ($($t:tt)*) => {{
            let _ = write!(s, $($t)*);
        }};
    }
    match &result.details {
        FitDetails::Qbvi(fit) => {
            // q's mass where the density is undefined (its ELBO is -inf, no optimum) before the
            // other causes, as it is also why a refinement after the exit rule fails to settle;
            // but not before a q that is no approximation at all (`unusable`)
            let undefined = result
                .vi
                .as_ref()
                .and_then(|v| v.undefined.as_ref())
                .map(|u| u.phrase());
            let worse = if fit.unusable.is_some() {
                fit::not_converged_phrase(fit, result, options).or(undefined)
            } else {
                undefined.or_else(|| fit::not_converged_phrase(fit, result, options))
            };
            // an ELBO that ran off upwards: the cause is said and no "best" ELBO is quoted
            let diverged = fit::diverged_phrase(fit, result.method);
            match fit.stop {
                StopReason::MaxIterations | StopReason::ExitRule if diverged.is_some() => outln!(
                    "WARNING: not converged: {} diverged ({}, {:.2} s): {}. The summary below is \
                     not a posterior.",
                    result.method.display_name(),
                    crate::words::counted(fit.iterations, "iteration"),
                    result.seconds,
                    diverged.as_deref().unwrap_or_default()
                ),
                // the ELBO ended below its start: the exit rule fired on a plateau of a fit
                // that diverged (docs/bnn_methods.md, the digits BNN at β = 0.05)
                StopReason::ExitRule if worse.is_some() => outln!(
                    "WARNING: not converged: the exit rule fired after {} iterations ({:.2} s), but {}. \
                     The summary below is not a posterior.",
                    fit.iterations,
                    result.seconds,
                    worse.as_deref().unwrap_or_default()
                ),
                // MC dropout: a point estimate of the weights, no posterior to converge
                StopReason::ExitRule
                    if result.method == fit::Method::Mcdropout && fit.skipped_steps == 0 =>
                {
                    outln!(
                        "{}",
                        crate::output::report::mcdropout_stop_line(
                            fit.iterations,
                            result.seconds,
                            fit.best_smoothed_elbo
                        )
                    )
                }
                // q drifts along an improper direction: the exit rule fired on a plateau of the
                // smoothed ELBO, not at an optimum (issue 13, item 2)
                StopReason::ExitRule
                    if fit.skipped_steps == 0
                        && result
                            .vi
                            .as_ref()
                            .is_some_and(|v| v.collapsed.is_empty() && !v.unbounded.is_empty()) =>
                {
                    outln!(
                        "WARNING: not converged: the exit rule fired after {} iterations ({:.2} s), but \
                         the approximation is drifting along {} (see below), so there is no optimum \
                         to converge to; smoothed ELBO = {}",
                        fit.iterations,
                        result.seconds,
                        result
                            .vi
                            .as_ref()
                            .map(|v| crate::words::name_list(&v.unbounded, 6))
                            .unwrap_or_default(),
                        fit::fmt_elbo(fit.best_smoothed_elbo)
                    )
                }
                // "converged" only when the shared verdict (the REPL's too) finds no cause
                StopReason::ExitRule
                    if crate::output::report::exit_rule_not_converged(result, fit, options)
                        .is_none() =>
                {
                    outln!(
                        "converged: the exit rule fired after {} iterations ({:.2} s); smoothed ELBO = {}",
                        fit.iterations,
                        result.seconds,
                        fit::fmt_elbo(fit.best_smoothed_elbo)
                    )
                }
                // skipped updates: the smoothed ELBO stopped improving because q stopped moving
                StopReason::ExitRule if fit.skipped_steps > 0 => outln!(
                    "WARNING: not converged: the exit rule fired after {} iterations ({:.2} s), but {} of \
                     them skipped their update (the positive-definiteness guard), so q stopped moving \
                     rather than reaching the optimum; smoothed ELBO = {}. Use --method nuts, or \
                     start elsewhere (--random-init, other --seed).",
                    fit.iterations,
                    result.seconds,
                    fit.skipped_steps,
                    fit::fmt_elbo(fit.best_smoothed_elbo)
                ),
                // q collapsed to a point (warned about below): the ELBO stopped improving
                // because q cannot move, not because it reached the optimum
                StopReason::ExitRule => outln!(
                    "WARNING: not converged: the exit rule fired after {} iterations ({:.2} s), but the \
                     approximation collapsed to a point (see below); smoothed ELBO = {}",
                    fit.iterations,
                    result.seconds,
                    fit::fmt_elbo(fit.best_smoothed_elbo)
                ),
                StopReason::MaxIterations => outln!(
                    "WARNING: {} hit the iteration cap ({}, {:.2} s) before the exit rule fired; \
                     the approximation may not have converged.{} Best smoothed ELBO = {}",
                    result.method.display_name(),
                    crate::words::counted(fit.iterations, "iteration"),
                    result.seconds,
                    // a method that cannot approximate this posterior, or whose steps made q
                    // worse, says why below instead (more iterations would not help)
                    if fit.unusable.is_some() || worse.is_some() {
                        "".to_string()
                    } else if let Some(w) = options
                        .minibatch
                        .as_ref()
                        .and_then(|p| p.too_few_epochs(fit.iterations))
                    {
                        format!(" {w}")
                    } else if let Some(v) = result.vi.as_ref().filter(|v| !v.unbounded.is_empty()) {
                        // no interior mode and q drifting (warned about below): more
                        // iterations would drift further, not converge
                        format!(
                            " It is still moving along {}, where the density has no interior \
                             mode (see below), so more iterations would not settle it.",
                            crate::words::name_list(&v.unbounded, 6)
                        )
                    } else if options.random_start_by_request(fit.mean.len()) {
                        " Start at the mode (drop --random-init), which is usually much faster, \
                         or raise --max-iter."
                            .to_string()
                    } else {
                        " Raise --max-iter (a smaller --step-size only helps when the ELBO trace \
                         oscillates rather than climbs: it slows the fit down)."
                            .to_string()
                    },
                    crate::output::report::smoothed_elbo_text(fit.best_smoothed_elbo)
                ),
                StopReason::Interrupted => outln!(
                    "interrupted after {} iterations: the summary describes the approximation at that point",
                    fit.iterations
                ),
            }
            if let (Some(w), StopReason::MaxIterations) = (&worse, fit.stop) {
                outln!("WARNING: {w}. The summary below is not a posterior.");
            }
            epoch_note(&mut s, &fit.epoch_elbo, fit.iterations, options);
            if fit.skipped_steps > 0 && fit.stop != StopReason::ExitRule {
                outln!(
                    "note: the positive-definiteness guard skipped {} update steps",
                    fit.skipped_steps
                );
            }
            for note in &fit.notes {
                outln!("note: {note}");
            }
            if result.method == fit::Method::Mcdropout {
                outln!(
                    "summary of {} stochastic forward passes of MC dropout (masked weights; \
                     parameters without @dropout are point estimates) (constrained scale):\n",
                    result.draws.n_draws()
                );
            } else {
                outln!(
                    "posterior summary from {} draws of the fitted Gaussian (constrained scale):\n",
                    result.draws.n_draws()
                );
            }
            if result.method == fit::Method::Mcdropout {
                out!("{}", crate::output::report::mcdropout_table(&result.draws));
            } else {
                let rows = summary::summarize(&result.draws, false);
                out!("{}", summary::format_table(&rows, false));
            }
            out!("{}", vi_diagnostics_text_with(result, unpriored));
        }
        FitDetails::Qnvb(fit) => {
            match fit.stop {
                QnvbStop::Converged
                    if result.vi.as_ref().is_some_and(|v| !v.unbounded.is_empty()) =>
                {
                    outln!(
                        "WARNING: not converged: the smoothed ELBO stopped improving after {} \
                         iterations ({:.2} s), but the approximation is drifting along {} (see \
                         below), so there is no optimum to converge to",
                        fit.iterations,
                        result.seconds,
                        result
                            .vi
                            .as_ref()
                            .map(|v| crate::words::name_list(&v.unbounded, 6))
                            .unwrap_or_default()
                    )
                }
                QnvbStop::Converged
                    if let Some(why) = result.vi.as_ref().and_then(|v| v.moving.as_deref()) =>
                {
                    outln!(
                        "WARNING: not converged: the smoothed ELBO stopped improving after {} \
                         iterations ({:.2} s), but {why}. The summary below is not a posterior.",
                        fit.iterations,
                        result.seconds
                    )
                }
                QnvbStop::Converged => outln!(
                    "converged: the smoothed ELBO stopped improving after {} iterations ({:.2} s)",
                    fit.iterations,
                    result.seconds
                ),
                QnvbStop::MaxIterations => outln!(
                    "WARNING: QNVB hit the iteration cap ({} iterations, {:.2} s) before the smoothed ELBO \
                     stopped improving; the approximation may not have converged. {}",
                    fit.iterations,
                    result.seconds,
                    options
                        .minibatch
                        .as_ref()
                        .and_then(|p| p.too_few_epochs(fit.iterations))
                        .unwrap_or_else(|| "Raise --max-iter.".to_string())
                ),
                QnvbStop::Interrupted => outln!(
                    "interrupted after {} iterations: the summary describes the approximation at that point",
                    fit.iterations
                ),
            }
            epoch_note(&mut s, &fit.epoch_elbo, fit.iterations, options);
            for note in &fit.notes {
                outln!("note: {note}");
            }
            outln!(
                "posterior summary from {} draws of the fitted mean-field Gaussian (constrained scale):\n",
                result.draws.n_draws()
            );
            let rows = summary::summarize(&result.draws, false);
            out!("{}", summary::format_table(&rows, false));
            out!("{}", vi_diagnostics_text_with(result, unpriored));
        }
        FitDetails::Laplace(fit) => {
            outln!(
                "mode found by L-BFGS and Newton steps ({:.2} s; final L-BFGS check: {}); log density at the mode = {:.4}",
                result.seconds,
                fit.optimization.message,
                fit.log_density_at_mode
            );
            outln!(
                "posterior summary from {} draws of the Laplace approximation (constrained scale):\n",
                result.draws.n_draws()
            );
            let rows = summary::summarize(&result.draws, false);
            out!("{}", summary::format_table(&rows, false));
            out!("{}", vi_diagnostics_text_with(result, unpriored));
        }
        FitDetails::Pathfinder(fit) => {
            out!("{}", crate::output::report::pathfinder_text(result, fit));
            let rows = summary::summarize(&result.draws, false);
            out!("{}", summary::format_table(&rows, false));
            out!("{}", vi_diagnostics_text_with(result, unpriored));
        }
        FitDetails::Optimize(fit) => out!("{}", optimize_text(result, fit)),
        FitDetails::Mcmc(out) => out!("{}", mcmc_text(result, out, options)),
    }
    s
}
