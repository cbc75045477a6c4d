//! QNVB: quasi-Newton variational Bayes by projective integral updates, a mean-field Gaussian fit
//! on the unconstrained scale from four gradient evaluations per step (specs/qnvb.md; Duersch,
//! SIAM/ASA JUQ 12(1):69–100, 2024).
//!
//! The algorithm is the PPL default of specs/qnvb.md §9 with the settings of §7: loss
//! J(ζ) = −L(ζ) (full log joint with Jacobian, N_w = 1, §7.1), the Hadamard quadrature of §4
//! ([`quadrature`]), the signed running curvature average of §7.2 (or the reference RMS, §5), the
//! rate-bounded spread and Adam-capped mean step of §5, and the stopping rule of §7.5.
//! Minibatching (§7.1: J = −(N/M)·Σ_{i∈B} ℓ_i − π, N_w = 1) is [`fit_qnvb_minibatch`]: one batch
//! per step for all n_e quadrature points (§6, "the same draw must be used for all n_e points of
//! one step"), with the exit rule on the full-data ELBO once per epoch
//! ([`super::minibatch`]).

pub mod khat;
pub mod quadrature;

use rand_distr::{Distribution, StandardNormal};

use super::density::{DensityError, LogDensity, MinibatchDensity};
use super::init::random_init;
use super::minibatch::{EpochBatches, EpochElbo, EpochExit, MinibatchSettings};
use super::rng::{StreamRng, stream};

pub use khat::{KhatError, psis_khat};

/// How the per-step curvature estimates h are averaged into κ (specs/qnvb.md §7.2, §5 step 5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum CurvatureAverage {
    /// Signed running mean κ̄ ← w_h·κ̄ + (1−w_h)·h, κ = max(κ̄, 1/σ_max²): the PPL default;
    /// recovers the exact mean-field optimum on Gaussian targets (§7.2, §10.2).
    #[default]
    Signed,
    /// Root mean square κ = √κ̄ with κ̄ ← w_h·κ̄ + (1−w_h)·h², floored at 1/σ_max²: the reference
    /// implementation's rule (§5 step 5); σ comes out slightly small when h fluctuates.
    Rms,
}

/// Settings of [`fit_qnvb`]. Defaults: specs/qnvb.md §7.3–§7.5 (the PPL's full-batch values).
#[derive(Clone, Debug, PartialEq)]
pub struct QnvbSettings {
    /// Quadrature points per step n_e: a power of two ≥ 2 (default 4, the 4-evaluation Hadamard
    /// step of §4.5; 2·2^⌈log₂ d⌉ integrates all quadratics exactly in every step, §7.3).
    pub n_e: usize,
    /// Averaging factor β₁ of the gradient (default 0.9, §7.4).
    pub beta1: f64,
    /// Averaging factor β₂ of the squared gradient and curvature (default 0.99, §7.4).
    pub beta2: f64,
    /// Absolute cap lr on the mean step per coordinate, unconstrained scale (default 0.1, §7.4).
    pub lr: f64,
    /// ε in the Adam-style step cap (√s̄ + ε)/lr (default 1e-8, §7.4).
    pub eps: f64,
    /// Initial σ in every coordinate (default 0.1, §7.4).
    pub sigma_init: f64,
    /// Lower bound σ_min on σ (default 1e-8, §7.4).
    pub sigma_min: f64,
    /// Upper bound σ_max on σ; κ is floored at 1/σ_max² (default 1e3, §7.4).
    pub sigma_max: f64,
    /// Smallest per-step factor r_min on σ (default 0.9, §7.4).
    pub r_min: f64,
    /// Largest per-step factor r_max on σ (default 1.1, §7.4).
    pub r_max: f64,
    /// Curvature averaging rule (default [`CurvatureAverage::Signed`], §7.2).
    pub curvature: CurvatureAverage,
    /// ELBO smoothing window W: the smoothed ELBO is the mean of the last W+1 values
    /// (default 30, §7.5).
    pub window: usize,
    /// Margin δ by which the smoothed ELBO must beat the best so far to count as an improvement
    /// (default 1e-3, §7.5).
    pub min_improvement: f64,
    /// Stop after P_max steps without improvement (default 200, §7.5).
    pub patience: usize,
    /// Never stop (except by the callback) before T_min steps (default 500, §7.5).
    pub min_iter: usize,
    /// Always stop after T_max steps (default 5000, §7.5).
    pub max_iter: usize,
    /// Consecutive failed attempts (non-finite value or gradient; σ halved each time) allowed
    /// for one step before giving up (default 10, §7.5).
    pub max_retries: usize,
    /// Seed of the random initial point, used only when [`fit_qnvb`] is given an empty `init`
    /// (stream 0 of [`crate::inference::rng::stream`]); the algorithm itself is deterministic.
    pub seed: u64,
}

