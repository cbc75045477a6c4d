//! Golden tests of the separability errors of `--batch-size` (graph::separability): every
//! `tests/golden/minibatch/<name>.bayes` is parsed, checked and analysed with the observation
//! axis `N`; the rendered error (plain text), or the list of statement roles when the model is
//! separable, must equal `<name>.stderr`. `BLESS=1` rewrites the expected files.

mod common;

use std::fs;

use bayesc::graph::separability::analyse;
use bayesc::semantics::check;
use bayesc::syntax::parser::parse_program;
use bayesc::syntax::report::{ToDiagnostic, render_plain};
use bayesc::syntax::source::SourceMap;

const DIR: &str = "tests/golden/minibatch";

fn render(name: &str, text: &str) -> String {
    let mut sources = SourceMap::new();
    let file = sources.add(format!("{DIR}/{name}.bayes"), text.to_string());
    let program = parse_program(text, file).expect("golden models parse");
    let checked = check(&program);
    assert!(checked.errors.is_empty(), "{name}: semantic errors");
    match analyse(&program, "N") {
        Err(e) => render_plain(&sources, &e.to_diagnostic()),
        Ok(s) => format!(
            "separable over `{}`; sliced: {}; model statements: {:?}\n",
            s.axis,
            s.sliced.join(", "),
            s.model_terms
        ),
    }
}

#[test]
fn golden_minibatch() {
    common::check_golden_folder(DIR, 6, |path, name| {
        let text = fs::read_to_string(path).expect("golden model is readable");
        render(name, &text)
    });
}
