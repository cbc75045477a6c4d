//! Pareto-smoothed importance sampling: the k̂ diagnostic of a variational fit, PSIS effective
//! sample size and smoothed log weights for importance resampling (specs/diagnostics.md §6.2;
//! Yao et al. 2018 §3; Vehtari et al. 2024; generalized Pareto fit of Zhang & Stephens 2009 §4).

use super::DiagnosticsError;

/// Outcome of the Pareto shape estimate k̂ (specs/diagnostics.md §6.2, steps 2, 4 and 6).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum KHat {
    /// The shrunk Zhang–Stephens estimate; +∞ when the fit produced NaN (step 6).
    Estimate(f64),
    /// The log ratios are constant: q equals the target up to a constant, so k̂ is undefined
    /// ("NA") and the check passes.
    Undefined,
    /// Only the M largest log ratios (the tail the Pareto fit would use) are equal, the others
    /// not: k̂ cannot be estimated, but the weights are bounded (their largest value is shared
    /// by M draws), so the check on k̂ passes while the other checks of the weights (PSIS ESS,
    /// shifts of the reweighted moments) still apply. Seen where |log p| ≈ 7e14 quantizes the
    /// log ratios in steps of 0.125 nats ([X], fresh-user finding, session 21: this case was
    /// reported as "constant to rounding").
    TailTied,
    /// The generalized Pareto fit failed (reference point x* ≤ smallest exceedance): treated as
    /// a failure (`loo` reports Inf).
    FitFailed,
    /// Some log ratio is NaN or +∞ (or all are −∞): "q places mass where the target is
    /// undefined". Reported as k̂ = +∞.
    NonFinite,
}

impl KHat {
    /// k̂ as a number: the estimate, NaN for `Undefined` and `FitFailed`, +∞ for `NonFinite`.
    pub fn value(&self) -> f64 {
        match self {
            KHat::Estimate(k) => *k,
            KHat::Undefined | KHat::TailTied | KHat::FitFailed => f64::NAN,
            KHat::NonFinite => f64::INFINITY,
        }
    }

    /// Whether the check passes at `threshold` (k̂ < threshold, or k̂ undefined because the
    /// ratios are constant). Use 0.7 (Yao et al. 2018) or [`khat_threshold`].
    pub fn passes(&self, threshold: f64) -> bool {
        match self {
            KHat::Estimate(k) => *k < threshold,
            KHat::Undefined | KHat::TailTied => true,
            KHat::FitFailed | KHat::NonFinite => false,
        }
    }
}

/// Result of [`psis`].
#[derive(Clone, Debug, PartialEq)]
pub struct Psis {
    /// The Pareto shape diagnostic.
    pub khat: KHat,
    /// Fitted generalized Pareto scale σ̂ on the exceedances of the shifted weights (NaN when no
    /// fit was made).
    pub sigma: f64,
    /// Tail length M used for the fit.
    pub tail_len: usize,
    /// Pareto-smoothed log weights, same order and length as the input log ratios, unnormalised
    /// (max(log r) added back, step 7). Raw log ratios when no smoothing was possible.
    pub log_weights: Vec<f64>,
    /// PSIS effective sample size 1/Σ w̃², with w̃ the normalised smoothed weights; NaN for
    /// non-finite input.
    pub ess: f64,
}

impl Psis {
    /// Normalised weights w̃ (summing to 1), same order as the input.
    pub fn normalized_weights(&self) -> Vec<f64> {
        normalize(&self.log_weights)
    }

    /// Systematic importance resampling: `n` indices into the input draws, drawn with
    /// probabilities w̃, using one uniform `u` ∈ [0, 1) supplied by the caller (the sampler
    /// owns the random stream). Indices come out in ascending order; shuffle if order matters.
    pub fn resample(&self, n: usize, u: f64) -> Vec<usize> {
        let w = self.normalized_weights();
        let mut out = Vec::with_capacity(n);
        let mut cum = 0.0;
        let mut i = 0;
        for j in 0..n {
            let target = (j as f64 + u) / n as f64;
            while i + 1 < w.len() && cum + w[i] <= target {
                cum += w[i];
                i += 1;
            }
            out.push(i);
        }
        out
    }
}

fn normalize(lw: &[f64]) -> Vec<f64> {
    let max = lw.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let w: Vec<f64> = lw.iter().map(|v| (v - max).exp()).collect();
    let total: f64 = w.iter().sum();
    w.into_iter().map(|v| v / total).collect()
}

