//! Degenerate variational fits: the unconstrained directions along which q drifts without
//! bound (an improper posterior: shifting q's mean along them does not lower the ELBO) and the
//! parameters on which q collapsed to a point. Run after every variational fit by
//! [`super::vi_checks`]; their findings are [`ViDiagnostics::unbounded`] and
//! [`ViDiagnostics::collapsed`].

use super::*;

/// Gain threshold of the unboundedness check ([X], a design decision). Shifting the mean of a
/// Gaussian q by c standard deviations σ_i along unconstrained coordinate i (c =
/// [`UNBOUNDED_SHIFT`], common draws, entropy unchanged) changes the ELBO by
/// Δ_i = mean_s[L(ζ_s ± cσ_i e_i) − L(ζ_s)]. At an optimum of the ELBO over Gaussians,
/// E_q[−∇²L] = Σ⁻¹ (the fixed point of the natural-gradient update), so for a quadratic L
/// Δ_i = −½c² Σ_ii (Σ⁻¹)_ii ≤ −4.5. When the log density does not decay along i (an improper
/// direction) there is no optimum and one of the two shifts loses nothing or gains. A coordinate
/// with max(Δ_i⁺, Δ_i⁻) above this threshold is reported as unbounded. On the centred
/// eight-schools funnel (proper, far from Gaussian) the largest Δ over seeds 1–8 was −2.3; on
/// flat-prior posteriors it is ≥ 0.
pub const UNBOUNDED_GAIN: f64 = -1.0;

/// |μ_i| on the unconstrained scale beyond which q counts as drifted along coordinate i without
/// further test (e^100 for a positive parameter), after a start that found no mode ([X]). A
/// heavy-tailed q can make the Monte Carlo gain of [`UNBOUNDED_GAIN`] −∞ through a few draws
/// while the mean has run off (seen with QNVB on a flat-prior scale: log σ ≈ 360).
pub const UNBOUNDED_MEAN: f64 = 100.0;

/// The shift of the unboundedness check in standard deviations of q (see [`UNBOUNDED_GAIN`]).
pub const UNBOUNDED_SHIFT: f64 = 3.0;

/// Draws of q used by the unboundedness check (stream 4 of the seed).
pub(super) const UNBOUNDED_DRAWS: usize = 200;

