//! Running a [`Kernel`]: the forward pass, recording partials and addresses for the reverse
//! sweep (`super::reverse`). Part of [`super`].

use std::sync::Arc;

use crate::distributions::{self, Arg};
use crate::syntax::ast::int_in_range;

/// Iterations of a kernel's loop between looks at the Ctrl-C flag.
const LOOP_CHECK_EVERY: i64 = 1 << 16;

/// Fewest remaining iterations of a loop handed to native code (fewer are interpreted: the
/// call's fixed cost, building the container views and loading and storing the cells the body
/// names, outweighs what native code saves on a handful of iterations).
#[cfg(feature = "jit")]
const NATIVE_MIN_ITERS: i64 = 8;

#[cfg(feature = "jit")]
mod native;
#[cfg(feature = "jit")]
use native::native_loop;

use super::super::scalar::{B, U};
use super::super::tape::Tape;
use super::super::value::{Base, Data, Slots, Value, pooled_reals, recycle_reals, single_offset};

use super::*;

/// Most arguments of a log density in a kernel (variate and parameters).
pub(super) const MAX_LPDF_ARGS: usize = 8;

/// Tag of a recorded address that is a tape slot (else a kernel cell).
pub(super) const TAPE_BIT: u32 = 1 << 31;
/// A recorded address of a constant (no adjoint).
pub(super) const NONE: u32 = u32::MAX;

/// The buffers kernels record into, kept in the [`Tape`] and reused between evaluations.
#[derive(Default, Debug)]
pub struct KernelBuffers {
    /// Executed segments of all kernel runs of this evaluation, run-length encoded: pairs
    /// (segment id, consecutive executions).
    pub(super) segs: Vec<u32>,
    pub(super) parts: Vec<f64>,
    pub(super) addrs: Vec<u32>,
    /// Inputs `(cell, slot)` and outputs `(cell, first slot, count)`, flattened.
    pub(super) io: Vec<u32>,
    /// Scratch memory of the running kernel (real cells, flags, registers, container flags).
    m: Vec<f64>,
    act: Vec<u8>,
    iv: Vec<i64>,
    cact: Vec<u8>,
    dflag: Vec<u8>,
    terms: Vec<(f64, bool)>,
    /// Adjoints of kernel cells during the reverse sweep.
    pub(super) adj: Vec<f64>,
    /// One entry per kernel node on the tape.
    pub(super) recs: Vec<KernelRecord>,
}

impl KernelBuffers {
    /// Empties the records, keeping the buffers.
    pub fn clear(&mut self) {
        self.segs.clear();
        self.parts.clear();
        self.addrs.clear();
        self.io.clear();
        self.recs.clear();
    }
}

/// One kernel run on the tape: where its trace lies in [`KernelBuffers`].
#[derive(Debug)]
pub(super) struct KernelRecord {
    pub(super) kernel: Arc<Kernel>,
    pub(super) segs: (u32, u32),
    pub(super) parts_end: u32,
    pub(super) addrs_end: u32,
    pub(super) inputs: (u32, u32),
    pub(super) outputs: (u32, u32),
    pub(super) n_mem: u32,
    /// First tape slot of the run's parameter-dependent log density terms.
    pub(super) terms_out: u32,
    /// Sweep backwards with native code where compiled (`Model::set_native_loops`).
    #[cfg_attr(not(feature = "jit"), allow(dead_code))]
    pub(super) native: bool,
}

/// Runtime view of a container.
#[derive(Clone, Copy)]
pub(super) enum View<'a> {
    Const(&'a [f64]),
    Var(&'a Slots),
    /// A written container held in kernel memory from this cell.
    Mem(usize),
}

#[derive(Clone, Copy)]
pub(super) struct CRt<'a> {
    view: View<'a>,
    arr: &'a [usize],
    base: Base,
    len: usize,
}

/// Control flow inside a kernel.
#[derive(PartialEq, Eq)]
pub(super) enum KFlow {
    Normal,
    Break,
    Continue,
}

