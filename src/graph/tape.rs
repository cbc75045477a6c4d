//! The reverse-mode tape: values, adjoints and linearised nodes, reused between evaluations.
//!
//! Every real quantity that depends on parameters is a slot of [`Tape::val`]; slots are written
//! once (static single assignment), so a vector may alias the same slot several times (e.g.
//! `rep_vector(mu, N)`). A node stores, for each of its outputs, the partial derivatives of that
//! output with respect to its inputs ("precomputed gradients", as Stan Math's
//! `precomputed_gradients_vari`), or for a product with a data matrix only a reference to the
//! matrix, so the reverse sweep is a plain loop over an enum (no `Box<dyn>`).

use std::sync::Arc;

use faer::{Accum, MatMut, MatRef, Par};

use super::kernel::{self, KernelBuffers};
use super::value::{Slots, Value};

mod dense;
mod per_row;

pub(crate) use per_row::Unsupported;

/// One real scalar seen by the interpreter: a constant, or a slot of the tape.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum S {
    /// A value that does not depend on parameters.
    C(f64),
    /// A tape slot.
    V(u32),
}

/// A node of the tape: how adjoints flow from its outputs back to its inputs.
#[derive(Clone, Copy, Debug)]
enum Node {
    /// `n` outputs at slots `out .. out + n`; output `i` has `k` inputs `ins[base + i·k + j]` with
    /// partials `parts[base + i·k + j]`.
    Lin { out: u32, n: u32, k: u32, base: u32 },
    /// Elementwise map of contiguous slots: output `out + i` has the single input `x + i` with
    /// partial `parts[p + i]` (`tanh`, `exp`, … over a vector or matrix).
    Map { out: u32, x: u32, n: u32, p: u32 },
    /// Elementwise binary map with broadcasting operands: output `out + i` has partial
    /// `parts[p + i]` with respect to element `i` of `x` and (when both are variables)
    /// `parts[p + n + i]` with respect to element `i` of `y`.
    Map2 {
        out: u32,
        x: Ew,
        y: Ew,
        n: u32,
        p: u32,
    },
    /// `cx · x + cy · y` elementwise with broadcasting operands (`+`, `-`): the partials are
    /// the constants `cx`, `cy`, so nothing per element is stored.
    Affine2 {
        out: u32,
        x: Ew,
        y: Ew,
        n: u32,
        cx: f64,
        cy: f64,
    },
    /// One output `out` with partials `parts[p + i]` with respect to the contiguous slots
    /// `x .. x + n` (a reduction, or a vector argument of a log density).
    Dot { out: u32, x: u32, n: u32, p: u32 },
    /// Dense product `C = A · B` (column-major; `A` is `m × k`, `B` is `k × n`, `C` at slots
    /// `out .. out + m·n`). Reverse: `dA += dC · Bᵀ`, `dB += Aᵀ · dC`, as faer products.
    MatMul {
        out: u32,
        a: Opnd,
        b: Opnd,
        m: u32,
        k: u32,
        n: u32,
    },
    /// `Z = tanh(X · W + 1 bᵀ)` at slots `out .. out + n·h` (`X` is `n × d`, `W` is `d × h`,
    /// `b` has `h` entries): one node for a dense tanh layer ([`dense`]).
    DenseTanh {
        out: u32,
        x: Opnd,
        w: Opnd,
        b: Option<Opnd>,
        n: u32,
        d: u32,
        h: u32,
    },
    /// A run of a scalar kernel (`super::kernel`): record `k` of [`Tape::kb`].
    Kernel(u32),
    /// A dense factorisation-based operation (inverse, determinant, solves, Cholesky) on an
    /// `n × n` matrix `a` (and a right-hand side `b` with `k` columns or rows): outputs from
    /// `out`; the reverse pass is analytic, in [`super::linalg::backward`].
    Linalg {
        op: LinOp,
        out: u32,
        a: Opnd,
        b: Option<Opnd>,
        n: u32,
        k: u32,
    },
}

pub(crate) use super::linalg::LinOp;

/// An operand of a [`Node::MatMul`]: contiguous slots (column-major) or a data matrix.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Opnd {
    /// Slots `start ..`.
    Var(u32),
    /// `Tape::mats[i]`.
    Data(u32),
}

/// How an operand of a [`Node::Map2`] maps element `i` to its slot.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Ew {
    /// A constant (no adjoint).
    Const,
    /// Slot `start + i`.
    Range(u32),
    /// One slot broadcast to every element.
    Bcast(u32),
    /// Slot `start + i / rows` (a row vector repeated down `rows` rows, column-major).
    RowRep(u32, u32),
}

