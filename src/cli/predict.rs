//! `bayesc predict`: generated quantities of a model on new data for every draw of a saved fit,
//! summarised per quantity (mean, sd, 5%/50%/95% quantiles) as CSV; when the model follows the
//! per-row convention of `crate::evaluate` and the new data hold the outcome, also the
//! posterior-predictive scores of the new rows. The outcome column may be absent: it is then
//! predicted, not scored. Generated quantities that fail at some draws hold NaN there, the
//! table is written whole (each row over the draws where its quantity was computed) and the
//! failures are an error with exit status 3, as in `bayesc fit`.

use std::path::PathBuf;

use clap::Args;

use crate::evaluate::{self, Scored};
use crate::pipeline;
use crate::predict::{self, SavedFit};
use crate::syntax::source::SourceMap;

/// Arguments of `bayesc predict`.
#[derive(Args, Debug)]
pub struct PredictArgs {
    /// The model file (.bayes) the fit was made with.
    pub model: PathBuf,
    /// The saved fit (`bayesc fit --save-fit FIT.json`).
    #[arg(long, value_name = "FIT.json")]
    pub fit: PathBuf,
    /// The new data (CSV or JSON); sizes such as N come from it. The outcome may be absent.
    #[arg(long = "data", value_name = "FILE")]
    pub data: Vec<PathBuf>,
    /// Write the prediction summary CSV here (default: standard output).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Seed for `_rng` calls in generated quantities (default: the fit's seed).
    #[arg(long)]
    pub seed: Option<u64>,
    /// The outcome data variable, which the new data may omit (default: the name in a
    /// `// @outcome NAME` comment of the model). When present and the model generates
    /// `log_lik[n]` and `y_hat[n]` (or `p_hat[n, k]` for a K-class outcome), the new rows are scored.
    #[arg(long)]
    pub outcome: Option<String>,
    /// Write the per-row posterior-predictive scores here as CSV (`row,y,mean,lppd`: row 1-based,
    /// the observed outcome, the predictive mean or probability, the log predictive density).
    #[arg(long, value_name = "FILE")]
    pub pointwise: Option<PathBuf>,
}

