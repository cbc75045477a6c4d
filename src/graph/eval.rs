//! The interpreter: executes lowered statements against a [`Tape`], building the log density
//! (with the tape recording) or only its value (recording off).

use std::sync::Arc;

use crate::distributions::{self, Arg, Family};
use crate::inference::rng::StreamRng;
use crate::syntax::Span;
use crate::syntax::ast::{AssignOp, BinOp};

use super::ir::{BaseEx, Builtin, DeclTy, Ex, FuncIr, IxEx, PArg, St, StKind};
use super::ops::{
    concat, dense, map_binary, map_unary, matmul, permute, reduce, to_real, transpose,
};
use super::scalar::{B, U};
use super::tape::{S, Tape};
use super::value::{
    Base, Data, Fault, Ix, R, Tensor, Value, gather, select, single_offset, to_slot,
};

mod multivariate;

/// A fault with the span of the statement where it happened.
#[derive(Clone, Debug)]
pub struct Located {
    pub fault: Fault,
    pub span: Span,
}

/// Which function of a family to evaluate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The log density; `true` drops constant terms (as `~`).
    Density(bool),
    /// The log CDF; `true` for the complementary CDF.
    Cdf(bool),
}

/// Control flow after a statement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    Normal,
    Break,
    Continue,
    Return,
}

/// The state of one evaluation.
pub struct Ctx<'a> {
    /// Data and transformed data.
    pub globals: &'a [Value],
    /// Parameters, transformed parameters, locals, loop variables, by slot.
    pub env: Vec<Value>,
    pub tape: &'a mut Tape,
    /// Constant part of the log density.
    pub target_c: f64,
    /// Slots whose values are summed into the log density.
    pub target_v: Vec<u32>,
    /// Random numbers for `_rng` functions (generated quantities only).
    pub rng: Option<&'a mut StreamRng>,
    /// User-defined functions.
    pub funcs: &'a [FuncIr],
    /// The value of the last `return` executed.
    ret: Option<Value>,
    /// Current depth of user-defined function calls.
    depth: usize,
    /// Inside a user density called as `foo_lpdf(…)`: `_lupdf` and `~` keep their constants.
    normalised: bool,
    /// When `Some`, collects the pointwise log-likelihood (`graph::pointwise`).
    pub pointwise: Option<Vec<f64>>,
    /// Run `for` loops as compiled scalar kernels where possible (see [`Ctx::use_fast_path`]).
    pub fast_loops: bool,
}

/// Maximum nesting of user-defined function calls (deeper recursion is reported as an error
/// instead of overflowing the stack).
const MAX_CALL_DEPTH: usize = 64;

fn as_int(v: &Value, what: &str) -> R<i64> {
    v.as_int()
        .ok_or_else(|| Fault::fatal(format!("{what} must be an integer, found {}", v.describe())))
}

fn truthy(tape: &Tape, v: &Value) -> R<bool> {
    match v.as_s() {
        Some(s) => Ok(tape.value(s) != 0.0),
        None => Err(Fault::fatal(format!(
            "condition must be a scalar, found {}",
            v.describe()
        ))),
    }
}

impl<'a> Ctx<'a> {
    /// A fresh context with `n_slots` local slots.
    pub fn new(globals: &'a [Value], n_slots: usize, tape: &'a mut Tape) -> Self {
        Ctx {
            globals,
            env: vec![Value::Int(0); n_slots],
            tape,
            target_c: 0.0,
            target_v: Vec::new(),
            rng: None,
            funcs: &[],
            ret: None,
            depth: 0,
            normalised: false,
            pointwise: None,
            fast_loops: true,
        }
    }

    /// Whether `for` loops may run as compiled scalar kernels (`super::kernel`). The single
    /// place to veto the fast path: kernels evaluate `~` and `target +=` inside loops without
    /// passing through [`Ctx::exec`] per statement, so anything that must observe individual
    /// statements as the interpreter runs them (e.g. recording a pointwise log-likelihood per
    /// sampling statement) must make this return `false` while it is active.
    #[inline]
    pub fn use_fast_path(&self) -> bool {
        self.fast_loops && self.pointwise.is_none()
    }

    /// The text of `print`/`reject` arguments: strings as written, values as [`Ctx::show`]s them.
    fn print_text(&mut self, args: &[PArg]) -> R<String> {
        let mut msg = String::new();
        for a in args {
            match a {
                PArg::Str(s) => msg.push_str(s),
                PArg::Ex(e) => {
                    let v = self.eval(e)?;
                    msg.push_str(&self.show(&v));
                }
            }
        }
        Ok(msg)
    }

    /// The current value of the log density.
    pub fn target_value(&self) -> f64 {
        self.target_c
            + self
                .target_v
                .iter()
                .map(|&i| self.tape.val[i as usize])
                .sum::<f64>()
    }

    /// Adds a scalar (or the sum of a container) to the log density.
    pub fn add_target(&mut self, v: &Value) {
        let n = v.num_elements();
        for i in 0..n {
            match v.elem(i) {
                S::C(x) => self.target_c += x,
                S::V(q) => self.target_v.push(q),
            }
        }
    }

    /// Executes statements in order.
    pub fn exec_all(&mut self, sts: &[St]) -> Result<Flow, Located> {
        for st in sts {
            let f = self.exec(st)?;
            if f != Flow::Normal {
                return Ok(f);
            }
        }
        Ok(Flow::Normal)
    }

    /// Executes one statement.
    pub fn exec(&mut self, st: &St) -> Result<Flow, Located> {
        let loc = |fault: Fault| Located {
            fault,
            span: st.span,
        };
        match &st.kind {
            StKind::Decl { slot, ty, init, .. } => {
                let v = self.declare(ty, init.as_ref()).map_err(loc)?;
                self.env[*slot as usize] = v;
            }
            StKind::Assign { slot, idx, op, rhs } => {
                self.assign(*slot, idx, *op, rhs).map_err(loc)?;
            }
            StKind::Tilde {
                lhs,
                family,
                args,
                trunc,
            } => {
                let mut vals = Vec::with_capacity(args.len() + 1);
                vals.push(self.eval(lhs).map_err(loc)?);
                for a in args {
                    vals.push(self.eval(a).map_err(loc)?);
                }
                let propto = !self.normalised;
                let s = self.lpdf(*family, &vals, propto).map_err(loc)?;
                self.add_target(&Value::from_s(s));
                if self.pointwise.is_some() {
                    self.observe_tilde(*family, &vals, trunc.as_ref())
                        .map_err(loc)?;
                }
                if let Some((lo, hi)) = trunc {
                    self.truncate(*family, &mut vals, lo.as_ref(), hi.as_ref())
                        .map_err(loc)?;
                }
            }
            StKind::TargetPlus(e) => {
                let v = self.eval(e).map_err(loc)?;
                self.add_target(&v);
                if self.pointwise.is_some() {
                    self.observe_target(e).map_err(loc)?;
                }
            }
            StKind::For { slot, lo, hi, body } => {
                let lo = as_int(&self.eval(lo).map_err(loc)?, "loop bound").map_err(loc)?;
                let hi = as_int(&self.eval(hi).map_err(loc)?, "loop bound").map_err(loc)?;
                for i in lo..=hi {
                    self.env[*slot as usize] = Value::Int(i);
                    match self.exec(body)? {
                        Flow::Break => break,
                        Flow::Return => return Ok(Flow::Return),
                        _ => {}
                    }
                }
            }
            StKind::ForEach { slot, coll, body } => {
                let c = self.eval(coll).map_err(loc)?;
                let (arr, base) = c.shape();
                let n = if let Some(&n) = arr.first() {
                    n
                } else {
                    base.size()
                };
                let t = match &c {
                    Value::T(t) => t.clone(),
                    _ => {
                        return Err(loc(Fault::fatal(
                            "foreach loop needs an array, vector or matrix",
                        )));
                    }
                };
                for i in 0..n {
                    let item = if t.arr.is_empty() {
                        Value::from_s(t.data.at(i))
                    } else {
                        let (a2, b2, offs) =
                            select(&t.arr, t.base, &[Ix::One(i as i64 + 1)]).map_err(loc)?;
                        gather(&t, a2, b2, &offs)
                    };
                    let item = match (&t.data, item) {
                        (Data::Int(_), Value::Real(x)) => Value::Int(x as i64),
                        (_, it) => it,
                    };
                    self.env[*slot as usize] = item;
                    match self.exec(body)? {
                        Flow::Break => break,
                        Flow::Return => return Ok(Flow::Return),
                        _ => {}
                    }
                }
            }
            StKind::While { cond, body } => loop {
                let c = self.eval(cond).map_err(loc)?;
                if !truthy(self.tape, &c).map_err(loc)? {
                    break;
                }
                match self.exec(body)? {
                    Flow::Break => break,
                    Flow::Return => return Ok(Flow::Return),
                    _ => {}
                }
            },
            StKind::If {
                cond,
                then,
                otherwise,
            } => {
                let c = self.eval(cond).map_err(loc)?;
                if truthy(self.tape, &c).map_err(loc)? {
                    return self.exec(then);
                } else if let Some(o) = otherwise {
                    return self.exec(o);
                }
            }
            StKind::Block(sts) => return self.exec_all(sts),
            StKind::Fast { cache, plain } => {
                if self.use_fast_path()
                    && let Some(k) = cache.get(plain, &self.env, self.globals)
                    && super::kernel::run(
                        &k,
                        &mut self.env,
                        self.globals,
                        self.tape,
                        (&mut self.target_c, &mut self.target_v),
                        self.normalised,
                    )
                {
                    return Ok(Flow::Normal);
                }
                return self.exec(plain);
            }
            StKind::Break => return Ok(Flow::Break),
            StKind::Continue => return Ok(Flow::Continue),
            StKind::Reject(args) => {
                let msg = self.print_text(args).map_err(loc)?;
                return Err(loc(Fault::domain(msg)));
            }
            StKind::Print(args) => {
                let msg = self.print_text(args).map_err(loc)?;
                eprintln!("{msg}");
            }
            StKind::Return(e) => {
                self.ret = Some(match e {
                    Some(e) => self.eval(e).map_err(loc)?,
                    None => Value::Int(0),
                });
                return Ok(Flow::Return);
            }
            StKind::ExprStmt(e) => {
                self.eval(e).map_err(loc)?;
            }
        }
        Ok(Flow::Normal)
    }

