//! `bayesc fit`: compile a model against data, run an inference method, print the summary and
//! write the requested outputs.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use rand::RngExt;

use crate::fit::{self, FitDetails, FitOptions, FitResult};
use crate::inference::LogDensity;
use crate::inference::qbvi::{Control, Covariance, StopReason};
use crate::output::{draws_csv, summary};
use crate::pipeline;
use crate::syntax::source::SourceMap;

use super::progress::DelayedBar;

/// Inference methods offered by `bayesc fit --method`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum MethodArg {
    /// Quasi black-box variational inference with natural gradients (Gaussian posterior on the
    /// unconstrained scale; Magris et al. 2022).
    Qbvi,
}

impl From<MethodArg> for fit::Method {
    fn from(m: MethodArg) -> Self {
        match m {
            MethodArg::Qbvi => fit::Method::Qbvi,
        }
    }
}

/// Arguments of `bayesc fit`.
#[derive(Args, Debug)]
pub struct FitArgs {
    /// The model file (.bayes).
    pub model: PathBuf,
    /// Data files (CSV with a header row, or JSON in Stan's format); repeat for several files.
    #[arg(long = "data", value_name = "FILE")]
    pub data: Vec<PathBuf>,
    /// Inference method.
    #[arg(long, value_enum, default_value_t = MethodArg::Qbvi)]
    pub method: MethodArg,
    /// Random seed; a fit is reproducible for a given seed whatever the number of threads.
    /// Without it a seed is drawn and printed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Number of posterior draws to report and write (variational methods).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    pub draws: u64,
    /// Write the posterior draws (constrained scale) to this CSV file.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// QBVI: use a diagonal (mean-field) Gaussian instead of a full covariance.
    #[arg(long)]
    pub diagonal: bool,
    /// QBVI: Monte Carlo draws per iteration (N_s).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(2..))]
    pub mc_samples: u64,
    /// QBVI: maximum number of iterations.
    #[arg(long, default_value_t = 5000, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_iter: u64,
    /// QBVI: step size β in (0, 1); by default 0.05 (diagonal) or min(0.05, 0.005·N_s/d) (full).
    #[arg(long)]
    pub step_size: Option<f64>,
    /// Do not print the progress bar or the settings line.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// Runs the fit; returns the exit code.
pub fn run(args: FitArgs) -> i32 {
    let mut sources = SourceMap::new();
    let checked = match pipeline::check_file(&mut sources, &args.model) {
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
    let data = match pipeline::load_data(&args.data) {
        Ok(d) => d,
        Err(f) => return super::report_failure(&sources, f),
    };
    let model = match pipeline::compile(&checked, &data) {
        Ok(m) => m,
        Err(f) => return super::report_failure(&sources, f),
    };
    let seed = args
        .seed
        .unwrap_or_else(|| rand::rng().random::<u32>() as u64);
    let mut options = FitOptions::new(args.method.into(), seed);
    options.vi_draws = args.draws as usize;
    options.qbvi.covariance = if args.diagonal {
        Covariance::Diagonal
    } else {
        Covariance::Full
    };
    options.qbvi.n_samples = args.mc_samples as usize;
    options.qbvi.step_size = args.step_size;
    options.qbvi.max_iter = args.max_iter as usize;
    if let Some(b) = args.step_size
        && !(b > 0.0 && b < 1.0)
    {
        eprintln!("error: --step-size must be in (0, 1), got {b}");
        return super::EXIT_USAGE;
    }
    if !args.quiet {
        let d = model.dim();
        println!(
            "method = qbvi ({} covariance, residual form); d = {d} unconstrained parameters; N_s = {}; step size = {:.4}; max_iter = {}; seed = {seed}",
            if args.diagonal { "diagonal" } else { "full" },
            options.qbvi.n_samples,
            options.qbvi.effective_step_size(d),
            options.qbvi.max_iter
        );
    }
    let mut bar = DelayedBar::new(
        options.qbvi.max_iter as u64,
        "{spinner} QBVI iteration {pos}, {msg} [{elapsed}]",
    );
    let quiet = args.quiet;
    let result = fit::fit(&model, &options, &mut |p| {
        if !quiet {
            bar.update(p.iteration as u64, || match p.smoothed_elbo {
                Some(s) => format!("smoothed ELBO {s:.3}"),
                None => format!("ELBO {:.3}", p.elbo),
            });
        }
        Control::Continue
    });
    bar.finish();
    let result = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return super::EXIT_ERROR;
        }
    };
    print_result(&result);
    if let Some(path) = &args.output {
        if let Err(e) = draws_csv::write_draws_csv(path, &result.draws) {
            eprintln!("error: cannot write draws to `{}`: {e}", path.display());
            return super::EXIT_ERROR;
        }
        println!("\ndraws written to {}", path.display());
    }
    0
}

/// Prints convergence information and the summary table of a fit.
fn print_result(result: &FitResult) {
    match &result.details {
        FitDetails::Qbvi(fit) => {
            match fit.stop {
                StopReason::ExitRule => println!(
                    "converged: the exit rule fired after {} iterations ({:.2} s); smoothed ELBO = {:.3}",
                    fit.iterations, result.seconds, fit.best_smoothed_elbo
                ),
                StopReason::MaxIterations => println!(
                    "WARNING: QBVI hit the iteration cap ({} iterations, {:.2} s) before the exit rule fired; \
                     the approximation may not have converged. Raise --max-iter or lower --step-size. \
                     Best smoothed ELBO = {:.3}",
                    fit.iterations, result.seconds, fit.best_smoothed_elbo
                ),
                StopReason::Interrupted => {
                    println!("interrupted after {} iterations", fit.iterations)
                }
            }
            if fit.skipped_steps > 0 {
                println!(
                    "note: the positive-definiteness guard skipped {} update steps",
                    fit.skipped_steps
                );
            }
            println!(
                "posterior summary from {} draws of the fitted Gaussian (constrained scale):\n",
                result.draws.n_draws()
            );
            let rows = summary::summarize(&result.draws, false);
            print!("{}", summary::format_table(&rows, false));
        }
    }
}
