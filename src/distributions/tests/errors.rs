//! Family tests: argument errors worded as Stan words them, and normalisation (densities
//! integrate and masses sum to one).

use super::*;

/// Invalid arguments: (family, arguments, text the error must contain).
#[rustfmt::skip]
fn invalid_rows() -> Vec<(Family, Vec<f64>, &'static str)> {
    let nan = f64::NAN;
    vec![
        (
            Family::Normal,
            vec![0.0, 0.0, 0.0],
            "normal_lpdf: Scale parameter is 0, but must be positive finite",
        ),
        (
            Family::Normal,
            vec![0.0, 0.0, -1.0],
            "Scale parameter is -1, but must be positive finite",
        ),
        (
            Family::Normal,
            vec![nan, 0.0, 1.0],
            "normal_lpdf: Random variable is NaN, but must be not nan",
        ),
        (
            Family::StudentT,
            vec![0.0, -1.0, 0.0, 1.0],
            "student_t_lpdf: Degrees of freedom parameter is -1, but must be positive finite",
        ),
        (
            Family::StudentT,
            vec![0.0, 1.0, 0.0, f64::INFINITY],
            "student_t_lpdf: Scale parameter is inf, but must be positive finite",
        ),
        (
            Family::Cauchy,
            vec![0.0, nan, 1.0],
            "cauchy_lpdf: Location parameter is NaN, but must be finite",
        ),
        (
            Family::Cauchy,
            vec![0.0, 0.0, 0.0],
            "cauchy_lpdf: Scale parameter is 0",
        ),
        (
            Family::Exponential,
            vec![-1.0, 1.0],
            "exponential_lpdf: Random variable is -1, but must be nonnegative",
        ),
        (
            Family::Exponential,
            vec![1.0, 0.0],
            "exponential_lpdf: Inverse scale parameter is 0, but must be positive finite",
        ),
        (
            Family::Gamma,
            vec![-1.0, 1.0, 1.0],
            "gamma_lpdf: Random variable is -1, but must be nonnegative",
        ),
        (
            Family::Gamma,
            vec![1.0, 0.0, 1.0],
            "gamma_lpdf: Shape parameter is 0, but must be positive finite",
        ),
        (
            Family::Gamma,
            vec![1.0, 1.0, nan],
            "gamma_lpdf: Inverse scale parameter is NaN",
        ),
        (
            Family::Bernoulli,
            vec![1.0, 1.5],
            "bernoulli_lpmf: Probability parameter is 1.5, but must be in the interval [0, 1]",
        ),
        (
            Family::Bernoulli,
            vec![-1.0, 0.5],
            "bernoulli_lpmf: Random variable is -1, but must be 0 or 1",
        ),
        (
            Family::BernoulliLogit,
            vec![2.0, 0.0],
            "bernoulli_logit_lpmf: Random variable is 2, but must be 0 or 1",
        ),
        (
            Family::BernoulliLogit,
            vec![0.5, 0.0],
            "Random variable is 0.5, but must be 0 or 1",
        ),
        (
            Family::BernoulliLogit,
            vec![1.0, nan],
            "bernoulli_logit_lpmf: Logit transformed probability parameter is NaN, but must be not nan",
        ),
        (Family::DoubleExponential, vec![0.0, 0.0, -1.0], "double_exponential_lpdf: Scale parameter is -1, but must be positive finite"),
        (Family::DoubleExponential, vec![f64::INFINITY, 0.0, 1.0], "double_exponential_lpdf: Random variable is inf, but must be finite"),
        (Family::Logistic, vec![0.0, 0.0, 0.0], "logistic_lpdf: Scale parameter is 0, but must be positive finite"),
        (Family::Lognormal, vec![-1.0, 0.0, 1.0], "lognormal_lpdf: Random variable is -1, but must be nonnegative"),
        (Family::Lognormal, vec![1.0, 0.0, nan], "lognormal_lpdf: Scale parameter is NaN, but must be positive finite"),
        (Family::InvGamma, vec![1.0, -1.0, 1.0], "inv_gamma_lpdf: Shape parameter is -1, but must be positive finite"),
        (Family::InvGamma, vec![-0.5, 1.0, 1.0], "inv_gamma_lpdf: Random variable is -0.5, but must be nonnegative"),
        (Family::Beta, vec![1.5, 1.0, 1.0], "beta_lpdf: Random variable is 1.5, but must be in the interval [0, 1]"),
        (Family::Beta, vec![0.5, 0.0, 1.0], "beta_lpdf: First shape parameter is 0, but must be positive finite"),
        (Family::Uniform, vec![0.5, 1.0, 0.0], "uniform_lpdf: Upper bound parameter is 0, but must be greater than 1"),
        (Family::Uniform, vec![0.5, f64::NEG_INFINITY, 0.0], "uniform_lpdf: Lower bound parameter is -inf, but must be finite"),
        (Family::Weibull, vec![1.0, 1.0, 0.0], "weibull_lpdf: Scale parameter is 0, but must be positive finite"),
        (Family::Gumbel, vec![1.0, 1.0, 0.0], "gumbel_lpdf: Scale parameter is 0, but must be positive finite"),
        (Family::Gumbel, vec![f64::NAN, 1.0, 1.0], "gumbel_lpdf: Random variable is NaN, but must be not nan"),
        (Family::Binomial, vec![3.0, 2.0, 0.5], "binomial_lpmf: Random variable is 3, but must be in the interval [0, 2]"),
        (Family::Binomial, vec![-1.0, 2.0, 0.5], "binomial_lpmf: Random variable is -1, but must be a nonnegative integer"),
        (Family::Binomial, vec![1.0, 2.5, 0.5], "binomial_lpmf: Population size parameter is 2.5, but must be a nonnegative integer"),
        (Family::Binomial, vec![1.0, 2.0, 1.5], "binomial_lpmf: Probability parameter is 1.5, but must be in the interval [0, 1]"),
        (Family::BinomialLogit, vec![1.0, 2.0, f64::INFINITY], "binomial_logit_lpmf: Probability parameter is inf, but must be finite"),
        (Family::Poisson, vec![2.5, 1.0], "poisson_lpmf: Random variable is 2.5, but must be a nonnegative integer"),
        (Family::Poisson, vec![1.0, -1.0], "poisson_lpmf: Rate parameter is -1, but must be nonnegative"),
        (Family::PoissonLog, vec![-1.0, 0.0], "poisson_log_lpmf: Random variable is -1, but must be a nonnegative integer"),
        (Family::PoissonLog, vec![1.0, nan], "poisson_log_lpmf: Log rate parameter is NaN, but must be not nan"),
        (Family::NegBinomial2, vec![1.0, 1.0, 0.0], "neg_binomial_2_lpmf: Precision parameter is 0, but must be positive finite"),
        (Family::NegBinomial2, vec![1.0, -2.0, 1.0], "neg_binomial_2_lpmf: Location parameter is -2, but must be positive finite"),
        (Family::BetaBinomial, vec![1.0, 3.0, 0.0, 1.0], "beta_binomial_lpmf: First prior sample size parameter is 0, but must be positive finite"),
        (Family::BetaBinomial, vec![1.5, 3.0, 1.0, 1.0], "beta_binomial_lpmf: Random variable is 1.5, but must be a nonnegative integer"),
        (Family::SkewNormal, vec![0.0, 0.0, -1.0, 1.0], "skew_normal_lpdf: Scale parameter is -1, but must be positive finite"),
        (Family::SkewNormal, vec![0.0, 0.0, 1.0, nan], "skew_normal_lpdf: Shape parameter is NaN, but must be finite"),
        (Family::Frechet, vec![-1.0, 1.0, 1.0], "frechet_lpdf: Random variable is -1, but must be positive"),
        (Family::Frechet, vec![1.0, 0.0, 1.0], "frechet_lpdf: Shape parameter is 0, but must be positive finite"),
        (Family::Pareto, vec![2.0, -1.0, 1.0], "pareto_lpdf: Scale parameter is -1, but must be positive finite"),
        (Family::ParetoType2, vec![0.0, 1.0, 1.0, 1.0], "pareto_type_2_lpdf: Random variable is 0, but must be greater than or equal to the location 1"),
        (Family::ParetoType2, vec![2.0, 1.0, 0.0, 1.0], "pareto_type_2_lpdf: Scale parameter is 0, but must be positive finite"),
        (Family::ExpModNormal, vec![0.0, 0.0, 1.0, -2.0], "exp_mod_normal_lpdf: Inv_scale parameter is -2, but must be positive finite"),
        (Family::VonMises, vec![0.0, 0.0, -1.0], "von_mises_lpdf: Scale parameter is -1, but must be nonnegative and finite"),
        (Family::VonMises, vec![f64::INFINITY, 0.0, 1.0], "von_mises_lpdf: Random variable is inf, but must be finite"),
    ]
}

