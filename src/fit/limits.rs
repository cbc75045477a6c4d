//! What a fit refuses before it starts: Metropolis-Hastings above its dimension limit and
//! draws that would not fit in memory.

use super::*;

/// Largest d for which [`fit`] runs Metropolis-Hastings.
///
/// Random-walk Metropolis needs O(d) iterations per effectively independent draw (Roberts,
/// Gelman & Gilks 1997: optimal scaling 2.38²/d), so its default run is 500·d warmup + 200·d
/// draws per chain (`inference::mh::default_warmup`, `default_samples`), each iteration O(d²)
/// for the adapted shape: O(d³) work and O(d²) memory per chain. Measured (issue 10): a BNN with
/// d = 122 did not finish in 10 minutes and d = 1601 asked for 41.6 GB; d = 50 is the largest
/// dimension whose default run finishes in about a minute on a cheap density.
pub const MH_MAX_DIM: usize = 50;

/// Refuses Metropolis-Hastings above [`MH_MAX_DIM`] unconstrained parameters, with advice.
///
/// Errors: [`FitError::Algorithm`] naming d and the gradient-based alternatives.
pub fn check_mh_dimension(d: usize, method: Method) -> Result<(), FitError> {
    if method == Method::Mh && d > MH_MAX_DIM {
        return Err(FitError::Algorithm {
            method,
            message: format!(
                "the model has d = {d} unconstrained parameters, more than the {MH_MAX_DIM} where \
                 random-walk Metropolis can mix in its default run (it needs O(d) iterations per \
                 independent draw and O(d²) work per iteration: 500·d warmup + 200·d draws per \
                 chain). Use `--method nuts`, which uses the gradient and scales to thousands of \
                 parameters, or an approximation (`--method qbvi`, `qnvb` or `laplace`)"
            ),
        });
    }
    Ok(())
}

/// Bytes the draws of `options` need for `model`: MCMC keeps chains × ⌈samples/thin⌉ rows (plus
/// warmup rows when saved) of d unconstrained values, the draw columns and 7 sampler statistics;
/// variational fits keep vi_draws + psis_draws rows and QBVI N_s Monte Carlo points per
/// iteration. Saturates instead of overflowing.
pub fn draws_memory_bytes(model: &Model, options: &FitOptions) -> u128 {
    let d = model.dim() as u128;
    let cols = draw_names(model).len() as u128;
    let m = &options.mcmc;
    let rows = match options.method {
        Method::Nuts | Method::Hmc | Method::Mh | Method::FixedParam => {
            let per_chain = (m.samples as u128).div_ceil(m.thin.max(1) as u128)
                + if m.save_warmup { m.warmup as u128 } else { 0 };
            m.chains as u128 * per_chain
        }
        Method::Qbvi => {
            options.vi_draws as u128 + options.psis_draws as u128 + options.qbvi.n_samples as u128
        }
        Method::Bbvi => {
            options.vi_draws as u128 + options.psis_draws as u128 + options.bbvi.mc_samples as u128
        }
        Method::Mgvb | Method::Emgvb => {
            options.vi_draws as u128 + options.psis_draws as u128 + options.mgvb.mc_samples as u128
        }
        _ => options.vi_draws as u128 + options.psis_draws as u128,
    };
    rows.saturating_mul(d + cols + 7).saturating_mul(8)
}

/// Refuses options whose draws need more memory than the machine has available (Linux
/// `MemAvailable`; no check where it is unknown), before anything is allocated: an allocation
/// failure would abort the process. Errors: [`FitError::TooLarge`] saying how much and what to
/// lower.
pub fn check_memory(model: &Model, options: &FitOptions) -> Result<(), FitError> {
    let need = draws_memory_bytes(model, options);
    let available = crate::graph::value::available_memory();
    match available {
        Some(avail) if need > avail => {
            let what = if options.method.is_mcmc() {
                "--samples, --chains or raise --thin"
            } else {
                "--draws or --mc-samples"
            };
            Err(FitError::TooLarge(format!(
                "the draws would need {:.1} GB of memory but {:.1} GB are available; lower {what}",
                need as f64 / 1e9,
                avail as f64 / 1e9
            )))
        }
        _ => Ok(()),
    }
}
