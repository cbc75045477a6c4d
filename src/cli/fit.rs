//! `bayesc fit`: compile a model against data, run an inference method, print the summary and
//! write the requested outputs.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use clap::{Args, ValueEnum};
use rand::RngExt;

use crate::diagnostics::hmc_stats;
use crate::fit::{self, FitDetails, FitOptions, FitResult, Monitor, ProgressEvent};
use crate::inference::LogDensity;
use crate::inference::mcmc::{self, McmcOutput};
use crate::inference::qbvi::{Covariance, StopReason};
use crate::inference::qnvb::QnvbStop;
use crate::output::{stan_csv, summary};
use crate::pipeline;
use crate::syntax::source::SourceMap;

use super::progress::DelayedBar;

/// Inference methods offered by `bayesc fit --method`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum MethodArg {
    /// Quasi black-box variational inference with natural gradients: a Gaussian posterior on the
    /// unconstrained scale (Magris et al. 2022). Fast; an approximation.
    Qbvi,
    /// Quasi-Newton variational Bayes: a mean-field Gaussian on the unconstrained scale from
    /// four gradient evaluations per step (Duersch 2024). Fast; an approximation.
    Qnvb,
    /// L-BFGS optimisation (as Stan's `optimize`): the mode of the log density without the
    /// Jacobian adjustment (penalised maximum likelihood; the MLE when there are no priors), or
    /// with it (`--jacobian`), with standard errors from the Hessian.
    Optimize,
    /// The Laplace approximation: a Gaussian at the mode of the unconstrained log density with
    /// the inverse negative Hessian as covariance; draws mapped to the constrained scale.
    Laplace,
    /// The no-U-turn sampler (multinomial NUTS with Stan's warmup adaptation).
    Nuts,
    /// Static Hamiltonian Monte Carlo with a fixed number of leapfrog steps.
    Hmc,
    /// Adaptive random-walk Metropolis-Hastings (gradient-free; for small models).
    Mh,
}

impl From<MethodArg> for fit::Method {
    fn from(m: MethodArg) -> Self {
        match m {
            MethodArg::Qbvi => fit::Method::Qbvi,
            MethodArg::Qnvb => fit::Method::Qnvb,
            MethodArg::Optimize => fit::Method::Optimize,
            MethodArg::Laplace => fit::Method::Laplace,
            MethodArg::Nuts => fit::Method::Nuts,
            MethodArg::Hmc => fit::Method::Hmc,
            MethodArg::Mh => fit::Method::Mh,
        }
    }
}

/// Standard errors of `--method optimize` (`--se`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum SeArg {
    /// Classical: square roots of the diagonal of the inverse negative Hessian (as Stan and
    /// statsmodels report).
    Hessian,
    /// Robust: the Huber–White / Bollerslev–Wooldridge sandwich H⁻¹ B H⁻¹ (B from the
    /// per-observation scores), which the `arch` package reports by default.
    Robust,
}

/// The HMC/NUTS metric (`--metric`), as [`mcmc::MetricChoice`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum MetricArg {
    /// Dense for models with at most 16 unconstrained parameters, diagonal above.
    Auto,
    /// Diagonal (Stan's default `diag_e`).
    Diag,
    /// Dense (Stan's `dense_e`).
    Dense,
}

/// Arguments of `bayesc fit`.
#[derive(Args, Debug)]
pub struct FitArgs {
    /// The model file (.bayes).
    pub model: PathBuf,
    /// Data files (CSV with a header row, or JSON in Stan's format); repeat for several files.
    #[arg(long = "data", value_name = "FILE")]
    pub data: Vec<PathBuf>,
    /// Inference method.
    #[arg(long, value_enum, default_value_t = MethodArg::Qbvi)]
    pub method: MethodArg,
    /// Random seed; a fit is reproducible for a given seed whatever the number of threads.
    /// Without it a seed is drawn and printed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Write the posterior draws (constrained scale). Variational methods: one CSV file with a
    /// header row. MCMC: one file per chain in Stan's CSV layout, named FILE_1.csv, FILE_2.csv, …
    /// (readable by ArviZ, cmdstanpy and `bayesc summary`).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Do not print the progress bar or the settings line.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Save the fitted posterior (parameter draws, model hash) as JSON for `bayesc predict`.
    #[arg(long, value_name = "FIT.json")]
    pub save_fit: Option<PathBuf>,

    /// Variational methods: number of posterior draws to report and write.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..), help_heading = "Variational inference")]
    pub draws: u64,
    /// QBVI: use a diagonal (mean-field) Gaussian instead of a full covariance.
    #[arg(long, help_heading = "Variational inference")]
    pub diagonal: bool,
    /// QBVI: Monte Carlo draws per iteration (N_s).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(2..), help_heading = "Variational inference")]
    pub mc_samples: u64,
    /// QBVI, QNVB: maximum number of iterations.
    #[arg(long, default_value_t = 5000, value_parser = clap::value_parser!(u64).range(1..), help_heading = "Variational inference")]
    pub max_iter: u64,
    /// QBVI: step size β in (0, 1); by default 0.05 (diagonal) or min(0.05, 0.005·N_s/d) (full).
    #[arg(long, help_heading = "Variational inference")]
    pub step_size: Option<f64>,
    /// QBVI, QNVB, Laplace: write the ELBO trace (columns iteration, elbo, smoothed_elbo; the
    /// smoothed value is empty until its window is full) to FILE as CSV. Laplace has no
    /// iterations: one row, iteration 0, with the Monte Carlo ELBO estimate.
    #[arg(long, value_name = "FILE", help_heading = "Variational inference")]
    pub elbo_output: Option<PathBuf>,
    /// QBVI, QNVB, Laplace: importance-resample the reported draws with the Pareto-smoothed
    /// weights of the PSIS diagnostic (1000 draws of the fitted approximation).
    #[arg(long, help_heading = "Variational inference")]
    pub psis_resample: bool,
    /// Optimize: include the Jacobian adjustment of the constraining transforms, i.e. find the
    /// mode of the density of the unconstrained parameters (Stan's `jacobian=1`). Off by
    /// default: the mode on the constrained scale (penalised MLE; the MLE without priors).
    #[arg(long, help_heading = "Optimization")]
    pub jacobian: bool,
    /// Optimize: standard errors, `hessian` (default; classical inverse negative Hessian, as
    /// Stan and statsmodels) or `robust` (the Huber–White / Bollerslev–Wooldridge sandwich
    /// H⁻¹BH⁻¹ from the per-observation scores, which the arch package reports by default).
    #[arg(long, value_enum, value_name = "KIND", help_heading = "Optimization")]
    pub se: Option<SeArg>,
    /// QBVI: start from a random point (uniform(−2, 2) on the unconstrained scale, Σ₀ = 0.01·I)
    /// instead of the Laplace approximation at the mode.
    #[arg(long, help_heading = "Variational inference")]
    pub random_init: bool,

