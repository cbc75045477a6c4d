//! `bayesc predict`: generated quantities of a model on new data for every draw of a saved fit,
//! summarised per quantity (mean, sd, 5%/50%/95% quantiles) as CSV.

use std::path::PathBuf;

use clap::Args;

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
    /// The new data (CSV or JSON); sizes such as N come from it.
    #[arg(long = "data", value_name = "FILE")]
    pub data: Vec<PathBuf>,
    /// Write the prediction summary CSV here (default: standard output).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Seed for `_rng` calls in generated quantities (default: the fit's seed).
    #[arg(long)]
    pub seed: Option<u64>,
}

/// Runs the prediction; returns the exit code.
pub fn run(args: PredictArgs) -> i32 {
    let mut sources = SourceMap::new();
    let checked = match pipeline::check_file(&mut sources, &args.model) {
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
    let model = match pipeline::compile(&checked, &sources, &data) {
        Ok(m) => m,
        Err(f) => return super::report_failure(&sources, f),
    };
    let rows = match predict::predict(&model, &saved, args.seed.unwrap_or(saved.seed)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return super::EXIT_ERROR;
        }
    };
    let written = match &args.output {
        Some(path) => {
            crate::output::write_atomic(path, |w| predict::write_predictions_csv(w, &rows))
        }
        None => predict::write_predictions_csv(&mut std::io::stdout().lock(), &rows),
    };
    match (written, &args.output) {
        (Ok(()), Some(path)) => {
            println!(
                "{} quantities × {} draws summarised; written to {}",
                rows.len(),
                saved.draws.len(),
                path.display()
            );
            0
        }
        (Ok(()), None) => 0,
        (Err(e), _) => {
            eprintln!("error: cannot write predictions: {e}");
            super::EXIT_ERROR
        }
    }
}
