//! NUTS and Metropolis-Hastings against reference posteriors: the 12 posteriordb cases
//! (`../shared/validation/posteriordb`) and the reference fits of the shipped examples
//! (`../shared/validation/reference_fits`). For every reference quantity the fit must satisfy
//! |mean − ref mean| < 0.1·ref sd (about 3 Monte Carlo standard errors at ESS ≈ 1000),
//! |sd / ref sd − 1| < 0.10, R-hat < 1.01, and (NUTS) no divergent transitions beyond those the
//! reference run itself had.
//!
//! Cases slower than about 10 s in release are `#[ignore]`d with their time; run them with
//! `cargo test --release --test posteriordb -- --ignored`. Each case prints one table row
//! (`--nocapture` shows them).

// `!(x < tol)` on purpose: a NaN statistic must fail the check.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

mod common;

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use bayesc::fit::{self, FitDetails, FitOptions, FitResult, Method};
use bayesc::graph::Model;
use bayesc::inference::LogDensity;
use bayesc::inference::mcmc::McmcSettings;
use bayesc::output::summary::summarize;

/// Tolerance on |mean − ref mean| in reference sds.
const MEAN_TOL: f64 = 0.1;
/// Tolerance on |sd / ref sd − 1|.
const SD_TOL: f64 = 0.10;
/// Largest acceptable R-hat.
const RHAT_MAX: f64 = 1.01;

/// Where a case's model, data and reference summary live.
struct Case {
    label: &'static str,
    model: String,
    data: Vec<String>,
    reference: PathBuf,
}

fn posteriordb(name: &'static str) -> Case {
    Case {
        label: name,
        model: format!("examples/posteriordb/{name}/model.bayes"),
        data: vec![format!("examples/posteriordb/{name}/data.json")],
        reference: common::validation_dir().join(format!("posteriordb/{name}/reference.csv")),
    }
}

fn example(name: &'static str, data: &str, reference: &str) -> Case {
    Case {
        label: name,
        model: format!("examples/{name}/model.bayes"),
        data: vec![format!("examples/{name}/{data}")],
        reference: common::validation_dir().join(format!("reference_fits/{reference}")),
    }
}

/// What one fit achieved against its reference.
#[derive(Debug)]
struct Outcome {
    /// max over quantities of |mean − ref mean| / ref sd.
    max_dmean: f64,
    /// Smallest and largest sd / ref sd.
    sd_ratio: (f64, f64),
    /// Largest R-hat over the reference quantities.
    max_rhat: f64,
    /// Smallest bulk ESS over the reference quantities.
    min_ess: f64,
    /// Post-warmup divergent transitions over all chains.
    divergences: usize,
    /// Wall time of the fit, seconds.
    seconds: f64,
    /// Violations of the tolerances, one message each.
    failures: Vec<String>,
}

fn compile(case: &Case) -> Model {
    let data: Vec<&str> = case.data.iter().map(String::as_str).collect();
    common::compile(&case.model, &data)
}

fn run(model: &Model, options: &FitOptions) -> FitResult {
    let never = AtomicBool::new(false);
    let monitor = fit::Monitor {
        on_progress: &|_| {},
        stop: &never,
    };
    fit::fit(model, options, &monitor).expect("the fit runs")
}

/// Compares `result` with the reference summary of `case`; `max_divergences` is the number of
/// post-warmup divergences tolerated.
fn evaluate(case: &Case, result: &FitResult, max_divergences: usize, seconds: f64) -> Outcome {
    let reference = common::read_reference(&case.reference);
    let rows = summarize(&result.draws, true);
    let divergences = match &result.details {
        FitDetails::Mcmc(out) => out.chains.iter().map(|c| c.divergences).sum(),
        _ => panic!("an MCMC fit was asked for"),
    };
    let mut o = Outcome {
        max_dmean: 0.0,
        sd_ratio: (f64::INFINITY, 0.0),
        max_rhat: 0.0,
        min_ess: f64::INFINITY,
        divergences,
        seconds,
        failures: Vec::new(),
    };
    for r in &reference {
        let row = rows
            .iter()
            .find(|s| s.name == r.name)
            .unwrap_or_else(|| panic!("{}: the fit has no quantity {}", case.label, r.name));
        let dmean = (row.mean - r.mean).abs() / r.sd;
        let ratio = row.sd / r.sd;
        let rhat = row.rhat.expect("MCMC summaries have R-hat");
        let ess = row.ess_bulk.expect("MCMC summaries have ESS");
        o.max_dmean = o.max_dmean.max(dmean);
        o.sd_ratio = (o.sd_ratio.0.min(ratio), o.sd_ratio.1.max(ratio));
        o.max_rhat = o.max_rhat.max(rhat);
        o.min_ess = o.min_ess.min(ess);
        if !(dmean < MEAN_TOL) {
            o.failures.push(format!(
                "{}: mean {:.6} vs reference {:.6} ({dmean:.3} sd)",
                r.name, row.mean, r.mean
            ));
        }
        if !((ratio - 1.0).abs() < SD_TOL) {
            o.failures.push(format!(
                "{}: sd {:.6} vs reference {:.6} (ratio {ratio:.3})",
                r.name, row.sd, r.sd
            ));
        }
        if !(rhat < RHAT_MAX) {
            o.failures
                .push(format!("{}: R-hat {rhat:.4} ≥ {RHAT_MAX}", r.name));
        }
    }
    if divergences > max_divergences {
        o.failures.push(format!(
            "{divergences} divergent transitions (at most {max_divergences} allowed)"
        ));
    }
    o
}

