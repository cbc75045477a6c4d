//! The multivariate families through whole `.bayes` models: the checker accepts them, gradients
//! of the compiled log density match central finite differences, equivalent parameterisations
//! agree, `_rng` functions run in generated quantities, and misuse gives clear errors.

use bayesc::data::load_json_str;
use bayesc::graph::Model;
use bayesc::inference::LogDensity;
use bayesc::inference::rng::stream;
use bayesc::pipeline;
use bayesc::syntax::report::render_plain;
use bayesc::syntax::source::SourceMap;
use rand::RngExt;

/// Checks and compiles `src` with the Stan-JSON `data`, or returns the rendered diagnostics.
fn try_compile(src: &str, data: &str) -> Result<Model, String> {
    let mut sources = SourceMap::new();
    let result = pipeline::check_source(&mut sources, "model.bayes", src).and_then(|checked| {
        let data = if data.is_empty() {
            vec![]
        } else {
            vec![load_json_str("data.json", data).expect("test data is valid JSON")]
        };
        pipeline::compile(&checked, &sources, &data)
    });
    result.map_err(|f| {
        f.into_reports()
            .iter()
            .map(|d| render_plain(&sources, d))
            .collect()
    })
}

/// The rendered diagnostics of a model that must not compile.
fn compile_error(src: &str, data: &str) -> String {
    match try_compile(src, data) {
        Ok(_) => panic!("model compiled but should not:\n{src}"),
        Err(e) => e,
    }
}

fn compile(src: &str, data: &str) -> Model {
    try_compile(src, data).unwrap_or_else(|e| panic!("model does not compile:\n{e}"))
}

/// `log_density_grad` against central differences of `log_density` at a few random points.
fn check_gradient(model: &Model, seed: u64) {
    let d = model.dim();
    let mut rng = stream(seed, 0);
    for _ in 0..3 {
        let theta: Vec<f64> = (0..d).map(|_| rng.random_range(-1.0..1.0)).collect();
        let mut grad = vec![0.0; d];
        let v = model
            .log_density_grad(&theta, &mut grad)
            .expect("finite density");
        let v0 = model.log_density(&theta).expect("finite density");
        assert!((v - v0).abs() < 1e-10 * (1.0 + v.abs()), "{v} vs {v0}");
        for i in 0..d {
            let h = 1e-6;
            let mut p = theta.clone();
            p[i] += h;
            let fp = model.log_density(&p).unwrap();
            p[i] -= 2.0 * h;
            let fm = model.log_density(&p).unwrap();
            let fd = (fp - fm) / (2.0 * h);
            assert!(
                (fd - grad[i]).abs() < 1e-5 * (1.0 + fd.abs()),
                "component {i}: gradient {} vs finite difference {fd}",
                grad[i]
            );
        }
    }
}

const MVN_DATA: &str =
    r#"{"N": 4, "y": [[0.5, -0.3, 1.2], [1.1, 0.4, 0.2], [-0.6, -1.0, 0.9], [0.0, 0.3, 1.5]]}"#;

#[test]
fn multi_normal_cholesky_with_lkj_prior_has_correct_gradients() {
    let m = compile(
        "data { int N; array[N] vector[3] y; }
         parameters { vector[3] mu; cholesky_factor_corr[3] L; vector<lower=0>[3] tau; }
         model {
           mu ~ normal(0, 2);
           tau ~ exponential(1);
           L ~ lkj_corr_cholesky(2.5);
           y ~ multi_normal_cholesky(mu, diag_pre_multiply(tau, L));
         }",
        MVN_DATA,
    );
    check_gradient(&m, 1);
}

#[test]
fn multi_normal_with_a_covariance_parameter_has_correct_gradients() {
    let m = compile(
        "data { int N; array[N] vector[3] y; }
         parameters { vector[3] mu; cov_matrix[3] Sigma; real<lower=0> eta; }
         model {
           eta ~ gamma(2, 1);
           y ~ multi_normal(mu, Sigma);
           mu ~ multi_normal(rep_vector(0, 3), diag_matrix(rep_vector(4, 3)));
           target += lkj_corr_cholesky_lpdf(diag_matrix(rep_vector(1, 3)) | eta);
           target += multi_normal_cholesky_lpdf(y | mu, cholesky_decompose(Sigma));
         }",
        MVN_DATA,
    );
    check_gradient(&m, 2);
}

