//! Statements: blocks, loops, returns, assignments and `~` statements.

use super::*;

impl<'p> Checker<'p> {
    pub(super) fn stmt(&mut self, s: &Stmt, top: bool) {
        match &s.kind {
            StmtKind::Decl(d) => self.decl(d, top),
            StmtKind::Assign { lhs, op, rhs } => self.assign(lhs, *op, rhs),
            StmtKind::Tilde {
                lhs,
                dist,
                args,
                truncation,
            } => {
                self.require_target_allowed("~", s.span);
                self.tilde(lhs, dist, args, s.span);
                if let Some(t) = truncation {
                    for e in [&t.lower, &t.upper].into_iter().flatten() {
                        self.expect_scalar(e, "a truncation bound");
                    }
                    if let Some(sig) = registry::lookup(&dist.name)
                        && !has_log_cdf(sig.family)
                    {
                        self.err(SemanticError::NoLogCdf {
                            family: sig.name.into(),
                            what: "truncation `T[…]`".into(),
                            span: t.span,
                        });
                    }
                }
            }
            StmtKind::TargetPlus(e) => {
                self.require_target_allowed("target +=", s.span);
                if let Some(t) = self.expr(e)
                    && !matches!(t.base, Base::Int | Base::Real)
                    && !t.is_linear_algebra()
                {
                    self.err(SemanticError::TypeMismatch {
                        what: "the value added to `target`".into(),
                        expected: "`real` or a container of reals".into(),
                        found: t.to_string(),
                        span: e.span,
                        help: None,
                    });
                }
                self.mark_priors_in_target(e);
            }
            StmtKind::For { var, lo, hi, body } => {
                for (e, what) in [
                    (lo, "the lower bound of a `for` loop"),
                    (hi, "the upper bound of a `for` loop"),
                ] {
                    if let Some(t) = self.expr(e)
                        && !t.is_int()
                    {
                        self.err(SemanticError::TypeMismatch {
                            what: what.into(),
                            expected: "`int`".into(),
                            found: t.to_string(),
                            span: e.span,
                            help: None,
                        });
                    }
                }
                // the body runs only when the range is known not to be empty
                let runs = self.loop_runs(lo, hi);
                self.guarded(runs, |c| c.loop_body(var, Type::INT, body));
            }
            StmtKind::ForEach {
                var,
                collection,
                body,
            } => {
                let elem = match self.expr(collection) {
                    Some(t) if t.dims > 0 => t.element(),
                    Some(t) if t.is_linear_algebra() => Some(Type::REAL),
                    Some(t) => {
                        self.err(SemanticError::TypeMismatch {
                            what: "the collection of a `for` loop".into(),
                            expected: "an array, `vector`, `row_vector` or `matrix`".into(),
                            found: t.to_string(),
                            span: collection.span,
                            help: None,
                        });
                        None
                    }
                    None => None,
                };
                // the body runs only when the collection is known not to be empty
                let runs = self
                    .shape(collection)
                    .and_then(|s| s.dims.iter().try_fold(1i64, |acc, d| acc.checked_mul(d.0?)))
                    .map(|n| n > 0);
                // An unknown element type still scopes the loop variable, as `real`.
                self.guarded(runs, |c| c.loop_body(var, elem.unwrap_or(Type::REAL), body));
            }
            StmtKind::While { cond, body } => {
                self.expect_scalar(cond, "the condition of `while`");
                if matches!(cond.kind, ExprKind::IntLit(n) if n != 0)
                    || matches!(cond.kind, ExprKind::RealLit(x) if x != 0.0)
                {
                    if !leaves_loop(body) {
                        self.err(SemanticError::EndlessLoop {
                            cond: pretty::expr(cond),
                            span: cond.span,
                        });
                    }
                }
                // how often the body runs is not followed: unknown
                self.loop_depth += 1;
                self.guarded(None, |c| c.nested(body));
                self.loop_depth -= 1;
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                self.expect_scalar(cond, "the condition of `if`");
                // each branch runs only when the condition is known to choose it
                let value = self.guard_value(cond).map(|v| v.truth());
                self.guarded(value, |c| c.nested(then));
                if let Some(o) = otherwise {
                    self.guarded(value.map(|v| !v), |c| c.nested(o));
                }
            }
            StmtKind::Block(stmts) => {
                self.scopes.push();
                // after a statement that always leaves the block (`break`, `continue`, `return`,
                // `reject`, also under a condition known true), the rest never runs
                let mut left = false;
                for s in stmts {
                    if left {
                        self.guarded(Some(false), |c| c.stmt(s, false));
                    } else {
                        self.stmt(s, false);
                        left = self.always_leaves(s);
                    }
                }
                self.scopes.pop();
            }
            StmtKind::Break | StmtKind::Continue => {
                if self.loop_depth == 0 {
                    let what = if s.kind == StmtKind::Break {
                        "break"
                    } else {
                        "continue"
                    };
                    self.err(SemanticError::OutsideLoop {
                        what: what.into(),
                        span: s.span,
                    });
                }
            }
            StmtKind::Return(value) => self.ret(value.as_ref(), s.span),
            StmtKind::Print(args) | StmtKind::Reject(args) => {
                for a in args {
                    if let PrintArg::Expr(e) = a {
                        self.expr(e);
                    }
                }
            }
            StmtKind::Expr(e) => match &e.kind {
                ExprKind::Call {
                    name,
                    args,
                    conditional,
                } => {
                    if let CallType::Value(_) = self.call(name, args, *conditional, e.span) {
                        self.err(SemanticError::NonVoidStatement {
                            name: name.name.clone(),
                            span: e.span,
                        });
                    }
                }
                _ => {
                    self.expr(e);
                    self.err(SemanticError::NonVoidStatement {
                        name: pretty::expr(e),
                        span: e.span,
                    });
                }
            },
        }
    }

