//! The ELBO trace and the common stopping rule of every Gaussian variational method: the
//! smoothed-ELBO patience rule of `specs/qbvi.md` §7.2 (`specs/survey_vi.md` §1, "Common
//! stopping rule"), the kept iterate, and the progress callback.

use super::gaussian::GaussianFit;
use super::{Covariance, Factor};

/// Why a fit stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// The smoothed ELBO did not improve for more than `patience` iterations (§7.2).
    ExitRule,
    /// `max_iter` iterations were run.
    MaxIterations,
    /// The progress callback returned [`Control::Stop`] (e.g. Ctrl-C).
    Interrupted,
}

/// Reported to the progress callback after every iteration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Progress {
    /// t, starting at 1.
    pub iteration: usize,
    /// LB_t, the ELBO estimate of this iteration (§7.1).
    pub elbo: f64,
    /// The smoothed ELBO L̄_t (§7.2), once t > W.
    pub smoothed_elbo: Option<f64>,
}

/// The progress callback's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    /// Keep iterating.
    Continue,
    /// Stop now and return the kept parameters with [`StopReason::Interrupted`].
    Stop,
}

/// The smoothed-ELBO exit rule of §7.2, with one departure ([X]): a smoothed ELBO equal to the
/// best so far keeps the later parameters (as the spec's `≥`) but does not reset the patience
/// count; only a strictly larger value does. With the spec's `≥`, a smoothed ELBO that is
/// exactly constant — which happens when the Laplace start is the exact posterior (a Gaussian
/// target): f = L − log q is then constant up to rounding, the gradient estimate vanishes, q stops
/// changing to the last bit and LB_t repeats the same value — counts as an improvement at every
/// iteration, and the fit runs to `max_iter`. A constant smoothed ELBO is converged.
pub(crate) struct ExitRule {
    pub(crate) window: usize,
    pub(crate) patience: usize,
    pub(crate) best: f64,
    pub(crate) count: usize,
}

impl ExitRule {
    /// Observes the trace after LB_t was appended; returns L̄_t (if t > W) and whether to keep
    /// the current parameters (L̄_t ≥ best: ties keep the later parameters; only L̄_t > best
    /// resets the patience count).
    pub(crate) fn observe(&mut self, trace: &[f64]) -> (Option<f64>, bool) {
        let t = trace.len();
        if t <= self.window {
            return (None, false);
        }
        let w = &trace[t - self.window - 1..];
        let smoothed = w.iter().sum::<f64>() / w.len() as f64;
        if smoothed > self.best {
            self.best = smoothed;
            self.count = 0;
            (Some(smoothed), true)
        } else {
            self.count += 1;
            (Some(smoothed), smoothed == self.best)
        }
    }

    pub(crate) fn exhausted(&self) -> bool {
        self.count > self.patience
    }
}

/// The trend guard of the full-data exit rule ([X], a departure from `qbvi.md` §7.2, which
/// stops once the smoothed ELBO has not improved for P_max iterations): the rule does not fire
/// while the per-iteration ELBO trace is still rising ([`Tracker::observe`]). It judges the last
/// 2h iterations, h = min(500, len/4) (at least 25): rising when the slope exceeds 4 standard
/// errors and the gain over h iterations 0.1 nats ([`crate::diagnostics::trend::rise`]). The
/// window is the last half of the run at most, so that the climb from the start of a short
/// run is not taken for a trend.
///
/// Why: a stochastic method creeping along a flat direction raises its smoothed ELBO by less
/// than its noise within the patience window. On eight schools (seed 1) NG-BBVI stopped after
/// 2077 iterations with the ELBO still climbing 0.37 nats per 500 iterations (t = 40), at
/// tau's mean 7.0 (the mean-field optimum: 3.4) and 0.7 nats below the optimum; MGVB (0.35
/// nats, t = 25) and IVON (0.25, t = 4.6) stopped on a rising trace too. On labour no method's
/// stop is held back (largest: VON at 0.04 nats). A false alarm only lengthens the run. A trace
/// thinned by a stride k judges it in estimates ([`Tracker::with_stride`]).
pub const ITERATION_TREND: crate::diagnostics::trend::Guard = crate::diagnostics::trend::Guard {
    half_max: 500,
    divisor: 4,
    half_min: 25,
    t: 4.0,
    min_rise: 0.1,
};

