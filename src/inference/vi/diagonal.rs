//! Diagonal (mean-field) Gaussian family q = ∏ N(μ_i, 1/p_i) for QBVI (`specs/qbvi.md` §4, §8.1).

use super::family::{Family, HALF_LN_2PI};
use super::prior::ConjugatePrior;

/// The state (μ, p) of a diagonal Gaussian on ζ; p holds the precisions 1/s_i.
#[derive(Clone, Debug)]
pub(crate) struct DiagonalGaussian {
    mean: Vec<f64>,
    precision: Vec<f64>,
    sqrt_precision: Vec<f64>,
    half_log_det: f64,
}

impl DiagonalGaussian {
    /// N(mean, variance·I). `variance` must be positive and finite (checked by the caller).
    pub(crate) fn isotropic(mean: &[f64], variance: f64) -> Self {
        let d = mean.len();
        Self::from_parts(mean.to_vec(), vec![1.0 / variance; d])
    }

    /// N(mean, diag(1/P_ii)) from a d×d row-major precision; `None` unless every P_ii is
    /// positive and finite.
    pub(crate) fn from_precision(mean: &[f64], precision: &[f64]) -> Option<Self> {
        let d = mean.len();
        let diag: Vec<f64> = (0..d).map(|i| precision[i * d + i]).collect();
        diag.iter()
            .all(|p| *p > 0.0 && p.is_finite())
            .then(|| Self::from_parts(mean.to_vec(), diag))
    }

    fn from_parts(mean: Vec<f64>, precision: Vec<f64>) -> Self {
        let sqrt_precision: Vec<f64> = precision.iter().map(|p| p.sqrt()).collect();
        let half_log_det = sqrt_precision.iter().map(|s| s.ln()).sum();
        DiagonalGaussian {
            mean,
            precision,
            sqrt_precision,
            half_log_det,
        }
    }

    /// The precisions p_i (length d).
    pub(crate) fn precision(&self) -> &[f64] {
        &self.precision
    }
}

impl Family for DiagonalGaussian {
    fn dim(&self) -> usize {
        self.mean.len()
    }

    fn n_directions(&self) -> usize {
        2 * self.mean.len()
    }

    fn mean(&self) -> &[f64] {
        &self.mean
    }

    /// ζ_i = μ_i + ε_i/√p_i, v_i = √p_i·ε_i, log q = −(d/2)·log 2π + ½Σ log p_i − ½‖ε‖²;
    /// directions u = (v, p − v²) (§4, §5.1).
    fn prepare(&self, eps: &[f64], zeta: &mut [f64], log_q: &mut [f64], u: &mut [f64]) {
        let d = self.mean.len();
        let const_term = -(d as f64) * HALF_LN_2PI + self.half_log_det;
        for (s, lq) in log_q.iter_mut().enumerate() {
            let e = &eps[s * d..(s + 1) * d];
            let z = &mut zeta[s * d..(s + 1) * d];
            let (ua, ub) = u[s * 2 * d..(s + 1) * 2 * d].split_at_mut(d);
            let mut sq = 0.0;
            for i in 0..d {
                let v = self.sqrt_precision[i] * e[i];
                z[i] = self.mean[i] + e[i] / self.sqrt_precision[i];
                ua[i] = v;
                ub[i] = self.precision[i] - v * v;
                sq += e[i] * e[i];
            }
            *lq = const_term - 0.5 * sq;
        }
    }

    fn precision_packed(&self) -> Vec<f64> {
        self.precision.clone()
    }

    fn direction_variances(&self, out: &mut [f64]) {
        let d = self.mean.len();
        for i in 0..d {
            out[i] = self.precision[i];
            out[d + i] = 2.0 * self.precision[i] * self.precision[i];
        }
    }

    fn add_conjugate_prior(&self, prior: &ConjugatePrior, g: &mut [f64]) {
        let d = self.mean.len();
        let (g_a, g_b) = g.split_at_mut(d);
        let mut pull = vec![0.0; d];
        prior.mean_pull(&self.mean, &mut pull);
        for i in 0..d {
            g_a[i] += pull[i];
            g_b[i] += prior.precision[i * d + i] - self.precision[i];
        }
    }

    fn step_guarded(&mut self, g: &[f64], beta: f64, max_halvings: usize) -> bool {
        let d = self.mean.len();
        let (g_a, g_b) = g.split_at(d);
        if g.iter().all(|x| x.is_finite()) {
            let p_new: Vec<f64> = (0..d).map(|i| self.precision[i] + beta * g_b[i]).collect();
            if p_new.iter().all(|p| *p > 0.0 && p.is_finite()) {
                let mean_new: Vec<f64> = (0..d)
                    .map(|i| self.mean[i] + beta * g_a[i] / p_new[i])
                    .collect();
                if mean_new.iter().all(|m| m.is_finite()) {
                    *self = Self::from_parts(mean_new, p_new);
                    return true;
                }
            }
        }
        self.step(g, beta, max_halvings)
    }