#[test]
fn invalid_arguments_give_stan_worded_errors() {
    let mut families_seen = Vec::new();
    for (family, v, text) in invalid_rows() {
        let none = vec![false; v.len()];
        let err = log_density(family, &scalars(&v), &none, false).unwrap_err();
        assert!(
            err.to_string().contains(text),
            "{family:?} {v:?}: got `{err}`, expected `{text}`"
        );
        families_seen.push(family);
    }
    for (family, _) in by_family() {
        assert!(
            families_seen.contains(&family),
            "{family:?} has no invalid row"
        );
    }
}

#[test]
fn errors_name_the_one_based_element_and_mismatched_lengths() {
    let sigma = [1.0, -0.2, 1.0];
    let y = [0.0; 3];
    let args = [Arg::Vector(&y), Arg::Scalar(0.0), Arg::Vector(&sigma)];
    let err = log_density(Family::Normal, &args, &[false; 3], false).unwrap_err();
    assert_eq!(
        err.to_string(),
        "normal_lpdf: Scale parameter[2] is -0.2, but must be positive finite"
    );
    let short = [1.0, 1.0];
    let args = [Arg::Vector(&y), Arg::Scalar(0.0), Arg::Vector(&short)];
    let err = log_density(Family::Normal, &args, &[false; 3], false).unwrap_err();
    assert!(err.to_string().contains("must have the same size"), "{err}");
    // An integer variate cannot carry partials.
    let err = log_density(
        Family::Bernoulli,
        &scalars(&[1.0, 0.5]),
        &[true, true],
        false,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "bernoulli_lpmf: Random variable is an integer and cannot depend on parameters"
    );
}

