//! The REPL: the backend driven directly (labour example: QBVI and NUTS fits, compare,
//! posterior expressions, save, edit the prior and refit), a scripted session through the
//! binary, every error kind keeping the session alive, and a pseudo-terminal session (tab
//! completion, Ctrl-C at the prompt and during a fit) through util-linux `script`.

mod common;

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bayesc::repl::Session;
use bayesc::syntax::parser::input_is_complete;

fn path(rel: &str) -> String {
    common::root().join(rel).display().to_string()
}

/// A thread that interrupts the session's next fit `ms` milliseconds from now, retrying until a
/// fit is running to take the interrupt (at most 20 s).
fn interrupt_after(s: &Session, ms: u64) -> std::thread::JoinHandle<()> {
    let handle = s.interrupt_handle();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(ms));
        let start = Instant::now();
        while !handle.interrupt() {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "the fit never started"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    })
}

/// Runs `input` and asserts it succeeded; returns the text.
fn ok(s: &mut Session, input: &str) -> String {
    let o = s.execute(input);
    assert!(!o.is_error, "`{input}` failed:\n{}", o.text);
    o.text
}

/// Runs `input` and asserts it failed; returns the text.
fn err(s: &mut Session, input: &str) -> String {
    let o = s.execute(input);
    assert!(o.is_error, "`{input}` should fail but printed:\n{}", o.text);
    assert!(!o.quit);
    o.text
}

/// The number after ` = ` in an expression's output line.
fn value(text: &str) -> f64 {
    let rest = text.split(" = ").nth(1).expect("an expression result");
    rest.split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no number in {text}"))
}

/// The numeric cells of the table row whose first cell is `name`.
fn row(table: &str, name: &str) -> Vec<f64> {
    let line = table
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no row {name} in\n{table}"));
    line.split_whitespace()
        .skip(1)
        .map(|c| c.parse().unwrap_or(f64::NAN))
        .collect()
}

/// Feeds `text` to the session the way the frontends do: inputs end where brackets balance.
fn paste(s: &mut Session, text: &str) -> Vec<String> {
    let mut outs = Vec::new();
    let mut buf = String::new();
    for line in text.lines() {
        if !buf.is_empty() {
            buf.push('\n');
        }
        buf.push_str(line);
        if input_is_complete(&buf) {
            outs.push(ok(s, &std::mem::take(&mut buf)));
        }
    }
    assert!(buf.trim().is_empty(), "unbalanced paste");
    outs
}

