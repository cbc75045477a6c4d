//! Posterior-predictive scores of held-out (or training) observations from per-draw,
//! per-observation quantities: the predictive mean (or class probability) averaged over draws,
//! the log pointwise predictive density, the Brier score, the expected calibration error and the
//! coverage of central predictive intervals.
//!
//! Inputs are `S × n` tables (`draws[s][i]` = the value for draw s, observation i) of the
//! generated quantities of the per-row convention (see [`crate::evaluate`]): `y_hat` (the
//! predicted mean, or P(y = 1) for a binary outcome), `log_lik` (log p(y_i | θ_s)) and, when the
//! model draws replicated outcomes, `y_rep` (one draw of y_i from p(y | θ_s)).

/// Metrics for a binary outcome from probabilities `p_i` = P(y_i = 1), threshold 0.5.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct BinaryMetrics {
    /// TP / (TP + FP) (NaN when nothing is predicted positive).
    pub precision: f64,
    /// TP / (TP + FN) (NaN when no observation is positive).
    pub recall: f64,
    /// (TP + TN) / n.
    pub accuracy: f64,
    /// 2·precision·recall / (precision + recall).
    pub f1: f64,
}

/// Precision, recall, accuracy and F1 of the classification `p_i ≥ 0.5` against `y_i ∈ {0, 1}`.
/// `y` and `p` have the same length n ≥ 1.
pub fn binary_metrics(y: &[f64], p: &[f64]) -> BinaryMetrics {
    let (mut tp, mut fp, mut tn, mut fneg) = (0.0, 0.0, 0.0, 0.0);
    for (&yi, &pi) in y.iter().zip(p) {
        match (pi >= 0.5, yi == 1.0) {
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
        accuracy: (tp + tn) / y.len() as f64,
        f1: 2.0 * precision * recall / (precision + recall),
    }
}

/// log( (1/S) Σ_s exp(x_s) ), computed stably (max-shifted). −∞ for an empty slice or when every
/// x_s is −∞.
pub fn log_mean_exp(xs: &[f64]) -> f64 {
    let m = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !m.is_finite() {
        return if xs.iter().any(|x| x.is_nan()) {
            f64::NAN
        } else {
            m
        };
    }
    m + (xs.iter().map(|x| (x - m).exp()).sum::<f64>() / xs.len() as f64).ln()
}

/// Brier score (Brier 1950): (1/n) Σ_i (p_i − y_i)² for y_i ∈ {0, 1}.
pub fn brier_score(y: &[f64], p: &[f64]) -> f64 {
    y.iter().zip(p).map(|(a, b)| (b - a).powi(2)).sum::<f64>() / y.len() as f64
}

/// Expected calibration error of a binary classifier with `bins` equal-width confidence bins
/// (Guo, Pleiss, Sun & Weinberger 2017, "On calibration of modern neural networks", ICML, Eq. 3;
/// Naeini, Cooper & Hauskrecht 2015): the predicted class is 1 when p_i ≥ 0.5, its confidence
/// c_i = max(p_i, 1 − p_i); observation i falls in bin m when (m−1)/M < c_i ≤ m/M (c_i = 0 in
/// bin 1), and ECE = Σ_m (|B_m| / n) · |acc(B_m) − conf(B_m)|, acc being the fraction of correct
/// classifications in the bin and conf its mean confidence. For binary outcomes only bins above
/// 0.5 can be occupied.
pub fn expected_calibration_error(y: &[f64], p: &[f64], bins: usize) -> f64 {
    let mut count = vec![0usize; bins];
    let mut correct = vec![0.0; bins];
    let mut conf = vec![0.0; bins];
    for (&yi, &pi) in y.iter().zip(p) {
        let predicted = if pi >= 0.5 { 1.0 } else { 0.0 };
        let c = pi.max(1.0 - pi);
        let m = ((c * bins as f64).ceil() as usize).clamp(1, bins) - 1;
        count[m] += 1;
        conf[m] += c;
        if predicted == yi {
            correct[m] += 1.0;
        }
    }
    let n = y.len() as f64;
    (0..bins)
        .filter(|&m| count[m] > 0)
        .map(|m| {
            let k = count[m] as f64;
            k / n * (correct[m] / k - conf[m] / k).abs()
        })
        .sum()
}

/// Fraction of observations inside their central `level` predictive interval
/// [q((1−level)/2), q((1+level)/2)] of the replicated draws `reps[i]` (type-7 quantiles,
/// `diagnostics::quantile`), endpoints included. `reps[i]` must be non-empty.
pub fn interval_coverage(y: &[f64], reps: &[Vec<f64>], level: f64) -> f64 {
    use crate::diagnostics::quantile::quantile_sorted;
    let inside = y
        .iter()
        .zip(reps)
        .filter(|(yi, r)| {
            let mut r = (*r).clone();
            r.sort_by(f64::total_cmp);
            let lo = quantile_sorted(&r, (1.0 - level) / 2.0);
            let hi = quantile_sorted(&r, (1.0 + level) / 2.0);
            lo <= **yi && **yi <= hi
        })
        .count();
    inside as f64 / y.len() as f64
}

/// Posterior-predictive scores of one data set.
#[derive(Clone, Debug, PartialEq)]
pub struct PredictiveMetrics {
    /// Posterior draws S averaged over.
    pub draws: usize,
    /// The 0-based index of each scored observation among the model's rows (rows with an
    /// unobserved outcome or a NaN prediction are not scored).
    pub rows: Vec<usize>,
    /// The predictive mean ȳ_i = (1/S) Σ_s y_hat_i(θ_s) of each scored observation (for a binary
    /// outcome the predictive probability P(y_i = 1 | data)).
    pub mean: Vec<f64>,
    /// √( (1/n) Σ_i (y_i − ȳ_i)² ).
    pub rmse: f64,
    /// Log pointwise predictive density of each observation: lppd_i = log (1/S) Σ_s p(y_i | θ_s)
    /// (Gelman, Hwang & Vehtari 2014, "Understanding predictive information criteria", Eq. 5).
    pub lppd_pointwise: Vec<f64>,
    /// Σ_i lppd_i.
    pub lppd: f64,
    /// Classification scores of ȳ_i at threshold 0.5 (binary outcomes).
    pub binary: Option<BinaryMetrics>,
    /// Brier score of ȳ_i (binary outcomes).
    pub brier: Option<f64>,
    /// Expected calibration error of ȳ_i, 10 equal-width bins (binary outcomes).
    pub ece: Option<f64>,
    /// Coverage of the central 50 % and 90 % predictive intervals of `y_rep` (continuous outcomes
    /// of a model that generates `y_rep`).
    pub coverage: Option<(f64, f64)>,
    /// Scores of the averaged class probabilities (multiclass outcomes of a model that generates
    /// `p_hat[n, k]`; set by `evaluate::score_predictive`, None from [`predictive_metrics`]).
    pub multiclass: Option<MulticlassMetrics>,
}

/// Posterior-predictive scores of a K-class outcome (K ≥ 2) from the predictive class
/// probabilities p̄_ik = (1/S) Σ_s P(y_i = k | θ_s).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct MulticlassMetrics {
    /// Number of classes K.
    pub classes: usize,
    /// Fraction of observations whose most probable class argmax_k p̄_ik equals y_i (ties: the
    /// lowest k).
    pub accuracy: f64,
    /// Multiclass Brier score (Brier 1950): (1/n) Σ_i Σ_k (p̄_ik − 1[y_i = k])², in [0, 2].
    pub brier: f64,
    /// Expected calibration error of the top-label confidence max_k p̄_ik, 10 equal-width bins
    /// (Guo et al. 2017, Eq. 3).
    pub ece: f64,
}

