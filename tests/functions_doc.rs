//! `docs/functions.md` is generated from the function and distribution registries
//! (`bayesc::semantics::reference::functions_markdown`); this test fails when the two disagree.
//! Regenerate with `BLESS=1 cargo test --release --test functions_doc`.

mod common;

use bayesc::semantics::reference::{REGENERATE, functions_markdown};

#[test]
fn docs_functions_md_is_in_sync_with_the_registry() {
    let path = common::root().join("docs/functions.md");
    let expected = functions_markdown();
    if std::env::var_os("BLESS").is_some() {
        std::fs::write(&path, &expected).expect("docs/functions.md is writable");
        return;
    }
    let found = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        found == expected,
        "docs/functions.md is out of date with the registry; regenerate it with `{REGENERATE}`"
    );
    // Every built-in function and family appears.
    for b in bayesc::semantics::builtins::BUILTINS {
        assert!(
            found.contains(&format!("- `{}`:", b.name)),
            "{} missing",
            b.name
        );
    }
}
