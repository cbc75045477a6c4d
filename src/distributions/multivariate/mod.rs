//! Multivariate and categorical families: log densities with partials over vector and matrix
//! arguments, argument checks in Stan Math's words, and random number generators.
//!
//! The scalar families of [`super::log_density`] broadcast scalars and vectors element by
//! element; these families do not (a multi-normal variate is a whole vector, an LKJ variate a
//! whole matrix), so they have their own table ([`MV_FAMILIES`]) and entry points
//! ([`log_density`], [`rng`]). Arguments arrive flattened as [`MvArg`]s: the graph's storage
//! (array elements one after another, each vector or matrix column-major).
//!
//! Families (Stan Functions Reference parameterisations):
//! - `multi_normal(y | μ, Σ)`, `multi_normal_cholesky(y | μ, L)` — y and μ a vector or an
//!   array of vectors (broadcast: one may be a single vector);
//! - `lkj_corr_cholesky(L | η)` — L the Cholesky factor of a K × K correlation matrix;
//! - `dirichlet(θ | α)` — θ a simplex (or array of simplexes);
//! - `categorical(y | θ)`, `categorical_logit(y | β)` — y an int or array of ints in 1..K;
//! - `ordered_logistic(k | η, c)`, `ordered_probit(k | η, c)` — k an int or ints in 1..K, η a
//!   real or a vector, c the K − 1 ordered cut-points (a vector or an array of vectors);
//! - `lkj_corr(Ω | η)`, `multi_normal_prec(y | μ, Ω)`, `multi_student_t(y | ν, μ, Σ)`,
//!   `multi_gp_cholesky(y | L, w)`, `wishart(W | ν, S)`, `wishart_cholesky(L_W | ν, L_S)`,
//!   `inv_wishart(W | ν, S)`;
//! - the GLMs `poisson_log_glm(y | x, α, β)`, `bernoulli_logit_glm(y | x, α, β)`,
//!   `categorical_logit_glm(y | x, α, β)` ([`glm`]).

// Argument checks are written `!(x >= lo)` on purpose: NaN fails them.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

pub mod categorical;
pub mod dirichlet;
pub mod glm;
pub mod linalg;
pub mod lkj;
pub mod matrix_checks;
pub mod normal;
pub mod ordered_logistic;
pub mod ordered_probit;
pub mod sizes;
pub mod student_t;
pub mod wishart;

#[cfg(test)]
mod tests;

use super::args::{DistError, Term};
use super::registry::FunctionKind;

/// The multivariate and categorical families.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MvFamily {
    /// `multi_normal(y | μ, Σ)`.
    MultiNormal,
    /// `multi_normal_cholesky(y | μ, L)`, Σ = L Lᵀ.
    MultiNormalCholesky,
    /// `lkj_corr_cholesky(L | η)`.
    LkjCorrCholesky,
    /// `dirichlet(θ | α)`.
    Dirichlet,
    /// `categorical(y | θ)`, θ a simplex.
    Categorical,
    /// `categorical_logit(y | β)`, β log odds (softmax(β) = θ).
    CategoricalLogit,
    /// `ordered_logistic(k | η, c)`.
    OrderedLogistic,
    /// `ordered_probit(k | η, c)`.
    OrderedProbit,
    /// `lkj_corr(Ω | η)`.
    LkjCorr,
    /// `multi_normal_prec(y | μ, Ω)`, Ω the precision matrix.
    MultiNormalPrec,
    /// `multi_student_t(y | ν, μ, Σ)`.
    MultiStudentT,
    /// `multi_gp_cholesky(y | L, w)`.
    MultiGpCholesky,
    /// `wishart(W | ν, S)`.
    Wishart,
    /// `wishart_cholesky(L_W | ν, L_S)`.
    WishartCholesky,
    /// `inv_wishart(W | ν, S)`.
    InvWishart,
    /// `poisson_log_glm(y | x, α, β)`.
    PoissonLogGlm,
    /// `bernoulli_logit_glm(y | x, α, β)`.
    BernoulliLogitGlm,
    /// `categorical_logit_glm(y | x, α, β)`.
    CategoricalLogitGlm,
}

