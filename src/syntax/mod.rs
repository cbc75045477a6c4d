//! Text → AST: the pest grammar (`grammar/bayes.pest`), the AST, spans and the rendering of
//! errors and warnings about the user's source.

pub mod ast;
pub mod error;
pub mod parser;
pub mod report;
pub mod source;
pub mod span;
pub mod suggest;

pub use error::SyntaxError;
pub use parser::{
    Unclosed, first_unclosed, input_is_complete, parse_expression, parse_program, parse_statements,
};
pub use span::{FileId, Span};
