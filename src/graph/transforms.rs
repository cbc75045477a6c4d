//! Constraint transforms from the unconstrained scale ζ to constrained parameters, their
//! log-Jacobians, and their inverses ("free" transforms), following the Stan reference manual,
//! chapter "Constraint transforms": lower bound x = lb + eᵘ, upper bound x = ub − eᵘ, both
//! x = lb + (ub − lb)·logit⁻¹(u), affine x = o + m·u, ordered, positive_ordered and simplex
//! (stick-breaking).
//!
//! Each `*_constrain` builds tape nodes (so gradients flow to ζ and to bounds that depend on
//! other parameters) and pushes its log|J| terms onto `log_jac`.

use super::scalar::{inv_logit, log1p_exp};
use super::tape::{S, Tape};
use super::value::{Fault, R};

/// x = lb + eᵘ, log|J| = u. An infinite `lb` means no bound.
pub fn lb_constrain(tape: &mut Tape, u: S, lb: S, log_jac: &mut Vec<S>) -> S {
    let l = tape.value(lb);
    if l == f64::NEG_INFINITY {
        return u;
    }
    let e = tape.value(u).exp();
    log_jac.push(u);
    tape.node(l + e, &[(u, e), (lb, 1.0)])
}

/// x = ub − eᵘ, log|J| = u. An infinite `ub` means no bound.
pub fn ub_constrain(tape: &mut Tape, u: S, ub: S, log_jac: &mut Vec<S>) -> S {
    let h = tape.value(ub);
    if h == f64::INFINITY {
        return u;
    }
    let e = tape.value(u).exp();
    log_jac.push(u);
    tape.node(h - e, &[(u, -e), (ub, 1.0)])
}

/// x = lb + (ub − lb)·s with s = logit⁻¹(u); log|J| = log(ub − lb) + log s + log(1 − s),
/// computed stably as log(ub − lb) − log1p(e⁻ᵘ) − log1p(eᵘ).
/// Errors: `ub <= lb` (recoverable, as bounds may depend on parameters).
pub fn lub_constrain(tape: &mut Tape, u: S, lb: S, ub: S, log_jac: &mut Vec<S>) -> R<S> {
    let (l, h) = (tape.value(lb), tape.value(ub));
    if l == f64::NEG_INFINITY && h == f64::INFINITY {
        return Ok(u);
    }
    if l == f64::NEG_INFINITY {
        return Ok(ub_constrain(tape, u, ub, log_jac));
    }
    if h == f64::INFINITY {
        return Ok(lb_constrain(tape, u, lb, log_jac));
    }
    if h <= l || h.is_nan() || l.is_nan() {
        return Err(Fault::domain(format!(
            "lub_constrain: upper bound is {h}, but must be greater than the lower bound {l}"
        )));
    }
    let uv = tape.value(u);
    let s = inv_logit(uv);
    let w = h - l;
    let x = (l + w * s).min(h).max(l);
    let lj = w.ln() - log1p_exp(-uv) - log1p_exp(uv);
    let j = tape.node(lj, &[(u, 1.0 - 2.0 * s), (lb, -1.0 / w), (ub, 1.0 / w)]);
    log_jac.push(j);
    Ok(tape.node(x, &[(u, w * s * (1.0 - s)), (lb, 1.0 - s), (ub, s)]))
}

/// x = o + m·u, log|J| = log m. Errors: m ≤ 0 (recoverable).
pub fn affine_constrain(tape: &mut Tape, u: S, o: S, m: S, log_jac: &mut Vec<S>) -> R<S> {
    let (ov, mv, uv) = (tape.value(o), tape.value(m), tape.value(u));
    if !(mv > 0.0 && mv.is_finite()) {
        return Err(Fault::domain(format!(
            "offset_multiplier_constrain: multiplier is {}, but must be positive and finite",
            crate::words::shown_zero(mv)
        )));
    }
    let j = tape.node(mv.ln(), &[(m, 1.0 / mv)]);
    log_jac.push(j);
    Ok(tape.node(ov + mv * uv, &[(u, mv), (o, 1.0), (m, uv)]))
}

