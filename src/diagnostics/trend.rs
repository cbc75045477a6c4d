//! Is a noisy trace still rising? The trend test behind the exit rules' guard against stopping
//! on a climbing ELBO ([X], a design decision of bayesc; the statistics are standard).
//!
//! A least-squares line is fitted through a window of 2h values (x = 0, 1, …, centred). Its
//! slope's standard error, s/√Sxx with s² the residual variance, is inflated by √((1+ρ)/(1−ρ))
//! for the lag-1 autocorrelation ρ ∈ [0, 0.9] of the residuals: the AR(1) approximation of the
//! variance of a mean of dependent values (e.g. Box, Jenkins & Reinsel, *Time Series
//! Analysis*, 4th ed., §2.1.6). Consecutive ELBO estimates of a stochastic optimiser are
//! dependent, and without the inflation the test would call jitter a trend.

/// A line fitted through a window of a trace ([`rise`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rise {
    /// h: the window holds 2h values.
    pub half: usize,
    /// The fitted slope × h: how far the later half window's mean lies above the earlier's on
    /// the line (units of the trace; nats for an ELBO).
    pub gain: f64,
    /// The slope over its autocorrelation-inflated standard error (module docs); +∞ for a
    /// rising window with no residual scatter.
    pub t: f64,
}

/// The trend of `window` (oldest first, length 2h ≥ 4; module docs). `None` when the window
/// is shorter or holds a non-finite value.
pub fn rise(window: &[f64]) -> Option<Rise> {
    let m = window.len();
    if m < 4 || window.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let mf = m as f64;
    let xbar = (mf - 1.0) / 2.0;
    let ybar = window.iter().sum::<f64>() / mf;
    let sxx: f64 = (0..m).map(|i| (i as f64 - xbar).powi(2)).sum();
    let sxy: f64 = window
        .iter()
        .enumerate()
        .map(|(i, y)| (i as f64 - xbar) * (y - ybar))
        .sum();
    let slope = sxy / sxx;
    let resid: Vec<f64> = window
        .iter()
        .enumerate()
        .map(|(i, y)| y - ybar - slope * (i as f64 - xbar))
        .collect();
    let ss: f64 = resid.iter().map(|r| r * r).sum();
    let lag: f64 = resid.windows(2).map(|w| w[0] * w[1]).sum();
    let rho = if ss > 0.0 {
        (lag / ss).clamp(0.0, 0.9)
    } else {
        0.0
    };
    let se = (ss / (mf - 2.0) / sxx).sqrt() * ((1.0 + rho) / (1.0 - rho)).sqrt();
    let t = if se > 0.0 {
        slope / se
    } else if slope > 0.0 {
        f64::INFINITY
    } else {
        0.0
    };
    Some(Rise {
        half: m / 2,
        gain: slope * (m / 2) as f64,
        t,
    })
}

/// The settings of an exit rule's trend guard ([X]): which tail of a trace [`rise`] judges,
/// and the bars a rise must pass for the rule to wait.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Guard {
    /// Largest h (the window holds the last 2h values).
    pub half_max: usize,
    /// h is at most len / this (2: the whole trace; 4: its later half).
    pub divisor: usize,
    /// Below this h the trace is too short to judge.
    pub half_min: usize,
    /// The slope must exceed this many standard errors.
    pub t: f64,
    /// And the gain over h values this much (nats for an ELBO).
    pub min_rise: f64,
}

impl Guard {
    /// The rise of the last 2h values of `trace` (oldest first), h = min(`half_max`,
    /// len / `divisor`), when it passes both bars; `None` when it does not, when h <
    /// `half_min`, or when the window holds a non-finite value.
    pub fn still_rising(&self, trace: &[f64]) -> Option<Rise> {
        let h = (trace.len() / self.divisor).min(self.half_max);
        if h < self.half_min {
            return None;
        }
        let r = rise(&trace[trace.len() - 2 * h..])?;
        (r.gain > self.min_rise && r.t > self.t).then_some(r)
    }
}

#[cfg(test)]
mod tests {
    use super::rise;

    #[test]
    fn a_line_has_its_slope_and_jitter_has_none() {
        let line: Vec<f64> = (0..20).map(|i| 3.0 + 0.5 * i as f64).collect();
        let r = rise(&line).unwrap();
        assert_eq!(r.half, 10);
        assert!((r.gain - 5.0).abs() < 1e-12);
        assert!(r.t.is_infinite());
        // an alternating sequence: no slope, strong negative autocorrelation (clamped at 0)
        let zigzag: Vec<f64> = (0..20)
            .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 })
            .collect();
        let z = rise(&zigzag).unwrap();
        assert!(z.t.abs() < 1.0, "{z:?}");
        // slope 0.1 plus jitter of sd ~0.29: t is the slope over its standard error
        let noisy: Vec<f64> = (0..200)
            .map(|i| 0.1 * i as f64 + ((i * 7919) % 13) as f64 / 13.0 - 0.5)
            .collect();
        let n = rise(&noisy).unwrap();
        assert!((n.gain - 10.0).abs() < 0.2, "{n:?}");
        assert!(n.t > 100.0, "{n:?}");
        assert_eq!(rise(&[1.0, 2.0, 3.0]), None);
        assert_eq!(rise(&[1.0, f64::NAN, 3.0, 4.0]), None);
    }
}
