//! The terminal frontend of the REPL (rustyline): history in the user's data directory,
//! multi-line input until brackets balance, tab completion of commands and names.

use std::borrow::Cow;
use std::path::PathBuf;

use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::DefaultHistory;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{Context, Editor, Helper};

use crate::syntax::parser::input_is_complete;

use super::session::Session;

/// The rustyline helper: completion words (refreshed from the session after every input) and
/// the multi-line validator.
pub struct ReplHelper {
    /// Candidate words for tab completion.
    pub words: Vec<String>,
}

impl Completer for ReplHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        Ok(complete_word(&self.words, line, pos))
    }
}

/// The start of the word before `pos` in `line` and the candidates that extend it. A word is a
/// run of letters, digits, `_`, `[`, `]`, `,` and a leading `:` (commands).
pub fn complete_word(words: &[String], line: &str, pos: usize) -> (usize, Vec<Pair>) {
    let head = &line[..pos.min(line.len())];
    let start = head
        .char_indices()
        .rev()
        .find(|(_, c)| !(c.is_alphanumeric() || matches!(c, '_' | '[' | ']' | ',' | ':')))
        .map_or(0, |(i, c)| i + c.len_utf8());
    let prefix = &head[start..];
    if prefix.is_empty() {
        return (start, Vec::new());
    }
    let at_line_start = head[..start].trim().is_empty();
    let candidates = words
        .iter()
        .filter(|w| w.starts_with(prefix) && w.as_str() != prefix)
        .filter(|w| !w.starts_with(':') || at_line_start)
        .map(|w| Pair {
            display: w.clone(),
            replacement: w.clone(),
        })
        .collect();
    (start, candidates)
}

impl Validator for ReplHelper {
    fn validate(&self, ctx: &mut ValidationContext) -> rustyline::Result<ValidationResult> {
        let input = ctx.input();
        if input.trim_start().starts_with(':')
            || input_is_complete(input)
            || split_command(input).is_some()
        {
            Ok(ValidationResult::Valid(None))
        } else {
            Ok(ValidationResult::Incomplete)
        }
    }
}

/// An unfinished multi-line entry whose last line is a REPL command
/// ([`super::session::is_command_line`]): the unfinished part, the command and its line number in
/// the entry. The command ends the entry, as in scripted mode, instead of being taken as a
/// continuation line.
pub fn split_command(input: &str) -> Option<(&str, &str, usize)> {
    let (head, last) = input.rsplit_once('\n')?;
    (super::session::is_command_line(last) && !input_is_complete(head))
        .then(|| (head, last, head.lines().count() + 1))
}

impl Hinter for ReplHelper {
    type Hint = String;
}

impl Highlighter for ReplHelper {
    fn highlight_prompt<'b, 's: 'b, 'p: 'b>(
        &'s self,
        prompt: &'p str,
        _default: bool,
    ) -> Cow<'b, str> {
        Cow::Borrowed(prompt)
    }
}

impl Helper for ReplHelper {}

/// The history file: `$XDG_DATA_HOME/bayesc/history`, else `~/.local/share/bayesc/history`
/// (its directory is created if missing); `None` when neither variable is set.
pub fn history_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_DATA_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local").join("share"))
        })?;
    let dir = base.join("bayesc");
    std::fs::create_dir_all(&dir).ok()?;
    Some(dir.join("history"))
}

/// Input typed on the terminal while a command (a fit) ran: rustyline would read only the
/// first of several such lines and lose the rest, so it is discarded instead (`tcflush`) and
/// the caller says so. Returns the number of bytes discarded, `None` when there were none (or
/// off Unix).
fn discard_typeahead() -> Option<usize> {
    #[cfg(unix)]
    {
        let mut pending: libc::c_int = 0;
        // SAFETY: FIONREAD writes one c_int through the valid pointer; tcflush takes a file
        // descriptor and a constant. Both only query or drop the terminal's input queue.
        unsafe {
            if libc::ioctl(libc::STDIN_FILENO, libc::FIONREAD, &mut pending) != 0 || pending <= 0 {
                return None;
            }
            libc::tcflush(libc::STDIN_FILENO, libc::TCIFLUSH);
        }
        Some(pending as usize)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// Runs the interactive loop until `:quit` or Ctrl-D; returns the exit code (0).
pub fn run(session: &mut Session) -> i32 {
    let mut editor: Editor<ReplHelper, DefaultHistory> = match Editor::new() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("error: cannot start the line editor: {e}");
            return super::run_script(session, std::io::stdin().lock(), &mut std::io::stdout());
        }
    };
    editor.set_helper(Some(ReplHelper {
        words: session.completion_words(),
    }));
    let history = history_path();
    if let Some(h) = &history {
        let _ = editor.load_history(h);
    }
    println!(
        "bayesc {} — :help lists the commands, :quit leaves",
        env!("CARGO_PKG_VERSION")
    );
    loop {
        match editor.readline("bayesc> ") {
            Ok(line) => {
                if !line.trim().is_empty() {
                    let _ = editor.add_history_entry(line.as_str());
                }
                let line = match split_command(&line) {
                    Some((head, cmd, n)) => {
                        eprint!(
                            "{}",
                            super::unfinished_entry(head, 1, Some((n, cmd.trim())))
                        );
                        cmd.to_string()
                    }
                    None => line,
                };
                let out = session.execute(&line);
                if out.is_error {
                    eprint!("{}", out.text);
                } else {
                    print!("{}", out.text);
                }
                if let Some(n) = discard_typeahead() {
                    eprintln!(
                        "note: {n} byte(s) typed while that command ran were discarded (the line \
                         editor cannot replay them); type the next command at the prompt"
                    );
                }
                if let Some(h) = editor.helper_mut() {
                    h.words = session.completion_words();
                }
                if out.quit {
                    break;
                }
            }
            // Ctrl-C at the prompt clears the line
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => break,
            Err(e) => {
                eprintln!("error: {e}");
                break;
            }
        }
    }
    if let Some(h) = &history {
        let _ = editor.save_history(h);
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completes_words_and_commands() {
        let words: Vec<String> = [
            ":summary",
            ":save",
            "beta",
            "beta[1]",
            "bernoulli_logit",
            "sd",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let (start, c) = complete_word(&words, ":su", 3);
        assert_eq!(start, 0);
        assert_eq!(
            c.iter().map(|p| p.replacement.as_str()).collect::<Vec<_>>(),
            [":summary"]
        );
        let (start, c) = complete_word(&words, "mean(bet", 8);
        assert_eq!(start, 5);
        let got: Vec<&str> = c.iter().map(|p| p.replacement.as_str()).collect();
        assert_eq!(got, ["beta", "beta[1]"]);
        // commands only at the start of the line
        let (_, c) = complete_word(&words, "x :s", 4);
        assert!(c.is_empty());
    }
}
