//! Native code of scalar kernels (cargo feature `jit`) against the kernel interpreter
//! (`Model::set_native_loops(false)`): bit-identical log densities and gradients on GARCH(1,1),
//! AR(2), arK and a synthetic loop using every instruction the native code generator handles,
//! and the same errors when a loop stops inside native code (an index out of range, integer
//! overflow, division by zero). The loops are long enough that most iterations run natively
//! (the interpreter runs the iterations until the "depends on parameters" flags settle).

mod common;

use bayesc::graph::Model;
use bayesc::inference::LogDensity;

/// Whether native code is compiled in this build and environment.
fn jit_on() -> bool {
    cfg!(feature = "jit") && std::env::var_os("BAYESC_JIT").is_none_or(|v| v != "0")
}

/// The model twice: native loops (the default) and the kernel interpreter.
fn pair(make: impl Fn() -> Model) -> (Model, Model) {
    let native = make();
    let mut interp = make();
    interp.set_native_loops(false);
    (native, interp)
}

/// Asserts bit-identical log densities (with and without gradient) and gradients of both at
/// `theta`, and the gradient against central finite differences; returns the log density.
fn check_at(native: &Model, interp: &Model, theta: &[f64]) -> f64 {
    let d = native.dim();
    let (mut gn, mut gi) = (vec![0.0; d], vec![0.0; d]);
    let ln = native
        .log_density_grad(theta, &mut gn)
        .expect("native evaluates");
    let li = interp
        .log_density_grad(theta, &mut gi)
        .expect("interpreter evaluates");
    assert_eq!(ln.to_bits(), li.to_bits(), "log density {ln} vs {li}");
    for i in 0..d {
        assert_eq!(
            gn[i].to_bits(),
            gi[i].to_bits(),
            "gradient[{i}]: {} vs {}",
            gn[i],
            gi[i]
        );
    }
    let vn = native.log_density(theta).expect("value-only native");
    let vi = interp.log_density(theta).expect("value-only interpreter");
    assert_eq!(vn.to_bits(), vi.to_bits(), "value-only {vn} vs {vi}");
    assert_eq!(
        vn.to_bits(),
        ln.to_bits(),
        "value-only {vn} vs with gradient {ln}"
    );
    let all: Vec<usize> = (0..d).collect();
    common::assert_gradient_fd(native, theta, &gn, 1e-5, &all);
    ln
}

/// Asserts that the loops ran as kernels and (when compiled in) `n_native` have native code.
fn assert_native(native: &Model, kernels: usize, n_native: usize) {
    assert_eq!(
        native.loop_kernels(),
        (kernels, 0),
        "loops compiled / interpreted"
    );
    let expected = if jit_on() { n_native } else { 0 };
    assert_eq!(
        native.native_loop_kernels(),
        expected,
        "kernels with native code"
    );
}

#[test]
fn garch_native_matches_interpreter_bit_for_bit() {
    let (native, interp) = pair(|| {
        common::compile(
            "examples/garch/model.bayes",
            &["examples/garch/returns.csv"],
        )
    });
    let mut points = common::points(native.dim());
    points.push(vec![0.05, (0.02f64).ln(), -2.197, 2.83]);
    for p in &points {
        check_at(&native, &interp, p);
    }
    assert_native(&native, 1, 1);
    // The same on other threads, sharing the compiled code (results do not depend on it).
    let theta = points[2].clone();
    let mut g0 = vec![0.0; native.dim()];
    let l0 = native.log_density_grad(&theta, &mut g0).unwrap();
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                let mut g = vec![0.0; native.dim()];
                let l = native.log_density_grad(&theta, &mut g).unwrap();
                assert_eq!(l.to_bits(), l0.to_bits());
                assert!(g.iter().zip(&g0).all(|(a, b)| a.to_bits() == b.to_bits()));
            });
        }
    });
}

