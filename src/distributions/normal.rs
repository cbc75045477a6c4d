//! Normal distribution: log p(y | μ, σ) = −½ log(2π) − log σ − ½((y − μ)/σ)².

use super::args::requirement::{FINITE, NOT_NAN, POSITIVE_FINITE};
use super::args::{Arg, DistError, Term, check_each, positive_finite};
use super::registry::Family;
use rand::Rng;
use rand_distr::Distribution;

use super::cdf::location_scale;
use super::special::{HALF_LOG_TWO_PI, std_normal_lcdf, std_normal_lcdf_deriv};

/// Checks μ finite and σ > 0 finite (args[1..]; Stan's `normal_lpdf` checks).
pub fn check_params(args: &[Arg]) -> Result<(), DistError> {
    let sig = Family::Normal.sig();
    check_each(sig, args, 1, FINITE, f64::is_finite)?;
    check_each(sig, args, 2, POSITIVE_FINITE, positive_finite)
}

/// Normal log density summed over `n` broadcast elements; args = (y, mu, sigma).
/// Partials: ∂/∂y = −z/σ, ∂/∂μ = z/σ, ∂/∂σ = (z² − 1)/σ with z = (y − μ)/σ.
/// Errors: y NaN, μ not finite, σ not positive finite.
pub fn lpdf(args: &[Arg], is_var: &[bool], propto: bool, n: usize) -> Result<Term, DistError> {
    check_params(args)?;
    let (y, mu, sigma) = (args[0], args[1], args[2]);
    let mut term = Term::zeros(args, is_var);
    if propto && !is_var.iter().any(|&v| v) {
        return Ok(term);
    }
    let include_const = !propto;
    let include_log_sigma = !propto || is_var[2];
    let value = {
        let [p0, p1, p2] = &mut term.partials[..] else {
            unreachable!("three arguments were checked")
        };
        let sinks = [Sink::of(p0), Sink::of(p1), Sink::of(p2)];
        // One monomorphised loop per shape (scalar or vector) of each argument.
        use Arg::{Scalar as Sc, Vector as Ve};
        match (y, mu, sigma) {
            (Sc(y), Sc(m), Sc(s)) => pass(y, m, Hoist::new(s), sinks, include_log_sigma, n),
            (Ve(y), Sc(m), Sc(s)) => pass(y, m, Hoist::new(s), sinks, include_log_sigma, n),
            (Sc(y), Ve(m), Sc(s)) => pass(y, m, Hoist::new(s), sinks, include_log_sigma, n),
            (Ve(y), Ve(m), Sc(s)) => pass(y, m, Hoist::new(s), sinks, include_log_sigma, n),
            (Sc(y), Sc(m), Ve(s)) => pass(y, m, s, sinks, include_log_sigma, n),
            (Ve(y), Sc(m), Ve(s)) => pass(y, m, s, sinks, include_log_sigma, n),
            (Sc(y), Ve(m), Ve(s)) => pass(y, m, s, sinks, include_log_sigma, n),
            (Ve(y), Ve(m), Ve(s)) => pass(y, m, s, sinks, include_log_sigma, n),
        }
    };
    let mut value = value;
    if include_const {
        value -= HALF_LOG_TWO_PI * n as f64;
    }
    term.value = value;
    Ok(term)
}

/// An argument of [`pass`] read at broadcast element `i` (a scalar: itself).
trait At: Copy {
    fn at(self, i: usize) -> f64;
}

impl At for f64 {
    #[inline(always)]
    fn at(self, _: usize) -> f64 {
        self
    }
}

impl At for &[f64] {
    #[inline(always)]
    fn at(self, i: usize) -> f64 {
        self[i]
    }
}

/// The scale σ of [`pass`] at element `i`: 1/σ and log σ, computed once for a scalar σ.
trait Scale: Copy {
    fn inv(self, i: usize) -> f64;
    fn log(self, i: usize) -> f64;
}

/// A scalar σ with 1/σ and log σ computed once (as [`super::args::Hoisted`]).
#[derive(Clone, Copy)]
struct Hoist(f64, f64);

impl Hoist {
    fn new(s: f64) -> Hoist {
        Hoist(s.recip(), s.ln())
    }
}

impl Scale for Hoist {
    #[inline(always)]
    fn inv(self, _: usize) -> f64 {
        self.0
    }
    #[inline(always)]
    fn log(self, _: usize) -> f64 {
        self.1
    }
}

impl Scale for &[f64] {
    #[inline(always)]
    fn inv(self, i: usize) -> f64 {
        self[i].recip()
    }
    #[inline(always)]
    fn log(self, i: usize) -> f64 {
        self[i].ln()
    }
}

