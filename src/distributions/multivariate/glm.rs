//! Generalised linear models as one density each (Stan Functions Reference, "Generalized
//! linear models"): with the N × K design matrix x, intercept α and coefficients β,
//! - `poisson_log_glm(y | x, α, β)` = Σₙ poisson_log(yₙ | ηₙ), η = α + xβ;
//! - `bernoulli_logit_glm(y | x, α, β)` = Σₙ bernoulli_logit(yₙ | ηₙ);
//! - `categorical_logit_glm(y | x, α, β)` = Σₙ categorical_logit(yₙ | ηₙ), η = xβ + 1αᵀ with
//!   β a K × C matrix and α a C-vector (one row of log odds per observation).
//!
//! y is an int (the same outcome for every row) or an array of N ints; α of the first two is a
//! real or an N-vector. Partials: with ∂ηₙ the derivative in the linear predictor, ∂/∂β = xᵀ∂η,
//! ∂/∂x = ∂η βᵀ, ∂/∂α = Σₙ ∂ηₙ (or ∂η for a vector α).

use super::{MvArg, MvSig, err, vector_len};
use crate::distributions::args::{DistError, Term};
use crate::distributions::special::{lgamma, log1p_exp};

/// The outcomes of `y` for N rows (a single int is broadcast).
fn outcomes(sig: &MvSig, y: &MvArg, n: usize) -> Result<Vec<f64>, DistError> {
    if y.array.is_none() {
        return Ok(vec![y.data[0]; n]);
    }
    if y.data.len() != n {
        return Err(err(
            sig,
            format!(
                "size of {} ({}) and rows of {} ({n}) must match in size",
                sig.variate.name,
                y.data.len(),
                sig.params[0].name
            ),
        ));
    }
    Ok(y.data.to_vec())
}

fn check_finite_all(sig: &MvSig, a: &MvArg, k: usize) -> Result<(), DistError> {
    super::check_finite(sig, a, k)
}

/// η = α + xβ for the scalar-outcome GLMs, after the size and finiteness checks.
fn linear_predictor(sig: &MvSig, args: &[MvArg]) -> Result<(usize, usize, Vec<f64>), DistError> {
    let (x, alpha, beta) = (&args[1], &args[2], &args[3]);
    let (n, k) = (x.rows, x.cols);
    let kb = vector_len(sig, beta, 3)?;
    if kb != k {
        return Err(err(
            sig,
            format!(
                "columns of {} ({k}) and size of {} ({kb}) must match in size",
                sig.params[0].name, sig.params[2].name
            ),
        ));
    }
    let alpha_vec = !(alpha.data.len() == 1 && alpha.array.is_none());
    if alpha_vec && alpha.data.len() != n {
        return Err(err(
            sig,
            format!(
                "rows of {} ({n}) and size of {} ({}) must match in size",
                sig.params[0].name,
                sig.params[1].name,
                alpha.data.len()
            ),
        ));
    }
    for j in 1..4 {
        check_finite_all(sig, &args[j], j)?;
    }
    let mut eta: Vec<f64> = (0..n)
        .map(|i| alpha.data[if alpha_vec { i } else { 0 }])
        .collect();
    for (c, &b) in beta.data.iter().enumerate() {
        let col = &x.data[c * n..(c + 1) * n];
        for (e, &xv) in eta.iter_mut().zip(col) {
            *e += xv * b;
        }
    }
    Ok((n, k, eta))
}

/// Spreads ∂η into the partials of x, α and β.
fn chain(args: &[MvArg], is_var: &[bool], term: &mut Term, d_eta: &[f64], n: usize, k: usize) {
    let (x, beta) = (&args[1], &args[3]);
    if is_var[1] {
        for c in 0..k {
            for i in 0..n {
                term.partials[1][i + c * n] += d_eta[i] * beta.data[c];
            }
        }
    }
    if is_var[2] {
        if term.partials[2].len() == 1 {
            term.partials[2][0] += d_eta.iter().sum::<f64>();
        } else {
            for (p, d) in term.partials[2].iter_mut().zip(d_eta) {
                *p += d;
            }
        }
    }
    if is_var[3] {
        for c in 0..k {
            let col = &x.data[c * n..(c + 1) * n];
            term.partials[3][c] += col.iter().zip(d_eta).map(|(a, b)| a * b).sum::<f64>();
        }
    }
}