    /// MCMC: number of chains, run in parallel.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..), help_heading = "MCMC")]
    pub chains: u64,
    /// MCMC: warmup (adaptation) iterations per chain; for mh the default is max(2000, 500·d).
    #[arg(long, help_heading = "MCMC")]
    pub warmup: Option<u64>,
    /// MCMC: post-warmup iterations per chain; for mh the default is max(2000, 200·d).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..), help_heading = "MCMC")]
    pub samples: Option<u64>,
    /// MCMC: keep every n-th post-warmup draw.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..), help_heading = "MCMC")]
    pub thin: u64,
    /// NUTS/HMC: target acceptance statistic of the step-size adaptation, in (0, 1).
    #[arg(long, default_value_t = 0.8, help_heading = "MCMC")]
    pub adapt_delta: f64,
    /// NUTS: maximum tree depth (at most 2^depth leapfrog steps per iteration).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=30), help_heading = "MCMC")]
    pub max_depth: u64,
    /// NUTS/HMC: the metric warmup adapts: `auto` (dense when d ≤ 16, else diagonal), `diag`
    /// (Stan's default diag_e) or `dense` (dense_e).
    #[arg(long, value_enum, default_value_t = MetricArg::Auto, help_heading = "MCMC")]
    pub metric: MetricArg,
    /// NUTS/HMC: shorthand for `--metric dense`.
    #[arg(long, conflicts_with = "metric", help_heading = "MCMC")]
    pub dense: bool,
    /// HMC: leapfrog steps per iteration (default: integration time 2π over the adapted step size).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..), help_heading = "MCMC")]
    pub n_leapfrog: Option<u64>,
}

