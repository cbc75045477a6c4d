//! Benchmark of the compiled graph on models with scalar loops and vectorised models: µs per
//! log density and per log density + gradient for GARCH(1,1), AR(2), eight schools, arK and labour,
//! with `for` loops as compiled scalar kernels (the default: native code where compiled, feature
//! `jit`), as kernels run by the kernel interpreter (`Model::set_native_loops(false)`, column
//! "no-JIT") and through the statement interpreter (`Model::set_fast_loops(false)`), against a hand-written Rust GARCH(1,1) loop with
//! its analytic (forward-mode) gradient.
//!
//! A synthetic logistic regression `y ~ bernoulli_logit(alpha + X * beta)` with K = 7 and
//! N = 10³ … 10⁶ rows (written to the temporary directory) compares the fused GLM pass
//! (`src/graph/eval/glm.rs`, the default) with the unfused nodes (`Model::set_fused_glm(false)`).
//!
//! Run with `cargo bench --bench graph` (optionally a filter: `cargo bench --bench graph garch`).
//! Prints numbers (best of several timed blocks of thread CPU time); asserts nothing about time.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Instant;

use bayesc::inference::LogDensity;
use bayesc::pipeline;
use bayesc::syntax::source::SourceMap;

/// The GARCH(1,1) log density of `examples/garch/model.bayes` written by hand at constrained
/// parameters (mu, omega, alpha1, beta1), `~` constants dropped, flat priors, no Jacobian:
/// `h[1] = var(r)`, `h[t] = omega + alpha1 (r[t-1] - mu)² + beta1 h[t-1]`,
/// `lp = Σ -½ log h[t] - ½ (r[t] - mu)² / h[t]`; gradient by forward-mode tangents of `h`.
fn garch_hand(r: &[f64], var0: f64, p: &[f64; 4], grad: &mut [f64; 4]) -> f64 {
    let [mu, omega, alpha1, beta1] = *p;
    let mut h = var0;
    // ∂h/∂(mu, omega, alpha1, beta1)
    let mut dh = [0.0f64; 4];
    let mut lp = 0.0;
    let mut g = [0.0f64; 4];
    for t in 0..r.len() {
        if t > 0 {
            let e = r[t - 1] - mu;
            let e2 = e * e;
            dh = [
                -2.0 * alpha1 * e + beta1 * dh[0],
                1.0 + beta1 * dh[1],
                e2 + beta1 * dh[2],
                h + beta1 * dh[3],
            ];
            h = omega + alpha1 * e2 + beta1 * h;
        }
        let z = r[t] - mu;
        let inv_h = 1.0 / h;
        lp += -0.5 * h.ln() - 0.5 * z * z * inv_h;
        // ∂lp_t/∂h = -½/h + ½ z²/h²
        let dlp_dh = 0.5 * inv_h * (z * z * inv_h - 1.0);
        g[0] += z * inv_h;
        for k in 0..4 {
            g[k] += dlp_dh * dh[k];
        }
    }
    *grad = g;
    lp
}