/// Bookkeeping of a run, turned into a [`GaussianFit`] at the end.
#[derive(Clone, Debug)]
pub(crate) struct RunRecord {
    pub(crate) elbo_trace: Vec<f64>,
    pub(crate) smoothed_elbo: Vec<f64>,
    pub(crate) stop: StopReason,
    pub(crate) skipped_steps: usize,
    pub(crate) best_smoothed_elbo: f64,
    pub(crate) returned_iteration: usize,
    pub(crate) notes: Vec<String>,
    /// Minibatch fits only: the full-data ELBO at the end of every epoch (`inference::minibatch`).
    pub(crate) epoch_elbo: Vec<f64>,
    /// Minibatch fits only: every look of the exit rule at the full-data ELBO
    /// ([`crate::inference::minibatch::EpochExit::checks`]).
    pub(crate) epoch_checks: Vec<crate::inference::minibatch::EpochCheck>,
    /// Minibatch fits that measure it: the full-data ELBO of the initial q, from the same
    /// draws as `epoch_elbo` ([`GaussianFit::start_elbo`]).
    pub(crate) start_elbo: Option<f64>,
    /// Why the method's end state is not an approximation of the posterior, whatever the exit
    /// rule says (e.g. variational Laplace with non-positive curvature); `None` otherwise.
    pub(crate) unusable: Option<String>,
    /// Minibatch fits: the means of q averaged over each of the last epochs
    /// ([`crate::inference::minibatch::EpochExit::recent_means`]).
    pub(crate) epoch_means: Vec<Vec<f64>>,
    /// Snapshots of q's mean for the drift check, fed by [`Tracker::watch`] in the loops that
    /// watch it; [`RunRecord::into_fit`] judges them ([`GaussianFit::drift`]).
    pub(crate) means: DriftMonitor,
    /// The last iteration a [`Tracker`] saw; 0 when the loop filled `elbo_trace` itself (then
    /// the iterations run are the trace's length).
    pub(crate) last_iteration: usize,
    /// k of [`Tracker::with_stride`]: `elbo_trace[i]` is the estimate of iteration i·k + 1.
    pub(crate) stride: usize,
}

impl RunRecord {
    /// The record before the first iteration (stop reason `MaxIterations` until set).
    pub(crate) fn empty() -> Self {
        RunRecord {
            elbo_trace: Vec::new(),
            smoothed_elbo: Vec::new(),
            stop: StopReason::MaxIterations,
            skipped_steps: 0,
            best_smoothed_elbo: f64::NEG_INFINITY,
            returned_iteration: 0,
            notes: Vec::new(),
            epoch_elbo: Vec::new(),
            epoch_checks: Vec::new(),
            start_elbo: None,
            epoch_means: Vec::new(),
            unusable: None,
            means: DriftMonitor::new(),
            last_iteration: 0,
            stride: 1,
        }
    }

    /// Iterations run: the last one a [`Tracker`] saw, or the trace's length.
    pub(crate) fn iterations(&self) -> usize {
        self.last_iteration.max(self.elbo_trace.len())
    }

    pub(crate) fn into_fit(
        self,
        family: Covariance,
        mean: Vec<f64>,
        covariance: Vec<f64>,
        precision: Vec<f64>,
        factor: Factor,
    ) -> GaussianFit {
        // The drift check applies to runs the exit rule stopped: a capped or interrupted run
        // is reported as such already.
        let drift = if self.stop == StopReason::ExitRule {
            let d = mean.len();
            let sd: Vec<f64> = match family {
                Covariance::Diagonal => covariance.iter().map(|v| v.sqrt()).collect(),
                Covariance::Full => (0..d).map(|i| covariance[i * d + i].sqrt()).collect(),
            };
            self.means.drift(self.iterations(), &mean, &sd)
        } else {
            None
        };
        GaussianFit {
            family,
            mean,
            covariance,
            precision,
            iterations: self.iterations(),
            trace_stride: self.stride,
            elbo_trace: self.elbo_trace,
            smoothed_elbo: self.smoothed_elbo,
            stop: self.stop,
            skipped_steps: self.skipped_steps,
            best_smoothed_elbo: self.best_smoothed_elbo,
            returned_iteration: self.returned_iteration,
            notes: self.notes,
            epoch_elbo: self.epoch_elbo,
            epoch_checks: self.epoch_checks,
            start_elbo: self.start_elbo,
            epoch_means: self.epoch_means,
            unusable: self.unusable,
            drift,
            random_start: false,
            factor,
        }
    }
}