/// Ordered vector: x₁ = u₁, x_k = x_{k−1} + e^{u_k}; log|J| = Σ_{k≥2} u_k. With `positive`,
/// x₁ = e^{u₁} and log|J| includes u₁.
pub fn ordered_constrain(tape: &mut Tape, u: &[S], positive: bool, log_jac: &mut Vec<S>) -> Vec<S> {
    let mut out = Vec::with_capacity(u.len());
    for (k, &uk) in u.iter().enumerate() {
        let x = if k == 0 {
            if positive {
                let e = tape.value(uk).exp();
                log_jac.push(uk);
                tape.node(e, &[(uk, e)])
            } else {
                uk
            }
        } else {
            let prev = out[k - 1];
            let e = tape.value(uk).exp();
            log_jac.push(uk);
            tape.node(tape.value(prev) + e, &[(prev, 1.0), (uk, e)])
        };
        out.push(x);
    }
    out
}

/// Simplex by stick-breaking (Stan reference manual, "Unit simplex"): K − 1 free values y;
/// z_k = logit⁻¹(y_k − log(K − k)), x_k = (1 − Σ_{j<k} x_j)·z_k, x_K = the remaining stick;
/// log|J| = Σ_k [log z_k + log(1 − z_k) + log(1 − Σ_{j<k} x_j)].
pub fn simplex_constrain(tape: &mut Tape, y: &[S], log_jac: &mut Vec<S>) -> Vec<S> {
    let km1 = y.len();
    let k_total = km1 + 1;
    let mut out = Vec::with_capacity(k_total);
    let mut stick = S::C(1.0);
    for (k, &yk) in y.iter().enumerate() {
        let a = tape.value(yk) - ((k_total - (k + 1)) as f64).ln();
        let z = inv_logit(a);
        let zs = tape.node(z, &[(yk, z * (1.0 - z))]);
        let lz = tape.node(-log1p_exp(-a) - log1p_exp(a), &[(yk, 1.0 - 2.0 * z)]);
        log_jac.push(lz);
        let sv = tape.value(stick);
        let ls = tape.node(sv.ln(), &[(stick, 1.0 / sv)]);
        log_jac.push(ls);
        let x = tape.node(sv * z, &[(stick, z), (zs, sv)]);
        out.push(x);
        stick = tape.node(sv - sv * z, &[(stick, 1.0), (x, -1.0)]);
    }
    out.push(stick);
    out
}

/// Inverse of [`lb_constrain`]: u = log(x − lb). Errors: x < lb (or x = lb).
pub fn lb_free(x: f64, lb: f64) -> R<f64> {
    if lb == f64::NEG_INFINITY {
        return Ok(x);
    }
    if x.is_nan() || x <= lb {
        return Err(Fault::fatal(format!(
            "lb_free: value {x} is not above the lower bound {lb}"
        )));
    }
    Ok((x - lb).ln())
}

/// Inverse of [`ub_constrain`]: u = log(ub − x).
pub fn ub_free(x: f64, ub: f64) -> R<f64> {
    if ub == f64::INFINITY {
        return Ok(x);
    }
    if x.is_nan() || x >= ub {
        return Err(Fault::fatal(format!(
            "ub_free: value {x} is not below the upper bound {ub}"
        )));
    }
    Ok((ub - x).ln())
}

/// Inverse of [`lub_constrain`]: u = logit((x − lb)/(ub − lb)).
pub fn lub_free(x: f64, lb: f64, ub: f64) -> R<f64> {
    if lb == f64::NEG_INFINITY && ub == f64::INFINITY {
        return Ok(x);
    }
    if lb == f64::NEG_INFINITY {
        return ub_free(x, ub);
    }
    if ub == f64::INFINITY {
        return lb_free(x, lb);
    }
    if x.is_nan() || x <= lb || x >= ub {
        return Err(Fault::fatal(format!(
            "lub_free: value {x} is not strictly between the bounds {lb} and {ub}"
        )));
    }
    let p = (x - lb) / (ub - lb);
    Ok((p / (1.0 - p)).ln())
}

