//! The options of a fit as a user types them — `bayesc fit`'s flags and the REPL's `:fit`
//! arguments (one clap definition for both) — their validation, and their conversion into the
//! library's [`FitOptions`].

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::fit::{self, FitOptions};
use crate::inference::qbvi::{self, Covariance};
use crate::inference::{mcmc, optimize};

mod checks;
pub use checks::{MisplacedOption, check_args, check_values, misplaced_options};

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
    /// No sampling: the parameters stay at their initial values and each iteration draws the
    /// generated quantities afresh (CmdStan's `fixed_param` sampler; chosen automatically for
    /// MCMC on a model without parameters). For simulation from generated quantities.
    #[value(name = "fixed_param", alias = "fixed-param")]
    FixedParam,
    /// IVON (Shen et al. 2024): mean-field Gaussian by variational online Newton steps with
    /// Price's Hessian estimate; uses gradients. An approximation (survey_vi.md §17).
    Ivon,
    /// Bayes-by-backprop (Blundell et al. 2015): mean-field Gaussian by reparameterised
    /// gradients and Adam, softplus-ρ scales. An approximation (survey_vi.md §5).
    Bbb,
    /// Black-box VI (Ranganath et al. 2014): mean-field Gaussian from values of the log density
    /// only (score function, Rao–Blackwellised, lagged control variates, AdaGrad). An
    /// approximation, noisy at large d (survey_vi.md §7).
    Bbvi,
    /// MGVB (Tran et al. 2021): full-covariance Gaussian by manifold natural-gradient steps
    /// from values of the log density only. O(d³) per step (survey_vi.md §14).
    Mgvb,
    /// EMGVB (Magris et al. 2022): MGVB with the exact natural gradient on the precision;
    /// converges faster than MGVB. O(d³) per step (survey_vi.md §15).
    Emgvb,
    /// NGVI (Khan & Nielsen 2018): Gaussian natural-gradient VI from reparameterised gradients
    /// and Stein's identity; full covariance, or mean-field with --diagonal (survey_vi.md §9).
    Ngvi,
    /// Multi-path Pathfinder (Zhang et al. 2022): Gaussian approximations along L-BFGS paths
    /// from several starts, their mixture importance-resampled. Fast; an approximation, also a
    /// good start for NUTS.
    Pathfinder,
    /// NG-BBVI (Trusheim et al. 2018): mean-field Gaussian from values of the log density only,
    /// natural gradient with a Monte Carlo Fisher matrix and Adam (survey_vi.md §8).
    Ngbbvi,
    /// VON (Khan et al. 2018): variational online Newton with the Hessian at one draw; full
    /// covariance, or mean-field with --diagonal. Fails where the log density is not
    /// log-concave (reported; survey_vi.md §10).
    Von,
    /// Vadam (Khan et al. 2018): mean-field Gaussian by Adam with weight perturbation; its
    /// variances come from squared minibatch gradients and depend on --batch-size (default 1;
    /// survey_vi.md §11). Needs a model whose log density splits over rows.
    Vadam,
    /// VOGN (Khan et al. 2018, Osawa et al. 2019): mean-field Gaussian with per-example squared
    /// gradients (empirical Fisher; survey_vi.md §12). Needs a model whose log density splits
    /// over rows; full batch unless --batch-size.
    Vogn,
    /// Variational Laplace (Unlu & Aitchison 2021): mean-field Gaussian from the second-order
    /// expansion of the ELBO at the mean, σ² = 1/diag curvature; uses gradients; takes
    /// --batch-size. An approximation (survey_vi.md §16).
    Vlaplace,
    /// MC dropout (Gal & Ghahramani 2016): Adam on the log joint with Bernoulli masks on the
    /// units of `@dropout(p)` parameters; draws are masked weights. Needs a dropout site;
    /// takes --batch-size (survey_vi.md §4).
    Mcdropout,
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
            MethodArg::FixedParam => fit::Method::FixedParam,
            MethodArg::Ivon => fit::Method::Ivon,
            MethodArg::Bbb => fit::Method::Bbb,
            MethodArg::Bbvi => fit::Method::Bbvi,
            MethodArg::Mgvb => fit::Method::Mgvb,
            MethodArg::Emgvb => fit::Method::Emgvb,
            MethodArg::Ngvi => fit::Method::Ngvi,
            MethodArg::Pathfinder => fit::Method::Pathfinder,
            MethodArg::Ngbbvi => fit::Method::Ngbbvi,
            MethodArg::Von => fit::Method::Von,
            MethodArg::Vadam => fit::Method::Vadam,
            MethodArg::Vogn => fit::Method::Vogn,
            MethodArg::Vlaplace => fit::Method::Vlaplace,
            MethodArg::Mcdropout => fit::Method::Mcdropout,
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
    /// Dense when it pays (d ≤ 16, or d ≤ 50 with its d² per step small next to the gradient), else diagonal.
    Auto,
    /// Diagonal (Stan's default `diag_e`).
    Diag,
    /// Dense (Stan's `dense_e`).
    Dense,
    /// The unit metric (Stan's `unit_e`): the identity, not adapted; warmup adapts only the
    /// step size.
    Unit,
}

