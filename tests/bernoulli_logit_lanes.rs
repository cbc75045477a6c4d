//! The vectorised rows of `bernoulli_logit` (issue 12, vectorised elementwise math): values and
//! partials against the scalar formulas with glibc's `exp` / `log1p`, the
//! same bits on every compiled path, and the family's entry point taking the vectorised loop.

use bayesc::distributions::Arg;
use bayesc::distributions::bernoulli_logit::{self, lpmf_rows, lpmf_rows_generic};
use bayesc::distributions::special::logit_terms;

/// Logits over the whole range, with the edge cases, and outcomes alternating irregularly.
fn rows() -> (Vec<f64>, Vec<f64>) {
    let mut a: Vec<f64> = (0..=3001)
        .map(|i| -45.0 + 90.0 * i as f64 / 3001.0)
        .collect();
    a.extend([
        0.0,
        -0.0,
        1e-300,
        -1e-300,
        1e-9,
        -3e-12,
        700.0,
        -700.0,
        745.5,
        -745.5,
        800.0,
        -800.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
    ]);
    let y = (0..a.len()).map(|i| ((i * 7 + i / 3) % 2) as f64).collect();
    (y, a)
}

/// The reference: the stable formulas with glibc's `exp` and `log1p` (correctly rounded in
/// practice). `special::logit_terms` is not used here: its `ln(1 + e)` branch is accurate only
/// to about 10⁻¹³ relative.
fn scalar(y: f64, a: f64) -> (f64, f64) {
    let e = (-a.abs()).exp();
    let l = e.ln_1p();
    let (big, small) = (1.0 / (1.0 + e), e / (1.0 + e));
    let (s, s_neg) = if a >= 0.0 { (big, small) } else { (small, big) };
    if y == 1.0 {
        (-((-a).max(0.0) + l), s_neg)
    } else {
        (-(a.max(0.0) + l), -s)
    }
}

#[test]
fn rows_match_the_scalar_formulas() {
    let (y, a) = rows();
    let mut d = vec![0.0; a.len()];
    let value = lpmf_rows(&y, &a, Some(&mut d));
    let mut want = 0.0;
    for i in 0..a.len() {
        let (v, p) = scalar(y[i], a[i]);
        want += v;
        // the partials: a few ulp of the scalar ones (or both tiny)
        let tol = 4.0 * f64::EPSILON * p.abs() + 1e-300;
        assert!((d[i] - p).abs() <= tol, "a = {}: {} vs {p}", a[i], d[i]);
        // each row's log mass, alone
        let one = lpmf_rows(&[y[i], y[i]], &[a[i], a[i]], None);
        assert!(
            one == 2.0 * v || (one - 2.0 * v).abs() <= 8.0 * f64::EPSILON * v.abs() + 1e-300,
            "a = {}: {one} vs {}",
            a[i],
            2.0 * v
        );
    }
    // (the ±∞ logits give −∞ rows: the sum is −∞ on both sides)
    assert_eq!(want, f64::NEG_INFINITY);
    assert_eq!(value, f64::NEG_INFINITY);
    // the finite rows alone
    let (yf, af): (Vec<f64>, Vec<f64>) = y
        .iter()
        .zip(&a)
        .filter(|(_, a)| a.abs() < 1e3)
        .map(|(y, a)| (*y, *a))
        .unzip();
    let want: f64 = yf.iter().zip(&af).map(|(y, a)| scalar(*y, *a).0).sum();
    let got = lpmf_rows(&yf, &af, None);
    assert!(((got - want) / want).abs() < 1e-13, "sum {got} vs {want}");
    // without partials the value is the same
    assert_eq!(lpmf_rows(&y, &a, None).to_bits(), value.to_bits());
}

#[test]
fn every_path_gives_the_same_bits() {
    let (y, a) = rows();
    let run = |f: &dyn Fn(&[f64], &[f64], Option<&mut [f64]>) -> f64| {
        let mut d = vec![0.0; a.len()];
        let v = f(&y, &a, Some(&mut d));
        (
            v.to_bits(),
            d.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
        )
    };
    let base = run(&|y, a, d| lpmf_rows_generic(y, a, d));
    assert_eq!(run(&|y, a, d| lpmf_rows(y, a, d)), base);
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 checked just above.
            let got = run(&|y, a, d| unsafe { bernoulli_logit::lpmf_rows_avx2(y, a, d) });
            assert_eq!(got, base);
        }
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: AVX-512F checked just above.
            let got = run(&|y, a, d| unsafe { bernoulli_logit::lpmf_rows_avx512(y, a, d) });
            assert_eq!(got, base);
        }
    }
}

#[test]
fn the_family_uses_the_rows_and_checks_its_arguments() {
    let (y, a) = rows();
    let n = a.len();
    let t = bernoulli_logit::lpmf(&[Arg::Vector(&y), Arg::Vector(&a)], &[false, true], true, n)
        .unwrap();
    let mut d = vec![0.0; n];
    let v = lpmf_rows(&y, &a, Some(&mut d));
    assert_eq!(t.value.to_bits(), v.to_bits());
    assert_eq!(t.partials[1], d);
    // a scalar logit still takes the hoisted scalar path: n · log σ(a) exactly as before
    let ones = vec![1.0; 5];
    let t = bernoulli_logit::lpmf(
        &[Arg::Vector(&ones), Arg::Scalar(0.3)],
        &[false, true],
        true,
        5,
    )
    .unwrap();
    let (lp, _, _, sn) = logit_terms(0.3);
    assert!((t.value - 5.0 * lp).abs() < 1e-15);
    assert!((t.partials[1][0] - 5.0 * sn).abs() < 1e-15);
    // a NaN logit is an error, not a silent value
    let bad = [0.1, f64::NAN, 0.2];
    assert!(
        bernoulli_logit::lpmf(
            &[Arg::Vector(&[1.0, 0.0, 1.0]), Arg::Vector(&bad)],
            &[false, true],
            true,
            3
        )
        .is_err()
    );
}
