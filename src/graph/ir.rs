//! The lowered program: variables resolved to slots, functions to [`Builtin`]s, distributions
//! to [`Family`]s. Built once by [`super::compile`], executed by [`super::eval`] at every call.

use crate::distributions::multivariate::MvFamily;
use crate::distributions::{CdfKind, Family};
use crate::syntax::Span;
use crate::syntax::ast::{AssignOp, BinOp};

use super::kernel::KernelCache;
use super::scalar::{B, U};

/// Built-in functions, resolved from their names at compile time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Builtin {
    /// Elementwise real function of one argument.
    Unary(U),
    /// Elementwise real function of two arguments (scalar broadcast).
    Binary(B),
    /// `abs`/`fabs`: integer for integers, else [`U::Abs`].
    Abs,
    /// `log_sum_exp(v)` (reduction) or `log_sum_exp(a, b)`.
    LogSumExp,
    Sum,
    Prod,
    Mean,
    Sd,
    Variance,
    /// `min(v)` / `min(a, b)`.
    Min,
    /// `max(v)` / `max(a, b)`.
    Max,
    DotProduct,
    DotSelf,
    SquaredDistance,
    Rows,
    Cols,
    Size,
    NumElements,
    RepVector,
    RepRowVector,
    RepArray,
    RepMatrix,
    AppendCol,
    AppendRow,
    ToVector,
    ToRowVector,
    ToMatrix,
    ToArray1d,
    Col,
    Row,
    DiagMatrix,
    Diagonal,
    CumulativeSum,
    Segment,
    Head,
    Tail,
    Softmax,
    LogSoftmax,
    AddRowVector,
    DiagPreMultiply,
    DiagPostMultiply,
    Transpose,
    Fma,
    IntStep,
    /// `to_int(x)`: truncation toward zero, elementwise on arrays (Stan's `to_int`).
    ToInt,
    IsInf,
    IsNan,
    Reverse,
    SortAsc,
    SortDesc,
    RowsDotProduct,
    ColumnsDotProduct,
    Crossprod,
    Tcrossprod,
    /// `multiply_lower_tri_self_transpose(x)`: L L′ with L the lower triangle of x.
    MultiplyLowerTriSelfTranspose,
    QuadForm,
    LinspacedVector,
    LogMix,
    CholeskyDecompose,
    MdivideLeftTriLow,
    MdivideRightTriLow,
    MdivideLeft,
    MdivideRight,
    Inverse,
    InverseSpd,
    Determinant,
    LogDeterminant,
    QuadFormDiag,
    QuadFormSym,
    /// A Gaussian-process covariance function.
    Gp(GpKernel),
    Trace,
    AddDiag,
    /// A constant such as `pi()`.
    Const(f64),
    /// `target()`.
    Target,
}

/// The Gaussian-process covariance functions (`super::eval` `matrix::gp_cov`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum GpKernel {
    /// `gp_exp_quad_cov` (and its older name `cov_exp_quad`).
    ExpQuad,
    /// `gp_matern32_cov`.
    Matern32,
    /// `gp_matern52_cov`.
    Matern52,
    /// `gp_periodic_cov`.
    Periodic,
}

impl GpKernel {
    /// The function's name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            GpKernel::ExpQuad => "gp_exp_quad_cov",
            GpKernel::Matern32 => "gp_matern32_cov",
            GpKernel::Matern52 => "gp_matern52_cov",
            GpKernel::Periodic => "gp_periodic_cov",
        }
    }
}