    /// Renders a value for `reject` messages.
    fn show(&self, v: &Value) -> String {
        match v {
            Value::Int(i) => i.to_string(),
            _ => {
                let xs = v.values(self.tape);
                if xs.len() == 1 && !matches!(v, Value::T(_)) {
                    xs[0].to_string()
                } else {
                    let s: Vec<String> = xs.iter().map(|x| x.to_string()).collect();
                    format!("[{}]", s.join(", "))
                }
            }
        }
    }

    /// Evaluates the sizes of a declared type: (int?, array dims, element shape).
    pub fn eval_type(&mut self, ty: &DeclTy) -> R<(Vec<usize>, Base)> {
        let size = |c: &mut Self, e: &Ex| -> R<usize> {
            let n = as_int(&c.eval(e)?, "size")?;
            if n < 0 {
                return Err(Fault::fatal(format!(
                    "size must be non-negative, found {n}"
                )));
            }
            Ok(n as usize)
        };
        let mut arr = Vec::with_capacity(ty.arr.len());
        for e in &ty.arr {
            arr.push(size(self, e)?);
        }
        let base = match &ty.base {
            BaseEx::Scalar => Base::Scalar,
            BaseEx::Vector(n) => Base::Vector(size(self, n)?),
            BaseEx::RowVector(n) => Base::RowVector(size(self, n)?),
            BaseEx::Matrix(r, c) => Base::Matrix(size(self, r)?, size(self, c)?),
        };
        Ok((arr, base))
    }

    fn declare(&mut self, ty: &DeclTy, init: Option<&Ex>) -> R<Value> {
        let (arr, base) = self.eval_type(ty)?;
        match init {
            Some(e) => {
                let v = self.eval(e)?;
                let v = if ty.int { v } else { to_real(v) };
                check_shape(&v, &arr, base, ty.int)?;
                Ok(v)
            }
            None => {
                let n = arr.iter().product::<usize>() * base.size();
                let data = if ty.int {
                    Data::Int(Arc::new(vec![0.0; n]))
                } else {
                    Data::Real(Arc::new(vec![f64::NAN; n]))
                };
                Ok(Value::from_tensor(Tensor { arr, base, data }))
            }
        }
    }

    fn eval_ixs(&mut self, idx: &[IxEx]) -> R<Vec<Ix>> {
        let mut out = Vec::with_capacity(idx.len());
        for i in idx {
            out.push(match i {
                IxEx::All => Ix::All,
                IxEx::Range(lo, hi) => {
                    let lo = match lo {
                        Some(e) => Some(as_int(&self.eval(e)?, "index")?),
                        None => None,
                    };
                    let hi = match hi {
                        Some(e) => Some(as_int(&self.eval(e)?, "index")?),
                        None => None,
                    };
                    Ix::Range(lo, hi)
                }
                IxEx::Single(e) => match self.eval(e)? {
                    Value::Int(i) => Ix::One(i),
                    Value::T(t)
                        if t.arr.len() == 1
                            && t.base == Base::Scalar
                            && matches!(t.data, Data::Int(_)) =>
                    {
                        Ix::Many(
                            (0..t.data.len())
                                .map(|i| match t.data.at(i) {
                                    S::C(x) => x as i64,
                                    S::V(_) => unreachable!("integer data"),
                                })
                                .collect(),
                        )
                    }
                    v => {
                        return Err(Fault::fatal(format!(
                            "index must be an integer or an integer array, found {}",
                            v.describe()
                        )));
                    }
                },
            });
        }
        Ok(out)
    }

    fn assign(&mut self, slot: u32, idx: &[IxEx], op: AssignOp, rhs: &Ex) -> R<()> {
        let mut v = self.eval(rhs)?;
        // Fast path: `x[i] = scalar` / `x[i, j] = scalar` with integer indices, no allocation.
        if op == AssignOp::Assign && !idx.is_empty() && idx.len() <= 4 && v.as_s().is_some() {
            let mut buf = [0i64; 4];
            let mut all_int = true;
            for (k, i) in idx.iter().enumerate() {
                match i {
                    IxEx::Single(ie) => match self.index_int(ie)? {
                        Value::Int(x) => buf[k] = x,
                        _ => {
                            all_int = false;
                            break;
                        }
                    },
                    _ => {
                        all_int = false;
                        break;
                    }
                }
            }
            if all_int {
                let tape = &mut *self.tape;
                if let Value::T(t) = &mut self.env[slot as usize]
                    && let Some(o) = single_offset(&t.arr, t.base, &buf[..idx.len()])
                {
                    let o = o?;
                    let s = v.as_s().expect("checked scalar");
                    match (&mut t.data, s) {
                        (Data::Var(ix), s) => ix[o] = to_slot(tape, s),
                        (Data::Real(xs), S::C(x)) => Arc::make_mut(xs)[o] = x,
                        (Data::Int(xs), S::C(x)) if matches!(v, Value::Int(_)) => {
                            Arc::make_mut(xs)[o] = x
                        }
                        (Data::Int(_), _) => {
                            return Err(Fault::fatal(format!(
                                "cannot assign a {} to an integer variable",
                                v.describe()
                            )));
                        }
                        (data @ Data::Real(_), S::V(q)) => {
                            let mut ix: Vec<u32> =
                                (0..data.len()).map(|i| to_slot(tape, data.at(i))).collect();
                            ix[o] = q;
                            *data = Data::Var(ix);
                        }
                    }
                    return Ok(());
                }
            }
        }
        let bop = match op {
            AssignOp::AddAssign => BinOp::Add,
            AssignOp::SubAssign => BinOp::Sub,
            AssignOp::MulAssign => BinOp::Mul,
            AssignOp::DivAssign => BinOp::Div,
            AssignOp::EltMulAssign => BinOp::EltMul,
            AssignOp::EltDivAssign => BinOp::EltDiv,
            AssignOp::Assign => BinOp::Add, // unused: no compound operation
        };
        // Fast path: `x += scalar` (an accumulator in a loop) on a scalar variable; the same
        // steps as the general path below, without evaluating an empty index list or copying.
        if op != AssignOp::Assign
            && idx.is_empty()
            && !matches!(self.env[slot as usize], Value::T(_))
            && !matches!(v, Value::T(_))
        {
            let cur = self.env[slot as usize].clone();
            let r = self.binop(bop, &cur, &v)?;
            let r = if !cur.is_int() {
                to_real(r)
            } else if !r.is_int() {
                return Err(Fault::fatal(format!(
                    "cannot assign a {} to an integer variable",
                    r.describe()
                )));
            } else {
                r
            };
            self.env[slot as usize] = r;
            return Ok(());
        }
        let ixs = self.eval_ixs(idx)?;
        if op != AssignOp::Assign {
            let cur = self.index_value(&self.env[slot as usize].clone(), &ixs)?;
            v = self.binop(bop, &cur, &v)?;
        }
        let target_int = self.env[slot as usize].is_int();
        if !target_int {
            v = to_real(v);
        } else if !v.is_int() {
            return Err(Fault::fatal(format!(
                "cannot assign a {} to an integer variable",
                v.describe()
            )));
        }
        if ixs.is_empty() {
            let cur = &self.env[slot as usize];
            if let Value::T(t) = cur {
                check_shape(&v, &t.arr, t.base, target_int)?;
            } else if matches!(v, Value::T(_)) {
                return Err(Fault::fatal(format!(
                    "cannot assign a {} to a {}",
                    v.describe(),
                    cur.describe()
                )));
            }
            self.env[slot as usize] = v;
            return Ok(());
        }
        let (arr, base) = {
            let (a, b) = self.env[slot as usize].shape();
            (a.to_vec(), b)
        };
        if !matches!(self.env[slot as usize], Value::T(_)) {
            return Err(Fault::fatal("cannot index a scalar"));
        }
        // Fast path: one element.
        let single: Option<Vec<i64>> = ixs
            .iter()
            .map(|i| match i {
                Ix::One(k) => Some(*k),
                _ => None,
            })
            .collect();
        let offs = match single.as_deref().and_then(|s| single_offset(&arr, base, s)) {
            Some(o) => vec![o?],
            None => {
                let (oa, ob, offs) = select(&arr, base, &ixs)?;
                let (va, vb) = v.shape();
                if v.num_elements() != offs.len()
                    || (matches!(v, Value::T(_)) && (va != oa.as_slice() || vb.size() != ob.size()))
                {
                    return Err(Fault::fatal(format!(
                        "size mismatch in assignment: the indexed left-hand side has {} element(s), the right-hand side is {}",
                        offs.len(),
                        v.describe()
                    )));
                }
                offs
            }
        };
        if offs.len() == 1 && matches!(v, Value::T(_)) {
            return Err(Fault::fatal(format!(
                "cannot assign a {} to a single element",
                v.describe()
            )));
        }
        let rhs_var = v.is_var();
        let tape = &mut *self.tape;
        let Value::T(t) = &mut self.env[slot as usize] else {
            unreachable!("checked to be a tensor above")
        };
        if rhs_var && !t.data.is_var() {
            // Promote the container to tape slots.
            let ix: Vec<u32> = (0..t.data.len())
                .map(|i| to_slot(tape, t.data.at(i)))
                .collect();
            t.data = Data::Var(ix);
        }
        match &mut t.data {
            Data::Var(ix) => {
                for (k, &o) in offs.iter().enumerate() {
                    ix[o] = to_slot(tape, v.elem(k));
                }
            }
            Data::Real(xs) | Data::Int(xs) => {
                let xs = Arc::make_mut(xs);
                for (k, &o) in offs.iter().enumerate() {
                    xs[o] = tape.value(v.elem(k));
                }
            }
        }
        Ok(())
    }

