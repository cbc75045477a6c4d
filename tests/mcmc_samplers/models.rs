//! A constrained conjugate model, cross-method agreement, separated modes, metric and step-size settings.

use super::support::*;
use bayesc::inference::mcmc::{McmcError, McmcOutput, McmcSettings, Method, sample};
use bayesc::inference::{DensityError, LogDensity};
use std::sync::atomic::AtomicBool;

// ---------------------------------------------------------------------------------------------
// Constrained conjugate model, cross-method agreement, separated modes

/// Gamma–Poisson: θ ~ Gamma(2, rate 1), y_i ~ Poisson(θ) with y = (3, 5, 2, 4, 6, 1, 3).
/// Posterior Gamma(26, rate 8): mean 3.25, variance 26/64. Unconstrained ζ = log θ, so
/// L(ζ) = (a + Σy − 1)ζ − (b + n)e^ζ + ζ, the last term being log|dθ/dζ| (Jacobian).
struct GammaPoisson;

impl LogDensity for GammaPoisson {
    fn dim(&self) -> usize {
        1
    }
    fn log_density(&self, x: &[f64]) -> Result<f64, DensityError> {
        Ok(26.0 * x[0] - 8.0 * x[0].exp())
    }
    fn log_density_grad(&self, x: &[f64], g: &mut [f64]) -> Result<f64, DensityError> {
        g[0] = 26.0 - 8.0 * x[0].exp();
        self.log_density(x)
    }
}

#[test]
fn conjugate_gamma_poisson_nuts_and_mh_agree() {
    let stop = AtomicBool::new(false);
    let nuts = sample(
        &GammaPoisson,
        &McmcSettings {
            seed: 8,
            ..McmcSettings::default()
        },
        &[],
        &no_progress(),
        &stop,
    )
    .unwrap();
    let mh = sample(
        &GammaPoisson,
        &McmcSettings {
            seed: 8,
            ..McmcSettings::mh_defaults(1)
        },
        &[],
        &no_progress(),
        &stop,
    )
    .unwrap();
    let (mean_true, var_true) = (3.25, 26.0 / 64.0);
    let mut means = Vec::new();
    for out in [&nuts, &mh] {
        // Constrained draws θ = exp(ζ).
        let theta: Vec<Vec<f64>> = column(out, 0)
            .iter()
            .map(|c| c.iter().map(|z| z.exp()).collect())
            .collect();
        means.push(check_scalar(&theta, mean_true, var_true, 0));
        assert!(out.warnings(&McmcSettings::default()).is_empty());
    }
    // `specs/mh.md` §8.6: |mean_MH − mean_NUTS| < 4·√(MCSE_MH² + MCSE_NUTS²).
    let ((a, sa), (b, sb)) = (means[0], means[1]);
    assert!((a - b).abs() < 4.0 * (sa * sa + sb * sb).sqrt());
    let accept = post_warmup_mean(&mh, |c| c.stats.accept_stat.clone());
    assert!((accept - 0.44).abs() < 0.05, "1-d MH acceptance {accept}");
}

/// Two far-apart modes N(±8, 1) with equal weight.
struct Bimodal;

impl LogDensity for Bimodal {
    fn dim(&self) -> usize {
        1
    }
    fn log_density(&self, x: &[f64]) -> Result<f64, DensityError> {
        let (a, b) = (-0.5 * (x[0] - 8.0).powi(2), -0.5 * (x[0] + 8.0).powi(2));
        let m = a.max(b);
        Ok(m + ((a - m).exp() + (b - m).exp()).ln())
    }
    fn log_density_grad(&self, x: &[f64], g: &mut [f64]) -> Result<f64, DensityError> {
        let lp = self.log_density(x)?;
        let w = (-0.5 * (x[0] - 8.0).powi(2) - lp).exp();
        g[0] = w * (8.0 - x[0]) + (1.0 - w) * (-8.0 - x[0]);
        Ok(lp)
    }
}

/// `specs/mh.md` §8.7: chains started in separate modes stay there; R-hat (basic,
/// between/within variance) is far above 1.1.
#[test]
fn separated_modes_give_large_rhat() {
    let settings = McmcSettings {
        seed: 1,
        ..McmcSettings::mh_defaults(1)
    };
    let inits = vec![vec![-8.0], vec![-8.0], vec![8.0], vec![8.0]];
    let out = sample(
        &Bimodal,
        &settings,
        &inits,
        &no_progress(),
        &AtomicBool::new(false),
    )
    .unwrap();
    let cols = column(&out, 0);
    let n = cols[0].len() as f64;
    let means: Vec<f64> = cols.iter().map(|c| c.iter().sum::<f64>() / n).collect();
    let w = cols
        .iter()
        .zip(&means)
        .map(|(c, m)| c.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0))
        .sum::<f64>()
        / 4.0;
    let grand = means.iter().sum::<f64>() / 4.0;
    let b = n * means.iter().map(|m| (m - grand).powi(2)).sum::<f64>() / 3.0;
    let rhat = (((n - 1.0) / n * w + b / n) / w).sqrt();
    assert!(rhat > 1.1, "R-hat {rhat}");
}