/// The shapes an argument of a multivariate family accepts (checked by semantics).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// `real` (or `int`).
    Real,
    /// `int`.
    Int,
    /// `int` or `array[] int`.
    Ints,
    /// `real`, `vector`, `row_vector` or `array[] real`.
    Reals,
    /// `vector` or `row_vector`.
    Vector,
    /// `vector`, `row_vector`, or a one-dimensional array of either.
    Vectors,
    /// `matrix`.
    Matrix,
    /// `vector` or `row_vector` (one set of log odds for every outcome), or `matrix` (a bayesc
    /// extension: row `n` holds the log odds of outcome `n`).
    LogOdds,
}

/// One argument of a family: its name in Stan Math's error messages, and its accepted shapes.
#[derive(Clone, Copy, Debug)]
pub struct MvParam {
    /// Name in error messages (Stan Math's), e.g. "Location parameter".
    pub name: &'static str,
    /// The accepted types.
    pub shape: Shape,
    /// `true` for a scalar that must be positive (the LKJ shape η, the degrees of freedom ν), so
    /// that a literal outside it is refused when the model is checked.
    pub positive: bool,
}

/// The signature of a multivariate family.
#[derive(Clone, Copy, Debug)]
pub struct MvSig {
    /// Name as written after `~`.
    pub name: &'static str,
    /// The family this row describes.
    pub family: MvFamily,
    /// `true` for the integer-variate families (`_lpmf`).
    pub discrete: bool,
    /// The variate (first argument of `_lpdf`/`_lpmf`, left side of `~`).
    pub variate: MvParam,
    /// The parameters of the density, in call order.
    pub params: &'static [MvParam],
    /// The parameters of `<name>_rng` (they differ from `params` for the LKJ families, whose
    /// `_rng` takes the dimension K); `None` for families that Stan gives no `_rng`
    /// (`multi_normal_prec`, `multi_gp_cholesky` and the GLMs).
    pub rng_params: Option<&'static [MvParam]>,
}

const fn mp(name: &'static str, shape: Shape) -> MvParam {
    MvParam {
        name,
        shape,
        positive: false,
    }
}

/// A positive scalar parameter ([`MvParam::positive`]).
const fn mp_positive(name: &'static str) -> MvParam {
    MvParam {
        name,
        shape: Shape::Real,
        positive: true,
    }
}

const MVN_Y: MvParam = mp("Random variable", Shape::Vectors);
const MVN_MU: MvParam = mp("Location parameter", Shape::Vectors);
const DOF: MvParam = mp_positive("Degrees of freedom parameter");
const GLM_X: MvParam = mp("Matrix of independent variables", Shape::Matrix);
const GLM_ALPHA: MvParam = mp("Intercept", Shape::Reals);
const GLM_BETA: MvParam = mp("Weight vector", Shape::Vector);