/// Where to integrate a continuous density: y = c + s·t/(1 − t²) on t ∈ (−1, 1), y = s·t/(1 − t)
/// on t ∈ (0, 1), or the interval [a, b] directly.
#[derive(Clone, Copy)]
enum Domain {
    Real { c: f64, s: f64 },
    Positive { s: f64 },
    Interval { a: f64, b: f64 },
}

/// Midpoint rule with m points on t, combined with the rule on 2m points by Richardson
/// extrapolation (error O(h⁴) for smooth integrands).
fn integrate_density(family: Family, params: &[f64], domain: Domain) -> f64 {
    let eval = |y: f64| {
        let mut v = vec![y];
        v.extend_from_slice(params);
        value_of(family, &v).exp()
    };
    let midpoint = |m: usize| -> f64 {
        let (t0, t1) = match domain {
            Domain::Real { .. } => (-1.0, 1.0),
            Domain::Positive { .. } => (0.0, 1.0),
            Domain::Interval { a, b } => (a, b),
        };
        let h = (t1 - t0) / m as f64;
        let mut sum = 0.0;
        for i in 0..m {
            let t = t0 + (i as f64 + 0.5) * h;
            sum += match domain {
                Domain::Real { c, s } => {
                    let u = 1.0 - t * t;
                    eval(c + s * t / u) * s * (1.0 + t * t) / (u * u)
                }
                Domain::Positive { s } => eval(s * t / (1.0 - t)) * s / ((1.0 - t) * (1.0 - t)),
                Domain::Interval { .. } => eval(t),
            };
        }
        sum * h
    };
    let (coarse, fine) = (midpoint(20_000), midpoint(40_000));
    (4.0 * fine - coarse) / 3.0
}

#[test]
#[rustfmt::skip]
fn continuous_densities_integrate_to_one() {
    let cases: Vec<(Family, Vec<f64>, Domain)> = vec![
        (
            Family::Normal,
            vec![0.7, 1.3],
            Domain::Real { c: 0.7, s: 1.3 },
        ),
        (
            Family::StudentT,
            vec![3.5, -0.4, 0.8],
            Domain::Real { c: -0.4, s: 0.8 },
        ),
        (
            Family::Cauchy,
            vec![0.5, 2.0],
            Domain::Real { c: 0.5, s: 2.0 },
        ),
        (
            Family::Exponential,
            vec![1.7],
            Domain::Positive { s: 1.0 / 1.7 },
        ),
        (
            Family::Gamma,
            vec![2.5, 1.5],
            Domain::Positive { s: 2.5 / 1.5 },
        ),
        (Family::DoubleExponential, vec![0.3, 0.7], Domain::Real { c: 0.3, s: 0.7 }),
        (Family::Logistic, vec![-1.0, 0.6], Domain::Real { c: -1.0, s: 0.6 }),
        (Family::Lognormal, vec![0.2, 0.5], Domain::Positive { s: 1.3 }),
        (Family::InvGamma, vec![3.0, 2.0], Domain::Positive { s: 1.0 }),
        (Family::Beta, vec![2.5, 3.5], Domain::Interval { a: 0.0, b: 1.0 }),
        (Family::Uniform, vec![-0.5, 2.0], Domain::Interval { a: -0.5, b: 2.0 }),
        (Family::Weibull, vec![2.5, 1.5], Domain::Positive { s: 1.5 }),
    ];
    for (family, params, domain) in cases {
        let total = integrate_density(family, &params, domain);
        assert!(
            (total - 1.0).abs() < 1e-6,
            "{family:?} {params:?}: ∫ = {total}"
        );
    }
}

#[test]
fn discrete_masses_sum_to_one() {
    let cases: Vec<(Family, Vec<f64>, u32)> = vec![
        (Family::Bernoulli, vec![0.3], 1),
        (Family::BernoulliLogit, vec![-0.8], 1),
        (Family::Binomial, vec![12.0, 0.35], 12),
        (Family::BinomialLogit, vec![12.0, 1.1], 12),
        (Family::Poisson, vec![3.5], 200),
        (Family::PoissonLog, vec![1.2], 200),
        (Family::NegBinomial2, vec![4.0, 2.5], 2000),
        (Family::BetaBinomial, vec![15.0, 0.6, 2.2], 15),
    ];
    for (family, params, max) in cases {
        let total: f64 = (0..=max)
            .map(|k| {
                let mut v = vec![k as f64];
                v.extend_from_slice(&params);
                value_of(family, &v).exp()
            })
            .sum();
        assert!(
            (total - 1.0).abs() < 1e-12,
            "{family:?} {params:?}: Σ = {total}"
        );
    }
}