#[test]
fn backend_labour_session() {
    let mut s = Session::new();
    s.set_progress(false);
    let loaded = ok(
        &mut s,
        &format!(":load {}", path("examples/labour/model.bayes")),
    );
    assert!(loaded.contains("parameters {alpha, beta}"), "{loaded}");
    ok(
        &mut s,
        &format!(":data {}", path("examples/labour/labour.csv")),
    );
    let f1 = ok(&mut s, ":fit qbvi --seed 1");
    assert!(f1.contains("stored as fit1"), "{f1}");
    let f2 = ok(
        &mut s,
        ":fit nuts --seed 1 --chains 2 --warmup 300 --samples 300",
    );
    assert!(
        f2.contains("stored as fit2") && f2.contains("R_hat"),
        "{f2}"
    );

    // the two fits agree: |mean difference| < 0.2 posterior sd for every quantity
    let cmp = ok(&mut s, ":compare fit1 fit2");
    let names = ["alpha", "beta[1]", "beta[4]", "beta[7]"];
    for n in names {
        let r = row(&cmp, n);
        assert_eq!(r.len(), 5, "{cmp}");
        let z = (r[2] - r[0]) / ((r[1] * r[1] + r[3] * r[3]) / 2.0).sqrt();
        assert!((z - r[4]).abs() < 0.02, "printed diff/sd {} vs {z}", r[4]);
        assert!(z.abs() < 0.2, "{n}: {cmp}");
    }

    // posterior expressions against the last fit (NUTS)
    let p = ok(&mut s, "mean(beta[1] < 0)");
    assert!((value(&p) - 1.0).abs() < 0.005, "{p}");
    assert!(p.contains("MCSE"), "{p}");
    let q = ok(&mut s, "quantile(alpha, 0.5)");
    assert!((value(&q) - 3.2).abs() < 0.15, "{q}");
    let bare = ok(&mut s, "alpha + beta[2]");
    assert!(
        bare.contains("MCSE") && bare.contains("5%") && bare.contains("95%"),
        "{bare}"
    );
    // sd(alpha + beta[2]) from the draws vs the sds and the implied correlation: just finite
    // and positive, and median = quantile(·, 0.5)
    assert!(value(&ok(&mut s, "sd(alpha + beta[2])")) > 0.0);
    assert_eq!(
        value(&ok(&mut s, "median(exp(alpha))")),
        value(&ok(&mut s, "quantile(exp(alpha), 0.5)"))
    );

    // :param of one element and of a whole vector
    let one = ok(&mut s, ":param beta[4] fit1");
    assert_eq!(one.lines().count(), 2, "{one}");
    assert_eq!(ok(&mut s, ":param beta").lines().count(), 8);

    // :save writes readable files: CmdStan's variational layout for QBVI (a mean row, then
    // the draws), Stan CSV per chain for NUTS
    let dir = tempfile::tempdir().unwrap();
    let vi = dir.path().join("vi.csv");
    ok(&mut s, &format!(":save fit1 {}", vi.display()));
    let text = std::fs::read_to_string(&vi).unwrap();
    let mut rows = text.lines().filter(|l| !l.starts_with('#'));
    let header = rows.next().unwrap();
    assert!(
        header.starts_with("lp__,log_p__,log_g__,alpha,beta.1,"),
        "{header}"
    );
    assert_eq!(rows.count(), 1001);
    ok(
        &mut s,
        &format!(":save fit2 {}", dir.path().join("nuts.csv").display()),
    );
    for c in 1..=2 {
        let stan =
            bayesc::output::read_stan_csv(&dir.path().join(format!("nuts_{c}.csv"))).unwrap();
        assert_eq!(stan.n_draws, 300);
        assert_eq!(stan.names[0], "alpha");
    }

    // diagnostics and the ELBO sparkline
    let d = ok(&mut s, ":diagnostics fit2");
    assert!(d.contains("max R-hat") && d.contains("divergences"), "{d}");
    let e = ok(&mut s, ":elbo fit1");
    assert!(e.chars().any(|c| ('▁'..='█').contains(&c)), "{e}");
    assert!(err(&mut s, ":elbo fit2").contains("fit2 (a nuts fit) keeps no ELBO trace"));

    // edit the prior: paste the model with beta ~ normal(0, 1), refit, beta[4] shrinks
    let original = std::fs::read_to_string(path("examples/labour/model.bayes")).unwrap();
    let edited = original.replace("beta ~ normal(0, 10);", "beta ~ normal(0, 1);");
    assert_ne!(edited, original);
    let outs = paste(&mut s, &edited);
    assert!(outs.last().unwrap().contains("model <repl>"), "{outs:?}");
    assert!(ok(&mut s, ":show").contains("beta ~ normal(0, 1);"));
    let f3 = ok(&mut s, ":fit qbvi --seed 1 as tight");
    assert!(f3.contains("stored as tight"), "{f3}");
    let wide = row(&ok(&mut s, ":param beta[4] fit1"), "beta[4]");
    let tight = row(&ok(&mut s, ":param beta[4] tight"), "beta[4]");
    assert!(
        tight[0] < wide[0] - 0.01,
        "mean {} vs {}",
        tight[0],
        wide[0]
    );
    assert!(tight[1] < wide[1], "sd {} vs {}", tight[1], wide[1]);
    let fits = ok(&mut s, ":fits");
    assert_eq!(fits.lines().count(), 3, "{fits}");
    assert!(fits.contains("tight") && fits.contains("<repl>"));
}