/// QBVI's estimator of the natural gradient (`--estimator`), as
/// [`crate::inference::qbvi::Estimator`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum EstimatorArg {
    /// `score` for d ≤ 50, `gradient` above, where the score-function estimate's noise is too
    /// large for the step size (docs/bnn_methods.md).
    Auto,
    /// The paper's values-only score-function estimate with control variates (qbvi.md §5).
    Score,
    /// The Bonnet/Price (Stein) estimates from ∇L at the same draws (qbvi.md §3.2); N_s
    /// defaults to 10.
    Gradient,
}

/// The optimizer of `--method optimize` (`--algorithm`), as CmdStan's `optimize algorithm=…`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum AlgorithmArg {
    /// L-BFGS (default): a limited-memory inverse-Hessian estimate (`--history-size` pairs).
    Lbfgs,
    /// BFGS: a dense inverse-Hessian estimate (O(d²) memory and work per iteration).
    Bfgs,
    /// Newton's method with the finite-difference Hessian (made negative definite where it is
    /// not) and step halving; stops when an iteration gains less than 1e-8 (CmdStan's rule).
    Newton,
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
    #[arg(long, value_parser = whole(0, u64::MAX), allow_negative_numbers = true)]
    pub seed: Option<u64>,
    /// Write the posterior draws (constrained scale). Variational methods: one CSV file with a
    /// header row. MCMC: one file per chain in Stan's CSV layout, named FILE_1.csv, FILE_2.csv, …
    /// (readable by ArviZ, cmdstanpy and `bayesc summary`).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Write every output file (--output, --elbo-output, --save-fit) into DIR, created if
    /// missing; relative file names are taken inside DIR. Without --output the draws go to
    /// DIR/<model>.csv (MCMC: DIR/<model>_1.csv, …).
    #[arg(long, value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
    /// Significant digits of the numbers in the draws files, 1 to 18 (CmdStan's `sig_figs`;
    /// by default every number is written with the digits that read back to the same value).
    #[arg(long, value_name = "N", value_parser = whole(1, 18), allow_negative_numbers = true)]
    pub sig_figs: Option<u64>,
    /// Do not print the progress bar or the settings line.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Worker threads for chains, Monte Carlo draws and paths (default: one per core). Results
    /// do not depend on it: a seed gives the same draws at any thread count.
    #[arg(long, value_parser = whole(1, 1024), allow_negative_numbers = true)]
    pub threads: Option<u64>,
    /// Save the fitted posterior (parameter draws, model hash) as JSON for `bayesc predict`.
    #[arg(long, value_name = "FIT.json")]
    pub save_fit: Option<PathBuf>,

    /// Variational methods: number of posterior draws to report and write.
    #[arg(long, default_value_t = 1000, value_parser = whole(1, u64::MAX), help_heading = "Variational inference", allow_negative_numbers = true)]
    pub draws: u64,
    /// QBVI, NGVI, VON: use a diagonal (mean-field) Gaussian (QBVI, VON: default when d > 50).
    #[arg(long, conflicts_with = "full", help_heading = "Variational inference")]
    pub diagonal: bool,
    /// QBVI, VON: use a full-covariance Gaussian (default when d ≤ 50).
    #[arg(long, help_heading = "Variational inference")]
    pub full: bool,
    /// QBVI: how the natural gradient is estimated: `score` (the paper's, from log-density
    /// values), `gradient` (from ∇L by the Bonnet/Price identities) or `auto` (score for
    /// d ≤ 50, gradient above).
    #[arg(long, value_enum, default_value_t = EstimatorArg::Auto, help_heading = "Variational inference")]
    pub estimator: EstimatorArg,
    /// QBVI, BBVI, MGVB, EMGVB, NG-BBVI, Vadam: Monte Carlo draws per iteration (N_s, S, K;
    /// QBVI's gradient estimator defaults to 10, MGVB, EMGVB and NG-BBVI to 50, Vadam to 1).
    #[arg(long, default_value_t = 100, value_parser = whole(2, u64::MAX), help_heading = "Variational inference", allow_negative_numbers = true)]
    pub mc_samples: u64,
    /// QBVI, QNVB and the survey methods: maximum number of iterations (Vadam: 100 000).
    #[arg(long, default_value_t = 5000, value_parser = whole(1, u64::MAX), help_heading = "Variational inference", allow_negative_numbers = true)]
    pub max_iter: u64,
    /// QBVI: step size β in (0, 1); by default 0.05 (diagonal) or min(0.05, 0.005·N_s/d) (full).
    /// IVON, BBB, BBVI, NG-BBVI, Vadam, VOGN: the learning rate (defaults 0.1, 0.01, 0.2, 0.01,
    /// 0.001 and 0.1); MGVB, EMGVB: β₀ (0.01); NGVI, VON: β (0.05). NUTS, HMC: the initial
    /// step size ε̄ > 0 before Stan's heuristic and dual averaging adapt it (default 1).
    #[arg(
        long,
        allow_negative_numbers = true,
        help_heading = "Variational inference"
    )]
    pub step_size: Option<f64>,
    /// The variational methods (QBVI, QNVB and the survey's: BBB, IVON, VOGN, …) and Laplace:
    /// write the ELBO trace (columns iteration, elbo, smoothed_elbo; the
    /// smoothed value is empty until its window is full) to FILE as CSV. Laplace has no
    /// iterations: one row, iteration 0, with the Monte Carlo ELBO estimate. With --batch-size:
    /// columns iteration, batch_elbo, epoch, full_data_elbo, smoothed_full_data_elbo, the last
    /// three at the exit rule's epoch checks only (docs/minibatch.md).
    #[arg(long, value_name = "FILE", help_heading = "Variational inference")]
    pub elbo_output: Option<PathBuf>,
    /// The variational methods (not Pathfinder, which always does) and Laplace:
    /// importance-resample the reported draws with the Pareto-smoothed
    /// weights of the PSIS diagnostic (1000 draws of the fitted approximation).
    #[arg(long, help_heading = "Variational inference")]
    pub psis_resample: bool,
    /// Optimize: include the Jacobian adjustment of the constraining transforms, i.e. find the
    /// mode of the density of the unconstrained parameters (Stan's `jacobian=1`). Off by
    /// default: the mode on the constrained scale (penalised MLE; the MLE without priors).
    #[arg(long, help_heading = "Optimization")]
    pub jacobian: bool,
    /// Optimize: the optimizer, `lbfgs` (default), `bfgs` or `newton` (CmdStan's
    /// `algorithm`). Newton reads only --iter.
    #[arg(long, value_enum, help_heading = "Optimization")]
    pub algorithm: Option<AlgorithmArg>,
    /// Optimize: maximum number of iterations (CmdStan's `iter`; default 2000).
    #[arg(long, value_name = "N", value_parser = whole(1, u64::MAX), help_heading = "Optimization", allow_negative_numbers = true)]
    pub iter: Option<u64>,
    /// Optimize (lbfgs, bfgs): stop when the objective changes by less than this between
    /// iterations (CmdStan's `tol_obj`; default 1e-12).
    #[arg(
        long,
        value_name = "TOL",
        allow_negative_numbers = true,
        help_heading = "Optimization"
    )]
    pub tol_obj: Option<f64>,
    /// Optimize (lbfgs, bfgs): stop when the relative change of the objective,
    /// |Δf| / max(|f|, |f_prev|, 1), is below this times machine epsilon (CmdStan's
    /// `tol_rel_obj`; default 1e4).
    #[arg(
        long,
        value_name = "TOL",
        allow_negative_numbers = true,
        help_heading = "Optimization"
    )]
    pub tol_rel_obj: Option<f64>,
    /// Optimize (lbfgs, bfgs): stop when the gradient norm is below this (CmdStan's
    /// `tol_grad`; default 1e-8).
    #[arg(
        long,
        value_name = "TOL",
        allow_negative_numbers = true,
        help_heading = "Optimization"
    )]
    pub tol_grad: Option<f64>,
    /// Optimize (lbfgs, bfgs): stop when the relative gradient gᵀHg / max(|f|, 1), with H the
    /// inverse-Hessian estimate, is below this times machine epsilon (CmdStan's
    /// `tol_rel_grad`; default 1e7).
    #[arg(
        long,
        value_name = "TOL",
        allow_negative_numbers = true,
        help_heading = "Optimization"
    )]
    pub tol_rel_grad: Option<f64>,
    /// Optimize (lbfgs, bfgs): stop when the parameters move by less than this (Euclidean norm
    /// on the unconstrained scale; CmdStan's `tol_param`; default 1e-8).
    #[arg(
        long,
        value_name = "TOL",
        allow_negative_numbers = true,
        help_heading = "Optimization"
    )]
    pub tol_param: Option<f64>,
    /// Optimize: standard errors, `hessian` (default; classical inverse negative Hessian, as
    /// Stan and statsmodels) or `robust` (the Huber–White / Bollerslev–Wooldridge sandwich
    /// H⁻¹BH⁻¹ from the per-observation scores, which the arch package reports by default).
    #[arg(long, value_enum, value_name = "KIND", help_heading = "Optimization")]
    pub se: Option<SeArg>,
    /// QBVI, QNVB and the survey's variational methods (not Pathfinder): start from a random
    /// point (uniform(−2, 2) on the unconstrained scale, Σ₀ = 0.01·I for QBVI) instead of the
    /// Laplace approximation at the mode.
    #[arg(long, help_heading = "Variational inference")]
    pub random_init: bool,
    /// Variational methods with at most 50 unconstrained parameters: report the method's own
    /// end point (the average of its last iterates) instead of refining its mean by up to two
    /// Newton steps of the ELBO after the exit rule fires, and a mean-field q's sds to the
    /// ELBO's fixed point (the default; docs/variational.md). The stationarity check then
    /// judges the unrefined q.
    #[arg(long, help_heading = "Variational inference")]
    pub no_refine: bool,

    /// Where the fit starts. MCMC: a number R (uniform(−R, R) on the unconstrained scale;
    /// default 2, Stan's; 0 starts at zero) or `pathfinder` (one importance-resampled draw of
    /// multi-path Pathfinder per chain, as Stan can; the Pathfinder flags apply). Any method:
    /// a JSON file of initial values on the constrained scale, laid out as a data file
    /// (CmdStan's `init=FILE`); parameters it leaves out start uniform(−2, 2) on the
    /// unconstrained scale. With several chains (Pathfinder: paths), FILE_1.json, FILE_2.json,
    /// … are read when FILE_1.json exists, as CmdStan does; else FILE serves every chain.
    #[arg(long, value_name = "R|pathfinder|FILE", allow_hyphen_values = true)]
    pub init: Option<String>,
    /// MCMC: number of chains, run in parallel (at most 1024: every chain keeps its draws in
    /// memory and adds to the summary's cost, and more chains than that only repeat work).
    #[arg(long, default_value_t = 4, value_parser = whole(1, 1024), help_heading = "MCMC", allow_negative_numbers = true)]
    pub chains: u64,
    /// MCMC: warmup (adaptation) iterations per chain; for mh the default is max(2000, 500·d).
    #[arg(long, help_heading = "MCMC", value_parser = whole(0, u64::MAX), allow_negative_numbers = true)]
    pub warmup: Option<u64>,
    /// MCMC: post-warmup iterations per chain; for mh the default is max(2000, 200·d).
    #[arg(long, value_parser = whole(1, u64::MAX), help_heading = "MCMC", allow_negative_numbers = true)]
    pub samples: Option<u64>,
    /// MCMC: also write the warmup draws to the draws files, before the adaptation comments
    /// (CmdStan's `save_warmup`); summaries, `bayesc summary` and plots leave them out.
    #[arg(long, help_heading = "MCMC")]
    pub save_warmup: bool,
    /// MCMC: print a progress line per chain every N iterations instead of the progress bar, as
    /// CmdStan's `refresh` (`Chain [1] Iteration:  100 / 2000 [  5%]  (Warmup)`); 0 prints none.
    #[arg(long, value_name = "N", help_heading = "MCMC", value_parser = whole(0, u64::MAX), allow_negative_numbers = true)]
    pub refresh: Option<u64>,
    /// MCMC: keep every n-th post-warmup draw.
    #[arg(long, default_value_t = 1, value_parser = whole(1, u64::MAX), help_heading = "MCMC", allow_negative_numbers = true)]
    pub thin: u64,
    /// NUTS/HMC: target acceptance statistic of the step-size adaptation, in (0, 1).
    #[arg(
        long,
        default_value_t = 0.8,
        allow_negative_numbers = true,
        help_heading = "MCMC"
    )]
    pub adapt_delta: f64,
    /// NUTS: maximum tree depth (at most 2^depth leapfrog steps per iteration).
    #[arg(long, default_value_t = 10, value_parser = whole(1, 30), help_heading = "MCMC", allow_negative_numbers = true)]
    pub max_depth: u64,
    /// NUTS/HMC: the metric warmup adapts: `auto` (dense when d ≤ 16, or d ≤ 50 with its d² per
    /// step small next to the gradient; else diagonal), `diag` (Stan's default diag_e), `dense`
    /// (dense_e) or `unit` (unit_e: the identity, not adapted).
    #[arg(long, value_enum, default_value_t = MetricArg::Auto, help_heading = "MCMC")]
    pub metric: MetricArg,
    /// NUTS/HMC: shorthand for `--metric dense`.
    #[arg(long, conflicts_with = "metric", help_heading = "MCMC")]
    pub dense: bool,
    /// HMC: leapfrog steps per iteration (default: integration time 2π over the adapted step size).
    #[arg(long, value_parser = whole(1, u64::MAX), help_heading = "MCMC", allow_negative_numbers = true)]
    pub n_leapfrog: Option<u64>,
    /// Pathfinder: number of independent L-BFGS paths, run in parallel.
    #[arg(long, default_value_t = 4, value_parser = whole(1, 1024), help_heading = "Pathfinder", allow_negative_numbers = true)]
    pub num_paths: u64,
    /// Pathfinder, optimize (lbfgs): correction pairs in the L-BFGS inverse-Hessian estimate
    /// (default 6 for Pathfinder's paths, 5 for optimize as CmdStan's `history_size`).
    #[arg(long, value_parser = whole(1, 100), help_heading = "Pathfinder", allow_negative_numbers = true)]
    pub history_size: Option<u64>,
    /// Pathfinder: draws K per L-BFGS iterate for its ELBO estimate.
    #[arg(long, default_value_t = 25, value_parser = whole(1, u64::MAX), help_heading = "Pathfinder", allow_negative_numbers = true)]
    pub num_elbo_draws: u64,
    /// QNVB, IVON, BBB, Vadam (default 1), VOGN, QBVI and VON with --diagonal: fit on minibatches of M rows (a fresh permutation per epoch; terms
    /// that depend on the rows scaled by N/M). The compiler first proves that the model's log
    /// density splits over the rows (docs/minibatch.md).
    #[arg(long, value_name = "M", value_parser = whole(1, u64::MAX), help_heading = "Minibatching", allow_negative_numbers = true)]
    pub batch_size: Option<u64>,
    /// With --batch-size: the `int` data variable that counts the rows (needed when several
    /// data sizes could be the observation axis; default: the one sizing the data, or the one
    /// equal to the CSV row count).
    #[arg(long, value_name = "NAME", help_heading = "Minibatching")]
    pub batch_over: Option<String>,
    /// The ids (field names, e.g. `num_paths`) of the options given explicitly on the command
    /// line, filled by [`FitArgs::note_explicit`] from clap's value sources; an option given at
    /// its default value is still "given", and [`check_args`] refuses it for a method that
    /// does not use it.
    #[arg(skip)]
    pub explicit: Vec<String>,
}

