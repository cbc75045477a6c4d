//! The CmdStan sampler and output options of `bayesc fit` end to end (issue 14):
//! `--save-warmup`, `--output-dir`, `--refresh`, `--sig-figs`, `--metric unit` and
//! `fixed_param` sampling (asked for, and chosen for a model without parameters).

mod common;

use std::path::Path;
use std::process::Output;

use bayesc::output::stan_csv::read_stan_csv;

/// A normal model with a positive scale and a generated quantity.
const NORMAL: &str = "data {\n  int<lower=0> N;\n  vector[N] y;\n}\nparameters {\n  real mu;\n  \
real<lower=0> sigma;\n}\nmodel {\n  mu ~ normal(0, 10);\n  sigma ~ normal(0, 5);\n  \
y ~ normal(mu, sigma);\n}\ngenerated quantities {\n  real y_rep = normal_rng(mu, sigma);\n}\n";

/// Simulation only: no parameters.
const SIMULATE: &str =
    "data {\n  real mu;\n}\ngenerated quantities {\n  real z = normal_rng(mu, 2);\n}\n";

fn bayesc(dir: &Path, args: &[&str]) -> Output {
    common::bayesc_in(dir, args)
}

fn text(o: &Output) -> String {
    common::output_text(o)
}

fn fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    std::fs::write(p.join("normal.bayes"), NORMAL).unwrap();
    std::fs::write(p.join("sim.bayes"), SIMULATE).unwrap();
    std::fs::write(p.join("sim.json"), "{\"mu\": 3.0}").unwrap();
    let mut y = String::from("y\n");
    for i in 0..30 {
        y.push_str(&format!("{}\n", 2.0 + ((i * 7919) % 13) as f64 / 6.0 - 1.0));
    }
    std::fs::write(p.join("normal.csv"), y).unwrap();
    dir
}

/// `fit normal.bayes` with NUTS, 2 chains × (100 + 100), seed 4, and `extra`.
fn nuts(dir: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "fit",
        "normal.bayes",
        "--data",
        "normal.csv",
        "--method",
        "nuts",
        "--chains",
        "2",
        "--warmup",
        "100",
        "--samples",
        "100",
        "--seed",
        "4",
        "-q",
    ];
    args.extend_from_slice(extra);
    bayesc(dir, &args)
}

/// The data rows (not comments, not the header) of a CSV file, and the comment lines.
fn rows_and_comments(path: &Path) -> (Vec<String>, Vec<String>) {
    let t = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = t.lines().filter(|l| !l.starts_with('#'));
    lines.next();
    let rows = lines.map(str::to_string).collect();
    let comments = t
        .lines()
        .filter(|l| l.starts_with('#'))
        .map(str::to_string)
        .collect();
    (rows, comments)
}

