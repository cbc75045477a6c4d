//! Newton refinement of a Gaussian q's mean after the exit rule has fired ([X], a design
//! decision of bayesc; the step is [`super::stationarity::newton_step_in`]'s).
//!
//! Why: a stochastic method returns the average of its last iterates (`inference::vi::exit`,
//! `inference::minibatch`), which still carries their noise. On labour (d = 8, seeds 1–12) the
//! mean-field fits that printed "converged" were up to 0.30 NUTS posterior sds from the NUTS
//! means (full-batch BBB 0.26, VON 0.30, minibatch QBVI at M = 50–100 0.29), while the exact
//! mean-field optimum is 0.06 from them. The stationarity check already estimates the Newton
//! step of the ELBO in μ from full-data gradients at draws of q; taking it moves the mean to the
//! optimum in μ at q's own covariance (exactly for a Gaussian target, whatever the draws), and
//! costs [`REFINE_DRAWS`] gradients per step. The covariance is kept: its noise costs the means
//! little. The check of [`super::stationarity::phrase`] then runs on fresh draws at the
//! refined mean.
//!
//! Errors: none; where the step cannot be estimated, or is not the short step of a fit near its
//! optimum, the mean is kept and the check judges it.

use super::stationarity::{
    NEWTON_GAIN_NATS, NEWTON_MAX_D, Whitening, gradient_pairs, newton_step_in,
};
use crate::inference::rng::stream;
use crate::inference::vi::{Factor, GaussianFit};

/// Draws of q (full-data gradients) per Newton step of [`refine_mean`] ([X]). On labour 200 and
/// 1000 draws gave the same means to 0.01 posterior sds (measured, 348 fits): where log p is
/// near-quadratic the regression estimate of the step is near-exact whatever the draws.
pub const REFINE_DRAWS: usize = 200;

/// At most this many Newton steps ([X]). One step (the prototype, same draws) left minibatch
/// QBVI on labour up to 0.165 NUTS sds from NUTS (M = 100, seeds 1–12) and two 0.145: where
/// log p is not quadratic the first step's curvature is that at the old mean (measured).
pub const REFINE_STEPS: usize = 2;

/// A step that would move a coordinate by more than this many sds of the curvature's Gaussian
/// is not taken ([X]): the fit is not near its optimum, and the check reports it. On labour
/// (444 fits) the refined fits moved by 0.00–0.49 curvature sds where they were then called
/// converged, and up to 0.96 at IVON with M = 5, which the check of the ELBO's fall
/// (`fit::worsened_phrase`) reports not converged either way (measured).
pub const REFINE_MAX: f64 = 1.0;

/// A step that would move no coordinate by more than this (curvature sds) is not taken, and the
/// steps stop ([X]): the size of the estimate's own error on labour, where 200 and 1000 draws
/// agreed to 0.01.
pub const REFINE_TOL: f64 = 0.02;

/// The refinement has settled only when its last step moved no coordinate by more than this
/// (curvature sds) and no step was refused after one was taken ([X]). Near an optimum the
/// Newton iteration converges at once, so its second step is short; a fit still far along a
/// ridge of correlated coordinates, where the mean-field estimate of the curvature is too
/// large, is moved by a fraction of its distance at each step and stays far. Fresh-user
/// testing found minibatch IVON and QBVI from `--random-init` on labour said "converged" after
/// the refinement at 0.27–0.72 NUTS sds from NUTS (the check, re-run after the steps,
/// estimated them below its bar of 0.25). See [`Refinement::settled`].
pub const REFINE_SETTLED: f64 = 0.1;

/// The first random stream (of the seed) of the draws of [`refine_mean`]; step k uses stream
/// `REFINE_STREAM + k`.
const REFINE_STREAM: u64 = 10;

