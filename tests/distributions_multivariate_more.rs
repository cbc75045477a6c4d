//! The multivariate families added for issue 14 — lkj_corr, wishart, wishart_cholesky,
//! inv_wishart, multi_student_t, multi_normal_prec, multi_gp_cholesky, ordered_probit and the
//! GLMs poisson_log_glm, bernoulli_logit_glm, categorical_logit_glm — against scipy 1.17.1
//! values (the call beside each number; `/tmp`-free: the inputs are written out here), their
//! gradients through whole models against central differences, and `_rng` moments against the
//! analytic ones (fixed seeds).

use bayesc::data::load_json_str;
use bayesc::distributions::multivariate::{self, MvArg, MvDraw};
use bayesc::graph::Model;
use bayesc::inference::LogDensity;
use bayesc::inference::rng::stream;
use bayesc::pipeline;
use bayesc::syntax::report::render_plain;
use bayesc::syntax::source::SourceMap;
use rand::RngExt;

fn compile(src: &str, data: &str) -> Model {
    let mut sources = SourceMap::new();
    let result = pipeline::check_source(&mut sources, "model.bayes", src).and_then(|checked| {
        let data = if data.is_empty() {
            vec![]
        } else {
            vec![load_json_str("data.json", data).expect("test data is valid JSON")]
        };
        pipeline::compile(&checked, &sources, &data)
    });
    result.unwrap_or_else(|f| {
        let text: String = f
            .into_reports()
            .iter()
            .map(|d| render_plain(&sources, d))
            .collect();
        panic!("model does not compile:\n{text}")
    })
}

/// The model's gradient against central differences at three random points in (−1, 1)^d.
fn check_gradient(model: &Model, seed: u64) {
    let d = model.dim();
    let mut rng = stream(seed, 0);
    for _ in 0..3 {
        let theta: Vec<f64> = (0..d).map(|_| rng.random_range(-1.0..1.0)).collect();
        let mut grad = vec![0.0; d];
        model
            .log_density_grad(&theta, &mut grad)
            .expect("finite density");
        for i in 0..d {
            let h = 1e-6;
            let mut p = theta.clone();
            p[i] += h;
            let fp = model.log_density(&p).unwrap();
            p[i] -= 2.0 * h;
            let fm = model.log_density(&p).unwrap();
            let fd = (fp - fm) / (2.0 * h);
            assert!(
                (fd - grad[i]).abs() < 1e-5 * (1.0 + fd.abs()),
                "component {i}: gradient {} vs finite difference {fd}",
                grad[i]
            );
        }
    }
}

fn lpdf(name: &str, args: &[MvArg]) -> f64 {
    let f = multivariate::lookup(name).expect("registered").family;
    multivariate::log_density(f, args, &vec![false; args.len()], false)
        .unwrap()
        .value
}

fn close(a: f64, b: f64, what: &str) {
    assert!(
        (a - b).abs() < 1e-10 * (1.0 + b.abs()),
        "{what}: {a} vs {b}"
    );
}

// S and W, symmetric positive definite (column-major = row-major).
const S: [f64; 9] = [2.0, 0.3, -0.4, 0.3, 1.0, 0.2, -0.4, 0.2, 1.5];
const W: [f64; 9] = [1.2, -0.2, 0.1, -0.2, 0.8, 0.3, 0.1, 0.3, 2.1];
// numpy.linalg.cholesky of W and S, column-major
const LW: [f64; 9] = [
    1.0954451150103321,
    -0.18257418583505539,
    0.09128709291752769,
    0.0,
    0.8755950357709131,
    0.3616588191227685,
    0.0,
    0.0,
    1.40031052456853,
];
const LS: [f64; 9] = [
    std::f64::consts::SQRT_2,
    0.21213203435596423,
    -0.282842712474619,
    0.0,
    0.9772410142846032,
    0.2660551452502585,
    0.0,
    0.0,
    1.1615569980357674,
];

