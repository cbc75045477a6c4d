//! Per-observation gradients of the separable likelihood terms
//! ([`MinibatchDensity::log_lik_grads`]) and the row-free part ([`MinibatchDensity::prior_grad`]),
//! which VOGN and Vadam need (specs/survey_vi.md §2 table, §11, §12): each row's gradient
//! against central finite differences of that row's log-likelihood, and the rows' sum plus
//! the prior part against the full-data log density and gradient (1e-10).

use bayesc::data::DataSource;
use bayesc::data::json::parse_json;
use bayesc::graph::Model;
use bayesc::inference::{LogDensity, MinibatchDensity};
use bayesc::pipeline;
use bayesc::syntax::source::SourceMap;

const MODEL: &str = "
data { int<lower=1> N; vector[N] x; vector[N] y; }
parameters { real a; real b; real<lower=0> sigma; }
model {
  a ~ normal(0, 2);
  b ~ normal(0, 2);
  sigma ~ lognormal(0, 1);
  y ~ normal(a + b * x, sigma);
}
";

fn setup() -> (Model, bayesc::fit::MinibatchPlan) {
    let n = 12;
    let x: Vec<String> = (0..n)
        .map(|i| format!("{}", -1.0 + 0.2 * i as f64))
        .collect();
    let y: Vec<String> = (0..n)
        .map(|i| {
            format!(
                "{}",
                0.3 + 0.8 * (-1.0 + 0.2 * i as f64) + 0.3 * (1.7 * i as f64).sin()
            )
        })
        .collect();
    let json = format!(
        "{{\"N\": {n}, \"x\": [{}], \"y\": [{}]}}",
        x.join(","),
        y.join(",")
    );
    let mut sources = SourceMap::new();
    let checked = pipeline::check_source(&mut sources, "t.bayes", MODEL).expect("model checks");
    let data = vec![DataSource::Json(parse_json("d.json", &json).expect("json"))];
    let model = pipeline::compile(&checked, &sources, &data).expect("model compiles");
    let plan = pipeline::minibatch_plan(&checked, &data, &model, n, None).expect("separable");
    (model, plan)
}

#[test]
fn per_row_gradients_match_finite_differences_and_sum_to_the_full_gradient() {
    let (model, plan) = setup();
    let mm = model.minibatch(&plan.separability).expect("plan fits");
    let (n, d) = (mm.n_obs(), model.dim());
    assert_eq!((n, d), (12, 3));
    let rows: Vec<usize> = (0..n).collect();
    let theta = [0.4, 0.6, -0.7];
    let (mut values, mut grads) = (vec![0.0; n], vec![0.0; n * d]);
    mm.log_lik_grads(&theta, &rows, &mut values, &mut grads)
        .unwrap();
    let mut g_prior = vec![0.0; d];
    let prior = mm.prior_grad(&theta, &mut g_prior).unwrap();
    let mut g_full = vec![0.0; d];
    let full = mm.log_density_grad(&theta, &mut g_full).unwrap();
    let total = prior + values.iter().sum::<f64>();
    assert!(
        (total - full).abs() < 1e-10 * (1.0 + full.abs()),
        "π + Σℓ_i = {total} vs L = {full}"
    );
    for j in 0..d {
        let sum = g_prior[j] + (0..n).map(|i| grads[i * d + j]).sum::<f64>();
        assert!(
            (sum - g_full[j]).abs() < 1e-10 * (1.0 + g_full[j].abs()),
            "coordinate {j}: ∇π + Σ∇ℓ_i = {sum} vs ∇L = {}",
            g_full[j]
        );
    }
    // The prior part alone is not the full gradient (the check can fail).
    assert!((g_prior[0] - g_full[0]).abs() > 1e-3);
    // Row i against central differences of ℓ_i.
    let h = 1e-5;
    let (mut vp, mut vm, mut scratch) = (vec![0.0; n], vec![0.0; n], vec![0.0; n * d]);
    for j in 0..d {
        let mut tp = theta;
        let mut tm = theta;
        tp[j] += h;
        tm[j] -= h;
        mm.log_lik_grads(&tp, &rows, &mut vp, &mut scratch).unwrap();
        mm.log_lik_grads(&tm, &rows, &mut vm, &mut scratch).unwrap();
        for i in 0..n {
            let fd = (vp[i] - vm[i]) / (2.0 * h);
            let g = grads[i * d + j];
            assert!(
                (fd - g).abs() < 1e-6 * (1.0 + g.abs()),
                "row {i}, coordinate {j}: {g} vs finite difference {fd}"
            );
        }
    }
    // A subset of rows gives the same per-row gradients, in the order asked.
    let (mut v2, mut g2) = (vec![0.0; 2], vec![0.0; 2 * d]);
    mm.log_lik_grads(&theta, &[7, 2], &mut v2, &mut g2).unwrap();
    assert_eq!(v2, vec![values[7], values[2]]);
    assert_eq!(&g2[..d], &grads[7 * d..8 * d]);
    // Bad input is an error, not a panic.
    assert!(
        mm.log_lik_grads(&theta, &[n], &mut v2[..1], &mut g2[..d])
            .is_err()
    );
    assert!(
        mm.log_lik_grads(&theta, &[0, 1], &mut v2[..1], &mut g2)
            .is_err()
    );
}
