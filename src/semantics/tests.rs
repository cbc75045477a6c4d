//! Unit tests of the checker, one group per check, on small programs parsed from source.

mod calls;
mod guards;
mod mv_sizes;
mod sizes;

use super::*;
use crate::syntax::parser::parse_program;

fn run(src: &str) -> CheckOutput {
    let program = parse_program(src, 0).unwrap_or_else(|e| panic!("test model parses: {e}"));
    check(&program)
}

fn errors(src: &str) -> Vec<SemanticError> {
    run(src).errors
}

/// Asserts no errors and no warnings.
fn assert_clean(src: &str) {
    let out = run(src);
    assert!(
        out.errors.is_empty(),
        "unexpected errors: {:#?}",
        out.errors
    );
    assert!(
        out.warnings.is_empty(),
        "unexpected warnings: {:#?}",
        out.warnings
    );
}

/// The single error of `src`.
fn one_error(src: &str) -> SemanticError {
    let errs = errors(src);
    assert_eq!(errs.len(), 1, "expected exactly one error, got {errs:#?}");
    errs.into_iter().next().expect("length checked above")
}

/// A model block around `body` with a few declarations of every type in data.
fn with_data(body: &str) -> String {
    format!(
        "data {{ int N; real x; vector[N] v; row_vector[N] rv; matrix[N, N] m; \
         array[N] int idx; array[N] real a; }}\n\
         transformed data {{ {body} }}"
    )
}

// ----- reference models ----------------------------------------------------------------------

#[test]
fn labour_model_is_clean() {
    assert_clean(include_str!("../../tests/golden/semantic/ok_labour.bayes"));
}

#[test]
fn eight_schools_is_clean() {
    assert_clean(include_str!(
        "../../tests/golden/semantic/ok_eight_schools.bayes"
    ));
}

#[test]
fn garch_warns_only_about_flat_priors() {
    let out = run(include_str!("../../tests/golden/semantic/ok_garch.bayes"));
    assert!(out.errors.is_empty(), "{:#?}", out.errors);
    let names: Vec<&str> = out
        .warnings
        .iter()
        .map(|w| match w {
            Warning::NoPrior { name, .. } => name.as_str(),
            other => panic!("unexpected warning {other:?}"),
        })
        .collect();
    // alpha1 in (0, 1) and beta1 in (0, 1 - alpha1) have proper implicit uniform priors
    assert_eq!(names, ["mu", "omega"]);
}

