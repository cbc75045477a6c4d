//! Exponential distribution with rate β: log p(y | β) = log β − β y, y ≥ 0.

use super::args::requirement::{NONNEGATIVE, POSITIVE_FINITE};
use super::args::{Arg, DistError, Hoisted, Term, check_each, nonnegative, positive_finite};
use super::registry::Family;
use super::special::log1m_exp;
use rand::Rng;
use rand_distr::Distribution;

/// Checks β > 0 finite (args[1..]; Stan's `exponential_lpdf` checks).
pub fn check_params(args: &[Arg]) -> Result<(), DistError> {
    check_each(
        Family::Exponential.sig(),
        args,
        1,
        POSITIVE_FINITE,
        positive_finite,
    )
}

/// Exponential log density summed over `n` broadcast elements; args = (y, β) with β the rate
/// (inverse scale). ∂/∂y = −β, ∂/∂β = 1/β − y.
/// Errors: y negative or NaN ("must be nonnegative", as Stan), β not positive finite.
pub fn lpdf(args: &[Arg], is_var: &[bool], propto: bool, n: usize) -> Result<Term, DistError> {
    check_params(args)?;
    let mut term = Term::zeros(args, is_var);
    if propto && !is_var.iter().any(|&v| v) {
        return Ok(term);
    }
    let (y, beta) = (args[0], args[1]);
    let include_log_beta = !propto || is_var[1];
    let log_beta = Hoisted::new(beta, f64::ln);
    let mut value = 0.0;
    for i in 0..n {
        let b = beta.at(i);
        let yi = y.at(i);
        value -= b * yi;
        if include_log_beta {
            value += log_beta.at(i);
        }
        term.add_partial(0, i, -b);
        term.add_partial(1, i, 1.0 / b - yi);
    }
    term.value = value;
    Ok(term)
}

/// Exponential log CDF (or log CCDF) summed over `n` elements; args = (y, β).
///
/// log CCDF = −βy (∂/∂y = −β, ∂/∂β = −y); log CDF = log(1 − e^{−βy}) via `log1m_exp`, with
/// ∂/∂y = β/expm1(βy), ∂/∂β = y/expm1(βy). At y = 0 the log CDF is −∞ with zero partials.
/// Errors: as [`lpdf`].
pub fn lcdf(args: &[Arg], is_var: &[bool], complement: bool, n: usize) -> Result<Term, DistError> {
    check_each(Family::Exponential.sig(), args, 0, NONNEGATIVE, nonnegative)?;
    check_params(args)?;
    let (y, beta) = (args[0], args[1]);
    let mut term = Term::zeros(args, is_var);
    let mut value = 0.0;
    for i in 0..n {
        let (yi, b) = (y.at(i), beta.at(i));
        if complement {
            value -= b * yi;
            term.add_partial(0, i, -b);
            term.add_partial(1, i, -yi);
        } else if yi == 0.0 {
            value = f64::NEG_INFINITY;
        } else {
            let by = b * yi;
            value += log1m_exp(-by);
            let inv = 1.0 / by.exp_m1();
            term.add_partial(0, i, b * inv);
            term.add_partial(1, i, yi * inv);
        }
    }
    term.value = value;
    Ok(term)
}

/// One draw from exponential(β) with rate β; `params` = (β), checked.
pub fn rng<R: Rng + ?Sized>(params: &[f64], rng: &mut R) -> f64 {
    rand_distr::Exp::new(params[0])
        .expect("parameters were checked by check_params")
        .sample(rng)
}
