//! The pointwise log-likelihood of `graph::Model` against closed forms, and the robust
//! (sandwich) standard errors of `optimize` (issue 4): GARCH against the arch package's
//! Bollerslev–Wooldridge errors, labour against the sandwich of logistic regression computed
//! here from its analytic scores and Hessian, plus `--se robust` on the command line.

mod common;

use std::process::Command;
use std::sync::atomic::AtomicBool;

use bayesc::fit::{self, FitDetails, FitOptions, Method, OptimizeFit, StdErrorKind};
use bayesc::graph::Model;
use bayesc::inference::LogDensity;

fn optimize(model: &Model, se: StdErrorKind, seed: u64) -> OptimizeFit {
    let never = AtomicBool::new(false);
    let monitor = fit::Monitor {
        on_progress: &|_| {},
        stop: &never,
    };
    let mut options = FitOptions::new(Method::Optimize, seed);
    options.std_errors = se;
    let r = fit::fit(model, &options, &monitor).expect("the fit runs");
    match r.details {
        FitDetails::Optimize(o) => o,
        _ => panic!("optimize details expected"),
    }
}

use common::{read_mle, rel};

/// log N(y | μ, σ) with its constant.
fn normal_lpdf(y: f64, mu: f64, sigma: f64) -> f64 {
    -0.5 * ((y - mu) / sigma).powi(2) - sigma.ln() - 0.5 * (2.0 * std::f64::consts::PI).ln()
}

#[test]
fn garch_robust_standard_errors_match_arch() {
    let model = common::compile("examples/garch/mle.bayes", &["examples/garch/returns.csv"]);
    let reference = read_mle("garch_mle.csv");
    let o = optimize(&model, StdErrorKind::Robust, 1);
    assert_eq!(o.std_error_kind, StdErrorKind::Robust);
    assert_eq!(o.names, ["mu", "omega", "alpha1", "beta1"]);
    for (k, name) in o.names.iter().enumerate() {
        let (est, se) = reference[name];
        assert!(
            rel(o.estimates[k], est) < 1e-4,
            "{name}: {}",
            o.estimates[k]
        );
        // measured: 0.02051 / 0.01578 / 0.05115 / 0.05190 vs 0.02051 / 0.01578 / 0.05109 / 0.05187
        assert!(
            rel(o.std_errors[k], se) < 0.02,
            "{name} robust std error: {} vs arch {se}",
            o.std_errors[k]
        );
    }
    assert!(rel(o.log_density, reference["loglik"].0) < 1e-4);
    // the classical errors of omega, alpha1, beta1 are 35–45 % away from arch's
    let classical = optimize(&model, StdErrorKind::Hessian, 1);
    for (k, name) in o.names.iter().enumerate().skip(1) {
        assert!(
            rel(classical.std_errors[k], reference[name].1) > 0.2,
            "{name}: classical {} unexpectedly close to arch",
            classical.std_errors[k]
        );
    }
}

/// The labour data: outcome and design matrix [1, k5, k618, age, wc, hc, lwg, inc].
fn labour_data() -> (Vec<f64>, Vec<[f64; 8]>) {
    let text = std::fs::read_to_string(common::root().join("examples/labour/labour.csv")).unwrap();
    let mut y = Vec::new();
    let mut x = Vec::new();
    for line in text.lines().skip(1).filter(|l| !l.trim().is_empty()) {
        let f: Vec<f64> = line.split(',').map(|v| v.parse().unwrap()).collect();
        y.push(f[0]);
        let mut row = [1.0; 8];
        row[1..].copy_from_slice(&f[1..8]);
        x.push(row);
    }
    (y, x)
}

/// The inverse of an 8×8 matrix by Gauss–Jordan elimination with partial pivoting (here the
/// Fisher information of the labour logit, symmetric positive definite).
fn inverse8(a: &[[f64; 8]; 8]) -> [[f64; 8]; 8] {
    let mut m = *a;
    let mut inv = [[0.0; 8]; 8];
    for (i, row) in inv.iter_mut().enumerate() {
        row[i] = 1.0;
    }
    for c in 0..8 {
        let p = (c..8)
            .max_by(|&i, &j| m[i][c].abs().total_cmp(&m[j][c].abs()))
            .unwrap();
        m.swap(c, p);
        inv.swap(c, p);
        let d = m[c][c];
        for j in 0..8 {
            m[c][j] /= d;
            inv[c][j] /= d;
        }
        for r in 0..8 {
            if r != c {
                let f = m[r][c];
                for j in 0..8 {
                    m[r][j] -= f * m[c][j];
                    inv[r][j] -= f * inv[c][j];
                }
            }
        }
    }
    inv
}

