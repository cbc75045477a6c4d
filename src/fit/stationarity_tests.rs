//! Tests of [`super`] (the stationarity check and its Newton step), split from
//! `stationarity.rs` to keep it under 1000 lines.

use super::*;
use crate::inference::DensityError;
use crate::inference::rng::stream;
use rand_distr::{Distribution, StandardNormal};

/// log N(ζ; 0, diag(s²)) up to a constant: the ELBO optimum of either Gaussian family is
/// q = the target itself.
struct Normal(Vec<f64>);

impl LogDensity for Normal {
    fn dim(&self) -> usize {
        self.0.len()
    }
    fn log_density(&self, z: &[f64]) -> Result<f64, DensityError> {
        Ok(z.iter()
            .zip(&self.0)
            .map(|(x, s)| -0.5 * (x / s).powi(2))
            .sum())
    }
    fn log_density_grad(&self, z: &[f64], g: &mut [f64]) -> Result<f64, DensityError> {
        for ((gi, x), s) in g.iter_mut().zip(z).zip(&self.0) {
            *gi = -x / (s * s);
        }
        self.log_density(z)
    }
}

fn off_optimum(
    density: &(dyn LogDensity + Sync),
    draws: &[Vec<f64>],
    mean: &[f64],
    sd: &[f64],
    when: Conditions,
) -> Option<OffOptimum> {
    off_optimum_in(density, draws, mean, sd, None, when).0
}

fn newton_step(pairs: &[(&Vec<f64>, Vec<f64>)], mean: &[f64], sd: &[f64]) -> Option<NewtonStep> {
    newton_step_in(pairs, mean, &Whitening::Diagonal(sd))
}

fn draws(mean: &[f64], sd: &[f64], n: usize) -> Vec<Vec<f64>> {
    gaussian_draws(mean, sd, n, 7)
}

/// `n` independent draws of N(mean, diag sd²) from stream 0 of `seed` (the tests' q).
pub(in crate::fit) fn gaussian_draws(
    mean: &[f64],
    sd: &[f64],
    n: usize,
    seed: u64,
) -> Vec<Vec<f64>> {
    let mut rng = stream(seed, 0);
    (0..n)
        .map(|_| {
            mean.iter()
                .zip(sd)
                .map(|(m, s)| {
                    let e: f64 = StandardNormal.sample(&mut rng);
                    m + s * e
                })
                .collect()
        })
        .collect()
}

#[test]
fn the_optimum_passes_and_a_shifted_or_widened_q_is_named() {
    let target = Normal(vec![1.0, 0.1, 10.0]);
    let sd = [1.0, 0.1, 10.0];
    // q = target: stationary
    let at = draws(&[0.0; 3], &sd, STATIONARITY_DRAWS);
    let all = Conditions {
        scale: true,
        joint: true,
        offset_max: MEAN_OFFSET_MAX,
    };
    assert_eq!(off_optimum(&target, &at, &[0.0; 3], &sd, all), None);
    // the mean of coordinate 1 shifted by 3 sds: the Newton step is 3 sds back
    let mean = [0.0, 0.3, 0.0];
    let shifted = draws(&mean, &sd, STATIONARITY_DRAWS);
    match off_optimum(&target, &shifted, &mean, &sd, all) {
        Some(OffOptimum::Mean {
            coordinate, sds, ..
        }) => {
            assert_eq!(coordinate, 1);
            assert!((sds - 3.0).abs() < 0.5, "{sds}");
        }
        other => panic!("expected the mean of coordinate 1, got {other:?}"),
    }
    // a shift of 1 sd is within the one-coordinate bar, but the joint check measures it
    // (the target is quadratic, so exactly)
    let mean = [1.0, 0.0, 0.0];
    let near = draws(&mean, &sd, STATIONARITY_DRAWS);
    let coordinates = Conditions {
        joint: false,
        ..all
    };
    assert_eq!(off_optimum(&target, &near, &mean, &sd, coordinates), None);
    match off_optimum(&target, &near, &mean, &sd, all) {
        Some(OffOptimum::Offset { coordinate, sds }) => {
            assert_eq!(coordinate, 0);
            assert!((sds - 1.0).abs() < 1e-9, "{sds}");
        }
        other => panic!("expected the offset of coordinate 0, got {other:?}"),
    }
    // coordinate 2's sd 3× too wide: −c = 9 (a variance 9 times the inverse curvature);
    // not reported when the method's fixed point is not the ELBO's
    let wide = [1.0, 0.1, 30.0];
    let widened = draws(&[0.0; 3], &wide, STATIONARITY_DRAWS);
    match off_optimum(&target, &widened, &[0.0; 3], &wide, all) {
        Some(OffOptimum::Scale { coordinate, ratio }) => {
            assert_eq!(coordinate, 2);
            assert!((ratio - 9.0).abs() < 2.0, "{ratio}");
        }
        other => panic!("expected the scale of coordinate 2, got {other:?}"),
    }
    assert_eq!(
        off_optimum(
            &target,
            &widened,
            &[0.0; 3],
            &wide,
            Conditions {
                scale: false,
                joint: true,
                offset_max: MEAN_OFFSET_MAX_OTHER,
            }
        ),
        None
    );
}