impl FitArgs {
    /// Records which options `matches` (the matches these arguments were parsed from) took
    /// from the command line rather than from their defaults (clap's
    /// [`clap::parser::ValueSource::CommandLine`]), skipping the ids in `except` (options a
    /// caller supplied itself, e.g. the REPL's `:set` defaults).
    pub fn note_explicit(&mut self, matches: &clap::ArgMatches, except: &[&str]) {
        self.explicit = matches
            .ids()
            .map(|id| id.as_str())
            .filter(|id| {
                matches.value_source(id) == Some(clap::parser::ValueSource::CommandLine)
                    && !except.contains(id)
            })
            .map(str::to_string)
            .collect();
    }

    /// Whether the option with clap id `id` (the field name) was given explicitly.
    fn given(&self, id: &str) -> bool {
        self.explicit.iter().any(|e| e == id)
    }
}

/// `bayesc fit`'s options parsed from words as typed after the model on the command line
/// (`["--method", "nuts", "--seed", "1"]`) for callers that are not the command line (the
/// Python package turns its keyword arguments into these words). `model` fills the positional
/// model path. The options are checked as `bayesc fit` checks them: clap's parsing, then
/// [`check_args`] (options of other methods refused, also at their default value).
///
/// Errors: clap's rendered message (`error: unexpected argument '--foo' found` …) or
/// `error: ` followed by [`check_args`]'s message — the CLI's wording in both cases.
/// A parser for a count flag: a whole number in `lo ..= hi`. Its errors say what is expected
/// ("a whole number from 1 up", "from 1 to 18"), where clap's own `u64` parser answered a
/// negative value with Rust's "invalid digit found in string".
fn whole(lo: u64, hi: u64) -> impl Fn(&str) -> Result<u64, String> + Clone + Send + Sync + 'static {
    move |s: &str| {
        let want = if hi == u64::MAX {
            format!("a whole number from {lo} up")
        } else {
            format!("a whole number from {lo} to {hi}")
        };
        match s.trim().parse::<i128>() {
            Ok(v) if v >= lo as i128 && v <= hi as i128 => Ok(v as u64),
            Ok(_) => Err(format!("expected {want}")),
            Err(_) if s.trim().parse::<f64>().is_ok() => {
                Err(format!("expected {want}, without a decimal point"))
            }
            Err(_) => Err(format!("expected {want}")),
        }
    }
}

