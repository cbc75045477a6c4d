//! Robust (sandwich) covariance of an M-estimator: Cov = H⁻¹ B H⁻¹ from the Hessian H of the
//! total log-likelihood and the outer products B of the per-observation scores (Huber 1967;
//! White 1982, Theorem 3.2; for GARCH, Bollerslev & Wooldridge 1992, eq. 2.8 — the default
//! covariance of Python's `arch` package).

use super::density::DensityError;
use super::hessian::finite_diff_step;

/// The pointwise log-likelihood as a function of the unconstrained point: one value per
/// observation (e.g. `graph::Model::pointwise_log_likelihood`).
pub type Pointwise<'a> = dyn Fn(&[f64]) -> Result<Vec<f64>, DensityError> + 'a;

/// Why [`robust_covariance`] failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SandwichError {
    /// The point or the matrix has the wrong size.
    #[error("robust covariance: {0}")]
    Shape(String),
    /// Fewer than two observations: their score covariance is undefined.
    #[error("robust standard errors need at least 2 observations, the model has {0}")]
    TooFewObservations(usize),
    /// A finite-difference evaluation gave another number of observations than the point itself.
    #[error(
        "the number of observations changed from {at_point} to {perturbed} when parameter {coordinate} was perturbed; robust standard errors need a fixed set of observations"
    )]
    ObservationCountChanged {
        /// Observations at the point.
        at_point: usize,
        /// Observations at the perturbed point.
        perturbed: usize,
        /// Which unconstrained coordinate (0-based) was perturbed.
        coordinate: usize,
    },
    /// The pointwise log-likelihood failed or was not finite at a finite-difference point.
    #[error("cannot compute the scores: {0}")]
    Density(DensityError),
}

/// The scores s_i = ∇ℓ_i(ζ) of each observation (n × d, row-major: entry (i, j) at `i*d + j`)
/// by central differences of the pointwise log-likelihood `pointwise`, with the steps
/// h_j = [`finite_diff_step`]`(ζ_j)` of the Hessian: s_ij = (ℓ_i(ζ + h_j e_j) − ℓ_i(ζ − h_j e_j)) /
/// (2h_j). Cost: 2d evaluations of `pointwise`. Returns (n, scores).
///
/// Errors: [`SandwichError::Density`] when an evaluation fails or a value is not finite;
/// [`SandwichError::ObservationCountChanged`] when the number of values differs from that at
/// `point`.
pub fn scores(
    pointwise: &Pointwise<'_>,
    point: &[f64],
) -> Result<(usize, Vec<f64>), SandwichError> {
    let d = point.len();
    let eval = |x: &[f64]| -> Result<Vec<f64>, SandwichError> {
        let v = pointwise(x).map_err(SandwichError::Density)?;
        if let Some(bad) = v.iter().find(|x| !x.is_finite()) {
            return Err(SandwichError::Density(DensityError::recoverable(format!(
                "a pointwise log-likelihood value is {bad} at a finite-difference point"
            ))));
        }
        Ok(v)
    };
    let n = eval(point)?.len();
    let mut s = vec![0.0; n * d];
    let mut x = point.to_vec();
    for j in 0..d {
        let h = finite_diff_step(point[j]);
        x[j] = point[j] + h;
        let up = eval(&x)?;
        x[j] = point[j] - h;
        let down = eval(&x)?;
        x[j] = point[j];
        for m in [up.len(), down.len()] {
            if m != n {
                return Err(SandwichError::ObservationCountChanged {
                    at_point: n,
                    perturbed: m,
                    coordinate: j,
                });
            }
        }
        for i in 0..n {
            s[i * d + j] = (up[i] - down[i]) / (2.0 * h);
        }
    }
    Ok((n, s))
}

