//! Train/test evaluation: split CSV rows, fit on the training rows, and score a Bayesian fit and
//! a maximum-likelihood fit on both sets.
//!
//! The Bayesian fit is scored by its posterior predictive ([`metrics`]): the predicted mean or
//! class probability averaged over the draws (RMSE; accuracy, precision, recall, F1, Brier score
//! and expected calibration error for a binary outcome), the log pointwise predictive density
//! (lppd) and, for a continuous outcome of a model that generates `y_rep[n]`, the coverage of
//! the central 50 % and 90 % predictive intervals. Both fits are also scored at a point estimate
//! with the QBVI paper's metrics (Magris, Shabani & Iosifidis 2022, Table 1: precision, recall,
//! accuracy, F1 and log-likelihood for binary outcomes; MSE and log-likelihood for continuous
//! ones); for a nonlinear model such as a neural network the point estimate (the posterior mean
//! of the weights) can predict far worse than the posterior predictive.
//!
//! # The per-row convention
//!
//! A model is scored through three per-row quantities it computes itself, as in Stan's `loo`
//! convention: the generated quantities `log_lik[n]` = log p(y_n | θ) and `y_hat[n]` = the
//! predicted mean of y_n (for a binary outcome the probability that y_n = 1), and the outcome
//! y_n, named by the caller: a data variable, or a generated quantity (for an outcome built in
//! `transformed data`, e.g. a log realised variance, copy it into a generated quantity). All three
//! must have the same length. The outcome is named on the command line (`--outcome y`) or in the
//! model by a comment `// @outcome y` ([`outcome_annotation`]). Rows whose `y_hat` is NaN are
//! skipped. The outcome is binary when
//! every value is 0 or 1 and every `y_hat` lies in [0, 1].

use crate::data::DataSource;
use crate::data::csv::CsvSource;
use crate::fit::{self, FitOptions, Method, Monitor};
use crate::graph::Model;
use crate::inference::DensityError;
use crate::inference::optimize::{OptimizeSettings, newton_refine, optimize};
use crate::inference::rng::stream;
use crate::predict::{PredictError, generated_quantity_draws};

/// How the CSV rows are divided between training and test sets.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SplitMode {
    /// A uniformly random subset of ⌊fraction·rows⌉ rows (Fisher–Yates shuffle with random
    /// stream 0 of `seed`), both parts kept in file order.
    Random { seed: u64 },
    /// The first ⌊fraction·rows⌉ rows train, the rest test (for time series).
    Ordered,
}

