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
//! Errors: none. Draws where the gradient is not finite are left out; with fewer than half the
//! draws left the check passes (the PSIS k̂ and collapse checks report that q).

use crate::inference::LogDensity;
use crate::inference::rng::StreamRng;
use rayon::prelude::*;

/// Draws of q whose gradients the check averages.
pub const STATIONARITY_DRAWS: usize = 200;

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
    /// The variance: the coordinate whose σ_j² h_j = −c_j is furthest from 1.
    Scale {
        /// The unconstrained coordinate (0-based).
        coordinate: usize,
        /// −c_j: how many times the variance of q along it exceeds the inverse curvature
        /// (< 1: q too narrow; ≤ 0: the log density curves upwards there on average).
        ratio: f64,
    },
}

/// The check of the module docs on `draws` of q (S × d, from q with mean `mean` and marginal
/// sds `sd`, both length d): the coordinate whose Newton step of the mean exceeds
/// [`STATIONARY_SDS`] and [`STATIONARY_T`] by the most; else, with `check_scale`, the one whose
/// variance is off by more than [`STATIONARY_SCALE`] (and [`STATIONARY_T`] standard errors);
/// `None` when q is stationary (or too few gradients were finite).
pub fn off_optimum(
    density: &(dyn LogDensity + Sync),
    draws: &[Vec<f64>],
    mean: &[f64],
    sd: &[f64],
    check_scale: bool,
) -> Option<OffOptimum> {
    let d = mean.len();
    let pairs: Vec<(&Vec<f64>, Vec<f64>)> = draws
        .par_iter()
        .filter_map(|z| {
            let mut g = vec![0.0; d];
            match density.log_density_grad(z, &mut g) {
                Ok(v) if v.is_finite() && g.iter().all(|x| x.is_finite()) => Some((z, g)),
                _ => None,
            }
        })
        .collect();
    let s = pairs.len();
    if 2 * s < draws.len() || s < 10 {
        return None;
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
    worst_mean.or(worst_scale.map(|(_, o)| o))
}

/// The stationarity phrase of a fit that stopped by its exit rule (`None` when q passes):
/// [`off_optimum`] on [`STATIONARITY_DRAWS`] draws from `sample` (random stream 5 of the
/// seed), with the scale condition for the methods whose fixed point is the ELBO's (not VOGN,
/// Vadam, variational Laplace), worded by [`super::off_optimum_phrase`] for the fit's start.
/// Shared by the Gaussian fits (`finish_gaussian_fit`) and QNVB.
pub(super) fn phrase(
    model: &crate::graph::Model,
    options: &super::FitOptions,
    sample: impl Fn(usize, &mut StreamRng) -> Vec<Vec<f64>>,
    mean: &[f64],
    sd: &[f64],
) -> Option<String> {
    use super::Method;
    let draws = sample(
        STATIONARITY_DRAWS,
        &mut crate::inference::rng::stream(options.seed, 5),
    );
    let check_scale = !matches!(
        options.method,
        Method::Vogn | Method::Vadam | Method::Vlaplace
    );
    let off = off_optimum(model, &draws, mean, sd, check_scale)?;
    Some(super::off_optimum_phrase(
        &off,
        &model.parameter_names(),
        mean.len(),
        options.vi_init_for(mean.len()) == super::ViInit::Random,
        options.method,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inference::DensityError;
    use crate::inference::rng::stream;
    use rand_distr::{Distribution, StandardNormal};

    /// log N(ζ; 0, diag(s²)) up to a constant: the ELBO optimum of either Gaussian family is
    /// q = the target itself.
    struct Normal(Vec<f64>);

    impl LogDensity for Normal {
        fn dim(&self) -> usize {
            self.0.len()
        }
        fn log_density(&self, z: &[f64]) -> Result<f64, DensityError> {
            Ok(z.iter()
                .zip(&self.0)
                .map(|(x, s)| -0.5 * (x / s).powi(2))
                .sum())
        }
        fn log_density_grad(&self, z: &[f64], g: &mut [f64]) -> Result<f64, DensityError> {
            for ((gi, x), s) in g.iter_mut().zip(z).zip(&self.0) {
                *gi = -x / (s * s);
            }
            self.log_density(z)
        }
    }

    fn draws(mean: &[f64], sd: &[f64], n: usize) -> Vec<Vec<f64>> {
        let mut rng = stream(7, 0);
        (0..n)
            .map(|_| {
                mean.iter()
                    .zip(sd)
                    .map(|(m, s)| {
                        let e: f64 = StandardNormal.sample(&mut rng);
                        m + s * e
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn the_optimum_passes_and_a_shifted_or_widened_q_is_named() {
        let target = Normal(vec![1.0, 0.1, 10.0]);
        let sd = [1.0, 0.1, 10.0];
        // q = target: stationary
        let at = draws(&[0.0; 3], &sd, STATIONARITY_DRAWS);
        assert_eq!(off_optimum(&target, &at, &[0.0; 3], &sd, true), None);
        // the mean of coordinate 1 shifted by 3 sds: the Newton step is 3 sds back
        let mean = [0.0, 0.3, 0.0];
        let shifted = draws(&mean, &sd, STATIONARITY_DRAWS);
        match off_optimum(&target, &shifted, &mean, &sd, true) {
            Some(OffOptimum::Mean {
                coordinate, sds, ..
            }) => {
                assert_eq!(coordinate, 1);
                assert!((sds - 3.0).abs() < 0.5, "{sds}");
            }
            other => panic!("expected the mean of coordinate 1, got {other:?}"),
        }
        // a shift of 1 sd is within the bar
        let mean = [1.0, 0.0, 0.0];
        let near = draws(&mean, &sd, STATIONARITY_DRAWS);
        assert_eq!(off_optimum(&target, &near, &mean, &sd, true), None);
        // coordinate 2's sd 3× too wide: −c = 9 (a variance 9 times the inverse curvature);
        // not reported when the method's fixed point is not the ELBO's
        let wide = [1.0, 0.1, 30.0];
        let widened = draws(&[0.0; 3], &wide, STATIONARITY_DRAWS);
        match off_optimum(&target, &widened, &[0.0; 3], &wide, true) {
            Some(OffOptimum::Scale { coordinate, ratio }) => {
                assert_eq!(coordinate, 2);
                assert!((ratio - 9.0).abs() < 2.0, "{ratio}");
            }
            other => panic!("expected the scale of coordinate 2, got {other:?}"),
        }
        assert_eq!(
            off_optimum(&target, &widened, &[0.0; 3], &wide, false),
            None
        );
    }
}
