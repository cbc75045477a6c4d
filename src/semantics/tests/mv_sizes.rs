//! Checker tests: the sizes a multivariate family's arguments share (`check/mv_sizes.rs`),
//! known from literal sizes or from `int` data, reported where they differ (session 20, tester
//! finding: `y ~ multi_normal(mu, Sigma)` with sizes 3, 2 and 2 × 2 passed `check`).

use std::collections::HashMap;

use super::*;

/// `check_with_data` of `src` with the `int` data `ints`.
fn run_with(src: &str, ints: &[(&str, i64)]) -> CheckOutput {
    let program = parse_program(src, 0).unwrap_or_else(|e| panic!("test model parses: {e}"));
    let ints: HashMap<String, i64> = ints.iter().map(|(n, v)| (n.to_string(), *v)).collect();
    check_with_data(&program, ints)
}

/// One `ArgumentSizeMismatch` as (function, what, text under its span, primary labels,
/// declaration labels, help).
#[derive(Debug)]
struct Mismatch {
    function: String,
    what: String,
    at: String,
    args: Vec<String>,
    decls: Vec<String>,
    help: String,
}

/// The `ArgumentSizeMismatch` errors of `out` (any other error fails the test).
fn mismatches(src: &str, out: &CheckOutput) -> Vec<Mismatch> {
    out.errors
        .iter()
        .map(|e| match e {
            SemanticError::ArgumentSizeMismatch {
                function,
                what,
                args,
                decls,
                help,
                span,
            } => Mismatch {
                function: function.clone(),
                what: what.clone(),
                at: src[span.range()].to_string(),
                args: args.iter().map(|(m, _)| m.clone()).collect(),
                decls: decls.iter().map(|(m, _)| m.clone()).collect(),
                help: help.clone(),
            },
            e => panic!("not a size mismatch of arguments: {e:?}"),
        })
        .collect()
}

/// The single mismatch of `src` with `ints`.
fn one(src: &str, ints: &[(&str, i64)]) -> Mismatch {
    let mut m = mismatches(src, &run_with(src, ints));
    assert_eq!(m.len(), 1, "{m:#?}");
    m.remove(0)
}

fn clean(src: &str, ints: &[(&str, i64)]) {
    let out = run_with(src, ints);
    assert!(out.errors.is_empty(), "{:#?}", out.errors);
}

/// A program with `data` declarations, a parameter `a` with a prior, and `model` statements.
fn prog(data: &str, model: &str) -> String {
    format!("data {{ {data} }}\nparameters {{ real a; }}\nmodel {{ a ~ normal(0, 1); {model} }}")
}

#[test]
fn multi_normal_with_literal_sizes() {
    let src = prog(
        "vector[3] y; vector[2] mu; matrix[2, 2] Sigma;",
        "y ~ multi_normal(mu, Sigma);",
    );
    let m = one(&src, &[]);
    assert_eq!(m.function, "multi_normal");
    assert_eq!(
        m.what,
        "`mu` (location parameter) has 2 elements but `y` (the variate) has 3 elements"
    );
    assert_eq!(m.at, "y");
    assert_eq!(m.args, ["vector[3]", "vector[2]", "matrix[2, 2]"]);
    assert_eq!(
        m.decls,
        [
            "`y` declared with 3 elements",
            "`mu` declared with 2 elements",
            "`Sigma` declared with sizes 2 × 2"
        ]
    );
    assert!(
        m.help.contains("covariance matrix is K × K")
            && m.help
                .contains("declare `y` with size 2 (the size of `mu`)"),
        "{}",
        m.help
    );
    // the same sizes fit
    clean(
        &prog(
            "vector[2] y; vector[2] mu; cov_matrix[2] Sigma;",
            "y ~ multi_normal(mu, Sigma);",
        ),
        &[],
    );
}

#[test]
fn multi_normal_with_sizes_from_the_data() {
    let src = prog(
        "int N; int K; vector[N] y; vector[K] mu; cov_matrix[K] Sigma;",
        "y ~ multi_normal(mu, Sigma);",
    );
    // without the data the sizes are unknown
    clean(&src, &[]);
    clean(&src, &[("N", 4), ("K", 4)]);
    let m = one(&src, &[("N", 3), ("K", 2)]);
    assert_eq!(
        m.what,
        "`mu` (location parameter) has `K` = 2 elements but `y` (the variate) has `N` = 3 \
         elements"
    );
    assert_eq!(m.decls[0], "`y` declared with `N` = 3 elements");
    assert!(m.help.contains("declare `y` with size `K`"), "{}", m.help);
    // the covariance is the odd one out: reported at it, rows and columns
    let m = one(
        &prog(
            "int N; vector[N] y; vector[N] mu; cov_matrix[2] Sigma;",
            "y ~ multi_normal(mu, Sigma);",
        ),
        &[("N", 3)],
    );
    assert_eq!(
        m.what,
        "`y` (the variate) has `N` = 3 elements but `Sigma` (covariance matrix) has 2 rows and \
         2 columns"
    );
    assert_eq!(m.at, "Sigma");
}

