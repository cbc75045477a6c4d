//! Dense linear algebra as single tape nodes: `inverse`, `inverse_spd`, `determinant`,
//! `log_determinant`, `mdivide_left`/`mdivide_right` (and the `\` and `/` operators),
//! `mdivide_left_tri_low`/`mdivide_right_tri_low` and `cholesky_decompose`.
//!
//! The forward pass factorises with faer (partial-pivoting LU, Cholesky, triangular solves); the
//! reverse pass ([`backward`]) uses the matrix adjoints of Giles (2008), "An extended collection
//! of matrix derivative results for forward and reverse mode algorithmic differentiation":
//!
//! | forward | reverse |
//! | --- | --- |
//! | `C = A⁻¹` | `Ā −= Cᵀ C̄ Cᵀ` |
//! | `d = det A` | `Ā += d̄ d A⁻ᵀ` |
//! | `d = log abs(det A)` | `Ā += d̄ A⁻ᵀ` |
//! | `X = A⁻¹ B` | `B̄ += A⁻ᵀ X̄`, `Ā −= (A⁻ᵀ X̄) Xᵀ` |
//! | `X = B A⁻¹` | `B̄ += X̄ A⁻ᵀ`, `Ā −= Xᵀ (X̄ A⁻ᵀ)` |
//!
//! and, for `L = chol(A)`, Murray (2016), "Differentiation of the Cholesky decomposition",
//! eq. 10: `S = L⁻ᵀ Φ(Lᵀ L̄) L⁻¹` with Φ the lower triangle with its diagonal halved; only the
//! lower triangle of `A` is read (as Stan), so `Ā_ij += S_ij + S_ji` below the diagonal and
//! `Ā_ii += S_ii`. The triangular solves read (and differentiate) only the lower triangle of `A`.
//!
//! All matrices are column-major slices, as everywhere in the graph.

use std::sync::Arc;

use faer::linalg::solvers::{DenseSolveCore, Solve};
use faer::linalg::triangular_solve::{
    solve_lower_triangular_in_place, solve_upper_triangular_in_place,
};
use faer::{Accum, Mat, MatMut, MatRef, Par, Side};

use super::tape::{Opnd, operand};

/// What a [`super::tape`] linear-algebra node computed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum LinOp {
    /// `C = A⁻¹` (also `inverse_spd`, whose forward pass is a Cholesky inverse).
    Inverse,
    /// `det A` (one output).
    Determinant,
    /// `log abs(det A)` (one output).
    LogDeterminant,
    /// `X = A⁻¹ B`, `B` is `n × k`; `tri`: `A` is lower triangular.
    SolveLeft { tri: bool },
    /// `X = B A⁻¹`, `B` is `k × n`; `tri`: `A` is lower triangular.
    SolveRight { tri: bool },
    /// The lower Cholesky factor `L` of `A` (`n × n`, zeros above the diagonal).
    Cholesky,
}

fn mat(xs: &[f64], r: usize, c: usize) -> MatRef<'_, f64> {
    MatRef::from_column_major_slice(xs, r, c)
}

fn to_vec(m: MatRef<'_, f64>) -> Vec<f64> {
    let (r, c) = (m.nrows(), m.ncols());
    let mut out = Vec::with_capacity(r * c);
    for j in 0..c {
        for i in 0..r {
            out.push(m[(i, j)]);
        }
    }
    out
}

fn finite(xs: Vec<f64>, what: &str) -> Result<Vec<f64>, String> {
    if xs.iter().all(|x| x.is_finite()) {
        Ok(xs)
    } else {
        Err(format!(
            "{what}: the matrix is singular (or has non-finite entries)"
        ))
    }
}

/// `A⁻¹` of the `n × n` matrix `a` by partial-pivoting LU. Errors on a singular matrix.
pub(crate) fn inverse(a: &[f64], n: usize) -> Result<Vec<f64>, String> {
    finite(
        to_vec(mat(a, n, n).partial_piv_lu().inverse().as_ref()),
        "inverse",
    )
}

/// `A⁻¹` of a symmetric positive-definite matrix by Cholesky; errors if `A` is not symmetric
/// (to 1e-8 relative) or not positive definite (Stan's `inverse_spd`).
pub(crate) fn inverse_spd(a: &[f64], n: usize) -> Result<Vec<f64>, String> {
    check_symmetric(a, n, "inverse_spd")?;
    let llt = mat(a, n, n)
        .llt(Side::Lower)
        .map_err(|_| "inverse_spd: the matrix is not positive definite".to_string())?;
    let inv = llt.inverse();
    // Exactly symmetric, as Stan returns.
    let mut out = to_vec(inv.as_ref());
    for j in 0..n {
        for i in j + 1..n {
            let s = 0.5 * (out[i + j * n] + out[j + i * n]);
            out[i + j * n] = s;
            out[j + i * n] = s;
        }
    }
    finite(out, "inverse_spd")
}

