//! `bayesc repl`: an interactive session to load or type a model, fit it, and inspect, compare
//! and query posteriors. [`session`] is the backend (no terminal); [`line_editor`] is the
//! rustyline frontend; when standard input is not a terminal, commands are read line by line.

mod expr;
pub mod line_editor;
pub mod session;

use std::io::{BufRead, IsTerminal, Write};

pub use expr::{ExprError, Reduction};
pub use session::{Interrupt, Output, Session, StoredFit};

use crate::syntax::parser::input_is_complete;

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
/// (`syntax::parser::input_is_complete`). Writes each input after a `bayesc> ` prompt and its
/// output to `out`. Returns 1 if any input failed, else 0.
pub fn run_script(session: &mut Session, input: impl BufRead, out: &mut dyn Write) -> i32 {
    session.set_progress(false);
    let mut failed = false;
    let mut buffer = String::new();
    for line in input.lines() {
        let Ok(line) = line else {
            break;
        };
        if buffer.is_empty() && line.trim().is_empty() {
            continue;
        }
        if !buffer.is_empty() {
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
        let _ = writeln!(
            out,
            "error: the input ended inside unbalanced brackets:\n{buffer}"
        );
        failed = true;
    }
    i32::from(failed)
}
