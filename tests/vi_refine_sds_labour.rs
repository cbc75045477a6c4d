//! The refinement after the exit rule (`fit::refine`) and the sds of mean-field q on the labour
//! example (d = 8), against the NUTS reference (`../shared/validation/reference_fits/
//! labour.csv`) and the exact mean-field ELBO optimum (issue 11: means within 0.15 NUTS sd;
//! mean-field sds checked against the mean-field optimum).
//!
//! Before the refinement iterated the sds (session 19), these fits said "converged" wrongly:
//! - Vadam at `--batch-size 5`, seeds 11 and 12: means 0.229 and 0.226 NUTS sds from NUTS. Its
//!   σ (empirical Fisher) is 1.7–1.9 times the mean-field optimum's there, and the Newton steps
//!   taken at that σ moved μ to the ELBO's optimum in μ at that σ, not to the optimum's mean.
//!   Now the steps are taken at the ELBO's fixed-point sds: 0.10–0.11 (measured).
//! - BBB at `--batch-size 32` seed 2, full-batch BBB seed 4 and IVON at `--batch-size 16`
//!   seed 7: sds up to 1.39, 1.28 and 1.27 times the mean-field optimum's (10 000 draws). Now
//!   the sds take the ELBO's fixed-point step too: within 0.98–1.02 (measured).

mod common;

use std::process::Command;

/// The full-data mean-field optimum's sds (`common::LABOUR_MF_SD`).
const MF_SD: [f64; 8] = common::LABOUR_MF_SD;

const NAMES: [&str; 8] = [
    "alpha", "beta[1]", "beta[2]", "beta[3]", "beta[4]", "beta[5]", "beta[6]", "beta[7]",
];

/// A labour fit: the report, the mean of q (the first row of the draws file) and the sd of the
/// draws of each of [`NAMES`].
struct Fit {
    report: String,
    mean: Vec<(String, f64)>,
    sd: Vec<f64>,
}

fn fit_labour(tag: &str, args: &[&str]) -> Fit {
    let root = common::root();
    let out = std::env::temp_dir().join(format!("vi_sds_{tag}_{}.csv", std::process::id()));
    let run = Command::new(env!("CARGO_BIN_EXE_bayesc"))
        .current_dir(&root)
        .args([
            "fit",
            "examples/labour/model.bayes",
            "--data",
            "examples/labour/labour.csv",
            "--draws",
            "4000",
        ])
        .args(args)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&run.stdout).to_string();
    assert!(run.status.success(), "{report}");
    let text = std::fs::read_to_string(&out).unwrap();
    let _ = std::fs::remove_file(&out);
    let mean = common::vi_mean_row(&text);
    let mut rows = text.lines().filter(|l| !l.starts_with('#'));
    let header: Vec<String> = rows
        .next()
        .unwrap()
        .split(',')
        .map(|h| match h.split_once('.') {
            Some((a, i)) => format!("{a}[{i}]"),
            None => h.to_string(),
        })
        .collect();
    // the draws follow the mean row
    let draws: Vec<Vec<f64>> = rows
        .skip(1)
        .map(|l| l.split(',').map(|v| v.parse().unwrap()).collect())
        .collect();
    let sd = NAMES
        .iter()
        .map(|n| {
            let c = header.iter().position(|h| h == n).unwrap();
            let m = draws.iter().map(|r| r[c]).sum::<f64>() / draws.len() as f64;
            let v =
                draws.iter().map(|r| (r[c] - m).powi(2)).sum::<f64>() / (draws.len() - 1) as f64;
            v.sqrt()
        })
        .collect();
    Fit { report, mean, sd }
}

fn converged(report: &str) -> bool {
    report.lines().any(|l| l.starts_with("converged:"))
}

