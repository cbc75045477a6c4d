//! The checks of bound values: integers, bounds, structured constraints, and the support of
//! the model's data outcomes (`~` statements). Part of the binder ([`super`]).

// Checks are written `!(v >= lo)` on purpose: a NaN value must fail them.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

use std::collections::HashMap;

use crate::distributions::Family;
use crate::syntax::Span;
use crate::syntax::ast::{ExprKind, Program, SizedBase, Stmt, StmtKind, VarDecl};

use super::super::constraints::{Locate, check_structure};
use super::super::error::{DataError, DataErrorKind};
use super::super::eval::{eval_bound, type_string};
use super::{Binder, INT_MAX, INT_MIN, Provenance, size_exprs};

/// The data outcomes of the model block's unconditional `~` statements (top level, or in plain
/// blocks): variable name → (family, statement span), the first statement of each name.
/// Binding checks each such variable against its family's support
/// ([`crate::distributions::variate_support`]), so that a value the distribution cannot
/// produce (2 for a Bernoulli outcome) is reported with its file, row and column.
pub(super) fn outcomes(program: &Program) -> HashMap<String, (Family, Span)> {
    fn walk(stmts: &[Stmt], out: &mut HashMap<String, (Family, Span)>) {
        for st in stmts {
            match &st.kind {
                StmtKind::Tilde { lhs, dist, .. } => {
                    if let (ExprKind::Var(name), Some(sig)) =
                        (&lhs.kind, crate::distributions::lookup(&dist.name))
                    {
                        out.entry(name.clone()).or_insert((sig.family, st.span));
                    }
                }
                StmtKind::Block(inner) => walk(inner, out),
                _ => {}
            }
        }
    }
    let mut out = HashMap::new();
    walk(&program.model, &mut out);
    out
}

/// Checks the values of `decl`, the outcome of `family` at the `~` statement `span`, against
/// the family's support; NaN (an unobserved value) is left alone.
///
/// Errors: [`DataErrorKind::ConstraintViolation`] naming the first value outside the support
/// with its file, row and column (or key and element), and pointing at the statement.
pub(super) fn check_outcome(
    decl: &VarDecl,
    family: Family,
    span: Span,
    values: &[f64],
    prov: &Provenance,
) -> Result<(), DataError> {
    // Missing entries of a `@missing` variable are imputed inside the support.
    let found = if values.iter().any(|v| v.is_nan()) {
        let kept: Vec<(usize, f64)> = values
            .iter()
            .copied()
            .enumerate()
            .filter(|(_, v)| !v.is_nan())
            .collect();
        let xs: Vec<f64> = kept.iter().map(|&(_, v)| v).collect();
        crate::distributions::outside_support(family, &xs).map(|(j, r)| (kept[j].0, r))
    } else {
        crate::distributions::outside_support(family, values)
    };
    let Some((i, requirement)) = found else {
        return Ok(());
    };
    let name = &decl.name.name;
    let fam = family.sig().name;
    Err(DataError::new(
        DataErrorKind::ConstraintViolation,
        format!(
            "{}: {}, but `{name}` is the outcome of `{fam}`, whose values must be {requirement}",
            prov.locate(i),
            values[i]
        ),
    )
    .with_primary(span, format!("`{name}` is the outcome of `{fam}` here"))
    .with_help(format!(
        "correct the data, or choose a distribution whose support contains the values of `{name}`"
    )))
}

