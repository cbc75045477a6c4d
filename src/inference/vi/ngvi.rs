//! NGVI, natural-gradient Gaussian VI with reparameterised gradients and Stein's identity
//! (Khan & Nielsen 2018; the survey's §7.2), as specified in `specs/survey_vi.md` §9.
//!
//! q = N(μ, P⁻¹), full covariance or diagonal. From S draws ζ_s = μ + Σ^{1/2}ε_s:
//! ĝ_μ = (1/S)Σ∇L(ζ_s) and, by Stein's identity E[P(ζ−μ)∇Lᵀ] = E[∇²L], the precision direction
//! G = −P − sym((1/S)Σ_s P(ζ_s−μ)∇L(ζ_s)ᵀ) = −2Ĝ_Σ (§6, §9), so that P_{t+1} = P_t + βG is
//! (1−β)P_t − β·sym(mean P(ζ−μ)∇Lᵀ). That plain step is taken when it is positive definite;
//! otherwise the guard of `qbvi.md` §8 — the retraction P + βG + (β²/2)GΣG with halvings —
//! (always retracting biased P12 on T2 by +1.2 % through the ½β²GΣG of a noisy G); then
//! μ_{t+1} = μ_t + β·P_{t+1}⁻¹ĝ_μ (the μ-step with Σ_{t+1}, §9 "Update"). This is exactly the
//! step of the shared Gaussian families ([`super::Family`]) that QBVI takes with its score
//! estimates; NGVI feeds it gradient-based ones. Needs ∇L. Defaults [X]: β = 0.05, S = 10.
//! Departure [X]: the diagonal family's mean step is limited to a trust region of
//! [`NgviSettings::trust_region`] sds of q per coordinate (default 0.5, [`super::MEAN_TRUST_REGION`]).

use super::estimator::stein_directions;
use super::reparam::check_initial_point;
use super::{
    Control, Covariance, DiagonalGaussian, Family, FullGaussian, GaussianFit, Progress, RunRecord,
    TrustRecord, ViError, ViSettings,
};
use crate::inference::LogDensity;
use crate::inference::rng::{StreamRng, stream};
use rand::RngExt;
use rand_distr::StandardNormal;

/// Halvings of β tried by the positive-definiteness guard (`qbvi.md` §8.3).
const MAX_HALVINGS: usize = 10;

/// Settings of NGVI; `Default` gives the §9 [X] defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct NgviSettings {
    /// Exit rule, T_max, seed.
    pub common: ViSettings,
    /// Full or diagonal q (default full).
    pub covariance: Covariance,
    /// β in (0, 1) (default 0.05).
    pub step_size: f64,
    /// S, draws per iteration (default 10).
    pub mc_samples: usize,
    /// Initial precision (d×d row-major; the diagonal family uses its diagonal), e.g. the
    /// Laplace precision; default `None`: P₀ = I.
    pub init_precision: Option<Vec<f64>>,
    /// κ, the trust region of the diagonal family's mean step in sds of q per coordinate ([X],
    /// a departure from §9, whose step is unbounded: from P₀ = I a full-data gradient of order
    /// N moved a digits-BNN weight 24 sd in the first step and the fit ended far below its
    /// start; see [`super::MEAN_TRUST_REGION`]). Default 0.5; `f64::INFINITY` turns it off.
    /// The full family takes none.
    pub trust_region: f64,
}

impl Default for NgviSettings {
    fn default() -> Self {
        NgviSettings {
            common: ViSettings::default(),
            covariance: Covariance::Full,
            step_size: 0.05,
            mc_samples: 10,
            init_precision: None,
            trust_region: super::MEAN_TRUST_REGION,
        }
    }
}

/// The state of an NGVI run on family F ([`FullGaussian`] or [`DiagonalGaussian`]).
#[derive(Clone, Debug)]
pub(crate) struct State<F: Family> {
    q: F,
    beta: f64,
    n: usize,
    skipped: usize,
    eps: Vec<f64>,
    zeta: Vec<f64>,
    log_q: Vec<f64>,
    u: Vec<f64>,
    grad: Vec<f64>,
    g: Vec<f64>,
    kappa: f64,
    old_mean: Vec<f64>,
    limits: TrustRecord,
}

