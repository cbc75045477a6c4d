//! Benchmark of a one-hidden-layer Bayesian neural network (issue 10, "Done when"): on-CPU µs per
//! log density + gradient of the diabetes MLP (`shared/data/bnn/diabetes_train.csv`, N = 331,
//! p = 10; one hidden tanh layer of H units, normal likelihood with a scale parameter, normal(0, 1)
//! priors) at H = 10, 50, 200 and 400, for bayesc's compiled graph and for a hand-written
//! forward/backward pass of the same density whose matrix products are faer's.
//!
//! Both use the same tanh loop (`bayesc::distributions::lanes::tanh_slices`, with its AVX2 /
//! AVX-512 builds), so the ratio measures the engine, not libm or the vector width.
//!
//! Then, at H = 50, the per-observation gradients of a batch of M = 64 rows (issue 11): the
//! one-reverse-pass-per-row loop against the vectorised per-row pass (`graph::per_row`).
//!
//! Run with `cargo bench --bench nn` (optionally `-- 50` for one width). Before timing, the two
//! implementations are checked against each other (value and gradient, relative 1e-9), so the
//! comparison is of the same density. Prints numbers (best of 15 timed blocks, CPU time of this
//! thread, the two sides' blocks interleaved); asserts nothing about time.

use std::hint::black_box;
use std::path::PathBuf;

use bayesc::distributions::lanes::tanh_slices;
use bayesc::inference::LogDensity;
use bayesc::pipeline;
use bayesc::syntax::source::SourceMap;
use faer::{Accum, MatMut, MatRef, Par};