/// The largest |mean − NUTS| over the coordinates, in NUTS sds.
fn nuts_distance(mean: &[(String, f64)]) -> f64 {
    let reference =
        common::read_reference(&common::validation_dir().join("reference_fits/labour.csv"));
    reference
        .iter()
        .map(|r| {
            let m = mean.iter().find(|(n, _)| *n == r.name).unwrap().1;
            (m - r.mean).abs() / r.sd
        })
        .fold(0.0, f64::max)
}

/// The smallest and largest sd / sd of the mean-field optimum over the coordinates.
fn sd_ratios(sd: &[f64]) -> (f64, f64) {
    sd.iter()
        .zip(MF_SD)
        .map(|(s, m)| s / m)
        .fold((f64::INFINITY, 0.0), |(lo, hi), r| (lo.min(r), hi.max(r)))
}

#[test]
fn vadam_on_small_batches_is_refined_at_the_elbo_sds_and_meets_the_bar() {
    for seed in ["11", "12"] {
        let f = fit_labour(
            &format!("vadam5s{seed}"),
            &["--method", "vadam", "--batch-size", "5", "--seed", seed],
        );
        assert!(converged(&f.report), "seed {seed}: {}", f.report);
        let z = nuts_distance(&f.mean);
        // measured 0.10–0.11 (before: 0.229 and 0.226, "converged")
        assert!(z < 0.15, "seed {seed}: a mean {z:.3} NUTS sds off");
        assert!(
            f.report.contains(
                "the mean's steps were taken at the sds of the mean-field ELBO's optimum"
            ),
            "{}",
            f.report
        );
        // Vadam's own sds are reported: its empirical-Fisher σ at M = 5 is 1.7–1.9 times the
        // mean-field optimum's (docs/variational.md)
        let (lo, hi) = sd_ratios(&f.sd);
        assert!(
            lo > 1.5 && hi < 2.2,
            "seed {seed}: sd ratios {lo:.2}–{hi:.2}"
        );
    }
}

#[test]
fn converged_elbo_fits_report_sds_at_the_mean_field_optimum() {
    let cases: [(&str, &[&str]); 3] = [
        (
            "bbb32s2",
            &["--method", "bbb", "--batch-size", "32", "--seed", "2"],
        ),
        ("bbbs4", &["--method", "bbb", "--seed", "4"]),
        (
            "ivon16s7",
            &["--method", "ivon", "--batch-size", "16", "--seed", "7"],
        ),
    ];
    for (tag, args) in cases {
        let f = fit_labour(tag, args);
        assert!(converged(&f.report), "{tag}: {}", f.report);
        let (lo, hi) = sd_ratios(&f.sd);
        // measured 0.98–1.02 with 10 000 draws (before: up to 1.39, 1.28, 1.27, "converged");
        // 4000 draws add about 1 % of noise
        assert!(
            lo > 0.93 && hi < 1.07,
            "{tag}: sd ratios {lo:.3}–{hi:.3} of the mean-field optimum"
        );
        assert!(
            f.report
                .contains("the sds were set to the mean-field ELBO's fixed point"),
            "{tag}: {}",
            f.report
        );
        let z = nuts_distance(&f.mean);
        assert!(z < 0.15, "{tag}: a mean {z:.3} NUTS sds off");
    }
}

/// `--no-refine` still reports the method's own sds: BBB at M = 32, seed 2, keeps sds up to
/// 1.39 times the mean-field optimum's.
#[test]
fn no_refine_keeps_the_methods_own_sds() {
    let f = fit_labour(
        "bbb32s2n",
        &[
            "--method",
            "bbb",
            "--batch-size",
            "32",
            "--seed",
            "2",
            "--no-refine",
        ],
    );
    assert!(!f.report.contains("the sds were set"), "{}", f.report);
    let (_, hi) = sd_ratios(&f.sd);
    assert!(hi > 1.25, "the widest sd ratio {hi:.3}");
}