/// Inverse of [`affine_constrain`]: u = (x − o)/m.
pub fn affine_free(x: f64, o: f64, m: f64) -> R<f64> {
    if !(m > 0.0 && m.is_finite()) {
        return Err(Fault::fatal(format!(
            "offset_multiplier_free: multiplier is {}, but must be positive and finite",
            crate::words::shown_zero(m)
        )));
    }
    Ok((x - o) / m)
}

/// Inverse of [`ordered_constrain`].
pub fn ordered_free(x: &[f64], positive: bool) -> R<Vec<f64>> {
    let mut u = Vec::with_capacity(x.len());
    for k in 0..x.len() {
        if k == 0 {
            u.push(if positive {
                if x[0] <= 0.0 {
                    return Err(Fault::fatal(format!(
                        "positive_ordered_free: first element is {}, but must be positive",
                        x[0]
                    )));
                }
                x[0].ln()
            } else {
                x[0]
            });
        } else {
            if x[k] <= x[k - 1] {
                return Err(Fault::fatal(format!(
                    "ordered_free: element {} ({}) is not greater than element {} ({})",
                    k + 1,
                    x[k],
                    k,
                    x[k - 1]
                )));
            }
            u.push((x[k] - x[k - 1]).ln());
        }
    }
    Ok(u)
}

/// Inverse of [`simplex_constrain`]. Errors: negative elements or a sum off 1 by more than 1e-8.
pub fn simplex_free(x: &[f64]) -> R<Vec<f64>> {
    let k_total = x.len();
    let sum: f64 = x.iter().sum();
    if x.iter().any(|&v| v.is_nan() || v < 0.0) || (sum - 1.0).abs() > 1e-8 {
        return Err(Fault::fatal(format!(
            "simplex_free: values must be non-negative and sum to 1 (sum is {sum})"
        )));
    }
    let mut stick = 1.0;
    let mut y = Vec::with_capacity(k_total.saturating_sub(1));
    for (k, &xk) in x.iter().take(k_total.saturating_sub(1)).enumerate() {
        let z = xk / stick;
        y.push((z / (1.0 - z)).ln() + ((k_total - (k + 1)) as f64).ln());
        stick -= xk;
    }
    Ok(y)
}

/// Scalar building blocks for the matrix transforms (each one tape node).
mod sc {
    use super::super::tape::{S, Tape};

    pub fn mul(t: &mut Tape, a: S, b: S) -> S {
        let (x, y) = (t.value(a), t.value(b));
        t.node(x * y, &[(a, y), (b, x)])
    }
    pub fn add(t: &mut Tape, a: S, b: S) -> S {
        let v = t.value(a) + t.value(b);
        t.node(v, &[(a, 1.0), (b, 1.0)])
    }
    pub fn one_minus(t: &mut Tape, a: S) -> S {
        let v = 1.0 - t.value(a);
        t.node(v, &[(a, -1.0)])
    }
    pub fn square(t: &mut Tape, a: S) -> S {
        let x = t.value(a);
        t.node(x * x, &[(a, 2.0 * x)])
    }
    pub fn sqrt(t: &mut Tape, a: S) -> S {
        let r = t.value(a).sqrt();
        t.node(r, &[(a, 0.5 / r)])
    }
    pub fn ln(t: &mut Tape, a: S) -> S {
        let x = t.value(a);
        t.node(x.ln(), &[(a, 1.0 / x)])
    }
    pub fn exp(t: &mut Tape, a: S) -> S {
        let e = t.value(a).exp();
        t.node(e, &[(a, e)])
    }
    pub fn tanh(t: &mut Tape, a: S) -> S {
        let h = t.value(a).tanh();
        t.node(h, &[(a, 1.0 - h * h)])
    }
}

/// Number of free coordinates of `cholesky_factor_corr[K]`: K(K − 1)/2.
pub fn cholesky_corr_free_dim(k: usize) -> usize {
    k * k.saturating_sub(1) / 2
}

