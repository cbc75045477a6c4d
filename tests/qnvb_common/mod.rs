//! Closed-form targets shared by the QNVB, optimisation and Laplace tests.
#![allow(dead_code)]

use bayesc::inference::rng::stream;
use bayesc::inference::{DensityError, LogDensity};
use rand::RngExt;
use rand_distr::{Distribution, StandardNormal};

/// Gaussian L(ζ) = −½(ζ−m)ᵀΛ(ζ−m) with precision Λ (d×d row-major).
pub struct Gaussian {
    pub mean: Vec<f64>,
    pub precision: Vec<f64>,
}

impl Gaussian {
    pub fn diagonal(mean: Vec<f64>, var: &[f64]) -> Self {
        let d = mean.len();
        let mut p = vec![0.0; d * d];
        for i in 0..d {
            p[i * d + i] = 1.0 / var[i];
        }
        Gaussian { mean, precision: p }
    }

    /// 2-d with unit variances and correlation ρ.
    pub fn correlated2(rho: f64) -> Self {
        let det = 1.0 - rho * rho;
        Gaussian {
            mean: vec![0.0, 0.0],
            precision: vec![1.0 / det, -rho / det, -rho / det, 1.0 / det],
        }
    }
}

impl LogDensity for Gaussian {
    fn dim(&self) -> usize {
        self.mean.len()
    }
    fn log_density(&self, theta: &[f64]) -> Result<f64, DensityError> {
        let mut g = vec![0.0; self.dim()];
        self.log_density_grad(theta, &mut g)
    }
    fn log_density_grad(&self, theta: &[f64], grad: &mut [f64]) -> Result<f64, DensityError> {
        let d = self.dim();
        let r: Vec<f64> = theta.iter().zip(&self.mean).map(|(a, b)| a - b).collect();
        let mut lp = 0.0;
        for i in 0..d {
            let gi: f64 = (0..d).map(|j| self.precision[i * d + j] * r[j]).sum();
            grad[i] = -gi;
            lp -= 0.5 * r[i] * gi;
        }
        Ok(lp)
    }
}

/// Logistic regression y_i ~ Bernoulli(logit⁻¹(x_iᵀβ)), with an optional N(0, prior_sd²) prior
/// on each coefficient (None: the log-likelihood alone, for the MLE).
pub struct Logistic {
    pub x: Vec<Vec<f64>>,
    pub y: Vec<f64>,
    pub prior_sd: Option<f64>,
}

impl Logistic {
    /// n cases, d = 4 coefficients (intercept + 3 standard-normal covariates), fixed seed.
    pub fn simulate(n: usize, seed: u64, prior_sd: Option<f64>) -> Self {
        let beta = [0.5, -1.0, 0.8, 0.3];
        let mut rng = stream(seed, 0);
        let mut x = Vec::with_capacity(n);
        let mut y = Vec::with_capacity(n);
        for _ in 0..n {
            let mut row = vec![1.0];
            for _ in 0..3 {
                row.push(StandardNormal.sample(&mut rng));
            }
            let eta: f64 = row.iter().zip(&beta).map(|(a, b)| a * b).sum();
            let p = 1.0 / (1.0 + (-eta).exp());
            let u: f64 = rng.random();
            y.push(if u < p { 1.0 } else { 0.0 });
            x.push(row);
        }
        Logistic { x, y, prior_sd }
    }

    /// Observed = expected information −∇²L(β) = Σ p(1−p) x xᵀ (+ I/prior_sd²), d×d row-major.
    pub fn information(&self, beta: &[f64]) -> Vec<f64> {
        let d = beta.len();
        let mut h = vec![0.0; d * d];
        for row in &self.x {
            let eta: f64 = row.iter().zip(beta).map(|(a, b)| a * b).sum();
            let p = 1.0 / (1.0 + (-eta).exp());
            for i in 0..d {
                for j in 0..d {
                    h[i * d + j] += p * (1.0 - p) * row[i] * row[j];
                }
            }
        }
        if let Some(s) = self.prior_sd {
            for i in 0..d {
                h[i * d + i] += 1.0 / (s * s);
            }
        }
        h
    }
}

fn log1p_exp(x: f64) -> f64 {
    if x > 0.0 {
        x + (-x).exp().ln_1p()
    } else {
        x.exp().ln_1p()
    }
}

impl LogDensity for Logistic {
    fn dim(&self) -> usize {
        4
    }
    fn log_density(&self, theta: &[f64]) -> Result<f64, DensityError> {
        let mut g = vec![0.0; 4];
        self.log_density_grad(theta, &mut g)
    }
    fn log_density_grad(&self, beta: &[f64], grad: &mut [f64]) -> Result<f64, DensityError> {
        grad.iter_mut().for_each(|g| *g = 0.0);
        let mut lp = 0.0;
        for (row, &y) in self.x.iter().zip(&self.y) {
            let eta: f64 = row.iter().zip(beta).map(|(a, b)| a * b).sum();
            lp += y * eta - log1p_exp(eta);
            let p = 1.0 / (1.0 + (-eta).exp());
            for (g, xi) in grad.iter_mut().zip(row) {
                *g += (y - p) * xi;
            }
        }
        if let Some(s) = self.prior_sd {
            for (g, b) in grad.iter_mut().zip(beta) {
                lp -= 0.5 * b * b / (s * s);
                *g -= b / (s * s);
            }
        }
        Ok(lp)
    }
}

/// Solves A·x = b for small dense symmetric positive-definite A (row-major) by Gaussian
/// elimination with partial pivoting.
pub fn solve(a: &[f64], b: &[f64]) -> Vec<f64> {
    let d = b.len();
    let mut m: Vec<Vec<f64>> = (0..d)
        .map(|i| {
            let mut r = a[i * d..(i + 1) * d].to_vec();
            r.push(b[i]);
            r
        })
        .collect();
    for c in 0..d {
        let p = (c..d)
            .max_by(|&i, &j| m[i][c].abs().total_cmp(&m[j][c].abs()))
            .unwrap();
        m.swap(c, p);
        for r in c + 1..d {
            let f = m[r][c] / m[c][c];
            for k in c..=d {
                m[r][k] -= f * m[c][k];
            }
        }
    }
    let mut x = vec![0.0; d];
    for i in (0..d).rev() {
        let s: f64 = (i + 1..d).map(|k| m[i][k] * x[k]).sum();
        x[i] = (m[i][d] - s) / m[i][i];
    }
    x
}

/// Inverse of a small dense matrix (row-major), column by column with [`solve`].
pub fn inverse(a: &[f64], d: usize) -> Vec<f64> {
    let mut inv = vec![0.0; d * d];
    for j in 0..d {
        let mut e = vec![0.0; d];
        e[j] = 1.0;
        let col = solve(a, &e);
        for i in 0..d {
            inv[i * d + j] = col[i];
        }
    }
    inv
}

/// Newton's method for the mode of a logistic regression (exact Hessian), to machine precision.
pub fn newton_mode(model: &Logistic) -> Vec<f64> {
    let mut beta = vec![0.0; 4];
    let mut g = vec![0.0; 4];
    for _ in 0..50 {
        model.log_density_grad(&beta, &mut g).unwrap();
        let step = solve(&model.information(&beta), &g);
        beta.iter_mut().zip(&step).for_each(|(b, s)| *b += s);
        if step.iter().map(|s| s.abs()).fold(0.0, f64::max) < 1e-15 {
            break;
        }
    }
    beta
}