/// The tape of one evaluation. Cleared and reused between evaluations (see [`Tape::reset`]).
#[derive(Default, Debug)]
pub struct Tape {
    /// Values of all slots.
    pub val: Vec<f64>,
    adj: Vec<f64>,
    nodes: Vec<Node>,
    ins: Vec<u32>,
    parts: Vec<f64>,
    /// Partials of the compact nodes ([`Node::Map`], [`Node::Map2`], [`Node::Dot`]), which
    /// have no index lists (`parts` stays aligned with `ins`).
    cparts: Vec<f64>,
    mats: Vec<Arc<Vec<f64>>>,
    /// Work space of the fused nodes ([`Node::DenseTanh`]'s pre-activation and its adjoint):
    /// overwritten before it is read, so never cleared or zero-filled between evaluations.
    scratch: Vec<f64>,
    /// Traces of scalar-kernel runs (`super::kernel`).
    pub(crate) kb: KernelBuffers,
    /// When false, no nodes or partials are stored (the value-only path); values still are, so
    /// that both paths see the same `is_var` flags and return the same value.
    pub recording: bool,
    /// The environment buffer of the last evaluation context, kept for the next
    /// (`eval::Ctx::new`, `eval::Ctx::recycle`).
    pub(crate) spare_env: Vec<Value>,
    /// The target-slot buffer of the last evaluation, kept for the next.
    pub(crate) spare_target: Vec<u32>,
    /// The argument buffer of the last `~` statement, kept for the next.
    pub(crate) spare_vals: Vec<Value>,
    /// Scalar buffers of the parameter transforms (`Model::bind_params`) and of the
    /// Jacobian terms, kept for the next evaluation.
    pub(crate) spare_s: Vec<S>,
    pub(crate) spare_s2: Vec<S>,
    /// Empty argument buffers of built-in calls, one per nesting level in use so far
    /// (`eval::expr`: a call takes one and gives it back).
    pub(crate) spare_args: Vec<Vec<Value>>,
}

impl Tape {
    /// Empties the tape, keeping its buffers.
    pub fn reset(&mut self, recording: bool) {
        self.val.clear();
        self.adj.clear();
        self.nodes.clear();
        self.ins.clear();
        self.parts.clear();
        self.cparts.clear();
        self.mats.clear();
        self.kb.clear();
        self.recording = recording;
    }

    /// A new input slot (an unconstrained parameter or a constant promoted into a var container).
    #[inline(always)]
    pub fn leaf(&mut self, v: f64) -> u32 {
        let i = self.val.len() as u32;
        self.val.push(v);
        i
    }

    /// The value of a scalar.
    #[inline]
    pub fn value(&self, s: S) -> f64 {
        match s {
            S::C(x) => x,
            S::V(i) => self.val[i as usize],
        }
    }

    /// A scalar node: `value` with partials `(input, ∂value/∂input)`. Constant inputs are
    /// ignored; with no variable input the result is a constant.
    ///
    /// Always inlined: callers pass short arrays of known length, so the loops unroll and the
    /// scalar arithmetic of the interpreter's inner loops does not pay a call per operation.
    #[inline(always)]
    pub fn node(&mut self, value: f64, inputs: &[(S, f64)]) -> S {
        if !inputs.iter().any(|(s, _)| matches!(s, S::V(_))) {
            return S::C(value);
        }
        let out = self.leaf(value);
        if self.recording {
            let base = self.ins.len() as u32;
            let mut k = 0;
            for &(s, d) in inputs {
                if let S::V(i) = s {
                    self.ins.push(i);
                    self.parts.push(d);
                    k += 1;
                }
            }
            self.nodes.push(Node::Lin { out, n: 1, k, base });
        }
        S::V(out)
    }

    /// Start of a many-entry node: returns the entry base to pass to [`Tape::finish`].
    #[inline]
    pub fn entries_base(&self) -> u32 {
        self.ins.len() as u32
    }

    /// Adds an entry (input slot, partial) to the node being built.
    #[inline]
    pub fn entry(&mut self, input: u32, d: f64) {
        if self.recording {
            self.ins.push(input);
            self.parts.push(d);
        }
    }

    /// Reserves `n` output slots (values filled in by the caller through [`Tape::val`]).
    #[inline]
    pub fn alloc(&mut self, n: usize) -> u32 {
        let out = self.val.len() as u32;
        self.val.resize(self.val.len() + n, 0.0);
        out
    }