/// The kernel failed (index out of range, overflow, `reject`): rerun with the interpreter.
pub(super) struct Stop;

pub(super) struct Rt<'r, 'v> {
    k: &'r Kernel,
    m: &'r mut [f64],
    act: &'r mut [u8],
    iv: &'r mut [i64],
    cact: &'r mut [u8],
    /// Per dependency list: the OR of its static items' flags.
    dflag: &'r [u8],
    /// Inside a user density called by its `_lpdf` name: `~` keeps constants.
    normalised: bool,
    /// The run's log density terms in order: (value, depends on parameters).
    terms: &'r mut Vec<(f64, bool)>,
    /// Number of terms that depend on parameters so far.
    n_var_terms: u32,
    crt: &'r [CRt<'v>],
    val: &'r [f64],
    segs: &'r mut Vec<u32>,
    parts: &'r mut Vec<f64>,
    addrs: &'r mut Vec<u32>,
    /// Hand stable loops to native code where compiled.
    #[cfg_attr(not(feature = "jit"), allow(dead_code))]
    native: bool,
}

#[inline(always)]
pub(super) fn idx1(i: i64, len: usize) -> Result<usize, Stop> {
    if i < 1 || i as usize > len {
        Err(Stop)
    } else {
        Ok(i as usize - 1)
    }
}

impl Rt<'_, '_> {
    /// Runs `nodes`, recording (`REC`, the tape is recording) or not.
    fn nodes<const REC: bool>(&mut self, nodes: &[KNode]) -> Result<KFlow, Stop> {
        for n in nodes {
            match n {
                KNode::Seg(s) => self.seg::<REC>(*s, None)?,
                KNode::For { var, lo, hi, body } => {
                    let (lo, hi) = (self.iv[*lo as usize], self.iv[*hi as usize]);
                    // The common case, a straight-line body: no recursion per iteration.
                    if let [KNode::Seg(s)] = body[..] {
                        if lo <= hi {
                            self.seg::<REC>(s, Some((*var, lo, hi)))?;
                        }
                        continue;
                    }
                    let mut i = lo;
                    while i <= hi {
                        self.iv[*var as usize] = i;
                        if self.nodes::<REC>(body)? == KFlow::Break {
                            break;
                        }
                        if i == hi {
                            break;
                        }
                        i += 1;
                    }
                }
                KNode::If {
                    cond,
                    then,
                    otherwise,
                } => {
                    let c = match *cond {
                        Opd::I(r) => self.iv[r as usize] != 0,
                        Opd::R(c) => self.m[c as usize] != 0.0,
                    };
                    let f = self.nodes::<REC>(if c { then } else { otherwise })?;
                    if f != KFlow::Normal {
                        return Ok(f);
                    }
                }
                KNode::Break => return Ok(KFlow::Break),
                KNode::Continue => return Ok(KFlow::Continue),
            }
        }
        Ok(KFlow::Normal)
    }

