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
    // a loop variable is an `int` position: `X[n]` is a row vector of 7
    let src =
        format!("{decls} model {{ beta ~ normal(0, 1); for (n in 1:N) target += X[n] * beta; }}");
    let (w, _, at, _) = mismatch(&src, &run(&src));
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
    assert!(run_with(src, &[("N", 5)]).errors.is_empty());
    let out = run_with(src, &[("N", 5), ("K", 7)]);
    let (w, ..) = mismatch(src, &out);
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
