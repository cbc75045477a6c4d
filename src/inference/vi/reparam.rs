//! Reparameterised draws θ = μ + σ⊙ε from a diagonal Gaussian with the log density and its
//! gradient there: what the gradient-based survey methods evaluate per draw
//! (`specs/survey_vi.md` §5, §9, §10, §17). Non-finite values and recoverable model errors are
//! redrawn, as QBVI does (`specs/qbvi.md` §6).

use rand::RngExt;
use rand_distr::StandardNormal;

use super::{HALF_LN_2PI, ViError};
use crate::inference::LogDensity;
use crate::inference::rng::StreamRng;

/// Consecutive failed draws tolerated before giving up.
pub(crate) const MAX_REDRAWS: usize = 10;

/// One draw: ε, θ = μ + σ⊙ε, L(θ), ∇L(θ) and log q(θ) (all vectors of length d).
#[derive(Clone, Debug)]
pub(crate) struct GradDraw {
    pub(crate) eps: Vec<f64>,
    pub(crate) theta: Vec<f64>,
    pub(crate) value: f64,
    pub(crate) grad: Vec<f64>,
    pub(crate) log_q: f64,
}

impl GradDraw {
    pub(crate) fn new(d: usize) -> Self {
        GradDraw {
            eps: vec![0.0; d],
            theta: vec![0.0; d],
            value: 0.0,
            grad: vec![0.0; d],
            log_q: 0.0,
        }
    }

    /// Draws θ ~ N(mean, diag sd²) and evaluates L and ∇L there, redrawing up to
    /// [`MAX_REDRAWS`] times when they are not finite or the model reports a recoverable error.
    pub(crate) fn draw(
        &mut self,
        density: &dyn LogDensity,
        mean: &[f64],
        sd: &[f64],
        rng: &mut StreamRng,
        iteration: usize,
    ) -> Result<(), ViError> {
        let d = mean.len();
        let log_det: f64 = sd.iter().map(|s| s.ln()).sum();
        let mut last = String::new();
        for _ in 0..MAX_REDRAWS {
            let mut sq = 0.0;
            for i in 0..d {
                self.eps[i] = rng.sample(StandardNormal);
                self.theta[i] = mean[i] + sd[i] * self.eps[i];
                sq += self.eps[i] * self.eps[i];
            }
            self.log_q = -(d as f64) * HALF_LN_2PI - log_det - 0.5 * sq;
            match density.log_density_grad(&self.theta, &mut self.grad) {
                Ok(v) if v.is_finite() && self.grad.iter().all(|g| g.is_finite()) => {
                    self.value = v;
                    return Ok(());
                }
                Ok(v) => last = format!("log density {v} or its gradient is not finite"),
                Err(e) if e.recoverable => last = e.to_string(),
                Err(e) => return Err(ViError::Density(e)),
            }
        }
        Err(ViError::NonFiniteDensity {
            iteration,
            attempts: MAX_REDRAWS,
            last,
        })
    }
}

/// Checks that L is finite at `init`.
pub(crate) fn check_initial_point(density: &dyn LogDensity, init: &[f64]) -> Result<(), ViError> {
    match density.log_density(init) {
        Ok(v) if v.is_finite() => Ok(()),
        Ok(v) => Err(ViError::InitialPoint(format!("log density is {v}"))),
        Err(e) => Err(ViError::InitialPoint(e.to_string())),
    }
}

/// Draws of the ELBO estimate the exit rule sees for the single-draw methods (`survey_vi.md`
/// §1: "on the full data with S = 10 draws").
pub(crate) const PROBE_DRAWS: usize = 10;

/// The ELBO estimate of the exit rule for the stochastic-gradient mean-field methods:
/// (1/S)Σ_k [L(μ + σ⊙ε_k) − log q(μ + σ⊙ε_k)] with S = [`PROBE_DRAWS`] standard normals ε_k drawn
/// once (stream 2 of the seed) and reused at every iteration ([X]: common random numbers, so
/// that consecutive estimates differ by the change of q, not by fresh Monte Carlo noise; with
/// fresh S = 1 draws the exit rule fired on labour before IVON's mean had left the mode).
pub(crate) struct ElboProbe {
    eps: Vec<Vec<f64>>,
    theta: Vec<f64>,
}

impl ElboProbe {
    pub(crate) fn new(d: usize, seed: u64) -> Self {
        let mut rng = crate::inference::rng::stream(seed, 2);
        let eps = (0..PROBE_DRAWS)
            .map(|_| (0..d).map(|_| rng.sample(StandardNormal)).collect())
            .collect();
        ElboProbe {
            eps,
            theta: vec![0.0; d],
        }
    }

