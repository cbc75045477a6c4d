//! LKJ distribution on the Cholesky factor L of a K × K correlation matrix Ω = L Lᵀ
//! (Lewandowski, Kurowicka & Joe 2009, "Generating random correlation matrices based on vines
//! and extended onion method", J. Multivariate Anal. 100, eq. 16; Stan Functions Reference,
//! "Cholesky LKJ correlation distribution"):
//!
//! log p(L | η) = Σ_{i=2}^{K} (K − i + 2η − 2) log Lᵢᵢ − log c_K(η),
//! c_K(η) = 2^{Σ_{k=1}^{K−1} (2η − 2 + K − k)(K − k)} · Π_{k=1}^{K−1} B(η + (K−k−1)/2, η + (K−k−1)/2)^{K−k},
//!
//! i.e. LKJ(Ω | η) ∝ det(Ω)^{η−1} times the Jacobian Π Lᵢᵢ^{K−i} of Ω = L Lᵀ.

use super::linalg::at;
use super::{MvArg, MvDraw, MvSig, err};
use crate::distributions::args::{DistError, Term};
use crate::distributions::special::{digamma, lgamma};
use rand::Rng;
use rand_distr::Distribution;

/// log c_K(η) and its derivative in η.
pub fn log_normaliser(k: usize, eta: f64) -> (f64, f64) {
    let (mut v, mut d) = (0.0, 0.0);
    for j in 1..k {
        let m = (k - j) as f64;
        let a = eta + (m - 1.0) / 2.0;
        v += (2.0 * eta - 2.0 + m) * m * std::f64::consts::LN_2;
        d += 2.0 * m * std::f64::consts::LN_2;
        v += m * (2.0 * lgamma(a) - lgamma(2.0 * a));
        d += m * (2.0 * digamma(a) - 2.0 * digamma(2.0 * a));
    }
    (v, d)
}

fn check_shape(sig: &MvSig, eta: f64, l: &MvArg) -> Result<usize, DistError> {
    if !(eta > 0.0 && eta.is_finite()) {
        return Err(err(
            sig,
            format!(
                "{} is {}, but must be positive finite",
                sig.params[0].name,
                crate::words::shown_zero(eta)
            ),
        ));
    }
    let k = l.rows;
    if l.rows != l.cols {
        return Err(err(
            sig,
            format!(
                "Expecting a square matrix; rows of {} ({}) and columns of {} ({}) must match in size",
                sig.variate.name, l.rows, sig.variate.name, l.cols
            ),
        ));
    }
    Ok(k)
}

/// `lkj_corr_cholesky_lpdf(L | η)` into `term`. Only the diagonal of L enters the density;
/// like Stan, L is checked to be square and lower triangular (η positive finite).
/// ∂/∂Lᵢᵢ = (K − i + 2η − 2)/Lᵢᵢ, ∂/∂η = 2 Σ_{i≥2} log Lᵢᵢ − ∂ log c_K/∂η.
pub fn lpdf(
    sig: &MvSig,
    args: &[MvArg],
    is_var: &[bool],
    propto: bool,
    term: &mut Term,
) -> Result<(), DistError> {
    let (l, eta_arg) = (&args[0], &args[1]);
    if l.array.is_some() || eta_arg.data.len() != 1 {
        return Err(err(
            sig,
            "expects one matrix and a real shape parameter".into(),
        ));
    }
    let eta = eta_arg.data[0];
    let k = check_shape(sig, eta, l)?;
    for c in 0..k {
        for r in 0..c {
            let x = at(l.data, k, r, c);
            if x != 0.0 {
                return Err(err(
                    sig,
                    format!(
                        "{} is not lower triangular; {}[{},{}]={x}",
                        sig.variate.name,
                        sig.variate.name,
                        r + 1,
                        c + 1
                    ),
                ));
            }
        }
    }
    if propto && !is_var.iter().any(|&v| v) {
        return Ok(());
    }
    if !propto || is_var[1] {
        let (c, dc) = log_normaliser(k, eta);
        term.value -= c;
        if is_var[1] {
            term.partials[1][0] -= dc;
        }
    }
    for i in 1..k {
        let lii = at(l.data, k, i, i);
        let log_lii = lii.ln();
        // 0-based row i is row i + 1 in the formula: coefficient K − (i+1) + 2η − 2.
        let shape_part = 2.0 * eta - 2.0;
        let jac_part = (k - i - 1) as f64;
        if !propto || is_var[0] {
            term.value += jac_part * log_lii;
        }
        if !propto || is_var[0] || is_var[1] {
            term.value += shape_part * log_lii;
        }
        if is_var[0] {
            term.partials[0][i + i * k] += (jac_part + shape_part) / lii;
        }
        if is_var[1] {
            term.partials[1][0] += 2.0 * log_lii;
        }
    }
    Ok(())
}