/// Why an evaluation could not run.
#[derive(Debug, thiserror::Error)]
pub enum EvaluateError {
    /// Bad split settings or data that cannot be split.
    #[error("{0}")]
    Split(String),
    /// The model does not follow the per-row convention (see the module documentation).
    #[error("{0}")]
    Convention(String),
    /// Evaluating the model failed.
    #[error("{0}")]
    Density(#[from] DensityError),
    /// A saved-fit style failure while evaluating generated quantities.
    #[error("{0}")]
    Predict(#[from] crate::predict::PredictError),
    /// The Bayesian fit failed.
    #[error("{0}")]
    Fit(#[from] fit::FitError),
    /// The maximum-likelihood optimisation failed.
    #[error("maximum likelihood failed: {0}")]
    Optimize(String),
}

/// Splits the rows of a CSV source into (train, test) with `fraction` ∈ (0, 1) of the rows in
/// the training set (rounded to the nearest row, at least one row in each part).
///
/// Errors: [`EvaluateError::Split`] for a fraction outside (0, 1) or fewer than two rows.
pub fn split_rows(
    src: &CsvSource,
    fraction: f64,
    mode: SplitMode,
) -> Result<(CsvSource, CsvSource), EvaluateError> {
    if !(fraction > 0.0 && fraction < 1.0) {
        return Err(EvaluateError::Split(format!(
            "the training fraction must be in (0, 1), got {fraction}"
        )));
    }
    let n = src.n_rows();
    if n < 2 {
        return Err(EvaluateError::Split(format!(
            "`{}` has {n} data rows; a split needs at least 2",
            src.name
        )));
    }
    let n_train = ((fraction * n as f64).round() as usize).clamp(1, n - 1);
    let mut in_train = vec![false; n];
    match mode {
        SplitMode::Ordered => in_train[..n_train].iter_mut().for_each(|b| *b = true),
        SplitMode::Random { seed } => {
            use rand::RngExt;
            let mut idx: Vec<usize> = (0..n).collect();
            let mut rng = stream(seed, 0);
            for i in (1..n).rev() {
                let j = rng.random_range(0..=i);
                idx.swap(i, j);
            }
            for &i in &idx[..n_train] {
                in_train[i] = true;
            }
        }
    }
    let part = |keep: bool, suffix: &str| {
        let rows: Vec<bool> = in_train.iter().map(|&t| t == keep).collect();
        src.select_rows(&rows, format!("{} ({suffix})", src.name))
    };
    Ok((part(true, "train"), part(false, "test")))
}

/// The outcome named by a `// @outcome NAME` comment in a model's text (the first one), if any.
pub fn outcome_annotation(text: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let comment = &line[line.find("//")? + 2..];
        let rest = comment.trim_start().strip_prefix("@outcome")?;
        let name: String = rest
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        (!name.is_empty()).then_some(name)
    })
}

pub mod metrics;

pub use metrics::{BinaryMetrics, PredictiveMetrics};

/// Scores of one fit on one data set: plug-in scores at a point estimate and, for a Bayesian fit,
/// posterior-predictive scores over its draws ([`metrics::predictive_metrics`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Metrics {
    /// Rows scored.
    pub n: usize,
    /// Σ_n log p(y_n | θ̂) at the point estimate θ̂ (posterior mean, or the ML estimate).
    pub log_lik: f64,
    /// Mean squared error Σ_n (y_n − ŷ_n(θ̂))² / n at the point estimate.
    pub mse: f64,
    /// Precision, recall, accuracy, F1 at the point estimate when the outcome is binary.
    pub binary: Option<BinaryMetrics>,
    /// Posterior-predictive scores over the draws (None for a point estimate such as ML).
    pub predictive: Option<PredictiveMetrics>,
}

/// The per-row columns of one evaluation of the generated quantities.
struct Rows {
    log_lik: Vec<f64>,
    y_hat: Vec<f64>,
    y_gq: Option<Vec<f64>>,
    y_rep: Option<Vec<f64>>,
    /// `p_hat[n, k]` per row n (K class probabilities) for a multiclass outcome.
    p_hat: Option<Vec<Vec<f64>>>,
}

/// Positions of `p_hat[n, k]` (a `matrix[N, K]` or `array[N] vector[K]` generated quantity of
/// class probabilities), as `rows × K` indices into the generated quantities, when every
/// (n, k) in 1..rows × 1..K is present once; empty otherwise.
fn class_positions(names: &[String], rows: usize) -> Vec<Vec<usize>> {
    let mut cells: Vec<(usize, usize, usize)> = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let Some(inner) = name.strip_prefix("p_hat[") else {
            continue;
        };
        let idx: Vec<usize> = inner
            .split(|c: char| !c.is_ascii_digit())
            .filter(|t| !t.is_empty())
            .filter_map(|t| t.parse().ok())
            .collect();
        if idx.len() != 2 || idx[0] == 0 || idx[1] == 0 {
            return Vec::new();
        }
        cells.push((idx[0] - 1, idx[1] - 1, i));
    }
    if rows == 0 || !cells.len().is_multiple_of(rows) || cells.len() / rows < 2 {
        return Vec::new();
    }
    let k = cells.len() / rows;
    let mut pos = vec![vec![usize::MAX; k]; rows];
    for (n, c, i) in cells {
        if n >= rows || c >= k || pos[n][c] != usize::MAX {
            return Vec::new();
        }
        pos[n][c] = i;
    }
    pos
}

/// Positions of the scalar elements of the vector generated quantity `name` (`name[1]`, …).
fn gq_positions(names: &[String], name: &str) -> Vec<usize> {
    let prefix = format!("{name}[");
    names
        .iter()
        .enumerate()
        .filter(|(_, n)| n.as_str() == name || n.starts_with(&prefix))
        .map(|(i, _)| i)
        .collect()
}

