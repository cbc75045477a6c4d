//! Flat directions of a log density: unconstrained coordinates along which L does not change
//! over a wide region, so that the posterior is improper there (a parameter that enters only a
//! flat region of the likelihood, or a likelihood with no observations under flat priors).
//! Issue 13, item 2: methods must not report a posterior or an optimum along such a direction.
//!
//! Both checks cost O(d) gradient evaluations or fewer and run only when the fit's own evidence
//! calls for them (a Hessian that is not negative definite), or on a fixed number of draws.

use super::density::LogDensity;

/// |∂L/∂ζ_i| at or below `FLAT_GRAD · (1 + ‖∇L‖∞)` counts as zero ([X], a design decision):
/// a smooth density that depends on ζ_i has a gradient of exactly (or nearly) zero in that
/// coordinate only on a set of measure zero, so zero at every probe means L ignores ζ_i there.
pub const FLAT_GRAD: f64 = 1e-12;

/// Steps along ±e_i of [`flat_at_point`], on the unconstrained scale: probing out to 100 units
/// (e^100 for a positive parameter) is "a wide region" by any posterior's scale.
pub const FLAT_STEPS: [f64; 3] = [1.0, 10.0, 100.0];

/// Number of draws at which [`flat_in_draws`] evaluates the gradient.
pub const FLAT_DRAWS: usize = 40;

fn grad_at(density: &dyn LogDensity, z: &[f64]) -> Option<Vec<f64>> {
    let mut g = vec![0.0; z.len()];
    match density.log_density_grad(z, &mut g) {
        Ok(v) if v.is_finite() && g.iter().all(|x| x.is_finite()) => Some(g),
        _ => None,
    }
}

/// About `want` draws spread evenly over `draws`, and the finite gradients at them (evaluated
/// in parallel) with their index among the picked draws.
fn spread_gradients<'a>(
    density: &dyn LogDensity,
    draws: &[&'a [f64]],
    want: usize,
) -> (Vec<&'a [f64]>, Vec<(usize, Vec<f64>)>) {
    use rayon::prelude::*;
    let step = draws.len().div_ceil(want.max(1)).max(1);
    let picked: Vec<&[f64]> = draws.iter().step_by(step).copied().collect();
    let grads = picked
        .par_iter()
        .enumerate()
        .filter_map(|(k, z)| grad_at(density, z).map(|g| (k, g)))
        .collect();
    (picked, grads)
}

fn is_zero(g: &[f64], i: usize) -> bool {
    let scale = 1.0 + g.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    g[i].abs() <= FLAT_GRAD * scale
}

/// Largest d for which [`flat_combination_in_draws`] runs: it evaluates up to 2d + 20
/// gradients and takes the SVD of a (2d + 20) × d matrix.
pub const FLAT_COMBINATION_MAX_DIM: usize = 200;

