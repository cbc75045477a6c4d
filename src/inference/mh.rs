//! Adaptive random-walk Metropolis–Hastings (`specs/mh.md`): Gaussian proposals whose scale
//! (Robbins–Monro, Andrieu & Thoms 2008 §4.2) and shape (Haario et al. 2001) adapt during
//! warmup only, then freeze.

use crate::inference::adapt::{WelfordCov, WelfordVar};
use crate::inference::density::{DensityError, LogDensity};
use crate::inference::hmc::integrator::cholesky_lower;
use crate::inference::rng::StreamRng;
use faer::{Mat, Side};
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
/// Most damped Newton iterations of the curvature initialisation ([`curvature_start`]).
pub const CURVATURE_MAX_ITER: usize = 100;
/// Below this many Newton iterations within the evaluation budget (about
/// max(W, [`CURVATURE_MIN_BUDGET`]) log-density evaluations, 2d² + 1 per iteration) the
/// curvature initialisation is skipped: with d ≳ 60 it would cost more than the warmup.
pub const CURVATURE_MIN_ITER: usize = 3;
/// Smallest evaluation budget of the curvature initialisation (see [`CURVATURE_MIN_ITER`]).
pub const CURVATURE_MIN_BUDGET: usize = 2000;
/// The Newton search of [`curvature_start`] has converged when the Newton decrement
/// gᵀ(−H)⁻¹g (twice the predicted gain of log density, in nats) is below this.
pub const CURVATURE_TOL: f64 = 1e-6;
/// Most tenfold enlargements of a finite-difference step whose second difference is lost in
/// the rounding of L (see `value_derivatives`).
const STEP_GROWTH_TRIES: usize = 10;

/// Where the curvature initialisation ([`curvature_start`]) ended.
#[derive(Clone, Debug, PartialEq)]
pub struct CurvatureStart {
    /// The (approximate) mode reached, on the unconstrained scale (length d).
    pub mode: Vec<f64>,
    /// L at `mode`.
    pub log_density: f64,
    /// (−H)⁻¹ at `mode`, H the finite-difference Hessian of L: d × d row-major, positive
    /// definite.
    pub covariance: Vec<f64>,
    /// Newton iterations taken.
    pub iterations: usize,
    /// Log-density evaluations spent.
    pub evaluations: usize,
}

/// Value-only finite-difference step for coordinate value `x`: ε^{1/4}·max(1, |x|) ≈
/// 1.2e-4·max(1, |x|), the step that balances truncation and rounding error of a central second
/// difference of function values (Nocedal & Wright 2006, §8.1).
fn second_difference_step(x: f64) -> f64 {
    f64::EPSILON.sqrt().sqrt() * x.abs().max(1.0)
}

/// L at `x` (counted in `count`), with a NaN value or a recoverable error read as −∞
/// (`specs/mh.md` §1); an unrecoverable error is returned.
fn eval(density: &dyn LogDensity, x: &[f64], count: &mut usize) -> Result<f64, DensityError> {
    *count += 1;
    match density.log_density(x) {
        Ok(v) if v.is_nan() => Ok(f64::NEG_INFINITY),
        Ok(v) => Ok(v),
        Err(e) if e.recoverable => Ok(f64::NEG_INFINITY),
        Err(e) => Err(e),
    }
}

