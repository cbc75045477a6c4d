//! The configuration comments of the variational draws file say what each method did
//! (`output::vi_header`): the draws per gradient step and per ELBO estimate, the step size or
//! learning rate with a note on its meaning and schedule, the exit rule, and `tol_rel_obj`
//! marked unused; while keeping what cmdstanpy needs (the eight CmdStan keys, each positive,
//! and CmdStan's adaptation line directly after the column header, then `eta = …`, then the
//! mean row). Checked by hand with cmdstanpy 1.3.2 and 1.2.5 and ArviZ 0.23.4:
//! `tests/reference/read_vi_with_cmdstanpy.py`.

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

/// Runs `bayesc fit MODEL --data DATA --seed 1 -q --draws 20 -o out.csv` plus `extra` in
/// `dir`, and returns the draws file.
fn fit_file(dir: &Path, model: &str, data: &str, extra: &[&str]) -> String {
    let out = dir.join("out.csv");
    let o = Command::new(env!("CARGO_BIN_EXE_bayesc"))
        .args([
            "fit", model, "--data", data, "--seed", "1", "-q", "--draws", "20",
        ])
        .args(["-o", out.to_str().unwrap()])
        .args(extra)
        .current_dir(common::root())
        .output()
        .expect("run bayesc");
    assert!(o.status.success(), "{extra:?}: {}", common::output_text(&o));
    std::fs::read_to_string(&out).unwrap()
}

/// The configuration lines of a draws file (the comments before the column header), without
/// their `#`.
fn config(csv: &str) -> Vec<&str> {
    csv.lines()
        .take_while(|l| l.starts_with('#'))
        .map(|l| &l[1..])
        .collect()
}

/// The `key = value` pairs of configuration lines, as cmdstanpy 1.3.2 reads them (a line with
/// one ` = `).
fn keys<'a>(lines: &[&'a str]) -> HashMap<&'a str, &'a str> {
    lines
        .iter()
        .filter_map(|l| {
            let parts: Vec<&str> = l.trim().split(" = ").collect();
            (parts.len() == 2).then(|| (parts[0], parts[1]))
        })
        .collect()
}

/// The note line that follows the line of `key`.
fn note_after<'a>(lines: &[&'a str], key: &str) -> &'a str {
    let at = lines
        .iter()
        .position(|l| l.starts_with(&format!("     {key} = ")))
        .unwrap_or_else(|| panic!("no {key} in {lines:#?}"));
    lines[at + 1].trim()
}

/// What every variational file must hold for cmdstanpy (1.2.5 and 1.3.2): the eight keys,
/// positive, parseable; CmdStan's adaptation line first after the column header, then
/// `eta = <eta>`, then the mean row; notes without `=`, all in ASCII.
fn check_readable(csv: &str, eta: &str) {
    let lines = config(csv);
    let kv = keys(&lines);
    assert_eq!(kv.get("method").copied(), Some("variational"));
    assert!(
        matches!(kv["algorithm"], "meanfield" | "fullrank"),
        "{lines:#?}"
    );
    for key in [
        "iter",
        "grad_samples",
        "elbo_samples",
        "eval_elbo",
        "output_samples",
    ] {
        let v: i64 = kv[key]
            .parse()
            .unwrap_or_else(|_| panic!("{key}: {}", kv[key]));
        assert!(v > 0, "{key} = {v}");
    }
    for key in ["eta", "tol_rel_obj"] {
        let v: f64 = kv[key].parse().unwrap();
        assert!(v > 0.0, "{key} = {v}");
    }
    assert_eq!(kv["eta"], eta);
    for l in &lines {
        assert!(l.is_ascii(), "not ASCII: {l}");
        if l.trim_start().starts_with('(') {
            assert!(
                !l.contains('='),
                "a note with `=` would be read as a key: {l}"
            );
        }
    }
    let rest: Vec<&str> = csv.lines().skip(lines.len() + 1).take(3).collect();
    assert!(
        rest[0].starts_with(
            "# Stepsize adaptation complete. (CmdStan's line, kept for cmdstanpy, which reads \
             eta on the next line; bayesc adapts no step size"
        ),
        "{rest:?}"
    );
    assert!(!rest[0].contains('='), "{}", rest[0]);
    assert_eq!(rest[1], format!("# eta = {eta}"));
    assert!(!rest[2].starts_with('#'), "the mean row follows: {rest:?}");
}

/// One method's expected header: (method, grad_samples, elbo_samples, eta, eta_schedule,
/// exit_min_iter, start of the eta note, start of the elbo_samples note).
type Case = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
);

