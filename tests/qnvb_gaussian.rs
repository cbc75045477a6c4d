//! QNVB on Gaussian targets: exact mean and variances for a diagonal covariance, the exact
//! mean-field optimum for a correlated Gaussian (specs/qnvb.md §10.2), the conjugate
//! normal-mean model, reproducibility, and the PSIS k̂ helper.

mod qnvb_common;

use bayesc::inference::qnvb::{
    CurvatureAverage, QnvbError, QnvbSettings, QnvbStop, fit_qnvb, psis_khat,
};
use bayesc::inference::rng::stream;
use bayesc::inference::{DensityError, LogDensity};
use qnvb_common::{Gaussian, inverse};

fn run(
    density: &dyn LogDensity,
    init: &[f64],
    settings: &QnvbSettings,
) -> bayesc::inference::qnvb::QnvbFit {
    fit_qnvb(density, init, settings, &mut |_, _| true).unwrap()
}

#[test]
fn diagonal_gaussian_exact() {
    let var = [4.0, 0.25, 1.0, 9.0, 0.01];
    let g = Gaussian::diagonal(vec![1.0, -2.0, 0.5, 3.0, -0.1], &var);
    let fit = run(&g, &[0.0; 5], &QnvbSettings::default());
    assert_eq!(fit.stop, QnvbStop::Converged);
    for i in 0..5 {
        assert!((fit.mean[i] - g.mean[i]).abs() < 1e-10, "{:?}", fit.mean);
        assert!(
            (fit.variance[i] / var[i] - 1.0).abs() < 1e-10,
            "{:?}",
            fit.variance
        );
    }
    // at the optimum the ELBO equals log Z = (d/2) log 2π + ½ Σ log var (L is unnormalised)
    let log_z =
        2.5 * (2.0 * std::f64::consts::PI).ln() + 0.5 * var.iter().map(|v| v.ln()).sum::<f64>();
    assert!((fit.elbo_trace.last().unwrap() - log_z).abs() < 1e-9);
    assert!(fit.max_scaled_gradient < 1e-10 && fit.max_curvature_mismatch < 1e-10);
}

/// specs/qnvb.md §10.2: d = 6, J = ½(ζ−m)ᵀΛ(ζ−m); μ → m, σ_i → Λ_ii^{−1/2} (signed average).
fn correlated6() -> Gaussian {
    let d = 6;
    let mut cov = vec![0.0; d * d];
    let sd = [1.0, 2.0, 0.5, 1.5, 0.8, 3.0];
    for i in 0..d {
        for j in 0..d {
            let rho: f64 = if i == j {
                1.0
            } else {
                0.5_f64.powi((i as i32 - j as i32).abs())
            };
            cov[i * d + j] = rho * sd[i] * sd[j];
        }
    }
    Gaussian {
        mean: vec![1.0, -1.0, 2.0, 0.0, 0.5, -3.0],
        precision: inverse(&cov, d),
    }
}

#[test]
fn correlated_gaussian_mean_field_optimum() {
    let g = correlated6();
    // the stopping rule (§7.5) ends the run at T_min = 500 steps, with the mean still ~2e-5 off
    // (the Adam cap of the mean step decays with the β₂ = 0.99 memory of s̄) …
    let fit = run(&g, &[0.0; 6], &QnvbSettings::default());
    assert_eq!((fit.stop, fit.iterations), (QnvbStop::Converged, 500));
    // … while 2000 steps reach the exact mean (§10.2: "to 1e-15")
    let long = QnvbSettings {
        min_iter: 2000,
        max_iter: 2000,
        ..QnvbSettings::default()
    };
    let fit_long = run(&g, &[0.0; 6], &long);
    for i in 0..6 {
        let want = 1.0 / g.precision[i * 6 + i];
        assert!((fit.mean[i] - g.mean[i]).abs() < 1e-4, "{:?}", fit.mean);
        assert!(
            (fit_long.mean[i] - g.mean[i]).abs() < 1e-13,
            "{:?}",
            fit_long.mean
        );
        assert!(
            (fit.variance[i] / want - 1.0).abs() < 2e-3,
            "{i}: {} vs {want}",
            fit.variance[i]
        );
    }
    // the reference RMS curvature overstates κ: σ comes out a little small (§5, §10.2)
    let rms = QnvbSettings {
        curvature: CurvatureAverage::Rms,
        ..QnvbSettings::default()
    };
    let fit_rms = run(&g, &[0.0; 6], &rms);
    for i in 0..6 {
        let want = 1.0 / g.precision[i * 6 + i];
        let r = fit_rms.variance[i] / want;
        assert!(r < 1.0 + 2e-3 && r > 0.9, "{i}: {r}");
    }
}

