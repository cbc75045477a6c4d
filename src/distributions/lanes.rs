//! Branch-free elementwise math over f64 lanes: functions written without data-dependent
//! branches or calls, so that the loops of the graph's elementwise nodes (and of any caller's
//! loop over a slice) can be auto-vectorised by LLVM. Results are a pure function of the input
//! (no CPU-dependent dispatch), so values are bit-identical for a seed at any thread count.
//!
//! Accuracy is stated per function and tested against libm (`std`) over its range and at the
//! edge cases.

/// ln 2 split so that `k · LN2_HI` is exact for |k| < 2¹¹ (fdlibm's `ln2_hi` / `ln2_lo`).
const LN2_HI: f64 = 6.931_471_803_691_238_164_9e-1;
const LN2_LO: f64 = 1.908_214_929_270_587_700_02e-10;
/// 1.5 · 2⁵²: adding it rounds a small non-negative double to an integer held in the low
/// mantissa bits (round-to-nearest, no `round` instruction needed).
const ROUND_MAGIC: f64 = 6_755_399_441_055_744.0;

/// 1/n! for n = 2..14: the Taylor coefficients of eʳ − 1 − r on |r| ≤ ln 2 / 2 used by
/// [`expm1_nonneg`] and [`exp_neg`] (truncation below 3·10⁻¹⁹ relative).
const EXP_TAYLOR: [f64; 13] = [
    1.0 / 2.0,
    1.0 / 6.0,
    1.0 / 24.0,
    1.0 / 120.0,
    1.0 / 720.0,
    1.0 / 5040.0,
    1.0 / 40320.0,
    1.0 / 362_880.0,
    1.0 / 3_628_800.0,
    1.0 / 39_916_800.0,
    1.0 / 479_001_600.0,
    1.0 / 6_227_020_800.0,
    1.0 / 87_178_291_200.0,
];

/// eʸ − 1 for 0 ≤ y ≤ 44 (the range [`tanh`] needs), within a few ulp.
///
/// Method (Tang's table-free reduction): y = k·ln 2 + r with k = round(y / ln 2) and
/// |r| ≤ ln 2 / 2, so eʸ − 1 = 2ᵏ·(eʳ − 1) + (2ᵏ − 1); eʳ − 1 is its Taylor series to r¹⁴
/// (truncation below 3·10⁻¹⁹ relative), summed by Horner's rule without cancellation.
#[inline(always)]
fn expm1_nonneg(y: f64) -> f64 {
    let t = y * std::f64::consts::LOG2_E + ROUND_MAGIC;
    let k = t.to_bits().wrapping_sub(ROUND_MAGIC.to_bits());
    let kf = t - ROUND_MAGIC;
    let r = (y - kf * LN2_HI) - kf * LN2_LO;
    const C: [f64; 13] = EXP_TAYLOR;
    let mut p = C[12];
    for &c in C[..12].iter().rev() {
        p = p * r + c;
    }
    let em1_r = r + r * r * p;
    let two_k = f64::from_bits((k + 1023) << 52);
    two_k * em1_r + (two_k - 1.0)
}

/// tanh(x) for every f64, within a few ulp of the correctly rounded value (tested against
/// `f64::tanh` over [−30, 30] and at 0, ±0, ±∞, NaN and subnormals).
///
/// tanh|x| = m / (m + 2) with m = e^{2|x|} − 1 ([`expm1_nonneg`]), which has no cancellation
/// near 0; |x| is clamped to 22, beyond which tanh rounds to ±1. The sign is copied from x, and
/// NaN propagates. No branches: usable inside vectorised loops.
#[inline(always)]
pub fn tanh(x: f64) -> f64 {
    let a = x.abs().min(22.0);
    let m = expm1_nonneg(a + a);
    let t = (m / (m + 2.0)).copysign(x);
    // x itself for NaN (min() dropped it) and for tiny |x|, where tanh x rounds to x.
    if x.is_nan() || a < 1e-9 { x } else { t }
}

/// y_i = tanh(x_i) ([`tanh`]) and, when given, d_i = 1 − y_i² for slices of one length: the
/// graph's tanh node. On x86-64 CPUs with AVX-512F or AVX2 the same loop runs compiled for
/// that extension (8 or 4 lanes instead of SSE2's 2; on the diabetes BNN's NUTS run tanh was half of the CPU time). Without
/// FMA enabled no multiply-add is fused, so both paths perform the same IEEE operations and
/// return bit-identical results (tested), keeping draws independent of the CPU.
pub fn tanh_slices(xs: &[f64], ys: &mut [f64], ds: Option<&mut [f64]>) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU supports AVX-512F (checked just above).
            unsafe { tanh_slices_avx512(xs, ys, ds) };
            return;
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above).
            unsafe { tanh_slices_avx2(xs, ys, ds) };
            return;
        }
    }
    tanh_slices_generic(xs, ys, ds);
}

