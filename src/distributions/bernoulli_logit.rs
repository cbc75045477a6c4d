//! Bernoulli distribution on the logit scale: log p(n | α) = n log σ(α) + (1 − n) log σ(−α),
//! σ the logistic sigmoid.

use super::args::requirement::NOT_NAN;
use super::args::{Arg, DistError, Term, check_each};
use super::registry::Family;
use super::special::{inv_logit, logit_terms};
use rand::Rng;

/// Checks α not NaN (args[1..]; Stan's `bernoulli_logit_lpmf` checks).
pub fn check_params(args: &[Arg]) -> Result<(), DistError> {
    check_each(Family::BernoulliLogit.sig(), args, 1, NOT_NAN, |x| {
        !x.is_nan()
    })
}

/// Bernoulli-logit log mass summed over `n` broadcast elements; args = (n, α).
///
/// Stable form: with e = exp(−|α|), log σ(α) = −(max(−α, 0) + log1p(e)) and
/// log σ(−α) = −(max(α, 0) + log1p(e)), so one exp and one log1p per element, no overflow for
/// any finite or infinite α. ∂/∂α = n − σ(α). The variate is data (no partial).
/// Errors: n not 0 or 1, α NaN.
pub fn lpmf(args: &[Arg], is_var: &[bool], propto: bool, n: usize) -> Result<Term, DistError> {
    check_params(args)?;
    let mut term = Term::zeros(args, is_var);
    if propto && !is_var[1] {
        return Ok(term);
    }
    let (y, alpha) = (args[0], args[1]);
    let hoisted = match alpha {
        Arg::Scalar(a) => Some(logit_terms(a)),
        Arg::Vector(_) => None,
    };
    let mut value = 0.0;
    for i in 0..n {
        let (log_s, log_s_neg, s, s_neg) = hoisted.unwrap_or_else(|| logit_terms(alpha.at(i)));
        if y.at(i) == 1.0 {
            value += log_s;
            term.add_partial(1, i, s_neg);
        } else {
            value += log_s_neg;
            term.add_partial(1, i, -s);
        }
    }
    term.value = value;
    Ok(term)
}

/// One draw from bernoulli_logit(α), returned as 0.0 or 1.0; `params` = (α), checked.
pub fn rng<R: Rng + ?Sized>(params: &[f64], rng: &mut R) -> f64 {
    super::bernoulli::rng(&[inv_logit(params[0])], rng)
}
