//! User-defined functions end to end: golden tests of their misuse (and of `include` errors) in
//! `tests/golden/functions/`, and a user-defined `_lpdf`/`_lpmf` under `~` against the
//! equivalent built-in (same log density and gradient; identical NUTS draws).
//!
//! Golden harness: every `tests/golden/functions/<name>.bayes` goes through
//! `pipeline::check_file`; when it checks, it is compiled (with `<name>.json` as data when that
//! exists, else without data) and its log density is evaluated at the unconstrained point 0.
//! The rendered errors (plain text), warnings and the runtime error, if any, must equal
//! `<name>.stderr`. `BLESS=1` rewrites the expected files after review (STYLE.md habit 8).
//! Files in `lib/` are libraries included by the cases, not cases.

mod common;

use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use bayesc::data::DataSource;
use bayesc::data::json::parse_json;
use bayesc::fit::{self, FitOptions, Method};
use bayesc::graph::Model;
use bayesc::inference::LogDensity;
use bayesc::pipeline;
use bayesc::syntax::report::render_plain;
use bayesc::syntax::source::SourceMap;

const DIR: &str = "tests/golden/functions";

/// What `bayesc check` and a first evaluation of the log density would print for one case.
fn render(path: &Path) -> String {
    let mut sources = SourceMap::new();
    let mut out = String::new();
    let checked = match pipeline::check_file(&mut sources, path) {
        Ok(c) => c,
        Err(f) => {
            for d in f.into_reports() {
                out.push_str(&render_plain(&sources, &d));
            }
            return out;
        }
    };
    for w in &checked.warnings {
        out.push_str(&render_plain(&sources, w));
    }
    let json = path.with_extension("json");
    let data: Vec<DataSource> = if json.exists() {
        let text = fs::read_to_string(&json).expect("golden data is readable");
        vec![DataSource::Json(
            parse_json(&json.display().to_string(), &text).expect("golden data is valid JSON"),
        )]
    } else if checked.program.data.is_empty() {
        Vec::new()
    } else {
        return out;
    };
    let model = match pipeline::compile(&checked, &sources, &data) {
        Ok(m) => m,
        Err(f) => {
            for d in f.into_reports() {
                out.push_str(&render_plain(&sources, &d));
            }
            return out;
        }
    };
    let theta = vec![0.0; model.dim()];
    let mut grad = vec![0.0; model.dim()];
    match model.log_density_grad(&theta, &mut grad) {
        Ok(v) => writeln!(out, "log density at 0: {v:.6}").expect("writing to a String"),
        Err(e) => writeln!(
            out,
            "error: {e}\n(recoverable: {})",
            if e.recoverable { "yes" } else { "no" }
        )
        .expect("writing to a String"),
    }
    out
}

#[test]
fn golden_functions() {
    common::check_golden_folder(DIR, 14, |path, _name| render(path));
}

// ---- user-defined densities against the built-ins -------------------------------------------

/// Checks and compiles a model given as text against JSON data.
fn compile_text(text: &str, json: &str) -> Model {
    common::compile_source("test.bayes", text, Some(json), &[])
}

/// A reproducible point in [-1.5, 1.5]^d (SplitMix64 of the index and a seed).
fn point(d: usize, seed: u64) -> Vec<f64> {
    (0..d)
        .map(|i| {
            let mut z = seed
                .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                .wrapping_add(i as u64 + 1);
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            3.0 * ((z >> 11) as f64 / (1u64 << 53) as f64) - 1.5
        })
        .collect()
}

const NORMAL_DATA: &str =
    r#"{"N": 6, "y": [0.3, -1.2, 2.1, 0.7, -0.4, 1.6], "x": [1.0, 0.5, -0.3, 2.0, -1.1, 0.2]}"#;

const BUILTIN: &str = "
data { int N; vector[N] y; vector[N] x; }
parameters { real a; real b; real<lower=0> sigma; }
model {
  a ~ normal(0, 2);
  b ~ normal(0, 2);
  sigma ~ lognormal(0, 1);
  y ~ normal(a + b * x, sigma);
}";

/// The same model with `y ~ my_normal(…)`, where `my_normal_lpdf` returns `body`.
fn user_model(body: &str) -> String {
    format!(
        "
functions {{
  real my_normal_lpdf(vector y, vector mu, real sigma) {{
    return {body};
  }}
}}
data {{ int N; vector[N] y; vector[N] x; }}
parameters {{ real a; real b; real<lower=0> sigma; }}
model {{
  a ~ normal(0, 2);
  b ~ normal(0, 2);
  sigma ~ lognormal(0, 1);
  y ~ my_normal(a + b * x, sigma);
}}"
    )
}