    /// A statement in its own scope (the body of `if`/`while`/`for`).
    pub(super) fn nested(&mut self, s: &Stmt) {
        self.scopes.push();
        self.stmt(s, false);
        self.scopes.pop();
    }

    pub(super) fn loop_body(&mut self, var: &crate::syntax::ast::Ident, ty: Type, body: &Stmt) {
        self.scopes.push();
        if let Some(prev) = self.scopes.lookup(&var.name) {
            let previous = prev.decl_span;
            self.err(SemanticError::Redeclaration {
                name: var.name.clone(),
                span: var.span,
                previous,
            });
        } else {
            self.scopes.declare(
                &var.name,
                VarInfo {
                    ty,
                    origin: Origin::LoopVar,
                    decl_span: var.span,
                    lower: None,
                    upper: None,
                    sizes: Vec::new(),
                    known: Vec::new(),
                    structured: false,
                },
            );
        }
        self.loop_depth += 1;
        self.stmt(body, false);
        self.loop_depth -= 1;
        self.scopes.pop();
    }

    pub(super) fn expect_scalar(&mut self, e: &Expr, what: &str) {
        if let Some(t) = self.expr(e)
            && !t.is_scalar()
        {
            self.err(SemanticError::TypeMismatch {
                what: what.into(),
                expected: "`int` or `real`".into(),
                found: t.to_string(),
                span: e.span,
                help: None,
            });
        }
    }

    pub(super) fn target_allowed(&self) -> bool {
        match &self.func {
            Some(f) => f.name.ends_with("_lp"),
            None => self.block == Block::Model,
        }
    }

    pub(super) fn require_target_allowed(&mut self, what: &str, span: Span) {
        if !self.target_allowed() {
            self.err(SemanticError::TargetOutsideModel {
                what: what.into(),
                span,
            });
        }
    }

    pub(super) fn ret(&mut self, value: Option<&Expr>, span: Span) {
        let Some(f) = self.func.clone() else {
            self.err(SemanticError::BadReturn {
                message: "`return` is only allowed inside a function".into(),
                span,
            });
            return;
        };
        match (value, f.ret) {
            (None, None) => {}
            (Some(e), None) => {
                self.expr(e);
                self.err(SemanticError::BadReturn {
                    message: format!("`{}` returns `void` and cannot return a value", f.name),
                    span,
                });
            }
            (None, Some(t)) => self.err(SemanticError::BadReturn {
                message: format!("`{}` must return a value of type `{t}`", f.name),
                span,
            }),
            (Some(e), Some(t)) => {
                let found = self.expr(e);
                if let Some(found) = found
                    && !t.accepts(found)
                {
                    self.err(SemanticError::TypeMismatch {
                        what: format!("the return value of `{}`", f.name),
                        expected: format!("`{t}`"),
                        found: found.to_string(),
                        span: e.span,
                        help: promotion_help(t, found),
                    });
                }
                // the sizes of this return, for the sizes of the function's calls
                let dims = self
                    .shape(e)
                    .filter(|s| found.is_some_and(|found| t.accepts(found)) && s.ty.dims == t.dims)
                    .map(|s| s.dims.iter().map(|d| d.0).collect());
                if let Some(ctx) = self.func.as_mut() {
                    ctx.ret_shapes.push(dims);
                }
            }
        }
    }

