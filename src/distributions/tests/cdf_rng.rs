//! Family tests: log CDFs and complementary CDFs against closed forms and finite differences,
//! and `_rng` moments and argument checks.

use super::*;

/// One log CDF evaluation: (family, scalar args, expected log CDF, expected log CCDF, rel. tol).
#[rustfmt::skip]
fn cdf_rows() -> Vec<(Family, Vec<f64>, f64, f64, f64)> {
    use statrs::distribution::ContinuousCDF;
    let mut r = Vec::new();
    for &(y, mu, s) in &[(0.3, -0.2, 1.5), (-2.0, 1.0, 0.4), (4.0, 0.0, 3.0)] {
        let d = SNormal::new(mu, s).unwrap();
        r.push((Family::Normal, vec![y, mu, s], d.cdf(y).ln(), d.sf(y).ln(), 1e-10));
    }
    // Tails, against 20-digit values of log Φ(z) from mpmath (log(ncdf(z)), 30 digits).
    // log Φ(z) and log Φ(−z).
    let tail = [
        (-40.0, -804.608_442_013_753_8, 0.0),
        (-10.0, -53.231_285_150_512_47, -7.619_853_016_486_503e-24),
        (2.0, -0.023_012_909_328_963_488, -3.783_184_333_682_032),
    ];
    for &(z, log_phi, log_phi_neg) in &tail {
        r.push((Family::Normal, vec![z, 0.0, 1.0], log_phi, log_phi_neg, 1e-12));
    }
    r.push((Family::Normal, vec![40.0, 0.0, 1.0], 0.0, -804.608_442_013_753_8, 1e-12));
    for &(y, mu, s) in &[(0.3, -0.2, 1.5), (2.0, 1.0, 0.4), (10.0, 0.0, 3.0)] {
        let d = SLogNormal::new(mu, s).unwrap();
        r.push((Family::Lognormal, vec![y, mu, s], d.cdf(y).ln(), d.sf(y).ln(), 1e-10));
    }
    for &(y, mu, s) in &[(0.3, -0.2, 1.5), (-2.0, 1.0, 0.4), (10.0, 0.0, 3.0)] {
        let d = SCauchy::new(mu, s).unwrap();
        r.push((Family::Cauchy, vec![y, mu, s], d.cdf(y).ln(), d.sf(y).ln(), 1e-10));
    }
    // Far lower tail: F(−10⁶) = atan(10⁻⁶)/π, which ½ + atan(z)/π would lose.
    let f = (1e-6f64).atan() / std::f64::consts::PI;
    r.push((Family::Cauchy, vec![-1e6, 0.0, 1.0], f.ln(), (-f).ln_1p(), 1e-12));
    for &(y, mu, s) in &[(0.3f64, -0.2f64, 1.5f64), (-2.0, 1.0, 0.4), (10.0, 0.0, 3.0)] {
        let z = (y - mu) / s;
        let f = 1.0 / (1.0 + (-z).exp());
        r.push((Family::Logistic, vec![y, mu, s], f.ln(), (1.0 - f).ln(), 1e-10));
    }
    for &(y, mu, s) in &[(0.3, -0.2, 1.5), (-2.0, 1.0, 0.4), (10.0, 0.0, 3.0)] {
        let d = SLaplace::new(mu, s).unwrap();
        r.push((Family::DoubleExponential, vec![y, mu, s], d.cdf(y).ln(), d.sf(y).ln(), 1e-10));
    }
    for &(y, b) in &[(0.3f64, 1.5f64), (2.5, 0.4), (12.0, 3.0)] {
        let d = SExp::new(b).unwrap();
        r.push((Family::Exponential, vec![y, b], d.cdf(y).ln(), -b * y, 1e-10));
    }
    for &(y, a, s) in &[(0.3, 1.5, 2.0), (2.5, 0.4, 0.7), (1.2, 3.0, 1.0)] {
        let d = SWeibull::new(a, s).unwrap();
        r.push((Family::Weibull, vec![y, a, s], d.cdf(y).ln(), d.sf(y).ln(), 1e-10));
    }
    for &(y, lo, hi) in &[(0.3, -0.2, 1.5), (-2.0, -3.0, 0.4), (1.0, 0.0, 30.0)] {
        let d = SUniform::new(lo, hi).unwrap();
        r.push((Family::Uniform, vec![y, lo, hi], d.cdf(y).ln(), d.sf(y).ln(), 1e-10));
    }
    r.push((Family::Uniform, vec![-1.0, 0.0, 1.0], f64::NEG_INFINITY, 0.0, 0.0));
    r.push((Family::Uniform, vec![2.0, 0.0, 1.0], 0.0, f64::NEG_INFINITY, 0.0));
    // Gumbel: scipy 1.17 `gumbel_r.logcdf` and `gumbel_r.logsf` (loc = mu, scale = beta).
    r.push((Family::Gumbel, vec![0.3, -0.2, 1.5], -0.716_531_310_573_789_3, -0.670_297_396_655_822_2, 1e-10));
    r.push((Family::Gumbel, vec![10.0, 0.0, 3.0], -0.035_673_993_347_252_395, -3.351_117_304_160_919, 1e-10));
    // issue 14 families: scipy 1.17.1 logcdf/logsf of invweibull, pareto, lomax, exponnorm
    // (beta_binomial's integer variate has no difference here; its CDF is checked, with the calls, in tests/distributions_univariate_more.rs)
    r.push((Family::Frechet, vec![1.3, 2.5, 0.9], -0.398_793_336_339_439_86, -1.112_090_873_280_892_7, 1e-10));
    r.push((Family::Pareto, vec![2.5, 1.2, 3.0], -0.117_199_206_118_020_26, -2.201_907_525_240_601_5, 1e-10));
    r.push((Family::ParetoType2, vec![1.5, 0.2, 2.0, 3.0], -0.251_815_430_295_393_55, -1.502_325_863_737_467_5, 1e-10));
    r.push((Family::ExpModNormal, vec![1.0, 0.3, 0.7, 1.5], -0.598_184_841_413_435_2, -0.798_082_721_882_054, 1e-9));
    r
}

