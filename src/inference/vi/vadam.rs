//! Vadam, variational Adam (Khan et al. 2018; the survey's Algorithm 9), as specified in
//! `specs/survey_vi.md` §11.
//!
//! q = N(μ, diag 1/(N·s + τ₀)). Each step draws K points θ_k = μ + σ⊙ε_k with
//! σ = 1/√(N·s + τ₀) (the non-debiased s), takes the minibatch gradient ĝ_k = ∇f̄_B(θ_k) of the
//! mean loss f̄_B = −(1/M)Σ_B ℓ_i, and updates
//!
//! ```text
//! m ← γ1 m + (1−γ1)(ĝ + λ̃μ)          ĝ = mean_k ĝ_k
//! s ← γ2 s + (1−γ2)·ĝ2               ĝ2 = mean_k ĝ_k²   (the "gradient magnitude")
//! μ ← μ − α·[m/(1−γ1^t)] / (√(s/(1−γ2^t)) + λ̃)
//! ```
//!
//! with λ̃ = τ₀/N; for a non-Gaussian prior λ̃μ and λ̃ become −∇π(μ)/N and diag(−∇²π(μ))/N, and
//! τ₀ becomes diag(−∇²π(μ)) (§2, [`super::obs`]). The curvature is the square of the
//! **minibatch** gradient, which is biased (§2): E_B[ĝ_B²] ≈ (1/M)(1/N)Σ g_i² + (1 − 1/M)ḡ², so
//! the fitted precision depends on M and is not the Hessian — on T2 (81, 29.7) exactly, Vadam
//! gives (41.96, 17.55) at M = 1 (the empirical Fisher, as VOGN) and (23.93, 9.24) at M = N.
//! bayesc's default batch is therefore M = 1, the paper's Fig. 1 setting; `--batch-size`
//! changes it and with it the variances (a fit note says so). Vadam needs no per-example
//! gradients: ĝ_k is one ordinary reverse pass over the batch
//! ([`crate::inference::MinibatchDensity::log_lik_grad_sum`]).

use super::obs::{
    LossDraw, PRIOR_CURVATURE_EVERY, batch_elbo, initial_diag_precision, prior_curvature,
    prior_gradient, settle_steps,
};
use super::reparam::{check_initial_point, run_minibatch};
use super::{Control, GaussianFit, Progress, ViError, ViSettings};
use crate::inference::MinibatchDensity;
use crate::inference::minibatch::MinibatchSettings;
use crate::inference::rng::StreamRng;

/// Settings of Vadam; `Default` gives the code's defaults of §11 [C] except where said.
#[derive(Clone, Debug, PartialEq)]
pub struct VadamSettings {
    /// Exit rule, T_max, seed.
    pub common: ViSettings,
    /// α (default 10⁻³).
    pub lr: f64,
    /// γ1 (default 0.9).
    pub beta1: f64,
    /// γ2 (default 0.999).
    pub beta2: f64,
    /// K, draws per step (default 1).
    pub mc_samples: usize,
    /// p_init, the initial precision of q in every coordinate (default 1), unless
    /// `init_precision` is given.
    pub p_init: f64,
    /// Per-coordinate initial precisions (length d), e.g. the diagonal of the Laplace precision.
    pub init_precision: Option<Vec<f64>>,
}

impl Default for VadamSettings {
    fn default() -> Self {
        VadamSettings {
            common: ViSettings {
                max_iter: 100_000,
                ..ViSettings::default()
            },
            lr: 1e-3,
            beta1: 0.9,
            beta2: 0.999,
            mc_samples: 1,
            p_init: 1.0,
            init_precision: None,
        }
    }
}

/// Default batch size of Vadam when none is asked for: M = 1 (§11 [R], the paper's Fig. 1).
pub const DEFAULT_BATCH_SIZE: usize = 1;

/// The state of a Vadam run.
#[derive(Clone, Debug)]
pub struct Vadam {
    settings: VadamSettings,
    n: f64,
    /// μ (length d).
    pub mean: Vec<f64>,
    /// s, the running squared minibatch gradient (length d; not debiased).
    pub s: Vec<f64>,
    m: Vec<f64>,
    /// diag(−∇²π) at the mean (τ₀ for a Gaussian prior).
    prior_curv: Vec<f64>,
    t: usize,
    draw: LossDraw,
    g: Vec<f64>,
    g2: Vec<f64>,
}

impl Vadam {
    /// A run on `density` from mean `init`. Errors: settings out of range, or the prior part
    /// not finite at `init`.
    pub fn new(
        density: &dyn MinibatchDensity,
        init: &[f64],
        settings: &VadamSettings,
    ) -> Result<Self, ViError> {
        let d = init.len();
        let bad = |m: String| Err(ViError::InvalidSettings(m));
        if !(settings.lr > 0.0 && settings.lr.is_finite()) {
            return bad(format!("lr is {}, but must be positive", settings.lr));
        }
        if !(0.0..1.0).contains(&settings.beta1) || !(0.0..1.0).contains(&settings.beta2) {
            return bad("beta1 and beta2 must lie in [0, 1)".into());
        }
        if settings.mc_samples == 0 {
            return bad("mc_samples must be at least 1".into());
        }
        let n = density.n_obs() as f64;
        let prior_curv = prior_curvature(density, init)?;
        let p0 = initial_diag_precision(settings.init_precision.as_deref(), settings.p_init, d)?;
        // s = (p_init − τ₀)/N, kept positive.
        let s = p0
            .iter()
            .zip(&prior_curv)
            .map(|(p, c)| ((p - c) / n).max(1e-3 * p / n))
            .collect();
        Ok(Vadam {
            settings: settings.clone(),
            n,
            mean: init.to_vec(),
            s,
            m: vec![0.0; d],
            prior_curv,
            t: 0,
            draw: LossDraw::new(d),
            g: vec![0.0; d],
            g2: vec![0.0; d],
        })
    }

