//! The Newton refinement of a stochastic fit's mean after its exit rule (`fit::refine`) on the
//! labour example (d = 8), against the NUTS reference (`../shared/validation/reference_fits/
//! labour.csv`; issue 11's bar: each mean within 0.15 reference sd).
//!
//! Before it, these fits printed "converged" with means 0.26–0.30 NUTS sds from the NUTS means
//! (measured: minibatch QBVI at M = 64 seeds 4, 7, 8: 0.284, 0.300, 0.286; M = 50 seed 6:
//! 0.259; M = 100 seed 7: 0.262; full-batch BBB seed 3: 0.261; full-covariance VON seed 8:
//! 0.301), while the exact mean-field optimum is 0.057 from them: the returned mean, an average
//! of the last iterates, still carried their noise. After it they converge at 0.064, 0.076,
//! 0.073, 0.144, 0.075, 0.053 and 0.039, and the report says how far the refinement moved the
//! mean (0.21–0.27 posterior sds).

mod common;

use std::process::Command;

/// Runs `bayesc fit` on labour with `args`; returns the report and the mean of q (the first
/// row of the draws file, CmdStan's variational layout) by column name (`beta[1]`, …).
fn fit_labour(tag: &str, args: &[&str]) -> (String, Vec<(String, f64)>) {
    let root = common::root();
    let out = std::env::temp_dir().join(format!("vi_refine_{tag}_{}.csv", std::process::id()));
    let run = Command::new(env!("CARGO_BIN_EXE_bayesc"))
        .current_dir(&root)
        .args([
            "fit",
            "examples/labour/model.bayes",
            "--data",
            "examples/labour/labour.csv",
            "--draws",
            "10",
        ])
        .args(args)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout).to_string();
    assert!(run.status.success(), "{stdout}");
    let text = std::fs::read_to_string(&out).unwrap();
    let _ = std::fs::remove_file(&out);
    (stdout, common::vi_mean_row(&text))
}

#[test]
fn refined_stochastic_fits_that_say_converged_are_within_the_bar_on_labour() {
    let reference =
        common::read_reference(&common::validation_dir().join("reference_fits/labour.csv"));
    let cases: [(&str, &[&str]); 7] = [
        (
            "qbvi64s4",
            &["--method", "qbvi", "--batch-size", "64", "--seed", "4"],
        ),
        (
            "qbvi64s7",
            &["--method", "qbvi", "--batch-size", "64", "--seed", "7"],
        ),
        (
            "qbvi64s8",
            &["--method", "qbvi", "--batch-size", "64", "--seed", "8"],
        ),
        (
            "qbvi50s6",
            &["--method", "qbvi", "--batch-size", "50", "--seed", "6"],
        ),
        (
            "qbvi100s7",
            &["--method", "qbvi", "--batch-size", "100", "--seed", "7"],
        ),
        ("bbbs3", &["--method", "bbb", "--seed", "3"]),
        ("vons8", &["--method", "von", "--seed", "8"]),
    ];
    for (tag, args) in cases {
        let (stdout, mean) = fit_labour(tag, args);
        assert!(
            stdout.lines().any(|l| l.starts_with("converged:")),
            "{tag}: {stdout}"
        );
        assert!(
            stdout.contains("after the exit rule the mean was refined by"),
            "{tag}: {stdout}"
        );
        let mut worst = 0.0f64;
        for r in &reference {
            let m = mean
                .iter()
                .find(|(n, _)| *n == r.name)
                .unwrap_or_else(|| panic!("{tag}: no column {}", r.name))
                .1;
            worst = worst.max((m - r.mean).abs() / r.sd);
        }
        // measured 0.039–0.144 (before: 0.26–0.30, "converged")
        assert!(worst < 0.15, "{tag}: a mean {worst:.3} NUTS sds off");
    }
}

/// The refinement is for fits the exit rule stopped: one that hit the iteration cap keeps its
/// mean and says nothing about it.
#[test]
fn a_fit_stopped_by_the_iteration_cap_is_not_refined() {
    let (stdout, _) = fit_labour(
        "cap",
        &["--method", "bbb", "--seed", "3", "--max-iter", "200"],
    );
    assert!(stdout.contains("hit the iteration cap"), "{stdout}");
    assert!(!stdout.contains("refined by"), "{stdout}");
}

