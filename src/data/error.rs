//! The data phase's error type: every message names the file, row and column (or JSON key and
//! element), points at the model's `data` declaration when one is involved, and says how to fix it.

use codespan_reporting::diagnostic::{Diagnostic, Label};

use crate::syntax::report::ToDiagnostic;
use crate::syntax::{FileId, Span};

/// What went wrong, for callers and tests that dispatch on the kind rather than the wording
/// (STYLE.md habit 8: a reworded message must not hide a change of behaviour).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DataErrorKind {
    /// The file could not be read (missing, unreadable, or not UTF-8 text).
    Io,
    /// The file's extension is neither `.csv` nor `.json`.
    UnknownExtension,
    /// The CSV has no header row, repeats a column name, or cannot be tokenised.
    MalformedCsv,
    /// A CSV row has a different number of fields than the header.
    FieldCount,
    /// JSON syntax error (with serde's line and column), or the top level is not an object.
    MalformedJson,
    /// A JSON value is neither a number, one of the strings `"Infinity"`, `"-Infinity"`,
    /// `"NaN"`, nor a nested array of those.
    InvalidJsonValue,
    /// Nested JSON arrays of unequal lengths.
    Ragged,
    /// An empty, `NA`, `NaN`, `nan` or `.` cell in a CSV column that binds to a variable.
    MissingValue,
    /// A CSV cell that is not a number, in a column that binds to a variable.
    NotANumber,
    /// A CSV cell holding `inf` or `-inf`, in a column that binds to a variable.
    NotFinite,
    /// A number too large in magnitude for a 64-bit float (`2e400` in a CSV cell), in a column
    /// that binds to a variable.
    Overflow,
    /// A non-integral (or out of 32-bit range) value for an `int` variable.
    NotAnInteger,
    /// A declared data variable is in no source and cannot be inferred.
    MissingVariable,
    /// A variable is defined by two sources.
    Duplicate,
    /// A declared size disagrees with the data (length, number of rows or columns).
    SizeMismatch,
    /// The value's number of dimensions is not the declared one (e.g. a scalar from a CSV with
    /// several rows, or a vector given for a matrix).
    ShapeMismatch,
    /// A value is outside the declared `<lower=…, upper=…>` bounds.
    BoundViolation,
    /// A structured type's constraint is violated (simplex, ordered, covariance matrix, …).
    ConstraintViolation,
    /// A size or bound expression outside the small evaluator's language, or one that does not
    /// evaluate (division by zero, negative size, overflow, a name that is not bound data).
    UnsupportedExpression,
}

/// An error from loading a data file or binding it to the `data` block.
///
/// `message` is the whole sentence shown to the user (it names the file and the row and column,
/// or the JSON key and element). `declaration` is the span of the model's `data` declaration
/// the error concerns (a secondary label); `primary` is a span in the model that is itself wrong
/// (e.g. an unsupported size expression). `notes` add context; `help` says how to fix it.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct DataError {
    /// The kind of failure.
    pub kind: DataErrorKind,
    /// The full message, naming file, row and column (or key and index).
    pub message: String,
    /// A span in the model that is at fault, with its label text.
    pub primary: Option<(Span, String)>,
    /// The `data` declaration this error concerns, if any.
    pub declaration: Option<Span>,
    /// Further `data` declarations it concerns (e.g. every variable missing from the file),
    /// drawn as secondary labels like [`DataError::declaration`].
    pub more_declarations: Vec<Span>,
    /// Extra context (e.g. the columns that were not used).
    pub notes: Vec<String>,
    /// How to fix it, shown as `help: …`.
    pub help: Option<String>,
    /// Further errors found in the same binding that do not follow from this one (another
    /// variable missing, of the wrong size, out of its bounds), in declaration order; each is
    /// reported after this one ([`DataError::to_diagnostics`]). [X] session 21, tester
    /// finding: binding stopped at the first data error, so each further one cost a run.
    pub also: Vec<DataError>,
}

