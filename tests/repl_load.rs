//! A failed `:load` in the REPL keeps the current model loaded and says so; the next `:fit`
//! names the model it fits (issue 13, item 9, asked that it never fit the previous model
//! without a word). A model file broken on disk is not fitted in its old form. A path with
//! spaces is given in quotes. Model text typed after a `:load` says that it replaces the loaded
//! model.

use bayesc::repl::Session;

#[test]
fn a_failed_load_keeps_the_previous_model_and_says_so() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let good = dir.path().join("good.bayes");
    let bad = dir.path().join("bad.bayes");
    let missing = dir.path().join("missing.bayes");
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
    // a file that does not check
    let o = s.execute(&format!(":load {}", bad.display()));
    assert!(o.is_error, "{}", o.text);
    assert!(
        o.text.contains("expected `;`")
            && o.text.contains(&format!(
                "{} does not check; the previous model, {}, is still loaded",
                bad.display(),
                good.display()
            )),
        "{}",
        o.text
    );
    // a file that does not exist
    let o = s.execute(&format!(":load {}", missing.display()));
    assert!(o.is_error, "{}", o.text);
    assert!(
        o.text.contains(&format!(
            "{} could not be read; the previous model, {}, is still loaded",
            missing.display(),
            good.display()
        )),
        "{}",
        o.text
    );
    let o = s.execute(":show");
    assert!(
        !o.is_error && o.text.contains("normal(0, 1);"),
        "{}",
        o.text
    );
    // the next :fit fits good.bayes and says so, once
    let o = s.execute(":fit qbvi --seed 1");
    assert!(!o.is_error, "{}", o.text);
    assert!(
        o.text.starts_with(&format!(
            "note: the last `:load {}` failed; fitting the loaded model, {}",
            missing.display(),
            good.display()
        )) && o.text.contains("stored as fit1"),
        "{}",
        o.text
    );
    let o = s.execute(":fit qbvi --seed 2");
    assert!(
        !o.is_error && !o.text.contains("note: the last"),
        "{}",
        o.text
    );
    // :reload re-reads the current model, not the file that failed
    let o = s.execute(":reload");
    assert!(
        !o.is_error && o.text.contains(&format!("reloaded {}", good.display())),
        "{}",
        o.text
    );
    // once fixed, the file loads
    std::fs::write(
        &bad,
        "parameters { real mu; }\nmodel { mu ~ normal(0, 2); }\n",
    )
    .unwrap();
    let o = s.execute(&format!(":load {}", bad.display()));
    assert!(!o.is_error, "{}", o.text);
    assert!(o.text.contains("bad.bayes"), "{}", o.text);
}

/// A failed re-read of the current model's own file keeps the version loaded before, and the
/// message says that `:fit` waits for the file to check.
#[test]
fn a_failed_reload_keeps_the_version_loaded_before() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let m = dir.path().join("m.bayes");
    let mut s = Session::new();
    s.set_progress(false);
    std::fs::write(&m, "parameters { real x; }\nmodel { x ~ normal(1, 1); }\n").unwrap();
    assert!(!s.execute(&format!(":load {}", m.display())).is_error);
    std::fs::write(&m, "parameters { real x; }\nmodel { x ~ normal(5, 1) }\n").unwrap();
    let o = s.execute(":reload");
    assert!(
        o.is_error
            && o.text
                .contains("the version loaded before is still the current model"),
        "{}",
        o.text
    );
    let o = s.execute(":show");
    assert!(o.text.contains("normal(1, 1);"), "{}", o.text);
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

