//! Whole models compiled from source: the labour logistic regression and GARCH(1,1) against
//! hand-written loops of the same formulas, parameter-dependent bounds against finite
//! differences, names, write_array and unconstrain.

mod common;

use std::collections::BTreeMap;

use bayesc::data::{BoundData, DataValue};
use bayesc::graph::Model;
use bayesc::inference::LogDensity;
use bayesc::inference::rng::stream;
use bayesc::syntax::parser::parse_program;

fn compile(src: &str, data: &BoundData) -> Model {
    let prog = parse_program(src, 0).expect("test program parses");
    Model::new(&prog, data).expect("test program compiles")
}

fn scalar_int(n: usize) -> DataValue {
    DataValue {
        dims: vec![],
        values: std::sync::Arc::new(vec![n as f64]),
        is_int: true,
        column_major: false,
    }
}

fn vector(xs: Vec<f64>, is_int: bool) -> DataValue {
    DataValue {
        dims: vec![xs.len()],
        values: std::sync::Arc::new(xs),
        is_int,
        column_major: false,
    }
}

fn read_columns(path: &str) -> BTreeMap<String, Vec<f64>> {
    let mut rdr = csv::Reader::from_path(path).expect("shared data file exists");
    let headers: Vec<String> = rdr.headers().unwrap().iter().map(String::from).collect();
    let mut cols: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for rec in rdr.records() {
        let rec = rec.unwrap();
        for (h, v) in headers.iter().zip(rec.iter()) {
            if let Ok(x) = v.parse::<f64>() {
                cols.entry(h.clone()).or_default().push(x);
            }
        }
    }
    cols
}

fn log1p_exp(x: f64) -> f64 {
    if x > 0.0 {
        x + (-x).exp().ln_1p()
    } else {
        x.exp().ln_1p()
    }
}

fn inv_logit(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

fn rel_close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * a.abs().max(b.abs()).max(1.0)
}

const LABOUR: &str = "
data { int<lower=0> N; array[N] int<lower=0, upper=1> lfp; vector[N] k5; vector[N] k618; vector[N] age; vector[N] wc; vector[N] hc; vector[N] lwg; vector[N] inc; }
transformed data { matrix[N, 7] X = append_col(k5, k618, age, wc, hc, lwg, inc); }
parameters { real alpha; vector[7] beta; }
model { alpha ~ normal(0, 10); beta ~ normal(0, 10); lfp ~ bernoulli_logit(alpha + X * beta); }
";

const COVARIATES: [&str; 7] = ["k5", "k618", "age", "wc", "hc", "lwg", "inc"];

fn labour_data() -> (BoundData, Vec<f64>, Vec<Vec<f64>>) {
    let cols = read_columns(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/labour/labour.csv"
    ));
    let n = cols["lfp"].len();
    let mut bd = BoundData::default();
    bd.values.insert("N".into(), scalar_int(n));
    bd.values
        .insert("lfp".into(), vector(cols["lfp"].clone(), true));
    for c in COVARIATES {
        bd.values.insert(c.into(), vector(cols[c].clone(), false));
    }
    let x: Vec<Vec<f64>> = COVARIATES.iter().map(|c| cols[*c].clone()).collect();
    (bd, cols["lfp"].clone(), x)
}

/// The labour log density (propto, as `~` drops constants) and its gradient, by hand.
fn labour_by_hand(theta: &[f64], y: &[f64], x: &[Vec<f64>]) -> (f64, Vec<f64>) {
    let alpha = theta[0];
    let beta = &theta[1..];
    let mut lp = -theta.iter().map(|t| t * t).sum::<f64>() / 200.0;
    let mut g: Vec<f64> = theta.iter().map(|t| -t / 100.0).collect();
    for i in 0..y.len() {
        let mut eta = alpha;
        for k in 0..7 {
            eta += x[k][i] * beta[k];
        }
        lp += y[i] * eta - log1p_exp(eta);
        let r = y[i] - inv_logit(eta);
        g[0] += r;
        for k in 0..7 {
            g[k + 1] += x[k][i] * r;
        }
    }
    (lp, g)
}