/// Gradient `g` (length d) and Hessian `h` (d × d row-major) of L at `x` (where L = `fx`) by
/// central differences of log-density values only: g_i = (L(x+h_i e_i) − L(x−h_i e_i))/(2h_i),
/// H_ii = (L(x+h_i e_i) − 2L(x) + L(x−h_i e_i))/h_i², and for i ≠ j the four-point formula
/// (L(++) − L(+−) − L(−+) + L(−−))/(4h_i h_j) (Nocedal & Wright 2006, §8.1, eq. 8.9 and its
/// central variant). The step h_i starts at [`second_difference_step`] and grows tenfold (at
/// most [`STEP_GROWTH_TRIES`] times) while the second difference is below √ε·max(1, |L|), i.e.
/// lost in the rounding of L — far from the posterior, |L| can be 10¹⁰ while the curvature is
/// 10² (posteriordb `earnings-earn_height` at a U(−2, 2) start). Cost about 2d² evaluations.
/// Each evaluation is counted in `count`. Returns `Ok(false)` if a value is not finite.
fn value_derivatives(
    density: &dyn LogDensity,
    x: &[f64],
    fx: f64,
    g: &mut [f64],
    h: &mut [f64],
    count: &mut usize,
) -> Result<bool, DensityError> {
    let d = x.len();
    let resolution = f64::EPSILON.sqrt() * fx.abs().max(1.0);
    let mut step: Vec<f64> = x.iter().map(|&v| second_difference_step(v)).collect();
    let mut y = x.to_vec();
    for i in 0..d {
        let mut found = None;
        for _ in 0..=STEP_GROWTH_TRIES {
            y[i] = x[i] + step[i];
            let fp = eval(density, &y, count)?;
            y[i] = x[i] - step[i];
            let fm = eval(density, &y, count)?;
            y[i] = x[i];
            if !(fp.is_finite() && fm.is_finite()) {
                break;
            }
            found = Some((fp, fm, step[i]));
            if (fp - 2.0 * fx + fm).abs() >= resolution {
                break;
            }
            step[i] *= 10.0;
        }
        let Some((fp, fm, si)) = found else {
            return Ok(false);
        };
        step[i] = si;
        g[i] = (fp - fm) / (2.0 * si);
        h[i * d + i] = (fp - 2.0 * fx + fm) / (si * si);
        for j in 0..i {
            let mut corner = |si: f64, sj: f64| {
                y[i] = x[i] + si * step[i];
                y[j] = x[j] + sj * step[j];
                let v = eval(density, &y, count);
                y[i] = x[i];
                y[j] = x[j];
                v
            };
            let fpp = corner(1.0, 1.0)?;
            let fpm = corner(1.0, -1.0)?;
            let fmp = corner(-1.0, 1.0)?;
            let fmm = corner(-1.0, -1.0)?;
            if !(fpp.is_finite() && fpm.is_finite() && fmp.is_finite() && fmm.is_finite()) {
                return Ok(false);
            }
            let hij = (fpp - fpm - fmp + fmm) / (4.0 * step[i] * step[j]);
            h[i * d + j] = hij;
            h[j * d + i] = hij;
        }
    }
    Ok(true)
}

/// A (modified) Newton step of [`curvature_start`].
struct NewtonStep {
    /// δ = (−H̃)⁻¹·g, length d.
    delta: Vec<f64>,
    /// Whether −H itself is positive definite (no eigenvalue was modified).
    positive_definite: bool,
    /// (−H̃)⁻¹, d × d row-major; the Laplace covariance when `positive_definite`.
    inverse: Vec<f64>,
}

/// The Newton step for maximising L with the eigenvalue modification of Nocedal & Wright
/// (2006, §3.4): with D = diag(√|H_ii|) (Jacobi scaling, so the eigensolver sees the
/// correlation structure rather than raw scales that differ by orders of magnitude) and
/// M = −D⁻¹HD⁻¹ = QΛQᵀ, the eigenvalues are replaced by max(|λ_i|, 10⁻¹²·max|λ|) — an
/// ascent direction even where L is not concave (far from the mode of a regression, where the
/// residuals couple the coefficients and the log scale) that equals the Newton step where it
/// is. `None` when H has a zero or non-finite diagonal or the eigensolver fails.
fn newton_step(g: &[f64], h: &[f64]) -> Option<NewtonStep> {
    let d = g.len();
    let scale: Vec<f64> = (0..d).map(|i| h[i * d + i].abs().sqrt()).collect();
    if scale.iter().any(|s| !(s.is_finite() && *s > 0.0)) {
        return None;
    }
    let m = Mat::<f64>::from_fn(d, d, |i, j| {
        -0.5 * (h[i * d + j] + h[j * d + i]) / (scale[i] * scale[j])
    });
    let evd = m.self_adjoint_eigen(Side::Lower).ok()?;
    let (q, lambda) = (evd.U(), evd.S().column_vector());
    let largest = (0..d).map(|k| lambda[k].abs()).fold(0.0, f64::max);
    if !(largest.is_finite() && largest > 0.0) {
        return None;
    }
    let positive_definite = (0..d).all(|k| lambda[k] > 0.0);
    let inv_lambda: Vec<f64> = (0..d)
        .map(|k| 1.0 / lambda[k].abs().max(1e-12 * largest))
        .collect();
    let mut inverse = vec![0.0; d * d];
    for i in 0..d {
        for j in 0..d {
            let mij: f64 = (0..d).map(|k| q[(i, k)] * inv_lambda[k] * q[(j, k)]).sum();
            inverse[i * d + j] = mij / (scale[i] * scale[j]);
        }
    }
    let delta = (0..d)
        .map(|i| (0..d).map(|j| inverse[i * d + j] * g[j]).sum())
        .collect();
    Some(NewtonStep {
        delta,
        positive_definite,
        inverse,
    })
}

