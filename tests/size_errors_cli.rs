//! Size errors end to end through the `bayesc` binary (session 20, tester findings): a
//! multivariate family's arguments of known sizes that cannot fit are a check error at the
//! argument; independent size errors, some known from literal sizes and some only from the
//! data (or from `transformed data`), come in one run; a multivariate size mismatch known only
//! at run time is an error of the model naming the sizes and the statement, never an
//! "initialisation failed" after 100 random starts, and never a panic.

use std::process::{Command, Output};

fn run(dir: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bayesc"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run bayesc")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A folder holding `files` (name, text).
fn folder(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).expect("write");
    }
    dir
}

/// Exit status 1, no panic, every `wanted` piece in stderr; returns stderr.
fn fails_with(o: &Output, wanted: &[&str]) -> String {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(1), "stderr:\n{err}");
    assert!(!err.contains("panicked"), "{err}");
    for w in wanted {
        assert!(err.contains(w), "missing {w:?} in:\n{err}");
    }
    err
}

const MVN: &str = "data {\n  int N;\n  int K;\n  vector[N] y;\n  vector[K] mu;\n  cov_matrix[K] Sigma;\n}\n\
                   parameters { real a; }\nmodel {\n  a ~ normal(0, 1);\n  y ~ multi_normal(mu, Sigma);\n}\n";

#[test]
fn multi_normal_sizes_from_the_data_are_a_check_error() {
    let dir = folder(&[
        ("mvn.bayes", MVN),
        (
            "bad.json",
            r#"{"N": 3, "K": 2, "y": [1, 2, 3], "mu": [0, 0], "Sigma": [[1, 0], [0, 1]]}"#,
        ),
        (
            "good.json",
            r#"{"N": 2, "K": 2, "y": [1, 2], "mu": [0, 0], "Sigma": [[1, 0], [0, 1]]}"#,
        ),
    ]);
    let d = dir.path();
    assert_eq!(run(d, &["check", "mvn.bayes"]).status.code(), Some(0));
    assert_eq!(
        run(d, &["check", "mvn.bayes", "--data", "good.json"])
            .status
            .code(),
        Some(0)
    );
    for cmd in [
        vec!["check", "mvn.bayes", "--data", "bad.json"],
        vec!["fit", "mvn.bayes", "--data", "bad.json", "--seed", "1"],
        vec![
            "fit",
            "mvn.bayes",
            "--data",
            "bad.json",
            "--seed",
            "1",
            "--method",
            "nuts",
        ],
    ] {
        let err = fails_with(
            &run(d, &cmd),
            &[
                "error: size mismatch in the arguments of `multi_normal`: `mu` (location \
                 parameter) has `K` = 2 elements but `y` (the variate) has `N` = 3 elements",
                "mvn.bayes:11:3",
                "`Sigma` declared with sizes `K` = 2 × `K` = 2",
                "`y` declared with `N` = 3 elements",
                "`mu` declared with `K` = 2 elements",
                "declare `y` with size `K`",
            ],
        );
        assert!(!err.contains("initialisation failed"), "{err}");
    }
}

#[test]
fn independent_size_errors_come_in_one_run() {
    let dir = folder(&[
        // `Z * c` is known from literal sizes, `X * b` only from K in the data
        (
            "xb.bayes",
            "data {\n  int N;\n  int K;\n  vector[N] y;\n  matrix[N, K] X;\n  matrix[N, 2] Z;\n}\n\
             parameters {\n  vector[2] b;\n  vector[4] c;\n}\n\
             model {\n  b ~ normal(0, 1);\n  c ~ normal(0, 1);\n  y ~ normal(X * b + Z * c, 1);\n}\n",
        ),
        (
            "xb.json",
            r#"{"N": 2, "K": 3, "y": [1, 2], "X": [[1, 2, 3], [4, 5, 6]], "Z": [[1, 2], [3, 4]]}"#,
        ),
        // `b ~ normal(mu, 1)` literal, `y_pos` sized by a count made in transformed data
        (
            "cnt.bayes",
            "data { int N; vector[N] y; }\ntransformed data {\n  int n_pos = 0;\n  \
             for (n in 1:N) if (y[n] > 0) n_pos += 1;\n  \
             vector[n_pos] y_pos = rep_vector(1, n_pos);\n}\n\
             parameters { vector[3] mu; vector[2] b; }\n\
             model {\n  mu ~ normal(0, 1);\n  b ~ normal(mu, 1);\n  y_pos ~ normal(mu, 1);\n}\n",
        ),
        ("cnt.json", r#"{"N": 5, "y": [1, 2, -1, 3, 4]}"#),
    ]);
    let d = dir.path();
    // without the data, only the literal one is known
    let o = run(d, &["check", "xb.bayes"]);
    let err = fails_with(&o, &["size mismatch in `Z * c`"]);
    assert!(!err.contains("`X * b`"), "{err}");
    for cmd in ["check", "fit"] {
        let o = run(d, &[cmd, "xb.bayes", "--data", "xb.json"]);
        let err = fails_with(
            &o,
            &[
                "error: size mismatch in `X * b`: `X` has 3 columns but `b` has 2 rows",
                "error: size mismatch in `Z * c`: `Z` has 2 columns but `c` has 4 rows",
            ],
        );
        assert_eq!(err.matches("error: size mismatch").count(), 2, "{err}");
        let o = run(d, &[cmd, "cnt.bayes", "--data", "cnt.json"]);
        let err = fails_with(
            &o,
            &[
                "error: `b` has size 2 but `mu` has size 3 in the arguments of `normal`",
                "error: size mismatch in the arguments of `normal`: `y_pos` (the variate) has \
                 4 elements but `mu` (location parameter) has 3",
            ],
        );
        assert_eq!(err.matches("error:").count(), 2, "{err}");
    }
}

#[test]
fn a_multivariate_size_mismatch_known_only_at_run_time_is_a_model_error() {
    // `y_all[idx]` has sizes the checker does not follow (a multi-index from the data)
    let dir = folder(&[
        (
            "rt.bayes",
            "data {\n  int N;\n  int K;\n  array[N] int idx;\n  vector[K] y_all;\n  vector[K] mu;\n  \
             cov_matrix[K] Sigma;\n}\nparameters { real a; }\n\
             model {\n  a ~ normal(0, 1);\n  y_all[idx] ~ multi_normal(mu + a, Sigma);\n}\n",
        ),
        (
            "rt.json",
            r#"{"N": 2, "K": 3, "idx": [1, 2], "y_all": [1, 2, 3], "mu": [0, 0, 0],
                "Sigma": [[1, 0, 0], [0, 1, 0], [0, 0, 1]]}"#,
        ),
    ]);
    let d = dir.path();
    assert_eq!(
        run(d, &["check", "rt.bayes", "--data", "rt.json"])
            .status
            .code(),
        Some(0)
    );
    for method in ["qbvi", "nuts", "optimize"] {
        let o = run(
            d,
            &[
                "fit", "rt.bayes", "--data", "rt.json", "--seed", "1", "--method", method,
            ],
        );
        let err = fails_with(
            &o,
            &[
                "the model cannot be evaluated: multi_normal_lpdf: size mismatch: Random \
                 variable has 2 elements but Location parameter has 3 elements",
                "rt.bayes:12:3",
            ],
        );
        assert!(!err.contains("initialisation failed"), "{method}: {err}");
    }
}
