//! A log density of huge magnitude (|log p| ≈ 7e14: four observations y ~ normal(mu, 0.01)
//! with y up to 3e5) must not hide a wrong approximation behind "k-hat undefined (constant to
//! rounding)": the log ratios of Pathfinder's and Laplace's q there varied by tens of nats, far
//! beyond the ~0.2-nat rounding of log p, yet 256 ulps of |log p| (62 nats) counted as rounding
//! (`fit::ROUNDING_RANGE_MAX`; fresh-user finding, session 20). Posterior of b: normal(3, 1).

mod common;

use std::process::Command;

#[test]
fn a_wrong_approximation_at_huge_log_density_is_flagged_or_right() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("hugelp.bayes");
    let data = dir.path().join("hugelp.json");
    std::fs::write(
        &model,
        "data { int N; vector[N] y; }\nparameters { real mu; real b; real<lower=0> s; }\n\
         model { y ~ normal(mu, 0.01); b ~ normal(3, 1); s ~ lognormal(0, 1); }\n",
    )
    .unwrap();
    std::fs::write(&data, r#"{"N": 4, "y": [-1e5, 1e5, 3e5, -2e5]}"#).unwrap();
    for method in ["pathfinder", "laplace"] {
        let out = Command::new(env!("CARGO_BIN_EXE_bayesc"))
            .arg("fit")
            .arg(&model)
            .arg("--data")
            .arg(&data)
            .args(["--method", method, "--seed", "1", "-q"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{method}: {text}");
        let b: f64 = text
            .lines()
            .find(|l| l.starts_with("b "))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{method}: no row for b in\n{text}"));
        // either the approximation is right (b's posterior mean is 3, sd 1) or it is flagged
        if (b - 3.0).abs() > 0.3 {
            assert!(!text.contains("constant to rounding"), "{method}: {text}");
            assert!(
                text.contains("WARNING: the approximation is not close to the posterior")
                    || text.contains("WARNING: the approximation is unreliable"),
                "{method}: b = {b} without a warning\n{text}"
            );
        }
    }
}