/// Runs the fit; returns the exit code.
pub fn run(args: FitArgs) -> i32 {
    if let Err(msg) = check_args(&args) {
        eprintln!("error: {msg}");
        return super::EXIT_USAGE;
    }
    // Fail before a long fit, not after it, when an output cannot be written.
    for path in [&args.output, &args.elbo_output, &args.save_fit]
        .into_iter()
        .flatten()
    {
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if !dir.is_dir() {
            eprintln!(
                "error: cannot write `{}`: the folder `{}` does not exist",
                path.display(),
                dir.display()
            );
            return super::EXIT_ERROR;
        }
    }
    let mut sources = SourceMap::new();
    let checked = match pipeline::check_file(&mut sources, &args.model) {
        Ok(c) => c,
        Err(f) => return super::report_failure(&sources, f),
    };
    super::report_warnings(&sources, &checked.warnings);
    if args.data.is_empty() && !checked.program.data.is_empty() {
        eprintln!(
            "error: the model declares data ({}) but no data file was given; pass it with `--data FILE` (CSV or JSON)",
            checked
                .program
                .data
                .iter()
                .map(|d| d.name.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
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
    let seed = args
        .seed
        .unwrap_or_else(|| rand::rng().random::<u32>() as u64);
    let options = options_from_args(&args, model.dim(), seed);
    if !args.quiet {
        println!("{}", settings_line(&options, model.dim()));
    }

    // Ctrl-C stops the fit at its next iteration; the draws made so far are reported, marked
    // as interrupted. A second Ctrl-C exits at once (status 130, nothing written): the way out
    // of a model whose log density never returns (e.g. `while (1) {}`). (Installing the handler
    // fails only if one is already installed.)
    STOP.store(false, Ordering::SeqCst);
    let _ = ctrlc::set_handler(|| {
        if STOP.swap(true, Ordering::SeqCst) {
            eprintln!("\ninterrupted twice: exiting without output");
            std::process::exit(130);
        }
        eprintln!("\ninterrupted: stopping at the next iteration (Ctrl-C again to quit at once)");
    });
    let result = {
        let mcmc_total = (options.mcmc.warmup + options.mcmc.samples) * options.mcmc.chains;
        let (len, template) = if options.method.is_mcmc() {
            (
                mcmc_total as u64,
                "{bar:30} {pos}/{len} iterations (all chains) {msg} [{elapsed} < {eta}]",
            )
        } else if options.method == fit::Method::Qnvb {
            (
                options.qnvb.max_iter as u64,
                "{spinner} QNVB iteration {pos}, {msg} [{elapsed}]",
            )
        } else {
            (
                options.qbvi.max_iter as u64,
                "{spinner} QBVI iteration {pos}, {msg} [{elapsed}]",
            )
        };
        let iterative = !matches!(options.method, fit::Method::Optimize | fit::Method::Laplace);
        let bar = DelayedBar::new(len, template, !args.quiet && iterative);
        let chain_pos: Vec<AtomicUsize> = (0..options.mcmc.chains)
            .map(|_| AtomicUsize::new(0))
            .collect();
        let on_progress = |e: ProgressEvent| match e {
            ProgressEvent::Qbvi(p) => bar.update(p.iteration as u64, || match p.smoothed_elbo {
                Some(s) => format!("smoothed ELBO {s:.3}"),
                None => format!("ELBO {:.3}", p.elbo),
            }),
            ProgressEvent::Chain(p) => {
                if let Some(slot) = chain_pos.get(p.chain) {
                    slot.store(p.iteration, Ordering::Relaxed);
                }
                let pos: usize = chain_pos.iter().map(|a| a.load(Ordering::Relaxed)).sum();
                bar.update(pos as u64, || {
                    if p.warmup {
                        "warmup".into()
                    } else {
                        "sampling".into()
                    }
                });
            }
        };
        let monitor = Monitor {
            on_progress: &on_progress,
            stop: &STOP,
        };
        let r = fit::fit(&model, &options, &monitor);
        bar.finish();
        r
    };
    let result = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return super::EXIT_ERROR;
        }
    };
    print_result(&result, &options, Some(&checked.unpriored));
    if let (Some(path), Some(vi)) = (&args.elbo_output, &result.vi) {
        match write_elbo(path, vi) {
            Ok(()) => println!("\nELBO trace written to {}", path.display()),
            Err(e) => {
                eprintln!(
                    "error: cannot write the ELBO trace to `{}`: {e}",
                    path.display()
                );
                return super::EXIT_ERROR;
            }
        }
    }
    let no_draws = result.draws.chains.is_empty();
    if no_draws && (args.output.is_some() || args.save_fit.is_some()) {
        println!("\nnothing written: the fit has no draws");
    }
    if let Some(path) = args.output.as_ref().filter(|_| !no_draws) {
        match write_outputs(path, &result, &options, &args.model) {
            Ok(files) => println!("\ndraws written to {}", files.join(", ")),
            Err(e) => {
                eprintln!("error: cannot write draws to `{}`: {e}", path.display());
                return super::EXIT_ERROR;
            }
        }
    }
    if let Some(path) = args.save_fit.as_ref().filter(|_| !no_draws) {
        let text = sources.text(checked.file);
        let saved = crate::predict::SavedFit::from_fit(
            &model,
            &args.model.display().to_string(),
            text,
            &result,
        );
        if let Err(e) = saved.save(path) {
            eprintln!("error: {e}");
            return super::EXIT_ERROR;
        }
        println!("fit saved to {}", path.display());
    }
    if fit_was_interrupted(&result) {
        // The conventional exit status of a process stopped by SIGINT (128 + 2), so that
        // scripts do not take an incomplete fit for a finished one.
        return EXIT_INTERRUPTED;
    }
    0
}

/// Exit status after Ctrl-C stopped a fit (its partial results were printed and written).
const EXIT_INTERRUPTED: i32 = 130;

/// Whether Ctrl-C stopped the fit before it finished.
fn fit_was_interrupted(result: &FitResult) -> bool {
    match &result.details {
        FitDetails::Qbvi(f) => f.stop == StopReason::Interrupted,
        FitDetails::Mcmc(out) => out.interrupted,
        _ => STOP.load(Ordering::SeqCst),
    }
}

/// Checks of the options that clap cannot express (ranges, flags that do not apply to the
/// chosen method), shared by [`run`] and the REPL's `:fit`.
pub(crate) fn check_args(args: &FitArgs) -> Result<(), String> {
    if let Some(b) = args.step_size
        && !(b > 0.0 && b < 1.0)
    {
        return Err(format!("--step-size must be in (0, 1), got {b}"));
    }
    if !(args.adapt_delta > 0.0 && args.adapt_delta < 1.0) {
        return Err(format!(
            "--adapt-delta must be in (0, 1), got {}",
            args.adapt_delta
        ));
    }
    let method: fit::Method = args.method.into();
    if args.elbo_output.is_some() && !method.is_variational() {
        return Err(format!(
            "--elbo-output applies to the variational methods (qbvi, qnvb, laplace), not {method}"
        ));
    }
    if args.psis_resample && !method.is_variational() {
        return Err(format!(
            "--psis-resample applies to the variational methods (qbvi, qnvb, laplace), not {method}"
        ));
    }
    if args.jacobian && method != fit::Method::Optimize {
        return Err(
            "--jacobian applies to --method optimize (the other methods always include the \
                    Jacobian adjustment)"
                .to_string(),
        );
    }
    if args.se.is_some() && method != fit::Method::Optimize {
        return Err(format!(
            "--se applies to --method optimize, not {method} (the Laplace approximation always \
             uses the inverse negative Hessian)"
        ));
    }
    // Flags of other methods would be silently ignored: refuse them. Flags with defaults count
    // as given when they differ from the default.
    use fit::Method as M;
    let mcmc = method.is_mcmc();
    let hmc = matches!(method, M::Nuts | M::Hmc);
    let checks: [(&str, bool, bool, &str); 15] = [
        (
            "--draws",
            args.draws != 1000,
            matches!(method, M::Qbvi | M::Qnvb | M::Laplace),
            "qbvi, qnvb, laplace",
        ),
        ("--diagonal", args.diagonal, method == M::Qbvi, "qbvi"),
        (
            "--mc-samples",
            args.mc_samples != 100,
            method == M::Qbvi,
            "qbvi",
        ),
        (
            "--max-iter",
            args.max_iter != 5000,
            matches!(method, M::Qbvi | M::Qnvb),
            "qbvi, qnvb",
        ),
        (
            "--step-size",
            args.step_size.is_some(),
            method == M::Qbvi,
            "qbvi",
        ),
        (
            "--random-init",
            args.random_init,
            matches!(method, M::Qbvi | M::Qnvb),
            "qbvi, qnvb",
        ),
        ("--chains", args.chains != 4, mcmc, "nuts, hmc, mh"),
        ("--warmup", args.warmup.is_some(), mcmc, "nuts, hmc, mh"),
        ("--samples", args.samples.is_some(), mcmc, "nuts, hmc, mh"),
        ("--thin", args.thin != 1, mcmc, "nuts, hmc, mh"),
        ("--adapt-delta", args.adapt_delta != 0.8, hmc, "nuts, hmc"),
        (
            "--max-depth",
            args.max_depth != 10,
            method == M::Nuts,
            "nuts",
        ),
        ("--metric", args.metric != MetricArg::Auto, hmc, "nuts, hmc"),
        ("--dense", args.dense, hmc, "nuts, hmc"),
        (
            "--n-leapfrog",
            args.n_leapfrog.is_some(),
            method == M::Hmc,
            "hmc",
        ),
    ];
    if let Some((flag, _, _, methods)) = checks
        .iter()
        .find(|(_, given, applies, _)| *given && !applies)
    {
        return Err(format!(
            "{flag} applies to --method {methods}, not {method}; remove it or choose one of those methods"
        ));
    }
    Ok(())
}

/// Set by the Ctrl-C handler; polled by the running fit.
static STOP: AtomicBool = AtomicBool::new(false);

/// Step-size jitter of static HMC when the number of leapfrog steps is left to its default.
const HMC_DEFAULT_JITTER: f64 = 0.5;

/// The library options that the command-line arguments describe.
pub(crate) fn options_from_args(args: &FitArgs, dim: usize, seed: u64) -> FitOptions {
    let method: fit::Method = args.method.into();
    let mut o = FitOptions::new(method, seed);
    o.vi_draws = args.draws as usize;
    o.qbvi.covariance = if args.diagonal {
        Covariance::Diagonal
    } else {
        Covariance::Full
    };
    o.qbvi.n_samples = args.mc_samples as usize;
    o.qbvi.step_size = args.step_size;
    o.qbvi.max_iter = args.max_iter as usize;
    o.qnvb.max_iter = args.max_iter as usize;
    if args.random_init {
        o.vi_init = fit::ViInit::Random;
    }
    o.psis_resample = args.psis_resample;
    o.jacobian = args.jacobian;
    if args.se == Some(SeArg::Robust) {
        o.std_errors = fit::StdErrorKind::Robust;
    }
    if method == fit::Method::Mh {
        o.mcmc = mcmc::McmcSettings::mh_defaults(dim);
    }
    o.mcmc.chains = args.chains as usize;
    if let Some(w) = args.warmup {
        o.mcmc.warmup = w as usize;
    }
    if let Some(s) = args.samples {
        o.mcmc.samples = s as usize;
    }
    o.mcmc.thin = args.thin as usize;
    o.mcmc.adapt_delta = args.adapt_delta;
    o.mcmc.max_depth = args.max_depth as usize;
    o.mcmc.metric = match (args.dense, args.metric) {
        (true, _) | (_, MetricArg::Dense) => mcmc::MetricChoice::Dense,
        (false, MetricArg::Diag) => mcmc::MetricChoice::Diag,
        (false, MetricArg::Auto) => mcmc::MetricChoice::Auto,
    };
    if method == fit::Method::Hmc {
        o.mcmc.method = mcmc::Method::StaticHmc {
            n_leapfrog: args.n_leapfrog.map(|n| n as usize),
        };
        if args.n_leapfrog.is_none() {
            // The default integration time 2π (Stan's) is one full period of a unit-scale
            // Gaussian after metric adaptation, so fixed-length trajectories return near their
            // start and the chain barely moves; jittering the step size by ±50 % randomises
            // the integration time (Neal 2011, §5.4.2.2) and restores mixing.
            o.mcmc.jitter = HMC_DEFAULT_JITTER;
        }
    }
    o
}

/// One line naming the method and its settings.
fn settings_line(o: &FitOptions, d: usize) -> String {
    match o.method {
        fit::Method::Qbvi => format!(
            "method = qbvi ({} covariance, residual form, start: {}); d = {d} unconstrained parameters; N_s = {}; step size = {:.4}; max_iter = {}; seed = {}",
            if o.qbvi.covariance == Covariance::Diagonal {
                "diagonal"
            } else {
                "full"
            },
            if o.vi_init == fit::ViInit::Mode {
                "Laplace at the mode, random if there is none"
            } else {
                "random"
            },
            o.qbvi.n_samples,
            o.qbvi.effective_step_size(d),
            o.qbvi.max_iter,
            o.seed
        ),
        fit::Method::Qnvb => format!(
            "method = qnvb (mean-field, {} quadrature points per step, start: {}); d = {d} unconstrained parameters; max_iter = {}; seed = {}",
            o.qnvb.n_e,
            if o.vi_init == fit::ViInit::Mode {
                "the mode"
            } else {
                "random"
            },
            o.qnvb.max_iter,
            o.seed
        ),
        fit::Method::Optimize => format!(
            "method = optimize (L-BFGS + Newton polish, jacobian = {}: {}; se = {}); d = {d} unconstrained parameters; seed = {}",
            o.jacobian,
            if o.jacobian {
                "mode of the unconstrained density"
            } else {
                "mode on the constrained scale, i.e. (penalised) maximum likelihood"
            },
            o.std_errors,
            o.seed
        ),
        fit::Method::Laplace => format!(
            "method = laplace (Gaussian at the mode of the unconstrained density, covariance = inverse negative Hessian); d = {d} unconstrained parameters; seed = {}",
            o.seed
        ),
        m => format!(
            "method = {m}; d = {d} unconstrained parameters; {} chains × ({} warmup + {} draws){}; {}metric = {}; seed = {}",
            o.mcmc.chains,
            o.mcmc.warmup,
            o.mcmc.samples,
            if o.mcmc.thin > 1 {
                format!(", thin = {}", o.mcmc.thin)
            } else {
                String::new()
            },
            match m {
                fit::Method::Mh => String::new(),
                fit::Method::Hmc => format!("adapt_delta = {}; ", o.mcmc.adapt_delta),
                _ => format!(
                    "adapt_delta = {}; max_depth = {}; ",
                    o.mcmc.adapt_delta, o.mcmc.max_depth
                ),
            },
            match (m, o.mcmc.metric, o.mcmc.dense(d)) {
                (fit::Method::Mh, _, _) if o.mcmc.mh.dense => "dense proposal shape",
                (fit::Method::Mh, _, _) => "diagonal proposal shape",
                (_, mcmc::MetricChoice::Auto, true) => "dense (auto: d ≤ 16)",
                (_, mcmc::MetricChoice::Auto, false) => "diagonal (auto: d > 16)",
                (_, _, true) => "dense",
                (_, _, false) => "diagonal",
            },
            o.seed
        ),
    }
}

/// Prints convergence information and the summary table of a fit.
fn print_result(result: &FitResult, options: &FitOptions, unpriored: Option<&[String]>) {
    match &result.details {
        FitDetails::Qbvi(fit) => {
            match fit.stop {
                StopReason::ExitRule
                    if fit.skipped_steps == 0
                        && result.vi.as_ref().is_none_or(|v| v.collapsed.is_empty()) =>
                {
                    println!(
                        "converged: the exit rule fired after {} iterations ({:.2} s); smoothed ELBO = {:.3}",
                        fit.iterations, result.seconds, fit.best_smoothed_elbo
                    )
                }
                // skipped updates: the smoothed ELBO stopped improving because q stopped moving
                StopReason::ExitRule if fit.skipped_steps > 0 => println!(
                    "WARNING: not converged: the exit rule fired after {} iterations ({:.2} s), but {} of \
                     them skipped their update (the positive-definiteness guard), so q stopped moving \
                     rather than reaching the optimum; smoothed ELBO = {:.3}. Use --method nuts, or \
                     start elsewhere (--random-init, other --seed).",
                    fit.iterations, result.seconds, fit.skipped_steps, fit.best_smoothed_elbo
                ),
                // q collapsed to a point (warned about below): the ELBO stopped improving
                // because q cannot move, not because it reached the optimum
                StopReason::ExitRule => println!(
                    "WARNING: not converged: the exit rule fired after {} iterations ({:.2} s), but the \
                     approximation collapsed to a point (see below); smoothed ELBO = {:.3}",
                    fit.iterations, result.seconds, fit.best_smoothed_elbo
                ),
                StopReason::MaxIterations => println!(
                    "WARNING: QBVI hit the iteration cap ({} iterations, {:.2} s) before the exit rule fired; \
                     the approximation may not have converged. Raise --max-iter or lower --step-size. \
                     Best smoothed ELBO = {:.3}",
                    fit.iterations, result.seconds, fit.best_smoothed_elbo
                ),
                StopReason::Interrupted => println!(
                    "interrupted after {} iterations: the summary describes the approximation at that point",
                    fit.iterations
                ),
            }
            if fit.skipped_steps > 0 && fit.stop != StopReason::ExitRule {
                println!(
                    "note: the positive-definiteness guard skipped {} update steps",
                    fit.skipped_steps
                );
            }
            println!(
                "posterior summary from {} draws of the fitted Gaussian (constrained scale):\n",
                result.draws.n_draws()
            );
            let rows = summary::summarize(&result.draws, false);
            print!("{}", summary::format_table(&rows, false));
            print!("{}", vi_diagnostics_text_with(result, unpriored));
        }
        FitDetails::Qnvb(fit) => {
            match fit.stop {
                QnvbStop::Converged => println!(
                    "converged: the smoothed ELBO stopped improving after {} iterations ({:.2} s)",
                    fit.iterations, result.seconds
                ),
                QnvbStop::MaxIterations => println!(
                    "WARNING: QNVB hit the iteration cap ({} iterations, {:.2} s) before the smoothed ELBO \
                     stopped improving; the approximation may not have converged",
                    fit.iterations, result.seconds
                ),
                QnvbStop::Interrupted => println!(
                    "interrupted after {} iterations: the summary describes the approximation at that point",
                    fit.iterations
                ),
            }
            println!(
                "posterior summary from {} draws of the fitted mean-field Gaussian (constrained scale):\n",
                result.draws.n_draws()
            );
            let rows = summary::summarize(&result.draws, false);
            print!("{}", summary::format_table(&rows, false));
            print!("{}", vi_diagnostics_text_with(result, unpriored));
        }
        FitDetails::Laplace(fit) => {
            println!(
                "mode found by L-BFGS and Newton steps ({:.2} s; final L-BFGS check: {}); log density at the mode = {:.4}",
                result.seconds, fit.optimization.message, fit.log_density_at_mode
            );
            println!(
                "posterior summary from {} draws of the Laplace approximation (constrained scale):\n",
                result.draws.n_draws()
            );
            let rows = summary::summarize(&result.draws, false);
            print!("{}", summary::format_table(&rows, false));
            print!("{}", vi_diagnostics_text_with(result, unpriored));
        }
        FitDetails::Optimize(fit) => print!("{}", optimize_text(result, fit)),
        FitDetails::Mcmc(out) => print!("{}", mcmc_text(result, out, options)),
    }
}

/// What `--method optimize` prints (and the REPL's `:fit optimize`): the table of estimates
/// and standard errors ([`optimize_table`]), the log density at the optimum, the iterations,
/// the convergence verdict and how the standard errors were computed. Ends with a newline.
pub(crate) fn optimize_text(result: &FitResult, fit: &fit::OptimizeFit) -> String {
    use std::fmt::Write as _;
    let mut s = optimize_table(fit);
    let _ = writeln!(
        s,
        "\nlog density at the optimum = {:.6} ({})",
        fit.log_density,
        if fit.jacobian {
            "with the Jacobian adjustment"
        } else {
            "without the Jacobian adjustment"
        }
    );
    let _ = writeln!(
        s,
        "iterations: {} L-BFGS + {} Newton steps ({:.2} s)",
        fit.lbfgs.iterations, fit.newton_steps, result.seconds
    );
    if fit.converged {
        let _ = writeln!(s, "converged: {}", fit.lbfgs.message);
    } else {
        let _ = writeln!(
            s,
            "WARNING: L-BFGS did not converge: {}{}",
            fit.lbfgs.message,
            if fit.newton_steps > 0 {
                " (the Newton polish that followed reached a point where the Hessian is negative definite)"
            } else {
                ""
            }
        );
    }
    if fit.std_errors.iter().any(|v| v.is_nan()) {
        s.push_str(
            "WARNING: the Hessian at the optimum is not negative definite (or could not be computed): no standard errors\n",
        );
    }
    s.push_str(match fit.std_error_kind {
        fit::StdErrorKind::Hessian => {
            "standard errors: inverse negative Hessian of the optimised log density (finite differences) on the \
             unconstrained scale, mapped to the constrained scale by the delta method\n"
        }
        fit::StdErrorKind::Robust => {
            "standard errors: robust sandwich H⁻¹BH⁻¹ (H the finite-difference Hessian, B the covariance of the \
             per-observation scores) on the unconstrained scale, mapped to the constrained scale by the delta method\n"
        }
    });
    s
}

/// What an MCMC fit prints (CLI and the REPL's `:fit`): how many chains and draws were kept
/// (for an interrupted run, after [`fit::trim_interrupted`]: "k chains × n draws kept"), the
/// summary table with MCSE, ESS and R-hat, and the sampler and convergence warnings. When an
/// interrupted run has no post-warmup draws it says so and prints no table. Ends with a newline.
pub(crate) fn mcmc_text(result: &FitResult, out: &McmcOutput, options: &FitOptions) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let kept = result.draws.n_draws();
    let k = result.draws.chains.len();
    if !out.interrupted {
        let _ = writeln!(
            s,
            "{} chains finished in {:.2} s (wall); {kept} draws per chain kept",
            out.chains.len(),
            result.seconds,
        );
    } else if kept == 0 {
        let _ = writeln!(
            s,
            "INTERRUPTED after {:.2} s (wall), before any of the {} chains finished warmup: \
             there are no post-warmup draws to summarise",
            result.seconds, options.mcmc.chains
        );
        return s;
    } else {
        let _ = writeln!(
            s,
            "INTERRUPTED after {:.2} s (wall): {k} chains × {kept} draws kept (of {} chains; \
             chains without post-warmup draws are dropped, the others cut to the shortest)",
            result.seconds, options.mcmc.chains
        );
    }
    let rows = summary::summarize(&result.draws, true);
    s.push('\n');
    s.push_str(&summary::format_table(&rows, true));
    let mut warnings = out.warnings(&options.mcmc);
    warnings.extend(hmc_warnings(out, options));
    warnings.extend(summary::convergence_warnings(&rows, k));
    if !warnings.is_empty() {
        s.push_str("\nwarnings:\n");
        for w in warnings {
            let _ = writeln!(s, "  - {w}");
        }
    }
    s
}

