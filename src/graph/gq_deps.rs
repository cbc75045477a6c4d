//! Which variables each top-level statement of `generated quantities` reads and assigns, so
//! that a statement that fails at a draw makes NaN only the quantities it computes and those
//! computed from them ([`Model::write_outputs`](super::Model::write_outputs)).
//!
//! The analysis is on slots: every variable has its own slot (slots are never reused), so a
//! slot read by a later statement is the variable a failed statement left unset. Locals and
//! loop variables declared inside a statement are its own business and never listed among
//! its assignments.

use super::ir::{BaseEx, DeclTy, Ex, IxEx, PArg, St, StKind};

/// The slots one top-level statement reads (variables declared outside it, and its own locals,
/// which no other statement can mark failed) and the slots of the variables declared outside
/// it that it assigns (for a top-level declaration, the declared variable itself).
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Deps {
    /// Slots read anywhere in the statement (including its own locals; harmless, see above).
    pub reads: Vec<u32>,
    /// Slots of variables declared outside the statement that it may assign, and, for a
    /// top-level declaration, its variable.
    pub writes: Vec<u32>,
    /// Globals (data and transformed data, by index) read anywhere in the statement.
    pub globals: Vec<u32>,
}

/// The [`Deps`] of each statement of `body`, in order.
pub(super) fn deps(body: &[St]) -> Vec<Deps> {
    body.iter().map(statement_deps).collect()
}

/// For each statement of a body with [`Deps`] `deps`, whether it may depend on the parameters:
/// it reads one of `param_slots` (the parameters' and transformed parameters' slots) or a
/// variable assigned by an earlier statement that may. A statement that does not (it reads
/// only data, constants and its own locals, and may draw `_rng` values) fails, when it does,
/// whatever the parameters are.
pub(super) fn parameter_dependence(deps: &[Deps], param_slots: &[u32]) -> Vec<bool> {
    let mut tainted: Vec<u32> = param_slots.to_vec();
    deps.iter()
        .map(|d| {
            let uses = d.reads.iter().any(|s| tainted.contains(s));
            if uses {
                tainted.extend(&d.writes);
            }
            uses
        })
        .collect()
}

/// The [`Deps`] of one top-level statement.
pub(super) fn statement_deps(st: &St) -> Deps {
    let mut w = Walk::default();
    w.stmt(st);
    let mut writes: Vec<u32> = w
        .assigned
        .iter()
        .copied()
        .filter(|s| !w.declared.contains(s))
        .collect();
    if let StKind::Decl { slot, .. } = &st.kind {
        writes.push(*slot);
    }
    writes.sort_unstable();
    writes.dedup();
    let mut reads = w.reads;
    reads.sort_unstable();
    reads.dedup();
    let mut globals = w.globals;
    globals.sort_unstable();
    globals.dedup();
    Deps {
        reads,
        writes,
        globals,
    }
}

/// The slots seen while walking a statement.
#[derive(Default)]
struct Walk {
    reads: Vec<u32>,
    globals: Vec<u32>,
    assigned: Vec<u32>,
    /// Declared inside (locals, loop variables, and the statement's own declaration).
    declared: Vec<u32>,
}

impl Walk {
    fn stmt(&mut self, st: &St) {
        match &st.kind {
            StKind::Decl { slot, ty, init } => {
                self.declared.push(*slot);
                self.decl_ty(ty);
                if let Some(e) = init {
                    self.expr(e);
                }
            }
            StKind::Assign { slot, idx, op, rhs } => {
                self.assigned.push(*slot);
                // an indexed or compound assignment keeps the rest of the old value
                if !idx.is_empty() || !matches!(op, crate::syntax::ast::AssignOp::Assign) {
                    self.reads.push(*slot);
                }
                self.indices(idx);
                self.expr(rhs);
            }
            StKind::Tilde {
                lhs, args, trunc, ..
            } => {
                self.expr(lhs);
                self.exprs(args);
                if let Some((lo, hi)) = trunc {
                    lo.iter().chain(hi).for_each(|e| self.expr(e));
                }
            }
            StKind::TargetPlus(e) | StKind::ExprStmt(e) => self.expr(e),
            StKind::For {
                slot, lo, hi, body, ..
            } => {
                self.declared.push(*slot);
                self.expr(lo);
                self.expr(hi);
                self.stmt(body);
            }
            StKind::ForEach { slot, coll, body } => {
                self.declared.push(*slot);
                self.expr(coll);
                self.stmt(body);
            }
            StKind::While { cond, body } => {
                self.expr(cond);
                self.stmt(body);
            }
            StKind::If {
                cond,
                then,
                otherwise,
            } => {
                self.expr(cond);
                self.stmt(then);
                if let Some(o) = otherwise {
                    self.stmt(o);
                }
            }
            StKind::Block(sts) => sts.iter().for_each(|s| self.stmt(s)),
            StKind::Fused { plain, .. } | StKind::Fast { plain, .. } => self.stmt(plain),
            StKind::Break | StKind::Continue => {}
            StKind::Reject(args) | StKind::Print(args) => {
                for a in args {
                    if let PArg::Ex(e) = a {
                        self.expr(e);
                    }
                }
            }
            StKind::Return(e) => e.iter().for_each(|e| self.expr(e)),
        }
    }

    fn decl_ty(&mut self, ty: &DeclTy) {
        self.exprs(&ty.arr);
        match &ty.base {
            BaseEx::Scalar => {}
            BaseEx::Vector(n) | BaseEx::RowVector(n) => self.expr(n),
            BaseEx::Matrix(r, c) => {
                self.expr(r);
                self.expr(c);
            }
        }
    }

    fn indices(&mut self, idx: &[IxEx]) {
        for i in idx {
            match i {
                IxEx::Single(e) => self.expr(e),
                IxEx::Range(lo, hi) => lo.iter().chain(hi).for_each(|e| self.expr(e)),
                IxEx::All => {}
            }
        }
    }

    fn exprs(&mut self, es: &[Ex]) {
        es.iter().for_each(|e| self.expr(e));
    }

    fn expr(&mut self, e: &Ex) {
        match e {
            Ex::Int(_) | Ex::Real(_) => {}
            Ex::Global(g) => self.globals.push(*g),
            Ex::Local(s) => self.reads.push(*s),
            Ex::Bin(_, a, b) => {
                self.expr(a);
                self.expr(b);
            }
            Ex::Neg(a) | Ex::Not(a) | Ex::Transpose(a) => self.expr(a),
            Ex::Call(_, args)
            | Ex::UserCall(_, args)
            | Ex::NormalisedUserCall(_, args)
            | Ex::RowVec(args)
            | Ex::Array(args)
            | Ex::Lpdf { args, .. }
            | Ex::Cdf { args, .. }
            | Ex::Rng { args, .. }
            | Ex::MvLpdf { args, .. }
            | Ex::MvRng { args, .. } => self.exprs(args),
            Ex::Ode(o) => {
                self.expr(&o.y0);
                self.expr(&o.t0);
                self.expr(&o.ts);
                if let Some(t) = &o.tol {
                    self.exprs(&t[..]);
                }
                self.exprs(&o.args);
            }
            Ex::Index(a, idx) => {
                self.expr(a);
                self.indices(idx);
            }
            Ex::Ternary(c, a, b) => {
                self.expr(c);
                self.expr(a);
                self.expr(b);
            }
        }
    }
}
