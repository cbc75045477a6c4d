//! Monte Carlo dropout (Gal & Ghahramani 2016), as specified in `specs/survey_vi.md` §4.
//!
//! The variational family is ζ = z ⊙ M: M are the fitted weights and z_j ~ Bernoulli(p_j) is
//! shared by the coordinates of one *unit* (§4 "Family": "z is shared within a user-declared
//! group"); p_j is the keep probability, 1 for coordinates no unit contains. The units come
//! from the model (`@dropout(rate)` on a parameter, docs/variational.md), as plain index lists.
//!
//! Training maximises J(M) = E_z[L(z ⊙ M)] — the log joint at the masked weights, prior
//! included, so a Gaussian prior gives Gal's weight decay (p·τ₀/2)‖M‖² (§4 "Objective") — by
//! Adam ascent on the reparameterised gradient G = z ⊙ ∇L̂(z ⊙ M) (§4 "Update"). One mask
//! serves a whole iteration (the full data or one minibatch): by linearity it has the same
//! expectation as Gal's per-observation masks (§4), with more variance; smaller batches give
//! more masks per epoch.
//!
//! The entropy of q does not depend on M (and q has no density), so the trace the exit rule
//! reads is J(M), estimated with S = 10 masks drawn once (stream 2) and reused at every 5th
//! iteration (common random numbers, as `reparam::ElboProbe`, and its stride,
//! `reparam::PROBE_STRIDE`); the kept state is the Polyak–Ruppert average of M over the exit
//! rule's window (`super::WindowMeanSd`), as the other stochastic-gradient methods of
//! `super::reparam::run_probed`. With minibatches the
//! statistic is the full-data J once per epoch and the last iterate is returned.
//!
//! Prediction (§4 "Prediction"): the posterior draws are z_t ⊙ M for T independent masks,
//! so predictive means and variances are averages over T stochastic forward passes; they are
//! ordinary parameter vectors, which `predict` and `evaluate` use unchanged.
//!
//! [X] departures: Adam's rate stays constant (the spec's halving on a stalled epoch ELBO is
//! replaced by the window average); the mask is shared per iteration, not per observation.

use rand::RngExt;

use super::exit::RunRecord;
use super::reparam::check_initial_point;
use super::schedule::Adam;
use super::vlaplace::EpochLoop;
use super::{Control, Factor, GaussianFit, Progress, ViError, ViSettings};
use crate::inference::density::MinibatchDensity;
use crate::inference::minibatch::MinibatchSettings;
use crate::inference::rng::{StreamRng, stream};
use crate::inference::{DensityError, LogDensity};

/// Masks of the J(M) estimate the exit rule reads.
pub const PROBE_MASKS: usize = 10;

/// One unit: coordinates that share a Bernoulli mask, and its keep probability.
#[derive(Clone, Debug, PartialEq)]
pub struct DropoutUnit {
    /// 0-based unconstrained coordinates.
    pub coords: Vec<usize>,
    /// p, the keep probability (1 − the drop rate), in (0, 1).
    pub keep: f64,
}

/// Settings of MC dropout; `Default` has no units (a fit then refuses to run).
#[derive(Clone, Debug, PartialEq)]
pub struct McDropoutSettings {
    /// Exit rule, T_max, seed.
    pub common: ViSettings,
    /// Adam's learning rate (default 0.01, §4 [X]).
    pub lr: f64,
    /// The units (from the model's `@dropout` sites).
    pub units: Vec<DropoutUnit>,
}

impl Default for McDropoutSettings {
    fn default() -> Self {
        McDropoutSettings {
            common: ViSettings {
                min_iter: 1000,
                ..ViSettings::default()
            },
            lr: 0.01,
            units: Vec::new(),
        }
    }
}

/// The message when a model has no dropout site.
pub const NO_DROPOUT_SITE: &str = "MC dropout needs units to drop, and the model has none: \
    annotate the weights, e.g. `@dropout(0.1) matrix[K, H] W1;` in the `parameters` block \
    (each row, an input unit, is dropped with probability 0.1; docs/variational.md), or use a \
    method that needs no dropout site (`--method ivon`, `bbb`, `qnvb` or `nuts`)";

