//! The reliability gate of variational fits (issue 13, item 3; `fit::vi_gate`): right on the
//! four cases where the 1000-draw k̂ alone missed or false-alarmed. Models and data in
//! `tests/fixtures/khat`; fixed seeds; each fit takes well under a second in release mode.

mod common;

fn fit(args: &[&str]) -> String {
    let mut all = vec!["fit"];
    all.extend_from_slice(args);
    let (ok, text) = common::run_bayesc_in("tests/fixtures/khat", &all);
    assert!(ok, "{text}");
    text
}

/// (mean, sd) of a row of the summary table.
fn row(text: &str, name: &str) -> (f64, f64) {
    let l = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no row {name} in\n{text}"));
    let v: Vec<f64> = l
        .split_whitespace()
        .skip(1)
        .take(2)
        .map(|t| t.parse().unwrap())
        .collect();
    (v[0], v[1])
}

/// The warning of a fit judged far from the posterior (`output::report::vi_verdict`): q misses
/// mass of p, or reweighting moved its means or sds; each advises NUTS.
fn means_warning(text: &str) -> bool {
    text.lines().any(|l| {
        (l.starts_with(
            "WARNING: the approximation is not close to the posterior in the KL(p||q) sense",
        ) || l.starts_with("WARNING: the approximation is unreliable: its means are off")
            || l.starts_with("WARNING: the approximation is unreliable: its sds are off"))
            && l.contains("--method nuts")
    })
}

/// The line of `text` that starts with "WARNING: the approximation".
fn warning_line(text: &str) -> &str {
    text.lines()
        .find(|l| l.starts_with("WARNING: the approximation"))
        .unwrap_or_else(|| panic!("no warning in\n{text}"))
}

fn tails_note(text: &str) -> bool {
    text.lines()
        .any(|l| l.starts_with("note: the tails of the approximation are unreliable"))
}

#[test]
fn centred_eight_schools_is_flagged_by_qbvi_and_qnvb() {
    // true tau 3.6 ± 3.2 (posteriordb reference); q sits in the funnel's neck
    for method in ["qbvi", "qnvb"] {
        let text = fit(&[
            "eight_centred.bayes",
            "--data",
            "eight_centred.csv",
            "--method",
            method,
            "--seed",
            "4",
        ]);
        let (_, sd) = row(&text, "tau");
        assert!(
            sd < 2.0,
            "{method}: the approximation is too narrow\n{text}"
        );
        // QNVB seed 4 (tau 6.0 ± 1.5) used to get only the "usable" note
        assert!(means_warning(&text), "{method}:\n{text}");
        // no interior mode (the funnel): not "a full-covariance family" for the mean-field QNVB
        let w = warning_line(&text);
        assert!(!w.contains("full-covariance family"), "{method}: {w}");
        assert!(
            text.contains("4000 draws of the approximation; each batch of 1000, 4 batches"),
            "{text}"
        );
    }
}

#[test]
fn separated_logistic_regression_is_flagged() {
    // posterior of b: 84.7 ± 59.0 (quadrature); QBVI gives 50-76 ± 20-27 (seed 6: 50.5 ± 19.5,
    // the case) and the 1000-draw k̂ was 0.26-0.55 with no warning. Seed 2 (not
    // converged at every seed) was not refined before session 20; its steps, whose standard
    // errors exceed 0.03 and are now estimated from 1000 draws, move its mean from 75.8 to
    // 82.0, nearer the posterior's; the sds stay too narrow
    for seed in ["1", "2", "6"] {
        let text = fit(&["separated.bayes", "--data", "separated.csv", "--seed", seed]);
        let (mean, sd) = row(&text, "b");
        assert!(mean < 84.7 && sd < 35.0, "seed {seed}:\n{text}");
        // flagged: by the PSIS warning with its remedy, or (an unsettled refinement) by "not
        // converged" with the remedy there and the PSIS warning deferring to it
        let not_converged = text.contains("WARNING: not converged: ")
            && text.contains("The fit did not converge (see above)");
        assert!(
            means_warning(&text) || not_converged,
            "seed {seed}:\n{text}"
        );
        // QBVI is full-covariance at d = 1: the warning blames the shape of the posterior
        // (seed 6), or reports what reweighting moved (seed 1: the sd of b by a factor 1.52;
        // seed 2: its mean by 0.31 sd), never a missing correlation
        let w = warning_line(&text);
        // (session 21: the full-covariance refinement of mean and covariance does not settle
        // on this skewed posterior at seeds 1, 2 and 6; the fit then says not converged, keeps
        // the method's own q, and the PSIS warning defers to that verdict)
        assert!(
            w.contains("q can already represent the correlations")
                || w.contains("its means are off")
                || w.contains("its sds are off")
                || (w.contains("The fit did not converge (see above)")
                    && text.contains("WARNING: not converged: ")),
            "{w}"
        );
        assert!(!w.contains("mean-field"), "{w}");
    }
}