/// The loop bookkeeping every method shares: append LB_t to the trace, apply the exit rule,
/// keep a clone of the state that produced the best smoothed ELBO, report progress, and decide
/// whether to stop. A method calls [`Tracker::observe`] once per iteration (after estimating
/// LB_t at its current state, before updating it) and [`Tracker::finish`] at the end; with a
/// stride k ([`Tracker::with_stride`]) it calls `observe` at the iterations where
/// [`Tracker::probes_at`] holds and [`Tracker::skip`] at the others.
pub(crate) struct Tracker<S: Clone> {
    exit: ExitRule,
    /// The trend guard, on the trace's own scale ([`ITERATION_TREND`] at stride 1).
    guard: crate::diagnostics::trend::Guard,
    stride: usize,
    max_iter: usize,
    /// T_min: the exit rule cannot stop the run before this iteration (0 for QBVI).
    pub(crate) min_iter: usize,
    keep_best: bool,
    pub(crate) record: RunRecord,
    kept: Option<(S, usize)>,
}

impl<S: Clone> Tracker<S> {
    /// A tracker with window W, patience P_max and T_max; `keep_best` returns the kept state
    /// (default of `qbvi.md` §7.2), otherwise the last one.
    pub(crate) fn new(window: usize, patience: usize, max_iter: usize, keep_best: bool) -> Self {
        Tracker {
            exit: ExitRule {
                window,
                patience,
                best: f64::NEG_INFINITY,
                count: 0,
            },
            guard: ITERATION_TREND,
            stride: 1,
            max_iter,
            min_iter: 0,
            keep_best,
            record: RunRecord::empty(),
            kept: None,
        }
    }

    /// The same rule on an ELBO estimate made every k-th iteration only (iterations 1, k + 1,
    /// 2k + 1, …; [X], see [`super::reparam::PROBE_STRIDE`]), with its windows kept in
    /// iterations: the smoothing window W and the patience P_max become ⌈W/k⌉ and ⌈P_max/k⌉
    /// estimates, the trend guard's h bounds ([`ITERATION_TREND`]: 500 and 25 iterations)
    /// 500/k and 25/k estimates (at least 2), its gain bar stays 0.1 nats over h. T_min and
    /// T_max stay in iterations. k = 0 is taken as 1.
    pub(crate) fn with_stride(mut self, k: usize) -> Self {
        let k = k.max(1);
        self.stride = k;
        self.record.stride = k;
        self.exit.window = self.exit.window.div_ceil(k);
        self.exit.patience = self.exit.patience.div_ceil(k);
        self.guard.half_max = (ITERATION_TREND.half_max / k).max(2);
        self.guard.half_min = (ITERATION_TREND.half_min / k).max(2);
        self
    }

    /// Whether iteration `t` (1-based) is one that estimates the ELBO for the rule.
    pub(crate) fn probes_at(&self, t: usize) -> bool {
        (t - 1).is_multiple_of(self.stride)
    }

    /// An iteration without an ELBO estimate (a stride's other iterations): reports progress
    /// with the last estimate and smoothed value, and returns `Some(reason)` when the loop
    /// must stop now (interrupted, or T_max reached); the exit rule is not consulted.
    pub(crate) fn skip(
        &mut self,
        t: usize,
        progress: &mut dyn FnMut(Progress) -> Control,
    ) -> Option<StopReason> {
        self.record.last_iteration = t;
        let control = progress(Progress {
            iteration: t,
            elbo: self.record.elbo_trace.last().copied().unwrap_or(f64::NAN),
            smoothed_elbo: self.record.smoothed_elbo.last().copied(),
        });
        self.stop_at(t, control, false)
    }