    /// Indexes `v` by evaluated indices.
    fn index_value(&self, v: &Value, ixs: &[Ix]) -> R<Value> {
        if ixs.is_empty() {
            return Ok(v.clone());
        }
        let Value::T(t) = v else {
            return Err(Fault::fatal("cannot index a scalar"));
        };
        let (arr, base, offs) = select(&t.arr, t.base, ixs)?;
        Ok(gather(t, arr, base, &offs))
    }

    fn var_ref(&self, e: &Ex) -> Option<&Value> {
        match e {
            Ex::Local(i) => Some(&self.env[*i as usize]),
            Ex::Global(i) => Some(&self.globals[*i as usize]),
            _ => None,
        }
    }

    /// Evaluates an expression. The common scalar cases (literals, variables, arithmetic,
    /// single-element indexing) are handled here with a small stack frame; the rest go to
    /// [`Ctx::eval_slow`].
    pub fn eval(&mut self, e: &Ex) -> R<Value> {
        match e {
            Ex::Int(i) => Ok(Value::Int(*i)),
            Ex::Real(x) => Ok(Value::Real(*x)),
            Ex::Local(i) => Ok(self.env[*i as usize].clone()),
            Ex::Global(i) => Ok(self.globals[*i as usize].clone()),
            Ex::Bin(op, a, b) => {
                let a = match self.leaf(a) {
                    Some(v) => v,
                    None => self.eval(a)?,
                };
                let b = match self.leaf(b) {
                    Some(v) => v,
                    None => self.eval(b)?,
                };
                self.binop(*op, &a, &b)
            }
            Ex::Index(base, idx) if idx.len() <= 4 && self.var_ref(base).is_some() => {
                match self.index_fast(base, idx)? {
                    Some(v) => Ok(v),
                    None => self.eval_slow(e),
                }
            }
            Ex::Call(Builtin::Unary(u), args) if args.len() == 1 => {
                let v = match self.leaf(&args[0]) {
                    Some(v) => v,
                    None => self.eval(&args[0])?,
                };
                Ok(map_unary(self.tape, *u, &v))
            }
            _ => self.eval_slow(e),
        }
    }

    /// The value of a leaf expression (a literal or a variable), which has no side effects and
    /// cannot fail; `None` for any other expression. Lets [`Ctx::eval`] take the operands of
    /// arithmetic without a recursive call each.
    #[inline(always)]
    fn leaf(&self, e: &Ex) -> Option<Value> {
        match e {
            Ex::Int(i) => Some(Value::Int(*i)),
            Ex::Real(x) => Some(Value::Real(*x)),
            Ex::Local(i) => Some(self.env[*i as usize].clone()),
            Ex::Global(i) => Some(self.globals[*i as usize].clone()),
            _ => None,
        }
    }

    /// An integer index expression evaluated without recursion when it is an integer literal,
    /// an integer variable, or `a ± b` of those (the `x[t - 1]` of scalar loops); otherwise
    /// (or on overflow, which [`Ctx::eval`] reports) through [`Ctx::eval`].
    #[inline(always)]
    fn index_int(&mut self, e: &Ex) -> R<Value> {
        let int_leaf = |c: &Self, e: &Ex| -> Option<i64> {
            match e {
                Ex::Int(i) => Some(*i),
                Ex::Local(i) => match c.env[*i as usize] {
                    Value::Int(v) => Some(v),
                    _ => None,
                },
                _ => None,
            }
        };
        let quick = match e {
            Ex::Bin(BinOp::Sub, a, b) => int_leaf(self, a)
                .zip(int_leaf(self, b))
                .and_then(|(x, y)| x.checked_sub(y)),
            Ex::Bin(BinOp::Add, a, b) => int_leaf(self, a)
                .zip(int_leaf(self, b))
                .and_then(|(x, y)| x.checked_add(y)),
            _ => int_leaf(self, e),
        };
        match quick {
            Some(i) => Ok(Value::Int(i)),
            None => self.eval(e),
        }
    }

    /// `x[i, j]` with every index a single integer on a variable: the element, without copying
    /// `x`; `None` when the indices are not of that form.
    fn index_fast(&mut self, base: &Ex, idx: &[IxEx]) -> R<Option<Value>> {
        let mut buf = [0i64; 4];
        for (k, i) in idx.iter().enumerate() {
            match i {
                IxEx::Single(ie) => match self.index_int(ie)? {
                    Value::Int(v) => buf[k] = v,
                    _ => return Ok(None),
                },
                _ => return Ok(None),
            }
        }
        let Some(Value::T(t)) = self.var_ref(base) else {
            return Ok(None);
        };
        Ok(match single_offset(&t.arr, t.base, &buf[..idx.len()]) {
            Some(o) => {
                let o = o?;
                Some(match &t.data {
                    Data::Int(x) => Value::Int(x[o] as i64),
                    Data::Real(x) => Value::Real(x[o]),
                    Data::Var(x) => Value::Var(x[o]),
                })
            }
            None => None,
        })
    }

    /// Evaluates the less common expression forms.
    #[inline(never)]
    fn eval_slow(&mut self, e: &Ex) -> R<Value> {
        Ok(match e {
            Ex::Int(i) => Value::Int(*i),
            Ex::Real(x) => Value::Real(*x),
            Ex::Global(i) => self.globals[*i as usize].clone(),
            Ex::Local(i) => self.env[*i as usize].clone(),
            Ex::Bin(op, a, b) => {
                let a = self.eval(a)?;
                let b = self.eval(b)?;
                self.binop(*op, &a, &b)?
            }
            Ex::Neg(a) => match self.eval(a)? {
                Value::Int(i) => Value::Int(
                    i.checked_neg()
                        .ok_or_else(|| Fault::fatal("integer overflow in unary `-`"))?,
                ),
                v => map_unary(self.tape, U::Neg, &v),
            },
            Ex::Not(a) => {
                let v = self.eval(a)?;
                Value::Int(!truthy(self.tape, &v)? as i64)
            }
            Ex::Call(b, args) => {
                let mut vals = Vec::with_capacity(args.len());
                for a in args {
                    vals.push(self.eval(a)?);
                }
                self.call(*b, &vals)?
            }
            Ex::Lpdf {
                family,
                propto,
                args,
            } => {
                let mut vals = Vec::with_capacity(args.len());
                for a in args {
                    vals.push(self.eval(a)?);
                }
                let propto = *propto && !self.normalised;
                Value::from_s(self.lpdf(*family, &vals, propto)?)
            }
            Ex::UserCall(fi, args) => {
                let funcs = self.funcs;
                let f = &funcs[*fi as usize];
                let mut vals = Vec::with_capacity(args.len());
                for a in args {
                    vals.push(self.eval(a)?);
                }
                self.call_user(f, vals)?
            }
            Ex::NormalisedUserCall(fi, args) => {
                let funcs = self.funcs;
                let f = &funcs[*fi as usize];
                let mut vals = Vec::with_capacity(args.len());
                for a in args {
                    vals.push(self.eval(a)?);
                }
                let outer = std::mem::replace(&mut self.normalised, true);
                let r = self.call_user(f, vals);
                self.normalised = outer;
                r?
            }
            Ex::Cdf {
                family,
                complement,
                args,
            } => {
                let mut vals = Vec::with_capacity(args.len());
                for a in args {
                    vals.push(self.eval(a)?);
                }
                Value::from_s(self.density(*family, &vals, Kind::Cdf(*complement))?)
            }
            Ex::Rng { family, args } => {
                let mut vals = Vec::with_capacity(args.len());
                for a in args {
                    vals.push(self.eval(a)?);
                }
                self.rng_draw(*family, &vals)?
            }
            Ex::MvLpdf {
                family,
                propto,
                args,
            } => {
                let mut vals = Vec::with_capacity(args.len());
                for a in args {
                    vals.push(self.eval(a)?);
                }
                Value::from_s(self.mv_density(*family, &vals, *propto)?)
            }
            Ex::MvRng { family, args } => {
                let mut vals = Vec::with_capacity(args.len());
                for a in args {
                    vals.push(self.eval(a)?);
                }
                self.mv_rng(*family, &vals)?
            }
            Ex::Index(base, idx) => {
                let ixs = self.eval_ixs(idx)?;
                match self.var_ref(base) {
                    Some(v) => self.index_value(v, &ixs)?,
                    None => {
                        let v = self.eval(base)?;
                        self.index_value(&v, &ixs)?
                    }
                }
            }
            Ex::Ternary(c, a, b) => {
                let c = self.eval(c)?;
                if truthy(self.tape, &c)? {
                    self.eval(a)?
                } else {
                    self.eval(b)?
                }
            }
            Ex::RowVec(items) => {
                let mut vals = Vec::with_capacity(items.len());
                for a in items {
                    vals.push(self.eval(a)?);
                }
                if vals.iter().all(|v| v.as_s().is_some()) {
                    let refs: Vec<&Value> = vals.iter().collect();
                    concat(self.tape, &refs, vec![], Base::RowVector(vals.len()))
                } else {
                    let refs: Vec<&Value> = vals.iter().collect();
                    append_row(self.tape, &refs)?
                }
            }
            Ex::Array(items) => {
                let mut vals = Vec::with_capacity(items.len());
                for a in items {
                    vals.push(self.eval(a)?);
                }
                let Some(first) = vals.first() else {
                    return Err(Fault::fatal("empty array expression"));
                };
                let (a0, b0) = {
                    let (a, b) = first.shape();
                    (a.to_vec(), b)
                };
                for v in &vals {
                    let (a, b) = v.shape();
                    if a != a0.as_slice() || b != b0 {
                        return Err(Fault::fatal(format!(
                            "array expression elements differ in shape: {} and {}",
                            first.describe(),
                            v.describe()
                        )));
                    }
                }
                let mut arr = vec![vals.len()];
                arr.extend(a0);
                let refs: Vec<&Value> = vals.iter().collect();
                concat(self.tape, &refs, arr, b0)
            }
            Ex::Transpose(a) => transpose(&self.eval(a)?)?,
        })
    }

