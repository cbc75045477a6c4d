//! Is a fitted Gaussian q at a stationary point of the ELBO in its mean? A check after the
//! exit rule has fired ([X], a design decision of bayesc; the identities are standard).
//!
//! For q = N(μ, Σ) the gradient of the ELBO in μ is E_q[∇ log p(ζ)] (Bonnet's theorem;
//! Opper & Archambeau 2009, eq. 9), which vanishes at every optimum of the ELBO, whatever
//! q's family (full or mean-field). By Stein's lemma E_q[(ζ_j − μ_j) ∂_j log p] =
//! Σ_jj E_q[∂²_jj log p] for the mean-field family and for the diagonal of the full one, so
//! c_j = E_q[(ζ_j − μ_j) ∂_j log p] estimates −Σ_jj h_j, with h_j = E_q[−∂²_jj log p] the
//! curvature of the ELBO along μ_j. One Newton step of μ_j alone would move it by ḡ_j / h_j =
//! −ḡ_j Σ_jj / c_j, which is `sds` × σ_j. At an optimum of a Gaussian target c_j = −1 and
//! `sds` = σ_j ḡ_j.
//!
//! Why: the exit rule stops when the smoothed ELBO stops improving, which a stochastic method
//! also does when it has stalled far from the optimum. On labour (d = 8) from `--random-init`,
//! NG-BBVI stopped after 2000 iterations at an ELBO of −1918 (the optimum is −471) with its
//! variances collapsed and its mean barely moving, and NGVI after 84 iterations at −11070; both
//! printed "converged". The check costs [`STATIONARITY_DRAWS`] gradients.
//!
//! Minibatch fits are checked against the full data as well, up to a size (see [`phrase`]).
//! Gaussian fits with d ≤ [`NEWTON_MAX_D`] are checked after [`super::refine::refine_mean`] has
//! taken the Newton step this check estimates, at the tighter [`REFINED_OFFSET_MAX`].
//!
//! Errors: none. Draws where the gradient is not finite are left out; with fewer than half the
//! draws left the check passes (the PSIS k̂ and collapse checks report that q).

pub use super::whitening::Whitening;
use crate::inference::LogDensity;
use crate::inference::rng::StreamRng;
use rayon::prelude::*;

/// Draws of q whose gradients the check averages.
pub const STATIONARITY_DRAWS: usize = 200;

/// The random stream (of the seed) of the draws of the diagonal check of a mean-field fit with
/// d > [`NEWTON_MAX_D`] ([`super::diagonal_step`]); unused by the fits and the other checks.
const DIAGONAL_STREAM: u64 = 9;

/// A Newton step of the mean longer than this many sds of q, in the coordinate where it is
/// longest, means q was not at an optimum ([X]). From the Laplace start on labour, over seeds
/// 1–5, the stochastic methods (IVON, BBB, BBVI, NG-BBVI, VOGN) end at most 1.35 sds away and
/// the deterministic-draw ones below 0.1 (measured, 200 draws): the stochastic steps leave the
/// averaged iterate about one mean-field sd (about 0.1 posterior sd on labour, whose
/// coordinates are correlated) from the optimum. The stalled random-start fits above are 12 to
/// 10⁴ sds away.
pub const STATIONARY_SDS: f64 = 2.0;

/// And the mean gradient must differ from zero by more than this many of its Monte Carlo
/// standard errors, so that noise alone is not reported (with d = 5000 coordinates a |t| above
/// 4 has a chance of 0.3 under stationarity; both bars must be passed).
pub const STATIONARY_T: f64 = 4.0;

/// A variance of q more than this factor away from the one its curvature asks for (−c_j
/// outside [1/4, 4], i.e. σ_j off by more than a factor 2 either way) means q was not at an
/// optimum of the ELBO ([X]). Only for the methods whose fixed point is the ELBO's: VOGN and
/// Vadam use the empirical Fisher and variational Laplace the curvature at the mean
/// (`specs/survey_vi.md` §11, §12, §14), whose variances differ from it by design. From the
/// Laplace start on labour the ELBO methods end with −c_j within [0.8, 1.25] (measured).
pub const STATIONARY_SCALE: f64 = 4.0;

/// A joint Newton step of the mean that would raise the ELBO by more than this many nats means
/// q was not at an optimum ([X]). From the Laplace start on labour (seeds 1–5, full batch and
/// M = 50) the stochastic methods' gains are at most 1.12 nats (BBB), the deterministic-draw
/// ones below 0.1; Vadam at M = 1 from a random start leaves 4.2 nats and at seeds 2–5 from
/// the mode 4.0 to 223.
pub const NEWTON_GAIN_NATS: f64 = 2.0;

/// The joint step is estimated for d up to this (the [`STATIONARITY_DRAWS`] draws estimate its
/// d × d curvature; at 4 draws a coordinate the estimate's smallest eigenvalues, which the
/// step divides by, are still away from its floor).
pub const NEWTON_MAX_D: usize = 50;

/// Which of the conditions of [`off_optimum_in`] apply beyond the one-coordinate mean step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Conditions {
    /// The variance condition: for the methods whose fixed point is the ELBO's.
    pub scale: bool,
    /// The joint Newton step, for d ≤ [`NEWTON_MAX_D`] (whitened by q's sds, or by its
    /// precision's factor for a full covariance: [`Whitening`]).
    pub joint: bool,
    /// With `joint`: the largest distance of q's mean from the ELBO's optimum, in sds of the
    /// curvature's Gaussian ([`NewtonStep::offset`]), that passes: [`REFINED_OFFSET_MAX`] after
    /// the refinement of the mean, else [`MEAN_OFFSET_MAX`] or [`MEAN_OFFSET_MAX_OTHER`].
    pub offset_max: f64,
}