/// The logistic regression log density of the synthetic cases, written by hand: `x` is the
/// N × 7 design column-major, `p` = (alpha, beta₁ … beta₇) at which lp = Σᵢ yᵢηᵢ − log(1 + e^ηᵢ)
/// with ηᵢ = alpha + xᵢ·beta, plus the normal(0, 5) and normal(0, 2) priors (constants dropped),
/// and its gradient (Xᵀ(y − σ(η)) and Σ(y − σ(η)) for the intercept). Blocked over 512 rows so
/// that the predictor stays in cache; the inner loops are plain slices that LLVM vectorises.
fn logistic_hand(x: &[f64], y: &[f64], p: &[f64; 8], grad: &mut [f64; 8]) -> f64 {
    let n = y.len();
    let mut lp = -0.5 * (p[0] / 5.0).powi(2);
    grad[0] = -p[0] / 25.0;
    for j in 1..8 {
        lp -= 0.5 * (p[j] / 2.0).powi(2);
        grad[j] = -p[j] / 4.0;
    }
    let mut eta = [0.0f64; 512];
    let mut r = 0;
    while r < n {
        let nb = 512.min(n - r);
        let eta = &mut eta[..nb];
        eta.fill(p[0]);
        for j in 0..7 {
            let col = &x[j * n + r..j * n + r + nb];
            for (e, &v) in eta.iter_mut().zip(col) {
                *e += v * p[j + 1];
            }
        }
        let yb = &y[r..r + nb];
        for (e, &yi) in eta.iter_mut().zip(yb) {
            let a = *e;
            let t = (-a.abs()).exp();
            lp += yi * a - (a.max(0.0) + t.ln_1p());
            let s = if a >= 0.0 {
                1.0 / (1.0 + t)
            } else {
                t / (1.0 + t)
            };
            *e = yi - s; // the adjoint of η
        }
        grad[0] += eta.iter().sum::<f64>();
        for j in 0..7 {
            let col = &x[j * n + r..j * n + r + nb];
            grad[j + 1] += col.iter().zip(eta.iter()).map(|(a, b)| a * b).sum::<f64>();
        }
        r += nb;
    }
    lp
}

/// Reads a synthetic logistic CSV (y, X.1 … X.7) into (X column-major, y).
fn read_logistic(path: &str) -> (Vec<f64>, Vec<f64>) {
    let mut rdr = csv::Reader::from_path(path).expect("synthetic data");
    let rows: Vec<Vec<f64>> = rdr
        .records()
        .map(|rec| {
            rec.expect("record")
                .iter()
                .map(|c| c.parse::<f64>().expect("number"))
                .collect()
        })
        .collect();
    let n = rows.len();
    let mut x = vec![0.0; 7 * n];
    for (i, r) in rows.iter().enumerate() {
        for j in 0..7 {
            x[j * n + i] = r[j + 1];
        }
    }
    (x, rows.iter().map(|r| r[0]).collect())
}

/// CPU time of the calling thread in seconds (`CLOCK_THREAD_CPUTIME_ID`), so that time the
/// thread spends descheduled on a loaded machine is not counted.
fn thread_cpu() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for clock_gettime to write.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return Instant::now()
            .duration_since(*START.get_or_init(Instant::now))
            .as_secs_f64();
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Origin of the wall-clock fallback of [`thread_cpu`].
static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();

/// Best thread CPU time of 7 blocks of `reps` calls, in µs per call (after a warm-up block).
fn micros(reps: usize, f: &mut dyn FnMut()) -> f64 {
    for _ in 0..reps.div_ceil(4) {
        f();
    }
    let mut best = f64::INFINITY;
    for _ in 0..7 {
        let t = thread_cpu();
        for _ in 0..reps {
            f();
        }
        best = best.min(thread_cpu() - t);
    }
    best / reps as f64 * 1e6
}

