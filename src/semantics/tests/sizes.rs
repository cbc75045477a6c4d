//! Checker tests: sizes known before evaluation (literal sizes and `int` data given to
//! `check_with_data`), the Jacobian warning through transformed parameters and locals, and the
//! help of a non-integer index (session 18, tester findings 1–3).

use std::collections::HashMap;

use super::*;

/// `check_with_data` of `src` with the `int` data `ints`.
fn run_with(src: &str, ints: &[(&str, i64)]) -> CheckOutput {
    let program = parse_program(src, 0).unwrap_or_else(|e| panic!("test model parses: {e}"));
    let ints: HashMap<String, i64> = ints.iter().map(|(n, v)| (n.to_string(), *v)).collect();
    check_with_data(&program, ints)
}

/// The source text under `span` in `src`.
fn text(src: &str, span: crate::syntax::span::Span) -> &str {
    &src[span.range()]
}

/// `(what, sizes, operand labels)` of the single `SizeMismatch` of `out`, with the text under
/// its primary span.
fn mismatch(src: &str, out: &CheckOutput) -> (String, String, String, Vec<String>) {
    assert_eq!(out.errors.len(), 1, "{:#?}", out.errors);
    match &out.errors[0] {
        SemanticError::SizeMismatch {
            what,
            sizes,
            operands,
            span,
            ..
        } => (
            what.clone(),
            sizes.clone(),
            text(src, *span).to_string(),
            operands.iter().map(|(m, _)| m.clone()).collect(),
        ),
        e => panic!("{e:?}"),
    }
}

const REGRESSION: &str = "data { int N; int K; matrix[N, K] X; vector[N] y; }\n\
     parameters { vector[6] beta; real<lower=0> sigma; }\n\
     model { beta ~ normal(0, 1); sigma ~ exponential(1); y ~ normal(X * beta, sigma); }";

#[test]
fn matrix_times_vector_with_sizes_from_the_data() {
    // without data the columns of X are unknown: no error
    assert!(run(REGRESSION).errors.is_empty());
    // with K = 7 from the data: the product cannot fit, reported at `X * beta`
    let out = run_with(REGRESSION, &[("N", 10), ("K", 7)]);
    let (what, sizes, at, labels) = mismatch(REGRESSION, &out);
    assert_eq!(what, "`X` has 7 columns but `beta` has 6 rows");
    assert_eq!(sizes, "matrix[10, 7] times vector[6]");
    assert_eq!(at, "X * beta");
    assert_eq!(
        labels,
        [
            "`X` declared with `K` = 7 columns",
            "`beta` declared with 6 rows"
        ]
    );
    match &out.errors[0] {
        SemanticError::SizeMismatch { help, .. } => {
            assert!(help.contains("declare `vector[K] beta;`"), "{help}")
        }
        e => panic!("{e:?}"),
    }
    // K = 6 fits
    assert!(
        run_with(REGRESSION, &[("N", 10), ("K", 6)])
            .errors
            .is_empty()
    );
}

#[test]
fn literal_sizes_mismatch_without_data() {
    let src = "data { int N; matrix[N, 7] X; } parameters { vector[6] beta; }\n\
               model { beta ~ normal(0, 1); } generated quantities { vector[N] mu = X * beta; }";
    let (what, sizes, at, _) = mismatch(src, &run(src));
    assert_eq!(what, "`X` has 7 columns but `beta` has 6 rows");
    assert_eq!(sizes, "matrix[?, 7] times vector[6]");
    assert_eq!(at, "X * beta");
}

