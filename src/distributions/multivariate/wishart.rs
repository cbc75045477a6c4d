//! Wishart and inverse Wishart distributions on K × K symmetric positive-definite matrices
//! (Stan Functions Reference, "Wishart distribution", "Inverse Wishart distribution",
//! "Wishart distribution, Cholesky parameterization"), ν > K − 1:
//!
//! log Wishart(W | ν, S) = (ν − K − 1)/2 log det W − ½ tr(S⁻¹W) − νK/2 log 2 − ν/2 log det S
//! − log Γ_K(ν/2);
//! log InvWishart(W | ν, S) = −(ν + K + 1)/2 log det W − ½ tr(S W⁻¹) − νK/2 log 2
//! + ν/2 log det S − log Γ_K(ν/2);
//! log WishartCholesky(L_W | ν, L_S) = log Wishart(L_W L_Wᵀ | ν, L_S L_Sᵀ) + K log 2
//! + Σₖ (K − k + 1) log L_W,kk, which with M = L_S⁻¹ L_W is
//! Σₖ (ν − k) log L_W,kk − ½‖M‖²_F − ν Σₖ log L_S,kk + K(1 − ν/2) log 2 − log Γ_K(ν/2).
//!
//! Matrix partials (The Matrix Cookbook, eqs. 57, 61, 63) are given for every entry of the
//! full (symmetric) matrix, as for `multi_normal`; the Cholesky form's are on the lower
//! triangle only.

use super::linalg::{at, backward_solve, cholesky, forward_solve, inverse_from_cholesky};
use super::matrix_checks::{
    cholesky_factor, lmgamma, log_diag_sum, matmul, same_side, symmetric_cholesky,
};
use super::{MvArg, MvDraw, MvFamily, MvSig, err};
use crate::distributions::args::{DistError, Term};
use rand::Rng;
use rand_distr::{ChiSquared, Distribution, StandardNormal};

const LN_2: f64 = std::f64::consts::LN_2;

/// ν as a real > K − 1.
fn dof(sig: &MvSig, nu: &MvArg, k: usize) -> Result<f64, DistError> {
    let v = nu.data[0];
    if !(v > k as f64 - 1.0 && v.is_finite()) {
        return Err(err(
            sig,
            format!(
                "{} is {}, but must be finite and greater than {}",
                sig.params[0].name,
                crate::words::shown_zero(v),
                k as f64 - 1.0
            ),
        ));
    }
    Ok(v)
}

/// tr(A B) of K × K matrices.
fn trace_prod(a: &[f64], b: &[f64], k: usize) -> f64 {
    (0..k)
        .map(|i| (0..k).map(|j| at(a, k, i, j) * at(b, k, j, i)).sum::<f64>())
        .sum()
}

