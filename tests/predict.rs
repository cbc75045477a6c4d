//! Saved fits and `bayesc predict`: a round trip on the labour model (predicted probabilities
//! against the posterior computed directly from the fitted draws), and the refusals (a fit from
//! another model, corrupt JSON, missing data).

mod common;

use std::process::{Command, Output};

use bayesc::fit::{self, FitOptions, Method, Monitor};
use bayesc::predict::{self, SavedFit};

fn bayesc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bayesc"))
        .args(args)
        .current_dir(common::root())
        .output()
        .expect("the bayesc binary runs")
}

/// Reads the labour CSV's covariate columns k5 … inc (7 per row).
fn labour_covariates() -> Vec<[f64; 7]> {
    let text = std::fs::read_to_string(common::root().join("examples/labour/labour.csv")).unwrap();
    text.lines()
        .skip(1)
        .map(|l| {
            let f: Vec<f64> = l.split(',').map(|x| x.parse().unwrap()).collect();
            [f[1], f[2], f[3], f[4], f[5], f[6], f[7]]
        })
        .collect()
}

#[test]
fn labour_round_trip_matches_the_posterior_computed_directly() {
    let model = common::compile(
        "examples/labour/experiment.bayes",
        &["examples/labour/labour.csv"],
    );
    let stop = std::sync::atomic::AtomicBool::new(false);
    let monitor = Monitor {
        on_progress: &|_| {},
        stop: &stop,
    };
    let mut options = FitOptions::new(Method::Qbvi, 11);
    options.vi_draws = 400;
    let result = fit::fit(&model, &options, &monitor).unwrap();
    let text =
        std::fs::read_to_string(common::root().join("examples/labour/experiment.bayes")).unwrap();
    let saved = SavedFit::from_fit(&model, "experiment.bayes", &text, &result);
    assert_eq!(saved.draws.len(), 400);
    assert_eq!(saved.parameter_names[0], "alpha");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fit.json");
    saved.save(&path).unwrap();
    let loaded = SavedFit::load(&path).unwrap();
    // serde_json parses floats to within an ulp or so (no `float_roundtrip` feature).
    assert_eq!(loaded.parameter_names, saved.parameter_names);
    assert_eq!(loaded.model_hash, saved.model_hash);
    let worst = loaded
        .draws
        .iter()
        .flatten()
        .zip(saved.draws.iter().flatten())
        .map(|(a, b)| ((a - b) / b.abs().max(1e-300)).abs())
        .fold(0.0, f64::max);
    assert!(worst < 1e-15, "relative round-trip error {worst}");
    loaded
        .check_model("fit.json", "experiment.bayes", &text)
        .unwrap();

    let prediction = predict::predict(&model, &loaded, 5).unwrap();
    assert_eq!(prediction.gq_note, None);
    let rows = prediction.rows;
    assert!(rows.iter().all(|r| r.draws == 400));
    let x = labour_covariates();
    // Direct: mean over draws of inv_logit(alpha + x·beta), from the fitted parameter draws.
    for n in [0usize, 1, 200, 752] {
        let mut probs: Vec<f64> = saved
            .draws
            .iter()
            .map(|d| {
                let eta = d[0] + (0..7).map(|j| d[1 + j] * x[n][j]).sum::<f64>();
                1.0 / (1.0 + (-eta).exp())
            })
            .collect();
        let mean = probs.iter().sum::<f64>() / probs.len() as f64;
        let row = rows
            .iter()
            .find(|r| r.name == format!("y_hat[{}]", n + 1))
            .unwrap();
        assert!(
            (row.mean - mean).abs() < 1e-9,
            "{}: {} vs {mean}",
            row.name,
            row.mean
        );
        probs.sort_by(f64::total_cmp);
        let q95 = bayesc::diagnostics::quantile::quantile_sorted(&probs, 0.95);
        assert!((row.q95 - q95).abs() < 1e-9);
        assert!(row.q5 < row.q50 && row.q50 < row.q95 && row.sd > 0.0);
    }
    assert_eq!(rows.len(), 2 * 753);
}

