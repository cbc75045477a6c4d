//! All convergence diagnostics of one quantity at once, sharing the sorts and rank
//! normalisations between R-hat, ESS and MCSE (specs/diagnostics.md §§2–4).

use ndarray::ArrayView2;

use super::ess::ess_basic;
use super::quantile::quantile_sorted;
use super::rhat::rhat_basic;
use super::{
    DiagnosticsError, check_chains, check_view, is_degenerate, rank_normalize, split_chains,
};

/// R-hat, ESS and MCSE of the mean of one quantity; every field equals what the corresponding
/// single-purpose function returns (`rhat_view`, `ess_bulk_view`, …).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Convergence {
    /// Reported R-hat, max(bulk, tail) (§2); NaN if either is NaN.
    pub rhat: f64,
    /// Bulk R-hat, R̂(z(split(x))).
    pub rhat_bulk: f64,
    /// Tail R-hat, R̂(z(split(fold(x)))).
    pub rhat_tail: f64,
    /// Bulk ESS (§3.2).
    pub ess_bulk: f64,
    /// Tail ESS (§3.2).
    pub ess_tail: f64,
    /// ESS for the mean, ESS(split(x)) (§3.2).
    pub ess_mean: f64,
    /// MCSE of the mean, sd/√ESS_mean (§4).
    pub mcse_mean: f64,
}

/// [`Convergence`] of (M chains, N draws). NaN fields for degenerate input (§1).
/// Errors: see [`check_view`].
pub fn convergence_view(x: ArrayView2<f64>) -> Result<Convergence, DiagnosticsError> {
    check_view(x)?;
    let mut sorted: Vec<f64> = x.iter().copied().collect();
    sorted.sort_unstable_by(f64::total_cmp);
    Ok(convergence_sorted(x, &sorted))
}

/// [`convergence_view`] for one slice per chain.
pub fn convergence(chains: &[&[f64]]) -> Result<Convergence, DiagnosticsError> {
    convergence_view(check_chains(chains)?.view())
}

/// [`convergence_view`] given the pooled draws already sorted ascending (checked input).
pub(crate) fn convergence_sorted(x: ArrayView2<f64>, sorted: &[f64]) -> Convergence {
    let nan = f64::NAN;
    if is_degenerate(x) {
        return Convergence {
            rhat: nan,
            rhat_bulk: nan,
            rhat_tail: nan,
            ess_bulk: nan,
            ess_tail: nan,
            ess_mean: nan,
            mcse_mean: nan,
        };
    }
    // R-hat and ESS are scale-free; the MCSE is computed at unit scale and scaled back, so
    // that draws near 1e-200 (whose squared deviations underflow) get their true values
    if let Some((y, f)) = super::rescaled(x) {
        let scaled: Vec<f64> = sorted.iter().map(|v| v * f).collect();
        let c = convergence_sorted(y.view(), &scaled);
        return Convergence {
            mcse_mean: c.mcse_mean / f,
            ..c
        };
    }
    let split = split_chains(x);
    let z = rank_normalize(split.view());
    let rhat_bulk = rhat_basic(z.view());
    let ess_bulk = ess_basic(z.view()).ess;

    let median = quantile_sorted(sorted, 0.5);
    let folded = split.mapv(|v| (v - median).abs());
    let rhat_tail = rhat_basic(rank_normalize(folded.view()).view());
    let rhat = if rhat_bulk.is_nan() || rhat_tail.is_nan() {
        nan
    } else {
        rhat_bulk.max(rhat_tail)
    };

    let tail_ess = |p: f64| {
        let q = quantile_sorted(sorted, p);
        ess_basic(split.mapv(|v| if v <= q { 1.0 } else { 0.0 }).view()).ess
    };
    let (lo, hi) = (tail_ess(0.05), tail_ess(0.95));
    let ess_tail = match (lo.is_nan(), hi.is_nan()) {
        (true, _) => hi,
        (_, true) => lo,
        _ => lo.min(hi),
    };

    let ess_mean = ess_basic(split.view()).ess;
    let s = x.len() as f64;
    let mean = x.sum() / s;
    let sd = (x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (s - 1.0)).sqrt();
    Convergence {
        rhat,
        rhat_bulk,
        rhat_tail,
        ess_bulk,
        ess_tail,
        ess_mean,
        mcse_mean: sd / ess_mean.sqrt(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostics::tests_support::ar1_chains;
    use crate::diagnostics::{
        as_slices, ess_bulk, ess_mean, ess_tail, mcse_mean, rhat, rhat_bulk_tail,
    };

    #[test]
    fn matches_single_purpose_functions() {
        // even and odd N (odd N drops the middle draw of each chain when splitting)
        for n in [600, 601] {
            let c = ar1_chains(3, n, 0.6, 21);
            let s = as_slices(&c);
            let all = convergence(&s).unwrap();
            let (b, t) = rhat_bulk_tail(&s).unwrap();
            let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.abs();
            assert!(close(all.rhat, rhat(&s).unwrap()));
            assert!(close(all.rhat_bulk, b) && close(all.rhat_tail, t));
            assert!(close(all.ess_bulk, ess_bulk(&s).unwrap()));
            assert!(close(all.ess_tail, ess_tail(&s).unwrap()));
            assert!(close(all.ess_mean, ess_mean(&s).unwrap()));
            assert!(close(all.mcse_mean, mcse_mean(&s).unwrap()));
        }
        let c = [[1.0; 6], [1.0; 6]];
        assert!(convergence(&[&c[0], &c[1]]).unwrap().rhat.is_nan());
    }
}
