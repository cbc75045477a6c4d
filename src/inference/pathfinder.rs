//! Pathfinder: variational inference along the L-BFGS path (Zhang, Carpenter, Gelman &
//! Vehtari 2022, "Pathfinder: parallel quasi-Newton variational inference", JMLR 23(306)).
//!
//! One path (the paper's Algorithm 1):
//! 1. L-BFGS maximises L(ζ) (the log density on the unconstrained scale, Jacobian included)
//!    from a random start, recording the iterates ζ_0 … ζ_L and gradients ∇L(ζ_l).
//! 2. At every iterate l ≥ 1 the last J correction pairs s_k = ζ_{k+1} − ζ_k,
//!    y_k = ∇f(ζ_{k+1}) − ∇f(ζ_k) (f = −L) with sᵀy > ε‖y‖² give the BFGS inverse Hessian in
//!    compact form, Σ_l = D + β γ βᵀ (Byrd, Nocedal & Schnabel 1994, Thm 2.2; paper Alg. 3),
//!    whose diagonal D is updated pair by pair (paper Alg. 4, after Gilbert & Lemaréchal 1989).
//!    q_l = N(μ_l, Σ_l) with μ_l = ζ_l + Σ_l ∇L(ζ_l), one Newton step from ζ_l.
//! 3. K draws of each q_l estimate its ELBO; the path returns the q_l with the largest.
//!
//! Multi-path Pathfinder (the paper's Algorithm 2) runs I paths from independent starts, in
//! parallel. bayesc returns the equal-weight mixture of the I Gaussians as the approximation q;
//! the fit pipeline draws from it, importance-resamples with Pareto smoothing (PSIS) and reports
//! k̂ of the mixture as for every variational method. Departure from the paper, which weights
//! each path's draws by its own component density q_i: the mixture density is the density the
//! pooled draws actually come from, so its importance weights are the correct ones, and the
//! same k̂ gate applies. Paths whose best ELBO is −∞ (no approximation could be formed) are
//! dropped and reported.
//!
//! Cost per path: the L-BFGS run plus K log-density evaluations per iterate, and O(d·J²) per
//! iterate to form q_l; every draw of q costs O(d·J). Memory is O(d·J) per component, so
//! Pathfinder runs at BNN scale.

use faer::{Mat, Side};
use rand::RngExt;
use rand_distr::StandardNormal;
use rayon::prelude::*;

use super::density::{DensityError, LogDensity};
use super::init::random_init;
use super::optimize::{OptimizeSettings, optimize_traced};
use super::rng::{StreamRng, stream};

/// Settings of [`pathfinder`]. Defaults are Stan's for `pathfinder` (CmdStan 2.33+:
/// `num_paths = 4`, `num_elbo_draws = 25`, `max_lbfgs_iters = 1000`; L-BFGS tolerances as
/// [`OptimizeSettings`]), except the history J = 6 of the paper (§2.4; Stan uses 5).
#[derive(Clone, Debug, PartialEq)]
pub struct PathfinderSettings {
    /// I, the number of independent paths (≥ 1).
    pub num_paths: usize,
    /// J, the number of correction pairs in each q_l (≥ 1).
    pub history: usize,
    /// K, draws per iterate for the ELBO estimate (≥ 1).
    pub num_elbo_draws: usize,
    /// L-BFGS settings of each path (its `history` is set to J).
    pub optimize: OptimizeSettings,
    /// Seed: path i uses random stream 20 + i of it (its start, then its ELBO draws).
    pub seed: u64,
    /// Starting points (unconstrained, length d each): path i starts at `inits[i]` when there
    /// is one (`--init FILE`), else at a random point. Default empty.
    pub inits: Vec<Vec<f64>>,
}

impl Default for PathfinderSettings {
    fn default() -> Self {
        PathfinderSettings {
            num_paths: 4,
            history: 6,
            num_elbo_draws: 25,
            optimize: OptimizeSettings {
                max_iter: 1000,
                ..OptimizeSettings::default()
            },
            seed: 0,
            inits: Vec::new(),
        }
    }
}