/// The unconstrained coordinates along which shifting q's mean by [`UNBOUNDED_SHIFT`] standard
/// deviations does not lower the ELBO by more than [`UNBOUNDED_GAIN`], or whose mean lies beyond
/// ±[`UNBOUNDED_MEAN`], named as in [`ViDiagnostics::unbounded`];
/// `draws` are draws of q, `mean` its mean. Draws where L is not finite are left out (all
/// coordinates are reported when that is more than half of them); a draw whose shifted log
/// density cannot be evaluated counts as −∞ (bounded).
pub(super) fn unbounded_directions(model: &Model, draws: &[Vec<f64>], mean: &[f64]) -> Vec<String> {
    use rayon::prelude::*;
    let d = mean.len();
    let n = draws.len() as f64;
    let names = model.parameter_names();
    let name = |i: usize| {
        if names.len() == d {
            names[i].clone()
        } else {
            format!("zeta[{}]", i + 1)
        }
    };
    let lp = |z: &[f64]| match model.log_density(z) {
        Ok(v) if v.is_finite() => v,
        _ => f64::NEG_INFINITY,
    };
    // Draws where L cannot be evaluated (e.g. a scale overflowing to +∞) are left out; when
    // most of q lies there, q has drifted off the representable range in every coordinate.
    let (draws, base): (Vec<&Vec<f64>>, Vec<f64>) = draws
        .par_iter()
        .map(|z| (z, lp(z)))
        .filter(|(_, b)| b.is_finite())
        .unzip();
    if 2 * draws.len() < n as usize {
        return (0..d).map(name).collect();
    }
    let n = draws.len() as f64;
    // the mean change of L when every draw moves by `step`
    let gain_along = |step: &[f64]| -> f64 {
        let change: Vec<f64> = draws
            .par_iter()
            .zip(base.par_iter())
            .map(|(z, b)| {
                let w: Vec<f64> = z.iter().zip(step).map(|(x, s)| x + s).collect();
                lp(&w) - b
            })
            .collect();
        change.iter().sum::<f64>() / n
    };
    let axes: Vec<String> = (0..d)
        .filter(|&i| {
            if !(mean[i].abs() <= UNBOUNDED_MEAN) {
                return true;
            }
            let var = draws.iter().map(|z| (z[i] - mean[i]).powi(2)).sum::<f64>() / (n - 1.0);
            let sd = var.sqrt();
            [sd, -sd].iter().any(|&sd| {
                let shift = UNBOUNDED_SHIFT * sd;
                let change: Vec<f64> = draws
                    .par_iter()
                    .zip(base.par_iter())
                    .map(|(z, b)| {
                        let mut w = (*z).clone();
                        w[i] += shift;
                        lp(&w) - b
                    })
                    .collect();
                let gain = change.iter().sum::<f64>() / n;
                gain > UNBOUNDED_GAIN
            })
        })
        .map(name)
        .collect();
    if !axes.is_empty() || d < 2 {
        return axes;
    }
    // A ridge along a combination of coordinates (`y ~ normal(a + b, 1)` with flat priors: flat
    // along a − b) is invisible to the axis shifts, whose 3σ_i step leaves the ridge. The same
    // bound holds along any direction v (Cauchy–Schwarz: (vᵀΣv)(vᵀΣ⁻¹v) ≥ 1, so at an optimum
    // the shift by 3 sd along v loses at least 4.5), so q's direction of largest spread, where
    // a drifting q has run, is tested too.
    // A mean-field q cannot spread along a combination, so the direction of least curvature of
    // L at q's mean (the flat direction of a ridge) is tested as well, where the d × d Hessian
    // is affordable.
    let mut candidates: Vec<Vec<f64>> = principal_axis(&draws, mean).into_iter().collect();
    if d <= 200
        && let Ok(h) = crate::inference::hessian::hessian(model, mean)
    {
        let m = faer::Mat::<f64>::from_fn(d, d, |i, j| -0.5 * (h[i * d + j] + h[j * d + i]));
        if let Ok(evd) = m.self_adjoint_eigen(faer::Side::Lower) {
            // eigenvalues ascending: the first column is the least curved direction
            let u = evd.U();
            candidates.push((0..d).map(|i| u[(i, 0)]).collect());
        }
    }
    for v in candidates {
        if v.iter().any(|x| x.abs() > 0.99) {
            continue; // (nearly) a coordinate axis: tested above
        }
        // q's sd along v
        let sd = (draws
            .iter()
            .map(|z| {
                let p: f64 = (0..d).map(|i| (z[i] - mean[i]) * v[i]).sum();
                p * p
            })
            .sum::<f64>()
            / (n - 1.0))
            .sqrt();
        if !(sd.is_finite() && sd > 0.0) {
            continue;
        }
        let up: Vec<f64> = v.iter().map(|x| UNBOUNDED_SHIFT * sd * x).collect();
        let down: Vec<f64> = up.iter().map(|x| -x).collect();
        if gain_along(&up) > UNBOUNDED_GAIN || gain_along(&down) > UNBOUNDED_GAIN {
            return vec![crate::inference::flat::describe_direction(&v, &names)];
        }
    }
    axes
}

/// The unit direction of largest spread of `draws` about `mean`, by power
/// iteration on the centred draws (O(iterations · S · d), no d × d matrix); `None` when the
/// draws do not spread.
fn principal_axis(draws: &[&Vec<f64>], mean: &[f64]) -> Option<Vec<f64>> {
    let d = mean.len();
    let n = draws.len();
    if n < 2 {
        return None;
    }
    // start from the coordinate of largest spread, made generic so that no axis is orthogonal
    let mut v: Vec<f64> = (0..d).map(|i| 1.0 + 0.01 * i as f64).collect();
    for _ in 0..100 {
        let mut w = vec![0.0; d];
        for z in draws {
            let p: f64 = (0..d).map(|i| (z[i] - mean[i]) * v[i]).sum();
            for i in 0..d {
                w[i] += p * (z[i] - mean[i]);
            }
        }
        let norm = w.iter().map(|x| x * x).sum::<f64>().sqrt();
        if !(norm.is_finite() && norm > 0.0) {
            return None;
        }
        let next: Vec<f64> = w.iter().map(|x| x / norm).collect();
        let moved = next
            .iter()
            .zip(&v)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        v = next;
        if moved < 1e-10 {
            break;
        }
    }
    Some(v)
}