    /// The estimate at q = N(mean, diag sd²); −∞ if L is not finite at a probe point.
    /// Errors: an unrecoverable model error.
    pub(crate) fn estimate(
        &mut self,
        density: &dyn LogDensity,
        mean: &[f64],
        sd: &[f64],
    ) -> Result<f64, ViError> {
        let d = mean.len();
        let log_det: f64 = sd.iter().map(|s| s.ln()).sum();
        let mut total = 0.0;
        for e in &self.eps {
            let mut sq = 0.0;
            for i in 0..d {
                self.theta[i] = mean[i] + sd[i] * e[i];
                sq += e[i] * e[i];
            }
            let log_q = -(d as f64) * HALF_LN_2PI - log_det - 0.5 * sq;
            match density.log_density(&self.theta) {
                Ok(v) if v.is_finite() => total += v - log_q,
                Ok(_) => return Ok(f64::NEG_INFINITY),
                Err(e) if e.recoverable => return Ok(f64::NEG_INFINITY),
                Err(e) => return Err(ViError::Density(e)),
            }
        }
        Ok(total / PROBE_DRAWS as f64)
    }
}

/// k: the full-batch loop [`run_probed`] evaluates its exit rule's ELBO estimate (the
/// [`PROBE_DRAWS`]-draw [`ElboProbe`], or MC dropout's mask probe) at iterations 1, k + 1,
/// 2k + 1, … only, and the rule counts its windows in estimates ([`super::Tracker::with_stride`]:
/// W = 30 and P_max = 50 iterations become 6 and 10 estimates spanning the same iterations).
///
/// [X], a design decision (`survey_vi.md` §1 has the rule see an estimate at every
/// iteration). Why: the probe costs 10 log densities beside the method's one gradient; measured
/// with `perf` on full-batch BBB (3000 iterations from the vi_peers start, seed 1), it took
/// 88 % of the loop's CPU on labour and 70 % on the diabetes BNN at H = 50 (one log density
/// costs 0.85 and 0.6 of a gradient there). Every 5th iteration it costs 2 log densities per
/// iteration, and the CPU per iteration fell 3.3× (labour) and 2.4× (BNN). The estimates are
/// unchanged (the same fixed draws), so is the noise of each; consecutive iterates move by a
/// small step (Adam's lr, IVON's and VOGN's averaged gradients, VON's β), so 7 estimates 5
/// iterations apart see about the same fluctuation of q as 31 consecutive ones. Measured on
/// labour, seeds 1–12 from the Laplace start (BBB, IVON, VOGN, VON): 47 of 48 runs stop at
/// the same iteration up to the stride (T_min + 1 for BBB, IVON, VOGN; VON 500, 521, 564, 759
/// → 501, 531, 571, 761; one BBB run 3028 → 3001, one VOGN run 3000 → 3036), the same number
/// of "converged" verdicts per method, and the largest distance
/// of a mean from NUTS in the seed-to-seed spread (averages 0.172 → 0.164, 0.201 → 0.198,
/// 0.143 → 0.124, 0.139 → 0.139 NUTS sds); docs/variational.md, "Where the time of an
/// iteration goes".
pub(crate) const PROBE_STRIDE: usize = 5;

/// The loop the stochastic-gradient mean-field methods share (BBVI and NG-BBVI, whose steps
/// estimate the ELBO from their own draws): at iteration t, add (μ, σ) of `state` to the
/// window average (`mean_sd(state, μ, σ)` writes them, length d each), let `iterate` return
/// LB_t at that state and then update it, and hand the averaged iterate to the exit rule
/// (`survey_vi.md` §1; the Polyak–Ruppert average of [`super::WindowMeanSd`]). Draws come from
/// stream 1 of the seed. Returns the kept averaged iterate as a diagonal
/// [`super::GaussianFit`]; errors are those of `iterate`.
pub(crate) fn run_averaged<S>(
    common: &super::ViSettings,
    state: &mut S,
    d: usize,
    mean_sd: impl Fn(&S, &mut [f64], &mut [f64]),
    mut iterate: impl FnMut(
        &mut S,
        &mut crate::inference::rng::StreamRng,
        usize,
    ) -> Result<f64, ViError>,
    progress: &mut dyn FnMut(super::Progress) -> super::Control,
) -> Result<super::GaussianFit, ViError> {
    run_strided(
        common,
        state,
        d,
        mean_sd,
        1,
        |s, rng, t, _| iterate(s, rng, t).map(Some),
        progress,
    )
}

