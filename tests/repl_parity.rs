//! The REPL's `:fit` and `bayesc fit` give the same fit for the same model, data, method,
//! options and seed: an IVON fit of the labour example from a random start (`--random-init`,
//! seed 1) writes the same draws and reports the same ELBO in both. (The REPL used to leave out
//! full-batch IVON's plan of all N rows, so its λ was not N and the fit blew up.)

mod common;

use std::process::Command;

use bayesc::repl::Session;

fn path(rel: &str) -> String {
    common::root().join(rel).display().to_string()
}

/// The number after `ELBO estimate = ` in a fit's report.
fn elbo_estimate(text: &str) -> f64 {
    let rest = text
        .split("ELBO estimate = ")
        .nth(1)
        .unwrap_or_else(|| panic!("no ELBO estimate in\n{text}"));
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
        .unwrap_or(rest.len());
    rest[..end].parse().unwrap()
}

/// The draws of a Stan CSV file (its lines that are not `#` comments).
fn draws(file: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(file)
        .unwrap_or_else(|e| panic!("{}: {e}", file.display()))
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// The mean of column `name` over the draws (header first).
fn column_mean(rows: &[String], name: &str) -> f64 {
    let j = rows[0].split(',').position(|c| c == name).unwrap();
    let values: Vec<f64> = rows[1..]
        .iter()
        .map(|r| r.split(',').nth(j).unwrap().parse().unwrap())
        .collect();
    values.iter().sum::<f64>() / values.len() as f64
}

#[test]
fn ivon_from_a_random_start_is_the_same_fit_in_the_repl_and_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let cli_csv = dir.path().join("cli.csv");
    let repl_csv = dir.path().join("repl.csv");
    let (model, data) = (
        path("examples/labour/model.bayes"),
        path("examples/labour/labour.csv"),
    );
    let cli = Command::new(env!("CARGO_BIN_EXE_bayesc"))
        .args(["fit", &model, "--data", &data])
        .args([
            "--method",
            "ivon",
            "--random-init",
            "--seed",
            "1",
            "--output",
        ])
        .arg(&cli_csv)
        .output()
        .unwrap();
    let cli_text = String::from_utf8_lossy(&cli.stdout);
    assert_eq!(cli.status.code(), Some(0), "{cli_text}");

    let mut s = Session::new();
    s.set_progress(false);
    for input in [format!(":load {model}"), format!(":data {data}")] {
        let o = s.execute(&input);
        assert!(!o.is_error, "{}", o.text);
    }
    let o = s.execute(&format!(
        ":fit ivon --random-init --seed 1 --output {}",
        repl_csv.display()
    ));
    assert!(!o.is_error, "{}", o.text);
    // the REPL says what `bayesc fit` says of the batch: all N rows at every step
    assert!(
        o.text
            .contains("full batch: all N = 753 rows (`N`) at every step"),
        "{}",
        o.text
    );

    let (cli_elbo, repl_elbo) = (elbo_estimate(&cli_text), elbo_estimate(&o.text));
    assert_eq!(cli_elbo, repl_elbo, "CLI:\n{cli_text}\nREPL:\n{}", o.text);
    // the fit itself is sensible (the labour posterior's ELBO is about -471; the REPL's fit
    // without the plan ended near -1.3e7 with alpha ≈ 14458)
    assert!((-480.0..-465.0).contains(&cli_elbo), "{cli_text}");

    let (cli_draws, repl_draws) = (draws(&cli_csv), draws(&repl_csv));
    // the header, the mean of q (CmdStan's first row of a variational fit) and 1000 draws
    assert_eq!(cli_draws.len(), 1002);
    assert_eq!(cli_draws, repl_draws, "the draws differ");
    let alpha = column_mean(&repl_draws, "alpha");
    assert!((2.6..3.0).contains(&alpha), "mean of alpha {alpha}");
}
