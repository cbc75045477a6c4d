//! The univariate families added for issue 14 — beta_binomial, skew_normal, frechet, pareto,
//! pareto_type_2, exp_mod_normal, von_mises — against independent references:
//! log densities and (C)CDFs against scipy 1.17.1 (the call is given beside each number),
//! partials against central differences, `_rng` moments against the analytic mean and
//! variance within Monte Carlo error (fixed seeds), and the log CDF against numerical
//! integration of the density.

use bayesc::distributions::{Arg, Family, log_cdf, log_density, lookup, rng};
use bayesc::inference::rng::stream;

fn family(name: &str) -> Family {
    lookup(name).expect("registered").family
}

fn scalars(x: &[f64]) -> Vec<Arg<'_>> {
    x.iter().map(|&v| Arg::Scalar(v)).collect()
}

/// Normalised log density at scalar arguments.
fn lpdf(name: &str, x: &[f64]) -> f64 {
    let is_var = vec![false; x.len()];
    log_density(family(name), &scalars(x), &is_var, false)
        .unwrap()
        .value
}

fn lcdf(name: &str, x: &[f64], complement: bool) -> f64 {
    let is_var = vec![false; x.len()];
    log_cdf(family(name), &scalars(x), &is_var, complement)
        .unwrap()
        .value
}

fn close(a: f64, b: f64, tol: f64, what: &str) {
    assert!(
        (a - b).abs() <= tol * (1.0 + b.abs()),
        "{what}: {a} vs reference {b}"
    );
}

/// Partials of the density (and both CDFs when `cdf`) at `x` against central differences in
/// every argument flagged in `continuous`.
fn check_partials(name: &str, x: &[f64], continuous: &[bool], cdf: bool) {
    let f = family(name);
    let kinds: Vec<Option<bool>> = if cdf {
        vec![None, Some(false), Some(true)]
    } else {
        vec![None]
    };
    for kind in kinds {
        let eval = |x: &[f64], is_var: &[bool]| match kind {
            None => log_density(f, &scalars(x), is_var, false).unwrap(),
            Some(c) => log_cdf(f, &scalars(x), is_var, c).unwrap(),
        };
        let term = eval(x, continuous);
        let none = vec![false; x.len()];
        for (k, &var) in continuous.iter().enumerate() {
            if !var {
                continue;
            }
            let h = 1e-6 * (1.0 + x[k].abs());
            let (mut p, mut m) = (x.to_vec(), x.to_vec());
            p[k] += h;
            m[k] -= h;
            let fd = (eval(&p, &none).value - eval(&m, &none).value) / (2.0 * h);
            let got = term.partials[k][0];
            assert!(
                (fd - got).abs() <= 1e-6 * (1.0 + fd.abs()),
                "{name} {kind:?} ∂/∂arg{k} at {x:?}: {got} vs finite difference {fd}"
            );
        }
    }
}

/// Mean and variance of `n` draws of `name_rng(params)`; asserts both within 5 standard errors
/// of the analytic values (the variance's standard error from the fourth central moment of
/// the draws).
fn check_moments(name: &str, params: &[f64], mean: f64, var: f64, seed: u64) {
    let n = 200_000;
    let mut r = stream(seed, 0);
    let xs: Vec<f64> = (0..n)
        .map(|_| rng(family(name), params, &mut r).unwrap())
        .collect();
    let m = xs.iter().sum::<f64>() / n as f64;
    let v = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1) as f64;
    let m4 = xs.iter().map(|x| (x - m).powi(4)).sum::<f64>() / n as f64;
    let se_mean = (var / n as f64).sqrt();
    let se_var = ((m4 - v * v) / n as f64).sqrt();
    assert!(
        (m - mean).abs() < 5.0 * se_mean,
        "{name}_rng{params:?} mean {m} vs {mean} (se {se_mean})"
    );
    assert!(
        (v - var).abs() < 5.0 * se_var,
        "{name}_rng{params:?} variance {v} vs {var} (se {se_var})"
    );
}

/// ∫ₐᵇ f by composite Simpson with `n` (even) panels.
fn simpson(f: impl Fn(f64) -> f64, a: f64, b: f64, n: usize) -> f64 {
    let h = (b - a) / n as f64;
    let mut s = f(a) + f(b);
    for i in 1..n {
        s += f(a + i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 };
    }
    s * h / 3.0
}

