//! Full-covariance variational fits of eight schools (non-centred, d = 10) that say
//! "converged" must be at the full-covariance Gaussian ELBO optimum: within 0.15 of its sds in
//! every mean and 15 % in every sd (the bar for full-covariance methods). The optimum
//! on the unconstrained scale (mu, log tau, theta_tilde[1..8]) is from
//! benches/eight_schools_fullcov_optimum.py (4 × 200 000 antithetic draws; Monte Carlo error
//! ≤ 0.003 of its sds, benches/eight_schools_fullcov_optimum.json).
//!
//! Before the refinement of the covariance (`fit::refine_full`) these fits said "converged"
//! 0.22 (QBVI seed 8), 0.22 (MGVB seed 6), 0.23 (EMGVB seed 3) and 0.22 (NGVI seed 3) sds from
//! the optimum's mean of log tau, with its sd 0.88–0.89 of the optimum's; now 0.01–0.07 and
//! within 1 % (40 000 draws; measured).

use std::process::Command;

const MEAN: [f64; 10] = [
    4.4774, 0.8502, 0.2836, 0.0874, -0.0788, 0.054, -0.1545, -0.0695, 0.3288, 0.0658,
];
const SD: [f64; 10] = [
    3.2331, 0.7307, 0.9797, 0.9339, 0.9702, 0.9444, 0.9226, 0.9427, 0.9485, 0.9782,
];

/// The report and, on the unconstrained scale, q's mean (the draws file's first row) and the
/// sds of its draws, for one fit.
fn fit(method: &str, seed: u32, dir: &std::path::Path) -> (String, Vec<f64>, Vec<f64>) {
    let root = env!("CARGO_MANIFEST_DIR");
    let out = dir.join(format!("{method}{seed}.csv"));
    let o = Command::new(env!("CARGO_BIN_EXE_bayesc"))
        .args(["fit", &format!("{root}/examples/eight_schools/model.bayes")])
        .args([
            "--data",
            &format!("{root}/examples/eight_schools/schools.csv"),
        ])
        .args(["--method", method, "--seed", &seed.to_string(), "-q"])
        .args(["--draws", "4000", "-o", out.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(o.status.success(), "{method} {seed}: {text}");
    let csv = std::fs::read_to_string(&out).unwrap();
    let mut rows = csv.lines().filter(|l| !l.starts_with('#'));
    let header: Vec<&str> = rows.next().unwrap().split(',').collect();
    let mut names = vec!["mu".to_string(), "tau".to_string()];
    names.extend((1..=8).map(|k| format!("theta_tilde.{k}")));
    let cols: Vec<usize> = names
        .iter()
        .map(|n| header.iter().position(|h| h == n).unwrap())
        .collect();
    let parse = |line: &str| -> Vec<f64> {
        let v: Vec<f64> = line.split(',').map(|x| x.parse().unwrap()).collect();
        let mut x: Vec<f64> = cols.iter().map(|&c| v[c]).collect();
        x[1] = x[1].ln();
        x
    };
    let mean = parse(rows.next().unwrap());
    let draws: Vec<Vec<f64>> = rows.map(parse).collect();
    let n = draws.len() as f64;
    let sd = (0..10)
        .map(|j| {
            let m = draws.iter().map(|r| r[j]).sum::<f64>() / n;
            (draws.iter().map(|r| (r[j] - m).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
        })
        .collect();
    (text, mean, sd)
}

#[test]
fn converged_full_covariance_fits_are_at_the_full_covariance_optimum() {
    let dir = tempfile::tempdir().unwrap();
    for (method, seed) in [("qbvi", 8), ("mgvb", 6), ("emgvb", 3), ("ngvi", 3)] {
        let (text, mean, sd) = fit(method, seed, dir.path());
        assert!(
            text.lines().any(|l| l.starts_with("converged:")),
            "{method} {seed}: {text}"
        );
        for j in 0..10 {
            let z = (mean[j] - MEAN[j]).abs() / SD[j];
            // measured at most 0.07 over seeds 1–12 of QBVI, MGVB, EMGVB, NGVI and VON
            assert!(
                z < 0.1,
                "{method} {seed}: coordinate {j} {z:.3} sds off\n{text}"
            );
            // the sd of 4000 draws has a Monte Carlo error of about 1.1 %
            let r = sd[j] / SD[j];
            assert!(
                (0.9..1.1).contains(&r),
                "{method} {seed}: coordinate {j} sd ratio {r:.3}"
            );
        }
    }
}