/// Locates `log_lik`, `y_hat` and (if it is a generated quantity) the outcome among the model's
/// generated quantities.
struct Layout {
    log_lik: Vec<usize>,
    y_hat: Vec<usize>,
    y_gq: Vec<usize>,
    /// `y_rep[n]`, a posterior predictive draw of each outcome, when the model generates it with
    /// the length of `log_lik`.
    y_rep: Vec<usize>,
    /// `p_hat[n, k]` positions (rows × K) for a multiclass outcome; empty otherwise.
    p_hat: Vec<Vec<usize>>,
}

impl Layout {
    fn new(model: &Model, outcome: &str) -> Result<Self, EvaluateError> {
        let names = model.generated_quantity_names();
        let log_lik = gq_positions(&names, "log_lik");
        let y_hat = gq_positions(&names, "y_hat");
        let p_hat = class_positions(&names, log_lik.len());
        if log_lik.is_empty() || (y_hat.is_empty() && p_hat.is_empty()) {
            return Err(EvaluateError::Convention(
                "evaluation needs the generated quantities `log_lik[n]` (log p(y_n | θ)) and `y_hat[n]` \
                 (the predicted mean, or the probability of 1 for a binary outcome), one per observation, \
                 or for a K-class outcome `p_hat[n, k]` = P(y_n = k | θ) (`matrix[N, K]`)"
                    .into(),
            ));
        }
        if y_hat.is_empty() {
            return Ok(Layout {
                y_hat: Vec::new(),
                y_gq: gq_positions(&names, outcome),
                y_rep: Vec::new(),
                log_lik,
                p_hat,
            });
        }
        if log_lik.len() != y_hat.len() {
            return Err(EvaluateError::Convention(format!(
                "`log_lik` has {} elements but `y_hat` has {}",
                log_lik.len(),
                y_hat.len()
            )));
        }
        let mut y_rep = gq_positions(&names, "y_rep");
        if y_rep.len() != log_lik.len() {
            y_rep.clear();
        }
        Ok(Layout {
            log_lik,
            y_hat,
            y_gq: gq_positions(&names, outcome),
            y_rep,
            p_hat: Vec::new(),
        })
    }

    fn rows(&self, gq: &[f64]) -> Rows {
        let pick = |idx: &[usize]| idx.iter().map(|&i| gq[i]).collect::<Vec<f64>>();
        let p_hat: Option<Vec<Vec<f64>>> =
            (!self.p_hat.is_empty()).then(|| self.p_hat.iter().map(|r| pick(r)).collect());
        // For a multiclass outcome `y_hat` is the predicted mean of the label, Σ_k k · p_hat[n, k].
        let y_hat = match &p_hat {
            Some(p) if self.y_hat.is_empty() => p
                .iter()
                .map(|r| r.iter().enumerate().map(|(k, v)| (k + 1) as f64 * v).sum())
                .collect(),
            _ => pick(&self.y_hat),
        };
        Rows {
            log_lik: pick(&self.log_lik),
            y_hat,
            p_hat,
            y_gq: (!self.y_gq.is_empty()).then(|| pick(&self.y_gq)),
            y_rep: (!self.y_rep.is_empty()).then(|| pick(&self.y_rep)),
        }
    }
}

/// A model compiled on one data set, with its outcome values when they are data.
pub struct Scored<'a> {
    /// The model compiled on this set's data.
    pub model: &'a Model,
    /// The outcome's values if it is a data variable (None: it is a generated quantity).
    pub outcome_data: Option<Vec<f64>>,
    /// The outcome's name (for messages and the generated-quantity lookup).
    pub outcome: &'a str,
}

/// Evaluates the generated quantities at one unconstrained point; a failure is
/// [`PredictError::GeneratedQuantities`] with no draw number ("the point estimate").
fn gq_at(model: &Model, zeta: &[f64], seed: u64) -> Result<Vec<f64>, EvaluateError> {
    match generated_quantity_draws(model, &[zeta.to_vec()], seed) {
        Ok(mut v) => Ok(v.remove(0)),
        Err(PredictError::GeneratedQuantities { source, .. }) => {
            Err(PredictError::GeneratedQuantities {
                at: "the point estimate".to_string(),
                draw: None,
                source,
            }
            .into())
        }
        Err(e) => Err(e.into()),
    }
}

