//! Scalar kernels: a `for` loop whose body is scalar arithmetic, indexing and assignments,
//! compiled once to a flat instruction list over `f64` cells and `i64` registers, run without the
//! interpreter's values, and recorded on the tape as one node with its own reverse sweep.
//!
//! The kernel is compiled at the loop's first execution from the types of the variables it sees
//! then (int or real, scalar or container of a given rank), and checked against them at every
//! execution (a mismatch runs the interpreter). It reads its inputs into cells, runs, and only on
//! success writes the variables it assigned back to the environment, so any failure (an index out
//! of range, integer overflow, `reject`) leaves no trace and the interpreter re-runs the loop,
//! which reports the error exactly as before.
//!
//! Values are bit-for-bit those of the interpreter (the same [`B`]/[`U`] functions in the same
//! order), and so is every "depends on parameters" flag (tracked per cell, and per container as
//! the interpreter promotes a whole container to tape slots), since `~` drops constant terms
//! according to them. The reverse sweep is the adjoint of the imperative program (Griewank &
//! Walther 2008, "Evaluating Derivatives", §3–4): walking the executed segments backwards, an
//! assignment `d = f(x, y)` takes the adjoint of `d`, clears it, and adds its partials times it to
//! the adjoints of `x` and `y`; partials and load/store addresses are recorded in the forward pass.
//!
//! Loops whose body is one straight-line segment (GARCH, AR) run it as a tight loop: the trace
//! holds one entry (segment, number of iterations) for the whole loop, the partials and addresses
//! of all iterations are reserved at once, and once an iteration changes no "depends on
//! parameters" flag the flag updates of stores and moves are skipped (every later iteration
//! starts from the same flags, so it would compute the same ones).
//!
//! With the cargo feature `jit` (the default) the straight-line loop bodies and the reverse
//! sweeps are also compiled to native code with Cranelift when the kernel is built; the
//! interpreter runs whatever was not compiled and is the reference the native code matches bit
//! for bit (`jit`'s module docs).
//!
//! Files: this one holds the kernel's types (instructions, segments, containers); [`build`]
//! compiles a loop into them (compile pass); [`run`] executes a kernel, recording its trace on
//! the tape (forward pass); [`reverse`] holds [`backward`], the kernel's reverse sweep; `jit`
//! generates native code for both.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock};

use crate::syntax::ast::BinOp;

use crate::distributions::Family;

use super::ir::St;
use super::scalar::{B, U};
use super::value::{Base, Value};

mod build;
#[cfg(feature = "jit")]
mod jit;
mod reverse;
mod run;

use build::*;
pub use reverse::backward;
pub use run::{KernelBuffers, run};
use run::{MAX_LPDF_ARGS, TAPE_BIT};
/// The lazily compiled kernel of one `for` statement (`None` when the loop cannot be compiled).
/// Shared by clones of the lowered program; compiled at most once.
#[derive(Clone, Default)]
pub struct KernelCache(Arc<OnceLock<Option<Arc<Kernel>>>>);

impl std::fmt::Debug for KernelCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.get() {
            None => f.write_str("KernelCache(not compiled)"),
            Some(None) => f.write_str("KernelCache(interpreted)"),
            Some(Some(k)) => write!(f, "KernelCache({} segments)", k.segs.len()),
        }
    }
}

impl KernelCache {
    /// `None` before the loop first ran, then whether it runs as a kernel.
    pub fn compiled(&self) -> Option<bool> {
        self.0.get().map(|k| k.is_some())
    }

    /// Whether the loop runs as a kernel with native code for at least one loop body (feature
    /// `jit`).
    pub fn native(&self) -> bool {
        #[cfg(feature = "jit")]
        if let Some(Some(k)) = self.0.get() {
            return k.jit.as_ref().is_some_and(|j| j.has_forward());
        }
        false
    }

    /// The kernel of the `for` statement `st`, compiling it on first use against the variables
    /// of `env` and `globals`.
    pub fn get(&self, st: &St, env: &[Value], globals: &[Value]) -> Option<Arc<Kernel>> {
        self.0
            .get_or_init(|| compile(st, env, globals).map(Arc::new))
            .clone()
    }
}

/// An operand: a real cell or an integer register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Opd {
    R(u32),
    I(u32),
}

/// Integer arithmetic (checked: overflow or division by zero stops the kernel).
#[derive(Clone, Copy, Debug)]
enum IOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Min,
    Max,
}

