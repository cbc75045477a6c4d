//! Function and distribution calls: built-ins, user-defined functions, `_lpdf`/`_rng` suffixes.

use super::*;

impl<'p> Checker<'p> {
    pub(super) fn call(
        &mut self,
        name: &crate::syntax::ast::Ident,
        args: &[Expr],
        conditional: bool,
        span: Span,
    ) -> CallType {
        let fname = name.name.as_str();
        if super::ode::is_ode_solver(fname) && self.user_function(fname).is_none() {
            if conditional {
                self.err(SemanticError::ConditionalNotAllowed {
                    name: fname.into(),
                    span: name.span,
                });
            }
            return self.ode_call(fname, args, span);
        }
        let tys: Vec<Option<Type>> = args.iter().map(|a| self.expr(a)).collect();

        if fname.ends_with("_rng") && !self.rng_allowed() {
            let place = match &self.func {
                Some(f) => format!("function `{}` (its name does not end in `_rng`)", f.name),
                None if self.block == Block::TransformedData => {
                    "the `transformed data` block (not supported yet: bayesc evaluates it once, \
                     without a random stream)"
                        .to_string()
                }
                None => format!("the `{}` block", self.block.name()),
            };
            self.err(SemanticError::RngNotAllowed {
                name: fname.into(),
                span: name.span,
                place,
            });
        }

        if let Some(f) = self.user_function(fname) {
            let density = split_suffix(fname).is_some_and(|(_, s)| s != "_rng");
            if conditional && !density {
                self.err(SemanticError::ConditionalNotAllowed {
                    name: fname.into(),
                    span: name.span,
                });
            }
            if density && !conditional && !args.is_empty() {
                self.err(SemanticError::ConditionalRequired {
                    name: fname.into(),
                    span,
                    fixed: conditional_form(fname, args),
                });
            }
            if fname.ends_with("_lp") {
                if !self.lp_call_allowed() {
                    self.err(SemanticError::TargetOutsideModel {
                        what: format!("{fname}(…)"),
                        span,
                    });
                }
                // An `_lp` function adds to `target` (typically priors on its arguments).
                for a in args {
                    let d = self.param_deps(a);
                    self.has_prior.extend(d);
                }
            }
            let exprs: Vec<&Expr> = args.iter().collect();
            if !self.check_user_args(fname, &f, &tys, &exprs, span) {
                return CallType::Error;
            }
            return match f.ret {
                Some(t) => CallType::Value(t),
                None => CallType::Void,
            };
        }

        if let Some((STD_NORMAL, suffix)) = split_suffix(fname)
            && suffix != "_lpmf"
            && suffix != "_lupmf"
        {
            return self.std_normal_call(fname, suffix, args, &tys, span);
        }

        if let Some((stem, suffix)) = split_suffix(fname)
            && let Some(sig) = multivariate_registry::lookup(stem)
        {
            return self.mv_call(sig, fname, suffix, args, &tys, conditional, span);
        }

        if let Some((stem, suffix)) = split_suffix(fname)
            && let Some(sig) = registry::lookup(stem)
        {
            return self.distribution_call(sig, fname, suffix, args, &tys, conditional, span);
        }

        if let Some(b) = builtins::lookup(fname) {
            if conditional {
                self.err(SemanticError::ConditionalNotAllowed {
                    name: fname.into(),
                    span: name.span,
                });
            }
            if fname == "target" && !self.target_allowed() {
                self.err(SemanticError::TargetOutsideModel {
                    what: "target()".into(),
                    span,
                });
            }
            let n = args.len();
            if n < b.min_args || b.max_args.is_some_and(|m| n > m) {
                let expected = match b.max_args {
                    Some(m) if m == b.min_args => plural(m, "argument"),
                    Some(m) => format!("{} to {m} arguments", b.min_args),
                    None => format!("at least {} arguments", b.min_args),
                };
                self.err(SemanticError::WrongArity {
                    function: fname.into(),
                    span,
                    expected,
                    found: n,
                });
                return CallType::Error;
            }
            // Stan's `to_int(data real)`: outside `generated quantities` (where parameters are
            // plain values) the argument must not depend on parameters.
            if fname == "to_int"
                && self.block != Block::GeneratedQuantities
                && self.depends_on_parameters(&args[0])
            {
                self.err(SemanticError::DataOnlyBuiltin {
                    function: fname.into(),
                    span: args[0].span,
                });
            }
            let Some(tys) = tys.into_iter().collect::<Option<Vec<Type>>>() else {
                return CallType::Error;
            };
            return match builtins::return_type(fname, &tys) {
                Some(t) => CallType::Value(t),
                None => {
                    self.err(SemanticError::NoMatchingSignature {
                        function: fname.into(),
                        span,
                        args: tys
                            .iter()
                            .map(|t| t.to_string())
                            .collect::<Vec<_>>()
                            .join(", "),
                        signatures: b.signatures.into(),
                    });
                    CallType::Error
                }
            };
        }

        let candidates = self.function_names();
        let suggestion = best_match(fname, candidates.iter().map(String::as_str));
        self.err(SemanticError::UnknownFunction {
            name: fname.into(),
            span: name.span,
            suggestion,
        });
        CallType::Error
    }

