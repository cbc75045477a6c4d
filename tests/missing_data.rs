//! Missing data (`@missing`, docs/missing_data.md): imputed entries are parameters of the log
//! density. Checked here: the imputed posterior against a closed form, the coverage of values
//! removed at random, gradients against finite differences (bounded entries included), the map
//! from parameters to entries, and the errors for every misuse.

mod common;

use bayesc::fit::{FitOptions, Method};
use bayesc::graph::Model;
use bayesc::inference::LogDensity;
use bayesc::pipeline;
use bayesc::syntax::source::SourceMap;
use rand::SeedableRng;
use rand_distr::{Distribution, Normal};

/// NUTS draws of `m` (2 chains × 600 after 400 warmup, seed 11), as name → all draws.
fn nuts(m: &Model) -> impl Fn(&str) -> Vec<f64> {
    let mut options = FitOptions::new(Method::Nuts, 11);
    options.mcmc.chains = 2;
    options.mcmc.warmup = 400;
    options.mcmc.samples = 600;
    let r = common::fit_quietly(m, &options);
    move |n: &str| {
        let j = r
            .draws
            .position(n)
            .unwrap_or_else(|| panic!("no column {n}"));
        r.draws.column(j).concat()
    }
}

fn mean_sd(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    let v = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0);
    (m, v.sqrt())
}

fn quantile(xs: &[f64], q: f64) -> f64 {
    let mut s = xs.to_vec();
    s.sort_by(f64::total_cmp);
    let h = q * (s.len() - 1) as f64;
    let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
    s[lo] + (h - lo as f64) * (s[hi] - s[lo])
}

/// The rendered errors of checking and compiling `model` with JSON data `json`.
fn errors(model: &str, json: &str) -> String {
    let mut sources = SourceMap::new();
    let result = pipeline::check_source(&mut sources, "model.bayes", model).and_then(|checked| {
        let data = vec![bayesc::data::DataSource::Json(
            bayesc::data::json::parse_json("data.json", json).expect("valid JSON"),
        )];
        pipeline::compile(&checked, &sources, &data).map(|_| ())
    });
    common::rendered(&sources, result)
}