/// The CDF at `y` (from `lo`, where the mass below is `below`) by integrating the density,
/// against exp(lcdf) and 1 − exp(lccdf).
fn check_cdf_by_integration(name: &str, params: &[f64], lo: f64, below: f64, y: f64) {
    let dens = |t: f64| {
        let mut x = vec![t];
        x.extend_from_slice(params);
        lpdf(name, &x).exp()
    };
    let integral = below + simpson(dens, lo, y, 20_000);
    let mut x = vec![y];
    x.extend_from_slice(params);
    close(lcdf(name, &x, false).exp(), integral, 1e-7, name);
    close(1.0 - lcdf(name, &x, true).exp(), integral, 1e-7, name);
}

#[test]
fn beta_binomial_matches_scipy_and_its_partials_and_moments() {
    // scipy.stats.betabinom(N, a, b).logpmf(k), .logcdf(k), .logsf(k)
    let cases = [
        (
            [3.0, 10.0, 2.5, 4.0],
            -1.8419165114083706,
            -0.75057929930062,
            -0.6388351289157944,
        ),
        (
            [0.0, 7.0, 0.7, 1.3],
            -1.3606612220607939,
            -1.3606612220607939,
            -0.2963745740560227,
        ),
    ];
    for (x, lp, lc, ls) in cases {
        close(lpdf("beta_binomial", &x), lp, 1e-12, "beta_binomial_lpmf");
        close(
            lcdf("beta_binomial", &x, false),
            lc,
            1e-12,
            "beta_binomial_lcdf",
        );
        close(
            lcdf("beta_binomial", &x, true),
            ls,
            1e-12,
            "beta_binomial_lccdf",
        );
        check_partials("beta_binomial", &x, &[false, false, true, true], true);
    }
    // k = N: logpmf −0.8378668865898034, logcdf 0, logsf −inf (betabinom(12, 3, 0.5))
    let x = [12.0, 12.0, 3.0, 0.5];
    close(
        lpdf("beta_binomial", &x),
        -0.8378668865898034,
        1e-12,
        "k = N",
    );
    assert_eq!(lcdf("beta_binomial", &x, false), 0.0);
    assert_eq!(lcdf("beta_binomial", &x, true), f64::NEG_INFINITY);
    // above N: mass 0
    assert_eq!(
        lpdf("beta_binomial", &[13.0, 12.0, 3.0, 0.5]),
        f64::NEG_INFINITY
    );
    // the mass sums to 1
    let total: f64 = (0..=10)
        .map(|k| lpdf("beta_binomial", &[k as f64, 10.0, 2.5, 4.0]).exp())
        .sum();
    close(total, 1.0, 1e-13, "Σ beta_binomial mass");
    // mean Nα/(α+β), variance Nαβ(α+β+N)/((α+β)²(α+β+1))
    let (n, a, b) = (10.0, 2.5, 4.0);
    let s = a + b;
    check_moments(
        "beta_binomial",
        &[n, a, b],
        n * a / s,
        n * a * b * (s + n) / (s * s * (s + 1.0)),
        1,
    );
}

#[test]
fn skew_normal_matches_scipy_and_its_partials_and_moments() {
    // scipy.stats.skewnorm(alpha, loc=xi, scale=omega).logpdf(y)
    let cases = [
        ([0.3, -0.2, 1.5, 2.0], -0.9778230068607561),
        ([-1.7, 0.4, 0.8, -3.5], -3.447960301330517),
        ([2.0, 0.0, 1.0, 0.0], -2.9189385332046727),
        ([-6.0, 0.0, 1.0, 5.0], -472.547035308988),
    ];
    for (x, lp) in cases {
        close(lpdf("skew_normal", &x), lp, 1e-11, "skew_normal_lpdf");
        check_partials("skew_normal", &x, &[true; 4], false);
    }
    // mean ξ + ωδ√(2/π), variance ω²(1 − 2δ²/π), δ = α/√(1 + α²)
    let (xi, om, al) = (0.5, 2.0, -3.0);
    let d: f64 = al / (1.0f64 + al * al).sqrt();
    let pi = std::f64::consts::PI;
    check_moments(
        "skew_normal",
        &[xi, om, al],
        xi + om * d * (2.0 / pi).sqrt(),
        om * om * (1.0 - 2.0 * d * d / pi),
        2,
    );
    // integrates to 1
    let mass = simpson(
        |t| lpdf("skew_normal", &[t, xi, om, al]).exp(),
        -30.0,
        30.0,
        20_000,
    );
    close(mass, 1.0, 1e-10, "∫ skew_normal");
}