/// E-BFMI per chain (`specs/diagnostics.md` §5).
pub(crate) fn hmc_warnings(out: &McmcOutput, options: &FitOptions) -> Vec<String> {
    if options.method == fit::Method::Mh {
        return Vec::new();
    }
    let mut w = Vec::new();
    for (c, chain) in out.chains.iter().enumerate() {
        if let Ok(b) = hmc_stats::e_bfmi(&chain.stats.energy)
            && b < hmc_stats::E_BFMI_THRESHOLD
        {
            w.push(format!(
                "chain {}: E-BFMI = {b:.3} is below {}: the sampler explores the energy distribution poorly; \
                 reparameterise the model (e.g. non-centred hierarchical parameters)",
                c + 1,
                hmc_stats::E_BFMI_THRESHOLD
            ));
        }
    }
    w
}

/// Writes the draws; returns the file names written.
pub(crate) fn write_outputs(
    path: &Path,
    result: &FitResult,
    options: &FitOptions,
    model: &Path,
) -> std::io::Result<Vec<String>> {
    // the model's name, as CmdStan writes it (cmdstanpy uses it as a prefix of temporary
    // folder names, so a path would put folders beside the model file)
    let model_name = model
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "model".to_string());
    match &result.details {
        FitDetails::Qbvi(_) | FitDetails::Qnvb(_) | FitDetails::Laplace(_) => {
            write_approximation_csv(path, result, options, &model_name)?;
            Ok(vec![path.display().to_string()])
        }
        FitDetails::Optimize(fit) => {
            let config = stan_csv::cmdstan_config_lines(
                &model_name,
                "optimize",
                &[
                    ("algorithm", "lbfgs".to_string()),
                    ("jacobian", fit.jacobian.to_string()),
                    ("save_iterations", "false".to_string()),
                ],
                result.seed,
                1,
            );
            let layout = stan_csv::StanCsvLayout {
                config_lines: &config,
                sampler_cols: &["lp__"],
                sampler_values: &[fit.log_density],
                draws: &result.draws,
                chain: 0,
                adaptation_lines: &[],
                footer_lines: &[],
            };
            stan_csv::write_stan_csv(path, &layout)?;
            Ok(vec![path.display().to_string()])
        }
        FitDetails::Mcmc(out) => {
            let stem = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "draws".into());
            let ext = path
                .extension()
                .map(|e| e.to_string_lossy().into_owned())
                .unwrap_or_else(|| "csv".into());
            let dir = path.parent().unwrap_or(Path::new(""));
            let mut files = Vec::new();
            // Write every chain to its final name only after all succeeded would need a
            // transaction; each file is written atomically, and a failure stops at once.
            for (c, chain) in out.chains.iter().enumerate() {
                let file = dir.join(format!("{stem}_{}.{ext}", c + 1));
                let cols = chain.stats.columns();
                let names: Vec<&str> = cols.iter().map(|(n, _)| *n).collect();
                let n = chain.stats.len();
                let mut values = Vec::with_capacity(n * cols.len());
                for i in 0..n {
                    values.extend(cols.iter().map(|(_, v)| v[i]));
                }
                let (algorithm, engine) = match options.method {
                    fit::Method::Nuts => ("hmc", "nuts"),
                    fit::Method::Hmc => ("hmc", "static"),
                    _ => ("metropolis", "random_walk"),
                };
                // an interrupted run (trimmed by `fit::trim_interrupted`): the kept count
                let num_samples = if out.interrupted {
                    n * options.mcmc.thin
                } else {
                    options.mcmc.samples
                };
                let settings = vec![
                    ("num_samples", num_samples.to_string()),
                    ("num_warmup", options.mcmc.warmup.to_string()),
                    ("thin", options.mcmc.thin.to_string()),
                    ("save_warmup", "false".to_string()),
                    ("adapt_delta", options.mcmc.adapt_delta.to_string()),
                    ("max_depth", options.mcmc.max_depth.to_string()),
                    (
                        "metric",
                        if chain.dense {
                            "dense_e".into()
                        } else {
                            "diag_e".into()
                        },
                    ),
                    ("algorithm", algorithm.to_string()),
                    ("engine", engine.to_string()),
                ];
                let mut config = stan_csv::cmdstan_config_lines(
                    &model_name,
                    "sample",
                    &settings,
                    result.seed,
                    c + 1,
                );
                if out.interrupted {
                    config.push(format!(
                        "interrupted after {n} draws (Ctrl-C; {} draws were requested)",
                        options.mcmc.samples.div_ceil(options.mcmc.thin)
                    ));
                }
                let adaptation = if chain.dense {
                    let d = out.dim;
                    let mut lines = vec![
                        "Adaptation terminated".to_string(),
                        format!("Step size = {}", chain.step_size),
                        "Elements of inverse mass matrix:".to_string(),
                    ];
                    for r in 0..d {
                        lines.push(
                            chain.inv_metric[r * d..(r + 1) * d]
                                .iter()
                                .map(|v| v.to_string())
                                .collect::<Vec<_>>()
                                .join(", "),
                        );
                    }
                    lines
                } else {
                    stan_csv::nuts_adaptation_lines(chain.step_size, &chain.inv_metric)
                };
                let footer = stan_csv::timing_lines(chain.warmup_seconds, chain.sampling_seconds);
                let layout = stan_csv::StanCsvLayout {
                    config_lines: &config,
                    sampler_cols: &names,
                    sampler_values: &values,
                    draws: &result.draws,
                    chain: c,
                    adaptation_lines: &adaptation,
                    footer_lines: &footer,
                };
                stan_csv::write_stan_csv(&file, &layout)?;
                files.push(file.display().to_string());
            }
            Ok(files)
        }
    }
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
    // CmdStan's keys, so that cmdstanpy's `from_csv` reads the file: `algorithm` names the
    // approximating family (`fullrank` / `meanfield`, CmdStan's words), `variational_method`
    // the algorithm that fitted it; iter, grad_samples, elbo_samples, eta and eval_elbo are
    // bayesc's corresponding settings (max iterations, Monte Carlo draws per iteration, step
    // size, ELBO evaluated every iteration).
    let (family, fitted_by, iter, mc, eta) = match &result.details {
        FitDetails::Qbvi(f) => (
            match f.family {
                Covariance::Full => "fullrank",
                Covariance::Diagonal => "meanfield",
            },
            "qbvi",
            options.qbvi.max_iter,
            options.qbvi.n_samples,
            options.qbvi.effective_step_size(f.mean.len()),
        ),
        _ => ("meanfield", "qnvb", options.qnvb.max_iter, 4, f64::NAN),
    };
    let mut settings = if laplace {
        vec![
            ("jacobian", "true".to_string()),
            ("draws", n.to_string()),
            ("fitted_by", "laplace".to_string()),
        ]
    } else {
        vec![
            ("algorithm", family.to_string()),
            ("variational_method", fitted_by.to_string()),
            ("iter", iter.to_string()),
            ("grad_samples", mc.to_string()),
            ("elbo_samples", mc.to_string()),
            ("eta", eta.to_string()),
            // CmdStan's default; unused: bayesc's exit rule is the smoothed-ELBO rule
            ("tol_rel_obj", "0.01".to_string()),
            ("eval_elbo", "1".to_string()),
            ("output_samples", n.to_string()),
        ]
    };
    if let Some(vi) = &result.vi {
        settings.push(("psis_resample", vi.resampled.to_string()));
    }
    let config = stan_csv::cmdstan_config_lines(model_name, method, &settings, options.seed, 1);
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
    // cmdstanpy reads eta from this block (CmdStan's ADVI adapts it; QBVI's is fixed)
    let adaptation = if laplace {
        Vec::new()
    } else {
        vec![
            "Stepsize adaptation complete.".to_string(),
            format!("eta = {eta}"),
        ]
    };
    let layout = stan_csv::StanCsvLayout {
        config_lines: &config,
        sampler_cols: cols,
        sampler_values: &values,
        draws: &draws,
        chain: 0,
        adaptation_lines: &adaptation,
        footer_lines: &[],
    };
    stan_csv::write_stan_csv(path, &layout)
}