/// With the imputation model's parameters fixed, each missing entry's posterior is that
/// model: x_missing[k] ~ normal(2, 3) exactly.
#[test]
fn imputed_entries_follow_the_imputation_model() {
    let model = "data { int N; @missing vector[N] x; }\n\
                 model { x ~ normal(2, 3); }\n";
    let m = common::compile_source(
        "model.bayes",
        model,
        Some(r#"{"N": 5, "x": [1.0, null, 4.0, "NA", -2.0]}"#),
        &[],
    );
    assert_eq!(m.dim(), 2);
    let names: Vec<String> = m
        .imputed_entries()
        .iter()
        .map(|e| format!("{} = {}", e.parameter, e.entry))
        .collect();
    assert_eq!(names, ["x_missing[1] = x[2]", "x_missing[2] = x[4]"]);
    let draws = nuts(&m);
    for k in 1..=2 {
        let xs = draws(&format!("x_missing[{k}]"));
        let (mean, sd) = mean_sd(&xs);
        // 1200 draws with ESS of that order: MCSE of the mean ≈ 3 / √1200 ≈ 0.09
        assert!((mean - 2.0).abs() < 0.4, "x_missing[{k}] mean {mean}");
        assert!((sd - 3.0).abs() < 0.3, "x_missing[{k}] sd {sd}");
    }
}

/// A regression with a covariate missing completely at random (25 % of N = 200): the central
/// 50 % and 90 % posterior intervals of the imputed entries cover the removed values at their
/// nominal rates (binomial bounds at about 3 sd), and the slope is recovered.
#[test]
fn imputed_covariate_covers_the_removed_values() {
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(20261202);
    let unit = Normal::new(0.0, 1.0).unwrap();
    let n = 200;
    let (mut xs, mut ys, mut removed) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..n {
        let x = 1.0 + 2.0 * unit.sample(&mut rng);
        let y = 0.5 + 1.5 * x + 0.5 * unit.sample(&mut rng);
        let drop = rand::RngExt::random::<f64>(&mut rng) < 0.25;
        xs.push(if drop {
            "null".to_string()
        } else {
            format!("{x}")
        });
        if drop {
            removed.push((i + 1, x));
        }
        ys.push(format!("{y}"));
    }
    let json = format!(
        r#"{{"N": {n}, "x": [{}], "y": [{}]}}"#,
        xs.join(","),
        ys.join(",")
    );
    let model = "data { int N; @missing vector[N] x; vector[N] y; }\n\
                 parameters { real mu_x; real<lower=0> sigma_x; real a; real b; real<lower=0> sigma; }\n\
                 model {\n  mu_x ~ normal(0, 5); sigma_x ~ normal(0, 5);\n  \
                 a ~ normal(0, 5); b ~ normal(0, 5); sigma ~ normal(0, 5);\n  \
                 x ~ normal(mu_x, sigma_x);\n  y ~ normal(a + b * x, sigma);\n}\n";
    let m = common::compile_source("model.bayes", model, Some(&json), &[]);
    let k = removed.len();
    assert_eq!(m.dim(), 5 + k);
    let entries = m.imputed_entries();
    assert_eq!(entries.len(), k);
    let draws = nuts(&m);
    let (mut in50, mut in90) = (0usize, 0usize);
    for (j, &(row, truth)) in removed.iter().enumerate() {
        assert_eq!(entries[j].entry, format!("x[{row}]"));
        let d = draws(&format!("x_missing[{}]", j + 1));
        if (quantile(&d, 0.25)..=quantile(&d, 0.75)).contains(&truth) {
            in50 += 1;
        }
        if (quantile(&d, 0.05)..=quantile(&d, 0.95)).contains(&truth) {
            in90 += 1;
        }
    }
    let kf = k as f64;
    let bounds = |p: f64| {
        let sd = (kf * p * (1.0 - p)).sqrt();
        (
            (kf * p - 3.0 * sd).floor() as usize,
            (kf * p + 3.0 * sd).ceil() as usize,
        )
    };
    let (lo50, hi50) = bounds(0.5);
    let (lo90, hi90) = bounds(0.9);
    assert!(
        (lo50..=hi50).contains(&in50),
        "50% intervals cover {in50} of {k}"
    );
    assert!(
        (lo90..=hi90.min(k)).contains(&in90),
        "90% intervals cover {in90} of {k}"
    );
    eprintln!("coverage of {k} removed values: 50% intervals {in50}, 90% intervals {in90}");
    let (b, _) = mean_sd(&draws("b"));
    assert!((b - 1.5).abs() < 0.1, "slope {b}");
}

/// Gradients with imputed entries, including entries of a bounded variable (log-transformed,
/// with its Jacobian) and of a matrix (column-major storage, Stan order of the map).
#[test]
fn gradients_with_imputed_entries_match_finite_differences() {
    let model = "data { int N; @missing vector<lower=0>[N] w; @missing matrix[N, 2] X; vector[N] y; }\n\
                 parameters { real m; real<lower=0> s; vector[2] beta; }\n\
                 model {\n  m ~ normal(0, 1); s ~ normal(0, 1); beta ~ normal(0, 1);\n  \
                 w ~ lognormal(m, s);\n  to_vector(X) ~ normal(0, 1);\n  \
                 y ~ normal(X * beta + log(w), 1);\n}\n";
    let json = r#"{"N": 4, "w": [1.5, null, 0.7, null],
                   "X": [[0.1, 0.2], [null, -1.0], [0.5, null], [1.0, 2.0]],
                   "y": [0.3, -0.2, 1.1, 0.4]}"#;
    let m = common::compile_source("model.bayes", model, Some(json), &[]);
    assert_eq!(m.dim(), 4 + 2 + 2);
    let map: Vec<String> = m
        .imputed_entries()
        .iter()
        .map(|e| format!("{} = {}", e.parameter, e.entry))
        .collect();
    assert_eq!(
        map,
        [
            "w_missing[1] = w[2]",
            "w_missing[2] = w[4]",
            "X_missing[1] = X[2,1]",
            "X_missing[2] = X[3,2]",
        ]
    );
    for theta in common::points(m.dim()) {
        let mut grad = vec![0.0; m.dim()];
        m.log_density_grad(&theta, &mut grad).expect("finite");
        let coords: Vec<usize> = (0..m.dim()).collect();
        common::assert_gradient_fd(&m, &theta, &grad, 1e-6, &coords);
    }
    // the imputed w entries are positive on the constrained scale
    let names = m.parameter_names();
    let mut rng = bayesc::inference::rng::stream(1, 0);
    let constrained = m
        .write_array(
            &[0.0, 0.0, 0.0, 0.0, -3.0, 2.0, 0.5, 0.5],
            false,
            false,
            &mut rng,
        )
        .expect("finite");
    for (n, v) in names.iter().zip(&constrained) {
        if n.starts_with("w_missing") {
            assert!(*v > 0.0, "{n} = {v}");
        }
    }
}

