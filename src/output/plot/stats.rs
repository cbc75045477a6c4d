//! Summaries the plots draw: Gaussian kernel density estimates, highest-density intervals,
//! quantiles and pooled ranks. Pure functions of the draws; non-finite draws are the caller's
//! to drop.

/// Quantile `p ∈ [0, 1]` of ascending `sorted` by linear interpolation between order
/// statistics (Hyndman & Fan 1996, type 7, the default of R and NumPy). NaN for empty input.
pub fn quantile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let h = (sorted.len() - 1) as f64 * p.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

/// The shortest interval holding `ceil(prob · n)` of the `n` ascending `sorted` draws: the
/// highest-density interval of the empirical distribution (Hyndman 1996, as ArviZ's `hdi` on
/// draws). `(NaN, NaN)` for empty input.
pub fn hdi(sorted: &[f64], prob: f64) -> (f64, f64) {
    let n = sorted.len();
    if n == 0 {
        return (f64::NAN, f64::NAN);
    }
    let k = ((prob * n as f64).ceil() as usize).clamp(1, n);
    let mut best = (sorted[0], sorted[k - 1]);
    for i in 1..=n - k {
        if sorted[i + k - 1] - sorted[i] < best.1 - best.0 {
            best = (sorted[i], sorted[i + k - 1]);
        }
    }
    best
}

/// Sample standard deviation (n − 1 denominator); 0 for fewer than two values.
fn sd(x: &[f64]) -> f64 {
    if x.len() < 2 {
        return 0.0;
    }
    let m = x.iter().sum::<f64>() / x.len() as f64;
    (x.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (x.len() - 1) as f64).sqrt()
}

/// Silverman's rule-of-thumb bandwidth, 0.9 · min(sd, IQR/1.34) · n^(−1/5) (Silverman 1986,
/// eq. 3.31), falling back to the sd when the IQR is 0; 0 for constant draws.
pub fn silverman_bandwidth(sorted: &[f64]) -> f64 {
    let s = sd(sorted);
    let iqr = quantile(sorted, 0.75) - quantile(sorted, 0.25);
    let spread = if iqr > 0.0 { s.min(iqr / 1.34) } else { s };
    0.9 * spread * (sorted.len() as f64).powf(-0.2)
}

/// Gaussian kernel density estimate of ascending `sorted` at `grid` points spread evenly over
/// `[lo, hi]`, with [`silverman_bandwidth`]: (x, density) pairs. Densities integrate to about 1
/// over the whole line. `None` when there are fewer than two draws or they are constant (no
/// density to draw).
pub fn kde(sorted: &[f64], lo: f64, hi: f64, grid: usize) -> Option<Vec<(f64, f64)>> {
    let h = silverman_bandwidth(sorted);
    if sorted.len() < 2 || !(h > 0.0) || !(hi > lo) || grid < 2 {
        return None;
    }
    let norm = 1.0 / (sorted.len() as f64 * h * (2.0 * std::f64::consts::PI).sqrt());
    let step = (hi - lo) / (grid - 1) as f64;
    Some(
        (0..grid)
            .map(|i| {
                let x = lo + step * i as f64;
                // draws beyond 8 bandwidths contribute < 1e-14 each: skip them
                let a = sorted.partition_point(|&v| v < x - 8.0 * h);
                let b = sorted.partition_point(|&v| v <= x + 8.0 * h);
                let s: f64 = sorted[a..b]
                    .iter()
                    .map(|v| (-0.5 * ((x - v) / h).powi(2)).exp())
                    .sum();
                (x, s * norm)
            })
            .collect(),
    )
}

/// Ranks (1-based, ties averaged) of all chains' draws pooled, returned per chain in the same
/// layout: the ranks of the rank plot (Vehtari, Gelman, Simpson, Carpenter & Bürkner 2021,
/// §4.1 and Fig. 3).
pub fn pooled_ranks(chains: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let mut all: Vec<(f64, usize, usize)> = chains
        .iter()
        .enumerate()
        .flat_map(|(c, x)| x.iter().enumerate().map(move |(i, &v)| (v, c, i)))
        .collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut out: Vec<Vec<f64>> = chains.iter().map(|x| vec![0.0; x.len()]).collect();
    let mut i = 0;
    while i < all.len() {
        let mut j = i;
        while j + 1 < all.len() && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let r = (i + j) as f64 / 2.0 + 1.0;
        for &(_, c, k) in &all[i..=j] {
            out[c][k] = r;
        }
        i = j + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantile_type7() {
        let x = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&x, 0.0), 1.0);
        assert_eq!(quantile(&x, 1.0), 4.0);
        assert!((quantile(&x, 0.5) - 2.5).abs() < 1e-15);
        assert!((quantile(&x, 0.25) - 1.75).abs() < 1e-15);
    }

    #[test]
    fn hdi_is_shortest_interval() {
        // 10 draws, 60% = 6 of them: the tight cluster 5..=10 wins over any window with 0
        let x = [0.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 30.0, 40.0, 50.0];
        assert_eq!(hdi(&x, 0.6), (5.0, 10.0));
        assert_eq!(hdi(&x, 1.0), (0.0, 50.0));
    }

    #[test]
    fn kde_of_normal_draws_matches_the_density() {
        // evenly spaced normal quantiles: the KDE at 0 approaches φ(0) = 0.3989 (smoothed by h)
        let n = 2000;
        let z: Vec<f64> = (1..=n)
            .map(|i| {
                let p = i as f64 / (n + 1) as f64;
                statrs::function::erf::erf_inv(2.0 * p - 1.0) * std::f64::consts::SQRT_2
            })
            .collect();
        let d = kde(&z, -4.0, 4.0, 81).unwrap();
        let at0 = d[40].1;
        let h = silverman_bandwidth(&z);
        // KDE of N(0,1) with a Gaussian kernel is N(0, 1 + h²) in expectation
        let expect = 1.0 / (2.0 * std::f64::consts::PI * (1.0 + h * h)).sqrt();
        assert!((at0 - expect).abs() < 5e-3, "{at0} vs {expect}");
        let area: f64 = d.iter().map(|p| p.1).sum::<f64>() * 0.1;
        assert!((area - 1.0).abs() < 5e-3, "area {area}");
        assert!(kde(&[1.0, 1.0, 1.0], 0.0, 2.0, 10).is_none());
    }

    #[test]
    fn ranks_are_pooled_with_ties_averaged() {
        let r = pooled_ranks(&[vec![3.0, 1.0], vec![2.0, 3.0]]);
        assert_eq!(r, vec![vec![3.5, 1.0], vec![2.0, 3.5]]);
    }
}
