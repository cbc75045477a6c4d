//! The Gaussian prior on ζ of the conjugate form (`specs/qbvi.md` §2.3, §3.3, §4).

use faer::Mat;

use super::family::HALF_LN_2PI;
use super::full::cholesky_lower;

/// N(μ₀, P₀⁻¹) on ζ, with the lower Cholesky factor of P₀ for its log density.
#[derive(Clone, Debug)]
pub(crate) struct ConjugatePrior {
    pub(crate) mean: Vec<f64>,
    /// P₀, d×d row-major.
    pub(crate) precision: Vec<f64>,
    /// Lower L₀ with P₀ = L₀L₀ᵀ, d×d row-major.
    chol: Vec<f64>,
    half_log_det: f64,
}

impl ConjugatePrior {
    /// Checks the shapes and positive definiteness; the error text names the problem.
    pub(crate) fn new(d: usize, mean: &[f64], precision: &[f64]) -> Result<Self, String> {
        if mean.len() != d {
            return Err(format!(
                "prior_mean has length {}, expected d = {d}",
                mean.len()
            ));
        }
        if precision.len() != d * d {
            return Err(format!(
                "prior_precision has {} entries, expected d² = {}",
                precision.len(),
                d * d
            ));
        }
        if mean.iter().any(|m| !m.is_finite()) {
            return Err("prior_mean has a non-finite entry".into());
        }
        for i in 0..d {
            for j in 0..i {
                let (a, b) = (precision[i * d + j], precision[j * d + i]);
                if (a - b).abs() > 1e-12 * (a.abs() + b.abs()) {
                    return Err(format!("prior_precision is not symmetric at ({i}, {j})"));
                }
            }
        }
        let p = Mat::from_fn(d, d, |i, j| precision[i * d + j]);
        let l = cholesky_lower(&p)
            .ok_or_else(|| "prior_precision is not positive definite".to_string())?;
        let chol: Vec<f64> = (0..d * d).map(|k| l[(k / d, k % d)]).collect();
        let half_log_det = (0..d).map(|i| chol[i * d + i].ln()).sum();
        Ok(ConjugatePrior {
            mean: mean.to_vec(),
            precision: precision.to_vec(),
            chol,
            half_log_det,
        })
    }

    /// log N(ζ; μ₀, P₀⁻¹), normalised.
    pub(crate) fn log_density(&self, zeta: &[f64]) -> f64 {
        let d = self.mean.len();
        let mut quad = 0.0;
        for j in 0..d {
            let y: f64 = (j..d)
                .map(|i| self.chol[i * d + j] * (zeta[i] - self.mean[i]))
                .sum();
            quad += y * y;
        }
        -(d as f64) * HALF_LN_2PI + self.half_log_det - 0.5 * quad
    }

    /// P₀(μ₀ − μ), the prior's exact contribution to the mean direction (§3.3, §4).
    pub(crate) fn mean_pull(&self, mu: &[f64], out: &mut [f64]) {
        let d = self.mean.len();
        for (i, o) in out.iter_mut().enumerate() {
            *o = (0..d)
                .map(|j| self.precision[i * d + j] * (self.mean[j] - mu[j]))
                .sum();
        }
    }
}
