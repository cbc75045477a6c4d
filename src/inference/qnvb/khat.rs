//! PSIS k̂ of a variational approximation q against the target log density
//! (specs/diagnostics.md §6.2; Yao et al. 2018, §3).

use rayon::prelude::*;

use crate::diagnostics::DiagnosticsError;
use crate::diagnostics::psis::{KHat, psis};
use crate::inference::density::{DensityError, LogDensity};

/// Log ratios whose spread is below this many ulps of the largest |L| or |log q| are treated as
/// constant (their differences are rounding noise, not a tail to fit).
const ROUNDING_ULPS: f64 = 256.0;

/// Why [`psis_khat`] failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum KhatError {
    /// The density returned an unrecoverable error at a draw.
    #[error("cannot evaluate the log density at a draw from the approximation: {0}")]
    Density(DensityError),
    /// Too few draws for the Pareto tail fit (at least 25 are needed).
    #[error(transparent)]
    Diagnostics(#[from] DiagnosticsError),
}

/// The Pareto k̂ of the importance log ratios log r_s = L(ζ_s) − log q(ζ_s) over `draws`
/// ζ_s ~ q (each of length d; S ≥ 25 of them, a few thousand recommended).
///
/// L is evaluated in parallel (rayon), the ratios keep the order of `draws`, and
/// [`crate::diagnostics::psis::psis`] fits the tail. A recoverable density error at a draw counts
/// as L = −∞ (zero target density there).
///
/// Returns k̂ as a number: the estimate; +∞ when a ratio is NaN or +∞ or the tail fit failed
/// (treated as a failed check); −∞ when the ratios are constant, i.e. q equals the target up to a
/// constant (also when they differ only by rounding: spread ≤ 256·ε·max |L|, |log q|) and k̂ is
/// undefined, so every threshold passes. Read k̂ < 0.5 as good, 0.5–0.7 as
/// usable, > 0.7 as an unreliable approximation (Yao et al. 2018, §3.2).
///
/// Errors: [`KhatError::Diagnostics`] for fewer than 25 draws; [`KhatError::Density`] for an
/// unrecoverable density error.
pub fn psis_khat(
    density: &dyn LogDensity,
    log_q: impl Fn(&[f64]) -> f64 + Sync,
    draws: &[Vec<f64>],
) -> Result<f64, KhatError> {
    // (log r, magnitude of the terms it was computed from)
    let pairs: Vec<(f64, f64)> = draws
        .par_iter()
        .map(|z| match density.log_density(z) {
            Ok(lp) => {
                let lq = log_q(z);
                Ok((lp - lq, lp.abs().max(lq.abs())))
            }
            Err(e) if e.recoverable => Ok((f64::NEG_INFINITY, 0.0)),
            Err(e) => Err(KhatError::Density(e)),
        })
        .collect::<Result<_, _>>()?;
    let ratios: Vec<f64> = pairs.iter().map(|p| p.0).collect();
    if ratios.len() >= 25 && ratios.iter().all(|r| r.is_finite()) {
        // ratios that differ only by the rounding of L and log q mean q ∝ target exactly
        let scale = pairs.iter().map(|p| p.1).fold(0.0, f64::max);
        let lo = ratios.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if hi - lo <= ROUNDING_ULPS * f64::EPSILON * scale.max(1.0) {
            return Ok(f64::NEG_INFINITY);
        }
    }
    let fit = psis(&ratios)?;
    Ok(match fit.khat {
        KHat::Estimate(k) => k,
        KHat::Undefined | KHat::TailTied => f64::NEG_INFINITY,
        KHat::FitFailed | KHat::NonFinite => f64::INFINITY,
    })
}
