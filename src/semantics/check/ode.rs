//! Calls of the ODE solvers `ode_rk45`, `ode_bdf` and their `_tol` forms (Stan Functions
//! Reference, "Ordinary Differential Equation (ODE) Solvers", variadic interface):
//!
//! ```text
//! array[] vector ode_rk45(function f, vector y0, real t0, array[] real ts, ...)
//! array[] vector ode_rk45_tol(function f, vector y0, real t0, array[] real ts,
//!                             data real rtol, data real atol, int max_num_steps, ...)
//! ```
//!
//! `f` names a function of the `functions` block with signature
//! `vector f(real t, vector y, ...)`; the trailing arguments of the call are passed to it
//! unchanged, so their number and types must match `f`'s parameters after `y`. bayesc
//! differentiates with respect to `y0` and the trailing arguments only: `t0`, `ts` and the
//! tolerances must be data (Stan also allows parameter-dependent times).

use super::*;

/// Whether `name` is one of the ODE solvers checked here.
pub(crate) fn is_ode_solver(name: &str) -> bool {
    matches!(
        name,
        "ode_rk45" | "ode_bdf" | "ode_rk45_tol" | "ode_bdf_tol"
    )
}

impl<'p> Checker<'p> {
    fn ode_err(&mut self, function: &str, problem: String, span: Span, label: &str, help: &str) {
        self.err(SemanticError::BadOdeCall {
            function: function.into(),
            problem,
            span,
            label: label.into(),
            help: help.into(),
        });
    }

    /// Checks an ODE solver call and returns its type, `array[] vector`.
    pub(super) fn ode_call(&mut self, fname: &str, args: &[Expr], span: Span) -> CallType {
        let tol = fname.ends_with("_tol");
        let fixed = if tol { 7 } else { 4 };
        let shape = if tol {
            "(f, vector y0, real t0, array[] real ts, real rtol, real atol, int max_num_steps, ...)"
        } else {
            "(f, vector y0, real t0, array[] real ts, ...)"
        };
        if args.len() < fixed {
            for a in args.iter().skip(1) {
                self.expr(a);
            }
            self.err(SemanticError::WrongArity {
                function: fname.into(),
                span,
                expected: format!("at least {fixed} arguments {shape}"),
                found: args.len(),
            });
            return CallType::Error;
        }
        let tys: Vec<Option<Type>> = args.iter().skip(1).map(|a| self.expr(a)).collect();
        let mut ok = true;

        // The system function.
        let fexpr = &args[0];
        let sys_help = "define `vector f(real t, vector y, ...)` in the `functions` block and \
                        pass its name";
        let f = match &fexpr.kind {
            ExprKind::Var(name) if self.scopes.lookup(name).is_none() => self
                .user_function(name)
                .filter(|_| split_suffix(name).is_none())
                .map(|f| (name.clone(), f)),
            _ => None,
        };
        let Some((sys_name, f)) = f else {
            self.ode_err(
                fname,
                "the first argument must name the ODE system function".into(),
                fexpr.span,
                "not a function of the `functions` block",
                sys_help,
            );
            return CallType::Error;
        };
        let sig_ok = f.params.len() >= 2
            && f.params[0] == Type::REAL
            && f.params[1] == Type::VECTOR
            && f.ret == Some(Type::VECTOR);
        if !sig_ok {
            let list = f
                .params
                .iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(", ");
            let ret = f.ret.map_or("void".to_string(), |t| t.to_string());
            self.ode_err(
                fname,
                format!(
                    "the system function `{sys_name}` has signature ({list}) => {ret}, expected \
                     (real t, vector y, ...) => vector"
                ),
                fexpr.span,
                "wrong signature",
                sys_help,
            );
            return CallType::Error;
        }

        // The fixed arguments.
        let mut expected = vec![
            ("the initial state `y0`", Type::VECTOR),
            ("the initial time `t0`", Type::REAL),
            ("the output times `ts`", Type::array(Base::Real, 1)),
        ];
        if tol {
            expected.push(("the relative tolerance", Type::REAL));
            expected.push(("the absolute tolerance", Type::REAL));
            expected.push(("`max_num_steps`", Type::INT));
        }
        for (k, (what, want)) in expected.iter().enumerate() {
            let e = &args[k + 1];
            if let Some(t) = tys[k]
                && !want.accepts(t)
            {
                self.err(SemanticError::TypeMismatch {
                    what: format!("{what} of `{fname}`"),
                    expected: format!("`{want}`"),
                    found: t.to_string(),
                    span: e.span,
                    help: None,
                });
                ok = false;
            }
            if k >= 1 && self.depends_on_parameters(e) {
                self.ode_err(
                    fname,
                    format!("{what} must be data"),
                    e.span,
                    "depends on parameters",
                    "bayesc differentiates ODE solutions with respect to the initial state and \
                     the trailing arguments only; pass times and tolerances from data",
                );
                ok = false;
            }
        }

        // The variadic arguments, passed to `f` after `t` and `y`.
        let extra = &args[fixed..];
        let want = &f.params[2..];
        if extra.len() != want.len() {
            let list = want
                .iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(", ");
            self.ode_err(
                fname,
                format!(
                    "the system function `{sys_name}` takes {} after `t` and `y` ({list}), but \
                     the call passes {}",
                    plural(want.len(), "argument"),
                    extra.len()
                ),
                span,
                "wrong number of trailing arguments",
                "pass, after the solver's own arguments, exactly the arguments that the system \
                 function takes after `y`",
            );
            return CallType::Error;
        }
        for (k, (e, p)) in extra.iter().zip(want).enumerate() {
            match tys[fixed - 1 + k] {
                Some(t) if !p.accepts(t) => {
                    self.err(SemanticError::TypeMismatch {
                        what: format!(
                            "argument {} of `{sys_name}` (passed through `{fname}`)",
                            k + 3
                        ),
                        expected: format!("`{p}`"),
                        found: t.to_string(),
                        span: e.span,
                        help: None,
                    });
                    ok = false;
                }
                Some(_) => {}
                None => ok = false,
            }
            if f.data_only.get(k + 2).copied().unwrap_or(false) && self.depends_on_parameters(e) {
                self.err(SemanticError::NonDataArgument {
                    function: sys_name.clone(),
                    index: k + 3,
                    span: e.span,
                });
                ok = false;
            }
        }
        if ok && tys.iter().all(Option::is_some) {
            CallType::Value(Type::array(Base::Vector, 1))
        } else {
            CallType::Error
        }
    }
}
