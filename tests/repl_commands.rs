//! REPL commands on a small typed model: `:fit … as NAME` over an existing fit (replaced, with
//! a note before and after the run), `:set` of an unknown setting (bayesc's own message with
//! the valid settings and a did-you-mean), and `:compare` with a point-estimate fit (no NaN).

use bayesc::repl::Session;

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
    o.text
}

/// A session with a two-parameter typed model (no data).
fn session() -> Session {
    let mut s = Session::new();
    s.set_progress(false);
    ok(
        &mut s,
        "parameters {\n  real mu;\n  real<lower=0> sigma;\n}",
    );
    ok(
        &mut s,
        "model {\n  mu ~ normal(1, 2);\n  sigma ~ lognormal(0, 0.5);\n}",
    );
    s
}

#[test]
fn fitting_as_an_existing_name_replaces_it_with_a_note() {
    let mut s = session();
    let first = ok(&mut s, ":fit qbvi --seed 1 as a");
    assert!(
        !first.contains("note:") && first.contains("stored as a\n"),
        "{first}"
    );
    let second = ok(&mut s, ":fit qbvi --seed 2 as a");
    assert!(
        second.contains("note: a exists (qbvi, seed 1); it is replaced when this fit ends"),
        "{second}"
    );
    assert!(
        second.contains("stored as a, replacing the previous a (qbvi, seed 1)"),
        "{second}"
    );
    assert_eq!(s.fits().len(), 1);
    assert_eq!(s.fits()[0].result.seed, 2);
    // automatic names never replace anything
    let third = ok(&mut s, ":fit qbvi --seed 3");
    assert!(
        !third.contains("replac") && third.contains("stored as fit"),
        "{third}"
    );
    assert!(ok(&mut s, ":help").contains("`as NAME` of an existing fit replaces it"));
}

#[test]
fn an_unknown_setting_lists_the_settings() {
    let mut s = session();
    for input in [":set bogus", ":set bogus 3"] {
        let e = err(&mut s, input);
        assert!(e.starts_with("error: unknown setting `bogus`\n"), "{e}");
        assert!(!e.contains("did you mean"), "{e}");
        // bayesc's own text, not clap's
        assert!(!e.contains("tip:") && !e.contains("Usage:"), "{e}");
        for section in [
            "  general: method, seed,",
            "  mcmc: chains, warmup, samples,",
            "  variational inference: draws, diagonal,",
        ] {
            assert!(e.contains(section), "{e}");
        }
        assert!(!e.contains("refresh") && !e.contains("threads"), "{e}");
    }
    let e = err(&mut s, ":set sed 3");
    assert!(
        e.starts_with("error: unknown setting `sed`\n  help: did you mean `seed`?"),
        "{e}"
    );
    let e = err(&mut s, ":set max_dpth 12");
    assert!(e.contains("did you mean `max-depth`?"), "{e}");
    let e = err(&mut s, ":set threads 2");
    assert!(e.contains("RAYON_NUM_THREADS"), "{e}");
    let e = err(&mut s, ":set seed");
    assert!(e.starts_with("usage: :set seed VALUE"), "{e}");
    assert_eq!(ok(&mut s, ":set diagonal"), "diagonal = on\n");
    let e = err(&mut s, ":set diagonal maybe");
    assert!(e.contains("on or off"), "{e}");
    // a bad value keeps bayesc fit's message, without :fit's usage line
    let e = err(&mut s, ":set method nutz");
    assert!(
        e.contains("invalid value 'nutz'") && !e.contains("Usage:"),
        "{e}"
    );
    assert_eq!(ok(&mut s, ":set seed 7"), "seed = 7\n");
    assert_eq!(ok(&mut s, ":set"), "diagonal = on\nseed = 7\n");
}