/// The largest distance of a mean-field q's mean from the ELBO's optimum that passes the check,
/// in sds of the curvature's Gaussian (the posterior's sds where it is Gaussian;
/// [`NewtonStep::offset`]), for the methods whose fixed point is the ELBO's ([X]).
///
/// Why: a stochastic fit whose returned mean (the average of its last iterates) is off along a
/// direction the data pin down weakly loses almost nothing in the ELBO (½ δ² nats at δ
/// posterior sds: 0.1 nats at 0.44), so neither [`NEWTON_GAIN_NATS`] nor the one-coordinate
/// step sees it. On labour (8 methods × batch sizes full, 5, 16, 32, 200, 376 × seeds 1–3)
/// the estimate followed the distance from the NUTS means to within about 0.07 (the mean-field
/// optimum is itself 0.07 from them), and 4 fits that printed "converged" at 0.40–0.50 NUTS sds
/// (IVON at M = 16, VON at M = 5, diagonal QBVI at M = 200, variational Laplace and BBB at
/// M = 5) were estimated at 0.36–0.54 (measured). A quarter of a posterior sd is the Monte
/// Carlo error of 16 independent draws. Now only for means not refined (QNVB; the
/// per-coordinate bar of [`super::diagonal_step`]): with it, on labour (444 fits), 136 fits said
/// "converged" 0.15–0.30 NUTS sds off; [`REFINED_OFFSET_MAX`] after the refinement, none.
pub const MEAN_OFFSET_MAX: f64 = 0.25;

/// [`MEAN_OFFSET_MAX`] for VOGN, Vadam and variational Laplace, whose variances are not the
/// ELBO's by design (`specs/survey_vi.md` §11, §12, §14) ([X]). The step is to the ELBO's
/// optimum in μ at q's own σ, which on a non-Gaussian target moves with σ: Vadam's σ on labour
/// is about 1.6 times the mean-field optimum's, and at M = 5 and 10 (seeds 1–5) its offset was
/// estimated at 0.22–0.32 where the NUTS means were 0.12–0.17 sds away (measured). Refined
/// fits of these methods are held to [`REFINED_OFFSET_MAX`] instead: the refinement moves
/// their mean to the ELBO's optimum in μ at the ELBO's fixed-point sds
/// ([`super::refine::Sds::Curvature`]), and the check then measures from there.
pub const MEAN_OFFSET_MAX_OTHER: f64 = 0.4;

/// [`Conditions::offset_max`] for a fit whose mean went through the Newton refinement of
/// [`super::refine::refine_mean`] (the Gaussian fits with d ≤ [`NEWTON_MAX_D`], every method
/// but MC dropout), VOGN, Vadam and vlaplace included: the refinement puts their mean at the
/// ELBO's optimum in μ at the sds it is then checked at (q's, or for these three the ELBO's
/// fixed-point sds, [`super::refine::Sds`]), the point this estimate measures from ([X]). On labour
/// (d = 8; 15 methods and batch sizes, seeds 1–12, 444 fits) every refined fit was estimated
/// below 0.05 on the check's fresh draws, and the converged ones were within 0.145 NUTS sds of
/// NUTS. A tighter bar of 0.1 flagged 3–4 of 12 seeds of every method on eight schools
/// (d = 10; IVON, BBB, NG-BBVI, BBVI, QBVI, VON), always in tau and at the same seeds (2, 5, 9):
/// the noise of the 200-draw estimate where log p is far from quadratic, up to 0.24 (measured).
pub const REFINED_OFFSET_MAX: f64 = 0.25;
/// How q's end point fails the stationarity conditions of the module docs.
#[derive(Clone, Debug, PartialEq)]
pub enum OffOptimum {
    /// The mean: the coordinate with the longest Newton step of μ.
    Mean {
        /// The unconstrained coordinate (0-based).
        coordinate: usize,
        /// The Newton step of μ along it, in sds of q: ḡ_j σ_j / (−c_j) (module docs).
        sds: f64,
        /// ḡ_j over its Monte Carlo standard error.
        t: f64,
    },
    /// The mean, jointly (mean-field q, d ≤ [`NEWTON_MAX_D`]): one Newton step of μ in all
    /// coordinates would raise the ELBO by more than [`NEWTON_GAIN_NATS`] ([`newton_step_in`]).
    /// Catches a mean off along a ridge of correlated coordinates, where each coordinate's own
    /// step is short: Vadam on labour from a random start ended with alpha at 0.94 (NUTS: 3.21,
    /// sd 0.65) with every one-coordinate step below 2 sds of q and a joint gain of 4.2 nats.
    Joint {
        /// The coordinate the joint step moves furthest (0-based).
        coordinate: usize,
        /// That move, in sds of q.
        sds: f64,
        /// The ELBO gain of the step, in nats.
        gain: f64,
    },
    /// A minibatch fit whose epoch-averaged means spread by more than [`NOISY_MAX_SPREAD`] sds of
    /// q ([`widest_spread`]), though its gradient checks passed.
    Noisy {
        /// The unconstrained coordinate (0-based) of the widest spread.
        coordinate: usize,
        /// The sd of its last epoch-averaged means over its sd under q.
        spread: f64,
    },
    /// The mean, jointly (mean-field q, d ≤ [`NEWTON_MAX_D`]): the Newton step of μ moves a
    /// coordinate by more than [`Conditions::offset_max`] sds of the curvature's Gaussian
    /// ([`NewtonStep::offset`]), though it raises the ELBO by little: the mean is off along a
    /// direction the data pin down weakly.
    Offset {
        /// The coordinate moved furthest (0-based).
        coordinate: usize,
        /// That move, in sds of the curvature's Gaussian (about the posterior's).
        sds: f64,
    },
    /// The mean of a mean-field q with d > [`NEWTON_MAX_D`]: the root mean square of the
    /// per-coordinate Newton steps exceeds [`super::diagonal_step::DIAGONAL_RMS_MAX`] (or
    /// [`super::diagonal_step::DIAGONAL_RMS_MAX_OTHER`]) ([`super::diagonal_step`]).
    Diagonal {
        /// The coordinate with the longest step at 4 Monte Carlo standard errors (0-based).
        coordinate: usize,
        /// That step, in sds of the curvature's conditional Gaussian (signed).
        sds: f64,
        /// The RMS step over the d coordinates, the Monte Carlo noise removed.
        rms: f64,
        /// The fraction of coordinates whose step exceeds [`MEAN_OFFSET_MAX`] and 4 standard
        /// errors.
        beyond: f64,
        /// The gradients of the full-data log density the check evaluated.
        gradients: usize,
    },
    /// The variance: the coordinate whose σ_j² h_j = −c_j is furthest from 1.
    Scale {
        /// The unconstrained coordinate (0-based).
        coordinate: usize,
        /// −c_j: how many times the variance of q along it exceeds the inverse curvature
        /// (< 1: q too narrow; ≤ 0: the log density curves upwards there on average).
        ratio: f64,
    },
}

