//! Data loading and binding end to end: real data sets (labour CSV, eight schools JSON) bound to
//! parsed `data` blocks, and every user error with its message checked word for word.

use std::path::{Path, PathBuf};

use bayesc::data::{
    BoundData, DataError, DataErrorKind, DataSource, bind, load, load_csv_str, load_json_str,
};
use bayesc::syntax::ast::Program;
use bayesc::syntax::parse_program;
use bayesc::syntax::report::{ToDiagnostic, render_plain};
use bayesc::syntax::source::SourceMap;

mod common;

/// The labour data shipped with the example (the same file as `shared/data/labour.csv`).
const LABOUR_CSV: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/labour/labour.csv");

/// posteriordb's eight schools (non-centred) folder in `shared/validation`.
fn eight_schools() -> PathBuf {
    common::validation_dir().join("posteriordb/eight_schools-eight_schools_noncentered")
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/data")
        .join(name)
}

fn parse(source: &str) -> Program {
    match parse_program(source, 0) {
        Ok(p) => p,
        Err(e) => panic!("test model does not parse: {e:?}"),
    }
}

fn parse_file(path: &Path) -> Program {
    parse(&std::fs::read_to_string(path).expect("fixture exists"))
}

fn bind_err(model: &str, sources: &[DataSource]) -> DataError {
    match bind(&parse(model), sources) {
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

fn value<'a>(b: &'a BoundData, name: &str) -> &'a bayesc::data::DataValue {
    b.values
        .get(name)
        .unwrap_or_else(|| panic!("`{name}` not bound"))
}

/// The first 13 rows of labour.csv, so that a 14th row can be made wrong.
fn labour_head() -> String {
    let text = std::fs::read_to_string(LABOUR_CSV).expect("shared labour.csv exists");
    text.lines().take(14).map(|l| format!("{l}\n")).collect()
}

const LABOUR_ROW_14: &str = "1,0,2,43,0,0,0.8183690906,14.60000038\n";

#[test]
fn labour_csv_binds_with_n_inferred_from_rows() {
    let program = parse_file(&fixture("labour.bayes"));
    let src = load(Path::new(LABOUR_CSV)).unwrap();
    let b = bind(&program, &[src]).unwrap();
    assert_eq!(b.values.len(), 9);
    let n = value(&b, "N");
    assert_eq!(
        (n.dims.clone(), n.values.to_vec(), n.is_int),
        (vec![], vec![753.0], true)
    );
    let lfp = value(&b, "lfp");
    assert_eq!(lfp.dims, vec![753]);
    assert!(lfp.is_int);
    assert_eq!(lfp.values.iter().sum::<f64>(), 428.0);
    let age = value(&b, "age");
    assert!(!age.is_int);
    assert_eq!(age.values.iter().sum::<f64>(), 32031.0);
    assert_eq!(age.values[0], 32.0);
    let inc = value(&b, "inc");
    assert_eq!(inc.values[752], 28.36300087);
}

#[test]
fn eight_schools_json_binds_to_its_stan_data_block() {
    let dir = eight_schools();
    let dir = dir.as_path();
    let program = parse_file(&dir.join("model.stan"));
    let src = load(&dir.join("data.json")).unwrap();
    let b = bind(&program, &[src]).unwrap();
    assert_eq!(*value(&b, "J").values, vec![8.0]);
    assert!(value(&b, "J").is_int);
    let y = value(&b, "y");
    assert_eq!(y.dims, vec![8]);
    assert!(!y.is_int);
    assert_eq!(*y.values, vec![28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0]);
    assert_eq!(
        *value(&b, "sigma").values,
        vec![15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0]
    );
}

#[test]
fn matrix_columns_and_sizes_from_two_files() {
    let program = parse_file(&fixture("design.bayes"));
    let sources = [
        load(&fixture("design.csv")).unwrap(),
        load(&fixture("design.json")).unwrap(),
    ];
    let b = bind(&program, &sources).unwrap();
    assert_eq!(*value(&b, "N").values, vec![2.0]);
    assert_eq!(*value(&b, "K").values, vec![3.0]);
    let x = value(&b, "X");
    assert_eq!(x.dims, vec![2, 3]);
    // A matrix bound from CSV columns is held column-major (its columns appended whole): the
    // rows are (0.5, 1.0, 2.0) and (1.5, -1.0, 3.0).
    assert!(x.column_major);
    assert_eq!(*x.values, vec![0.5, 1.5, 1.0, -1.0, 2.0, 3.0]);
    let z = value(&b, "Z");
    assert_eq!(z.dims, vec![2, 2]);
    assert_eq!(*z.values, vec![10.0, 20.0, 11.0, 21.0]);
}

