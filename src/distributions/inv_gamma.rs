//! Inverse gamma distribution with shape α and scale β: log p(y | α, β) = α log β − log Γ(α)
//! − (α + 1) log y − β/y.

use super::args::requirement::POSITIVE_FINITE;
use super::args::{Arg, DistError, Hoisted, Term, check_each, positive_finite, zero_density};
use super::registry::Family;
use super::special::{digamma, lgamma};
use rand::Rng;
use rand_distr::Distribution;

/// Checks α, β > 0 finite (args[1..]; Stan's `inv_gamma_lpdf` checks).
pub fn check_params(args: &[Arg]) -> Result<(), DistError> {
    let sig = Family::InvGamma.sig();
    check_each(sig, args, 1, POSITIVE_FINITE, positive_finite)?;
    check_each(sig, args, 2, POSITIVE_FINITE, positive_finite)
}

/// Inverse-gamma log density summed over `n` broadcast elements; args = (y, α, β), β the scale.
///
/// ∂/∂y = −(α + 1)/y + β/y², ∂/∂α = log β − ψ(α) − log y, ∂/∂β = α/β − 1/y. At y = 0 the
/// density is 0: value −∞ with zero partials (Stan returns LOG_ZERO).
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
    let include_beta_over_y = !propto || is_var[0] || is_var[2];
    let lgamma_alpha = Hoisted::new(alpha, lgamma);
    let digamma_alpha = Hoisted::new(alpha, |a| if is_var[1] { digamma(a) } else { 0.0 });
    let log_beta = Hoisted::new(beta, f64::ln);
    let log_y = Hoisted::new(y, f64::ln);
    let mut value = 0.0;
    for i in 0..n {
        let (yi, a, b) = (y.at(i), alpha.at(i), beta.at(i));
        if yi == 0.0 {
            return Ok(zero_density(args, is_var));
        }
        let inv_y = 1.0 / yi;
        let ly = log_y.at(i);
        let lb = log_beta.at(i);
        if include_lgamma {
            value -= lgamma_alpha.at(i);
        }
        if include_alpha_log_beta {
            value += a * lb;
        }
        if include_log_y {
            value -= (a + 1.0) * ly;
        }
        if include_beta_over_y {
            value -= b * inv_y;
        }
        term.add_partial(0, i, (b * inv_y - (a + 1.0)) * inv_y);
        if is_var[1] {
            term.add_partial(1, i, lb - digamma_alpha.at(i) - ly);
        }
        term.add_partial(2, i, a / b - inv_y);
    }
    term.value = value;
    Ok(term)
}

/// One draw from inv_gamma(α, β) as 1/X with X ~ gamma(α, rate β); `params` = (α, β), checked.
pub fn rng<R: Rng + ?Sized>(params: &[f64], rng: &mut R) -> f64 {
    let x = rand_distr::Gamma::new(params[0], 1.0 / params[1])
        .expect("parameters were checked by check_params")
        .sample(rng);
    1.0 / x
}
