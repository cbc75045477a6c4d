//! Golden tests of rendered data errors: each `tests/fixtures/data/golden/<case>.bayes` is bound
//! to `<case>.csv` and/or `<case>.json` (in that order), and the rendered error (no colour) must
//! equal `<case>.stderr`. Run with `BAYESC_BLESS=1` to write the current output after reviewing
//! it (STYLE.md habit 8).

use std::path::{Path, PathBuf};

use bayesc::data::{DataError, DataSource, bind, load_csv_str, load_json_str};
use bayesc::syntax::parse_program;
use bayesc::syntax::report::{ToDiagnostic, render_plain};
use bayesc::syntax::source::SourceMap;

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/data/golden")
}

/// Binds one case and renders its error; a case that binds without error is a failure.
fn render_case(model_path: &Path) -> String {
    let stem = model_path.file_stem().unwrap().to_str().unwrap();
    let model = std::fs::read_to_string(model_path).unwrap();
    let mut sources = SourceMap::new();
    let file = sources.add(format!("{stem}.bayes"), model.clone());
    let program = parse_program(&model, file).expect("golden models parse");
    let mut data: Vec<DataSource> = Vec::new();
    let mut error: Option<DataError> = None;
    for ext in ["csv", "json"] {
        let path = model_path.with_extension(ext);
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        // Shown by file name only, so that the expected output does not depend on the checkout.
        let name = format!("{stem}.{ext}");
        let loaded = if ext == "csv" {
            load_csv_str(&name, &text)
        } else {
            load_json_str(&name, &text)
        };
        match loaded {
            Ok(src) => data.push(src),
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    let error = match error {
        Some(e) => e,
        None => match bind(&program, &data) {
            Ok(_) => panic!("golden case `{stem}` binds without error"),
            Err(e) => e,
        },
    };
    render_plain(&sources, &error.to_diagnostic())
}

#[test]
fn rendered_data_errors_match_golden_files() {
    let bless = std::env::var_os("BAYESC_BLESS").is_some();
    let mut cases: Vec<PathBuf> = std::fs::read_dir(golden_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "bayes"))
        .collect();
    cases.sort();
    assert!(cases.len() >= 13, "golden cases missing: {}", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let actual = render_case(case);
        let expected_path = case.with_extension("stderr");
        if bless {
            std::fs::write(&expected_path, &actual).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
        if actual != expected {
            failures.push(format!(
                "{}:\n--- expected\n{expected}--- actual\n{actual}",
                case.display()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
