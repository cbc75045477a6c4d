//! The dense tanh layer `tanh(X · W + 1 bᵀ)` as ONE tape node (issue 10: "dense layers as
//! BLAS-speed graph nodes"), for the forms users write: `tanh(X * W + rep_matrix(b', N))` and
//! `tanh(add_row_vector(X * W, b))` (stdlib's `dense_tanh`). The expression is recognised in
//! `eval::dense`.
//!
//! Unfused, the same expression records three N × H nodes (the product, the broadcast sum and
//! the tanh map): three value buffers, three adjoint buffers and one buffer of tanh partials,
//! each zero-filled at every evaluation. The fused node keeps only its output Z (N × H values
//! and adjoints); the pre-activation lives in a scratch buffer that is overwritten, never
//! zeroed, and the reverse pass rebuilds tanh's partial as 1 − Z².
//!
//! Values and gradients are bit-identical to the unfused nodes: the forward pass performs the
//! same faer product, the same additions p + b_j and the same `tanh_slices` loop; the reverse
//! pass forms (1 − z²)·dZ as the tanh map does, sums the bias adjoint with the broadcast's
//! `ew_backward`, and runs the same two faer products with `Accum::Add` (tested in
//! `graph::tests` against the unfused expression).

use faer::{Accum, MatMut, MatRef, Par};

use super::{MatArg, Node, Opnd, Tape, operand, sum4};
use crate::distributions::lanes::tanh_slices;

impl Tape {
    /// Records `Z = tanh(X · W + 1 bᵀ)`: `x` is N × D, `w` is D × H (column-major; data or
    /// contiguous slots, at least one of `x`, `w`, `b` slots) and `b` has H entries (slots or
    /// data; `None` for no bias). Returns the first of the N·H output slots (Z column-major).
    pub(crate) fn dense_tanh(
        &mut self,
        x: MatArg,
        w: MatArg,
        b: Option<MatArg>,
        n: usize,
        d: usize,
        h: usize,
    ) -> u32 {
        let nh = n * h;
        let out = self.alloc(nh);
        let ox = self.opnd(x);
        let ow = self.opnd(w);
        let ob = b.map(|b| self.opnd(b));
        if self.scratch.len() < nh {
            self.scratch.resize(nh, 0.0);
        }
        {
            let (lo, hi) = self.val.split_at_mut(out as usize);
            let pre = &mut self.scratch[..nh];
            faer::linalg::matmul::matmul(
                MatMut::from_column_major_slice_mut(pre, n, h),
                Accum::Replace,
                operand(lo, &self.mats, ox, n, d),
                operand(lo, &self.mats, ow, d, h),
                1.0,
                Par::Seq,
            );
            if let Some(ob) = ob {
                let bias = operand(lo, &self.mats, ob, h, 1);
                for (j, col) in pre.chunks_exact_mut(n.max(1)).enumerate().take(h) {
                    let bj = bias[(j, 0)];
                    for v in col {
                        *v += bj;
                    }
                }
            }
            tanh_slices(pre, &mut hi[..nh], None);
        }
        if self.recording && nh > 0 {
            self.nodes.push(Node::DenseTanh {
                out,
                x: ox,
                w: ow,
                b: ob,
                n: n as u32,
                d: d as u32,
                h: h as u32,
            });
        } else if !self.recording {
            self.mats.clear();
        }
        out
    }

    /// The operand form of `a` (a data matrix is kept alive in `mats` for the reverse pass).
    fn opnd(&mut self, a: MatArg) -> Opnd {
        match a {
            MatArg::Var(s) => Opnd::Var(s),
            MatArg::Data(m) => {
                self.mats.push(m.clone());
                Opnd::Data(self.mats.len() as u32 - 1)
            }
        }
    }
}

