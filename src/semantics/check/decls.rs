//! Declarations: the program's variables, user-defined functions and their bodies, and
//! the checks of a declared type (sizes, bounds, data-only positions).

use super::*;

impl<'p> Checker<'p> {
    pub(super) fn collect_declarations(&mut self) {
        let p = self.program;
        let mut add = |d: &VarDecl, block: Block| {
            self.all_decls
                .entry(d.name.name.clone())
                .or_insert((d.name.span, block));
        };
        for d in &p.data {
            add(d, Block::Data);
        }
        for d in &p.parameters {
            add(d, Block::Parameters);
        }
        for (stmts, block) in [
            (&p.transformed_data, Block::TransformedData),
            (&p.transformed_parameters, Block::TransformedParameters),
            (&p.model, Block::Model),
            (&p.generated_quantities, Block::GeneratedQuantities),
        ] {
            for s in stmts {
                if let StmtKind::Decl(d) = &s.kind {
                    add(d, block);
                }
            }
        }
    }

    pub(super) fn register_functions(&mut self) {
        for f in &self.program.functions {
            let sig = UserFn {
                params: f.params.iter().map(|p| Type::from_unsized(&p.ty)).collect(),
                data_only: f.params.iter().map(|p| p.data_only).collect(),
                ret: match &f.return_type {
                    ReturnType::Void => None,
                    ReturnType::Type(t) => Some(Type::from_unsized(t)),
                },
                span: f.name.span,
                defined: f.body.is_some(),
            };
            match self.functions.get(&f.name.name) {
                Some(prev) if prev.defined && sig.defined => {
                    let previous = prev.span;
                    self.err(SemanticError::FunctionRedefinition {
                        name: f.name.name.clone(),
                        span: f.name.span,
                        previous,
                    });
                }
                Some(prev) if prev.defined => {}
                _ => {
                    self.functions.insert(f.name.name.clone(), sig);
                }
            }
        }
    }

    pub(super) fn check_function(&mut self, f: &FunctionDef) {
        let Some(body) = &f.body else { return };
        self.block = Block::Functions;
        let ret = match &f.return_type {
            ReturnType::Void => None,
            ReturnType::Type(t) => Some(Type::from_unsized(t)),
        };
        self.func = Some(FnCtx {
            name: f.name.name.clone(),
            ret,
            ret_shapes: Vec::new(),
        });
        self.scopes.push();
        for p in &f.params {
            if let Some(prev) = self.scopes.lookup(&p.name.name) {
                let previous = prev.decl_span;
                self.err(SemanticError::Redeclaration {
                    name: p.name.name.clone(),
                    span: p.name.span,
                    previous,
                });
                continue;
            }
            self.scopes.declare(
                &p.name.name,
                VarInfo {
                    ty: Type::from_unsized(&p.ty),
                    origin: Origin::FunctionArg {
                        data_only: p.data_only,
                    },
                    decl_span: p.name.span,
                    lower: None,
                    upper: None,
                    sizes: Vec::new(),
                    known: Vec::new(),
                    structured: false,
                },
            );
        }
        self.stmt(body, false);
        self.scopes.pop();
        if ret.is_some() && !always_returns(body) {
            self.err(SemanticError::MissingReturn {
                name: f.name.name.clone(),
                span: f.name.span,
            });
        }
        // sizes every return agrees on, all known: the sizes of every call
        if let Some(ctx) = self.func.take()
            && ret.is_some_and(|t| !t.is_scalar())
            && let Some(first) = ctx.ret_shapes.first().cloned().flatten()
            && ctx.ret_shapes.iter().all(|s| s.as_ref() == Some(&first))
            && let Some(dims) = first.into_iter().collect::<Option<Vec<i64>>>()
        {
            self.fn_shapes.insert(f.name.name.clone(), dims);
        }
    }

