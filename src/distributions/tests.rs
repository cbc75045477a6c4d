//! One table of (family, arguments, expected log density) drives the value, gradient,
//! vectorisation and propto tests (STYLE.md habit 9); further tables hold invalid arguments and
//! normalisation checks. Expected values come from statrs' independent implementations or from
//! the textbook formula written out here.

use super::*;
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use statrs::distribution::{
    Bernoulli as SBernoulli, Beta as SBeta, Binomial as SBinomial, Cauchy as SCauchy, Continuous,
    Discrete, Exp as SExp, Gamma as SGamma, InverseGamma as SInverseGamma, Laplace as SLaplace,
    LogNormal as SLogNormal, NegativeBinomial as SNegativeBinomial, Normal as SNormal,
    Poisson as SPoisson, StudentsT as SStudentsT, Uniform as SUniform, Weibull as SWeibull,
};

/// One valid evaluation: scalar arguments (variate first), the expected normalised log density,
/// the relative tolerance on the value and the relative tolerance of the gradient check.
struct Row {
    family: Family,
    args: Vec<f64>,
    expected: f64,
    tol: f64,
    grad_tol: f64,
}

fn row(family: Family, args: &[f64], expected: f64) -> Row {
    Row {
        family,
        args: args.to_vec(),
        expected,
        tol: 1e-10,
        grad_tol: 1e-6,
    }
}

fn logistic_sigmoid_naive(a: f64) -> f64 {
    1.0 / (1.0 + (-a).exp())
}