#[inline(always)]
fn tanh_slices_generic(xs: &[f64], ys: &mut [f64], ds: Option<&mut [f64]>) {
    match ds {
        Some(ds) => {
            for ((y, d), &x) in ys.iter_mut().zip(ds.iter_mut()).zip(xs) {
                let f = tanh(x);
                *y = f;
                *d = 1.0 - f * f;
            }
        }
        None => {
            for (y, &x) in ys.iter_mut().zip(xs) {
                *y = tanh(x);
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn tanh_slices_avx2(xs: &[f64], ys: &mut [f64], ds: Option<&mut [f64]>) {
    tanh_slices_generic(xs, ys, ds)
}

/// The same loop compiled for AVX-512F (8 lanes). As for AVX2, FMA stays off, so the IEEE
/// operations and the results are those of the generic loop, bit for bit (tested).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn tanh_slices_avx512(xs: &[f64], ys: &mut [f64], ds: Option<&mut [f64]>) {
    tanh_slices_generic(xs, ys, ds)
}

/// e^{−y} for y ≥ 0, within a few ulp of libm's `exp(−y)`, subnormal results included
/// (tested over [0, 745] and at 0, +∞ and the underflow threshold); NaN propagates. For
/// logistic regressions, whose hot loop needs e^{−|η|} once per row.
///
/// Method as [`expm1_nonneg`]: x = −min(y, 746) = k·ln 2 + r with |r| ≤ ln 2 / 2 and
/// eʳ = 1 + r + r²·(Taylor series to r¹⁴); 2ᵏ is applied as two normal factors 2^⌊u/2⌋·2^⌈u/2⌉
/// (shifted exponents, unsigned integer operations only), so that a subnormal result is rounded
/// once. No branches: usable inside vectorised loops.
#[inline(always)]
pub fn exp_neg(y: f64) -> f64 {
    let x = -y.min(746.0);
    let t = x * std::f64::consts::LOG2_E + ROUND_MAGIC;
    let kf = t - ROUND_MAGIC;
    let r = (x - kf * LN2_HI) - kf * LN2_LO;
    const C: [f64; 13] = EXP_TAYLOR;
    // Estrin's scheme: a dependency chain of four multiply-add levels instead of Horner's
    // twelve (without FMA each level costs a multiply and an add of latency).
    let (r2, p) = estrin13(r, &C);
    let e_r = 1.0 + (r + r2 * p);
    // k ∈ [−1077, 0]; u = k + 1100 ≥ 0 split into halves u₁ = ⌊u/2⌋, u₂ = u − u₁, each giving
    // the normal factor 2^(uᵢ − 550) with biased exponent uᵢ − 550 + 1023.
    let u = t
        .to_bits()
        .wrapping_sub(ROUND_MAGIC.to_bits())
        .wrapping_add(1100);
    let u1 = u >> 1;
    let u2 = u - u1;
    let s1 = f64::from_bits((u1 + 473) << 52);
    let s2 = f64::from_bits((u2 + 473) << 52);
    let v = e_r * s1 * s2;
    if y.is_nan() { y } else { v }
}

/// (x², Σⱼ c[j]·xʲ) for 13 coefficients by Estrin's scheme (pairs, then pairs of pairs).
#[inline(always)]
fn estrin13(x: f64, c: &[f64; 13]) -> (f64, f64) {
    let x2 = x * x;
    let x4 = x2 * x2;
    let x8 = x4 * x4;
    let q0 = c[0] + c[1] * x;
    let q1 = c[2] + c[3] * x;
    let q2 = c[4] + c[5] * x;
    let q3 = c[6] + c[7] * x;
    let q4 = c[8] + c[9] * x;
    let q5 = c[10] + c[11] * x;
    let s0 = q0 + q1 * x2;
    let s1 = q2 + q3 * x2;
    let s2 = q4 + q5 * x2;
    let t0 = s0 + s1 * x4;
    let t1 = s2 + c[12] * x4;
    (x2, t0 + t1 * x8)
}

/// Σⱼ c[j]·xʲ for 11 coefficients by Estrin's scheme.
#[inline(always)]
fn estrin11(x: f64, c: &[f64; 11]) -> f64 {
    let x2 = x * x;
    let x4 = x2 * x2;
    let x8 = x4 * x4;
    let q0 = c[0] + c[1] * x;
    let q1 = c[2] + c[3] * x;
    let q2 = c[4] + c[5] * x;
    let q3 = c[6] + c[7] * x;
    let q4 = c[8] + c[9] * x;
    let s0 = q0 + q1 * x2;
    let s1 = q2 + q3 * x2;
    let s2 = q4 + c[10] * x2;
    let t0 = s0 + s1 * x4;
    t0 + s2 * x8
}

/// √2 − 1: [`log1p_unit`] reduces arguments above it by a factor 2.
const SQRT2_M1: f64 = std::f64::consts::SQRT_2 - 1.0;

/// log(1 + e) for 0 ≤ e ≤ 1, within a few ulp of libm's `log1p` (tested over the interval and
/// at 0, subnormals and 1). Branch-free, unlike `special::log1p_unit`, so usable inside
/// vectorised loops.
///
/// Method: log(1 + e) = 2·atanh(s) with s = e / (2 + e) for e ≤ √2 − 1, and
/// log(1 + e) = ln 2 + 2·atanh(s) with s = (e − 1) / (e + 3) (that is, log((1 + e)/2)) above; in
/// both |s| ≤ 0.1716, and 2·atanh(s) = 2s·Σⱼ s²ʲ/(2j + 1) to j = 11 (truncation below 10⁻¹⁸
/// relative).
#[inline(always)]
pub fn log1p_unit(e: f64) -> f64 {
    let up = e > SQRT2_M1;
    // one division: the operands are selected first
    let (num, den) = if up { (e - 1.0, e + 3.0) } else { (e, e + 2.0) };
    let s = num / den;
    let k = if up { std::f64::consts::LN_2 } else { 0.0 };
    let z = s * s;
    // 1/(2j + 1) for j = 1..11
    const C: [f64; 11] = [
        1.0 / 3.0,
        1.0 / 5.0,
        1.0 / 7.0,
        1.0 / 9.0,
        1.0 / 11.0,
        1.0 / 13.0,
        1.0 / 15.0,
        1.0 / 17.0,
        1.0 / 19.0,
        1.0 / 21.0,
        1.0 / 23.0,
    ];
    let p = estrin11(z, &C);
    let two_s = s + s;
    k + (two_s + two_s * z * p)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Distance in units in the last place.
    fn ulps(a: f64, b: f64) -> u64 {
        if a == b {
            return 0;
        }
        let (ia, ib) = (a.to_bits() as i64, b.to_bits() as i64);
        (ia - ib).unsigned_abs()
    }

    /// Each compiled path that this CPU can run (generic, AVX2, AVX-512F) gives the same bits,
    /// so draws do not depend on which machine ran them.
    #[test]
    fn every_tanh_path_gives_the_same_bits() {
        let xs: Vec<f64> = (0..=4003)
            .map(|i| -25.0 + 50.0 * i as f64 / 4003.0)
            .chain([0.0, -0.0, 1e-300, -3e-12, 7e-10, f64::INFINITY, f64::NAN])
            .collect();
        let run = |f: &dyn Fn(&[f64], &mut [f64], Option<&mut [f64]>)| {
            let (mut ys, mut ds) = (vec![0.0; xs.len()], vec![0.0; xs.len()]);
            f(&xs, &mut ys, Some(&mut ds));
            (ys, ds)
        };
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        let (y0, d0) = run(&|x, y, d| tanh_slices_generic(x, y, d));
        let mut paths = 0;
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: AVX2 checked just above.
                let (y, d) = run(&|x, y, d| unsafe { tanh_slices_avx2(x, y, d) });
                assert_eq!(bits(&y), bits(&y0));
                assert_eq!(bits(&d), bits(&d0));
                paths += 1;
            }
            if std::arch::is_x86_feature_detected!("avx512f") {
                // SAFETY: AVX-512F checked just above.
                let (y, d) = run(&|x, y, d| unsafe { tanh_slices_avx512(x, y, d) });
                assert_eq!(bits(&y), bits(&y0));
                assert_eq!(bits(&d), bits(&d0));
                paths += 1;
            }
        }
        eprintln!("{paths} SIMD path(s) checked against the generic loop");
    }

    #[test]
    fn tanh_slices_matches_tanh_bit_for_bit() {
        // Whatever path `tanh_slices` takes on this CPU, it equals the scalar function exactly.
        let xs: Vec<f64> = (0..=4001)
            .map(|i| -25.0 + 50.0 * i as f64 / 4001.0)
            .chain([0.0, -0.0, 1e-300, -3e-12, f64::INFINITY, f64::NEG_INFINITY])
            .collect();
        let (mut ys, mut ds) = (vec![0.0; xs.len()], vec![0.0; xs.len()]);
        tanh_slices(&xs, &mut ys, Some(&mut ds));
        let mut ys2 = vec![0.0; xs.len()];
        tanh_slices(&xs, &mut ys2, None);
        for i in 0..xs.len() {
            let f = tanh(xs[i]);
            assert_eq!(ys[i].to_bits(), f.to_bits(), "x = {}", xs[i]);
            assert_eq!(ys2[i].to_bits(), f.to_bits(), "x = {}", xs[i]);
            assert_eq!(ds[i].to_bits(), (1.0 - f * f).to_bits(), "x = {}", xs[i]);
        }
        let mut nan = [0.0];
        tanh_slices(&[f64::NAN], &mut nan, None);
        assert!(nan[0].is_nan());
    }

    #[test]
    fn tanh_is_within_a_few_ulp_of_libm() {
        let mut worst = 0;
        let n = 200_000;
        for i in 0..=n {
            let x = -30.0 + 60.0 * i as f64 / n as f64;
            worst = worst.max(ulps(tanh(x), x.tanh()));
        }
        // Small magnitudes, where relative accuracy matters most.
        for e in -300..3 {
            for m in [1.0, 1.37, 3.1, 7.9] {
                let x = m * 10f64.powi(e);
                worst = worst.max(ulps(tanh(x), x.tanh()));
                worst = worst.max(ulps(tanh(-x), (-x).tanh()));
            }
        }
        assert!(worst <= 4, "worst error {worst} ulp");
    }

    #[test]
    fn tanh_edge_cases() {
        assert_eq!(tanh(0.0).to_bits(), 0.0f64.to_bits());
        assert_eq!(tanh(-0.0).to_bits(), (-0.0f64).to_bits());
        assert_eq!(tanh(f64::INFINITY), 1.0);
        assert_eq!(tanh(f64::NEG_INFINITY), -1.0);
        assert_eq!(tanh(25.0), 1.0);
        assert_eq!(tanh(-700.0), -1.0);
        assert!(tanh(f64::NAN).is_nan());
        let sub = f64::MIN_POSITIVE / 8.0;
        assert_eq!(tanh(sub), sub);
    }

    #[test]
    fn expm1_matches_libm_on_its_range() {
        let mut worst = 0;
        for i in 0..=100_000 {
            let y = 44.0 * i as f64 / 100_000.0;
            worst = worst.max(ulps(expm1_nonneg(y), y.exp_m1()));
        }
        assert!(worst <= 4, "worst error {worst} ulp");
    }

    #[test]
    fn exp_neg_matches_libm() {
        let mut worst = 0;
        for i in 0..=200_000 {
            let y = 745.0 * i as f64 / 200_000.0;
            worst = worst.max(ulps(exp_neg(y), (-y).exp()));
        }
        for e in -300..3 {
            for m in [1.0, 1.37, 3.1, 7.9] {
                let y = m * 10f64.powi(e);
                worst = worst.max(ulps(exp_neg(y), (-y).exp()));
            }
        }
        assert!(worst <= 2, "worst error {worst} ulp");
        // subnormal results: within a couple of units of the smallest subnormal
        for y in [708.5f64, 720.0, 740.0, 744.4, 745.1] {
            let want = (-y).exp();
            assert!((exp_neg(y) - want).abs() <= 2.0 * 4.9e-324, "y = {y}");
        }
        assert_eq!(exp_neg(0.0), 1.0);
        assert_eq!(exp_neg(-0.0), 1.0);
        assert_eq!(exp_neg(746.0), 0.0);
        assert_eq!(exp_neg(f64::INFINITY), 0.0);
        assert!(exp_neg(f64::NAN).is_nan());
    }

    #[test]
    fn log1p_unit_matches_libm() {
        let mut worst = 0;
        for i in 0..=200_000 {
            let e = i as f64 / 200_000.0;
            worst = worst.max(ulps(log1p_unit(e), e.ln_1p()));
        }
        let mut e = 1e-310;
        while e < 1.0 {
            worst = worst.max(ulps(log1p_unit(e), e.ln_1p()));
            e *= 1.013;
        }
        for e in [SQRT2_M1, SQRT2_M1.next_up(), SQRT2_M1.next_down(), 1.0] {
            worst = worst.max(ulps(log1p_unit(e), e.ln_1p()));
        }
        assert!(worst <= 2, "worst error {worst} ulp");
        assert_eq!(log1p_unit(0.0).to_bits(), 0.0f64.to_bits());
    }
}
