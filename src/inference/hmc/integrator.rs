//! Euclidean metrics (diagonal and dense) and the leapfrog integrator on phase-space points
//! (`specs/nuts.md` §1 and §7).

use crate::inference::density::{DensityError, LogDensity};
use crate::inference::rng::StreamRng;
use faer::{Mat, Side};
use rand::RngExt;
use rand_distr::StandardNormal;

/// A point of phase space with its cached log density L(q) and gradient ∇L(q), so that each
/// leapfrog step costs one gradient evaluation (`specs/nuts.md` §1). All vectors have length d.
#[derive(Clone, Debug)]
pub struct PhasePoint {
    /// Position q (unconstrained parameters).
    pub q: Vec<f64>,
    /// Momentum p.
    pub p: Vec<f64>,
    /// ∇L(q). Unspecified when `log_density` is −∞ after a failed evaluation.
    pub grad: Vec<f64>,
    /// L(q); −∞ if it could not be evaluated (recoverable error, NaN).
    pub log_density: f64,
}

impl PhasePoint {
    /// A zero point of dimension `dim` with L = −∞.
    pub fn new(dim: usize) -> Self {
        PhasePoint {
            q: vec![0.0; dim],
            p: vec![0.0; dim],
            grad: vec![0.0; dim],
            log_density: f64::NEG_INFINITY,
        }
    }

    /// Copy `other` into `self` without allocating.
    pub fn assign(&mut self, other: &PhasePoint) {
        self.q.copy_from_slice(&other.q);
        self.p.copy_from_slice(&other.p);
        self.grad.copy_from_slice(&other.grad);
        self.log_density = other.log_density;
    }

    /// Evaluate L and ∇L at the current `q`. A recoverable error or a NaN gives L = −∞;
    /// an unrecoverable error is returned.
    pub fn evaluate(&mut self, density: &dyn LogDensity) -> Result<(), DensityError> {
        self.log_density = match density.log_density_grad(&self.q, &mut self.grad) {
            Ok(lp) if lp.is_nan() => f64::NEG_INFINITY,
            Ok(lp) => lp,
            Err(e) if e.recoverable => f64::NEG_INFINITY,
            Err(e) => return Err(e),
        };
        Ok(())
    }
}

/// The inverse metric M⁻¹ of the Euclidean kinetic energy K(p) = ½ pᵀM⁻¹p (`specs/nuts.md` §1, §7).
#[derive(Clone, Debug)]
pub enum Metric {
    /// Diagonal: `inv[i]` = m_i, estimates of the posterior variances; `sqrt_inv[i]` = √m_i.
    Diag {
        /// m = diag(M⁻¹), length d, all > 0.
        inv: Vec<f64>,
        /// √m, cached for momentum draws.
        sqrt_inv: Vec<f64>,
    },
    /// Dense: Σ = M⁻¹ (row-major d × d) and its lower Cholesky factor L (LLᵀ = Σ, row-major).
    Dense {
        /// d.
        dim: usize,
        /// Σ, an estimate of the posterior covariance.
        sigma: Vec<f64>,
        /// Lower-triangular L with LLᵀ = Σ.
        chol: Vec<f64>,
    },
}

/// Lower Cholesky factor of the symmetric positive-definite row-major `dim × dim` matrix `a`,
/// computed with faer; `None` if `a` is not positive-definite or not finite.
pub fn cholesky_lower(a: &[f64], dim: usize) -> Option<Vec<f64>> {
    if a.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let m = Mat::<f64>::from_fn(dim, dim, |i, j| a[i * dim + j]);
    let llt = m.llt(Side::Lower).ok()?;
    let l = llt.L();
    let mut out = vec![0.0; dim * dim];
    for i in 0..dim {
        for j in 0..=i {
            out[i * dim + j] = l[(i, j)];
        }
    }
    out.iter().all(|v| v.is_finite()).then_some(out)
}

impl Metric {
    /// The unit diagonal metric m = 1 (`specs/nuts.md` §3).
    pub fn unit_diag(dim: usize) -> Self {
        Metric::Diag {
            inv: vec![1.0; dim],
            sqrt_inv: vec![1.0; dim],
        }
    }

    /// The unit dense metric Σ = I.
    pub fn unit_dense(dim: usize) -> Self {
        let mut sigma = vec![0.0; dim * dim];
        for i in 0..dim {
            sigma[i * dim + i] = 1.0;
        }
        Metric::Dense {
            dim,
            chol: sigma.clone(),
            sigma,
        }
    }

    /// Dimension d.
    pub fn dim(&self) -> usize {
        match self {
            Metric::Diag { inv, .. } => inv.len(),
            Metric::Dense { dim, .. } => *dim,
        }
    }