fn rows() -> Vec<Row> {
    let mut r = Vec::new();
    for &(y, mu, s) in &[(0.3, -0.2, 1.5), (-2.0, 1.0, 0.4), (10.0, 0.0, 3.0)] {
        let d = SNormal::new(mu, s).unwrap();
        r.push(row(Family::Normal, &[y, mu, s], d.ln_pdf(y)));
    }
    for &(y, nu, mu, s) in &[
        (0.3, 3.0, -0.2, 1.5),
        (-2.0, 0.7, 1.0, 0.4),
        (10.0, 30.0, 0.0, 3.0),
        (1.0, 1e4, 0.5, 2.0),
    ] {
        let d = SStudentsT::new(mu, s, nu).unwrap();
        r.push(row(Family::StudentT, &[y, nu, mu, s], d.ln_pdf(y)));
    }
    for &(y, mu, s) in &[(0.3, -0.2, 1.5), (-2.0, 1.0, 0.4), (100.0, 0.0, 3.0)] {
        let d = SCauchy::new(mu, s).unwrap();
        r.push(row(Family::Cauchy, &[y, mu, s], d.ln_pdf(y)));
    }
    for &(y, b) in &[(0.3, 1.5), (0.0, 0.4), (12.0, 3.0)] {
        let d = SExp::new(b).unwrap();
        r.push(row(Family::Exponential, &[y, b], d.ln_pdf(y)));
    }
    for &(y, a, b) in &[
        (0.3, 1.5, 2.0),
        (2.5, 0.4, 0.7),
        (12.0, 30.0, 3.0),
        (0.8, 1.0, 2.0),
    ] {
        let d = SGamma::new(a, b).unwrap();
        r.push(row(Family::Gamma, &[y, a, b], d.ln_pdf(y)));
    }
    for &(y, t) in &[(1.0, 0.3), (0.0, 0.3), (1.0, 0.95), (0.0, 0.01)] {
        let d = SBernoulli::new(t).unwrap();
        r.push(row(Family::Bernoulli, &[y, t], d.ln_pmf(y as u64)));
    }
    for &(y, a) in &[(1.0, 0.3), (0.0, 0.3), (1.0, -2.5), (0.0, 4.0)] {
        let p = logistic_sigmoid_naive(a);
        let expected = y * p.ln() + (1.0 - y) * (1.0 - p).ln();
        r.push(row(Family::BernoulliLogit, &[y, a], expected));
    }
    // Far tails, where the naive form overflows or cancels: log σ(−40) = −40 − log1p(e⁻⁴⁰).
    r.push(row(
        Family::BernoulliLogit,
        &[0.0, 40.0],
        -40.0 - (-40.0f64).exp(),
    ));
    r.push(row(Family::BernoulliLogit, &[1.0, -745.5], -745.5));
    r.push(row(Family::BernoulliLogit, &[1.0, 40.0], -(-40.0f64).exp()));
    for &(y, mu, s) in &[(0.3, -0.2, 1.5), (-2.0, 1.0, 0.4), (10.0, 0.0, 3.0)] {
        let d = SLaplace::new(mu, s).unwrap();
        r.push(row(Family::DoubleExponential, &[y, mu, s], d.ln_pdf(y)));
    }
    for &(y, mu, s) in &[
        (0.3f64, -0.2f64, 1.5f64),
        (-2.0, 1.0, 0.4),
        (10.0, 0.0, 3.0),
    ] {
        // Textbook form: e^{−z} / (σ (1 + e^{−z})²).
        let z = (y - mu) / s;
        let expected = -z - s.ln() - 2.0 * (1.0 + (-z).exp()).ln();
        r.push(row(Family::Logistic, &[y, mu, s], expected));
    }
    for &(y, mu, s) in &[(0.3, -0.2, 1.5), (2.0, 1.0, 0.4), (10.0, 0.0, 3.0)] {
        let d = SLogNormal::new(mu, s).unwrap();
        r.push(row(Family::Lognormal, &[y, mu, s], d.ln_pdf(y)));
    }
    r.push(row(Family::Lognormal, &[0.0, 0.0, 1.0], f64::NEG_INFINITY));
    for &(y, a, b) in &[(0.3, 1.5, 2.0), (2.5, 0.4, 0.7), (12.0, 30.0, 3.0)] {
        // statrs calls the scale β its "rate": pdf β^α/Γ(α) y^{−α−1} e^{−β/y}.
        let d = SInverseGamma::new(a, b).unwrap();
        r.push(row(Family::InvGamma, &[y, a, b], d.ln_pdf(y)));
    }
    for &(y, a, b) in &[
        (0.3, 1.5, 2.0),
        (0.9, 0.4, 0.7),
        (0.05, 30.0, 3.0),
        (0.0, 1.0, 2.5),
    ] {
        let d = SBeta::new(a, b).unwrap();
        let expected = if y == 0.0 { b.ln() } else { d.ln_pdf(y) };
        r.push(row(Family::Beta, &[y, a, b], expected));
    }
    for &(y, lo, hi) in &[(0.3, -0.2, 1.5), (-2.0, -3.0, 0.4), (1.0, 0.0, 30.0)] {
        let d = SUniform::new(lo, hi).unwrap();
        r.push(row(Family::Uniform, &[y, lo, hi], d.ln_pdf(y)));
    }
    r.push(row(Family::Uniform, &[2.0, 0.0, 1.0], f64::NEG_INFINITY));
    for &(y, a, s) in &[
        (0.3, 1.5, 2.0),
        (2.5, 0.4, 0.7),
        (1.2, 3.0, 1.0),
        (0.8, 1.0, 2.0),
    ] {
        let d = SWeibull::new(a, s).unwrap();
        r.push(row(Family::Weibull, &[y, a, s], d.ln_pdf(y)));
    }
    for &(k, m, t) in &[
        (3.0, 10.0, 0.3),
        (0.0, 5.0, 0.9),
        (20.0, 20.0, 0.6),
        (7.0, 40.0, 0.02),
    ] {
        let d = SBinomial::new(t, m as u64).unwrap();
        r.push(row(Family::Binomial, &[k, m, t], d.ln_pmf(k as u64)));
    }
    r.push(row(Family::Binomial, &[0.0, 4.0, 0.0], 0.0));
    for &(k, m, a) in &[
        (3.0, 10.0, -0.8),
        (0.0, 5.0, 2.2),
        (20.0, 20.0, 0.4),
        (7.0, 40.0, -3.9),
    ] {
        let d = SBinomial::new(logistic_sigmoid_naive(a), m as u64).unwrap();
        r.push(row(Family::BinomialLogit, &[k, m, a], d.ln_pmf(k as u64)));
    }
    // Far tail: 3 successes of 3 at α = 50: 3 log σ(50) = −3 log1p(e⁻⁵⁰).
    r.push(row(
        Family::BinomialLogit,
        &[3.0, 3.0, 50.0],
        -3.0 * (-50.0f64).exp(),
    ));
    for &(k, l) in &[(3.0, 2.5), (0.0, 0.4), (40.0, 31.0), (1.0, 1e-3)] {
        let d = SPoisson::new(l).unwrap();
        r.push(row(Family::Poisson, &[k, l], d.ln_pmf(k as u64)));
    }
    r.push(row(Family::Poisson, &[0.0, 0.0], 0.0));
    for &(k, a) in &[(3.0, 0.9f64), (0.0, -0.9), (40.0, 3.4), (1.0, -7.0)] {
        let d = SPoisson::new(a.exp()).unwrap();
        r.push(row(Family::PoissonLog, &[k, a], d.ln_pmf(k as u64)));
    }
    for &(k, mu, phi) in &[
        (3.0, 2.5, 1.5),
        (0.0, 0.4, 10.0),
        (40.0, 31.0, 0.7),
        (5.0, 4.0, 1e3),
    ] {
        // statrs counts failures before r successes with success probability p = φ/(μ + φ).
        let d = SNegativeBinomial::new(phi, phi / (mu + phi)).unwrap();
        let mut rw = row(Family::NegBinomial2, &[k, mu, phi], d.ln_pmf(k as u64));
        rw.tol = 1e-9;
        r.push(rw);
    }
    // Large precision (near the Poisson limit) and large counts, against 20-digit values from
    // mpmath (loggamma at 40 digits).
    for &(k, mu, phi, expected) in &[
        (3.0, 2.5, 1e8, -1.542_887_287_355_589_6),
        (40.0, 31.0, 1e6, -3.961_131_036_331_842_5),
        (200.0, 150.0, 3.5, -5.779_749_951_350_912_7),
    ] {
        r.push(row(Family::NegBinomial2, &[k, mu, phi], expected));
    }
    r
}

