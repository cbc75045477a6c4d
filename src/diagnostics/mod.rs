//! Convergence diagnostics: split R-hat, effective sample size, MCSE, PSIS k̂, HMC checks, and
//! the trend test of the variational exit rules ([`trend`]).
//!
//! Pure functions on draws of one scalar quantity laid out as chains × draws
//! (specs/diagnostics.md §1). Two input forms are accepted everywhere:
//!
//! - `&[&[f64]]`: one slice per chain, all of equal length N (the functions without suffix);
//! - `ndarray::ArrayView2<f64>` of shape (M chains, N draws) (the `*_view` functions).
//!
//! Inputs are checked by [`check_chains`]: at least one chain, at least [`MIN_DRAWS`] draws per
//! chain, all chains of equal length; otherwise a [`DiagnosticsError`] is returned. Degenerate
//! values (any non-finite value, or all values equal) are not an error: R-hat and ESS are then
//! NaN, as the spec prescribes (§1, "Degenerate input").
//!
//! The shared transforms of §1 live here: splitting chains, pooled type-7 quantiles
//! ([`quantile()`]), rank normalisation and folding.

pub mod convergence;
pub mod ess;
pub mod hmc_stats;
pub mod mcse;
pub mod psis;
pub mod quantile;
pub mod rhat;
pub mod trend;

use ndarray::{Array2, ArrayView2, Axis};

pub use convergence::{Convergence, convergence, convergence_view};
pub use ess::{ess_bulk, ess_mean, ess_quantile, ess_tail};
pub use hmc_stats::{HmcStats, divergences, e_bfmi, treedepth_saturation};
pub use mcse::{mcse_mean, mcse_quantile, mcse_sd};
pub use psis::{KHat, Psis, psis};
pub use quantile::{median, quantile};
pub use rhat::{rhat, rhat_bulk_tail};

/// Fewest draws per chain accepted by the MCMC diagnostics (split chains then have ≥ 2 draws).
pub const MIN_DRAWS: usize = 4;

/// Why a diagnostic could not be computed from its input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DiagnosticsError {
    /// No chains were given.
    #[error("no chains were given")]
    NoChains,
    /// A chain has fewer than [`MIN_DRAWS`] draws.
    #[error("too few draws: {draws} per chain, but at least {min} are needed")]
    TooFewDraws {
        /// Draws per chain that were given.
        draws: usize,
        /// Minimum required.
        min: usize,
    },
    /// Chains of different lengths.
    #[error("chains have unequal lengths: chain 1 has {first} draws but chain {chain} has {len}")]
    UnequalChains {
        /// Length of the first chain.
        first: usize,
        /// 1-based index of the first chain whose length differs.
        chain: usize,
        /// Its length.
        len: usize,
    },
    /// Fewer values than a non-MCMC diagnostic needs (PSIS tail fit, E-BFMI).
    #[error("too few values: {got} given, but at least {min} are needed")]
    TooFewValues {
        /// Values given.
        got: usize,
        /// Minimum required.
        min: usize,
    },
}

/// Checks the chains × draws layout and copies it into an (M, N) array.
///
/// Errors: [`DiagnosticsError::NoChains`], [`DiagnosticsError::UnequalChains`],
/// [`DiagnosticsError::TooFewDraws`] (N < [`MIN_DRAWS`]).
pub fn check_chains(chains: &[&[f64]]) -> Result<Array2<f64>, DiagnosticsError> {
    let first = chains.first().ok_or(DiagnosticsError::NoChains)?.len();
    if let Some((c, ch)) = chains.iter().enumerate().find(|(_, ch)| ch.len() != first) {
        return Err(DiagnosticsError::UnequalChains {
            first,
            chain: c + 1,
            len: ch.len(),
        });
    }
    let mut a = Array2::zeros((chains.len(), first));
    for (mut row, ch) in a.axis_iter_mut(Axis(0)).zip(chains) {
        row.iter_mut().zip(ch.iter()).for_each(|(r, v)| *r = *v);
    }
    check_view(a.view())?;
    Ok(a)
}

