//! Errors that name their cause, end to end through the `bayesc` binary (issue 13, item 9, and
//! testers' findings): bounds that the data put in the wrong order are a data error at binding;
//! a literal argument outside a distribution's support and assignments of literal sizes that
//! disagree are compile-time errors; a size mismatch known only from the data is a model error,
//! not an initialisation failure; a NaN gradient at the random start names the parameter;
//! options of other methods are refused even at their default values; `while (1) {}` is a
//! compile error and Ctrl-C stops a long `while` loop; MC dropout does not claim convergence
//! of a posterior; a misspelled block name at the REPL prompt gets the did-you-mean; a scale
//! that is 0 whatever the parameters (`0 * s`) is named, with its fix, by every method alike.

use std::process::{Command, Output};

fn run(dir: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bayesc"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run bayesc")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `bayesc fit zero.bayes --data zero.csv --method METHOD --seed 1 -q` in `dir`.
fn fit_zero(dir: &std::path::Path, method: &str) -> Output {
    run(
        dir,
        &[
            "fit",
            "zero.bayes",
            "--data",
            "zero.csv",
            "--method",
            method,
            "--seed",
            "1",
            "-q",
        ],
    )
}

/// A folder holding `files` (name, text).
fn folder(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).expect("write");
    }
    dir
}

fn assert_fails_with(o: &Output, wanted: &[&str]) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(1), "stderr:\n{err}");
    assert!(!err.contains("panicked"), "{err}");
    for w in wanted {
        assert!(err.contains(w), "missing {w:?} in:\n{err}");
    }
}

