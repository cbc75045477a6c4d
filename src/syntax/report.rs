//! Rendering of errors and warnings about the user's source with codespan-reporting.
//!
//! Each phase (syntax, semantics, data, runtime) keeps its own error type next to its code and
//! implements [`ToDiagnostic`]; only the rendering lives here (STYLE.md §2, habit 5).

use codespan_reporting::diagnostic::Diagnostic;
use codespan_reporting::term::termcolor::{ColorChoice, StandardStream};
use codespan_reporting::term::{self, Config};

use super::source::SourceMap;
use super::span::FileId;

/// Anything that can be shown to the user as a codespan diagnostic (error, warning or note).
pub trait ToDiagnostic {
    /// Builds the diagnostic: a message, a primary label at the offending span, secondary labels
    /// for related places, and `help:` notes saying how to fix it.
    fn to_diagnostic(&self) -> Diagnostic<FileId>;
}

/// Renders `diag` as plain text without colour (for golden tests and the REPL's captured output).
pub fn render_plain(sources: &SourceMap, diag: &Diagnostic<FileId>) -> String {
    let mut out = String::new();
    let config = Config::default();
    // Rendering into a String cannot fail unless a span is outside its file, which is a bug in
    // the phase that built the diagnostic; fall back to the bare message rather than panic.
    match term::emit_to_string(&mut out, &config, sources.files(), diag) {
        Ok(()) => out,
        Err(_) => format!("{}: {}\n", severity_word(diag), diag.message),
    }
}

/// Writes `diag` to standard error, coloured when standard error is a terminal.
pub fn emit_stderr(sources: &SourceMap, diag: &Diagnostic<FileId>) {
    let choice = if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        ColorChoice::Auto
    } else {
        ColorChoice::Never
    };
    let writer = StandardStream::stderr(choice);
    let config = Config::default();
    let mut lock = writer.lock();
    if term::emit_to_write_style(&mut lock, &config, sources.files(), diag).is_err() {
        eprintln!("{}: {}", severity_word(diag), diag.message);
    }
}

fn severity_word(diag: &Diagnostic<FileId>) -> &'static str {
    use codespan_reporting::diagnostic::Severity;
    match diag.severity {
        Severity::Bug => "bug",
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Note => "note",
        Severity::Help => "help",
    }
}