/// The table of multivariate families, one row each.
pub static MV_FAMILIES: &[MvSig] = &[
    MvSig {
        name: "multi_normal",
        family: MvFamily::MultiNormal,
        discrete: false,
        variate: MVN_Y,
        params: &[MVN_MU, mp("Covariance matrix", Shape::Matrix)],
        rng_params: Some(&[MVN_MU, mp("Covariance matrix", Shape::Matrix)]),
    },
    MvSig {
        name: "multi_normal_cholesky",
        family: MvFamily::MultiNormalCholesky,
        discrete: false,
        variate: MVN_Y,
        params: &[
            MVN_MU,
            mp("Cholesky factor of covariance matrix", Shape::Matrix),
        ],
        rng_params: Some(&[
            MVN_MU,
            mp("Cholesky factor of covariance matrix", Shape::Matrix),
        ]),
    },
    MvSig {
        name: "lkj_corr_cholesky",
        family: MvFamily::LkjCorrCholesky,
        discrete: false,
        variate: mp("Random variable", Shape::Matrix),
        params: &[mp_positive("Shape parameter")],
        rng_params: Some(&[mp("Dimension", Shape::Int), mp_positive("Shape parameter")]),
    },
    MvSig {
        name: "dirichlet",
        family: MvFamily::Dirichlet,
        discrete: false,
        variate: mp("probabilities", Shape::Vectors),
        params: &[mp("prior sample sizes", Shape::Vectors)],
        rng_params: Some(&[mp("prior sample sizes", Shape::Vector)]),
    },
    MvSig {
        name: "categorical",
        family: MvFamily::Categorical,
        discrete: true,
        variate: mp("Number of categories", Shape::Ints),
        params: &[mp("Probabilities parameter", Shape::Vector)],
        rng_params: Some(&[mp("Probabilities parameter", Shape::Vector)]),
    },
    MvSig {
        name: "categorical_logit",
        family: MvFamily::CategoricalLogit,
        discrete: true,
        variate: mp("Outcome", Shape::Ints),
        params: &[mp("log odds parameter", Shape::LogOdds)],
        rng_params: Some(&[mp("log odds parameter", Shape::Vector)]),
    },
    MvSig {
        name: "ordered_logistic",
        family: MvFamily::OrderedLogistic,
        discrete: true,
        variate: mp("Random variable", Shape::Ints),
        params: &[
            mp("Location parameter", Shape::Reals),
            mp("Cut-points", Shape::Vectors),
        ],
        rng_params: Some(&[
            mp("Location parameter", Shape::Real),
            mp("Cut-points", Shape::Vector),
        ]),
    },
    MvSig {
        name: "ordered_probit",
        family: MvFamily::OrderedProbit,
        discrete: true,
        variate: mp("Random variable", Shape::Ints),
        params: &[
            mp("Location parameter", Shape::Reals),
            mp("Cut-points", Shape::Vectors),
        ],
        rng_params: Some(&[
            mp("Location parameter", Shape::Real),
            mp("Cut-points", Shape::Vector),
        ]),
    },
    MvSig {
        name: "lkj_corr",
        family: MvFamily::LkjCorr,
        discrete: false,
        variate: mp("Correlation matrix", Shape::Matrix),
        params: &[mp_positive("Shape parameter")],
        rng_params: Some(&[mp("Dimension", Shape::Int), mp_positive("Shape parameter")]),
    },
    MvSig {
        name: "multi_normal_prec",
        family: MvFamily::MultiNormalPrec,
        discrete: false,
        variate: MVN_Y,
        params: &[MVN_MU, mp("Precision matrix", Shape::Matrix)],
        rng_params: None,
    },
    MvSig {
        name: "multi_student_t",
        family: MvFamily::MultiStudentT,
        discrete: false,
        variate: MVN_Y,
        params: &[DOF, MVN_MU, mp("Scale parameter", Shape::Matrix)],
        rng_params: Some(&[DOF, MVN_MU, mp("Scale parameter", Shape::Matrix)]),
    },
    MvSig {
        name: "multi_gp_cholesky",
        family: MvFamily::MultiGpCholesky,
        discrete: false,
        variate: mp("Random variable", Shape::Matrix),
        params: &[
            mp("Cholesky decomposition of kernel matrix", Shape::Matrix),
            mp("Kernel scales", Shape::Vector),
        ],
        rng_params: None,
    },
    MvSig {
        name: "wishart",
        family: MvFamily::Wishart,
        discrete: false,
        variate: mp("Random variable", Shape::Matrix),
        params: &[DOF, mp("Scale parameter", Shape::Matrix)],
        rng_params: Some(&[DOF, mp("Scale parameter", Shape::Matrix)]),
    },
    MvSig {
        name: "wishart_cholesky",
        family: MvFamily::WishartCholesky,
        discrete: false,
        variate: mp("Cholesky random variable", Shape::Matrix),
        params: &[DOF, mp("Cholesky scale matrix", Shape::Matrix)],
        rng_params: Some(&[DOF, mp("Cholesky scale matrix", Shape::Matrix)]),
    },
    MvSig {
        name: "inv_wishart",
        family: MvFamily::InvWishart,
        discrete: false,
        variate: mp("Random variable", Shape::Matrix),
        params: &[DOF, mp("Scale parameter", Shape::Matrix)],
        rng_params: Some(&[DOF, mp("Scale parameter", Shape::Matrix)]),
    },
    MvSig {
        name: "poisson_log_glm",
        family: MvFamily::PoissonLogGlm,
        discrete: true,
        variate: mp("Vector of dependent variables", Shape::Ints),
        params: &[GLM_X, GLM_ALPHA, GLM_BETA],
        rng_params: None,
    },
    MvSig {
        name: "bernoulli_logit_glm",
        family: MvFamily::BernoulliLogitGlm,
        discrete: true,
        variate: mp("Vector of dependent variables", Shape::Ints),
        params: &[GLM_X, GLM_ALPHA, GLM_BETA],
        rng_params: None,
    },
    MvSig {
        name: "categorical_logit_glm",
        family: MvFamily::CategoricalLogitGlm,
        discrete: true,
        variate: mp("Outcome", Shape::Ints),
        params: &[
            GLM_X,
            mp("Intercept", Shape::Vector),
            mp("Matrix of weights", Shape::Matrix),
        ],
        rng_params: None,
    },
];

