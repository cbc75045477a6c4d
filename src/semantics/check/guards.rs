//! Which code will run, as far as the data tells before any evaluation. Size errors known
//! before evaluation (out-of-range literal indexes, operands, arguments and values of known
//! sizes that cannot fit, negative sizes: [`is_known_size_error`]) are reported only in code
//! that runs whenever the program does: not in an `if` branch whose condition is false or
//! unknown, a `for` loop whose range is empty or unknown, a `while` body, or the branch of a
//! `?:` / right operand of `&&` `||` that is not evaluated. A condition is known when
//! [`Checker::guard_value`] can evaluate it from literals and the `int` values
//! [`Checker::size_value`] knows (data, transformed data, `int` scalars set once).
//!
//! [X] session 19, tester finding: the optional-data idiom (`int<lower=0> M; vector[M] z;` and
//! `if (M > 0) z[1] ~ …` with M = 0) was refused, as were loops over `1:M` that never run;
//! suppressing every report inside `if` bodies instead missed `if (N > 1) y ~ normal(b, 1);`
//! with N = 3 and `vector[2] b`, which then failed in `fit`.

use super::*;

/// A value a guard evaluates to: an `int` or a `real`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum GuardValue {
    Int(i64),
    Real(f64),
}

impl GuardValue {
    fn real(self) -> f64 {
        match self {
            GuardValue::Int(i) => i as f64,
            GuardValue::Real(x) => x,
        }
    }

    /// Stan's truth: a non-zero value is true.
    pub(super) fn truth(self) -> bool {
        self.real() != 0.0
    }
}

/// Whether `e` is an error about sizes known before evaluation, reported only in code that
/// is known to run ([`Checker::err`]): [`SemanticError::is_known_size_error`].
pub(super) fn is_known_size_error(e: &SemanticError) -> bool {
    e.is_known_size_error()
}

impl Checker<'_> {
    /// The value of the condition `e` when it is known before evaluation: literals, the `int`
    /// values of [`Self::size_value`], `+ - * / %/% %`, comparisons, `!`, and `&&` / `||`
    /// (known when one operand decides them). `None` when unknown (parameters, loop
    /// variables, `real` data, calls).
    pub(super) fn guard_value(&self, e: &Expr) -> Option<GuardValue> {
        use GuardValue::{Int, Real};
        match &e.kind {
            ExprKind::IntLit(v) => Some(Int(*v)),
            ExprKind::RealLit(x) => Some(Real(*x)),
            ExprKind::Unary { op, operand } => {
                let v = self.guard_value(operand)?;
                match (op, v) {
                    (UnOp::Not, v) => Some(Int(i64::from(!v.truth()))),
                    (UnOp::Plus, v) => Some(v),
                    (UnOp::Neg, Int(i)) => i.checked_neg().map(Int),
                    (UnOp::Neg, Real(x)) => Some(Real(-x)),
                }
            }
            ExprKind::Binary {
                op: op @ (BinOp::And | BinOp::Or),
                lhs,
                rhs,
            } => {
                let (a, b) = (self.guard_value(lhs), self.guard_value(rhs));
                let decided = *op == BinOp::Or; // the value that decides the operator
                let bool_of = |v: Option<GuardValue>| v.map(GuardValue::truth);
                match (bool_of(a), bool_of(b)) {
                    (Some(x), _) | (_, Some(x)) if x == decided => Some(Int(i64::from(decided))),
                    (Some(_), Some(_)) => Some(Int(i64::from(!decided))),
                    _ => None,
                }
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let (a, b) = (self.guard_value(lhs)?, self.guard_value(rhs)?);
                let cmp = |f: fn(f64, f64) -> bool| Some(Int(i64::from(f(a.real(), b.real()))));
                match (op, a, b) {
                    (BinOp::Lt, ..) => cmp(|x, y| x < y),
                    (BinOp::Le, ..) => cmp(|x, y| x <= y),
                    (BinOp::Gt, ..) => cmp(|x, y| x > y),
                    (BinOp::Ge, ..) => cmp(|x, y| x >= y),
                    (BinOp::Eq, ..) => cmp(|x, y| x == y),
                    (BinOp::Ne, ..) => cmp(|x, y| x != y),
                    (BinOp::Add, Int(x), Int(y)) => x.checked_add(y).map(Int),
                    (BinOp::Sub, Int(x), Int(y)) => x.checked_sub(y).map(Int),
                    (BinOp::Mul, Int(x), Int(y)) => x.checked_mul(y).map(Int),
                    // `int / int` truncates in Stan, as `%/%` does
                    (BinOp::Div | BinOp::IntDiv, Int(x), Int(y)) if y != 0 => {
                        x.checked_div(y).map(Int)
                    }
                    (BinOp::Mod, Int(x), Int(y)) if y != 0 => x.checked_rem(y).map(Int),
                    (BinOp::Add, ..) => Some(Real(a.real() + b.real())),
                    (BinOp::Sub, ..) => Some(Real(a.real() - b.real())),
                    (BinOp::Mul, ..) => Some(Real(a.real() * b.real())),
                    (BinOp::Div, ..) if b.real() != 0.0 => Some(Real(a.real() / b.real())),
                    _ => None,
                }
            }
            _ => self.size_value(e).map(Int),
        }
    }

    /// Checks `f` as code that runs only when `runs` (`Some(true)`: known to run whenever the
    /// enclosing code does; `Some(false)`: known never to run; `None`: unknown). Known-size
    /// errors found in it are reported only in the first case.
    pub(super) fn guarded<T>(&mut self, runs: Option<bool>, f: impl FnOnce(&mut Self) -> T) -> T {
        let unsure = runs != Some(true);
        if unsure {
            self.guard_depth += 1;
        }
        let r = f(self);
        if unsure {
            self.guard_depth -= 1;
        }
        r
    }

    /// Whether the body of `for (i in lo:hi)` runs (at least once): `lo <= hi` when both are
    /// known, else `None`.
    pub(super) fn loop_runs(&self, lo: &Expr, hi: &Expr) -> Option<bool> {
        let (a, b) = (self.size_value(lo)?, self.size_value(hi)?);
        Some(a <= b)
    }

    /// Whether `s` always leaves the block it is in (the rest of the block never runs):
    /// `break`, `continue`, `return`, `reject`, a block holding one, or an `if` whose condition
    /// is known and whose branch taken always leaves. Loops are not followed (a `break` in
    /// them leaves only the loop).
    pub(super) fn always_leaves(&self, s: &Stmt) -> bool {
        match &s.kind {
            StmtKind::Break | StmtKind::Continue | StmtKind::Return(_) | StmtKind::Reject(_) => {
                true
            }
            StmtKind::Block(stmts) => stmts.iter().any(|s| self.always_leaves(s)),
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => match self.guard_value(cond).map(GuardValue::truth) {
                Some(true) => self.always_leaves(then),
                Some(false) => otherwise.as_ref().is_some_and(|o| self.always_leaves(o)),
                None => false,
            },
            _ => false,
        }
    }
}
