//! Effective sample size: the core estimator with Geyer's initial monotone sequence, and its
//! bulk, tail, mean and quantile variants (specs/diagnostics.md §3; Vehtari et al. 2021 §3.2 and
//! Appendix A; Geyer 1992).
//!
//! Autocovariances are computed directly, lag by lag, and only up to the lag where Geyer's
//! initial positive sequence stops; this gives the same values as the FFT of the spec's Step 1
//! (exactly, up to rounding) at a cost of O(M′·N′·t_max), where t_max is the truncation lag —
//! tens of lags for well-mixing chains, so far below O(N′²).

use ndarray::{Array2, ArrayView2};

use super::quantile::quantiles;
use super::{
    DiagnosticsError, check_chains, check_view, is_degenerate, rank_normalize, split_chains,
};

/// Result of the core ESS estimator.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EssEstimate {
    /// Effective sample size S/τ̂; NaN for degenerate input or N′ < 3.
    pub ess: f64,
    /// True when the cap τ̂ ≥ 1/log₁₀(S) of Step 7 bound (antithetic chains); callers should warn.
    pub capped: bool,
}

/// Core ESS of an (M′ chains, N′ draws) matrix (already split, if splitting is wanted), Steps 1–8
/// of specs/diagnostics.md §3.1. NaN when N′ < 3 or the input is degenerate (§1).
pub fn ess_basic(x: ArrayView2<f64>) -> EssEstimate {
    let (m, n) = x.dim();
    let nan = EssEstimate {
        ess: f64::NAN,
        capped: false,
    };
    if m == 0 || n < 3 || is_degenerate(x) {
        return nan;
    }
    // ESS is scale-free: draws near 1e-200 (or 1e300) are brought to unit scale first, where
    // their autocovariances neither underflow nor overflow
    if let Some((y, _)) = super::rescaled(x) {
        return ess_basic(y.view());
    }
    let nf = n as f64;
    let means: Vec<f64> = x.rows().into_iter().map(|r| r.sum() / nf).collect();
    let centred: Vec<Vec<f64>> = x
        .rows()
        .into_iter()
        .zip(&means)
        .map(|(r, mu)| r.iter().map(|v| v - mu).collect())
        .collect();
    // Step 1: mean over chains of the biased autocovariance at lag t (denominator N′).
    let mean_acov = |t: usize| -> f64 {
        centred
            .iter()
            .map(|c| {
                c[..n - t]
                    .iter()
                    .zip(&c[t..])
                    .map(|(a, b)| a * b)
                    .sum::<f64>()
                    / nf
            })
            .sum::<f64>()
            / m as f64
    };
    // Step 2
    let w = mean_acov(0) * nf / (nf - 1.0);
    let mut var_plus = w * (nf - 1.0) / nf;
    if m > 1 {
        let grand = means.iter().sum::<f64>() / m as f64;
        var_plus += means.iter().map(|mu| (mu - grand).powi(2)).sum::<f64>() / (m as f64 - 1.0);
    }
    // Step 3
    let rho_hat = |t: usize| 1.0 - (w - mean_acov(t)) / var_plus;
    // Step 4: initial positive sequence (ρ indexed by lag, zero beyond what is set)
    let mut rho = vec![0.0; n];
    rho[0] = 1.0;
    rho[1] = rho_hat(1);
    let mut t = 0usize;
    let mut even = 1.0;
    let mut odd = rho[1];
    while t + 5 < n && even + odd > 0.0 && !(even + odd).is_nan() {
        t += 2;
        even = rho_hat(t);
        odd = rho_hat(t + 1);
        if even + odd >= 0.0 {
            rho[t] = even;
            rho[t + 1] = odd;
        }
    }
    let t_max = t;
    if even > 0.0 {
        rho[t_max] = even;
    }
    // Step 5: initial monotone sequence
    let mut t = 2;
    while t + 2 <= t_max {
        let prev = rho[t - 2] + rho[t - 1];
        if rho[t] + rho[t + 1] > prev {
            rho[t] = prev / 2.0;
            rho[t + 1] = prev / 2.0;
        }
        t += 2;
    }
    // Step 6
    let tau = -1.0 + 2.0 * rho[..t_max].iter().sum::<f64>() + rho[t_max];
    // Step 7
    let s = (m * n) as f64;
    let cap = 1.0 / s.log10();
    let capped = tau < cap;
    let tau = tau.max(cap);
    EssEstimate {
        ess: s / tau,
        capped,
    }
}

