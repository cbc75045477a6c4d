//! MGVB, manifold Gaussian variational Bayes (Tran, Nguyen & Nguyen 2021; the survey's
//! Algorithm 12), as specified in `specs/survey_vi.md` §14.
//!
//! q = N(μ, Σ), full covariance stored as Σ. Per iteration, S draws give f_s = L − log q and
//! a_s = P(θ_s − μ); the scores u_μ = a_s and U_Σ = −½P + ½a_s a_sᵀ with the lagged
//! per-component control variates (`qbvi.md` §5.3) give Ĝ_μ and Ĝ_Σ; the approximate natural
//! gradients are ∇̃_μ = ΣĜ_μ and ∇̃_Σ = Σ·sym(Ĝ_Σ)·Σ — MGVB's Fisher approximation
//! F ≈ Σ⁻¹ ⊗ Σ⁻¹ drops the factor 2 of the exact one, so it converges more slowly than EMGVB
//! (§14 failure modes). Momentum with the transport E = (Σ_t Σ_{t−1}⁻¹)^{1/2}, then
//! Σ ← R_Σ(βM_Σ) = sym(Σ + ξ + ½ξΣ⁻¹ξ) with up to 5 halvings and μ ← μ + βM_μ. Needs values of
//! L only. The gradient clipping of the authors' code is not implemented.

use faer::Mat;

use super::manifold::{self, MAX_HALVINGS, ManifoldSettings, ManifoldStep};
use super::{
    Batch, Control, ControlVariates, Family, FullGaussian, GaussianFit, Progress, ViError,
    cholesky_lower,
};
use crate::inference::LogDensity;
use crate::inference::rng::StreamRng;

/// The state of an MGVB run.
#[derive(Clone, Debug)]
pub struct Mgvb {
    settings: ManifoldSettings,
    q: FullGaussian,
    prev_covariance: Option<Mat<f64>>,
    m_mu: Vec<f64>,
    m_sigma: Mat<f64>,
    cv: ControlVariates,
    batch: Batch,
    g: Vec<f64>,
    skipped: usize,
}

impl Mgvb {
    /// A run from mean `init`. Errors: settings out of range, or d too large
    /// ([`ViError::Unsuitable`]).
    pub fn new(init: &[f64], settings: &ManifoldSettings) -> Result<Self, ViError> {
        let d = init.len();
        settings.validate(d, init)?;
        let q = settings.initial_q(init)?;
        let k = q.n_directions();
        Ok(Mgvb {
            settings: settings.clone(),
            q,
            prev_covariance: None,
            m_mu: vec![0.0; d],
            m_sigma: Mat::zeros(d, d),
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

impl ManifoldStep for Mgvb {
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
        self.cv.gradient(&self.batch.u, &self.batch.f, &mut self.g);
        self.cv.estimate(&self.batch.u, &self.batch.f, None);
        let lb = self.batch.f.iter().sum::<f64>() / self.batch.f.len() as f64;
        // The stacked directions are (a, P − aaᵀ): Ĝ_Σ = −½·Ĝ_B since U_Σ = −½(P − aaᵀ).
        let (g_a, g_b) = manifold::unpack(&self.g, d);
        let sigma = self.q.covariance_mat();
        let p = self.q.precision_mat().clone();
        let g_sigma = Mat::from_fn(d, d, |i, j| -0.5 * g_b[(i, j)]);
        let nat_mu = manifold::mat_vec(&sigma, &g_a);
        let nat_sigma = &sigma * g_sigma * &sigma;
        let e = match &self.prev_covariance {
            Some(prev) => manifold::transport(&sigma, prev),
            None => None,
        };
        let omega = self.settings.momentum;
        for i in 0..d {
            self.m_mu[i] = omega * self.m_mu[i] + (1.0 - omega) * nat_mu[i];
        }
        manifold::momentum(&mut self.m_sigma, e.as_ref(), &nat_sigma, omega);
        let beta = self.settings.schedule().at(t);
        let mean: Vec<f64> = (0..d)
            .map(|i| self.q.mean()[i] + beta * self.m_mu[i])
            .collect();
        let mut b = beta;
        let mut new_precision = None;
        for _ in 0..=MAX_HALVINGS {
            let xi = Mat::from_fn(d, d, |i, j| b * self.m_sigma[(i, j)]);
            let cand = manifold::retract(&sigma, &p, &xi);
            if cholesky_lower(&cand).is_some()
                && let Some(pc) = manifold::sym_apply(&cand, |l| 1.0 / l)
            {
                new_precision = Some(pc);
                break;
            }
            b *= 0.5;
        }
        let p_next = new_precision.unwrap_or_else(|| {
            self.skipped += 1;
            p.clone()
        });
        let row: Vec<f64> = (0..d * d).map(|k| p_next[(k / d, k % d)]).collect();
        match FullGaussian::from_precision(&mean, &row) {
            Some(q) if mean.iter().all(|m| m.is_finite()) => {
                self.prev_covariance = Some(sigma);
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

/// Fits q by MGVB with the common exit rule (`survey_vi.md` §1), returning the kept iterate.
/// Only values of L are used. Errors: as [`super::emgvb::fit_emgvb`].
pub fn fit_mgvb(
    density: &dyn LogDensity,
    init: &[f64],
    settings: &ManifoldSettings,
    progress: &mut dyn FnMut(Progress) -> Control,
) -> Result<GaussianFit, ViError> {
    settings.validate(density.dim(), init)?;
    let state = Mgvb::new(init, settings)?;
    manifold::run(density, init, state, settings, progress)
}
