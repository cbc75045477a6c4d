//! The REPL's `:fit` and `bayesc fit` give the same fit for the same model, data, method,
//! options and seed: an IVON fit of the labour example from a random start (`--random-init`,
//! seed 1) writes the same draws and reports the same ELBO in both. (The REPL used to leave out
//! full-batch IVON's plan of all N rows, so its λ was not N and the fit blew up.) `:fit` prints
//! `bayesc fit`'s settings line: QBVI's gradient estimator, the imputed entries and MH's length
//! chosen in rounds are said in both.

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

/// The lines before the fit's result: `bayesc fit`'s first `n` lines of output, and the REPL's
/// first `n` lines with the fit's name (`fit1: `) taken off the first.
fn preambles(cli_args: &[&str], repl: &[String], n: usize) -> (String, String) {
    let cli = Command::new(env!("CARGO_BIN_EXE_bayesc"))
        .arg("fit")
        .args(cli_args)
        .output()
        .unwrap();
    let cli_text = String::from_utf8_lossy(&cli.stdout).to_string();
    assert_eq!(cli.status.code(), Some(0), "{cli_text}");
    let mut s = Session::new();
    s.set_progress(false);
    let mut last = String::new();
    for input in repl {
        let o = s.execute(input);
        assert!(!o.is_error, "{input}: {}", o.text);
        last = o.text;
    }
    let head = |t: &str| t.lines().take(n).collect::<Vec<_>>().join("\n");
    let repl_head = head(&last);
    let repl_head = repl_head
        .strip_prefix("fit1: ")
        .unwrap_or_else(|| panic!("no `fit1: ` before the settings line:\n{last}"))
        .to_string();
    (head(&cli_text), repl_head)
}

/// `:fit` prints `bayesc fit`'s settings line (one shared function): QBVI's gradient estimator
/// is named (the REPL used to leave it out), and so are the parameters that impute missing data.
#[test]
fn the_settings_line_names_the_gradient_estimator_and_the_imputed_entries_as_the_cli_does() {
    let (model, data) = (
        path("examples/missing_data/model.bayes"),
        path("examples/missing_data/data.csv"),
    );
    let options = "qbvi --estimator gradient --max-iter 300 --seed 1";
    let mut cli_args = vec![model.as_str(), "--data", data.as_str(), "--method"];
    cli_args.extend(options.split(' '));
    let (cli, repl) = preambles(
        &cli_args,
        &[
            format!(":load {model}"),
            format!(":data {data}"),
            format!(":fit {options}"),
        ],
        2,
    );
    assert_eq!(cli, repl);
    assert!(
        repl.contains(
            ", gradient estimator (Bonnet/Price identities; --estimator score for the paper's)"
        ) && repl.contains("\nimputed: x has 44 missing entries, fitted as x_missing[1..44]"),
        "{repl}"
    );
}

/// MH at d ≤ 50 chooses its length in rounds; `:fit mh` says so as `bayesc fit` does (it used
/// to show the first round's 2000 draws as if fixed), and with `--samples` the fixed length.
#[test]
fn the_mh_settings_line_shows_the_length_that_is_run() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("m.bayes");
    std::fs::write(
        &model,
        "parameters { real mu; real<lower=0> sigma; }\n\
         model { mu ~ normal(1, 2); sigma ~ lognormal(0, 0.5); }\n",
    )
    .unwrap();
    let model = model.display().to_string();
    for (options, length) in [
        (
            "mh --seed 1",
            "4 chains × (2000 warmup + draws until mixed: 2000 in the first round, at most 20000; \
             the length kept is printed after the run)",
        ),
        (
            "mh --seed 1 --samples 300",
            "4 chains × (2000 warmup + 300 draws)",
        ),
    ] {
        let mut cli_args = vec![model.as_str(), "--method"];
        cli_args.extend(options.split(' '));
        let (cli, repl) = preambles(
            &cli_args,
            &[format!(":load {model}"), format!(":fit {options}")],
            1,
        );
        assert_eq!(cli, repl);
        assert!(
            repl.starts_with("method = mh; d = 2 unconstrained parameters; ")
                && repl.contains(length),
            "{repl}"
        );
    }
}