#[test]
fn matrix_densities_match_scipy() {
    let nu = [4.5];
    let m = |x: &'static [f64]| MvArg::matrix(x, 3, 3);
    // scipy.stats.wishart(df=4.5, scale=S).logpdf(W)
    close(
        lpdf("wishart", &[m(&W), MvArg::scalar(&nu), m(&S)]),
        -9.877874917310795,
        "wishart",
    );
    // scipy.stats.invwishart(df=4.5, scale=S).logpdf(W)
    close(
        lpdf("inv_wishart", &[m(&W), MvArg::scalar(&nu), m(&S)]),
        -8.73893759716998,
        "inv_wishart",
    );
    // wishart.logpdf(W) + 3 log 2 + Σ_k (3 − k + 1) log LW_kk (Stan's Jacobian of L ↦ L Lᵀ)
    close(
        lpdf("wishart_cholesky", &[m(&LW), MvArg::scalar(&nu), m(&LS)]),
        -7.453960190883291,
        "wishart_cholesky",
    );
    let y = [0.5, -1.2, 2.0];
    let mu = [0.1, 0.2, -0.3];
    // scipy.stats.multivariate_t(loc=mu, shape=S, df=3.5).logpdf(y)
    close(
        lpdf(
            "multi_student_t",
            &[
                MvArg::vector(&y),
                MvArg::scalar(&[3.5]),
                MvArg::vector(&mu),
                m(&S),
            ],
        ),
        -6.923897911277699,
        "multi_student_t",
    );
    // scipy.stats.multivariate_normal(mu, S).logpdf(y), with Ω = S⁻¹ (numpy.linalg.inv)
    let omega = [
        0.5665502522312766,
        -0.20566550252231275,
        0.1785021342646488,
        -0.2056655025223128,
        1.1020566550252233,
        -0.2017850213426465,
        0.1785021342646488,
        -0.20178502134264648,
        0.7411719053162592,
    ];
    close(
        lpdf(
            "multi_normal_prec",
            &[
                MvArg::vector(&y),
                MvArg::vector(&mu),
                MvArg::matrix(&omega, 3, 3),
            ],
        ),
        -7.245010210773154,
        "multi_normal_prec",
    );
    // Σᵢ multivariate_normal(0, S/wᵢ).logpdf(Y[i]) for Y = [[0.3, −0.5, 1.1], [−0.7, 0.2, 0.4]]
    let ycm = [0.3, -0.7, -0.5, 0.2, 1.1, 0.4]; // 2 × 3 column-major
    close(
        lpdf(
            "multi_gp_cholesky",
            &[
                MvArg::matrix(&ycm, 2, 3),
                m(&LS),
                MvArg::vector(&[0.5, 2.0]),
            ],
        ),
        -7.232075136330938,
        "multi_gp_cholesky",
    );
}

#[test]
fn lkj_corr_is_normalised() {
    // K = 2: (η − 1) log(1 − ρ²) − log ∫₋₁¹ (1 − t²)^{η−1} dt (scipy.integrate.quad)
    for (eta, rho, reference) in [
        (2.5, 0.3, -0.30536665203123536),
        (0.7, -0.6, -0.7847201486711555),
    ] {
        let om = [1.0, rho, rho, 1.0];
        close(
            lpdf(
                "lkj_corr",
                &[MvArg::matrix(&om, 2, 2), MvArg::scalar(&[eta])],
            ),
            reference,
            "lkj_corr K = 2",
        );
    }
    // K = 3, η = 1: uniform over the 3 × 3 correlation matrices, whose volume is π²/2
    let om = [1.0, 0.2, -0.1, 0.2, 1.0, 0.4, -0.1, 0.4, 1.0];
    close(
        lpdf(
            "lkj_corr",
            &[MvArg::matrix(&om, 3, 3), MvArg::scalar(&[1.0])],
        ),
        -(std::f64::consts::PI.powi(2) / 2.0).ln(),
        "lkj_corr K = 3",
    );
    // K = 3, η = 2.3: midpoint rule over the cube of (ρ₁₂, ρ₁₃, ρ₂₃), zero outside the
    // positive-definite region, integrates to 1 within the grid's error
    let n = 120;
    let h = 2.0 / n as f64;
    let mut total = 0.0;
    for i in 0..n {
        for j in 0..n {
            for k in 0..n {
                let (a, b, c) = (
                    -1.0 + (i as f64 + 0.5) * h,
                    -1.0 + (j as f64 + 0.5) * h,
                    -1.0 + (k as f64 + 0.5) * h,
                );
                let det = 1.0 + 2.0 * a * b * c - a * a - b * b - c * c;
                if det <= 0.0 {
                    continue;
                }
                let om = [1.0, a, b, a, 1.0, c, b, c, 1.0];
                total += lpdf(
                    "lkj_corr",
                    &[MvArg::matrix(&om, 3, 3), MvArg::scalar(&[2.3])],
                )
                .exp();
            }
        }
    }
    total *= h * h * h;
    assert!((total - 1.0).abs() < 2e-3, "∫ lkj_corr(2.3) = {total}");
}

