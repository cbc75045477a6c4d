//! Metropolis–Hastings without `--samples` runs until the chains have mixed (issue 13, item
//! 10; `fit::mh_length`). The target is x ~ N(m, S) in d = 6 with m_i = i and the AR(1)
//! covariance S_ij = 0.9^|i−j|, so every x_i has mean i and sd 1
//! (`tests/fixtures/mh/ar1_gaussian.bayes`). At the fixed default length (2000 draws per
//! chain) seeds 1 and 3 ended at R-hat 1.017–1.026 with bulk-ESS 295–470.

mod common;

use std::process::Command;

fn fit(args: &[&str]) -> String {
    let mut all = vec!["fit", "ar1_gaussian.bayes", "--method", "mh"];
    all.extend_from_slice(args);
    let (ok, text) = common::run_bayesc_in("tests/fixtures/mh", &all);
    assert!(ok, "{text}");
    text
}

/// (mean, sd, MCSE, R-hat) of x[i] in the summary table.
fn row(text: &str, i: usize) -> (f64, f64, f64, f64) {
    let name = format!("x[{i}]");
    let l = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name.as_str()))
        .unwrap_or_else(|| panic!("no row {name} in\n{text}"));
    let v: Vec<f64> = l
        .split_whitespace()
        .skip(1)
        .map(|t| t.parse().unwrap())
        .collect();
    (v[0], v[1], v[5], v[8])
}

fn draws_per_chain(text: &str) -> usize {
    text.split("draws per chain kept")
        .next()
        .and_then(|t| t.split_whitespace().last())
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no length in\n{text}"))
}

#[test]
fn default_mh_runs_until_mixed_and_says_why() {
    for seed in ["1", "3"] {
        let text = fit(&["--seed", seed]);
        assert!(
            text.contains("run length: ") && text.contains("chosen from measured mixing"),
            "seed {seed}:\n{text}"
        );
        assert!(draws_per_chain(&text) > 2000, "seed {seed}:\n{text}");
        for i in 1..=6 {
            let (mean, sd, mcse, rhat) = row(&text, i);
            assert!(rhat < 1.01, "seed {seed} x[{i}]: R-hat {rhat}\n{text}");
            assert!(
                (mean - i as f64).abs() < 4.0 * mcse,
                "seed {seed} x[{i}]: mean {mean}, MCSE {mcse}\n{text}"
            );
            assert!(
                (sd - 1.0).abs() < 0.1,
                "seed {seed} x[{i}]: sd {sd}\n{text}"
            );
        }
        assert!(!text.contains("R-hat > 1.01"), "seed {seed}:\n{text}");
    }
}

#[test]
fn explicit_samples_keep_the_exact_length() {
    let text = fit(&["--seed", "1", "--samples", "2000"]);
    assert_eq!(draws_per_chain(&text), 2000, "{text}");
    assert!(!text.contains("run length"), "{text}");
    // the default run's final round is this very run at its chosen length
    let auto = fit(&["--seed", "1"]);
    let n = draws_per_chain(&auto);
    let fixed = fit(&["--seed", "1", "--samples", &n.to_string()]);
    for i in 1..=6 {
        assert_eq!(row(&auto, i), row(&fixed, i), "x[{i}]");
    }
}

#[test]
fn an_exhausted_budget_warns_with_the_length_needed() {
    let out = Command::new(env!("CARGO_BIN_EXE_bayesc"))
        .args(["fit", "bimodal.bayes", "--method", "mh", "--seed", "1"])
        .current_dir(common::root().join("tests/fixtures/mh"))
        .output()
        .expect("run bayesc");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{text}");
    assert_eq!(draws_per_chain(&text), 20000, "{text}");
    let line = text
        .lines()
        .find(|l| l.starts_with("WARNING: run length: the budget (20000 draws per chain) ran out"))
        .unwrap_or_else(|| panic!("no budget warning in\n{text}"));
    let needed: f64 = line
        .split("about ")
        .nth(1)
        .and_then(|t| t.split_whitespace().next())
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no length in {line}"));
    assert!(needed > 20000.0, "{line}");
    assert!(line.contains("--samples"), "{line}");
}

/// The data rows and `num_samples` of a draws file.
fn file_rows(path: &std::path::Path) -> (usize, usize) {
    let text = std::fs::read_to_string(path).unwrap();
    let rows = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("lp__") && !l.is_empty())
        .count();
    let num_samples = text
        .lines()
        .find_map(|l| {
            l.trim_start_matches(['#', ' '])
                .strip_prefix("num_samples = ")
        })
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no num_samples in {}", path.display()));
    (rows, num_samples)
}

