//! Matrix argument checks shared by the matrix-variate families (Stan Math's `check_square`,
//! `check_symmetric`, `check_pos_definite`, `check_cholesky_factor`, `check_corr_matrix`), and
//! the multivariate gamma function.

use super::linalg::{at, cholesky};
use super::{CONSTRAINT_TOLERANCE, MvArg, MvSig, err};
use crate::distributions::args::DistError;
use crate::distributions::special::{digamma, lgamma};

/// The side of a square, non-array matrix argument `a` called `name`.
///
/// Errors: an array, or rows ≠ columns.
pub fn square(sig: &MvSig, a: &MvArg, name: &str) -> Result<usize, DistError> {
    if a.array.is_some() {
        return Err(err(sig, format!("{name} must be a matrix, found an array")));
    }
    if a.rows != a.cols {
        return Err(err(
            sig,
            format!(
                "Expecting a square matrix; rows of {name} ({}) and columns of {name} ({}) must match in size",
                a.rows, a.cols
            ),
        ));
    }
    Ok(a.rows)
}

/// Two square arguments of the same side.
///
/// Errors: as [`square`], or sides that differ.
pub fn same_side(
    sig: &MvSig,
    a: &MvArg,
    an: &str,
    b: &MvArg,
    bn: &str,
) -> Result<usize, DistError> {
    let (ka, kb) = (square(sig, a, an)?, square(sig, b, bn)?);
    if ka != kb {
        return Err(err(
            sig,
            format!("side length of {an} ({ka}) and side length of {bn} ({kb}) must match in size"),
        ));
    }
    Ok(ka)
}

/// The lower Cholesky factor of a symmetric positive-definite K × K matrix `a`.
///
/// Errors: an entry not finite, |a_rc − a_cr| above [`CONSTRAINT_TOLERANCE`], or a matrix that
/// is not positive definite.
pub fn symmetric_cholesky(
    sig: &MvSig,
    a: &[f64],
    k: usize,
    name: &str,
) -> Result<Vec<f64>, DistError> {
    if let Some(x) = a.iter().find(|x| !x.is_finite()) {
        return Err(err(
            sig,
            format!("{name} has an entry {x}, but must be finite"),
        ));
    }
    for c in 0..k {
        for r in c + 1..k {
            let (lo, up) = (at(a, k, r, c), at(a, k, c, r));
            if !((lo - up).abs() <= CONSTRAINT_TOLERANCE) {
                return Err(err(
                    sig,
                    format!(
                        "{name} is not symmetric. {name}[{},{}] = {up}, but {name}[{},{}] = {lo}",
                        c + 1,
                        r + 1,
                        r + 1,
                        c + 1
                    ),
                ));
            }
        }
    }
    cholesky(a, k).ok_or_else(|| err(sig, format!("{name} is not positive definite")))
}

/// Stan's `check_cholesky_factor` on a square K × K matrix: lower triangular with a positive
/// finite diagonal.
pub fn cholesky_factor(sig: &MvSig, l: &[f64], k: usize, name: &str) -> Result<(), DistError> {
    for c in 0..k {
        for r in 0..c {
            let x = at(l, k, r, c);
            if x != 0.0 {
                return Err(err(
                    sig,
                    format!(
                        "{name} is not lower triangular; {name}[{},{}]={x}",
                        r + 1,
                        c + 1
                    ),
                ));
            }
        }
        let d = at(l, k, c, c);
        if !(d > 0.0 && d.is_finite()) {
            return Err(err(
                sig,
                format!(
                    "{name} is not a valid Cholesky factor; {name}[{},{}]={d}, but the diagonal must be positive finite",
                    c + 1,
                    c + 1
                ),
            ));
        }
    }
    if let Some(x) = l.iter().find(|x| !x.is_finite()) {
        return Err(err(
            sig,
            format!("{name} has an entry {x}, but must be finite"),
        ));
    }
    Ok(())
}

/// Stan's `check_corr_matrix`: symmetric positive definite with a unit diagonal (within
/// [`CONSTRAINT_TOLERANCE`]); returns the Cholesky factor.
pub fn corr_cholesky(sig: &MvSig, a: &[f64], k: usize, name: &str) -> Result<Vec<f64>, DistError> {
    for i in 0..k {
        let d = at(a, k, i, i);
        if !((d - 1.0).abs() <= CONSTRAINT_TOLERANCE) {
            return Err(err(
                sig,
                format!(
                    "{name} is not a valid correlation matrix. {name}[{},{}] is {d}, but should be near 1",
                    i + 1,
                    i + 1
                ),
            ));
        }
    }
    symmetric_cholesky(sig, a, k, name)
}

/// Σ log Lᵢᵢ of a lower triangular factor: ½ log det (L Lᵀ).
pub fn log_diag_sum(l: &[f64], k: usize) -> f64 {
    (0..k).map(|i| at(l, k, i, i).ln()).sum()
}

/// log Γ_K(a) = K(K − 1)/4 · log π + Σ_{j=1}^{K} log Γ(a + (1 − j)/2) (the multivariate gamma
/// function, Muirhead 1982, Definition 2.1.10) and its derivative Σⱼ ψ(a + (1 − j)/2).
pub fn lmgamma(k: usize, a: f64) -> (f64, f64) {
    let mut v = (k * k.saturating_sub(1)) as f64 / 4.0 * std::f64::consts::PI.ln();
    let mut d = 0.0;
    for j in 0..k {
        let x = a - 0.5 * j as f64;
        v += lgamma(x);
        d += digamma(x);
    }
    (v, d)
}

/// The column-major product A B of K × K matrices.
pub fn matmul(a: &[f64], b: &[f64], k: usize) -> Vec<f64> {
    let mut c = vec![0.0; k * k];
    for j in 0..k {
        for p in 0..k {
            let bpj = b[p + j * k];
            if bpj != 0.0 {
                for i in 0..k {
                    c[i + j * k] += a[i + p * k] * bpj;
                }
            }
        }
    }
    c
}
