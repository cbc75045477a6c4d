//! The cumulative functions of issue 14: `_cdf` for every family with a log CDF (derived once in
//! `src/distributions/cdf.rs`), and the CDFs of skew_normal (Owen's T) and von_mises (series,
//! normal approximation and quadrature).
//!
//! References: mpmath 1.3 at 40–60 digits, by the scripts quoted beside each table (numerical
//! integration of the density); partials against central differences.

use bayesc::distributions::registry::FAMILIES;
use bayesc::distributions::{
    Arg, CdfKind, Family, FunctionKind, cdf_function, has_log_cdf, log_cdf, lookup_function,
};

fn scalars(x: &[f64]) -> Vec<Arg<'_>> {
    x.iter().map(|&v| Arg::Scalar(v)).collect()
}

fn value(f: Family, x: &[f64], kind: CdfKind) -> f64 {
    cdf_function(f, &scalars(x), &vec![false; x.len()], kind)
        .unwrap()
        .value
}

/// Asserts the partials of `kind` at `x` in the arguments flagged in `var` against central
/// differences (step 1e-6 relative, tolerance 1e-6 relative to 1 + |fd|).
fn check_partials(f: Family, x: &[f64], var: &[bool], kind: CdfKind) {
    let term = cdf_function(f, &scalars(x), var, kind).unwrap();
    for (k, &v) in var.iter().enumerate() {
        if !v {
            continue;
        }
        let h = 1e-6 * (1.0 + x[k].abs());
        let (mut p, mut m) = (x.to_vec(), x.to_vec());
        p[k] += h;
        m[k] -= h;
        let fd = (value(f, &p, kind) - value(f, &m, kind)) / (2.0 * h);
        let got = term.partials[k][0];
        assert!(
            (fd - got).abs() <= 1e-6 * (1.0 + fd.abs()),
            "{f:?} {kind:?} ∂/∂arg{k} at {x:?}: {got} vs finite difference {fd}"
        );
    }
}

/// One valid point per family with a log CDF (variate first); the test below fails when a
/// family gains a log CDF without a row here.
fn valid_point(name: &str) -> Option<Vec<f64>> {
    Some(match name {
        "normal" | "cauchy" | "logistic" | "double_exponential" | "gumbel" => {
            vec![0.3, -0.2, 1.5]
        }
        "lognormal" => vec![1.3, 0.2, 0.7],
        "exponential" => vec![0.8, 1.5],
        "weibull" | "frechet" => vec![1.3, 2.5, 0.9],
        "uniform" => vec![0.3, -0.5, 1.5],
        "pareto" => vec![2.5, 1.2, 3.0],
        "pareto_type_2" => vec![1.5, 0.2, 2.0, 3.0],
        "exp_mod_normal" => vec![1.0, 0.3, 0.7, 1.5],
        "beta_binomial" => vec![3.0, 10.0, 2.0, 3.0],
        "skew_normal" => vec![0.3, -0.2, 1.5, 2.0],
        "von_mises" => vec![0.5, 0.2, 1.3],
        _ => return None,
    })
}

#[test]
fn every_family_with_a_log_cdf_has_a_cdf_that_is_its_exponential() {
    let mut count = 0;
    for sig in FAMILIES {
        let name = format!("{}_cdf", sig.name);
        if !has_log_cdf(sig.family) {
            assert!(lookup_function(&name).is_none(), "{name}");
            continue;
        }
        count += 1;
        assert_eq!(
            lookup_function(&name).map(|(s, k)| (s.family, k)),
            Some((sig.family, FunctionKind::Cdf)),
            "{name}"
        );
        let x = valid_point(sig.name).unwrap_or_else(|| panic!("add a point for {}", sig.name));
        let var: Vec<bool> = std::iter::once(sig.variate)
            .chain(sig.params.iter().map(|p| p.support))
            .map(|s| !s.is_integer())
            .collect();
        let lcdf = log_cdf(sig.family, &scalars(&x), &var, false).unwrap();
        let cdf = cdf_function(sig.family, &scalars(&x), &var, CdfKind::Cdf).unwrap();
        assert!(
            (cdf.value - lcdf.value.exp()).abs() < 1e-15 && cdf.value > 0.0 && cdf.value < 1.0,
            "{name}: {} vs exp(lcdf) {}",
            cdf.value,
            lcdf.value.exp()
        );
        for (c, l) in cdf.partials.iter().zip(&lcdf.partials) {
            for (dc, dl) in c.iter().zip(l) {
                assert!(
                    (dc - cdf.value * dl).abs() < 1e-15,
                    "{name}: {dc} vs F·{dl}"
                );
            }
        }
        check_partials(sig.family, &x, &var, CdfKind::Cdf);
        // Two elements: the product of the two CDFs (Stan's `_cdf` of a container).
        let mut x2 = x.clone();
        x2[0] = if sig.discrete { x[0] - 1.0 } else { x[0] * 0.9 };
        let ys = [x[0], x2[0]];
        let mut args = scalars(&x);
        args[0] = Arg::Vector(&ys);
        let v = cdf_function(sig.family, &args, &var, CdfKind::Cdf).unwrap();
        let want = value(sig.family, &x, CdfKind::Cdf) * value(sig.family, &x2, CdfKind::Cdf);
        assert!(
            (v.value - want).abs() < 1e-15,
            "{name}: {} vs {want}",
            v.value
        );
        assert_eq!(v.partials[0].len(), if var[0] { 2 } else { 0 });
    }
    assert_eq!(count, 16);
}

