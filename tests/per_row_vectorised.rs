//! Per-row log-likelihood gradients from one vectorised reverse pass (`graph::per_row`,
//! `MinibatchModel::log_lik_grads_vectorised`) against the one-pass-per-row loop
//! (`MinibatchDensity::log_lik_grads`), to 1e-10 relative, on a linear regression, a logistic
//! regression, one-hidden-layer tanh BNNs (fused dense layer and unfused layers) and a
//! hierarchical model with a parameter indexed by data, the GLM functions; the rows plus the prior part sum to
//! the full-data gradient; the moments (Σ g_i, Σ g_i²) match; and models whose shapes do not
//! allow the pass (a reduction over rows, a per-row loop, a multivariate density) fall back
//! to the loop with the same moments.

use bayesc::data::DataSource;
use bayesc::data::json::parse_json;
use bayesc::graph::Model;
use bayesc::inference::{LogDensity, MinibatchDensity};
use bayesc::pipeline;
use bayesc::syntax::source::SourceMap;

fn setup(text: &str, json: &str, m: usize) -> (Model, bayesc::fit::MinibatchPlan) {
    let mut sources = SourceMap::new();
    let checked = pipeline::check_source(&mut sources, "t.bayes", text).expect("model checks");
    let data = vec![DataSource::Json(parse_json("d.json", json).expect("json"))];
    let model = pipeline::compile(&checked, &sources, &data).expect("model compiles");
    let plan = pipeline::minibatch_plan(&checked, &data, &model, m, None).expect("separable");
    (model, plan)
}

/// A deterministic pseudo-random number in (−1, 1).
fn u(i: usize) -> f64 {
    ((i as f64 * 12.9898 + 78.233).sin() * 43758.5453).fract()
}

fn json_vec(xs: &[f64]) -> String {
    let s: Vec<String> = xs.iter().map(|x| format!("{x}")).collect();
    format!("[{}]", s.join(","))
}

/// An N × K matrix as JSON rows.
fn json_mat(n: usize, k: usize, seed: usize) -> String {
    let rows: Vec<String> = (0..n)
        .map(|i| json_vec(&(0..k).map(|j| u(seed + i * k + j)).collect::<Vec<_>>()))
        .collect();
    format!("[{}]", rows.join(","))
}

fn close(a: f64, b: f64, scale: f64, what: &str) {
    assert!(
        (a - b).abs() <= 1e-10 * (scale + b.abs()),
        "{what}: vectorised {a} vs loop {b}"
    );
}