    /// Checks a declaration and adds it to the current scope. `top` is true for block-level
    /// declarations (constraints allowed, sizes must be data).
    /// The annotations: `@dropout(p)` on an unconstrained `real`, `vector`, `row_vector` or
    /// `matrix` parameter (or an array of them), with a drop rate 0 < p < 1; `@missing` on a
    /// real-valued data variable (`real`, `vector`, `row_vector`, `matrix` or arrays of them,
    /// bounds allowed), whose missing entries the fit imputes (docs/missing_data.md).
    fn annotation(&mut self, a: &crate::syntax::ast::Annotation, d: &VarDecl, origin: Origin) {
        let name = &d.name.name;
        let bad = |message: String, hint: &str| SemanticError::BadAnnotation {
            message,
            span: a.span,
            hint: hint.to_string(),
        };
        if a.name.name == "missing" {
            self.missing_annotation(a, d, origin);
            return;
        }
        if a.name.name != "dropout" {
            self.err(bad(
                format!("unknown annotation `@{}`", a.name.name),
                "the annotations are `@dropout(p)` on a parameter (MC dropout's drop rate) and \
                 `@missing` on a data variable (its missing entries are imputed)",
            ));
            return;
        }
        let Some(p) = a.value else {
            self.err(bad(
                "`@dropout` needs its drop rate, e.g. `@dropout(0.1)`".into(),
                "p is the probability that a unit is dropped (as PyTorch's `Dropout(p)`); \
                 0.05 to 0.5 are usual",
            ));
            return;
        };
        if origin != Origin::Parameter {
            self.err(bad(
                format!("`@dropout` applies to parameters, but `{name}` is not one"),
                "annotate a weight declared in the `parameters` block, e.g. \
                 `@dropout(0.1) matrix[K, H] W;` (its rows, the input units, are dropped)",
            ));
            return;
        }
        if !(p > 0.0 && p < 1.0) {
            self.err(bad(
                format!("the drop rate of `@dropout` must lie strictly between 0 and 1, got {p}"),
                "p is the probability that a unit is dropped (as PyTorch's `Dropout(p)`); \
                 0.05 to 0.5 are usual",
            ));
        }
        let structured = is_structured(&d.ty.base);
        if structured || !d.ty.constraint.is_empty() {
            self.err(bad(
                format!("`@dropout` needs an unconstrained parameter, but `{name}` is constrained"),
                "dropping sets a coordinate of the unconstrained scale to 0, which is \
                 meaningful for weights but not for a scale or a simplex; annotate the \
                 unconstrained weights instead",
            ));
        }
    }

    /// `@missing`: no argument, on a real-valued data variable without offset/multiplier or a
    /// structured type (the imputed entries are parameters with the declared bounds).
    fn missing_annotation(
        &mut self,
        a: &crate::syntax::ast::Annotation,
        d: &VarDecl,
        origin: Origin,
    ) {
        let name = &d.name.name;
        let bad = |message: String, hint: &str| SemanticError::BadAnnotation {
            message,
            span: a.span,
            hint: hint.to_string(),
        };
        if a.value.is_some() {
            self.err(bad(
                "`@missing` takes no argument".into(),
                "write `@missing vector[N] x;`",
            ));
            return;
        }
        if origin != Origin::ImputedData {
            self.err(bad(
                format!("`@missing` applies to data variables, but `{name}` is not one"),
                "annotate a covariate or outcome declared in the `data` block, e.g. \
                 `@missing vector[N] x;`; its `NA` cells become parameters that the fit imputes",
            ));
            return;
        }
        let c = &d.ty.constraint;
        if matches!(d.ty.base, SizedBase::Int) {
            self.err(bad(
                format!("`@missing` needs real values, but `{name}` is declared `int`"),
                "imputed entries are continuous parameters; a discrete variable with missing \
                 entries must be marginalised by hand (sum its probabilities over its values)",
            ));
        } else if is_structured(&d.ty.base) || c.offset.is_some() || c.multiplier.is_some() {
            self.err(bad(
                format!(
                    "`@missing` applies to `real`, `vector`, `row_vector` and `matrix` data (and \
                     arrays of them), with at most `lower`/`upper` bounds; `{name}` is not one"
                ),
                "declare the variable as a plain real-valued type; its imputed entries follow \
                 its bounds",
            ));
        }
    }

