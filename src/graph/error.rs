//! Errors found while compiling a program against its data (before any evaluation of the log
//! density), with the span of the offending statement or expression.

use codespan_reporting::diagnostic::{Diagnostic, Label};

use crate::syntax::report::ToDiagnostic;
use crate::syntax::{FileId, Span};

/// A program that cannot be compiled into a log density, or data that does not fit it.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum GraphError {
    /// A language feature the graph does not implement yet.
    #[error("{what} is not supported yet")]
    Unsupported { what: String, span: Span },
    /// A call to a function that is neither built in nor a distribution.
    #[error("unknown function `{name}`")]
    UnknownFunction { name: String, span: Span },
    /// A name that is not declared in scope.
    #[error("unknown variable `{name}`")]
    UnknownVariable { name: String, span: Span },
    /// A `data` variable missing from the bound data.
    #[error("no value given for data variable `{name}`")]
    MissingData { name: String, span: Span },
    /// A data value whose shape or type does not fit its declaration.
    #[error("data variable `{name}`: {message}")]
    BadData {
        name: String,
        message: String,
        span: Span,
    },
    /// The data outcome of an unconditional `~` statement has a value outside the family's
    /// support (e.g. 2 for a Bernoulli outcome), found when the model was built.
    #[error("data variable `{name}`: {message}")]
    OutsideSupport {
        name: String,
        message: String,
        span: Span,
    },
    /// A failure while evaluating `transformed data` or a declared size. `origin` is the
    /// statement inside a user-defined function where it arose, if it arose in one.
    #[error("{message}")]
    Eval {
        message: String,
        span: Span,
        origin: Option<Span>,
    },
}

impl GraphError {
    /// The span the error points at.
    pub fn span(&self) -> Span {
        match self {
            GraphError::Unsupported { span, .. }
            | GraphError::UnknownFunction { span, .. }
            | GraphError::UnknownVariable { span, .. }
            | GraphError::MissingData { span, .. }
            | GraphError::BadData { span, .. }
            | GraphError::OutsideSupport { span, .. }
            | GraphError::Eval { span, .. } => *span,
        }
    }
}

impl ToDiagnostic for GraphError {
    fn to_diagnostic(&self) -> Diagnostic<FileId> {
        let span = self.span();
        let (label, note) = match self {
            GraphError::Unsupported { .. } => (
                "not supported by the graph compiler yet",
                Some("rewrite this part with the supported features"),
            ),
            GraphError::UnknownFunction { .. } => ("called here", None),
            GraphError::UnknownVariable { .. } => ("used here", None),
            GraphError::MissingData { .. } => (
                "declared here",
                Some("add a column or entry with this name to the data file"),
            ),
            GraphError::BadData { .. } => ("declared here", None),
            GraphError::OutsideSupport { .. } => (
                "the outcome of this statement",
                Some(
                    "check the data file's values for this variable, or choose a distribution whose support contains them",
                ),
            ),
            GraphError::Eval { .. } => ("while evaluating this", None),
        };
        let mut d = Diagnostic::error()
            .with_message(self.to_string())
            .with_labels(vec![
                Label::primary(span.file, span.range()).with_message(label),
            ]);
        if let GraphError::Eval {
            origin: Some(o), ..
        } = self
            && *o != span
        {
            d.labels.push(
                Label::secondary(o.file, o.range()).with_message("inside this function statement"),
            );
        }
        if let Some(n) = note {
            d = d.with_notes(vec![format!("help: {n}")]);
        }
        d
    }
}
