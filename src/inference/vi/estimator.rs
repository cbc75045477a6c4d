//! Monte Carlo natural-gradient estimate with control variates (`specs/qbvi.md` §5.1–§5.3).

/// Per-component control-variate coefficients c_k, estimated from one batch and applied to the
/// next (§5.3), plus the gradient estimate Ĝ_k = (1/N)·Σ_s u_k(ζ_s)·(f_s − c_k) (§5.1).
#[derive(Clone, Debug)]
pub(crate) struct ControlVariates {
    /// c_k, length K.
    pub(crate) c: Vec<f64>,
    mean_u: Vec<f64>,
    mean_uf: Vec<f64>,
    mean_uuf: Vec<f64>,
    var_u: Vec<f64>,
}

impl ControlVariates {
    /// Zero coefficients for K directions.
    pub(crate) fn new(k: usize) -> Self {
        ControlVariates {
            c: vec![0.0; k],
            mean_u: vec![0.0; k],
            mean_uf: vec![0.0; k],
            mean_uuf: vec![0.0; k],
            var_u: vec![0.0; k],
        }
    }

    /// Ĝ_k = (1/N)·Σ_s u[s,k]·(f_s − c_k), written into `g` (length K); `u` is N×K row-major.
    pub(crate) fn gradient(&self, u: &[f64], f: &[f64], g: &mut [f64]) {
        let k_dir = self.c.len();
        let n = f.len();
        g.iter_mut().for_each(|x| *x = 0.0);
        for (s, fs) in f.iter().enumerate() {
            let us = &u[s * k_dir..(s + 1) * k_dir];
            for k in 0..k_dir {
                g[k] += us[k] * (fs - self.c[k]);
            }
        }
        let inv_n = 1.0 / n as f64;
        g.iter_mut().for_each(|x| *x *= inv_n);
    }

    /// Re-estimates c from a batch by the authors' plug-in formula (§5.3):
    /// ĉ_k = [mean(u_k²f) − mean(u_k f)·mean(u_k)]·N/(N−1) / var̂(u_k), var̂ with N − 1.
    /// f is centred at its batch mean first (c shifts with f, so the result is the same in
    /// exact arithmetic and loses less to cancellation). A direction with zero sample variance
    /// gets c_k = mean(f). With `analytic_variances` (the exact Var_q[u_k] at the parameters
    /// that drew the batch, §5.4) the denominator is exact and only the numerator is estimated.
    pub(crate) fn estimate(&mut self, u: &[f64], f: &[f64], analytic_variances: Option<&[f64]>) {
        let k_dir = self.c.len();
        let n = f.len();
        let nf = n as f64;
        let f_bar = f.iter().sum::<f64>() / nf;
        for v in [
            &mut self.mean_u,
            &mut self.mean_uf,
            &mut self.mean_uuf,
            &mut self.var_u,
        ] {
            v.iter_mut().for_each(|x| *x = 0.0);
        }
        for (s, fs) in f.iter().enumerate() {
            let ft = fs - f_bar;
            let us = &u[s * k_dir..(s + 1) * k_dir];
            for (k, &uk) in us.iter().enumerate() {
                self.mean_u[k] += uk;
                self.mean_uf[k] += uk * ft;
                self.mean_uuf[k] += uk * uk * ft;
            }
        }
        for k in 0..k_dir {
            self.mean_u[k] /= nf;
            self.mean_uf[k] /= nf;
            self.mean_uuf[k] /= nf;
        }
        for s in 0..n {
            let us = &u[s * k_dir..(s + 1) * k_dir];
            for ((var, &uk), mean) in self.var_u.iter_mut().zip(us).zip(&self.mean_u) {
                *var += (uk - mean) * (uk - mean);
            }
        }
        let bessel = nf / (nf - 1.0);
        for k in 0..k_dir {
            let var = match analytic_variances {
                Some(v) => v[k],
                None => self.var_u[k] / (nf - 1.0),
            };
            let num = (self.mean_uuf[k] - self.mean_uf[k] * self.mean_u[k]) * bessel;
            let ck = num / var;
            self.c[k] = if var > 0.0 && ck.is_finite() {
                f_bar + ck
            } else {
                f_bar
            };
        }
    }
}

/// Re-references the lagged control-variate coefficients of a minibatch fit to the batch in
/// use ([X], a departure from `specs/qbvi.md` §5.3, which applies the previous iteration's c_k
/// unchanged; `specs/survey_vi.md` §2 keeps that rule and only notes the extra variance).
///
/// Why: c_k estimated on batch B_{t−1} carries that batch's level of f = L̂_B − log q, while
/// the draws of iteration t see B_t, and L̂_{B_t} − L̂_{B_{t−1}} is a constant of order
/// N·sd_i(ℓ_i)/√M that no coefficient fitted on B_{t−1} can know (70 nats rms on labour at
/// M = 32 of N = 753, against 2 nats between full-data iterations; measured). The estimate
/// Ĝ_k = mean_s u_k·(f_s − c_k) then carries (f̄_t − c_k)·mean_s u_k. Antithetic pairs make
/// mean_s a_i = 0, but the precision directions b_i = p_i − v_i² are even in ε, so
/// mean_s b_i ≈ p_i·√(2/N_s)·z and the precision step gets relative noise of sd
/// ≈ 70·√(2/100) ≈ 10, which at the minibatch β spread log p_i by sd ≈ 0.4–0.7 (measured),
/// and the returned sds of diagonal QBVI on labour came back 0.04–1.7 times the mean-field
/// optimum's, not converged at 27 of 30 fits (M = 5 to 376, seeds 1–5; 0.87–1.12 and 5 of 30
/// with the shift; docs/minibatch.md, "Diagonal QBVI on minibatches").
///
/// The fix keeps §5.1's condition for an unbiased estimate (c_k independent of the current
/// draws): before iteration t's estimate, every c_k is shifted by f̂_t − f̂_{t−1}, where f̂ is
/// the integrand at the mean of q on the iteration's batch (f̂_t = L̂_{B_t}(μ_t) − log q_t(μ_t)),
/// fixed before the ε of iteration t are drawn. It costs one density evaluation per
/// iteration. Where f̂ is not finite on either side, c is left as it was.
#[derive(Clone, Debug, Default)]
pub(crate) struct BatchAnchor {
    previous: Option<f64>,
}