#[test]
fn every_error_keeps_the_session_alive() {
    let mut s = Session::new();
    s.set_progress(false);
    // fit before load
    assert!(err(&mut s, ":fit").contains("no model"));
    assert!(err(&mut s, "alpha").contains("no fit yet"));
    ok(&mut s, ":help");
    // a syntax error in a typed model: the codespan diagnostic points at the line
    let bad = err(&mut s, "parameters {\n  real mu\n}");
    assert!(
        bad.contains("<repl>:2") && bad.contains("expected `;`"),
        "{bad}"
    );
    ok(&mut s, "parameters {\n  real mu;\n}");
    // a semantic error with a suggestion
    let typo = err(&mut s, "model {\n  mu ~ nromal(0, 1);\n}");
    assert!(typo.contains("normal"), "{typo}");
    ok(&mut s, "model {\n  mu ~ normal(0, 1);\n}");
    let fit = ok(&mut s, ":fit qbvi --seed 2");
    assert!(fit.contains("stored as fit1"), "{fit}");
    assert!((value(&ok(&mut s, "mean(mu)"))).abs() < 0.2);
    // unknown command, with a suggestion
    assert!(err(&mut s, ":sumary").contains("did you mean `:summary`"));
    ok(&mut s, ":summary");
    // bad expressions: syntax, unknown name (did-you-mean), unknown function, nested reducer
    assert!(err(&mut s, "mu +").contains("error"));
    assert!(err(&mut s, "mean(m)").contains("unknown name `m`"));
    assert!(err(&mut s, "mean(muu)").contains("did you mean `mu`?"));
    assert!(err(&mut s, "exq(mu)").contains("did you mean `exp`?"));
    assert!(err(&mut s, "1 + mean(mu)").contains("reduces over the draws"));
    ok(&mut s, "sd(mu)");
    // bad fit options and methods
    assert!(err(&mut s, ":fit nutz").contains("nuts"));
    assert!(err(&mut s, ":fit nuts --chains 0").contains("chains"));
    assert!(err(&mut s, ":fit qbvi --step-size 2").contains("step-size"));
    assert!(err(&mut s, ":set chanis 2").contains("chains"));
    ok(&mut s, ":set seed 3");
    assert!(ok(&mut s, ":fit").contains("seed = 3"));
    // unknown fits and parameters
    assert!(err(&mut s, ":summary fit9").contains("no fit named"));
    assert!(err(&mut s, ":param muu").contains("did you mean `mu`?"));
    assert!(err(&mut s, ":compare fit1").contains("usage"));
    // saving to a missing directory
    assert!(err(&mut s, ":save /no/such/dir/d.csv").contains("cannot write"));
    // files: missing model file, model errors in a file, missing data column
    assert!(err(&mut s, ":load /no/such/model.bayes").contains("cannot read"));
    ok(
        &mut s,
        &format!(":load {}", path("examples/labour/model.bayes")),
    );
    let dir = tempfile::tempdir().unwrap();
    let csv = std::fs::read_to_string(path("examples/labour/labour.csv")).unwrap();
    // drop the last column (`inc`)
    let cut: String = csv
        .lines()
        .map(|l| l.rsplit_once(',').map_or(l, |(a, _)| a).to_string() + "\n")
        .collect();
    let short = dir.path().join("short.csv");
    std::fs::write(&short, cut).unwrap();
    let missing = err(&mut s, &format!(":data {}", short.display()));
    assert!(
        missing.contains("inc") && missing.contains("so they were not bound; no data are bound"),
        "{missing}"
    );
    assert!(err(&mut s, ":fit qbvi --seed 1").contains("inc"));
    ok(
        &mut s,
        &format!(":data {}", path("examples/labour/labour.csv")),
    );
    // a model file that changes on disk is reloaded before the next fit; a broken one is an error
    let m = dir.path().join("m.bayes");
    std::fs::write(&m, "parameters { real x; }\nmodel { x ~ normal(1, 1); }\n").unwrap();
    ok(&mut s, &format!(":load {}", m.display()));
    ok(&mut s, ":data");
    std::thread::sleep(Duration::from_millis(20));
    std::fs::write(&m, "parameters { real x; }\nmodel { x ~ normal(5, 1) }\n").unwrap();
    let broken = err(&mut s, ":fit qbvi --seed 1");
    assert!(broken.contains("expected `;`"), "{broken}");
    std::fs::write(&m, "parameters { real x; }\nmodel { x ~ normal(5, 1); }\n").unwrap();
    let refit = ok(&mut s, ":fit qbvi --seed 1");
    assert!(refit.starts_with("reloaded"), "{refit}");
    assert!((value(&ok(&mut s, "mean(x)")) - 5.0).abs() < 0.2);
    assert!(s.execute(":quit").quit);
}

