//! Full-covariance Gaussian family q = N(μ, P⁻¹) for QBVI (`specs/qbvi.md` §3, §8.1, §8.3).

use faer::linalg::triangular_solve::{
    solve_lower_triangular_in_place, solve_upper_triangular_in_place,
};
use faer::{Mat, MatMut, Par, Side};

use super::family::{Family, HALF_LN_2PI};
use super::prior::ConjugatePrior;

/// The state (μ, P) of a full-covariance Gaussian on ζ, with the lower Cholesky factor L of the
/// precision, P = L·Lᵀ (§3.4).
#[derive(Clone, Debug)]
pub(crate) struct FullGaussian {
    d: usize,
    mean: Vec<f64>,
    precision: Mat<f64>,
    chol: Mat<f64>,
    /// Σ_i log L_ii = ½·log det P.
    half_log_det: f64,
    /// Scratch: the symmetric direction G_B of the last step, and L⁻¹·G_B.
    g_b: Mat<f64>,
    w: Mat<f64>,
}

/// Lower Cholesky factor of a symmetric matrix, or `None` if it is not positive definite or
/// has a non-finite entry.
pub(crate) fn cholesky_lower(a: &Mat<f64>) -> Option<Mat<f64>> {
    let d = a.nrows();
    for j in 0..d {
        for i in 0..d {
            if !a[(i, j)].is_finite() {
                return None;
            }
        }
    }
    let llt = a.llt(Side::Lower).ok()?;
    let l = llt.L().to_owned();
    for i in 0..d {
        if !(l[(i, i)] > 0.0 && l[(i, i)].is_finite()) {
            return None;
        }
    }
    Some(l)
}

impl FullGaussian {
    /// N(mean, variance·I). `variance` must be positive and finite (checked by the caller).
    pub(crate) fn isotropic(mean: &[f64], variance: f64) -> Self {
        let d = mean.len();
        let precision = Mat::from_fn(d, d, |i, j| if i == j { 1.0 / variance } else { 0.0 });
        let chol = cholesky_lower(&precision)
            .expect("a positive multiple of the identity is positive definite");
        let mut q = FullGaussian {
            d,
            mean: mean.to_vec(),
            precision,
            chol,
            half_log_det: 0.0,
            g_b: Mat::zeros(d, d),
            w: Mat::zeros(d, d),
        };
        q.half_log_det = q.compute_half_log_det();
        q
    }

    /// N(mean, P⁻¹) from a d×d row-major precision P (symmetrised); `None` if P is not
    /// positive definite.
    pub(crate) fn from_precision(mean: &[f64], precision: &[f64]) -> Option<Self> {
        let d = mean.len();
        let p = Mat::from_fn(d, d, |i, j| {
            0.5 * (precision[i * d + j] + precision[j * d + i])
        });
        let chol = cholesky_lower(&p)?;
        let mut q = FullGaussian {
            d,
            mean: mean.to_vec(),
            precision: p,
            chol,
            half_log_det: 0.0,
            g_b: Mat::zeros(d, d),
            w: Mat::zeros(d, d),
        };
        q.half_log_det = q.compute_half_log_det();
        Some(q)
    }

    fn compute_half_log_det(&self) -> f64 {
        (0..self.d).map(|i| self.chol[(i, i)].ln()).sum()
    }

    /// The precision P as a d×d row-major vector.
    pub(crate) fn precision_row_major(&self) -> Vec<f64> {
        let d = self.d;
        (0..d * d).map(|k| self.precision[(k / d, k % d)]).collect()
    }

    /// The covariance Σ = P⁻¹ as a d×d row-major vector, from two triangular solves.
    pub(crate) fn covariance_row_major(&self) -> Vec<f64> {
        let d = self.d;
        let mut x = Mat::<f64>::identity(d, d);
        solve_lower_triangular_in_place(self.chol.as_ref(), x.as_mut(), Par::Seq);
        solve_upper_triangular_in_place(self.chol.transpose(), x.as_mut(), Par::Seq);
        (0..d * d)
            .map(|k| {
                let (i, j) = (k / d, k % d);
                0.5 * (x[(i, j)] + x[(j, i)])
            })
            .collect()
    }

    /// P as a matrix.
    pub(crate) fn precision_mat(&self) -> &Mat<f64> {
        &self.precision
    }