    /// Calls a user-defined function in a fresh frame.
    fn call_user(&mut self, f: &FuncIr, vals: Vec<Value>) -> R<Value> {
        let Some(body) = &f.body else {
            return Err(Fault::fatal(format!(
                "function `{}` is declared but never defined",
                f.name
            )));
        };
        if vals.len() != f.params.len() {
            return Err(Fault::fatal(format!(
                "function `{}` expects {} argument(s), got {}",
                f.name,
                f.params.len(),
                vals.len()
            )));
        }
        if self.depth >= MAX_CALL_DEPTH {
            return Err(Fault::fatal(format!(
                "calls of user-defined functions nested more than {MAX_CALL_DEPTH} deep (recursion without a base case?)"
            )));
        }
        let frame = vec![Value::Int(0); f.n_slots as usize];
        let saved = std::mem::replace(&mut self.env, frame);
        for (v, &(slot, int)) in vals.into_iter().zip(&f.params) {
            self.env[slot as usize] = if int { v } else { to_real(v) };
        }
        let saved_ret = self.ret.take();
        self.depth += 1;
        let r = self.exec(body);
        self.depth -= 1;
        self.env = saved;
        let ret = std::mem::replace(&mut self.ret, saved_ret);
        match r {
            Err(l) => {
                // Name the function once per distinct frame (recursion would otherwise repeat
                // the prefix up to MAX_CALL_DEPTH times) and keep the innermost location.
                let prefix = format!("in function `{}`: ", f.name);
                let message = if l.fault.message.starts_with(&prefix) {
                    l.fault.message.clone()
                } else {
                    format!("{prefix}{}", l.fault.message)
                };
                Err(Fault::new(message, l.fault.recoverable)
                    .with_origin(l.fault.origin.unwrap_or(l.span)))
            }
            Ok(_) => match ret {
                Some(v) => Ok(if f.returns_int { v } else { to_real(v) }),
                None if f.void => Ok(Value::Int(0)),
                None => Err(Fault::fatal(format!(
                    "function `{}` ended without returning a value",
                    f.name
                ))),
            },
        }
    }

    /// Binary operator on values.
    #[inline]
    pub fn binop(&mut self, op: BinOp, a: &Value, b: &Value) -> R<Value> {
        // Integer index arithmetic and real scalar arithmetic: the inner loops of scalar models.
        if let (Value::Int(x), Value::Int(y)) = (a, b) {
            match op {
                BinOp::Add => {
                    if let Some(r) = x.checked_add(*y) {
                        return Ok(Value::Int(r));
                    }
                }
                BinOp::Sub => {
                    if let Some(r) = x.checked_sub(*y) {
                        return Ok(Value::Int(r));
                    }
                }
                _ => {}
            }
            return self.binop_slow(op, a, b);
        }
        if let (Some(x), Some(y)) = (a.as_s(), b.as_s())
            && !matches!((a, b), (Value::Int(_), Value::Int(_)))
        {
            let f = match op {
                BinOp::Add => B::Add,
                BinOp::Sub => B::Sub,
                BinOp::Mul | BinOp::EltMul => B::Mul,
                BinOp::Div | BinOp::EltDiv => B::Div,
                _ => return self.binop_slow(op, a, b),
            };
            let (v, dx, dy) = f.eval(self.tape.value(x), self.tape.value(y));
            return Ok(Value::from_s(self.tape.node(v, &[(x, dx), (y, dy)])));
        }
        self.binop_slow(op, a, b)
    }

    #[inline(never)]
    fn binop_slow(&mut self, op: BinOp, a: &Value, b: &Value) -> R<Value> {
        use BinOp::*;
        if let (Value::Int(x), Value::Int(y)) = (a, b) {
            let (x, y) = (*x, *y);
            let over = || Fault::fatal(format!("integer overflow in `{}`", op.symbol()));
            return Ok(match op {
                Add => Value::Int(x.checked_add(y).ok_or_else(over)?),
                Sub => Value::Int(x.checked_sub(y).ok_or_else(over)?),
                Mul => Value::Int(x.checked_mul(y).ok_or_else(over)?),
                Div | IntDiv => {
                    if y == 0 {
                        return Err(Fault::fatal("integer division by zero"));
                    }
                    Value::Int(x.checked_div(y).ok_or_else(over)?)
                }
                Mod => {
                    if y == 0 {
                        return Err(Fault::fatal("integer modulus by zero"));
                    }
                    Value::Int(x.checked_rem(y).ok_or_else(over)?)
                }
                Pow | EltPow => Value::Real((x as f64).powf(y as f64)),
                EltMul => Value::Int(x.checked_mul(y).ok_or_else(over)?),
                EltDiv => Value::Real(x as f64 / y as f64),
                Lt => Value::Int((x < y) as i64),
                Le => Value::Int((x <= y) as i64),
                Gt => Value::Int((x > y) as i64),
                Ge => Value::Int((x >= y) as i64),
                Eq => Value::Int((x == y) as i64),
                Ne => Value::Int((x != y) as i64),
                And => Value::Int((x != 0 && y != 0) as i64),
                Or => Value::Int((x != 0 || y != 0) as i64),
                LeftDiv => return Err(Fault::fatal("`\\` needs matrix operands")),
            });
        }
        let scalars = a.as_s().zip(b.as_s());
        match op {
            Lt | Le | Gt | Ge | Eq | Ne | And | Or => {
                let Some((x, y)) = scalars else {
                    return Err(Fault::fatal(format!(
                        "`{}` needs scalar operands, found {} and {}",
                        op.symbol(),
                        a.describe(),
                        b.describe()
                    )));
                };
                let (x, y) = (self.tape.value(x), self.tape.value(y));
                let r = match op {
                    Lt => x < y,
                    Le => x <= y,
                    Gt => x > y,
                    Ge => x >= y,
                    Eq => x == y,
                    Ne => x != y,
                    And => x != 0.0 && y != 0.0,
                    _ => x != 0.0 || y != 0.0,
                };
                Ok(Value::Int(r as i64))
            }
            IntDiv | Mod => Err(Fault::fatal(format!(
                "`{}` needs integer operands, found {} and {}",
                op.symbol(),
                a.describe(),
                b.describe()
            ))),
            Add => map_binary(self.tape, B::Add, a, b, "+"),
            Sub => map_binary(self.tape, B::Sub, a, b, "-"),
            EltMul => map_binary(self.tape, B::Mul, a, b, ".*"),
            EltDiv => map_binary(self.tape, B::Div, a, b, "./"),
            Pow | EltPow => map_binary(self.tape, B::Pow, a, b, op.symbol()),
            Mul => {
                if a.as_s().is_some() || b.as_s().is_some() {
                    map_binary(self.tape, B::Mul, a, b, "*")
                } else {
                    matmul(self.tape, a, b)
                }
            }
            Div => {
                if b.as_s().is_some() {
                    map_binary(self.tape, B::Div, a, b, "/")
                } else {
                    Err(Fault::fatal(format!(
                        "division of {} by {} is not supported; use `./` for elementwise division",
                        a.describe(),
                        b.describe()
                    )))
                }
            }
            LeftDiv => Err(Fault::fatal(
                "matrix left division `\\` is not supported yet",
            )),
        }
    }

    /// A distribution's log density as one tape node holding its partials.
    pub fn lpdf(&mut self, family: Family, vals: &[Value], propto: bool) -> R<S> {
        self.density(family, vals, Kind::Density(propto))
    }

