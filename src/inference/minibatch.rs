//! The minibatch schedule and the full-data exit statistic shared by the stochastic methods
//! (QNVB, diagonal QBVI, and the survey methods that plug into the same seam), following
//! specs/survey_vi.md §2 and its common stopping rule (§1).
//!
//! - Batches: each epoch draws a fresh uniform permutation of the N rows from the fit's seed and
//!   takes consecutive blocks of M rows ("shuffle once per epoch and take consecutive blocks",
//!   §2). An epoch has ⌊N/M⌋ batches, all of size M; the N mod M rows left at the end of a
//!   permutation sit out that epoch (a different set each epoch). Every batch is a uniform
//!   draw without replacement, so each L̂_B is unbiased (§2).
//! - One batch serves all the Monte Carlo draws or quadrature points of an iteration (common
//!   random numbers, §2): the method asks [`MinibatchDensity::batch`] once per iteration.
//! - Exit rule: per-iteration ELBO estimates on a batch carry the batch noise (variance
//!   ≈ N²/M·Var_i(ℓ_i)), so the stopping rule runs on a full-data ELBO evaluated once per epoch
//!   with S = 10 draws ([`EpochElbo`]; survey_vi.md §1, "Minibatch methods evaluate it once per
//!   epoch, on the full data with S = 10 draws, and count patience in epochs"). The draws use the
//!   same 10 standard-normal vectors every epoch, so successive values differ by the change of q,
//!   not by fresh Monte Carlo noise.

use rand::seq::SliceRandom;
use rand_distr::{Distribution, StandardNormal};

use super::density::{DensityError, LogDensity, MinibatchDensity};
use super::rng::{StreamRng, stream};
use crate::diagnostics::trend::{Guard, Rise};

/// Minibatch settings of a stochastic method.
#[derive(Clone, Debug, PartialEq)]
pub struct MinibatchSettings {
    /// M, rows per batch (1 ≤ M ≤ N).
    pub batch_size: usize,
    /// Draws S of the per-epoch full-data ELBO (default 10, survey_vi.md §1).
    pub elbo_draws: usize,
    /// Smoothing window W in epochs: the smoothed value is the mean of the last W+1 epoch ELBOs
    /// (default 5).
    pub window_epochs: usize,
    /// Stop after this many epochs without an improvement of the smoothed ELBO by more than
    /// `min_improvement` (default 10).
    pub patience_epochs: usize,
    /// Never stop before this many epochs (default 20).
    pub min_epochs: usize,
    /// Never stop before this many iterations either (default 500, the T_min of qnvb.md §7.5):
    /// with few batches per epoch, 20 epochs are too few steps.
    pub min_iterations: usize,
    /// Margin δ of an improvement, log-density units (default 0.01).
    pub min_improvement: f64,
}

impl Default for MinibatchSettings {
    fn default() -> Self {
        MinibatchSettings {
            batch_size: 32,
            elbo_draws: 10,
            window_epochs: 5,
            patience_epochs: 10,
            min_epochs: 20,
            min_iterations: 500,
            min_improvement: 1e-2,
        }
    }
}

/// The exit rule looks at the full-data ELBO once per epoch, or once every k epochs when an
/// epoch has fewer than this many batches (k = ⌈this / batches per epoch⌉) ([X], a departure
/// from survey_vi.md §1's "once per epoch"). Why: the rule counts its patience (10) and its
/// trend window (up to 50) in these periods, and with 3 batches an epoch (the Boston BNN,
/// N = 455, at M = 128) 10 epochs are 30 steps: IVON printed "converged" at a smoothed ELBO
/// of −281 after 2595 iterations, where at M = 32 it climbs to 367 (measured). The full-data
/// ELBO also costs 10 passes over the data, 12 times the three steps of such an epoch.
pub const MIN_BATCHES_PER_CHECK: usize = 10;

/// The exit rule's period in epochs for epochs of `batches_per_epoch` batches: 1, or
/// ⌈[`MIN_BATCHES_PER_CHECK`] / batches per epoch⌉ when an epoch has fewer batches than that.
pub fn epochs_per_check(batches_per_epoch: usize) -> usize {
    MIN_BATCHES_PER_CHECK.div_ceil(batches_per_epoch.max(1))
}

/// Epoch-wise shuffled batches of `0..n` (module docs).
pub struct EpochBatches {
    n: usize,
    m: usize,
    /// k: the exit rule's period in epochs ([`MIN_BATCHES_PER_CHECK`]).
    check_every: usize,
    perm: Vec<usize>,
    /// Start of the next batch in `perm`.
    pos: usize,
    epoch: usize,
    rng: StreamRng,
}