#[test]
#[allow(clippy::needless_range_loop)]
fn labour_robust_errors_equal_the_analytic_sandwich() {
    let model = common::compile("examples/labour/mle.bayes", &["examples/labour/labour.csv"]);
    let reference = read_mle("labour_mle.csv");
    let classical = optimize(&model, StdErrorKind::Hessian, 1);
    let robust = optimize(&model, StdErrorKind::Robust, 1);
    assert_eq!(classical.std_error_kind, StdErrorKind::Hessian);
    for (k, name) in classical.names.iter().enumerate() {
        assert!(
            rel(classical.std_errors[k], reference[name].1) < 0.02,
            "{name}: classical {} vs statsmodels {}",
            classical.std_errors[k],
            reference[name].1
        );
    }
    // Logistic regression: s_i = (y_i − p_i)·x_i, −H = Σ p_i(1 − p_i)·x_i x_iᵀ; the sandwich
    // (−H)⁻¹·B·(−H)⁻¹ with B = n/(n−1)·Σ (s_i − s̄)(s_i − s̄)ᵀ.
    let (y, x) = labour_data();
    let n = y.len();
    let beta = &robust.estimates;
    let mut info = [[0.0; 8]; 8];
    let mut scores = Vec::with_capacity(n);
    for (yi, xi) in y.iter().zip(&x) {
        let eta: f64 = xi.iter().zip(beta).map(|(a, b)| a * b).sum();
        let p = 1.0 / (1.0 + (-eta).exp());
        for j in 0..8 {
            for k in 0..8 {
                info[j][k] += p * (1.0 - p) * xi[j] * xi[k];
            }
        }
        scores.push(xi.map(|v| (yi - p) * v));
    }
    let mut mean = [0.0; 8];
    for s in &scores {
        for j in 0..8 {
            mean[j] += s[j] / n as f64;
        }
    }
    let mut b = [[0.0; 8]; 8];
    for s in &scores {
        for j in 0..8 {
            for k in 0..8 {
                b[j][k] += (s[j] - mean[j]) * (s[k] - mean[k]) * n as f64 / (n - 1) as f64;
            }
        }
    }
    let sigma = inverse8(&info);
    let mut measured_ratios = Vec::new();
    for k in 0..8 {
        let mut v = 0.0;
        for i in 0..8 {
            for j in 0..8 {
                v += sigma[k][i] * b[i][j] * sigma[j][k];
            }
        }
        let se = v.sqrt();
        // measured agreement: ≤ 2e-8 relative (finite-difference scores and Hessian); the
        // n/(n−1) factor alone would move the errors by 7e-4
        assert!(
            rel(robust.std_errors[k], se) < 1e-6,
            "{}: robust {} vs analytic sandwich {se}",
            robust.names[k],
            robust.std_errors[k]
        );
        measured_ratios.push(robust.std_errors[k] / classical.std_errors[k]);
    }
    // A well-specified logit: robust and classical agree to within 12 % (measured ratios
    // 1.021, 1.041, 1.055, 0.999, 1.046, 1.010, 1.111, 1.067).
    for (k, r) in measured_ratios.iter().enumerate() {
        assert!(
            (0.97..1.12).contains(r),
            "{}: robust/classical = {r}",
            robust.names[k]
        );
    }
}

#[test]
fn labour_pointwise_log_likelihood_is_bernoulli_logit_per_row() {
    let model = common::compile("examples/labour/mle.bayes", &["examples/labour/labour.csv"]);
    let (y, x) = labour_data();
    let zeta = [2.0, -1.0, 0.1, -0.05, 0.5, 0.2, 0.4, -0.02];
    let ll = model.pointwise_log_likelihood(&zeta).unwrap();
    assert_eq!(ll.len(), y.len());
    for (i, (yi, xi)) in y.iter().zip(&x).enumerate() {
        let eta: f64 = xi.iter().zip(&zeta).map(|(a, b)| a * b).sum();
        let expected = yi * eta - (1.0 + eta.exp()).ln();
        assert!(
            (ll[i] - expected).abs() < 1e-10 * expected.abs().max(1.0),
            "row {i}: {} vs {expected}",
            ll[i]
        );
    }
    // no priors, all constants kept: the sum is the log density without the Jacobian
    let total = model.with_jacobian(false).log_density(&zeta).unwrap();
    let sum: f64 = ll.iter().sum();
    assert!((sum - total).abs() < 1e-9 * total.abs(), "{sum} vs {total}");
}

#[test]
fn garch_pointwise_sums_to_the_log_likelihood() {
    let model = common::compile("examples/garch/mle.bayes", &["examples/garch/returns.csv"]);
    for zeta in [[0.05, -3.0, -1.0, 1.0], [0.0, -2.0, -1.5, 0.5]] {
        let ll = model.pointwise_log_likelihood(&zeta).unwrap();
        assert_eq!(ll.len(), 1000);
        let total = model.with_jacobian(false).log_density(&zeta).unwrap();
        let sum: f64 = ll.iter().sum();
        assert!((sum - total).abs() < 1e-9 * total.abs(), "{sum} vs {total}");
    }
}