/// Cholesky factor of a correlation matrix (Stan reference manual, "Cholesky factors of
/// correlation matrices"): canonical partial correlations z = tanh(y), filled row by row;
/// L₁₁ = 1, L_{i1} = z, L_{ij} = z·√(1 − Σ_{l<j} L_{il}²), L_{ii} = √(1 − Σ_{l<i} L_{il}²).
/// log|J| = Σ log(1 − z²) + Σ_{j ≥ 2} ½ log(1 − Σ_{l<j} L_{il}²). Returns K×K column-major.
pub fn cholesky_corr_constrain(tape: &mut Tape, y: &[S], k: usize, log_jac: &mut Vec<S>) -> Vec<S> {
    let mut x = vec![S::C(0.0); k * k];
    if k == 0 {
        return x;
    }
    let z: Vec<S> = y
        .iter()
        .map(|&yi| {
            let zi = sc::tanh(tape, yi);
            let z2 = sc::square(tape, zi);
            let om = sc::one_minus(tape, z2);
            let l = sc::ln(tape, om);
            log_jac.push(l);
            zi
        })
        .collect();
    x[0] = S::C(1.0);
    let mut pos = 0;
    for i in 1..k {
        x[i] = z[pos];
        pos += 1;
        let mut sum_sqs = sc::square(tape, x[i]);
        for j in 1..i {
            let om = sc::one_minus(tape, sum_sqs);
            let l = sc::ln(tape, om);
            let half = sc::mul(tape, S::C(0.5), l);
            log_jac.push(half);
            let r = sc::sqrt(tape, om);
            let v = sc::mul(tape, z[pos], r);
            pos += 1;
            x[i + j * k] = v;
            let v2 = sc::square(tape, v);
            sum_sqs = sc::add(tape, sum_sqs, v2);
        }
        let om = sc::one_minus(tape, sum_sqs);
        x[i + i * k] = sc::sqrt(tape, om);
    }
    x
}

/// Inverse of [`cholesky_corr_constrain`] (`x` K×K column-major).
/// Errors: not lower triangular with unit-length rows and a positive diagonal.
pub fn cholesky_corr_free(x: &[f64], k: usize) -> R<Vec<f64>> {
    let at = |i: usize, j: usize| x[i + j * k];
    for i in 0..k {
        let norm: f64 = (0..k).map(|j| at(i, j) * at(i, j)).sum();
        let upper = (i + 1..k).any(|j| at(i, j) != 0.0);
        if upper || at(i, i).is_nan() || at(i, i) <= 0.0 || (norm - 1.0).abs() > 1e-8 {
            return Err(Fault::fatal(format!(
                "cholesky_factor_corr_free: row {} is not a lower-triangular unit-length row with a positive diagonal",
                i + 1
            )));
        }
    }
    let mut y = Vec::with_capacity(cholesky_corr_free_dim(k));
    for i in 1..k {
        let mut sum_sqs = 0.0f64;
        for j in 0..i {
            let v = at(i, j);
            let z = if j == 0 {
                v
            } else {
                v / (1.0 - sum_sqs).sqrt()
            };
            y.push(z.atanh());
            sum_sqs += v * v;
        }
    }
    Ok(y)
}

/// Number of free coordinates of `cholesky_factor_cov[K]` and `cov_matrix[K]`: K(K + 1)/2.
pub fn cholesky_cov_free_dim(k: usize) -> usize {
    k * (k + 1) / 2
}

/// Lower-triangular K×K with positive diagonal (Stan: "Cholesky factors of covariance
/// matrices"), filled row by row: off-diagonal entries are free, diagonal entries e^y;
/// log|J| = Σ y_diag. Returns column-major storage.
pub fn cholesky_cov_constrain(tape: &mut Tape, y: &[S], k: usize, log_jac: &mut Vec<S>) -> Vec<S> {
    let mut x = vec![S::C(0.0); k * k];
    let mut pos = 0;
    for m in 0..k {
        for n in 0..m {
            x[m + n * k] = y[pos];
            pos += 1;
        }
        log_jac.push(y[pos]);
        x[m + m * k] = sc::exp(tape, y[pos]);
        pos += 1;
    }
    x
}