impl<F: Family> State<F> {
    fn from_q(q: F, settings: &NgviSettings) -> Result<Self, ViError> {
        if !(settings.step_size > 0.0 && settings.step_size < 1.0) {
            return Err(ViError::InvalidSettings(format!(
                "step size is {}, but must lie in (0, 1)",
                settings.step_size
            )));
        }
        if settings.trust_region.is_nan() || settings.trust_region <= 0.0 {
            return Err(ViError::InvalidSettings(format!(
                "trust_region is {}, but must be positive (infinity turns it off)",
                settings.trust_region
            )));
        }
        if settings.mc_samples == 0 {
            return Err(ViError::InvalidSettings(
                "mc_samples must be at least 1".into(),
            ));
        }
        let (d, k, n) = (q.dim(), q.n_directions(), settings.mc_samples);
        Ok(State {
            q,
            beta: settings.step_size,
            n,
            skipped: 0,
            eps: vec![0.0; n * d],
            zeta: vec![0.0; n * d],
            log_q: vec![0.0; n],
            u: vec![0.0; n * k],
            grad: vec![0.0; n * d],
            g: vec![0.0; k],
            kappa: settings.trust_region,
            old_mean: vec![0.0; d],
            limits: TrustRecord::default(),
        })
    }

    /// One iteration: S reparameterised draws, the Stein estimate and the guarded step.
    /// Returns the ELBO estimate mean(L − log q) at the q that drew them.
    pub(crate) fn step(
        &mut self,
        density: &dyn LogDensity,
        rng: &mut StreamRng,
        t: usize,
    ) -> Result<f64, ViError> {
        let (d, n) = (self.q.dim(), self.n);
        let mut last = String::new();
        'redraw: for _ in 0..super::reparam::MAX_REDRAWS {
            for e in self.eps.iter_mut() {
                *e = rng.sample(StandardNormal);
            }
            self.q
                .prepare(&self.eps, &mut self.zeta, &mut self.log_q, &mut self.u);
            let mut lb = 0.0;
            for s in 0..n {
                let z = &self.zeta[s * d..(s + 1) * d];
                let grad = &mut self.grad[s * d..(s + 1) * d];
                match density.log_density_grad(z, grad) {
                    Ok(v) if v.is_finite() && grad.iter().all(|g| g.is_finite()) => {
                        lb += (v - self.log_q[s]) / n as f64;
                    }
                    Ok(v) => {
                        last = format!("log density {v} or its gradient is not finite");
                        continue 'redraw;
                    }
                    Err(e) if e.recoverable => {
                        last = e.to_string();
                        continue 'redraw;
                    }
                    Err(e) => return Err(ViError::Density(e)),
                }
            }
            stein_directions(&self.u, &self.grad, d, &mut self.g);
            // G_B = −P − sym(mean v∇Lᵀ).
            self.subtract_precision();
            self.old_mean.copy_from_slice(self.q.mean());
            if self.q.step_guarded(&self.g, self.beta, MAX_HALVINGS) {
                let limited = self.q.limit_mean_step(&self.old_mean, self.kappa);
                self.limits.observe(limited);
            } else {
                self.skipped += 1;
            }
            return Ok(lb);
        }
        Err(ViError::NonFiniteDensity {
            iteration: t,
            attempts: super::reparam::MAX_REDRAWS,
            last,
        })
    }

    fn subtract_precision(&mut self) {
        let d = self.q.dim();
        let p = self.q.precision_packed();
        for (g, p) in self.g[d..].iter_mut().zip(p) {
            *g -= p;
        }
    }
}

fn full_state(init: &[f64], settings: &NgviSettings) -> Result<State<FullGaussian>, ViError> {
    let q = match &settings.init_precision {
        Some(p) => FullGaussian::from_precision(init, p).ok_or_else(|| {
            ViError::InvalidSettings("init_precision is not positive definite".into())
        })?,
        None => FullGaussian::isotropic(init, 1.0),
    };
    State::from_q(q, settings)
}

