//! Helpers shared by the integration tests: compile shipped examples, read reference fits.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use bayesc::graph::Model;
use bayesc::pipeline;
use bayesc::syntax::report::render_plain;
use bayesc::syntax::source::SourceMap;

/// The repository root (where Cargo.toml is).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The project's `shared/` folder (data sets, reference posteriors, specs), which the project's
/// CI lays beside the checkout: `$BAYESC_SHARED` if set, else `../shared` beside the checkout,
/// else `../../shared` (a git worktree one level further down).
///
/// # Panics
/// When none of them holds `validation/` and `data/`: the message says where it looked and how
/// to point the tests at the folder, so that a checkout without it fails with a clear cause
/// rather than a missing-file error deep inside a test.
pub fn shared_dir() -> PathBuf {
    let candidates: Vec<PathBuf> = std::env::var_os("BAYESC_SHARED")
        .map(PathBuf::from)
        .into_iter()
        .chain([root().join("../shared"), root().join("../../shared")])
        .collect();
    for c in &candidates {
        if c.join("validation").is_dir() && c.join("data").is_dir() {
            return c.clone();
        }
    }
    panic!(
        "this test needs the project's `shared/` folder (data sets and reference posteriors), \
         looked in: {}. Put it beside the checkout (as CI does) or set BAYESC_SHARED=/path/to/shared",
        candidates
            .iter()
            .map(|c| c.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// `shared/validation` (see [`shared_dir`]).
pub fn validation_dir() -> PathBuf {
    shared_dir().join("validation")
}

/// `shared/data/FILE` (see [`shared_dir`]).
pub fn shared_data(file: &str) -> PathBuf {
    shared_dir().join("data").join(file)
}

/// Compiles `model` against `data` files (paths relative to the repository root), panicking with
/// the rendered diagnostics on failure.
pub fn compile(model: &str, data: &[&str]) -> Model {
    let mut sources = SourceMap::new();
    let result = pipeline::check_file(&mut sources, &root().join(model)).and_then(|checked| {
        let paths: Vec<PathBuf> = data.iter().map(|d| root().join(d)).collect();
        let data = pipeline::load_data(&paths)?;
        pipeline::compile(&checked, &sources, &data)
    });
    match result {
        Ok(m) => m,
        Err(f) => {
            let text: String = f
                .into_reports()
                .iter()
                .map(|d| render_plain(&sources, d))
                .collect();
            panic!("compiling {model} failed:\n{text}");
        }
    }
}

/// One row of a reference posterior summary.
#[derive(Debug, Clone)]
pub struct RefRow {
    pub name: String,
    pub mean: f64,
    pub sd: f64,
}

/// Reads a reference summary CSV with columns `name, mean, sd, …`.
pub fn read_reference(path: &Path) -> Vec<RefRow> {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("header").split(',').collect();
    let col = |n: &str| {
        header
            .iter()
            .position(|h| *h == n)
            .unwrap_or_else(|| panic!("no column {n}"))
    };
    let (ci, cm, cs) = (col("name"), col("mean"), col("sd"));
    lines
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            RefRow {
                name: f[ci].to_string(),
                mean: f[cm].parse().unwrap(),
                sd: f[cs].parse().unwrap(),
            }
        })
        .collect()
}

/// Mean and sd of each column of one-chain draws (`n × k` row-major).
pub fn column_moments(flat: &[f64], k: usize) -> Vec<(f64, f64)> {
    let n = flat.len() / k;
    (0..k)
        .map(|j| {
            let m = (0..n).map(|i| flat[i * k + j]).sum::<f64>() / n as f64;
            let v = (0..n).map(|i| (flat[i * k + j] - m).powi(2)).sum::<f64>() / (n as f64 - 1.0);
            (m, v.sqrt())
        })
        .collect()
}

/// Golden-file harness (STYLE.md habit 8): renders every `<dir>/<name>.bayes` with `render`
/// and compares the text with `<dir>/<name>.stderr`; with `BLESS=1` in the environment it
/// rewrites the expected files instead. A model named `bad_*` must render at least one error
/// and one named `ok_*` none. Panics listing every difference; `min_cases` guards against an
/// empty or misplaced folder.
pub fn check_golden_folder(dir: &str, min_cases: usize, render: impl Fn(&Path, &str) -> String) {
    let bless = std::env::var_os("BLESS").is_some();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "bayes"))
        .collect();
    entries.sort();
    assert!(
        entries.len() >= min_cases,
        "expected at least {min_cases} golden models in {dir}, found {}",
        entries.len()
    );
    let mut failures = Vec::new();
    for path in &entries {
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .expect("golden file names are UTF-8");
        let actual = render(path, name);
        let expected_path = Path::new(dir).join(format!("{name}.stderr"));
        if bless {
            std::fs::write(&expected_path, &actual).expect("can write the expected file");
            continue;
        }
        let expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
        if actual != expected {
            failures.push(format!(
                "--- {name}: expected\n{expected}\n--- {name}: actual\n{actual}"
            ));
        }
        if name.starts_with("bad_") {
            assert!(actual.contains("error"), "{name} produced no error");
        } else if name.starts_with("ok_") {
            assert!(
                !actual.contains("error"),
                "{name} produced an error:\n{actual}"
            );
        }
    }
    assert!(
        failures.is_empty(),
        "{} golden file(s) differ (rerun with BLESS=1 after review):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Checks and compiles model `text` (registered as `name`) against the data files `files`
/// (paths relative to the repository root) plus, if given, a JSON data text; panics with the
/// rendered diagnostics on failure.
pub fn compile_source(name: &str, text: &str, json: Option<&str>, files: &[&str]) -> Model {
    use bayesc::data::{DataSource, json::parse_json};
    let mut sources = SourceMap::new();
    let result = pipeline::check_source(&mut sources, name, text).and_then(|checked| {
        let paths: Vec<PathBuf> = files.iter().map(|f| root().join(f)).collect();
        let mut data = pipeline::load_data(&paths)?;
        if let Some(j) = json {
            data.push(DataSource::Json(
                parse_json("data.json", j).expect("test data is valid JSON"),
            ));
        }
        pipeline::compile(&checked, &sources, &data)
    });
    match result {
        Ok(m) => m,
        Err(f) => {
            let text: String = f
                .into_reports()
                .iter()
                .map(|d| render_plain(&sources, d))
                .collect();
            panic!("compiling {name} failed:\n{text}");
        }
    }
}

/// name → (estimate, std_error) of a reference maximum-likelihood file in
/// `../shared/validation/reference_fits/` (`name,estimate,std_error`); rows without a standard
/// error (`loglik`, `h1`) get NaN.
pub fn read_mle(file: &str) -> std::collections::HashMap<String, (f64, f64)> {
    let path = validation_dir().join("reference_fits").join(file);
    let text = std::fs::read_to_string(&path).expect("reference MLE file");
    text.lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            let se = f.get(2).and_then(|s| s.parse().ok()).unwrap_or(f64::NAN);
            (f[0].to_string(), (f[1].parse().unwrap(), se))
        })
        .collect()
}