#[test]
fn a_covariance_that_is_not_square() {
    let src = prog(
        "vector[2] y; vector[2] mu; matrix[2, 3] S;",
        "y ~ multi_normal(mu, S);",
    );
    let m = one(&src, &[]);
    assert_eq!(
        m.what,
        "`y` (the variate) has 2 elements but `S` (covariance matrix) has 3 columns"
    );
    assert_eq!(m.at, "S");
    // an LKJ variate on its own: rows against columns of one matrix
    let lkj = "parameters { matrix[2, 3] L; }\nmodel { L ~ lkj_corr_cholesky(2); }";
    let m = one(lkj, &[]);
    assert_eq!(m.what, "`L` (the variate) has 2 rows but 3 columns");
    assert!(m.help.contains("declare `L` square"), "{}", m.help);
    clean(
        "parameters { cholesky_factor_corr[3] L; }\nmodel { L ~ lkj_corr_cholesky(2); }",
        &[],
    );
}

#[test]
fn every_multi_normal_form_and_multi_student_t() {
    let data = "vector[3] y; vector[3] mu; cov_matrix[2] S; cholesky_factor_cov[2] L;";
    for (model, function) in [
        ("y ~ multi_normal_cholesky(mu, L);", "multi_normal_cholesky"),
        ("y ~ multi_normal_prec(mu, S);", "multi_normal_prec"),
        ("y ~ multi_student_t(4, mu, S);", "multi_student_t"),
        (
            "target += multi_normal_lpdf(y | mu, S);",
            "multi_normal_lpdf",
        ),
        (
            "target += multi_student_t_lupdf(y | 4, mu, S);",
            "multi_student_t_lupdf",
        ),
    ] {
        let m = one(&prog(data, model), &[]);
        assert_eq!(m.function, function);
        assert!(m.what.ends_with("has 2 rows and 2 columns"), "{}", m.what);
    }
    // `_rng`: the location against the covariance, in generated quantities
    let src = "data { vector[3] mu; cov_matrix[2] S; }\nparameters { real a; }\n\
               model { a ~ normal(0, 1); }\n\
               generated quantities { vector[3] z = multi_normal_rng(mu, S); }";
    let m = one(src, &[]);
    assert_eq!(m.function, "multi_normal_rng");
    assert_eq!(
        m.what,
        "`mu` (location parameter) has 3 elements but `S` (covariance matrix) has 2 rows and 2 \
         columns"
    );
}

#[test]
fn arrays_of_vectors_and_broadcasting() {
    let data = "int N; array[N] vector[2] y; array[4] vector[2] mu; vector[2] m; \
                cov_matrix[2] S;";
    // one location for every observation: fine
    clean(&prog(data, "y ~ multi_normal(m, S);"), &[("N", 5)]);
    clean(&prog(data, "y ~ multi_normal(mu, S);"), &[("N", 4)]);
    let m = one(&prog(data, "y ~ multi_normal(mu, S);"), &[("N", 5)]);
    assert_eq!(
        m.what,
        "`y` (the variate) has `N` = 5 vectors but `mu` (location parameter) has 4 vectors"
    );
    assert!(
        m.help
            .contains("declare `mu` with size `N` (the array length of `y`)")
    );
}

#[test]
fn dirichlet_wishart_and_the_categorical_families() {
    let m = one(
        "data { vector[4] alpha; }\nparameters { simplex[3] theta; }\n\
         model { theta ~ dirichlet(alpha); }",
        &[],
    );
    assert_eq!(
        m.what,
        "`theta` (the variate) has 3 elements but `alpha` (prior sample sizes) has 4 elements"
    );
    assert_eq!(m.at, "alpha");
    assert!(m.help.contains("one prior sample size in α per category"));
    let m = one(
        "data { cov_matrix[2] S; }\nparameters { cov_matrix[3] W; }\n\
         model { W ~ wishart(4, S); }",
        &[],
    );
    assert_eq!(
        m.what,
        "`W` (the variate) has 3 rows but `S` (scale parameter) has 2 rows and 2 columns"
    );
    assert_eq!(m.at, "S");
    // ordered logistic: one location and one set of cut-points per outcome
    let ord = prog(
        "int N; int M; array[N] int<lower=1, upper=3> k; vector[N] eta; \
         array[M] vector[2] c;",
        "k ~ ordered_logistic(eta, c);",
    );
    clean(&ord, &[("N", 5), ("M", 5)]);
    let m = one(&ord, &[("N", 5), ("M", 4)]);
    assert_eq!(m.at, "c");
    assert_eq!(
        m.what,
        "`k` (the variate) has `N` = 5 elements but `c` (cut-points) has `M` = 4 vectors"
    );
    // categorical_logit with a matrix: one row of log odds per outcome
    let cat = prog(
        "int N; array[N] int<lower=1, upper=3> y; matrix[4, 3] B;",
        "y ~ categorical_logit(B);",
    );
    clean(&cat, &[("N", 4)]);
    assert_eq!(one(&cat, &[("N", 6)]).at, "B");
}

