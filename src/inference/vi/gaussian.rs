//! The common result of a Gaussian variational fit: q on ζ, its draws and log density.

use rand::RngExt;
use rand_distr::StandardNormal;

use super::Covariance;
use super::exit::{RunRecord, StopReason};
use super::family::{Family, HALF_LN_2PI};
use super::full::FullGaussian;
use crate::inference::rng::StreamRng;

/// Gaussian factor kept by a fit for sampling and evaluating q.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Factor {
    /// Lower Cholesky factor L of the precision (P = L·Lᵀ), d×d row-major.
    Full(Vec<f64>),
    /// √p_i.
    Diagonal(Vec<f64>),
}

/// The result of a Gaussian variational fit (QBVI and the survey's methods): q = N(mean,
/// covariance) on the unconstrained ζ, with the ELBO trace and the stopping reason of the common
/// exit rule ([`super::ExitRule`], `specs/qbvi.md` §7.2, `specs/survey_vi.md` §1).
#[derive(Clone, Debug, PartialEq)]
pub struct GaussianFit {
    /// Which family was fitted.
    pub family: Covariance,
    /// μ, length d.
    pub mean: Vec<f64>,
    /// Σ: d×d row-major for `Full`, the d variances for `Diagonal`.
    pub covariance: Vec<f64>,
    /// P = Σ⁻¹, same layout as `covariance`.
    pub precision: Vec<f64>,
    /// LB_t for t = 1..=iterations (§7.1): Monte Carlo ELBO estimates on the log-density scale;
    /// with a `trace_stride` k > 1, LB_t for t = 1, k + 1, 2k + 1, … only.
    pub elbo_trace: Vec<f64>,
    /// L̄_t for t = W+1..=iterations (§7.2): `smoothed_elbo[i]` belongs to iteration W + 1 + i
    /// (with a stride k: to `elbo_trace[⌈W/k⌉ + i]`).
    pub smoothed_elbo: Vec<f64>,
    /// Iterations run (= `elbo_trace.len()` when `trace_stride` is 1).
    pub iterations: usize,
    /// k: `elbo_trace[i]` is the estimate of iteration i·k + 1. 1 for every fit except
    /// full-batch BBB, IVON, VOGN, VON and MC dropout, whose exit rule estimates the ELBO (10
    /// fixed draws) every `reparam::PROBE_STRIDE` = 5 iterations.
    pub trace_stride: usize,
    /// Why the fit stopped.
    pub stop: StopReason,
    /// Updates skipped because every halving of β failed (`qbvi.md` §8.3) or a step was
    /// refused by a method's positive-definiteness guard.
    pub skipped_steps: usize,
    /// The best smoothed ELBO (−∞ if fewer than W + 1 iterations ran).
    pub best_smoothed_elbo: f64,
    /// Iteration whose (μ, P) were returned.
    pub returned_iteration: usize,
    /// What the method wants the user to know about this fit (e.g. VON's negative curvature,
    /// `survey_vi.md` §10); printed with the convergence line. Empty for QBVI.
    pub notes: Vec<String>,
    /// Minibatch fits only: the full-data ELBO at the end of every epoch, the exit statistic
    /// (`inference::minibatch`); empty for full-batch fits.
    pub epoch_elbo: Vec<f64>,
    /// Minibatch fits only: each look of the exit rule at the full-data ELBO (the iteration,
    /// the value of `epoch_elbo` and the smoothed value the rule compared); empty otherwise.
    pub epoch_checks: Vec<crate::inference::minibatch::EpochCheck>,
    /// Minibatch fits: the full-data ELBO of the initial q from the same fixed draws as
    /// `epoch_elbo`; `None` for the other fits (see [`GaussianFit::elbo_change`]).
    pub start_elbo: Option<f64>,
    /// Minibatch fits: the means of q (length d each) averaged over each of the last (at most
    /// [`crate::inference::minibatch::EPOCH_MEANS`]) epochs, oldest first; their spread is how
    /// far the batch noise moves the mean from epoch to epoch (`fit::stationarity`). Empty
    /// otherwise.
    pub epoch_means: Vec<Vec<f64>>,
    /// Why the method's end state is not an approximation of the posterior, whatever stopped
    /// the fit (variational Laplace with non-positive curvature in some coordinates,
    /// `vlaplace`); printed as the reason the fit has not converged. `None` otherwise.
    pub unusable: Option<String>,
    /// When the exit rule fired while the mean of q was still moving by more than
    /// [`super::exit::DRIFT_SDS`] sds over the last quarter of the run (the loops that measure
    /// it: IVON, BBB, BBVI and the others of `reparam::run_averaged` and `run_probed`); `None`
    /// otherwise.
    pub drift: Option<super::exit::MeanDrift>,
    /// Whether the fit started from the random point because the user asked for it
    /// (`--random-init`, `fit::ViInit::Random`); set by the fit layer, false from the loops.
    /// The remedy for a fit that made q worse depends on it (`fit::worsened_phrase`): from a
    /// random start far from the posterior, the start at the mode, not a smaller step size.
    pub random_start: bool,
    pub(crate) factor: Factor,
}

