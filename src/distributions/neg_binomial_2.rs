//! Negative binomial distribution with mean μ and precision φ (Stan's `neg_binomial_2`):
//! log p(n | μ, φ) = log Γ(n + φ) − log n! − log Γ(φ) + n log(μ/(μ + φ)) + φ log(φ/(μ + φ)).

use super::args::requirement::POSITIVE_FINITE;
use super::args::{Arg, DistError, Term, check_each, positive_finite};
use super::registry::Family;
use super::special::{digamma, lgamma};
use rand::Rng;
use rand_distr::Distribution;

/// Checks μ, φ > 0 finite (args[1..]; Stan's `neg_binomial_2_lpmf` checks).
pub fn check_params(args: &[Arg]) -> Result<(), DistError> {
    let sig = Family::NegBinomial2.sig();
    check_each(sig, args, 1, POSITIVE_FINITE, positive_finite)?;
    check_each(sig, args, 2, POSITIVE_FINITE, positive_finite)
}

/// Counts up to this use exact finite sums for log Γ(n + φ) − log Γ(φ) and ψ(n + φ) − ψ(φ),
/// which otherwise cancel badly for large φ (at φ = 10⁸, log Γ(φ) ≈ 1.7·10⁹ and the difference
/// would lose about 7 digits).
const MAX_COUNT_FOR_SUMS: f64 = 16.0;

/// (log Γ(n + φ) − log Γ(φ), ψ(n + φ) − ψ(φ)) for an integer count n; the digamma difference
/// only when `need_digamma`. Small n: Σ_{j<n} log(φ + j) and Σ_{j<n} 1/(φ + j).
#[inline]
fn gamma_ratio(k: f64, phi: f64, need_digamma: bool) -> (f64, f64) {
    if k <= MAX_COUNT_FOR_SUMS {
        let (mut log_sum, mut inv_sum) = (0.0, 0.0);
        let mut j = 0.0;
        while j < k {
            log_sum += (phi + j).ln();
            if need_digamma {
                inv_sum += 1.0 / (phi + j);
            }
            j += 1.0;
        }
        (log_sum, inv_sum)
    } else {
        let d = if need_digamma {
            digamma(k + phi) - digamma(phi)
        } else {
            0.0
        };
        (lgamma(k + phi) - lgamma(phi), d)
    }
}

/// Negative-binomial (mean, precision) log mass summed over `n` broadcast elements;
/// args = (n, μ, φ). Variance μ + μ²/φ.
///
/// Stable forms: n log(μ/(μ+φ)) = −n log1p(φ/μ), φ log(φ/(μ+φ)) = −φ log1p(μ/φ).
/// ∂/∂μ = n/μ − (n + φ)/(μ + φ); ∂/∂φ = ψ(n + φ) − ψ(φ) − log1p(μ/φ) + (μ − n)/(μ + φ).
/// Errors: n not a nonnegative integer, μ or φ not positive finite.
pub fn lpmf(args: &[Arg], is_var: &[bool], propto: bool, n: usize) -> Result<Term, DistError> {
    check_params(args)?;
    let mut term = Term::zeros(args, is_var);
    if propto && !is_var[1] && !is_var[2] {
        return Ok(term);
    }
    let (y, mu, phi) = (args[0], args[1], args[2]);
    let include_lgamma_phi = !propto || is_var[2];
    let mut value = 0.0;
    for i in 0..n {
        let (k, m, f) = (y.at(i), mu.at(i), phi.at(i));
        let log1p_mu_over_phi = (m / f).ln_1p();
        value -= f * log1p_mu_over_phi;
        if k > 0.0 {
            value -= k * (f / m).ln_1p();
        }
        let (lgamma_ratio, digamma_diff) = if include_lgamma_phi {
            gamma_ratio(k, f, is_var[2])
        } else {
            (0.0, 0.0)
        };
        value += lgamma_ratio;
        if !propto {
            value -= lgamma(k + 1.0);
        }
        let m_plus_f = m + f;
        // n/μ − (n + φ)/(μ + φ) = (φ/(μ + φ))(n/μ − 1): no ∞ − ∞ for huge n/μ
        term.add_partial(1, i, f / m_plus_f * (k / m - 1.0));
        if is_var[2] {
            let d = digamma_diff - log1p_mu_over_phi + (m - k) / m_plus_f;
            term.add_partial(2, i, d);
        }
    }
    term.value = value;
    Ok(term)
}

/// One draw from neg_binomial_2(μ, φ) as a gamma–Poisson mixture: λ ~ gamma(φ, rate φ/μ),
/// n ~ poisson(λ). `params` = (μ, φ), checked. Errors: a gamma draw ≥ 2³⁰ (as Stan).
pub fn rng<R: Rng + ?Sized>(params: &[f64], rng: &mut R) -> Result<f64, DistError> {
    let (mu, phi) = (params[0], params[1]);
    let lambda = rand_distr::Gamma::new(phi, mu / phi)
        .expect("parameters were checked by check_params")
        .sample(rng);
    super::poisson::draw(lambda, rng).map_err(|m| DistError {
        function: "neg_binomial_2_rng".to_string(),
        message: format!("Random number that came from gamma distribution {m}"),
    })
}