    /// A log density, log CDF or log CCDF as one tape node holding its partials.
    pub fn density(&mut self, family: Family, vals: &[Value], kind: Kind) -> R<S> {
        let sig = family.sig();
        // Built only for error messages (no allocation on the success path).
        let fname = || match kind {
            Kind::Density(_) => distributions::args::function_name(sig),
            Kind::Cdf(false) => format!("{}_lcdf", sig.name),
            Kind::Cdf(true) => format!("{}_lccdf", sig.name),
        };
        if vals.len() != sig.params.len() + 1 {
            return Err(Fault::fatal(format!(
                "{} expects {} arguments, got {}",
                fname(),
                sig.params.len() + 1,
                vals.len()
            )));
        }
        // Gather argument values; vector lengths must agree. Copies are made only of variable
        // vectors whose slots are not contiguous (`copies`, by argument position).
        let mut len: Option<usize> = None;
        let mut copies: Vec<(usize, Vec<f64>)> = Vec::new();
        for (a, v) in vals.iter().enumerate() {
            if let Value::T(t) = v {
                let n = t.data.len();
                if let Some(m) = len
                    && m != n
                {
                    return Err(Fault::fatal(format!(
                        "{}: size mismatch between vector arguments ({m} and {n} elements)",
                        fname()
                    )));
                }
                len = Some(n);
                // Slots of a fresh vector node are contiguous: read them in place.
                if let Data::Var(ix) = &t.data
                    && !is_contiguous(ix)
                {
                    copies.push((a, ix.iter().map(|&i| self.tape.val[i as usize]).collect()));
                }
            }
        }
        // Arguments and their variable flags, on the stack for the usual few arguments (a
        // scalar `y ~ normal(mu, sigma)` inside a loop then allocates nothing here).
        const ON_STACK: usize = 8;
        let mut args_stack = [Arg::Scalar(0.0); ON_STACK];
        let mut var_stack = [false; ON_STACK];
        let mut args_heap: Vec<Arg> = Vec::new();
        let mut var_heap: Vec<bool> = Vec::new();
        let tape = &*self.tape;
        for (a, v) in vals.iter().enumerate() {
            let arg = match v {
                Value::T(t) => match (&t.data, copies.iter().find(|(b, _)| *b == a)) {
                    (_, Some((_, xs))) => Arg::Vector(xs),
                    (Data::Real(xs) | Data::Int(xs), None) => Arg::Vector(xs),
                    (Data::Var(ix), None) => {
                        let start = ix.first().map_or(0, |&i| i as usize);
                        Arg::Vector(&tape.val[start..start + ix.len()])
                    }
                },
                s => Arg::Scalar(tape.value(s.as_s().expect("non-tensor is scalar"))),
            };
            if vals.len() <= ON_STACK {
                args_stack[a] = arg;
                var_stack[a] = v.is_var();
            } else {
                args_heap.push(arg);
                var_heap.push(v.is_var());
            }
        }
        let (args, is_var): (&[Arg], &[bool]) = if vals.len() <= ON_STACK {
            (&args_stack[..vals.len()], &var_stack[..vals.len()])
        } else {
            (&args_heap, &var_heap)
        };
        // Value-only path: partials are not needed, and a normalised density (or CDF) does not
        // depend on the flags, so no partials are computed; `~` keeps the flags because the
        // dropped constant terms depend on them.
        let no_vars = [false; 8];
        let flags: &[bool] = if !self.tape.recording
            && !matches!(kind, Kind::Density(true))
            && is_var.len() <= no_vars.len()
        {
            &no_vars[..is_var.len()]
        } else {
            is_var
        };
        let term = match kind {
            Kind::Density(propto) => distributions::log_density(family, args, flags, propto),
            Kind::Cdf(complement) => distributions::log_cdf(family, args, flags, complement),
        }
        .map_err(|e| Fault::domain(e.to_string()))?;
        if term.value.is_nan() {
            return Err(Fault::domain(format!("{}: log density is NaN", fname())));
        }
        if !is_var.iter().any(|&b| b) {
            return Ok(S::C(term.value));
        }
        if !self.tape.recording {
            return Ok(S::V(self.tape.leaf(term.value)));
        }
        let base = self.tape.entries_base();
        let out = self.tape.leaf(term.value);
        let mut k = 0;
        for (v, p) in vals.iter().zip(&term.partials) {
            match v {
                Value::Var(i) => {
                    self.tape.entry(*i, p[0]);
                    k += 1;
                }
                Value::T(t) if matches!(t.data, Data::Var(_)) => {
                    let Data::Var(ix) = &t.data else {
                        unreachable!("matched above")
                    };
                    for (&i, &d) in ix.iter().zip(p) {
                        self.tape.entry(i, d);
                    }
                    k += ix.len();
                }
                _ => {}
            }
        }
        self.tape.finish(out, 1, k, base);
        Ok(S::V(out))
    }

    /// Subtracts the truncation normaliser of `y ~ family(θ) T[lo, hi]` (Stan reference manual,
    /// "Truncated distributions"): log(F(hi) − F(lo)), log(1 − F(lo)) or log F(hi). A variate
    /// outside [lo, hi] makes the log density −∞. Parameters must be scalars; a vector variate
    /// subtracts the normaliser once per element.
    fn truncate(
        &mut self,
        family: Family,
        vals: &mut [Value],
        lo: Option<&Ex>,
        hi: Option<&Ex>,
    ) -> R<()> {
        if vals[1..].iter().any(|v| v.as_s().is_none()) {
            return Err(Fault::fatal(
                "truncation with vector parameters is not supported yet; use scalar parameters",
            ));
        }
        let lo = lo.map(|e| self.eval(e)).transpose()?;
        let hi = hi.map(|e| self.eval(e)).transpose()?;
        let n = vals[0].num_elements();
        let ys = vals[0].values(self.tape);
        let bound = |v: &Option<Value>| -> R<Option<S>> {
            match v {
                None => Ok(None),
                Some(v) => v.as_s().map(Some).ok_or_else(|| {
                    Fault::fatal(format!(
                        "truncation bounds must be scalars, found {}",
                        v.describe()
                    ))
                }),
            }
        };
        let (lo, hi) = (bound(&lo)?, bound(&hi)?);
        for &y in &ys {
            if lo.is_some_and(|l| y < self.tape.value(l))
                || hi.is_some_and(|h| y > self.tape.value(h))
            {
                self.target_c = f64::NEG_INFINITY;
                return Ok(());
            }
        }
        let mut at = |c: &mut Self, b: S, complement: bool| -> R<Value> {
            vals[0] = Value::from_s(b);
            Ok(Value::from_s(c.density(
                family,
                vals,
                Kind::Cdf(complement),
            )?))
        };
        let norm = match (lo, hi) {
            (Some(l), Some(h)) => {
                let fh = at(self, h, false)?;
                let fl = at(self, l, false)?;
                map_binary(self.tape, B::LogDiffExp, &fh, &fl, "truncation")?
            }
            (Some(l), None) => at(self, l, true)?,
            (None, Some(h)) => at(self, h, false)?,
            (None, None) => return Ok(()),
        };
        let scaled = map_binary(
            self.tape,
            B::Mul,
            &norm,
            &Value::Real(-(n as f64)),
            "truncation",
        )?;
        self.add_target(&scaled);
        Ok(())
    }

    /// `foo_rng(θ)`: one draw for scalar parameters, or an array of draws when a parameter is a
    /// container (broadcast as the densities are). Discrete families return integers.
    fn rng_draw(&mut self, family: Family, vals: &[Value]) -> R<Value> {
        let sig = family.sig();
        let n = vals
            .iter()
            .filter(|v| v.as_s().is_none())
            .map(|v| v.num_elements())
            .max();
        for v in vals {
            if v.as_s().is_none() && Some(v.num_elements()) != n {
                return Err(Fault::fatal(format!(
                    "{}_rng: size mismatch between vector arguments",
                    sig.name
                )));
            }
        }
        let Some(rng) = self.rng.as_deref_mut() else {
            return Err(Fault::fatal(format!(
                "{}_rng is only allowed in generated quantities",
                sig.name
            )));
        };
        let count = n.unwrap_or(1);
        let mut out = Vec::with_capacity(count);
        let mut params = vec![0.0; vals.len()];
        for i in 0..count {
            for (k, v) in vals.iter().enumerate() {
                params[k] = match v.as_s() {
                    Some(s) => self.tape.value(s),
                    None => self.tape.value(v.elem(i)),
                };
            }
            out.push(
                distributions::rng(family, &params, rng)
                    .map_err(|e| Fault::domain(e.to_string()))?,
            );
        }
        Ok(match n {
            None if sig.discrete => Value::Int(out[0] as i64),
            None => Value::Real(out[0]),
            Some(_) => Value::from_tensor(Tensor {
                arr: vec![count],
                base: Base::Scalar,
                data: if sig.discrete {
                    Data::Int(Arc::new(out))
                } else {
                    Data::Real(Arc::new(out))
                },
            }),
        })
    }

