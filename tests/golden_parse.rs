//! Golden tests for syntax errors: every `tests/golden/parse/<name>.bayes` must fail to parse,
//! and its rendered diagnostic (no colour) must equal `<name>.stderr`. Run with `BLESS=1` to
//! write the expected files after reviewing the new output (STYLE.md habit 8).

use std::fs;
use std::path::Path;

use bayesc::syntax::parse_program;
use bayesc::syntax::report::{ToDiagnostic, render_plain};
use bayesc::syntax::source::SourceMap;

#[test]
fn parse_errors_match_golden_files() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/parse");
    let bless = std::env::var_os("BLESS").is_some_and(|v| v == "1");
    let mut inputs: Vec<_> = fs::read_dir(&dir)
        .expect("tests/golden/parse exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "bayes"))
        .collect();
    inputs.sort();
    assert!(inputs.len() >= 12, "expected at least 12 golden inputs");
    let mut failures = Vec::new();
    for path in &inputs {
        let stem = path.file_stem().unwrap().to_string_lossy().to_string();
        let text = fs::read_to_string(path).expect("golden input is readable UTF-8");
        let mut sources = SourceMap::new();
        let file = sources.add(format!("tests/golden/parse/{stem}.bayes"), text.clone());
        let rendered = match parse_program(&text, file) {
            Ok(_) => {
                failures.push(format!("{stem}: parsed without error"));
                continue;
            }
            Err(e) => render_plain(&sources, &e.to_diagnostic()),
        };
        let expected_path = path.with_extension("stderr");
        if bless {
            fs::write(&expected_path, &rendered).expect("can write the expected output");
            continue;
        }
        match fs::read_to_string(&expected_path) {
            Ok(expected) if expected == rendered => {}
            Ok(expected) => failures.push(format!(
                "{stem}: output differs\n--- expected\n{expected}\n--- actual\n{rendered}"
            )),
            Err(_) => failures.push(format!(
                "{stem}: no {stem}.stderr (run with BLESS=1)\n--- actual\n{rendered}"
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