    /// Replace the diagonal inverse metric by `var` (length d, positive).
    /// Panics if `self` is dense (internal invariant: the kind never changes during a run).
    pub fn set_diag(&mut self, var: &[f64]) {
        match self {
            Metric::Diag { inv, sqrt_inv } => {
                inv.copy_from_slice(var);
                for (s, v) in sqrt_inv.iter_mut().zip(var) {
                    *s = v.sqrt();
                }
            }
            Metric::Dense { .. } => panic!("set_diag on a dense metric: the metric kind is fixed"),
        }
    }

    /// Replace the dense inverse metric by `cov` (row-major d × d). Returns false, leaving the
    /// metric unchanged, if `cov` is not positive-definite. Panics if `self` is diagonal.
    pub fn set_dense(&mut self, cov: &[f64]) -> bool {
        match self {
            Metric::Dense { dim, sigma, chol } => match cholesky_lower(cov, *dim) {
                Some(l) => {
                    sigma.copy_from_slice(cov);
                    *chol = l;
                    true
                }
                None => false,
            },
            Metric::Diag { .. } => panic!("set_dense on a diagonal metric: the kind is fixed"),
        }
    }

    /// The inverse metric as stored: the diagonal (length d) or Σ (row-major d × d).
    pub fn inverse_metric(&self) -> &[f64] {
        match self {
            Metric::Diag { inv, .. } => inv,
            Metric::Dense { sigma, .. } => sigma,
        }
    }

    /// Draw p ~ N(0, M): p_i = z_i/√m_i (diagonal), or p = L⁻ᵀz (dense, so Cov(p) = Σ⁻¹).
    pub fn sample_momentum(&self, rng: &mut StreamRng, p: &mut [f64]) {
        match self {
            Metric::Diag { sqrt_inv, .. } => {
                for (pi, s) in p.iter_mut().zip(sqrt_inv) {
                    let z: f64 = rng.sample(StandardNormal);
                    *pi = z / s;
                }
            }
            Metric::Dense { dim, chol, .. } => {
                let d = *dim;
                for pi in p.iter_mut() {
                    *pi = rng.sample(StandardNormal);
                }
                // Back substitution Lᵀp = z: p_i = (z_i − Σ_{j>i} L_{ji} p_j) / L_{ii}.
                for i in (0..d).rev() {
                    let mut s = p[i];
                    for j in i + 1..d {
                        s -= chol[j * d + i] * p[j];
                    }
                    p[i] = s / chol[i * d + i];
                }
            }
        }
    }

    /// The velocity p♯ = M⁻¹p written into `out` (`specs/nuts.md` §1).
    #[inline]
    pub fn sharp(&self, p: &[f64], out: &mut [f64]) {
        match self {
            Metric::Diag { inv, .. } => {
                for ((o, pi), m) in out.iter_mut().zip(p).zip(inv) {
                    *o = m * pi;
                }
            }
            Metric::Dense { dim, sigma, .. } => {
                for (i, o) in out.iter_mut().enumerate() {
                    *o = dot(&sigma[i * dim..(i + 1) * dim], p);
                }
            }
        }
    }
}

/// Σ_i a_i·b_i.
#[inline]
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Kinetic energy K = ½·p·p♯ given p and its sharp.
#[inline]
pub fn kinetic(p: &[f64], p_sharp: &[f64]) -> f64 {
    0.5 * dot(p, p_sharp)
}

/// The Hamiltonian H = −L(q) + ½·p·p♯ with NaN mapped to +∞ (`specs/nuts.md` §1, §2.4).
#[inline]
pub fn hamiltonian(log_density: f64, p: &[f64], p_sharp: &[f64]) -> f64 {
    let h = -log_density + kinetic(p, p_sharp);
    if h.is_nan() { f64::INFINITY } else { h }
}

