//! Double exponential (Laplace) distribution: log p(y | μ, σ) = −log 2 − log σ − |y − μ|/σ.

use super::args::requirement::{FINITE, NOT_NAN, POSITIVE_FINITE};
use super::args::{Arg, DistError, Hoisted, Term, check_each, positive_finite};
use super::cdf::location_scale;
use super::registry::Family;
use rand::Rng;
use rand_distr::Distribution;

/// Checks μ finite and σ > 0 finite (args[1..]; Stan's `double_exponential_lpdf` checks).
pub fn check_params(args: &[Arg]) -> Result<(), DistError> {
    let sig = Family::DoubleExponential.sig();
    check_each(sig, args, 1, FINITE, f64::is_finite)?;
    check_each(sig, args, 2, POSITIVE_FINITE, positive_finite)
}

/// Double-exponential log density summed over `n` broadcast elements; args = (y, μ, σ).
///
/// ∂/∂y = −sign(y − μ)/σ, ∂/∂μ = sign(y − μ)/σ (sign(0) = 0, as Stan), ∂/∂σ = −1/σ + |y − μ|/σ².
/// Errors: y or μ not finite, σ not positive finite.
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
        let d = y.at(i) - mu.at(i);
        let abs_z = d.abs() * inv_s;
        value -= abs_z;
        if include_log_sigma {
            value -= log_sigma.at(i);
        }
        let sign = if d > 0.0 {
            1.0
        } else if d < 0.0 {
            -1.0
        } else {
            0.0
        };
        term.add_partial(0, i, -sign * inv_s);
        term.add_partial(1, i, sign * inv_s);
        term.add_partial(2, i, (abs_z - 1.0) * inv_s);
    }
    if !propto {
        value -= std::f64::consts::LN_2 * n as f64;
    }
    term.value = value;
    Ok(term)
}

/// Standard Laplace log CDF and its derivative: F(z) = ½eᶻ for z < 0, 1 − ½e^{−z} otherwise.
fn std_lcdf(z: f64) -> (f64, f64) {
    if z < 0.0 {
        (z - std::f64::consts::LN_2, 1.0)
    } else {
        let t = 0.5 * (-z).exp();
        ((-t).ln_1p(), t / (1.0 - t))
    }
}

/// Double-exponential log CDF (or log CCDF) summed over `n` elements; args = (y, μ, σ).
/// Errors: as [`lpdf`].
pub fn lcdf(args: &[Arg], is_var: &[bool], complement: bool, n: usize) -> Result<Term, DistError> {
    check_each(Family::DoubleExponential.sig(), args, 0, NOT_NAN, |x| {
        !x.is_nan()
    })?;
    check_params(args)?;
    Ok(location_scale(args, is_var, complement, n, std_lcdf))
}

/// One draw from double_exponential(μ, σ) by inversion: with u uniform on (−½, ½),
/// y = μ − σ·sign(u)·log(1 − 2|u|). `params` = (μ, σ), checked.
pub fn rng<R: Rng + ?Sized>(params: &[f64], rng: &mut R) -> f64 {
    let p: f64 = rand_distr::Open01.sample(rng);
    let u = p - 0.5;
    params[0] - params[1] * u.signum() * (-2.0 * u.abs()).ln_1p()
}
