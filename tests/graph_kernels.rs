//! Compiled scalar kernels of `for` loops against the statement interpreter: the same log density
//! (bit for bit), the same gradient (to 1e-12 relative) and the same errors, and gradients against
//! central finite differences, on GARCH(1,1), AR(2), arK and synthetic loop models.

mod common;

use bayesc::graph::Model;
use bayesc::inference::LogDensity;

/// Asserts that `expected` loops ran as compiled kernels (after at least one evaluation).
fn assert_kernels(m: &Model, expected: usize) {
    let (compiled, interpreted) = m.loop_kernels();
    assert_eq!(
        (compiled, interpreted),
        (expected, 0),
        "loops compiled / interpreted"
    );
}

/// The model twice: with kernels (default) and forced through the interpreter.
fn pair(make: impl Fn() -> Model) -> (Model, Model) {
    let fast = make();
    let mut slow = make();
    slow.set_fast_loops(false);
    (fast, slow)
}

/// Asserts equal log densities and gradients of both paths at `theta`, and the gradient against
/// central finite differences of the log density.
fn check_at(fast: &Model, slow: &Model, theta: &[f64]) {
    let d = fast.dim();
    let (mut gf, mut gs) = (vec![0.0; d], vec![0.0; d]);
    let lf = fast
        .log_density_grad(theta, &mut gf)
        .expect("fast path evaluates");
    let ls = slow
        .log_density_grad(theta, &mut gs)
        .expect("interpreter evaluates");
    assert_eq!(lf.to_bits(), ls.to_bits(), "log density {lf} vs {ls}");
    let vf = fast.log_density(theta).expect("value-only fast path");
    assert_eq!(vf.to_bits(), lf.to_bits(), "value-only {vf} vs {lf}");
    for i in 0..d {
        let tol = 1e-12 * gs[i].abs().max(1.0);
        assert!(
            (gf[i] - gs[i]).abs() <= tol,
            "gradient[{i}]: kernel {} vs interpreter {}",
            gf[i],
            gs[i]
        );
    }
    let all: Vec<usize> = (0..d).collect();
    common::assert_gradient_fd(fast, theta, &gf, 1e-5, &all);
}

use common::points;

#[test]
fn garch_kernel_matches_interpreter() {
    let (fast, slow) = pair(|| {
        common::compile(
            "examples/garch/model.bayes",
            &["examples/garch/returns.csv"],
        )
    });
    check_at(&fast, &slow, &[0.05, (0.02f64).ln(), -2.197, 2.83]);
    for p in points(fast.dim()) {
        check_at(&fast, &slow, &p);
    }
    assert_kernels(&fast, 1);
    assert_eq!(slow.loop_kernels(), (0, 0));
}

#[test]
fn ar_and_ark_kernels_match_interpreter() {
    // AR(2) through the stdlib's `ar_mean` (a loop in a user-defined function).
    let (fast, slow) =
        pair(|| common::compile("examples/ar/model.bayes", &["examples/ar/ar2.csv"]));
    for p in points(fast.dim()) {
        check_at(&fast, &slow, &p);
    }
    // arK: a loop with a local, an inner loop over lags and `~` is one kernel.
    let (fast, slow) = pair(|| {
        common::compile(
            "examples/posteriordb/arK-arK/model.bayes",
            &["examples/posteriordb/arK-arK/data.json"],
        )
    });
    for p in points(fast.dim()) {
        check_at(&fast, &slow, &p);
    }
    assert_kernels(&fast, 1);
}

const SYNTHETIC: &str = r#"
data {
  int N;
  vector[N] x;
}
parameters {
  real a;
  real<lower=0> b;
  vector[3] c;
}
model {
  vector[N] z;
  matrix[3, N] M;
  vector[N] s;
  array[N] real w;
  real acc = 0;
  real m = a;
  int count = 0;
  // Writes then reads the same local vector; a ternary; a nested loop over a matrix; if/else;
  // integer arithmetic (%, *, -) in index expressions.
  for (i in 1:N) {
    z[i] = a * x[i] + (i > 1 ? z[i - 1] * 0.5 : b);
    for (j in 1:3) {
      M[j, i] = c[j] * z[i] + j;
      if (j == 2 && i % 2 == 0) {
        acc += exp(-square(M[j, i]) / 10);
      } else if (j == 3) {
        acc -= log1p(square(c[j] * x[(i * 2 - 1) % N + 1]));
      }
    }
  }
  // An empty range: nothing runs, nothing changes.
  for (i in 1:0) {
    acc += 1000 * a;
    z[1] = 7;
  }
  // Constants only: s stays data-like, so `~` below drops log(s) (as the interpreter does).
  for (i in 1:N) {
    s[i] = 1 + x[i] ^ 2;
  }
  // A scalar that depends on parameters, then is reset to a constant; break and continue; an
  // integer counter; fma, fmin, pow, inv_logit; an element compound assignment.
  for (i in 1:N) {
    if (i == 2) continue;
    m = fma(m, 0.9, x[i]);
    count += 1;
    w[i] = pow(fabs(m) + 1, 0.5) + fmin(b, x[i]) + inv_logit(c[1] * i);
    w[i] *= 1.5;
    if (count >= N - 2) break;
  }
  for (i in 1:N) {
    if (i == 2) w[i] = 0;
    if (i > count + 1) w[i] = -1;
  }
  target += acc;
  target += m * count;
  z ~ normal(0, 3);
  to_vector(M) ~ normal(0, 5);
  x ~ normal(z, s);
  to_vector(w) ~ normal(1, 2);
  a ~ normal(0, 1);
  c ~ normal(0, 1);
}
"#;

