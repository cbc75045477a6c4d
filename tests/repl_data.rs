//! `:data` in the REPL binds data only when they fit the current model: files with missing
//! variables or wrong shapes, or that cannot be read, are refused with the reason, and the data
//! bound before stay bound (the note says so). A model that checks is always loaded, even when
//! the bound data do not fit it, so that switching to a model with other data is never a dead
//! end: `:load` says the data must be bound again, `:fit` refuses until they are.

use std::path::{Path, PathBuf};

mod common;

use bayesc::repl::Session;

use common::{repl_err as err, repl_ok as ok};

/// The number after `= ` in an expression's answer (`mean(mu) = 1.998  (MCSE …`).
fn answer(text: &str) -> f64 {
    let rest = text.split(" = ").nth(1).unwrap_or_else(|| panic!("{text}"));
    rest.split_whitespace().next().unwrap().parse().unwrap()
}

/// Two models with different data, their data files and a misfit for each, in `dir`:
/// `a.bayes` (y ~ normal(mu, 1), y = 1, 2, 3: mu ≈ 2) and `b.bayes` (c ~ poisson(lambda),
/// lambda ~ gamma(2, 1), c = 3, 5, 4: lambda | c ~ gamma(14, 4), mean 3.5).
struct Files {
    a: PathBuf,
    a_csv: PathBuf,
    b: PathBuf,
    b_csv: PathBuf,
    /// `a.bayes`'s data with `N = 4` but three values of `y`: a wrong shape.
    a_short_json: PathBuf,
}

fn files(dir: &Path) -> Files {
    let f = Files {
        a: dir.join("a.bayes"),
        a_csv: dir.join("a.csv"),
        b: dir.join("b.bayes"),
        b_csv: dir.join("b.csv"),
        a_short_json: dir.join("a_short.json"),
    };
    std::fs::write(
        &f.a,
        "data { int N; vector[N] y; }\nparameters { real mu; }\n\
         model { mu ~ normal(0, 10); y ~ normal(mu, 1); }\n",
    )
    .unwrap();
    std::fs::write(&f.a_csv, "y\n1\n2\n3\n").unwrap();
    std::fs::write(
        &f.b,
        "data { int K; array[K] int c; }\nparameters { real<lower=0> lambda; }\n\
         model { lambda ~ gamma(2, 1); c ~ poisson(lambda); }\n",
    )
    .unwrap();
    std::fs::write(&f.b_csv, "c\n3\n5\n4\n").unwrap();
    std::fs::write(&f.a_short_json, r#"{"N": 4, "y": [1, 2, 3]}"#).unwrap();
    f
}

fn session() -> Session {
    let mut s = Session::new();
    s.set_progress(false);
    s
}

#[test]
fn data_that_do_not_fit_the_model_are_refused_and_the_previous_data_kept() {
    let dir = tempfile::tempdir().unwrap();
    let f = files(dir.path());
    let mut s = session();
    ok(&mut s, &format!(":load {}", f.a.display()));
    let t = ok(&mut s, &format!(":data {}", f.a_csv.display()));
    assert!(t.ends_with("the data fit the model\n"), "{t}");
    // missing variables: b.csv has no `y`
    let e = err(&mut s, &format!(":data {}", f.b_csv.display()));
    assert!(
        e.contains("not in")
            && e.contains(&format!(
                "note: the data in {} do not fit the model {}, so they were not bound; kept the \
                 previous data from {}\n",
                f.b_csv.display(),
                f.a.display(),
                f.a_csv.display()
            ))
            && e.contains(
                "help: to use them with another model, `:load` (or type) that model first"
            ),
        "{e}"
    );
    // a wrong shape: N = 4 but three values of y
    let e = err(&mut s, &format!(":data {}", f.a_short_json.display()));
    assert!(
        e.contains("`y` has 3 elements, but it is declared `vector[N]` with `N` = 4")
            && e.contains(&format!(
                "so they were not bound; kept the previous data from {}",
                f.a_csv.display()
            )),
        "{e}"
    );
    // a file that cannot be read
    let e = err(
        &mut s,
        &format!(":data {}", dir.path().join("none.csv").display()),
    );
    assert!(
        e.contains(&format!(
            "note: nothing was bound; kept the previous data from {}",
            f.a_csv.display()
        )),
        "{e}"
    );
    assert_eq!(
        ok(&mut s, ":data"),
        format!("data: {}\n", f.a_csv.display())
    );
    // the fit uses the data kept: mu | y ~ normal(≈ 2, ≈ 1/√3)
    ok(&mut s, ":fit qbvi --seed 1");
    let mu = answer(&ok(&mut s, "mean(mu)"));
    assert!((mu - 2.0).abs() < 0.1, "mean(mu) = {mu}");
}

#[test]
fn with_no_data_bound_a_misfit_binds_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let f = files(dir.path());
    let mut s = session();
    ok(&mut s, &format!(":load {}", f.a.display()));
    let e = err(&mut s, &format!(":data {}", f.b_csv.display()));
    assert!(
        e.contains("so they were not bound; no data are bound\n"),
        "{e}"
    );
    assert_eq!(ok(&mut s, ":data"), "no data files (use :data FILE...)\n");
    // with no model, data are bound unchecked (and checked when a model is loaded)
    let mut s = session();
    let t = ok(&mut s, &format!(":data {}", f.b_csv.display()));
    assert!(t.contains("no model yet"), "{t}");
    let t = ok(&mut s, &format!(":load {}", f.b.display()));
    assert!(!t.contains("note:"), "{t}");
    ok(&mut s, ":fit qbvi --seed 1");
}