#[test]
fn products_rows_loops_and_transposes() {
    let decls = "data { int N; matrix[N, 7] X; matrix[2, 3] A; matrix[4, 2] B; } \
                 parameters { vector[6] beta; }";
    for (expr, what) in [
        ("A * B", "`A` has 3 columns but `B` has 4 rows"),
        ("X[1] * beta", "`X[1]` has 7 columns but `beta` has 6 rows"),
        (
            "X[2:3] * beta",
            "`X[2:3]` has 7 columns but `beta` has 6 rows",
        ),
        ("A' * B", "`A'` has 2 columns but `B` has 4 rows"),
    ] {
        let src = format!(
            "{decls} model {{ beta ~ normal(0, 1); }} generated quantities {{ {{ \
             print({expr}); }} }}"
        );
        let (w, ..) = mismatch(&src, &run(&src));
        assert_eq!(w, what, "{expr}");
    }
    // a loop variable is an `int` position: `X[n]` is a row vector of 7; the loop runs when
    // N >= 1 (without the data it may not run: not reported)
    let src =
        format!("{decls} model {{ beta ~ normal(0, 1); for (n in 1:N) target += X[n] * beta; }}");
    assert!(run(&src).errors.is_empty());
    assert!(run_with(&src, &[("N", 0)]).errors.is_empty());
    let (w, _, at, _) = mismatch(&src, &run_with(&src, &[("N", 2)]));
    assert_eq!(
        (w.as_str(), at.as_str()),
        ("`X[n]` has 7 columns but `beta` has 6 rows", "X[n] * beta")
    );
    // these fit, or their sizes are unknown: no error
    for expr in [
        "B * A",
        "A * A'",
        "beta * beta'",
        "beta' * beta",
        "X[:, 1:6] * beta",
        "X * append_row(beta, 1)",
    ] {
        let src = format!(
            "{decls} model {{ beta ~ normal(0, 1); }} generated quantities {{ {{ print({expr}); }} }}"
        );
        let out = run(&src);
        assert!(out.errors.is_empty(), "{expr}: {:#?}", out.errors);
    }
}

#[test]
fn elementwise_dot_products_and_indexes_with_data() {
    let src = "data { int N; vector[N] a; vector[6] b; matrix[N, 2] M; } \
               parameters { real mu; } model { mu ~ normal(0, 1); } \
               generated quantities { vector[N] s = a + b; vector[N] p = a .* b; \
               real d = dot_product(a, b); real e = a[11]; }";
    assert!(run(src).errors.is_empty(), "N unknown without data");
    let out = run_with(src, &[("N", 10)]);
    let got: Vec<String> = out.errors.iter().map(|e| e.to_string()).collect();
    assert_eq!(
        got,
        [
            "size mismatch in `a + b`: `a` has size 10 but `b` has size 6",
            "size mismatch in `a .* b`: `a` has size 10 but `b` has size 6",
            "size mismatch in `dot_product(a, b)`: `a` has 10 elements but `b` has 6 elements",
            "index 11 is out of range for `a`, whose size there is 10: indexes run from 1 to 10",
        ]
    );
    assert!(
        run_with(src, &[("N", 6)]).errors.len() == 1,
        "only a[11] is left"
    );
    // literal sizes: dot products without data
    let lit = "parameters { vector[3] a; vector[4] b; } model { a ~ normal(0, 1); \
               b ~ normal(0, 1); target += squared_distance(a, b); }";
    let (w, ..) = mismatch(lit, &run(lit));
    assert_eq!(w, "`a` has 3 elements but `b` has 4 elements");
}

#[test]
fn transformed_data_sizes_count_after_their_block() {
    let src = "data { int N; matrix[N, 6] X; } transformed data { int K = cols(X) + 1; } \
               parameters { vector[K] beta; } model { beta ~ normal(0, 1); \
               target += sum(X * beta); }";
    let out = run_with(src, &[("N", 5), ("K", 7)]);
    let (w, ..) = mismatch(src, &out);
    assert_eq!(w, "`X` has 6 columns but `beta` has 7 rows");
    // `K` is set once from known sizes: known without its value from the data (session 19)
    let (w, ..) = mismatch(src, &run(src));
    assert_eq!(w, "`X` has 6 columns but `beta` has 7 rows");
    // …but not when it is assigned again
    let again = src.replace("int K = cols(X) + 1;", "int K = cols(X) + 1; K = K * 1;");
    assert!(run_with(&again, &[("N", 5)]).errors.is_empty());
    let (w, ..) = mismatch(&again, &run_with(&again, &[("N", 5), ("K", 7)]));
    assert_eq!(w, "`X` has 6 columns but `beta` has 7 rows");
    // `rows`/`cols` of a variable of known sizes are known sizes too
    let src = "data { int N; matrix[N, 6] X; } parameters { vector[cols(X) + 1] beta; } \
               model { beta ~ normal(0, 1); target += sum(X * beta); }";
    let (w, ..) = mismatch(src, &run(src));
    assert_eq!(w, "`X` has 6 columns but `beta` has 7 rows");
}

