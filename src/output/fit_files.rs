//! The files a fit writes: draws in Stan's CSV layout (one file per chain for MCMC; CmdStan's
//! `variational`, `laplace` and `optimize` layouts otherwise) and the ELBO trace.

use std::path::{Path, PathBuf};

use crate::fit::args::FitArgs;
use crate::fit::{self, FitDetails, FitOptions, FitResult};
use crate::inference::mcmc;
use crate::output::{stan_csv, vi_header};

/// Puts the output files of `args` into `--output-dir` ([`FitArgs::output_dir`]), for `bayesc fit`
/// and the REPL's `:fit`:
/// creates the folder, checks that a file can be made in it, and rewrites `output`,
/// `elbo_output` and `save_fit` (relative names inside it; the draws default to
/// `<model stem>.csv`). Errors: the message to print.
pub fn place_in_output_dir(args: &mut FitArgs) -> Result<(), String> {
    let Some(dir) = args.output_dir.clone() else {
        return Ok(());
    };
    if dir.exists() && !dir.is_dir() {
        return Err(format!(
            "--output-dir `{}` is a file, not a folder",
            dir.display()
        ));
    }
    std::fs::create_dir_all(&dir)
        .map_err(|e| format!("cannot create --output-dir `{}`: {e}", dir.display()))?;
    let probe = dir.join(format!(".bayesc-write-check-{}", std::process::id()));
    match std::fs::File::create(&probe) {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
        }
        Err(e) => {
            return Err(format!(
                "--output-dir `{}` is not writable: {e}",
                dir.display()
            ));
        }
    }
    let inside = |p: &std::path::PathBuf| {
        if p.is_absolute() {
            p.clone()
        } else {
            dir.join(p)
        }
    };
    let stem = crate::output::fit_files::model_name(&args.model);
    args.output = Some(
        args.output
            .as_ref()
            .map(inside)
            .unwrap_or_else(|| dir.join(format!("{stem}.csv"))),
    );
    args.elbo_output = args.elbo_output.as_ref().map(inside);
    args.save_fit = args.save_fit.as_ref().map(inside);
    Ok(())
}

/// Checks, before a fit starts, that every output file of `args` (`--output`, MCMC's
/// per-chain files `NAME_k.csv` in its place, `--elbo-output`, `--save-fit`) can be written, so
/// that a long fit does not end unable to write ([`probe_writable`]: the folder exists, the
/// file is not a folder, and it can be opened or created, e.g. not under `/proc` or in a
/// read-only folder), and that no output file is the model or a data or initial-values file,
/// which the fit would overwrite. Nothing is left behind: a file made to probe is removed, and
/// an existing one is opened without being truncated.
/// Errors: the message to print, naming the file and why it cannot be written.
pub fn check_output_folders(args: &FitArgs) -> Result<(), String> {
    let mut inputs: Vec<&Path> = vec![args.model.as_path()];
    inputs.extend(args.data.iter().map(PathBuf::as_path));
    if let Some(init) = &args.init {
        inputs.push(Path::new(init));
    }
    let mut outputs: Vec<(&str, PathBuf)> = Vec::new();
    // (flag, the path given, the files the fit will write for it)
    let mut written: Vec<(&str, PathBuf, Vec<PathBuf>)> = Vec::new();
    if let Some(o) = &args.output {
        outputs.push(("--output", o.clone()));
        // the chain files an MCMC fit writes instead (the extra names are harmless otherwise)
        let chains: Vec<PathBuf> = (0..(args.chains as usize).min(1024))
            .map(|c| mcmc_chain_path(o, c))
            .collect();
        outputs.extend(chains.iter().map(|p| ("--output", p.clone())));
        let files = if fit::Method::from(args.method).is_mcmc() {
            chains
        } else {
            vec![o.clone()]
        };
        written.push(("--output", o.clone(), files));
    }
    for (flag, o) in [
        ("--elbo-output", &args.elbo_output),
        ("--save-fit", &args.save_fit),
    ] {
        if let Some(o) = o {
            outputs.push((flag, o.clone()));
            written.push((flag, o.clone(), vec![o.clone()]));
        }
    }
    refuse_overwriting_inputs(&inputs, &outputs)?;
    refuse_shared_outputs(&written)?;
    for (flag, given, files) in &written {
        check_folder(given)?;
        if given.is_dir() {
            return Err(format!(
                "cannot write `{}` ({flag}): it is a folder; give a file name (or put the \
                 outputs in a folder with --output-dir)",
                given.display()
            ));
        }
        for f in files {
            probe_writable(flag, f)?;
        }
    }
    Ok(())
}

