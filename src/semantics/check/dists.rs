//! Sampling statements in detail: the variate's type and support, distribution arguments,
//! non-linear left-hand sides (Jacobian warnings), uniform bounds, and which parameters have priors.

use super::*;

impl<'p> Checker<'p> {
    /// The variate's type against the family's support, and data bounds against the support.
    pub(super) fn check_variate(&mut self, sig: &FamilySig, lhs: &Expr, t: Type) {
        let info = root_var(lhs).and_then(|n| self.scopes.lookup(n).cloned().map(|i| (n, i)));
        if sig.discrete || is_discrete_support(sig.variate) {
            if !t.is_ints() {
                let (name, declared, decl_span, suggested_decl) = match &info {
                    // Parameters cannot be integers; the fix there is another family.
                    Some((n, i)) if !i.origin.is_data() => {
                        (n.to_string(), i.ty.to_string(), Some(i.decl_span), None)
                    }
                    Some((n, i)) => {
                        let decl = if i.sizes.is_empty() {
                            format!("int {n}")
                        } else {
                            format!("array[{}] int {n}", i.sizes.join(", "))
                        };
                        (
                            n.to_string(),
                            i.ty.to_string(),
                            Some(i.decl_span),
                            Some(decl),
                        )
                    }
                    None => (pretty::expr(lhs), t.to_string(), None, None),
                };
                self.err(SemanticError::DiscreteFamilyOnReal {
                    name,
                    declared,
                    family: sig.name.into(),
                    values: support_words(sig.variate).into(),
                    span: lhs.span,
                    decl_span,
                    suggested_decl,
                });
                return;
            }
        } else if !t.is_reals() {
            self.err(SemanticError::TypeMismatch {
                what: format!("the left side of `~ {}`", sig.name),
                expected: REALS.into(),
                found: t.to_string(),
                span: lhs.span,
                help: None,
            });
            return;
        }
        if let Some((name, i)) = &info
            && matches!(
                i.origin,
                Origin::Data | Origin::ImputedData | Origin::TransformedData
            )
        {
            let lo = i.lower.as_ref().and_then(pretty::constant_value);
            let hi = i.upper.as_ref().and_then(pretty::constant_value);
            if (lo.is_some() || hi.is_some()) && contradicts(sig.variate, lo, hi) {
                self.err(SemanticError::SupportContradiction {
                    name: name.to_string(),
                    family: sig.name.into(),
                    bound: bounds_text(i.lower.as_ref(), i.upper.as_ref()),
                    support: support_words(sig.variate).into(),
                    span: lhs.span,
                    decl_span: i.decl_span,
                });
            }
        } else if let Some((name, i)) = &info
            && i.origin == Origin::Parameter
            && !i.structured
        {
            self.check_parameter_support(sig, name, i, lhs.span);
        }
    }

    /// Reports [`SemanticError::LiteralOutcomeOutsideSupport`] when the outcome `lhs` of
    /// `lhs ~ family(args)` is a literal (`3`, `-1`, `1.5`) outside the family's support
    /// ([`crate::distributions::outcome::outcome_support`], the table the data binder checks
    /// data outcomes against): `3 ~ bernoulli(p)`, `-1 ~ poisson(l)`, `2 ~ beta(a, b)`,
    /// `11 ~ binomial(10, p)`, `0 ~ categorical(theta)`. A non-integer literal for a discrete
    /// family is left to the variate's type check (`1.5` is `real`). `context` names the
    /// statement or call in the message ("`~ bernoulli`", "`poisson_lpmf`"); the variate of
    /// a `_lpdf`/`_lpmf` call is checked the same way.
    ///
    /// [X] session 21, tester finding: `3 ~ bernoulli(0.5)` passed `check` and every
    /// evaluation of the density was −∞.
    pub(super) fn check_literal_outcome(
        &mut self,
        family: &str,
        context: &str,
        lhs: &Expr,
        args: &[Expr],
    ) {
        use crate::distributions::outcome::{OutcomeSupport, outcome_support};
        let Some(v) = literal_value(lhs) else { return };
        let Some(support) = outcome_support(family) else {
            return;
        };
        let integer = v.fract() == 0.0;
        let needed: Option<String> = match support {
            OutcomeSupport::Elementwise { requirement, test } => {
                let discrete = matches!(requirement, "0 or 1" | "a nonnegative integer");
                // `1.5 ~ poisson(…)` is a type error (reported as such)
                (!test(v) && (integer || !discrete)).then(|| requirement.to_string())
            }
            OutcomeSupport::UpToTrials { trials } => {
                let n = args.get(trials - 1).and_then(literal_value);
                if !integer {
                    None
                } else if v < 0.0 {
                    Some("a nonnegative integer".into())
                } else {
                    n.filter(|&n| v > n && n >= 0.0 && n.fract() == 0.0)
                        .map(|n| format!("an integer from 0 to the number of trials, {n}"))
                }
            }
            OutcomeSupport::Categories { .. } => {
                (integer && v < 1.0).then(|| "a category, an integer from 1 up".to_string())
            }
        };
        let Some(support) = needed else { return };
        self.err(SemanticError::LiteralOutcomeOutsideSupport {
            family: family.to_string(),
            context: context.to_string(),
            value: pretty::expr(lhs),
            support,
            span: lhs.span,
        });
    }

