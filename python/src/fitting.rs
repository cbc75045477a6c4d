//! Fits from Python (`_Model.fit`) and their results (`_Fit`): the CLI's option parsing and
//! fit, run with the GIL released on a worker thread while the calling thread watches for
//! Ctrl-C (KeyboardInterrupt), which stops the fit and keeps its draws as `bayesc fit` does.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use bayesc::cli::{fit_with_progress, result_report};
use bayesc::fit::args::{FitArgs, options_from_args, parse_option_words};
use bayesc::fit::{FitDetails, FitOptions, FitResult};
use bayesc::inference::qbvi::StopReason;
use bayesc::inference::qnvb::QnvbStop;
use bayesc::inference::{LogDensity, interrupt};
use bayesc::output::fit_files::write_outputs;
use bayesc::output::report::settings_line;
use bayesc::output::summary;
use bayesc::pipeline;

use crate::program::{BoundModel, render};
use crate::{FitError, OptionError, bytes_of};

/// `bayesc fit` options that write files or configure the process, which a Python fit takes
/// otherwise (`Fit.save`, the `threads` argument of `fit`).
const CLI_ONLY: [(&str, &str); 5] = [
    ("output", "use fit.save(path)"),
    ("save_fit", "use fit.save(path)"),
    (
        "elbo_output",
        "the ELBO trace is in fit.diagnostics['elbo_trace']",
    ),
    ("data", "pass the data as model.fit(data=...)"),
    ("quiet", "use progress=False"),
];

/// Refuses the options of [`CLI_ONLY`] (`--output` …) with what to use instead.
fn refuse_cli_only(args: &FitArgs) -> Result<(), String> {
    for (id, instead) in CLI_ONLY {
        if args.explicit.iter().any(|e| e == id) {
            return Err(format!(
                "error: the option `{id}` of `bayesc fit` does not apply in Python: {instead}"
            ));
        }
    }
    Ok(())
}

/// Parses the options (`words`: the CLI's, e.g. `["--method", "nuts", "--seed", "1"]`), fits
/// `bound` with the GIL released and returns the fit. `threads` runs it in a pool of that many
/// threads (the draws do not depend on it); otherwise rayon's global pool, one thread per core.
///
/// Ctrl-C (SIGINT delivered to the main thread) raises the fit's stop flag and the library's
/// interrupt flag (`inference::interrupt`, which also ends a long `while` loop in the model);
/// the fit returns what it made, marked interrupted, and the KeyboardInterrupt is consumed.
///
/// Errors: `OptionError` with the CLI's message for a bad option; `FitError` when the fit
/// cannot run (`FitError`'s message, as the CLI prints it after `error: `).
pub(crate) fn run(
    py: Python<'_>,
    bound: &Bound<'_, BoundModel>,
    words: Vec<String>,
    threads: Option<usize>,
    progress: bool,
) -> PyResult<Fit> {
    let b = bound.get();
    let prog = b.program.get();
    let args = parse_option_words(&prog.name, &words).map_err(OptionError::new_err)?;
    refuse_cli_only(&args).map_err(OptionError::new_err)?;
    let model = &*b.model;
    let seed = args.seed.unwrap_or_else(|| {
        use rand_seed::random_u32;
        random_u32() as u64
    });
    let mut options = options_from_args(&args, model.dim(), seed);
    options.mcmc.gradient_work = Some(model.gradient_work());
    options.minibatch = pipeline::plan_for_method(
        &prog.checked,
        &b.data,
        model,
        options.method,
        args.batch_size.map(|m| m as usize),
        args.batch_over.as_deref(),
    )
    .map_err(|f| OptionError::new_err(render(&prog.sources, f)))?;
    let threads = threads.or(args.threads.map(|t| t as usize));
    let stop = AtomicBool::new(false);
    let by_user = AtomicBool::new(false);
    let opts = &options;
    let outcome = py.detach(|| {
        interrupt::clear();
        std::thread::scope(|s| {
            let worker = s.spawn(|| {
                let go = || fit_with_progress(model, opts, &stop, progress, None, None);
                match threads {
                    Some(n) => rayon::ThreadPoolBuilder::new()
                        .num_threads(n)
                        .build()
                        .map(|pool| pool.install(go))
                        .map_err(|e| format!("cannot start {n} threads: {e}")),
                    None => Ok(go()),
                }
            });
            while !worker.is_finished() {
                std::thread::sleep(Duration::from_millis(50));
                if !stop.load(Ordering::SeqCst) && Python::attach(|py| py.check_signals()).is_err()
                {
                    stop.store(true, Ordering::SeqCst);
                    by_user.store(true, Ordering::SeqCst);
                    interrupt::request();
                }
            }
            worker.join()
        })
    });
    interrupt::clear();
    let result = match outcome {
        Ok(Ok(Ok(r))) => r,
        Ok(Ok(Err(e))) => return Err(FitError::new_err(e.to_string())),
        Ok(Err(msg)) => return Err(FitError::new_err(msg)),
        Err(_) => {
            return Err(FitError::new_err(
                "internal error: the fit's thread panicked (please report it with the model)",
            ));
        }
    };
    let interrupted = by_user.load(Ordering::SeqCst) || was_interrupted(&result);
    Ok(Fit {
        settings: settings_line(&options, model.dim()),
        unpriored: prog.checked.unpriored.clone(),
        model_name: prog.name.clone(),
        result,
        options,
        interrupted,
    })
}