/// |a − b| / |b|.
pub fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs()
}

/// Asserts that `grad` (the gradient of `m`'s log density at `theta`) matches central finite
/// differences with step `h` at the coordinates `coords`, to 1e-5 × (1 + |grad[i]|).
#[allow(dead_code)]
pub fn assert_gradient_fd(m: &Model, theta: &[f64], grad: &[f64], h: f64, coords: &[usize]) {
    use bayesc::inference::LogDensity;
    for &i in coords {
        let (mut tp, mut tm) = (theta.to_vec(), theta.to_vec());
        tp[i] += h;
        tm[i] -= h;
        let fd = (m.log_density(&tp).unwrap() - m.log_density(&tm).unwrap()) / (2.0 * h);
        assert!(
            (fd - grad[i]).abs() <= 1e-5 * (1.0 + grad[i].abs()),
            "gradient[{i}] {} vs finite difference {fd}",
            grad[i]
        );
    }
}

/// Two evaluation points in d dimensions used by the graph tests.
#[allow(dead_code)]
pub fn points(d: usize) -> Vec<Vec<f64>> {
    vec![
        (0..d).map(|i| 0.1 + 0.05 * i as f64).collect(),
        (0..d).map(|i| -0.3 + 0.11 * ((i * 7) % 5) as f64).collect(),
    ]
}