#[test]
fn function_arguments_never_take_data_sizes() {
    // `N` is the argument here, not the data's 2: `M * z` is not known to fail
    let src = "functions { vector f(int N, vector b) { vector[N] z = b; matrix[2, 3] M; \
               return M * z; } } data { int N; } parameters { real mu; } \
               model { mu ~ normal(0, 1); }";
    assert!(run_with(src, &[("N", 2)]).errors.is_empty());
}

// ----- the Jacobian warning through transformed parameters and locals ------------------------

#[test]
fn nonlinear_values_warn_through_transformed_parameters_and_locals() {
    let nonlinear = |src: &str| -> Vec<Option<String>> {
        run(src)
            .warnings
            .into_iter()
            .filter_map(|w| match w {
                Warning::NonLinearLhs { via, .. } => Some(via.map(|(n, _)| n)),
                _ => None,
            })
            .collect()
    };
    // the tester's case, written through a transformed parameter or a local
    let tp = "parameters { real<lower=0> s; } transformed parameters { real ls = log(s); } \
              model { ls ~ normal(0, 1); }";
    assert_eq!(nonlinear(tp), [Some("ls".to_string())]);
    let local = "parameters { real<lower=0> s; } model { real ls; ls = log(s); \
                 ls ~ normal(0, 1); }";
    assert_eq!(nonlinear(local), [Some("ls".to_string())]);
    let compound = "parameters { real<lower=0> s; real a; } model { real v = a; v *= s; \
                    v ~ normal(0, 1); a ~ normal(0, 1); }";
    assert_eq!(nonlinear(compound), [Some("v".to_string())]);
    let element = "parameters { vector<lower=0>[2] s; } transformed parameters { vector[2] e; \
                   e[1] = exp(s[1]); e[2] = s[2]; } model { e[1] ~ normal(0, 1); }";
    assert_eq!(nonlinear(element), [Some("e".to_string())]);
    // linear values need no Jacobian: no warning
    for src in [
        "data { vector[3] x; } parameters { real a; real b; } transformed parameters { \
         vector[3] m = a + b * x; } model { m ~ normal(0, 1); }",
        "parameters { real a; } model { real c = 2 * a - 1; c ~ normal(0, 1); }",
        "parameters { real<offset=1, multiplier=2> z; } model { z ~ normal(1, 2); }",
        "data { real y; } parameters { real a; } model { real ly = log(y); \
         ly ~ normal(a, 1); a ~ normal(0, 1); }",
        // a residual reads data: `err ~ …` is the likelihood of `y` (MA(1), no Jacobian)
        "data { int T; vector[T] y; } parameters { real mu; real theta; } model { \
         vector[T] err; err[1] = y[1] - mu; for (t in 2:T) { \
         err[t] = y[t] - mu - theta * err[t - 1]; } err ~ normal(0, 1); }",
    ] {
        assert!(nonlinear(src).is_empty(), "{src}");
    }
}

// ----- a non-integer index -------------------------------------------------------------------

#[test]
fn a_real_index_says_which_integer_to_write() {
    let help = |ix: &str| {
        let src = format!(
            "data {{ real w; }} parameters {{ vector[3] beta; }} model {{ beta ~ normal(0, 1); \
             target += beta[{ix}]; }}"
        );
        match one_error(&src) {
            SemanticError::NonIntIndex { help, found, .. } => {
                assert_eq!(found, "real");
                help
            }
            e => panic!("{e:?}"),
        }
    };
    let h = help("1.5");
    assert!(h.contains("e.g. `1` or `2`") && !h.contains("range"), "{h}");
    assert!(help("2.0").contains("write `2` (without the decimal point)"));
    assert!(help("w").contains("declare `w` as `int`"));
    assert!(help("w * 2").contains("`int` arithmetic"));
}

// ----- session 19: distribution arguments, declared sizes, negative sizes, calls ------------

/// The texts of the errors of `out`.
fn messages(out: &CheckOutput) -> Vec<String> {
    out.errors.iter().map(|e| e.to_string()).collect()
}

