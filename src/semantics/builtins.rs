//! The built-in functions and their signatures (argument types → return type).
//!
//! This list is the contract with the graph compiler (`graph::ir::builtin` implements the same
//! names).
//! Elementwise functions accept `real`, `vector`, `row_vector`, `matrix` and arrays of these, and
//! return the same shape; `int` arguments are promoted to `real` (Stan's vectorised unary
//! functions, Stan Functions Reference §3–§6).

use super::types::{Base, Type};

/// One built-in function: its name, how many arguments it takes, and its signatures as shown in
/// error messages.
#[derive(Clone, Copy, Debug)]
pub struct Builtin {
    /// The name as called.
    pub name: &'static str,
    /// Fewest arguments accepted.
    pub min_args: usize,
    /// Most arguments accepted (`None`: variadic).
    pub max_args: Option<usize>,
    /// The signatures, as shown in `help:` notes.
    pub signatures: &'static str,
}

const ELEMENTWISE_DOC: &str =
    "(real) -> real, and elementwise on vector, row_vector, matrix and arrays";

const BINARY_DOC: &str = "(real, real) -> real; a container with a real, or two containers of the same type, elementwise";

const fn b(
    name: &'static str,
    min_args: usize,
    max_args: Option<usize>,
    signatures: &'static str,
) -> Builtin {
    Builtin {
        name,
        min_args,
        max_args,
        signatures,
    }
}

