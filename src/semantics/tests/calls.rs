//! Checker tests: function and distribution calls, warnings, and robustness on damaged input.

use super::*;

// ----- functions and distributions -----------------------------------------------------------

#[test]
fn builtin_calls_are_typed() {
    assert_clean(&with_data(
        "matrix[N, 7] X = append_col(v, v, v, v, v, v, v); real s = sum(v) + mean(a) + sd(v); \
         int t = sum(idx); vector[N] l = log(v); array[N] real e = exp(a); real lse = log_sum_exp(v); \
         real mx = fmax(x, 1); int mi = max(N, 2); vector[3] h = head(v, 3); vector[N] c = col(m, 1); \
         vector[N] sm = softmax(v); array[2, 3] real r = rep_array(x, 2, 3); int n = rows(m) + size(a); \
         real d = dot_product(v, rv) + dot_self(v); matrix[N, N] dm = diag_matrix(v);",
    ));
    match one_error(&with_data("real s = sum(x);")) {
        SemanticError::NoMatchingSignature { function, args, .. } => {
            assert_eq!((function.as_str(), args.as_str()), ("sum", "real"))
        }
        e => panic!("{e:?}"),
    }
    assert!(matches!(
        one_error(&with_data("vector[N] w = rep_vector(1);")),
        SemanticError::WrongArity { found: 1, .. }
    ));
}

#[test]
fn unknown_function_suggests_a_known_name() {
    match one_error(&with_data("real s = sqr(x);")) {
        SemanticError::UnknownFunction { suggestion, .. } => {
            assert_eq!(suggestion.as_deref(), Some("sqrt"))
        }
        e => panic!("{e:?}"),
    }
    match one_error(&with_data("real s = normal_lpfd(x | 0, 1);")) {
        SemanticError::UnknownFunction { suggestion, .. } => {
            assert_eq!(suggestion.as_deref(), Some("normal_lpdf"))
        }
        e => panic!("{e:?}"),
    }
}

#[test]
fn distribution_calls() {
    assert_clean(
        "data { real y; } parameters { real mu; } model { target += normal_lpdf(y | mu, 1); \
         target += normal_lupdf(mu | 0, 1) + normal_lcdf(y | mu, 1) + normal_lccdf(y | mu, 1); }",
    );
    assert!(matches!(
        one_error(
            "data { real y; } parameters { real mu; } model { target += normal_lpdf(y, mu, 1); }"
        ),
        SemanticError::ConditionalRequired { .. }
    ));
    match one_error(
        "data { real y; } parameters { real mu; } model { target += normal_lpdf(y | mu); }",
    ) {
        SemanticError::WrongArity { expected, .. } => {
            assert!(expected.contains("location parameter") && expected.contains("scale parameter"))
        }
        e => panic!("{e:?}"),
    }
    match one_error(
        "data { int y; } parameters { real<lower=0, upper=1> p; } model { target += bernoulli_lpdf(y | p); }",
    ) {
        SemanticError::WrongSuffix { suggested, .. } => assert_eq!(suggested, "bernoulli_lpmf"),
        e => panic!("{e:?}"),
    }
}

#[test]
fn tilde_checks_family_arity_and_argument_types() {
    match one_error("data { real y; } parameters { real mu; } model { y ~ nromal(mu, 1); }") {
        SemanticError::UnknownDistribution { suggestion, .. } => {
            assert_eq!(suggestion.as_deref(), Some("normal"))
        }
        e => panic!("{e:?}"),
    }
    match one_error("data { real y; } parameters { real mu; } model { y ~ normal_lpdf(mu, 1); }") {
        SemanticError::UnknownDistribution { suggestion, .. } => {
            assert_eq!(suggestion.as_deref(), Some("normal"))
        }
        e => panic!("{e:?}"),
    }
    assert!(matches!(
        one_error("data { real y; } parameters { real mu; } model { y ~ normal(mu, 1, 2); }"),
        SemanticError::WrongArity { found: 3, .. }
    ));
    assert!(matches!(
        one_error(
            "data { int N; matrix[N, N] y; } parameters { real mu; } model { mu ~ normal(0, 1); y ~ normal(mu, 1); }"
        ),
        SemanticError::TypeMismatch { .. }
    ));
    assert!(matches!(
        one_error(
            "data { int N; matrix[N, N] s; real y; } parameters { real mu; } model { mu ~ normal(0, 1); y ~ normal(mu, s); }"
        ),
        SemanticError::TypeMismatch { .. }
    ));
}