const Y: [f64; 5] = [1.3, -0.2, 2.4, 0.8, 1.1];

fn normal_model(body: &str) -> Model {
    let text = format!(
        "data {{ int<lower=0> N; vector[N] y; }}\n\
         parameters {{ real mu; real<lower=0> sigma; }}\n\
         model {{\n  mu ~ normal(0, 10);\n  sigma ~ exponential(1);\n{body}\n}}\n"
    );
    let json = format!(
        "{{\"N\": 5, \"y\": [{}]}}",
        Y.map(|v| v.to_string()).join(", ")
    );
    common::compile_source("pointwise.bayes", &text, Some(&json), &[])
}

#[test]
fn loop_vectorised_and_target_forms_give_the_closed_form() {
    // ζ = (μ, log σ); priors on μ and σ are not observations
    let zeta = [0.7, 0.4_f64];
    let (mu, sigma) = (zeta[0], zeta[1].exp());
    let expected: Vec<f64> = Y.iter().map(|&y| normal_lpdf(y, mu, sigma)).collect();
    for body in [
        "  for (n in 1:N) y[n] ~ normal(mu, sigma);",
        "  y ~ normal(mu, sigma);",
        "  target += normal_lpdf(y | mu, sigma);",
        "  target += normal_lupdf(y | mu, sigma);",
        "  for (n in 1:N) target += normal_lpdf(y[n] | mu, sigma);",
    ] {
        let ll = normal_model(body).pointwise_log_likelihood(&zeta).unwrap();
        assert_eq!(ll.len(), Y.len(), "{body}");
        for (a, b) in ll.iter().zip(&expected) {
            assert!((a - b).abs() < 1e-12, "{body}: {a} vs {b}");
        }
    }
    // two statements: values in execution order
    let ll = normal_model("  y[1:2] ~ normal(mu, sigma);\n  y[3:5] ~ normal(mu, 2 * sigma);")
        .pointwise_log_likelihood(&zeta)
        .unwrap();
    for (i, &y) in Y.iter().enumerate() {
        let s = if i < 2 { sigma } else { 2.0 * sigma };
        assert!((ll[i] - normal_lpdf(y, mu, s)).abs() < 1e-12);
    }
}

#[test]
fn truncated_statement_subtracts_the_normaliser_per_element() {
    let zeta = [0.7, 0.4_f64];
    let (mu, sigma) = (zeta[0], zeta[1].exp());
    let ll = normal_model("  for (n in 1:N) y[n] ~ normal(mu, sigma) T[-1, ];")
        .pointwise_log_likelihood(&zeta)
        .unwrap();
    // log P(Y > −1) = log(erfc((−1 − μ)/(σ√2)) / 2)
    let log_norm = (0.5 * libm::erfc((-1.0 - mu) / (sigma * std::f64::consts::SQRT_2))).ln();
    for (a, &y) in ll.iter().zip(&Y) {
        let b = normal_lpdf(y, mu, sigma) - log_norm;
        assert!((a - b).abs() < 1e-12, "{a} vs {b}");
    }
}

#[test]
fn multivariate_outcome_gives_one_value_per_row() {
    let text = "data { array[3] vector[2] y; }\n\
                parameters { vector[2] mu; }\n\
                model { y ~ multi_normal(mu, [[2, 0], [0, 0.5]]); }\n";
    let json = "{\"y\": [[0.1, 0.3], [1.2, -0.4], [0.5, 0.9]]}";
    let model = common::compile_source("mvn.bayes", text, Some(json), &[]);
    let mu = [0.2, 0.1];
    let ll = model.pointwise_log_likelihood(&mu).unwrap();
    let ys = [[0.1, 0.3], [1.2, -0.4], [0.5, 0.9]];
    assert_eq!(ll.len(), 3);
    for (a, y) in ll.iter().zip(&ys) {
        let b = normal_lpdf(y[0], mu[0], 2f64.sqrt()) + normal_lpdf(y[1], mu[1], 0.5f64.sqrt());
        assert!((a - b).abs() < 1e-10, "{a} vs {b}");
    }
}

