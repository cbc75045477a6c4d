//! Variational Laplace (Unlu & Aitchison 2021), as specified in `specs/survey_vi.md` §16.
//!
//! q = N(μ, diag σ²). The objective (§16 "Objective") replaces E_q[L] by its second-order
//! expansion at μ, L(μ) − ½Σ_λ σ_λ²·C_λ(μ) with C_λ a positive curvature of −L in coordinate λ,
//! plus the entropy Σ_λ log σ_λ + (d/2)(1 + log 2π). bayesc's L already holds the prior and the
//! Jacobian, so the paper's KL(Q‖P) is inside the expansion (exact for a Gaussian prior).
//!
//! Departures from §16, each marked [X]:
//! - **Curvature.** The paper's C is the sampled-label Fisher Σ_j g̃_jλ², which needs the
//!   likelihood to be simulated at μ; a [`LogDensity`] only evaluates L. bayesc uses the
//!   diagonal of the Hessian of −L instead: exact by central differences of the reverse-mode
//!   gradient (2d gradients, [`Curvature::Exact`]) for d ≤ [`EXACT_CURVATURE_MAX_DIM`], and
//!   Hutchinson's estimate E_v[v ⊙ (−∇²L)v] with Rademacher v and finite-difference
//!   Hessian-vector products (2 gradients per probe, [`Curvature::Hutchinson`]) above. For a
//!   GLM with canonical link (T2, T4, labour) the Hessian of −ℓ *is* the Fisher, so the fixed
//!   point is the paper's. On a non-convex likelihood (a neural network) the diagonal Hessian
//!   can be negative where the Fisher is not (§16 "Failure modes": σ² → ∞); such coordinates
//!   are floored at [`VlaplaceSettings::min_curvature`] and the fit's notes say how many.
//! - **σ at its stationary point, not by Adam.** §16 records that Adam bounds every step by
//!   its learning rate, so log σ "barely leaves its initial value" within the training budget
//!   (the "variance collapse" of early-stopped VI). Given C the objective is maximised in σ in
//!   closed form, σ_λ² = 1/C_λ (§16 "Stationary point"), so bayesc sets σ there at every
//!   iteration from a running average h of the curvature estimates (exact and full batch: no
//!   averaging is needed). Only μ takes Adam steps.
//! - **μ-gradient.** The paper differentiates the penalty through g̃ with ỹ held fixed; for a
//!   canonical-link GLM that pathwise gradient has mean zero, so μ* = MAP (§16, "paper form",
//!   [`VlaplaceSettings::penalty_gradient`] = false). With the Hessian in place of the Fisher
//!   the objective is a deterministic function of μ, and bayesc by default takes its exact
//!   gradient, ∇L(μ) + ½Σ_λ σ_λ²∇_μ ∂²_λL(μ), the penalty's part by second differences of the
//!   gradient along each coordinate (the same 2d gradients as the exact curvature, step
//!   ε^{1/4}). On a GLM that is §16's "variant that differentiates through the analytic F(μ)"
//!   (T4: μ = (0.681154, 1.290624), σ² = (0.173851, 0.169643)), whose mean lies near the
//!   mean-field VI optimum rather than at the MAP: on labour the MAP's `beta[1]` is 0.158
//!   posterior sd from the NUTS mean (the bar is 0.15). With Hutchinson curvature (d > 100)
//!   the paper form is used (the penalty gradient would need probes of its own).
//!
//! With minibatches (§16 "Minibatch form", §2) each iteration uses L̂_B for the gradient and
//! the curvature, h averages the batch curvatures, and the exit rule runs once per epoch on the
//! full-data ELBO ([`crate::inference::minibatch`]).

use rand::RngExt;

use super::exit::{RunRecord, StopReason};
use super::schedule::Adam;
use super::{Control, GaussianFit, HALF_LN_2PI, Progress, ViError, ViSettings};
use crate::inference::density::MinibatchDensity;
use crate::inference::hessian::finite_diff_step;
use crate::inference::minibatch::{EpochBatches, EpochElbo, EpochExit, MinibatchSettings};
use crate::inference::rng::{StreamRng, stream};
use crate::inference::{DensityError, LogDensity};

/// Largest d for which the curvature is the exact Hessian diagonal by default.
pub const EXACT_CURVATURE_MAX_DIM: usize = 100;