/// Minibatch QNVB is refined as the other mean-field fits are (session 19): before, it said
/// "converged" 0.204, 0.242 and 0.250 NUTS sds from NUTS at M = 16 seed 2 and M = 200 seeds 8
/// and 9 (its mean was not refined and the check's bar is 0.25); now 0.047, 0.096 and 0.101,
/// with the sds at the mean-field optimum (measured). Over M = 16, 32, 64, 200 and seeds 1–12
/// (48 fits) the converged fits above 0.15 went from 22 to 4 (0.161–0.187, alpha along its
/// ridge with age, which the check under-reads; docs/variational.md).
#[test]
fn minibatch_qnvb_is_refined_and_meets_the_bar() {
    for (batch, seed) in [("16", "2"), ("200", "8"), ("200", "9")] {
        let tag = format!("qnvb{batch}s{seed}");
        let f = fit_labour(
            &tag,
            &["--method", "qnvb", "--batch-size", batch, "--seed", seed],
        );
        assert!(converged(&f.report), "{tag}: {}", f.report);
        let z = nuts_distance(&f.mean);
        assert!(z < 0.15, "{tag}: a mean {z:.3} NUTS sds off");
        assert!(
            f.report.contains("the mean was refined"),
            "{tag}: {}",
            f.report
        );
        let (lo, hi) = sd_ratios(&f.sd);
        assert!(
            lo > 0.93 && hi < 1.07,
            "{tag}: sd ratios {lo:.3}–{hi:.3} of the mean-field optimum"
        );
    }
    // --no-refine is accepted for qnvb and keeps its own end point (0.250 NUTS sds off)
    let f = fit_labour(
        "qnvb200s9n",
        &[
            "--method",
            "qnvb",
            "--batch-size",
            "200",
            "--seed",
            "9",
            "--no-refine",
        ],
    );
    assert!(!f.report.contains("the mean was refined"), "{}", f.report);
    let z = nuts_distance(&f.mean);
    assert!(z > 0.2, "unrefined: a mean {z:.3} NUTS sds off");
}

/// The largest |mean − mean-field optimum| over the coordinates, in NUTS sds.
fn mf_distance(mean: &[(String, f64)]) -> f64 {
    let reference =
        common::read_reference(&common::validation_dir().join("reference_fits/labour.csv"));
    NAMES
        .iter()
        .zip(common::LABOUR_MF_MEAN)
        .map(|(n, mf)| {
            let m = mean.iter().find(|(k, _)| k == n).unwrap().1;
            let sd = reference.iter().find(|r| r.name == *n).unwrap().sd;
            (m - mf).abs() / sd
        })
        .fold(0.0, f64::max)
}

/// The Newton steps cross the alpha–age ridge (session 20): with the curvature's eigenvalues
/// floored at 0.05 (in q's variances) the step along the ridge (eigenvalue 0.009) was cut to a
/// fifth, and minibatch QNVB said "converged" 0.187 and 0.183 NUTS sds from NUTS at M = 32 seed
/// 9 and M = 64 seed 8 (0.13 from the mean-field optimum; alpha). With the floor lowered where
/// the eigenvalue's standard error allows (`stationarity::eigen_floor`): 0.063 and 0.063, and
/// 0.010 and 0.013 from the mean-field optimum (measured; M = 16, 32, 64 × seeds 1–12: every
/// converged fit within 0.071 of NUTS and 0.020 of the optimum).
#[test]
fn minibatch_qnvb_crosses_the_alpha_age_ridge() {
    for (batch, seed) in [("32", "9"), ("64", "8")] {
        let tag = format!("qnvbridge{batch}s{seed}");
        let f = fit_labour(
            &tag,
            &["--method", "qnvb", "--batch-size", batch, "--seed", seed],
        );
        assert!(converged(&f.report), "{tag}: {}", f.report);
        let z = nuts_distance(&f.mean);
        assert!(z < 0.1, "{tag}: a mean {z:.3} NUTS sds off");
        let m = mf_distance(&f.mean);
        assert!(
            m < 0.05,
            "{tag}: a mean {m:.3} NUTS sds from the mean-field optimum"
        );
    }
}
