//! Checker tests: known-size errors are reported in code that runs, not in branches, loops
//! and operands that the data show never run, nor where that is unknown (session 19, tester
//! findings: the optional-data idiom and `if (N > 1)` with N = 3).

use std::collections::HashMap;

use super::*;

/// `check_with_data` of `src` with the `int` data `ints`: the messages of its errors.
fn errors(src: &str, ints: &[(&str, i64)]) -> Vec<String> {
    let program = parse_program(src, 0).unwrap_or_else(|e| panic!("test model parses: {e}"));
    let ints: HashMap<String, i64> = ints.iter().map(|(n, v)| (n.to_string(), *v)).collect();
    check_with_data(&program, ints)
        .errors
        .iter()
        .map(|e| e.to_string())
        .collect()
}

const HEAD: &str = "data { int N; vector[N] y; int<lower=0> M; vector[M] z; }\n\
                    parameters { real mu; }\n";

fn model(body: &str) -> String {
    format!("{HEAD}model {{ mu ~ normal(0, 10); y ~ normal(mu, 1); {body} }}")
}

#[test]
fn optional_data_guarded_by_its_count_is_valid() {
    let src = model("if (M > 0) { z[1] ~ normal(mu, 1); }");
    assert_eq!(errors(&src, &[("N", 3), ("M", 0)]), Vec::<String>::new());
    // the same index unguarded runs, and fails
    let bare = model("z[1] ~ normal(mu, 1);");
    let e = errors(&bare, &[("N", 3), ("M", 0)]);
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(e[0].contains("index 1 is out of range for `z`"), "{e:?}");
    // the else branch runs when the condition is false
    let other = model("if (M > 0) { mu ~ normal(0, 1); } else { z[1] ~ normal(mu, 1); }");
    assert_eq!(errors(&other, &[("N", 3), ("M", 0)]).len(), 1);
    assert_eq!(errors(&other, &[("N", 3), ("M", 2)]), Vec::<String>::new());
    // a condition on parameters is unknown: nothing reported in either branch
    let unknown = model("if (mu > 0) { z[1] ~ normal(mu, 1); } else { z[2] ~ normal(mu, 1); }");
    assert_eq!(
        errors(&unknown, &[("N", 3), ("M", 0)]),
        Vec::<String>::new()
    );
    // `&&`, `||` and `?:` evaluate an operand only when it is chosen
    let ops = model(
        "if (M > 0 && z[1] > 0) mu ~ normal(0, 1); if (M == 0 || z[1] > 0) \
                     mu ~ normal(0, 1); target += M > 0 ? z[1] : 0;",
    );
    assert_eq!(errors(&ops, &[("N", 3), ("M", 0)]), Vec::<String>::new());
}

#[test]
fn empty_ranges_are_valid_slices() {
    // `z[2:M]` with M = 1 is `z[2:1]`: empty
    let guarded = model("if (M > 1) { z[2:M] ~ normal(mu, 1); }");
    assert_eq!(
        errors(&guarded, &[("N", 3), ("M", 1)]),
        Vec::<String>::new()
    );
    let bare = model("z[2:M] ~ normal(mu, 1); z[3:M] ~ normal(mu, 1);");
    assert_eq!(errors(&bare, &[("N", 3), ("M", 1)]), Vec::<String>::new());
    // a range that is not empty and runs past the end is still an error
    let past = model("z[2:3] ~ normal(mu, 1);");
    let e = errors(&past, &[("N", 3), ("M", 2)]);
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(e[0].contains("index 3 is out of range for `z`"), "{e:?}");
}

#[test]
fn loops_that_never_run_are_not_reported() {
    let src = model(
        "for (m in 1:M) { vector[M - 1] rest = tail(z, M - 1); } \
                     for (m in 1:M) { vector[2] w = z; } \
                     for (x in z) { vector[2] w = z; }",
    );
    assert_eq!(errors(&src, &[("N", 3), ("M", 0)]), Vec::<String>::new());
    // with M = 3 the loops run: `vector[2] w = z` cannot fit, in both loops
    let e = errors(&src, &[("N", 3), ("M", 3)]);
    assert_eq!(e.len(), 2, "{e:?}");
    // after a `break` under a condition known true, the rest of the body never runs
    let left = model("for (n in 1:N) { if (M == 0) break; z[1] ~ normal(mu, 1); }");
    assert_eq!(errors(&left, &[("N", 3), ("M", 0)]), Vec::<String>::new());
    let stays = model("for (n in 1:N) { if (M > 5) break; z[1] ~ normal(mu, 1); }");
    assert_eq!(errors(&stays, &[("N", 3), ("M", 0)]).len(), 1);
    // bounds that are unknown (a parameter's count, a loop variable) are not reported
    let unknown = model("for (i in 1:N) for (m in 1:i - 3) { vector[2] w = z; }");
    assert_eq!(
        errors(&unknown, &[("N", 3), ("M", 0)]),
        Vec::<String>::new()
    );
}

#[test]
fn code_under_a_condition_known_true_is_checked() {
    let src = "data { int N; vector[N] y; }\nparameters { vector[2] b; }\n\
               model { b ~ normal(0, 1); if (N > 1) { y ~ normal(b, 1); } }";
    let e = errors(src, &[("N", 3)]);
    assert_eq!(e.len(), 1, "{e:?}");
    // the condition false: the body never runs
    assert_eq!(errors(src, &[("N", 1)]).len(), 0);
    // the older checks too: a literal index and literal sizes under a true condition
    let lit = "data { int N; }\nparameters { vector[3] b; }\n\
               model { b ~ normal(0, 1); if (N * 2 >= 6 && !(N == 0)) { b[4] ~ normal(0, 1); } }";
    let e = errors(lit, &[("N", 3)]);
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(e[0].contains("index 4 is out of range for `b`"), "{e:?}");
    assert_eq!(errors(lit, &[("N", 2)]), Vec::<String>::new());
}

#[test]
fn conditions_on_real_data_are_unknown_and_report_nothing() {
    // `x > 0.5` on `real` data is not evaluated before the data are read in full: neither
    // branch is known to run, so the mismatches in them (`vector[2] b` against N = 3, an index
    // past the end of `z`) are left to run time, whichever way the condition goes
    let src = "data { int N; vector[N] y; real x; int<lower=0> M; vector[M] z; }\n\
               parameters { vector[2] b; }\n\
               model { b ~ normal(0, 1); \
               if (x > 0.5) { y ~ normal(b, 1); } else { z[3] ~ normal(b[1], 1); } \
               while (x > 2) { y ~ normal(b, 1); } \
               target += x > 0.5 ? normal_lpdf(y | b, 1) : 0; }";
    assert_eq!(errors(src, &[("N", 3), ("M", 1)]), Vec::<String>::new());
    // the same statements unguarded are errors: the guard is what keeps them quiet
    let bare = "data { int N; vector[N] y; real x; int<lower=0> M; vector[M] z; }\n\
                parameters { vector[2] b; }\n\
                model { b ~ normal(0, 1); y ~ normal(b, 1); z[3] ~ normal(b[1], 1); }";
    assert_eq!(errors(bare, &[("N", 3), ("M", 1)]).len(), 2);
}