/// A unit direction v (length d) along which L is flat over the draws although no coordinate
/// is: every gradient at up to 2d + 20 draws spread over `draws` is orthogonal to v, while the
/// draws spread along v. `y ~ normal(a + b, 1)` under flat priors depends on a + b only, so every
/// gradient is orthogonal to (a − b)/√2 and a sampler wanders along it without end.
///
/// v is the right singular vector of the smallest singular value of G, the k × d matrix of the
/// gradients (k > d + 4). Gradients from reverse mode are exact to rounding, so along a truly
/// flat direction that singular value is rounding (below 10⁻¹⁰ of the largest), where a proper
/// posterior gives at least the inverse square root of its precision's condition number (far
/// above 10⁻¹⁰ for any posterior a sampler can explore). v is kept only when, in addition,
/// |vᵀ∇L| ≤ 10⁻⁹·(1 + ‖∇L‖∞) at every probed draw and the draws' projections on v differ.
/// `None` for d < 2, d > [`FLAT_COMBINATION_MAX_DIM`] or too few finite gradients ([X], a design
/// decision, companion of [`flat_in_draws`] for combinations).
pub fn flat_combination_in_draws(density: &dyn LogDensity, draws: &[&[f64]]) -> Option<Vec<f64>> {
    let d = draws.first()?.len();
    if !(2..=FLAT_COMBINATION_MAX_DIM).contains(&d) {
        return None;
    }
    let want = 2 * d + 20;
    let (picked, grads) = spread_gradients(density, draws, want);
    if grads.len() < d + 5 {
        return None;
    }
    let g = faer::Mat::<f64>::from_fn(grads.len(), d, |i, j| grads[i].1[j]);
    let svd = g.thin_svd().ok()?;
    let (sv, vmat) = (svd.S().column_vector(), svd.V());
    let (mut lo, mut hi, mut at) = (f64::INFINITY, 0.0f64, 0);
    for j in 0..d {
        hi = hi.max(sv[j]);
        if sv[j] < lo {
            (lo, at) = (sv[j], j);
        }
    }
    if !(hi > 0.0 && lo <= 1e-10 * hi) {
        return None;
    }
    let mut v: Vec<f64> = (0..d).map(|i| vmat[(i, at)]).collect();
    // Components below 1e-12 of the largest are the SVD's rounding, and times a gradient of
    // ordinary size they can swamp slopes of 1e-14 that `restoring_in_draws` reads (beside
    // `mu ~ normal(1.23e15, 3e13)`, z's gradient is about 10: with `real<lower=0> z` NUTS seed 4
    // warned 'improper along 1.00·mu' until they were zeroed); zeroing them changes vᵀ∇L by at
    // most d·1e-12·‖∇L‖∞, within the orthogonality bound below for d ≤ 200. [X]
    let vmax = v.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    v.iter_mut()
        .filter(|x| x.abs() < 1e-12 * vmax)
        .for_each(|x| *x = 0.0);
    let vnorm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
    v.iter_mut().for_each(|x| *x /= vnorm);
    let orthogonal = grads.iter().all(|(_, g)| {
        let dv: f64 = g.iter().zip(&v).map(|(a, b)| a * b).sum();
        dv.abs() <= 1e-9 * (1.0 + g.iter().fold(0.0f64, |m, x| m.max(x.abs())))
    });
    let proj = |z: &[f64]| z.iter().zip(&v).map(|(a, b)| a * b).sum::<f64>();
    let (plo, phi) = grads
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), (k, _)| {
            let p = proj(picked[*k]);
            (l.min(p), h.max(p))
        });
    // a proper density of huge scale along v (`mu ~ normal(1.23e15, 3e13)` beside a parameter
    // of scale 0.1 gives gradients 3e-15 of the other's) is not a flat one: see restoring
    let slopes: Vec<(f64, f64)> = grads
        .iter()
        .map(|(k, g)| (proj(picked[*k]), g.iter().zip(&v).map(|(a, b)| a * b).sum()))
        .collect();
    let restoring = restoring_in_draws(&slopes);
    (orthogonal && phi > plo && !restoring).then_some(v)
}

/// The coordinates i along which L is flat on one side of `point` (length d): ∂L/∂ζ_i ≈ 0
/// (see [`FLAT_GRAD`]) at `point` and at `point ± t·e_i` for every t in [`FLAT_STEPS`], on
/// the plus side or on the minus side, unless those slopes pull back towards `point` and grow
/// with t (a mode of a scale too large for [`FLAT_GRAD`], see `restoring`). Only the
/// `candidates` are probed (e.g. the coordinates where the Hessian's row is zero), at 1 + 6
/// gradient evaluations each at most. A probe where L or its gradient is not finite ends that
/// side (not flat).
pub fn flat_at_point(density: &dyn LogDensity, point: &[f64], candidates: &[usize]) -> Vec<usize> {
    let Some(g0) = grad_at(density, point) else {
        return Vec::new();
    };
    candidates
        .iter()
        .copied()
        .filter(|&i| is_zero(&g0, i))
        .filter(|&i| {
            let side = |sign: f64| -> Option<Vec<f64>> {
                FLAT_STEPS
                    .iter()
                    .map(|&t| {
                        let mut z = point.to_vec();
                        z[i] += sign * t;
                        grad_at(density, &z).filter(|g| is_zero(g, i)).map(|g| g[i])
                    })
                    .collect()
            };
            let (plus, minus) = (side(1.0), side(-1.0));
            if let (Some(p), Some(m)) = (&plus, &minus)
                && concave_across(m, p)
            {
                return false;
            }
            [(1.0, plus), (-1.0, minus)]
                .iter()
                .any(|(sign, slopes)| slopes.as_ref().is_some_and(|s| !restoring(*sign, s)))
        })
        .collect()
}

