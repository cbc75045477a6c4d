//! Train/test evaluation: split CSV rows, fit on the training rows, and score a Bayesian fit and
//! a maximum-likelihood fit on both sets with the QBVI paper's metrics (Magris, Shabani &
//! Iosifidis 2022, Table 1: precision, recall, accuracy, F1 and log-likelihood for binary
//! outcomes; MSE and log-likelihood for continuous ones), plus the log posterior-predictive
//! density.
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
use crate::predict::generated_quantity_draws;

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
    let part = |keep: bool, suffix: &str| CsvSource {
        name: format!("{} ({suffix})", src.name),
        header: src.header.clone(),
        columns: src
            .columns
            .iter()
            .map(|c| {
                c.iter()
                    .zip(&in_train)
                    .filter(|(_, t)| **t == keep)
                    .map(|(x, _)| x.clone())
                    .collect()
            })
            .collect(),
        lines: src
            .lines
            .iter()
            .zip(&in_train)
            .filter(|(_, t)| **t == keep)
            .map(|(x, _)| *x)
            .collect(),
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

/// Metrics for a binary outcome at one parameter value, threshold 0.5 on `y_hat`.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct BinaryMetrics {
    /// TP / (TP + FP) (NaN when nothing is predicted positive).
    pub precision: f64,
    /// TP / (TP + FN).
    pub recall: f64,
    /// (TP + TN) / n.
    pub accuracy: f64,
    /// 2·precision·recall / (precision + recall).
    pub f1: f64,
}

/// Scores of one fit on one data set.
#[derive(Clone, Debug, PartialEq)]
pub struct Metrics {
    /// Rows scored.
    pub n: usize,
    /// Σ_n log p(y_n | θ̂) at the point estimate (posterior mean, or the ML estimate).
    pub log_lik: f64,
    /// Mean squared error Σ_n (y_n − ŷ_n)² / n at the point estimate.
    pub mse: f64,
    /// Precision, recall, accuracy, F1 when the outcome is binary.
    pub binary: Option<BinaryMetrics>,
    /// Log posterior-predictive density Σ_n log( (1/S) Σ_s p(y_n | θ_s) ) over the posterior
    /// draws (None for a point estimate).
    pub lppd: Option<f64>,
}

/// The per-row columns of one evaluation of the generated quantities.
struct Rows {
    log_lik: Vec<f64>,
    y_hat: Vec<f64>,
    y_gq: Option<Vec<f64>>,
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
}

impl Layout {
    fn new(model: &Model, outcome: &str) -> Result<Self, EvaluateError> {
        let names = model.generated_quantity_names();
        let log_lik = gq_positions(&names, "log_lik");
        let y_hat = gq_positions(&names, "y_hat");
        if log_lik.is_empty() || y_hat.is_empty() {
            return Err(EvaluateError::Convention(
                "evaluation needs the generated quantities `log_lik[n]` (log p(y_n | θ)) and `y_hat[n]` \
                 (the predicted mean, or the probability of 1 for a binary outcome), one per observation"
                    .into(),
            ));
        }
        if log_lik.len() != y_hat.len() {
            return Err(EvaluateError::Convention(format!(
                "`log_lik` has {} elements but `y_hat` has {}",
                log_lik.len(),
                y_hat.len()
            )));
        }
        Ok(Layout {
            log_lik,
            y_hat,
            y_gq: gq_positions(&names, outcome),
        })
    }

