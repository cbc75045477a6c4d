//! Multivariate normal: log N(y | μ, Σ) = −(K/2) log 2π − ½ log det Σ − ½ (y − μ)ᵀ Σ⁻¹ (y − μ),
//! parameterised by Σ (`multi_normal`) or by its lower Cholesky factor L, Σ = L Lᵀ
//! (`multi_normal_cholesky`, where ½ log det Σ = Σᵢ log Lᵢᵢ).
//!
//! Partials (Petersen & Pedersen, *The Matrix Cookbook*, eqs. 57 and 61), with r = y − μ,
//! z = L⁻¹ r, w = L⁻ᵀ z = Σ⁻¹ r: ∂/∂y = −w, ∂/∂μ = w, ∂/∂Σ = ½ (w wᵀ − Σ⁻¹) per observation,
//! ∂/∂L = w zᵀ − diag(1/Lᵢᵢ) on the lower triangle (0 above it: only the lower triangle is read).

use super::linalg::{at, backward_solve, cholesky, forward_solve, inverse_from_cholesky};
use super::{MvArg, MvDraw, MvSig, broadcast_count, check_finite, check_not_nan, err, vector_len};
use crate::distributions::args::{DistError, Term};
use rand::Rng;
use rand_distr::{Distribution, StandardNormal};

const HALF_LOG_TWO_PI: f64 = 0.918_938_533_204_672_8;

/// Shapes of (y, μ, matrix): K, the number of observations N.
pub(super) fn sizes(sig: &MvSig, args: &[MvArg]) -> Result<(usize, usize), DistError> {
    sizes_at(sig, args, [0, 1, 2])
}

/// As [`sizes`] for (y, μ, matrix) = (args[0], args[1], args[2]) whose positions in `sig`'s
/// argument list (for error messages) are `pos`.
pub(super) fn sizes_at(
    sig: &MvSig,
    args: &[MvArg],
    pos: [usize; 3],
) -> Result<(usize, usize), DistError> {
    let (y, mu, m) = (&args[0], &args[1], &args[2]);
    let (mu_name, m_name) = (sig.arg_name(pos[1]), sig.arg_name(pos[2]));
    let ky = vector_len(sig, y, pos[0])?;
    let kmu = vector_len(sig, mu, pos[1])?;
    let n = broadcast_count(sig, args, &[0, 1])?;
    if m.rows != m.cols {
        return Err(err(
            sig,
            format!(
                "Expecting a square matrix; rows of {m_name} ({}) and columns of {m_name} ({}) must match in size",
                m.rows, m.cols
            ),
        ));
    }
    if ky != kmu {
        return Err(err(
            sig,
            format!(
                "size of {} ({ky}) and size of {mu_name} ({kmu}) must match in size",
                sig.variate.name
            ),
        ));
    }
    if ky != m.rows {
        return Err(err(
            sig,
            format!(
                "size of {} ({ky}) and rows of {m_name} ({}) must match in size",
                sig.variate.name, m.rows
            ),
        ));
    }
    check_finite(sig, mu, pos[1])?;
    check_not_nan(sig, y, pos[0])?;
    Ok((ky, n))
}

/// The quadratic part for every observation: adds −½ zᵀz to the value and ∓w to the partials
/// of y and μ; returns Σ_obs w zᵀ (if `want_wz`) or Σ_obs w wᵀ (if `want_ww`), column-major K × K.
fn quadratic(
    l: &[f64],
    k: usize,
    n: usize,
    args: &[MvArg],
    is_var: &[bool],
    term: &mut Term,
    outer: Outer,
) -> Vec<f64> {
    let (y, mu) = (&args[0], &args[1]);
    let mut acc = if matches!(outer, Outer::None) {
        Vec::new()
    } else {
        vec![0.0; k * k]
    };
    let mut z = vec![0.0; k];
    let mut w = vec![0.0; k];
    for obs in 0..n {
        let (yi, mi) = (y.elem_b(obs), mu.elem_b(obs));
        for j in 0..k {
            z[j] = yi[j] - mi[j];
        }
        forward_solve(l, k, &mut z);
        term.value -= 0.5 * z.iter().map(|v| v * v).sum::<f64>();
        w.copy_from_slice(&z);
        backward_solve(l, k, &mut w);
        for (a, sign) in [(0usize, -1.0), (1usize, 1.0)] {
            if is_var[a] {
                let off = if args[a].array.is_some() { obs * k } else { 0 };
                for (p, wj) in term.partials[a][off..off + k].iter_mut().zip(&w) {
                    *p += sign * wj;
                }
            }
        }
        match outer {
            Outer::None => {}
            Outer::Wz => {
                for c in 0..k {
                    for r in c..k {
                        acc[r + c * k] += w[r] * z[c];
                    }
                }
            }
            Outer::Ww => {
                for c in 0..k {
                    for r in 0..k {
                        acc[r + c * k] += w[r] * w[c];
                    }
                }
            }
        }
    }
    acc
}

