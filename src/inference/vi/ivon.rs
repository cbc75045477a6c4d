//! IVON, the improved variational online Newton method (Shen, Daheim et al. 2024), as specified
//! in `specs/survey_vi.md` §17.
//!
//! q = N(m, diag σ²) with σ = 1/√(λ(h + δ)). Each step draws K points from q, takes the
//! gradient ĝ of the loss there and Price's estimate ĥ = ĝ⊙(θ − m)/σ² of the diagonal
//! Hessian, averages them into g (momentum β₁) and h (β₂, with the positivity-preserving
//! correction ½(1−β₂)²(h − ĥ)²/(h + δ) of Lin et al. 2020), and moves m by the debiased g
//! over h + δ (§17 "Update").
//!
//! bayesc's loss is the negative full log joint over λ, f(ζ) = −L(ζ)/λ: the prior and the
//! Jacobian are inside L, so the weight decay δ defaults to 0 (§2, "A non-Gaussian prior with
//! mean-loss methods"). The fitted precision is λ(h + δ) ≈ E_q[diag ∇²(−L)], which does not
//! depend on λ except through the initial σ; by default λ = 1 and h starts at the diagonal of the
//! Laplace precision when the driver found one ([X]; the spec's default h₀ = 1 with λ = N
//! needs N, which a `LogDensity` does not expose). Full batch: minibatching (§2) waits for the
//! minibatch density trait.
//!
//! The fixed point (§17) is the mean-field VI optimum up to O(1 − β₂).

use super::reparam::{ElboProbe, GradDraw, check_initial_point, run_probed};
use super::{Control, GaussianFit, Progress, ViError, ViSettings};
use crate::inference::LogDensity;
use crate::inference::rng::StreamRng;

/// Settings of IVON; `Default` gives bayesc's [X] defaults of §17.
#[derive(Clone, Debug, PartialEq)]
pub struct IvonSettings {
    /// Exit rule, T_max, seed.
    pub common: ViSettings,
    /// α, the learning rate (default 0.1, the README's suggestion).
    pub lr: f64,
    /// β₁, gradient momentum (default 0.9).
    pub beta1: f64,
    /// β₂, Hessian averaging (default 0.999: bayesc's choice for small statistical models).
    pub beta2: f64,
    /// δ, the weight decay; the prior N(0, (λδ)⁻¹I) it implies comes on top of the model's
    /// (default 0: the model's prior is in L).
    pub weight_decay: f64,
    /// λ, the effective sample size (default 1 with the loss −L; see the module docs).
    pub ess: f64,
    /// h₀, the initial Hessian estimate in every coordinate (default 1), unless
    /// `init_hessian` is given.
    pub h0: f64,
    /// Per-coordinate initial h (length d), e.g. the diagonal of the Laplace precision over λ.
    pub init_hessian: Option<Vec<f64>>,
    /// K, draws per step (default 1).
    pub mc_samples: usize,
    /// r, the clip on the mean step's direction (default ∞).
    pub clip: f64,
    /// Rescale α by (h₀ + δ) with the scalar `h0` (the code's `rescale_lr`, default true).
    pub rescale_lr: bool,
}

impl Default for IvonSettings {
    fn default() -> Self {
        IvonSettings {
            common: ViSettings {
                min_iter: 3000,
                ..ViSettings::default()
            },
            lr: 0.1,
            beta1: 0.9,
            beta2: 0.999,
            weight_decay: 0.0,
            ess: 1.0,
            h0: 1.0,
            init_hessian: None,
            mc_samples: 1,
            clip: f64::INFINITY,
            rescale_lr: true,
        }
    }
}

/// h_new = β₂h + (1−β₂)ĥ + ½(1−β₂)²(h − ĥ)²/(h + δ) (§17). With u = h + δ > 0, h_new + δ =
/// ½u + ½(u + (1−β₂)(ĥ − h))²/u > 0 for every ĥ ("Positivity", the retraction of Lin et al.
/// 2020). Test vector: h = 4, ĥ = −1.25, β₂ = 0.1, δ = 0 gives 2.065703.
pub fn hessian_update(h: f64, h_hat: f64, beta2: f64, delta: f64) -> f64 {
    let a = 1.0 - beta2;
    beta2 * h + a * h_hat + 0.5 * a * a * (h - h_hat) * (h - h_hat) / (h + delta)
}

