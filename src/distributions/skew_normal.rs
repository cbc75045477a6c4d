//! Skew normal distribution (Stan Functions Reference, "Skew normal distribution"):
//! p(y | ξ, ω, α) = 1/(ω√(2π)) exp(−z²/2) (1 + erf(α z/√2)), z = (y − ξ)/ω.
//!
//! Since 1 + erf(αz/√2) = 2Φ(αz), the log density is computed as
//! log 2 − log ω − ½ log 2π − z²/2 + log Φ(αz), with log Φ accurate in the far lower tail.
//! The CDF is Φ(z) − 2T(z, α) with Owen's T function (Azzalini 2014, *The Skew-Normal and
//! Related Families*, §2.1.2), see [`std_lcdf`].

use super::args::requirement::{FINITE, NOT_NAN, POSITIVE_FINITE};
use super::args::{Arg, DistError, Hoisted, Term, check_each, positive_finite};
use super::registry::Family;
use super::special::{
    HALF_LOG_TWO_PI, owens_t, std_normal_cdf, std_normal_lcdf, std_normal_lcdf_deriv,
};
use rand::Rng;
use rand_distr::{Distribution, StandardNormal};

/// Checks ξ finite, ω > 0 finite, α finite (args[1..]; Stan's `skew_normal_lpdf` checks).
pub fn check_params(args: &[Arg]) -> Result<(), DistError> {
    let sig = Family::SkewNormal.sig();
    check_each(sig, args, 1, FINITE, f64::is_finite)?;
    check_each(sig, args, 2, POSITIVE_FINITE, positive_finite)?;
    check_each(sig, args, 3, FINITE, f64::is_finite)
}

/// Skew normal log density summed over `n` broadcast elements; args = (y, ξ, ω, α).
///
/// With r = φ(αz)/Φ(αz) and g = −z + α r (the z-derivative): ∂/∂y = g/ω, ∂/∂ξ = −g/ω,
/// ∂/∂ω = −(1 + g z)/ω, ∂/∂α = z r. Under `~`, log 2 − ½ log 2π is dropped, and log ω
/// unless ω is a parameter.
/// Errors: y NaN, ξ or α not finite, ω not positive finite.
pub fn lpdf(args: &[Arg], is_var: &[bool], propto: bool, n: usize) -> Result<Term, DistError> {
    check_each(Family::SkewNormal.sig(), args, 0, NOT_NAN, |x| !x.is_nan())?;
    check_params(args)?;
    let mut term = Term::zeros(args, is_var);
    if propto && !is_var.iter().any(|&v| v) {
        return Ok(term);
    }
    let (y, xi, omega, alpha) = (args[0], args[1], args[2], args[3]);
    let include_log_omega = !propto || is_var[2];
    let log_omega = Hoisted::new(omega, f64::ln);
    let mut value = 0.0;
    for i in 0..n {
        let inv_w = 1.0 / omega.at(i);
        let z = (y.at(i) - xi.at(i)) * inv_w;
        if z.is_infinite() {
            value = f64::NEG_INFINITY;
            continue;
        }
        let a = alpha.at(i);
        value += -0.5 * z * z + std_normal_lcdf(a * z);
        if include_log_omega {
            value -= log_omega.at(i);
        }
        let r = std_normal_lcdf_deriv(a * z);
        let g = -z + a * r;
        term.add_partial(0, i, g * inv_w);
        term.add_partial(1, i, -g * inv_w);
        term.add_partial(2, i, -(1.0 + g * z) * inv_w);
        term.add_partial(3, i, z * r);
    }
    if !propto {
        value += (std::f64::consts::LN_2 - HALF_LOG_TWO_PI) * n as f64;
    }
    term.value = value;
    Ok(term)
}