#[test]
fn cdf_errors_carry_the_cdf_name() {
    let e = cdf_function(
        Family::Normal,
        &scalars(&[0.0, 0.0, -1.0]),
        &[false; 3],
        CdfKind::Cdf,
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "normal_cdf: Scale parameter is -1, but must be positive finite"
    );
    let e = cdf_function(
        Family::VonMises,
        &scalars(&[3.5, 0.0, 1.0]),
        &[false; 3],
        CdfKind::Lcdf,
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "von_mises_lcdf: Random variable is 3.5, but must be in the interval [-pi, pi]"
    );
    // A zero CDF has zero partials (no NaN from 0 · ∞).
    let t = cdf_function(
        Family::Uniform,
        &scalars(&[-1.0, 0.0, 1.0]),
        &[true; 3],
        CdfKind::Cdf,
    )
    .unwrap();
    assert_eq!(t.value, 0.0);
    assert!(t.partials.iter().flatten().all(|&d| d == 0.0));
}

/// (y, ξ, ω, α, log F, log(1 − F)) printed by `tests/reference/cdfs_mpmath.py` (mpmath 1.3,
/// mp.dps = 60: the smaller side integrated with break points at its decay scale, the other
/// side as `log1p(−F)`). Rows 4–6 are far lower tails where Φ(z) − 2T(z, α) cancels entirely
/// (row 5 is Φ(−10)², as T(h, 1) = ½Φ(h)(1 − Φ(h)) makes it); values below 1e-300 are 0.
#[rustfmt::skip]
const SKEW_NORMAL: [(f64, f64, f64, f64, f64, f64); 10] = [
    (0.3, -0.2, 1.5, 2.0, -1.166_879_800_904_787_1, -0.373_003_039_423_493_42),
    (-1.0, 0.5, 0.8, -3.0, -2.800_285_177_009_843_6, -0.062_719_082_350_873_267),
    (2.0, 1.0, 2.0, 0.5, -0.575_390_357_551_100_36, -0.826_644_872_218_650_35),
    (-4.0, 0.0, 1.0, 3.0, -87.337_536_506_498_136, -1.174_329_125_216_732_2e-38),
    (-10.0, 0.0, 1.0, 1.0, -106.462_570_301_024_94, -5.806_216_010_980_831_5e-47),
    (-30.0, 0.0, 1.0, 2.0, -2260.250_431_352_724_8, 0.0),
    (5.0, 0.0, 1.0, -4.0, -9.587_828_149_844_537e-97, -221.090_259_627_473_11),
    (0.0005, 0.0, 1.0, 200.0, -6.320_547_436_052_499, -0.001_800_578_490_874_000_9),
    (40.0, 0.0, 1.0, -1.5, 0.0, -2610.107_270_770_848_5),
    (1.0, 0.0, 1.0, 0.0, -0.172_753_779_023_449_89, -1.841_021_645_009_263_5),
];

/// Relative agreement; a reference below 1e-60 in size (a log CDF of 1 − tiny) needs only a
/// result that small.
fn close(got: f64, want: f64, tol: f64) -> bool {
    if want.abs() < 1e-60 {
        return got.abs() < 1e-60;
    }
    (got - want).abs() <= tol * want.abs()
}

