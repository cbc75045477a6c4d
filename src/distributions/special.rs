//! Special functions shared by the families: stable log1p(exp), inverse logit, log1m(exp),
//! log-gamma and digamma (statrs), the standard normal log CDF, Owen's T function.

/// log |Γ(x)| for every real x, as Stan Math's `lgamma`: statrs' Lanczos approximation (about
/// 1e-15 relative accuracy) for x ≥ ½; exactly 0 at x = 1 and 2 (so that log C(n, 0) and
/// log C(n, n) are exactly 0 and a log mass cannot round above 0); the reflection
/// log |Γ(x)| = log π − log |sin πx| − log Γ(1 − x) for x < ½ (Abramowitz & Stegun 6.1.17; statrs
/// takes the log of a negative sine there and returns NaN); +∞ at the poles 0, −1, −2, … and at
/// ±∞; NaN for NaN.
#[inline]
pub fn lgamma(x: f64) -> f64 {
    if x == 1.0 || x == 2.0 {
        0.0
    } else if x >= 0.5 || x.is_nan() {
        statrs::function::gamma::ln_gamma(x)
    } else if x.is_infinite() || x == x.floor() {
        f64::INFINITY
    } else {
        let s = (std::f64::consts::PI * x).sin().abs();
        std::f64::consts::PI.ln() - s.ln() - lgamma(1.0 - x)
    }
}

/// ψ(x) = d/dx log Γ(x) for x > 0 (statrs).
#[inline]
pub fn digamma(x: f64) -> f64 {
    statrs::function::gamma::digamma(x)
}

/// log(1 + eˣ) without overflow for large x or loss of precision for very negative x.
#[inline]
pub fn log1p_exp(x: f64) -> f64 {
    if x > 0.0 {
        x + (-x).exp().ln_1p()
    } else {
        x.exp().ln_1p()
    }
}

