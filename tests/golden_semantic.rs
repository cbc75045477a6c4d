//! Golden tests of semantic errors and warnings: every `tests/golden/semantic/<name>.bayes` is
//! parsed and checked, and its rendered errors then warnings (plain text, no colour) must equal
//! `<name>.stderr`. Run with `BLESS=1` to rewrite the expected files after reviewing the change
//! (STYLE.md habit 8).

use std::fs;
use std::path::Path;

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
    let bless = std::env::var_os("BLESS").is_some();
    let mut entries: Vec<_> = fs::read_dir(DIR)
        .expect("tests/golden/semantic exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "bayes"))
        .collect();
    entries.sort();
    assert!(
        entries.len() >= 18,
        "expected the golden models, found {}",
        entries.len()
    );
    let mut failures = Vec::new();
    for path in &entries {
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .expect("golden file names are UTF-8");
        let text = fs::read_to_string(path).expect("golden model is readable");
        let actual = render(name, &text);
        let expected_path = Path::new(DIR).join(format!("{name}.stderr"));
        if bless {
            fs::write(&expected_path, &actual).expect("can write the expected file");
            continue;
        }
        let expected = fs::read_to_string(&expected_path).unwrap_or_default();
        if actual != expected {
            failures.push(format!(
                "--- {name}: expected\n{expected}\n--- {name}: actual\n{actual}"
            ));
        }
        // A model named `bad_*` must produce at least one error; `ok_*` none.
        if name.starts_with("bad_") {
            assert!(actual.contains("error"), "{name} produced no error");
        } else if name.starts_with("ok_") {
            assert!(
                !actual.contains("error"),
                "{name} produced an error:\n{actual}"
            );
        }
    }
    assert!(
        failures.is_empty(),
        "{} golden file(s) differ (rerun with BLESS=1 after review):\n{}",
        failures.len(),
        failures.join("\n")
    );
}