/// Names where the generated quantities of [`evaluate`] failed: at `point` (the point
/// estimate, no draw number) or at draw `d` of the fit, placed in its chain from the chains'
/// draw counts `lengths` ("draw 3 of chain 2"; "draw 3" with one chain or none given), on the
/// `set` ("training", "test") rows. Other errors pass through.
fn gq_place<'a>(
    point: &'a str,
    set: &'a str,
    lengths: &'a [usize],
) -> impl Fn(EvaluateError) -> EvaluateError + 'a {
    move |e| match e {
        EvaluateError::Predict(PredictError::GeneratedQuantities { draw, source, .. }) => {
            let mut at = match draw {
                None => point.to_string(),
                Some(d) => {
                    let mut rest = d;
                    let mut place = format!("draw {d}");
                    for (c, &n) in lengths.iter().enumerate() {
                        if rest <= n {
                            if lengths.len() > 1 {
                                place = format!("draw {rest} of chain {}", c + 1);
                            }
                            break;
                        }
                        rest -= n;
                    }
                    place
                }
            };
            at.push_str(&format!(", on the {set} rows"));
            EvaluateError::Predict(PredictError::GeneratedQuantities { at, draw, source })
        }
        e => e,
    }
}

/// The outcome's values: the data variable, or the generated quantity of the same name in `rows`.
fn outcome_values(set: &Scored<'_>, rows: &Rows) -> Result<Vec<f64>, EvaluateError> {
    let y = match (&set.outcome_data, &rows.y_gq) {
        (Some(y), _) => y.clone(),
        (None, Some(y)) => y.clone(),
        (None, None) => {
            return Err(EvaluateError::Convention(format!(
                "the outcome `{}` is neither a data variable nor a generated quantity",
                set.outcome
            )));
        }
    };
    if y.len() != rows.y_hat.len() {
        return Err(EvaluateError::Convention(format!(
            "the outcome `{}` has {} values but `y_hat`/`log_lik` have {}",
            set.outcome,
            y.len(),
            rows.y_hat.len()
        )));
    }
    Ok(y)
}

/// Posterior-predictive scores of `set` over the unconstrained draws `zetas` (S ≥ 1): the
/// generated quantities are evaluated at every draw ([`generated_quantity_draws`], seed `seed`)
/// and scored by [`metrics::predictive_metrics`]. Rows whose `y_hat` is NaN at any draw, or
/// whose outcome is NaN (not observed), are skipped.
///
/// Errors: [`EvaluateError::Convention`] as for [`score`]; [`EvaluateError::Split`] when no
/// draws are given or no row has an observed outcome; density errors.
pub fn score_predictive(
    set: &Scored<'_>,
    zetas: &[Vec<f64>],
    seed: u64,
) -> Result<PredictiveMetrics, EvaluateError> {
    if zetas.is_empty() {
        return Err(EvaluateError::Split(
            "posterior-predictive scores need at least one posterior draw".into(),
        ));
    }
    let layout = Layout::new(set.model, set.outcome)?;
    let rows: Vec<Rows> = generated_quantity_draws(set.model, zetas, seed)?
        .iter()
        .map(|g| layout.rows(g))
        .collect();
    let y = outcome_values(set, &rows[0])?;
    let keep: Vec<usize> = (0..y.len())
        .filter(|&i| !y[i].is_nan() && rows.iter().all(|r| !r.y_hat[i].is_nan()))
        .collect();
    if keep.is_empty() {
        return Err(EvaluateError::Split(format!(
            "no row has both an observed outcome `{}` and a predicted `y_hat`",
            set.outcome
        )));
    }
    let table = |f: &dyn Fn(&Rows) -> &[f64]| -> Vec<Vec<f64>> {
        rows.iter()
            .map(|r| keep.iter().map(|&i| f(r)[i]).collect())
            .collect()
    };
    let y_kept: Vec<f64> = keep.iter().map(|&i| y[i]).collect();
    let y_hat = table(&|r| &r.y_hat);
    let log_lik = table(&|r| &r.log_lik);
    let y_rep = rows[0]
        .y_rep
        .is_some()
        .then(|| table(&|r| r.y_rep.as_deref().unwrap_or(&[])));
    let mut m = metrics::predictive_metrics(&y_kept, &y_hat, &log_lik, y_rep.as_deref());
    if rows[0].p_hat.is_some() {
        let k = rows[0].p_hat.as_ref().map_or(0, |p| p[0].len());
        let s = rows.len() as f64;
        let mean: Vec<Vec<f64>> = keep
            .iter()
            .map(|&i| {
                (0..k)
                    .map(|c| {
                        rows.iter()
                            .map(|r| r.p_hat.as_ref().map_or(f64::NAN, |p| p[i][c]))
                            .sum::<f64>()
                            / s
                    })
                    .collect()
            })
            .collect();
        m.multiclass = Some(metrics::multiclass_metrics(
            &y_kept,
            &mean,
            metrics::ECE_BINS,
        ));
    }
    m.rows = keep;
    Ok(m)
}

