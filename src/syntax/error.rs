//! Syntax errors: pest's failures turned into hand-written messages (STYLE.md habit 6), plus
//! the removed-Stan-syntax and block-order errors found while building the AST.

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
    /// An integer literal outside the range of a 64-bit signed integer.
    #[error("integer literal `{text}` is too large")]
    IntegerTooLarge { span: Span, text: String },
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
                .with_labels(vec![primary(*span, "this string is not closed on its line")])
                .with_notes(vec!["help: end the string with `\"` on the same line".to_string()]),
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
                .with_labels(vec![primary(*span, "does not fit in a 64-bit integer")])
                .with_notes(vec![
                    "help: integers must lie between -9223372036854775808 and 9223372036854775807; write a real such as `1e20` for larger values".to_string(),
                ]),
            SyntaxError::InvalidConstraint { span, help, .. } => d
                .with_labels(vec![primary(*span, "here")])
                .with_notes(vec![format!("help: {help}")]),
        }
    }
}

/// The phrase shown to users for a grammar rule they were expected to write. Exhaustive, so
/// that a new grammar rule does not compile until it has a phrase (STYLE.md habit 6).
pub fn describe(rule: Rule) -> &'static str {
    match rule {
        Rule::EOI => "end of file",
        Rule::program => "a program",
        Rule::expression_only => "an expression",
        Rule::statements_only => "statements",
        Rule::include => "`include \"file\";`",
        Rule::functions_block
        | Rule::data_block
        | Rule::tdata_block
        | Rule::params_block
        | Rule::tparams_block
        | Rule::model_block
        | Rule::gq_block => "a block such as `model {`",
        Rule::functions_head => "`functions`",
        Rule::data_head => "`data`",
        Rule::tdata_head => "`transformed data`",
        Rule::params_head => "`parameters`",
        Rule::tparams_head => "`transformed parameters`",
        Rule::model_head => "`model`",
        Rule::gq_head => "`generated quantities`",
        Rule::function_def => "a function definition such as `real f(real x) { … }`",
        Rule::return_type => "a return type (`real`, `vector`, `void`, …)",
        Rule::unsized_type => "a type such as `real` or `array[] int`",
        Rule::array_commas => "`,` or `]`",
        Rule::unsized_base => "a type such as `real` or `vector`",
        Rule::fun_param => "a function argument such as `real x`",
        Rule::data_qualifier => "`data`",
        Rule::var_decl => "a declaration such as `real x;`",
        Rule::decl_name | Rule::reserved_name => "a variable name",
        Rule::old_dims => "`[`",
        Rule::assign_eq => "`=`",
        Rule::sized_type | Rule::sized_base => "a type such as `real` or `vector[N]`",
        Rule::array_sizes => "`array[…]`",
        Rule::int_type => "`int`",
        Rule::real_type => "`real`",
        Rule::vector_type => "`vector[…]`",
        Rule::row_vector_type => "`row_vector[…]`",
        Rule::matrix_type => "`matrix[…, …]`",
        Rule::simplex_type => "`simplex[…]`",
        Rule::ordered_type => "`ordered[…]`",
        Rule::positive_ordered_type => "`positive_ordered[…]`",
        Rule::cholesky_factor_corr_type => "`cholesky_factor_corr[…]`",
        Rule::cholesky_factor_cov_type => "`cholesky_factor_cov[…]`",
        Rule::cov_matrix_type => "`cov_matrix[…]`",
        Rule::corr_matrix_type => "`corr_matrix[…]`",
        Rule::constraint | Rule::langle => "a constraint such as `<lower=0>`",
        Rule::constraint_item | Rule::constraint_kw => {
            "`lower=`, `upper=`, `offset=` or `multiplier=`"
        }
        Rule::rangle => "`>`",
        Rule::block_stmt
        | Rule::for_stmt
        | Rule::while_stmt
        | Rule::if_stmt
        | Rule::break_stmt
        | Rule::continue_stmt
        | Rule::return_stmt
        | Rule::print_stmt
        | Rule::reject_stmt
        | Rule::target_stmt
        | Rule::assign_stmt
        | Rule::call_stmt
        | Rule::tilde_stmt => "a statement",
        Rule::print_arg => "a string or an expression",
        Rule::plus_assign => "`+=`",
        Rule::lvalue => "a variable name",
        Rule::assign_op => "an assignment such as `=` or `+=`",
        Rule::dist_name => "a distribution name such as `normal`",
        Rule::tilde => "`~`",
        Rule::truncation => "a truncation `T[lower, upper]`",
        Rule::trunc_lower | Rule::trunc_upper => "a truncation bound",
        Rule::expr | Rule::cexpr | Rule::index_upper => "an expression",
        Rule::op_not | Rule::op_neg | Rule::op_plus => "an expression",
        Rule::ternary_op
        | Rule::op_or
        | Rule::op_and
        | Rule::op_eq
        | Rule::op_ne
        | Rule::op_le
        | Rule::op_ge
        | Rule::op_lt
        | Rule::op_gt
        | Rule::op_add
        | Rule::op_sub
        | Rule::op_eltmul
        | Rule::op_eltdiv
        | Rule::op_eltpow
        | Rule::op_mul
        | Rule::op_div
        | Rule::op_intdiv
        | Rule::op_mod
        | Rule::op_ldiv
        | Rule::op_pow
        | Rule::op_transpose => "an operator such as `+`",
        Rule::index_group => "an index `[…]`",
        Rule::index_slot | Rule::index => "an index",
        Rule::range_colon => "`:`",
        Rule::paren_expr => "`(`",
        Rule::row_vector_lit => "a row vector `[…]`",
        Rule::array_lit => "an array `{…}`",
        Rule::call => "a function call",
        Rule::call_args => "function arguments",
        Rule::cond_bar => "`|`",
        Rule::target_call => "`target()`",
        Rule::int_lit => "an integer",
        Rule::real_lit => "a real number",
        Rule::string_lit => "a string in double quotes",
        Rule::string_body => "the text of a string",
        Rule::ident => "a name",
        Rule::semi => "`;`",
        Rule::comma => "`,`",
        Rule::lparen => "`(`",
        Rule::rparen => "`)`",
        Rule::lbracket => "`[`",
        Rule::rbracket => "`]`",
        Rule::lbrace => "`{`",
        Rule::rbrace => "`}`",
        Rule::kw_include => "`include`",
        Rule::kw_functions => "`functions`",
        Rule::kw_data => "`data`",
        Rule::kw_transformed => "`transformed`",
        Rule::kw_parameters => "`parameters`",
        Rule::kw_model => "`model`",
        Rule::kw_generated => "`generated`",
        Rule::kw_quantities => "`quantities`",
        Rule::kw_int => "`int`",
        Rule::kw_real => "`real`",
        Rule::kw_vector => "`vector`",
        Rule::kw_row_vector => "`row_vector`",
        Rule::kw_matrix => "`matrix`",
        Rule::kw_simplex => "`simplex`",
        Rule::kw_ordered => "`ordered`",
        Rule::kw_positive_ordered => "`positive_ordered`",
        Rule::kw_cholesky_factor_corr => "`cholesky_factor_corr`",
        Rule::kw_cholesky_factor_cov => "`cholesky_factor_cov`",
        Rule::kw_cov_matrix => "`cov_matrix`",
        Rule::kw_corr_matrix => "`corr_matrix`",
        Rule::kw_array => "`array`",
        Rule::kw_void => "`void`",
        Rule::kw_lower => "`lower`",
        Rule::kw_upper => "`upper`",
        Rule::kw_offset => "`offset`",
        Rule::kw_multiplier => "`multiplier`",
        Rule::kw_for => "`for`",
        Rule::kw_in => "`in`",
        Rule::kw_while => "`while`",
        Rule::kw_if => "`if`",
        Rule::kw_else => "`else`",
        Rule::kw_break => "`break`",
        Rule::kw_continue => "`continue`",
        Rule::kw_return => "`return`",
        Rule::kw_print => "`print`",
        Rule::kw_reject => "`reject`",
        Rule::kw_target => "`target`",
        Rule::kw_truncate => "a truncation `T[lower, upper]`",
        Rule::WHITESPACE | Rule::COMMENT => "a space or comment",
        // Silent rules never appear in errors; listed so the match stays exhaustive.
        Rule::block => "a block such as `model {`",
        Rule::statement => "a statement",
        Rule::prefix_op | Rule::primary => "an expression",
        Rule::postfix_op | Rule::infix_op | Rule::arith_op => "an operator such as `+`",
        Rule::exponent => "an exponent such as `e-3`",
        Rule::ident_char => "a letter, digit or `_`",
        Rule::reserved => "a reserved word",
    }
}