fn split_ess(x: ArrayView2<f64>) -> f64 {
    ess_basic(split_chains(x).view()).ess
}

/// Indicator matrix I[x ≤ q].
fn indicator(x: ArrayView2<f64>, q: f64) -> Array2<f64> {
    x.mapv(|v| if v <= q { 1.0 } else { 0.0 })
}

/// Bulk ESS = ESS(z(split(x))) of (M chains, N draws), specs/diagnostics.md §3.2.
/// NaN on degenerate input. Errors: see [`check_view`].
pub fn ess_bulk_view(x: ArrayView2<f64>) -> Result<f64, DiagnosticsError> {
    check_view(x)?;
    if is_degenerate(x) {
        return Ok(f64::NAN);
    }
    Ok(ess_basic(rank_normalize(split_chains(x).view()).view()).ess)
}

/// Tail ESS = min(ESS(split(I[x ≤ q̂₀.₀₅])), ESS(split(I[x ≤ q̂₀.₉₅]))) with pooled type-7
/// quantiles of the unsplit draws (specs/diagnostics.md §3.2); if one term is NaN the other is
/// used. Errors: see [`check_view`].
pub fn ess_tail_view(x: ArrayView2<f64>) -> Result<f64, DiagnosticsError> {
    check_view(x)?;
    if is_degenerate(x) {
        return Ok(f64::NAN);
    }
    let pooled: Vec<f64> = x.iter().copied().collect();
    let q = quantiles(&pooled, &[0.05, 0.95]);
    let lo = split_ess(indicator(x, q[0]).view());
    let hi = split_ess(indicator(x, q[1]).view());
    Ok(match (lo.is_nan(), hi.is_nan()) {
        (true, _) => hi,
        (_, true) => lo,
        _ => lo.min(hi),
    })
}

/// ESS for the mean, ESS(split(x)) (specs/diagnostics.md §3.2). Errors: see [`check_view`].
pub fn ess_mean_view(x: ArrayView2<f64>) -> Result<f64, DiagnosticsError> {
    check_view(x)?;
    Ok(split_ess(x))
}

/// ESS of the p-quantile, ESS(split(I[x ≤ q̂_p])); p = 1 is replaced by (S − 0.5)/S
/// (specs/diagnostics.md §3.2). NaN for p ∉ [0, 1]. Errors: see [`check_view`].
pub fn ess_quantile_view(x: ArrayView2<f64>, p: f64) -> Result<f64, DiagnosticsError> {
    check_view(x)?;
    if is_degenerate(x) || !(0.0..=1.0).contains(&p) {
        return Ok(f64::NAN);
    }
    let pooled: Vec<f64> = x.iter().copied().collect();
    let s = pooled.len() as f64;
    let p = if p == 1.0 { (s - 0.5) / s } else { p };
    let q = quantiles(&pooled, &[p])[0];
    Ok(split_ess(indicator(x, q).view()))
}

/// [`ess_bulk_view`] for one slice per chain.
pub fn ess_bulk(chains: &[&[f64]]) -> Result<f64, DiagnosticsError> {
    ess_bulk_view(check_chains(chains)?.view())
}

/// [`ess_tail_view`] for one slice per chain.
pub fn ess_tail(chains: &[&[f64]]) -> Result<f64, DiagnosticsError> {
    ess_tail_view(check_chains(chains)?.view())
}

/// [`ess_mean_view`] for one slice per chain.
pub fn ess_mean(chains: &[&[f64]]) -> Result<f64, DiagnosticsError> {
    ess_mean_view(check_chains(chains)?.view())
}