#[test]
fn glms_rows_and_columns() {
    let src = prog(
        "int N; int K; array[N] int<lower=0> y; matrix[N, K] x; vector[3] beta; vector[N] al;",
        "y ~ poisson_log_glm(x, 0.5, beta); y ~ bernoulli_logit_glm(x, al, beta);",
    );
    clean(&src, &[("N", 10), ("K", 3)]);
    // K = 4: both statements, each at `beta`
    let m = mismatches(&src, &run_with(&src, &[("N", 10), ("K", 4)]));
    assert_eq!(m.len(), 2, "{m:#?}");
    for x in &m {
        assert_eq!(x.at, "beta");
        assert_eq!(
            x.what,
            "`x` (matrix of independent variables) has `K` = 4 columns but `beta` (weight \
             vector) has 3 elements"
        );
    }
    // a transposed design (x is K × N) breaks both of its relations: reported once, at `x`
    let t = prog(
        "array[10] int<lower=0> y; matrix[3, 10] x; vector[3] beta;",
        "y ~ poisson_log_glm(x, 0.5, beta);",
    );
    let m = one(&t, &[]);
    assert_eq!(m.at, "x");
    // categorical_logit_glm: α has one element per column of β (a tie: the earlier argument
    // sets the size)
    let cg = prog(
        "array[10] int<lower=1, upper=3> y; matrix[10, 2] x; vector[4] alpha; \
         matrix[2, 3] beta;",
        "y ~ categorical_logit_glm(x, alpha, beta);",
    );
    let m = one(&cg, &[]);
    assert_eq!(
        m.what,
        "`alpha` (intercept) has 4 elements but `beta` (matrix of weights) has 3 columns"
    );
    assert_eq!(m.at, "beta");
}

#[test]
fn independent_errors_are_all_reported_without_cascades() {
    // two statements, two unrelated mismatches: both; the bad `_rng` draw is reported at the
    // call, not again at the declaration it initialises
    let src = "data { vector[3] y; vector[2] mu; cov_matrix[2] S; simplex[3] t; vector[4] al; }\n\
               parameters { real a; }\n\
               model { a ~ normal(0, 1); y ~ multi_normal(mu, S); t ~ dirichlet(al); }\n\
               generated quantities { vector[2] z = multi_normal_rng(y, S); \
               vector[3] w = multi_normal_rng(mu, S); }";
    let out = run_with(src, &[]);
    let ats: Vec<String> = out
        .errors
        .iter()
        .map(|e| format!("{}: {}", &src[e.span().range()], e))
        .collect();
    assert_eq!(out.errors.len(), 4, "{ats:#?}");
    assert!(ats[0].starts_with("y: size mismatch in the arguments of `multi_normal`"));
    assert!(ats[1].starts_with("al: size mismatch in the arguments of `dirichlet`"));
    assert!(ats[2].contains("`multi_normal_rng`"), "{ats:#?}");
    // `vector[3] w` = a draw of 2 elements: a declaration of the wrong size
    assert!(
        ats[3].starts_with("multi_normal_rng(mu, S): size mismatch in the declaration of `w`"),
        "{ats:#?}"
    );
}

#[test]
fn only_in_code_known_to_run() {
    let body = |guard: &str| {
        prog(
            "int N; int M; vector[N] y; vector[M] mu; cov_matrix[M] S; real x;",
            &format!("if ({guard}) y ~ multi_normal(mu, S);"),
        )
    };
    let ints = [("N", 3), ("M", 2)];
    assert_eq!(one(&body("N > 1"), &ints).at, "y");
    clean(&body("N > 5"), &ints);
    // a condition on a parameter or on real data is unknown: nothing reported
    clean(&body("a > 0"), &ints);
    clean(&body("x > 0.5"), &ints);
}