/// Whether L is flat along coordinate `i` from `point` (length d) on the side `sign` (+1 or −1):
/// ∂L/∂ζ_i ≈ 0 ([`FLAT_GRAD`]) at `point` and at `point + sign·t·e_i` for every t in
/// [`FLAT_STEPS`], with L and ∇L finite there. The one-sided test of [`flat_at_point`] without
/// its pull-back exemption, for telling which side of a flat coordinate is flat. [X].
pub fn flat_on_side(density: &dyn LogDensity, point: &[f64], i: usize, sign: f64) -> bool {
    grad_at(density, point).is_some_and(|g| is_zero(&g, i))
        && FLAT_STEPS.iter().all(|&t| {
            let mut z = point.to_vec();
            z[i] += sign * t;
            grad_at(density, &z).is_some_and(|g| is_zero(&g, i))
        })
}

/// Whether the slopes ∂L/∂ζ_i at `point + sign·t·e_i` for t in [`FLAT_STEPS`] (in that order)
/// beyond the first pull back towards `point` and grow with t, as near a mode of any scale: L = −ζ²/(2s²) has
/// slope −t/s², which [`is_zero`]'s absolute threshold calls zero once s > 10⁷ (a prior
/// normal(1.23e15, 3e13) at its mode). A flat direction has slopes of exactly 0 or rounding
/// noise, never a consistent pull growing with distance. [X], a design decision.
///
/// The nearest probe is left out: `point` may sit a unit or so off the mode (the end of a mode
/// search at 1e15 is exact to about an ulp of ζ), so the slope there can point either way.
fn restoring(sign: f64, slopes: &[f64]) -> bool {
    let far = &slopes[slopes.len().min(1)..];
    !far.is_empty()
        && far.iter().all(|&v| sign * v < 0.0)
        && far.windows(2).all(|w| w[1].abs() > w[0].abs())
}

/// Whether the slopes at `point − t·e_i` (`minus`) and `point + t·e_i` (`plus`), t in
/// [`FLAT_STEPS`], decrease strictly with position and their differences over the far steps
/// exceed those over the near ones, as under a concave quadratic L whatever the offset of
/// `point` from its mode: a mode search that ends 8340 units from a mode of scale 3e13 (2.8e-10
/// sds, a fit of `mu ~ normal(1.23e15, 3e13)` with a second parameter) sees slopes of 1e-23 all
/// pointing one way, which [`restoring`] (made for a point within a unit of the mode) would
/// call flat on one side. A flat direction has equal (zero) slopes or rounding noise. [X].
fn concave_across(minus: &[f64], plus: &[f64]) -> bool {
    // positions −100, −10, −1, 1, 10, 100
    let s: Vec<f64> = minus.iter().rev().chain(plus.iter()).copied().collect();
    s.windows(2).all(|w| w[1] < w[0]) && s[0] - s[1] > s[1] - s[2] && s[4] - s[5] > s[3] - s[4]
}

/// The coordinates of a negative Hessian `neg_h` (d × d, row-major) whose row is zero to
/// rounding relative to the largest entry: the candidates for [`flat_at_point`].
pub fn null_rows(neg_h: &[f64], d: usize) -> Vec<usize> {
    let scale = neg_h.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    (0..d)
        .filter(|&i| {
            (0..d).all(|j| {
                let v = neg_h[i * d + j];
                v.is_finite() && v.abs() <= 1e-8 * (1.0 + scale)
            })
        })
        .collect()
}

/// Whether the slopes `(position, slope)` of L along one direction at the draws are those of
/// a proper density of large scale: they decrease with position at 90% or more of the pairs of
/// draws at different positions (L concave along the direction), and at least a tenth of them
/// point each way (the draws lie on both sides of a mode). A flat direction's slopes are exactly
/// 0 (ties) or rounding noise (about half the pairs), and a tail where L levels off has slopes
/// of one sign. [X], a design decision: the first version asked that 90% of the slopes point
/// towards the draws' mean (before: the middle of their range), but the mean of the 24 draws
/// of `flat_combination_in_draws` on d = 2 is 0.2 sds off the mode by chance, and the draws in
/// between then point away from it: NUTS on `mu ~ normal(1.23e15, 3e13); z ~ normal(1, 0.1)`
/// warned 'improper along 1.00·mu' at seeds 2, 3 and 6 of 1–6 (session 20).
fn restoring_in_draws(slopes: &[(f64, f64)]) -> bool {
    let n = slopes.len();
    let up = slopes.iter().filter(|(_, s)| *s > 0.0).count();
    let down = slopes.iter().filter(|(_, s)| *s < 0.0).count();
    if up * 10 < n || down * 10 < n {
        return false;
    }
    let (mut pairs, mut decreasing) = (0usize, 0usize);
    for (a, (pa, sa)) in slopes.iter().enumerate() {
        for (pb, sb) in &slopes[a + 1..] {
            if pa != pb {
                pairs += 1;
                if (pb - pa) * (sb - sa) < 0.0 {
                    decreasing += 1;
                }
            }
        }
    }
    pairs > 0 && decreasing * 10 >= pairs * 9
}