#[test]
fn ar_and_ark_native_match_interpreter_bit_for_bit() {
    let (native, interp) =
        pair(|| common::compile("examples/ar/model.bayes", &["examples/ar/ar2.csv"]));
    for p in common::points(native.dim()) {
        check_at(&native, &interp, &p);
    }
    let (native, interp) = pair(|| {
        common::compile(
            "examples/posteriordb/arK-arK/model.bayes",
            &["examples/posteriordb/arK-arK/data.json"],
        )
    });
    for p in common::points(native.dim()) {
        check_at(&native, &interp, &p);
    }
    assert_native(&native, 1, 1);
}

/// Straight-line loop bodies using the instructions native code handles: + − × ÷, unary and
/// binary functions (natively: square, sqrt, negation; through shims: exp, log1p, inv_logit,
/// pow, fmin, hypot), integer arithmetic (checked + − ×, /, %, min, max, abs, negation),
/// integer and real comparisons, integer-to-real conversions, loads of data, of parameter
/// containers and of local containers, stores, and a loop-carried recurrence.
const SYNTHETIC: &str = r#"
data {
  int N;
  vector[N] x;
  array[N] int k;
}
parameters {
  real a;
  real<lower=0> b;
  vector[3] c;
}
model {
  vector[N] h;
  vector[N] u;
  array[N] real w;
  h[1] = 1;
  u[1] = 0;
  for (t in 2:N) {
    int j = (t * 7 + k[t]) % 3 + 1;
    int q = max(min(t / 2, 5), -abs(-t)) - k[t - 1];
    real e = x[t - 1] - a * c[j];
    h[t] = 0.1 + 0.2 * square(e) + 0.6 * h[t - 1] / (1 + b) + (x[t] > a) * 0.01 - (t == q) * b;
    u[t] = sqrt(h[t]) + exp(-h[t]) - log1p(b * t) + inv_logit(-e) + pow(b, 0.3) * fmin(e, q)
           + hypot(e, b) - (k[t] >= 2) + q / 4.0 + (t % 2 == 0 && x[t] != 0);
    w[t] = -u[t] * c[(t % 3) + 1];
  }
  w[1] = 0;
  x ~ normal(u, sqrt(h));
  target += sum(w) * 0.01;
  a ~ normal(0, 1);
  c ~ normal(0, 1);
}
"#;

/// `n` data values for SYNTHETIC.
fn synthetic_json(n: usize) -> String {
    let x: Vec<String> = (0..n)
        .map(|i| format!("{:.3}", ((i * 37) % 23) as f64 / 7.0 - 1.5))
        .collect();
    let k: Vec<String> = (0..n).map(|i| ((i * 5) % 4).to_string()).collect();
    format!(
        r#"{{"N": {n}, "x": [{}], "k": [{}]}}"#,
        x.join(","),
        k.join(",")
    )
}

#[test]
fn synthetic_loop_native_matches_interpreter_bit_for_bit() {
    let json = synthetic_json(200);
    let (native, interp) =
        pair(|| common::compile_source("synthetic.bayes", SYNTHETIC, Some(&json), &[]));
    for p in common::points(native.dim()) {
        check_at(&native, &interp, &p);
    }
    assert_native(&native, 1, 1);
    // The statement interpreter agrees too (values bit for bit, gradients to rounding).
    let mut plain = common::compile_source("synthetic.bayes", SYNTHETIC, Some(&json), &[]);
    plain.set_fast_loops(false);
    for p in common::points(native.dim()) {
        let lp = plain.log_density(&p).unwrap();
        assert_eq!(lp.to_bits(), native.log_density(&p).unwrap().to_bits());
    }
}