impl BatchAnchor {
    /// Shifts `cv`'s coefficients by `current` − the previous anchor (when both are finite), then
    /// remembers `current` (f̂ of this iteration, `None` if it could not be evaluated) as the
    /// anchor of the coefficients that [`ControlVariates::estimate`] is about to compute.
    pub(crate) fn rebase(&mut self, cv: &mut ControlVariates, current: Option<f64>) {
        let current = current.filter(|x| x.is_finite());
        if let (Some(now), Some(before)) = (current, self.previous) {
            let shift = now - before;
            cv.c.iter_mut().for_each(|c| *c += shift);
        }
        self.previous = current;
    }
}

/// The natural-gradient directions estimated from gradients instead of values, by the
/// Bonnet/Price (Stein) identities of `specs/qbvi.md` §3.2 — E[a·f] = E[∇f] and
/// E[B·f] = E[−∇²f] = −E[P(ζ − μ)∇fᵀ] — as NGVI uses them (`specs/survey_vi.md` §9):
/// g_a = (1/N)·Σ_s ∇L(ζ_s) and g_B = −sym((1/N)·Σ_s v_s∇L(ζ_s)ᵀ), packed as the family's
/// B-directions (the diagonal's i, the full family's (i, j ≥ i)); v_s = P(ζ_s − μ) is the first
/// d entries of row s of `u` (the a-direction, [`super::Family::prepare`]). For f = L − log q
/// the −P of −∇² log q is not included: the caller subtracts P (residual form) or adds the
/// conjugate prior's P₀ − P.
///
/// Shapes: `u` N×K row-major (K = 2d diagonal, d + d(d+1)/2 full), `grad` N×d row-major, `g`
/// length K (overwritten).
pub(crate) fn stein_directions(u: &[f64], grad: &[f64], d: usize, g: &mut [f64]) {
    let k = g.len();
    let n = grad.len() / d;
    g.iter_mut().for_each(|x| *x = 0.0);
    for s in 0..n {
        let v = &u[s * k..s * k + d];
        let gr = &grad[s * d..(s + 1) * d];
        for i in 0..d {
            g[i] += gr[i] / n as f64;
        }
        // Diagonal family: K = 2d (for d = 1 both packings coincide).
        if k == 2 * d {
            for i in 0..d {
                g[d + i] -= v[i] * gr[i] / n as f64;
            }
        } else {
            let mut idx = d;
            for i in 0..d {
                for j in i..d {
                    g[idx] -= 0.5 * (v[i] * gr[j] + v[j] * gr[i]) / n as f64;
                    idx += 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coefficient_matches_the_plug_in_formula_and_shifts_with_f() {
        // One direction, N = 4, hand-computed: u = (1, −1, 2, −2), f = (3, 1, 4, 0).
        let u = [1.0, -1.0, 2.0, -2.0];
        let f = [3.0, 1.0, 4.0, 0.0];
        let mut cv = ControlVariates::new(1);
        cv.estimate(&u, &f, None);
        // mean u = 0, mean(u f) = (3 − 1 + 8 − 0)/4 = 2.5, mean(u² f) = (3 + 1 + 16 + 0)/4 = 5,
        // var̂(u) = 10/3; c = (5 − 0)·(4/3)/(10/3) = 2.
        assert!((cv.c[0] - 2.0).abs() < 1e-14, "c = {}", cv.c[0]);
        let f_shift: Vec<f64> = f.iter().map(|x| x + 100.0).collect();
        cv.estimate(&u, &f_shift, None);
        assert!((cv.c[0] - 102.0).abs() < 1e-12, "c = {}", cv.c[0]);
        let mut g = [0.0];
        cv.gradient(&u, &f_shift, &mut g);
        // mean u·(f − 2) with u summing to zero = mean(u f) = 2.5.
        assert!((g[0] - 2.5).abs() < 1e-12);
    }

    #[test]
    fn the_anchor_shifts_the_coefficients_by_the_change_of_level() {
        let mut cv = ControlVariates::new(2);
        cv.c = vec![1.0, -2.0];
        let mut anchor = BatchAnchor::default();
        // the first anchor has nothing to compare with
        anchor.rebase(&mut cv, Some(-500.0));
        assert_eq!(cv.c, vec![1.0, -2.0]);
        anchor.rebase(&mut cv, Some(-430.0));
        assert_eq!(cv.c, vec![71.0, 68.0]);
        // an unevaluable anchor leaves c alone and breaks the chain
        anchor.rebase(&mut cv, None);
        anchor.rebase(&mut cv, Some(0.0));
        assert_eq!(cv.c, vec![71.0, 68.0]);
        anchor.rebase(&mut cv, Some(f64::NAN));
        assert_eq!(cv.c, vec![71.0, 68.0]);
    }

    #[test]
    fn constant_f_gives_zero_gradient() {
        let u = [0.3, -1.2, 0.7, 0.5, -0.4, 1.1];
        let f = [-612.25; 3];
        let mut cv = ControlVariates::new(2);
        cv.estimate(&u, &f, None);
        let mut g = [1.0; 2];
        cv.gradient(&u, &f, &mut g);
        assert_eq!(g, [0.0, 0.0]);
    }
}