impl Default for QnvbSettings {
    fn default() -> Self {
        QnvbSettings {
            n_e: 4,
            beta1: 0.9,
            beta2: 0.99,
            lr: 0.1,
            eps: 1e-8,
            sigma_init: 0.1,
            sigma_min: 1e-8,
            sigma_max: 1e3,
            r_min: 0.9,
            r_max: 1.1,
            curvature: CurvatureAverage::Signed,
            window: 30,
            min_improvement: 1e-3,
            patience: 200,
            min_iter: 500,
            max_iter: 5000,
            max_retries: 10,
            seed: 0,
        }
    }
}

/// Why a QNVB run ended (specs/qnvb.md §7.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QnvbStop {
    /// The smoothed ELBO did not improve by δ for P_max steps (after at least T_min steps).
    Converged,
    /// T_max steps were taken.
    MaxIterations,
    /// The progress callback returned `false`.
    Interrupted,
}

/// A fitted mean-field Gaussian q(ζ) = ∏_i N(μ_i, σ_i²) on the unconstrained scale.
#[derive(Clone, Debug, PartialEq)]
pub struct QnvbFit {
    /// μ, length d.
    pub mean: Vec<f64>,
    /// σ², length d.
    pub variance: Vec<f64>,
    /// ELBO_t of every step (§7.5): quadrature estimate of E_q(L) plus the Gaussian entropy.
    pub elbo_trace: Vec<f64>,
    /// Number of steps taken (= `elbo_trace.len()`).
    pub iterations: usize,
    /// Why the run ended.
    pub stop: QnvbStop,
    /// Stationarity of the mean (§7.6): max_i |ḡ_i|·σ_i with ḡ the averaged gradient of J.
    pub max_scaled_gradient: f64,
    /// Stationarity of the spread (§7.6): max_i |σ_i²·κ_i − 1|.
    pub max_curvature_mismatch: f64,
    /// Minibatch fits only: the full-data ELBO at the end of every epoch (the exit statistic,
    /// [`super::minibatch`]); empty for full-batch fits.
    pub epoch_elbo: Vec<f64>,
    /// Minibatch fits only: each look of the exit rule at the full-data ELBO (iteration, value,
    /// smoothed value); empty for full-batch fits.
    pub epoch_checks: Vec<super::minibatch::EpochCheck>,
    /// Minibatch fits only: the mean averaged over each of the last (at most
    /// [`super::minibatch::EPOCH_MEANS`]) epochs, oldest first (`fit::stationarity`).
    pub epoch_means: Vec<Vec<f64>>,
    /// What the fit layer wants the user to know about this fit (the refinement of the mean
    /// and sds after the exit rule, `fit::refine`); printed with the convergence line. Empty
    /// from the loops.
    pub notes: Vec<String>,
}

impl QnvbFit {
    /// Dimension d.
    pub fn dim(&self) -> usize {
        self.mean.len()
    }

    /// σ = √variance, length d.
    pub fn sd(&self) -> Vec<f64> {
        self.variance.iter().map(|v| v.sqrt()).collect()
    }