/// Both models fail at `theta` with the same error as the statement interpreter; returns it.
fn same_error(src: &str, json: &str, theta: &[f64]) -> String {
    let (native, interp) = pair(|| common::compile_source("err.bayes", src, Some(json), &[]));
    let mut plain = common::compile_source("err.bayes", src, Some(json), &[]);
    plain.set_fast_loops(false);
    let ep = plain.log_density(theta).expect_err("fails").to_string();
    let en = native.log_density(theta).expect_err("fails");
    let ei = interp.log_density(theta).expect_err("fails");
    assert_eq!(en.to_string(), ep);
    assert_eq!(ei.to_string(), ep);
    assert_eq!(en.recoverable, ei.recoverable);
    let mut g = vec![0.0; native.dim()];
    let eg = native.log_density_grad(theta, &mut g).expect_err("fails");
    assert_eq!(eg.to_string(), ep);
    // The tape is left clean: the model evaluates where the loop does not fail.
    ep
}

#[test]
fn index_out_of_range_in_native_code_falls_back_with_the_same_error() {
    // x[t + 1] is out of range at the last iteration only, long after the flags settled.
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
    let x: Vec<String> = (0..100).map(|i| (i % 7).to_string()).collect();
    let json = format!(r#"{{"T": 100, "x": [{}]}}"#, x.join(","));
    let e = same_error(src, &json, &[0.3]);
    assert!(
        e.contains("index 101 out of range; expecting index to be between 1 and 100"),
        "{e}"
    );
}

#[test]
fn integer_overflow_and_division_by_zero_in_native_code_fall_back() {
    // 3^(t - 1) leaves the 32-bit int at t = 21 (and the 64-bit registers at t = 41); the
    // division by zero happens at t = z.
    let src = r#"
data { int N; int z; }
parameters { real b; }
model {
  vector[N] h;
  int k = 1;
  h[1] = 0;
  for (t in 2:N) {
    k *= 3;
    h[t] = h[t - 1] * 0.5 + b * (k % 5) + 100 / (t - z);
  }
  target += sum(h);
}
"#;
    let e = same_error(src, r#"{"N": 60, "z": 0}"#, &[0.3]);
    assert!(e.contains("integer overflow"), "{e}");
    // past the 32-bit int but within the 64-bit registers: native code fails too
    let e = same_error(src, r#"{"N": 30, "z": 40}"#, &[0.3]);
    assert!(
        e.starts_with(
            "integer overflow: `1162261467 * 3` is 3486784401, outside the range of int \
             (-2147483648 to 2147483647)"
        ),
        "{e}"
    );
    let e = same_error(src, r#"{"N": 30, "z": 20}"#, &[0.3]);
    assert!(e.contains("integer division by zero"), "{e}");
    // Without a failure both agree bit for bit (3^19 is below the largest int, 2^31 - 1).
    let (native, interp) =
        pair(|| common::compile_source("ok.bayes", src, Some(r#"{"N": 20, "z": 40}"#), &[]));
    check_at(&native, &interp, &[0.3]);
    assert_native(&native, 1, 1);
}

#[test]
fn parameter_container_with_scattered_slots_runs_interpreted_with_the_same_bits() {
    // `v` holds the slots of beta[idx], not contiguous: native code cannot address it, so the
    // loop hands over to native code only where it may and the interpreter runs the rest.
    let src = r#"
data { int N; array[N] int idx; vector[N] y; }
parameters { vector[3] beta; }
model {
  vector[N] v = beta[idx];
  vector[N] s;
  s[1] = 0;
  for (t in 2:N) {
    s[t] = 0.5 * s[t - 1] + v[t];
  }
  y ~ normal(s, 1);
  beta ~ normal(0, 1);
}
"#;
    let n = 40;
    let idx: Vec<String> = (0..n).map(|i| ((i * 2) % 3 + 1).to_string()).collect();
    let y: Vec<String> = (0..n)
        .map(|i| format!("{:.2}", (i % 5) as f64 * 0.3))
        .collect();
    let json = format!(
        r#"{{"N": {n}, "idx": [{}], "y": [{}]}}"#,
        idx.join(","),
        y.join(",")
    );
    let (native, interp) =
        pair(|| common::compile_source("scattered.bayes", src, Some(&json), &[]));
    for p in common::points(native.dim()) {
        check_at(&native, &interp, &p);
    }
    assert_native(&native, 1, 1);
}