/// A Gaussian q = N(μ, Σ) with Σ = D + β γ βᵀ held in the factored form of the paper's
/// Alg. 3: Σ = D^{1/2} M Mᵀ D^{1/2}, M = I + Q (L − I) Qᵀ, where Q (d × k, orthonormal
/// columns) and R come from the thin QR of D^{-1/2} β and L L ᵀ = I + R γ Rᵀ (k × k).
#[derive(Clone, Debug)]
pub struct LowRankGaussian {
    /// μ, length d.
    pub mean: Vec<f64>,
    /// D^{1/2}, length d.
    sqrt_diag: Vec<f64>,
    /// Q, d × k, column-major.
    q: Vec<f64>,
    /// L, k × k lower triangular, column-major.
    l: Vec<f64>,
    k: usize,
    /// log |Σ| = Σ log D_i + 2 Σ log L_jj.
    log_det: f64,
}

impl LowRankGaussian {
    /// Dimension d.
    pub fn dim(&self) -> usize {
        self.mean.len()
    }

    /// One draw ζ = μ + D^{1/2} M u, u ~ N(0, I_d), with its log density log q(ζ) (normalised).
    pub fn sample(&self, rng: &mut StreamRng) -> (Vec<f64>, f64) {
        let d = self.dim();
        let u: Vec<f64> = (0..d).map(|_| rng.sample(StandardNormal)).collect();
        let w = self.apply_m(&u);
        let z = (0..d)
            .map(|i| self.mean[i] + self.sqrt_diag[i] * w[i])
            .collect();
        let uu: f64 = u.iter().map(|v| v * v).sum();
        (z, self.log_q_from_norm(uu))
    }

    /// log q(ζ), normalised; ζ has length d.
    pub fn log_q(&self, z: &[f64]) -> f64 {
        let d = self.dim();
        let w: Vec<f64> = (0..d)
            .map(|i| (z[i] - self.mean[i]) / self.sqrt_diag[i])
            .collect();
        // M⁻¹ = (I − QQᵀ) + Q L⁻¹ Qᵀ
        let qt_w = self.qt(&w);
        let mut x = qt_w.clone();
        // forward substitution L x = Qᵀw
        for j in 0..self.k {
            let mut v = x[j];
            for i in 0..j {
                v -= self.l[i * self.k + j] * x[i];
            }
            x[j] = v / self.l[j * self.k + j];
        }
        let diff: Vec<f64> = (0..self.k).map(|j| x[j] - qt_w[j]).collect();
        let mut u = w;
        self.add_q(&diff, &mut u);
        let uu: f64 = u.iter().map(|v| v * v).sum();
        self.log_q_from_norm(uu)
    }

    fn log_q_from_norm(&self, uu: f64) -> f64 {
        let d = self.dim() as f64;
        -0.5 * (d * (2.0 * std::f64::consts::PI).ln() + self.log_det + uu)
    }

    /// Qᵀ w (length k).
    fn qt(&self, w: &[f64]) -> Vec<f64> {
        let d = self.dim();
        (0..self.k)
            .map(|j| {
                let col = &self.q[j * d..(j + 1) * d];
                col.iter().zip(w).map(|(a, b)| a * b).sum()
            })
            .collect()
    }

    /// out += Q c.
    fn add_q(&self, c: &[f64], out: &mut [f64]) {
        let d = self.dim();
        for (j, cj) in c.iter().enumerate() {
            let col = &self.q[j * d..(j + 1) * d];
            for (o, a) in out.iter_mut().zip(col) {
                *o += a * cj;
            }
        }
    }

    /// M u = u + Q (L − I) Qᵀ u.
    fn apply_m(&self, u: &[f64]) -> Vec<f64> {
        let qt_u = self.qt(u);
        let c: Vec<f64> = (0..self.k)
            .map(|i| {
                (0..=i)
                    .map(|j| self.l[j * self.k + i] * qt_u[j])
                    .sum::<f64>()
                    - qt_u[i]
            })
            .collect();
        let mut out = u.to_vec();
        self.add_q(&c, &mut out);
        out
    }