/// [`run_averaged`] for the methods whose exit rule needs an ELBO estimate of its own (IVON,
/// BBB, VOGN and MC dropout on the full data): `probe` estimates LB_t at the state at the
/// iterations 1, k + 1, 2k + 1, … of [`PROBE_STRIDE`] only, `step` updates the state at every
/// iteration, and the rule counts its windows in estimates ([`super::Tracker::with_stride`]);
/// the window average still takes every iterate. `elbo_trace` holds the estimates.
pub(crate) fn run_probed<S>(
    common: &super::ViSettings,
    state: &mut S,
    d: usize,
    mean_sd: impl Fn(&S, &mut [f64], &mut [f64]),
    mut probe: impl FnMut(&S) -> Result<f64, ViError>,
    mut step: impl FnMut(&mut S, &mut crate::inference::rng::StreamRng, usize) -> Result<(), ViError>,
    progress: &mut dyn FnMut(super::Progress) -> super::Control,
) -> Result<super::GaussianFit, ViError> {
    run_strided(
        common,
        state,
        d,
        mean_sd,
        PROBE_STRIDE,
        |s, rng, t, probe_now| {
            let lb = if probe_now { Some(probe(s)?) } else { None };
            step(s, rng, t)?;
            Ok(lb)
        },
        progress,
    )
}

/// The loop of [`run_averaged`] and [`run_probed`] with an exit rule that sees an estimate
/// every `stride` iterations: `iterate(state, rng, t, probe_now)` returns LB_t (at the state
/// before its update) when `probe_now`, else `None`, and updates the state. Each iteration
/// adds (μ, σ) to the window's running sums, O(d); the average is formed only where it is used
/// (an estimate for the exit rule, a snapshot for the drift check, the end), so the kept iterate
/// and the returned q are those of recomputing the average at every iteration up to rounding
/// ([`super::exit::WindowSums`]).
fn run_strided<S>(
    common: &super::ViSettings,
    state: &mut S,
    d: usize,
    mean_sd: impl Fn(&S, &mut [f64], &mut [f64]),
    stride: usize,
    mut iterate: impl FnMut(
        &mut S,
        &mut crate::inference::rng::StreamRng,
        usize,
        bool,
    ) -> Result<Option<f64>, ViError>,
    progress: &mut dyn FnMut(super::Progress) -> super::Control,
) -> Result<super::GaussianFit, ViError> {
    let mut rng = crate::inference::rng::stream(common.seed, 1);
    let mut tracker = common.tracker::<(Vec<f64>, Vec<f64>)>().with_stride(stride);
    let mut window = super::WindowMeanSd::new(common.window, d);
    // the average (μ̄, 1/σ̄²) of the window ending at this iteration's state, where it is used
    let mut before = (vec![0.0; d], vec![0.0; d]);
    for t in 1..=common.max_iter {
        window.push(|m, sd| mean_sd(state, m, sd));
        let lb = iterate(state, &mut rng, t, tracker.probes_at(t))?;
        let watch = tracker.watches_at(t);
        if lb.is_some() || watch {
            window.average_into(&mut before.0, &mut before.1);
        }
        if watch {
            tracker.watch(t, &before.0);
        }
        let stop = match lb {
            Some(lb) => tracker.observe(t, lb, &before, progress),
            None => tracker.skip(t, progress),
        };
        if stop.is_some() {
            break;
        }
    }
    window.push(|m, sd| mean_sd(state, m, sd));
    let ((mean, p), record) = tracker.finish(window.average());
    Ok(super::GaussianFit::diagonal(mean, p, record))
}

