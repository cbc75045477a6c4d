//! The reverse sweep of a kernel run ([`backward`]): the adjoint of the recorded imperative
//! program (Griewank & Walther 2008, "Evaluating Derivatives", §3–4). Walking the executed
//! segments backwards, an assignment `d = f(x, y)` takes the adjoint of `d`, clears it, and adds
//! its recorded partials times it to the adjoints of `x` and `y`. Part of [`super`].
//!
//! Kernel cells are indexed without bounds checks: every cell a reverse instruction names is
//! below the kernel's cell count (`Kernel::cells_in_range`, checked when the kernel is built),
//! and the run's memory is at least that large (asserted here). Likewise the partials and
//! addresses the sweep reads are counted from the trace before it starts. Addresses recorded by
//! the forward pass and tape slots stay bounds-checked.

use super::run::{KernelBuffers, NONE, TAPE_BIT};
use super::*;

/// The reverse sweep of kernel record `r`: adds the adjoints of its outputs, propagated
/// backwards through the recorded run, to the adjoints of its inputs (`adj`, by tape slot).
///
/// Panics if the record's trace does not match its kernel (an internal error).
pub fn backward(kb: &mut KernelBuffers, r: u32, adj: &mut [f64]) {
    let rec = &kb.recs[r as usize];
    let k = &*rec.kernel;
    let n_mem = rec.n_mem as usize;
    let ka = &mut kb.adj;
    ka.clear();
    ka.resize(n_mem, 0.0);
    for t in kb.io[rec.outputs.0 as usize..rec.outputs.1 as usize].chunks_exact(3) {
        let (c, s, n) = (t[0] as usize, t[1] as usize, t[2] as usize);
        for j in 0..n {
            ka[c + j] += adj[s + j];
        }
    }
    let trace = &kb.segs[rec.segs.0 as usize..rec.segs.1 as usize];
    // What the sweep reads: each execution of a segment its partials and addresses.
    let (mut np, mut na) = (0u64, 0u64);
    for e in trace.chunks_exact(2) {
        let s = &k.segs[e[0] as usize];
        np += s.n_parts as u64 * e[1] as u64;
        na += s.n_addrs as u64 * e[1] as u64;
    }
    let parts = &kb.parts[..rec.parts_end as usize];
    let addrs = &kb.addrs[..rec.addrs_end as usize];
    assert!(
        np <= parts.len() as u64 && na <= addrs.len() as u64 && k.n_cells as usize <= n_mem,
        "kernel trace out of step with its record"
    );
    let ka = &mut ka[..];
    let mut pi = parts.len();
    let mut ai = addrs.len();
    // Cell `i` of the kernel adjoints.
    macro_rules! c {
        ($i:expr) => {
            // SAFETY: `$i` is a cell of a reverse instruction, below `k.n_cells`
            // (`Kernel::cells_in_range`), and `k.n_cells <= n_mem == ka.len()` (asserted above).
            *unsafe { ka.get_unchecked_mut($i as usize) }
        };
    }
    // Recorded partial `i`.
    macro_rules! p {
        ($i:expr) => {
            // SAFETY: `pi` starts at `parts.len()` and goes down by the partials each reverse
            // instruction reads, `np` in all, with `np <= parts.len()` (asserted above).
            *unsafe { parts.get_unchecked($i) }
        };
    }
    // The next recorded address, walking backwards.
    macro_rules! addr {
        () => {{
            ai -= 1;
            // SAFETY: as for `p!`, with `na <= addrs.len()`.
            *unsafe { addrs.get_unchecked(ai) }
        }};
    }
    for entry in trace.chunks_exact(2).rev() {
        #[cfg(feature = "jit")]
        // A single execution is swept by the interpreter: native code's fixed cost (loading and
        // storing the adjoints of the cells the segment names) outweighs its gain there.
        if rec.native
            && entry[1] >= 2
            && let Some(f) = k.jit.as_ref().and_then(|j| j.rev(entry[0]))
        {
            let s = &k.segs[entry[0] as usize];
            let (np, na) = (
                s.n_parts as usize * entry[1] as usize,
                s.n_addrs as usize * entry[1] as usize,
            );
            let mut frame = super::jit::RevFrame {
                ka: ka.as_mut_ptr(),
                ka_len: ka.len() as u64,
                adj: adj.as_mut_ptr(),
                adj_len: adj.len() as u64,
                // SAFETY: `pi <= parts.len()`, `ai <= addrs.len()`: one past the end at most.
                parts: unsafe { parts.as_ptr().add(pi) },
                // SAFETY: as for `parts`.
                addrs: unsafe { addrs.as_ptr().add(ai) },
                count: entry[1] as u64,
                terms_out: rec.terms_out as u64,
            };
            // SAFETY: `f` is the reverse sweep of this entry's segment of kernel `k`: it names
            // only cells below `k.n_cells <= ka.len()` (asserted above), reads the `np` partials
            // before `pi` and the `na` addresses before `ai` (within the slices: what the whole
            // trace reads is at most their lengths, asserted above, and `pi`, `ai` go down by
            // exactly what each entry reads), and checks every recorded address against
            // `ka_len` and `adj_len` before using it.
            let rc = unsafe { f(&mut frame) };
            assert!(rc == 0, "kernel trace out of step with its record");
            pi -= np;
            ai -= na;
            continue;
        }
        let rev = &k.segs[entry[0] as usize].rev[..];
        for _ in 0..entry[1] {
            for op in rev.iter().rev() {
                match *op {
                    ROp::Add(d, x, y) => {
                        let g = std::mem::take(&mut c!(d));
                        c!(x) += g;
                        c!(y) += g;
                    }
                    ROp::Sub(d, x, y) => {
                        let g = std::mem::take(&mut c!(d));
                        c!(x) += g;
                        c!(y) -= g;
                    }
                    ROp::P2(d, x, y) => {
                        pi -= 2;
                        let g = std::mem::take(&mut c!(d));
                        c!(x) += p!(pi) * g;
                        c!(y) += p!(pi + 1) * g;
                    }
                    ROp::P1(d, x) => {
                        pi -= 1;
                        let g = std::mem::take(&mut c!(d));
                        c!(x) += p!(pi) * g;
                    }
                    ROp::Mov(d, x) => {
                        let g = std::mem::take(&mut c!(d));
                        c!(x) += g;
                    }
                    ROp::Ld(d) => {
                        let a = addr!();
                        let g = std::mem::take(&mut c!(d));
                        if a == NONE {
                        } else if a & TAPE_BIT != 0 {
                            adj[(a & !TAPE_BIT) as usize] += g;
                        } else {
                            ka[a as usize] += g;
                        }
                    }
                    ROp::Pn(d, a, n) => {
                        pi -= n as usize;
                        let g = std::mem::take(&mut c!(d));
                        let la = &k.largs[a as usize..(a + n) as usize];
                        for (j, &(x, _)) in la.iter().enumerate() {
                            c!(x) += p!(pi + j) * g;
                        }
                    }
                    ROp::Target(x) => {
                        let a = addr!();
                        if a != NONE {
                            c!(x) += adj[(rec.terms_out + a) as usize];
                        }
                    }
                    ROp::St(s) => {
                        let a = addr!() as usize;
                        let g = std::mem::take(&mut ka[a]);
                        c!(s) += g;
                    }
                }
            }
        }
    }
    for p in kb.io[rec.inputs.0 as usize..rec.inputs.1 as usize].chunks_exact(2) {
        adj[p[1] as usize] += ka[p[0] as usize];
    }
}
