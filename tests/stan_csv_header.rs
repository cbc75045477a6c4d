//! The configuration comments of an MCMC Stan CSV file carry what cmdstanpy's
//! `from_csv(…).draws_xr()` and ArviZ's `from_cmdstan` read (CmdStan Guide, "Stan CSV File
//! Format"): the Stan version triple (the CmdStan layout followed), `model`, `method`,
//! `num_samples`, `num_warmup`, `save_warmup`, `thin`, `max_depth`, `algorithm`, `engine`,
//! `metric`, `id` and `seed`, and the adaptation block. (Checked by hand with cmdstanpy 1.3.2
//! and ArviZ 0.23.4 on a labour NUTS fit: `tests/reference/read_with_cmdstanpy.py`.)

mod common;

use std::collections::HashMap;

use bayesc::fit::{self, FitOptions, Method};
use bayesc::output::fit_files::write_outputs;

#[test]
fn mcmc_csv_header_has_the_keys_cmdstanpy_reads() {
    let m = common::compile_source(
        "normal.bayes",
        "data { int N; vector[N] y; } parameters { real mu; } model { y ~ normal(mu, 1); }",
        Some(r#"{"N": 3, "y": [0.1, -0.4, 0.9]}"#),
        &[],
    );
    let mut options = FitOptions::new(Method::Nuts, 5);
    options.mcmc.chains = 2;
    options.mcmc.warmup = 100;
    options.mcmc.samples = 50;
    let never = std::sync::atomic::AtomicBool::new(false);
    let monitor = fit::Monitor {
        on_progress: &|_| {},
        stop: &never,
    };
    let r = fit::fit(&m, &options, &monitor).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let files = write_outputs(
        &dir.path().join("out.csv"),
        &r,
        &options,
        std::path::Path::new("normal.bayes"),
    )
    .unwrap();
    assert_eq!(files.len(), 2);
    for (c, f) in files.iter().enumerate() {
        let text = std::fs::read_to_string(f).unwrap();
        let comments: Vec<&str> = text
            .lines()
            .take_while(|l| l.starts_with('#'))
            .map(|l| l.trim_start_matches('#'))
            .collect();
        // CmdStan's order: the version triple first.
        assert_eq!(comments[0], " stan_version_major = 2");
        assert_eq!(comments[1], " stan_version_minor = 36");
        assert_eq!(comments[2], " stan_version_patch = 0");
        let kv: HashMap<&str, &str> = comments
            .iter()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.trim(), v.trim()))
            .collect();
        let id = (c + 1).to_string();
        for (key, value) in [
            ("model", "normal"),
            ("method", "sample"),
            ("num_samples", "50"),
            ("num_warmup", "100"),
            ("save_warmup", "false"),
            ("thin", "1"),
            ("max_depth", "10"),
            ("algorithm", "hmc"),
            ("engine", "nuts"),
            ("metric", "dense_e"),
            ("id", id.as_str()),
            ("seed", "5"),
        ] {
            assert_eq!(kv.get(key).copied(), Some(value), "{f}: {key}");
        }
        // cmdstanpy checks the adaptation block after the column header.
        let after: Vec<&str> = text.lines().skip(comments.len() + 1).take(2).collect();
        assert_eq!(after[0], "# Adaptation terminated");
        assert!(after[1].starts_with("# Step size = "), "{}", after[1]);
    }
}