/// Curvature initialisation of the proposal shape, from log-density values only.
///
/// Deviation from `specs/mh.md` §4 and §6 \[X\]: the spec starts the shape at C₀ = I (or a user
/// diagonal) and at the U(−2, 2) point, so the chain must find and learn the posterior from
/// its own history. On posteriors of regressions with uncentred predictors it does not:
/// - posteriordb `earnings-earn_height` (β₁, β₂ correlated −0.998, sds 10⁴ and 150): after
///   30 000 warmup iterations the chains had only just reached the posterior mean, 6 sds along
///   the ridge; the learned C had β₁'s sd 4–23 times too small and correlation −0.60 to
///   −0.98; R-hat 1.04–1.5 depending on the seed.
/// - `kilpisjarvi_mod-kilpisjarvi` (α, β correlated −0.99999, sds 30 and 0.0075): the chains
///   never moved along the ridge; C had α's sd 100–1000 times too small and correlation
///   ≈ −0.1; R-hat 2.9.
///
/// Before warmup, this function therefore runs a Newton search for the mode from `start`:
/// - gradient and Hessian of L from central differences of log-density values (no gradients,
///   `specs/mh.md` §1; about 2d² + 1 evaluations per iteration, `value_derivatives`);
/// - the eigenvalue modification where −H is not positive definite (`newton_step`);
/// - an Armijo backtracking line search (Nocedal & Wright 2006, §3.1, c₁ = 10⁻⁴).
///
/// It returns the point reached and the Laplace covariance (−H)⁻¹ there, which becomes C₀, or
/// `None` when the search does not converge within `max_iter` iterations (convergence: −H
/// positive definite and the decrement gᵀ(−H)⁻¹g < [`CURVATURE_TOL`], or < d when the line
/// search stalls at rounding level) — e.g. a funnel without a mode — in which case the caller
/// keeps the spec's start. On both cases above it converges in 9–28 iterations (200–550
/// evaluations) and the default warmup then passes. Errors: an unrecoverable density error.
pub fn curvature_start(
    density: &dyn LogDensity,
    start: &[f64],
    max_iter: usize,
) -> Result<Option<CurvatureStart>, DensityError> {
    let d = start.len();
    let mut x = start.to_vec();
    let mut evaluations = 0;
    let mut fx = eval(density, &x, &mut evaluations)?;
    if !fx.is_finite() || d == 0 {
        return Ok(None);
    }
    let mut g = vec![0.0; d];
    let mut h = vec![0.0; d * d];
    let mut trial = vec![0.0; d];
    for iteration in 0..=max_iter {
        let ok = value_derivatives(density, &x, fx, &mut g, &mut h, &mut evaluations)?;
        if !ok {
            return Ok(None);
        }
        let Some(step) = newton_step(&g, &h) else {
            return Ok(None);
        };
        let delta = &step.delta;
        let decrement: f64 = g.iter().zip(delta).map(|(a, b)| a * b).sum();
        let done = |stalled: bool| {
            step.positive_definite
                && decrement.is_finite()
                && (decrement < CURVATURE_TOL || (stalled && decrement < d as f64))
        };
        let finish = |x: Vec<f64>, fx: f64, evaluations: usize| CurvatureStart {
            mode: x,
            log_density: fx,
            covariance: step.inverse.clone(),
            iterations: iteration,
            evaluations,
        };
        if done(false) {
            return Ok(Some(finish(x, fx, evaluations)));
        }
        // A NaN decrement also ends the search.
        if iteration == max_iter || decrement.is_nan() || decrement <= 0.0 {
            return Ok(None);
        }
        // Armijo backtracking: L(x + tδ) ≥ L(x) + 10⁻⁴·t·gᵀδ.
        let mut t = 1.0;
        let mut moved = false;
        for _ in 0..50 {
            for i in 0..d {
                trial[i] = x[i] + t * delta[i];
            }
            let ft = eval(density, &trial, &mut evaluations)?;
            if ft.is_finite() && ft >= fx + 1e-4 * t * decrement {
                x.copy_from_slice(&trial);
                fx = ft;
                moved = true;
                break;
            }
            t *= 0.5;
        }
        if !moved {
            return Ok(if done(true) {
                Some(finish(x, fx, evaluations))
            } else {
                None
            });
        }
    }
    Ok(None)
}

