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

/// The advice after every one of `attempts` random starting points failed with the same
/// `message`, word for word, naming a statement of the model: the value it names does not move
/// with the parameters, so it comes from the data or a constant, and no initial value can fix
/// it. Shared by MCMC's initialisation (`chain::initialize`) and [`random_init`] (the
/// variational methods, optimize, Laplace, Pathfinder), so every method says the same.
///
/// A positive argument that is exactly 0 (`Scale parameter is 0, but must be positive finite`,
/// e.g. `y ~ normal(mu, 0 * s)`) gets its own fix: the expression for it is 0 whatever the
/// parameters, and a scale of 0 is a point mass without a density.
pub fn constant_error_advice(message: &str, attempts: usize) -> String {
    const ZERO: &str = " is 0, but must be positive";
    if let Some(end) = message.find(ZERO) {
        // "normal_lpdf: Scale parameter is 0, …": the argument is after the function's name
        let which = message[..end]
            .rsplit(": ")
            .next()
            .unwrap_or("the argument")
            .to_lowercase();
        return format!(
            "The {which} is 0 at all {attempts} random starting points: the expression given for \
             it in the statement named is 0 whatever the parameters are (a factor 0, or \
             data or a constant that are 0), and it must be positive (a scale of 0 is a point \
             mass, which has no density). Change that expression (or the data it reads) so that \
             it is positive"
        );
    }
    format!(
        "The same error, word for word, at all {attempts} random starting points: the value it \
         names does not seem to change with the parameters, so it probably comes from the data \
         or a constant in the statement named above; check them against the density's support"
    )
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
    // whether every attempt failed with the same error naming a statement (see
    // [`constant_error_advice`])
    let mut same_named = true;
    for _ in 0..MAX_INIT_ATTEMPTS {
        let zeta: Vec<f64> = (0..d)
            .map(|_| rng.random_range(-INIT_RADIUS..INIT_RADIUS))
            .collect();
        match density.log_density_grad(&zeta, &mut grad) {
            Ok(lp) if lp.is_finite() && grad.iter().all(|g| g.is_finite()) => return Ok(zeta),
            Ok(lp) if !lp.is_finite() => {
                same_named = false;
                last = Some(format!("the log density is {lp}"))
            }
            Ok(_) => {
                same_named = false;
                let i = grad.iter().position(|g| !g.is_finite()).unwrap_or(0);
                last = Some(format!(
                    "the gradient of the log density with respect to {} is {}",
                    density.coordinate_name(i),
                    grad[i]
                ))
            }
            Err(e) if !e.recoverable => return Err(e),
            Err(e) => {
                let m = e.to_string();
                same_named &= e.location.is_some() && last.as_ref().is_none_or(|l| *l == m);
                last = Some(m);
            }
        }
    }
    let last = last.unwrap_or_default();
    if same_named && MAX_INIT_ATTEMPTS > 1 {
        return Err(DensityError::fatal(format!(
            "{NO_VALID_INIT} in {MAX_INIT_ATTEMPTS} attempts: {last}. {}",
            constant_error_advice(&last, MAX_INIT_ATTEMPTS)
        )));
    }
    Err(DensityError::fatal(format!(
        "{NO_VALID_INIT} after {MAX_INIT_ATTEMPTS} attempts drawing uniform(-{INIT_RADIUS}, {INIT_RADIUS}) \
         on the unconstrained scale; last problem: {last}"
    )))
}
