//! The labour example fitted by QBVI (defaults) against the NUTS reference fit in
//! `../shared/validation/reference_fits/labour.csv`: means within 0.15 posterior sd and sds
//! within 15 % for every parameter, for each of 5 seeds (full covariance); means for the
//! diagonal family.

mod common;

use bayesc::fit::{self, FitDetails, FitOptions, Method};
use bayesc::inference::LogDensity;
use bayesc::inference::qbvi::{Covariance, StopReason};

fn fit_draws(covariance: Covariance, seed: u64) -> (Vec<String>, Vec<f64>, StopReason) {
    let model = common::compile(
        "examples/labour/model.bayes",
        &["examples/labour/labour.csv"],
    );
    assert_eq!(model.dim(), 8);
    let mut options = FitOptions::new(Method::Qbvi, seed);
    options.qbvi.covariance = covariance;
    options.vi_draws = 4000;
    let never = std::sync::atomic::AtomicBool::new(false);
    let monitor = fit::Monitor {
        on_progress: &|_| {},
        stop: &never,
    };
    let result = fit::fit(&model, &options, &monitor).expect("QBVI runs");
    let FitDetails::Qbvi(q) = &result.details else {
        panic!("a QBVI fit returns QBVI details")
    };
    (
        result.draws.names.clone(),
        result.draws.chains[0].clone(),
        q.stop,
    )
}

fn check(covariance: Covariance, seed: u64, check_sd: bool) {
    let reference =
        common::read_reference(&common::validation_dir().join("reference_fits/labour.csv"));
    let (names, flat, stop) = fit_draws(covariance, seed);
    assert_eq!(
        stop,
        StopReason::ExitRule,
        "seed {seed}: the exit rule should fire before the cap"
    );
    let moments = common::column_moments(&flat, names.len());
    for r in &reference {
        let j = names
            .iter()
            .position(|n| *n == r.name)
            .unwrap_or_else(|| panic!("no column {}", r.name));
        let (m, s) = moments[j];
        let z = (m - r.mean).abs() / r.sd;
        assert!(
            z < 0.15,
            "{covariance:?} seed {seed}: {} mean {m:.5} vs reference {:.5} ({z:.3} sd)",
            r.name,
            r.mean
        );
        if check_sd {
            let ratio = s / r.sd;
            assert!(
                (ratio - 1.0).abs() < 0.15,
                "{covariance:?} seed {seed}: {} sd {s:.5} vs reference {:.5} (ratio {ratio:.3})",
                r.name,
                r.sd
            );
        }
    }
}

#[test]
fn full_covariance_qbvi_matches_nuts_reference_for_five_seeds() {
    for seed in 1..=5 {
        check(Covariance::Full, seed, true);
    }
}

#[test]
fn diagonal_qbvi_means_match_nuts_reference() {
    for seed in 1..=5 {
        check(Covariance::Diagonal, seed, false);
    }
}