/// Vectorised per-row gradients equal the loop's on the batch `rows` at `theta`; the sum over
/// all N rows plus the prior part equals the full-data gradient; the moments agree.
fn check(model: &Model, plan: &bayesc::fit::MinibatchPlan, theta: &[f64], rows: &[usize]) {
    let mm = model.minibatch(&plan.separability).expect("plan fits");
    let (n, d, m) = (mm.n_obs(), model.dim(), rows.len());
    let (mut values, mut loop_g) = (vec![0.0; m], vec![0.0; m * d]);
    mm.log_lik_grads(theta, rows, &mut values, &mut loop_g)
        .unwrap();
    let mut vec_g = vec![f64::NAN; m * d];
    let v = mm
        .log_lik_grads_vectorised(theta, rows, &mut vec_g)
        .unwrap()
        .expect("the shapes allow the vectorised pass");
    let scale = loop_g.iter().fold(0.0f64, |a, g| a.max(g.abs()));
    assert!(scale > 0.0);
    for k in 0..m {
        for j in 0..d {
            close(
                vec_g[k * d + j],
                loop_g[k * d + j],
                1e-3 * scale,
                &format!("row {} coordinate {j}", rows[k]),
            );
        }
    }
    let lik: f64 = values.iter().sum();
    close(v, lik, 1.0, "Σ ℓ_i");
    // The rows differ from each other (so the comparison is per row, not of a sum).
    assert!(m == 1 || (0..d).any(|j| (vec_g[j] - vec_g[d + j]).abs() > 1e-6 * scale));

    // All N rows + prior = full-data gradient.
    let all: Vec<usize> = (0..n).collect();
    let mut g_all = vec![0.0; n * d];
    let v_all = mm
        .log_lik_grads_vectorised(theta, &all, &mut g_all)
        .unwrap()
        .expect("vectorised on all rows");
    let mut g_prior = vec![0.0; d];
    let p = mm.prior_grad(theta, &mut g_prior).unwrap();
    let mut g_full = vec![0.0; d];
    // π (prior_grad) includes the Jacobian, as L (log_density_grad) does.
    let full = mm.log_density_grad(theta, &mut g_full).unwrap();
    close(v_all + p, full, 1.0 + full.abs(), "π + Σ ℓ_i = L");
    let gscale = g_full.iter().fold(0.0f64, |a, g| a.max(g.abs()));
    for j in 0..d {
        let s: f64 = (0..n).map(|k| g_all[k * d + j]).sum::<f64>() + g_prior[j];
        close(
            s,
            g_full[j],
            1e-3 * gscale,
            &format!("Σ rows + prior, coordinate {j}"),
        );
    }

    // Moments through the trait (vectorised) against the loop's sums.
    let (mut s1, mut s2) = (vec![0.0; d], vec![0.0; d]);
    let v_m = mm
        .log_lik_grad_moments(theta, rows, &mut s1, &mut s2)
        .unwrap();
    assert!(mm.per_row_vectorised());
    close(v_m, lik, 1.0, "moments value");
    for j in 0..d {
        let a: f64 = (0..m).map(|k| loop_g[k * d + j]).sum();
        let b: f64 = (0..m).map(|k| loop_g[k * d + j].powi(2)).sum();
        close(s1[j], a, 1e-3 * scale, "Σ g_i");
        close(s2[j], b, 1e-3 * scale * scale, "Σ g_i²");
    }
    // The plain sum (one ordinary reverse pass over the batch).
    let mut s0 = vec![0.0; d];
    let v0 = mm.log_lik_grad_sum(theta, rows, &mut s0).unwrap();
    close(v0, lik, 1.0, "sum value");
    for j in 0..d {
        close(s0[j], s1[j], 1e-3 * scale, "Σ g_i, one pass");
    }
}

fn theta(d: usize, seed: usize, s: f64) -> Vec<f64> {
    (0..d).map(|i| s * u(seed + i)).collect()
}

#[test]
fn linear_regression() {
    let n = 30;
    let x: Vec<f64> = (0..n).map(|i| u(i)).collect();
    let y: Vec<f64> = (0..n)
        .map(|i| 0.5 + 1.2 * x[i] + 0.3 * u(100 + i))
        .collect();
    let json = format!(
        "{{\"N\": {n}, \"K\": 3, \"X\": {}, \"x\": {}, \"y\": {}}}",
        json_mat(n, 3, 7),
        json_vec(&x),
        json_vec(&y)
    );
    let text = "
data { int<lower=1> N; int K; matrix[N, K] X; vector[N] x; vector[N] y; }
parameters { real a; real b; vector[K] beta; real<lower=0> sigma; }
model {
  a ~ normal(0, 2);
  b ~ normal(0, 2);
  beta ~ normal(0, 1);
  sigma ~ lognormal(0, 1);
  y ~ normal(a + b * x + X * beta, sigma);
}";
    let (model, plan) = setup(text, &json, 8);
    let th = theta(model.dim(), 3, 0.8);
    check(&model, &plan, &th, &[3, 17, 0, 29, 11, 5, 22, 8]);
    check(&model, &plan, &th, &[4]);
}