    /// Σ = P⁻¹ as a (symmetrised) matrix.
    pub(crate) fn covariance_mat(&self) -> Mat<f64> {
        let d = self.d;
        let c = self.covariance_row_major();
        Mat::from_fn(d, d, |i, j| c[i * d + j])
    }

    /// The lower Cholesky factor L of P (P = L·Lᵀ) as a d×d row-major vector.
    pub(crate) fn chol_row_major(&self) -> Vec<f64> {
        let d = self.d;
        (0..d * d).map(|k| self.chol[(k / d, k % d)]).collect()
    }
}

impl Family for FullGaussian {
    fn dim(&self) -> usize {
        self.d
    }

    fn n_directions(&self) -> usize {
        self.d + self.d * (self.d + 1) / 2
    }

    fn mean(&self) -> &[f64] {
        &self.mean
    }

    /// ζ = μ + L⁻ᵀε, v = P(ζ − μ) = L·ε, log q = −(d/2)·log 2π + ½·log det P − ½‖ε‖² (§3.4);
    /// directions u = (v, P_ij − v_i·v_j for i ≤ j) (§3.2, §5.1).
    fn prepare(&self, eps: &[f64], zeta: &mut [f64], log_q: &mut [f64], u: &mut [f64]) {
        let d = self.d;
        let n = log_q.len();
        let k_dir = self.n_directions();
        zeta.copy_from_slice(eps);
        {
            // Row-major N×d is column-major d×N: each draw is one column.
            let z = MatMut::from_column_major_slice_mut(zeta, d, n);
            solve_upper_triangular_in_place(self.chol.transpose(), z, Par::Seq);
        }
        let const_term = -(d as f64) * HALF_LN_2PI + self.half_log_det;
        for s in 0..n {
            let e = &eps[s * d..(s + 1) * d];
            let z = &mut zeta[s * d..(s + 1) * d];
            for (zi, mi) in z.iter_mut().zip(&self.mean) {
                *zi += mi;
            }
            log_q[s] = const_term - 0.5 * e.iter().map(|x| x * x).sum::<f64>();
            let us = &mut u[s * k_dir..(s + 1) * k_dir];
            for (i, ui) in us[..d].iter_mut().enumerate() {
                let mut vi = 0.0;
                for (j, ej) in e.iter().enumerate().take(i + 1) {
                    vi += self.chol[(i, j)] * ej;
                }
                *ui = vi;
            }
            let mut k = d;
            for i in 0..d {
                let vi = us[i];
                for j in i..d {
                    us[k] = self.precision[(i, j)] - vi * us[j];
                    k += 1;
                }
            }
        }
    }

    fn precision_packed(&self) -> Vec<f64> {
        let d = self.d;
        let mut out = Vec::with_capacity(d * (d + 1) / 2);
        for i in 0..d {
            for j in i..d {
                out.push(self.precision[(i, j)]);
            }
        }
        out
    }

    fn direction_variances(&self, out: &mut [f64]) {
        let d = self.d;
        let p = &self.precision;
        for i in 0..d {
            out[i] = p[(i, i)];
        }
        let mut k = d;
        for i in 0..d {
            for j in i..d {
                out[k] = p[(i, i)] * p[(j, j)] + p[(i, j)] * p[(i, j)];
                k += 1;
            }
        }
    }

    fn add_conjugate_prior(&self, prior: &ConjugatePrior, g: &mut [f64]) {
        let d = self.d;
        let (g_a, g_b) = g.split_at_mut(d);
        let mut pull = vec![0.0; d];
        prior.mean_pull(&self.mean, &mut pull);
        g_a.iter_mut().zip(&pull).for_each(|(a, p)| *a += p);
        let mut k = 0;
        for i in 0..d {
            for j in i..d {
                g_b[k] += prior.precision[i * d + j] - self.precision[(i, j)];
                k += 1;
            }
        }
    }

    fn limit_mean_step(&mut self, _old_mean: &[f64], _kappa: f64) -> usize {
        0
    }