/// [`ess_quantile_view`] for one slice per chain.
pub fn ess_quantile(chains: &[&[f64]], p: f64) -> Result<f64, DiagnosticsError> {
    ess_quantile_view(check_chains(chains)?.view(), p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostics::as_slices;
    use crate::diagnostics::tests_support::{ar1_chains, iid_normal_chains};
    use ndarray::array;

    #[test]
    fn iid_normal_4x1000() {
        // specs/diagnostics.md §7.1: bulk ESS ≈ 3900, tail ESS ≈ 3800 (within 10% of 4000)
        let c = iid_normal_chains(4, 1000, 2024);
        let s = as_slices(&c);
        let bulk = ess_bulk(&s).unwrap();
        let tail = ess_tail(&s).unwrap();
        let mean = ess_mean(&s).unwrap();
        assert!((bulk - 4000.0).abs() < 400.0, "bulk {bulk}");
        assert!((tail - 4000.0).abs() < 400.0, "tail {tail}");
        assert!((mean - 4000.0).abs() < 400.0, "mean {mean}");
    }

    #[test]
    fn ar1_matches_theory() {
        // specs/diagnostics.md §7.2: ESS ≈ M·N·(1 − φ)/(1 + φ); φ = 0.9, 4 × 20000 → 4210.5
        let (m, n, phi) = (4, 20_000, 0.9);
        let c = ar1_chains(m, n, phi, 77);
        let ess = ess_mean(&as_slices(&c)).unwrap();
        let theory = (m * n) as f64 * (1.0 - phi) / (1.0 + phi);
        assert!(
            (ess / theory - 1.0).abs() < 0.15,
            "ess {ess} theory {theory}"
        );
    }

    #[test]
    fn ar1_long_chains_spec_7_2() {
        // specs/diagnostics.md §7.2: φ = 0.9, 4 × 10⁵ → ESS_mean ≈ 20638 (reference run) against
        // the theory 21053; allow 5% around the theory for this seed.
        let c = ar1_chains(4, 100_000, 0.9, 3);
        let ess = ess_mean(&as_slices(&c)).unwrap();
        assert!((ess / 21052.63 - 1.0).abs() < 0.05, "ess {ess}");
    }

    #[test]
    fn antithetic_chain_is_capped() {
        // alternating ±1, N = 100: var⁺ = 1, ρ̂(1) = 1 − 100/99 − 0.99 < −1, so Step 4 stops at
        // t_max = 0 and τ̂ = −1 + ρ[0] = 0 < 1/log₁₀ 100; ESS = S·log₁₀ S = 200
        let c: Vec<f64> = (0..100)
            .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 })
            .collect();
        let x = ndarray::Array2::from_shape_vec((1, 100), c).unwrap();
        let e = ess_basic(x.view());
        assert!(e.capped);
        assert!((e.ess - 100.0 * 2.0).abs() < 1e-9, "{}", e.ess);
    }

    #[test]
    fn short_chain_closed_form() {
        // x = [[1..6]], one chain, no split: centred c = [−2.5, …, 2.5], γ(0) = 17.5/6,
        // W = 3.5 and var⁺ = γ(0), so ρ̂(t) = Σ c_i c_{i+t}/17.5 − 0.2: ρ̂(1) = 0.3,
        // ρ̂(2) = 1/17.5 − 0.2 < 0, ρ̂(3) = −4.75/17.5 − 0.2. Step 4 runs once (t = 2), stores
        // nothing, t_max = 2 and ρ̂(2) < 0; τ̂ = −1 + 2·(1 + 0.3) = 1.6, ESS = 6/1.6 = 3.75.
        let x = array![[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]];
        let e = ess_basic(x.view());
        assert!(!e.capped);
        assert!((e.ess - 3.75).abs() < 1e-12, "{}", e.ess);
    }

    #[test]
    fn degenerate_is_nan() {
        let c = [[1.0; 8], [1.0; 8]];
        assert!(ess_bulk(&[&c[0], &c[1]]).unwrap().is_nan());
        assert!(ess_tail(&[&c[0], &c[1]]).unwrap().is_nan());
    }
}
