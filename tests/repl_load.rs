//! A failed `:load` in the REPL must not leave the previous model in place for the next `:fit`
//! (issue 13, item 9).

use bayesc::repl::Session;

#[test]
fn a_failed_load_drops_the_previous_model() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let good = dir.path().join("good.bayes");
    let bad = dir.path().join("bad.bayes");
    std::fs::write(
        &good,
        "parameters { real mu; }\nmodel { mu ~ normal(0, 1); }\n",
    )
    .unwrap();
    std::fs::write(
        &bad,
        "parameters { real mu; }\nmodel { mu ~ normal(0, 1) }\n",
    )
    .unwrap();
    let mut s = Session::new();
    s.set_progress(false);
    let o = s.execute(&format!(":load {}", good.display()));
    assert!(!o.is_error, "{}", o.text);
    let o = s.execute(&format!(":load {}", bad.display()));
    assert!(o.is_error, "{}", o.text);
    assert!(o.text.contains("unloaded"), "{}", o.text);
    // the next :fit must not fit good.bayes: it retries bad.bayes, which still fails
    let o = s.execute(":fit --seed 1");
    assert!(o.is_error, "the previous model was fitted:\n{}", o.text);
    assert!(
        o.text.contains("expected `;`") && !o.text.contains("stored as"),
        "{}",
        o.text
    );
    // after fixing the file, :reload loads it
    std::fs::write(
        &bad,
        "parameters { real mu; }\nmodel { mu ~ normal(0, 2); }\n",
    )
    .unwrap();
    let o = s.execute(":reload");
    assert!(!o.is_error, "{}", o.text);
    assert!(o.text.contains("bad.bayes"), "{}", o.text);
}

#[test]
fn a_model_file_broken_on_disk_is_not_fitted_in_its_old_form() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let m = dir.path().join("m.bayes");
    let mut s = Session::new();
    s.set_progress(false);
    std::fs::write(&m, "parameters { real x; }\nmodel { x ~ normal(1, 1); }\n").unwrap();
    assert!(!s.execute(&format!(":load {}", m.display())).is_error);
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&m, "parameters { real x; }\nmodel { x ~ normal(5, 1) }\n").unwrap();
    let o = s.execute(":fit qbvi --seed 1");
    assert!(o.is_error && o.text.contains("expected `;`"), "{}", o.text);
    // still broken: still an error, not a fit of normal(1, 1)
    let o = s.execute(":fit qbvi --seed 1");
    assert!(o.is_error, "{}", o.text);
    std::fs::write(&m, "parameters { real x; }\nmodel { x ~ normal(5, 1); }\n").unwrap();
    let o = s.execute(":fit qbvi --seed 1");
    assert!(!o.is_error && o.text.starts_with("reloaded"), "{}", o.text);
}

/// `:fit` after a `:load` of a file that does not exist: an error naming the failed load and
/// why (once nothing at all was printed: the missing file's absent modification time matched
/// the absent model's, so the retry was skipped as "unchanged").
#[test]
fn fit_after_loading_a_missing_file_says_why_there_is_nothing_to_fit() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let missing = dir.path().join("nonexistent.bayes");
    let mut s = Session::new();
    s.set_progress(false);
    let o = s.execute(&format!(":load {}", missing.display()));
    assert!(o.is_error && o.text.contains("cannot read"), "{}", o.text);
    let o = s.execute(":fit qbvi");
    assert!(o.is_error, "{}", o.text);
    assert!(
        o.text.contains(&format!(
            "nothing to fit: the last `:load {}` failed",
            missing.display()
        )) && o.text.contains("cannot read"),
        "{}",
        o.text
    );
}
