//! Compilation of a `for` loop into a [`Kernel`] (the compile pass): the loop body's
//! statements and expressions lowered to the flat instruction list. Part of [`super`].

use std::collections::{HashMap, HashSet};

use crate::syntax::ast::{AssignOp, BinOp};

use crate::distributions::Family;

use super::super::ir::{BaseEx, Builtin, Ex, IxEx, St, StKind};
use super::super::scalar::{B, U};
use super::super::value::{Data, Value};

use super::*;

/// Slots assigned anywhere in `st`.
pub(super) fn collect_written(st: &St, out: &mut HashSet<u32>) {
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
        StKind::Fast { plain, .. } | StKind::Fused { plain, .. } => collect_written(plain, out),
        _ => {}
    }
}

/// Compiles the `for` statement `st`, or `None` when it uses anything a kernel does not handle.
pub(super) fn compile(st: &St, env: &[Value], globals: &[Value]) -> Option<Kernel> {
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
    #[cfg_attr(not(feature = "jit"), allow(unused_mut))]
    let mut k = Kernel {
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
        #[cfg(feature = "jit")]
        jit: None,
    };
    // Always true of a compiled loop; the reverse sweep relies on it.
    if !k.cells_in_range() {
        return None;
    }
    #[cfg(feature = "jit")]
    {
        k.mark_fresh();
        k.jit = jit::compile(&k);
    }
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
        let mut s = std::mem::take(&mut self.cur);
        s.count_trace();
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
            StKind::Fast { plain, .. } | StKind::Fused { plain, .. } => self.stmt(plain),
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
                ..
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
            StKind::For {
                slot, lo, hi, body, ..
            } => {
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
