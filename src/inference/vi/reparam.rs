//! Reparameterised draws θ = μ + σ⊙ε from a diagonal Gaussian with the log density and its
//! gradient there: what the gradient-based survey methods evaluate per draw
//! (`specs/survey_vi.md` §5, §9, §10, §17). Non-finite values and recoverable model errors are
//! redrawn, as QBVI does (`specs/qbvi.md` §6).

use rand::RngExt;
use rand_distr::StandardNormal;

use super::{HALF_LN_2PI, ViError};
use crate::inference::LogDensity;
use crate::inference::rng::StreamRng;

/// Consecutive failed draws tolerated before giving up.
pub(crate) const MAX_REDRAWS: usize = 10;

/// One draw: ε, θ = μ + σ⊙ε, L(θ), ∇L(θ) and log q(θ) (all vectors of length d).
#[derive(Clone, Debug)]
pub(crate) struct GradDraw {
    pub(crate) eps: Vec<f64>,
    pub(crate) theta: Vec<f64>,
    pub(crate) value: f64,
    pub(crate) grad: Vec<f64>,
    pub(crate) log_q: f64,
}

impl GradDraw {
    pub(crate) fn new(d: usize) -> Self {
        GradDraw {
            eps: vec![0.0; d],
            theta: vec![0.0; d],
            value: 0.0,
            grad: vec![0.0; d],
            log_q: 0.0,
        }
    }

    /// Draws θ ~ N(mean, diag sd²) and evaluates L and ∇L there, redrawing up to
    /// [`MAX_REDRAWS`] times when they are not finite or the model reports a recoverable error.
    pub(crate) fn draw(
        &mut self,
        density: &dyn LogDensity,
        mean: &[f64],
        sd: &[f64],
        rng: &mut StreamRng,
        iteration: usize,
    ) -> Result<(), ViError> {
        let d = mean.len();
        let log_det: f64 = sd.iter().map(|s| s.ln()).sum();
        let mut last = String::new();
        for _ in 0..MAX_REDRAWS {
            let mut sq = 0.0;
            for i in 0..d {
                self.eps[i] = rng.sample(StandardNormal);
                self.theta[i] = mean[i] + sd[i] * self.eps[i];
                sq += self.eps[i] * self.eps[i];
            }
            self.log_q = -(d as f64) * HALF_LN_2PI - log_det - 0.5 * sq;
            match density.log_density_grad(&self.theta, &mut self.grad) {
                Ok(v) if v.is_finite() && self.grad.iter().all(|g| g.is_finite()) => {
                    self.value = v;
                    return Ok(());
                }
                Ok(v) => last = format!("log density {v} or its gradient is not finite"),
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

/// Checks that L is finite at `init`.
pub(crate) fn check_initial_point(density: &dyn LogDensity, init: &[f64]) -> Result<(), ViError> {
    match density.log_density(init) {
        Ok(v) if v.is_finite() => Ok(()),
        Ok(v) => Err(ViError::InitialPoint(format!("log density is {v}"))),
        Err(e) => Err(ViError::InitialPoint(e.to_string())),
    }
}
