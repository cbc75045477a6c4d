//! The seam between models and algorithms: a log density on the unconstrained space.
//!
//! Every inference backend sees a model only through [`LogDensity`] (STYLE.md habit 1), so each
//! algorithm can be tested on closed-form targets without the language.

use std::fmt;

/// A failure to evaluate the log density at a point.
///
/// `recoverable` errors are numerical domain problems at that particular point (a scale
/// parameter that underflowed to zero, `reject()` in the model): samplers treat them as a
/// rejected proposal or a divergence, variational methods redraw. Unrecoverable errors (an index
/// out of range, a shape mismatch) abort the fit and are reported to the user.
#[derive(Clone, Debug, PartialEq)]
pub struct DensityError {
    /// Human-readable explanation, e.g. "normal_lpdf: Scale parameter is -0.2, but must be positive".
    pub message: String,
    /// Where in the model the error arose, as "file:line:column", when known.
    pub location: Option<String>,
    /// Whether the algorithm may continue by rejecting this point.
    pub recoverable: bool,
}

impl DensityError {
    /// A recoverable error with no location.
    pub fn recoverable(message: impl Into<String>) -> Self {
        DensityError {
            message: message.into(),
            location: None,
            recoverable: true,
        }
    }

    /// An unrecoverable error with no location.
    pub fn fatal(message: impl Into<String>) -> Self {
        DensityError {
            message: message.into(),
            location: None,
            recoverable: false,
        }
    }
}

impl fmt::Display for DensityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.location {
            Some(loc) => write!(f, "{} ({})", self.message, loc),
            None => write!(f, "{}", self.message),
        }
    }
}

impl std::error::Error for DensityError {}

/// An unnormalised log density L(ζ) on ℝ^d: log-likelihood + log prior + log|det ∂T/∂ζ|, the
/// "log joint on the unconstrained scale" of `specs/README.md`.
///
/// Implementations must be `Sync`: Monte Carlo draws and chains evaluate it from several threads
/// at once. Evaluation must be deterministic (same input, same output, bit for bit).
pub trait LogDensity: Sync {
    /// d, the length of the unconstrained parameter vector.
    fn dim(&self) -> usize;

    /// L(ζ) for `theta` of length [`LogDensity::dim`]. The value may be `-inf` (zero density);
    /// it is never NaN on success.
    fn log_density(&self, theta: &[f64]) -> Result<f64, DensityError>;

    /// L(ζ) and its gradient ∂L/∂ζ written into `grad` (length [`LogDensity::dim`]).
    /// On error the contents of `grad` are unspecified.
    fn log_density_grad(&self, theta: &[f64], grad: &mut [f64]) -> Result<f64, DensityError>;

    /// How unconstrained coordinate `i` (0-based) is named in messages, e.g. "`sigma`" or
    /// "`beta` (unconstrained coordinate 3)"; by default "coordinate i+1".
    fn coordinate_name(&self, i: usize) -> String {
        format!("coordinate {}", i + 1)
    }
}
