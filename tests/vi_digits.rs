//! The natural-gradient methods on the 8×8 digits BNN (examples/digits: 64 → 50 tanh → 10
//! softmax, d = 3760, N = 1347 training rows) with their default settings: before the trust
//! region of the mean step and the minibatch step-size rule (src/inference/vi/family.rs,
//! `QbviSettings::effective_step_size_minibatch`), minibatch QBVI reached a test accuracy of
//! 0.524 and NGVI 0.318, below the prior predictive's lppd, and both printed "converged"
//! (docs/bnn_methods.md). Seed 1, random start, as benches/bnn_methods.sh runs them.

mod common;

/// Fits examples/digits by `method` with `flags` (seed 1, random start, 200 draws), predicts the
/// test rows; returns the fit's stdout and (accuracy, lppd per row).
fn fit_and_score(method: &str, flags: &[&str]) -> (String, f64, f64) {
    let dir = tempfile::tempdir().unwrap();
    let fit = dir.path().join("fit.json");
    let pred = dir.path().join("pred.csv");
    let bin = env!("CARGO_BIN_EXE_bayesc");
    let ex = common::root().join("examples/digits");
    let st = std::process::Command::new(bin)
        .arg("fit")
        .arg(ex.join("model.bayes"))
        .arg("--data")
        .arg(ex.join("digits_train.csv"))
        .args(["--method", method])
        .args(flags)
        .args([
            "--random-init",
            "--draws",
            "200",
            "--seed",
            "1",
            "--save-fit",
        ])
        .arg(&fit)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&st.stdout).to_string();
    assert!(
        st.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let st = std::process::Command::new(bin)
        .arg("predict")
        .arg(ex.join("model.bayes"))
        .arg("--fit")
        .arg(&fit)
        .arg("--data")
        .arg(ex.join("digits_test.csv"))
        .arg("-o")
        .arg(&pred)
        .output()
        .unwrap();
    let score = String::from_utf8_lossy(&st.stdout).to_string();
    assert!(st.status.success(), "{score}");
    let value = |key: &str| -> f64 {
        score
            .lines()
            .find(|l| l.trim_start().starts_with(key))
            .and_then(|l| l.split_whitespace().last())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no `{key}` in\n{score}"))
    };
    (out, value("accuracy"), value("lppd per row"))
}

/// Minibatch QBVI at its defaults (M = 64, so β = 0.2/(1347/64 − 1) = 0.0100): measured test
/// accuracy 0.973, lppd −0.150 per row, 2058 iterations (about 6 CPU-s). The prior predictive
/// has accuracy 0.1 and lppd log 0.1 = −2.30 per row; β = 0.005 by hand gave 0.969 and −0.152.
#[test]
fn digits_minibatch_qbvi_at_its_defaults_fits_and_says_so() {
    let (out, accuracy, lppd) = fit_and_score("qbvi", &["--diagonal", "--batch-size", "64"]);
    assert!(
        out.contains("step size = 0.0100 (lowered for the minibatch noise"),
        "{out}"
    );
    assert!(out.lines().any(|l| l.starts_with("converged:")), "{out}");
    assert!(!out.contains("not converged"), "{out}");
    assert!(accuracy > 0.95, "accuracy {accuracy}\n{out}");
    assert!(lppd > -0.25, "lppd per row {lppd}\n{out}");
}

/// Full-batch NGVI (`--diagonal --max-iter 300`, the bench's budget) at its default β = 0.05:
/// measured accuracy 0.918, lppd −0.276 per row, the trust region binding in all 300 steps
/// (the note says so), the iteration cap reached. About 8 CPU-s: run with `-- --ignored`.
#[test]
#[ignore]
fn digits_ngvi_at_its_defaults_beats_the_prior_predictive() {
    let (out, accuracy, lppd) = fit_and_score("ngvi", &["--diagonal", "--max-iter", "300"]);
    assert!(
        out.contains("note: the trust region of the mean step"),
        "{out}"
    );
    assert!(!out.lines().any(|l| l.starts_with("converged:")), "{out}");
    assert!(accuracy > 0.9, "accuracy {accuracy}\n{out}");
    assert!(lppd > -0.4, "lppd per row {lppd}\n{out}");
}

/// The report's check on the real failure: full-batch NGVI on digits as the CLI runs it
/// (`--diagonal --max-iter 300`, seed 1, random start) but without the trust region
/// (`trust_region = ∞`, the behaviour before it) stops by its exit rule with a best smoothed
/// ELBO far below the ELBO estimate at its start, and `GaussianFit::worsened` says so
/// (measured: LB₁ = −22 676.5, best smoothed −120 244.9 after 163 iterations, which the CLI
/// used to print as "converged"); with the default trust region the same fit improves on its
/// start. About 7 CPU-s for the two fits: run with `-- --ignored`.
#[test]
#[ignore]
fn digits_ngvi_without_the_trust_region_ends_below_its_start_and_is_flagged() {
    use bayesc::inference::vi::ngvi::{NgviSettings, fit_ngvi};
    use bayesc::inference::vi::{Control, Covariance, StopReason};
    let model = common::compile(
        "examples/digits/model.bayes",
        &["examples/digits/digits_train.csv"],
    );
    let init =
        bayesc::inference::init::random_init(&model, &mut bayesc::inference::rng::stream(1, 0))
            .unwrap();
    let mut settings = NgviSettings {
        covariance: Covariance::Diagonal,
        trust_region: f64::INFINITY,
        ..NgviSettings::default()
    };
    settings.common.seed = 1;
    settings.common.max_iter = 300;
    let fit = fit_ngvi(&model, &init, &settings, &mut |_| Control::Continue).unwrap();
    assert_eq!(fit.stop, StopReason::ExitRule);
    let (start, end) = fit.worsened().expect("the fit ended below its start");
    assert!((start + 22676.5).abs() < 1.0, "start {start}");
    assert!(end < -100_000.0, "end {end}");
    settings.trust_region = bayesc::inference::vi::MEAN_TRUST_REGION;
    let fit = fit_ngvi(&model, &init, &settings, &mut |_| Control::Continue).unwrap();
    assert_eq!(fit.worsened(), None);
    let (start, end) = fit.elbo_change().unwrap();
    assert!(end > start + 20_000.0, "start {start}, end {end}");
}
