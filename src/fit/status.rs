//! How an iterative fit ended: interrupted before its exit rule, converged, or neither. Read by
//! the CLI's notes, the draws files and saved fits, so that an incomplete fit is never written
//! or scored as if it were complete.

use super::{FitDetails, FitResult};
use crate::inference::qbvi::StopReason;
use crate::inference::qnvb::QnvbStop;

impl FitResult {
    /// The looks of a minibatch fit's exit rule at the full-data ELBO, oldest first
    /// ([`crate::inference::minibatch::EpochCheck`]: iteration, value, smoothed value); empty
    /// for full-batch and non-variational fits.
    pub fn epoch_checks(&self) -> &[crate::inference::minibatch::EpochCheck] {
        match &self.details {
            FitDetails::Qbvi(q) => &q.epoch_checks,
            FitDetails::Qnvb(q) => &q.epoch_checks,
            _ => &[],
        }
    }

    /// Whether the progress callback (Ctrl-C, SIGTERM) stopped the algorithm before its exit
    /// rule or requested length: the variational stop reason, or MCMC's `interrupted` flag.
    /// `None` for optimisation, Laplace and Pathfinder, which do not report it (the caller
    /// knows whether it raised its stop flag).
    pub fn stopped_early(&self) -> Option<bool> {
        match &self.details {
            FitDetails::Qbvi(f) => Some(f.stop == StopReason::Interrupted),
            FitDetails::Qnvb(f) => Some(f.stop == QnvbStop::Interrupted),
            FitDetails::Mcmc(out) => Some(out.interrupted),
            _ => None,
        }
    }

    /// For a variational fit: the iteration at which it stopped (`None` for other methods).
    pub fn vi_iterations(&self) -> Option<usize> {
        match &self.details {
            FitDetails::Qbvi(f) => Some(f.iterations),
            FitDetails::Qnvb(f) => Some(f.iterations),
            _ => None,
        }
    }

    /// For a variational fit: whether its exit rule fired (the smoothed ELBO stopped
    /// improving), no direction of the approximation is drifting without bound and the ELBO
    /// did not end below where it started (`GaussianFit::worsened`) nor with its mean still
    /// moving (`GaussianFit::drift`) or off the optimum (`fit::stationarity`), both in
    /// `ViDiagnostics::moving`; `false` when it hit the
    /// iteration cap or was interrupted. `None` for other methods (MCMC's
    /// convergence is judged from R-hat and ESS, not recorded here).
    pub fn vi_converged(&self) -> Option<bool> {
        let drifting = self.vi.as_ref().is_some_and(|v| !v.unbounded.is_empty());
        match &self.details {
            FitDetails::Qbvi(f) => Some(
                f.stop == StopReason::ExitRule
                    && !drifting
                    && f.worsened().is_none()
                    && self.vi.as_ref().is_none_or(|v| v.moving.is_none()),
            ),
            FitDetails::Qnvb(f) => Some(
                f.stop == QnvbStop::Converged
                    && !drifting
                    && self.vi.as_ref().is_none_or(|v| v.moving.is_none()),
            ),
            _ => None,
        }
    }
}
