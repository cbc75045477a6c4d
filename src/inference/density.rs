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

/// A log density that is a sum over N observations plus a row-free part,
/// L(ζ) = π(ζ) + Σ_{i=1}^N ℓ_i(ζ), and can be estimated from a batch of rows B (|B| = M) by
/// the unbiased minibatch estimate L̂_B(ζ) = π(ζ) + (N/M)·Σ_{i∈B} ℓ_i(ζ) of
/// specs/survey_vi.md §2 ("Unbiased log joint"). π (prior and Jacobian) is never scaled.
///
/// The [`LogDensity`] methods of the implementor are the full-data L. The graph's model
/// implements this when the compiler has proved the split (`graph::separability`); stochastic
/// methods (QNVB, QBVI, the survey methods) take it as their seam to minibatching.
pub trait MinibatchDensity: LogDensity {
    /// N, the number of observations (rows).
    fn n_obs(&self) -> usize;

    /// The estimate L̂_B for the batch `rows` (0-based, distinct, each < N; M = `rows.len()` ≥ 1)
    /// as a [`LogDensity`] of the same dimension. Making the view slices the data once, so all
    /// evaluations of one iteration (its Monte Carlo draws or quadrature points) share one batch
    /// cheaply (common random numbers, spec §2).
    ///
    /// Errors: an empty batch or a row out of range (unrecoverable).
    fn batch<'a>(&'a self, rows: &[usize]) -> Result<Box<dyn LogDensity + 'a>, DensityError>;

    /// L̂_B(ζ) and ∇L̂_B(ζ) for one batch; the same as `self.batch(rows)?.log_density_grad(..)`.
    fn log_density_grad_batch(
        &self,
        theta: &[f64],
        rows: &[usize],
        grad: &mut [f64],
    ) -> Result<f64, DensityError> {
        self.batch(rows)?.log_density_grad(theta, grad)
    }

    /// The per-observation log-likelihood gradients ∇ℓ_i(ζ) of the rows `rows` (0-based,
    /// each < N), written row-major into `grads` (`rows.len()` × d: row k holds ∇ℓ_{rows[k]}),
    /// with the values ℓ_i written into `values` (length `rows.len()`). The prior part π is
    /// left out ([`MinibatchDensity::prior_grad`] gives it), so
    /// Σ_i ∇ℓ_i + ∇π = ∇L (specs/survey_vi.md §1 notation: g_i = −∇ℓ_i). VOGN's per-example
    /// squared gradients (§12) and Vadam's mean-loss gradient (§11) are built from these.
    ///
    /// Errors: an empty batch, a row out of range or buffers of the wrong length
    /// (unrecoverable); model errors at `theta` as [`LogDensity::log_density_grad`].
    fn log_lik_grads(
        &self,
        theta: &[f64],
        rows: &[usize],
        values: &mut [f64],
        grads: &mut [f64],
    ) -> Result<(), DensityError>;

    /// The minibatch statistics of the per-observation gradients that the per-example
    /// methods consume: returns Σ_B ℓ_i(ζ), and writes Σ_B ∇ℓ_i(ζ) into `grad_sum` and the
    /// elementwise Σ_B (∇ℓ_i(ζ))² (the diagonal of the empirical Fisher, VOGN's per-example
    /// squared gradients, specs/survey_vi.md §12) into `grad_sq_sum` (both length d), for the
    /// rows `rows` (0-based, each < N).
    ///
    /// The default sums [`MinibatchDensity::log_lik_grads`] in row order; the graph's model
    /// overrides it with one vectorised reverse pass where the shapes allow
    /// (`graph::per_row`), the same sums to rounding.
    ///
    /// Errors: as [`MinibatchDensity::log_lik_grads`], and buffers of the wrong length.
    fn log_lik_grad_moments(
        &self,
        theta: &[f64],
        rows: &[usize],
        grad_sum: &mut [f64],
        grad_sq_sum: &mut [f64],
    ) -> Result<f64, DensityError> {
        check_moment_buffers(self.dim(), grad_sum, grad_sq_sum)?;
        moments_by_rows(self, theta, rows, grad_sum, grad_sq_sum)
    }

    /// Σ_B ℓ_i(ζ), with Σ_B ∇ℓ_i(ζ) written into `grad_sum` (length d): the likelihood part
    /// of the batch alone, for methods that use the mean gradient but no per-example squares
    /// (Vadam, specs/survey_vi.md §11). The default takes it from
    /// [`MinibatchDensity::log_lik_grad_moments`]; the graph's model runs one ordinary reverse
    /// pass over the batch (likelihood statements unscaled, prior and Jacobian dropped).
    ///
    /// Errors: as [`MinibatchDensity::log_lik_grad_moments`].
    fn log_lik_grad_sum(
        &self,
        theta: &[f64],
        rows: &[usize],
        grad_sum: &mut [f64],
    ) -> Result<f64, DensityError> {
        let mut sq = vec![0.0; self.dim()];
        self.log_lik_grad_moments(theta, rows, grad_sum, &mut sq)
    }

    /// π(ζ) and ∇π(ζ): the log density of the row-free part (priors, other row-free terms and
    /// the log|Jacobian| of the constraining transforms), gradient written into `grad`
    /// (length d). L = π + Σ_i ℓ_i.
    fn prior_grad(&self, theta: &[f64], grad: &mut [f64]) -> Result<f64, DensityError>;
}

/// Refuses moment buffers ([`MinibatchDensity::log_lik_grad_moments`]) whose lengths are not d.
pub fn check_moment_buffers(d: usize, sum: &[f64], sq: &[f64]) -> Result<(), DensityError> {
    if sum.len() != d || sq.len() != d {
        return Err(DensityError::fatal(format!(
            "moment buffers have lengths {} and {}, expected {d}",
            sum.len(),
            sq.len()
        )));
    }
    Ok(())
}

/// [`MinibatchDensity::log_lik_grad_moments`] by one reverse pass per row
/// ([`MinibatchDensity::log_lik_grads`]), summed in row order: the default, and the graph's
/// fallback where the vectorised pass does not apply. Buffers are assumed checked.
pub fn moments_by_rows<D: MinibatchDensity + ?Sized>(
    density: &D,
    theta: &[f64],
    rows: &[usize],
    grad_sum: &mut [f64],
    grad_sq_sum: &mut [f64],
) -> Result<f64, DensityError> {
    let d = density.dim();
    let mut values = vec![0.0; rows.len()];
    let mut grads = vec![0.0; rows.len() * d];
    density.log_lik_grads(theta, rows, &mut values, &mut grads)?;
    row_moments(&grads, d, grad_sum, grad_sq_sum);
    Ok(values.iter().sum())
}

/// Σ_k g_k and Σ_k g_k² (elementwise) of the rows g_k of `grads` (row-major, rows of length
/// `d`), summed in row order into `sum` and `sq` (length d; overwritten).
pub fn row_moments(grads: &[f64], d: usize, sum: &mut [f64], sq: &mut [f64]) {
    sum.iter_mut().for_each(|x| *x = 0.0);
    sq.iter_mut().for_each(|x| *x = 0.0);
    for row in grads.chunks(d.max(1)) {
        for ((s, q), &g) in sum.iter_mut().zip(sq.iter_mut()).zip(row) {
            *s += g;
            *q += g * g;
        }
    }
}
