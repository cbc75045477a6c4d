//! `bayesc summary`: recompute the posterior summary from saved draws files (Stan's CSV layout,
//! one file per chain, as `bayesc fit --method nuts --output` or CmdStan write them).

use std::path::{Path, PathBuf};

use clap::Args;

use crate::diagnostics::hmc_stats;
use crate::output::{stan_csv, summary};

/// Arguments of `bayesc summary`.
#[derive(Args, Debug)]
pub struct SummaryArgs {
    /// Draws files in Stan's CSV layout, one per chain of the same fit.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
}

/// Reads the files, checks they describe the same quantities, prints the summary table, the
/// sampler checks the files record (divergences, tree-depth saturation, E-BFMI) and the
/// warnings of those checks and of R-hat/ESS.
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
    for (f, path) in files.iter().zip(&args.files) {
        if f.partial_last_row {
            eprintln!(
                "warning: `{}` ends inside a row (its writer was killed): that row is left out",
                path.display()
            );
        }
    }
    if let Some(message) = not_one_fit(&files, &args.files) {
        eprintln!("error: {message}; give the chains of one fit");
        return super::EXIT_ERROR;
    }
    if files.iter().any(is_optimize) {
        return point_estimates(&files, &args.files);
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
    let mut draws = draws;
    // Chains of one fit with different lengths are what an interrupted or killed run leaves
    // (each chain's file is streamed as it samples): the summary uses the draws all chains
    // have, and says so, rather than refusing.
    let shortest = draws.chains.iter().map(|c| c.len() / k).min().unwrap_or(0);
    let longest = draws.chains.iter().map(|c| c.len() / k).max().unwrap_or(0);
    if shortest < longest {
        let lengths: Vec<String> = args
            .files
            .iter()
            .zip(&draws.chains)
            .map(|(f, c)| format!("`{}` {}", f.display(), c.len() / k))
            .collect();
        eprintln!(
            "warning: the chains have different numbers of draws ({}), as an interrupted or \
             killed run leaves them: each is cut to its first {shortest} draws",
            crate::words::name_list(&lengths, 8)
        );
        for c in draws.chains.iter_mut() {
            c.truncate(shortest * k);
        }
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
    let mut warnings = Vec::new();
    match hmc_stats_of(&files) {
        Some(Ok(stats)) => {
            print!("\n{}", hmc_line(&stats, max_depth_of(&files[0])));
            warnings.extend(stats.warnings());
        }
        Some(Err(e)) => warnings.push(format!(
            "the sampler diagnostics could not be computed: {e}"
        )),
        None => {}
    }
    warnings.extend(summary::convergence_warnings_for(&rows, &draws));
    if !warnings.is_empty() {
        println!("\nwarnings:");
        for w in warnings {
            println!("  - {w}");
        }
    }
    0
}

/// The HMC/NUTS checks (divergences, tree-depth saturation, E-BFMI per chain,
/// `specs/diagnostics.md` §5) from the sampler columns `energy__`, `divergent__` and
/// `treedepth__` the files record; `None` when a file lacks `energy__` or `divergent__`
/// (Metropolis or variational output). A file without `treedepth__` (static HMC) counts no
/// saturation.
fn hmc_stats_of(
    files: &[stan_csv::StanCsv],
) -> Option<Result<hmc_stats::HmcStats, crate::diagnostics::DiagnosticsError>> {
    let column = |f: &stan_csv::StanCsv, name: &str| -> Option<Vec<f64>> {
        let k = f.sampler_names.iter().position(|n| n == name)?;
        let width = f.sampler_names.len();
        Some(
            (0..f.n_draws)
                .map(|r| f.sampler_values[r * width + k])
                .collect(),
        )
    };
    let mut energy = Vec::new();
    let mut divergent = Vec::new();
    let mut treedepth = Vec::new();
    for f in files {
        energy.push(column(f, "energy__")?);
        divergent.push(column(f, "divergent__")?);
        treedepth.push(column(f, "treedepth__").unwrap_or_default());
    }
    Some(hmc_stats::HmcStats::new(
        &energy,
        &divergent,
        &treedepth,
        max_depth_of(&files[0]),
    ))
}

/// The `max_depth = N` setting of the configuration comments (bayesc's and CmdStan's, which
/// may append ` (Default)`); 10, the default of both, when absent.
fn max_depth_of(file: &stan_csv::StanCsv) -> u32 {
    file.config_lines
        .iter()
        .find_map(|l| {
            let rest = l
                .trim()
                .strip_prefix("max_depth")?
                .trim_start()
                .strip_prefix('=')?;
            rest.split_whitespace().next()?.parse().ok()
        })
        .unwrap_or(10)
}

/// One line with the sampler checks, e.g. `sampler: 3 of 4000 transitions divergent; 0 at the
/// maximum tree depth (10); E-BFMI per chain: 0.98, 1.05`.
fn hmc_line(stats: &hmc_stats::HmcStats, max_depth: u32) -> String {
    let total: usize = stats.draws_per_chain.iter().sum();
    let bfmi: Vec<String> = stats.e_bfmi.iter().map(|b| format!("{b:.3}")).collect();
    format!(
        "sampler (from the files): {} of {total} transitions divergent; {} at the maximum tree \
         depth ({max_depth}); E-BFMI per chain: {}\n",
        stats.total_divergences(),
        stats.treedepth_saturated.iter().sum::<usize>(),
        bfmi.join(", ")
    )
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

/// Whether the configuration comments say `method = optimize` (CmdStan's and bayesc's
/// optimize output: one row, the optimum, or with `save_iterations = true` one row per
/// iteration, the optimum last).
fn is_optimize(file: &stan_csv::StanCsv) -> bool {
    file.config_lines
        .iter()
        .any(|l| l.trim() == "method = optimize")
}

/// `bayesc summary` of optimize output: the point estimate of each file as such (its last
/// row, the optimum), with what it is and where to get uncertainty, and no sd, quantiles,
/// R-hat or ESS, which a single point does not have ([X]: a fresh user ran `bayesc summary`
/// on an optimize file and got "the files hold 1 draws per chain; a summary needs at least 4").
/// Files of the same fit already passed [`not_one_fit`], so all are optimize files. Exit 0,
/// or [`super::EXIT_ERROR`] for a file with no rows.
fn point_estimates(files: &[stan_csv::StanCsv], paths: &[PathBuf]) -> i32 {
    for (f, path) in files.iter().zip(paths) {
        let k = f.names.len();
        if f.n_draws == 0 || k == 0 {
            eprintln!(
                "error: `{}` is the output of `--method optimize` but holds no estimate (no data \
                 rows)",
                path.display()
            );
            return super::EXIT_ERROR;
        }
        let setting = |key: &str| {
            f.config_lines.iter().find_map(|l| {
                let rest = l.trim().strip_prefix(key)?.trim_start().strip_prefix('=')?;
                rest.split_whitespace().next().map(str::to_string)
            })
        };
        let jacobian = matches!(setting("jacobian").as_deref(), Some("true" | "1"));
        let last = &f.values[(f.n_draws - 1) * k..f.n_draws * k];
        let lp = f
            .sampler_names
            .iter()
            .position(|n| n == "lp__")
            .map(|i| f.sampler_values[(f.n_draws - 1) * f.sampler_names.len() + i]);
        println!(
            "`{}` holds a point estimate, not draws: the output of `--method optimize`, the mode \
             of the log density {} the Jacobian adjustment{}. A single point has no sd, \
             quantiles, R-hat or ESS, so none are shown.\n",
            path.display(),
            if jacobian { "with" } else { "without" },
            if f.n_draws > 1 {
                format!(
                    " (the last of its {} rows: the file saves the iterations, the optimum last)",
                    f.n_draws
                )
            } else {
                String::new()
            }
        );
        let width = f
            .names
            .iter()
            .map(|n| n.chars().count())
            .max()
            .unwrap_or(4)
            .max(4);
        let cells: Vec<String> = last.iter().map(|&v| point_value(v)).collect();
        let cw = cells.iter().map(|c| c.len()).max().unwrap_or(8).max(8);
        println!("{:<width$}  {:>cw$}", "name", "estimate");
        for (name, cell) in f.names.iter().zip(&cells) {
            println!("{name:<width$}  {cell:>cw$}");
        }
        if let Some(lp) = lp {
            println!("\nlog density at the optimum (lp__) = {}", point_value(lp));
        }
        println!();
    }
    println!(
        "For uncertainty: `bayesc fit --method optimize` prints standard errors from the \
         Hessian; `--method laplace` draws from the normal approximation at the mode, and \
         `--method nuts` from the posterior, whose files `bayesc summary` summarises."
    );
    0
}

/// A value of an optimize file: an integer when whole (an `int` quantity, or `1000000`),
/// else six significant digits ([`summary::format_sig`]).
fn point_value(v: f64) -> String {
    if summary::is_whole(v) {
        format!("{}", v as i64)
    } else {
        summary::format_sig(v, 6)
    }
}
