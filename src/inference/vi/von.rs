//! VON, variational online Newton (Khan et al. 2018; the survey's Algorithm 8), as specified
//! in `specs/survey_vi.md` §10.
//!
//! q = N(μ, P⁻¹), full covariance or diagonal. Each step draws one θ ~ q and updates
//!
//! ```text
//! P_{t+1} = (1−β)P_t + β·(−∇²L(θ))          (diagonal: the diagonal of −∇²L)
//! μ_{t+1} = μ_t + β·P_{t+1}⁻¹ ∇L(θ)
//! ```
//!
//! which is the spec's S_{t+1} = (1−β)S_t + βĤ, μ_{t+1} = μ_t − β(S_{t+1} + λ̃)⁻¹(ĝ + λ̃μ_t)
//! multiplied through by N (P = N(S + λ̃), with the prior inside L: NGVI with single-draw
//! Bonnet/Price estimates, §10). With `--batch-size` L is the batch estimate L̂_B of §2, whose
//! Hessian is unbiased (diagonal family only). The Hessian is a central finite difference of
//! the gradient ([`crate::inference::hessian`], 2d gradients per step); ∇L(θ) costs one more.
//!
//! **Failure mode (§10).** Where L is not log-concave −∇²L(θ) can be negative, and the plain
//! update then makes P indefinite: q is no longer a distribution. On the double well
//! −L = ζ⁴/4 − ζ² from μ = 0, p = 4, β = 0.9, with E_q[∇²(−L)] = 3(μ² + σ²) − 2 = −1.25, the
//! update gives 0.1·4 + 0.9·(−1.25) = −0.725 < 0 ([`precision_update`]). bayesc detects this at
//! every step ([`guarded_precision_update`]): β is halved until P stays positive definite (up
//! to 10 times; otherwise the step is skipped), and the fit's notes say how often it happened
//! and advise `ivon`, whose update keeps the precision positive (its retraction gives 2.065703
//! on the same numbers, [`super::ivon::hessian_update`]), or `vogn`.

use rand::RngExt;
use rand_distr::StandardNormal;

use super::reparam::{MAX_REDRAWS, PROBE_DRAWS, PROBE_STRIDE, check_initial_point, run_minibatch};
use super::{
    Control, Covariance, Family, FullGaussian, GaussianFit, HALF_LN_2PI, Progress, ViError,
    ViSettings,
};
use crate::inference::minibatch::MinibatchSettings;
use crate::inference::rng::{StreamRng, stream};
use crate::inference::{LogDensity, MinibatchDensity};

/// Halvings of β tried when the update makes P indefinite.
pub const MAX_HALVINGS: usize = 10;

/// Settings of VON; `Default` gives the §10 [R/X] defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct VonSettings {
    /// Exit rule, T_max, seed (T_min 500, [X]: P converges at rate 1 − β).
    pub common: ViSettings,
    /// Full or diagonal q (default full).
    pub covariance: Covariance,
    /// β in (0, 1] (default 0.05).
    pub step_size: f64,
    /// Initial precision (d×d row-major; the diagonal family uses its diagonal), e.g. the
    /// Laplace precision; `None`: P₀ = I.
    pub init_precision: Option<Vec<f64>>,
}

impl Default for VonSettings {
    fn default() -> Self {
        VonSettings {
            common: ViSettings {
                min_iter: 500,
                ..ViSettings::default()
            },
            covariance: Covariance::Full,
            step_size: 0.05,
            init_precision: None,
        }
    }
}

/// The plain VON precision update (1 − β)p + β·h for one coordinate, h = E[∇²(−L)] or its
/// one-draw estimate (§10). It can be negative: that is the failure the spec describes.
pub fn precision_update(p: f64, h: f64, beta: f64) -> f64 {
    (1.0 - beta) * p + beta * h
}

