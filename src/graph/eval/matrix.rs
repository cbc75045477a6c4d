//! Matrix functions that are one tape node each: the factorisation-based ones of
//! [`crate::graph::linalg`] (`inverse`, `inverse_spd`, `determinant`, `log_determinant`, the
//! `mdivide_*` family and the `\` and `/` operators, `cholesky_decompose`), `quad_form_diag`,
//! `quad_form_sym`, and the Gaussian-process covariance functions (`gp_exp_quad_cov`,
//! `cov_exp_quad`, `gp_matern32_cov`, `gp_matern52_cov`, `gp_periodic_cov`; Stan Functions
//! Reference, "Gaussian Process Covariance Functions"). Part of the interpreter ([`super`]).

use std::sync::Arc;

use super::super::ir::{Builtin, GpKernel};
use super::super::linalg::{self, LinOp};
use super::super::ops::{map_binary, matmul, transpose};
use super::super::scalar::B;
use super::super::tape::{Acc, MatArg, S, Tape};
use super::super::value::{Base, Data, Fault, R, Slots, Tensor, Value};

/// The side of a matrix division.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Side {
    /// `A \ B = A⁻¹ B`.
    Left,
    /// `B / A = B A⁻¹`.
    Right,
}

/// The order of a square matrix argument, or an error naming `what`.
fn square(v: &Value, what: &str) -> R<usize> {
    match v.shape() {
        ([], Base::Matrix(r, c)) if r == c => Ok(r),
        _ => Err(Fault::fatal(format!(
            "{what} needs a square matrix, found {}",
            v.describe()
        ))),
    }
}

/// `v` as an operand of a tape node: its contiguous slots, or its data.
fn mat_arg<'a>(tape: &mut Tape, v: &'a Value) -> MatArg<'a> {
    match v {
        Value::T(t) => match &t.data {
            Data::Var(s) => MatArg::Var(tape.contiguous(s)),
            Data::Real(x) | Data::Int(x) => MatArg::Data(x),
        },
        _ => unreachable!("matrix operands are tensors"),
    }
}

/// A tensor of shape `base` holding `values`: constants when no input is a variable, else the
/// outputs of one [`LinOp`] node.
fn node_or_const(
    tape: &mut Tape,
    op: LinOp,
    a: &Value,
    b: Option<&Value>,
    (n, k): (usize, usize),
    base: Base,
    values: Vec<f64>,
) -> Value {
    let any_var = a.is_var() || b.is_some_and(Value::is_var);
    if !any_var {
        if base == Base::Scalar {
            return Value::Real(values[0]);
        }
        return Value::from_tensor(Tensor {
            arr: vec![],
            base,
            data: Data::Real(Arc::new(values)),
        });
    }
    let m = values.len();
    let aa = mat_arg(tape, a);
    let bb = b.map(|b| mat_arg(tape, b));
    let out = tape.linalg(op, aa, bb, n, k, &values);
    if base == Base::Scalar {
        return Value::Var(out);
    }
    Value::from_tensor(Tensor {
        arr: vec![],
        base,
        data: Data::Var(Slots::range(out, m)),
    })
}

/// `inverse`, `inverse_spd`, `determinant`, `log_determinant`, `cholesky_decompose`.
pub(super) fn unary_linalg(tape: &mut Tape, b: Builtin, a: &Value) -> R<Value> {
    let name = match b {
        Builtin::Inverse => "inverse",
        Builtin::InverseSpd => "inverse_spd",
        Builtin::Determinant => "determinant",
        Builtin::LogDeterminant => "log_determinant",
        _ => "cholesky_decompose",
    };
    let n = square(a, name)?;
    let xs = a.values(tape);
    let dom = |e: String| Fault::domain(e);
    let mb = Base::Matrix(n, n);
    Ok(match b {
        Builtin::Inverse => {
            let c = linalg::inverse(&xs, n).map_err(dom)?;
            node_or_const(tape, LinOp::Inverse, a, None, (n, 0), mb, c)
        }
        Builtin::InverseSpd => {
            let c = linalg::inverse_spd(&xs, n).map_err(dom)?;
            node_or_const(tape, LinOp::Inverse, a, None, (n, 0), mb, c)
        }
        Builtin::Determinant => {
            let d = linalg::determinant(&xs, n);
            node_or_const(
                tape,
                LinOp::Determinant,
                a,
                None,
                (n, 0),
                Base::Scalar,
                vec![d],
            )
        }
        Builtin::LogDeterminant => {
            let d = linalg::log_determinant(&xs, n);
            node_or_const(
                tape,
                LinOp::LogDeterminant,
                a,
                None,
                (n, 0),
                Base::Scalar,
                vec![d],
            )
        }
        _ => {
            let l = linalg::cholesky(&xs, n).map_err(dom)?;
            node_or_const(tape, LinOp::Cholesky, a, None, (n, 0), mb, l)
        }
    })
}

