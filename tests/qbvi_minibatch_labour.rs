//! Diagonal QBVI on minibatches of the labour example (`bayesc fit --method qbvi --diagonal
//! --batch-size 32`): the returned variances are those of the full-data mean-field optimum.
//!
//! Before the control-variate coefficients followed the batch in use
//! (`inference::vi::BatchAnchor`; `specs/qbvi.md` §5.1, §5.3; `specs/survey_vi.md` §2), the
//! lagged coefficients carried the previous batch's level of L̂_B (70 nats rms apart at
//! M = 32), the precision steps were driven by that noise, and this fit returned sds down to
//! 0.57 of the optimum's and was reported not converged (measured with 20 000 draws).

mod common;

use std::process::Command;

/// The full-data mean-field optimum (`common::LABOUR_MF_MEAN`, `common::LABOUR_MF_SD`).
const MF_MEAN: [f64; 8] = common::LABOUR_MF_MEAN;
const MF_SD: [f64; 8] = common::LABOUR_MF_SD;
/// NUTS posterior means and sds of `shared/validation/reference_fits/labour.csv`.
const NUTS_MEAN: [f64; 8] = [
    3.237_019, -1.491_803, -0.064_700, -0.063_971, 0.812_909, 0.124_228, 0.617_955, -0.035_374,
];
const NUTS_SD: [f64; 8] = [
    0.631_222,
    0.199_552,
    0.067_036,
    0.012_523,
    0.229_123,
    0.204_639,
    0.151_057,
    0.008_260_6,
];

const NAMES: [&str; 8] = [
    "alpha", "beta.1", "beta.2", "beta.3", "beta.4", "beta.5", "beta.6", "beta.7",
];

/// Runs `bayesc fit` on labour with diagonal QBVI, M = 32 and `args`; returns the report and
/// the mean of q with the 20 000 draws (rows of the 8 coefficients).
fn fit_labour(tag: &str, args: &[&str]) -> (String, Vec<f64>, Vec<Vec<f64>>) {
    let root = env!("CARGO_MANIFEST_DIR");
    let out = std::env::temp_dir().join(format!("qbvi_mb_{tag}_{}.csv", std::process::id()));
    let run = Command::new(env!("CARGO_BIN_EXE_bayesc"))
        .current_dir(root)
        .args([
            "fit",
            "examples/labour/model.bayes",
            "--data",
            "examples/labour/labour.csv",
            "--method",
            "qbvi",
            "--diagonal",
            "--batch-size",
            "32",
            "--draws",
            "20000",
        ])
        .args(args)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout).to_string();
    assert!(run.status.success(), "{stdout}");
    let text = std::fs::read_to_string(&out).unwrap();
    let _ = std::fs::remove_file(&out);
    let mut lines = text.lines().filter(|l| !l.starts_with('#'));
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let cols: Vec<usize> = NAMES
        .iter()
        .map(|n| header.iter().position(|h| h == n).unwrap())
        .collect();
    let mut rows: Vec<Vec<f64>> = lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            cols.iter().map(|&c| f[c].parse().unwrap()).collect()
        })
        .collect();
    // The first row is the mean of q (CmdStan's variational layout), then the draws.
    let mean = rows.remove(0);
    assert_eq!(rows.len(), 20_000);
    (stdout, mean, rows)
}

#[test]
fn minibatch_diagonal_qbvi_keeps_the_mean_field_variances_on_labour() {
    let (stdout, mean, draws) = fit_labour("keeps", &["--seed", "1"]);
    assert!(
        stdout.lines().any(|l| l.starts_with("converged:")),
        "{stdout}"
    );
    for j in 0..8 {
        let m = draws.iter().map(|r| r[j]).sum::<f64>() / draws.len() as f64;
        let var = draws.iter().map(|r| (r[j] - m).powi(2)).sum::<f64>() / draws.len() as f64;
        let ratio = var.sqrt() / MF_SD[j];
        // Measured 0.95–1.04 (before: 0.57–1.19); the draws add 0.5 % noise.
        assert!(
            (0.9..1.1).contains(&ratio),
            "{}: sd ratio {ratio}",
            NAMES[j]
        );
        // Measured at most 0.06 NUTS sds after the Newton refinement of the mean (0.16
        // before, the batch noise of the mean iterate).
        let off = (mean[j] - MF_MEAN[j]).abs() / NUTS_SD[j];
        assert!(off < 0.12, "{}: mean {} sds off", NAMES[j], off);
    }
}

/// At seed 2 the batch noise left the returned mean 0.29 NUTS sds off and the fit said so (the
/// advice, a tenth of the step size, converged within 0.15 NUTS sds: 0.13). The Newton
/// refinement of the mean after the exit rule (`fit::refine`) now brings this fit itself to
/// 0.098 NUTS sds (measured), and it converges.
#[test]
fn a_noisy_minibatch_qbvi_fit_is_refined_within_the_bar() {
    let (stdout, mean, _) = fit_labour("noisy", &["--seed", "2"]);
    assert!(
        stdout.lines().any(|l| l.starts_with("converged:")),
        "{stdout}"
    );
    assert!(
        stdout.contains("after the exit rule the mean was refined by"),
        "{stdout}"
    );
    for j in 0..8 {
        let off = (mean[j] - NUTS_MEAN[j]).abs() / NUTS_SD[j];
        assert!(off < 0.15, "{}: mean {off} NUTS sds off", NAMES[j]);
    }
}
