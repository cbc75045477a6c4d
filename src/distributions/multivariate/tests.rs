//! Values against closed forms, normalisation by numerical integration, partials against
//! central finite differences, Stan-worded argument errors, and `_rng` moments.

use super::*;
use crate::inference::rng::stream;
use statrs::distribution::{Beta, Continuous, Normal};

const HALF_LOG_TWO_PI: f64 = 0.918_938_533_204_672_8;

fn lp(family: MvFamily, args: &[MvArg], propto: bool) -> f64 {
    log_density(family, args, &vec![false; args.len()], propto)
        .expect("valid arguments")
        .value
}

/// Central finite differences of the normalised density in every real of every argument
/// listed in `vars`, against the analytic partials.
fn check_partials(family: MvFamily, args: &[MvArg], vars: &[usize], tol: f64) {
    check_partials_where(family, args, vars, tol, |_, _| true);
}

/// As [`check_partials`], perturbing only the elements `(k, i)` where `keep(k, i)` (so that a
/// perturbation does not leave the support, e.g. the upper triangle of a Cholesky factor).
fn check_partials_where(
    family: MvFamily,
    args: &[MvArg],
    vars: &[usize],
    tol: f64,
    keep: impl Fn(usize, usize) -> bool,
) {
    let mut is_var = vec![false; args.len()];
    for &k in vars {
        is_var[k] = true;
    }
    let term = log_density(family, args, &is_var, false).expect("valid arguments");
    for &k in vars {
        for i in (0..args[k].data.len()).filter(|&i| keep(k, i)) {
            let h = 1e-6;
            let mut plus = args[k].data.to_vec();
            let mut minus = plus.clone();
            plus[i] += h;
            minus[i] -= h;
            let mut a = args.to_vec();
            a[k] = MvArg {
                data: &plus,
                ..args[k]
            };
            let fp = lp(family, &a, false);
            a[k] = MvArg {
                data: &minus,
                ..args[k]
            };
            let fm = lp(family, &a, false);
            let fd = (fp - fm) / (2.0 * h);
            let d = term.partials[k][i];
            assert!(
                (fd - d).abs() < tol * (1.0 + fd.abs()),
                "{family:?} arg {k} elem {i}: analytic {d}, finite difference {fd}"
            );
        }
    }
}

fn message(family: MvFamily, args: &[MvArg]) -> String {
    log_density(family, args, &vec![false; args.len()], false)
        .expect_err("invalid arguments")
        .to_string()
}

/// Σ = [[2, 0.6], [0.6, 1]] and its Cholesky factor, column-major.
const SIGMA: [f64; 4] = [2.0, 0.6, 0.6, 1.0];

fn chol2() -> [f64; 4] {
    let l11 = 2f64.sqrt();
    let l21 = 0.6 / l11;
    [l11, l21, 0.0, (1.0 - l21 * l21).sqrt()]
}

/// log N(y | μ, Σ) for 2 × 2 Σ by the explicit inverse and determinant.
fn mvn2(y: [f64; 2], mu: [f64; 2]) -> f64 {
    let (a, b, c) = (SIGMA[0], SIGMA[1], SIGMA[3]);
    let det = a * c - b * b;
    let (r0, r1) = (y[0] - mu[0], y[1] - mu[1]);
    let q = (c * r0 * r0 - 2.0 * b * r0 * r1 + a * r1 * r1) / det;
    -2.0 * HALF_LOG_TWO_PI - 0.5 * det.ln() - 0.5 * q
}

#[test]
fn multi_normal_matches_the_explicit_two_dimensional_formula() {
    let y = [0.3, -1.2, 1.5, 0.4];
    let mu = [0.1, 0.2];
    let expected = mvn2([0.3, -1.2], mu) + mvn2([1.5, 0.4], mu);
    let args = [
        MvArg::vectors(&y, 2),
        MvArg::vector(&mu),
        MvArg::matrix(&SIGMA, 2, 2),
    ];
    assert!((lp(MvFamily::MultiNormal, &args, false) - expected).abs() < 1e-12);
    let l = chol2();
    let args_l = [args[0], args[1], MvArg::matrix(&l, 2, 2)];
    assert!((lp(MvFamily::MultiNormalCholesky, &args_l, false) - expected).abs() < 1e-12);
    // propto with only y variable drops the normalising terms: −½ Σ qᵢ.
    let t = log_density(MvFamily::MultiNormal, &args, &[true, false, false], true).unwrap();
    let q_only = expected + 2.0 * (2.0 * HALF_LOG_TWO_PI + 0.5 * (2.0 - 0.36f64).ln());
    assert!((t.value - q_only).abs() < 1e-12);
    // Diagonal Σ: a product of univariate normals (statrs).
    let diag = [4.0, 0.0, 0.0, 0.25];
    let v = lp(
        MvFamily::MultiNormal,
        &[
            MvArg::vector(&[1.0, -0.5]),
            MvArg::vector(&[0.0, 0.0]),
            MvArg::matrix(&diag, 2, 2),
        ],
        false,
    );
    let u =
        Normal::new(0.0, 2.0).unwrap().ln_pdf(1.0) + Normal::new(0.0, 0.5).unwrap().ln_pdf(-0.5);
    assert!((v - u).abs() < 1e-12);
}

