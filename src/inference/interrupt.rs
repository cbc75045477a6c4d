//! The process-wide "the user pressed Ctrl-C" flag, for work that cannot return to a fit's
//! own stop flag between iterations: a long `while` loop inside one evaluation of the log
//! density (issue 13, item 9). The CLI's and the REPL's Ctrl-C handlers set it; they clear it
//! when a fit starts.

use std::sync::atomic::{AtomicBool, Ordering};

/// Set by the Ctrl-C handlers, cleared at the start of each fit.
static USER_INTERRUPT: AtomicBool = AtomicBool::new(false);

/// Records a Ctrl-C.
pub fn request() {
    USER_INTERRUPT.store(true, Ordering::SeqCst);
}

/// Clears the flag (at the start of a fit).
pub fn clear() {
    USER_INTERRUPT.store(false, Ordering::SeqCst);
}

/// Whether Ctrl-C was pressed since the last [`clear`].
pub fn requested() -> bool {
    USER_INTERRUPT.load(Ordering::Relaxed)
}
