//! Initial values: uniform(−R, R) on the unconstrained scale, retried until the log density and
//! its gradient are finite (specs/nuts.md §3; the same rule serves every backend, qbvi.md §11).

use rand::RngExt;

use super::density::{DensityError, LogDensity};
use super::rng::StreamRng;

/// Default half-width R of the initialisation box (Stan's default, specs/nuts.md §3).
pub const INIT_RADIUS: f64 = 2.0;
/// Number of attempts before giving up (Stan's default, specs/nuts.md §3).
pub const MAX_INIT_ATTEMPTS: usize = 100;

/// How the error of [`random_init`] after [`MAX_INIT_ATTEMPTS`] failures begins; see
/// [`is_exhausted`].
const NO_VALID_INIT: &str = "no valid initial point found";

/// Whether `e` is [`random_init`]'s error after every attempt failed (each point was rejected),
/// as opposed to an unrecoverable error of the model itself (e.g. a size mismatch or an index
/// out of range), which no initial point avoids.
pub fn is_exhausted(e: &DensityError) -> bool {
    e.message.starts_with(NO_VALID_INIT)
}

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
            Ok(lp) if !lp.is_finite() => last = Some(format!("the log density is {lp}")),
            Ok(_) => {
                let i = grad.iter().position(|g| !g.is_finite()).unwrap_or(0);
                last = Some(format!(
                    "the gradient of the log density with respect to {} is {}",
                    density.coordinate_name(i),
                    grad[i]
                ))
            }
            Err(e) if !e.recoverable => return Err(e),
            Err(e) => last = Some(e.to_string()),
        }
    }
    Err(DensityError::fatal(format!(
        "{NO_VALID_INIT} after {MAX_INIT_ATTEMPTS} attempts drawing uniform(-{INIT_RADIUS}, {INIT_RADIUS}) \
         on the unconstrained scale; last problem: {}",
        last.unwrap_or_default()
    )))
}
