//! Unit tests of the integrators against closed-form solutions, and of the forward
//! sensitivities against the derivatives of those solutions.

use super::*;

/// A linear system `y' = A y + b(t)` given by closures, with `∂f/∂θ` supplied for one
/// parameter.
struct Linear<F: FnMut(f64, &[f64], &mut [f64], Option<(&mut [f64], &mut [f64])>)> {
    n: usize,
    p: usize,
    f: F,
    calls: usize,
}

impl<F: FnMut(f64, &[f64], &mut [f64], Option<(&mut [f64], &mut [f64])>)> VectorField
    for Linear<F>
{
    fn n(&self) -> usize {
        self.n
    }
    fn p(&self) -> usize {
        self.p
    }
    fn eval(
        &mut self,
        t: f64,
        y: &[f64],
        dy: &mut [f64],
        jac: Option<(&mut [f64], &mut [f64])>,
    ) -> Result<(), Fault> {
        self.calls += 1;
        (self.f)(t, y, dy, jac);
        Ok(())
    }
}

type Solver =
    fn(&mut dyn OdeSystem, &[f64], f64, &[f64], &OdeOptions) -> Result<Vec<Vec<f64>>, OdeFailure>;

const SOLVERS: [(&str, Solver); 2] = [("rk45", rk45::solve), ("bdf", bdf::solve)];

fn tight() -> OdeOptions {
    OdeOptions {
        rtol: 1e-9,
        atol: 1e-10,
        max_num_steps: 100_000,
    }
}

/// y' = -k y, y(0) = 2: y = 2 e^{-k t}; with the sensitivity with respect to k,
/// ∂y/∂k = -2 t e^{-k t}, and with respect to y0 (a column without a parameter), e^{-k t}.
#[test]
fn exponential_decay_and_its_sensitivities() {
    let k = 0.7;
    for (name, solve) in SOLVERS {
        let f = Linear {
            n: 1,
            p: 1,
            f: |_t: f64, y: &[f64], dy: &mut [f64], jac: Option<(&mut [f64], &mut [f64])>| {
                dy[0] = -k * y[0];
                if let Some((jy, jp)) = jac {
                    jy[0] = -k;
                    jp[0] = -y[0];
                }
            },
            calls: 0,
        };
        let mut sys = Coupled::new(f, vec![Some(0), None]);
        let ts = [0.5, 1.0, 2.0, 5.0];
        let out = solve(&mut sys, &[2.0, 0.0, 1.0], 0.0, &ts, &tight()).unwrap();
        for (t, y) in ts.iter().zip(&out) {
            let e = (-k * t).exp();
            assert!((y[0] - 2.0 * e).abs() < 1e-7, "{name} y({t}) = {}", y[0]);
            assert!(
                (y[1] + 2.0 * t * e).abs() < 1e-6,
                "{name} dy/dk({t}) = {}",
                y[1]
            );
            assert!((y[2] - e).abs() < 1e-7, "{name} dy/dy0({t}) = {}", y[2]);
        }
    }
}

/// y'' = -ω² y as a first-order system, y(0) = 1, y'(0) = 0: y = cos ωt, y' = -ω sin ωt, and
/// ∂y/∂ω = -t sin ωt.
#[test]
fn harmonic_oscillator() {
    let w = 2.0;
    for (name, solve) in SOLVERS {
        let f = Linear {
            n: 2,
            p: 1,
            f: |_t: f64, y: &[f64], dy: &mut [f64], jac: Option<(&mut [f64], &mut [f64])>| {
                dy[0] = y[1];
                dy[1] = -w * w * y[0];
                if let Some((jy, jp)) = jac {
                    jy.copy_from_slice(&[0.0, 1.0, -w * w, 0.0]);
                    jp.copy_from_slice(&[0.0, -2.0 * w * y[0]]);
                }
            },
            calls: 0,
        };
        let mut sys = Coupled::new(f, vec![Some(0)]);
        let ts: Vec<f64> = (1..=10).map(|i| i as f64).collect();
        let out = solve(&mut sys, &[1.0, 0.0, 0.0, 0.0], 0.0, &ts, &tight()).unwrap();
        for (t, y) in ts.iter().zip(&out) {
            let (s, c) = (w * t).sin_cos();
            assert!((y[0] - c).abs() < 2e-6, "{name} y({t}) = {} vs {c}", y[0]);
            assert!((y[1] + w * s).abs() < 4e-6, "{name} y'({t})");
            assert!((y[2] + t * s).abs() < 2e-5, "{name} dy/dw({t}) = {}", y[2]);
        }
    }
}