fn cdf_value(family: Family, v: &[f64], complement: bool) -> Option<f64> {
    let none = vec![false; v.len()];
    log_cdf(family, &scalars(v), &none, complement)
        .ok()
        .map(|t| t.value)
}

#[test]
fn log_cdfs_match_closed_forms_and_finite_differences() {
    for (family, v, lcdf, lccdf, tol) in cdf_rows() {
        for (complement, expected) in [(false, lcdf), (true, lccdf)] {
            let got = cdf_value(family, &v, complement).unwrap();
            assert!(
                close(got, expected, tol),
                "{family:?} {v:?} complement={complement}: got {got}, expected {expected}"
            );
            if !got.is_finite() || got == 0.0 {
                continue;
            }
            let mask = vec![true; v.len()];
            let t = log_cdf(family, &scalars(&v), &mask, complement).unwrap();
            for k in 0..v.len() {
                let fd = finite_difference_of(|w| cdf_value(family, w, complement), &v, k);
                assert!(
                    close(t.partials[k][0], fd, 1e-6),
                    "{family:?} {v:?} complement={complement} arg {k}: {} vs {fd}",
                    t.partials[k][0]
                );
            }
        }
    }
}

#[test]
fn log_cdfs_vectorise_and_report_errors() {
    // Three rows of one family as vectors equal the sum of the scalar calls.
    let rows: Vec<_> = cdf_rows()
        .into_iter()
        .filter(|r| r.0 == Family::Weibull)
        .collect();
    let cols: Vec<Vec<f64>> = (0..3)
        .map(|k| rows.iter().map(|r| r.1[k]).collect())
        .collect();
    let args: Vec<Arg> = cols.iter().map(|c| Arg::Vector(c)).collect();
    let t = log_cdf(Family::Weibull, &args, &[true; 3], false).unwrap();
    let sum: f64 = rows.iter().map(|r| r.2).sum();
    assert!(close(t.value, sum, 1e-10));
    assert_eq!(t.partials[1].len(), 3);
    // Errors carry the cdf's own name.
    let err = log_cdf(
        Family::Normal,
        &scalars(&[0.0, 0.0, 0.0]),
        &[false; 3],
        false,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "normal_lcdf: Scale parameter is 0, but must be positive finite"
    );
    let err = log_cdf(
        Family::Exponential,
        &scalars(&[-1.0, 1.0]),
        &[false; 2],
        true,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "exponential_lccdf: Random variable is -1, but must be nonnegative"
    );
    let err = log_cdf(
        Family::Gamma,
        &scalars(&[1.0, 1.0, 1.0]),
        &[false; 3],
        false,
    )
    .unwrap_err();
    assert!(
        err.to_string().starts_with("gamma_lcdf: not available"),
        "{err}"
    );
    assert!(has_log_cdf(Family::Uniform) && !has_log_cdf(Family::Beta));
}