/// Looks up a built-in function by name.
pub fn builtin(name: &str) -> Option<Builtin> {
    use Builtin::*;
    Some(match name {
        "exp" => Unary(U::Exp),
        "log" => Unary(U::Log),
        "log1p" => Unary(U::Log1p),
        "expm1" => Unary(U::Expm1),
        "sqrt" => Unary(U::Sqrt),
        "square" => Unary(U::Square),
        "inv" => Unary(U::Inv),
        "inv_sqrt" => Unary(U::InvSqrt),
        "inv_square" => Unary(U::InvSquare),
        "inv_logit" => Unary(U::InvLogit),
        "logit" => Unary(U::Logit),
        "log1p_exp" => Unary(U::Log1pExp),
        "log_inv_logit" => Unary(U::LogInvLogit),
        "log1m_inv_logit" => Unary(U::Log1mInvLogit),
        "log1m" => Unary(U::Log1m),
        "log1m_exp" => Unary(U::Log1mExp),
        "lgamma" => Unary(U::Lgamma),
        "digamma" => Unary(U::Digamma),
        "tanh" => Unary(U::Tanh),
        "relu" => Unary(U::Relu),
        "softplus" => Unary(U::Log1pExp),
        "sinh" => Unary(U::Sinh),
        "cosh" => Unary(U::Cosh),
        "sin" => Unary(U::Sin),
        "cos" => Unary(U::Cos),
        "tan" => Unary(U::Tan),
        "atan" => Unary(U::Atan),
        "asin" => Unary(U::Asin),
        "acos" => Unary(U::Acos),
        "cbrt" => Unary(U::Cbrt),
        "log2" => Unary(U::Log2),
        "log10" => Unary(U::Log10),
        "exp2" => Unary(U::Exp2),
        "erf" => Unary(U::Erf),
        "erfc" => Unary(U::Erfc),
        "Phi" => Unary(U::Phi),
        "inv_cloglog" => Unary(U::InvCloglog),
        "floor" => Unary(U::Floor),
        "ceil" => Unary(U::Ceil),
        "round" => Unary(U::Round),
        "trunc" => Unary(U::Trunc),
        "step" => Unary(U::Step),
        "pow" => Binary(B::Pow),
        "fmin" => Binary(B::Fmin),
        "fmax" => Binary(B::Fmax),
        "log_diff_exp" => Binary(B::LogDiffExp),
        "hypot" => Binary(B::Hypot),
        "fdim" => Binary(B::Fdim),
        "atan2" => Binary(B::Atan2),
        "lbeta" => Binary(B::Lbeta),
        "lchoose" => Binary(B::Lchoose),
        "abs" | "fabs" => Abs,
        "log_sum_exp" => LogSumExp,
        "sum" => Sum,
        "prod" => Prod,
        "mean" => Mean,
        "sd" => Sd,
        "variance" => Variance,
        "min" => Min,
        "max" => Max,
        "dot_product" => DotProduct,
        "dot_self" => DotSelf,
        "squared_distance" => SquaredDistance,
        "rows" => Rows,
        "cols" => Cols,
        "size" => Size,
        "num_elements" => NumElements,
        "rep_vector" => RepVector,
        "rep_row_vector" => RepRowVector,
        "rep_array" => RepArray,
        "rep_matrix" => RepMatrix,
        "append_col" => AppendCol,
        "append_row" => AppendRow,
        "to_vector" => ToVector,
        "to_row_vector" => ToRowVector,
        "to_matrix" => ToMatrix,
        "to_array_1d" => ToArray1d,
        "col" => Col,
        "row" => Row,
        "diag_matrix" => DiagMatrix,
        "diagonal" => Diagonal,
        "cumulative_sum" => CumulativeSum,
        "segment" => Segment,
        "head" => Head,
        "tail" => Tail,
        "softmax" => Softmax,
        "log_softmax" => LogSoftmax,
        "add_row_vector" => AddRowVector,
        "diag_pre_multiply" => DiagPreMultiply,
        "diag_post_multiply" => DiagPostMultiply,
        "transpose" => Transpose,
        "pi" => Const(std::f64::consts::PI),
        "e" => Const(std::f64::consts::E),
        "sqrt2" => Const(std::f64::consts::SQRT_2),
        "not_a_number" => Const(f64::NAN),
        "positive_infinity" => Const(f64::INFINITY),
        "negative_infinity" => Const(f64::NEG_INFINITY),
        "machine_precision" => Const(f64::EPSILON),
        "target" => Target,
        "fma" => Fma,
        "int_step" => IntStep,
        "to_int" => ToInt,
        "is_inf" => IsInf,
        "is_nan" => IsNan,
        "reverse" => Reverse,
        "sort_asc" => SortAsc,
        "sort_desc" => SortDesc,
        "rows_dot_product" => RowsDotProduct,
        "columns_dot_product" => ColumnsDotProduct,
        "crossprod" => Crossprod,
        "tcrossprod" => Tcrossprod,
        "multiply_lower_tri_self_transpose" => MultiplyLowerTriSelfTranspose,
        "quad_form" => QuadForm,
        "linspaced_vector" => LinspacedVector,
        "log_mix" => LogMix,
        "cholesky_decompose" => CholeskyDecompose,
        "mdivide_left_tri_low" => MdivideLeftTriLow,
        "mdivide_right_tri_low" => MdivideRightTriLow,
        "mdivide_left" => MdivideLeft,
        "mdivide_right" => MdivideRight,
        "inverse" => Inverse,
        "inverse_spd" => InverseSpd,
        "determinant" => Determinant,
        "log_determinant" => LogDeterminant,
        "quad_form_diag" => QuadFormDiag,
        "quad_form_sym" => QuadFormSym,
        "gp_exp_quad_cov" | "cov_exp_quad" => Gp(GpKernel::ExpQuad),
        "gp_matern32_cov" => Gp(GpKernel::Matern32),
        "gp_matern52_cov" => Gp(GpKernel::Matern52),
        "gp_periodic_cov" => Gp(GpKernel::Periodic),
        "trace" => Trace,
        "add_diag" => AddDiag,
        _ => return None,
    })
}