/// The diagonal update with the guard of bayesc: β halved (at most `max_halvings` times) until
/// every (1 − β)p_i + β·h_i is positive. Returns the new precisions and the number of
/// halvings, or `None` if every attempt failed.
pub fn guarded_precision_update(
    p: &[f64],
    h: &[f64],
    beta: f64,
    max_halvings: usize,
) -> Option<(Vec<f64>, usize)> {
    let mut b = beta;
    for k in 0..=max_halvings {
        let new: Vec<f64> = p
            .iter()
            .zip(h)
            .map(|(p, h)| precision_update(*p, *h, b))
            .collect();
        if new.iter().all(|x| *x > 0.0 && x.is_finite()) {
            return Some((new, k));
        }
        b *= 0.5;
    }
    None
}

/// q of a VON run: the mean and the precision (d×d row-major, or the d diagonal entries).
#[derive(Clone, Debug)]
struct Q {
    mean: Vec<f64>,
    precision: Vec<f64>,
    full: bool,
}

/// The state of a VON run.
#[derive(Clone, Debug)]
pub struct Von {
    beta: f64,
    q: Q,
    t: usize,
    /// Steps whose plain update made P indefinite.
    pub negative_steps: usize,
    /// The first such iteration.
    pub first_negative: Option<usize>,
    /// Halvings of β taken in all.
    pub halvings: usize,
    /// Steps skipped because every halving failed.
    pub skipped: usize,
    eps: Vec<f64>,
    theta: Vec<f64>,
    grad: Vec<f64>,
}

impl Von {
    /// A run from mean `init` with `settings`. Errors: settings out of range, an initial
    /// precision that is not positive definite.
    pub fn new(init: &[f64], settings: &VonSettings) -> Result<Self, ViError> {
        let d = init.len();
        if !(settings.step_size > 0.0 && settings.step_size <= 1.0) {
            return Err(ViError::InvalidSettings(format!(
                "step size is {}, but must lie in (0, 1]",
                settings.step_size
            )));
        }
        let full = settings.covariance == Covariance::Full;
        let p0 = settings.init_precision.clone().unwrap_or_else(|| {
            (0..d * d)
                .map(|k| if k / d == k % d { 1.0 } else { 0.0 })
                .collect()
        });
        if p0.len() != d * d {
            return Err(ViError::InvalidSettings(format!(
                "init_precision has {} entries, expected d×d = {}",
                p0.len(),
                d * d
            )));
        }
        let precision = if full {
            if FullGaussian::from_precision(init, &p0).is_none() {
                return Err(ViError::InvalidSettings(
                    "init_precision is not positive definite".into(),
                ));
            }
            p0
        } else {
            let diag: Vec<f64> = (0..d).map(|i| p0[i * d + i]).collect();
            if diag.iter().any(|p| !(*p > 0.0 && p.is_finite())) {
                return Err(ViError::InvalidSettings(
                    "init_precision has a non-positive diagonal".into(),
                ));
            }
            diag
        };
        Ok(Von {
            beta: settings.step_size,
            q: Q {
                mean: init.to_vec(),
                precision,
                full,
            },
            t: 0,
            negative_steps: 0,
            first_negative: None,
            halvings: 0,
            skipped: 0,
            eps: vec![0.0; d],
            theta: vec![0.0; d],
            grad: vec![0.0; d],
        })
    }

    /// μ (length d).
    pub fn mean(&self) -> &[f64] {
        &self.q.mean
    }

    /// P: d×d row-major (full) or the d precisions (diagonal).
    pub fn precision(&self) -> &[f64] {
        &self.q.precision
    }

    fn sd(&self) -> Vec<f64> {
        self.q.precision.iter().map(|p| 1.0 / p.sqrt()).collect()
    }