fn script_input() -> String {
    format!(
        ":load {}\n:data {}\n:fit qbvi --seed 1\nmean(beta[1] < 0)\n:fits\n:nope\n:summary\n:quit\nalpha\n",
        path("examples/labour/model.bayes"),
        path("examples/labour/labour.csv")
    )
}

#[test]
fn scripted_session_through_the_binary() {
    let home = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_bayesc"))
        .arg("repl")
        .env("XDG_DATA_HOME", home.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script_input().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    // one input failed (:nope), so the exit code is 1; the session went on after it
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("bayesc> :fit qbvi --seed 1\nfit1: method = qbvi"),
        "{text}"
    );
    let p = text
        .lines()
        .find(|l| l.starts_with("mean(beta[1] < 0) = "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!((value(p) - 1.0).abs() < 0.005, "{p}");
    assert!(text.contains("did you mean `:note`") || text.contains("unknown command `:nope`"));
    let table = text.split("bayesc> :summary").nth(1).unwrap();
    let alpha = row(table, "alpha");
    assert!((alpha[0] - 3.2).abs() < 0.15, "{table}");
    // :quit ended the session: the line after it was not evaluated
    assert!(!text.contains("bayesc> alpha"), "{text}");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
}

/// Reads from `r` until `needle` appears in the accumulated output or `timeout` passes.
fn read_until(r: &mut impl Read, acc: &mut String, needle: &str, timeout: Duration) -> bool {
    let start = Instant::now();
    let mut buf = [0u8; 4096];
    while !acc.contains(needle) {
        if start.elapsed() > timeout {
            return false;
        }
        match r.read(&mut buf) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Ok(0) | Err(_) => return acc.contains(needle),
            Ok(n) => acc.push_str(&String::from_utf8_lossy(&buf[..n])),
        }
    }
    true
}

/// Waits until `needle` is on the screen followed by a fresh prompt.
fn wait(r: &mut impl Read, acc: &mut String, needle: &str) -> bool {
    let start = Instant::now();
    let t = Duration::from_secs(60);
    while start.elapsed() < t {
        read_until(r, acc, "bayesc> ", Duration::from_millis(300));
        if let Some(k) = acc.rfind(needle)
            && acc[k + needle.len()..].contains("bayesc> ")
        {
            return true;
        }
        // read more: the needle or the prompt may still be coming
        let mut buf = String::new();
        read_until(r, &mut buf, "\u{0}", Duration::from_millis(200));
        acc.push_str(&buf);
    }
    false
}

/// Runs `bayesc repl` on a pseudo-terminal made by util-linux `script` and checks tab
/// completion, Ctrl-C at the prompt (clears the line) and Ctrl-C during a fit (stops it; the
/// REPL keeps the draws, marked interrupted). Skipped, with a note, where `script` is missing.
#[test]
fn terminal_completion_and_ctrl_c() {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("note: util-linux `script` not found; pseudo-terminal test skipped");
        return;
    }
    let home = tempfile::tempdir().unwrap();
    // `exec`: bayesc leads the terminal session, so Ctrl-C signals it alone (not the shell)
    let cmd = format!("exec {} repl", env!("CARGO_BIN_EXE_bayesc"));
    let mut child = Command::new("script")
        .args(["-q", "-e", "-c", &cmd, "/dev/null"])
        .env("XDG_DATA_HOME", home.path())
        .env("TERM", "xterm")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    // a reader thread so that reads can time out
    let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    struct Chan(std::sync::mpsc::Receiver<Vec<u8>>);
    impl Read for Chan {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            match self.0.recv_timeout(Duration::from_millis(200)) {
                Ok(v) => {
                    let n = v.len().min(out.len());
                    out[..n].copy_from_slice(&v[..n]);
                    Ok(n)
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => Err(std::io::Error::new(
                    std::io::ErrorKind::WouldBlock,
                    "timeout",
                )),
                Err(_) => Ok(0),
            }
        }
    }
    let mut r = Chan(rx);
    let mut acc = String::new();
    let t = Duration::from_secs(60);
    let mut send = |s: &str| {
        stdin.write_all(s.as_bytes()).unwrap();
        stdin.flush().unwrap();
    };
    // Each input is sent only once its prompt is on the screen: rustyline may discard
    // type-ahead when it switches the terminal mode.
    assert!(wait(&mut r, &mut acc, "leaves"), "no prompt:\n{acc}");
    send(&format!(":load {}\r", path("examples/labour/model.bayes")));
    assert!(wait(&mut r, &mut acc, "parameters {alpha, beta}"), "{acc}");
    // tab completion of a command: `:dat<TAB>` becomes `:data` (redrawn after the prompt)
    send(":dat\t");
    assert!(
        wait(&mut r, &mut acc, "leaves") && read_until(&mut r, &mut acc, "bayesc> :data", t),
        "completion failed:\n{acc}"
    );
    send(&format!(" {}\r", path("examples/labour/labour.csv")));
    assert!(
        wait(&mut r, &mut acc, "the data fit the model"),
        "completion failed:\n{acc}"
    );
    // Ctrl-C at the prompt clears the line: `alpha` is never evaluated
    send("alphax");
    assert!(read_until(&mut r, &mut acc, "alphax", t), "{acc}");
    send("\x03");
    assert!(wait(&mut r, &mut acc, "alphax"), "{acc}");
    send(":fits\r");
    assert!(wait(&mut r, &mut acc, "no fits yet"), "{acc}");
    assert!(!acc.contains("unknown name"), "{acc}");
    // Ctrl-C during a long Metropolis-Hastings run stops it; the draws so far are kept
    let mark = acc.len();
    send(":fit mh --seed 1 --chains 2 --warmup 200 --samples 5000000 --thin 50\r");
    std::thread::sleep(Duration::from_millis(1500));
    send("\x03");
    assert!(
        wait(&mut r, &mut acc, "stored as fit1 (interrupted)"),
        "{}",
        &acc[mark..]
    );
    // the REPL survives and the interrupted fit can be queried; completion of a parameter
    send("mean(bet\t");
    assert!(
        read_until(&mut r, &mut acc, "mean(beta", t),
        "{}",
        &acc[mark..]
    );
    send("[1] < 0)\r");
    assert!(
        wait(&mut r, &mut acc, "mean(beta[1] < 0) = "),
        "{}",
        &acc[mark..]
    );
    send(":quit\r");
    let status = child.wait().unwrap();
    assert!(status.success(), "{acc}");
    assert!(!acc.contains("panicked"), "{acc}");
}