/// The minibatch loop of the stochastic-gradient mean-field methods (IVON, BBB, Vadam, VOGN
/// with `--batch-size`; `survey_vi.md` §2): iteration t takes the next batch of
/// [`EpochBatches`] (a fresh permutation per epoch), lets `iterate` update `state` on those
/// rows and return its (batch) ELBO estimate LB_t, which goes to `elbo_trace`. The exit rule
/// runs once per epoch on the full-data ELBO from fixed draws and counts patience in epochs
/// ([`EpochElbo`], [`EpochExit`]; §1 "Minibatch methods"), as minibatch QBVI and QNVB do. The
/// returned q is the average of the iterates of the last epochs ([`EpochExit::tail_average`],
/// the Polyak–Ruppert average; the full-batch loop [`run_averaged`] averages its last W + 1
/// iterates). Draws from stream 1 of the
/// seed; `common.max_iter` bounds the iterations; `window`/`patience`/`keep_best` are not used.
///
/// Errors: a batch size outside 1..=N ([`ViError::InvalidSettings`]) and whatever `iterate`
/// or the full-data ELBO returns.
pub(crate) fn run_minibatch<S>(
    common: &super::ViSettings,
    density: &dyn crate::inference::MinibatchDensity,
    minibatch: &crate::inference::minibatch::MinibatchSettings,
    state: &mut S,
    mean_sd: impl Fn(&S) -> (Vec<f64>, Vec<f64>),
    mut iterate: impl FnMut(
        &mut S,
        &[usize],
        &mut crate::inference::rng::StreamRng,
        usize,
    ) -> Result<f64, ViError>,
    progress: &mut dyn FnMut(super::Progress) -> super::Control,
) -> Result<super::GaussianFit, ViError> {
    use crate::inference::minibatch::{EpochBatches, EpochElbo, EpochExit};
    let d = density.dim();
    let mut batches = EpochBatches::new(density.n_obs(), minibatch.batch_size, common.seed)
        .map_err(ViError::InvalidSettings)?;
    let epoch_elbo = EpochElbo::new(d, minibatch.elbo_draws, common.seed);
    let mut exit = EpochExit::new(minibatch);
    let mut rng = crate::inference::rng::stream(common.seed, 1);
    let mut tracker = common.tracker::<()>();
    // the full-data ELBO of the initial q, so that the report can tell a fit that ended below
    // its start (GaussianFit::worsened)
    let (m0, sd0) = mean_sd(state);
    tracker.record.start_elbo = Some(
        epoch_elbo
            .value(density, &m0, &sd0)
            .map_err(ViError::Density)?,
    );
    for t in 1..=common.max_iter {
        let (rows, epoch_end) = batches.next_batch();
        let rows = rows.to_vec();
        let lb = iterate(state, &rows, &mut rng, t)?;
        let (m, sd) = mean_sd(state);
        exit.iterate(&m, &sd);
        tracker.record.elbo_trace.push(lb);
        let mut smoothed = None;
        let mut epoch_stop = false;
        if epoch_end {
            let e = epoch_elbo
                .value(density, &m, &sd)
                .map_err(ViError::Density)?;
            let (sm, improved, stop) = exit.observe(e, t);
            if improved {
                tracker.record.best_smoothed_elbo = sm;
            }
            smoothed = Some(sm);
            epoch_stop = stop;
        }
        let control = progress(super::Progress {
            iteration: t,
            elbo: lb,
            smoothed_elbo: smoothed,
        });
        let reason = if control == super::Control::Stop {
            Some(super::StopReason::Interrupted)
        } else if epoch_stop {
            Some(super::StopReason::ExitRule)
        } else if t >= common.max_iter {
            Some(super::StopReason::MaxIterations)
        } else {
            None
        };
        if let Some(r) = reason {
            tracker.record.stop = r;
            break;
        }
    }
    tracker.record.epoch_elbo = exit.trace().to_vec();
    tracker.record.epoch_checks = exit.checks().to_vec();
    tracker.record.epoch_means = exit.recent_means();
    let (mean, sd) = exit.tail_average().unwrap_or_else(|| mean_sd(state));
    let p = sd.iter().map(|s| 1.0 / (s * s)).collect();
    let ((), record) = tracker.finish(());
    Ok(super::GaussianFit::diagonal(mean, p, record))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `run_probed` estimates the ELBO at iterations 1, 6, 11, … (at the state before that
    /// iteration's step) and steps at every iteration; the window average takes every iterate.
    #[test]
    fn run_probed_probes_every_stride_and_steps_every_iteration() {
        let common = super::super::ViSettings {
            max_iter: 12,
            ..Default::default()
        };
        let mut state = 0.0_f64;
        let mut probed = Vec::new();
        let fit = run_probed(
            &common,
            &mut state,
            1,
            |s, m, sd| (m[0], sd[0]) = (*s, 1.0),
            |s| {
                probed.push(*s);
                Ok(-*s)
            },
            |s, _, _| {
                *s += 1.0;
                Ok(())
            },
            &mut |_| super::super::Control::Continue,
        )
        .expect("runs");
        assert_eq!(PROBE_STRIDE, 5);
        assert_eq!(probed, vec![0.0, 5.0, 10.0]);
        assert_eq!(fit.elbo_trace, vec![0.0, -5.0, -10.0]);
        assert_eq!((fit.iterations, fit.trace_stride), (12, 5));
        assert_eq!(fit.stop, super::super::StopReason::MaxIterations);
        // no smoothed value yet (W = 6 estimates): the last iterate's window average, the
        // mean of the states 0..=12 (the last W + 1 = 31 iterates)
        assert_eq!(fit.mean, vec![6.0]);
        assert_eq!(fit.returned_iteration, 12);
    }
}