#[test]
fn frechet_matches_scipy_and_its_partials_moments_and_cdf() {
    // scipy.stats.invweibull(alpha, scale=sigma).logpdf(y), .logcdf(y), .logsf(y)
    let cases = [
        (
            [1.3, 2.5, 0.9],
            -0.6641788192460691,
            -0.39879333633943986,
            -1.1120908732808927,
        ),
        (
            [0.2, 1.1, 3.0],
            -14.981688032145394,
            -19.665291345596252,
            -2.880530540951563e-09,
        ),
        (
            [7.0, 4.0, 2.0],
            -5.577331551962709,
            -0.006663890045814244,
            -5.014381968695457,
        ),
    ];
    for (x, lp, lc, ls) in cases {
        close(lpdf("frechet", &x), lp, 1e-12, "frechet_lpdf");
        close(lcdf("frechet", &x, false), lc, 1e-12, "frechet_lcdf");
        close(lcdf("frechet", &x, true), ls, 1e-9, "frechet_lccdf");
        check_partials("frechet", &x, &[true; 3], true);
    }
    // mean σΓ(1 − 1/α), variance σ²(Γ(1 − 2/α) − Γ(1 − 1/α)²), α = 5, σ = 1.5
    let g = |x: f64| statrs::function::gamma::gamma(x);
    let (a, s) = (5.0, 1.5);
    check_moments(
        "frechet",
        &[a, s],
        s * g(1.0 - 1.0 / a),
        s * s * (g(1.0 - 2.0 / a) - g(1.0 - 1.0 / a).powi(2)),
        3,
    );
    check_cdf_by_integration("frechet", &[2.5, 0.9], 1e-9, 0.0, 1.7);
}

#[test]
fn pareto_matches_scipy_and_its_partials_moments_and_cdf() {
    // scipy.stats.pareto(alpha, scale=y_min).logpdf(y), .logcdf(y), .logsf(y)
    let cases = [
        (
            [2.5, 1.2, 3.0],
            -2.019585968446647,
            -0.11719920611802026,
            -2.2019075252406015,
        ),
        (
            [1.0, 0.5, 0.7],
            -0.8418779703306941,
            -0.9559993013583779,
            -0.4852030263919617,
        ),
        (
            [40.0, 2.0, 1.5],
            -7.777012756336759,
            -0.011243309676511494,
            -4.4935984103309865,
        ),
    ];
    for (x, lp, lc, ls) in cases {
        close(lpdf("pareto", &x), lp, 1e-12, "pareto_lpdf");
        close(lcdf("pareto", &x, false), lc, 1e-12, "pareto_lcdf");
        close(lcdf("pareto", &x, true), ls, 1e-12, "pareto_lccdf");
        check_partials("pareto", &x, &[true; 3], true);
    }
    assert_eq!(lpdf("pareto", &[1.0, 1.2, 3.0]), f64::NEG_INFINITY);
    assert_eq!(lcdf("pareto", &[1.0, 1.2, 3.0], false), f64::NEG_INFINITY);
    assert_eq!(lcdf("pareto", &[1.0, 1.2, 3.0], true), 0.0);
    // mean α y_min/(α − 1), variance y_min² α/((α − 1)²(α − 2)), α = 6, y_min = 1.2
    let (m, a) = (1.2, 6.0);
    check_moments(
        "pareto",
        &[m, a],
        a * m / (a - 1.0),
        m * m * a / ((a - 1.0).powi(2) * (a - 2.0)),
        4,
    );
    check_cdf_by_integration("pareto", &[1.2, 3.0], 1.2, 0.0, 2.5);
}