#[test]
fn logistic_regression() {
    let n = 40;
    let y: Vec<String> = (0..n)
        .map(|i| format!("{}", (u(300 + i) > 0.0) as i32))
        .collect();
    let json = format!(
        "{{\"N\": {n}, \"K\": 4, \"X\": {}, \"y\": [{}]}}",
        json_mat(n, 4, 11),
        y.join(",")
    );
    let text = "
data { int<lower=1> N; int K; matrix[N, K] X; array[N] int<lower=0, upper=1> y; }
parameters { real alpha; vector[K] beta; }
model {
  alpha ~ normal(0, 2);
  beta ~ normal(0, 1);
  y ~ bernoulli_logit(alpha + X * beta);
}";
    let (model, plan) = setup(text, &json, 16);
    let th = theta(model.dim(), 5, 1.5);
    check(
        &model,
        &plan,
        &th,
        &(0..16).map(|i| (i * 7 + 3) % n).collect::<Vec<_>>(),
    );
    // The same model written with target += and the lpmf.
    let text2 = text.replace(
        "y ~ bernoulli_logit(alpha + X * beta);",
        "target += bernoulli_logit_lpmf(y | alpha + X * beta);",
    );
    let (model, plan) = setup(&text2, &json, 16);
    check(
        &model,
        &plan,
        &th,
        &(0..16).map(|i| (i * 5 + 1) % n).collect::<Vec<_>>(),
    );
}

fn bnn_json(n: usize, p: usize) -> String {
    let y: Vec<f64> = (0..n)
        .map(|i| (2.0 * u(500 + i)).sin() + 0.1 * u(900 + i))
        .collect();
    format!(
        "{{\"N\": {n}, \"P\": {p}, \"X\": {}, \"y\": {}}}",
        json_mat(n, p, 21),
        json_vec(&y)
    )
}

/// The dense tanh layer in the form the graph fuses into one node (`tape::dense`).
#[test]
fn tanh_bnn_fused_dense_layer() {
    let text = "
data { int<lower=1> N; int P; matrix[N, P] X; vector[N] y; }
transformed data { int H = 6; }
parameters { matrix[P, H] W1; row_vector[H] b1; vector[H] w2; real b2; real<lower=0> sigma; }
model {
  vector[N] f = tanh(X * W1 + rep_matrix(b1, N)) * w2 + b2;
  to_vector(W1) ~ normal(0, 1);
  b1 ~ normal(0, 1);
  w2 ~ normal(0, 1 / sqrt(H));
  b2 ~ normal(0, 1);
  sigma ~ normal(0, 1);
  y ~ normal(f, sigma);
}";
    let (model, plan) = setup(text, &bnn_json(25, 3), 10);
    let th = theta(model.dim(), 9, 1.0);
    check(
        &model,
        &plan,
        &th,
        &(0..10).map(|i| (i * 3 + 2) % 25).collect::<Vec<_>>(),
    );
}

/// Unfused layers: elementwise maps, a broadcast bias, products of variables.
#[test]
fn bnn_unfused_layers() {
    let text = "
data { int<lower=1> N; int P; matrix[N, P] X; vector[N] y; }
transformed data { int H = 5; }
parameters { matrix[P, H] W1; row_vector[H] b1; vector[H] w2; real b2; real<lower=0> sigma; }
model {
  matrix[N, H] Z = inv_logit(X * W1 + rep_matrix(b1, N));
  vector[N] f = (Z .* Z) * w2 + b2;
  to_vector(W1) ~ normal(0, 1);
  b1 ~ normal(0, 1);
  w2 ~ normal(0, 1);
  b2 ~ normal(0, 1);
  sigma ~ normal(0, 1);
  y ~ student_t(4, f, sigma);
}";
    let (model, plan) = setup(text, &bnn_json(20, 2), 7);
    let th = theta(model.dim(), 13, 1.0);
    check(&model, &plan, &th, &[19, 0, 5, 6, 12, 3, 8]);
}

