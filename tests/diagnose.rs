//! `bayesc diagnose`: the gradient against finite differences (CmdStan's `diagnose`).

use std::process::Command;

fn bayesc(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_bayesc"))
        .args(args)
        .output()
        .expect("bayesc runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The shipped labour model's gradient agrees with finite differences (exit 0, one row per
/// unconstrained coordinate).
#[test]
fn labour_gradient_agrees() {
    let root = env!("CARGO_MANIFEST_DIR");
    let (code, out, err) = bayesc(&[
        "diagnose",
        &format!("{root}/examples/labour/model.bayes"),
        "--data",
        &format!("{root}/examples/labour/labour.csv"),
        "--seed",
        "4",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("agrees with finite differences in all 8 coordinates"),
        "{out}"
    );
    assert_eq!(out.lines().filter(|l| l.contains("`beta`")).count(), 7);
}

/// A log density with a kink (abs) at the evaluation point: the finite difference disagrees
/// and diagnose says so, naming the coordinate, with exit code 1.
#[test]
fn kink_is_flagged() {
    let dir = std::env::temp_dir().join(format!("bayesc_diag_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let model = dir.join("kink.bayes");
    std::fs::write(
        &model,
        "parameters {\n  real x;\n  real y;\n}\nmodel {\n  target += -abs(x - 1e-7) * 1e6 - 0.5 * y^2;\n}\n",
    )
    .unwrap();
    // --init 0 evaluates at the origin, within ε of the kink of abs(x − 1e-7)
    let (code, out, err) = bayesc(&["diagnose", model.to_str().unwrap(), "--init", "0"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("MISMATCH"), "{out}");
    assert!(
        out.contains("differs from finite differences in 1 of 2 coordinates (`x`)"),
        "{out}"
    );
    let (code, _, err) = bayesc(&["diagnose", model.to_str().unwrap(), "--epsilon", "0"]);
    assert_eq!(code, 2);
    assert!(err.contains("--epsilon must be a positive number"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