/// y_i ~ N(θ, 1), i = 1..n, θ ~ N(0, 10²): the posterior is N(Σy/(n + 0.01), 1/(n + 0.01)).
struct NormalMean {
    y: Vec<f64>,
}

impl LogDensity for NormalMean {
    fn dim(&self) -> usize {
        1
    }
    fn log_density(&self, t: &[f64]) -> Result<f64, DensityError> {
        let mut g = [0.0];
        self.log_density_grad(t, &mut g)
    }
    fn log_density_grad(&self, t: &[f64], g: &mut [f64]) -> Result<f64, DensityError> {
        let th = t[0];
        let lp =
            -0.5 * self.y.iter().map(|y| (y - th) * (y - th)).sum::<f64>() - 0.5 * th * th / 100.0;
        g[0] = self.y.iter().map(|y| y - th).sum::<f64>() - th / 100.0;
        Ok(lp)
    }
}

#[test]
fn conjugate_normal_mean_exact_posterior() {
    let y = vec![2.1, 1.3, 3.4, 2.9, 0.7, 2.2, 1.8, 2.5];
    let n = y.len() as f64;
    let post_var = 1.0 / (n + 0.01);
    let post_mean = y.iter().sum::<f64>() * post_var;
    let model = NormalMean { y };
    let fit = run(&model, &[-1.0], &QnvbSettings::default());
    assert!((fit.mean[0] - post_mean).abs() < 1e-10, "{}", fit.mean[0]);
    assert!(
        (fit.variance[0] / post_var - 1.0).abs() < 1e-10,
        "{}",
        fit.variance[0]
    );
}

#[test]
fn reproducible_and_interruptible() {
    let g = correlated6();
    let s = QnvbSettings {
        seed: 42,
        ..QnvbSettings::default()
    };
    // empty init: random start from the seed
    let a = run(&g, &[], &s);
    let b = run(&g, &[], &s);
    assert_eq!(a, b);
    let c = run(
        &g,
        &[],
        &QnvbSettings {
            seed: 43,
            ..s.clone()
        },
    );
    assert_ne!(a.elbo_trace[0], c.elbo_trace[0]);
    let mut seen = 0;
    let fit = fit_qnvb(&g, &[0.0; 6], &s, &mut |t, _| {
        seen = t + 1;
        t < 9
    })
    .unwrap();
    assert_eq!(
        (fit.stop, fit.iterations, seen),
        (QnvbStop::Interrupted, 10, 10)
    );
    assert!(matches!(
        fit_qnvb(&g, &[0.0; 2], &s, &mut |_, _| true),
        Err(QnvbError::DimensionMismatch {
            expected: 6,
            got: 2
        })
    ));
    assert!(matches!(
        fit_qnvb(&g, &[0.0; 6], &QnvbSettings { n_e: 6, ..s }, &mut |_, _| {
            true
        }),
        Err(QnvbError::InvalidSettings(_))
    ));
}

/// L = −∞ (recoverable error) for ζ₀ > 1: from μ = 0.95 the initial spread crosses the
/// boundary and σ must be halved; the fit then stays inside.
struct Bounded;

impl LogDensity for Bounded {
    fn dim(&self) -> usize {
        1
    }
    fn log_density(&self, t: &[f64]) -> Result<f64, DensityError> {
        let mut g = [0.0];
        self.log_density_grad(t, &mut g)
    }
    fn log_density_grad(&self, t: &[f64], g: &mut [f64]) -> Result<f64, DensityError> {
        if t[0] >= 1.0 {
            return Err(DensityError::recoverable("outside support"));
        }
        // N(0, 0.1²) kernel times (1 − ζ), zero density at ζ ≥ 1
        g[0] = -t[0] / 0.01 - 1.0 / (1.0 - t[0]);
        Ok(-0.5 * t[0] * t[0] / 0.01 + (1.0 - t[0]).ln())
    }
}