/// A parameter indexed by a data column (`alpha[g]`): the gather feeds rows from one slot.
#[test]
fn hierarchical_indexing() {
    let n = 24;
    let g: Vec<String> = (0..n).map(|i| format!("{}", 1 + (i * 5) % 4)).collect();
    let y: Vec<f64> = (0..n).map(|i| u(40 + i) + (i % 4) as f64).collect();
    let json = format!(
        "{{\"N\": {n}, \"J\": 4, \"g\": [{}], \"y\": {}}}",
        g.join(","),
        json_vec(&y)
    );
    let text = "
data { int<lower=1> N; int J; array[N] int<lower=1, upper=J> g; vector[N] y; }
parameters { real mu; real<lower=0> tau; vector[J] alpha; real<lower=0> sigma; }
model {
  mu ~ normal(0, 5);
  tau ~ normal(0, 1);
  alpha ~ normal(mu, tau);
  sigma ~ normal(0, 1);
  y ~ normal(alpha[g], sigma);
}";
    let (model, plan) = setup(text, &json, 6);
    let th = theta(model.dim(), 17, 0.7);
    check(&model, &plan, &th, &[1, 2, 3, 4, 9, 23]);
}

/// Shapes the pass does not handle give `None`, and the moments fall back to the loop.
#[test]
fn unsupported_shapes_fall_back_to_the_loop() {
    let n = 12;
    let x: Vec<f64> = (0..n).map(|i| u(i)).collect();
    let y: Vec<f64> = (0..n).map(|i| x[i] + 0.2 * u(60 + i)).collect();
    let json = format!(
        "{{\"N\": {n}, \"x\": {}, \"y\": {}}}",
        json_vec(&x),
        json_vec(&y)
    );
    let texts = [
        // A reduction over rows in a target += statement.
        "data { int<lower=1> N; vector[N] x; vector[N] y; }
parameters { real a; real b; }
model { a ~ normal(0, 1); b ~ normal(0, 1); target += -0.5 * dot_self(y - a - b * x); }",
        // A loop over the rows with scalar densities.
        "data { int<lower=1> N; vector[N] x; vector[N] y; }
parameters { real a; real b; }
model { a ~ normal(0, 1); b ~ normal(0, 1);
  for (n in 1:N) y[n] ~ normal(a + b * x[n], 1); }",
    ];
    for text in texts {
        let (model, plan) = setup(text, &json, 4);
        let mm = model.minibatch(&plan.separability).unwrap();
        let d = model.dim();
        let rows = [2, 7, 9, 0];
        let th = [0.3, -0.4];
        let mut g = vec![0.0; 4 * d];
        assert_eq!(
            mm.log_lik_grads_vectorised(&th, &rows, &mut g).unwrap(),
            None
        );
        let mut values = vec![0.0; 4];
        mm.log_lik_grads(&th, &rows, &mut values, &mut g).unwrap();
        let (mut s1, mut s2) = (vec![0.0; d], vec![0.0; d]);
        let v = mm
            .log_lik_grad_moments(&th, &rows, &mut s1, &mut s2)
            .unwrap();
        assert!(!mm.per_row_vectorised());
        close(v, values.iter().sum(), 1.0, "value");
        for j in 0..d {
            let a: f64 = (0..4).map(|k| g[k * d + j]).sum();
            let b: f64 = (0..4).map(|k| g[k * d + j].powi(2)).sum();
            assert!((s1[j] - a).abs() <= 1e-12 * (1.0 + a.abs()));
            assert!((s2[j] - b).abs() <= 1e-12 * (1.0 + b.abs()));
        }
    }
}

