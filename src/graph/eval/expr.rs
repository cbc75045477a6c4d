//! Expression evaluation (the forward pass over expressions): variables, indexing, user
//! function calls and operators. Part of the interpreter ([`super`]).

use crate::syntax::ast::{BinOp, INT_MAX, INT_MIN, int_in_range};

use super::super::ir::{Builtin, Ex, FuncIr, IxEx};
use super::super::ops::{concat, map_binary, map_unary, matmul, to_real, transpose};
use super::super::scalar::{B, U};
use super::super::value::{Base, Data, Fault, Ix, R, Value, gather, select, single_offset};

use super::*;

impl Ctx<'_> {
    /// Indexes `v` by evaluated indices.
    pub(super) fn index_value(&self, v: &Value, ixs: &[Ix]) -> R<Value> {
        if ixs.is_empty() {
            return Ok(v.clone());
        }
        let Value::T(t) = v else {
            return Err(Fault::fatal("cannot index a scalar"));
        };
        let (arr, base, offs) = select(&t.arr, t.base, ixs)?;
        Ok(gather(t, arr, base, &offs))
    }

    pub(super) fn var_ref(&self, e: &Ex) -> Option<&Value> {
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
                if *u == U::Tanh
                    && let Some(z) = self.dense_tanh(&args[0])?
                {
                    return Ok(z);
                }
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
    pub(super) fn leaf(&self, e: &Ex) -> Option<Value> {
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
    pub(super) fn index_int(&mut self, e: &Ex) -> R<Value> {
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
    pub(super) fn index_fast(&mut self, base: &Ex, idx: &[IxEx]) -> R<Option<Value>> {
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
                    Data::Var(x) => Value::Var(x.at(o)),
                })
            }
            None => None,
        })
    }

    /// Evaluates the less common expression forms.
    #[inline(never)]
    pub(super) fn eval_slow(&mut self, e: &Ex) -> R<Value> {
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
                    int_in_range(i.checked_neg())
                        .ok_or_else(|| int_overflow(&format!("`-({i})`"), Some(-(i as i128))))?,
                ),
                v => map_unary(self.tape, U::Neg, &v),
            },
            Ex::Not(a) => {
                let v = self.eval(a)?;
                Value::Int(!truthy(self.tape, &v)? as i64)
            }
            Ex::Call(b, args) => {
                let mut vals = self.tape.spare_args.pop().unwrap_or_default();
                for a in args {
                    vals.push(self.eval(a)?);
                }
                let r = self.call(*b, &vals);
                vals.clear();
                self.tape.spare_args.push(vals);
                r?
            }
            Ex::Lpdf {
                family,
                propto,
                args,
            } => {
                let mut vals = self.tape.spare_args.pop().unwrap_or_default();
                for a in args {
                    vals.push(self.eval(a)?);
                }
                let propto = *propto && !self.normalised;
                let r = self.lpdf(*family, &vals, propto);
                vals.clear();
                self.tape.spare_args.push(vals);
                Value::from_s(r?)
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
            Ex::Ode(o) => self.ode(o)?,
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
            Ex::Cdf { family, kind, args } => {
                let mut vals = Vec::with_capacity(args.len());
                for a in args {
                    vals.push(self.eval(a)?);
                }
                Value::from_s(self.density(*family, &vals, Kind::Cdf(*kind))?)
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
    pub(super) fn call_user(&mut self, f: &FuncIr, vals: Vec<Value>) -> R<Value> {
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
                    if let Some(r) = int_in_range(x.checked_add(*y)) {
                        return Ok(Value::Int(r));
                    }
                }
                BinOp::Sub => {
                    if let Some(r) = int_in_range(x.checked_sub(*y)) {
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
    pub(super) fn binop_slow(&mut self, op: BinOp, a: &Value, b: &Value) -> R<Value> {
        use BinOp::*;
        if let (Value::Int(x), Value::Int(y)) = (a, b) {
            let (x, y) = (*x, *y);
            if let Some(r) = int_arith(op, x, y) {
                return r.map(Value::Int).map_err(|e| Fault::fatal(e.to_string()));
            }
            return Ok(match op {
                Pow | EltPow => Value::Real((x as f64).powf(y as f64)),
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
                Add | Sub | Mul | EltMul | Div | IntDiv | Mod => {
                    unreachable!("int arithmetic is `int_arith`")
                }
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
                } else if matches!(b.shape(), ([], Base::Matrix(..))) {
                    super::matrix::divide(self.tape, super::matrix::Side::Right, b, a, false)
                } else {
                    Err(Fault::fatal(format!(
                        "division of {} by {} is not supported; use `./` for elementwise division",
                        a.describe(),
                        b.describe()
                    )))
                }
            }
            LeftDiv => super::matrix::divide(self.tape, super::matrix::Side::Left, a, b, false),
        }
    }
}

/// The error for int arithmetic whose result leaves the range of `int` (32-bit, as in Stan):
/// [`int_overflow_message`] as a fatal fault.
pub(super) fn int_overflow(what: &str, exact: Option<i128>) -> Fault {
    Fault::fatal(int_overflow_message(what, exact))
}

/// The message for int arithmetic whose result leaves the range of `int` (32-bit, as in Stan),
/// shared by the model's evaluator and the REPL's posterior expressions: `what` is the
/// operation as written with its operands (`` `2147483647 + 1` ``), `exact` its true value when
/// known. Never a wrap.
pub fn int_overflow_message(what: &str, exact: Option<i128>) -> String {
    let is = exact.map_or_else(String::new, |v| format!(" is {v},"));
    format!(
        "integer overflow: {what}{is} outside the range of int ({INT_MIN} to {INT_MAX}); int is \
         32-bit, as in Stan: to compute with larger values, convert to real first (e.g. \
         `1.0 * n`)"
    )
}

/// Why int arithmetic ([`int_arith`]) has no int result.
#[derive(Clone, Debug, PartialEq)]
pub enum IntArithError {
    /// `/` or `%/%` by 0.
    DivisionByZero,
    /// `%` by 0.
    ModulusByZero,
    /// The result is outside the range of `int`: the [`int_overflow_message`].
    Overflow(String),
}

impl std::fmt::Display for IntArithError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IntArithError::DivisionByZero => f.write_str("integer division by zero"),
            IntArithError::ModulusByZero => f.write_str("integer modulus by zero"),
            IntArithError::Overflow(m) => f.write_str(m),
        }
    }
}

