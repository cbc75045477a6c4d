//! Gamma distribution with shape α and rate β: log p(y | α, β) = α log β − log Γ(α)
//! + (α − 1) log y − β y.

use super::args::requirement::POSITIVE_FINITE;
use super::args::{Arg, DistError, Hoisted, Term, check_each, positive_finite};
use super::registry::Family;
use super::special::{digamma, lgamma};
use rand::Rng;
use rand_distr::Distribution;

/// Checks α, β > 0 finite (args[1..]; Stan's `gamma_lpdf` checks).
pub fn check_params(args: &[Arg]) -> Result<(), DistError> {
    let sig = Family::Gamma.sig();
    check_each(sig, args, 1, POSITIVE_FINITE, positive_finite)?;
    check_each(sig, args, 2, POSITIVE_FINITE, positive_finite)
}

/// Gamma log density summed over `n` broadcast elements; args = (y, α, β), β the rate.
///
/// ∂/∂y = (α − 1)/y − β, ∂/∂α = log β − ψ(α) + log y, ∂/∂β = α/β − y. At y = 0 the term
/// (α − 1) log y is taken as 0 when α = 1 (the density is then β e^{−βy}); at y = +∞ the log
/// density is −∞ (zero partials).
/// Errors: y negative or NaN, α or β not positive finite.
pub fn lpdf(args: &[Arg], is_var: &[bool], propto: bool, n: usize) -> Result<Term, DistError> {
    check_params(args)?;
    let mut term = Term::zeros(args, is_var);
    if propto && !is_var.iter().any(|&v| v) {
        return Ok(term);
    }
    let (y, alpha, beta) = (args[0], args[1], args[2]);
    let include_lgamma = !propto || is_var[1];
    let include_alpha_log_beta = !propto || is_var[1] || is_var[2];
    let include_log_y = !propto || is_var[0] || is_var[1];
    let include_beta_y = !propto || is_var[0] || is_var[2];
    let lgamma_alpha = Hoisted::new(alpha, lgamma);
    let digamma_alpha = Hoisted::new(alpha, |a| if is_var[1] { digamma(a) } else { 0.0 });
    let log_beta = Hoisted::new(beta, f64::ln);
    let log_y = Hoisted::new(y, f64::ln);
    let mut value = 0.0;
    for i in 0..n {
        let (yi, a, b) = (y.at(i), alpha.at(i), beta.at(i));
        if yi == f64::INFINITY {
            // the density vanishes at +∞ ((α − 1) log y − βy would be ∞ − ∞)
            value = f64::NEG_INFINITY;
            continue;
        }
        let am1 = a - 1.0;
        let ly = if include_log_y || is_var[1] {
            log_y.at(i)
        } else {
            0.0
        };
        let lb = log_beta.at(i);
        if include_lgamma {
            value -= lgamma_alpha.at(i);
        }
        if include_alpha_log_beta {
            value += a * lb;
        }
        if include_log_y && am1 != 0.0 {
            value += am1 * ly;
        }
        if include_beta_y {
            value -= b * yi;
        }
        if is_var[0] {
            let d = if am1 != 0.0 { am1 / yi } else { 0.0 };
            term.add_partial(0, i, d - b);
        }
        if is_var[1] {
            term.add_partial(1, i, lb - digamma_alpha.at(i) + ly);
        }
        term.add_partial(2, i, a / b - yi);
    }
    term.value = value;
    Ok(term)
}

/// One draw from gamma(α, β) with rate β (rand_distr takes the scale 1/β); `params` = (α, β),
/// checked.
pub fn rng<R: Rng + ?Sized>(params: &[f64], rng: &mut R) -> f64 {
    rand_distr::Gamma::new(params[0], 1.0 / params[1])
        .expect("parameters were checked by check_params")
        .sample(rng)
}