/// Tail length M = ⌊3√S⌋ if S > 225, otherwise ⌊S/5⌋ (r_eff = 1; specs/diagnostics.md §6.2
/// step 3).
pub fn tail_length(s: usize) -> usize {
    if s > 225 {
        (3.0 * (s as f64).sqrt()).floor() as usize
    } else {
        s / 5
    }
}

/// Sample-size-aware reliability threshold min(1 − 1/log₁₀ S, 0.7) (Vehtari et al. 2024);
/// 0.667 for S = 1000.
pub fn khat_threshold(s: usize) -> f64 {
    (1.0 - 1.0 / (s as f64).log10()).min(0.7)
}

/// Generalized Pareto fit (location 0) to ascending-sorted positive exceedances `y`, by
/// Zhang & Stephens' (2009) profile-likelihood empirical Bayes with prior constant b = 3,
/// K = 30 + ⌊√n⌋ grid points, and the shrinkage k̂ ← (n·k̂ + 5)/(n + 10) of Vehtari et al. (2024)
/// (specs/diagnostics.md §6.2 step 6). Returns (k̂, σ̂), σ̂ computed before the shrinkage;
/// k̂ = +∞ if it came out NaN. `None` when the fit fails (x* ≤ y₍₁₎ or fewer than 2 values).
pub fn gpd_fit(y: &[f64]) -> Option<(f64, f64)> {
    let n = y.len();
    if n < 2 {
        return None;
    }
    let nf = n as f64;
    let b = 3.0;
    let k_grid = 30 + nf.sqrt().floor() as usize;
    let x_star = y[((nf / 4.0 + 0.5).floor() as usize).max(1) - 1];
    if x_star <= y[0] {
        return None;
    }
    let mean_log1m = |theta: f64| y.iter().map(|v| (-theta * v).ln_1p()).sum::<f64>() / nf;
    let theta: Vec<f64> = (1..=k_grid)
        .map(|j| 1.0 / y[n - 1] + (1.0 - (k_grid as f64 / (j as f64 - 0.5)).sqrt()) / (b * x_star))
        .collect();
    let ell: Vec<f64> = theta
        .iter()
        .map(|&t| {
            let kappa = mean_log1m(t);
            nf * ((-t / kappa).ln() - kappa - 1.0)
        })
        .collect();
    let w = normalize(&ell);
    let theta_hat: f64 = theta.iter().zip(&w).map(|(t, w)| t * w).sum();
    let k = mean_log1m(theta_hat);
    let sigma = -k / theta_hat;
    let k = (nf * k + 0.5 * 10.0) / (nf + 10.0);
    Some((if k.is_nan() { f64::INFINITY } else { k }, sigma))
}

/// Generalized Pareto quantile with location 0: Q(p) = σ((1 − p)^(−k) − 1)/k, or −σ·log(1 − p)
/// when k = 0.
fn gpd_quantile(p: f64, k: f64, sigma: f64) -> f64 {
    if k == 0.0 {
        -sigma * (-p).ln_1p()
    } else {
        sigma * ((-k * (-p).ln_1p()).exp_m1()) / k
    }
}

/// Log ratios whose range is below this fraction of their magnitude (at least 1, at most 10⁶)
/// are constant to rounding: k̂ is undefined and the weights equal ([`psis`]).
pub const ROUNDING_SPREAD: f64 = 1e-9;