/// (family, parameters, mean, variance); NaN skips a moment that is too noisy to check.
#[rustfmt::skip]
fn rng_rows() -> Vec<(Family, Vec<f64>, f64, f64)> {
    use statrs::function::gamma::gamma as g;
    let p_logit = |a: f64| 1.0 / (1.0 + (-a).exp());
    let nan = f64::NAN;
    let ln_mean = (0.2f64 + 0.125).exp();
    vec![
        (Family::Normal, vec![1.0, 2.0], 1.0, 4.0),
        (Family::StudentT, vec![5.0, 1.0, 2.0], 1.0, nan),
        (Family::DoubleExponential, vec![1.0, 2.0], 1.0, 8.0),
        (Family::Logistic, vec![1.0, 2.0], 1.0, 4.0 * std::f64::consts::PI.powi(2) / 3.0),
        (Family::Lognormal, vec![0.2, 0.5], ln_mean, (0.25f64.exp() - 1.0) * ln_mean * ln_mean),
        (Family::Exponential, vec![2.0], 0.5, 0.25),
        (Family::Gamma, vec![2.5, 1.5], 2.5 / 1.5, 2.5 / 2.25),
        (Family::InvGamma, vec![6.0, 2.0], 0.4, 4.0 / (25.0 * 4.0)),
        (Family::Beta, vec![2.0, 3.0], 0.4, 0.04),
        (Family::Uniform, vec![-1.0, 3.0], 1.0, 16.0 / 12.0),
        (Family::Weibull, vec![2.0, 1.5], 1.5 * g(1.5), 2.25 * (1.0 - g(1.5).powi(2))),
        (Family::Bernoulli, vec![0.3], 0.3, 0.21),
        (Family::BernoulliLogit, vec![0.4], p_logit(0.4), p_logit(0.4) * (1.0 - p_logit(0.4))),
        (Family::Binomial, vec![10.0, 0.3], 3.0, 2.1),
        (Family::BinomialLogit, vec![10.0, -0.5], 10.0 * p_logit(-0.5), 10.0 * p_logit(-0.5) * p_logit(0.5)),
        (Family::Poisson, vec![3.5], 3.5, 3.5),
        (Family::PoissonLog, vec![1.2], 1.2f64.exp(), 1.2f64.exp()),
        (Family::NegBinomial2, vec![4.0, 2.5], 4.0, 4.0 + 16.0 / 2.5),
        // Gumbel(1, 2): mean μ + γβ, variance π²β²/6.
        (Family::Gumbel, vec![1.0, 2.0], 1.0 + 0.577_215_664_901_532_9 * 2.0, std::f64::consts::PI.powi(2) * 4.0 / 6.0),
        // beta_binomial(10, 2, 3): mean Nα/(α+β), variance Nαβ(α+β+N)/((α+β)²(α+β+1))
        (Family::BetaBinomial, vec![10.0, 2.0, 3.0], 4.0, 10.0 * 6.0 * 15.0 / (25.0 * 6.0)),
        // exp_mod_normal(0.5, 1, 2): mean μ + 1/λ, variance σ² + 1/λ²
        (Family::ExpModNormal, vec![0.5, 1.0, 2.0], 1.0, 1.25),
        // pareto_type_2(0, 1, 6): mean λ/(α − 1), variance λ²α/((α−1)²(α−2))
        (Family::ParetoType2, vec![0.0, 1.0, 6.0], 0.2, 6.0 / 100.0),
    ]
}