#[test]
fn labour_matches_hand_written_loop() {
    let (bd, y, x) = labour_data();
    let m = compile(LABOUR, &bd);
    assert_eq!(m.unconstrained_dim(), 8);
    assert_eq!(
        m.parameter_names(),
        vec![
            "alpha", "beta[1]", "beta[2]", "beta[3]", "beta[4]", "beta[5]", "beta[6]", "beta[7]"
        ]
    );
    for theta in [
        vec![0.5, -1.2, 0.1, -0.05, 0.8, 0.1, 0.6, -0.03],
        vec![-0.2, 0.3, -0.4, 0.01, -0.2, 0.3, -0.1, 0.02],
    ] {
        let (want, want_g) = labour_by_hand(&theta, &y, &x);
        let mut g = vec![0.0; 8];
        let got = m.log_density_grad(&theta, &mut g).unwrap();
        assert!(rel_close(got, want, 1e-10), "{got} vs {want}");
        for k in 0..8 {
            assert!(
                rel_close(g[k], want_g[k], 1e-10),
                "grad {k}: {} vs {}",
                g[k],
                want_g[k]
            );
        }
        let v = m.log_density(&theta).unwrap();
        assert_eq!(v, got, "value-only path equals the gradient path");
    }
}

const GARCH: &str = "
data { int<lower=0> T; vector[T] r; }
parameters { real mu; real<lower=0> omega; real<lower=0, upper=1> alpha1; real<lower=0, upper=(1 - alpha1)> beta1; }
model {
  vector[T] h;
  h[1] = variance(r);
  for (t in 2:T) h[t] = omega + alpha1 * square(r[t - 1] - mu) + beta1 * h[t - 1];
  r ~ normal(mu, sqrt(h));
}
";

/// GARCH(1,1) log density on the unconstrained scale, by hand (with the Jacobian terms).
fn garch_by_hand(z: &[f64], r: &[f64]) -> f64 {
    let mu = z[0];
    let omega = z[1].exp();
    let a = inv_logit(z[2]);
    let b = (1.0 - a) * inv_logit(z[3]);
    let mut lp = z[1];
    lp += -log1p_exp(-z[2]) - log1p_exp(z[2]);
    lp += (1.0 - a).ln() - log1p_exp(-z[3]) - log1p_exp(z[3]);
    let n = r.len();
    let m = r.iter().sum::<f64>() / n as f64;
    let mut h = r.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n as f64 - 1.0);
    for t in 0..n {
        if t > 0 {
            h = omega + a * (r[t - 1] - mu).powi(2) + b * h;
        }
        let s = h.sqrt();
        lp += -s.ln() - 0.5 * ((r[t] - mu) / s).powi(2);
    }
    lp
}

fn garch_data() -> (BoundData, Vec<f64>) {
    let cols = read_columns(&common::shared_data("sp500.csv").display().to_string());
    let r: Vec<f64> = cols["ret"][1..1001].to_vec();
    let mut bd = BoundData::default();
    bd.values.insert("T".into(), scalar_int(r.len()));
    bd.values.insert("r".into(), vector(r.clone(), false));
    (bd, r)
}

#[test]
fn garch_matches_hand_written_loop() {
    let (bd, r) = garch_data();
    let m = compile(GARCH, &bd);
    assert_eq!(m.unconstrained_dim(), 4);
    for z in [vec![0.05, -2.0, -2.0, 1.5], vec![-0.1, -1.0, -1.5, 0.5]] {
        let want = garch_by_hand(&z, &r);
        let mut g = vec![0.0; 4];
        let got = m.log_density_grad(&z, &mut g).unwrap();
        assert!(rel_close(got, want, 1e-10), "{got} vs {want}");
        assert_eq!(m.log_density(&z).unwrap(), got);
        for k in 0..4 {
            let h = 1e-5;
            let mut zp = z.clone();
            let mut zm = z.clone();
            zp[k] += h;
            zm[k] -= h;
            let fd = (garch_by_hand(&zp, &r) - garch_by_hand(&zm, &r)) / (2.0 * h);
            assert!(rel_close(g[k], fd, 1e-6), "grad {k}: {} vs {fd}", g[k]);
        }
    }
    // write_array: constrained values respect the parameter-dependent bound.
    let z = [0.05, -2.0, -2.0, 1.5];
    let mut rng = stream(1, 0);
    let x = m.write_array(&z, true, true, &mut rng).unwrap();
    assert_eq!(x.len(), 4);
    let a = inv_logit(-2.0);
    assert!(rel_close(x[1], (-2.0f64).exp(), 1e-14));
    assert!(rel_close(x[2], a, 1e-14));
    assert!(rel_close(x[3], (1.0 - a) * inv_logit(1.5), 1e-14));
    let back = m.unconstrain(&x).unwrap();
    for k in 0..4 {
        assert!((back[k] - z[k]).abs() < 1e-9, "{back:?}");
    }
}