/// `A \ B` (`Side::Left`, `B` a vector or matrix with `n` rows) or `B / A` (`Side::Right`, `B` a
/// row vector or matrix with `n` columns); `tri`: `A` is lower triangular.
pub(crate) fn divide(tape: &mut Tape, side: Side, a: &Value, bv: &Value, tri: bool) -> R<Value> {
    let name = match (side, tri) {
        (Side::Left, false) => "mdivide_left",
        (Side::Left, true) => "mdivide_left_tri_low",
        (Side::Right, false) => "mdivide_right",
        (Side::Right, true) => "mdivide_right_tri_low",
    };
    let n = square(a, name)?;
    let mismatch = || {
        Fault::fatal(format!(
            "size mismatch in {name}: {} and {}",
            a.describe(),
            bv.describe()
        ))
    };
    let base = match bv.shape() {
        ([], bb @ (Base::Vector(_) | Base::Matrix(..))) if side == Side::Left => bb,
        ([], bb @ (Base::RowVector(_) | Base::Matrix(..))) if side == Side::Right => bb,
        _ => return Err(mismatch()),
    };
    let (r, c) = base.matrix_dims();
    let k = match side {
        Side::Left if r == n => c,
        Side::Right if c == n => r,
        _ => return Err(mismatch()),
    };
    let (xa, xb) = (a.values(tape), bv.values(tape));
    let x = match side {
        Side::Left => linalg::solve_left(&xa, &xb, n, k, tri),
        Side::Right => linalg::solve_right(&xa, &xb, n, k, tri),
    }
    .map_err(Fault::domain)?;
    let op = match side {
        Side::Left => LinOp::SolveLeft { tri },
        Side::Right => LinOp::SolveRight { tri },
    };
    Ok(node_or_const(tape, op, a, Some(bv), (n, k), base, x))
}

/// `quad_form_diag(M, v) = diag(v) M diag(v)`: element `(i, j)` is `M_ij v_i v_j`. One
/// elementwise node on `M` and the outer product `v vᵀ` (itself one node).
pub(super) fn quad_form_diag(tape: &mut Tape, m: &Value, v: &Value) -> R<Value> {
    let n = square(m, "quad_form_diag")?;
    if v.as_s().is_some() || v.shape().0 != [] as [usize; 0] || v.num_elements() != n {
        return Err(Fault::fatal(format!(
            "size mismatch in quad_form_diag: {} and {}",
            m.describe(),
            v.describe()
        )));
    }
    let col = reshape(v, Base::Vector(n));
    let row = reshape(v, Base::RowVector(n));
    let outer = matmul(tape, &col, &row)?;
    map_binary(tape, B::Mul, m, &outer, "quad_form_diag")
}

/// The lower triangle of the matrix `m` (r × c, any shape): element (i, j) of `m` where j ≤ i and
/// 0 above the diagonal, so `multiply_lower_tri_self_transpose(m)` (Stan Functions Reference,
/// "Linear algebra functions") never reads the upper triangle (it may hold anything, NaN
/// included, as a matrix filled only below its diagonal does) and its gradient has no entries
/// there.
///
/// Errors: `m` is not a matrix.
pub(super) fn lower_triangle(tape: &mut Tape, m: &Value) -> R<Value> {
    let (r, c) = match m.shape() {
        ([], Base::Matrix(r, c)) => (r, c),
        _ => {
            return Err(Fault::fatal(format!(
                "multiply_lower_tri_self_transpose needs a matrix, found {}",
                m.describe()
            )));
        }
    };
    let zero = if m.is_var() {
        S::V(tape.leaf(0.0))
    } else {
        S::C(0.0)
    };
    let e: Vec<S> = (0..r * c)
        .map(|k| if k / r <= k % r { m.elem(k) } else { zero })
        .collect();
    Ok(super::super::value::tensor_from_s(
        tape,
        vec![],
        Base::Matrix(r, c),
        &e,
    ))
}

/// `v` with its elements viewed as `base` (same storage).
fn reshape(v: &Value, base: Base) -> Value {
    match v {
        Value::T(t) => Value::from_tensor(Tensor {
            arr: vec![],
            base,
            data: t.data.clone(),
        }),
        s => s.clone(),
    }
}