#[test]
fn a_path_with_spaces_loads_in_quotes() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let sub = dir.path().join("my models");
    std::fs::create_dir(&sub).unwrap();
    let model = sub.join("m.bayes");
    std::fs::write(
        &model,
        "parameters { real mu; }\nmodel { mu ~ normal(0, 1); }\n",
    )
    .unwrap();
    let mut s = Session::new();
    s.set_progress(false);
    // unquoted, the words are counted and the quotes suggested
    let o = s.execute(&format!(":load {}", model.display()));
    assert!(o.is_error, "{}", o.text);
    assert!(
        o.text.contains("`:load` takes one file; got 2 words")
            && o.text.contains(&format!(
                "help: a path with spaces goes in quotes: `:load \"{}\"`",
                model.display()
            )),
        "{}",
        o.text
    );
    for q in ['"', '\''] {
        let o = s.execute(&format!(":load {q}{}{q}", model.display()));
        assert!(!o.is_error, "{}", o.text);
        assert!(o.text.contains("parameters {mu}"), "{}", o.text);
    }
    let o = s.execute(&format!(":load \"{}", model.display()));
    assert!(
        o.is_error && o.text.contains("unclosed quote `\"`"),
        "{}",
        o.text
    );
    // `:save` and `:fit --output` take quoted paths too
    assert!(!s.execute(":fit qbvi --seed 1 as q").is_error);
    let out = sub.join("q draws.csv");
    let o = s.execute(&format!(":save q \"{}\"", out.display()));
    assert!(!o.is_error, "{}", o.text);
    assert!(out.exists());
}

/// Model text typed after a `:load` begins a model of its own (typed blocks never add to a
/// loaded file): the answer says that it replaces the loaded model, and a typed block that does
/// not check on its own says that the loaded model is still current. Between typed models the
/// same is said, with the reason the new block began a new model.
#[test]
fn a_model_typed_after_a_load_says_that_it_replaces_the_loaded_one() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let file = dir.path().join("m.bayes");
    std::fs::write(
        &file,
        "parameters { real mu; }\nmodel { mu ~ normal(5, 1); }\n",
    )
    .unwrap();
    let mut s = Session::new();
    s.set_progress(false);
    assert!(!s.execute(&format!(":load {}", file.display())).is_error);
    // a lone model block, as if to change the file's prior: it does not check on its own
    let o = s.execute("model { mu ~ normal(0, 1); }");
    assert!(o.is_error, "{}", o.text);
    assert!(
        o.text.contains("undeclared variable `mu`")
            && o.text.contains(&format!(
                "note: the typed text began a new model (typed blocks begin a model of their own \
                 and never add to a loaded file; to change the file, edit it and `:reload`), \
                 which does not check; the model loaded from {} is still the current model",
                file.display()
            )),
        "{}",
        o.text
    );
    assert!(s.execute(":show").text.contains("normal(5, 1)"));
    // a whole typed model replaces it, said once, at its first block
    let o = s.execute("parameters { real mu; }");
    assert!(!o.is_error, "{}", o.text);
    assert!(
        o.text.contains(&format!(
            "note: the typed model replaces the model loaded from {} (typed blocks begin a model \
             of their own",
            file.display()
        )),
        "{}",
        o.text
    );
    let o = s.execute("model { mu ~ normal(0, 1); }");
    assert!(!o.is_error && !o.text.contains("note:"), "{}", o.text);
    assert!(s.execute(":show").text.starts_with("// <repl>\n"));
    assert!(!s.execute(":fit qbvi --seed 1").is_error);
    assert_eq!(s.fits()[0].model_name, "<repl>");
    let mean = s.execute("mean(mu)").text;
    let mu: f64 = mean
        .split(" = ")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(mu.abs() < 0.15, "{mean}");
    // after a command, a typed block begins a new model too
    let o = s.execute("parameters { real nu; }");
    assert!(
        !o.is_error
            && o.text.contains(
                "note: the typed model replaces the model typed before (blocks typed after a \
                 command or an expression begin a new model"
            ),
        "{}",
        o.text
    );
    s.execute("model { nu ~ normal(0, 1); }");
    // a block out of order begins a new model, with the reason
    let o = s.execute("data { int N; }");
    assert!(
        o.text.contains(
            "note: the typed model replaces the model typed before (a `data` block cannot follow \
             `model`, so it begins a new model"
        ),
        "{}",
        o.text
    );
}