/// PSIS diagnostic and smoothing of importance log ratios log r_s = L(ζ_s) − log q(ζ_s) of S iid
/// draws ζ_s ~ q (specs/diagnostics.md §6.2, steps 2–8). Constants in log r do not matter.
///
/// Errors: [`DiagnosticsError::TooFewValues`] when the tail length M < 5 (S < 25).
pub fn psis(log_ratios: &[f64]) -> Result<Psis, DiagnosticsError> {
    let s = log_ratios.len();
    let m = tail_length(s);
    if m < 5 {
        return Err(DiagnosticsError::TooFewValues { got: s, min: 25 });
    }
    let raw = |khat: KHat, ess: f64| Psis {
        khat,
        sigma: f64::NAN,
        tail_len: m,
        log_weights: log_ratios.to_vec(),
        ess,
    };
    let max = log_ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if log_ratios.iter().any(|v| v.is_nan()) || max == f64::INFINITY || max == f64::NEG_INFINITY {
        return Ok(raw(KHat::NonFinite, f64::NAN));
    }
    let min = log_ratios.iter().copied().fold(f64::INFINITY, f64::min);
    // Equal up to rounding counts as equal ([X], beyond the spec's exact equality): when q is
    // the posterior itself (a Gaussian target) log p − log q is a constant plus rounding
    // noise of ~1e-14 relative, and a Pareto fit to that noise returned k̂ = ∞ at one seed
    // and −0.94 at another. A spread below 1e-9 of the values' magnitude changes no weight
    // beyond its ninth digit.
    // The magnitude is capped at 10⁶ (a spread of at most 10⁻³ nats): log ratios of 10²⁰⁰
    // come from a q far out in the tails, where a relative spread of 10⁻²⁰ is still 10¹⁸⁰
    // nats between weights, not rounding (variational Laplace on eight schools, measured).
    if max - min <= ROUNDING_SPREAD * max.abs().max(min.abs()).clamp(1.0, 1e6) {
        return Ok(raw(KHat::Undefined, s as f64));
    }
    // Step 4: shift, sort, tail and cutoff.
    let lw: Vec<f64> = log_ratios.iter().map(|v| v - max).collect();
    let mut order: Vec<usize> = (0..s).collect();
    order.sort_by(|&a, &b| lw[a].total_cmp(&lw[b]));
    let tail_idx = &order[s - m..];
    let smallest_tail = lw[tail_idx[0]];
    let mut cutoff = lw[order[s - m - 1]];
    if cutoff == smallest_tail {
        cutoff -= f64::EPSILON;
    }
    let raw_ess = |lw: &[f64]| 1.0 / normalize(lw).iter().map(|w| w * w).sum::<f64>();
    if smallest_tail == lw[tail_idx[m - 1]] {
        return Ok(raw(KHat::TailTied, raw_ess(log_ratios)));
    }
    // Step 5: exceedances, ascending.
    let exp_cut = cutoff.exp();
    let y: Vec<f64> = tail_idx.iter().map(|&i| lw[i].exp() - exp_cut).collect();
    // Step 6
    let Some((k, sigma)) = gpd_fit(&y) else {
        return Ok(raw(KHat::FitFailed, raw_ess(log_ratios)));
    };
    if !k.is_finite() {
        let mut out = raw(KHat::Estimate(k), raw_ess(log_ratios));
        out.sigma = sigma;
        return Ok(out);
    }
    // Step 7: smoothing, truncation at 0, shift back.
    let mut smoothed = lw;
    for (i, &idx) in tail_idx.iter().enumerate() {
        let p = (i as f64 + 0.5) / m as f64;
        smoothed[idx] = (exp_cut + gpd_quantile(p, k, sigma)).ln();
    }
    for v in smoothed.iter_mut() {
        *v = v.min(0.0) + max;
    }
    let ess = raw_ess(&smoothed);
    Ok(Psis {
        khat: KHat::Estimate(k),
        sigma,
        tail_len: m,
        log_weights: smoothed,
        ess,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostics::std_normal_quantile;

    fn grid(s: usize) -> Vec<f64> {
        (1..=s).map(|i| (i as f64 - 0.5) / s as f64).collect()
    }

    #[test]
    fn spec_vector_pareto_tail_0_3() {
        // specs/diagnostics.md §6.2: log r = −0.3·log(1 − p) → M = 94, k̂ = 0.323420, ESS = 832.392
        let lr: Vec<f64> = grid(1000).iter().map(|p| -0.3 * (-p).ln_1p()).collect();
        let r = psis(&lr).unwrap();
        assert_eq!(r.tail_len, 94);
        assert!((r.khat.value() - 0.323420).abs() < 5e-7, "{:?}", r.khat);
        assert!((r.ess - 832.392).abs() < 5e-4, "{}", r.ess);
        assert!(r.khat.passes(khat_threshold(1000)));
    }

    #[test]
    fn spec_vector_pareto_tail_0_8() {
        // specs/diagnostics.md §6.2: log r = −0.8·log(1 − p) → k̂ = 0.756556, ESS = 72.175
        let lr: Vec<f64> = grid(1000).iter().map(|p| -0.8 * (-p).ln_1p()).collect();
        let r = psis(&lr).unwrap();
        assert!((r.khat.value() - 0.756556).abs() < 5e-7, "{:?}", r.khat);
        assert!((r.ess - 72.175).abs() < 5e-4, "{}", r.ess);
        assert!(!r.khat.passes(0.7));
    }

    fn normal_vs_normal(sq: f64) -> Vec<f64> {
        // target N(0, 1), q = N(0, s_q²), at ζ_s = s_q·Φ⁻¹(p_s); constants dropped
        grid(1000)
            .iter()
            .map(|&p| {
                let z = sq * std_normal_quantile(p);
                -0.5 * z * z + 0.5 * (z / sq).powi(2)
            })
            .collect()
    }

    #[test]
    fn spec_vectors_normal_proposals() {
        // specs/diagnostics.md §6.2: s_q = 0.8 → 0.3485, 0.5 → 0.6408, 1 → NA
        let k8 = psis(&normal_vs_normal(0.8)).unwrap().khat.value();
        assert!((k8 - 0.3485).abs() < 5e-5, "{k8}");
        let k5 = psis(&normal_vs_normal(0.5)).unwrap().khat.value();
        assert!((k5 - 0.6408).abs() < 5e-5, "{k5}");
        let k1 = psis(&normal_vs_normal(1.0)).unwrap();
        assert_eq!(k1.khat, KHat::Undefined);
        assert!(k1.khat.passes(0.7));
        assert_eq!(k1.ess, 1000.0);
    }

    #[test]
    fn log_ratios_constant_to_rounding_have_no_khat() {
        // log p - log q of a Gaussian q at its Gaussian target: -30.5 plus rounding noise
        let lr: Vec<f64> = (0..1000)
            .map(|i| -30.5 + 3e-15 * (((i * 7919) % 101) as f64 - 50.0))
            .collect();
        let p = psis(&lr).unwrap();
        assert_eq!(p.khat, KHat::Undefined);
        assert_eq!(p.ess, 1000.0);
        // a real spread of 1e-6 nats is still fitted
        let lr: Vec<f64> = grid(1000).iter().map(|p| -30.5 + 1e-6 * p).collect();
        assert_ne!(psis(&lr).unwrap().khat, KHat::Undefined);
        // huge log ratios that differ by 10¹⁹⁰ nats are not "equal to rounding" however small
        // their relative spread (a q far out in the tails)
        let lr: Vec<f64> = grid(1000).iter().map(|p| -1e200 + 1e190 * p).collect();
        assert_ne!(psis(&lr).unwrap().khat, KHat::Undefined);
    }

    #[test]
    fn a_tied_tail_is_not_called_constant() {
        // the 20% largest of 1000 spread log ratios cut to one value: the tail M = 95 is tied,
        // the rest spreads over 3 nats
        let g = grid(1000);
        let lr: Vec<f64> = g.iter().map(|p| 3.0 * p.min(0.8)).collect();
        let p = psis(&lr).unwrap();
        assert_eq!(p.khat, KHat::TailTied);
        assert!(p.khat.passes(0.7));
        // raw weights: not all equal, so the ESS is below S
        let w: Vec<f64> = lr.iter().map(|v| (v - 2.4).exp()).collect();
        let ess = w.iter().sum::<f64>().powi(2) / w.iter().map(|x| x * x).sum::<f64>();
        assert!(
            (p.ess - ess).abs() < 1e-6 * ess && ess < 900.0,
            "{} {ess}",
            p.ess
        );
    }

    #[test]
    fn non_finite_and_small_inputs() {
        let mut lr: Vec<f64> = grid(100).iter().map(|p| -0.3 * (-p).ln_1p()).collect();
        lr[3] = f64::NAN;
        assert_eq!(psis(&lr).unwrap().khat, KHat::NonFinite);
        assert_eq!(psis(&lr).unwrap().khat.value(), f64::INFINITY);
        assert!(psis(&[0.0; 20]).is_err());
    }

    #[test]
    fn smoothing_keeps_order_and_truncates() {
        let lr: Vec<f64> = grid(1000)
            .iter()
            .map(|p| 2.0 - 0.3 * (-p).ln_1p())
            .collect();
        let r = psis(&lr).unwrap();
        let max = lr.iter().copied().fold(f64::MIN, f64::max);
        assert!(r.log_weights.iter().all(|w| *w <= max));
        // body untouched
        assert!(
            r.log_weights[..900]
                .iter()
                .zip(&lr[..900])
                .all(|(a, b)| (a - b).abs() < 1e-12)
        );
        // smoothed tail stays increasing
        assert!(r.log_weights[906..].windows(2).all(|w| w[0] <= w[1]));
        let w = r.normalized_weights();
        assert!((w.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        let idx = r.resample(500, 0.5);
        assert_eq!(idx.len(), 500);
        assert!(idx.windows(2).all(|w| w[0] <= w[1]) && *idx.last().unwrap() < 1000);
    }
}
