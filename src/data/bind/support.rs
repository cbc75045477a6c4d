//! The support checks of data outcomes that depend on another argument of their statement
//! (0 ≤ y ≤ n for `y ~ binomial(n, θ)`, 1 ≤ y ≤ K for `y ~ categorical(θ)` with K the size of
//! θ, …) or that belong to a multivariate family (`bernoulli_logit_glm`), run once every data
//! variable is bound. The table of supports is [`crate::distributions::outcome`]; the
//! elementwise supports of the univariate families are checked as each variable is bound
//! (`checks::check_outcome`).
//!
//! Only what is known before fitting is checked: the outcome must be a data variable, the
//! number of trials a data variable or an integer literal, and K the declared size of a
//! variable whose size the data fix. Anything else (an outcome inside a loop or a branch, a K
//! that depends on transformed data) is left to evaluation.

use std::collections::HashMap;

use crate::distributions::outcome::{
    OutcomeSupport, Violation, check_categories, check_elementwise, check_trials, outcome_support,
};
use crate::syntax::Span;
use crate::syntax::ast::{Expr, ExprKind, Program, Stmt, StmtKind, VarDecl};

use super::super::constraints::Locate;
use super::super::error::{DataError, DataErrorKind};
use super::super::eval::{eval_size, expr_string};
use super::super::json::unravel;
use super::{Binder, size_exprs};

/// An unconditional `~` statement of the model block whose outcome is a variable and whose
/// support is checked by [`Binder::check_supports`].
pub(super) struct Ranged {
    /// The outcome's name.
    outcome: String,
    /// The family's name, as written after `~`.
    family: String,
    /// The support the outcome must lie in.
    support: OutcomeSupport,
    /// The arguments, the outcome first.
    args: Vec<Expr>,
    /// The statement.
    span: Span,
}

impl Ranged {
    /// The statement as written (approximately, for calls and indexing), e.g.
    /// `y ~ binomial(n, theta)`.
    fn text(&self) -> String {
        let args: Vec<String> = self.args[1..].iter().map(expr_string).collect();
        format!("{} ~ {}({})", self.outcome, self.family, args.join(", "))
    }
}