/// How the diagonal curvature C(μ) of −L is computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Curvature {
    /// diag(−∇²L) by central differences of the gradient along each coordinate: 2d gradients.
    Exact,
    /// Hutchinson's estimate (1/K)Σ_k v_k ⊙ (−∇²L)v_k, Rademacher v_k, with central-difference
    /// Hessian-vector products: 2K gradients; unbiased up to the difference error.
    Hutchinson,
}

/// Settings of variational Laplace; `Default` gives the defaults of the module docs.
#[derive(Clone, Debug, PartialEq)]
pub struct VlaplaceSettings {
    /// Exit rule, T_max, seed.
    pub common: ViSettings,
    /// Adam's learning rate on μ (default 0.01, the §16 prototype's).
    pub lr: f64,
    /// The curvature; `None` (default) chooses [`Curvature::Exact`] for d ≤
    /// [`EXACT_CURVATURE_MAX_DIM`], else [`Curvature::Hutchinson`].
    pub curvature: Option<Curvature>,
    /// K, Rademacher probes per iteration of [`Curvature::Hutchinson`] (default 8).
    pub probes: usize,
    /// β of the running average h ← βh + (1−β)C of noisy curvature estimates (Hutchinson or
    /// minibatch; default 0.99). Exact full-batch curvature is used as it is.
    pub curvature_decay: f64,
    /// Floor of h: coordinates whose curvature estimate is below it get σ² = 1/floor
    /// (default 1e-6); counted in the fit's notes.
    pub min_curvature: f64,
    /// Initial h (length d), e.g. the diagonal of the Laplace precision; `None` starts h at the
    /// first estimate.
    pub init_curvature: Option<Vec<f64>>,
    /// Add the penalty's μ-gradient ½Σσ²∇_μ∂²_λL (default true; exact curvature only; module
    /// docs). `false` is §16's paper form (μ* = MAP on GLMs).
    pub penalty_gradient: bool,
}

impl Default for VlaplaceSettings {
    fn default() -> Self {
        VlaplaceSettings {
            common: ViSettings::default(),
            lr: 0.01,
            curvature: None,
            probes: 8,
            curvature_decay: 0.99,
            min_curvature: 1e-6,
            init_curvature: None,
            penalty_gradient: true,
        }
    }
}

impl VlaplaceSettings {
    /// The curvature used at dimension d.
    pub fn curvature_for(&self, d: usize) -> Curvature {
        self.curvature.unwrap_or(if d <= EXACT_CURVATURE_MAX_DIM {
            Curvature::Exact
        } else {
            Curvature::Hutchinson
        })
    }
}

fn grad_at(density: &dyn LogDensity, x: &[f64], g: &mut [f64]) -> Result<f64, ViError> {
    match density.log_density_grad(x, g) {
        Ok(v) if v.is_finite() && g.iter().all(|x| x.is_finite()) => Ok(v),
        Ok(v) => Err(ViError::NonFiniteDensity {
            iteration: 0,
            attempts: 1,
            last: format!("log density {v} or its gradient is not finite near the mean"),
        }),
        Err(e) if e.recoverable => Err(ViError::NonFiniteDensity {
            iteration: 0,
            attempts: 1,
            last: e.to_string(),
        }),
        Err(e) => Err(ViError::Density(e)),
    }
}