/// `quad_form_sym(A, B)`: `Bᵀ A B` for a symmetric `A`, made exactly symmetric as Stan does
/// (`(Q + Qᵀ)/2`, one affine node); a `real` for a vector `B`.
pub(super) fn quad_form_sym(tape: &mut Tape, a: &Value, bv: &Value) -> R<Value> {
    let n = square(a, "quad_form_sym")?;
    let xs = a.values(tape);
    for j in 0..n {
        for i in j + 1..n {
            let (x, y) = (xs[i + j * n], xs[j + i * n]);
            if (x - y).abs() > 1e-8 * x.abs().max(y.abs()).max(1.0) {
                return Err(Fault::domain(format!(
                    "quad_form_sym: the matrix is not symmetric ([{}, {}] = {x}, [{}, {}] = {y})",
                    i + 1,
                    j + 1,
                    j + 1,
                    i + 1
                )));
            }
        }
    }
    let ab = matmul(tape, a, bv)?;
    let q = matmul(tape, &transpose(bv)?, &ab)?;
    let Value::T(t) = &q else { return Ok(q) };
    let Data::Var(s) = &t.data else { return Ok(q) };
    let k = t.base.matrix_dims().0;
    let qt = transpose(&q)?;
    let Value::T(tt) = &qt else {
        unreachable!("a matrix")
    };
    let Data::Var(st) = &tt.data else {
        unreachable!("a variable")
    };
    let out = tape.affine2(k * k, Acc::Var(s), Acc::Var(st), 0.5, 0.5);
    Ok(Value::from_tensor(Tensor {
        arr: vec![],
        base: Base::Matrix(k, k),
        data: Data::Var(Slots::range(out, k * k)),
    }))
}

/// The points of a GP covariance argument: `array[] real` (dimension 1) or `array[] vector` /
/// `array[] row_vector` (dimension D); returns (number of points, D).
fn points(v: &Value, what: &str) -> R<(usize, usize)> {
    match v.shape() {
        ([n], Base::Scalar) => Ok((*n, 1)),
        ([n], Base::Vector(d) | Base::RowVector(d)) => Ok((*n, d)),
        _ => Err(Fault::fatal(format!(
            "{what} needs an array of reals or of vectors, found {}",
            v.describe()
        ))),
    }
}

