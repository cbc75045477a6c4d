//! Mean-loss statistics of a minibatch for the methods that split the log joint into its
//! likelihood rows and the row-free part (`specs/survey_vi.md` §1–§2; Vadam §11, VOGN §12):
//! at a draw θ and a batch B of M rows, ĝ = (1/M)Σ_B g_i and ĥ = (1/M)Σ_B g_i² with
//! g_i = −∇ℓ_i(θ), from the sums of [`MinibatchDensity::log_lik_grad_moments`] (one
//! vectorised reverse pass over the batch on the graph's models), and the prior part from
//! [`MinibatchDensity::prior_grad`].
//!
//! A non-Gaussian prior (§2, last paragraph): the mean loss becomes f̄_B − π/N, so the prior's
//! gradient enters as −∇π/N and its curvature as diag(−∇²π)/N, the λ̃ = τ₀/N of a Gaussian
//! prior N(0, τ₀⁻¹I) (for which −∇π(μ) = τ₀μ and −∇²π = τ₀ exactly, so the spec's updates are
//! reproduced). The curvature is a central finite difference of ∇π ([`prior_curvature`]),
//! floored at 0 so that it cannot make a precision negative.

use rand::RngExt;
use rand_distr::StandardNormal;

use super::reparam::MAX_REDRAWS;
use super::{HALF_LN_2PI, ViError};
use crate::inference::MinibatchDensity;
use crate::inference::hessian::finite_diff_step;
use crate::inference::rng::StreamRng;

/// Buffers and results of one batch evaluation at a draw θ = μ + σ⊙ε.
#[derive(Clone, Debug)]
pub(crate) struct LossDraw {
    /// ε (length d).
    pub(crate) eps: Vec<f64>,
    /// θ (length d).
    pub(crate) theta: Vec<f64>,
    /// ĝ = (1/M)Σ_B g_i, g_i = −∇ℓ_i(θ) (length d).
    pub(crate) g_mean: Vec<f64>,
    /// ĥ = (1/M)Σ_B g_i² (length d).
    pub(crate) g_sq_mean: Vec<f64>,
    /// Σ_B ℓ_i(θ).
    pub(crate) lik_sum: f64,
    /// log q(θ).
    pub(crate) log_q: f64,
    /// Σ_B ∇ℓ_i and Σ_B (∇ℓ_i)² of the last evaluation (length d).
    sum: Vec<f64>,
    sq: Vec<f64>,
}

impl LossDraw {
    pub(crate) fn new(d: usize) -> Self {
        LossDraw {
            eps: vec![0.0; d],
            theta: vec![0.0; d],
            g_mean: vec![0.0; d],
            g_sq_mean: vec![0.0; d],
            lik_sum: 0.0,
            log_q: 0.0,
            sum: vec![0.0; d],
            sq: vec![0.0; d],
        }
    }

    /// Draws θ ~ N(mean, diag sd²) and evaluates the per-row gradient statistics of the batch
    /// `rows` there — ĝ and, with `squares`, ĥ (without, `g_sq_mean` is left as it was and only
    /// one ordinary reverse pass runs, [`MinibatchDensity::log_lik_grad_sum`]) — redrawing (up to [`MAX_REDRAWS`] times) when a value or gradient is not finite
    /// or the model reports a recoverable error.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn draw(
        &mut self,
        density: &dyn MinibatchDensity,
        rows: &[usize],
        mean: &[f64],
        sd: &[f64],
        rng: &mut StreamRng,
        iteration: usize,
        squares: bool,
    ) -> Result<(), ViError> {
        let d = mean.len();
        let m = rows.len();
        let mut last = String::new();
        let log_det: f64 = sd.iter().map(|s| s.ln()).sum();
        for _ in 0..MAX_REDRAWS {
            let mut sq = 0.0;
            for i in 0..d {
                self.eps[i] = rng.sample(StandardNormal);
                self.theta[i] = mean[i] + sd[i] * self.eps[i];
                sq += self.eps[i] * self.eps[i];
            }
            self.log_q = -(d as f64) * HALF_LN_2PI - log_det - 0.5 * sq;
            let r = if squares {
                density.log_lik_grad_moments(&self.theta, rows, &mut self.sum, &mut self.sq)
            } else {
                self.sq.iter_mut().for_each(|x| *x = 0.0);
                density.log_lik_grad_sum(&self.theta, rows, &mut self.sum)
            };
            match r {
                Ok(v)
                    if v.is_finite()
                        && self.sum.iter().all(|g| g.is_finite())
                        && self.sq.iter().all(|g| g.is_finite()) =>
                {
                    self.lik_sum = v;
                    for i in 0..d {
                        self.g_mean[i] = -self.sum[i] / m as f64;
                    }
                    if squares {
                        for i in 0..d {
                            self.g_sq_mean[i] = self.sq[i] / m as f64;
                        }
                    }
                    return Ok(());
                }
                Ok(_) => last = "a log-likelihood term or its gradient is not finite".into(),
                Err(e) if e.recoverable => last = e.to_string(),
                Err(e) => return Err(ViError::Density(e)),
            }
        }
        Err(ViError::NonFiniteDensity {
            iteration,
            attempts: MAX_REDRAWS,
            last,
        })
    }
}