#[test]
fn synthetic_loops_match_interpreter() {
    let json = r#"{"N": 7, "x": [0.3, -1.2, 0.8, 2.1, -0.4, 0.0, 1.7]}"#;
    let (fast, slow) = pair(|| common::compile_source("loops.bayes", SYNTHETIC, Some(json), &[]));
    for p in points(fast.dim()) {
        check_at(&fast, &slow, &p);
    }
    assert_kernels(&fast, 5);
}

#[test]
fn constant_reset_keeps_interpreter_flags() {
    // `m` depends on parameters inside the loop but ends as a constant: `~` must then drop
    // log(m) exactly as the interpreter does.
    let src = r#"
data { int N; vector[N] y; }
parameters { real mu; }
model {
  real m = 1;
  vector[N] sd;
  for (i in 1:N) {
    m = exp(mu) + i;
    sd[i] = m;
    if (i == N) m = 2;
  }
  y ~ normal(mu, m);
  y ~ normal(mu, sd);
}
"#;
    let json = r#"{"N": 3, "y": [0.5, 1.5, -0.2]}"#;
    let (fast, slow) = pair(|| common::compile_source("reset.bayes", src, Some(json), &[]));
    for p in points(1) {
        check_at(&fast, &slow, &p);
    }
    assert_kernels(&fast, 1);
}

#[test]
fn out_of_range_index_reports_as_interpreter() {
    let src = r#"
data { int T; vector[T] x; }
parameters { real b; }
model {
  vector[T] h;
  h[1] = 1;
  for (t in 2:T) {
    h[t] = h[t - 1] * b + x[t + 1];
  }
  target += sum(h);
}
"#;
    let json = r#"{"T": 4, "x": [1, 2, 3, 4]}"#;
    let (fast, slow) = pair(|| common::compile_source("range.bayes", src, Some(json), &[]));
    let ef = fast
        .log_density(&[0.3])
        .expect_err("index 5 is out of range");
    let es = slow
        .log_density(&[0.3])
        .expect_err("index 5 is out of range");
    assert_eq!(ef.to_string(), es.to_string());
    assert_eq!(ef.recoverable, es.recoverable);
    assert!(
        ef.message
            .contains("index 5 out of range; expecting index to be between 1 and 4"),
        "{}",
        ef.message
    );
    let mut g = [0.0];
    let eg = fast
        .log_density_grad(&[0.3], &mut g)
        .expect_err("same with a gradient");
    assert_eq!(eg.to_string(), es.to_string());
    // The tape is left clean: a later evaluation of another model on this thread works.
    let (fast, slow) = pair(|| {
        common::compile(
            "examples/garch/model.bayes",
            &["examples/garch/returns.csv"],
        )
    });
    check_at(&fast, &slow, &[0.05, (0.02f64).ln(), -2.197, 2.83]);
}

