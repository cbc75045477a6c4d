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

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock};

use crate::syntax::ast::{AssignOp, BinOp};

use crate::distributions::{self, Arg, Family};

use super::ir::{BaseEx, Builtin, Ex, IxEx, St, StKind};
use super::scalar::{B, U};
use super::tape::Tape;
use super::value::{Base, Data, Slots, Value, single_offset};

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

/// Slots assigned anywhere in `st`.
fn collect_written(st: &St, out: &mut HashSet<u32>) {
    match &st.kind {
        StKind::Assign { slot, .. } => {
            out.insert(*slot);
        }
        StKind::For { body, .. } | StKind::ForEach { body, .. } | StKind::While { body, .. } => {
            collect_written(body, out)
        }
        StKind::If {
            then, otherwise, ..
        } => {
            collect_written(then, out);
            if let Some(o) = otherwise {
                collect_written(o, out);
            }
        }
        StKind::Block(sts) => sts.iter().for_each(|s| collect_written(s, out)),
        StKind::Fast { plain, .. } => collect_written(plain, out),
        _ => {}
    }
}

/// Compiles the `for` statement `st`, or `None` when it uses anything a kernel does not handle.
fn compile(st: &St, env: &[Value], globals: &[Value]) -> Option<Kernel> {
    if !matches!(st.kind, StKind::For { .. }) {
        return None;
    }
    let mut written = HashSet::new();
    collect_written(st, &mut written);
    let mut b = Bld {
        env,
        globals,
        written,
        n_cells: 0,
        n_regs: 0,
        consts: Vec::new(),
        const_map: HashMap::new(),
        iconsts: Vec::new(),
        iconst_map: HashMap::new(),
        const_of_reg: HashMap::new(),
        locals: HashMap::new(),
        globals_map: HashMap::new(),
        vars: Vec::new(),
        conts: Vec::new(),
        largs: Vec::new(),
        segs: Vec::new(),
        ixs: Vec::new(),
        deps: HashMap::new(),
        static_cells: HashSet::new(),
        cse: HashMap::new(),
        dep_lists: Vec::new(),
        dep_items: Vec::new(),
        cur: Seg::default(),
        nodes: Vec::new(),
    };
    b.stmt(st)?;
    b.flush();
    // Cell and register numbers must fit the address tagging of the reverse sweep.
    if b.n_cells >= TAPE_BIT / 2 {
        return None;
    }
    let k = Kernel {
        root: b.nodes,
        segs: b.segs,
        ixs: b.ixs,
        dep_lists: b.dep_lists,
        dep_items: b.dep_items,
        n_cells: b.n_cells,
        n_regs: b.n_regs,
        consts: b.consts,
        iconsts: b.iconsts,
        vars: b.vars,
        conts: b.conts,
        largs: b.largs,
    };
    Some(k)
}