#[test]
fn cli_save_fit_then_predict_on_new_rows() {
    let dir = tempfile::tempdir().unwrap();
    let fit_path = dir.path().join("fit.json");
    let pred_path = dir.path().join("pred.csv");
    let new_data = dir.path().join("new.csv");
    // The first three rows of labour.csv as "new" data: N = 3 comes from the CSV.
    let text = std::fs::read_to_string(common::root().join("examples/labour/labour.csv")).unwrap();
    std::fs::write(
        &new_data,
        text.lines().take(4).collect::<Vec<_>>().join("\n"),
    )
    .unwrap();
    let o = bayesc(&[
        "fit",
        "examples/labour/experiment.bayes",
        "--data",
        "examples/labour/labour.csv",
        "--seed",
        "3",
        "--draws",
        "200",
        "-q",
        "--save-fit",
        fit_path.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = bayesc(&[
        "predict",
        "examples/labour/experiment.bayes",
        "--fit",
        fit_path.to_str().unwrap(),
        "--data",
        new_data.to_str().unwrap(),
        "--output",
        pred_path.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let csv = std::fs::read_to_string(&pred_path).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "name,mean,sd,q5,q50,q95,draws");
    assert_eq!(lines.len(), 1 + 6, "{csv}");
    assert!(lines[4].starts_with("y_hat[1],"));
    let p: f64 = lines[4].split(',').nth(1).unwrap().parse().unwrap();
    assert!(p > 0.0 && p < 1.0);

    // A fit made with another model is refused with a clear message.
    let o = bayesc(&[
        "predict",
        "examples/labour/experiment_mle.bayes",
        "--fit",
        fit_path.to_str().unwrap(),
        "--data",
        new_data.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("was made with a different model"), "{err}");

    // Missing data: a usage error naming the flag.
    let o = bayesc(&[
        "predict",
        "examples/labour/experiment.bayes",
        "--fit",
        fit_path.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--data"));

    // Corrupt JSON.
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"format\": \"bayesc-fit-1\", \"draws\": [[1,").unwrap();
    let o = bayesc(&[
        "predict",
        "examples/labour/experiment.bayes",
        "--fit",
        bad.to_str().unwrap(),
        "--data",
        new_data.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("not a bayesc fit"), "{err}");
}

#[test]
fn evaluate_refuses_models_without_the_per_row_convention_and_bad_splits() {
    // No `--outcome` and no `// @outcome` comment: a usage error.
    let o = bayesc(&[
        "evaluate",
        "examples/labour/model.bayes",
        "--data",
        "examples/labour/labour.csv",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("// @outcome NAME"));
    let o = bayesc(&[
        "evaluate",
        "examples/labour/model.bayes",
        "--data",
        "examples/labour/labour.csv",
        "--outcome",
        "lfp",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("`log_lik[n]`") && err.contains("`y_hat[n]`"),
        "{err}"
    );
    let o = bayesc(&[
        "evaluate",
        "examples/labour/experiment.bayes",
        "--data",
        "examples/labour/labour.csv",
        "--outcome",
        "lfp",
        "--split",
        "1.5",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("must be in (0, 1)"));
    // An outcome that is neither data nor a generated quantity.
    let o = bayesc(&[
        "evaluate",
        "examples/labour/experiment.bayes",
        "--data",
        "examples/labour/labour.csv",
        "--outcome",
        "nope",
        "--split-seed",
        "1",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("`nope` is neither"));
}

/// The note about a missing outcome is printed only when the failing statement reads the
/// outcome (fresh-user finding: a generated quantity failing for a domain error was blamed on
/// the missing outcome). The first failure's message and place are named either way.
#[test]
fn the_missing_outcome_is_blamed_only_for_failures_that_read_it() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("m.bayes");
    std::fs::write(
        &model,
        "// @outcome y\n\
         data { int N; vector[N] x; vector[N] y; }\n\
         parameters { real a; real<lower=0> s; }\n\
         model { a ~ normal(0, 1); s ~ exponential(1); y ~ normal(a + x, s); }\n\
         generated quantities {\n\
         \x20 vector[N] y_hat;\n\
         \x20 int flag = bernoulli_rng(x[1] / 10);\n\
         \x20 for (n in 1:N) y_hat[n] = normal_rng(a + x[n], s);\n\
         }\n",
    )
    .unwrap();
    let data = dir.path().join("d.csv");
    std::fs::write(&data, "x,y\n1,1.1\n2,2.3\n3,2.9\n").unwrap();
    let fit_path = dir.path().join("fit.json");
    let m = model.to_str().unwrap();
    let o = bayesc(&[
        "fit",
        m,
        "--data",
        data.to_str().unwrap(),
        "--seed",
        "1",
        "--draws",
        "50",
        "-q",
        "--save-fit",
        fit_path.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // new rows without `y`, where bernoulli_rng(4) fails: a domain error, not the outcome
    let new = dir.path().join("new.csv");
    std::fs::write(&new, "x\n40\n50\n").unwrap();
    let o = bayesc(&[
        "predict",
        m,
        "--fit",
        fit_path.to_str().unwrap(),
        "--data",
        new.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(
        err.contains("bernoulli_rng: Probability parameter is 4"),
        "{err}"
    );
    assert!(
        err.contains("m.bayes:7:"),
        "the first failure's place: {err}"
    );
    assert!(!err.contains("has no `y` column"), "{err}");

    // the rule itself: the statement at the location reads the outcome
    let text = "data { vector[N] y; }\nlog_lik[n] = normal_lpdf(y[n] | mu, s);\nflag = bernoulli_rng(p);\nyy = 1;\n";
    let cause = |loc: &str| predict::outcome_is_cause("msg", Some(loc), text, "y");
    assert!(cause("m.bayes:2:14, where n = 1"));
    assert!(!cause("m.bayes:3:8"));
    assert!(!cause("m.bayes:4:1"), "`yy` is not `y`");
    // without a location, a NaN in the message
    assert!(predict::outcome_is_cause(
        "Random variable is NaN",
        None,
        text,
        "y"
    ));
    assert!(!predict::outcome_is_cause(
        "Probability parameter is 4",
        None,
        text,
        "y"
    ));
}

/// New data without the outcome column and no `--outcome` (nor `// @outcome`): the error points
/// to the flag that predicts it, `--outcome y`; a `--outcome` naming no data variable is a usage
/// error that lists them, not silently ignored (fresh-user finding, session 20).
#[test]
fn predict_without_the_outcome_points_to_the_outcome_flag() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("reg.bayes");
    std::fs::write(
        &model,
        "data { int<lower=0> N; vector[N] x; vector[N] y; }\n\
         parameters { real a; real b; real<lower=0> sigma; }\n\
         model { a ~ normal(0, 5); b ~ normal(0, 5); sigma ~ exponential(1);\n\
                 y ~ normal(a + b * x, sigma); }\n\
         generated quantities { vector[N] y_hat = a + b * x; }\n",
    )
    .unwrap();
    let train = dir.path().join("train.csv");
    std::fs::write(&train, "x,y\n1,2.1\n2,3.9\n3,6.2\n4,7.8\n5,10.1\n").unwrap();
    let new = dir.path().join("new.csv");
    std::fs::write(&new, "x\n6\n7\n").unwrap();
    let fit = dir.path().join("fit.json");
    let p = |p: &std::path::Path| p.display().to_string();
    let out = bayesc(&[
        "fit",
        &p(&model),
        "--data",
        &p(&train),
        "--method",
        "laplace",
        "--seed",
        "1",
        "-q",
        "--save-fit",
        &p(&fit),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = bayesc(&["predict", &p(&model), "--fit", &p(&fit), "--data", &p(&new)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("`y` (declared `vector[N]`) is not in"),
        "{err}"
    );
    assert!(
        err.contains("if `y` is the outcome to predict, pass `--outcome y`"),
        "{err}"
    );
    // the flag it names works: y_hat is predicted
    let out = bayesc(&[
        "predict",
        &p(&model),
        "--fit",
        &p(&fit),
        "--data",
        &p(&new),
        "--outcome",
        "y",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("y_hat[2],"));
    let out = bayesc(&[
        "predict",
        &p(&model),
        "--fit",
        &p(&fit),
        "--data",
        &p(&new),
        "--outcome",
        "z",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("`--outcome z`: the model has no data variable `z`")
            && err.contains("`N`, `x`, `y`"),
        "{err}"
    );
}

/// New data without the outcome, with `y_hat[n]` and `log_lik[n]` assigned in one loop (the
/// fresh-user model of session 20): `y_hat` is predicted from every draw and `log_lik`, which
/// reads the missing `y`, is left out, exit 0 (it failed at every draw and made `y_hat` NaN,
/// exit 3, while saying that log_lik was left out). A quantity assigned from `y` in one
/// element only is left out whole, never written with a placeholder value.
#[test]
fn predict_without_the_outcome_keeps_quantities_beside_log_lik_in_one_loop() {
    let dir = tempfile::tempdir().unwrap();
    let p = |p: &std::path::Path| p.display().to_string();
    let head = "data { int N; vector[N] x; vector[N] y; }\n\
         parameters { real a; real b; real<lower=0> sigma; }\n\
         model { a ~ normal(0,5); b ~ normal(0,5); sigma ~ exponential(1); y ~ normal(a + b*x, sigma); }\n";
    let train = dir.path().join("reg.csv");
    let mut rows = String::from("x,y\n");
    for i in 0..20 {
        let x = i as f64 / 4.0;
        rows.push_str(&format!("{x},{}\n", 1.0 + 2.0 * x + 0.3 * (i as f64).sin()));
    }
    std::fs::write(&train, rows).unwrap();
    let new = dir.path().join("new.csv");
    std::fs::write(&new, "x\n0\n1\n2\n3\n4\n").unwrap();
    let run = |name: &str, gq: &str| {
        let model = dir.path().join(format!("{name}.bayes"));
        std::fs::write(&model, format!("{head}{gq}")).unwrap();
        let fit = dir.path().join(format!("{name}_fit.json"));
        let o = bayesc(&[
            "fit",
            &p(&model),
            "--data",
            &p(&train),
            "--seed",
            "1",
            "-q",
            "--save-fit",
            &p(&fit),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        bayesc(&[
            "predict",
            &p(&model),
            "--fit",
            &p(&fit),
            "--data",
            &p(&new),
            "--outcome",
            "y",
        ])
    };
    let o = run(
        "reg",
        "generated quantities { vector[N] y_hat; vector[N] log_lik;\n\
         \x20 for (n in 1:N) { y_hat[n] = normal_rng(a + b*x[n], sigma); log_lik[n] = normal_lpdf(y[n] | a + b*x[n], sigma); } }\n",
    );
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    assert!(!err.contains("ERROR") && !err.contains("failed"), "{err}");
    assert!(
        err.contains("left out, as computed from `y`: `log_lik`"),
        "{err}"
    );
    assert!(!out.contains("log_lik"), "{out}");
    let table: Vec<Vec<&str>> = out
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    assert_eq!(table.len(), 5, "{out}");
    for (k, r) in table.iter().enumerate() {
        assert_eq!(r[0], format!("y_hat[{}]", k + 1));
        let mean: f64 = r[1].parse().unwrap();
        // the data follow y = 1 + 2x with noise of sd ~0.2
        let line = 1.0 + 2.0 * k as f64;
        assert!((mean - line).abs() < 0.3, "y_hat[{}] = {mean}", k + 1);
        assert_eq!(r[6], "1000", "every draw predicts it: {out}");
    }
    // `y_hat[2]` copied from the missing `y`: all of y_hat is left out, `mu` is kept
    let o = run(
        "partial",
        "generated quantities { vector[N] mu; vector[N] y_hat;\n\
         \x20 for (n in 1:N) { mu[n] = a + b*x[n]; if (n == 2) y_hat[n] = y[n]; else y_hat[n] = normal_rng(mu[n], sigma); } }\n",
    );
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    assert!(
        err.contains("left out, as computed from `y`: `y_hat`"),
        "{err}"
    );
    assert!(!out.contains("y_hat") && out.contains("mu[5],"), "{out}");
}
