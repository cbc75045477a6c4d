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

//!
//! The iteration itself is shared with MGVB: [`manifold::ManifoldState`] with
//! `Geometry::Precision`.

use super::manifold::{self, Geometry, ManifoldSettings, ManifoldState};
use super::{Control, GaussianFit, Progress, ViError};
use crate::inference::LogDensity;

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
    let state = ManifoldState::new(init, settings, Geometry::Precision)?;
    manifold::run(density, init, state, settings, progress)
}