/// log F(z; α) of the standard skew normal (ξ = 0, ω = 1) with d log F/dz and d log F/dα.
///
/// F(z; α) = Φ(z) − 2T(z, α) with Owen's T ([`owens_t`]); dF/dz = 2φ(z)Φ(αz) (the density) and
/// dF/dα = −exp(−z²(1 + α²)/2) / (π(1 + α²)) (from ∂T/∂a). Above the median the complement is
/// used, log F = log1p(−F(−z; −α)), because 1 − F(z; α) = F(−z; −α). Where Φ(z) − 2T cancels
/// (F below 1e-3, the far lower tail for α > 0) F is instead the integral
/// 2∫₋∞ᶻ φ(t)Φ(αt) dt by graded quadrature in log space, accurate to rounding however small F is.
pub fn std_lcdf(z: f64, alpha: f64) -> (f64, f64, f64) {
    if z == f64::NEG_INFINITY {
        return (f64::NEG_INFINITY, 0.0, 0.0);
    }
    if z == f64::INFINITY {
        return (0.0, 0.0, 0.0);
    }
    let naive = std_normal_cdf(z) - 2.0 * owens_t(z, alpha);
    let log_f = if naive < 0.5 {
        log_small_side(z, alpha, naive)
    } else {
        let upper = std_normal_cdf(-z) - 2.0 * owens_t(-z, -alpha);
        let log_upper = log_small_side(-z, -alpha, upper);
        (-log_upper.exp()).ln_1p()
    };
    if log_f == f64::NEG_INFINITY {
        return (log_f, 0.0, 0.0);
    }
    let log_density =
        std::f64::consts::LN_2 - 0.5 * z * z - HALF_LOG_TWO_PI + std_normal_lcdf(alpha * z);
    let d_z = (log_density - log_f).exp();
    let s = 1.0 + alpha * alpha;
    // exp(−z²s/2)/(πs) → 0 as s → ∞ (0 · ∞ in the exponent at z = 0 is read as that limit).
    let d_alpha = if s.is_finite() {
        -(-0.5 * z * z * s - (std::f64::consts::PI * s).ln() - log_f).exp()
    } else {
        0.0
    };
    (log_f, d_z, d_alpha)
}

/// log F(z; α) given `naive` = Φ(z) − 2T(z, α) < ½: its log while it is above 1e-3, else the
/// log-space quadrature of 2φ(t)Φ(αt) over (−∞, z], started at z with a first piece of
/// ¼/(|d log f/dt| + √(1 + α²)) (the local decay scale of the integrand).
fn log_small_side(z: f64, alpha: f64, naive: f64) -> f64 {
    if naive > 1e-3 {
        return naive.ln();
    }
    let log_f = |t: f64| {
        std::f64::consts::LN_2 - 0.5 * t * t - HALF_LOG_TWO_PI + std_normal_lcdf(alpha * t)
    };
    let slope = (-z + alpha * std_normal_lcdf_deriv(alpha * z)).abs();
    let h = 0.25 / (slope + (1.0 + alpha * alpha).sqrt());
    super::quadrature::graded_log_integral(log_f, |_| 0.0, z, f64::NEG_INFINITY, h).log_value
}

/// Skew normal log CDF (or log CCDF) summed over `n` elements; args = (y, ξ, ω, α), z = (y − ξ)/ω.
///
/// From [`std_lcdf`]: the complement is log(1 − F(z; α)) = log F(−z; −α). With
/// g = d log F/dz: ∂/∂y = g/ω, ∂/∂ξ = −g/ω, ∂/∂ω = −g z/ω, ∂/∂α = d log F/dα.
/// Errors: as [`lpdf`].
pub fn lcdf(args: &[Arg], is_var: &[bool], complement: bool, n: usize) -> Result<Term, DistError> {
    check_each(Family::SkewNormal.sig(), args, 0, NOT_NAN, |x| !x.is_nan())?;
    check_params(args)?;
    let (y, xi, omega, alpha) = (args[0], args[1], args[2], args[3]);
    let mut term = Term::zeros(args, is_var);
    let mut value = 0.0;
    for i in 0..n {
        let inv_w = 1.0 / omega.at(i);
        let z = (y.at(i) - xi.at(i)) * inv_w;
        let a = alpha.at(i);
        let (v, g, ga) = if complement {
            let (v, g, ga) = std_lcdf(-z, -a);
            (v, -g, -ga)
        } else {
            std_lcdf(z, a)
        };
        value += v;
        if v.is_finite() && z.is_finite() {
            term.add_partial(0, i, g * inv_w);
            term.add_partial(1, i, -g * inv_w);
            term.add_partial(2, i, -g * z * inv_w);
            term.add_partial(3, i, ga);
        }
    }
    term.value = value;
    Ok(term)
}

/// One draw from skew_normal(ξ, ω, α) by Azzalini's representation: with δ = α/√(1 + α²) and
/// u₀, v independent standard normals, u₁ = δu₀ + √(1 − δ²) v; y = ξ + ω·(u₁ if u₀ ≥ 0 else −u₁).
/// `params` = (ξ, ω, α), checked.
pub fn rng<R: Rng + ?Sized>(params: &[f64], rng: &mut R) -> f64 {
    let (xi, omega, alpha) = (params[0], params[1], params[2]);
    let delta = alpha / (1.0 + alpha * alpha).sqrt();
    let u0: f64 = StandardNormal.sample(rng);
    let v: f64 = StandardNormal.sample(rng);
    let u1 = delta * u0 + (1.0 - delta * delta).sqrt() * v;
    xi + omega * if u0 >= 0.0 { u1 } else { -u1 }
}