/// `:fit optimize` prints what `bayesc fit --method optimize` prints (estimates, standard
/// errors, log density), not a table of one "draw" with sd NaN; `:summary` shows the estimates.
#[test]
fn optimize_fits_print_estimates_and_standard_errors() {
    let mut s = Session::new();
    s.set_progress(false);
    ok(
        &mut s,
        "parameters {\n  real mu;\n}\nmodel {\n  mu ~ normal(1, 2);\n}",
    );
    let text = ok(&mut s, ":fit optimize --seed 1");
    assert!(!text.contains("draws from the fitted Gaussian"), "{text}");
    assert!(
        text.contains("method = optimize (L-BFGS + Newton polish"),
        "{text}"
    );
    assert!(text.contains("std. error"), "{text}");
    assert!(text.contains("log density at the optimum"), "{text}");
    // the mode of N(1, 2²) and its standard error 2
    let r = row(&text, "mu");
    assert!(
        (r[0] - 1.0).abs() < 1e-5 && (r[1] - 2.0).abs() < 1e-3,
        "{text}"
    );
    let summary = ok(&mut s, ":summary");
    let r = row(&summary, "mu");
    assert!(
        (r[0] - 1.0).abs() < 1e-5 && (r[1] - 2.0).abs() < 1e-3,
        "{summary}"
    );
}