    /// The dense covariance Σ (d × d, row-major). O(d²·k); for tests and small d.
    pub fn covariance(&self) -> Vec<f64> {
        let d = self.dim();
        let mut cols = Vec::with_capacity(d);
        for j in 0..d {
            let mut e = vec![0.0; d];
            e[j] = 1.0;
            let m = self.apply_m(&e);
            cols.push(m);
        }
        // Σ = D^{1/2} M Mᵀ D^{1/2}; cols[j] = M e_j, so (M Mᵀ)_{ab} = Σ_j M_{aj} M_{bj}.
        let mut out = vec![0.0; d * d];
        for a in 0..d {
            for b in 0..d {
                let s: f64 = (0..d).map(|j| cols[j][a] * cols[j][b]).sum();
                out[a * d + b] = self.sqrt_diag[a] * s * self.sqrt_diag[b];
            }
        }
        out
    }
}

/// The correction pairs and the diagonal D of one path, updated iterate by iterate.
#[derive(Clone, Debug)]
pub struct InverseHessian {
    /// D (length d), initially ones.
    pub diag: Vec<f64>,
    /// Accepted (s, y) pairs in f = −L convention, oldest first, at most J.
    pub pairs: Vec<(Vec<f64>, Vec<f64>)>,
    history: usize,
}

impl InverseHessian {
    /// D = I and no pairs, keeping at most `history` (J) pairs.
    pub fn new(d: usize, history: usize) -> Self {
        InverseHessian {
            diag: vec![1.0; d],
            pairs: Vec::new(),
            history: history.max(1),
        }
    }

    /// Adds the pair (s, y) if sᵀy > ε‖y‖² (the paper's curvature check, Alg. 3, with ε the
    /// machine epsilon), updating D by Alg. 4: with a = yᵀDy, b = yᵀs, c = sᵀD⁻¹s,
    /// D_i ← 1 / (a/(b D_i) + y_i²/b − a s_i²/(b c D_i²)), the diagonal of the scaled BFGS
    /// update of D⁻¹. A D that would not stay positive and finite is kept as it was. Returns
    /// whether the pair was accepted.
    pub fn push(&mut self, s: Vec<f64>, y: Vec<f64>) -> bool {
        let b: f64 = s.iter().zip(&y).map(|(a, b)| a * b).sum();
        let yy: f64 = y.iter().map(|v| v * v).sum();
        if !(b > f64::EPSILON * yy) || !b.is_finite() {
            return false;
        }
        let a: f64 = y.iter().zip(&self.diag).map(|(v, di)| v * v * di).sum();
        let c: f64 = s.iter().zip(&self.diag).map(|(v, di)| v * v / di).sum();
        let new: Vec<f64> = (0..s.len())
            .map(|i| {
                let di = self.diag[i];
                1.0 / (a / (b * di) + y[i] * y[i] / b - a * s[i] * s[i] / (b * c * di * di))
            })
            .collect();
        if new.iter().all(|v| v.is_finite() && *v > 0.0) {
            self.diag = new;
        }
        if self.pairs.len() == self.history {
            self.pairs.remove(0);
        }
        self.pairs.push((s, y));
        true
    }