/// The dead end that refusing `:data` could make: the data bound fit model a; b's data do not,
/// so `:data b.csv` is refused; `:load b.bayes` still loads b (saying that the data must be
/// bound again), `:fit` refuses until they are, and then `:data b.csv` binds them.
#[test]
fn switching_to_a_model_with_other_data_is_never_a_dead_end() {
    let dir = tempfile::tempdir().unwrap();
    let f = files(dir.path());
    let mut s = session();
    ok(&mut s, &format!(":load {}", f.a.display()));
    ok(&mut s, &format!(":data {}", f.a_csv.display()));
    err(&mut s, &format!(":data {}", f.b_csv.display()));
    let t = ok(&mut s, &format!(":load {}", f.b.display()));
    assert!(
        t.contains(&format!(
            "note: {} is loaded as the current model, but the data bound from {} do not fit it \
             (above); they stay bound until `:data FILE...` binds data that fit it",
            f.b.display(),
            f.a_csv.display()
        )),
        "{t}"
    );
    assert!(ok(&mut s, ":show").contains("poisson(lambda)"));
    let e = err(&mut s, ":fit qbvi --seed 1");
    assert!(
        e.contains(&format!(
            "note: the data bound from {} do not fit {}; bind data that fit it with `:data FILE...`",
            f.a_csv.display(),
            f.b.display()
        )) && !e.contains("stored as"),
        "{e}"
    );
    assert!(s.fits().is_empty());
    // re-binding a's data to b: refused, and the kept data are said not to fit either
    let e = err(&mut s, &format!(":data {}", f.a_csv.display()));
    assert!(e.contains("which do not fit this model either"), "{e}");
    let t = ok(&mut s, &format!(":data {}", f.b_csv.display()));
    assert!(t.ends_with("the data fit the model\n"), "{t}");
    ok(&mut s, ":fit qbvi --seed 1");
    let lambda = answer(&ok(&mut s, "mean(lambda)"));
    assert!((lambda - 3.5).abs() < 0.15, "mean(lambda) = {lambda}");
    // and back to a, the other way round: load first, then its data
    ok(&mut s, &format!(":load {}", f.a.display()));
    ok(&mut s, &format!(":data {}", f.a_csv.display()));
    ok(&mut s, ":fit qbvi --seed 1");
    assert!((answer(&ok(&mut s, "mean(mu)")) - 2.0).abs() < 0.1);
}

/// A model file edited on disk to need other data: the reload before `:fit` installs the new
/// version and the fit is refused with the reason said once.
#[test]
fn a_model_edited_to_need_other_data_is_reloaded_and_not_fitted() {
    let dir = tempfile::tempdir().unwrap();
    let f = files(dir.path());
    let mut s = session();
    ok(&mut s, &format!(":load {}", f.a.display()));
    ok(&mut s, &format!(":data {}", f.a_csv.display()));
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::copy(&f.b, &f.a).unwrap();
    let e = err(&mut s, ":fit qbvi --seed 1");
    assert!(
        e.starts_with(&format!("reloaded {}", f.a.display()))
            && e.matches("do not fit it").count() == 1
            && e.contains("they stay bound until `:data FILE...` binds data that fit it"),
        "{e}"
    );
    assert!(s.fits().is_empty());
    ok(&mut s, &format!(":data {}", f.b_csv.display()));
    ok(&mut s, ":fit qbvi --seed 1");
}

/// A model typed block by block against data that do not fit it shows the mismatch once, with
/// its first block; the next blocks, with the same mismatch, say it still holds in one line
/// (each block repeated the whole error). `:fit` and a model typed afresh show it in full.
#[test]
fn a_typed_model_shows_the_data_mismatch_once() {
    let dir = tempfile::tempdir().unwrap();
    let f = files(dir.path());
    let mut s = session();
    ok(&mut s, &format!(":data {}", f.b_csv.display()));
    let error = "error: 2 data variables are not in";
    let first = ok(&mut s, "data {\n  int N;\n  vector[N] y;\n}");
    assert_eq!(first.matches(error).count(), 1, "{first}");
    assert!(first.contains("is loaded as the current model"), "{first}");
    let still = format!(
        "note: the data bound from {} still do not fit <repl> (the error above)\n",
        f.b_csv.display()
    );
    for block in [
        "parameters {\n  real mu;\n}",
        "model {\n  y ~ normal(mu, 1);\n}",
    ] {
        let t = ok(&mut s, block);
        assert!(!t.contains(error) && t.ends_with(&still), "{t}");
    }
    // `:fit` says why in full; a model typed afresh shows its mismatch again
    let e = err(&mut s, ":fit qbvi --seed 1");
    assert!(e.contains(error), "{e}");
    let again = ok(&mut s, "data {\n  int N;\n  vector[N] y;\n}");
    assert_eq!(again.matches(error).count(), 1, "{again}");
}