/// Per method on labour (d = 8), the header's values and notes: draws per gradient step and
/// per ELBO estimate, eta and its schedule, the exit rule's minimum iterations.
#[test]
fn every_method_states_its_own_settings() {
    let dir = tempfile::tempdir().unwrap();
    let model = "examples/labour/model.bayes";
    let data = "examples/labour/labour.csv";
    let fixed = "(elbo_samples: the exit rule's ELBO uses 10 standard-normal draws drawn once";
    let cases: [Case; 11] = [
        (
            "qbvi",
            "100",
            "100",
            "0.05",
            "constant",
            "0",
            "(eta: QBVI's step size beta",
            "(elbo_samples: the ELBO of each iteration is the mean of log p - log q over its 100 draws",
        ),
        (
            "qnvb",
            "4",
            "4",
            "0.1",
            "constant",
            "500",
            "(eta: QNVB's cap lr on the mean step per coordinate",
            "(elbo_samples: the ELBO of each step comes from the same 4 deterministic quadrature",
        ),
        (
            "ivon",
            "1",
            "10",
            "0.1",
            "constant",
            "3000",
            "(eta: IVON's learning rate alpha",
            fixed,
        ),
        (
            "bbb",
            "1",
            "10",
            "0.01",
            "constant",
            "3000",
            "(eta: Adam's learning rate",
            fixed,
        ),
        (
            "bbvi",
            "100",
            "100",
            "0.2",
            "adagrad",
            "2000",
            "(eta: AdaGrad's step",
            "(elbo_samples: the ELBO of each iteration is the mean",
        ),
        (
            "ngbbvi",
            "50",
            "50",
            "0.01",
            "decay_1_over_t",
            "2000",
            "(eta: Adam's initial learning rate rho0 on the natural gradient; it decays",
            "(elbo_samples: the ELBO of each iteration is the mean",
        ),
        (
            "ngvi",
            "10",
            "10",
            "0.05",
            "constant",
            "0",
            "(eta: NGVI's step size beta",
            "(elbo_samples: the ELBO of each iteration is the mean",
        ),
        (
            "mgvb",
            "50",
            "50",
            "0.01",
            "constant",
            "0",
            "(eta: the step size beta0 on the manifold natural gradient (momentum weight 0.4)",
            "(elbo_samples: the ELBO of each iteration is the mean",
        ),
        (
            "von",
            "1",
            "10",
            "0.05",
            "constant",
            "500",
            "(eta: VON's step size beta",
            fixed,
        ),
        (
            "vogn",
            "1",
            "10",
            "0.1",
            "constant",
            "3000",
            "(eta: VOGN's step alpha",
            fixed,
        ),
        (
            "vlaplace",
            "1",
            "1",
            "0.01",
            "constant",
            "0",
            "(eta: Adam's learning rate on the mean, constant; the variances are the inverse",
            "(elbo_samples: no draws; the ELBO is vlaplace's closed-form objective",
        ),
    ];
    for (method, grad, elbo, eta, schedule, min_iter, eta_note, elbo_note) in cases {
        let csv = fit_file(
            dir.path(),
            model,
            data,
            &["--method", method, "--max-iter", "40"],
        );
        check_readable(&csv, eta);
        let lines = config(&csv);
        let kv = keys(&lines);
        // the fixed-draw probe of these methods runs every 5th iteration (PROBE_STRIDE)
        let strided = matches!(method, "bbb" | "ivon" | "von" | "vogn");
        let eval_elbo = if strided { "5" } else { "1" };
        if strided {
            assert!(
                note_after(&lines, "eval_elbo")
                    .starts_with("(eval_elbo: the exit rule's ELBO is estimated every 5th"),
                "{method}: {lines:#?}"
            );
        }
        for (key, want) in [
            ("variational_method", method),
            ("iter", "40"),
            ("grad_samples", grad),
            ("elbo_samples", elbo),
            ("eval_elbo", eval_elbo),
            ("output_samples", "20"),
            ("eta_schedule", schedule),
            ("exit_rule", "smoothed_elbo"),
            ("exit_min_iter", min_iter),
        ] {
            assert_eq!(kv.get(key).copied(), Some(want), "{method}: {key}");
        }
        assert!(
            note_after(&lines, "eta").starts_with(eta_note),
            "{method}: {lines:#?}"
        );
        assert!(
            note_after(&lines, "elbo_samples").starts_with(elbo_note),
            "{method}: {lines:#?}"
        );
        assert!(
            note_after(&lines, "tol_rel_obj").starts_with("(tol_rel_obj: not used;"),
            "{method}"
        );
        // the QBVI-only and minibatch keys stay where they belong
        assert_eq!(
            kv.contains_key("decay_after"),
            method == "ngbbvi",
            "{method}"
        );
        assert_eq!(
            kv.get("curvature").copied(),
            (method == "vlaplace").then_some("exact")
        );
        assert!(!kv.contains_key("batch_size"), "{method}");
    }
}

