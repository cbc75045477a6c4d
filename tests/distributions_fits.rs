//! End-to-end fits with the distributions added for issue 14: what `bayesc check` accepts also
//! runs in a fit. NUTS recovers a known correlation under an `lkj_corr` prior, and the
//! coefficients of a beta-binomial regression; generated quantities call the new `_rng`s.
//! The data are simulated here with fixed seeds.

mod common;

use bayesc::distributions::{self, Family};
use bayesc::fit::{self, FitOptions, Method};
use bayesc::inference::rng::stream;
use rand::RngExt;
use rand_distr::{Distribution, StandardNormal};

fn nuts(m: &bayesc::graph::Model, seed: u64) -> fit::FitResult {
    let mut options = FitOptions::new(Method::Nuts, seed);
    options.mcmc.chains = 2;
    options.mcmc.warmup = 400;
    options.mcmc.samples = 400;
    let never = std::sync::atomic::AtomicBool::new(false);
    let monitor = fit::Monitor {
        on_progress: &|_| {},
        stop: &never,
    };
    fit::fit(m, &options, &monitor).expect("NUTS runs")
}

fn column(r: &fit::FitResult, name: &str) -> Vec<f64> {
    let j = r
        .draws
        .position(name)
        .unwrap_or_else(|| panic!("no column {name}"));
    r.draws.column(j).concat()
}

fn mean_sd(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let m = x.iter().sum::<f64>() / n;
    (
        m,
        (x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (n - 1.0)).sqrt(),
    )
}

#[test]
fn nuts_recovers_a_correlation_under_an_lkj_prior() {
    // 200 draws of a bivariate normal with sds (1, 2) and correlation 0.6
    let (n, rho) = (200, 0.6);
    let mut r = stream(41, 0);
    let mut ys = Vec::new();
    let (mut sxy, mut sxx, mut syy, mut sx, mut sy) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for _ in 0..n {
        let (z1, z2): (f64, f64) = (StandardNormal.sample(&mut r), StandardNormal.sample(&mut r));
        let a = z1;
        let b = 2.0 * (rho * z1 + (1.0f64 - rho * rho).sqrt() * z2);
        ys.push(format!("[{a}, {b}]"));
        (sx, sy, sxx, syy, sxy) = (sx + a, sy + b, sxx + a * a, syy + b * b, sxy + a * b);
    }
    let nf = n as f64;
    let sample_r =
        (sxy - sx * sy / nf) / ((sxx - sx * sx / nf).sqrt() * (syy - sy * sy / nf).sqrt());
    let data = format!("{{\"N\": {n}, \"y\": [{}]}}", ys.join(", "));
    let model = "
        data { int N; array[N] vector[2] y; }
        parameters { vector[2] mu; corr_matrix[2] Omega; vector<lower=0>[2] tau; }
        model {
          mu ~ normal(0, 5);
          tau ~ normal(0, 3);
          Omega ~ lkj_corr(2);
          y ~ multi_normal(mu, quad_form_diag(Omega, tau));
        }
        generated quantities {
          matrix[2, 2] Omega_prior = lkj_corr_rng(2, 2);
          matrix[2, 2] W = wishart_rng(4, quad_form_diag(Omega, tau));
          vector[2] y_t = multi_student_t_rng(5, mu, quad_form_diag(Omega, tau));
        }";
    let m = common::compile_source("lkj.bayes", model, Some(&data), &[]);
    let fit = nuts(&m, 1);
    let (post, sd) = mean_sd(&column(&fit, "Omega[1,2]"));
    // the posterior sd of ρ is about (1 − ρ²)/√N = 0.045; the lkj_corr(2) prior barely shrinks
    assert!(sd > 0.02 && sd < 0.08, "posterior sd {sd}");
    assert!(
        (post - sample_r).abs() < 0.03,
        "posterior mean {post} vs sample r {sample_r}"
    );
    assert!(
        (post - rho).abs() < 3.0 * sd,
        "posterior mean {post} vs true {rho}"
    );
    let (tau2, _) = mean_sd(&column(&fit, "tau[2]"));
    assert!((tau2 - 2.0).abs() < 0.3, "tau[2] = {tau2}");
    // the generated quantities ran: prior draws of ρ have mean 0 and sd 1/√5 under lkj_corr(2)
    let (pm, psd) = mean_sd(&column(&fit, "Omega_prior[1,2]"));
    assert!(pm.abs() < 0.1 && (psd - 0.447).abs() < 0.06, "{pm} {psd}");
    let (w11, _) = mean_sd(&column(&fit, "W[1,1]"));
    assert!(w11 > 2.0 && w11 < 6.0, "E W[1,1] = 4 tau1² ≈ 4: {w11}");
}

#[test]
fn nuts_fits_a_beta_binomial_regression() {
    // logit μᵢ = −0.5 + 1.2 xᵢ, precision φ = 8, 20 trials per row
    let (n, a, b, phi, trials) = (300, -0.5, 1.2, 8.0, 20.0);
    let mut r = stream(42, 0);
    let mut xs = Vec::new();
    let mut ys = Vec::new();
    for _ in 0..n {
        let x: f64 = r.random_range(-1.0..1.0);
        let mu = 1.0 / (1.0 + (-(a + b * x)).exp());
        let y = distributions::rng(
            Family::BetaBinomial,
            &[trials, mu * phi, (1.0 - mu) * phi],
            &mut r,
        )
        .unwrap();
        xs.push(x.to_string());
        ys.push((y as i64).to_string());
    }
    let data = format!(
        "{{\"N\": {n}, \"T\": 20, \"x\": [{}], \"y\": [{}]}}",
        xs.join(", "),
        ys.join(", ")
    );
    let model = "
        data { int N; int T; vector[N] x; array[N] int<lower=0, upper=T> y; }
        parameters { real a; real b; real<lower=0> phi; }
        model {
          vector[N] mu = inv_logit(a + b * x);
          a ~ normal(0, 2);
          b ~ normal(0, 2);
          phi ~ exponential(0.1);
          y ~ beta_binomial(T, mu * phi, (1 - mu) * phi);
        }
        generated quantities {
          int y_new = beta_binomial_rng(T, inv_logit(a) * phi, (1 - inv_logit(a)) * phi);
          real lcdf5 = beta_binomial_lcdf(5 | T, inv_logit(a) * phi, (1 - inv_logit(a)) * phi);
        }";
    let m = common::compile_source("bb.bayes", model, Some(&data), &[]);
    let fit = nuts(&m, 2);
    for (name, truth) in [("a", a), ("b", b), ("phi", phi)] {
        let (m, sd) = mean_sd(&column(&fit, name));
        assert!(
            (m - truth).abs() < 3.5 * sd,
            "{name}: posterior {m} ± {sd} vs true {truth}"
        );
    }
    let (y_new, _) = mean_sd(&column(&fit, "y_new"));
    // inv_logit(−0.5) · 20 = 7.55
    assert!((y_new - 7.55).abs() < 1.0, "y_new mean {y_new}");
    assert!(
        column(&fit, "lcdf5")
            .iter()
            .all(|v| *v < 0.0 && v.is_finite())
    );
}