    /// One VON step on `density` (the full L or a batch estimate L̂_B). Returns the one-draw
    /// ELBO estimate L(θ) − log q(θ).
    pub fn step(&mut self, density: &dyn LogDensity, rng: &mut StreamRng) -> Result<f64, ViError> {
        self.t += 1;
        let d = self.q.mean.len();
        let full = self.q.full;
        let fg = full.then(|| {
            FullGaussian::from_precision(&self.q.mean, &self.q.precision)
                .expect("the precision is kept positive definite")
        });
        let mut last = String::new();
        for _ in 0..MAX_REDRAWS {
            for e in self.eps.iter_mut() {
                *e = rng.sample(StandardNormal);
            }
            let log_q = match &fg {
                Some(g) => {
                    let mut lq = [0.0];
                    let mut u = vec![0.0; g.n_directions()];
                    g.prepare(&self.eps, &mut self.theta, &mut lq, &mut u);
                    lq[0]
                }
                None => {
                    let mut lq = -(d as f64) * HALF_LN_2PI;
                    for i in 0..d {
                        let sp = self.q.precision[i].sqrt();
                        self.theta[i] = self.q.mean[i] + self.eps[i] / sp;
                        lq += sp.ln() - 0.5 * self.eps[i] * self.eps[i];
                    }
                    lq
                }
            };
            let value = match density.log_density_grad(&self.theta, &mut self.grad) {
                Ok(v) if v.is_finite() && self.grad.iter().all(|g| g.is_finite()) => v,
                Ok(v) => {
                    last = format!("log density {v} or its gradient is not finite");
                    continue;
                }
                Err(e) if e.recoverable => {
                    last = e.to_string();
                    continue;
                }
                Err(e) => return Err(ViError::Density(e)),
            };
            let hess = match crate::inference::hessian::hessian(density, &self.theta) {
                Ok(h) => h,
                Err(crate::inference::hessian::HessianError::Density(e)) if e.recoverable => {
                    last = e.to_string();
                    continue;
                }
                Err(e) => return Err(ViError::InvalidSettings(e.to_string())),
            };
            self.update(&hess);
            return Ok(value - log_q);
        }
        Err(ViError::NonFiniteDensity {
            iteration: self.t,
            attempts: MAX_REDRAWS,
            last,
        })
    }

    /// The guarded update of P and μ from ∇²L(θ) (`hess`, d×d) and ∇L(θ) (`self.grad`).
    fn update(&mut self, hess: &[f64]) {
        let d = self.q.mean.len();
        let mut beta = self.beta;
        for k in 0..=MAX_HALVINGS {
            let new_mean_p = if self.q.full {
                let p: Vec<f64> = (0..d * d)
                    .map(|j| precision_update(self.q.precision[j], -hess[j], beta))
                    .collect();
                FullGaussian::from_precision(&self.q.mean, &p).map(|g| {
                    let sigma = g.covariance_row_major();
                    let mean = (0..d)
                        .map(|i| {
                            self.q.mean[i]
                                + beta
                                    * (0..d).map(|j| sigma[i * d + j] * self.grad[j]).sum::<f64>()
                        })
                        .collect::<Vec<f64>>();
                    (mean, p)
                })
            } else {
                let h: Vec<f64> = (0..d).map(|i| -hess[i * d + i]).collect();
                guarded_precision_update(&self.q.precision, &h, beta, 0).map(|(p, _)| {
                    let mean = (0..d)
                        .map(|i| self.q.mean[i] + beta * self.grad[i] / p[i])
                        .collect();
                    (mean, p)
                })
            };
            match new_mean_p {
                Some((mean, p)) if mean.iter().all(|m| m.is_finite()) => {
                    if k > 0 {
                        self.negative_steps += 1;
                        self.first_negative.get_or_insert(self.t);
                        self.halvings += k;
                    }
                    self.q.mean = mean;
                    self.q.precision = p;
                    return;
                }
                _ => beta *= 0.5,
            }
        }
        self.negative_steps += 1;
        self.first_negative.get_or_insert(self.t);
        self.halvings += MAX_HALVINGS;
        self.skipped += 1;
    }

    /// What the user should know about the negative curvature met, if any.
    fn notes(&self) -> Vec<String> {
        match self.first_negative {
            None => Vec::new(),
            Some(first) => vec![format!(
                "VON: the Hessian at the draws made the precision indefinite at {} of {} steps \
                 (first at iteration {first}): the log density is not log-concave there \
                 (survey_vi.md §10). Those steps were shortened ({} halvings of beta in all{}), \
                 so this q is a guarded VON fit; ivon's update keeps the precision positive by \
                 construction and is the method to use here (or vogn, whose Gauss-Newton \
                 curvature is never negative)",
                self.negative_steps,
                self.t,
                self.halvings,
                if self.skipped > 0 {
                    format!(", {} steps skipped", self.skipped)
                } else {
                    String::new()
                }
            )],
        }
    }
}