/// `wishart_lpdf(W | ν, S)` and `inv_wishart_lpdf(W | ν, S)` into `term`.
///
/// Wishart: ∂W = (ν − K − 1)/2 W⁻¹ − ½S⁻¹, ∂S = −ν/2 S⁻¹ + ½ S⁻¹WS⁻¹,
/// ∂ν = ½ log det W − K/2 log 2 − ½ log det S − ½ Σⱼ ψ(ν/2 + (1 − j)/2).
/// Inverse: ∂W = −(ν + K + 1)/2 W⁻¹ + ½ W⁻¹SW⁻¹, ∂S = ν/2 S⁻¹ − ½W⁻¹,
/// ∂ν = −½ log det W − K/2 log 2 + ½ log det S − ½ Σⱼ ψ(…).
/// Errors: ν ≤ K − 1, W or S not square, of different sizes, not symmetric or not positive
/// definite.
pub fn lpdf(
    sig: &MvSig,
    args: &[MvArg],
    is_var: &[bool],
    propto: bool,
    term: &mut Term,
) -> Result<(), DistError> {
    let inverse = sig.family == MvFamily::InvWishart;
    let (w, nu_arg, s) = (&args[0], &args[1], &args[2]);
    let k = same_side(sig, w, sig.variate.name, s, sig.params[1].name)?;
    let nu = dof(sig, nu_arg, k)?;
    let lw = symmetric_cholesky(sig, w.data, k, sig.variate.name)?;
    let ls = symmetric_cholesky(sig, s.data, k, sig.params[1].name)?;
    if propto && !is_var.iter().any(|&v| v) {
        return Ok(());
    }
    let kf = k as f64;
    let (log_det_w, log_det_s) = (2.0 * log_diag_sum(&lw, k), 2.0 * log_diag_sum(&ls, k));
    let (lmg, dlmg) = lmgamma(k, 0.5 * nu);
    let (w_inv, s_inv) = (inverse_from_cholesky(&lw, k), inverse_from_cholesky(&ls, k));
    let (c_w, sign_s) = if inverse {
        (-(nu + kf + 1.0) / 2.0, 1.0)
    } else {
        ((nu - kf - 1.0) / 2.0, -1.0)
    };
    if !propto || is_var[0] || is_var[1] {
        term.value += c_w * log_det_w;
    }
    if !propto || is_var[0] || is_var[2] {
        term.value -= 0.5
            * if inverse {
                trace_prod(s.data, &w_inv, k)
            } else {
                trace_prod(&s_inv, w.data, k)
            };
    }
    if !propto || is_var[1] {
        term.value -= 0.5 * nu * kf * LN_2 + lmg;
    }
    if !propto || is_var[1] || is_var[2] {
        term.value += sign_s * 0.5 * nu * log_det_s;
    }
    if is_var[0] {
        let g = if inverse {
            let wsw = matmul(&matmul(&w_inv, s.data, k), &w_inv, k);
            (0..k * k)
                .map(|i| c_w * w_inv[i] + 0.5 * wsw[i])
                .collect::<Vec<_>>()
        } else {
            (0..k * k)
                .map(|i| c_w * w_inv[i] - 0.5 * s_inv[i])
                .collect()
        };
        for (p, d) in term.partials[0].iter_mut().zip(g) {
            *p += d;
        }
    }
    if is_var[1] {
        let sign_w = if inverse { -1.0 } else { 1.0 };
        term.partials[1][0] +=
            0.5 * sign_w * log_det_w - 0.5 * kf * LN_2 + sign_s * 0.5 * log_det_s - 0.5 * dlmg;
    }
    if is_var[2] {
        let g = if inverse {
            (0..k * k)
                .map(|i| 0.5 * nu * s_inv[i] - 0.5 * w_inv[i])
                .collect::<Vec<_>>()
        } else {
            let sws = matmul(&matmul(&s_inv, w.data, k), &s_inv, k);
            (0..k * k)
                .map(|i| -0.5 * nu * s_inv[i] + 0.5 * sws[i])
                .collect()
        };
        for (p, d) in term.partials[2].iter_mut().zip(g) {
            *p += d;
        }
    }
    Ok(())
}

/// `wishart_cholesky_lpdf(L_W | ν, L_S)` into `term`. With M = L_S⁻¹L_W (lower triangular):
/// ∂L_W = −L_S⁻ᵀM + diag((ν − k)/L_W,kk), ∂L_S = L_S⁻ᵀMMᵀ − diag(ν/L_S,kk) (lower triangles),
/// ∂ν = Σ log L_W,kk − Σ log L_S,kk − K/2 log 2 − ½ Σⱼ ψ(ν/2 + (1 − j)/2).
/// Errors: ν ≤ K − 1, L_W or L_S not square, of different sizes, or not Cholesky factors.
pub fn cholesky_lpdf(
    sig: &MvSig,
    args: &[MvArg],
    is_var: &[bool],
    propto: bool,
    term: &mut Term,
) -> Result<(), DistError> {
    let (lw_arg, nu_arg, ls_arg) = (&args[0], &args[1], &args[2]);
    let k = same_side(sig, lw_arg, sig.variate.name, ls_arg, sig.params[1].name)?;
    let nu = dof(sig, nu_arg, k)?;
    let (lw, ls) = (lw_arg.data, ls_arg.data);
    cholesky_factor(sig, lw, k, sig.variate.name)?;
    cholesky_factor(sig, ls, k, sig.params[1].name)?;
    if propto && !is_var.iter().any(|&v| v) {
        return Ok(());
    }
    let kf = k as f64;
    // M = L_S⁻¹ L_W column by column
    let mut m = lw.to_vec();
    for c in 0..k {
        forward_solve(ls, k, &mut m[c * k..(c + 1) * k]);
    }
    let (sum_lw, sum_ls) = (log_diag_sum(lw, k), log_diag_sum(ls, k));
    let (lmg, dlmg) = lmgamma(k, 0.5 * nu);
    if !propto || is_var[0] || is_var[1] {
        term.value += (0..k)
            .map(|i| (nu - i as f64 - 1.0) * at(lw, k, i, i).ln())
            .sum::<f64>();
    }
    if !propto || is_var[0] || is_var[2] {
        term.value -= 0.5 * m.iter().map(|x| x * x).sum::<f64>();
    }
    if !propto || is_var[1] || is_var[2] {
        term.value -= nu * sum_ls;
    }
    if !propto || is_var[1] {
        term.value += kf * (1.0 - 0.5 * nu) * LN_2 - lmg;
    }
    if is_var[0] {
        let mut g = m.clone();
        for c in 0..k {
            backward_solve(ls, k, &mut g[c * k..(c + 1) * k]);
        }
        let p = &mut term.partials[0];
        for c in 0..k {
            for r in c..k {
                p[r + c * k] -= g[r + c * k];
            }
            p[c + c * k] += (nu - c as f64 - 1.0) / at(lw, k, c, c);
        }
    }
    if is_var[1] {
        term.partials[1][0] += sum_lw - sum_ls - 0.5 * kf * LN_2 - 0.5 * dlmg;
    }
    if is_var[2] {
        // M Mᵀ, then L_S⁻ᵀ (M Mᵀ) column by column
        let mut mmt = vec![0.0; k * k];
        for c in 0..k {
            for r in 0..k {
                mmt[r + c * k] = (0..k).map(|p| m[r + p * k] * m[c + p * k]).sum();
            }
        }
        for c in 0..k {
            backward_solve(ls, k, &mut mmt[c * k..(c + 1) * k]);
        }
        let p = &mut term.partials[2];
        for c in 0..k {
            for r in c..k {
                p[r + c * k] += mmt[r + c * k];
            }
            p[c + c * k] -= nu / at(ls, k, c, c);
        }
    }
    Ok(())
}