/// The draws of `draws` (S × d) where ∇log p is finite, each with its gradient (length d).
pub(super) fn gradient_pairs<'a>(
    density: &(dyn LogDensity + Sync),
    draws: &'a [Vec<f64>],
) -> Vec<(&'a Vec<f64>, Vec<f64>)> {
    draws
        .par_iter()
        .filter_map(|z| {
            let mut g = vec![0.0; z.len()];
            match density.log_density_grad(z, &mut g) {
                Ok(v) if v.is_finite() && g.iter().all(|x| x.is_finite()) => Some((z, g)),
                _ => None,
            }
        })
        .collect()
}

/// The check of the module docs on `draws` of q (S × d, from q with mean `mean` and marginal
/// sds `sd`, both length d): the coordinate whose Newton step of the mean exceeds
/// [`STATIONARY_SDS`] and [`STATIONARY_T`] by the most; else, with `when.joint`, a joint
/// Newton step worth more than [`NEWTON_GAIN_NATS`]; else, with `when.scale`, the coordinate
/// whose variance is off by more than [`STATIONARY_SCALE`] (and [`STATIONARY_T`] standard
/// errors); else, with `when.joint`, a joint step that moves a coordinate by more than
/// `when.offset_max` sds of the curvature's Gaussian ([`OffOptimum::Offset`]); `None` when q
/// is stationary (or too few gradients were finite); with the distance of the mean from the
/// ELBO's optimum (coordinate, [`NewtonStep::offset`]) whenever the joint step was estimated.
/// The joint step whitens by q's sds, or by `factor` (the lower Cholesky factor L of a
/// full-covariance q's precision, d × d row-major; [`Whitening::Full`]) when given.
pub fn off_optimum_in(
    density: &(dyn LogDensity + Sync),
    draws: &[Vec<f64>],
    mean: &[f64],
    sd: &[f64],
    factor: Option<&[f64]>,
    when: Conditions,
) -> (Option<OffOptimum>, Option<(usize, f64)>) {
    let check_scale = when.scale;
    let d = mean.len();
    let pairs = gradient_pairs(density, draws);
    let s = pairs.len();
    if 2 * s < draws.len() || s < 10 {
        return (None, None);
    }
    let n = s as f64;
    // (mean, standard error) of a per-draw statistic
    let moments = |f: &dyn Fn(&[f64], &[f64]) -> f64| {
        let v: Vec<f64> = pairs.iter().map(|(z, g)| f(z, g)).collect();
        let m = v.iter().sum::<f64>() / n;
        let var = v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0);
        (m, (var / n).sqrt())
    };
    let t_of = |x: f64, se: f64| {
        if se > 0.0 {
            (x / se).abs()
        } else {
            f64::INFINITY
        }
    };
    let (mut worst_mean, mut worst_scale): (Option<OffOptimum>, Option<(f64, OffOptimum)>) =
        (None, None);
    for j in 0..d {
        let (gbar, g_se) = moments(&|_, g| g[j]);
        let (c, c_se) = moments(&|z, g| (z[j] - mean[j]) * g[j]);
        // −c_j estimates σ_j² h_j; a small or non-negative estimate (a collapsed σ_j, or a
        // direction where log p curves upwards) is floored at a twentieth of its value at a
        // Gaussian optimum.
        let sds = (gbar * sd[j] / (-c).max(0.05)).abs();
        if sds > STATIONARY_SDS
            && t_of(gbar, g_se) > STATIONARY_T
            && worst_mean
                .as_ref()
                .is_none_or(|w| matches!(w, OffOptimum::Mean { sds: b, .. } if sds > *b))
        {
            worst_mean = Some(OffOptimum::Mean {
                coordinate: j,
                sds,
                t: t_of(gbar, g_se),
            });
        }
        let ratio = -c;
        let off = if ratio > 0.0 {
            ratio.ln().abs()
        } else {
            f64::INFINITY
        };
        if check_scale
            && off > STATIONARY_SCALE.ln()
            && t_of(c + 1.0, c_se) > STATIONARY_T
            && worst_scale.as_ref().is_none_or(|(b, _)| off > *b)
        {
            worst_scale = Some((
                off,
                OffOptimum::Scale {
                    coordinate: j,
                    ratio,
                },
            ));
        }
    }
    if worst_mean.is_some() {
        return (worst_mean, None);
    }
    // the joint step (small d): its gain, then its longest move in posterior sds
    let whitening = match factor {
        Some(l) => Whitening::Full(l),
        None => Whitening::Diagonal(sd),
    };
    let step = (when.joint && d <= NEWTON_MAX_D)
        .then(|| newton_step_in(&pairs, mean, &whitening))
        .flatten();
    let estimate = step.as_ref().and_then(|s| {
        (0..d)
            .map(|j| (j, s.offset[j].abs()))
            .max_by(|a, b| a.1.total_cmp(&b.1))
    });
    let (joint, offset) = match step {
        Some(NewtonStep {
            gain, step, offset, ..
        }) => {
            let longest = |v: &[f64]| {
                (0..d)
                    .map(|j| (j, v[j].abs()))
                    .max_by(|a, b| a.1.total_cmp(&b.1))
            };
            let joint =
                longest(&step)
                    .filter(|_| gain > NEWTON_GAIN_NATS)
                    .map(|(coordinate, sds)| OffOptimum::Joint {
                        coordinate,
                        sds,
                        gain,
                    });
            let offset = longest(&offset)
                .filter(|(_, sds)| *sds > when.offset_max)
                .map(|(coordinate, sds)| OffOptimum::Offset { coordinate, sds });
            (joint, offset)
        }
        _ => (None, None),
    };
    // the scale, a plain defect, is named before the subtler offset
    (joint.or(worst_scale.map(|(_, o)| o)).or(offset), estimate)
}