#[test]
fn misuses_of_missing_are_clear_errors() {
    let data = r#"{"N": 3, "x": [1.0, null, 2.0]}"#;
    let cases = [
        (
            "data { int N; vector[N] x; } parameters { real mu; } model { x ~ normal(mu, 1); }",
            "declare the variable `@missing`",
        ),
        (
            "data { int N; @missing vector[N] x; } transformed data { real m = mean(x); } \
             parameters { real mu; } model { mu ~ normal(m, 1); x ~ normal(mu, 1); }",
            "cannot be used in the `transformed data` block",
        ),
        (
            "data { int N; @missing vector[N] x; } parameters { real mu; } \
             model { mu ~ normal(sum(x), 1); }",
            "no statement gives it a distribution",
        ),
        (
            "data { int N; vector[N] x; } parameters { @missing real mu; } \
             model { mu ~ normal(0, 1); x ~ normal(mu, 1); }",
            "`@missing` applies to data variables",
        ),
        (
            "data { int N; @missing array[N] int x; } parameters { real mu; } \
             model { mu ~ normal(0, 1); }",
            "`@missing` needs real values",
        ),
        (
            "data { int N; @missing(1) vector[N] x; } parameters { real mu; } \
             model { x ~ normal(mu, 1); }",
            "`@missing` takes no argument",
        ),
        (
            "data { int N; vector[N] x; } parameters { @dropout vector[2] w; } \
             model { w ~ normal(0, 1); x ~ normal(w[1], 1); }",
            "needs its drop rate",
        ),
        (
            "data { int N; vector[N] lo; @missing vector<lower=lo>[N] x; } parameters { real mu; } \
             model { x ~ normal(mu, 1); }",
            "a bound of the `@missing` variable `x`",
        ),
        (
            "data { int N; @missing vector[N] x; } parameters { vector[N] z; } \
             model { z ~ normal(0, 1); x ~ normal(0, 1); } \
             generated quantities { real x_missing = 1; }",
            "x_missing",
        ),
    ];
    for (model, want) in cases {
        let text = errors(model, data);
        assert!(
            text.contains(want),
            "model {model}\nexpected `{want}` in:\n{text}"
        );
    }
}