    /// Closes a node with `n` outputs from `out` and `k` entries per output, starting at `base`.
    #[inline]
    pub fn finish(&mut self, out: u32, n: usize, k: usize, base: u32) {
        if self.recording && n > 0 && k > 0 {
            debug_assert_eq!(self.ins.len(), base as usize + n * k);
            self.nodes.push(Node::Lin {
                out,
                n: n as u32,
                k: k as u32,
                base,
            });
        }
    }

    /// The first of `s.len()` contiguous slots holding the values of `s`: `s` itself when its
    /// slots are contiguous, else a gathered copy (an identity node), so dense nodes can read
    /// values and write adjoints in place.
    pub fn contiguous(&mut self, s: &Slots) -> u32 {
        if let Some(start) = s.contiguous() {
            return start;
        }
        let n = s.len();
        let out = self.alloc(n);
        let base = self.entries_base();
        for i in 0..n {
            let q = s.at(i);
            self.val[out as usize + i] = self.val[q as usize];
            self.entry(q, 1.0);
        }
        self.finish(out, n, 1, base);
        out
    }

    /// Dense product `A · B` (column-major, `A` is `m × k`, `B` is `k × n`); each operand is
    /// data or contiguous slots (see [`Tape::contiguous`]), at least one of them slots. Returns
    /// the first of `m·n` output slots. Forward and reverse passes are faer matrix products
    /// (`Par::Seq`: chains already run in parallel).
    pub fn matmul(&mut self, a: MatArg, b: MatArg, m: usize, k: usize, n: usize) -> u32 {
        let out = self.alloc(m * n);
        let opnd = |t: &mut Tape, x: MatArg| match x {
            MatArg::Var(s) => Opnd::Var(s),
            MatArg::Data(d) => {
                t.mats.push(d.clone());
                Opnd::Data(t.mats.len() as u32 - 1)
            }
        };
        let (oa, ob) = (opnd(self, a), opnd(self, b));
        {
            let (lo, hi) = self.val.split_at_mut(out as usize);
            let am = operand(lo, &self.mats, oa, m, k);
            let bm = operand(lo, &self.mats, ob, k, n);
            faer::linalg::matmul::matmul(
                MatMut::from_column_major_slice_mut(&mut hi[..m * n], m, n),
                Accum::Replace,
                am,
                bm,
                1.0,
                Par::Seq,
            );
        }
        if self.recording {
            self.nodes.push(Node::MatMul {
                out,
                a: oa,
                b: ob,
                m: m as u32,
                k: k as u32,
                n: n as u32,
            });
        } else {
            self.mats.clear();
        }
        out
    }

    /// A [`Node::Linalg`] with the output values `values` (already computed by the caller):
    /// `a` is the `n × n` matrix, `b` the right-hand side with `k` columns (left solves) or
    /// rows (right solves). Returns the first output slot.
    pub(crate) fn linalg(
        &mut self,
        op: LinOp,
        a: MatArg,
        b: Option<MatArg>,
        n: usize,
        k: usize,
        values: &[f64],
    ) -> u32 {
        let out = self.alloc(values.len());
        self.val[out as usize..].copy_from_slice(values);
        if self.recording {
            let opnd = |t: &mut Tape, x: MatArg| match x {
                MatArg::Var(s) => Opnd::Var(s),
                MatArg::Data(d) => {
                    t.mats.push(d.clone());
                    Opnd::Data(t.mats.len() as u32 - 1)
                }
            };
            let oa = opnd(self, a);
            let ob = b.map(|b| opnd(self, b));
            self.nodes.push(Node::Linalg {
                op,
                out,
                a: oa,
                b: ob,
                n: n as u32,
                k: k as u32,
            });
        }
        out
    }

    /// Elementwise map of the contiguous slots `x .. x + n`: `f(x_i)` returns (value,
    /// derivative). Returns the first of `n` output slots; one [`Node::Map`].
    #[inline(always)]
    pub fn map1(&mut self, x: u32, n: usize, f: impl Fn(f64) -> (f64, f64)) -> u32 {
        let out = self.alloc(n);
        let (lo, hi) = self.val.split_at_mut(out as usize);
        let xs = &lo[x as usize..x as usize + n];
        if self.recording {
            let p = self.cparts.len();
            self.cparts.resize(p + n, 0.0);
            for ((y, d), &xi) in hi.iter_mut().zip(&mut self.cparts[p..]).zip(xs) {
                (*y, *d) = f(xi);
            }
            if n > 0 {
                self.nodes.push(Node::Map {
                    out,
                    x,
                    n: n as u32,
                    p: p as u32,
                });
            }
        } else {
            for (y, &xi) in hi.iter_mut().zip(xs) {
                *y = f(xi).0;
            }
        }
        out
    }