fn scalars(v: &[f64]) -> Vec<Arg<'_>> {
    v.iter().map(|&x| Arg::Scalar(x)).collect()
}

/// The arguments that can carry partials: every argument with a non-integer support.
fn var_mask(family: Family) -> Vec<bool> {
    let sig = family.sig();
    std::iter::once(sig.variate)
        .chain(sig.params.iter().map(|p| p.support))
        .map(|s| !s.is_integer())
        .collect()
}

fn value_of(family: Family, v: &[f64]) -> f64 {
    let none = vec![false; v.len()];
    log_density(family, &scalars(v), &none, false)
        .unwrap()
        .value
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    a == b || (a - b).abs() <= rel * a.abs().max(b.abs()).max(1.0)
}

#[test]
fn value_matches_closed_form() {
    for r in rows() {
        let got = value_of(r.family, &r.args);
        assert!(
            close(got, r.expected, r.tol),
            "{:?} {:?}: got {got}, expected {}",
            r.family,
            r.args,
            r.expected
        );
    }
}

/// ∂f/∂v_k by central differences with step 1e-6·max(1, |v_k|); at the edge of the support
/// (`f` is `None` at the backward point) the second-order forward difference.
fn finite_difference_of(f: impl Fn(&[f64]) -> Option<f64>, v: &[f64], k: usize) -> f64 {
    let h = 1e-6 * v[k].abs().max(1.0);
    let at = |dx: f64| {
        let mut w = v.to_vec();
        w[k] += dx;
        f(&w)
    };
    match at(-h) {
        Some(down) => (at(h).unwrap() - down) / (2.0 * h),
        None => (-3.0 * at(0.0).unwrap() + 4.0 * at(h).unwrap() - at(2.0 * h).unwrap()) / (2.0 * h),
    }
}

/// ∂(normalised log density)/∂arg_k by finite differences.
fn finite_difference(family: Family, v: &[f64], k: usize) -> f64 {
    let f = |w: &[f64]| {
        let none = vec![false; w.len()];
        log_density(family, &scalars(w), &none, false)
            .ok()
            .map(|t| t.value)
    };
    finite_difference_of(f, v, k)
}

#[test]
fn partials_match_central_differences() {
    for r in rows().into_iter().filter(|r| r.expected.is_finite()) {
        let mask = var_mask(r.family);
        let full = log_density(r.family, &scalars(&r.args), &mask, false).unwrap();
        let propto = log_density(r.family, &scalars(&r.args), &mask, true).unwrap();
        for (k, &var) in mask.iter().enumerate() {
            if !var {
                assert!(full.partials[k].is_empty());
                continue;
            }
            let fd = finite_difference(r.family, &r.args, k);
            let got = full.partials[k][0];
            assert!(
                close(got, fd, r.grad_tol),
                "{:?} {:?} arg {k}: partial {got}, finite difference {fd}",
                r.family,
                r.args
            );
            assert_eq!(
                got, propto.partials[k][0],
                "partials do not depend on propto"
            );
        }
    }
}

/// Rows grouped by family, in table order.
fn by_family() -> Vec<(Family, Vec<Row>)> {
    let mut groups: Vec<(Family, Vec<Row>)> = Vec::new();
    for r in rows() {
        match groups.iter_mut().find(|(f, _)| *f == r.family) {
            Some((_, g)) => g.push(r),
            None => groups.push((r.family, vec![r])),
        }
    }
    groups
}

/// Evaluates each combination of scalars; `None` if any is invalid or non-finite.
fn scalar_terms(family: Family, combos: &[Vec<f64>], mask: &[bool]) -> Option<Vec<Term>> {
    combos
        .iter()
        .map(|c| {
            log_density(family, &scalars(c), mask, false)
                .ok()
                .filter(|t| t.value.is_finite())
        })
        .collect()
}