/// Scores a K-class outcome: `y[i]` ∈ {1, …, K} (1-based, as Stan's categorical) and `p[i]` the
/// K predictive probabilities of observation i (each row of length K ≥ 2, summing to 1). Accuracy
/// of the argmax class, the multiclass Brier score and the expected calibration error with `bins`
/// equal-width bins of the confidence c_i = max_k p_ik: observation i is in bin m when
/// (m−1)/M < c_i ≤ m/M, ECE = Σ_m (|B_m| / n) · |acc(B_m) − conf(B_m)| (Guo, Pleiss, Sun &
/// Weinberger 2017, "On calibration of modern neural networks", ICML, Eq. 3). An outcome outside
/// 1..K counts as misclassified and contributes 1[y_i = k] = 0 for every k.
pub fn multiclass_metrics(y: &[f64], p: &[Vec<f64>], bins: usize) -> MulticlassMetrics {
    let n = y.len() as f64;
    let classes = p.first().map_or(0, Vec::len);
    let mut count = vec![0usize; bins];
    let mut correct = vec![0.0; bins];
    let mut conf = vec![0.0; bins];
    let (mut hits, mut brier) = (0.0, 0.0);
    for (&yi, pi) in y.iter().zip(p) {
        let (mut best, mut c) = (0usize, f64::NEG_INFINITY);
        for (k, &v) in pi.iter().enumerate() {
            if v > c {
                best = k;
                c = v;
            }
            let target = if yi == (k + 1) as f64 { 1.0 } else { 0.0 };
            brier += (v - target).powi(2);
        }
        let hit = yi == (best + 1) as f64;
        let m = ((c * bins as f64).ceil() as usize).clamp(1, bins) - 1;
        count[m] += 1;
        conf[m] += c;
        if hit {
            hits += 1.0;
            correct[m] += 1.0;
        }
    }
    let ece = (0..bins)
        .filter(|&m| count[m] > 0)
        .map(|m| {
            let k = count[m] as f64;
            k / n * (correct[m] / k - conf[m] / k).abs()
        })
        .sum();
    MulticlassMetrics {
        classes,
        accuracy: hits / n,
        brier: brier / n,
        ece,
    }
}