#[derive(Clone, Copy)]
enum Outer {
    None,
    Wz,
    Ww,
}

/// `multi_normal_lpdf(y | μ, Σ)` into `term`. Errors: sizes that do not match, μ not finite,
/// y NaN, Σ not symmetric or not positive definite.
pub fn multi_normal(
    sig: &MvSig,
    args: &[MvArg],
    is_var: &[bool],
    propto: bool,
    term: &mut Term,
) -> Result<(), DistError> {
    let (k, n) = sizes(sig, args)?;
    let s = args[2].data;
    let name = sig.params[1].name;
    for c in 0..k {
        for r in c + 1..k {
            let (a, b) = (at(s, k, r, c), at(s, k, c, r));
            if !((a - b).abs() <= super::CONSTRAINT_TOLERANCE) {
                return Err(err(
                    sig,
                    format!(
                        "{name} is not symmetric. {name}[{},{}] = {b}, but {name}[{},{}] = {a}",
                        c + 1,
                        r + 1,
                        r + 1,
                        c + 1
                    ),
                ));
            }
        }
    }
    let l = cholesky(s, k).ok_or_else(|| err(sig, format!("{name} is not positive definite")))?;
    if propto && !is_var.iter().any(|&v| v) {
        return Ok(());
    }
    if !propto {
        term.value -= (n * k) as f64 * HALF_LOG_TWO_PI;
    }
    if !propto || is_var[2] {
        let half_log_det: f64 = (0..k).map(|i| at(&l, k, i, i).ln()).sum();
        term.value -= n as f64 * half_log_det;
    }
    let outer = if is_var[2] { Outer::Ww } else { Outer::None };
    let ww = quadratic(&l, k, n, args, is_var, term, outer);
    if is_var[2] {
        let inv = inverse_from_cholesky(&l, k);
        for (p, (&a, &b)) in term.partials[2].iter_mut().zip(ww.iter().zip(&inv)) {
            *p += 0.5 * (a - n as f64 * b);
        }
    }
    Ok(())
}

/// `multi_normal_cholesky_lpdf(y | μ, L)` into `term` (the strict upper triangle of L is
/// ignored, as in Stan). Errors: sizes that do not match, μ not finite, y NaN.
pub fn multi_normal_cholesky(
    sig: &MvSig,
    args: &[MvArg],
    is_var: &[bool],
    propto: bool,
    term: &mut Term,
) -> Result<(), DistError> {
    let (k, n) = sizes(sig, args)?;
    let l = args[2].data;
    if propto && !is_var.iter().any(|&v| v) {
        return Ok(());
    }
    if !propto {
        term.value -= (n * k) as f64 * HALF_LOG_TWO_PI;
    }
    if !propto || is_var[2] {
        let log_det: f64 = (0..k).map(|i| at(l, k, i, i).ln()).sum();
        term.value -= n as f64 * log_det;
    }
    let outer = if is_var[2] { Outer::Wz } else { Outer::None };
    let wz = quadratic(l, k, n, args, is_var, term, outer);
    if is_var[2] {
        let p = &mut term.partials[2];
        for c in 0..k {
            for r in c..k {
                p[r + c * k] += wz[r + c * k];
            }
            p[c + c * k] -= n as f64 / at(l, k, c, c);
        }
    }
    Ok(())
}

/// `multi_normal_rng(μ, Σ)` / `multi_normal_cholesky_rng(μ, L)`: μ + L ε with ε standard normal;
/// one vector per location when μ is an array.
pub fn rng<R: Rng + ?Sized>(
    sig: &MvSig,
    params: &[MvArg],
    rng: &mut R,
) -> Result<MvDraw, DistError> {
    let (mu, m) = (&params[0], &params[1]);
    // Reuse the density's checks with μ standing in for the variate.
    let args = [*mu, *mu, *m];
    let (k, n) = sizes(sig, &args)?;
    let l = if sig.family == super::MvFamily::MultiNormal {
        let mut term = Term {
            value: 0.0,
            partials: vec![Vec::new(); 3],
        };
        multi_normal(sig, &args, &[false; 3], true, &mut term)?;
        cholesky(m.data, k).expect("checked positive definite by multi_normal")
    } else {
        m.data.to_vec()
    };
    let mut out = Vec::with_capacity(n);
    for obs in 0..n {
        let mi = mu.elem_b(obs);
        let eps: Vec<f64> = (0..k).map(|_| StandardNormal.sample(rng)).collect();
        let draw: Vec<f64> = (0..k)
            .map(|r| mi[r] + (0..=r).map(|c| at(&l, k, r, c) * eps[c]).sum::<f64>())
            .collect();
        out.push(draw);
    }
    Ok(if mu.array.is_some() {
        MvDraw::Vectors(out)
    } else {
        MvDraw::Vector(out.pop().expect("one draw for a single location"))
    })
}
