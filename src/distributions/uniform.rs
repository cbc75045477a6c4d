//! Uniform distribution on [α, β]: log p(y | α, β) = −log(β − α) inside, −∞ outside.

use super::args::requirement::{FINITE, NOT_NAN};
use super::args::{Arg, DistError, Term, check_each, zero_density};
use super::registry::Family;
use rand::Rng;
use rand_distr::Distribution;

/// Checks α, β finite and β > α (args[1..]; Stan's `uniform_lpdf` checks).
pub fn check_params(args: &[Arg]) -> Result<(), DistError> {
    let sig = Family::Uniform.sig();
    check_each(sig, args, 1, FINITE, f64::is_finite)?;
    check_each(sig, args, 2, FINITE, f64::is_finite)?;
    let (lo, hi) = (args[1], args[2]);
    let n = lo.len().max(hi.len());
    for i in 0..n {
        let (l, h) = (lo.at(i), hi.at(i));
        if h <= l {
            let which = if hi.is_vector() {
                format!("{}[{}]", sig.params[1].name, i + 1)
            } else {
                sig.params[1].name.to_string()
            };
            return Err(DistError {
                function: super::args::function_name(sig),
                message: format!("{which} is {h}, but must be greater than {l}"),
            });
        }
    }
    Ok(())
}

/// Uniform log density summed over `n` broadcast elements; args = (y, α, β).
///
/// A variate outside [α, β] gives value −∞ (not an error, as Stan) with zero partials.
/// Inside: ∂/∂y = 0, ∂/∂α = 1/(β − α), ∂/∂β = −1/(β − α).
/// Errors: y NaN, α or β not finite, β ≤ α.
pub fn lpdf(args: &[Arg], is_var: &[bool], propto: bool, n: usize) -> Result<Term, DistError> {
    check_params(args)?;
    let mut term = Term::zeros(args, is_var);
    if propto && !is_var.iter().any(|&v| v) {
        return Ok(term);
    }
    let (y, lo, hi) = (args[0], args[1], args[2]);
    let keep_width = !propto || is_var[1] || is_var[2];
    let scalar_width = !lo.is_vector() && !hi.is_vector();
    let log_width0 = (hi.at(0) - lo.at(0)).ln();
    let mut value = 0.0;
    for i in 0..n {
        let (yi, l, h) = (y.at(i), lo.at(i), hi.at(i));
        if yi < l || yi > h {
            return Ok(zero_density(args, is_var));
        }
        if keep_width {
            let width = h - l;
            value -= if scalar_width { log_width0 } else { width.ln() };
            term.add_partial(1, i, 1.0 / width);
            term.add_partial(2, i, -1.0 / width);
        }
    }
    term.value = value;
    Ok(term)
}

/// Uniform log CDF (or log CCDF) summed over `n` elements; args = (y, α, β).
///
/// log CDF = log(y − α) − log(β − α) inside [α, β], −∞ below, 0 above; log CCDF =
/// log(β − y) − log(β − α) inside, 0 below, −∞ above. Partials inside: for the CDF
/// ∂/∂y = 1/(y − α), ∂/∂α = 1/(β − α) − 1/(y − α), ∂/∂β = −1/(β − α); for the CCDF
/// ∂/∂y = −1/(β − y), ∂/∂α = 1/(β − α), ∂/∂β = 1/(β − y) − 1/(β − α). Errors: as [`lpdf`].
pub fn lcdf(args: &[Arg], is_var: &[bool], complement: bool, n: usize) -> Result<Term, DistError> {
    check_each(Family::Uniform.sig(), args, 0, NOT_NAN, |x| !x.is_nan())?;
    check_params(args)?;
    let (y, lo, hi) = (args[0], args[1], args[2]);
    let mut term = Term::zeros(args, is_var);
    let mut value = 0.0;
    for i in 0..n {
        let (yi, l, h) = (y.at(i), lo.at(i), hi.at(i));
        let inv_w = 1.0 / (h - l);
        let (below, above) = (yi <= l, yi >= h);
        if complement {
            if above {
                value = f64::NEG_INFINITY;
            } else if !below {
                let inv_r = 1.0 / (h - yi);
                value += ((h - yi) * inv_w).ln();
                term.add_partial(0, i, -inv_r);
                term.add_partial(1, i, inv_w);
                term.add_partial(2, i, inv_r - inv_w);
            }
        } else if below {
            value = f64::NEG_INFINITY;
        } else if !above {
            let inv_d = 1.0 / (yi - l);
            value += ((yi - l) * inv_w).ln();
            term.add_partial(0, i, inv_d);
            term.add_partial(1, i, inv_w - inv_d);
            term.add_partial(2, i, -inv_w);
        }
    }
    term.value = value;
    Ok(term)
}

/// One draw from uniform(α, β) as α + (β − α)·u with u uniform on [0, 1); `params` = (α, β),
/// checked (β > α).
pub fn rng<R: Rng + ?Sized>(params: &[f64], rng: &mut R) -> f64 {
    let u: f64 = rand_distr::StandardUniform.sample(rng);
    params[0] + (params[1] - params[0]) * u
}