fn report(case: &Case, method: &str, o: &Outcome) {
    println!(
        "| {} | {method} | {:.3} | {:.3}–{:.3} | {:.4} | {:.0} | {} | {:.1} |",
        case.label,
        o.max_dmean,
        o.sd_ratio.0,
        o.sd_ratio.1,
        o.max_rhat,
        o.min_ess,
        o.divergences,
        o.seconds
    );
    assert!(
        o.failures.is_empty(),
        "{} ({method}) misses the reference:\n  {}",
        case.label,
        o.failures.join("\n  ")
    );
}

/// NUTS, 4 chains × 1000 warmup × 1000 draws, seed `seed`.
fn check_nuts_seed(case: Case, max_divergences: usize, seed: u64) {
    let model = compile(&case);
    let options = FitOptions::new(Method::Nuts, seed);
    assert_eq!(
        (
            options.mcmc.chains,
            options.mcmc.warmup,
            options.mcmc.samples
        ),
        (4, 1000, 1000)
    );
    let start = Instant::now();
    let result = run(&model, &options);
    let o = evaluate(
        &case,
        &result,
        max_divergences,
        start.elapsed().as_secs_f64(),
    );
    report(&case, "NUTS", &o);
}

fn check_nuts(case: Case, max_divergences: usize) {
    check_nuts_seed(case, max_divergences, 20261130);
}

/// Metropolis-Hastings with `McmcSettings::mh_defaults(dim)` (default warmup max(2000, 500·d))
/// and [`MH_SAMPLES`] iterations per chain thinned by [`MH_THIN`] (2000 kept draws per chain;
/// the default 2000 iterations give a bulk ESS of only 120–350 here, too few for
/// R-hat < 1.01).
fn check_mh(case: Case) {
    let model = compile(&case);
    let dim = model.dim();
    assert!(dim <= 10, "Metropolis-Hastings is validated up to d = 10");
    let mut options = FitOptions::new(Method::Mh, 20261130);
    options.mcmc = McmcSettings::mh_defaults(dim);
    options.mcmc.samples = MH_SAMPLES;
    options.mcmc.thin = MH_THIN;
    let start = Instant::now();
    let result = run(&model, &options);
    let o = evaluate(&case, &result, 0, start.elapsed().as_secs_f64());
    report(&case, "MH", &o);
}

/// Post-warmup Metropolis-Hastings iterations per chain.
const MH_SAMPLES: usize = 20_000;
/// Thinning of the Metropolis-Hastings draws.
const MH_THIN: usize = 10;

// ---------------------------------------------------------------------------------------------
// NUTS on the posteriordb cases.

#[test]
#[ignore = "slow: 54 CPU-s, 94 s wall on a busy 2-core machine (scalar loop over 200 × 5 lags); run with --ignored"]
fn nuts_ark() {
    check_nuts(posteriordb("arK-arK"), 0);
}

#[test]
#[ignore = "slow-ish: 24 CPU-s, 14 s wall on 2 cores (4 chains) with the automatic dense metric (d = 26 cheap next to N = 5000 rows; the diagonal one saturated tree depth 10 and took 1213 s wall) and the fused normal pass; passed at seed 1: max |Δmean| 0.032 sd, sd ratio 0.971–1.026, R-hat 1.003; run with --ignored"]
fn nuts_diamonds() {
    check_nuts(posteriordb("diamonds-diamonds"), 0);
}

#[test]
fn nuts_earnings_earn_height() {
    check_nuts(posteriordb("earnings-earn_height"), 0);
}

#[test]
fn nuts_earnings_logearn_interaction_z() {
    check_nuts(posteriordb("earnings-logearn_interaction_z"), 0);
}

