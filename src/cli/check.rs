//! `bayesc check`: parse, check and (with `--data`) bind data and compile, without fitting.

use std::path::PathBuf;

use clap::Args;

use crate::inference::LogDensity;
use crate::pipeline;
use crate::syntax::source::SourceMap;

/// Arguments of `bayesc check`.
#[derive(Args, Debug)]
pub struct CheckArgs {
    /// The model file (.bayes).
    pub model: PathBuf,
    /// Data files (CSV with a header row, or JSON in Stan's format); repeat for several files.
    #[arg(long = "data", value_name = "FILE")]
    pub data: Vec<PathBuf>,
}

/// Runs the checks; prints warnings and errors; returns the exit code.
pub fn run(args: CheckArgs) -> i32 {
    let mut sources = SourceMap::new();
    let checked = match pipeline::check_file_with_data(&mut sources, &args.model, &args.data) {
        Ok(c) => c,
        Err(f) => return super::report_failure(&sources, f),
    };
    super::report_warnings(&sources, &checked.warnings);
    if checked.program.block_spans == crate::syntax::ast::BlockSpans::default()
        && checked.program.includes.is_empty()
    {
        println!(
            "{}: no errors, but the file has no blocks, so there is nothing to fit: a model \
             declares `parameters {{ … }}` and a `model {{ … }}` block (README, \"A short tour of \
             the language\")",
            args.model.display()
        );
        return 0;
    }
    if args.data.is_empty() {
        println!(
            "{}: no errors ({})",
            args.model.display(),
            crate::words::counted(checked.warnings.len(), "warning")
        );
        return 0;
    }
    super::warn_unused_data(&checked.program, &args.data);
    let data = match pipeline::load_data(&args.data) {
        Ok(d) => d,
        Err(f) => return super::report_failure(&sources, f),
    };
    match pipeline::compile(&checked, &sources, &data) {
        Ok(model) => {
            println!(
                "{}: no errors ({}); data bound; {}",
                args.model.display(),
                crate::words::counted(checked.warnings.len(), "warning"),
                crate::words::counted(model.dim(), "unconstrained parameter")
            );
            0
        }
        Err(f) => super::report_failure(&sources, f),
    }
}
