//! Lognormal distribution: log p(y | μ, σ) = −½ log(2π) − log σ − log y − ½((log y − μ)/σ)².

use super::args::requirement::{FINITE, NONNEGATIVE, POSITIVE_FINITE};
use super::args::{
    Arg, DistError, Hoisted, Term, check_each, nonnegative, positive_finite, zero_density,
};
use super::registry::Family;
use super::special::{HALF_LOG_TWO_PI, std_normal_lcdf, std_normal_lcdf_deriv};
use rand::Rng;
use rand_distr::Distribution;

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
    check_params(args)?;
    let mut term = Term::zeros(args, is_var);
    if propto && !is_var.iter().any(|&v| v) {
        return Ok(term);
    }
    let (y, mu, sigma) = (args[0], args[1], args[2]);
    let include_log_sigma = !propto || is_var[2];
    let include_log_y = !propto || is_var[0];
    let inv_sigma = Hoisted::new(sigma, f64::recip);
    let log_sigma = Hoisted::new(sigma, f64::ln);
    let log_y = Hoisted::new(y, f64::ln);
    let mut value = 0.0;
    for i in 0..n {
        if y.at(i) == 0.0 {
            return Ok(zero_density(args, is_var));
        }
        let inv_s = inv_sigma.at(i);
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

/// Lognormal log CDF (or log CCDF) summed over `n` elements; args = (y, μ, σ).
///
/// log Φ(z) with z = (log y − μ)/σ (complement log Φ(−z)); with g = d/dz: ∂/∂y = g/(σy),
/// ∂/∂μ = −g/σ, ∂/∂σ = −g z/σ. y = 0 gives log CDF −∞ and log CCDF 0, with zero partials.
/// Errors: as [`lpdf`].
pub fn lcdf(args: &[Arg], is_var: &[bool], complement: bool, n: usize) -> Result<Term, DistError> {
    check_each(Family::Lognormal.sig(), args, 0, NONNEGATIVE, nonnegative)?;
    check_params(args)?;
    let (y, mu, sigma) = (args[0], args[1], args[2]);
    let mut term = Term::zeros(args, is_var);
    let mut value = 0.0;
    for i in 0..n {
        let yi = y.at(i);
        if yi == 0.0 {
            if !complement {
                value = f64::NEG_INFINITY;
            }
            continue;
        }
        let inv_s = 1.0 / sigma.at(i);
        let z = (yi.ln() - mu.at(i)) * inv_s;
        let (v, g) = if complement {
            (std_normal_lcdf(-z), -std_normal_lcdf_deriv(-z))
        } else {
            (std_normal_lcdf(z), std_normal_lcdf_deriv(z))
        };
        value += v;
        if v.is_finite() && z.is_finite() {
            term.add_partial(0, i, g * inv_s / yi);
            term.add_partial(1, i, -g * inv_s);
            term.add_partial(2, i, -g * z * inv_s);
        }
    }
    term.value = value;
    Ok(term)
}

/// One draw from lognormal(μ, σ); `params` = (μ, σ), checked.
pub fn rng<R: Rng + ?Sized>(params: &[f64], rng: &mut R) -> f64 {
    rand_distr::LogNormal::new(params[0], params[1])
        .expect("parameters were checked by check_params")
        .sample(rng)
}