/// Number of bins of the expected calibration error.
pub const ECE_BINS: usize = 10;

/// True when every `y_i` is 0 or 1 and every `y_hat` value lies in [0, 1].
pub fn is_binary(y: &[f64], y_hat: &[Vec<f64>]) -> bool {
    y.iter().all(|&v| v == 0.0 || v == 1.0)
        && y_hat
            .iter()
            .all(|row| row.iter().all(|v| (0.0..=1.0).contains(v)))
}

/// Scores observations `y` (length n ≥ 1) against the `S × n` draws of `y_hat` and `log_lik`
/// and, optionally, of `y_rep` (S ≥ 1 rows each). The outcome is binary when [`is_binary`];
/// coverage is computed for a continuous outcome when `y_rep` is given.
pub fn predictive_metrics(
    y: &[f64],
    y_hat: &[Vec<f64>],
    log_lik: &[Vec<f64>],
    y_rep: Option<&[Vec<f64>]>,
) -> PredictiveMetrics {
    let n = y.len();
    let s = y_hat.len();
    let column = |t: &[Vec<f64>], i: usize| t.iter().map(|r| r[i]).collect::<Vec<f64>>();
    let mean: Vec<f64> = (0..n)
        .map(|i| y_hat.iter().map(|r| r[i]).sum::<f64>() / s as f64)
        .collect();
    let rmse = (y
        .iter()
        .zip(&mean)
        .map(|(a, b)| (a - b).powi(2))
        .sum::<f64>()
        / n as f64)
        .sqrt();
    let lppd_pointwise: Vec<f64> = (0..n).map(|i| log_mean_exp(&column(log_lik, i))).collect();
    let lppd = lppd_pointwise.iter().sum();
    let binary = is_binary(y, y_hat);
    let coverage = match y_rep {
        Some(rep) if !binary && !rep.is_empty() => {
            let reps: Vec<Vec<f64>> = (0..n).map(|i| column(rep, i)).collect();
            Some((
                interval_coverage(y, &reps, 0.5),
                interval_coverage(y, &reps, 0.9),
            ))
        }
        _ => None,
    };
    PredictiveMetrics {
        draws: s,
        rows: (0..n).collect(),
        rmse,
        lppd,
        binary: binary.then(|| binary_metrics(y, &mean)),
        brier: binary.then(|| brier_score(y, &mean)),
        ece: binary.then(|| expected_calibration_error(y, &mean, ECE_BINS)),
        coverage,
        multiclass: None,
        mean,
        lppd_pointwise,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-12, "{a} vs {b}");
    }

    #[test]
    fn log_mean_exp_by_hand() {
        close(log_mean_exp(&[0.0, 0.0]), 0.0);
        // log((e^-1 + e^-3)/2)
        close(
            log_mean_exp(&[-1.0, -3.0]),
            ((-1f64).exp() / 2.0 + (-3f64).exp() / 2.0).ln(),
        );
        // no underflow far in the tail: log((e^-1000 + e^-1001)/2)
        close(
            log_mean_exp(&[-1000.0, -1001.0]),
            -1000.0 + ((1.0 + (-1f64).exp()) / 2.0).ln(),
        );
        assert_eq!(log_mean_exp(&[f64::NEG_INFINITY]), f64::NEG_INFINITY);
    }

    #[test]
    fn multiclass_scores_by_hand() {
        // Three classes, three observations with labels 1, 3, 2.
        let y = [1.0, 3.0, 2.0];
        let p = vec![
            vec![0.7, 0.2, 0.1],   // argmax 1, correct, confidence 0.7 (bin 7)
            vec![0.3, 0.6, 0.1],   // argmax 2, wrong, confidence 0.6 (bin 6)
            vec![0.05, 0.9, 0.05], // argmax 2, correct, confidence 0.9 (bin 9)
        ];
        let m = multiclass_metrics(&y, &p, 10);
        assert_eq!(m.classes, 3);
        close(m.accuracy, 2.0 / 3.0);
        // Brier: (0.09 + 0.04 + 0.01) + (0.09 + 0.36 + 0.81) + (0.0025 + 0.01 + 0.0025), over 3.
        close(m.brier, (0.14 + 1.26 + 0.015) / 3.0);
        // ECE: one observation per bin: |1 − 0.7| + |0 − 0.6| + |1 − 0.9|, over 3.
        close(m.ece, (0.3 + 0.6 + 0.1) / 3.0);
        // Two observations in one bin: bin 8 has confidences 0.8 and 0.75, one correct.
        let m = multiclass_metrics(&[1.0, 1.0], &[vec![0.8, 0.2], vec![0.25, 0.75]], 10);
        close(m.accuracy, 0.5);
        close(m.ece, (0.5f64 - 0.775).abs());
        close(m.brier, (0.04 + 0.04 + 0.5625 + 0.5625) / 2.0);
    }

    #[test]
    fn binary_scores_by_hand() {
        // Two draws, four observations. Averaged probabilities: 0.8, 0.4, 0.6, 0.1.
        let y = [1.0f64, 1.0, 0.0, 0.0];
        let y_hat: Vec<Vec<f64>> = vec![vec![0.9, 0.2, 0.7, 0.0], vec![0.7, 0.6, 0.5, 0.2]];
        let ll: Vec<Vec<f64>> = y_hat
            .iter()
            .map(|r| {
                r.iter()
                    .zip(&y)
                    .map(|(p, yi): (&f64, &f64)| if *yi == 1.0 { p.ln() } else { (1.0 - p).ln() })
                    .collect()
            })
            .collect();
        let m = predictive_metrics(&y, &y_hat, &ll, None);
        for (a, b) in m.mean.iter().zip([0.8, 0.4, 0.6, 0.1]) {
            close(*a, b);
        }
        // Predictions 1, 0, 1, 0: TP 1, FN 1, FP 1, TN 1.
        let b = m.binary.unwrap();
        close(b.accuracy, 0.5);
        close(b.precision, 0.5);
        close(b.recall, 0.5);
        close(b.f1, 0.5);
        // Brier: (0.04 + 0.36 + 0.36 + 0.01) / 4.
        close(m.brier.unwrap(), 0.77 / 4.0);
        // Confidences 0.8 (correct), 0.6 (wrong), 0.6 (wrong), 0.9 (correct): bins (0.7, 0.8],
        // (0.5, 0.6] ×2, (0.8, 0.9]; ECE = (1·0.2 + 2·0.6 + 1·0.1) / 4.
        close(m.ece.unwrap(), (0.2 + 1.2 + 0.1) / 4.0);
        // lppd_i = log of the mean likelihood over draws: 0.8, 0.4, 0.4, 0.9.
        for (a, b) in m.lppd_pointwise.iter().zip([0.8f64, 0.4, 0.4, 0.9]) {
            close(*a, b.ln());
        }
        close(m.lppd, (0.8f64 * 0.4 * 0.4 * 0.9).ln());
        close(m.rmse, (0.77f64 / 4.0).sqrt());
        assert!(m.coverage.is_none());
    }

    #[test]
    fn bin_edges_are_closed_above() {
        // Confidence exactly 0.6 belongs to bin (0.5, 0.6]; 1.0 to the last bin.
        close(expected_calibration_error(&[1.0], &[0.6], 10), 0.4);
        close(
            expected_calibration_error(&[1.0, 0.0], &[1.0, 0.0], 10),
            0.0,
        );
        close(expected_calibration_error(&[0.0], &[0.5], 10), 0.5);
    }

    #[test]
    fn regression_scores_and_coverage_by_hand() {
        // Five draws of y_rep for two observations: 1..5 and 10..50.
        let y = [2.0, 47.0];
        let y_hat = vec![vec![1.0, 3.0], vec![3.0, 5.0]];
        let ll = vec![vec![-1.0, -2.0], vec![-3.0, -2.0]];
        let rep: Vec<Vec<f64>> = (1..=5).map(|k| vec![k as f64, 10.0 * k as f64]).collect();
        let m = predictive_metrics(&y, &y_hat, &ll, Some(&rep));
        // means 2 and 4: errors 0 and 43.
        close(m.rmse, (43.0f64 * 43.0 / 2.0).sqrt());
        // 50% interval of 1..5 is [2, 4] (type 7): 2 inside; of 10..50 it is [20, 40]: 47 out.
        // 90% interval of 10..50 is [12, 48]: 47 inside.
        let (c50, c90) = m.coverage.unwrap();
        close(c50, 0.5);
        close(c90, 1.0);
        close(m.lppd_pointwise[1], -2.0);
        assert!(m.binary.is_none() && m.brier.is_none() && m.ece.is_none());
    }
}