/// Writes a logistic regression with `n` rows (y, X.1 … X.7; deterministic values) and its
/// model to the temporary directory; returns their absolute paths.
fn logistic_files(n: usize) -> (String, String) {
    let dir = std::env::temp_dir().join("bayesc_graph_bench");
    std::fs::create_dir_all(&dir).expect("temporary directory");
    let model = dir.join("logistic.bayes");
    std::fs::write(
        &model,
        "data { int<lower=0> N; matrix[N, 7] X; array[N] int<lower=0, upper=1> y; }\n\
         parameters { real alpha; vector[7] beta; }\n\
         model { alpha ~ normal(0, 5); beta ~ normal(0, 2); y ~ bernoulli_logit(alpha + X * beta); }\n",
    )
    .expect("write model");
    let data = dir.join(format!("logistic_{n}.csv"));
    if data.exists() {
        return (
            model.to_string_lossy().into_owned(),
            data.to_string_lossy().into_owned(),
        );
    }
    let mut text = String::from("y,X.1,X.2,X.3,X.4,X.5,X.6,X.7\n");
    let mut s: u64 = 12345;
    let mut next = || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    };
    for _ in 0..n {
        let x: Vec<f64> = (0..7).map(|_| next()).collect();
        let eta: f64 = 0.3
            + x.iter()
                .enumerate()
                .map(|(j, v)| (j as f64 - 3.0) * 0.25 * v)
                .sum::<f64>();
        let y = (next() * 0.5 + 0.5 < 1.0 / (1.0 + (-eta).exp())) as u8;
        text.push_str(&y.to_string());
        for v in x {
            text.push_str(&format!(",{v:.6}"));
        }
        text.push('\n');
    }
    std::fs::write(&data, text).expect("write data");
    (
        model.to_string_lossy().into_owned(),
        data.to_string_lossy().into_owned(),
    )
}

fn compile(root: &Path, model: &str, data: &str) -> bayesc::graph::Model {
    let mut sources = SourceMap::new();
    let checked = pipeline::check_file(&mut sources, &root.join(model)).expect("model checks");
    let data = pipeline::load_data(&[root.join(data)]).expect("data loads");
    pipeline::compile(&checked, &sources, &data).expect("model compiles")
}