    /// `n` draws ζ = μ + σ⊙z, z ~ N(0, I), each of length d (unconstrained scale; §7.6).
    pub fn sample(&self, n: usize, rng: &mut StreamRng) -> Vec<Vec<f64>> {
        let sd = self.sd();
        (0..n)
            .map(|_| {
                self.mean
                    .iter()
                    .zip(&sd)
                    .map(|(m, s)| {
                        let z: f64 = StandardNormal.sample(rng);
                        m + s * z
                    })
                    .collect()
            })
            .collect()
    }

    /// PSIS k̂ of this fit against `density` from `n` fresh draws (§7.6; [`psis_khat`]):
    /// n ≥ 25, a few thousand recommended.
    ///
    /// Errors: as [`psis_khat`].
    pub fn khat(
        &self,
        density: &dyn LogDensity,
        n: usize,
        rng: &mut StreamRng,
    ) -> Result<f64, KhatError> {
        let draws = self.sample(n, rng);
        psis_khat(density, |z| self.log_q(z), &draws)
    }

    /// log q(ζ) = Σ_i log N(ζ_i; μ_i, σ_i²), normalised; `zeta` of length d.
    pub fn log_q(&self, zeta: &[f64]) -> f64 {
        let half_log_2pi = 0.5 * (2.0 * std::f64::consts::PI).ln();
        zeta.iter()
            .zip(&self.mean)
            .zip(&self.variance)
            .map(|((z, m), v)| -0.5 * (z - m) * (z - m) / v - 0.5 * v.ln() - half_log_2pi)
            .sum()
    }
}

/// Why [`fit_qnvb`] failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum QnvbError {
    /// `init` is non-empty and does not have length `density.dim()`.
    #[error(
        "initial point has length {got}, but the model has {expected} unconstrained parameters"
    )]
    DimensionMismatch {
        /// Model dimension d.
        expected: usize,
        /// Length of the given initial point.
        got: usize,
    },
    /// A setting is out of range.
    #[error("invalid QNVB setting: {0}")]
    InvalidSettings(String),
    /// No valid random initial point could be found, or the density failed unrecoverably.
    #[error(transparent)]
    Density(#[from] DensityError),
    /// A step gave a non-finite log density or gradient `retries` times in a row, even after
    /// halving σ each time (§7.5).
    #[error(
        "QNVB step {step}: the log density or its gradient was not finite at a quadrature point \
         {retries} times in a row, even after halving the spread each time; last problem: {last}"
    )]
    NonFinite {
        /// 0-based step index.
        step: usize,
        /// Attempts made.
        retries: usize,
        /// The last problem seen.
        last: String,
    },
}

fn check_settings(s: &QnvbSettings) -> Result<(), QnvbError> {
    let bad = |m: &str| Err(QnvbError::InvalidSettings(m.to_string()));
    if s.n_e < 2 || !s.n_e.is_power_of_two() {
        return bad("n_e must be a power of two and at least 2");
    }
    if !(0.0..1.0).contains(&s.beta1) || !(0.0..1.0).contains(&s.beta2) {
        return bad("beta1 and beta2 must lie in [0, 1)");
    }
    let positive = [s.lr, s.sigma_init, s.sigma_min, s.sigma_max, s.r_max];
    if positive.iter().any(|v| !(v.is_finite() && *v > 0.0)) || s.eps < 0.0 {
        return bad("lr, sigma_init, sigma_min, sigma_max and r_max must be positive and finite");
    }
    if s.sigma_min > s.sigma_max || !(s.r_min > 0.0 && s.r_min <= 1.0 && s.r_max >= 1.0) {
        return bad("need sigma_min ≤ sigma_max and 0 < r_min ≤ 1 ≤ r_max");
    }
    if s.max_iter == 0 {
        return bad("max_iter must be at least 1");
    }
    Ok(())
}

