//! Session 21's fresh-user findings, through the CLI: literal outcomes outside their family's
//! support, sizes that differ whatever the data (`N` against `N + 1`), every independent data
//! error in one run, `predict`/`evaluate` checked with their data as `fit` is, counted nouns,
//! size and CSV messages, and plots of a narrow parameter far from 0, of warmup draws only and
//! of an optimize file. Each test fails on the code before the session's fix.

mod common;

use std::path::Path;

/// Writes `files` (name, contents) into a fresh folder, runs `bayesc args` there; returns
/// whether it succeeded and its output.
fn run(files: &[(&str, &str)], args: &[&str]) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    run_in(dir.path(), files, args)
}

fn run_in(dir: &Path, files: &[(&str, &str)], args: &[&str]) -> (bool, String) {
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let o = common::bayesc_in(dir, args);
    (o.status.success(), common::output_text(&o))
}

fn assert_has(text: &str, want: &[&str]) {
    for w in want {
        assert!(text.contains(w), "missing {w:?} in\n{text}");
    }
}

/// The texts of an SVG's `<text>` elements, in order.
fn svg_texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let body = t.split_once('>')?.1;
            Some(body.split_once("</text>")?.0.trim().to_string())
        })
        .collect()
}

#[test]
fn a_literal_outcome_outside_its_support_is_an_error_at_the_literal() {
    let model = "parameters { real<lower=0> lambda; real<lower=0, upper=1> p; }\n\
                 model {\n  3 ~ bernoulli(p);\n  -1 ~ poisson(lambda);\n  2 ~ beta(1, 1);\n  \
                 11 ~ binomial(10, p);\n  1 ~ bernoulli(p);\n  0.5 ~ beta(2, 2);\n  \
                 lambda ~ exponential(1);\n}\n";
    let (ok, text) = run(&[("m.bayes", model)], &["check", "m.bayes"]);
    assert!(!ok, "{text}");
    assert_has(
        &text,
        &[
            "error: the outcome 3 of `~ bernoulli` is outside the family's support: it must be 0 or 1",
            "m.bayes:3:3",
            "error: the outcome -1 of `~ poisson` is outside the family's support: it must be a \
             nonnegative integer",
            "m.bayes:4:3",
            "error: the outcome 2 of `~ beta` is outside the family's support: it must be in the \
             interval [0, 1]",
            "m.bayes:5:3",
            "error: the outcome 11 of `~ binomial` is outside the family's support: it must be an \
             integer from 0 to the number of trials, 10",
        ],
    );
    // the outcomes inside their support are not reported
    assert_eq!(
        text.matches("is outside the family's support").count(),
        4,
        "{text}"
    );
    // nor a call's literal variate
    let call = "parameters { real<lower=0> lambda; }\n\
                model {\n  target += poisson_lpmf(-2 | lambda);\n  target += exponential_lcdf(-2 | lambda);\n  \
                lambda ~ exponential(1);\n}\n";
    let (ok, text) = run(&[("m.bayes", call)], &["check", "m.bayes"]);
    assert!(!ok, "{text}");
    assert_has(
        &text,
        &[
            "error: the outcome -2 of `poisson_lpmf` is outside the family's support: it must be a \
             nonnegative integer",
            "m.bayes:3:26",
        ],
    );
    assert_eq!(text.matches("error:").count(), 1, "{text}");
}

const ORDERED: &str = "data { int N; int K; array[N] int<lower=1, upper=K> y; }\n\
    parameters { ordered[K - 1] c; }\n\
    model {\n  c ~ normal(0, 5);\n  y ~ ordered_logistic(rep_vector(0, SIZE), c);\n}\n";