/// Variational fits show the PSIS k-hat line and its warnings after `:fit` and in
/// `:diagnostics`, as the CLI does (one shared renderer).
#[test]
fn variational_fits_show_psis_diagnostics() {
    let mut s = Session::new();
    s.set_progress(false);
    ok(
        &mut s,
        "parameters {\n  real mu;\n}\nmodel {\n  mu ~ normal(1, 2);\n}",
    );
    for method in ["qbvi", "qnvb", "laplace"] {
        let text = ok(&mut s, &format!(":fit {method} --seed 1"));
        assert!(text.contains("PSIS k-hat = "), "{method}:\n{text}");
        let diag = ok(&mut s, ":diagnostics");
        assert!(diag.contains("PSIS k-hat = "), "{method}:\n{diag}");
        assert!(!diag.contains("no diagnostics beyond"), "{diag}");
    }
    // an improper posterior (two points, a line, a flat-prior scale): the improper warning
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("spike.json");
    std::fs::write(&data, r#"{"N": 2, "x": [1, 2], "y": [2, 3.5]}"#).unwrap();
    ok(
        &mut s,
        "data {\n  int N;\n  vector[N] x;\n  vector[N] y;\n}\nparameters {\n  real a;\n  real b;\n  real<lower=0> sigma;\n}\nmodel {\n  y ~ normal(a + b * x, sigma);\n}",
    );
    ok(&mut s, &format!(":data {}", data.display()));
    let text = ok(&mut s, ":fit qbvi --seed 1");
    let vi = s
        .fits()
        .last()
        .unwrap()
        .result
        .vi
        .clone()
        .expect("PSIS ran");
    // the density has no mode: QBVI starts at random, drifts, and says the posterior may be
    // improper (tests/vi_methods.rs)
    assert!(vi.no_mode.is_some() && !vi.unbounded.is_empty(), "{vi:?}");
    assert!(text.contains("may be improper"), "{text}");
    assert!(ok(&mut s, ":diagnostics").contains("may be improper"));
}

/// Ctrl-C during a 4-chain NUTS fit keeps the draws made so far (chains that had not started
/// on a 2-core machine are dropped, the others trimmed to a common length), instead of
/// discarding the fit.
#[test]
fn an_interrupted_multi_chain_fit_is_kept() {
    let mut s = Session::new();
    s.set_progress(false);
    ok(
        &mut s,
        "parameters {\n  real mu;\n}\nmodel {\n  mu ~ normal(0, 1);\n}",
    );
    let stopper = interrupt_after(&s, 1500);
    let text = ok(
        &mut s,
        ":fit nuts --chains 4 --warmup 200 --samples 3000000 --seed 1 as big",
    );
    stopper.join().unwrap();
    assert!(text.contains("stored as big (interrupted)"), "{text}");
    assert!(text.contains("draws kept (of 4 chains"), "{text}");
    let f = s.fits().last().unwrap();
    let k = f.result.draws.chains.len();
    let n = f.result.draws.n_draws();
    assert!((1..=4).contains(&k) && n > 0);
    // "2 chains (chains 1 and 3) × 500 draws kept": the kept chains by their own numbers
    let line = text.lines().find(|l| l.contains("draws kept")).unwrap();
    assert!(line.contains(&format!(": {k} chain")), "{text}");
    assert!(line.contains(&format!(") × {n} draws kept")), "{text}");
    let width = f.result.draws.names.len();
    assert!(f.result.draws.chains.iter().all(|c| c.len() == n * width));
    // the chains are numbered as in the files `:save` writes: on 2 cores the kept chains are
    // often 1 and 3, which `:diagnostics` listed as "chain 1 … chain 2"
    let ids = match &f.result.details {
        bayesc::fit::FitDetails::Mcmc(out) => out.chain_ids(),
        _ => panic!("an MCMC fit"),
    };
    let d = ok(&mut s, ":diagnostics big");
    assert!(d.contains("INTERRUPTED"), "{d}");
    let listed: Vec<usize> = d
        .lines()
        .filter_map(|l| l.strip_prefix("chain ")?.split(':').next()?.parse().ok())
        .collect();
    let want: Vec<usize> = ids.iter().map(|c| c + 1).collect();
    assert_eq!(listed, want, "{d}");
    assert!(value(&ok(&mut s, "mean(mu)")).abs() < 0.2);
}

/// `:fit` honours `bayesc fit`'s output flags: `--output` writes the draws in Stan's CSV
/// layout (one file per chain), `--output-dir` places them (named after the model) with the
/// ELBO trace, a missing folder is refused before the fit, and flags without a meaning in the
/// REPL (`--refresh`, `--threads`) are refused instead of ignored.
#[test]
fn fit_writes_the_files_its_flags_ask_for() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::new();
    s.set_progress(false);
    ok(
        &mut s,
        "parameters {\n  real mu;\n}\nmodel {\n  mu ~ normal(1, 2);\n}",
    );
    let out = dir.path().join("draws.csv");
    let text = ok(
        &mut s,
        &format!(
            ":fit nuts --chains 2 --warmup 200 --samples 300 --seed 1 --output {}",
            out.display()
        ),
    );
    assert!(text.contains("draws written to"), "{text}");
    for c in 1..=2 {
        let file = dir.path().join(format!("draws_{c}.csv"));
        let csv = std::fs::read_to_string(&file).unwrap();
        assert!(csv.contains("method = sample"), "{csv}");
        let rows = csv
            .lines()
            .filter(|l| !l.starts_with('#') && !l.starts_with("lp__"))
            .count();
        assert_eq!(rows, 300, "{}", file.display());
    }
    let od = dir.path().join("run");
    let text = ok(
        &mut s,
        &format!(
            ":fit qbvi --seed 1 --output-dir {} --elbo-output elbo.csv",
            od.display()
        ),
    );
    assert!(text.contains("ELBO trace written"), "{text}");
    assert!(od.join("repl.csv").is_file(), "{text}");
    assert!(od.join("elbo.csv").is_file(), "{text}");
    let e = err(&mut s, ":fit laplace --output /nonexistent-folder/x.csv");
    assert!(e.contains("does not exist"), "{e}");
    assert!(err(&mut s, ":fit nuts --refresh 10").contains("--refresh"));
    assert!(err(&mut s, ":fit nuts --threads 1").contains("RAYON_NUM_THREADS"));
}