#[test]
fn bounds_reversed_by_the_data_are_a_data_error_at_binding() {
    let dir = folder(&[
        (
            "p.bayes",
            "data { real a; real b; }\nparameters { real<lower=a, upper=b> x; }\nmodel { x ~ normal(0, 1); }\n",
        ),
        ("p.json", r#"{"a": 2, "b": 1}"#),
        (
            "v.bayes",
            "data { int N; vector[N] lo; vector[N] hi; }\nparameters { vector<lower=lo, upper=hi>[N] x; }\nmodel { x ~ normal(0, 1); }\n",
        ),
        ("v.json", r#"{"N": 3, "lo": [0, 0, 3], "hi": [1, 1, 2]}"#),
        (
            "d.bayes",
            "data { real a; real b; real<lower=a, upper=b> z; }\nparameters { real x; }\nmodel { x ~ normal(z, 1); }\n",
        ),
        ("d.json", r#"{"a": 2, "b": 1, "z": 1.5}"#),
        (
            "y.bayes",
            "data { int N; vector<lower=0>[N] y; }\nparameters { real x; }\nmodel { y ~ normal(x, 1); }\n",
        ),
        ("y.json", r#"{"N": 2, "y": [1, -2]}"#),
    ]);
    let d = dir.path();
    // `check --data` refuses what `fit` would refuse, before any fitting
    for cmd in [&["check"][..], &["fit", "--seed", "1"][..]] {
        let mut args = cmd.to_vec();
        args.extend(["p.bayes", "--data", "p.json"]);
        let o = run(d, &args);
        assert_fails_with(
            &o,
            &[
                "the bounds of parameter `x`",
                "lower = `a` = 2 is not below upper = `b` = 1",
                "`a` from p.json, key `a`",
                "p.bayes:2:14",
            ],
        );
        assert!(!stderr(&o).contains("initialisation"), "{}", stderr(&o));
    }
    let o = run(d, &["fit", "v.bayes", "--data", "v.json", "--seed", "1"]);
    assert_fails_with(
        &o,
        &[
            "element 3 of parameter `x`",
            "lower = `lo` = 3 is not below upper = `hi` = 2",
            "from v.json, key `lo`",
        ],
    );
    let o = run(d, &["check", "d.bayes", "--data", "d.json"]);
    assert_fails_with(
        &o,
        &["the bounds of data variable `z`", "from d.json, key `b`"],
    );
    // data outside its declared bound (this already worked; kept as a regression test)
    let o = run(d, &["check", "y.bayes", "--data", "y.json"]);
    assert_fails_with(
        &o,
        &["y.json", "`y[2]`", "-2 is below the lower bound 0 of `y`"],
    );
}

#[test]
fn a_literal_argument_outside_the_support_is_a_compile_error_at_the_argument() {
    let dir = folder(&[(
        "m.bayes",
        "data { int N; vector[N] y; array[N] int k; }\nparameters { real mu; real<lower=0> sigma; }\nmodel {\n  mu ~ normal(0, 1);\n  sigma ~ exponential(0);\n  y ~ normal(mu, -1);\n  target += normal_lpdf(y | mu, -2.5);\n  k ~ bernoulli(1.5);\n}\n",
    )]);
    let o = run(dir.path(), &["check", "m.bayes"]);
    assert_fails_with(
        &o,
        &[
            "argument 1 of `exponential` (inverse scale parameter) is 0, but it must be positive",
            "m.bayes:5:23",
            "argument 2 of `normal` (scale parameter) is -1, but it must be positive",
            "m.bayes:6:18",
            "argument 3 of `normal_lpdf` (scale parameter) is -2.5",
            "argument 1 of `bernoulli` (probability parameter) is 1.5, but it must be in [0, 1]",
            "use a value that is positive, e.g. `1`",
        ],
    );
    // values inside the support pass
    let ok = folder(&[(
        "m.bayes",
        "data { int N; array[N] int k; }\nparameters { real mu; }\nmodel {\n  mu ~ normal(0, 2.5);\n  k ~ bernoulli(1);\n  mu ~ student_t(3, -1, 1);\n}\n",
    )]);
    let o = run(ok.path(), &["check", "m.bayes"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn assignment_sizes_that_disagree_name_both_sizes() {
    let dir = folder(&[
        (
            "lit.bayes",
            "parameters { real mu; }\nmodel {\n  vector[3] b = [1, 2, 3]';\n  vector[2] c = b;\n  vector[2] e = [1, 2, 3]';\n  mu ~ normal(sum(c) + sum(e), 1);\n}\n",
        ),
        (
            "data.bayes",
            "data { int N; vector[N] b; }\nparameters { real mu; }\nmodel {\n  vector[2] c = b;\n  mu ~ normal(sum(c), 1);\n}\n",
        ),
        (
            "opaque.bayes",
            "functions { vector id(vector v) { return v; } }\ndata { int N; vector[N] b; }\nparameters { real mu; }\nmodel {\n  vector[2] c = id(b);\n  mu ~ normal(sum(c), 1);\n}\n",
        ),
        ("data.json", r#"{"N": 3, "b": [1, 2, 3]}"#),
    ]);
    let d = dir.path();
    // both sizes literal: compile time, at the assigned value
    let o = run(d, &["check", "lit.bayes"]);
    assert_fails_with(
        &o,
        &[
            "`c` has size 2 but `b` has size 3 in the declaration of `c`",
            "lit.bayes:4:17",
            "`e` has size 2 but `[1, 2, 3]'` has size 3 in the declaration of `e`",
        ],
    );
    // sizes from the data: known before any evaluation (session 19), so `check --data` and
    // `fit` report them at the value, with both declarations
    for cmd in ["check", "fit"] {
        let o = run(d, &[cmd, "data.bayes", "--data", "data.json"]);
        assert_fails_with(
            &o,
            &[
                "size mismatch in the declaration of `c`: `c` is vector[2] but `b` is vector[3]",
                "data.bayes:4:17",
                "`c` declared with 2 elements",
                "`b` declared with `N` = 3 elements",
            ],
        );
        assert!(!stderr(&o).contains("method ="), "{}", stderr(&o));
    }
    // sizes the checker cannot follow (a function's result): a model error at the first
    // evaluation, for every kind of method
    for method in ["qbvi", "optimize", "nuts", "laplace"] {
        let o = run(
            d,
            &[
                "fit",
                "opaque.bayes",
                "--data",
                "data.json",
                "--method",
                method,
                "--seed",
                "1",
            ],
        );
        assert_fails_with(
            &o,
            &[
                "the model cannot be evaluated: size mismatch: declared vector[2], assigned vector[3]",
                "opaque.bayes:5:3",
            ],
        );
        assert!(!stderr(&o).contains("initialisation"), "{}", stderr(&o));
    }
}

/// Session 19, tester findings: sizes known from the data (or counted by `transformed data`)
/// that disagree in a distribution's vectorised arguments, in a `transformed data` declaration,
/// or that are negative, used to pass `check --data` or fail only when evaluated; `check --data`
/// and `fit` now report them before the model is evaluated, at the arguments or the size, with
/// the declarations labelled.
#[test]
fn sizes_from_the_data_are_checked_before_any_evaluation() {
    let dir = folder(&[
        (
            "args.bayes",
            "data { int N; int K; vector[N] y; vector[K] s; }\nparameters { vector[N] beta; }\nmodel {\n  beta ~ normal(0, 1);\n  y ~ normal(beta, s);\n}\n",
        ),
        (
            "args.json",
            r#"{"N": 4, "K": 3, "y": [1, 2, 3, 4], "s": [1, 1, 1]}"#,
        ),
        (
            "td.bayes",
            "data { int N; vector[N] b; }\ntransformed data {\n  vector[2] c = b;\n}\nparameters { real mu; }\nmodel { mu ~ normal(sum(c), 1); }\n",
        ),
        ("td.json", r#"{"N": 3, "b": [1, 2, 3]}"#),
        (
            "neg.bayes",
            "data { int N; }\nparameters {\n  real mu;\n  vector[N - 5] w;\n}\nmodel { mu ~ normal(0, 1); w ~ normal(0, 1); }\n",
        ),
        ("neg.json", r#"{"N": 3}"#),
        (
            "cnt.bayes",
            "data { int N; vector[N] y; }\ntransformed data {\n  int n_pos = 0;\n  for (n in 1:N) if (y[n] > 0) n_pos += 1;\n  vector[n_pos] y_pos = rep_vector(1, n_pos);\n}\nparameters { vector[3] mu; }\nmodel {\n  mu ~ normal(0, 1);\n  y_pos ~ normal(mu, 1);\n}\n",
        ),
        ("cnt.json", r#"{"N": 5, "y": [1, 2, -1, 3, 4]}"#),
    ]);
    let d = dir.path();
    let cases: [(&str, &[&str]); 4] = [
        (
            "args",
            &[
                "error: size mismatch in the arguments of `normal`: `y` (the variate) has 4 \
                 elements but `s` (scale parameter) has 3",
                "args.bayes:5:3",
                "`s` declared with `K` = 3 elements",
                "`y` declared with `N` = 4 elements",
                "declare `vector[N] s`",
            ],
        ),
        (
            "td",
            &[
                "error: size mismatch in the declaration of `c`: `c` is vector[2] but `b` is \
                 vector[3]",
                "td.bayes:3:17",
                "`b` declared with `N` = 3 elements",
            ],
        ),
        (
            "neg",
            &[
                "error: `w` is declared with size `N - 5` = -2, but a size must be 0 or more",
                "neg.bayes:4:10",
                "`N` is 3 in the data",
            ],
        ),
        // a count made by `transformed data`: known once the block has run
        (
            "cnt",
            &[
                "error: size mismatch in the arguments of `normal`: `y_pos` (the variate) has 4 \
                 elements but `mu` (location parameter) has 3",
                "cnt.bayes:10:3",
                "`y_pos` declared with `n_pos` = 4 elements",
            ],
        ),
    ];
    for (name, wanted) in cases {
        let (model, data) = (format!("{name}.bayes"), format!("{name}.json"));
        // without the data the sizes are unknown: the model checks
        let o = run(d, &["check", &model]);
        assert_eq!(o.status.code(), Some(0), "{name}: {}", stderr(&o));
        for cmd in ["check", "fit"] {
            let mut args = vec![cmd, model.as_str(), "--data", data.as_str()];
            if cmd == "fit" {
                args.extend(["--seed", "1"]);
            }
            let o = run(d, &args);
            assert_fails_with(&o, wanted);
            assert!(
                !stdout(&o).contains("mean"),
                "{cmd} {name} fitted: {}",
                stdout(&o)
            );
        }
    }
}

#[test]
fn a_nan_gradient_at_the_random_start_names_the_parameter() {
    // sqrt(x² − x²) = sqrt(0): the value is 0 everywhere, its derivative 0·∞ = NaN
    let dir = folder(&[(
        "g.bayes",
        "parameters { real mu; real x; }\nmodel {\n  mu ~ normal(0, 1);\n  x ~ normal(0, 1);\n  target += sqrt(square(x) - square(x));\n}\n",
    )]);
    let o = run(dir.path(), &["fit", "g.bayes", "--seed", "1"]);
    assert_fails_with(
        &o,
        &["the gradient of the log density with respect to `x` is NaN"],
    );
    assert!(!stderr(&o).contains("coordinate 2"), "{}", stderr(&o));
}

#[test]
fn options_of_other_methods_are_refused_even_at_their_default_values() {
    let dir = folder(&[(
        "m.bayes",
        "parameters { real mu; }\nmodel { mu ~ normal(0, 1); }\n",
    )]);
    let d = dir.path();
    for (method, flag) in [
        ("nuts", ["--num-paths", "4"]),
        ("qbvi", ["--chains", "4"]),
        ("optimize", ["--draws", "1000"]),
        ("mh", ["--adapt-delta", "0.8"]),
    ] {
        let o = run(d, &["fit", "m.bayes", "--method", method, flag[0], flag[1]]);
        let err = stderr(&o);
        // a usage error: exit code 2
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(&format!("{} applies to", flag[0])), "{err}");
    }
    // `bayesc optimize` too
    let o = run(d, &["optimize", "m.bayes", "--num-paths", "4"]);
    assert!(
        stderr(&o).contains("--num-paths applies to --method pathfinder"),
        "{}",
        stderr(&o)
    );
    // an option the method uses, given at its default, is fine
    let o = run(
        d,
        &[
            "fit",
            "m.bayes",
            "--method",
            "pathfinder",
            "--num-paths",
            "4",
            "--seed",
            "1",
            "-q",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn a_literally_endless_while_loop_is_a_compile_error() {
    let dir = folder(&[
        (
            "w.bayes",
            "parameters { real mu; }\nmodel {\n  while (1) {}\n  mu ~ normal(0, 1);\n}\n",
        ),
        // a way out (break, even inside an if) or a non-literal condition passes
        (
            "ok.bayes",
            "parameters { real mu; }\nmodel {\n  int i = 0;\n  while (1) { i += 1; if (i > 3) break; }\n  while (1.0) { for (j in 1:2) { } break; }\n  mu ~ normal(0, 1);\n}\n",
        ),
        // a `break` of a nested loop does not leave the outer one
        (
            "nested.bayes",
            "parameters { real mu; }\nmodel {\n  while (1) { for (j in 1:2) { break; } }\n  mu ~ normal(0, 1);\n}\n",
        ),
    ]);
    let d = dir.path();
    let o = run(d, &["check", "w.bayes"]);
    assert_fails_with(
        &o,
        &[
            "this `while` loop never ends: its condition `1` is always true",
            "w.bayes:3:10",
        ],
    );
    let o = run(d, &["check", "nested.bayes"]);
    assert_fails_with(&o, &["never ends"]);
    let o = run(d, &["check", "ok.bayes"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// Runs `bayesc fit` on `model` (file `name`), sends one SIGINT after 700 ms and returns the
/// exit status and standard error (the fit must stop within 20 s of the one Ctrl-C).
#[cfg(unix)]
fn fit_and_interrupt_once(name: &str, model: &str) -> (std::process::ExitStatus, String) {
    use std::io::{BufRead, Read};
    let dir = folder(&[(name, model)]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_bayesc"))
        .args(["fit", name, "--seed", "1"])
        .current_dir(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run bayesc");
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    assert!(first.starts_with("method = "), "{first}");
    std::thread::sleep(std::time::Duration::from_millis(700));
    assert!(child.try_wait().unwrap().is_none(), "the loop should run");
    // SAFETY: sending a signal to our own child process.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "still running 20 s after one Ctrl-C"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (status, err)
}

/// A `while` loop that never ends but is not literally endless: one Ctrl-C stops the fit with
/// an error naming the loop (before, the fit hung until a second Ctrl-C killed the process).
#[cfg(unix)]
#[test]
fn one_ctrl_c_stops_a_long_while_loop_with_a_clear_message() {
    let (status, err) = fit_and_interrupt_once(
        "w.bayes",
        "parameters { real mu; }\nmodel {\n  real i = 1;\n  while (i > 0) {\n    i += 1;\n  }\n  mu ~ normal(0, 1);\n}\n",
    );
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(
        err.contains("interrupted (Ctrl-C) inside this `while` loop"),
        "{err}"
    );
    assert!(err.contains("w.bayes:4:3"), "{err}");
}

/// The same for a `for` loop of 10^10 iterations in one evaluation, whether it runs as a
/// compiled kernel (which gives up and lets the interpreter report it) or interpreted.
#[cfg(unix)]
#[test]
fn one_ctrl_c_stops_a_long_for_loop_with_a_clear_message() {
    let (status, err) = fit_and_interrupt_once(
        "f.bayes",
        "parameters { real mu; }\nmodel {\n  real x = 0;\n  for (i in 1:100000) {\n    for (j in 1:100000) {\n      x += 1;\n    }\n  }\n  mu ~ normal(0, 1);\n}\n",
    );
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(
        err.contains("interrupted (Ctrl-C) inside this `for` loop"),
        "{err}"
    );
}

#[test]
fn mc_dropout_marks_point_estimates_and_does_not_claim_convergence() {
    let t: Vec<String> = (1..=20).map(|i| format!("{}", i as f64 / 20.0)).collect();
    let y: Vec<String> = (1..=20)
        .map(|i| {
            let i = i as f64;
            format!("{}", 0.5 + 1.5 * i / 20.0 + 0.4 * (2.3 * i).sin())
        })
        .collect();
    let json = format!(
        "{{\"N\": 20, \"t\": [{}], \"y\": [{}]}}",
        t.join(", "),
        y.join(", ")
    );
    let dir = folder(&[
        (
            "m.bayes",
            "data { int<lower=0> N; vector[N] t; vector[N] y; }\nparameters { real a; @dropout(0.1) real b; }\nmodel { a ~ normal(0, 1); b ~ normal(0, 1); y ~ normal(a + b * t, 0.5); }\ngenerated quantities { real f_new = a + b; }\n",
        ),
        ("d.json", &json),
    ]);
    let o = run(
        dir.path(),
        &[
            "fit",
            "m.bayes",
            "--data",
            "d.json",
            "--method",
            "mcdropout",
            "--seed",
            "1",
        ],
    );
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!out.contains("converged"), "{out}");
    assert!(
        out.contains("MC dropout fits the weights as a point estimate"),
        "{out}"
    );
    assert!(out.contains("only predictive quantities"), "{out}");
    // its draws are masked point weights, not draws of a fitted Gaussian (issue 11)
    assert!(!out.contains("Gaussian"), "{out}");
    // `a` (no @dropout) is a point: its sd column says so; `b` and `f_new` vary with the masks
    let row = |name: &str| -> Vec<String> {
        out.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no row {name} in {out}"))
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    assert_eq!(row("a")[2], "point", "{out}");
    let sd_b: f64 = row("b")[2].parse().unwrap();
    let sd_f: f64 = row("f_new")[2].parse().unwrap();
    // Bernoulli(0.9) masks on b ≈ 1.08: sd = √(0.9·0.1)·1.08 ≈ 0.32
    assert!((sd_b - 0.32).abs() < 0.05, "{sd_b}");
    assert!((sd_f - sd_b).abs() < 1e-9, "{sd_f} {sd_b}");
    assert!(
        out.contains("`point` marks quantities that do not vary across the draws (a)"),
        "{out}"
    );
    // the REPL says the same
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_bayesc"))
        .arg("repl")
        .current_dir(dir.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run bayesc repl");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b":load m.bayes\n:data d.json\n:fit mcdropout --seed 1\n:diagnostics\n")
        .unwrap();
    let o = child.wait_with_output().unwrap();
    let repl = stdout(&o);
    assert!(!repl.contains("converged"), "{repl}");
    assert!(!repl.contains("Gaussian"), "{repl}");
    assert!(
        // the settings line of `bayesc fit` (output::report::fit_preamble)
        repl.contains("Bernoulli masks on the units of the @dropout parameters")
            && repl.contains("1000 draws = stochastic forward passes"),
        "{repl}"
    );
    assert!(
        repl.contains("MC dropout fits the weights as a point estimate"),
        "{repl}"
    );
    assert!(repl.contains("stop reason: training finished"), "{repl}");
    let a_row: Vec<&str> = repl
        .lines()
        .find(|l| l.split_whitespace().next() == Some("a"))
        .expect("a row for `a`")
        .split_whitespace()
        .collect();
    assert_eq!(a_row[2], "point", "{repl}");
}

#[test]
fn a_misspelled_block_at_the_repl_prompt_gets_the_did_you_mean() {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_bayesc"))
        .arg("repl")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run bayesc repl");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"paramters { real mu; }\ntransformed paramters { real nu = 1; }\n")
        .unwrap();
    let o = child.wait_with_output().unwrap();
    let out = stdout(&o);
    assert!(out.contains("unknown block `paramters`"), "{out}");
    assert!(out.contains("did you mean `parameters`?"), "{out}");
    assert!(!out.contains("expected end of file"), "{out}");
    assert!(
        out.contains("did you mean `transformed parameters`?"),
        "{out}"
    );
}

/// A container whose sizes from the data exceed the machine's memory (a local `matrix[N, N]`
/// with N = 3·10⁶, a `rep_matrix(0, N, N)` with N = 2·10⁹ in transformed data) is a model error
/// naming the sizes and the memory, at the statement, not an allocation failure that aborts
/// the process with a backtrace (tester's finding).
#[test]
fn a_container_larger_than_memory_is_an_error_not_an_abort() {
    let dir = folder(&[
        (
            "local.bayes",
            "data { int K; int N; vector[K] y; }\nparameters { real mu; }\nmodel { matrix[N, N] m; mu ~ normal(0, 1); y ~ normal(mu, 1); }\n",
        ),
        ("local.json", r#"{"K": 3, "N": 3000000, "y": [1, 2, 3]}"#),
        (
            "rep.bayes",
            "data { int K; int N; vector[K] y; }\ntransformed data { real z = sum(rep_matrix(0, N, N)); }\nparameters { real mu; }\nmodel { mu ~ normal(0, 1); y ~ normal(mu, 1); }\n",
        ),
        ("rep.json", r#"{"K": 3, "N": 2000000000, "y": [1, 2, 3]}"#),
    ]);
    let o = run(
        dir.path(),
        &[
            "fit",
            "local.bayes",
            "--data",
            "local.json",
            "--method",
            "laplace",
        ],
    );
    assert_fails_with(&o, &["[3000000, 3000000]", "GB of memory", "local.bayes:3"]);
    let o = run(
        dir.path(),
        &[
            "fit",
            "rep.bayes",
            "--data",
            "rep.json",
            "--method",
            "laplace",
        ],
    );
    assert_fails_with(
        &o,
        &["rep_matrix would need", "GB of memory", "rep.bayes:2"],
    );
}

/// `y ~ normal(mu, 0 * s)`: the scale is 0 at every start. Every method names the statement,
/// the argument and the value, says that it does not depend on the parameters and how to fix
/// it, with the same words (the variational methods and optimize used to say only "no valid
/// initial point found ... last problem: …"; a tester saw a NaN argument reported).
#[test]
fn a_scale_that_is_zero_whatever_the_parameters_is_named_with_its_fix_by_every_method() {
    let dir = folder(&[
        (
            "zero.bayes",
            "data { int<lower=0> N; vector[N] y; }\n\
             parameters { real mu; real<lower=0> s; }\n\
             model {\n\
             \x20 mu ~ normal(0, 10);\n\
             \x20 s ~ normal(0, 5);\n\
             \x20 y ~ normal(mu, 0 * s);\n\
             }\n",
        ),
        ("zero.csv", "y\n1.2\n0.3\n-0.5\n2.1\n"),
    ]);
    for method in ["nuts", "optimize", "qbvi", "ivon", "laplace"] {
        let o = fit_zero(dir.path(), method);
        assert_fails_with(
            &o,
            &[
                "normal_lpdf: Scale parameter is 0, but must be positive finite (zero.bayes:6:3)",
                "The scale parameter is 0 at all 100 random starting points",
                "is 0 whatever the parameters are",
                "Change that expression (or the data it reads) so that it is positive",
            ],
        );
        let err = stderr(&o);
        assert!(
            !err.contains("NaN") && !err.contains("nan"),
            "{method}: {err}"
        );
    }
}

/// `y ~ normal(mu, -0.0 * s)`: a negative zero is shown as 0 (a tester saw "Scale parameter is
/// -0"), so that the message and its fix are those of a scale of 0.
#[test]
fn a_scale_of_negative_zero_is_reported_as_zero() {
    let dir = folder(&[
        (
            "zero.bayes",
            "data { int<lower=0> N; vector[N] y; }\n\
             parameters { real mu; real<lower=0> s; }\n\
             model {\n\
             \x20 s ~ normal(0, 5);\n\
             \x20 y ~ normal(mu, -0.0 * s);\n\
             }\n",
        ),
        ("zero.csv", "y\n1.2\n0.3\n"),
    ]);
    for method in ["nuts", "qbvi"] {
        let o = fit_zero(dir.path(), method);
        assert_fails_with(
            &o,
            &[
                "normal_lpdf: Scale parameter is 0, but must be positive finite (zero.bayes:5:3)",
                "The scale parameter is 0 at all 100 random starting points",
            ],
        );
        assert!(!stderr(&o).contains("-0"), "{method}: {}", stderr(&o));
    }
}

/// `target += 0 * normal_lpdf(mu | 0, 1)`: the density is flat in mu, so a stochastic fit runs
/// to its iteration cap while q drifts. The cap line used to advise "Raise --max-iter", which
/// would only drift further; it now names the drift, and the warning below names a flat term.
#[test]
fn a_flat_density_at_the_iteration_cap_is_not_advised_more_iterations() {
    let dir = folder(&[(
        "flat.bayes",
        "parameters { real mu; }\nmodel { target += 0 * normal_lpdf(mu | 0, 1); }\n",
    )]);
    for method in ["bbb", "ivon"] {
        let o = run(
            dir.path(),
            &["fit", "flat.bayes", "--method", method, "--seed", "1"],
        );
        let out = stdout(&o);
        assert!(o.status.success(), "{method}: {out}");
        assert!(out.contains("hit the iteration cap"), "{method}: {out}");
        assert!(!out.contains("Raise --max-iter"), "{method}: {out}");
        assert!(
            out.contains("It is still moving along mu, where the density has no interior mode"),
            "{method}: {out}"
        );
        assert!(
            out.contains("where the log density is flat (a term multiplied by 0, say)"),
            "{method}: {out}"
        );
        assert!(!out.contains("\nconverged"), "{method}: {out}");
    }
}

/// `bayesc check` and `bayesc fit --method optimize` of `model` with `data` in `dir`.
fn check_and_fit(dir: &std::path::Path, model: &str, data: &str) -> (Output, Output) {
    let check = run(dir, &["check", model, "--data", data]);
    let fit = run(
        dir,
        &[
            "fit", model, "--data", data, "--method", "optimize", "--seed", "1", "-q",
        ],
    );
    (check, fit)
}

#[test]
fn code_that_never_runs_with_the_data_is_not_refused_and_code_that_runs_is_checked() {
    let head = "data { int N; vector[N] y; int<lower=0> M; vector[M] z; }\n\
                parameters { real mu; }\n\
                model { mu ~ normal(0, 10); y ~ normal(mu, 1);\n";
    let dir = folder(&[
        (
            "opt.bayes",
            &format!("{head}if (M > 0) {{ z[1] ~ normal(mu, 1); }} }}\n"),
        ),
        (
            "slice.bayes",
            &format!("{head}if (M > 1) {{ z[2:M] ~ normal(mu, 1); }} }}\n"),
        ),
        (
            "empty.bayes",
            &format!("{head}z[2:M] ~ normal(mu, 1); }}\n"),
        ),
        (
            "loop.bayes",
            &format!(
                "{head}for (m in 1:M) {{ vector[M - 1] rest = tail(z, M - 1); }}\n\
                 for (m in 1:M) {{ vector[2] w = z; }} }}\n"
            ),
        ),
        ("m0.json", r#"{"N": 3, "y": [1, 2, 3], "M": 0, "z": []}"#),
        ("m1.json", r#"{"N": 3, "y": [1, 2, 3], "M": 1, "z": [0.5]}"#),
        (
            "guard.bayes",
            "data { int N; vector[N] y; }\nparameters { vector[2] b; }\n\
             model { b ~ normal(0, 1); if (N > 1) { y ~ normal(b, 1); } }\n",
        ),
        ("y3.json", r#"{"N": 3, "y": [1, 2, 3]}"#),
    ]);
    for (model, data) in [
        ("opt.bayes", "m0.json"),
        ("opt.bayes", "m1.json"),
        ("slice.bayes", "m1.json"),
        ("empty.bayes", "m1.json"),
        ("loop.bayes", "m0.json"),
    ] {
        let (check, fit) = check_and_fit(dir.path(), model, data);
        assert_eq!(
            check.status.code(),
            Some(0),
            "{model} {data}:\n{}",
            stderr(&check)
        );
        assert_eq!(
            fit.status.code(),
            Some(0),
            "{model} {data}:\n{}",
            stderr(&fit)
        );
        // y = 1, 2, 3 (and z = 0.5 when it is used): the mode of mu is their mean
        let want = match (model, data) {
            ("opt.bayes", "m1.json") => 1.625,
            _ => 2.0,
        };
        let out = stdout(&fit);
        let line = out
            .lines()
            .find(|l| l.trim_start().starts_with("mu"))
            .unwrap_or_else(|| panic!("no mu in:\n{out}"));
        let mu: f64 = line
            .split_whitespace()
            .nth(1)
            .and_then(|x| x.parse().ok())
            .unwrap_or_else(|| panic!("{line}"));
        // the prior normal(0, 10) pulls the mode by under 1%
        assert!(
            (mu - want).abs() < 0.03,
            "{model} {data}: mu = {mu}, want {want}"
        );
    }
    // under a condition the data make true, the mismatch is reported by `check`
    let check = run(dir.path(), &["check", "guard.bayes", "--data", "y3.json"]);
    assert_fails_with(&check, &["`y` (the variate) has 3 elements", "`b`"]);
}