/// Central finite differences of the log density.
fn fd_grad(m: &Model, z: &[f64]) -> Vec<f64> {
    (0..z.len())
        .map(|k| {
            let h = 1e-6;
            let mut zp = z.to_vec();
            let mut zm = z.to_vec();
            zp[k] += h;
            zm[k] -= h;
            (m.log_density(&zp).unwrap() - m.log_density(&zm).unwrap()) / (2.0 * h)
        })
        .collect()
}

#[test]
fn parameter_dependent_bounds_gradient_matches_finite_differences() {
    let src = "
data { int N; vector[N] y; }
parameters {
  real<lower=0> a;
  real<lower=-a, upper=2 * a + 1> b;
  vector<lower=b>[N] v;
  vector<offset=b, multiplier=a>[2] w;
  simplex[3] s;
  ordered[3] o;
  positive_ordered[2] po;
}
transformed parameters { real<lower=0> a2 = square(a); }
model {
  a ~ normal(1, 2);
  b ~ normal(0, 1);
  y ~ normal(v, a2 + 0.5);
  w ~ normal(0, 3);
  target += log(s[1]) + 2 * log(s[3]);
  o ~ normal(0, 2);
  po ~ exponential(1);
}
generated quantities { real ratio = b / a; }
";
    let mut bd = BoundData::default();
    bd.values.insert("N".into(), scalar_int(3));
    bd.values
        .insert("y".into(), vector(vec![0.5, 1.7, 2.2], false));
    let m = compile(src, &bd);
    // 1 + 1 + 3 + 2 + 2 (simplex) + 3 + 2
    assert_eq!(m.unconstrained_dim(), 14);
    assert_eq!(m.transformed_parameter_names(), vec!["a2"]);
    assert_eq!(m.generated_quantity_names(), vec!["ratio"]);
    let z: Vec<f64> = (0..14).map(|i| ((i as f64) * 0.37).sin() * 0.8).collect();
    let mut g = vec![0.0; 14];
    let v = m.log_density_grad(&z, &mut g).unwrap();
    assert_eq!(v, m.log_density(&z).unwrap());
    let fd = fd_grad(&m, &z);
    for k in 0..14 {
        assert!(
            rel_close(g[k], fd[k], 1e-6),
            "grad {k}: {} vs {}",
            g[k],
            fd[k]
        );
    }
    let mut rng = stream(3, 0);
    let x = m.write_array(&z, true, true, &mut rng).unwrap();
    let names = m.parameter_names();
    assert_eq!(x.len(), names.len() + 2);
    let (a, b) = (x[0], x[1]);
    assert!(b > -a && b < 2.0 * a + 1.0);
    assert!((x[names.len()] - a * a).abs() < 1e-12);
    assert!((x[names.len() + 1] - b / a).abs() < 1e-12);
    let s_at = names.iter().position(|n| n == "s[1]").unwrap();
    assert!((x[s_at..s_at + 3].iter().sum::<f64>() - 1.0).abs() < 1e-12);
    let back = m.unconstrain(&x[..names.len()]).unwrap();
    for k in 0..14 {
        assert!(
            (back[k] - z[k]).abs() < 1e-8,
            "{k}: {} vs {}",
            back[k],
            z[k]
        );
    }
}

