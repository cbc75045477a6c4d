//! The reverse-mode tape: values, adjoints and linearised nodes, reused between evaluations.
//!
//! Every real quantity that depends on parameters is a slot of [`Tape::val`]; slots are written
//! once (static single assignment), so a vector may alias the same slot several times (e.g.
//! `rep_vector(mu, N)`). A node stores, for each of its outputs, the partial derivatives of that
//! output with respect to its inputs ("precomputed gradients", as Stan Math's
//! `precomputed_gradients_vari`), or for a product with a data matrix only a reference to the
//! matrix, so the reverse sweep is a plain loop over an enum (no `Box<dyn>`).

use std::sync::Arc;

use super::kernel::{self, KernelBuffers};

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
    /// `out = A · B` with `A` a data matrix (`rows × inner`, column-major, `mats[mat]`) and `B`
    /// a matrix of slots `ins[x .. x + inner·cols]` (column-major); output `rows × cols`.
    MatMulData {
        out: u32,
        rows: u32,
        inner: u32,
        cols: u32,
        mat: u32,
        x: u32,
    },
    /// A run of a scalar kernel (`super::kernel`): record `k` of [`Tape::kb`].
    Kernel(u32),
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
    mats: Vec<Arc<Vec<f64>>>,
    /// Traces of scalar-kernel runs (`super::kernel`).
    pub(crate) kb: KernelBuffers,
    /// When false, no nodes or partials are stored (the value-only path); values still are, so
    /// that both paths see the same `is_var` flags and return the same value.
    pub recording: bool,
}

impl Tape {
    /// Empties the tape, keeping its buffers.
    pub fn reset(&mut self, recording: bool) {
        self.val.clear();
        self.adj.clear();
        self.nodes.clear();
        self.ins.clear();
        self.parts.clear();
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

    /// `A · B` with `A` data (`rows × inner`, column-major) and `B` slots (`inner × cols`,
    /// column-major); returns the first of `rows·cols` output slots (column-major).
    pub fn matmul_data(
        &mut self,
        a: &Arc<Vec<f64>>,
        rows: usize,
        inner: usize,
        cols: usize,
        b: &[u32],
    ) -> u32 {
        let out = self.alloc(rows * cols);
        for l in 0..cols {
            for j in 0..inner {
                let bj = self.val[b[j + l * inner] as usize];
                if bj == 0.0 {
                    continue;
                }
                let col = &a[j * rows..(j + 1) * rows];
                let o = out as usize + l * rows;
                for (y, &x) in self.val[o..o + rows].iter_mut().zip(col) {
                    *y += x * bj;
                }
            }
        }
        if self.recording {
            let x = self.ins.len() as u32;
            self.ins.extend_from_slice(b);
            self.parts.resize(self.ins.len(), 0.0);
            let mat = self.mats.len() as u32;
            self.mats.push(a.clone());
            self.nodes.push(Node::MatMulData {
                out,
                rows: rows as u32,
                inner: inner as u32,
                cols: cols as u32,
                mat,
                x,
            });
        }
        out
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
                Node::MatMulData {
                    out,
                    rows,
                    inner,
                    cols,
                    mat,
                    x,
                } => {
                    let (out, rows, inner, cols, x) = (
                        out as usize,
                        rows as usize,
                        inner as usize,
                        cols as usize,
                        x as usize,
                    );
                    let a = &self.mats[mat as usize];
                    for l in 0..cols {
                        let o = out + l * rows;
                        for j in 0..inner {
                            let col = &a[j * rows..(j + 1) * rows];
                            let s = dot(col, &adj[o..o + rows]);
                            adj[self.ins[x + j + l * inner] as usize] += s;
                        }
                    }
                }
            }
        }
        grad.copy_from_slice(&self.adj[..grad.len()]);
    }
}

/// Dot product with four independent accumulators (not latency-bound on one sum).
#[inline]
fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut acc = [0.0f64; 4];
    let ca = a.chunks_exact(4);
    let cb = b.chunks_exact(4);
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (p, q) in ca.zip(cb) {
        acc[0] += p[0] * q[0];
        acc[1] += p[1] * q[1];
        acc[2] += p[2] * q[2];
        acc[3] += p[3] * q[3];
    }
    let mut s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    for (p, q) in ra.iter().zip(rb) {
        s += p * q;
    }
    s
}

/// Element access of one operand of an elementwise node, resolved once per operation.
#[derive(Clone, Copy)]
pub enum Acc<'a> {
    /// A scalar broadcast to every element.
    Scalar(S),
    /// Constant elements.
    Const(&'a [f64]),
    /// Slots.
    Var(&'a [u32]),
}

impl Acc<'_> {
    /// Element `i`.
    #[inline(always)]
    pub fn at(&self, i: usize) -> S {
        match self {
            Acc::Scalar(s) => *s,
            Acc::Const(x) => S::C(x[i]),
            Acc::Var(x) => S::V(x[i]),
        }
    }

    /// True when the elements are slots.
    pub fn is_var(&self) -> bool {
        matches!(self, Acc::Scalar(S::V(_)) | Acc::Var(_))
    }
}

impl Tape {
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
        let out = t.matmul_data(&a, 2, 2, 1, &[x, y]);
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