    /// Calls a built-in function.
    pub fn call(&mut self, b: Builtin, v: &[Value]) -> R<Value> {
        use Builtin::*;
        let tape = &mut *self.tape;
        let arity = |n: usize| -> R<()> {
            if v.len() != n {
                Err(Fault::fatal(format!(
                    "{b:?} expects {n} argument(s), got {}",
                    v.len()
                )))
            } else {
                Ok(())
            }
        };
        let int_arg = |k: usize| as_int(&v[k], "argument");
        Ok(match b {
            Unary(u) => {
                arity(1)?;
                map_unary(tape, u, &v[0])
            }
            Binary(f) => {
                arity(2)?;
                map_binary(tape, f, &v[0], &v[1], &format!("{f:?}").to_lowercase())?
            }
            Abs => {
                arity(1)?;
                match &v[0] {
                    Value::Int(i) => Value::Int(
                        i.checked_abs()
                            .ok_or_else(|| Fault::fatal("integer overflow in abs"))?,
                    ),
                    x => map_unary(tape, U::Abs, x),
                }
            }
            Const(x) => Value::Real(x),
            Target => {
                let value = self.target_c
                    + self
                        .target_v
                        .iter()
                        .map(|&i| tape.val[i as usize])
                        .sum::<f64>();
                let base = tape.entries_base();
                if self.target_v.is_empty() {
                    Value::Real(value)
                } else {
                    let out = tape.leaf(value);
                    for &q in &self.target_v {
                        tape.entry(q, 1.0);
                    }
                    tape.finish(out, 1, self.target_v.len(), base);
                    Value::Var(out)
                }
            }
            LogSumExp if v.len() == 2 => {
                map_binary(tape, B::LogSumExp, &v[0], &v[1], "log_sum_exp")?
            }
            Min | Max if v.len() == 2 => match (&v[0], &v[1]) {
                (Value::Int(x), Value::Int(y)) => {
                    Value::Int(if b == Min { *x.min(y) } else { *x.max(y) })
                }
                (x, y) => {
                    let f = if b == Min { B::Fmin } else { B::Fmax };
                    map_binary(tape, f, x, y, "min/max")?
                }
            },
            Sum | Prod | Mean | Sd | Variance | LogSumExp | Min | Max | DotSelf => {
                arity(1)?;
                let x = &v[0];
                let xs = x.values(tape);
                let n = xs.len();
                match b {
                    Sum => {
                        if x.is_int() {
                            Value::Int(xs.iter().sum::<f64>() as i64)
                        } else {
                            reduce(tape, x, xs.iter().sum(), |_| 1.0)
                        }
                    }
                    Prod => {
                        let p: f64 = xs.iter().product();
                        if x.is_int() {
                            Value::Int(p as i64)
                        } else {
                            reduce(tape, x, p, |i| {
                                xs.iter()
                                    .enumerate()
                                    .filter(|&(j, _)| j != i)
                                    .map(|(_, y)| y)
                                    .product()
                            })
                        }
                    }
                    Mean => {
                        if n == 0 {
                            return Err(Fault::fatal("mean of an empty container"));
                        }
                        let nf = n as f64;
                        reduce(tape, x, xs.iter().sum::<f64>() / nf, |_| 1.0 / nf)
                    }
                    Sd | Variance => {
                        if n == 0 {
                            return Err(Fault::fatal("variance of an empty container"));
                        }
                        if n == 1 {
                            return Ok(reduce(tape, x, 0.0, |_| 0.0));
                        }
                        let m = xs.iter().sum::<f64>() / n as f64;
                        let var =
                            xs.iter().map(|y| (y - m) * (y - m)).sum::<f64>() / (n as f64 - 1.0);
                        if b == Variance {
                            reduce(tape, x, var, |i| 2.0 * (xs[i] - m) / (n as f64 - 1.0))
                        } else {
                            let sd = var.sqrt();
                            reduce(tape, x, sd, |i| {
                                if sd == 0.0 {
                                    0.0
                                } else {
                                    (xs[i] - m) / ((n as f64 - 1.0) * sd)
                                }
                            })
                        }
                    }
                    LogSumExp => {
                        let m = xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                        if m.is_infinite() {
                            return Ok(reduce(tape, x, m, |_| 0.0));
                        }
                        let lse = m + xs.iter().map(|y| (y - m).exp()).sum::<f64>().ln();
                        reduce(tape, x, lse, |i| (xs[i] - lse).exp())
                    }
                    Min | Max => {
                        if n == 0 {
                            if x.is_int() {
                                return Err(Fault::fatal("min/max of an empty integer array"));
                            }
                            return Ok(Value::Real(if b == Min {
                                f64::INFINITY
                            } else {
                                f64::NEG_INFINITY
                            }));
                        }
                        let mut best = 0;
                        for i in 1..n {
                            if (b == Min && xs[i] < xs[best]) || (b == Max && xs[i] > xs[best]) {
                                best = i;
                            }
                        }
                        if x.is_int() {
                            Value::Int(xs[best] as i64)
                        } else {
                            reduce(tape, x, xs[best], |i| if i == best { 1.0 } else { 0.0 })
                        }
                    }
                    DotSelf => reduce(tape, x, xs.iter().map(|y| y * y).sum(), |i| 2.0 * xs[i]),
                    _ => unreachable!("outer match lists these"),
                }
            }
            DotProduct | SquaredDistance => {
                arity(2)?;
                let (x, y) = (&v[0], &v[1]);
                if x.num_elements() != y.num_elements() || x.as_s().is_some() != y.as_s().is_some()
                {
                    return Err(Fault::fatal(format!(
                        "size mismatch in {}: {} and {}",
                        if b == DotProduct {
                            "dot_product"
                        } else {
                            "squared_distance"
                        },
                        x.describe(),
                        y.describe()
                    )));
                }
                let xs = x.values(tape);
                let ys = y.values(tape);
                let n = xs.len();
                let (value, dx, dy): (f64, Vec<f64>, Vec<f64>) = if b == DotProduct {
                    (
                        xs.iter().zip(&ys).map(|(p, q)| p * q).sum(),
                        ys.clone(),
                        xs.clone(),
                    )
                } else {
                    let d: Vec<f64> = xs.iter().zip(&ys).map(|(p, q)| p - q).collect();
                    (
                        d.iter().map(|z| z * z).sum(),
                        d.iter().map(|z| 2.0 * z).collect(),
                        d.iter().map(|z| -2.0 * z).collect(),
                    )
                };
                if !x.is_var() && !y.is_var() {
                    Value::Real(value)
                } else {
                    let base = tape.entries_base();
                    let out = tape.leaf(value);
                    let mut k = 0;
                    for i in 0..n {
                        if let S::V(q) = x.elem(i) {
                            tape.entry(q, dx[i]);
                            k += 1;
                        }
                        if let S::V(q) = y.elem(i) {
                            tape.entry(q, dy[i]);
                            k += 1;
                        }
                    }
                    tape.finish(out, 1, k, base);
                    Value::Var(out)
                }
            }
            Rows | Cols | Size | NumElements => {
                arity(1)?;
                let (arr, base) = v[0].shape();
                let (r, c) = base.matrix_dims();
                Value::Int(match b {
                    Rows => {
                        if !arr.is_empty() {
                            return Err(Fault::fatal("rows() needs a vector or matrix"));
                        }
                        r as i64
                    }
                    Cols => {
                        if !arr.is_empty() {
                            return Err(Fault::fatal("cols() needs a vector or matrix"));
                        }
                        c as i64
                    }
                    Size => {
                        if let Some(&n) = arr.first() {
                            n as i64
                        } else {
                            base.size() as i64
                        }
                    }
                    _ => v[0].num_elements() as i64,
                })
            }
            RepVector | RepRowVector => {
                arity(2)?;
                let n = int_arg(1)?.max(0) as usize;
                let base = if b == RepVector {
                    Base::Vector(n)
                } else {
                    Base::RowVector(n)
                };
                permute(&to_real(scalar_arg(&v[0])?), &vec![0; n], vec![], base)
            }
            RepMatrix => match v.len() {
                3 => {
                    let (m, n) = (int_arg(1)?.max(0) as usize, int_arg(2)?.max(0) as usize);
                    permute(
                        &to_real(scalar_arg(&v[0])?),
                        &vec![0; m * n],
                        vec![],
                        Base::Matrix(m, n),
                    )
                }
                2 => {
                    let k = int_arg(1)?.max(0) as usize;
                    match v[0].shape() {
                        ([], Base::Vector(m)) => {
                            let offs: Vec<usize> = (0..k).flat_map(|_| 0..m).collect();
                            permute(&v[0], &offs, vec![], Base::Matrix(m, k))
                        }
                        ([], Base::RowVector(n)) => {
                            let offs: Vec<usize> =
                                (0..n).flat_map(|j| std::iter::repeat_n(j, k)).collect();
                            permute(&v[0], &offs, vec![], Base::Matrix(k, n))
                        }
                        _ => {
                            return Err(Fault::fatal(
                                "rep_matrix(v, n) needs a vector or row vector",
                            ));
                        }
                    }
                }
                _ => return Err(Fault::fatal("rep_matrix expects 2 or 3 arguments")),
            },
            RepArray => {
                if v.len() < 2 || v.len() > 4 {
                    return Err(Fault::fatal("rep_array expects 2 to 4 arguments"));
                }
                let mut dims = Vec::new();
                for k in 1..v.len() {
                    dims.push(int_arg(k)?.max(0) as usize);
                }
                let reps: usize = dims.iter().product();
                let (a, base) = v[0].shape();
                let mut arr = dims;
                arr.extend_from_slice(a);
                let m = v[0].num_elements();
                let offs: Vec<usize> = (0..reps).flat_map(|_| 0..m).collect();
                permute(&v[0], &offs, arr, base)
            }
            AppendCol => append_col(tape, &v.iter().collect::<Vec<_>>())?,
            AppendRow => append_row(tape, &v.iter().collect::<Vec<_>>())?,
            ToVector | ToRowVector | ToArray1d => {
                arity(1)?;
                let n = v[0].num_elements();
                let offs: Vec<usize> = (0..n).collect();
                let (arr, base) = match b {
                    ToVector => (vec![], Base::Vector(n)),
                    ToRowVector => (vec![], Base::RowVector(n)),
                    _ => (vec![n], Base::Scalar),
                };
                let r = permute(&v[0], &offs, arr, base);
                if b == ToArray1d { r } else { to_real(r) }
            }
            ToMatrix => match v.len() {
                1 => match v[0].shape() {
                    ([], Base::Matrix(..)) => v[0].clone(),
                    ([], Base::Vector(n)) => permute(
                        &v[0],
                        &(0..n).collect::<Vec<_>>(),
                        vec![],
                        Base::Matrix(n, 1),
                    ),
                    ([], Base::RowVector(n)) => permute(
                        &v[0],
                        &(0..n).collect::<Vec<_>>(),
                        vec![],
                        Base::Matrix(1, n),
                    ),
                    _ => return Err(Fault::fatal("to_matrix(x) needs a vector or matrix")),
                },
                3 => {
                    let (m, n) = (int_arg(1)?.max(0) as usize, int_arg(2)?.max(0) as usize);
                    if m * n != v[0].num_elements() {
                        return Err(Fault::fatal(format!(
                            "to_matrix: {} elements cannot fill a {m} × {n} matrix",
                            v[0].num_elements()
                        )));
                    }
                    to_real(permute(
                        &v[0],
                        &(0..m * n).collect::<Vec<_>>(),
                        vec![],
                        Base::Matrix(m, n),
                    ))
                }
                _ => return Err(Fault::fatal("to_matrix expects 1 or 3 arguments")),
            },
            Col | Row => {
                arity(2)?;
                let k = int_arg(1)?;
                let ix = if b == Col {
                    [Ix::All, Ix::One(k)]
                } else {
                    [Ix::One(k), Ix::All]
                };
                match &v[0] {
                    Value::T(t) if matches!(t.base, Base::Matrix(..)) && t.arr.is_empty() => {
                        let (a, bb, offs) = select(&t.arr, t.base, &ix)?;
                        gather(t, a, bb, &offs)
                    }
                    x => {
                        return Err(Fault::fatal(format!(
                            "col/row need a matrix, found {}",
                            x.describe()
                        )));
                    }
                }
            }
            DiagMatrix => {
                arity(1)?;
                let n = match v[0].shape() {
                    ([], Base::Vector(n) | Base::RowVector(n)) => n,
                    _ => return Err(Fault::fatal("diag_matrix needs a vector")),
                };
                let zero = if v[0].is_var() {
                    S::V(tape.leaf(0.0))
                } else {
                    S::C(0.0)
                };
                let mut e = vec![zero; n * n];
                for i in 0..n {
                    e[i + i * n] = v[0].elem(i);
                }
                super::value::tensor_from_s(tape, vec![], Base::Matrix(n, n), &e)
            }
            Diagonal => {
                arity(1)?;
                match v[0].shape() {
                    ([], Base::Matrix(r, c)) => {
                        let k = r.min(c);
                        let offs: Vec<usize> = (0..k).map(|i| i + i * r).collect();
                        permute(&v[0], &offs, vec![], Base::Vector(k))
                    }
                    _ => return Err(Fault::fatal("diagonal needs a matrix")),
                }
            }
            CumulativeSum => {
                arity(1)?;
                let (arr, base) = {
                    let (a, b) = v[0].shape();
                    (a.to_vec(), b)
                };
                let n = v[0].num_elements();
                if v[0].is_int() {
                    let xs = v[0].values(tape);
                    let mut acc = 0.0;
                    let out: Vec<f64> = xs
                        .iter()
                        .map(|x| {
                            acc += x;
                            acc
                        })
                        .collect();
                    Value::from_tensor(Tensor {
                        arr,
                        base,
                        data: Data::Int(Arc::new(out)),
                    })
                } else {
                    let mut out = Vec::with_capacity(n);
                    let mut acc = S::C(0.0);
                    for i in 0..n {
                        let x = v[0].elem(i);
                        let val = tape.value(acc) + tape.value(x);
                        acc = tape.node(val, &[(acc, 1.0), (x, 1.0)]);
                        out.push(acc);
                    }
                    super::value::tensor_from_s(tape, arr, base, &out)
                }
            }
            Segment | Head | Tail => {
                let (x, len_arg) = (&v[0], if b == Segment { 2 } else { 1 });
                if v.len() != len_arg + 1 {
                    return Err(Fault::fatal(
                        "wrong number of arguments to segment/head/tail",
                    ));
                }
                let Value::T(t) = x else {
                    return Err(Fault::fatal("segment/head/tail need a vector or array"));
                };
                let total = t.arr.first().copied().unwrap_or(t.base.size());
                let n = int_arg(len_arg)?;
                let lo = match b {
                    Segment => int_arg(1)?,
                    Head => 1,
                    _ => total as i64 - n + 1,
                };
                if n < 0 || lo < 1 || lo + n - 1 > total as i64 {
                    return Err(Fault::fatal(format!(
                        "segment of {n} element(s) from {lo} out of range for size {total}"
                    )));
                }
                if n == 0 {
                    let base = match t.base {
                        Base::RowVector(_) if t.arr.is_empty() => Base::RowVector(0),
                        Base::Vector(_) if t.arr.is_empty() => Base::Vector(0),
                        bb => bb,
                    };
                    let arr = if t.arr.is_empty() { vec![] } else { vec![0] };
                    gather(t, arr, base, &[])
                } else {
                    let (a, bb, offs) =
                        select(&t.arr, t.base, &[Ix::Range(Some(lo), Some(lo + n - 1))])?;
                    gather(t, a, bb, &offs)
                }
            }
            Softmax | LogSoftmax => {
                arity(1)?;
                let n = match v[0].shape() {
                    ([], Base::Vector(n)) => n,
                    _ => return Err(Fault::fatal("softmax needs a vector")),
                };
                let xs = v[0].values(tape);
                let m = xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let lse = m + xs.iter().map(|y| (y - m).exp()).sum::<f64>().ln();
                let s: Vec<f64> = xs.iter().map(|y| (y - lse).exp()).collect();
                if b == Softmax {
                    dense(tape, &v[0], vec![], Base::Vector(n), &s.clone(), |i, j| {
                        s[i] * (if i == j { 1.0 } else { 0.0 } - s[j])
                    })
                } else {
                    let f: Vec<f64> = xs.iter().map(|y| y - lse).collect();
                    dense(tape, &v[0], vec![], Base::Vector(n), &f, |i, j| {
                        (if i == j { 1.0 } else { 0.0 }) - s[j]
                    })
                }
            }
            DiagPreMultiply | DiagPostMultiply => {
                arity(2)?;
                let (d, m) = if b == DiagPreMultiply {
                    (&v[0], &v[1])
                } else {
                    (&v[1], &v[0])
                };
                let (r, c) = match m.shape() {
                    ([], Base::Matrix(r, c)) => (r, c),
                    _ => return Err(Fault::fatal("diag_pre/post_multiply needs a matrix")),
                };
                let need = if b == DiagPreMultiply { r } else { c };
                if d.num_elements() != need || d.as_s().is_some() {
                    return Err(Fault::fatal(format!(
                        "size mismatch in diag_pre/post_multiply: {} and {}",
                        d.describe(),
                        m.describe()
                    )));
                }
                let offs: Vec<usize> = (0..r * c)
                    .map(|o| if b == DiagPreMultiply { o % r } else { o / r })
                    .collect();
                let expanded = permute(d, &offs, vec![], Base::Matrix(r, c));
                map_binary(tape, B::Mul, &expanded, m, "diag_pre_multiply")?
            }
            Transpose => {
                arity(1)?;
                transpose(&v[0])?
            }
            Fma => {
                arity(3)?;
                let p = map_binary(tape, B::Mul, &v[0], &v[1], "fma")?;
                map_binary(tape, B::Add, &p, &v[2], "fma")?
            }
            IntStep | IsInf | IsNan => {
                arity(1)?;
                let x = match v[0].as_s() {
                    Some(s) => tape.value(s),
                    None => return Err(Fault::fatal("int_step/is_inf/is_nan need a scalar")),
                };
                Value::Int(match b {
                    IntStep => x > 0.0,
                    IsInf => x.is_infinite(),
                    _ => x.is_nan(),
                } as i64)
            }
            Reverse | SortAsc | SortDesc => {
                arity(1)?;
                let Value::T(t) = &v[0] else {
                    return Err(Fault::fatal("reverse/sort need a vector or array"));
                };
                let (outer, block) = match (t.arr.as_slice(), t.base) {
                    ([], bb) => (bb.size(), 1),
                    ([n, ..], _) => (*n, t.data.len() / (*n).max(1)),
                };
                let order: Vec<usize> = if b == Reverse {
                    (0..outer).rev().collect()
                } else {
                    if block != 1 {
                        return Err(Fault::fatal(
                            "sort needs a vector or a one-dimensional array",
                        ));
                    }
                    let xs = v[0].values(tape);
                    let mut o: Vec<usize> = (0..outer).collect();
                    o.sort_by(|&i, &j| xs[i].total_cmp(&xs[j]));
                    if b == SortDesc {
                        o.reverse();
                    }
                    o
                };
                let offs: Vec<usize> = order
                    .iter()
                    .flat_map(|&i| (i * block)..(i * block + block))
                    .collect();
                gather(t, t.arr.clone(), t.base, &offs)
            }
            RowsDotProduct | ColumnsDotProduct => {
                arity(2)?;
                let p = map_binary(tape, B::Mul, &v[0], &v[1], "rows_dot_product")?;
                let (r, c) = p.shape().1.matrix_dims();
                if b == RowsDotProduct {
                    let ones = Value::from_tensor(Tensor {
                        arr: vec![],
                        base: Base::Vector(c),
                        data: Data::Real(Arc::new(vec![1.0; c])),
                    });
                    matmul(tape, &p, &ones)?
                } else {
                    let ones = Value::from_tensor(Tensor {
                        arr: vec![],
                        base: Base::RowVector(r),
                        data: Data::Real(Arc::new(vec![1.0; r])),
                    });
                    matmul(tape, &ones, &p)?
                }
            }
            Crossprod | Tcrossprod => {
                arity(1)?;
                let t = transpose(&v[0])?;
                if b == Crossprod {
                    matmul(tape, &t, &v[0])?
                } else {
                    matmul(tape, &v[0], &t)?
                }
            }
            QuadForm => {
                arity(2)?;
                let av = matmul(tape, &v[0], &v[1])?;
                let bt = transpose(&v[1])?;
                matmul(tape, &bt, &av)?
            }
            LinspacedVector => {
                arity(3)?;
                let n = int_arg(0)?.max(0) as usize;
                let lo = tape.value(scalar_arg(&v[1])?.as_s().expect("scalar"));
                let hi = tape.value(scalar_arg(&v[2])?.as_s().expect("scalar"));
                let xs: Vec<f64> = (0..n)
                    .map(|i| {
                        if n == 1 {
                            hi
                        } else {
                            lo + (hi - lo) * i as f64 / (n - 1) as f64
                        }
                    })
                    .collect();
                Value::from_tensor(Tensor {
                    arr: vec![],
                    base: Base::Vector(n),
                    data: Data::Real(Arc::new(xs)),
                })
            }
            CholeskyDecompose => {
                arity(1)?;
                let k = match v[0].shape() {
                    ([], Base::Matrix(r, c)) if r == c => r,
                    _ => return Err(Fault::fatal("cholesky_decompose needs a square matrix")),
                };
                let a = |i: usize, j: usize| v[0].elem(i + j * k);
                let mut l = vec![S::C(0.0); k * k];
                for j in 0..k {
                    for i in j..k {
                        // s = A[i, j] − Σ_{q<j} L[i, q] L[j, q]
                        let mut value = tape.value(a(i, j));
                        let mut entries = vec![(a(i, j), 1.0)];
                        for q in 0..j {
                            let (x, y) = (l[i + q * k], l[j + q * k]);
                            let (vx, vy) = (tape.value(x), tape.value(y));
                            value -= vx * vy;
                            entries.push((x, -vy));
                            entries.push((y, -vx));
                        }
                        let s = tape.node(value, &entries);
                        if i == j {
                            if value.is_nan() || value <= 0.0 {
                                return Err(Fault::domain(
                                    "cholesky_decompose: Matrix m is not positive definite",
                                ));
                            }
                            let r = value.sqrt();
                            l[j + j * k] = tape.node(r, &[(s, 0.5 / r)]);
                        } else {
                            let d = l[j + j * k];
                            let vd = tape.value(d);
                            l[i + j * k] =
                                tape.node(value / vd, &[(s, 1.0 / vd), (d, -value / (vd * vd))]);
                        }
                    }
                }
                super::value::tensor_from_s(tape, vec![], Base::Matrix(k, k), &l)
            }
            MdivideLeftTriLow => {
                arity(2)?;
                let k = match v[0].shape() {
                    ([], Base::Matrix(r, c)) if r == c => r,
                    _ => return Err(Fault::fatal("mdivide_left_tri_low needs a square matrix")),
                };
                let (barr, bbase) = {
                    let (a, b) = v[1].shape();
                    (a.to_vec(), b)
                };
                let (br, bc) = bbase.matrix_dims();
                if !barr.is_empty() || br != k || matches!(bbase, Base::Scalar | Base::RowVector(_))
                {
                    return Err(Fault::fatal(format!(
                        "size mismatch in mdivide_left_tri_low: {} and {}",
                        v[0].describe(),
                        v[1].describe()
                    )));
                }
                let l = |i: usize, j: usize| v[0].elem(i + j * k);
                let mut x = vec![S::C(0.0); k * bc];
                for c in 0..bc {
                    for i in 0..k {
                        // x_i = (b_i − Σ_{q<i} L[i, q] x_q) / L[i, i]
                        let bi = v[1].elem(i + c * k);
                        let mut num = tape.value(bi);
                        let mut entries = vec![(bi, 1.0)];
                        for q in 0..i {
                            let (lq, xq) = (l(i, q), x[q + c * k]);
                            let (vl, vx) = (tape.value(lq), tape.value(xq));
                            num -= vl * vx;
                            entries.push((lq, -vx));
                            entries.push((xq, -vl));
                        }
                        let d = l(i, i);
                        let vd = tape.value(d);
                        for e in entries.iter_mut() {
                            e.1 /= vd;
                        }
                        entries.push((d, -num / (vd * vd)));
                        x[i + c * k] = tape.node(num / vd, &entries);
                    }
                }
                super::value::tensor_from_s(tape, vec![], bbase, &x)
            }
            Trace => {
                arity(1)?;
                let k = match v[0].shape() {
                    ([], Base::Matrix(r, c)) => r.min(c),
                    _ => return Err(Fault::fatal("trace needs a matrix")),
                };
                let r = v[0].shape().1.matrix_dims().0;
                let diag: Vec<usize> = (0..k).map(|i| i + i * r).collect();
                let d = permute(&v[0], &diag, vec![], Base::Vector(k));
                let xs = d.values(tape);
                reduce(tape, &d, xs.iter().sum(), |_| 1.0)
            }
            AddDiag => {
                arity(2)?;
                let k = match v[0].shape() {
                    ([], Base::Matrix(r, c)) if r == c => r,
                    _ => return Err(Fault::fatal("add_diag needs a square matrix")),
                };
                if v[1].as_s().is_none() && v[1].num_elements() != k {
                    return Err(Fault::fatal(format!(
                        "size mismatch in add_diag: {} and {}",
                        v[0].describe(),
                        v[1].describe()
                    )));
                }
                let mut e: Vec<S> = (0..k * k).map(|o| v[0].elem(o)).collect();
                for i in 0..k {
                    let di = match v[1].as_s() {
                        Some(s) => s,
                        None => v[1].elem(i),
                    };
                    let a = e[i + i * k];
                    let val = tape.value(a) + tape.value(di);
                    e[i + i * k] = tape.node(val, &[(a, 1.0), (di, 1.0)]);
                }
                super::value::tensor_from_s(tape, vec![], Base::Matrix(k, k), &e)
            }
            LogMix => {
                arity(3)?;
                let lt = map_unary(tape, U::Log, &v[0]);
                let l1t = map_unary(tape, U::Log1m, &v[0]);
                let a = map_binary(tape, B::Add, &lt, &v[1], "log_mix")?;
                let c = map_binary(tape, B::Add, &l1t, &v[2], "log_mix")?;
                map_binary(tape, B::LogSumExp, &a, &c, "log_mix")?
            }
        })
    }
}