impl Bld<'_> {
    fn cell(&mut self) -> u32 {
        self.n_cells += 1;
        self.n_cells - 1
    }

    fn reg(&mut self) -> u32 {
        self.n_regs += 1;
        self.n_regs - 1
    }

    /// A new named cell (its flag is tracked at run time).
    fn named(&mut self) -> u32 {
        let c = self.cell();
        self.deps.insert(c, vec![c]);
        c
    }

    /// Sets the dependencies of `d` to the union of those of `xs`.
    fn set_deps(&mut self, d: u32, xs: &[u32]) {
        let mut u: Vec<u32> = Vec::new();
        for x in xs {
            if let Some(v) = self.deps.get(x) {
                for &q in v {
                    if !u.contains(&q) {
                        u.push(q);
                    }
                }
            }
        }
        if u.is_empty() {
            self.deps.remove(&d);
        } else {
            self.deps.insert(d, u);
        }
    }

    /// The dependency list of cell `x`, interned.
    fn dep_list(&mut self, x: u32) -> u32 {
        let v = self.deps.get(&x).cloned().unwrap_or_default();
        let is_static = |q: u32| {
            if q & TAPE_BIT != 0 {
                !self.conts[(q & !TAPE_BIT) as usize].written
            } else {
                self.static_cells.contains(&q)
            }
        };
        let (st, dy): (Vec<u32>, Vec<u32>) = v.iter().partition(|&&q| is_static(q));
        let start = self.dep_items.len() as u32;
        self.dep_items.extend_from_slice(&st);
        self.dep_items.extend_from_slice(&dy);
        self.dep_lists
            .push((start, st.len() as u32, dy.len() as u32));
        self.dep_lists.len() as u32 - 1
    }

    /// `d ← x` into a named cell.
    fn mov(&mut self, d: u32, x: u32) {
        let dl = self.dep_list(x);
        self.op_rev(Op::Mov { d, x, dl }, ROp::Mov(d, x));
    }

    fn rconst(&mut self, x: f64) -> u32 {
        if let Some(&c) = self.const_map.get(&x.to_bits()) {
            return c;
        }
        let c = self.cell();
        self.consts.push((c, x));
        self.const_map.insert(x.to_bits(), c);
        c
    }

    fn iconst(&mut self, i: i64) -> u32 {
        if let Some(&r) = self.iconst_map.get(&i) {
            return r;
        }
        let r = self.reg();
        self.iconsts.push((r, i));
        self.iconst_map.insert(i, r);
        self.const_of_reg.insert(r, i);
        r
    }

    fn op(&mut self, op: Op) {
        if let Op::IMov(..) = op {
            // A named integer changes: cached integer results may no longer hold.
            self.cse.clear();
        }
        self.cur.ops.push(op);
    }

    fn op_rev(&mut self, op: Op, r: ROp) {
        self.cur.ops.push(op);
        self.cur.rev.push(r);
    }

    /// Closes the current segment (if any) as a node of the current block.
    fn flush(&mut self) {
        self.cse.clear();
        if self.cur.ops.is_empty() {
            return;
        }
        let s = std::mem::take(&mut self.cur);
        self.segs.push(s);
        self.nodes.push(KNode::Seg(self.segs.len() as u32 - 1));
    }

    /// Compiles `f` into a block of its own.
    fn block(&mut self, f: impl FnOnce(&mut Self) -> Option<()>) -> Option<Vec<KNode>> {
        self.flush();
        let saved = std::mem::take(&mut self.nodes);
        let r = f(self);
        self.flush();
        let body = std::mem::replace(&mut self.nodes, saved);
        r.map(|_| body)
    }

    /// Binds a variable of the environment on first use, from its current value's type.
    fn outer(&mut self, src: Src) -> Option<Bind> {
        let v = match src {
            Src::Local(s) => self.env.get(s as usize)?,
            Src::Global(g) => self.globals.get(g as usize)?,
        };
        let written = matches!(src, Src::Local(s) if self.written.contains(&s));
        let bind = match v {
            Value::Int(_) => Bind::I(self.reg()),
            Value::Real(_) | Value::Var(_) => {
                let c = self.named();
                if !written {
                    self.static_cells.insert(c);
                }
                Bind::R(c)
            }
            Value::T(t) => {
                let int = matches!(t.data, Data::Int(_));
                if int && written {
                    return None;
                }
                let arr_rank = t.arr.len();
                let base = base_kind(t.base);
                let rank = arr_rank + t.base.dims().len();
                if rank == 0 || rank > 4 {
                    return None;
                }
                self.conts.push(ContDef {
                    src,
                    int,
                    written,
                    arr_rank,
                    base,
                });
                Bind::C(self.conts.len() as u32 - 1)
            }
        };
        self.vars.push(OuterVar { src, bind, written });
        match src {
            Src::Local(s) => self.locals.insert(s, bind),
            Src::Global(g) => self.globals_map.insert(g, bind),
        };
        Some(bind)
    }

    fn local(&mut self, s: u32) -> Option<Bind> {
        match self.locals.get(&s) {
            Some(&b) => Some(b),
            None => self.outer(Src::Local(s)),
        }
    }

    fn global(&mut self, g: u32) -> Option<Bind> {
        match self.globals_map.get(&g) {
            Some(&b) => Some(b),
            None => self.outer(Src::Global(g)),
        }
    }

    fn rank(&self, c: u32) -> usize {
        let d = &self.conts[c as usize];
        d.arr_rank
            + match d.base {
                BaseKind::Scalar => 0,
                BaseKind::Vector | BaseKind::RowVector => 1,
                BaseKind::Matrix => 2,
            }
    }

    /// An operand as a real cell (integers convert, as the interpreter's `as_s`).
    fn real(&mut self, o: Opd) -> u32 {
        match o {
            Opd::R(c) => c,
            Opd::I(r) => match self.const_of_reg.get(&r) {
                Some(&i) => self.rconst(i as f64),
                None => {
                    let d = self.cell();
                    self.op(Op::IToR(d, r));
                    d
                }
            },
        }
    }

    fn stmt(&mut self, st: &St) -> Option<()> {
        match &st.kind {
            StKind::Fast { plain, .. } => self.stmt(plain),
            StKind::Block(sts) => {
                for s in sts {
                    self.stmt(s)?;
                }
                Some(())
            }
            StKind::Tilde {
                lhs,
                family,
                args,
                trunc: None,
            } => {
                let mut all = Vec::with_capacity(args.len() + 1);
                all.push(lhs.clone());
                all.extend(args.iter().cloned());
                let d = self.lpdf(*family, &all, true)?;
                self.target(d);
                Some(())
            }
            StKind::TargetPlus(e) => {
                let x = self.expr(e)?;
                let x = self.real(x);
                self.target(x);
                Some(())
            }
            StKind::Reject(_) => {
                self.op(Op::Bail);
                Some(())
            }
            StKind::Decl { slot, ty, init } => {
                if !ty.arr.is_empty() || !matches!(ty.base, BaseEx::Scalar) {
                    return None;
                }
                if ty.int {
                    let v = match init {
                        Some(e) => match self.expr(e)? {
                            Opd::I(r) => r,
                            Opd::R(_) => return None,
                        },
                        None => self.iconst(0),
                    };
                    let d = self.reg();
                    self.op(Op::IMov(d, v));
                    self.locals.insert(*slot, Bind::I(d));
                } else {
                    let v = match init {
                        Some(e) => {
                            let o = self.expr(e)?;
                            self.real(o)
                        }
                        None => self.rconst(f64::NAN),
                    };
                    let d = self.named();
                    self.mov(d, v);
                    self.locals.insert(*slot, Bind::R(d));
                }
                Some(())
            }
            StKind::Assign { slot, idx, op, rhs } => self.assign(*slot, idx, *op, rhs),
            StKind::For { slot, lo, hi, body } => {
                let lo = match self.expr(lo)? {
                    Opd::I(r) => r,
                    Opd::R(_) => return None,
                };
                let hi = match self.expr(hi)? {
                    Opd::I(r) => r,
                    Opd::R(_) => return None,
                };
                let var = self.reg();
                self.locals.insert(*slot, Bind::I(var));
                let body = self.block(|b| b.stmt(body))?;
                self.nodes.push(KNode::For { var, lo, hi, body });
                Some(())
            }
            StKind::If {
                cond,
                then,
                otherwise,
            } => {
                let cond = self.expr(cond)?;
                let then = self.block(|b| b.stmt(then))?;
                let otherwise = match otherwise {
                    Some(o) => self.block(|b| b.stmt(o))?,
                    None => Vec::new(),
                };
                self.nodes.push(KNode::If {
                    cond,
                    then,
                    otherwise,
                });
                Some(())
            }
            StKind::Break => {
                self.flush();
                self.nodes.push(KNode::Break);
                Some(())
            }
            StKind::Continue => {
                self.flush();
                self.nodes.push(KNode::Continue);
                Some(())
            }
            _ => None,
        }
    }

    fn assign(&mut self, slot: u32, idx: &[IxEx], op: AssignOp, rhs: &Ex) -> Option<()> {
        let bind = self.local(slot)?;
        let v = self.expr(rhs)?;
        let bop = match op {
            AssignOp::Assign => None,
            AssignOp::AddAssign => Some(BinOp::Add),
            AssignOp::SubAssign => Some(BinOp::Sub),
            AssignOp::MulAssign => Some(BinOp::Mul),
            AssignOp::DivAssign => Some(BinOp::Div),
            AssignOp::EltMulAssign => Some(BinOp::EltMul),
            AssignOp::EltDivAssign => Some(BinOp::EltDiv),
        };
        match bind {
            Bind::R(d) if idx.is_empty() => {
                let v = match bop {
                    None => v,
                    Some(bop) => self.binop(bop, Opd::R(d), v)?,
                };
                let s = self.real(v);
                self.mov(d, s);
                Some(())
            }
            Bind::I(d) if idx.is_empty() => {
                let v = match bop {
                    None => v,
                    Some(bop) => self.binop(bop, Opd::I(d), v)?,
                };
                let Opd::I(s) = v else { return None };
                self.op(Op::IMov(d, s));
                Some(())
            }
            Bind::C(c) if !idx.is_empty() => {
                if self.conts[c as usize].int || idx.len() != self.rank(c) {
                    return None;
                }
                let regs = self.index_regs(idx)?;
                let v = match bop {
                    None => v,
                    Some(bop) => {
                        let cur = self.load(c, &regs);
                        self.binop(bop, cur, v)?
                    }
                };
                let s = self.real(v);
                let dl = self.dep_list(s);
                if let [i] = regs[..] {
                    self.op_rev(Op::St1 { c, s, i, dl }, ROp::St(s));
                } else {
                    let (ix, n) = self.push_ixs(&regs);
                    self.op_rev(Op::St { c, s, ix, n, dl }, ROp::St(s));
                }
                Some(())
            }
            _ => None,
        }
    }

    /// A log density of scalar arguments into a new cell.
    fn lpdf(&mut self, fam: Family, args: &[Ex], propto: bool) -> Option<u32> {
        if args.len() != fam.sig().params.len() + 1 || args.len() > MAX_LPDF_ARGS {
            return None;
        }
        let mut cells = Vec::with_capacity(args.len());
        for a in args {
            let o = self.expr(a)?;
            cells.push(self.real(o));
        }
        let a = self.largs.len() as u32;
        for &c in &cells {
            let dl = self.dep_list(c);
            self.largs.push((c, dl));
        }
        let d = self.cell();
        self.set_deps(d, &cells);
        let n = cells.len() as u32;
        self.op_rev(
            Op::Lpdf {
                d,
                fam,
                a,
                n,
                propto,
            },
            ROp::Pn(d, a, n),
        );
        Some(d)
    }

    /// `target += x` for a real cell.
    fn target(&mut self, x: u32) {
        let dl = self.dep_list(x);
        self.op_rev(Op::Target { x, dl }, ROp::Target(x));
    }

    fn index_regs(&mut self, idx: &[IxEx]) -> Option<Vec<u32>> {
        let mut regs = Vec::with_capacity(idx.len());
        for i in idx {
            let IxEx::Single(e) = i else { return None };
            match self.expr(e)? {
                Opd::I(r) => regs.push(r),
                Opd::R(_) => return None,
            }
        }
        Some(regs)
    }

    fn push_ixs(&mut self, regs: &[u32]) -> (u32, u32) {
        let ix = self.ixs.len() as u32;
        self.ixs.extend_from_slice(regs);
        (ix, regs.len() as u32)
    }

    /// A load of a full single index of container `c`.
    fn load(&mut self, c: u32, regs: &[u32]) -> Opd {
        let def = &self.conts[c as usize];
        let (int, global) = (def.int, matches!(def.src, Src::Global(_)));
        let one = if let [i] = regs { Some(*i) } else { None };
        let (ix, n) = if one.is_none() {
            self.push_ixs(regs)
        } else {
            (0, 0)
        };
        if int {
            let d = self.reg();
            self.op(match one {
                Some(i) => Op::LdI1 { d, c, i },
                None => Op::LdI { d, c, ix, n },
            });
            return Opd::I(d);
        }
        let d = self.cell();
        if !global {
            self.deps.insert(d, vec![c | TAPE_BIT]);
        }
        if global {
            self.op(match one {
                Some(i) => Op::LdG1 { d, c, i },
                None => Op::LdG { d, c, ix, n },
            });
        } else {
            self.op_rev(
                match one {
                    Some(i) => Op::Ld1 { d, c, i },
                    None => Op::Ld { d, c, ix, n },
                },
                ROp::Ld(d),
            );
        }
        Opd::R(d)
    }

    fn un(&mut self, u: U, x: u32) -> Opd {
        let d = self.cell();
        self.set_deps(d, &[x]);
        self.op_rev(Op::Un(u, d, x), ROp::P1(d, x));
        Opd::R(d)
    }

    fn bin(&mut self, f: B, x: Opd, y: Opd) -> Opd {
        let (x, y) = (self.real(x), self.real(y));
        let d = self.cell();
        self.set_deps(d, &[x, y]);
        let (op, r) = match f {
            B::Add => (Op::Add(d, x, y), ROp::Add(d, x, y)),
            B::Sub => (Op::Sub(d, x, y), ROp::Sub(d, x, y)),
            B::Mul => (Op::Mul(d, x, y), ROp::P2(d, x, y)),
            B::Div => (Op::Div(d, x, y), ROp::P2(d, x, y)),
            f => (Op::Bin(f, d, x, y), ROp::P2(d, x, y)),
        };
        self.op_rev(op, r);
        Opd::R(d)
    }

    /// A binary operator with the interpreter's typing (`Ctx::binop`).
    fn binop(&mut self, op: BinOp, x: Opd, y: Opd) -> Option<Opd> {
        if let (Opd::I(a), Opd::I(b)) = (x, y) {
            let iop = match op {
                BinOp::Add => IOp::Add,
                BinOp::Sub => IOp::Sub,
                BinOp::Mul | BinOp::EltMul => IOp::Mul,
                BinOp::Div | BinOp::IntDiv => IOp::Div,
                BinOp::Mod => IOp::Mod,
                BinOp::Pow | BinOp::EltPow => {
                    let d = self.cell();
                    self.op(Op::IPow(d, a, b));
                    return Some(Opd::R(d));
                }
                BinOp::EltDiv => {
                    let d = self.cell();
                    self.op(Op::IDivR(d, a, b));
                    return Some(Opd::R(d));
                }
                BinOp::LeftDiv => return None,
                cmp => {
                    let d = self.reg();
                    self.op(Op::ICmp(Cmp::of(cmp)?, d, a, b));
                    return Some(Opd::I(d));
                }
            };
            let key = (iop as u8, a, b);
            if let Some(&d) = self.cse.get(&key) {
                return Some(Opd::I(d));
            }
            let d = self.reg();
            self.op(Op::IBin(iop, d, a, b));
            self.cse.insert(key, d);
            return Some(Opd::I(d));
        }
        Some(match op {
            BinOp::Add => self.bin(B::Add, x, y),
            BinOp::Sub => self.bin(B::Sub, x, y),
            BinOp::Mul | BinOp::EltMul => self.bin(B::Mul, x, y),
            BinOp::Div | BinOp::EltDiv => self.bin(B::Div, x, y),
            BinOp::Pow | BinOp::EltPow => self.bin(B::Pow, x, y),
            BinOp::IntDiv | BinOp::Mod | BinOp::LeftDiv => return None,
            cmp => {
                let c = Cmp::of(cmp)?;
                let (a, b) = (self.real(x), self.real(y));
                let d = self.reg();
                self.op(Op::RCmp(c, d, a, b));
                Opd::I(d)
            }
        })
    }

    fn expr(&mut self, e: &Ex) -> Option<Opd> {
        Some(match e {
            Ex::Int(i) => Opd::I(self.iconst(*i)),
            Ex::Real(x) => Opd::R(self.rconst(*x)),
            Ex::Local(s) => match self.local(*s)? {
                Bind::R(c) => Opd::R(c),
                Bind::I(r) => Opd::I(r),
                Bind::C(_) => return None,
            },
            Ex::Global(g) => match self.global(*g)? {
                Bind::R(c) => Opd::R(c),
                Bind::I(r) => Opd::I(r),
                Bind::C(_) => return None,
            },
            Ex::Bin(op, a, b) => {
                let x = self.expr(a)?;
                let y = self.expr(b)?;
                self.binop(*op, x, y)?
            }
            Ex::Neg(a) => match self.expr(a)? {
                Opd::I(r) => {
                    let d = self.reg();
                    self.op(Op::INeg(d, r));
                    Opd::I(d)
                }
                Opd::R(c) => self.un(U::Neg, c),
            },
            Ex::Not(a) => {
                let d = self.reg();
                match self.expr(a)? {
                    Opd::I(r) => self.op(Op::INot(d, r)),
                    Opd::R(c) => self.op(Op::RNot(d, c)),
                }
                Opd::I(d)
            }
            Ex::Index(base, idx) => {
                let c = match **base {
                    Ex::Local(s) => self.local(s)?,
                    Ex::Global(g) => self.global(g)?,
                    _ => return None,
                };
                let Bind::C(c) = c else { return None };
                if idx.len() != self.rank(c) {
                    return None;
                }
                let regs = self.index_regs(idx)?;
                self.load(c, &regs)
            }
            Ex::Call(b, args) => self.call(*b, args)?,
            Ex::Lpdf {
                family,
                propto,
                args,
            } => Opd::R(self.lpdf(*family, args, *propto)?),
            Ex::Ternary(c, a, b) => {
                let cond = self.expr(c)?;
                let mut dst: Option<Opd> = None;
                let then = self.block(|bl| {
                    let x = bl.expr(a)?;
                    dst = Some(bl.mov_new(x));
                    Some(())
                })?;
                let d = dst?;
                let otherwise = self.block(|bl| {
                    let y = bl.expr(b)?;
                    match (d, y) {
                        (Opd::R(d), Opd::R(y)) => bl.mov(d, y),
                        (Opd::I(d), Opd::I(y)) => bl.op(Op::IMov(d, y)),
                        _ => return None,
                    }
                    Some(())
                })?;
                self.nodes.push(KNode::If {
                    cond,
                    then,
                    otherwise,
                });
                d
            }
            _ => return None,
        })
    }

    /// A fresh cell or register holding a copy of `x`.
    fn mov_new(&mut self, x: Opd) -> Opd {
        match x {
            Opd::R(c) => {
                let d = self.named();
                self.mov(d, c);
                Opd::R(d)
            }
            Opd::I(r) => {
                let d = self.reg();
                self.op(Op::IMov(d, r));
                Opd::I(d)
            }
        }
    }

    /// Built-in functions of scalars, with the interpreter's typing (`Ctx::call`).
    fn call(&mut self, b: Builtin, args: &[Ex]) -> Option<Opd> {
        let mut v = Vec::with_capacity(args.len());
        for a in args {
            v.push(self.expr(a)?);
        }
        Some(match (b, v.as_slice()) {
            (Builtin::Unary(u), &[x]) => {
                let x = self.real(x);
                self.un(u, x)
            }
            (Builtin::Binary(f), &[x, y]) => self.bin(f, x, y),
            (Builtin::Abs, &[Opd::I(r)]) => {
                let d = self.reg();
                self.op(Op::IAbs(d, r));
                Opd::I(d)
            }
            (Builtin::Abs, &[Opd::R(c)]) => self.un(U::Abs, c),
            (Builtin::Min | Builtin::Max, &[Opd::I(x), Opd::I(y)]) => {
                let d = self.reg();
                let op = if b == Builtin::Min {
                    IOp::Min
                } else {
                    IOp::Max
                };
                self.op(Op::IBin(op, d, x, y));
                Opd::I(d)
            }
            (Builtin::Min, &[x, y]) => self.bin(B::Fmin, x, y),
            (Builtin::Max, &[x, y]) => self.bin(B::Fmax, x, y),
            (Builtin::LogSumExp, &[x, y]) => self.bin(B::LogSumExp, x, y),
            (Builtin::Const(x), &[]) => Opd::R(self.rconst(x)),
            (Builtin::Fma, &[x, y, z]) => {
                let p = self.bin(B::Mul, x, y);
                self.bin(B::Add, p, z)
            }
            // As `Ctx::call`: log_sum_exp(log(θ) + a, log1m(θ) + b).
            (Builtin::LogMix, &[t, a, c]) => {
                let t = self.real(t);
                let lt = self.un(U::Log, t);
                let l1t = self.un(U::Log1m, t);
                let x = self.bin(B::Add, lt, a);
                let y = self.bin(B::Add, l1t, c);
                self.bin(B::LogSumExp, x, y)
            }
            (Builtin::IntStep | Builtin::IsInf | Builtin::IsNan, &[x]) => {
                let x = self.real(x);
                let d = self.reg();
                let t = match b {
                    Builtin::IntStep => Test::IntStep,
                    Builtin::IsInf => Test::IsInf,
                    _ => Test::IsNan,
                };
                self.op(Op::RTest(t, d, x));
                Opd::I(d)
            }
            _ => return None,
        })
    }
}

