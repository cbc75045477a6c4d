//! Von Mises distribution (Stan Functions Reference, "Von Mises distribution"):
//! p(y | μ, κ) = exp(κ cos(y − μ)) / (2π I₀(κ)), normalised over any interval of length 2π.
//! The CDFs are Stan's, on [−π, π] ([`lcdf`]).

use super::args::requirement::FINITE;
use super::args::{Arg, DistError, Term, check_each};
use super::registry::Family;
use super::special::{log_bessel_i0_and_ratio, std_normal_cdf};
use rand::Rng;
use rand_distr::Distribution;
use std::f64::consts::PI;

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

/// The requirement on the variate of the von Mises CDFs (Stan: `check_bounded(x, −π, π)`).
const IN_MINUS_PI_PI: &str = "in the interval [-pi, pi]";

/// Above this concentration the periodic part of the CDF comes from the corrected normal
/// approximation ([`periodic_normal`]) instead of the series ([`periodic_series`]).
const SERIES_MAX_KAPPA: f64 = 1e4;

/// Below this mass a side of the CDF is recomputed by quadrature ([`log_mass`]).
const SMALL_MASS: f64 = 1e-4;

/// The centred von Mises CDF on [−π, π] is H(θ) = ½ + θ/(2π) + P(θ) with a periodic part P
/// (P(±π) = 0). Returns (P(θ), ∂P/∂κ) for θ ∈ [−π, π] by the Fourier series
/// P(θ) = (1/π) Σₖ₌₁ rₖ sin(kθ)/k, rₖ = Iₖ(κ)/I₀(κ) (Mardia & Jupp 2000, *Directional
/// Statistics*, eq. 3.5.29; the series Hill 1977 "Algorithm 518: Incomplete Bessel function I₀.
/// The von Mises distribution", ACM TOMS 3, 279–284, uses for small κ). The ratios come from
/// the backward recurrence Iₖ/Iₖ₋₁ = 1/(2k/κ + Iₖ₊₁/Iₖ) (stable, Gautschi 1967), started
/// √(80κ) + 30 terms out, where rₖ ≈ exp(−k²/2κ) is below e^−40; and
/// drₖ/dκ = (rₖ₋₁ + rₖ₊₁)/2 − rₖ r₁ from I′ₖ = (Iₖ₋₁ + Iₖ₊₁)/2.
fn periodic_series(thetas: [f64; 2], kappa: f64) -> [(f64, f64); 2] {
    let terms = (80.0 * kappa).sqrt() as usize + 30;
    let mut ratios = vec![0.0; terms + 2];
    // ratios[k] = I_k / I_{k-1}, backward from k = terms + 1 (ratio 0 beyond).
    let mut next = 0.0;
    for k in (1..=terms + 1).rev() {
        next = kappa / (2.0 * k as f64 + kappa * next);
        ratios[k] = next;
    }
    // r[k] = I_k / I_0.
    let mut r = vec![1.0; terms + 2];
    for k in 1..=terms + 1 {
        r[k] = r[k - 1] * ratios[k];
    }
    let mut out = [(0.0, 0.0); 2];
    for (o, &theta) in out.iter_mut().zip(&thetas) {
        let (mut p, mut dp) = (0.0, 0.0);
        for k in 1..=terms {
            let kf = k as f64;
            let sk = (kf * theta).sin() / kf;
            p += r[k] * sk;
            dp += (0.5 * (r[k - 1] + r[k + 1]) - r[k] * r[1]) * sk;
        }
        *o = (p / std::f64::consts::PI, dp / std::f64::consts::PI);
    }
    out
}

