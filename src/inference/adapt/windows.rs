//! Stan's windowed warmup schedule: fast initial buffer, doubling slow windows, fast terminal
//! buffer (`specs/nuts.md` §5.3).

/// Length of the fast initial buffer. `specs/nuts.md` §5.1, Stan default.
pub const INIT_BUFFER: usize = 75;
/// Length of the fast terminal buffer. `specs/nuts.md` §5.1, Stan default.
pub const TERM_BUFFER: usize = 50;
/// Size of the first slow window. `specs/nuts.md` §5.1, Stan default.
pub const BASE_WINDOW: usize = 25;
/// Below this many warmup iterations the metric is not adapted. `specs/nuts.md` §5.3.
pub const MIN_WARMUP_FOR_METRIC: usize = 20;
/// Fractions of warmup used for the buffers when the defaults do not fit. `specs/nuts.md` §5.3.
pub const SHORT_INIT_FRACTION: f64 = 0.15;
/// See [`SHORT_INIT_FRACTION`].
pub const SHORT_TERM_FRACTION: f64 = 0.10;

/// The metric-adaptation schedule for a warmup of `num_warmup` iterations numbered
/// c = 0 … W−1 (`specs/nuts.md` §5.3, including the [X] reset for short warmups).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WindowSchedule {
    /// W, the number of warmup iterations.
    pub num_warmup: usize,
    /// Whether the metric is adapted at all (W ≥ 20).
    pub adapt_metric: bool,
    /// Fast initial buffer length actually used.
    pub init_buffer: usize,
    /// Fast terminal buffer length actually used.
    pub term_buffer: usize,
    /// First slow window size actually used.
    pub base_window: usize,
    /// Zero-based iterations at which a slow window ends (ascending).
    pub window_ends: Vec<usize>,
}

impl WindowSchedule {
    /// The schedule with Stan's default buffers 75 / 50 / 25.
    pub fn new(num_warmup: usize) -> Self {
        Self::with_buffers(num_warmup, INIT_BUFFER, TERM_BUFFER, BASE_WINDOW)
    }

    /// The schedule with given buffer sizes (`term_buffer` is raised to at least 1, [X] of §5.3).
    pub fn with_buffers(
        num_warmup: usize,
        init_buffer: usize,
        term_buffer: usize,
        base_window: usize,
    ) -> Self {
        let w = num_warmup;
        let (mut init, mut term, mut base) = (init_buffer, term_buffer.max(1), base_window.max(1));
        if w < MIN_WARMUP_FOR_METRIC {
            return WindowSchedule {
                num_warmup: w,
                adapt_metric: false,
                init_buffer: init,
                term_buffer: term,
                base_window: base,
                window_ends: Vec::new(),
            };
        }
        if init + base + term > w {
            init = (SHORT_INIT_FRACTION * w as f64).floor() as usize;
            term = ((SHORT_TERM_FRACTION * w as f64).floor() as usize).max(1);
            base = w - init - term;
        }
        let last = w - term - 1;
        let mut ends = Vec::new();
        let mut size = base;
        let mut end = init + base - 1;
        loop {
            ends.push(end);
            if end >= last {
                break;
            }
            size *= 2;
            let mut next = end + size;
            if next != last && next + 2 * size >= w - term {
                next = last;
            }
            end = next.min(last);
        }
        WindowSchedule {
            num_warmup: w,
            adapt_metric: true,
            init_buffer: init,
            term_buffer: term,
            base_window: base,
            window_ends: ends,
        }
    }

    /// Whether the draw after transition `c` goes into the variance accumulator (inside a slow
    /// window).
    pub fn in_slow_window(&self, c: usize) -> bool {
        self.adapt_metric
            && c >= self.init_buffer
            && self.window_ends.last().is_some_and(|&last| c <= last)
    }

    /// Whether iteration `c` ends a slow window (then the metric is updated).
    pub fn is_window_end(&self, c: usize) -> bool {
        self.adapt_metric && self.window_ends.binary_search(&c).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table of `specs/nuts.md` §5.3.
    #[test]
    fn spec_schedule_table() {
        type Case = (usize, (usize, usize, usize), &'static [usize]);
        let cases: [Case; 7] = [
            (1000, (75, 50, 25), &[99, 149, 249, 449, 949]),
            (2000, (75, 50, 25), &[99, 149, 249, 449, 849, 1949]),
            (500, (75, 50, 25), &[99, 149, 249, 449]),
            (200, (75, 50, 25), &[99, 149]),
            (150, (75, 50, 25), &[99]),
            (100, (15, 10, 75), &[89]),
            (20, (3, 2, 15), &[17]),
        ];
        for (w, (i, t, b), ends) in cases {
            let s = WindowSchedule::new(w);
            assert!(s.adapt_metric);
            assert_eq!(
                (s.init_buffer, s.term_buffer, s.base_window),
                (i, t, b),
                "W={w}"
            );
            assert_eq!(s.window_ends, ends, "W={w}");
        }
    }

    #[test]
    fn short_warmup_and_window_membership() {
        let s = WindowSchedule::new(19);
        assert!(!s.adapt_metric && !s.in_slow_window(10) && !s.is_window_end(17));
        let s = WindowSchedule::new(1000);
        assert!(!s.in_slow_window(74) && s.in_slow_window(75) && s.in_slow_window(949));
        assert!(!s.in_slow_window(950));
        assert!(s.is_window_end(249) && !s.is_window_end(250));
    }
}
