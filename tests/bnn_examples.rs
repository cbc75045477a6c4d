//! The three Bayesian-neural-network examples of issue 10 (examples/digits,
//! examples/bnn_classification, examples/bnn_regression): each model compiles with its committed
//! data, a short minibatch QNVB fit runs, and `predict` scores the test rows with the
//! posterior-predictive metrics. The full runs of the READMEs are `#[ignore]`d checks of the
//! reported accuracy.

mod common;

use std::process::{Command, Output};

fn bayesc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bayesc"))
        .args(args)
        .current_dir(common::root())
        .output()
        .expect("the bayesc binary runs")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The value in the first line whose label (leading words) is `label`.
fn metric(out: &str, label: &str) -> f64 {
    out.lines()
        .find_map(|l| {
            let l = l.trim();
            l.strip_prefix(label)
                .filter(|rest| rest.starts_with(' '))
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or_else(|| panic!("no `{label}` in:\n{out}"))
}

/// Fits `model` on `train` by minibatch QNVB (batch size `m`, at most `iters` iterations),
/// saves the fit and scores `test` with `predict`; returns predict's report.
fn fit_and_predict(model: &str, train: &str, test: &str, m: &str, iters: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let fit = dir.path().join("fit.json");
    let o = bayesc(&[
        "fit",
        model,
        "--data",
        train,
        "--method",
        "qnvb",
        "--batch-size",
        m,
        "--random-init",
        "--seed",
        "1",
        "--max-iter",
        iters,
        "--draws",
        "100",
        "-q",
        "--save-fit",
        fit.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("minibatch:"), "{}", text(&o));
    let pred = dir.path().join("pred.csv");
    let o = bayesc(&[
        "predict",
        model,
        "--fit",
        fit.to_str().unwrap(),
        "--data",
        test,
        "-o",
        pred.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    text(&o)
}

#[test]
fn digits_short_fit_scores_ten_classes() {
    let out = fit_and_predict(
        "examples/digits/model.bayes",
        "examples/digits/digits_train.csv",
        "examples/digits/digits_test.csv",
        "64",
        "100",
    );
    // 450 test rows scored with the multiclass metrics; 100 steps already beat chance (0.1).
    assert!(out.contains("450 new rows"), "{out}");
    let acc = metric(&out, "accuracy (argmax class)");
    assert!(acc > 0.3 && acc <= 1.0, "{out}");
    let brier = metric(&out, "Brier (multiclass)");
    assert!((0.0..2.0).contains(&brier), "{out}");
    assert!(metric(&out, "lppd") < 0.0, "{out}");
}

#[test]
fn moons_short_fit_scores_binary_outcome() {
    let out = fit_and_predict(
        "examples/bnn_classification/model.bayes",
        "examples/bnn_classification/moons_train.csv",
        "examples/bnn_classification/moons_test.csv",
        "50",
        "200",
    );
    assert!(out.contains("500 new rows"), "{out}");
    let acc = metric(&out, "accuracy");
    assert!((0.5..=1.0).contains(&acc), "{out}");
}

#[test]
fn boston_short_fit_scores_continuous_outcome() {
    let out = fit_and_predict(
        "examples/bnn_regression/model.bayes",
        "examples/bnn_regression/boston.csv",
        "examples/bnn_regression/boston.csv",
        "32",
        "200",
    );
    // medv has sd 9.19: a network fitted for 200 steps predicts better than the mean.
    assert!(out.contains("506 new rows"), "{out}");
    let rmse = metric(&out, "RMSE");
    assert!(rmse > 0.0 && rmse < 9.19, "{out}");
}

/// The README's digits run with minibatch QNVB (M = 64, seed 1): issue 10's bar is ≥ 95 % test
/// accuracy; measured 0.978 and ECE 0.035 with 200 draws (N(0, 1) output-weight prior; 0.944 and
/// ECE 0.245 under the old N(0, 1/H)). Checks ≥ 0.95 and ECE < 0.1.
#[test]
#[ignore]
fn digits_readme_run_reaches_95_percent() {
    let out = fit_and_predict(
        "examples/digits/model.bayes",
        "examples/digits/digits_train.csv",
        "examples/digits/digits_test.csv",
        "64",
        "20000",
    );
    assert!(!out.contains("did not converge"), "{out}");
    assert!(metric(&out, "accuracy (argmax class)") >= 0.95, "{out}");
    assert!(metric(&out, "ECE (10 bins, top label)") < 0.1, "{out}");
}

/// The README's two-moons run: ≥ 95 % test accuracy with minibatch QNVB (M = 250, seed 1), from
/// a fit that converged (`predict` warns about one that did not; at M = 50 the fit says not
/// converged since session 17's stationarity check, README "Why M = 250").
#[test]
#[ignore]
fn moons_readme_run_reaches_95_percent() {
    let out = fit_and_predict(
        "examples/bnn_classification/model.bayes",
        "examples/bnn_classification/moons_train.csv",
        "examples/bnn_classification/moons_test.csv",
        "250",
        "20000",
    );
    assert!(!out.contains("did not converge"), "{out}");
    assert!(metric(&out, "accuracy") >= 0.95, "{out}");
}