/// What [`refine_mean`] did.
#[derive(Clone, Debug, PartialEq)]
pub struct Refinement {
    /// Newton steps taken (≥ 1).
    pub steps: usize,
    /// The coordinate (0-based) the steps moved furthest.
    pub coordinate: usize,
    /// That move, in sds of the curvature's Gaussian of the first step (about the posterior's).
    pub moved: f64,
    /// The longest move of a coordinate in the last step taken (curvature sds of that step).
    pub last: f64,
    /// The coordinate (0-based) of that move.
    pub last_coordinate: usize,
    /// A step after the first was estimated but not taken (too long or worth too much).
    pub refused: bool,
}

impl Refinement {
    /// Whether the Newton iteration settled: its last step was under [`REFINE_SETTLED`] and no
    /// later step was refused. A fit whose refinement did not settle is not at the optimum.
    pub fn settled(&self) -> bool {
        self.last <= REFINE_SETTLED && !self.refused
    }
}

/// Moves `fit.mean` by up to [`REFINE_STEPS`] Newton steps of the ELBO in μ (q's covariance
/// kept), each from the full-data gradients of `density` at [`REFINE_DRAWS`] fresh draws of q
/// (random stream [`REFINE_STREAM`] + k of `seed`), for d ≤ [`NEWTON_MAX_D`]. A step whose
/// split-half ELBO gain exceeds [`NEWTON_GAIN_NATS`] or that moves a coordinate by more than
/// [`REFINE_MAX`] curvature sds is not taken. `None` when no step was taken.
pub(super) fn refine_mean(
    density: &(dyn crate::inference::LogDensity + Sync),
    seed: u64,
    fit: &mut GaussianFit,
) -> Option<Refinement> {
    let d = fit.dim();
    if d > NEWTON_MAX_D || d == 0 {
        return None;
    }
    let sd: Vec<f64> = fit.variances().iter().map(|v| v.sqrt()).collect();
    let factor = fit.factor.clone();
    let whitening = match &factor {
        Factor::Full(l) => Whitening::Full(l),
        Factor::Diagonal(_) => Whitening::Diagonal(&sd),
    };
    let start = fit.mean.clone();
    let mut unit: Option<Vec<f64>> = None;
    let mut steps = 0;
    let (mut last, mut last_coordinate, mut refused) = (0.0, 0, false);
    for k in 0..REFINE_STEPS {
        let draws = fit.sample(REFINE_DRAWS, &mut stream(seed, REFINE_STREAM + k as u64));
        let pairs = gradient_pairs(density, &draws);
        if 2 * pairs.len() < draws.len() {
            break;
        }
        let Some(step) = newton_step_in(&pairs, &fit.mean, &whitening) else {
            break;
        };
        let longest = (0..d)
            .map(|j| (step.delta[j] / step.curvature_sd[j]).abs())
            .fold(0.0f64, f64::max);
        if !(step.gain <= NEWTON_GAIN_NATS && longest <= REFINE_MAX) {
            refused = steps > 0;
            break;
        }
        last = longest;
        // a step within the estimate's own noise is not taken: the mean is already there
        // (full-covariance QBVI on labour, seed 1: 0.017, which moved its k̂ 0.42 → 0.49)
        if longest < REFINE_TOL {
            break;
        }
        last_coordinate = (0..d)
            .max_by(|&a, &b| {
                (step.delta[a] / step.curvature_sd[a])
                    .abs()
                    .total_cmp(&(step.delta[b] / step.curvature_sd[b]).abs())
            })
            .unwrap_or(0);
        for j in 0..d {
            fit.mean[j] += step.delta[j];
        }
        unit.get_or_insert(step.curvature_sd);
        steps += 1;
    }
    let unit = unit?;
    let (coordinate, moved) = (0..d)
        .map(|j| (j, ((fit.mean[j] - start[j]) / unit[j]).abs()))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    Some(Refinement {
        steps,
        coordinate,
        moved,
        last,
        last_coordinate,
        refused,
    })
}