fn check_symmetric(a: &[f64], n: usize, what: &str) -> Result<(), String> {
    for j in 0..n {
        for i in j + 1..n {
            let (x, y) = (a[i + j * n], a[j + i * n]);
            if (x - y).abs() > 1e-8 * x.abs().max(y.abs()).max(1.0) {
                return Err(format!(
                    "{what}: the matrix is not symmetric (element [{}, {}] = {x}, [{}, {}] = {y})",
                    i + 1,
                    j + 1,
                    j + 1,
                    i + 1
                ));
            }
        }
    }
    Ok(())
}

/// `det A`.
pub(crate) fn determinant(a: &[f64], n: usize) -> f64 {
    if n == 0 {
        return 1.0;
    }
    mat(a, n, n).determinant()
}

/// `log abs(det A)` from the diagonal of the LU factor `U` (no overflow for large `n`).
pub(crate) fn log_determinant(a: &[f64], n: usize) -> f64 {
    let lu = mat(a, n, n).partial_piv_lu();
    let u = lu.U();
    (0..n).map(|i| u[(i, i)].abs().ln()).sum()
}

/// `A⁻¹ B` (`B` is `n × k`); `tri`: only the lower triangle of `A` is used.
pub(crate) fn solve_left(
    a: &[f64],
    b: &[f64],
    n: usize,
    k: usize,
    tri: bool,
) -> Result<Vec<f64>, String> {
    let mut x = mat(b, n, k).to_owned();
    if tri {
        solve_lower_triangular_in_place(mat(a, n, n), x.as_mut(), Par::Seq);
    } else {
        mat(a, n, n).partial_piv_lu().solve_in_place(x.as_mut());
    }
    finite(
        to_vec(x.as_ref()),
        if tri {
            "mdivide_left_tri_low"
        } else {
            "mdivide_left"
        },
    )
}

/// `B A⁻¹` (`B` is `k × n`); `tri`: only the lower triangle of `A` is used.
pub(crate) fn solve_right(
    a: &[f64],
    b: &[f64],
    n: usize,
    k: usize,
    tri: bool,
) -> Result<Vec<f64>, String> {
    // (B A⁻¹)ᵀ = A⁻ᵀ Bᵀ.
    let mut xt = mat(b, k, n).transpose().to_owned();
    if tri {
        solve_upper_triangular_in_place(mat(a, n, n).transpose(), xt.as_mut(), Par::Seq);
    } else {
        mat(a, n, n)
            .partial_piv_lu()
            .solve_transpose_in_place(xt.as_mut());
    }
    finite(
        to_vec(xt.transpose()),
        if tri {
            "mdivide_right_tri_low"
        } else {
            "mdivide_right"
        },
    )
}

/// The lower Cholesky factor of `A` (reading its lower triangle), or an error when `A` is not
/// positive definite.
pub(crate) fn cholesky(a: &[f64], n: usize) -> Result<Vec<f64>, String> {
    // faer reads the lower triangle with `Side::Lower`.
    let llt = mat(a, n, n)
        .llt(Side::Lower)
        .map_err(|_| "cholesky_decompose: Matrix m is not positive definite".to_string())?;
    let l = llt.L();
    let mut out = vec![0.0; n * n];
    for j in 0..n {
        for i in j..n {
            out[i + j * n] = l[(i, j)];
        }
    }
    finite(out, "cholesky_decompose")
}

/// Adds `m` (or its lower triangle, `lower_only`) into the adjoints `g` of an operand.
fn add_into(g: &mut [f64], m: MatRef<'_, f64>, lower_only: bool) {
    let (r, c) = (m.nrows(), m.ncols());
    for j in 0..c {
        let i0 = if lower_only { j } else { 0 };
        for i in i0..r {
            g[i + j * r] += m[(i, j)];
        }
    }
}

fn adj_of(lo: &mut [f64], o: Opnd, len: usize) -> Option<&mut [f64]> {
    match o {
        Opnd::Var(s) => Some(&mut lo[s as usize..s as usize + len]),
        Opnd::Data(_) => None,
    }
}

/// `A⁻ᵀ` of the node's matrix operand, recomputed by LU in the reverse pass (the forward value
/// is not stored).
fn inv_t(a: MatRef<'_, f64>) -> Mat<f64> {
    a.partial_piv_lu().inverse().transpose().to_owned()
}

