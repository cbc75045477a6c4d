//! The fused pass of a generalised linear model: `y ~ family(α + X · β, …)` with `X` a data
//! matrix, evaluated block by block over the rows without recording N-vectors on the tape.
//!
//! Stan Math spells this out as `bernoulli_logit_glm`, `poisson_log_glm` and `normal_id_glm`
//! (Stan Functions Reference, "Generalized linear models"); here the compiler finds the shape
//! itself (`super::super::fuse`). For rows `r₀ .. r₀ + B` the pass forms the linear predictor
//! ηᵢ = αᵢ + Σₖ Xᵢₖ βₖ in a buffer of B values, calls the family's own log density on the
//! block (so values, dropped constants under `~`, edge cases and argument checks are exactly
//! the family's), and accumulates ∂/∂β = Xᵀ ∂/∂η and ∂/∂α = Σ ∂/∂η from the block's partials.
//! The tape receives one node with the partials with respect to α, β and the family's other
//! parameters: O(K) memory instead of the O(N) of a product node, a sum node and a density node
//! (issue 16, "data held near its own size"; issue 12, "fused passes").
//!
//! Values agree with the unfused statement to rounding (the sums are taken in blocks), and are
//! a pure function of the inputs, so results stay reproducible for a seed at any thread count.

use std::sync::Arc;

use faer::linalg::matmul::matmul;
use faer::{Accum, MatMut, MatRef, Par};

use crate::distributions::{self, Arg};

use super::super::ir::Fusion;
use super::super::tape::S;
use super::super::value::{Base, Data, R, Value};

use super::*;

/// Rows per block: the predictor, the variate and the block's rows of X stay in cache. Both
/// products of a block (X_b·β and X_bᵀ·∂η) are faer matrix–vector products.
const BLOCK: usize = 1024;

/// Arguments of a fused family: the variate, the linear predictor and up to two more.
const MAX_ARGS: usize = 4;

/// A buffer of the fused pass taken from a per-thread pool and given back when dropped, so
/// that the pass allocates nothing once it has run (issue 12, allocation-free evaluation).
struct Buf<T: Pooled>(Vec<T>);

/// Element types with a per-thread pool of spare [`Buf`] vectors.
trait Pooled: Copy + 'static {
    fn pool() -> &'static std::thread::LocalKey<std::cell::RefCell<Vec<Vec<Self>>>>;
}

thread_local! {
    static F64_POOL: std::cell::RefCell<Vec<Vec<f64>>> = const { std::cell::RefCell::new(Vec::new()) };
    static U32_POOL: std::cell::RefCell<Vec<Vec<u32>>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Pooled for f64 {
    fn pool() -> &'static std::thread::LocalKey<std::cell::RefCell<Vec<Vec<f64>>>> {
        &F64_POOL
    }
}

impl Pooled for u32 {
    fn pool() -> &'static std::thread::LocalKey<std::cell::RefCell<Vec<Vec<u32>>>> {
        &U32_POOL
    }
}

impl<T: Pooled> Buf<T> {
    /// An empty buffer (a pooled one when there is one).
    fn new() -> Buf<T> {
        let v = T::pool()
            .try_with(|p| p.try_borrow_mut().ok().and_then(|mut p| p.pop()))
            .ok()
            .flatten()
            .unwrap_or_default();
        Buf(v)
    }

    /// `n` copies of `x`.
    fn filled(n: usize, x: T) -> Buf<T> {
        let mut b = Buf::new();
        b.0.resize(n, x);
        b
    }

    /// The values of `it`.
    fn from_iter(it: impl IntoIterator<Item = T>) -> Buf<T> {
        let mut b = Buf::new();
        b.0.extend(it);
        b
    }
}

impl<T: Pooled> Drop for Buf<T> {
    fn drop(&mut self) {
        let mut v = std::mem::take(&mut self.0);
        if v.capacity() == 0 {
            return;
        }
        v.clear();
        let _ = T::pool().try_with(|p| {
            if let Ok(mut p) = p.try_borrow_mut()
                && p.len() < 32
            {
                p.push(v);
            }
        });
    }
}

impl<T: Pooled> std::ops::Deref for Buf<T> {
    type Target = Vec<T>;
    fn deref(&self) -> &Vec<T> {
        &self.0
    }
}

impl<T: Pooled> std::ops::DerefMut for Buf<T> {
    fn deref_mut(&mut self) -> &mut Vec<T> {
        &mut self.0
    }
}

/// A real argument as the fused pass reads it: a scalar, or one value per row.
enum Col {
    Scalar(f64),
    Rows(Buf<f64>),
}

impl Col {
    fn block(&self, r0: usize, nb: usize) -> Arg<'_> {
        match self {
            Col::Scalar(x) => Arg::Scalar(*x),
            Col::Rows(v) => Arg::Vector(&v[r0..r0 + nb]),
        }
    }
}

/// An evaluated input of the fused pass: its values, and the tape slot of each value when it
/// depends on parameters (`None` for data).
struct Input {
    col: Col,
    slots: Option<Buf<u32>>,
}