/// `--no-refine` reports the method's own end point: BBB at seed 3 is then not moved (no
/// refinement note; the offset left is quoted instead), its mean differs from the refined one
/// (in beta[7], which the refinement moved by 0.21 posterior sds), and the draws file says
/// `refine_mean = off` where the default says `newton`.
#[test]
fn no_refine_keeps_the_methods_own_end_point() {
    let (refined, m1) = fit_labour("bbb3r", &["--method", "bbb", "--seed", "3"]);
    let (own, m2) = fit_labour("bbb3n", &["--method", "bbb", "--seed", "3", "--no-refine"]);
    assert!(refined.contains("the mean was refined by"), "{refined}");
    assert!(!own.contains("refined"), "{own}");
    assert!(
        own.contains("posterior sds from the ELBO's optimum in beta[7]"),
        "{own}"
    );
    let b7 = |m: &[(String, f64)]| m.iter().find(|(n, _)| n == "beta[7]").unwrap().1;
    // 0.21 sds of the curvature of beta[7] in the ELBO (a mean-field sd, narrower than the
    // NUTS sd of 0.0083): between 4e-4 and 2e-3 on this scale
    let moved = (b7(&m1) - b7(&m2)).abs();
    assert!(moved > 4e-4 && moved < 2e-3, "beta[7] moved by {moved}");
    for (flag, word) in [(None, "newton"), (Some("--no-refine"), "off")] {
        let out =
            std::env::temp_dir().join(format!("vi_refine_hdr_{word}_{}.csv", std::process::id()));
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_bayesc"));
        cmd.current_dir(common::root()).args([
            "fit",
            "examples/labour/model.bayes",
            "--data",
            "examples/labour/labour.csv",
            "--method",
            "bbb",
            "--seed",
            "3",
            "--draws",
            "10",
        ]);
        if let Some(f) = flag {
            cmd.arg(f);
        }
        assert!(cmd.arg("-o").arg(&out).output().unwrap().status.success());
        let text = std::fs::read_to_string(&out).unwrap();
        let _ = std::fs::remove_file(&out);
        assert!(
            text.lines()
                .any(|l| l == format!("#     refine_mean = {word}")),
            "{text}"
        );
    }
}

/// A refinement that does not settle means q's mean is not at the optimum. Fresh-user testing
/// found minibatch IVON from `--random-init` (M = 200, seed 10) said "converged" after the
/// refinement with alpha 0.64 NUTS sds off: the two steps closed part of the distance along the
/// alpha–age ridge, where the mean-field curvature is too large, and the re-run check read the
/// rest below its bar. Its last step still moved a coordinate by 0.27 sds (converged fits on
/// labour: at most 0.046, measured over 120 fits), so it was reported not converged, with the
/// mode start as the remedy.
///
/// Since the steps cross the ridge (session 20: the curvature's eigenvalues are floored at 0.05
/// only where the draws do not pin them down), seed 10 lands 0.066 NUTS sds from NUTS (0.016
/// from the mean-field optimum, sds 0.98–1.04 of its) and says "converged", rightly. Seed 2
/// (0.95 NUTS sds off on main; sds 0.51–1.07 of the optimum's) does not settle in the sds'
/// fixed-point iteration and is reported not converged. Over M = 50 and 200, seeds 1–12, the
/// 11 random-start fits that now say "converged" are within 0.066 NUTS sds; the other 13 are
/// 1.1–2.8 off (measured).
#[test]
fn an_unsettled_refinement_is_not_converged() {
    let reference =
        common::read_reference(&common::validation_dir().join("reference_fits/labour.csv"));
    let args = |seed| {
        [
            "--method",
            "ivon",
            "--seed",
            seed,
            "--batch-size",
            "200",
            "--random-init",
        ]
    };
    let (report, _) = fit_labour("ivon2", &args("2"));
    assert!(report.contains("not converged"), "{report}");
    assert!(
        report.contains(
            "the fixed-point iteration of the mean-field ELBO's sds after the exit rule did not \
             settle"
        ),
        "{report}"
    );
    assert!(report.contains("drop --random-init"), "{report}");
    let (report, mean) = fit_labour("ivon10", &args("10"));
    assert!(
        report.lines().any(|l| l.starts_with("converged:")),
        "{report}"
    );
    for r in &reference {
        let m = mean.iter().find(|(n, _)| *n == r.name).unwrap().1;
        let z = (m - r.mean).abs() / r.sd;
        assert!(z < 0.1, "{}: {z:.3} NUTS sds off\n{report}", r.name);
    }
}

/// The REPL's `:fit` prints the refinement's note as `bayesc fit` does (fresh-user testing
/// found it left out).
#[test]
fn the_repl_reports_the_refinement() {
    let root = common::root();
    let root = root.display();
    let mut s = bayesc::repl::Session::new();
    common::repl_ok(&mut s, &format!(":load {root}/examples/labour/model.bayes"));
    common::repl_ok(&mut s, &format!(":data {root}/examples/labour/labour.csv"));
    let text = common::repl_ok(&mut s, ":fit bbb --seed 3");
    assert!(
        text.contains("note: after the exit rule the mean was refined by 1 Newton step"),
        "{text}"
    );
}