/// The diagonal curvature C(μ) of −L at `mu` (length d) into `out`.
///
/// - [`Curvature::Exact`]: C_j = −(∂_j L(μ + h_j e_j) − ∂_j L(μ − h_j e_j))/(2h_j), h_j =
///   [`finite_diff_step`]`(μ_j)` (as `inference::hessian`).
/// - [`Curvature::Hutchinson`]: C = −(1/K)Σ_k v_k ⊙ (∇L(μ + εv_k) − ∇L(μ − εv_k))/(2ε), v_k
///   Rademacher from `rng`, ε = [`finite_diff_step`]`(max_j |μ_j|)`.
///
/// With `penalty = Some((w, g, out))` and [`Curvature::Exact`], also writes the gradient of
/// ½Σ_j w_j ∂²_jL(μ) into `out`, by second differences of the gradient `g` = ∇L(μ),
/// ½Σ_j w_j (∇L(μ + h_j e_j) − 2∇L(μ) + ∇L(μ − h_j e_j))/h_j²; the exact curvature then uses
/// the step h_j = ε^{1/4}·max(1, |μ_j|) ≈ 1.2·10⁻⁴ that suits the second difference (its
/// rounding error is ≈ 4ε|∇L|/h² ≈ 3·10⁻⁸|∇L|).
///
/// Errors: a non-finite gradient or a model error at a difference point.
pub fn diagonal_curvature(
    density: &dyn LogDensity,
    mu: &[f64],
    how: Curvature,
    probes: usize,
    rng: &mut StreamRng,
    out: &mut [f64],
    mut penalty: Option<(&[f64], &[f64], &mut [f64])>,
) -> Result<(), ViError> {
    let d = mu.len();
    let (mut gp, mut gm) = (vec![0.0; d], vec![0.0; d]);
    let mut x = mu.to_vec();
    match how {
        Curvature::Exact => {
            if let Some((_, _, pg)) = penalty.as_mut() {
                pg.iter_mut().for_each(|v| *v = 0.0);
            }
            for j in 0..d {
                let h = match penalty {
                    Some(_) => f64::EPSILON.powf(0.25) * mu[j].abs().max(1.0),
                    None => finite_diff_step(mu[j]),
                };
                x[j] = mu[j] + h;
                grad_at(density, &x, &mut gp)?;
                x[j] = mu[j] - h;
                grad_at(density, &x, &mut gm)?;
                x[j] = mu[j];
                out[j] = -(gp[j] - gm[j]) / (2.0 * h);
                if let Some((w, g, pg)) = penalty.as_mut() {
                    let c = 0.5 * w[j] / (h * h);
                    for k in 0..d {
                        pg[k] += c * (gp[k] + gm[k] - 2.0 * g[k]);
                    }
                }
            }
        }
        Curvature::Hutchinson => {
            let scale = mu.iter().fold(0.0f64, |a, m| a.max(m.abs()));
            let eps = finite_diff_step(scale);
            out.iter_mut().for_each(|o| *o = 0.0);
            let k = probes.max(1);
            let mut v = vec![0.0; d];
            for _ in 0..k {
                for j in 0..d {
                    v[j] = if rng.random::<bool>() { 1.0 } else { -1.0 };
                    x[j] = mu[j] + eps * v[j];
                }
                grad_at(density, &x, &mut gp)?;
                for j in 0..d {
                    x[j] = mu[j] - eps * v[j];
                }
                grad_at(density, &x, &mut gm)?;
                for j in 0..d {
                    out[j] -= v[j] * (gp[j] - gm[j]) / (2.0 * eps) / k as f64;
                }
            }
        }
    }
    Ok(())
}

/// The state of a variational-Laplace run: μ, the curvature average h and Adam on μ.
#[derive(Clone, Debug)]
pub struct Vlaplace {
    settings: VlaplaceSettings,
    how: Curvature,
    /// μ (length d).
    pub mean: Vec<f64>,
    /// h, the (averaged) diagonal curvature of −L at μ (length d); σ² = 1/max(h, floor).
    pub curvature: Vec<f64>,
    started: bool,
    averaged: bool,
    adam: Adam,
    grad: Vec<f64>,
    estimate: Vec<f64>,
    step: Vec<f64>,
    first_mean: Vec<f64>,
    /// Set by [`Vlaplace::step`] when the penalty gradient is on and a curvature estimate is
    /// not above [`VlaplaceSettings::min_curvature`]: the exact-gradient objective has no
    /// maximum there (see [`fit_vlaplace`]); the evidence, for the fit's note.
    pub runaway: Option<String>,
}

impl Vlaplace {
    /// A run from mean `init`; `noisy` says whether the curvature estimates are noisy
    /// (minibatches), which switches on the running average. Errors: settings out of range.
    pub fn new(init: &[f64], settings: &VlaplaceSettings, noisy: bool) -> Result<Self, ViError> {
        let d = init.len();
        let bad = |m: String| Err(ViError::InvalidSettings(m));
        if !(settings.lr > 0.0 && settings.lr.is_finite()) {
            return bad(format!("lr is {}, but must be positive", settings.lr));
        }
        if !(0.0..1.0).contains(&settings.curvature_decay) {
            return bad("curvature_decay must lie in [0, 1)".into());
        }
        if !(settings.min_curvature > 0.0) || settings.probes == 0 {
            return bad("min_curvature must be positive and probes at least 1".into());
        }
        let how = settings.curvature_for(d);
        let (curvature, started) = match &settings.init_curvature {
            Some(h) if h.len() == d && h.iter().all(|x| x.is_finite()) => (h.clone(), true),
            Some(h) => {
                return bad(format!(
                    "init_curvature has length {}, expected {d}",
                    h.len()
                ));
            }
            None => (vec![1.0; d], false),
        };
        Ok(Vlaplace {
            settings: settings.clone(),
            how,
            mean: init.to_vec(),
            curvature,
            started,
            averaged: noisy || how == Curvature::Hutchinson,
            adam: Adam::new(d),
            grad: vec![0.0; d],
            estimate: vec![0.0; d],
            step: vec![0.0; d],
            first_mean: init.to_vec(),
            runaway: None,
        })
    }

