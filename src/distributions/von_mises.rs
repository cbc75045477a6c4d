//! Von Mises distribution (Stan Functions Reference, "Von Mises distribution"):
//! p(y | μ, κ) = exp(κ cos(y − μ)) / (2π I₀(κ)), normalised over any interval of length 2π.

use super::args::requirement::FINITE;
use super::args::{Arg, DistError, Term, check_each};
use super::registry::Family;
use super::special::log_bessel_i0_and_ratio;
use rand::Rng;
use rand_distr::Distribution;

const LOG_TWO_PI: f64 = 1.837_877_066_409_345_5;

/// Checks μ finite and κ ≥ 0 finite (args[1..]; Stan's `von_mises_lpdf` checks).
pub fn check_params(args: &[Arg]) -> Result<(), DistError> {
    let sig = Family::VonMises.sig();
    check_each(sig, args, 1, FINITE, f64::is_finite)?;
    check_each(sig, args, 2, "nonnegative and finite", |x| {
        x >= 0.0 && x.is_finite()
    })
}

/// Von Mises log density summed over `n` broadcast elements; args = (y, μ, κ).
///
/// ∂/∂y = −κ sin(y − μ), ∂/∂μ = κ sin(y − μ), ∂/∂κ = cos(y − μ) − I₁(κ)/I₀(κ). Under `~`,
/// log 2π is dropped, and log I₀(κ) unless κ is a parameter.
/// Errors: y or μ not finite, κ negative or not finite.
pub fn lpdf(args: &[Arg], is_var: &[bool], propto: bool, n: usize) -> Result<Term, DistError> {
    check_each(Family::VonMises.sig(), args, 0, FINITE, f64::is_finite)?;
    check_params(args)?;
    let mut term = Term::zeros(args, is_var);
    if propto && !is_var.iter().any(|&v| v) {
        return Ok(term);
    }
    let (y, mu, kappa) = (args[0], args[1], args[2]);
    let mut value = 0.0;
    for i in 0..n {
        let k = kappa.at(i);
        let d = y.at(i) - mu.at(i);
        let (s, c) = d.sin_cos();
        value += k * c;
        let (log_i0, ratio) = log_bessel_i0_and_ratio(k);
        if !propto || is_var[2] {
            value -= log_i0;
        }
        term.add_partial(0, i, -k * s);
        term.add_partial(1, i, k * s);
        term.add_partial(2, i, c - ratio);
    }
    if !propto {
        value -= LOG_TWO_PI * n as f64;
    }
    term.value = value;
    Ok(term)
}

/// One draw from von_mises(μ, κ) by the rejection method of Best & Fisher (1979, "Efficient
/// simulation of the von Mises distribution", Appl. Statist. 28, 152–157), in
/// [μ′ − π, μ′ + π] with μ′ = μ reduced modulo 2π into [−π, π) (as Stan's `von_mises_rng`).
/// κ below 1e-8 gives a uniform angle. `params` = (μ, κ), checked.
pub fn rng<R: Rng + ?Sized>(params: &[f64], rng: &mut R) -> f64 {
    use std::f64::consts::PI;
    let (mu, kappa) = (params[0], params[1]);
    let centre = (mu + PI).rem_euclid(2.0 * PI) - PI;
    let unif = |rng: &mut R| -> f64 { rand_distr::Open01.sample(rng) };
    if kappa < 1e-8 {
        return centre + PI * (2.0 * unif(rng) - 1.0);
    }
    if kappa > 1e6 {
        // Best & Fisher's constants overflow as κ grows (4κ² is infinite at κ = 1e300, and the
        // loop below would never accept); there von Mises(μ, κ) is normal(μ, 1/√κ) to O(1/κ)
        // (Mardia & Jupp 2000, §3.5.4), far below the spread 1e-3 it leaves
        let z: f64 = rand_distr::StandardNormal.sample(rng);
        return centre + (z / kappa.sqrt()).clamp(-PI, PI);
    }
    let tau = 1.0 + (1.0 + 4.0 * kappa * kappa).sqrt();
    let rho = (tau - (2.0 * tau).sqrt()) / (2.0 * kappa);
    let r = (1.0 + rho * rho) / (2.0 * rho);
    let theta = loop {
        let z = (PI * unif(rng)).cos();
        let f = (1.0 + r * z) / (r + z);
        let c = kappa * (r - f);
        let u2 = unif(rng);
        if c * (2.0 - c) - u2 > 0.0 || (c / u2).ln() + 1.0 - c >= 0.0 {
            let sign = if unif(rng) > 0.5 { 1.0 } else { -1.0 };
            break sign * f.clamp(-1.0, 1.0).acos();
        }
    };
    centre + theta
}
