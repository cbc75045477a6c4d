//! Messages that named the wrong cause or none (session 16): a summary of draws near 1e-200
//! printed sd 0 and NaN R-hat, ESS and MCSE without a word, and a constant quantity's NaN
//! diagnostics went unexplained; an int overflow in generated quantities that involves no
//! parameter was blamed on the parameter values; a zero-size parameter was called an
//! improper flat density.

use std::process::Output;

mod common;

/// A folder holding `files` (name, text).
fn folder(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).expect("write");
    }
    dir
}

/// `bayesc ARGS` in `dir`.
fn run(dir: &tempfile::TempDir, args: &[&str]) -> Output {
    common::bayesc_in(dir.path(), args)
}

/// The summary line of `name` in a fit's standard output, split into cells.
fn row<'a>(out: &'a str, name: &str) -> Vec<&'a str> {
    out.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|cells| cells.first() == Some(&name))
        .unwrap_or_else(|| panic!("no row {name} in:\n{out}"))
}

#[test]
fn nuts_summary_of_tiny_draws_and_constants_has_no_unexplained_nan() {
    let dir = folder(&[(
        "m.bayes",
        "parameters { real mu; }\nmodel { mu ~ normal(0, 1); }\n\
         generated quantities { real t = mu * 1e-200; real c = 3; }\n",
    )]);
    let o = run(&dir, &["fit", "m.bayes", "--method", "nuts", "--seed", "1"]);
    let text = common::output_text(&o);
    assert!(o.status.success(), "{text}");
    let mu = row(&text, "mu");
    let t = row(&text, "t");
    // t = mu·1e-200 has mu's sd, MCSE, ESS and R-hat, scaled (the columns are: name mean sd
    // 5% 50% 95% MCSE ESS_bulk ESS_tail R_hat)
    let num = |s: &str| {
        s.parse::<f64>()
            .unwrap_or_else(|_| panic!("{s} in\n{text}"))
    };
    assert!(
        (num(t[2]) / (num(mu[2]) * 1e-200) - 1.0).abs() < 1e-3,
        "{text}"
    );
    assert!(
        (num(t[6]) / (num(mu[6]) * 1e-200) - 1.0).abs() < 1e-2,
        "{text}"
    );
    assert_eq!(t[7..], mu[7..], "{text}");
    assert!(num(t[9]) < 1.01, "{text}");
    // c's NaN columns are explained, naming it with its value as the table prints it (3, a
    // whole number; once 3.000 beside the table's 3)
    assert_eq!(row(&text, "c")[1], "3", "{text}");
    assert_eq!(row(&text, "c")[6..], ["NaN", "NaN", "NaN", "NaN"], "{text}");
    assert!(
        text.contains(
            "  - R-hat, ESS and MCSE are undefined (NaN in the table) for c = 3: every draw \
             has the same value. A transformed parameter or generated quantity that does not \
             depend on the parameters is constant by design"
        ),
        "{text}"
    );
}

/// The error line of a fit that starts with "the generated quantities failed".
fn gq_warning(text: &str) -> &str {
    text.lines()
        .find_map(|l| l.strip_prefix("ERROR: the generated quantities failed"))
        .unwrap_or_else(|| panic!("no generated-quantities warning in:\n{text}"))
}

#[test]
fn a_generated_quantity_failing_without_parameters_is_not_blamed_on_them() {
    const NO_PARAMETERS: &str = "The statement does not involve the parameters (only data, \
                                 constants and `_rng` draws), so no parameter value avoids the \
                                 failure: change the statement or the data it reads";
    const GUARD: &str = "Guard the statement against the parameter values that break it (e.g. \
                         `if (mu > 0)`), or use a function defined for all of them";
    let head = "data { int n; }\nparameters { real mu; }\nmodel { mu ~ normal(0, 1); }\n";
    let dir = folder(&[
        (
            "rng.bayes",
            &format!("{head}generated quantities {{ int k = 2147483647 + poisson_rng(3); }}\n"),
        ),
        (
            "data.bayes",
            &format!("{head}generated quantities {{ int m = n; int k = m * n; }}\n"),
        ),
        (
            "param.bayes",
            &format!(
                "{head}generated quantities {{ real x = mu; int k = to_int(x * 1e10) * n; }}\n"
            ),
        ),
        ("d.json", r#"{"n": 100000}"#),
    ]);
    for (model, overflow, fix) in [
        (
            "rng.bayes",
            "integer overflow: `2147483647 + ",
            NO_PARAMETERS,
        ),
        (
            "data.bayes",
            "`100000 * 100000` is 10000000000",
            NO_PARAMETERS,
        ),
        ("param.bayes", "to_int", GUARD),
    ] {
        let o = run(
            &dir,
            &[
                "fit", model, "--data", "d.json", "--method", "nuts", "--seed", "1",
            ],
        );
        let text = common::output_text(&o);
        assert_eq!(o.status.code(), Some(3), "{text}");
        let w = gq_warning(&text);
        assert!(w.contains(overflow), "{model}: {w}");
        assert!(w.ends_with(fix), "{model}: {w}");
    }
}

#[test]
fn int_arithmetic_on_literals_that_overflows_is_a_check_error() {
    let dir = folder(&[(
        "lit.bayes",
        "parameters { real mu; }\nmodel { mu ~ normal(0, 1); }\n\
         generated quantities { int k = 2147483647 + 1; int j = (-2147483647 - 1) * 1; }\n",
    )]);
    let o = run(&dir, &["check", "lit.bayes"]);
    let text = common::output_text(&o);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(
        text.contains(
            "error: integer overflow: `2147483647 + 1` is 2147483648, outside the range of int \
             (-2147483648 to 2147483647); int is 32-bit, as in Stan: to compute with larger \
             values, convert to real first (e.g. `1.0 * n`)"
        ),
        "{text}"
    );
    assert!(
        text.contains("^^^^^^^^^^^^^^ overflows int at every evaluation"),
        "{text}"
    );
    // -2147483648 (reached by arithmetic) times 1 is an int
    assert_eq!(text.matches("error:").count(), 1, "{text}");
}

#[test]
fn a_parameter_of_literal_size_zero_is_not_called_improper() {
    let dir = folder(&[
        (
            "unused.bayes",
            "parameters { vector[0] z; real mu; }\nmodel { mu ~ normal(0, 1); }\n",
        ),
        (
            "matrix.bayes",
            "data { int K; }\nparameters { matrix[0, K] W; real mu; }\n\
             model { mu ~ normal(sum(W), 1); }\n",
        ),
        (
            "array.bayes",
            "parameters { array[0] real a; real mu; }\nmodel { mu ~ normal(0, 1); }\n",
        ),
        (
            "sized.bayes",
            "data { int N; }\nparameters { vector[N] z; real mu; }\n\
             model { mu ~ normal(sum(z), 1); }\n",
        ),
    ]);
    for model in ["unused.bayes", "matrix.bayes", "array.bayes"] {
        let o = run(&dir, &["check", model]);
        let text = common::output_text(&o);
        assert!(o.status.success(), "{model}: {text}");
        assert!(!text.contains("improper"), "{model}: {text}");
        assert!(!text.contains("no prior"), "{model}: {text}");
    }
    // a size known only from the data keeps the warning (N may be positive)
    let o = run(&dir, &["check", "sized.bayes"]);
    let text = common::output_text(&o);
    assert!(
        text.contains("parameter `z` has no prior; it gets an improper flat prior"),
        "{text}"
    );
}