/// A GP covariance matrix `K[i, j] = k(x1_i, x2_j)` (Stan Functions Reference, "Gaussian
/// Process Covariance Functions"); `v` is `(x, sigma, l[, p])` or `(x1, x2, sigma, l[, p])`.
/// With `r = ‖x1_i − x2_j‖`:
///
/// - exponentiated quadratic: `σ² exp(−r² / (2 l²))`;
/// - Matérn 3/2: `σ² (1 + √3 r / l) exp(−√3 r / l)`;
/// - Matérn 5/2: `σ² (1 + √5 r / l + 5 r² / (3 l²)) exp(−√5 r / l)`;
/// - periodic: `σ² exp(−2 sin²(π r / p) / l²)`.
///
/// One tape node with precomputed partials: each output has the partials with respect to the
/// variable scalars among σ, l, p and, when the points are parameters, the `2D` coordinates
/// of its two points.
pub(super) fn gp_cov(tape: &mut Tape, kind: GpKernel, v: &[Value]) -> R<Value> {
    let name = kind.name();
    let nhyper = if kind == GpKernel::Periodic { 3 } else { 2 };
    let cross = match v.len() {
        l if l == nhyper + 1 => false,
        l if l == nhyper + 2 => true,
        _ => {
            return Err(Fault::fatal(format!(
                "{name} expects {} or {} arguments",
                nhyper + 1,
                nhyper + 2
            )));
        }
    };
    let (x1, x2) = if cross {
        (&v[0], &v[1])
    } else {
        (&v[0], &v[0])
    };
    let (n1, d1) = points(x1, name)?;
    let (n2, d2) = points(x2, name)?;
    if d1 != d2 {
        return Err(Fault::fatal(format!(
            "{name}: points of different dimensions ({d1} and {d2})"
        )));
    }
    let d = d1;
    let hyper: Vec<S> = v[v.len() - nhyper..]
        .iter()
        .map(|h| {
            h.as_s()
                .ok_or_else(|| Fault::fatal(format!("{name}: σ, l and p must be reals")))
        })
        .collect::<R<_>>()?;
    let hv: Vec<f64> = hyper.iter().map(|&s| tape.value(s)).collect();
    let (sigma, l) = (hv[0], hv[1]);
    let p = if nhyper == 3 { hv[2] } else { 1.0 };
    if !(sigma > 0.0 && l > 0.0 && p > 0.0) || !sigma.is_finite() || !l.is_finite() {
        return Err(Fault::domain(format!(
            "{name}: σ, the length scale{} must be positive and finite (σ = {sigma}, l = {l}{})",
            if nhyper == 3 { " and the period" } else { "" },
            if nhyper == 3 {
                format!(", p = {p}")
            } else {
                String::new()
            }
        )));
    }
    let xs1 = x1.values(tape);
    let xs2 = x2.values(tape);
    if xs1.iter().chain(&xs2).any(|x| !x.is_finite()) {
        return Err(Fault::domain(format!("{name}: the points must be finite")));
    }
    let s2 = sigma * sigma;
    // Per pair: value, ∂/∂σ, ∂/∂l, ∂/∂p, and g with ∂K/∂x1_i = g (x1_i − x2_j).
    let eval = |r2: f64| -> (f64, f64, f64, f64, f64) {
        let r = r2.sqrt();
        match kind {
            GpKernel::ExpQuad => {
                let k = s2 * (-0.5 * r2 / (l * l)).exp();
                (k, 2.0 * k / sigma, k * r2 / (l * l * l), 0.0, -k / (l * l))
            }
            GpKernel::Matern32 => {
                let u = 3f64.sqrt() * r / l;
                let e = (-u).exp();
                let k = s2 * (1.0 + u) * e;
                (
                    k,
                    2.0 * k / sigma,
                    s2 * u * u * e / l,
                    0.0,
                    -s2 * 3.0 / (l * l) * e,
                )
            }
            GpKernel::Matern52 => {
                let u = 5f64.sqrt() * r / l;
                let e = (-u).exp();
                let k = s2 * (1.0 + u + u * u / 3.0) * e;
                (
                    k,
                    2.0 * k / sigma,
                    s2 * e * u * u * (1.0 + u) / (3.0 * l),
                    0.0,
                    -s2 * e * 5.0 * (1.0 + u) / (3.0 * l * l),
                )
            }
            GpKernel::Periodic => {
                let w = std::f64::consts::PI * r / p;
                let (sn, cs) = w.sin_cos();
                let k = s2 * (-2.0 * sn * sn / (l * l)).exp();
                let dl = k * 4.0 * sn * sn / (l * l * l);
                let dp = k * 4.0 * sn * cs * std::f64::consts::PI * r / (l * l * p * p);
                // ∂K/∂r = −4 K s c π / (p l²); divided by r (→ finite as r → 0).
                let g = if r > 0.0 {
                    -4.0 * k * sn * cs * std::f64::consts::PI / (p * l * l) / r
                } else {
                    0.0
                };
                (k, 2.0 * k / sigma, dl, dp, g)
            }
        }
    };
    let n = n1 * n2;
    let mut vals = vec![0.0; n];
    let mut parts: Vec<[f64; 5]> = Vec::with_capacity(n);
    let x_var = x1.is_var() || x2.is_var();
    for j in 0..n2 {
        for i in 0..n1 {
            let r2: f64 = (0..d)
                .map(|c| {
                    let t = xs1[i * d + c] - xs2[j * d + c];
                    t * t
                })
                .sum();
            let e = eval(r2);
            vals[i + j * n1] = e.0;
            parts.push([e.1, e.2, e.3, e.4, 0.0]);
        }
    }
    let base = Base::Matrix(n1, n2);
    let var_h: Vec<(usize, u32)> = hyper
        .iter()
        .enumerate()
        .filter_map(|(q, s)| match s {
            S::V(i) => Some((q, *i)),
            S::C(_) => None,
        })
        .collect();
    if var_h.is_empty() && !x_var {
        return Ok(Value::from_tensor(Tensor {
            arr: vec![],
            base,
            data: Data::Real(Arc::new(vals)),
        }));
    }
    let slot = |tape: &mut Tape, x: &Value, o: usize| -> u32 {
        match x.elem(o) {
            S::V(q) => q,
            S::C(c) => tape.leaf(c),
        }
    };
    // Points as slots (constants become leaves so that every output has the same entries).
    let (p1, p2): (Vec<u32>, Vec<u32>) = if x_var {
        let a: Vec<u32> = (0..n1 * d).map(|o| slot(tape, x1, o)).collect();
        let b: Vec<u32> = if cross {
            (0..n2 * d).map(|o| slot(tape, x2, o)).collect()
        } else {
            a.clone()
        };
        (a, b)
    } else {
        (vec![], vec![])
    };
    let out = tape.alloc(n);
    tape.val[out as usize..out as usize + n].copy_from_slice(&vals);
    let eb = tape.entries_base();
    let k = var_h.len() + if x_var { 2 * d } else { 0 };
    for j in 0..n2 {
        for i in 0..n1 {
            let pr = &parts[i + j * n1];
            for &(q, s) in &var_h {
                tape.entry(s, pr[q]);
            }
            if x_var {
                for c in 0..d {
                    let t = pr[3] * (xs1[i * d + c] - xs2[j * d + c]);
                    tape.entry(p1[i * d + c], t);
                    tape.entry(p2[j * d + c], -t);
                }
            }
        }
    }
    tape.finish(out, n, k, eb);
    Ok(Value::from_tensor(Tensor {
        arr: vec![],
        base,
        data: Data::Var(Slots::range(out, n)),
    }))
}
