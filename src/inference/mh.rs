//! Adaptive random-walk Metropolis–Hastings (`specs/mh.md`): Gaussian proposals whose scale
//! (Robbins–Monro, Andrieu & Thoms 2008 §4.2) and shape (Haario et al. 2001) adapt during
//! warmup only, then freeze.

use crate::inference::adapt::{WelfordCov, WelfordVar};
use crate::inference::density::{DensityError, LogDensity};
use crate::inference::hmc::integrator::cholesky_lower;
use crate::inference::rng::StreamRng;
use rand::RngExt;
use rand_distr::StandardNormal;

/// Optimal-scaling constant: λ₀ = 2.38/√d. `specs/mh.md` §3–4, Gelman, Roberts & Gilks (1996).
pub const OPTIMAL_SCALE: f64 = 2.38;
/// Probability of the safety component during warmup. `specs/mh.md` §3, Roberts & Rosenthal
/// (2009) §2.
pub const BETA_MIX: f64 = 0.05;
/// Scale of the safety component, 0.1/√d. `specs/mh.md` §3, Roberts & Rosenthal (2009) §2.
pub const SAFETY_SCALE: f64 = 0.1;
/// Robbins–Monro exponent κ: step k^(−κ). `specs/mh.md` §4 (default 0.6).
pub const KAPPA_RM: f64 = 0.6;
/// Phase I length is max(50, ⌊0.05·W⌋). `specs/mh.md` §4.
pub const PHASE1_MIN: usize = 50;
/// See [`PHASE1_MIN`].
pub const PHASE1_FRACTION: f64 = 0.05;
/// Phase III length is ⌊0.10·W⌋. `specs/mh.md` §4.
pub const PHASE3_FRACTION: f64 = 0.10;
/// Shape adaptation starts once n ≥ max(20, 2d) draws are in the estimator. `specs/mh.md` §4.
pub const N_MIN_SHAPE: usize = 20;
/// Above this dimension the Cholesky factor may be refreshed every ⌈d/10⌉ iterations.
/// `specs/mh.md` §4.
pub const REFRESH_EVERY_ITERATION_MAX_DIM: usize = 50;
/// Shortest first shape-adaptation window of Phase II; the first window is
/// max(this, ⌊P/16⌋) iterations for a Phase II of P iterations, later windows double.
/// A deviation from `specs/mh.md` §4, see [`shape_window_ends`].
pub const FIRST_WINDOW_MIN: usize = 50;

/// Ends (iteration counts from the start of Phase II, increasing, the last = `phase2_len`) of
/// the shape-adaptation windows of Phase II.
///
/// Deviation from `specs/mh.md` §4 [X]: the spec accumulates one covariance estimate over all
/// of Phase II, so the transient from the initial point into the typical set stays in C. When
/// the posterior is far from the U(−2, 2) start or much narrower than it (posteriordb
/// `earnings-earn_height`, `sblrc-blr`, `kidiq_with_mom_work`, the labour logistic regression),
/// C ends up orders of magnitude too wide along the path, the acceptance rate falls to 2–6 %
/// and the frozen chains do not mix (R-hat 1.5–3). As in Stan's windowed metric adaptation,
/// the estimator therefore restarts at doubling windows: windows of w, 2w, 4w, …
/// (w = max([`FIRST_WINDOW_MIN`], ⌊P/16⌋)), the last one stretched to the end of Phase II when
/// the next would not fit twice. In the first window C follows the running estimate every
/// iteration (Haario, as the spec says); at the end of each window C is set from that window's
/// draws alone, the estimator is cleared, and the Robbins–Monro scale restarts at 2.38/√d with
/// k = 0. With a short warmup (P < 3w) there is a single window: the spec's behaviour.
pub fn shape_window_ends(phase2_len: usize) -> Vec<usize> {
    let mut w = FIRST_WINDOW_MIN.max(phase2_len / 16);
    let mut end = 0;
    let mut ends = Vec::new();
    loop {
        let next = end + w;
        if next + 2 * w > phase2_len {
            ends.push(phase2_len);
            return ends;
        }
        ends.push(next);
        end = next;
        w *= 2;
    }
}

/// Target acceptance α*(d) from the Gaussian-target optima (`specs/mh.md` §3 table).
pub fn target_accept(dim: usize) -> f64 {
    match dim {
        0 | 1 => 0.44,
        2 => 0.35,
        3 => 0.32,
        4 => 0.28,
        _ => 0.234,
    }
}