impl MvFamily {
    /// This family's row of [`MV_FAMILIES`].
    pub fn sig(self) -> &'static MvSig {
        MV_FAMILIES
            .iter()
            .find(|s| s.family == self)
            .expect("every MvFamily has a row in MV_FAMILIES")
    }
}

impl MvSig {
    /// `foo_lpdf` or `foo_lpmf`.
    pub fn density_name(&self) -> String {
        format!(
            "{}_{}",
            self.name,
            if self.discrete { "lpmf" } else { "lpdf" }
        )
    }

    /// The name of argument `k` in error messages (0 is the variate).
    pub fn arg_name(&self, k: usize) -> &'static str {
        if k == 0 {
            self.variate.name
        } else {
            self.params[k - 1].name
        }
    }
}

/// The multivariate family called `name` (as written after `~`).
pub fn lookup(name: &str) -> Option<&'static MvSig> {
    MV_FAMILIES.iter().find(|s| s.name == name)
}

/// Resolves `multi_normal_lpdf`, `categorical_lupmf`, `dirichlet_rng`, … to a family and
/// kind. `None` for unknown names, the wrong suffix (`_lpmf` on a continuous family or the
/// reverse) and for `_lcdf`/`_lccdf` (no multivariate family has a CDF).
pub fn lookup_function(name: &str) -> Option<(&'static MvSig, FunctionKind)> {
    let (base, suffix) = name.rsplit_once('_')?;
    let sig = lookup(base)?;
    let kind = match suffix {
        "lpdf" if !sig.discrete => FunctionKind::LogDensity,
        "lpmf" if sig.discrete => FunctionKind::LogDensity,
        "lupdf" if !sig.discrete => FunctionKind::UnnormalisedLogDensity,
        "lupmf" if sig.discrete => FunctionKind::UnnormalisedLogDensity,
        "rng" if sig.rng_params.is_some() => FunctionKind::Rng,
        _ => return None,
    };
    Some((sig, kind))
}

/// One evaluated argument, flattened: `data` holds `count()` elements of `rows × cols` reals
/// one after another, each column-major. A scalar is 1 × 1 with `array: None`; a vector of
/// length n is n × 1 (a row vector 1 × n); an `array[m] vector[n]` has `array: Some(m)`.
#[derive(Clone, Copy, Debug)]
pub struct MvArg<'a> {
    /// Every real of the argument, array elements one after another, each column-major.
    pub data: &'a [f64],
    /// The length of the (one-dimensional) array, `None` when the argument is not an array.
    pub array: Option<usize>,
    /// Rows of one element.
    pub rows: usize,
    /// Columns of one element.
    pub cols: usize,
}

impl<'a> MvArg<'a> {
    /// A scalar argument (`x` must have length 1).
    pub fn scalar(x: &'a [f64]) -> Self {
        MvArg {
            data: x,
            array: None,
            rows: 1,
            cols: 1,
        }
    }

    /// A vector argument.
    pub fn vector(x: &'a [f64]) -> Self {
        MvArg {
            data: x,
            array: None,
            rows: x.len(),
            cols: 1,
        }
    }

    /// An array of `m` vectors of equal length (`x.len()` must be a multiple of `m`).
    pub fn vectors(x: &'a [f64], m: usize) -> Self {
        MvArg {
            data: x,
            array: Some(m),
            rows: x.len().checked_div(m).unwrap_or(0),
            cols: 1,
        }
    }

