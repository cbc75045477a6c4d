//! Data files that lack several of the model's data variables (typically the wrong file): the
//! error names the file and lists every missing variable, not just the first one (which is often
//! a size such as `J` that the rows would have given), for CSV and JSON alike. A size that can be
//! inferred is still inferred and not reported.

use bayesc::data::{DataError, DataErrorKind, DataSource, bind, load_csv_str, load_json_str};
use bayesc::syntax::parse_program;
use bayesc::syntax::report::{ToDiagnostic, render_plain};
use bayesc::syntax::source::SourceMap;

/// Eight schools' data block.
const SCHOOLS: &str = "data {
  int<lower=0> J;
  vector[J] y;
  vector<lower=0>[J] sigma;
}
parameters { real mu; }
model { y ~ normal(mu, sigma); }
";

fn bind_err(model: &str, sources: &[DataSource]) -> DataError {
    let program = parse_program(model, 0).expect("test model parses");
    match bind(&program, sources) {
        Ok(b) => panic!("expected a binding error, got {b:?}"),
        Err(e) => e,
    }
}

fn csv(name: &str, text: &str) -> DataSource {
    load_csv_str(name, text).expect("test CSV parses")
}

fn json(name: &str, text: &str) -> DataSource {
    load_json_str(name, text).expect("test JSON parses")
}

/// The text of each labelled declaration, in order.
fn labelled(model: &str, e: &DataError) -> Vec<String> {
    let mut spans = vec![e.declaration.expect("declaration span")];
    spans.extend(e.more_declarations.iter().copied());
    spans.dedup();
    spans
        .iter()
        .map(|s| model[s.range()].trim_end_matches(';').to_string())
        .collect()
}

#[test]
fn wrong_csv_file_lists_every_missing_column_and_the_file() {
    let e = bind_err(
        SCHOOLS,
        &[csv("credit.csv", "a01,a02,bad_risk\n1,6,0\n2,4,1\n")],
    );
    assert_eq!(e.kind, DataErrorKind::MissingVariable);
    assert_eq!(
        e.message,
        "3 data variables are not in credit.csv: `J`, `y` and `sigma`"
    );
    assert_eq!(
        e.notes,
        vec![
            "declared: `J` is `int<lower=0>`, inferred from the length of `y` once `y` is given; \
             `y` is `vector[J]`; `sigma` is `vector<lower=0>[J]`"
                .to_string(),
            "not used by the model: columns of credit.csv: `a01`, `a02`, `bad_risk`".to_string(),
        ]
    );
    assert_eq!(
        e.help.as_deref(),
        Some(
            "credit.csv has none of the model's data variables: pass this model's data file, or \
             give `y` and `sigma` as CSV columns or JSON keys"
        )
    );
    assert_eq!(
        labelled(SCHOOLS, &e),
        vec!["int<lower=0> J", "vector[J] y", "vector<lower=0>[J] sigma"]
    );
}

