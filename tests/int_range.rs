//! The language's `int` is 32-bit, as Stan's (and as `to_int` documents): int literals above
//! 2147483647 are syntax errors, and int arithmetic that leaves -2147483648..=2147483647 is an
//! error at the statement, naming the operation and its true value (a tester saw
//! `int n = 2147483647 + 1;` accepted as 2147483648).

use bayesc::data::{DataSource, json::parse_json};
use bayesc::pipeline;
use bayesc::syntax::report::render_plain;
use bayesc::syntax::source::SourceMap;

/// The rendered error of checking and compiling `text` (named `m.bayes`) with JSON data
/// `json`; panics when it compiles.
fn failure(text: &str, json: &str) -> String {
    let mut sources = SourceMap::new();
    let result = pipeline::check_source(&mut sources, "m.bayes", text).and_then(|checked| {
        let data = vec![DataSource::Json(
            parse_json("d.json", json).expect("test data is valid JSON"),
        )];
        pipeline::compile(&checked, &sources, &data)
    });
    match result {
        Ok(_) => panic!("expected an error for\n{text}"),
        Err(f) => f
            .into_reports()
            .iter()
            .map(|d| render_plain(&sources, d))
            .collect(),
    }
}

/// The message of the first diagnostic (its first line, after `error: `).
fn headline(rendered: &str) -> &str {
    rendered
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("error: "))
        .unwrap_or(rendered)
}

const TAIL: &str = "parameters { real mu; } model { mu ~ normal(0, 1); }";

const RANGE: &str = "outside the range of int (-2147483648 to 2147483647); int is 32-bit, as \
                     in Stan: to compute with larger values, convert to real first (e.g. \
                     `1.0 * n`)";

#[test]
fn int_addition_past_the_largest_int_is_an_error_at_the_statement() {
    let text = format!("transformed data {{\n  int n = 2147483647 + 1;\n}}\n{TAIL}\n");
    let e = failure(&text, "{}");
    assert_eq!(
        headline(&e),
        format!("integer overflow: `2147483647 + 1` is 2147483648, {RANGE}")
    );
    // arithmetic on literals is caught by the checks, before any data is read (session 16)
    assert!(
        e.contains(
            "2 │   int n = 2147483647 + 1;\n  │           ^^^^^^^^^^^^^^ overflows int at every \
             evaluation"
        ),
        "{e}"
    );
}

#[test]
fn products_and_reductions_of_data_ints_are_range_checked() {
    let data = r#"{"N": 2, "k": [2147483647, 3]}"#;
    let decls = "data { int N; array[N] int k; }\n";
    let cases = [
        (
            "int p = k[1] * k[2];",
            "integer overflow: `2147483647 * 3` is 6442450941",
        ),
        (
            "int p = prod(k);",
            "integer overflow: the prod of the int array is 6442450941",
        ),
        (
            "int p = sum(k);",
            "integer overflow: the sum of the int array is 2147483650",
        ),
        (
            "int p = -k[1] - 2;",
            "integer overflow: `-2147483647 - 2` is -2147483649",
        ),
        (
            "int p = -(-k[1] - 1);",
            "integer overflow: `-(-2147483648)` is 2147483648",
        ),
        (
            "int p = (-k[1] - 1) %/% -1;",
            "integer overflow: `-2147483648 %/% -1` is 2147483648",
        ),
        (
            "int p = abs(-k[1] - 1);",
            "integer overflow: `abs(-2147483648)` is 2147483648",
        ),
    ];
    for (stmt, want) in cases {
        let text = format!("{decls}transformed data {{ {stmt} }}\n{TAIL}\n");
        let e = failure(&text, data);
        assert_eq!(headline(&e), format!("{want}, {RANGE}"), "{stmt}");
    }
}

#[test]
fn the_extremes_of_int_are_still_ints() {
    // -2147483648 is reached by arithmetic (its literal would be 2147483648, too large)
    let text = format!(
        "transformed data {{ int lo = -2147483647 - 1; int hi = 2147483647; \
         int s = lo + hi; }}\n{TAIL}\n"
    );
    let mut sources = SourceMap::new();
    let checked = pipeline::check_source(&mut sources, "m.bayes", &text).expect("checks");
    pipeline::compile(&checked, &sources, &[]).expect("every value is an int");
}

#[test]
fn an_int_literal_above_the_largest_int_is_a_syntax_error() {
    let text = format!("transformed data {{ int n = 2147483648; }}\n{TAIL}\n");
    let e = failure(&text, "{}");
    assert_eq!(headline(&e), "integer literal `2147483648` is too large");
    assert!(e.contains("does not fit in an int (32-bit)"), "{e}");
    assert!(
        e.contains(
            "help: an int lies between -2147483648 and 2147483647, as in Stan; write a real \
             such as `1e20` or `3000000000.0` for larger values"
        ),
        "{e}"
    );
}

/// The `= help:` line of a rendered error.
fn help(rendered: &str) -> &str {
    rendered
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("= help: "))
        .unwrap_or_else(|| panic!("no help in\n{rendered}"))
}

#[test]
fn a_data_int_outside_32_bits_gets_advice_by_its_use() {
    let range = "is outside the range of `int` (-2147483648 to 2147483647: ints are 32-bit, as \
                 in Stan)";
    // a size (of data, or of a parameter only): it must be below 2^31; `real` is no fix
    let prior = "model { mu ~ normal(0, 1); b ~ normal(0, 1); }";
    for (decls, user) in [
        (
            "data { int N; vector[N] y; } parameters { real mu; real b; }",
            "y",
        ),
        ("data { int N; } parameters { real mu; vector[N] b; }", "b"),
        (
            "data { int N; array[N + 1] int y; } parameters { real mu; real b; }",
            "y",
        ),
    ] {
        let e = failure(
            &format!("{decls}\n{prior}\n"),
            r#"{"N": 2147483648, "y": [1]}"#,
        );
        assert_eq!(
            headline(&e),
            format!("d.json, key `N`: 2147483648 {range}, and `N` is declared `int`"),
            "{decls}"
        );
        assert_eq!(
            help(&e),
            format!(
                "`N` gives the size of `{user}`, and a size must be below 2^31 = 2147483648 (no \
                 container holds more elements); check the value in the data file"
            ),
            "{decls}"
        );
    }
    // an int that is no size may be declared real
    let e = failure(
        &format!("data {{ int k; }}\n{TAIL}\n"),
        r#"{"k": -2147483649}"#,
    );
    assert_eq!(
        headline(&e),
        format!("d.json, key `k`: -2147483649 {range}, and `k` is declared `int`")
    );
    assert_eq!(
        help(&e),
        "declare `k` with `real` in place of `int` if values this large are intended (a real \
         holds whole numbers exactly up to 2^53)"
    );
    // the smallest int is an int
    let text = format!("data {{ int k; }}\n{TAIL}\n");
    let mut sources = SourceMap::new();
    let checked = pipeline::check_source(&mut sources, "m.bayes", &text).expect("checks");
    let data = vec![DataSource::Json(
        parse_json("d.json", r#"{"k": -2147483648}"#).expect("valid JSON"),
    )];
    pipeline::compile(&checked, &sources, &data).expect("-2147483648 is an int");
}