#[test]
fn structured_types_bind_and_are_checked() {
    let program = parse_file(&fixture("structured.bayes"));
    let b = bind(&program, &[load(&fixture("structured.json")).unwrap()]).unwrap();
    assert_eq!(value(&b, "Sigma").dims, vec![3, 3]);
    assert_eq!(value(&b, "L").values[3..6], [0.6, 0.8, 0.0]);
    assert_eq!(*value(&b, "big").values, vec![f64::INFINITY]);
    assert_eq!(value(&b, "ps").dims, vec![2, 3]);

    let text = std::fs::read_to_string(fixture("structured.json")).unwrap();
    let bad = text.replace("\"ps\": [[0.5, 0.5, 0]", "\"ps\": [[0.5, 0.4, 0]");
    let e = bind(&program, &[json("s.json", &bad)]).unwrap_err();
    assert_eq!(e.kind, DataErrorKind::ConstraintViolation);
    assert_eq!(
        e.message,
        "s.json, key `ps`: the elements of `ps[1]` sum to 0.9, but `ps` is declared \
         `array[2] simplex[K]` (they must sum to 1 within 1e-8)"
    );
    let bad = text.replace("\"cuts\": [-1, 0, 2.5]", "\"cuts\": [-1, 3, 2.5]");
    let e = bind(&program, &[json("s.json", &bad)]).unwrap_err();
    assert_eq!(
        e.message,
        "s.json, key `cuts`, element `cuts[3]`: 2.5 is not greater than the element before it \
         (3), but `cuts` is declared `ordered[K]` (strictly increasing)"
    );
    let bad = text.replace("[0, 0, 3]]", "[0, 0, -3]]");
    let e = bind(&program, &[json("s.json", &bad)]).unwrap_err();
    assert_eq!(
        e.message,
        "s.json, key `Sigma`: `Sigma` is not positive definite, but `Sigma` is declared \
         `cov_matrix[K]`"
    );
}

#[test]
fn missing_column_suggests_the_closest_name_and_lists_unused_columns() {
    let model = std::fs::read_to_string(fixture("labour.bayes"))
        .unwrap()
        .replace("lfp;", "lpf;");
    let e = bind_err(&model, &[load(Path::new(LABOUR_CSV)).unwrap()]);
    assert_eq!(e.kind, DataErrorKind::MissingVariable);
    assert_eq!(
        e.message,
        format!("`lpf` (declared `array[N] int<lower=0, upper=1>`) is not in {LABOUR_CSV}")
    );
    assert_eq!(e.help.as_deref(), Some("did you mean column `lfp`?"));
    assert_eq!(
        e.notes,
        vec![format!(
            "not used by the model: columns of {LABOUR_CSV}: `lfp`"
        )]
    );
    // The secondary label points at the declaration of `lpf` in the model.
    let decl = e.declaration.expect("declaration span");
    let written = model[decl.range()].trim_end_matches(';');
    assert_eq!(written, "array[N] int<lower=0, upper=1> lpf");
}