    /// A K × K (or r × c) column-major matrix.
    pub fn matrix(x: &'a [f64], rows: usize, cols: usize) -> Self {
        MvArg {
            data: x,
            array: None,
            rows,
            cols,
        }
    }

    /// Number of array elements (1 when not an array).
    pub fn count(&self) -> usize {
        self.array.unwrap_or(1)
    }

    /// Number of reals in one element.
    pub fn elem_len(&self) -> usize {
        self.rows * self.cols
    }

    /// Element `i` of the array (the whole argument when not an array).
    pub fn elem(&self, i: usize) -> &'a [f64] {
        let n = self.elem_len();
        &self.data[i * n..(i + 1) * n]
    }

    /// Element `i` under broadcasting: a non-array argument is the same for every `i`.
    pub fn elem_b(&self, i: usize) -> &'a [f64] {
        if self.array.is_some() {
            self.elem(i)
        } else {
            self.elem(0)
        }
    }
}

/// A draw from a multivariate `_rng`.
#[derive(Clone, Debug, PartialEq)]
pub enum MvDraw {
    /// `categorical_rng`, `categorical_logit_rng`, `ordered_logistic_rng` (1-based category).
    Int(i64),
    /// One vector (`multi_normal_rng`, `dirichlet_rng`).
    Vector(Vec<f64>),
    /// An array of vectors (`multi_normal_rng` with an array of locations).
    Vectors(Vec<Vec<f64>>),
    /// A column-major square matrix (`lkj_corr_cholesky_rng`).
    Matrix {
        /// Rows (= columns).
        k: usize,
        /// K² values, column-major.
        data: Vec<f64>,
    },
}

/// The log density (or mass) of `family` at `args[0]` given `args[1..]`, summed over the array
/// elements, with its partials: `partials[k]` has one entry per real of `args[k].data` when
/// `is_var[k]`, and is empty otherwise.
///
/// With `propto = true` (the `~` statement) terms that depend on no `is_var` argument are
/// dropped, as in Stan. Errors ([`DistError`], Stan's wording): arguments of the wrong shape or
/// sizes that do not match, values outside their support (a covariance matrix that is not
/// symmetric positive definite, a simplex that does not sum to 1, cut-points not in increasing
/// order, an outcome outside 1..K), an integer argument marked `is_var`.
pub fn log_density(
    family: MvFamily,
    args: &[MvArg],
    is_var: &[bool],
    propto: bool,
) -> Result<Term, DistError> {
    let sig = family.sig();
    if args.len() != sig.params.len() + 1 || is_var.len() != args.len() {
        return Err(err(
            sig,
            format!(
                "expects {} arguments (the variate and {} parameters), got {}",
                sig.params.len() + 1,
                sig.params.len(),
                args.len()
            ),
        ));
    }
    if sig.discrete && is_var[0] {
        return Err(err(
            sig,
            format!(
                "{} is an integer and cannot depend on parameters",
                sig.arg_name(0)
            ),
        ));
    }
    let mut term = Term {
        value: 0.0,
        partials: args
            .iter()
            .zip(is_var)
            .map(|(a, &v)| {
                if v {
                    vec![0.0; a.data.len()]
                } else {
                    Vec::new()
                }
            })
            .collect(),
    };
    match family {
        MvFamily::MultiNormal => normal::multi_normal(sig, args, is_var, propto, &mut term)?,
        MvFamily::MultiNormalCholesky => {
            normal::multi_normal_cholesky(sig, args, is_var, propto, &mut term)?
        }
        MvFamily::LkjCorrCholesky => lkj::lpdf(sig, args, is_var, propto, &mut term)?,
        MvFamily::Dirichlet => dirichlet::lpdf(sig, args, is_var, propto, &mut term)?,
        MvFamily::Categorical => categorical::lpmf(sig, args, is_var, propto, &mut term)?,
        MvFamily::CategoricalLogit => {
            categorical::logit_lpmf(sig, args, is_var, propto, &mut term)?
        }
        MvFamily::OrderedLogistic => ordered_logistic::lpmf(sig, args, is_var, propto, &mut term)?,
        MvFamily::OrderedProbit => ordered_probit::lpmf(sig, args, is_var, propto, &mut term)?,
        MvFamily::LkjCorr => lkj::corr_lpdf(sig, args, is_var, propto, &mut term)?,
        MvFamily::MultiNormalPrec => student_t::prec_lpdf(sig, args, is_var, propto, &mut term)?,
        MvFamily::MultiStudentT => student_t::lpdf(sig, args, is_var, propto, &mut term)?,
        MvFamily::MultiGpCholesky => {
            student_t::gp_cholesky_lpdf(sig, args, is_var, propto, &mut term)?
        }
        MvFamily::Wishart | MvFamily::InvWishart => {
            wishart::lpdf(sig, args, is_var, propto, &mut term)?
        }
        MvFamily::WishartCholesky => wishart::cholesky_lpdf(sig, args, is_var, propto, &mut term)?,
        MvFamily::PoissonLogGlm => glm::poisson_log_lpmf(sig, args, is_var, propto, &mut term)?,
        MvFamily::BernoulliLogitGlm => {
            glm::bernoulli_logit_lpmf(sig, args, is_var, propto, &mut term)?
        }
        MvFamily::CategoricalLogitGlm => {
            glm::categorical_logit_lpmf(sig, args, is_var, propto, &mut term)?
        }
    }
    Ok(term)
}