#[test]
fn multi_normal_partials_match_finite_differences() {
    let y = [0.3, -1.2, 0.7, 1.5, 0.4, -0.1];
    let mu = [0.1, 0.2, -0.3];
    let s = [2.0, 0.6, 0.3, 0.6, 1.0, -0.2, 0.3, -0.2, 1.5];
    let args = [
        MvArg::vectors(&y, 2),
        MvArg::vector(&mu),
        MvArg::matrix(&s, 3, 3),
    ];
    // Σ's finite differences perturb one entry (breaking symmetry beyond the tolerance), so
    // Σ is checked through a symmetric perturbation below and y, μ here.
    check_partials(MvFamily::MultiNormal, &args, &[0, 1], 1e-6);
    let t = log_density(MvFamily::MultiNormal, &args, &[false, false, true], false).unwrap();
    for (i, j) in [(0, 0), (1, 0), (2, 1), (2, 2)] {
        let h = 1e-6;
        let bump = |d: f64| {
            let mut m = s;
            m[i + 3 * j] += d;
            if i != j {
                m[j + 3 * i] += d;
            }
            let a = [args[0], args[1], MvArg::matrix(&m, 3, 3)];
            lp(MvFamily::MultiNormal, &a, false)
        };
        let fd = (bump(h) - bump(-h)) / (2.0 * h);
        let analytic = if i == j {
            t.partials[2][i + 3 * j]
        } else {
            t.partials[2][i + 3 * j] + t.partials[2][j + 3 * i]
        };
        assert!(
            (fd - analytic).abs() < 1e-6,
            "Σ[{i},{j}]: {analytic} vs {fd}"
        );
    }
    let l = [1.4, 0.4, 0.2, 0.0, 0.9, -0.3, 0.0, 0.0, 1.1];
    let args = [
        MvArg::vectors(&y, 2),
        MvArg::vectors(&[0.1, 0.2, -0.3, 0.0, 0.5, 0.1], 2),
        MvArg::matrix(&l, 3, 3),
    ];
    check_partials(MvFamily::MultiNormalCholesky, &args, &[0, 1, 2], 1e-6);
}

#[test]
fn multi_normal_rejects_bad_arguments_in_stan_words() {
    let y = [0.0, 0.0];
    let bad = [1.0, 2.0, 2.0, 1.0];
    let m = message(
        MvFamily::MultiNormal,
        &[
            MvArg::vector(&y),
            MvArg::vector(&y),
            MvArg::matrix(&bad, 2, 2),
        ],
    );
    assert_eq!(
        m,
        "multi_normal_lpdf: Covariance matrix is not positive definite"
    );
    let asym = [1.0, 0.5, 0.4, 1.0];
    let m = message(
        MvFamily::MultiNormal,
        &[
            MvArg::vector(&y),
            MvArg::vector(&y),
            MvArg::matrix(&asym, 2, 2),
        ],
    );
    assert_eq!(
        m,
        "multi_normal_lpdf: Covariance matrix is not symmetric. Covariance matrix[1,2] = 0.4, but Covariance matrix[2,1] = 0.5"
    );
    let m = message(
        MvFamily::MultiNormalCholesky,
        &[
            MvArg::vector(&[0.0, 0.0, 0.0]),
            MvArg::vector(&[0.0, 0.0, 0.0]),
            MvArg::matrix(&SIGMA, 2, 2),
        ],
    );
    assert_eq!(
        m,
        "multi_normal_cholesky_lpdf: size of Random variable (3) and rows of Cholesky factor of covariance matrix (2) must match in size"
    );
    let m = message(
        MvFamily::MultiNormal,
        &[
            MvArg::vector(&y),
            MvArg::vector(&[0.0, f64::INFINITY]),
            MvArg::matrix(&SIGMA, 2, 2),
        ],
    );
    assert_eq!(
        m,
        "multi_normal_lpdf: Location parameter[2] is inf, but must be finite"
    );
}

