//! Poisson distribution on the log scale: log p(n | α) = n α − e^α − log n!.

use super::args::requirement::NOT_NAN;
use super::args::{Arg, DistError, Term, check_each, zero_density};
use super::registry::Family;
use super::special::lgamma;
use rand::Rng;

/// Checks α not NaN (args[1..]; Stan's `poisson_log_lpmf` checks).
pub fn check_params(args: &[Arg]) -> Result<(), DistError> {
    check_each(Family::PoissonLog.sig(), args, 1, NOT_NAN, |x| !x.is_nan())
}

/// Poisson-log log mass summed over `n` broadcast elements; args = (n, α), α = log λ.
///
/// ∂/∂α = n − e^α. α = +∞ gives −∞; α = −∞ gives mass 1 at n = 0 and −∞ elsewhere (as Stan),
/// with zero partials.
/// Errors: n not a nonnegative integer, α NaN.
pub fn lpmf(args: &[Arg], is_var: &[bool], propto: bool, n: usize) -> Result<Term, DistError> {
    check_params(args)?;
    let mut term = Term::zeros(args, is_var);
    if propto && !is_var[1] {
        return Ok(term);
    }
    let (y, alpha) = (args[0], args[1]);
    let mut value = 0.0;
    for i in 0..n {
        let (k, a) = (y.at(i), alpha.at(i));
        // e^α = ∞ (α ≳ 709.8) has mass 0 at every count (nα − e^α would be ∞ − ∞)
        if a.exp() == f64::INFINITY || (a == f64::NEG_INFINITY && k > 0.0) {
            return Ok(zero_density(args, is_var));
        }
        let rate = a.exp();
        value -= rate;
        if k > 0.0 {
            value += k * a;
            if !propto {
                value -= lgamma(k + 1.0);
            }
        }
        term.add_partial(1, i, k - rate);
    }
    term.value = value;
    Ok(term)
}

/// One draw from poisson_log(α) = poisson(e^α); `params` = (α), checked. Errors: e^α ≥ 2³⁰.
pub fn rng<R: Rng + ?Sized>(params: &[f64], rng: &mut R) -> Result<f64, DistError> {
    super::poisson::draw(params[0].exp(), rng).map_err(|m| DistError {
        function: "poisson_log_rng".to_string(),
        message: format!("Exponential of the log rate parameter {m}"),
    })
}