/// `lkj_corr_cholesky_rng(K, η)`: partial correlations of a C-vine drawn from scaled Betas,
/// Beta(β_j, β_j) on (−1, 1) with β_j = η + (K − 1 − j)/2 at level j = 1..K−1 (LKJ 2009 §2.4,
/// the vine method), mapped to the Cholesky factor row by row:
/// L_{ij} = z_{ij} √(1 − Σ_{p<j} L_{ip}²), L_{ii} = √(1 − Σ_{p<i} L_{ip}²).
pub fn rng<R: Rng + ?Sized>(
    sig: &MvSig,
    params: &[MvArg],
    rng: &mut R,
) -> Result<MvDraw, DistError> {
    let kf = params[0].data[0];
    let eta = params[1].data[0];
    if !(kf >= 1.0) {
        return Err(err(
            sig,
            format!(
                "{} is {kf}, but must be positive",
                sig.rng_params.map_or("Dimension", |p| p[0].name)
            ),
        ));
    }
    let k = kf as usize;
    let l_dummy = MvArg::matrix(&[], k, k);
    check_shape(sig, eta, &l_dummy)?;
    let mut l = vec![0.0; k * k];
    for i in 0..k {
        let mut rest: f64 = 1.0;
        for j in 0..i {
            let b = eta + (k as f64 - 2.0 - j as f64) / 2.0;
            let z = 2.0
                * rand_distr::Beta::new(b, b)
                    .expect("η > 0 and K > j + 1 make both shapes positive")
                    .sample(rng)
                - 1.0;
            let v = z * rest.max(0.0).sqrt();
            l[i + j * k] = v;
            rest -= v * v;
        }
        l[i + i * k] = rest.max(0.0).sqrt();
    }
    Ok(MvDraw::Matrix { k, data: l })
}

/// `lkj_corr_lpdf(Ω | η)` into `term`: log LKJ(Ω | η) = (η − 1) log det Ω − log c_K(η) (the
/// same normaliser as the Cholesky form, whose density is this one times the Jacobian of
/// Ω = L Lᵀ). ∂/∂Ω = (η − 1) Ω⁻¹ (every entry), ∂/∂η = log det Ω − ∂ log c_K/∂η.
/// Errors: η not positive finite, Ω not square, not symmetric, not unit-diagonal or not
/// positive definite.
pub fn corr_lpdf(
    sig: &MvSig,
    args: &[MvArg],
    is_var: &[bool],
    propto: bool,
    term: &mut Term,
) -> Result<(), DistError> {
    let (om, eta_arg) = (&args[0], &args[1]);
    if om.array.is_some() || eta_arg.data.len() != 1 {
        return Err(err(
            sig,
            "expects one matrix and a real shape parameter".into(),
        ));
    }
    let eta = eta_arg.data[0];
    let k = check_shape(sig, eta, om)?;
    let l = super::matrix_checks::corr_cholesky(sig, om.data, k, sig.variate.name)?;
    if propto && !is_var.iter().any(|&v| v) {
        return Ok(());
    }
    let log_det = 2.0 * super::matrix_checks::log_diag_sum(&l, k);
    if !propto || is_var[0] || is_var[1] {
        term.value += (eta - 1.0) * log_det;
    }
    if !propto || is_var[1] {
        let (c, dc) = log_normaliser(k, eta);
        term.value -= c;
        if is_var[1] {
            term.partials[1][0] += log_det - dc;
        }
    }
    if is_var[0] {
        let inv = super::linalg::inverse_from_cholesky(&l, k);
        for (p, x) in term.partials[0].iter_mut().zip(inv) {
            *p += (eta - 1.0) * x;
        }
    }
    Ok(())
}

/// `lkj_corr_rng(K, η)`: Ω = L Lᵀ for L a draw of [`rng`]. Errors: as [`rng`].
pub fn corr_rng<R: Rng + ?Sized>(
    sig: &MvSig,
    params: &[MvArg],
    rng_: &mut R,
) -> Result<MvDraw, DistError> {
    let (k, l) = match rng(sig, params, rng_)? {
        MvDraw::Matrix { k, data } => (k, data),
        other => return Ok(other),
    };
    let mut om = vec![0.0; k * k];
    for c in 0..k {
        for r in 0..k {
            om[r + c * k] = (0..=r.min(c)).map(|p| l[r + p * k] * l[c + p * k]).sum();
        }
    }
    for i in 0..k {
        om[i + i * k] = 1.0;
    }
    Ok(MvDraw::Matrix { k, data: om })
}