/// Where the partials of one argument go: nowhere (a constant), summed into one (a scalar
/// broadcast), or one per element.
enum Sink<'a> {
    None,
    Sum(&'a mut f64),
    Each(&'a mut [f64]),
}

impl<'a> Sink<'a> {
    /// The sink of a partial buffer of [`Term::zeros`] (as [`Term::add_partial`]).
    fn of(p: &'a mut [f64]) -> Sink<'a> {
        match p.len() {
            0 => Sink::None,
            1 => Sink::Sum(&mut p[0]),
            _ => Sink::Each(p),
        }
    }

    #[inline(always)]
    fn add(&mut self, i: usize, d: f64) {
        match self {
            Sink::None => {}
            Sink::Sum(p) => **p += d,
            Sink::Each(p) => p[i] += d,
        }
    }
}

/// The loop of [`lpdf`] over `n` broadcast elements for one shape of the arguments: returns
/// Σ −½z² (− log σ when `log_sigma`) and adds the partials into `sinks`, with the operations of
/// the generic loop in the same order (so the same bits whatever the shape).
#[inline(always)]
fn pass(
    y: impl At,
    mu: impl At,
    sigma: impl Scale,
    sinks: [Sink; 3],
    log_sigma: bool,
    n: usize,
) -> f64 {
    let [mut p0, mut p1, mut p2] = sinks;
    let mut value = 0.0;
    for i in 0..n {
        let inv_s = sigma.inv(i);
        let z = (y.at(i) - mu.at(i)) * inv_s;
        value -= 0.5 * z * z;
        if log_sigma {
            value -= sigma.log(i);
        }
        p0.add(i, -z * inv_s);
        p1.add(i, z * inv_s);
        p2.add(i, (z * z - 1.0) * inv_s);
    }
    value
}

/// Normal log CDF (or log CCDF) summed over `n` elements; args = (y, μ, σ).
///
/// log Φ(z) via [`std_normal_lcdf`] (libm erfc, asymptotic series in the far tail), so
/// `normal_lcdf(-40 | 0, 1)` is −804.608… rather than −∞; the complement is log Φ(−z).
/// Errors: as [`lpdf`].
pub fn lcdf(args: &[Arg], is_var: &[bool], complement: bool, n: usize) -> Result<Term, DistError> {
    check_each(Family::Normal.sig(), args, 0, NOT_NAN, |x| !x.is_nan())?;
    check_params(args)?;
    Ok(location_scale(args, is_var, complement, n, |z| {
        (std_normal_lcdf(z), std_normal_lcdf_deriv(z))
    }))
}

/// One draw from normal(μ, σ); `params` = (μ, σ), already checked by [`check_params`].
pub fn rng<R: Rng + ?Sized>(params: &[f64], rng: &mut R) -> f64 {
    rand_distr::Normal::new(params[0], params[1])
        .expect("parameters were checked by check_params")
        .sample(rng)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scalar-σ loops give the general loop's value and partials bit for bit: the general
    /// loop runs with σ as a vector of n equal values, whose per-element σ partials summed in
    /// order are the scalar σ's partial; every operand form, with and without constants.
    #[test]
    fn scalar_sigma_loops_match_the_general_loop() {
        let n = 37;
        let ys: Vec<f64> = (0..n).map(|i| ((i as f64) * 0.91).sin() * 3.0).collect();
        let ms: Vec<f64> = (0..n).map(|i| ((i as f64) * 0.37).cos() - 0.2).collect();
        let s = 0.73;
        let ss = vec![s; n];
        for (y, m) in [
            (Arg::Vector(&ys), Arg::Vector(&ms)),
            (Arg::Vector(&ys), Arg::Scalar(0.4)),
            (Arg::Scalar(1.3), Arg::Vector(&ms)),
        ] {
            for is_var in [
                [false, true, true],
                [true, false, false],
                [true, true, false],
            ] {
                for propto in [false, true] {
                    let fast = lpdf(&[y, m, Arg::Scalar(s)], &is_var, propto, n).unwrap();
                    let general = lpdf(&[y, m, Arg::Vector(&ss)], &is_var, propto, n).unwrap();
                    assert_eq!(fast.value.to_bits(), general.value.to_bits());
                    for k in 0..2 {
                        let (f, g) = (&fast.partials[k], &general.partials[k]);
                        assert_eq!(f.len(), g.len());
                        for (a, b) in f.iter().zip(g) {
                            assert_eq!(a.to_bits(), b.to_bits(), "argument {k}");
                        }
                    }
                    if is_var[2] {
                        let summed = general.partials[2].iter().fold(0.0, |acc, d| acc + d);
                        assert_eq!(fast.partials[2][0].to_bits(), summed.to_bits());
                    }
                }
            }
        }
        // A value off by one ulp would show: the loops agree with the closed form.
        let t = lpdf(
            &[Arg::Scalar(1.0), Arg::Scalar(0.0), Arg::Scalar(2.0)],
            &[true; 3],
            false,
            1,
        )
        .unwrap();
        let want = -0.5 * (2.0 * std::f64::consts::PI).ln() - 2f64.ln() - 0.125;
        assert!((t.value - want).abs() < 1e-15);
    }
}