#[test]
fn poisson_on_a_vector_suggests_an_int_array() {
    match one_error(
        "data { int N; vector[N] y; } parameters { real<lower=0> l; } model { l ~ gamma(2, 1); y ~ poisson(l); }",
    ) {
        SemanticError::DiscreteFamilyOnReal {
            values,
            suggested_decl,
            ..
        } => {
            assert_eq!(values, "integer counts");
            assert_eq!(suggested_decl.as_deref(), Some("array[N] int y"));
        }
        e => panic!("{e:?}"),
    }
    assert_clean(
        "data { int N; array[N] int y; } parameters { real<lower=0> l; } model { l ~ gamma(2, 1); y ~ poisson(l); }",
    );
}

#[test]
fn discrete_families_need_int_variates() {
    match one_error(
        "data { int N; vector[N] y; } parameters { real a; } model { a ~ normal(0, 1); y ~ bernoulli_logit(a); }",
    ) {
        SemanticError::DiscreteFamilyOnReal {
            name,
            declared,
            suggested_decl,
            ..
        } => {
            assert_eq!((name.as_str(), declared.as_str()), ("y", "vector"));
            assert_eq!(suggested_decl.as_deref(), Some("array[N] int y"));
        }
        e => panic!("{e:?}"),
    }
    // Without bounds, and a continuous family on an int variable: both fine.
    assert_clean(
        "data { int N; array[N] int y; array[N] int k; } parameters { real<lower=0, upper=1> p; real mu; } \
         model { p ~ normal(0.5, 1); mu ~ normal(0, 1); y ~ bernoulli(p); k ~ normal(mu, 1); }",
    );
}

#[test]
fn data_bounds_contradicting_the_support_are_errors() {
    match one_error("data { real<upper=0> y; } model { y ~ exponential(1); }") {
        SemanticError::SupportContradiction { name, bound, .. } => {
            assert_eq!((name.as_str(), bound.as_str()), ("y", "<upper=0>"))
        }
        e => panic!("{e:?}"),
    }
    assert_clean("data { real<lower=0> y; } model { y ~ exponential(1); }");
    assert_clean("data { real<upper=5> y; } model { y ~ exponential(1); }");
    assert!(matches!(
        one_error(
            "data { int<lower=2> y; } parameters { real<lower=0, upper=1> p; } model { p ~ normal(0.5, 1); y ~ bernoulli(p); }"
        ),
        SemanticError::SupportContradiction { .. }
    ));
}

#[test]
fn user_functions() {
    // Recursion, forward declarations, void statements.
    assert_clean(
        "functions { int fact(int n); int fact(int n) { if (n <= 1) return 1; else return n * fact(n - 1); } \
         void show(real x) { print(x); } } \
         transformed data { int f = fact(4); show(f); }",
    );
    assert!(matches!(
        one_error(
            "functions { real f(real x) { return x; } } transformed data { real y = f(1, 2); }"
        ),
        SemanticError::WrongArity { found: 2, .. }
    ));
    assert!(matches!(
        one_error("functions { real f(real x) { return x; } } transformed data { f(1); }"),
        SemanticError::NonVoidStatement { .. }
    ));
    assert!(matches!(
        one_error("functions { void g(real x) { } } transformed data { real y = g(1); }"),
        SemanticError::VoidInExpression { .. }
    ));
    assert!(matches!(
        one_error("functions { int f(real x) { return x; } }"),
        SemanticError::TypeMismatch { .. }
    ));
    assert!(matches!(
        one_error("functions { real f(real x) { while (1) { return x; } } }"),
        SemanticError::MissingReturn { .. }
    ));
    assert!(matches!(
        one_error("functions { real f(real x) { x = 1; return x; } }"),
        SemanticError::ReadOnlyAssignment { .. }
    ));
}

