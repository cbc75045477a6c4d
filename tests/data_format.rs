//! Data files that a fresh user got confusing messages for (session 15 tester): a CSV written
//! with `;` (a European spreadsheet export) or tabs as its delimiter, and a number too large for
//! a 64-bit float (`2e400`), which used to be read silently as `inf`; numbers written with a
//! decimal comma in a comma-separated file (session 16).

use bayesc::data::{DataErrorKind, bind, load_csv_str, load_json_str};
use bayesc::syntax::parse_program;

const MODEL: &str =
    "data { int N; vector[N] y; } parameters { real mu; } model { y ~ normal(mu, 1); }";

#[test]
fn a_semicolon_delimited_csv_is_named_as_such_with_the_fix() {
    // with a decimal comma, as a European export writes it, and without
    for text in ["N;y\n3;1,5\n3;2,5\n", "N;y\n3;1.5\n3;2.5\n"] {
        let e = load_csv_str("obs.csv", text).expect_err("`;` is not the delimiter");
        assert_eq!(e.kind, DataErrorKind::MalformedCsv);
        assert_eq!(
            e.message,
            "obs.csv line 1: the file seems to use `;` as its delimiter, but bayesc reads \
             comma-separated CSV (the header is read as one column named `N;y`)"
        );
        assert_eq!(
            e.notes,
            vec!["split at `;`, the header would name the columns `N`, `y`".to_string()]
        );
        assert_eq!(
            e.help.as_deref(),
            Some(
                "convert the file to comma-separated values with `.` as the decimal point (in a \
                 spreadsheet, save as \"CSV (comma delimited)\"; or replace each `;` by `,` when \
                 no value is written with a decimal comma)"
            )
        );
    }
}

#[test]
fn decimal_commas_are_named_with_file_row_and_column() {
    // one column: each `1,5` splits into two fields
    let e = load_csv_str("obs.csv", "y\n1,5\n2,25\n3,0\n").expect_err("decimal commas");
    assert_eq!(e.kind, DataErrorKind::FieldCount);
    assert_eq!(
        e.message,
        "obs.csv line 2 (row 1), column `y`: the file seems to use decimal commas: `1,5` would \
         be 1.5 with a decimal comma, but bayesc reads `,` only as the delimiter (the row has 2 \
         fields, but the header has 1 column)"
    );
    assert_eq!(
        e.help.as_deref(),
        Some(
            "write the numbers with `.` as the decimal point (in a spreadsheet, set the decimal \
             separator to `.` before saving as CSV, or replace each decimal `,` by `.` in the \
             file); if the values are meant as separate columns, name each column in the header"
        )
    );
    // two columns, the first row whole numbers: the second row is named
    let e = load_csv_str("obs.csv", "y,x\n1,2\n-0,5,2,75\n").expect_err("decimal commas");
    assert!(
        e.message.starts_with(
            "obs.csv line 3 (row 2), column `y`: the file seems to use decimal commas: `-0,5` \
             would be -0.5"
        ),
        "{}",
        e.message
    );
    // a row with one field too many that is not a decimal comma keeps the field-count message
    let e = load_csv_str("obs.csv", "y\n1,a\n").expect_err("two fields");
    assert_eq!(
        e.message,
        "obs.csv line 2 (row 1): 2 fields, but the header has 1 column"
    );
    // quoted, `"1,5"` is one cell that is not a number: the help names the decimal comma
    let program = parse_program(MODEL, 0).expect("test model parses");
    let src = load_csv_str("obs.csv", "y\n\"1,5\"\n\"2,25\"\n").expect("one column");
    let e = bind(&program, &[src]).expect_err("`1,5` is not a number");
    assert_eq!(e.kind, DataErrorKind::NotANumber);
    assert_eq!(
        e.message,
        "obs.csv row 1 (line 2), column `y`: `1,5` is not a number, but the column binds to `y`"
    );
    assert_eq!(
        e.help.as_deref(),
        Some(
            "`1,5` seems to be 1.5 written with a decimal comma; write numbers with `.` as the \
             decimal point (in a spreadsheet, set the decimal separator to `.` before saving as \
             CSV, or replace each decimal `,` by `.`)"
        )
    );
}

