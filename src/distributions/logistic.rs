//! Logistic distribution: log p(y | μ, σ) = −z − log σ − 2 log(1 + e^{−z}), z = (y − μ)/σ.

use super::args::requirement::{FINITE, NOT_NAN, POSITIVE_FINITE};
use super::args::{Arg, DistError, Hoisted, Term, check_each, positive_finite};
use super::cdf::location_scale;
use super::registry::Family;
use super::special::{inv_logit, log1p_exp};
use rand::Rng;
use rand_distr::Distribution;

/// Checks μ finite and σ > 0 finite (args[1..]; Stan's `logistic_lpdf` checks).
pub fn check_params(args: &[Arg]) -> Result<(), DistError> {
    let sig = Family::Logistic.sig();
    check_each(sig, args, 1, FINITE, f64::is_finite)?;
    check_each(sig, args, 2, POSITIVE_FINITE, positive_finite)
}

/// Logistic log density summed over `n` broadcast elements; args = (y, μ, σ).
///
/// The density is symmetric in z, so the value is computed as −|z| − 2 log1p(e^{−|z|}) (no
/// overflow). With g = ∂/∂z = −tanh(z/2): ∂/∂y = g/σ, ∂/∂μ = −g/σ, ∂/∂σ = −(1 + g z)/σ.
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
        let z = (y.at(i) - mu.at(i)) * inv_s;
        let abs_z = z.abs();
        let e = (-abs_z).exp();
        value -= abs_z + 2.0 * e.ln_1p();
        if include_log_sigma {
            value -= log_sigma.at(i);
        }
        // −tanh(z/2) = −sign(z)(1 − e)/(1 + e) with e = e^{−|z|}.
        let g = -z.signum() * (1.0 - e) / (1.0 + e);
        term.add_partial(0, i, g * inv_s);
        term.add_partial(1, i, -g * inv_s);
        term.add_partial(2, i, -(1.0 + g * z) * inv_s);
    }
    term.value = value;
    Ok(term)
}

/// Logistic log CDF (or log CCDF) summed over `n` elements; args = (y, μ, σ).
/// log F(z) = −log1p(e^{−z}), d/dz = σ(−z) (σ the sigmoid). Errors: as [`lpdf`].
pub fn lcdf(args: &[Arg], is_var: &[bool], complement: bool, n: usize) -> Result<Term, DistError> {
    check_each(Family::Logistic.sig(), args, 0, NOT_NAN, |x| !x.is_nan())?;
    check_params(args)?;
    Ok(location_scale(args, is_var, complement, n, |z| {
        (-log1p_exp(-z), inv_logit(-z))
    }))
}

/// One draw from logistic(μ, σ) by inversion: y = μ + σ·log(p/(1 − p)), p uniform on (0, 1).
/// `params` = (μ, σ), checked.
pub fn rng<R: Rng + ?Sized>(params: &[f64], rng: &mut R) -> f64 {
    let p: f64 = rand_distr::Open01.sample(rng);
    params[0] + params[1] * (p / (1.0 - p)).ln()
}
