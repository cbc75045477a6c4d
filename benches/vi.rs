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
//! A second and third table give every variational `--method` of [`SURVEY_METHODS`] (QBVI,
//! QNVB and the survey's methods, `specs/survey_vi.md`) on labour and on the diabetes BNN at
//! H = 50: the time to convergence (wall time of the fit, including the Laplace start that every
//! variational method shares), the time per iteration (that wall time over the iterations run)
//! and the iterations with the stop reason. Environment: `BAYESC_BENCH_FULL=1` lifts the BNN's
//! iteration cap of 30, `BAYESC_BENCH_REPEATS=k` takes the fastest of k labour fits.

use std::sync::atomic::AtomicBool;

use bayesc::fit::{self, FitDetails, FitOptions, Method, Monitor};
use bayesc::graph::Model;
use bayesc::inference::LogDensity;
use bayesc::inference::qbvi::Covariance;
use bayesc::pipeline;
use bayesc::syntax::source::SourceMap;

fn root_dir() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

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
        FitDetails::Pathfinder(p) => format!("{} paths", p.paths.len()),
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
    if std::env::var("BAYESC_BENCH_FULL").is_ok_and(|v| v == "1") {
        comparison_table();
    }
    survey_tables();
}

/// The first table (QBVI, QNVB, Laplace and NUTS on labour, credit and GARCH; about a minute,
/// mostly NUTS): only with `BAYESC_BENCH_FULL=1`.
fn comparison_table() {
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
}

/// The variational methods of the second table, by their `--method` names. A name this build
/// does not know (a method of another branch) is skipped with a note, so the list can name
/// every method of issue 11.
const SURVEY_METHODS: &[&str] = &[
    "qbvi",
    "qnvb",
    "ivon",
    "bbb",
    "bbvi",
    "ngvi",
    "mgvb",
    "emgvb",
    "vlaplace",
    "mcdropout",
    "vadam",
    "vogn",
    "von",
    "ngbbvi",
];

/// Full-covariance methods, skipped on the BNN (O(d³) per step at d = 602).
const FULL_COVARIANCE: &[&str] = &["mgvb", "emgvb"];

/// The diabetes BNN of `stdlib/nn.bayes` at H = 50 (d = 602), with `@dropout(0.1)` on the
/// input layer's weights so that MC dropout has units to drop (other methods ignore it).
const BNN: &str = r#"
include "nn.bayes";
data {
  int<lower=1> N;
  matrix[N, 10] X;
  vector[N] y;
}
parameters {
  @dropout(0.1) matrix[10, 50] W1;
  vector[50] b1;
  vector[50] w2;
  real b2;
  real<lower=0> sigma;
}
model {
  to_vector(W1) ~ normal(0, 1);
  b1 ~ normal(0, 1);
  w2 ~ normal(0, 1 / sqrt(50));
  b2 ~ normal(0, 1);
  sigma ~ normal(0, 1);
  y ~ normal(mlp_regression(X, W1, b1, w2, b2), sigma);
}
"#;

#[derive(clap::Parser)]
struct Wrapper {
    #[command(flatten)]
    fit: bayesc::fit::args::FitArgs,
}

/// A model of the survey tables with what `bayesc fit` knows of it: the checked program and the
/// data, from which [`pipeline::fit_options`] takes the minibatch plan (VOGN and Vadam need its
/// per-observation gradients; a full-batch IVON fit takes its effective sample size λ = N from
/// it).
struct Case {
    checked: pipeline::Checked,
    data: Vec<bayesc::data::DataSource>,
    model: Model,
}

/// The [`Case`] of `text` (named `name`, which may `include` the stdlib) on the data `data`
/// (paths under the repository root).
fn case(name: &str, text: &str, data: &[&str]) -> Case {
    let root = root_dir();
    let data = pipeline::load_data(&data.iter().map(|d| root.join(d)).collect::<Vec<_>>())
        .expect("data loads");
    let mut sources = SourceMap::new();
    let checked = pipeline::check_source_in(&mut sources, name, text, None).expect("checks");
    let model = pipeline::compile(&checked, &sources, &data).expect("compiles");
    Case {
        checked,
        data,
        model,
    }
}

/// `bayesc fit`'s options for `--method name` plus `extra` flags on `case`, as `bayesc fit`
/// builds them ([`pipeline::fit_options`], seed 1), or `None` when this build has no such
/// method (a row saying so is printed then).
fn survey_options(name: &str, extra: &[&str], case: &Case) -> Option<FitOptions> {
    use clap::Parser;
    let mut argv = vec!["bench", "m.bayes", "--method", name];
    argv.extend_from_slice(extra);
    let Some(args) = Wrapper::try_parse_from(argv)
        .ok()
        .map(|w| w.fit)
        .filter(|a| bayesc::fit::args::check_args(a).is_ok())
    else {
        println!("| {name} | not in this build | | | | |");
        return None;
    };
    let setup = pipeline::fit_options(&case.checked, &case.data, &case.model, &args, 1);
    match setup {
        Ok(s) => Some(s.options),
        Err(e) => {
            println!("| {name} | refused: {e:?} | | | | |");
            None
        }
    }
}