/// The reference run of the non-centred eight schools had 3 divergences in 4000 transitions;
/// a handful (≤ 10) is tolerated.
#[test]
fn nuts_eight_schools_noncentered() {
    check_nuts(posteriordb("eight_schools-eight_schools_noncentered"), 10);
}

#[test]
fn nuts_garch11() {
    check_nuts(posteriordb("garch-garch11"), 0);
}

#[test]
fn nuts_kidiq_momiq() {
    check_nuts(posteriordb("kidiq-kidscore_momiq"), 0);
}

#[test]
fn nuts_kidiq_mom_work() {
    check_nuts(posteriordb("kidiq_with_mom_work-kidscore_mom_work"), 0);
}

#[test]
fn nuts_kilpisjarvi() {
    check_nuts(posteriordb("kilpisjarvi_mod-kilpisjarvi"), 0);
}

#[test]
fn nuts_mesquite() {
    check_nuts(posteriordb("mesquite-logmesquite"), 0);
}

#[test]
#[ignore = "slow: 22 CPU-s, 126 s wall on a busy 2-core machine; run with --ignored"]
fn nuts_nes2000() {
    check_nuts(posteriordb("nes2000-nes"), 0);
}

#[test]
fn nuts_sblrc() {
    check_nuts(posteriordb("sblrc-blr"), 0);
}

// NUTS on the shipped examples against the reference fits.

#[test]
fn nuts_labour() {
    check_nuts(example("labour", "labour.csv", "labour.csv"), 0);
}

/// The reference run had 3 divergences in 4000 transitions; a handful (≤ 10) is tolerated.
#[test]
fn nuts_eight_schools() {
    check_nuts(
        example("eight_schools", "schools.csv", "eight_schools.csv"),
        10,
    );
}

#[test]
#[ignore = "slow: 36 CPU-s, 189 s wall on a busy 2-core machine (recursion over 1000 returns); run with --ignored"]
fn nuts_garch() {
    check_nuts(example("garch", "returns.csv", "garch.csv"), 0);
}

// ---------------------------------------------------------------------------------------------
// Metropolis-Hastings on the cases with dimension ≤ 10.

#[test]
#[ignore = "slow: 25–143 s wall on a busy 2-core machine (scalar loop over 200 × 5 lags); passes; run with --ignored"]
fn mh_ark() {
    check_mh(posteriordb("arK-arK"));
}

/// β₁ (sd ≈ 9700) and β₂ (sd ≈ 144) are correlated at −0.998 and 6 sds along the ridge from
/// where an isotropic walk from the U(−2, 2) start stalls. Without the curvature
/// initialisation of `inference::mh::curvature_start` (the spec's start, 10⁻³·I shrinkage)
/// this failed with R-hat ≈ 1.5 even after 30 000 warmup iterations; with it the default
/// warmup passes.
#[test]
fn mh_earnings_earn_height() {
    check_mh(posteriordb("earnings-earn_height"));
}

#[test]
fn mh_earnings_logearn_interaction_z() {
    check_mh(posteriordb("earnings-logearn_interaction_z"));
}

#[test]
fn mh_eight_schools_noncentered() {
    check_mh(posteriordb("eight_schools-eight_schools_noncentered"));
}

#[test]
fn mh_garch11() {
    check_mh(posteriordb("garch-garch11"));
}

#[test]
fn mh_kidiq_momiq() {
    check_mh(posteriordb("kidiq-kidscore_momiq"));
}

#[test]
fn mh_kidiq_mom_work() {
    check_mh(posteriordb("kidiq_with_mom_work-kidscore_mom_work"));
}

/// α (sd ≈ 30) and β (sd ≈ 0.0075) are correlated at −0.99999 (x is years, not centred).
/// Without the curvature initialisation the learned shape never resolved the ridge (R-hat
/// ≈ 2.9 after 30 000 warmup iterations); with it the default warmup passes.
#[test]
fn mh_kilpisjarvi() {
    check_mh(posteriordb("kilpisjarvi_mod-kilpisjarvi"));
}

#[test]
fn mh_mesquite() {
    check_mh(posteriordb("mesquite-logmesquite"));
}

#[test]
fn mh_nes2000() {
    check_mh(posteriordb("nes2000-nes"));
}

#[test]
fn mh_sblrc() {
    check_mh(posteriordb("sblrc-blr"));
}

#[test]
fn mh_labour() {
    check_mh(example("labour", "labour.csv", "labour.csv"));
}

#[test]
fn mh_eight_schools() {
    check_mh(example("eight_schools", "schools.csv", "eight_schools.csv"));
}

#[test]
#[ignore = "slow: 26–143 s wall on a busy 2-core machine (recursion over 1000 returns); passes; run with --ignored"]
fn mh_garch() {
    check_mh(example("garch", "returns.csv", "garch.csv"));
}
