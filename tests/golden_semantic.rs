//! Golden tests of semantic errors and warnings: every `tests/golden/semantic/<name>.bayes` is
//! parsed and checked, and its rendered errors then warnings (plain text, no colour) must equal
//! `<name>.stderr`. Run with `BLESS=1` to rewrite the expected files after reviewing the change
//! (STYLE.md habit 8).

mod common;

use std::fs;

use bayesc::semantics::check;
use bayesc::syntax::parser::parse_program;
use bayesc::syntax::report::{ToDiagnostic, render_plain};
use bayesc::syntax::source::SourceMap;

const DIR: &str = "tests/golden/semantic";

/// The rendered diagnostics of one model, as `bayesc check` would print them.
fn render(name: &str, text: &str) -> String {
    let mut sources = SourceMap::new();
    let file = sources.add(format!("{DIR}/{name}.bayes"), text.to_string());
    let program = match parse_program(text, file) {
        Ok(p) => p,
        Err(e) => return render_plain(&sources, &e.to_diagnostic()),
    };
    let out = check(&program);
    let mut rendered = String::new();
    for e in &out.errors {
        rendered.push_str(&render_plain(&sources, &e.to_diagnostic()));
    }
    for w in &out.warnings {
        rendered.push_str(&render_plain(&sources, &w.to_diagnostic()));
    }
    rendered
}

#[test]
fn golden_semantic() {
    common::check_golden_folder(DIR, 18, |path, name| {
        let text = fs::read_to_string(path).expect("golden model is readable");
        render(name, &text)
    });
}
