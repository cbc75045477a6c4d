//! Fresh-user findings of session 21 on small data, through `bayesc fit`:
//!
//! - Vadam and VOGN end at their own fixed point (the empirical Fisher under q, survey_vi.md
//!   §11–§12), not part way from the Laplace start: on `y ~ normal(mu, 1)` with N = 20 the
//!   fixed point 1/σ² = E_q[Σᵢ gᵢ²] + 1/100 is σ = 0.335 (the exact posterior sd is 0.224);
//!   the old code said "converged" at 0.228–0.323 (`inference::vi::obs::START_WEIGHT`,
//!   `VognSettings::common`).
//! - VOGN's sds off on that Gaussian posterior are blamed on its empirical Fisher, with ivon or
//!   qbvi as the remedy, not "Use --method nuts".
//! - A fit whose q puts mass where the log density is undefined (`log(mu)` with `real mu`) has
//!   an ELBO of −∞ and is not converged; the report names the failing statement and the bound
//!   to declare (`fit::UndefinedDraws`).

mod common;

use std::path::PathBuf;

const NN: &str = "data { int N; vector[N] y; }\nparameters { real mu; }\nmodel { mu ~ normal(0, 10); y ~ normal(mu, 1); }\n";
const NN_Y: [f64; 20] = [
    3.345584, 3.821618, 3.330437, 1.696843, 3.905356, 3.446375, 2.463047, 3.581118, 3.364572,
    3.294132, 3.028422, 3.546713, 2.263546, 2.837090, 2.517881, 3.598846, 3.039722, 2.707543,
    2.218092, 2.742808,
];
const LG: &str = "data { int N; vector[N] y; }\nparameters { real mu; }\nmodel { mu ~ normal(3, 1); y ~ normal(log(mu), 1); }\n";
const NEG_Y: [f64; 5] = [-1.31095, -2.02275, -1.91306, -3.94147, 0.29971];

/// A fresh folder under the temporary directory holding `model.bayes` and `d.csv` (column y).
fn folder(tag: &str, model: &str, y: &[f64]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bayesc_fisher21_{tag}_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("model.bayes"), model).unwrap();
    let csv: String = std::iter::once("y".to_string())
        .chain(y.iter().map(|v| v.to_string()))
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(dir.join("d.csv"), csv + "\n").unwrap();
    dir
}

/// `bayesc fit model.bayes --data d.csv --method m --seed s` in `dir`: the report.
fn fit(dir: &PathBuf, method: &str, seed: u64) -> String {
    let o = common::bayesc_in(
        dir,
        &[
            "fit",
            "model.bayes",
            "--data",
            "d.csv",
            "--method",
            method,
            "--seed",
            &seed.to_string(),
            "-o",
            "draws.csv",
        ],
    );
    common::output_text(&o)
}

/// The sd column of the summary row `mu`.
fn sd_of_mu(report: &str) -> f64 {
    let line = report
        .lines()
        .find(|l| l.split_whitespace().next() == Some("mu"))
        .unwrap_or_else(|| panic!("no row mu in\n{report}"));
    line.split_whitespace().nth(2).unwrap().parse().unwrap()
}

/// σ of the empirical-Fisher fixed point p = Σ(yᵢ − ȳ)² + N/p + 1/100 (the mean at ȳ).
fn fisher_fixed_point_sd() -> f64 {
    let n = NN_Y.len() as f64;
    let mean = NN_Y.iter().sum::<f64>() / n;
    let s: f64 = NN_Y.iter().map(|y| (y - mean).powi(2)).sum();
    let mut p = 1.0;
    for _ in 0..200 {
        p = s + n / p + 0.01;
    }
    1.0 / p.sqrt()
}