/// The model block's unconditional `~` statements (top level, or in plain blocks) with a
/// variable as outcome and a support that [`Binder::check_supports`] checks: those that depend
/// on another argument, and those of the multivariate families. The elementwise supports of
/// the univariate families are left to `checks::outcomes`, checked at binding.
pub(super) fn ranged_outcomes(program: &Program) -> Vec<Ranged> {
    fn walk(stmts: &[Stmt], out: &mut Vec<Ranged>) {
        for st in stmts {
            match &st.kind {
                StmtKind::Tilde {
                    lhs, dist, args, ..
                } => {
                    let ExprKind::Var(name) = &lhs.kind else {
                        continue;
                    };
                    let Some(support) = outcome_support(&dist.name) else {
                        continue;
                    };
                    let univariate = crate::distributions::lookup(&dist.name).is_some();
                    if univariate && matches!(support, OutcomeSupport::Elementwise { .. }) {
                        continue;
                    }
                    out.push(Ranged {
                        outcome: name.clone(),
                        family: dist.name.clone(),
                        support,
                        args: std::iter::once(lhs.clone())
                            .chain(args.iter().cloned())
                            .collect(),
                        span: st.span,
                    });
                }
                StmtKind::Block(inner) => walk(inner, out),
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    walk(&program.model, &mut out);
    out
}

/// The declarations outside the `data` block whose sizes may give a number of categories:
/// parameters, and the top-level declarations of transformed data, transformed parameters and
/// the model block (names are unique across them, as in Stan).
pub(super) fn sized_decls(program: &Program) -> HashMap<String, VarDecl> {
    let mut out: HashMap<String, VarDecl> = HashMap::new();
    for d in &program.parameters {
        out.insert(d.name.name.clone(), d.clone());
    }
    let blocks = [
        &program.transformed_data,
        &program.transformed_parameters,
        &program.model,
    ];
    for st in blocks.into_iter().flatten() {
        if let StmtKind::Decl(d) = &st.kind {
            out.insert(d.name.name.clone(), d.clone());
        }
    }
    out
}

/// `name` with the 1-based index of element `flat` of a value of `dims` (`y[7]`, `X[2, 3]`),
/// or `name` alone for a scalar.
fn element(name: &str, dims: &[usize], flat: usize) -> String {
    if dims.is_empty() {
        return name.to_string();
    }
    let idx: Vec<String> = unravel(flat, dims)
        .iter()
        .map(|i| (i + 1).to_string())
        .collect();
    format!("{name}[{}]", idx.join(", "))
}

impl Binder<'_> {
    /// Checks every statement of `ranged` whose outcome is bound data against its support.
    ///
    /// Returns one [`DataErrorKind::ConstraintViolation`] per statement with a value outside
    /// the support (none when all are inside), naming its first such value outside the
    /// support with its file, row and column (or key and element), the statement, and the
    /// bound it violates; pointing at the statement and the outcome's declaration.
    pub(super) fn check_supports(
        &self,
        ranged: &[Ranged],
        sized: &HashMap<String, VarDecl>,
    ) -> Vec<DataError> {
        let mut errors = Vec::new();
        for r in ranged {
            let Some(y) = self.bound.values.get(&r.outcome) else {
                continue;
            };
            let violation = match r.support {
                OutcomeSupport::Elementwise { requirement, test } => {
                    check_elementwise(requirement, test, &y.values)
                }
                OutcomeSupport::UpToTrials { trials } => match self.trials(&r.args[trials]) {
                    Some(n) => check_trials(&y.values, &n),
                    None => None,
                },
                OutcomeSupport::Categories { arg, extra } => {
                    match self.categories(&r.args[arg], sized) {
                        Some(k) => check_categories(&y.values, k + extra),
                        None => None,
                    }
                }
            };
            if let Some(v) = violation {
                errors.push(self.support_error(r, &v));
            }
        }
        errors
    }

    /// The values of a number-of-trials argument when the data fix them: an integer literal or
    /// a bound data variable.
    fn trials(&self, e: &Expr) -> Option<Vec<f64>> {
        match &e.kind {
            ExprKind::IntLit(n) => Some(vec![*n as f64]),
            ExprKind::Var(name) => self.bound.values.get(name).map(|v| v.values.to_vec()),
            _ => None,
        }
    }

    /// The innermost size of the variable `e` names (the length of a vector, the columns of a
    /// matrix, the length of each vector of an array), when the data fix it.
    fn categories(&self, e: &Expr, sized: &HashMap<String, VarDecl>) -> Option<usize> {
        let ExprKind::Var(name) = &e.kind else {
            return None;
        };
        if let Some(v) = self.bound.values.get(name) {
            return v.dims.last().copied();
        }
        let decl = sized.get(name)?;
        let size = *size_exprs(decl).last()?;
        let k = eval_size(size, &self.bound, name).ok()?;
        usize::try_from(k).ok()
    }

    /// The message of `v`, a violation of `r`'s support.
    fn support_error(&self, r: &Ranged, v: &Violation) -> DataError {
        let y = &r.outcome;
        let fam = &r.family;
        let text = r.text();
        let dims = self.bound.values[y].dims.clone();
        let values = &self.bound.values[y].values;
        let at = |name: &str, flat: usize| match self.provs.get(name) {
            Some(p) => p.locate(flat),
            None => format!("`{name}`"),
        };
        let outcome_help = format!(
            "correct the data, or choose a distribution whose support contains the values of `{y}`"
        );
        let trials_name = match r.support {
            OutcomeSupport::UpToTrials { trials } => expr_string(&r.args[trials]),
            _ => String::new(),
        };
        let trials_dims = |name: &str| {
            self.bound
                .values
                .get(name)
                .map(|v| v.dims.clone())
                .unwrap_or_default()
        };
        let (message, help, note) = match *v {
            Violation::Requirement { index, requirement } => (
                format!(
                    "{}: {} = {} in `{text}`, but the outcomes of `{fam}` must be {requirement}",
                    at(y, index),
                    element(y, &dims, index),
                    values[index]
                ),
                outcome_help,
                None,
            ),
            Violation::NotCount { index } => (
                format!(
                    "{}: {} = {} in `{text}`, but {fam} outcomes must be integers in \
                     0..{trials_name}",
                    at(y, index),
                    element(y, &dims, index),
                    values[index]
                ),
                outcome_help,
                None,
            ),
            Violation::AboveTrials {
                index,
                trials_index,
                trials,
            } => {
                let n_dims = trials_dims(&trials_name);
                let n_elem = element(&trials_name, &n_dims, trials_index);
                let note = self
                    .provs
                    .get(&trials_name)
                    .filter(|_| !n_dims.is_empty())
                    .map(|p| format!("`{n_elem}` is at {}", p.locate(trials_index)));
                (
                    format!(
                        "{}: {} = {} exceeds {n_elem} = {trials} in `{text}`; {fam} outcomes \
                         must lie in 0..{trials_name}",
                        at(y, index),
                        element(y, &dims, index),
                        values[index]
                    ),
                    format!(
                        "correct the data: `{y}` counts successes out of `{trials_name}` trials, \
                         so it cannot exceed `{trials_name}`"
                    ),
                    note,
                )
            }
            Violation::TrialsNotCount { trials_index } => {
                let n_dims = trials_dims(&trials_name);
                let n_values = self.trials(&r.args[1]).unwrap_or_default();
                (
                    format!(
                        "{}: {} = {} in `{text}`, but the number of trials of `{fam}` must be a \
                         nonnegative integer",
                        at(&trials_name, trials_index),
                        element(&trials_name, &n_dims, trials_index),
                        n_values.get(trials_index).copied().unwrap_or(f64::NAN)
                    ),
                    format!("correct the numbers of trials `{trials_name}` in the data"),
                    None,
                )
            }
            Violation::OutsideCategories { index, k } => {
                let (karg, extra) = match r.support {
                    OutcomeSupport::Categories { arg, extra } => (expr_string(&r.args[arg]), extra),
                    _ => (String::new(), 0),
                };
                let why = if extra == 0 {
                    format!("the size of `{karg}`")
                } else {
                    format!("one more than the size of `{karg}`")
                };
                (
                    format!(
                        "{}: {} = {} is outside 1..{k} in `{text}`; {fam} outcomes must lie in \
                         1..K, and K = {k} here ({why})",
                        at(y, index),
                        element(y, &dims, index),
                        values[index]
                    ),
                    format!(
                        "correct the data (categories are numbered from 1), or make `{karg}` \
                         match the number of categories"
                    ),
                    None,
                )
            }
        };
        let mut err = DataError::new(DataErrorKind::ConstraintViolation, message)
            .with_primary(r.span, format!("`{y}` is the outcome of `{fam}` here"))
            .with_help(help);
        if let Some(n) = note {
            err = err.with_note(n);
        }
        // The declaration of the variable at fault: the trials for a bad number of trials.
        let culprit = match v {
            Violation::TrialsNotCount { .. } => trials_name.as_str(),
            _ => y.as_str(),
        };
        if let Some(d) = self.decls.iter().find(|d| d.name.name == culprit) {
            err = err.with_declaration(d.span);
        }
        err
    }
}
