//! Where in its statement a size mismatch found at run time happened. The evaluator knows the
//! statement (its span) and the operation's symbol or function (the fault's message, "size
//! mismatch in `*`: matrix[10, 7] times vector[5]"); when the statement holds exactly one such
//! operation, the error names it and its location instead of the whole statement
//! (`size mismatch in `X * head(beta, 5)`: …` at the `X`). [X] session 18, tester finding 1:
//! sizes the checker cannot follow (a function's result) still fail only at run time.

use std::collections::HashMap;

use crate::semantics::pretty;
use crate::syntax::Span;
use crate::syntax::ast::{Expr, ExprKind, Index, PrintArg, Program, Stmt, StmtKind};

/// An operation written in a statement that fails on operands of the wrong sizes.
#[derive(Clone, Debug)]
pub(crate) struct Op {
    /// The operator's symbol (`*`, `+`, `.*`) or the function's name (`dot_product`).
    name: String,
    /// The operation in the source.
    span: Span,
    /// The operation as written (pretty-printed).
    text: String,
}

/// Per statement span: the operations written directly in it (not in the statements it nests,
/// which have their own spans), for the statements of `transformed parameters`, `model` and
/// `generated quantities`.
pub(crate) type OpSpans = HashMap<Span, Vec<Op>>;

/// The operations of every statement of the blocks that run at each evaluation.
pub(crate) fn collect(program: &Program) -> OpSpans {
    let mut out = OpSpans::new();
    for s in program
        .transformed_parameters
        .iter()
        .chain(&program.model)
        .chain(&program.generated_quantities)
    {
        stmt(s, &mut out);
    }
    out
}

fn stmt(s: &Stmt, out: &mut OpSpans) {
    let mut ops = Vec::new();
    match &s.kind {
        StmtKind::Decl(d) => {
            if let Some(e) = &d.init {
                expr(e, &mut ops);
            }
        }
        StmtKind::Assign { lhs, rhs, .. } => {
            for group in &lhs.indices {
                indices(group, &mut ops);
            }
            expr(rhs, &mut ops);
        }
        StmtKind::Tilde {
            lhs,
            args,
            truncation,
            ..
        } => {
            expr(lhs, &mut ops);
            for a in args {
                expr(a, &mut ops);
            }
            if let Some(t) = truncation {
                for e in t.lower.iter().chain(t.upper.iter()) {
                    expr(e, &mut ops);
                }
            }
        }
        StmtKind::TargetPlus(e) | StmtKind::Expr(e) | StmtKind::Return(Some(e)) => {
            expr(e, &mut ops)
        }
        StmtKind::For { lo, hi, body, .. } => {
            expr(lo, &mut ops);
            expr(hi, &mut ops);
            stmt(body, out);
        }
        StmtKind::ForEach {
            collection, body, ..
        } => {
            expr(collection, &mut ops);
            stmt(body, out);
        }
        StmtKind::While { cond, body } => {
            expr(cond, &mut ops);
            stmt(body, out);
        }
        StmtKind::If {
            cond,
            then,
            otherwise,
        } => {
            expr(cond, &mut ops);
            stmt(then, out);
            if let Some(o) = otherwise {
                stmt(o, out);
            }
        }
        StmtKind::Block(stmts) => {
            for s in stmts {
                stmt(s, out);
            }
        }
        StmtKind::Print(args) | StmtKind::Reject(args) => {
            for a in args {
                if let PrintArg::Expr(e) = a {
                    expr(e, &mut ops);
                }
            }
        }
        StmtKind::Break | StmtKind::Continue | StmtKind::Return(None) => {}
    }
    if !ops.is_empty() {
        out.entry(s.span).or_default().extend(ops);
    }
}

fn indices(group: &[Index], ops: &mut Vec<Op>) {
    for ix in group {
        match ix {
            Index::Single(e) => expr(e, ops),
            Index::Range(lo, hi) => {
                for e in lo.iter().chain(hi.iter()) {
                    expr(e, ops);
                }
            }
            Index::All => {}
        }
    }
}