/// The state of an IVON run: m, the momenta g and h, and the step count.
#[derive(Clone, Debug)]
pub struct Ivon {
    settings: IvonSettings,
    /// m, the mean (length d).
    pub mean: Vec<f64>,
    /// h, the running Hessian estimate (length d).
    pub hess: Vec<f64>,
    g: Vec<f64>,
    t: usize,
    draw: GradDraw,
    g_hat: Vec<f64>,
    h_hat: Vec<f64>,
}

impl Ivon {
    /// A run from mean `init` (length d) with `settings`. Errors: settings out of range.
    pub fn new(init: &[f64], settings: &IvonSettings) -> Result<Self, ViError> {
        let d = init.len();
        let bad = |m: String| Err(ViError::InvalidSettings(m));
        if !(settings.lr > 0.0 && settings.lr.is_finite()) {
            return bad(format!("lr is {}, but must be positive", settings.lr));
        }
        if !(0.0..1.0).contains(&settings.beta1) || !(0.0..1.0).contains(&settings.beta2) {
            return bad("beta1 and beta2 must lie in [0, 1)".into());
        }
        if !(settings.ess > 0.0) || !(settings.weight_decay >= 0.0) {
            return bad("ess must be positive and weight_decay non-negative".into());
        }
        if settings.mc_samples == 0 {
            return bad("mc_samples must be at least 1".into());
        }
        let h0 = match &settings.init_hessian {
            Some(h) if h.len() == d => h.clone(),
            Some(h) => return bad(format!("init_hessian has length {}, expected {d}", h.len())),
            None => vec![settings.h0; d],
        };
        if h0
            .iter()
            .any(|h| !(h + settings.weight_decay > 0.0) || !h.is_finite())
        {
            return bad("the initial h + δ must be positive and finite".into());
        }
        Ok(Ivon {
            settings: settings.clone(),
            mean: init.to_vec(),
            hess: h0,
            g: vec![0.0; d],
            t: 0,
            draw: GradDraw::new(d),
            g_hat: vec![0.0; d],
            h_hat: vec![0.0; d],
        })
    }

    /// σ = 1/√(λ(h + δ)) (length d).
    pub fn sd(&self) -> Vec<f64> {
        self.precision().iter().map(|p| 1.0 / p.sqrt()).collect()
    }

    /// Writes μ and σ = 1/√(λ(h + δ)) (length d each) without allocating: what the full-batch
    /// loop averages.
    pub(crate) fn mean_sd_into(&self, mean: &mut [f64], sd: &mut [f64]) {
        let s = &self.settings;
        mean.copy_from_slice(&self.mean);
        for (o, h) in sd.iter_mut().zip(&self.hess) {
            *o = 1.0 / (s.ess * (h + s.weight_decay)).sqrt();
        }
    }

    /// The precisions λ(h + δ) of q (length d).
    pub fn precision(&self) -> Vec<f64> {
        let s = &self.settings;
        self.hess
            .iter()
            .map(|h| s.ess * (h + s.weight_decay))
            .collect()
    }