#[test]
fn user_defined_distribution_under_tilde() {
    assert_clean(
        "functions { real half_lpdf(real y, real s) { return normal_lpdf(y | 0, s); } } \
         parameters { real<lower=0> sigma; } model { sigma ~ half(1); }",
    );
}

#[test]
fn statements_outside_loops_and_functions() {
    assert!(matches!(
        one_error(&with_data("continue;")),
        SemanticError::OutsideLoop { .. }
    ));
    assert!(matches!(
        one_error(&with_data("return 1;")),
        SemanticError::BadReturn { .. }
    ));
    assert_clean(&with_data("while (1) { break; }"));
}

// ----- warnings ------------------------------------------------------------------------------

#[test]
fn no_prior_is_reported_per_parameter() {
    let out = run("data { real y; } parameters { real a; real b; real c; } \
         model { a ~ normal(0, 1); target += normal_lpdf(b | 0, 1); y ~ normal(a + c, 1); }");
    assert!(out.errors.is_empty());
    assert_eq!(
        out.warnings,
        vec![Warning::NoPrior {
            name: "c".into(),
            span: match &out.warnings[0] {
                Warning::NoPrior { span, .. } => *span,
                w => panic!("{w:?}"),
            }
        }]
    );
}

#[test]
fn prior_through_a_transformed_parameter_counts() {
    let out = run(
        "parameters { real z; } transformed parameters { real w = 2 * z; } model { w ~ normal(0, 1); }",
    );
    assert!(out.errors.is_empty() && out.warnings.is_empty(), "{out:#?}");
}

#[test]
fn nonlinear_left_side_needs_jacobian() {
    let warns = |src: &str| run(src).warnings;
    let w = warns("parameters { real a; } model { exp(a) ~ normal(0, 1); }");
    assert!(
        matches!(w.as_slice(), [Warning::NonLinearLhs { .. }]),
        "{w:?}"
    );
    let w =
        warns("parameters { real a; real b; } model { a * b ~ normal(0, 1); b ~ normal(0, 1); }");
    assert!(
        matches!(w.as_slice(), [Warning::NonLinearLhs { .. }]),
        "{w:?}"
    );
    assert!(warns("parameters { real a; } model { 2 * a + 1 ~ normal(0, 1); }").is_empty());
    assert!(warns("data { real y; } parameters { real a; } model { a ~ normal(0, 1); log(y) ~ normal(a, 1); }").is_empty());
    // reshapes and selections change no values: no Jacobian needed
    for lhs in [
        "to_vector(M)",
        "segment(b, 1, 2)",
        "head(b, 2)",
        "to_row_vector(b)",
        "append_row(b, b)",
        "col(M, 1)",
    ] {
        let src = format!(
            "parameters {{ vector[3] b; matrix[2, 2] M; }} model {{ {lhs} ~ normal(0, 1); }}"
        );
        let w = warns(&src);
        assert!(
            !w.iter().any(|w| matches!(w, Warning::NonLinearLhs { .. })),
            "{lhs}: {w:?}"
        );
    }
    // …but a non-linear function inside one still warns
    let w = warns("parameters { vector[3] b; } model { head(exp(b), 2) ~ normal(0, 1); }");
    assert!(
        w.iter().any(|w| matches!(w, Warning::NonLinearLhs { .. })),
        "{w:?}"
    );
}