/// One Newton step of the mean of a mean-field q towards the optimum of the ELBO
/// ([`newton_step_in`]).
#[derive(Clone, Debug, PartialEq)]
pub struct NewtonStep {
    /// The ELBO gain of the step, in nats (split-half estimate, see [`newton_step_in`]).
    pub gain: f64,
    /// The step, in sds of q, per coordinate (length d).
    pub step: Vec<f64>,
    /// The step per coordinate in sds of the Gaussian whose precision is the ELBO's curvature in
    /// μ (for a Gaussian target, the posterior's marginal sds), length d: the distance of q's
    /// mean from the optimum in the units of the bar. Split-half estimate: the signed
    /// geometric mean of the two halves' steps, 0 where they disagree in sign.
    pub offset: Vec<f64>,
    /// The step of μ on the unconstrained scale (length d): `step` times q's sds.
    pub delta: Vec<f64>,
    /// The marginal sds of the curvature's Gaussian on the unconstrained scale (length d), the
    /// unit of `offset`.
    pub curvature_sd: Vec<f64>,
    /// The diagonal of the whitened curvature Â (symmetrised, before its eigenvalue floor;
    /// length d). With q's sds as the whitening, Â_jj estimates σ_j² E_q[−∂²_jj log p] = −c_j
    /// of the module docs, exactly where log p is quadratic: the mean-field ELBO's fixed point
    /// in σ_j is σ_j / √Â_jj (used by [`super::refine::refine_mean`]).
    pub curvature_diag: Vec<f64>,
    /// The Monte Carlo standard error of each `curvature_diag` (length d; White's
    /// heteroscedasticity-robust estimate for the regression, White 1980, HC0); 0 where log p is
    /// quadratic.
    pub curvature_diag_se: Vec<f64>,
    /// The Monte Carlo standard error of the step per coordinate, in sds of the curvature's
    /// Gaussian (the unit of `offset`; length d): the sandwich Â⁻¹ Cov(ḡ) Â⁻¹ mapped to the
    /// unconstrained scale, with Cov(ḡ) the covariance of the regression's residuals over S
    /// (ε is ḡ's control variate, so only the residuals add noise). 0 where log p is
    /// quadratic; on eight schools' tau (log p far from quadratic) 0.05–0.1 at S = 200, the
    /// size of the refinement's last steps there (measured, session 19).
    pub step_se: Vec<f64>,
    /// The whitened curvature Â after its eigenvalue floor (d × d row-major, symmetric): the
    /// ELBO's negative Hessian in μ in the whitened coordinates ε, whose inverse is the
    /// curvature's Gaussian's covariance there. A full-covariance q at the ELBO's optimum has
    /// Â = I (its precision is E_q[−∇² log p], Opper & Archambeau 2009, eq. 10); used by
    /// [`super::refine_full`] for the precision's fixed-point step.
    pub whitened_curvature: Vec<f64>,
}