/// A minibatch fit's exit rule looks at the full-data ELBO every few epochs: `eval_elbo` is
/// that period in iterations and `elbo_samples` the draws of that ELBO; the exit keys are in
/// epochs. IVON at M = 50 of N = 753 (15 batches an epoch, one look an epoch) and Vadam at its
/// default M = 1 (753 batches an epoch).
#[test]
fn minibatch_fits_state_the_epoch_rule() {
    let dir = tempfile::tempdir().unwrap();
    let (model, data) = ("examples/labour/model.bayes", "examples/labour/labour.csv");
    for (extra, every, eta) in [
        (&["--method", "ivon", "--batch-size", "50"][..], "15", "0.1"),
        (&["--method", "vadam"][..], "753", "0.001"),
    ] {
        let args = [extra, &["--max-iter", "30"]].concat();
        let csv = fit_file(dir.path(), model, data, &args);
        check_readable(&csv, eta);
        let lines = config(&csv);
        let kv = keys(&lines);
        for (key, want) in [
            ("elbo_samples", "10"),
            ("eval_elbo", every),
            ("exit_rule", "epoch_smoothed_elbo"),
            ("exit_window_epochs", "5"),
            ("exit_patience_epochs", "10"),
            ("exit_min_epochs", "20"),
            ("exit_min_iter", "500"),
        ] {
            assert_eq!(kv.get(key).copied(), Some(want), "{extra:?}: {key}");
        }
        assert!(!kv.contains_key("exit_window"), "{extra:?}");
        assert_eq!(
            note_after(&lines, "eval_elbo"),
            format!(
                "(eval_elbo: the full-data ELBO is evaluated every {every} iterations (every 1 \
                 epoch))"
            )
        );
    }
}

/// A minibatch QBVI fit without `--step-size` runs at a step size bayesc lowered for the batch
/// noise: the eta note says so (the default 0.05, the rule, M and N) instead of leaving an
/// unexplained number, and eta is written with 6 significant digits, not 17. With
/// `--step-size` the note says nothing of the kind.
#[test]
fn minibatch_qbvi_eta_says_it_was_set_from_the_batch_size() {
    let dir = tempfile::tempdir().unwrap();
    let (model, data) = ("examples/labour/model.bayes", "examples/labour/labour.csv");
    let base = ["--method", "qbvi", "--diagonal", "--batch-size", "64"];
    let csv = fit_file(
        dir.path(),
        model,
        data,
        &[&base[..], &["--max-iter", "30"]].concat(),
    );
    // 2 * 0.1 / (753/64 - 1) = 0.018577648766328014
    check_readable(&csv, "0.0185776");
    let lines = config(&csv);
    let note = note_after(&lines, "eta");
    assert!(
        note.starts_with("(eta: QBVI's step size beta")
            && note.contains(
                "set by bayesc from the batch size, not configured: the default 0.05 lowered \
                 to 2 r/(N/M - 1) with r 0.1 for batches of M 64 of N 753 rows"
            )
            && note.contains("(--step-size to override)"),
        "{note}"
    );
    let args = [&base[..], &["--step-size", "0.02", "--max-iter", "30"]].concat();
    let csv = fit_file(dir.path(), model, data, &args);
    check_readable(&csv, "0.02");
    let lines = config(&csv);
    assert!(
        !note_after(&lines, "eta").contains("set by bayesc"),
        "{lines:#?}"
    );
}

/// MC dropout's q is Bernoulli masks, not a Gaussian: the header says so under `algorithm`,
/// and its ELBO is the mean over 10 fixed masks.
#[test]
fn mc_dropout_names_its_masks() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("m.bayes");
    std::fs::write(
        &model,
        "data { int<lower=0> N; vector[N] t; vector[N] y; }\n\
         parameters { real a; @dropout(0.1) real b; }\n\
         model { a ~ normal(0, 1); b ~ normal(0, 1); y ~ normal(a + b * t, 0.5); }\n",
    )
    .unwrap();
    let data = dir.path().join("d.json");
    std::fs::write(
        &data,
        r#"{"N": 6, "t": [0, 1, 2, 3, 4, 5], "y": [0.1, 0.9, 2.1, 2.9, 4.2, 5.0]}"#,
    )
    .unwrap();
    let csv = fit_file(
        dir.path(),
        model.to_str().unwrap(),
        data.to_str().unwrap(),
        &["--method", "mcdropout", "--max-iter", "40"],
    );
    check_readable(&csv, "0.01");
    let lines = config(&csv);
    let kv = keys(&lines);
    assert_eq!(kv["algorithm"], "meanfield");
    assert!(
        note_after(&lines, "algorithm").starts_with(
            "(algorithm: q is a product of Bernoulli dropout masks on the weights, not a Gaussian"
        ),
        "{lines:#?}"
    );
    assert_eq!(kv["grad_samples"], "1");
    assert_eq!(kv["elbo_samples"], "10");
    // the masks' probe runs every 5th iteration, as the Gaussian methods' does
    assert_eq!(kv["eval_elbo"], "5");
    assert!(
        note_after(&lines, "elbo_samples")
            .starts_with("(elbo_samples: the exit rule's ELBO uses 10 dropout masks drawn once"),
        "{lines:#?}"
    );
}

