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
    // c's NaN columns are explained, naming it with its value
    assert_eq!(row(&text, "c")[6..], ["NaN", "NaN", "NaN", "NaN"], "{text}");
    assert!(
        text.contains(
            "  - R-hat, ESS and MCSE are undefined (NaN in the table) for c = 3.000: every draw \
             has the same value. A transformed parameter or generated quantity that does not \
             depend on the parameters is constant by design"
        ),
        "{text}"
    );
}
