//! The command line end to end: exit codes (0 success, 1 model/data/fit error, 2 usage error),
//! clear messages for bad input, never a panic, and a real fit of the labour example.

mod common;

use std::process::{Command, Output};

fn bayesc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bayesc"))
        .args(args)
        .current_dir(common::root())
        .output()
        .expect("run bayesc")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn assert_no_panic(o: &Output) {
    let err = stderr(o);
    assert!(!err.contains("panicked"), "bayesc panicked:\n{err}");
}

fn scratch(name: &str, text: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(name);
    std::fs::write(&path, text).expect("write");
    let p = path.display().to_string();
    (dir, p)
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &[][..],
        &["fit"][..],
        &["fit", "m.bayes", "--bogus"][..],
        &["frobnicate"][..],
    ] {
        let o = bayesc(args);
        assert_eq!(o.status.code(), Some(2), "args {args:?}: {}", stderr(&o));
        assert_no_panic(&o);
    }
    let o = bayesc(&[
        "fit",
        "examples/labour/model.bayes",
        "--data",
        "examples/labour/labour.csv",
        "--step-size",
        "2",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--step-size"), "{}", stderr(&o));
}

#[test]
fn help_is_complete() {
    let o = bayesc(&["--help"]);
    assert_eq!(o.status.code(), Some(0));
    for word in ["fit", "check", "summary"] {
        assert!(stdout(&o).contains(word), "--help lacks {word}");
    }
    let o = bayesc(&["fit", "--help"]);
    for word in [
        "--data",
        "--method",
        "--seed",
        "--draws",
        "--output",
        "--diagonal",
    ] {
        assert!(stdout(&o).contains(word), "fit --help lacks {word}");
    }
}

#[test]
fn missing_model_file_is_a_clear_error() {
    let o = bayesc(&[
        "fit",
        "no/such/model.bayes",
        "--data",
        "examples/labour/labour.csv",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("no/such/model.bayes"), "{}", stderr(&o));
    assert_no_panic(&o);
}

#[test]
fn missing_data_flag_is_a_usage_error() {
    let o = bayesc(&["fit", "examples/labour/model.bayes"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--data"), "{}", stderr(&o));
}

#[test]
fn syntax_error_points_at_the_model() {
    let (_d, model) = scratch(
        "bad.bayes",
        "parameters { real mu }\nmodel { mu ~ normal(0, 1); }\n",
    );
    let o = bayesc(&["check", &model]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("error") && err.contains("bad.bayes:1:"),
        "{err}"
    );
    assert_no_panic(&o);
}

#[test]
fn unknown_distribution_suggests_the_nearest() {
    let (_d, model) = scratch(
        "m.bayes",
        "parameters { real mu; }\nmodel { mu ~ nromal(0, 1); }\n",
    );
    let o = bayesc(&["check", &model]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("normal"), "{}", stderr(&o));
}

#[test]
fn data_errors_name_file_row_and_column() {
    let (dir, csv) = scratch(
        "d.csv",
        "lfp,k5,k618,age,wc,hc,lwg,inc\n1,1,0,32,0,0,1.2,10.9\n1,NA,2,30,0,0,0.3,19.5\n",
    );
    let o = bayesc(&["fit", "examples/labour/model.bayes", "--data", &csv]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("d.csv") && err.contains("k5") && err.contains('3'),
        "{err}"
    );
    assert_no_panic(&o);
    drop(dir);

    let (_d2, csv) = scratch("e.csv", "lfp,k5\n1,0\n");
    let o = bayesc(&["fit", "examples/labour/model.bayes", "--data", &csv]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("k618"),
        "missing column should be named: {}",
        stderr(&o)
    );
}

#[test]
fn garbage_inputs_never_panic() {
    let garbage = "\u{0}\u{1}{{{{ ]]]] ;;; data { real x[ } model { ~ ~ }";
    let (_d, model) = scratch("g.bayes", garbage);
    let o = bayesc(&["check", &model]);
    assert_eq!(o.status.code(), Some(1));
    assert_no_panic(&o);
    let (_d2, data) = scratch("g.json", "{\"N\": [1, 2, ");
    let o = bayesc(&["fit", "examples/labour/model.bayes", "--data", &data]);
    assert_eq!(o.status.code(), Some(1));
    assert_no_panic(&o);
    let (_d3, data) = scratch("g.txt", "hello");
    let o = bayesc(&["fit", "examples/labour/model.bayes", "--data", &data]);
    assert_eq!(o.status.code(), Some(1));
    assert_no_panic(&o);
}

#[test]
fn labour_fit_end_to_end_writes_draws() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("draws.csv");
    let o = bayesc(&[
        "fit",
        "examples/labour/model.bayes",
        "--data",
        "examples/labour/labour.csv",
        "--seed",
        "3",
        "--draws",
        "500",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("converged"), "{text}");
    for name in [
        "alpha", "beta[1]", "beta[7]", "mean", "sd", "5%", "50%", "95%",
    ] {
        assert!(text.contains(name), "summary lacks {name}:\n{text}");
    }
    // CmdStan's variational layout: config comments, lp__/log_p__/log_g__, a mean row, draws
    let csv = std::fs::read_to_string(&out).expect("draws file");
    assert!(csv.contains("\n# method = variational\n"), "{csv:.400}");
    // the keys cmdstanpy's from_csv needs (checked by hand with cmdstanpy 1.3.2 and 1.2.5;
    // what each says for each method: tests/vi_csv_header.rs)
    for key in [
        "#     algorithm = fullrank\n",
        "#     iter = ",
        "#     grad_samples = ",
        "#     elbo_samples = ",
        "#     tol_rel_obj = ",
        "#     eval_elbo = ",
        "#     output_samples = 500\n",
        "\n# Stepsize adaptation complete. (CmdStan's line, kept for cmdstanpy",
        "set by bayesc, see the eta note above)\n# eta = 0.05\n",
    ] {
        assert!(csv.contains(key), "{key}: {csv:.700}");
    }
    let mut lines = csv.lines().filter(|l| !l.starts_with('#'));
    let header = lines.next().unwrap();
    assert!(
        header.starts_with("lp__,log_p__,log_g__,alpha,beta.1,") && header.ends_with("beta.7"),
        "{header}"
    );
    let rows: Vec<Vec<f64>> = lines
        .map(|l| l.split(',').map(|v| v.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len(), 501, "mean row + 500 draws");
    assert_eq!(&rows[0][..3], &[0.0, 0.0, 0.0]);
    for r in &rows[1..] {
        // log p is the labour log density (about -460 near the mode); log q the Gaussian's
        assert!(r[0] == 0.0 && r[1] < -440.0 && r[1] > -500.0, "{r:?}");
        assert!(r[2].is_finite() && r[2] < 20.0, "{r:?}");
    }
    // `bayesc summary` reads it back (dropping the mean row): 500 independent draws of q,
    // without the MCMC columns
    let o = bayesc(&["summary", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).starts_with(
            "summary from 500 independent draws of the fitted approximation (method = \
             variational)"
        ) && !stdout(&o).contains("R_hat"),
        "{}",
        stdout(&o)
    );
    // a data CSV is not a draws file
    let o = bayesc(&["summary", "examples/labour/labour.csv"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("no sampler column such as `lp__`"),
        "{}",
        stderr(&o)
    );
}

/// A running `bayesc` child for the Ctrl-C tests: started with piped output, and returned
/// once it has printed its settings line (printed just before the Ctrl-C handler is installed
/// and the fit starts), with the rest of its standard output.
#[cfg(unix)]
struct Interruptible {
    child: std::process::Child,
    stdout: std::io::BufReader<std::process::ChildStdout>,
}

#[cfg(unix)]
impl Interruptible {
    fn start(args: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_bayesc"))
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run bayesc");
        let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut first = String::new();
        std::io::BufRead::read_line(&mut stdout, &mut first).unwrap();
        assert!(first.starts_with("method = "), "{first}");
        Interruptible { child, stdout }
    }

    /// Sends one SIGINT (Ctrl-C).
    fn interrupt(&self) {
        // SAFETY: sending a signal to our own child process.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGINT) };
    }

    fn running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// Waits at most `limit` for the exit; returns the status, the rest of stdout and stderr.
    fn wait(mut self, limit: std::time::Duration) -> (std::process::ExitStatus, String, String) {
        use std::io::Read;
        let start = std::time::Instant::now();
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            assert!(start.elapsed() < limit, "still running");
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        let (mut out, mut err) = (String::new(), String::new());
        self.stdout.read_to_string(&mut out).unwrap();
        let mut stderr = self.child.stderr.take().unwrap();
        stderr.read_to_string(&mut err).unwrap();
        (status, out, err)
    }
}

#[cfg(unix)]
#[test]
fn a_second_ctrl_c_exits_a_model_that_never_returns() {
    use std::time::Duration;
    let dir = tempfile::tempdir().expect("tempdir");
    let model = dir.path().join("loop.bayes");
    std::fs::write(
        &model,
        // One evaluation takes seconds in a single built-in (the LU factorisation of a
        // 4000 × 4000 matrix), which cannot look at Ctrl-C; loops can, and stop at the first
        // Ctrl-C (tests/error_causes_cli.rs).
        "parameters { real mu; }\nmodel { matrix[4000, 4000] A = add_diag(rep_matrix(0.0001, 4000, 4000), 1); mu ~ normal(0, 1); target += 1e-9 * log_determinant(A); }\n",
    )
    .unwrap();
    let mut run = Interruptible::start(&["fit", model.to_str().unwrap()]);
    std::thread::sleep(Duration::from_millis(500));
    run.interrupt();
    std::thread::sleep(Duration::from_millis(300));
    assert!(run.running(), "the evaluation ignores the first Ctrl-C");
    run.interrupt();
    let (status, _, err) = run.wait(Duration::from_secs(10));
    assert_eq!(status.code(), Some(130));
    assert!(err.contains("interrupted twice"), "{err}");
}

#[test]
fn draws_that_cannot_fit_in_memory_are_refused_before_allocating() {
    for args in [
        ["--method", "nuts", "--samples", "1000000000000"],
        ["--method", "qbvi", "--draws", "1000000000000"],
    ] {
        let mut all = vec![
            "fit",
            "examples/labour/model.bayes",
            "--data",
            "examples/labour/labour.csv",
        ];
        all.extend(args);
        let o = bayesc(&all);
        assert_no_panic(&o);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(stderr(&o).contains("GB of memory"), "{}", stderr(&o));
    }
}

#[test]
fn summary_refuses_files_that_are_not_chains_of_one_fit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let nuts = dir.path().join("n.csv");
    let vi = dir.path().join("v.csv");
    let base = [
        "fit",
        "examples/eight_schools/model.bayes",
        "--data",
        "examples/eight_schools/schools.csv",
        "--seed",
        "1",
    ];
    let mut a = base.to_vec();
    a.extend([
        "--method",
        "nuts",
        "--warmup",
        "100",
        "--samples",
        "100",
        "--chains",
        "2",
    ]);
    a.extend(["--output", nuts.to_str().unwrap()]);
    assert_eq!(bayesc(&a).status.code(), Some(0));
    let mut b = base.to_vec();
    b.extend(["--output", vi.to_str().unwrap()]);
    assert_eq!(bayesc(&b).status.code(), Some(0));
    let c1 = dir.path().join("n_1.csv");
    let c2 = dir.path().join("n_2.csv");
    let ok = bayesc(&["summary", c1.to_str().unwrap(), c2.to_str().unwrap()]);
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
    let twice = bayesc(&["summary", c1.to_str().unwrap(), c1.to_str().unwrap()]);
    assert_eq!(twice.status.code(), Some(1));
    assert!(
        stderr(&twice).contains("identical draws"),
        "{}",
        stderr(&twice)
    );
    let mixed = bayesc(&["summary", c1.to_str().unwrap(), vi.to_str().unwrap()]);
    assert_eq!(mixed.status.code(), Some(1));
    assert!(
        stderr(&mixed).contains("`variational` fit"),
        "{}",
        stderr(&mixed)
    );
}

/// Ctrl-C during NUTS with 4 chains on (at most) 2 cores: the chains stop at different
/// iterations and the last ones may not have started. Once a panic in the summary; now the
/// kept chains are trimmed to a common length, the summary is printed, the draws are written
/// (marked as interrupted, `num_samples` the kept count) and the exit status is 130.
#[cfg(unix)]
#[test]
fn ctrl_c_during_a_multi_chain_fit_keeps_the_draws_made() {
    use std::time::Duration;
    let dir = tempfile::tempdir().expect("tempdir");
    let model = dir.path().join("normal.bayes");
    std::fs::write(
        &model,
        "parameters { real mu; }\nmodel { mu ~ normal(0, 1); }\n",
    )
    .unwrap();
    let out = dir.path().join("x.csv");
    let run = Interruptible::start(&[
        "fit",
        model.to_str().unwrap(),
        "--method",
        "nuts",
        "--chains",
        "4",
        "--warmup",
        "200",
        "--samples",
        "3000000",
        "--seed",
        "1",
        "--output",
        out.to_str().unwrap(),
    ]);
    std::thread::sleep(Duration::from_millis(1500));
    run.interrupt();
    let (status, text, err) = run.wait(Duration::from_secs(30));
    assert!(!err.contains("panicked"), "bayesc panicked:\n{err}");
    assert_eq!(status.code(), Some(130), "{text}\n{err}");
    // "INTERRUPTED after … s (wall): k chains (chains 1 and 3) × n draws kept (of 4 chains; …)"
    let line = text
        .lines()
        .find(|l| l.starts_with("INTERRUPTED after"))
        .unwrap_or_else(|| panic!("no INTERRUPTED line in\n{text}"));
    let after = line.split(": ").nth(1).unwrap();
    let words: Vec<&str> = after.split_whitespace().collect();
    let k: usize = words[0].parse().unwrap();
    let times = words.iter().position(|w| *w == "×").unwrap();
    let n: usize = words[times + 1].parse().unwrap();
    assert!((1..=4).contains(&k) && n > 0, "{line}");
    // the kept chains by their own numbers: "chain 2", "chains 1 and 3", "chains 1–3", …
    let list = after.split('(').nth(1).unwrap().split(')').next().unwrap();
    let mut kept: Vec<usize> = Vec::new();
    for part in list
        .replace(" and ", ", ")
        .trim_start_matches("chains ")
        .trim_start_matches("chain ")
        .split(", ")
    {
        match part.split_once('–') {
            Some((a, b)) => kept.extend(a.parse::<usize>().unwrap()..=b.parse::<usize>().unwrap()),
            None => kept.push(part.parse().unwrap()),
        }
    }
    assert_eq!(kept.len(), k, "{line}");
    assert!(text.contains("R_hat") && text.contains("\nmu "), "{text}");
    for c in 1..=4 {
        let file = dir.path().join(format!("x_{c}.csv"));
        assert_eq!(
            file.exists(),
            kept.contains(&c),
            "{}: {line}",
            file.display()
        );
        if kept.contains(&c) {
            let csv = std::fs::read_to_string(&file).unwrap();
            assert!(csv.contains(&format!("# interrupted after {n} draws")));
            assert!(csv.contains(&format!("num_samples = {n}\n")));
            assert!(csv.contains(&format!("\n# id = {c}\n")), "{csv}");
            let rows = csv
                .lines()
                .filter(|l| !l.starts_with('#') && !l.is_empty())
                .count();
            assert_eq!(rows, n + 1, "header + {n} draws");
        }
    }
}

/// An empty model under an MCMC method is refused (exit 1) like QBVI refuses it.
#[test]
fn mcmc_refuses_an_empty_model() {
    let (_d, p) = scratch("empty.bayes", "parameters { }\nmodel { }\n");
    let o = bayesc(&["fit", &p, "--method", "nuts", "--seed", "1"]);
    assert_no_panic(&o);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("no parameters (d = 0)"),
        "{}",
        stderr(&o)
    );
    assert!(!stdout(&o).contains("draws per chain kept"));
}

#[test]
fn evaluate_warns_when_a_binary_test_set_has_no_positive_outcome() {
    // labour.csv is sorted by lfp: the last quarter (the default ordered split) is all zeros
    let o = bayesc(&[
        "evaluate",
        "examples/labour/experiment.bayes",
        "--data",
        "examples/labour/labour.csv",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("the test set has no observation with outcome 1"),
        "{}",
        stdout(&o)
    );
    assert!(stdout(&o).contains("--split-seed"));
}

#[test]
fn flags_of_other_methods_are_refused_not_ignored() {
    let base = [
        "fit",
        "examples/labour/model.bayes",
        "--data",
        "examples/labour/labour.csv",
    ];
    for (extra, flag) in [
        (vec!["--method", "nuts", "--draws", "50"], "--draws"),
        (vec!["--samples", "50"], "--samples"),
        (vec!["--method", "mh", "--dense"], "--dense"),
        (vec!["--method", "nuts", "--diagonal"], "--diagonal"),
        (vec!["--method", "hmc", "--max-depth", "5"], "--max-depth"),
    ] {
        let mut args = base.to_vec();
        args.extend(extra);
        let o = bayesc(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(&format!("{flag} applies to")),
            "{}",
            stderr(&o)
        );
    }
    let mut args = vec!["optimize"];
    args.extend(&base[1..]);
    args.extend(["--method", "nuts"]);
    assert_eq!(bayesc(&args).status.code(), Some(2));
}

#[test]
fn print_writes_to_standard_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let model = dir.path().join("p.bayes");
    let data = dir.path().join("p.json");
    std::fs::write(
        &model,
        "data { int N; vector[N] y; }\n\
         transformed data { print(\"N = \", N, \", mean(y) = \", mean(y)); }\n\
         parameters { real mu; }\n\
         model { y ~ normal(mu, 1); mu ~ normal(0, 10); }\n",
    )
    .unwrap();
    std::fs::write(&data, r#"{"N": 3, "y": [1, 2, 3]}"#).unwrap();
    let o = bayesc(&[
        "fit",
        model.to_str().unwrap(),
        "--data",
        data.to_str().unwrap(),
        "--seed",
        "1",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("N = 3, mean(y) = 2\n"),
        "{}",
        stderr(&o)
    );
}

/// Ctrl-C during a variational fit (BBVI, `--draws 100`): the draws file ends with a comment
/// saying at which iteration the fit was stopped before its exit rule, the note printed names
/// that iteration and the 100 draws (it once claimed `# interrupted: 100 of 1000 draws`, MCMC's
/// wording with the default `--samples`, and the file had no such comment), and the saved fit
/// records `interrupted`, so that `bayesc predict` warns before using it.
#[cfg(unix)]
#[test]
fn ctrl_c_during_a_variational_fit_marks_the_draws_and_the_saved_fit() {
    use std::time::Duration;
    let dir = tempfile::tempdir().expect("tempdir");
    let model = dir.path().join("slow.bayes");
    // each log density evaluation factorises a 150 × 150 matrix (one built-in, not a loop,
    // which Ctrl-C would stop with an error), so the exit rule cannot fire in 1.5 s
    std::fs::write(
        &model,
        "parameters { real mu; }\nmodel { matrix[150, 150] A = add_diag(rep_matrix(0.0001, \
         150, 150), 1); mu ~ normal(0, 1); target += 1e-9 * log_determinant(A); }\n\
         generated quantities { real m = mu; }\n",
    )
    .unwrap();
    let out = dir.path().join("f.csv");
    let fit = dir.path().join("f.json");
    let run = Interruptible::start(&[
        "fit",
        model.to_str().unwrap(),
        "--method",
        "bbvi",
        "--draws",
        "100",
        "--seed",
        "1",
        "--output",
        out.to_str().unwrap(),
        "--save-fit",
        fit.to_str().unwrap(),
    ]);
    std::thread::sleep(Duration::from_millis(1500));
    run.interrupt();
    let (status, text, err) = run.wait(Duration::from_secs(60));
    assert!(!err.contains("panicked"), "bayesc panicked:\n{err}");
    assert_eq!(status.code(), Some(130), "{text}\n{err}");
    let k: usize = text
        .lines()
        .find_map(|l| l.strip_prefix("interrupted after "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("no `interrupted after K iterations` line in\n{text}"));
    assert!(k > 0, "{text}");
    assert!(
        text.contains(&format!(
            "(incomplete: the fit was interrupted at iteration {k} before its exit rule; the 100 draws"
        )),
        "{text}"
    );
    assert!(!text.contains("of 1000 draws"), "{text}");
    let csv = std::fs::read_to_string(&out).unwrap();
    let last = csv.lines().last().unwrap();
    assert!(
        last.starts_with(&format!(
            "# interrupted: the fit was stopped at iteration {k} (Ctrl-C or SIGTERM) before its exit rule"
        )),
        "{last}"
    );
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&fit).unwrap()).unwrap();
    assert_eq!(saved["interrupted"], serde_json::Value::Bool(true));
    assert_eq!(saved["converged"], serde_json::Value::Bool(false));
    let p = bayesc(&[
        "predict",
        model.to_str().unwrap(),
        "--fit",
        fit.to_str().unwrap(),
    ]);
    assert_eq!(p.status.code(), Some(0), "{}", stderr(&p));
    assert!(
        stderr(&p).contains("warning: the fit was interrupted before it finished"),
        "{}",
        stderr(&p)
    );
}

/// A variational fit that finishes by its exit rule is saved as complete and converged, and
/// `bayesc predict` prints no caveat.
#[test]
fn a_converged_variational_fit_is_saved_as_complete() {
    let (dir, model) = scratch(
        "gq.bayes",
        "parameters { real mu; }\nmodel { mu ~ normal(1, 2); }\ngenerated quantities { real m = mu; }\n",
    );
    let fit = dir.path().join("f.json");
    let m = model.as_str();
    let o = bayesc(&["fit", m, "--seed", "1", "--save-fit", fit.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&fit).unwrap()).unwrap();
    assert_eq!(saved["interrupted"], serde_json::Value::Bool(false));
    assert_eq!(saved["converged"], serde_json::Value::Bool(true));
    let p = bayesc(&["predict", m, "--fit", fit.to_str().unwrap()]);
    assert_eq!(p.status.code(), Some(0), "{}", stderr(&p));
    assert!(!stderr(&p).contains("warning"), "{}", stderr(&p));
}

/// The progress spinner of a variational fit names the method being run (the CLI's and the
/// REPL's said `QBVI iteration …` for BBVI, VOGN and the other methods, or no name at all).
#[test]
fn the_progress_spinner_names_the_method_being_run() {
    use bayesc::fit::Method;
    use bayesc::output::progress::iteration_template;
    for (method, name) in [
        (Method::Bbvi, "BBVI"),
        (Method::Vogn, "VOGN"),
        (Method::Qnvb, "QNVB"),
        (Method::Qbvi, "QBVI"),
    ] {
        let cli = iteration_template(method, "");
        assert!(
            cli.starts_with(&format!("{{spinner}} {name} iteration {{pos}}")),
            "{cli}"
        );
        let repl = iteration_template(method, " Ctrl-C stops");
        assert!(repl.ends_with("[{elapsed}] Ctrl-C stops"), "{repl}");
        assert_eq!(
            repl.matches("QBVI").count(),
            usize::from(name == "QBVI"),
            "{repl}"
        );
    }
}

/// A run with no warmup (1 chain, 1 draw) warns that nothing was adapted (it printed `NaN`
/// columns and no warning at all); a warmup below the 150 iterations of Stan's three
/// adaptation stages is warned about, a longer one is not.
#[test]
fn a_missing_or_short_warmup_is_warned_about() {
    let (_d, m) = scratch(
        "tiny.bayes",
        "parameters { real alpha; }\nmodel { alpha ~ normal(1, 1); }\n",
    );
    let run = |extra: &[&str]| {
        let mut a = vec!["fit", m.as_str(), "--method", "nuts", "--seed", "1"];
        a.extend_from_slice(extra);
        let o = bayesc(&a);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        String::from_utf8_lossy(&o.stdout).to_string()
    };
    let text = run(&["--chains", "1", "--samples", "1", "--warmup", "0"]);
    assert!(text.contains("no warmup (--warmup 0)"), "{text}");
    let text = run(&["--chains", "2", "--samples", "300", "--warmup", "100"]);
    assert!(
        text.contains(
            "--warmup 100 is shorter than the 150 iterations of the three adaptation stages"
        ),
        "{text}"
    );
    let text = run(&["--chains", "2", "--samples", "300", "--warmup", "200"]);
    assert!(!text.contains("--warmup 200"), "{text}");
}

/// `predict` scoring a normal outcome with a model that generates no `y_rep` leaves out the
/// interval-coverage rows (they were printed with no values).
#[test]
fn predict_without_y_rep_prints_no_empty_coverage_rows() {
    let (dir, m) = scratch(
        "lin.bayes",
        "// @outcome y\ndata { int N; vector[N] x; vector[N] y; }\nparameters { real a; real b; real<lower=0> s; }\n\
         model { a ~ normal(0, 5); b ~ normal(0, 5); s ~ normal(0, 2); y ~ normal(a + b * x, s); }\n\
         generated quantities { vector[N] log_lik; vector[N] y_hat; for (n in 1:N) { \
         log_lik[n] = normal_lpdf(y[n] | a + b * x[n], s); y_hat[n] = a + b * x[n]; } }\n",
    );
    let data = dir.path().join("d.json");
    std::fs::write(
        &data,
        r#"{"N": 6, "x": [0, 1, 2, 3, 4, 5], "y": [0.1, 1.2, 1.9, 3.2, 3.9, 5.1]}"#,
    )
    .unwrap();
    let fit = dir.path().join("f.json");
    let d = data.to_str().unwrap();
    let o = bayesc(&[
        "fit",
        m.as_str(),
        "--data",
        d,
        "--seed",
        "1",
        "--save-fit",
        fit.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let p = bayesc(&[
        "predict",
        m.as_str(),
        "--fit",
        fit.to_str().unwrap(),
        "--data",
        d,
    ]);
    assert_eq!(p.status.code(), Some(0), "{}", stderr(&p));
    assert!(stderr(&p).contains("RMSE"), "{}", stderr(&p));
    assert!(!stderr(&p).contains("interval coverage"), "{}", stderr(&p));
}