#[test]
fn save_warmup_writes_warmup_rows_before_the_adaptation_comments() {
    let dir = fixture();
    let p = dir.path();
    let plain = nuts(p, &["-o", "plain.csv"]);
    assert_eq!(plain.status.code(), Some(0), "{}", text(&plain));
    let saved = nuts(p, &["-o", "warm.csv", "--save-warmup", "--thin", "1"]);
    assert_eq!(saved.status.code(), Some(0), "{}", text(&saved));
    // the printed summary leaves the warmup out: the same as without --save-warmup
    // (after the first line, which has the wall time)
    let after_timing = |o: &Output| {
        let t = String::from_utf8_lossy(&o.stdout).into_owned();
        t.split_once('\n')
            .map(|(_, r)| r.to_string())
            .unwrap_or_default()
    };
    assert_eq!(
        after_timing(&plain),
        after_timing(&saved).replace("warm_", "plain_")
    );
    for c in 1..=2 {
        let file = p.join(format!("warm_{c}.csv"));
        let t = std::fs::read_to_string(&file).unwrap();
        assert!(t.contains("#     save_warmup = true\n"), "{t}");
        let (rows, _) = rows_and_comments(&file);
        assert_eq!(rows.len(), 200, "100 warmup + 100 draws");
        // "# Adaptation terminated" comes after the 100 warmup rows (line order in the file)
        let lines: Vec<&str> = t.lines().collect();
        let header = lines.iter().position(|l| l.starts_with("lp__")).unwrap();
        let adapt = lines
            .iter()
            .position(|l| *l == "# Adaptation terminated")
            .unwrap();
        assert_eq!(
            adapt,
            header + 101,
            "adaptation block after the warmup rows"
        );
        // the post-warmup rows are those of the run without --save-warmup
        let (plain_rows, _) = rows_and_comments(&p.join(format!("plain_{c}.csv")));
        assert_eq!(&rows[100..], &plain_rows[..]);
        // the reader drops the warmup rows and still finds the step size
        let f = read_stan_csv(&file).unwrap();
        assert_eq!((f.n_draws, f.warmup_draws), (100, 100));
        assert!(f.step_size().is_some(), "{:?}", f.adaptation_lines);
    }
    let s1 = bayesc(p, &["summary", "warm_1.csv", "warm_2.csv"]);
    let s0 = bayesc(p, &["summary", "plain_1.csv", "plain_2.csv"]);
    assert_eq!(s1.stdout, s0.stdout, "{}", text(&s1));
    // thinned warmup: ⌈100 / 3⌉ = 34 warmup rows, ⌈100 / 3⌉ = 34 draws
    let thin = nuts(p, &["-o", "thin.csv", "--save-warmup", "--thin", "3"]);
    assert_eq!(thin.status.code(), Some(0), "{}", text(&thin));
    let (rows, _) = rows_and_comments(&p.join("thin_1.csv"));
    assert_eq!(rows.len(), 68);
    // refused where there is no warmup to save
    let o = bayesc(
        p,
        &[
            "fit",
            "normal.bayes",
            "--data",
            "normal.csv",
            "--save-warmup",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("--save-warmup applies to"),
        "{}",
        text(&o)
    );
}

#[test]
fn output_dir_holds_every_output_and_is_created() {
    let dir = fixture();
    let p = dir.path();
    let o = nuts(p, &["--output-dir", "out/run1", "--save-fit", "fit.json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    for f in ["normal_1.csv", "normal_2.csv", "fit.json"] {
        assert!(p.join("out/run1").join(f).is_file(), "{f}: {}", text(&o));
    }
    // a named output goes inside it
    let o = nuts(p, &["--output-dir", "out/run2", "-o", "draws.csv"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(p.join("out/run2/draws_1.csv").is_file());
    // optimize writes its one file there too
    let o = bayesc(
        p,
        &[
            "optimize",
            "normal.bayes",
            "--data",
            "normal.csv",
            "--output-dir",
            "opt",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(p.join("opt/normal.csv").is_file(), "{}", text(&o));
    // a file in the way: a clear error, before fitting
    std::fs::write(p.join("taken"), "x").unwrap();
    for bad in ["taken", "taken/sub"] {
        let o = nuts(p, &["--output-dir", bad]);
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        assert!(text(&o).contains("--output-dir"), "{}", text(&o));
        assert!(!text(&o).contains("panicked"));
    }
}

#[test]
fn refresh_prints_cmdstan_progress_lines() {
    let dir = fixture();
    let p = dir.path();
    let mut args = vec![
        "fit",
        "normal.bayes",
        "--data",
        "normal.csv",
        "--method",
        "nuts",
        "--chains",
        "1",
        "--warmup",
        "100",
        "--samples",
        "100",
        "--seed",
        "1",
        "--refresh",
        "50",
    ];
    let o = bayesc(p, &args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let lines: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("Chain [1] Iteration:"))
        .collect();
    assert_eq!(
        lines,
        [
            "Chain [1] Iteration:  50 / 200 [ 25%]  (Warmup)",
            "Chain [1] Iteration: 100 / 200 [ 50%]  (Warmup)",
            "Chain [1] Iteration: 150 / 200 [ 75%]  (Sampling)",
            "Chain [1] Iteration: 200 / 200 [100%]  (Sampling)",
        ],
        "{out}"
    );
    // 0: no progress output at all
    args.pop();
    args.push("0");
    let o = bayesc(p, &args);
    assert!(!String::from_utf8_lossy(&o.stdout).contains("Iteration:"));
    // only for samplers; not a negative number
    let o = bayesc(
        p,
        &[
            "fit",
            "normal.bayes",
            "--data",
            "normal.csv",
            "--refresh",
            "10",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let o = bayesc(
        p,
        &[
            "fit",
            "normal.bayes",
            "--data",
            "normal.csv",
            "--refresh",
            "-1",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

#[test]
fn sig_figs_rounds_the_draws_and_default_keeps_full_precision() {
    let dir = fixture();
    let p = dir.path();
    assert_eq!(nuts(p, &["-o", "full.csv"]).status.code(), Some(0));
    let o = nuts(p, &["-o", "three.csv", "--sig-figs", "3"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let (full, _) = rows_and_comments(&p.join("full_1.csv"));
    let (three, _) = rows_and_comments(&p.join("three_1.csv"));
    assert_eq!(full.len(), three.len());
    for (a, b) in full.iter().zip(&three) {
        for (xs, ys) in a.split(',').zip(b.split(',')) {
            let (x, y): (f64, f64) = (xs.parse().unwrap(), ys.parse().unwrap());
            // y is x rounded to 3 significant digits
            let want: f64 = format!("{x:.2e}").parse().unwrap();
            assert_eq!(y, want, "{xs} -> {ys}");
            assert!(y_digits(ys) <= 3, "{ys}");
        }
    }
    // variational and optimize files too
    let o = bayesc(
        p,
        &[
            "optimize",
            "normal.bayes",
            "--data",
            "normal.csv",
            "-o",
            "opt.csv",
            "--sig-figs",
            "2",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let (rows, _) = rows_and_comments(&p.join("opt.csv"));
    for v in rows[0].split(',') {
        assert!(y_digits(v) <= 2, "{}", rows[0]);
    }
    for bad in ["0", "19", "x"] {
        let o = nuts(p, &["--sig-figs", bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", text(&o));
    }
}

/// Significant digits written in a number's text (mantissa digits without leading zeros).
fn y_digits(v: &str) -> usize {
    let m = v.split(['e', 'E']).next().unwrap();
    m.chars()
        .filter(char::is_ascii_digit)
        .skip_while(|c| *c == '0')
        .count()
}

#[test]
fn unit_metric_adapts_only_the_step_size() {
    let dir = fixture();
    let p = dir.path();
    let o = nuts(p, &["-o", "unit.csv", "--metric", "unit"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let t = std::fs::read_to_string(p.join("unit_1.csv")).unwrap();
    assert!(t.contains("#     metric = unit_e\n"), "{t}");
    assert!(t.contains("# No free parameters for unit metric\n"), "{t}");
    assert!(!t.contains("inverse mass matrix"), "{t}");
    let f = read_stan_csv(&p.join("unit_1.csv")).unwrap();
    let step = f.step_size().expect("a step size");
    assert!(step > 0.0 && step < 2.0, "{step}");
    // the sampler still finds the posterior: mean of y ≈ 2 (the data's mean is 1.97)
    let s = bayesc(p, &["summary", "unit_1.csv", "unit_2.csv"]);
    let out = String::from_utf8_lossy(&s.stdout).into_owned();
    let mu: f64 = out
        .lines()
        .find(|l| l.starts_with("mu "))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or_else(|| panic!("{out}"));
    assert!((mu - 1.97).abs() < 0.3, "{out}");
}

#[test]
fn fixed_param_simulates_generated_quantities() {
    let dir = fixture();
    let p = dir.path();
    // no parameters: NUTS switches to fixed_param, as CmdStan
    let o = bayesc(
        p,
        &[
            "fit",
            "sim.bayes",
            "--data",
            "sim.json",
            "--method",
            "nuts",
            "--seed",
            "2",
            "-o",
            "sim.csv",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("fixed_param"), "{}", text(&o));
    for c in 1..=4 {
        let path = p.join(format!("sim_{c}.csv"));
        let t = std::fs::read_to_string(&path).unwrap();
        assert!(t.contains("#     algorithm = fixed_param\n"), "{t}");
        assert!(t.contains("\nlp__,accept_stat__,z\n"), "{t}");
        let f = read_stan_csv(&path).unwrap();
        assert_eq!(f.n_draws, 1000);
    }
    // z ~ normal(3, 2): the summary over 4000 independent draws
    let s = bayesc(
        p,
        &[
            "summary",
            "sim_1.csv",
            "sim_2.csv",
            "sim_3.csv",
            "sim_4.csv",
        ],
    );
    let out = String::from_utf8_lossy(&s.stdout).into_owned();
    let z: Vec<f64> = out
        .lines()
        .find(|l| l.starts_with("z "))
        .map(|l| {
            l.split_whitespace()
                .skip(1)
                .take(2)
                .map(|v| v.parse().unwrap())
                .collect()
        })
        .unwrap_or_else(|| panic!("{out}"));
    // mean within 4 standard errors (2/√4000 = 0.032), sd within 5%
    assert!((z[0] - 3.0).abs() < 0.13, "{out}");
    assert!((z[1] - 2.0).abs() < 0.1, "{out}");
    // asked for on a model with parameters: they stay at their start (R = 0: zeros)
    let o = bayesc(
        p,
        &[
            "fit",
            "normal.bayes",
            "--data",
            "normal.csv",
            "--method",
            "fixed_param",
            "--init",
            "0",
            "--samples",
            "20",
            "--chains",
            "1",
            "-o",
            "fp.csv",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let f = read_stan_csv(&p.join("fp_1.csv")).unwrap();
    assert_eq!(f.names, ["mu", "sigma", "y_rep"]);
    for i in 0..20 {
        // mu = 0, sigma = exp(0) = 1 at the zero start
        assert_eq!(&f.values[i * 3..i * 3 + 2], &[0.0, 1.0]);
    }
    let reps: Vec<f64> = (0..20).map(|i| f.values[i * 3 + 2]).collect();
    assert!(
        reps.windows(2).all(|w| w[0] != w[1]),
        "fresh draws each time"
    );
    // no warmup in fixed_param
    let o = bayesc(
        p,
        &[
            "fit",
            "sim.bayes",
            "--data",
            "sim.json",
            "--method",
            "fixed_param",
            "--warmup",
            "10",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--warmup"), "{}", text(&o));
}