/// The robust covariance Σ B Σ (d × d row-major) at a maximum ζ̂ of the log-likelihood, where
/// Σ = `inverse_neg_hessian` = (−H)⁻¹ (the classical covariance) and
/// B = n/(n−1)·Σ_i (s_i − s̄)(s_i − s̄)ᵀ with the scores s_i of [`scores`] at `point`. This is
/// H⁻¹ B H⁻¹ (the signs cancel) and equals the `arch` package's
/// `inv(H/n) · cov(scores) · inv(H/n) / n` (`np.cov` divides by n − 1). Centring the scores
/// changes nothing at an exact maximum of Σ_i ℓ_i (s̄ = 0) and removes the effect of the
/// optimiser's tolerance (or of priors) otherwise.
///
/// Errors: see [`SandwichError`]; `TooFewObservations` for n < 2.
pub fn robust_covariance(
    pointwise: &Pointwise<'_>,
    point: &[f64],
    inverse_neg_hessian: &[f64],
) -> Result<Vec<f64>, SandwichError> {
    let d = point.len();
    if inverse_neg_hessian.len() != d * d {
        return Err(SandwichError::Shape(format!(
            "a {d}-dimensional point needs a {d}×{d} covariance, got {} entries",
            inverse_neg_hessian.len()
        )));
    }
    let (n, s) = scores(pointwise, point)?;
    if n < 2 {
        return Err(SandwichError::TooFewObservations(n));
    }
    let mut mean = vec![0.0; d];
    for i in 0..n {
        for j in 0..d {
            mean[j] += s[i * d + j] / n as f64;
        }
    }
    let mut b = vec![0.0; d * d];
    for i in 0..n {
        for j in 0..d {
            let cj = s[i * d + j] - mean[j];
            for k in 0..=j {
                b[j * d + k] += cj * (s[i * d + k] - mean[k]);
            }
        }
    }
    let scale = n as f64 / (n - 1) as f64;
    for j in 0..d {
        for k in 0..=j {
            b[j * d + k] *= scale;
            b[k * d + j] = b[j * d + k];
        }
    }
    // Σ B Σ
    let sigma = inverse_neg_hessian;
    let mut sb = vec![0.0; d * d];
    for i in 0..d {
        for k in 0..d {
            let a = sigma[i * d + k];
            for j in 0..d {
                sb[i * d + j] += a * b[k * d + j];
            }
        }
    }
    let mut out = vec![0.0; d * d];
    for i in 0..d {
        for k in 0..d {
            let a = sb[i * d + k];
            for j in 0..d {
                out[i * d + j] += a * sigma[k * d + j];
            }
        }
    }
    // symmetrise against rounding
    for i in 0..d {
        for j in 0..i {
            let m = 0.5 * (out[i * d + j] + out[j * d + i]);
            out[i * d + j] = m;
            out[j * d + i] = m;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Normal location model ℓ_i(μ) = −(y_i − μ)²/2 (unit variance, misspecified when the data
    /// have variance v): H = −n, s_i = y_i − μ, so at μ̂ = ȳ the sandwich is
    /// (1/n)·(n/(n−1))·Σ(y_i − ȳ)²/n = sample variance / n, the classical 1/n times v.
    #[test]
    fn normal_mean_sandwich_is_sample_variance_over_n() {
        let y = [0.3, -1.2, 2.5, 0.7, 1.9, -0.4];
        let n = y.len() as f64;
        let ybar = y.iter().sum::<f64>() / n;
        let pointwise = |t: &[f64]| -> Result<Vec<f64>, DensityError> {
            Ok(y.iter().map(|&yi| -0.5 * (yi - t[0]).powi(2)).collect())
        };
        let cov = robust_covariance(&pointwise, &[ybar], &[1.0 / n]).unwrap();
        let s2 = y.iter().map(|&yi| (yi - ybar).powi(2)).sum::<f64>() / (n - 1.0);
        assert!((cov[0] - s2 / n).abs() < 1e-9, "{} vs {}", cov[0], s2 / n);
    }

    #[test]
    fn changing_observation_count_is_an_error() {
        let pointwise = |t: &[f64]| -> Result<Vec<f64>, DensityError> {
            Ok(vec![0.0; if t[0] > 0.0 { 3 } else { 2 }])
        };
        let e = robust_covariance(&pointwise, &[0.0], &[1.0]).unwrap_err();
        assert!(matches!(
            e,
            SandwichError::ObservationCountChanged {
                at_point: 2,
                perturbed: 3,
                coordinate: 0
            }
        ));
        let one = |_: &[f64]| -> Result<Vec<f64>, DensityError> { Ok(vec![1.0]) };
        assert_eq!(
            robust_covariance(&one, &[0.0], &[1.0]).unwrap_err(),
            SandwichError::TooFewObservations(1)
        );
    }
}