    /// The stop decision of iteration `t` after `progress` returned `control`: interrupted,
    /// the exit rule (when `rule_fired`), or T_max; recorded in the run's record.
    fn stop_at(&mut self, t: usize, control: Control, rule_fired: bool) -> Option<StopReason> {
        let stop = if control == Control::Stop {
            Some(StopReason::Interrupted)
        } else if rule_fired {
            Some(StopReason::ExitRule)
        } else if t >= self.max_iter {
            Some(StopReason::MaxIterations)
        } else {
            None
        };
        if let Some(r) = stop {
            self.record.stop = r;
        }
        stop
    }

    /// Notes q's mean at iteration `t` for the drift check ([`DriftMonitor`]): the loops whose
    /// iterates settle at the optimum call it once per iteration with the mean of the state
    /// they hand to [`Tracker::observe`]. The minibatch loops do not: their last iterate keeps
    /// moving by the batch noise.
    pub(crate) fn watch(&mut self, t: usize, mean: &[f64]) {
        self.record.means.observe(t, mean);
    }

    /// Whether [`Tracker::watch`] keeps the mean of iteration `t` (every
    /// [`DriftMonitor::EVERY`]-th): a loop that forms the mean only for it can skip the others.
    pub(crate) fn watches_at(&self, t: usize) -> bool {
        t.is_multiple_of(DriftMonitor::EVERY)
    }

    /// Records LB_t = `lb` of iteration `t` (1-based) computed at `state`; returns
    /// `Some(reason)` when the loop must stop now (before updating the state).
    pub(crate) fn observe(
        &mut self,
        t: usize,
        lb: f64,
        state: &S,
        progress: &mut dyn FnMut(Progress) -> Control,
    ) -> Option<StopReason> {
        self.record.elbo_trace.push(lb);
        self.record.last_iteration = t;
        let (smoothed, improved) = self.exit.observe(&self.record.elbo_trace);
        if let Some(s) = smoothed {
            self.record.smoothed_elbo.push(s);
        }
        if improved {
            // The parameters that generated LB_t (§7.2 notes).
            self.kept = Some((state.clone(), t));
            self.record.best_smoothed_elbo = self.exit.best;
        }
        let control = progress(Progress {
            iteration: t,
            elbo: lb,
            smoothed_elbo: smoothed,
        });
        let fired = control != Control::Stop
            && self.exit.exhausted()
            && t >= self.min_iter
            && self.guard.still_rising(&self.record.elbo_trace).is_none();
        self.stop_at(t, control, fired)
    }

    /// The state to return (kept or last, see [`Tracker::new`]) and the record.
    pub(crate) fn finish(mut self, last: S) -> (S, RunRecord) {
        let t_last = self.record.iterations();
        match self.kept.take() {
            Some((kq, kt)) if self.keep_best => {
                self.record.returned_iteration = kt;
                (kq, self.record)
            }
            _ => {
                self.record.returned_iteration = t_last;
                (last, self.record)
            }
        }
    }
}

/// How far the mean of q moved over the last stretch of a run that the exit rule stopped
/// ([`DriftMonitor`]): the coordinate that moved most, in sds of q.
#[derive(Clone, Debug, PartialEq)]
pub struct MeanDrift {
    /// The unconstrained coordinate (0-based).
    pub coordinate: usize,
    /// |μ_T − μ_{T−Δ}| / σ_T of that coordinate.
    pub sds: f64,
    /// Δ, the iterations the move took.
    pub iterations: usize,
}

/// Moves of the (window-averaged) mean larger than this many sds of q over the last quarter of
/// a run mean the run had not converged when the exit rule fired ([X], a design decision).
/// The smoothed ELBO of a stochastic method can stay flat within its noise while μ creeps along
/// a poorly conditioned direction: full-batch IVON on labour from a random start "converged"
/// at 3000 iterations with α moving 6 sds of q per 1000 iterations (0.39 from its optimum).
/// Around a converged optimum the averaged iterate moves by a fraction of an sd.
pub const DRIFT_SDS: f64 = 1.0;