#[test]
fn uniform_bounds_compare_with_the_declaration() {
    let w = run("parameters { real<lower=0> s; } model { s ~ uniform(0, 10); }").warnings;
    assert!(
        matches!(w.as_slice(), [Warning::UniformBoundsMismatch { name, .. }] if name == "s"),
        "{w:?}"
    );
    assert_clean("parameters { real<lower=0, upper=10> s; } model { s ~ uniform(0, 10.0); }");
    assert_clean(
        "data { real a; } parameters { real<lower=a, upper=a + 1> s; } model { s ~ uniform(a, a + 1); }",
    );
    let w = run("parameters { real s; } model { s ~ uniform(-1, 1); }").warnings;
    assert!(
        matches!(w.as_slice(), [Warning::UniformBoundsMismatch { declared, .. }] if declared == "without bounds"),
        "{w:?}"
    );
}

// ----- robustness ----------------------------------------------------------------------------

#[test]
fn degenerate_asts_do_not_panic() {
    use crate::syntax::ast::{Expr, ExprKind, Ident, Index, Stmt, StmtKind};
    use crate::syntax::span::Span;
    let e = |kind| Expr {
        kind,
        span: Span::default(),
    };
    let exprs = vec![
        e(ExprKind::ArrayLit(vec![])),
        e(ExprKind::RowVectorLit(vec![])),
        e(ExprKind::Index {
            base: Box::new(e(ExprKind::IntLit(1))),
            indices: vec![],
        }),
        e(ExprKind::Index {
            base: Box::new(e(ExprKind::Var("nope".into()))),
            indices: vec![Index::All, Index::Range(None, None)],
        }),
        e(ExprKind::Call {
            name: Ident {
                name: "normal_lpdf".into(),
                span: Span::default(),
            },
            args: vec![],
            conditional: true,
        }),
        e(ExprKind::Call {
            name: Ident {
                name: "_rng".into(),
                span: Span::default(),
            },
            args: vec![],
            conditional: false,
        }),
    ];
    let program = ast::Program {
        model: exprs
            .into_iter()
            .map(|x| Stmt {
                kind: StmtKind::TargetPlus(x),
                span: Span::default(),
            })
            .chain([Stmt {
                kind: StmtKind::Tilde {
                    lhs: e(ExprKind::IntLit(1)),
                    dist: Ident {
                        name: String::new(),
                        span: Span::default(),
                    },
                    args: vec![],
                    truncation: None,
                },
                span: Span::default(),
            }])
            .collect(),
        ..Default::default()
    };
    let out = check(&program);
    assert!(!out.errors.is_empty());
}

#[test]
fn data_qualified_arguments_reject_parameters() {
    let src = "functions { real f(data real x) { return x; } } data { real y; } \
               parameters { real p; } model { p ~ normal(f(y), 1); target += f(p); }";
    match one_error(src) {
        SemanticError::NonDataArgument {
            function, index, ..
        } => {
            assert_eq!((function.as_str(), index), ("f", 1))
        }
        e => panic!("{e:?}"),
    }
}

#[test]
fn user_densities_need_the_bar_and_lp_calls_need_a_target() {
    let defs = "functions { real half_lpdf(real y, real s) { return normal_lpdf(y | 0, s); } \
                void prior_lp(real x) { x ~ normal(0, 1); } } ";
    assert_clean(&format!(
        "{defs} parameters {{ real<lower=0> s; }} model {{ target += half_lupdf(s | 1); prior_lp(s); }}"
    ));
    assert!(matches!(
        one_error(&format!(
            "{defs} parameters {{ real<lower=0> s; }} model {{ target += half_lpdf(s, 1); }}"
        )),
        SemanticError::ConditionalRequired { .. }
    ));
    let out = run(&format!(
        "{defs} parameters {{ real<lower=0> s; }} model {{ s ~ half(1); }} generated quantities {{ prior_lp(1); }}"
    ));
    assert!(
        matches!(
            out.errors.as_slice(),
            [SemanticError::TargetOutsideModel { .. }]
        ),
        "{:#?}",
        out.errors
    );
}

