//! Syntax errors: pest's failures turned into hand-written messages (STYLE.md habit 6), plus
//! the removed-Stan-syntax and block-order errors found while building the AST.

mod phrases;
mod scan;
pub use phrases::*;
pub(crate) use scan::*;

pub use super::suggest::edit_distance;

use codespan_reporting::diagnostic::{Diagnostic, Label};
use pest::error::{Error as PestError, ErrorVariant, InputLocation};

use super::parser::Rule;
use super::report::ToDiagnostic;
use super::span::{FileId, Span};

/// The deepest nesting of `(`, `[` and `{` the parser accepts. pest and the Pratt parser
/// recurse once per level, so a limit keeps hostile input from overflowing the stack; real models
/// rarely nest more than ten levels.
pub const MAX_NESTING: usize = 100;

/// The most operators that may nest by recursion (`^`, `?`, prefix `!`, `-`, `+`) in one
/// statement; chains such as `- - - x` or `a^b^c^…` recurse once per operator.
pub const MAX_OPERATORS: usize = 1000;

/// `Err` with the first bracket that opens level `MAX_NESTING + 1`, or the operator that
/// exceeds [`MAX_OPERATORS`] in one statement, if any.
pub(crate) fn check_nesting(source: &str, file: FileId) -> Result<(), SyntaxError> {
    let scan = scan_trivia(source);
    let mut depth = 0usize;
    let mut operators = 0usize;
    for (i, c) in source.bytes().enumerate() {
        if scan.trivia[i] {
            continue;
        }
        match c {
            b';' => operators = 0,
            b'^' | b'?' | b'!' | b'-' | b'+' => {
                operators += 1;
                if operators > MAX_OPERATORS {
                    return Err(SyntaxError::TooManyOperators {
                        span: Span::new(file, i, i + 1),
                    });
                }
            }
            _ => {}
        }
        match c {
            b'{' | b'[' | b'(' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Err(SyntaxError::TooDeeplyNested {
                        span: Span::new(file, i, i + 1),
                    });
                }
            }
            b'}' | b']' | b')' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

/// Block names in their fixed order, as the user writes them.
pub const BLOCK_NAMES: [&str; 7] = [
    "functions",
    "data",
    "transformed data",
    "parameters",
    "transformed parameters",
    "model",
    "generated quantities",
];

/// A syntax error in a `.bayes` source, with the span of the offending text.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SyntaxError {
    /// The parser met a token it cannot use here. `expected` holds phrases from [`describe`].
    #[error("expected {}, found {found}", join_or(expected))]
    Unexpected {
        span: Span,
        expected: Vec<&'static str>,
        /// The offending token, quoted (`` `x` ``), or `end of file`.
        found: String,
        /// A `help:` line for a recognised mistake (a statement in `data`, `target = …`).
        help: Option<String>,
    },
    /// A statement or declaration is not closed by `;` before the next line's text.
    /// `span` is the end of the previous token; `next` is the text that follows when it is on
    /// a later line (labelled separately so the reader sees both lines).
    #[error("missing `;` at the end of this statement")]
    MissingSemicolon { span: Span, next: Option<Span> },
    /// A block header that is not one of the seven block names.
    #[error("unknown block `{name}`")]
    UnknownBlock {
        span: Span,
        name: String,
        /// The closest block name by edit distance, if close enough.
        suggestion: Option<&'static str>,
    },
    /// A block written after one that must follow it (`span` is the misplaced header).
    #[error("the `{after}` block must come after the `{block}` block")]
    BlockOutOfOrder {
        block: &'static str,
        span: Span,
        after: &'static str,
        after_span: Span,
    },
    /// The same block written twice.
    #[error("the `{block}` block appears twice")]
    DuplicateBlock {
        block: &'static str,
        span: Span,
        first: Span,
    },
    /// An opening `{`, `[` or `(` that is never closed; `span` is where the parser gave up.
    #[error("unclosed `{delimiter}`")]
    Unclosed {
        span: Span,
        open: Span,
        delimiter: char,
        /// The file ended before the bracket was closed (`span` is then the end of the last
        /// token).
        at_end: bool,
    },
    /// A top-level comparison inside `<...>`: its `>` ended the constraint early.
    /// `constraint` covers the text from `<` to the offending `>`.
    #[error("a comparison inside `<…>` must be written in parentheses")]
    ComparisonInBound { span: Span, constraint: Span },
    /// A `}`, `)` or `]` with no opening bracket before it.
    #[error("unmatched `{delimiter}`")]
    UnmatchedClose { span: Span, delimiter: char },
    /// A `/*` comment that is never closed by `*/`.
    #[error("unterminated comment")]
    UnterminatedComment { span: Span },
    /// A `"` string literal not closed on the same line.
    #[error("unterminated string")]
    UnterminatedString { span: Span },
    /// Brackets nested deeper than [`MAX_NESTING`]; `span` is the first bracket past the limit.
    #[error("brackets are nested too deeply")]
    TooDeeplyNested { span: Span },
    /// More than [`MAX_OPERATORS`] operators in one statement; `span` is the first one past
    /// the limit.
    #[error("this statement has too many operators")]
    TooManyOperators { span: Span },
    /// `x <- e;`, Stan's removed assignment operator.
    #[error("`<-` is no longer an assignment operator")]
    OldAssignment { span: Span },
    /// `increment_log_prob(e)` or `get_lp()`, Stan's removed log-density functions.
    #[error("`{word}` is old Stan syntax and no longer exists")]
    OldTargetSyntax { span: Span, word: String },
    /// `real x[N]`, Stan's removed array declaration; `rewrite` is the modern form.
    #[error("array sizes after the variable name are old Stan syntax")]
    OldArraySyntax { span: Span, rewrite: String },
    /// `real[]` in a function signature or `real[N] y` in a declaration, Stan's removed array
    /// types.
    #[error("`{}` is old Stan syntax for an array type", old_text(rewrite))]
    OldArrayType { span: Span, rewrite: String },
    /// `f(a ; b)`: a `;` between the arguments of a call that is closed later on the line.
    #[error("`;` cannot separate the arguments of a call")]
    SemicolonInCall { span: Span, open: Span },
    /// A reserved word where a variable name belongs.
    #[error("`{word}` is a reserved word and cannot be used as a name")]
    ReservedWord { span: Span, word: String },
    /// An integer literal above the largest `int` (2147483647: `int` is 32-bit, as in Stan).
    #[error("integer literal `{text}` is too large")]
    IntegerTooLarge { span: Span, text: String },
    /// A real literal too large in magnitude for a 64-bit float (`2e400`), which would
    /// otherwise be read as infinity.
    #[error("real literal `{text}` overflows a 64-bit float")]
    RealTooLarge { span: Span, text: String },
    /// A `<...>` constraint with a repeated or incompatible part.
    #[error("invalid constraint: {message}")]
    InvalidConstraint {
        span: Span,
        message: String,
        help: String,
    },
}