/// Complete data in a `@missing` variable: nothing is imputed, and the model is the plain one.
#[test]
fn complete_data_in_a_missing_variable_adds_no_parameter() {
    let model = "data { int N; @missing vector[N] x; } parameters { real mu; } \
                 model { mu ~ normal(0, 1); x ~ normal(mu, 1); }";
    let m = common::compile_source(
        "model.bayes",
        model,
        Some(r#"{"N": 3, "x": [1.0, 0.5, 2.0]}"#),
        &[],
    );
    assert_eq!(m.dim(), 1);
    assert!(m.imputed_entries().is_empty());
    let lp = m.log_density_grad(&[0.3], &mut [0.0]).unwrap();
    let want = -0.5 * 0.3f64.powi(2) - 0.5 * [0.7f64, 0.2, 1.7].iter().map(|d| d * d).sum::<f64>();
    assert!((lp - want).abs() < 1e-12, "{lp} vs {want}");
}

/// A fit with imputed training rows predicts on complete new rows (the imputed entries belong to
/// the training rows and are dropped), and refuses new rows with missing entries.
#[test]
fn predict_after_imputation_uses_the_fitted_parameters_only() {
    let dir = std::env::temp_dir().join(format!("bayesc_missing_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let model = std::fs::read_to_string(common::root().join("examples/missing_data/model.bayes"))
        .unwrap()
        + "generated quantities { vector[N] y_hat = a + b * x; }\n";
    std::fs::write(dir.join("g.bayes"), model).unwrap();
    let data =
        std::fs::read_to_string(common::root().join("examples/missing_data/data.csv")).unwrap();
    std::fs::write(dir.join("d.csv"), &data).unwrap();
    let head: Vec<&str> = data.lines().take(6).collect();
    assert!(
        head.iter().any(|l| l.starts_with("NA")),
        "rows 1–5 have a missing x"
    );
    let complete: Vec<String> = head.iter().map(|l| l.replace("NA", "0.5")).collect();
    std::fs::write(dir.join("new.csv"), complete.join("\n") + "\n").unwrap();
    std::fs::write(dir.join("new_na.csv"), head.join("\n") + "\n").unwrap();
    let d = dir.to_str().unwrap();
    let (ok, text) = common::run_bayesc_in(
        d,
        &[
            "fit",
            "g.bayes",
            "--data",
            "d.csv",
            "--method",
            "optimize",
            "--seed",
            "1",
            "--save-fit",
            "fit.json",
        ],
    );
    assert!(ok, "{text}");
    let (ok, text) = common::run_bayesc_in(
        d,
        &[
            "predict", "g.bayes", "--fit", "fit.json", "--data", "new.csv",
        ],
    );
    assert!(ok, "{text}");
    // the first row whose x was NA now has x = 0.5: y_hat = a + 0.5 b ≈ 0.405 + 0.762 at the
    // optimum (README's posterior means a = 0.405, b = 1.523)
    let j = head.iter().position(|l| l.starts_with("NA")).unwrap();
    let name = format!("y_hat[{j}],");
    let row = text
        .lines()
        .find(|l| l.starts_with(&name))
        .unwrap_or_else(|| panic!("no row {name} in:\n{text}"));
    let mean: f64 = row.split(',').nth(1).unwrap().parse().unwrap();
    assert!((mean - 1.166).abs() < 0.05, "{row}");
    let (ok, text) = common::run_bayesc_in(
        d,
        &[
            "predict",
            "g.bayes",
            "--fit",
            "fit.json",
            "--data",
            "new_na.csv",
        ],
    );
    assert!(!ok);
    assert!(
        text.contains("the new data has missing entries in `x`"),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// A scalar `@missing real z` given as null: its one parameter and its entry carry no index,
/// and the note says so (it used to print `z[]`).
#[test]
fn a_missing_scalar_is_named_without_an_index() {
    let model = "data { @missing real z; } parameters { real mu; } \
                 model { mu ~ normal(0, 1); z ~ normal(mu, 1); }\n";
    let m = common::compile_source("model.bayes", model, Some(r#"{"z": null}"#), &[]);
    assert_eq!(m.dim(), 2);
    let entries = m.imputed_entries();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].entry, "z");
    // the note names the parameter as its draws column is named
    let names = m.parameter_names();
    assert!(names.contains(&entries[0].parameter), "{names:?}");
    let note = bayesc::output::report::imputed_note(&entries).expect("a note");
    assert!(!note.contains("z[]"), "{note}");
    assert!(note.contains("imputed: z "), "{note}");
    assert!(note.contains(&entries[0].parameter), "{note}");
}

/// Declaring `w_missing` beside `@missing w` is one error (the name clash), not followed by
/// "undeclared `w_missing`" at its uses.
#[test]
fn a_missing_name_clash_does_not_cascade() {
    let model = "data { int N; @missing vector[N] w; } parameters { real w_missing; } \
                 model { w_missing ~ normal(0, 1); w ~ normal(w_missing, 1); }";
    let text = errors(model, r#"{"N": 3, "w": [1.0, null, 2.0]}"#);
    assert!(text.contains("w_missing"), "{text}");
    assert_eq!(text.matches("error").count(), 1, "{text}");
    assert!(!text.contains("undeclared"), "{text}");
}

/// VOGN and Vadam need per-observation gradients, which imputed rows do not give; without
/// `--batch-size` the refusal says so and names the methods that work, instead of telling the
/// user to "drop --batch-size" they never passed (fresh-user finding, session 21).
#[test]
fn row_methods_refuse_imputed_rows_without_blaming_batch_size() {
    for method in ["vogn", "vadam"] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_bayesc"))
            .current_dir(common::root())
            .args([
                "fit",
                "examples/missing_data/model.bayes",
                "--data",
                "examples/missing_data/data.csv",
                "--method",
                method,
                "-q",
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{method}: {err}");
        assert!(
            err.contains(&format!(
                "--method {method} cannot split this model's log density over its rows: `x` has \
                 missing entries"
            )),
            "{method}: {err}"
        );
        assert!(!err.contains("--batch-size"), "{method}: {err}");
        assert!(
            err.contains("use ivon or ngvi --diagonal"),
            "{method}: {err}"
        );
    }
}