/// Relative scale sd/|mean| below which a marginal of a variational fit may count as collapsed
/// (with [`COLLAPSE_ABSOLUTE_SD`]): a posterior from n observations has sd/|mean| of order 1/√n,
/// far above 1e-8 for any data set that fits in memory.
pub const COLLAPSE_RELATIVE_SD: f64 = 1e-8;

/// Absolute sd (constrained scale, the parameter's units) at or below which a marginal with
/// sd ≤ [`COLLAPSE_RELATIVE_SD`]·|mean| counts as collapsed. [X] The relative rule alone
/// flagged a proper, well-resolved posterior: `mu ~ normal(123456789.123, 1e-4)` has
/// sd/|mean| = 8e-13 but sd = 1e-4, about 3700 units in the last place of its mean, so its
/// draws and log p − log q are not dominated by rounding (fresh-user finding, session 20).
/// The collapses seen in practice are far below both bars: sds of 3e-14 (MA(1) from a random
/// start, `tests/fixtures/ma1`), 1e-15 (the BNN whose precision update blew up) and a scale
/// stuck at 4.7e-13 (centred eight schools).
pub const COLLAPSE_ABSOLUTE_SD: f64 = 1e-8;

/// The parameters (the first `n_params` columns of `draws`) whose draws have
/// sd ≤ [`COLLAPSE_RELATIVE_SD`]·|mean| and sd ≤ [`COLLAPSE_ABSOLUTE_SD`] (or sd = 0), as
/// (name, mean, sd). A variational fit
/// drifts onto such a spike when the posterior is improper or unbounded, e.g. a scale parameter
/// with a flat prior going to 0 while the other parameters interpolate the data exactly; the
/// log ratios log p − log q are then dominated by rounding and k̂ cannot flag it.
pub fn collapsed_parameters(draws: &Draws, n_params: usize) -> Vec<(String, f64, f64)> {
    collapsed_among(draws, n_params, &[])
}

/// The components of the constrained parameters that are fixed by their type whatever the
/// unconstrained point (the unit diagonal of a correlation matrix, the zeros above the diagonal
/// of a Cholesky factor): equal at three spread-out points ζ. They are constant in every draw
/// and must not count as a collapse.
pub(super) fn structural_constants(model: &Model) -> Vec<bool> {
    let d = model.dim();
    let mut rng = stream(0, 0);
    let mut at = |c: f64| -> Option<Vec<f64>> {
        let z: Vec<f64> = (0..d).map(|i| c * (1.0 + 0.37 * i as f64).sin()).collect();
        model.write_array(&z, false, false, &mut rng).ok()
    };
    match (at(0.0), at(0.9), at(-1.3)) {
        (Some(a), Some(b), Some(c)) => a
            .iter()
            .zip(&b)
            .zip(&c)
            .map(|((x, y), z)| x == y && y == z)
            .collect(),
        _ => Vec::new(),
    }
}

/// [`collapsed_parameters`], skipping the columns flagged in `fixed`.
pub(super) fn collapsed_among(
    draws: &Draws,
    n_params: usize,
    fixed: &[bool],
) -> Vec<(String, f64, f64)> {
    let k = draws.names.len();
    let mut out = Vec::new();
    for j in 0..n_params.min(k) {
        if fixed.get(j).copied().unwrap_or(false) {
            continue;
        }
        let col: Vec<f64> = draws.column(j).concat();
        if col.len() < 2 || col.iter().any(|v| !v.is_finite()) {
            continue;
        }
        let n = col.len() as f64;
        let mean = col.iter().sum::<f64>() / n;
        let var = col.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1.0);
        let sd = var.sqrt();
        if sd == 0.0 || (sd <= COLLAPSE_RELATIVE_SD * mean.abs() && sd <= COLLAPSE_ABSOLUTE_SD) {
            out.push((draws.names[j].clone(), mean, sd));
        }
    }
    out
}