/// Every built-in function.
pub static BUILTINS: &[Builtin] = &[
    b("exp", 1, Some(1), ELEMENTWISE_DOC),
    b("log", 1, Some(1), ELEMENTWISE_DOC),
    b("log1p", 1, Some(1), ELEMENTWISE_DOC),
    b("expm1", 1, Some(1), ELEMENTWISE_DOC),
    b("sqrt", 1, Some(1), ELEMENTWISE_DOC),
    b("square", 1, Some(1), ELEMENTWISE_DOC),
    b("inv", 1, Some(1), ELEMENTWISE_DOC),
    b("inv_logit", 1, Some(1), ELEMENTWISE_DOC),
    b("logit", 1, Some(1), ELEMENTWISE_DOC),
    b("log1p_exp", 1, Some(1), ELEMENTWISE_DOC),
    b("log_inv_logit", 1, Some(1), ELEMENTWISE_DOC),
    b("log1m", 1, Some(1), ELEMENTWISE_DOC),
    b("log1m_exp", 1, Some(1), ELEMENTWISE_DOC),
    b("lgamma", 1, Some(1), ELEMENTWISE_DOC),
    b("tanh", 1, Some(1), ELEMENTWISE_DOC),
    b("relu", 1, Some(1), ELEMENTWISE_DOC),
    b("softplus", 1, Some(1), ELEMENTWISE_DOC),
    b("Phi", 1, Some(1), ELEMENTWISE_DOC),
    b("fabs", 1, Some(1), ELEMENTWISE_DOC),
    b("floor", 1, Some(1), ELEMENTWISE_DOC),
    b("ceil", 1, Some(1), ELEMENTWISE_DOC),
    b("round", 1, Some(1), ELEMENTWISE_DOC),
    b("trunc", 1, Some(1), ELEMENTWISE_DOC),
    b("inv_sqrt", 1, Some(1), ELEMENTWISE_DOC),
    b("inv_square", 1, Some(1), ELEMENTWISE_DOC),
    b("log1m_inv_logit", 1, Some(1), ELEMENTWISE_DOC),
    b("inv_cloglog", 1, Some(1), ELEMENTWISE_DOC),
    b("digamma", 1, Some(1), ELEMENTWISE_DOC),
    b("sinh", 1, Some(1), ELEMENTWISE_DOC),
    b("cosh", 1, Some(1), ELEMENTWISE_DOC),
    b("sin", 1, Some(1), ELEMENTWISE_DOC),
    b("cos", 1, Some(1), ELEMENTWISE_DOC),
    b("tan", 1, Some(1), ELEMENTWISE_DOC),
    b("asin", 1, Some(1), ELEMENTWISE_DOC),
    b("acos", 1, Some(1), ELEMENTWISE_DOC),
    b("atan", 1, Some(1), ELEMENTWISE_DOC),
    b("cbrt", 1, Some(1), ELEMENTWISE_DOC),
    b("log2", 1, Some(1), ELEMENTWISE_DOC),
    b("log10", 1, Some(1), ELEMENTWISE_DOC),
    b("exp2", 1, Some(1), ELEMENTWISE_DOC),
    b("erf", 1, Some(1), ELEMENTWISE_DOC),
    b("erfc", 1, Some(1), ELEMENTWISE_DOC),
    b("step", 1, Some(1), ELEMENTWISE_DOC),
    b(
        "abs",
        1,
        Some(1),
        "(int) -> int, (real) -> real, and elementwise on vector, row_vector, matrix and arrays",
    ),
    b(
        "pow",
        2,
        Some(2),
        "(real, real) -> real; a container with a real, or two containers of the same type, elementwise",
    ),
    b("fmin", 2, Some(2), BINARY_DOC),
    b("fmax", 2, Some(2), BINARY_DOC),
    b("fdim", 2, Some(2), BINARY_DOC),
    b("hypot", 2, Some(2), BINARY_DOC),
    b("atan2", 2, Some(2), BINARY_DOC),
    b("log_diff_exp", 2, Some(2), BINARY_DOC),
    b("lbeta", 2, Some(2), BINARY_DOC),
    b("lchoose", 2, Some(2), BINARY_DOC),
    b("fma", 3, Some(3), "(real, real, real) -> real: x * y + z"),
    b(
        "log_mix",
        3,
        Some(3),
        "(real theta, real lp1, real lp2) -> real: log(theta exp(lp1) + (1 - theta) exp(lp2))",
    ),
    b(
        "int_step",
        1,
        Some(1),
        "(int | real) -> int: 1 if positive, else 0",
    ),
    b(
        "to_int",
        1,
        Some(1),
        "(data real) -> int, truncating toward zero (an error when NaN or outside the 32-bit int \
         range), and elementwise on arrays of int and real; in `transformed parameters`, `model` \
         and functions the argument must not depend on parameters",
    ),
    b("is_inf", 1, Some(1), "(real) -> int"),
    b("is_nan", 1, Some(1), "(real) -> int"),
    b("pi", 0, Some(0), "() -> real"),
    b("e", 0, Some(0), "() -> real"),
    b("sqrt2", 0, Some(0), "() -> real"),
    b("not_a_number", 0, Some(0), "() -> real"),
    b("positive_infinity", 0, Some(0), "() -> real"),
    b("negative_infinity", 0, Some(0), "() -> real"),
    b("machine_precision", 0, Some(0), "() -> real"),
    b(
        "sum",
        1,
        Some(1),
        "(array[] int) -> int; (vector | row_vector | matrix | array[] real) -> real",
    ),
    b(
        "prod",
        1,
        Some(1),
        "(array[] int) -> int; (vector | row_vector | matrix | array[] real) -> real",
    ),
    b(
        "mean",
        1,
        Some(1),
        "(vector | row_vector | matrix | array[] real | array[] int) -> real",
    ),
    b(
        "sd",
        1,
        Some(1),
        "(vector | row_vector | matrix | array[] real | array[] int) -> real",
    ),
    b(
        "variance",
        1,
        Some(1),
        "(vector | row_vector | matrix | array[] real | array[] int) -> real",
    ),
    b(
        "log_sum_exp",
        1,
        Some(2),
        "(vector | row_vector | matrix | array[] real) -> real; (real, real) -> real",
    ),
    b(
        "min",
        1,
        Some(2),
        "(array[] int) -> int; (vector | row_vector | matrix | array[] real) -> real; (int, int) -> int; (real, real) -> real",
    ),
    b(
        "max",
        1,
        Some(2),
        "(array[] int) -> int; (vector | row_vector | matrix | array[] real) -> real; (int, int) -> int; (real, real) -> real",
    ),
    b(
        "dot_product",
        2,
        Some(2),
        "(vector | row_vector | array[] real, vector | row_vector | array[] real) -> real",
    ),
    b("dot_self", 1, Some(1), "(vector | row_vector) -> real"),
    b(
        "squared_distance",
        2,
        Some(2),
        "(vector | row_vector, vector | row_vector) -> real",
    ),
    b(
        "rows_dot_product",
        2,
        Some(2),
        "(vector, vector) | (row_vector, row_vector) | (matrix, matrix) -> vector",
    ),
    b(
        "columns_dot_product",
        2,
        Some(2),
        "(vector, vector) | (row_vector, row_vector) | (matrix, matrix) -> row_vector",
    ),
    b("crossprod", 1, Some(1), "(matrix) -> matrix: x' * x"),
    b("tcrossprod", 1, Some(1), "(matrix) -> matrix: x * x'"),
    b(
        "multiply_lower_tri_self_transpose",
        1,
        Some(1),
        "(matrix) -> matrix: L * L' with L the lower triangle of x (entries above the diagonal read as 0)",
    ),
    b(
        "quad_form",
        2,
        Some(2),
        "(matrix, matrix) -> matrix; (matrix, vector) -> real: b' * A * b",
    ),
    b(
        "diag_pre_multiply",
        2,
        Some(2),
        "(vector | row_vector, matrix) -> matrix",
    ),
    b(
        "diag_post_multiply",
        2,
        Some(2),
        "(matrix, vector | row_vector) -> matrix",
    ),
    b("diagonal", 1, Some(1), "(matrix) -> vector"),
    b(
        "transpose",
        1,
        Some(1),
        "(vector) -> row_vector; (row_vector) -> vector; (matrix) -> matrix",
    ),
    b("rows", 1, Some(1), "(vector | row_vector | matrix) -> int"),
    b("cols", 1, Some(1), "(vector | row_vector | matrix) -> int"),
    b(
        "size",
        1,
        Some(1),
        "(any array, vector, row_vector or matrix) -> int",
    ),
    b(
        "num_elements",
        1,
        Some(1),
        "(any array, vector, row_vector or matrix) -> int",
    ),
    b("rep_vector", 2, Some(2), "(real, int) -> vector"),
    b("rep_row_vector", 2, Some(2), "(real, int) -> row_vector"),
    b(
        "rep_array",
        2,
        Some(4),
        "(T, int) -> array[] T; (T, int, int) -> array[,] T; (T, int, int, int) -> array[,,] T",
    ),
    b(
        "rep_matrix",
        2,
        Some(3),
        "(real, int, int) -> matrix; (vector, int) -> matrix; (row_vector, int) -> matrix",
    ),
    b(
        "append_col",
        2,
        None,
        "(vector | matrix, vector | matrix, …) -> matrix; (real | row_vector, real | row_vector, …) -> row_vector",
    ),
    b(
        "append_row",
        2,
        None,
        "(row_vector | matrix, row_vector | matrix, …) -> matrix; (real | vector, real | vector, …) -> vector",
    ),
    b(
        "to_vector",
        1,
        Some(1),
        "(vector | row_vector | matrix | array[] real | array[] int) -> vector",
    ),
    b(
        "to_row_vector",
        1,
        Some(1),
        "(vector | row_vector | matrix | array[] real | array[] int) -> row_vector",
    ),
    b(
        "to_array_1d",
        1,
        Some(1),
        "(vector | row_vector | matrix | array of real) -> array[] real; (array of int) -> array[] int",
    ),
    b(
        "to_matrix",
        1,
        Some(3),
        "(matrix | vector | row_vector) -> matrix; (vector | row_vector | array[] real | array[] int, int m, int n) -> matrix",
    ),
    b(
        "linspaced_vector",
        3,
        Some(3),
        "(int n, real lo, real hi) -> vector",
    ),
    b(
        "reverse",
        1,
        Some(1),
        "(vector) -> vector; (row_vector) -> row_vector; (array[] T) -> array[] T",
    ),
    b(
        "sort_asc",
        1,
        Some(1),
        "(vector | row_vector | array[] real | array[] int) -> the same type",
    ),
    b(
        "sort_desc",
        1,
        Some(1),
        "(vector | row_vector | array[] real | array[] int) -> the same type",
    ),
    b("col", 2, Some(2), "(matrix, int) -> vector"),
    b("row", 2, Some(2), "(matrix, int) -> row_vector"),
    b("diag_matrix", 1, Some(1), "(vector) -> matrix"),
    b(
        "cholesky_decompose",
        1,
        Some(1),
        "(matrix) -> matrix: the lower Cholesky factor",
    ),
    b(
        "cumulative_sum",
        1,
        Some(1),
        "(vector) -> vector; (row_vector) -> row_vector; (array[] real) -> array[] real; (array[] int) -> array[] int",
    ),
    b(
        "segment",
        3,
        Some(3),
        "(vector, int, int) -> vector; (row_vector, int, int) -> row_vector; (array[] T, int, int) -> array[] T",
    ),
    b(
        "head",
        2,
        Some(2),
        "(vector, int) -> vector; (row_vector, int) -> row_vector; (array[] T, int) -> array[] T",
    ),
    b(
        "tail",
        2,
        Some(2),
        "(vector, int) -> vector; (row_vector, int) -> row_vector; (array[] T, int) -> array[] T",
    ),
    b(
        "softmax",
        1,
        Some(1),
        "(vector) -> vector; (matrix) -> matrix, row by row",
    ),
    b(
        "log_softmax",
        1,
        Some(1),
        "(vector) -> vector; (matrix) -> matrix, row by row",
    ),
    b(
        "add_row_vector",
        2,
        Some(2),
        "(matrix[N, K], row_vector[K]) -> matrix[N, K]: the row vector added to every row (a vector is taken as a row)",
    ),
    b(
        "target",
        0,
        Some(0),
        "() -> real: the log density accumulated so far",
    ),
    b(
        "add_diag",
        2,
        Some(2),
        "(matrix, real | vector | row_vector) -> matrix: the square matrix with the scalar or vector added to its diagonal",
    ),
    b(
        "trace",
        1,
        Some(1),
        "(matrix) -> real: the sum of the diagonal",
    ),
    b(
        "quad_form_diag",
        2,
        Some(2),
        "(matrix m, vector | row_vector v) -> matrix: diag(v) * m * diag(v)",
    ),
    b(
        "quad_form_sym",
        2,
        Some(2),
        "(matrix A, matrix B) -> matrix; (matrix A, vector b) -> real: B' * A * B for a symmetric A, exactly symmetric",
    ),
    b(
        "inverse",
        1,
        Some(1),
        "(matrix) -> matrix: the inverse of a square matrix (LU)",
    ),
    b(
        "inverse_spd",
        1,
        Some(1),
        "(matrix) -> matrix: the inverse of a symmetric positive-definite matrix (Cholesky)",
    ),
    b(
        "determinant",
        1,
        Some(1),
        "(matrix) -> real: the determinant",
    ),
    b(
        "log_determinant",
        1,
        Some(1),
        "(matrix) -> real: the log of the absolute value of the determinant",
    ),
    b(
        "mdivide_left",
        2,
        Some(2),
        "(matrix A, vector b) -> vector; (matrix A, matrix B) -> matrix: A \\ B, the solution of A X = B",
    ),
    b(
        "mdivide_right",
        2,
        Some(2),
        "(row_vector b, matrix A) -> row_vector; (matrix B, matrix A) -> matrix: B / A, the solution of X A = B",
    ),
    b(
        "mdivide_left_tri_low",
        2,
        Some(2),
        "(matrix L, vector b) -> vector; (matrix L, matrix B) -> matrix: L \\ B with L lower triangular (its upper triangle is ignored)",
    ),
    b(
        "mdivide_right_tri_low",
        2,
        Some(2),
        "(row_vector b, matrix L) -> row_vector; (matrix B, matrix L) -> matrix: B / L with L lower triangular (its upper triangle is ignored)",
    ),
    b(
        "gp_exp_quad_cov",
        3,
        Some(4),
        "(array[] real | array[] vector x, real sigma, real l) -> matrix; (x1, x2, real sigma, real l) -> matrix: sigma^2 exp(-|x - x'|^2 / (2 l^2))",
    ),
    b(
        "cov_exp_quad",
        3,
        Some(4),
        "the same as gp_exp_quad_cov (its older name)",
    ),
    b(
        "gp_matern32_cov",
        3,
        Some(4),
        "(array[] real | array[] vector x, real sigma, real l) -> matrix; (x1, x2, real sigma, real l) -> matrix: sigma^2 (1 + sqrt(3) r / l) exp(-sqrt(3) r / l)",
    ),
    b(
        "gp_matern52_cov",
        3,
        Some(4),
        "(array[] real | array[] vector x, real sigma, real l) -> matrix; (x1, x2, real sigma, real l) -> matrix: sigma^2 (1 + sqrt(5) r / l + 5 r^2 / (3 l^2)) exp(-sqrt(5) r / l)",
    ),
    b(
        "gp_periodic_cov",
        4,
        Some(5),
        "(array[] real | array[] vector x, real sigma, real l, real p) -> matrix; (x1, x2, real sigma, real l, real p) -> matrix: sigma^2 exp(-2 sin^2(pi r / p) / l^2)",
    ),
    b(
        "ode_rk45",
        4,
        None,
        "(f, vector y0, real t0, array[] real ts, ...) -> array[] vector: the solution of y' = f(t, y, ...) at the times ts (non-stiff: adaptive Dormand-Prince 5(4); rtol 1e-6, atol 1e-6, max_num_steps 10^6 per output interval); f is a function of the `functions` block, vector f(real t, vector y, ...)",
    ),
    b(
        "ode_rk45_tol",
        7,
        None,
        "(f, vector y0, real t0, array[] real ts, data real rtol, data real atol, int max_num_steps, ...) -> array[] vector: ode_rk45 with explicit tolerances",
    ),
    b(
        "ode_bdf",
        4,
        None,
        "(f, vector y0, real t0, array[] real ts, ...) -> array[] vector: as ode_rk45, for stiff systems (variable-order, variable-step BDF of orders 1-5 with Newton iterations; rtol 1e-10, atol 1e-10, max_num_steps 10^8, as Stan's)",
    ),
    b(
        "ode_bdf_tol",
        7,
        None,
        "(f, vector y0, real t0, array[] real ts, data real rtol, data real atol, int max_num_steps, ...) -> array[] vector: ode_bdf with explicit tolerances",
    ),
];

