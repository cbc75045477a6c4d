//! The stationarity check of a large mean-field fit (d > [`super::stationarity::NEWTON_MAX_D`],
//! BNNs): a per-coordinate (diagonal) Newton step of q's mean with its Monte Carlo standard
//! error, O(S·d) in time and memory ([X], a design decision of bayesc; the identities are those
//! of [`super::stationarity`]).
//!
//! For a mean-field q = N(μ, diag σ²), with ε = (ζ − μ)/σ and w = σ ∘ ∇log p(ζ), the ELBO's
//! gradient in μ in q's whitened coordinates is ḡ = E_q[w] (Bonnet's theorem; Opper &
//! Archambeau 2009, eq. 9) and the diagonal of its negative Hessian is a_ii = −E_q[w_i ε_i]
//! (Stein's lemma). The joint regression of [`super::stationarity::newton_step_in`] needs S > 2d
//! draws and a d × d factorisation; here each coordinate is taken alone: the step ḡ_i / a_ii
//! (in sds of q) is the distance to the ELBO's optimum in μ_i with the other coordinates held,
//! ḡ_i / √a_ii in sds of the curvature's conditional Gaussian. It is a lower bound on the
//! joint distance in the sense that a mean off along a ridge of correlated coordinates can
//! show short diagonal steps (the d ≤ 50 joint step catches that); a long diagonal step is an
//! unfinished fit whatever the correlations.
//!
//! Noise: the draws come in antithetic pairs ζ = μ ± σ ∘ ε. The pair average of w cancels
//! every term of w that is odd in ε, in particular all of its linear response A ε to the
//! other coordinates, which for an independent-draw estimate adds a variance Σ_j a_ij² / S to
//! ḡ_i that in a BNN (strongly coupled weights) swamps the gradient; what remains is the even
//! (third-derivative) part of ∇log p. Where log p is quadratic, ḡ is exact from a single pair
//! (antithetic variates: Hammersley & Morton 1956; Owen 2013, "Monte Carlo theory, methods and
//! examples", §8.2). The standard error of each ḡ_i is that of its pair averages.
//!
//! Reproducible: the draws are made serially from the seed's stream, the gradients evaluated in
//! parallel (rayon, in order) and every sum taken serially, so the result does not depend on
//! the thread count.

use crate::inference::LogDensity;
use rayon::prelude::*;

/// Antithetic pairs of draws of q that the diagonal check evaluates (2 × this many gradients of
/// the full-data log density).
pub const DIAGONAL_PAIRS: usize = 250;

/// The floor on a_ii (in q's variances), as [`super::stationarity::CURVATURE_FLOOR`] for the
/// joint step: a coordinate along which log p is flat or curves upwards under q has its step
/// measured as if its curvature's Gaussian were √20 ≈ 4.5 times wider than q.
pub const DIAGONAL_CURVATURE_FLOOR: f64 = 0.05;

/// The per-coordinate Newton step of a mean-field q ([`diagonal_step`]), each field of length d.
#[derive(Clone, Debug, PartialEq)]
pub struct DiagonalStep {
    /// ḡ_i = E_q[σ_i ∂_i log p], the ELBO's gradient in μ_i in q's sds.
    pub gradient: Vec<f64>,
    /// a_ii = −E_q[w_i ε_i], the ELBO's curvature in μ_i in q's variances (1 at a mean-field
    /// optimum of the ELBO in σ).
    pub curvature: Vec<f64>,
    /// δ_i = ḡ_i / √max(a_ii, [`DIAGONAL_CURVATURE_FLOOR`]): the diagonal Newton step of μ_i in
    /// sds of the curvature's conditional Gaussian (the distance of μ_i from the ELBO's optimum
    /// along coordinate i).
    pub offset: Vec<f64>,
    /// The Monte Carlo standard error of each δ_i: that of ḡ_i over the same root (the
    /// curvature's error, which enters through a square root, is not counted).
    pub offset_se: Vec<f64>,
    /// The pairs whose gradients were all finite (the others are left out).
    pub pairs: usize,
}

impl DiagonalStep {
    /// The root mean square of δ over the coordinates, with the Monte Carlo noise removed:
    /// sqrt(max(0, mean_i(δ_i² − se_i²))) (E[δ̂²] = δ² + se² for an unbiased δ̂).
    pub fn rms_offset(&self) -> f64 {
        let d = self.offset.len().max(1) as f64;
        let ms = self
            .offset
            .iter()
            .zip(&self.offset_se)
            .map(|(o, s)| o * o - s * s)
            .sum::<f64>()
            / d;
        ms.max(0.0).sqrt()
    }