/// Refuses two output flags that would write the same file (`-o s.csv --save-fit s.csv`, or
/// `--save-fit s_1.csv` beside MCMC's chain file `s_1.csv`): the second write would replace
/// the first and lose it. Paths are compared made absolute (lexically, without following links).
/// Errors: the message to print, naming both flags and the file.
fn refuse_shared_outputs(written: &[(&str, PathBuf, Vec<PathBuf>)]) -> Result<(), String> {
    let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let files: Vec<(&str, PathBuf, &PathBuf)> = written
        .iter()
        .flat_map(|(flag, _, fs)| fs.iter().map(move |f| (*flag, abs(f), f)))
        .collect();
    for (i, (flag_a, a, shown)) in files.iter().enumerate() {
        if let Some((flag_b, ..)) = files[i + 1..]
            .iter()
            .find(|(flag_b, b, _)| flag_b != flag_a && b == a)
        {
            return Err(format!(
                "{flag_a} and {flag_b} would both write `{}`, and the second would replace the \
                 first; give them different file names",
                shown.display()
            ));
        }
    }
    Ok(())
}

/// Whether the file `path` (named by `flag`) can be written: its folder exists, it is not a
/// folder itself, and it can be opened for writing (an existing file, opened to append, so
/// unchanged) or created (then removed at once, so no empty file is left if the fit fails).
/// Errors: the message to print.
pub fn probe_writable(flag: &str, path: &Path) -> Result<(), String> {
    check_folder(path)?;
    if path.is_dir() {
        return Err(format!(
            "cannot write `{}` ({flag}): it is a folder; give a file name",
            path.display()
        ));
    }
    let fail = |e: std::io::Error| {
        format!(
            "cannot write `{}` ({flag}): {e}; choose a path in a folder you can write to",
            path.display()
        )
    };
    if path.exists() {
        std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(fail)?;
    } else {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(fail)?;
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

/// That the folder of the output file `path` exists. Errors: the message to print.
fn check_folder(path: &Path) -> Result<(), String> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !dir.is_dir() {
        return Err(format!(
            "cannot write `{}`: the folder `{}` does not exist",
            path.display(),
            dir.display()
        ));
    }
    Ok(())
}

/// Refuses an output file that is one of the `inputs` (the same file, by its canonical path):
/// writing it would destroy the model or data the user wrote. `outputs` pairs each path with
/// the flag that named it. Errors: the message to print.
pub fn refuse_overwriting_inputs(
    inputs: &[&Path],
    outputs: &[(&str, PathBuf)],
) -> Result<(), String> {
    let canon: Vec<(PathBuf, &Path)> = inputs
        .iter()
        .filter_map(|p| std::fs::canonicalize(p).ok().map(|c| (c, *p)))
        .collect();
    for (flag, out) in outputs {
        let Ok(c) = std::fs::canonicalize(out) else {
            continue; // a file that does not exist yet is no input
        };
        if let Some((_, input)) = canon.iter().find(|(ci, _)| *ci == c) {
            return Err(format!(
                "{flag} would overwrite `{}`, which is an input of this command (`{}`): choose \
                 another output name",
                out.display(),
                input.display()
            ));
        }
    }
    Ok(())
}

/// Writes the draws; returns the file names written.
pub fn write_outputs(
    path: &Path,
    result: &FitResult,
    options: &FitOptions,
    model: &Path,
) -> std::io::Result<Vec<String>> {
    let model_name = model_name(model);
    match &result.details {
        FitDetails::Qbvi(_) | FitDetails::Qnvb(_) | FitDetails::Laplace(_) => {
            write_approximation_csv(path, result, options, &model_name)?;
            Ok(vec![path.display().to_string()])
        }
        FitDetails::Pathfinder(_) => {
            write_pathfinder_csv(path, result, options, &model_name)?;
            Ok(vec![path.display().to_string()])
        }
        FitDetails::Optimize(fit) => {
            let mut config = optimize_config_lines(&model_name, options, fit.jacobian, result.seed);
            add_init(&mut config, options, 0, 1);
            let layout = stan_csv::StanCsvLayout {
                config_lines: &config,
                sampler_cols: &["lp__"],
                sampler_values: &[fit.log_density],
                draws: &result.draws,
                chain: 0,
                adaptation_lines: &[],
                footer_lines: &[],
                warmup_rows: 0,
                sig_figs: options.sig_figs,
            };
            stan_csv::write_stan_csv(path, &layout)?;
            Ok(vec![path.display().to_string()])
        }
        FitDetails::Mcmc(out) => {
            let mut files = Vec::new();
            // Write every chain to its final name only after all succeeded would need a
            // transaction; each file is written atomically, and a failure stops at once.
            // chain c of `out` is requested chain ids[c]: an interrupted run keeps its chains'
            // own numbers (chain 3's file is `_3.csv` with `id = 3` even when chain 2 is gone)
            let ids = out.chain_ids();
            let requested = options.mcmc.samples.div_ceil(options.mcmc.thin.max(1));
            for (c, chain) in out.chains.iter().enumerate() {
                let id = ids.get(c).copied().unwrap_or(c);
                let file = mcmc_chain_path(path, id);
                let cols = chain.stats.columns();
                let names: Vec<&str> = cols.iter().map(|(n, _)| *n).collect();
                let n = chain.stats.len();
                // saved warmup rows first (`save_warmup`), then the post-warmup ones
                let warmup = result.warmup_draws.as_ref().and_then(|w| w.chains.get(c));
                let warmup_cols = chain.warmup_stats.columns();
                let n_warmup = if warmup.is_some() {
                    chain.warmup_stats.len()
                } else {
                    0
                };
                let mut values = Vec::with_capacity((n_warmup + n) * cols.len());
                for i in 0..n_warmup {
                    values.extend(warmup_cols.iter().map(|(_, v)| v[i]));
                }
                for i in 0..n {
                    values.extend(cols.iter().map(|(_, v)| v[i]));
                }
                let joined = warmup.map(|w| crate::inference::Draws {
                    names: result.draws.names.clone(),
                    chains: vec![[w.as_slice(), &result.draws.chains[c]].concat()],
                });
                // an interrupted run (trimmed by `fit::trim_interrupted`): the kept count
                let kept = out.interrupted.then_some(n);
                let config =
                    mcmc_config_lines(&model_name, options, result.seed, id, chain.dense, kept);
                let adaptation = mcmc_adaptation_lines(
                    options,
                    chain.step_size,
                    &chain.inv_metric,
                    chain.dense,
                    out.dim,
                );
                let mut footer =
                    stan_csv::timing_lines(chain.warmup_seconds, chain.sampling_seconds);
                if let Some(n) = kept {
                    // the last line of an interrupted run's file, as `bayesc fit` streams it
                    footer.push(format!("interrupted: {n} of {requested} draws"));
                }
                let layout = stan_csv::StanCsvLayout {
                    config_lines: &config,
                    sampler_cols: &names,
                    sampler_values: &values,
                    draws: joined.as_ref().unwrap_or(&result.draws),
                    chain: if joined.is_some() { 0 } else { c },
                    adaptation_lines: &adaptation,
                    footer_lines: &footer,
                    warmup_rows: n_warmup,
                    sig_figs: options.sig_figs,
                };
                stan_csv::write_stan_csv(&file, &layout)?;
                files.push(file.display().to_string());
            }
            for w in &out.warmup_stopped {
                files.push(write_warmup_stopped(path, w, result, options, &model_name)?);
            }
            Ok(files)
        }
    }
}

/// Writes the file of chain `w` of an interrupted MCMC run, stopped in warmup with its warmup
/// draws kept (`save_warmup`, [`crate::inference::mcmc::McmcOutput::warmup_stopped`]): the
/// configuration and header, the warmup rows, the timing and the last line `interrupted: 0 of
/// M draws, K warmup draws (in warmup)` — the file `bayesc fit --output` streams for such a
/// chain (`output::stan_stream`). Returns its path.
fn write_warmup_stopped(
    path: &Path,
    w: &crate::inference::chain_end::WarmupStopped,
    result: &FitResult,
    options: &FitOptions,
    model_name: &str,
) -> std::io::Result<String> {
    let file = mcmc_chain_path(path, w.id);
    let cols = w.chain.warmup_stats.columns();
    let names: Vec<&str> = cols.iter().map(|(n, _)| *n).collect();
    let n = w.chain.warmup_stats.len();
    let mut values = Vec::with_capacity(n * cols.len());
    for i in 0..n {
        values.extend(cols.iter().map(|(_, v)| v[i]));
    }
    let draws = crate::inference::Draws {
        names: result.draws.names.clone(),
        chains: vec![w.values.clone()],
    };
    let config = mcmc_config_lines(model_name, options, result.seed, w.id, w.chain.dense, None);
    let mut footer = stan_csv::timing_lines(w.chain.warmup_seconds, 0.0);
    footer.push(format!(
        "interrupted: 0 of {} draws, {n} warmup draws (in warmup)",
        options.mcmc.samples.div_ceil(options.mcmc.thin.max(1))
    ));
    let layout = stan_csv::StanCsvLayout {
        config_lines: &config,
        sampler_cols: &names,
        sampler_values: &values,
        draws: &draws,
        chain: 0,
        adaptation_lines: &[],
        footer_lines: &footer,
        warmup_rows: n,
        sig_figs: options.sig_figs,
    };
    stan_csv::write_stan_csv(&file, &layout)?;
    Ok(file.display().to_string())
}

/// `value (Default)` when `value` equals `default`, as CmdStan marks the settings left at
/// their defaults; `value` otherwise.
fn marked<T: PartialEq + std::fmt::Display>(value: T, default: T) -> String {
    if value == default {
        format!("{value} (Default)")
    } else {
        value.to_string()
    }
}

/// The configuration comment lines of an optimize fit in CmdStan's layout: the algorithm with
/// its settings nested under it (L-BFGS: the five tolerances and `history_size`; BFGS: the
/// tolerances; Newton: none), then `jacobian`, `iter` and `save_iterations`, each value marked
/// `(Default)` when it is CmdStan's default (e.g. `algorithm = lbfgs (Default)`,
/// `tol_rel_grad = 10000000 (Default)`).
pub fn optimize_config_lines(
    model_name: &str,
    options: &FitOptions,
    jacobian: bool,
    seed: u64,
) -> Vec<String> {
    use crate::inference::optimize::{Algorithm, OptimizeSettings};
    let o = &options.optimize;
    let d = OptimizeSettings::default();
    let mut config = stan_csv::cmdstan_config_lines(
        model_name,
        "optimize",
        &[
            ("algorithm", marked(o.algorithm, Algorithm::Lbfgs)),
            ("jacobian", marked(jacobian, false)),
            ("iter", marked(o.max_iter, d.max_iter)),
            ("save_iterations", "false (Default)".to_string()),
        ],
        seed,
        1,
    );
    let mut nested = Vec::new();
    if o.algorithm != Algorithm::Newton {
        nested.push(format!("      {}", o.algorithm));
        for (k, v, dv) in [
            ("tol_obj", o.tol_obj, d.tol_obj),
            ("tol_rel_obj", o.tol_rel_obj, d.tol_rel_obj),
            ("tol_grad", o.tol_grad, d.tol_grad),
            ("tol_rel_grad", o.tol_rel_grad, d.tol_rel_grad),
            ("tol_param", o.tol_param, d.tol_param),
        ] {
            let shown = crate::output::format_f64_roundtrip(v);
            nested.push(format!(
                "        {k} = {shown}{}",
                if v == dv { " (Default)" } else { "" }
            ));
        }
        if o.algorithm == Algorithm::Lbfgs {
            nested.push(format!(
                "        history_size = {}",
                marked(o.history, d.history)
            ));
        }
    }
    let at = config
        .iter()
        .position(|l| l.starts_with("    algorithm = "))
        .map_or(config.len(), |i| i + 1);
    config.splice(at..at, nested);
    config
}

/// Adds `init = FILE` ([`stan_csv::add_init_line`]) for `--init FILE`: the file chain `c`
/// (0-based) of `n` read (CmdStan's per-chain `FILE_c.json` when they exist). Nothing without
/// an init file.
pub fn add_init(config: &mut Vec<String>, options: &FitOptions, c: usize, n: usize) {
    if let Some(f) = &options.init_file {
        let used = fit::inits::init_files(f, n)
            .ok()
            .and_then(|v| v.get(c).cloned())
            .unwrap_or_else(|| f.clone());
        stan_csv::add_init_line(config, &used.display().to_string());
    }
}

/// The model's name as CmdStan writes it in the `model = …` comment: the file stem of `model`
/// (cmdstanpy uses it as a prefix of temporary folder names, so a path would put folders
/// beside the model file); `model` if there is none.
pub fn model_name(model: &Path) -> String {
    model
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "model".to_string())
}

