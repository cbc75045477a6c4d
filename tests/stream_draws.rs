//! MCMC draws are streamed to the chain files as they are made (issue 13, item 7): SIGTERM
//! (like Ctrl-C) keeps what was sampled, in files marked incomplete; a `kill -9` leaves files
//! readable up to their last row; a finished run's files are byte for byte those the writer of
//! the whole result (`write_outputs`) gives. Before, the draws were written only at the end,
//! so SIGTERM lost every one of them (the process died with no file).

mod common;

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use bayesc::fit::{self, FitOptions, McmcStream, Method, Monitor};
use bayesc::inference::LogDensity;
use bayesc::inference::mcmc::MetricChoice;
use bayesc::output::fit_files::write_outputs;
use bayesc::output::stan_csv::read_stan_csv;
use bayesc::output::stan_stream::ChainFiles;

const MODEL: &str = "parameters { real mu; real<lower=0> sigma; }\n\
                     model { mu ~ normal(1, 2); sigma ~ lognormal(0, 0.5); }\n\
                     generated quantities { real z = normal_rng(mu, sigma); }\n";

/// The data rows of a Stan CSV text (after the header), each checked to have as many numeric
/// fields as the header has columns.
fn numeric_rows(text: &str) -> Vec<Vec<f64>> {
    let mut lines = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty());
    let header = lines.next().expect("a header line");
    assert!(header.starts_with("lp__,accept_stat__,"), "{header}");
    let k = header.split(',').count();
    lines
        .map(|l| {
            let row: Vec<f64> = l.split(',').map(|f| f.parse().unwrap()).collect();
            assert_eq!(row.len(), k, "{l}");
            row
        })
        .collect()
}