/// A softmax output layer: `y ~ categorical_logit(Eta)` with one row of log odds per row.
#[test]
fn softmax_bnn() {
    let n = 21;
    let y: Vec<String> = (0..n)
        .map(|i| format!("{}", 1 + ((u(700 + i) + 1.0) * 1.5) as usize % 3))
        .collect();
    let json = format!(
        "{{\"N\": {n}, \"P\": 3, \"X\": {}, \"y\": [{}]}}",
        json_mat(n, 3, 31),
        y.join(",")
    );
    let text = "
data { int<lower=1> N; int P; matrix[N, P] X; array[N] int<lower=1, upper=3> y; }
parameters { matrix[P, 4] W1; row_vector[4] b1; matrix[4, 3] W2; row_vector[3] b2; }
model {
  matrix[N, 3] eta = tanh(X * W1 + rep_matrix(b1, N)) * W2 + rep_matrix(b2, N);
  to_vector(W1) ~ normal(0, 1);
  b1 ~ normal(0, 1);
  to_vector(W2) ~ normal(0, 1);
  b2 ~ normal(0, 1);
  y ~ categorical_logit(eta);
}";
    let (model, plan) = setup(text, &json, 9);
    let th = theta(model.dim(), 41, 1.2);
    check(
        &model,
        &plan,
        &th,
        &(0..9).map(|i| (i * 4 + 1) % n).collect::<Vec<_>>(),
    );
}

/// The GLM functions are split per row of x (`graph::per_row::record_glm_rows`): Bernoulli
/// with a scalar intercept, Poisson with an intercept vector indexed by a data group, and the
/// categorical GLM with a C-vector intercept and a K × C coefficient matrix.
#[test]
fn glm_functions() {
    let n = 24;
    let yb: Vec<String> = (0..n)
        .map(|i| format!("{}", (u(900 + i) > 0.0) as i32))
        .collect();
    let yp: Vec<String> = (0..n)
        .map(|i| format!("{}", ((u(950 + i) + 1.0) * 2.0) as i32))
        .collect();
    let yc: Vec<String> = (0..n)
        .map(|i| format!("{}", 1 + ((u(990 + i) + 1.0) * 1.5) as usize % 3))
        .collect();
    let g: Vec<String> = (0..n).map(|i| format!("{}", 1 + i % 3)).collect();
    let json = format!(
        "{{\"N\": {n}, \"K\": 3, \"X\": {}, \"yb\": [{}], \"yp\": [{}], \"yc\": [{}], \"g\": [{}]}}",
        json_mat(n, 3, 51),
        yb.join(","),
        yp.join(","),
        yc.join(","),
        g.join(",")
    );
    let head = "data { int<lower=1> N; int K; matrix[N, K] X; array[N] int yb; array[N] int yp;
  array[N] int yc; array[N] int g; }\n";
    let texts = [
        "parameters { real a; vector[K] beta; }
model { a ~ normal(0, 1); beta ~ normal(0, 1); yb ~ bernoulli_logit_glm(X, a, beta); }",
        "parameters { vector[3] a; vector[K] beta; }
model { a ~ normal(0, 1); beta ~ normal(0, 1); yp ~ poisson_log_glm(X, a[g], beta); }",
        "parameters { vector[3] a; matrix[K, 3] B; }
model { a ~ normal(0, 1); to_vector(B) ~ normal(0, 1);
  target += categorical_logit_glm_lpmf(yc | X, a, B); }",
    ];
    for (t, text) in texts.iter().enumerate() {
        let (model, plan) = setup(&format!("{head}{text}"), &json, 10);
        let th = theta(model.dim(), 61 + t, 0.7);
        check(
            &model,
            &plan,
            &th,
            &(0..10).map(|i| (i * 5 + t) % n).collect::<Vec<_>>(),
        );
    }
}

/// The model with the default (loop) moments: every method but `log_lik_grad_moments`
/// delegates, so the trait's default sums `log_lik_grads` row by row.
struct LoopOnly<'a>(&'a bayesc::graph::batch::MinibatchModel<'a>);

impl LogDensity for LoopOnly<'_> {
    fn dim(&self) -> usize {
        self.0.dim()
    }
    fn log_density(&self, theta: &[f64]) -> Result<f64, bayesc::inference::DensityError> {
        self.0.log_density(theta)
    }
    fn log_density_grad(
        &self,
        theta: &[f64],
        grad: &mut [f64],
    ) -> Result<f64, bayesc::inference::DensityError> {
        self.0.log_density_grad(theta, grad)
    }
}