/// The file of MCMC chain `c` (0-based) for `--output path`: `path`'s folder, stem `_c+1`, and
/// extension (default `csv`), e.g. `out/x.csv` → `out/x_1.csv`.
pub fn mcmc_chain_path(path: &Path, c: usize) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "draws".into());
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().into_owned())
        .unwrap_or_else(|| "csv".into());
    let dir = path.parent().unwrap_or(Path::new(""));
    dir.join(format!("{stem}_{}.{ext}", c + 1))
}

/// The configuration comment lines of MCMC chain `c` (0-based) in CmdStan's `sample` layout
/// ([`stan_csv::cmdstan_config_lines`]); `dense`: the chain's metric. `kept` is `None` for a
/// run that finished (`num_samples` the requested count) and `Some(n)` for an interrupted one
/// trimmed to n draws per chain (`num_samples = n·thin`, and a line saying so).
pub fn mcmc_config_lines(
    model_name: &str,
    options: &FitOptions,
    seed: u64,
    c: usize,
    dense: bool,
    kept: Option<usize>,
) -> Vec<String> {
    let (algorithm, engine) = match options.method {
        fit::Method::Nuts => ("hmc", "nuts"),
        fit::Method::Hmc => ("hmc", "static"),
        fit::Method::FixedParam => ("fixed_param", ""),
        _ => ("metropolis", "random_walk"),
    };
    let num_samples = match kept {
        Some(n) => n * options.mcmc.thin,
        None => options.mcmc.samples,
    };
    let fixed = options.method == fit::Method::FixedParam;
    let mut settings = vec![
        ("num_samples", num_samples.to_string()),
        (
            "num_warmup",
            if fixed {
                "0".to_string()
            } else {
                options.mcmc.warmup.to_string()
            },
        ),
        ("thin", options.mcmc.thin.to_string()),
        ("save_warmup", options.mcmc.save_warmup.to_string()),
    ];
    if fixed {
        settings.push(("algorithm", algorithm.to_string()));
    } else {
        let metric = if options.mcmc.metric == mcmc::MetricChoice::Unit
            && options.method != fit::Method::Mh
        {
            "unit_e"
        } else if dense {
            "dense_e"
        } else {
            "diag_e"
        };
        settings.extend([
            ("adapt_delta", options.mcmc.adapt_delta.to_string()),
            ("max_depth", options.mcmc.max_depth.to_string()),
            ("metric", metric.to_string()),
            ("algorithm", algorithm.to_string()),
            ("engine", engine.to_string()),
        ]);
    }
    let mut config = stan_csv::cmdstan_config_lines(model_name, "sample", &settings, seed, c + 1);
    add_init(&mut config, options, c, options.mcmc.chains);
    if let Some(n) = kept {
        config.push(format!(
            "interrupted after {n} draws (Ctrl-C or SIGTERM; {} draws were requested)",
            options.mcmc.samples.div_ceil(options.mcmc.thin)
        ));
    }
    config
}