    /// [`Tape::map1`] with the loop written by the caller: `fill(xs, ys, ds)` writes the `n`
    /// values into `ys` and, while recording, their derivatives into `ds` (`None` otherwise).
    /// For loops that need their own code generation (e.g. [`crate::distributions::lanes::
    /// tanh_slices`]). Returns the first of `n` output slots; one [`Node::Map`].
    pub fn map1_with(
        &mut self,
        x: u32,
        n: usize,
        fill: impl FnOnce(&[f64], &mut [f64], Option<&mut [f64]>),
    ) -> u32 {
        let out = self.alloc(n);
        let (lo, hi) = self.val.split_at_mut(out as usize);
        let xs = &lo[x as usize..x as usize + n];
        if self.recording {
            let p = self.cparts.len();
            self.cparts.resize(p + n, 0.0);
            fill(xs, &mut hi[..n], Some(&mut self.cparts[p..p + n]));
            if n > 0 {
                self.nodes.push(Node::Map {
                    out,
                    x,
                    n: n as u32,
                    p: p as u32,
                });
            }
        } else {
            fill(xs, &mut hi[..n], None);
        }
        out
    }

    /// Appends `n` partials to the partials buffer and returns them for the caller to fill;
    /// then [`Tape::push_dot`] closes the node. Only while recording.
    pub fn parts_scratch(&mut self, n: usize) -> &mut [f64] {
        let p = self.cparts.len();
        self.cparts.resize(p + n, 0.0);
        &mut self.cparts[p..]
    }

    /// Closes a [`Node::Dot`]: output `out` has the last `n` partials (from
    /// [`Tape::parts_scratch`]) with respect to the contiguous slots `x .. x + n`. Several such
    /// nodes may share one output (the vector arguments of one log density).
    pub fn push_dot(&mut self, out: u32, x: u32, n: usize) {
        if self.recording && n > 0 {
            let p = (self.cparts.len() - n) as u32;
            self.nodes.push(Node::Dot {
                out,
                x,
                n: n as u32,
                p,
            });
        }
    }

    /// The slot values and the kernel buffers, borrowed together (a kernel reads the one and
    /// records into the other).
    pub(crate) fn kernel_parts(&mut self) -> (&[f64], &mut KernelBuffers) {
        (&self.val, &mut self.kb)
    }

    /// Appends the node of kernel record `r` (its outputs already allocated).
    pub(crate) fn push_kernel_node(&mut self, r: u32) {
        if self.recording {
            self.nodes.push(Node::Kernel(r));
        }
    }