    /// The curvature in use.
    pub fn curvature_kind(&self) -> Curvature {
        self.how
    }

    /// σ = 1/√max(h, floor) (length d).
    pub fn sd(&self) -> Vec<f64> {
        let f = self.settings.min_curvature;
        self.curvature
            .iter()
            .map(|h| 1.0 / h.max(f).sqrt())
            .collect()
    }

    /// Coordinates whose h is below the floor.
    pub fn floored(&self) -> usize {
        let f = self.settings.min_curvature;
        self.curvature.iter().filter(|h| !(**h >= f)).count()
    }

    /// The VL objective at the current (μ, σ) for a value L(μ): L(μ) − ½Σσ²h + Σ log σ +
    /// (d/2)(1 + log 2π) (§16 "Objective"; with σ² = 1/h it is the diagonal Laplace evidence).
    pub fn objective(&self, value: f64) -> f64 {
        let sd = self.sd();
        let d = sd.len() as f64;
        let mut v = value + d * (0.5 + HALF_LN_2PI);
        for (s, h) in sd.iter().zip(&self.curvature) {
            v += -0.5 * s * s * h + s.ln();
        }
        v
    }

    /// One iteration on `density` (L, or L̂_B of a batch): ∇L(μ) and C(μ) (with the penalty's
    /// μ-gradient at the current σ, see the module docs), the update of h and Adam's ascent
    /// step on μ. Returns L(μ) before the step.
    pub fn step(&mut self, density: &dyn LogDensity, rng: &mut StreamRng) -> Result<f64, ViError> {
        let mut grad = std::mem::take(&mut self.grad);
        let value = grad_at(density, &self.mean, &mut grad)?;
        let with_penalty = self.settings.penalty_gradient && self.how == Curvature::Exact;
        let var: Vec<f64> = self.sd().iter().map(|s| s * s).collect();
        let mut pg = vec![0.0; if with_penalty { grad.len() } else { 0 }];
        diagonal_curvature(
            density,
            &self.mean,
            self.how,
            self.settings.probes,
            rng,
            &mut self.estimate,
            with_penalty.then_some((&var[..], &grad[..], &mut pg[..])),
        )?;
        if with_penalty
            && self.runaway.is_none()
            && let Some(j) = self
                .estimate
                .iter()
                .position(|c| !(*c > self.settings.min_curvature))
        {
            self.runaway = Some(format!(
                "the curvature of -log p in unconstrained coordinate {} fell to {:.3e} at \
                 {:.4} (the mean had moved there from {:.4})",
                j + 1,
                self.estimate[j],
                self.mean[j],
                self.first_mean[j]
            ));
        }
        if with_penalty && self.started {
            for (g, p) in grad.iter_mut().zip(&pg) {
                *g += p;
            }
        }
        let beta = if self.started && self.averaged {
            self.settings.curvature_decay
        } else {
            0.0
        };
        for (h, c) in self.curvature.iter_mut().zip(&self.estimate) {
            *h = beta * *h + (1.0 - beta) * c;
        }
        self.started = true;
        self.adam
            .step(&grad, self.settings.lr, None, &mut self.step);
        for (m, s) in self.mean.iter_mut().zip(&self.step) {
            *m += s;
        }
        self.grad = grad;
        Ok(value)
    }
}

/// Rise of the variational-Laplace objective above its first value, in units of
/// max(1, |LB₁|, d), beyond which a run with the penalty gradient counts as run away ([X]; the
/// bar of `fit::vi_diverged::DIVERGED_RISE`, which the runs away on eight schools exceed over
/// 10⁶-fold: 1.16 at the start, 1.8·10⁷ after 5000 iterations).
pub const RUNAWAY_RISE: f64 = 1e3;