/// Records the mean of q every [`DriftMonitor::EVERY`] iterations so that, when the exit rule
/// fires at T, the move of the mean over the last quarter of the run (Δ ≥ 100 iterations) can
/// be compared with q's sd ([`MeanDrift`], [`DRIFT_SDS`]). Memory: d numbers per snapshot.
#[derive(Clone, Debug, Default)]
pub(crate) struct DriftMonitor {
    snaps: Vec<(usize, Vec<f64>)>,
}

impl DriftMonitor {
    const EVERY: usize = 25;

    pub(crate) fn new() -> Self {
        DriftMonitor { snaps: Vec::new() }
    }

    /// Notes the mean `mean` at iteration `t`.
    pub(crate) fn observe(&mut self, t: usize, mean: &[f64]) {
        if t.is_multiple_of(Self::EVERY) {
            self.snaps.push((t, mean.to_vec()));
        }
    }

    /// The largest move over the last quarter of the run, when it exceeds [`DRIFT_SDS`] sds of
    /// q (`sd`, length d); `None` when it does not or the run is shorter than 400 iterations.
    pub(crate) fn drift(&self, t: usize, mean: &[f64], sd: &[f64]) -> Option<MeanDrift> {
        let span = (t / 4).max(100);
        let target = t.checked_sub(span)?;
        if t < 400 {
            return None;
        }
        let (t0, old) = self.snaps.iter().min_by_key(|(u, _)| u.abs_diff(target))?;
        let (coordinate, sds) = mean
            .iter()
            .zip(old)
            .zip(sd)
            .map(|((m, o), s)| (m - o).abs() / s)
            .enumerate()
            .filter(|(_, x)| x.is_finite())
            .fold((0, 0.0f64), |b, (i, x)| if x > b.1 { (i, x) } else { b });
        (sds > DRIFT_SDS).then_some(MeanDrift {
            coordinate,
            sds,
            iterations: t - t0,
        })
    }
}

/// Running sums over the last `len` iterates of a run, each iterate `width` numbers: the
/// sliding window behind the Polyak–Ruppert averages of the full-batch loops
/// (`reparam::run_probed` and `run_averaged` average the last W + 1 (μ, σ), [`WindowMeanSd`];
/// VON the last max(W + 1, ⌈10/β⌉) (μ, P)).
///
/// [X], a design decision (measured): the average used to be recomputed from a queue of copied
/// iterates at every iteration, O(len·width) with six allocations per iteration (the two copies
/// of (μ, σ) handed over, the queue's two, the two averages; 7.26 per iteration in all for
/// BBB on a d = 20 Gaussian, `tests/alloc_free.rs`, now < 0.5). Here an iterate is written once into
/// a preallocated ring slot and added to the sums (the evicted one subtracted), O(width) per
/// iteration with no allocation, and the average is formed only when a loop needs it. CPU per
/// iteration on the diabetes BNN (H = 50, d = 602, random start, seed 1, one thread; from runs
/// of 300 and 1500 iterations, median of 3 interleaved with the old build): BBB 0.80 → 0.58 ms
/// (with σ = softplus(ρ) evaluated once per step instead of twice), IVON 0.325 → 0.283, MC
/// dropout 0.217 → 0.200, VOGN 2.53 → 2.43, diagonal VON 102 → 102 (its finite-difference
/// Hessian dominates); on labour (d = 8) 2–6 % (BBB 15.9 → 15.0 µs, full VON 127 → 120 µs).
/// The fits are the same: same iterations and verdicts, draws within 10⁻¹³ of their column's
/// sd (docs/variational.md, "Where the time of an iteration goes"). The subtractions leave a rounding error of a few ulps of the largest
/// element; the sums are recomputed from the ring in iteration order whenever it wraps (every
/// `len` pushes, amortised O(width)), so they equal the queue's sums to the last bit there and
/// before the window first fills, and stay within about `len` ulps of them in between.
pub(crate) struct WindowSums {
    len: usize,
    width: usize,
    /// `len` slots of `width` numbers; slot `next` is the oldest once `count == len`.
    ring: Vec<f64>,
    sum: Vec<f64>,
    count: usize,
    next: usize,
}

