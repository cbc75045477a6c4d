//! R-hat flags chains that have not mixed (`specs/mh.md` §8.7, Vehtari et al. 2021): on a
//! mixture of two well-separated normals, NUTS and Metropolis-Hastings chains started in
//! different modes stay there, the rank-normalised split R-hat exceeds 1.1 and the CLI's
//! convergence warning names the parameter. The same target with all chains started in one
//! mode gives R-hat < 1.01 and no R-hat warning, so the check discriminates.

use std::sync::atomic::AtomicBool;

use bayesc::inference::mcmc::{self, McmcOutput, McmcSettings};
use bayesc::inference::{DensityError, Draws, LogDensity};
use bayesc::output::summary::{convergence_warnings, summarize};

/// Half the distance between the modes, in sds.
const SEP: f64 = 10.0;

/// ½·N(−SEP, 1) + ½·N(SEP, 1) in one dimension: the modes are 20 sds apart, so no sampler of
/// a few thousand iterations crosses between them (the density midway is e^−50 of the peaks).
/// (With modes 12 sds apart adaptive Metropolis-Hastings does cross during warmup, and once
/// its shape estimate has seen both modes it keeps jumping: correct, mixed sampling.)
struct TwoModes;

impl TwoModes {
    fn components(x: f64) -> (f64, f64) {
        (-0.5 * (x + SEP).powi(2), -0.5 * (x - SEP).powi(2))
    }
}

impl LogDensity for TwoModes {
    fn dim(&self) -> usize {
        1
    }

    fn log_density(&self, theta: &[f64]) -> Result<f64, DensityError> {
        let (a, b) = Self::components(theta[0]);
        let m = a.max(b);
        Ok(m + ((a - m).exp() + (b - m).exp()).ln())
    }

    fn log_density_grad(&self, theta: &[f64], grad: &mut [f64]) -> Result<f64, DensityError> {
        let x = theta[0];
        let (a, b) = Self::components(x);
        let m = a.max(b);
        let (wa, wb) = ((a - m).exp(), (b - m).exp());
        let s = wa + wb;
        grad[0] = (wa * -(x + SEP) + wb * -(x - SEP)) / s;
        Ok(m + s.ln())
    }
}

fn as_draws(out: &McmcOutput) -> Draws {
    Draws {
        names: vec!["x".to_string()],
        chains: out.chains.iter().map(|c| c.draws.clone()).collect(),
    }
}

fn run(settings: &McmcSettings, inits: &[Vec<f64>]) -> (f64, Vec<String>, Vec<f64>) {
    let never = AtomicBool::new(false);
    let out = mcmc::sample(&TwoModes, settings, inits, &|_| {}, &never).expect("sampling runs");
    let draws = as_draws(&out);
    let rows = summarize(&draws, true);
    let chain_means = draws
        .chains
        .iter()
        .map(|c| c.iter().sum::<f64>() / c.len() as f64)
        .collect();
    (
        rows[0].rhat.expect("MCMC rows have R-hat"),
        convergence_warnings(&rows, draws.chains.len()),
        chain_means,
    )
}

fn settings(method: mcmc::Method) -> McmcSettings {
    let mut s = if method == mcmc::Method::Mh {
        McmcSettings::mh_defaults(1)
    } else {
        McmcSettings::default()
    };
    s.method = method;
    s.seed = 7;
    s
}

fn check_separated(method: mcmc::Method) {
    let inits = vec![vec![-SEP], vec![SEP], vec![-SEP], vec![SEP]];
    let (rhat, warnings, means) = run(&settings(method.clone()), &inits);
    for (c, m) in means.iter().enumerate() {
        let mode = inits[c][0];
        assert!(
            (m - mode).abs() < 0.5,
            "{method:?}: chain {c} left its mode (mean {m:.3}, started at {mode})"
        );
    }
    assert!(rhat > 1.1, "{method:?}: R-hat {rhat:.3} should exceed 1.1");
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("R-hat > 1.01 for x:") && w.contains("have not mixed")),
        "{method:?}: no R-hat warning in {warnings:?}"
    );
}

fn check_one_mode(method: mcmc::Method) {
    let inits = vec![vec![SEP]; 4];
    let (rhat, warnings, means) = run(&settings(method.clone()), &inits);
    assert!(
        rhat < 1.01,
        "{method:?}: R-hat {rhat:.4} in one mode (chain means {means:?})"
    );
    assert!(
        !warnings.iter().any(|w| w.starts_with("R-hat")),
        "{method:?}: unexpected warning {warnings:?}"
    );
}

#[test]
fn nuts_chains_in_separate_modes_give_high_rhat() {
    check_separated(mcmc::Method::Nuts);
}

#[test]
fn mh_chains_in_separate_modes_give_high_rhat() {
    check_separated(mcmc::Method::Mh);
}

#[test]
fn chains_in_one_mode_give_rhat_near_one() {
    check_one_mode(mcmc::Method::Nuts);
    check_one_mode(mcmc::Method::Mh);
}