/// Comparisons and logical operators, giving 0 or 1.
#[derive(Clone, Copy, Debug)]
enum Cmp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    And,
    Or,
}

impl Cmp {
    fn of(op: BinOp) -> Option<Cmp> {
        Some(match op {
            BinOp::Lt => Cmp::Lt,
            BinOp::Le => Cmp::Le,
            BinOp::Gt => Cmp::Gt,
            BinOp::Ge => Cmp::Ge,
            BinOp::Eq => Cmp::Eq,
            BinOp::Ne => Cmp::Ne,
            BinOp::And => Cmp::And,
            BinOp::Or => Cmp::Or,
            _ => return None,
        })
    }

    #[inline]
    fn int(self, x: i64, y: i64) -> i64 {
        (match self {
            Cmp::Lt => x < y,
            Cmp::Le => x <= y,
            Cmp::Gt => x > y,
            Cmp::Ge => x >= y,
            Cmp::Eq => x == y,
            Cmp::Ne => x != y,
            Cmp::And => x != 0 && y != 0,
            Cmp::Or => x != 0 || y != 0,
        }) as i64
    }

    #[inline]
    fn real(self, x: f64, y: f64) -> i64 {
        (match self {
            Cmp::Lt => x < y,
            Cmp::Le => x <= y,
            Cmp::Gt => x > y,
            Cmp::Ge => x >= y,
            Cmp::Eq => x == y,
            Cmp::Ne => x != y,
            Cmp::And => x != 0.0 && y != 0.0,
            Cmp::Or => x != 0.0 || y != 0.0,
        }) as i64
    }
}

/// `int_step`, `is_inf`, `is_nan` of a real.
#[derive(Clone, Copy, Debug)]
enum Test {
    IntStep,
    IsInf,
    IsNan,
}

/// A forward instruction. Cells (`d`, `x`, `y`, `s`) index the real memory, registers the
/// integer memory, `c` a container; `ix`/`n` a run of index registers in [`Kernel::ixs`].
#[derive(Clone, Copy, Debug)]
enum Op {
    Add(u32, u32, u32),
    Sub(u32, u32, u32),
    Mul(u32, u32, u32),
    Div(u32, u32, u32),
    Bin(B, u32, u32, u32),
    Un(U, u32, u32),
    /// `d ← x` for a named cell `d` (a local or a ternary's result), whose "depends on
    /// parameters" flag becomes the OR of the flags of dependency list `dl`.
    Mov {
        d: u32,
        x: u32,
        dl: u32,
    },
    /// Real cell ← integer register (a constant).
    IToR(u32, u32),
    /// Real load from a local container with one index (address recorded).
    Ld1 {
        d: u32,
        c: u32,
        i: u32,
    },
    /// Real load from a local container with several indices (address recorded).
    Ld {
        d: u32,
        c: u32,
        ix: u32,
        n: u32,
    },
    /// Real load from data (a constant; nothing recorded).
    LdG1 {
        d: u32,
        c: u32,
        i: u32,
    },
    LdG {
        d: u32,
        c: u32,
        ix: u32,
        n: u32,
    },
    /// Integer load (data or an integer local).
    LdI1 {
        d: u32,
        c: u32,
        i: u32,
    },
    LdI {
        d: u32,
        c: u32,
        ix: u32,
        n: u32,
    },
    /// Store of a real cell into a written local container (address recorded); the
    /// container's flag is OR-ed with those of dependency list `dl`.
    St1 {
        c: u32,
        s: u32,
        i: u32,
        dl: u32,
    },
    St {
        c: u32,
        s: u32,
        ix: u32,
        n: u32,
        dl: u32,
    },
    IBin(IOp, u32, u32, u32),
    INeg(u32, u32),
    IAbs(u32, u32),
    IMov(u32, u32),
    INot(u32, u32),
    ICmp(Cmp, u32, u32, u32),
    /// Integer register ← comparison of two real cells.
    RCmp(Cmp, u32, u32, u32),
    /// Integer register ← `!x` of a real cell.
    RNot(u32, u32),
    /// Integer register ← test of a real cell.
    RTest(Test, u32, u32),
    /// Real cell ← `x ^ y` of two integers (a constant).
    IPow(u32, u32, u32),
    /// Real cell ← `x ./ y` of two integers (a constant).
    IDivR(u32, u32, u32),
    /// Real cell `d` ← a log density of scalar arguments `largs[a .. a + n]` (variate first),
    /// dropping constant terms when `propto` and the loop is not inside a normalised user
    /// density (as `Ctx::lpdf`); partials recorded.
    Lpdf {
        d: u32,
        fam: Family,
        a: u32,
        n: u32,
        propto: bool,
    },
    /// Adds cell `x` to the log density (`target +=`, `~`): a constant, or a term of its own
    /// on the tape when its dependency list `dl` says it depends on parameters.
    Target {
        x: u32,
        dl: u32,
    },
    /// Stop the kernel (`reject`): the interpreter re-runs the loop and reports.
    Bail,
}