/// Log density and gradient of two models at 20 random points: the gradients agree to 1e-12 and
/// the log densities differ by `offset` (to 1e-12).
fn assert_same_up_to(m1: &Model, m2: &Model, offset: f64) {
    assert_eq!(m1.dim(), m2.dim());
    let d = m1.dim();
    for seed in 0..20 {
        let theta = point(d, seed);
        let (mut g1, mut g2) = (vec![0.0; d], vec![0.0; d]);
        let l1 = m1.log_density_grad(&theta, &mut g1).expect("finite");
        let l2 = m2.log_density_grad(&theta, &mut g2).expect("finite");
        assert!(
            (l2 - l1 - offset).abs() < 1e-12,
            "seed {seed}: log densities {l1} and {l2} differ by {}, not {offset}",
            l2 - l1
        );
        for (a, b) in g1.iter().zip(&g2) {
            assert!(
                (a - b).abs() < 1e-12,
                "seed {seed}: gradients {g1:?} vs {g2:?}"
            );
        }
    }
}

/// A user `_lpdf` that calls `normal_lpdf` keeps its constants under `~` (as Stan does for user
/// densities): the log density is the built-in's plus N·½·log(2π), the dropped normalising
/// constant, and the gradient is the same.
#[test]
fn user_lpdf_with_lpdf_inside_keeps_the_constant() {
    let builtin = compile_text(BUILTIN, NORMAL_DATA);
    let user = compile_text(&user_model("normal_lpdf(y | mu, sigma)"), NORMAL_DATA);
    let constant = -6.0 * 0.5 * (2.0 * std::f64::consts::PI).ln();
    assert_same_up_to(&builtin, &user, constant);
}

/// A user `_lpdf` written with `normal_lupdf` drops the same constants as the built-in under
/// `~` (Stan's rule: `_lupdf` inside a density called by `~` is unnormalised), so the log
/// densities are equal.
#[test]
fn user_lpdf_with_lupdf_inside_equals_the_builtin() {
    let builtin = compile_text(BUILTIN, NORMAL_DATA);
    let user = compile_text(&user_model("normal_lupdf(y | mu, sigma)"), NORMAL_DATA);
    assert_same_up_to(&builtin, &user, 0.0);
}

/// A user density written out by hand (the formula of the normal log density without its
/// constant) gives the built-in's log density and gradient.
#[test]
fn handwritten_user_lpdf_equals_the_builtin() {
    let builtin = compile_text(BUILTIN, NORMAL_DATA);
    let user = compile_text(
        &user_model("-0.5 * dot_self((y - mu) / sigma) - rows(y) * log(sigma)"),
        NORMAL_DATA,
    );
    assert_same_up_to(&builtin, &user, 0.0);
}

/// NUTS with a fixed seed draws exactly the same values from a model with the user density as
/// from the built-in, when the two log densities are equal.
#[test]
fn nuts_draws_are_identical_with_user_and_builtin_density() {
    let builtin = compile_text(BUILTIN, NORMAL_DATA);
    let user = compile_text(&user_model("normal_lupdf(y | mu, sigma)"), NORMAL_DATA);
    let mut options = FitOptions::new(Method::Nuts, 11);
    options.mcmc.chains = 2;
    options.mcmc.warmup = 150;
    options.mcmc.samples = 100;
    let never = std::sync::atomic::AtomicBool::new(false);
    let monitor = fit::Monitor {
        on_progress: &|_| {},
        stop: &never,
    };
    let a = fit::fit(&builtin, &options, &monitor).expect("NUTS runs on the built-in model");
    let b = fit::fit(&user, &options, &monitor).expect("NUTS runs on the user-density model");
    assert_eq!(a.draws.names, b.draws.names);
    assert_eq!(a.draws.n_draws(), 100);
    assert_eq!(a.draws.chains, b.draws.chains, "draws differ");
    // The draws are a real posterior, not a constant: b's posterior mean is -0.005 and its sd
    // 0.64 (4 × 1000 × 1000 NUTS draws); these 200 draws (ESS ~50) put the mean within 0.3.
    let j = a.draws.position("b").expect("b is a column");
    let col: Vec<f64> = a.draws.column(j).concat();
    let mean = col.iter().sum::<f64>() / col.len() as f64;
    assert!(mean.abs() < 0.3, "posterior mean of b is {mean}");
    assert!(col.iter().any(|&v| v != col[0]));
}

/// A user `_lpmf` over integers (the stdlib's `logistic_regression_lpmf`) equals the built-in
/// `bernoulli_logit` under `~`.
#[test]
fn stdlib_lpmf_equals_bernoulli_logit() {
    let data = r#"{"N": 5, "X": [[1.0, 0.2], [-0.5, 1.0], [0.3, -0.7], [2.0, 0.1], [-1.2, -0.4]],
                   "z": [1, 0, 1, 1, 0]}"#;
    let head = "data { int N; matrix[N, 2] X; array[N] int<lower=0, upper=1> z; }
