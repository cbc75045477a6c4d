//! Recognises a dense tanh layer in an expression and evaluates it as one tape node
//! ([`super::super::tape`]'s `dense_tanh`, issue 10). The forms are those of the examples and
//! of stdlib/nn.bayes:
//! - `tanh(X * W + rep_matrix(b', N))` (b a vector; or `rep_matrix(b, N)` with b a row vector);
//! - `tanh(add_row_vector(X * W, b))` (b a vector or row vector).
//!
//! `X`, `W`, `b` and `N` must be variables or literals, so that recognising the form evaluates
//! nothing twice. Anything else (other shapes, integers, no parameter involved, a size that does
//! not match) returns `None`, and the ordinary nodes evaluate the expression and report its
//! errors, so the fused path never changes what a model means.

use crate::syntax::ast::BinOp;

use super::super::ir::{Builtin, Ex};
use super::super::tape::MatArg;
use super::super::value::{Base, Data, R, Slots, Tensor, Value};

use super::*;

impl Ctx<'_> {
    /// `tanh(e)` as one dense-layer node when `e` has one of the forms above; `Ok(None)` when
    /// it does not (the caller evaluates it the ordinary way).
    pub(super) fn dense_tanh(&mut self, e: &Ex) -> R<Option<Value>> {
        let Some((x, w, b, transposed, rows)) = dense_form(e) else {
            return Ok(None);
        };
        let (Some(xv), Some(wv), Some(bv)) = (self.leaf(x), self.leaf(w), self.leaf(b)) else {
            return Ok(None);
        };
        let rows = match rows {
            Some(r) => match self.leaf(r) {
                Some(Value::Int(k)) => Some(k),
                _ => return Ok(None),
            },
            None => None,
        };
        let (Some((n, d)), Some((d2, h))) = (matrix_shape(&xv), matrix_shape(&wv)) else {
            return Ok(None);
        };
        let Value::T(bt) = &bv else { return Ok(None) };
        let h2 = match (bt.arr.is_empty(), bt.base, transposed, rows) {
            // rep_matrix(b', N): b a vector; rep_matrix(b, N): b a row vector.
            (true, Base::Vector(k), true, Some(_)) | (true, Base::RowVector(k), false, Some(_)) => {
                k
            }
            // add_row_vector(X * W, b).
            (true, Base::Vector(k) | Base::RowVector(k), false, None) => k,
            _ => return Ok(None),
        };
        if d != d2 || h != h2 || rows.is_some_and(|r| r < 0 || r as usize != n) {
            return Ok(None);
        }
        let is_var = |v: &Value| matches!(v, Value::T(t) if matches!(t.data, Data::Var(_)));
        if !(is_var(&xv) || is_var(&wv) || is_var(&bv)) {
            return Ok(None);
        }
        let tape = &mut *self.tape;
        let mut start = |v: &Value| -> Option<u32> {
            match v {
                Value::T(t) => match &t.data {
                    Data::Var(s) => Some(tape.contiguous(s)),
                    _ => None,
                },
                _ => None,
            }
        };
        let (sx, sw, sb) = (start(&xv), start(&wv), start(&bv));
        fn arg(v: &Value, s: Option<u32>) -> Option<MatArg<'_>> {
            match (s, v) {
                (Some(s), _) => Some(MatArg::Var(s)),
                (None, Value::T(t)) => match &t.data {
                    Data::Real(a) => Some(MatArg::Data(a)),
                    _ => None,
                },
                _ => None,
            }
        }
        let (Some(ax), Some(aw), Some(ab)) = (arg(&xv, sx), arg(&wv, sw), arg(&bv, sb)) else {
            // Integer data: left to the ordinary nodes (nothing was recorded but gathers of
            // the variable operands, which are harmless identities).
            return Ok(None);
        };
        let out = self.tape.dense_tanh(ax, aw, Some(ab), n, d, h);
        Ok(Some(Value::from_tensor(Tensor {
            arr: vec![],
            base: Base::Matrix(n, h),
            data: Data::Var(Slots::range(out, n * h)),
        })))
    }
}

/// (X, W, b, b is transposed, the row count of `rep_matrix`) of the two dense forms.
fn dense_form(e: &Ex) -> Option<(&Ex, &Ex, &Ex, bool, Option<&Ex>)> {
    fn product(e: &Ex) -> Option<(&Ex, &Ex)> {
        match e {
            Ex::Bin(BinOp::Mul, x, w) => Some((&**x, &**w)),
            _ => None,
        }
    }
    match e {
        Ex::Bin(BinOp::Add, l, r) => {
            let (x, w) = product(l)?;
            let Ex::Call(Builtin::RepMatrix, args) = &**r else {
                return None;
            };
            let [b, rows] = args.as_slice() else {
                return None;
            };
            match b {
                Ex::Transpose(b) => Some((x, w, &**b, true, Some(rows))),
                b => Some((x, w, b, false, Some(rows))),
            }
        }
        Ex::Call(Builtin::AddRowVector, args) => {
            let [m, b] = args.as_slice() else {
                return None;
            };
            let (x, w) = product(m)?;
            Some((x, w, b, false, None))
        }
        _ => None,
    }
}

/// (rows, cols) of a plain real-valued or variable matrix.
fn matrix_shape(v: &Value) -> Option<(usize, usize)> {
    match v {
        Value::T(t) if t.arr.is_empty() && !matches!(t.data, Data::Int(_)) => match t.base {
            Base::Matrix(r, c) => Some((r, c)),
            _ => None,
        },
        _ => None,
    }
}