/// A mask z (one keep/drop per unit) as per-coordinate factors (1 or 0).
fn draw_mask(units: &[DropoutUnit], d: usize, rng: &mut StreamRng, z: &mut Vec<f64>) {
    z.clear();
    z.resize(d, 1.0);
    for u in units {
        let keep = rng.random::<f64>() < u.keep;
        if !keep {
            for &j in &u.coords {
                z[j] = 0.0;
            }
        }
    }
}

/// The state of an MC-dropout run: the weights M and Adam on them.
#[derive(Clone, Debug)]
pub struct McDropout {
    settings: McDropoutSettings,
    /// M (length d).
    pub weights: Vec<f64>,
    adam: Adam,
    mask: Vec<f64>,
    theta: Vec<f64>,
    grad: Vec<f64>,
    step: Vec<f64>,
}

impl McDropout {
    /// A run from `init` (length d). Errors: no units, a unit out of range or overlapping
    /// another, a keep probability outside (0, 1), a bad learning rate.
    pub fn new(init: &[f64], settings: &McDropoutSettings) -> Result<Self, ViError> {
        let d = init.len();
        if settings.units.is_empty() {
            return Err(ViError::Unsuitable(NO_DROPOUT_SITE.into()));
        }
        let mut seen = vec![false; d];
        for u in &settings.units {
            if !(u.keep > 0.0 && u.keep < 1.0) {
                return Err(ViError::InvalidSettings(format!(
                    "a unit's keep probability is {}, but must lie in (0, 1)",
                    u.keep
                )));
            }
            for &j in &u.coords {
                if j >= d || seen[j] {
                    return Err(ViError::InvalidSettings(format!(
                        "dropout unit coordinate {j} is out of range or in two units (d = {d})"
                    )));
                }
                seen[j] = true;
            }
        }
        if !(settings.lr > 0.0 && settings.lr.is_finite()) {
            return Err(ViError::InvalidSettings(format!(
                "lr is {}, but must be positive",
                settings.lr
            )));
        }
        Ok(McDropout {
            settings: settings.clone(),
            weights: init.to_vec(),
            adam: Adam::new(d),
            mask: vec![1.0; d],
            theta: vec![0.0; d],
            grad: vec![0.0; d],
            step: vec![0.0; d],
        })
    }

    /// Sets Adam's learning rate (for a decay schedule driven by the caller).
    pub fn set_lr(&mut self, lr: f64) {
        self.settings.lr = lr;
    }

    /// One step on `density` (L or a batch's L̂_B): a fresh mask z (redrawn up to 10 times
    /// when L is not finite at z ⊙ M), G = z ⊙ ∇L(z ⊙ M), Adam's ascent step. Returns
    /// L(z ⊙ M).
    pub fn step(
        &mut self,
        density: &dyn LogDensity,
        rng: &mut StreamRng,
        iteration: usize,
    ) -> Result<f64, ViError> {
        let d = self.weights.len();
        let mut last = String::new();
        for _ in 0..super::reparam::MAX_REDRAWS {
            draw_mask(&self.settings.units, d, rng, &mut self.mask);
            for j in 0..d {
                self.theta[j] = self.mask[j] * self.weights[j];
            }
            match density.log_density_grad(&self.theta, &mut self.grad) {
                Ok(v) if v.is_finite() && self.grad.iter().all(|g| g.is_finite()) => {
                    for j in 0..d {
                        self.grad[j] *= self.mask[j];
                    }
                    self.adam
                        .step(&self.grad, self.settings.lr, None, &mut self.step);
                    for j in 0..d {
                        self.weights[j] += self.step[j];
                    }
                    return Ok(v);
                }
                Ok(v) => last = format!("log density {v} or its gradient is not finite"),
                Err(e) if e.recoverable => last = e.to_string(),
                Err(e) => return Err(ViError::Density(e)),
            }
        }
        Err(ViError::NonFiniteDensity {
            iteration,
            attempts: super::reparam::MAX_REDRAWS,
            last,
        })
    }
}

