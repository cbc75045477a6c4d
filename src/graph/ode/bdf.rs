//! Variable-order (1–5), variable-step backward differentiation formulas for stiff systems.
//!
//! The BDF of order k, written with backward differences ∇ʲ of the solution (Hairer & Wanner,
//! *Solving ODEs II*, §III.1, eq. 1.22'), is `Σ_{j=1..k} (1/j) ∇ʲ y_{n+1} = h f(t_{n+1}, y_{n+1})`.
//! It is used in the quasi-constant step-size form of Shampine & Reichelt (1997, *The MATLAB ODE
//! Suite*, §2.1, with their κ = 0, i.e. the classical BDFs): the differences are kept in an array
//! D; a step predicts `y⁽⁰⁾ = Σ_{j≤k} D_j`, solves
//! `(y − y⁽⁰⁾) − (h/γ_k) f(t, y) + ψ = 0` with `γ_k = Σ_{j≤k} 1/j` and
//! `ψ = (1/γ_k) Σ_{j=1..k} γ_j D_j` by a modified Newton iteration on `I − (h/γ_k) J`, and
//! estimates the local error as `(y − y⁽⁰⁾)/(k + 1)`. A change of step size by a factor ρ
//! rescales D by the matrices of Shampine & Reichelt's eq. (2.3). The order is raised or lowered
//! by one after k + 1 steps of constant size when the neighbouring orders' error estimates
//! allow a larger step. BDFs of orders 1 and 2 are A- and L-stable, orders 3–5 are A(α)-stable
//! with α ≥ 51° (Hairer & Wanner II, §V.2, Table 2.3).
//!
//! The Jacobian is evaluated at the start and again only when the Newton iteration fails to
//! converge; the iteration matrix is refactorised whenever h or k changes. Output times are
//! interpolated with the order-k polynomial through the stored differences (the method's
//! natural dense output), so that outputs do not constrain the steps.

use super::{
    OdeFailure, OdeOptions, OdeSystem, all_finite, initial_step, lu_factor, lu_solve, scaled_rms,
};

const MAX_ORDER: usize = 5;
const NEWTON_MAXITER: usize = 4;
const MIN_FACTOR: f64 = 0.2;
const MAX_FACTOR: f64 = 10.0;

/// γ_k = Σ_{j=1..k} 1/j.
fn gamma(k: usize) -> f64 {
    (1..=k).map(|j| 1.0 / j as f64).sum()
}

/// The error constant of the order-k BDF in this form: 1/(k + 1).
fn error_const(k: usize) -> f64 {
    1.0 / (k as f64 + 1.0)
}

/// Shampine & Reichelt's matrix R(ρ) of order k ((k+1) × (k+1), row-major): the cumulative
/// products down the columns of M with M₀ⱼ = 1 and Mᵢⱼ = (i − 1 − ρ j)/i for i, j ≥ 1.
fn compute_r(k: usize, rho: f64) -> Vec<f64> {
    let m = k + 1;
    let mut r = vec![0.0; m * m];
    for j in 0..m {
        r[j] = 1.0;
    }
    for i in 1..m {
        for j in 0..m {
            let mij = if j == 0 {
                0.0
            } else {
                (i as f64 - 1.0 - rho * j as f64) / i as f64
            };
            r[i * m + j] = r[(i - 1) * m + j] * mij;
        }
    }
    r
}

/// Rescales the differences `d[0..=k]` for a step size multiplied by `rho`.
fn change_d(d: &mut [Vec<f64>], k: usize, rho: f64) {
    let m = k + 1;
    let r = compute_r(k, rho);
    let u = compute_r(k, 1.0);
    let mut ru = vec![0.0; m * m];
    for i in 0..m {
        for j in 0..m {
            ru[i * m + j] = (0..m).map(|l| r[i * m + l] * u[l * m + j]).sum();
        }
    }
    let n = d[0].len();
    let old: Vec<Vec<f64>> = d[..m].to_vec();
    for (i, di) in d.iter_mut().enumerate().take(m) {
        for c in 0..n {
            di[c] = (0..m).map(|j| ru[j * m + i] * old[j][c]).sum();
        }
    }
}

/// The integrator's state between steps.
struct Bdf<'s> {
    sys: &'s mut dyn OdeSystem,
    o: OdeOptions,
    n: usize,
    blk: usize,
    t: f64,
    h: f64,
    k: usize,
    d: Vec<Vec<f64>>,
    n_equal: usize,
    jac: Vec<f64>,
    jac_current: bool,
    lu: Vec<f64>,
    piv: Vec<usize>,
    lu_valid: bool,
    newton_tol: f64,
}