/// The phrases for what pest expected, deduplicated. Statement starts collapse into "a
/// statement", declaration starts into "a declaration", block keywords into "a block".
fn summarise(positives: &[Rule], expects_block: bool) -> Vec<&'static str> {
    let is_type = |r: &Rule| {
        matches!(
            r,
            Rule::sized_type
                | Rule::sized_base
                | Rule::array_sizes
                | Rule::var_decl
                | Rule::kw_array
                | Rule::kw_int
                | Rule::kw_real
                | Rule::kw_vector
                | Rule::int_type
                | Rule::real_type
                | Rule::vector_type
        )
    };
    let statement_start = positives.contains(&Rule::kw_for) || positives.contains(&Rule::kw_while);
    let decl_start = !statement_start && positives.iter().any(is_type);
    let mut out: Vec<&'static str> = Vec::new();
    let mut push = |p: &'static str| {
        if !out.contains(&p) {
            out.push(p);
        }
    };
    for r in positives {
        let phrase = match r {
            Rule::rbrace => "`}`",
            Rule::EOI => "end of file",
            _ if statement_start => "a statement",
            _ if decl_start => "a declaration such as `real x;`",
            _ if expects_block => "a block such as `model {`",
            _ => describe(*r),
        };
        push(phrase);
    }
    // The ways an expression can start collapse into "an expression".
    const OPERAND_STARTS: [&str; 11] = [
        "an integer",
        "a real number",
        "a name",
        "`(`",
        "`[`",
        "`{`",
        "`target`",
        "`target()`",
        "a function call",
        "a row vector `[…]`",
        "an array `{…}`",
    ];
    let operand_starts = out.iter().filter(|p| OPERAND_STARTS.contains(p)).count();
    if out.contains(&"an expression") || operand_starts >= 3 {
        let first = out
            .iter()
            .position(|p| *p == "an expression" || OPERAND_STARTS.contains(p))
            .expect("an operand start is present");
        out.retain(|p| *p != "an expression" && !OPERAND_STARTS.contains(p));
        out.insert(first.min(out.len()), "an expression");
    }
    // After a complete operand, `(` and `[` continue a call or an index; they are rarely what
    // was meant, so list them only when nothing else fits.
    const OPERATOR: &str = "an operator such as `+`";
    if out.contains(&OPERATOR) {
        out.retain(|p| *p != "`(`" && *p != "`[`" && *p != "an index `[…]`");
        // Punctuation first, the generic operator last: "expected `,`, `)` or an operator".
        out.retain(|p| *p != OPERATOR);
        out.push(OPERATOR);
    }
    if out.is_empty() {
        out.push("valid syntax");
    }
    out
}

