//! Fréchet distribution (Stan Functions Reference, "Fréchet distribution"): for y > 0,
//! p(y | α, σ) = (α/σ) (y/σ)^{−1−α} exp(−(y/σ)^{−α}); F(y) = exp(−(y/σ)^{−α}).

use super::args::requirement::POSITIVE_FINITE;
use super::args::{Arg, DistError, Term, check_each, positive_finite};
use super::registry::Family;
use rand::Rng;
use rand_distr::Distribution;

/// Checks α, σ > 0 finite (args[1..]; Stan's `frechet_lpdf` checks).
pub fn check_params(args: &[Arg]) -> Result<(), DistError> {
    let sig = Family::Frechet.sig();
    check_each(sig, args, 1, POSITIVE_FINITE, positive_finite)?;
    check_each(sig, args, 2, POSITIVE_FINITE, positive_finite)
}

/// Fréchet log density summed over `n` broadcast elements; args = (y, α, σ).
///
/// With u = log(y/σ) and t = e^{−αu}: log p = log α + α log σ − (1 + α) log y − t;
/// ∂/∂y = (αt − 1 − α)/y, ∂/∂σ = α(1 − t)/σ, ∂/∂α = 1/α − u + t u. Under `~` the terms are
/// kept as Stan groups them: log α (α a parameter), α log σ (α or σ), −(1 + α) log y (y or α).
/// Errors: y not positive, α or σ not positive finite.
pub fn lpdf(args: &[Arg], is_var: &[bool], propto: bool, n: usize) -> Result<Term, DistError> {
    check_each(Family::Frechet.sig(), args, 0, "positive", |x| x > 0.0)?;
    check_params(args)?;
    let mut term = Term::zeros(args, is_var);
    if propto && !is_var.iter().any(|&v| v) {
        return Ok(term);
    }
    let (y, alpha, sigma) = (args[0], args[1], args[2]);
    let keep_log_alpha = !propto || is_var[1];
    let keep_alpha_log_sigma = !propto || is_var[1] || is_var[2];
    let keep_log_y = !propto || is_var[0] || is_var[1];
    let mut value = 0.0;
    for i in 0..n {
        let (yi, a, s) = (y.at(i), alpha.at(i), sigma.at(i));
        if yi.is_infinite() {
            value = f64::NEG_INFINITY;
            continue;
        }
        let (ly, ls) = (yi.ln(), s.ln());
        let u = ly - ls;
        let t = (-a * u).exp();
        value -= t;
        if keep_log_alpha {
            value += a.ln();
        }
        if keep_alpha_log_sigma {
            value += a * ls;
        }
        if keep_log_y {
            value -= (1.0 + a) * ly;
        }
        term.add_partial(0, i, (a * t - 1.0 - a) / yi);
        term.add_partial(1, i, 1.0 / a - u + t * u);
        term.add_partial(2, i, a * (1.0 - t) / s);
    }
    term.value = value;
    Ok(term)
}

/// Fréchet log CDF (log F = −t) or log CCDF (log(1 − e^{−t})) summed over `n` elements;
/// args = (y, α, σ), t = (y/σ)^{−α}. With h = d value/dt (−1, or 1/expm1(t)):
/// ∂/∂y = −hαt/y, ∂/∂σ = hαt/σ, ∂/∂α = −h t log(y/σ). Errors: as [`lpdf`].
pub fn lcdf(args: &[Arg], is_var: &[bool], complement: bool, n: usize) -> Result<Term, DistError> {
    check_each(Family::Frechet.sig(), args, 0, "positive", |x| x > 0.0)?;
    check_params(args)?;
    let mut term = Term::zeros(args, is_var);
    let (y, alpha, sigma) = (args[0], args[1], args[2]);
    let mut value = 0.0;
    for i in 0..n {
        let (yi, a, s) = (y.at(i), alpha.at(i), sigma.at(i));
        let u = (yi / s).ln();
        let t = (-a * u).exp();
        let (v, h) = if !complement {
            (-t, -1.0)
        } else if t == 0.0 {
            (f64::NEG_INFINITY, 0.0)
        } else if t.is_infinite() {
            (0.0, 0.0)
        } else {
            ((-(-t).exp_m1()).ln(), 1.0 / t.exp_m1())
        };
        value += v;
        if v.is_finite() && t.is_finite() && u.is_finite() {
            term.add_partial(0, i, -h * a * t / yi);
            term.add_partial(1, i, -h * t * u);
            term.add_partial(2, i, h * a * t / s);
        }
    }
    term.value = value;
    Ok(term)
}

/// One draw from frechet(α, σ) by inversion: y = σ (−log p)^{−1/α}, p uniform on (0, 1).
/// `params` = (α, σ), checked.
pub fn rng<R: Rng + ?Sized>(params: &[f64], rng: &mut R) -> f64 {
    let p: f64 = rand_distr::Open01.sample(rng);
    params[1] * (-p.ln()).powf(-1.0 / params[0])
}