#[test]
fn domain_errors_are_recoverable_and_located() {
    let src = "parameters { real s; }\nmodel {\n  1.0 ~ normal(0, s);\n}\n";
    let prog = parse_program(src, 0).unwrap();
    let mut sm = bayesc::syntax::source::SourceMap::new();
    sm.add("model.bayes", src);
    let m = Model::new(&prog, &BoundData::default())
        .unwrap()
        .with_sources(&sm);
    let e = m.log_density(&[-0.2]).unwrap_err();
    assert!(e.recoverable);
    assert!(e.message.contains("normal_lpdf"), "{}", e.message);
    assert!(e.message.contains("-0.2"), "{}", e.message);
    assert_eq!(e.location.as_deref(), Some("model.bayes:3:3"));
    // Index out of range is not recoverable.
    let src = "data { int N; vector[N] y; }\nparameters { real m; }\nmodel { y[N + 1] ~ normal(m, 1); }\n";
    let mut bd = BoundData::default();
    bd.values.insert("N".into(), scalar_int(2));
    bd.values.insert("y".into(), vector(vec![1.0, 2.0], false));
    let m = compile(src, &bd);
    let e = m.log_density(&[0.0]).unwrap_err();
    assert!(!e.recoverable);
    assert!(e.message.contains("index 3 out of range"), "{}", e.message);
}

#[test]
fn missing_data_and_unknown_names_are_graph_errors() {
    let prog = parse_program(
        "data { int N; } parameters { real m; } model { m ~ normal(0, 1); }",
        0,
    )
    .unwrap();
    let e = Model::new(&prog, &BoundData::default()).err().unwrap();
    assert!(e.to_string().contains("`N`"), "{e}");
    let prog = parse_program(
        "parameters { real m; } model { m ~ normal(0, frob(m)); }",
        0,
    )
    .unwrap();
    let e = Model::new(&prog, &BoundData::default()).err().unwrap();
    assert!(e.to_string().contains("frob"), "{e}");
}

fn phi(x: f64) -> f64 {
    0.5 * libm::erfc(-x / std::f64::consts::SQRT_2)
}

#[test]
fn truncation_subtracts_the_normaliser() {
    let src = "
data { int N; vector[N] y; }
parameters { real mu; real<lower=0> s; }
model {
  y ~ normal(mu, 1) T[0, ];
  y ~ normal(mu, 1) T[, 4];
  y ~ normal(mu, 1) T[-1, 5];
  target += normal_lcdf(1.5 | mu, 2) + normal_lccdf(0.5 | mu, s);
}";
    let y = [0.4, 1.3, 2.2];
    let mut bd = BoundData::default();
    bd.values.insert("N".into(), scalar_int(3));
    bd.values.insert("y".into(), vector(y.to_vec(), false));
    let m = compile(src, &bd);
    let z: [f64; 2] = [0.6, -0.3];
    let (mu, s) = (z[0], z[1].exp());
    let sq: f64 = y.iter().map(|v| -0.5 * (v - mu) * (v - mu)).sum();
    let want = 3.0 * sq
        - 3.0 * phi(mu).ln()
        - 3.0 * phi(4.0 - mu).ln()
        - 3.0 * (phi(5.0 - mu) - phi(-1.0 - mu)).ln()
        + phi((1.5 - mu) / 2.0).ln()
        + (1.0 - phi((0.5 - mu) / s)).ln()
        + z[1];
    let mut g = vec![0.0; 2];
    let got = m.log_density_grad(&z, &mut g).unwrap();
    assert!(rel_close(got, want, 1e-10), "{got} vs {want}");
    let fd = fd_grad(&m, &z);
    for k in 0..2 {
        assert!(
            rel_close(g[k], fd[k], 1e-6),
            "grad {k}: {} vs {}",
            g[k],
            fd[k]
        );
    }
    // A variate outside the truncation interval has zero density.
    let src = "parameters { real mu; } model { 5 ~ normal(mu, 1) T[, 4]; }";
    let m = compile(src, &BoundData::default());
    assert_eq!(m.log_density(&[0.0]).unwrap(), f64::NEG_INFINITY);
}

