//! The pipeline as a library — parse → check → bind data → compile — shared by the CLI, the
//! REPL and the tests, so that all three take exactly the same path (STYLE.md §4, "a thin binary").

use std::path::{Path, PathBuf};

use codespan_reporting::diagnostic::Diagnostic;

use crate::data::{self, DataSource};
use crate::graph::Model;
use crate::semantics;
use crate::syntax::ast::Program;
use crate::syntax::parser;
use crate::syntax::report::ToDiagnostic;
use crate::syntax::source::SourceMap;
use crate::syntax::span::FileId;

/// A rendered-ready message about the user's model or data (error, warning or note).
pub type Report = Diagnostic<FileId>;

/// Why a pipeline step failed.
#[derive(Debug)]
pub enum Failure {
    /// Errors about the model or the data, as diagnostics (render them with the `SourceMap`).
    Reported(Vec<Report>),
    /// A file could not be read: the message names the path and the reason.
    Io(String),
}

impl Failure {
    /// The failure as diagnostics (an I/O failure becomes a single error without a span).
    pub fn into_reports(self) -> Vec<Report> {
        match self {
            Failure::Reported(r) => r,
            Failure::Io(msg) => vec![Diagnostic::error().with_message(msg)],
        }
    }
}

/// A parsed program that passed the semantic checks, with its warnings.
#[derive(Debug, Clone)]
pub struct Checked {
    /// The program's AST.
    pub program: Program,
    /// The id of its source in the `SourceMap`.
    pub file: FileId,
    /// Warnings from the semantic checks (pedantic-mode style), to show the user.
    pub warnings: Vec<Report>,
}

/// Parses and checks `text`, registering it in `sources` under `name` (a path or `<repl>`).
///
/// Errors: the syntax error, or every semantic error, as diagnostics.
pub fn check_source(sources: &mut SourceMap, name: &str, text: &str) -> Result<Checked, Failure> {
    let file = sources.add(name, text);
    let program = parser::parse_program(text, file)
        .map_err(|e| Failure::Reported(vec![e.to_diagnostic()]))?;
    let out = semantics::check(&program);
    if !out.errors.is_empty() {
        return Err(Failure::Reported(
            out.errors.iter().map(|e| e.to_diagnostic()).collect(),
        ));
    }
    let warnings = out.warnings.iter().map(|w| w.to_diagnostic()).collect();
    Ok(Checked {
        program,
        file,
        warnings,
    })
}

/// Reads the model file at `path`, then [`check_source`].
///
/// Errors: the file cannot be read (named with its path), or the checks fail.
pub fn check_file(sources: &mut SourceMap, path: &Path) -> Result<Checked, Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::Io(format!("cannot read model file `{}`: {e}", path.display())))?;
    check_source(sources, &path.display().to_string(), &text)
}

/// Loads every data file (CSV or Stan JSON, by extension).
///
/// Errors: the first file that cannot be read or parsed, with file, row and column.
pub fn load_data(paths: &[PathBuf]) -> Result<Vec<DataSource>, Failure> {
    paths
        .iter()
        .map(|p| data::load(p).map_err(|e| Failure::Reported(vec![e.to_diagnostic()])))
        .collect()
}

/// Binds `sources` to the program's `data` block and compiles the log-joint graph (running
/// `transformed data` once).
///
/// Errors: data that does not fit the declarations (file, row, column named), or an error while
/// evaluating `transformed data` (with its span).
///
/// `files` gives runtime errors their location in the model ("model.bayes:14:3").
pub fn compile(
    checked: &Checked,
    files: &SourceMap,
    sources: &[DataSource],
) -> Result<Model, Failure> {
    let bound = data::bind(&checked.program, sources)
        .map_err(|e| Failure::Reported(vec![e.to_diagnostic()]))?;
    Model::new(&checked.program, &bound)
        .map(|m| m.with_sources(files))
        .map_err(|e| Failure::Reported(vec![e.to_diagnostic()]))
}
