//! Gumbel (type-I extreme value) distribution (Stan Functions Reference, "Gumbel
//! distribution"): log p(y | μ, β) = −log β − z − e^{−z}, z = (y − μ)/β; F(y) = exp(−e^{−z}).

use super::args::requirement::{FINITE, NOT_NAN, POSITIVE_FINITE};
use super::args::{Arg, DistError, Hoisted, Term, check_each, positive_finite};
use super::registry::Family;
use rand::Rng;
use rand_distr::Distribution;

/// Checks μ finite and β > 0 finite (args[1..]; Stan's `gumbel_lpdf` checks).
pub fn check_params(args: &[Arg]) -> Result<(), DistError> {
    let sig = Family::Gumbel.sig();
    check_each(sig, args, 1, FINITE, f64::is_finite)?;
    check_each(sig, args, 2, POSITIVE_FINITE, positive_finite)
}

/// Gumbel log density summed over `n` broadcast elements; args = (y, μ, β).
///
/// With g = ∂/∂z = e^{−z} − 1: ∂/∂y = g/β, ∂/∂μ = −g/β, ∂/∂β = −(1 + g z)/β.
/// Errors: y NaN, μ not finite, β not positive finite.
pub fn lpdf(args: &[Arg], is_var: &[bool], propto: bool, n: usize) -> Result<Term, DistError> {
    check_params(args)?;
    let mut term = Term::zeros(args, is_var);
    if propto && !is_var.iter().any(|&v| v) {
        return Ok(term);
    }
    let (y, mu, beta) = (args[0], args[1], args[2]);
    let include_log_beta = !propto || is_var[2];
    let inv_beta = Hoisted::new(beta, f64::recip);
    let log_beta = Hoisted::new(beta, f64::ln);
    let mut value = 0.0;
    for i in 0..n {
        let inv_b = inv_beta.at(i);
        let z = (y.at(i) - mu.at(i)) * inv_b;
        if z.is_infinite() {
            // y = ±∞, or y − μ overflows: the density is 0 in either tail.
            value = f64::NEG_INFINITY;
            continue;
        }
        let e = (-z).exp();
        value -= z + e;
        if include_log_beta {
            value -= log_beta.at(i);
        }
        let g = e - 1.0;
        term.add_partial(0, i, g * inv_b);
        term.add_partial(1, i, -g * inv_b);
        term.add_partial(2, i, -(1.0 + g * z) * inv_b);
    }
    term.value = value;
    Ok(term)
}

/// Gumbel log CDF (or log CCDF) summed over `n` elements; args = (y, μ, β). With t = e^{−z}:
/// log F = −t, d/dz = t; log(1 − F) = log(−expm1(−t)), d/dz = −t / expm1(t). Then
/// ∂/∂y = h/β, ∂/∂μ = −h/β, ∂/∂β = −h z/β for h the z-derivative. Errors: as [`lpdf`].
pub fn lcdf(args: &[Arg], is_var: &[bool], complement: bool, n: usize) -> Result<Term, DistError> {
    check_each(Family::Gumbel.sig(), args, 0, NOT_NAN, |x| !x.is_nan())?;
    check_params(args)?;
    let mut term = Term::zeros(args, is_var);
    let (y, mu, beta) = (args[0], args[1], args[2]);
    let mut value = 0.0;
    for i in 0..n {
        let b = beta.at(i);
        let z = (y.at(i) - mu.at(i)) / b;
        let t = (-z).exp();
        let (v, h) = if !complement {
            (-t, t)
        } else if t == 0.0 {
            (f64::NEG_INFINITY, 0.0)
        } else if t.is_infinite() {
            (0.0, 0.0)
        } else {
            ((-(-t).exp_m1()).ln(), -t / t.exp_m1())
        };
        value += v;
        let (h, z) = if h.is_finite() { (h, z) } else { (0.0, 0.0) };
        term.add_partial(0, i, h / b);
        term.add_partial(1, i, -h / b);
        term.add_partial(2, i, if z.is_finite() { -h * z / b } else { 0.0 });
    }
    term.value = value;
    Ok(term)
}

/// One draw from gumbel(μ, β) by inversion: y = μ − β log(−log p), p uniform on (0, 1).
/// `params` = (μ, β), checked.
pub fn rng<R: Rng + ?Sized>(params: &[f64], rng: &mut R) -> f64 {
    let p: f64 = rand_distr::Open01.sample(rng);
    params[0] - params[1] * (-p.ln()).ln()
}