/// A lowered expression.
#[derive(Clone, Debug)]
pub enum Ex {
    Int(i64),
    Real(f64),
    /// Data or transformed data, by index into the model's constants.
    Global(u32),
    /// A parameter, transformed parameter, generated quantity, local or loop variable.
    Local(u32),
    Bin(BinOp, Box<Ex>, Box<Ex>),
    Neg(Box<Ex>),
    Not(Box<Ex>),
    Call(Builtin, Vec<Ex>),
    /// `foo_lpdf(y | …)` (`propto = false`) or `foo_lupdf(y | …)` (`propto = true`).
    Lpdf {
        family: Family,
        propto: bool,
        args: Vec<Ex>,
    },
    /// `foo_cdf(y | …)`, `foo_lcdf(y | …)` or `foo_lccdf(y | …)`.
    Cdf {
        family: Family,
        kind: CdfKind,
        args: Vec<Ex>,
    },
    /// A call to a user-defined function (index into the model's function table). A user
    /// density reached through `~` or `foo_lupdf(…)` is called this way: `_lupdf` calls inside
    /// it drop constants.
    UserCall(u32, Vec<Ex>),
    /// A user-defined `foo_lpdf(…)`/`foo_lpmf(…)` called by its full name: every `_lupdf`/`~`
    /// inside it (and in what it calls) keeps its constants, as Stan's `propto` template
    /// argument is false for such calls (Stan Reference Manual, "Log probability functions").
    NormalisedUserCall(u32, Vec<Ex>),
    /// `foo_rng(…)`.
    Rng {
        family: Family,
        args: Vec<Ex>,
    },
    /// A multivariate density: `foo_lpdf(y | …)` (`propto = false`), `foo_lupdf(y | …)` or
    /// `y ~ foo(…)` (`propto = true`), for the families of [`MvFamily`].
    MvLpdf {
        family: MvFamily,
        propto: bool,
        args: Vec<Ex>,
    },
    /// A multivariate `foo_rng(…)`.
    MvRng {
        family: MvFamily,
        args: Vec<Ex>,
    },
    /// `ode_rk45(f, y0, t0, ts, ...)`, `ode_bdf(…)` and their `_tol` forms
    /// (`super::ode`).
    Ode(Box<OdeEx>),
    Index(Box<Ex>, Vec<IxEx>),
    Ternary(Box<Ex>, Box<Ex>, Box<Ex>),
    RowVec(Vec<Ex>),
    Array(Vec<Ex>),
    Transpose(Box<Ex>),
}

/// The integrator of an ODE solver call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OdeMethod {
    /// `ode_rk45`: adaptive Dormand–Prince 5(4).
    Rk45,
    /// `ode_bdf`: variable-order, variable-step BDF (orders 1–5).
    Bdf,
}

/// A lowered ODE solver call: `method(f, y0, t0, ts[, rtol, atol, max_num_steps], args...)`.
#[derive(Clone, Debug)]
pub struct OdeEx {
    /// The solver's name as called (for messages).
    pub name: &'static str,
    /// Which integrator.
    pub method: OdeMethod,
    /// The system function (index into the model's function table).
    pub func: u32,
    /// The initial state (a vector; its size is the number of states).
    pub y0: Ex,
    /// The initial time (data).
    pub t0: Ex,
    /// The output times (data: an array of reals after `t0`, non-decreasing).
    pub ts: Ex,
    /// `rtol, atol, max_num_steps` of the `_tol` forms.
    pub tol: Option<Box<[Ex; 3]>>,
    /// The trailing arguments, passed to `func` after `t` and `y`.
    pub args: Vec<Ex>,
}

/// A lowered index.
#[derive(Clone, Debug)]
pub enum IxEx {
    Single(Ex),
    Range(Option<Ex>, Option<Ex>),
    All,
}

/// Element shape of a declaration, with size expressions.
#[derive(Clone, Debug)]
pub enum BaseEx {
    Scalar,
    Vector(Ex),
    RowVector(Ex),
    Matrix(Ex, Ex),
}

/// A sized type: `int`/`real` flag, element shape and array sizes.
#[derive(Clone, Debug)]
pub struct DeclTy {
    pub int: bool,
    pub base: BaseEx,
    pub arr: Vec<Ex>,
}

/// A parameter's constraint transform (Stan reference manual, "Constraint transforms").
#[derive(Clone, Debug)]
pub enum Transform {
    Identity,
    Lower(Ex),
    Upper(Ex),
    LowerUpper(Ex, Ex),
    Affine(Option<Ex>, Option<Ex>),
    Simplex,
    Ordered,
    PositiveOrdered,
    CholeskyCorr,
    CholeskyCov,
    CovMatrix,
    CorrMatrix,
}