parameters { real alpha; vector[2] beta; }
model {
  alpha ~ normal(0, 2);
  beta ~ normal(0, 2);
";
    let builtin = compile_text(
        &format!("{head}  z ~ bernoulli_logit(alpha + X * beta);\n}}"),
        data,
    );
    let user = compile_text(
        &format!("include \"glm.bayes\";\n{head}  z ~ logistic_regression(X, alpha, beta);\n}}"),
        data,
    );
    assert_same_up_to(&builtin, &user, 0.0);
}

// ---- `_lp`, `_rng` and recursive functions ---------------------------------------------------

/// A `_lp` function that increments `target` gives the same log density and gradient as the
/// statements written in the model block.
#[test]
fn lp_function_adds_to_the_target() {
    let direct = compile_text(BUILTIN, NORMAL_DATA);
    let via_lp = compile_text(
        "
functions {
  void priors_lp(real a, real b, real sigma) {
    a ~ normal(0, 2);
    target += normal_lupdf(b | 0, 2);
    sigma ~ lognormal(0, 1);
  }
}
data { int N; vector[N] y; vector[N] x; }
parameters { real a; real b; real<lower=0> sigma; }
model {
  priors_lp(a, b, sigma);
  y ~ normal(a + b * x, sigma);
}",
        NORMAL_DATA,
    );
    assert_same_up_to(&direct, &via_lp, 0.0);
}

/// A recursive function (Fibonacci numbers) and a user `_rng` function in generated quantities:
/// the recursion gives the right values, and the user `_rng` draws exactly what the built-in
/// `normal_rng` draws from the same stream.
#[test]
fn recursion_and_user_rng_in_generated_quantities() {
    let model = compile_text(
        "
functions {
  int fib(int n) {
    if (n <= 2) {
      return 1;
    }
    return fib(n - 1) + fib(n - 2);
  }
  real shifted_normal_rng(real mu, real sigma) {
    return normal_rng(mu, sigma);
  }
}
data { int N; vector[N] y; vector[N] x; }
parameters { real a; }
model { a ~ normal(0, 1); }
generated quantities {
  int f10 = fib(10);
  int f20 = fib(20);
  real u = shifted_normal_rng(a, 2);
}",
        NORMAL_DATA,
    );
    let builtin = compile_text(
        "
data { int N; vector[N] y; vector[N] x; }
parameters { real a; }
model { a ~ normal(0, 1); }
generated quantities {
  int f10 = 55;
  int f20 = 6765;
  real u = normal_rng(a, 2);
}",
        NORMAL_DATA,
    );
    for seed in 0..5 {
        let zeta = point(1, seed);
        let mut r1 = bayesc::inference::rng::stream(seed, 1);
        let mut r2 = bayesc::inference::rng::stream(seed, 1);
        let v1 = model
            .write_array(&zeta, false, true, &mut r1)
            .expect("runs");
        let v2 = builtin
            .write_array(&zeta, false, true, &mut r2)
            .expect("runs");
        assert_eq!(v1[1], 55.0);
        assert_eq!(v1[2], 6765.0);
        assert_eq!(v1, v2, "seed {seed}");
    }
}

/// Called as `target += my_normal_lpdf(…)`, a user density keeps every constant, including
/// those of `_lupdf` calls inside it (Stan's rule: only `~` and `_lupdf` calls drop constants);
/// called as `target += my_normal_lupdf(…)` it drops them like `~`.
#[test]
fn explicit_lpdf_call_of_a_user_density_keeps_constants() {
    let with = |call: &str| {
        format!(
            "
functions {{
  real my_normal_lpdf(vector y, vector mu, real sigma) {{
    return normal_lupdf(y | mu, sigma);
  }}
}}
data {{ int N; vector[N] y; vector[N] x; }}
parameters {{ real a; real b; real<lower=0> sigma; }}
model {{
  a ~ normal(0, 2);
  b ~ normal(0, 2);
  sigma ~ lognormal(0, 1);
  target += {call}(y | a + b * x, sigma);
}}"
        )
    };
    let builtin = compile_text(BUILTIN, NORMAL_DATA);
    let normalised = compile_text(&with("my_normal_lpdf"), NORMAL_DATA);
    let unnormalised = compile_text(&with("my_normal_lupdf"), NORMAL_DATA);
    let constant = -6.0 * 0.5 * (2.0 * std::f64::consts::PI).ln();
    assert_same_up_to(&builtin, &normalised, constant);
    assert_same_up_to(&builtin, &unnormalised, 0.0);
}