/// A reverse instruction: what the forward instruction of the same position contributes to
/// the adjoints.
#[derive(Clone, Copy, Debug)]
enum ROp {
    Add(u32, u32, u32),
    Sub(u32, u32, u32),
    /// Two recorded partials.
    P2(u32, u32, u32),
    /// One recorded partial.
    P1(u32, u32),
    Mov(u32, u32),
    /// A load into cell `d` from a recorded address.
    Ld(u32),
    /// A store of cell `s` to a recorded address.
    St(u32),
    /// A log density into `d` of the `n` argument cells from `largs[a]`: `n` recorded partials.
    Pn(u32, u32, u32),
    /// A term of the log density from cell `x` (recorded: its index among the run's terms).
    Target(u32),
}

/// A straight-line run of instructions and its reverse instructions.
#[derive(Clone, Debug, Default)]
struct Seg {
    ops: Vec<Op>,
    rev: Vec<ROp>,
    /// Partials and addresses one execution records (to reserve the trace of a loop at once).
    n_parts: u32,
    n_addrs: u32,
    /// Per reverse instruction, what is known of the adjoints it touches ([`FRESH_X`],
    /// [`FRESH_Y`], [`ZERO_D`]; `Kernel::mark_fresh`), for native code.
    #[cfg_attr(not(feature = "jit"), allow(dead_code))]
    fresh: Vec<u8>,
}

/// The first cell a reverse instruction adds into (`x`; `s` of a store, `x` of a term) holds an
/// adjoint of exactly +0 there: native code assigns instead of adding.
#[cfg_attr(not(feature = "jit"), allow(dead_code))]
const FRESH_X: u8 = 1;
/// Likewise the second cell (`y`).
#[cfg_attr(not(feature = "jit"), allow(dead_code))]
const FRESH_Y: u8 = 2;
/// The adjoint the instruction takes from `d` is exactly +0 (native code uses the constant).
#[cfg_attr(not(feature = "jit"), allow(dead_code))]
const ZERO_D: u8 = 4;

impl Seg {
    /// Counts the partials and addresses one execution of the segment records (those its
    /// reverse instructions read back).
    fn count_trace(&mut self) {
        let (mut p, mut a) = (0, 0);
        for r in &self.rev {
            match r {
                ROp::P2(..) => p += 2,
                ROp::P1(..) => p += 1,
                ROp::Pn(_, _, n) => p += n,
                ROp::Ld(_) | ROp::St(_) | ROp::Target(_) => a += 1,
                ROp::Add(..) | ROp::Sub(..) | ROp::Mov(..) => {}
            }
        }
        (self.n_parts, self.n_addrs) = (p, a);
    }
}

/// Structured control flow over segments.
#[derive(Clone, Debug)]
enum KNode {
    Seg(u32),
    For {
        var: u32,
        lo: u32,
        hi: u32,
        body: Vec<KNode>,
    },
    If {
        cond: Opd,
        then: Vec<KNode>,
        otherwise: Vec<KNode>,
    },
    Break,
    Continue,
}

/// Where a variable read or written by the kernel lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Src {
    Local(u32),
    Global(u32),
}

/// How a variable is held inside the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Bind {
    R(u32),
    I(u32),
    C(u32),
}

/// The element shape of a container, without sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BaseKind {
    Scalar,
    Vector,
    RowVector,
    Matrix,
}

fn base_kind(b: Base) -> BaseKind {
    match b {
        Base::Scalar => BaseKind::Scalar,
        Base::Vector(_) => BaseKind::Vector,
        Base::RowVector(_) => BaseKind::RowVector,
        Base::Matrix(..) => BaseKind::Matrix,
    }
}

/// A container read (or, if `written`, also assigned) by the kernel.
#[derive(Clone, Debug)]
struct ContDef {
    src: Src,
    int: bool,
    written: bool,
    arr_rank: usize,
    base: BaseKind,
}