#[test]
fn generated_quantities_draw_with_rng() {
    let src = "
parameters { real mu; }
model { mu ~ normal(0, 1); }
generated quantities {
  real z = normal_rng(mu, 1);
  int k = poisson_rng(3.0);
  array[2] real zs = normal_rng([0, 100]', 0.5);
  real twice = 2 * mu;
}";
    let m = compile(src, &BoundData::default());
    assert_eq!(
        m.generated_quantity_names(),
        vec!["z", "k", "zs[1]", "zs[2]", "twice"]
    );
    let mut rng = stream(11, 1);
    let a = m.write_array(&[0.25], true, true, &mut rng).unwrap();
    let mut rng = stream(11, 1);
    let b = m.write_array(&[0.25], true, true, &mut rng).unwrap();
    assert_eq!(a, b, "same stream, same draws");
    assert_eq!(a.len(), 6);
    assert_eq!(a[0], 0.25);
    assert!(a[1].is_finite());
    assert!(a[2] >= 0.0 && a[2].fract() == 0.0);
    assert!((a[4] - 100.0).abs() < 5.0);
    assert_eq!(a[5], 0.5);
    // Without generated quantities only the parameters are written.
    assert_eq!(
        m.write_array(&[0.25], true, false, &mut rng).unwrap(),
        vec![0.25]
    );
    // Sample mean and sd of normal_rng(mu, 1) over many draws.
    let mut rng = stream(5, 2);
    let draws: Vec<f64> = (0..4000)
        .map(|_| m.write_array(&[0.25], false, true, &mut rng).unwrap()[1])
        .collect();
    let mean = draws.iter().sum::<f64>() / 4000.0;
    let sd = (draws.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / 3999.0).sqrt();
    assert!((mean - 0.25).abs() < 0.07, "{mean}");
    assert!((sd - 1.0).abs() < 0.05, "{sd}");
}

#[test]
fn user_defined_functions_recursion_densities_and_lp() {
    let src = "
functions {
  real twice(real x) { return 2 * x; }
  real fact(int n) { if (n <= 1) return 1; return n * fact(n - 1); }
  real mylik_lpdf(vector y, real mu, real s) { return normal_lpdf(y | mu, s); }
  vector scale(vector v, real k) {
    vector[rows(v)] out;
    for (i in 1:rows(v)) out[i] = k * v[i];
    return out;
  }
  void addit_lp(real x) { target += x; }
}
data { int N; vector[N] y; }
parameters { real mu; vector[2] v; }
model {
  y ~ mylik(mu, 1.5);
  target += mylik_lupdf(y | mu, 1.5) - mylik_lpdf(y | mu, 1.5);
  target += twice(mu) + fact(4) + sum(scale(v, mu));
  addit_lp(-square(mu));
}";
    let y = [0.4, 1.3, 2.2];
    let mut bd = BoundData::default();
    bd.values.insert("N".into(), scalar_int(3));
    bd.values.insert("y".into(), vector(y.to_vec(), false));
    let m = compile(src, &bd);
    let z = [0.3, -0.7, 1.1];
    let mu = z[0];
    let lik: f64 = y
        .iter()
        .map(|v| -0.918_938_533_204_672_8 - 1.5f64.ln() - 0.5 * ((v - mu) / 1.5).powi(2))
        .sum();
    let want = lik + 2.0 * mu + 24.0 + mu * (z[1] + z[2]) - mu * mu;
    let mut g = vec![0.0; 3];
    let got = m.log_density_grad(&z, &mut g).unwrap();
    assert!(rel_close(got, want, 1e-12), "{got} vs {want}");
    let fd = fd_grad(&m, &z);
    for k in 0..3 {
        assert!(
            rel_close(g[k], fd[k], 1e-6),
            "grad {k}: {} vs {}",
            g[k],
            fd[k]
        );
    }
}

#[test]
fn model_is_send_sync_and_thread_independent() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Model>();
    let (bd, _r) = garch_data();
    let m = compile(GARCH, &bd);
    let z = [0.05, -2.0, -2.0, 1.5];
    let mut g0 = vec![0.0; 4];
    let v0 = m.log_density_grad(&z, &mut g0).unwrap();
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    let mut g = vec![0.0; 4];
                    let v = m.log_density_grad(&z, &mut g).unwrap();
                    (v, g)
                })
            })
            .collect();
        for h in hs {
            let (v, g) = h.join().unwrap();
            assert_eq!(v, v0);
            assert_eq!(g, g0);
        }
    });
}

