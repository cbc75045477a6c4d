//! L-BFGS mode finding on closed-form targets: Rosenbrock (2-d and 4-d), a Gaussian, and a
//! logistic-regression MLE checked against Newton's method.

mod qnvb_common;

use bayesc::inference::optimize::{OptimizeError, OptimizeSettings, optimize};
use bayesc::inference::{DensityError, LogDensity};
use qnvb_common::{Gaussian, Logistic, newton_mode};
use std::sync::atomic::{AtomicUsize, Ordering};

/// L(ζ) = −Σ_i [100(ζ_{i+1} − ζ_i²)² + (1 − ζ_i)²], maximum 0 at (1, …, 1).
struct Rosenbrock(usize);

impl LogDensity for Rosenbrock {
    fn dim(&self) -> usize {
        self.0
    }
    fn log_density(&self, x: &[f64]) -> Result<f64, DensityError> {
        let mut g = vec![0.0; self.0];
        self.log_density_grad(x, &mut g)
    }
    fn log_density_grad(&self, x: &[f64], g: &mut [f64]) -> Result<f64, DensityError> {
        g.iter_mut().for_each(|v| *v = 0.0);
        let mut f = 0.0;
        for i in 0..self.0 - 1 {
            let a = x[i + 1] - x[i] * x[i];
            let b = 1.0 - x[i];
            f += 100.0 * a * a + b * b;
            g[i] += -400.0 * a * x[i] - 2.0 * b;
            g[i + 1] += 200.0 * a;
        }
        g.iter_mut().for_each(|v| *v = -*v);
        Ok(-f)
    }
}

/// Tight tolerances: only the gradient-norm test at 1e-10 may stop the run.
fn tight() -> OptimizeSettings {
    OptimizeSettings {
        tol_obj: 0.0,
        tol_rel_obj: 0.0,
        tol_rel_grad: 0.0,
        tol_param: 0.0,
        tol_grad: 1e-10,
        ..OptimizeSettings::default()
    }
}

#[test]
fn rosenbrock_2d_and_4d() {
    for (d, init) in [(2, vec![-1.2, 1.0]), (4, vec![-1.2, 1.0, -1.2, 1.0])] {
        let r = optimize(&Rosenbrock(d), &init, &tight()).unwrap();
        assert!(r.converged, "{d}: {}", r.message);
        for x in &r.point {
            assert!((x - 1.0).abs() < 1e-8, "{d}: {:?} ({})", r.point, r.message);
        }
        assert!(r.log_density > -1e-15);
        assert!(r.iterations < 200, "{}", r.iterations);
    }
}

#[test]
fn rosenbrock_default_settings_converge() {
    let r = optimize(&Rosenbrock(2), &[-1.2, 1.0], &OptimizeSettings::default()).unwrap();
    assert!(r.converged, "{}", r.message);
    for x in &r.point {
        assert!((x - 1.0).abs() < 1e-4, "{:?} {}", r.point, r.message);
    }
}

#[test]
fn gaussian_exact_mode() {
    let mut g = Gaussian::correlated2(0.9);
    g.mean = vec![3.0, -2.0];
    let r = optimize(&g, &[0.0, 0.0], &tight()).unwrap();
    assert!(r.converged, "{}", r.message);
    assert!(
        (r.point[0] - 3.0).abs() < 1e-9 && (r.point[1] + 2.0).abs() < 1e-9,
        "{:?}",
        r.point
    );
    // Stan's default tolerances stop earlier (here on |Δf| < 1e-12 near f = 0)
    let r = optimize(&g, &[0.0, 0.0], &OptimizeSettings::default()).unwrap();
    assert!(r.converged, "{}", r.message);
    assert!(
        (r.point[0] - 3.0).abs() < 1e-5 && (r.point[1] + 2.0).abs() < 1e-5,
        "{:?}",
        r.point
    );
    // started at the mode: converged at iteration 0
    let r0 = optimize(&g, &[3.0, -2.0], &OptimizeSettings::default()).unwrap();
    assert_eq!((r0.iterations, r0.converged), (0, true));
}

#[test]
fn logistic_mle_matches_newton() {
    let model = Logistic::simulate(1000, 11, None);
    let newton = newton_mode(&model);
    // gradient of a 1000-term sum: rounding floor ~1e-12, so the 1e-8 gradient test
    let settings = OptimizeSettings {
        tol_grad: 1e-8,
        ..tight()
    };
    let r = optimize(&model, &[0.0; 4], &settings).unwrap();
    assert!(r.converged, "{}", r.message);
    for (a, b) in r.point.iter().zip(&newton) {
        assert!(
            (a - b).abs() <= 1e-6 * b.abs(),
            "{:?} vs {:?} ({})",
            r.point,
            newton,
            r.message
        );
    }
    // Stan's defaults stop on the relative-gradient test (gᵀHg/|f| < 2.2e-9), ~1e-4 relative here
    let r = optimize(&model, &[0.0; 4], &OptimizeSettings::default()).unwrap();
    assert!(r.converged, "{}", r.message);
    for (a, b) in r.point.iter().zip(&newton) {
        assert!(
            (a - b).abs() <= 2e-4 * b.abs(),
            "{:?} vs {:?} ({})",
            r.point,
            newton,
            r.message
        );
    }
}

#[test]
fn input_errors() {
    let g = Gaussian::diagonal(vec![0.0, 0.0], &[1.0, 1.0]);
    assert!(matches!(
        optimize(&g, &[0.0], &OptimizeSettings::default()),
        Err(OptimizeError::DimensionMismatch {
            expected: 2,
            got: 1
        })
    ));
    assert!(matches!(
        optimize(&g, &[f64::NAN, 0.0], &OptimizeSettings::default()),
        Err(OptimizeError::BadInit(_))
    ));
}

/// L(x) = 3·log x − x (a gamma(4, 1) kernel), with a recoverable error for x ≤ 0; mode x = 3.
/// Counts the errors it returned.
struct GammaKernel(AtomicUsize);

impl LogDensity for GammaKernel {
    fn dim(&self) -> usize {
        1
    }
    fn log_density(&self, x: &[f64]) -> Result<f64, DensityError> {
        let mut g = [0.0];
        self.log_density_grad(x, &mut g)
    }
    fn log_density_grad(&self, x: &[f64], g: &mut [f64]) -> Result<f64, DensityError> {
        if x[0] <= 0.0 {
            self.0.fetch_add(1, Ordering::Relaxed);
            return Err(DensityError::recoverable("x must be positive"));
        }
        g[0] = 3.0 / x[0] - 1.0;
        Ok(3.0 * x[0].ln() - x[0])
    }
}

#[test]
fn backs_off_from_invalid_region_and_reports_iteration_limit() {
    let model = GammaKernel(AtomicUsize::new(0));
    let r = optimize(&model, &[20.0], &tight()).unwrap();
    // the quasi-Newton step from the flat right tail overshoots into x ≤ 0 at least once
    assert!(model.0.load(Ordering::Relaxed) >= 1);
    assert!(r.converged, "{}", r.message);
    assert!((r.point[0] - 3.0).abs() < 1e-9, "{:?}", r.point);
    let capped = OptimizeSettings {
        max_iter: 3,
        ..tight()
    };
    let r = optimize(&Rosenbrock(2), &[-1.2, 1.0], &capped).unwrap();
    assert_eq!((r.iterations, r.converged), (3, false));
    assert!(r.message.contains("maximum number of iterations"));
}
