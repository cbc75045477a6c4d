//! Text → AST: the pest grammar (`grammar/bayes.pest`), the AST, spans and the rendering of
//! errors and warnings about the user's source.

pub mod ast;
pub mod report;
pub mod source;
pub mod span;

pub use span::{FileId, Span};
