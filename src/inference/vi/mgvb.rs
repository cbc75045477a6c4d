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

//!
//! The iteration itself is shared with EMGVB: [`manifold::ManifoldState`] with
//! `Geometry::Covariance`.

use super::manifold::{self, Geometry, ManifoldSettings, ManifoldState};
use super::{Control, GaussianFit, Progress, ViError};
use crate::inference::LogDensity;

/// Fits q by MGVB with the common exit rule (`survey_vi.md` §1), returning the kept iterate.
/// Only values of L are used. Errors: as [`super::emgvb::fit_emgvb`].
pub fn fit_mgvb(
    density: &dyn LogDensity,
    init: &[f64],
    settings: &ManifoldSettings,
    progress: &mut dyn FnMut(Progress) -> Control,
) -> Result<GaussianFit, ViError> {
    settings.validate(density.dim(), init)?;
    let state = ManifoldState::new(init, settings, Geometry::Covariance)?;
    manifold::run(density, init, state, settings, progress)
}
