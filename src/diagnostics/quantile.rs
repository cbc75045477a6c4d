//! Sample quantiles by linear interpolation between order statistics (R type 7, numpy default).
//!
//! Source: specs/diagnostics.md §1 "Pooled quantile": h = (S − 1)·p + 1 in 1-based order
//! statistics, q̂_p = x₍⌊h⌋₎ + (h − ⌊h⌋)·(x₍⌊h⌋+1₎ − x₍⌊h⌋₎).

/// Type-7 quantile of `values` at probability `p` ∈ [0, 1]. Sorts a copy: O(S log S).
///
/// Returns NaN for an empty input, for p outside [0, 1], or when any value is NaN.
pub fn quantile(values: &[f64], p: f64) -> f64 {
    if values.is_empty() || !(0.0..=1.0).contains(&p) || values.iter().any(|v| v.is_nan()) {
        return f64::NAN;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    quantile_sorted(&sorted, p)
}

/// Type-7 quantiles at several probabilities, sorting once. Same NaN rules as [`quantile`].
pub fn quantiles(values: &[f64], probs: &[f64]) -> Vec<f64> {
    if values.is_empty() || values.iter().any(|v| v.is_nan()) {
        return vec![f64::NAN; probs.len()];
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    probs.iter().map(|&p| quantile_sorted(&sorted, p)).collect()
}

/// Type-7 quantile of already ascending-sorted, NaN-free values; NaN if empty or p ∉ [0, 1].
pub fn quantile_sorted(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() || !(0.0..=1.0).contains(&p) {
        return f64::NAN;
    }
    let h = (sorted.len() - 1) as f64 * p; // 0-based position
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    let frac = h - lo as f64;
    // equal neighbours (both +∞, say: ∞ − ∞ is NaN) need no interpolation
    if frac == 0.0 || sorted[lo] == sorted[hi] {
        sorted[lo]
    } else {
        sorted[lo] + frac * (sorted[hi] - sorted[lo])
    }
}

/// Median (type-7 quantile at 0.5): the middle value, or the mean of the two middle values.
pub fn median(values: &[f64]) -> f64 {
    quantile(values, 0.5)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_r_type_7() {
        // R: quantile(c(3, 1, 4, 1, 5, 9, 2, 6), c(0.05, 0.5, 0.95), type = 7)
        //    = 1.00 3.50 7.95
        let x = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0];
        let q = quantiles(&x, &[0.05, 0.5, 0.95, 0.0, 1.0]);
        assert!((q[0] - 1.0).abs() < 1e-15);
        assert!((q[1] - 3.5).abs() < 1e-15);
        assert!((q[2] - 7.95).abs() < 1e-12);
        assert_eq!(q[3], 1.0);
        assert_eq!(q[4], 9.0);
        assert_eq!(median(&[2.0, 1.0, 3.0]), 2.0);
        assert!(quantile(&[], 0.5).is_nan());
        assert!(quantile(&[1.0, f64::NAN], 0.5).is_nan());
        // all-infinite draws (a division by 0): ∞, not ∞ − ∞ = NaN
        let inf = f64::INFINITY;
        assert_eq!(quantile(&[inf, inf, inf], 0.05), inf);
        assert_eq!(quantile(&[1.0, inf, inf], 0.95), inf);
    }
}
