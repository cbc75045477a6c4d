//! L-BFGS, BFGS and Newton (`OptimizeSettings::algorithm`) on densities with a known mode, and
//! the documented effect of the tolerances on where a run stops.

use bayesc::inference::optimize::{Algorithm, OptimizeSettings, optimize};
use bayesc::inference::{DensityError, LogDensity};

/// L(x) = −½ (x − μ)ᵀ A (x − μ) with a correlated, badly scaled A (condition number ≈ 400).
struct Gaussian {
    mu: Vec<f64>,
    a: Vec<f64>,
}

impl Gaussian {
    fn new() -> Self {
        let d = 4;
        // A = D R D with correlations 0.6^|i−j| and scales 1, 3, 10, 0.5
        let s = [1.0, 3.0, 10.0, 0.5];
        let mut a = vec![0.0; d * d];
        for i in 0..d {
            for j in 0..d {
                a[i * d + j] = s[i] * s[j] * 0.6f64.powi((i as i32 - j as i32).abs());
            }
        }
        Gaussian {
            mu: vec![1.0, -2.0, 0.5, 3.0],
            a,
        }
    }
}

impl LogDensity for Gaussian {
    fn dim(&self) -> usize {
        self.mu.len()
    }
    fn log_density(&self, x: &[f64]) -> Result<f64, DensityError> {
        let mut g = vec![0.0; x.len()];
        self.log_density_grad(x, &mut g)
    }
    fn log_density_grad(&self, x: &[f64], g: &mut [f64]) -> Result<f64, DensityError> {
        let d = self.dim();
        let r: Vec<f64> = (0..d).map(|i| x[i] - self.mu[i]).collect();
        let mut lp = 0.0;
        for i in 0..d {
            let ar: f64 = (0..d).map(|j| self.a[i * d + j] * r[j]).sum();
            g[i] = -ar;
            lp -= 0.5 * r[i] * ar;
        }
        Ok(lp)
    }
}

/// Rosenbrock's banana as a log density, L = −(1 − x)² − 100 (y − x²)²: mode (1, 1), a
/// Hessian that is indefinite away from the valley (Newton needs its modification there).
struct Banana;

impl LogDensity for Banana {
    fn dim(&self) -> usize {
        2
    }
    fn log_density(&self, x: &[f64]) -> Result<f64, DensityError> {
        let mut g = [0.0; 2];
        self.log_density_grad(x, &mut g)
    }
    fn log_density_grad(&self, x: &[f64], g: &mut [f64]) -> Result<f64, DensityError> {
        let (a, b) = (1.0 - x[0], x[1] - x[0] * x[0]);
        g[0] = 2.0 * a + 400.0 * b * x[0];
        g[1] = -200.0 * b;
        Ok(-a * a - 100.0 * b * b)
    }
}

fn settings(algorithm: Algorithm) -> OptimizeSettings {
    OptimizeSettings {
        algorithm,
        ..OptimizeSettings::default()
    }
}

#[test]
fn every_algorithm_reaches_the_gaussian_mode() {
    let g = Gaussian::new();
    for algorithm in [Algorithm::Lbfgs, Algorithm::Bfgs, Algorithm::Newton] {
        let r = optimize(&g, &[0.0; 4], &settings(algorithm)).expect("runs");
        assert!(r.converged, "{algorithm}: {}", r.message);
        for (x, m) in r.point.iter().zip(&g.mu) {
            assert!(
                (x - m).abs() < 1e-4,
                "{algorithm}: {:?} vs {:?}",
                r.point,
                g.mu
            );
        }
        assert!(
            r.log_density.abs() < 1e-10,
            "{algorithm}: {}",
            r.log_density
        );
    }
    // Newton lands on a quadratic's mode in one step; the second sees no gain and stops
    let n = optimize(&g, &[0.0; 4], &settings(Algorithm::Newton)).unwrap();
    assert_eq!(n.iterations, 2, "{}", n.message);
    assert!(n.message.contains("1e-8"), "{}", n.message);
}