#[test]
fn no_prior_warning_where_the_flat_prior_is_proper() {
    let out = run(
        "parameters { real<lower=0, upper=1> p; simplex[3] s; corr_matrix[2] R; \
         cholesky_factor_corr[2] L; real<lower=0> sigma; } model { }",
    );
    let names: Vec<&str> = out
        .warnings
        .iter()
        .filter_map(|w| match w {
            Warning::NoPrior { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(names, ["sigma"]);
}

// ----- expression types ----------------------------------------------------------------------

#[test]
fn products_follow_linear_algebra() {
    assert_clean(&with_data(
        "real d = rv * v; matrix[N, N] o = v * rv; vector[N] mv = m * v; \
         row_vector[N] vm = rv * m; matrix[N, N] mm = m * m; vector[N] s = 2 * v;",
    ));
    match one_error(&with_data("real d = v * rv;")) {
        SemanticError::TypeMismatch {
            expected, found, ..
        } => {
            assert_eq!(expected, "`real`");
            assert_eq!(found, "matrix");
        }
        e => panic!("{e:?}"),
    }
}

#[test]
fn vector_times_vector_names_both_types_and_the_fix() {
    match one_error(&with_data("vector[N] w = v * v;")) {
        SemanticError::OperatorMismatch { message, hint, .. } => {
            assert_eq!(message, "cannot multiply `vector` by `vector` with `*`");
            assert!(hint.contains(".*") && hint.contains("dot_product"));
        }
        e => panic!("{e:?}"),
    }
}

#[test]
fn integer_division_is_int_and_warns() {
    let out = run(&with_data(
        "int h = N / 2; real r = x / 2; int q = N %/% 2;",
    ));
    assert!(out.errors.is_empty(), "{:#?}", out.errors);
    assert_eq!(out.warnings.len(), 1);
    match &out.warnings[0] {
        Warning::IntegerDivision { expr, int_form, .. } => {
            assert_eq!(expr, "N / 2");
            assert_eq!(int_form, "N %/% 2");
        }
        w => panic!("{w:?}"),
    }
}

#[test]
fn comparisons_logic_and_ternary() {
    assert_clean(&with_data(
        "int b = x < 1 && N >= 2 || !(x == 0); real t = N > 2 ? x : 1; vector[N] w = x > 0 ? v : v;",
    ));
    assert!(matches!(
        one_error(&with_data("real t = x > 0 ? v : x;")),
        SemanticError::TypeMismatch { .. }
    ));
    assert!(matches!(
        one_error(&with_data("int b = v < 1;")),
        SemanticError::OperatorMismatch { .. }
    ));
}

#[test]
fn transpose_and_literals() {
    assert_clean(&with_data(
        "row_vector[N] t = v'; matrix[2, 2] lit = [[1, 2], [3, 4]]; row_vector[3] r3 = [1, x, 2]; \
         array[3] real ar = {1, x, 2}; array[2] int ai = {1, 2};",
    ));
    assert!(matches!(
        one_error(&with_data("array[2] int ai = {1, x};")),
        SemanticError::TypeMismatch { .. }
    ));
}

#[test]
fn indexing_reduces_types() {
    assert_clean(&with_data(
        "real e = v[1]; row_vector[N] r = m[1]; real c = m[1, 2]; vector[N] col1 = m[:, 1]; \
         vector[2] sub = v[1:2]; vector[N] sel = v[idx]; matrix[N, N] same = m[idx, :]; \
         real ai = a[N];",
    ));
    assert!(matches!(
        one_error(&with_data("real e = v[1, 2];")),
        SemanticError::TooManyIndices {
            max: 1,
            found: 2,
            ..
        }
    ));
    assert!(matches!(
        one_error(&with_data("real e = v[x];")),
        SemanticError::NonIntIndex { .. }
    ));
}

#[test]
fn arrays_have_no_arithmetic() {
    match one_error(&with_data("array[N] real b = a + 1;")) {
        SemanticError::OperatorMismatch { hint, .. } => assert!(hint.contains("to_vector")),
        e => panic!("{e:?}"),
    }
}

// ----- names ---------------------------------------------------------------------------------

#[test]
fn undeclared_variable_gets_nearest_suggestion() {
    // "rvv" vs "rv": similarity 1 − 1/3 ≈ 0.67 ≥ 0.6; vs "v": 1 − 2/3 < 0.6.
    match one_error(&with_data("real y = rvv[1] + 1;")) {
        SemanticError::UndeclaredVariable { suggestion, .. } => {
            assert_eq!(suggestion.as_deref(), Some("rv"))
        }
        e => panic!("{e:?}"),
    }
    match one_error(&with_data("real y = completely_different;")) {
        SemanticError::UndeclaredVariable { suggestion, .. } => assert_eq!(suggestion, None),
        e => panic!("{e:?}"),
    }
}

#[test]
fn loop_variables_are_scoped_and_read_only() {
    assert!(matches!(
        one_error(&with_data("for (i in 1:N) { } real z = i;")),
        SemanticError::UndeclaredVariable { .. }
    ));
    match one_error(&with_data("for (i in 1:N) { i = 2; }")) {
        SemanticError::ReadOnlyAssignment { kind, .. } => assert_eq!(kind, "loop variable"),
        e => panic!("{e:?}"),
    }
    assert!(matches!(
        one_error(&with_data("for (i in 1:x) { }")),
        SemanticError::TypeMismatch { .. }
    ));
    assert_clean(&with_data(
        "real s = 0; for (e in a) { s += e; } for (e in v) { s += e; }",
    ));
}

#[test]
fn redeclaration_and_no_shadowing() {
    assert!(matches!(
        one_error(&with_data("real y; real y;")),
        SemanticError::Redeclaration { .. }
    ));
    assert!(matches!(
        one_error(&with_data("for (N in 1:3) { }")),
        SemanticError::Redeclaration { .. }
    ));
}

#[test]
fn assignment_permissions_follow_blocks() {
    let src = "data { real y; } transformed data { real t = 1; } parameters { real p; } \
               transformed parameters { real q = p; } model { p ~ normal(0, 1); t = 2; q = 3; } \
               generated quantities { real g = 1; g = 2; }";
    let errs = errors(src);
    let kinds: Vec<&str> = errs
        .iter()
        .map(|e| match e {
            SemanticError::ReadOnlyAssignment { kind, .. } => kind.as_str(),
            e => panic!("{e:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        ["transformed data variable", "transformed parameter"]
    );
    match one_error("parameters { real p; } model { p = 1; p ~ normal(0, 1); }") {
        SemanticError::ReadOnlyAssignment { name, kind, .. } => {
            assert_eq!((name.as_str(), kind.as_str()), ("p", "parameter"))
        }
        e => panic!("{e:?}"),
    }
}

#[test]
fn int_promotes_to_real_but_not_back() {
    assert_clean(&with_data(
        "real r = N; array[N] real b = idx; vector[N] w = v; w[1] = N;",
    ));
    assert!(matches!(
        one_error(&with_data("int n = x;")),
        SemanticError::TypeMismatch { .. }
    ));
    assert!(matches!(
        one_error(&with_data("array[N] int b = a;")),
        SemanticError::TypeMismatch { .. }
    ));
    assert!(matches!(
        one_error(&with_data("vector[N] w = rv;")),
        SemanticError::TypeMismatch { .. }
    ));
}

#[test]
fn compound_assignment_is_typed() {
    assert_clean(&with_data(
        "vector[N] w = v; w += 1; w .*= v; w /= 2; real s = 1; s *= x;",
    ));
    assert!(matches!(
        one_error(&with_data("real s = 1; s += v;")),
        SemanticError::TypeMismatch { .. }
    ));
}

// ----- blocks --------------------------------------------------------------------------------

#[test]
fn parameters_take_no_initialiser_and_no_int() {
    assert!(matches!(
        one_error("parameters { real p = 1; } model { p ~ normal(0, 1); }"),
        SemanticError::InitialiserNotAllowed { .. }
    ));
    match one_error(
        "parameters { real p; } transformed parameters { int k = 1; } model { p ~ normal(0, 1); }",
    ) {
        SemanticError::DiscreteParameter { what, .. } => assert_eq!(what, "transformed parameter"),
        e => panic!("{e:?}"),
    }
}

#[test]
fn target_only_in_model_and_lp_functions() {
    assert!(matches!(
        one_error(
            "parameters { real p; } model { p ~ normal(0, 1); } generated quantities { target += 1; }"
        ),
        SemanticError::TargetOutsideModel { .. }
    ));
    assert_clean(
        "functions { void prior_lp(real x) { x ~ normal(0, 1); target += 0; } } \
         parameters { real p; } model { prior_lp(p); }",
    );
    assert!(matches!(
        one_error(
            "functions { void prior(real x) { target += x; } } parameters { real p; } model { p ~ normal(0, 1); }"
        ),
        SemanticError::TargetOutsideModel { .. }
    ));
}

#[test]
fn rng_only_where_allowed() {
    assert_clean(
        "parameters { real p; } \
         model { p ~ normal(0, 1); } generated quantities { real y = normal_rng(p, 1); \
         array[2] real ys = normal_rng([p, p]', 1); }",
    );
    // Stan allows `_rng` in transformed data, but bayesc runs that block without a random
    // stream: `check` refuses it rather than `fit` failing
    assert!(matches!(
        one_error(
            "transformed data { real z = normal_rng(0, 1); } parameters { real p; } model { p ~ normal(z, 1); }"
        ),
        SemanticError::RngNotAllowed { .. }
    ));
    assert_clean(
        "functions { real draw_rng(real m) { return normal_rng(m, 1); } } \
         generated quantities { real y = draw_rng(0); }",
    );
    assert!(matches!(
        one_error(
            "parameters { real p; } transformed parameters { real q = normal_rng(p, 1); } model { p ~ normal(0, 1); }"
        ),
        SemanticError::RngNotAllowed { .. }
    ));
}

#[test]
fn constraints_only_at_block_level() {
    assert!(matches!(
        one_error(&with_data("for (i in 1:N) { real<lower=0> s = 1; }")),
        SemanticError::ConstraintOnLocal { .. }
    ));
    assert!(matches!(
        one_error("parameters { real p; } model { simplex[3] s; p ~ normal(0, 1); }"),
        SemanticError::ConstraintOnLocal { .. }
    ));
}

#[test]
fn sizes_are_int_data() {
    assert!(matches!(
        one_error("data { real n; vector[n] y; }"),
        SemanticError::TypeMismatch { .. }
    ));
    match one_error(
        "data { int N; } parameters { vector[N] t; } model { t ~ normal(0, 1); } \
         generated quantities { vector[size(t)] u; }",
    ) {
        SemanticError::NonDataSize { var, .. } => assert_eq!(var, "t"),
        e => panic!("{e:?}"),
    }
    // Locals may be sized by anything of type int.
    let out = run(
        "data { int N; } parameters { vector[N] t; } model { vector[size(t)] u = t; t ~ normal(0, 1); }",
    );
    assert!(out.errors.is_empty(), "{:#?}", out.errors);
}

#[test]
fn a_parameter_in_no_statement_of_the_density_is_an_error_unless_bounded() {
    // issue 13, item 2: its posterior is the improper flat prior
    match one_error(
        "parameters { real a; real b; } model { a ~ normal(0, 1); } generated quantities { real c = b; }",
    ) {
        SemanticError::UnusedParameter { name, .. } => assert_eq!(name, "b"),
        e => panic!("{e:?}"),
    }
    // a bounded one is uniform (proper); one used through a transformed parameter counts
    let out = run("parameters { real a; real<lower=0, upper=1> p; real z; } \
         transformed parameters { real w = 2 * z; } model { a ~ normal(0, 1); w ~ normal(0, 1); }");
    assert!(out.errors.is_empty(), "{:#?}", out.errors);
    match one_error("parameters { real<lower=2, upper=2> a; } model { a ~ normal(0, 1); }") {
        SemanticError::BoundsReversed { name, .. } => assert_eq!(name, "a"),
        e => panic!("{e:?}"),
    }
    match one_error("transformed data { int k = 5 % 0; }") {
        SemanticError::DivisionByZero { expr, .. } => assert_eq!(expr, "5 % 0"),
        e => panic!("{e:?}"),
    }
}

#[test]
fn parameter_bounds_may_use_earlier_parameters() {
    let out = run(
        "parameters { real<lower=0, upper=1> a; real<lower=0, upper=1 - a> b; } \
         model { a ~ normal(0, 1); b ~ normal(0, 1); }",
    );
    assert!(out.errors.is_empty(), "{:#?}", out.errors);
    assert!(matches!(
        one_error(
            "parameters { real<lower=0, upper=b> a; real b; } model { a ~ normal(0, 1); b ~ normal(0, 1); }"
        ),
        SemanticError::UsedBeforeDeclaration { .. }
    ));
    assert!(matches!(
        one_error(
            "data { int N; } parameters { real<lower=rep_vector(0, N)> s; } model { s ~ normal(0, 1); }"
        ),
        SemanticError::TypeMismatch { .. }
    ));
    assert_clean(
        "data { int N; } parameters { vector<lower=rep_vector(0, N)>[N] s; } model { s ~ normal(0, 1); }",
    );
}
