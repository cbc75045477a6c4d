//! Command-line messages found by fresh-user testing: count flags say what they expect, an empty
//! file is not called a model, MC dropout without a dropout site fails before the settings line,
//! `--batch-size N` is the full-data fit, and an initialisation that fails the same way at every
//! random start points at the data or constants rather than the starting region.

mod common;

use std::process::{Command, Output};

fn bayesc(args: &[&str]) -> Output {
    common::bayesc_in(&common::root(), args)
}

const EIGHT: [&str; 4] = [
    "examples/eight_schools/model.bayes",
    "--data",
    "examples/eight_schools/schools.csv",
    "-q",
];

#[test]
fn count_flags_say_what_they_expect() {
    for (flag, value, want) in [
        ("--draws", "-3", "expected a whole number from 1 up"),
        (
            "--chains",
            "2.5",
            "expected a whole number from 1 to 1024, without a decimal point",
        ),
        ("--max-depth", "31", "expected a whole number from 1 to 30"),
        ("--warmup", "-1", "expected a whole number from 0 up"),
    ] {
        let mut args = vec!["fit"];
        args.extend(EIGHT);
        args.extend([flag, value]);
        let out = bayesc(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}: {err}");
        assert!(err.contains(want), "{flag} {value}: {err}");
        assert!(!err.contains("invalid digit"), "{err}");
    }
}