/// The coordinates i along which the gradient is ≈ 0 (see [`FLAT_GRAD`]) at every one of up to
/// [`FLAT_DRAWS`] draws spread over `draws` (each of length d), while the draws differ in ζ_i:
/// L does not change along ζ_i over the region the fit visited — unless the slopes pull back
/// from both sides, decreasing with ζ_i (a proper density of large scale: gradients of 1e-14
/// over draws spread by 3e13; see `restoring_in_draws`). Draws where L or its gradient
/// is not finite are skipped; with fewer than 5 usable draws nothing is reported.
pub fn flat_in_draws(density: &dyn LogDensity, draws: &[&[f64]]) -> Vec<usize> {
    if draws.is_empty() {
        return Vec::new();
    }
    let d = draws[0].len();
    let (picked, grads) = spread_gradients(density, draws, FLAT_DRAWS);
    if grads.len() < 5 {
        return Vec::new();
    }
    (0..d)
        .filter(|&i| {
            let lo = grads
                .iter()
                .map(|(k, _)| picked[*k][i])
                .fold(f64::INFINITY, f64::min);
            let hi = grads
                .iter()
                .map(|(k, _)| picked[*k][i])
                .fold(f64::NEG_INFINITY, f64::max);
            // a proper density of large scale (gradients of 1e-14 at a scale of 3e13) is not
            // a flat one, whose gradients are exactly 0 or rounding noise: see restoring
            let slopes: Vec<(f64, f64)> =
                grads.iter().map(|(k, g)| (picked[*k][i], g[i])).collect();
            let restoring = restoring_in_draws(&slopes);
            hi > lo && !restoring && grads.iter().all(|(_, g)| is_zero(g, i))
        })
        .collect()
}

/// Names for unconstrained coordinates: `names[i]` when there is one name per coordinate (every
/// parameter a scalar or a vector without a constraint that changes the dimension), else
/// `zeta[i]` (1-based).
pub fn coordinate_names(names: &[String], d: usize, coords: &[usize]) -> Vec<String> {
    coords
        .iter()
        .map(|&i| {
            if names.len() == d {
                names[i].clone()
            } else {
                format!("zeta[{}]", i + 1)
            }
        })
        .collect()
}

/// The flat directions at `point` named for messages: the coordinates of [`flat_at_point`]
/// (probing the zero rows of `neg_h`, or every coordinate without a Hessian), and when there is
/// none, a flat combination of coordinates (`y ~ normal(a + b, 1)` under flat priors is flat
/// along a − b, which no coordinate shows): the eigenvectors of `neg_h` whose eigenvalue is zero
/// to the finite-difference Hessian's error (below 10⁻⁵ of the largest), kept when the directional derivative vᵀ∇L is ≈ 0 ([`FLAT_GRAD`]) at `point` and
/// at `point + t·v` for every t in [`FLAT_STEPS`] on one side. Named by [`describe_direction`].
/// Costs O(d) gradients plus one d × d eigendecomposition.
pub fn flat_directions(
    density: &dyn LogDensity,
    point: &[f64],
    neg_h: Option<&[f64]>,
    names: &[String],
) -> Vec<String> {
    let d = point.len();
    let candidates = match neg_h {
        Some(nh) => null_rows(nh, d),
        None => (0..d).collect(),
    };
    let coords = flat_at_point(density, point, &candidates);
    if !coords.is_empty() {
        return coordinate_names(names, d, &coords);
    }
    let Some(nh) = neg_h.filter(|nh| d >= 2 && nh.iter().all(|x| x.is_finite())) else {
        return Vec::new();
    };
    let m = faer::Mat::<f64>::from_fn(d, d, |i, j| 0.5 * (nh[i * d + j] + nh[j * d + i]));
    let Ok(evd) = m.self_adjoint_eigen(faer::Side::Lower) else {
        return Vec::new();
    };
    let (lam, u) = (evd.S().column_vector(), evd.U());
    let scale = (0..d).fold(0.0f64, |m, k| m.max(lam[k].abs()));
    let flat_along = |v: &[f64], z: &[f64]| {
        grad_at(density, z).is_some_and(|g| {
            let dv: f64 = g.iter().zip(v).map(|(a, b)| a * b).sum();
            let gscale = 1.0 + g.iter().fold(0.0f64, |m, x| m.max(x.abs()));
            dv.abs() <= FLAT_GRAD * gscale
        })
    };
    for k in 0..d {
        if lam[k].abs() > 1e-5 * (1.0 + scale) {
            continue;
        }
        let v: Vec<f64> = (0..d).map(|i| u[(i, k)]).collect();
        if v.iter().any(|x| x.abs() > 0.99) || !flat_along(&v, point) {
            continue; // a coordinate (probed above), or not flat here
        }
        let flat = [1.0, -1.0].iter().any(|&sign| {
            FLAT_STEPS.iter().all(|&t| {
                let z: Vec<f64> = point
                    .iter()
                    .zip(&v)
                    .map(|(p, x)| p + sign * t * x)
                    .collect();
                flat_along(&v, &z)
            })
        });
        if flat {
            return vec![describe_direction(&v, names)];
        }
    }
    Vec::new()
}