/// Default number of warmup iterations, max(2000, 500·d) (`specs/mh.md` §6).
pub fn default_warmup(dim: usize) -> usize {
    2000.max(500 * dim)
}

/// Default number of post-warmup iterations, max(2000, 200·d) (`specs/mh.md` §6).
pub fn default_samples(dim: usize) -> usize {
    2000.max(200 * dim)
}

/// User options of the adaptive Metropolis sampler (`specs/mh.md` §4 "Options").
#[derive(Clone, Debug, PartialEq)]
pub struct MhOptions {
    /// Learn the full covariance (true, default) or only its diagonal.
    pub dense: bool,
    /// Probability of the warmup safety proposal (default [`BETA_MIX`]; 0 disables it).
    pub beta_mix: f64,
    /// Robbins–Monro exponent in (0.5, 1] (default [`KAPPA_RM`]).
    pub kappa_rm: f64,
    /// Target acceptance; `None` uses [`target_accept`]`(d)`.
    pub target_accept: Option<f64>,
    /// Initial diagonal shape C₀ (length d); `None` is the identity.
    pub initial_shape: Option<Vec<f64>>,
}

impl Default for MhOptions {
    fn default() -> Self {
        MhOptions {
            dense: true,
            beta_mix: BETA_MIX,
            kappa_rm: KAPPA_RM,
            target_accept: None,
            initial_shape: None,
        }
    }
}

/// Result of one Metropolis–Hastings iteration (`specs/mh.md` §5).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MhStats {
    /// L(q) at the (possibly unchanged) position.
    pub log_density: f64,
    /// The acceptance probability α of the proposal, in [0, 1].
    pub accept_prob: f64,
    /// Whether the proposal was accepted.
    pub accepted: bool,
}

/// One chain of adaptive random-walk Metropolis (`specs/mh.md` §2–§5). No allocation per
/// iteration except when the shape's Cholesky factor is refreshed during Phase II.
#[derive(Clone, Debug)]
pub struct AdaptiveMh {
    dim: usize,
    options: MhOptions,
    target: f64,
    num_warmup: usize,
    phase1_end: usize,
    phase3_start: usize,
    /// Window ends as absolute warmup iteration counts ([`shape_window_ends`]).
    window_ends: Vec<usize>,
    /// Index of the current window in `window_ends`.
    window: usize,
    log_scale: f64,
    rm_updates: u64,
    phase3_log_scale_sum: f64,
    phase3_count: usize,
    /// C: d × d row-major (dense) or its diagonal (length d).
    shape: Vec<f64>,
    /// A with AAᵀ = C: lower triangular d × d (dense) or √diag (diag).
    factor: Vec<f64>,
    cov: WelfordCov,
    var: WelfordVar,
    buffer: Vec<f64>,
    q: Vec<f64>,
    log_density: f64,
    proposal: Vec<f64>,
    z: Vec<f64>,
}

impl AdaptiveMh {
    /// A chain at `init` with finite log density `log_density`, adapting over `num_warmup`
    /// iterations (`specs/mh.md` §4).
    pub fn new(init: Vec<f64>, log_density: f64, options: MhOptions, num_warmup: usize) -> Self {
        let d = init.len();
        let c0 = options
            .initial_shape
            .clone()
            .unwrap_or_else(|| vec![1.0; d]);
        let (shape, factor) = if options.dense {
            let mut c = vec![0.0; d * d];
            let mut a = vec![0.0; d * d];
            for i in 0..d {
                c[i * d + i] = c0[i];
                a[i * d + i] = c0[i].sqrt();
            }
            (c, a)
        } else {
            let a = c0.iter().map(|v| v.sqrt()).collect();
            (c0, a)
        };
        let phase3_len = (PHASE3_FRACTION * num_warmup as f64).floor() as usize;
        let phase1_end = PHASE1_MIN.max((PHASE1_FRACTION * num_warmup as f64).floor() as usize);
        let phase3_start = num_warmup - phase3_len;
        let window_ends = shape_window_ends(phase3_start.saturating_sub(phase1_end))
            .into_iter()
            .map(|e| phase1_end + e)
            .collect();
        AdaptiveMh {
            dim: d,
            target: options.target_accept.unwrap_or_else(|| target_accept(d)),
            num_warmup,
            phase1_end,
            phase3_start,
            window_ends,
            window: 0,
            log_scale: (OPTIMAL_SCALE / (d.max(1) as f64).sqrt()).ln(),
            rm_updates: 0,
            phase3_log_scale_sum: 0.0,
            phase3_count: 0,
            buffer: vec![0.0; shape.len()],
            shape,
            factor,
            cov: WelfordCov::new(if options.dense { d } else { 0 }),
            var: WelfordVar::new(if options.dense { 0 } else { d }),
            options,
            q: init,
            log_density,
            proposal: vec![0.0; d],
            z: vec![0.0; d],
        }
    }