/// For a mean-field q: one Newton step of μ estimated from S draws of q (`pairs`: each draw ζ
/// with ∇log p(ζ), length d; q's `mean` and `sd`, length d); `None` when fewer than
/// max(10, 2d + 2) gradients are finite or a factorisation fails.
///
/// Whitened by q's sds (ε = (ζ − μ)/σ, w = σ ∘ ∇log p), the ELBO's gradient in μ is E_q[w] and
/// its negative Hessian A = −E_q[w εᵀ] (Stein's lemma). Both are estimated by the regression of
/// w on ε: Â = −Cov(w, ε) Cov(ε)⁻¹ (symmetrised; eigenvalues floored by [`eigen_floor`]) and
/// ḡ = mean(w) + Â ε̄, the sample mean with ε as its control variate (E_q[ε] = 0). Where log p
/// is quadratic, w is linear in ε and both are exact whatever the draws; the raw moments
/// (−mean(w εᵀ), mean(w)) that this replaced carry the draws' sampling error
/// ε̄, mean(εεᵀ) − I, which on labour (a near-Gaussian logistic regression, d = 8, S = 200) made
/// the curvature's smallest eigenvalue negative, and so the step along the posterior's ridge
/// unknowable ([X], measured). The gain is ½ ḡ_1ᵀ Â⁻¹ ḡ_2 with ḡ_1, ḡ_2 from the two halves of
/// the draws, so that the Monte Carlo noise of ḡ does not add to it (the Newton decrement λ²/2
/// of Boyd & Vandenberghe 2004, §9.5.1). `whitening`: q's sds, or the Cholesky factor of a
/// full-covariance q's precision, for which the regression is as exact; `step` is then in q's
/// marginal sds and `offset` in the curvature's.
pub fn newton_step_in(
    pairs: &[(&Vec<f64>, Vec<f64>)],
    mean: &[f64],
    whitening: &Whitening,
) -> Option<NewtonStep> {
    use faer::linalg::solvers::Solve;
    use faer::{Mat, Side};
    let (s, d) = (pairs.len(), mean.len());
    if s < 10.max(2 * d + 2) || d == 0 {
        return None;
    }
    let eps: Vec<Vec<f64>> = pairs
        .iter()
        .map(|(z, _)| whitening.point(&(0..d).map(|j| z[j] - mean[j]).collect::<Vec<f64>>()))
        .collect();
    let w: Vec<Vec<f64>> = pairs.iter().map(|(_, g)| whitening.gradient(g)).collect();
    // q's marginal sds: the rows of L⁻ᵀ
    let unit = |k: usize| {
        (0..d)
            .map(|i| f64::from(u8::from(i == k)))
            .collect::<Vec<f64>>()
    };
    let columns: Vec<Vec<f64>> = (0..d).map(|k| whitening.step(&unit(k))).collect();
    let q_sd: Vec<f64> = (0..d)
        .map(|i| columns.iter().map(|c| c[i] * c[i]).sum::<f64>().sqrt())
        .collect();
    let mean_of = |rows: &[Vec<f64>]| -> Vec<f64> {
        (0..d)
            .map(|j| rows.iter().map(|r| r[j]).sum::<f64>() / rows.len() as f64)
            .collect()
    };
    let (eps_bar, w_bar) = (mean_of(&eps), mean_of(&w));
    let (mut c_ee, mut c_we) = (Mat::<f64>::zeros(d, d), Mat::<f64>::zeros(d, d));
    for (e, g) in eps.iter().zip(&w) {
        for i in 0..d {
            for k in 0..d {
                let ek = e[k] - eps_bar[k];
                c_ee[(i, k)] += (e[i] - eps_bar[i]) * ek / s as f64;
                c_we[(i, k)] += (g[i] - w_bar[i]) * ek / s as f64;
            }
        }
    }
    if (0..d).any(|i| (0..d).any(|k| !c_we[(i, k)].is_finite())) {
        return None;
    }
    // Â = −C_we C_ee⁻¹ = −(C_ee⁻¹ C_weᵀ)ᵀ, C_ee symmetric
    let llt = c_ee.llt(Side::Lower).ok()?;
    let b = llt.solve(c_we.transpose().to_owned());
    let a = Mat::from_fn(d, d, |i, k| -0.5 * (b[(k, i)] + b[(i, k)]));
    // the standard error of each Â_jj, the coefficient of ε_j in the regression of w_j on ε:
    // heteroscedasticity-robust (White's HC0), Σ_r (C_ee⁻¹ (ε_r − ε̄))_j² e_rj² / S², with e_rj
    // the residual of w_j; 0 where log p is quadratic (w is then linear in ε)
    let centred = Mat::from_fn(d, s, |k, r| eps[r][k] - eps_bar[k]);
    let lever = llt.solve(centred.as_ref());
    let curvature_diag_se: Vec<f64> = (0..d)
        .map(|j| {
            let sum: f64 = (0..s)
                .map(|r| {
                    let fitted: f64 = (0..d).map(|k| b[(k, j)] * (eps[r][k] - eps_bar[k])).sum();
                    let e = w[r][j] - w_bar[j] - fitted;
                    (lever[(j, r)] * e).powi(2)
                })
                .sum();
            sum.sqrt() / s as f64
        })
        .collect();
    let evd = a.self_adjoint_eigen(Side::Lower).ok()?;
    let (u, lambda) = (evd.U(), evd.S().column_vector());
    // each eigenvalue's standard error: λ_k = u_kᵀ Â u_k = −u_kᵀ B u_k, whose error is
    // Σ_r (u_kᵀ C_ee⁻¹ (ε_r − ε̄)) (u_kᵀ e_r) / S with e_r the residuals of w (HC0, as above)
    let resid: Vec<Vec<f64>> = (0..s)
        .map(|r| {
            (0..d)
                .map(|j| {
                    let fitted: f64 = (0..d).map(|k| b[(k, j)] * (eps[r][k] - eps_bar[k])).sum();
                    w[r][j] - w_bar[j] - fitted
                })
                .collect()
        })
        .collect();
    let lambda_se: Vec<f64> = (0..d)
        .map(|k| {
            let sum: f64 = (0..s)
                .map(|r| {
                    let l: f64 = (0..d).map(|i| u[(i, k)] * lever[(i, r)]).sum();
                    let e: f64 = (0..d).map(|i| u[(i, k)] * resid[r][i]).sum();
                    (l * e).powi(2)
                })
                .sum();
            sum.sqrt() / s as f64
        })
        .collect();
    let lambda: Vec<f64> = (0..d)
        .map(|k| match whitening {
            Whitening::Diagonal(_) => f64::max(lambda[k], eigen_floor(lambda_se[k])),
            Whitening::Full(_) => f64::max(lambda[k], CURVATURE_FLOOR),
        })
        .collect();
    // ḡ of a set of draws, with ε as the control variate
    let g_of = |rows: std::ops::Range<usize>| -> Vec<f64> {
        let n = rows.len() as f64;
        let (mut wm, mut em) = (vec![0.0; d], vec![0.0; d]);
        for r in rows {
            for j in 0..d {
                wm[j] += w[r][j] / n;
                em[j] += eps[r][j] / n;
            }
        }
        (0..d)
            .map(|i| wm[i] + (0..d).map(|k| a[(i, k)] * em[k]).sum::<f64>())
            .collect()
    };
    let half = s / 2;
    let (g1, g2, g) = (g_of(0..half), g_of(half..s), g_of(0..s));
    let project = |v: &[f64], k: usize| (0..d).map(|i| u[(i, k)] * v[i]).sum::<f64>();
    let step_of = |v: &[f64]| -> Vec<f64> {
        let mut step = vec![0.0; d];
        for k in 0..d {
            let c = project(v, k) / lambda[k];
            for (i, p) in step.iter_mut().enumerate() {
                *p += c * u[(i, k)];
            }
        }
        step
    };
    let gain = (0..d)
        .map(|k| 0.5 * project(&g1, k) * project(&g2, k) / lambda[k])
        .sum();
    let (s1, s2) = (whitening.step(&step_of(&g1)), whitening.step(&step_of(&g2)));
    // the curvature's marginal variances, diag(L⁻ᵀ Â⁻¹ L⁻¹), on the unconstrained scale
    let eigen_steps: Vec<Vec<f64>> = (0..d)
        .map(|k| whitening.step(&(0..d).map(|i| u[(i, k)]).collect::<Vec<f64>>()))
        .collect();
    let curvature_sd: Vec<f64> = (0..d)
        .map(|i| {
            (0..d)
                .map(|k| eigen_steps[k][i].powi(2) / lambda[k])
                .sum::<f64>()
                .sqrt()
        })
        .collect();
    let offset = (0..d)
        .map(|i| {
            let both = s1[i] * s2[i];
            if both > 0.0 {
                s1[i].signum() * both.sqrt() / curvature_sd[i]
            } else {
                0.0
            }
        })
        .collect();
    let delta = whitening.step(&step_of(&g));
    // the step's standard error: Cov(ḡ) = EᵀE / S² from the residuals E (S × d) of the
    // regression, then Cov(δ) = M Cov(ḡ) Mᵀ with M = L⁻ᵀ U Λ⁻¹ Uᵀ the map from ḡ to the step
    let res = &resid;
    let map: Vec<Vec<f64>> = (0..d).map(|k| whitening.step(&step_of(&unit(k)))).collect();
    let step_se: Vec<f64> = (0..d)
        .map(|i| {
            // Var(δ_i) = Σ_r (Σ_k M_ik e_rk)² / S²
            let var: f64 = res
                .iter()
                .map(|e| (0..d).map(|k| map[k][i] * e[k]).sum::<f64>().powi(2))
                .sum::<f64>()
                / (s as f64 * s as f64);
            var.sqrt() / curvature_sd[i]
        })
        .collect();
    Some(NewtonStep {
        gain,
        step: (0..d).map(|i| delta[i] / q_sd[i]).collect(),
        offset,
        delta,
        curvature_sd,
        curvature_diag: (0..d).map(|j| a[(j, j)]).collect(),
        curvature_diag_se,
        step_se,
        whitened_curvature: (0..d * d)
            .map(|ik| {
                let (i, k) = (ik / d, ik % d);
                (0..d).map(|m| u[(i, m)] * lambda[m] * u[(k, m)]).sum()
            })
            .collect(),
    })
}