/// The per-observation terms of a GLM family ([`glm::GlmRows`]: ℓₙ and ∂ℓₙ/∂ηₙ per row of x),
/// for the per-row gradient pass; `Ok(None)` for a family that is not a GLM. `args` as
/// [`log_density`]. Errors: as [`log_density`].
pub fn glm_rows(
    family: MvFamily,
    args: &[MvArg],
    propto: bool,
) -> Result<Option<glm::GlmRows>, DistError> {
    let sig = family.sig();
    if args.len() != sig.params.len() + 1 {
        return Ok(None);
    }
    Ok(Some(match family {
        MvFamily::PoissonLogGlm => glm::poisson_log_rows(sig, args, propto)?,
        MvFamily::BernoulliLogitGlm => glm::bernoulli_logit_rows(sig, args)?,
        MvFamily::CategoricalLogitGlm => glm::categorical_logit_rows(sig, args)?,
        _ => return Ok(None),
    }))
}

/// One draw from `<family>_rng(params…)`, parameters in [`MvSig::rng_params`] order.
///
/// Errors: parameters failing the density's checks, reported under `<name>_rng`.
pub fn rng<R: rand::Rng + ?Sized>(
    family: MvFamily,
    params: &[MvArg],
    rng: &mut R,
) -> Result<MvDraw, DistError> {
    let sig = family.sig();
    let function = format!("{}_rng", sig.name);
    let Some(rng_params) = sig.rng_params else {
        return Err(DistError {
            function,
            message: "is not available (Stan has no random number generator for this family)"
                .to_string(),
        });
    };
    if params.len() != rng_params.len() {
        return Err(DistError {
            function,
            message: format!(
                "expects {} arguments, got {}",
                rng_params.len(),
                params.len()
            ),
        });
    }
    let rename = |e: DistError| DistError {
        function: format!("{}_rng", sig.name),
        message: e.message,
    };
    match family {
        MvFamily::MultiNormal | MvFamily::MultiNormalCholesky => {
            normal::rng(sig, params, rng).map_err(rename)
        }
        MvFamily::LkjCorrCholesky => lkj::rng(sig, params, rng).map_err(rename),
        MvFamily::Dirichlet => dirichlet::rng(sig, params, rng).map_err(rename),
        MvFamily::Categorical | MvFamily::CategoricalLogit => {
            categorical::rng(sig, params, rng).map_err(rename)
        }
        MvFamily::OrderedLogistic => ordered_logistic::rng(sig, params, rng).map_err(rename),
        MvFamily::OrderedProbit => ordered_probit::rng(sig, params, rng).map_err(rename),
        MvFamily::LkjCorr => lkj::corr_rng(sig, params, rng).map_err(rename),
        MvFamily::MultiStudentT => student_t::rng(sig, params, rng).map_err(rename),
        MvFamily::Wishart | MvFamily::InvWishart | MvFamily::WishartCholesky => {
            wishart::rng(sig, params, rng).map_err(rename)
        }
        MvFamily::MultiNormalPrec
        | MvFamily::MultiGpCholesky
        | MvFamily::PoissonLogGlm
        | MvFamily::BernoulliLogitGlm
        | MvFamily::CategoricalLogitGlm => Err(DistError {
            function: format!("{}_rng", sig.name),
            message: "is not available".to_string(),
        }),
    }
}

