//! CmdStan-style options of `bayesc fit` end to end (issue 14): `--save-warmup`,
//! `--output-dir`, `--refresh`, `--sig-figs`, `--metric unit`, `--method fixed_param` (also
//! chosen for a model without parameters), the optimizer's `--algorithm` and tolerances, and
//! `bayesc optimize --help` listing only its own options.

mod common;

use std::path::Path;
use std::process::Output;

/// A regression y = a + b·x + ε, ε ~ N(0, 1), without priors: its mode is the OLS fit.
const REGRESSION: &str = "data {\n  int<lower=0> N;\n  vector[N] x;\n  vector[N] y;\n}\n\
parameters {\n  real a;\n  real b;\n}\nmodel {\n  a ~ normal(0, 1000);\n  b ~ normal(0, 1000);\n  \
y ~ normal(a + b * x, 1);\n}\n";

/// A normal model with a positive scale and generated quantities (for the sampler options).
const NORMAL: &str = "data {\n  int<lower=0> N;\n  vector[N] y;\n}\nparameters {\n  real mu;\n  \
real<lower=0> sigma;\n}\nmodel {\n  mu ~ normal(0, 10);\n  sigma ~ normal(0, 5);\n  \
y ~ normal(mu, sigma);\n}\ngenerated quantities {\n  real y_rep = normal_rng(mu, sigma);\n}\n";

/// Simulation only: no parameters, generated quantities from data.
const SIMULATE: &str = "data {\n  real mu;\n}\ngenerated quantities {\n  real z = normal_rng(mu, 2);\n  \
int k = poisson_rng(3);\n}\n";

fn bayesc(dir: &Path, args: &[&str]) -> Output {
    common::bayesc_in(dir, args)
}

fn text(o: &Output) -> String {
    common::output_text(o)
}

/// A scratch folder with the models and data files.
fn fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    std::fs::write(p.join("reg.bayes"), REGRESSION).unwrap();
    std::fs::write(p.join("normal.bayes"), NORMAL).unwrap();
    std::fs::write(p.join("sim.bayes"), SIMULATE).unwrap();
    std::fs::write(p.join("sim.json"), "{\"mu\": 3.0}").unwrap();
    let mut reg = String::from("x,y\n");
    let mut norm = String::from("y\n");
    for i in 0..20 {
        let x = i as f64 / 4.0;
        // a fixed, irregular residual pattern
        let e = ((i * 7919) % 13) as f64 / 6.0 - 1.0;
        reg.push_str(&format!("{x},{}\n", 1.5 + 0.7 * x + e));
        norm.push_str(&format!("{}\n", 2.0 + e));
    }
    std::fs::write(p.join("reg.csv"), reg).unwrap();
    std::fs::write(p.join("normal.csv"), norm).unwrap();
    dir
}

/// The OLS intercept and slope of the fixture's regression data.
fn ols(dir: &Path) -> (f64, f64) {
    let t = std::fs::read_to_string(dir.join("reg.csv")).unwrap();
    let rows: Vec<(f64, f64)> = t
        .lines()
        .skip(1)
        .map(|l| {
            let (x, y) = l.split_once(',').unwrap();
            (x.parse().unwrap(), y.parse().unwrap())
        })
        .collect();
    let n = rows.len() as f64;
    let mx = rows.iter().map(|r| r.0).sum::<f64>() / n;
    let my = rows.iter().map(|r| r.1).sum::<f64>() / n;
    let sxy: f64 = rows.iter().map(|r| (r.0 - mx) * (r.1 - my)).sum();
    let sxx: f64 = rows.iter().map(|r| (r.0 - mx) * (r.0 - mx)).sum();
    let b = sxy / sxx;
    (my - b * mx, b)
}

/// The estimate of `name` in the optimize table.
fn estimate(out: &str, name: &str) -> f64 {
    out.lines()
        .find_map(|l| {
            let mut f = l.split_whitespace();
            (f.next() == Some(name)).then(|| f.next()?.parse().ok())?
        })
        .unwrap_or_else(|| panic!("no estimate of {name} in\n{out}"))
}