#[test]
fn multi_normal_rng_has_the_requested_mean_and_covariance() {
    let mut rng = stream(7, 0);
    let mu = [1.0, -2.0];
    let n = 20_000;
    let (mut s0, mut s1, mut s01, mut s00, mut s11) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for _ in 0..n {
        let MvDraw::Vector(v) = rng_draw(
            MvFamily::MultiNormal,
            &[MvArg::vector(&mu), MvArg::matrix(&SIGMA, 2, 2)],
            &mut rng,
        ) else {
            panic!("a single location gives one vector")
        };
        s0 += v[0];
        s1 += v[1];
        s00 += (v[0] - mu[0]).powi(2);
        s11 += (v[1] - mu[1]).powi(2);
        s01 += (v[0] - mu[0]) * (v[1] - mu[1]);
    }
    let nf = n as f64;
    // Monte Carlo standard errors: sd/√n ≈ 0.01 for the means, ≈ 0.02 for the covariances.
    assert!((s0 / nf - 1.0).abs() < 0.05 && (s1 / nf + 2.0).abs() < 0.035);
    assert!((s00 / nf - 2.0).abs() < 0.1 && (s11 / nf - 1.0).abs() < 0.05);
    assert!((s01 / nf - 0.6).abs() < 0.05);
}

fn rng_draw(
    family: MvFamily,
    params: &[MvArg],
    r: &mut crate::inference::rng::StreamRng,
) -> MvDraw {
    rng(family, params, r).expect("valid parameters")
}

#[test]
fn lkj_corr_cholesky_in_two_dimensions_is_the_scaled_beta_density_of_the_correlation() {
    // K = 2: L = [[1, 0], [r, √(1 − r²)]] and the density of r is (1 − r²)^{η−1} / (2^{2η−1} B(η, η)).
    for &(r, eta) in &[(0.3f64, 1.0), (-0.7, 2.5), (0.1, 0.5)] {
        let l = [1.0, r, 0.0, (1.0f64 - r * r).sqrt()];
        let v = lp(
            MvFamily::LkjCorrCholesky,
            &[MvArg::matrix(&l, 2, 2), MvArg::scalar(&[eta])],
            false,
        );
        let beta = Beta::new(eta, eta).unwrap().ln_pdf((r + 1.0) / 2.0) - std::f64::consts::LN_2;
        assert!(
            (v - beta).abs() < 1e-12,
            "r = {r}, η = {eta}: {v} vs {beta}"
        );
    }
    // K = 3, η = 1: uniform over correlation matrices, whose volume is π²/2; the density of L
    // is 1/(π²/2) times the Jacobian Π Lᵢᵢ^{K−i} = L₂₂.
    let (a, b) = (0.3f64, 0.2f64);
    let l22 = (1.0 - a * a).sqrt();
    let c = 0.4;
    let l33 = (1.0 - b * b - c * c).sqrt();
    let l = [1.0, a, b, 0.0, l22, c, 0.0, 0.0, l33];
    let v = lp(
        MvFamily::LkjCorrCholesky,
        &[MvArg::matrix(&l, 3, 3), MvArg::scalar(&[1.0])],
        false,
    );
    let expected = l22.ln() - (std::f64::consts::PI.powi(2) / 2.0).ln();
    assert!((v - expected).abs() < 1e-12);
    // Only the diagonal enters the density; the strict upper triangle must stay 0.
    check_partials_where(
        MvFamily::LkjCorrCholesky,
        &[MvArg::matrix(&l, 3, 3), MvArg::scalar(&[1.7])],
        &[0, 1],
        1e-6,
        |k, i| k == 1 || i % 3 >= i / 3,
    );
    let m = message(
        MvFamily::LkjCorrCholesky,
        &[MvArg::matrix(&l, 3, 3), MvArg::scalar(&[0.0])],
    );
    assert_eq!(
        m,
        "lkj_corr_cholesky_lpdf: Shape parameter is 0, but must be positive finite"
    );
}