/// Mutates valid and invalid models at random (fixed seed): deletions, duplications and swapped
/// bytes. Whatever still parses must check without panicking.
#[test]
fn mutated_programs_never_panic() {
    let sources = [
        include_str!("../../../tests/golden/semantic/ok_labour.bayes"),
        include_str!("../../../tests/golden/semantic/ok_garch.bayes"),
        include_str!("../../../tests/golden/semantic/ok_eight_schools.bayes"),
        include_str!("../../../tests/golden/semantic/bad_missing_return.bayes"),
        include_str!("../../../tests/golden/semantic/bad_data_argument.bayes"),
        include_str!("../../../tests/golden/semantic/warn_integer_division.bayes"),
    ];
    // xorshift64 (Marsaglia 2003), seeded: reproducible without a dependency.
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n.max(1) as u64) as usize
    };
    let mut parsed = 0;
    for src in sources {
        let bytes = src.as_bytes();
        for _ in 0..150 {
            let mut m = bytes.to_vec();
            for _ in 0..1 + next(3) {
                if m.is_empty() {
                    break;
                }
                let i = next(m.len());
                let len = 1 + next(6);
                let j = (i + len).min(m.len());
                match next(3) {
                    0 => {
                        m.drain(i..j);
                    }
                    1 => {
                        let piece: Vec<u8> = m[i..j].to_vec();
                        let at = next(m.len());
                        m.splice(at..at, piece);
                    }
                    _ => {
                        let (k, last) = (next(m.len()), m.len() - 1);
                        m.swap(i.min(last), k);
                    }
                }
            }
            let Ok(text) = String::from_utf8(m) else {
                continue;
            };
            if let Ok(program) = parse_program(&text, 0) {
                parsed += 1;
                let _ = check(&program);
            }
        }
    }
    assert!(
        parsed > 50,
        "too few mutants parsed ({parsed}) to exercise the checker"
    );
}

#[test]
fn expressions_are_typed_in_the_scope_of_a_program() {
    use crate::syntax::parser::parse_expression;
    let program = parse_program(
        "data { int N; vector[N] x; } parameters { real mu; } model { real local = 1; mu ~ normal(0, 1); }",
        0,
    )
    .expect("parses");
    let typed = |src: &str| expression_type(&program, &parse_expression(src, 1).expect("parses"));
    assert_eq!(typed("x * mu"), Ok(Type::VECTOR));
    assert_eq!(typed("x' * x"), Ok(Type::REAL));
    assert_eq!(typed("normal_rng(mu, 1)"), Ok(Type::REAL));
    match typed("local + 1") {
        Err(errs) => assert!(
            matches!(errs.as_slice(), [SemanticError::UndeclaredVariable { .. }]),
            "model locals are out of scope: {errs:?}"
        ),
        Ok(t) => panic!("typed as {t}"),
    }
}

#[test]
fn parameters_need_bounds_matching_restricted_supports() {
    let w = run("parameters { real sigma; } model { sigma ~ exponential(1); }").warnings;
    match w.as_slice() {
        [Warning::ParameterOutsideSupport { name, needed, .. }] => {
            assert_eq!((name.as_str(), needed.as_str()), ("sigma", "<lower=0>"))
        }
        w => panic!("{w:?}"),
    }
    let w = run("parameters { real<lower=0> p; } model { p ~ beta(2, 2); }").warnings;
    match w.as_slice() {
        [Warning::ParameterOutsideSupport { needed, .. }] => {
            assert_eq!(needed, "<lower=0, upper=1>")
        }
        w => panic!("{w:?}"),
    }
    let w = run("parameters { real<lower=-1> s; } model { s ~ gamma(2, 2); }").warnings;
    assert!(
        matches!(w.as_slice(), [Warning::ParameterOutsideSupport { .. }]),
        "{w:?}"
    );
    assert_clean("parameters { real<lower=0> s; } model { s ~ gamma(2, 2); }");
    assert_clean("parameters { real<lower=0, upper=1> p; } model { p ~ beta(2, 2); }");
    assert_clean("parameters { vector<lower=0>[3] s; } model { s ~ exponential(1); }");
    assert_clean("parameters { positive_ordered[3] s; } model { s ~ exponential(1); }");
    assert_clean("data { real a; } parameters { real<lower=a> s; } model { s ~ exponential(1); }");
}