// ------------------------------------------------------------------------------------------
// Forward execution
// ------------------------------------------------------------------------------------------

/// Most arguments of a log density in a kernel (variate and parameters).
const MAX_LPDF_ARGS: usize = 8;

/// Tag of a recorded address that is a tape slot (else a kernel cell).
const TAPE_BIT: u32 = 1 << 31;
/// A recorded address of a constant (no adjoint).
const NONE: u32 = u32::MAX;

/// The buffers kernels record into, kept in the [`Tape`] and reused between evaluations.
#[derive(Default, Debug)]
pub struct KernelBuffers {
    /// Executed segment ids of all kernel runs of this evaluation.
    segs: Vec<u32>,
    parts: Vec<f64>,
    addrs: Vec<u32>,
    /// Inputs `(cell, slot)` and outputs `(cell, first slot, count)`, flattened.
    io: Vec<u32>,
    /// Scratch memory of the running kernel (real cells, flags, registers, container flags).
    m: Vec<f64>,
    act: Vec<u8>,
    iv: Vec<i64>,
    cact: Vec<u8>,
    dflag: Vec<u8>,
    terms: Vec<(f64, bool)>,
    /// Adjoints of kernel cells during the reverse sweep.
    adj: Vec<f64>,
    /// One entry per kernel node on the tape.
    recs: Vec<KernelRecord>,
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
struct KernelRecord {
    kernel: Arc<Kernel>,
    segs: (u32, u32),
    parts_end: u32,
    addrs_end: u32,
    inputs: (u32, u32),
    outputs: (u32, u32),
    n_mem: u32,
    /// First tape slot of the run's parameter-dependent log density terms.
    terms_out: u32,
}

/// Runtime view of a container.
#[derive(Clone, Copy)]
enum View<'a> {
    Const(&'a [f64]),
    Var(&'a Slots),
    /// A written container held in kernel memory from this cell.
    Mem(usize),
}

#[derive(Clone, Copy)]
struct CRt<'a> {
    view: View<'a>,
    arr: &'a [usize],
    base: Base,
    len: usize,
}

/// Control flow inside a kernel.
#[derive(PartialEq, Eq)]
enum KFlow {
    Normal,
    Break,
    Continue,
}

/// The kernel failed (index out of range, overflow, `reject`): rerun with the interpreter.
struct Stop;

struct Rt<'r, 'v> {
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
}

#[inline(always)]
fn idx1(i: i64, len: usize) -> Result<usize, Stop> {
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
        let read = |m: &[f64], c: u32, o: usize| -> f64 {
            match crt[c as usize].view {
                View::Const(xs) => xs[o],
                View::Var(sl) => val[sl.at(o) as usize],
                View::Mem(b) => m[b + o],
            }
        };
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
                cact[c] |= flag(act, cact, $dl);
                if rec {
                    addrs.push((b + o) as u32);
                }
            }};
        }
        let (var, lo, hi) = match lp {
            Some((v, lo, hi)) => (Some(v as usize), lo, hi),
            None => (None, 0, 0),
        };
        let mut it = lo;
        loop {
            if let Some(v) = var {
                iv[v] = it;
            }
            if mark {
                seg_trace.push(id);
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
                        act[d as usize] = flag(act, cact, dl);
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
                        m[d as usize] = read(m, c, o);
                    }
                    Op::LdG { d, c, ix, n } => {
                        let o = offset(iv, c, ix, n)?;
                        m[d as usize] = read(m, c, o);
                    }
                    Op::LdI1 { d, c, i } => {
                        let o = idx1(iv[i as usize], crt[c as usize].len)?;
                        iv[d as usize] = read(m, c, o) as i64;
                    }
                    Op::LdI { d, c, ix, n } => {
                        let o = offset(iv, c, ix, n)?;
                        iv[d as usize] = read(m, c, o) as i64;
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
                        iv[d as usize] = r.ok_or(Stop)?;
                    }
                    Op::INeg(d, x) => {
                        iv[d as usize] = iv[x as usize].checked_neg().ok_or(Stop)?;
                    }
                    Op::IAbs(d, x) => {
                        iv[d as usize] = iv[x as usize].checked_abs().ok_or(Stop)?;
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
            it += 1;
        }
        Ok(())
    }
}