    /// Warns when a parameter's declared bounds let it leave the support of its family (stanc3
    /// pedantic: "a parameter with a positive-support distribution has no lower bound"). Bounds
    /// that are not constants are given the benefit of the doubt.
    pub(super) fn check_parameter_support(
        &mut self,
        sig: &FamilySig,
        name: &str,
        i: &VarInfo,
        span: Span,
    ) {
        let Some(needed) = bounds_needed(sig.variate, i) else {
            return;
        };
        self.warnings.push(Warning::ParameterOutsideSupport {
            name: name.into(),
            family: sig.name.into(),
            support: support_words(sig.variate).into(),
            needed: needed.into(),
            span,
            decl_span: i.decl_span,
        });
    }

    /// Types of a family's parameters: `ints` for discrete supports, `reals` otherwise.
    /// `first_arg` is the 1-based position of `params[0]` in the call, for messages.
    pub(super) fn check_dist_params(
        &mut self,
        sig: &FamilySig,
        fname: &str,
        args: &[Expr],
        tys: &[Option<Type>],
        first_arg: usize,
    ) {
        for (k, ((p, a), t)) in sig.params.iter().zip(args).zip(tys).enumerate() {
            let Some(t) = t else { continue };
            let (ok, expected) = if is_discrete_support(p.support) {
                (t.is_ints(), INTS)
            } else {
                (t.is_reals(), REALS)
            };
            if !ok {
                self.err(SemanticError::TypeMismatch {
                    what: format!("argument {} of `{fname}` ({})", k + first_arg, p.name),
                    expected: expected.into(),
                    found: t.to_string(),
                    span: a.span,
                    help: None,
                });
                continue;
            }
            // A literal outside the support: the density can never be evaluated.
            if let Some(v) = literal_value(a)
                && let Some((support, example)) = literal_support(p.support, v)
            {
                self.err(SemanticError::LiteralOutsideSupport {
                    position: k + first_arg,
                    function: fname.into(),
                    role: lowercase_first(p.name),
                    value: pretty::expr(a),
                    support: support.into(),
                    example: example.into(),
                    span: a.span,
                    declared: None,
                });
                continue;
            }
            // The same through a scalar set once to a literal (`real s = 0;`).
            if let ExprKind::Var(name) = &a.kind
                && let Some((init, v)) = self.constant_of(name)
                && let Some((support, example)) = literal_support(p.support, v)
            {
                self.err(SemanticError::LiteralOutsideSupport {
                    position: k + first_arg,
                    function: fname.into(),
                    role: lowercase_first(p.name),
                    value: format!("`{name}` = {}", crate::words::shown_zero(v)),
                    support: support.into(),
                    example: example.into(),
                    span: a.span,
                    declared: Some(init),
                });
                continue;
            }
            // A bare parameter as, say, a scale: its bounds should enforce the support.
            if let ExprKind::Var(name) = &a.kind
                && let Some(info) = self.scopes.lookup(name)
                && info.origin == Origin::Parameter
                && !info.structured
                && let Some(needed) = bounds_needed(p.support, info)
            {
                let w = Warning::ArgumentOutsideSupport {
                    name: name.clone(),
                    role: lowercase_first(p.name),
                    function: fname.into(),
                    support: support_words(p.support).into(),
                    needed: needed.into(),
                    span: a.span,
                    decl_span: info.decl_span,
                };
                self.warnings.push(w);
            }
        }
    }