/// Checks an (M chains, N draws) view: M ≥ 1 and N ≥ [`MIN_DRAWS`].
pub fn check_view(x: ArrayView2<f64>) -> Result<(), DiagnosticsError> {
    if x.nrows() == 0 {
        return Err(DiagnosticsError::NoChains);
    }
    if x.ncols() < MIN_DRAWS {
        return Err(DiagnosticsError::TooFewDraws {
            draws: x.ncols(),
            min: MIN_DRAWS,
        });
    }
    Ok(())
}

/// True when any value is non-finite or all values are equal to rounding (max − min below
/// ε·max(|max|, |min|), ε the f64 machine epsilon), the degenerate case of
/// specs/diagnostics.md §1 for which R-hat and ESS are NaN.
///
/// The tolerance is relative, as Stan's (`isApproxToConstant` in
/// `compute_potential_scale_reduction`), not posterior's absolute `max − min < ε`: draws that
/// all lie near 1e-200 but differ from each other are not constant, and their diagnostics are
/// computed ([`rescaled`] keeps their squares from underflowing).
pub fn is_degenerate(x: ArrayView2<f64>) -> bool {
    let mut lo = f64::INFINITY;
    let mut hi = f64::NEG_INFINITY;
    for &v in x.iter() {
        if !v.is_finite() {
            return true;
        }
        lo = lo.min(v);
        hi = hi.max(v);
    }
    // all values are finite here; an empty input counts as degenerate
    x.is_empty() || hi == lo || hi - lo < f64::EPSILON * hi.abs().max(lo.abs())
}

/// Largest magnitude at which draws are used as they are; beyond it (or below its inverse)
/// [`scale_factor`] rescales them, since squared deviations would overflow (or underflow, to
/// 0 or imprecise subnormals).
const RESCALE_ABOVE: f64 = 1.157_920_892_373_162e77; // 2^256

/// The power of two 2^k by which to multiply values whose largest magnitude is `big` so that
/// it lies in [1, 2) (for a subnormal `big`: as near as 2^1023 gets), when `big` lies outside
/// [2^-256, 2^256]; 1 otherwise, and for 0 or a non-finite `big`. Multiplying by a power of two
/// is exact for normal numbers, so statistics computed on the rescaled values and scaled back
/// equal those of exact arithmetic on the originals as closely as at unit scale.
pub(crate) fn scale_factor(big: f64) -> f64 {
    if !big.is_finite() || big == 0.0 || (1.0 / RESCALE_ABOVE..=RESCALE_ABOVE).contains(&big) {
        return 1.0;
    }
    // the unbiased binary exponent; subnormals (biased exponent 0) count as −1023
    let e = ((big.to_bits() >> 52) & 0x7ff) as i32 - 1023;
    2f64.powi(-e.clamp(-1023, 1023))
}

/// `x` multiplied by [`scale_factor`] of its largest magnitude, with that factor, when it is
/// not 1 (draws at the 1e-200 scale, or above 1e77); `None` when `x` is fine as it is.
/// A location or spread computed from the rescaled draws is divided by the factor to give the
/// original scale; R-hat and ESS are scale-free.
pub(crate) fn rescaled(x: ArrayView2<f64>) -> Option<(Array2<f64>, f64)> {
    let big = x.iter().fold(0.0_f64, |m, v| m.max(v.abs()));
    let f = scale_factor(big);
    (f != 1.0).then(|| (x.mapv(|v| v * f), f))
}

/// Splits each chain into its first ⌊N/2⌋ and last ⌊N/2⌋ draws (the middle draw is dropped when
/// N is odd): (M, N) → (2M, ⌊N/2⌋). Row 2m is the first half of chain m, row 2m+1 its second half.
/// Source: specs/diagnostics.md §1 "Split"; posterior `R/split_chains.R`.
pub fn split_chains(x: ArrayView2<f64>) -> Array2<f64> {
    let (m, n) = x.dim();
    let h = n / 2;
    let mut out = Array2::zeros((2 * m, h));
    for c in 0..m {
        for i in 0..h {
            out[[2 * c, i]] = x[[c, i]];
            out[[2 * c + 1, i]] = x[[c, n - h + i]];
        }
    }
    out
}