/// A lowered statement with the span of the source statement.
#[derive(Clone, Debug)]
pub struct St {
    pub kind: StKind,
    pub span: Span,
}

/// Lowered statement forms.
#[derive(Clone, Debug)]
pub enum StKind {
    Decl {
        slot: u32,
        ty: DeclTy,
        init: Option<Ex>,
    },
    Assign {
        slot: u32,
        idx: Vec<IxEx>,
        op: AssignOp,
        rhs: Ex,
    },
    Tilde {
        lhs: Ex,
        family: Family,
        args: Vec<Ex>,
        /// `T[lower, upper]`, either bound optional.
        trunc: Option<(Option<Ex>, Option<Ex>)>,
        /// What model construction learnt about the statement (`super::fuse`).
        plan: TildePlan,
    },
    TargetPlus(Ex),
    For {
        slot: u32,
        /// The loop variable's name, for messages ("where i = 7").
        var: String,
        lo: Ex,
        hi: Ex,
        body: Box<St>,
    },
    ForEach {
        slot: u32,
        coll: Ex,
        body: Box<St>,
    },
    While {
        cond: Ex,
        body: Box<St>,
    },
    If {
        cond: Ex,
        then: Box<St>,
        otherwise: Option<Box<St>>,
    },
    Block(Vec<St>),
    /// A statement (`plain`) that runs as the fused pass of a generalised linear model when its
    /// values at run time allow it (`super::fuse`), else as `plain`.
    Fused {
        fusion: Box<Fusion>,
        plain: Box<St>,
    },
    /// A `for` loop (`plain`) that may run as a compiled scalar kernel (`super::kernel`); the
    /// interpreter runs `plain` when it cannot.
    Fast {
        cache: KernelCache,
        plain: Box<St>,
    },
    Break,
    Continue,
    Reject(Vec<PArg>),
    /// `print(…);`: writes its arguments to standard error each time it runs (as Stan does, so
    /// once per log-density evaluation in the model block).
    Print(Vec<PArg>),
    /// `return e;` / `return;` inside a user-defined function.
    Return(Option<Ex>),
    /// A (void) function call used as a statement.
    ExprStmt(Ex),
}

/// What [`super::fuse::plan_model`] found out about a `~` statement once the data were bound.
#[derive(Clone, Debug, Default)]
pub struct TildePlan {
    /// The variate is data (or transformed data) and every element is inside the family's
    /// support ([`crate::distributions::variate_support`]): the check is not repeated at each
    /// evaluation (issue 16, "data checks once").
    pub variate_checked: bool,
}

/// A log-density statement of generalised-linear-model shape, `y ~ family(α + X · β, …)` or
/// `target += family_lpdf(y | α + X · β, …)` with `X` a data matrix and `y` data, which runs as
/// one fused pass over the rows ([`StKind::Fused`]; `super::eval::glm`).
#[derive(Clone, Debug)]
pub struct Fusion {
    pub shape: GlmShape,
    /// The variate `y`.
    pub lhs: Ex,
    pub family: Family,
    /// The family's parameters, the linear predictor first (as in the statement).
    pub args: Vec<Ex>,
    /// `true` drops constant terms (`~`, `_lupdf`); `false` is the normalised `_lpdf`.
    pub propto: bool,
    /// As [`TildePlan::variate_checked`].
    pub variate_checked: bool,
}

/// The parts of `y ~ family(α + X · β, …)` ([`TildePlan::glm`]).
#[derive(Clone, Debug)]
pub struct GlmShape {
    /// The global holding the `N × K` data matrix `X` (column-major).
    pub x: u32,
    /// The intercept `α` (a scalar), when the linear predictor has one.
    pub alpha: Option<Ex>,
    /// The coefficient vector `β` (K elements).
    pub beta: Ex,
}

/// A lowered user-defined function: its own slot frame, parameter slots and body.
#[derive(Clone, Debug)]
pub struct FuncIr {
    pub name: String,
    /// Number of slots of one call's frame.
    pub n_slots: u32,
    /// Slot of each parameter, and whether it is declared with an integer base type.
    pub params: Vec<(u32, bool)>,
    /// `true` when the declared return type is `int` (else results are converted to real).
    pub returns_int: bool,
    /// `true` for `void` functions.
    pub void: bool,
    /// `None` for a function only declared, never defined.
    pub body: Option<St>,
}

/// An argument of `reject`.
#[derive(Clone, Debug)]
pub enum PArg {
    Str(String),
    Ex(Ex),
}
