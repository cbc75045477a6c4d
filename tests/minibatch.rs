//! Minibatching (specs/survey_vi.md §2; docs/minibatch.md): the N/M-scaled batch estimate
//! averaged over one epoch of disjoint batches equals the full-data log density and gradient,
//! minibatch QNVB and diagonal QBVI recover the exact posterior means of a linear regression,
//! and `--batch-size` is refused where it does not apply.

mod common;

use bayesc::data::DataSource;
use bayesc::data::json::parse_json;
use bayesc::fit::MinibatchPlan;
use bayesc::graph::Model;
use bayesc::inference::qbvi::{self, Control, Covariance, QbviSettings};
use bayesc::inference::qnvb::{self, CurvatureAverage, QnvbSettings};
use bayesc::inference::{LogDensity, MinibatchDensity};
use bayesc::pipeline;
use bayesc::syntax::source::SourceMap;

/// Checks and compiles `text` against JSON data and builds the plan for batch size `m`.
fn setup(text: &str, json: &str, m: usize) -> (Model, MinibatchPlan) {
    let mut sources = SourceMap::new();
    let checked = pipeline::check_source(&mut sources, "t.bayes", text).expect("model checks");
    let data = vec![DataSource::Json(parse_json("d.json", json).expect("json"))];
    let model = pipeline::compile(&checked, &sources, &data).expect("model compiles");
    let plan = pipeline::minibatch_plan(&checked, &data, &model, m, None).expect("separable");
    (model, plan)
}

fn json_vec(xs: &[f64]) -> String {
    let s: Vec<String> = xs.iter().map(|x| format!("{x}")).collect();
    format!("[{}]", s.join(","))
}