/// True when `ix` is `k, k + 1, …` (the outputs of one vector node).
fn is_contiguous(ix: &[u32]) -> bool {
    ix.windows(2).all(|w| w[1] == w[0].wrapping_add(1))
}

fn scalar_arg(v: &Value) -> R<Value> {
    if v.as_s().is_some() {
        Ok(v.clone())
    } else {
        Err(Fault::fatal(format!(
            "expected a scalar, found {}",
            v.describe()
        )))
    }
}

/// Checks that `v` has the declared shape.
pub fn check_shape(v: &Value, arr: &[usize], base: Base, int: bool) -> R<()> {
    let (va, vb) = v.shape();
    if va != arr || vb != base || (int && !v.is_int()) {
        let declared = Value::from_tensor(Tensor {
            arr: arr.to_vec(),
            base,
            data: if int {
                Data::Int(Arc::new(vec![
                    0.0;
                    arr.iter().product::<usize>() * base.size()
                ]))
            } else {
                Data::Real(Arc::new(vec![
                    0.0;
                    arr.iter().product::<usize>() * base.size()
                ]))
            },
        });
        return Err(Fault::fatal(format!(
            "size mismatch: declared {}, assigned {}",
            declared.describe(),
            v.describe()
        )));
    }
    Ok(())
}