    /// Warns ([`Warning::NonLinearLhs`]) when the left side of `~` is a non-linear function of
    /// parameters, written there (`log(s) ~ …`) or through a transformed parameter or local
    /// assigned one (`real ls = log(s); ls ~ …`, found by the tester of session 18).
    pub(super) fn check_nonlinear_lhs(&mut self, lhs: &Expr) {
        if !self.depends_on_parameters(lhs) || !self.nonlinear(lhs) {
            return;
        }
        let via = root_var(lhs).and_then(|v| {
            let def = self.nonlinear_defs.get(v)?;
            Some((v.to_string(), *def))
        });
        self.warnings.push(Warning::NonLinearLhs {
            span: lhs.span,
            via,
        });
    }

    /// Records that `name` (a transformed parameter or a local, outside functions) is assigned
    /// `value`, a non-linear function of parameters, or one made so by `product` (`x *= p`
    /// with both depending on parameters). A value that reads data is not recorded: it is a
    /// residual such as MA(1)'s `err[t] = y[t] - mu - theta * err[t - 1]`, whose density under
    /// `~` is the likelihood of `y` (unit Jacobian in `y`), not a prior on a transform.
    pub(super) fn note_nonlinear_def(&mut self, name: &str, value: &Expr, product: bool) {
        if self.func.is_some()
            || !matches!(self.block, Block::TransformedParameters | Block::Model)
            || self.nonlinear_defs.contains_key(name)
        {
            return;
        }
        let mut vars = Vec::new();
        collect_vars(value, &mut vars);
        let reads_data = vars.iter().any(|(v, _)| {
            self.scopes.lookup(v).is_some_and(|i| {
                matches!(
                    i.origin,
                    Origin::Data | Origin::TransformedData | Origin::ImputedData
                )
            })
        });
        if reads_data {
            return;
        }
        let nonlinear = self.depends_on_parameters(value) && (self.nonlinear(value) || product);
        if nonlinear {
            self.nonlinear_defs.insert(name.to_string(), value.span);
        }
    }

