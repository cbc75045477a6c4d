//! The stdlib modules (`stdlib/*.bayes`) against hand computations: each function's values
//! (read back as generated quantities) equal a loop written in Rust, and a model written with a
//! stdlib function has the same log density and gradient as the same model written out.

mod common;

use std::collections::HashMap;

use bayesc::graph::Model;
use bayesc::inference::LogDensity;
use bayesc::inference::rng;

/// Checks and compiles `text` (its includes resolve from the crate root, then the stdlib)
/// against JSON data and/or data files.
fn compile(text: &str, json: Option<&str>, files: &[&str]) -> Model {
    common::compile_source("stdlib_test.bayes", text, json, files)
}

/// The generated quantities of `model` at the unconstrained point `zeta`, by name (`X[2,3]`).
fn generated(model: &Model, zeta: &[f64]) -> HashMap<String, f64> {
    let mut rng = rng::stream(1, 1);
    let values = model
        .write_array(zeta, false, true, &mut rng)
        .expect("generated quantities evaluate");
    let names: Vec<String> = model
        .parameter_names()
        .into_iter()
        .chain(model.generated_quantity_names())
        .collect();
    assert_eq!(names.len(), values.len());
    names.into_iter().zip(values).collect()
}

/// A reproducible point in [-1, 1]^d (SplitMix64 of the index and a seed).
fn point(d: usize, seed: u64) -> Vec<f64> {
    (0..d)
        .map(|i| {
            let mut z = seed
                .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                .wrapping_add(i as u64 + 1);
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            2.0 * ((z >> 11) as f64 / (1u64 << 53) as f64) - 1.0
        })
        .collect()
}

/// The `rv` column of `../shared/data/sp500.csv` (realized variance of the S&P 500).
fn sp500_rv() -> Vec<f64> {
    let path = common::shared_data("sp500.csv");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("a header").split(',').collect();
    let col = header
        .iter()
        .position(|h| *h == "rv")
        .expect("an rv column");
    lines
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            l.split(',')
                .nth(col)
                .expect("rv cell")
                .parse()
                .expect("a number")
        })
        .collect()
}