/// The batch ELBO estimate L̂_B(θ) − log q(θ) = π(θ) + (N/M)Σ_B ℓ_i(θ) − log q(θ) of a draw
/// (§2; one more evaluation of the row-free part, at θ). −∞ if π is not finite there.
pub(crate) fn batch_elbo(
    density: &dyn MinibatchDensity,
    draw: &LossDraw,
    m: usize,
) -> Result<f64, ViError> {
    let mut g = vec![0.0; draw.theta.len()];
    match density.prior_grad(&draw.theta, &mut g) {
        Ok(p) => Ok(p + density.n_obs() as f64 / m as f64 * draw.lik_sum - draw.log_q),
        Err(e) if e.recoverable => Ok(f64::NEG_INFINITY),
        Err(e) => Err(ViError::Density(e)),
    }
}

/// ∇π at `mean` (length d). Errors: the prior part is not finite there, or a model error.
pub(crate) fn prior_gradient(
    density: &dyn MinibatchDensity,
    mean: &[f64],
) -> Result<Vec<f64>, ViError> {
    let mut g = vec![0.0; mean.len()];
    match density.prior_grad(mean, &mut g) {
        Ok(v) if v.is_finite() && g.iter().all(|x| x.is_finite()) => Ok(g),
        Ok(v) => Err(ViError::InitialPoint(format!(
            "the prior part of the log density is {v} (or its gradient is not finite) at the mean"
        ))),
        Err(e) => Err(ViError::Density(e)),
    }
}

/// max(0, diag(−∇²π)) at `mean` by central differences of ∇π (2d evaluations of the row-free
/// part, each on one row), steps as [`finite_diff_step`]. For a Gaussian prior N(0, τ₀⁻¹I)
/// it is τ₀ up to rounding.
pub(crate) fn prior_curvature(
    density: &dyn MinibatchDensity,
    mean: &[f64],
) -> Result<Vec<f64>, ViError> {
    let d = mean.len();
    let mut x = mean.to_vec();
    let mut out = vec![0.0; d];
    for j in 0..d {
        let h = finite_diff_step(mean[j]);
        x[j] = mean[j] + h;
        let up = prior_gradient(density, &x)?;
        x[j] = mean[j] - h;
        let down = prior_gradient(density, &x)?;
        x[j] = mean[j];
        out[j] = (-(up[j] - down[j]) / (2.0 * h)).max(0.0);
    }
    Ok(out)
}

/// The initial diagonal precision of the natural-gradient methods on per-observation
/// gradients (Vadam, VOGN; `specs/survey_vi.md` §3): `given` when set (d values), else
/// `default` in every coordinate.
///
/// Errors: [`ViError::InvalidSettings`] when `given` does not have d values, or a precision is
/// not positive and finite.
pub(crate) fn initial_diag_precision(
    given: Option<&[f64]>,
    default: f64,
    d: usize,
) -> Result<Vec<f64>, ViError> {
    let p0 = match given {
        Some(p) if p.len() == d => p.to_vec(),
        Some(p) => {
            return Err(ViError::InvalidSettings(format!(
                "init_precision has length {}, expected {d}",
                p.len()
            )));
        }
        None => vec![default; d],
    };
    if p0.iter().any(|p| !(*p > 0.0 && p.is_finite())) {
        return Err(ViError::InvalidSettings(
            "initial precisions must be positive and finite".into(),
        ));
    }
    Ok(p0)
}

/// Iterations between refreshes of the prior curvature at the current mean ([X]: the
/// curvature of a Gaussian prior on ζ is constant, and 2d evaluations per step would dominate
/// the cost of a small batch at large d).
pub(crate) const PRIOR_CURVATURE_EVERY: usize = 50;

/// The largest weight the initial value may keep in a running average of squared gradients
/// when the exit rule is allowed to stop ([X], a departure from `survey_vi.md` §1, whose rule
/// looks at the ELBO only): 2 %.
///
/// Why: Vadam's and VOGN's precision is an exponential average s ← γs + (1 − γ)ĥ whose fixed
/// point (the empirical Fisher under q, §11–§12) is not the ELBO's optimum, so the ELBO does
/// not rise while s travels there from its (Laplace) start, and the exit rule fired with s
/// part way. On `y ~ normal(mu, 1)` with N = 20 (fixed point sd 0.335, Laplace 0.224) Vadam
/// (γ = 0.999, a time constant of 1000 steps) stopped after 500 steps at sd 0.246–0.301 for
/// seeds 1–4, "converged". After t steps the start keeps the weight γᵗ; at 2 % the precision
/// is within 2 % of the start's distance from its fixed point.
pub(crate) const START_WEIGHT: f64 = 0.02;

/// The steps after which an exponential average with keep factor `keep` (γ ∈ [0, 1)) gives its
/// start a weight of at most [`START_WEIGHT`]: ⌈ln 0.02 / ln γ⌉ (3911 for Vadam's γ₂ = 0.999,
/// 390 for VOGN's 1 − β = 0.99); 0 for γ = 0.
pub(crate) fn settle_steps(keep: f64) -> usize {
    if keep <= 0.0 {
        return 0;
    }
    (START_WEIGHT.ln() / keep.ln()).ceil() as usize
}
