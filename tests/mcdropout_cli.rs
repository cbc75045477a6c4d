//! `bayesc fit --method mcdropout` says what it did when that is not training, and refuses the
//! flags that mean nothing for it (fresh-user findings, session 21).

mod common;

use std::process::{Command, Output};

fn fit(model: &str, extra: &[&str]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m.bayes");
    let d = dir.path().join("d.json");
    std::fs::write(&m, model).unwrap();
    std::fs::write(
        &d,
        r#"{"N": 4, "x": [1.0, 2.0, 3.0, 4.0], "y": [1.1, 2.3, 2.9, 4.2]}"#,
    )
    .unwrap();
    Command::new(env!("CARGO_BIN_EXE_bayesc"))
        .arg("fit")
        .arg(&m)
        .arg("--data")
        .arg(&d)
        .args(["--method", "mcdropout", "--seed", "1", "-q"])
        .args(extra)
        .output()
        .unwrap()
}

/// With `@dropout` on b and `x / b` in the likelihood, every masked b = 0 makes the log density
/// -inf: the objective never became finite and the weights stayed at their start. It said
/// "training finished … smoothed training objective = -inf".
#[test]
fn an_objective_that_is_never_finite_is_not_called_training() {
    let out = fit(
        "data { int N; vector[N] x; vector[N] y; }\n\
         parameters { real a; @dropout(0.3) real b; }\n\
         model { a ~ normal(0, 10); b ~ normal(1, 10); y ~ normal(a + x / b, 1); }\n",
        &[],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("WARNING: not trained:"), "{text}");
    assert!(!text.contains("training finished"), "{text}");
}

/// The same data with the dropout site on a weight that may be 0 trains as before.
#[test]
fn a_finite_objective_still_finishes_training() {
    let out = fit(
        "data { int N; vector[N] x; vector[N] y; }\n\
         parameters { real a; @dropout(0.3) real b; }\n\
         model { a ~ normal(0, 10); b ~ normal(1, 10); y ~ normal(a + x * b, 1); }\n",
        &[],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("training finished:"), "{text}");
}

/// `--elbo-output` and `--psis-resample` were accepted and did nothing: MC dropout has no ELBO
/// and no density q to weigh its draws by.
#[test]
fn flags_without_meaning_for_mc_dropout_are_refused() {
    let model = "data { int N; vector[N] x; vector[N] y; }\n\
                 parameters { real a; @dropout(0.3) real b; }\n\
                 model { a ~ normal(0, 10); b ~ normal(1, 10); y ~ normal(a + x * b, 1); }\n";
    let dir = tempfile::tempdir().unwrap();
    let elbo = dir.path().join("elbo.csv");
    let out = fit(model, &["--elbo-output", elbo.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("--elbo-output: MC dropout has no ELBO"),
        "{err}"
    );
    let out = fit(model, &["--psis-resample"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("--psis-resample: MC dropout's draws"), "{err}");
}

/// An untrained fit is saved as not converged, so `predict` warns before using it (it was saved
/// with `"converged": true`: fresh-user finding, session 21).
#[test]
fn an_untrained_fit_is_saved_as_not_converged() {
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("fit.json");
    let out = fit(
        "data { int N; vector[N] x; vector[N] y; }\n\
         parameters { real a; @dropout(0.3) real b; }\n\
         model { a ~ normal(0, 10); b ~ normal(1, 10); y ~ normal(a + x / b, 1); }\n",
        &["--save-fit", saved.to_str().unwrap()],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    assert_eq!(json["converged"], serde_json::Value::Bool(false), "{json}");
    assert!(
        json["not_converged_because"]
            .as_str()
            .is_some_and(|w| w.contains("were not trained")),
        "{json}"
    );
}