#[test]
fn size_that_cannot_be_inferred_is_reported() {
    // `y`, which would give `N`, is the one to be predicted, so that `N` alone is missing
    let program = parse("data { int<lower=0> N; array[N] real y; }");
    let e = bayesc::data::bind_unobserved(&program, &[json("d.json", r#"{"z": [1, 2]}"#)], "y")
        .unwrap_err();
    assert_eq!(e.kind, DataErrorKind::MissingVariable);
    assert_eq!(
        e.message,
        "`N` is not in d.json and cannot be inferred: no CSV column or JSON array is declared \
         with `N` as its first size"
    );
    // no "did you mean key `z`" for a one-letter name: every letter would change
    assert_eq!(
        e.help.as_deref(),
        Some(
            "add `N` to a data file (e.g. a JSON file {\"N\": 10}), or give a CSV column or JSON \
             array for a variable declared with `N` as its first size"
        )
    );
    let e = bind_err("data { real x; }", &[]);
    assert_eq!(e.notes, vec!["no data files were given".to_string()]);
    // a JSON array gives its length, as a CSV gives its rows
    let program = parse_program("data { int<lower=0> N; array[N] real y; }", 0).unwrap();
    let bound = bind(&program, &[json("d.json", r#"{"y": [1, 2, 5]}"#)]).unwrap();
    assert_eq!(*bound.values["N"].values, vec![3.0]);
}

#[test]
fn non_integer_value_for_int_column() {
    let text = labour_head() + &LABOUR_ROW_14.replacen('1', "0.5", 1);
    let program = parse_file(&fixture("labour.bayes"));
    let e = bind(&program, &[csv("labour.csv", &text)]).unwrap_err();
    assert_eq!(e.kind, DataErrorKind::NotAnInteger);
    assert_eq!(
        e.message,
        "labour.csv row 14 (line 15), column `lfp`: 0.5 is not an integer, but `lfp` is declared \
         `array[N] int<lower=0, upper=1>`"
    );
    // JSON: key and element.
    let e = bind_err(
        "data { int J; array[J] int n; }",
        &[json("d.json", r#"{"J": 3, "n": [1, 2, 2.5]}"#)],
    );
    assert_eq!(
        e.message,
        "d.json, key `n`, element `n[3]`: 2.5 is not an integer, but `n` is declared `array[J] int`"
    );
    // An integral value written as a real is accepted, and a real variable accepts ints.
    let b = bind(
        &parse("data { int J; real x; }"),
        &[json("d.json", r#"{"J": 3.0, "x": 2}"#)],
    )
    .unwrap();
    assert_eq!(*value(&b, "J").values, vec![3.0]);
    assert_eq!(*value(&b, "x").values, vec![2.0]);
}

#[test]
fn missing_cells_name_file_row_line_and_column() {
    let program = parse_file(&fixture("labour.bayes"));
    for (cell, shown) in [
        ("NA", "`NA`"),
        ("", "an empty cell"),
        ("NaN", "`NaN`"),
        ("nan", "`nan`"),
        (".", "`.`"),
    ] {
        let row = LABOUR_ROW_14.replacen("43", cell, 1);
        let e = bind(&program, &[csv("labour.csv", &(labour_head() + &row))]).unwrap_err();
        assert_eq!(e.kind, DataErrorKind::MissingValue, "{cell:?}");
        assert_eq!(
            e.message,
            format!(
                "labour.csv row 14 (line 15), column `age`: missing value ({shown}), but `age` \
                 needs a number in every row"
            )
        );
    }
    let row = LABOUR_ROW_14.replacen("43", "forty", 1);
    let e = bind(&program, &[csv("labour.csv", &(labour_head() + &row))]).unwrap_err();
    assert_eq!(e.kind, DataErrorKind::NotANumber);
    assert_eq!(
        e.message,
        "labour.csv row 14 (line 15), column `age`: `forty` is not a number, but the column binds \
         to `age`"
    );
}

#[test]
fn unused_text_columns_and_missing_cells_are_ignored() {
    let b = bind(
        &parse("data { int N; vector[N] y; }"),
        &[csv(
            "d.csv",
            "date,y,junk\n2020-01-01,1.5,NA\n2020-01-02,2.5,\n",
        )],
    )
    .unwrap();
    assert_eq!(*value(&b, "y").values, vec![1.5, 2.5]);
}

#[test]
fn wrong_number_of_fields_names_the_line() {
    let text = labour_head() + "1,0,2,43,0,0,0.8183690906\n";
    let e = load_csv_str("labour.csv", &text).unwrap_err();
    assert_eq!(e.kind, DataErrorKind::FieldCount);
    assert_eq!(
        e.message,
        "labour.csv line 15 (row 14): 7 fields, but the header has 8 columns"
    );
}

#[test]
fn bound_violation_names_value_and_bound() {
    let text = labour_head() + &LABOUR_ROW_14.replacen("43", "-3", 1);
    let program = parse_file(&fixture("labour.bayes"));
    let e = bind(&program, &[csv("labour.csv", &text)]).unwrap_err();
    assert_eq!(e.kind, DataErrorKind::BoundViolation);
    assert_eq!(
        e.message,
        "labour.csv row 14 (line 15), column `age`: -3 is below the lower bound 0 of `age` \
         (declared `vector<lower=0>[N]`)"
    );
    // Bounds may use earlier data and arithmetic; upper bounds are checked too.
    let e = bind_err(
        "data { real m; array[2] real<lower=-m, upper=m * 2> x; }",
        &[json("d.json", r#"{"m": 1.5, "x": [-1.5, 3.5]}"#)],
    );
    assert_eq!(
        e.message,
        "d.json, key `x`, element `x[2]`: 3.5 is above the upper bound 3 of `x` (declared \
         `array[2] real<lower=-m, upper=m * 2>`)"
    );
}

#[test]
fn explicit_size_disagreeing_with_rows_names_both() {
    let program = parse_file(&fixture("labour.bayes"));
    let sources = [
        load(Path::new(LABOUR_CSV)).unwrap(),
        json("sizes.json", r#"{"N": 700}"#),
    ];
    let e = bind(&program, &sources).unwrap_err();
    assert_eq!(e.kind, DataErrorKind::SizeMismatch);
    assert_eq!(
        e.message,
        format!(
            "`lfp` is declared `array[N] int<lower=0, upper=1>` with `N` = 700 (from sizes.json, \
             key `N`), but {LABOUR_CSV} has 753 rows (column `lfp`)"
        )
    );
    // JSON lengths against declared sizes.
    let e = bind_err(
        "data { int J; vector[J] y; }",
        &[json("d.json", r#"{"J": 8, "y": [1, 2, 3, 4, 5, 6, 7]}"#)],
    );
    assert_eq!(
        e.message,
        "d.json, key `y`: `y` has 7 elements, but it is declared `vector[J]` with `J` = 8 (from \
         d.json, key `J`)"
    );
    let e = bind_err(
        "data { int J; matrix[J, 2] X; }",
        &[json("d.json", r#"{"J": 2, "X": [1, 2]}"#)],
    );
    assert_eq!(e.kind, DataErrorKind::ShapeMismatch);
    assert_eq!(
        e.message,
        "d.json, key `X`: `X` is declared `matrix[J, 2]` (2 dimensions [2, 2]), but the value \
         has 1 dimension [2]"
    );
}

#[test]
fn scalar_from_csv_needs_exactly_one_row() {
    let model = "data { real s; }";
    let b = bind(&parse(model), &[csv("one.csv", "s\n2.5\n")]).unwrap();
    assert_eq!(*value(&b, "s").values, vec![2.5]);
    let e = bind_err(model, &[csv("two.csv", "s\n2.5\n3\n")]);
    assert_eq!(e.kind, DataErrorKind::ShapeMismatch);
    assert_eq!(
        e.message,
        "`s` is declared as the scalar `real`, but two.csv gives it as column `s` with 2 rows; a \
         CSV column binds to a one-dimensional variable, and to a scalar only when the file has \
         exactly one row"
    );
}

#[test]
fn incomplete_matrix_columns_are_reported() {
    let e = bind_err(
        "data { int N; matrix[N, 3] X; }",
        &[csv("m.csv", "X.1,X.3\n1,2\n")],
    );
    assert_eq!(e.kind, DataErrorKind::SizeMismatch);
    assert_eq!(
        e.message,
        "m.csv has the columns `X.1`, `X.3` for `X`, but `X` is declared `matrix[N, 3]` with 3 \
         columns, so it needs the columns `X.1` … `X.3`"
    );
}

#[test]
fn ragged_json_names_key_and_path() {
    let e = bind_err(
        "data { array[3, 4] real y; }",
        &[json("d.json", r#"{"y": [[1,2,3,4],[1,2,3,4],[1,2]]}"#)],
    );
    assert_eq!(e.kind, DataErrorKind::Ragged);
    assert_eq!(
        e.message,
        "d.json, key `y`: `y[3]` has 2 elements, expected 4"
    );
    // An unused ragged key is ignored.
    assert!(
        bind(
            &parse("data { real x; }"),
            &[json("d.json", r#"{"x": 1, "y": [[1], [1, 2]]}"#)]
        )
        .is_ok()
    );
}

#[test]
fn variable_in_two_files_names_both() {
    let e = bind_err(
        "data { int N; vector[N] y; }",
        &[
            csv("a.csv", "y\n1\n2\n"),
            json("b.json", r#"{"N": 2, "y": [1, 2]}"#),
        ],
    );
    assert_eq!(e.kind, DataErrorKind::Duplicate);
    assert_eq!(
        e.message,
        "`y` is defined twice: in a.csv (column `y`) and in b.json (key `y`)"
    );
}

#[test]
fn unknown_extension_lists_supported_formats() {
    let e = load(Path::new("data/labour.txt")).unwrap_err();
    assert_eq!(e.kind, DataErrorKind::UnknownExtension);
    assert_eq!(
        e.message,
        "data file `data/labour.txt` has the extension `.txt`; the supported data formats are \
         .csv and .json"
    );
    let e = load(Path::new("no_such_file.json")).unwrap_err();
    assert_eq!(e.kind, DataErrorKind::Io);
    assert!(
        e.message
            .starts_with("cannot read data file `no_such_file.json`: ")
    );
}

#[test]
fn malformed_json_reports_serde_line_and_column() {
    let e = load_json_str("d.json", "{\n  \"J\": 8,\n  \"y\": [1, 2\n}\n").unwrap_err();
    assert_eq!(e.kind, DataErrorKind::MalformedJson);
    assert_eq!(
        e.message,
        "d.json line 4, column 1: invalid JSON: expected `,` or `]`"
    );
}

#[test]
fn unsupported_size_expression_points_at_it() {
    let model = "data { int N; vector[N * size(N)] y; }";
    let e = bind_err(model, &[json("d.json", r#"{"N": 2, "y": [1, 2]}"#)]);
    assert_eq!(e.kind, DataErrorKind::UnsupportedExpression);
    let (span, _) = e.primary.clone().expect("primary span");
    assert_eq!(&model[span.range()], "size(N)");
    assert!(
        e.message
            .contains("only simple size expressions are supported in data declarations"),
        "{}",
        e.message
    );
}

#[test]
fn rendered_diagnostic_points_at_the_declaration() {
    let model = "data {\n  int N;\n  vector[N] y;\n}\n";
    let e = bind_err(model, &[json("d.json", r#"{"N": 2, "Y": [1, 2]}"#)]);
    let mut sources = SourceMap::new();
    sources.add("model.bayes", model);
    let text = render_plain(&sources, &e.to_diagnostic());
    let expected = "\
error: `y` (declared `vector[N]`) is not in d.json
  ┌─ model.bayes:3:3
  │
3 │   vector[N] y;
  │   ------------ declared here
  │
  = not used by the model: keys of d.json: `Y`
  = help: did you mean key `Y`?

";
    assert_eq!(text, expected);
}

/// A fixed-seed linear congruential generator (Knuth's MMIX constants), for reproducible garbage.
fn garbage(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed;
    (0..len)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 56) as u8
        })
        .collect()
}

#[test]
fn garbage_input_never_panics() {
    let program = parse_file(&fixture("labour.bayes"));
    let dir = tempfile::tempdir().unwrap();
    let alphabet = b",\n\"{}[]0123456789.-eNA \r:";
    for seed in 0..200u64 {
        let raw = garbage(seed, 1 + (seed as usize * 37) % 400);
        // Mostly structural characters, so that the readers get past their first byte.
        let structured: Vec<u8> = raw
            .iter()
            .map(|b| alphabet[*b as usize % alphabet.len()])
            .collect();
        for bytes in [&raw, &structured] {
            for ext in ["csv", "json"] {
                let path = dir.path().join(format!("g{seed}.{ext}"));
                std::fs::write(&path, bytes).unwrap();
                if let Ok(src) = load(&path) {
                    // No garbage file defines the labour columns.
                    assert!(bind(&program, &[src]).is_err());
                }
            }
            let text = String::from_utf8_lossy(bytes);
            let models = [
                "data { int N; vector[N] y; }",
                "data { array[2, 2] int y; }",
            ];
            for src in [load_csv_str("g.csv", &text), load_json_str("g.json", &text)]
                .into_iter()
                .flatten()
            {
                for m in models {
                    let _ = bind(&parse(m), std::slice::from_ref(&src));
                }
            }
        }
    }
    // Invalid UTF-8 is an error, not a panic.
    let path = dir.path().join("bad.csv");
    std::fs::write(&path, [b'a', b'\n', 0xff, 0xfe]).unwrap();
    let e = load(&path).unwrap_err();
    assert_eq!(e.kind, DataErrorKind::Io);
    assert!(
        e.message
            .ends_with("is not UTF-8 text (invalid byte at offset 2)")
    );
}

#[test]
fn inferred_size_must_agree_across_csv_files() {
    let e = bind_err(
        "data { int N; vector[N] a; vector[N] b; }",
        &[csv("a.csv", "a\n1\n2\n3\n"), csv("b.csv", "b\n1\n2\n")],
    );
    assert_eq!(e.kind, DataErrorKind::SizeMismatch);
    assert_eq!(
        e.message,
        "`b` is declared `vector[N]` with `N` = 3 (inferred from the 3 rows of a.csv, which gives \
         `a`), but b.csv has 2 rows (column `b`)"
    );
    assert!(
        e.help
            .unwrap()
            .contains("must have the same number of rows")
    );
}

#[test]
fn matrix_cell_errors_name_the_column_of_the_element() {
    let e = bind_err(
        "data { int N; matrix<upper=5>[N, 2] X; }",
        &[csv("m.csv", "X[1],X[2]\n1,2\n3,NA\n")],
    );
    assert_eq!(e.kind, DataErrorKind::MissingValue);
    assert!(
        e.message
            .starts_with("m.csv row 2 (line 3), column `X[2]`: missing value (`NA`)"),
        "{}",
        e.message
    );
    let e = bind_err(
        "data { int N; matrix<upper=5>[N, 2] X; }",
        &[csv("m.csv", "X[1],X[2]\n1,2\n6,4\n")],
    );
    assert_eq!(
        e.message,
        "m.csv row 2 (line 3), column `X[1]`: 6 is above the upper bound 5 of `X` (declared \
         `matrix<upper=5>[N, 2]`)"
    );
}

#[test]
fn absurd_declared_sizes_are_errors_not_overflows() {
    let e = bind_err(
        "data { array[2000000000, 2000000000, 2000000000] real y; }",
        &[json("d.json", r#"{"y": [[[1]]]}"#)],
    );
    assert_eq!(e.kind, DataErrorKind::SizeMismatch);
    let e = bind_err(
        "data { array[2000000000, 2000000000, 0] cov_matrix[2000000000] S; }",
        &[json("d.json", r#"{"S": [1]}"#)],
    );
    assert_eq!(e.kind, DataErrorKind::ShapeMismatch);
    // An empty array stands for any empty value.
    let b = bind(
        &parse("data { array[2000000000, 0] cov_matrix[2000000000] S; }"),
        &[json("d.json", r#"{"S": []}"#)],
    )
    .unwrap();
    assert!(b.values["S"].values.is_empty());
    let e = bind_err(
        "data { vector[2147483647 * 2] y; }",
        &[json("d.json", r#"{"y": [1]}"#)],
    );
    assert_eq!(e.kind, DataErrorKind::UnsupportedExpression);
    assert_eq!(
        e.message,
        "the size `2147483647 * 2` of `y` overflows the range of int (-2147483648 to \
         2147483647, 32-bit as in Stan)"
    );
}

#[test]
fn a_directory_or_a_missing_file_is_named_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let e = load(dir.path()).unwrap_err();
    assert_eq!(e.kind, DataErrorKind::Io);
    assert!(e.message.contains("is a directory"), "{}", e.message);
    let e = load(&dir.path().join("absent.csv")).unwrap_err();
    assert!(e.message.contains("cannot read"), "{}", e.message);
    let e = load(&dir.path().join("absent")).unwrap_err();
    assert!(e.message.contains("does not exist"), "{}", e.message);
}

#[test]
fn bound_of_a_column_major_matrix_names_its_row_and_column() {
    // X is bound column-major from X.1, X.2; the bad value is on data row 3 (line 4), in X.2.
    let e = bind_err(
        "data { int N; matrix<lower=0>[N, 2] X; }",
        &[csv(
            "x.csv",
            "X.1,X.2\n1.0,2.0\n3.0,4.0\n5.0,-6.0\n7.0,8.0\n",
        )],
    );
    let text = e.to_string();
    assert!(
        text.contains("-6") && text.contains("X.2") && text.contains("row 3"),
        "{text}"
    );
}

#[test]
fn outcome_outside_its_family_support_names_file_row_and_column() {
    // No declared bound on y: the `~` statement's family gives the support.
    let model = "data { int N; array[N] int y; vector[N] x; }\nparameters { real a; }\nmodel { a ~ normal(0, 1); y ~ poisson_log(a * x); }";
    let e = bind_err(model, &[csv("counts.csv", "y,x\n0,0.1\n3,0.2\n-1,0.3\n")]);
    let text = e.to_string();
    assert!(
        text.contains("counts.csv row 3")
            && text.contains("column `y`")
            && text.contains("-1")
            && text.contains("poisson_log")
            && text.contains("nonnegative integer"),
        "{text}"
    );
    // Inside a loop the statement's outcome is an element, not the variable: not checked here.
    let looped = "data { int N; array[N] int y; vector[N] x; }\nparameters { real a; }\nmodel { for (n in 1:N) y[n] ~ poisson_log(a * x[n]); }";
    let program = parse(looped);
    assert!(
        bind(
            &program,
            &[csv("counts.csv", "y,x\n0,0.1\n3,0.2\n-1,0.3\n")]
        )
        .is_ok()
    );
}