/// log N(ζ; 0, R) up to a constant, R the 2 × 2 correlation matrix with ρ.
struct Ridge(f64);

impl LogDensity for Ridge {
    fn dim(&self) -> usize {
        2
    }
    fn log_density(&self, z: &[f64]) -> Result<f64, DensityError> {
        let r = self.0;
        Ok(-0.5 * (z[0] * z[0] - 2.0 * r * z[0] * z[1] + z[1] * z[1]) / (1.0 - r * r))
    }
    fn log_density_grad(&self, z: &[f64], g: &mut [f64]) -> Result<f64, DensityError> {
        let r = self.0;
        g[0] = -(z[0] - r * z[1]) / (1.0 - r * r);
        g[1] = -(z[1] - r * z[0]) / (1.0 - r * r);
        self.log_density(z)
    }
}

#[test]
fn a_mean_off_along_a_ridge_is_caught_by_the_joint_step() {
    // ρ = 0.95: the mean-field optimum has σ = sqrt(1 − ρ²) = 0.312 in each coordinate.
    // At μ = (3, 3) each coordinate's own Newton step is 3σ/(1 + ρ) = 0.48 sds of q, but
    // the joint step back to 0 gains ½ μᵀR⁻¹μ = 9/(1 + ρ) = 4.6 nats.
    let target = Ridge(0.95);
    let s = (1.0f64 - 0.95 * 0.95).sqrt();
    let sd = [s, s];
    let mean = [3.0, 3.0];
    let q = draws(&mean, &sd, STATIONARITY_DRAWS);
    let only_coordinates = Conditions {
        scale: true,
        joint: false,
        offset_max: MEAN_OFFSET_MAX,
    };
    assert_eq!(off_optimum(&target, &q, &mean, &sd, only_coordinates), None);
    let joint = Conditions {
        scale: true,
        joint: true,
        offset_max: MEAN_OFFSET_MAX,
    };
    match off_optimum(&target, &q, &mean, &sd, joint) {
        Some(OffOptimum::Joint { gain, sds, .. }) => {
            assert!((gain - 9.0 / 1.95).abs() < 1.0, "{gain}");
            // the step moves each coordinate back by 3 / σ = 9.6 sds of q
            assert!((sds - 3.0 / s).abs() < 2.0, "{sds}");
        }
        other => panic!("expected the joint step, got {other:?}"),
    }
    // at the optimum the joint gain is noise
    let at = draws(&[0.0, 0.0], &sd, STATIONARITY_DRAWS);
    assert_eq!(off_optimum(&target, &at, &[0.0, 0.0], &sd, joint), None);
}

#[test]
fn a_mean_a_fraction_of_a_posterior_sd_off_along_a_ridge_is_measured_exactly() {
    // ρ = 0.9: σ = sqrt(1 − ρ²) = 0.436 under the mean-field optimum, posterior sds 1. At
    // μ = (0.4, 0.4) the joint step gains ½ μᵀR⁻¹μ = 0.16 / 1.9 = 0.084 nats, but moves each
    // coordinate 0.4 posterior sds; the target is quadratic, so the regression estimate of
    // newton_step is exact whatever the draws.
    let target = Ridge(0.9);
    let s = (1.0f64 - 0.81).sqrt();
    let sd = [s, s];
    let when = Conditions {
        scale: true,
        joint: true,
        offset_max: MEAN_OFFSET_MAX,
    };
    let mean = [0.4, 0.4];
    let q = draws(&mean, &sd, STATIONARITY_DRAWS);
    match off_optimum(&target, &q, &mean, &sd, when) {
        Some(OffOptimum::Offset { sds, .. }) => assert!((sds - 0.4).abs() < 1e-9, "{sds}"),
        other => panic!("expected the offset, got {other:?}"),
    }
    let pairs = gradient_pairs(&target, &q);
    let step = newton_step(&pairs, &mean, &sd).unwrap();
    assert!((step.gain - 0.16 / 1.9).abs() < 1e-9, "{}", step.gain);
    for (x, o) in step.step.iter().zip(&step.offset) {
        assert!((x + 0.4 / s).abs() < 1e-9, "{x}");
        assert!((o + 0.4).abs() < 1e-9, "{o}");
    }
    // a fifth of a posterior sd passes
    let mean = [0.2, 0.2];
    let q = draws(&mean, &sd, STATIONARITY_DRAWS);
    assert_eq!(off_optimum(&target, &q, &mean, &sd, when), None);
}