/// A [`DistError`] under `sig`'s density name.
fn err(sig: &MvSig, message: String) -> DistError {
    DistError {
        function: sig.density_name(),
        message,
    }
}

/// Absolute tolerance of the simplex and symmetry checks (Stan's `CONSTRAINT_TOLERANCE`).
pub const CONSTRAINT_TOLERANCE: f64 = 1e-8;

/// Stan's `check_finite` over every real of `a` (argument `k` of `sig`).
fn check_finite(sig: &MvSig, a: &MvArg, k: usize) -> Result<(), DistError> {
    check_all(sig, a, k, "finite", f64::is_finite)
}

/// Stan's `check_not_nan` over every real of `a`.
fn check_not_nan(sig: &MvSig, a: &MvArg, k: usize) -> Result<(), DistError> {
    check_all(sig, a, k, "not nan", |x| !x.is_nan())
}

fn check_all(
    sig: &MvSig,
    a: &MvArg,
    k: usize,
    requirement: &str,
    ok: impl Fn(f64) -> bool,
) -> Result<(), DistError> {
    for (i, &x) in a.data.iter().enumerate() {
        if !ok(x) {
            let which = if a.data.len() == 1 && a.array.is_none() {
                sig.arg_name(k).to_string()
            } else {
                format!("{}[{}]", sig.arg_name(k), i + 1)
            };
            return Err(err(
                sig,
                format!(
                    "{which} is {}, but must be {requirement}",
                    crate::words::shown_zero(x)
                ),
            ));
        }
    }
    Ok(())
}

/// A vector-like argument (n × 1 or 1 × n elements): its length.
fn vector_len(sig: &MvSig, a: &MvArg, k: usize) -> Result<usize, DistError> {
    if a.rows == 1 || a.cols == 1 {
        Ok(a.elem_len())
    } else {
        Err(err(
            sig,
            format!(
                "{} must be a vector, found a {} × {} matrix",
                sig.arg_name(k),
                a.rows,
                a.cols
            ),
        ))
    }
}

/// The common array length of two broadcast arguments (1 when neither is an array).
fn broadcast_count(sig: &MvSig, args: &[MvArg], ks: &[usize]) -> Result<usize, DistError> {
    let mut n: Option<(usize, usize)> = None;
    for &k in ks {
        if let Some(m) = args[k].array {
            match n {
                None => n = Some((m, k)),
                Some((p, j)) if p != m => {
                    return Err(err(
                        sig,
                        format!(
                            "size of {} ({p}) and size of {} ({m}) must match in size",
                            sig.arg_name(j),
                            sig.arg_name(k)
                        ),
                    ));
                }
                _ => {}
            }
        }
    }
    Ok(n.map_or(1, |(m, _)| m))
}

/// Stan's `check_simplex` on one element: non-negative entries summing to 1 within
/// [`CONSTRAINT_TOLERANCE`].
fn check_simplex(sig: &MvSig, theta: &[f64], k: usize) -> Result<(), DistError> {
    let name = sig.arg_name(k);
    if theta.is_empty() {
        return Err(err(
            sig,
            format!("{name} has size 0, but must have a non-zero size"),
        ));
    }
    let sum: f64 = theta.iter().sum();
    if !((sum - 1.0).abs() <= CONSTRAINT_TOLERANCE) {
        return Err(err(
            sig,
            format!("{name} is not a valid simplex. sum({name}) = {sum}, but should be 1"),
        ));
    }
    for (i, &t) in theta.iter().enumerate() {
        if !(t >= 0.0) {
            return Err(err(
                sig,
                format!(
                    "{name} is not a valid simplex. {name}[{}] = {t}, but should be greater than or equal to 0",
                    i + 1
                ),
            ));
        }
    }
    Ok(())
}