impl EpochBatches {
    /// Batches of `m` rows of `0..n`, shuffled by stream 7 of `seed` (a stream no method uses
    /// for its own draws). Errors when m = 0 or m > n.
    pub fn new(n: usize, m: usize, seed: u64) -> Result<Self, String> {
        if m == 0 || m > n {
            return Err(format!(
                "the batch size must be between 1 and the number of rows N = {n}, got {m}"
            ));
        }
        Ok(EpochBatches {
            n,
            m,
            check_every: epochs_per_check(n / m),
            perm: (0..n).collect(),
            pos: n, // forces a shuffle on the first call
            epoch: 0,
            rng: stream(seed, 7),
        })
    }

    /// Batches per epoch, ⌊N/M⌋.
    pub fn per_epoch(&self) -> usize {
        self.n / self.m
    }

    /// Completed epochs (the number of permutations drawn, minus the current one).
    pub fn epochs_done(&self) -> usize {
        self.epoch.saturating_sub(1)
    }

    /// The exit rule's period in epochs: 1, or k = ⌈[`MIN_BATCHES_PER_CHECK`] / batches per
    /// epoch⌉ when an epoch has fewer batches than that.
    pub fn check_every(&self) -> usize {
        self.check_every
    }

    /// The next batch, and whether the exit rule looks at the full-data ELBO after it: at the
    /// end of every epoch, or of every k-th ([`EpochBatches::check_every`]).
    pub fn next_batch(&mut self) -> (&[usize], bool) {
        if self.pos + self.m > self.n {
            self.perm.shuffle(&mut self.rng);
            self.pos = 0;
            self.epoch += 1;
        }
        let b = &self.perm[self.pos..self.pos + self.m];
        self.pos += self.m;
        let epoch_end = self.pos + self.m > self.n;
        (b, epoch_end && self.epoch.is_multiple_of(self.check_every))
    }
}

/// The per-epoch full-data ELBO of a diagonal Gaussian q = N(μ, diag σ²), from fixed draws.
pub struct EpochElbo {
    eps: Vec<Vec<f64>>,
}

impl EpochElbo {
    /// `s` standard-normal vectors of length `d` from stream 8 of `seed`.
    pub fn new(d: usize, s: usize, seed: u64) -> Self {
        let mut rng = stream(seed, 8);
        EpochElbo {
            eps: (0..s.max(1))
                .map(|_| (0..d).map(|_| StandardNormal.sample(&mut rng)).collect())
                .collect(),
        }
    }

    /// (1/S)·Σ_s L(μ + σ⊙ε_s) + Σ_i log σ_i + (d/2)(1 + log 2π), on the full data. A draw with a
    /// non-finite or recoverable-error density gives −∞.
    ///
    /// Errors: unrecoverable density errors.
    pub fn value(
        &self,
        density: &dyn LogDensity,
        mean: &[f64],
        sd: &[f64],
    ) -> Result<f64, DensityError> {
        let d = mean.len();
        let mut z = vec![0.0; d];
        let mut sum = 0.0;
        for e in &self.eps {
            for i in 0..d {
                z[i] = mean[i] + sd[i] * e[i];
            }
            match density.log_density(&z) {
                Ok(v) if v.is_finite() => sum += v,
                Ok(_) => return Ok(f64::NEG_INFINITY),
                Err(e) if e.recoverable => return Ok(f64::NEG_INFINITY),
                Err(e) => return Err(e),
            }
        }
        let entropy = sd.iter().map(|s| s.ln()).sum::<f64>()
            + 0.5 * d as f64 * (1.0 + (2.0 * std::f64::consts::PI).ln());
        Ok(sum / self.eps.len() as f64 + entropy)
    }
}

/// One look of the minibatch exit rule at the full-data ELBO ([`EpochExit::observe`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EpochCheck {
    /// Iterations (steps) run when the check was made, 1-based; a check ends an epoch.
    pub iteration: usize,
    /// The full-data ELBO of q at that point ([`EpochElbo`]; MC dropout: its own full-data
    /// objective), log-density units.
    pub elbo: f64,
    /// The value the exit rule compares: the mean of this and the previous (up to) W checks'
    /// `elbo` ([`MinibatchSettings::window_epochs`]).
    pub smoothed: f64,
}