/// Rank normalisation z(·) of specs/diagnostics.md §1: pooled ranks r (ties get their average
/// rank) mapped to Φ⁻¹((r − 3/8)/(S + 1/4)); same (chains, draws) layout as the input.
///
/// Values must be free of NaN (callers check [`is_degenerate`] first; NaNs sort last).
pub fn rank_normalize(x: ArrayView2<f64>) -> Array2<f64> {
    let vals: Vec<f64> = x.iter().copied().collect();
    let s = vals.len();
    let ranks = average_ranks(&vals);
    let data: Vec<f64> = ranks
        .iter()
        .map(|&r| std_normal_quantile((r - 0.375) / (s as f64 + 0.25)))
        .collect();
    Array2::from_shape_vec(x.dim(), data).expect("same number of elements as the input view")
}

/// Folding of specs/diagnostics.md §1: |x − median(x)| with the pooled (type-7) median.
pub fn fold(x: ArrayView2<f64>) -> Array2<f64> {
    let pooled: Vec<f64> = x.iter().copied().collect();
    let med = median(&pooled);
    x.mapv(|v| (v - med).abs())
}

/// 1-based ranks of `v` in ascending order, with ties given their average rank.
pub(crate) fn average_ranks(v: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..v.len()).collect();
    idx.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
    let mut ranks = vec![0.0; v.len()];
    let mut i = 0;
    while i < idx.len() {
        let mut j = i + 1;
        while j < idx.len() && v[idx[j]] == v[idx[i]] {
            j += 1;
        }
        // positions i..j (0-based) share ranks i+1..=j, average (i + 1 + j) / 2
        let r = (i + 1 + j) as f64 / 2.0;
        for &k in &idx[i..j] {
            ranks[k] = r;
        }
        i = j;
    }
    ranks
}

/// Standard normal quantile Φ⁻¹(p) = −√2·erfc⁻¹(2p) (statrs' Boost-derived `erfc_inv`).
pub(crate) fn std_normal_quantile(p: f64) -> f64 {
    -std::f64::consts::SQRT_2 * statrs::function::erf::erfc_inv(2.0 * p)
}

/// Borrows each chain of a `Vec<Vec<f64>>` (e.g. from `Draws::column`) as a slice, for the
/// `&[&[f64]]` functions.
pub fn as_slices(chains: &[Vec<f64>]) -> Vec<&[f64]> {
    chains.iter().map(|c| c.as_slice()).collect()
}

/// Mean and sample standard deviation (denominator S − 1) of `x` for the summaries.
///
/// - An exactly constant finite `x` gives its value and sd exactly 0 (the sum of S copies of
///   0.1 divided by S is not 0.1 to the last bit, and the centred squares then summed to an sd
///   of 10⁻¹⁵–10⁻¹³ for a constant generated quantity).
/// - Otherwise the corrected two-pass algorithm (Chan, Golub & LeVeque 1983, "Algorithms for
///   computing the sample variance", eq. 1.7), which subtracts the rounding error of the mean,
///   at a scale where the squared deviations neither underflow nor overflow
///   ([`scale_factor`]): draws near 1e-200 that differ get their true sd rather than 0.
///
/// Fewer than 2 values: sd NaN (mean NaN when empty); a NaN in `x` gives NaN; an infinite
/// value gives that infinite mean and sd NaN.
pub fn mean_sd(x: &[f64]) -> (f64, f64) {
    let s = x.len() as f64;
    if let Some(&first) = x.first()
        && first.is_finite()
        && x.iter().all(|&v| v == first)
    {
        return (first, if x.len() > 1 { 0.0 } else { f64::NAN });
    }
    let f = scale_factor(x.iter().fold(0.0_f64, |m, v| m.max(v.abs())));
    let mean = x.iter().map(|v| v * f).sum::<f64>() / s;
    if !mean.is_finite() {
        // an infinite draw: the mean is ±∞ (NaN for both signs or a NaN) and the sd undefined
        return (mean / f, f64::NAN);
    }
    let (sum, squares) = x.iter().fold((0.0, 0.0), |(a, b), &v| {
        let c = v * f - mean;
        (a + c, b + c * c)
    });
    let var = (squares - sum * sum / s) / (s - 1.0);
    // (a NaN stays NaN: `f64::max` would turn it into 0)
    let var = if var < 0.0 { 0.0 } else { var };
    ((mean + sum / s) / f, var.sqrt() / f)
}

