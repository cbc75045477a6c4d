//! Rank-normalised split R-hat (specs/diagnostics.md §2; Vehtari et al. 2021 §3).

use ndarray::ArrayView2;

use super::{
    DiagnosticsError, check_chains, check_view, fold, is_degenerate, rank_normalize, split_chains,
};

/// Basic R-hat of an (M′ chains, N′ draws) matrix, specs/diagnostics.md §2:
/// B = N′·Σ(x̄_m − x̄)²/(M′ − 1), W = mean chain variance, var⁺ = ((N′−1)/N′)·W + B/N′,
/// R̂ = √(var⁺/W). NaN when degenerate (§1), when M′ < 2 or N′ < 2.
pub fn rhat_basic(x: ArrayView2<f64>) -> f64 {
    let (m, n) = x.dim();
    if m < 2 || n < 2 || is_degenerate(x) {
        return f64::NAN;
    }
    let nf = n as f64;
    let means: Vec<f64> = x.rows().into_iter().map(|r| r.sum() / nf).collect();
    let grand = means.iter().sum::<f64>() / m as f64;
    let b = nf * means.iter().map(|mu| (mu - grand).powi(2)).sum::<f64>() / (m as f64 - 1.0);
    let w = x
        .rows()
        .into_iter()
        .zip(&means)
        .map(|(r, mu)| r.iter().map(|v| (v - mu).powi(2)).sum::<f64>() / (nf - 1.0))
        .sum::<f64>()
        / m as f64;
    let var_plus = (nf - 1.0) / nf * w + b / nf;
    (var_plus / w).sqrt()
}

/// Bulk and tail R-hat of (M chains, N draws): (R̂(z(split(x))), R̂(z(split(fold(x))))),
/// the pair Stan's C++ returns (specs/diagnostics.md §2). Each is NaN on degenerate input.
///
/// Errors: see [`check_view`].
pub fn rhat_bulk_tail_view(x: ArrayView2<f64>) -> Result<(f64, f64), DiagnosticsError> {
    check_view(x)?;
    if is_degenerate(x) {
        return Ok((f64::NAN, f64::NAN));
    }
    let bulk = rhat_basic(rank_normalize(split_chains(x).view()).view());
    let folded = fold(x);
    let tail = rhat_basic(rank_normalize(split_chains(folded.view()).view()).view());
    Ok((bulk, tail))
}

/// [`rhat_bulk_tail_view`] for one slice per chain.
pub fn rhat_bulk_tail(chains: &[&[f64]]) -> Result<(f64, f64), DiagnosticsError> {
    rhat_bulk_tail_view(check_chains(chains)?.view())
}

/// Reported R-hat: max(bulk, tail) of [`rhat_bulk_tail_view`], as `posterior::rhat`
/// (specs/diagnostics.md §2). NaN if either term is NaN (posterior's `max` propagates NA).
/// Threshold for convergence: R̂ < 1.01 (Vehtari et al. 2021 §4).
pub fn rhat_view(x: ArrayView2<f64>) -> Result<f64, DiagnosticsError> {
    let (b, t) = rhat_bulk_tail_view(x)?;
    Ok(if b.is_nan() || t.is_nan() {
        f64::NAN
    } else {
        b.max(t)
    })
}

/// [`rhat_view`] for one slice per chain (all of equal length N ≥ 4).
pub fn rhat(chains: &[&[f64]]) -> Result<f64, DiagnosticsError> {
    rhat_view(check_chains(chains)?.view())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostics::tests_support::{ar1_chains, iid_normal_chains};
    use ndarray::array;

    #[test]
    fn basic_rhat_closed_form() {
        // two chains [1,2,3] and [3,4,5]: means 2, 4; W = 1; B = 3·2/1 = 6;
        // var⁺ = (2/3)·1 + 6/3 = 8/3; R̂ = √(8/3)
        let x = array![[1.0, 2.0, 3.0], [3.0, 4.0, 5.0]];
        assert!((rhat_basic(x.view()) - (8.0f64 / 3.0).sqrt()).abs() < 1e-14);
    }

    #[test]
    fn iid_chains_give_rhat_near_one() {
        let c = iid_normal_chains(4, 1000, 11);
        let r = rhat(&crate::diagnostics::as_slices(&c)).unwrap();
        assert!((r - 1.0).abs() < 0.01, "R-hat {r}");
    }

    #[test]
    fn separated_modes_are_flagged() {
        // 4 AR(1) chains (φ = 0.5), two centred at −3 and two at +3
        let mut c = ar1_chains(4, 1000, 0.5, 5);
        for (i, ch) in c.iter_mut().enumerate() {
            let shift = if i < 2 { -3.0 } else { 3.0 };
            ch.iter_mut().for_each(|v| *v += shift);
        }
        let r = rhat(&crate::diagnostics::as_slices(&c)).unwrap();
        assert!(r > 1.5, "R-hat {r}");
    }

    #[test]
    fn one_shifted_chain_gives_about_1_10() {
        // specs/diagnostics.md §7.3: one of 4 iid N(0,1) chains shifted by +1 sd → R̂ ≈ 1.10
        let mut c = iid_normal_chains(4, 1000, 3);
        c[0].iter_mut().for_each(|v| *v += 1.0);
        let r = rhat(&crate::diagnostics::as_slices(&c)).unwrap();
        assert!((r - 1.10).abs() < 0.03, "R-hat {r}");
    }

    #[test]
    fn constant_chains_give_nan() {
        let c = [[2.0; 10], [2.0; 10]];
        assert!(rhat(&[&c[0], &c[1]]).unwrap().is_nan());
    }
}