/// `har_regressors` on the first 400 rows of sp500.csv equals Corsi's (2009) daily, weekly and
/// monthly means computed by a loop here, row by row (1e-12 relative).
#[test]
fn har_regressors_match_a_loop_on_sp500() {
    let rv: Vec<f64> = sp500_rv().into_iter().take(400).collect();
    let t_len = rv.len();
    let json = format!(
        "{{\"T\": {t_len}, \"rv\": [{}]}}",
        rv.iter()
            .map(|v| format!("{v:e}"))
            .collect::<Vec<_>>()
            .join(",")
    );
    let model = compile(
        "include \"timeseries.bayes\";
data { int T; vector[T] rv; }
parameters { real b; }
model { b ~ normal(0, 1); }
generated quantities {
  matrix[T - 22, 3] X = har_regressors(rv);
  vector[T - 22] m = har_mean(rv, 0.5, [0.3, 0.2, 0.1]');
}",
        Some(&json),
        &[],
    );
    let gq = generated(&model, &[0.0]);
    assert_eq!(gq.len(), 1 + 4 * (t_len - 22));
    let mean = |a: usize, b: usize| rv[a..=b].iter().sum::<f64>() / (b - a + 1) as f64;
    for t in 23..=t_len {
        // 1-based t as in the model; rv[t - 1] (1-based) is rv[t - 2] here.
        let daily = rv[t - 2];
        let weekly = mean(t - 6, t - 2);
        let monthly = mean(t - 23, t - 2);
        let row = t - 22;
        for (j, want) in [daily, weekly, monthly].into_iter().enumerate() {
            let got = gq[&format!("X[{row},{}]", j + 1)];
            assert!(
                (got - want).abs() <= 1e-12 * want.abs().max(1.0),
                "X[{row},{}] = {got}, loop gives {want}",
                j + 1
            );
        }
        let m = 0.5 + 0.3 * daily + 0.2 * weekly + 0.1 * monthly;
        assert!((gq[&format!("m[{row}]")] - m).abs() <= 1e-12 * m.abs().max(1.0));
    }
}

/// `ar_mean` equals alpha + Σ_k beta[k] y[t−k] for t = p+1..T, computed by hand (p = 3).
#[test]
fn ar_mean_matches_a_hand_computation() {
    let y = [0.4, -1.1, 2.0, 0.3, -0.6, 1.7, 0.9, -0.2];
    let (alpha, beta) = (0.25, [0.5, -0.3, 0.1]);
    let json = format!(
        "{{\"T\": 8, \"y\": {:?}, \"beta\": {:?}}}",
        y.to_vec(),
        beta.to_vec()
    );
    let model = compile(
        "include \"timeseries.bayes\";
data { int T; vector[T] y; vector[3] beta; }
parameters { real b; }
model { b ~ normal(0, 1); }
generated quantities { vector[T - 3] mu = ar_mean(y, 0.25, beta); }",
        Some(&json),
        &[],
    );
    let gq = generated(&model, &[0.0]);
    for t in 4..=8 {
        let want = alpha + (1..=3).map(|k| beta[k - 1] * y[t - k - 1]).sum::<f64>();
        let got = gq[&format!("mu[{}]", t - 3)];
        assert!(
            (got - want).abs() < 1e-14,
            "mu[{}] = {got}, want {want}",
            t - 3
        );
    }
    // Hand value of the first mean: 0.25 + 0.5·2.0 − 0.3·(−1.1) + 0.1·0.4 = 1.62.
    assert!((gq["mu[1]"] - 1.62).abs() < 1e-14);
}

/// The GARCH(1,1) example written with `garch11_variance` has the same log density and gradient
/// as `examples/garch/model.bayes` (the recursion written out) at 20 random points (1e-10).
#[test]
fn garch_with_stdlib_equals_the_example() {
    let data = ["examples/garch/returns.csv"];
    let example = common::compile("examples/garch/model.bayes", &data);
    let stdlib = compile(
        "include \"timeseries.bayes\";
data { int<lower=2> T; vector[T] r; }
parameters {
  real mu;
  real<lower=0> omega;
  real<lower=0, upper=1> alpha1;
  real<lower=0, upper=1 - alpha1> beta1;
}
model {
  vector[T] h = garch11_variance(r, mu, omega, alpha1, beta1, variance(r));
  r ~ normal(mu, sqrt(h));
}",
        None,
        &data,
    );
    assert_eq!(example.dim(), 4);
    assert_eq!(stdlib.dim(), 4);
    for seed in 0..20 {
        let theta = point(4, seed);
        let (mut g1, mut g2) = (vec![0.0; 4], vec![0.0; 4]);
        let l1 = example.log_density_grad(&theta, &mut g1).expect("finite");
        let l2 = stdlib.log_density_grad(&theta, &mut g2).expect("finite");
        assert!((l1 - l2).abs() < 1e-10, "seed {seed}: {l1} vs {l2}");
        for (a, b) in g1.iter().zip(&g2) {
            assert!((a - b).abs() < 1e-10, "seed {seed}: {g1:?} vs {g2:?}");
        }
    }
}

/// `garch11_variance` itself against the recursion by hand on four returns.
#[test]
fn garch11_variance_matches_a_hand_computation() {
    let model = compile(
        "include \"timeseries.bayes\";
parameters { real b; }
model { b ~ normal(0, 1); }
generated quantities {
  vector[4] h = garch11_variance([1.0, -0.5, 2.0, 0.0]', 0.1, 0.2, 0.3, 0.6, 1.5);
}",
        None,
        &[],
    );
    let gq = generated(&model, &[0.0]);
    let r = [1.0, -0.5, 2.0, 0.0];
    let mut h = vec![1.5];
    for t in 1..4 {
        h.push(0.2 + 0.3 * (r[t - 1] - 0.1_f64).powi(2) + 0.6 * h[t - 1]);
    }
    // h[2] = 0.2 + 0.3·0.81 + 0.6·1.5 = 1.343.
    assert!((h[1] - 1.343).abs() < 1e-14);
    for (t, want) in h.iter().enumerate() {
        let got = gq[&format!("h[{}]", t + 1)];
        assert!(
            (got - want).abs() < 1e-14,
            "h[{}] = {got}, want {want}",
            t + 1
        );
    }
}

/// The GLM and reparameterisation helpers against hand computations.
#[test]
fn glm_and_reparam_helpers_match_hand_computations() {
    let model = compile(
        "include \"glm.bayes\";
include \"reparam.bayes\";
parameters { real b; }
model { b ~ normal(0, 1); }
generated quantities {
  vector[2] eta = logistic_linpred([[1.0, 2.0], [-1.0, 0.5]], 0.5, [0.25, -1.0]');
  vector[2] p = logistic_prob([[1.0, 2.0], [-1.0, 0.5]], 0.5, [0.25, -1.0]');
  vector[3] theta = noncentered([1.0, -2.0, 0.5]', 3.0, 0.5);
  vector[2] pos = noncentered_lognormal([0.0, 1.0]', 0.0, 2.0);
  vector[3] s = sum_to_zero([1.5, -0.25]');
  real ll = logistic_regression_lpmf({1, 0} | [[1.0, 2.0], [-1.0, 0.5]], 0.5, [0.25, -1.0]');
}",
        None,
        &[],
    );
    let gq = generated(&model, &[0.0]);
    // eta = 0.5 + X·beta = [0.5 + 0.25 − 2, 0.5 − 0.25 − 0.5] = [−1.25, −0.25].
    let eta = [-1.25, -0.25];
    let close = |name: &str, want: f64| {
        let got = gq[name];
        assert!((got - want).abs() < 1e-14, "{name} = {got}, want {want}");
    };
    close("eta[1]", eta[0]);
    close("eta[2]", eta[1]);
    close("p[1]", 1.0 / (1.0 + 1.25_f64.exp()));
    close("p[2]", 1.0 / (1.0 + 0.25_f64.exp()));
    close("theta[1]", 3.5);
    close("theta[2]", 2.0);
    close("theta[3]", 3.25);
    close("pos[1]", 1.0);
    close("pos[2]", 2.0_f64.exp());
    close("s[1]", 1.5);
    close("s[2]", -0.25);
    close("s[3]", -1.25);
    // log p(y = 1 | η₁) + log p(y = 0 | η₂) = η₁ − log(1 + e^η₁) − log(1 + e^η₂).
    let ll = eta[0] - eta[0].exp().ln_1p() - eta[1].exp().ln_1p();
    assert!(
        (gq["ll"] - ll).abs() < 1e-13,
        "ll = {}, want {ll}",
        gq["ll"]
    );
}

/// The AR(2) example compiles from its README command's files, and its log density with
/// `ar_mean` equals the same model with the lags written out (1e-10).
#[test]
fn ar_example_equals_the_written_out_model() {
    let data = ["examples/ar/ar2.csv"];
    let example = common::compile("examples/ar/model.bayes", &data);
    let written_out = compile(
        "data { int<lower=3> T; vector[T] y; }
parameters { real alpha; vector[2] beta; real<lower=0> sigma; }
model {
  alpha ~ normal(0, 5);
  beta ~ normal(0, 1);
  sigma ~ normal(0, 2);
  y[3:T] ~ normal(alpha + beta[1] * y[2:(T - 1)] + beta[2] * y[1:(T - 2)], sigma);
}",
        None,
        &data,
    );
    assert_eq!(example.dim(), 4);
    for seed in 0..10 {
        let theta = point(4, seed);
        let (mut g1, mut g2) = (vec![0.0; 4], vec![0.0; 4]);
        let l1 = example.log_density_grad(&theta, &mut g1).expect("finite");
        let l2 = written_out
            .log_density_grad(&theta, &mut g2)
            .expect("finite");
        assert!((l1 - l2).abs() < 1e-10, "seed {seed}: {l1} vs {l2}");
        for (a, b) in g1.iter().zip(&g2) {
            assert!((a - b).abs() < 1e-10, "seed {seed}: {g1:?} vs {g2:?}");
        }
    }
}

/// The AR(2) example fitted by NUTS (one short chain, fixed seed) recovers the simulation's
/// coefficients: each posterior mean is within 3 posterior sds of the value used to simulate
/// `ar2.csv` (alpha 0.5, beta (0.6, −0.3), sigma 1), and the sds are those of T = 200 points
/// (between 0.02 and 0.2).
#[test]
fn ar_example_recovers_the_simulated_coefficients() {
    use bayesc::fit::{self, FitOptions, Method};
    let model = common::compile("examples/ar/model.bayes", &["examples/ar/ar2.csv"]);
    let mut options = FitOptions::new(Method::Nuts, 1);
    options.mcmc.chains = 1;
    options.mcmc.warmup = 300;
    options.mcmc.samples = 300;
    let never = std::sync::atomic::AtomicBool::new(false);
    let monitor = fit::Monitor {
        on_progress: &|_| {},
        stop: &never,
    };
    let result = fit::fit(&model, &options, &monitor).expect("NUTS runs");
    let draws = &result.draws;
    for (name, truth) in [
        ("alpha", 0.5),
        ("beta[1]", 0.6),
        ("beta[2]", -0.3),
        ("sigma", 1.0),
    ] {
        let j = draws.position(name).expect("a column per parameter");
        let col = draws.column(j).concat();
        let n = col.len() as f64;
        let mean = col.iter().sum::<f64>() / n;
        let sd = (col.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
        assert!((0.02..0.2).contains(&sd), "{name}: sd {sd}");
        assert!(
            (mean - truth).abs() < 3.0 * sd,
            "{name}: posterior mean {mean} ± {sd}, simulated with {truth}"
        );
    }
}