    /// Whether `e` is a non-linear function of parameter-dependent values (best effort:
    /// reshapes and selections ([`RESHAPES`]) are transparent, sums ([`ADDITIVE`]) and
    /// products with data ([`BILINEAR`]) are linear, as are `+`, `-`, and `*` or `/` by data;
    /// any other function call or product of two parameter-dependent factors counts).
    pub(super) fn nonlinear(&self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::IntLit(_) | ExprKind::RealLit(_) => false,
            // a transformed parameter or local assigned a non-linear function of parameters
            ExprKind::Var(v) => self.nonlinear_defs.contains_key(v),
            // Reshaping and selecting elements, like indexing, changes no values: a density on
            // the result needs no Jacobian adjustment.
            ExprKind::Call { name, args, .. } if RESHAPES.contains(&name.name.as_str()) => {
                args.iter().any(|a| self.nonlinear(a))
            }
            // Sums and repetitions are linear: their Jacobian is constant.
            ExprKind::Call { name, args, .. } if ADDITIVE.contains(&name.name.as_str()) => {
                args.iter().any(|a| self.nonlinear(a))
            }
            // Products are linear in one factor when the others are data.
            ExprKind::Call { name, args, .. } if BILINEAR.contains(&name.name.as_str()) => {
                args.iter()
                    .filter(|a| self.depends_on_parameters(a))
                    .count()
                    > 1
                    || args.iter().any(|a| self.nonlinear(a))
            }
            ExprKind::Call { args, .. } => args.iter().any(|a| self.depends_on_parameters(a)),
            ExprKind::Binary { op, lhs, rhs } => {
                let (l, r) = (
                    self.depends_on_parameters(lhs),
                    self.depends_on_parameters(rhs),
                );
                match op {
                    BinOp::Add | BinOp::Sub => self.nonlinear(lhs) || self.nonlinear(rhs),
                    BinOp::Mul | BinOp::EltMul => {
                        (l && r) || self.nonlinear(lhs) || self.nonlinear(rhs)
                    }
                    BinOp::Div | BinOp::EltDiv => r || self.nonlinear(lhs),
                    _ => l || r,
                }
            }
            ExprKind::Unary { operand, .. } | ExprKind::Transpose(operand) => {
                self.nonlinear(operand)
            }
            ExprKind::Index { base, .. } => self.nonlinear(base),
            ExprKind::Ternary {
                then, otherwise, ..
            } => self.nonlinear(then) || self.nonlinear(otherwise),
            ExprKind::RowVectorLit(items) | ExprKind::ArrayLit(items) => {
                items.iter().any(|i| self.nonlinear(i))
            }
        }
    }

    pub(super) fn check_uniform_bounds(&mut self, lhs: &Expr, a: &Expr, b: &Expr, span: Span) {
        let ExprKind::Var(name) = &lhs.kind else {
            return;
        };
        let Some(info) = self.scopes.lookup(name).cloned() else {
            return;
        };
        if info.origin != Origin::Parameter {
            return;
        }
        let same = |declared: Option<&Expr>, given: &Expr| match declared {
            None => false,
            Some(d) => match (pretty::constant_value(d), pretty::constant_value(given)) {
                (Some(x), Some(y)) => x == y,
                _ => pretty::expr(d) == pretty::expr(given),
            },
        };
        if same(info.lower.as_ref(), a) && same(info.upper.as_ref(), b) {
            return;
        }
        let declared = if info.lower.is_none() && info.upper.is_none() {
            "without bounds".to_string()
        } else {
            format!(
                "with `{}`",
                bounds_text(info.lower.as_ref(), info.upper.as_ref())
            )
        };
        let a_text = pretty::expr(a);
        let b_text = pretty::expr(b);
        let suggested_decl = if info.ty == Type::REAL {
            format!("real<lower={a_text}, upper={b_text}> {name}")
        } else {
            format!("{name}` with `<lower={a_text}, upper={b_text}>")
        };
        self.warnings.push(Warning::UniformBoundsMismatch {
            suggested_decl,
            name: name.clone(),
            a: pretty::expr(a),
            b: pretty::expr(b),
            declared,
            span,
            decl_span: info.decl_span,
        });
    }

    // ----- parameter dependence and priors -------------------------------------------------

    /// The parameters `e` depends on, directly or through transformed parameters and locals.
    pub(super) fn param_deps(&self, e: &Expr) -> BTreeSet<String> {
        let mut vars = Vec::new();
        collect_vars(e, &mut vars);
        let mut out = BTreeSet::new();
        for (v, _) in vars {
            match self.scopes.lookup(v).map(|i| i.origin) {
                // a `@missing` variable's imputed entries are its own parameters
                Some(Origin::Parameter | Origin::ImputedData) => {
                    out.insert(v.to_string());
                }
                Some(_) => {
                    if let Some(d) = self.deps.get(v) {
                        out.extend(d.iter().cloned());
                    }
                }
                None => {}
            }
        }
        out
    }

    /// Whether `e` depends on a parameter (or on a non-`data` function argument).
    pub(super) fn depends_on_parameters(&self, e: &Expr) -> bool {
        let mut vars = Vec::new();
        collect_vars(e, &mut vars);
        vars.iter()
            .any(|(v, _)| match self.scopes.lookup(v).map(|i| i.origin) {
                Some(Origin::Parameter | Origin::TransformedParameter | Origin::ImputedData) => {
                    true
                }
                Some(Origin::FunctionArg { data_only }) => !data_only,
                Some(_) => self.deps.get(*v).is_some_and(|d| !d.is_empty()),
                None => false,
            })
    }

    /// In `target += e`: parameters in the variate of a distribution call, and parameters
    /// outside any distribution call, count as having a prior.
    pub(super) fn mark_priors_in_target(&mut self, e: &Expr) {
        match &e.kind {
            ExprKind::Call { name, args, .. }
                if split_suffix(&name.name).is_some_and(|(_, s)| s != "_rng") =>
            {
                if let Some(first) = args.first() {
                    let d = self.param_deps(first);
                    self.has_prior.extend(d);
                }
            }
            ExprKind::Call { args, .. }
            | ExprKind::RowVectorLit(args)
            | ExprKind::ArrayLit(args) => {
                for a in args {
                    self.mark_priors_in_target(a);
                }
            }
            ExprKind::Binary { lhs, rhs, .. } => {
                self.mark_priors_in_target(lhs);
                self.mark_priors_in_target(rhs);
            }
            ExprKind::Unary { operand, .. } | ExprKind::Transpose(operand) => {
                self.mark_priors_in_target(operand)
            }
            ExprKind::Ternary {
                cond,
                then,
                otherwise,
            } => {
                self.mark_priors_in_target(cond);
                self.mark_priors_in_target(then);
                self.mark_priors_in_target(otherwise);
            }
            ExprKind::Var(_) | ExprKind::Index { .. } => {
                let d = self.param_deps(e);
                self.has_prior.extend(d);
            }
            ExprKind::IntLit(_) | ExprKind::RealLit(_) => {}
        }
    }

    // ----- expressions ---------------------------------------------------------------------
}