#[test]
fn rng_draws_have_the_right_moments() {
    const DRAWS: usize = 20_000;
    for (family, params, mean, var) in rng_rows() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(20_261_130);
        let x: Vec<f64> = (0..DRAWS)
            .map(|_| super::rng(family, &params, &mut rng).unwrap())
            .collect();
        if family.sig().discrete {
            assert!(
                x.iter().all(|v| v.fract() == 0.0 && *v >= 0.0),
                "{family:?}"
            );
        }
        let m = x.iter().sum::<f64>() / DRAWS as f64;
        let s2 = x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (DRAWS - 1) as f64;
        // Five standard errors of the mean (the draws' own variance where the true one is skipped).
        let se = (if var.is_nan() { s2 } else { var } / DRAWS as f64).sqrt();
        assert!(
            (m - mean).abs() < 5.0 * se,
            "{family:?}: mean {m}, expected {mean}"
        );
        if !var.is_nan() {
            assert!(
                (s2 / var - 1.0).abs() < 0.08,
                "{family:?}: variance {s2}, expected {var}"
            );
        }
    }
    // Cauchy has no mean: its median is μ and its quartiles μ ± σ.
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
    let mut x: Vec<f64> = (0..DRAWS)
        .map(|_| super::rng(Family::Cauchy, &[2.0, 0.5], &mut rng).unwrap())
        .collect();
    x.sort_by(f64::total_cmp);
    assert!((x[DRAWS / 2] - 2.0).abs() < 0.05);
    assert!((x[DRAWS / 4] - 1.5).abs() < 0.05 && (x[3 * DRAWS / 4] - 2.5).abs() < 0.05);
}

#[test]
fn rng_checks_parameters() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
    let err = super::rng(Family::Normal, &[0.0, 0.0], &mut rng).unwrap_err();
    assert_eq!(
        err.to_string(),
        "normal_rng: Scale parameter is 0, but must be positive finite"
    );
    let err = super::rng(Family::Poisson, &[2e9], &mut rng).unwrap_err();
    assert_eq!(
        err.to_string(),
        "poisson_rng: Rate parameter is 2000000000, but must be less than 1073741824"
    );
    let err = super::rng(Family::Binomial, &[3.5, 0.5], &mut rng).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("binomial_rng: Population size parameter is 3.5"),
        "{err}"
    );
    let err = super::rng(Family::Gamma, &[1.0], &mut rng).unwrap_err();
    assert_eq!(err.to_string(), "gamma_rng: expects 2 parameters, got 1");
    assert_eq!(super::rng(Family::Poisson, &[0.0], &mut rng).unwrap(), 0.0);
}

/// Timing of one gradient evaluation over N = 1000 rows (vector variate, scalar parameters, all
/// continuous arguments var). Run with
/// `cargo test --release --lib distributions::tests::timing -- --ignored --nocapture`.
#[test]
#[ignore = "timing report, not a check"]
fn timing_per_call_over_1000_rows() {
    for (family, group) in by_family() {
        let base = &group[0].args;
        let y: Vec<f64> = (0..1000).map(|_| base[0]).collect();
        let mut args: Vec<Arg> = base.iter().map(|&x| Arg::Scalar(x)).collect();
        args[0] = Arg::Vector(&y);
        let mask = var_mask(family);
        let reps = 2000;
        let start = std::time::Instant::now();
        let mut sink = 0.0;
        for _ in 0..reps {
            sink += log_density(family, &args, &mask, true).unwrap().value;
        }
        let per = start.elapsed().as_secs_f64() / reps as f64;
        println!(
            "{family:?}: {:.1} µs per call (N = 1000) [{sink:.1}]",
            per * 1e6
        );
    }
}

/// Partials at variates drawn from the family itself (seeded), for every table row's
/// parameters: a wider sweep of the support than the hand-picked rows. Draws closer than 0.01 to
/// a boundary of the support are skipped, where a step of 1e-6 no longer resolves the curvature.
#[test]
fn partials_match_finite_differences_at_drawn_variates() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(42);
    let mut checked = 0;
    for r in rows().into_iter().filter(|r| r.expected.is_finite()) {
        let sig = r.family.sig();
        let mask = var_mask(r.family);
        for _ in 0..10 {
            let y = super::rng(r.family, &r.args[1..], &mut rng).unwrap();
            let near_edge = match sig.variate {
                Support::Positive | Support::NonNegative => y < 0.01,
                Support::UnitInterval => !(0.01..=0.99).contains(&y),
                _ => false,
            } || (r.family == Family::Uniform
                && (y - r.args[1] < 0.01 || r.args[2] - y < 0.01));
            if near_edge {
                continue;
            }
            let mut v = r.args.clone();
            v[0] = y;
            let t = log_density(r.family, &scalars(&v), &mask, false).unwrap();
            for (k, &var) in mask.iter().enumerate() {
                if var {
                    let fd = finite_difference(r.family, &v, k);
                    assert!(
                        close(t.partials[k][0], fd, 1e-5),
                        "{:?} {v:?} arg {k}: partial {}, finite difference {fd}",
                        r.family,
                        t.partials[k][0]
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 500, "only {checked} partials checked");
}