/// The per-observation terms of a GLM: ℓₙ and ∂ℓₙ/∂ηₙ for every row n, from which the
/// density (Σₙ ℓₙ) and its partials follow by the chain rule through η = α + xβ. The per-row
/// gradient pass (`graph::per_row`) records one term per row from these.
#[derive(Clone, Debug, Default)]
pub struct GlmRows {
    /// N, the rows of x.
    pub n: usize,
    /// K, the columns of x.
    pub k: usize,
    /// C, the linear predictors per row (1, or the categories of `categorical_logit_glm`).
    pub c: usize,
    /// ℓₙ, N values (the constants are left out under `~`).
    pub values: Vec<f64>,
    /// ∂ℓₙ/∂η_{n,j}, N × C row-major.
    pub d_eta: Vec<f64>,
}

/// `poisson_log_glm` row by row: ℓₙ = yₙηₙ − e^{ηₙ} − log yₙ! (the last dropped under
/// `propto`), ∂ηₙ = yₙ − e^{ηₙ}. Errors: y not a nonnegative integer, sizes that do not match,
/// x, α or β not finite.
pub fn poisson_log_rows(sig: &MvSig, args: &[MvArg], propto: bool) -> Result<GlmRows, DistError> {
    let (n, k, eta) = linear_predictor(sig, args)?;
    let y = outcomes(sig, &args[0], n)?;
    for (i, &v) in y.iter().enumerate() {
        if !(v >= 0.0) {
            return Err(err(
                sig,
                format!(
                    "{}[{}] is {v}, but must be nonnegative",
                    sig.variate.name,
                    i + 1
                ),
            ));
        }
    }
    let mut rows = GlmRows {
        n,
        k,
        c: 1,
        values: Vec::with_capacity(n),
        d_eta: Vec::with_capacity(n),
    };
    for i in 0..n {
        let mu = eta[i].exp();
        let mut v = y[i] * eta[i] - mu;
        if !propto {
            v -= lgamma(y[i] + 1.0);
        }
        rows.values.push(v);
        rows.d_eta.push(y[i] - mu);
    }
    Ok(rows)
}

/// `bernoulli_logit_glm` row by row: ℓₙ = log σ((2yₙ − 1)ηₙ), ∂ηₙ = yₙ − σ(ηₙ). Errors: y not
/// 0 or 1, sizes that do not match, x, α or β not finite.
pub fn bernoulli_logit_rows(sig: &MvSig, args: &[MvArg]) -> Result<GlmRows, DistError> {
    let (n, k, eta) = linear_predictor(sig, args)?;
    let y = outcomes(sig, &args[0], n)?;
    for (i, &v) in y.iter().enumerate() {
        if !(v == 0.0 || v == 1.0) {
            return Err(err(
                sig,
                format!(
                    "{}[{}] is {v}, but must be in the interval [0, 1]",
                    sig.variate.name,
                    i + 1
                ),
            ));
        }
    }
    let mut rows = GlmRows {
        n,
        k,
        c: 1,
        values: Vec::with_capacity(n),
        d_eta: Vec::with_capacity(n),
    };
    for i in 0..n {
        let s = 2.0 * y[i] - 1.0;
        rows.values.push(-log1p_exp(-s * eta[i]));
        rows.d_eta
            .push(y[i] - crate::distributions::special::inv_logit(eta[i]));
    }
    Ok(rows)
}

/// `poisson_log_glm_lpmf(y | x, α, β)` into `term`: Σ yₙηₙ − e^{ηₙ} − log yₙ! (the last
/// dropped under `~`); ∂ηₙ = yₙ − e^{ηₙ}. Errors: as [`poisson_log_rows`].
pub fn poisson_log_lpmf(
    sig: &MvSig,
    args: &[MvArg],
    is_var: &[bool],
    propto: bool,
    term: &mut Term,
) -> Result<(), DistError> {
    let rows = poisson_log_rows(sig, args, propto)?;
    if propto && !is_var.iter().any(|&v| v) {
        return Ok(());
    }
    term.value += rows.values.iter().sum::<f64>();
    chain(args, is_var, term, &rows.d_eta, rows.n, rows.k);
    Ok(())
}

/// `bernoulli_logit_glm_lpmf(y | x, α, β)` into `term`: Σ log σ((2yₙ − 1)ηₙ) (no constant
/// terms); ∂ηₙ = yₙ − σ(ηₙ). Errors: as [`bernoulli_logit_rows`].
pub fn bernoulli_logit_lpmf(
    sig: &MvSig,
    args: &[MvArg],
    is_var: &[bool],
    propto: bool,
    term: &mut Term,
) -> Result<(), DistError> {
    let rows = bernoulli_logit_rows(sig, args)?;
    if propto && !is_var.iter().any(|&v| v) {
        return Ok(());
    }
    term.value += rows.values.iter().sum::<f64>();
    chain(args, is_var, term, &rows.d_eta, rows.n, rows.k);
    Ok(())
}