/// `append_col(a, b, …)`: columns of vectors/matrices side by side (one or more arguments), or
/// row vectors/scalars concatenated into a row vector.
pub fn append_col(tape: &mut Tape, parts: &[&Value]) -> R<Value> {
    if parts.is_empty() {
        return Err(Fault::fatal("append_col needs at least one argument"));
    }
    let mut rows: Option<usize> = None;
    let mut cols = 0;
    let all_row = parts.iter().all(|p| {
        matches!(p.shape().1, Base::RowVector(_) | Base::Scalar) && p.shape().0.is_empty()
    });
    for p in parts {
        let (a, b) = p.shape();
        if !a.is_empty() {
            return Err(Fault::fatal(format!(
                "append_col cannot take {}",
                p.describe()
            )));
        }
        let (r, c) = b.matrix_dims();
        if let Some(r0) = rows
            && r0 != r
        {
            return Err(Fault::fatal(format!(
                "size mismatch in append_col: {r0} rows and {r} rows"
            )));
        }
        rows = Some(r);
        cols += c;
    }
    let r = rows.unwrap_or(0);
    let base = if all_row {
        Base::RowVector(cols)
    } else {
        Base::Matrix(r, cols)
    };
    // Column-major storage: concatenating the parts' storage stacks their columns.
    Ok(concat(tape, parts, vec![], base))
}

/// `append_row(a, b, …)`: vectors/scalars into a vector, or row vectors/matrices stacked.
pub fn append_row(tape: &mut Tape, parts: &[&Value]) -> R<Value> {
    if parts.is_empty() {
        return Err(Fault::fatal("append_row needs at least one argument"));
    }
    for p in parts {
        if !p.shape().0.is_empty() {
            return Err(Fault::fatal(format!(
                "append_row cannot take {}",
                p.describe()
            )));
        }
    }
    let all_col = parts
        .iter()
        .all(|p| matches!(p.shape().1, Base::Vector(_) | Base::Scalar));
    if all_col {
        let n = parts.iter().map(|p| p.num_elements()).sum();
        return Ok(concat(tape, parts, vec![], Base::Vector(n)));
    }
    let mut cols: Option<usize> = None;
    let mut rows = 0;
    for p in parts {
        let (r, c) = p.shape().1.matrix_dims();
        if let Some(c0) = cols
            && c0 != c
        {
            return Err(Fault::fatal(format!(
                "size mismatch in append_row: {c0} columns and {c} columns"
            )));
        }
        cols = Some(c);
        rows += r;
    }
    let c = cols.unwrap_or(0);
    let mut e = Vec::with_capacity(rows * c);
    for j in 0..c {
        for p in parts {
            let (r, _) = p.shape().1.matrix_dims();
            for i in 0..r {
                e.push(p.elem(i + j * r));
            }
        }
    }
    Ok(super::value::tensor_from_s(
        tape,
        vec![],
        Base::Matrix(rows, c),
        &e,
    ))
}