#[test]
fn function_bodies_do_not_see_block_variables() {
    match one_error("functions { real f(real x) { return x + N; } } data { int N; }") {
        SemanticError::UndeclaredVariable { name, .. } => assert_eq!(name, "N"),
        e => panic!("{e:?}"),
    }
}

#[test]
fn cdfs_and_truncation_need_a_family_with_a_log_cdf() {
    assert_clean(
        "data { real y; } parameters { real mu; } model { mu ~ normal(0, 1); \
         y ~ normal(mu, 1) T[0, ]; target += normal_lccdf(y | mu, 1); }",
    );
    match one_error(
        "data { real y; } parameters { real<lower=0> a; } model { a ~ gamma(2, 2); y ~ gamma(a, 1) T[0, 5]; }",
    ) {
        SemanticError::NoLogCdf { family, .. } => assert_eq!(family, "gamma"),
        e => panic!("{e:?}"),
    }
    assert!(matches!(
        one_error(
            "data { real y; } parameters { real<lower=0> a; } model { a ~ gamma(2, 2); target += gamma_lcdf(y | a, 1); }"
        ),
        SemanticError::NoLogCdf { .. }
    ));
}

#[test]
fn bare_parameters_as_scales_need_bounds() {
    let w = run("data { real y; } parameters { real s; } model { y ~ normal(0, s); }").warnings;
    match w.as_slice() {
        [
            Warning::ArgumentOutsideSupport {
                name, role, needed, ..
            },
            Warning::NoPrior { .. },
        ] => {
            assert_eq!(
                (name.as_str(), role.as_str(), needed.as_str()),
                ("s", "scale parameter", "<lower=0>")
            );
        }
        w => panic!("{w:?}"),
    }
    let w = run("data { int y; } parameters { real p; } model { target += bernoulli_lpmf(y | p); p ~ normal(0, 1); }").warnings;
    assert!(
        matches!(w.as_slice(), [Warning::ArgumentOutsideSupport { needed, .. }] if needed == "<lower=0, upper=1>"),
        "{w:?}"
    );
    assert_clean(
        "data { real y; } parameters { real<lower=0> s; } model { s ~ exponential(1); y ~ normal(0, s); }",
    );
}

#[test]
fn read_only_data_help_shows_a_sized_copy() {
    match one_error(
        "data { int J; int K; array[J] vector[K] y; } transformed data { y[1, 1] = 0; }",
    ) {
        SemanticError::ReadOnlyAssignment { help, .. } => {
            assert!(help.contains("`array[J] vector[K] y_2 = y;`"), "{help}")
        }
        e => panic!("{e:?}"),
    }
}

#[test]
fn std_normal_has_no_parameters() {
    assert_clean(
        "data { real y; } parameters { vector[3] z; } model { z ~ std_normal(); \
         target += std_normal_lpdf(y) + std_normal_lcdf(y) + std_normal_lupdf(y); } \
         generated quantities { real d = std_normal_rng(); }",
    );
    assert!(matches!(
        one_error("parameters { real z; } model { z ~ std_normal(0, 1); }"),
        SemanticError::WrongArity { found: 2, .. }
    ));
    assert!(matches!(
        one_error(
            "parameters { real z; } model { z ~ normal(0, 1); target += std_normal_lpdf(z, 1); }"
        ),
        SemanticError::WrongArity { found: 2, .. }
    ));
}

