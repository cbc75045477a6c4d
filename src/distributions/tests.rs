//! One table of (family, arguments, expected log density) drives the value, gradient,
//! vectorisation and propto tests (STYLE.md habit 9); further tables hold invalid arguments and
//! normalisation checks. Expected values come from statrs' independent implementations or from
//! the textbook formula written out here.

mod cdf_rng;
mod errors;

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
    // Gumbel: scipy 1.17 `scipy.stats.gumbel_r.logpdf(y, loc=mu, scale=beta)`.
    for &(y, mu, b, expected) in &[
        (0.3, -0.2, 1.5, -1.455_329_752_015_287),
        (-2.0, 1.0, 0.4, -1_799.626_123_724_189),
        (10.0, 0.0, 3.0, -4.467_619_615_348_696),
    ] {
        r.push(row(Family::Gumbel, &[y, mu, b], expected));
    }
    // The families of issue 14, against scipy 1.17.1 (tests/distributions_univariate_more.rs
    // has the calls): betabinom(N, a, b).logpmf(k), skewnorm(α, loc, scale).logpdf,
    // invweibull(α, scale=σ).logpdf, pareto(α, scale=y_min).logpdf, lomax(α, loc, scale).logpdf,
    // exponnorm(1/(σλ), loc, scale).logpdf, vonmises(κ, loc).logpdf.
    for (family, args, expected) in [
        (
            Family::BetaBinomial,
            vec![3.0, 10.0, 2.5, 4.0],
            -1.841_916_511_408_370_6,
        ),
        (
            Family::BetaBinomial,
            vec![0.0, 7.0, 0.7, 1.3],
            -1.360_661_222_060_793_9,
        ),
        (
            Family::SkewNormal,
            vec![0.3, -0.2, 1.5, 2.0],
            -0.977_823_006_860_756_1,
        ),
        (
            Family::SkewNormal,
            vec![-1.7, 0.4, 0.8, -3.5],
            -3.447_960_301_330_517,
        ),
        (
            Family::Frechet,
            vec![1.3, 2.5, 0.9],
            -0.664_178_819_246_069_1,
        ),
        (Family::Frechet, vec![7.0, 4.0, 2.0], -5.577_331_551_962_709),
        (Family::Pareto, vec![2.5, 1.2, 3.0], -2.019_585_968_446_647),
        (Family::Pareto, vec![40.0, 2.0, 1.5], -7.777_012_756_336_759),
        (
            Family::ParetoType2,
            vec![1.5, 0.2, 2.0, 3.0],
            -1.597_636_043_541_792,
        ),
        (
            Family::ParetoType2,
            vec![25.0, 3.0, 4.0, 0.8],
            -4.978_681_830_856_964_5,
        ),
        (
            Family::ExpModNormal,
            vec![1.0, 0.3, 0.7, 1.5],
            -0.827_126_587_261_195_5,
        ),
        (
            Family::ExpModNormal,
            vec![-2.0, 0.0, 1.0, 0.4],
            -4.840_212_398_744_827,
        ),
        (
            Family::VonMises,
            vec![0.4, -0.3, 2.0],
            -1.132_186_233_323_324_8,
        ),
        (
            Family::VonMises,
            vec![2.9, 0.1, 0.5],
            -2.370_537_955_929_155_5,
        ),
        (
            Family::BetaBinomial,
            vec![12.0, 12.0, 3.0, 0.5],
            -0.837_866_886_589_803_4,
        ),
        (
            Family::SkewNormal,
            vec![2.0, 0.0, 1.0, 0.0],
            -2.918_938_533_204_672_7,
        ),
        (
            Family::Frechet,
            vec![0.2, 1.1, 3.0],
            -14.981_688_032_145_394,
        ),
        (
            Family::Pareto,
            vec![1.0, 0.5, 0.7],
            -0.841_877_970_330_694_1,
        ),
        (
            Family::ParetoType2,
            vec![0.0, -1.0, 0.5, 1.2],
            -1.541_478_297_715_941_8,
        ),
        (
            Family::ExpModNormal,
            vec![6.0, 1.0, 0.5, 3.0],
            -12.776_387_711_331_89,
        ),
        (
            Family::VonMises,
            vec![-1.0, -1.2, 40.0],
            0.124_999_185_887_963_55,
        ),
    ] {
        r.push(row(family, &args, expected));
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
