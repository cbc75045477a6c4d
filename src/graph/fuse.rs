//! Planning the `~` statements of the model block once the data are bound: which outcomes are
//! data already checked against their family's support, and which statements run as the fused
//! pass of a generalised linear model (`eval::glm`).
//!
//! Both are facts about data, so they are established once here rather than at every
//! evaluation (issue 16, "data checks once"; Stan's compiler likewise checks data constraints
//! when it reads the data, not in the log density).
//!
//! A variate outside its family's support is an error here when the statement runs
//! unconditionally (at the top of the model block, outside loops and branches): it names the
//! element, the value and the statement, where evaluation would only report that no initial
//! value could be found. Inside a branch or loop the statement may never run, so the check is
//! left to evaluation.

use crate::distributions::{self, Family};
use crate::syntax::ast::BinOp;

use super::error::GraphError;
use super::ir::{Ex, Fusion, GlmShape, St, StKind};
use super::value::{Base, Data, Value};

/// Fills in the [`super::ir::TildePlan`] of every `~` statement of `body` (the lowered model
/// block) from the bound data and transformed data `globals`.
///
/// Errors: [`GraphError::OutsideSupport`] when an unconditional `~` statement's data variate
/// has an element outside the family's support (NaN, the mark of an unobserved value, is left
/// to evaluation).
pub(super) fn plan_model(
    body: &mut [St],
    globals: &[Value],
    names: &[String],
) -> Result<(), GraphError> {
    let g = Globals { globals, names };
    for st in body {
        plan(st, &g, true)?;
    }
    Ok(())
}

/// The bound data and transformed data, with their names.
struct Globals<'a> {
    globals: &'a [Value],
    names: &'a [String],
}