    /// Reverse sweep: seeds ∂/∂slot = 1 for every slot in `seeds` (the terms of the log
    /// density), propagates, and writes the adjoints of slots `0 .. grad.len()` into `grad`.
    pub fn gradient(&mut self, seeds: &[u32], grad: &mut [f64]) {
        self.adj.clear();
        self.adj.resize(self.val.len(), 0.0);
        for &s in seeds {
            self.adj[s as usize] += 1.0;
        }
        let adj = &mut self.adj;
        for node in self.nodes.iter().rev() {
            match *node {
                Node::Lin { out, n, k, base } => {
                    let (out, n, k, base) = (out as usize, n as usize, k as usize, base as usize);
                    // One output (the scalar arithmetic of loops): no inner loop.
                    if n == 1 && (k == 1 || k == 2) {
                        let a = adj[out];
                        adj[self.ins[base] as usize] += self.parts[base] * a;
                        if k == 2 {
                            adj[self.ins[base + 1] as usize] += self.parts[base + 1] * a;
                        }
                        continue;
                    }
                    let ins = &self.ins[base..base + n * k];
                    let parts = &self.parts[base..base + n * k];
                    match k {
                        1 => {
                            for i in 0..n {
                                let a = adj[out + i];
                                adj[ins[i] as usize] += parts[i] * a;
                            }
                        }
                        2 => {
                            for i in 0..n {
                                let a = adj[out + i];
                                let e = 2 * i;
                                adj[ins[e] as usize] += parts[e] * a;
                                adj[ins[e + 1] as usize] += parts[e + 1] * a;
                            }
                        }
                        _ if n == 1 => {
                            let a = adj[out];
                            if a != 0.0 {
                                for (&inp, &d) in ins.iter().zip(parts) {
                                    adj[inp as usize] += d * a;
                                }
                            }
                        }
                        _ => {
                            for i in 0..n {
                                let a = adj[out + i];
                                if a == 0.0 {
                                    continue;
                                }
                                let e = i * k;
                                for (&inp, &d) in ins[e..e + k].iter().zip(&parts[e..e + k]) {
                                    adj[inp as usize] += d * a;
                                }
                            }
                        }
                    }
                }
                Node::Kernel(r) => kernel::backward(&mut self.kb, r, adj),
                Node::DenseTanh {
                    out,
                    x,
                    w,
                    b,
                    n,
                    d,
                    h,
                } => dense::backward(
                    adj,
                    &self.val,
                    &self.mats,
                    &mut self.scratch,
                    (out, x, w, b),
                    n as usize,
                    d as usize,
                    h as usize,
                ),
                Node::Linalg {
                    op,
                    out,
                    a,
                    b,
                    n,
                    k,
                } => super::linalg::backward(
                    op,
                    &self.val,
                    &self.mats,
                    adj,
                    out as usize,
                    a,
                    b,
                    n as usize,
                    k as usize,
                ),
                Node::Map { out, x, n, p } => {
                    let (out, x, n, p) = (out as usize, x as usize, n as usize, p as usize);
                    let (lo, hi) = adj.split_at_mut(out);
                    for ((g, &a), &d) in lo[x..x + n]
                        .iter_mut()
                        .zip(&hi[..n])
                        .zip(&self.cparts[p..p + n])
                    {
                        *g += d * a;
                    }
                }
                Node::Map2 { out, x, y, n, p } => {
                    let (out, n, mut p) = (out as usize, n as usize, p as usize);
                    let (lo, hi) = adj.split_at_mut(out);
                    let a = &hi[..n];
                    for e in [x, y] {
                        if e == Ew::Const {
                            continue;
                        }
                        ew_backward(e, lo, a, Some(&self.cparts[p..p + n]), 1.0);
                        p += n;
                    }
                }
                Node::Affine2 {
                    out,
                    x,
                    y,
                    n,
                    cx,
                    cy,
                } => {
                    let (out, n) = (out as usize, n as usize);
                    let (lo, hi) = adj.split_at_mut(out);
                    let a = &hi[..n];
                    ew_backward(x, lo, a, None, cx);
                    ew_backward(y, lo, a, None, cy);
                }
                Node::Dot { out, x, n, p } => {
                    let (out, x, n, p) = (out as usize, x as usize, n as usize, p as usize);
                    let a = adj[out];
                    if a != 0.0 {
                        for (g, &d) in adj[x..x + n].iter_mut().zip(&self.cparts[p..p + n]) {
                            *g += d * a;
                        }
                    }
                }
                Node::MatMul { out, a, b, m, k, n } => {
                    let (out, m, k, n) = (out as usize, m as usize, k as usize, n as usize);
                    let (lo, hi) = adj.split_at_mut(out);
                    let dc = MatRef::from_column_major_slice(&hi[..m * n], m, n);
                    if let Opnd::Var(sa) = a {
                        let bm = operand(&self.val, &self.mats, b, k, n);
                        let sa = sa as usize;
                        faer::linalg::matmul::matmul(
                            MatMut::from_column_major_slice_mut(&mut lo[sa..sa + m * k], m, k),
                            Accum::Add,
                            dc,
                            bm.transpose(),
                            1.0,
                            Par::Seq,
                        );
                    }
                    if let Opnd::Var(sb) = b {
                        let am = operand(&self.val, &self.mats, a, m, k);
                        let sb = sb as usize;
                        faer::linalg::matmul::matmul(
                            MatMut::from_column_major_slice_mut(&mut lo[sb..sb + k * n], k, n),
                            Accum::Add,
                            am.transpose(),
                            dc,
                            1.0,
                            Par::Seq,
                        );
                    }
                }
            }
        }
        grad.copy_from_slice(&self.adj[..grad.len()]);
    }
}