/// A variable from outside the loop.
#[derive(Clone, Debug)]
struct OuterVar {
    src: Src,
    bind: Bind,
    written: bool,
}

/// A compiled `for` loop.
#[derive(Debug)]
pub struct Kernel {
    root: Vec<KNode>,
    segs: Vec<Seg>,
    ixs: Vec<u32>,
    /// Dependency lists `(start, static, dynamic)` into `dep_items`: named cells, or
    /// containers tagged with [`TAPE_BIT`]; the first `static` items do not change during a
    /// run (variables the loop reads but never assigns), their OR is taken once per run.
    dep_lists: Vec<(u32, u32, u32)>,
    dep_items: Vec<u32>,
    n_cells: u32,
    n_regs: u32,
    consts: Vec<(u32, f64)>,
    iconsts: Vec<(u32, i64)>,
    vars: Vec<OuterVar>,
    conts: Vec<ContDef>,
    /// Arguments of log densities: (cell, dependency list).
    largs: Vec<(u32, u32)>,
    /// Native code of its loop bodies and reverse sweeps (`None`: all interpreted).
    #[cfg(feature = "jit")]
    jit: Option<jit::Jit>,
}

impl Kernel {
    /// Sets every segment's `fresh` marks. A cell is *private* to a segment when no other
    /// segment's reverse instructions name it, it is not a variable from outside the loop (an
    /// input or output of the run) nor a constant, and the first reverse instruction naming it
    /// in the segment (in forward order) takes its adjoint and adds nothing into it (it is a
    /// temporary defined there before its uses). The adjoint of a private cell is then exactly
    /// +0 whenever the sweep starts on an execution of the segment (adjoints start at +0, and
    /// each execution's sweep ends by taking it), and, tracking takes and additions backwards
    /// through the segment, at every point the marks name: there native code writes `p · g`
    /// instead of `0 + p · g`, which takes an addition off its chain of dependent operations.
    ///
    /// The gradient is the same bit for bit as the interpreter's (which adds): `0 + v` differs
    /// from `v` only for v = −0, so the two sweeps differ at most in the sign of zero adjoints of
    /// private cells and of what is computed from them (products and sums, still zeros of either
    /// sign; NaN and ±∞ products do not depend on the sign). Every such value ends up added into
    /// an adjoint that is not private (another cell's, kernel memory's or a tape slot's), and
    /// those are sums that start at +0, hence never −0, so adding −0 or +0 to them gives the
    /// same bits.
    #[cfg_attr(not(feature = "jit"), allow(dead_code))]
    fn mark_fresh(&mut self) {
        const NONE_SEG: u32 = u32::MAX;
        const SHARED: u32 = u32::MAX - 1;
        let n = self.n_cells as usize;
        let mut owner = vec![NONE_SEG; n];
        for v in &self.vars {
            if let Bind::R(c) = v.bind {
                owner[c as usize] = SHARED;
            }
        }
        for &(c, _) in &self.consts {
            owner[c as usize] = SHARED;
        }
        let names = |r: &ROp, la: &[(u32, u32)], out: &mut Vec<u32>| {
            out.clear();
            match *r {
                ROp::Add(d, x, y) | ROp::Sub(d, x, y) | ROp::P2(d, x, y) => out.extend([d, x, y]),
                ROp::P1(d, x) | ROp::Mov(d, x) => out.extend([d, x]),
                ROp::Ld(d) | ROp::St(d) | ROp::Target(d) => out.push(d),
                ROp::Pn(d, a, m) => {
                    out.push(d);
                    out.extend(la[a as usize..(a + m) as usize].iter().map(|&(c, _)| c));
                }
            }
        };
        let mut buf = Vec::new();
        for (si, s) in self.segs.iter().enumerate() {
            for r in &s.rev {
                names(r, &self.largs, &mut buf);
                for &c in &buf {
                    let o = &mut owner[c as usize];
                    if *o == NONE_SEG {
                        *o = si as u32;
                    } else if *o != si as u32 {
                        *o = SHARED;
                    }
                }
            }
        }
        for si in 0..self.segs.len() {
            let s = &self.segs[si];
            // Private cells: first named (forward order) by a take that adds nothing into them.
            let mut seen = vec![false; n];
            let mut zero = vec![false; n];
            for r in &s.rev {
                names(r, &self.largs, &mut buf);
                let d = match *r {
                    ROp::St(_) | ROp::Target(_) => None,
                    ROp::Add(d, ..)
                    | ROp::Sub(d, ..)
                    | ROp::P2(d, ..)
                    | ROp::P1(d, _)
                    | ROp::Mov(d, _)
                    | ROp::Ld(d)
                    | ROp::Pn(d, ..) => Some(d),
                };
                for (j, &c) in buf.iter().enumerate() {
                    let cu = c as usize;
                    if seen[cu] {
                        continue;
                    }
                    seen[cu] = true;
                    let taken_only = d == Some(c) && buf.iter().skip(1).all(|&o| o != c);
                    zero[cu] = j == 0 && taken_only && owner[cu] == si as u32;
                }
            }
            // Backwards through the segment: takes make a private cell +0, additions end that.
            let private = zero.clone();
            let mut fresh = vec![0u8; s.rev.len()];
            for (j, r) in s.rev.iter().enumerate().rev() {
                let mut f = 0;
                let (d, xs) = match *r {
                    ROp::Add(d, x, y) | ROp::Sub(d, x, y) | ROp::P2(d, x, y) => {
                        (Some(d), [Some(x), Some(y)])
                    }
                    ROp::P1(d, x) | ROp::Mov(d, x) => (Some(d), [Some(x), None]),
                    ROp::Ld(d) | ROp::Pn(d, ..) => (Some(d), [None, None]),
                    ROp::St(x) | ROp::Target(x) => (None, [Some(x), None]),
                };
                if let Some(d) = d {
                    if zero[d as usize] {
                        f |= ZERO_D;
                    }
                    zero[d as usize] = private[d as usize];
                }
                for (x, bit) in xs.into_iter().zip([FRESH_X, FRESH_Y]) {
                    if let Some(x) = x {
                        if zero[x as usize] {
                            f |= bit;
                        }
                        zero[x as usize] = false;
                    }
                }
                if let ROp::Pn(_, a, m) = *r {
                    for &(x, _) in &self.largs[a as usize..(a + m) as usize] {
                        zero[x as usize] = false;
                    }
                }
                fresh[j] = f;
            }
            self.segs[si].fresh = fresh;
        }
    }