/// The stiff scalar problem y' = -λ (y − cos t), y(0) = 0, λ = 1000 (Hairer & Wanner II,
/// §IV.1, the "Curtiss–Hirschfelder" type): y = λ/(λ²+1) (λ cos t + sin t) − λ²/(λ²+1) e^{−λt}.
/// BDF follows the smooth solution with few steps; RK45 is held to its stability limit
/// (h ≲ 3.3/λ) and needs an order of magnitude more evaluations.
#[test]
fn stiff_problem_bdf_needs_far_fewer_steps_than_rk45() {
    let lam = 1000.0;
    let exact = |t: f64| {
        let d = lam * lam + 1.0;
        lam / d * (lam * t.cos() + t.sin()) - lam * lam / d * (-lam * t).exp()
    };
    let mut calls = Vec::new();
    for (name, solve) in SOLVERS {
        let f = Linear {
            n: 1,
            p: 0,
            f: |t: f64, y: &[f64], dy: &mut [f64], jac: Option<(&mut [f64], &mut [f64])>| {
                dy[0] = -lam * (y[0] - t.cos());
                if let Some((jy, _)) = jac {
                    jy[0] = -lam;
                }
            },
            calls: 0,
        };
        let mut sys = Coupled::new(f, vec![]);
        let ts = [0.1, 1.0, 5.0, 10.0];
        let o = OdeOptions {
            rtol: 1e-6,
            atol: 1e-8,
            max_num_steps: 1_000_000,
        };
        let out = solve(&mut sys, &[0.0], 0.0, &ts, &o).unwrap();
        for (t, y) in ts.iter().zip(&out) {
            assert!(
                (y[0] - exact(*t)).abs() < 1e-5,
                "{name} y({t}) = {} vs {}",
                y[0],
                exact(*t)
            );
        }
        calls.push(sys.f.calls);
    }
    assert!(
        calls[0] > 10 * calls[1],
        "rk45 {} vs bdf {} evaluations",
        calls[0],
        calls[1]
    );
}

/// Robertson's chemical kinetics (Hairer & Wanner II, §IV.1, eq. 1.3), the classic stiff test:
/// BDF reaches t = 40 with the conservation law y₁ + y₂ + y₃ = 1 intact and the published
/// values y₁(40) ≈ 0.7158, y₃(40) ≈ 0.2842; RK45 runs out of a 20000-step budget.
#[test]
fn robertson_is_solved_by_bdf_and_exhausts_rk45() {
    let field = || Linear {
        n: 3,
        p: 0,
        f: |_t: f64, y: &[f64], dy: &mut [f64], jac: Option<(&mut [f64], &mut [f64])>| {
            dy[0] = -0.04 * y[0] + 1e4 * y[1] * y[2];
            dy[2] = 3e7 * y[1] * y[1];
            dy[1] = -dy[0] - dy[2];
            if let Some((jy, _)) = jac {
                jy.copy_from_slice(&[
                    -0.04,
                    1e4 * y[2],
                    1e4 * y[1],
                    0.04,
                    -1e4 * y[2] - 6e7 * y[1],
                    -1e4 * y[1],
                    0.0,
                    6e7 * y[1],
                    0.0,
                ]);
            }
        },
        calls: 0,
    };
    let o = OdeOptions {
        rtol: 1e-6,
        atol: 1e-10,
        max_num_steps: 20_000,
    };
    let mut sys = Coupled::new(field(), vec![]);
    let out = bdf::solve(&mut sys, &[1.0, 0.0, 0.0], 0.0, &[40.0], &o).unwrap();
    let y = &out[0];
    assert!((y[0] - 0.7158).abs() < 2e-4, "y1 = {}", y[0]);
    assert!((y[2] - 0.2842).abs() < 2e-4, "y3 = {}", y[2]);
    assert!((y.iter().sum::<f64>() - 1.0).abs() < 1e-6);
    assert!(sys.f.calls < 5000, "bdf used {} evaluations", sys.f.calls);
    let mut sys = Coupled::new(field(), vec![]);
    let r = rk45::solve(&mut sys, &[1.0, 0.0, 0.0], 0.0, &[40.0], &o);
    assert!(matches!(r, Err(OdeFailure::MaxSteps { .. })), "{r:?}");
}

#[test]
fn output_times_are_checked() {
    assert!(check_times(0.0, &[0.5, 1.0, 1.0, 2.0]).is_ok());
    let e = check_times(0.0, &[0.0, 1.0]).unwrap_err();
    assert!(e.contains("after the initial time"), "{e}");
    let e = check_times(0.0, &[1.0, 0.5]).unwrap_err();
    assert!(e.contains("increasing order"), "{e}");
    assert!(check_times(0.0, &[f64::NAN]).is_err());
}

#[test]
fn lu_solves_a_pivoted_system() {
    let mut a = [0.0, 2.0, 1.0, 1.0, 1.0, 0.0, 3.0, 0.0, 1.0];
    let x = [1.0, -2.0, 0.5];
    let b: Vec<f64> = (0..3)
        .map(|i| (0..3).map(|j| a[i * 3 + j] * x[j]).sum())
        .collect();
    let mut piv = [0; 3];
    assert!(lu_factor(&mut a, 3, &mut piv));
    let mut s = b.clone();
    lu_solve(&a, 3, &piv, &mut s);
    for (u, v) in s.iter().zip(&x) {
        assert!((u - v).abs() < 1e-12);
    }
}