/// `(what, argument labels, declaration labels)` of the single `ArgumentSizeMismatch` of
/// `out`, each argument label with the text under it.
type ArgReport = (String, Vec<(String, String)>, Vec<String>);
fn argument_mismatch(src: &str, out: &CheckOutput) -> ArgReport {
    assert_eq!(out.errors.len(), 1, "{:#?}", out.errors);
    match &out.errors[0] {
        SemanticError::ArgumentSizeMismatch {
            what, args, decls, ..
        } => (
            what.clone(),
            args.iter()
                .map(|(m, s)| (m.clone(), text(src, *s).to_string()))
                .collect(),
            decls.iter().map(|(m, _)| m.clone()).collect(),
        ),
        e => panic!("{e:?}"),
    }
}

#[test]
fn distribution_arguments_must_agree_in_size() {
    // the tester's model: N = 4 from the data, `s` of 3 against `beta` (and `y`) of 4
    let tester = "data { int N; vector[N] y; vector[3] s; } parameters { vector[4] beta; } \
                  model { y ~ normal(beta, s); }";
    let (what, args, decls) = argument_mismatch(tester, &run_with(tester, &[("N", 4)]));
    assert_eq!(
        what,
        "`y` (the variate) has 4 elements but `s` (scale parameter) has 3"
    );
    assert_eq!(
        args,
        [
            ("vector[3]".to_string(), "s".to_string()),
            ("vector[4]".to_string(), "y".to_string())
        ]
    );
    assert_eq!(
        decls,
        [
            "`s` declared with 3 elements",
            "`y` declared with `N` = 4 elements"
        ]
    );
    match &run_with(tester, &[("N", 4)]).errors[0] {
        SemanticError::ArgumentSizeMismatch { help, .. } => {
            assert!(help.contains("declare `vector[N] s`"), "{help}")
        }
        e => panic!("{e:?}"),
    }
    // sizes known only from the data: the same through `_lpdf`, `_lcdf` and `_rng`
    let data = "data { int N; int K; vector[N] y; vector[K] s; } parameters { real mu; } \
                model { mu ~ normal(0, 1); target += normal_lpdf(y | mu, s); \
                target += normal_lcdf(y | mu, s); } \
                generated quantities { array[N] real r = normal_rng(y, s); }";
    assert!(run(data).errors.is_empty(), "{:#?}", run(data).errors);
    assert!(run_with(data, &[("N", 4), ("K", 4)]).errors.is_empty());
    assert_eq!(
        messages(&run_with(data, &[("N", 4), ("K", 3)])),
        [
            "size mismatch in the arguments of `normal_lpdf`: `y` (the variate) has 4 elements \
             but `s` (scale parameter) has 3",
            "size mismatch in the arguments of `normal_lcdf`: `y` (the variate) has 4 elements \
             but `s` (scale parameter) has 3",
            "size mismatch in the arguments of `normal_rng`: `y` (location parameter) has 4 \
             elements but `s` (scale parameter) has 3",
        ]
    );
    // the odd one out is the size most arguments disagree with; expressions are followed
    let src = "data { int N; int K; matrix[N, K] X; vector[N] y; array[N] int k; } \
               parameters { vector[K] beta; vector[K] tau; } \
               model { beta ~ normal(0, 1); tau ~ normal(0, 1); \
               y ~ student_t(3, X * beta, exp(tau)); k ~ poisson_log(X * beta); }";
    let (what, args, _) = argument_mismatch(src, &run_with(src, &[("N", 10), ("K", 3)]));
    assert_eq!(
        what,
        "`y` (the variate) has 10 elements but `exp(tau)` (scale parameter) has 3"
    );
    assert_eq!(args[0], ("vector[3]".to_string(), "exp(tau)".to_string()));
}