/// The floor on the eigenvalues of the whitened curvature Â of [`newton_step_in`] (in q's
/// variances: an eigenvalue of 0.05 is a direction along which the curvature's Gaussian is
/// √20 ≈ 4.5 times wider than q), as the one-coordinate check floors −c_j ([`off_optimum_in`]),
/// for an eigenvalue the draws do not pin down ([`eigen_floor`]).
pub const CURVATURE_FLOOR: f64 = 0.05;

/// The floor of an eigenvalue of Â that the draws pin down ([`eigen_floor`]), in q's
/// variances: a direction along which the curvature's Gaussian is √1000 ≈ 32 times wider than
/// q ([X]). On labour (d = 8, intercept alpha on a ridge with the uncentred covariates) the
/// smallest eigenvalue at the mean-field sds is 0.005–0.009 at a standard error below 0.001
/// (200 draws, measured).
pub const CURVATURE_FLOOR_PINNED: f64 = 0.001;

/// An eigenvalue of Â is pinned down by the draws when it exceeds this many of its standard
/// errors ([`eigen_floor`]) ([X]).
pub const CURVATURE_FLOOR_SES: f64 = 4.0;

/// The floor of an eigenvalue of the whitened curvature Â with standard error `se` (in q's
/// variances) for a mean-field whitening ([`Whitening::Diagonal`]): [`CURVATURE_FLOOR`],
/// lowered to [`CURVATURE_FLOOR_SES`] × `se` but not below [`CURVATURE_FLOOR_PINNED`] ([X]).
/// Whitened by a full covariance, Â is near I at an optimum and a small eigenvalue means q is
/// far too wide there, not a ridge: the fixed floor stays (on a separated logistic regression,
/// full-covariance QBVI at seed 1, the lowered floor sent b from 79 to 17 where the posterior's
/// mean is 85, measured). The fixed floor of 0.05 is there for the noise of Â,
/// whose small eigenvalues a noisy regression (log p far from quadratic: eight schools' tau)
/// puts near or below zero; where log p is near-quadratic the regression is near-exact and
/// the floor only shortens the step along a ridge. On labour it cut the step along the
/// alpha–age ridge (eigenvalue 0.009) to a fifth, so the Newton iteration crept along it: 4 of
/// 36 converged minibatch QNVB fits (M = 16, 32, 64, seeds 1–12) ended 0.16–0.19 NUTS sds from
/// the NUTS means after the 2 steps of the refinement, the last step reading below 0.1
/// because the curvature's sds were floored too (measured).
pub fn eigen_floor(se: f64) -> f64 {
    if se.is_finite() {
        (CURVATURE_FLOOR_SES * se).clamp(CURVATURE_FLOOR_PINNED, CURVATURE_FLOOR)
    } else {
        CURVATURE_FLOOR
    }
}

