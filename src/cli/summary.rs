//! `bayesc summary`: recompute the posterior summary from saved draws files.

use std::path::PathBuf;

use clap::Args;

use crate::inference::Draws;
use crate::output::{stan_csv, summary};

/// Arguments of `bayesc summary`.
#[derive(Args, Debug)]
pub struct SummaryArgs {
    /// Draws files in Stan's CSV layout, one per chain.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
}

/// Reads the files, checks they describe the same quantities, prints the summary table.
pub fn run(args: SummaryArgs) -> i32 {
    let mut draws = Draws::default();
    for path in &args.files {
        let chain = match stan_csv::read_stan_csv(path) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("error: cannot read draws file `{}`: {e}", path.display());
                return super::EXIT_ERROR;
            }
        };
        if draws.names.is_empty() {
            draws.names = chain.names;
        } else if draws.names != chain.names {
            eprintln!(
                "error: `{}` has different columns from `{}`; give the chains of one fit",
                path.display(),
                args.files[0].display()
            );
            return super::EXIT_ERROR;
        }
        draws.chains.push(chain.values);
    }
    let rows = summary::summarize(&draws, draws.chains.len() > 1);
    print!("{}", summary::format_table(&rows, draws.chains.len() > 1));
    0
}