/// The matrix view of a [`Node::MatMul`] operand (`rows × cols`, column-major).
pub(crate) fn operand<'a>(
    val: &'a [f64],
    mats: &'a [Arc<Vec<f64>>],
    o: Opnd,
    rows: usize,
    cols: usize,
) -> MatRef<'a, f64> {
    let xs: &[f64] = match o {
        Opnd::Var(s) => &val[s as usize..s as usize + rows * cols],
        Opnd::Data(d) => &mats[d as usize][..rows * cols],
    };
    MatRef::from_column_major_slice(xs, rows, cols)
}

/// Σ a[i] · p[i] over a run (Σ a[i] without `p`), with four accumulators over chunks of four
/// and the remainder summed after; the one order of summation of the broadcast reverse passes.
#[inline]
pub(crate) fn sum4(a: &[f64], p: Option<&[f64]>) -> f64 {
    let mut acc = [0.0f64; 4];
    let ca = a.chunks_exact(4);
    let ra = ca.remainder();
    let mut t = 0.0;
    match p {
        Some(p) => {
            let cp = p.chunks_exact(4);
            let rp = cp.remainder();
            for (x, y) in ca.zip(cp) {
                for l in 0..4 {
                    acc[l] += x[l] * y[l];
                }
            }
            for (x, y) in ra.iter().zip(rp) {
                t += x * y;
            }
        }
        None => {
            for x in ca {
                for l in 0..4 {
                    acc[l] += x[l];
                }
            }
            t = ra.iter().sum();
        }
    }
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + t
}

/// Adds `c · parts[i] · a[i]` (`c · a[i]` without partials) into the adjoint of element `i` of
/// operand `e` (`lo` holds the adjoints of all slots before the node's outputs).
#[inline]
fn ew_backward(e: Ew, lo: &mut [f64], a: &[f64], parts: Option<&[f64]>, c: f64) {
    let sum = sum4;
    match e {
        Ew::Const => {}
        Ew::Range(s) => {
            let g = &mut lo[s as usize..s as usize + a.len()];
            match parts {
                Some(p) => {
                    for ((g, &ai), &d) in g.iter_mut().zip(a).zip(p) {
                        *g += c * (d * ai);
                    }
                }
                None if c == 1.0 => {
                    for (g, &ai) in g.iter_mut().zip(a) {
                        *g += ai;
                    }
                }
                None => {
                    for (g, &ai) in g.iter_mut().zip(a) {
                        *g += c * ai;
                    }
                }
            }
        }
        Ew::Bcast(s) => lo[s as usize] += c * sum(a, parts),
        Ew::RowRep(s, rows) => {
            let rows = rows as usize;
            for (j, ac) in a.chunks(rows).enumerate() {
                let pc = parts.map(|p| &p[j * rows..j * rows + ac.len()]);
                lo[s as usize + j] += c * sum(ac, pc);
            }
        }
    }
}

/// The values of one operand over a run of elements: one scalar, or a slice.
#[derive(Clone, Copy)]
enum Lane<'a> {
    S(f64),
    V(&'a [f64]),
}

/// Runs `body(i0, out_chunk, x_lane, y_lane)` over the elements `0 .. n` in runs on which every
/// operand is a scalar or a slice: one run, or one per column when an operand is a
/// [`Slots::RowRep`] (its value is constant down a column). `lo` holds the values of all
/// slots before the outputs `out`. Operands must have a compact form ([`Acc::ew`]).
#[inline(always)]
fn for_chunks<'a>(
    n: usize,
    x: &Acc<'a>,
    y: &Acc<'a>,
    lo: &'a [f64],
    out: &mut [f64],
    mut body: impl FnMut(usize, &mut [f64], Lane<'a>, Lane<'a>),
) {
    let rows = match (x, y) {
        (Acc::Var(Slots::RowRep { rows, .. }), _) | (_, Acc::Var(Slots::RowRep { rows, .. })) => {
            (*rows as usize).max(1)
        }
        _ => n.max(1),
    };
    fn lane<'a>(a: &Acc<'a>, lo: &'a [f64], i0: usize, i1: usize, rows: usize) -> Lane<'a> {
        match *a {
            Acc::Scalar(S::C(c)) => Lane::S(c),
            Acc::Scalar(S::V(q)) => Lane::S(lo[q as usize]),
            Acc::Const(xs) => Lane::V(&xs[i0..i1]),
            Acc::Var(&Slots::Range { start, .. }) => {
                Lane::V(&lo[start as usize + i0..start as usize + i1])
            }
            Acc::Var(&Slots::RowRep { start, .. }) => Lane::S(lo[start as usize + i0 / rows]),
            Acc::Var(Slots::List(_)) => unreachable!("lists have no compact form"),
        }
    }
    let mut i0 = 0;
    while i0 < n {
        let i1 = (i0 + rows).min(n);
        let (lx, ly) = (lane(x, lo, i0, i1, rows), lane(y, lo, i0, i1, rows));
        body(i0, &mut out[i0..i1], lx, ly);
        i0 = i1;
    }
}