/// A unit direction of the unconstrained space in words, as a combination of named coordinates
/// ([`coordinate_names`]), largest weights first with the first weight positive, e.g.
/// `the combination 0.71·a − 0.71·b (a direction the data and priors do not identify)`; at most
/// six terms, weights below 0.05 in magnitude left out (`+ …`).
pub fn describe_direction(v: &[f64], names: &[String]) -> String {
    let d = v.len();
    let name = |i: usize| coordinate_names(names, d, &[i]).remove(0);
    let mut order: Vec<usize> = (0..d).collect();
    // by weight (to two decimals, as printed), then by coordinate, so that equal weights
    // print in the parameters' order
    let key = |i: usize| (v[i].abs() * 100.0).round() as i64;
    order.sort_by(|&i, &j| key(j).cmp(&key(i)).then(i.cmp(&j)));
    let sign = if v[order[0]] < 0.0 { -1.0 } else { 1.0 };
    let mut s = String::new();
    let mut left_out = false;
    for (k, &i) in order.iter().enumerate() {
        let w = sign * v[i];
        if w.abs() < 0.05 || k >= 6 {
            left_out |= w.abs() >= 0.05;
            continue;
        }
        if s.is_empty() {
            s = format!("{:.2}·{}", w, name(i));
        } else {
            s.push_str(&format!(
                " {} {:.2}·{}",
                if w < 0.0 { "−" } else { "+" },
                w.abs(),
                name(i)
            ));
        }
    }
    if left_out {
        s.push_str(" + …");
    }
    format!("the combination {s}{UNIDENTIFIED}")
}