#[test]
fn ordered_probit_and_glms_match_scipy() {
    // log of [1 − Φ(η − c₁), Φ(η − c₁) − Φ(η − c₂), …, Φ(η − c₃)], η = 0.2 (scipy.stats.norm.cdf)
    let cuts = [-0.5, 0.4, 1.3];
    let refs = [
        -1.4189677615315315,
        -1.0867942262326893,
        -1.255005677838177,
        -1.997558846986297,
    ];
    for (k, reference) in refs.iter().enumerate() {
        let y = [k as f64 + 1.0];
        close(
            lpdf(
                "ordered_probit",
                &[
                    MvArg::scalar(&y),
                    MvArg::scalar(&[0.2]),
                    MvArg::vector(&cuts),
                ],
            ),
            *reference,
            "ordered_probit",
        );
    }
    // X (4 × 2), α = 0.3, β = (0.7, −0.5): scipy.stats.poisson.logpmf(y, exp(η)).sum() and
    // scipy.stats.bernoulli.logpmf(y, expit(η)).sum()
    let x = [0.5, 1.5, -0.2, 0.0, -1.0, 0.3, 0.8, -0.4];
    let xa = MvArg::matrix(&x, 4, 2);
    let (a, b) = ([0.3], [0.7, -0.5]);
    let ints = |v: &'static [f64]| MvArg::vectors(v, v.len());
    close(
        lpdf(
            "poisson_log_glm",
            &[
                ints(&[1.0, 4.0, 0.0, 2.0]),
                xa,
                MvArg::scalar(&a),
                MvArg::vector(&b),
            ],
        ),
        -5.834859975100888,
        "poisson_log_glm",
    );
    close(
        lpdf(
            "bernoulli_logit_glm",
            &[
                ints(&[1.0, 1.0, 0.0, 0.0]),
                xa,
                MvArg::scalar(&a),
                MvArg::vector(&b),
            ],
        ),
        -2.0927700013309622,
        "bernoulli_logit_glm",
    );
    // η = X B + α, B = [[0.5, −0.3, 0.2], [0.1, 0.6, −0.7]], α = (0.1, −0.2, 0.4):
    // Σₙ η[n, yₙ] − logsumexp(η[n]) (scipy.special.logsumexp)
    let alpha = [0.1, -0.2, 0.4];
    let beta = [0.5, 0.1, -0.3, 0.6, 0.2, -0.7]; // 2 × 3 column-major
    close(
        lpdf(
            "categorical_logit_glm",
            &[
                ints(&[1.0, 3.0, 2.0, 3.0]),
                xa,
                MvArg::vector(&alpha),
                MvArg::matrix(&beta, 2, 3),
            ],
        ),
        -3.887266356694007,
        "categorical_logit_glm",
    );
}

#[test]
fn matrix_families_have_correct_gradients_in_models() {
    let m = compile(
        "data { matrix[3, 3] S; }
         parameters { cov_matrix[3] W; cov_matrix[3] V; real<lower=2> nu; }
         model {
           W ~ wishart(nu + 2, S);
           V ~ inv_wishart(nu + 1, W);
           target += wishart_lpdf(V | 5, W) + inv_wishart_lpdf(W | nu + 3, V);
           nu ~ gamma(2, 1);
         }",
        r#"{"S": [[2.0, 0.3, -0.4], [0.3, 1.0, 0.2], [-0.4, 0.2, 1.5]]}"#,
    );
    check_gradient(&m, 11);
    let m = compile(
        "parameters { cholesky_factor_cov[3] LW; cholesky_factor_cov[3] LS; real<lower=2> nu; }
         model {
           LW ~ wishart_cholesky(nu + 1, LS);
           target += wishart_cholesky_lpdf(LS | 4.5, diag_matrix(rep_vector(1, 3)));
           nu ~ gamma(2, 1);
         }",
        "",
    );
    check_gradient(&m, 12);
    let m = compile(
        "parameters { corr_matrix[3] Omega; real<lower=0> eta; }
         model { Omega ~ lkj_corr(eta); eta ~ gamma(2, 1);
                 target += lkj_corr_lpdf(Omega | 1.5); }",
        "",
    );
    check_gradient(&m, 13);
}