/// The smoothed-ELBO patience rule of qbvi.md §7.2 counted in epochs (survey_vi.md §1), which
/// also waits while the epoch ELBO is still rising ([`still_rising`], a departure from the spec),
/// and the epoch-wise averages of the iterates behind the returned q ([`EpochExit::tail_average`]).
///
/// Use: [`EpochExit::iterate`] after every step with the iterate's (μ, σ), and
/// [`EpochExit::observe`] at every epoch's end with the full-data ELBO.
pub struct EpochExit {
    settings: MinibatchSettings,
    trace: Vec<f64>,
    /// Every check so far: iteration, full-data ELBO and smoothed value.
    checks: Vec<EpochCheck>,
    best: f64,
    since: usize,
    /// The average μ and precision 1/σ² of the iterates of each of the last [`EPOCH_MEANS`]
    /// epochs.
    epochs: std::collections::VecDeque<(Vec<f64>, Vec<f64>)>,
    /// Sums of μ and 1/σ² over the iterates of the epoch under way, and their count.
    current: (Vec<f64>, Vec<f64>, usize),
}

/// The (μ, σ) of a diagonal Gaussian q, each of length d.
pub type MeanSd = (Vec<f64>, Vec<f64>);

/// How many epochs [`EpochExit`] keeps the averaged iterates of: the sample whose spread
/// measures how far the batch noise moves the mean between epochs (`fit::stationarity`, [X]),
/// and the most epochs the returned q averages over ([`EpochExit::tail_average`]).
pub const EPOCH_MEANS: usize = 8;

impl EpochExit {
    /// A fresh rule.
    pub fn new(settings: &MinibatchSettings) -> Self {
        EpochExit {
            settings: settings.clone(),
            trace: Vec::new(),
            checks: Vec::new(),
            best: f64::NEG_INFINITY,
            since: 0,
            epochs: std::collections::VecDeque::with_capacity(EPOCH_MEANS + 1),
            current: (Vec::new(), Vec::new(), 0),
        }
    }

    /// Adds an iterate, (μ, σ) of q after a step (both of length d), to the epoch under way.
    pub fn iterate(&mut self, mean: &[f64], sd: &[f64]) {
        let (m, p, n) = &mut self.current;
        if *n == 0 {
            *m = mean.to_vec();
            *p = sd.iter().map(|s| 1.0 / (s * s)).collect();
        } else {
            m.iter_mut().zip(mean).for_each(|(a, x)| *a += x);
            p.iter_mut().zip(sd).for_each(|(a, s)| *a += 1.0 / (s * s));
        }
        *n += 1;
    }

    /// Records an epoch's full-data ELBO after `iterations` iterations in all and closes the
    /// epoch's average of the iterates given to [`EpochExit::iterate`]; returns (smoothed value,
    /// improved, stop now).
    pub fn observe(&mut self, elbo: f64, iterations: usize) -> (f64, bool, bool) {
        let (m, s, n) = std::mem::take(&mut self.current);
        if n > 0 {
            let k = n as f64;
            let avg = |v: Vec<f64>| v.into_iter().map(|x| x / k).collect::<Vec<f64>>();
            self.epochs.push_back((avg(m), avg(s)));
            if self.epochs.len() > EPOCH_MEANS {
                self.epochs.pop_front();
            }
        }
        self.trace.push(elbo);
        let w0 = self
            .trace
            .len()
            .saturating_sub(self.settings.window_epochs + 1);
        let tail = &self.trace[w0..];
        let smoothed = tail.iter().sum::<f64>() / tail.len() as f64;
        self.checks.push(EpochCheck {
            iteration: iterations,
            elbo,
            smoothed,
        });
        let improved = smoothed > self.best + self.settings.min_improvement;
        if improved {
            self.best = smoothed;
            self.since = 0;
        } else {
            self.since += 1;
        }
        let stop = self.trace.len() >= self.settings.min_epochs
            && iterations >= self.settings.min_iterations
            && self.since >= self.settings.patience_epochs
            && still_rising(&self.trace).is_none();
        (smoothed, improved, stop)
    }

    /// The per-epoch full-data ELBO values so far.
    pub fn trace(&self) -> &[f64] {
        &self.trace
    }

    /// Every check so far, oldest first: the iteration, the full-data ELBO and the smoothed
    /// value the rule compared.
    pub fn checks(&self) -> &[EpochCheck] {
        &self.checks
    }

    /// The average mean of q over each of the last (at most [`EPOCH_MEANS`]) epochs, oldest
    /// first.
    pub fn recent_means(&self) -> Vec<Vec<f64>> {
        self.epochs.iter().map(|(m, _)| m.clone()).collect()
    }

