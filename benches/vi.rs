//! Side-by-side benchmark of the inference methods on the labour (d = 8), credit (d = 25) and
//! GARCH(1,1) (d = 4) examples: wall time to convergence and the final ELBO of QBVI (full and
//! diagonal covariance), QNVB and the Laplace approximation, with their PSIS k̂, and the wall
//! time of NUTS (4 chains × (1000 warmup + 1000 draws), run in parallel).
//!
//! The ELBO column is the Monte Carlo estimate mean(L(ζ) − log q(ζ)) over 4000 draws of each
//! fitted q (the same estimator for every method, on the model's log-density scale with the
//! Jacobian and with `~` dropping constants); higher is better. Times exclude compilation and
//! the diagnostic. Run with `cargo bench --bench vi`; prints a table, asserts nothing about time.
//!
//! A second table gives the survey's methods (`specs/survey_vi.md`: IVON, BBB, BBVI, MGVB, NGVI,
//! EMGVB) on labour: the time to convergence (wall time of the fit, including the Laplace start
//! that every variational method shares) and the time per iteration (that wall time over the
//! iterations run).

use std::sync::atomic::AtomicBool;

use bayesc::fit::{self, FitDetails, FitOptions, Method, Monitor};
use bayesc::graph::Model;
use bayesc::inference::LogDensity;
use bayesc::inference::qbvi::Covariance;
use bayesc::pipeline;
use bayesc::syntax::source::SourceMap;

fn compile(model: &str, data: &str) -> Model {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut sources = SourceMap::new();
    let checked = pipeline::check_file(&mut sources, &root.join(model)).expect("example checks");
    let data = pipeline::load_data(&[root.join(data)]).expect("example data loads");
    pipeline::compile(&checked, &sources, &data).expect("example compiles")
}

struct Row {
    method: &'static str,
    seconds: f64,
    iterations: String,
    elbo: Option<f64>,
    khat: Option<f64>,
}

fn run(model: &Model, name: &'static str, method: Method, diagonal: bool) -> Row {
    let mut options = FitOptions::new(method, 1);
    options.psis_draws = 4000;
    if diagonal {
        options.qbvi.covariance = Covariance::Diagonal;
    }
    let never = AtomicBool::new(false);
    let monitor = Monitor {
        on_progress: &|_| {},
        stop: &never,
    };
    let r = fit::fit(model, &options, &monitor).expect("fit runs");
    let iterations = match &r.details {
        FitDetails::Qbvi(q) => format!("{} ({:?})", q.iterations, q.stop),
        FitDetails::Qnvb(q) => format!("{} ({:?})", q.iterations, q.stop),
        FitDetails::Laplace(l) => format!("{} L-BFGS", l.optimization.iterations),
        FitDetails::Mcmc(m) => format!("{} chains", m.chains.len()),
        FitDetails::Optimize(o) => format!("{}", o.lbfgs.iterations),
    };
    Row {
        method: name,
        seconds: r.seconds,
        iterations,
        elbo: r.vi.as_ref().map(|v| v.elbo),
        khat: r.vi.as_ref().map(|v| v.khat),
    }
}

fn main() {
    let examples = [
        (
            "labour",
            "examples/labour/model.bayes",
            "examples/labour/labour.csv",
        ),
        (
            "credit",
            "examples/credit/model.bayes",
            "examples/credit/credit.csv",
        ),
        (
            "garch",
            "examples/garch/model.bayes",
            "examples/garch/returns.csv",
        ),
    ];
    println!(
        "| model (d) | method | wall time (s) | iterations (stop) | ELBO | PSIS k-hat |\n| --- | --- | --- | --- | --- | --- |"
    );
    for (label, model_path, data_path) in examples {
        let model = compile(model_path, data_path);
        let rows = [
            run(&model, "QBVI full", Method::Qbvi, false),
            run(&model, "QBVI diagonal", Method::Qbvi, true),
            run(&model, "QNVB", Method::Qnvb, false),
            run(&model, "Laplace", Method::Laplace, false),
            run(&model, "NUTS", Method::Nuts, false),
        ];
        for r in rows {
            println!(
                "| {label} ({}) | {} | {:.3} | {} | {} | {} |",
                model.dim(),
                r.method,
                r.seconds,
                r.iterations,
                r.elbo.map_or("—".into(), |e| format!("{e:.3}")),
                r.khat.map_or("—".into(), |k| format!("{k:.3}")),
            );
        }
    }
    let model = compile("examples/labour/model.bayes", "examples/labour/labour.csv");
    println!(
        "\n| labour (d = {}) | time to convergence (s) | time per iteration (ms) | iterations (stop) | ELBO | PSIS k-hat |\n| --- | --- | --- | --- | --- | --- |",
        model.dim()
    );
    for (name, method) in [
        ("IVON", Method::Ivon),
        ("BBB", Method::Bbb),
        ("BBVI", Method::Bbvi),
        ("MGVB", Method::Mgvb),
        ("EMGVB", Method::Emgvb),
        ("NGVI (full)", Method::Ngvi),
        ("QBVI full (for comparison)", Method::Qbvi),
    ] {
        let mut options = FitOptions::new(method, 1);
        options.psis_draws = 4000;
        let never = AtomicBool::new(false);
        let monitor = Monitor {
            on_progress: &|_| {},
            stop: &never,
        };
        let r = fit::fit(&model, &options, &monitor).expect("fit runs");
        let FitDetails::Qbvi(q) = &r.details else {
            panic!("a Gaussian variational fit")
        };
        println!(
            "| {name} | {:.3} | {:.3} | {} ({:?}) | {} | {} |",
            r.seconds,
            1e3 * r.seconds / q.iterations.max(1) as f64,
            q.iterations,
            q.stop,
            r.vi.as_ref()
                .map_or("—".into(), |v| format!("{:.3}", v.elbo)),
            r.vi.as_ref()
                .map_or("—".into(), |v| format!("{:.3}", v.khat)),
        );
    }
}
