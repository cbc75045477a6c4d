//! Progress bars on standard error (indicatif), shown only for fits that last over a second and
//! only when standard error is a terminal.

use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A progress bar that appears after `delay` and stays hidden when stderr is not a terminal.
pub struct DelayedBar {
    start: Instant,
    bar: Option<ProgressBar>,
    len: u64,
    template: &'static str,
}

const DELAY: Duration = Duration::from_secs(1);

impl DelayedBar {
    /// A bar of `len` steps with an indicatif `template`.
    pub fn new(len: u64, template: &'static str) -> Self {
        DelayedBar {
            start: Instant::now(),
            bar: None,
            len,
            template,
        }
    }

    /// Sets the position and message; creates the bar once the delay has passed.
    pub fn update(&mut self, pos: u64, msg: impl FnOnce() -> String) {
        if self.bar.is_none()
            && self.start.elapsed() >= DELAY
            && std::io::IsTerminal::is_terminal(&std::io::stderr())
        {
            let style = ProgressStyle::with_template(self.template)
                .unwrap_or_else(|_| ProgressStyle::default_bar());
            let bar = ProgressBar::with_draw_target(Some(self.len), ProgressDrawTarget::stderr())
                .with_style(style);
            self.bar = Some(bar);
        }
        if let Some(bar) = &self.bar {
            bar.set_position(pos);
            bar.set_message(msg());
        }
    }

    /// Removes the bar from the terminal.
    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}
