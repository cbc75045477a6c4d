//! Progress bars on standard error (indicatif), shown only for fits that last over a second and
//! only when standard error is a terminal.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A progress bar that appears after one second and stays hidden when stderr is not a terminal.
/// Safe to update from several threads (MCMC chains).
pub struct DelayedBar {
    start: Instant,
    state: Mutex<Option<ProgressBar>>,
    len: u64,
    template: String,
    enabled: bool,
}

const DELAY: Duration = Duration::from_secs(1);

impl DelayedBar {
    /// A bar of `len` steps with an indicatif `template`; `enabled = false` never shows it.
    pub fn new(len: u64, template: impl Into<String>, enabled: bool) -> Self {
        let enabled = enabled && std::io::IsTerminal::is_terminal(&std::io::stderr());
        DelayedBar {
            start: Instant::now(),
            state: Mutex::new(None),
            len,
            template: template.into(),
            enabled,
        }
    }

    /// Sets the position and message; creates the bar once the delay has passed.
    pub fn update(&self, pos: u64, msg: impl FnOnce() -> String) {
        if !self.enabled {
            return;
        }
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        if state.is_none() && self.start.elapsed() >= DELAY {
            let style = ProgressStyle::with_template(&self.template)
                .unwrap_or_else(|_| ProgressStyle::default_bar());
            *state = Some(
                ProgressBar::with_draw_target(Some(self.len), ProgressDrawTarget::stderr())
                    .with_style(style),
            );
        }
        if let Some(bar) = state.as_ref() {
            bar.set_position(pos);
            bar.set_message(msg());
        }
    }

    /// Removes the bar from the terminal.
    pub fn finish(&self) {
        if let Ok(mut state) = self.state.lock()
            && let Some(bar) = state.take()
        {
            bar.finish_and_clear();
        }
    }
}

/// The indicatif template of the spinner of an iterative non-MCMC fit: the method's name as the
/// docs write it ([`crate::fit::Method::display_name`]: `BBVI iteration 1320, smoothed ELBO …`,
/// `NG-BBVI iteration 40, …`), then `tail` (e.g. the REPL's
/// ` Ctrl-C stops`). Every variational method shows its own name (the bar once said `QBVI`
/// for all of them).
pub fn iteration_template(method: crate::fit::Method, tail: &str) -> String {
    format!(
        "{{spinner}} {} iteration {{pos}}, {{msg}} [{{elapsed}}]{tail}",
        method.display_name()
    )
}