/// Ctrl-C during the warmup of a `--save-warmup` fit keeps its warmup draws, as `bayesc fit
/// --output` keeps them: the fit is stored, marked as stopped in warmup, `:save` writes the
/// warmup draws in a file ending `# interrupted: … (in warmup)`, and the commands that need
/// posterior draws say why they have none. It used to say "nothing stored", and `:save`
/// wrote nothing (fresh-user finding, session 20).
#[test]
fn a_fit_stopped_in_warmup_keeps_its_saved_warmup_draws() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::new();
    s.set_progress(false);
    ok(
        &mut s,
        "parameters {\n  real mu;\n}\nmodel {\n  mu ~ normal(0, 1);\n}",
    );
    let stopper = interrupt_after(&s, 800);
    // 10^8 warmup iterations cannot end before the stop; --thin keeps the file small
    let text = ok(
        &mut s,
        ":fit nuts --chains 1 --warmup 100000000 --samples 1000 --thin 100 --save-warmup --seed 1 as w",
    );
    stopper.join().unwrap();
    assert!(
        text.contains("stored as w (interrupted in warmup: warmup draws only)"),
        "{text}"
    );
    assert!(
        text.contains("warmup draws of chain 1 kept (--save-warmup)"),
        "{text}"
    );
    let file = dir.path().join("w.csv");
    let saved = ok(&mut s, &format!(":save w {}", file.display()));
    assert!(
        saved.contains("warmup draws of chain 1 written to"),
        "{saved}"
    );
    let written = dir.path().join("w_1.csv");
    let csv = std::fs::read_to_string(&written).unwrap();
    let last = csv.lines().last().unwrap();
    assert!(
        last.starts_with("# interrupted: 0 of 10 draws, ")
            && last.ends_with(" warmup draws (in warmup)"),
        "{last}"
    );
    let read = bayesc::output::read_stan_csv(&written).unwrap();
    assert_eq!(read.n_draws, 0);
    assert!(read.warmup_draws > 0);
    for command in [":summary w", "mean(mu)", ":param mu"] {
        let e = err(&mut s, command);
        assert!(e.contains("w was stopped in warmup"), "{command}: {e}");
    }
    assert!(ok(&mut s, ":fits").contains("INTERRUPTED"));
}
