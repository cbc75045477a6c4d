//! Refinement of a full-covariance Gaussian q after the exit rule: Newton steps of the ELBO in
//! the mean and relaxed fixed-point steps of the precision, on one fixed set of antithetic draws
//! ([X], a design decision of bayesc; the identities are standard: at an optimum of the
//! full-covariance ELBO E_q[∇ log p] = 0 and Σ⁻¹ = E_q[−∇² log p], Opper & Archambeau 2009,
//! eqs. 9–10; `specs/survey_vi.md` §1).
//!
//! Why: the full-covariance methods (QBVI, MGVB, EMGVB, NGVI, VON) return the average of their
//! last iterates, and the refinement of [`super::refine`] moved only their mean, at their own
//! covariance, from fresh draws per step. On eight schools (d = 10, seeds 1–12 and the default)
//! fits that said "converged" were up to 0.23 sds of the full-covariance ELBO optimum from its
//! mean (benches/eight_schools_fullcov_optimum.py), always in log tau, where the bar is
//! 0.15: their sd of log tau was 0.88–0.95 of the optimum's, and the optimum in μ *at that
//! covariance* is itself 0.15 sds off (QBVI seed 8, 200 000 draws), while fresh-draw steps
//! left another 0.07 of noise (measured). Refining the precision with the mean, on fresh draws
//! per step, swung the sd of log tau between 0.87 and 1.07 and the mean up to 0.6 sds (the
//! step's noise at 200–1000 draws, where log p is far from quadratic in log tau); on one fixed
//! set of 1000 antithetic draws the iteration is a deterministic map that converges to the
//! optimum of the sample-average ELBO, within 0.03 sds of the exact optimum in the mean and
//! 0.97–1.07 in the sds after 8–10 steps (5 draw sets, measured in a numpy prototype).
//!
//! The precision's step is relaxed, P ← L((1 − ω)I + ωÂ)Lᵀ with ω = [`PRECISION_RELAX`]: in
//! log tau the fixed-point map P ← E_q[−∇² log p] has a slope near −1 (the plain iteration, ω =
//! 1, swung and diverged in the prototype; ω = 0.7 oscillated; ω = 0.35–0.5 converged).
//!
//! Errors: none; where a step cannot be estimated, or would move the mean by more than
//! [`super::refine::REFINE_MAX`] or a marginal sd by more than [`super::refine::SD_STEP_MAX`],
//! the walk stops there and the fit is reported as not settled if a step had been taken.

use super::refine::{REFINE_MAX, SD_STEP_MAX};
use super::stationarity::{NEWTON_GAIN_NATS, Whitening, gradient_pairs, newton_step_in};
use crate::inference::rng::stream;
use crate::inference::vi::{Factor, GaussianFit};
use rand::RngExt;
use rand_distr::StandardNormal;

/// Antithetic pairs of draws (ε and −ε; 2 × this many full-data gradients per step) of the
/// fixed set the walk's steps share ([X]): with 500 pairs the optimum of the sample-average
/// ELBO on eight schools was within 0.015 sds of the exact one in the means and 5 % in the sds
/// (8 draw sets of 1000 draws, benches/eight_schools_fullcov_optimum.py --draws 1000).
pub const FULL_REFINE_PAIRS: usize = 500;

/// At most this many steps ([X]): on eight schools the coupled iteration of mean and precision
/// contracts by about 0.75 per step in log tau, from 0.2 sds to below 0.03 in 8–10 steps
/// (prototype, 5 draw sets); a near-quadratic log p (labour) settles in 2–3.
pub const FULL_REFINE_STEPS_MAX: usize = 14;

/// The relaxation ω of the precision's fixed-point step (module docs) ([X]).
pub const PRECISION_RELAX: f64 = 0.5;

/// The walk has settled when its last step moved no coordinate of the mean by more than this
/// many curvature sds ([X]). The iteration is deterministic on its fixed draws, so its steps
/// shrink geometrically; at the contraction of about 0.75 per step seen on eight schools a
/// last step of 0.02 leaves about 0.06 sds to go.
pub const FULL_SETTLED: f64 = 0.02;

/// And changed q's sd along no direction by more than this fraction ([X]; the precision's
/// whitened error halves per step at ω = ½ where log p is near-quadratic, so about as much is
/// left to go; on a 2-D Gaussian with ρ = 0.9 a bar on the marginal sds alone settled with
/// the correlation at 0.886, measured).
pub const FULL_SD_SETTLED: f64 = 0.01;