impl SyntaxError {
    /// The primary location of the error.
    pub fn span(&self) -> Span {
        match self {
            SyntaxError::Unexpected { span, .. }
            | SyntaxError::MissingSemicolon { span, .. }
            | SyntaxError::UnknownBlock { span, .. }
            | SyntaxError::BlockOutOfOrder { span, .. }
            | SyntaxError::DuplicateBlock { span, .. }
            | SyntaxError::Unclosed { span, .. }
            | SyntaxError::ComparisonInBound { span, .. }
            | SyntaxError::UnmatchedClose { span, .. }
            | SyntaxError::UnterminatedComment { span }
            | SyntaxError::UnterminatedString { span }
            | SyntaxError::TooDeeplyNested { span }
            | SyntaxError::TooManyOperators { span }
            | SyntaxError::OldAssignment { span }
            | SyntaxError::OldTargetSyntax { span, .. }
            | SyntaxError::OldArraySyntax { span, .. }
            | SyntaxError::OldArrayType { span, .. }
            | SyntaxError::SemicolonInCall { span, .. }
            | SyntaxError::ReservedWord { span, .. }
            | SyntaxError::IntegerTooLarge { span, .. }
            | SyntaxError::RealTooLarge { span, .. }
            | SyntaxError::InvalidConstraint { span, .. } => *span,
        }
    }

