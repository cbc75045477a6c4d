//! QBVI's gradient estimator ([`Estimator::Gradient`]: the natural gradient from ∇L by the
//! Bonnet/Price identities of `specs/qbvi.md` §3.2) on closed-form targets: a Gaussian target's
//! mean and precision (full family: Λ; diagonal family: the mean-field optimum p_i = Λ_ii), the
//! conjugate form, and reproducibility across thread counts. The BNN-scale check is in
//! `tests/vi_survey_bnn.rs`. Run with `cargo test --release --test qbvi_gradient_estimator`.

use bayesc::inference::qbvi::{
    Control, Covariance, Estimator, Form, Progress, QbviSettings, fit_qbvi,
};
use bayesc::inference::{DensityError, LogDensity};

fn go(_: Progress) -> Control {
    Control::Continue
}

/// N(m, Λ⁻¹) given by its precision Λ (d×d row-major), unnormalised, with its gradient.
struct Gaussian {
    m: Vec<f64>,
    lambda: Vec<f64>,
}

impl Gaussian {
    fn correlated() -> Self {
        Gaussian {
            m: vec![1.0, -1.0, 2.0],
            lambda: vec![2.0, 0.8, 0.0, 0.8, 1.0, -0.3, 0.0, -0.3, 0.5],
        }
    }
}

impl LogDensity for Gaussian {
    fn dim(&self) -> usize {
        self.m.len()
    }
    fn log_density(&self, z: &[f64]) -> Result<f64, DensityError> {
        let mut g = vec![0.0; self.m.len()];
        self.log_density_grad(z, &mut g)
    }
    fn log_density_grad(&self, z: &[f64], g: &mut [f64]) -> Result<f64, DensityError> {
        let d = self.m.len();
        let mut q = 0.0;
        for i in 0..d {
            g[i] = 0.0;
            for j in 0..d {
                let l = self.lambda[i * d + j];
                q += (z[i] - self.m[i]) * l * (z[j] - self.m[j]);
                g[i] -= l * (z[j] - self.m[j]);
            }
        }
        Ok(-0.5 * q + 3.0)
    }
}

fn settings(covariance: Covariance) -> QbviSettings {
    QbviSettings {
        covariance,
        estimator: Estimator::Gradient,
        n_samples: 200,
        step_size: Some(0.05),
        max_iter: 1500,
        patience: 1500,
        keep_best: false,
        seed: 4,
        ..QbviSettings::default()
    }
}

#[test]
fn full_family_recovers_the_gaussian_target() {
    // At the optimum q = p: the mean step uses E[∇L] = −Λ(μ − m), exact for every antithetic
    // pair, so μ converges to m to rounding; P's fixed point is −E[∇²L] = Λ, estimated with
    // Monte Carlo noise of relative size ≈ sqrt(β/N_s) ≈ 0.016.
    let target = Gaussian::correlated();
    let fit = fit_qbvi(&target, &[0.0; 3], &settings(Covariance::Full), &mut go).unwrap();
    for i in 0..3 {
        assert!(
            (fit.mean[i] - target.m[i]).abs() < 1e-8,
            "mean {:?}",
            fit.mean
        );
    }
    let scale: f64 = target.lambda.iter().map(|x| x * x).sum::<f64>().sqrt();
    let err: f64 = fit
        .precision
        .iter()
        .zip(&target.lambda)
        .map(|(a, b)| (a - b).powi(2))
        .sum::<f64>()
        .sqrt()
        / scale;
    eprintln!(
        "full: precision {:?}, relative error {err:.2e}",
        fit.precision
    );
    assert!(err < 0.05, "precision {:?} vs Λ", fit.precision);
}

#[test]
fn diagonal_family_reaches_the_mean_field_optimum() {
    // Mean-field optimum of a Gaussian target: the exact mean and p_i = Λ_ii (Bonnet/Price
    // fixed point p = E_q[−∂²L]).
    let target = Gaussian::correlated();
    let fit = fit_qbvi(&target, &[0.0; 3], &settings(Covariance::Diagonal), &mut go).unwrap();
    for i in 0..3 {
        let sd = fit.covariance[i].sqrt();
        let z = (fit.mean[i] - target.m[i]) / sd;
        let r = fit.precision[i] / target.lambda[i * 3 + i] - 1.0;
        eprintln!("diagonal[{i}]: mean error {z:+.2e} sd, precision ratio − 1 = {r:+.2e}");
        assert!(z.abs() < 0.05, "mean[{i}] off by {z} sd: {:?}", fit.mean);
        assert!(r.abs() < 0.05, "precision[{i}]: {:?}", fit.precision);
    }
}

/// ℓ(ζ) = L(ζ) + ‖ζ‖²/2 of the Gaussian target L: with the conjugate prior N(0, I), ℓ + log prior
/// is L again (up to a constant), so the posterior is the Gaussian target itself.
struct LikelihoodOnly(Gaussian);

impl LogDensity for LikelihoodOnly {
    fn dim(&self) -> usize {
        self.0.m.len()
    }
    fn log_density(&self, z: &[f64]) -> Result<f64, DensityError> {
        let mut g = vec![0.0; z.len()];
        self.log_density_grad(z, &mut g)
    }
    fn log_density_grad(&self, z: &[f64], g: &mut [f64]) -> Result<f64, DensityError> {
        let v = self.0.log_density_grad(z, g)?;
        for (gi, zi) in g.iter_mut().zip(z) {
            *gi += zi;
        }
        Ok(v + 0.5 * z.iter().map(|x| x * x).sum::<f64>())
    }
}

#[test]
fn conjugate_form_adds_the_prior_precision() {
    // ℓ + log N(ζ; 0, I) is the Gaussian target again, so the diagonal optimum is p_i = Λ_ii.
    let target = LikelihoodOnly(Gaussian::correlated());
    let s = QbviSettings {
        form: Form::Conjugate {
            prior_mean: vec![0.0; 3],
            prior_precision: vec![1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0],
        },
        ..settings(Covariance::Diagonal)
    };
    let fit = fit_qbvi(&target, &[0.0; 3], &s, &mut go).unwrap();
    for i in 0..3 {
        let sd = fit.covariance[i].sqrt();
        let z = (fit.mean[i] - target.0.m[i]) / sd;
        let r = fit.precision[i] / target.0.lambda[i * 3 + i] - 1.0;
        eprintln!("conjugate[{i}]: mean error {z:+.2e} sd, precision ratio − 1 = {r:+.2e}");
        assert!(z.abs() < 0.05, "mean[{i}] off by {z} sd: {:?}", fit.mean);
        assert!(r.abs() < 0.05, "precision[{i}]: {:?}", fit.precision);
    }
}

#[test]
fn gradient_estimator_is_reproducible_across_thread_counts() {
    let target = Gaussian::correlated();
    let s = QbviSettings {
        max_iter: 200,
        ..settings(Covariance::Diagonal)
    };
    let run = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| fit_qbvi(&target, &[0.0; 3], &s, &mut go).unwrap())
    };
    let (one, two) = (run(1), run(2));
    assert_eq!(one.mean, two.mean);
    assert_eq!(one.precision, two.precision);
    assert_eq!(one.elbo_trace, two.elbo_trace);
}