#[test]
fn sizes_that_differ_whatever_the_data_are_an_error_without_the_data() {
    let model = ORDERED.replace("SIZE", "N + 1");
    let (ok, text) = run(&[("m.bayes", &model)], &["check", "m.bayes"]);
    assert!(!ok, "{text}");
    assert_has(
        &text,
        &[
            "error: size mismatch in the arguments of `ordered_logistic`: `y` (the variate) has \
             `N` elements but `rep_vector(0, N + 1)` (location parameter) has `N + 1` elements, \
             which differ whatever the data are",
            "m.bayes:5:3",
        ],
    );
    // a univariate family's vectorised arguments likewise
    let normal = "data { int N; vector[N] y; }\nparameters { real<lower=0> s; }\n\
                  model {\n  s ~ exponential(1);\n  y ~ normal(rep_vector(0, N - 1), s);\n}\n";
    let (ok, text) = run(&[("m.bayes", normal)], &["check", "m.bayes"]);
    assert!(!ok, "{text}");
    assert_has(
        &text,
        &[
            "error: size mismatch in the arguments of `normal`: `y` (the variate) has `N` elements \
           but `rep_vector(0, N - 1)` (location parameter) has `N - 1` elements, which differ \
           whatever the data are",
        ],
    );
    // N itself, or a size the data may make equal (K), is not reported
    for size in ["N", "K"] {
        let model = ORDERED.replace("SIZE", size);
        let (ok, text) = run(&[("m.bayes", &model)], &["check", "m.bayes"]);
        assert!(ok, "{size}: {text}");
        assert!(text.contains("m.bayes: no errors (0 warnings)"), "{text}");
    }
}

#[test]
fn every_independent_data_error_is_reported_in_one_run() {
    let model = "data { int N; vector[N] x; array[N] int<lower=0, upper=1> y; \
                 real<lower=0> s; array[N] int<lower=0> n; }\n\
                 parameters { real a; }\nmodel { a ~ normal(0, 1); y ~ bernoulli_logit(a + x); }\n";
    let json = r#"{"N": 3, "x": [1, 2], "y": [0, 1, 5], "n": [1, 2, 3]}"#;
    let (ok, text) = run(
        &[("m.bayes", model), ("d.json", json)],
        &["check", "m.bayes", "--data", "d.json"],
    );
    assert!(!ok, "{text}");
    assert_has(
        &text,
        &[
            "error: d.json, key `x`: `x` has 2 elements, but it is declared `vector[N]` with `N` = 3",
            "error: d.json, key `y`, element `y[3]`: 5 is above the upper bound 1 of `y`",
            "error: `s` (declared `real<lower=0>`) is not in d.json",
        ],
    );
    assert_eq!(text.matches("error:").count(), 3, "{text}");
    // an error that follows from another one is not reported: with N not an integer, nothing
    // sized by it
    let json = r#"{"N": 2.5, "x": [1, 2], "y": [0, 1], "n": [1, 2], "s": 1}"#;
    let (ok, text) = run(
        &[("m.bayes", model), ("d.json", json)],
        &["check", "m.bayes", "--data", "d.json"],
    );
    assert!(!ok, "{text}");
    assert_eq!(text.matches("error:").count(), 1, "{text}");
    assert_has(&text, &["`N`"]);
}

/// A size error known from the model (a literal) and one the data reveal (`y` of N = 5 against
/// `vector[2] b`): `fit` reports both; `predict` and `evaluate` reported only the first.
const TWO_SIZE_ERRORS: &str = "// @outcome y\ndata { int N; vector[N] y; }\n\
    transformed data { vector[3] a = rep_vector(0, 2); }\n\
    parameters { vector[2] b; }\nmodel { b ~ normal(0, 1); y ~ normal(b, 1); }\n";

#[test]
fn predict_and_evaluate_check_the_model_with_their_data() {
    let both = [
        "error: size mismatch in the declaration of `a`",
        "error: size mismatch in the arguments of `normal`: `y` (the variate) has 5 elements but \
         `b` (location parameter) has 2",
    ];
    // predict: the new data need not hold the outcome
    let (ok, text) = run(
        &[("m.bayes", TWO_SIZE_ERRORS), ("new.csv", "N\n5\n")],
        &[
            "predict",
            "m.bayes",
            "--fit",
            "none.json",
            "--data",
            "new.csv",
        ],
    );
    assert!(!ok, "{text}");
    assert_has(&text, &both);
    let (ok, text) = run(
        &[
            ("m.bayes", TWO_SIZE_ERRORS),
            ("d.csv", "y\n1\n2\n3\n4\n5\n"),
        ],
        &["evaluate", "m.bayes", "--data", "d.csv"],
    );
    assert!(!ok, "{text}");
    assert_has(&text, &both);
}