#[test]
fn integer_overflow_and_reject_fall_back_with_the_same_error() {
    let src = r#"
data { int N; }
parameters { real b; }
model {
  int k = 1;
  real acc = 0;
  for (i in 1:N) {
    k *= 1000;
    acc += b * i;
    if (acc > 1e300) reject("acc too large: ", acc);
  }
  target += acc;
}
"#;
    let (fast, slow) =
        pair(|| common::compile_source("overflow.bayes", src, Some(r#"{"N": 10}"#), &[]));
    let ef = fast.log_density(&[0.3]).expect_err("1000^7 overflows");
    let es = slow.log_density(&[0.3]).expect_err("1000^7 overflows");
    assert_eq!(ef.to_string(), es.to_string());
    assert!(ef.message.contains("integer overflow"), "{}", ef.message);
    let (fast, slow) =
        pair(|| common::compile_source("overflow.bayes", src, Some(r#"{"N": 3}"#), &[]));
    check_at(&fast, &slow, &[0.3]);
    let ef = fast.log_density(&[1e300]).expect_err("reject");
    let es = slow.log_density(&[1e300]).expect_err("reject");
    assert_eq!(ef.to_string(), es.to_string());
    assert!(ef.message.contains("acc too large"), "{}", ef.message);
}

const SAMPLING: &str = r#"
functions {
  real mylik_lpdf(vector y, real mu, real s, int N) {
    real acc = 0;
    for (i in 1:N) {
      acc += normal_lupdf(y[i] | mu, s);
    }
    return acc;
  }
}
data {
  int N;
  vector[N] x;
  vector[N] y;
  array[N] int k;
}
parameters {
  real alpha;
  real beta;
  real<lower=0> sigma;
  real mu;
}
model {
  for (n in 1:N) {
    y[n] ~ normal(alpha + beta * x[n], sigma);
    target += student_t_lpdf(x[n] | 3, mu, 2);
    target += normal_lupdf(y[n] | 0, 10);
    k[n] ~ poisson_log(0.1 * alpha + x[n]);
    x[n] ~ normal(0, 1);
    target += normal_lpdf(x[n] | 0, 1);
    if (n % 3 == 0) target += -0.5 * square(mu - n);
  }
  // A loop in a user density: `~` through it drops constants, `_lpdf` keeps them.
  y ~ mylik(mu, sigma, N);
  target += mylik_lpdf(y | mu, sigma, N);
  alpha ~ normal(0, 2);
  beta ~ normal(0, 2);
  mu ~ normal(0, 2);
}
"#;

#[test]
fn sampling_statements_in_loops_match_interpreter() {
    let json = r#"{"N": 6, "x": [0.3, -1.2, 0.8, 2.1, -0.4, 0.0],
                   "y": [1.1, -0.7, 0.9, 3.0, 0.2, 0.4], "k": [0, 2, 1, 5, 0, 1]}"#;
    let (fast, slow) = pair(|| common::compile_source("sampling.bayes", SAMPLING, Some(json), &[]));
    for p in points(fast.dim()) {
        check_at(&fast, &slow, &p);
    }
    assert_kernels(&fast, 2);
}

#[test]
fn mixture_kernel_matches_interpreter() {
    // `target += log_mix(…, normal_lpdf(…), normal_lpdf(…))` per observation.
    let (fast, slow) = pair(|| {
        common::compile(
            "examples/mixture/model.bayes",
            &["examples/mixture/mixture.csv"],
        )
    });
    for p in points(fast.dim()) {
        check_at(&fast, &slow, &p);
    }
    assert_kernels(&fast, 1);
}

#[test]
fn domain_error_inside_a_kernel_reports_as_interpreter() {
    let src = r#"
data { int N; vector[N] y; }
parameters { real mu; real<lower=0> sigma; }
model {
  for (n in 1:N) {
    y[n] ~ normal(mu, sigma - 1);
  }
}
"#;
    let json = r#"{"N": 3, "y": [0.5, 1.5, -0.2]}"#;
    let (fast, slow) = pair(|| common::compile_source("domain.bayes", src, Some(json), &[]));
    // sigma = exp(0) = 1: the scale is 0.
    let ef = fast.log_density(&[0.1, 0.0]).expect_err("scale 0");
    let es = slow.log_density(&[0.1, 0.0]).expect_err("scale 0");
    assert_eq!(ef.to_string(), es.to_string());
    assert_eq!(ef.recoverable, es.recoverable);
    assert!(ef.recoverable);
    check_at(&fast, &slow, &[0.1, 1.0]);
}

#[test]
fn flags_settling_over_iterations_match_interpreter() {
    // Straight-line loop bodies, whose flag updates stop once an iteration changes no flag.
    // First loop: w becomes parameter-dependent at i = 2, v at i = 3, u at i = 4 (each reads the
    // previous iteration of the next), so `~` and `target +=` keep dropping / adding constants
    // differently for three iterations before the flags settle. Second loop: `m` depends on
    // parameters, then is reset to a constant, every iteration (flags never settle).
    let src = r#"
data { int N; vector[N] x; }
parameters { real a; real<lower=0> s; }
model {
  vector[N] u = x;
  vector[N] v = x;
  vector[N] w = x;
  vector[N] q;
  vector[N] t;
  real m = 0;
  for (i in 2:N) {
    u[i] = v[i - 1] + 1;
    v[i] = w[i - 1] * 2;
    w[i] = a * x[i];
    x[i] ~ normal(u[i], s);
    target += square(u[i]) * 0.01;
  }
  for (i in 1:N) {
    m = a * x[i] + 1;
    q[i] = m;
    m = 2;
    t[i] = m;
    x[i] ~ normal(q[i], t[i]);
  }
  target += sum(u) + sum(v) + m;
  a ~ normal(0, 1);
}
"#;
    let json = r#"{"N": 8, "x": [0.3, -1.2, 0.8, 2.1, -0.4, 0.0, 1.7, 0.9]}"#;
    let (fast, slow) = pair(|| common::compile_source("settle.bayes", src, Some(json), &[]));
    for p in points(fast.dim()) {
        check_at(&fast, &slow, &p);
    }
    assert_kernels(&fast, 2);
}