    /// The standard error of [`Self::rms_offset`]'s square under stationarity (δ_i = 0 with
    /// independent Gaussian errors: each δ̂_i² − se_i² has sd √2 se_i²), in the square's units.
    pub fn ms_noise(&self) -> f64 {
        let d = self.offset.len().max(1) as f64;
        (2.0 * self.offset_se.iter().map(|s| s.powi(4)).sum::<f64>()).sqrt() / d
    }

    /// The fraction of coordinates whose |δ_i| exceeds `bar` and `t` of its standard errors.
    pub fn fraction_beyond(&self, bar: f64, t: f64) -> f64 {
        let n = self
            .offset
            .iter()
            .zip(&self.offset_se)
            .filter(|(o, s)| o.abs() > bar && o.abs() > t * **s)
            .count();
        n as f64 / self.offset.len().max(1) as f64
    }
}

/// The diagonal Newton step of the module docs for a mean-field q with mean `mean` and sds `sd`
/// (length d) from `draws` of q (each length d; each is paired with its reflection 2μ − ζ);
/// `None` when fewer than half the pairs, or fewer than 10, have finite log densities and
/// gradients at both points.
pub fn diagonal_step(
    density: &(dyn LogDensity + Sync),
    draws: &[Vec<f64>],
    mean: &[f64],
    sd: &[f64],
) -> Option<DiagonalStep> {
    let d = mean.len();
    let grad = |z: &[f64]| -> Option<Vec<f64>> {
        let mut g = vec![0.0; d];
        match density.log_density_grad(z, &mut g) {
            Ok(v) if v.is_finite() && g.iter().all(|x| x.is_finite()) => Some(g),
            _ => None,
        }
    };
    // per pair: (ε, w(+ε), w(−ε)), in the order of `draws`
    let pairs: Vec<(Vec<f64>, Vec<f64>, Vec<f64>)> = draws
        .par_iter()
        .filter_map(|z| {
            let eps: Vec<f64> = (0..d).map(|i| (z[i] - mean[i]) / sd[i]).collect();
            let mirror: Vec<f64> = (0..d).map(|i| 2.0 * mean[i] - z[i]).collect();
            let (gp, gm) = rayon::join(|| grad(z), || grad(&mirror));
            let (gp, gm) = (gp?, gm?);
            let wp = (0..d).map(|i| gp[i] * sd[i]).collect();
            let wm = (0..d).map(|i| gm[i] * sd[i]).collect();
            Some((eps, wp, wm))
        })
        .collect();
    let k = pairs.len();
    if 2 * k < draws.len() || k < 10 {
        return None;
    }
    let n = k as f64;
    let (mut g, mut a, mut e2) = (vec![0.0; d], vec![0.0; d], vec![0.0; d]);
    for (eps, wp, wm) in &pairs {
        for i in 0..d {
            g[i] += 0.5 * (wp[i] + wm[i]) / n;
            a[i] -= 0.5 * (wp[i] - wm[i]) * eps[i];
            e2[i] += eps[i] * eps[i];
        }
    }
    // the pair averages' variance, in a second pass (exactly 0 for a quadratic log p)
    let mut var = vec![0.0; d];
    for (_, wp, wm) in &pairs {
        for i in 0..d {
            var[i] += (0.5 * (wp[i] + wm[i]) - g[i]).powi(2) / (n - 1.0);
        }
    }
    let mut offset = vec![0.0; d];
    let mut offset_se = vec![0.0; d];
    for i in 0..d {
        // the slope of the odd part of w_i on ε_i (through 0: both are odd), which unlike the
        // raw moment mean(w_i ε_i) does not carry the draws' error in mean(ε_i²)
        a[i] = if e2[i] > 0.0 { a[i] / e2[i] } else { 0.0 };
        let root = a[i].max(DIAGONAL_CURVATURE_FLOOR).sqrt();
        offset[i] = g[i] / root;
        offset_se[i] = (var[i] / n).sqrt() / root;
    }
    Some(DiagonalStep {
        gradient: g,
        curvature: a,
        offset,
        offset_se,
        pairs: k,
    })
}