/// Polyak–Ruppert average of the last [`average_len`] (μ, P) of a run (as
/// [`super::WindowMeanSd`] for the other single-draw methods; an average of positive definite P
/// is positive definite), kept as running sums ([`super::WindowSums`]: O(d) per iteration
/// for the diagonal family, O(d²) for the full one, instead of recomputing the average of up to
/// ⌈10/β⌉ = 200 copied iterates at every iteration).
struct Average {
    d: usize,
    sums: super::WindowSums,
}

impl Average {
    fn new(len: usize, q: &Q) -> Self {
        Average {
            d: q.mean.len(),
            sums: super::WindowSums::new(len, q.mean.len() + q.precision.len()),
        }
    }

    /// Adds the iterate q.
    fn push(&mut self, q: &Q) {
        let d = self.d;
        self.sums.push(|slot| {
            slot[..d].copy_from_slice(&q.mean);
            slot[d..].copy_from_slice(&q.precision);
        });
    }

    /// The average of the window into `out` (of q's family and dimension).
    fn average_into(&self, out: &mut Q) {
        let d = self.d;
        for (i, m) in out.mean.iter_mut().enumerate() {
            *m = self.sums.average(i);
        }
        for (i, p) in out.precision.iter_mut().enumerate() {
            *p = self.sums.average(d + i);
        }
    }
}

/// Iterates averaged by [`fit_von`]: max(W + 1, ⌈10/β⌉) ([X]: one VON step moves μ by about
/// β·(θ − μ), so successive iterates are correlated over ~1/β steps and their stationary noise
/// is about √(β/2)·σ; the W + 1 = 31 iterates of the other methods left the labour means 0.17
/// posterior sd from NUTS at β = 0.05, ten correlation times bring that noise to ~0.05σ).
fn average_len(settings: &VonSettings) -> usize {
    (settings.common.window + 1).max((10.0 / settings.step_size).ceil() as usize)
}

/// The exit rule's ELBO estimate at q from [`PROBE_DRAWS`] fixed standard normals (stream 2),
/// made every [`PROBE_STRIDE`] iterations ([`fit_von`]).
fn probe(density: &dyn LogDensity, q: &Q, eps: &[f64]) -> Result<f64, ViError> {
    let d = q.mean.len();
    let n = eps.len() / d;
    let (mut zeta, mut log_q) = (vec![0.0; n * d], vec![0.0; n]);
    if q.full {
        let g = FullGaussian::from_precision(&q.mean, &q.precision)
            .expect("the precision is kept positive definite");
        let mut u = vec![0.0; n * g.n_directions()];
        g.prepare(eps, &mut zeta, &mut log_q, &mut u);
    } else {
        let half_log_det: f64 = q.precision.iter().map(|p| 0.5 * p.ln()).sum();
        for s in 0..n {
            let mut sq = 0.0;
            for i in 0..d {
                let e = eps[s * d + i];
                zeta[s * d + i] = q.mean[i] + e / q.precision[i].sqrt();
                sq += e * e;
            }
            log_q[s] = -(d as f64) * HALF_LN_2PI + half_log_det - 0.5 * sq;
        }
    }
    let mut total = 0.0;
    for s in 0..n {
        match density.log_density(&zeta[s * d..(s + 1) * d]) {
            Ok(v) if v.is_finite() => total += v - log_q[s],
            Ok(_) => return Ok(f64::NEG_INFINITY),
            Err(e) if e.recoverable => return Ok(f64::NEG_INFINITY),
            Err(e) => return Err(ViError::Density(e)),
        }
    }
    Ok(total / n as f64)
}