/// Inverse of [`cholesky_cov_constrain`]. Errors: non-zero upper triangle or diagonal ≤ 0.
pub fn cholesky_cov_free(x: &[f64], k: usize) -> R<Vec<f64>> {
    let mut y = Vec::with_capacity(cholesky_cov_free_dim(k));
    for m in 0..k {
        if (m + 1..k).any(|n| x[m + n * k] != 0.0) || x[m + m * k].is_nan() || x[m + m * k] <= 0.0 {
            return Err(Fault::fatal(format!(
                "cholesky_factor_cov_free: row {} is not lower triangular with a positive diagonal",
                m + 1
            )));
        }
        for n in 0..m {
            y.push(x[m + n * k]);
        }
        y.push(x[m + m * k].ln());
    }
    Ok(y)
}

/// Covariance matrix (Stan: "Covariance matrices"): Σ = L Lᵀ with L from
/// [`cholesky_cov_constrain`]; log|J| = K log 2 + Σ_k (K − k + 1) log L_kk (k 1-based), the
/// Jacobian of the map to the lower triangle of Σ. Returns column-major storage.
pub fn cov_matrix_constrain(tape: &mut Tape, y: &[S], k: usize, log_jac: &mut Vec<S>) -> Vec<S> {
    let mut inner = Vec::new();
    let l = cholesky_cov_constrain(tape, y, k, &mut inner);
    // inner holds y_kk for k = 0..K (log L_kk).
    for (kk, &ykk) in inner.iter().enumerate() {
        let w = (k - kk + 1) as f64;
        log_jac.push(sc::mul(tape, S::C(w), ykk));
    }
    log_jac.push(S::C(k as f64 * std::f64::consts::LN_2));
    let mut x = vec![S::C(0.0); k * k];
    for i in 0..k {
        for j in 0..=i {
            let mut value = 0.0;
            let mut entries: Vec<(S, f64)> = Vec::with_capacity(2 * (j + 1));
            for q in 0..=j {
                let (a, b) = (l[i + q * k], l[j + q * k]);
                let (va, vb) = (tape.value(a), tape.value(b));
                value += va * vb;
                entries.push((a, vb));
                entries.push((b, va));
            }
            let s = tape.node(value, &entries);
            x[i + j * k] = s;
            x[j + i * k] = s;
        }
    }
    x
}

/// Inverse of [`cov_matrix_constrain`]: Cholesky decomposition, then [`cholesky_cov_free`].
/// Errors: not symmetric positive definite.
pub fn cov_matrix_free(x: &[f64], k: usize) -> R<Vec<f64>> {
    let mut l = vec![0.0; k * k];
    for j in 0..k {
        for i in j..k {
            if (x[i + j * k] - x[j + i * k]).abs() > 1e-8 * x[i + j * k].abs().max(1.0) {
                return Err(Fault::fatal("cov_matrix_free: matrix is not symmetric"));
            }
            let mut s = x[i + j * k];
            for q in 0..j {
                s -= l[i + q * k] * l[j + q * k];
            }
            if i == j {
                if s.is_nan() || s <= 0.0 {
                    return Err(Fault::fatal(
                        "cov_matrix_free: matrix is not positive definite",
                    ));
                }
                l[j + j * k] = s.sqrt();
            } else {
                l[i + j * k] = s / l[j + j * k];
            }
        }
    }
    cholesky_cov_free(&l, k)
}

