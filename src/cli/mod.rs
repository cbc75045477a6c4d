//! The command-line interface (clap). The only place, with the REPL, that prints or sets exit
//! codes: 0 success, 1 an error in the model, the data or the fit, 2 a usage error.

mod check;
mod diagnose;
mod evaluate;
pub(crate) mod fit;
mod plot;
mod predict;
mod summary;

pub use fit::{fit_with_progress, result_report};

use clap::{Parser, Subcommand};

use crate::pipeline::Failure;
use crate::syntax::report;
use crate::syntax::source::SourceMap;

/// Exit code for errors in the model, the data or the fit.
pub const EXIT_ERROR: i32 = 1;
/// Exit code for command-line usage errors.
pub const EXIT_USAGE: i32 = 2;
/// Exit code of `bayesc fit` when the fit ran and every output was written whole, but the
/// generated quantities failed at some draws, which hold NaN for them (an error in Stan's
/// terms; docs/generated_quantities.md).
pub const EXIT_GQ_FAILED: i32 = 3;

#[derive(Parser, Debug)]
#[command(
    name = "bayesc",
    version,
    about = "Fit Bayesian models written in the .bayes language",
    long_about = "bayesc compiles a .bayes model (Stan-like blocks: data, transformed data, parameters, \
                  transformed parameters, model, generated quantities) into a log density on the \
                  unconstrained scale with gradients, and fits it by variational inference (QBVI, QNVB), \
                  the Laplace approximation, optimisation (MLE / posterior mode) or MCMC.\n\nExample:\n  bayesc fit examples/labour/model.bayes --data examples/labour/labour.csv"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Fit a model to data and print a posterior summary.
    Fit(fit::FitArgs),
    /// Find the (penalised) maximum-likelihood estimate or posterior mode: the same as
    /// `fit --method optimize`.
    Optimize(fit::FitArgs),
    /// Check a model (and optionally bind data) without fitting.
    Check(check::CheckArgs),
    /// Compare the model's gradient with finite differences at a point (as CmdStan's
    /// `diagnose`); exit code 1 when they disagree.
    Diagnose(diagnose::DiagnoseArgs),
    /// Recompute the posterior summary from saved draws files.
    Summary(summary::SummaryArgs),
    /// Draw a trace, rank, pair, density, forest, ELBO or posterior predictive plot of saved
    /// draws files as SVG or PNG.
    Plot(plot::PlotArgs),
    /// Interactive session: load or type a model, fit it, inspect and compare posteriors
    /// (reads commands from standard input when it is not a terminal).
    Repl,
    /// Evaluate generated quantities on new data for every draw of a saved fit.
    Predict(predict::PredictArgs),
    /// Fit on a training split and report predictive metrics on training and test sets.
    Evaluate(evaluate::EvaluateArgs),
}

/// Runs the command line in `std::env::args` and returns the process exit code.
pub fn run() -> i32 {
    use clap::FromArgMatches;
    let parsed = command()
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m).map(|cli| (cli, m)));
    let (mut cli, matches) = match parsed {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { EXIT_USAGE } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    // which options were typed (not defaulted): `check_args` refuses those of other methods
    if let (Command::Fit(args) | Command::Optimize(args), Some((_, sub))) =
        (&mut cli.command, matches.subcommand())
    {
        args.note_explicit(sub, &[]);
    }
    match cli.command {
        Command::Fit(args) => fit::run(args),
        Command::Optimize(mut args) => {
            if !matches!(args.method, fit::MethodArg::Qbvi | fit::MethodArg::Optimize) {
                eprintln!(
                    "error: `bayesc optimize` runs the optimizer; for another method use `bayesc fit --method …`"
                );
                return EXIT_USAGE;
            }
            args.method = fit::MethodArg::Optimize;
            fit::run(args)
        }
        Command::Check(args) => check::run(args),
        Command::Diagnose(args) => diagnose::run(args),
        Command::Summary(args) => summary::run(args),
        Command::Plot(args) => plot::run(args),
        Command::Repl => crate::repl::run(),
        Command::Predict(args) => predict::run(args),
        Command::Evaluate(args) => evaluate::run(args),
    }
}

/// The options of `bayesc fit` that `bayesc optimize` accepts; its `--help` hides the others
/// (which it refuses when given, as `fit --method optimize` does).
const OPTIMIZE_FLAGS: &[&str] = &[
    "model",
    "data",
    "seed",
    "output",
    "output_dir",
    "sig_figs",
    "quiet",
    "threads",
    "save_fit",
    "jacobian",
    "se",
    "algorithm",
    "iter",
    "tol_obj",
    "tol_rel_obj",
    "tol_grad",
    "tol_rel_grad",
    "tol_param",
    "history_size",
    "init",
];

/// The clap command of the CLI, with each subcommand's help listing only the options it
/// accepts (`bayesc optimize` shares `fit`'s arguments but not its sampler and variational
/// options).
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    Cli::command().mut_subcommand("optimize", |sub| {
        let ids: Vec<String> = sub
            .get_arguments()
            .map(|a| a.get_id().as_str().to_string())
            .collect();
        ids.iter().fold(sub, |sub, id| {
            if OPTIMIZE_FLAGS.contains(&id.as_str()) || id == "help" || id == "version" {
                if id == "history_size" {
                    sub.mut_arg(id, |a| {
                        a.help_heading("Optimization").help(
                            "Correction pairs in the L-BFGS inverse-Hessian estimate \
                             (CmdStan's history_size; default 5); lbfgs only",
                        )
                    })
                } else {
                    sub
                }
            } else {
                sub.mut_arg(id, |a| a.hide(true))
            }
        })
    })
}

/// Prints a pipeline failure to standard error and returns [`EXIT_ERROR`] ([`EXIT_USAGE`] for
/// [`Failure::Usage`]).
fn report_failure(sources: &SourceMap, failure: Failure) -> i32 {
    let code = match failure {
        Failure::Usage(_) => EXIT_USAGE,
        _ => EXIT_ERROR,
    };
    for diag in failure.into_reports() {
        report::emit_stderr(sources, &diag);
    }
    code
}

/// Prints warnings (non-fatal diagnostics) to standard error.
fn report_warnings(sources: &SourceMap, warnings: &[crate::pipeline::Report]) {
    for diag in warnings {
        report::emit_stderr(sources, diag);
    }
}

/// Warns on standard error when `files` were given to a model with no `data` block: the fit
/// would see only the priors (`fit` and `check` alike).
pub(crate) fn warn_unused_data(
    program: &crate::syntax::ast::Program,
    files: &[std::path::PathBuf],
) {
    if !program.data.is_empty() || files.is_empty() {
        return;
    }
    let names: Vec<String> = files.iter().map(|f| format!("`{}`", f.display())).collect();
    let which = match names.len() {
        1 => format!("{} is", names[0]),
        _ => format!("{} are", crate::words::name_list(&names, 6)),
    };
    eprintln!(
        "warning: the model has no `data` block, so {which} not used: the fit sees only the \
         priors (declare the variables in a `data {{ … }}` block to use them)"
    );
}
