//! Binomial distribution on the logit scale: log p(n | N, α) = log C(N, n) + n log σ(α)
//! + (N − n) log σ(−α), σ the logistic sigmoid.

use super::args::requirement::{COUNT, FINITE};
use super::args::{Arg, DistError, Term, check_each, count};
use super::binomial::{check_successes, log_choose};
use super::registry::Family;
use super::special::{inv_logit, logit_terms};
use rand::Rng;

/// Checks N a count and α finite (args[1..]; Stan's `binomial_logit_lpmf` checks).
pub fn check_params(args: &[Arg]) -> Result<(), DistError> {
    let sig = Family::BinomialLogit.sig();
    check_each(sig, args, 1, COUNT, count)?;
    check_each(sig, args, 2, FINITE, f64::is_finite)
}

/// Binomial-logit log mass summed over `n` broadcast elements; args = (n, N, α).
///
/// Stable form as in `bernoulli_logit`: with e = exp(−|α|), log σ(α) = −(max(−α, 0) + log1p(e))
/// and log σ(−α) = −(max(α, 0) + log1p(e)). ∂/∂α = n − N σ(α). Each element's normalised log
/// mass is clamped to ≤ 0 against rounding in log C(N, n).
/// Errors: n or N not a nonnegative integer, n > N, α not finite.
pub fn lpmf(args: &[Arg], is_var: &[bool], propto: bool, n: usize) -> Result<Term, DistError> {
    let sig = Family::BinomialLogit.sig();
    check_params(args)?;
    check_successes(sig, args, n)?;
    let mut term = Term::zeros(args, is_var);
    if propto && !is_var[2] {
        return Ok(term);
    }
    let (y, trials, alpha) = (args[0], args[1], args[2]);
    let hoisted = match alpha {
        Arg::Scalar(a) => Some(logit_terms(a)),
        Arg::Vector(_) => None,
    };
    let mut value = 0.0;
    for i in 0..n {
        let (k, m) = (y.at(i), trials.at(i));
        let mut lp = if propto { 0.0 } else { log_choose(m, k) };
        let (log_s, log_s_neg, s, _) = hoisted.unwrap_or_else(|| logit_terms(alpha.at(i)));
        // Zero counts contribute nothing (also when the log probability is −∞ at α = ±∞).
        if k > 0.0 {
            lp += k * log_s;
        }
        if m > k {
            lp += (m - k) * log_s_neg;
        }
        // A log probability is ≤ 0: rounding in log C(N, n) must not push it above.
        value += if propto { lp } else { lp.min(0.0) };
        term.add_partial(2, i, k - m * s);
    }
    term.value = value;
    Ok(term)
}

/// One draw from binomial_logit(N, α), as an f64 holding an exact integer; `params` = (N, α),
/// checked.
pub fn rng<R: Rng + ?Sized>(params: &[f64], rng: &mut R) -> f64 {
    super::binomial::rng(&[params[0], inv_logit(params[1])], rng)
}