/// Correlation matrix (Stan reference manual, "Correlation matrices"): canonical partial
/// correlations z = tanh(y), consumed column by column into the Cholesky factor L (as Stan's
/// `read_corr_L`), Ω = L Lᵀ. log|J| = Σ log(1 − z²) + ½ Σ_{k=1}^{K−2} Σ_{i>k} (K − k − 1)
/// log(1 − z_{ik}²), the Jacobian of the map to the strictly lower triangle of Ω.
pub fn corr_matrix_constrain(tape: &mut Tape, y: &[S], k: usize, log_jac: &mut Vec<S>) -> Vec<S> {
    let mut l = vec![S::C(0.0); k * k];
    let mut omega = vec![S::C(0.0); k * k];
    if k == 0 {
        return omega;
    }
    // acc[r] = 1 − Σ_{c < col} L[r, c]² for the current column.
    let mut acc = vec![S::C(1.0); k];
    let mut pos = 0;
    for col in 0..k {
        l[col + col * k] = sc::sqrt(tape, acc[col]);
        for r in col + 1..k {
            let z = sc::tanh(tape, y[pos]);
            pos += 1;
            let z2 = sc::square(tape, z);
            let om = sc::one_minus(tape, z2);
            let lom = sc::ln(tape, om);
            log_jac.push(lom);
            let w = 0.5 * (k as f64 - col as f64 - 2.0);
            if w != 0.0 {
                log_jac.push(sc::mul(tape, S::C(w), lom));
            }
            let ra = sc::sqrt(tape, acc[r]);
            l[r + col * k] = sc::mul(tape, z, ra);
            acc[r] = sc::mul(tape, acc[r], om);
        }
    }
    for i in 0..k {
        omega[i + i * k] = S::C(1.0);
        for j in 0..i {
            let mut value = 0.0;
            let mut entries: Vec<(S, f64)> = Vec::with_capacity(2 * (j + 1));
            for q in 0..=j {
                let (a, b) = (l[i + q * k], l[j + q * k]);
                let (va, vb) = (tape.value(a), tape.value(b));
                value += va * vb;
                entries.push((a, vb));
                entries.push((b, va));
            }
            let s = tape.node(value, &entries);
            omega[i + j * k] = s;
            omega[j + i * k] = s;
        }
    }
    omega
}