    fn step_guarded(&mut self, g: &[f64], beta: f64, max_halvings: usize) -> bool {
        let d = self.d;
        let (g_a, g_upper) = g.split_at(d);
        if g.iter().all(|x| x.is_finite()) {
            let mut p_new = self.precision.clone();
            let mut k = 0;
            for i in 0..d {
                for j in i..d {
                    p_new[(i, j)] += beta * g_upper[k];
                    if j != i {
                        p_new[(j, i)] += beta * g_upper[k];
                    }
                    k += 1;
                }
            }
            if let Some(l_new) = cholesky_lower(&p_new) {
                let mut x = Mat::from_fn(d, 1, |i, _| g_a[i]);
                solve_lower_triangular_in_place(l_new.as_ref(), x.as_mut(), Par::Seq);
                solve_upper_triangular_in_place(l_new.transpose(), x.as_mut(), Par::Seq);
                let mean_new: Vec<f64> = (0..d).map(|i| self.mean[i] + beta * x[(i, 0)]).collect();
                if mean_new.iter().all(|m| m.is_finite()) {
                    self.mean = mean_new;
                    self.precision = p_new;
                    self.chol = l_new;
                    self.half_log_det = self.compute_half_log_det();
                    return true;
                }
            }
        }
        self.step(g, beta, max_halvings)
    }