/// The table of `--method optimize`: name, estimate, standard error (constrained scale).
pub(crate) fn optimize_table(fit: &fit::OptimizeFit) -> String {
    let width = fit
        .names
        .iter()
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    let mut out = format!(
        "standard errors: {}\n{:<width$}  {:>14}  {:>12}\n",
        match fit.std_error_kind {
            fit::StdErrorKind::Hessian => "classical (inverse negative Hessian)",
            fit::StdErrorKind::Robust =>
                "robust (sandwich H⁻¹BH⁻¹, Huber–White / Bollerslev–Wooldridge)",
        },
        "name",
        "estimate",
        "std. error"
    );
    for ((n, e), s) in fit.names.iter().zip(&fit.estimates).zip(&fit.std_errors) {
        let se = if s.is_nan() {
            "-".to_string()
        } else {
            format!("{s:.6}")
        };
        out.push_str(&format!("{n:<width$}  {e:>14.6}  {se:>12}\n"));
    }
    out
}

/// PSIS k̂, its verdict (or the collapse warning, [`fit::ViDiagnostics::collapsed`]) and the
/// ELBO estimate of a variational fit, as printed after the summary table by `bayesc fit` and
/// the REPL's `:fit` and `:diagnostics`: lines ending in a newline, starting with an empty
/// line; empty when the fit has no [`FitResult::vi`].
pub(crate) fn vi_diagnostics_text(result: &FitResult) -> String {
    vi_diagnostics_text_with(result, None)
}