impl Bdf<'_> {
    /// Factorises `I − c J`; false when it is singular.
    fn factor(&mut self, c: f64) -> bool {
        let b = self.blk;
        for i in 0..b {
            for j in 0..b {
                let id = if i == j { 1.0 } else { 0.0 };
                self.lu[i * b + j] = id - c * self.jac[i * b + j];
            }
        }
        self.lu_valid = lu_factor(&mut self.lu, b, &mut self.piv);
        self.lu_valid
    }

    /// The Newton iteration for the corrector at `t_new`: returns whether it converged, the
    /// number of iterations, the solution and `d = y − y⁽⁰⁾`.
    fn newton(
        &mut self,
        t_new: f64,
        y_pred: &[f64],
        c: f64,
        psi: &[f64],
    ) -> Result<(bool, usize, Vec<f64>, Vec<f64>), OdeFailure> {
        let n = self.n;
        let mut y = y_pred.to_vec();
        let mut d = vec![0.0; n];
        let mut f = vec![0.0; n];
        let mut dy = vec![0.0; n];
        let mut old: Option<f64> = None;
        for it in 0..NEWTON_MAXITER {
            self.sys.rhs(t_new, &y, &mut f)?;
            if !all_finite(&f) {
                return Ok((false, it + 1, y, d));
            }
            for i in 0..n {
                dy[i] = c * f[i] - psi[i] - d[i];
            }
            for blk in dy.chunks_mut(self.blk) {
                lu_solve(&self.lu, self.blk, &self.piv, blk);
            }
            let norm = scaled_rms(&dy, y_pred, y_pred, &self.o);
            let rate = old.map(|o| norm / o);
            if let Some(r) = rate
                && (r >= 1.0
                    || r.powi((NEWTON_MAXITER - it) as i32) / (1.0 - r) * norm > self.newton_tol)
            {
                return Ok((false, it + 1, y, d));
            }
            for i in 0..n {
                y[i] += dy[i];
                d[i] += dy[i];
            }
            if norm == 0.0 || rate.is_some_and(|r| r / (1.0 - r) * norm < self.newton_tol) {
                return Ok((true, it + 1, y, d));
            }
            old = Some(norm);
        }
        Ok((false, NEWTON_MAXITER, y, d))
    }

    /// Multiplies the step size by `rho` (rescaling the differences).
    fn rescale(&mut self, rho: f64) {
        self.h *= rho;
        change_d(&mut self.d, self.k, rho);
        self.n_equal = 0;
        self.lu_valid = false;
    }

    /// One accepted step; returns the error norm of the accepted step and the Newton
    /// iteration count.
    fn step(&mut self, target: f64) -> Result<(f64, usize), OdeFailure> {
        let n = self.n;
        loop {
            let min_step = 16.0 * f64::EPSILON * self.t.abs().max(target.abs()).max(1.0);
            if self.h < min_step {
                return Err(OdeFailure::StepTooSmall {
                    t: self.t,
                    h: self.h,
                });
            }
            let k = self.k;
            let t_new = self.t + self.h;
            let mut y_pred = vec![0.0; n];
            for dj in &self.d[..=k] {
                for (p, x) in y_pred.iter_mut().zip(dj) {
                    *p += x;
                }
            }
            let gk = gamma(k);
            let mut psi = vec![0.0; n];
            for j in 1..=k {
                let g = gamma(j) / gk;
                for (p, x) in psi.iter_mut().zip(&self.d[j]) {
                    *p += g * x;
                }
            }
            let c = self.h / gk;
            if !self.lu_valid && !self.factor(c) {
                self.rescale(0.5);
                continue;
            }
            let (ok, iters, y_new, d) = self.newton(t_new, &y_pred, c, &psi)?;
            if !ok {
                if !self.jac_current {
                    self.sys.jacobian(t_new, &y_pred, &mut self.jac)?;
                    if !all_finite(&self.jac) {
                        return Err(OdeFailure::NonFinite { t: t_new });
                    }
                    self.jac_current = true;
                    self.lu_valid = false;
                } else {
                    self.rescale(0.5);
                }
                continue;
            }
            let safety =
                0.9 * (2 * NEWTON_MAXITER + 1) as f64 / (2 * NEWTON_MAXITER + iters) as f64;
            let e: Vec<f64> = d.iter().map(|x| error_const(k) * x).collect();
            let en = scaled_rms(&e, &y_new, &y_new, &self.o);
            if en > 1.0 {
                let rho = (safety * en.powf(-1.0 / (k as f64 + 1.0))).max(MIN_FACTOR);
                self.rescale(rho);
                continue;
            }
            // Accept: update the differences.
            self.t = t_new;
            self.jac_current = false;
            self.n_equal += 1;
            let next: Vec<f64> = d.iter().zip(&self.d[k + 1]).map(|(a, b)| a - b).collect();
            self.d[k + 2] = next;
            self.d[k + 1] = d;
            for i in (0..=k).rev() {
                let (lo, hi) = self.d.split_at_mut(i + 1);
                for (a, b) in lo[i].iter_mut().zip(&hi[0]) {
                    *a += b;
                }
            }
            return Ok((en, iters));
        }
    }

    /// The interpolated state at `t` in the last step `[self.t − h, self.t]`.
    fn interpolate(&self, t: f64) -> Vec<f64> {
        let mut y = self.d[0].clone();
        let mut p = 1.0;
        for j in 1..=self.k {
            let m = (j - 1) as f64;
            p *= (t - (self.t - self.h * m)) / (self.h * (1.0 + m));
            for (a, b) in y.iter_mut().zip(&self.d[j]) {
                *a += b * p;
            }
        }
        y
    }

    /// After an accepted step: the order and step size for the next one.
    fn adapt(&mut self, en: f64, iters: usize) {
        let k = self.k;
        if self.n_equal < k + 1 {
            return;
        }
        let scale_y = self.d[0].clone();
        let norm = |v: &[f64], c: f64| {
            let e: Vec<f64> = v.iter().map(|x| c * x).collect();
            scaled_rms(&e, &scale_y, &scale_y, &self.o)
        };
        let em = if k > 1 {
            norm(&self.d[k], error_const(k - 1))
        } else {
            f64::INFINITY
        };
        let ep = if k < MAX_ORDER {
            norm(&self.d[k + 2], error_const(k + 1))
        } else {
            f64::INFINITY
        };
        let fac = |e: f64, q: f64| {
            if e == 0.0 {
                f64::INFINITY
            } else {
                e.powf(-1.0 / q)
            }
        };
        let cands = [
            fac(em, k as f64),
            fac(en, k as f64 + 1.0),
            fac(ep, k as f64 + 2.0),
        ];
        let mut best = 1;
        for (i, &c) in cands.iter().enumerate() {
            if c > cands[best] {
                best = i;
            }
        }
        let safety = 0.9 * (2 * NEWTON_MAXITER + 1) as f64 / (2 * NEWTON_MAXITER + iters) as f64;
        self.k = k + best - 1;
        let rho = (safety * cands[best]).min(MAX_FACTOR);
        self.rescale(rho);
    }
}