/// Second and third tables: time to convergence (wall time of the fit, including the Laplace
/// start every variational method shares), time per iteration (that time over the iterations
/// run) and the iterations of every method in [`SURVEY_METHODS`] on labour (defaults; MC
/// dropout on the same model with `@dropout(0.1)` on `beta`) and on the BNN (full batch;
/// `--random-init`; `--max-iter` 30 unless `BAYESC_BENCH_FULL=1`, so a BNN row that stops at the cap has not
/// converged and says so: its time per iteration is the number to read).
/// `BAYESC_BENCH_REPEATS=k` repeats each labour fit k times and reports the fastest (default
/// 1).
fn survey_tables() {
    let full = std::env::var("BAYESC_BENCH_FULL").is_ok_and(|v| v == "1");
    let repeats: usize = std::env::var("BAYESC_BENCH_REPEATS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
        .max(1);
    let labour_text = std::fs::read_to_string(root_dir().join("examples/labour/model.bayes"))
        .expect("labour model");
    let labour = case(
        "labour.bayes",
        &labour_text,
        &["examples/labour/labour.csv"],
    );
    let labour_dropout = case(
        "labour_dropout.bayes",
        &labour_text.replace("  vector[7] beta;", "  @dropout(0.1) vector[7] beta;"),
        &["examples/labour/labour.csv"],
    );
    let bnn = case("bnn.bayes", BNN, &["../shared/data/bnn/diabetes_train.csv"]);
    // The BNN rows start at the spec's random point (no mode search: at d = 602 its three
    // finite-difference Hessians would dominate a capped run's time per iteration).
    let cap = if full {
        vec!["--random-init"]
    } else {
        vec!["--random-init", "--max-iter", "30"]
    };
    let bnn_label = if full {
        "diabetes BNN, H = 50"
    } else {
        "diabetes BNN, H = 50, capped at 30 iterations (BAYESC_BENCH_FULL=1 runs to convergence)"
    };
    for (label, case, extra, psis) in [
        ("labour", &labour, Vec::new(), 1000),
        (bnn_label, &bnn, cap, 0),
    ] {
        let model = &case.model;
        println!(
            "\n| {label} (d = {}) | time to convergence (s) | time per iteration (ms) | iterations (stop) | ELBO | PSIS k-hat |\n| --- | --- | --- | --- | --- | --- |",
            model.dim()
        );
        let is_bnn = psis == 0;
        for &name in SURVEY_METHODS {
            if is_bnn && FULL_COVARIANCE.contains(&name) {
                println!(
                    "| {name} | skipped: full covariance at d = {} | | | | |",
                    model.dim()
                );
                continue;
            }
            let mut flags = extra.clone();
            if is_bnn && matches!(name, "qbvi" | "ngvi") {
                flags.push("--diagonal");
            }
            let c = if name == "mcdropout" && !is_bnn {
                &labour_dropout
            } else {
                case
            };
            let Some(mut options) = survey_options(name, &flags, c) else {
                continue;
            };
            options.psis_draws = psis;
            let never = AtomicBool::new(false);
            let monitor = Monitor {
                on_progress: &|_| {},
                stop: &never,
            };
            let mut best: Option<bayesc::fit::FitResult> = None;
            let m = &c.model;
            for _ in 0..if is_bnn { 1 } else { repeats } {
                let r = match fit::fit(m, &options, &monitor) {
                    Ok(r) => r,
                    Err(e) => {
                        println!("| {name} | failed: {e} | | | | |");
                        break;
                    }
                };
                if best.as_ref().is_none_or(|b| r.seconds < b.seconds) {
                    best = Some(r);
                }
            }
            let Some(r) = best else { continue };
            let (iters, stop) = match &r.details {
                FitDetails::Qbvi(q) => (q.iterations, format!("{:?}", q.stop)),
                FitDetails::Qnvb(q) => (q.iterations, format!("{:?}", q.stop)),
                _ => (0, "—".into()),
            };
            println!(
                "| {name}{} | {:.3} | {:.3} | {iters} ({stop}) | {} | {} |",
                if flags.contains(&"--diagonal") {
                    " --diagonal"
                } else {
                    ""
                },
                r.seconds,
                1e3 * r.seconds / iters.max(1) as f64,
                r.vi.as_ref()
                    .map_or("—".into(), |v| format!("{:.3}", v.elbo)),
                r.vi.as_ref()
                    .map_or("—".into(), |v| format!("{:.3}", v.khat)),
            );
        }
    }
}