/// [`vi_diagnostics_text`] knowing which parameters have no prior (`Checked::unpriored`), so
/// that the advice of a degenerate fit names the right cause.
fn vi_diagnostics_text_with(result: &FitResult, unpriored: Option<&[String]>) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let Some(vi) = &result.vi else { return s };
    let khat = if vi.khat == f64::NEG_INFINITY {
        "undefined (the log ratios log p - log q are constant to rounding)".to_string()
    } else {
        format!("{:.3}", vi.khat)
    };
    let _ = writeln!(
        s,
        "\nPSIS k-hat = {khat} ({} draws of the approximation; PSIS ESS = {:.0}); ELBO estimate = {:.3}",
        vi.n_draws, vi.psis_ess, vi.elbo
    );
    if !vi.collapsed.is_empty() {
        let list: Vec<String> = vi
            .collapsed
            .iter()
            .map(|(n, m, sd)| format!("`{n}` (mean {m:.3e}, sd {sd:.1e})"))
            .collect();
        let _ = writeln!(
            s,
            "{}",
            fit::collapse_warning_for(&list.join(", "), unpriored)
        );
    } else if vi.khat > fit::KHAT_BAD {
        let _ = writeln!(
            s,
            "WARNING: PSIS k-hat > {}: the approximation is unreliable; use --method nuts",
            fit::KHAT_BAD
        );
    } else if vi.khat > fit::KHAT_OK {
        let _ = writeln!(
            s,
            "note: PSIS k-hat is between {} and {}: the approximation is usable, but tail quantities may be inaccurate",
            fit::KHAT_OK,
            fit::KHAT_BAD
        );
    }
    let not_converged = fit::vi_not_converged(&result.details);
    if let Some(m) = fit::start_message_for(vi, not_converged.as_deref(), unpriored) {
        let _ = writeln!(s, "{m}");
    }
    if vi.resampled {
        s.push_str("the draws were importance-resampled with the Pareto-smoothed weights\n");
    }
    s
}

