//! Student-t distribution: log p(y | ν, μ, σ) = log Γ((ν+1)/2) − log Γ(ν/2) − ½ log(νπ) − log σ
//! − (ν+1)/2 · log(1 + z²/ν), z = (y − μ)/σ.

use super::args::requirement::{FINITE, POSITIVE_FINITE};
use super::args::{Arg, DistError, Hoisted, Term, check_each, positive_finite};
use super::registry::Family;
use super::special::{digamma, lgamma};
use rand::Rng;
use rand_distr::Distribution;

const HALF_LOG_PI: f64 = 0.572_364_942_924_700_1;

/// Checks ν > 0, μ finite, σ > 0 (args[1..]; Stan's `student_t_lpdf` checks).
pub fn check_params(args: &[Arg]) -> Result<(), DistError> {
    let sig = Family::StudentT.sig();
    check_each(sig, args, 1, POSITIVE_FINITE, positive_finite)?;
    check_each(sig, args, 2, FINITE, f64::is_finite)?;
    check_each(sig, args, 3, POSITIVE_FINITE, positive_finite)
}

/// Student-t log density summed over `n` broadcast elements; args = (y, ν, μ, σ).
///
/// With w = (ν+1) z / (σ (ν + z²)): ∂/∂y = −w, ∂/∂μ = w, ∂/∂σ = −1/σ + w z,
/// ∂/∂ν = ½(ψ((ν+1)/2) − ψ(ν/2)) − 1/(2ν) − ½ log(1 + z²/ν) + (ν+1) z² / (2ν(ν + z²)).
/// Errors: y NaN, ν or σ not positive finite, μ not finite.
pub fn lpdf(args: &[Arg], is_var: &[bool], propto: bool, n: usize) -> Result<Term, DistError> {
    check_params(args)?;
    let mut term = Term::zeros(args, is_var);
    if propto && !is_var.iter().any(|&v| v) {
        return Ok(term);
    }
    let (y, nu, mu, sigma) = (args[0], args[1], args[2], args[3]);
    let include_nu = !propto || is_var[1];
    let include_log_sigma = !propto || is_var[3];
    let need_w = is_var[0] || is_var[2] || is_var[3];
    let lgamma_part = Hoisted::new(nu, |v| {
        lgamma(0.5 * (v + 1.0)) - lgamma(0.5 * v) - 0.5 * v.ln()
    });
    let digamma_part = Hoisted::new(nu, |v| {
        if is_var[1] {
            0.5 * (digamma(0.5 * (v + 1.0)) - digamma(0.5 * v)) - 0.5 / v
        } else {
            0.0
        }
    });
    let inv_sigma = Hoisted::new(sigma, f64::recip);
    let log_sigma = Hoisted::new(sigma, f64::ln);
    let mut value = 0.0;
    for i in 0..n {
        let v = nu.at(i);
        let inv_s = inv_sigma.at(i);
        let z = (y.at(i) - mu.at(i)) * inv_s;
        let z2 = z * z;
        let log1p_term = (z2 / v).ln_1p();
        value -= 0.5 * (v + 1.0) * log1p_term;
        if include_nu {
            value += lgamma_part.at(i);
        }
        if include_log_sigma {
            value -= log_sigma.at(i);
        }
        if need_w {
            let w = (v + 1.0) * z * inv_s / (v + z2);
            term.add_partial(0, i, -w);
            term.add_partial(2, i, w);
            term.add_partial(3, i, w * z - inv_s);
        }
        if is_var[1] {
            // (ν+1)z²/(2ν(ν+z²)) as ½(1 + 1/ν)·z²/(ν+z²): no 0/0 when ν(ν+z²) underflows
            let d = digamma_part.at(i) - 0.5 * log1p_term + 0.5 * (1.0 + 1.0 / v) * (z2 / (v + z2));
            term.add_partial(1, i, d);
        }
    }
    if !propto {
        value -= HALF_LOG_PI * n as f64;
    }
    term.value = value;
    Ok(term)
}

/// One draw from student_t(ν, μ, σ) as μ + σ·T with T ~ t_ν; `params` = (ν, μ, σ), checked.
pub fn rng<R: Rng + ?Sized>(params: &[f64], rng: &mut R) -> f64 {
    let t = rand_distr::StudentT::new(params[0])
        .expect("parameters were checked by check_params")
        .sample(rng);
    params[1] + params[2] * t
}