/// Ends (iteration counts from the start of Phase II, increasing, the last = `phase2_len`) of
/// the shape-adaptation windows of Phase II.
///
/// Deviation from `specs/mh.md` §4 \[X\]: the spec accumulates one covariance estimate over all
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

/// Band of post-warmup mean acceptance outside which a chain is flagged as poorly tuned, for
/// target α*: [min(0.1, α*/2), max(0.7, 1.6·α*)], i.e. [0.1, 0.7] for the default targets.
///
/// Deviation from `specs/mh.md` §5 \[X\], which flags outside [0.5·α*, 1.6·α*] (0.12–0.37 for
/// d ≥ 5): that fired for healthy runs. In the high-dimensional limit the efficiency of
/// random-walk Metropolis at acceptance a is proportional to a·(Φ⁻¹(a/2))² (the diffusion
/// speed 2ℓ²Φ(−ℓ√I/2) with a = 2Φ(−ℓ√I/2), Roberts, Gelman & Gilks 1997, Thm 1.1), maximal at
/// 0.234 and flat around it: 99 % of the maximum at 0.2, 94 % at 0.15, 86 % at 0.4 (so 0.38 is
/// healthy), 82 % at 0.1, 69 % at 0.5, 50 % at 0.6 and 31 % at 0.7; in low dimension the
/// optimum moves up to 0.44 (d = 1, Gelman, Roberts & Gilks 1996). Only acceptance below 0.1
/// (typically a mis-learned shape) or above 0.7 (a scale far too small) is flagged. A
/// user-chosen α* outside the default range widens the band around itself.
pub fn accept_flag_band(target: f64) -> (f64, f64) {
    (0.1f64.min(0.5 * target), 0.7f64.max(1.6 * target))
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
    /// Initial diagonal shape C₀ (length d); `None` is the identity, or the curvature
    /// estimate when `curvature_init` is on.
    pub initial_shape: Option<Vec<f64>>,
    /// Before warmup, move to the mode and start the shape at the Laplace covariance there
    /// ([`curvature_start`], a deviation from `specs/mh.md` §4/§6); only when no
    /// `initial_shape` is given and there is a warmup. Default true.
    pub curvature_init: bool,
}