    #[inline(always)]
    /// Runs segment `id` once, or (`lp = Some((var, lo, hi))`, `lo <= hi`) as the whole body
    /// of a loop setting register `var` to `lo ..= hi`.
    fn seg<const REC: bool>(&mut self, id: u32, lp: Option<(u32, i64, i64)>) -> Result<(), Stop> {
        let k = self.k;
        let s = &k.segs[id as usize];
        let rec = REC;
        let mark = rec && !s.rev.is_empty();
        let seg_trace = &mut *self.segs;
        // Locals, so that the slices' pointers and lengths stay in registers.
        let m = &mut *self.m;
        let act = &mut *self.act;
        let iv = &mut *self.iv;
        let cact = &mut *self.cact;
        let crt = self.crt;
        let val = self.val;
        let parts = &mut *self.parts;
        let addrs = &mut *self.addrs;
        let ixs = &k.ixs[..];
        // The flat offset of a multi-index (as `single_offset`).
        let offset = |iv: &[i64], c: u32, ix: u32, n: u32| -> Result<usize, Stop> {
            let mut buf = [0i64; 4];
            for (b, &r) in buf.iter_mut().zip(&ixs[ix as usize..(ix + n) as usize]) {
                *b = iv[r as usize];
            }
            let cr = &crt[c as usize];
            match single_offset(cr.arr, cr.base, &buf[..n as usize]) {
                Some(Ok(o)) => Ok(o),
                _ => Err(Stop),
            }
        };
        // A constant read (data, or an integer container).
        macro_rules! read {
            ($m:expr, $c:expr, $o:expr) => {{
                let o = $o;
                match crt[$c as usize].view {
                    View::Const(xs) => xs[o],
                    View::Var(sl) => val[sl.at(o) as usize],
                    View::Mem(b) => $m[b + o],
                }
            }};
        }
        macro_rules! load {
            ($d:expr, $c:expr, $o:expr) => {{
                let (d, c, o) = ($d as usize, $c as usize, $o);
                match crt[c].view {
                    View::Const(xs) => {
                        m[d] = xs[o];
                        if rec {
                            addrs.push(NONE);
                        }
                    }
                    View::Var(sl) => {
                        let q = sl.at(o);
                        m[d] = val[q as usize];
                        if rec {
                            addrs.push(q | TAPE_BIT);
                        }
                    }
                    View::Mem(b) => {
                        m[d] = m[b + o];
                        if rec {
                            addrs.push((b + o) as u32);
                        }
                    }
                }
            }};
        }
        // Whether the current iteration changed a flag, and whether flags are stable (below).
        let mut changed = false;
        let mut stable = false;
        // The OR of the flags of dependency list `dl`.
        let dflag = self.dflag;
        let flag = |act: &[u8], cact: &[u8], dl: u32| -> u8 {
            let mut a = dflag[dl as usize];
            if a != 0 {
                return a;
            }
            let (st, ns, nd) = k.dep_lists[dl as usize];
            for &q in &k.dep_items[(st + ns) as usize..(st + ns + nd) as usize] {
                a |= if q & TAPE_BIT != 0 {
                    cact[(q & !TAPE_BIT) as usize]
                } else {
                    act[q as usize]
                };
            }
            a
        };
        macro_rules! store {
            ($c:expr, $s:expr, $o:expr, $dl:expr) => {{
                let (c, s, o) = ($c as usize, $s as usize, $o);
                let View::Mem(b) = crt[c].view else {
                    unreachable!("stores go to written containers, held in kernel memory")
                };
                m[b + o] = m[s];
                if !stable {
                    let f = cact[c] | flag(act, cact, $dl);
                    changed |= f != cact[c];
                    cact[c] = f;
                }
                if rec {
                    addrs.push((b + o) as u32);
                }
            }};
        }
        let (var, lo, hi) = match lp {
            Some((v, lo, hi)) => (Some(v as usize), lo, hi),
            None => (None, 0, 0),
        };
        if mark {
            // One trace entry for all iterations (their count is set once they have run).
            seg_trace.push(id);
            seg_trace.push(1);
            // A loop of many iterations: its whole trace reserved at once.
            if hi.saturating_sub(lo) >= 8 {
                let iters =
                    usize::try_from(hi.saturating_sub(lo)).map_or(1, |d| d.saturating_add(1));
                let iters = iters.min(1 << 20);
                parts.reserve(s.n_parts as usize * iters);
                addrs.reserve(s.n_addrs as usize * iters);
            }
        }
        let trace_at = seg_trace.len().wrapping_sub(1);
        // The "depends on parameters" flags are stable once a whole iteration has changed none
        // of them: every later iteration then starts from the same flags and computes the same
        // ones, so the flag updates of stores and moves are skipped from there on (log
        // densities and `target +=` still read the flags).
        let mut it = lo;
        loop {
            if let Some(v) = var {
                iv[v] = it;
            }
            for op in &s.ops {
                match *op {
                    Op::Add(d, x, y) => {
                        let (d, x, y) = (d as usize, x as usize, y as usize);
                        m[d] = m[x] + m[y];
                    }
                    Op::Sub(d, x, y) => {
                        let (d, x, y) = (d as usize, x as usize, y as usize);
                        m[d] = m[x] - m[y];
                    }
                    Op::Mul(d, x, y) => {
                        let (d, x, y) = (d as usize, x as usize, y as usize);
                        let (a, b) = (m[x], m[y]);
                        m[d] = a * b;
                        if rec {
                            parts.push(b);
                            parts.push(a);
                        }
                    }
                    Op::Div(d, x, y) => {
                        let (d, x, y) = (d as usize, x as usize, y as usize);
                        let (v, da, db) = B::Div.eval(m[x], m[y]);
                        m[d] = v;
                        if rec {
                            parts.extend_from_slice(&[da, db]);
                        }
                    }
                    Op::Bin(f, d, x, y) => {
                        let (d, x, y) = (d as usize, x as usize, y as usize);
                        let (v, da, db) = f.eval(m[x], m[y]);
                        m[d] = v;
                        if rec {
                            parts.extend_from_slice(&[da, db]);
                        }
                    }
                    Op::Un(u, d, x) => {
                        let (d, x) = (d as usize, x as usize);
                        let (v, dx) = match u {
                            U::Square => {
                                let a = m[x];
                                (a * a, 2.0 * a)
                            }
                            u => u.eval(m[x]),
                        };
                        m[d] = v;
                        if rec {
                            parts.push(dx);
                        }
                    }
                    Op::Mov { d, x, dl } => {
                        m[d as usize] = m[x as usize];
                        if !stable {
                            let f = flag(act, cact, dl);
                            changed |= f != act[d as usize];
                            act[d as usize] = f;
                        }
                    }
                    Op::IToR(d, r) => {
                        m[d as usize] = iv[r as usize] as f64;
                    }
                    Op::Ld1 { d, c, i } => {
                        let o = idx1(iv[i as usize], crt[c as usize].len)?;
                        load!(d, c, o);
                    }
                    Op::Ld { d, c, ix, n } => {
                        let o = offset(iv, c, ix, n)?;
                        load!(d, c, o);
                    }
                    Op::LdG1 { d, c, i } => {
                        let o = idx1(iv[i as usize], crt[c as usize].len)?;
                        m[d as usize] = read!(m, c, o);
                    }
                    Op::LdG { d, c, ix, n } => {
                        let o = offset(iv, c, ix, n)?;
                        m[d as usize] = read!(m, c, o);
                    }
                    Op::LdI1 { d, c, i } => {
                        let o = idx1(iv[i as usize], crt[c as usize].len)?;
                        iv[d as usize] = read!(m, c, o) as i64;
                    }
                    Op::LdI { d, c, ix, n } => {
                        let o = offset(iv, c, ix, n)?;
                        iv[d as usize] = read!(m, c, o) as i64;
                    }
                    Op::St1 { c, s, i, dl } => {
                        let o = idx1(iv[i as usize], crt[c as usize].len)?;
                        store!(c, s, o, dl);
                    }
                    Op::St { c, s, ix, n, dl } => {
                        let o = offset(iv, c, ix, n)?;
                        store!(c, s, o, dl);
                    }
                    Op::IBin(f, d, x, y) => {
                        let (a, b) = (iv[x as usize], iv[y as usize]);
                        let r = match f {
                            IOp::Add => a.checked_add(b),
                            IOp::Sub => a.checked_sub(b),
                            IOp::Mul => a.checked_mul(b),
                            IOp::Div => a.checked_div(b),
                            IOp::Mod => a.checked_rem(b),
                            IOp::Min => Some(a.min(b)),
                            IOp::Max => Some(a.max(b)),
                        };
                        // outside the 32-bit `int`: the interpreter re-runs and reports it
                        iv[d as usize] = int_in_range(r).ok_or(Stop)?;
                    }
                    Op::INeg(d, x) => {
                        iv[d as usize] = int_in_range(iv[x as usize].checked_neg()).ok_or(Stop)?;
                    }
                    Op::IAbs(d, x) => {
                        iv[d as usize] = int_in_range(iv[x as usize].checked_abs()).ok_or(Stop)?;
                    }
                    Op::IMov(d, x) => iv[d as usize] = iv[x as usize],
                    Op::INot(d, x) => iv[d as usize] = (iv[x as usize] == 0) as i64,
                    Op::ICmp(c, d, x, y) => {
                        iv[d as usize] = c.int(iv[x as usize], iv[y as usize]);
                    }
                    Op::RCmp(c, d, x, y) => {
                        iv[d as usize] = c.real(m[x as usize], m[y as usize]);
                    }
                    Op::RNot(d, x) => iv[d as usize] = (m[x as usize] == 0.0) as i64,
                    Op::RTest(t, d, x) => {
                        let v = m[x as usize];
                        iv[d as usize] = match t {
                            Test::IntStep => v > 0.0,
                            Test::IsInf => v.is_infinite(),
                            Test::IsNan => v.is_nan(),
                        } as i64;
                    }
                    Op::IPow(d, x, y) => {
                        let (a, b) = (iv[x as usize] as f64, iv[y as usize] as f64);
                        m[d as usize] = a.powf(b);
                    }
                    Op::IDivR(d, x, y) => {
                        let (a, b) = (iv[x as usize] as f64, iv[y as usize] as f64);
                        m[d as usize] = a / b;
                    }
                    Op::Lpdf {
                        d,
                        fam,
                        a,
                        n,
                        propto,
                    } => {
                        let la = &k.largs[a as usize..(a + n) as usize];
                        let mut args = [Arg::Scalar(0.0); MAX_LPDF_ARGS];
                        let mut flags = [false; MAX_LPDF_ARGS];
                        for (j, &(c, dl)) in la.iter().enumerate() {
                            args[j] = Arg::Scalar(m[c as usize]);
                            flags[j] = flag(act, cact, dl) != 0;
                        }
                        let propto = propto && !self.normalised;
                        // As `Ctx::density`: without recording a normalised density needs no flags.
                        if !rec && !propto {
                            flags = [false; MAX_LPDF_ARGS];
                        }
                        let n = n as usize;
                        let term = distributions::log_density(fam, &args[..n], &flags[..n], propto)
                            .map_err(|_| Stop)?;
                        if term.value.is_nan() {
                            return Err(Stop);
                        }
                        m[d as usize] = term.value;
                        if rec {
                            for j in 0..n {
                                let p = term.partials.get(j).and_then(|p| p.first());
                                parts.push(p.copied().unwrap_or(0.0));
                            }
                        }
                    }
                    Op::Target { x, dl } => {
                        let v = m[x as usize];
                        if flag(act, cact, dl) != 0 {
                            if rec {
                                addrs.push(self.n_var_terms);
                            }
                            self.terms.push((v, true));
                            self.n_var_terms += 1;
                        } else {
                            if rec {
                                addrs.push(NONE);
                            }
                            self.terms.push((v, false));
                        }
                    }
                    Op::Bail => return Err(Stop),
                }
            }
            if it >= hi {
                break;
            }
            stable |= var.is_some() && !changed;
            changed = false;
            it += 1;
            // A Ctrl-C during a very long loop: give up, so that the interpreter re-runs the
            // loop and reports the interruption at the statement (`eval::stmt`).
            if (it - lo) % LOOP_CHECK_EVERY == 0 && crate::inference::interrupt::requested() {
                return Err(Stop);
            }
            // Stable flags: the remaining iterations `it ..= hi` as native code, if compiled and
            // enough of them to repay the call (loading and storing the cells it names).
            #[cfg(feature = "jit")]
            if stable
                && self.native
                && hi - it >= NATIVE_MIN_ITERS - 1
                && let Some(f) = k.jit.as_ref().and_then(|j| j.fwd(id, rec))
            {
                // SAFETY: `m`, `iv` and `crt` are this run's memory, registers and views of
                // kernel `k`, whose segment `id` `f` was compiled from.
                if unsafe { native_loop(f, s, crt, m, iv, val, parts, addrs, it, hi, rec)? } {
                    it = hi;
                    break;
                }
                // Not runnable natively (a view native code cannot address): interpreted.
                self.native = false;
            }
        }
        if mark && it != lo {
            // At most 2³² − 1 iterations per entry: longer runs fail the u32 conversion
            // and the interpreter runs the loop.
            seg_trace[trace_at] = u32::try_from(it - lo + 1).map_err(|_| Stop)?;
        }
        Ok(())
    }
}