/// Scores `set.model` at the point `zeta` (plug-in metrics) and, when `draws` are given, adds
/// the posterior-predictive scores over them ([`score_predictive`]).
///
/// Errors: [`EvaluateError::Convention`] when `log_lik`/`y_hat` are missing or the outcome is
/// neither data nor a generated quantity or has another length; density errors.
pub fn score(
    set: &Scored<'_>,
    zeta: &[f64],
    draws: Option<&[Vec<f64>]>,
    seed: u64,
) -> Result<Metrics, EvaluateError> {
    let layout = Layout::new(set.model, set.outcome)?;
    let at = layout.rows(&gq_at(set.model, zeta, seed)?);
    let y = outcome_values(set, &at)?;
    let keep: Vec<usize> = (0..y.len())
        .filter(|&i| !at.y_hat[i].is_nan() && !y[i].is_nan())
        .collect();
    let n = keep.len();
    let log_lik = keep.iter().map(|&i| at.log_lik[i]).sum();
    let mse = keep
        .iter()
        .map(|&i| (y[i] - at.y_hat[i]).powi(2))
        .sum::<f64>()
        / n.max(1) as f64;
    let is_binary = keep
        .iter()
        .all(|&i| (y[i] == 0.0 || y[i] == 1.0) && (0.0..=1.0).contains(&at.y_hat[i]));
    let binary = is_binary.then(|| {
        let yk: Vec<f64> = keep.iter().map(|&i| y[i]).collect();
        let pk: Vec<f64> = keep.iter().map(|&i| at.y_hat[i]).collect();
        metrics::binary_metrics(&yk, &pk)
    });
    let predictive = match draws {
        None => None,
        Some(zetas) => Some(score_predictive(set, zetas, seed)?),
    };
    Ok(Metrics {
        n,
        log_lik,
        mse,
        binary,
        predictive,
    })
}

/// The outcome's values when `name` is a data variable of the bound data (row-major).
pub fn outcome_from_data(
    program: &crate::syntax::ast::Program,
    sources: &[DataSource],
    name: &str,
) -> Option<Vec<f64>> {
    let bound = crate::data::bind(program, sources).ok()?;
    bound.values.get(name).map(|v| v.values.to_vec())
}

/// The outcome's values when `name` is a data variable given by the sources; None when it is not
/// a data variable or every value is missing from the sources (bound as NaN by
/// [`crate::data::bind_unobserved`]).
pub fn outcome_from_unobserved(
    program: &crate::syntax::ast::Program,
    sources: &[DataSource],
    name: &str,
) -> Option<Vec<f64>> {
    let bound = crate::data::bind_unobserved(program, sources, name).ok()?;
    let v = bound.values.get(name)?;
    (!v.values.iter().all(|x| x.is_nan())).then(|| v.values.to_vec())
}

/// The point estimate of a Bayesian fit on the unconstrained scale, and every draw's ζ (for the
/// log posterior-predictive density).
///
/// For QBVI the point is the mean μ of the fitted Gaussian on the unconstrained scale (the
/// paper's "posterior parameters"; exact, free of Monte Carlo error). For an unconstrained
/// parameter θ(μ) is its posterior mean; for a constrained one it is the posterior median of the
/// approximation (a monotone transform of a Gaussian coordinate). For other methods the point is
/// the mean of each constrained parameter over all draws, mapped by [`Model::unconstrain`].
///
/// Errors: a mean outside the support (impossible for convex supports; a density error otherwise).
pub fn posterior_mean_point(
    model: &Model,
    result: &fit::FitResult,
) -> Result<(Vec<f64>, Vec<Vec<f64>>), EvaluateError> {
    let p = model.parameter_names().len();
    let k = result.draws.names.len();
    let mut rows = Vec::new();
    for chain in &result.draws.chains {
        if k > 0 {
            rows.extend(chain.chunks(k).map(|r| r[..p].to_vec()));
        }
    }
    let s = rows.len().max(1) as f64;
    let mean: Vec<f64> = (0..p)
        .map(|j| rows.iter().map(|r| r[j]).sum::<f64>() / s)
        .collect();
    let zeta = match &result.details {
        fit::FitDetails::Qbvi(q) => q.mean.clone(),
        _ => model.unconstrain(&mean)?,
    };
    let zetas = rows
        .iter()
        .map(|r| model.unconstrain(r))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((zeta, zetas))
}