    /// Turns a pest failure into a syntax error, recognising the common mistakes listed on
    /// [`SyntaxError`]'s variants before falling back to "expected …, found …".
    pub(crate) fn from_pest(err: PestError<Rule>, source: &str, file: FileId) -> SyntaxError {
        let pos = match err.location {
            InputLocation::Pos(p) => p,
            InputLocation::Span((s, _)) => s,
        };
        let pos = pos.min(source.len());
        let positives = match &err.variant {
            ErrorVariant::ParsingError { positives, .. } => positives.clone(),
            ErrorVariant::CustomError { .. } => Vec::new(),
        };
        let scan = scan_trivia(source);
        let found_span = token_at(source, pos, file);
        let word = word_at(source, pos);
        let expects = |r: Rule| positives.contains(&r);

        // An unterminated `/*` comment: pest stops at its start.
        if scan.open_comment && source[pos..].starts_with("/*") {
            return SyntaxError::UnterminatedComment {
                span: Span::new(file, pos, pos + 2),
            };
        }
        // A string literal without its closing quote on the same line.
        if source[pos..].starts_with('"')
            && !source[pos + 1..]
                .split('\n')
                .next()
                .unwrap_or("")
                .contains('"')
        {
            return SyntaxError::UnterminatedString {
                span: Span::new(file, pos, pos + 1),
            };
        }

        // A block keyword where a statement or `}` was expected: the block above is unclosed.
        let at_eof = pos >= source.len();
        let block_word_here = matches!(
            word,
            "functions" | "data" | "transformed" | "parameters" | "model" | "generated"
        ) && next_nonblank_after_words(source, pos, &scan) == Some(b'{');
        if (at_eof || (block_word_here && expects(Rule::rbrace)))
            && let Some((open, delimiter)) = innermost_unclosed(source, pos, &scan)
        {
            // At the end of the file, point just after the last token rather than at an empty
            // last line.
            let end = previous_token_end(pos, &scan).unwrap_or(pos);
            return SyntaxError::Unclosed {
                span: if at_eof {
                    Span::new(file, end, end)
                } else {
                    found_span
                },
                open: Span::new(file, open, open + 1),
                delimiter,
                at_end: at_eof,
            };
        }

        // Words followed by `{` where a block was expected: an unknown block name.
        let expects_block = positives.iter().any(|r| {
            matches!(
                r,
                Rule::functions_block
                    | Rule::data_block
                    | Rule::tdata_block
                    | Rule::params_block
                    | Rule::tparams_block
                    | Rule::model_block
                    | Rule::gq_block
                    | Rule::functions_head
                    | Rule::tdata_head
                    | Rule::tparams_head
                    | Rule::model_head
                    | Rule::gq_head
                    | Rule::kw_functions
                    | Rule::kw_transformed
                    | Rule::kw_model
                    | Rule::kw_generated
                    // pest reports the outer rule when it failed where it started: the start.
                    | Rule::program
            )
        });
        if expects_block
            && !word.is_empty()
            && let Some((name, end)) = block_header_words(source, pos)
        {
            let suggestion = closest_block_name(&name);
            return SyntaxError::UnknownBlock {
                span: Span::new(file, pos, end),
                name,
                suggestion,
            };
        }
        // `transformed paramters {`: pest got past the first word of a two-word header.
        let expects_second_word = !positives.is_empty()
            && positives
                .iter()
                .all(|r| matches!(r, Rule::kw_data | Rule::kw_parameters | Rule::kw_quantities));
        if expects_second_word
            && let Some(prev_end) = previous_token_end(pos, &scan)
            && let Some(start) = word_start_before(source, prev_end)
            && let Some((name, end)) = block_header_words(source, start)
        {
            let suggestion = closest_block_name(&name);
            return SyntaxError::UnknownBlock {
                span: Span::new(file, start, end),
                name,
                suggestion,
            };
        }

        // A reserved word where a name was expected.
        // (Not at the start of a statement: there `else` or `in` is a misplaced keyword.)
        let statement_start = expects(Rule::kw_for) || expects(Rule::kw_while);
        if (expects(Rule::ident) || expects(Rule::decl_name))
            && !statement_start
            && is_reserved(word)
        {
            return SyntaxError::ReservedWord {
                span: found_span,
                word: word.to_string(),
            };
        }

        // `;` expected, and the offending text starts on a later line than the previous token
        // or closes the block.
        if expects(Rule::semi)
            && let Some(prev_end) = previous_token_end(pos, &scan)
            && (source[prev_end..pos].contains('\n') || source[pos..].starts_with('}'))
        {
            let later_line = source[prev_end..pos].contains('\n');
            return SyntaxError::MissingSemicolon {
                span: Span::new(file, prev_end, prev_end),
                next: later_line.then_some(found_span),
            };
        }

        let prev_char = previous_token_end(pos, &scan).map(|e| source.as_bytes()[e - 1]);
        let found_text = &source[found_span.start..found_span.end];

        // `atan2(2 ; 3)`: a `;` inside parentheses that close later on the same line (before
        // the next `;`, `{` or `}`) separates arguments, it does not end the statement.
        if found_text == ";"
            && expects(Rule::rparen)
            && let Some((open, '(')) = innermost_unclosed(source, pos, &scan)
            && source[pos + 1..]
                .split(['\n', ';', '{', '}'])
                .next()
                .is_some_and(|rest| rest.contains(')'))
        {
            return SyntaxError::SemicolonInCall {
                span: found_span,
                open: Span::new(file, open, open + 1),
            };
        }

        // `;`, `{`, `}` or `=` where a closing `)` or `]` was expected: the bracket is unclosed.
        if matches!(found_text, ";" | "}" | "{" | "=" | "")
            && let Some((open, delimiter)) = innermost_unclosed(source, pos, &scan)
            && ((delimiter == '(' && expects(Rule::rparen))
                || (delimiter == '[' && expects(Rule::rbracket)))
        {
            return SyntaxError::Unclosed {
                span: found_span,
                open: Span::new(file, open, open + 1),
                delimiter,
                at_end: false,
            };
        }

        // `real<lower=a > b> x;`: the bound's `>` closed the constraint early.
        if found_text == ">"
            && !expects(Rule::cexpr)
            && prev_char != Some(b'=')
            && let Some(open) = open_constraint_before(source, pos, &scan)
        {
            return SyntaxError::ComparisonInBound {
                span: found_span,
                constraint: Span::new(file, open, pos),
            };
        }

        // `real[] x` in a function signature (the pre-2.33 unsized array type), or `real[N] y`
        // in a declaration (sizes on a scalar type, never valid Stan).
        if found_text == "["
            && (expects(Rule::ident) || expects(Rule::decl_name))
            && let Some(prev_end) = previous_token_end(pos, &scan)
            && let Some(start) = word_start_before(source, prev_end)
            && matches!(
                &source[start..prev_end],
                "int" | "real" | "vector" | "row_vector" | "matrix"
            )
        {
            let close = source[pos..].find(']').map(|i| pos + i + 1);
            if let Some(close) = close
                && source[pos + 1..close - 1]
                    .chars()
                    .all(|c| c == ',' || c == ' ')
            {
                let commas: String = source[pos + 1..close - 1]
                    .chars()
                    .filter(|&c| c == ',')
                    .collect();
                return SyntaxError::OldArrayType {
                    span: Span::new(file, start, close),
                    rewrite: format!("array[{commas}] {}", &source[start..prev_end]),
                };
            }
            if let Some(close) = close
                && matches!(&source[start..prev_end], "int" | "real")
                && !source[pos + 1..close - 1].contains([';', '{', '}', '[', '\n'])
            {
                return SyntaxError::OldArrayType {
                    span: Span::new(file, start, close),
                    rewrite: format!(
                        "array[{}] {}",
                        source[pos + 1..close - 1].trim(),
                        &source[start..prev_end]
                    ),
                };
            }
        }

        // A closing bracket with nothing open.
        if matches!(found_text, "}" | ")" | "]") && innermost_unclosed(source, pos, &scan).is_none()
        {
            return SyntaxError::UnmatchedClose {
                span: found_span,
                delimiter: found_text
                    .chars()
                    .next()
                    .expect("found text is one bracket"),
            };
        }

        let mut expected = summarise(&positives, expects_block);
        if prev_char == Some(b'~') && expected == ["a name"] {
            expected = vec!["a distribution name such as `normal`"];
        }
        let found = if pos >= source.len() {
            "end of file".to_string()
        } else {
            format!("`{found_text}`")
        };
        let help = if expected.first() == Some(&"a declaration such as `real x;`")
            && !word.is_empty()
            && !is_reserved(word)
        {
            // A statement inside `data` or `parameters`, which hold declarations only.
            enclosing_block(source, pos, &scan).map(|block| {
                let homes = if block == "parameters" {
                    "put `~` statements in `model` and derived values in `transformed parameters`"
                } else {
                    "compute derived values in `transformed data`"
                };
                format!("the `{block}` block holds only declarations; {homes}")
            })
        } else if prev_char.is_some()
            && word_start_before(source, previous_token_end(pos, &scan).unwrap_or(0))
                .is_some_and(|st| source[st..].starts_with("target"))
            && expects(Rule::plus_assign)
        {
            Some("add to the log density with `target += …;`".to_string())
        } else {
            None
        };
        SyntaxError::Unexpected {
            span: found_span,
            expected,
            found,
            help,
        }
    }
}