/// Fits q by variational Laplace on the full data with the common exit rule (`survey_vi.md`
/// §1) on the VL objective, returning the kept iterate.
///
/// - `density`: L(ζ), with gradients; `init`: the initial mean (length d), L finite there.
/// - `progress`: called after every iteration; [`Control::Stop`] ends the fit (interrupted).
///
/// **Fallback to the paper form ([X]).** With the penalty gradient (the default, module docs)
/// the objective with σ at its stationary point is J(μ) = L(μ) − ½Σ_λ log C_λ(μ) + const,
/// which has no maximum wherever some C_λ can fall to 0: −½ log C_λ grows without bound
/// there, the penalty's μ-gradient ½σ²∇∂²L (σ² = 1/C) draws the mean on, and σ² = 1/C has no
/// value past it (§16 "Failure modes"). On `p ~ normal(1, 1)`, p > 0, ζ = log p:
/// C(ζ) = 2e^{2ζ} − e^ζ vanishes at ζ = −log 2 and J′(ζ) < 0 on all of (−log 2, ∞), so J has
/// no stationary point; the old loop ran to an objective of 6·10⁴ and printed p's mean as inf
/// (seeds 1–3), and on eight schools to 1.8·10⁷, whatever the step size. When a curvature
/// estimate is not above [`VlaplaceSettings::min_curvature`], the objective rises by more
/// than [`RUNAWAY_RISE`]·max(1, |LB₁|, d), or L is not finite near the mean, the fit is rerun
/// from `init` in §16's paper form (μ ascends L alone: μ* = MAP, σ² = 1/C(MAP), whose fixed
/// point exists wherever the mode does), with a note that says why. Its exit rule watches
/// L(μ) plus the first iteration's σ terms, the quantity its μ-steps ascend.
///
/// Errors: [`ViError::InvalidSettings`], [`ViError::InitialPoint`],
/// [`ViError::NonFiniteDensity`] when L or its gradient is not finite near μ,
/// [`ViError::Density`]. Reproducible: Hutchinson probes come from stream 1 of the seed.
pub fn fit_vlaplace(
    density: &dyn LogDensity,
    init: &[f64],
    settings: &VlaplaceSettings,
    progress: &mut dyn FnMut(Progress) -> Control,
) -> Result<GaussianFit, ViError> {
    settings.common.validate(density.dim(), init)?;
    super::reparam::check_initial_point(density, init)?;
    match run_full(density, init, settings, false, progress)? {
        Ok(fit) => Ok(fit),
        Err(why) => {
            let mut paper = settings.clone();
            paper.penalty_gradient = false;
            let mut fit = run_full(density, init, &paper, true, progress)?
                .map_err(|e| ViError::InvalidSettings(format!("internal: {e}")))?;
            fit.notes.insert(0, fallback_note(&why));
            Ok(fit)
        }
    }
}

/// Whether `settings` take the penalty gradient at dimension `d` (exact curvature only).
fn penalised(settings: &VlaplaceSettings, d: usize) -> bool {
    settings.penalty_gradient && settings.curvature_for(d) == Curvature::Exact
}

/// The note of a fit that fell back to the paper form, with the evidence `why`.
fn fallback_note(why: &str) -> String {
    format!(
        "variational Laplace's default objective (the exact Hessian diagonal, its penalty \
         differentiated in the mean) has no maximum on this model: {why}; where the curvature \
         of -log p falls to 0 its sigma^2 = 1/curvature and its -1/2 log(curvature) grow \
         without bound and draw the mean on, whatever the step size. The fit was rerun in the \
         paper's form (survey_vi.md §16: the mean ascends log p alone, so it ends at the mode, \
         with sigma^2 = 1/curvature there, a diagonal Laplace approximation); for the \
         mean-field optimum of the ELBO use --method qbvi"
    )
}

