//! Poisson distribution: log p(n | λ) = n log λ − λ − log n!.

use super::args::requirement::{COUNT, NONNEGATIVE};
use super::args::{Arg, DistError, Hoisted, Term, check_each, count, nonnegative};
use super::registry::Family;
use super::special::lgamma;

/// Checks λ ≥ 0 (args[1..]; Stan's `poisson_lpmf` checks; λ = ∞ gives −∞, not an error).
pub fn check_params(args: &[Arg]) -> Result<(), DistError> {
    check_each(Family::Poisson.sig(), args, 1, NONNEGATIVE, nonnegative)
}

/// Poisson log mass summed over `n` broadcast elements; args = (n, λ).
///
/// ∂/∂λ = n/λ − 1. λ = 0 gives mass 1 at n = 0 (value 0, partial −1) and −∞ elsewhere; λ = ∞
/// gives −∞ (as Stan's LOG_ZERO), with zero partials.
/// Errors: n not a nonnegative integer, λ negative or NaN.
pub fn lpmf(args: &[Arg], is_var: &[bool], propto: bool, n: usize) -> Result<Term, DistError> {
    check_each(Family::Poisson.sig(), args, 0, COUNT, count)?;
    check_params(args)?;
    let mut term = Term::zeros(args, is_var);
    if propto && !is_var[1] {
        return Ok(term);
    }
    let (y, lambda) = (args[0], args[1]);
    if (0..n).any(|i| {
        let l = lambda.at(i);
        l.is_infinite() || (l == 0.0 && y.at(i) > 0.0)
    }) {
        term.value = f64::NEG_INFINITY;
        return Ok(term);
    }
    let log_lambda = Hoisted::new(lambda, f64::ln);
    let mut value = 0.0;
    for i in 0..n {
        let (k, l) = (y.at(i), lambda.at(i));
        value -= l;
        if k > 0.0 {
            value += k * log_lambda.at(i);
            if !propto {
                value -= lgamma(k + 1.0);
            }
            term.add_partial(1, i, k / l - 1.0);
        } else {
            term.add_partial(1, i, -1.0);
        }
    }
    term.value = value;
    Ok(term)
}
