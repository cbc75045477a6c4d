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
    /// LB_t for t = 1..=iterations (§7.1): Monte Carlo ELBO estimates on the log-density scale.
    pub elbo_trace: Vec<f64>,
    /// L̄_t for t = W+1..=iterations (§7.2): `smoothed_elbo[i]` belongs to iteration W + 1 + i.
    pub smoothed_elbo: Vec<f64>,
    /// Iterations run (= `elbo_trace.len()`).
    pub iterations: usize,
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
    pub(crate) factor: Factor,
}

impl GaussianFit {
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
