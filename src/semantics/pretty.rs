//! Expressions printed back as source text, for messages and `help:` notes (spans are not
//! needed: the printed form is what the user would type).

use crate::syntax::ast::{Expr, ExprKind, Index, UnOp};

/// `expr` as source text, fully parenthesising nested binary operations.
pub fn expr(e: &Expr) -> String {
    let mut out = String::new();
    write_expr(&mut out, e, false);
    out
}

fn write_expr(out: &mut String, e: &Expr, nested: bool) {
    match &e.kind {
        ExprKind::IntLit(i) => out.push_str(&i.to_string()),
        ExprKind::RealLit(x) => out.push_str(&format_real(*x)),
        ExprKind::Var(name) => out.push_str(name),
        ExprKind::Binary { op, lhs, rhs } => {
            if nested {
                out.push('(');
            }
            write_expr(out, lhs, true);
            out.push(' ');
            out.push_str(op.symbol());
            out.push(' ');
            write_expr(out, rhs, true);
            if nested {
                out.push(')');
            }
        }
        ExprKind::Unary { op, operand } => {
            out.push_str(match op {
                UnOp::Neg => "-",
                UnOp::Plus => "+",
                UnOp::Not => "!",
            });
            write_expr(out, operand, true);
        }
        ExprKind::Call {
            name,
            args,
            conditional,
        } => {
            out.push_str(&name.name);
            out.push('(');
            for (i, a) in args.iter().enumerate() {
                if i == 1 && *conditional {
                    out.push_str(" | ");
                } else if i > 0 {
                    out.push_str(", ");
                }
                write_expr(out, a, false);
            }
            out.push(')');
        }
        ExprKind::Index { base, indices } => {
            write_expr(out, base, true);
            out.push('[');
            for (i, ix) in indices.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                match ix {
                    Index::Single(e) => write_expr(out, e, false),
                    Index::Range(lo, hi) => {
                        if let Some(lo) = lo {
                            write_expr(out, lo, false);
                        }
                        out.push(':');
                        if let Some(hi) = hi {
                            write_expr(out, hi, false);
                        }
                    }
                    Index::All => out.push(':'),
                }
            }
            out.push(']');
        }
        ExprKind::Ternary {
            cond,
            then,
            otherwise,
        } => {
            if nested {
                out.push('(');
            }
            write_expr(out, cond, true);
            out.push_str(" ? ");
            write_expr(out, then, true);
            out.push_str(" : ");
            write_expr(out, otherwise, true);
            if nested {
                out.push(')');
            }
        }
        ExprKind::RowVectorLit(items) => write_list(out, items, '[', ']'),
        ExprKind::ArrayLit(items) => write_list(out, items, '{', '}'),
        ExprKind::Transpose(inner) => {
            write_expr(out, inner, true);
            out.push('\'');
        }
    }
}

fn write_list(out: &mut String, items: &[Expr], open: char, close: char) {
    out.push(open);
    for (i, a) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_expr(out, a, false);
    }
    out.push(close);
}

/// A real literal with a decimal point, so it reads back as `real` (`1` prints as `1.0`).
fn format_real(x: f64) -> String {
    let s = x.to_string();
    if s.contains(['.', 'e', 'E', 'i', 'N']) {
        s
    } else {
        format!("{s}.0")
    }
}

/// The value of a constant expression built from literals, unary minus and `+ - * /`
/// (used to compare declared bounds with a distribution's support), or `None`.
pub fn constant_value(e: &Expr) -> Option<f64> {
    use crate::syntax::ast::BinOp;
    match &e.kind {
        ExprKind::IntLit(i) => Some(*i as f64),
        ExprKind::RealLit(x) => Some(*x),
        ExprKind::Unary {
            op: UnOp::Neg,
            operand,
        } => constant_value(operand).map(|v| -v),
        ExprKind::Unary {
            op: UnOp::Plus,
            operand,
        } => constant_value(operand),
        ExprKind::Binary { op, lhs, rhs } => {
            let (a, b) = (constant_value(lhs)?, constant_value(rhs)?);
            match op {
                BinOp::Add => Some(a + b),
                BinOp::Sub => Some(a - b),
                BinOp::Mul => Some(a * b),
                BinOp::Div if b != 0.0 => Some(a / b),
                _ => None,
            }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::ast::{BinOp, Ident};
    use crate::syntax::span::Span;

    fn e(kind: ExprKind) -> Expr {
        Expr {
            kind,
            span: Span::default(),
        }
    }

    #[test]
    fn prints_source_like_text() {
        let one_minus_a = e(ExprKind::Binary {
            op: BinOp::Sub,
            lhs: Box::new(e(ExprKind::IntLit(1))),
            rhs: Box::new(e(ExprKind::Var("a".into()))),
        });
        assert_eq!(expr(&one_minus_a), "1 - a");
        let call = e(ExprKind::Call {
            name: Ident {
                name: "normal_lpdf".into(),
                span: Span::default(),
            },
            args: vec![e(ExprKind::Var("y".into())), one_minus_a.clone()],
            conditional: true,
        });
        assert_eq!(expr(&call), "normal_lpdf(y | 1 - a)");
        assert_eq!(expr(&e(ExprKind::RealLit(2.0))), "2.0");
        assert_eq!(constant_value(&one_minus_a), None);
        let neg = e(ExprKind::Unary {
            op: UnOp::Neg,
            operand: Box::new(e(ExprKind::RealLit(0.5))),
        });
        assert_eq!(constant_value(&neg), Some(-0.5));
    }
}