/// Whether the fit stopped early (Ctrl-C) — as `bayesc fit` decides its exit status 130.
fn was_interrupted(r: &FitResult) -> bool {
    match &r.details {
        FitDetails::Qbvi(f) => f.stop == StopReason::Interrupted,
        FitDetails::Qnvb(f) => f.stop == QnvbStop::Interrupted,
        FitDetails::Mcmc(out) => out.interrupted,
        _ => false,
    }
}

/// Random seeds when none is given (as `bayesc fit` draws one).
mod rand_seed {
    /// A seed from the clock and the process id (the CLI prints the seed it used in the
    /// settings line; so does `Fit.report()`).
    pub(super) fn random_u32() -> u32 {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let x = (t as u64) ^ ((std::process::id() as u64) << 32);
        // splitmix64's finaliser
        let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) as u32
    }
}

/// A finished fit: the CLI's `FitResult` with the options it ran with.
#[pyclass(name = "_Fit", module = "bayesc._bayesc", frozen)]
pub struct Fit {
    result: FitResult,
    options: FitOptions,
    settings: String,
    unpriored: Vec<String>,
    model_name: String,
    interrupted: bool,
}

#[pymethods]
impl Fit {
    /// The method's name (`nuts`, `qbvi`, …).
    #[getter]
    fn method(&self) -> String {
        self.result.method.to_string()
    }

    /// The seed the fit ran with.
    #[getter]
    fn seed(&self) -> u64 {
        self.result.seed
    }

    /// Wall time of the algorithm, seconds.
    #[getter]
    fn seconds(&self) -> f64 {
        self.result.seconds
    }

    /// Whether Ctrl-C stopped the fit before it finished.
    #[getter]
    fn interrupted(&self) -> bool {
        self.interrupted
    }

    /// Whether the draws are MCMC chains (R-hat and ESS apply).
    #[getter]
    fn is_mcmc(&self) -> bool {
        self.result.method.is_mcmc()
    }

    /// The draws' column names (`alpha`, `beta[1]`, …).
    fn names(&self) -> Vec<String> {
        self.result.draws.names.clone()
    }