/// Integrates `sys` from `(t0, y0)` and returns the state at each output time of `ts` (checked
/// by [`super::check_times`]: after `t0`, non-decreasing). `max_num_steps` bounds the steps
/// between consecutive output times.
pub fn solve(
    sys: &mut dyn OdeSystem,
    y0: &[f64],
    t0: f64,
    ts: &[f64],
    o: &OdeOptions,
) -> Result<Vec<Vec<f64>>, OdeFailure> {
    let n = sys.dim();
    let blk = sys.block();
    let mut f0 = vec![0.0; n];
    sys.rhs(t0, y0, &mut f0)?;
    if !all_finite(&f0) {
        return Err(OdeFailure::NonFinite { t: t0 });
    }
    let span = ts.last().map_or(1.0, |&t| t - t0);
    let h = initial_step(sys, t0, y0, &f0, 1, span, o)?;
    let mut jac = vec![0.0; blk * blk];
    sys.jacobian(t0, y0, &mut jac)?;
    if !all_finite(&jac) {
        return Err(OdeFailure::NonFinite { t: t0 });
    }
    let mut d = vec![vec![0.0; n]; MAX_ORDER + 3];
    d[0].copy_from_slice(y0);
    for (a, b) in d[1].iter_mut().zip(&f0) {
        *a = h * b;
    }
    let mut s = Bdf {
        sys,
        o: *o,
        n,
        blk,
        t: t0,
        h,
        k: 1,
        d,
        n_equal: 0,
        jac,
        jac_current: true,
        lu: vec![0.0; blk * blk],
        piv: vec![0; blk],
        lu_valid: false,
        newton_tol: (10.0 * f64::EPSILON / o.rtol).max(0.03f64.min(o.rtol.sqrt())),
    };
    let mut out = Vec::with_capacity(ts.len());
    let mut next = 0;
    let mut steps = 0u64;
    while next < ts.len() {
        if steps >= o.max_num_steps {
            return Err(OdeFailure::MaxSteps {
                t: s.t,
                target: ts[next],
            });
        }
        steps += 1;
        let (en, iters) = s.step(ts[next])?;
        if !all_finite(&s.d[0]) {
            return Err(OdeFailure::NonFinite { t: s.t });
        }
        while next < ts.len() && ts[next] <= s.t {
            out.push(s.interpolate(ts[next]));
            next += 1;
            steps = 0;
        }
        s.adapt(en, iters);
    }
    Ok(out)
}
