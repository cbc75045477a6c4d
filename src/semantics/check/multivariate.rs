//! Checks of `~` statements and calls for the multivariate families
//! ([`crate::distributions::multivariate`]): arity, argument shapes (vectors, arrays of vectors,
//! matrices, ints) and the types returned by their `_rng` functions.

use crate::distributions::multivariate::{MvFamily, MvParam, MvSig, Shape};
use crate::syntax::ast::Expr;
use crate::syntax::span::Span;

use super::super::error::SemanticError;
use super::super::pretty;
use super::super::types::{Base, Type};
use super::{CallType, Checker, conditional_form, lowercase_first, plural};

/// Whether a value of type `t` fits `shape`.
fn accepts(shape: Shape, t: Type) -> bool {
    let vec_like = |b: Base| matches!(b, Base::Vector | Base::RowVector);
    match shape {
        Shape::Real => t.is_scalar(),
        Shape::Int => t == Type::INT,
        Shape::Ints => t.is_ints(),
        Shape::Reals => t.is_reals(),
        Shape::Vector => t.dims == 0 && vec_like(t.base),
        Shape::Vectors => t.dims <= 1 && vec_like(t.base),
        Shape::Matrix => t == Type::MATRIX,
        Shape::LogOdds => (t.dims == 0 && vec_like(t.base)) || t == Type::MATRIX,
    }
}

/// The accepted types in words, for messages.
fn shape_words(shape: Shape) -> &'static str {
    match shape {
        Shape::Real => "`real`",
        Shape::Int => "`int`",
        Shape::Ints => "`int` or `array[] int`",
        Shape::Reals => "`real` or `vector`",
        Shape::Vector => "`vector` or `row_vector`",
        Shape::Vectors => "`vector`, `row_vector` or an array of them",
        Shape::Matrix => "`matrix`",
        Shape::LogOdds => "`vector`, `row_vector`, or `matrix` (one row of log odds per outcome)",
    }
}

fn names(params: &[MvParam]) -> String {
    params
        .iter()
        .map(|p| p.name.to_lowercase())
        .collect::<Vec<_>>()
        .join(", ")
}