impl Ctx<'_> {
    /// Reads a scalar, or a tensor of exactly `n` reals, as an [`Input`]; `None` for any other
    /// shape (the caller then runs the general path).
    fn glm_input(&mut self, v: &Value, n: usize) -> Option<Input> {
        if let Some(s) = v.as_s() {
            return Some(match s {
                S::C(x) => Input {
                    col: Col::Scalar(x),
                    slots: None,
                },
                S::V(i) => Input {
                    col: Col::Scalar(self.tape.val[i as usize]),
                    slots: Some(Buf::filled(1, i)),
                },
            });
        }
        let Value::T(t) = v else { return None };
        if t.data.len() != n || !matches!(t.base, Base::Scalar | Base::Vector(_)) {
            return None;
        }
        Some(match &t.data {
            Data::Real(xs) | Data::Int(xs) => Input {
                col: Col::Rows(Buf::from_iter(xs.iter().copied())),
                slots: None,
            },
            Data::Var(ix) => {
                let slots = Buf::from_iter(ix.iter());
                Input {
                    col: Col::Rows(Buf::from_iter(
                        slots.iter().map(|&i| self.tape.val[i as usize]),
                    )),
                    slots: Some(slots),
                }
            }
        })
    }

    /// Runs the statement of `fusion` (`y ~ family(α + X · β, args[1..])` or its `target +=`
    /// form; `propto` drops constant terms) as the fused pass, returning the log-density term, or `Ok(None)` when the values at run time do not have the fused shape
    /// (α not a scalar or N-vector, β not a K-vector, the variate not N values, a parameter not
    /// a scalar or N-vector) or when the family reports an error: the caller then runs the
    /// general path, which evaluates the same statement and words any error as usual.
    ///
    /// The variate was checked against the family's support when the model was built when
    /// `fusion.variate_checked`.
    pub(super) fn glm_tilde(&mut self, fusion: &Fusion, propto: bool) -> R<Option<S>> {
        let (shape, lhs, family, args) = (&fusion.shape, &fusion.lhs, fusion.family, &fusion.args);
        let variate_checked = fusion.variate_checked;
        let Value::T(xt) = &self.globals[shape.x as usize] else {
            return Ok(None);
        };
        let (Base::Matrix(n, k), true) = (xt.base, xt.arr.is_empty()) else {
            return Ok(None);
        };
        let xs: Arc<Vec<f64>> = match &xt.data {
            Data::Real(a) | Data::Int(a) => a.clone(),
            Data::Var(_) => return Ok(None),
        };
        // A data outcome is read in place (no clone of its value).
        let globals = self.globals;
        let owned;
        let y: &Value = match lhs {
            super::super::ir::Ex::Global(g) => &globals[*g as usize],
            e => {
                owned = self.eval(e)?;
                &owned
            }
        };
        let ys: Arc<Vec<f64>> = match y {
            Value::T(t) if t.data.len() == n => match &t.data {
                Data::Real(a) | Data::Int(a) => a.clone(),
                Data::Var(_) => return Ok(None),
            },
            _ => return Ok(None),
        };
        let alpha = match &shape.alpha {
            Some(e) => {
                let v = self.eval(e)?;
                match self.glm_input(&v, n) {
                    Some(i) => Some(i),
                    None => return Ok(None),
                }
            }
            None => None,
        };
        let beta = {
            let v = self.eval(&shape.beta)?;
            match self.glm_input(&v, k) {
                Some(i) if matches!(i.col, Col::Rows(_)) => i,
                _ => return Ok(None),
            }
        };
        if args.is_empty() || args.len() + 1 > MAX_ARGS {
            return Ok(None);
        }
        // The further arguments (at most MAX_ARGS − 2), on the stack.
        let mut rest_buf: [Option<Input>; MAX_ARGS - 2] = [None, None];
        let n_rest = args.len() - 1;
        for (j, a) in args[1..].iter().enumerate() {
            let v = self.eval(a)?;
            match self.glm_input(&v, n) {
                Some(i) => rest_buf[j] = Some(i),
                None => return Ok(None),
            }
        }
        let rest: [&Input; MAX_ARGS - 2] = match &rest_buf {
            [Some(a), Some(b)] => [a, b],
            [Some(a), None] => [a, a],
            _ => [&beta, &beta],
        };
        let rest = &rest[..n_rest];
        let beta_vals: Buf<f64> = match &beta.col {
            Col::Scalar(x) => Buf::filled(1, *x),
            Col::Rows(v) => Buf::from_iter(v.iter().copied()),
        };
        let eta_var = beta.slots.is_some() || alpha.as_ref().is_some_and(|a| a.slots.is_some());
        // The flags of the family's arguments: (y, η, rest…).
        let mut is_var_buf = [false; MAX_ARGS];
        is_var_buf[1] = eta_var;
        for (f, r) in is_var_buf[2..].iter_mut().zip(rest) {
            *f = r.slots.is_some();
        }
        let is_var = &is_var_buf[..2 + n_rest];
        if !is_var.iter().any(|&b| b) {
            return Ok(None);
        }
        let recording = self.tape.recording;
        // Accumulated partials: β (K), α (1 or N), and each further argument (1 or N).
        let mut g_beta = Buf::filled(
            if recording && beta.slots.is_some() {
                k
            } else {
                0
            },
            0.0,
        );
        let mut g_alpha = match &alpha {
            Some(Input {
                col,
                slots: Some(_),
            }) if recording => Buf::filled(
                match col {
                    Col::Scalar(_) => 1,
                    Col::Rows(_) => n,
                },
                0.0,
            ),
            _ => Buf::new(),
        };
        let g_size = |r: &Input| match (&r.slots, &r.col, recording) {
            (Some(_), Col::Scalar(_), true) => 1,
            (Some(_), Col::Rows(_), true) => n,
            _ => 0,
        };
        let mut g_rest: [Buf<f64>; MAX_ARGS - 2] = [Buf::new(), Buf::new()];
        for (g, r) in g_rest.iter_mut().zip(rest) {
            g.resize(g_size(r), 0.0);
        }
        let g_rest = &mut g_rest[..n_rest];
        let mut eta = Buf::filled(BLOCK.min(n.max(1)), 0.0);
        let mut value = 0.0;
        let mut r0 = 0;
        while r0 < n {
            let nb = BLOCK.min(n - r0);
            let eta = &mut eta[..nb];
            match alpha.as_ref().map(|a| &a.col) {
                None => eta.fill(0.0),
                Some(Col::Scalar(a)) => eta.fill(*a),
                Some(Col::Rows(a)) => eta.copy_from_slice(&a[r0..r0 + nb]),
            }
            // The block's rows of X: nb × k, column-major with column stride n.
            let xb = (k > 0).then(|| {
                MatRef::from_column_major_slice_with_stride(
                    &xs[r0..r0 + (k - 1) * n + nb],
                    nb,
                    k,
                    n,
                )
            });
            if let Some(xb) = xb {
                matmul(
                    MatMut::from_column_major_slice_mut(eta, nb, 1),
                    Accum::Add,
                    xb,
                    MatRef::from_column_major_slice(&beta_vals[..], k, 1),
                    1.0,
                    Par::Seq,
                );
            }
            // (y, η, rest…) on the stack: the families with a fused pass have at most two
            // parameters besides the location.
            let mut block_args = [Arg::Scalar(0.0); MAX_ARGS];
            block_args[0] = Arg::Vector(&ys[r0..r0 + nb]);
            block_args[1] = Arg::Vector(eta);
            for (a, r) in block_args[2..].iter_mut().zip(rest) {
                *a = r.col.block(r0, nb);
            }
            let term = match distributions::log_density_checked(
                family,
                &block_args[..2 + rest.len()],
                is_var,
                propto,
                variate_checked,
            ) {
                Ok(t) if !t.value.is_nan() => t,
                _ => return Ok(None),
            };
            value += term.value;
            if recording {
                let d_eta = &term.partials[1];
                if !d_eta.is_empty() {
                    // A block of one row returns its partial as a scalar of length 1 too.
                    if let Some(xb) = xb
                        && !g_beta.is_empty()
                    {
                        // ∂/∂β += X_blockᵀ · ∂/∂η_block
                        matmul(
                            MatMut::from_column_major_slice_mut(&mut g_beta[..], k, 1),
                            Accum::Add,
                            xb.transpose(),
                            MatRef::from_column_major_slice(d_eta, nb, 1),
                            1.0,
                            Par::Seq,
                        );
                    }
                    match g_alpha.len() {
                        0 => {}
                        1 => g_alpha[0] += d_eta.iter().sum::<f64>(),
                        _ => g_alpha[r0..r0 + nb].copy_from_slice(d_eta),
                    }
                }
                for (g, p) in g_rest.iter_mut().zip(&term.partials[2..]) {
                    match g.len() {
                        0 => {}
                        1 => g[0] += p.iter().sum::<f64>(),
                        _ => g[r0..r0 + nb].copy_from_slice(p),
                    }
                }
            }
            r0 += nb;
        }
        let out = self.tape.leaf(value);
        if !recording {
            return Ok(Some(S::V(out)));
        }
        let base = self.tape.entries_base();
        let mut entries = 0;
        let mut push =
            |tape: &mut super::super::tape::Tape, slots: &Option<Buf<u32>>, g: &[f64]| {
                if let Some(slots) = slots {
                    for (&s, &d) in slots.iter().zip(g) {
                        tape.entry(s, d);
                        entries += 1;
                    }
                }
            };
        push(self.tape, &beta.slots, &g_beta);
        if let Some(a) = &alpha {
            push(self.tape, &a.slots, &g_alpha);
        }
        for (r, g) in rest.iter().zip(g_rest.iter()) {
            push(self.tape, &r.slots, g);
        }
        self.tape.finish(out, 1, entries, base);
        Ok(Some(S::V(out)))
    }
}