#[test]
fn vectorised_equals_sum_of_scalar_calls() {
    for (family, group) in by_family() {
        assert!(group.len() >= 3, "{family:?} needs three rows in the table");
        let rows3 = &group[..3];
        let k_args = rows3[0].args.len();
        let mask = var_mask(family);
        let mut checked = 0;
        // Pattern `vec_k[k]`: argument k is a vector over the three rows, else row 0's scalar.
        let mut patterns = vec![vec![true; k_args]];
        for k in 0..k_args {
            patterns.push((0..k_args).map(|j| j == k).collect());
        }
        for vec_k in patterns {
            let columns: Vec<Vec<f64>> = (0..k_args)
                .map(|k| rows3.iter().map(|r| r.args[k]).collect())
                .collect();
            let combos: Vec<Vec<f64>> = (0..3)
                .map(|j| {
                    (0..k_args)
                        .map(|k| columns[k][if vec_k[k] { j } else { 0 }])
                        .collect()
                })
                .collect();
            let Some(terms) = scalar_terms(family, &combos, &mask) else {
                continue;
            };
            let args: Vec<Arg> = (0..k_args)
                .map(|k| {
                    if vec_k[k] {
                        Arg::Vector(&columns[k])
                    } else {
                        Arg::Scalar(columns[k][0])
                    }
                })
                .collect();
            let vt = log_density(family, &args, &mask, false).unwrap();
            let sum: f64 = terms.iter().map(|t| t.value).sum();
            assert!(close(vt.value, sum, 1e-12), "{family:?} {vec_k:?}");
            for k in 0..k_args {
                if !mask[k] {
                    assert!(vt.partials[k].is_empty());
                } else if vec_k[k] {
                    assert_eq!(vt.partials[k].len(), 3);
                    for (j, t) in terms.iter().enumerate() {
                        assert!(close(vt.partials[k][j], t.partials[k][0], 1e-12));
                    }
                } else {
                    assert_eq!(vt.partials[k].len(), 1);
                    let s: f64 = terms.iter().map(|t| t.partials[k][0]).sum();
                    assert!(
                        close(vt.partials[k][0], s, 1e-12),
                        "{family:?} {vec_k:?} {k}"
                    );
                }
            }
            checked += 1;
        }
        assert!(
            checked >= 2,
            "{family:?}: only {checked} vectorised patterns were valid"
        );
    }
}

#[test]
fn propto_drops_only_terms_free_of_var_arguments() {
    for (family, group) in by_family() {
        let full_mask = var_mask(family);
        let mut masks = vec![full_mask.clone()];
        for k in 0..full_mask.len() {
            if full_mask[k] {
                masks.push((0..full_mask.len()).map(|j| j == k).collect());
            }
        }
        let mut checked = 0;
        for mask in &masks {
            for a in &group {
                let diff = |v: &[f64]| -> Option<f64> {
                    let full = log_density(family, &scalars(v), mask, false).ok()?;
                    let propto = log_density(family, &scalars(v), mask, true).ok()?;
                    (full.value.is_finite() && propto.value.is_finite())
                        .then_some(full.value - propto.value)
                };
                let Some(d_a) = diff(&a.args) else {
                    continue;
                };
                for b in &group {
                    // Var arguments from b, the others from a.
                    let mixed: Vec<f64> = (0..a.args.len())
                        .map(|k| if mask[k] { b.args[k] } else { a.args[k] })
                        .collect();
                    if mixed == a.args {
                        continue;
                    }
                    if let Some(d_m) = diff(&mixed) {
                        assert!(
                            close(d_a, d_m, 1e-10),
                            "{family:?} mask {mask:?}: dropped {d_a} at {:?} but {d_m} at {mixed:?}",
                            a.args
                        );
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 0, "{family:?}: no propto comparison was valid");
        // With nothing var, `~` contributes nothing.
        let a = &group[0].args;
        let none = vec![false; a.len()];
        assert_eq!(
            log_density(family, &scalars(a), &none, true).unwrap().value,
            0.0
        );
    }
}

#[test]
fn propto_keeps_exactly_the_kernel() {
    // normal with only μ var: −½ z².
    let t = log_density(
        Family::Normal,
        &scalars(&[1.0, 0.5, 2.0]),
        &[false, true, false],
        true,
    )
    .unwrap();
    assert_eq!(t.value, -0.5 * 0.25f64.powi(2));
    // exponential with y var only: −β y.
    let t = log_density(
        Family::Exponential,
        &scalars(&[1.5, 2.0]),
        &[true, false],
        true,
    )
    .unwrap();
    assert_eq!(t.value, -3.0);
    // uniform with only y var: the density is flat, nothing is kept.
    let t = log_density(
        Family::Uniform,
        &scalars(&[0.5, 0.0, 4.0]),
        &[true, false, false],
        true,
    )
    .unwrap();
    assert_eq!(t.value, 0.0);
    // poisson with λ var: n log λ − λ, without log n!.
    let t = log_density(Family::Poisson, &scalars(&[3.0, 2.0]), &[false, true], true).unwrap();
    assert_eq!(t.value, 3.0 * 2.0f64.ln() - 2.0);
}

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