pub fn parse_option_words(model: &str, words: &[String]) -> Result<FitArgs, String> {
    use clap::{CommandFactory, FromArgMatches, Parser};
    /// `bayesc fit`'s arguments under the CLI's name, without a binary name.
    #[derive(Parser, Debug)]
    #[command(
        name = "bayesc fit",
        no_binary_name = true,
        disable_help_flag = true,
        disable_version_flag = true
    )]
    struct Words {
        #[command(flatten)]
        args: FitArgs,
    }
    let argv = std::iter::once(model.to_string()).chain(words.iter().cloned());
    let matches = Words::command()
        .try_get_matches_from(argv)
        .map_err(|e| e.render().to_string().trim_end().to_string())?;
    let mut parsed = Words::from_arg_matches(&matches)
        .map_err(|e| e.render().to_string().trim_end().to_string())?;
    parsed.args.note_explicit(&matches, &[]);
    check_args(&parsed.args).map_err(|m| format!("error: {m}"))?;
    Ok(parsed.args)
}

/// The value of `--init`.
#[derive(Clone, Debug, PartialEq)]
enum InitArg {
    /// uniform(−R, R).
    Radius(f64),
    /// Pathfinder draws.
    Pathfinder,
    /// A JSON file of initial values (`fit::inits`).
    File(PathBuf),
}

