//! Minibatch IVON, VOGN and QBVI on the diabetes BNN (tests/fixtures/bnn_diabetes.bayes: H = 50,
//! d = 602; ../shared/data/bnn/, standardised y): the test RMSE of the posterior-predictive
//! mean must beat the prior predictive's (≈ 1, the sd of standardised y) and come within 0.15
//! of minibatch QNVB's 0.709 (tests/minibatch.rs); QBVI's must be within 0.05 of 0.713 (issue
//! 10). The IVON and VOGN fits are slow (602-parameter fits and 1000 predictive draws each): run
//! them with `cargo test --release --test vi_survey_bnn -- --ignored --nocapture`.

mod common;

/// Fits the diabetes BNN by `method` on batches of 64 rows (seed 1, random start), predicts
/// the test rows and returns the RMSE of the predictive mean.
fn test_rmse(method: &str) -> f64 {
    let data = common::shared_data("bnn");
    let dir = tempfile::tempdir().unwrap();
    let fit = dir.path().join("fit.json");
    let pred = dir.path().join("pred.csv");
    let bin = env!("CARGO_BIN_EXE_bayesc");
    let model = common::root().join("tests/fixtures/bnn_diabetes.bayes");
    let start = std::time::Instant::now();
    let st = std::process::Command::new(bin)
        .arg("fit")
        .arg(&model)
        .arg("--data")
        .arg(data.join("diabetes_train.csv"))
        .args([
            "--method",
            method,
            "--batch-size",
            "64",
            "--seed",
            "1",
            "--random-init",
            "--max-iter",
            "5000",
        ])
        .arg("--save-fit")
        .arg(&fit)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&st.stdout).to_string();
    assert!(
        st.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let seconds = start.elapsed().as_secs_f64();
    let st = std::process::Command::new(bin)
        .arg("predict")
        .arg(&model)
        .arg("--fit")
        .arg(&fit)
        .arg("--data")
        .arg(data.join("diabetes_test.csv"))
        .arg("-o")
        .arg(&pred)
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let y: Vec<f64> = std::fs::read_to_string(data.join("diabetes_test.csv"))
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.rsplit(',').next().unwrap().parse().unwrap())
        .collect();
    let text = std::fs::read_to_string(&pred).unwrap();
    let mean: std::collections::HashMap<String, f64> = text
        .lines()
        .skip(1)
        .map(|l| {
            let mut f = l.split(',');
            (
                f.next().unwrap().to_string(),
                f.next().unwrap().parse().unwrap(),
            )
        })
        .collect();
    let mse = (0..y.len())
        .map(|i| (mean[&format!("y_pred[{}]", i + 1)] - y[i]).powi(2))
        .sum::<f64>()
        / y.len() as f64;
    let rmse = mse.sqrt();
    let stop = out
        .lines()
        .filter(|l| l.contains("converged") || l.contains("iteration"))
        .collect::<Vec<_>>()
        .join(" | ");
    eprintln!("{method}: test RMSE {rmse:.3}, fit {seconds:.1} s wall; {stop}");
    rmse
}

#[test]
#[ignore]
fn diabetes_bnn_minibatch_ivon_test_rmse() {
    let rmse = test_rmse("ivon");
    assert!(
        rmse < 1.0 && (rmse - 0.709).abs() < 0.15,
        "test RMSE {rmse}"
    );
}

#[test]
#[ignore]
fn diabetes_bnn_minibatch_vogn_test_rmse() {
    let rmse = test_rmse("vogn");
    assert!(
        rmse < 1.0 && (rmse - 0.709).abs() < 0.15,
        "test RMSE {rmse}"
    );
}