/// The logistic sigmoid 1 / (1 + e⁻ˣ), evaluated without overflow.
#[inline]
pub fn inv_logit(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

/// log(1 − eˣ) for x ≤ 0 (−∞ at 0, NaN above), accurate near 0 and for very negative x (Mächler 2012, "Accurately
/// computing log(1 − exp(−|a|))", eq. 7: switch at −log 2).
#[inline]
pub fn log1m_exp(x: f64) -> f64 {
    if x > -std::f64::consts::LN_2 {
        (-x.exp_m1()).ln()
    } else {
        (-x.exp()).ln_1p()
    }
}

/// log(1 + e) for e in [0, 1], about three times faster than `f64::ln_1p` (glibc's log1p is the
/// hot spot of logistic regressions): a five-term Taylor series below 10⁻³ (truncation error
/// < e⁶/6, i.e. relative < 2·10⁻¹⁶), else `(1 + e).ln()`, whose rounding of 1 + e costs at most
/// 1.2·10⁻¹⁶ absolute, i.e. < 1.2·10⁻¹³ relative for e ≥ 10⁻³.
#[inline]
pub fn log1p_unit(e: f64) -> f64 {
    if e < 1e-3 {
        e * (1.0 - e * (0.5 - e * (1.0 / 3.0 - e * (0.25 - e * 0.2))))
    } else {
        (1.0 + e).ln()
    }
}

/// For a logit α: (log σ(α), log σ(−α), σ(α), σ(−α)), σ the logistic sigmoid, from one exp and
/// one log1p without overflow or cancellation: with e = exp(−|α|),
/// log σ(α) = −(max(−α, 0) + log1p(e)) and log σ(−α) = −(max(α, 0) + log1p(e)).
#[inline]
pub fn logit_terms(a: f64) -> (f64, f64, f64, f64) {
    let e = (-a.abs()).exp();
    let l = log1p_unit(e);
    let (big, small) = (1.0 / (1.0 + e), e / (1.0 + e));
    let (s, s_neg) = if a >= 0.0 { (big, small) } else { (small, big) };
    (-((-a).max(0.0) + l), -(a.max(0.0) + l), s, s_neg)
}

/// log(eˣ − eʸ) for x ≥ y, as x + log1m_exp(y − x) (the log probability of an interval from
/// two log CDFs, as needed by truncation T[L, U]): −∞ when x = y < +∞ (the empty
/// interval), NaN when x < y or x = y = +∞ (Stan Math's `log_diff_exp` edge values).
pub fn log_diff_exp(x: f64, y: f64) -> f64 {
    if x.is_nan() || y.is_nan() {
        return f64::NAN;
    }
    if x <= y {
        return if x == y && x < f64::INFINITY {
            f64::NEG_INFINITY
        } else {
            f64::NAN
        };
    }
    if y == f64::NEG_INFINITY {
        return x;
    }
    x + log1m_exp(y - x)
}

/// ½ log(2π).
pub const HALF_LOG_TWO_PI: f64 = 0.918_938_533_204_672_8;

/// log Φ(z), the standard normal log CDF, accurate in both tails.
///
/// Uses Φ(z) = ½ erfc(−z/√2) with libm's erfc; where erfc underflows (z < −37) it uses the
/// asymptotic series log Φ(z) ≈ −z²/2 − log(−z) − ½log(2π) + log(1 − 1/z² + 3/z⁴ − 15/z⁶)
/// (Abramowitz & Stegun 26.2.12).
pub fn std_normal_lcdf(z: f64) -> f64 {
    if z < -37.0 {
        let z2 = z * z;
        let series = 1.0 - 1.0 / z2 + 3.0 / (z2 * z2) - 15.0 / (z2 * z2 * z2);
        -0.5 * z2 - (-z).ln() - HALF_LOG_TWO_PI + series.ln()
    } else {
        (0.5 * libm::erfc(-z * std::f64::consts::FRAC_1_SQRT_2)).ln()
    }
}

/// d/dz log Φ(z) = φ(z)/Φ(z), computed from logs so that it stays accurate (≈ −z) in the far
/// lower tail.
///
/// Below −37 it is −z / s(z) with the series s of `std_normal_lcdf` (Φ(z) ≈ φ(z) s(z) / (−z)),
/// so that z² is never formed where it could overflow.
pub fn std_normal_lcdf_deriv(z: f64) -> f64 {
    if z < -37.0 {
        let z2 = z * z;
        let series = 1.0 - 1.0 / z2 + 3.0 / (z2 * z2) - 15.0 / (z2 * z2 * z2);
        -z / series
    } else {
        (-0.5 * z * z - HALF_LOG_TWO_PI - std_normal_lcdf(z)).exp()
    }
}

/// log I₀(κ) and the ratio I₁(κ)/I₀(κ) = d/dκ log I₀(κ) for κ ≥ 0 (modified Bessel functions of
/// the first kind, Abramowitz & Stegun 9.6.10 and 9.7.1).
///
/// For κ ≤ 30 the power series Iᵥ(κ) = Σₘ (κ/2)^{2m+ν} / (m! (m+ν)!) is summed to convergence
/// (all terms positive, so it is accurate to rounding); above, the asymptotic expansion
/// Iᵥ(κ) ≈ e^κ/√(2πκ) · Σₖ (−1)^k aₖ(ν)/κ^k with aₖ(ν) = Πⱼ₌₁ᵏ (4ν² − (2j − 1)²) / (k! 8^k),
/// truncated after 12 terms (its error is below 1e-17 relative for κ > 30).
pub fn log_bessel_i0_and_ratio(kappa: f64) -> (f64, f64) {
    if kappa <= 30.0 {
        let h = 0.25 * kappa * kappa;
        let (mut t0, mut s0) = (1.0f64, 1.0f64);
        let (mut t1, mut s1) = (0.5 * kappa, 0.5 * kappa);
        let mut m = 1.0;
        while t0 > 1e-17 * s0 || t1 > 1e-17 * s1 {
            t0 *= h / (m * m);
            t1 *= h / (m * (m + 1.0));
            s0 += t0;
            s1 += t1;
            m += 1.0;
        }
        (s0.ln(), s1 / s0)
    } else {
        let series = |nu2: f64| {
            let (mut term, mut sum) = (1.0f64, 1.0f64);
            for k in 1..=12 {
                let kf = k as f64;
                let odd = 2.0 * kf - 1.0;
                term *= -(4.0 * nu2 - odd * odd) / (kf * 8.0 * kappa);
                sum += term;
            }
            sum
        };
        let (a0, a1) = (series(0.0), series(1.0));
        (
            kappa - 0.5 * (2.0 * std::f64::consts::PI * kappa).ln() + a0.ln(),
            a1 / a0,
        )
    }
}

/// Φ(z), the standard normal CDF, from [`std_normal_lcdf`] (accurate in the lower tail).
#[inline]
pub fn std_normal_cdf(z: f64) -> f64 {
    std_normal_lcdf(z).exp()
}

/// Owen's T function T(h, a) = (1/2π) ∫₀ᵃ exp(−h²(1 + x²)/2) / (1 + x²) dx (Owen 1956, "Tables
/// for computing bivariate normal probabilities", Ann. Math. Statist. 27, 1075–1090), for every
/// real h and a, a = ±∞ included (T(h, ±∞) = ±½ Q(|h|) with Q(h) = 1 − Φ(h)); NaN for NaN.
///
/// T is even in h and odd in a, so the work is for h ≥ 0, a ≥ 0:
/// - a ≤ 1: the defining integral by graded Gauss–Legendre quadrature
///   ([`super::quadrature::graded_log_integral`], pieces of width ½/(1 + h), 1/(1 + h), … from
///   x = 0, where the integrand is largest). The integrand is positive and smooth, so the result
///   is accurate to about 1e-15 relative (this is the "well-conditioned quadrature" route of
///   Patefield & Tandy 2000, "Fast and accurate calculation of Owen's T function", J. Statist.
///   Software 5(5), in place of their six series);
/// - a > 1: Owen's reflection T(h, a) = ½Φ(h)Q(ah) + ½Φ(ah)Q(h) − T(ah, 1/a), which maps the
///   shape back into [0, 1] (written with the complements Q so that no term cancels for large h).
///
/// Checked against T(h, 1) = ½Φ(h)Q(h), T(0, a) = atan(a)/(2π) and mpmath quadrature.
pub fn owens_t(h: f64, a: f64) -> f64 {
    if h.is_nan() || a.is_nan() {
        return f64::NAN;
    }
    let (h, sign) = (h.abs(), a.signum());
    let a = a.abs();
    if a == 0.0 || h == f64::INFINITY {
        return 0.0;
    }
    let q = |x: f64| std_normal_cdf(-x);
    if a == f64::INFINITY {
        return sign * 0.5 * q(h);
    }
    if a > 1.0 {
        let ah = a * h;
        let t = 0.5 * std_normal_cdf(h) * q(ah) + 0.5 * std_normal_cdf(ah) * q(h)
            - owens_t(ah, 1.0 / a);
        return sign * t;
    }
    let half_h2 = 0.5 * h * h;
    let r = super::quadrature::graded_log_integral(
        |x| -half_h2 * (1.0 + x * x) - (x * x).ln_1p(),
        |_| 1.0,
        0.0,
        a,
        0.5 / (1.0 + h),
    );
    sign * r.log_value.exp() / (2.0 * std::f64::consts::PI)
}

/// log B(a, b) = log Γ(a) + log Γ(b) − log Γ(a + b).
#[inline]
pub fn lbeta(a: f64, b: f64) -> f64 {
    lgamma(a) + lgamma(b) - lgamma(a + b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log1p_unit_matches_log1p_across_the_unit_interval() {
        // both sides of the 1e-3 switch, tiny and zero arguments, and a fine grid
        let mut worst: f64 = 0.0;
        let mut e: f64 = 1e-300;
        while e <= 1.0 {
            let exact = e.ln_1p();
            worst = worst.max(((log1p_unit(e) - exact) / exact).abs());
            e *= 1.01;
        }
        for e in [0.999e-3, 1e-3, 1.001e-3, 0.5, 1.0] {
            let exact = f64::ln_1p(e);
            worst = worst.max(((log1p_unit(e) - exact) / exact).abs());
        }
        assert!(worst < 2e-13, "max relative error {worst:e}");
        assert_eq!(log1p_unit(0.0), 0.0);
    }

    #[test]
    fn stable_forms_match_naive_where_naive_is_accurate() {
        for &x in &[-3.0, -0.1, 0.0, 0.2, 5.0, 30.0] {
            let naive = (1.0f64 + f64::exp(x)).ln();
            assert!((log1p_exp(x) - naive).abs() <= 1e-14 * naive.abs());
            assert!((inv_logit(x) - 1.0 / (1.0 + f64::exp(-x))).abs() < 1e-15);
        }
        // Taylor: log(1 + ε) = ε − ε²/2 + …, ε = e⁻³⁰.
        let eps = (-30.0f64).exp();
        assert!((log1p_exp(-30.0) - (eps - 0.5 * eps * eps)).abs() < 1e-15 * eps);
        assert_eq!(log1p_exp(800.0), 800.0);
        assert!((log1p_exp(-800.0)).abs() < 1e-300);
        assert!((log1m_exp(-50.0) + (-50.0f64).exp()).abs() < 1e-15 * (-50.0f64).exp());
        for &x in &[-2.0, -0.7, -0.5, -1e-3] {
            let naive = (1.0 - f64::exp(x)).ln();
            assert!((log1m_exp(x) - naive).abs() < 1e-12 * naive.abs());
        }
        assert!((log1m_exp(-1e-20) - (1e-20f64).ln()).abs() < 1e-12);
    }

    #[test]
    fn log_diff_exp_matches_direct_form() {
        let (a, b) = (-0.3f64, -2.0f64);
        assert!((log_diff_exp(a, b) - (a.exp() - b.exp()).ln()).abs() < 1e-15);
        assert_eq!(log_diff_exp(-1.0, f64::NEG_INFINITY), -1.0);
        assert_eq!(log_diff_exp(-1.0, -1.0), f64::NEG_INFINITY);
        // Far tail: log(e⁻¹⁰⁰⁰ − e⁻¹⁰⁰¹) = −1000 + log(1 − e⁻¹).
        assert!(
            (log_diff_exp(-1000.0, -1001.0) - (-1000.0 + (1.0 - (-1.0f64).exp()).ln())).abs()
                < 1e-12
        );
    }

    #[test]
    fn logit_terms_are_consistent() {
        for &a in &[-800.0, -40.0, -1.0, 0.0, 0.5, 40.0, 800.0] {
            let (lp, ln, s, sn) = logit_terms(a);
            assert!((s + sn - 1.0).abs() < 1e-15);
            assert_eq!(s, inv_logit(a));
            assert_eq!(lp, -log1p_exp(-a));
            assert_eq!(ln, -log1p_exp(a));
        }
    }

    #[test]
    fn owens_t_matches_identities_and_mpmath() {
        use std::f64::consts::PI;
        let phi = std_normal_cdf;
        for &h in &[0.0, 0.3, 1.0, 2.5, 6.0] {
            // T(h, 1) = ½Φ(h)(1 − Φ(h)).
            let want = 0.5 * phi(h) * phi(-h);
            assert!((owens_t(h, 1.0) - want).abs() <= 1e-15 * want.max(1e-300) * 10.0);
        }
        for &a in &[0.1, 0.9, 1.0, 3.0, 50.0, -2.0] {
            let want = f64::atan(a) / (2.0 * PI);
            assert!((owens_t(0.0, a) - want).abs() < 1e-15, "T(0, {a})");
        }
        // mpmath 1.3 (mp.dps = 40): quad(exp(-h²(1+x²)/2)/(1+x²), [0, a]) / (2π).
        let rows = [
            (0.5, 0.3, 0.040_786_707_344_250_106),
            (2.0, 0.7, 0.010_182_312_033_928_250),
            (1.5, 3.0, 0.033_403_573_454_929_888),
            (0.1, 10.0, 0.226_799_696_433_498_99),
            (5.0, 0.5, 1.419_254_962_106_927_2e-7),
            (7.0, 2.0, 6.399_062_719_429_175e-13),
            (0.3, -0.8, -0.101_812_319_936_222_98),
            (-1.2, 4.0, 0.057_534_828_077_148_725),
        ];
        for (h, a, want) in rows {
            let got = owens_t(h, a);
            assert!(
                ((got - want) / want).abs() < 1e-13,
                "T({h}, {a}) = {got:e}, mpmath {want:e}"
            );
        }
        assert_eq!(owens_t(f64::INFINITY, 0.5), 0.0);
        assert!((owens_t(1.0, f64::INFINITY) - 0.5 * phi(-1.0)).abs() < 1e-16);
        assert!(owens_t(f64::NAN, 1.0).is_nan());
    }

    #[test]
    fn normal_lcdf_is_continuous_across_the_tail_switch() {
        // Values on either side of the switch at z = −37 agree with the series to 1e-10.
        let a = std_normal_lcdf(-36.999_999);
        let b = std_normal_lcdf(-37.000_001);
        assert!((a - b).abs() < 1e-4, "{a} vs {b}");
        // log Φ(0) = log ½; Φ(−1.96) = 0.0249978951482204 (A&S table 26.1).
        assert!((std_normal_lcdf(0.0) - 0.5f64.ln()).abs() < 1e-15);
        assert!((std_normal_lcdf(-1.96) - 0.024_997_895_148_220_4f64.ln()).abs() < 1e-12);
        // Far tail: derivative → −z.
        assert!((std_normal_lcdf_deriv(-100.0) - 100.009_998).abs() < 1e-3);
    }
}
