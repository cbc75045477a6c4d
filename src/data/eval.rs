//! The small evaluator for size and bound expressions of `data` declarations (literals, names
//! of data bound earlier, `+ - * %/%`, unary minus, and for bounds also `/` and `^`), and the
//! printing of declared types and expressions for messages.

use crate::syntax::ast::{BinOp, Expr, ExprKind, SizedBase, SizedType, UnOp, int_in_range};

use super::BoundData;
use super::error::{DataError, DataErrorKind};

/// Looks up a scalar data variable bound before `decl` (the declaration being bound).
fn scalar<'a>(
    name: &str,
    expr: &Expr,
    env: &'a BoundData,
    decl: &str,
) -> Result<&'a super::DataValue, DataError> {
    match env.values.get(name) {
        Some(v) if v.dims.is_empty() => Ok(v),
        Some(v) => Err(DataError::new(
            DataErrorKind::UnsupportedExpression,
            format!(
                "`{name}` in the declaration of `{decl}` has {} dimensions, but only scalar \
                 data can appear in sizes and bounds of data declarations",
                v.dims.len()
            ),
        )
        .with_primary(expr.span, "not a scalar")
        .with_help("use a scalar (e.g. an `int` size) here, or compute the value in `transformed data`")),
        None => Err(DataError::new(
            DataErrorKind::UnsupportedExpression,
            format!(
                "`{name}` in the declaration of `{decl}` is not a data variable declared before `{decl}`"
            ),
        )
        .with_primary(expr.span, "unknown here")
        .with_help(format!("declare `{name}` earlier in the `data` block"))),
    }
}

fn unsupported(expr: &Expr, decl: &str, what: &str) -> DataError {
    DataError::new(
        DataErrorKind::UnsupportedExpression,
        format!(
            "the {what} `{}` in the declaration of `{decl}` is not supported: only simple {what} \
             expressions are supported in data declarations",
            expr_string(expr)
        ),
    )
    .with_primary(expr.span, format!("unsupported {what} expression"))
    .with_help(
        "use integer literals, int data declared earlier, `+`, `-`, `*`, `%/%` and parentheses \
         (or compute the value in `transformed data`)",
    )
}

/// Evaluates a size expression of the declaration of `decl` to an integer.
///
/// Allowed: int literals, names of int scalar data bound earlier (in `env`), `+ - * %/%`,
/// unary `-`/`+`. Errors ([`DataErrorKind::UnsupportedExpression`], primary span at the
/// expression): any other form, a real-valued name, a result outside the 32-bit range of `int`,
/// division by zero.
pub fn eval_size(expr: &Expr, env: &BoundData, decl: &str) -> Result<i64, DataError> {
    let overflow = || {
        DataError::new(
            DataErrorKind::UnsupportedExpression,
            format!(
                "the size `{}` of `{decl}` overflows the range of int (-2147483648 to \
                 2147483647, 32-bit as in Stan)",
                expr_string(expr)
            ),
        )
        .with_primary(expr.span, "too large")
        .with_help("check the values of the sizes it uses")
    };
    match &expr.kind {
        ExprKind::IntLit(n) => Ok(*n),
        ExprKind::Var(name) => {
            let v = scalar(name, expr, env, decl)?;
            if !v.is_int {
                return Err(DataError::new(
                    DataErrorKind::UnsupportedExpression,
                    format!("`{name}` is real, but the sizes of `{decl}` must be int"),
                )
                .with_primary(expr.span, "real-valued size")
                .with_help(format!("declare `{name}` as `int`")));
            }
            Ok(v.values[0] as i64)
        }
        ExprKind::Unary { op, operand } => {
            let x = eval_size(operand, env, decl)?;
            match op {
                UnOp::Neg => int_in_range(x.checked_neg()).ok_or_else(overflow),
                UnOp::Plus => Ok(x),
                UnOp::Not => Err(unsupported(expr, decl, "size")),
            }
        }
        ExprKind::Binary { op, lhs, rhs } => {
            let (a, b) = (eval_size(lhs, env, decl)?, eval_size(rhs, env, decl)?);
            match op {
                BinOp::Add => int_in_range(a.checked_add(b)).ok_or_else(overflow),
                BinOp::Sub => int_in_range(a.checked_sub(b)).ok_or_else(overflow),
                BinOp::Mul => int_in_range(a.checked_mul(b)).ok_or_else(overflow),
                BinOp::IntDiv | BinOp::Mod if b == 0 => Err(DataError::new(
                    DataErrorKind::UnsupportedExpression,
                    format!(
                        "the size `{}` of `{decl}` divides by zero",
                        expr_string(expr)
                    ),
                )
                .with_primary(expr.span, "division by zero")
                .with_help("check the values of the sizes it uses")),
                // Integer division truncates toward zero, as Stan's `%/%`.
                BinOp::IntDiv => a.checked_div(b).ok_or_else(overflow),
                BinOp::Mod => a.checked_rem(b).ok_or_else(overflow),
                _ => Err(unsupported(expr, decl, "size")),
            }
        }
        _ => Err(unsupported(expr, decl, "size")),
    }
}

