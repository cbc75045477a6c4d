//! Lognormal distribution: log p(y | μ, σ) = −½ log(2π) − log σ − log y − ½((log y − μ)/σ)².

use super::args::requirement::{FINITE, NONNEGATIVE, POSITIVE_FINITE};
use super::args::{Arg, DistError, Hoisted, Term, check_each, nonnegative, positive_finite};
use super::registry::Family;
use super::special::HALF_LOG_TWO_PI;

/// Checks μ finite and σ > 0 finite (args[1..]; Stan's `lognormal_lpdf` checks).
pub fn check_params(args: &[Arg]) -> Result<(), DistError> {
    let sig = Family::Lognormal.sig();
    check_each(sig, args, 1, FINITE, f64::is_finite)?;
    check_each(sig, args, 2, POSITIVE_FINITE, positive_finite)
}

/// Lognormal log density summed over `n` broadcast elements; args = (y, μ, σ).
///
/// With z = (log y − μ)/σ: ∂/∂y = −(1 + z/σ)/y, ∂/∂μ = z/σ, ∂/∂σ = (z² − 1)/σ. At y = 0 the
/// density is 0: the value is −∞ with zero partials (Stan returns LOG_ZERO).
/// Errors: y negative or NaN, μ not finite, σ not positive finite.
pub fn lpdf(args: &[Arg], is_var: &[bool], propto: bool, n: usize) -> Result<Term, DistError> {
    let sig = Family::Lognormal.sig();
    check_each(sig, args, 0, NONNEGATIVE, nonnegative)?;
    check_params(args)?;
    let mut term = Term::zeros(args, is_var);
    if propto && !is_var.iter().any(|&v| v) {
        return Ok(term);
    }
    let (y, mu, sigma) = (args[0], args[1], args[2]);
    if (0..y.len()).any(|i| y.at(i) == 0.0) {
        term.value = f64::NEG_INFINITY;
        return Ok(term);
    }
    let include_log_sigma = !propto || is_var[2];
    let include_log_y = !propto || is_var[0];
    let log_sigma = Hoisted::new(sigma, f64::ln);
    let log_y = Hoisted::new(y, f64::ln);
    let mut value = 0.0;
    for i in 0..n {
        let inv_s = 1.0 / sigma.at(i);
        let ly = log_y.at(i);
        let z = (ly - mu.at(i)) * inv_s;
        value -= 0.5 * z * z;
        if include_log_sigma {
            value -= log_sigma.at(i);
        }
        if include_log_y {
            value -= ly;
        }
        if is_var[0] {
            term.add_partial(0, i, -(1.0 + z * inv_s) / y.at(i));
        }
        term.add_partial(1, i, z * inv_s);
        term.add_partial(2, i, (z * z - 1.0) * inv_s);
    }
    if !propto {
        value -= HALF_LOG_TWO_PI * n as f64;
    }
    term.value = value;
    Ok(term)
}