#[test]
fn vector_families_have_correct_gradients_in_models() {
    let data = r#"{"N": 3, "y": [[0.5, -1.2, 2.0], [1.0, 0.1, -0.4], [0.0, 0.3, 0.9]],
                   "Y": [[0.3, -0.5, 1.1], [-0.7, 0.2, 0.4]]}"#;
    let m = compile(
        "data { int N; array[N] vector[3] y; matrix[2, 3] Y; }
         parameters { vector[3] mu; cov_matrix[3] Sigma; real<lower=0> nu;
                      cholesky_factor_cov[3] L; vector<lower=0>[2] w; vector[3] z; }
         model {
           y ~ multi_student_t(nu + 1, mu, Sigma);
           z ~ multi_student_t(2.5, mu, Sigma);
           y ~ multi_normal_prec(mu, Sigma);
           target += multi_normal_prec_lpdf(z | mu, Sigma);
           Y ~ multi_gp_cholesky(L, w);
           target += multi_gp_cholesky_lpdf(Y | L, w);
           nu ~ gamma(2, 1);
           w ~ gamma(2, 1);
         }",
        data,
    );
    check_gradient(&m, 14);
}

#[test]
fn ordered_probit_and_glms_have_correct_gradients_and_agree_with_the_unfused_forms() {
    let data = r#"{"N": 6, "K": 2, "C": 3,
                   "X": [[0.5, -1.0], [1.5, 0.3], [-0.2, 0.8], [0.0, -0.4], [1.1, 0.2], [-0.9, -0.6]],
                   "yp": [1, 4, 0, 2, 3, 0], "yb": [1, 1, 0, 0, 1, 0], "yc": [1, 3, 2, 3, 1, 2]}"#;
    let src = |body: &str| {
        format!(
            "data {{ int N; int K; int C; matrix[N, K] X; array[N] int yp; array[N] int yb;
                    array[N] int yc; }}
             parameters {{ real a; vector[K] b; vector[C] ac; matrix[K, C] B; ordered[2] c; }}
             model {{ a ~ normal(0, 1); b ~ normal(0, 1); ac ~ normal(0, 1);
                      to_vector(B) ~ normal(0, 1); c ~ normal(0, 2); {body} }}"
        )
    };
    let glm = compile(
        &src("yp ~ poisson_log_glm(X, a, b);
              target += bernoulli_logit_glm_lpmf(yb | X, a, b);
              yc ~ categorical_logit_glm(X, ac, B);
              yc ~ ordered_probit(X * b, c);"),
        data,
    );
    check_gradient(&glm, 15);
    let unfused = compile(
        &src("for (n in 1:N) {
                target += poisson_log_lpmf(yp[n] | a + X[n] * b)
                          + bernoulli_logit_lpmf(yb[n] | a + X[n] * b)
                          + categorical_logit_lpmf(yc[n] | (X[n] * B)' + ac);
                target += ordered_probit_lpmf(yc[n] | X[n] * b, c);
              }"),
        data,
    );
    // Same log density up to the constants −Σ log yₙ! that `~` drops
    let lfact: f64 = [1.0, 4.0, 0.0, 2.0, 3.0, 0.0]
        .iter()
        .map(|&y: &f64| statrs::function::gamma::ln_gamma(y + 1.0))
        .sum();
    let mut r = stream(16, 0);
    for _ in 0..3 {
        let theta: Vec<f64> = (0..glm.dim()).map(|_| r.random_range(-1.0..1.0)).collect();
        let (a, b) = (
            glm.log_density(&theta).unwrap(),
            unfused.log_density(&theta).unwrap(),
        );
        assert!((a - lfact - b).abs() < 1e-9, "{a} − {lfact} vs {b}");
    }
}

fn draws(name: &str, params: &[MvArg], n: usize, seed: u64) -> Vec<Vec<f64>> {
    let f = multivariate::lookup(name).expect("registered").family;
    let mut r = stream(seed, 0);
    (0..n)
        .map(|_| match multivariate::rng(f, params, &mut r).unwrap() {
            MvDraw::Matrix { data, .. } | MvDraw::Vector(data) => data,
            MvDraw::Int(i) => vec![i as f64],
            MvDraw::Vectors(v) => v.concat(),
        })
        .collect()
}

/// Elementwise mean of the draws, asserted within 5 Monte Carlo standard errors of `mean`.
fn check_mean(name: &str, xs: &[Vec<f64>], mean: &[f64]) {
    let n = xs.len() as f64;
    for (j, &m) in mean.iter().enumerate() {
        let col: Vec<f64> = xs.iter().map(|x| x[j]).collect();
        let avg = col.iter().sum::<f64>() / n;
        let sd = (col.iter().map(|x| (x - avg).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
        assert!(
            (avg - m).abs() < 5.0 * sd / n.sqrt() + 1e-12,
            "{name}_rng element {j}: mean {avg} vs {m}"
        );
    }
}

#[test]
fn matrix_rngs_have_the_right_means() {
    let nu = [6.0];
    let m = |x: &'static [f64]| MvArg::matrix(x, 3, 3);
    // E W = ν S
    let xs = draws("wishart", &[MvArg::scalar(&nu), m(&S)], 40_000, 21);
    check_mean("wishart", &xs, &S.map(|s| 6.0 * s));
    // E W = S/(ν − K − 1)
    let xs = draws("inv_wishart", &[MvArg::scalar(&nu), m(&S)], 40_000, 22);
    check_mean("inv_wishart", &xs, &S.map(|s| s / 2.0));
    // wishart_cholesky_rng(ν, L_S) L Lᵀ has mean ν L_S L_Sᵀ = ν S and is lower triangular
    let xs = draws(
        "wishart_cholesky",
        &[MvArg::scalar(&nu), m(&LS)],
        40_000,
        23,
    );
    assert!(xs.iter().all(|l| l[3] == 0.0 && l[6] == 0.0 && l[7] == 0.0));
    let prods: Vec<Vec<f64>> = xs
        .iter()
        .map(|l| {
            (0..9)
                .map(|e| {
                    let (r, c) = (e % 3, e / 3);
                    (0..3).map(|p| l[r + 3 * p] * l[c + 3 * p]).sum()
                })
                .collect()
        })
        .collect();
    check_mean("wishart_cholesky", &prods, &S.map(|s| 6.0 * s));
    // LKJ(η) on K = 4: each off-diagonal ρ is a Beta(η − 1 + K/2, same) on (−1, 1): mean 0,
    // variance 1/(2(η − 1 + K/2) + 1); unit diagonal
    let eta = 1.5;
    let xs = draws(
        "lkj_corr",
        &[MvArg::scalar(&[4.0]), MvArg::scalar(&[eta])],
        40_000,
        24,
    );
    let a = eta - 1.0 + 2.0;
    let var = 1.0 / (2.0 * a + 1.0);
    for &e in &[1usize, 2, 7, 11] {
        let col: Vec<f64> = xs.iter().map(|x| x[e]).collect();
        let v = col.iter().map(|x| x * x).sum::<f64>() / col.len() as f64;
        assert!(
            (v - var).abs() < 0.02 * var * 5.0,
            "lkj_corr ρ variance {v} vs {var}"
        );
    }
    assert!(xs.iter().all(|x| x[0] == 1.0 && x[5] == 1.0));
}

#[test]
fn vector_and_ordinal_rngs_have_the_right_moments() {
    // multi_student_t: mean μ, covariance ν/(ν − 2) Σ
    let mu = [0.1, 0.2, -0.3];
    let xs = draws(
        "multi_student_t",
        &[
            MvArg::scalar(&[7.0]),
            MvArg::vector(&mu),
            MvArg::matrix(&S, 3, 3),
        ],
        100_000,
        25,
    );
    check_mean("multi_student_t", &xs, &mu);
    let outer: Vec<Vec<f64>> = xs
        .iter()
        .map(|x| {
            (0..9)
                .map(|e| (x[e % 3] - mu[e % 3]) * (x[e / 3] - mu[e / 3]))
                .collect()
        })
        .collect();
    check_mean(
        "multi_student_t (covariance)",
        &outer,
        &S.map(|s| s * 7.0 / 5.0),
    );
    // ordered_probit: category frequencies equal the probabilities (as indicators' means)
    let cuts = [-0.5, 0.4, 1.3];
    let xs = draws(
        "ordered_probit",
        &[MvArg::scalar(&[0.2]), MvArg::vector(&cuts)],
        100_000,
        26,
    );
    let probs = [
        -1.4189677615315315f64,
        -1.0867942262326893,
        -1.255005677838177,
        -1.997558846986297,
    ]
    .map(f64::exp);
    let ind: Vec<Vec<f64>> = xs
        .iter()
        .map(|x| {
            (1..=4)
                .map(|k| f64::from(u8::from(x[0] == k as f64)))
                .collect()
        })
        .collect();
    check_mean("ordered_probit", &ind, &probs);
}