#[test]
fn pareto_type_2_matches_scipy_and_its_partials_moments_and_cdf() {
    // scipy.stats.lomax(alpha, loc=mu, scale=lambda).logpdf(y), .logcdf(y), .logsf(y)
    let cases = [
        (
            [1.5, 0.2, 2.0, 3.0],
            -1.597636043541792,
            -0.25181543029539355,
            -1.5023258637374675,
        ),
        (
            [0.0, -1.0, 0.5, 1.2],
            -1.5414782977159418,
            -0.3114018698488798,
            -1.3183347464017316,
        ),
        (
            [25.0, 3.0, 4.0, 0.8],
            -4.9786818308569645,
            -0.2532184454840605,
            -1.497441741521273,
        ),
    ];
    for (x, lp, lc, ls) in cases {
        close(lpdf("pareto_type_2", &x), lp, 1e-12, "pareto_type_2_lpdf");
        close(
            lcdf("pareto_type_2", &x, false),
            lc,
            1e-12,
            "pareto_type_2_lcdf",
        );
        close(
            lcdf("pareto_type_2", &x, true),
            ls,
            1e-12,
            "pareto_type_2_lccdf",
        );
        check_partials("pareto_type_2", &x, &[true; 4], true);
    }
    // mean μ + λ/(α − 1), variance λ²α/((α − 1)²(α − 2)), α = 7
    let (mu, l, a) = (0.5, 2.0, 7.0);
    check_moments(
        "pareto_type_2",
        &[mu, l, a],
        mu + l / (a - 1.0),
        l * l * a / ((a - 1.0).powi(2) * (a - 2.0)),
        5,
    );
    check_cdf_by_integration("pareto_type_2", &[0.2, 2.0, 3.0], 0.2, 0.0, 1.5);
    // below the location: an error naming the argument, not a NaN
    let err = log_density(
        family("pareto_type_2"),
        &scalars(&[0.0, 0.2, 2.0, 3.0]),
        &[false; 4],
        false,
    )
    .unwrap_err();
    assert!(err.to_string().contains("greater than or equal"), "{err}");
}

#[test]
fn exp_mod_normal_matches_scipy_and_its_partials_moments_and_cdf() {
    // scipy.stats.exponnorm(1/(sigma*lambda), loc=mu, scale=sigma).logpdf(y), .logcdf, .logsf
    let cases = [
        (
            [1.0, 0.3, 0.7, 1.5],
            -0.8271265872611955,
            -0.5981848414134352,
            -0.798082721882054,
        ),
        (
            [-2.0, 0.0, 1.0, 0.4],
            -4.840212398744827,
            -5.813587856034554,
            -0.002991164068446143,
        ),
        (
            [6.0, 1.0, 0.5, 3.0],
            -12.77638771133189,
            -9.422459256464003e-07,
            -13.875,
        ),
    ];
    for (x, lp, lc, ls) in cases {
        close(lpdf("exp_mod_normal", &x), lp, 1e-11, "exp_mod_normal_lpdf");
        close(
            lcdf("exp_mod_normal", &x, false),
            lc,
            1e-9,
            "exp_mod_normal_lcdf",
        );
        close(
            lcdf("exp_mod_normal", &x, true),
            ls,
            1e-9,
            "exp_mod_normal_lccdf",
        );
        check_partials("exp_mod_normal", &x, &[true; 4], true);
    }
    // mean μ + 1/λ, variance σ² + 1/λ²
    let (mu, s, l) = (0.3, 0.7, 1.5);
    check_moments(
        "exp_mod_normal",
        &[mu, s, l],
        mu + 1.0 / l,
        s * s + 1.0 / (l * l),
        6,
    );
    check_cdf_by_integration("exp_mod_normal", &[mu, s, l], -12.0, 0.0, 1.0);
}