/// Fits a mean-field Gaussian to the target L(ζ) = `density.log_density` by QNVB
/// (specs/qnvb.md §9, defaults §7).
///
/// - `init`: the initial mean μ, length d; if empty, uniform(−2, 2) retried until finite
///   ([`crate::inference::init::random_init`] on stream 0 of `settings.seed`, §7.5).
/// - σ starts at `sigma_init`. Each step evaluates L and ∇L at the n_e points μ ± σ⊙x_k of
///   iterates k = k₀ … k₀ + n_e/2 − 1 (global counter, §4.5), forms g = mean ∇J and
///   h = Σ s·x⊙∇J / (n_e·σ) (Stein's identity, §3), updates the running averages (§5 steps 3–4),
///   then σ ← clamp(clamp(κ^{−1/2}, r_min·σ, r_max·σ), σ_min, σ_max) and
///   μ ← μ − ḡ / max(κ, (√s̄ + ε)/lr), followed by the transport ḡ ← ḡ − κ⊙Δ (§5 steps 5–8).
/// - If any point gives a non-finite value or gradient, or a recoverable error, σ is halved and
///   the step redone (§7.5).
/// - `progress(t, elbo_t)` is called after every step t (0-based); returning `false` stops the
///   run ([`QnvbStop::Interrupted`]).
/// - Stopping: [`QnvbSettings::window`], `min_improvement`, `patience`, `min_iter`, `max_iter`
///   (§7.5).
///
/// Cost: n_e gradient evaluations plus O(n_e·d) arithmetic per step (§7.7). Deterministic for a
/// given `init` (and for a given `seed` when `init` is empty).
///
/// Errors: [`QnvbError::DimensionMismatch`], [`QnvbError::InvalidSettings`],
/// [`QnvbError::Density`] (no valid initial point, or an unrecoverable model error),
/// [`QnvbError::NonFinite`] (more than `max_retries` failed attempts at one step).
pub fn fit_qnvb(
    density: &dyn LogDensity,
    init: &[f64],
    settings: &QnvbSettings,
    progress: &mut dyn FnMut(usize, f64) -> bool,
) -> Result<QnvbFit, QnvbError> {
    fit_inner(density, None, init, settings, progress)
}

/// [`fit_qnvb`] on minibatches (specs/qnvb.md §7.1, specs/survey_vi.md §2): step t evaluates the
/// n_e quadrature points on one batch B_t of M rows, J = −L̂_{B_t} = −(N/M)·Σ_{i∈B_t} ℓ_i − π,
/// batches drawn by [`EpochBatches`] from `settings.seed`.
///
/// Exit rule: the per-step ELBO (kept in `elbo_trace`) is a batch estimate and too noisy for
/// the δ-margin rule of §7.5, so the rule runs on the full-data ELBO from 10 fixed draws
/// evaluated at the end of every epoch, smoothed and counted in epochs ([`EpochExit`];
/// survey_vi.md §1). [`QnvbStop::Converged`] means that rule fired; `max_iter` still bounds the
/// number of steps. `settings.min_iter` and `patience` are not used.
///
/// Errors: as [`fit_qnvb`], plus [`QnvbError::InvalidSettings`] for a batch size outside 1..=N.
pub fn fit_qnvb_minibatch(
    density: &dyn MinibatchDensity,
    init: &[f64],
    settings: &QnvbSettings,
    minibatch: &MinibatchSettings,
    progress: &mut dyn FnMut(usize, f64) -> bool,
) -> Result<QnvbFit, QnvbError> {
    fit_inner(
        density,
        Some((density, minibatch)),
        init,
        settings,
        progress,
    )
}