#[test]
fn graph_builtins_beyond_the_core_list() {
    assert_clean(&with_data(
        "real c = pi() + e() + log_mix(0.5, x, x) + fma(x, x, x) + hypot(x, 1) + lbeta(2, 3); \
         int s = int_step(x) + is_nan(x); vector[N] r = reverse(v) + sort_asc(v) + sin(v); \
         matrix[N, N] cp = crossprod(m) + diag_pre_multiply(v, m) + to_matrix(v, N, 1) * to_matrix(rv, 1, N); \
         real q = quad_form(m, v); vector[N] rd = rows_dot_product(m, m); \
         array[N * N] real flat = to_array_1d(m); row_vector[N] t = transpose(v); \
         vector[5] ls = linspaced_vector(5, 0, 1); vector[N] dg = diagonal(m);",
    ));
    assert!(matches!(
        one_error(&with_data("real q = quad_form(v, m);")),
        SemanticError::NoMatchingSignature { .. }
    ));
}

#[test]
fn names_from_later_blocks_are_reported_as_such() {
    match one_error(
        "parameters { real mu; } model { mu ~ normal(0, 1); y_rep ~ normal(mu, 1); } \
         generated quantities { real y_rep = normal_rng(mu, 1); }",
    ) {
        SemanticError::DeclaredInLaterBlock {
            name, block, here, ..
        } => {
            assert_eq!(
                (name.as_str(), block.as_str(), here.as_str()),
                ("y_rep", "generated quantities", "model")
            );
        }
        e => panic!("{e:?}"),
    }
}

#[test]
fn to_int_is_typed_and_takes_data_only_outside_generated_quantities() {
    // int and real scalars give an int, arrays an int array of the same dimensions
    assert_clean(&with_data(
        "int k = to_int(x); int j = to_int(N); array[N] int b = to_int(a); \
         array[2, 2] int c = to_int({{1.5, 2.5}, {-1.5, 3.0}}); real r = to_int(-2.7);",
    ));
    match one_error(&with_data("real s = sum(to_int(v));")) {
        SemanticError::NoMatchingSignature { function, args, .. } => {
            assert_eq!((function.as_str(), args.as_str()), ("to_int", "vector"))
        }
        e => panic!("{e:?}"),
    }
    assert!(matches!(
        one_error(&with_data("vector[N] w = to_int(a);")),
        SemanticError::TypeMismatch { .. }
    ));
    // the model block and transformed parameters: data arguments only, with the argument's span
    let src = "data { real c; } parameters { real mu; } \
               transformed parameters { real t = to_int(c) + mu; } \
               model { mu ~ normal(to_int(c), 1); target += to_int(mu * 2); }";
    match one_error(src) {
        SemanticError::DataOnlyBuiltin { function, span } => {
            assert_eq!(function, "to_int");
            assert_eq!(&src[span.start..span.end], "mu * 2");
        }
        e => panic!("{e:?}"),
    }
    let src = "parameters { real mu; } transformed parameters { real t = to_int(mu); } \
               model { mu ~ normal(0, 1); }";
    assert!(matches!(
        one_error(src),
        SemanticError::DataOnlyBuiltin { .. }
    ));
    // a function's argument must be `data`, as in Stan
    let src = "functions { int f(real x) { return to_int(x); } int g(data real x) { return to_int(x); } } \
               parameters { real mu; } model { mu ~ normal(0, 1); }";
    assert!(matches!(
        one_error(src),
        SemanticError::DataOnlyBuiltin { .. }
    ));
    // generated quantities compute from the draws' values: parameters are allowed
    assert_clean(
        "parameters { real mu; } model { mu ~ normal(0, 1); } \
         generated quantities { int k = to_int(mu * 10); }",
    );
}