/// Runs the prediction; returns the exit code.
pub fn run(args: PredictArgs) -> i32 {
    let mut inputs = vec![args.model.as_path(), args.fit.as_path()];
    inputs.extend(args.data.iter().map(|p| p.as_path()));
    let outputs: Vec<(&str, PathBuf)> =
        [("--output", &args.output), ("--pointwise", &args.pointwise)]
            .into_iter()
            .filter_map(|(f, p)| p.clone().map(|p| (f, p)))
            .collect();
    if let Err(msg) = crate::output::fit_files::refuse_overwriting_inputs(&inputs, &outputs) {
        eprintln!("error: {msg}");
        return super::EXIT_USAGE;
    }
    let mut sources = SourceMap::new();
    // the outcome may be missing from the new data: named by `--outcome` or the model's
    // `// @outcome` comment (read again below, once the model is checked)
    let unobserved = args.outcome.clone().or_else(|| {
        std::fs::read_to_string(&args.model)
            .ok()
            .and_then(|t| evaluate::outcome_annotation(&t))
    });
    let checked = match pipeline::check_file_with_data_unobserved(
        &mut sources,
        &args.model,
        &args.data,
        unobserved.as_deref(),
    ) {
        Ok(c) => c,
        Err(f) => return super::report_failure(&sources, f),
    };
    let saved = match SavedFit::load(&args.fit) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return super::EXIT_ERROR;
        }
    };
    if let Err(e) = saved.check_model(
        &args.fit.display().to_string(),
        &args.model.display().to_string(),
        sources.text(checked.file),
    ) {
        eprintln!("error: {e}");
        return super::EXIT_ERROR;
    }
    // an incomplete fit is used, but never silently
    if let Some(caveat) = saved.caveat() {
        eprintln!("warning: {caveat}");
    }
    if args.data.is_empty() && !checked.program.data.is_empty() {
        eprintln!(
            "error: the model declares data but no data file was given; pass the new data with `--data FILE`"
        );
        return super::EXIT_USAGE;
    }
    let data = match pipeline::load_data(&args.data) {
        Ok(d) => d,
        Err(f) => return super::report_failure(&sources, f),
    };
    let data_names: Vec<&str> = checked
        .program
        .data
        .iter()
        .map(|d| d.name.name.as_str())
        .collect();
    // a `--outcome` that names no data variable is an error, not ignored
    if let Some(o) = args.outcome.as_deref().filter(|o| !data_names.contains(o)) {
        let hint = match crate::semantics::names::best_match(o, data_names.iter().copied()) {
            Some(m) => format!("did you mean `--outcome {m}`?"),
            None => format!(
                "the model's data variables are {}",
                crate::words::name_list(
                    &data_names
                        .iter()
                        .map(|n| format!("`{n}`"))
                        .collect::<Vec<_>>(),
                    8
                )
            ),
        };
        eprintln!("error: `--outcome {o}`: the model has no data variable `{o}`\n  = help: {hint}");
        return super::EXIT_USAGE;
    }
    let outcome = args
        .outcome
        .clone()
        .or_else(|| evaluate::outcome_annotation(sources.text(checked.file)))
        .filter(|o| data_names.contains(&o.as_str()));
    let compiled = match &outcome {
        Some(o) => pipeline::compile_unobserved(&checked, &sources, &data, o),
        None => pipeline::compile(&checked, &sources, &data),
    };
    let mut model = match compiled {
        Ok(m) => m,
        Err(f) => {
            let code = super::report_failure(&sources, f);
            if outcome.is_none() {
                outcome_help(&checked, &sources, &data, &data_names);
            }
            return code;
        }
    };
    let seed = args.seed.unwrap_or(saved.seed);
    let observed = outcome
        .as_deref()
        .map(|o| evaluate::outcome_from_unobserved(&checked.program, &data, o));
    // without the outcome, the generated quantities that read it (at any depth, e.g.
    // `log_lik[n]` beside `y_hat[n]` in one loop) are left out, the others predicted
    if let (Some(o), Some(None)) = (&outcome, &observed) {
        model.set_unobserved(o);
    }
    // whether the missing outcome (NaN in the generated quantities) caused a failure: the
    // failing statement reads it (fresh-user finding: every failure was blamed on it)
    let model_text = sources.text(checked.file).to_string();
    let outcome_caused = |message: &str, location: Option<&str>| {
        outcome
            .as_deref()
            .is_some_and(|o| predict::outcome_is_cause(message, location, &model_text, o))
    };
    let (mut rows, mut gq_note, first_failure, left_out) = match predict::predict(
        &model, &saved, seed,
    ) {
        Ok(p) => (p.rows, p.gq_note, p.first_failure, p.left_out),
        Err(e) => {
            eprintln!("error: {e}");
            // The usual cause when the new data lacks the outcome: a generated quantity reads
            // it (its placeholder is NaN), e.g. `log_lik[n] = normal_lpdf(y[n] | …)`; said
            // only when the failing statement reads it.
            let caused = match &e {
                predict::PredictError::GeneratedQuantities { source, .. } => {
                    outcome_caused(&source.message, source.location.as_deref())
                }
                _ => false,
            };
            if let (Some(o), Some(None), true) = (&outcome, &observed, caused) {
                eprintln!(
                    "  = note: the new data has no `{o}` column, so `{o}` is NaN in the generated \
                     quantities; a statement that reads it (such as `log_lik[n] = \
                     normal_lpdf({o}[n] | …)`) cannot be evaluated. Add the `{o}` column to score \
                     the new rows, or guard the statement with `if (!is_nan({o}[n])) {{ … }}`"
                );
            }
            return super::EXIT_ERROR;
        }
    };
    if let Some(None) = observed {
        // the quantities computed from the missing outcome (log p(y | θ) and any other) were
        // not computed (`Model::set_unobserved`): their rows are left out
        rows.retain(|r| {
            let base = r.name.split('[').next().unwrap_or(&r.name);
            !left_out.iter().any(|q| q == base)
        });
        if rows.is_empty()
            && let Some(o) = &outcome
        {
            eprintln!(
                "error: nothing to predict: every generated quantity ({}) reads the outcome \
                 `{o}`, which the new data lacks\n  = help: add the `{o}` column to score the \
                 new rows, or generate a prediction such as `y_hat[n] = normal_rng(…)`",
                left_out
                    .iter()
                    .map(|q| format!("`{q}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            return super::EXIT_ERROR;
        }
        // the failing statement may read the missing outcome: said only when it does (the
        // note above already names the first failure's message and place)
        let caused = first_failure
            .as_ref()
            .is_some_and(|(m, loc)| outcome_caused(m, loc.as_deref()));
        if let (Some(note), Some(o), true) = (gq_note.as_mut(), &outcome, caused) {
            note.push_str(&format!(
                "\n  = note: the new data has no `{o}` column, so `{o}` is NaN in the generated \
                 quantities; a statement that reads it cannot be evaluated. Add the `{o}` \
                 column, or guard the statement with `if (!is_nan({o}[n])) {{ … }}`"
            ));
        }
    }
    let written = match &args.output {
        Some(path) => {
            crate::output::write_atomic(path, |w| predict::write_predictions_csv(w, &rows))
        }
        None => predict::write_predictions_csv(&mut std::io::stdout().lock(), &rows),
    };
    if let Err(e) = written {
        match &args.output {
            Some(path) => eprintln!(
                "error: cannot write predictions to `{}`: {e}",
                path.display()
            ),
            None => eprintln!("error: cannot write predictions: {e}"),
        }
        return super::EXIT_ERROR;
    }
    // Scores go to standard output only when the predictions went to a file.
    let say = |text: &str| match &args.output {
        Some(_) => print!("{text}"),
        None => eprint!("{text}"),
    };
    if let Some(path) = &args.output {
        say(&format!(
            "{} quantities × {} draws summarised; written to {}\n",
            rows.len(),
            saved.draws.len(),
            path.display()
        ));
    }
    // generated quantities that failed at some draws: an error (as `bayesc fit` reports it),
    // after the table was written whole, with each row summarised over the draws where its
    // quantity was computed (the `draws` column); status 3 (docs/generated_quantities.md)
    let gq_failed = |code: i32| match &gq_note {
        Some(note) => {
            eprintln!(
                "ERROR: {note}\nerror: the generated quantities failed at some draws; the \
                 predictions were written whole, each row over the draws where its quantity was \
                 computed (the `draws` column); exit status {}",
                super::EXIT_GQ_FAILED
            );
            if code == 0 {
                super::EXIT_GQ_FAILED
            } else {
                code
            }
        }
        None => code,
    };
    let (Some(outcome), Some(observed)) = (outcome, observed) else {
        return gq_failed(0);
    };
    let names = model.generated_quantity_names();
    let has = |q: &str| names.iter().any(|n| n.starts_with(&format!("{q}[")));
    // `y_hat[n]`, or `p_hat[n, k]` for a K-class outcome (crate::evaluate's per-row convention).
    let follows = has("log_lik") && (has("y_hat") || has("p_hat"));
    let code = match observed {
        None => {
            let left = if left_out.is_empty() {
                String::new()
            } else {
                format!(
                    "; left out, as computed from `{outcome}`: {}",
                    left_out
                        .iter()
                        .map(|q| format!("`{q}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            say(&format!(
                "the outcome `{outcome}` is not in the new data: it is predicted, not \
                 scored{left}\n"
            ));
            0
        }
        Some(_) if !follows => 0,
        // scoring needs every draw (`evaluate::score`): with failed draws it stops at the first,
        // as `bayesc evaluate` does
        Some(y) => score_new_rows(&args, &model, &saved, &outcome, y, seed, &say),
    };
    gq_failed(code)
}

/// Scores the new rows (posterior predictive and at the posterior mean of the draws), prints the
/// table with `say` and writes `--pointwise`; returns the exit code.
fn score_new_rows(
    args: &PredictArgs,
    model: &crate::graph::Model,
    saved: &SavedFit,
    outcome: &str,
    y: Vec<f64>,
    seed: u64,
    say: &dyn Fn(&str),
) -> i32 {
    let set = Scored {
        model,
        outcome_data: Some(y.clone()),
        outcome,
    };
    let scored = (|| {
        let zetas = saved.unconstrained_draws(model)?;
        let k = saved.parameter_names.len();
        let s = saved.draws.len().max(1) as f64;
        let mean: Vec<f64> = (0..k)
            .map(|j| saved.draws.iter().map(|d| d[j]).sum::<f64>() / s)
            .collect();
        let zeta = model.unconstrain(&mean)?;
        evaluate::score(&set, &zeta, Some(&zetas), seed)
    })();
    let m = match scored {
        Ok(m) => m,
        Err(e) => {
            eprintln!("error: cannot score the new rows: {e}");
            return super::EXIT_ERROR;
        }
    };
    say(&format!(
        "\n{} new rows with an observed `{outcome}` scored ({} fit, {} draws)\n",
        m.n,
        saved.method,
        saved.draws.len()
    ));
    say(&evaluate::format_columns(&[("new data".to_string(), &m)]));
    if let (Some(path), Some(p)) = (&args.pointwise, &m.predictive) {
        use crate::output::format_f64_roundtrip as f;
        let written = crate::output::write_atomic(path, |w| {
            writeln!(w, "row,y,mean,lppd")?;
            for (k, &i) in p.rows.iter().enumerate() {
                writeln!(
                    w,
                    "{},{},{},{}",
                    i + 1,
                    f(y[i]),
                    f(p.mean[k]),
                    f(p.lppd_pointwise[k])
                )?;
            }
            Ok(())
        });
        if let Err(e) = written {
            eprintln!("error: cannot write `{}`: {e}", path.display());
            return super::EXIT_ERROR;
        }
    }
    0
}

/// After the new data failed to bind without an outcome: the data variables whose absence
/// alone made it fail (the model compiles when that one is left unobserved), named with the
/// flag that predicts them, `--outcome NAME` ([X]: fresh-user finding, session 20: the error
/// said only that `y` is not in the new data, and nothing pointed to `--outcome`).
fn outcome_help(
    checked: &pipeline::Checked,
    sources: &crate::syntax::source::SourceMap,
    data: &[crate::data::DataSource],
    data_names: &[&str],
) {
    let candidates: Vec<&str> = data_names
        .iter()
        .copied()
        .filter(|n| pipeline::compile_unobserved(checked, sources, data, n).is_ok())
        .collect();
    match candidates.as_slice() {
        [] => {}
        [o] => eprintln!(
            "  = help: if `{o}` is the outcome to predict, pass `--outcome {o}` (or put a \
             comment `// @outcome {o}` in the model): it is then predicted, not scored"
        ),
        many => eprintln!(
            "  = help: to predict an outcome missing from the new data, pass `--outcome NAME` \
             with NAME one of {}",
            many.iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}