/// How many of the last epoch ELBOs [`GaussianFit::elbo_change`] averages for a minibatch fit:
/// the default smoothing window W + 1 of `inference::minibatch` (5 + 1 epochs).
const END_EPOCHS: usize = 6;

/// The margin of [`GaussianFit::worsened`] ([X], a design decision): the end must lie below the
/// start by more than 1 nat plus 5 % of |start|, well above the Monte Carlo error of the
/// ELBO estimates being compared (on labour, sd(LB_t) ≈ 0.5 nats at −471), so that a fit that
/// started at the optimum (the Laplace start of a Gaussian posterior) is not flagged for noise.
const WORSENED_MARGIN: (f64, f64) = (1.0, 0.05);

impl GaussianFit {
    /// The iteration (1-based) of `elbo_trace[i]`.
    pub fn trace_iteration(&self, i: usize) -> usize {
        i * self.trace_stride.max(1) + 1
    }

    /// A diagonal fit from μ and the precisions p (length d), with the record of the run.
    pub(crate) fn diagonal(mean: Vec<f64>, precision: Vec<f64>, record: RunRecord) -> Self {
        let covariance = precision.iter().map(|p| 1.0 / p).collect();
        let sqrt: Vec<f64> = precision.iter().map(|p| p.sqrt()).collect();
        record.into_fit(
            Covariance::Diagonal,
            mean,
            covariance,
            precision,
            Factor::Diagonal(sqrt),
        )
    }

    /// A full-covariance fit from a [`FullGaussian`] state, with the record of the run.
    pub(crate) fn full(q: &FullGaussian, record: RunRecord) -> Self {
        record.into_fit(
            Covariance::Full,
            q.mean().to_vec(),
            q.covariance_row_major(),
            q.precision_row_major(),
            Factor::Full(q.chol_row_major()),
        )
    }

    /// (start, end) of the ELBO over the run, each on the log-density scale, or `None` when the
    /// run has no such record. Minibatch fits (`epoch_elbo` non-empty): start = `start_elbo`,
    /// the full-data ELBO of the initial q (else the first epoch's value), end = the mean of the
    /// last 6 epoch values. Full-batch fits: start = LB_1, the estimate at the initial q;
    /// end = the best smoothed ELBO (the kept q), or the mean of the trace's last 31 values
    /// when the run was shorter than its window.
    pub fn elbo_change(&self) -> Option<(f64, f64)> {
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        if let Some(&first) = self.epoch_elbo.first() {
            let start = self.start_elbo.unwrap_or(first);
            let tail = &self.epoch_elbo[self.epoch_elbo.len().saturating_sub(END_EPOCHS)..];
            return Some((start, mean(tail)));
        }
        let &start = self.elbo_trace.first()?;
        let end = if self.best_smoothed_elbo > f64::NEG_INFINITY {
            self.best_smoothed_elbo
        } else {
            mean(&self.elbo_trace[self.elbo_trace.len().saturating_sub(31)..])
        };
        Some((start, end))
    }