#[test]
fn multi_normal_and_its_cholesky_form_give_the_same_log_density() {
    let src = |density: &str| {
        format!(
            "data {{ int N; array[N] vector[3] y; }}
             parameters {{ vector[3] mu; cholesky_factor_corr[3] L; vector<lower=0>[3] tau; }}
             model {{ target += {density}; }}"
        )
    };
    let a = compile(
        &src("multi_normal_lpdf(y | mu, tcrossprod(diag_pre_multiply(tau, L)))"),
        MVN_DATA,
    );
    let b = compile(
        &src("multi_normal_cholesky_lpdf(y | mu, diag_pre_multiply(tau, L))"),
        MVN_DATA,
    );
    let mut rng = stream(3, 0);
    for _ in 0..5 {
        let theta: Vec<f64> = (0..a.dim()).map(|_| rng.random_range(-1.0..1.0)).collect();
        let (va, vb) = (
            a.log_density(&theta).unwrap(),
            b.log_density(&theta).unwrap(),
        );
        assert!((va - vb).abs() < 1e-10, "{va} vs {vb}");
    }
    check_gradient(&a, 4);
}

#[test]
fn dirichlet_and_categorical_have_correct_gradients() {
    let m = compile(
        "data { int N; array[N] int y; }
         parameters { simplex[3] theta; vector<lower=0>[3] alpha; vector[3] beta; }
         model {
           alpha ~ lognormal(0, 1);
           theta ~ dirichlet(alpha);
           y ~ categorical(theta);
           beta ~ normal(0, 1);
           y ~ categorical_logit(beta);
           for (n in 1:N) target += categorical_lpmf(y[n] | softmax(beta));
         }",
        r#"{"N": 6, "y": [1, 3, 3, 2, 1, 3]}"#,
    );
    check_gradient(&m, 5);
}

#[test]
fn categorical_and_categorical_logit_agree_through_softmax() {
    let src = |s: &str| {
        format!(
            "data {{ int N; array[N] int y; }} parameters {{ vector[3] beta; }} model {{ {s} }}"
        )
    };
    let data = r#"{"N": 5, "y": [1, 3, 3, 2, 1]}"#;
    let a = compile(&src("target += categorical_lpmf(y | softmax(beta));"), data);
    let b = compile(&src("target += categorical_logit_lpmf(y | beta);"), data);
    let theta = [0.3, -1.2, 0.8];
    let (va, vb) = (
        a.log_density(&theta).unwrap(),
        b.log_density(&theta).unwrap(),
    );
    assert!((va - vb).abs() < 1e-12);
}

#[test]
fn ordered_logistic_has_correct_gradients_vectorised_and_in_a_loop() {
    let data =
        r#"{"N": 6, "K": 4, "y": [1, 4, 2, 3, 3, 2], "x": [-1.0, 2.0, 0.1, 0.5, 1.2, -0.3]}"#;
    let vectorised = compile(
        "data { int N; int K; array[N] int y; vector[N] x; }
         parameters { real b; ordered[K - 1] c; }
         model { b ~ normal(0, 1); c ~ normal(0, 3); y ~ ordered_logistic(b * x, c); }",
        data,
    );
    check_gradient(&vectorised, 6);
    let looped = compile(
        "data { int N; int K; array[N] int y; vector[N] x; }
         parameters { real b; ordered[K - 1] c; }
         model { b ~ normal(0, 1); c ~ normal(0, 3);
                 for (n in 1:N) y[n] ~ ordered_logistic(b * x[n], c); }",
        data,
    );
    let theta = [0.4, -0.5, 0.2, 0.1];
    let (a, b) = (
        vectorised.log_density(&theta).unwrap(),
        looped.log_density(&theta).unwrap(),
    );
    assert!((a - b).abs() < 1e-12, "{a} vs {b}");
}