/// The tail of [`describe_direction`]'s phrase, which callers that know another cause (a
/// funnel's neck) leave out.
pub const UNIDENTIFIED: &str = " (a direction the data and priors do not identify)";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inference::DensityError;

    /// L(x, y) = −x²/2 − (max(y, 10) − 10)²/2: flat in y below 10.
    struct HalfFlat;
    impl LogDensity for HalfFlat {
        fn dim(&self) -> usize {
            2
        }
        fn log_density(&self, t: &[f64]) -> Result<f64, DensityError> {
            let u = t[1].max(10.0) - 10.0;
            Ok(-0.5 * t[0] * t[0] - 0.5 * u * u)
        }
        fn log_density_grad(&self, t: &[f64], g: &mut [f64]) -> Result<f64, DensityError> {
            let u = t[1].max(10.0) - 10.0;
            g[0] = -t[0];
            g[1] = -u;
            Ok(-0.5 * t[0] * t[0] - 0.5 * u * u)
        }
    }

    #[test]
    fn a_half_flat_coordinate_is_found_and_a_curved_one_is_not() {
        assert_eq!(flat_at_point(&HalfFlat, &[0.0, 1.0], &[0, 1]), vec![1]);
        let draws: Vec<Vec<f64>> = (0..50)
            .map(|k| vec![k as f64 * 0.1 - 2.0, -(k as f64)])
            .collect();
        let refs: Vec<&[f64]> = draws.iter().map(|v| v.as_slice()).collect();
        assert_eq!(flat_in_draws(&HalfFlat, &refs), vec![1]);
        // draws above 10 in y: the density curves there
        let draws: Vec<Vec<f64>> = (0..50).map(|k| vec![0.5, 11.0 + k as f64]).collect();
        let refs: Vec<&[f64]> = draws.iter().map(|v| v.as_slice()).collect();
        assert!(flat_in_draws(&HalfFlat, &refs).is_empty());
        assert_eq!(null_rows(&[1.0, 0.0, 0.0, 0.0], 2), vec![1]);
    }

    /// L(x) = −(x − 1.23e15)²/(2·(3e13)²): a proper density whose slopes (1e-27 per unit from
    /// the mode) are below [`FLAT_GRAD`] everywhere the checks look.
    struct Wide;
    impl LogDensity for Wide {
        fn dim(&self) -> usize {
            1
        }
        fn log_density(&self, t: &[f64]) -> Result<f64, DensityError> {
            let z = (t[0] - 1.23e15) / 3e13;
            Ok(-0.5 * z * z)
        }
        fn log_density_grad(&self, t: &[f64], g: &mut [f64]) -> Result<f64, DensityError> {
            let z = (t[0] - 1.23e15) / 3e13;
            g[0] = -z / 3e13;
            Ok(-0.5 * z * z)
        }
    }

    #[test]
    fn a_proper_density_of_huge_scale_is_not_flat() {
        // at the mode, and two units off it (the end of a mode search at 1e15 is exact to
        // about an ulp, 0.25)
        for x in [
            1.23e15,
            1.23e15 + 2.0,
            1.23e15 - 2.0,
            1.23e15 - 8340.0,
            1.23e15 + 1e6,
        ] {
            assert!(flat_at_point(&Wide, &[x], &[0]).is_empty(), "{x}");
        }
        // draws spread over ±2 sds
        let draws: Vec<Vec<f64>> = (0..50)
            .map(|k| vec![1.23e15 + (k as f64 - 24.5) * 2.4e12])
            .collect();
        let refs: Vec<&[f64]> = draws.iter().map(|v| v.as_slice()).collect();
        assert!(flat_in_draws(&Wide, &refs).is_empty());
    }

    /// [`Wide`] in ζ₀ beside z ~ normal(1, 0.1) in ζ₁.
    struct WideAndZ;
    impl LogDensity for WideAndZ {
        fn dim(&self) -> usize {
            2
        }
        fn log_density(&self, t: &[f64]) -> Result<f64, DensityError> {
            let mut g = [0.0; 2];
            self.log_density_grad(t, &mut g)
        }
        fn log_density_grad(&self, t: &[f64], g: &mut [f64]) -> Result<f64, DensityError> {
            let lw = Wide.log_density_grad(&t[..1], &mut g[..1])?;
            let u = (t[1] - 1.0) / 0.1;
            g[1] = -u / 0.1;
            Ok(lw - 0.5 * u * u)
        }
    }

    #[test]
    fn draws_off_centre_of_a_huge_scale_are_not_flat() {
        // 24 draws (what flat_combination_in_draws picks for d = 2) at 0.1-sd spacing, their
        // mean 0.35 sds above the mode: the three draws between the mode and the mean point away
        // from the mean, so 'pulled towards the mean at 90%' failed (NUTS seeds 2, 3, 6 warned)
        let draws: Vec<Vec<f64>> = (0..24)
            .map(|k| {
                let x = 1.23e15 + (k as f64 - 8.0) * 3e12;
                vec![x, 1.0 + 0.1 * (k as f64).sin()]
            })
            .collect();
        let refs: Vec<&[f64]> = draws.iter().map(|v| v.as_slice()).collect();
        assert!(flat_in_draws(&WideAndZ, &refs).is_empty());
        assert_eq!(flat_combination_in_draws(&WideAndZ, &refs), None);
        // slopes of rounding noise or of one sign (a tail levelling off) are not restoring
        let noise: Vec<(f64, f64)> = (0..24)
            .map(|k| (k as f64, 1e-17 * ((k * 7919) % 13) as f64 - 6e-17))
            .collect();
        assert!(!restoring_in_draws(&noise));
        let tail: Vec<(f64, f64)> = (0..24)
            .map(|k| (k as f64, (-(k as f64) - 30.0).exp()))
            .collect();
        assert!(!restoring_in_draws(&tail));
        let zero: Vec<(f64, f64)> = (0..24).map(|k| (k as f64, 0.0)).collect();
        assert!(!restoring_in_draws(&zero));
    }
}
