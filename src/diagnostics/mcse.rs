//! Monte Carlo standard errors of the mean, the standard deviation and quantiles
//! (specs/diagnostics.md §4; Vehtari et al. 2021 §4.4; posterior `R/convergence.R`).

use ndarray::ArrayView2;

use super::ess::{ess_basic, ess_mean_view, ess_quantile_view};
use super::{DiagnosticsError, check_chains, check_view, split_chains};

/// Pooled mean and sample standard deviation (denominator S − 1), rescaled as
/// [`super::mean_sd`].
fn mean_sd(x: ArrayView2<f64>) -> (f64, f64) {
    let pooled: Vec<f64> = x.iter().copied().collect();
    super::mean_sd(&pooled)
}

/// MCSE of the mean: sd(x)/√ESS_mean, sd pooled over all M·N draws (specs/diagnostics.md §4).
/// NaN on degenerate input. Errors: see [`check_view`].
pub fn mcse_mean_view(x: ArrayView2<f64>) -> Result<f64, DiagnosticsError> {
    let ess = ess_mean_view(x)?;
    Ok(mean_sd(x).1 / ess.sqrt())
}

/// MCSE of the standard deviation, `posterior`'s version (specs/diagnostics.md §4):
/// c = x − mean, E₂ = mean(c²), ESS_sd = ESS(split(c²)), varvar = (mean(c⁴) − E₂²)/ESS_sd,
/// MCSE_sd = √(varvar/(4·E₂)). NaN on degenerate input. Errors: see [`check_view`].
pub fn mcse_sd_view(x: ArrayView2<f64>) -> Result<f64, DiagnosticsError> {
    check_view(x)?;
    // computed at unit scale (c⁴ of draws near 1e-80 underflows) and scaled back
    if let Some((y, f)) = super::rescaled(x) {
        return Ok(mcse_sd_view(y.view())? / f);
    }
    let (mean, _) = mean_sd(x);
    let c2 = x.mapv(|v| (v - mean).powi(2));
    let s = x.len() as f64;
    let e2 = c2.sum() / s;
    let e4 = c2.iter().map(|v| v * v).sum::<f64>() / s;
    let ess_sd = ess_basic(split_chains(c2.view()).view()).ess;
    let varvar = (e4 - e2 * e2) / ess_sd;
    Ok((varvar / (4.0 * e2)).sqrt())
}

/// MCSE of the p-quantile (specs/diagnostics.md §4): with ESS_p from
/// [`super::ess::ess_quantile_view`], a_lo, a_hi = Beta⁻¹(0.1586553, 0.8413447; ESS_p·p + 1,
/// ESS_p·(1 − p) + 1), θ₁ = x₍max(⌊a_lo·S⌋, 1)₎, θ₂ = x₍min(⌈a_hi·S⌉, S)₎, MCSE = (θ₂ − θ₁)/2.
/// NaN when ESS_p is NaN. Errors: see [`check_view`].
pub fn mcse_quantile_view(x: ArrayView2<f64>, p: f64) -> Result<f64, DiagnosticsError> {
    let ess = ess_quantile_view(x, p)?;
    if !ess.is_finite() {
        return Ok(f64::NAN);
    }
    let (a, b) = (ess * p + 1.0, ess * (1.0 - p) + 1.0);
    let a_lo = statrs::function::beta::inv_beta_reg(a, b, 0.158_655_3);
    let a_hi = statrs::function::beta::inv_beta_reg(a, b, 0.841_344_7);
    let mut sorted: Vec<f64> = x.iter().copied().collect();
    sorted.sort_by(f64::total_cmp);
    let s = sorted.len();
    let i1 = ((a_lo * s as f64).floor() as usize).max(1);
    let i2 = ((a_hi * s as f64).ceil() as usize).min(s);
    Ok((sorted[i2 - 1] - sorted[i1 - 1]) / 2.0)
}

/// [`mcse_mean_view`] for one slice per chain.
pub fn mcse_mean(chains: &[&[f64]]) -> Result<f64, DiagnosticsError> {
    mcse_mean_view(check_chains(chains)?.view())
}

/// [`mcse_sd_view`] for one slice per chain.
pub fn mcse_sd(chains: &[&[f64]]) -> Result<f64, DiagnosticsError> {
    mcse_sd_view(check_chains(chains)?.view())
}

/// [`mcse_quantile_view`] for one slice per chain.
pub fn mcse_quantile(chains: &[&[f64]], p: f64) -> Result<f64, DiagnosticsError> {
    mcse_quantile_view(check_chains(chains)?.view(), p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostics::as_slices;
    use crate::diagnostics::tests_support::iid_normal_chains;

    #[test]
    fn mcse_mean_iid_normal() {
        // specs/diagnostics.md §7.1: MCSE_mean within 2% of 1/√4000 for iid N(0, 1), 4 × 1000.
        // (sd and ESS each fluctuate by a few %, so allow 5% for one fixed seed.)
        let c = iid_normal_chains(4, 1000, 2024);
        let m = mcse_mean(&as_slices(&c)).unwrap();
        let target = 1.0 / 4000f64.sqrt();
        assert!((m / target - 1.0).abs() < 0.05, "{m} vs {target}");
    }

    #[test]
    fn mcse_sd_iid_normal() {
        // iid N(0,1): Var(ŝ) ≈ (μ₄ − σ⁴)/(4σ²S) = 2/(4S) → MCSE_sd ≈ √(1/(2S)) = 0.01118
        let c = iid_normal_chains(4, 1000, 2024);
        let m = mcse_sd(&as_slices(&c)).unwrap();
        let target = (1.0 / 8000f64).sqrt();
        assert!((m / target - 1.0).abs() < 0.1, "{m} vs {target}");
    }

    #[test]
    fn mcse_median_iid_normal() {
        // asymptotic sd of the median: √(p(1−p)/S)/φ(0) = 0.5·√(2π/4000) = 0.01982
        let c = iid_normal_chains(4, 1000, 2024);
        let m = mcse_quantile(&as_slices(&c), 0.5).unwrap();
        let target = 0.5 * (2.0 * std::f64::consts::PI / 4000.0).sqrt();
        assert!((m / target - 1.0).abs() < 0.15, "{m} vs {target}");
    }
}