#[test]
fn rng_functions_run_in_generated_quantities() {
    let m = compile(
        "parameters { real z; }
         model { z ~ normal(0, 1); }
         generated quantities {
           vector[2] v = multi_normal_rng([1, 2]', [[1, 0.5], [0.5, 2]]);
           vector[2] w = multi_normal_cholesky_rng([0, 0]', [[1, 0], [0.5, 1]]);
           matrix[3, 3] L = lkj_corr_cholesky_rng(3, 2.0);
           vector[3] p = dirichlet_rng([1, 2, 3]');
           int c = categorical_rng(p);
           int d = categorical_logit_rng([0, 1, -1]');
           int k = ordered_logistic_rng(0.5, [-1, 0, 1]');
           array[2] vector[2] vs = multi_normal_rng({[1, 2]', [300, 400]'}, [[1, 0], [0, 1]]);
         }",
        "",
    );
    let names = m.generated_quantity_names();
    let mut rng = stream(8, 0);
    let out = m.write_array(&[0.1], false, true, &mut rng).unwrap();
    let at = |n: &str| out[1 + names.iter().position(|x| x == n).unwrap()];
    let p_sum = at("p[1]") + at("p[2]") + at("p[3]");
    assert!((p_sum - 1.0).abs() < 1e-12);
    assert!((1.0..=3.0).contains(&at("c")) && (1.0..=3.0).contains(&at("d")));
    assert!((1.0..=4.0).contains(&at("k")));
    // One draw per location: the second is near (300, 400).
    assert!((at("vs[2,1]") - 300.0).abs() < 6.0 && (at("vs[2,2]") - 400.0).abs() < 6.0);
    assert!((at("vs[1,1]") - 1.0).abs() < 6.0);
    // L is a correlation Cholesky factor: unit-length rows, zero upper triangle.
    let row3 = at("L[3,1]").powi(2) + at("L[3,2]").powi(2) + at("L[3,3]").powi(2);
    assert!((row3 - 1.0).abs() < 1e-12 && at("L[1,2]") == 0.0);
}

#[test]
fn misuse_is_reported_with_clear_messages() {
    let err = compile_error(
        "parameters { vector[3] y; } model { y ~ multi_normal(rep_vector(0, 3)); }",
        "",
    );
    assert!(
        err.contains("multi_normal") && err.contains("2 arguments"),
        "{err}"
    );
    let err = compile_error(
        "parameters { real y; } model { y ~ dirichlet(rep_vector(1, 3)); }",
        "",
    );
    assert!(err.contains("the left side of `~ dirichlet`"), "{err}");
    let err = compile_error(
        "data { array[2] int y; } parameters { vector[3] b; }
         model { target += categorical_logit_lpdf(y | b); }",
        r#"{"y": [1, 2]}"#,
    );
    assert!(err.contains("categorical_logit_lpmf"), "{err}");
    // A runtime argument error carries Stan's wording.
    let m = compile(
        "data { array[2] int y; } parameters { real b; }
         model { y ~ ordered_logistic(b, [1, 0.5]'); }",
        r#"{"y": [1, 2]}"#,
    );
    let e = m.log_density(&[0.0]).unwrap_err().to_string();
    assert!(
        e.contains("ordered_logistic_lpmf: Cut-points is not a valid ordered vector"),
        "{e}"
    );
}

#[test]
fn the_ordinal_example_compiles_and_has_correct_gradients() {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/ordinal");
    let mut sources = SourceMap::new();
    let model = pipeline::check_file(&mut sources, &root.join("model.bayes"))
        .and_then(|checked| {
            let data = pipeline::load_data(&[root.join("ratings.csv")])?;
            pipeline::compile(&checked, &sources, &data)
        })
        .unwrap_or_else(|_| panic!("examples/ordinal compiles"));
    assert_eq!(model.dim(), 5);
    check_gradient(&model, 9);
}

/// Posterior draws of `src` with `data` by NUTS (4 chains × 1000 warmup + 1000 draws).
fn nuts_draws(src: &str, data: &str, seed: u64) -> bayesc::inference::Draws {
    use bayesc::fit::{FitOptions, Method, Monitor, fit};
    let model = compile(src, data);
    let mut options = FitOptions::new(Method::Nuts, seed);
    options.mcmc.chains = 4;
    options.mcmc.warmup = 1000;
    options.mcmc.samples = 1000;
    let stop = std::sync::atomic::AtomicBool::new(false);
    let monitor = Monitor {
        on_progress: &|_| {},
        stop: &stop,
    };
    fit(&model, &options, &monitor).expect("NUTS runs").draws
}

/// Pooled mean and variance of column `name`.
fn moments(d: &bayesc::inference::Draws, name: &str) -> (f64, f64) {
    let j = d.position(name).expect("column exists");
    let xs: Vec<f64> = d.column(j).into_iter().flatten().collect();
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    (
        m,
        xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0),
    )
}

#[test]
fn dirichlet_categorical_posterior_is_the_conjugate_dirichlet() {
    // θ ~ Dirichlet(1, 2, 3), counts (5, 1, 4) → θ | y ~ Dirichlet(6, 3, 7): mean αₖ/16,
    // variance αₖ(16 − αₖ)/(16² · 17). With ~3000 effective draws the Monte Carlo standard
    // error of each mean is ≤ 0.12/√3000 ≈ 0.0022; tolerances are about 4 of them.
    let d = nuts_draws(
        "data { int N; array[N] int y; }
         parameters { simplex[3] theta; }
         model { theta ~ dirichlet([1, 2, 3]'); y ~ categorical(theta); }",
        r#"{"N": 10, "y": [1, 1, 3, 1, 2, 3, 1, 3, 1, 3]}"#,
        21,
    );
    for (k, a) in [(1, 6.0), (2, 3.0), (3, 7.0)] {
        let (m, v) = moments(&d, &format!("theta[{k}]"));
        assert!((m - a / 16.0).abs() < 0.01, "theta[{k}] mean {m}");
        let var = a * (16.0 - a) / (256.0 * 17.0);
        assert!(
            (v - var).abs() < 0.15 * var,
            "theta[{k}] variance {v} vs {var}"
        );
    }
}

#[test]
fn multi_normal_parameter_is_sampled_with_its_mean_and_covariance() {
    let d = nuts_draws(
        "parameters { vector[2] x; }
         model { x ~ multi_normal([1, -1]', [[2, 0.8], [0.8, 1]]); }
         generated quantities { real prod = (x[1] - 1) * (x[2] + 1); }",
        "",
        22,
    );
    let (m1, v1) = moments(&d, "x[1]");
    let (m2, v2) = moments(&d, "x[2]");
    let (c, _) = moments(&d, "prod");
    // MCSE of the means ≈ sd/√ESS ≈ 1.4/√2500 ≈ 0.03.
    assert!(
        (m1 - 1.0).abs() < 0.12 && (m2 + 1.0).abs() < 0.09,
        "{m1}, {m2}"
    );
    assert!(
        (v1 - 2.0).abs() < 0.2 && (v2 - 1.0).abs() < 0.1,
        "{v1}, {v2}"
    );
    assert!((c - 0.8).abs() < 0.12, "covariance {c}");
}

#[test]
fn the_mixture_example_compiles_and_has_correct_gradients() {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/mixture");
    let mut sources = SourceMap::new();
    let model = pipeline::check_file(&mut sources, &root.join("model.bayes"))
        .and_then(|checked| {
            let data = pipeline::load_data(&[root.join("mixture.csv")])?;
            pipeline::compile(&checked, &sources, &data)
        })
        .unwrap_or_else(|_| panic!("examples/mixture compiles"));
    assert_eq!(model.dim(), 5);
    check_gradient(&model, 10);
}