    /// The current position (unconstrained).
    pub fn position(&self) -> &[f64] {
        &self.q
    }

    /// The current global scale λ.
    pub fn scale(&self) -> f64 {
        self.log_scale.exp()
    }

    /// The current shape matrix C: row-major d × d if dense, else its diagonal.
    pub fn shape(&self) -> &[f64] {
        &self.shape
    }

    /// The target acceptance α* in use.
    pub fn target(&self) -> f64 {
        self.target
    }

    /// One iteration. `warmup` is `Some(c)` for warmup iteration c (zero-based; adapts per
    /// `specs/mh.md` §4) and `None` after warmup (frozen kernel, no mixture). A recoverable
    /// density error or NaN at the proposal rejects it; an unrecoverable one is returned.
    pub fn iterate(
        &mut self,
        density: &dyn LogDensity,
        rng: &mut StreamRng,
        warmup: Option<usize>,
    ) -> Result<MhStats, DensityError> {
        let d = self.dim;
        for zi in self.z.iter_mut() {
            *zi = rng.sample(StandardNormal);
        }
        let safety = warmup.is_some()
            && self.options.beta_mix > 0.0
            && rng.random::<f64>() < self.options.beta_mix;
        if safety {
            let s = SAFETY_SCALE / (d.max(1) as f64).sqrt();
            for i in 0..d {
                self.proposal[i] = self.q[i] + s * self.z[i];
            }
        } else {
            let lambda = self.log_scale.exp();
            for i in 0..d {
                let az = if self.options.dense {
                    let row = &self.factor[i * d..i * d + i + 1];
                    row.iter().zip(&self.z).map(|(a, z)| a * z).sum::<f64>()
                } else {
                    self.factor[i] * self.z[i]
                };
                self.proposal[i] = self.q[i] + lambda * az;
            }
        }
        let lp_new = match density.log_density(&self.proposal) {
            Ok(v) if v.is_nan() => f64::NEG_INFINITY,
            Ok(v) => v,
            Err(e) if e.recoverable => f64::NEG_INFINITY,
            Err(e) => return Err(e),
        };
        // log α = min(0, L(q′) − L(q)) (§2, symmetric proposal).
        let log_alpha = if lp_new == f64::NEG_INFINITY {
            f64::NEG_INFINITY
        } else {
            (lp_new - self.log_density).min(0.0)
        };
        let u: f64 = rng.random();
        let accepted = u.ln() < log_alpha;
        if accepted {
            self.q.copy_from_slice(&self.proposal);
            self.log_density = lp_new;
        }
        let alpha = log_alpha.exp();
        if let Some(c) = warmup {
            self.adapt(c, alpha, safety);
        }
        Ok(MhStats {
            log_density: self.log_density,
            accept_prob: alpha,
            accepted,
        })
    }

    /// Warmup adaptation after iteration `c` (`specs/mh.md` §4).
    fn adapt(&mut self, c: usize, alpha: f64, safety: bool) {
        if !safety {
            self.rm_updates += 1;
            let k = self.rm_updates as f64;
            self.log_scale += k.powf(-self.options.kappa_rm) * (alpha - self.target);
        }
        if c >= self.phase1_end && c < self.phase3_start {
            let d = self.dim;
            let n = if self.options.dense {
                self.cov.add(&self.q);
                self.cov.count()
            } else {
                self.var.add(&self.q);
                self.var.count()
            };
            let n_min = N_MIN_SHAPE.max(2 * d);
            let every = if d > REFRESH_EVERY_ITERATION_MAX_DIM {
                d.div_ceil(10)
            } else {
                1
            };
            let window_end = self.window_ends.get(self.window) == Some(&(c + 1));
            let running = self.window == 0 && n >= n_min && (n - n_min).is_multiple_of(every);
            if (running || window_end) && n >= n_min {
                self.update_shape();
            }
            if window_end {
                self.window += 1;
                if c + 1 < self.phase3_start {
                    // Restart (see `shape_window_ends`): the next window's draws alone set C.
                    self.cov.clear();
                    self.var.clear();
                    self.log_scale = (OPTIMAL_SCALE / (d.max(1) as f64).sqrt()).ln();
                    self.rm_updates = 0;
                }
            }
        } else if c >= self.phase3_start {
            self.phase3_log_scale_sum += self.log_scale;
            self.phase3_count += 1;
        }
    }

