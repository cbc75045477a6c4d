//! Data that used to bind wrongly without a word (issue 13, item 5): a blank line in a
//! one-column CSV, a header-only CSV, a duplicate JSON key, and integers above 2⁵³ in draws files.

use bayesc::data::{DataErrorKind, DataSource, bind, load_csv_str, load_json_str};
use bayesc::output::format_f64_roundtrip;
use bayesc::syntax::parse_program;

const MODEL: &str =
    "data { int N; vector[N] y; } parameters { real mu; } model { y ~ normal(mu, 1); }";

fn bind_csv(text: &str) -> Result<bayesc::data::BoundData, bayesc::data::DataError> {
    let program = parse_program(MODEL, 0).expect("test model parses");
    let source = load_csv_str("obs.csv", text)?;
    bind(&program, &[source])
}

#[test]
fn a_blank_line_in_a_one_column_csv_is_a_missing_row_not_a_dropped_one() {
    // six observations, the third left blank: binding must fail on row 3, not infer N = 5
    let e = bind_csv("y\n1.5\n2.0\n\n0.7\n-0.3\n1.1\n").expect_err("a blank row must not bind");
    assert_eq!(e.kind, DataErrorKind::MissingValue, "{}", e.message);
    assert!(
        e.message.contains("obs.csv") && e.message.contains("row 3"),
        "message must name the file and the row: {}",
        e.message
    );
    // two blank lines in a row are two missing rows; the row numbers follow the file
    let e = bind_csv("y\n1.5\n\n\n0.7\n").expect_err("blank rows must not bind");
    assert!(e.message.contains("row 2"), "{}", e.message);
    // trailing blank lines are not rows: five values give N = 5
    let b = bind_csv("y\n1\n2\n3\n4\n5\n\n\n").expect("trailing blank lines are fine");
    assert_eq!(*b.values["N"].values, vec![5.0]);
    assert_eq!(*b.values["y"].values, vec![1.0, 2.0, 3.0, 4.0, 5.0]);
}

#[test]
fn a_header_only_csv_is_refused_instead_of_fitting_the_prior() {
    for text in ["y\n", "y", "y\n\n\n", "a,b\n"] {
        let e = load_csv_str("obs.csv", text).expect_err("a CSV without rows must be refused");
        assert_eq!(e.kind, DataErrorKind::MalformedCsv);
        assert!(
            e.message.contains("obs.csv") && e.message.contains("no data rows"),
            "{}",
            e.message
        );
    }
}

