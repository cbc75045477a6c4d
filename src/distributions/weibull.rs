//! Weibull distribution with shape α and scale σ: log p(y | α, σ) = log α + (α − 1) log y
//! − α log σ − (y/σ)^α.

use super::args::requirement::{NONNEGATIVE, POSITIVE_FINITE};
use super::args::{Arg, DistError, Hoisted, Term, check_each, nonnegative, positive_finite};
use super::registry::Family;
use super::special::log1m_exp;
use rand::Rng;
use rand_distr::Distribution;

/// Checks α, σ > 0 finite (args[1..]; Stan's `weibull_lpdf` checks).
pub fn check_params(args: &[Arg]) -> Result<(), DistError> {
    let sig = Family::Weibull.sig();
    check_each(sig, args, 1, POSITIVE_FINITE, positive_finite)?;
    check_each(sig, args, 2, POSITIVE_FINITE, positive_finite)
}

/// Weibull log density summed over `n` broadcast elements; args = (y, α, σ).
///
/// With u = (y/σ)^α: ∂/∂y = ((α − 1) − α u)/y, ∂/∂α = 1/α + (1 − u) log(y/σ),
/// ∂/∂σ = α(u − 1)/σ. At y = 0 the term (α − 1) log y is 0 when α = 1 (and ∂/∂y is −1/σ); at
/// y = +∞ the log density is −∞ (zero partials).
/// Errors: y negative or NaN, α or σ not positive finite.
pub fn lpdf(args: &[Arg], is_var: &[bool], propto: bool, n: usize) -> Result<Term, DistError> {
    check_params(args)?;
    let mut term = Term::zeros(args, is_var);
    if propto && !is_var.iter().any(|&v| v) {
        return Ok(term);
    }
    let (y, alpha, sigma) = (args[0], args[1], args[2]);
    let include_log_alpha = !propto || is_var[1];
    let include_log_y = !propto || is_var[0] || is_var[1];
    let include_alpha_log_sigma = !propto || is_var[1] || is_var[2];
    let log_alpha = Hoisted::new(alpha, f64::ln);
    let log_sigma = Hoisted::new(sigma, f64::ln);
    let log_y = Hoisted::new(y, f64::ln);
    let mut value = 0.0;
    for i in 0..n {
        let (yi, a, s) = (y.at(i), alpha.at(i), sigma.at(i));
        if yi == f64::INFINITY {
            // the density vanishes at +∞ ((α − 1) log y − (y/σ)^α would be ∞ − ∞)
            value = f64::NEG_INFINITY;
            continue;
        }
        let ly = log_y.at(i);
        let ls = log_sigma.at(i);
        let log_ratio = ly - ls;
        let u = (a * log_ratio).exp();
        value -= u;
        if include_log_alpha {
            value += log_alpha.at(i);
        }
        if include_log_y && a != 1.0 {
            value += (a - 1.0) * ly;
        }
        if include_alpha_log_sigma {
            value -= a * ls;
        }
        if is_var[0] {
            // at y = 0 with α = 1 (the exponential) the limit is −1/σ, not 0/0
            let d = if yi == 0.0 && a == 1.0 {
                -1.0 / s
            } else {
                ((a - 1.0) - a * u) / yi
            };
            term.add_partial(0, i, d);
        }
        if is_var[1] {
            term.add_partial(1, i, 1.0 / a + (1.0 - u) * log_ratio);
        }
        term.add_partial(2, i, a * (u - 1.0) / s);
    }
    term.value = value;
    Ok(term)
}

/// Weibull log CDF (or log CCDF) summed over `n` elements; args = (y, α, σ).
///
/// With u = (y/σ)^α: log CCDF = −u and log CDF = log(1 − e^{−u}) (d/du = 1/expm1(u));
/// ∂u/∂y = αu/y, ∂u/∂α = u log(y/σ), ∂u/∂σ = −αu/σ. At y = 0 the log CDF is −∞ and the log
/// CCDF 0, with zero partials. Errors: as [`lpdf`].
pub fn lcdf(args: &[Arg], is_var: &[bool], complement: bool, n: usize) -> Result<Term, DistError> {
    check_each(Family::Weibull.sig(), args, 0, NONNEGATIVE, nonnegative)?;
    check_params(args)?;
    let (y, alpha, sigma) = (args[0], args[1], args[2]);
    let mut term = Term::zeros(args, is_var);
    let mut value = 0.0;
    for i in 0..n {
        let (yi, a, s) = (y.at(i), alpha.at(i), sigma.at(i));
        if yi == 0.0 {
            if !complement {
                value = f64::NEG_INFINITY;
            }
            continue;
        }
        let log_ratio = (yi / s).ln();
        let u = (a * log_ratio).exp();
        let dv_du = if complement {
            value -= u;
            -1.0
        } else {
            value += log1m_exp(-u);
            1.0 / u.exp_m1()
        };
        term.add_partial(0, i, dv_du * a * u / yi);
        term.add_partial(1, i, dv_du * u * log_ratio);
        term.add_partial(2, i, -dv_du * a * u / s);
    }
    term.value = value;
    Ok(term)
}

/// One draw from weibull(α, σ) (rand_distr takes scale then shape); `params` = (α, σ), checked.
pub fn rng<R: Rng + ?Sized>(params: &[f64], rng: &mut R) -> f64 {
    rand_distr::Weibull::new(params[1], params[0])
        .expect("parameters were checked by check_params")
        .sample(rng)
}