/// A QBVI fit whose q collapsed to a point (MA(1) of `tests/fixtures/ma1` from a random start,
/// seed 1: sds 2e-15 to 3e-14) gets the same verdict in `:fit`, `:diagnostics` and `:fits` as in
/// `bayesc fit` (not converged, for the same reason) and the same collapse advice (every
/// parameter has a prior, so priors are not blamed). `:fit` said "converged (the smoothed-ELBO
/// exit rule fired)" above a collapse warning, and its warning told the user to check priors
/// (fresh-user finding, session 20).
#[test]
fn a_collapsed_qbvi_fit_gets_the_verdict_of_bayesc_fit() {
    let model = path("tests/fixtures/ma1/model.bayes");
    let data = path("tests/fixtures/ma1/data.json");
    let cli = Command::new(env!("CARGO_BIN_EXE_bayesc"))
        .arg("fit")
        .arg(&model)
        .arg("--data")
        .arg(&data)
        .args(["--method", "qbvi", "--random-init", "--seed", "1", "-q"])
        .output()
        .unwrap();
    let cli_text = String::from_utf8_lossy(&cli.stdout);
    assert!(
        cli_text.contains("collapsed to a point in `mu`"),
        "{cli_text}"
    );
    let cli_reason = cli_text
        .strip_prefix("WARNING: not converged: the exit rule fired after 83 iterations (")
        .and_then(|t| t.split_once("), but "))
        .map(|(_, reason)| reason.lines().next().unwrap_or_default())
        .unwrap_or_else(|| panic!("no not-converged verdict in\n{cli_text}"));
    let cli_reason = cli_reason
        .split_once(". The summary below")
        .map_or(cli_reason, |(r, _)| r);

    let mut s = Session::new();
    s.set_progress(false);
    common::repl_ok(&mut s, &format!(":load {model}"));
    common::repl_ok(&mut s, &format!(":data {data}"));
    let text = common::repl_ok(&mut s, ":fit qbvi --random-init --seed 1");
    assert!(text.contains("collapsed to a point in `mu`"), "{text}");
    let line = text
        .lines()
        .find(|l| l.starts_with("NOT converged after 83 iterations ("))
        .unwrap_or_else(|| panic!("no NOT converged line in\n{text}"));
    assert!(line.ends_with(cli_reason), "{line}\n vs CLI: {cli_reason}");
    assert!(!text.contains("converged (the smoothed-ELBO"), "{text}");
    // the advice of `bayesc fit`, which knows the model's priors
    assert!(text.contains("Every parameter has a prior"), "{text}");
    assert!(!text.contains("check priors"), "{text}");
    let d = common::repl_ok(&mut s, ":diagnostics");
    assert!(
        d.contains(&format!(
            "stop reason: the exit rule fired; NOT converged: {cli_reason}"
        )),
        "{d}"
    );
    assert!(d.contains("Every parameter has a prior"), "{d}");
    assert!(common::repl_ok(&mut s, ":fits").contains("NOT converged"));
}

/// A proper posterior that is narrow relative to its location is not a collapse: `mu ~
/// normal(123456789.123, 1e-4)` has sd/|mean| = 8e-13 but sd 1e-4, thousands of units in the
/// last place of the mean (`fit::COLLAPSE_ABSOLUTE_SD`). QBVI converges there and both views
/// say so; the relative rule alone called it collapsed (fresh-user finding, session 20).
#[test]
fn a_narrow_posterior_far_from_zero_is_not_a_collapse() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("narrow.bayes");
    std::fs::write(
        &model,
        "parameters { real mu; }\nmodel { mu ~ normal(123456789.123, 1e-4); }\n",
    )
    .unwrap();
    let cli = Command::new(env!("CARGO_BIN_EXE_bayesc"))
        .arg("fit")
        .arg(&model)
        .args(["--seed", "1", "-q"])
        .output()
        .unwrap();
    let cli_text = String::from_utf8_lossy(&cli.stdout);
    assert!(
        cli_text.starts_with("converged: the exit rule fired"),
        "{cli_text}"
    );
    assert!(!cli_text.contains("collapsed"), "{cli_text}");
    let mut s = Session::new();
    s.set_progress(false);
    common::repl_ok(&mut s, &format!(":load {}", model.display()));
    let text = common::repl_ok(&mut s, ":fit qbvi --seed 1");
    assert!(
        !text.contains("collapsed") && !text.contains("NOT converged"),
        "{text}"
    );
    assert!(common::repl_ok(&mut s, ":fits").contains(" converged"));
}