/// J(M) = E_z[L(z ⊙ M)] estimated with [`PROBE_MASKS`] fixed masks (stream 2 of the seed),
/// stratified per unit ([X]): each unit is dropped in exactly k of the S masks, k = S(1 − p)
/// rounded at random to an integer with the right mean, at positions of a random permutation.
/// Every mask is still an exact draw of q (so the estimate is unbiased), but the drop frequency
/// of every unit is exact: with S = 10 independent masks and p = 0.9, 35 % of probes drop
/// nothing, and the estimate then tracks L(M), whose maximum is the MAP, not J's (measured on
/// T2: the exit rule kept the iterates near the MAP).
struct MaskProbe {
    masks: Vec<Vec<f64>>,
}

impl MaskProbe {
    fn new(units: &[DropoutUnit], d: usize, seed: u64) -> Self {
        use rand::seq::SliceRandom;
        let mut rng = stream(seed, 2);
        let s = PROBE_MASKS;
        let mut masks = vec![vec![1.0; d]; s];
        let mut order: Vec<usize> = (0..s).collect();
        for u in units {
            let expected = s as f64 * (1.0 - u.keep);
            let mut k = expected.floor() as usize;
            if rng.random::<f64>() < expected - k as f64 {
                k += 1;
            }
            order.shuffle(&mut rng);
            for &m in &order[..k.min(s)] {
                for &j in &u.coords {
                    masks[m][j] = 0.0;
                }
            }
        }
        MaskProbe { masks }
    }

    /// The estimate at M; −∞ when L is not finite at a masked point. Errors: unrecoverable
    /// model errors.
    fn value(&self, density: &dyn LogDensity, m: &[f64]) -> Result<f64, DensityError> {
        let mut total = 0.0;
        let mut theta = vec![0.0; m.len()];
        for z in &self.masks {
            for j in 0..m.len() {
                theta[j] = z[j] * m[j];
            }
            match density.log_density(&theta) {
                Ok(v) if v.is_finite() => total += v,
                Ok(_) => return Ok(f64::NEG_INFINITY),
                Err(e) if e.recoverable => return Ok(f64::NEG_INFINITY),
                Err(e) => return Err(e),
            }
        }
        Ok(total / self.masks.len() as f64)
    }
}

/// A fitted MC-dropout approximation: the weights M, the units, and the run's record in a
/// [`GaussianFit`] whose mean and variances are q's moments, E[z ⊙ M] = p ⊙ M and
/// Var = p(1 − p)M² (a coordinate outside every unit has variance 0, stored as 10⁻³⁰⁰). That
/// Gaussian is a summary only: draws come from [`McDropoutFit::sample`].
#[derive(Clone, Debug)]
pub struct McDropoutFit {
    /// The run's record, with q's mean and variances (see above).
    pub summary: GaussianFit,
    /// M (length d).
    pub weights: Vec<f64>,
    /// The units.
    pub units: Vec<DropoutUnit>,
}

impl McDropoutFit {
    fn new(mut record_fit: GaussianFit, weights: Vec<f64>, units: Vec<DropoutUnit>) -> Self {
        let d = weights.len();
        let mut keep = vec![1.0; d];
        for u in &units {
            for &j in &u.coords {
                keep[j] = u.keep;
            }
        }
        let mean: Vec<f64> = (0..d).map(|j| keep[j] * weights[j]).collect();
        let var: Vec<f64> = (0..d)
            .map(|j| (keep[j] * (1.0 - keep[j]) * weights[j] * weights[j]).max(1e-300))
            .collect();
        record_fit.precision = var.iter().map(|v| 1.0 / v).collect();
        record_fit.factor =
            Factor::Diagonal(record_fit.precision.iter().map(|p| p.sqrt()).collect());
        record_fit.mean = mean;
        record_fit.covariance = var;
        McDropoutFit {
            summary: record_fit,
            weights,
            units,
        }
    }

    /// `n` draws z_t ⊙ M (each of length d), T = n stochastic forward passes' weights.
    pub fn sample(&self, n: usize, rng: &mut StreamRng) -> Vec<Vec<f64>> {
        let d = self.weights.len();
        let mut z = Vec::new();
        (0..n)
            .map(|_| {
                draw_mask(&self.units, d, rng, &mut z);
                (0..d).map(|j| z[j] * self.weights[j]).collect()
            })
            .collect()
    }