impl MinibatchDensity for LoopOnly<'_> {
    fn n_obs(&self) -> usize {
        self.0.n_obs()
    }
    fn batch<'a>(
        &'a self,
        rows: &[usize],
    ) -> Result<Box<dyn LogDensity + 'a>, bayesc::inference::DensityError> {
        self.0.batch(rows)
    }
    fn log_lik_grads(
        &self,
        theta: &[f64],
        rows: &[usize],
        values: &mut [f64],
        grads: &mut [f64],
    ) -> Result<(), bayesc::inference::DensityError> {
        self.0.log_lik_grads(theta, rows, values, grads)
    }
    fn prior_grad(
        &self,
        theta: &[f64],
        grad: &mut [f64],
    ) -> Result<f64, bayesc::inference::DensityError> {
        self.0.prior_grad(theta, grad)
    }
}

/// VOGN and Vadam fit the same q from the vectorised moments as from the loop's, to rounding
/// (the sums are taken in another order), on a small tanh BNN with minibatches.
#[test]
fn vogn_and_vadam_fits_match_the_loop() {
    use bayesc::inference::minibatch::MinibatchSettings;
    use bayesc::inference::vi::Control;
    use bayesc::inference::vi::vadam::{VadamSettings, fit_vadam};
    use bayesc::inference::vi::vogn::{VognSettings, fit_vogn};
    let text = "
data { int<lower=1> N; int P; matrix[N, P] X; vector[N] y; }
parameters { matrix[P, 3] W1; row_vector[3] b1; vector[3] w2; real b2; real<lower=0> sigma; }
model {
  vector[N] f = tanh(X * W1 + rep_matrix(b1, N)) * w2 + b2;
  to_vector(W1) ~ normal(0, 1);
  b1 ~ normal(0, 1);
  w2 ~ normal(0, 1);
  b2 ~ normal(0, 1);
  sigma ~ normal(0, 1);
  y ~ normal(f, sigma);
}";
    let (model, plan) = setup(text, &bnn_json(24, 2), 6);
    let mm = model.minibatch(&plan.separability).unwrap();
    let lo = LoopOnly(&mm);
    let d = model.dim();
    let init = theta(d, 51, 0.3);
    let ms = MinibatchSettings {
        batch_size: 6,
        min_iterations: 100,
        min_epochs: 5,
        ..MinibatchSettings::default()
    };
    let mut vs = VognSettings::default();
    vs.common.max_iter = 300;
    vs.common.seed = 3;
    let a = fit_vogn(&mm, &init, &vs, Some(&ms), &mut |_| Control::Continue).unwrap();
    let b = fit_vogn(&lo, &init, &vs, Some(&ms), &mut |_| Control::Continue).unwrap();
    assert!(mm.per_row_vectorised());
    assert_eq!(a.iterations, b.iterations);
    for j in 0..d {
        close(a.mean[j], b.mean[j], 1e-4, &format!("VOGN mean {j}"));
        close(
            a.precision[j],
            b.precision[j],
            1e-4,
            &format!("VOGN precision {j}"),
        );
    }
    let mut ds = VadamSettings::default();
    ds.common.max_iter = 300;
    ds.common.seed = 4;
    let a = fit_vadam(&mm, &init, &ds, &ms, &mut |_| Control::Continue).unwrap();
    let b = fit_vadam(&lo, &init, &ds, &ms, &mut |_| Control::Continue).unwrap();
    assert_eq!(a.iterations, b.iterations);
    for j in 0..d {
        close(a.mean[j], b.mean[j], 1e-4, &format!("Vadam mean {j}"));
        close(
            a.precision[j],
            b.precision[j],
            1e-4,
            &format!("Vadam precision {j}"),
        );
    }
}