impl Binder<'_> {
    /// The first declaration (data, then parameters and the other blocks' top-level ones, in
    /// source order) with a size that reads `name`.
    fn sized_by(&self, name: &str) -> Option<&VarDecl> {
        let uses = |d: &&VarDecl| size_exprs(d).iter().any(|e| e.mentions(name));
        self.decls.iter().find(uses).or_else(|| {
            self.sized
                .values()
                .filter(uses)
                .min_by_key(|d| d.span.start)
        })
    }

    /// The error for the value `v` (at `at`) of the `int` variable `name` (declared `ty`)
    /// outside the 32-bit range of `int`. When a declaration takes its size from `name`, the
    /// help says a size must be below 2^31 (a real in its place would not be a size either);
    /// otherwise, to declare the variable `real` if such values are intended.
    fn int_range(&self, name: &str, ty: &str, v: f64, at: String) -> DataError {
        let e = DataError::new(
            DataErrorKind::NotAnInteger,
            format!(
                "{at}: {v} is outside the range of `int` ({} to {}: ints are 32-bit, as in \
                 Stan), and `{name}` is declared `{ty}`",
                i32::MIN,
                i32::MAX
            ),
        );
        match self.sized_by(name) {
            Some(d) => e.with_help(format!(
                "`{name}` gives the size of `{}`, and a size must be below 2^31 = 2147483648 \
                 (no container holds more elements); check the value in the data file",
                d.name.name
            )),
            None => e.with_help(format!(
                "declare `{name}` with `real` in place of `int` if values this large are \
                 intended (a real holds whole numbers exactly up to 2^53)"
            )),
        }
    }

    /// Integer values, bounds and structured constraints.
    pub(super) fn check_values(
        &self,
        decl: &VarDecl,
        dims: &[usize],
        values: &[f64],
        prov: &Provenance,
    ) -> Result<(), DataError> {
        let name = &decl.name.name;
        let ty = type_string(&decl.ty);
        // JSON may spell "NaN" and "Infinity" (Stan's JSON format). NaN is refused everywhere
        // and infinities in containers (observations, where they make every log density NaN or
        // -inf); an infinite scalar (e.g. a bound, `"U": "Infinity"`) is kept as Stan keeps it.
        let missing_ok = super::allows_missing(decl);
        let bad = |v: &f64| (v.is_nan() && !missing_ok) || (v.is_infinite() && !dims.is_empty());
        if let Some(i) = values.iter().position(bad) {
            let v = values[i];
            let (kind, what) = if v.is_nan() {
                (
                    DataErrorKind::MissingValue,
                    "a missing value (NaN)".to_string(),
                )
            } else {
                (
                    DataErrorKind::NotFinite,
                    format!("`{v}`, not a finite number"),
                )
            };
            return Err(DataError::new(
                kind,
                format!(
                    "{}: {what}, but `{name}` needs finite values",
                    prov.locate(i)
                ),
            )
            .with_help(if matches!(decl.ty.base, SizedBase::Int) {
                "replace the value with a number, or remove the observation; a discrete variable \
                 with missing entries cannot be imputed by `@missing` (marginalise it by summing \
                 its probabilities over its values)"
            } else {
                "replace the value with a finite number, or remove the observation; to impute \
                 missing values, declare the variable `@missing` (docs/missing_data.md)"
            }));
        }
        if matches!(decl.ty.base, SizedBase::Int) {
            for (i, &v) in values.iter().enumerate() {
                if v.is_nan() && missing_ok {
                    continue;
                }
                if !(v.is_finite() && v.fract() == 0.0) {
                    return Err(DataError::new(
                        DataErrorKind::NotAnInteger,
                        format!(
                            "{}: {v} is not an integer, but `{name}` is declared `{ty}`",
                            prov.locate(i)
                        ),
                    )
                    .with_help(format!(
                        "fix the value, or declare `{name}` with `real` in place of `int` if \
                         fractional values are intended"
                    )));
                }
                if !(INT_MIN..=INT_MAX).contains(&v) {
                    return Err(self.int_range(name, &ty, v, prov.locate(i)));
                }
            }
        }
        let c = &decl.ty.constraint;
        let lower = c
            .lower
            .as_ref()
            .map(|e| eval_bound(e, &self.bound, name))
            .transpose()?;
        let upper = c
            .upper
            .as_ref()
            .map(|e| eval_bound(e, &self.bound, name))
            .transpose()?;
        if let (Some(lo), Some(hi)) = (lower, upper)
            && lo > hi
        {
            return Err(super::super::param_bounds::reversed(
                decl,
                "data variable",
                None,
                (lo, hi),
                &self.origins,
            ));
        }
        let bound_help =
            "correct the value in the data file, or change the bound in the declaration";
        for (i, &v) in values.iter().enumerate() {
            if v.is_nan() {
                // a missing entry of a `@missing` variable (others were refused above)
                continue;
            }
            if let Some(lo) = lower
                && !(v >= lo)
            {
                return Err(DataError::new(
                    DataErrorKind::BoundViolation,
                    format!(
                        "{}: {v} is below the lower bound {lo} of `{name}` (declared `{ty}`)",
                        prov.locate(i)
                    ),
                )
                .with_help(bound_help));
            }
            if let Some(hi) = upper
                && !(v <= hi)
            {
                return Err(DataError::new(
                    DataErrorKind::BoundViolation,
                    format!(
                        "{}: {v} is above the upper bound {hi} of `{name}` (declared `{ty}`)",
                        prov.locate(i)
                    ),
                )
                .with_help(bound_help));
            }
        }
        check_structure(decl, dims, values, prov)
    }
}