/// The root mean square of the diagonal Newton steps ([`DiagonalStep::rms_offset`], in sds of
/// the curvature) above which a mean-field fit with d > [`super::stationarity::NEWTON_MAX_D`] is
/// not at the ELBO's optimum ([X]). Why the RMS and not the largest step: with thousands of
/// coordinates some steps exceed any bar by the noise of the draws and the heavy tail of a
/// BNN's coordinates, while the RMS is an average whose noise is known
/// ([`DiagonalStep::ms_noise`]). Why 0.15: where the offsets are the same size in every
/// direction of the curvature, the RMS diagonal step is the RMS distance from the optimum (the
/// whitened curvature has unit diagonal, so its eigenvalues average 1), and eight coordinates
/// with RMS 0.15 have their largest at about 0.27, the d ≤ 50 bar
/// [`super::stationarity::MEAN_OFFSET_MAX`] of 0.25. Measured on the diabetes BNN (d = 602,
/// M = 64, random start, 250 pairs): QBVI (seeds 1–3: 0.03, 0.10, 0.05), QNVB (0.04, 0.05,
/// 0.04) and QBVI on the full data (0.07) pass, and moving their means by a fraction of the step
/// gains at most 0.4 nats (independent draws); BBB (0.20–0.30 at step sizes 0.003–0.03 and
/// M = 64, 128), IVON (0.18–0.22) and QBVI stopped at 250 iterations (0.13, a step still gaining
/// 3.4 nats) are off, and a quarter to a half of the step raises their ELBO by 3.4–11 nats. On
/// digits (d = 3760) QBVI at seeds 1–3 is at 0.148, 0.11 and 0.10: seed 1 is near the bar.
pub const DIAGONAL_RMS_MAX: f64 = 0.15;

/// [`DIAGONAL_RMS_MAX`] for VOGN, Vadam and variational Laplace, whose σ is not the ELBO's and
/// moves the optimum of μ, scaled as [`super::stationarity::MEAN_OFFSET_MAX_OTHER`] (0.4) is
/// from 0.25 ([X]).
pub const DIAGONAL_RMS_MAX_OTHER: f64 = 0.25;