/// One run of an elementwise binary map: `o[i] = f(x_i, y_i).0`, partials into `pa` / `pc`
/// when given. One loop per operand form, so each is a straight loop over slices.
#[inline(always)]
fn chunk(
    o: &mut [f64],
    lx: Lane,
    ly: Lane,
    f: &impl Fn(f64, f64) -> (f64, f64, f64),
    mut pa: Option<&mut [f64]>,
    mut pc: Option<&mut [f64]>,
) {
    macro_rules! run {
        ($ga:expr, $gc:expr) => {
            for i in 0..o.len() {
                let (v, da, dc) = f($ga(i), $gc(i));
                o[i] = v;
                if let Some(p) = pa.as_deref_mut() {
                    p[i] = da;
                }
                if let Some(p) = pc.as_deref_mut() {
                    p[i] = dc;
                }
            }
        };
    }
    match (lx, ly) {
        (Lane::S(a), Lane::S(c)) => run!(|_| a, |_| c),
        (Lane::S(a), Lane::V(c)) => run!(|_| a, |i: usize| c[i]),
        (Lane::V(a), Lane::S(c)) => run!(|i: usize| a[i], |_| c),
        (Lane::V(a), Lane::V(c)) => run!(|i: usize| a[i], |i: usize| c[i]),
    }
}

/// An operand of [`Tape::matmul`].
#[derive(Clone, Copy)]
pub enum MatArg<'a> {
    /// Contiguous slots (column-major).
    Var(u32),
    /// A data matrix (column-major).
    Data(&'a Arc<Vec<f64>>),
}

/// Element access of one operand of an elementwise node, resolved once per operation.
#[derive(Clone, Copy)]
pub enum Acc<'a> {
    /// A scalar broadcast to every element.
    Scalar(S),
    /// Constant elements.
    Const(&'a [f64]),
    /// Slots.
    Var(&'a Slots),
}

impl Acc<'_> {
    /// Element `i`.
    #[inline(always)]
    pub fn at(&self, i: usize) -> S {
        match self {
            Acc::Scalar(s) => *s,
            Acc::Const(x) => S::C(x[i]),
            Acc::Var(x) => S::V(x.at(i)),
        }
    }

    /// True when the elements are slots.
    pub fn is_var(&self) -> bool {
        matches!(self, Acc::Scalar(S::V(_)) | Acc::Var(_))
    }

    /// The compact form of the operand for a [`Node::Map2`] (`None` for an explicit list).
    fn ew(&self) -> Option<Ew> {
        match self {
            Acc::Scalar(S::C(_)) | Acc::Const(_) => Some(Ew::Const),
            Acc::Scalar(S::V(s)) => Some(Ew::Bcast(*s)),
            Acc::Var(Slots::Range { start, .. }) => Some(Ew::Range(*start)),
            Acc::Var(Slots::RowRep { start, rows, .. }) => Some(Ew::RowRep(*start, *rows)),
            Acc::Var(Slots::List(_)) => None,
        }
    }
}

impl Tape {
    /// `cx · x + cy · y` elementwise over `n` elements (`+` and `-` with scalar broadcast and
    /// [`Slots::RowRep`] operands): one [`Node::Affine2`] with no per-element storage. Operands
    /// with explicit slot lists go through [`Tape::map2`]. Returns the first output slot.
    pub fn affine2(&mut self, n: usize, x: Acc, y: Acc, cx: f64, cy: f64) -> u32 {
        let (Some(ex), Some(ey)) = (x.ew(), y.ew()) else {
            return self.map2(n, x, y, |p, q| (cx * p + cy * q, cx, cy));
        };
        let out = self.alloc(n);
        let (lo, hi) = self.val.split_at_mut(out as usize);
        for_chunks(n, &x, &y, lo, &mut hi[..n], |_, o, lx, ly| {
            chunk(o, lx, ly, &|p, q| (cx * p + cy * q, 0.0, 0.0), None, None);
        });
        if self.recording && n > 0 && (ex != Ew::Const || ey != Ew::Const) {
            self.nodes.push(Node::Affine2 {
                out,
                x: ex,
                y: ey,
                n: n as u32,
                cx,
                cy,
            });
        }
        out
    }