fn plan(st: &mut St, g: &Globals, unconditional: bool) -> Result<(), GraphError> {
    let globals = g.globals;
    let span = st.span;
    match &mut st.kind {
        StKind::Tilde {
            lhs,
            family,
            args,
            plan,
            trunc,
        } => {
            let Ex::Global(gi) = lhs else { return Ok(()) };
            plan.variate_checked = check_variate(g, *gi, *family, unconditional, span)?;
            if trunc.is_none() {
                let fusion = fusion(*family, lhs, args, true, plan.variate_checked, globals);
                wrap(st, fusion);
            }
        }
        StKind::TargetPlus(Ex::Lpdf {
            family,
            propto,
            args,
        }) => {
            let Some(Ex::Global(gi)) = args.first() else {
                return Ok(());
            };
            // The normalised `_lpdf` checks its variate at each evaluation on the unfused path
            // (its planned `~` twin is what skips it), so the check made here serves the fused
            // pass only; an unconditional violation is reported at build time all the same.
            let checked = check_variate(g, *gi, *family, unconditional, span)?;
            let (lhs, rest) = (args[0].clone(), args[1..].to_vec());
            let fusion = fusion(*family, &lhs, &rest, *propto, checked, globals);
            wrap(st, fusion);
        }
        StKind::Block(v) => {
            for s in v {
                plan(s, g, unconditional)?;
            }
        }
        StKind::Fast { plain, .. } => plan(plain, g, false)?,
        StKind::For { body, .. } | StKind::ForEach { body, .. } | StKind::While { body, .. } => {
            plan(body, g, false)?
        }
        StKind::If {
            then, otherwise, ..
        } => {
            plan(then, g, false)?;
            if let Some(o) = otherwise {
                plan(o, g, false)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// Replaces `st` by a [`StKind::Fused`] that falls back to it, when there is a fusion.
fn wrap(st: &mut St, fusion: Option<Fusion>) {
    if let Some(fusion) = fusion {
        let span = st.span;
        let plain = std::mem::replace(
            st,
            St {
                kind: StKind::Break,
                span,
            },
        );
        *st = St {
            kind: StKind::Fused {
                fusion: Box::new(fusion),
                plain: Box::new(plain),
            },
            span,
        };
    }
}

/// Checks the data variate (global `gi`) of a `family` statement against the family's support:
/// `true` when every element is inside it (and none is NaN, the mark of an unobserved value).
///
/// Errors: [`GraphError::OutsideSupport`] for an element outside the support when the
/// statement runs `unconditionally`.
fn check_variate(
    g: &Globals,
    gi: u32,
    family: Family,
    unconditional: bool,
    span: crate::syntax::Span,
) -> Result<bool, GraphError> {
    let var = &g.globals[gi as usize];
    let Some(values) = data_values(var) else {
        return Ok(false);
    };
    if distributions::variate_support(family).is_none() {
        return Ok(false);
    }
    match distributions::outside_support(family, values) {
        Some((i, requirement)) if unconditional => {
            let name = &g.names[gi as usize];
            let which = match var {
                Value::T(_) => format!("{name}[{}]", i + 1),
                _ => name.clone(),
            };
            Err(GraphError::OutsideSupport {
                name: name.clone(),
                message: format!(
                    "{which} is {}, but as the outcome of `{}` it must be {requirement}",
                    values[i],
                    family.sig().name
                ),
                span,
            })
        }
        Some(_) => Ok(false),
        None => Ok(!values.iter().any(|x| x.is_nan())),
    }
}

/// The fusion of a statement `lhs ~ family(args…)` (or its `target +=` form), when it has a
/// generalised-linear-model shape.
fn fusion(
    family: Family,
    lhs: &Ex,
    args: &[Ex],
    propto: bool,
    variate_checked: bool,
    globals: &[Value],
) -> Option<Fusion> {
    let Ex::Global(gi) = lhs else { return None };
    let n = data_values(&globals[*gi as usize])?.len();
    let shape = glm_shape(family, args, globals, n)?;
    Some(Fusion {
        shape,
        lhs: lhs.clone(),
        family,
        args: args.to_vec(),
        propto,
        variate_checked,
    })
}

/// The values of a data or transformed data container (scalars are cheap to check at each
/// evaluation and are left to it).
fn data_values(v: &Value) -> Option<&[f64]> {
    match v {
        Value::Int(_) | Value::Real(_) => None,
        Value::T(t) => match &t.data {
            Data::Real(xs) | Data::Int(xs) => Some(xs),
            Data::Var(_) => None,
        },
        Value::Var(_) => None,
    }
}

/// The parts of `family(α + X · β, …)` (either order of the sum, or `X · β` alone) with `X` a
/// data `n × K` matrix, for the families with a fused pass: `bernoulli_logit`, `poisson_log`
/// and `normal` (location first).
fn glm_shape(family: Family, args: &[Ex], globals: &[Value], n: usize) -> Option<GlmShape> {
    if !matches!(
        family,
        Family::BernoulliLogit | Family::PoissonLog | Family::Normal
    ) {
        return None;
    }
    let is_x = |e: &Ex| -> Option<u32> {
        let Ex::Global(x) = e else { return None };
        match &globals[*x as usize] {
            Value::T(t)
                if t.arr.is_empty()
                    && matches!(t.base, Base::Matrix(rows, _) if rows == n)
                    && !matches!(t.data, Data::Var(_)) =>
            {
                Some(*x)
            }
            _ => None,
        }
    };
    let product = |e: &Ex| -> Option<(u32, Ex)> {
        match e {
            Ex::Bin(BinOp::Mul, a, b) => is_x(a).map(|x| (x, (**b).clone())),
            _ => None,
        }
    };
    let loc = args.first()?;
    if let Some((x, beta)) = product(loc) {
        return Some(GlmShape {
            x,
            alpha: None,
            beta,
        });
    }
    let Ex::Bin(BinOp::Add, l, r) = loc else {
        return None;
    };
    let (x, beta, alpha) = match (product(l), product(r)) {
        (Some((x, beta)), _) => (x, beta, (**r).clone()),
        (None, Some((x, beta))) => (x, beta, (**l).clone()),
        (None, None) => return None,
    };
    Some(GlmShape {
        x,
        alpha: Some(alpha),
        beta,
    })
}