#[test]
fn skew_normal_cdfs_match_mpmath_in_the_bulk_and_the_far_tails() {
    let f = Family::SkewNormal;
    for (y, xi, om, al, lo, hi) in SKEW_NORMAL {
        let x = [y, xi, om, al];
        let (l, u) = (value(f, &x, CdfKind::Lcdf), value(f, &x, CdfKind::Lccdf));
        assert!(
            close(l, lo, 1e-12),
            "skew_normal_lcdf{x:?} = {l:e}, mpmath {lo:e}"
        );
        assert!(
            close(u, hi, 1e-12),
            "skew_normal_lccdf{x:?} = {u:e}, mpmath {hi:e}"
        );
        let c = value(f, &x, CdfKind::Cdf);
        assert!((c - lo.exp()).abs() < 1e-15, "skew_normal_cdf{x:?} = {c}");
        for kind in CdfKind::ALL {
            check_partials(f, &x, &[true; 4], kind);
        }
    }
    // α = 0 is the normal distribution.
    for z in [-3.0, -0.5, 0.0, 1.7] {
        let sn = value(f, &[z, 0.0, 1.0, 0.0], CdfKind::Lcdf);
        let n = value(Family::Normal, &[z, 0.0, 1.0], CdfKind::Lcdf);
        assert!(
            (sn - n).abs() < 1e-14 * n.abs().max(1.0),
            "z = {z}: {sn} vs {n}"
        );
    }
    // ±∞ variates are the CDF's limits.
    assert_eq!(value(f, &[f64::INFINITY, 0.0, 1.0, 2.0], CdfKind::Cdf), 1.0);
    assert_eq!(
        value(f, &[f64::NEG_INFINITY, 0.0, 1.0, 2.0], CdfKind::Cdf),
        0.0
    );
}

/// (x, μ, κ, log F, log(1 − F)) printed by `tests/reference/cdfs_mpmath.py` (mpmath 1.3:
/// `quad(exp(κ(cos(t − μ) − 1)), [−π, …, x]) / (2π I₀(κ) e^−κ)` with the modes as break
/// points, and the same over [x, π]; row 8's upper side, −e^−401, is written 0). Rows with κ = 2e4 and 3e5 use the normal approximation,
/// the others the series; rows 4, 6–8, 10 and 12 have a side below 1e-4 (quadrature).
#[rustfmt::skip]
const VON_MISES: [(f64, f64, f64, f64, f64); 12] = [
    (0.5, 0.2, 1.3, -0.473_336_649_989_416_38, -0.975_298_786_944_057_63),
    (-2.0, 1.0, 4.0, -7.400_586_691_449_120_6, -0.000_611_080_921_459_959_03),
    (2.5, -3.0, 0.3, -0.139_320_479_996_894_88, -2.039_830_000_810_128_6),
    (1.0, 0.0, 50.0, -6.869_235_154_610_509e-12, -25.703_968_347_102_125),
    (-1.0, 7.0, 2.0, -3.302_962_126_040_096_2, -0.037_467_290_816_501_633),
    (3.0, 0.0, 10.0, -3.758_536_204_055_605_2e-10, -21.701_821_355_958_412),
    (-3.0, 0.0, 10.0, -21.701_821_355_958_412, -3.758_536_204_055_605_2e-10),
    (-3.1, 0.0, 200.0, -401.391_234_061_766_76, 0.0),
    (0.01, 0.0, 20000.0, -0.081_917_209_525_877_477, -2.542_725_200_855_213_6),
    (-0.02, 0.0, 300000.0, -63.318_784_084_501_006, -3.169_578_200_739_459_8e-28),
    (0.0, 0.0, 0.0, -std::f64::consts::LN_2, -std::f64::consts::LN_2),
    (-2.5, 2.0, 30.0, -20.059_213_730_420_635, -1.942_648_226_636_306_2e-9),
];

#[test]
fn von_mises_cdfs_match_mpmath_for_small_and_large_concentrations() {
    let f = Family::VonMises;
    for (x, mu, k, lo, hi) in VON_MISES {
        let a = [x, mu, k];
        let (l, u) = (value(f, &a, CdfKind::Lcdf), value(f, &a, CdfKind::Lccdf));
        assert!(
            close(l, lo, 1e-10),
            "von_mises_lcdf{a:?} = {l:e}, mpmath {lo:e}"
        );
        assert!(
            close(u, hi, 1e-10),
            "von_mises_lccdf{a:?} = {u:e}, mpmath {hi:e}"
        );
        for kind in CdfKind::ALL {
            check_partials(f, &a, &[true, true, k > 0.0], kind);
        }
    }
}