/// (P(θ), ∂P/∂κ) as [`periodic_series`], for large κ, from the normal approximation in
/// u = 2√κ sin(θ/2) with its first two corrections: since cos θ = 1 − s²/2 and
/// dθ = ds/√(1 − s²/4) for s = 2 sin(θ/2), H(θ) = N(u)/D with
/// N(u) = Φ(u) + c₁(Φ − uφ) + c₂(3Φ − (u³ + 3u)φ), c₁ = 1/(8κ), c₂ = 3/(128κ²), D = 1 + c₁ + 3c₂
/// (the moments of φ of the expansion (1 − s²/4)^−½ = 1 + s²/8 + 3s⁴/128 + …; the same
/// expansion gives the asymptotic series of 2π I₀(κ), Hill 1977 uses a related normal
/// approximation). The error is O(κ⁻³), below 1e-13 for κ > 10⁴.
fn periodic_normal(thetas: [f64; 2], kappa: f64) -> [(f64, f64); 2] {
    let c1 = 1.0 / (8.0 * kappa);
    let c2 = 3.0 / (128.0 * kappa * kappa);
    let d = 1.0 + c1 + 3.0 * c2;
    let dd = -(c1 + 6.0 * c2) / kappa;
    let root = kappa.sqrt();
    let mut out = [(0.0, 0.0); 2];
    for (o, &theta) in out.iter_mut().zip(&thetas) {
        let u = 2.0 * root * (0.5 * theta).sin();
        let (big, small) = (std_normal_cdf(u), (-0.5 * u * u).exp() / (2.0 * PI).sqrt());
        // Where φ(u) underflows (|u| > 38) the terms in φ vanish; skipping them avoids 0 · ∞
        // from the powers of u at huge κ.
        let (m2, m4, slope) = if small > 0.0 {
            (
                big - u * small,
                3.0 * big - (u * u * u + 3.0 * u) * small,
                small * (1.0 + c1 * u * u + c2 * u.powi(4)) * u / (2.0 * kappa),
            )
        } else {
            (big, 3.0 * big, 0.0)
        };
        let num = big + c1 * m2 + c2 * m4;
        // ∂N/∂u · ∂u/∂κ (∂u/∂κ = u/(2κ)) plus ∂N/∂κ at fixed u.
        let dnum = slope - c1 / kappa * m2 - 2.0 * c2 / kappa * m4;
        let h = num / d;
        let dh = dnum / d - num * dd / (d * d);
        *o = (h - 0.5 - theta / (2.0 * PI), dh);
    }
    out
}

/// θ reduced modulo 2π into [−π, π).
fn reduce(theta: f64) -> f64 {
    (theta + PI).rem_euclid(2.0 * PI) - PI
}

/// log of the mass that von_mises(0, κ) puts on [a, a + len] (len ∈ [0, 2π]), with the mean of
/// cos t over it under the density (for ∂/∂κ): graded quadrature in log space
/// ([`super::quadrature::graded_log_integral`]) of exp(κ(cos t − 1)), the range cut at the
/// mode and antimode (multiples of π) so that each piece is monotone and is integrated from its
/// larger end, with a first width ¼/(κ|sin t₀| + √κ + 1). Accurate to rounding for small masses,
/// where the series' absolute error would dominate.
fn log_mass(a: f64, len: f64, kappa: f64, log_norm: f64) -> (f64, f64) {
    let b = a + len;
    let mut cuts = vec![a];
    let mut m = (a / PI).floor() + 1.0;
    while m * PI < b {
        cuts.push(m * PI);
        m += 1.0;
    }
    cuts.push(b);
    let (mut max, mut sum, mut sum_c) = (f64::NEG_INFINITY, 0.0f64, 0.0f64);
    for w in cuts.windows(2) {
        let (lo, hi) = (w[0], w[1]);
        if hi <= lo {
            continue;
        }
        let (start, end) = if lo.cos() >= hi.cos() {
            (lo, hi)
        } else {
            (hi, lo)
        };
        let h = 0.25 / (kappa * start.sin().abs() + kappa.sqrt() + 1.0);
        let r = super::quadrature::graded_log_integral(
            |t| kappa * (t.cos() - 1.0),
            f64::cos,
            start,
            end,
            h,
        );
        if r.log_value == f64::NEG_INFINITY {
            continue;
        }
        if r.log_value > max {
            let s = (max - r.log_value).exp();
            sum *= s;
            sum_c *= s;
            max = r.log_value;
        }
        let e = (r.log_value - max).exp();
        sum += e;
        sum_c += r.mean_g * e;
    }
    if sum == 0.0 {
        return (f64::NEG_INFINITY, 0.0);
    }
    (max + sum.ln() + kappa - log_norm, sum_c / sum)
}

/// One side of the von Mises CDF: its log and the partials of that log in (x, μ, κ).
#[derive(Clone, Copy, Debug)]
struct Side {
    log: f64,
    d: [f64; 3],
}

