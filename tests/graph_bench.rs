//! Timing of the labour log density + gradient against a hand-written loop (run with
//! `cargo test --release --test graph_bench -- --ignored --nocapture`).

mod common;

use std::time::Instant;

use bayesc::data::{BoundData, DataValue};
use bayesc::graph::Model;
use bayesc::inference::LogDensity;
use bayesc::syntax::parser::parse_program;

const LABOUR: &str = "
data { int<lower=0> N; array[N] int<lower=0, upper=1> lfp; vector[N] k5; vector[N] k618; vector[N] age; vector[N] wc; vector[N] hc; vector[N] lwg; vector[N] inc; }
transformed data { matrix[N, 7] X = append_col(k5, k618, age, wc, hc, lwg, inc); }
parameters { real alpha; vector[7] beta; }
model { alpha ~ normal(0, 10); beta ~ normal(0, 10); lfp ~ bernoulli_logit(alpha + X * beta); }
";

fn hand(theta: &[f64], y: &[f64], x: &[f64], n: usize, g: &mut [f64]) -> f64 {
    let mut lp = -theta.iter().map(|t| t * t).sum::<f64>() / 200.0;
    for (gk, t) in g.iter_mut().zip(theta) {
        *gk = -t / 100.0;
    }
    let mut eta = vec![theta[0]; n];
    for k in 0..7 {
        let b = theta[k + 1];
        for i in 0..n {
            eta[i] += x[k * n + i] * b;
        }
    }
    let mut r = vec![0.0; n];
    for i in 0..n {
        let e = eta[i];
        let l1pe = if e > 0.0 {
            e + (-e).exp().ln_1p()
        } else {
            e.exp().ln_1p()
        };
        lp += y[i] * e - l1pe;
        r[i] = y[i] - 1.0 / (1.0 + (-e).exp());
        g[0] += r[i];
    }
    for k in 0..7 {
        g[k + 1] += (0..n).map(|i| x[k * n + i] * r[i]).sum::<f64>();
    }
    lp
}

#[test]
#[ignore]
fn labour_timing() {
    let mut rdr = csv::Reader::from_path(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/labour/labour.csv"
    ))
    .unwrap();
    let mut cols: Vec<Vec<f64>> = vec![Vec::new(); 8];
    for rec in rdr.records() {
        for (k, v) in rec.unwrap().iter().enumerate() {
            cols[k].push(v.parse().unwrap());
        }
    }
    let n = cols[0].len();
    let names = ["lfp", "k5", "k618", "age", "wc", "hc", "lwg", "inc"];
    let mut bd = BoundData::default();
    bd.values.insert(
        "N".into(),
        DataValue {
            dims: vec![],
            values: std::sync::Arc::new(vec![n as f64]),
            is_int: true,
            column_major: false,
        },
    );
    for (k, nm) in names.iter().enumerate() {
        bd.values.insert(
            nm.to_string(),
            DataValue {
                dims: vec![n],
                values: std::sync::Arc::new(cols[k].clone()),
                is_int: k == 0,
                column_major: false,
            },
        );
    }
    let m = Model::new(&parse_program(LABOUR, 0).unwrap(), &bd).unwrap();
    let x: Vec<f64> = cols[1..].iter().flatten().copied().collect();
    let theta = [0.5, -1.2, 0.1, -0.05, 0.8, 0.1, 0.6, -0.03];
    let mut g = vec![0.0; 8];
    let reps = 20000;
    let mut s = 0.0;
    let t0 = Instant::now();
    for _ in 0..reps {
        s += m.log_density_grad(&theta, &mut g).unwrap();
    }
    let graph = t0.elapsed().as_secs_f64() / reps as f64;
    let t0 = Instant::now();
    for _ in 0..reps {
        s += hand(&theta, &cols[0], &x, n, &mut g);
    }
    let by_hand = t0.elapsed().as_secs_f64() / reps as f64;
    let t0 = Instant::now();
    for _ in 0..reps {
        s += m.log_density(&theta).unwrap();
    }
    let value_only = t0.elapsed().as_secs_f64() / reps as f64;
    println!(
        "labour: graph {:.1} µs, value-only {:.1} µs, hand-written {:.1} µs, ratio {:.2} ({s})",
        graph * 1e6,
        value_only * 1e6,
        by_hand * 1e6,
        graph / by_hand
    );
}

#[test]
#[ignore]
fn garch_timing() {
    let src = "
data { int<lower=0> T; vector[T] r; }
parameters { real mu; real<lower=0> omega; real<lower=0, upper=1> alpha1; real<lower=0, upper=(1 - alpha1)> beta1; }
model {
  vector[T] h;
  h[1] = variance(r);
  for (t in 2:T) h[t] = omega + alpha1 * square(r[t - 1] - mu) + beta1 * h[t - 1];
  r ~ normal(mu, sqrt(h));
}";
    let mut rdr = csv::Reader::from_path(common::shared_data("sp500.csv")).unwrap();
    let r: Vec<f64> = rdr
        .records()
        .skip(1)
        .take(1000)
        .map(|rec| rec.unwrap()[1].parse().unwrap())
        .collect();
    let mut bd = BoundData::default();
    bd.values.insert(
        "T".into(),
        DataValue {
            dims: vec![],
            values: std::sync::Arc::new(vec![r.len() as f64]),
            is_int: true,
            column_major: false,
        },
    );
    bd.values.insert(
        "r".into(),
        DataValue {
            dims: vec![r.len()],
            values: std::sync::Arc::new(r),
            is_int: false,
            column_major: false,
        },
    );
    let m = Model::new(&parse_program(src, 0).unwrap(), &bd).unwrap();
    let z = [0.05, -2.0, -2.0, 1.5];
    let mut g = vec![0.0; 4];
    let reps = 2000;
    let t0 = Instant::now();
    let mut s = 0.0;
    for _ in 0..reps {
        s += m.log_density_grad(&z, &mut g).unwrap();
    }
    println!(
        "garch (T = 1000): log density + gradient {:.1} µs ({s})",
        t0.elapsed().as_secs_f64() / reps as f64 * 1e6
    );
}