/// N(0, 1) on which the model signals a domain error ("reject") for x > 1.5, recoverable or
/// not.
struct Rejecting {
    fatal: bool,
}

impl LogDensity for Rejecting {
    fn dim(&self) -> usize {
        1
    }
    fn log_density(&self, x: &[f64]) -> Result<f64, DensityError> {
        if x[0] > 1.5 {
            let e = DensityError {
                message: "reject: x is above 1.5".into(),
                location: Some("model.bayes:7:5".into()),
                recoverable: !self.fatal,
            };
            return Err(e);
        }
        Ok(-0.5 * x[0] * x[0])
    }
    fn log_density_grad(&self, x: &[f64], g: &mut [f64]) -> Result<f64, DensityError> {
        g[0] = -x[0];
        self.log_density(x)
    }
}

#[test]
fn density_errors_during_sampling() {
    let stop = AtomicBool::new(false);
    let settings = McmcSettings {
        seed: 4,
        ..McmcSettings::default()
    };
    // Recoverable: the points are rejected (divergences for HMC), sampling goes on, and the
    // draws are the truncated normal on (−∞, 1.5].
    let out = sample(
        &Rejecting { fatal: false },
        &settings,
        &[],
        &no_progress(),
        &stop,
    )
    .unwrap();
    assert!(out.chains.iter().all(|c| c.draws.iter().all(|&x| x <= 1.5)));
    assert!(out.chains.iter().map(|c| c.divergences).sum::<usize>() > 0);
    // Truncated normal moments: with λ = φ(b)/Φ(b), mean −λ and variance 1 − bλ − λ².
    let b: f64 = 1.5;
    let lambda = (-0.5 * b * b).exp()
        / (2.0 * std::f64::consts::PI).sqrt()
        / (0.5 * libm::erfc(-b / std::f64::consts::SQRT_2));
    let (mean, var) = (-lambda, 1.0 - b * lambda - lambda * lambda);
    check_scalar(&column(&out, 0), mean, var, 0);
    let mh = sample(
        &Rejecting { fatal: false },
        &McmcSettings {
            seed: 4,
            ..McmcSettings::mh_defaults(1)
        },
        &[],
        &no_progress(),
        &stop,
    )
    .unwrap();
    assert!(mh.chains.iter().all(|c| c.draws.iter().all(|&x| x <= 1.5)));
    check_scalar(&column(&mh, 0), mean, var, 0);
    // Unrecoverable: the run stops with the error and its model location.
    for settings in [settings.clone(), McmcSettings::mh_defaults(1)] {
        let inits = vec![vec![0.0]; 4];
        let err = sample(
            &Rejecting { fatal: true },
            &settings,
            &inits,
            &no_progress(),
            &stop,
        )
        .unwrap_err();
        assert!(matches!(err, McmcError::Density { .. }), "{err:?}");
        assert!(err.to_string().contains("model.bayes:7:5"), "{err}");
    }
}

/// A user-supplied inverse metric is used as given when there is no warmup: with the exact
/// variances of the 5-d target the sampler is efficient from the first iteration.
#[test]
fn user_inverse_metric_without_warmup() {
    let target = spec_gaussian_5d();
    let var: Vec<f64> = (0..5).map(|i| target.cov(i, i)).collect();
    let settings = McmcSettings {
        seed: 2,
        warmup: 0,
        samples: 2000,
        inv_metric: Some(var.clone()),
        metric: bayesc::inference::mcmc::MetricChoice::Diag,
        ..McmcSettings::default()
    };
    let inits: Vec<Vec<f64>> = vec![target.mean.clone(); 4];
    let out = sample(
        &target,
        &settings,
        &inits,
        &no_progress(),
        &AtomicBool::new(false),
    )
    .unwrap();
    for c in &out.chains {
        assert_eq!(c.inv_metric, var);
        let max = *c.stats.treedepth.iter().max().unwrap();
        assert!(max <= 6, "max depth {max}");
    }
    check_moments(&out, &target.mean, &var);
    let bad = McmcSettings {
        inv_metric: Some(vec![1.0, -1.0, 1.0, 1.0, 1.0]),
        ..McmcSettings::default()
    };
    let err = sample(&target, &bad, &[], &no_progress(), &AtomicBool::new(false)).unwrap_err();
    assert!(matches!(err, McmcError::InvalidSettings(_)));
}

