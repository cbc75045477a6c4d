//! Hessian of the log density by central finite differences of its gradient, symmetrised
//! (the scheme of Stan Math's `internal::finite_diff_hessian_auto`).

use super::density::{DensityError, LogDensity};

/// Why [`hessian`] failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum HessianError {
    /// `point` does not have length `density.dim()`.
    #[error("point has length {got}, but the model has {expected} unconstrained parameters")]
    DimensionMismatch {
        /// Model dimension d.
        expected: usize,
        /// Length of the given point.
        got: usize,
    },
    /// The gradient could not be evaluated, or was not finite, at a finite-difference point.
    #[error("cannot compute the Hessian: {0}")]
    Density(DensityError),
}

/// Finite-difference step for coordinate value `x`: ε^{1/3}·max(1, |x|) ≈ 6.1e-6·max(1, |x|), the
/// step that balances truncation and rounding error of a central difference (Nocedal & Wright
/// 2006, §8.1, central-difference formula and the u^{1/3} step discussed after it; Stan Math
/// `finite_diff_stepsize`).
pub fn finite_diff_step(x: f64) -> f64 {
    f64::EPSILON.cbrt() * x.abs().max(1.0)
}

/// The d×d Hessian ∂²L/∂ζ_i∂ζ_j at `point`, row-major (entry (i, j) at `i*d + j`), symmetric.
///
/// Column j is the central difference of the gradient along e_j,
/// (∇L(ζ + h_j e_j) − ∇L(ζ − h_j e_j)) / (2h_j) with h_j = [`finite_diff_step`]`(ζ_j)`, and the
/// result is symmetrised, H ← (H + Hᵀ)/2 (as Stan Math's `internal::finite_diff_hessian_auto`).
/// Cost: 2d gradient evaluations. Error per entry about h²/6·|∂⁴L| + ε·|∇L|/h, i.e.
/// ≈ 6e-12·|∂⁴L| + 4e-11·|∇L| for |ζ_j| ≤ 1; for quadratic L only the rounding term remains.
///
/// Errors: [`HessianError::DimensionMismatch`]; [`HessianError::Density`] when a gradient
/// evaluation fails or is not finite.
pub fn hessian(density: &dyn LogDensity, point: &[f64]) -> Result<Vec<f64>, HessianError> {
    let d = density.dim();
    if point.len() != d {
        return Err(HessianError::DimensionMismatch {
            expected: d,
            got: point.len(),
        });
    }
    let grad_at = |x: &[f64]| -> Result<Vec<f64>, HessianError> {
        let mut g = vec![0.0; d];
        let lp = density
            .log_density_grad(x, &mut g)
            .map_err(HessianError::Density)?;
        if !lp.is_finite() || g.iter().any(|v| !v.is_finite()) {
            return Err(HessianError::Density(DensityError::recoverable(format!(
                "log density {lp} or its gradient is not finite at a finite-difference point"
            ))));
        }
        Ok(g)
    };
    let mut h = vec![0.0; d * d];
    let mut x = point.to_vec();
    for j in 0..d {
        let step = finite_diff_step(point[j]);
        x[j] = point[j] + step;
        let gp = grad_at(&x)?;
        x[j] = point[j] - step;
        let gm = grad_at(&x)?;
        x[j] = point[j];
        for i in 0..d {
            h[i * d + j] = (gp[i] - gm[i]) / (2.0 * step);
        }
    }
    for i in 0..d {
        for j in 0..i {
            let s = 0.5 * (h[i * d + j] + h[j * d + i]);
            h[i * d + j] = s;
            h[j * d + i] = s;
        }
    }
    Ok(h)
}
