//! Poisson distribution: log p(n | λ) = n log λ − λ − log n!.

use super::args::requirement::NONNEGATIVE;
use super::args::{Arg, DistError, Hoisted, Term, check_each, nonnegative, zero_density};
use super::registry::Family;
use super::special::lgamma;
use rand::Rng;
use rand_distr::Distribution;

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
    check_params(args)?;
    let mut term = Term::zeros(args, is_var);
    if propto && !is_var[1] {
        return Ok(term);
    }
    let (y, lambda) = (args[0], args[1]);
    let log_lambda = Hoisted::new(lambda, f64::ln);
    let mut value = 0.0;
    for i in 0..n {
        let (k, l) = (y.at(i), lambda.at(i));
        if l.is_infinite() || (l == 0.0 && k > 0.0) {
            return Ok(zero_density(args, is_var));
        }
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

/// Largest rate for which a Poisson draw is attempted, 2³⁰ (Stan's `POISSON_MAX_RATE`): larger
/// rates would produce counts that no longer fit Stan's 32-bit `int`.
pub const MAX_RATE: f64 = 1_073_741_824.0;

/// One Poisson draw with rate `lambda` (0 ≤ λ < 2³⁰), as an f64 holding an exact integer.
///
/// Errors: a message "… must be less than 1073741824" for larger or infinite rates; the caller
/// names the function and argument.
pub fn draw<R: Rng + ?Sized>(lambda: f64, rng: &mut R) -> Result<f64, String> {
    if lambda.is_nan() || lambda >= MAX_RATE {
        return Err(format!("is {lambda}, but must be less than {MAX_RATE}"));
    }
    if lambda == 0.0 {
        return Ok(0.0);
    }
    Ok(rand_distr::Poisson::new(lambda)
        .expect("0 < λ < 2^30 is within rand_distr's limits")
        .sample(rng))
}

/// One draw from poisson(λ); `params` = (λ), checked. Errors: λ ≥ 2³⁰.
pub fn rng<R: Rng + ?Sized>(params: &[f64], rng: &mut R) -> Result<f64, DistError> {
    draw(params[0], rng).map_err(|m| DistError {
        function: "poisson_rng".to_string(),
        message: format!("Rate parameter {m}"),
    })
}