    /// One IVON step (§17 "Update"): K draws at the current q, then the updates of g, h and m.
    /// Returns the ELBO estimate (1/K)Σ[L(θ_k) − log q(θ_k)] at the q that drew them.
    pub fn step(&mut self, density: &dyn LogDensity, rng: &mut StreamRng) -> Result<f64, ViError> {
        let s = &self.settings;
        let d = self.mean.len();
        let k = s.mc_samples;
        let (lambda, delta) = (s.ess, s.weight_decay);
        self.t += 1;
        let sd = self.sd();
        self.g_hat.iter_mut().for_each(|x| *x = 0.0);
        self.h_hat.iter_mut().for_each(|x| *x = 0.0);
        let mut lb = 0.0;
        for _ in 0..k {
            self.draw.draw(density, &self.mean, &sd, rng, self.t)?;
            lb += self.draw.value - self.draw.log_q;
            for i in 0..d {
                // ĝ = ∇f, f = −L/λ; Price: ĝ⊙(θ − m)/σ² = ĝ⊙ε/σ.
                let gi = -self.draw.grad[i] / lambda;
                self.g_hat[i] += gi / k as f64;
                self.h_hat[i] += gi * self.draw.eps[i] / sd[i] / k as f64;
            }
        }
        let (b1, b2) = (s.beta1, s.beta2);
        let debias = 1.0 - b1.powi(self.t.min(i32::MAX as usize) as i32);
        for i in 0..d {
            self.g[i] = b1 * self.g[i] + (1.0 - b1) * self.g_hat[i];
            self.hess[i] = hessian_update(self.hess[i], self.h_hat[i], b2, delta);
            let g_bar = self.g[i] / debias;
            let alpha = if s.rescale_lr {
                // The scalar h₀ of the code, also when h starts per coordinate: the first step
                // is then α·ḡ/(h + δ)·(h₀ + δ), a fraction α of a Newton step when h ≈ ∇²f.
                s.lr * (s.h0 + delta)
            } else {
                s.lr
            };
            let dir =
                ((g_bar + delta * self.mean[i]) / (self.hess[i] + delta)).clamp(-s.clip, s.clip);
            self.mean[i] -= alpha * dir;
        }
        Ok(lb / k as f64)
    }
}

/// Fits q by IVON with the common exit rule (`survey_vi.md` §1), returning the kept iterate.
///
/// - `density`: L(ζ), with gradients; `init`: the initial mean (length d), L finite there.
/// - `progress`: called after every iteration; [`Control::Stop`] ends the fit (interrupted).
///
/// Errors: [`ViError::InvalidSettings`], [`ViError::InitialPoint`],
/// [`ViError::NonFiniteDensity`] after 10 failed redraws, [`ViError::Density`].
/// Reproducible: the draws come from stream 1 of `settings.common.seed`.
pub fn fit_ivon(
    density: &dyn LogDensity,
    init: &[f64],
    settings: &IvonSettings,
    progress: &mut dyn FnMut(Progress) -> Control,
) -> Result<GaussianFit, ViError> {
    settings.common.validate(density.dim(), init)?;
    check_initial_point(density, init)?;
    let mut state = Ivon::new(init, settings)?;
    let mut probe = ElboProbe::new(init.len(), settings.common.seed);
    run_probed(
        &settings.common,
        &mut state,
        init.len(),
        Ivon::mean_sd_into,
        |s| probe.estimate(density, &s.mean, &s.sd()),
        |s, rng, _| s.step(density, rng).map(|_| ()),
        progress,
    )
}

/// IVON on batches of M rows (`survey_vi.md` §2): each step sees the unbiased batch estimate
/// L̂_B (one batch for all its draws), and the exit rule runs once per epoch on the full-data
/// ELBO ([`super::reparam::run_minibatch`]). Returns the average of the last W + 1 iterates;
/// `elbo_trace` holds the batch estimates. Errors: as [`fit_ivon`], plus a batch size outside
/// 1..=N.
pub fn fit_ivon_minibatch(
    density: &dyn crate::inference::MinibatchDensity,
    init: &[f64],
    settings: &IvonSettings,
    minibatch: &crate::inference::minibatch::MinibatchSettings,
    progress: &mut dyn FnMut(Progress) -> Control,
) -> Result<GaussianFit, ViError> {
    settings.common.validate(density.dim(), init)?;
    check_initial_point(density, init)?;
    let mut state = Ivon::new(init, settings)?;
    super::reparam::run_minibatch(
        &settings.common,
        density,
        minibatch,
        &mut state,
        |s| (s.mean.clone(), s.sd()),
        |s, rows, rng, _| {
            let view = density.batch(rows).map_err(ViError::Density)?;
            s.step(view.as_ref(), rng)
        },
        progress,
    )
}

#[cfg(test)]
mod tests {
    use super::hessian_update;

    #[test]
    fn hessian_update_matches_the_spec_vector_and_stays_positive() {
        // §17 "Deterministic".
        assert!((hessian_update(4.0, -1.25, 0.1, 0.0) - 2.065703).abs() < 1e-6);
        for h_hat in [-1e6, -10.0, 0.0, 3.0, 1e6] {
            assert!(hessian_update(0.5, h_hat, 0.3, 1e-3) + 1e-3 > 0.0);
        }
    }
}