#[test]
fn resampling_a_too_narrow_q_is_not_called_usable() {
    // seed 1: k̂ 0.32 and reweighting widens sd(b) by 1.52; the PSIS-resampled draws give
    // b = 64.6 ± 37.1 against the posterior's 84.7 ± 59.0, and the note called them "usable"
    let text = fit(&[
        "separated.bayes",
        "--data",
        "separated.csv",
        "--seed",
        "1",
        "--psis-resample",
    ]);
    let (mean, sd) = row(&text, "b");
    assert!(mean < 75.0 && sd < 45.0, "{text}");
    assert!(!text.contains("usable"), "{text}");
    let w = warning_line(&text);
    assert!(
        w.contains("the PSIS resampling of the draws shown cannot widen them"),
        "{w}"
    );
    assert!(w.contains("--method nuts"), "{w}");
}

#[test]
fn mean_field_fits_of_labour_are_told_their_sds_are_too_narrow_not_that_their_means_are_wrong() {
    // NUTS (seed 1, 4000 draws): alpha 3.208 ± 0.654, beta[1] -1.484 ± 0.202. The mean-field
    // fits get the means but sd(alpha) ≈ 0.08: the posterior is strongly correlated, k̂ 0.87-1.01.
    // The warning used to say "its means and sds are wrong ... Use --method nuts".
    // a labour fit (seed 1) with these method flags: its output, after checking it succeeded
    let fit_labour = |method: &[&str]| {
        let mut args = vec!["fit", "model.bayes", "--data", "labour.csv", "--seed", "1"];
        args.extend_from_slice(method);
        let (ok, text) = common::run_bayesc_in("examples/labour", &args);
        assert!(ok, "{text}");
        text
    };
    for method in [
        &["--method", "qbvi", "--diagonal"][..],
        &["--method", "ivon"],
    ] {
        let text = fit_labour(method);
        let (ma, sa) = row(&text, "alpha");
        let (mb, _) = row(&text, "beta[1]");
        assert!((ma - 3.208).abs() < 0.1 * 0.654, "{method:?}:\n{text}");
        assert!((mb + 1.484).abs() < 0.1 * 0.202, "{method:?}:\n{text}");
        assert!(sa < 0.2, "{method:?}: mean-field sd of alpha\n{text}");
        let w = warning_line(&text);
        assert!(
            w.starts_with(
                "WARNING: the approximation is not close to the posterior in the KL(p||q) sense"
            ),
            "{w}"
        );
        assert!(
            w.contains("the importance weights p/q are unreliable"),
            "{w}"
        );
        assert!(
            w.contains("mean-field (diagonal) Gaussian when the parameters are correlated: its marginal sds are too narrow (underdispersed) and it has no correlations"),
            "{w}"
        );
        assert!(w.contains("--method qbvi --full, mgvb or emgvb"), "{w}");
        assert!(!w.contains("--method von --full"), "{w}");
        assert!(w.contains("--method nuts"), "{w}");
        assert!(
            !w.contains("means are off") && !w.contains("means and sds are wrong"),
            "{w}"
        );
    }
    // a mean-field fit of a method with a full family of its own names that family first
    let text = fit_labour(&["--method", "von", "--diagonal"]);
    let w = warning_line(&text);
    assert!(
        w.contains("full-covariance family (--method von --full, --method qbvi --full, mgvb"),
        "{w}"
    );
    // the full-covariance fit it points to passes the gate
    let text = fit_labour(&["--method", "qbvi", "--full"]);
    let (_, sa) = row(&text, "alpha");
    assert!((sa - 0.654).abs() < 0.05, "{text}");
    assert!(!text.contains("WARNING"), "{text}");
}

#[test]
fn student_t_matched_by_qbvi_gets_a_tails_note_not_a_warning() {
    // a ~ t5(1, 1): mean 1, sd 1.29; b ~ t5(-2, 0.5): mean -2, sd 0.65. k̂ was 1.1 with PSIS
    // ESS 956/1000 and "WARNING unreliable"
    let text = fit(&["two_t.bayes", "--seed", "1"]);
    let (ma, sa) = row(&text, "a");
    let (mb, sb) = row(&text, "b");
    assert!((ma - 1.0).abs() < 0.15 && (sa - 1.29).abs() < 0.2, "{text}");
    assert!(
        (mb + 2.0).abs() < 0.08 && (sb - 0.645).abs() < 0.1,
        "{text}"
    );
    assert!(!text.contains("WARNING"), "{text}");
    assert!(tails_note(&text), "{text}");
    assert!(
        text.contains("means, sds and central intervals are usable"),
        "{text}"
    );
}

#[test]
fn beta_binomial_gets_a_tails_note_not_a_warning() {
    // posterior beta(302, 702): mean 0.30100, sd 0.01449. k̂ was 2.18 with PSIS ESS 1000/1000
    // and "WARNING unreliable"
    let text = fit(&[
        "beta_binomial.bayes",
        "--data",
        "beta_binomial.json",
        "--seed",
        "6",
    ]);
    let (m, s) = row(&text, "p");
    assert!(
        (m - 0.30100).abs() < 0.002 && (s - 0.01449).abs() < 0.0015,
        "{text}"
    );
    assert!(!text.contains("WARNING"), "{text}");
    assert!(tails_note(&text), "{text}");
}