/// Runs the built `bayesc` with `args` in `dir` (relative to the repository root); returns
/// whether it exited 0 and its standard output followed by its standard error.
#[allow(dead_code)]
pub fn run_bayesc_in(dir: &str, args: &[&str]) -> (bool, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_bayesc"))
        .args(args)
        .current_dir(root().join(dir))
        .output()
        .expect("run bayesc");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// Runs `options` on `m` with a monitor that never stops and shows no progress; panics with the
/// error when the fit fails.
pub fn fit_quietly(m: &Model, options: &bayesc::fit::FitOptions) -> bayesc::fit::FitResult {
    let never = std::sync::atomic::AtomicBool::new(false);
    let monitor = bayesc::fit::Monitor {
        on_progress: &|_| {},
        stop: &never,
    };
    bayesc::fit::fit(m, options, &monitor).unwrap_or_else(|e| panic!("the fit failed: {e}"))
}

/// The diagnostics of a failed pipeline step, rendered as plain text (empty for `Ok`).
pub fn rendered<T>(sources: &SourceMap, result: Result<T, pipeline::Failure>) -> String {
    match result {
        Ok(_) => String::new(),
        Err(f) => f
            .into_reports()
            .iter()
            .map(|d| render_plain(sources, d))
            .collect(),
    }
}

/// Runs the built `bayesc` with `args` in the folder `dir` (any path) and returns its output.
pub fn bayesc_in(dir: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_bayesc"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run bayesc")
}

/// A command's standard output followed by its standard error.
pub fn output_text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Runs `input` in a REPL session and asserts it succeeded; returns the text.
pub fn repl_ok(s: &mut bayesc::repl::Session, input: &str) -> String {
    let o = s.execute(input);
    assert!(!o.is_error, "`{input}` failed:\n{}", o.text);
    o.text
}

/// Runs `input` in a REPL session and asserts it failed; returns the text.
pub fn repl_err(s: &mut bayesc::repl::Session, input: &str) -> String {
    let o = s.execute(input);
    assert!(o.is_error, "`{input}` should fail but printed:\n{}", o.text);
    o.text
}

/// The mean of q in a variational draws file's text (its first data row, CmdStan's variational
/// layout), by column name with CmdStan's `beta.1` written `beta[1]`.
///
/// Panics (a test helper) when the text has no header or no first row, or a value is not a
/// number.
#[allow(dead_code)]
pub fn vi_mean_row(text: &str) -> Vec<(String, f64)> {
    let mut lines = text.lines().filter(|l| !l.starts_with('#'));
    let header = lines
        .next()
        .expect("a header row")
        .split(',')
        .map(|h| match h.split_once('.') {
            Some((a, i)) => format!("{a}[{i}]"),
            None => h.to_string(),
        });
    let mean = lines
        .next()
        .expect("the mean row")
        .split(',')
        .map(|v| v.parse::<f64>().unwrap());
    header.zip(mean).collect()
}

/// The full-data mean-field Gaussian optimum of labour on ζ = (alpha, beta[1..7]) (d = 8): its
/// means and sds on the unconstrained scale. Computed by the mean-field fixed point (damped
/// Newton steps of μ with E_q of each row's gradient and curvature, s_j = 1/E_q[−∂²L/∂ζ_j²])
/// with each row's linear predictor η ~ N(x·μ, Σ_j x_j²·s_j) integrated by 60-point
/// Gauss–Hermite quadrature (ELBO gradient below 1e-11), and again independently in session 19
/// with the trapezoid rule on ±12 sds: the same values to every printed digit. Its means are
/// within 0.06 NUTS sds of the NUTS reference.
pub const LABOUR_MF_MEAN: [f64; 8] = [
    3.201_173, -1.483_323, -0.064_231, -0.063_264, 0.819_688, 0.115_618, 0.613_366, -0.034_926,
];
/// The sds of [`LABOUR_MF_MEAN`]'s optimum.
pub const LABOUR_MF_SD: [f64; 8] = [
    0.080_402,
    0.153_354,
    0.043_045,
    0.001_830_5,
    0.165_367,
    0.132_318,
    0.067_363,
    0.003_549_5,
];