#[test]
fn a_duplicate_json_key_is_an_error_naming_the_key() {
    let e = load_json_str("d.json", r#"{"N": 2, "y": [1, 2], "N": 3}"#)
        .expect_err("a repeated key must be refused");
    assert_eq!(e.kind, DataErrorKind::MalformedJson);
    assert!(
        e.message.contains("d.json") && e.message.contains("`N`"),
        "{}",
        e.message
    );
    // keys repeated only inside different nested positions are not top-level duplicates; equal
    // values in different keys are fine
    let ok = load_json_str("d.json", r#"{"N": 2, "y": [1, 2], "M": 2}"#).expect("distinct keys");
    assert!(matches!(ok, DataSource::Json(_)));
}

#[test]
fn integers_above_two_to_the_53_are_written_in_plain_digits() {
    for k in [53u32, 54, 60, 62] {
        let x = 2f64.powi(k as i32) + 2f64.powi(k as i32 - 52);
        let s = format_f64_roundtrip(x);
        assert!(!s.contains('e'), "{s}");
        assert_eq!(s.parse::<u64>().expect("integer digits"), x as u64);
    }
    assert_eq!(
        format_f64_roundtrip(9_007_199_254_740_994.0),
        "9007199254740994"
    );
    assert_eq!(format_f64_roundtrip(-1e16), "-10000000000000000");
    // non-integral and huge values keep the round-trip scientific form
    assert_eq!(format_f64_roundtrip(1e300), "1e300");
    assert_eq!(format_f64_roundtrip(1.5e-7), "1.5e-7");
}

/// A JSON document in a file named `.csv` is named as JSON (a tester got "the file has a
/// header ({"N": 3, ...}) but no data rows ... add the data rows below the header").
#[test]
fn json_in_a_csv_file_is_named_as_json() {
    for text in [
        "{\"N\": 3, \"y\": [1, 2, 3]}\n",
        "{\n  \"N\": 3,\n  \"y\": [1, 2, 3]\n}\n",
        "[1, 2]\n",
    ] {
        let e = load_csv_str("d.csv", text).expect_err("JSON is not CSV");
        assert_eq!(e.kind, DataErrorKind::MalformedCsv);
        assert!(
            e.message.contains("d.csv line 1") && e.message.contains("looks like JSON"),
            "{}",
            e.message
        );
    }
}

fn bind_text(
    model: &str,
    name: &str,
    text: &str,
) -> Result<bayesc::data::BoundData, bayesc::data::DataError> {
    let program = parse_program(model, 0).expect("test model parses");
    let source = if name.ends_with(".json") {
        load_json_str(name, text)?
    } else {
        load_csv_str(name, text)?
    };
    bind(&program, &[source])
}

/// CSV and JSON agree on infinities (fresh-user finding: `inf` in a one-row CSV was refused for
/// `real<lower=0> U;` while JSON's "Infinity" bound): every spelling binds to a scalar, and the
/// declaration's bounds, its `int` type and a column of observations still refuse them, naming
/// the file, row and column.
#[test]
fn csv_infinities_bind_to_scalars_as_json_ones_do() {
    const BOUND: &str =
        "data { real<lower=0> U; } parameters { real mu; } model { mu ~ normal(0, 1); }";
    for v in ["inf", "Inf", "+inf", "Infinity", "INFINITY"] {
        let b = bind_text(BOUND, "u.csv", &format!("U\n{v}\n"))
            .unwrap_or_else(|e| panic!("{v}: {}", e.message));
        assert_eq!(*b.values["U"].values, vec![f64::INFINITY], "{v}");
    }
    let b = bind_text(BOUND, "u.json", r#"{"U": "Infinity"}"#).unwrap();
    assert_eq!(*b.values["U"].values, vec![f64::INFINITY]);
    // -inf is below the bound in both formats; the CSV error names file, row and column
    for v in ["-inf", "-Infinity"] {
        let e = bind_text(BOUND, "u.csv", &format!("U\n{v}\n")).expect_err("below the bound");
        assert!(
            e.message
                .starts_with("u.csv row 1 (line 2), column `U`: -inf is below the lower bound 0"),
            "{}",
            e.message
        );
    }
    assert!(bind_text(BOUND, "u.json", r#"{"U": "-Infinity"}"#).is_err());
    // an int cannot be infinite
    let int = "data { int K; } parameters { real mu; } model { mu ~ normal(0, 1); }";
    let e = bind_text(int, "k.csv", "K\ninf\n").expect_err("an int is finite");
    assert_eq!(e.kind, DataErrorKind::NotAnInteger, "{}", e.message);
    // observations stay finite, as in JSON
    let e = bind_csv("y\n1\ninf\n").expect_err("an infinite observation");
    assert_eq!(e.kind, DataErrorKind::NotFinite);
    assert!(
        e.message.starts_with("obs.csv row 2 (line 3), column `y`"),
        "{}",
        e.message
    );
    // an overflowing number is still a typo, not an infinity
    let e = bind_text(BOUND, "u.csv", "U\n2e400\n").expect_err("overflow");
    assert_eq!(e.kind, DataErrorKind::Overflow, "{}", e.message);
}

/// `#` comment lines (CmdStan's CSV files carry them) are skipped above the header and between
/// rows, and do not shift the row numbers or the lines messages name (fresh-user finding: the
/// first comment line became the header).
#[test]
fn comment_lines_in_a_csv_are_skipped() {
    let b = bind_csv("# from a CmdStan run\n# another\ny\n1.5\n# a note\n2.5\n").unwrap();
    assert_eq!(*b.values["N"].values, vec![2.0]);
    assert_eq!(*b.values["y"].values, vec![1.5, 2.5]);
    let e = bind_csv("# note\ny\n1.5\n# note\nx\n").expect_err("not a number");
    assert!(
        e.message.starts_with("obs.csv row 2 (line 5), column `y`"),
        "{}",
        e.message
    );
    // a comment line in a one-column file is not a blank (missing) row
    let e = bind_csv("y\n1.5\n# note\n\n2\n").expect_err("the blank line is a missing row");
    assert!(
        e.message.starts_with("obs.csv row 2 (line 4)"),
        "{}",
        e.message
    );
}