#[test]
fn lkj_corr_cholesky_rng_gives_beta_marginal_correlations() {
    // LKJ(η) marginal of each correlation: Beta(η − 1 + K/2, η − 1 + K/2) on (−1, 1)
    // (LKJ 2009 §3.2), variance 1/(2b + 1): 1/4 for K = 3, η = 1; 1/6 for K = 4, η = 1.5.
    let mut r = stream(11, 0);
    for &(k, eta, var) in &[(3usize, 1.0, 0.25), (4, 1.5, 1.0 / 6.0)] {
        let n = 10_000;
        let (mut s, mut s2) = (0.0, 0.0);
        for _ in 0..n {
            let MvDraw::Matrix { data, .. } = rng_draw(
                MvFamily::LkjCorrCholesky,
                &[MvArg::scalar(&[k as f64]), MvArg::scalar(&[eta])],
                &mut r,
            ) else {
                panic!("lkj_corr_cholesky_rng returns a matrix")
            };
            // Ω[k−1, 0] = L[k−1, 0] · L[0, 0] = L[k−1, 0]; also check unit diagonal of LLᵀ.
            let last: f64 = (0..k).map(|p| data[k - 1 + p * k].powi(2)).sum();
            assert!((last - 1.0).abs() < 1e-12);
            // Ω[k−1, 1] = Σ_p L[k−1, p] L[1, p].
            let rho: f64 = (0..k).map(|p| data[k - 1 + p * k] * data[1 + p * k]).sum();
            s += rho;
            s2 += rho * rho;
        }
        let (m, v) = (s / n as f64, s2 / n as f64);
        assert!(m.abs() < 0.02, "mean {m}");
        assert!((v - var).abs() < 0.012, "variance {v} vs {var}");
    }
}

#[test]
fn dirichlet_in_two_dimensions_is_beta_and_in_three_integrates_to_one() {
    for &(t, a, b) in &[(0.3, 2.0, 5.0), (0.9, 0.5, 0.7), (0.5, 1.0, 1.0)] {
        let v = lp(
            MvFamily::Dirichlet,
            &[MvArg::vector(&[t, 1.0 - t]), MvArg::vector(&[a, b])],
            false,
        );
        let beta = Beta::new(a, b).unwrap().ln_pdf(t);
        assert!((v - beta).abs() < 1e-12, "{v} vs {beta}");
    }
    // ∫∫ p(θ₁, θ₂, 1 − θ₁ − θ₂) dθ₁ dθ₂ over the triangle by the midpoint rule.
    let alpha = [2.0, 3.0, 1.5];
    let m = 400;
    let h = 1.0 / m as f64;
    let mut total = 0.0;
    for i in 0..m {
        for j in 0..m - i {
            let (t1, t2) = ((i as f64 + 0.3) * h, (j as f64 + 0.3) * h);
            let t3 = 1.0 - t1 - t2;
            if t3 <= 0.0 {
                continue;
            }
            total += lp(
                MvFamily::Dirichlet,
                &[MvArg::vector(&[t1, t2, t3]), MvArg::vector(&alpha)],
                false,
            )
            .exp()
                * h
                * h;
        }
    }
    assert!((total - 1.0).abs() < 5e-3, "integral {total}");
    check_partials(
        MvFamily::Dirichlet,
        &[
            MvArg::vectors(&[0.2, 0.5, 0.3, 0.6, 0.1, 0.3], 2),
            MvArg::vector(&[2.0, 3.0, 1.5]),
        ],
        // θ's partials are checked through simplex parameters in tests/multivariate.rs (a
        // single-element perturbation leaves the simplex).
        &[1],
        1e-6,
    );
    let m = message(
        MvFamily::Dirichlet,
        &[MvArg::vector(&[0.2, 0.5, 0.4]), MvArg::vector(&alpha)],
    );
    assert!(
        m.starts_with(
            "dirichlet_lpdf: probabilities is not a valid simplex. sum(probabilities) = 1.1"
        ),
        "{m}"
    );
    let m = message(
        MvFamily::Dirichlet,
        &[
            MvArg::vector(&[0.2, 0.5, 0.3]),
            MvArg::vector(&[1.0, -1.0, 1.0]),
        ],
    );
    assert_eq!(
        m,
        "dirichlet_lpdf: prior sample sizes[2] is -1, but must be positive finite"
    );
}