#[test]
fn an_empty_file_is_said_to_have_nothing_to_fit() {
    let out = bayesc(&["check", "tests/fixtures/ux/empty.bayes"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(
        text.contains("the file has no blocks, so there is nothing to fit"),
        "{text}"
    );
}

#[test]
fn mcdropout_without_a_site_fails_before_the_settings_line() {
    let mut args = vec!["fit"];
    args.extend(EIGHT);
    args.extend(["--method", "mcdropout"]);
    args.retain(|a| *a != "-q");
    let out = bayesc(&args);
    let (text, err) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("MC dropout needs units to drop"), "{err}");
    assert!(!text.contains("method = mcdropout"), "{text}");
}

/// `--batch-size` of all rows runs QBVI's full-data fit, with its default full covariance
/// (it used to print "full batch" and then fail with "minibatch QBVI needs the diagonal
/// family").
#[test]
fn a_batch_of_all_rows_is_the_full_data_fit() {
    let out = bayesc(&[
        "fit",
        "examples/labour/model.bayes",
        "--data",
        "examples/labour/labour.csv",
        "--seed",
        "1",
        "--batch-size",
        "753",
    ]);
    let (text, err) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{err}");
    assert!(text.contains("covariance = full"), "{text}");
    assert!(!text.contains("minibatch"), "{text}");
}

#[test]
fn a_constant_outside_the_support_is_blamed_on_the_constant() {
    let out = bayesc(&[
        "fit",
        "tests/fixtures/ux/wishart_dof_too_small.bayes",
        "--method",
        "nuts",
        "--chains",
        "1",
        "--seed",
        "1",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("Degrees of freedom parameter is 2"), "{err}");
    assert!(err.contains("at all 100 random starting points"), "{err}");
    assert!(err.contains("data or a constant"), "{err}");
    assert!(
        !err.contains("near zero on the unconstrained scale"),
        "{err}"
    );
}

/// Divergences after a warmup shorter than Stan's 150 adaptation iterations are blamed on the
/// warmup, not on adapt_delta; one draw per chain is warned about (R-hat and ESS are NA).
#[test]
fn short_runs_get_advice_that_matches_their_cause() {
    let run = |extra: &[&str]| {
        let mut args = vec!["fit"];
        args.extend(EIGHT);
        args.extend(["--method", "nuts", "--seed", "1"]);
        args.extend(extra);
        let out = bayesc(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let text = run(&["--warmup", "20"]);
    let line = text
        .lines()
        .find(|l| l.contains("transitions diverged"))
        .unwrap_or_else(|| panic!("no divergences with --warmup 20 at seed 1: {text}"));
    assert!(line.contains("--warmup 20 is too short"), "{line}");
    assert!(!line.contains("Increase adapt_delta"), "{line}");
    let text = run(&["--samples", "1"]);
    assert!(text.contains("only 1 post-warmup draw per chain"), "{text}");
}

/// `predict` on new rows without the outcome, for a model whose only generated quantity
/// (`log_lik`) reads the outcome: it is left out, so there is nothing to predict, and the error
/// says so and names the two ways out (the outcome column to score, or a prediction to generate).
#[test]
fn predict_without_the_outcome_explains_the_nan() {
    let dir = tempfile::tempdir().unwrap();
    let fit = dir.path().join("fit.json");
    let fit = fit.to_str().unwrap();
    let model = "tests/fixtures/ux/log_lik_reads_outcome.bayes";
    let out = bayesc(&[
        "fit",
        model,
        "--data",
        "tests/fixtures/ux/lin.csv",
        "--seed",
        "1",
        "-q",
        "--save-fit",
        fit,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = bayesc(&[
        "predict",
        model,
        "--fit",
        fit,
        "--data",
        "tests/fixtures/ux/new_rows_without_y.csv",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains(
            "nothing to predict: every generated quantity (`log_lik`) reads the outcome `y`"
        ),
        "{err}"
    );
    assert!(err.contains("add the `y` column"), "{err}");
    assert!(err.contains("y_hat[n] = normal_rng"), "{err}");
}

/// Ctrl-C during a VI fit: the fit stops, the summary of q at that point is printed, and the
/// PSIS check (here 4000 evaluations of a log density of 200 000 terms) is skipped and said to
/// be, instead of keeping the user waiting for it.
#[cfg(unix)]
#[test]
fn ctrl_c_during_a_vi_fit_skips_the_psis_check_and_says_so() {
    use std::io::{BufRead, Read};
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("slow.bayes");
    std::fs::write(
        &model,
        "parameters { real mu; }\nmodel {\n  vector[200000] z = rep_vector(mu, 200000);\n  \
         target += normal_lpdf(z | 1, 1000);\n}\n",
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_bayesc"))
        .args([
            "fit",
            model.to_str().unwrap(),
            "--seed",
            "1",
            "--max-iter",
            "100000",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run bayesc");
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    assert!(first.starts_with("method = qbvi"), "{first}");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the fit should still run"
    );
    // SAFETY: sending a signal to our own child process.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    let status = child.wait().unwrap();
    assert!(status.code().is_some(), "killed by a signal: {rest}");
    assert!(rest.contains("interrupted after"), "{rest}");
    assert!(
        rest.contains("PSIS k-hat check was skipped after Ctrl-C"),
        "{rest}"
    );
    assert!(!rest.contains("PSIS k-hat ="), "{rest}");
}

/// An output file that is an input is refused before the fit (the tester's data file was
/// replaced by draws), for `fit --output` (MCMC's chain files too) and `predict -o`.
#[test]
fn outputs_never_overwrite_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("schools.csv");
    std::fs::copy(
        common::root().join("examples/eight_schools/schools.csv"),
        &data,
    )
    .unwrap();
    let before = std::fs::read(&data).unwrap();
    let model = common::root().join("examples/eight_schools/model.bayes");
    let (model, data_s) = (model.to_str().unwrap(), data.to_str().unwrap());
    let out = bayesc(&["fit", model, "--data", data_s, "--output", data_s, "-q"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("--output would overwrite"), "{err}");
    // MCMC writes NAME_k.csv: schools_1.csv would be written for --output schools.csv, so an
    // input called schools_1.csv is protected too
    let chain_named = dir.path().join("d_2.csv");
    std::fs::copy(&data, &chain_named).unwrap();
    let out_path = dir.path().join("d.csv");
    let out = bayesc(&[
        "fit",
        model,
        "--data",
        chain_named.to_str().unwrap(),
        "--method",
        "nuts",
        "--output",
        out_path.to_str().unwrap(),
        "-q",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("--output would overwrite"), "{err}");
    assert_eq!(std::fs::read(&data).unwrap(), before);
    assert_eq!(std::fs::read(&chain_named).unwrap(), before);
}

#[test]
fn too_many_chains_are_refused() {
    let mut args = vec!["fit"];
    args.extend(EIGHT);
    args.extend(["--method", "nuts", "--chains", "100000"]);
    let out = bayesc(&args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("expected a whole number from 1 to 1024"),
        "{err}"
    );
}

/// Vadam without `--batch-size` on a model that does not split over rows: the advice names
/// other methods, not "fit without --batch-size" (no --batch-size was given).
#[test]
fn vadam_without_batch_size_gets_advice_that_applies() {
    let mut args = vec!["fit"];
    args.extend(EIGHT);
    args.extend(["--method", "vadam"]);
    let out = bayesc(&args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(!err.contains("without --batch-size"), "{err}");
    assert!(err.contains("needs per-observation gradients"), "{err}");
    // nor is the headline about minibatching, which was not asked for
    assert!(!err.contains("cannot minibatch"), "{err}");
    assert!(
        err.contains("--method vadam cannot split this model's log density over its rows"),
        "{err}"
    );
}

#[test]
fn data_files_a_model_cannot_use_are_warned_about() {
    let out = bayesc(&[
        "fit",
        "tests/fixtures/ux/wishart_dof_too_small.bayes",
        "--data",
        "examples/eight_schools/schools.csv",
        "--method",
        "optimize",
        "-q",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("the model has no `data` block"), "{err}");
    assert!(err.contains("schools.csv` is not used"), "{err}");
}

/// Chain files of different lengths (what `kill -9` leaves): `summary` cuts them to the
/// shortest and says so, instead of refusing.
#[test]
fn summary_of_chains_cut_short_uses_the_common_draws() {
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("s.csv");
    let mut args = vec!["fit"];
    args.extend(EIGHT);
    args.extend([
        "--method",
        "nuts",
        "--seed",
        "1",
        "--chains",
        "2",
        "--output",
        out_path.to_str().unwrap(),
    ]);
    let out = bayesc(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // keep the header and the first 300 draws of chain 2
    let c2 = dir.path().join("s_2.csv");
    let text = std::fs::read_to_string(&c2).unwrap();
    let mut kept = Vec::new();
    let mut draws = 0;
    for line in text.lines() {
        let is_draw = !line.starts_with('#') && !line.starts_with("lp__");
        if is_draw {
            if draws == 300 {
                break;
            }
            draws += 1;
        }
        kept.push(line);
    }
    std::fs::write(&c2, kept.join("\n") + "\n").unwrap();
    let c1 = dir.path().join("s_1.csv");
    let out = bayesc(&["summary", c1.to_str().unwrap(), c2.to_str().unwrap()]);
    let (text, err) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{err}");
    assert!(err.contains("each is cut to its first 300 draws"), "{err}");
    assert!(text.contains("2 chains × 300 draws"), "{text}");
}

/// A generated quantity that fails at some draws (`normal_rng(0, mu)` with `mu` < 0 about half
/// the time) no longer throws the run away: those draws hold NaN for it, the parameters are
/// kept and written, and a warning counts them and names the first.
#[test]
fn generated_quantities_that_fail_at_some_draws_keep_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("g.csv");
    let out = bayesc(&[
        "fit",
        "tests/fixtures/ux/gq_fails_sometimes.bayes",
        "--method",
        "nuts",
        "--seed",
        "1",
        "--chains",
        "2",
        "--output",
        out_path.to_str().unwrap(),
    ]);
    let (text, err) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    // an error in Stan's terms, after every output was written (docs/generated_quantities.md)
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("exit status 3"), "{err}");
    assert!(
        text.contains("ERROR: the generated quantities failed at"),
        "{text}"
    );
    assert!(text.contains("normal_rng"), "{text}");
    let csv = std::fs::read_to_string(dir.path().join("g_1.csv")).unwrap();
    let rows: Vec<&str> = csv
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("lp__"))
        .collect();
    assert_eq!(rows.len(), 1000);
    let nan = rows
        .iter()
        .filter(|r| r.ends_with("nan") || r.ends_with("NaN"))
        .count();
    // mu ~ normal(0, 1): about half the draws have mu < 0
    assert!((300..700).contains(&nan), "{nan} NaN rows of 1000");
}

/// NUTS on a model undefined in part of the space (`t = log(mu)` with mu unbounded): the
/// divergences come from the points where the log density cannot be evaluated, which no
/// adapt_delta removes (2025 of 4000 at 0.8, 1953 at 0.99) and which cut the posterior off at
/// mu = 0. The warning names the failing statement and advises bounds, not adapt_delta.
#[test]
fn divergences_from_an_undefined_log_density_name_the_cause() {
    let dir = std::env::temp_dir().join(format!("bayesc_undefined_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let model = dir.join("m.bayes");
    std::fs::write(
        &model,
        "data { int N; vector[N] y; }\nparameters { real mu; }\n\
         transformed parameters { real t = log(mu); }\n\
         model { mu ~ normal(0, 1); y ~ normal(mu, 1); }\n",
    )
    .unwrap();
    let data = dir.join("y.csv");
    std::fs::write(&data, "y\n0.1\n-0.2\n0.3\n").unwrap();
    let out = bayesc(&[
        "fit",
        model.to_str().unwrap(),
        "--data",
        data.to_str().unwrap(),
        "--method",
        "nuts",
        "--seed",
        "1",
    ]);
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("transitions diverged"), "{text}");
    assert!(
        text.contains("could not be evaluated at") && text.contains("t is nan"),
        "{text}"
    );
    assert!(text.contains("m.bayes:3:"), "{text}");
    assert!(!text.contains("Increase adapt_delta"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Session 18, tester finding 1: a model whose `X * beta` cannot fit with the data's sizes
/// (`matrix[N, K] X` with K = 7 in the data, `vector[6] beta`) used to pass `check --data` and
/// fail in `fit` at the whole statement; both now report it at `X * beta`, with both
/// declarations labelled and the declaration to write, before any fitting. Finding 2: the
/// Jacobian warning for `ls ~ …` with `real ls = log(s);` in `check` and `fit` alike.
#[test]
fn sizes_from_the_data_and_jacobian_warnings_through_aliases() {
    let dir = tempfile::tempdir().expect("tempdir");
    let model = "data {\n  int N;\n  int K;\n  matrix[N, K] X;\n  vector[N] y;\n}\n\
                 parameters {\n  vector[6] beta;\n  real<lower=0> sigma;\n}\n\
                 model {\n  beta ~ normal(0, 1);\n  sigma ~ exponential(1);\n  \
                 y ~ normal(X * beta, sigma);\n}\n";
    std::fs::write(dir.path().join("m.bayes"), model).expect("write model");
    let mut csv = String::from("y,X.1,X.2,X.3,X.4,X.5,X.6,X.7\n");
    for i in 0..10 {
        let row: Vec<String> = (0..8).map(|j| format!("{}", (i * 8 + j) % 5)).collect();
        csv.push_str(&format!("{}\n", row.join(",")));
    }
    std::fs::write(dir.path().join("d.csv"), csv).expect("write data");
    std::fs::write(dir.path().join("k.json"), "{\"K\": 7}").expect("write data");
    for cmd in ["check", "fit"] {
        let args = [cmd, "m.bayes", "--data", "d.csv", "--data", "k.json"];
        let out = common::bayesc_in(dir.path(), &args);
        let text = common::output_text(&out);
        assert_eq!(out.status.code(), Some(1), "{cmd}: {text}");
        for want in [
            "error: size mismatch in `X * beta`: `X` has 7 columns but `beta` has 6 rows",
            "┌─ m.bayes:14:14",
            "^^^^^^^^ matrix[10, 7] times vector[6]",
            "`X` declared with `K` = 7 columns",
            "`beta` declared with 6 rows",
            "help: a product needs as many rows on the right as columns on the left: declare \
             `vector[K] beta;`",
        ] {
            assert!(text.contains(want), "{cmd}: {want}\n{text}");
        }
        assert!(!text.contains("method ="), "{cmd} fitted: {text}");
    }
    // sizes followed through `head` (session 19): the same, before any fitting
    let headed = model
        .replace("vector[6] beta", "vector[7] beta")
        .replace("X * beta", "X * head(beta, 6)");
    std::fs::write(dir.path().join("h.bayes"), headed).expect("write model");
    for cmd in ["check", "fit"] {
        let args = [cmd, "h.bayes", "--data", "d.csv", "--data", "k.json"];
        let out = common::bayesc_in(dir.path(), &args);
        let text = common::output_text(&out);
        assert_eq!(out.status.code(), Some(1), "{cmd}: {text}");
        assert!(
            text.contains(
                "error: size mismatch in `X * head(beta, 6)`: `X` has 7 columns but \
                 `head(beta, 6)` has 6 rows"
            ),
            "{cmd}: {text}"
        );
        assert!(!text.contains("method ="), "{cmd} fitted: {text}");
    }
    // sizes the checker cannot follow (a user function's result, whose size depends on its
    // arguments) fail at the first evaluation, at the one product of the statement (they used
    // to point at the statement's start)
    let runtime = format!(
        "functions {{ vector first(vector v, int n) {{ return head(v, n); }} }}\n{}",
        model
            .replace("vector[6] beta", "vector[7] beta")
            .replace("X * beta", "X * first(beta, 6)")
    );
    std::fs::write(dir.path().join("r.bayes"), runtime).expect("write model");
    let args = [
        "fit", "r.bayes", "--data", "d.csv", "--data", "k.json", "--seed", "1",
    ];
    let out = common::bayesc_in(dir.path(), &args);
    let text = common::output_text(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains(
            "error: the model cannot be evaluated: size mismatch in `X * first(beta, 6)`: \
             matrix[10, 7] times vector[6] (r.bayes:15:14)"
        ),
        "{text}"
    );
    // a transformed parameter assigned `log(s)` under `~`: the warning in check and fit
    let alias = "parameters {\n  real<lower=0> s;\n}\ntransformed parameters {\n  \
                 real ls = log(s);\n}\nmodel {\n  ls ~ normal(0, 1);\n}\n";
    std::fs::write(dir.path().join("a.bayes"), alias).expect("write model");
    for args in [
        &["check", "a.bayes"][..],
        &["fit", "a.bayes", "--method", "optimize", "--seed", "1"][..],
    ] {
        let out = common::bayesc_in(dir.path(), args);
        let text = common::output_text(&out);
        assert!(out.status.success(), "{args:?}: {text}");
        for want in [
            "warning: the left side of `~` is a non-linear transform of a parameter",
            "`ls` is assigned this non-linear value",
        ] {
            assert!(text.contains(want), "{args:?}: {want}\n{text}");
        }
    }
}
