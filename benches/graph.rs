//! Benchmark of the compiled graph on models with scalar loops and vectorised models: µs per
//! log density and per log density + gradient for GARCH(1,1), eight schools, arK and labour,
//! with `for` loops as compiled scalar kernels (the default) and through the statement
//! interpreter (`Model::set_fast_loops(false)`), against a hand-written Rust GARCH(1,1) loop with
//! its analytic (forward-mode) gradient.
//!
//! Run with `cargo bench --bench graph` (optionally a filter: `cargo bench --bench graph garch`).
//! Prints numbers (best of several timed blocks); asserts nothing about time.

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

/// Best time of `blocks` blocks of `reps` calls, in µs per call (after a warm-up block).
fn micros(reps: usize, mut f: impl FnMut()) -> f64 {
    for _ in 0..reps.div_ceil(4) {
        f();
    }
    let mut best = f64::INFINITY;
    for _ in 0..7 {
        let t = Instant::now();
        for _ in 0..reps {
            f();
        }
        best = best.min(t.elapsed().as_secs_f64());
    }
    best / reps as f64 * 1e6
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
    let cases: [(&str, &str, &str, usize); 4] = [
        (
            "garch",
            "examples/garch/model.bayes",
            "examples/garch/returns.csv",
            100,
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
    ];
    println!(
        "{:<16} {:>14} {:>18} {:>22}",
        "model", "µs/log_density", "µs/log_density_grad", "interpreter µs/grad"
    );
    for (name, model, data, reps) in cases {
        if filter.as_deref().is_some_and(|f| !name.contains(f)) {
            continue;
        }
        let reps = (reps * scale / 10).max(1);
        let m = compile(&root, model, data);
        let mut interp = compile(&root, model, data);
        interp.set_fast_loops(false);
        let d = m.dim();
        let theta: Vec<f64> = match name {
            // mu, log omega, logit alpha1, logit(beta1 / (1 - alpha1))
            "garch" => vec![0.05, (0.02f64).ln(), -2.197, 2.83],
            _ => (0..d).map(|i| 0.1 + 0.05 * i as f64).collect(),
        };
        let mut grad = vec![0.0; d];
        m.log_density_grad(&theta, &mut grad).expect("finite");
        let v = micros(reps, || {
            black_box(m.log_density(black_box(&theta)).ok());
        });
        let g = micros(reps, || {
            black_box(m.log_density_grad(black_box(&theta), &mut grad).ok());
        });
        let gi = micros(reps, || {
            black_box(interp.log_density_grad(black_box(&theta), &mut grad).ok());
        });
        println!("{name:<16} {v:>14.2} {g:>18.2} {gi:>22.2}");
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
        let t = micros(1000 * scale / 10, || {
            black_box(garch_hand(black_box(&r), var0, black_box(&p), &mut g));
        });
        println!("{:<16} {:>14} {:>18.2}", "garch (hand)", "", t);
    }
}