/// The built-in called `name`.
pub fn lookup(name: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.name == name)
}

/// Any of real/vector/row_vector/matrix/arrays thereof, or int (promoted): elementwise input.
fn elementwise(t: Type) -> Type {
    t.promoted()
}

/// `vector`, `row_vector`, `matrix`, `array[] real` (a container reduced to one real).
fn real_container(t: Type) -> bool {
    t.is_linear_algebra() || t == Type::array(Base::Real, 1)
}

/// One-dimensional container: vector, row_vector, or a 1-D array of anything.
fn sliceable(t: Type) -> bool {
    (t.dims == 0 && matches!(t.base, Base::Vector | Base::RowVector)) || t.dims >= 1
}

/// The functions of one argument applied elementwise: the result has the argument's shape
/// (`real` for an `int`, elementwise on containers), so its sizes are the argument's (used by
/// the checker to follow sizes, `semantics/check/call_shapes.rs`).
pub const ELEMENTWISE_UNARY: &[&str] = &[
    "exp",
    "log",
    "log1p",
    "expm1",
    "sqrt",
    "square",
    "inv",
    "inv_logit",
    "logit",
    "log1p_exp",
    "log_inv_logit",
    "log1m",
    "log1m_exp",
    "lgamma",
    "tanh",
    "Phi",
    "relu",
    "softplus",
    "fabs",
    "floor",
    "ceil",
    "round",
    "abs",
    "inv_sqrt",
    "inv_square",
    "log1m_inv_logit",
    "inv_cloglog",
    "digamma",
    "sinh",
    "cosh",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "cbrt",
    "log2",
    "log10",
    "exp2",
    "erf",
    "erfc",
    "step",
    "trunc",
];