/// If a `<` opened a constraint (`<lower=`, `<upper=`, `<offset=`, `<multiplier=`) in the same
/// statement before `pos`, its offset.
fn open_constraint_before(source: &str, pos: usize, scan: &Trivia) -> Option<usize> {
    let b = source.as_bytes();
    let mut i = pos;
    while i > 0 {
        i -= 1;
        if scan.trivia[i] {
            continue;
        }
        match b[i] {
            b';' | b'{' | b'}' => return None,
            b'<' => {
                let rest = source[i + 1..].trim_start();
                let kw = ["lower", "upper", "offset", "multiplier"];
                if kw.iter().any(|k| rest.starts_with(k)) {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// `real[,]` from its modern form `array[,] real` (for the message of `OldArrayType`).
fn old_text(rewrite: &str) -> String {
    let rest = rewrite.strip_prefix("array").unwrap_or(rewrite);
    match rest.split_once(' ') {
        Some((dims, base)) => format!("{base}{dims}"),
        None => rewrite.to_string(),
    }
}

/// The name of the block whose `{` encloses `pos` (`data`, `parameters`, …), if `pos` is
/// directly inside a block's braces.
fn enclosing_block(source: &str, pos: usize, scan: &Trivia) -> Option<&'static str> {
    let (open, _) = innermost_unclosed(source, pos, scan)?;
    let head_end = previous_token_end(open, scan)?;
    BLOCK_NAMES.into_iter().find(|name| {
        let words: Vec<&str> = name.split(' ').collect();
        let mut end = head_end;
        for w in words.iter().rev() {
            let Some(start) = word_start_before(source, end) else {
                return false;
            };
            if &source[start..end] != *w {
                return false;
            }
            end = previous_token_end(start, scan).unwrap_or(0);
        }
        // The header must start the top level: nothing but a `}` or nothing before it.
        end == 0 || source.as_bytes()[end - 1] == b'}' || source.as_bytes()[end - 1] == b';'
    })
}

/// "a", "a or b", "a, b or c".
fn join_or(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => one.to_string(),
        [init @ .., last] => format!("{} or {}", init.join(", "), last),
    }
}

/// Which bytes of a source are not code: whitespace and comments (`blank`), and additionally
/// string literals (`trivia`, used when counting brackets).
pub(crate) struct Trivia {
    /// Whitespace or inside a comment.
    pub blank: Vec<bool>,
    /// `blank`, or inside a string literal (quotes included).
    pub trivia: Vec<bool>,
    /// A `/*` comment is still open at the end of the source.
    pub open_comment: bool,
}

/// Classifies every byte of `source` (see [`Trivia`]).
pub(crate) fn scan_trivia(source: &str) -> Trivia {
    let b = source.as_bytes();
    let n = b.len();
    let mut blank = vec![false; n];
    let mut trivia = vec![false; n];
    let mut open_comment = false;
    let mut i = 0;
    while i < n {
        if b[i].is_ascii_whitespace() {
            blank[i] = true;
            trivia[i] = true;
            i += 1;
        } else if b[i] == b'/' && i + 1 < n && b[i + 1] == b'/' {
            while i < n && b[i] != b'\n' {
                blank[i] = true;
                trivia[i] = true;
                i += 1;
            }
        } else if b[i] == b'/' && i + 1 < n && b[i + 1] == b'*' {
            let start = i;
            i += 2;
            while i < n && !(b[i] == b'*' && i + 1 < n && b[i + 1] == b'/') {
                i += 1;
            }
            if i >= n {
                open_comment = true;
                i = n;
            } else {
                i += 2;
            }
            for j in start..i {
                blank[j] = true;
                trivia[j] = true;
            }
        } else if b[i] == b'"' {
            trivia[i] = true;
            i += 1;
            while i < n && b[i] != b'"' && b[i] != b'\n' {
                trivia[i] = true;
                i += 1;
            }
            if i < n && b[i] == b'"' {
                trivia[i] = true;
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    Trivia {
        blank,
        trivia,
        open_comment,
    }
}

/// End of the last token before `pos` (skipping whitespace and comments), if any.
fn previous_token_end(pos: usize, scan: &Trivia) -> Option<usize> {
    (0..pos).rev().find(|&i| !scan.blank[i]).map(|i| i + 1)
}

/// The innermost bracket opened before `pos` and not closed before it: (byte offset, char).
fn innermost_unclosed(source: &str, pos: usize, scan: &Trivia) -> Option<(usize, char)> {
    let mut stack: Vec<(usize, u8)> = Vec::new();
    for (i, c) in source.bytes().enumerate().take(pos) {
        if scan.trivia[i] {
            continue;
        }
        match c {
            b'{' | b'[' | b'(' => stack.push((i, c)),
            b'}' | b']' | b')' => {
                stack.pop();
            }
            _ => {}
        }
    }
    stack.last().map(|&(i, c)| (i, c as char))
}

fn is_word_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Start of the word that ends at `end`, if the byte before `end` belongs to a word.
fn word_start_before(source: &str, end: usize) -> Option<usize> {
    let b = source.as_bytes();
    let mut start = end;
    while start > 0 && is_word_byte(b[start - 1]) {
        start -= 1;
    }
    (start < end).then_some(start)
}

/// The identifier-like word starting at `pos`, or "" if none.
fn word_at(source: &str, pos: usize) -> &str {
    let b = source.as_bytes();
    let mut end = pos;
    while end < b.len() && is_word_byte(b[end]) {
        end += 1;
    }
    &source[pos..end]
}

/// The span of the token at `pos`: a word, a number, a two-character operator or one
/// character; empty at the end of the source.
fn token_at(source: &str, pos: usize, file: FileId) -> Span {
    let b = source.as_bytes();
    if pos >= b.len() {
        return Span::new(file, b.len(), b.len());
    }
    let word = word_at(source, pos);
    if !word.is_empty() {
        return Span::new(file, pos, pos + word.len());
    }
    const TWO: [&str; 12] = [
        "<=", ">=", "==", "!=", "&&", "||", "+=", "-=", "*=", "/=", "<-", ".*",
    ];
    if TWO.iter().any(|t| source[pos..].starts_with(t)) {
        return Span::new(file, pos, pos + 2);
    }
    let len = source[pos..].chars().next().map_or(1, char::len_utf8);
    Span::new(file, pos, pos + len)
}

/// If one or two words followed by `{` start at `pos`, their text (single-spaced) and end.
fn block_header_words(source: &str, pos: usize) -> Option<(String, usize)> {
    let b = source.as_bytes();
    let mut words = Vec::new();
    let mut i = pos;
    for _ in 0..2 {
        let w = word_at(source, i);
        if w.is_empty() {
            break;
        }
        words.push(w);
        i += w.len();
        let end = i;
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if i < b.len() && b[i] == b'{' {
            return Some((words.join(" "), end));
        }
    }
    None
}

/// The first non-blank byte after the word(s) at `pos` (at most two words).
fn next_nonblank_after_words(source: &str, pos: usize, scan: &Trivia) -> Option<u8> {
    let b = source.as_bytes();
    let mut i = pos;
    for _ in 0..2 {
        i += word_at(source, i).len();
        while i < b.len() && scan.blank[i] {
            i += 1;
        }
        if i < b.len() && !is_word_byte(b[i]) {
            return Some(b[i]);
        }
    }
    b.get(i).copied()
}

/// Words that cannot be names (must match `reserved` in `grammar/bayes.pest`).
pub const RESERVED: [&str; 37] = [
    "functions",
    "data",
    "transformed",
    "parameters",
    "model",
    "generated",
    "quantities",
    "int",
    "real",
    "vector",
    "row_vector",
    "matrix",
    "simplex",
    "ordered",
    "positive_ordered",
    "cholesky_factor_corr",
    "cholesky_factor_cov",
    "cov_matrix",
    "corr_matrix",
    "array",
    "void",
    "for",
    "in",
    "while",
    "if",
    "else",
    "return",
    "break",
    "continue",
    "target",
    "lower",
    "upper",
    "offset",
    "multiplier",
    "print",
    "reject",
    "T",
];

fn is_reserved(word: &str) -> bool {
    word != "T" && RESERVED.contains(&word)
}

/// The block name closest to `name` by edit distance, if at most a third of its length away
/// (at least 1, at most 3 edits).
fn closest_block_name(name: &str) -> Option<&'static str> {
    let mut best: Option<(usize, &'static str)> = None;
    for cand in BLOCK_NAMES {
        let d = edit_distance(name, cand);
        if best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, cand));
        }
    }
    let (d, cand) = best?;
    let limit = (cand.len() / 3).clamp(1, 3);
    (d <= limit).then_some(cand)
}

pub use super::suggest::edit_distance;
