//! Diagnostic messages must name the real cause (fresh-user findings, session 21): a prior with
//! an infinite density at 0 is not a funnel, the centred eight schools' neck is not a flat
//! direction, unordered cut-points are not an improper posterior, and a huge |log p| prints the
//! true spread of its log ratios.

mod common;

use std::path::Path;

fn run(dir: &Path, args: &[&str]) -> String {
    let o = common::bayesc_in(dir, args);
    common::output_text(&o)
}

/// `s ~ gamma(0.5, 1)`: the density of s is ∝ s^-0.5 e^-s, infinite at 0 without the Jacobian,
/// while that of log s (∝ s^0.5 e^-s) has its mode at s = 0.5. The message said "the funnel of a
/// centred hierarchical model … (a MAP estimate does not exist, with or without --jacobian)".
#[test]
fn a_shape_below_one_prior_is_not_called_a_funnel() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("g.bayes"),
        "parameters { real<lower=0> s; }\nmodel { s ~ gamma(0.5, 1); }\n",
    )
    .unwrap();
    for alg in ["lbfgs", "bfgs"] {
        let text = run(
            dir.path(),
            &[
                "fit",
                "g.bayes",
                "--method",
                "optimize",
                "--algorithm",
                alg,
                "--seed",
                "1",
                "-q",
            ],
        );
        let w = text
            .lines()
            .find(|l| l.starts_with("WARNING: no optimum"))
            .unwrap_or_else(|| panic!("{alg}: no warning in\n{text}"));
        assert!(
            w.contains("as `s` (at ")
                && w.contains("This is not a funnel")
                && w.contains("rises like x^-0.50")
                && w.contains("without --jacobian; with it")
                && w.contains("use --jacobian"),
            "{alg}: {w}"
        );
        assert!(
            !w.contains("centred hierarchical") && !w.contains("with or without --jacobian"),
            "{alg}: {w}"
        );
    }
    // and --jacobian does find that mode
    let text = run(
        dir.path(),
        &[
            "fit",
            "g.bayes",
            "--method",
            "optimize",
            "--jacobian",
            "--seed",
            "1",
            "-q",
        ],
    );
    let s: f64 = text
        .lines()
        .find(|l| l.starts_with("s "))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no row for s in\n{text}"));
    assert!(
        (s - 0.5).abs() < 1e-4 && text.contains("converged"),
        "{text}"
    );
}

const CENTRED: &str = "data { int J; array[J] real y; array[J] real<lower=0> sigma; }\n\
     parameters { real mu; real<lower=0> tau; array[J] real theta; }\n\
     model { mu ~ normal(0, 5); tau ~ cauchy(0, 5); theta ~ normal(mu, tau);\n\
     y ~ normal(theta, sigma); }\n";

/// The centred eight schools: BFGS ends at tau = 5e-17 with every theta at mu, and reported
/// "the log density does not change along the combination 0.33·mu + 0.33·theta[1] + … (a
/// direction the data and priors do not identify)". IVON warned "the posterior may be improper
/// or unbounded … drifts along … (a direction the data and priors do not identify)". Both now
/// name the neck of the funnel: tau going to 0 with mu and the theta equal.
#[test]
fn the_centred_eight_schools_neck_is_named_not_a_flat_direction() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("c.bayes"), CENTRED).unwrap();
    let data = common::root().join("examples/eight_schools/schools.csv");
    let data = data.to_string_lossy().to_string();
    for (method, alg) in [
        ("optimize", "bfgs"),
        ("optimize", "lbfgs"),
        ("ivon", "lbfgs"),
    ] {
        let mut args = vec!["fit", "c.bayes", "--data", &data, "--method", method];
        if method == "optimize" {
            args.extend(["--algorithm", alg]);
        }
        args.extend(["--seed", "1", "-q"]);
        let text = run(dir.path(), &args);
        assert!(
            text.contains("the log density grows without bound as `tau` (at ")
                && text.contains("while `mu`, `theta[1]`, `theta[2]`")
                && text.contains("the neck of a funnel")
                && text.contains("non-centred parameterisation"),
            "{method} {alg}: {text}"
        );
        assert!(
            !text.contains("the data and priors do not identify")
                && !text.contains("the posterior may be improper")
                && !text.contains("does not change along"),
            "{method} {alg}: {text}"
        );
    }
}

/// Cut-points declared `vector[3]` with a valid outcome: the mode lies where two cut-points
/// meet, so the fits failed with "the posterior is probably improper … give every parameter a
/// proper prior" (QBVI, IVON, BBB, MGVB) and NUTS advised "<lower=0>". They now say to declare
/// the cut-points `ordered`.
#[test]
fn unordered_cut_points_are_named_as_the_cause() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("o.bayes"),
        "data { int N; vector[N] x; }\nparameters { vector[3] v; }\n\
         model { v ~ normal(0, 3); target += ordered_logistic_lpmf(2 | 0.5, v); }\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("o.csv"), "x\n1\n2\n").unwrap();
    for method in ["qbvi", "ivon", "nuts", "laplace"] {
        let text = run(
            dir.path(),
            &[
                "fit", "o.bayes", "--data", "o.csv", "--method", method, "--seed", "1", "-q",
            ],
        );
        assert!(
            text.contains("Cut-points is not a valid ordered vector")
                && text.contains("declare it `ordered[K-1]`"),
            "{method}: {text}"
        );
        assert!(
            !text.contains("probably improper") && !text.contains("<lower=0>"),
            "{method}: {text}"
        );
    }
}

/// Pathfinder where |log p| ≈ 7.4e14 (ulp 0.125): its q is right and the log ratios span under
/// a nat, but the sd printed beside k̂ was 2.414, the rounding error of summing 4000 ratios of
/// -7.4e14 before centring them.
#[test]
fn the_log_ratio_spread_at_huge_log_density_is_not_a_rounding_artefact() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("h.bayes"),
        "data { int N; vector[N] y; }\nparameters { real mu; real b; real<lower=0> s; }\n\
         model { y ~ normal(mu, 0.01); b ~ normal(3, 1); s ~ lognormal(0, 1); }\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("h.json"),
        r#"{"N": 4, "y": [-1e5, 1e5, 3e5, -2e5]}"#,
    )
    .unwrap();
    let text = run(
        dir.path(),
        &[
            "fit",
            "h.bayes",
            "--data",
            "h.json",
            "--method",
            "pathfinder",
            "--seed",
            "1",
            "-q",
        ],
    );
    let line = text
        .lines()
        .find(|l| l.starts_with("PSIS k-hat"))
        .unwrap_or_else(|| panic!("no k-hat line in\n{text}"));
    let sd: f64 = line
        .split("sd of log p - log q = ")
        .nth(1)
        .and_then(|t| t.split(')').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no sd in {line}"));
    assert!(sd < 1.0, "{line}");
    // called constant only with the range that justifies it
    if line.contains("constant to rounding") {
        let range: f64 = line
            .split("they span ")
            .nth(1)
            .and_then(|t| t.split(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no range in {line}"));
        assert!(range <= 1.0 && sd <= range, "{line}");
    }
}