/// The return type of built-in `name` applied to arguments of types `args`, or `None` when no
/// signature matches (the arity has already been checked against `min_args`/`max_args`).
pub fn return_type(name: &str, args: &[Type]) -> Option<Type> {
    use Base::*;
    let real = Type::REAL;
    match (name, args) {
        ("abs", [t]) if t.is_int_based() => Some(*t),
        (f, [t]) if ELEMENTWISE_UNARY.contains(&f) => Some(elementwise(*t)),
        (
            "pow" | "fmin" | "fmax" | "fdim" | "hypot" | "atan2" | "log_diff_exp" | "lbeta"
            | "lchoose",
            [a, b],
        ) => {
            if a.is_scalar() && b.is_scalar() {
                Some(real)
            } else if b.is_scalar() {
                Some(a.promoted())
            } else if a.is_scalar() {
                Some(b.promoted())
            } else if a.promoted() == b.promoted() {
                Some(a.promoted())
            } else {
                None
            }
        }
        ("fma" | "log_mix", [a, b, c]) if a.is_scalar() && b.is_scalar() && c.is_scalar() => {
            Some(real)
        }
        ("int_step", [t]) if t.is_scalar() => Some(Type::INT),
        ("to_int", [t]) if matches!(t.base, Int | Real) => Some(Type {
            base: Int,
            dims: t.dims,
        }),
        ("is_inf" | "is_nan", [t]) if t.is_scalar() => Some(Type::INT),
        (
            "pi" | "e" | "sqrt2" | "not_a_number" | "positive_infinity" | "negative_infinity"
            | "machine_precision",
            [],
        ) => Some(real),
        ("squared_distance", [a, b])
            if matches!(*a, Type::VECTOR | Type::ROW_VECTOR)
                && matches!(*b, Type::VECTOR | Type::ROW_VECTOR) =>
        {
            Some(real)
        }
        ("rows_dot_product", [a, b]) if a == b && a.is_linear_algebra() => Some(Type::VECTOR),
        ("columns_dot_product", [a, b]) if a == b && a.is_linear_algebra() => {
            Some(Type::ROW_VECTOR)
        }
        ("crossprod" | "tcrossprod" | "multiply_lower_tri_self_transpose", [m])
            if *m == Type::MATRIX =>
        {
            Some(Type::MATRIX)
        }
        ("quad_form", [a, b]) if *a == Type::MATRIX && *b == Type::MATRIX => Some(Type::MATRIX),
        ("quad_form", [a, b]) if *a == Type::MATRIX && *b == Type::VECTOR => Some(real),
        ("diag_pre_multiply", [v, m])
            if matches!(*v, Type::VECTOR | Type::ROW_VECTOR) && *m == Type::MATRIX =>
        {
            Some(Type::MATRIX)
        }
        ("diag_post_multiply", [m, v])
            if matches!(*v, Type::VECTOR | Type::ROW_VECTOR) && *m == Type::MATRIX =>
        {
            Some(Type::MATRIX)
        }
        ("diagonal", [m]) if *m == Type::MATRIX => Some(Type::VECTOR),
        ("transpose", [t]) => super::operators::transpose(*t),
        ("to_row_vector", [t]) if t.is_linear_algebra() || (t.dims == 1 && t.is_scalar_elem()) => {
            Some(Type::ROW_VECTOR)
        }
        ("to_array_1d", [t]) if t.dims > 0 && t.base == Int => Some(Type::array(Int, 1)),
        ("to_array_1d", [t]) if t.is_linear_algebra() || (t.dims > 0 && t.base == Real) => {
            Some(Type::array(Real, 1))
        }
        ("to_matrix", [t]) if t.is_linear_algebra() => Some(Type::MATRIX),
        ("to_matrix", [t, m, n])
            if m.is_int()
                && n.is_int()
                && (t.is_linear_algebra() || (t.dims == 1 && t.is_scalar_elem())) =>
        {
            Some(Type::MATRIX)
        }
        ("linspaced_vector", [n, lo, hi]) if n.is_int() && lo.is_scalar() && hi.is_scalar() => {
            Some(Type::VECTOR)
        }
        ("reverse", [t]) if sliceable(*t) => Some(*t),
        ("sort_asc" | "sort_desc", [t])
            if matches!(*t, Type::VECTOR | Type::ROW_VECTOR)
                || (t.dims == 1 && t.is_scalar_elem()) =>
        {
            Some(*t)
        }
        ("sum" | "prod", [t]) if *t == Type::array(Int, 1) => Some(Type::INT),
        ("sum" | "prod", [t]) if real_container(*t) => Some(real),
        ("mean" | "sd" | "variance", [t]) if real_container(*t) || t.is_ints() && t.dims == 1 => {
            Some(real)
        }
        ("log_sum_exp", [t]) if real_container(*t) => Some(real),
        ("log_sum_exp", [a, b]) if a.is_scalar() && b.is_scalar() => Some(real),
        ("min" | "max", [t]) if *t == Type::array(Int, 1) => Some(Type::INT),
        ("min" | "max", [t]) if real_container(*t) => Some(real),
        ("min" | "max", [a, b]) if a.is_int() && b.is_int() => Some(Type::INT),
        ("min" | "max", [a, b]) if a.is_scalar() && b.is_scalar() => Some(real),
        ("dot_product", [a, b]) if is_real_vector(*a) && is_real_vector(*b) => Some(real),
        ("dot_self", [t]) if matches!(*t, Type::VECTOR | Type::ROW_VECTOR) => Some(real),
        ("rows" | "cols", [t]) if t.is_linear_algebra() => Some(Type::INT),
        ("size" | "num_elements", [t]) if t.dims > 0 || t.is_linear_algebra() => Some(Type::INT),
        ("rep_vector", [x, n]) if x.is_scalar() && n.is_int() => Some(Type::VECTOR),
        ("rep_row_vector", [x, n]) if x.is_scalar() && n.is_int() => Some(Type::ROW_VECTOR),
        ("rep_array", [x, ns @ ..]) if !ns.is_empty() && ns.iter().all(|n| n.is_int()) => {
            Some(Type::array(x.base, x.dims + ns.len()))
        }
        ("rep_matrix", [x, m, n]) if x.is_scalar() && m.is_int() && n.is_int() => {
            Some(Type::MATRIX)
        }
        ("rep_matrix", [v, n]) if matches!(*v, Type::VECTOR | Type::ROW_VECTOR) && n.is_int() => {
            Some(Type::MATRIX)
        }
        ("append_col", args) => append(args, Vector, RowVector),
        ("append_row", args) => append(args, RowVector, Vector),
        ("to_vector", [t]) if t.is_linear_algebra() || (t.dims == 1 && t.is_scalar_elem()) => {
            Some(Type::VECTOR)
        }
        ("col", [m, i]) if *m == Type::MATRIX && i.is_int() => Some(Type::VECTOR),
        ("row", [m, i]) if *m == Type::MATRIX && i.is_int() => Some(Type::ROW_VECTOR),
        ("diag_matrix", [v]) if *v == Type::VECTOR => Some(Type::MATRIX),
        ("cholesky_decompose", [m]) if *m == Type::MATRIX => Some(Type::MATRIX),
        ("cumulative_sum", [t])
            if matches!(*t, Type::VECTOR | Type::ROW_VECTOR)
                || (t.dims == 1 && t.is_scalar_elem()) =>
        {
            Some(*t)
        }
        ("segment", [v, i, n]) if sliceable(*v) && i.is_int() && n.is_int() => Some(*v),
        ("head" | "tail", [v, n]) if sliceable(*v) && n.is_int() => Some(*v),
        ("softmax" | "log_softmax", [v]) if *v == Type::VECTOR => Some(Type::VECTOR),
        ("softmax" | "log_softmax", [m]) if *m == Type::MATRIX => Some(Type::MATRIX),
        ("add_row_vector", [m, v])
            if *m == Type::MATRIX && matches!(*v, Type::VECTOR | Type::ROW_VECTOR) =>
        {
            Some(Type::MATRIX)
        }
        ("target", []) => Some(real),
        ("add_diag", [m, d])
            if *m == Type::MATRIX
                && (d.is_scalar() || matches!(*d, Type::VECTOR | Type::ROW_VECTOR)) =>
        {
            Some(Type::MATRIX)
        }
        ("trace" | "determinant" | "log_determinant", [m]) if *m == Type::MATRIX => Some(real),
        ("inverse" | "inverse_spd", [m]) if *m == Type::MATRIX => Some(Type::MATRIX),
        ("quad_form_diag", [m, v])
            if *m == Type::MATRIX && matches!(*v, Type::VECTOR | Type::ROW_VECTOR) =>
        {
            Some(Type::MATRIX)
        }
        ("quad_form_sym", [a, b]) if *a == Type::MATRIX && *b == Type::MATRIX => Some(Type::MATRIX),
        ("quad_form_sym", [a, b]) if *a == Type::MATRIX && *b == Type::VECTOR => Some(real),
        ("mdivide_left" | "mdivide_left_tri_low", [a, b])
            if *a == Type::MATRIX && matches!(*b, Type::VECTOR | Type::MATRIX) =>
        {
            Some(*b)
        }
        ("mdivide_right" | "mdivide_right_tri_low", [b, a])
            if *a == Type::MATRIX && matches!(*b, Type::ROW_VECTOR | Type::MATRIX) =>
        {
            Some(*b)
        }
        (
            "gp_exp_quad_cov" | "cov_exp_quad" | "gp_matern32_cov" | "gp_matern52_cov",
            [x, rest @ ..],
        ) => gp_signature(*x, rest, 2),
        ("gp_periodic_cov", [x, rest @ ..]) => gp_signature(*x, rest, 3),
        _ => None,
    }
}