#[test]
fn wrong_json_file_lists_every_missing_key() {
    let e = bind_err(SCHOOLS, &[json("other.json", r#"{"N": 2, "x": [1, 2]}"#)]);
    assert_eq!(e.kind, DataErrorKind::MissingVariable);
    assert_eq!(
        e.message,
        "3 data variables are not in other.json: `J`, `y` and `sigma`"
    );
    assert_eq!(
        e.notes[1],
        "not used by the model: keys of other.json: `N`, `x`"
    );
    assert_eq!(
        e.help.as_deref(),
        Some(
            "other.json has none of the model's data variables: pass this model's data file, or \
             give `y` and `sigma` as CSV columns or JSON keys"
        )
    );
}

#[test]
fn only_the_missing_columns_are_listed_and_an_inferable_size_is_not() {
    // `y` is there, so `J` is inferred from its 3 rows; `sigma` and `tau` are missing.
    let model = "data {
  int<lower=0> J;
  vector[J] y;
  vector<lower=0>[J] sigma;
  real<lower=0> tau;
}
";
    let e = bind_err(model, &[csv("d.csv", "y,sd\n1,2\n3,4\n5,6\n")]);
    assert_eq!(
        e.message,
        "2 data variables are not in d.csv: `sigma` and `tau`"
    );
    assert_eq!(
        e.notes[0],
        "declared: `sigma` is `vector<lower=0>[J]`; `tau` is `real<lower=0>`"
    );
    // some of the model's variables are in the file: no "wrong file" hint
    assert_eq!(
        e.help.as_deref(),
        Some("give `sigma` and `tau` as CSV columns or JSON keys")
    );
    assert_eq!(
        labelled(model, &e),
        vec!["vector<lower=0>[J] sigma", "real<lower=0> tau"]
    );
}

#[test]
fn each_missing_variable_gets_its_own_suggestion() {
    let e = bind_err(SCHOOLS, &[csv("s.csv", "Y,sigmas,z\n1,2,0\n3,4,0\n")]);
    assert_eq!(
        e.message,
        "3 data variables are not in s.csv: `J`, `y` and `sigma`"
    );
    assert_eq!(
        e.help.as_deref(),
        Some("did you mean column `Y` for `y` and column `sigmas` for `sigma`?")
    );
    // a suggestion for some only: the others are named too
    let e = bind_err(SCHOOLS, &[csv("s.csv", "Y,z\n1,0\n3,0\n")]);
    assert_eq!(
        e.help.as_deref(),
        Some("did you mean column `Y` for `y`? Give `sigma` as a CSV column or JSON key")
    );
}

#[test]
fn several_files_are_all_named() {
    let e = bind_err(
        SCHOOLS,
        &[csv("a.csv", "u\n1\n"), json("b.json", r#"{"v": 1}"#)],
    );
    assert_eq!(
        e.message,
        "3 data variables are not in any data file (a.csv, b.json): `J`, `y` and `sigma`"
    );
    assert_eq!(
        e.notes[1],
        "not used by the model: columns of a.csv: `u`; keys of b.json: `v`"
    );
    assert_eq!(
        e.help.as_deref(),
        Some(
            "the data files have none of the model's data variables: pass this model's data \
             file, or give `y` and `sigma` as CSV columns or JSON keys"
        )
    );
}

#[test]
fn one_missing_column_keeps_its_own_message_and_a_size_is_still_inferred() {
    let e = bind_err(SCHOOLS, &[csv("y.csv", "y\n1\n2\n")]);
    assert_eq!(
        e.message,
        "`sigma` (declared `vector<lower=0>[J]`) is not in y.csv"
    );
    assert!(e.more_declarations.is_empty());
    let program = parse_program(SCHOOLS, 0).unwrap();
    let bound = bind(&program, &[csv("d.csv", "y,sigma\n1,2\n3,4\n")]).unwrap();
    assert_eq!(*bound.values["J"].values, vec![2.0]);
}

#[test]
fn rendered_error_labels_every_missing_declaration() {
    let mut sources = SourceMap::new();
    sources.add("model.bayes", SCHOOLS);
    let e = bind_err(SCHOOLS, &[csv("wrong.csv", "x\n1\n")]);
    let text = render_plain(&sources, &e.to_diagnostic());
    let expected = "\
error: 3 data variables are not in wrong.csv: `J`, `y` and `sigma`
  ┌─ model.bayes:2:3
  │
2 │   int<lower=0> J;
  │   --------------- declared here
3 │   vector[J] y;
  │   ------------ declared here
4 │   vector<lower=0>[J] sigma;
  │   ------------------------- declared here
  │
  = declared: `J` is `int<lower=0>`, inferred from the length of `y` once `y` is given; `y` is `vector[J]`; `sigma` is `vector<lower=0>[J]`
  = not used by the model: columns of wrong.csv: `x`
  = help: wrong.csv has none of the model's data variables: pass this model's data file, or give `y` and `sigma` as CSV columns or JSON keys

";
    assert_eq!(text, expected);
}
