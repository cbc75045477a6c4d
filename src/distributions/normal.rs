//! Normal distribution: log p(y | μ, σ) = −½ log(2π) − log σ − ½((y − μ)/σ)².

use super::args::requirement::{FINITE, NOT_NAN, POSITIVE_FINITE};
use super::args::{Arg, DistError, Hoisted, Term, check_each, positive_finite};
use super::registry::Family;
use rand::Rng;
use rand_distr::Distribution;

use super::cdf::location_scale;
use super::special::{HALF_LOG_TWO_PI, std_normal_lcdf, std_normal_lcdf_deriv};

/// Checks μ finite and σ > 0 finite (args[1..]; Stan's `normal_lpdf` checks).
pub fn check_params(args: &[Arg]) -> Result<(), DistError> {
    let sig = Family::Normal.sig();
    check_each(sig, args, 1, FINITE, f64::is_finite)?;
    check_each(sig, args, 2, POSITIVE_FINITE, positive_finite)
}

/// Normal log density summed over `n` broadcast elements; args = (y, mu, sigma).
/// Partials: ∂/∂y = −z/σ, ∂/∂μ = z/σ, ∂/∂σ = (z² − 1)/σ with z = (y − μ)/σ.
/// Errors: y NaN, μ not finite, σ not positive finite.
pub fn lpdf(args: &[Arg], is_var: &[bool], propto: bool, n: usize) -> Result<Term, DistError> {
    check_params(args)?;
    let (y, mu, sigma) = (args[0], args[1], args[2]);
    let mut term = Term::zeros(args, is_var);
    if propto && !is_var.iter().any(|&v| v) {
        return Ok(term);
    }
    let inv_sigma = Hoisted::new(sigma, f64::recip);
    let log_sigma = Hoisted::new(sigma, f64::ln);
    let include_const = !propto;
    let include_log_sigma = !propto || is_var[2];
    let mut value = 0.0;
    for i in 0..n {
        let inv_s = inv_sigma.at(i);
        let z = (y.at(i) - mu.at(i)) * inv_s;
        value -= 0.5 * z * z;
        if include_log_sigma {
            value -= log_sigma.at(i);
        }
        term.add_partial(0, i, -z * inv_s);
        term.add_partial(1, i, z * inv_s);
        term.add_partial(2, i, (z * z - 1.0) * inv_s);
    }
    if include_const {
        value -= HALF_LOG_TWO_PI * n as f64;
    }
    term.value = value;
    Ok(term)
}

/// Normal log CDF (or log CCDF) summed over `n` elements; args = (y, μ, σ).
///
/// log Φ(z) via [`std_normal_lcdf`] (libm erfc, asymptotic series in the far tail), so
/// `normal_lcdf(-40 | 0, 1)` is −804.608… rather than −∞; the complement is log Φ(−z).
/// Errors: as [`lpdf`].
pub fn lcdf(args: &[Arg], is_var: &[bool], complement: bool, n: usize) -> Result<Term, DistError> {
    check_each(Family::Normal.sig(), args, 0, NOT_NAN, |x| !x.is_nan())?;
    check_params(args)?;
    Ok(location_scale(args, is_var, complement, n, |z| {
        (std_normal_lcdf(z), std_normal_lcdf_deriv(z))
    }))
}

/// One draw from normal(μ, σ); `params` = (μ, σ), already checked by [`check_params`].
pub fn rng<R: Rng + ?Sized>(params: &[f64], rng: &mut R) -> f64 {
    rand_distr::Normal::new(params[0], params[1])
        .expect("parameters were checked by check_params")
        .sample(rng)
}