impl WindowSums {
    /// A window of `len` ≥ 1 iterates of `width` numbers each (memory: (len + 1)·width numbers).
    pub(crate) fn new(len: usize, width: usize) -> Self {
        let len = len.max(1);
        WindowSums {
            len,
            width,
            ring: vec![0.0; len * width],
            sum: vec![0.0; width],
            count: 0,
            next: 0,
        }
    }

    /// Adds an iterate: `fill` writes its `width` numbers (into the slot of the oldest iterate,
    /// which leaves the window once it holds `len`).
    pub(crate) fn push(&mut self, fill: impl FnOnce(&mut [f64])) {
        let w = self.width;
        let slot = &mut self.ring[self.next * w..(self.next + 1) * w];
        if self.count == self.len {
            self.sum
                .iter_mut()
                .zip(slot.iter())
                .for_each(|(s, x)| *s -= x);
        }
        fill(slot);
        self.sum
            .iter_mut()
            .zip(slot.iter())
            .for_each(|(s, x)| *s += x);
        self.count = (self.count + 1).min(self.len);
        self.next = (self.next + 1) % self.len;
        if self.next == 0 {
            // slots 0, 1, …, len − 1 are now the iterates oldest first: resum them in that order
            self.sum.iter_mut().for_each(|s| *s = 0.0);
            for slot in self.ring.chunks_exact(w) {
                self.sum.iter_mut().zip(slot).for_each(|(s, x)| *s += x);
            }
        }
    }

    /// The iterates in the window (at most `len`).
    #[cfg(test)]
    pub(crate) fn count(&self) -> usize {
        self.count
    }

    /// The window's average of element i (NaN before the first push).
    pub(crate) fn average(&self, i: usize) -> f64 {
        self.sum[i] / self.count as f64
    }
}

/// The average of the last W + 1 mean-field iterates (μ, σ), the same window as the smoothed
/// ELBO of the exit rule ([X], bayesc's departure from `survey_vi.md` §1 "Return the kept
/// iterate" for the stochastic-gradient methods IVON, BBB and BBVI): passing the averaged state
/// to [`Tracker::observe`] makes the kept iterate the Polyak–Ruppert average of the iterates
/// whose ELBO estimates form the best smoothed ELBO. A single iterate of these methods carries
/// the noise of its last steps (S = 1 draws); on labour that put IVON's kept mean 0.3 posterior
/// sd from the NUTS mean. Kept as running sums ([`WindowSums`], O(d) per iteration).
pub(crate) struct WindowMeanSd {
    d: usize,
    sums: WindowSums,
}

impl WindowMeanSd {
    /// A window of W + 1 iterates of dimension d.
    pub(crate) fn new(window: usize, d: usize) -> Self {
        WindowMeanSd {
            d,
            sums: WindowSums::new(window + 1, 2 * d),
        }
    }

    /// Adds an iterate: `fill(mean, sd)` writes its μ and σ (length d each).
    pub(crate) fn push(&mut self, fill: impl FnOnce(&mut [f64], &mut [f64])) {
        let d = self.d;
        self.sums.push(|slot| {
            let (mean, sd) = slot.split_at_mut(d);
            fill(mean, sd)
        });
    }

    /// The window's average (μ̄, 1/σ̄²) written into (`mean`, `precision`), length d each.
    pub(crate) fn average_into(&self, mean: &mut [f64], precision: &mut [f64]) {
        let d = self.d;
        for i in 0..d {
            mean[i] = self.sums.average(i);
            precision[i] = 1.0 / self.sums.average(d + i).powi(2);
        }
    }