impl Checker<'_> {
    /// Each argument's type against its [`Shape`]; `first` is the 1-based position of
    /// `params[0]` in the call, for messages.
    fn mv_shapes(
        &mut self,
        fname: &str,
        params: &[MvParam],
        args: &[Expr],
        tys: &[Option<Type>],
        first: usize,
    ) {
        for (k, ((p, a), t)) in params.iter().zip(args).zip(tys).enumerate() {
            if let Some(t) = t
                && !accepts(p.shape, *t)
            {
                self.err(SemanticError::TypeMismatch {
                    what: format!("argument {} of `{fname}` ({})", k + first, p.name),
                    expected: shape_words(p.shape).into(),
                    found: t.to_string(),
                    span: a.span,
                    help: None,
                });
            } else if p.positive
                && let Some(v) = super::dists::literal_value(a)
                && !(v > 0.0 && v.is_finite())
            {
                // a constant η or ν outside its support: every evaluation would fail
                self.err(SemanticError::LiteralOutsideSupport {
                    position: k + first,
                    function: fname.into(),
                    role: lowercase_first(p.name),
                    value: pretty::expr(a),
                    support: "positive".into(),
                    example: "2".into(),
                    span: a.span,
                    declared: None,
                });
            }
        }
    }

    /// `y ~ foo(θ…)` for a multivariate family.
    pub(super) fn mv_tilde(
        &mut self,
        sig: &'static MvSig,
        lhs: &Expr,
        lhs_ty: Option<Type>,
        args: &[Expr],
        arg_tys: &[Option<Type>],
        dist_span: Span,
    ) {
        let before = self.errors.len();
        if args.len() != sig.params.len() {
            self.err(SemanticError::WrongArity {
                function: sig.name.into(),
                span: dist_span,
                expected: format!(
                    "{} after `~` ({})",
                    plural(sig.params.len(), "argument"),
                    names(sig.params)
                ),
                found: args.len(),
            });
        } else {
            self.mv_shapes(sig.name, sig.params, args, arg_tys, 1);
        }
        if let Some(t) = lhs_ty
            && !accepts(sig.variate.shape, t)
        {
            self.err(SemanticError::TypeMismatch {
                what: format!("the left side of `~ {}`", sig.name),
                expected: shape_words(sig.variate.shape).into(),
                found: t.to_string(),
                span: lhs.span,
                help: None,
            });
        }
        // sizes, once the types fit
        if self.errors.len() == before && lhs_ty.is_some() && arg_tys.iter().all(Option::is_some) {
            let all: Vec<&Expr> = std::iter::once(lhs).chain(args).collect();
            self.check_mv_sizes(sig, sig.name, &all, false);
        }
        self.check_nonlinear_lhs(lhs);
    }

    /// `foo_lpdf(y | …)`, `foo_lupmf(y | …)` or `foo_rng(…)` of a multivariate family.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn mv_call(
        &mut self,
        sig: &'static MvSig,
        fname: &str,
        suffix: &str,
        args: &[Expr],
        tys: &[Option<Type>],
        conditional: bool,
        span: Span,
    ) -> CallType {
        let is_rng = suffix == "_rng";
        match suffix {
            "_lpdf" | "_lupdf" if sig.discrete => {
                let good = if suffix == "_lpdf" { "_lpmf" } else { "_lupmf" };
                self.err(SemanticError::WrongSuffix {
                    name: fname.into(),
                    family: sig.name.into(),
                    kind: "discrete".into(),
                    suggested: format!("{}{good}", sig.name),
                    span,
                });
            }
            "_lpmf" | "_lupmf" if !sig.discrete => {
                let good = if suffix == "_lpmf" { "_lpdf" } else { "_lupdf" };
                self.err(SemanticError::WrongSuffix {
                    name: fname.into(),
                    family: sig.name.into(),
                    kind: "continuous".into(),
                    suggested: format!("{}{good}", sig.name),
                    span,
                });
            }
            "_cdf" | "_lcdf" | "_lccdf" => {
                self.err(SemanticError::NoLogCdf {
                    family: sig.name.into(),
                    what: format!("`{fname}`"),
                    span,
                });
                return CallType::Error;
            }
            _ => {}
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
        let params = if is_rng {
            match sig.rng_params {
                Some(p) => p,
                None => {
                    self.err(SemanticError::UnknownFunction {
                        name: fname.into(),
                        span,
                        suggestion: None,
                    });
                    return CallType::Error;
                }
            }
        } else {
            sig.params
        };
        let n_expected = params.len() + usize::from(!is_rng);
        if args.len() != n_expected {
            let expected = super::expected_arity(is_rng, n_expected, &names(params));
            self.err(SemanticError::WrongArity {
                function: fname.into(),
                span,
                expected,
                found: args.len(),
            });
            return CallType::Error;
        }
        let sizes = |c: &mut Self, before: usize| {
            if c.errors.len() == before && tys.iter().all(Option::is_some) {
                let all: Vec<&Expr> = args.iter().collect();
                c.check_mv_sizes(sig, fname, &all, is_rng);
            }
        };
        if is_rng {
            let before = self.errors.len();
            self.mv_shapes(fname, params, args, tys, 1);
            sizes(self, before);
            CallType::Value(match sig.family {
                MvFamily::MultiNormal | MvFamily::MultiNormalCholesky => {
                    let dims = tys[0].map_or(0, |t| t.dims);
                    Type::array(Base::Vector, dims)
                }
                MvFamily::MultiStudentT => {
                    let dims = tys[1].map_or(0, |t| t.dims);
                    Type::array(Base::Vector, dims)
                }
                MvFamily::Dirichlet => Type::VECTOR,
                MvFamily::LkjCorrCholesky
                | MvFamily::LkjCorr
                | MvFamily::Wishart
                | MvFamily::WishartCholesky
                | MvFamily::InvWishart => Type::MATRIX,
                MvFamily::Categorical
                | MvFamily::CategoricalLogit
                | MvFamily::OrderedLogistic
                | MvFamily::OrderedProbit => Type::INT,
                MvFamily::MultiNormalPrec
                | MvFamily::MultiGpCholesky
                | MvFamily::PoissonLogGlm
                | MvFamily::BernoulliLogitGlm
                | MvFamily::CategoricalLogitGlm => return CallType::Error,
            })
        } else {
            let before = self.errors.len();
            self.mv_shapes(fname, std::slice::from_ref(&sig.variate), args, tys, 1);
            self.mv_shapes(fname, params, &args[1..], &tys[1..], 2);
            sizes(self, before);
            CallType::Value(Type::REAL)
        }
    }
}
