//! A variational fit whose ELBO diverged upwards: the estimate ran off to values no posterior
//! of the model allows (variational Laplace on eight schools: from 1.16 at the Laplace start
//! to 1.8e7 after 5000 iterations, every seed 1–20, before that method learned to fall back
//! to its paper form, `inference::vi::vlaplace::fit_vlaplace`), so its "best smoothed ELBO" is
//! an artefact and must not be quoted as a result. The downward case (the ELBO ended below its
//! start) is [`super::worsened_phrase`].

use super::{Method, other_methods};
use crate::inference::vi::GaussianFit;

/// Factor by which the best smoothed ELBO must exceed the scale of its start to count as a
/// divergence: rise > `DIVERGED_RISE`·max(1, |LB₁|, d) ([X], a design decision: from the Laplace
/// start the ELBO can improve by about the KL gap, of order d, and from a random start it climbs
/// from a value whose magnitude is at least the remaining rise; the diverged vlaplace fits of
/// eight schools rise 1.7e7 from 1.16 with d = 10, over 10⁶ times this scale).
pub const DIVERGED_RISE: f64 = 1e3;

/// Why the ELBO trace of `fit` (a run of `method`) shows a divergence, with the remedy, or
/// `None`: the last ELBO estimate is not finite while earlier ones were, or the best smoothed
/// ELBO rose from the first estimate LB₁ by more than [`DIVERGED_RISE`]·max(1, |LB₁|, d). Names
/// the values as evidence; the caller says "diverged" instead of quoting a best ELBO.
pub fn diverged_phrase(fit: &GaussianFit, method: Method) -> Option<String> {
    let start = *fit.elbo_trace.iter().find(|v| v.is_finite())?;
    let last = *fit.elbo_trace.last()?;
    let fmt = super::fmt_elbo;
    let remedy = format!(
        "a smaller --step-size (a tenth of the one above), or --method {}",
        other_methods(method, &[Method::Qbvi, Method::Nuts])
    );
    if !last.is_finite() {
        return Some(format!(
            "the ELBO estimate became {last} (it started at {}), so the iterates left the region \
             where the log density is finite; try {remedy}",
            fmt(start)
        ));
    }
    let best = fit.best_smoothed_elbo;
    let scale = start.abs().max(fit.mean.len() as f64).max(1.0);
    (best.is_finite() && best - start > DIVERGED_RISE * scale).then(|| {
        format!(
            "the smoothed ELBO rose from {} at the start to {}, far beyond anything the model's \
             posterior allows: the steps ran away (the ELBO estimate is an artefact of the \
             diverged iterates, not a bound); try {remedy}",
            fmt(start),
            fmt(best)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inference::vi::RunRecord;

    fn fit(trace: Vec<f64>, best: f64, d: usize) -> GaussianFit {
        let mut record = RunRecord::empty();
        record.elbo_trace = trace;
        record.best_smoothed_elbo = best;
        GaussianFit::diagonal(vec![0.0; d], vec![1.0; d], record)
    }

    #[test]
    fn a_runaway_rise_is_a_divergence_with_a_remedy() {
        // vlaplace on eight schools, seed 1: 1.164 at the start, 18453975.897 best smoothed
        let f = fit(vec![1.164, 569024.9, 17033906.6], 18453975.897, 10);
        let p = diverged_phrase(&f, Method::Vlaplace).unwrap();
        assert!(
            p.starts_with("the smoothed ELBO rose from 1.164 at the start to 18453975.897"),
            "{p}"
        );
        assert!(
            p.ends_with(
                "try a smaller --step-size (a tenth of the one above), or --method qbvi or nuts"
            ),
            "{p}"
        );
        // the remedy never names the method that ran
        let q = diverged_phrase(&f, Method::Qbvi).unwrap();
        assert!(q.ends_with("or --method nuts"), "{q}");
    }

    #[test]
    fn ordinary_climbs_are_not_divergences() {
        // from a random start the ELBO climbs by about its starting magnitude
        assert_eq!(
            diverged_phrase(&fit(vec![-1.5e6, -200.0], -150.0, 8), Method::Qbvi),
            None
        );
        // from the Laplace start it improves by a few units
        assert_eq!(
            diverged_phrase(&fit(vec![-30.0, -28.0], -27.5, 10), Method::Vlaplace),
            None
        );
        // a start near 0 may still rise by d-sized amounts
        assert_eq!(
            diverged_phrase(&fit(vec![0.5, 40.0], 45.0, 50), Method::Ivon),
            None
        );
    }

    #[test]
    fn a_non_finite_last_estimate_is_a_divergence() {
        let p = diverged_phrase(&fit(vec![-10.0, f64::NAN], -9.0, 2), Method::Bbb).unwrap();
        assert!(
            p.starts_with("the ELBO estimate became NaN (it started at -10.000)"),
            "{p}"
        );
    }
}
