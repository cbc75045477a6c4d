//! Normal distribution: log p(y | μ, σ) = −½ log(2π) − log σ − ½((y − μ)/σ)².

use super::args::requirement::{FINITE, NOT_NAN, POSITIVE_FINITE};
use super::args::{Arg, DistError, Hoisted, Term, check_each, positive_finite};
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
    if let Arg::Scalar(s) = sigma {
        let mut value = scalar_sigma(&mut term, y, mu, s, include_log_sigma, n);
        if include_const {
            value -= HALF_LOG_TWO_PI * n as f64;
        }
        term.value = value;
        return Ok(term);
    }
    let inv_sigma = Hoisted::new(sigma, f64::recip);
    let log_sigma = Hoisted::new(sigma, f64::ln);
    let mut value = 0.0;
    for i in 0..n {
        let inv_s = inv_sigma.at(i);
        let z = (y.at(i) - mu.at(i)) * inv_s;
        value -= 0.5 * z * z;
        if include_log_sigma {
            value -= log_sigma.at(i);
        }
        term.add_partial(0, i, -z * inv_s);
        term.add_partial(1, i, z * inv_s);
        term.add_partial(2, i, (z * z - 1.0) * inv_s);
    }
    if include_const {
        value -= HALF_LOG_TWO_PI * n as f64;
    }
    term.value = value;
    Ok(term)
}

/// The loop of [`lpdf`] for a scalar σ (a likelihood `y ~ normal(mu, sigma)` over a vector, or
/// a prior over a vector of parameters): straight loops over slices, one per operand form, in
/// place of the per-element broadcasting of the general loop. Returns the value without the
/// constant term and fills `term`'s partials.
///
/// The arithmetic, and the order of every sum, is that of the general loop (value −= ½z², then
/// −= log σ, element by element; scalar partials summed from 0 in element order; a vector
/// partial is `0 + d` as the general loop's `+=` on a zeroed buffer), so values and gradients
/// are bit-identical to it.
fn scalar_sigma(
    term: &mut Term,
    y: Arg,
    mu: Arg,
    sigma: f64,
    include_log_sigma: bool,
    n: usize,
) -> f64 {
    let inv_s = sigma.recip();
    let log_s = sigma.ln();
    // z_i for the operand forms, as closures the compiler specialises per call site.
    #[inline(always)]
    fn run(
        term: &mut Term,
        n: usize,
        inv_s: f64,
        log_s: f64,
        include_log_sigma: bool,
        z: impl Fn(usize) -> f64,
    ) -> f64 {
        // Which partials are wanted: per element (a vector argument), summed (a scalar one) or
        // none, for y and μ; summed for σ.
        let len = |k: usize| term.partials[k].len();
        let sum_y = len(0) == 1;
        let sum_m = len(1) == 1;
        let sum_s = len(2) == 1;
        // One loop for every running sum, so that their chains of dependent additions overlap
        // (each sum still adds its terms in element order).
        let (mut value, mut acc_y, mut acc_m, mut acc_s) = (0.0, 0.0, 0.0, 0.0);
        for i in 0..n {
            let zi = z(i);
            value -= 0.5 * zi * zi;
            if include_log_sigma {
                value -= log_s;
            }
            if sum_y {
                acc_y += -zi * inv_s;
            }
            if sum_m {
                acc_m += zi * inv_s;
            }
            if sum_s {
                acc_s += (zi * zi - 1.0) * inv_s;
            }
        }
        for (k, sum, acc) in [(0, sum_y, acc_y), (1, sum_m, acc_m), (2, sum_s, acc_s)] {
            if sum {
                term.partials[k][0] += acc;
            }
        }
        // ∂/∂y = −z/σ and ∂/∂μ = z/σ per element of a vector argument.
        for (k, sign) in [(0usize, -1.0f64), (1, 1.0)] {
            let p = &mut term.partials[k];
            if p.len() > 1 {
                for (i, pi) in p.iter_mut().enumerate().take(n) {
                    *pi = 0.0 + sign * z(i) * inv_s;
                }
            }
        }
        value
    }
    match (y, mu) {
        (Arg::Vector(y), Arg::Vector(m)) => run(term, n, inv_s, log_s, include_log_sigma, |i| {
            (y[i] - m[i]) * inv_s
        }),
        (Arg::Vector(y), Arg::Scalar(m)) => run(term, n, inv_s, log_s, include_log_sigma, |i| {
            (y[i] - m) * inv_s
        }),
        (Arg::Scalar(y), Arg::Vector(m)) => run(term, n, inv_s, log_s, include_log_sigma, |i| {
            (y - m[i]) * inv_s
        }),
        (Arg::Scalar(y), Arg::Scalar(m)) => run(term, n, inv_s, log_s, include_log_sigma, |_| {
            (y - m) * inv_s
        }),
    }
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
