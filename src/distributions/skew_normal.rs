//! Skew normal distribution (Stan Functions Reference, "Skew normal distribution"):
//! p(y | ξ, ω, α) = 1/(ω√(2π)) exp(−z²/2) (1 + erf(α z/√2)), z = (y − ξ)/ω.
//!
//! Since 1 + erf(αz/√2) = 2Φ(αz), the log density is computed as
//! log 2 − log ω − ½ log 2π − z²/2 + log Φ(αz), with log Φ accurate in the far lower tail.

use super::args::requirement::{FINITE, NOT_NAN, POSITIVE_FINITE};
use super::args::{Arg, DistError, Hoisted, Term, check_each, positive_finite};
use super::registry::Family;
use super::special::{HALF_LOG_TWO_PI, std_normal_lcdf, std_normal_lcdf_deriv};
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
