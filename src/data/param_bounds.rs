//! Bounds that the data put in the wrong order (issue 13, item 9): `real<lower=a, upper=b> x;`
//! with a > b in the data file. For a data variable no value can satisfy them; for a parameter
//! the constraining transform fails at every point, which used to surface as "initialisation
//! failed after 100 attempts". Both are reported at binding, naming the file, the variable (and
//! element) and the two bounds.

use std::collections::HashMap;

use crate::syntax::ast::{BinOp, Expr, ExprKind, UnOp, VarDecl};

use super::BoundData;
use super::error::{DataError, DataErrorKind};
use super::eval::{expr_string, type_string};

/// The elements of `e` evaluated from the data in `env`, flattened row-major: numeric literals,
/// names of bound data (any shape), unary `-`/`+`, and `+ - * /` elementwise when one side is a
/// scalar or both have the same number of elements (`*` only with a scalar side). `None` for
/// anything else (a call, a transformed-data or parameter name), when the check is skipped.
fn elements(e: &Expr, env: &BoundData) -> Option<Vec<f64>> {
    match &e.kind {
        ExprKind::IntLit(n) => Some(vec![*n as f64]),
        ExprKind::RealLit(x) => Some(vec![*x]),
        ExprKind::Var(name) => env.values.get(name).map(|v| v.values.to_vec()),
        ExprKind::Unary { op, operand } => {
            let x = elements(operand, env)?;
            match op {
                UnOp::Neg => Some(x.into_iter().map(|v| -v).collect()),
                UnOp::Plus => Some(x),
                UnOp::Not => None,
            }
        }
        ExprKind::Binary { op, lhs, rhs } => {
            let (a, b) = (elements(lhs, env)?, elements(rhs, env)?);
            let f: fn(f64, f64) -> f64 = match op {
                BinOp::Add => |x, y| x + y,
                BinOp::Sub => |x, y| x - y,
                BinOp::Mul if a.len() == 1 || b.len() == 1 => |x, y| x * y,
                BinOp::Div if b.len() == 1 => |x, y| x / y,
                _ => return None,
            };
            broadcast(&a, &b, f)
        }
        _ => None,
    }
}

/// `f` elementwise over `a` and `b`, a one-element side repeated; `None` for other lengths.
fn broadcast(a: &[f64], b: &[f64], f: fn(f64, f64) -> f64) -> Option<Vec<f64>> {
    let n = a.len().max(b.len());
    if !(a.len() == n || a.len() == 1) || !(b.len() == n || b.len() == 1) {
        return None;
    }
    Some((0..n).map(|i| f(a[i % a.len()], b[i % b.len()])).collect())
}

/// The names of data variables in `e`, in order, without repeats.
fn names_in<'e>(e: &'e Expr, out: &mut Vec<&'e str>) {
    match &e.kind {
        ExprKind::Var(n) => {
            if !out.contains(&n.as_str()) {
                out.push(n);
            }
        }
        ExprKind::Unary { operand, .. } => names_in(operand, out),
        ExprKind::Binary { lhs, rhs, .. } => {
            names_in(lhs, out);
            names_in(rhs, out);
        }
        _ => {}
    }
}

/// The error for the declaration `decl` whose bounds evaluate to `lo` ≥ `hi` (> for data) at
/// element `element` (`None` for a scalar bound), with notes saying where each data value in
/// the bounds came from (`origins`: "from d.json, key `a`").
pub(super) fn reversed(
    decl: &VarDecl,
    what: &str,
    element: Option<usize>,
    (lo, hi): (f64, f64),
    origins: &HashMap<String, String>,
) -> DataError {
    let c = &decl.ty.constraint;
    let (Some(le), Some(ue)) = (&c.lower, &c.upper) else {
        unreachable!("reversed() is called for declarations with both bounds")
    };
    let name = &decl.name.name;
    let target = match element {
        Some(i) => format!("element {} of {what} `{name}`", i + 1),
        None => format!("{what} `{name}`"),
    };
    let shown = |e: &Expr, v: f64| match e.kind {
        ExprKind::IntLit(_) | ExprKind::RealLit(_) => format!("{v}"),
        _ => format!("`{}` = {v}", expr_string(e)),
    };
    let mut names = Vec::new();
    names_in(le, &mut names);
    names_in(ue, &mut names);
    let sources: Vec<String> = names
        .iter()
        .filter_map(|n| origins.get(*n).map(|o| format!("`{n}` {o}")))
        .collect();
    let mut err = DataError::new(
        DataErrorKind::BoundViolation,
        format!(
            "the bounds of {target} (declared `{}`) are in the wrong order: lower = {} is not \
             below upper = {}{}",
            type_string(&decl.ty),
            shown(le, lo),
            shown(ue, hi),
            if sources.is_empty() {
                String::new()
            } else {
                format!(" ({})", sources.join("; "))
            }
        ),
    )
    .with_declaration(decl.span)
    .with_help(
        "correct the values in the data file so that lower < upper, or swap the bounds in \
         the declaration",
    );
    if what == "parameter" {
        err = err.with_note(
            "note: no value of the parameter satisfies these bounds, so the model cannot be evaluated \
             at any point",
        );
    }
    err
}

/// Checks the parameters in `params` whose two bounds the data fix (see [`elements`]): each
/// element needs lower < upper. Bounds that depend on anything else are checked at run time.
///
/// Errors: [`DataErrorKind::BoundViolation`] from [`reversed`].
pub(super) fn check_parameter_bounds(
    params: &[VarDecl],
    env: &BoundData,
    origins: &HashMap<String, String>,
) -> Result<(), DataError> {
    for decl in params {
        let c = &decl.ty.constraint;
        let (Some(le), Some(ue)) = (&c.lower, &c.upper) else {
            continue;
        };
        let (Some(lo), Some(hi)) = (elements(le, env), elements(ue, env)) else {
            continue;
        };
        let Some(pairs) = broadcast(&lo, &hi, |x, y| if x < y { 0.0 } else { 1.0 }) else {
            continue;
        };
        if let Some(i) = pairs.iter().position(|&bad| bad != 0.0) {
            let element = (pairs.len() > 1).then_some(i);
            let (l, h) = (lo[i % lo.len()], hi[i % hi.len()]);
            return Err(reversed(decl, "parameter", element, (l, h), origins));
        }
    }
    Ok(())
}