    /// `Some((start, end))` of [`GaussianFit::elbo_change`] when the fit ended with a lower
    /// ELBO than it started with, by more than 1 nat + 5 % of |start| (a non-finite end counts
    /// as lower): its steps made q worse, so whatever stopped it, it has not converged. Seen on
    /// the digits BNN at too large a step size, where the exit rule fired on a plateau far
    /// below the start (docs/bnn_methods.md).
    pub fn worsened(&self) -> Option<(f64, f64)> {
        let (start, end) = self.elbo_change()?;
        let margin = WORSENED_MARGIN.0 + WORSENED_MARGIN.1 * start.abs();
        (start.is_finite() && (end.is_nan() || end < start - margin)).then_some((start, end))
    }

    /// Sets the sds of a mean-field fit to `sd` (length d, each finite and > 0; the
    /// covariance, precision and sampling factor follow). Returns false, and changes nothing,
    /// for a full-covariance fit or an `sd` of the wrong length or with a value that is not
    /// finite and positive. Used by the refinement after the exit rule (`fit::refine`).
    pub(crate) fn set_diagonal_sd(&mut self, sd: &[f64]) -> bool {
        if self.family != Covariance::Diagonal
            || sd.len() != self.dim()
            || !sd.iter().all(|s| s.is_finite() && *s > 0.0)
        {
            return false;
        }
        self.covariance = sd.iter().map(|s| s * s).collect();
        self.precision = sd.iter().map(|s| 1.0 / (s * s)).collect();
        self.factor = Factor::Diagonal(sd.iter().map(|s| 1.0 / s).collect());
        true
    }

    /// Sets the precision P of a full-covariance fit (d × d row-major, symmetric positive
    /// definite; the covariance, the sampling factor and `precision` follow). Returns false,
    /// and changes nothing, for a mean-field fit, a P of the wrong size, or one whose Cholesky
    /// factorisation fails or has a non-finite entry. Used by the refinement of a
    /// full-covariance q after the exit rule (`fit::refine_full`, [X]).
    pub(crate) fn set_full_precision(&mut self, p: &[f64]) -> bool {
        use faer::linalg::solvers::Solve;
        let d = self.dim();
        if self.family != Covariance::Full || p.len() != d * d {
            return false;
        }
        let m = faer::Mat::from_fn(d, d, |i, k| 0.5 * (p[i * d + k] + p[k * d + i]));
        let Ok(llt) = m.llt(faer::Side::Lower) else {
            return false;
        };
        let l = llt.L();
        let factor: Vec<f64> = (0..d * d)
            .map(|ik| {
                let (i, k) = (ik / d, ik % d);
                if k <= i { l[(i, k)] } else { 0.0 }
            })
            .collect();
        let cov = llt.solve(faer::Mat::<f64>::identity(d, d));
        let covariance: Vec<f64> = (0..d * d).map(|ik| cov[(ik / d, ik % d)]).collect();
        if !factor.iter().chain(&covariance).all(|x| x.is_finite()) {
            return false;
        }
        self.precision = (0..d * d).map(|ik| m[(ik / d, ik % d)]).collect();
        self.covariance = covariance;
        self.factor = Factor::Full(factor);
        true
    }

    /// The marginal variances diag Σ (length d), for either family.
    pub fn variances(&self) -> Vec<f64> {
        let d = self.dim();
        match self.family {
            Covariance::Diagonal => self.covariance.clone(),
            Covariance::Full => (0..d).map(|i| self.covariance[i * d + i]).collect(),
        }
    }

    /// d.
    pub fn dim(&self) -> usize {
        self.mean.len()
    }

    /// `n` independent draws of ζ ~ q, each of length d (§3.4: ζ = μ + L⁻ᵀε).
    pub fn sample(&self, n: usize, rng: &mut StreamRng) -> Vec<Vec<f64>> {
        let d = self.dim();
        let mut eps = vec![0.0; d];
        (0..n)
            .map(|_| {
                eps.iter_mut().for_each(|e| *e = rng.sample(StandardNormal));
                let mut z = eps.clone();
                match &self.factor {
                    Factor::Full(l) => {
                        // Back substitution for Lᵀz = ε.
                        for i in (0..d).rev() {
                            let mut x = z[i];
                            for j in i + 1..d {
                                x -= l[j * d + i] * z[j];
                            }
                            z[i] = x / l[i * d + i];
                        }
                    }
                    Factor::Diagonal(sp) => z.iter_mut().zip(sp).for_each(|(zi, s)| *zi /= s),
                }
                z.iter_mut().zip(&self.mean).for_each(|(zi, m)| *zi += m);
                z
            })
            .collect()
    }