impl DataError {
    /// A new error of `kind` with the full `message` and no spans, notes or help.
    pub fn new(kind: DataErrorKind, message: impl Into<String>) -> Self {
        DataError {
            kind,
            message: message.into(),
            primary: None,
            declaration: None,
            more_declarations: Vec::new(),
            notes: Vec::new(),
            help: None,
            also: Vec::new(),
        }
    }

    /// This error and the further ones of [`DataError::also`], as diagnostics in that order.
    pub fn to_diagnostics(&self) -> Vec<Diagnostic<FileId>> {
        std::iter::once(self)
            .chain(&self.also)
            .map(|e| e.to_diagnostic())
            .collect()
    }

    /// The first of `errors` with the others as its [`DataError::also`]; `None` when empty.
    pub fn all(mut errors: Vec<DataError>) -> Option<DataError> {
        if errors.is_empty() {
            return None;
        }
        let mut first = errors.remove(0);
        first.also.extend(errors);
        Some(first)
    }

    /// Adds the span of the `data` declaration concerned (kept if one is already set).
    pub fn with_declaration(mut self, span: Span) -> Self {
        if self.declaration.is_none() {
            self.declaration = Some(span);
        }
        self
    }

    /// Adds further `data` declarations concerned, after [`DataError::declaration`].
    pub fn with_more_declarations(mut self, spans: impl IntoIterator<Item = Span>) -> Self {
        self.more_declarations.extend(spans);
        self
    }

    /// Sets the primary span (a place in the model that is at fault) and its label.
    pub fn with_primary(mut self, span: Span, label: impl Into<String>) -> Self {
        self.primary = Some((span, label.into()));
        self
    }

    /// Adds a note.
    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    /// Sets the help text (what to type or change).
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }
}

impl ToDiagnostic for DataError {
    fn to_diagnostic(&self) -> Diagnostic<FileId> {
        let mut labels = Vec::new();
        if let Some((span, label)) = &self.primary {
            labels.push(Label::primary(span.file, span.range()).with_message(label));
        }
        if let Some(span) = self.declaration {
            // A primary label at the same place would be drawn twice; keep only the primary one.
            let same = self.primary.as_ref().is_some_and(|(p, _)| *p == span);
            if !same {
                labels
                    .push(Label::secondary(span.file, span.range()).with_message("declared here"));
            }
        }
        for span in &self.more_declarations {
            if Some(*span) != self.declaration {
                labels
                    .push(Label::secondary(span.file, span.range()).with_message("declared here"));
            }
        }
        let mut notes = self.notes.clone();
        if let Some(help) = &self.help {
            notes.push(format!("help: {help}"));
        }
        Diagnostic::error()
            .with_message(&self.message)
            .with_labels(labels)
            .with_notes(notes)
    }
}

/// `n` followed by `noun`, with an `s` unless `n` is 1 ("1 element", "4 elements").
pub(crate) fn count(n: usize, noun: &str) -> String {
    crate::words::counted(n, noun)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diagnostic_has_secondary_label_at_declaration_and_help_note() {
        let err = DataError::new(
            DataErrorKind::MissingVariable,
            "`y` is not in any data file",
        )
        .with_declaration(Span::new(0, 7, 20))
        .with_note("columns not used: `x`")
        .with_help("add a column `y`");
        let diag = err.to_diagnostic();
        assert_eq!(diag.message, "`y` is not in any data file");
        assert_eq!(diag.labels.len(), 1);
        assert_eq!(diag.labels[0].range, 7..20);
        assert_eq!(
            diag.labels[0].style,
            codespan_reporting::diagnostic::LabelStyle::Secondary
        );
        assert_eq!(
            diag.notes,
            vec![
                "columns not used: `x`".to_string(),
                "help: add a column `y`".to_string()
            ]
        );
    }
}