/// Evaluates a bound (`lower=`/`upper=`) of the declaration of `decl` in reals.
///
/// Allowed: int and real literals, names of scalar data bound earlier, `+ - * / ^ %/%`, unary
/// `-`/`+`. Errors: [`DataErrorKind::UnsupportedExpression`] at the expression's span.
pub fn eval_bound(expr: &Expr, env: &BoundData, decl: &str) -> Result<f64, DataError> {
    match &expr.kind {
        ExprKind::IntLit(n) => Ok(*n as f64),
        ExprKind::RealLit(x) => Ok(*x),
        ExprKind::Var(name) => Ok(scalar(name, expr, env, decl)?.values[0]),
        ExprKind::Unary { op, operand } => {
            let x = eval_bound(operand, env, decl)?;
            match op {
                UnOp::Neg => Ok(-x),
                UnOp::Plus => Ok(x),
                UnOp::Not => Err(unsupported(expr, decl, "bound")),
            }
        }
        ExprKind::Binary { op, lhs, rhs } => {
            let (a, b) = (eval_bound(lhs, env, decl)?, eval_bound(rhs, env, decl)?);
            match op {
                BinOp::Add => Ok(a + b),
                BinOp::Sub => Ok(a - b),
                BinOp::Mul => Ok(a * b),
                BinOp::Div => Ok(a / b),
                BinOp::Pow => Ok(a.powf(b)),
                BinOp::IntDiv => Ok((a / b).trunc()),
                _ => Err(unsupported(expr, decl, "bound")),
            }
        }
        _ => Err(unsupported(expr, decl, "bound")),
    }
}

/// The expression as the user would write it, for messages (forms the evaluators do not
/// support are printed approximately, e.g. calls and indexing).
pub fn expr_string(expr: &Expr) -> String {
    match &expr.kind {
        ExprKind::IntLit(n) => n.to_string(),
        ExprKind::RealLit(x) => format!("{x:?}"),
        ExprKind::Var(name) => name.clone(),
        ExprKind::Unary { op, operand } => {
            let sym = match op {
                UnOp::Neg => "-",
                UnOp::Plus => "+",
                UnOp::Not => "!",
            };
            format!("{sym}{}", operand_string(operand))
        }
        ExprKind::Binary { op, lhs, rhs } => format!(
            "{} {} {}",
            operand_string(lhs),
            op.symbol(),
            operand_string(rhs)
        ),
        ExprKind::Call { name, args, .. } => {
            let args: Vec<String> = args.iter().map(expr_string).collect();
            format!("{}({})", name.name, args.join(", "))
        }
        ExprKind::Index { base, .. } => format!("{}[…]", operand_string(base)),
        ExprKind::Ternary { .. } => "… ? … : …".to_string(),
        ExprKind::RowVectorLit(items) => {
            let items: Vec<String> = items.iter().map(expr_string).collect();
            format!("[{}]", items.join(", "))
        }
        ExprKind::ArrayLit(items) => {
            let items: Vec<String> = items.iter().map(expr_string).collect();
            format!("{{{}}}", items.join(", "))
        }
        ExprKind::Transpose(inner) => format!("{}'", operand_string(inner)),
    }
}

/// Parenthesises compound operands so that the printed text keeps the tree's grouping.
fn operand_string(expr: &Expr) -> String {
    match &expr.kind {
        ExprKind::Binary { .. } | ExprKind::Ternary { .. } => format!("({})", expr_string(expr)),
        _ => expr_string(expr),
    }
}

