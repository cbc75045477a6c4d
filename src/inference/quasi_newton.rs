//! The inverse-Hessian estimates of the quasi-Newton optimizers in [`super::optimize`]: the
//! limited-memory L-BFGS history (Nocedal & Wright 2006, Algorithm 7.4) and the dense BFGS
//! matrix (Nocedal & Wright eq. 6.17 with the initial scaling of eq. 6.20), behind one
//! interface so that both share the line search and Stan's convergence tests.
//!
//! Everything here is on the minimisation objective f = −L: `s` = x_{k+1} − x_k and
//! `y` = ∇f(x_{k+1}) − ∇f(x_k), and [`Curvature::apply`] returns H_k·g ≈ (∇²f)⁻¹·g.

/// Which quasi-Newton estimate of the inverse Hessian drives the search direction.
#[derive(Clone, Debug)]
pub(super) enum Curvature {
    /// L-BFGS: the last `m` pairs (s, y, 1/yᵀs), oldest first; H_k⁰ = γ_k·I with
    /// γ_k = sᵀy / yᵀy of the newest pair (Nocedal & Wright eq. 7.20).
    Limited {
        /// The stored pairs.
        pairs: Vec<(Vec<f64>, Vec<f64>, f64)>,
        /// The history size m ≥ 1.
        m: usize,
    },
    /// BFGS: the dense d × d inverse-Hessian estimate (row-major), `None` before the first
    /// accepted pair; it starts from γ·I, γ = sᵀy / yᵀy of that pair (eq. 6.20).
    Dense {
        /// H_k, row-major.
        h: Option<Vec<f64>>,
        /// d.
        d: usize,
    },
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

impl Curvature {
    /// An empty L-BFGS history of size `m` (at least 1).
    pub(super) fn limited(m: usize) -> Self {
        Curvature::Limited {
            pairs: Vec::with_capacity(m.max(1)),
            m: m.max(1),
        }
    }

    /// An empty dense BFGS estimate for dimension `d`.
    pub(super) fn dense(d: usize) -> Self {
        Curvature::Dense { h: None, d }
    }

    /// Whether no curvature information is stored (the direction is then steepest descent).
    pub(super) fn is_empty(&self) -> bool {
        match self {
            Curvature::Limited { pairs, .. } => pairs.is_empty(),
            Curvature::Dense { h, .. } => h.is_none(),
        }
    }

    /// Forgets all curvature information (after a failed line search).
    pub(super) fn clear(&mut self) {
        match self {
            Curvature::Limited { pairs, .. } => pairs.clear(),
            Curvature::Dense { h, .. } => *h = None,
        }
    }

    /// Adds the pair (s, y) with sᵀy = `sy` > 0 (the caller checks the curvature condition).
    pub(super) fn update(&mut self, s: Vec<f64>, y: Vec<f64>, sy: f64) {
        match self {
            Curvature::Limited { pairs, m } => {
                if pairs.len() == *m {
                    pairs.remove(0);
                }
                pairs.push((s, y, 1.0 / sy));
            }
            Curvature::Dense { h, d } => {
                let d = *d;
                let rho = 1.0 / sy;
                let hm = h.get_or_insert_with(|| {
                    let gamma = sy / dot(&y, &y);
                    let mut m = vec![0.0; d * d];
                    for i in 0..d {
                        m[i * d + i] = gamma;
                    }
                    m
                });
                // H ← (I − ρ s yᵀ) H (I − ρ y sᵀ) + ρ s sᵀ, expanded:
                // H − ρ (s (Hy)ᵀ + (Hy) sᵀ) + (ρ² yᵀHy + ρ) s sᵀ  (H symmetric)
                let hy: Vec<f64> = (0..d).map(|i| dot(&hm[i * d..(i + 1) * d], &y)).collect();
                let yhy = dot(&y, &hy);
                let c = rho * rho * yhy + rho;
                for i in 0..d {
                    for j in 0..d {
                        hm[i * d + j] += -rho * (s[i] * hy[j] + hy[i] * s[j]) + c * s[i] * s[j];
                    }
                }
            }
        }
    }

    /// H_k·g: for L-BFGS by the two-loop recursion (Algorithm 7.4), for BFGS a matrix-vector
    /// product; `g` itself when nothing is stored.
    pub(super) fn apply(&self, g: &[f64]) -> Vec<f64> {
        match self {
            Curvature::Limited { pairs, .. } => {
                let mut q = g.to_vec();
                let mut alphas = vec![0.0; pairs.len()];
                for (i, (s, y, rho)) in pairs.iter().enumerate().rev() {
                    let a = rho * dot(s, &q);
                    alphas[i] = a;
                    q.iter_mut().zip(y).for_each(|(qi, yi)| *qi -= a * yi);
                }
                if let Some((s, y, _)) = pairs.last() {
                    let gamma = dot(s, y) / dot(y, y);
                    q.iter_mut().for_each(|v| *v *= gamma);
                }
                for (i, (s, y, rho)) in pairs.iter().enumerate() {
                    let b = rho * dot(y, &q);
                    q.iter_mut()
                        .zip(s)
                        .for_each(|(qi, si)| *qi += (alphas[i] - b) * si);
                }
                q
            }
            Curvature::Dense { h: None, .. } => g.to_vec(),
            Curvature::Dense { h: Some(h), d } => {
                (0..*d).map(|i| dot(&h[i * d..(i + 1) * d], g)).collect()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On a quadratic f = ½xᵀAx, after d conjugate steps the dense BFGS estimate equals A⁻¹
    /// (Nocedal & Wright Theorem 6.4 with exact line searches); here the pairs are exact,
    /// y = A s, along the coordinate axes, and H·g must give A⁻¹g.
    #[test]
    fn dense_bfgs_recovers_the_inverse_of_a_quadratic() {
        let a = [4.0, 1.0, 1.0, 3.0];
        let mut c = Curvature::dense(2);
        // d secant pairs along A-conjugate directions: s1 = e1, s2 = e2 − (a12/a11) e1
        let s1 = vec![1.0, 0.0];
        let s2 = vec![-0.25, 1.0];
        for s in [s1, s2] {
            let y = vec![a[0] * s[0] + a[1] * s[1], a[2] * s[0] + a[3] * s[1]];
            let sy = dot(&s, &y);
            c.update(s, y, sy);
        }
        // A⁻¹ = [3, −1; −1, 4] / 11
        let r = c.apply(&[1.0, 2.0]);
        assert!((r[0] - (3.0 - 2.0) / 11.0).abs() < 1e-12, "{r:?}");
        assert!((r[1] - (-1.0 + 8.0) / 11.0).abs() < 1e-12, "{r:?}");
    }

    #[test]
    fn limited_and_dense_agree_on_one_pair() {
        let (s, y) = (vec![1.0, 2.0, -1.0], vec![2.0, 3.0, 0.5]);
        let sy = dot(&s, &y);
        let mut l = Curvature::limited(5);
        let mut d = Curvature::dense(3);
        l.update(s.clone(), y.clone(), sy);
        d.update(s, y, sy);
        let g = [0.3, -1.0, 2.0];
        for (a, b) in l.apply(&g).iter().zip(d.apply(&g)) {
            assert!((a - b).abs() < 1e-12);
        }
    }
}
