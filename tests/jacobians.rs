//! Jacobian adjustments of the constrained types through the language: a prior whose density is
//! flat (or known) on the constrained space, sampled by NUTS (fixed seed, 4 chains × 1000 draws),
//! must reproduce the known marginal moments on the constrained scale within Monte Carlo error.
//! A missing or wrong log-Jacobian term shifts these moments by far more than the tolerance.

use std::sync::atomic::AtomicBool;

use bayesc::diagnostics::ess::ess_mean;
use bayesc::fit::{FitOptions, Method, Monitor, fit};
use bayesc::inference::Draws;
use bayesc::pipeline;
use bayesc::syntax::source::SourceMap;

/// Fits `src` (no data) with NUTS, 4 chains of 1000 warmup + 1000 draws, seed `seed`.
fn nuts(src: &str, seed: u64) -> Draws {
    let mut sources = SourceMap::new();
    let checked = pipeline::check_source(&mut sources, "model.bayes", src)
        .unwrap_or_else(|_| panic!("model checks:\n{src}"));
    let model = pipeline::compile(&checked, &sources, &[])
        .unwrap_or_else(|_| panic!("model compiles:\n{src}"));
    let mut options = FitOptions::new(Method::Nuts, seed);
    options.mcmc.chains = 4;
    options.mcmc.warmup = 1000;
    options.mcmc.samples = 1000;
    let stop = AtomicBool::new(false);
    let monitor = Monitor {
        on_progress: &|_| {},
        stop: &stop,
    };
    fit(&model, &options, &monitor).expect("NUTS runs").draws
}

/// Asserts that the mean and the variance of column `name` are within 4 Monte Carlo standard
/// errors (sd / √ESS, ESS of the mean of the draws and of the squared deviations) of the truth.
fn assert_moments(draws: &Draws, name: &str, mean: f64, var: f64) {
    let j = draws
        .position(name)
        .unwrap_or_else(|| panic!("no column {name} in {:?}", draws.names));
    let chains = draws.column(j);
    let all: Vec<f64> = chains.iter().flatten().copied().collect();
    let n = all.len() as f64;
    let m = all.iter().sum::<f64>() / n;
    let v = all.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0);
    let slices: Vec<&[f64]> = chains.iter().map(Vec::as_slice).collect();
    let ess = ess_mean(&slices).expect("ESS of enough draws");
    let se_mean = (v / ess).sqrt();
    assert!(
        (m - mean).abs() < 4.0 * se_mean,
        "{name}: mean {m}, expected {mean} (MCSE {se_mean}, ESS {ess})"
    );
    let sq: Vec<Vec<f64>> = chains
        .iter()
        .map(|c| c.iter().map(|x| (x - mean).powi(2)).collect())
        .collect();
    let sq_slices: Vec<&[f64]> = sq.iter().map(Vec::as_slice).collect();
    let ess_sq = ess_mean(&sq_slices).expect("ESS of enough draws");
    let sq_all: Vec<f64> = sq.iter().flatten().copied().collect();
    let sq_mean = sq_all.iter().sum::<f64>() / n;
    let sq_var = sq_all.iter().map(|x| (x - sq_mean).powi(2)).sum::<f64>() / (n - 1.0);
    let se_var = (sq_var / ess_sq).sqrt();
    assert!(
        (sq_mean - var).abs() < 4.0 * se_var,
        "{name}: variance {sq_mean}, expected {var} (MCSE {se_var}, ESS {ess_sq})"
    );
}

#[test]
fn simplex_under_a_uniform_dirichlet_is_uniform_on_the_simplex() {
    // Dirichlet(1, 1, 1): each θₖ ~ Beta(1, 2), mean 1/3, variance 1·2/(3²·4) = 2/36.
    let d = nuts(
        "parameters { simplex[3] theta; } model { theta ~ dirichlet(rep_vector(1, 3)); }",
        1,
    );
    for k in 1..=3 {
        assert_moments(&d, &format!("theta[{k}]"), 1.0 / 3.0, 2.0 / 36.0);
    }
}

#[test]
fn cholesky_factor_corr_under_lkj_1_gives_beta_marginal_correlations() {
    // LKJ(η) on K × K correlation matrices: each correlation is marginally Beta(b, b) on
    // (−1, 1) with b = η − 1 + K/2 (Lewandowski, Kurowicka & Joe 2009, §3.2), so mean 0 and
    // variance 1/(2b + 1): for K = 3, η = 1, b = 3/2 and the variance is 1/4.
    let d = nuts(
        "parameters { cholesky_factor_corr[3] L; }
         model { L ~ lkj_corr_cholesky(1); }
         generated quantities { matrix[3, 3] Omega = tcrossprod(L); }",
        2,
    );
    for name in ["Omega[2,1]", "Omega[3,1]", "Omega[3,2]"] {
        assert_moments(&d, name, 0.0, 0.25);
    }
}

#[test]
fn corr_matrix_with_no_prior_is_uniform_over_correlation_matrices() {
    // A flat density on corr_matrix[3] is LKJ(1): the same Beta(3/2, 3/2) marginals.
    let d = nuts("parameters { corr_matrix[3] Omega; } model { }", 3);
    for name in ["Omega[2,1]", "Omega[3,1]", "Omega[3,2]"] {
        assert_moments(&d, name, 0.0, 0.25);
    }
}

#[test]
fn ordered_under_iid_normals_gives_the_normal_order_statistics() {
    // Order statistics of 3 standard normals (David & Nagaraja, *Order Statistics*, 3rd ed.,
    // §3.2): E X₍₃₎ = 3/(2√π) = 0.8463, E X₍₃₎² = 1 + √3/(2π), so Var X₍₁₎ = Var X₍₃₎ =
    // 1 + √3/(2π) − 9/(4π) = 0.5595; the median has mean 0 and E X₍₂₎² = 3 − 2 E X₍₃₎² =
    // 1 − √3/π = 0.4487.
    let pi = std::f64::consts::PI;
    let e3 = 3.0 / (2.0 * pi.sqrt());
    let v3 = 1.0 + 3f64.sqrt() / (2.0 * pi) - 9.0 / (4.0 * pi);
    let v2 = 1.0 - 3f64.sqrt() / pi;
    let d = nuts(
        "parameters { ordered[3] x; } model { x ~ normal(0, 1); }",
        4,
    );
    assert_moments(&d, "x[1]", -e3, v3);
    assert_moments(&d, "x[2]", 0.0, v2);
    assert_moments(&d, "x[3]", e3, v3);
}

#[test]
fn positive_ordered_under_iid_exponentials_gives_the_exponential_order_statistics() {
    // Two Exp(1) variables: the minimum is Exp(2) (mean 1/2, variance 1/4); the maximum is
    // min + Exp(1) independent of it (Rényi representation), mean 3/2, variance 1/4 + 1 = 5/4.
    let d = nuts(
        "parameters { positive_ordered[2] x; } model { x ~ exponential(1); }",
        5,
    );
    assert_moments(&d, "x[1]", 0.5, 0.25);
    assert_moments(&d, "x[2]", 1.5, 1.25);
}

#[test]
fn offset_multiplier_leaves_the_distribution_unchanged() {
    let d = nuts(
        "parameters { real<offset=1, multiplier=3> x; } model { x ~ normal(1, 2); }",
        6,
    );
    assert_moments(&d, "x", 1.0, 4.0);
}