/// The random stream (of the seed) of the walk's fixed draws.
const FULL_STREAM: u64 = 30;

/// What [`walk_full`] did.
#[derive(Clone, Debug, PartialEq)]
pub struct FullWalk {
    /// Steps taken (each moves the mean and the precision).
    pub steps: usize,
    /// The mean before the first step.
    pub start: Vec<f64>,
    /// The curvature's marginal sds of the first step (the unit of moves).
    pub unit: Option<Vec<f64>>,
    /// The longest move of a coordinate of the mean in the last step estimated (curvature
    /// sds), and that coordinate (0-based).
    pub last: (usize, f64),
    /// The largest change |σ_new/σ_old − 1| of a marginal sd in the last step, and its
    /// coordinate (0-based).
    pub sd_last: (usize, f64),
    /// The largest change of q's sd along any direction in the last step (the factor's
    /// distance from 1 of the whitened precision step's eigenvalues to the −½ power), which
    /// [`FULL_SD_SETTLED`] bounds: a marginal sd can stay while a correlation moves.
    pub spread_last: f64,
    /// A step after the first was estimated but not taken (too long, worth too much, or
    /// changing an sd by more than [`SD_STEP_MAX`]).
    pub refused: bool,
    /// Whether two steps in a row were under [`FULL_SETTLED`] and [`FULL_SD_SETTLED`].
    pub settled: bool,
}

/// The marginal sds of a full precision P (d × d row-major), or `None` where it is not
/// positive definite.
fn marginal_sd(work: &GaussianFit) -> Vec<f64> {
    work.variances().iter().map(|v| v.sqrt()).collect()
}

/// The mean's Newton step `delta` from `mean` (length d each), relaxed per coordinate by a
/// secant estimate of the iteration's slope ([X]; as `refine::relax` does for the sds): with
/// the previous iterate's (x', δ') in `history`, m_j = (δ_j − δ'_j)/(x_j − x'_j) and the step
/// is ω_j δ_j with ω_j = −1/m_j within [[`MEAN_RELAX_MIN`], 1] (1 without history, where
/// x_j = x'_j, or where m_j ≥ 0). `history` becomes this iterate's (x, δ).
///
/// Why: on eight schools the Newton step of log tau overshot, its sign alternating with a
/// ratio of about −0.8 per step (the ELBO's curvature in μ_{log tau} grows away from the
/// optimum), so the walk swung about the optimum for 14 steps without settling (QBVI, NGVI
/// seed 4, measured); the secant slope m ≈ −1.8 gives ω ≈ 0.56, Aitken's step to the middle.
fn relax_mean(mean: &[f64], delta: &[f64], history: &mut Option<(Vec<f64>, Vec<f64>)>) -> Vec<f64> {
    let taken = (0..mean.len())
        .map(|j| {
            let omega = match history {
                Some((xp, dp)) if (mean[j] - xp[j]).abs() > 1e-12 && delta[j] != 0.0 => {
                    let m = (delta[j] - dp[j]) / (mean[j] - xp[j]);
                    if m < 0.0 {
                        (-1.0 / m).clamp(MEAN_RELAX_MIN, 1.0)
                    } else {
                        1.0
                    }
                }
                _ => 1.0,
            };
            omega * delta[j]
        })
        .collect();
    *history = Some((mean.to_vec(), delta.to_vec()));
    taken
}

/// The smallest fraction of its Newton step a coordinate of the mean takes ([`relax_mean`]).
pub const MEAN_RELAX_MIN: f64 = 1.0 / 3.0;