#[test]
fn valid_vectorised_arguments_still_pass() {
    // scalars are shared; vectors, row vectors and arrays of the same size pair up;
    // sizes not known before evaluation are never reported
    let src = "data { int N; int K; matrix[N, K] X; vector[N] y; array[N] real ya; \
               row_vector[N] yr; array[N] int k; array[N] int idx; } \
               transformed data { int M = N - 1; } \
               parameters { real alpha; vector[K] beta; real<lower=0> sigma; } \
               model { vector[N] mu = alpha + X * beta; alpha ~ normal(0, 1); \
               beta ~ normal(0, 1); sigma ~ exponential(1); \
               y ~ normal(mu, sigma); ya ~ normal(mu, sigma); yr ~ normal(mu', sigma); \
               y ~ normal(mu', 1); yr ~ normal(mu, rep_vector(1, N)); \
               y[2:N] ~ normal(alpha + 0.5 * y[1:(N - 1)], sigma); \
               head(y, M) ~ normal(tail(mu, M), sigma); segment(y, 2, K) ~ normal(beta, 1); \
               to_vector(X) ~ normal(0, 1); k ~ poisson_log(mu); k ~ binomial(k, inv_logit(mu)); \
               y[idx] ~ normal(mu[idx], sigma); \
               for (n in 1:N) y[n] ~ normal(mu[n], sigma); \
               target += normal_lpdf(append_row(y, 1) | append_row(mu, alpha), sigma); }";
    for ints in [
        &[][..],
        &[("N", 5), ("K", 3)][..],
        &[("N", 2), ("K", 1)][..],
    ] {
        let out = run_with(src, ints);
        assert!(out.errors.is_empty(), "{ints:?}: {:#?}", out.errors);
    }
}

#[test]
fn declared_sizes_from_the_data_and_transformed_data() {
    // the tester's case: `b` has N = 3 from the data
    let src = "data { int N; vector[N] b; } transformed data { vector[2] c = b; } \
               parameters { real mu; } model { mu ~ normal(sum(c), 1); }";
    assert!(run(src).errors.is_empty());
    let out = run_with(src, &[("N", 3)]);
    assert_eq!(
        messages(&out),
        ["size mismatch in the declaration of `c`: `c` is vector[2] but `b` is vector[3]"]
    );
    match &out.errors[0] {
        SemanticError::AssignedSizeMismatch {
            decls, help, span, ..
        } => {
            assert_eq!(text(src, *span), "b");
            let labels: Vec<&str> = decls.iter().map(|(m, _)| m.as_str()).collect();
            assert_eq!(
                labels,
                [
                    "`c` declared with 2 elements",
                    "`b` declared with `N` = 3 elements"
                ]
            );
            assert!(help.contains("e.g. `head(b, 2)`"), "{help}");
        }
        e => panic!("{e:?}"),
    }
    assert!(run_with(src, &[("N", 2)]).errors.is_empty());
    // transformed data sizes set once from the data are known in and after their block
    let td = "data { int N; vector[N] y; } transformed data { int M = N + 1; \
              vector[M] z = rep_vector(0, M); vector[N] w; w = z; } \
              parameters { real mu; } model { y ~ normal(z + mu, 1); mu ~ normal(0, 1); }";
    assert!(run(td).errors.is_empty());
    assert_eq!(
        messages(&run_with(td, &[("N", 3)])),
        [
            "size mismatch in the assignment to `w`: `w` is vector[3] but `z` is vector[4]",
            "size mismatch in the arguments of `normal`: `y` (the variate) has 3 elements but \
             `z + mu` (location parameter) has 4",
        ]
    );
    // matrices, indexed targets and compound assignments
    let m = "data { int N; matrix[N, 3] X; } transformed data { matrix[3, 3] S = tcrossprod(X); \
             matrix[N, 3] Y = X; Y[1:2] = X; Y += X'; } parameters { real mu; } \
             model { mu ~ normal(0, 1); }";
    assert_eq!(
        messages(&run_with(m, &[("N", 4)])),
        [
            "size mismatch in the declaration of `S`: `S` is matrix[3, 3] but `tcrossprod(X)` is \
             matrix[4, 4]",
            "size mismatch in the assignment to `Y[1:2]`: `Y[1:2]` is matrix[2, 3] but `X` is \
             matrix[4, 3]",
            "size mismatch in the assignment to `Y`: `Y` is matrix[4, 3] but `X'` is \
             matrix[3, 4]",
        ]
    );
    // `int`s assigned after their declaration are not followed
    let reassigned = "data { int N; vector[N] y; } transformed data { int M = 2; M = N; \
                      vector[M] z = y; } parameters { real mu; } \
                      model { mu ~ normal(0, 1); }";
    assert!(run_with(reassigned, &[("N", 3)]).errors.is_empty());
}