#[test]
fn vadam_and_vogn_reach_their_own_fixed_point_on_small_data() {
    let target = fisher_fixed_point_sd();
    assert!((target - 0.3349).abs() < 1e-3, "{target}");
    let dir = folder("nn", NN, &NN_Y);
    for method in ["vadam", "vogn"] {
        for seed in 1..=3 {
            let report = fit(&dir, method, seed);
            assert!(
                report.contains("\nconverged:"),
                "{method} {seed}:\n{report}"
            );
            // 1000 draws: the sample sd has a relative noise of 2.2 %; the old code's kept
            // iterates were at 0.228–0.301 for these seeds
            let sd = sd_of_mu(&report);
            assert!(
                (sd / target - 1.0).abs() < 0.08,
                "{method} seed {seed}: sd {sd}, fixed point {target:.4}\n{report}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn vogn_on_a_gaussian_posterior_points_at_ivon_not_nuts() {
    let dir = folder("nnw", NN, &NN_Y);
    let report = fit(&dir, "vogn", 1);
    // its note: the fitted precision, not only the mode's, sets the factor (variance 2.25 at
    // the fixed point against the Laplace 0.224²)
    let note = report
        .lines()
        .find(|l| l.starts_with("note: VOGN's Gauss-Newton curvature"))
        .unwrap_or_else(|| panic!("no Gauss-Newton note in\n{report}"));
    let factor: f64 = note
        .split("is about ")
        .nth(1)
        .and_then(|t| t.split_whitespace().next())
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no factor in {note}"));
    assert!((1.9..2.6).contains(&factor), "{note}");
    let warning = report
        .lines()
        .find(|l| l.starts_with("WARNING: the approximation is unreliable: its sds are off"))
        .unwrap_or_else(|| panic!("no sd warning in\n{report}"));
    assert!(warning.contains("empirical Fisher"), "{warning}");
    assert!(warning.contains("--method ivon or qbvi"), "{warning}");
    assert!(!warning.contains("nuts"), "{warning}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_q_with_mass_where_the_model_is_undefined_is_not_converged() {
    let dir = folder("lg", LG, &NEG_Y);
    for method in ["ivon", "emgvb", "vogn"] {
        let report = fit(&dir, method, 1);
        assert!(
            report.contains("ELBO estimate = -inf"),
            "{method}:\n{report}"
        );
        assert!(!report.contains("\nconverged:"), "{method}:\n{report}");
        let line = report
            .lines()
            .find(|l| l.starts_with("WARNING: not converged"))
            .unwrap_or_else(|| panic!("{method}: no not-converged line in\n{report}"));
        assert!(line.contains("cannot be evaluated"), "{method}: {line}");
        // the failing statement, as NUTS names it, and the bound that removes it
        assert!(line.contains("(model.bayes:3:"), "{method}: {line}");
        assert!(
            line.contains("declare `real<lower=0> mu`"),
            "{method}: {line}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

const SK: &str = "data { int N; array[N] int<lower=0> y; }\nparameters { real<lower=0> lambda; }\nmodel { lambda ~ gamma(0.5, 1); y ~ poisson(lambda); }\n";

/// IVON on a gamma–Poisson with one y = 0 (exact posterior gamma(0.5, 2)): the sds'
/// fixed-point iteration after the exit rule does not settle at any step size the tester tried,
/// so the remedy is a method whose own steps set the sds, not another step size (the old
/// advice); and that remedy works: QBVI, NGVI and EMGVB converge there.
#[test]
fn an_unsettled_sd_iteration_is_advised_the_methods_that_converge() {
    let dir = folder("sk", SK, &[0.0]);
    let report = fit(&dir, "ivon", 1);
    let line = report
        .lines()
        .find(|l| l.starts_with("WARNING: not converged"))
        .unwrap_or_else(|| panic!("no not-converged line in\n{report}"));
    assert!(
        line.contains("fixed-point iteration of the mean-field ELBO's sds"),
        "{line}"
    );
    assert!(!line.contains("try another --step-size"), "{line}");
    assert!(line.contains("use --method qbvi, ngvi or emgvb"), "{line}");
    for method in ["qbvi", "ngvi", "emgvb"] {
        let r = fit(&dir, method, 1);
        assert!(r.contains("\nconverged:"), "{method}:\n{r}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