/// Up to [`FULL_REFINE_STEPS_MAX`] steps from the full-covariance `fit`: each estimates the
/// Newton step of the ELBO in μ and the whitened curvature Â ([`newton_step_in`], whitened by
/// the current precision's factor L) from the full-data gradients of `density` at the same
/// [`FULL_REFINE_PAIRS`] antithetic pairs ζ = μ + L⁻ᵀ(±ε) (ε from stream [`FULL_STREAM`] of
/// `seed`), moves μ by the step and sets P ← L((1 − ω)I + ωÂ)Lᵀ (ω = [`PRECISION_RELAX`]);
/// it stops when settled ([`FULL_SETTLED`], [`FULL_SD_SETTLED`]). A step is not taken when its
/// split-half gain exceeds [`NEWTON_GAIN_NATS`], it moves a coordinate by more than
/// [`REFINE_MAX`] curvature sds, or it would change a marginal sd by more than a factor
/// [`SD_STEP_MAX`]. Returns the refined q and the record, or `None` for a mean-field `fit`, or
/// when no step could be estimated.
pub fn walk_full(
    density: &(dyn crate::inference::LogDensity + Sync),
    seed: u64,
    fit: &GaussianFit,
) -> Option<(GaussianFit, FullWalk)> {
    if !matches!(fit.factor, Factor::Full(_)) {
        return None;
    }
    let d = fit.dim();
    let mut rng = stream(seed, FULL_STREAM);
    let half: Vec<Vec<f64>> = (0..FULL_REFINE_PAIRS)
        .map(|_| (0..d).map(|_| rng.sample(StandardNormal)).collect())
        .collect();
    let eps: Vec<Vec<f64>> = half
        .iter()
        .cloned()
        .chain(half.iter().map(|e| e.iter().map(|x| -x).collect()))
        .collect();
    let mut work = fit.clone();
    let mut record = FullWalk {
        steps: 0,
        start: fit.mean.clone(),
        unit: None,
        last: (0, 0.0),
        sd_last: (0, 0.0),
        spread_last: 0.0,
        refused: false,
        settled: false,
    };
    let mut estimated = false;
    let mut history: Option<(Vec<f64>, Vec<f64>)> = None;
    let mut quiet = 0;
    for _ in 0..FULL_REFINE_STEPS_MAX {
        let Factor::Full(l) = &work.factor else {
            return None;
        };
        let l = l.clone();
        let whitening = Whitening::Full(&l);
        let draws: Vec<Vec<f64>> = eps
            .iter()
            .map(|e| {
                let v = whitening.step(e);
                (0..d).map(|j| work.mean[j] + v[j]).collect()
            })
            .collect();
        let pairs = gradient_pairs(density, &draws);
        let step = (2 * pairs.len() >= draws.len())
            .then(|| newton_step_in(&pairs, &work.mean, &whitening))
            .flatten();
        let Some(step) = step else {
            record.refused = record.steps > 0;
            break;
        };
        estimated = true;
        let moves: Vec<f64> = (0..d)
            .map(|j| (step.delta[j] / step.curvature_sd[j]).abs())
            .collect();
        let (jmax, longest) = moves
            .iter()
            .copied()
            .enumerate()
            .fold((0, 0.0), |b, (j, x)| if x > b.1 { (j, x) } else { b });
        // the relaxed precision: P ← L((1 − ω)I + ωÂ)Lᵀ
        let a = &step.whitened_curvature;
        let m: Vec<f64> = (0..d * d)
            .map(|ik| {
                let (i, k) = (ik / d, ik % d);
                PRECISION_RELAX * a[ik] + if i == k { 1.0 - PRECISION_RELAX } else { 0.0 }
            })
            .collect();
        let p: Vec<f64> = (0..d * d)
            .map(|ik| {
                let (i, k) = (ik / d, ik % d);
                // (L M Lᵀ)_ik = Σ_a Σ_b L_ia M_ab L_kb, L lower
                (0..=i)
                    .map(|x| {
                        l[i * d + x] * (0..=k).map(|y| m[x * d + y] * l[k * d + y]).sum::<f64>()
                    })
                    .sum()
            })
            .collect();
        let old_sd = marginal_sd(&work);
        let mut next = work.clone();
        let set = next.set_full_precision(&p);
        let new_sd = marginal_sd(&next);
        let (js, ratio) = new_sd
            .iter()
            .zip(&old_sd)
            .map(|(a, b)| (a / b).max(b / a))
            .enumerate()
            .fold((0, 1.0), |b, (j, x)| if x > b.1 { (j, x) } else { b });
        // the largest change of q's sd along any direction: the whitened precision's step
        // M = (1 − ω)I + ωÂ has eigenvalues 1 + ω(λ_k − 1), an sd factor of their −½ power
        let spread = {
            let mm = faer::Mat::from_fn(d, d, |i, k| m[i * d + k]);
            match mm.self_adjoint_eigenvalues(faer::Side::Lower) {
                Ok(ev) => ev
                    .iter()
                    .map(|&e| {
                        if e > 0.0 {
                            let f = e.sqrt();
                            f.max(1.0 / f) - 1.0
                        } else {
                            f64::INFINITY
                        }
                    })
                    .fold(0.0f64, f64::max),
                Err(_) => f64::INFINITY,
            }
        };
        if !(set && step.gain <= NEWTON_GAIN_NATS && longest <= REFINE_MAX && ratio <= SD_STEP_MAX)
        {
            record.refused = record.steps > 0;
            record.last = (jmax, longest);
            break;
        }
        let taken = relax_mean(&work.mean, &step.delta, &mut history);
        for j in 0..d {
            next.mean[j] += taken[j];
        }
        record.unit.get_or_insert(step.curvature_sd);
        record.last = (jmax, longest);
        record.sd_last = (js, ratio - 1.0);
        record.spread_last = spread;
        record.steps += 1;
        work = next;
        // settled: two steps in a row under both bars (the mean's and the precision's steps
        // alternate in size where they are coupled, log tau on eight schools)
        if longest <= FULL_SETTLED && spread <= FULL_SD_SETTLED {
            quiet += 1;
        } else {
            quiet = 0;
        }
        if quiet >= 2 {
            record.settled = true;
            break;
        }
    }
    estimated.then_some((work, record))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inference::vi::{Covariance, RunRecord};
    use crate::inference::{DensityError, LogDensity};

    /// log N(ζ; (1, −2), R) with R the correlation matrix of ρ = 0.9, scaled by sds (2, 0.5).
    struct Correlated;

    const RHO: f64 = 0.9;
    const SD: [f64; 2] = [2.0, 0.5];

    impl LogDensity for Correlated {
        fn dim(&self) -> usize {
            2
        }
        fn log_density(&self, z: &[f64]) -> Result<f64, DensityError> {
            let (a, b) = ((z[0] - 1.0) / SD[0], (z[1] + 2.0) / SD[1]);
            Ok(-0.5 * (a * a - 2.0 * RHO * a * b + b * b) / (1.0 - RHO * RHO))
        }
        fn log_density_grad(&self, z: &[f64], g: &mut [f64]) -> Result<f64, DensityError> {
            let (a, b) = ((z[0] - 1.0) / SD[0], (z[1] + 2.0) / SD[1]);
            g[0] = -(a - RHO * b) / (1.0 - RHO * RHO) / SD[0];
            g[1] = -(b - RHO * a) / (1.0 - RHO * RHO) / SD[1];
            self.log_density(z)
        }
    }

    /// A full-covariance q with mean `mean` and covariance `cov` (2 × 2 row-major).
    fn full_q(mean: [f64; 2], cov: [f64; 4]) -> GaussianFit {
        let det = cov[0] * cov[3] - cov[1] * cov[2];
        let p = [cov[3] / det, -cov[1] / det, -cov[2] / det, cov[0] / det];
        let mut fit = GaussianFit::diagonal(mean.to_vec(), vec![1.0, 1.0], RunRecord::empty());
        fit.family = Covariance::Full;
        fit.covariance = vec![1.0, 0.0, 0.0, 1.0];
        fit.factor = Factor::Full(vec![1.0, 0.0, 0.0, 1.0]);
        assert!(fit.set_full_precision(&p));
        fit
    }

    #[test]
    fn a_gaussian_target_is_reached_in_mean_and_covariance() {
        // q uncorrelated, sds 1.3 times too wide and the mean 0.5 sds off: on a quadratic
        // target Â is exact, so the precision halves its whitened error each step and the mean
        // lands at once; the walk settles with the posterior's covariance to 2 %
        let mut fit = full_q(
            [1.0 + 0.5 * SD[0], -2.0],
            [(1.3 * SD[0]).powi(2), 0.0, 0.0, (1.3 * SD[1]).powi(2)],
        );
        let (q, w) = walk_full(&Correlated, 1, &fit).unwrap();
        assert!(w.settled && !w.refused, "{w:?}");
        assert!(
            (q.mean[0] - 1.0).abs() < 1e-6 && (q.mean[1] + 2.0).abs() < 1e-6,
            "{:?}",
            q.mean
        );
        let c = &q.covariance;
        assert!((c[0].sqrt() / SD[0] - 1.0).abs() < 0.02, "{c:?}");
        assert!((c[3].sqrt() / SD[1] - 1.0).abs() < 0.02, "{c:?}");
        let rho = c[1] / (c[0] * c[3]).sqrt();
        assert!((rho - RHO).abs() < 0.01, "{rho}");
        // a mean-field q is not walked
        fit.factor = Factor::Diagonal(vec![1.0, 1.0]);
        assert!(walk_full(&Correlated, 1, &fit).is_none());
    }
}
