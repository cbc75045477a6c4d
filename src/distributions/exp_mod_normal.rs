//! Exponentially modified normal distribution (Stan Functions Reference, "Exponentially
//! modified normal distribution"): y = x + e with x ~ normal(μ, σ), e ~ exponential(λ);
//! p(y | μ, σ, λ) = (λ/2) exp((λ/2)(2μ + λσ² − 2y)) erfc((μ + λσ² − y)/(√2 σ)).
//!
//! With v = (μ − y)/σ + λσ, erfc(v/√2) = 2Φ(−v), so
//! log p = log λ + λ(μ − y) + λ²σ²/2 + log Φ(−v), with log Φ accurate in the far tail.
//! The CDF is F(y) = Φ(z) − exp(A), z = (y − μ)/σ, A = log p − log λ.

use super::args::requirement::{FINITE, NOT_NAN, POSITIVE_FINITE};
use super::args::{Arg, DistError, Term, check_each, positive_finite};
use super::registry::Family;
use super::special::{HALF_LOG_TWO_PI, log_diff_exp, std_normal_lcdf, std_normal_lcdf_deriv};
use rand::Rng;
use rand_distr::{Distribution, Exp, StandardNormal};

/// Checks μ finite, σ and λ > 0 finite (args[1..]; Stan's `exp_mod_normal_lpdf` checks).
pub fn check_params(args: &[Arg]) -> Result<(), DistError> {
    let sig = Family::ExpModNormal.sig();
    check_each(sig, args, 1, FINITE, f64::is_finite)?;
    check_each(sig, args, 2, POSITIVE_FINITE, positive_finite)?;
    check_each(sig, args, 3, POSITIVE_FINITE, positive_finite)
}

/// A = λ(μ − y) + λ²σ²/2 + log Φ(−v) and its partials (∂y, ∂μ, ∂σ, ∂λ), r = φ(−v)/Φ(−v):
/// ∂y = −λ + r/σ, ∂μ = λ − r/σ, ∂σ = λ²σ − r(λ − (μ − y)/σ²), ∂λ = (μ − y) + λσ² − rσ.
///
/// With z = (μ − y)/σ, v = z + λσ. For v > 0 the first two terms and log Φ(−v) cancel (both
/// grow like v²/2), so A is computed as −z²/2 + g(v) with g(v) = log Φ(−v) + v²/2, which stays
/// finite where the naive sum gives ∞ − ∞ at extreme arguments.
fn a_term(y: f64, mu: f64, s: f64, l: f64) -> (f64, [f64; 4]) {
    let z = (mu - y) / s;
    let ls = l * s;
    let v = z + ls;
    let r = std_normal_lcdf_deriv(-v);
    let value = if v > 0.0 {
        -0.5 * z * z + lcdf_plus_half_square(v)
    } else {
        // λσ(z + λσ/2), or λ(μ − y) when λσ underflows (z may then be infinite)
        let quadratic = if ls == 0.0 {
            l * (mu - y)
        } else {
            ls * (z + 0.5 * ls)
        };
        quadratic + std_normal_lcdf(-v)
    };
    // r underflows to 0 far in Φ's upper tail; its terms are then 0 even where their other
    // factor overflows
    let rt = |x: f64| if r == 0.0 { 0.0 } else { r * x };
    let grads = [
        -l + rt(1.0 / s),
        l - rt(1.0 / s),
        l * (ls - r) + rt(z / s),
        (mu - y) + s * (ls - r),
    ];
    (value, grads)
}

/// g(v) = log Φ(−v) + v²/2 for v > 0: directly below 37, and from the asymptotic series of
/// Φ's tail above (Abramowitz & Stegun 26.2.12; the form `std_normal_lcdf` uses there), so
/// that v² is never formed where it could overflow.
fn lcdf_plus_half_square(v: f64) -> f64 {
    if v < 37.0 {
        std_normal_lcdf(-v) + 0.5 * v * v
    } else {
        let v2 = v * v;
        let series = 1.0 - 1.0 / v2 + 3.0 / (v2 * v2) - 15.0 / (v2 * v2 * v2);
        -v.ln() - HALF_LOG_TWO_PI + series.ln()
    }
}