    fn limit_mean_step(&mut self, old_mean: &[f64], kappa: f64) -> usize {
        let mut limited = 0;
        for ((m, &old), &sp) in self.mean.iter_mut().zip(old_mean).zip(&self.sqrt_precision) {
            let bound = kappa / sp;
            let step = *m - old;
            if step.abs() > bound {
                *m = old + bound.copysign(step);
                limited += 1;
            }
        }
        limited
    }

    /// p_new = p + βg + β²g²/(2p) (diagonal retraction, §8.1), μ_new = μ + β·g_a/p_new (§4,
    /// residual form); β is halved up to `max_halvings` times on failure (§8.3).
    fn step(&mut self, g: &[f64], beta: f64, max_halvings: usize) -> bool {
        let d = self.mean.len();
        let (g_a, g_b) = g.split_at(d);
        if g.iter().any(|x| !x.is_finite()) {
            return false;
        }
        let mut b = beta;
        for _ in 0..=max_halvings {
            let p_new: Vec<f64> = (0..d)
                .map(|i| {
                    let p = self.precision[i];
                    p + b * g_b[i] + b * b * g_b[i] * g_b[i] / (2.0 * p)
                })
                .collect();
            if p_new.iter().all(|p| *p > 0.0 && p.is_finite()) {
                let mean_new: Vec<f64> = (0..d)
                    .map(|i| self.mean[i] + b * g_a[i] / p_new[i])
                    .collect();
                if mean_new.iter().all(|m| m.is_finite()) {
                    *self = Self::from_parts(mean_new, p_new);
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

    #[test]
    fn the_trust_region_limits_each_coordinate_to_kappa_sds() {
        // p = (4, 0.25): σ = (0.5, 2). A step g_a with β = 1 moves μ by g_a/p_new; p stays put
        // (g_b = 0 in the residual packing means P + βG_B = P).
        let mut q = DiagonalGaussian::from_parts(vec![0.0, 0.0], vec![4.0, 0.25]);
        assert!(q.step_guarded(&[40.0, -0.1, 0.0, 0.0], 0.5, 0));
        // raw moves: 0.5·40/4 = 5 (10 sd) and 0.5·(−0.1)/0.25 = −0.2 (0.1 sd)
        assert_eq!(q.mean, vec![5.0, -0.2]);
        assert_eq!(q.limit_mean_step(&[0.0, 0.0], 0.5), 1);
        assert_eq!(q.mean, vec![0.25, -0.2]); // 0.5 sd of 0.5; the small move is untouched
        assert_eq!(q.limit_mean_step(&[0.0, 0.0], f64::INFINITY), 0);
        assert_eq!(q.mean, vec![0.25, -0.2]);
    }
    use crate::inference::rng::stream;
    use rand::RngExt;
    use rand_distr::StandardNormal;

    #[test]
    fn draws_and_direction_variances_match_monte_carlo() {
        // §5.4: Var[a_i] = p_i, Var[b_i] = 2p_i²; draws have mean μ and variance 1/p.
        let q = DiagonalGaussian::from_parts(vec![0.5, -2.0], vec![4.0, 0.25]);
        let (d, k, n) = (2, q.n_directions(), 200_000);
        let mut rng = stream(7, 0);
        let eps: Vec<f64> = (0..n * d).map(|_| rng.sample(StandardNormal)).collect();
        let (mut zeta, mut log_q, mut u) = (vec![0.0; n * d], vec![0.0; n], vec![0.0; n * k]);
        q.prepare(&eps, &mut zeta, &mut log_q, &mut u);
        let mut exact = vec![0.0; k];
        q.direction_variances(&mut exact);
        assert_eq!(exact, vec![4.0, 0.25, 32.0, 0.125]);
        let moments = |x: &dyn Fn(usize) -> f64| {
            let m = (0..n).map(x).sum::<f64>() / n as f64;
            (
                m,
                (0..n).map(|s| (x(s) - m).powi(2)).sum::<f64>() / n as f64,
            )
        };
        for c in 0..k {
            let (_, v) = moments(&|s| u[s * k + c]);
            assert!(
                (v / exact[c] - 1.0).abs() < 0.04,
                "direction {c}: {v} vs {}",
                exact[c]
            );
        }
        for i in 0..d {
            let (m, v) = moments(&|s| zeta[s * d + i]);
            let var = 1.0 / q.precision[i];
            assert!((m - q.mean[i]).abs() < 4.0 * (var / n as f64).sqrt());
            assert!((v / var - 1.0).abs() < 0.02);
        }
        let z = &zeta[..2];
        let expected: f64 = (0..2)
            .map(|i| {
                let p = q.precision[i];
                -0.5 * (2.0 * std::f64::consts::PI).ln() + 0.5 * p.ln()
                    - 0.5 * p * (z[i] - q.mean[i]).powi(2)
            })
            .sum();
        assert!((log_q[0] - expected).abs() < 1e-12);
    }
}
