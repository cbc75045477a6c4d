//! Finite-difference Hessian and Laplace approximation on closed-form targets: a correlated
//! Gaussian (exact covariance) and logistic-regression standard errors against the analytic
//! inverse Fisher information.

mod qnvb_common;

use bayesc::inference::hessian::hessian;
use bayesc::inference::laplace::{LaplaceError, LaplaceSettings, laplace};
use bayesc::inference::optimize::OptimizeSettings;
use bayesc::inference::rng::stream;
use bayesc::inference::{DensityError, LogDensity};
use qnvb_common::{Gaussian, Logistic, inverse, newton_mode};

fn tight() -> LaplaceSettings {
    LaplaceSettings {
        optimize: OptimizeSettings {
            tol_obj: 0.0,
            tol_rel_obj: 0.0,
            tol_rel_grad: 0.0,
            tol_param: 0.0,
            tol_grad: 1e-9,
            ..OptimizeSettings::default()
        },
    }
}

/// A 3-d Gaussian with covariance Σ = [[2, 0.6, -0.3], [0.6, 1, 0.2], [-0.3, 0.2, 0.5]].
fn correlated3() -> (Gaussian, Vec<f64>) {
    let cov = vec![2.0, 0.6, -0.3, 0.6, 1.0, 0.2, -0.3, 0.2, 0.5];
    let g = Gaussian {
        mean: vec![1.0, -1.0, 0.5],
        precision: inverse(&cov, 3),
    };
    (g, cov)
}

#[test]
fn hessian_of_gaussian_is_minus_precision() {
    let (g, _) = correlated3();
    let h = hessian(&g, &[0.3, 2.0, -4.0]).unwrap();
    for (a, b) in h.iter().zip(&g.precision) {
        assert!((a + b).abs() < 1e-8, "{h:?}");
    }
}

#[test]
fn gaussian_covariance_exact() {
    let (g, cov) = correlated3();
    let fit = laplace(&g, &[0.0; 3], &tight()).unwrap();
    for (a, b) in fit.mode.iter().zip(&g.mean) {
        assert!((a - b).abs() < 1e-9);
    }
    for (a, b) in fit.covariance.iter().zip(&cov) {
        assert!((a - b).abs() < 1e-6, "{:?}", fit.covariance);
    }
    assert!(fit.log_density_at_mode.abs() < 1e-15);
    // draws reproduce Σ: Monte Carlo check of the sample covariance (n = 20000, sd ≈ 0.02)
    let draws = fit.sample(20000, &mut stream(3, 1));
    let n = draws.len() as f64;
    let m0 = draws.iter().map(|z| z[0]).sum::<f64>() / n;
    let m1 = draws.iter().map(|z| z[1]).sum::<f64>() / n;
    let c01 = draws.iter().map(|z| (z[0] - m0) * (z[1] - m1)).sum::<f64>() / n;
    assert!(
        (m0 - 1.0).abs() < 0.05 && (c01 - 0.6).abs() < 0.05,
        "{m0} {c01}"
    );
    // log_q is the exact Gaussian density: log q(mode) = −½ log det(2πΣ)
    let det: f64 = 2.0 * (0.5 - 0.04) - 0.6 * (0.3 + 0.06) + (-0.3) * (0.12 + 0.3);
    let want = -0.5 * (det.ln() + 3.0 * (2.0 * std::f64::consts::PI).ln());
    assert!((fit.log_q(&g.mean) - want).abs() < 1e-9);
}

#[test]
fn logistic_standard_errors_match_inverse_fisher() {
    let model = Logistic::simulate(1000, 11, None);
    let mle = newton_mode(&model);
    let inv = inverse(&model.information(&mle), 4);
    let fit = laplace(&model, &[0.0; 4], &tight()).unwrap();
    for (i, se) in fit.standard_errors().iter().enumerate() {
        let want = inv[i * 4 + i].sqrt();
        assert!((se - want).abs() <= 1e-4 * want, "{i}: {se} vs {want}");
    }
}

/// L(x, y) = −x²/2: flat in y, so the posterior is improper and −H is singular.
struct Flat;

impl LogDensity for Flat {
    fn dim(&self) -> usize {
        2
    }
    fn log_density(&self, t: &[f64]) -> Result<f64, DensityError> {
        Ok(-0.5 * t[0] * t[0])
    }
    fn log_density_grad(&self, t: &[f64], g: &mut [f64]) -> Result<f64, DensityError> {
        g[0] = -t[0];
        g[1] = 0.0;
        Ok(-0.5 * t[0] * t[0])
    }
}

#[test]
fn improper_direction_is_an_error() {
    let err = laplace(&Flat, &[1.0, 1.0], &LaplaceSettings::default()).unwrap_err();
    assert_eq!(err, LaplaceError::NotMaximum);
    assert!(err.to_string().contains("improper"));
}