/// One full-batch run of [`fit_vlaplace`]: `Ok(Err(why))` when the penalty gradient is on and
/// the run ran away (see there); `paper_trace` makes the exit rule watch L(μ) + the first
/// iteration's σ terms.
fn run_full(
    density: &dyn LogDensity,
    init: &[f64],
    settings: &VlaplaceSettings,
    paper_trace: bool,
    progress: &mut dyn FnMut(Progress) -> Control,
) -> Result<Result<GaussianFit, String>, ViError> {
    let watch = penalised(settings, init.len());
    let mut state = Vlaplace::new(init, settings, false)?;
    let mut rng = stream(settings.common.seed, 1);
    let mut tracker = settings.common.tracker::<(Vec<f64>, Vec<f64>)>();
    let mut floored = 0;
    let mut first: Option<(f64, f64)> = None;
    for t in 1..=settings.common.max_iter {
        let before_mean = state.mean.clone();
        let value = match state.step(density, &mut rng) {
            Ok(v) => v,
            Err(ViError::NonFiniteDensity { last, .. }) if watch && t > 1 => {
                return Ok(Err(format!(
                    "the log density was not finite near the mean after {t} iterations ({last})"
                )));
            }
            Err(e) => return Err(e),
        };
        if watch && let Some(why) = state.runaway.take() {
            return Ok(Err(why));
        }
        // LB_t: the objective at μ_t (before its step) with the curvature measured there.
        let objective = state.objective(value);
        let (lb1, offset) = *first.get_or_insert((objective, objective - value));
        let lb = if paper_trace {
            value + offset
        } else {
            objective
        };
        let scale = lb1.abs().max(init.len() as f64).max(1.0);
        if watch && lb - lb1 > RUNAWAY_RISE * scale {
            return Ok(Err(format!(
                "its objective rose from {lb1:.3} to {lb:.3e} in {t} iterations"
            )));
        }
        floored = state.floored();
        tracker.watch(t, &before_mean);
        let kept = (before_mean, state.curvature.clone());
        if tracker.observe(t, lb, &kept, progress).is_some() {
            break;
        }
    }
    let last = (state.mean.clone(), state.curvature.clone());
    let ((mean, h), mut record) = tracker.finish(last);
    add_floor_note(&mut record, floored, settings.min_curvature);
    let p = h.iter().map(|h| h.max(settings.min_curvature)).collect();
    Ok(Ok(GaussianFit::diagonal(mean, p, record)))
}

/// Marks a fit whose curvature was not positive in `floored` coordinates at the end as not an
/// approximation of the posterior ([`RunRecord::unusable`]): σ² = 1/curvature (§16) has no
/// value there, and the floor makes those variances 1/`floor`. On the Boston BNN (M = 32, a
/// random start) 97 of 752 weights ended so, and the full-data ELBO of that q was −5·10⁷; the
/// exit rule fired on it and the fit printed "converged" before this check ([X]).
fn add_floor_note(record: &mut RunRecord, floored: usize, floor: f64) {
    if floored > 0 {
        record.unusable = Some(format!(
            "the Hessian diagonal of the negative log density was not positive in {floored} \
             coordinate(s) at the end (non-convex directions), where variational Laplace's \
             σ² = 1/curvature has no value; their variances were set to 1/{floor:e}, so q is \
             not an approximation of the posterior there (its objective's −½ log curvature \
             grows without bound as the curvature vanishes, which can also carry the mean \
             away). The paper's sampled-label Fisher \
             stays positive but needs a simulable likelihood; use --method ivon or qnvb, which \
             estimate a positive curvature under q"
        ));
    }
}

/// Fits q by variational Laplace on minibatches (§16 "Minibatch form", §2): per iteration the
/// gradient and curvature of one batch's L̂_B, the running curvature average h, and the exit
/// rule once per epoch on the full-data ELBO; returns the average of the last epochs' iterates
/// ([`EpochExit::tail_average`]; a departure from the spec's last iterate, measured there).
///
/// Like [`fit_vlaplace`], a run with the penalty gradient whose batch curvature estimate falls
/// to the floor is rerun in the paper form, with a note.
///
/// Errors: as [`fit_vlaplace`], plus [`ViError::InvalidSettings`] for a batch size outside
/// 1..=N. Reproducible: batches from stream 7, probes from stream 1, the epoch ELBO's draws
/// from stream 8 of the seed.
pub fn fit_vlaplace_minibatch(
    density: &dyn MinibatchDensity,
    init: &[f64],
    settings: &VlaplaceSettings,
    minibatch: &MinibatchSettings,
    progress: &mut dyn FnMut(Progress) -> Control,
) -> Result<GaussianFit, ViError> {
    settings.common.validate(density.dim(), init)?;
    super::reparam::check_initial_point(density, init)?;
    match run_minibatch(density, init, settings, minibatch, progress)? {
        Ok(fit) => Ok(fit),
        Err(why) => {
            let mut paper = settings.clone();
            paper.penalty_gradient = false;
            let mut fit = run_minibatch(density, init, &paper, minibatch, progress)?
                .map_err(|e| ViError::InvalidSettings(format!("internal: {e}")))?;
            fit.notes.insert(0, fallback_note(&why));
            Ok(fit)
        }
    }
}

