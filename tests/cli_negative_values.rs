//! A negative value for a numeric option gets the option's own range message, not clap's
//! "unexpected argument '-1' found … use '-- -1'" (issue 13, item 9).

mod common;

use std::process::Command;

#[test]
fn a_negative_step_size_or_adapt_delta_gets_a_clear_message() {
    for (flag, want) in [
        ("--step-size", "--step-size must be in (0, 1), got -1"),
        ("--adapt-delta", "--adapt-delta must be in (0, 1), got -1"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_bayesc"))
            .args(["fit", "tests/fixtures/improper/unused.bayes", flag, "-1"])
            .current_dir(common::root())
            .output()
            .expect("run bayesc");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(err.contains(want), "{err}");
        assert!(!err.contains("unexpected argument"), "{err}");
    }
}

/// NUTS's `--step-size` is its initial step size: any positive number (1.5 is accepted and
/// shows on the fit's output as the chains run), and a negative one gets NUTS's own message.
#[test]
fn nuts_step_size_is_any_positive_number() {
    let run = |v: &str| {
        Command::new(env!("CARGO_BIN_EXE_bayesc"))
            .args([
                "fit",
                "examples/eight_schools/model.bayes",
                "--data",
                "examples/eight_schools/schools.csv",
                "--method",
                "nuts",
                "--warmup",
                "50",
                "--samples",
                "50",
                "--seed",
                "1",
                "-q",
                "--step-size",
                v,
            ])
            .current_dir(common::root())
            .output()
            .expect("run bayesc")
    };
    let ok = run("1.5");
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let bad = run("-1");
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{err}");
    assert!(
        err.contains("initial HMC step size) must be a positive number, got -1"),
        "{err}"
    );
}

/// A negative value for an integer option (`--batch-size -5`, `--seed -1`, `--samples -1`, …)
/// gets clap's `invalid value` message naming the option and its range, exit status 2; it once
/// got "unexpected argument '-5' found" with a tip (`-- -5`) that does not work.
#[test]
fn a_negative_integer_option_gets_an_invalid_value_message() {
    for (flag, value) in [
        ("--batch-size", "-5"),
        ("--seed", "-1"),
        ("--samples", "-1"),
        ("--warmup", "-10"),
        ("--chains", "-2"),
        ("--draws", "-3"),
        ("--max-iter", "-1"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_bayesc"))
            .args([
                "fit",
                "examples/labour/model.bayes",
                "--data",
                "examples/labour/labour.csv",
                flag,
                value,
            ])
            .current_dir(common::root())
            .output()
            .expect("run bayesc");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag}: {err}");
        assert!(
            err.contains(&format!("invalid value '{value}' for '{flag} <")),
            "{flag}: {err}"
        );
        assert!(!err.contains("unexpected argument"), "{flag}: {err}");
    }
}

/// `--batch-size` larger than the number of rows is a usage error (exit 2, like every other
/// flag error), with clap's wording; it exited 1.
#[test]
fn a_batch_size_larger_than_the_data_is_a_usage_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_bayesc"))
        .args([
            "fit",
            "examples/labour/model.bayes",
            "--data",
            "examples/labour/labour.csv",
            "--batch-size",
            "100000",
        ])
        .current_dir(common::root())
        .output()
        .expect("run bayesc");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "invalid value '100000' for '--batch-size <M>': larger than the number of rows N = "
        ),
        "{err}"
    );
}

/// In the REPL, `:set seed -3` says what is wrong with the value (it printed `:fit`'s usage).
#[test]
fn repl_set_with_a_negative_seed_names_the_value() {
    let mut s = bayesc::repl::Session::new();
    s.set_progress(false);
    let o = s.execute(":set seed -3");
    assert!(o.is_error, "{}", o.text);
    assert!(
        o.text.contains("invalid value '-3' for '--seed"),
        "{}",
        o.text
    );
}
