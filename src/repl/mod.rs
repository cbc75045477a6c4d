//! `bayesc repl`: an interactive session to load or type a model, fit it, and inspect, compare
//! and query posteriors. [`session`] is the backend (no terminal); [`line_editor`] is the
//! rustyline frontend; when standard input is not a terminal, commands are read line by line.

mod expr;
pub mod line_editor;
pub mod session;

use std::io::{BufRead, IsTerminal, Write};

pub use expr::{ExprError, Reduction};
pub use session::{Interrupt, Output, Session, StoredFit};

use crate::syntax::parser::{first_unclosed, input_is_complete};

/// Runs the REPL on the terminal (rustyline) or, when standard input is not a terminal, on the
/// lines of standard input (each input echoed after a `bayesc> ` prompt, so the output reads as
/// a transcript). Returns the exit code: 0, or in scripted mode 1 if any input failed.
pub fn run() -> i32 {
    let mut session = Session::new();
    let interactive = std::io::stdin().is_terminal();
    // One global Ctrl-C handler: it stops a running fit (the session keeps the draws so far);
    // with no fit running it ends a scripted session and is ignored otherwise (at the prompt,
    // rustyline reads Ctrl-C itself and clears the line).
    let handle = session.interrupt_handle();
    let _ = ctrlc::set_handler(move || {
        if !handle.interrupt() && !interactive {
            std::process::exit(130);
        }
    });
    if interactive {
        line_editor::run(&mut session)
    } else {
        run_script(
            &mut session,
            std::io::stdin().lock(),
            &mut std::io::stdout(),
        )
    }
}

/// Reads inputs from `input` line by line: a `:command` is one line; other input (model text,
/// expressions) continues over lines until its brackets balance
/// (`syntax::parser::input_is_complete`). A command line ([`session::is_command_line`]) is never
/// taken as a continuation: it ends an unfinished entry, which is reported as an error (as is
/// one still open at the end of the input) instead of swallowing the rest of the script. A line
/// that is not UTF-8 is reported and skipped (with any entry it would continue); a `\r` before
/// the newline is dropped. Writes
/// each input after a `bayesc> ` prompt and its output to `out`. Returns 1 if any input failed,
/// else 0.
pub fn run_script(session: &mut Session, input: impl BufRead, out: &mut dyn Write) -> i32 {
    session.set_progress(false);
    let mut failed = false;
    let mut buffer = String::new();
    // the script line where the entry in `buffer` began
    let mut first_line = 0;
    for (index, bytes) in input.split(b'\n').enumerate() {
        let line_no = index + 1;
        let bytes = match bytes {
            Ok(b) => b,
            Err(e) => {
                let _ = writeln!(out, "error: cannot read the input after line {index}: {e}");
                return 1;
            }
        };
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(&bytes);
        // a line that is not UTF-8 (a binary file, a Latin-1 script) is reported and skipped,
        // with the entry it would continue; it does not end the script in silence
        let line = match std::str::from_utf8(bytes) {
            Ok(l) => l.to_string(),
            Err(_) => {
                let _ = writeln!(out, "bayesc> {}", String::from_utf8_lossy(bytes));
                let _ = writeln!(
                    out,
                    "error: line {line_no} is not UTF-8 text; it was skipped{}",
                    if buffer.is_empty() {
                        String::new()
                    } else {
                        format!(", with the entry begun on line {first_line}, which was not run")
                    }
                );
                buffer.clear();
                failed = true;
                continue;
            }
        };
        if !buffer.is_empty() && session::is_command_line(&line) {
            let text = std::mem::take(&mut buffer);
            let _ = writeln!(out, "bayesc> {}", text.replace('\n', "\n      > "));
            let _ = out.write_all(
                unfinished_entry(&text, first_line, Some((line_no, line.trim()))).as_bytes(),
            );
            failed = true;
        }
        if buffer.is_empty() {
            if line.trim().is_empty() {
                continue;
            }
            first_line = line_no;
        } else {
            buffer.push('\n');
        }
        buffer.push_str(&line);
        if !buffer.trim_start().starts_with(':') && !input_is_complete(&buffer) {
            continue;
        }
        let text = std::mem::take(&mut buffer);
        let shown = text.replace('\n', "\n      > ");
        let _ = writeln!(out, "bayesc> {shown}");
        let o = session.execute(&text);
        let _ = out.write_all(o.text.as_bytes());
        let _ = out.flush();
        failed |= o.is_error;
        if o.quit {
            return i32::from(failed);
        }
    }
    if !buffer.trim().is_empty() {
        let _ = writeln!(out, "bayesc> {}", buffer.replace('\n', "\n      > "));
        let _ = out.write_all(unfinished_entry(&buffer, first_line, None).as_bytes());
        failed = true;
    }
    i32::from(failed)
}

/// The error for an entry left unfinished — an unclosed bracket or comment — that began on line
/// `first_line` of the input: ended by the command `ended_by` (its line and text) or, when
/// `None`, by the end of the input. Nothing of the entry was run.
pub fn unfinished_entry(text: &str, first_line: usize, ended_by: Option<(usize, &str)>) -> String {
    let what = match first_unclosed(text) {
        Some(u) if u.opener == "/*" => format!(
            "unclosed comment `/*` opened on line {}",
            first_line + u.line - 1
        ),
        Some(u) => format!(
            "unbalanced '{}' opened on line {}",
            u.opener,
            first_line + u.line - 1
        ),
        None => format!("unfinished input begun on line {first_line}"),
    };
    let end = match ended_by {
        Some((line, cmd)) => {
            let word = cmd.split_whitespace().next().unwrap_or(cmd);
            format!(
                "the command `{word}` on line {line} ends it (a line starting with a command is \
                 never a continuation line)"
            )
        }
        None => "the input ended before it was closed".to_string(),
    };
    format!("error: {what}: {end}; this entry was not run\n")
}