    /// Whether every cell a reverse instruction names (log density arguments included) is
    /// below `n_cells`: checked once when the kernel is built, so that the reverse sweep may
    /// index cells without bounds checks (`reverse`).
    fn cells_in_range(&self) -> bool {
        let ok = |c: u32| c < self.n_cells;
        self.segs.iter().flat_map(|s| &s.rev).all(|r| match *r {
            ROp::Add(d, x, y) | ROp::Sub(d, x, y) | ROp::P2(d, x, y) => ok(d) && ok(x) && ok(y),
            ROp::P1(d, x) | ROp::Mov(d, x) => ok(d) && ok(x),
            ROp::Ld(d) | ROp::St(d) | ROp::Target(d) => ok(d),
            ROp::Pn(d, a, n) => {
                ok(d)
                    && self
                        .largs
                        .get(a as usize..(a as usize).saturating_add(n as usize))
                        .is_some_and(|la| la.iter().all(|&(c, _)| ok(c)))
            }
        })
    }
}

// ------------------------------------------------------------------------------------------
// Compilation
// ------------------------------------------------------------------------------------------

struct Bld<'a> {
    env: &'a [Value],
    globals: &'a [Value],
    written: HashSet<u32>,
    n_cells: u32,
    n_regs: u32,
    consts: Vec<(u32, f64)>,
    const_map: HashMap<u64, u32>,
    iconsts: Vec<(u32, i64)>,
    iconst_map: HashMap<i64, u32>,
    /// Integer registers holding a known constant.
    const_of_reg: HashMap<u32, i64>,
    locals: HashMap<u32, Bind>,
    globals_map: HashMap<u32, Bind>,
    vars: Vec<OuterVar>,
    conts: Vec<ContDef>,
    largs: Vec<(u32, u32)>,
    segs: Vec<Seg>,
    ixs: Vec<u32>,
    /// Per cell: the named cells and containers its value depends on (absent: none).
    deps: HashMap<u32, Vec<u32>>,
    /// Named cells of variables the loop never assigns.
    static_cells: HashSet<u32>,
    /// Integer operations already computed in the current segment (common subexpressions).
    cse: HashMap<(u8, u32, u32), u32>,
    dep_lists: Vec<(u32, u32, u32)>,
    dep_items: Vec<u32>,
    cur: Seg,
    nodes: Vec<KNode>,
}