    /// P_new = P + βG + (β²/2)·G·P⁻¹·G (second-order retraction, §8.1), then
    /// μ_new = μ + β·P_new⁻¹·G_a (§3.3, residual form); β is halved up to `max_halvings` times
    /// when P_new is not positive definite or anything is non-finite (§8.3).
    fn step(&mut self, g: &[f64], beta: f64, max_halvings: usize) -> bool {
        let d = self.d;
        let (g_a, g_upper) = g.split_at(d);
        let mut k = 0;
        for i in 0..d {
            for j in i..d {
                self.g_b[(i, j)] = g_upper[k];
                self.g_b[(j, i)] = g_upper[k];
                k += 1;
            }
        }
        if g.iter().any(|x| !x.is_finite()) {
            return false;
        }
        // G·Σ·G = (L⁻¹G)ᵀ(L⁻¹G) with Σ = P⁻¹ = L⁻ᵀL⁻¹.
        self.w.copy_from(&self.g_b);
        solve_lower_triangular_in_place(self.chol.as_ref(), self.w.as_mut(), Par::Seq);
        let gsg = self.w.transpose() * &self.w;
        let mut b = beta;
        for _ in 0..=max_halvings {
            let p_new = Mat::from_fn(d, d, |i, j| {
                let sym = |m: &Mat<f64>| 0.5 * (m[(i, j)] + m[(j, i)]);
                sym(&self.precision) + b * self.g_b[(i, j)] + 0.5 * b * b * sym(&gsg)
            });
            if let Some(l_new) = cholesky_lower(&p_new) {
                let mut x = Mat::from_fn(d, 1, |i, _| g_a[i]);
                solve_lower_triangular_in_place(l_new.as_ref(), x.as_mut(), Par::Seq);
                solve_upper_triangular_in_place(l_new.transpose(), x.as_mut(), Par::Seq);
                let mean_new: Vec<f64> = (0..d).map(|i| self.mean[i] + b * x[(i, 0)]).collect();
                if mean_new.iter().all(|m| m.is_finite()) {
                    self.mean = mean_new;
                    self.precision = p_new;
                    self.chol = l_new;
                    self.half_log_det = self.compute_half_log_det();
                    return true;
                }
            }
            b *= 0.5;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inference::rng::stream;
    use rand::RngExt;
    use rand_distr::StandardNormal;

    /// A fixed Gaussian with correlated precision, d = 3.
    fn example() -> FullGaussian {
        let mut q = FullGaussian::isotropic(&[0.7, -1.3, 0.4], 1.0);
        let p = [[2.0, 0.6, -0.3], [0.6, 1.5, 0.4], [-0.3, 0.4, 0.8]];
        q.precision = Mat::from_fn(3, 3, |i, j| p[i][j]);
        q.chol = cholesky_lower(&q.precision).unwrap();
        q.half_log_det = q.compute_half_log_det();
        q
    }

    fn sample_directions(q: &FullGaussian, n: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let d = q.dim();
        let k = q.n_directions();
        let mut rng = stream(42, 0);
        let eps: Vec<f64> = (0..n * d).map(|_| rng.sample(StandardNormal)).collect();
        let (mut zeta, mut log_q, mut u) = (vec![0.0; n * d], vec![0.0; n], vec![0.0; n * k]);
        q.prepare(&eps, &mut zeta, &mut log_q, &mut u);
        (zeta, log_q, u)
    }

    #[test]
    fn draws_have_the_fitted_moments_and_log_density() {
        let q = example();
        let n = 100_000;
        let (zeta, log_q, _) = sample_directions(&q, n);
        let cov = q.covariance_row_major();
        for i in 0..3 {
            let m = (0..n).map(|s| zeta[s * 3 + i]).sum::<f64>() / n as f64;
            let v = (0..n).map(|s| (zeta[s * 3 + i] - m).powi(2)).sum::<f64>() / n as f64;
            assert!((m - q.mean[i]).abs() < 4.0 * (cov[i * 4] / n as f64).sqrt());
            assert!(
                (v / cov[i * 4] - 1.0).abs() < 0.02,
                "var[{i}] {v} vs {}",
                cov[i * 4]
            );
        }
        // log q from the quadratic form with P directly.
        let z = &zeta[..3];
        let quad: f64 = (0..3)
            .flat_map(|i| (0..3).map(move |j| (i, j)))
            .map(|(i, j)| (z[i] - q.mean[i]) * q.precision[(i, j)] * (z[j] - q.mean[j]))
            .sum();
        let det = 2.0 * q.half_log_det;
        let expected = -1.5 * (2.0 * std::f64::consts::PI).ln() + 0.5 * det - 0.5 * quad;
        assert!((log_q[0] - expected).abs() < 1e-12);
    }

    #[test]
    fn direction_variances_match_monte_carlo() {
        // specs/qbvi.md §5.4 and §14 check 1: Var[a_i] = P_ii, Var[B_ij] = P_ii·P_jj + P_ij²,
        // and for the m-coordinate scores ∇_{m₁} log q = a + Bμ: [P(Σ + D)P]_ii with
        // D = μμᵀ + (μᵀPμ)·Σ; ∇_{m₂} log q = −½B: ¼(P_ii·P_jj + P_ij²). 200 000 draws; the
        // relative standard error of each variance is below 1%.
        let q = example();
        let (d, k, n) = (3, q.n_directions(), 200_000);
        let (_, _, u) = sample_directions(&q, n);
        let mut exact = vec![0.0; k];
        q.direction_variances(&mut exact);
        for c in 0..k {
            let m = (0..n).map(|s| u[s * k + c]).sum::<f64>() / n as f64;
            let v = (0..n).map(|s| (u[s * k + c] - m).powi(2)).sum::<f64>() / n as f64;
            // (The ∇_{m₂} variances are ¼ of these B variances, since ∇_{m₂} log q = −½B.)
            assert!(
                (v / exact[c] - 1.0).abs() < 0.04,
                "direction {c}: {v} vs {}",
                exact[c]
            );
        }
        // ∇_{m₁} log q = a + Bμ for each draw.
        let mu = q.mean.clone();
        let p = |i: usize, j: usize| q.precision[(i, j)];
        let sigma = q.covariance_row_major();
        let mpm: f64 = (0..d)
            .flat_map(|i| (0..d).map(move |j| (i, j)))
            .map(|(i, j)| mu[i] * p(i, j) * mu[j])
            .sum();
        let s_plus_d =
            |i: usize, j: usize| sigma[i * d + j] + mu[i] * mu[j] + mpm * sigma[i * d + j];
        for i in 0..d {
            let exact_m1: f64 = (0..d)
                .flat_map(|a| (0..d).map(move |b| (a, b)))
                .map(|(a, b)| p(i, a) * s_plus_d(a, b) * p(b, i))
                .sum();
            let score = |s: usize| {
                let us = &u[s * k..(s + 1) * k];
                let b_entry = |r: usize, c: usize| {
                    let (r, c) = if r <= c { (r, c) } else { (c, r) };
                    // Upper-triangle index of (r, c) in row-major packing.
                    us[d + r * d - r * (r + 1) / 2 + c]
                };
                us[i] + (0..d).map(|j| b_entry(i, j) * mu[j]).sum::<f64>()
            };
            let m = (0..n).map(score).sum::<f64>() / n as f64;
            let v = (0..n).map(|s| (score(s) - m).powi(2)).sum::<f64>() / n as f64;
            assert!(
                (v / exact_m1 - 1.0).abs() < 0.04,
                "m1[{i}]: {v} vs {exact_m1}"
            );
        }
    }
}
