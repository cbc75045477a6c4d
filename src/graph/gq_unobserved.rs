//! `generated quantities` without an unobserved data variable (`bayesc predict` on new data
//! that lacks the outcome, whose entries are then placeholders): every statement that reads
//! it, or reads a variable computed from it, is removed at any nesting depth (inside loops,
//! blocks and branches), the other statements of the same loop body still run, and the
//! generated quantities those removed statements would have assigned are *left out* whole
//! ([`Model::left_out_quantities`](super::Model::left_out_quantities)).
//!
//! [X]: fresh-user finding, session 20 — `for (n in 1:N) { y_hat[n] = normal_rng(…);
//! log_lik[n] = normal_lpdf(y[n] | …); }` failed at every draw on data without `y`, which made
//! `y_hat` NaN too (the failure analysis of `Model::write_outputs` works per top-level
//! statement); with the two assignments in separate loops the predictions were right.
//!
//! No silent wrong answer: a variable assigned by a removed statement is tainted as a whole
//! (all its elements, even if only one element's assignment was removed), so a quantity
//! partly computed from the placeholder is left out, never printed. A removed `break` or
//! `continue` would change how often its loop runs, so the whole loop is removed instead; a
//! loop body is pruned until the taint no longer grows (a statement may read, in the next
//! iteration, a variable a later statement of the body assigns).

use super::gq_deps::statement_deps;
use super::ir::{St, StKind};

/// What is tainted by the unobserved variable: the globals (the variable itself) and the
/// slots assigned by removed statements.
#[derive(Default)]
pub(super) struct Taint {
    pub globals: Vec<u32>,
    pub slots: Vec<u32>,
}

impl Taint {
    /// Whether statement `st` reads anything tainted (anywhere inside it).
    fn touches(&self, st: &St) -> bool {
        let d = statement_deps(st);
        d.globals.iter().any(|g| self.globals.contains(g))
            || d.reads.iter().any(|s| self.slots.contains(s))
    }

    /// Taints what `st` assigns (variables declared outside it, and its own declaration).
    fn remove(&mut self, st: &St) {
        for s in statement_deps(st).writes {
            if !self.slots.contains(&s) {
                self.slots.push(s);
            }
        }
    }
}

/// The result of pruning one statement.
enum Pruned {
    /// The statement, with the parts that read tainted values removed.
    Keep(St),
    /// The statement is removed whole; `escapes` when it held a `break`/`continue` of an
    /// enclosing loop, which must then go too.
    Drop { escapes: bool },
}

/// Prunes `body` (the top-level statements of `generated quantities`) against `taint`: each
/// statement is kept, kept with parts removed, or replaced by an empty block when removed
/// whole (so the result is parallel to `body`). `taint.slots` ends holding every slot a
/// removed statement would have assigned.
pub(super) fn prune_body(body: &[St], taint: &mut Taint) -> Vec<St> {
    body.iter()
        .map(|st| match prune(st, taint) {
            Pruned::Keep(s) => s,
            Pruned::Drop { .. } => empty(st),
        })
        .collect()
}

fn empty(st: &St) -> St {
    St {
        kind: StKind::Block(Vec::new()),
        span: st.span,
    }
}

/// Whether `st` holds a `break` or `continue` that leaves `st` (not nested in a loop of its own).
fn escapes(st: &St) -> bool {
    match &st.kind {
        StKind::Break | StKind::Continue => true,
        StKind::Block(sts) => sts.iter().any(escapes),
        StKind::If {
            then, otherwise, ..
        } => escapes(then) || otherwise.as_deref().is_some_and(escapes),
        StKind::Fused { plain, .. } => escapes(plain),
        _ => false,
    }
}

fn drop_whole(st: &St, taint: &mut Taint) -> Pruned {
    taint.remove(st);
    Pruned::Drop {
        escapes: escapes(st),
    }
}

/// A loop body pruned until the taint is stable (see the module docs); `None` when the loop
/// must go whole (its body dropped a `break`/`continue`).
fn prune_loop_body(body: &St, taint: &mut Taint) -> Option<St> {
    loop {
        let before = taint.slots.len();
        let r = prune(body, taint);
        if taint.slots.len() == before {
            return match r {
                Pruned::Keep(s) => Some(s),
                Pruned::Drop { escapes: true } => None,
                Pruned::Drop { escapes: false } => Some(empty(body)),
            };
        }
    }
}

fn prune(st: &St, taint: &mut Taint) -> Pruned {
    if !taint.touches(st) {
        return Pruned::Keep(st.clone());
    }
    let keep = |kind: StKind| {
        Pruned::Keep(St {
            kind,
            span: st.span,
        })
    };
    let reads = |taint: &Taint, e: &[&super::ir::Ex]| {
        e.iter().any(|e| {
            let probe = St {
                kind: StKind::ExprStmt((*e).clone()),
                span: st.span,
            };
            taint.touches(&probe)
        })
    };
    match &st.kind {
        StKind::Block(sts) => {
            let mut kept = Vec::with_capacity(sts.len());
            for s in sts {
                match prune(s, taint) {
                    Pruned::Keep(s) => kept.push(s),
                    Pruned::Drop { escapes: false } => {}
                    Pruned::Drop { escapes: true } => return drop_whole(st, taint),
                }
            }
            keep(StKind::Block(kept))
        }
        StKind::For {
            slot,
            var,
            lo,
            hi,
            body,
        } => {
            if reads(taint, &[lo, hi]) {
                return drop_whole(st, taint);
            }
            match prune_loop_body(body, taint) {
                Some(b) => keep(StKind::For {
                    slot: *slot,
                    var: var.clone(),
                    lo: lo.clone(),
                    hi: hi.clone(),
                    body: Box::new(b),
                }),
                None => drop_whole(st, taint),
            }
        }
        StKind::ForEach { slot, coll, body } => {
            if reads(taint, &[coll]) {
                return drop_whole(st, taint);
            }
            match prune_loop_body(body, taint) {
                Some(b) => keep(StKind::ForEach {
                    slot: *slot,
                    coll: coll.clone(),
                    body: Box::new(b),
                }),
                None => drop_whole(st, taint),
            }
        }
        StKind::While { cond, body } => {
            if reads(taint, &[cond]) {
                return drop_whole(st, taint);
            }
            match prune_loop_body(body, taint) {
                Some(b) => keep(StKind::While {
                    cond: cond.clone(),
                    body: Box::new(b),
                }),
                None => drop_whole(st, taint),
            }
        }
        StKind::If {
            cond,
            then,
            otherwise,
        } => {
            if reads(taint, &[cond]) {
                return drop_whole(st, taint);
            }
            let branch = |b: &St, taint: &mut Taint| match prune(b, taint) {
                Pruned::Keep(s) => Some(s),
                Pruned::Drop { escapes: false } => Some(empty(b)),
                Pruned::Drop { escapes: true } => None,
            };
            let Some(t) = branch(then, taint) else {
                return drop_whole(st, taint);
            };
            let o = match otherwise {
                Some(o) => match branch(o, taint) {
                    Some(o) => Some(Box::new(o)),
                    None => return drop_whole(st, taint),
                },
                None => None,
            };
            keep(StKind::If {
                cond: cond.clone(),
                then: Box::new(t),
                otherwise: o,
            })
        }
        // the optimised forms run as their plain statement once pruned
        StKind::Fused { plain, .. } | StKind::Fast { plain, .. } => prune(plain, taint),
        _ => drop_whole(st, taint),
    }
}