/// Above this spread of the epoch-averaged means (the largest over coordinates, in sds of q) the
/// report of a minibatch fit off its optimum quotes it ([X]; labour, d = 8: IVON, VOGN, Vadam
/// and BBB at M = 50 spread at most 0.7, Vadam at M = 1 up to 3.3 and variational Laplace at
/// M = 50 up to 3.3; QNVB at M = 50 was off the optimum at a spread below 0.5, and M = 250
/// fixed it as it fixed the others).
pub const NOISY_SPREAD: f64 = 0.5;

/// Above this spread of the epoch-averaged means (in sds of q) a minibatch fit is not
/// converged, whatever its gradient says ([X]): the batch noise moves the mean between epochs by
/// more than q's own width, and the returned average of the last epochs
/// ([`crate::inference::minibatch::EpochExit::tail_average`]) still carries a share of it that
/// the spread of 8 correlated epochs cannot bound. Measured on labour (d = 8) with the
/// epoch-end means of 31-iterate windows and the last window returned: fits that passed the
/// gradient checks with a spread above 1 were up to 0.69 NUTS sds off (variational Laplace, QNVB
/// and BBB at M = 10). With the tail average (M = 32 and 64, seeds 1–3, eight methods), every
/// fit below the bar that passes is within 0.24 NUTS sds; BBB and variational Laplace fits above
/// it were 0.10–0.20 NUTS sds but up to 0.9 sds of q from the mean-field optimum. Not applied
/// to a mean that [`super::refine::refine_mean`] moved ([`Refined::Moved`]).
pub const NOISY_MAX_SPREAD: f64 = 1.0;

/// How far the batch noise moves a minibatch fit's mean between epochs: the largest over the
/// coordinates j of the sd of the last epoch-averaged means of μ_j (`epoch_means`, each of length
/// d; [`crate::inference::vi::GaussianFit::epoch_means`]) over σ_j (`sd`); `None` with fewer
/// than 3 epochs.
pub fn epoch_spread(epoch_means: &[Vec<f64>], sd: &[f64]) -> Option<f64> {
    widest_spread(epoch_means, sd).map(|(_, s)| s)
}

/// [`epoch_spread`] with the coordinate (0-based) where it is reached.
pub fn widest_spread(epoch_means: &[Vec<f64>], sd: &[f64]) -> Option<(usize, f64)> {
    let k = epoch_means.len();
    if k < 3 {
        return None;
    }
    let widest = (0..sd.len())
        .map(|j| {
            let m = epoch_means.iter().map(|e| e[j]).sum::<f64>() / k as f64;
            let var = epoch_means.iter().map(|e| (e[j] - m).powi(2)).sum::<f64>() / (k - 1) as f64;
            (j, var.sqrt() / sd[j])
        })
        .filter(|(_, x)| x.is_finite())
        .fold((0, 0.0), |b, (j, x)| if x > b.1 { (j, x) } else { b });
    Some(widest)
}