#[test]
fn reject_is_recoverable_with_its_message() {
    let src = "parameters { real mu; }\nmodel {\n  if (mu > 1) reject(\"mu too big: \", mu);\n  mu ~ normal(0, 1);\n}\n";
    let m = compile(src, &BoundData::default());
    assert!((m.log_density(&[0.5]).unwrap() + 0.125).abs() < 1e-15);
    let e = m.log_density(&[2.0]).unwrap_err();
    assert!(e.recoverable);
    assert_eq!(e.message, "mu too big: 2");
}

#[test]
fn graph_errors_render_at_their_span() {
    use bayesc::syntax::report::{ToDiagnostic, render_plain};
    let src = "parameters {\n  int n;\n}\nmodel { }\n";
    let prog = parse_program(src, 0).unwrap();
    let e = Model::new(&prog, &BoundData::default()).err().unwrap();
    let d = e.to_diagnostic();
    let range = d.labels[0].range.clone();
    assert_eq!(src[range].trim(), "int");
    let mut sm = bayesc::syntax::source::SourceMap::new();
    sm.add("model.bayes", src);
    let text = render_plain(&sm, &d);
    assert!(text.contains("is not supported yet"), "{text}");
    assert!(text.contains("model.bayes:2:3"), "{text}");
}

#[test]
fn unbounded_recursion_is_an_error_not_a_crash() {
    let src = "functions { real f(real x) { return f(x + 1); } }\nparameters { real m; }\nmodel { target += f(m); }\n";
    let m = compile(src, &BoundData::default());
    let e = m.log_density(&[0.0]).unwrap_err();
    assert!(!e.recoverable);
    assert!(e.message.contains("nested more than"), "{}", e.message);
}

#[test]
fn names_and_write_array_follow_stan_column_major_order() {
    let src = "
data { array[2] vector[3] d; matrix[2, 2] D; }
parameters { matrix[2, 3] S; array[2] vector[2] a; }
model { target += -0.5 * dot_self(to_vector(S)) + d[2, 3] * a[2][1] + D[1, 2] * a[1, 2]; }
";
    let mut bd = BoundData::default();
    bd.values.insert(
        "d".into(),
        DataValue {
            dims: vec![2, 3],
            values: std::sync::Arc::new(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
            is_int: false,
            column_major: false,
        },
    );
    // Row-major data: D = [[1, 7], [3, 4]].
    bd.values.insert(
        "D".into(),
        DataValue {
            dims: vec![2, 2],
            values: std::sync::Arc::new(vec![1.0, 7.0, 3.0, 4.0]),
            is_int: false,
            column_major: false,
        },
    );
    let m = compile(src, &bd);
    assert_eq!(
        m.parameter_names(),
        vec![
            "S[1,1]", "S[2,1]", "S[1,2]", "S[2,2]", "S[1,3]", "S[2,3]", "a[1,1]", "a[2,1]",
            "a[1,2]", "a[2,2]"
        ]
    );
    let z: Vec<f64> = (0..10).map(|i| i as f64 * 0.1).collect();
    let mut rng = stream(1, 0);
    let x = m.write_array(&z, false, false, &mut rng).unwrap();
    // Matrices are stored column-major (as Stan's order); the array of vectors is stored
    // a[1] then a[2], so Stan's order interleaves them.
    let want = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 0.7, 0.9];
    for (a, b) in x.iter().zip(want) {
        assert!((a - b).abs() < 1e-15, "{x:?}");
    }
    assert_eq!(m.unconstrain(&x).unwrap(), z);
    // d[2, 3] = 6 multiplies a[2][1] (ζ[8]); D[1, 2] = 7 multiplies a[1][2] (ζ[7]).
    let mut g = vec![0.0; 10];
    m.log_density_grad(&z, &mut g).unwrap();
    assert_eq!(g[8], 6.0);
    assert_eq!(g[7], 7.0);
    assert!((g[3] + 0.3).abs() < 1e-15);
}