/// One leapfrog step with signed step size `e` (`specs/nuts.md` §1):
/// p ← p + (e/2)∇L(q); q ← q + e·M⁻¹p; recompute L, ∇L; p ← p + (e/2)∇L(q).
///
/// `velocity` is scratch of length d. A recoverable density error leaves L = −∞ (so H = +∞, a
/// divergence); an unrecoverable one is returned. No allocation.
#[inline]
pub fn leapfrog(
    density: &dyn LogDensity,
    metric: &Metric,
    z: &mut PhasePoint,
    e: f64,
    velocity: &mut [f64],
) -> Result<(), DensityError> {
    let half = 0.5 * e;
    for (p, g) in z.p.iter_mut().zip(&z.grad) {
        *p += half * g;
    }
    metric.sharp(&z.p, velocity);
    for (q, v) in z.q.iter_mut().zip(velocity.iter()) {
        *q += e * v;
    }
    z.evaluate(density)?;
    for (p, g) in z.p.iter_mut().zip(&z.grad) {
        *p += half * g;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inference::rng::stream;

    /// Independent normals with standard deviations `sd`.
    struct Gauss {
        sd: Vec<f64>,
    }
    impl LogDensity for Gauss {
        fn dim(&self) -> usize {
            self.sd.len()
        }
        fn log_density(&self, x: &[f64]) -> Result<f64, DensityError> {
            Ok(x.iter()
                .zip(&self.sd)
                .map(|(x, s)| -0.5 * (x / s).powi(2))
                .sum())
        }
        fn log_density_grad(&self, x: &[f64], g: &mut [f64]) -> Result<f64, DensityError> {
            for ((gi, xi), s) in g.iter_mut().zip(x).zip(&self.sd) {
                *gi = -xi / (s * s);
            }
            self.log_density(x)
        }
    }

    /// `specs/nuts.md` §8.1: n steps forward, negate p, n steps, negate p returns to the start.
    #[test]
    fn leapfrog_is_reversible() {
        let target = Gauss {
            sd: vec![0.5, 1.0, 3.0],
        };
        for metric in [Metric::unit_diag(3), {
            let mut m = Metric::unit_dense(3);
            assert!(m.set_dense(&[1.0, 0.3, 0.0, 0.3, 2.0, 0.1, 0.0, 0.1, 0.5]));
            m
        }] {
            let mut z = PhasePoint::new(3);
            z.q.copy_from_slice(&[0.3, -1.2, 2.0]);
            z.evaluate(&target).unwrap();
            metric.sample_momentum(&mut stream(3, 1), &mut z.p);
            let start = z.clone();
            let mut v = vec![0.0; 3];
            for _ in 0..25 {
                leapfrog(&target, &metric, &mut z, 0.1, &mut v).unwrap();
            }
            z.p.iter_mut().for_each(|p| *p = -*p);
            for _ in 0..25 {
                leapfrog(&target, &metric, &mut z, 0.1, &mut v).unwrap();
            }
            for i in 0..3 {
                assert!((z.q[i] - start.q[i]).abs() < 1e-10 * (1.0 + start.q[i].abs()));
                assert!((-z.p[i] - start.p[i]).abs() < 1e-10 * (1.0 + start.p[i].abs()));
            }
        }
    }

    /// `specs/nuts.md` §8.1: on a standard Gaussian the energy error of a trajectory of fixed
    /// length is O(ε²): halving ε divides it by about 4.
    #[test]
    fn energy_error_is_second_order() {
        let target = Gauss { sd: vec![1.0; 2] };
        let metric = Metric::unit_diag(2);
        let err = |eps: f64| {
            let mut z = PhasePoint::new(2);
            z.q.copy_from_slice(&[1.0, -0.5]);
            z.p.copy_from_slice(&[0.3, 0.8]);
            z.evaluate(&target).unwrap();
            let mut s = vec![0.0; 2];
            metric.sharp(&z.p, &mut s);
            let h0 = hamiltonian(z.log_density, &z.p, &s);
            let mut v = vec![0.0; 2];
            let n = (1.3 / eps).round() as usize;
            for _ in 0..n {
                leapfrog(&target, &metric, &mut z, eps, &mut v).unwrap();
            }
            metric.sharp(&z.p, &mut s);
            (hamiltonian(z.log_density, &z.p, &s) - h0).abs()
        };
        let ratio = err(0.1) / err(0.05);
        assert!((3.5..4.5).contains(&ratio), "ratio {ratio}");
    }

    /// Dense momentum draws have covariance Σ⁻¹ and p♯ = Σp.
    #[test]
    fn dense_momentum_covariance_is_inverse_sigma() {
        let mut m = Metric::unit_dense(2);
        assert!(m.set_dense(&[2.0, 0.6, 0.6, 0.5]));
        let det = 2.0 * 0.5 - 0.36;
        let inv = [0.5 / det, -0.6 / det, 2.0 / det];
        let mut rng = stream(11, 1);
        let n = 200_000;
        let (mut s00, mut s01, mut s11) = (0.0, 0.0, 0.0);
        let mut p = [0.0; 2];
        for _ in 0..n {
            m.sample_momentum(&mut rng, &mut p);
            s00 += p[0] * p[0];
            s01 += p[0] * p[1];
            s11 += p[1] * p[1];
        }
        let n = n as f64;
        assert!((s00 / n - inv[0]).abs() < 0.02 * inv[0]);
        assert!((s01 / n - inv[1]).abs() < 0.02 * inv[1].abs());
        assert!((s11 / n - inv[2]).abs() < 0.02 * inv[2]);
        let mut out = [0.0; 2];
        m.sharp(&[1.0, -1.0], &mut out);
        assert!((out[0] - 1.4).abs() < 1e-12 && (out[1] - 0.1).abs() < 1e-12);
        assert!(cholesky_lower(&[1.0, 2.0, 2.0, 1.0], 2).is_none());
    }
}