/// The declared type as written, e.g. `array[N] int<lower=0, upper=1>` or `matrix[N, K]`.
pub fn type_string(ty: &SizedType) -> String {
    let mut out = String::new();
    if !ty.array_dims.is_empty() {
        let dims: Vec<String> = ty.array_dims.iter().map(expr_string).collect();
        out.push_str(&format!("array[{}] ", dims.join(", ")));
    }
    let c = &ty.constraint;
    let mut parts = Vec::new();
    if let Some(e) = &c.lower {
        parts.push(format!("lower={}", expr_string(e)));
    }
    if let Some(e) = &c.upper {
        parts.push(format!("upper={}", expr_string(e)));
    }
    if let Some(e) = &c.offset {
        parts.push(format!("offset={}", expr_string(e)));
    }
    if let Some(e) = &c.multiplier {
        parts.push(format!("multiplier={}", expr_string(e)));
    }
    let constraint = if parts.is_empty() {
        String::new()
    } else {
        format!("<{}>", parts.join(", "))
    };
    let one = |kw: &str, e: &Expr| format!("{kw}{constraint}[{}]", expr_string(e));
    let base = match &ty.base {
        SizedBase::Int => format!("int{constraint}"),
        SizedBase::Real => format!("real{constraint}"),
        SizedBase::Vector(n) => one("vector", n),
        SizedBase::RowVector(n) => one("row_vector", n),
        SizedBase::Matrix(r, c) => {
            format!("matrix{constraint}[{}, {}]", expr_string(r), expr_string(c))
        }
        SizedBase::Simplex(n) => one("simplex", n),
        SizedBase::Ordered(n) => one("ordered", n),
        SizedBase::PositiveOrdered(n) => one("positive_ordered", n),
        SizedBase::CholeskyFactorCorr(n) => one("cholesky_factor_corr", n),
        SizedBase::CholeskyFactorCov(n) => one("cholesky_factor_cov", n),
        SizedBase::CovMatrix(n) => one("cov_matrix", n),
        SizedBase::CorrMatrix(n) => one("corr_matrix", n),
    };
    out.push_str(&base);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::DataValue;
    use crate::syntax::Span;

    fn e(kind: ExprKind) -> Expr {
        Expr {
            kind,
            span: Span::new(0, 3, 5),
        }
    }
    fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
        e(ExprKind::Binary {
            op,
            lhs: Box::new(a),
            rhs: Box::new(b),
        })
    }
    fn env() -> BoundData {
        let mut env = BoundData::default();
        env.values.insert(
            "N".into(),
            DataValue {
                dims: vec![],
                values: vec![10.0].into(),
                is_int: true,
                column_major: false,
            },
        );
        env.values.insert(
            "s".into(),
            DataValue {
                dims: vec![],
                values: vec![0.5].into(),
                is_int: false,
                column_major: false,
            },
        );
        env
    }

    #[test]
    fn sizes_evaluate_with_int_division_and_minus() {
        let n = || e(ExprKind::Var("N".into()));
        // (N + 2) %/% 4 * 3 - -1 = 3 * 3 + 1 = 10
        let x = bin(
            BinOp::Sub,
            bin(
                BinOp::Mul,
                bin(
                    BinOp::IntDiv,
                    bin(BinOp::Add, n(), e(ExprKind::IntLit(2))),
                    e(ExprKind::IntLit(4)),
                ),
                e(ExprKind::IntLit(3)),
            ),
            e(ExprKind::Unary {
                op: UnOp::Neg,
                operand: Box::new(e(ExprKind::IntLit(1))),
            }),
        );
        assert_eq!(eval_size(&x, &env(), "y").unwrap(), 10);
        assert_eq!(expr_string(&x), "(((N + 2) %/% 4) * 3) - -1");
    }

    #[test]
    fn unsupported_sizes_point_at_the_expression() {
        let call = e(ExprKind::Call {
            name: crate::syntax::ast::Ident {
                name: "size".into(),
                span: Span::new(0, 3, 7),
            },
            args: vec![e(ExprKind::Var("N".into()))],
            conditional: false,
        });
        let err = eval_size(&call, &env(), "y").unwrap_err();
        assert_eq!(err.kind, DataErrorKind::UnsupportedExpression);
        assert_eq!(err.primary.as_ref().unwrap().0, Span::new(0, 3, 5));
        assert!(
            err.message
                .contains("only simple size expressions are supported")
        );
        let real = eval_size(&e(ExprKind::Var("s".into())), &env(), "y").unwrap_err();
        assert!(real.message.contains("`s` is real"), "{}", real.message);
        let unknown = eval_size(&e(ExprKind::Var("M".into())), &env(), "y").unwrap_err();
        assert!(
            unknown
                .message
                .contains("not a data variable declared before `y`")
        );
        let div0 = bin(
            BinOp::IntDiv,
            e(ExprKind::IntLit(1)),
            e(ExprKind::IntLit(0)),
        );
        assert!(
            eval_size(&div0, &env(), "y")
                .unwrap_err()
                .message
                .contains("divides by zero")
        );
    }

    #[test]
    fn bounds_evaluate_in_reals() {
        let x = bin(
            BinOp::Div,
            e(ExprKind::Var("s".into())),
            e(ExprKind::IntLit(4)),
        );
        assert_eq!(eval_bound(&x, &env(), "y").unwrap(), 0.125);
    }
}
