//! The fused pass of `y ~ family(α + X · β, …)` (`src/graph/eval/glm.rs`): the same log density
//! and gradient as the unfused statement (a product node, a sum node and a density node) to
//! 1e-12 relative, gradients against central finite differences, and the data checks made once
//! when the model is built (`src/graph/fuse.rs`).

mod common;

use bayesc::graph::Model;
use bayesc::inference::LogDensity;

/// Deterministic pseudo-random numbers in (−1, 1) (a linear congruential sequence).
fn noise(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect()
}

/// JSON data: N rows, an N × K matrix X, and an outcome `y` made by `outcome` from the row's
/// linear predictor. N = 1100 spans two blocks of the fused pass (1024 rows each).
fn data(n: usize, k: usize, outcome: impl Fn(f64, usize) -> String) -> String {
    let x = noise(n * k, 7);
    let rows: Vec<String> = (0..n)
        .map(|i| {
            let r: Vec<String> = (0..k).map(|j| format!("{}", x[i * k + j])).collect();
            format!("[{}]", r.join(","))
        })
        .collect();
    let ys: Vec<String> = (0..n)
        .map(|i| {
            let eta: f64 = 0.3 + (0..k).map(|j| x[i * k + j] * (j as f64 - 1.0)).sum::<f64>();
            outcome(eta, i)
        })
        .collect();
    format!(
        r#"{{"N": {n}, "K": {k}, "X": [{}], "y": [{}]}}"#,
        rows.join(","),
        ys.join(",")
    )
}

/// The model fused (default) and unfused.
fn pair(text: &str, json: &str) -> (Model, Model) {
    let fused = common::compile_source("glm.bayes", text, Some(json), &[]);
    let mut plain = common::compile_source("glm.bayes", text, Some(json), &[]);
    plain.set_fused_glm(false);
    (fused, plain)
}

fn check_at(fused: &Model, plain: &Model, theta: &[f64]) {
    let d = fused.dim();
    let (mut gf, mut gp) = (vec![0.0; d], vec![0.0; d]);
    let lf = fused
        .log_density_grad(theta, &mut gf)
        .expect("fused evaluates");
    let lp = plain
        .log_density_grad(theta, &mut gp)
        .expect("plain evaluates");
    assert!(
        (lf - lp).abs() <= 1e-12 * lp.abs().max(1.0),
        "log density fused {lf} vs plain {lp}"
    );
    let vf = fused.log_density(theta).expect("value-only fused");
    assert!(
        (vf - lf).abs() <= 1e-12 * lf.abs().max(1.0),
        "value-only {vf} vs {lf}"
    );
    for i in 0..d {
        assert!(
            (gf[i] - gp[i]).abs() <= 1e-11 * gp[i].abs().max(1.0),
            "gradient[{i}]: fused {} vs plain {}",
            gf[i],
            gp[i]
        );
    }
    // h = 1e-4: the log densities are sums over N = 1100 rows (|value| up to 1e4), so a smaller
    // step loses digits to cancellation; the truncation error is O(h²). At most 12 coordinates
    // (the first and last six) are checked.
    let coords: Vec<usize> = (0..d).filter(|&i| i < 6 || i + 6 >= d).collect();
    common::assert_gradient_fd(fused, theta, &gf, 1e-4, &coords);
}

use common::points;

const DATA_BLOCK: &str = "data { int N; int K; matrix[N, K] X; ";

#[test]
fn bernoulli_logit_fused_matches_plain() {
    let json = data(1100, 3, |eta, i| {
        ((noise(1, i as u64)[0] * 0.5 + 0.5) < 1.0 / (1.0 + (-eta).exp())).to_string()
    })
    .replace("true", "1")
    .replace("false", "0");
    for (lp, params) in [
        ("alpha + X * beta", "real alpha; vector[K] beta;"),
        ("X * beta + alpha", "real alpha; vector[K] beta;"),
        ("X * beta", "vector[K] beta;"),
    ] {
        let text = format!(
            "{DATA_BLOCK} array[N] int<lower=0, upper=1> y; }}\nparameters {{ {params} }}\nmodel {{ beta ~ normal(0, 2); y ~ bernoulli_logit({lp}); }}"
        );
        let text = if params.contains("alpha") {
            text.replace(
                "beta ~ normal(0, 2);",
                "alpha ~ normal(0, 2); beta ~ normal(0, 2);",
            )
        } else {
            text
        };
        let (fused, plain) = pair(&text, &json);
        assert_eq!(fused.fused_statements(), 1, "{lp}: planned as fused");
        for t in points(fused.dim()) {
            check_at(&fused, &plain, &t);
        }
    }
}

#[test]
fn poisson_log_and_normal_fused_match_plain() {
    let json = data(1100, 2, |eta, i| {
        format!(
            "{}",
            ((eta.exp() * (1.0 + noise(1, i as u64)[0])).floor()).max(0.0)
        )
    });
    let text = format!(
        "{DATA_BLOCK} array[N] int<lower=0> y; }}\nparameters {{ real alpha; vector[K] beta; }}\nmodel {{ alpha ~ normal(0, 1); beta ~ normal(0, 1); y ~ poisson_log(alpha + X * beta); }}"
    );
    let (fused, plain) = pair(&text, &json);
    assert_eq!(fused.fused_statements(), 1);
    for t in points(fused.dim()) {
        check_at(&fused, &plain, &t);
    }

    let json = data(1100, 4, |eta, i| {
        format!("{}", eta + 0.7 * noise(1, i as u64)[0])
    });
    // A scale parameter, a data scale and a vector intercept (one per row).
    for (model, params) in [
        (
            "y ~ normal(alpha + X * beta, sigma);",
            "real alpha; vector[K] beta; real<lower=0> sigma;",
        ),
        (
            "y ~ normal(X * beta + alpha, 0.8);",
            "real alpha; vector[K] beta;",
        ),
        (
            "y ~ normal(a + X * beta, sigma);",
            "vector[N] a; vector[K] beta; real<lower=0> sigma;",
        ),
    ] {
        let priors = if params.contains("vector[N] a") {
            "a ~ normal(0, 1); beta ~ normal(0, 1); sigma ~ lognormal(0, 1);"
        } else if params.contains("sigma") {
            "alpha ~ normal(0, 1); beta ~ normal(0, 1); sigma ~ lognormal(0, 1);"
        } else {
            "alpha ~ normal(0, 1); beta ~ normal(0, 1);"
        };
        let text = format!(
            "{DATA_BLOCK} vector[N] y; }}\nparameters {{ {params} }}\nmodel {{ {priors} {model} }}"
        );
        let (fused, plain) = pair(&text, &json);
        assert_eq!(fused.fused_statements(), 1, "{model}");
        for t in points(fused.dim()) {
            check_at(&fused, &plain, &t);
        }
    }
}