#[test]
fn von_mises_cdf_is_stans_mass_below_x_on_minus_pi_pi() {
    use std::f64::consts::PI;
    let f = Family::VonMises;
    // The ends of the support, for any μ.
    for mu in [-7.0, 0.0, 2.0, 100.0] {
        assert_eq!(value(f, &[-PI, mu, 3.0], CdfKind::Cdf), 0.0);
        assert!((value(f, &[PI, mu, 3.0], CdfKind::Cdf) - 1.0).abs() < 1e-15);
    }
    // μ and μ + 2π are the same distribution.
    let a = value(f, &[0.7, 0.4, 2.5], CdfKind::Cdf);
    let b = value(f, &[0.7, 0.4 + 2.0 * PI, 2.5], CdfKind::Cdf);
    assert!((a - b).abs() < 1e-14, "{a} vs {b}");
    // κ = 0 is uniform on [−π, π].
    assert!((value(f, &[1.0, 0.3, 0.0], CdfKind::Cdf) - (1.0 + PI) / (2.0 * PI)).abs() < 1e-15);
    // Continuous where the method changes (series ↔ normal approximation at κ = 10⁴).
    for x in [-0.05, 0.003, 0.02] {
        let below = value(f, &[x, 0.0, 1e4 * (1.0 - 1e-12)], CdfKind::Lcdf);
        let above = value(f, &[x, 0.0, 1e4 * (1.0 + 1e-12)], CdfKind::Lcdf);
        assert!(
            (below - above).abs() < 1e-11 * below.abs().max(1e-3),
            "x = {x}: {below} vs {above}"
        );
    }
    // F + (1 − F) = 1 across the switch to quadrature (a side at 1e-4).
    for x in [-2.3, -2.2, -2.1, -2.0] {
        let (l, u) = (
            value(f, &[x, 0.0, 5.0], CdfKind::Lcdf),
            value(f, &[x, 0.0, 5.0], CdfKind::Lccdf),
        );
        assert!((l.exp() + u.exp() - 1.0).abs() < 1e-14, "x = {x}: {l} {u}");
    }
}

mod common;

/// examples/cdfs (censored skew-normal values through `skew_normal_lcdf`, sign-censored angles
/// through `von_mises_cdf`, `normal_cdf` in generated quantities) fitted by `bayesc fit
/// --method nuts --seed 1` from the CLI: every R-hat below 1.01, no divergence, and each
/// posterior mean within 3 posterior sd of the value the data were simulated from
/// (`examples/cdfs/simulate.py`; the probabilities' true values from scipy 1.17
/// `skewnorm.cdf(1.5, 3, 1, 2)` = 0.229206, `norm.cdf(1.5, 1, 2)` = 0.598706, and mpmath's
/// integral of the von Mises(0.4, 3) density over [−π, 0] = 0.258113).
#[test]
fn the_cdf_example_fits_from_the_cli_and_recovers_the_simulation() {
    let out = common::bayesc_in(
        &common::root(),
        &[
            "fit",
            "examples/cdfs/model.bayes",
            "--data",
            "examples/cdfs/data.json",
            "--method",
            "nuts",
            "--seed",
            "1",
        ],
    );
    let text = common::output_text(&out);
    assert!(out.status.success(), "{text}");
    assert!(!text.contains("diverged"), "{text}");
    let truth = [
        ("xi", 1.0),
        ("omega", 2.0),
        ("mu", 0.4),
        ("kappa", 3.0),
        ("p_censored", 0.229_206),
        ("p_normal", 0.598_706),
        ("p_angle_below", 0.258_113),
    ];
    for (name, want) in truth {
        let row: Vec<f64> = text
            .lines()
            .find_map(|l| {
                let mut w = l.split_whitespace();
                (w.next() == Some(name)).then(|| w.filter_map(|v| v.parse().ok()).collect())
            })
            .unwrap_or_else(|| panic!("no row `{name}` in:\n{text}"));
        // name mean sd 5% 50% 95% MCSE ESS_bulk ESS_tail R_hat
        let (mean, sd, rhat) = (row[0], row[1], row[8]);
        assert!(rhat < 1.01, "{name}: R-hat {rhat}\n{text}");
        assert!(
            (mean - want).abs() < 3.0 * sd,
            "{name}: posterior mean {mean} (sd {sd}), simulated from {want}"
        );
    }
}