#[test]
fn negative_sizes_are_errors_where_known() {
    let lit = "parameters { vector[-1] v; real mu; } model { mu ~ normal(0, 1); \
               v ~ normal(0, 1); }";
    let out = run(lit);
    assert_eq!(
        messages(&out),
        ["`v` is declared with size -1, but a size must be 0 or more"]
    );
    match &out.errors[0] {
        SemanticError::NegativeSize { span, sources, .. } => {
            assert_eq!(text(lit, *span), "-1");
            assert!(sources.is_empty());
        }
        e => panic!("{e:?}"),
    }
    let data = "data { int N; } parameters { vector[N - 5] w; real mu; } \
                model { mu ~ normal(0, 1); w ~ normal(0, 1); }";
    assert!(run(data).errors.is_empty());
    assert!(
        run_with(data, &[("N", 5)]).errors.is_empty(),
        "size 0 is allowed"
    );
    let out = run_with(data, &[("N", 3)]);
    assert_eq!(
        messages(&out),
        ["`w` is declared with size `N - 5` = -2, but a size must be 0 or more"]
    );
    match &out.errors[0] {
        SemanticError::NegativeSize { span, sources, .. } => {
            assert_eq!(text(data, *span), "N - 5");
            let labels: Vec<&str> = sources.iter().map(|(m, _)| m.as_str()).collect();
            assert_eq!(labels, ["`N` is 3 in the data"]);
        }
        e => panic!("{e:?}"),
    }
    // locals and matrices too
    let local = "data { int N; } parameters { real mu; } model { matrix[2, N - 4] m; \
                 mu ~ normal(0, 1); }";
    assert_eq!(run_with(local, &[("N", 1)]).errors.len(), 1);
}

#[test]
fn sizes_through_calls_ternaries_and_user_functions() {
    let decls = "functions { vector three() { vector[3] r = rep_vector(0, 3); return r; } \
                 vector same(vector v) { return 2 * v; } \
                 vector either(int c) { if (c) return rep_vector(0, 2); \
                 return rep_vector(0, 3); } } \
                 data { int N; vector[N] y; vector[4] a; real c; } parameters { real mu; }";
    let wrong = [
        (
            "head(y, 2) + a",
            "`head(y, 2)` has size 2 but `a` has size 4",
        ),
        (
            "segment(a, 2, 2) + a",
            "`segment(a, 2, 2)` has size 2 but `a` has size 4",
        ),
        (
            "tail(a, 3) + a",
            "`tail(a, 3)` has size 3 but `a` has size 4",
        ),
        (
            "rep_vector(1, 3) + a",
            "`rep_vector(1, 3)` has size 3 but `a` has size 4",
        ),
        (
            "append_row(a, 1) + a",
            "`append_row(a, 1)` has size 5 but `a` has size 4",
        ),
        (
            "append_row(y, a) + a",
            "`append_row(y, a)` has size 9 but `a` has size 4",
        ),
        (
            "(c > 0 ? y : 2 * y) + a",
            "`(c > 0) ? y : (2 * y)` has size 5 but `a` has size 4",
        ),
        ("three() + a", "`three()` has size 3 but `a` has size 4"),
        ("exp(y) + a", "`exp(y)` has size 5 but `a` has size 4"),
    ];
    for (expr, what) in wrong {
        let src = format!(
            "{decls} model {{ mu ~ normal(0, 1); }} generated quantities {{ {{ print({expr}); }} }}"
        );
        let out = run_with(&src, &[("N", 5)]);
        let (w, ..) = mismatch(&src, &out);
        assert_eq!(w, what, "{expr}");
    }
    // unknown sizes are never reported: they must pass
    for expr in [
        "(c > 0 ? head(a, 3) : a) + a",
        "same(y) + a",
        "either(1) + a",
        "head(y, 4) + a",
        "append_row(head(y, 3), 1) + a",
        "rep_vector(1, N - 1) + a",
    ] {
        let src = format!(
            "{decls} model {{ mu ~ normal(0, 1); }} generated quantities {{ {{ print({expr}); }} }}"
        );
        let out = run_with(&src, &[("N", 5)]);
        assert!(out.errors.is_empty(), "{expr}: {:#?}", out.errors);
    }
}

// ----- the Jacobian warning on linear functions ----------------------------------------------