/// A GP covariance function's arguments after the first points `x`: optionally a second set of
/// points of the same kind, then `hyper` reals (σ, l and, for the periodic kernel, p).
fn gp_signature(x: Type, rest: &[Type], hyper: usize) -> Option<Type> {
    let points = |t: Type| {
        t.dims == 1
            && matches!(
                t.base,
                Base::Int | Base::Real | Base::Vector | Base::RowVector
            )
    };
    let same_kind = |a: Type, b: Type| {
        a.dims == b.dims && (a.base == b.base || (a.is_scalar_elem() && b.is_scalar_elem()))
    };
    let hypers = match rest.len() {
        l if l == hyper => rest,
        l if l == hyper + 1 && points(rest[0]) && same_kind(x, rest[0]) => &rest[1..],
        _ => return None,
    };
    (points(x) && hypers.iter().all(|h| h.is_scalar())).then_some(Type::MATRIX)
}

/// `vector`, `row_vector` or `array[] real`/`array[] int` (the arguments of `dot_product`).
fn is_real_vector(t: Type) -> bool {
    matches!(t, Type::VECTOR | Type::ROW_VECTOR) || (t.dims == 1 && t.is_scalar_elem())
}

/// `append_col` / `append_row`, variadic: all arguments are `along`-vectors or matrices (→
/// matrix), or all are scalars or `across`-vectors with at least one vector (→ that vector).
fn append(args: &[Type], along: Base, across: Base) -> Option<Type> {
    if args.len() < 2 || args.iter().any(|t| t.dims > 0) {
        return None;
    }
    if args
        .iter()
        .all(|t| t.base == along || t.base == Base::Matrix)
    {
        return Some(Type::MATRIX);
    }
    let all_across = args
        .iter()
        .all(|t| t.base == across || t.base == Base::Int || t.base == Base::Real);
    if all_across && args.iter().any(|t| t.base == across) {
        return Some(Type::scalar(across));
    }
    None
}