/// The language's int arithmetic on two ints (32-bit, as in Stan), shared by the model's
/// evaluator and the REPL's posterior expressions: `+`, `-`, `*`, `.*`, and `/` and `%/%`
/// (truncating toward zero), `%` (the sign of `x`). `None` for operators whose int form is
/// not int arithmetic (comparisons, powers, `./`). Errors: a zero divisor, or a result outside
/// -2147483648..=2147483647 (with its true value), never a wrap.
pub fn int_arith(op: BinOp, x: i64, y: i64) -> Option<Result<i64, IntArithError>> {
    use BinOp::*;
    let (result, exact) = match op {
        Add => (x.checked_add(y), Some(x as i128 + y as i128)),
        Sub => (x.checked_sub(y), Some(x as i128 - y as i128)),
        Mul | EltMul => (x.checked_mul(y), Some(x as i128 * y as i128)),
        Div | IntDiv if y == 0 => return Some(Err(IntArithError::DivisionByZero)),
        Div | IntDiv => (x.checked_div(y), Some(x as i128 / y as i128)),
        Mod if y == 0 => return Some(Err(IntArithError::ModulusByZero)),
        Mod => (x.checked_rem(y), None),
        _ => return None,
    };
    Some(int_in_range(result).ok_or_else(|| {
        IntArithError::Overflow(int_overflow_message(
            &format!("`{x} {} {y}`", op.symbol()),
            exact,
        ))
    }))
}