/// One run of [`fit_vlaplace_minibatch`]: `Ok(Err(why))` when the penalty gradient is on and a
/// curvature estimate fell to the floor.
fn run_minibatch(
    density: &dyn MinibatchDensity,
    init: &[f64],
    settings: &VlaplaceSettings,
    minibatch: &MinibatchSettings,
    progress: &mut dyn FnMut(Progress) -> Control,
) -> Result<Result<GaussianFit, String>, ViError> {
    let watch = penalised(settings, init.len());
    let mut state = Vlaplace::new(init, settings, true)?;
    let mut rng = stream(settings.common.seed, 1);
    let mut epochs = EpochLoop::new(density, minibatch, settings.common.seed)?;
    epochs.start(&state.mean.clone(), &state.sd())?;
    for t in 1..=settings.common.max_iter {
        let (rows, epoch_end) = epochs.next_rows();
        let view = density.batch(&rows).map_err(ViError::Density)?;
        let value = state.step(view.as_ref(), &mut rng)?;
        if watch && let Some(why) = state.runaway.take() {
            return Ok(Err(why));
        }
        let lb = state.objective(value);
        let stop = epochs.observe(
            t,
            lb,
            epoch_end,
            settings.common.max_iter,
            || (state.mean.clone(), state.sd()),
            progress,
        )?;
        if stop {
            break;
        }
    }
    let (mut record, tail) = epochs.finish();
    add_floor_note(&mut record, state.floored(), settings.min_curvature);
    let (mean, p) = match tail {
        Some((m, sd)) => (m, sd.iter().map(|s| 1.0 / (s * s)).collect()),
        None => (
            state.mean.clone(),
            state
                .curvature
                .iter()
                .map(|h| h.max(settings.min_curvature))
                .collect(),
        ),
    };
    Ok(Ok(GaussianFit::diagonal(mean, p, record)))
}

/// The minibatch bookkeeping of the survey methods that fit on batches (variational Laplace,
/// MC dropout): epoch-wise shuffled batches, the per-iteration trace, the full-data exit
/// statistic once per epoch and the stop decision, as `qbvi`'s minibatch loop
/// (`inference::minibatch`; `survey_vi.md` §1–§2).
pub(crate) struct EpochLoop<'a> {
    density: &'a dyn MinibatchDensity,
    batches: EpochBatches,
    elbo: EpochElbo,
    exit: EpochExit,
    record: RunRecord,
    /// The exit statistic: `None` for the ELBO of N(μ, diag σ²) from [`EpochElbo`], or a
    /// method's own full-data value.
    pub(crate) statistic: Option<Box<dyn Fn(&[f64]) -> Result<f64, DensityError> + 'a>>,
}

impl<'a> EpochLoop<'a> {
    pub(crate) fn new(
        density: &'a dyn MinibatchDensity,
        minibatch: &MinibatchSettings,
        seed: u64,
    ) -> Result<Self, ViError> {
        let batches = EpochBatches::new(density.n_obs(), minibatch.batch_size, seed)
            .map_err(ViError::InvalidSettings)?;
        Ok(EpochLoop {
            density,
            batches,
            elbo: EpochElbo::new(density.dim(), minibatch.elbo_draws, seed),
            exit: EpochExit::new(minibatch),
            record: RunRecord::empty(),
            statistic: None,
        })
    }

    /// Records the full-data statistic of the initial q = N(`mean`, diag `sd`²) as the run's
    /// start (`RunRecord::start_elbo`, for `GaussianFit::worsened`). Errors: an unrecoverable
    /// density error.
    pub(crate) fn start(&mut self, mean: &[f64], sd: &[f64]) -> Result<(), ViError> {
        let e = match &self.statistic {
            Some(f) => f(mean),
            None => self.elbo.value(self.density, mean, sd),
        }
        .map_err(ViError::Density)?;
        self.record.start_elbo = Some(e);
        Ok(())
    }