    /// Elementwise binary node over `n` elements: `f(x_i, y_i)` returns (value, ∂/∂x, ∂/∂y).
    /// Returns the first of `n` contiguous output slots.
    #[inline(always)]
    pub fn map2(
        &mut self,
        n: usize,
        x: Acc,
        y: Acc,
        f: impl Fn(f64, f64) -> (f64, f64, f64),
    ) -> u32 {
        let out = self.alloc(n);
        let k = x.is_var() as usize + y.is_var() as usize;
        if let (Some(ex), Some(ey)) = (x.ew(), y.ew()) {
            // Compact node: no index lists, partials in blocks of `n` per variable operand.
            let rec = self.recording && k > 0 && n > 0;
            let p = self.cparts.len();
            if rec {
                self.cparts.resize(p + n * k, 0.0);
            }
            let ((lo, hi), parts) = (self.val.split_at_mut(out as usize), &mut self.cparts[p..]);
            let both = ex != Ew::Const && ey != Ew::Const;
            for_chunks(n, &x, &y, lo, &mut hi[..n], |i0, o, lx, ly| {
                let m = o.len();
                let (pa, pc): (Option<&mut [f64]>, Option<&mut [f64]>) = if !rec {
                    (None, None)
                } else if both {
                    let (a, c) = parts.split_at_mut(n);
                    (Some(&mut a[i0..i0 + m]), Some(&mut c[i0..i0 + m]))
                } else if ex != Ew::Const {
                    (Some(&mut parts[i0..i0 + m]), None)
                } else {
                    (None, Some(&mut parts[i0..i0 + m]))
                };
                chunk(o, lx, ly, &f, pa, pc);
            });
            if rec {
                self.nodes.push(Node::Map2 {
                    out,
                    x: ex,
                    y: ey,
                    n: n as u32,
                    p: p as u32,
                });
            }
            return out;
        }
        let rec = self.recording && k > 0;
        let base = self.ins.len();
        if rec {
            self.ins.resize(base + n * k, 0);
            self.parts.resize(base + n * k, 0.0);
        }
        let val = &mut self.val;
        let ins = &mut self.ins[base..];
        let parts = &mut self.parts[base..];
        for i in 0..n {
            let (sa, sc) = (x.at(i), y.at(i));
            let va = match sa {
                S::C(c) => c,
                S::V(j) => val[j as usize],
            };
            let vc = match sc {
                S::C(c) => c,
                S::V(j) => val[j as usize],
            };
            let (v, da, dc) = f(va, vc);
            val[out as usize + i] = v;
            if rec {
                let mut e = i * k;
                if let S::V(j) = sa {
                    ins[e] = j;
                    parts[e] = da;
                    e += 1;
                }
                if let S::V(j) = sc {
                    ins[e] = j;
                    parts[e] = dc;
                }
            }
        }
        if rec && n > 0 {
            self.nodes.push(Node::Lin {
                out,
                n: n as u32,
                k: k as u32,
                base: base as u32,
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalar_nodes_and_data_product_gradients() {
        // f(x, y) = sum(A · [x, y]ᵀ) + x·y with A = [[1, 2], [3, 4]] (column-major [1, 3, 2, 4]).
        let mut t = Tape::default();
        t.reset(true);
        let x = t.leaf(0.5);
        let y = t.leaf(-2.0);
        let a = Arc::new(vec![1.0, 3.0, 2.0, 4.0]);
        assert_eq!(y, x + 1);
        let out = t.matmul(MatArg::Data(&a), MatArg::Var(x), 2, 2, 1);
        assert_eq!(t.val[out as usize], 1.0 * 0.5 + 2.0 * -2.0);
        assert_eq!(t.val[out as usize + 1], 3.0 * 0.5 + 4.0 * -2.0);
        let xy = t.node(0.5 * -2.0, &[(S::V(x), -2.0), (S::V(y), 0.5)]);
        let S::V(xy) = xy else {
            panic!("a node with variable inputs is a variable")
        };
        let mut g = [0.0; 2];
        t.gradient(&[out, out + 1, xy], &mut g);
        // ∂/∂x = 1 + 3 + y, ∂/∂y = 2 + 4 + x.
        assert_eq!(g, [4.0 - 2.0, 6.0 + 0.5]);
        // Constant inputs give constants and no node.
        assert_eq!(t.node(3.0, &[(S::C(1.0), 2.0)]), S::C(3.0));
    }
}