/// Full-covariance QBVI with d > S/10 runs at the step size of the §11 rule min(0.05,
/// 0.005 S/d), which bayesc chose from the dimension: the eta note gives the rule and its
/// numbers (d = 12, S = 100: 0.0416667), where the old note said only "constant". With
/// `--step-size`, or at d ≤ 10, it says nothing of the kind.
#[test]
fn full_covariance_qbvi_eta_gives_the_rule_bayesc_chose() {
    let dir = tempfile::tempdir().unwrap();
    let fit = |d: usize, extra: &[&str]| -> String {
        let model = dir.path().join("m.bayes");
        std::fs::write(
            &model,
            format!("parameters {{ vector[{d}] b; }}\nmodel {{ b ~ normal(0, 1); }}\n"),
        )
        .unwrap();
        let out = dir.path().join("q.csv");
        let o = Command::new(env!("CARGO_BIN_EXE_bayesc"))
            .args([
                "fit",
                model.to_str().unwrap(),
                "--method",
                "qbvi",
                "--seed",
                "1",
            ])
            .args(["-q", "--draws", "20", "-o", out.to_str().unwrap()])
            .args(extra)
            .output()
            .expect("run bayesc");
        assert!(o.status.success(), "{}", common::output_text(&o));
        std::fs::read_to_string(&out).unwrap()
    };
    let csv = fit(12, &[]);
    check_readable(&csv, "0.0416667");
    let lines = config(&csv);
    let note = note_after(&lines, "eta");
    assert!(
        note.contains(
            "; set by bayesc from the dimension, not configured: the full-covariance rule \
             min(0.05, 0.005 S/d) with S 100 draws per step and d 12 parameters"
        ) && note.contains("--step-size to override"),
        "{note}"
    );
    for (d, extra) in [(12, &["--step-size", "0.03"][..]), (8, &[][..])] {
        let csv = fit(d, extra);
        let lines = config(&csv);
        let note = note_after(&lines, "eta");
        assert!(!note.contains("set by bayesc"), "{d} {extra:?}: {note}");
    }
}

/// IVON's and VOGN's eta notes say what their steps do with eta, also with `--batch-size`:
/// IVON moves the mean by alpha (h0 + delta) times the momentum of the gradient of -L/lambda
/// with lambda = N once a minibatch plan exists; VOGN on batches smaller than N runs at its
/// minibatch default 0.01 in place of 0.1, which bayesc set (the old note said only "its
/// minibatch value"), and says so only when --step-size did not set it.
#[test]
fn ivon_and_vogn_eta_notes_say_what_the_steps_do() {
    let dir = tempfile::tempdir().unwrap();
    let (model, data) = ("examples/labour/model.bayes", "examples/labour/labour.csv");
    let run = |extra: &[&str]| -> (String, String) {
        let args = [extra, &["--max-iter", "30"]].concat();
        let csv = fit_file(dir.path(), model, data, &args);
        let lines = config(&csv);
        let eta = keys(&lines)["eta"].to_string();
        (eta, note_after(&lines, "eta").to_string())
    };
    let (eta, note) = run(&["--method", "ivon", "--batch-size", "50"]);
    assert_eq!(eta, "0.1");
    assert!(
        note.contains(
            "each step moves the mean by alpha (h0 + delta) with h0 1 and weight decay delta 0 \
             times the debiased momentum of the gradient of -L/lambda (lambda N 753 rows)"
        ),
        "{note}"
    );
    let (eta, note) = run(&["--method", "vogn", "--batch-size", "50"]);
    assert_eq!(eta, "0.01");
    assert!(
        note.contains(
            "set by bayesc, not configured: the minibatch default 0.01 in place of the \
             full-batch 0.1, since the batches are smaller than N (--step-size to override)"
        ),
        "{note}"
    );
    let (eta, note) = run(&[
        "--method",
        "vogn",
        "--batch-size",
        "50",
        "--step-size",
        "0.02",
    ]);
    assert_eq!(eta, "0.02");
    assert!(
        note.ends_with("constant; configured by --step-size)"),
        "{note}"
    );
    let (eta, note) = run(&["--method", "vogn"]);
    assert_eq!(eta, "0.1");
    assert!(
        note.ends_with("constant; the full-batch default)"),
        "{note}"
    );
}
