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