#[test]
fn counts_sizes_and_csv_quotes_are_worded_as_they_are() {
    let simple = "parameters { real mu; }\nmodel { mu ~ normal(1, 2); }\n";
    // the only warning: `mu` has no prior
    let one_warning = "parameters { real mu; }\nmodel { 1.5 ~ normal(mu, 2); }\n";
    let (ok, text) = run(&[("m.bayes", one_warning)], &["check", "m.bayes"]);
    assert!(ok, "{text}");
    assert_has(&text, &["m.bayes: no errors (1 warning)"]);
    let (ok, text) = run(
        &[("m.bayes", simple)],
        &[
            "fit",
            "m.bayes",
            "--method",
            "nuts",
            "--chains",
            "1",
            "--samples",
            "100",
            "--warmup",
            "100",
            "--seed",
            "1",
        ],
    );
    assert!(ok, "{text}");
    assert_has(
        &text,
        &[
            "; 1 chain × (100 warmup + 100 draws);",
            "1 chain finished in",
        ],
    );
    assert!(!text.contains("1 chains"), "{text}");
    let (ok, text) = run(
        &[("m.bayes", simple)],
        &[
            "fit",
            "m.bayes",
            "--method",
            "optimize",
            "--algorithm",
            "newton",
            "--seed",
            "1",
        ],
    );
    assert!(ok, "{text}");
    let line = text
        .lines()
        .find(|l| l.starts_with("iterations: "))
        .unwrap_or_else(|| panic!("no iterations line in\n{text}"));
    assert!(line.contains(" Newton step"), "{line}");
    assert!(!line.contains("Newton +"), "{line}");
    // a negative size given to a built-in: said at the argument
    let negative = "parameters { real mu; }\nmodel { mu ~ normal(0, 1); }\n\
                    generated quantities { vector[3] v = rep_vector(1, -1); }\n";
    let (ok, text) = run(&[("m.bayes", negative)], &["check", "m.bayes"]);
    assert!(!ok, "{text}");
    assert_has(
        &text,
        &[
            "error: the size -1 given to `rep_vector` is negative, but a size must be 0 or more",
            "m.bayes:3:52",
        ],
    );
    assert!(!text.contains("vector[-1]"), "{text}");
    // a literal declared size is named as a size, not as "`3` = 3"
    let array =
        "data { array[2, 3] real z; }\nparameters { real mu; }\nmodel { mu ~ normal(0, 1); }\n";
    let (ok, text) = run(
        &[("m.bayes", array), ("d.json", r#"{"z": [[1, 2], [3, 4]]}"#)],
        &["check", "m.bayes", "--data", "d.json"],
    );
    assert!(!ok, "{text}");
    assert_has(
        &text,
        &["but `z` is declared `array[2, 3] real`, whose dimension 2 has size 3"],
    );
    // one dimension, not "(1 dimensions)"
    let vector =
        "data { int N; vector[N] x; }\nparameters { real mu; }\nmodel { x ~ normal(mu, 1); }\n";
    let (ok, text) = run(
        &[("m.bayes", vector), ("d.csv", "N,x.1,x.2\n2,1,2\n")],
        &["check", "m.bayes", "--data", "d.csv"],
    );
    assert!(!ok, "{text}");
    assert_has(
        &text,
        &["`x` is declared `vector[N]` (1 dimension), but d.csv gives it as columns"],
    );
    // an unterminated quote, with file and row
    let (ok, text) = run(
        &[("m.bayes", vector), ("d.csv", "N,x\n3,\"1\n2,3\n")],
        &["check", "m.bayes", "--data", "d.csv"],
    );
    assert!(!ok, "{text}");
    assert_has(
        &text,
        &["error: d.csv line 2 (row 1): a quoted field is never closed"],
    );
    assert!(!text.contains("fields, but the header has"), "{text}");
}

const FAR: &str = "parameters { real mu; }\nmodel { mu ~ normal(123456789.123, 1e-4); }\n";

#[test]
fn plots_resolve_a_narrow_parameter_far_from_zero() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, text) = run_in(
        dir.path(),
        &[("m.bayes", FAR)],
        &[
            "fit",
            "m.bayes",
            "--method",
            "nuts",
            "--chains",
            "1",
            "--samples",
            "200",
            "--warmup",
            "200",
            "--seed",
            "1",
            "-o",
            "fit.csv",
        ],
    );
    assert!(ok, "{text}");
    for kind in ["trace", "density", "forest"] {
        let out = format!("{kind}.svg");
        let (ok, text) = run_in(
            dir.path(),
            &[],
            &["plot", "fit_1.csv", "--kind", kind, "-o", &out],
        );
        assert!(ok, "{text}");
        let texts = svg_texts(&std::fs::read_to_string(dir.path().join(&out)).unwrap());
        assert!(
            texts.iter().any(|t| t == "+123456789.123"),
            "{kind}: {texts:?}"
        );
        assert!(!texts.iter().any(|t| t == "1.2e8"), "{kind}: {texts:?}");
        assert!(texts.iter().any(|t| t == "1.0e-4"), "{kind}: {texts:?}");
    }
}

