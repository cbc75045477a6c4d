//! QNVB on a simulated logistic regression (n = 1000, d = 4, N(0, 5²) prior; specs/qnvb.md
//! §10.3): means against a Laplace + importance-sampling reference posterior.

mod qnvb_common;

use bayesc::diagnostics::psis::psis;
use bayesc::inference::LogDensity;
use bayesc::inference::laplace::{LaplaceSettings, laplace};
use bayesc::inference::qnvb::{QnvbSettings, QnvbStop, fit_qnvb};
use bayesc::inference::rng::stream;
use qnvb_common::Logistic;

/// Posterior mean and sd by self-normalised importance sampling with the Laplace approximation
/// as proposal (S = 8000; k̂ is checked to be small, so the weights are well behaved).
fn reference(model: &Logistic) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let fit = laplace(model, &[0.0; 4], &LaplaceSettings::default()).unwrap();
    let draws = fit.sample(8000, &mut stream(5, 1));
    let lw: Vec<f64> = draws
        .iter()
        .map(|z| model.log_density(z).unwrap() - fit.log_q(z))
        .collect();
    let k = psis(&lw).unwrap().khat;
    assert!(k.passes(0.5), "Laplace proposal k̂ = {k:?}");
    let max = lw.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let w: Vec<f64> = lw.iter().map(|v| (v - max).exp()).collect();
    let wsum: f64 = w.iter().sum();
    let mut mean = vec![0.0; 4];
    let mut sd = vec![0.0; 4];
    for i in 0..4 {
        mean[i] = draws.iter().zip(&w).map(|(z, w)| w * z[i]).sum::<f64>() / wsum;
        let var = draws
            .iter()
            .zip(&w)
            .map(|(z, w)| w * (z[i] - mean[i]).powi(2))
            .sum::<f64>()
            / wsum;
        sd[i] = var.sqrt();
    }
    (mean, sd, fit.mode)
}

#[test]
fn logistic_means_match_reference_posterior() {
    let model = Logistic::simulate(1000, 2024, Some(5.0));
    let (mean, sd, mode) = reference(&model);
    let settings = QnvbSettings {
        seed: 1,
        ..QnvbSettings::default()
    };
    let fit = fit_qnvb(&model, &[0.0; 4], &settings, &mut |_, _| true).unwrap();
    assert_eq!(fit.stop, QnvbStop::Converged);
    assert!((300..=1500).contains(&fit.iterations), "{}", fit.iterations);
    for i in 0..4 {
        let z = (fit.mean[i] - mean[i]) / sd[i];
        assert!(
            z.abs() < 0.1,
            "{i}: qnvb {} ref {} sd {}",
            fit.mean[i],
            mean[i],
            sd[i]
        );
    }
    // mean-field spread ≈ 1/√Λ_ii with Λ the precision at the mode (near-Gaussian posterior)
    let prec = model.information(&mode);
    for i in 0..4 {
        let want = (1.0 / prec[i * 4 + i]).sqrt();
        let got = fit.variance[i].sqrt();
        assert!((got / want - 1.0).abs() < 0.03, "{i}: σ {got} vs {want}");
    }
    // n_e = 8 integrates every quadratic exactly per step: the same optimum (§10.3)
    let fit8 = fit_qnvb(
        &model,
        &[0.0; 4],
        &QnvbSettings {
            n_e: 8,
            ..settings.clone()
        },
        &mut |_, _| true,
    )
    .unwrap();
    for i in 0..4 {
        assert!((fit8.mean[i] - fit.mean[i]).abs() < 0.01 * sd[i]);
        assert!((fit8.variance[i] / fit.variance[i] - 1.0).abs() < 0.01);
    }
    // reproducible
    let again = fit_qnvb(&model, &[0.0; 4], &settings, &mut |_, _| true).unwrap();
    assert_eq!(again, fit);
}