/// Maximum-likelihood estimate ζ̂ of a model without priors (its log density is the
/// log-likelihood): L-BFGS from a random point (stream 0 of `seed`, uniform(−2, 2)) with Stan's
/// default tolerances, polished by up to 20 Newton steps (`inference::optimize::newton_refine`).
///
/// The model's log density includes the Jacobian adjustment of constrained parameters, so for an
/// exact ML estimate declare the ML model's parameters unconstrained (transform them inside the
/// model, e.g. `omega = exp(log_omega)`); the likelihood is invariant to reparameterisation.
///
/// Errors: [`EvaluateError::Optimize`].
pub fn maximum_likelihood(model: &Model, seed: u64) -> Result<Vec<f64>, EvaluateError> {
    let init = crate::inference::init::random_init(model, &mut stream(seed, 0))?;
    let r = optimize(model, &init, &OptimizeSettings::default())
        .map_err(|e| EvaluateError::Optimize(e.to_string()))?;
    if !r.log_density.is_finite() {
        return Err(EvaluateError::Optimize(format!(
            "the log-likelihood at the optimum is {}",
            r.log_density
        )));
    }
    Ok(match newton_refine(model, &r.point, 20) {
        Some(n) if n.log_density >= r.log_density => n.point,
        _ => r.point,
    })
}

/// A Bayesian fit and (optionally) an ML fit scored on the training and test sets.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluation {
    /// The Bayesian method used.
    pub method: Method,
    pub train: Metrics,
    pub test: Metrics,
    /// ML scores on the training and test sets, when an ML model was given.
    pub ml: Option<(Metrics, Metrics)>,
    /// Wall time of the Bayesian fit, seconds.
    pub seconds: f64,
    /// For a variational fit that did not converge, why, in `bayesc fit`'s words
    /// (`output::report::vi_not_converged`): the scores are then of an approximation short of
    /// its optimum, which `bayesc evaluate` says before its table.
    pub not_converged: Option<String>,
}

/// Models compiled on the training and the test data.
pub struct Compiled<'a> {
    pub train: Scored<'a>,
    pub test: Scored<'a>,
}

/// Fits `bayes` (compiled on the training rows) with `options`, scores it at the posterior mean
/// and over its draws on both sets; if `ml` is given, finds the maximum-likelihood estimate on
/// its training model and scores it on both sets. Random streams derive from `options.seed`.
///
/// Errors: see [`EvaluateError`].
pub fn evaluate(
    bayes: &Compiled<'_>,
    ml: Option<&Compiled<'_>>,
    options: &FitOptions,
) -> Result<Evaluation, EvaluateError> {
    // Check the per-row convention before spending time on fits.
    Layout::new(bayes.train.model, bayes.train.outcome)?;
    if let Some(m) = ml {
        Layout::new(m.train.model, m.train.outcome)?;
    }
    let stop = std::sync::atomic::AtomicBool::new(false);
    let monitor = Monitor {
        on_progress: &|_| {},
        stop: &stop,
    };
    let result = fit::fit(bayes.train.model, options, &monitor)?;
    let (zeta, zetas) = posterior_mean_point(bayes.train.model, &result)?;
    let seed = options.seed;
    let k = result.draws.names.len().max(1);
    let lengths: Vec<usize> = result.draws.chains.iter().map(|c| c.len() / k).collect();
    let bayes_at = |set: &'static str| gq_place("the posterior mean point", set, &lengths);
    let train = score(&bayes.train, &zeta, Some(&zetas), seed).map_err(bayes_at("training"))?;
    let test = score(&bayes.test, &zeta, Some(&zetas), seed).map_err(bayes_at("test"))?;
    let ml = match ml {
        None => None,
        Some(m) => {
            let hat = maximum_likelihood(m.train.model, seed)?;
            let ml_at = |set: &'static str| gq_place("the maximum-likelihood point", set, &[]);
            Some((
                score(&m.train, &hat, None, seed).map_err(ml_at("training"))?,
                score(&m.test, &hat, None, seed).map_err(ml_at("test"))?,
            ))
        }
    };
    Ok(Evaluation {
        method: result.method,
        train,
        test,
        ml,
        seconds: result.seconds,
        not_converged: crate::output::report::vi_not_converged(&result, options),
    })
}

