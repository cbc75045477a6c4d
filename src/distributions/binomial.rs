//! Binomial distribution: log p(n | N, θ) = log C(N, n) + n log θ + (N − n) log(1 − θ).

use super::args::requirement::{COUNT, PROBABILITY};
use super::args::{Arg, DistError, Hoisted, Term, check_each, count, function_name, probability};
use super::registry::{Family, FamilySig};
use super::special::lgamma;
use rand::Rng;
use rand_distr::Distribution;

/// Checks N a count and θ ∈ [0, 1] (args[1..]; Stan's `binomial_lpmf` checks).
pub fn check_params(args: &[Arg]) -> Result<(), DistError> {
    let sig = Family::Binomial.sig();
    check_each(sig, args, 1, COUNT, count)?;
    check_each(sig, args, 2, PROBABILITY, probability)
}

/// Checks 0 ≤ n ≤ N elementwise (a count no larger than the number of trials), with Stan's
/// `check_bounded` wording; shared with `binomial_logit`.
pub fn check_successes(sig: &FamilySig, args: &[Arg], n: usize) -> Result<(), DistError> {
    check_each(sig, args, 0, COUNT, count)?;
    let (y, trials) = (args[0], args[1]);
    for i in 0..n {
        let (k, m) = (y.at(i), trials.at(i));
        if k > m {
            let which = if y.is_vector() {
                format!("Random variable[{}]", i + 1)
            } else {
                "Random variable".to_string()
            };
            return Err(DistError {
                function: function_name(sig),
                message: format!("{which} is {k}, but must be in the interval [0, {m}]"),
            });
        }
    }
    Ok(())
}

/// log C(N, n) via log-gamma.
#[inline]
pub fn log_choose(trials: f64, k: f64) -> f64 {
    lgamma(trials + 1.0) - lgamma(k + 1.0) - lgamma(trials - k + 1.0)
}

/// Binomial log mass summed over `n` broadcast elements; args = (n, N, θ): n successes in N
/// trials. ∂/∂θ = n/θ − (N − n)/(1 − θ); terms with a zero count are omitted (0·log 0 = 0), so
/// θ = 0 or 1 is valid where the mass is 1. Each element's normalised log mass is clamped to ≤ 0
/// against rounding in log C(N, n).
/// Errors: n or N not a nonnegative integer, n > N, θ outside [0, 1].
pub fn lpmf(args: &[Arg], is_var: &[bool], propto: bool, n: usize) -> Result<Term, DistError> {
    let sig = Family::Binomial.sig();
    check_params(args)?;
    check_successes(sig, args, n)?;
    let mut term = Term::zeros(args, is_var);
    if propto && !is_var[2] {
        return Ok(term);
    }
    let (y, trials, theta) = (args[0], args[1], args[2]);
    let log_theta = Hoisted::new(theta, f64::ln);
    let log1m_theta = Hoisted::new(theta, |t| (-t).ln_1p());
    let mut value = 0.0;
    for i in 0..n {
        let (k, m, t) = (y.at(i), trials.at(i), theta.at(i));
        let fails = m - k;
        let mut lp = if propto { 0.0 } else { log_choose(m, k) };
        let mut d = 0.0;
        if k > 0.0 {
            lp += k * log_theta.at(i);
            d += k / t;
        }
        if fails > 0.0 {
            lp += fails * log1m_theta.at(i);
            d -= fails / (1.0 - t);
        }
        // A log probability is ≤ 0: rounding in log C(N, n) must not push it above.
        value += if propto { lp } else { lp.min(0.0) };
        term.add_partial(2, i, d);
    }
    term.value = value;
    Ok(term)
}

/// One draw from binomial(N, θ), returned as an f64 holding an exact integer; `params` =
/// (N, θ), checked.
pub fn rng<R: Rng + ?Sized>(params: &[f64], rng: &mut R) -> f64 {
    rand_distr::Binomial::new(params[0] as u64, params[1])
        .expect("parameters were checked by check_params")
        .sample(rng) as f64
}
