//! Bernoulli distribution: log p(n | θ) = n log θ + (1 − n) log(1 − θ), n ∈ {0, 1}.

use super::args::requirement::PROBABILITY;
use super::args::{Arg, DistError, Hoisted, Term, check_each, probability};
use super::registry::Family;
use rand::Rng;
use rand_distr::Distribution;

/// Checks θ ∈ [0, 1] (args[1..]; Stan's `bernoulli_lpmf` checks).
pub fn check_params(args: &[Arg]) -> Result<(), DistError> {
    check_each(Family::Bernoulli.sig(), args, 1, PROBABILITY, probability)
}

/// Bernoulli log mass summed over `n` broadcast elements; args = (n, θ).
/// ∂/∂θ = 1/θ for n = 1 and −1/(1 − θ) for n = 0. The variate is data (no partial).
/// Errors: n not 0 or 1, θ outside [0, 1] or NaN.
pub fn lpmf(args: &[Arg], is_var: &[bool], propto: bool, n: usize) -> Result<Term, DistError> {
    check_params(args)?;
    let mut term = Term::zeros(args, is_var);
    if propto && !is_var[1] {
        return Ok(term);
    }
    let (y, theta) = (args[0], args[1]);
    let log_theta = Hoisted::new(theta, f64::ln);
    let log1m_theta = Hoisted::new(theta, |t| (-t).ln_1p());
    let mut value = 0.0;
    for i in 0..n {
        let t = theta.at(i);
        if y.at(i) == 1.0 {
            value += log_theta.at(i);
            term.add_partial(1, i, 1.0 / t);
        } else {
            value += log1m_theta.at(i);
            term.add_partial(1, i, -1.0 / (1.0 - t));
        }
    }
    term.value = value;
    Ok(term)
}

/// One draw from bernoulli(θ), returned as 0.0 or 1.0; `params` = (θ), checked.
pub fn rng<R: Rng + ?Sized>(params: &[f64], rng: &mut R) -> f64 {
    let u: f64 = rand_distr::StandardUniform.sample(rng);
    if u < params[0] { 1.0 } else { 0.0 }
}