#[test]
fn von_mises_matches_scipy_and_its_partials_and_moments() {
    // scipy.stats.vonmises(kappa, loc=mu).logpdf(y)
    let cases = [
        ([0.4, -0.3, 2.0], -1.1321862333233248),
        ([2.9, 0.1, 0.5], -2.3705379559291555),
        ([-1.0, -1.2, 40.0], 0.12499918588796355),
        ([1.0, 0.0, 0.0], -1.8378770664093453),
    ];
    for (x, lp) in cases {
        close(lpdf("von_mises", &x), lp, 1e-12, "von_mises_lpdf");
        // κ = 0 is the boundary: no two-sided difference in κ there
        check_partials("von_mises", &x, &[true, true, x[2] > 0.0], false);
    }
    // κ on both sides of the series/asymptotic switch at 30
    for k in [29.9, 30.1, 100.0] {
        check_partials("von_mises", &[0.2, 0.0, k], &[true; 3], false);
    }
    // normalised over [μ − π, μ + π]
    let pi = std::f64::consts::PI;
    for k in [0.3, 5.0, 45.0] {
        let mass = simpson(
            |t| lpdf("von_mises", &[t, 0.7, k]).exp(),
            0.7 - pi,
            0.7 + pi,
            20_000,
        );
        close(mass, 1.0, 1e-10, "∫ von_mises");
    }
    // draws lie in [μ′ − π, μ′ + π]; E cos(y − μ) = I₁(κ)/I₀(κ) (scipy.special.i1e(2)/i0e(2) =
    // 0.6977746579640081), E sin(y − μ) = 0
    let (mu, k) = (0.4, 2.0);
    let mut r = stream(7, 0);
    let n = 200_000;
    let (mut c, mut s) = (0.0, 0.0);
    for _ in 0..n {
        let y = rng(family("von_mises"), &[mu, k], &mut r).unwrap();
        assert!((mu - pi..=mu + pi).contains(&y), "{y}");
        c += (y - mu).cos();
        s += (y - mu).sin();
    }
    let (c, s) = (c / n as f64, s / n as f64);
    // sd of cos(y − μ) and sin(y − μ) is below 1: 5 standard errors < 5/√n
    assert!(
        (c - 0.6977746579640081).abs() < 5.0 / (n as f64).sqrt(),
        "{c}"
    );
    assert!(s.abs() < 5.0 / (n as f64).sqrt(), "{s}");
    // huge concentrations (where Best & Fisher's constants overflow) end, with sd 1/√κ
    for k in [1e8, 1e300] {
        let ys: Vec<f64> = (0..2000)
            .map(|_| rng(family("von_mises"), &[mu, k], &mut r).unwrap())
            .collect();
        let m = ys.iter().sum::<f64>() / 2000.0;
        let sd = (ys.iter().map(|y| (y - m).powi(2)).sum::<f64>() / 1999.0).sqrt();
        // (the centre μ wrapped into [−π, π) carries rounding of order 1e-15)
        let tol = (5.0 / (k.sqrt() * 2000f64.sqrt())).max(1e-12);
        assert!((m - mu).abs() < tol, "κ = {k}: mean {m}");
        if k < 1e20 {
            assert!((sd * k.sqrt() - 1.0).abs() < 0.1, "κ = {k}: sd {sd}");
        }
    }
}

#[test]
fn sampling_statements_drop_only_constants() {
    // Under `~` with some arguments data, the dropped part is the same at every value of the
    // parameters: the difference between the normalised and the `~` value is constant.
    let cases: &[(&str, [f64; 4], usize, usize)] = &[
        ("beta_binomial", [3.0, 10.0, 2.5, 4.0], 4, 2),
        ("skew_normal", [0.3, -0.2, 1.5, 2.0], 4, 1),
        ("frechet", [1.3, 2.5, 0.9, 0.0], 3, 2),
        ("pareto", [2.5, 1.2, 3.0, 0.0], 3, 2),
        ("pareto_type_2", [1.5, 0.2, 2.0, 3.0], 4, 1),
        ("exp_mod_normal", [1.0, 0.3, 0.7, 1.5], 4, 1),
        ("von_mises", [0.4, -0.3, 2.0, 0.0], 3, 1),
    ];
    for &(name, x, n_args, var) in cases {
        let f = family(name);
        let mut is_var = vec![false; n_args];
        is_var[var] = true;
        let diff = |shift: f64| {
            let mut x = x[..n_args].to_vec();
            x[var] += shift;
            let a = scalars(&x);
            log_density(f, &a, &is_var, false).unwrap().value
                - log_density(f, &a, &is_var, true).unwrap().value
        };
        let (d0, d1) = (diff(0.0), diff(0.1));
        assert!((d0 - d1).abs() < 1e-12, "{name}: dropped {d0} vs {d1}");
    }
}