    fn rows(&self, gq: &[f64]) -> Rows {
        let pick = |idx: &[usize]| idx.iter().map(|&i| gq[i]).collect::<Vec<f64>>();
        Rows {
            log_lik: pick(&self.log_lik),
            y_hat: pick(&self.y_hat),
            y_gq: (!self.y_gq.is_empty()).then(|| pick(&self.y_gq)),
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

/// Evaluates the generated quantities at one unconstrained point.
fn gq_at(model: &Model, zeta: &[f64], seed: u64) -> Result<Vec<f64>, EvaluateError> {
    Ok(generated_quantity_draws(model, &[zeta.to_vec()], seed)?.remove(0))
}

/// Scores `set.model` at the point `zeta` and, when `draws` are given, adds the log
/// posterior-predictive density over them.
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
    let y = match (&set.outcome_data, at.y_gq) {
        (Some(y), _) => y.clone(),
        (None, Some(y)) => y,
        (None, None) => {
            return Err(EvaluateError::Convention(format!(
                "the outcome `{}` is neither a data variable nor a generated quantity",
                set.outcome
            )));
        }
    };
    if y.len() != at.y_hat.len() {
        return Err(EvaluateError::Convention(format!(
            "the outcome `{}` has {} values but `y_hat`/`log_lik` have {}",
            set.outcome,
            y.len(),
            at.y_hat.len()
        )));
    }
    let keep: Vec<usize> = (0..y.len()).filter(|&i| !at.y_hat[i].is_nan()).collect();
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
        let (mut tp, mut fp, mut tn, mut fneg) = (0.0, 0.0, 0.0, 0.0);
        for &i in &keep {
            match (at.y_hat[i] >= 0.5, y[i] == 1.0) {
                (true, true) => tp += 1.0,
                (true, false) => fp += 1.0,
                (false, false) => tn += 1.0,
                (false, true) => fneg += 1.0,
            }
        }
        let precision = tp / (tp + fp);
        let recall = tp / (tp + fneg);
        BinaryMetrics {
            precision,
            recall,
            accuracy: (tp + tn) / n as f64,
            f1: 2.0 * precision * recall / (precision + recall),
        }
    });
    let lppd = match draws {
        None => None,
        Some(zetas) => {
            let all = generated_quantity_draws(set.model, zetas, seed)?;
            let s = all.len() as f64;
            let mut total = 0.0;
            for &i in &keep {
                let ll: Vec<f64> = all.iter().map(|g| g[layout.log_lik[i]]).collect();
                let m = ll.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                total += m + (ll.iter().map(|x| (x - m).exp()).sum::<f64>() / s).ln();
            }
            Some(total)
        }
    };
    Ok(Metrics {
        n,
        log_lik,
        mse,
        binary,
        lppd,
    })
}

/// The outcome's values when `name` is a data variable of the bound data (row-major).
pub fn outcome_from_data(
    program: &crate::syntax::ast::Program,
    sources: &[DataSource],
    name: &str,
) -> Option<Vec<f64>> {
    let bound = crate::data::bind(program, sources).ok()?;
    bound.values.get(name).map(|v| v.values.clone())
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
    let train = score(&bayes.train, &zeta, Some(&zetas), seed)?;
    let test = score(&bayes.test, &zeta, Some(&zetas), seed)?;
    let ml = match ml {
        None => None,
        Some(m) => {
            let hat = maximum_likelihood(m.train.model, seed)?;
            Some((
                score(&m.train, &hat, None, seed)?,
                score(&m.test, &hat, None, seed)?,
            ))
        }
    };
    Ok(Evaluation {
        method: result.method,
        train,
        test,
        ml,
        seconds: result.seconds,
    })
}

/// Formats an evaluation as the paper's Table 1: one row per metric, columns train/test ×
/// Bayesian/ML.
pub fn format_table(e: &Evaluation) -> String {
    let method = e.method.to_string().to_uppercase();
    let mut cols: Vec<(String, &Metrics)> = vec![(format!("train {method}"), &e.train)];
    if let Some((tr, _)) = &e.ml {
        cols.push(("train ML".into(), tr));
    }
    cols.push((format!("test {method}"), &e.test));
    if let Some((_, te)) = &e.ml {
        cols.push(("test ML".into(), te));
    }
    let mut rows: Vec<(&str, Vec<String>)> = Vec::new();
    let f = |x: f64, d: usize| format!("{x:.d$}");
    rows.push(("rows", cols.iter().map(|(_, m)| m.n.to_string()).collect()));
    if cols.iter().all(|(_, m)| m.binary.is_some()) {
        let b = |g: fn(&BinaryMetrics) -> f64| {
            cols.iter()
                .map(|(_, m)| f(g(m.binary.as_ref().expect("checked all binary")), 3))
                .collect::<Vec<_>>()
        };
        rows.push(("precision", b(|m| m.precision)));
        rows.push(("recall", b(|m| m.recall)));
        rows.push(("accuracy", b(|m| m.accuracy)));
        rows.push(("F1", b(|m| m.f1)));
    } else {
        rows.push((
            "MSE",
            cols.iter()
                .map(|(_, m)| crate::output::summary::format_sig(m.mse, 5))
                .collect(),
        ));
    }
    rows.push((
        "log-lik",
        cols.iter().map(|(_, m)| f(m.log_lik, 2)).collect(),
    ));
    rows.push((
        "lppd",
        cols.iter()
            .map(|(_, m)| m.lppd.map_or("".into(), |x| f(x, 2)))
            .collect(),
    ));
    let w0 = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
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
        assert_eq!(b.lines, vec![5]);
        let (a, b) = split_rows(&src, 0.5, SplitMode::Random { seed: 3 }).unwrap();
        let mut lines: Vec<u64> = a.lines.iter().chain(&b.lines).copied().collect();
        lines.sort();
        assert_eq!(lines, vec![2, 3, 4, 5]);
        assert!(split_rows(&src, 1.0, SplitMode::Ordered).is_err());
    }
}
