//! EMGVB / MGVBP, exact manifold Gaussian VB on the precision matrix (Magris, Shabani &
//! Iosifidis 2022; the survey's Algorithm 13), as specified in `specs/survey_vi.md` §15.
//!
//! q = N(μ, P⁻¹), full covariance. Per iteration, S draws θ_s give f_s = L(θ_s) − log q(θ_s)
//! and the scores a_s = P(θ_s − μ), U_P = P − a_s a_sᵀ; with the lagged per-component control
//! variates of `qbvi.md` §5.3 the exact natural gradients are ∇̃_μ = Σ·mean a(f − c) and
//! ∇̃_P = sym(mean U_P(f − c)). Momentum M ← ω·E·M·Eᵀ + (1−ω)∇̃ with the transport
//! E = (P_t Σ_{t−1})^{1/2}; then μ ← μ + βM_μ (with Σ_t) and P ← R_P(βM_P) =
//! sym(P + ξ + ½ξΣξ), with up to 5 halvings of β when the result is not positive definite
//! and the old P kept after that (§14 [C]; the quirk of discarding a step that succeeds on the
//! last halving is not copied). Needs values of L only. Residual form only (the conjugate form
//! of §15 is not implemented), and the gradient clipping of the authors' code is not.

use faer::Mat;

use super::manifold::{self, MAX_HALVINGS, ManifoldSettings, ManifoldStep};
use super::{
    Batch, Control, ControlVariates, Family, FullGaussian, GaussianFit, Progress, ViError,
    cholesky_lower,
};
use crate::inference::LogDensity;
use crate::inference::rng::StreamRng;

/// The state of an EMGVB run.
#[derive(Clone, Debug)]
pub struct Emgvb {
    settings: ManifoldSettings,
    q: FullGaussian,
    prev_precision: Option<Mat<f64>>,
    m_mu: Vec<f64>,
    m_p: Mat<f64>,
    cv: ControlVariates,
    batch: Batch,
    g: Vec<f64>,
    skipped: usize,
}

impl Emgvb {
    /// A run from mean `init`. Errors: settings out of range, or d too large
    /// ([`ViError::Unsuitable`]).
    pub fn new(init: &[f64], settings: &ManifoldSettings) -> Result<Self, ViError> {
        let d = init.len();
        settings.validate(d, init)?;
        let q = settings.initial_q(init)?;
        let k = q.n_directions();
        Ok(Emgvb {
            settings: settings.clone(),
            q,
            prev_precision: None,
            m_mu: vec![0.0; d],
            m_p: Mat::zeros(d, d),
            cv: ControlVariates::new(k),
            batch: Batch::new(settings.mc_samples, d, k),
            g: vec![0.0; k],
            skipped: 0,
        })
    }

    /// μ (length d).
    pub fn mean(&self) -> &[f64] {
        self.q.mean()
    }

    /// Σ, d×d row-major.
    pub fn covariance(&self) -> Vec<f64> {
        self.q.covariance_row_major()
    }
}

impl ManifoldStep for Emgvb {
    fn q(&self) -> &FullGaussian {
        &self.q
    }

    fn pilot(&mut self, density: &dyn LogDensity, rng: &mut StreamRng) -> Result<(), ViError> {
        self.batch.draw(&self.q, density, rng, 0)?;
        self.cv.estimate(&self.batch.u, &self.batch.f, None);
        Ok(())
    }

    fn step(
        &mut self,
        density: &dyn LogDensity,
        rng: &mut StreamRng,
        t: usize,
    ) -> Result<f64, ViError> {
        let d = self.q.dim();
        self.batch.draw(&self.q, density, rng, t)?;
        // Lagged coefficients (qbvi.md §5.3), then new ones from this batch.
        self.cv.gradient(&self.batch.u, &self.batch.f, &mut self.g);
        self.cv.estimate(&self.batch.u, &self.batch.f, None);
        let lb = self.batch.f.iter().sum::<f64>() / self.batch.f.len() as f64;
        let (g_a, g_p) = manifold::unpack(&self.g, d);
        let sigma = self.q.covariance_mat();
        let nat_mu = manifold::mat_vec(&sigma, &g_a);
        let p = self.q.precision_mat().clone();
        let e = match &self.prev_precision {
            Some(prev) => manifold::transport(&p, prev),
            None => None,
        };
        let omega = self.settings.momentum;
        for i in 0..d {
            self.m_mu[i] = omega * self.m_mu[i] + (1.0 - omega) * nat_mu[i];
        }
        manifold::momentum(&mut self.m_p, e.as_ref(), &g_p, omega);
        let beta = self.settings.schedule().at(t);
        let mean: Vec<f64> = (0..d)
            .map(|i| self.q.mean()[i] + beta * self.m_mu[i])
            .collect();
        let mut b = beta;
        let mut new_p = None;
        for _ in 0..=MAX_HALVINGS {
            let xi = Mat::from_fn(d, d, |i, j| b * self.m_p[(i, j)]);
            let cand = manifold::retract(&p, &sigma, &xi);
            if cholesky_lower(&cand).is_some() {
                new_p = Some(cand);
                break;
            }
            b *= 0.5;
        }
        let p_next = new_p.unwrap_or_else(|| {
            self.skipped += 1;
            p.clone()
        });
        let row: Vec<f64> = (0..d * d).map(|k| p_next[(k / d, k % d)]).collect();
        match FullGaussian::from_precision(&mean, &row) {
            Some(q) if mean.iter().all(|m| m.is_finite()) => {
                self.prev_precision = Some(p);
                self.q = q;
            }
            _ => self.skipped += 1,
        }
        Ok(lb)
    }

    fn skipped(&self) -> usize {
        self.skipped
    }
}

/// Fits q by EMGVB with the common exit rule (`survey_vi.md` §1), returning the kept iterate.
/// Only values of L are used. Errors: as [`super::ivon::fit_ivon`], plus
/// [`ViError::Unsuitable`] for d > [`manifold::MANIFOLD_MAX_DIM`].
pub fn fit_emgvb(
    density: &dyn LogDensity,
    init: &[f64],
    settings: &ManifoldSettings,
    progress: &mut dyn FnMut(Progress) -> Control,
) -> Result<GaussianFit, ViError> {
    settings.validate(density.dim(), init)?;
    let state = Emgvb::new(init, settings)?;
    manifold::run(density, init, state, settings, progress)
}