/// Jitter draws ε uniformly in ε̄·[1 − j, 1 + j] (`specs/nuts.md` §2.2); static HMC with the
/// default integration time takes max(1, ⌊2π/ε̄⌋) steps of the adapted ε̄ (§7).
#[test]
fn jitter_and_static_integration_time() {
    let stop = AtomicBool::new(false);
    let settings = McmcSettings {
        seed: 6,
        warmup: 300,
        samples: 300,
        jitter: 0.5,
        ..McmcSettings::default()
    };
    let out = sample(&IidNormal(3), &settings, &[], &no_progress(), &stop).unwrap();
    for c in &out.chains {
        let eps = c.step_size;
        assert!(
            c.stats
                .stepsize
                .iter()
                .all(|&e| e >= 0.5 * eps && e <= 1.5 * eps)
        );
        let (lo, hi) = c
            .stats
            .stepsize
            .iter()
            .fold((f64::MAX, 0.0f64), |(a, b), &e| (a.min(e), b.max(e)));
        assert!(
            lo < 0.6 * eps && hi > 1.4 * eps,
            "jitter range {lo}..{hi} for {eps}"
        );
    }
    let settings = McmcSettings {
        method: Method::StaticHmc { n_leapfrog: None },
        seed: 6,
        warmup: 300,
        samples: 100,
        ..McmcSettings::default()
    };
    let out = sample(&IidNormal(3), &settings, &[], &no_progress(), &stop).unwrap();
    for c in &out.chains {
        let steps = (2.0 * std::f64::consts::PI / c.step_size).floor().max(1.0) as u32;
        assert!(c.stats.stepsize.iter().all(|&e| e == c.step_size));
        assert!(c.stats.n_leapfrog.iter().all(|&n| n == steps), "{steps}");
    }
}

/// A higher adapt_delta gives a smaller step size, and dual averaging reaches the new target
/// during the terminal buffer (`specs/nuts.md` §5.2).
#[test]
fn adapt_delta_controls_the_step_size() {
    let target = spec_gaussian_5d();
    let run = |delta: f64| {
        let settings = McmcSettings {
            seed: 12,
            adapt_delta: delta,
            save_warmup: true,
            ..McmcSettings::default()
        };
        sample(
            &target,
            &settings,
            &[],
            &no_progress(),
            &AtomicBool::new(false),
        )
        .unwrap()
    };
    let (low, high) = (run(0.8), run(0.95));
    for (out, delta) in [(&low, 0.8), (&high, 0.95)] {
        let terminal = post_warmup_mean(out, |c| c.warmup_stats.accept_stat[950..].to_vec());
        assert!(
            (terminal - delta).abs() < 0.05,
            "δ = {delta}: terminal accept_stat {terminal}"
        );
        let accept = post_warmup_mean(out, |c| c.stats.accept_stat.clone());
        assert!(
            accept > delta - 0.02 && accept < 1.0,
            "δ = {delta}: accept_stat {accept}"
        );
    }
    let eps = |o: &McmcOutput| o.chains.iter().map(|c| c.step_size).sum::<f64>() / 4.0;
    assert!(
        eps(&high) < 0.9 * eps(&low),
        "{} vs {}",
        eps(&high),
        eps(&low)
    );
}

/// A model without parameters (d = 0) samples empty rows without panicking.
#[test]
fn zero_dimensional_model() {
    for method in [
        Method::Nuts,
        Method::StaticHmc { n_leapfrog: None },
        Method::Mh,
    ] {
        let settings = McmcSettings {
            method,
            chains: 2,
            warmup: 30,
            samples: 10,
            ..McmcSettings::default()
        };
        let out = sample(
            &IidNormal(0),
            &settings,
            &[],
            &no_progress(),
            &AtomicBool::new(false),
        )
        .unwrap();
        assert_eq!(out.dim, 0);
        for c in &out.chains {
            assert!(c.draws.is_empty());
            assert_eq!(c.stats.len(), 10);
            assert!(c.stats.lp.iter().all(|&lp| lp == 0.0));
        }
    }
}

#[test]
fn auto_metric_is_dense_up_to_16_dimensions() {
    use bayesc::inference::mcmc::{AUTO_DENSE_MAX_DIM, MetricChoice};
    let auto = McmcSettings::default();
    assert_eq!(auto.metric, MetricChoice::Auto);
    assert!(auto.dense(1) && auto.dense(AUTO_DENSE_MAX_DIM));
    assert!(!auto.dense(AUTO_DENSE_MAX_DIM + 1));
    let diag = McmcSettings {
        metric: MetricChoice::Diag,
        ..McmcSettings::default()
    };
    assert!(!diag.dense(2));
    let dense = McmcSettings {
        metric: MetricChoice::Dense,
        ..McmcSettings::default()
    };
    assert!(dense.dense(100));
    // the chains report the metric they used
    let target = spec_gaussian_5d();
    let settings = McmcSettings {
        seed: 3,
        chains: 1,
        warmup: 200,
        samples: 100,
        ..McmcSettings::default()
    };
    let out = sample(
        &target,
        &settings,
        &[],
        &no_progress(),
        &AtomicBool::new(false),
    )
    .unwrap();
    assert!(out.chains[0].dense);
    assert_eq!(out.chains[0].inv_metric.len(), 25);
}