fn diagonal_state(
    init: &[f64],
    settings: &NgviSettings,
) -> Result<State<DiagonalGaussian>, ViError> {
    let d = init.len();
    let q = match &settings.init_precision {
        Some(p) => DiagonalGaussian::from_precision(init, p).ok_or_else(|| {
            ViError::InvalidSettings("init_precision has a non-positive diagonal".into())
        })?,
        None => DiagonalGaussian::from_precision(init, &identity(d))
            .expect("the identity has a positive diagonal"),
    };
    State::from_q(q, settings)
}

/// An NGVI run for step-by-step use (tests, experiments): the family of
/// [`NgviSettings::covariance`], started at `init` with P₀ from the settings.
#[derive(Clone, Debug)]
pub struct Ngvi(Inner);

#[derive(Clone, Debug)]
enum Inner {
    Full(State<FullGaussian>),
    Diagonal(State<DiagonalGaussian>),
}

impl Ngvi {
    /// A run from mean `init`. Errors: settings out of range.
    pub fn new(init: &[f64], settings: &NgviSettings) -> Result<Self, ViError> {
        Ok(Ngvi(match settings.covariance {
            Covariance::Full => Inner::Full(full_state(init, settings)?),
            Covariance::Diagonal => Inner::Diagonal(diagonal_state(init, settings)?),
        }))
    }

    /// One iteration (see the module docs); returns the ELBO estimate at the q that drew it.
    pub fn step(
        &mut self,
        density: &dyn LogDensity,
        rng: &mut StreamRng,
        t: usize,
    ) -> Result<f64, ViError> {
        match &mut self.0 {
            Inner::Full(s) => s.step(density, rng, t),
            Inner::Diagonal(s) => s.step(density, rng, t),
        }
    }

    /// μ (length d).
    pub fn mean(&self) -> Vec<f64> {
        match &self.0 {
            Inner::Full(s) => s.q.mean().to_vec(),
            Inner::Diagonal(s) => s.q.mean().to_vec(),
        }
    }

    /// P: d×d row-major (full) or the d precisions (diagonal).
    pub fn precision(&self) -> Vec<f64> {
        match &self.0 {
            Inner::Full(s) => s.q.precision_row_major(),
            Inner::Diagonal(s) => s.q.precision().to_vec(),
        }
    }
}

fn identity(d: usize) -> Vec<f64> {
    (0..d * d)
        .map(|k| if k / d == k % d { 1.0 } else { 0.0 })
        .collect()
}

fn run<F: Family>(
    density: &dyn LogDensity,
    mut state: State<F>,
    settings: &NgviSettings,
    progress: &mut dyn FnMut(Progress) -> Control,
) -> Result<(F, RunRecord), ViError> {
    let mut rng = stream(settings.common.seed, 1);
    let mut tracker = settings.common.tracker::<F>();
    for t in 1..=settings.common.max_iter {
        let before = state.q.clone();
        tracker.watch(t, before.mean());
        let lb = state.step(density, &mut rng, t)?;
        if tracker.observe(t, lb, &before, progress).is_some() {
            break;
        }
    }
    tracker.record.skipped_steps = state.skipped;
    if let Some(note) = state.limits.note(state.kappa) {
        tracker.record.notes.push(note);
    }
    Ok(tracker.finish(state.q))
}

/// Fits q by NGVI with the common exit rule (`survey_vi.md` §1), returning the kept iterate.
/// Arguments and errors as [`super::ivon::fit_ivon`]; draws from stream 1 of the seed.
pub fn fit_ngvi(
    density: &dyn LogDensity,
    init: &[f64],
    settings: &NgviSettings,
    progress: &mut dyn FnMut(Progress) -> Control,
) -> Result<GaussianFit, ViError> {
    settings.common.validate(density.dim(), init)?;
    check_initial_point(density, init)?;
    match settings.covariance {
        Covariance::Full => {
            let (q, record) = run(density, full_state(init, settings)?, settings, progress)?;
            Ok(GaussianFit::full(&q, record))
        }
        Covariance::Diagonal => {
            let (q, record) = run(density, diagonal_state(init, settings)?, settings, progress)?;
            Ok(GaussianFit::diagonal(
                q.mean().to_vec(),
                q.precision().to_vec(),
                record,
            ))
        }
    }
}