/// Formats an evaluation as a table: one column per set × fit (train/test × Bayesian/ML), the
/// posterior-predictive scores first (blank for ML), then the plug-in scores at the point
/// estimate (the QBVI paper's Table 1: precision, recall, accuracy, F1 or MSE, log-likelihood).
pub fn format_table(e: &Evaluation) -> String {
    let method = e.method.display_name();
    let mut cols: Vec<(String, &Metrics)> = vec![(format!("train {method}"), &e.train)];
    if let Some((tr, _)) = &e.ml {
        cols.push(("train ML".into(), tr));
    }
    cols.push((format!("test {method}"), &e.test));
    if let Some((_, te)) = &e.ml {
        cols.push(("test ML".into(), te));
    }
    format_columns(&cols)
}

/// Formats metric columns `(heading, metrics)` as an aligned text table (see [`format_table`]).
pub fn format_columns(cols: &[(String, &Metrics)]) -> String {
    let mut rows: Vec<(String, Vec<String>)> = Vec::new();
    let f = |x: f64, d: usize| format!("{x:.d$}");
    let blank = || vec![String::new(); cols.len()];
    rows.push((
        "rows".into(),
        cols.iter().map(|(_, m)| m.n.to_string()).collect(),
    ));
    let draws = cols
        .iter()
        .find_map(|(_, m)| m.predictive.as_ref().map(|p| p.draws));
    let all_binary = cols.iter().all(|(_, m)| m.binary.is_some());
    let multiclass = cols.iter().all(|(_, m)| {
        m.predictive
            .as_ref()
            .is_some_and(|p| p.multiclass.is_some())
    });
    if let Some(s) = draws {
        rows.push((format!("posterior predictive ({s} draws):"), blank()));
        let pred = |g: &dyn Fn(&PredictiveMetrics) -> Option<f64>, d: usize| -> Vec<String> {
            cols.iter()
                .map(|(_, m)| {
                    m.predictive
                        .as_ref()
                        .and_then(g)
                        .map_or(String::new(), |x| f(x, d))
                })
                .collect()
        };
        if multiclass {
            let mc = |g: fn(&metrics::MulticlassMetrics) -> f64, d: usize| {
                pred(
                    &move |p: &PredictiveMetrics| p.multiclass.as_ref().map(g),
                    d,
                )
            };
            rows.push(("  accuracy (argmax class)".into(), mc(|m| m.accuracy, 3)));
            rows.push(("  Brier (multiclass)".into(), mc(|m| m.brier, 4)));
            rows.push(("  ECE (10 bins, top label)".into(), mc(|m| m.ece, 4)));
        } else if all_binary {
            rows.push((
                "  accuracy".into(),
                pred(&|p| p.binary.map(|b| b.accuracy), 3),
            ));
            rows.push((
                "  precision".into(),
                pred(&|p| p.binary.map(|b| b.precision), 3),
            ));
            rows.push(("  recall".into(), pred(&|p| p.binary.map(|b| b.recall), 3)));
            rows.push(("  F1".into(), pred(&|p| p.binary.map(|b| b.f1), 3)));
            rows.push(("  Brier".into(), pred(&|p| p.brier, 4)));
            rows.push(("  ECE (10 bins)".into(), pred(&|p| p.ece, 4)));
        } else {
            rows.push(("  RMSE".into(), pred(&|p| Some(p.rmse), 4)));
            // coverage needs replicated outcomes (`y_rep`); without them in any column the
            // rows would be empty, so they are left out
            let has_coverage = cols
                .iter()
                .any(|(_, m)| m.predictive.as_ref().is_some_and(|p| p.coverage.is_some()));
            if has_coverage {
                rows.push((
                    "  50% interval coverage".into(),
                    pred(&|p| p.coverage.map(|c| c.0), 3),
                ));
                rows.push((
                    "  90% interval coverage".into(),
                    pred(&|p| p.coverage.map(|c| c.1), 3),
                ));
            }
        }
        rows.push(("  lppd".into(), pred(&|p| Some(p.lppd), 2)));
        rows.push((
            "  lppd per row".into(),
            pred(&|p| Some(p.lppd / p.lppd_pointwise.len() as f64), 4),
        ));
        let has_ml = cols.iter().any(|(_, m)| m.predictive.is_none());
        rows.push((
            if has_ml {
                "at the point estimate (posterior mean; ML: maximiser):"
            } else {
                "at the point estimate (posterior mean):"
            }
            .into(),
            blank(),
        ));
    }
    let ind = if draws.is_some() { "  " } else { "" };
    if all_binary {
        let b = |g: fn(&BinaryMetrics) -> f64| {
            cols.iter()
                .map(|(_, m)| f(g(m.binary.as_ref().expect("checked all binary")), 3))
                .collect::<Vec<_>>()
        };
        rows.push((format!("{ind}precision"), b(|m| m.precision)));
        rows.push((format!("{ind}recall"), b(|m| m.recall)));
        rows.push((format!("{ind}accuracy"), b(|m| m.accuracy)));
        rows.push((format!("{ind}F1"), b(|m| m.f1)));
    } else if !multiclass {
        rows.push((
            format!("{ind}MSE"),
            cols.iter()
                .map(|(_, m)| crate::output::summary::format_sig(m.mse, 5))
                .collect(),
        ));
    }
    rows.push((
        format!("{ind}log-lik"),
        cols.iter().map(|(_, m)| f(m.log_lik, 2)).collect(),
    ));
    // Section headings do not widen the first column's values.
    let w0 = rows
        .iter()
        .filter(|r| !r.0.ends_with(':'))
        .map(|r| r.0.len())
        .max()
        .unwrap_or(0);
    let widths: Vec<usize> = (0..cols.len())
        .map(|j| {
            rows.iter()
                .map(|r| r.1[j].len())
                .chain([cols[j].0.len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = format!("{:w0$}", "");
    for (j, (name, _)) in cols.iter().enumerate() {
        out += &format!("  {:>w$}", name, w = widths[j]);
    }
    out.push('\n');
    for (label, vals) in &rows {
        if label.ends_with(':') {
            out += label;
            out.push('\n');
            continue;
        }
        out += &format!("{label:w0$}");
        for (j, v) in vals.iter().enumerate() {
            out += &format!("  {:>w$}", v, w = widths[j]);
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcome_annotation_is_read_from_a_comment() {
        let text = "data {\n  int N; // @outcome   y_obs (the log RV)\n}\n// @outcome other\n";
        assert_eq!(outcome_annotation(text).as_deref(), Some("y_obs"));
        assert_eq!(outcome_annotation("// outcome y\n"), None);
        assert_eq!(outcome_annotation("// @outcome\n"), None);
    }

    #[test]
    fn split_keeps_every_row_once() {
        let text = "x,y\n1,2\n3,4\n5,6\n7,8\n";
        let crate::data::DataSource::Csv(src) = crate::data::load_csv_str("t.csv", text).unwrap()
        else {
            panic!("a CSV source is parsed from CSV text");
        };
        let (a, b) = split_rows(&src, 0.75, SplitMode::Ordered).unwrap();
        assert_eq!((a.n_rows(), b.n_rows()), (3, 1));
        assert_eq!(b.lines.to_vec(), vec![5]);
        let (a, b) = split_rows(&src, 0.5, SplitMode::Random { seed: 3 }).unwrap();
        let mut lines: Vec<u64> = a
            .lines
            .to_vec()
            .into_iter()
            .chain(b.lines.to_vec())
            .collect();
        lines.sort();
        assert_eq!(lines, vec![2, 3, 4, 5]);
        assert!(split_rows(&src, 1.0, SplitMode::Ordered).is_err());
    }
}