    /// The rows of the next batch and whether it ends its epoch.
    pub(crate) fn next_rows(&mut self) -> (Vec<usize>, bool) {
        let (rows, last) = self.batches.next_batch();
        (rows.to_vec(), last)
    }

    /// Records LB_t (a batch estimate); at an epoch's end evaluates the full-data statistic at
    /// `state()` = (μ, σ) and applies the epoch exit rule. Returns whether to stop now.
    pub(crate) fn observe(
        &mut self,
        t: usize,
        lb: f64,
        epoch_end: bool,
        max_iter: usize,
        state: impl FnOnce() -> (Vec<f64>, Vec<f64>),
        progress: &mut dyn FnMut(Progress) -> Control,
    ) -> Result<bool, ViError> {
        self.record.elbo_trace.push(lb);
        let (mut smoothed, mut epoch_stop) = (None, false);
        let (m, sd) = state();
        self.exit.iterate(&m, &sd);
        if epoch_end {
            let e = match &self.statistic {
                Some(f) => f(&m),
                None => self.elbo.value(self.density, &m, &sd),
            }
            .map_err(ViError::Density)?;
            let (sm, improved, stop) = self.exit.observe(e, t);
            if improved {
                self.record.best_smoothed_elbo = sm;
            }
            self.record.smoothed_elbo.push(sm);
            smoothed = Some(sm);
            epoch_stop = stop;
        }
        let control = progress(Progress {
            iteration: t,
            elbo: lb,
            smoothed_elbo: smoothed,
        });
        let reason = if control == Control::Stop {
            Some(StopReason::Interrupted)
        } else if epoch_stop {
            Some(StopReason::ExitRule)
        } else if t >= max_iter {
            Some(StopReason::MaxIterations)
        } else {
            None
        };
        if let Some(r) = reason {
            self.record.stop = r;
        }
        Ok(reason.is_some())
    }

    /// The record of the run, and the average (μ̄, σ̄) of the last epochs' iterates
    /// ([`EpochExit::tail_average`]; `None` before two epochs have completed).
    pub(crate) fn finish(mut self) -> (RunRecord, Option<crate::inference::minibatch::MeanSd>) {
        self.record.epoch_elbo = self.exit.trace().to_vec();
        self.record.epoch_checks = self.exit.checks().to_vec();
        self.record.epoch_means = self.exit.recent_means();
        self.record.returned_iteration = self.record.elbo_trace.len();
        (self.record, self.exit.tail_average())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// L = −½Σ a_j ζ_j² − 0.3ζ₁ζ₂: diag(−∇²L) = a.
    struct Quad;
    impl LogDensity for Quad {
        fn dim(&self) -> usize {
            3
        }
        fn log_density(&self, z: &[f64]) -> Result<f64, DensityError> {
            let mut g = [0.0; 3];
            self.log_density_grad(z, &mut g)
        }
        fn log_density_grad(&self, z: &[f64], g: &mut [f64]) -> Result<f64, DensityError> {
            let a = [2.0, 5.0, 0.5];
            g[0] = -a[0] * z[0] - 0.3 * z[1];
            g[1] = -a[1] * z[1] - 0.3 * z[0];
            g[2] = -a[2] * z[2];
            Ok(
                -0.5 * (a[0] * z[0] * z[0] + a[1] * z[1] * z[1] + a[2] * z[2] * z[2])
                    - 0.3 * z[0] * z[1],
            )
        }
    }

    #[test]
    fn both_curvatures_recover_the_hessian_diagonal() {
        let mut rng = stream(3, 1);
        let mut c = [0.0; 3];
        let mu = [0.4, -1.0, 2.0];
        diagonal_curvature(&Quad, &mu, Curvature::Exact, 1, &mut rng, &mut c, None).unwrap();
        for (got, want) in c.iter().zip([2.0, 5.0, 0.5]) {
            assert!((got - want).abs() < 1e-6, "{got} vs {want}");
        }
        // Hutchinson: E[v ⊙ Hv] = diag H; the off-diagonal 0.3 adds ±0.3 noise per probe.
        diagonal_curvature(
            &Quad,
            &mu,
            Curvature::Hutchinson,
            4000,
            &mut rng,
            &mut c,
            None,
        )
        .unwrap();
        for (got, want) in c.iter().zip([2.0, 5.0, 0.5]) {
            assert!((got - want).abs() < 0.03, "{got} vs {want}");
        }
    }
}