/// The reverse pass of a [`Node::DenseTanh`]: with dZ the adjoints of the outputs, forms
/// dA = (1 − Z²) ⊙ dZ in `scratch`, then adds `dA · Wᵀ` into X's adjoints, `Xᵀ · dA` into W's
/// and the column sums of dA into b's (for the operands that are slots).
#[allow(clippy::too_many_arguments)]
pub(super) fn backward(
    adj: &mut [f64],
    val: &[f64],
    mats: &[std::sync::Arc<Vec<f64>>],
    scratch: &mut Vec<f64>,
    (out, x, w, b): (u32, Opnd, Opnd, Option<Opnd>),
    n: usize,
    d: usize,
    h: usize,
) {
    let (out, nh) = (out as usize, n * h);
    if scratch.len() < nh {
        scratch.resize(nh, 0.0);
    }
    let (lo, hi) = adj.split_at_mut(out);
    let da = &mut scratch[..nh];
    for ((g, &a), &z) in da.iter_mut().zip(&hi[..nh]).zip(&val[out..out + nh]) {
        let dz = 1.0 - z * z;
        *g = 0.0 + dz * a;
    }
    if let Some(Opnd::Var(sb)) = b {
        let sb = sb as usize;
        column_sums_add(da, n, &mut lo[sb..sb + h]);
    }
    let dam = MatRef::from_column_major_slice(da, n, h);
    if let Opnd::Var(sx) = x {
        let sx = sx as usize;
        faer::linalg::matmul::matmul(
            MatMut::from_column_major_slice_mut(&mut lo[sx..sx + n * d], n, d),
            Accum::Add,
            dam,
            operand(val, mats, w, d, h).transpose(),
            1.0,
            Par::Seq,
        );
    }
    if let Opnd::Var(sw) = w {
        let sw = sw as usize;
        faer::linalg::matmul::matmul(
            MatMut::from_column_major_slice_mut(&mut lo[sw..sw + d * h], d, h),
            Accum::Add,
            operand(val, mats, x, n, d).transpose(),
            dam,
            1.0,
            Par::Seq,
        );
    }
}

/// Adds the sum of each `n`-row column of the column-major `a` to `out[j]` (the bias adjoint of
/// a dense layer), each column summed exactly as [`sum4`] sums it (so the result is that of the
/// broadcast's reverse pass, `ew_backward` over a row-repeated operand, bit for bit).
///
/// The columns are taken four at a time: each column's sum is one chain of dependent additions
/// (four lanes over chunks of four rows), and four columns side by side keep four such chains in
/// flight, where one column at a time waits on the latency of its own chain.
fn column_sums_add(a: &[f64], n: usize, out: &mut [f64]) {
    let h = out.len();
    if n == 0 {
        return;
    }
    let chunks = n / 4;
    let mut j = 0;
    while j + 4 <= h {
        let cols: [&[f64]; 4] = std::array::from_fn(|c| &a[(j + c) * n..(j + c + 1) * n]);
        let mut acc = [[0.0f64; 4]; 4];
        for q in 0..chunks {
            for c in 0..4 {
                let x = &cols[c][4 * q..4 * q + 4];
                for l in 0..4 {
                    acc[c][l] += x[l];
                }
            }
        }
        for c in 0..4 {
            let t: f64 = cols[c][4 * chunks..].iter().sum();
            let s = (acc[c][0] + acc[c][1]) + (acc[c][2] + acc[c][3]) + t;
            out[j + c] += s;
        }
        j += 4;
    }
    for (jj, o) in out.iter_mut().enumerate().skip(j) {
        *o += sum4(&a[jj * n..(jj + 1) * n], None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The four-column sums equal the one-column [`sum4`] bit for bit, at every row count
    /// modulo 4 and with a column count that leaves a remainder.
    #[test]
    fn column_sums_match_the_broadcast_reverse_pass() {
        for n in [1usize, 3, 4, 5, 7, 8, 331] {
            let h = 7;
            let a: Vec<f64> = (0..n * h)
                .map(|i| ((i as f64) * 0.737).sin() * 1e3f64.powf(((i % 5) as f64) - 2.0))
                .collect();
            let mut out = vec![0.25; h];
            column_sums_add(&a, n, &mut out);
            for j in 0..h {
                let want = 0.25 + sum4(&a[j * n..(j + 1) * n], None);
                assert_eq!(out[j].to_bits(), want.to_bits(), "n = {n}, column {j}");
            }
        }
    }
}