impl Default for MhOptions {
    fn default() -> Self {
        MhOptions {
            dense: true,
            beta_mix: BETA_MIX,
            kappa_rm: KAPPA_RM,
            target_accept: None,
            initial_shape: None,
            curvature_init: true,
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
/// iteration except when the shape's Cholesky factor is refreshed during Phase II (and in the
/// curvature initialisation at warmup iteration 0).
///
/// Departures from `specs/mh.md` \[X\], all confined to warmup (the kernel is frozen after it):
/// - §4/§6, initial shape and position: [`curvature_start`] (value-only damped Newton) gives
///   C₀ = (−H)⁻¹ at the mode and a start drawn from N(mode, C₀), unless the user gives C₀ or
///   disables it ([`MhOptions::curvature_init`]); if it fails, the spec's start.
/// - §4, restarts of the shape estimate at doubling windows ([`shape_window_ends`]).
/// - §4, shrinkage: C ← (n/(n+5))·Ĉ_n + 10⁻³·(5/(n+5))·C_ref with C_ref the shape at the start
///   of the current window (C₀ in the first) instead of 10⁻³·I. With C₀ = I this is the spec's
///   formula in the first window. The absolute 10⁻³·I is not scale-aware: on
///   `kilpisjarvi_mod-kilpisjarvi` (unconstrained posterior variances 900 and 5·10⁻⁵,
///   correlation −0.99999, smallest eigenvalue ≈ 10⁻⁹) it adds 5·10⁻⁷ to the slope's variance
///   after 10 000 draws, 400 times the variance across the ridge, so λ must shrink about 20-fold
///   to keep the acceptance and the walk along the ridge slows by as much. Shrinking toward
///   the current shape is affine-equivariant and keeps C positive definite.
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
    /// What the shape estimate is shrunk toward (times 10⁻³): C at the start of the current
    /// window, same layout as `shape` (see [`AdaptiveMh`] on the shrinkage).
    shrink_target: Vec<f64>,
    /// The curvature initialisation is still to run (at warmup iteration 0).
    curvature_pending: bool,
    /// Newton iterations and evaluations of the curvature initialisation, if it succeeded.
    curvature: Option<(usize, usize)>,
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
            shrink_target: shape.clone(),
            curvature_pending: options.curvature_init
                && options.initial_shape.is_none()
                && num_warmup > 0,
            curvature: None,
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
        if self.curvature_pending && warmup.is_some() {
            self.curvature_pending = false;
            self.initialize_from_curvature(density, rng)?;
        }
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

    /// Runs [`curvature_start`] from the current position with a budget of about
    /// max(W, [`CURVATURE_MIN_BUDGET`]) evaluations, i.e. that divided by 2d² + 1 Newton
    /// iterations, at most [`CURVATURE_MAX_ITER`]; skipped below [`CURVATURE_MIN_ITER`]. On success C₀ = (−H)⁻¹ at the mode (its
    /// diagonal for the diag variant) and the chain starts from one draw of N(mode, C₀) (the
    /// mode itself if L is not finite there), so that chains stay dispersed for R-hat. On
    /// failure nothing changes (the spec's start).
    fn initialize_from_curvature(
        &mut self,
        density: &dyn LogDensity,
        rng: &mut StreamRng,
    ) -> Result<(), DensityError> {
        let d = self.dim;
        let per_iter = 2 * d * d + 1;
        let max_iter =
            (self.num_warmup.max(CURVATURE_MIN_BUDGET) / per_iter).min(CURVATURE_MAX_ITER);
        if max_iter < CURVATURE_MIN_ITER {
            return Ok(());
        }
        let Some(cs) = curvature_start(density, &self.q, max_iter)? else {
            return Ok(());
        };
        let (shape, factor) = if self.options.dense {
            match cholesky_lower(&cs.covariance, d) {
                Some(a) => (cs.covariance.clone(), a),
                None => return Ok(()),
            }
        } else {
            let v: Vec<f64> = (0..d).map(|i| cs.covariance[i * d + i]).collect();
            let a = v.iter().map(|x| x.sqrt()).collect();
            (v, a)
        };
        self.shape = shape;
        self.factor = factor;
        self.shrink_target = self.shape.clone();
        self.q = cs.mode.clone();
        self.log_density = cs.log_density;
        // One draw of N(mode, C₀): q = mode + A·z.
        for zi in self.z.iter_mut() {
            *zi = rng.sample(StandardNormal);
        }
        for i in 0..d {
            let az = if self.options.dense {
                (0..=i)
                    .map(|j| self.factor[i * d + j] * self.z[j])
                    .sum::<f64>()
            } else {
                self.factor[i] * self.z[i]
            };
            self.proposal[i] = cs.mode[i] + az;
        }
        let lp = eval(density, &self.proposal, &mut 0)?;
        if lp.is_finite() {
            self.q.copy_from_slice(&self.proposal);
            self.log_density = lp;
        }
        self.curvature = Some((cs.iterations, cs.evaluations));
        Ok(())
    }

    /// Newton iterations and log-density evaluations of the curvature initialisation, or
    /// `None` if it did not run or did not converge ([`curvature_start`]).
    pub fn curvature_init(&self) -> Option<(usize, usize)> {
        self.curvature
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
                    self.shrink_target.copy_from_slice(&self.shape);
                    self.log_scale = (OPTIMAL_SCALE / (d.max(1) as f64).sqrt()).ln();
                    self.rm_updates = 0;
                }
            }
        } else if c >= self.phase3_start {
            self.phase3_log_scale_sum += self.log_scale;
            self.phase3_count += 1;
        }
    }

    /// C ← the regularised estimate of the current window, (n/(n+5))·Ĉ_n + 10⁻³·(5/(n+5))·C_ref
    /// (see [`AdaptiveMh`] for C_ref), A its Cholesky factor; on a failed factorisation the
    /// previous C and A stay (`specs/mh.md` §4).
    fn update_shape(&mut self) {
        let d = self.dim;
        if self.options.dense {
            self.cov
                .regularized_covariance_toward(&self.shrink_target, &mut self.buffer);
            if let Some(a) = cholesky_lower(&self.buffer, d) {
                self.shape.copy_from_slice(&self.buffer);
                self.factor = a;
            }
        } else {
            self.var
                .regularized_variance_toward(&self.shrink_target, &mut self.buffer);
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
mod tests;