    pub(super) fn assign(&mut self, lhs: &LValue, op: AssignOp, rhs: &Expr) {
        let rhs_ty = self.expr(rhs);
        let name = &lhs.name.name;
        let Some(info) = self.scopes.lookup(name).cloned() else {
            self.undeclared(name, lhs.name.span);
            return;
        };
        let allowed = match info.origin {
            Origin::Data
            | Origin::ImputedData
            | Origin::Parameter
            | Origin::LoopVar
            | Origin::FunctionArg { .. } => false,
            Origin::TransformedData => self.block == Block::TransformedData && self.func.is_none(),
            Origin::TransformedParameter => {
                self.block == Block::TransformedParameters && self.func.is_none()
            }
            Origin::GeneratedQuantity => {
                self.block == Block::GeneratedQuantities && self.func.is_none()
            }
            Origin::Local => true,
        };
        if !allowed {
            let help = match info.origin {
                Origin::Data | Origin::ImputedData => format!(
                    "data is read-only; declare a copy in `transformed data`, e.g. `{} = {name};`, and assign to that",
                    sized_decl(info.ty, &info.sizes, &format!("{name}_2"))
                ),
                Origin::Parameter => "parameters are sampled, not assigned; compute derived values in `transformed parameters`".into(),
                Origin::LoopVar => "loop variables are read-only; copy the value into a local variable".into(),
                Origin::FunctionArg { .. } => "function arguments are read-only; copy the value into a local variable".into(),
                Origin::TransformedData => format!("`{name}` can only be assigned in the `transformed data` block"),
                Origin::TransformedParameter => format!("`{name}` can only be assigned in the `transformed parameters` block"),
                Origin::GeneratedQuantity | Origin::Local => format!("`{name}` can only be assigned in the `generated quantities` block"),
            };
            // Without indexes the name's own span is exact (the l-value's may run on over the
            // whitespace before `=`).
            let span = if lhs.indices.is_empty() {
                lhs.name.span
            } else {
                lhs.span
            };
            self.err(SemanticError::ReadOnlyAssignment {
                name: name.clone(),
                kind: info.origin.describe().into(),
                span,
                decl_span: info.decl_span,
                help,
            });
        }
        // literal indexes outside literal sizes (`y[4] = …` with `vector[3] y`)
        let mut dims = self.declared_dims(name).map(|(d, _)| d);
        for group in &lhs.indices {
            let Some(d) = dims.take() else { break };
            if group.len() <= d.len() {
                self.check_literal_indices(name, &d, info.decl_span, group);
            }
            dims = super::exprs::remaining_dims(&d, group);
        }
        let mut ty = Some(info.ty);
        for group in &lhs.indices {
            ty = match ty {
                Some(t) => self.apply_indices(t, group, lhs.span),
                None => {
                    for ix in group {
                        self.index_kind(ix);
                    }
                    None
                }
            };
        }
        let (Some(lt), Some(rt)) = (ty, rhs_ty) else {
            return;
        };
        let bin = match op {
            AssignOp::Assign => None,
            AssignOp::AddAssign => Some(BinOp::Add),
            AssignOp::SubAssign => Some(BinOp::Sub),
            AssignOp::MulAssign => Some(BinOp::Mul),
            AssignOp::DivAssign => Some(BinOp::Div),
            AssignOp::EltMulAssign => Some(BinOp::EltMul),
            AssignOp::EltDivAssign => Some(BinOp::EltDiv),
        };
        let result = match bin {
            None => Some(rt),
            Some(b) => match operators::binary(b, lt, rt) {
                Ok(t) => Some(t),
                Err(hint) => {
                    self.err(SemanticError::OperatorMismatch {
                        message: operators::describe_mismatch(b, lt, rt),
                        span: lhs.span.to(rhs.span),
                        hint: hint.into(),
                    });
                    None
                }
            },
        };
        if let Some(r) = result
            && !lt.accepts(r)
        {
            self.err(SemanticError::TypeMismatch {
                what: format!("the value assigned to `{}`", pretty_lvalue(lhs)),
                expected: format!("`{lt}`"),
                found: r.to_string(),
                span: rhs.span,
                help: promotion_help(lt, r),
            });
        }
        // sizes known before evaluation must agree (`*=` and `/=` follow the product's rules)
        if result.is_some_and(|r| lt.accepts(r))
            && !matches!(op, AssignOp::MulAssign | AssignOp::DivAssign)
            && !lt.is_scalar()
            && !rt.is_scalar()
        {
            self.check_assignment_sizes(lhs, rhs);
        }
        // `x *= p` and `x /= p` multiply or divide what `x` holds by `p`: non-linear when
        // both depend on parameters, as `x * p` is
        let product = matches!(
            op,
            AssignOp::MulAssign
                | AssignOp::DivAssign
                | AssignOp::EltMulAssign
                | AssignOp::EltDivAssign
        ) && self.deps.get(name).is_some_and(|d| !d.is_empty());
        self.note_nonlinear_def(name, rhs, product);
        let deps = self.param_deps(rhs);
        self.deps.entry(name.clone()).or_default().extend(deps);
    }

    // ----- `~` ----------------------------------------------------------------------------

