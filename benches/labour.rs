//! Benchmark of the labour model (logistic regression, N = 753, d = 8): log density and
//! log density + gradient evaluations per second through the compiled graph, against a
//! hand-written Rust loop of the same formula, and the wall time of a default QBVI fit.
//!
//! Run with `cargo bench --bench labour`. Prints numbers; asserts nothing about time.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

use std::sync::atomic::AtomicBool;

use bayesc::fit::{self, FitDetails, FitOptions, Method, Monitor};
use bayesc::inference::LogDensity;
use bayesc::inference::qbvi::{self, QbviSettings};
use bayesc::pipeline;
use bayesc::syntax::source::SourceMap;

/// The labour log joint written by hand: alpha, beta ~ normal(0, 10) (constants dropped as `~`
/// does), lfp ~ bernoulli_logit(alpha + X beta), X column-major.
struct HandWritten {
    n: usize,
    x: Vec<f64>, // column-major N × 7
    y: Vec<f64>,
}

impl HandWritten {
    fn log_density_grad(&self, theta: &[f64], grad: &mut [f64], eta: &mut [f64]) -> f64 {
        let n = self.n;
        eta.fill(theta[0]);
        for j in 0..7 {
            let b = theta[1 + j];
            let col = &self.x[j * n..(j + 1) * n];
            for i in 0..n {
                eta[i] += col[i] * b;
            }
        }
        let mut lp = 0.0;
        for t in theta {
            lp -= 0.5 * (t / 10.0) * (t / 10.0);
        }
        for (g, t) in grad.iter_mut().zip(theta) {
            *g = -t / 100.0;
        }
        let mut g0 = 0.0;
        for i in 0..n {
            let e = eta[i];
            // log inv_logit(e) if y = 1, log(1 - inv_logit(e)) if y = 0, stably.
            let softplus = if e > 0.0 {
                e + (-e).exp().ln_1p()
            } else {
                e.exp().ln_1p()
            };
            lp += self.y[i] * e - softplus;
            let p = 1.0 / (1.0 + (-e).exp());
            let r = self.y[i] - p;
            eta[i] = r;
            g0 += r;
        }
        grad[0] += g0;
        for j in 0..7 {
            let col = &self.x[j * n..(j + 1) * n];
            let mut s = 0.0;
            for i in 0..n {
                s += col[i] * eta[i];
            }
            grad[1 + j] += s;
        }
        lp
    }
}

fn load_hand_written(path: &PathBuf) -> HandWritten {
    let mut rdr = csv::Reader::from_path(path).expect("labour.csv");
    let mut rows: Vec<Vec<f64>> = Vec::new();
    for rec in rdr.records() {
        let rec = rec.expect("record");
        rows.push(
            rec.iter()
                .map(|s| s.parse::<f64>().expect("number"))
                .collect(),
        );
    }
    let n = rows.len();
    let mut x = vec![0.0; n * 7];
    for (i, r) in rows.iter().enumerate() {
        for j in 0..7 {
            x[j * n + i] = r[1 + j];
        }
    }
    HandWritten {
        n,
        x,
        y: rows.iter().map(|r| r[0]).collect(),
    }
}

fn per_second(reps: usize, mut f: impl FnMut()) -> f64 {
    // Warm up, then take the best of 5 timed blocks.
    for _ in 0..reps / 10 {
        f();
    }
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let t = Instant::now();
        for _ in 0..reps {
            f();
        }
        best = best.min(t.elapsed().as_secs_f64());
    }
    reps as f64 / best
}

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let model_path = root.join("examples/labour/model.bayes");
    let data_path = root.join("examples/labour/labour.csv");
    let mut sources = SourceMap::new();
    let checked = pipeline::check_file(&mut sources, &model_path).expect("model checks");
    let data = pipeline::load_data(&[data_path.clone()]).expect("data loads");
    let model = pipeline::compile(&checked, &sources, &data).expect("model compiles");
    let hand = load_hand_written(&data_path);

    let theta: Vec<f64> = vec![3.2, -1.49, -0.065, -0.064, 0.8, 0.11, 0.6, -0.034];
    let mut grad = vec![0.0; 8];
    let mut grad_hand = vec![0.0; 8];
    let mut eta = vec![0.0; hand.n];
    let lp_graph = model.log_density_grad(&theta, &mut grad).expect("finite");
    let lp_hand = hand.log_density_grad(&theta, &mut grad_hand, &mut eta);
    let max_grad_diff = grad
        .iter()
        .zip(&grad_hand)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    println!(
        "check: graph lp {lp_graph:.10}, hand-written lp {lp_hand:.10}, max |grad diff| {max_grad_diff:.2e}"
    );

    let reps = 20_000;
    let value = per_second(reps, || {
        black_box(model.log_density(black_box(&theta)).ok());
    });
    let value_grad = per_second(reps, || {
        black_box(model.log_density_grad(black_box(&theta), &mut grad).ok());
    });
    let hand_rate = per_second(reps, || {
        black_box(hand.log_density_grad(black_box(&theta), &mut grad_hand, &mut eta));
    });
    println!(
        "labour log density:              {:>10.0} evals/s ({:.2} µs/eval)",
        value,
        1e6 / value
    );
    println!(
        "labour log density + gradient:   {:>10.0} evals/s ({:.2} µs/eval)",
        value_grad,
        1e6 / value_grad
    );
    println!(
        "hand-written loop, value + grad: {:>10.0} evals/s ({:.2} µs/eval)",
        hand_rate,
        1e6 / hand_rate
    );
    println!(
        "graph / hand-written time ratio (value + gradient): {:.2}",
        hand_rate / value_grad
    );

    for (label, diagonal) in [("full", false), ("diagonal", true)] {
        let mut times = Vec::new();
        let mut iters = 0;
        for seed in 1..=3u64 {
            let settings = QbviSettings {
                covariance: if diagonal {
                    qbvi::Covariance::Diagonal
                } else {
                    qbvi::Covariance::Full
                },
                seed,
                ..QbviSettings::default()
            };
            let mut options = FitOptions::new(Method::Qbvi, seed);
            options.qbvi = settings;
            let never = AtomicBool::new(false);
            let monitor = Monitor {
                on_progress: &|_| {},
                stop: &never,
            };
            let t = Instant::now();
            let result = fit::fit(&model, &options, &monitor).expect("fit");
            times.push(t.elapsed().as_secs_f64());
            let FitDetails::Qbvi(q) = &result.details else {
                unreachable!("a QBVI fit returns QBVI details")
            };
            iters = q.iterations;
        }
        times.sort_by(f64::total_cmp);
        println!(
            "labour QBVI ({label} covariance) wall time incl. mode search and 1000 draws: median {:.3} s over 3 seeds (last fit: {iters} iterations), {} threads",
            times[1],
            rayon::current_num_threads()
        );
    }
}