#[test]
fn plots_of_warmup_draws_only_and_of_an_optimize_file() {
    let dir = tempfile::tempdir().unwrap();
    let simple = "parameters { real mu; }\nmodel { mu ~ normal(1, 2); }\n";
    let (ok, text) = run_in(
        dir.path(),
        &[("m.bayes", simple)],
        &[
            "fit",
            "m.bayes",
            "--method",
            "nuts",
            "--chains",
            "1",
            "--samples",
            "50",
            "--warmup",
            "60",
            "--save-warmup",
            "--seed",
            "1",
            "-o",
            "w.csv",
        ],
    );
    assert!(ok, "{text}");
    // a run stopped in warmup: the file up to the end of warmup
    let full = std::fs::read_to_string(dir.path().join("w_1.csv")).unwrap();
    let cut = full
        .find("# Adaptation terminated")
        .expect("the adaptation comment");
    std::fs::write(dir.path().join("warm.csv"), &full[..cut]).unwrap();
    let (ok, text) = run_in(dir.path(), &[], &["plot", "warm.csv", "-o", "warm.svg"]);
    assert!(ok, "{text}");
    assert_has(
        &text,
        &["trace plot written to warm.svg from WARMUP draws only (60 per chain)"],
    );
    let texts = svg_texts(&std::fs::read_to_string(dir.path().join("warm.svg")).unwrap());
    assert!(
        texts.iter().any(|t| t.contains("WARMUP draws only")),
        "{texts:?}"
    );
    let (ok, text) = run_in(
        dir.path(),
        &[],
        &["fit", "m.bayes", "--method", "optimize", "-o", "opt.csv"],
    );
    assert!(ok, "{text}");
    let (ok, text) = run_in(dir.path(), &[], &["plot", "opt.csv", "-o", "opt.svg"]);
    assert!(!ok, "{text}");
    assert_has(
        &text,
        &["`opt.csv` holds a point estimate (the output of `--method optimize`), not draws"],
    );
    assert!(!dir.path().join("opt.svg").exists());
    // an optimize file beside a sampler's: "an `optimize` fit"
    let (ok, text) = run_in(dir.path(), &[], &["summary", "opt.csv", "w_1.csv"]);
    assert!(!ok, "{text}");
    assert_has(
        &text,
        &["`opt.csv` holds an `optimize` fit but `w_1.csv` a `sample` fit"],
    );
}