fn into_fit(q: &Q, record: super::RunRecord) -> GaussianFit {
    if q.full {
        let g = FullGaussian::from_precision(&q.mean, &q.precision)
            .expect("an average of positive definite precisions is positive definite");
        GaussianFit::full(&g, record)
    } else {
        GaussianFit::diagonal(q.mean.clone(), q.precision.clone(), record)
    }
}

/// Fits q by VON with the common exit rule (`survey_vi.md` §1) on the average of the last
/// max(W + 1, ⌈10/β⌉) iterates, full batch. The fit's notes report negative curvature (module
/// docs). The rule sees an estimate every [`PROBE_STRIDE`] iterations (its windows counted in
/// estimates, `Tracker::with_stride`). Arguments and errors as [`super::ivon::fit_ivon`];
/// draws from stream 1 of the seed.
pub fn fit_von(
    density: &dyn LogDensity,
    init: &[f64],
    settings: &VonSettings,
    progress: &mut dyn FnMut(Progress) -> Control,
) -> Result<GaussianFit, ViError> {
    let d = density.dim();
    settings.common.validate(d, init)?;
    check_initial_point(density, init)?;
    let mut state = Von::new(init, settings)?;
    let mut rng = stream(settings.common.seed, 1);
    let mut eps_rng = stream(settings.common.seed, 2);
    let eps: Vec<f64> = (0..PROBE_DRAWS * d)
        .map(|_| eps_rng.sample(StandardNormal))
        .collect();
    // the exit rule's estimate every PROBE_STRIDE iterations, as the other full-batch loops
    let mut tracker = settings.common.tracker::<Q>().with_stride(PROBE_STRIDE);
    let mut average = Average::new(average_len(settings), &state.q);
    // the window's average at this iteration's state, formed where it is used
    let mut before = state.q.clone();
    for t in 1..=settings.common.max_iter {
        average.push(&state.q);
        let (probe_now, watch) = (tracker.probes_at(t), tracker.watches_at(t));
        if probe_now || watch {
            average.average_into(&mut before);
        }
        if watch {
            tracker.watch(t, &before.mean);
        }
        let lb = match probe_now {
            true => Some(probe(density, &before, &eps)?),
            false => None,
        };
        state.step(density, &mut rng)?;
        let stop = match lb {
            Some(lb) => tracker.observe(t, lb, &before, progress),
            None => tracker.skip(t, progress),
        };
        if stop.is_some() {
            break;
        }
    }
    average.push(&state.q);
    let mut last = state.q.clone();
    average.average_into(&mut last);
    tracker.record.skipped_steps = state.skipped;
    tracker.record.notes = state.notes();
    let (q, record) = tracker.finish(last);
    Ok(into_fit(&q, record))
}

/// Diagonal VON on batches of M rows (§2: the batch Hessian is unbiased), with the per-epoch
/// exit rule of [`super::reparam::run_minibatch`]. Errors: as [`fit_von`], plus a full
/// covariance ([`ViError::InvalidSettings`]: minibatch VON is diagonal).
pub fn fit_von_minibatch(
    density: &dyn MinibatchDensity,
    init: &[f64],
    settings: &VonSettings,
    minibatch: &MinibatchSettings,
    progress: &mut dyn FnMut(Progress) -> Control,
) -> Result<GaussianFit, ViError> {
    if settings.covariance != Covariance::Diagonal {
        return Err(ViError::InvalidSettings(
            "minibatch VON fits the diagonal family only (bayesc's minibatch path is implemented \
             for it alone): drop --full, or drop --batch-size for the full covariance"
                .into(),
        ));
    }
    settings.common.validate(density.dim(), init)?;
    check_initial_point(density, init)?;
    let mut state = Von::new(init, settings)?;
    let mut fit = run_minibatch(
        &settings.common,
        density,
        minibatch,
        &mut state,
        |s| (s.q.mean.clone(), s.sd()),
        |s, rows, rng, _| {
            let view = density.batch(rows).map_err(ViError::Density)?;
            s.step(view.as_ref(), rng)
        },
        progress,
    )?;
    fit.skipped_steps = state.skipped;
    fit.notes = state.notes();
    Ok(fit)
}