#[test]
fn normalised_target_statement_is_fused_too() {
    // `target += normal_lpdf(…)` keeps every constant; `~` drops them: the difference between
    // the two models is −N/2·log(2π) − N·log 0.8. Both statements run fused, and the `target +=`
    // form agrees with its unfused evaluation.
    let json = data(600, 2, |eta, i| {
        format!("{}", eta + 0.5 * noise(1, i as u64)[0])
    });
    let tilde = format!(
        "{DATA_BLOCK} vector[N] y; }}\nparameters {{ real alpha; vector[K] beta; }}\nmodel {{ y ~ normal(alpha + X * beta, 0.8); }}"
    );
    let full = tilde.replace(
        "y ~ normal(alpha + X * beta, 0.8);",
        "target += normal_lpdf(y | alpha + X * beta, 0.8);",
    );
    let a = common::compile_source("a.bayes", &tilde, Some(&json), &[]);
    let (b, b_plain) = pair(&full, &json);
    assert_eq!((a.fused_statements(), b.fused_statements()), (1, 1));
    let theta = [0.2, -0.4, 0.9];
    let constant = -300.0 * (2.0 * std::f64::consts::PI).ln() - 600.0 * 0.8f64.ln();
    let (la, lb) = (
        a.log_density(&theta).unwrap(),
        b.log_density(&theta).unwrap(),
    );
    assert!(
        (lb - la - constant).abs() < 1e-8,
        "{lb} − {la} vs {constant}"
    );
    for t in points(b.dim()) {
        check_at(&b, &b_plain, &t);
    }
}

#[test]
fn outcome_outside_support_is_a_data_error_at_build() {
    let text = "data { int N; array[N] int y; vector[N] x; }\nparameters { real a; real b; }\nmodel { a ~ normal(0, 1); b ~ normal(0, 1); y ~ bernoulli_logit(a + b * x); }";
    let json = r#"{"N": 4, "y": [0, 1, 2, 1], "x": [0.1, 0.2, 0.3, 0.4]}"#;
    let mut sources = bayesc::syntax::source::SourceMap::new();
    let checked = bayesc::pipeline::check_source(&mut sources, "m.bayes", text).unwrap();
    let data = vec![bayesc::data::DataSource::Json(
        bayesc::data::json::parse_json("d.json", json).unwrap(),
    )];
    let err = match bayesc::pipeline::compile(&checked, &sources, &data) {
        Ok(_) => panic!("y[3] = 2 must be refused for bernoulli_logit"),
        Err(e) => e,
    };
    let text: String = err
        .into_reports()
        .iter()
        .map(|d| bayesc::syntax::report::render_plain(&sources, d))
        .collect();
    // Reported by the binder, which knows where the value came from.
    assert!(
        text.contains("d.json")
            && text.contains(": 2, but `y` is the outcome of `bernoulli_logit`")
            && text.contains("0 or 1"),
        "{text}"
    );
    // A transformed-data outcome is checked when the model is built.
    let td = "data { int N; array[N] int y0; vector[N] x; }\ntransformed data { array[N] int y = y0; }\nparameters { real a; real b; }\nmodel { a ~ normal(0, 1); b ~ normal(0, 1); y ~ bernoulli_logit(a + b * x); }";
    let checked = bayesc::pipeline::check_source(&mut sources, "td.bayes", td).unwrap();
    let data = vec![bayesc::data::DataSource::Json(
        bayesc::data::json::parse_json("d.json", &json.replace("\"y\"", "\"y0\"")).unwrap(),
    )];
    let err = match bayesc::pipeline::compile(&checked, &sources, &data) {
        Ok(_) => panic!("transformed-data y[3] = 2 must be refused for bernoulli_logit"),
        Err(e) => e,
    };
    let text: String = err
        .into_reports()
        .iter()
        .map(|d| bayesc::syntax::report::render_plain(&sources, d))
        .collect();
    assert!(
        text.contains("y[3] is 2") && text.contains("0 or 1"),
        "{text}"
    );
    // Inside a branch the statement may never run: the model builds, and evaluation reports it.
    let guarded = "data { int N; array[N] int y; vector[N] x; int use; }\nparameters { real a; real b; }\nmodel { a ~ normal(0, 1); b ~ normal(0, 1); if (use == 1) y ~ bernoulli_logit(a + b * x); }";
    let json = r#"{"N": 4, "y": [0, 1, 2, 1], "x": [0.1, 0.2, 0.3, 0.4], "use": 0}"#;
    let m = common::compile_source("g.bayes", guarded, Some(json), &[]);
    assert!(m.log_density(&[0.1, 0.2]).unwrap().is_finite());
}