/// Issue 10's bar for diagonal QBVI: test RMSE within 0.05 of NumPyro SVI's 0.713. At d = 602
/// QBVI's default is the diagonal family with the gradient (Bonnet/Price) estimator; measured
/// (seed 1, M = 64, random start): 0.707 after 580 iterations, 0.20 s of fitting (seeds 2 and 3:
/// 0.704, 0.705). Not ignored: about a second in all.
#[test]
fn diabetes_bnn_minibatch_qbvi_test_rmse() {
    let rmse = test_rmse("qbvi");
    assert!((rmse - 0.713).abs() < 0.05, "test RMSE {rmse}");
}

/// The paper's values-only estimator (`--estimator score`) on this network from the random
/// start: step × Var(L − log q)/N_s ≈ 10³ at the first iterations (M = 64), which the fit's note
/// names. Until the lagged control variates followed the batch (`inference::vi::BatchAnchor`)
/// the precision update blew up and q collapsed to a point (every sd ≈ 1e-15, test RMSE 6.2);
/// now it recovers and converges (measured: 639 iterations, test RMSE 0.723, NumPyro 0.713).
#[test]
#[ignore]
fn diabetes_bnn_minibatch_diagonal_qbvi_score_estimator_recovers_from_its_noisy_start() {
    let data = common::shared_data("bnn");
    let model = common::root().join("tests/fixtures/bnn_diabetes.bayes");
    let st = std::process::Command::new(env!("CARGO_BIN_EXE_bayesc"))
        .arg("fit")
        .arg(&model)
        .arg("--data")
        .arg(data.join("diabetes_train.csv"))
        .args([
            "--method",
            "qbvi",
            "--diagonal",
            "--estimator",
            "score",
            "--batch-size",
            "64",
            "--seed",
            "1",
            "--random-init",
            "--draws",
            "100",
        ])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&st.stdout).to_string();
    assert!(st.status.success(), "{out}");
    assert!(out.contains("\nconverged"), "{out}");
    assert!(
        out.contains("the score-function gradient was too noisy for the step size"),
        "{out}"
    );
    assert!(!out.contains("collapsed to a point"), "{out}");
}

/// `bayesc fit` of the diabetes BNN by `method` on batches of 64 rows (seed 1, random start,
/// 100 draws): its standard output.
fn fit_output(method: &str) -> String {
    let data = common::shared_data("bnn");
    let model = common::root().join("tests/fixtures/bnn_diabetes.bayes");
    let st = std::process::Command::new(env!("CARGO_BIN_EXE_bayesc"))
        .arg("fit")
        .arg(&model)
        .arg("--data")
        .arg(data.join("diabetes_train.csv"))
        .args([
            "--method",
            method,
            "--batch-size",
            "64",
            "--seed",
            "1",
            "--random-init",
            "--draws",
            "100",
        ])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&st.stdout).to_string();
    assert!(
        st.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&st.stderr)
    );
    out
}

/// The diagonal stationarity check of a large mean-field fit (`fit::diagonal_step`, d = 602):
/// BBB's exit rule fires after 2820 iterations with its mean 0.22 curvature sds from the ELBO's
/// optimum in RMS (measured; half the step gains 3–5 nats of ELBO), so the fit is not called
/// converged, and the advice names the methods that reach it here; QBVI's fit (RMS 0.03) is.
/// About 2 s in all.
#[test]
fn diabetes_bnn_bbb_short_of_the_optimum_is_not_called_converged_and_qbvi_is() {
    let out = fit_output("bbb");
    assert!(!out.contains("\nconverged"), "{out}");
    let line = out
        .lines()
        .find(|l| l.contains("not converged"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(line.contains("not at the ELBO's optimum"), "{line}");
    assert!(line.contains("over the 602 coordinates"), "{line}");
    assert!(line.contains("use --method qnvb or qbvi"), "{line}");
    // the RMS step quoted: between the bar and twice it
    let rms: f64 = line
        .split("would move it by ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert!(rms > 0.15 && rms < 0.3, "{rms}");
    let out = fit_output("qbvi");
    assert!(out.contains("\nconverged: the exit rule fired"), "{out}");
}
