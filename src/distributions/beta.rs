//! Beta distribution: log p(y | a, b) = log Γ(a + b) − log Γ(a) − log Γ(b) + (a − 1) log y
//! + (b − 1) log(1 − y).

use super::args::requirement::POSITIVE_FINITE;
use super::args::{Arg, DistError, Term, check_each, positive_finite};
use super::registry::Family;
use super::special::{digamma, lgamma};
use rand::Rng;
use rand_distr::Distribution;

/// Checks a, b > 0 finite (args[1..]; Stan's `beta_lpdf` checks).
pub fn check_params(args: &[Arg]) -> Result<(), DistError> {
    let sig = Family::Beta.sig();
    check_each(sig, args, 1, POSITIVE_FINITE, positive_finite)?;
    check_each(sig, args, 2, POSITIVE_FINITE, positive_finite)
}

/// (c − 1)·log x with the convention 0·log 0 = 0 (the density at an end point when c = 1).
#[inline]
fn xlogy(cm1: f64, log_x: f64) -> f64 {
    if cm1 == 0.0 { 0.0 } else { cm1 * log_x }
}

/// Beta log density summed over `n` broadcast elements; args = (y, a, b).
///
/// ∂/∂y = (a − 1)/y − (b − 1)/(1 − y), ∂/∂a = ψ(a + b) − ψ(a) + log y,
/// ∂/∂b = ψ(a + b) − ψ(b) + log(1 − y).
/// Errors: y outside [0, 1] or NaN, a or b not positive finite.
pub fn lpdf(args: &[Arg], is_var: &[bool], propto: bool, n: usize) -> Result<Term, DistError> {
    check_params(args)?;
    let mut term = Term::zeros(args, is_var);
    if propto && !is_var.iter().any(|&v| v) {
        return Ok(term);
    }
    let (y, a, b) = (args[0], args[1], args[2]);
    let include_lbeta = !propto || is_var[1] || is_var[2];
    let include_log_y = !propto || is_var[0] || is_var[1];
    let include_log1m_y = !propto || is_var[0] || is_var[2];
    // Hoist the normalising constant and digammas when both shapes are scalars.
    let scalar_shapes = !a.is_vector() && !b.is_vector();
    let norm = |ai: f64, bi: f64| lgamma(ai + bi) - lgamma(ai) - lgamma(bi);
    let digammas = |ai: f64, bi: f64| {
        let d_ab = if is_var[1] || is_var[2] {
            digamma(ai + bi)
        } else {
            0.0
        };
        let d_a = if is_var[1] { digamma(ai) } else { 0.0 };
        let d_b = if is_var[2] { digamma(bi) } else { 0.0 };
        (d_ab - d_a, d_ab - d_b)
    };
    let (norm0, dig0) = if scalar_shapes {
        (norm(a.at(0), b.at(0)), digammas(a.at(0), b.at(0)))
    } else {
        (0.0, (0.0, 0.0))
    };
    let mut value = 0.0;
    for i in 0..n {
        let (yi, ai, bi) = (y.at(i), a.at(i), b.at(i));
        let ly = yi.ln();
        let l1my = (-yi).ln_1p();
        if include_lbeta {
            value += if scalar_shapes { norm0 } else { norm(ai, bi) };
        }
        if include_log_y {
            value += xlogy(ai - 1.0, ly);
        }
        if include_log1m_y {
            value += xlogy(bi - 1.0, l1my);
        }
        if is_var[0] {
            let up = if ai == 1.0 { 0.0 } else { (ai - 1.0) / yi };
            let down = if bi == 1.0 {
                0.0
            } else {
                (bi - 1.0) / (1.0 - yi)
            };
            term.add_partial(0, i, up - down);
        }
        if is_var[1] || is_var[2] {
            let (da, db) = if scalar_shapes {
                dig0
            } else {
                digammas(ai, bi)
            };
            term.add_partial(1, i, da + ly);
            term.add_partial(2, i, db + l1my);
        }
    }
    term.value = value;
    Ok(term)
}

/// One draw from beta(a, b); `params` = (a, b), checked.
pub fn rng<R: Rng + ?Sized>(params: &[f64], rng: &mut R) -> f64 {
    rand_distr::Beta::new(params[0], params[1])
        .expect("parameters were checked by check_params")
        .sample(rng)
}