#[test]
fn dirichlet_rng_has_the_dirichlet_mean() {
    let mut r = stream(3, 1);
    let alpha = [1.0, 2.0, 3.0];
    let n = 10_000;
    let mut s = [0.0; 3];
    for _ in 0..n {
        let MvDraw::Vector(v) = rng_draw(MvFamily::Dirichlet, &[MvArg::vector(&alpha)], &mut r)
        else {
            panic!("dirichlet_rng returns a vector")
        };
        assert!((v.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        for k in 0..3 {
            s[k] += v[k];
        }
    }
    for k in 0..3 {
        // Mean αₖ/Σα; sd of the mean ≤ 0.2/√n = 0.002.
        assert!((s[k] / n as f64 - alpha[k] / 6.0).abs() < 0.01);
    }
}

#[test]
fn categorical_masses_sum_to_one_and_match_softmax() {
    let theta = [0.2, 0.5, 0.3];
    let total: f64 = (1..=3)
        .map(|y| {
            lp(
                MvFamily::Categorical,
                &[MvArg::scalar(&[y as f64]), MvArg::vector(&theta)],
                false,
            )
            .exp()
        })
        .sum();
    assert!((total - 1.0).abs() < 1e-14);
    let beta = [0.4, -1.0, 2.0];
    let z: f64 = beta.iter().map(|b: &f64| b.exp()).sum();
    let ys = [3.0, 1.0, 3.0];
    let v = lp(
        MvFamily::CategoricalLogit,
        &[MvArg::vectors(&ys, 3), MvArg::vector(&beta)],
        false,
    );
    let expected = (2.0 * beta[2] + beta[0]) - 3.0 * z.ln();
    assert!((v - expected).abs() < 1e-12);
    check_partials(
        MvFamily::CategoricalLogit,
        &[MvArg::vectors(&ys, 3), MvArg::vector(&beta)],
        &[1],
        1e-6,
    );
    // categorical's θ partials (nₖ/θₖ) are checked through a simplex parameter in
    // tests/multivariate.rs: perturbing one θₖ leaves the simplex.
    let t = log_density(
        MvFamily::Categorical,
        &[MvArg::vectors(&ys, 3), MvArg::vector(&theta)],
        &[false, true],
        false,
    )
    .unwrap();
    assert_eq!(t.partials[1], vec![1.0 / 0.2, 0.0, 2.0 / 0.3]);
    let m = message(
        MvFamily::Categorical,
        &[MvArg::vectors(&[1.0, 4.0], 2), MvArg::vector(&theta)],
    );
    assert_eq!(
        m,
        "categorical_lpmf: Number of categories[2] is 4, but must be in the interval [1, 3]"
    );
    let m = message(
        MvFamily::Categorical,
        &[MvArg::scalar(&[1.0]), MvArg::vector(&[0.5, 0.6])],
    );
    assert!(
        m.contains("Probabilities parameter is not a valid simplex"),
        "{m}"
    );
    // rng frequencies.
    let mut r = stream(5, 0);
    let mut counts = [0usize; 3];
    for _ in 0..20_000 {
        let MvDraw::Int(y) = rng_draw(MvFamily::CategoricalLogit, &[MvArg::vector(&beta)], &mut r)
        else {
            panic!("categorical_logit_rng returns an int")
        };
        counts[y as usize - 1] += 1;
    }
    for k in 0..3 {
        let p = beta[k].exp() / z;
        assert!((counts[k] as f64 / 20_000.0 - p).abs() < 0.015);
    }
}

#[test]
fn ordered_logistic_masses_sum_to_one_and_partials_match() {
    let c = [-1.0, 0.5, 2.0];
    let eta = 0.3;
    let probs: Vec<f64> = (1..=4)
        .map(|y| {
            lp(
                MvFamily::OrderedLogistic,
                &[
                    MvArg::scalar(&[y as f64]),
                    MvArg::scalar(&[eta]),
                    MvArg::vector(&c),
                ],
                false,
            )
            .exp()
        })
        .collect();
    assert!((probs.iter().sum::<f64>() - 1.0).abs() < 1e-14);
    let s = |x: f64| 1.0 / (1.0 + (-x).exp());
    assert!((probs[1] - (s(eta - c[0]) - s(eta - c[1]))).abs() < 1e-14);
    assert!((probs[3] - s(eta - c[2])).abs() < 1e-14);
    check_partials(
        MvFamily::OrderedLogistic,
        &[
            MvArg::vectors(&[1.0, 2.0, 3.0, 4.0, 2.0], 5),
            MvArg::vector(&[0.3, -0.2, 1.0, 2.5, -3.0]),
            MvArg::vector(&c),
        ],
        &[1, 2],
        1e-6,
    );
    let m = message(
        MvFamily::OrderedLogistic,
        &[
            MvArg::scalar(&[2.0]),
            MvArg::scalar(&[0.0]),
            MvArg::vector(&[1.0, 0.5]),
        ],
    );
    assert_eq!(
        m,
        "ordered_logistic_lpmf: Cut-points is not a valid ordered vector. The element at 2 is 0.5, but should be greater than the previous element, 1"
    );
    let m = message(
        MvFamily::OrderedLogistic,
        &[
            MvArg::scalar(&[5.0]),
            MvArg::scalar(&[0.0]),
            MvArg::vector(&c),
        ],
    );
    assert_eq!(
        m,
        "ordered_logistic_lpmf: Random variable is 5, but must be in the interval [1, 4]"
    );
    let m = message(
        MvFamily::OrderedLogistic,
        &[
            MvArg::scalar(&[2.0]),
            MvArg::vector(&[0.0, 1.0]),
            MvArg::vector(&c),
        ],
    );
    assert!(
        m.contains("Random variable is a single int but Location parameter has 2 elements"),
        "{m}"
    );
    let m = message(
        MvFamily::OrderedLogistic,
        &[
            MvArg::vectors(&[2.0, 1.0, 1.0], 3),
            MvArg::vector(&[0.0, 1.0]),
            MvArg::vector(&c),
        ],
    );
    assert!(m.contains("must match in size"), "{m}");
    let mut r = stream(9, 0);
    let mut counts = [0usize; 4];
    for _ in 0..20_000 {
        let MvDraw::Int(y) = rng_draw(
            MvFamily::OrderedLogistic,
            &[MvArg::scalar(&[eta]), MvArg::vector(&c)],
            &mut r,
        ) else {
            panic!("ordered_logistic_rng returns an int")
        };
        counts[y as usize - 1] += 1;
    }
    for k in 0..4 {
        assert!((counts[k] as f64 / 20_000.0 - probs[k]).abs() < 0.015);
    }
}

#[test]
fn propto_drops_exactly_the_constant_terms() {
    // With every argument data, `~` adds nothing.
    let t = log_density(
        MvFamily::Dirichlet,
        &[MvArg::vector(&[0.2, 0.8]), MvArg::vector(&[2.0, 3.0])],
        &[false, false],
        true,
    )
    .unwrap();
    assert_eq!(t.value, 0.0);
    // θ variable, α data: Σ (αₖ − 1) log θₖ only.
    let t = log_density(
        MvFamily::Dirichlet,
        &[MvArg::vector(&[0.2, 0.8]), MvArg::vector(&[2.0, 3.0])],
        &[true, false],
        true,
    )
    .unwrap();
    assert!((t.value - (0.2f64.ln() + 2.0 * 0.8f64.ln())).abs() < 1e-14);
    assert!(
        log_density(
            MvFamily::Categorical,
            &[MvArg::scalar(&[1.0]), MvArg::vector(&[0.5, 0.5])],
            &[true, false],
            false
        )
        .unwrap_err()
        .to_string()
        .contains("cannot depend on parameters")
    );
}

#[test]
fn function_names_resolve_with_their_kind() {
    let k = |n: &str| lookup_function(n).map(|(s, k)| (s.family, k));
    assert_eq!(
        k("multi_normal_lpdf"),
        Some((MvFamily::MultiNormal, FunctionKind::LogDensity))
    );
    assert_eq!(
        k("categorical_logit_lupmf"),
        Some((
            MvFamily::CategoricalLogit,
            FunctionKind::UnnormalisedLogDensity
        ))
    );
    assert_eq!(
        k("lkj_corr_cholesky_rng"),
        Some((MvFamily::LkjCorrCholesky, FunctionKind::Rng))
    );
    assert_eq!(k("dirichlet_lpmf"), None);
    assert_eq!(k("categorical_lpdf"), None);
    assert_eq!(k("multi_normal_lcdf"), None);
    for row in MV_FAMILIES {
        assert!(
            crate::distributions::lookup(row.name).is_none(),
            "{} is in both tables",
            row.name
        );
    }
}