    pub(super) fn tilde(
        &mut self,
        lhs: &Expr,
        dist: &crate::syntax::ast::Ident,
        args: &[Expr],
        span: Span,
    ) {
        let lhs_ty = self.expr(lhs);
        let arg_tys: Vec<Option<Type>> = args.iter().map(|a| self.expr(a)).collect();
        let deps = self.param_deps(lhs);
        self.has_prior.extend(deps);

        if dist.name == STD_NORMAL {
            if !args.is_empty() {
                self.err(SemanticError::WrongArity {
                    function: STD_NORMAL.into(),
                    span: dist.span,
                    expected: "no arguments after `~` (it is `normal(0, 1)`)".into(),
                    found: args.len(),
                });
            }
            if let (Some(t), Some(sig)) = (lhs_ty, registry::lookup("normal")) {
                self.check_variate(sig, lhs, t);
            }
            self.check_nonlinear_lhs(lhs);
            return;
        }

        // a literal outcome outside the family's support: every evaluation fails
        if lhs_ty.is_some_and(|t| t.is_scalar()) {
            self.check_literal_outcome(&dist.name, &format!("`~ {}`", dist.name), lhs, args);
        }
        if let Some(sig) = multivariate_registry::lookup(&dist.name) {
            self.mv_tilde(sig, lhs, lhs_ty, args, &arg_tys, dist.span);
            return;
        }
        let Some(sig) = registry::lookup(&dist.name) else {
            // A user-defined distribution `foo_lpdf` / `foo_lpmf`.
            for suffix in ["_lpdf", "_lpmf"] {
                let fname = format!("{}{suffix}", dist.name);
                if let Some(f) = self.functions.get(&fname).cloned() {
                    let mut all = vec![lhs_ty];
                    all.extend(arg_tys.iter().copied());
                    let all_exprs: Vec<&Expr> = std::iter::once(lhs).chain(args).collect();
                    self.check_user_args(&fname, &f, &all, &all_exprs, span);
                    return;
                }
            }
            let stem = split_suffix(&dist.name).map_or(dist.name.as_str(), |(s, _)| s);
            let candidates = self.distribution_names();
            let suggestion = if registry::lookup(stem).is_some() {
                Some(stem.to_string())
            } else {
                best_match(&dist.name, candidates.iter().map(String::as_str))
            };
            self.err(SemanticError::UnknownDistribution {
                name: dist.name.clone(),
                span: dist.span,
                suggestion,
            });
            return;
        };

        if args.len() != sig.params.len() {
            self.err(SemanticError::WrongArity {
                function: sig.name.into(),
                span: dist.span,
                expected: format!(
                    "{} after `~` ({})",
                    plural(sig.params.len(), "argument"),
                    param_names(sig)
                ),
                found: args.len(),
            });
        } else {
            self.check_dist_params(sig, sig.name, args, &arg_tys, 1);
            // a univariate family vectorises elementwise: the sizes must agree
            let context = format!("the arguments of `{}`", sig.name);
            let before = self.errors.len();
            for a in args {
                if self.literal_sizes(lhs).is_some_and(|s| !s.contains('×'))
                    && self.literal_sizes(a).is_some_and(|s| !s.contains('×'))
                {
                    self.literal_sizes_agree(lhs, a, &context, span);
                }
            }
            // the same with sizes from the data, or through operations and calls
            if self.errors.len() == before {
                let mut items = vec![(lhs, "the variate".to_string())];
                items.extend(
                    args.iter()
                        .zip(sig.params)
                        .map(|(a, p)| (a, lowercase_first(p.name))),
                );
                self.check_vectorised_sizes(sig.name, &items);
            }
        }

        if let Some(t) = lhs_ty {
            self.check_variate(sig, lhs, t);
        }
        self.check_nonlinear_lhs(lhs);
        if sig.name == "uniform" && args.len() == 2 {
            self.check_uniform_bounds(lhs, &args[0], &args[1], span);
        }
    }
}

/// Whether `body` (a loop body) contains a `break` of this loop (not of a nested loop), a
/// `return` or a `reject` — a way out of `while (1)`.
fn leaves_loop(body: &Stmt) -> bool {
    fn walk(s: &Stmt, nested: bool) -> bool {
        match &s.kind {
            StmtKind::Break => !nested,
            StmtKind::Return(_) | StmtKind::Reject(_) => true,
            StmtKind::For { body, .. }
            | StmtKind::ForEach { body, .. }
            | StmtKind::While { body, .. } => walk(body, true),
            StmtKind::If {
                then, otherwise, ..
            } => walk(then, nested) || otherwise.as_ref().is_some_and(|o| walk(o, nested)),
            StmtKind::Block(sts) => sts.iter().any(|s| walk(s, nested)),
            _ => false,
        }
    }
    walk(body, false)
}