    /// How many epochs [`EpochExit::tail_average`] averages: the last [`EPOCH_MEANS`], but at
    /// most half of those completed, so that an early stop does not reach back into the climb.
    pub fn tail_epochs(&self) -> usize {
        self.epochs.len().min(self.trace.len() / 2)
    }

    /// The returned q of a minibatch fit ([X], a design decision of bayesc): the Polyak–Ruppert
    /// average of every iterate of the last [`EpochExit::tail_epochs`] epochs, as (μ̄, σ̄) with
    /// μ̄ the average mean and σ̄ = (average of 1/σ²)^(−1/2) (vectors of length d); `None` before
    /// two epochs have completed.
    ///
    /// The precisions are averaged, not the sds: variational Laplace sets σ to 1000 where an
    /// iterate's curvature is not positive, and averaging σ gave weights that were floored in
    /// a few iterates an sd of tens to hundreds (digits BNN, M = 64: one output weight at sd 93,
    /// and the predictions of every test row went to one class, accuracy 0.10; measured). An
    /// iterate at the floor adds next to nothing to an average precision.
    ///
    /// Why: at a constant step size the iterates of a minibatch method do not settle; they
    /// wander around the full-data optimum with a spread set by the batch noise (Polyak &
    /// Juditsky 1992 for the averaged iterate of stochastic approximation; Dhaka et al. 2020,
    /// "Robust, accurate stochastic optimization for variational inference", for VI). On labour
    /// (d = 8, seeds 1–5) IVON and BBB at M = 32 and 64 returned the average of their last 31
    /// iterates, under 1.5 epochs, and printed "converged" with means up to 0.51 NUTS sds from
    /// the reference (measured); averaging the epochs divides the batch noise of the returned
    /// mean by about the square root of their number.
    pub fn tail_average(&self) -> Option<MeanSd> {
        let k = self.tail_epochs();
        if k == 0 {
            return None;
        }
        let tail: Vec<&MeanSd> = self.epochs.iter().rev().take(k).collect();
        let d = tail[0].0.len();
        let avg = |f: fn(&MeanSd) -> &Vec<f64>| -> Vec<f64> {
            (0..d)
                .map(|j| tail.iter().map(|e| f(e)[j]).sum::<f64>() / k as f64)
                .collect()
        };
        let sd = avg(|e| &e.1).iter().map(|p| 1.0 / p.sqrt()).collect();
        Some((avg(|e| &e.0), sd))
    }
}

/// The trend guard of [`EpochExit`] ([`still_rising`]): a line through the last 2h epoch
/// ELBOs, h = min(50, epochs/2) (at least 5), must climb more than 2 nats over h epochs at more
/// than 4 standard errors for the rule to wait.
pub const EPOCH_TREND: Guard = Guard {
    half_max: 50,
    divisor: 2,
    half_min: 5,
    t: 4.0,
    min_rise: 2.0,
};

/// The trend guard of the minibatch exit rule ([X], a design decision of bayesc): is the
/// epoch ELBO `trace` (oldest first) still rising? [`EPOCH_TREND`] judges the last 2h epochs,
/// h = min(50, len/2) (at least 5): rising when the slope exceeds 4 standard errors and the
/// gain over h epochs 2 nats ([`crate::diagnostics::trend::rise`]).
///
/// Why: the patience rule counts epochs since the best smoothed value, and with a noisy trace
/// one high epoch sets a best that the next ten need not beat while the trend still climbs.
/// On the Boston BNN (d = 752, M = 32, seed 1) IVON stopped after 301 epochs at a smoothed
/// ELBO of 76 while climbing about 6 nats an epoch (epoch-to-epoch sd about 70); BBB, QNVB and
/// Vadam also stopped on a rising trace (measured). A falsely detected rise only lengthens the
/// run: the window slides onto the plateau, or the iteration cap reports the fit as stopped.
pub fn still_rising(trace: &[f64]) -> Option<Rise> {
    EPOCH_TREND.still_rising(trace)
}