/// The Bartlett factor L_S A of a Wishart(ν, L_S L_Sᵀ) draw: A lower triangular with
/// A_kk = √χ²(ν − k + 1) (1-based k) and standard normal entries below the diagonal
/// (Bartlett 1933; Kshirsagar 1959). The result is the lower Cholesky factor of the draw.
fn bartlett<R: Rng + ?Sized>(ls: &[f64], k: usize, nu: f64, rng: &mut R) -> Vec<f64> {
    let mut a = vec![0.0; k * k];
    for c in 0..k {
        a[c + c * k] = ChiSquared::new(nu - c as f64)
            .expect("ν > K − 1 keeps every degree of freedom positive")
            .sample(rng)
            .sqrt();
        for r in c + 1..k {
            a[r + c * k] = StandardNormal.sample(rng);
        }
    }
    matmul(ls, &a, k)
}

/// L Lᵀ of a lower triangular factor.
fn tcrossprod(l: &[f64], k: usize) -> Vec<f64> {
    let mut out = vec![0.0; k * k];
    for c in 0..k {
        for r in 0..k {
            out[r + c * k] = (0..=r.min(c)).map(|p| l[r + p * k] * l[c + p * k]).sum();
        }
    }
    out
}

/// `wishart_rng(ν, S)`, `inv_wishart_rng(ν, S)` (the inverse of a Wishart(ν, S⁻¹) draw) and
/// `wishart_cholesky_rng(ν, L_S)` (the Bartlett factor). Errors: as the densities.
pub fn rng<R: Rng + ?Sized>(
    sig: &MvSig,
    params: &[MvArg],
    rng: &mut R,
) -> Result<MvDraw, DistError> {
    let (nu_arg, s) = (&params[0], &params[1]);
    let k = same_side(sig, s, sig.params[1].name, s, sig.params[1].name)?;
    let nu = dof(sig, nu_arg, k)?;
    let data = match sig.family {
        MvFamily::WishartCholesky => {
            cholesky_factor(sig, s.data, k, sig.params[1].name)?;
            bartlett(s.data, k, nu, rng)
        }
        MvFamily::Wishart => {
            let ls = symmetric_cholesky(sig, s.data, k, sig.params[1].name)?;
            tcrossprod(&bartlett(&ls, k, nu, rng), k)
        }
        _ => {
            let ls = symmetric_cholesky(sig, s.data, k, sig.params[1].name)?;
            let s_inv = inverse_from_cholesky(&ls, k);
            let l_inv = cholesky(&s_inv, k).ok_or_else(|| {
                err(
                    sig,
                    "the inverse scale matrix is not positive definite".into(),
                )
            })?;
            let lx = bartlett(&l_inv, k, nu, rng);
            inverse_from_cholesky(&lx, k)
        }
    };
    Ok(MvDraw::Matrix { k, data })
}