/// `categorical_logit_glm` row by row: x N × K, α a C-vector, β K × C, yₙ ∈ 1..C;
/// ℓₙ = η_{n,yₙ} − log Σ_c e^{η_{n,c}}, ∂ηₙ = onehot(yₙ) − softmax(ηₙ). Errors: an outcome
/// outside 1..C, sizes that do not match, x, α or β not finite.
pub fn categorical_logit_rows(sig: &MvSig, args: &[MvArg]) -> Result<GlmRows, DistError> {
    let (x, alpha, beta) = (&args[1], &args[2], &args[3]);
    let (n, k) = (x.rows, x.cols);
    let c = vector_len(sig, alpha, 2)?;
    if beta.rows != k || beta.cols != c {
        return Err(err(
            sig,
            format!(
                "{} must be {k} × {c} (columns of {} × size of {}), found {} × {}",
                sig.params[2].name, sig.params[0].name, sig.params[1].name, beta.rows, beta.cols
            ),
        ));
    }
    for j in 1..4 {
        check_finite_all(sig, &args[j], j)?;
    }
    let y = outcomes(sig, &args[0], n)?;
    for (i, &v) in y.iter().enumerate() {
        if !(v >= 1.0 && v <= c as f64) {
            return Err(err(
                sig,
                format!(
                    "{}[{}] is {v}, but must be in the interval [1, {c}]",
                    sig.variate.name,
                    i + 1
                ),
            ));
        }
    }
    // η (N × C, row-major per observation), turned into ∂η in place.
    let mut eta = vec![0.0; n * c];
    for i in 0..n {
        for j in 0..c {
            let mut e = alpha.data[j];
            for m in 0..k {
                e += x.data[i + m * n] * beta.data[m + j * k];
            }
            eta[i * c + j] = e;
        }
    }
    let mut values = Vec::with_capacity(n);
    for i in 0..n {
        let row = &mut eta[i * c..(i + 1) * c];
        let top = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let z: f64 = row.iter().map(|e| (e - top).exp()).sum();
        let lse = top + z.ln();
        let yi = y[i] as usize - 1;
        values.push(row[yi] - lse);
        for (j, e) in row.iter_mut().enumerate() {
            *e = f64::from(u8::from(j == yi)) - (*e - lse).exp();
        }
    }
    Ok(GlmRows {
        n,
        k,
        c,
        values,
        d_eta: eta,
    })
}

/// `categorical_logit_glm_lpmf(y | x, α, β)` into `term`: Σₙ η_{n,yₙ} − log Σ_c e^{η_{n,c}}
/// (no constant terms). With ∂η = onehot(y) − softmax(η) row by row: ∂/∂β = xᵀ∂η,
/// ∂/∂α = Σₙ ∂ηₙ, ∂/∂x = ∂η βᵀ. Errors: as [`categorical_logit_rows`].
pub fn categorical_logit_lpmf(
    sig: &MvSig,
    args: &[MvArg],
    is_var: &[bool],
    propto: bool,
    term: &mut Term,
) -> Result<(), DistError> {
    let rows = categorical_logit_rows(sig, args)?;
    if propto && !is_var.iter().any(|&v| v) {
        return Ok(());
    }
    let (x, beta) = (&args[1], &args[3]);
    let (n, k, c) = (rows.n, rows.k, rows.c);
    term.value += rows.values.iter().sum::<f64>();
    let d = &rows.d_eta;
    if is_var[1] {
        for i in 0..n {
            for m in 0..k {
                let s: f64 = (0..c).map(|j| d[i * c + j] * beta.data[m + j * k]).sum();
                term.partials[1][i + m * n] += s;
            }
        }
    }
    if is_var[2] {
        for i in 0..n {
            for j in 0..c {
                term.partials[2][j] += d[i * c + j];
            }
        }
    }
    if is_var[3] {
        for j in 0..c {
            for m in 0..k {
                let s: f64 = (0..n).map(|i| x.data[i + m * n] * d[i * c + j]).sum();
                term.partials[3][m + j * k] += s;
            }
        }
    }
    Ok(())
}