#[test]
fn a_tab_delimited_csv_is_named_as_such() {
    let e = load_csv_str("obs.csv", "N\ty\n3\t1.5\n").expect_err("tabs are not the delimiter");
    assert_eq!(e.kind, DataErrorKind::MalformedCsv);
    assert_eq!(
        e.message,
        "obs.csv line 1: the file seems to use tabs as its delimiter, but bayesc reads \
         comma-separated CSV (the header is read as one column named `N\\ty`)"
    );
    assert_eq!(
        e.notes,
        vec!["split at tabs, the header would name the columns `N`, `y`".to_string()]
    );
}

#[test]
fn comma_separated_files_with_semicolons_in_text_still_load() {
    // a `;` inside a text column of a real CSV is not a delimiter
    let src = load_csv_str("obs.csv", "y,note\n1.5,a;b\n2.5,c\n").expect("a comma CSV");
    let program = parse_program(MODEL, 0).expect("test model parses");
    let b = bind(&program, &[src]).expect("y binds; the note column is unused");
    assert_eq!(*b.values["y"].values, vec![1.5, 2.5]);
    // a one-column file is still read
    let src = load_csv_str("obs.csv", "y\n1\n2\n").expect("one column");
    let b = bind(&program, &[src]).expect("y binds");
    assert_eq!(*b.values["N"].values, vec![2.0]);
}

#[test]
fn a_csv_number_overflowing_f64_names_file_row_and_column() {
    let program = parse_program(MODEL, 0).expect("test model parses");
    for (cell, shown) in [("2e400", "2e400"), ("-1.5E+309", "-1.5E+309")] {
        let src = load_csv_str("obs.csv", &format!("y\n1\n{cell}\n3\n")).expect("parses");
        let e = bind(&program, &[src]).expect_err("an overflowing value must not bind");
        assert_eq!(e.kind, DataErrorKind::Overflow, "{}", e.message);
        assert_eq!(
            e.message,
            format!(
                "obs.csv row 2 (line 3), column `y`: `{shown}` overflows a 64-bit float (the \
                 largest is about 1.8e308), but `y` needs finite values"
            )
        );
    }
    // `@missing` does not take an overflowing value for a missing one
    let missing = "data { int N; @missing vector[N] y; } parameters { real mu; } \
                   model { y ~ normal(mu, 1); }";
    let program = parse_program(missing, 0).expect("test model parses");
    let src = load_csv_str("obs.csv", "y\n1\nNA\n2e400\n").expect("parses");
    let e = bind(&program, &[src]).expect_err("an overflowing value is not missing");
    assert_eq!(e.kind, DataErrorKind::Overflow, "{}", e.message);
    assert!(
        e.message.starts_with("obs.csv row 3 (line 4)"),
        "{}",
        e.message
    );
    // an overflowing cell in a column the model does not use is no error
    let program = parse_program(MODEL, 0).expect("test model parses");
    let src = load_csv_str("obs.csv", "y,z\n1,2e400\n2,3\n").expect("parses");
    let b = bind(&program, &[src]).expect("z is not used");
    assert_eq!(*b.values["y"].values, vec![1.0, 2.0]);
    // `inf` written as such keeps its own message
    let src = load_csv_str("obs.csv", "y\n1\ninf\n").expect("parses");
    let e = bind(&program, &[src]).expect_err("inf is not finite");
    assert_eq!(e.kind, DataErrorKind::NotFinite);
    // an underflow is a 0, as in Stan
    let src = load_csv_str("obs.csv", "y\n1e-400\n").expect("parses");
    let b = bind(&program, &[src]).expect("1e-400 rounds to 0");
    assert_eq!(*b.values["y"].values, vec![0.0]);
}

#[test]
fn a_json_number_overflowing_f64_is_named_with_its_position() {
    let e = load_json_str("d.json", "{\"N\": 2,\n \"y\": [1, 2e400]}")
        .expect_err("serde refuses the number");
    assert_eq!(e.kind, DataErrorKind::Overflow);
    assert_eq!(
        e.message,
        "d.json line 2, column 15: `2e400` overflows a 64-bit float (the largest is about \
         1.8e308)"
    );
}