    /// The precisions N·s + τ₀ of q (length d).
    pub fn precision(&self) -> Vec<f64> {
        self.s
            .iter()
            .zip(&self.prior_curv)
            .map(|(s, c)| self.n * s + c)
            .collect()
    }

    /// σ = 1/√(N·s + τ₀) (length d).
    pub fn sd(&self) -> Vec<f64> {
        self.precision().iter().map(|p| 1.0 / p.sqrt()).collect()
    }

    /// One step on the batch `rows` (§11 "Update"). Returns the mean over the K draws of the
    /// batch ELBO estimate L̂_B(θ_k) − log q(θ_k).
    pub fn step(
        &mut self,
        density: &dyn MinibatchDensity,
        rows: &[usize],
        rng: &mut StreamRng,
    ) -> Result<f64, ViError> {
        self.t += 1;
        let d = self.mean.len();
        if self.t % PRIOR_CURVATURE_EVERY == 0 {
            self.prior_curv = prior_curvature(density, &self.mean)?;
        }
        let sd = self.sd();
        let k = self.settings.mc_samples;
        self.g.iter_mut().for_each(|x| *x = 0.0);
        self.g2.iter_mut().for_each(|x| *x = 0.0);
        let mut lb = 0.0;
        for _ in 0..k {
            self.draw
                .draw(density, rows, &self.mean, &sd, rng, self.t, false)?;
            lb += batch_elbo(density, &self.draw, rows.len())? / k as f64;
            for i in 0..d {
                let g = self.draw.g_mean[i];
                self.g[i] += g / k as f64;
                self.g2[i] += g * g / k as f64;
            }
        }
        let prior_g = prior_gradient(density, &self.mean)?;
        let (b1, b2) = (self.settings.beta1, self.settings.beta2);
        let t = self.t.min(i32::MAX as usize) as i32;
        let (c1, c2) = (1.0 - b1.powi(t), 1.0 - b2.powi(t));
        for i in 0..d {
            let lambda = self.prior_curv[i] / self.n;
            self.m[i] = b1 * self.m[i] + (1.0 - b1) * (self.g[i] - prior_g[i] / self.n);
            self.s[i] = b2 * self.s[i] + (1.0 - b2) * self.g2[i];
            self.mean[i] -=
                self.settings.lr * (self.m[i] / c1) / ((self.s[i] / c2).sqrt() + lambda);
        }
        Ok(lb)
    }
}

/// Fits q by Vadam on batches of M rows (default [`DEFAULT_BATCH_SIZE`]) with the per-epoch
/// exit rule of [`run_minibatch`], returning the averaged iterate. The result carries a note
/// that its variances depend on M (§11 "Failure modes"). The rule cannot stop the run before
/// s has settled: `minibatch.min_iterations` is raised to [`settle_steps`]`(γ2)` (3911 steps at
/// the default γ2; [`super::obs::START_WEIGHT`] has the measurement).
///
/// Errors: [`ViError::InvalidSettings`], [`ViError::InitialPoint`],
/// [`ViError::NonFiniteDensity`] after 10 failed redraws, [`ViError::Density`].
/// Reproducible: draws from stream 1 of the seed, batches from stream 7.
pub fn fit_vadam(
    density: &dyn MinibatchDensity,
    init: &[f64],
    settings: &VadamSettings,
    minibatch: &MinibatchSettings,
    progress: &mut dyn FnMut(Progress) -> Control,
) -> Result<GaussianFit, ViError> {
    settings.common.validate(density.dim(), init)?;
    check_initial_point(density, init)?;
    let mut state = Vadam::new(density, init, settings)?;
    let mut ms = minibatch.clone();
    ms.min_iterations = ms.min_iterations.max(settle_steps(settings.beta2));
    let mut fit = run_minibatch(
        &settings.common,
        density,
        &ms,
        &mut state,
        |s| (s.mean.clone(), s.sd()),
        |s, rows, rng, _| s.step(density, rows, rng),
        progress,
    )?;
    fit.notes.push(format!(
        "Vadam's variances come from the squared minibatch gradient and depend on the batch \
         size (here M = {}): its precision is the empirical Fisher at M = 1 and falls towards \
         the prior's as M grows, not the posterior's (survey_vi.md §11); for mean-field variances \
         use ivon or ngvi --diagonal",
        minibatch.batch_size
    ));
    if let Some((start, end)) = fit.worsened() {
        // its fixed point is not the ELBO's optimum (`fit::own_fixed_point`)
        fit.notes.push(format!(
            "the full-data ELBO ended at {end:.3}, below the {start:.3} of the initial \
             approximation: at M = {} Vadam's sds at its own fixed point are not the ELBO's \
             optimum (for the ELBO's sds use ivon or qbvi)",
            minibatch.batch_size
        ));
    }
    Ok(fit)
}
