//! `bayesc summary`: recompute the posterior summary from saved draws files (Stan's CSV layout,
//! one file per chain, as `bayesc fit --method nuts --output` or CmdStan write them).

use std::path::{Path, PathBuf};

use clap::Args;

use crate::output::{stan_csv, summary};

/// Arguments of `bayesc summary`.
#[derive(Args, Debug)]
pub struct SummaryArgs {
    /// Draws files in Stan's CSV layout, one per chain of the same fit.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
}

/// Reads the files, checks they describe the same quantities, prints the summary table.
pub fn run(args: SummaryArgs) -> i32 {
    let mut files = Vec::new();
    for path in &args.files {
        match stan_csv::read_stan_csv(path) {
            Ok(f) => files.push(f),
            Err(e) => {
                eprintln!("error: {e}");
                return super::EXIT_ERROR;
            }
        }
    }
    if let Some(message) = not_one_fit(&files, &args.files) {
        eprintln!("error: {message}; give the chains of one fit");
        return super::EXIT_ERROR;
    }
    let paths: Vec<&Path> = args.files.iter().map(PathBuf::as_path).collect();
    let draws = match stan_csv::draws_from_files(&files, &paths) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: {e}; give the chains of one fit");
            return super::EXIT_ERROR;
        }
    };
    let k = draws.names.len().max(1);
    if let Some((i, c)) = draws
        .chains
        .iter()
        .enumerate()
        .find(|(_, c)| c.len() != draws.chains[0].len())
    {
        eprintln!(
            "error: `{}` has {} draws but `{}` has {}; give the chains of one fit (equal lengths)",
            args.files[i].display(),
            c.len() / k,
            args.files[0].display(),
            draws.chains[0].len() / k
        );
        return super::EXIT_ERROR;
    }
    if draws.n_draws() < 4 {
        eprintln!(
            "error: the files hold {} draws per chain; a summary needs at least 4",
            draws.n_draws()
        );
        return super::EXIT_ERROR;
    }
    println!(
        "{} chains × {} draws\n",
        draws.chains.len(),
        draws.n_draws()
    );
    let rows = summary::summarize(&draws, true);
    print!("{}", summary::format_table(&rows, true));
    0
}

/// Why `files` cannot be the chains of one fit, if they cannot: different methods in their
/// configuration comments (e.g. an MCMC chain beside a variational fit), or two files holding
/// identical draws (the same chain given twice, which would make R-hat meaningless).
fn not_one_fit(files: &[stan_csv::StanCsv], paths: &[PathBuf]) -> Option<String> {
    let method = |f: &stan_csv::StanCsv| {
        f.config_lines
            .iter()
            .find_map(|l| l.trim().strip_prefix("method = ").map(str::to_string))
    };
    for (i, f) in files.iter().enumerate().skip(1) {
        if let (Some(a), Some(b)) = (method(&files[0]), method(f))
            && a != b
        {
            return Some(format!(
                "`{}` holds a `{a}` fit but `{}` a `{b}` fit",
                paths[0].display(),
                paths[i].display()
            ));
        }
    }
    for i in 0..files.len() {
        for j in i + 1..files.len() {
            if files[i].n_draws > 0 && files[i].values == files[j].values {
                return Some(format!(
                    "`{}` and `{}` hold identical draws (the same chain twice?)",
                    paths[i].display(),
                    paths[j].display()
                ));
            }
        }
    }
    None
}
