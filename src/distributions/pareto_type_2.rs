//! Pareto type 2 (Lomax) distribution (Stan Functions Reference, "Pareto type 2
//! distribution"): for y ≥ μ, p(y | μ, λ, α) = (α/λ) (1 + (y − μ)/λ)^{−(α+1)};
//! F(y) = 1 − (1 + (y − μ)/λ)^{−α}.

use super::args::requirement::{FINITE, NOT_NAN, POSITIVE_FINITE};
use super::args::{Arg, DistError, Term, check_each, function_name, positive_finite};
use super::registry::Family;
use super::special::log1m_exp;
use rand::Rng;
use rand_distr::Distribution;

/// Checks μ finite, λ and α > 0 finite (args[1..]; Stan's `pareto_type_2_lpdf` checks).
pub fn check_params(args: &[Arg]) -> Result<(), DistError> {
    let sig = Family::ParetoType2.sig();
    check_each(sig, args, 1, FINITE, f64::is_finite)?;
    check_each(sig, args, 2, POSITIVE_FINITE, positive_finite)?;
    check_each(sig, args, 3, POSITIVE_FINITE, positive_finite)
}

/// Stan's `check_greater_or_equal(y, μ)`.
fn check_above_location(args: &[Arg], n: usize) -> Result<(), DistError> {
    let sig = Family::ParetoType2.sig();
    check_each(sig, args, 0, NOT_NAN, |x| !x.is_nan())?;
    for i in 0..n {
        let (y, mu) = (args[0].at(i), args[1].at(i));
        if y < mu {
            let which = if args[0].is_vector() {
                format!("Random variable[{}]", i + 1)
            } else {
                "Random variable".to_string()
            };
            return Err(DistError {
                function: function_name(sig),
                message: format!(
                    "{which} is {y}, but must be greater than or equal to the location {mu}"
                ),
            });
        }
    }
    Ok(())
}

/// Pareto type 2 log density summed over `n` broadcast elements; args = (y, μ, λ, α).
///
/// With d = λ + y − μ and L = log1p((y − μ)/λ): log p = log α − log λ − (α + 1)L;
/// ∂/∂y = −(α + 1)/d, ∂/∂μ = (α + 1)/d, ∂/∂λ = −1/λ + (α + 1)(y − μ)/(λ d), ∂/∂α = 1/α − L.
/// Under `~`, log α is kept only when α is a parameter and log λ only when λ is.
/// Errors: y NaN or below μ, μ not finite, λ or α not positive finite.
pub fn lpdf(args: &[Arg], is_var: &[bool], propto: bool, n: usize) -> Result<Term, DistError> {
    check_params(args)?;
    check_above_location(args, n)?;
    let mut term = Term::zeros(args, is_var);
    if propto && !is_var.iter().any(|&v| v) {
        return Ok(term);
    }
    let (y, mu, lambda, alpha) = (args[0], args[1], args[2], args[3]);
    let mut value = 0.0;
    for i in 0..n {
        let (yi, m, l, a) = (y.at(i), mu.at(i), lambda.at(i), alpha.at(i));
        if yi.is_infinite() {
            value = f64::NEG_INFINITY;
            continue;
        }
        let r = yi - m;
        let big_l = (r / l).ln_1p();
        value -= (a + 1.0) * big_l;
        if !propto || is_var[3] {
            value += a.ln();
        }
        if !propto || is_var[2] {
            value -= l.ln();
        }
        let d = l + r;
        term.add_partial(0, i, -(a + 1.0) / d);
        term.add_partial(1, i, (a + 1.0) / d);
        // −1/λ + (α + 1) r / (λ d), written so that λ d cannot underflow to 0 at tiny λ
        term.add_partial(2, i, ((a + 1.0) * (r / d) - 1.0) / l);
        term.add_partial(3, i, 1.0 / a - big_l);
    }
    term.value = value;
    Ok(term)
}

/// Pareto type 2 log CDF or log CCDF summed over `n` elements; args = (y, μ, λ, α). The log
/// CCDF is c = −αL, L = log1p((y − μ)/λ), and the log CDF log(1 − e^c), whose partials are the
/// CCDF's times −1/expm1(−c). ∂c/∂y = −α/d, ∂c/∂μ = α/d, ∂c/∂λ = α(y − μ)/(λ d), ∂c/∂α = −L,
/// d = λ + y − μ. Errors: as [`lpdf`].
pub fn lcdf(args: &[Arg], is_var: &[bool], complement: bool, n: usize) -> Result<Term, DistError> {
    check_params(args)?;
    check_above_location(args, n)?;
    let mut term = Term::zeros(args, is_var);
    let (y, mu, lambda, alpha) = (args[0], args[1], args[2], args[3]);
    let mut value = 0.0;
    for i in 0..n {
        let (yi, m, l, a) = (y.at(i), mu.at(i), lambda.at(i), alpha.at(i));
        let r = yi - m;
        let big_l = (r / l).ln_1p();
        let c = -a * big_l;
        let (v, h) = if complement {
            (c, 1.0)
        } else {
            (log1m_exp(c), -1.0 / (-c).exp_m1())
        };
        value += v;
        if v.is_finite() && r.is_finite() {
            let d = l + r;
            term.add_partial(0, i, -h * a / d);
            term.add_partial(1, i, h * a / d);
            term.add_partial(2, i, h * a * r / (l * d));
            term.add_partial(3, i, -h * big_l);
        }
    }
    term.value = value;
    Ok(term)
}

/// One draw from pareto_type_2(μ, λ, α) by inversion: y = μ + λ (p^{−1/α} − 1), p uniform
/// on (0, 1). `params` = (μ, λ, α), checked.
pub fn rng<R: Rng + ?Sized>(params: &[f64], rng: &mut R) -> f64 {
    let p: f64 = rand_distr::Open01.sample(rng);
    params[0] + params[1] * (p.powf(-1.0 / params[2]) - 1.0)
}
