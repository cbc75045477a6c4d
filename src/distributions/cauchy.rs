//! Cauchy distribution: log p(y | μ, σ) = −log π − log σ − log(1 + z²), z = (y − μ)/σ.

use super::args::requirement::{FINITE, NOT_NAN, POSITIVE_FINITE};
use super::args::{Arg, DistError, Hoisted, Term, check_each, positive_finite};
use super::cdf::location_scale;
use super::registry::Family;
use rand::Rng;
use rand_distr::Distribution;

const LOG_PI: f64 = 1.144_729_885_849_400_2;

/// Checks μ finite and σ > 0 finite (args[1..]; Stan's `cauchy_lpdf` checks).
pub fn check_params(args: &[Arg]) -> Result<(), DistError> {
    let sig = Family::Cauchy.sig();
    check_each(sig, args, 1, FINITE, f64::is_finite)?;
    check_each(sig, args, 2, POSITIVE_FINITE, positive_finite)
}

/// Cauchy log density summed over `n` broadcast elements; args = (y, μ, σ).
///
/// With w = 2z / (σ(1 + z²)): ∂/∂y = −w, ∂/∂μ = w, ∂/∂σ = −1/σ + w z.
/// Errors: y NaN, μ not finite, σ not positive finite.
pub fn lpdf(args: &[Arg], is_var: &[bool], propto: bool, n: usize) -> Result<Term, DistError> {
    check_params(args)?;
    let mut term = Term::zeros(args, is_var);
    if propto && !is_var.iter().any(|&v| v) {
        return Ok(term);
    }
    let (y, mu, sigma) = (args[0], args[1], args[2]);
    let include_log_sigma = !propto || is_var[2];
    let inv_sigma = Hoisted::new(sigma, f64::recip);
    let log_sigma = Hoisted::new(sigma, f64::ln);
    let mut value = 0.0;
    for i in 0..n {
        let inv_s = inv_sigma.at(i);
        let z = (y.at(i) - mu.at(i)) * inv_s;
        let z2 = z * z;
        value -= z2.ln_1p();
        if include_log_sigma {
            value -= log_sigma.at(i);
        }
        let w = 2.0 * z * inv_s / (1.0 + z2);
        term.add_partial(0, i, -w);
        term.add_partial(1, i, w);
        term.add_partial(2, i, w * z - inv_s);
    }
    if !propto {
        value -= LOG_PI * n as f64;
    }
    term.value = value;
    Ok(term)
}

/// Standard Cauchy log CDF and its derivative: F(z) = ½ + atan(z)/π, computed as atan(−1/z)/π
/// for z < 0 so that the lower tail keeps its relative accuracy; F′(z) = 1/(π(1 + z²)).
fn std_lcdf(z: f64) -> (f64, f64) {
    let f = if z < 0.0 {
        (-1.0 / z).atan() * std::f64::consts::FRAC_1_PI
    } else {
        0.5 + z.atan() * std::f64::consts::FRAC_1_PI
    };
    (f.ln(), std::f64::consts::FRAC_1_PI / ((1.0 + z * z) * f))
}

/// Cauchy log CDF (or log CCDF) summed over `n` elements; args = (y, μ, σ). Errors: as [`lpdf`].
pub fn lcdf(args: &[Arg], is_var: &[bool], complement: bool, n: usize) -> Result<Term, DistError> {
    check_each(Family::Cauchy.sig(), args, 0, NOT_NAN, |x| !x.is_nan())?;
    check_params(args)?;
    Ok(location_scale(args, is_var, complement, n, std_lcdf))
}

/// One draw from cauchy(μ, σ); `params` = (μ, σ), checked.
pub fn rng<R: Rng + ?Sized>(params: &[f64], rng: &mut R) -> f64 {
    rand_distr::Cauchy::new(params[0], params[1])
        .expect("parameters were checked by check_params")
        .sample(rng)
}