#[test]
fn a_full_covariance_q_is_whitened_by_its_precision_factor() {
    // q = N(μ, R) on the ρ = 0.9 ridge, the target's own covariance, at μ = (0.4, 0.3):
    // the Newton step is exactly −μ (the target is quadratic) and, with posterior sds 1,
    // so is the offset; q's marginal sds are 1, so `step` is −μ too. P = R⁻¹ = L Lᵀ.
    let r = 0.9f64;
    let (p11, p12) = (1.0 / (1.0 - r * r), -r / (1.0 - r * r));
    let l11 = p11.sqrt();
    let l21 = p12 / l11;
    let l22 = (p11 - l21 * l21).sqrt();
    let l = [l11, 0.0, l21, l22];
    let mean = [0.4, 0.3];
    // draws of N(μ, R): ζ = μ + L⁻ᵀ ε
    let eps = draws(&[0.0, 0.0], &[1.0, 1.0], STATIONARITY_DRAWS);
    let q: Vec<Vec<f64>> = eps
        .iter()
        .map(|e| {
            let x1 = e[1] / l22;
            let x0 = (e[0] - l21 * x1) / l11;
            vec![mean[0] + x0, mean[1] + x1]
        })
        .collect();
    let target = Ridge(r);
    let pairs = gradient_pairs(&target, &q);
    let step = newton_step_in(&pairs, &mean, &Whitening::Full(&l)).unwrap();
    for j in 0..2 {
        assert!((step.delta[j] + mean[j]).abs() < 1e-9, "{:?}", step.delta);
        assert!((step.offset[j] + mean[j]).abs() < 1e-9, "{:?}", step.offset);
        assert!(
            (step.curvature_sd[j] - 1.0).abs() < 1e-9,
            "{:?}",
            step.curvature_sd
        );
        assert!((step.step[j] + mean[j]).abs() < 1e-9, "{:?}", step.step);
    }
    // the check sees the 0.4 offset through the factor (each coordinate's own step,
    // ḡ_j σ_j / (−c_j) = 0.68 and 0.32 sds of q, passes)
    let when = Conditions {
        scale: true,
        joint: true,
        offset_max: REFINED_OFFSET_MAX,
    };
    let sd = [1.0, 1.0];
    match off_optimum_in(&target, &q, &mean, &sd, Some(&l), when) {
        (Some(OffOptimum::Offset { coordinate, sds }), Some((j, x))) => {
            assert_eq!((coordinate, j), (0, 0));
            assert!(
                (sds - 0.4).abs() < 1e-9 && (x - 0.4).abs() < 1e-9,
                "{sds} {x}"
            );
        }
        other => panic!("expected the offset of coordinate 0, got {other:?}"),
    }
}

#[test]
fn the_epoch_spread_is_the_largest_sd_of_the_epoch_means_in_sds_of_q() {
    let means = vec![vec![0.0, 1.0], vec![0.0, 3.0], vec![0.0, 2.0]];
    // coordinate 1: sd of (1, 3, 2) = 1, over σ = 0.5
    let s = epoch_spread(&means, &[1.0, 0.5]).unwrap();
    assert!((s - 2.0).abs() < 1e-12, "{s}");
    assert_eq!(epoch_spread(&means[..2], &[1.0, 0.5]), None);
    assert_eq!(widest_spread(&means, &[1.0, 0.5]).map(|(j, _)| j), Some(1));
}

#[test]
fn the_curvature_diagonal_is_exact_on_a_quadratic_target() {
    // ρ = 0.9 ridge, q with sds 0.3 and 0.6 at μ = (0.2, −0.1): Â_jj = σ_j² P_jj with
    // P_jj = 1/(1 − ρ²), exactly (w is linear in ε), and its standard error is 0
    let target = Ridge(0.9);
    let (sd, mean) = ([0.3, 0.6], [0.2, -0.1]);
    let q = draws(&mean, &sd, STATIONARITY_DRAWS);
    let pairs = gradient_pairs(&target, &q);
    let step = newton_step(&pairs, &mean, &sd).unwrap();
    for j in 0..2 {
        let exact = sd[j] * sd[j] / (1.0 - 0.81);
        assert!(
            (step.curvature_diag[j] - exact).abs() < 1e-9,
            "{:?}",
            step.curvature_diag
        );
        assert!(
            step.curvature_diag_se[j] < 1e-9,
            "{:?}",
            step.curvature_diag_se
        );
    }
}