/// Parses `--init`: a finite number ≥ 0, `pathfinder`, or else the name of a JSON file of
/// initial values (CmdStan's rule: what does not read as a number is a file name).
fn parse_init(value: Option<&str>) -> Result<Option<InitArg>, String> {
    let Some(v) = value else { return Ok(None) };
    if v.eq_ignore_ascii_case("pathfinder") {
        return Ok(Some(InitArg::Pathfinder));
    }
    match v.parse::<f64>() {
        Ok(r) if r >= 0.0 && r.is_finite() => Ok(Some(InitArg::Radius(r))),
        Ok(_) => Err(format!(
            "--init takes a radius R ≥ 0 (chains start uniform(−R, R) on the unconstrained \
             scale), `pathfinder`, or a JSON file of initial values; got `{v}`"
        )),
        Err(_) => Ok(Some(InitArg::File(PathBuf::from(v)))),
    }
}

/// Step-size jitter of static HMC when the number of leapfrog steps is left to its default.
const HMC_DEFAULT_JITTER: f64 = 0.5;

/// The library options that the command-line arguments describe.
pub fn options_from_args(args: &FitArgs, dim: usize, seed: u64) -> FitOptions {
    let method: fit::Method = args.method.into();
    let mut o = FitOptions::new(method, seed);
    o.vi_draws = args.draws as usize;
    o.qbvi.covariance = if args.diagonal {
        Covariance::Diagonal
    } else if args.full {
        Covariance::Full
    } else {
        o.covariance_by_dimension = true;
        Covariance::for_dimension(dim)
    };
    o.qbvi.n_samples = args.mc_samples as usize;
    o.qbvi.estimator = match args.estimator {
        EstimatorArg::Score => qbvi::Estimator::Score,
        EstimatorArg::Gradient => qbvi::Estimator::Gradient,
        EstimatorArg::Auto if dim > qbvi::FULL_COVARIANCE_MAX_DIM => qbvi::Estimator::Gradient,
        EstimatorArg::Auto => qbvi::Estimator::Score,
    };
    if o.qbvi.estimator == qbvi::Estimator::Gradient
        && args.mc_samples == 100
        && !args.given("mc_samples")
    {
        // Gradient-based draws are d times as informative as values; NGVI's S = 10
        // (survey_vi.md §9) is the default.
        o.qbvi.n_samples = 10;
    }
    o.qbvi.step_size = args.step_size;
    o.qbvi.max_iter = args.max_iter as usize;
    o.ivon.common.max_iter = args.max_iter as usize;
    o.bbb.common.max_iter = args.max_iter as usize;
    o.bbvi.common.max_iter = args.max_iter as usize;
    o.bbvi.mc_samples = args.mc_samples as usize;
    o.mgvb.common.max_iter = args.max_iter as usize;
    o.emgvb.common.max_iter = args.max_iter as usize;
    if args.mc_samples != 100 {
        // MGVB/EMGVB default to S = 50 (survey_vi.md §15); --mc-samples overrides it.
        o.mgvb.mc_samples = args.mc_samples as usize;
        o.emgvb.mc_samples = args.mc_samples as usize;
    }
    o.ngvi.common.max_iter = args.max_iter as usize;
    o.vlaplace.common.max_iter = args.max_iter as usize;
    o.mcdropout.common.max_iter = args.max_iter as usize;
    if args.diagonal {
        o.ngvi.covariance = Covariance::Diagonal;
    } else if args.full {
        // NGVI's default family; `--full` says so explicitly (it was refused, though NGVI
        // fits the full covariance unless told `--diagonal`: fresh-user finding, session 21)
        o.ngvi.covariance = Covariance::Full;
    }
    o.ngbbvi.common.max_iter = args.max_iter as usize;
    o.von.common.max_iter = args.max_iter as usize;
    o.vogn.common.max_iter = args.max_iter as usize;
    if args.max_iter != 5000 {
        // Vadam defaults to 100 000 steps of M = 1 row; --max-iter overrides it.
        o.vadam.common.max_iter = args.max_iter as usize;
    }
    if args.mc_samples != 100 {
        o.ngbbvi.mc_samples = args.mc_samples as usize;
        o.vadam.mc_samples = args.mc_samples as usize;
    }
    // VON: full covariance unless --diagonal, or d > 50 without --full (as QBVI).
    o.von.covariance = if args.diagonal {
        Covariance::Diagonal
    } else if args.full {
        Covariance::Full
    } else {
        Covariance::for_dimension(dim)
    };
    if let Some(b) = args.step_size
        && matches!(method, fit::Method::Nuts | fit::Method::Hmc)
    {
        o.mcmc.step_size = b;
    }
    if let Some(b) = args.step_size {
        o.ngvi.step_size = b;
        o.mgvb.step_size = b;
        o.emgvb.step_size = b;
        // The survey methods' learning rate (IVON's α, BBB's Adam rate, BBVI's AdaGrad η).
        o.ivon.lr = b;
        o.bbb.lr = b;
        o.bbvi.eta = b;
        o.ngbbvi.lr = b;
        o.von.step_size = b;
        o.vadam.lr = b;
        o.vogn.lr = b;
        o.vogn.lr_minibatch = b;
        o.vlaplace.lr = b;
        o.mcdropout.lr = b;
    }
    o.qnvb.max_iter = args.max_iter as usize;
    o.pathfinder.num_paths = args.num_paths as usize;
    o.pathfinder.history = args.history_size.unwrap_or(6) as usize;
    if let Some(m) = args.history_size {
        o.optimize.history = m as usize;
    }
    o.optimize.algorithm = match args.algorithm {
        None | Some(AlgorithmArg::Lbfgs) => optimize::Algorithm::Lbfgs,
        Some(AlgorithmArg::Bfgs) => optimize::Algorithm::Bfgs,
        Some(AlgorithmArg::Newton) => optimize::Algorithm::Newton,
    };
    if let Some(n) = args.iter {
        o.optimize.max_iter = n as usize;
    }
    let tolerances = [
        (args.tol_obj, &mut o.optimize.tol_obj),
        (args.tol_rel_obj, &mut o.optimize.tol_rel_obj),
        (args.tol_grad, &mut o.optimize.tol_grad),
        (args.tol_rel_grad, &mut o.optimize.tol_rel_grad),
        (args.tol_param, &mut o.optimize.tol_param),
    ];
    for (given, setting) in tolerances {
        if let Some(v) = given {
            *setting = v;
        }
    }
    o.sig_figs = args.sig_figs.map(|n| n as usize);

    o.pathfinder.num_elbo_draws = args.num_elbo_draws as usize;
    if args.max_iter != 5000 {
        // Stan's max_lbfgs_iters (default 1000) per path.
        o.pathfinder.optimize.max_iter = args.max_iter as usize;
    }
    if args.random_init {
        o.vi_init = fit::ViInit::Random;
    }
    o.psis_resample = args.psis_resample;
    o.refine_mean = !args.no_refine;
    o.jacobian = args.jacobian;
    if args.se == Some(SeArg::Robust) {
        o.std_errors = fit::StdErrorKind::Robust;
    }
    if method == fit::Method::Mh {
        o.mcmc = mcmc::McmcSettings::mh_defaults(dim);
    }
    match parse_init(args.init.as_deref()) {
        Ok(Some(InitArg::Radius(r))) => o.mcmc.init_radius = r,
        Ok(Some(InitArg::Pathfinder)) => o.mcmc_init = fit::McmcInit::Pathfinder,
        Ok(Some(InitArg::File(f))) => o.init_file = Some(f),
        // refused by `check_args`
        Ok(None) | Err(_) => {}
    }
    o.mcmc.chains = args.chains as usize;
    if let Some(w) = args.warmup {
        o.mcmc.warmup = w as usize;
    }
    if let Some(s) = args.samples {
        o.mcmc.samples = s as usize;
    }
    // MH without --samples: the length comes from measured mixing (fit::mh_length)
    o.mh_auto_length = method == fit::Method::Mh && args.samples.is_none();
    o.mcmc.thin = args.thin as usize;
    o.mcmc.save_warmup = args.save_warmup;
    o.mcmc.refresh = args.refresh.map(|n| n as usize);
    o.mcmc.adapt_delta = args.adapt_delta;
    o.mcmc.max_depth = args.max_depth as usize;
    o.mcmc.metric = match (args.dense, args.metric) {
        (true, _) | (_, MetricArg::Dense) => mcmc::MetricChoice::Dense,
        (false, MetricArg::Diag) => mcmc::MetricChoice::Diag,
        (false, MetricArg::Unit) => mcmc::MetricChoice::Unit,
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

#[cfg(test)]
#[path = "args_tests.rs"]
mod option_tests;
