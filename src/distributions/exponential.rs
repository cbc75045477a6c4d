//! Exponential distribution with rate β: log p(y | β) = log β − β y, y ≥ 0.

use super::args::requirement::{NONNEGATIVE, POSITIVE_FINITE};
use super::args::{Arg, DistError, Hoisted, Term, check_each, nonnegative, positive_finite};
use super::registry::Family;

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
    check_each(Family::Exponential.sig(), args, 0, NONNEGATIVE, nonnegative)?;
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