/// log F and log(1 − F) of von_mises(μ, κ) at x ∈ [−π, π], with F(x) = ∫₋π^x f(t) dt as Stan
/// defines `von_mises_cdf` (the mass below x on [−π, π], whatever μ), and their partials.
///
/// In centred coordinates F is the mass of [a, b] = [−π − μ, x − μ], so
/// F = (x + π)/(2π) + P(b) − P(a) with the periodic part P of [`periodic_series`] (κ ≤ 10⁴) or
/// [`periodic_normal`]; ∂F/∂x = f(b), ∂F/∂μ = f(a) − f(b), ∂F/∂κ = ∂P/∂κ(b) − ∂P/∂κ(a). A
/// side whose mass is below 1e-4 is recomputed by [`log_mass`], with
/// ∂ log(mass)/∂κ = E[cos t | side] − I₁(κ)/I₀(κ).
fn cdf_sides(x: f64, mu: f64, kappa: f64) -> (Side, Side) {
    let (log_i0, ratio) = log_bessel_i0_and_ratio(kappa);
    let log_norm = LOG_TWO_PI + log_i0;
    if x == PI {
        // The whole circle: F = 1 exactly (the two reduced ends would differ by rounding).
        let none = Side {
            log: f64::NEG_INFINITY,
            d: [0.0; 3],
        };
        return (
            Side {
                log: 0.0,
                d: [0.0; 3],
            },
            none,
        );
    }
    let a = reduce(-PI - mu);
    let b = reduce(x - mu);
    let parts = if kappa <= SERIES_MAX_KAPPA {
        periodic_series([a, b], kappa)
    } else {
        periodic_normal([a, b], kappa)
    };
    let f = ((x + PI) / (2.0 * PI) + parts[1].0 - parts[0].0).clamp(0.0, 1.0);
    let df_kappa = parts[1].1 - parts[0].1;
    let log_fa = kappa * a.cos() - log_norm;
    let log_fb = kappa * b.cos() - log_norm;
    let side = |log: f64, sign: f64, d_kappa_log: Option<f64>| -> Side {
        if log == f64::NEG_INFINITY {
            return Side { log, d: [0.0; 3] };
        }
        let over = |l: f64| (l - log).exp();
        Side {
            log,
            d: [
                sign * over(log_fb),
                sign * (over(log_fa) - over(log_fb)),
                d_kappa_log.unwrap_or(sign * df_kappa * (-log).exp()),
            ],
        }
    };
    // The smaller side by quadrature when it is below SMALL_MASS, the other side from it.
    let small_lower = if f < SMALL_MASS {
        let (log, mean_cos) = log_mass(a, x + PI, kappa, log_norm);
        Some((log, mean_cos - ratio))
    } else {
        None
    };
    let small_upper = if 1.0 - f < SMALL_MASS {
        let (log, mean_cos) = log_mass(b, PI - x, kappa, log_norm);
        Some((log, mean_cos - ratio))
    } else {
        None
    };
    let (lower, upper) = match (small_lower, small_upper) {
        (Some((log, dk)), _) => {
            let lower = side(log, 1.0, Some(dk));
            // log(1 − F) with d log(1 − F) = −F/(1 − F) · d log F.
            let log_upper = (-log.exp()).ln_1p();
            let w = -(log - log_upper).exp();
            let upper = Side {
                log: log_upper,
                d: lower.d.map(|d| if w == 0.0 { 0.0 } else { w * d }),
            };
            (lower, upper)
        }
        (None, Some((log, dk))) => {
            let upper = side(log, -1.0, Some(dk));
            let log_lower = (-log.exp()).ln_1p();
            let w = -(log - log_lower).exp();
            let lower = Side {
                log: log_lower,
                d: upper.d.map(|d| if w == 0.0 { 0.0 } else { w * d }),
            };
            (lower, upper)
        }
        (None, None) => (side(f.ln(), 1.0, None), side((-f).ln_1p(), -1.0, None)),
    };
    (lower, upper)
}

/// Von Mises log CDF (or log CCDF) summed over `n` elements; args = (y, μ, κ), y ∈ [−π, π].
///
/// Stan's definition (Stan Functions Reference, "Von Mises distribution"): F(y) =
/// ∫₋π^y exp(κ cos(t − μ)) dt / (2π I₀(κ)), the mass below y on [−π, π] for any real μ; see
/// [`cdf_sides`] for the method (series, normal approximation, quadrature for small masses).
/// Errors: y outside [−π, π] or NaN, μ not finite, κ negative or not finite.
pub fn lcdf(args: &[Arg], is_var: &[bool], complement: bool, n: usize) -> Result<Term, DistError> {
    check_each(Family::VonMises.sig(), args, 0, IN_MINUS_PI_PI, |x| {
        (-PI..=PI).contains(&x)
    })?;
    check_params(args)?;
    let (y, mu, kappa) = (args[0], args[1], args[2]);
    let mut term = Term::zeros(args, is_var);
    let mut value = 0.0;
    for i in 0..n {
        let (lower, upper) = cdf_sides(y.at(i), mu.at(i), kappa.at(i));
        let s = if complement { upper } else { lower };
        value += s.log;
        for (k, d) in s.d.into_iter().enumerate() {
            term.add_partial(k, i, d);
        }
    }
    term.value = value;
    Ok(term)
}

/// One draw from von_mises(μ, κ) by the rejection method of Best & Fisher (1979, "Efficient
/// simulation of the von Mises distribution", Appl. Statist. 28, 152–157), in
/// [μ′ − π, μ′ + π] with μ′ = μ reduced modulo 2π into [−π, π) (as Stan's `von_mises_rng`).
/// κ below 1e-8 gives a uniform angle. `params` = (μ, κ), checked.
pub fn rng<R: Rng + ?Sized>(params: &[f64], rng: &mut R) -> f64 {
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