/// The value of a numeric literal, possibly negated (`-1`, `+0.5`); `None` for anything else.
impl Checker<'_> {
    /// The value of `name` when the declaration in scope set it to a literal and nothing in
    /// the program assigns to it (`real s = 0;`), with the initialiser's span.
    pub(super) fn constant_of(&self, name: &str) -> Option<(Span, f64)> {
        let (decl, init, v) = self.constants.get(name)?;
        (self.scopes.lookup(name)?.decl_span == *decl).then_some((*init, *v))
    }
}

pub(super) fn literal_value(e: &Expr) -> Option<f64> {
    match &e.kind {
        ExprKind::IntLit(n) => Some(*n as f64),
        ExprKind::RealLit(x) => Some(*x),
        ExprKind::Unary {
            op: UnOp::Neg,
            operand,
        } => literal_value(operand).map(|x| -x),
        ExprKind::Unary {
            op: UnOp::Plus,
            operand,
        } => literal_value(operand),
        _ => None,
    }
}

/// When the constant `v` lies outside `support` (as a distribution's parameter: a probability
/// may be 0 or 1), the support in words and a value inside it; `None` when `v` is allowed.
fn literal_support(support: Support, v: f64) -> Option<(&'static str, &'static str)> {
    let integer = v.fract() == 0.0;
    let (ok, words, example) = match support {
        Support::Real => (v.is_finite(), "finite", "0"),
        Support::Positive => (v > 0.0 && v.is_finite(), "positive", "1"),
        Support::NonNegative => (v >= 0.0 && v.is_finite(), "non-negative", "0"),
        Support::UnitInterval => ((0.0..=1.0).contains(&v), "in [0, 1]", "0.5"),
        Support::Count => (integer && v >= 0.0, "a non-negative integer", "1"),
        Support::Binary => (v == 0.0 || v == 1.0, "0 or 1", "1"),
        Support::Integer => (integer, "an integer", "0"),
    };
    (!ok).then_some((words, example))
}

/// Functions that are linear (affine) in their real arguments jointly, `int` size arguments
/// aside: a sampling statement on their result needs no Jacobian adjustment, since a linear
/// map has a constant Jacobian. [X] session 19, tester finding 5: the ICAR soft sum-to-zero
/// constraint `sum(phi) ~ normal(0, 0.001 * N)` and `mean(s) ~ normal(0, 1)` warned.
const ADDITIVE: &[&str] = &[
    "sum",
    "mean",
    "cumulative_sum",
    "rep_vector",
    "rep_row_vector",
    "rep_matrix",
    "rep_array",
    "add_diag",
    "add_row_vector",
];

/// Functions linear in each argument separately (products): linear in the parameters when at
/// most one argument depends on them (`dot_product(x, beta)` with data `x`).
const BILINEAR: &[&str] = &[
    "dot_product",
    "rows_dot_product",
    "columns_dot_product",
    "diag_pre_multiply",
    "diag_post_multiply",
];