/// The model as a user writes it; `H` is substituted.
const MODEL: &str = r#"
data {
  int<lower=1> N;
  matrix[N, 10] X;
  vector[N] y;
}
parameters {
  matrix[10, H] W1;
  vector[H] b1;
  vector[H] w2;
  real b2;
  real<lower=0> sigma;
}
model {
  matrix[N, H] Z = tanh(X * W1 + rep_matrix(b1', N));
  to_vector(W1) ~ normal(0, 1);
  b1 ~ normal(0, 1);
  w2 ~ normal(0, 1);
  b2 ~ normal(0, 1);
  sigma ~ normal(0, 1);
  y ~ normal(Z * w2 + b2, sigma);
}
"#;

/// The same log density written by hand on the unconstrained scale (θ = [vec(W1) column-major,
/// b1, w2, b2, log σ]; `~` constants dropped; log-Jacobian log σ), with preallocated buffers.
struct Hand {
    n: usize,
    p: usize,
    h: usize,
    /// X, column-major N × p.
    x: Vec<f64>,
    y: Vec<f64>,
    /// N × H buffers: pre-activation, then its adjoint; hidden units.
    a: Vec<f64>,
    z: Vec<f64>,
    dmu: Vec<f64>,
}

impl Hand {
    fn lp_grad(&mut self, th: &[f64], g: &mut [f64]) -> f64 {
        let (n, p, h) = (self.n, self.p, self.h);
        let (w1, rest) = th.split_at(p * h);
        let (b1, rest) = rest.split_at(h);
        let (w2, rest) = rest.split_at(h);
        let (b2, s) = (rest[0], rest[1]);
        let sigma = s.exp();
        let xm = MatRef::from_column_major_slice(&self.x, n, p);
        let w1m = MatRef::from_column_major_slice(w1, p, h);
        faer::linalg::matmul::matmul(
            MatMut::from_column_major_slice_mut(&mut self.a, n, h),
            Accum::Replace,
            xm,
            w1m,
            1.0,
            Par::Seq,
        );
        for j in 0..h {
            for ai in &mut self.a[j * n..(j + 1) * n] {
                *ai += b1[j];
            }
        }
        tanh_slices(&self.a, &mut self.z, None);
        // mu = Z w2 + b2
        self.dmu.fill(b2);
        faer::linalg::matmul::matmul(
            MatMut::from_column_major_slice_mut(&mut self.dmu, n, 1),
            Accum::Add,
            MatRef::from_column_major_slice(&self.z, n, h),
            MatRef::from_column_major_slice(w2, h, 1),
            1.0,
            Par::Seq,
        );
        let inv_s2 = 1.0 / (sigma * sigma);
        let mut ss = 0.0;
        for (m, &yi) in self.dmu.iter_mut().zip(&self.y) {
            let r = yi - *m;
            ss += r * r;
            *m = r * inv_s2; // ∂lp/∂mu
        }
        let mut lp = -0.5 * ss * inv_s2 - n as f64 * s;
        let (gw1, grest) = g.split_at_mut(p * h);
        let (gb1, grest) = grest.split_at_mut(h);
        let (gw2, grest) = grest.split_at_mut(h);
        // dw2 = Zᵀ dmu
        faer::linalg::matmul::matmul(
            MatMut::from_column_major_slice_mut(gw2, h, 1),
            Accum::Replace,
            MatRef::from_column_major_slice(&self.z, n, h).transpose(),
            MatRef::from_column_major_slice(&self.dmu, n, 1),
            1.0,
            Par::Seq,
        );
        grest[0] = self.dmu.iter().sum::<f64>() - b2;
        // dA = dmu w2ᵀ ⊙ (1 − Z²), into `a`
        for j in 0..h {
            let col = &mut self.a[j * n..(j + 1) * n];
            let zc = &self.z[j * n..(j + 1) * n];
            let mut sb = 0.0;
            for ((ai, &zi), &di) in col.iter_mut().zip(zc).zip(&self.dmu) {
                *ai = di * w2[j] * (1.0 - zi * zi);
                sb += *ai;
            }
            gb1[j] = sb - b1[j];
        }
        faer::linalg::matmul::matmul(
            MatMut::from_column_major_slice_mut(gw1, p, h),
            Accum::Replace,
            xm.transpose(),
            MatRef::from_column_major_slice(&self.a, n, h),
            1.0,
            Par::Seq,
        );
        for (gi, &wi) in gw1.iter_mut().zip(w1) {
            *gi -= wi;
        }
        for (gi, &wi) in gw2.iter_mut().zip(w2) {
            *gi -= wi;
        }
        // σ: likelihood, prior −σ²/2, Jacobian log σ.
        grest[1] = ss * inv_s2 - n as f64 - sigma * sigma + 1.0;
        lp += -0.5 * sigma * sigma + s;
        let prior: f64 = w1.iter().chain(b1).chain(w2).map(|v| v * v).sum::<f64>() + b2 * b2;
        lp - 0.5 * prior
    }
}

/// CPU time of this thread, in seconds.
fn cpu_now() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// CPU time of the whole process (all threads), in seconds: the per-row loop runs its rows
/// on rayon's threads.
fn process_cpu_now() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Best process-CPU and best wall time of 7 blocks of `reps` calls, in µs per call.
fn micros_process(reps: usize, mut f: impl FnMut()) -> (f64, f64) {
    for _ in 0..reps.div_ceil(4) {
        f();
    }
    let (mut cpu, mut wall) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..7 {
        let (t, w) = (process_cpu_now(), std::time::Instant::now());
        for _ in 0..reps {
            f();
        }
        cpu = cpu.min(process_cpu_now() - t);
        wall = wall.min(w.elapsed().as_secs_f64());
    }
    (cpu / reps as f64 * 1e6, wall / reps as f64 * 1e6)
}

/// Per-observation gradients of a batch of M = 64 rows at H = 50 (issue 11: VOGN's per-example
/// squared gradients): one reverse pass per row (`MinibatchDensity::log_lik_grads`, rows on
/// rayon's threads) against one vectorised reverse pass with per-row adjoint lanes
/// (`MinibatchModel::log_lik_grads_vectorised`), after checking they agree (relative 1e-10).
/// Process CPU time and wall time per batch.
fn per_row_bench(data: &[bayesc::data::DataSource]) {
    use bayesc::inference::MinibatchDensity;
    let (h, m) = (50usize, 64usize);
    let text = MODEL.replace("H]", &format!("{h}]"));
    let mut sources = SourceMap::new();
    let checked = pipeline::check_source(&mut sources, "bnn.bayes", &text).expect("checks");
    let model = pipeline::compile(&checked, &sources, data).expect("compiles");
    let plan = pipeline::minibatch_plan(&checked, data, &model, m, None).expect("separable");
    let mm = model.minibatch(&plan.separability).expect("plan fits");
    let d = model.dim();
    let n = mm.n_obs();
    let theta: Vec<f64> = (0..d).map(|i| 0.3 * ((i as f64) * 0.7).sin()).collect();
    let rows: Vec<usize> = (0..m).map(|i| (i * 37 + 5) % n).collect();
    let (mut values, mut g_loop, mut g_vec) = (vec![0.0; m], vec![0.0; m * d], vec![0.0; m * d]);
    mm.log_lik_grads(&theta, &rows, &mut values, &mut g_loop)
        .expect("finite");
    mm.log_lik_grads_vectorised(&theta, &rows, &mut g_vec)
        .expect("finite")
        .expect("the BNN's shapes allow the vectorised pass");
    let scale = g_loop.iter().fold(0.0f64, |a, g| a.max(g.abs()));
    for (a, b) in g_vec.iter().zip(&g_loop) {
        assert!((a - b).abs() <= 1e-10 * (scale + b.abs()), "{a} vs {b}");
    }
    let (lc, lw) = micros_process(50, || {
        black_box(
            mm.log_lik_grads(black_box(&theta), &rows, &mut values, &mut g_loop)
                .ok(),
        );
    });
    let (vc, vw) = micros_process(50, || {
        black_box(
            mm.log_lik_grads_vectorised(black_box(&theta), &rows, &mut g_vec)
                .ok(),
        );
    });
    println!(
        "\nper-row gradients, diabetes BNN H = {h} (d = {d}), M = {m} rows:\n\
         {:>12} {:>14} {:>14}\n{:>12} {lc:>14.1} {lw:>14.1}\n{:>12} {vc:>14.1} {vw:>14.1}\n\
         ratio (loop / vectorised), CPU: {:.1}",
        "",
        "CPU µs",
        "wall µs",
        "loop",
        "vectorised",
        lc / vc
    );
}

/// Best on-CPU times of 15 interleaved blocks of `reps` calls of `f` and of `g`, in µs per call
/// (after a warm-up block of each). The blocks alternate (f, g, f, g, …) so that both sides see
/// the same machine: on a shared machine the load, and with it the cache and the clock, drift
/// over seconds, and two runs one after the other compare different moments.
fn micros_pair(reps: usize, mut f: impl FnMut(), mut g: impl FnMut()) -> (f64, f64) {
    for _ in 0..reps.div_ceil(4) {
        f();
        g();
    }
    let (mut best_f, mut best_g) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..15 {
        let t = cpu_now();
        for _ in 0..reps {
            f();
        }
        best_f = best_f.min(cpu_now() - t);
        let t = cpu_now();
        for _ in 0..reps {
            g();
        }
        best_g = best_g.min(cpu_now() - t);
    }
    (best_f / reps as f64 * 1e6, best_g / reps as f64 * 1e6)
}

fn main() {
    let only: Option<usize> = std::env::args().skip(1).find_map(|a| a.parse().ok());
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let data_path = PathBuf::from("/work/shared/data/bnn/diabetes_train.csv");
    let data_path = if data_path.exists() {
        data_path
    } else {
        root.join("../shared/data/bnn/diabetes_train.csv")
    };
    let data = pipeline::load_data(std::slice::from_ref(&data_path)).expect("diabetes data loads");
    let mut rdr = csv::Reader::from_path(&data_path).expect("diabetes csv");
    let rows: Vec<Vec<f64>> = rdr
        .records()
        .map(|r| {
            r.expect("record")
                .iter()
                .map(|v| v.parse().expect("number"))
                .collect()
        })
        .collect();
    let (n, p) = (rows.len(), rows[0].len() - 1);
    let mut x = vec![0.0; n * p];
    for (i, r) in rows.iter().enumerate() {
        for j in 0..p {
            x[i + j * n] = r[j];
        }
    }
    let y: Vec<f64> = rows.iter().map(|r| r[p]).collect();
    println!(
        "{:>5} {:>6} {:>14} {:>14} {:>8}",
        "H", "d", "bayesc µs", "hand µs", "ratio"
    );
    for h in [10usize, 50, 200, 400] {
        if only.is_some_and(|o| o != h) {
            continue;
        }
        let text = MODEL.replace("H]", &format!("{h}]"));
        let mut sources = SourceMap::new();
        let checked = pipeline::check_source(&mut sources, "bnn.bayes", &text).expect("checks");
        let m = pipeline::compile(&checked, &sources, &data).expect("compiles");
        let d = m.dim();
        assert_eq!(d, p * h + 2 * h + 2);
        let theta: Vec<f64> = (0..d).map(|i| 0.3 * ((i as f64) * 0.7).sin()).collect();
        let mut hand = Hand {
            n,
            p,
            h,
            x: x.clone(),
            y: y.clone(),
            a: vec![0.0; n * h],
            z: vec![0.0; n * h],
            dmu: vec![0.0; n],
        };
        let (mut g1, mut g2) = (vec![0.0; d], vec![0.0; d]);
        let v1 = m.log_density_grad(&theta, &mut g1).expect("finite");
        let v2 = hand.lp_grad(&theta, &mut g2);
        assert!((v1 - v2).abs() <= 1e-9 * v2.abs(), "value {v1} vs {v2}");
        for i in 0..d {
            assert!(
                (g1[i] - g2[i]).abs() <= 1e-9 * (1.0 + g2[i].abs()),
                "gradient {i}: {} vs {}",
                g1[i],
                g2[i]
            );
        }
        let reps = (10_000 / h).clamp(10, 1000);
        let (tb, th) = micros_pair(
            reps,
            || {
                black_box(m.log_density_grad(black_box(&theta), &mut g1).ok());
            },
            || {
                black_box(hand.lp_grad(black_box(&theta), &mut g2));
            },
        );
        println!("{h:>5} {d:>6} {tb:>14.1} {th:>14.1} {:>8.2}", tb / th);
    }
    if only.is_none_or(|o| o == 50) {
        per_row_bench(&data);
    }
}