impl ToDiagnostic for SyntaxError {
    fn to_diagnostic(&self) -> Diagnostic<FileId> {
        let primary =
            |span: Span, text: &str| Label::primary(span.file, span.range()).with_message(text);
        let secondary =
            |span: Span, text: &str| Label::secondary(span.file, span.range()).with_message(text);
        let d = Diagnostic::error().with_message(self.to_string());
        match self {
            SyntaxError::Unexpected {
                span,
                expected,
                help,
                ..
            } => d
                .with_labels(vec![primary(
                    *span,
                    &format!("expected {} here", join_or(expected)),
                )])
                .with_notes(help.iter().map(|h| format!("help: {h}")).collect()),
            SyntaxError::MissingSemicolon { span, next } => d
                .with_labels(
                    std::iter::once(primary(*span, "expected `;` here"))
                        .chain(next.map(|n| secondary(n, "`;` must come before this")))
                        .collect(),
                )
                .with_notes(vec![
                    "help: end every statement and declaration with `;`".to_string(),
                ]),
            SyntaxError::UnknownBlock {
                span, suggestion, ..
            } => {
                let d = d.with_labels(vec![primary(*span, "not a block name")]);
                let mut notes = Vec::new();
                if let Some(s) = suggestion {
                    notes.push(format!("help: did you mean `{s}`?"));
                }
                notes.push(format!(
                    "note: the blocks are, in this order: {}",
                    BLOCK_NAMES.join(", ")
                ));
                d.with_notes(notes)
            }
            SyntaxError::BlockOutOfOrder {
                block,
                span,
                after,
                after_span,
            } => d
                .with_labels(vec![
                    primary(*span, &format!("`{block}` is written here")),
                    secondary(*after_span, &format!("after `{after}` here")),
                ])
                .with_notes(vec![
                    format!("help: move the `{block}` block above the `{after}` block"),
                    format!(
                        "note: the blocks are, in this order: {}",
                        BLOCK_NAMES.join(", ")
                    ),
                ]),
            SyntaxError::DuplicateBlock { span, first, block } => d
                .with_labels(vec![
                    primary(*span, "written again here"),
                    secondary(*first, "first written here"),
                ])
                .with_notes(vec![format!(
                    "help: merge the two `{block}` blocks into one"
                )]),
            SyntaxError::Unclosed {
                span,
                open,
                delimiter,
                at_end,
            } => {
                let close = match delimiter {
                    '{' => '}',
                    '[' => ']',
                    _ => ')',
                };
                d.with_labels(vec![
                    primary(
                        *span,
                        &if *at_end {
                            format!("the file ends here, expected `{close}`")
                        } else {
                            format!("expected `{close}` before this")
                        },
                    ),
                    secondary(*open, "opened here"),
                ])
                .with_notes(vec![format!(
                    "help: add `{close}` to close the `{delimiter}` that is opened here"
                )])
            }
            SyntaxError::ComparisonInBound { span, constraint } => d
                .with_labels(vec![
                    primary(*span, "this `>` is read as the end of the constraint"),
                    secondary(
                        Span::new(constraint.file, constraint.start, constraint.start + 1),
                        "the constraint starts here",
                    ),
                ])
                .with_notes(vec![
                    "help: put the bound in parentheses, for example `<lower=(a > b ? a : b)>`"
                        .to_string(),
                ]),
            SyntaxError::UnmatchedClose { span, delimiter } => d
                .with_labels(vec![primary(*span, "nothing is open here")])
                .with_notes(vec![format!(
                    "help: remove this `{delimiter}`, or add the opening bracket it closes"
                )]),
            SyntaxError::UnterminatedComment { span } => d
                .with_labels(vec![primary(*span, "this comment is never closed")])
                .with_notes(vec!["help: end the comment with `*/`".to_string()]),
            SyntaxError::UnterminatedString { span } => d
                .with_labels(vec![primary(
                    *span,
                    "this string is not closed on its line",
                )])
                .with_notes(vec![
                    "help: end the string with `\"` on the same line".to_string(),
                ]),
            SyntaxError::TooDeeplyNested { span } => d
                .with_labels(vec![primary(
                    *span,
                    &format!("more than {MAX_NESTING} brackets are open here"),
                )])
                .with_notes(vec![
                    "help: split the expression into local variables".to_string(),
                ]),
            SyntaxError::TooManyOperators { span } => d
                .with_labels(vec![primary(
                    *span,
                    &format!("more than {MAX_OPERATORS} operators before this one"),
                )])
                .with_notes(vec![
                    "help: split the statement, using local variables for partial results"
                        .to_string(),
                ]),
            SyntaxError::OldAssignment { span } => d
                .with_labels(vec![primary(*span, "old Stan assignment")])
                .with_notes(vec!["help: write `=` instead of `<-`".to_string()]),
            SyntaxError::OldTargetSyntax { span, word } => {
                let help = if word == "get_lp" {
                    "help: write `target()` instead of `get_lp()`"
                } else {
                    "help: write `target += e;` instead of `increment_log_prob(e);`"
                };
                d.with_labels(vec![primary(*span, "removed from Stan in version 2.33")])
                    .with_notes(vec![help.to_string()])
            }
            SyntaxError::OldArraySyntax { span, rewrite } => d
                .with_labels(vec![primary(*span, "sizes written after the name")])
                .with_notes(vec![format!("help: write `{rewrite}`")]),
            SyntaxError::OldArrayType { span, rewrite } => d
                .with_labels(vec![primary(*span, "old array type")])
                .with_notes(vec![format!("help: write `{rewrite}`")]),
            SyntaxError::SemicolonInCall { span, open } => d
                .with_labels(vec![
                    primary(*span, "`;` inside the parentheses"),
                    secondary(*open, "the call's arguments start here"),
                ])
                .with_notes(vec![
                    "help: separate arguments with `,`, e.g. `atan2(y, x)`".to_string(),
                ]),
            SyntaxError::ReservedWord { span, word } => d
                .with_labels(vec![primary(*span, "reserved word")])
                .with_notes(vec![format!(
                    "help: choose another name, for example `{word}_`"
                )]),
            SyntaxError::IntegerTooLarge { span, .. } => d
                .with_labels(vec![primary(*span, "does not fit in an int (32-bit)")])
                .with_notes(vec![
                    "help: an int lies between -2147483648 and 2147483647, as in Stan; write a \
                     real such as `1e20` or `3000000000.0` for larger values"
                        .to_string(),
                ]),
            SyntaxError::RealTooLarge { span, .. } => d
                .with_labels(vec![primary(*span, "larger than the largest 64-bit float")])
                .with_notes(vec![
                    "help: the largest finite real is about 1.8e308; check the exponent, or \
                     write `positive_infinity()` if infinity is meant"
                        .to_string(),
                ]),
            SyntaxError::InvalidConstraint { span, help, .. } => d
                .with_labels(vec![primary(*span, "here")])
                .with_notes(vec![format!("help: {help}")]),
        }
    }
}