/// The adaptation comment lines of an MCMC chain of a fit with `options` (after the header,
/// or after the saved warmup rows): CmdStan's diagonal layout
/// ([`stan_csv::nuts_adaptation_lines`]), for a dense d × d `inv_metric` (row-major) its
/// `Elements of inverse mass matrix:` and one line per row, for the unit metric (`unit_e`) the
/// step size and `No free parameters for unit metric`, and none for `fixed_param`.
pub fn mcmc_adaptation_lines(
    options: &FitOptions,
    step_size: f64,
    inv_metric: &[f64],
    dense: bool,
    d: usize,
) -> Vec<String> {
    if options.method == fit::Method::FixedParam {
        return Vec::new();
    }
    if options.mcmc.metric == mcmc::MetricChoice::Unit && options.method != fit::Method::Mh {
        return vec![
            "Adaptation terminated".to_string(),
            format!(
                "Step size = {}",
                crate::output::format_f64_roundtrip(step_size)
            ),
            "No free parameters for unit metric".to_string(),
        ];
    }
    if !dense {
        return stan_csv::nuts_adaptation_lines(step_size, inv_metric);
    }
    let mut lines = vec![
        "Adaptation terminated".to_string(),
        format!("Step size = {step_size}"),
        "Elements of inverse mass matrix:".to_string(),
    ];
    for r in 0..d {
        lines.push(
            inv_metric[r * d..(r + 1) * d]
                .iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join(", "),
        );
    }
    lines
}

