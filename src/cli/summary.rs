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
    // with --save-warmup a chain stopped in warmup keeps a file of warmup draws only: beside
    // chains with draws it is left out (it would cut every chain to 0 draws), and said so
    let mut paths = args.files.clone();
    if files.iter().any(|f| f.n_draws > 0) {
        let flags: Vec<bool> = files
            .iter()
            .map(|f| f.n_draws > 0 || f.warmup_draws == 0)
            .collect();
        let mut keep = flags.iter().copied();
        let mut keep_path = flags.iter().copied();
        for (f, p) in files.iter().zip(&paths) {
            if f.n_draws == 0 && f.warmup_draws > 0 {
                eprintln!(
                    "warning: `{}` holds {} warmup draws and no post-warmup draws (its chain \
                     was stopped in warmup): left out of the summary",
                    p.display(),
                    f.warmup_draws
                );
            }
        }
        files.retain(|_| keep.next().unwrap_or(true));
        paths.retain(|_| keep_path.next().unwrap_or(true));
    }
    let args = SummaryArgs { files: paths };
    if let Some(message) = not_one_fit(&files, &args.files) {
        eprintln!("error: {message}; give the chains of one fit");
        return super::EXIT_ERROR;
    }
    // what the writer recorded about how the fit ended (an interrupted run, an unconverged
    // variational fit) comes first, where it cannot be missed: the table alone reads as a result
    let status: Vec<String> = files
        .iter()
        .zip(&args.files)
        .flat_map(|(f, path)| {
            status_lines(f)
                .into_iter()
                .map(move |l| format!("WARNING: `{}`: {l}", path.display()))
        })
        .collect();
    for line in &status {
        println!("{line}");
    }
    if !status.is_empty() {
        println!();
    }
    if files.iter().any(is_optimize) {
        return point_estimates(&files, &args.files);
    }
    if files.iter().all(|f| f.n_draws == 0) && files.iter().any(|f| f.warmup_draws > 0) {
        return warmup_only_summary(&files);
    }
    let approximation = approximation_method(&files[0]);
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
    if let Some(method) = approximation {
        return approximation_summary(&draws, &method);
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
/// configuration comments (e.g. an MCMC chain beside a variational fit, or two variational
/// methods: `variational_method = bbb` beside `vogn`, or `algorithm = meanfield` beside
/// `fullrank`), different models (`model = …`), or two files holding identical draws (the same
/// chain given twice, which would make R-hat meaningless). [X]: fresh-user finding, session 21:
/// a BBB file of one model and a file of another model, both with a parameter `mu`, were pooled
/// into one bimodal "posterior" without a word.
fn not_one_fit(files: &[stan_csv::StanCsv], paths: &[PathBuf]) -> Option<String> {
    // the first `key = value` among a file's configuration comments
    let setting = |f: &stan_csv::StanCsv, key: &str| {
        f.config_lines.iter().find_map(|l| {
            let (k, v) = l.trim().split_once(" = ")?;
            (k == key).then(|| v.trim().to_string())
        })
    };
    for key in ["method", "variational_method", "algorithm", "model"] {
        for (i, f) in files.iter().enumerate().skip(1) {
            if let (Some(a), Some(b)) = (setting(&files[0], key), setting(f, key))
                && a != b
            {
                let what = if key == "model" { "model" } else { "fit" };
                return Some(format!(
                    "`{}` holds {} `{a}` {what} but `{}` {} `{b}` {what}",
                    paths[0].display(),
                    crate::words::article(&a),
                    paths[i].display(),
                    crate::words::article(&b)
                ));
            }
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

/// The lines in which a draws file's writer recorded how the fit ended, when it did not end
/// cleanly: bayesc's `interrupted: …` (MCMC: `# interrupted: N of M draws` after the rows, or
/// `interrupted after N draws …` among the settings; variational: `interrupted: the fit was
/// stopped …`) and `not converged: …` (a variational fit whose exit rule fired on a fit that is
/// not an optimum). At most one line of each kind, the last one the file holds (the footer's
/// `interrupted: N of M draws` rather than the settings line that says the same). [X]: a
/// fresh user's `bayesc summary` of an unconverged IVON file printed a clean table.
fn status_lines(file: &stan_csv::StanCsv) -> Vec<String> {
    let all = file
        .config_lines
        .iter()
        .chain(&file.adaptation_lines)
        .chain(&file.footer_lines)
        .map(|l| l.trim());
    let mut interrupted = None;
    let mut not_converged = None;
    for l in all {
        if l.starts_with("interrupted") {
            interrupted = Some(l.to_string());
        } else if l.starts_with("not converged") {
            not_converged = Some(l.to_string());
        }
    }
    interrupted.into_iter().chain(not_converged).collect()
}

/// The `method = …` of a file holding draws of an approximation rather than MCMC chains
/// (`variational`, `laplace`, `pathfinder`, as bayesc and CmdStan write them), if it does.
fn approximation_method(file: &stan_csv::StanCsv) -> Option<String> {
    file.config_lines.iter().find_map(|l| {
        let m = l.trim().strip_prefix("method = ")?;
        let m = m.split_whitespace().next()?;
        matches!(m, "variational" | "laplace" | "pathfinder").then(|| m.to_string())
    })
}

/// `bayesc summary` of draws of an approximation (variational, Laplace, Pathfinder): the draws
/// are independent draws of the fitted distribution, not Markov chains, so the table is the
/// one `bayesc fit` prints for these methods ([`summary::format_table`] without the MCMC
/// columns): R-hat and ESS of independent draws say nothing about whether the approximation
/// is the posterior ([X]: a fresh user read R-hat 1.000 and ESS ≈ 1000 off an unconverged
/// IVON file). Exit 0.
fn approximation_summary(draws: &crate::inference::Draws, method: &str) -> i32 {
    let files = if draws.chains.len() == 1 {
        String::new()
    } else {
        format!(" ({} files pooled)", draws.chains.len())
    };
    println!(
        "summary from {} independent draws of the fitted approximation (method = {method}){files}, \
         constrained scale; these are not MCMC chains, so there is no R-hat or ESS: whether the \
         approximation matches the posterior is what the fit's PSIS k-hat said\n",
        draws.n_draws() * draws.chains.len()
    );
    let rows = summary::summarize(draws, false);
    print!("{}", summary::format_table(&rows, false));
    0
}

/// Whether the configuration comments say `method = optimize` (CmdStan's and bayesc's
/// optimize output: one row, the optimum, or with `save_iterations = true` one row per
/// iteration, the optimum last).
fn is_optimize(file: &stan_csv::StanCsv) -> bool {
    file.is_optimize()
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

/// `bayesc summary` of files that hold warmup draws only (a `--save-warmup` run stopped in
/// warmup: each file ends `# interrupted: 0 of M draws, K warmup draws (in warmup)`): says so,
/// and describes the warmup draws in a table marked as such, without R-hat or ESS, which judge
/// a posterior sample and would read the adaptation as mixing ([X]: fresh-user finding,
/// session 20: such a file alone gave "error: the files hold 0 draws per chain; a summary
/// needs at least 4"). The chains are cut to the shortest. Returns the exit status: 0.
fn warmup_only_summary(files: &[stan_csv::StanCsv]) -> i32 {
    let n = files.iter().map(|f| f.warmup_draws).min().unwrap_or(0);
    let k = files[0].names.len();
    println!(
        "the files hold warmup draws only ({} per chain{}) and no post-warmup draws: the run \
         was stopped in warmup. Warmup draws are not a posterior sample (the sampler was still \
         adapting its step size and metric, and the first draws still move away from the \
         start), so no R-hat or ESS is computed; for a posterior, run the fit to its end.",
        n,
        if files.iter().any(|f| f.warmup_draws != n) {
            ", the chains cut to the shortest"
        } else {
            ""
        }
    );
    if n < 4 {
        println!("(too few warmup draws to describe: a table needs at least 4)");
        return 0;
    }
    let draws = crate::inference::Draws {
        names: files[0].names.clone(),
        chains: files
            .iter()
            .map(|f| f.warmup_values[..n * k].to_vec())
            .collect(),
    };
    println!(
        "\nWARMUP draws (not a posterior): {} chain(s) × {n} draws\n",
        files.len()
    );
    print!(
        "{}",
        summary::format_table(&summary::summarize(&draws, false), false)
    );
    0
}