fn fit_inner(
    density: &dyn LogDensity,
    minibatch: Option<(&dyn MinibatchDensity, &MinibatchSettings)>,
    init: &[f64],
    settings: &QnvbSettings,
    progress: &mut dyn FnMut(usize, f64) -> bool,
) -> Result<QnvbFit, QnvbError> {
    check_settings(settings)?;
    let s = settings;
    let d = density.dim();
    let mut mu = if init.is_empty() && d > 0 {
        random_init(density, &mut stream(s.seed, 0))?
    } else if init.len() != d {
        return Err(QnvbError::DimensionMismatch {
            expected: d,
            got: init.len(),
        });
    } else {
        init.to_vec()
    };
    let mut sigma = vec![s.sigma_init.clamp(s.sigma_min, s.sigma_max); d];
    let mut g_bar = vec![0.0; d];
    let mut s_bar = vec![0.0; d];
    let mut k_bar = vec![0.0; d];
    let mut kappa = vec![1.0 / (s.sigma_max * s.sigma_max); d];
    let (mut n_g, mut n_h) = (0.0_f64, 0.0_f64);
    let n_g_max = 1.0 / (1.0 - s.beta1);
    let n_h_max = 1.0 / (1.0 - s.beta2);
    let kappa_floor = 1.0 / (s.sigma_max * s.sigma_max);
    let mut k: u64 = 0;
    let half = s.n_e / 2;
    let entropy_const = 0.5 * d as f64 * (1.0 + (2.0 * std::f64::consts::PI).ln());

    let mut elbo_trace: Vec<f64> = Vec::new();
    let mut best = f64::NEG_INFINITY;
    let mut since_best = 0usize;
    let mut stop = QnvbStop::MaxIterations;

    let mut x = vec![0.0; d];
    let mut zeta = vec![0.0; d];
    let mut grad = vec![0.0; d];
    let mut gsum = vec![0.0; d];
    let mut hsum = vec![0.0; d];
    let mut batches = match minibatch {
        Some((mb, ms)) => Some((
            mb,
            EpochBatches::new(mb.n_obs(), ms.batch_size, s.seed)
                .map_err(QnvbError::InvalidSettings)?,
            EpochElbo::new(d, ms.elbo_draws, s.seed),
            EpochExit::new(ms),
        )),
        None => None,
    };

    for t in 0..s.max_iter {
        let mut epoch_end = false;
        let view = match &mut batches {
            Some((mb, b, ..)) => {
                let mb: &dyn MinibatchDensity = *mb;
                let (rows, last) = b.next_batch();
                epoch_end = last;
                Some(mb.batch(rows)?)
            }
            None => None,
        };
        let target: &dyn LogDensity = match &view {
            Some(v) => v.as_ref(),
            None => density,
        };
        // 1. evaluation at the n_e quadrature points, retried with σ/2 on non-finite values
        let mut retries = 0;
        let j_sum = loop {
            gsum.iter_mut().for_each(|v| *v = 0.0);
            hsum.iter_mut().for_each(|v| *v = 0.0);
            let mut j_sum = 0.0;
            let mut failure: Option<String> = None;
            'points: for r in 0..half {
                quadrature::hadamard_direction(k + r as u64, &mut x);
                for sign in [1.0, -1.0] {
                    for i in 0..d {
                        zeta[i] = mu[i] + sign * sigma[i] * x[i];
                    }
                    match target.log_density_grad(&zeta, &mut grad) {
                        Ok(lp) if lp.is_finite() && grad.iter().all(|v| v.is_finite()) => {
                            j_sum -= lp;
                            for i in 0..d {
                                // ∇J = −∇L
                                gsum[i] -= grad[i];
                                hsum[i] -= sign * x[i] * grad[i];
                            }
                        }
                        Ok(lp) => {
                            failure = Some(format!("log density {lp} or its gradient not finite"));
                            break 'points;
                        }
                        Err(e) if e.recoverable => {
                            failure = Some(e.to_string());
                            break 'points;
                        }
                        Err(e) => return Err(QnvbError::Density(e)),
                    }
                }
            }
            match failure {
                None => break j_sum,
                Some(last) => {
                    retries += 1;
                    if retries > s.max_retries {
                        return Err(QnvbError::NonFinite {
                            step: t,
                            retries,
                            last,
                        });
                    }
                    sigma
                        .iter_mut()
                        .for_each(|v| *v = (0.5 * *v).max(s.sigma_min));
                }
            }
        };
        k += half as u64;

        // ELBO and stopping bookkeeping (§7.5)
        let elbo =
            -j_sum / s.n_e as f64 + sigma.iter().map(|v| v.ln()).sum::<f64>() + entropy_const;
        elbo_trace.push(elbo);
        let w0 = elbo_trace.len().saturating_sub(s.window + 1);
        let tail = &elbo_trace[w0..];
        let smoothed = tail.iter().sum::<f64>() / tail.len() as f64;
        if smoothed > best + s.min_improvement {
            best = smoothed;
            since_best = 0;
        } else {
            since_best += 1;
        }

        // 2–4. per-step estimates and running averages (§5)
        n_g = (n_g + 1.0).min(n_g_max);
        n_h = (n_h + 1.0).min(n_h_max);
        let w_g = (n_g - 1.0) / n_g;
        let w_h = (n_h - 1.0) / n_h;
        let ne = s.n_e as f64;
        for i in 0..d {
            let g = gsum[i] / ne;
            let h = hsum[i] / (ne * sigma[i]);
            g_bar[i] = w_g * g_bar[i] + (1.0 - w_g) * g;
            s_bar[i] = w_h * s_bar[i] + (1.0 - w_h) * g * g;
            // 5. curvature
            kappa[i] = match s.curvature {
                CurvatureAverage::Signed => {
                    k_bar[i] = w_h * k_bar[i] + (1.0 - w_h) * h;
                    k_bar[i].max(kappa_floor)
                }
                CurvatureAverage::Rms => {
                    k_bar[i] = w_h * k_bar[i] + (1.0 - w_h) * h * h;
                    k_bar[i].sqrt().max(kappa_floor)
                }
            };
            // 6. spread, rate-bounded then boxed
            let target = kappa[i].powf(-0.5);
            sigma[i] = target
                .clamp(s.r_min * sigma[i], s.r_max * sigma[i])
                .clamp(s.sigma_min, s.sigma_max);
            // 7. mean step with the Adam-style cap; 8. transport of the averaged gradient
            let delta = g_bar[i] / kappa[i].max((s_bar[i].sqrt() + s.eps) / s.lr);
            mu[i] -= delta;
            g_bar[i] -= kappa[i] * delta;
        }

        if !progress(t, elbo) {
            stop = QnvbStop::Interrupted;
            break;
        }
        match &mut batches {
            Some((_, _, epoch_elbo, exit)) => {
                exit.iterate(&mu, &sigma);
                if epoch_end {
                    let e = epoch_elbo.value(density, &mu, &sigma)?;
                    if exit.observe(e, t + 1).2 {
                        stop = QnvbStop::Converged;
                        break;
                    }
                }
            }
            None => {
                if t + 1 >= s.min_iter && since_best >= s.patience {
                    stop = QnvbStop::Converged;
                    break;
                }
            }
        }
    }
    let (epoch_elbo, epoch_checks, epoch_means, tail) = batches
        .map(|(_, _, _, exit)| {
            (
                exit.trace().to_vec(),
                exit.checks().to_vec(),
                exit.recent_means(),
                exit.tail_average(),
            )
        })
        .unwrap_or_default();
    // minibatch: q is the average of the last epochs' iterates (EpochExit::tail_average); the
    // diagnostics below describe the last iterate's state
    let (mean, sd) = tail.unwrap_or_else(|| (mu.clone(), sigma.clone()));

    let max_scaled_gradient = g_bar
        .iter()
        .zip(&sigma)
        .map(|(g, s)| (g * s).abs())
        .fold(0.0, f64::max);
    let max_curvature_mismatch = kappa
        .iter()
        .zip(&sigma)
        .map(|(k, s)| (s * s * k - 1.0).abs())
        .fold(0.0, f64::max);
    Ok(QnvbFit {
        mean,
        variance: sd.iter().map(|v| v * v).collect(),
        iterations: elbo_trace.len(),
        elbo_trace,
        stop,
        max_scaled_gradient,
        max_curvature_mismatch,
        epoch_elbo,
        epoch_checks,
        epoch_means,
        notes: Vec::new(),
    })
}