#[test]
fn model_without_observations_is_an_error() {
    let model = common::compile_source(
        "prior.bayes",
        "parameters { real mu; } model { mu ~ normal(0, 1); }",
        None,
        &[],
    );
    let e = model.pointwise_log_likelihood(&[0.3]).unwrap_err();
    assert!(!e.recoverable);
    assert!(e.message.contains("no observations"), "{}", e.message);
    // and robust standard errors then fail with that message
    let never = AtomicBool::new(false);
    let monitor = fit::Monitor {
        on_progress: &|_| {},
        stop: &never,
    };
    let mut options = FitOptions::new(Method::Optimize, 1);
    options.std_errors = StdErrorKind::Robust;
    let e = fit::fit(&model, &options, &monitor).unwrap_err();
    assert!(e.to_string().contains("no observations"), "{e}");
    // wrong length
    assert!(model.pointwise_log_likelihood(&[0.3, 1.0]).is_err());
}

#[test]
fn cli_se_robust_prints_arch_errors() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_bayesc"))
            .args(args)
            .current_dir(common::root())
            .output()
            .expect("run bayesc")
    };
    let base = [
        "optimize",
        "examples/garch/mle.bayes",
        "--data",
        "examples/garch/returns.csv",
        "--seed",
        "1",
        "--se",
        "robust",
    ];
    let o = run(&base);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("standard errors: robust"), "{out}");
    let line = out
        .lines()
        .find(|l| l.split_whitespace().next() == Some("omega"))
        .unwrap_or_else(|| panic!("no omega row in\n{out}"));
    let se: f64 = line.split_whitespace().nth(2).unwrap().parse().unwrap();
    assert!(rel(se, 0.01578046) < 0.02, "{out}");
    // default: classical
    let o = run(&base[..6]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("standard errors: classical"), "{out}");
    // --se applies to optimize only
    let o = run(&[
        "fit",
        "examples/garch/mle.bayes",
        "--data",
        "examples/garch/returns.csv",
        "--method",
        "laplace",
        "--se",
        "robust",
    ]);
    assert_eq!(o.status.code(), Some(2));
}

fn inv_logit(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

#[test]
fn categorical_and_ordered_outcomes_give_one_value_per_integer() {
    // ordered_logistic with a vector location (split per element) and shared cut-points;
    // categorical_logit with as many outcomes as categories (β shared, not split)
    let text = "data { array[4] int y; vector[4] x; array[3] int z; }\n\
                parameters { real b; ordered[2] c; vector[3] beta; }\n\
                model {\n  y ~ ordered_logistic(x * b, c);\n  z ~ categorical_logit(beta);\n}\n";
    let json = "{\"y\": [1, 3, 2, 2], \"x\": [0.5, 1.5, -0.3, 0.0], \"z\": [2, 2, 3]}";
    let model = common::compile_source("cat.bayes", text, Some(json), &[]);
    // ζ = (b, c1, log(c2 − c1), β)
    let zeta = [0.8, -0.5, 0.2_f64, 0.1, -0.4, 0.6];
    let (b, c1, c2) = (zeta[0], zeta[1], zeta[1] + zeta[2].exp());
    let ll = model.pointwise_log_likelihood(&zeta).unwrap();
    assert_eq!(ll.len(), 7);
    let x = [0.5, 1.5, -0.3, 0.0];
    let y = [1, 3, 2, 2];
    for i in 0..4 {
        let eta = x[i] * b;
        let p = match y[i] {
            1 => 1.0 - inv_logit(eta - c1),
            2 => inv_logit(eta - c1) - inv_logit(eta - c2),
            _ => inv_logit(eta - c2),
        };
        assert!(
            (ll[i] - p.ln()).abs() < 1e-10,
            "y[{i}]: {} vs {}",
            ll[i],
            p.ln()
        );
    }
    let beta = &zeta[3..];
    let log_sum = beta.iter().map(|v| v.exp()).sum::<f64>().ln();
    for (j, z) in [2, 2, 3].iter().enumerate() {
        let expected = beta[z - 1] - log_sum;
        assert!((ll[4 + j] - expected).abs() < 1e-10, "z[{j}]");
    }
}

#[test]
fn observation_count_that_depends_on_parameters_is_an_error() {
    use bayesc::inference::sandwich::{SandwichError, robust_covariance};
    let model =
        normal_model("  if (mu > 0) y ~ normal(mu, sigma); else y[1:2] ~ normal(mu, sigma);");
    assert_eq!(
        model.pointwise_log_likelihood(&[0.0, 0.0]).unwrap().len(),
        2
    );
    assert_eq!(
        model.pointwise_log_likelihood(&[0.1, 0.0]).unwrap().len(),
        5
    );
    let pointwise = |z: &[f64]| model.pointwise_log_likelihood(z);
    let e = robust_covariance(&pointwise, &[0.0, 0.0], &[1.0, 0.0, 0.0, 1.0]).unwrap_err();
    assert_eq!(
        e,
        SandwichError::ObservationCountChanged {
            at_point: 2,
            perturbed: 5,
            coordinate: 0
        }
    );
    assert!(
        e.to_string().contains("number of observations changed"),
        "{e}"
    );
}