/// The settings of a minibatch fit (`--batch-size`), as (key, value) lines of the method's
/// block in CmdStan's configuration comments (bayesc's keys; CmdStan has no minibatching):
/// `batch_size` (M), `batch_over` (the observation axis), `num_observations` (N),
/// `batches_per_epoch` (⌊N/M⌋), `epochs_per_check` (how often the exit rule looks at the
/// full-data ELBO) and `epoch_elbo_draws` (the draws of that ELBO).
fn minibatch_settings(plan: &fit::MinibatchPlan) -> Vec<(&'static str, String)> {
    vec![
        ("batch_size", plan.settings.batch_size.to_string()),
        ("batch_over", plan.separability.axis.clone()),
        ("num_observations", plan.n_obs.to_string()),
        ("batches_per_epoch", plan.batches_per_epoch().to_string()),
        ("epochs_per_check", plan.epochs_per_check().to_string()),
        ("epoch_elbo_draws", plan.settings.elbo_draws.to_string()),
    ]
}

/// Writes a QBVI, QNVB or Laplace fit in the layout of CmdStan's `variational` / `laplace`
/// output (CmdStan Guide, "Variational inference" and "Laplace sampling" output files):
/// variational fits have columns `lp__` (always 0), `log_p__`, `log_g__` and a first row at the
/// mean of the approximation (sampler columns 0), then one row per draw; Laplace fits have
/// `log_p__`, `log_g__` and the draws. `log_p__` is the model's log density on the
/// unconstrained scale with the Jacobian adjustment and `log_g__` the normalised log density of
/// the approximation, at each draw. Written atomically.
fn write_approximation_csv(
    path: &Path,
    result: &FitResult,
    options: &FitOptions,
    model_name: &str,
) -> std::io::Result<()> {
    let n = result.draws.n_draws();
    if result.approx_log_densities.len() != n {
        return Err(std::io::Error::other(format!(
            "internal: {} log densities for {n} draws",
            result.approx_log_densities.len()
        )));
    }
    let laplace = matches!(result.details, FitDetails::Laplace(_));
    let (method, cols): (&str, &[&str]) = if laplace {
        ("laplace", &["log_p__", "log_g__"])
    } else {
        ("variational", &["lp__", "log_p__", "log_g__"])
    };
    // CmdStan's keys, so that cmdstanpy's `from_csv` reads the file, with bayesc's values and
    // a note on what each means for this method (`vi_header`)
    let header = (!laplace).then(|| vi_header::vi_header(result, options, n));
    let mut settings = match &header {
        None => vec![
            ("jacobian", "true".to_string()),
            ("draws", n.to_string()),
            ("fitted_by", "laplace".to_string()),
        ],
        Some(h) => h.settings.clone(),
    };
    if let Some(vi) = &result.vi {
        settings.push(("psis_resample", vi.resampled.to_string()));
    }
    // a plan with M = N (the full data at every step) has no batches to record
    if let (false, Some(plan)) = (laplace, &options.minibatch)
        && plan.settings.batch_size < plan.n_obs
    {
        settings.extend(minibatch_settings(plan));
    }
    let mut config = stan_csv::cmdstan_config_lines(model_name, method, &settings, options.seed, 1);
    if let Some(h) = &header {
        vi_header::insert_notes(&mut config, &h.notes);
    }
    add_init(&mut config, options, 0, 1);
    let mut draws = result.draws.clone();
    let mut values = Vec::with_capacity((n + 1) * cols.len());
    if let (false, Some(row)) = (laplace, &result.approx_mean_row) {
        let mut chain = row.clone();
        chain.extend_from_slice(&draws.chains[0]);
        draws.chains[0] = chain;
        values.extend([0.0, 0.0, 0.0]);
    }
    for &(lp, lq) in &result.approx_log_densities {
        if !laplace {
            values.push(0.0);
        }
        values.extend([lp, lq]);
    }
    // cmdstanpy reads eta from the line after CmdStan's adaptation line (`vi_header`)
    let adaptation = match &header {
        None => Vec::new(),
        Some(h) => vec![
            vi_header::ADAPTATION_LINE.to_string(),
            format!("eta = {}", h.eta),
        ],
    };
    // an interrupted or unconverged fit says so last, where a reader of the draws looks for
    // how they ended (a file read without the report would otherwise look like a result)
    let not_converged = || {
        fit::vi_result_not_converged(result)
            .or_else(|| result.vi.as_ref().and_then(|v| v.moving.clone()))
    };
    let footer = match (result.stopped_early(), result.vi_iterations()) {
        (Some(true), Some(k)) => vec![format!(
            "interrupted: the fit was stopped at iteration {k} (Ctrl-C or SIGTERM) before its \
             exit rule; the draws come from the approximation at that point"
        )],
        _ if laplace => Vec::new(),
        _ => match not_converged() {
            Some(why) => vec![format!(
                "not converged: {why}; the draws come from the approximation where the fit \
                 stopped, which is not a posterior (the fit's report says what to do)"
            )],
            None => Vec::new(),
        },
    };
    let layout = stan_csv::StanCsvLayout {
        config_lines: &config,
        sampler_cols: cols,
        sampler_values: &values,
        draws: &draws,
        chain: 0,
        adaptation_lines: &adaptation,
        footer_lines: &footer,
        warmup_rows: 0,
        sig_figs: options.sig_figs,
    };
    stan_csv::write_stan_csv(path, &layout)
}