    /// log q(ζ), the normalised Gaussian log density at `zeta` (length d).
    pub fn log_q(&self, zeta: &[f64]) -> f64 {
        let d = self.dim();
        let (half_log_det, quad) = match &self.factor {
            Factor::Full(l) => {
                // ‖Lᵀ(ζ − μ)‖² = (ζ − μ)ᵀP(ζ − μ).
                let mut quad = 0.0;
                for j in 0..d {
                    let y: f64 = (j..d)
                        .map(|i| l[i * d + j] * (zeta[i] - self.mean[i]))
                        .sum();
                    quad += y * y;
                }
                ((0..d).map(|i| l[i * d + i].ln()).sum::<f64>(), quad)
            }
            Factor::Diagonal(sp) => {
                let quad = (0..d)
                    .map(|i| (sp[i] * (zeta[i] - self.mean[i])).powi(2))
                    .sum();
                (sp.iter().map(|s| s.ln()).sum::<f64>(), quad)
            }
        };
        -(d as f64) * HALF_LN_2PI + half_log_det - 0.5 * quad
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fit(trace: Vec<f64>, best: f64, epochs: Vec<f64>, start: Option<f64>) -> GaussianFit {
        let record = RunRecord {
            elbo_trace: trace,
            smoothed_elbo: Vec::new(),
            stop: StopReason::ExitRule,
            skipped_steps: 0,
            best_smoothed_elbo: best,
            returned_iteration: 1,
            notes: Vec::new(),
            epoch_elbo: epochs,
            epoch_checks: Vec::new(),
            start_elbo: start,
            epoch_means: Vec::new(),
            unusable: None,
            means: crate::inference::vi::exit::DriftMonitor::new(),
            last_iteration: 0,
            stride: 1,
        };
        GaussianFit::diagonal(vec![0.0], vec![1.0], record)
    }

    #[test]
    fn a_fit_that_ends_below_its_start_is_worsened() {
        // Full batch: LB_1 = −22676.5 (NGVI's digits start) against a best smoothed −120244.9.
        let f = fit(vec![-22676.5, -52598.9], -120244.9, vec![], None);
        assert_eq!(f.elbo_change(), Some((-22676.5, -120244.9)));
        assert_eq!(f.worsened(), Some((-22676.5, -120244.9)));
        // Improved: not worsened.
        assert_eq!(fit(vec![-22676.5], 1907.0, vec![], None).worsened(), None);
        // Within the margin 1 + 0.05·471 = 24.55 nats (noise at an optimum): not worsened;
        // beyond it: worsened.
        assert_eq!(fit(vec![-471.0], -495.5, vec![], None).worsened(), None);
        assert!(fit(vec![-471.0], -495.6, vec![], None).worsened().is_some());
        // No smoothed value yet: the mean of the trace's tail, here (−10 − 30)/2 = −20.
        let short = fit(vec![-10.0, -30.0], f64::NEG_INFINITY, vec![], None);
        assert_eq!(short.elbo_change(), Some((-10.0, -20.0)));
        assert!(short.worsened().is_some());
        // A non-finite end is lower than any finite start.
        let inf = fit(
            vec![-10.0, f64::NEG_INFINITY],
            f64::NEG_INFINITY,
            vec![],
            None,
        );
        assert!(inf.worsened().is_some());
    }

    #[test]
    fn a_minibatch_fit_compares_the_last_six_epochs_with_its_start() {
        // start −19000; the last six epochs average (−1000·5 − 91000)/6 = −16000: within the
        // margin 1 + 950 of the start? −16000 > −19951, so not worsened.
        let epochs = vec![
            -7000.0, -1000.0, -1000.0, -1000.0, -1000.0, -1000.0, -91000.0,
        ];
        let f = fit(vec![0.0; 3], 5.0, epochs.clone(), Some(-19000.0));
        assert_eq!(f.elbo_change(), Some((-19000.0, -16000.0)));
        assert_eq!(f.worsened(), None);
        // Without a recorded start, the first epoch (−7000) is the start: worsened.
        let f = fit(vec![0.0; 3], 5.0, epochs, None);
        assert_eq!(f.worsened(), Some((-7000.0, -16000.0)));
    }
}