/// The verdict of the diagonal check on `draws` of q (each paired with its reflection; the
/// gradients are those of `density`, the full-data log density for a minibatch fit): `None`
/// when the noise-corrected RMS step is within `bar` ([`DIAGONAL_RMS_MAX`] or
/// [`DIAGONAL_RMS_MAX_OTHER`]) or not 4 of its standard errors above zero, or the check could
/// not be made (too few finite gradients).
pub fn diagonal_off(
    density: &(dyn LogDensity + Sync),
    draws: &[Vec<f64>],
    mean: &[f64],
    sd: &[f64],
    bar: f64,
) -> Option<super::stationarity::OffOptimum> {
    let step = diagonal_step(density, draws, mean, sd)?;
    let rms = step.rms_offset();
    if rms <= bar || rms * rms <= 4.0 * step.ms_noise() {
        return None;
    }
    // the coordinate named: the longest step at 4 standard errors
    let (coordinate, sds) = step
        .offset
        .iter()
        .zip(&step.offset_se)
        .enumerate()
        .filter(|(_, (o, s))| o.abs() > 4.0 * **s)
        .map(|(j, (o, _))| (j, *o))
        .max_by(|a, b| a.1.abs().total_cmp(&b.1.abs()))?;
    Some(super::stationarity::OffOptimum::Diagonal {
        coordinate,
        sds,
        rms,
        beyond: step.fraction_beyond(super::stationarity::MEAN_OFFSET_MAX, 4.0),
        gradients: 2 * step.pairs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inference::DensityError;

    /// log N(ζ; 0, P⁻¹) up to a constant, P tridiagonal with unit diagonal and `rho` beside it:
    /// the mean-field optimum is μ = 0, σ = 1, and at a mean μ the whitened gradient is −Pμ
    /// with a_ii = 1, so the diagonal step is δ = −Pμ exactly (antithetic pairs make a quadratic
    /// log p exact).
    struct Chain(usize, f64);

    impl LogDensity for Chain {
        fn dim(&self) -> usize {
            self.0
        }
        fn log_density(&self, z: &[f64]) -> Result<f64, DensityError> {
            let mut g = vec![0.0; self.0];
            self.log_density_grad(z, &mut g)
        }
        fn log_density_grad(&self, z: &[f64], g: &mut [f64]) -> Result<f64, DensityError> {
            let n = self.0;
            for i in 0..n {
                let left = if i > 0 { z[i - 1] } else { 0.0 };
                let right = if i + 1 < n { z[i + 1] } else { 0.0 };
                g[i] = -(z[i] + self.1 * (left + right));
            }
            Ok(0.5 * z.iter().zip(g.iter()).map(|(x, gi)| x * gi).sum::<f64>())
        }
    }

    /// Independent coordinates with log p_i = −x²/2 − k x⁴/4: under q = N(μ, σ²) the ELBO's
    /// gradient in μ is E[−x − k x³] = −μ − k(μ³ + 3μσ²) and its curvature
    /// E[1 + 3k x²] = 1 + 3k(μ² + σ²), so δ_i = σ ḡ_i / √(σ² (1 + 3k(μ² + σ²))) is known, and
    /// the draws' noise does not cancel (the cubic's even part).
    struct Quartic(usize, f64);

    impl LogDensity for Quartic {
        fn dim(&self) -> usize {
            self.0
        }
        fn log_density(&self, z: &[f64]) -> Result<f64, DensityError> {
            Ok(z.iter()
                .map(|x| -0.5 * x * x - 0.25 * self.1 * x.powi(4))
                .sum())
        }
        fn log_density_grad(&self, z: &[f64], g: &mut [f64]) -> Result<f64, DensityError> {
            for (gi, x) in g.iter_mut().zip(z) {
                *gi = -x - self.1 * x.powi(3);
            }
            self.log_density(z)
        }
    }

    fn draws(mean: &[f64], sd: &[f64], n: usize, seed: u64) -> Vec<Vec<f64>> {
        crate::fit::stationarity::tests::gaussian_draws(mean, sd, n, seed)
    }

    #[test]
    fn an_offset_mean_of_a_correlated_gaussian_at_d_500_is_recovered_exactly() {
        let d = 500;
        let target = Chain(d, -0.45);
        let sd = vec![1.0; d];
        // every coordinate 0.3 off, alternating in sign: δ_i = −(μ_i − 0.45(μ_{i−1} + μ_{i+1}))
        // = −0.3 (−1)^i × 1.9 inside the chain
        let mean: Vec<f64> = (0..d)
            .map(|i| if i % 2 == 0 { 0.3 } else { -0.3 })
            .collect();
        let q = draws(&mean, &sd, DIAGONAL_PAIRS, 1);
        let step = diagonal_step(&target, &q, &mean, &sd).unwrap();
        assert_eq!(step.pairs, DIAGONAL_PAIRS);
        // the gradient is exact (no standard error); the curvature, 1, carries the noise of
        // the neighbours' terms −P_ij ε_j ε_i (sd 0.45 √2 / √250 = 0.04), and δ its square root
        for (i, m) in mean.iter().enumerate().take(d - 1).skip(1) {
            assert!((step.gradient[i] + 1.9 * m).abs() < 1e-9, "{i}");
            assert!(step.offset_se[i] < 1e-9, "{i}");
            assert!((step.curvature[i] - 1.0).abs() < 0.2, "{i}");
            assert!((step.offset[i] / (-1.9 * m) - 1.0).abs() < 0.1, "{i}");
        }
        let abar = step.curvature.iter().sum::<f64>() / d as f64;
        assert!((abar - 1.0).abs() < 0.01, "{abar}");
        // the RMS over the 500 (two ends at 0.435 rather than 0.57)
        let expected = ((498.0 * 0.57f64.powi(2) + 2.0 * 0.435f64.powi(2)) / 500.0).sqrt();
        assert!(
            (step.rms_offset() - expected).abs() < 0.01,
            "{}",
            step.rms_offset()
        );
        match diagonal_off(&target, &q, &mean, &sd, DIAGONAL_RMS_MAX) {
            Some(super::super::stationarity::OffOptimum::Diagonal {
                rms,
                beyond,
                gradients,
                ..
            }) => {
                assert!((rms - expected).abs() < 0.01, "{rms}");
                assert_eq!(beyond, 1.0);
                assert_eq!(gradients, 2 * DIAGONAL_PAIRS);
            }
            other => panic!("expected the diagonal verdict, got {other:?}"),
        }
        // at the optimum: nothing
        let zero = vec![0.0; d];
        let at = draws(&zero, &sd, DIAGONAL_PAIRS, 2);
        assert_eq!(
            diagonal_off(&target, &at, &zero, &sd, DIAGONAL_RMS_MAX),
            None
        );
        // the limitation of the module docs: the same 0.3 off in every coordinate along the
        // chain's ridge (P μ = 0.3 × 0.1 inside) shows steps of 0.03 and passes
        let ridge = vec![0.3; d];
        let q = draws(&ridge, &sd, DIAGONAL_PAIRS, 3);
        let step = diagonal_step(&target, &q, &ridge, &sd).unwrap();
        assert!((step.gradient[d / 2] + 0.03).abs() < 1e-9);
        assert!(step.rms_offset() < 0.04, "{}", step.rms_offset());
        assert_eq!(
            diagonal_off(&target, &q, &ridge, &sd, DIAGONAL_RMS_MAX),
            None
        );
    }

    #[test]
    fn the_step_of_a_non_gaussian_target_is_recovered_within_its_standard_error() {
        let (d, k) = (500, 0.3);
        let target = Quartic(d, k);
        // σ = 0.8 everywhere; the first half of the means offset by 0.4, the rest at 0
        let sd = vec![0.8; d];
        let mean: Vec<f64> = (0..d).map(|i| if i < d / 2 { 0.4 } else { 0.0 }).collect();
        let exact = |m: f64, s: f64| {
            let g = -m - k * (m.powi(3) + 3.0 * m * s * s);
            let a = s * s * (1.0 + 3.0 * k * (m * m + s * s));
            s * g / a.sqrt()
        };
        let q = draws(&mean, &sd, DIAGONAL_PAIRS, 4);
        let step = diagonal_step(&target, &q, &mean, &sd).unwrap();
        // the standardised errors of the offset half: mean ≈ 0 and sd at most 1 (the standard
        // error counts the gradient's noise; the curvature's, here correlated with it through
        // the same ε², partly cancels in the ratio: sd 0.8 at this seed)
        let h = d / 2;
        let z: Vec<f64> = (0..h)
            .map(|i| (step.offset[i] - exact(mean[i], sd[i])) / step.offset_se[i])
            .collect();
        let zbar = z.iter().sum::<f64>() / h as f64;
        let zsd = (z.iter().map(|x| (x - zbar).powi(2)).sum::<f64>() / (h - 1) as f64).sqrt();
        assert!(zbar.abs() < 0.2, "{zbar}");
        assert!(zsd > 0.6 && zsd < 1.1, "{zsd}");
        assert!(z.iter().all(|x| x.abs() < 4.5), "{z:?}");
        // the offset half: ḡ = −0.4 − 0.3 (0.064 + 0.768) = −0.6496, a = 0.64 × (1 + 0.9 × 0.8)
        // = 1.1008, δ = 0.8 ḡ / √a
        let half = exact(0.4, 0.8);
        assert!((half + 0.4953).abs() < 1e-4, "{half}");
        let expected = (0.5 * half * half).sqrt();
        assert!(
            (step.rms_offset() - expected).abs() < 0.02,
            "{} against {expected}",
            step.rms_offset()
        );
        // the half at the optimum in μ: log p is even there, so the pair averages of its
        // gradient vanish exactly (σ is not the ELBO's optimum, which does not matter to μ)
        assert!((h..d).all(|i| step.offset[i] == 0.0 && step.offset_se[i] == 0.0));
        let zero = vec![0.0; d];
        let at = draws(&zero, &sd, DIAGONAL_PAIRS, 5);
        let step = diagonal_step(&target, &at, &zero, &sd).unwrap();
        assert_eq!(step.rms_offset(), 0.0);
        assert_eq!(
            diagonal_off(&target, &at, &zero, &sd, DIAGONAL_RMS_MAX),
            None
        );
    }

    #[test]
    fn the_result_does_not_depend_on_the_thread_count() {
        let d = 300;
        let target = Quartic(d, 0.3);
        let sd = vec![0.8; d];
        let mean: Vec<f64> = (0..d).map(|i| 0.01 * i as f64).collect();
        let q = draws(&mean, &sd, 100, 6);
        let run = |threads: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| diagonal_step(&target, &q, &mean, &sd).unwrap())
        };
        assert_eq!(run(1), run(3));
    }
}