/// Seeded test inputs shared by the diagnostics tests.
#[cfg(test)]
pub(crate) mod tests_support {
    use rand::SeedableRng;
    use rand_distr::{Distribution, StandardNormal};
    use rand_xoshiro::Xoshiro256PlusPlus;

    /// `m` chains of `n` iid N(0, 1) draws.
    pub fn iid_normal_chains(m: usize, n: usize, seed: u64) -> Vec<Vec<f64>> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        (0..m)
            .map(|_| (0..n).map(|_| StandardNormal.sample(&mut rng)).collect())
            .collect()
    }

    /// `m` stationary AR(1) chains x_t = φ·x_{t−1} + √(1 − φ²)·ε_t with N(0, 1) marginals.
    pub fn ar1_chains(m: usize, n: usize, phi: f64, seed: u64) -> Vec<Vec<f64>> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let scale = (1.0 - phi * phi).sqrt();
        (0..m)
            .map(|_| {
                let mut x: f64 = StandardNormal.sample(&mut rng);
                (0..n)
                    .map(|_| {
                        let e: f64 = StandardNormal.sample(&mut rng);
                        x = phi * x + scale * e;
                        x
                    })
                    .collect()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn draws_at_extreme_scales_get_the_unit_scale_diagnostics_scaled() {
        // the same AR(1) chains at unit scale and multiplied by 1e-200 (whose squared
        // deviations underflow to 0), 1e-310 (subnormal) and 1e250 (whose squares overflow)
        let c = tests_support::ar1_chains(4, 500, 0.5, 7);
        let unit = convergence(&as_slices(&c)).unwrap();
        let (_, unit_sd) = mean_sd(&c.concat());
        for scale in [1e-200, 1e-310, 1e250] {
            let s: Vec<Vec<f64>> = c
                .iter()
                .map(|ch| ch.iter().map(|v| v * scale).collect())
                .collect();
            let got = convergence(&as_slices(&s)).unwrap();
            // subnormal inputs keep about 14 significant bits at 1e-310
            let tol = if scale < 1e-300 { 1e-3 } else { 1e-12 };
            let near = |a: f64, b: f64| (a / b - 1.0).abs() < tol;
            assert!(near(got.rhat, unit.rhat), "{scale}: {got:?} vs {unit:?}");
            assert!(near(got.ess_bulk, unit.ess_bulk), "{scale}: {got:?}");
            assert!(near(got.ess_tail, unit.ess_tail), "{scale}: {got:?}");
            assert!(near(got.ess_mean, unit.ess_mean), "{scale}: {got:?}");
            assert!(
                near(got.mcse_mean, unit.mcse_mean * scale),
                "{scale}: {got:?}"
            );
            assert!(
                near(ess_mean(&as_slices(&s)).unwrap(), unit.ess_mean),
                "{scale}"
            );
            assert!(near(
                mcse_mean(&as_slices(&s)).unwrap(),
                unit.mcse_mean * scale
            ));
            let unit_mcse_sd = mcse_sd(&as_slices(&c)).unwrap();
            assert!(near(mcse_sd(&as_slices(&s)).unwrap(), unit_mcse_sd * scale));
            let (_, sd) = mean_sd(&s.concat());
            assert!(sd > 0.0 && near(sd, unit_sd * scale), "{scale}: sd {sd}");
        }
        // at unit scale nothing is rescaled
        assert_eq!(scale_factor(1e-3), 1.0);
        assert_eq!(scale_factor(0.0), 1.0);
        assert_eq!(scale_factor(f64::INFINITY), 1.0);
    }

    #[test]
    fn a_constant_column_has_sd_exactly_zero() {
        for c in [0.1, 1.0 / 3.0, 2.7, -1e-300, 1e300] {
            assert_eq!(mean_sd(&vec![c; 4000]), (c, 0.0), "{c}");
        }
        // the naive two-pass mean and sd of 4000 copies of 2.7 are off by rounding
        let x = vec![2.7; 4000];
        let naive = x.iter().sum::<f64>() / 4000.0;
        assert_ne!(naive, 2.7);
        // 1..8: mean 4.5, sd √6; one value or a NaN: sd NaN
        let (m, sd) = mean_sd(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
        assert_eq!(m, 4.5);
        assert!((sd - 6f64.sqrt()).abs() < 1e-15);
        assert!(mean_sd(&[3.0]).1.is_nan());
        assert!(mean_sd(&[1.0, f64::NAN]).1.is_nan());
        assert!(mean_sd(&[]).0.is_nan());
        let (m, sd) = mean_sd(&[1.0, f64::INFINITY, 2.0]);
        assert!(m == f64::INFINITY && sd.is_nan());
    }

    #[test]
    fn split_drops_middle_draw() {
        let x = array![[1.0, 2.0, 3.0, 4.0, 5.0]];
        let s = split_chains(x.view());
        assert_eq!(s, array![[1.0, 2.0], [4.0, 5.0]]);
    }

    #[test]
    fn ranks_average_ties() {
        assert_eq!(
            average_ranks(&[3.0, 1.0, 3.0, 2.0]),
            vec![3.5, 1.0, 3.5, 2.0]
        );
    }

    #[test]
    fn rank_normalize_is_symmetric() {
        let x = array![[1.0, 2.0], [3.0, 4.0]];
        let z = rank_normalize(x.view());
        // r = 1: Φ⁻¹(0.625/4.25) = −1.0491313979639711 (Python statistics.NormalDist)
        assert!(
            (z[[0, 0]] + 1.049_131_397_963_971).abs() < 1e-12,
            "{}",
            z[[0, 0]]
        );
        assert!((z[[0, 0]] + z[[1, 1]]).abs() < 1e-12);
        assert!((z[[0, 1]] + z[[1, 0]]).abs() < 1e-12);
    }

    #[test]
    fn normal_quantile_known_values() {
        assert!((std_normal_quantile(0.975) - 1.959_963_984_540_054).abs() < 1e-13);
        assert_eq!(std_normal_quantile(0.5), 0.0);
    }

    #[test]
    fn input_errors() {
        let a = [1.0, 2.0, 3.0, 4.0];
        let b = [1.0, 2.0, 3.0];
        assert_eq!(
            check_chains(&[&a, &b]).unwrap_err(),
            DiagnosticsError::UnequalChains {
                first: 4,
                chain: 2,
                len: 3
            }
        );
        assert_eq!(
            check_chains(&[&b]).unwrap_err(),
            DiagnosticsError::TooFewDraws { draws: 3, min: 4 }
        );
        assert_eq!(check_chains(&[]).unwrap_err(), DiagnosticsError::NoChains);
        // constant to rounding at any scale, but draws near 1e-200 that differ are not
        assert!(is_degenerate(
            check_chains(&[&[1e6, 1e6 + 1e-10, 1e6, 1e6]])
                .unwrap()
                .view()
        ));
        assert!(!is_degenerate(
            check_chains(&[&[1e-200, 2e-200, 3e-200, 4e-200]])
                .unwrap()
                .view()
        ));
        assert!(is_degenerate(check_chains(&[&[1.0; 4]]).unwrap().view()));
        assert!(is_degenerate(
            check_chains(&[&[1.0, f64::NAN, 2.0, 3.0]]).unwrap().view()
        ));
    }
}