/// The number of optimizer iterations in `iterations: N <ALGO> + …`.
fn iterations(out: &str) -> usize {
    out.lines()
        .find_map(|l| l.strip_prefix("iterations: "))
        .and_then(|r| r.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no iterations line in\n{out}"))
}

#[test]
fn each_optimizer_reaches_the_ols_mode() {
    let dir = fixture();
    let (a, b) = ols(dir.path());
    for algo in ["lbfgs", "bfgs", "newton"] {
        let o = bayesc(
            dir.path(),
            &[
                "optimize",
                "reg.bayes",
                "--data",
                "reg.csv",
                "--seed",
                "3",
                "--algorithm",
                algo,
            ],
        );
        let out = text(&o);
        assert_eq!(o.status.code(), Some(0), "{algo}: {out}");
        // the prior sd 1000 moves the mode by ~1e-6 of the OLS fit; 6 printed decimals
        assert!(
            (estimate(&out, "a") - a).abs() < 2e-5,
            "{algo}: a vs {a}\n{out}"
        );
        assert!(
            (estimate(&out, "b") - b).abs() < 2e-5,
            "{algo}: b vs {b}\n{out}"
        );
        assert!(out.contains("converged"), "{algo}: {out}");
        // "12 L-BFGS iterations + 2 Newton polish steps", "5 Newton steps" (session 21: no
        // longer "5 Newton + 0 Newton steps")
        let name = match algo {
            "lbfgs" => " L-BFGS iteration",
            "bfgs" => " BFGS iteration",
            _ => " Newton step",
        };
        assert!(out.contains(name), "{algo}: {out}");
        assert!(!out.contains("Newton + 0 Newton"), "{algo}: {out}");
    }
}

#[test]
fn a_loose_gradient_tolerance_stops_earlier() {
    let dir = fixture();
    let run = |extra: &[&str]| {
        let mut args = vec!["optimize", "reg.bayes", "--data", "reg.csv", "--seed", "5"];
        args.extend_from_slice(extra);
        let o = bayesc(dir.path(), &args);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        text(&o)
    };
    // the other tests off, so that only the gradient norm can stop the run
    let off = [
        "--tol-obj",
        "0",
        "--tol-rel-obj",
        "0",
        "--tol-rel-grad",
        "0",
        "--tol-param",
        "0",
    ];
    let tight = run(&[&off[..], &["--tol-grad", "1e-8"]].concat());
    let loose = run(&[&off[..], &["--tol-grad", "10"]].concat());
    assert!(tight.contains("gradient norm below tolerance"), "{tight}");
    assert!(loose.contains("gradient norm below tolerance"), "{loose}");
    assert!(
        iterations(&loose) < iterations(&tight),
        "loose {} vs tight {}",
        iterations(&loose),
        iterations(&tight)
    );
    // --iter caps the run
    let capped = run(&[&off[..], &["--tol-grad", "0", "--iter", "2"]].concat());
    assert_eq!(iterations(&capped), 2, "{capped}");
    // (the Newton polish then reaches the optimum, which the report says it verified)
    assert!(
        capped.contains("maximum number of iterations")
            || capped.contains("which L-BFGS had not reached in 2 iterations"),
        "{capped}"
    );
}

#[test]
fn optimizer_flags_are_checked() {
    let dir = fixture();
    for (args, needle) in [
        (&["--tol-grad", "-1"][..], "--tol-grad must be"),
        (
            &["--algorithm", "newton", "--tol-obj", "1e-3"][..],
            "--tol-obj",
        ),
        (
            &["--algorithm", "bfgs", "--history-size", "7"][..],
            "--history-size",
        ),
        (&["--algorithm", "simplex"][..], "simplex"),
        (&["--iter", "0"][..], "--iter"),
    ] {
        let mut a = vec!["optimize", "reg.bayes", "--data", "reg.csv"];
        a.extend_from_slice(args);
        let o = bayesc(dir.path(), &a);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(text(&o).contains(needle), "{args:?}: {}", text(&o));
    }
    // optimizer flags are refused for a sampler
    let o = bayesc(
        dir.path(),
        &[
            "fit",
            "reg.bayes",
            "--data",
            "reg.csv",
            "--method",
            "nuts",
            "--algorithm",
            "bfgs",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--algorithm applies to"), "{}", text(&o));
}

#[test]
fn optimize_help_lists_only_its_options() {
    let dir = fixture();
    let o = bayesc(dir.path(), &["optimize", "--help"]);
    let help = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(0));
    // the option lines of the listing (`  -o, --output <FILE>`, `      --jacobian`)
    let listed = |flag: &str| {
        help.lines().any(|l| {
            let l = l.trim_start();
            let l = l.split_once(", ").map_or(l, |(_, rest)| rest);
            l == flag || l.starts_with(&format!("{flag} "))
        })
    };
    for flag in [
        "--algorithm",
        "--tol-rel-grad",
        "--iter",
        "--jacobian",
        "--se",
        "--history-size",
        "--output-dir",
        "--sig-figs",
    ] {
        assert!(listed(flag), "{flag} missing from\n{help}");
    }
    for flag in [
        "--chains",
        "--draws",
        "--adapt-delta",
        "--num-paths",
        "--batch-size",
        "--save-warmup",
        "--mc-samples",
        "--method",
    ] {
        assert!(!listed(flag), "{flag} listed in\n{help}");
    }
    // `fit --help` still lists everything
    let fit = String::from_utf8_lossy(&bayesc(dir.path(), &["fit", "--help"]).stdout).into_owned();
    assert!(
        fit.contains("--chains") && fit.contains("--algorithm"),
        "{fit}"
    );
    // the hidden options are still refused, not silently ignored
    let o = bayesc(
        dir.path(),
        &[
            "optimize",
            "reg.bayes",
            "--data",
            "reg.csv",
            "--chains",
            "2",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

/// Parameters of every kind of constraint, for the `--init FILE` checks.
const CONSTRAINED: &str = "parameters {\n  real mu;\n  real<lower=0> sigma;\n  \
vector<lower=-1, upper=1>[3] r;\n  simplex[3] th;\n  cov_matrix[2] S;\n}\nmodel {\n  \
mu ~ normal(0, 1);\n  sigma ~ exponential(1);\n  r ~ normal(0, 1);\n  \
S ~ wishart(4, diag_matrix(rep_vector(1, 2)));\n}\n";

/// Column `name` of a Stan CSV file (comments skipped).
fn csv_column(path: &Path, name: &str) -> Vec<f64> {
    let t = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut rows = t.lines().filter(|l| !l.starts_with('#') && !l.is_empty());
    let header: Vec<&str> = rows.next().expect("header").split(',').collect();
    let j = header
        .iter()
        .position(|h| *h == name)
        .unwrap_or_else(|| panic!("no column {name} in {header:?}"));
    rows.map(|r| r.split(',').nth(j).unwrap().parse().unwrap())
        .collect()
}

#[test]
fn init_file_sets_the_fixed_point_and_the_header() {
    let dir = fixture();
    let p = dir.path();
    std::fs::write(p.join("init.json"), r#"{"mu": 1.25, "sigma": 0.75}"#).unwrap();
    let run = |out: &str| {
        let o = bayesc(
            p,
            &[
                "fit",
                "normal.bayes",
                "--data",
                "normal.csv",
                "--method",
                "fixed_param",
                "--samples",
                "3",
                "--chains",
                "2",
                "--seed",
                "4",
                "--init",
                "init.json",
                "-o",
                out,
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        text(&o)
    };
    let out = run("fp.csv");
    assert!(
        out.contains("starting from the initial values in init.json"),
        "{out}"
    );
    for c in 1..=2 {
        let f = p.join(format!("fp_{c}.csv"));
        // the constrained values come back exactly through log / exp (to rounding)
        for v in csv_column(&f, "mu") {
            assert!((v - 1.25).abs() < 1e-12, "{v}");
        }
        for v in csv_column(&f, "sigma") {
            assert!((v - 0.75).abs() < 1e-12, "{v}");
        }
        let header = std::fs::read_to_string(&f).unwrap();
        assert!(
            header.contains("\n# init = init.json\n# random\n"),
            "{header}"
        );
    }
    // CmdStan's per-chain files: init_1.json exists, so chain c reads init_c.json
    std::fs::write(p.join("init_1.json"), r#"{"mu": -0.5, "sigma": 2}"#).unwrap();
    std::fs::write(p.join("init_2.json"), r#"{"mu": 3.5, "sigma": 0.25}"#).unwrap();
    run("pc.csv");
    for (c, mu, sigma) in [(1, -0.5, 2.0), (2, 3.5, 0.25)] {
        let f = p.join(format!("pc_{c}.csv"));
        assert!((csv_column(&f, "mu")[0] - mu).abs() < 1e-12);
        assert!((csv_column(&f, "sigma")[0] - sigma).abs() < 1e-12);
        let header = std::fs::read_to_string(&f).unwrap();
        assert!(
            header.contains(&format!("# init = init_{c}.json\n")),
            "{header}"
        );
    }
    // a partial file: mu fixed in both chains, sigma random (different per chain)
    std::fs::write(p.join("mu.json"), r#"{"mu": 0.5}"#).unwrap();
    let o = bayesc(
        p,
        &[
            "fit",
            "normal.bayes",
            "--data",
            "normal.csv",
            "--method",
            "fixed_param",
            "--samples",
            "2",
            "--chains",
            "2",
            "--seed",
            "4",
            "--init",
            "mu.json",
            "-o",
            "pa.csv",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let s1 = csv_column(&p.join("pa_1.csv"), "sigma")[0];
    let s2 = csv_column(&p.join("pa_2.csv"), "sigma")[0];
    assert!((csv_column(&p.join("pa_1.csv"), "mu")[0] - 0.5).abs() < 1e-12);
    assert!((csv_column(&p.join("pa_2.csv"), "mu")[0] - 0.5).abs() < 1e-12);
    // uniform(−2, 2) on log σ
    assert!(
        s1 != s2 && (s1.ln().abs() < 2.0) && (s2.ln().abs() < 2.0),
        "{s1} {s2}"
    );
}

#[test]
fn init_file_starts_the_optimizer_and_the_samplers() {
    let dir = fixture();
    let p = dir.path();
    let (a, b) = ols(p);
    std::fs::write(p.join("at_mode.json"), format!(r#"{{"a": {a}, "b": {b}}}"#)).unwrap();
    let opt = |extra: &[&str]| {
        let mut args = vec!["optimize", "reg.bayes", "--data", "reg.csv", "--seed", "5"];
        args.extend_from_slice(extra);
        let o = bayesc(p, &args);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        text(&o)
    };
    let from_mode = opt(&["--init", "at_mode.json", "-o", "opt.csv"]);
    let from_random = opt(&[]);
    // started at the OLS fit (1e-6 off the mode), L-BFGS has almost nothing to do
    assert!(
        iterations(&from_mode) <= 2 && iterations(&from_mode) < iterations(&from_random),
        "{from_mode}\n{from_random}"
    );
    assert!((estimate(&from_mode, "a") - a).abs() < 2e-5, "{from_mode}");
    let header = std::fs::read_to_string(p.join("opt.csv")).unwrap();
    assert!(header.contains("# init = at_mode.json\n"), "{header}");
    // NUTS, MH, Laplace, QBVI and Pathfinder run from the file too
    for method in ["nuts", "mh", "laplace", "qbvi", "pathfinder"] {
        let mut args = vec![
            "fit",
            "reg.bayes",
            "--data",
            "reg.csv",
            "--seed",
            "2",
            "--method",
            method,
            "--init",
            "at_mode.json",
            "-q",
        ];
        if matches!(method, "nuts" | "mh") {
            args.extend_from_slice(&["--warmup", "100", "--samples", "100"]);
        }
        let o = bayesc(p, &args);
        assert_eq!(o.status.code(), Some(0), "{method}: {}", text(&o));
    }
}

#[test]
fn bad_init_files_name_the_file_the_variable_and_the_element() {
    let dir = fixture();
    let p = dir.path();
    std::fs::write(p.join("c.bayes"), CONSTRAINED).unwrap();
    let cases: [(&str, &[&str]); 11] = [
        (
            r#"{"sigma": -1}"#,
            &["bad.json", "`sigma` = -1 is below its lower bound 0"],
        ),
        (
            r#"{"sigma": 0}"#,
            &["`sigma` = 0 equals its lower bound 0", "log density is −∞"],
        ),
        (
            r#"{"r": [0.5, 1.5, 0]}"#,
            &["`r[2]` = 1.5 is above its upper bound 1"],
        ),
        (
            r#"{"r": [1, 0, 0]}"#,
            &["`r[1]` = 1 equals its upper bound 1"],
        ),
        (
            r#"{"th": [0.5, 0.6, 0.1]}"#,
            &["`th` is not a simplex", "sum to 1"],
        ),
        (r#"{"th": [0, 0.5, 0.5]}"#, &["`th` lies on the boundary"]),
        (
            r#"{"S": [[1, 2], [2, 1]]}"#,
            &["`S` is not a covariance matrix", "positive definite"],
        ),
        (r#"{"mu": "NaN"}"#, &["bad.json, key `mu`", "not finite"]),
        (
            r#"{"r": [[0.1, 0.2, 0.3]]}"#,
            &["key `r` is an array of shape [1, 3]", "shape [3]"],
        ),
        (
            r#"{"sgima": 1}"#,
            &["key `sgima` is not a parameter", "did you mean `sigma`?"],
        ),
        (r#"{"mu": [1, 2"#, &["bad.json", "invalid JSON"]),
    ];
    for (json, needles) in cases {
        std::fs::write(p.join("bad.json"), json).unwrap();
        let o = bayesc(
            p,
            &[
                "fit", "c.bayes", "--method", "nuts", "--init", "bad.json", "--seed", "1",
            ],
        );
        let t = text(&o);
        assert_eq!(o.status.code(), Some(1), "{json}: {t}");
        assert!(!t.contains("panicked"), "{json}: {t}");
        for n in needles {
            assert!(t.contains(n), "{json}: `{n}` missing from\n{t}");
        }
    }
    // a valid file of every kind starts the chains (and the draws stay in the support)
    std::fs::write(
        p.join("good.json"),
        r#"{"mu": 0.1, "sigma": 1, "r": [-0.5, 0, 0.5], "th": [0.2, 0.3, 0.5],
            "S": [[2, 0.5], [0.5, 1]]}"#,
    )
    .unwrap();
    let o = bayesc(
        p,
        &[
            "fit",
            "c.bayes",
            "--method",
            "fixed_param",
            "--init",
            "good.json",
            "--samples",
            "1",
            "--chains",
            "1",
            "-o",
            "g.csv",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let g = p.join("g_1.csv");
    for (col, want) in [
        ("r.1", -0.5),
        ("r.3", 0.5),
        ("th.3", 0.5),
        ("S.1.1", 2.0),
        ("S.2.1", 0.5),
        ("S.1.2", 0.5),
        ("S.2.2", 1.0),
    ] {
        let v = csv_column(&g, col)[0];
        assert!((v - want).abs() < 1e-12, "{col} = {v}, want {want}");
    }
    // usage errors before the model is compiled: missing file, not JSON, a negative radius
    for (arg, needle) in [
        ("nope.json", "`nope.json`: no such file"),
        ("c.bayes", "a JSON file (ending in .json)"),
        ("-3", "radius R ≥ 0"),
    ] {
        let o = bayesc(p, &["fit", "c.bayes", "--method", "nuts", "--init", arg]);
        assert_eq!(o.status.code(), Some(2), "{arg}: {}", text(&o));
        assert!(text(&o).contains(needle), "{arg}: {}", text(&o));
    }
    // a radius still applies only to the samplers
    let o = bayesc(
        p,
        &["fit", "c.bayes", "--method", "optimize", "--init", "1"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

#[test]
fn optimize_header_lists_the_tolerances_as_cmdstan() {
    let dir = fixture();
    let p = dir.path();
    let o = bayesc(
        p,
        &[
            "optimize",
            "reg.bayes",
            "--data",
            "reg.csv",
            "--seed",
            "1",
            "--tol-grad",
            "0.001",
            "--history-size",
            "7",
            "-o",
            "o.csv",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let h = std::fs::read_to_string(p.join("o.csv")).unwrap();
    let want = "#   optimize\n#     algorithm = lbfgs (Default)\n#       lbfgs\n\
                #         tol_obj = 1e-12 (Default)\n#         tol_rel_obj = 10000 (Default)\n\
                #         tol_grad = 0.001\n#         tol_rel_grad = 10000000 (Default)\n\
                #         tol_param = 1e-8 (Default)\n#         history_size = 7\n\
                #     jacobian = false (Default)\n#     iter = 2000 (Default)\n";
    assert!(h.contains(want), "{h}");
    // BFGS: the tolerances without history_size; Newton: none
    let o = bayesc(
        p,
        &[
            "optimize",
            "reg.bayes",
            "--data",
            "reg.csv",
            "--algorithm",
            "bfgs",
            "--tol-param",
            "1e-6",
            "--iter",
            "50",
            "-o",
            "b.csv",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let h = std::fs::read_to_string(p.join("b.csv")).unwrap();
    assert!(h.contains("#     algorithm = bfgs\n#       bfgs\n"), "{h}");
    assert!(h.contains("#         tol_param = 1e-6\n"), "{h}");
    assert!(
        !h.contains("history_size") && h.contains("#     iter = 50\n"),
        "{h}"
    );
    let o = bayesc(
        p,
        &[
            "optimize",
            "reg.bayes",
            "--data",
            "reg.csv",
            "--algorithm",
            "newton",
            "-o",
            "n.csv",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let h = std::fs::read_to_string(p.join("n.csv")).unwrap();
    assert!(
        h.contains("#     algorithm = newton\n#     jacobian"),
        "{h}"
    );
}
