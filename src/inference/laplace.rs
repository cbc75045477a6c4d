//! Laplace approximation: a Gaussian at the mode of the log density with covariance (−H)⁻¹, H the
//! Hessian there (on the unconstrained scale).

use faer::linalg::solvers::DenseSolveCore;
use faer::{Mat, Side};
use rand_distr::{Distribution, StandardNormal};

use super::density::LogDensity;
use super::hessian::{HessianError, hessian};
use super::optimize::{OptimizeError, OptimizeResult, OptimizeSettings, optimize};
use super::rng::StreamRng;

/// Settings of [`laplace`]: those of the mode search ([`OptimizeSettings`], Stan's defaults).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LaplaceSettings {
    /// Settings of the L-BFGS mode search.
    pub optimize: OptimizeSettings,
}

/// A Laplace approximation N(ζ̂, Σ) with Σ = (−H(ζ̂))⁻¹, on the unconstrained scale.
#[derive(Clone, Debug, PartialEq)]
pub struct LaplaceFit {
    /// The mode ζ̂ (length d).
    pub mode: Vec<f64>,
    /// Σ = (−H)⁻¹, d×d row-major (entry (i, j) at `i*d + j`).
    pub covariance: Vec<f64>,
    /// L(ζ̂).
    pub log_density_at_mode: f64,
    /// The mode search that produced `mode` (iterations, stopping criterion).
    pub optimization: OptimizeResult,
    /// Lower Cholesky factor C of Σ = C·Cᵀ, row-major, used by [`LaplaceFit::sample`].
    chol: Vec<f64>,
}

/// Why [`laplace`] failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum LaplaceError {
    /// The mode search failed.
    #[error(transparent)]
    Optimize(#[from] OptimizeError),
    /// The Hessian could not be computed at the mode.
    #[error(transparent)]
    Hessian(#[from] HessianError),
    /// −H is not positive definite at the point found.
    #[error(
        "the Hessian of the log density at the point found is not negative definite: the point \
         is not a maximum, or the posterior is improper (flat or unbounded) in some direction"
    )]
    NotMaximum,
}

fn to_mat(v: &[f64], d: usize) -> Mat<f64> {
    Mat::from_fn(d, d, |i, j| v[i * d + j])
}

fn from_mat(m: &Mat<f64>) -> Vec<f64> {
    let d = m.nrows();
    (0..d * d).map(|k| m[(k / d, k % d)]).collect()
}

/// Fits the Laplace approximation: [`optimize`] from `init` (length d), then the finite-difference
/// [`hessian`] at the mode, then Σ = (−H)⁻¹ through a Cholesky factorisation of −H (faer).
///
/// As with [`optimize`], the density decides whether the Jacobian adjustment is included. The
/// approximation is built even when the mode search stopped without converging (iteration limit,
/// line-search failure at the optimum); `optimization` records how it ended.
///
/// Errors: [`LaplaceError::Optimize`], [`LaplaceError::Hessian`], and
/// [`LaplaceError::NotMaximum`] when −H is not positive definite.
pub fn laplace(
    density: &dyn LogDensity,
    init: &[f64],
    settings: &LaplaceSettings,
) -> Result<LaplaceFit, LaplaceError> {
    let opt = optimize(density, init, &settings.optimize)?;
    let d = opt.point.len();
    let h = hessian(density, &opt.point)?;
    let neg_h: Vec<f64> = h.iter().map(|v| -v).collect();
    let llt = to_mat(&neg_h, d)
        .llt(Side::Lower)
        .map_err(|_| LaplaceError::NotMaximum)?;
    let cov = llt.inverse();
    // symmetrise against rounding before factorising again
    let cov = Mat::from_fn(d, d, |i, j| 0.5 * (cov[(i, j)] + cov[(j, i)]));
    let chol_llt = cov.llt(Side::Lower).map_err(|_| LaplaceError::NotMaximum)?;
    let l = chol_llt.L();
    let chol: Vec<f64> = (0..d * d)
        .map(|k| {
            let (i, j) = (k / d, k % d);
            if j <= i { l[(i, j)] } else { 0.0 }
        })
        .collect();
    Ok(LaplaceFit {
        mode: opt.point.clone(),
        covariance: from_mat(&cov),
        log_density_at_mode: opt.log_density,
        optimization: opt,
        chol,
    })
}

impl LaplaceFit {
    /// Dimension d.
    pub fn dim(&self) -> usize {
        self.mode.len()
    }

    /// Standard errors √Σ_ii (length d), on the unconstrained scale.
    pub fn standard_errors(&self) -> Vec<f64> {
        let d = self.dim();
        (0..d).map(|i| self.covariance[i * d + i].sqrt()).collect()
    }

    /// `n` draws ζ = ζ̂ + C·z, z ~ N(0, I), C the lower Cholesky factor of Σ; each of length d.
    pub fn sample(&self, n: usize, rng: &mut StreamRng) -> Vec<Vec<f64>> {
        let d = self.dim();
        (0..n)
            .map(|_| {
                let z: Vec<f64> = (0..d).map(|_| StandardNormal.sample(rng)).collect();
                (0..d)
                    .map(|i| {
                        self.mode[i] + (0..=i).map(|j| self.chol[i * d + j] * z[j]).sum::<f64>()
                    })
                    .collect()
            })
            .collect()
    }

    /// log N(ζ; ζ̂, Σ), the normalised log density of the approximation at `zeta` (length d).
    pub fn log_q(&self, zeta: &[f64]) -> f64 {
        let d = self.dim();
        // solve C·w = ζ − ζ̂ by forward substitution; log det Σ = 2 Σ log C_ii
        let mut w = vec![0.0; d];
        let mut logdet = 0.0;
        for i in 0..d {
            let row = &self.chol[i * d..i * d + i];
            let r =
                zeta[i] - self.mode[i] - row.iter().zip(&w[..i]).map(|(c, v)| c * v).sum::<f64>();
            w[i] = r / self.chol[i * d + i];
            logdet += self.chol[i * d + i].ln();
        }
        -0.5 * w.iter().map(|v| v * v).sum::<f64>()
            - logdet
            - 0.5 * d as f64 * (2.0 * std::f64::consts::PI).ln()
    }
}