/// Writes a Pathfinder fit in the layout of CmdStan's `pathfinder` output (CmdStan Guide,
/// "Pathfinder"): columns `lp_approx__` (log density of the approximation, here the mixture of
/// the paths' Gaussians) and `lp__` (the model's log density on the unconstrained scale with
/// the Jacobian adjustment), then the quantities, one row per (resampled) draw. Atomic.
fn write_pathfinder_csv(
    path: &Path,
    result: &FitResult,
    options: &FitOptions,
    model_name: &str,
) -> std::io::Result<()> {
    let n = result.draws.n_draws();
    if result.approx_log_densities.len() != n {
        return Err(std::io::Error::other(format!(
            "internal: {} log densities for {n} draws",
            result.approx_log_densities.len()
        )));
    }
    let p = &options.pathfinder;
    // num_draws: CmdStan's draws per path; bayesc draws the mixture of the paths as a whole,
    // and the key is what cmdstanpy's `from_csv` needs to read the file
    let settings = [
        ("num_draws", n.to_string()),
        ("num_psis_draws", n.to_string()),
        ("num_paths", p.num_paths.to_string()),
        ("history_size", p.history.to_string()),
        ("num_elbo_draws", p.num_elbo_draws.to_string()),
        ("max_lbfgs_iters", p.optimize.max_iter.to_string()),
        ("psis_resample", "true".to_string()),
    ];
    let mut config =
        stan_csv::cmdstan_config_lines(model_name, "pathfinder", &settings, options.seed, 1);
    add_init(&mut config, options, 0, p.num_paths);
    let values: Vec<f64> = result
        .approx_log_densities
        .iter()
        .flat_map(|&(lp, lq)| [lq, lp])
        .collect();
    let layout = stan_csv::StanCsvLayout {
        config_lines: &config,
        sampler_cols: &["lp_approx__", "lp__"],
        sampler_values: &values,
        draws: &result.draws,
        chain: 0,
        adaptation_lines: &[],
        footer_lines: &[],
        warmup_rows: 0,
        sig_figs: options.sig_figs,
    };
    stan_csv::write_stan_csv(path, &layout)
}