#[test]
fn linear_functions_of_parameters_need_no_jacobian() {
    let jacobian = |model: &str| -> usize {
        let src = format!(
            "data {{ int N; vector[N] x; }} parameters {{ vector[N] phi; real<lower=0> s; \
             vector<lower=0>[3] v; real a; }} model {{ phi ~ normal(0, 1); s ~ exponential(1); \
             v ~ exponential(1); a ~ normal(0, 1); {model} }}"
        );
        run(&src)
            .warnings
            .iter()
            .filter(|w| matches!(w, Warning::NonLinearLhs { .. }))
            .count()
    };
    // the ICAR soft sum-to-zero constraint and other affine maps
    for lhs in [
        "sum(phi) ~ normal(0, 0.001 * N);",
        "mean(v) ~ normal(0, 1);",
        "dot_product(x, phi) ~ normal(0, 1);",
        "sum(phi) / N - 2 * a + 1 ~ normal(0, 1);",
        "mean(phi - a) ~ normal(0, 1);",
        "cumulative_sum(phi) ~ normal(0, 1);",
        "rep_vector(a, 3) - v ~ normal(0, 1);",
        "real t = sum(phi) + a; t ~ normal(0, 1);",
    ] {
        assert_eq!(jacobian(lhs), 0, "{lhs}");
    }
    // non-linear ones still warn
    for lhs in [
        "log(s) ~ normal(0, 1);",
        "exp(a) ~ normal(0, 1);",
        "square(a) ~ normal(0, 1);",
        "a * s ~ normal(0, 1);",
        "sum(exp(phi)) ~ normal(0, 1);",
        "dot_product(phi, phi) ~ normal(0, 1);",
        "mean(v * a) ~ normal(0, 1);",
        "real ls = log(s); ls ~ normal(0, 1);",
        "sum(phi) / a ~ normal(0, 1);",
    ] {
        assert_eq!(jacobian(lhs), 1, "{lhs}");
    }
}

#[test]
fn sizes_inside_conditions_are_not_reported() {
    // an optional vector of size 0 or N, used only when present: the branch never runs with
    // sizes that disagree, so nothing is reported there
    let src = "data { int N; int N_s; vector[N] y; vector[N_s] s; } \
               parameters { real mu; real<lower=0> sigma; } \
               model { mu ~ normal(0, 1); sigma ~ exponential(1); \
               if (N_s > 0) { y ~ normal(mu, s); vector[N] t = s; } else y ~ normal(mu, sigma); \
               while (N_s > N) { vector[N - N_s] d; break; } }";
    let out = run_with(src, &[("N", 4), ("N_s", 0)]);
    assert!(out.errors.is_empty(), "{:#?}", out.errors);
    // the same statements unguarded are errors
    let bare = "data { int N; int N_s; vector[N] y; vector[N_s] s; } parameters { real mu; } \
                model { mu ~ normal(0, 1); y ~ normal(mu, s); }";
    assert_eq!(run_with(bare, &[("N", 4), ("N_s", 0)]).errors.len(), 1);
}

#[test]
fn counts_computed_in_transformed_data_size_later_declarations() {
    // `n_pos` is counted in a loop: its value is known once `transformed data` has run (the
    // second data pass gives it), and no assignment follows the declaration of `y_pos`
    let src = "data { int N; vector[N] y; } transformed data { int n_pos = 0; \
               for (n in 1:N) if (y[n] > 0) n_pos += 1; vector[n_pos] y_pos; } \
               parameters { vector[3] mu; } model { mu ~ normal(0, 1); \
               y_pos ~ normal(mu, 1); }";
    assert!(run_with(src, &[("N", 5)]).errors.is_empty());
    assert!(run_with(src, &[("N", 5), ("n_pos", 3)]).errors.is_empty());
    assert_eq!(
        messages(&run_with(src, &[("N", 5), ("n_pos", 4)])),
        [
            "size mismatch in the arguments of `normal`: `y_pos` (the variate) has 4 elements \
             but `mu` (location parameter) has 3"
        ]
    );
    // assigned again after the declaration: its final value is not the size, nothing known
    let later = "data { int N; } transformed data { int M = 2; vector[M] z = rep_vector(0, 2); \
                 M = 5; } parameters { vector[5] mu; } model { mu ~ normal(0, 1); \
                 z ~ normal(0, 1); target += normal_lpdf(z | mu[1:2], 1); }";
    assert!(run_with(later, &[("N", 1), ("M", 5)]).errors.is_empty());
}