#[test]
fn non_finite_points_halve_sigma() {
    let fit = run(&Bounded, &[0.95], &QnvbSettings::default());
    // σ = 0.1 and 0.05 reach ζ ≥ 1; the first step is taken at σ = 0.025 (points 0.95 ± 0.025)
    let l = |t: f64| Bounded.log_density(&[t]).unwrap();
    let elbo0 = 0.5 * (l(0.975) + l(0.925))
        + 0.025_f64.ln()
        + 0.5 * (1.0 + (2.0 * std::f64::consts::PI).ln());
    assert!(
        (fit.elbo_trace[0] - elbo0).abs() < 1e-12,
        "{} {elbo0}",
        fit.elbo_trace[0]
    );
    assert!(
        fit.mean[0] < 1.0 && fit.mean[0].abs() < 0.05,
        "{:?}",
        fit.mean
    );
}

#[test]
fn khat_exact_and_mean_field() {
    // exact Gaussian q of a Gaussian target: k̂ < 0.5 (ratios constant up to rounding)
    let g = Gaussian::diagonal(vec![1.0, -1.0], &[2.0, 0.5]);
    let fit = run(&g, &[0.0; 2], &QnvbSettings::default());
    let draws = fit.sample(4000, &mut stream(7, 1));
    let k = psis_khat(&g, |z| fit.log_q(z), &draws).unwrap();
    assert!(k < 0.5, "{k}");
    // a slightly wide q (sd × 1.2) of the same target: a genuine estimate, still < 0.5
    let wide = |z: &[f64]| {
        z.iter()
            .zip(&g.mean)
            .zip([2.0_f64, 0.5])
            .map(|((z, m), v)| {
                let v = v * 1.44;
                -0.5 * (z - m) * (z - m) / v - 0.5 * (2.0 * std::f64::consts::PI * v).ln()
            })
            .sum::<f64>()
    };
    let mut rng = stream(7, 2);
    let wdraws: Vec<Vec<f64>> = fit
        .sample(4000, &mut rng)
        .into_iter()
        .map(|z| {
            z.iter()
                .zip(&g.mean)
                .map(|(z, m)| m + 1.2 * (z - m))
                .collect()
        })
        .collect();
    let kw = psis_khat(&g, wide, &wdraws).unwrap();
    assert!(kw.is_finite() && kw < 0.5, "{kw}");
    // mean-field fit to a ρ = 0.99 Gaussian: far too narrow, k̂ > 0.7
    let c = Gaussian::correlated2(0.99);
    let fit = run(&c, &[0.5, -0.5], &QnvbSettings::default());
    assert!(
        (fit.variance[0] - 0.0199).abs() < 1e-3,
        "{:?}",
        fit.variance
    );
    let draws = fit.sample(4000, &mut stream(7, 3));
    let k = psis_khat(&c, |z| fit.log_q(z), &draws).unwrap();
    assert!(k > 0.7, "{k}");
    // too few draws is an error
    assert!(psis_khat(&c, |z| fit.log_q(z), &draws[..10]).is_err());
}

/// Neal's funnel: v ~ N(0, 3²), x | v ~ N(0, e^v); L(v, x) = −v²/18 − x²/(2e^v) − v/2.
struct Funnel;

impl LogDensity for Funnel {
    fn dim(&self) -> usize {
        2
    }
    fn log_density(&self, t: &[f64]) -> Result<f64, DensityError> {
        let mut g = [0.0; 2];
        self.log_density_grad(t, &mut g)
    }
    fn log_density_grad(&self, t: &[f64], g: &mut [f64]) -> Result<f64, DensityError> {
        let (v, x) = (t[0], t[1]);
        let e = (-v).exp();
        g[0] = -v / 9.0 + 0.5 * x * x * e - 0.5;
        g[1] = -x * e;
        Ok(-v * v / 18.0 - 0.5 * x * x * e - 0.5 * v)
    }
}

#[test]
fn khat_flags_mean_field_fit_to_funnel() {
    let fit = run(&Funnel, &[0.0, 0.0], &QnvbSettings::default());
    // the mean-field fit is too narrow in v (sd ≪ 3): heavy importance-ratio tail
    assert!(fit.variance[0] < 9.0, "{:?}", fit.variance);
    let k = fit.khat(&Funnel, 4000, &mut stream(9, 1)).unwrap();
    assert!(k > 0.7, "{k}");
}