/// The header of a minibatch fit's ELBO trace ([`write_elbo`]).
pub const MINIBATCH_ELBO_HEADER: &str =
    "iteration,batch_elbo,epoch,full_data_elbo,smoothed_full_data_elbo";

/// Writes the ELBO trace of a variational fit as CSV (atomically; docs/variational.md,
/// "ELBO trace"). Full-batch fits: `iteration,elbo,smoothed_elbo`, one row per iteration with
/// an ELBO estimate (every iteration, or every [`crate::inference::vi::GaussianFit::trace_stride`]-th), the
/// smoothed value empty until the exit rule's window is full; Laplace: one row with the Monte
/// Carlo estimate. Minibatch fits (`options.minibatch` and a non-empty
/// [`FitResult::epoch_checks`]): [`MINIBATCH_ELBO_HEADER`], one row per iteration with its
/// batch estimate; at each look of the exit rule also the epoch (completed epochs), the
/// full-data ELBO and its smoothed value (the one the rule compares), empty cells elsewhere.
///
/// Errors: the fit has no VI diagnostics, or the file cannot be written.
pub fn write_elbo(path: &Path, result: &FitResult, options: &FitOptions) -> std::io::Result<()> {
    let Some(vi) = &result.vi else {
        return Err(std::io::Error::other("the fit has no ELBO trace"));
    };
    let checks = result.epoch_checks();
    if let (Some(plan), false) = (&options.minibatch, checks.is_empty()) {
        let per = plan.batches_per_epoch().max(1);
        return crate::output::write_atomic(path, |w| {
            writeln!(w, "{MINIBATCH_ELBO_HEADER}")?;
            let mut next = checks.iter().peekable();
            for &(i, e, _) in &vi.trace {
                write!(w, "{i},{e},")?;
                match next.next_if(|c| c.iteration == i) {
                    Some(c) => writeln!(w, "{},{},{}", i / per, c.elbo, c.smoothed)?,
                    None => writeln!(w, ",,")?,
                }
            }
            Ok(())
        });
    }
    crate::output::write_atomic(path, |w| {
        writeln!(w, "iteration,elbo,smoothed_elbo")?;
        if vi.trace.is_empty() {
            writeln!(w, "0,{},{}", vi.elbo, vi.elbo)?;
        }
        for &(i, e, sm) in &vi.trace {
            if sm.is_nan() {
                writeln!(w, "{i},{e},")?;
            } else {
                writeln!(w, "{i},{e},{sm}")?;
            }
        }
        Ok(())
    })
}