/// Writes the ELBO trace as CSV (atomically). Laplace: one row with the Monte Carlo estimate.
fn write_elbo(path: &Path, vi: &fit::ViDiagnostics) -> std::io::Result<()> {
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

#[cfg(test)]
mod option_tests {
    //! Every flag that [`check_args`] accepts for a method must reach a setting that method
    //! reads in [`options_from_args`] (issue 13, item 6: QNVB ignored `--max-iter`).

    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Wrapper {
        #[command(flatten)]
        fit: FitArgs,
    }

    fn parse(extra: &[&str]) -> FitArgs {
        let mut argv = vec!["bayesc", "m.bayes"];
        argv.extend_from_slice(extra);
        Wrapper::try_parse_from(argv)
            .expect("test arguments parse")
            .fit
    }

    /// The part of the options that `method` reads for `flag`, as text.
    fn read(flag: &str, method: fit::Method, o: &FitOptions) -> String {
        use fit::Method as M;
        match (flag, method) {
            ("--draws", _) => format!("{}", o.vi_draws),
            ("--diagonal", _) => format!("{:?}", o.qbvi.covariance),
            ("--mc-samples", _) => format!("{}", o.qbvi.n_samples),
            ("--max-iter", M::Qnvb) => format!("{}", o.qnvb.max_iter),
            ("--max-iter", _) => format!("{}", o.qbvi.max_iter),
            ("--step-size", _) => format!("{:?}", o.qbvi.step_size),
            ("--random-init", _) => format!("{:?}", o.vi_init),
            ("--psis-resample", _) => format!("{}", o.psis_resample),
            ("--jacobian", _) => format!("{}", o.jacobian),
            ("--se", _) => format!("{}", o.std_errors),
            ("--chains", _) => format!("{}", o.mcmc.chains),
            ("--warmup", _) => format!("{}", o.mcmc.warmup),
            ("--samples", _) => format!("{}", o.mcmc.samples),
            ("--thin", _) => format!("{}", o.mcmc.thin),
            ("--adapt-delta", _) => format!("{}", o.mcmc.adapt_delta),
            ("--max-depth", _) => format!("{}", o.mcmc.max_depth),
            ("--metric" | "--dense", _) => format!("{:?}", o.mcmc.metric),
            ("--n-leapfrog", _) => format!("{:?}", o.mcmc.method),
            _ => panic!("no reader for {flag}"),
        }
    }

    #[test]
    fn every_accepted_flag_changes_a_setting_its_method_reads() {
        let flags: [&[&str]; 19] = [
            &["--draws", "7"],
            &["--diagonal"],
            &["--mc-samples", "7"],
            &["--max-iter", "7"],
            &["--step-size", "0.3"],
            &["--random-init"],
            &["--psis-resample"],
            &["--jacobian"],
            &["--se", "robust"],
            &["--chains", "2"],
            &["--warmup", "7"],
            &["--samples", "7"],
            &["--thin", "2"],
            &["--adapt-delta", "0.95"],
            &["--max-depth", "5"],
            &["--metric", "diag"],
            &["--dense"],
            &["--n-leapfrog", "5"],
            &["--metric", "dense"],
        ];
        let methods = ["qbvi", "qnvb", "laplace", "optimize", "nuts", "hmc", "mh"];
        let mut accepted = 0;
        let mut failures = Vec::new();
        for m in methods {
            let base = parse(&["--method", m]);
            let method: fit::Method = base.method.into();
            let o0 = options_from_args(&base, 3, 1);
            for flag in flags {
                let mut argv = vec!["--method", m];
                argv.extend_from_slice(flag);
                let args = parse(&argv);
                if check_args(&args).is_err() {
                    continue;
                }
                accepted += 1;
                let o1 = options_from_args(&args, 3, 1);
                if read(flag[0], method, &o0) == read(flag[0], method, &o1) {
                    failures.push(format!(
                        "--method {m} {}: accepted but ignored",
                        flag.join(" ")
                    ));
                }
            }
        }
        // 6 VI flags × 2 + draws/psis for laplace + optimize's 2 + MCMC's (4 + 5 + 5 + 4 + 1)
        assert!(accepted >= 30, "only {accepted} accepted pairs");
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn flags_of_other_methods_are_refused() {
        for (m, flag) in [
            ("qnvb", &["--step-size", "0.3"][..]),
            ("qnvb", &["--mc-samples", "7"][..]),
            ("laplace", &["--max-iter", "7"][..]),
            ("optimize", &["--draws", "7"][..]),
            ("mh", &["--adapt-delta", "0.95"][..]),
            ("hmc", &["--max-depth", "5"][..]),
            ("nuts", &["--n-leapfrog", "5"][..]),
            ("nuts", &["--jacobian"][..]),
        ] {
            let mut argv = vec!["--method", m];
            argv.extend_from_slice(flag);
            let e = check_args(&parse(&argv)).expect_err("flag of another method");
            assert!(e.contains(flag[0]), "{e}");
        }
    }
}