/// Inverse of [`corr_matrix_constrain`]. Errors: not a symmetric positive definite matrix with
/// unit diagonal.
pub fn corr_matrix_free(x: &[f64], k: usize) -> R<Vec<f64>> {
    if (0..k).any(|i| (x[i + i * k] - 1.0).abs() > 1e-8) {
        return Err(Fault::fatal("corr_matrix_free: diagonal must be 1"));
    }
    let chol = cov_matrix_free(x, k)?;
    // Rebuild L from the free Cholesky coordinates (row by row, log diagonal).
    let mut l = vec![0.0; k * k];
    let mut pos = 0;
    for m in 0..k {
        for n in 0..m {
            l[m + n * k] = chol[pos];
            pos += 1;
        }
        l[m + m * k] = chol[pos].exp();
        pos += 1;
    }
    let mut acc = vec![1.0f64; k];
    let mut y = Vec::with_capacity(cholesky_corr_free_dim(k));
    for col in 0..k {
        for r in col + 1..k {
            let z = l[r + col * k] / acc[r].sqrt();
            y.push(z.atanh());
            acc[r] *= 1.0 - z * z;
        }
    }
    Ok(y)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a transform of the unconstrained vector `u` on a fresh tape: (x values, log|J|).
    fn run(u: &[f64], f: &dyn Fn(&mut Tape, &[S], &mut Vec<S>) -> Vec<S>) -> (Vec<f64>, f64) {
        let mut tape = Tape::default();
        tape.reset(false);
        let us: Vec<S> = u.iter().map(|&x| S::V(tape.leaf(x))).collect();
        let mut lj = Vec::new();
        let xs = f(&mut tape, &us, &mut lj);
        let x: Vec<f64> = xs.iter().map(|&s| tape.value(s)).collect();
        let j: f64 = lj.iter().map(|&s| tape.value(s)).sum();
        (x, j)
    }

    /// log|det J| of the map u → x (square) by central differences and LU.
    fn fd_log_det(u: &[f64], f: &dyn Fn(&[f64]) -> Vec<f64>) -> f64 {
        let n = u.len();
        let h = 1e-6;
        let mut jac = vec![vec![0.0; n]; n];
        for j in 0..n {
            let mut up = u.to_vec();
            let mut dn = u.to_vec();
            up[j] += h;
            dn[j] -= h;
            let (fp, fm) = (f(&up), f(&dn));
            for i in 0..n {
                jac[i][j] = (fp[i] - fm[i]) / (2.0 * h);
            }
        }
        // Gaussian elimination with partial pivoting.
        let mut ld = 0.0;
        for c in 0..n {
            let p = (c..n)
                .max_by(|&a, &b| jac[a][c].abs().total_cmp(&jac[b][c].abs()))
                .unwrap();
            jac.swap(c, p);
            let piv = jac[c][c];
            ld += piv.abs().ln();
            for r in c + 1..n {
                let f = jac[r][c] / piv;
                for k in c..n {
                    jac[r][k] -= f * jac[c][k];
                }
            }
        }
        ld
    }

    #[test]
    fn scalar_bounds_round_trip_and_jacobian() {
        let cases: Vec<(f64, f64)> = vec![(-1.3, 2.0), (0.0, 1.0), (2.5, 7.5)];
        for (lb, ub) in cases {
            for &u in &[-3.0, -0.2, 0.0, 0.7, 4.0] {
                for kind in 0..3 {
                    let f = |t: &mut Tape, us: &[S], lj: &mut Vec<S>| -> Vec<S> {
                        vec![match kind {
                            0 => lb_constrain(t, us[0], S::C(lb), lj),
                            1 => ub_constrain(t, us[0], S::C(ub), lj),
                            _ => lub_constrain(t, us[0], S::C(lb), S::C(ub), lj).unwrap(),
                        }]
                    };
                    let (x, j) = run(&[u], &f);
                    let back = match kind {
                        0 => lb_free(x[0], lb),
                        1 => ub_free(x[0], ub),
                        _ => lub_free(x[0], lb, ub),
                    }
                    .unwrap();
                    assert!((back - u).abs() < 1e-9, "round trip {kind} {u} → {back}");
                    let fd = fd_log_det(&[u], &|v: &[f64]| run(v, &f).0);
                    assert!((fd - j).abs() < 1e-6, "log|J| {kind}: {j} vs {fd}");
                }
            }
        }
    }

    #[test]
    fn affine_round_trip_and_jacobian() {
        let f = |t: &mut Tape, us: &[S], lj: &mut Vec<S>| {
            vec![affine_constrain(t, us[0], S::C(1.5), S::C(0.3), lj).unwrap()]
        };
        let (x, j) = run(&[0.4], &f);
        assert!((x[0] - (1.5 + 0.3 * 0.4)).abs() < 1e-15);
        assert!((j - 0.3f64.ln()).abs() < 1e-15);
        assert!((affine_free(x[0], 1.5, 0.3).unwrap() - 0.4).abs() < 1e-12);
    }

    #[test]
    fn vector_transforms_round_trip_and_jacobian() {
        let u = [0.3, -1.2, 0.8, 0.05];
        for kind in 0..3 {
            let f = |t: &mut Tape, us: &[S], lj: &mut Vec<S>| match kind {
                0 => ordered_constrain(t, us, false, lj),
                1 => ordered_constrain(t, us, true, lj),
                _ => simplex_constrain(t, us, lj),
            };
            let (x, j) = run(&u, &f);
            let back = match kind {
                0 => ordered_free(&x, false),
                1 => ordered_free(&x, true),
                _ => simplex_free(&x),
            }
            .unwrap();
            for (a, b) in back.iter().zip(&u) {
                assert!((a - b).abs() < 1e-9, "round trip kind {kind}: {back:?}");
            }
            // For the simplex the map is onto the first K − 1 coordinates.
            let fd = fd_log_det(&u, &|v: &[f64]| {
                let mut x = run(v, &f).0;
                x.truncate(u.len());
                x
            });
            assert!((fd - j).abs() < 1e-5, "log|J| kind {kind}: {j} vs {fd}");
        }
        let (x, _) = run(&u, &|t, us, lj| simplex_constrain(t, us, lj));
        assert!((x.iter().sum::<f64>() - 1.0).abs() < 1e-14);
        // u = 0 gives the uniform simplex (the offset log(K − k) centres the sticks).
        let (x0, _) = run(&[0.0; 3], &|t, us, lj| simplex_constrain(t, us, lj));
        for v in x0 {
            assert!((v - 0.25).abs() < 1e-14);
        }
    }

    #[test]
    fn matrix_transforms_round_trip_and_jacobian() {
        let k = 3;
        // Cholesky factor of a correlation matrix: the free coordinates map to the strictly
        // lower triangle.
        let y = [0.3, -0.8, 0.5];
        let f = |t: &mut Tape, us: &[S], lj: &mut Vec<S>| cholesky_corr_constrain(t, us, k, lj);
        let (x, j) = run(&y, &f);
        for i in 0..k {
            let norm: f64 = (0..k).map(|c| x[i + c * k].powi(2)).sum();
            assert!((norm - 1.0).abs() < 1e-14);
        }
        let back = cholesky_corr_free(&x, k).unwrap();
        for (a, b) in back.iter().zip(&y) {
            assert!((a - b).abs() < 1e-12);
        }
        let lower = |x: &[f64]| vec![x[1], x[2], x[2 + k]];
        let fd = fd_log_det(&y, &|v: &[f64]| lower(&run(v, &f).0));
        assert!((fd - j).abs() < 1e-6, "{j} vs {fd}");

        // Covariance matrix: the free coordinates map to the lower triangle (with diagonal).
        let y = [0.2, -0.4, 0.1, 0.7, 0.3, -0.5];
        let f = |t: &mut Tape, us: &[S], lj: &mut Vec<S>| cov_matrix_constrain(t, us, k, lj);
        let (x, j) = run(&y, &f);
        let back = cov_matrix_free(&x, k).unwrap();
        for (a, b) in back.iter().zip(&y) {
            assert!((a - b).abs() < 1e-10);
        }
        let tri = |x: &[f64]| {
            let mut v = Vec::new();
            for i in 0..k {
                for c in 0..=i {
                    v.push(x[i + c * k]);
                }
            }
            v
        };
        let fd = fd_log_det(&y, &|v: &[f64]| tri(&run(v, &f).0));
        assert!((fd - j).abs() < 1e-5, "{j} vs {fd}");

        // Cholesky factor of a covariance matrix.
        let f = |t: &mut Tape, us: &[S], lj: &mut Vec<S>| cholesky_cov_constrain(t, us, k, lj);
        let (x, j) = run(&y, &f);
        let back = cholesky_cov_free(&x, k).unwrap();
        assert_eq!(back.len(), 6);
        for (a, b) in back.iter().zip(&y) {
            assert!((a - b).abs() < 1e-12);
        }
        let fd = fd_log_det(&y, &|v: &[f64]| tri(&run(v, &f).0));
        assert!((fd - j).abs() < 1e-6, "{j} vs {fd}");
    }

    #[test]
    fn corr_matrix_round_trip_and_jacobian() {
        let k = 4;
        let y = [0.3, -0.8, 0.5, 0.2, -0.1, 0.6];
        let f = |t: &mut Tape, us: &[S], lj: &mut Vec<S>| corr_matrix_constrain(t, us, k, lj);
        let (x, j) = run(&y, &f);
        for i in 0..k {
            assert_eq!(x[i + i * k], 1.0);
        }
        let back = corr_matrix_free(&x, k).unwrap();
        for (a, b) in back.iter().zip(&y) {
            assert!((a - b).abs() < 1e-10, "{back:?}");
        }
        let strict = |x: &[f64]| {
            let mut v = Vec::new();
            for c in 0..k {
                for r in c + 1..k {
                    v.push(x[r + c * k]);
                }
            }
            v
        };
        let fd = fd_log_det(&y, &|v: &[f64]| strict(&run(v, &f).0));
        assert!((fd - j).abs() < 1e-5, "{j} vs {fd}");
    }
}
