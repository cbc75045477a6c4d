//! Statement execution (the forward pass over statements): `exec`, declarations, indexing
//! and assignment. Part of the interpreter ([`super`]).

use std::sync::Arc;

use crate::syntax::ast::{AssignOp, BinOp};

use super::super::ir::{BaseEx, DeclTy, Ex, IxEx, St, StKind};
use super::super::ops::to_real;
use super::super::tape::S;
use super::super::value::{
    Base, Data, Fault, Ix, R, Slots, Tensor, Value, gather, select, single_offset, to_slot,
};

use super::*;

impl Ctx<'_> {
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
                plan,
            } => {
                let propto = !self.normalised;
                // The tape's spare buffer (no allocation per statement once it has grown).
                let mut vals = std::mem::take(&mut self.tape.spare_vals);
                vals.clear();
                vals.push(self.eval(lhs).map_err(loc)?);
                for a in args {
                    vals.push(self.eval(a).map_err(loc)?);
                }
                let s = self
                    .density_checked(*family, &vals, Kind::Density(propto), plan.variate_checked)
                    .map_err(loc)?;
                self.add_target(&Value::from_s(s));
                if self.pointwise.is_some() {
                    self.observe_tilde(*family, &vals, trunc.as_ref())
                        .map_err(loc)?;
                }
                if let Some((lo, hi)) = trunc {
                    self.truncate(*family, &mut vals, lo.as_ref(), hi.as_ref())
                        .map_err(loc)?;
                }
                vals.clear();
                self.tape.spare_vals = vals;
            }
            StKind::TargetPlus(e) => {
                let v = self.eval(e).map_err(loc)?;
                self.add_target(&v);
                if self.pointwise.is_some() {
                    self.observe_target(e).map_err(loc)?;
                }
            }
            StKind::For {
                slot,
                var,
                lo,
                hi,
                body,
            } => {
                let lo = as_int(&self.eval(lo).map_err(loc)?, "loop bound").map_err(loc)?;
                let hi = as_int(&self.eval(hi).map_err(loc)?, "loop bound").map_err(loc)?;
                for i in lo..=hi {
                    if (i - lo + 1) % LOOP_CHECK_EVERY as i64 == 0
                        && crate::inference::interrupt::requested()
                    {
                        return Err(loc(interrupted("for", (i - lo) as u64)));
                    }
                    self.env[*slot as usize] = Value::Int(i);
                    let flow = self.exec(body).map_err(|mut l| {
                        l.fault = l.fault.in_loop(var, i);
                        l
                    })?;
                    match flow {
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
            StKind::While { cond, body } => {
                // A loop that runs for long inside one evaluation never returns to the fit's
                // stop flag: after LOOP_CHECK_EVERY iterations, and every as many after, it
                // looks at the Ctrl-C flag itself and stops the fit with a model error.
                let mut iterations: u64 = 0;
                loop {
                    let c = self.eval(cond).map_err(loc)?;
                    if !truthy(self.tape, &c).map_err(loc)? {
                        break;
                    }
                    iterations += 1;
                    if iterations.is_multiple_of(LOOP_CHECK_EVERY)
                        && crate::inference::interrupt::requested()
                    {
                        return Err(loc(interrupted("while", iterations)));
                    }
                    match self.exec(body)? {
                        Flow::Break => break,
                        Flow::Return => return Ok(Flow::Return),
                        _ => {}
                    }
                }
            }
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
            StKind::Fused { fusion, plain } => {
                // `~` inside a user density called as `foo_lpdf` keeps its constants.
                let propto = fusion.propto && !self.normalised;
                if self.fuse_glm
                    && self.pointwise.is_none()
                    && let Some(s) = self.glm_tilde(fusion, propto).map_err(loc)?
                {
                    self.add_target(&Value::from_s(s));
                    return Ok(Flow::Normal);
                }
                return self.exec(plain);
            }
            StKind::Fast { cache, plain } => {
                if self.use_fast_path()
                    && let Some(k) = cache.get(plain, &self.env, self.globals)
                    && super::super::kernel::run(
                        &k,
                        &mut self.env,
                        self.globals,
                        self.tape,
                        (&mut self.target_c, &mut self.target_v),
                        self.normalised,
                        self.native_loops,
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
    pub(super) fn show(&self, v: &Value) -> String {
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
        // elements beyond 2^24 are checked against the memory (no allocation otherwise: this
        // runs at every evaluation of the declaration)
        let elements = arr
            .iter()
            .try_fold(base.size(), |acc, &n| acc.checked_mul(n));
        if elements.is_none_or(|n| n > 1 << 24) {
            let mut dims = arr.clone();
            match base {
                Base::Scalar => {}
                Base::Vector(n) | Base::RowVector(n) => dims.push(n),
                Base::Matrix(r, c) => dims.extend([r, c]),
            }
            let sizes: Vec<String> = dims.iter().map(|n| n.to_string()).collect();
            let what = format!("a container of sizes [{}]", sizes.join(", "));
            super::super::value::check_container_size(&dims, 16, &what)?;
        }
        Ok((arr, base))
    }

    pub(super) fn declare(&mut self, ty: &DeclTy, init: Option<&Ex>) -> R<Value> {
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
                    Data::Real(super::super::value::pooled_reals(n, f64::NAN))
                };
                Ok(Value::from_tensor(Tensor { arr, base, data }))
            }
        }
    }

    pub(super) fn eval_ixs(&mut self, idx: &[IxEx]) -> R<Vec<Ix>> {
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

    pub(super) fn assign(&mut self, slot: u32, idx: &[IxEx], op: AssignOp, rhs: &Ex) -> R<()> {
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
                        (Data::Var(ix), s) => ix.make_list()[o] = to_slot(tape, s),
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
                            *data = Data::Var(Slots::List(ix));
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
            t.data = Data::Var(Slots::List(ix));
        }
        match &mut t.data {
            Data::Var(ix) => {
                let ix = ix.make_list();
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
}

/// Iterations of a `for` or `while` loop between looks at the Ctrl-C flag
/// ([`crate::inference::interrupt`]): a loop that runs long inside one evaluation of the log
/// density never returns to the fit's own stop flag.
const LOOP_CHECK_EVERY: u64 = 1 << 16;

/// The error of a loop stopped by Ctrl-C after `iterations` iterations.
fn interrupted(kind: &str, iterations: u64) -> Fault {
    let hint = if kind == "while" {
        "check that its condition becomes false"
    } else {
        "check its bounds"
    };
    Fault::fatal(format!(
        "interrupted (Ctrl-C) inside this `{kind}` loop after {iterations} iterations in one \
         evaluation of the log density; {hint}"
    ))
}
