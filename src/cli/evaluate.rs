//! `bayesc evaluate`: fit a model on the training rows of a CSV file (or on a training file, with
//! a separate test file, CSV or JSON) and report posterior-predictive scores and the QBVI paper's
//! point-estimate metrics on the training and test rows, beside a maximum-likelihood fit (module
//! `crate::evaluate` documents the per-row `log_lik`/`y_hat` convention).

use std::path::PathBuf;

use clap::Args;

use crate::data::DataSource;
use crate::evaluate::{self, Compiled, Scored, SplitMode};
use crate::fit::FitOptions;
use crate::pipeline::{self, Checked};
use crate::syntax::source::SourceMap;

use super::fit::MethodArg;

/// Arguments of `bayesc evaluate`.
#[derive(Args, Debug)]
pub struct EvaluateArgs {
    /// The Bayesian model (.bayes), with generated quantities `log_lik[n]` and `y_hat[n]`.
    pub model: PathBuf,
    /// The data (CSV, or JSON with `--test-data`); CSV rows are split into training and test sets.
    #[arg(long = "data", value_name = "FILE")]
    pub data: PathBuf,
    /// A separate test set (CSV or JSON) instead of a split (`--data` is then the training set).
    #[arg(long, value_name = "FILE", conflicts_with = "split")]
    pub test_data: Option<PathBuf>,
    /// Fraction of the rows used for training.
    #[arg(long, default_value_t = 0.75)]
    pub split: f64,
    /// Seed of the random split; without it the first rows train and the last rows test (for
    /// time series).
    #[arg(long)]
    pub split_seed: Option<u64>,
    /// The observed outcome: a data variable, or a generated quantity of the same length as
    /// `log_lik` (for an outcome computed in transformed data). Default: the name in a
    /// `// @outcome NAME` comment of the model.
    #[arg(long)]
    pub outcome: Option<String>,
    /// A model without priors whose log density is the log-likelihood (same `log_lik`/`y_hat`
    /// convention); its maximum-likelihood estimate is scored beside the Bayesian fit.
    #[arg(long, value_name = "FILE")]
    pub ml_model: Option<PathBuf>,
    /// Bayesian inference method.
    #[arg(long, value_enum, default_value_t = MethodArg::Qbvi)]
    pub method: MethodArg,
    /// Seed of the fit.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// `bayesc fit`'s options for `args.method` and `args.seed` on the training data, from
/// [`pipeline::fit_options`] with every other fit argument at its default.
///
/// Errors: those of [`pipeline::fit_options`] (a method's minibatch plan on this data).
fn fit_options_as_bayesc_fit(
    args: &EvaluateArgs,
    checked: &Checked,
    train: &[DataSource],
    model: &crate::graph::Model,
) -> Result<FitOptions, pipeline::Failure> {
    use clap::Parser;
    /// `bayesc fit`'s argument parser, to fill the defaults.
    #[derive(Parser)]
    struct Line {
        #[command(flatten)]
        fit: crate::fit::args::FitArgs,
    }
    use clap::ValueEnum;
    let method = args
        .method
        .to_possible_value()
        .map(|v| v.get_name().to_string())
        .unwrap_or_default();
    let line = Line::try_parse_from(["fit", "model.bayes", "--method", &method])
        .expect("the default fit arguments parse");
    Ok(pipeline::fit_options(checked, train, model, &line.fit, args.seed)?.options)
}

/// Loads one data file (CSV or JSON).
fn load_one(path: &PathBuf) -> Result<DataSource, pipeline::Failure> {
    Ok(pipeline::load_data(std::slice::from_ref(path))?.remove(0))
}

/// Runs the evaluation; returns the exit code.
pub fn run(args: EvaluateArgs) -> i32 {
    let mut sources = SourceMap::new();
    // checked with the training data's sizes, as `fit` is (the test set gives the same names)
    let data_files = [args.data.clone()];
    let checked = match pipeline::check_file_with_data(&mut sources, &args.model, &data_files) {
        Ok(c) => c,
        Err(f) => return super::report_failure(&sources, f),
    };
    super::report_warnings(&sources, &checked.warnings);
    let outcome = match args
        .outcome
        .clone()
        .or_else(|| evaluate::outcome_annotation(sources.text(checked.file)))
    {
        Some(o) => o,
        None => {
            eprintln!(
                "error: which variable is the outcome? Pass `--outcome NAME` or add a comment `// @outcome NAME` to the model"
            );
            return super::EXIT_USAGE;
        }
    };
    let ml_checked = match &args.ml_model {
        None => None,
        Some(p) => match pipeline::check_file(&mut sources, p) {
            Ok(c) => Some(c),
            Err(f) => return super::report_failure(&sources, f),
        },
    };
    let data = match load_one(&args.data) {
        Ok(c) => c,
        Err(f) => return super::report_failure(&sources, f),
    };
    let (train, test) = match (&args.test_data, data) {
        (Some(t), data) => match load_one(t) {
            Ok(t) => (data, t),
            Err(f) => return super::report_failure(&sources, f),
        },
        (None, DataSource::Json(_)) => {
            eprintln!(
                "error: `{}` is JSON, and a split needs the rows of a CSV file; pass the test set \
                 with `--test-data FILE` (CSV or JSON), or give the data as CSV",
                args.data.display()
            );
            return super::EXIT_USAGE;
        }
        (None, DataSource::Csv(csv)) => {
            let mode = match args.split_seed {
                Some(seed) => SplitMode::Random { seed },
                None => SplitMode::Ordered,
            };
            match evaluate::split_rows(&csv, args.split, mode) {
                Ok((a, b)) => (DataSource::Csv(a), DataSource::Csv(b)),
                Err(e) => {
                    eprintln!("error: {e}");
                    return super::EXIT_USAGE;
                }
            }
        }
    };
    let train = [train];
    let test = [test];
    let compile = |c: &Checked, d: &[DataSource]| pipeline::compile(c, &sources, d);
    let models = (|| {
        let b = (compile(&checked, &train)?, compile(&checked, &test)?);
        let m = match &ml_checked {
            Some(c) => Some((compile(c, &train)?, compile(c, &test)?)),
            None => None,
        };
        Ok::<_, pipeline::Failure>((b, m))
    })();
    let ((b_train, b_test), ml) = match models {
        Ok(m) => m,
        Err(f) => return super::report_failure(&sources, f),
    };
    let outcome = outcome.as_str();
    let scored = |c: &Checked, m, d: &[DataSource]| Scored {
        model: m,
        outcome_data: evaluate::outcome_from_data(&c.program, d, outcome),
        outcome,
    };
    let bayes = Compiled {
        train: scored(&checked, &b_train, &train),
        test: scored(&checked, &b_test, &test),
    };
    let ml_compiled = match (&ml, &ml_checked) {
        (Some((tr, te)), Some(c)) => Some(Compiled {
            train: scored(c, tr, &train),
            test: scored(c, te, &test),
        }),
        _ => None,
    };
    // The options `bayesc fit MODEL --data TRAIN --method M --seed S` would use (one builder,
    // `pipeline::fit_options`), so that the fit scored here is the fit `bayesc fit` shows, with
    // the same verdict ([X]: session 21, evaluate built its own options and called a QBVI fit
    // of the moons BNN converged that `bayesc fit` called not converged).
    let options = match fit_options_as_bayesc_fit(&args, &checked, &train, &b_train) {
        Ok(o) => o,
        Err(f) => return super::report_failure(&sources, f),
    };
    match evaluate::evaluate(&bayes, ml_compiled.as_ref(), &options) {
        Ok(e) => {
            println!(
                "{} fitted on the training set; {} training and {} test observations scored (seed {})\n",
                e.method, e.train.n, e.test.n, args.seed
            );
            // a fit short of its optimum is scored, but never silently
            if let Some(why) = &e.not_converged {
                println!(
                    "WARNING: the {} fit did not converge: {why}. The scores below are of that \
                     approximation, not of the posterior; `bayesc fit` with the same model, data \
                     and --method shows the fit and its advice.\n",
                    e.method
                );
            }
            print!("{}", evaluate::format_table(&e));
            for (set, m) in [("training", &e.train), ("test", &e.test)] {
                if let Some(b) = &m.binary
                    && b.recall.is_nan()
                {
                    let hint = if args.split_seed.is_none() && args.test_data.is_none() {
                        "; the split takes the last rows as the test set: if the data are sorted by \
                         the outcome, use --split-seed N for a random split"
                    } else {
                        ""
                    };
                    println!(
                        "\nwarning: the {set} set has no observation with outcome 1, so recall and F1 \
                         are undefined{hint}"
                    );
                }
            }
            0
        }
        Err(e) => {
            eprintln!("error: {e}");
            super::EXIT_ERROR
        }
    }
}