impl Type {
    /// The array's elements are `int` or `real`.
    fn is_scalar_elem(self) -> bool {
        matches!(self.base, Base::Int | Base::Real)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arr(base: Base, dims: usize) -> Type {
        Type::array(base, dims)
    }

    #[test]
    fn elementwise_functions_keep_shape_and_promote() {
        assert_eq!(return_type("exp", &[Type::INT]), Some(Type::REAL));
        assert_eq!(return_type("log", &[Type::VECTOR]), Some(Type::VECTOR));
        assert_eq!(
            return_type("sqrt", &[arr(Base::Int, 2)]),
            Some(arr(Base::Real, 2))
        );
        assert_eq!(return_type("abs", &[Type::INT]), Some(Type::INT));
        assert_eq!(return_type("square", &[Type::MATRIX]), Some(Type::MATRIX));
    }

    #[test]
    fn reductions() {
        assert_eq!(return_type("sum", &[arr(Base::Int, 1)]), Some(Type::INT));
        assert_eq!(return_type("sum", &[Type::VECTOR]), Some(Type::REAL));
        assert_eq!(return_type("mean", &[arr(Base::Int, 1)]), Some(Type::REAL));
        assert_eq!(return_type("max", &[Type::INT, Type::INT]), Some(Type::INT));
        assert_eq!(
            return_type("max", &[Type::INT, Type::REAL]),
            Some(Type::REAL)
        );
        assert_eq!(
            return_type("log_sum_exp", &[Type::REAL, Type::REAL]),
            Some(Type::REAL)
        );
        assert_eq!(return_type("sum", &[Type::REAL]), None);
    }

    #[test]
    fn constructors_and_slices() {
        assert_eq!(
            return_type("rep_vector", &[Type::INT, Type::INT]),
            Some(Type::VECTOR)
        );
        assert_eq!(return_type("rep_vector", &[Type::REAL, Type::REAL]), None);
        assert_eq!(
            return_type("rep_array", &[Type::VECTOR, Type::INT, Type::INT]),
            Some(arr(Base::Vector, 2))
        );
        assert_eq!(
            return_type("rep_matrix", &[Type::REAL, Type::INT, Type::INT]),
            Some(Type::MATRIX)
        );
        assert_eq!(
            return_type("segment", &[Type::VECTOR, Type::INT, Type::INT]),
            Some(Type::VECTOR)
        );
        assert_eq!(
            return_type("col", &[Type::MATRIX, Type::INT]),
            Some(Type::VECTOR)
        );
        assert_eq!(
            return_type("to_vector", &[arr(Base::Int, 1)]),
            Some(Type::VECTOR)
        );
    }

    #[test]
    fn append_col_is_variadic() {
        let seven = [Type::VECTOR; 7];
        assert_eq!(return_type("append_col", &seven), Some(Type::MATRIX));
        assert_eq!(
            return_type("append_col", &[Type::MATRIX, Type::VECTOR]),
            Some(Type::MATRIX)
        );
        assert_eq!(
            return_type("append_col", &[Type::REAL, Type::ROW_VECTOR]),
            Some(Type::ROW_VECTOR)
        );
        assert_eq!(
            return_type("append_col", &[Type::VECTOR, Type::ROW_VECTOR]),
            None
        );
        assert_eq!(
            return_type("append_row", &[Type::VECTOR, Type::REAL, Type::VECTOR]),
            Some(Type::VECTOR)
        );
        assert_eq!(
            return_type("append_row", &[Type::ROW_VECTOR, Type::MATRIX]),
            Some(Type::MATRIX)
        );
    }

    #[test]
    fn table_is_consistent() {
        for b in BUILTINS {
            assert_eq!(
                BUILTINS.iter().filter(|x| x.name == b.name).count(),
                1,
                "{} listed twice",
                b.name
            );
            if let Some(max) = b.max_args {
                assert!(b.min_args <= max, "{}", b.name);
            }
        }
        assert!(lookup("nope").is_none());
    }
}
