//! Bernoulli distribution on the logit scale: log p(n | α) = n log σ(α) + (1 − n) log σ(−α),
//! σ the logistic sigmoid.

use super::args::requirement::{BINARY, NOT_NAN};
use super::args::{Arg, DistError, Term, binary, check_each};
use super::registry::Family;
use super::special::inv_logit;
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
    check_each(Family::BernoulliLogit.sig(), args, 0, BINARY, binary)?;
    check_params(args)?;
    let mut term = Term::zeros(args, is_var);
    if propto && !is_var[1] {
        return Ok(term);
    }
    let (y, alpha) = (args[0], args[1]);
    let mut value = 0.0;
    for i in 0..n {
        let a = alpha.at(i);
        let e = (-a.abs()).exp();
        let l = e.ln_1p();
        // σ(α) and σ(−α) = 1 − σ(α), each without cancellation.
        let (big, small) = (1.0 / (1.0 + e), e / (1.0 + e));
        let (sigmoid, sigmoid_neg) = if a >= 0.0 { (big, small) } else { (small, big) };
        if y.at(i) == 1.0 {
            value -= (-a).max(0.0) + l;
            term.add_partial(1, i, sigmoid_neg);
        } else {
            value -= a.max(0.0) + l;
            term.add_partial(1, i, -sigmoid);
        }
    }
    term.value = value;
    Ok(term)
}

/// One draw from bernoulli_logit(α), returned as 0.0 or 1.0; `params` = (α), checked.
pub fn rng<R: Rng + ?Sized>(params: &[f64], rng: &mut R) -> f64 {
    super::bernoulli::rng(&[inv_logit(params[0])], rng)
}