fn expr(e: &Expr, ops: &mut Vec<Op>) {
    let literal = |x: &Expr| matches!(x.kind, ExprKind::IntLit(_) | ExprKind::RealLit(_));
    match &e.kind {
        ExprKind::IntLit(_) | ExprKind::RealLit(_) | ExprKind::Var(_) => {}
        ExprKind::Binary { op, lhs, rhs } => {
            // a literal operand is a scalar, which fits any size
            if !literal(lhs) && !literal(rhs) {
                ops.push(Op {
                    name: op.symbol().to_string(),
                    span: e.span,
                    text: pretty::expr(e),
                });
            }
            expr(lhs, ops);
            expr(rhs, ops);
        }
        ExprKind::Call { name, args, .. } => {
            ops.push(Op {
                name: name.name.clone(),
                span: e.span,
                text: pretty::expr(e),
            });
            for a in args {
                expr(a, ops);
            }
        }
        ExprKind::Unary { operand, .. } | ExprKind::Transpose(operand) => expr(operand, ops),
        ExprKind::Index { base, indices: ix } => {
            expr(base, ops);
            indices(ix, ops);
        }
        ExprKind::Ternary {
            cond,
            then,
            otherwise,
        } => {
            expr(cond, ops);
            expr(then, ops);
            expr(otherwise, ops);
        }
        ExprKind::RowVectorLit(items) | ExprKind::ArrayLit(items) => {
            for i in items {
                expr(i, ops);
            }
        }
    }
}

/// For a fault `message` of the form "size mismatch in `OP`: …" or "size mismatch in NAME: …"
/// raised by the statement at `stmt`: the span of the one operation of that statement it can
/// be, and the message naming that operation ("size mismatch in `X * b`: …"). `None` when the
/// message is of another kind, or when the statement holds no or several such operations.
pub(crate) fn narrow(ops: &OpSpans, stmt: Span, message: &str) -> Option<(Span, String)> {
    let rest = message.strip_prefix("size mismatch in ")?;
    let (name, tail) = match rest.strip_prefix('`') {
        Some(r) => {
            let (n, t) = r.split_once('`')?;
            (n, t)
        }
        None => {
            let i = rest.find(':')?;
            (&rest[..i], &rest[i..])
        }
    };
    let mut found = ops.get(&stmt)?.iter().filter(|o| o.name == name);
    let op = found.next()?;
    if found.next().is_some() {
        return None;
    }
    Some((op.span, format!("size mismatch in `{}`{tail}", op.text)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::parser::parse_program;

    #[test]
    fn a_mismatch_is_narrowed_to_its_one_operation() {
        let src = "data { int N; matrix[N, 7] X; vector[N] y; } parameters { vector[6] b; } \
                   model { y ~ normal(X * head(b, 5) + 1, 1); y ~ normal(X * b + X * b, 1); }";
        let p = parse_program(src, 0).expect("parses");
        let ops = collect(&p);
        let first = p.model[0].span;
        let msg = "size mismatch in `*`: matrix[10, 7] times vector[5]";
        let (span, text) = narrow(&ops, first, msg).expect("one `*` in the first statement");
        assert_eq!(&src[span.range()], "X * head(b, 5)");
        assert_eq!(
            text,
            "size mismatch in `X * head(b, 5)`: matrix[10, 7] times vector[5]"
        );
        // two products in the second statement: which one failed is unknown
        assert!(narrow(&ops, p.model[1].span, msg).is_none());
        // other faults are left alone
        assert!(narrow(&ops, first, "index 9 out of range").is_none());
        let call = "size mismatch in head: 5 and 6";
        assert_eq!(
            narrow(&ops, first, call).map(|(_, m)| m).as_deref(),
            Some("size mismatch in `head(b, 5)`: 5 and 6")
        );
    }
}