    pub(super) fn decl(&mut self, d: &VarDecl, top: bool) {
        let name = &d.name.name;
        let origin = if top {
            self.block.origin()
        } else {
            Origin::Local
        };
        let origin =
            if origin == Origin::Data && d.annotations.iter().any(|a| a.name.name == "missing") {
                Origin::ImputedData
            } else {
                origin
            };
        let base = Type::base_of_sized(&d.ty.base);
        let ty = Type::array(base, d.ty.array_dims.len());

        // Sizes: int, and data-only at block level.
        let mut sizes = Vec::new();
        let mut known = Vec::new();
        self.size_at = (self.func.is_none() && self.loop_depth == 0).then_some(d.ty.span.start);
        for e in size_exprs(d) {
            sizes.push(pretty::expr(e));
            let value = self.size_value(e);
            known.push(value);
            if let Some(v) = value
                && v < 0
            {
                self.negative_size(name, e, v);
            }
            if let Some(t) = self.expr(e)
                && !t.is_int()
            {
                self.err(SemanticError::TypeMismatch {
                    what: format!("the size of `{name}`"),
                    expected: "`int`".into(),
                    found: t.to_string(),
                    span: e.span,
                    help: None,
                });
            }
            if top {
                self.require_data(e, |var, kind, span, decl_span| SemanticError::NonDataSize {
                    name: name.clone(),
                    var,
                    kind,
                    span,
                    decl_span,
                });
            }
        }

        self.size_at = None;

        // Constraints: block level only; bounds of the right type; data bounds are data.
        if !top && (!d.ty.constraint.is_empty() || is_structured(&d.ty.base)) {
            self.err(SemanticError::ConstraintOnLocal {
                name: name.clone(),
                span: d.ty.span,
            });
        }
        // Bounds of data may use only data, and bounds of parameters only data and earlier
        // parameters: both hold by scoping, since blocks are checked in order and a name is
        // visible only after its declaration.
        let c = &d.ty.constraint;
        if let (Some(lo), Some(hi)) = (&c.lower, &c.upper)
            && let (Some(a), Some(b)) = (pretty::constant_value(lo), pretty::constant_value(hi))
            && a >= b
        {
            self.err(SemanticError::BoundsReversed {
                name: name.clone(),
                lower: pretty::expr(lo),
                upper: pretty::expr(hi),
                span: d.ty.span,
            });
        }
        for e in [&c.lower, &c.upper, &c.offset, &c.multiplier]
            .into_iter()
            .flatten()
        {
            if let Some(t) = self.expr(e) {
                let ok = if base == Base::Int {
                    t.is_int()
                } else {
                    t.is_scalar() || Type::scalar(base).accepts(t)
                };
                if !ok {
                    let expected = if base == Base::Int {
                        "`int`".to_string()
                    } else if base == Base::Real {
                        "`int` or `real`".to_string()
                    } else {
                        format!("`real` or `{}`", base.keyword())
                    };
                    self.err(SemanticError::TypeMismatch {
                        what: format!("a bound of `{name}`"),
                        expected,
                        found: t.to_string(),
                        span: e.span,
                        help: Some(format!(
                            "bounds of a `{}` are scalars or values of the same type",
                            base.keyword()
                        )),
                    });
                } else if origin == Origin::ImputedData && !t.is_scalar() {
                    self.err(SemanticError::TypeMismatch {
                        what: format!("a bound of the `@missing` variable `{name}`"),
                        expected: "`int` or `real`".into(),
                        found: t.to_string(),
                        span: e.span,
                        help: Some(
                            "the imputed entries share one bound; for entry-wise bounds, \
                             declare the variable without them and bound the imputation model"
                                .into(),
                        ),
                    });
                }
            }
        }

        for a in &d.annotations {
            self.annotation(a, d, origin);
        }

        if base == Base::Int && matches!(origin, Origin::Parameter | Origin::TransformedParameter) {
            self.err(SemanticError::DiscreteParameter {
                name: name.clone(),
                what: origin.describe().into(),
                span: d.ty.span,
            });
        }

        if let Some(init) = &d.init {
            if matches!(self.block, Block::Data | Block::Parameters) {
                self.err(SemanticError::InitialiserNotAllowed {
                    block: self.block.name().into(),
                    span: init.span,
                });
            } else {
                if let Some(t) = self.expr(init)
                    && !ty.accepts(t)
                {
                    self.err(SemanticError::TypeMismatch {
                        what: format!("the initial value of `{name}`"),
                        expected: format!("`{ty}`"),
                        found: t.to_string(),
                        span: init.span,
                        help: promotion_help(ty, t),
                    });
                }
                // `vector[2] c = b;` with `b` declared `vector[3]`: can never run
                if !sizes.is_empty()
                    && sizes.iter().all(|s| s.parse::<u64>().is_ok())
                    && let Some(found) = self.value_literal_sizes(init)
                    && found != sizes.join(" × ")
                {
                    self.err(SemanticError::LiteralSizeMismatch {
                        lhs: name.clone(),
                        lhs_size: sizes.join(" × "),
                        rhs: pretty::expr(init),
                        rhs_size: found,
                        context: format!("the declaration of `{name}`"),
                        span: init.span,
                    });
                } else {
                    // the same with sizes from the data, or through operations and calls
                    self.check_declared_sizes(d, ty, &sizes, &known, init);
                }
                let deps = self.param_deps(init);
                self.deps.entry(name.clone()).or_default().extend(deps);
                self.note_nonlinear_def(name, init, false);
            }
        }

        // `x_missing` is the output name of `@missing x`'s imputed entries
        if let Some((_, previous)) = self
            .imputed
            .iter()
            .find(|(n, _)| format!("{n}_missing") == *name)
        {
            self.err(SemanticError::Redeclaration {
                name: name.clone(),
                span: d.name.span,
                previous: *previous,
            });
            // still declared below (nothing else has the name), so that its uses do not
            // cascade into "undeclared `x_missing`" errors
        } else if let Some(prev) = self.scopes.lookup(name) {
            let previous = prev.decl_span;
            self.err(SemanticError::Redeclaration {
                name: name.clone(),
                span: d.name.span,
                previous,
            });
            return;
        }
        // Discrete parameters were reported above; a missing prior would be noise on top. On a
        // bounded space the implicit flat prior is proper (uniform on an interval, Dirichlet(1)
        // on a simplex, LKJ(1) on correlation matrices), so no warning there either.
        let proper_flat = (d.ty.constraint.lower.is_some() && d.ty.constraint.upper.is_some())
            || matches!(
                d.ty.base,
                SizedBase::Simplex(_) | SizedBase::CholeskyFactorCorr(_) | SizedBase::CorrMatrix(_)
            );
        // A parameter with a literal size 0 (`vector[0] z`, `matrix[0, K] W`) holds no values
        // and adds nothing to the density: it has no prior to miss, and is no flat direction.
        let empty =
            d.ty.size_exprs()
                .iter()
                .any(|e| exprs::const_int(e) == Some(0));
        if origin == Origin::Parameter && base != Base::Int && !proper_flat && !empty {
            self.params.push((name.clone(), d.name.span));
        }
        if origin == Origin::ImputedData {
            self.imputed.push((name.clone(), d.name.span));
        }
        // `real s = 0;` never assigned: a use of `s` as a distribution's argument is the
        // constant (see `Checker::constant_of`)
        if d.ty.array_dims.is_empty()
            && matches!(d.ty.base, SizedBase::Int | SizedBase::Real)
            && !self.assigned.contains_key(name)
            && let Some(init) = &d.init
            && let Some(v) = super::dists::literal_value(init)
        {
            self.constants
                .insert(name.clone(), (d.name.span, init.span, v));
        }
        // `int M = N + 1;` never assigned: `M` is known wherever `N` is
        if ty == Type::INT
            && self.func.is_none()
            && !self.assigned.contains_key(name)
            && let Some(init) = &d.init
            && let Some(v) = self.size_value(init)
        {
            self.derived_ints.insert(name.clone(), (d.name.span, v));
        }
        self.scopes.declare(
            name,
            VarInfo {
                ty,
                origin,
                decl_span: d.name.span,
                lower: c.lower.clone(),
                upper: c.upper.clone(),
                sizes,
                known,
                structured: is_structured(&d.ty.base),
            },
        );
    }

    /// Reports (via `make`) the first variable in `e` that is not data; undeclared names were
    /// already reported by the type inference.
    pub(super) fn require_data(
        &mut self,
        e: &Expr,
        make: impl Fn(String, String, Span, Span) -> SemanticError,
    ) {
        let mut vars = Vec::new();
        collect_vars(e, &mut vars);
        for (v, span) in vars {
            if let Some(info) = self.scopes.lookup(v)
                && !info.origin.is_data()
            {
                let err = make(
                    v.to_string(),
                    info.origin.describe().to_string(),
                    span,
                    info.decl_span,
                );
                self.err(err);
                return;
            }
        }
    }

    // ----- statements ---------------------------------------------------------------------
}