    /// `std_normal_lpdf(y)`, `_lupdf`, `_cdf`, `_lcdf`, `_lccdf` (one argument, the `|` optional) and
    /// `std_normal_rng()`: the standard normal, `normal(0, 1)`, without parameters.
    pub(super) fn std_normal_call(
        &mut self,
        fname: &str,
        suffix: &str,
        args: &[Expr],
        tys: &[Option<Type>],
        span: Span,
    ) -> CallType {
        let n_expected = usize::from(suffix != "_rng");
        if args.len() != n_expected {
            let expected = if n_expected == 0 {
                "no arguments".to_string()
            } else {
                "1 argument (the variate)".to_string()
            };
            self.err(SemanticError::WrongArity {
                function: fname.into(),
                span,
                expected,
                found: args.len(),
            });
            return CallType::Error;
        }
        if let (Some(Some(t)), Some(a)) = (tys.first(), args.first())
            && !t.is_reals()
        {
            self.err(SemanticError::TypeMismatch {
                what: format!("the variate of `{fname}`"),
                expected: REALS.into(),
                found: t.to_string(),
                span: a.span,
                help: None,
            });
            return CallType::Error;
        }
        CallType::Value(Type::REAL)
    }

    /// Arity and argument types of a user-defined function; false after an error.
    pub(super) fn check_user_args(
        &mut self,
        fname: &str,
        f: &UserFn,
        tys: &[Option<Type>],
        exprs: &[&Expr],
        span: Span,
    ) -> bool {
        if tys.len() != f.params.len() {
            let list = f
                .params
                .iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(", ");
            self.err(SemanticError::WrongArity {
                function: fname.into(),
                span,
                expected: format!("{} ({list})", plural(f.params.len(), "argument")),
                found: tys.len(),
            });
            return false;
        }
        let mut ok = true;
        for (k, ((p, t), e)) in f.params.iter().zip(tys).zip(exprs).enumerate() {
            match t {
                Some(t) if !p.accepts(*t) => {
                    self.err(SemanticError::TypeMismatch {
                        what: format!("argument {} of `{fname}`", k + 1),
                        expected: format!("`{p}`"),
                        found: t.to_string(),
                        span: e.span,
                        help: promotion_help(*p, *t),
                    });
                    ok = false;
                }
                Some(_) => {}
                None => ok = false,
            }
            if f.data_only.get(k).copied().unwrap_or(false) && self.depends_on_parameters(e) {
                self.err(SemanticError::NonDataArgument {
                    function: fname.into(),
                    index: k + 1,
                    span: e.span,
                });
                ok = false;
            }
        }
        ok
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn distribution_call(
        &mut self,
        sig: &'static FamilySig,
        fname: &str,
        suffix: &str,
        args: &[Expr],
        tys: &[Option<Type>],
        conditional: bool,
        span: Span,
    ) -> CallType {
        let is_rng = suffix == "_rng";
        let discrete = sig.discrete || is_discrete_support(sig.variate);
        match suffix {
            "_lpdf" | "_lupdf" if discrete => {
                let good = if suffix == "_lpdf" { "_lpmf" } else { "_lupmf" };
                self.err(SemanticError::WrongSuffix {
                    name: fname.into(),
                    family: sig.name.into(),
                    kind: "discrete".into(),
                    suggested: format!("{}{good}", sig.name),
                    span,
                });
            }
            "_lpmf" | "_lupmf" if !discrete => {
                let good = if suffix == "_lpmf" { "_lpdf" } else { "_lupdf" };
                self.err(SemanticError::WrongSuffix {
                    name: fname.into(),
                    family: sig.name.into(),
                    kind: "continuous".into(),
                    suggested: format!("{}{good}", sig.name),
                    span,
                });
            }
            _ => {}
        }
        if matches!(suffix, "_cdf" | "_lcdf" | "_lccdf") && !has_log_cdf(sig.family) {
            self.err(SemanticError::NoLogCdf {
                family: sig.name.into(),
                what: format!("`{fname}`"),
                span,
            });
        }
        if is_rng && conditional {
            self.err(SemanticError::ConditionalNotAllowed {
                name: fname.into(),
                span,
            });
        }
        if !is_rng && !conditional && !args.is_empty() {
            self.err(SemanticError::ConditionalRequired {
                name: fname.into(),
                span,
                fixed: conditional_form(fname, args),
            });
        }
        let n_expected = sig.params.len() + usize::from(!is_rng);
        if args.len() != n_expected {
            let expected = expected_arity(is_rng, n_expected, &param_names(sig));
            self.err(SemanticError::WrongArity {
                function: fname.into(),
                span,
                expected,
                found: args.len(),
            });
            return CallType::Error;
        }
        let (param_args, param_tys, first) = if is_rng {
            (args, tys, 1)
        } else {
            if let Some(t) = tys[0] {
                let (ok, expected) = if discrete {
                    (t.is_ints(), INTS)
                } else {
                    (t.is_reals(), REALS)
                };
                if !ok {
                    self.err(SemanticError::TypeMismatch {
                        what: format!("the variate of `{fname}`"),
                        expected: expected.into(),
                        found: t.to_string(),
                        span: args[0].span,
                        help: None,
                    });
                }
            }
            if matches!(suffix, "_lpdf" | "_lupdf" | "_lpmf" | "_lupmf")
                && tys[0].is_some_and(|t| t.is_scalar())
            {
                self.check_literal_outcome(sig.name, &format!("`{fname}`"), &args[0], &args[1..]);
            }
            (&args[1..], &tys[1..], 2)
        };
        self.check_dist_params(sig, fname, param_args, param_tys, first);
        // the vectorised arguments must agree in size
        let mut items = Vec::new();
        if !is_rng {
            items.push((&args[0], "the variate".to_string()));
        }
        items.extend(
            param_args
                .iter()
                .zip(sig.params)
                .map(|(a, p)| (a, lowercase_first(p.name))),
        );
        self.check_vectorised_sizes(fname, &items);
        if is_rng {
            let elem = if discrete { Base::Int } else { Base::Real };
            let vectorised = param_tys.iter().flatten().any(|t| !t.is_scalar());
            CallType::Value(Type::array(elem, usize::from(vectorised)))
        } else {
            CallType::Value(Type::REAL)
        }
    }
}