fn main() {
    let filter: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let scale: usize = std::env::var("GRAPH_BENCH_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let cases: [(&str, &str, &str, usize); 6] = [
        (
            "garch",
            "examples/garch/model.bayes",
            "examples/garch/returns.csv",
            100,
        ),
        // AR(2) through the stdlib's `ar_mean`: a loop in a user-defined function.
        (
            "ar2",
            "examples/ar/model.bayes",
            "examples/ar/ar2.csv",
            1000,
        ),
        (
            "eight_schools",
            "examples/eight_schools/model.bayes",
            "examples/eight_schools/schools.csv",
            5000,
        ),
        (
            "arK",
            "examples/posteriordb/arK-arK/model.bayes",
            "examples/posteriordb/arK-arK/data.json",
            200,
        ),
        (
            "labour",
            "examples/labour/model.bayes",
            "examples/labour/labour.csv",
            500,
        ),
        (
            "diamonds",
            "examples/posteriordb/diamonds-diamonds/model.bayes",
            "examples/posteriordb/diamonds-diamonds/data.json",
            100,
        ),
    ];
    println!(
        "{:<16} {:>14} {:>18} {:>22} {:>18} {:>14}",
        "model",
        "µs/log_density",
        "µs/log_density_grad",
        "interpreter µs/grad",
        "unfused µs/grad",
        "no-JIT µs/grad"
    );
    let synthetic: Vec<(String, String)> = [1_000usize, 10_000, 100_000, 1_000_000]
        .iter()
        .map(|&n| logistic_files(n))
        .collect();
    let mut cases: Vec<(String, String, String, usize)> = cases
        .iter()
        .map(|&(a, b, c, r)| (a.to_string(), b.to_string(), c.to_string(), r))
        .collect();
    for ((model, data), (n, reps)) in
        synthetic
            .iter()
            .zip([(1_000, 2000), (10_000, 300), (100_000, 30), (1_000_000, 3)])
    {
        cases.push((format!("logistic_N{n}"), model.clone(), data.clone(), reps));
    }
    // µs per GARCH gradient, for the ratio to the hand-written loop printed last.
    let mut garch_grad: Option<f64> = None;
    for (name, model, data, reps) in &cases {
        let name = name.as_str();
        if filter.as_deref().is_some_and(|f| !name.contains(f)) {
            continue;
        }
        let reps = (reps * scale / 10).max(1);
        let m = compile(&root, model, data);
        let mut interp = compile(&root, model, data);
        interp.set_fast_loops(false);
        let mut unfused = compile(&root, model, data);
        unfused.set_fused_glm(false);
        let mut nojit = compile(&root, model, data);
        nojit.set_native_loops(false);
        let d = m.dim();
        let theta: Vec<f64> = match name {
            // mu, log omega, logit alpha1, logit(beta1 / (1 - alpha1))
            "garch" => vec![0.05, (0.02f64).ln(), -2.197, 2.83],
            _ => (0..d).map(|i| 0.1 + 0.05 * i as f64).collect(),
        };
        let mut grad = vec![0.0; d];
        m.log_density_grad(&theta, &mut grad).expect("finite");
        // GRAPH_BENCH_ONLY=value|fused|interpreter|unfused|nojit|hand times one variant only (the others
        // print NaN), so that `perf stat` can count its instructions alone.
        let only = std::env::var("GRAPH_BENCH_ONLY").ok();
        let run = |what: &str| only.as_deref().is_none_or(|o| o == what);
        let micros = |what: &str, reps: usize, f: &mut dyn FnMut()| {
            if run(what) { micros(reps, f) } else { f64::NAN }
        };
        let v = micros("value", reps, &mut || {
            black_box(m.log_density(black_box(&theta)).ok());
        });
        let g = micros("fused", reps, &mut || {
            black_box(m.log_density_grad(black_box(&theta), &mut grad).ok());
        });
        let gi = micros("interpreter", reps, &mut || {
            black_box(interp.log_density_grad(black_box(&theta), &mut grad).ok());
        });
        let gu = micros("unfused", reps, &mut || {
            black_box(unfused.log_density_grad(black_box(&theta), &mut grad).ok());
        });
        let gn = micros("nojit", reps, &mut || {
            black_box(nojit.log_density_grad(black_box(&theta), &mut grad).ok());
        });
        println!("{name:<16} {v:>14.2} {g:>18.2} {gi:>22.2} {gu:>18.2} {gn:>14.2}");
        if name == "garch" {
            garch_grad = Some(g);
        }
        if name.starts_with("logistic_N") {
            let (x, y) = read_logistic(data);
            let p: [f64; 8] = std::array::from_fn(|i| theta[i]);
            let mut gh = [0.0; 8];
            let lh = logistic_hand(&x, &y, &p, &mut gh);
            let lm = m.log_density_grad(&theta, &mut grad).expect("finite");
            assert!(
                (lh - lm).abs() <= 1e-9 * lm.abs(),
                "hand-written {lh} vs graph {lm}"
            );
            let h = micros("hand", reps, &mut || {
                black_box(logistic_hand(&x, &y, black_box(&p), &mut gh));
            });
            println!(
                "{:<16} {:>14} {:>18.2}   graph / hand = {:.2}",
                format!("{name} (hand)"),
                "",
                h,
                g / h
            );
        }
    }
    if filter.as_deref().is_none_or(|f| "garch_hand".contains(f)) {
        let mut rdr =
            csv::Reader::from_path(root.join("examples/garch/returns.csv")).expect("returns.csv");
        let r: Vec<f64> = rdr
            .records()
            .map(|rec| rec.expect("record")[1].parse::<f64>().expect("number"))
            .collect();
        let n = r.len() as f64;
        let mean = r.iter().sum::<f64>() / n;
        let var0 = r.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0);
        let p = [0.05, 0.02, 0.1, 0.85];
        let mut g = [0.0; 4];
        let only = std::env::var("GRAPH_BENCH_ONLY").ok();
        let t = if only.as_deref().is_none_or(|o| o == "hand") {
            micros(1000 * scale / 10, &mut || {
                black_box(garch_hand(black_box(&r), var0, black_box(&p), &mut g));
            })
        } else {
            f64::NAN
        };
        let ratio = garch_grad.map_or(String::new(), |g| format!("   graph / hand = {:.2}", g / t));
        println!("{:<16} {:>14} {:>18.2}{ratio}", "garch (hand)", "", t);
    }
}