/// The reverse pass of one [`LinOp`] node (module docs for the formulas). `adj` holds every
/// slot's adjoint; the node's outputs start at `out`, after all its inputs.
#[allow(clippy::too_many_arguments)]
pub(crate) fn backward(
    op: LinOp,
    val: &[f64],
    mats: &[Arc<Vec<f64>>],
    adj: &mut [f64],
    out: usize,
    a: Opnd,
    b: Option<Opnd>,
    n: usize,
    k: usize,
) {
    let (lo, hi) = adj.split_at_mut(out);
    let am = operand(val, mats, a, n, n);
    let mm = |x: &mut Mat<f64>, p: MatRef<'_, f64>, q: MatRef<'_, f64>, alpha: f64| {
        faer::linalg::matmul::matmul(x.as_mut(), Accum::Replace, p, q, alpha, Par::Seq);
    };
    match op {
        LinOp::Inverse => {
            let Some(ga) = adj_of(lo, a, n * n) else {
                return;
            };
            let c = mat(&val[out..out + n * n], n, n);
            let dc = mat(&hi[..n * n], n, n);
            let mut t = Mat::zeros(n, n);
            mm(&mut t, dc, c.transpose(), 1.0);
            faer::linalg::matmul::matmul(
                MatMut::from_column_major_slice_mut(ga, n, n),
                Accum::Add,
                c.transpose(),
                t.as_ref(),
                -1.0,
                Par::Seq,
            );
        }
        LinOp::Determinant | LinOp::LogDeterminant => {
            let db = hi[0];
            if db == 0.0 {
                return;
            }
            let Some(ga) = adj_of(lo, a, n * n) else {
                return;
            };
            let scale = if op == LinOp::Determinant {
                db * val[out]
            } else {
                db
            };
            add_into(ga, (inv_t(am) * faer::Scale(scale)).as_ref(), false);
        }
        LinOp::SolveLeft { tri } => {
            let x = mat(&val[out..out + n * k], n, k);
            let dx = mat(&hi[..n * k], n, k);
            // B̄ = A⁻ᵀ X̄.
            let mut bb = dx.to_owned();
            if tri {
                solve_upper_triangular_in_place(am.transpose(), bb.as_mut(), Par::Seq);
            } else {
                am.partial_piv_lu().solve_transpose_in_place(bb.as_mut());
            }
            if let Some(gb) = b.and_then(|b| adj_of(lo, b, n * k)) {
                add_into(gb, bb.as_ref(), false);
            }
            if let Some(ga) = adj_of(lo, a, n * n) {
                let mut t = Mat::zeros(n, n);
                mm(&mut t, bb.as_ref(), x.transpose(), -1.0);
                add_into(ga, t.as_ref(), tri);
            }
        }
        LinOp::SolveRight { tri } => {
            let x = mat(&val[out..out + n * k], k, n);
            let dx = mat(&hi[..n * k], k, n);
            // B̄ = X̄ A⁻ᵀ, so B̄ᵀ = A⁻¹ X̄ᵀ.
            let mut bbt = dx.transpose().to_owned();
            if tri {
                solve_lower_triangular_in_place(am, bbt.as_mut(), Par::Seq);
            } else {
                am.partial_piv_lu().solve_in_place(bbt.as_mut());
            }
            if let Some(gb) = b.and_then(|b| adj_of(lo, b, n * k)) {
                add_into(gb, bbt.transpose(), false);
            }
            if let Some(ga) = adj_of(lo, a, n * n) {
                let mut t = Mat::zeros(n, n);
                mm(&mut t, x.transpose(), bbt.transpose(), -1.0);
                add_into(ga, t.as_ref(), tri);
            }
        }
        LinOp::Cholesky => {
            let Some(ga) = adj_of(lo, a, n * n) else {
                return;
            };
            let l = mat(&val[out..out + n * n], n, n);
            // L̄ restricted to the lower triangle (the zeros above are constants).
            let dl = Mat::from_fn(n, n, |i, j| if i >= j { hi[i + j * n] } else { 0.0 });
            let mut p = Mat::zeros(n, n);
            mm(&mut p, l.transpose(), dl.as_ref(), 1.0);
            // Φ: lower triangle, diagonal halved.
            for j in 0..n {
                p[(j, j)] *= 0.5;
                for i in 0..j {
                    p[(i, j)] = 0.0;
                }
            }
            // S = L⁻ᵀ Φ L⁻¹: solve Lᵀ Y = Φ, then Lᵀ Sᵀ = Yᵀ.
            solve_upper_triangular_in_place(l.transpose(), p.as_mut(), Par::Seq);
            let mut st = p.transpose().to_owned();
            solve_upper_triangular_in_place(l.transpose(), st.as_mut(), Par::Seq);
            for j in 0..n {
                ga[j + j * n] += st[(j, j)];
                for i in j + 1..n {
                    ga[i + j * n] += st[(i, j)] + st[(j, i)];
                }
            }
        }
    }
}
