//! Source scanning for syntax messages: comments and strings (`Trivia`), open brackets and
//! constraints, the enclosing block, and the token at a position.

use super::*;

/// The phrases for what pest expected, deduplicated. Statement starts collapse into "a
/// statement", declaration starts into "a declaration", block keywords into "a block".
pub(super) fn summarise(positives: &[Rule], expects_block: bool) -> Vec<&'static str> {
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
pub(super) fn open_constraint_before(source: &str, pos: usize, scan: &Trivia) -> Option<usize> {
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
pub(super) fn old_text(rewrite: &str) -> String {
    let rest = rewrite.strip_prefix("array").unwrap_or(rewrite);
    match rest.split_once(' ') {
        Some((dims, base)) => format!("{base}{dims}"),
        None => rewrite.to_string(),
    }
}

/// The name of the block whose `{` encloses `pos` (`data`, `parameters`, …), if `pos` is
/// directly inside a block's braces.
pub(super) fn enclosing_block(source: &str, pos: usize, scan: &Trivia) -> Option<&'static str> {
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
pub(super) fn join_or(items: &[&str]) -> String {
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
    /// Where that open `/*` comment begins (byte offset), when `open_comment`.
    pub open_comment_at: Option<usize>,
}

/// Classifies every byte of `source` (see [`Trivia`]).
pub(crate) fn scan_trivia(source: &str) -> Trivia {
    let b = source.as_bytes();
    let n = b.len();
    let mut blank = vec![false; n];
    let mut trivia = vec![false; n];
    let mut open_comment = false;
    let mut open_comment_at = None;
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
                open_comment_at = Some(start);
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
        open_comment_at,
    }
}

/// End of the last token before `pos` (skipping whitespace and comments), if any.
pub(super) fn previous_token_end(pos: usize, scan: &Trivia) -> Option<usize> {
    (0..pos).rev().find(|&i| !scan.blank[i]).map(|i| i + 1)
}

/// The innermost bracket opened before `pos` and not closed before it: (byte offset, char).
pub(super) fn innermost_unclosed(source: &str, pos: usize, scan: &Trivia) -> Option<(usize, char)> {
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

pub(super) fn is_word_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Start of the word that ends at `end`, if the byte before `end` belongs to a word.
pub(super) fn word_start_before(source: &str, end: usize) -> Option<usize> {
    let b = source.as_bytes();
    let mut start = end;
    while start > 0 && is_word_byte(b[start - 1]) {
        start -= 1;
    }
    (start < end).then_some(start)
}

/// The identifier-like word starting at `pos`, or "" if none.
pub(super) fn word_at(source: &str, pos: usize) -> &str {
    let b = source.as_bytes();
    let mut end = pos;
    while end < b.len() && is_word_byte(b[end]) {
        end += 1;
    }
    &source[pos..end]
}

/// The span of the token at `pos`: a word, a number, a two-character operator or one
/// character; empty at the end of the source.
pub(super) fn token_at(source: &str, pos: usize, file: FileId) -> Span {
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
pub(super) fn block_header_words(source: &str, pos: usize) -> Option<(String, usize)> {
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
pub(super) fn next_nonblank_after_words(source: &str, pos: usize, scan: &Trivia) -> Option<u8> {
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

pub(super) fn is_reserved(word: &str) -> bool {
    word != "T" && RESERVED.contains(&word)
}

/// The block name closest to `name` by edit distance, if at most a third of its length away
/// (at least 1, at most 3 edits).
pub(super) fn closest_block_name(name: &str) -> Option<&'static str> {
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