#[test]
fn every_algorithm_reaches_the_banana_mode() {
    for algorithm in [Algorithm::Lbfgs, Algorithm::Bfgs, Algorithm::Newton] {
        let s = OptimizeSettings {
            tol_rel_grad: 0.0,
            tol_rel_obj: 0.0,
            tol_obj: 0.0,
            tol_param: 0.0,
            tol_grad: 1e-9,
            ..settings(algorithm)
        };
        let r = optimize(&Banana, &[-1.2, 1.0], &s).expect("runs");
        assert!(r.converged, "{algorithm}: {}", r.message);
        assert!(
            (r.point[0] - 1.0).abs() < 1e-5 && (r.point[1] - 1.0).abs() < 1e-5,
            "{algorithm}: {:?} after {} iterations",
            r.point,
            r.iterations
        );
    }
}

#[test]
fn bfgs_needs_fewer_iterations_than_lbfgs_with_one_pair() {
    // with a single stored pair L-BFGS forgets the curvature that dense BFGS keeps
    let g = Gaussian::new();
    let base = OptimizeSettings {
        tol_rel_grad: 0.0,
        tol_rel_obj: 0.0,
        tol_obj: 0.0,
        tol_param: 0.0,
        tol_grad: 1e-8,
        ..OptimizeSettings::default()
    };
    let l = optimize(
        &g,
        &[0.0; 4],
        &OptimizeSettings {
            history: 1,
            ..base.clone()
        },
    )
    .unwrap();
    let b = optimize(
        &g,
        &[0.0; 4],
        &OptimizeSettings {
            algorithm: Algorithm::Bfgs,
            ..base
        },
    )
    .unwrap();
    assert!(l.converged && b.converged, "{} / {}", l.message, b.message);
    assert!(
        b.iterations < l.iterations,
        "BFGS {} vs L-BFGS(m = 1) {}",
        b.iterations,
        l.iterations
    );
}

#[test]
fn tolerances_stop_where_documented() {
    let g = Gaussian::new();
    for algorithm in [Algorithm::Lbfgs, Algorithm::Bfgs] {
        let only = |f: fn(&mut OptimizeSettings)| {
            let mut s = OptimizeSettings {
                tol_obj: 0.0,
                tol_rel_obj: 0.0,
                tol_grad: 0.0,
                tol_rel_grad: 0.0,
                tol_param: 0.0,
                max_iter: 500,
                ..settings(algorithm)
            };
            f(&mut s);
            optimize(&g, &[0.0; 4], &s).unwrap()
        };
        // ‖∇L‖ < tol_grad: a looser tolerance stops earlier, and the stop obeys the bound
        let loose = only(|s| s.tol_grad = 1.0);
        let tight = only(|s| s.tol_grad = 1e-6);
        assert_eq!(loose.message, "gradient norm below tolerance");
        assert_eq!(tight.message, "gradient norm below tolerance");
        assert!(loose.iterations < tight.iterations, "{algorithm}");
        let mut grad = [0.0; 4];
        g.log_density_grad(&loose.point, &mut grad).unwrap();
        assert!(grad.iter().map(|v| v * v).sum::<f64>().sqrt() < 1.0);
        // |Δf| < tol_obj
        let obj = only(|s| s.tol_obj = 1e-2);
        assert_eq!(obj.message, "absolute change in objective below tolerance");
        // ‖Δx‖ < tol_param
        let param = only(|s| s.tol_param = 1e-1);
        assert_eq!(param.message, "absolute parameter change below tolerance");
        // the relative tests (in units of machine epsilon)
        let rel_obj = only(|s| s.tol_rel_obj = 1e13);
        assert_eq!(
            rel_obj.message,
            "relative change in objective below tolerance"
        );
        let rel_grad = only(|s| s.tol_rel_grad = 1e13);
        assert_eq!(
            rel_grad.message,
            "relative gradient magnitude below tolerance"
        );
        // the iteration limit
        let capped = only(|s| s.max_iter = 3);
        assert_eq!(capped.iterations, 3);
        assert!(!capped.converged);
    }
    // Newton reads only max_iter
    let n = optimize(
        &g,
        &[0.0; 4],
        &OptimizeSettings {
            max_iter: 1,
            ..settings(Algorithm::Newton)
        },
    )
    .unwrap();
    assert_eq!(n.iterations, 1);
    assert!(!n.converged, "{}", n.message);
}