/// The settings line states what each chain keeps, as the "draws per chain kept" line and
/// the draws files do: the default run says its length is chosen in rounds (it used to say
/// "2000 draws" and then keep 6647 per chain); a thinned run says how many of its iterations
/// it keeps.
#[test]
fn the_settings_line_says_what_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let model = common::root().join("tests/fixtures/mh/ar1_gaussian.bayes");
    let run = |extra: &[&str], out: &str| -> String {
        let mut args = vec![
            "fit",
            model.to_str().unwrap(),
            "--method",
            "mh",
            "--seed",
            "1",
        ];
        args.extend_from_slice(extra);
        args.extend(["--output", out]);
        let o = common::bayesc_in(dir.path(), &args);
        let text = common::output_text(&o);
        assert!(o.status.success(), "{text}");
        text
    };
    let settings = |text: &str| -> String {
        text.lines()
            .find(|l| l.starts_with("method = mh"))
            .unwrap_or_else(|| panic!("no settings line in\n{text}"))
            .to_string()
    };

    let auto = run(&[], "auto.csv");
    let line = settings(&auto);
    assert!(
        line.contains(
            "4 chains × (3000 warmup + draws until mixed: 2000 in the first round, at most \
             20000; the length kept is printed after the run)"
        ),
        "{line}"
    );
    let kept = draws_per_chain(&auto);
    assert!(kept > 2000, "{auto}");
    assert!(
        auto.contains(&format!("run length: {kept} draws per chain, chosen")),
        "{auto}"
    );
    assert_eq!(
        file_rows(&dir.path().join("auto_1.csv")),
        (kept, kept),
        "{auto}"
    );

    let fixed = run(&["--samples", "2000"], "fixed.csv");
    assert!(
        settings(&fixed).contains("4 chains × (3000 warmup + 2000 draws);"),
        "{fixed}"
    );
    assert_eq!(draws_per_chain(&fixed), 2000);
    assert_eq!(file_rows(&dir.path().join("fixed_1.csv")), (2000, 2000));

    let thinned = run(&["--samples", "2000", "--thin", "3"], "thin.csv");
    assert!(
        settings(&thinned).contains(
            "4 chains × (3000 warmup + 2000 iterations), thin = 3: 667 draws per chain kept;"
        ),
        "{thinned}"
    );
    assert_eq!(draws_per_chain(&thinned), 667);
    // CmdStan's num_samples counts iterations; the rows are the kept draws
    assert_eq!(file_rows(&dir.path().join("thin_1.csv")), (667, 2000));
}

/// Above its dimension limit MH is refused before any settings line: the Boston BNN (d = 752)
/// used to print "4 chains × (376000 warmup + draws until mixed: 150400 in the first round, at
/// most 20000 …)", a first round longer than its cap, for a run that never started.
#[test]
fn a_refused_dimension_prints_no_settings_line() {
    let o = common::bayesc_in(
        &common::root(),
        &[
            "fit",
            "examples/bnn_regression/model.bayes",
            "--data",
            "examples/bnn_regression/boston.csv",
            "--method",
            "mh",
            "--seed",
            "1",
        ],
    );
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(!out.contains("method = mh"), "{out}");
    assert!(!out.contains("first round"), "{out}");
    assert!(
        err.starts_with(
            "error: mh failed: the model has d = 752 unconstrained parameters, more than the 50"
        ),
        "{err}"
    );
}

/// The settings line never states a cap below the first round: a first round longer than the
/// budget of `MH_MAX_SAMPLES` draws per chain is run once, as the only round.
#[test]
fn the_settings_line_cap_is_at_least_the_first_round() {
    use bayesc::fit::{FitOptions, Method, mh_length::MH_MAX_SAMPLES};
    use bayesc::output::report::settings_line;
    let line = |d: usize| {
        let mut o = FitOptions::new(Method::Mh, 1);
        o.mcmc = bayesc::inference::mcmc::McmcSettings::mh_defaults(d);
        o.mh_auto_length = true;
        settings_line(&o, d)
    };
    assert!(
        line(6)
            .contains("(3000 warmup + draws until mixed: 2000 in the first round, at most 20000;"),
        "{}",
        line(6)
    );
    assert_eq!(MH_MAX_SAMPLES, 20_000);
    // d = 752: 200·d = 150400 draws in the first round, which is then the only one
    let l = line(752);
    assert!(
        l.contains(
            "4 chains × (376000 warmup + 150400 draws in one round, the first being already at \
             or above the budget of 20000 draws per chain);"
        ),
        "{l}"
    );
    assert!(!l.contains("at most"), "{l}");
}