/// A fixed permutation of 0..n (a multiplicative step coprime to n).
fn permutation(n: usize) -> Vec<usize> {
    let step = (1..n)
        .rev()
        .find(|s| gcd(*s, n) == 1 && *s > n / 2)
        .unwrap_or(1);
    (0..n).map(|i| (i * step + 3) % n).collect()
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// Asserts that the mean over the N/M disjoint batches of a permutation of L̂_B and ∇L̂_B equals
/// L and ∇L at `theta`, and that a single batch does not (so the check can fail).
fn check_epoch_average(model: &Model, plan: &MinibatchPlan, theta: &[f64]) {
    let mm = model
        .minibatch(&plan.separability)
        .expect("plan fits the model");
    let (n, m, d) = (mm.n_obs(), plan.settings.batch_size, model.dim());
    assert_eq!(n % m, 0);
    let mut g_full = vec![0.0; d];
    let full = mm.log_density_grad(theta, &mut g_full).unwrap();
    let perm = permutation(n);
    let (mut v, mut g) = (0.0, vec![0.0; d]);
    let mut g_b = vec![0.0; d];
    let mut first = None;
    for rows in perm.chunks(m) {
        let lb = mm.log_density_grad_batch(theta, rows, &mut g_b).unwrap();
        assert!(
            (mm.batch(rows).unwrap().log_density(theta).unwrap() - lb).abs() <= 1e-9 * lb.abs(),
            "value-only and gradient paths agree"
        );
        first.get_or_insert(lb);
        v += lb / (n / m) as f64;
        for i in 0..d {
            g[i] += g_b[i] / (n / m) as f64;
        }
    }
    let tol = 1e-10 * (1.0 + full.abs());
    assert!((v - full).abs() < tol, "epoch mean {v} vs full {full}");
    for i in 0..d {
        assert!(
            (g[i] - g_full[i]).abs() < 1e-10 * (1.0 + g_full[i].abs()),
            "gradient {i}: epoch mean {} vs full {}",
            g[i],
            g_full[i]
        );
    }
    assert!(
        (first.unwrap() - full).abs() > 1e-3,
        "a single batch differs from the full data"
    );
}

/// Deterministic pseudo-data.
fn wave(i: usize, a: f64) -> f64 {
    (a * i as f64).sin()
}

#[test]
fn linear_regression_epoch_average_is_the_full_log_density() {
    let n = 12;
    let x: Vec<f64> = (0..n).map(|i| i as f64 / n as f64).collect();
    let y: Vec<f64> = (0..n)
        .map(|i| 0.5 + 1.5 * x[i] + 0.4 * wave(i, 2.3))
        .collect();
    let json = format!(
        r#"{{"N": {n}, "x": {}, "y": {}}}"#,
        json_vec(&x),
        json_vec(&y)
    );
    let text = "data { int N; vector[N] x; vector[N] y; }
        parameters { real a; real b; real<lower=0> sigma; }
        model { a ~ normal(0, 1); b ~ normal(0, 1); sigma ~ lognormal(0, 1);
                y ~ normal(a + b * x, sigma); }";
    let (model, plan) = setup(text, &json, 4);
    check_epoch_average(&model, &plan, &[0.3, -0.7, 0.2]);
}

#[test]
fn bnn_epoch_average_is_the_full_log_density() {
    let (n, p, h) = (12, 2, 3);
    let rows: Vec<String> = (0..n)
        .map(|i| format!("[{}, {}]", wave(i, 1.1), wave(i, 0.7) * 2.0))
        .collect();
    let y: Vec<f64> = (0..n).map(|i| wave(i, 0.9)).collect();
    let json = format!(
        r#"{{"N": {n}, "X": [{}], "y": {}}}"#,
        rows.join(","),
        json_vec(&y)
    );
    let text = format!(
        "data {{ int N; matrix[N, {p}] X; vector[N] y; }}
        parameters {{ matrix[{p}, {h}] W1; vector[{h}] b1; vector[{h}] w2; real b2;
                      real<lower=0> sigma; }}
        model {{
          matrix[N, {h}] Z = tanh(X * W1 + rep_matrix(b1', N));
          to_vector(W1) ~ normal(0, 1);
          b1 ~ normal(0, 1);
          w2 ~ normal(0, 1);
          b2 ~ normal(0, 1);
          sigma ~ normal(0, 1);
          y ~ normal(Z * w2 + b2, sigma);
        }}"
    );
    let (model, plan) = setup(&text, &json, 3);
    let d = model.dim();
    let theta: Vec<f64> = (0..d).map(|i| 0.4 * wave(i, 1.7)).collect();
    check_epoch_average(&model, &plan, &theta);
}

#[test]
fn transformed_data_and_row_loop_epoch_average_is_the_full_log_density() {
    let n = 10;
    let x: Vec<f64> = (0..n).map(|i| 1.0 + i as f64 / 3.0).collect();
    let cnt: Vec<String> = (0..n).map(|i| format!("{}", (i * 7) % 5)).collect();
    let g: Vec<String> = (0..n).map(|i| format!("{}", 1 + i % 3)).collect();
    let json = format!(
        r#"{{"N": {n}, "x": {}, "k": [{}], "g": [{}]}}"#,
        json_vec(&x),
        cnt.join(","),
        g.join(",")
    );
    // row-wise transformed data (log, append_col), a per-row loop over the kernel fast path,
    // an index into a parameter by a row-indexed group, a vectorised `target +=`.
    let text = "data { int N; vector[N] x; array[N] int k; array[N] int g; }
        transformed data {
          vector[N] lx = log(x);
          matrix[N, 2] D = append_col(rep_vector(1, N), lx);
        }
        parameters { vector[2] beta; vector[3] u; }
        model {
          beta ~ normal(0, 2);
          for (j in 1:3) u[j] ~ normal(0, 1);
          for (n in 1:N) {
            k[n] ~ poisson_log(D[n] * beta + u[g[n]]);
          }
          target += -0.5 * sum(square(lx * beta[2]));
        }";
    let (model, plan) = setup(text, &json, 5);
    assert_eq!(plan.separability.sliced, ["x", "k", "g", "lx", "D"]);
    check_epoch_average(&model, &plan, &[0.2, -0.3, 0.1, 0.4, -0.2]);
}

/// Bayesian linear regression T2 of specs/survey_vi.md §1 (known σ_y = 0.5, prior N(0, I)):
/// exact posterior mean μ₂ = (0.5733945, 1.3759339), sd (0.2151, 0.3553); mean-field sd
/// (0.1111, 0.1835).
fn t2() -> (Model, MinibatchPlan) {
    let n = 20;
    let t: Vec<f64> = (1..=n).map(|i| i as f64 / 20.0).collect();
    let y: Vec<f64> = (1..=n)
        .map(|i| 0.5 + 1.5 * t[i - 1] + 0.4 * (2.3 * i as f64).sin())
        .collect();
    let json = format!(
        r#"{{"N": {n}, "t": {}, "y": {}}}"#,
        json_vec(&t),
        json_vec(&y)
    );
    let text = "data { int N; vector[N] t; vector[N] y; }
        parameters { real a; real b; }
        model { a ~ normal(0, 1); b ~ normal(0, 1); y ~ normal(a + b * t, 0.5); }";
    setup(text, &json, 5)
}

const MU2: [f64; 2] = [0.5733945, 1.3759339];
/// Mean-field optimum variances of T2 (survey_vi.md §1).
const MF_VAR2: [f64; 2] = [0.0123457, 0.0336700];

/// Variances within 25 % of the mean-field optimum (batch noise; QNVB's RMS curvature rule
/// makes σ slightly small, specs/qnvb.md §5).
fn check_variances(var: &[f64]) {
    for i in 0..2 {
        assert!(
            (var[i] / MF_VAR2[i] - 1.0).abs() < 0.25,
            "variance {i}: {} vs {}",
            var[i],
            MF_VAR2[i]
        );
    }
}

#[test]
fn minibatch_qnvb_recovers_the_linear_regression_posterior_mean() {
    let (model, plan) = t2();
    let mm = model.minibatch(&plan.separability).unwrap();
    let settings = QnvbSettings {
        curvature: CurvatureAverage::Rms,
        seed: 3,
        ..QnvbSettings::default()
    };
    let fit = qnvb::fit_qnvb_minibatch(&mm, &[0.0, 0.0], &settings, &plan.settings, &mut |_, _| {
        true
    })
    .unwrap();
    assert!(!fit.epoch_elbo.is_empty());
    // Tolerance: 0.05, a quarter of the posterior sd (batch noise on the final iterate).
    for (i, mu) in MU2.iter().enumerate() {
        assert!(
            (fit.mean[i] - mu).abs() < 0.05,
            "mean {i}: {} vs {mu}",
            fit.mean[i]
        );
    }
    check_variances(&fit.variance);
}

#[test]
fn minibatch_diagonal_qbvi_recovers_the_linear_regression_posterior_mean() {
    let (model, plan) = t2();
    let mm = model.minibatch(&plan.separability).unwrap();
    let settings = QbviSettings {
        covariance: Covariance::Diagonal,
        seed: 3,
        ..QbviSettings::default()
    };
    let fit = qbvi::fit_qbvi_minibatch(&mm, &[0.0, 0.0], &settings, &plan.settings, &mut |_| {
        Control::Continue
    })
    .unwrap();
    assert!(!fit.epoch_elbo.is_empty());
    // Tolerance: 0.05, a quarter of the posterior sd (batch noise on the last iterate).
    for (i, mu) in MU2.iter().enumerate() {
        assert!(
            (fit.mean[i] - mu).abs() < 0.05,
            "mean {i}: {} vs {mu}",
            fit.mean[i]
        );
    }
    check_variances(&fit.covariance);
    // Full covariance is refused.
    let full = QbviSettings {
        covariance: Covariance::Full,
        ..settings
    };
    assert!(
        qbvi::fit_qbvi_minibatch(&mm, &[0.0, 0.0], &full, &plan.settings, &mut |_| {
            Control::Continue
        })
        .is_err()
    );
}

#[test]
fn batch_size_on_other_methods_is_a_usage_error() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_bayesc"))
        .args([
            "fit",
            "examples/labour/model.bayes",
            "--method",
            "nuts",
            "--batch-size",
            "8",
        ])
        .current_dir(common::root())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--batch-size applies to --method qnvb"),
        "{err}"
    );
}

/// Issue 10's bar: the diabetes BNN (H = 50, d = 602) by minibatch QNVB (M = 64) has a test RMSE
/// of the posterior-predictive mean within 0.05 of NumPyro SVI's 0.713 (standardised scale).
/// Measured 0.709 (seed 1), about 5 s of fitting. Slow (a 602-parameter fit and 1000 predictive
/// draws): run with `--ignored`.
#[test]
#[ignore]
fn diabetes_bnn_minibatch_qnvb_test_rmse() {
    let data = common::shared_data("bnn");
    let dir = std::env::temp_dir().join(format!("bayesc_mb_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fit = dir.join("fit.json");
    let pred = dir.join("pred.csv");
    let bin = env!("CARGO_BIN_EXE_bayesc");
    let model = common::root().join("tests/fixtures/bnn_diabetes.bayes");
    let st = std::process::Command::new(bin)
        .arg("fit")
        .arg(&model)
        .arg("--data")
        .arg(data.join("diabetes_train.csv"))
        .args([
            "--method",
            "qnvb",
            "--batch-size",
            "64",
            "--seed",
            "1",
            "--random-init",
            "-q",
        ])
        .arg("--save-fit")
        .arg(&fit)
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let st = std::process::Command::new(bin)
        .arg("predict")
        .arg(&model)
        .arg("--fit")
        .arg(&fit)
        .arg("--data")
        .arg(data.join("diabetes_test.csv"))
        .arg("-o")
        .arg(&pred)
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let y: Vec<f64> = std::fs::read_to_string(data.join("diabetes_test.csv"))
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.rsplit(',').next().unwrap().parse().unwrap())
        .collect();
    let text = std::fs::read_to_string(&pred).unwrap();
    let mean: std::collections::HashMap<String, f64> = text
        .lines()
        .skip(1)
        .map(|l| {
            let mut f = l.split(',');
            (
                f.next().unwrap().to_string(),
                f.next().unwrap().parse().unwrap(),
            )
        })
        .collect();
    let mse = (0..y.len())
        .map(|i| (mean[&format!("y_pred[{}]", i + 1)] - y[i]).powi(2))
        .sum::<f64>()
        / y.len() as f64;
    let rmse = mse.sqrt();
    assert!((rmse - 0.713).abs() < 0.05, "test RMSE {rmse}");
    let _ = std::fs::remove_dir_all(&dir);
}
