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
