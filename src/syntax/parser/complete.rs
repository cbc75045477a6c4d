//! Is a multi-line REPL input complete? Bracket and comment balance outside string literals
//! and comments, for `bayesc repl` and piped scripts (no pest parse involved).

/// True when every `{`, `[` and `(` opened outside comments and string literals has been closed
/// and no block comment is left open, i.e. a multi-line REPL input can be submitted. Extra closing
/// brackets count as complete (the parser will report them).
pub fn input_is_complete(source: &str) -> bool {
    let scan = crate::syntax::error::scan_trivia(source);
    if scan.open_comment {
        return false;
    }
    let mut depth: i64 = 0;
    for (i, b) in source.bytes().enumerate() {
        if scan.trivia[i] {
            continue;
        }
        match b {
            b'{' | b'[' | b'(' => depth += 1,
            b'}' | b']' | b')' => depth -= 1,
            _ => {}
        }
    }
    depth <= 0
}

/// What keeps a multi-line REPL input from being complete (see [`input_is_complete`]): an
/// opening bracket that is never closed, or a `/*` comment left open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unclosed {
    /// `"("`, `"["`, `"{"` or `"/*"`.
    pub opener: &'static str,
    /// Byte offset of the opener in the input.
    pub offset: usize,
    /// 1-based line of the opener in the input.
    pub line: usize,
}

/// The earliest opener left unclosed in `source`, or `None` when [`input_is_complete`] holds.
/// Brackets are matched by kind, so in `{ f(x; }` the `(` is reported, not the `{` that the
/// `}` closes.
pub fn first_unclosed(source: &str) -> Option<Unclosed> {
    if input_is_complete(source) {
        return None;
    }
    let scan = crate::syntax::error::scan_trivia(source);
    // openers still waiting for their closer, and openers that a closer of an outer kind
    // skipped over (never closed themselves)
    let mut stack: Vec<(u8, usize)> = Vec::new();
    let mut skipped: Vec<(u8, usize)> = Vec::new();
    for (i, b) in source.bytes().enumerate() {
        if scan.trivia[i] {
            continue;
        }
        let open = match b {
            b'{' | b'[' | b'(' => {
                stack.push((b, i));
                continue;
            }
            b'}' => b'{',
            b']' => b'[',
            b')' => b'(',
            _ => continue,
        };
        if let Some(k) = stack.iter().rposition(|&(o, _)| o == open) {
            skipped.extend_from_slice(&stack[k + 1..]);
            stack.truncate(k);
        }
    }
    let comment = scan.open_comment_at.map(|i| (b'/', i));
    let (kind, offset) = stack
        .into_iter()
        .chain(skipped)
        .chain(comment)
        .min_by_key(|&(_, i)| i)?;
    let opener = match kind {
        b'{' => "{",
        b'[' => "[",
        b'(' => "(",
        _ => "/*",
    };
    Some(Unclosed {
        opener,
        offset,
        line: source[..offset].matches('\n').count() + 1,
    })
}
