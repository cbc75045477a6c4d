//! Beta-binomial distribution (Stan Functions Reference, "Beta-binomial distribution"):
//! log p(n | N, α, β) = log C(N, n) + log B(n + α, N − n + β) − log B(α, β), n ∈ 0..N.
//!
//! The CDF is the finite sum of the mass over 0..=n, so `_lcdf`/`_lccdf` are exact (with the
//! gradient of each summand, weighted by its share of the sum).

use super::args::requirement::{COUNT, POSITIVE_FINITE};
use super::args::{Arg, DistError, Term, check_each, count, positive_finite};
use super::binomial::log_choose;
use super::registry::Family;
use super::special::{digamma, lbeta};
use rand::Rng;
use rand_distr::Distribution;

/// Checks N a count and α, β > 0 finite (args[1..]; Stan's `beta_binomial_lpmf` checks).
pub fn check_params(args: &[Arg]) -> Result<(), DistError> {
    let sig = Family::BetaBinomial.sig();
    check_each(sig, args, 1, COUNT, count)?;
    check_each(sig, args, 2, POSITIVE_FINITE, positive_finite)?;
    check_each(sig, args, 3, POSITIVE_FINITE, positive_finite)
}

/// The normalised log mass of one element and its (∂/∂α, ∂/∂β).
fn one(k: f64, m: f64, a: f64, b: f64) -> (f64, f64, f64) {
    let v = log_choose(m, k) + lbeta(k + a, m - k + b) - lbeta(a, b);
    let common = digamma(a + b) - digamma(m + a + b);
    (
        v,
        digamma(k + a) - digamma(a) + common,
        digamma(m - k + b) - digamma(b) + common,
    )
}

/// Beta-binomial log mass summed over `n` broadcast elements; args = (n, N, α, β).
///
/// ∂/∂α = ψ(n + α) − ψ(α) + ψ(α + β) − ψ(N + α + β), ∂/∂β = ψ(N − n + β) − ψ(β) + ψ(α + β)
/// − ψ(N + α + β). A count above N has mass 0 (log mass −∞), as in Stan. Under `~` the term
/// log C(N, n) is dropped (it depends on data only).
/// Errors: n or N not a nonnegative integer, α or β not positive finite.
pub fn lpmf(args: &[Arg], is_var: &[bool], propto: bool, n: usize) -> Result<Term, DistError> {
    let sig = Family::BetaBinomial.sig();
    check_each(sig, args, 0, COUNT, count)?;
    check_params(args)?;
    let mut term = Term::zeros(args, is_var);
    if propto && !is_var[2] && !is_var[3] {
        return Ok(term);
    }
    let mut value = 0.0;
    for i in 0..n {
        let (k, m, a, b) = (args[0].at(i), args[1].at(i), args[2].at(i), args[3].at(i));
        if k > m {
            return Ok(super::args::zero_density(args, is_var));
        }
        let (v, da, db) = one(k, m, a, b);
        // a mass is at most 1: rounding of the log-beta differences at extreme α, β can
        // push the sum just above 0 (binomial caps the same way)
        value += if propto {
            v - log_choose(m, k)
        } else {
            v.min(0.0)
        };
        term.add_partial(2, i, da);
        term.add_partial(3, i, db);
    }
    term.value = value;
    Ok(term)
}

/// The most terms of the mass that [`lcdf`] sums (a population size of 10⁷ is far beyond any
/// use of a beta-binomial CDF; above it the call is an error rather than a hang).
const MAX_CDF_TERMS: f64 = 1e7;

/// Beta-binomial log CDF (log P(Y ≤ n)) or log CCDF (log P(Y > n)) summed over `n`
/// elements; args = (n, N, α, β). Each element is log Σₖ p(k) over k ≤ n (or k > n), summed
/// stably (log-sum-exp); its partials are Σₖ wₖ ∂ log p(k) with wₖ = p(k) / Σ p. Costs O(N)
/// per element. Errors: as [`lpmf`], and more than [`MAX_CDF_TERMS`] terms to sum.
pub fn lcdf(args: &[Arg], is_var: &[bool], complement: bool, n: usize) -> Result<Term, DistError> {
    let sig = Family::BetaBinomial.sig();
    check_each(sig, args, 0, COUNT, count)?;
    check_params(args)?;
    let mut term = Term::zeros(args, is_var);
    let mut value = 0.0;
    for i in 0..n {
        let (k, m, a, b) = (args[0].at(i), args[1].at(i), args[2].at(i), args[3].at(i));
        let (lo, hi) = if complement {
            (k + 1.0, m)
        } else {
            (0.0, k.min(m))
        };
        if lo > hi {
            // P(Y > n) = 0 for n ≥ N: the log CCDF is −∞
            value = f64::NEG_INFINITY;
            continue;
        }
        if !complement && k >= m {
            // P(Y ≤ n) = 1 exactly for n ≥ N (the sum would round)
            continue;
        }
        if hi - lo >= MAX_CDF_TERMS {
            return Err(DistError {
                function: super::args::function_name(sig),
                message: format!(
                    "the CDF sums {} terms of the mass, more than the {MAX_CDF_TERMS} allowed",
                    hi - lo + 1.0
                ),
            });
        }
        let terms: Vec<(f64, f64, f64)> = (lo as u64..=hi as u64)
            .map(|j| one(j as f64, m, a, b))
            .collect();
        let top = terms.iter().map(|t| t.0).fold(f64::NEG_INFINITY, f64::max);
        let total: f64 = terms.iter().map(|t| (t.0 - top).exp()).sum();
        let lse = top + total.ln();
        value += lse.min(0.0);
        let (mut da, mut db) = (0.0, 0.0);
        for (v, ga, gb) in &terms {
            let w = (v - lse).exp();
            da += w * ga;
            db += w * gb;
        }
        term.add_partial(2, i, da);
        term.add_partial(3, i, db);
    }
    term.value = value;
    Ok(term)
}

/// One draw from beta_binomial(N, α, β): θ ~ beta(α, β), then binomial(N, θ); `params` =
/// (N, α, β), checked.
pub fn rng<R: Rng + ?Sized>(params: &[f64], rng: &mut R) -> f64 {
    let theta = rand_distr::Beta::new(params[1], params[2])
        .expect("parameters were checked by check_params")
        .sample(rng);
    rand_distr::Binomial::new(params[0] as u64, theta)
        .expect("θ from a beta draw lies in [0, 1]")
        .sample(rng) as f64
}