    /// C ← the regularised estimate of the current window, A its Cholesky factor; on a failed
    /// factorisation the previous C and A stay (`specs/mh.md` §4).
    fn update_shape(&mut self) {
        let d = self.dim;
        if self.options.dense {
            self.cov.regularized_covariance(&mut self.buffer);
            if let Some(a) = cholesky_lower(&self.buffer, d) {
                self.shape.copy_from_slice(&self.buffer);
                self.factor = a;
            }
        } else {
            self.var.regularized_variance(&mut self.buffer);
            if self.buffer.iter().all(|v| v.is_finite() && *v > 0.0) {
                self.shape.copy_from_slice(&self.buffer);
                for (a, v) in self.factor.iter_mut().zip(&self.shape) {
                    *a = v.sqrt();
                }
            }
        }
    }

    /// End of warmup: λ_final = exp(mean of log λ over Phase III), C and A frozen
    /// (`specs/mh.md` §4).
    pub fn finish_warmup(&mut self) {
        if self.phase3_count > 0 {
            self.log_scale = self.phase3_log_scale_sum / self.phase3_count as f64;
        }
    }

    /// Number of warmup iterations this chain was set up for.
    pub fn num_warmup(&self) -> usize {
        self.num_warmup
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inference::rng::stream;

    struct Normal1;
    impl LogDensity for Normal1 {
        fn dim(&self) -> usize {
            1
        }
        fn log_density(&self, x: &[f64]) -> Result<f64, DensityError> {
            if x[0] > 3.0 {
                return Err(DensityError::recoverable("outside"));
            }
            Ok(-0.5 * x[0] * x[0])
        }
        fn log_density_grad(&self, x: &[f64], g: &mut [f64]) -> Result<f64, DensityError> {
            g[0] = -x[0];
            self.log_density(x)
        }
    }

    #[test]
    fn acceptance_probability_and_rejection() {
        let mut mh = AdaptiveMh::new(vec![0.5], -0.125, MhOptions::default(), 0);
        let mut rng = stream(1, 1);
        for _ in 0..2000 {
            let before = (mh.q[0], mh.log_density);
            let s = mh.iterate(&Normal1, &mut rng, None).unwrap();
            let lp_prop = Normal1
                .log_density(&mh.proposal)
                .unwrap_or(f64::NEG_INFINITY);
            // log α = min(0, L(q′) − L(q)).
            let expect = (lp_prop - before.1).min(0.0).exp();
            assert!((s.accept_prob - expect).abs() < 1e-12);
            if mh.proposal[0] > 3.0 {
                assert!(!s.accepted && s.accept_prob == 0.0);
            }
            if !s.accepted {
                assert_eq!((mh.q[0], mh.log_density), before);
            }
            assert_eq!(s.log_density, mh.log_density);
        }
        assert_eq!(mh.scale(), 2.38, "no adaptation after warmup");
    }

    /// `specs/mh.md` §8.2: starting from exact N(0, 1) draws, one step of the frozen kernel
    /// leaves N(0, 1) invariant (Kolmogorov–Smirnov, critical value 1.628/√n for p = 0.01).
    #[test]
    fn one_step_preserves_the_target() {
        struct Std;
        impl LogDensity for Std {
            fn dim(&self) -> usize {
                1
            }
            fn log_density(&self, x: &[f64]) -> Result<f64, DensityError> {
                Ok(-0.5 * x[0] * x[0])
            }
            fn log_density_grad(&self, x: &[f64], g: &mut [f64]) -> Result<f64, DensityError> {
                g[0] = -x[0];
                Ok(-0.5 * x[0] * x[0])
            }
        }
        let mut rng = stream(2, 1);
        let mut mh = AdaptiveMh::new(vec![0.0], 0.0, MhOptions::default(), 0);
        let n = 100_000;
        let mut after: Vec<f64> = (0..n)
            .map(|_| {
                let q0: f64 = rng.sample(StandardNormal);
                mh.q[0] = q0;
                mh.log_density = -0.5 * q0 * q0;
                mh.iterate(&Std, &mut rng, None).unwrap();
                mh.q[0]
            })
            .collect();
        after.sort_by(f64::total_cmp);
        let phi = |x: f64| 0.5 * libm::erfc(-x / std::f64::consts::SQRT_2);
        let d = after
            .iter()
            .enumerate()
            .map(|(i, &x)| {
                let f = phi(x);
                (f - i as f64 / n as f64)
                    .abs()
                    .max(((i + 1) as f64 / n as f64 - f).abs())
            })
            .fold(0.0, f64::max);
        assert!(
            d * (n as f64).sqrt() < 1.628,
            "KS statistic {}",
            d * (n as f64).sqrt()
        );
    }

    /// The kernel does not change after warmup: scale and shape are frozen.
    #[test]
    fn kernel_frozen_after_warmup() {
        let mut mh = AdaptiveMh::new(vec![0.1], -0.005, MhOptions::default(), 200);
        let mut rng = stream(4, 1);
        for c in 0..200 {
            mh.iterate(&Normal1, &mut rng, Some(c)).unwrap();
        }
        mh.finish_warmup();
        let (scale, shape) = (mh.scale(), mh.shape().to_vec());
        assert_ne!(scale, 2.38, "the scale adapted during warmup");
        for _ in 0..500 {
            mh.iterate(&Normal1, &mut rng, None).unwrap();
        }
        assert_eq!((mh.scale(), mh.shape().to_vec()), (scale, shape));
    }

    /// Doubling windows, the last stretched to the end of Phase II; a short Phase II is one
    /// window (the spec's single estimate).
    #[test]
    fn shape_windows_double_and_cover_phase2() {
        // W = 2000: Phase II = 1800 − 100 = 1700; w = 106.
        assert_eq!(shape_window_ends(1700), vec![106, 318, 742, 1700]);
        assert_eq!(shape_window_ends(130), vec![130]);
        assert_eq!(shape_window_ends(0), vec![0]);
        let mh = AdaptiveMh::new(vec![0.0; 2], 0.0, MhOptions::default(), 2000);
        assert_eq!(mh.window_ends, vec![206, 418, 842, 1800]);
    }

    /// Started far from a narrow target, the adapted shape matches the target's variance, not
    /// the transient's spread (the reason for the windows): N(50, 0.01²) in 1-D.
    #[test]
    fn shape_forgets_the_transient() {
        struct Far;
        impl LogDensity for Far {
            fn dim(&self) -> usize {
                1
            }
            fn log_density(&self, x: &[f64]) -> Result<f64, DensityError> {
                Ok(-0.5 * ((x[0] - 50.0) / 0.01).powi(2))
            }
            fn log_density_grad(&self, x: &[f64], g: &mut [f64]) -> Result<f64, DensityError> {
                g[0] = -(x[0] - 50.0) / 1e-4;
                self.log_density(x)
            }
        }
        let mut mh = AdaptiveMh::new(
            vec![0.0],
            Far.log_density(&[0.0]).unwrap(),
            MhOptions::default(),
            2000,
        );
        let mut rng = stream(5, 1);
        for c in 0..2000 {
            mh.iterate(&Far, &mut rng, Some(c)).unwrap();
        }
        mh.finish_warmup();
        // Regularised estimate: (n/(n+5))·1e-4 + 1e-3·5/(n+5) with n = 958 draws ≈ 1.05e-4.
        let c = mh.shape()[0];
        assert!((0.5e-4..2.5e-4).contains(&c), "shape {c}");
        assert!((mh.position()[0] - 50.0).abs() < 0.05);
    }

    #[test]
    fn phase_lengths_and_targets() {
        let mh = AdaptiveMh::new(vec![0.0; 5], 0.0, MhOptions::default(), 2000);
        assert_eq!((mh.phase1_end, mh.phase3_start), (100, 1800));
        let mh = AdaptiveMh::new(vec![0.0; 2], 0.0, MhOptions::default(), 500);
        assert_eq!((mh.phase1_end, mh.phase3_start), (50, 450));
        assert_eq!(mh.target(), 0.35);
        assert_eq!(target_accept(12), 0.234);
        assert_eq!((default_warmup(10), default_samples(3)), (5000, 2000));
    }
}