    /// The window's average (μ̄, 1/σ̄²) as (mean, precision).
    pub(crate) fn average(&self) -> (Vec<f64>, Vec<f64>) {
        let mut out = (vec![0.0; self.d], vec![0.0; self.d]);
        self.average_into(&mut out.0, &mut out.1);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a tracker (W = 30, P_max = 50, T_max = `max_iter`) at stride `k` on a constant
    /// ELBO, observing at its probe iterations and skipping the others; returns the iteration
    /// it stopped at, why, and the record.
    fn constant_run(k: usize, max_iter: usize) -> (usize, StopReason, RunRecord) {
        let mut tracker = Tracker::<()>::new(30, 50, max_iter, true).with_stride(k);
        let mut progress = |_: Progress| Control::Continue;
        for t in 1..=max_iter {
            let stop = if tracker.probes_at(t) {
                tracker.observe(t, -8.65, &(), &mut progress)
            } else {
                tracker.skip(t, &mut progress)
            };
            if let Some(r) = stop {
                let ((), record) = tracker.finish(());
                return (t, r, record);
            }
        }
        unreachable!("T_max stops the run")
    }

    #[test]
    fn a_stride_keeps_the_windows_in_iterations() {
        // stride 1: the first smoothed value at t = 31 (the best), ties at t = 32..: the count
        // passes P_max = 50 at t = 82
        let (t, r, rec) = constant_run(1, 5000);
        assert_eq!(
            (t, r, rec.elbo_trace.len(), rec.iterations()),
            (82, StopReason::ExitRule, 82, 82)
        );
        // stride 5: estimates at t = 1, 6, 11, …; W = 6 and P_max = 10 estimates: the first
        // smoothed value at the 7th (t = 31), the count passes 10 at the 18th (t = 86)
        let (t, r, rec) = constant_run(5, 5000);
        assert_eq!(
            (t, r, rec.elbo_trace.len(), rec.iterations()),
            (86, StopReason::ExitRule, 18, 86)
        );
        assert_eq!(rec.smoothed_elbo.len(), 18 - 6);
        // ties keep the later parameters: the last estimate's iteration
        assert_eq!(rec.returned_iteration, 86);
        let fit = GaussianFit::diagonal(vec![0.0], vec![1.0], rec);
        assert_eq!((fit.iterations, fit.trace_stride), (86, 5));
        assert_eq!(fit.trace_iteration(17), 86);
        // T_max at an iteration without an estimate stops there, and counts it
        let (t, r, rec) = constant_run(5, 43);
        assert_eq!(
            (t, r, rec.elbo_trace.len(), rec.iterations()),
            (43, StopReason::MaxIterations, 9, 43)
        );
    }

    #[test]
    fn a_skipped_iteration_reports_progress_and_honours_a_stop() {
        let mut tracker = Tracker::<()>::new(30, 50, 100, true).with_stride(5);
        let mut seen = Vec::new();
        let mut progress = |p: Progress| {
            seen.push((p.iteration, p.elbo));
            if p.iteration == 3 {
                Control::Stop
            } else {
                Control::Continue
            }
        };
        assert_eq!(tracker.observe(1, -2.5, &(), &mut progress), None);
        assert!(!tracker.probes_at(2) && tracker.probes_at(6));
        assert_eq!(tracker.skip(2, &mut progress), None);
        assert_eq!(
            tracker.skip(3, &mut progress),
            Some(StopReason::Interrupted)
        );
        assert_eq!(seen, vec![(1, -2.5), (2, -2.5), (3, -2.5)]);
        let ((), rec) = tracker.finish(());
        assert_eq!((rec.iterations(), rec.stop), (3, StopReason::Interrupted));
    }

    /// Feeds `trace` to a fresh rule (W = 3, P_max = 5); the iteration at which it is
    /// exhausted, if any.
    fn exit_iteration(trace: &[f64]) -> Option<usize> {
        let mut rule = ExitRule {
            window: 3,
            patience: 5,
            best: f64::NEG_INFINITY,
            count: 0,
        };
        (1..=trace.len()).find(|&t| {
            rule.observe(&trace[..t]);
            rule.exhausted()
        })
    }

    #[test]
    fn a_constant_smoothed_elbo_exhausts_the_patience() {
        // first smoothed value at t = 4 (new best), then ties at t = 5..: the count passes
        // P_max = 5 at t = 10. The spec's `≥` reset it at every tie and never stopped.
        assert_eq!(exit_iteration(&[-8.65; 100]), Some(10));
        // strictly increasing: never exhausted
        let rising: Vec<f64> = (0..100).map(f64::from).collect();
        assert_eq!(exit_iteration(&rising), None);
    }

    #[test]
    fn window_average_averages_the_last_w_plus_one_iterates() {
        let mut w = WindowMeanSd::new(1, 1);
        w.push(|m, s| (m[0], s[0]) = (0.0, 1.0));
        w.push(|m, s| (m[0], s[0]) = (2.0, 3.0));
        w.push(|m, s| (m[0], s[0]) = (4.0, 1.0));
        let (m, p) = w.average();
        assert_eq!(m, vec![3.0]);
        assert_eq!(p, vec![0.25]);
    }

    /// The running sums against the queue they replace (the average of the last `len` iterates
    /// summed oldest first): equal to the last bit before the window fills and at every wrap of
    /// the ring, and within a few ulps of the largest element in between, on iterates whose
    /// elements differ by 10 orders of magnitude.
    #[test]
    fn window_sums_match_the_recomputed_average() {
        let (len, width) = (7, 3);
        let mut sums = WindowSums::new(len, width);
        let mut queue: std::collections::VecDeque<Vec<f64>> = Default::default();
        let mut x = 0.123_f64;
        for t in 1..=200 {
            let it: Vec<f64> = (0..width)
                .map(|j| {
                    x = (x * 3.7 + 0.31).fract();
                    (x - 0.5) * 10f64.powi(5 * j as i32 - 5)
                })
                .collect();
            sums.push(|slot| slot.copy_from_slice(&it));
            if queue.len() == len {
                queue.pop_front();
            }
            queue.push_back(it);
            assert_eq!(sums.count(), queue.len());
            for j in 0..width {
                let exact = queue.iter().map(|v| v[j]).sum::<f64>() / queue.len() as f64;
                let scale = queue.iter().map(|v| v[j].abs()).fold(0.0, f64::max);
                let got = sums.average(j);
                if t <= len || t % len == 0 {
                    assert_eq!(got.to_bits(), exact.to_bits(), "t {t}, element {j}");
                } else {
                    assert!(
                        (got - exact).abs() <= 8.0 * f64::EPSILON * scale,
                        "t {t}: {got} {exact}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_tie_keeps_the_later_parameters() {
        let mut rule = ExitRule {
            window: 1,
            patience: 5,
            best: f64::NEG_INFINITY,
            count: 0,
        };
        assert_eq!(rule.observe(&[1.0, 1.0]), (Some(1.0), true));
        assert_eq!(rule.observe(&[1.0, 1.0, 1.0]), (Some(1.0), true));
        assert_eq!(rule.count, 1);
        assert_eq!(rule.observe(&[1.0, 1.0, 1.0, 0.0]), (Some(0.5), false));
        assert_eq!(rule.count, 2);
    }

    /// A mean that walks at a constant rate is flagged with the move over the last quarter;
    /// one that jitters by a tenth of q's sd around a fixed point is not; runs shorter than
    /// 400 iterations are never judged.
    #[test]
    fn drift_monitor_flags_a_walking_mean_only() {
        let sd = [0.5, 0.5];
        let mut walking = DriftMonitor::new();
        let mut still = DriftMonitor::new();
        for t in 1..=1000 {
            walking.observe(t, &[0.0, 0.002 * t as f64]);
            let jitter = 0.05 * (t as f64).sin();
            still.observe(t, &[jitter, -jitter]);
        }
        // the last quarter, Δ = 250: 0.5 in the mean = 1 sd, just at the bar
        let dr = walking.drift(1000, &[0.0, 2.0], &sd);
        assert_eq!(dr, None, "exactly 1 sd is not above DRIFT_SDS");
        let dr = walking
            .drift(1000, &[0.0, 2.2], &sd)
            .expect("a 1.4 sd move is flagged");
        assert_eq!(dr.coordinate, 1);
        assert_eq!(dr.iterations, 250);
        assert!((dr.sds - 1.4).abs() < 1e-12, "{}", dr.sds);
        assert_eq!(still.drift(1000, &[0.04, -0.04], &sd), None);
        assert_eq!(walking.drift(300, &[0.0, 100.0], &sd), None);
    }
}