/// Does a value have the type the kernel was compiled for?
fn matches_bind(k: &Kernel, v: &Value, bind: Bind) -> bool {
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
/// `_lpdf` name (then `~` keeps constants).
pub fn run(
    k: &Arc<Kernel>,
    env: &mut [Value],
    globals: &[Value],
    tape: &mut Tape,
    target: (&mut f64, &mut Vec<u32>),
    normalised: bool,
) -> bool {
    let value_of = |src: Src| -> Option<&Value> {
        match src {
            Src::Local(s) => env.get(s as usize),
            Src::Global(g) => globals.get(g as usize),
        }
    };
    // Check types, lay out memory, build container views.
    let mut n_mem = k.n_cells as usize;
    let mut crt: Vec<CRt> = Vec::with_capacity(k.conts.len());
    for v in &k.vars {
        let Some(val) = value_of(v.src) else {
            return false;
        };
        if !matches_bind(k, val, v.bind) {
            return false;
        }
    }
    for d in &k.conts {
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
        crt.push(CRt {
            view,
            arr: &t.arr,
            base: t.base,
            len,
        });
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
    for (c, (d, r)) in k.conts.iter().zip(&crt).enumerate() {
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
            crt: &crt,
            val,
            segs: &mut kb.segs,
            parts: &mut kb.parts,
            addrs: &mut kb.addrs,
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
    drop(crt);
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
fn write_back(
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
) {
    let recording = tape.recording;
    let mut io_in: Vec<u32> = Vec::new();
    let mut io_out: Vec<u32> = Vec::new();
    // Inputs: parameter-dependent scalars and written containers as they were on entry.
    if recording {
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
                    t.data = Data::Var(Slots::range(out, n));
                    io_out.extend([mem_base as u32, out, n as u32]);
                } else {
                    match &mut t.data {
                        Data::Real(a) => Arc::make_mut(a).copy_from_slice(xs),
                        data => *data = Data::Real(Arc::new(xs.to_vec())),
                    }
                }
                mem_base += n;
            }
            Bind::C(_) => {}
            Bind::R(c) if v.written => {
                let x = m[c as usize];
                *cur = if act[c as usize] != 0 {
                    let out = tape.leaf(x);
                    io_out.extend([c, out, 1]);
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
    if recording && (!io_out.is_empty() || n_var > 0) {
        let i0 = kb.io.len() as u32;
        kb.io.extend_from_slice(&io_in);
        let i1 = kb.io.len() as u32;
        kb.io.extend_from_slice(&io_out);
        let i2 = kb.io.len() as u32;
        kb.recs.push(KernelRecord {
            kernel: k.clone(),
            segs: (s0 as u32, kb.segs.len() as u32),
            parts_end: kb.parts.len() as u32,
            addrs_end: kb.addrs.len() as u32,
            inputs: (i0, i1),
            outputs: (i1, i2),
            n_mem: n_mem as u32,
            terms_out: t_out,
        });
        let r = kb.recs.len() as u32 - 1;
        tape.push_kernel_node(r);
    } else {
        // Nothing downstream depends on this run: drop its trace.
        kb.segs.truncate(s0);
        kb.parts.truncate(p0);
        kb.addrs.truncate(a0);
    }
}

// ------------------------------------------------------------------------------------------
// Reverse sweep
// ------------------------------------------------------------------------------------------

/// The reverse sweep of kernel record `r`: adds the adjoints of its outputs, propagated
/// backwards through the recorded run, to the adjoints of its inputs (`adj`, by tape slot).
pub fn backward(kb: &mut KernelBuffers, r: u32, adj: &mut [f64]) {
    let rec = &kb.recs[r as usize];
    let k = &*rec.kernel;
    let ka = &mut kb.adj;
    ka.clear();
    ka.resize(rec.n_mem as usize, 0.0);
    for t in kb.io[rec.outputs.0 as usize..rec.outputs.1 as usize].chunks_exact(3) {
        let (c, s, n) = (t[0] as usize, t[1] as usize, t[2] as usize);
        for j in 0..n {
            ka[c + j] += adj[s + j];
        }
    }
    let parts = &kb.parts;
    let addrs = &kb.addrs;
    let mut pi = rec.parts_end as usize;
    let mut ai = rec.addrs_end as usize;
    for &sid in kb.segs[rec.segs.0 as usize..rec.segs.1 as usize]
        .iter()
        .rev()
    {
        for op in k.segs[sid as usize].rev.iter().rev() {
            match *op {
                ROp::Add(d, x, y) => {
                    let g = std::mem::take(&mut ka[d as usize]);
                    ka[x as usize] += g;
                    ka[y as usize] += g;
                }
                ROp::Sub(d, x, y) => {
                    let g = std::mem::take(&mut ka[d as usize]);
                    ka[x as usize] += g;
                    ka[y as usize] -= g;
                }
                ROp::P2(d, x, y) => {
                    pi -= 2;
                    let g = std::mem::take(&mut ka[d as usize]);
                    ka[x as usize] += parts[pi] * g;
                    ka[y as usize] += parts[pi + 1] * g;
                }
                ROp::P1(d, x) => {
                    pi -= 1;
                    let g = std::mem::take(&mut ka[d as usize]);
                    ka[x as usize] += parts[pi] * g;
                }
                ROp::Mov(d, x) => {
                    let g = std::mem::take(&mut ka[d as usize]);
                    ka[x as usize] += g;
                }
                ROp::Ld(d) => {
                    ai -= 1;
                    let a = addrs[ai];
                    let g = std::mem::take(&mut ka[d as usize]);
                    if a == NONE {
                    } else if a & TAPE_BIT != 0 {
                        adj[(a & !TAPE_BIT) as usize] += g;
                    } else {
                        ka[a as usize] += g;
                    }
                }
                ROp::Pn(d, a, n) => {
                    pi -= n as usize;
                    let g = std::mem::take(&mut ka[d as usize]);
                    let la = &k.largs[a as usize..(a + n) as usize];
                    for (j, &(c, _)) in la.iter().enumerate() {
                        ka[c as usize] += parts[pi + j] * g;
                    }
                }
                ROp::Target(x) => {
                    ai -= 1;
                    let a = addrs[ai];
                    if a != NONE {
                        ka[x as usize] += adj[(rec.terms_out + a) as usize];
                    }
                }
                ROp::St(s) => {
                    ai -= 1;
                    let a = addrs[ai] as usize;
                    let g = std::mem::take(&mut ka[a]);
                    ka[s as usize] += g;
                }
            }
        }
    }
    for p in kb.io[rec.inputs.0 as usize..rec.inputs.1 as usize].chunks_exact(2) {
        adj[p[1] as usize] += ka[p[0] as usize];
    }
}