/// Exponentially modified normal log density summed over `n` elements; args = (y, μ, σ, λ).
///
/// log p = log λ + A (see [`a_term`] for the partials; ∂/∂λ adds 1/λ). The density has no
/// constant term, so `~` drops only log λ when λ is data.
/// Errors: y NaN, μ not finite, σ or λ not positive finite.
pub fn lpdf(args: &[Arg], is_var: &[bool], propto: bool, n: usize) -> Result<Term, DistError> {
    check_each(Family::ExpModNormal.sig(), args, 0, NOT_NAN, |x| {
        !x.is_nan()
    })?;
    check_params(args)?;
    let mut term = Term::zeros(args, is_var);
    if propto && !is_var.iter().any(|&v| v) {
        return Ok(term);
    }
    let mut value = 0.0;
    for i in 0..n {
        let (y, mu, s, l) = (args[0].at(i), args[1].at(i), args[2].at(i), args[3].at(i));
        if y.is_infinite() {
            value = f64::NEG_INFINITY;
            continue;
        }
        let (a, g) = a_term(y, mu, s, l);
        value += a;
        if !propto || is_var[3] {
            value += l.ln();
        }
        for k in 0..3 {
            term.add_partial(k, i, g[k]);
        }
        term.add_partial(3, i, g[3] + 1.0 / l);
    }
    term.value = value;
    Ok(term)
}

/// Log CDF (log(Φ(z) − e^A)) or log CCDF (log(Φ(−z) + e^A)) summed over `n` elements;
/// args = (y, μ, σ, λ). Partials: (φ(z) ∂z ∓ e^A ∂A) divided by the (C)CDF, with ∂z = (1/σ,
/// −1/σ, −z/σ, 0). In the far lower tail the log CDF loses relative accuracy to cancellation
/// between Φ(z) and e^A. Errors: as [`lpdf`], and a CDF lost to that cancellation (e^A rounded
/// above Φ(z), e.g. at λ = 1e-300).
pub fn lcdf(args: &[Arg], is_var: &[bool], complement: bool, n: usize) -> Result<Term, DistError> {
    check_each(Family::ExpModNormal.sig(), args, 0, NOT_NAN, |x| {
        !x.is_nan()
    })?;
    check_params(args)?;
    let mut term = Term::zeros(args, is_var);
    let mut value = 0.0;
    for i in 0..n {
        let (y, mu, s, l) = (args[0].at(i), args[1].at(i), args[2].at(i), args[3].at(i));
        if y.is_infinite() {
            if (y > 0.0) != complement {
                // log CDF at +∞ and log CCDF at −∞ are 0
                continue;
            }
            value = f64::NEG_INFINITY;
            continue;
        }
        let z = (y - mu) / s;
        let (a, ga) = a_term(y, mu, s, l);
        let log_phi_z = -0.5 * z * z - HALF_LOG_TWO_PI;
        let (v, sign) = if complement {
            let lp = std_normal_lcdf(-z);
            let hi = lp.max(a);
            // a probability: rounding of the sum must not lift the log above 0
            (
                (hi + ((lp - hi).exp() + (a - hi).exp()).ln()).min(0.0),
                -1.0,
            )
        } else {
            let lp = std_normal_lcdf(z);
            if a > lp {
                // Φ(z) − e^A is positive, but rounding put e^A above Φ(z): say so rather than
                // return the NaN of a log of a negative number
                return Err(DistError {
                    function: super::args::function_name(Family::ExpModNormal.sig()),
                    message: format!(
                        "the CDF at {y} cancels below double precision (Φ(z) − e^A with \
                         z = {z}, A = {a})"
                    ),
                });
            }
            (log_diff_exp(lp, a), 1.0)
        };
        value += v;
        if !v.is_finite() {
            continue;
        }
        let wz = sign * (log_phi_z - v).exp();
        let wa = -sign * (a - v).exp();
        let dz = [1.0 / s, -1.0 / s, -z / s, 0.0];
        for k in 0..4 {
            term.add_partial(k, i, wz * dz[k] + wa * ga[k]);
        }
    }
    term.value = value;
    Ok(term)
}

/// One draw from exp_mod_normal(μ, σ, λ) as a normal(μ, σ) draw plus an exponential(λ) draw.
/// `params` = (μ, σ, λ), checked.
pub fn rng<R: Rng + ?Sized>(params: &[f64], rng: &mut R) -> f64 {
    let x: f64 = StandardNormal.sample(rng);
    let e = Exp::new(params[2])
        .expect("parameters were checked by check_params")
        .sample(rng);
    params[0] + params[1] * x + e
}