    /// log P(z) of the mask that produced `zeta` (a unit counts as dropped when all its
    /// coordinates are 0): the log probability mass of the draw under q, CmdStan's `log_g__`
    /// column for this discrete family.
    pub fn log_mask_probability(&self, zeta: &[f64]) -> f64 {
        self.units
            .iter()
            .map(|u| {
                let dropped = u.coords.iter().all(|&j| zeta[j] == 0.0);
                if dropped {
                    (1.0 - u.keep).ln()
                } else {
                    u.keep.ln()
                }
            })
            .sum()
    }
}

/// Fits MC dropout on the full data with the common exit rule on J(M) (module docs).
///
/// - `density`: L(ζ), with gradients; `init`: the initial weights (length d), L finite there.
/// - `progress`: called after every iteration; [`Control::Stop`] ends the fit (interrupted).
///
/// Errors: [`ViError::Unsuitable`] with [`NO_DROPOUT_SITE`] when there are no units;
/// [`ViError::InvalidSettings`], [`ViError::InitialPoint`], [`ViError::NonFiniteDensity`],
/// [`ViError::Density`]. Reproducible: masks from stream 1, probe masks from stream 2.
pub fn fit_mcdropout(
    density: &dyn LogDensity,
    init: &[f64],
    settings: &McDropoutSettings,
    progress: &mut dyn FnMut(Progress) -> Control,
) -> Result<McDropoutFit, ViError> {
    let mut state = McDropout::new(init, settings)?;
    settings.common.validate(density.dim(), init)?;
    check_initial_point(density, init)?;
    let d = init.len();
    let probe = MaskProbe::new(&settings.units, d, settings.common.seed);
    let fit = super::reparam::run_probed(
        &settings.common,
        &mut state,
        d,
        |s, m, sd| {
            m.copy_from_slice(&s.weights);
            sd.fill(1.0);
        },
        |s| probe.value(density, &s.weights).map_err(ViError::Density),
        |s, rng, t| s.step(density, rng, t).map(|_| ()),
        progress,
    )?;
    let weights = fit.mean.clone();
    Ok(McDropoutFit::new(fit, weights, settings.units.clone()))
}

/// Fits MC dropout on minibatches (§2, §4): one batch and one mask per iteration, the exit
/// rule once per epoch on the full-data J(M); returns the last iterate.
///
/// Errors: as [`fit_mcdropout`], plus a batch size outside 1..=N. Reproducible: batches from
/// stream 7, masks from stream 1, probe masks from stream 2 of the seed.
pub fn fit_mcdropout_minibatch(
    density: &dyn MinibatchDensity,
    init: &[f64],
    settings: &McDropoutSettings,
    minibatch: &MinibatchSettings,
    progress: &mut dyn FnMut(Progress) -> Control,
) -> Result<McDropoutFit, ViError> {
    let mut state = McDropout::new(init, settings)?;
    settings.common.validate(density.dim(), init)?;
    check_initial_point(density, init)?;
    let d = init.len();
    let probe = MaskProbe::new(&settings.units, d, settings.common.seed);
    let mut rng = stream(settings.common.seed, 1);
    let mut epochs = EpochLoop::new(density, minibatch, settings.common.seed)?;
    let full: &dyn LogDensity = density;
    epochs.statistic = Some(Box::new(move |m: &[f64]| probe.value(full, m)));
    for t in 1..=settings.common.max_iter {
        let (rows, epoch_end) = epochs.next_rows();
        let view = density.batch(&rows).map_err(ViError::Density)?;
        let lb = state.step(view.as_ref(), &mut rng, t)?;
        let w = state.weights.clone();
        if epochs.observe(
            t,
            lb,
            epoch_end,
            settings.common.max_iter,
            || (w, vec![1.0; d]),
            progress,
        )? {
            break;
        }
    }
    // MC dropout returns its last weights (survey_vi.md §4), not an average of iterates
    let (record, _): (RunRecord, _) = epochs.finish();
    let weights = state.weights.clone();
    let summary = GaussianFit::diagonal(weights.clone(), vec![1.0; d], record);
    Ok(McDropoutFit::new(summary, weights, settings.units.clone()))
}