    /// The constrained draws as float64 bytes, chain by chain, draw by draw, column by column,
    /// with (chains, draws per chain, columns).
    fn draws<'py>(&self, py: Python<'py>) -> (Bound<'py, PyBytes>, usize, usize, usize) {
        let d = &self.result.draws;
        let flat: Vec<f64> = d.chains.iter().flatten().copied().collect();
        (
            bytes_of(py, &flat),
            d.chains.len(),
            d.n_draws(),
            d.names.len(),
        )
    }

    /// MCMC sampler statistics with Stan's names (`lp__`, `accept_stat__`, `stepsize__`,
    /// `treedepth__`, `n_leapfrog__`, `divergent__`, `energy__`), each float64 bytes of
    /// chains × draws; empty for the other methods.
    fn sample_stats<'py>(&self, py: Python<'py>) -> Vec<(String, Bound<'py, PyBytes>)> {
        let FitDetails::Mcmc(out) = &self.result.details else {
            return Vec::new();
        };
        let Some(first) = out.chains.first() else {
            return Vec::new();
        };
        first
            .stats
            .columns()
            .iter()
            .enumerate()
            .map(|(j, (name, _))| {
                let all: Vec<f64> = out
                    .chains
                    .iter()
                    .flat_map(|c| c.stats.columns().swap_remove(j).1)
                    .collect();
                (name.to_string(), bytes_of(py, &all))
            })
            .collect()
    }

    /// The summary table's rows as the CLI computes them: (name, mean, sd, 5%, 50%, 95%,
    /// MCSE, ESS_bulk, ESS_tail, R_hat), the last four `None` for non-MCMC fits.
    #[allow(clippy::type_complexity)]
    fn summary_rows(
        &self,
    ) -> Vec<(
        String,
        f64,
        f64,
        f64,
        f64,
        f64,
        Option<f64>,
        Option<f64>,
        Option<f64>,
        Option<f64>,
    )> {
        summary::summarize(&self.result.draws, self.result.method.is_mcmc())
            .into_iter()
            .map(|r| {
                (
                    r.name,
                    r.mean,
                    r.sd,
                    r.q5,
                    r.q50,
                    r.q95,
                    r.mcse_mean,
                    r.ess_bulk,
                    r.ess_tail,
                    r.rhat,
                )
            })
            .collect()
    }

    /// The summary table as the CLI prints it.
    fn summary_text(&self) -> String {
        let mcmc = self.result.method.is_mcmc();
        summary::format_table(&summary::summarize(&self.result.draws, mcmc), mcmc)
    }

    /// Everything `bayesc fit` prints for this fit: the settings line, how it stopped, the
    /// summary table and the diagnostics.
    fn report(&self) -> String {
        format!(
            "{}\n{}",
            self.settings,
            result_report(&self.result, &self.options, Some(&self.unpriored))
        )
    }

    /// The method's diagnostics as a dict (see `bayesc.Fit.diagnostics`).
    fn diagnostics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("method", self.result.method.to_string())?;
        d.set_item("seconds", self.result.seconds)?;
        d.set_item("interrupted", self.interrupted)?;
        match &self.result.details {
            FitDetails::Mcmc(out) => {
                let ch = &out.chains;
                d.set_item(
                    "divergences",
                    ch.iter().map(|c| c.divergences).collect::<Vec<_>>(),
                )?;
                d.set_item(
                    "max_treedepth_hits",
                    ch.iter().map(|c| c.max_treedepth_hits).collect::<Vec<_>>(),
                )?;
                d.set_item(
                    "step_size",
                    ch.iter().map(|c| c.step_size).collect::<Vec<_>>(),
                )?;
                d.set_item(
                    "mean_accept_stat",
                    ch.iter().map(|c| c.mean_accept_stat()).collect::<Vec<_>>(),
                )?;
                d.set_item(
                    "e_bfmi",
                    ch.iter()
                        .map(|c| {
                            bayesc::diagnostics::hmc_stats::e_bfmi(&c.stats.energy)
                                .unwrap_or(f64::NAN)
                        })
                        .collect::<Vec<_>>(),
                )?;
                d.set_item(
                    "n_gradients",
                    ch.iter().map(|c| c.n_gradients).collect::<Vec<_>>(),
                )?;
                d.set_item(
                    "dense_metric",
                    ch.iter().map(|c| c.dense).collect::<Vec<_>>(),
                )?;
                d.set_item(
                    "restarts",
                    ch.iter()
                        .flat_map(|c| c.restarts.clone())
                        .collect::<Vec<_>>(),
                )?;
                let mut warnings = out.warnings(&self.options.mcmc);
                warnings.extend(bayesc::output::report::hmc_warnings(out, &self.options));
                let rows = summary::summarize(&self.result.draws, true);
                warnings.extend(summary::convergence_warnings_for(&rows, &self.result.draws));
                // the generated quantities that failed at some draws (an error of the fit's
                // outputs, reported apart from the sampler's warnings; kept in this list)
                warnings.extend(self.result.gq_note.clone());
                d.set_item("warnings", warnings)?;
            }
            _ => {
                if let Some(vi) = &self.result.vi {
                    d.set_item("khat", vi.khat)?;
                    d.set_item("psis_ess", vi.psis_ess)?;
                    d.set_item("elbo", vi.elbo)?;
                    d.set_item("elbo_trace", vi.trace.clone())?;
                }
            }
        }
        Ok(d)
    }

    /// Writes the draws in Stan's CSV layout as `bayesc fit --output PATH` does (MCMC: one file
    /// per chain, `PATH_1.csv` …); returns the files written. Raises `OSError`.
    fn save(&self, path: &str) -> PyResult<Vec<String>> {
        if self.result.draws.chains.is_empty() {
            return Err(FitError::new_err("nothing to write: the fit has no draws"));
        }
        let mut options = self.options.clone();
        if options.mh_auto_length {
            options.mcmc.samples = self.result.draws.n_draws() * options.mcmc.thin;
        }
        write_outputs(
            Path::new(path),
            &self.result,
            &options,
            Path::new(&self.model_name),
        )
        .map_err(|e| {
            pyo3::exceptions::PyOSError::new_err(format!("cannot write draws to `{path}`: {e}"))
        })
    }
}