/// Does a value have the type the kernel was compiled for?
pub(super) fn matches_bind(k: &Kernel, v: &Value, bind: Bind) -> bool {
    match (bind, v) {
        (Bind::I(_), Value::Int(_)) => true,
        (Bind::R(_), Value::Real(_) | Value::Var(_)) => true,
        (Bind::C(c), Value::T(t)) => {
            let d = &k.conts[c as usize];
            d.int == matches!(t.data, Data::Int(_))
                && d.arr_rank == t.arr.len()
                && d.base == base_kind(t.base)
        }
        _ => false,
    }
}

/// Runs kernel `k` against the environment: on success writes the assigned variables of `env`,
/// records one node on `tape` (when recording) and returns `true`; returns `false` with `env`
/// and `tape` untouched when the variables do not have the compiled types or the loop stops
/// early (then the interpreter must run the loop).
///
/// The loop's log density terms are added as the interpreter's `Ctx::add_target` does: constants
/// to `target_c` in order, terms that depend on parameters as new slots appended to `target_v`.
/// `normalised` is the interpreter's flag for the inside of a user density called by its
/// `_lpdf` name (then `~` keeps constants). `native`: run loops and the reverse sweep as native
/// code where it was compiled (feature `jit`), else always interpreted.
pub fn run(
    k: &Arc<Kernel>,
    env: &mut [Value],
    globals: &[Value],
    tape: &mut Tape,
    target: (&mut f64, &mut Vec<u32>),
    normalised: bool,
    native: bool,
) -> bool {
    let value_of = |src: Src| -> Option<&Value> {
        match src {
            Src::Local(s) => env.get(s as usize),
            Src::Global(g) => globals.get(g as usize),
        }
    };
    // Check types, lay out memory, build container views.
    let mut n_mem = k.n_cells as usize;
    // Container views on the stack for the usual few containers (no allocation per run).
    const NO_VIEW: CRt<'static> = CRt {
        view: View::Const(&[]),
        arr: &[],
        base: Base::Scalar,
        len: 0,
    };
    let mut crt_stack: [CRt; 16] = [NO_VIEW; 16];
    let mut crt_heap: Vec<CRt> = Vec::new();
    let crt: &mut [CRt] = if k.conts.len() <= crt_stack.len() {
        &mut crt_stack[..k.conts.len()]
    } else {
        crt_heap.resize(k.conts.len(), NO_VIEW);
        &mut crt_heap
    };
    for v in &k.vars {
        let Some(val) = value_of(v.src) else {
            return false;
        };
        if !matches_bind(k, val, v.bind) {
            return false;
        }
    }
    for (ci, d) in k.conts.iter().enumerate() {
        let Some(Value::T(t)) = value_of(d.src) else {
            return false;
        };
        let len = t.data.len();
        let view = if d.written {
            let b = n_mem;
            n_mem += len;
            View::Mem(b)
        } else {
            match &t.data {
                Data::Int(xs) | Data::Real(xs) => View::Const(xs),
                Data::Var(ix) => View::Var(ix),
            }
        };
        crt[ci] = CRt {
            view,
            arr: &t.arr,
            base: t.base,
            len,
        };
    }
    if n_mem >= TAPE_BIT as usize {
        return false;
    }
    let recording = tape.recording;
    let (val, kb) = tape.kernel_parts();
    let mut m = std::mem::take(&mut kb.m);
    let mut act = std::mem::take(&mut kb.act);
    let mut iv = std::mem::take(&mut kb.iv);
    let mut cact = std::mem::take(&mut kb.cact);
    m.clear();
    m.resize(n_mem, 0.0);
    act.clear();
    act.resize(k.n_cells as usize, 0);
    iv.clear();
    iv.resize(k.n_regs as usize, 0);
    cact.clear();
    cact.resize(k.conts.len(), 0);
    for &(c, x) in &k.consts {
        m[c as usize] = x;
    }
    for &(r, i) in &k.iconsts {
        iv[r as usize] = i;
    }
    for v in &k.vars {
        let value = value_of(v.src).expect("checked above");
        match (v.bind, value) {
            (Bind::I(r), Value::Int(i)) => iv[r as usize] = *i,
            (Bind::R(c), Value::Real(x)) => m[c as usize] = *x,
            (Bind::R(c), Value::Var(s)) => {
                m[c as usize] = val[*s as usize];
                act[c as usize] = 1;
            }
            _ => {}
        }
    }
    for (c, (d, r)) in k.conts.iter().zip(crt.iter()).enumerate() {
        if let View::Var(_) = r.view {
            cact[c] = 1;
        }
        if let (View::Mem(b), Some(Value::T(t))) = (r.view, value_of(d.src)) {
            match &t.data {
                Data::Int(xs) | Data::Real(xs) => m[b..b + r.len].copy_from_slice(xs),
                Data::Var(ix) => {
                    for (y, s) in m[b..b + r.len].iter_mut().zip(ix.iter()) {
                        *y = val[s as usize];
                    }
                    cact[c] = 1;
                }
            }
        }
    }
    let mut terms = std::mem::take(&mut kb.terms);
    terms.clear();
    let mut dflag = std::mem::take(&mut kb.dflag);
    dflag.clear();
    for &(st, ns, _) in &k.dep_lists {
        let mut a = 0;
        for &q in &k.dep_items[st as usize..(st + ns) as usize] {
            a |= if q & TAPE_BIT != 0 {
                cact[(q & !TAPE_BIT) as usize]
            } else {
                act[q as usize]
            };
        }
        dflag.push(a);
    }
    let (s0, p0, a0) = (kb.segs.len(), kb.parts.len(), kb.addrs.len());
    let result = {
        let mut rt = Rt {
            k,
            m: &mut m,
            act: &mut act,
            iv: &mut iv,
            cact: &mut cact,
            dflag: &dflag,
            normalised,
            terms: &mut terms,
            n_var_terms: 0,
            crt,
            val,
            segs: &mut kb.segs,
            parts: &mut kb.parts,
            addrs: &mut kb.addrs,
            native,
        };
        if recording {
            rt.nodes::<true>(&k.root)
        } else {
            rt.nodes::<false>(&k.root)
        }
    };
    let ok = result.is_ok();
    if !ok {
        kb.segs.truncate(s0);
        kb.parts.truncate(p0);
        kb.addrs.truncate(a0);
    }
    drop(crt_heap);
    if ok {
        write_back(
            k,
            env,
            tape,
            &m,
            &act,
            &iv,
            &cact,
            (s0, p0, a0),
            n_mem,
            &terms,
            target,
            native,
        );
    }
    let kb = tape.kernel_parts().1;
    kb.m = m;
    kb.act = act;
    kb.iv = iv;
    kb.cact = cact;
    kb.dflag = dflag;
    kb.terms = terms;
    ok
}