    /// q = N(ζ + Σ ∇L, Σ) at iterate ζ with gradient ∇L (`grad`), Σ = D + βγβᵀ (paper Alg. 3).
    /// `None` when there is no pair yet or the factorisation fails (Σ not positive definite in
    /// floating point).
    pub fn gaussian(&self, zeta: &[f64], grad: &[f64]) -> Option<LowRankGaussian> {
        let d = zeta.len();
        let m = self.pairs.len();
        if m == 0 {
            return None;
        }
        let dg = &self.diag;
        // R (m × m upper triangular, R_ij = s_iᵀ y_j for i ≤ j) and its inverse.
        let mut r = Mat::<f64>::zeros(m, m);
        for i in 0..m {
            for j in i..m {
                r[(i, j)] = dot(&self.pairs[i].0, &self.pairs[j].1);
            }
        }
        let r_inv = upper_inverse(&r)?;
        // Yᵀ D Y + E
        let mut middle = Mat::<f64>::zeros(m, m);
        for i in 0..m {
            for j in 0..m {
                middle[(i, j)] = (0..d)
                    .map(|t| self.pairs[i].1[t] * dg[t] * self.pairs[j].1[t])
                    .sum::<f64>();
            }
            middle[(i, i)] += r[(i, i)];
        }
        // γ for β = [D Y, S]: [[0, −R⁻¹], [−R⁻ᵀ, R⁻ᵀ (E + YᵀDY) R⁻¹]]
        let lower_right = r_inv.transpose() * &middle * &r_inv;
        let mut gamma = Mat::<f64>::zeros(2 * m, 2 * m);
        for i in 0..m {
            for j in 0..m {
                gamma[(i, m + j)] = -r_inv[(i, j)];
                gamma[(m + j, i)] = -r_inv[(i, j)];
                gamma[(m + i, m + j)] = lower_right[(i, j)];
            }
        }
        // D^{-1/2} β = [D^{1/2} Y, D^{-1/2} S]
        let sqrt_diag: Vec<f64> = dg.iter().map(|v| v.sqrt()).collect();
        let scaled = Mat::<f64>::from_fn(d, 2 * m, |t, j| {
            if j < m {
                sqrt_diag[t] * self.pairs[j].1[t]
            } else {
                self.pairs[j - m].0[t] / sqrt_diag[t]
            }
        });
        let qr = scaled.qr();
        let q = qr.compute_thin_Q();
        let rb = qr.thin_R().to_owned();
        let k = q.ncols();
        let mut t = &rb * &gamma * rb.transpose();
        for i in 0..k {
            t[(i, i)] += 1.0;
        }
        let llt = t.llt(Side::Lower).ok()?;
        let l = llt.L();
        let mut l_vec = vec![0.0; k * k];
        let mut log_det: f64 = dg.iter().map(|v| v.ln()).sum();
        for j in 0..k {
            for i in j..k {
                l_vec[j * k + i] = l[(i, j)];
            }
            log_det += 2.0 * l[(j, j)].ln();
        }
        let mut q_vec = vec![0.0; d * k];
        for j in 0..k {
            for i in 0..d {
                q_vec[j * d + i] = q[(i, j)];
            }
        }
        // μ = ζ + Σ ∇L, Σ g = D g + β γ βᵀ g
        let beta_t_g: Vec<f64> = (0..2 * m)
            .map(|j| {
                (0..d)
                    .map(|t| {
                        let b = if j < m {
                            dg[t] * self.pairs[j].1[t]
                        } else {
                            self.pairs[j - m].0[t]
                        };
                        b * grad[t]
                    })
                    .sum()
            })
            .collect();
        let gamma_btg: Vec<f64> = (0..2 * m)
            .map(|i| (0..2 * m).map(|j| gamma[(i, j)] * beta_t_g[j]).sum())
            .collect();
        let mut mean: Vec<f64> = (0..d).map(|t| zeta[t] + dg[t] * grad[t]).collect();
        for (j, c) in gamma_btg.iter().enumerate() {
            for (t, mu) in mean.iter_mut().enumerate() {
                let b = if j < m {
                    dg[t] * self.pairs[j].1[t]
                } else {
                    self.pairs[j - m].0[t]
                };
                *mu += b * c;
            }
        }
        if !log_det.is_finite() || mean.iter().any(|v| !v.is_finite()) {
            return None;
        }
        Some(LowRankGaussian {
            mean,
            sqrt_diag,
            q: q_vec,
            l: l_vec,
            k,
            log_det,
        })
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Inverse of an upper-triangular matrix by back substitution; `None` if singular.
fn upper_inverse(r: &Mat<f64>) -> Option<Mat<f64>> {
    let m = r.nrows();
    let mut inv = Mat::<f64>::zeros(m, m);
    for col in 0..m {
        for i in (0..=col).rev() {
            let mut v = if i == col { 1.0 } else { 0.0 };
            for k in i + 1..=col {
                v -= r[(i, k)] * inv[(k, col)];
            }
            let p = r[(i, i)];
            if p == 0.0 || !p.is_finite() {
                return None;
            }
            inv[(i, col)] = v / p;
        }
    }
    Some(inv)
}

/// What one path found.
#[derive(Clone, Debug)]
pub struct PathResult {
    /// The approximation with the largest ELBO along the path, `None` if none could be formed.
    pub approximation: Option<LowRankGaussian>,
    /// Its ELBO estimate from K draws (−∞ when `approximation` is `None`).
    pub elbo: f64,
    /// The point l of the path (0 = the start; L-BFGS's confirming probes count as points) whose
    /// q_l was chosen (0 when none).
    pub best_iteration: usize,
    /// L-BFGS iterations of the path.
    pub iterations: usize,
    /// How L-BFGS stopped (its message), or why the path failed.
    pub message: String,
}

/// Runs one path from a random start drawn from `rng` (paper Alg. 1).
///
/// Errors: an unrecoverable [`DensityError`] from the model. A start that cannot be found or
/// an L-BFGS failure is reported in [`PathResult::message`] with no approximation.
pub fn single_path(
    density: &dyn LogDensity,
    settings: &PathfinderSettings,
    rng: &mut StreamRng,
) -> Result<PathResult, DensityError> {
    single_path_from(density, settings, rng, None)
}

/// [`single_path`] from `start` when given (else a random start drawn from `rng`).
///
/// Errors: as [`single_path`].
pub fn single_path_from(
    density: &dyn LogDensity,
    settings: &PathfinderSettings,
    rng: &mut StreamRng,
    start: Option<&[f64]>,
) -> Result<PathResult, DensityError> {
    let failed = |message: String| PathResult {
        approximation: None,
        elbo: f64::NEG_INFINITY,
        best_iteration: 0,
        iterations: 0,
        message,
    };
    let init = match start
        .map(|z| Ok(z.to_vec()))
        .unwrap_or_else(|| random_init(density, rng))
    {
        Ok(z) => z,
        Err(e) if e.recoverable => return Ok(failed(e.to_string())),
        Err(e) => return Err(e),
    };
    let mut path: Vec<(Vec<f64>, Vec<f64>)> = Vec::new();
    let opt = OptimizeSettings {
        history: settings.history,
        ..settings.optimize.clone()
    };
    let run = optimize_traced(density, &init, &opt, &mut |x, _lp, g| {
        path.push((x.to_vec(), g.to_vec()));
    });
    let result = match run {
        Ok(r) => r,
        Err(super::optimize::OptimizeError::Density(e)) if !e.recoverable => return Err(e),
        Err(e) => return Ok(failed(e.to_string())),
    };
    let d = density.dim();
    let mut hessian = InverseHessian::new(d, settings.history);
    let mut best: Option<(LowRankGaussian, f64, usize)> = None;
    for l in 1..path.len() {
        let (prev_x, prev_g) = &path[l - 1];
        let (x, g) = &path[l];
        let s: Vec<f64> = x.iter().zip(prev_x).map(|(a, b)| a - b).collect();
        // y in f = −L terms: ∇f(ζ_l) − ∇f(ζ_{l−1}) = −(∇L_l − ∇L_{l−1})
        let y: Vec<f64> = g.iter().zip(prev_g).map(|(a, b)| b - a).collect();
        hessian.push(s, y);
        let Some(q) = hessian.gaussian(x, g) else {
            continue;
        };
        let elbo = elbo_estimate(density, &q, settings.num_elbo_draws, rng)?;
        if elbo.is_finite() && best.as_ref().is_none_or(|b| elbo > b.1) {
            best = Some((q, elbo, l));
        }
    }
    Ok(match best {
        Some((q, elbo, l)) => PathResult {
            approximation: Some(q),
            elbo,
            best_iteration: l,
            iterations: result.iterations,
            message: result.message,
        },
        None => PathResult {
            iterations: result.iterations,
            ..failed(format!(
                "no finite-ELBO approximation along the {} L-BFGS iterations ({})",
                result.iterations, result.message
            ))
        },
    })
}

/// ELBO estimate mean_k (L(ζ_k) − log q(ζ_k)) from `k` draws of `q`; a recoverable density
/// error at a draw gives −∞.
fn elbo_estimate(
    density: &dyn LogDensity,
    q: &LowRankGaussian,
    k: usize,
    rng: &mut StreamRng,
) -> Result<f64, DensityError> {
    let mut total = 0.0;
    for _ in 0..k.max(1) {
        let (z, lq) = q.sample(rng);
        match density.log_density(&z) {
            Ok(lp) if lp.is_finite() => total += lp - lq,
            Ok(_) => return Ok(f64::NEG_INFINITY),
            Err(e) if e.recoverable => return Ok(f64::NEG_INFINITY),
            Err(e) => return Err(e),
        }
    }
    Ok(total / k.max(1) as f64)
}

/// The result of multi-path Pathfinder: the equal-weight mixture of the paths' approximations.
#[derive(Clone, Debug)]
pub struct PathfinderFit {
    /// Every path's outcome, in path order (failed paths included).
    pub paths: Vec<PathResult>,
    /// The mixture components: the approximations of the paths that found one.
    pub components: Vec<LowRankGaussian>,
}

impl PathfinderFit {
    /// n draws of the mixture: component chosen uniformly, then a Gaussian draw.
    pub fn sample(&self, n: usize, rng: &mut StreamRng) -> Vec<Vec<f64>> {
        (0..n)
            .map(|_| {
                let c = rng.random_range(0..self.components.len());
                self.components[c].sample(rng).0
            })
            .collect()
    }

    /// log q(ζ) of the mixture, log (1/I Σ_i q_i(ζ)).
    pub fn log_q(&self, z: &[f64]) -> f64 {
        let logs: Vec<f64> = self.components.iter().map(|c| c.log_q(z)).collect();
        let max = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if !max.is_finite() {
            return max;
        }
        max + logs.iter().map(|v| (v - max).exp()).sum::<f64>().ln()
            - (self.components.len() as f64).ln()
    }

    /// The mixture mean (length d).
    pub fn mean(&self) -> Vec<f64> {
        let d = self.components.first().map_or(0, |c| c.dim());
        let n = self.components.len() as f64;
        (0..d)
            .map(|i| self.components.iter().map(|c| c.mean[i]).sum::<f64>() / n)
            .collect()
    }
}

/// Why [`pathfinder`] failed.
#[derive(Clone, Debug, thiserror::Error)]
pub enum PathfinderError {
    /// Every path failed; the message lists why.
    #[error("every Pathfinder path failed: {0}")]
    NoPath(String),
    /// An unrecoverable error in the model.
    #[error("Pathfinder stopped by an error in the model: {0}")]
    Density(DensityError),
    /// d = 0 or a setting is out of range.
    #[error("{0}")]
    Settings(String),
}

/// Multi-path Pathfinder (paper Alg. 2): I paths in parallel (path i on random stream 20 + i
/// of `settings.seed`, so the result does not depend on the number of threads), returning the
/// mixture of the paths' best approximations.
///
/// Errors: [`PathfinderError::Settings`] for d = 0 or I, J or K = 0;
/// [`PathfinderError::NoPath`] when no path found an approximation; [`PathfinderError::Density`]
/// for an unrecoverable model error.
pub fn pathfinder(
    density: &dyn LogDensity,
    settings: &PathfinderSettings,
) -> Result<PathfinderFit, PathfinderError> {
    if density.dim() == 0 {
        return Err(PathfinderError::Settings(
            "Pathfinder needs at least one unconstrained parameter".into(),
        ));
    }
    if settings.num_paths == 0 || settings.history == 0 || settings.num_elbo_draws == 0 {
        return Err(PathfinderError::Settings(
            "--num-paths, --history-size and --num-elbo-draws must be at least 1".into(),
        ));
    }
    let paths: Vec<PathResult> = (0..settings.num_paths)
        .into_par_iter()
        .map(|i| {
            let mut rng = stream(settings.seed, 20 + i as u64);
            single_path_from(
                density,
                settings,
                &mut rng,
                settings.inits.get(i).map(Vec::as_slice),
            )
        })
        .collect::<Result<_, _>>()
        .map_err(PathfinderError::Density)?;
    let components: Vec<LowRankGaussian> = paths
        .iter()
        .filter_map(|p| p.approximation.clone())
        .collect();
    if components.is_empty() {
        return Err(PathfinderError::NoPath(
            paths
                .iter()
                .enumerate()
                .map(|(i, p)| format!("path {}: {}", i + 1, p.message))
                .collect::<Vec<_>>()
                .join("; "),
        ));
    }
    Ok(PathfinderFit { paths, components })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The compact form equals the dense BFGS inverse-Hessian recursion from H₀ = D
    /// (Nocedal & Wright eq. 6.17) for the same pairs.
    #[test]
    fn compact_form_matches_bfgs_recursion() {
        let d = 5;
        let mut h = InverseHessian::new(d, 3);
        h.diag = vec![0.5, 1.0, 2.0, 1.5, 0.8];
        // pairs from a quadratic with SPD Hessian A: y = A s
        let a = |s: &[f64]| -> Vec<f64> {
            (0..d)
                .map(|i| {
                    (0..d)
                        .map(|j| {
                            let v = if i == j { 3.0 + i as f64 } else { 0.4 };
                            v * s[j]
                        })
                        .sum()
                })
                .collect()
        };
        let steps = [
            vec![1.0, 0.2, -0.3, 0.5, 0.1],
            vec![-0.2, 0.7, 0.1, 0.0, 0.4],
            vec![0.3, -0.1, 0.9, -0.4, 0.2],
        ];
        let d0 = h.diag.clone();
        for s in &steps {
            h.pairs.push((s.clone(), a(s)));
        }
        let q = h.gaussian(&[0.0; 5], &[0.0; 5]).unwrap();
        let sigma = q.covariance();
        // dense recursion H ← (I − ρ s yᵀ) H (I − ρ y sᵀ) + ρ s sᵀ
        let mut hd = vec![0.0; d * d];
        for i in 0..d {
            hd[i * d + i] = d0[i];
        }
        for s in &steps {
            let y = a(s);
            let rho = 1.0 / dot(s, &y);
            let mut left = vec![0.0; d * d];
            for i in 0..d {
                for j in 0..d {
                    left[i * d + j] = if i == j { 1.0 } else { 0.0 } - rho * s[i] * y[j];
                }
            }
            let mul = |x: &[f64], z: &[f64]| -> Vec<f64> {
                let mut o = vec![0.0; d * d];
                for i in 0..d {
                    for j in 0..d {
                        o[i * d + j] = (0..d).map(|k| x[i * d + k] * z[k * d + j]).sum();
                    }
                }
                o
            };
            let mut right = vec![0.0; d * d];
            for i in 0..d {
                for j in 0..d {
                    right[i * d + j] = left[j * d + i];
                }
            }
            hd = mul(&mul(&left, &hd), &right);
            for i in 0..d {
                for j in 0..d {
                    hd[i * d + j] += rho * s[i] * s[j];
                }
            }
        }
        for (x, y) in sigma.iter().zip(&hd) {
            assert!((x - y).abs() < 1e-10, "{x} vs {y}");
        }
        // log q agrees with the dense Gaussian density at a point
        let z = [0.3, -0.2, 0.1, 0.5, -0.4];
        let chol = Mat::<f64>::from_fn(d, d, |i, j| hd[i * d + j])
            .llt(Side::Lower)
            .unwrap();
        let l = chol.L();
        let mut x = z.to_vec();
        for i in 0..d {
            for k in 0..i {
                x[i] -= l[(i, k)] * x[k];
            }
            x[i] /= l[(i, i)];
        }
        let log_det: f64 = (0..d).map(|i| 2.0 * l[(i, i)].ln()).sum();
        let dense = -0.5
            * (d as f64 * (2.0 * std::f64::consts::PI).ln()
                + log_det
                + x.iter().map(|v| v * v).sum::<f64>());
        assert!((q.log_q(&z) - dense).abs() < 1e-10);
    }

    /// Draws have the covariance Σ and log q from `sample` equals `log_q` at the draw.
    #[test]
    fn draws_match_covariance_and_density() {
        let d = 4;
        let mut h = InverseHessian::new(d, 6);
        h.push(vec![0.5, 0.1, 0.0, -0.2], vec![1.0, 0.3, 0.1, -0.5]);
        h.push(vec![-0.1, 0.4, 0.2, 0.0], vec![-0.2, 1.1, 0.5, 0.1]);
        let q = h.gaussian(&[1.0; 4], &[0.0; 4]).unwrap();
        let sigma = q.covariance();
        let mut rng = stream(3, 1);
        let n = 200_000;
        let mut acc = vec![0.0; d * d];
        for _ in 0..n {
            let (z, lq) = q.sample(&mut rng);
            assert!((lq - q.log_q(&z)).abs() < 1e-9);
            for i in 0..d {
                for j in 0..d {
                    acc[i * d + j] += (z[i] - 1.0) * (z[j] - 1.0) / n as f64;
                }
            }
        }
        for i in 0..d * d {
            let tol = 0.02 * (sigma[(i / d) * d + i / d] * sigma[(i % d) * d + i % d]).sqrt();
            assert!(
                (acc[i] - sigma[i]).abs() < tol,
                "{i}: {} vs {}",
                acc[i],
                sigma[i]
            );
        }
    }
}