/// The stationarity phrase of a fit that stopped by its exit rule (`None` when q passes):
/// [`off_optimum_in`] on [`STATIONARITY_DRAWS`] draws from `sample` (random stream 5 of the
/// seed), with the scale condition for the methods whose fixed point is the ELBO's (not VOGN,
/// Vadam, variational Laplace), worded by [`super::off_optimum_phrase`] for the fit's start.
/// Shared by the Gaussian fits (`finish_gaussian_fit`) and QNVB; `mean_field` turns on the
/// joint step ([`Conditions::joint`]; not for full-covariance q, whose refinement whitens by its
/// factor but whose check does not: on eight schools, seeds 1–12, the joint step's offset of
/// full-covariance QBVI reached 0.33 posterior sds in tau on the check's draws at the seeds
/// where every method's did, the noise of a non-quadratic log τ, measured). `refined`: whether
/// the mean went through [`super::refine::refine_mean`] ([`Refined`]); the joint step's offset
/// must then be below [`REFINED_OFFSET_MAX`] for every method, and a minibatch mean that the
/// refinement moved is not judged by its epoch spread ([`NOISY_MAX_SPREAD`]). `known`: a
/// defect the refinement found (its sds' step refused, [`super::refine::SD_STEP_MAX`]), which
/// is the verdict without further draws.
///
/// Minibatch fits (batches smaller than N) are checked too, against the full data, with the
/// spread of their last epoch-averaged means (`epoch_means`, [`epoch_spread`]) in the report.
/// Measured on labour (d = 8, 3 seeds each) before this check: Vadam at M = 1
/// printed "converged" with beta[7] 1.1 reference sds from NUTS (a Newton step of 17 sds of
/// q), variational Laplace at M = 50 with beta[3] 0.6 reference sds off (13 sds), and diagonal
/// QBVI at M = 50 with sds up to 7 times narrower than the mean-field optimum (variance ratio
/// 0.02), QNVB at M = 50 with sds up to 40 % narrower and means 0.3 reference sds off; IVON,
/// VOGN, BBB and Vadam at M = 50 pass, as do the flagged fits with M = 250 (or a smaller step
/// size, which also fixed variational Laplace and Vadam at seed 2). Above
/// [`super::options::MODE_START_MAX_D`] coordinates (a BNN) minibatch fits get neither the
/// one-coordinate step nor the epoch spread: the largest of thousands of one-coordinate steps is
/// not a measure of convergence where the curvature of many weights is near zero (IVON on the
/// Boston BNN, M = 32: 26 sds on a weight at a test RMSE as good as QNVB's).
///
/// Every mean-field fit with d > [`NEWTON_MAX_D`] (where the joint step is not estimated) that
/// passes the checks above, and every such minibatch fit above d = 200, gets the diagonal check
/// of [`super::diagonal_step`] instead: [`super::diagonal_step::DIAGONAL_PAIRS`] antithetic
/// pairs of draws (stream [`DIAGONAL_STREAM`]) and the full-data gradients at them.
#[allow(clippy::too_many_arguments)]
pub(super) fn phrase(
    model: &crate::graph::Model,
    options: &super::FitOptions,
    sample: impl Fn(usize, &mut StreamRng) -> Vec<Vec<f64>>,
    mean: &[f64],
    sd: &[f64],
    mean_field: bool,
    refined: Refined,
    epoch_means: &[Vec<f64>],
    known: Option<OffOptimum>,
) -> Verdict {
    use super::Method;
    let d = mean.len();
    let batch_size = options
        .minibatch
        .as_ref()
        .filter(|p| p.settings.batch_size < p.n_obs)
        .map(|p| p.settings.batch_size);
    let elbo_fixed_point = !matches!(
        options.method,
        Method::Vogn | Method::Vadam | Method::Vlaplace
    );
    // above d = 200 a minibatch fit gets the diagonal check only (the one-coordinate step and
    // the epoch spread misfire there: see above)
    let large = batch_size.is_some() && d > super::options::MODE_START_MAX_D;
    let diagonal = || {
        if !mean_field || d <= NEWTON_MAX_D {
            return None;
        }
        let draws = sample(
            super::diagonal_step::DIAGONAL_PAIRS,
            &mut crate::inference::rng::stream(options.seed, DIAGONAL_STREAM),
        );
        let bar = if elbo_fixed_point {
            super::diagonal_step::DIAGONAL_RMS_MAX
        } else {
            super::diagonal_step::DIAGONAL_RMS_MAX_OTHER
        };
        super::diagonal_step::diagonal_off(model, &draws, mean, sd, bar)
    };
    let (off, estimate) = if let Some(known) = known {
        (Some(known), None)
    } else if large {
        (diagonal(), None)
    } else {
        let draws = sample(
            STATIONARITY_DRAWS,
            &mut crate::inference::rng::stream(options.seed, 5),
        );
        let when = Conditions {
            scale: elbo_fixed_point,
            joint: mean_field,
            offset_max: if refined != Refined::No {
                REFINED_OFFSET_MAX
            } else if elbo_fixed_point {
                MEAN_OFFSET_MAX
            } else {
                MEAN_OFFSET_MAX_OTHER
            },
        };
        // a minibatch mean that the batch noise moves by more than q's width is not
        // converged, whatever its gradient says (NOISY_MAX_SPREAD)
        let noisy = || {
            batch_size?;
            if refined == Refined::Moved {
                return None;
            }
            let (coordinate, spread) = widest_spread(epoch_means, sd)?;
            (spread > NOISY_MAX_SPREAD).then_some(OffOptimum::Noisy { coordinate, spread })
        };
        let (off, estimate) = off_optimum_in(model, &draws, mean, sd, None, when);
        (off.or_else(noisy).or_else(diagonal), estimate)
    };
    let Some(off) = off else {
        return Verdict {
            moving: None,
            offset: estimate,
        };
    };
    let n_obs = options.minibatch.as_ref().map_or(0, |p| p.n_obs);
    let batch = batch_size.map(|m| super::vi_checks::BatchNoise {
        batch_size: m,
        n_obs,
        spread: epoch_spread(epoch_means, sd).unwrap_or(0.0),
        step_size: (options.method == Method::Qbvi).then(|| options.qbvi_step_size(d)),
    });
    Verdict {
        moving: Some(super::off_optimum_phrase(
            &off,
            &model.parameter_names(),
            d,
            options.vi_init_for(d) == super::ViInit::Random,
            options.method,
            batch,
        )),
        offset: estimate,
    }
}

/// Whether a fit's mean went through [`super::refine::refine_mean`] before [`phrase`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Refined {
    /// Not tried (QNVB; d > [`NEWTON_MAX_D`]; MC dropout; a fit the exit rule did not stop).
    No,
    /// Tried, but no step was taken (the step was too long or could not be estimated).
    Tried,
    /// The mean was moved. The spread of the epoch-averaged means no longer says how far it is
    /// from its optimum: on labour (d = 8, seeds 1–12) the 43 minibatch fits (BBB and IVON at
    /// M = 5–200, variational Laplace at M = 32) that the spread above [`NOISY_MAX_SPREAD`]
    /// still reported not converged after the refinement had means within 0.12 NUTS sds of
    /// NUTS, and sds (20 000 draws, BBB and IVON at M = 16–64, seeds 1–8) within 0.84–1.39 of
    /// the mean-field optimum's where the converged fits of the same cells were within
    /// 0.73–1.27 (variational Laplace: 0.99–1.02 either way) (measured).
    Moved,
}

/// The outcome of [`phrase`].
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Verdict {
    /// Why q is not at an optimum, worded for the report; `None` when it passes.
    pub moving: Option<String>,
    /// The estimated distance of q's mean from the ELBO's optimum where the joint step was
    /// estimated: the coordinate (0-based) furthest off and its [`NewtonStep::offset`], in sds
    /// of the curvature's Gaussian.
    pub offset: Option<(usize, f64)>,
}

#[cfg(test)]
#[path = "stationarity_tests.rs"]
pub(super) mod tests;