/// Starts a long NUTS run writing `dir/x_c.csv` and waits until chain 1's file has a draw.
#[cfg(unix)]
fn start_long_run(dir: &Path) -> std::process::Child {
    let model = dir.join("normal.bayes");
    std::fs::write(&model, MODEL).unwrap();
    let out = dir.join("x.csv");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_bayesc"))
        .args(["fit", model.to_str().unwrap(), "--method", "nuts"])
        .args(["--warmup", "200", "--samples", "5000000", "--seed", "3"])
        .args(["--output", out.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run bayesc");
    let first = dir.join("x_1.csv");
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(&first).unwrap_or_default();
        if text.lines().filter(|l| !l.starts_with('#')).count() >= 3 {
            return child;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no draws streamed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(unix)]
#[test]
fn sigterm_keeps_the_streamed_draws_marked_incomplete() {
    sigterm_run(1);
}

/// GNU `timeout` signals the process and its process group, so one termination arrives twice
/// within microseconds: it is one request, not the "second SIGTERM" that quits at once
/// (before, the files were left untrimmed and unmarked).
#[test]
fn a_sigterm_delivered_twice_at_once_is_one_request() {
    sigterm_run(2);
}

/// Starts a long run, sends SIGTERM `times` times back to back, and checks the files.
fn sigterm_run(times: usize) {
    let dir = tempfile::tempdir().unwrap();
    let child = start_long_run(dir.path());
    // the draws are on disk while the run goes on
    let during = std::fs::read_to_string(dir.path().join("x_1.csv")).unwrap();
    assert!(during.contains("# method = sample"));
    // a file read while the writer is mid-row can end in part of a row (seen in CI under
    // load: a last line "-0"); only the lines up to the last newline are complete
    let complete = &during[..during.rfind('\n').map_or(0, |i| i + 1)];
    assert!(!numeric_rows(complete).is_empty());
    std::thread::sleep(Duration::from_millis(300));
    for _ in 0..times {
        // SAFETY: sending a signal to our own child process.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    }
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(143), "{text}\n{err}");
    assert!(err.contains("terminated (SIGTERM)"), "{err}");
    assert!(text.contains("INTERRUPTED after"), "{text}");
    assert!(
        text.contains("(incomplete: each ends with `# interrupted: "),
        "{text}"
    );
    let csv = std::fs::read_to_string(dir.path().join("x_1.csv")).unwrap();
    let rows = numeric_rows(&csv);
    assert!(!rows.is_empty());
    let last = csv.lines().last().unwrap();
    assert_eq!(
        last,
        format!("# interrupted: {} of 5000000 draws", rows.len())
    );
    assert!(csv.contains(&format!("num_samples = {}\n", rows.len())));
    // the header names the columns; sigma > 0 and z finite in every row
    assert!(csv.contains(
        "\nlp__,accept_stat__,stepsize__,treedepth__,n_leapfrog__,divergent__,energy__,mu,sigma,z\n"
    ));
    assert!(rows.iter().all(|r| r[8] > 0.0 && r[9].is_finite()));
    // bayesc's own reader takes it
    let read = read_stan_csv(&dir.path().join("x_1.csv")).unwrap();
    assert_eq!(read.n_draws, rows.len());
}

#[cfg(unix)]
#[test]
fn a_killed_run_leaves_files_readable_to_their_last_row() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = start_long_run(dir.path());
    std::thread::sleep(Duration::from_millis(300));
    child.kill().unwrap(); // SIGKILL: no handler runs
    child.wait().unwrap();
    let path = dir.path().join("x_1.csv");
    let csv = std::fs::read_to_string(&path).unwrap();
    // Every row goes out in one `write`, but Linux may cut a write short at a page boundary
    // when SIGKILL is pending: a partial last row is possible, and the reader leaves it out.
    let complete = match csv.rfind('\n') {
        Some(i) if !csv.ends_with('\n') => &csv[..=i],
        _ => csv.as_str(),
    };
    let rows = numeric_rows(complete);
    assert!(rows.len() > 2);
    assert!(!csv.contains("interrupted"));
    let read = read_stan_csv(&path).unwrap();
    assert_eq!(read.partial_last_row, !csv.ends_with('\n'));
    assert_eq!(read.n_draws, rows.len());
    assert_eq!(read.names, ["mu", "sigma", "z"]);
}

/// A finished run's streamed files equal, byte for byte, the files `write_outputs` writes
/// from the result, for NUTS (dense and diagonal metric), static HMC and MH.
#[test]
fn a_finished_run_streams_the_same_files_as_the_result_writer() {
    let model = common::compile_source("stream.bayes", MODEL, None, &[]);
    let dir = tempfile::tempdir().unwrap();
    let model_path = dir.path().join("stream.bayes");
    for (method, metric) in [
        (Method::Nuts, MetricChoice::Dense),
        (Method::Nuts, MetricChoice::Diag),
        (Method::Hmc, MetricChoice::Auto),
        (Method::Mh, MetricChoice::Auto),
    ] {
        let mut options = FitOptions::new(method, 11);
        options.mcmc.chains = 3;
        options.mcmc.warmup = 150;
        options.mcmc.samples = 200;
        options.mcmc.thin = 2;
        options.mcmc.metric = metric;
        let streamed = dir.path().join("s.csv");
        let files = ChainFiles::new(
            &streamed,
            &model_path,
            &options,
            &fit::draw_names(&model),
            model.dim(),
        );
        let stop = AtomicBool::new(false);
        let monitor = Monitor {
            on_progress: &|_| {},
            stop: &stop,
        };
        let result =
            fit::fit_with_stream(&model, &options, &monitor, Some(&files as &dyn McmcStream))
                .unwrap();
        let names = files.finish(&result).unwrap();
        assert_eq!(names.len(), 3);
        let whole = dir.path().join("w.csv");
        write_outputs(&whole, &result, &options, &model_path).unwrap();
        for c in 1..=3 {
            let a = std::fs::read_to_string(dir.path().join(format!("s_{c}.csv"))).unwrap();
            let b = std::fs::read_to_string(dir.path().join(format!("w_{c}.csv"))).unwrap();
            assert_eq!(a, b, "{method:?} {metric:?} chain {c}");
            assert_eq!(numeric_rows(&a).len(), 100);
        }
        // and the draws are those of a fit without streaming
        let plain = fit::fit(&model, &options, &monitor).unwrap();
        assert_eq!(plain.draws.chains, result.draws.chains);
    }
}

/// fixed_param with a long loop in the generated quantities: SIGTERM arrives inside one draw's
/// loop, which stops at the interrupt flag; that draw is dropped and the earlier ones are
/// kept, marked incomplete (before, the stopped loop failed the whole fit and nothing was
/// written).
#[cfg(unix)]
#[test]
fn sigterm_inside_a_fixed_param_loop_keeps_the_earlier_draws() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("loop.bayes");
    std::fs::write(
        &model,
        "parameters { real mu; }\nmodel { mu ~ normal(0, 1); }\n\
         generated quantities {\n  real s = 0;\n  for (i in 1:3000000) {\n    s += normal_rng(0, 1);\n  }\n}\n",
    )
    .unwrap();
    let out = dir.path().join("f.csv");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_bayesc"))
        .args(["fit", model.to_str().unwrap(), "--method", "fixed_param"])
        .args(["--chains", "1", "--samples", "100000", "--seed", "3"])
        .args(["--output", out.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run bayesc");
    let first = dir.path().join("f_1.csv");
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(&first).unwrap_or_default();
        if text.lines().filter(|l| !l.starts_with('#')).count() >= 3 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no draws streamed"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: sending a signal to our own child process.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let t = Instant::now();
    let o = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(o.status.code(), Some(143), "{text}");
    assert!(t.elapsed() < Duration::from_secs(10), "{text}");
    let csv = std::fs::read_to_string(&first).unwrap();
    let rows: Vec<&str> = csv
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .skip(1)
        .collect();
    assert!(rows.len() >= 2, "{csv}");
    assert_eq!(
        csv.lines().last().unwrap(),
        format!("# interrupted: {} of 100000 draws", rows.len())
    );
}
