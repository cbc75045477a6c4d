//! The whitening of draws of a Gaussian q by its covariance's factor, for the Newton step of
//! the mean of [`super::stationarity::newton_step_in`] (standard change of variables).

/// How [`super::stationarity::newton_step_in`] whitens the draws of q = N(μ, Σ):
/// ε = Lᵀ(ζ − μ) and w = L⁻¹∇log p, with P = Σ⁻¹ = L Lᵀ, so that ε ~ N(0, I) and w is the
/// gradient in ε (the standard change of variables ζ = μ + L⁻ᵀε).
#[derive(Clone, Copy, Debug)]
pub enum Whitening<'a> {
    /// Mean-field q: its marginal sds σ (length d), L = diag(1/σ).
    Diagonal(&'a [f64]),
    /// Full-covariance q: the lower Cholesky factor L of its precision, d × d row-major.
    Full(&'a [f64]),
}

impl Whitening<'_> {
    /// Lᵀ v (length d): ε of a draw ζ with v = ζ − μ.
    pub(super) fn point(&self, v: &[f64]) -> Vec<f64> {
        let d = v.len();
        match self {
            Whitening::Diagonal(sd) => (0..d).map(|j| v[j] / sd[j]).collect(),
            Whitening::Full(l) => (0..d)
                .map(|i| (i..d).map(|k| l[k * d + i] * v[k]).sum())
                .collect(),
        }
    }

    /// L⁻¹ g (length d): the gradient in ε, by forward substitution.
    pub(super) fn gradient(&self, g: &[f64]) -> Vec<f64> {
        let d = g.len();
        match self {
            Whitening::Diagonal(sd) => (0..d).map(|j| g[j] * sd[j]).collect(),
            Whitening::Full(l) => {
                let mut x = vec![0.0; d];
                for i in 0..d {
                    let s: f64 = (0..i).map(|k| l[i * d + k] * x[k]).sum();
                    x[i] = (g[i] - s) / l[i * d + i];
                }
                x
            }
        }
    }

    /// L⁻ᵀ v (length d): a step in ε as a step of ζ, by back substitution.
    pub(super) fn step(&self, v: &[f64]) -> Vec<f64> {
        let d = v.len();
        match self {
            Whitening::Diagonal(sd) => (0..d).map(|j| v[j] * sd[j]).collect(),
            Whitening::Full(l) => {
                let mut x = vec![0.0; d];
                for i in (0..d).rev() {
                    let s: f64 = (i + 1..d).map(|k| l[k * d + i] * x[k]).sum();
                    x[i] = (v[i] - s) / l[i * d + i];
                }
                x
            }
        }
    }
}