/// Writes the assigned variables back to `env` (new tape slots for those that depend on
/// parameters) and records the kernel node.
#[allow(clippy::too_many_arguments)]
pub(super) fn write_back(
    k: &Arc<Kernel>,
    env: &mut [Value],
    tape: &mut Tape,
    m: &[f64],
    act: &[u8],
    iv: &[i64],
    cact: &[u8],
    (s0, p0, a0): (usize, usize, usize),
    n_mem: usize,
    terms: &[(f64, bool)],
    (target_c, target_v): (&mut f64, &mut Vec<u32>),
    native: bool,
) {
    let recording = tape.recording;
    // Inputs then outputs go straight into the kernel buffers' `io` (dropped again below when
    // nothing is recorded).
    let i0 = tape.kb.io.len();
    // Inputs: parameter-dependent scalars and written containers as they were on entry.
    if recording {
        let io_in = &mut tape.kb.io;
        let mut mem_base = k.n_cells as usize;
        for v in &k.vars {
            let Src::Local(slot) = v.src else { continue };
            match (v.bind, &env[slot as usize]) {
                (Bind::R(c), Value::Var(s)) => {
                    io_in.push(c);
                    io_in.push(*s);
                }
                (Bind::C(c), Value::T(t)) if k.conts[c as usize].written => {
                    if let Data::Var(ix) = &t.data {
                        for (j, s) in ix.iter().enumerate() {
                            io_in.push((mem_base + j) as u32);
                            io_in.push(s);
                        }
                    }
                    mem_base += t.data.len();
                }
                _ => {}
            }
        }
    }
    let i1 = tape.kb.io.len();
    let mut mem_base = k.n_cells as usize;
    for v in &k.vars {
        let Src::Local(slot) = v.src else { continue };
        let cur = &mut env[slot as usize];
        match v.bind {
            Bind::C(c) if k.conts[c as usize].written => {
                let Value::T(t) = cur else {
                    unreachable!("checked to be a container on entry")
                };
                let n = t.data.len();
                let xs = &m[mem_base..mem_base + n];
                if cact[c as usize] != 0 {
                    let out = tape.alloc(n);
                    tape.val[out as usize..out as usize + n].copy_from_slice(xs);
                    let old = std::mem::replace(&mut t.data, Data::Var(Slots::range(out, n)));
                    if let Data::Real(a) = old {
                        recycle_reals(a);
                    }
                    tape.kb.io.extend([mem_base as u32, out, n as u32]);
                } else {
                    match &mut t.data {
                        Data::Real(a) => Arc::make_mut(a).copy_from_slice(xs),
                        data => {
                            let mut a = pooled_reals(n, 0.0);
                            Arc::make_mut(&mut a).copy_from_slice(xs);
                            *data = Data::Real(a);
                        }
                    }
                }
                mem_base += n;
            }
            Bind::C(_) => {}
            Bind::R(c) if v.written => {
                let x = m[c as usize];
                *cur = if act[c as usize] != 0 {
                    let out = tape.leaf(x);
                    tape.kb.io.extend([c, out, 1]);
                    Value::Var(out)
                } else {
                    Value::Real(x)
                };
            }
            Bind::I(r) if v.written => *cur = Value::Int(iv[r as usize]),
            _ => {}
        }
    }
    // Log density terms, in order.
    let n_var = terms.iter().filter(|t| t.1).count();
    let t_out = tape.alloc(n_var);
    let mut j = 0;
    for &(x, var) in terms {
        if var {
            tape.val[t_out as usize + j] = x;
            target_v.push(t_out + j as u32);
            j += 1;
        } else {
            *target_c += x;
        }
    }
    let kb = tape.kernel_parts().1;
    let i2 = kb.io.len();
    if recording && (i2 > i1 || n_var > 0) {
        let (i0, i1, i2) = (i0 as u32, i1 as u32, i2 as u32);
        kb.recs.push(KernelRecord {
            kernel: k.clone(),
            segs: (s0 as u32, kb.segs.len() as u32),
            parts_end: kb.parts.len() as u32,
            addrs_end: kb.addrs.len() as u32,
            inputs: (i0, i1),
            outputs: (i1, i2),
            n_mem: n_mem as u32,
            terms_out: t_out,
            native,
        });
        let r = kb.recs.len() as u32 - 1;
        tape.push_kernel_node(r);
    } else {
        // Nothing downstream depends on this run: drop its trace.
        kb.io.truncate(i0);
        kb.segs.truncate(s0);
        kb.parts.truncate(p0);
        kb.addrs.truncate(a0);
    }
}