#[test]
fn degenerate_simplex_and_integer_overflow() {
    let m = compile(
        "parameters { simplex[1] s; real m; } model { m ~ normal(s[1], 1); }",
        &BoundData::default(),
    );
    assert_eq!(m.unconstrained_dim(), 1);
    assert_eq!(m.log_density(&[1.0]).unwrap(), 0.0);
    let m = compile(
        "transformed data { int k = -2147483647 - 1; } parameters { real m; } model { m ~ normal(0, 1); }",
        &BoundData::default(),
    );
    assert_eq!(m.unconstrained_dim(), 1);
    let prog = parse_program(
        "transformed data { int k = (-2147483647 - 1) %/% -1; } parameters { real m; } model { }",
        0,
    )
    .unwrap();
    let e = Model::new(&prog, &BoundData::default()).err().unwrap();
    assert!(e.to_string().contains("overflow"), "{e}");
}

#[test]
fn matrix_constrained_parameters() {
    let src = "
parameters {
  cholesky_factor_corr[3] L;
  cov_matrix[2] S;
  cholesky_factor_cov[2] C;
  array[2] cholesky_factor_corr[2] Ls;
  corr_matrix[3] Om;
}
model {
  matrix[3, 3] R = multiply_lower_tri_self_transpose(L);
  target += 0.3 * sum(R) + 0.1 * sum(S) - dot_self(to_vector(C)) + sum(Ls[2]) + L[3, 2];
  target += -dot_self(to_vector(Om)) + Om[3, 1];
}";
    let m = compile(src, &BoundData::default());
    assert_eq!(m.unconstrained_dim(), 3 + 3 + 3 + 2 + 3);
    assert_eq!(m.parameter_names().len(), 9 + 4 + 4 + 8 + 9);
    let z: Vec<f64> = (0..14)
        .map(|i| 0.4 * ((i as f64) * 0.9 + 0.2).cos())
        .collect();
    let mut g = vec![0.0; 14];
    let v = m.log_density_grad(&z, &mut g).unwrap();
    assert_eq!(v, m.log_density(&z).unwrap());
    let fd = fd_grad(&m, &z);
    for k in 0..14 {
        assert!(
            rel_close(g[k], fd[k], 1e-6),
            "grad {k}: {} vs {}",
            g[k],
            fd[k]
        );
    }
    let mut rng = stream(2, 0);
    let x = m.write_array(&z, false, false, &mut rng).unwrap();
    // L is lower triangular with unit rows; S is symmetric.
    assert_eq!(x[3], 0.0); // L[1,2]
    let row3: f64 = [x[2], x[5], x[8]].iter().map(|v| v * v).sum();
    assert!((row3 - 1.0).abs() < 1e-14);
    assert_eq!(x[10], x[11]); // S[2,1] == S[1,2]
    let back = m.unconstrain(&x).unwrap();
    for k in 0..14 {
        assert!(
            (back[k] - z[k]).abs() < 1e-9,
            "{k}: {} vs {}",
            back[k],
            z[k]
        );
    }
}

#[test]
fn transformed_data_bounds_are_checked() {
    let ok = compile(
        "transformed data { int K = 3; real<lower=0, upper=K> x = 2; } parameters { real m; } model { m ~ normal(x, 1); }",
        &BoundData::default(),
    );
    assert!((ok.log_density(&[2.0]).unwrap()).abs() < 1e-15);
    let prog = parse_program(
        "transformed data { int K = 3; real<upper=K> x = 4; } parameters { real m; } model { }",
        0,
    )
    .unwrap();
    let e = Model::new(&prog, &BoundData::default()).err().unwrap();
    assert!(
        e.to_string()
            .contains("x is 4, but must be less than or equal to 3"),
        "{e}"
    );
}
