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
