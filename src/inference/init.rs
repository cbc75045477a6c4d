//! Initial values: uniform(−R, R) on the unconstrained scale, retried until the log density and
//! its gradient are finite (specs/nuts.md §3; the same rule serves every backend, qbvi.md §11).

use rand::RngExt;

use super::density::{DensityError, LogDensity};
use super::rng::StreamRng;

/// Default half-width R of the initialisation box (Stan's default, specs/nuts.md §3).
pub const INIT_RADIUS: f64 = 2.0;
/// Number of attempts before giving up (Stan's default, specs/nuts.md §3).
pub const MAX_INIT_ATTEMPTS: usize = 100;

/// Draws ζ ~ uniform(−2, 2)^d until log density and gradient are finite.
///
/// Errors: after [`MAX_INIT_ATTEMPTS`] failures, an unrecoverable [`DensityError`] whose message
/// says no valid initial point was found and repeats the last error (which names the model
/// statement), so the user can see which statement rejects every point. An unrecoverable error
/// from the density (e.g. an index out of range) is returned at once.
pub fn random_init(
    density: &dyn LogDensity,
    rng: &mut StreamRng,
) -> Result<Vec<f64>, DensityError> {
    let d = density.dim();
    let mut grad = vec![0.0; d];
    let mut last: Option<String> = None;
    for _ in 0..MAX_INIT_ATTEMPTS {
        let zeta: Vec<f64> = (0..d)
            .map(|_| rng.random_range(-INIT_RADIUS..INIT_RADIUS))
            .collect();
        match density.log_density_grad(&zeta, &mut grad) {
            Ok(lp) if lp.is_finite() && grad.iter().all(|g| g.is_finite()) => return Ok(zeta),
            Ok(lp) => last = Some(format!("log density {lp} or its gradient is not finite")),
            Err(e) if !e.recoverable => return Err(e),
            Err(e) => last = Some(e.to_string()),
        }
    }
    Err(DensityError::fatal(format!(
        "no valid initial point found after {MAX_INIT_ATTEMPTS} attempts drawing uniform(-{INIT_RADIUS}, {INIT_RADIUS}) \
         on the unconstrained scale; last problem: {}",
        last.unwrap_or_default()
    )))
}