/// Validates a batch size against a density's N.
pub fn check_batch(density: &dyn MinibatchDensity, m: usize) -> Result<(), String> {
    let n = density.n_obs();
    if m == 0 || m > n {
        return Err(format!(
            "--batch-size must be between 1 and N = {n} (the number of rows), got {m}"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{EpochBatches, still_rising};

    #[test]
    fn a_noisy_climb_is_still_rising_and_a_noisy_plateau_is_not() {
        // deterministic pseudo-noise of sd ≈ 70, as on the Boston BNN under IVON
        let noise = |i: usize| 120.0 * ((i as f64 * 12.9898).sin() * 43_758.545).fract();
        let climb: Vec<f64> = (0..300)
            .map(|i| -1700.0 + 6.0 * i as f64 + noise(i))
            .collect();
        let r = still_rising(&climb).expect("a 6-nat-an-epoch climb is detected");
        assert_eq!(r.half, 50);
        assert!((r.gain - 300.0).abs() < 60.0, "{r:?}");
        let plateau: Vec<f64> = (0..300).map(|i| 300.0 + noise(i)).collect();
        assert_eq!(still_rising(&plateau), None);
        // a rise below the 2-nat floor does not count, however clean
        let slow: Vec<f64> = (0..100).map(|i| 0.01 * i as f64).collect();
        assert_eq!(still_rising(&slow), None);
        // too short a trace, or a non-finite value in the window, is not judged
        assert_eq!(still_rising(&climb[..9]), None);
        let mut broken = climb.clone();
        broken[290] = f64::NEG_INFINITY;
        assert_eq!(still_rising(&broken), None);
    }

    #[test]
    fn the_tail_average_is_over_every_iterate_of_the_last_epochs() {
        use super::{EPOCH_MEANS, EpochExit, MeanSd, MinibatchSettings};
        let mut exit = EpochExit::new(&MinibatchSettings::default());
        assert_eq!(exit.tail_average(), None);
        // epoch e has the iterates μ = e and e + 1 (average e + ½) with precisions 1/σ² = e
        // and e + 2 (average e + 1)
        let epoch = |exit: &mut EpochExit, e: usize| {
            let e = e as f64;
            exit.iterate(&[e], &[1.0 / e.sqrt()]);
            exit.iterate(&[e + 1.0], &[1.0 / (e + 2.0).sqrt()]);
            exit.observe(-1.0, 0);
        };
        epoch(&mut exit, 0);
        // one epoch done: at most half of the epochs run are averaged, so none yet
        assert_eq!(exit.tail_average(), None);
        for e in 1..4 {
            epoch(&mut exit, e);
        }
        // four epochs: the last two (e = 2, 3) → μ̄ = (2.5 + 3.5)/2, precision (3 + 4)/2
        assert_eq!(exit.tail_epochs(), 2);
        let close = |got: Option<MeanSd>, mean: f64, precision: f64| {
            let (m, s) = got.unwrap();
            assert!((m[0] - mean).abs() < 1e-12, "{m:?}");
            assert!((s[0] - 1.0 / precision.sqrt()).abs() < 1e-12, "{s:?}");
        };
        close(exit.tail_average(), 3.0, 3.5);
        for e in 4..30 {
            epoch(&mut exit, e);
        }
        // thirty epochs: the last EPOCH_MEANS = 8 (e = 22..29) → μ̄ = 26, precision 26.5
        assert_eq!(exit.tail_epochs(), EPOCH_MEANS);
        close(exit.tail_average(), 26.0, 26.5);
        assert_eq!(exit.recent_means().len(), EPOCH_MEANS);
        assert_eq!(exit.recent_means()[0], vec![22.5]);
    }

    #[test]
    fn an_epoch_is_a_permutation_in_blocks() {
        let mut b = EpochBatches::new(10, 3, 5).unwrap();
        assert_eq!(b.per_epoch(), 3);
        // 3 batches an epoch: the exit rule looks every ⌈10/3⌉ = 4 epochs
        assert_eq!(b.check_every(), 4);
        let mut seen = Vec::new();
        for _ in 0..3 {
            let (rows, check) = b.next_batch();
            assert_eq!(rows.len(), 3);
            assert!(!check);
            seen.extend_from_slice(rows);
        }
        let mut s = seen.clone();
        s.sort();
        s.dedup();
        assert_eq!(s.len(), 9, "rows within an epoch are distinct: {seen:?}");
        // a new permutation for the next epoch
        let (rows, _) = b.next_batch();
        let next = rows.to_vec();
        assert_ne!(next, seen[..3].to_vec());
        assert_eq!(b.epochs_done(), 1);
        // the check comes at the end of the 4th epoch (batch 12), and of the 8th (batch 24)
        let checks: Vec<usize> = (5..=24).filter(|_| b.next_batch().1).collect();
        assert_eq!(checks, vec![12, 24]);
        // 10 batches or more an epoch: every epoch
        assert_eq!(EpochBatches::new(100, 10, 5).unwrap().check_every(), 1);
    }
}
