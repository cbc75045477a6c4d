//! Pareto distribution (Stan Functions Reference, "Pareto distribution"): for y ≥ y_min,
//! p(y | y_min, α) = α y_min^α / y^{α+1}; F(y) = 1 − (y_min/y)^α. Below y_min the density is 0
//! (log density −∞), as in Stan.

use super::args::requirement::{NOT_NAN, POSITIVE_FINITE};
use super::args::{Arg, DistError, Term, check_each, positive_finite, zero_density};
use super::registry::Family;
use super::special::log1m_exp;
use rand::Rng;
use rand_distr::Distribution;

/// Checks y_min, α > 0 finite (args[1..]; Stan's `pareto_lpdf` checks).
pub fn check_params(args: &[Arg]) -> Result<(), DistError> {
    let sig = Family::Pareto.sig();
    check_each(sig, args, 1, POSITIVE_FINITE, positive_finite)?;
    check_each(sig, args, 2, POSITIVE_FINITE, positive_finite)
}

/// Pareto log density summed over `n` broadcast elements; args = (y, y_min, α).
///
/// log p = log α + α log y_min − (α + 1) log y; ∂/∂y = −(α + 1)/y, ∂/∂y_min = α/y_min,
/// ∂/∂α = 1/α + log y_min − log y. Under `~` Stan's groups are kept: log α (α a parameter),
/// α log y_min (y_min or α), −(α + 1) log y (y or α).
/// Errors: y NaN, y_min or α not positive finite.
pub fn lpdf(args: &[Arg], is_var: &[bool], propto: bool, n: usize) -> Result<Term, DistError> {
    check_each(Family::Pareto.sig(), args, 0, NOT_NAN, |x| !x.is_nan())?;
    check_params(args)?;
    let (y, ymin, alpha) = (args[0], args[1], args[2]);
    if (0..n).any(|i| y.at(i) < ymin.at(i) || y.at(i).is_infinite()) {
        return Ok(zero_density(args, is_var));
    }
    let mut term = Term::zeros(args, is_var);
    if propto && !is_var.iter().any(|&v| v) {
        return Ok(term);
    }
    let mut value = 0.0;
    for i in 0..n {
        let (yi, m, a) = (y.at(i), ymin.at(i), alpha.at(i));
        let (ly, lm) = (yi.ln(), m.ln());
        if !propto || is_var[2] {
            value += a.ln();
        }
        if !propto || is_var[1] || is_var[2] {
            value += a * lm;
        }
        if !propto || is_var[0] || is_var[2] {
            value -= (a + 1.0) * ly;
        }
        term.add_partial(0, i, -(a + 1.0) / yi);
        term.add_partial(1, i, a / m);
        term.add_partial(2, i, 1.0 / a + lm - ly);
    }
    term.value = value;
    Ok(term)
}

/// Pareto log CDF or log CCDF summed over `n` elements; args = (y, y_min, α). With
/// c = α (log y_min − log y) = log(1 − F): the log CCDF is c, the log CDF log(1 − e^c); below
/// y_min they are 0 and −∞. ∂c/∂y = −α/y, ∂c/∂y_min = α/y_min, ∂c/∂α = log(y_min/y), and the
/// log CDF's partials are those times −e^c/(1 − e^c) = −1/expm1(−c). Errors: as [`lpdf`].
pub fn lcdf(args: &[Arg], is_var: &[bool], complement: bool, n: usize) -> Result<Term, DistError> {
    check_each(Family::Pareto.sig(), args, 0, NOT_NAN, |x| !x.is_nan())?;
    check_params(args)?;
    let mut term = Term::zeros(args, is_var);
    let (y, ymin, alpha) = (args[0], args[1], args[2]);
    let mut value = 0.0;
    for i in 0..n {
        let (yi, m, a) = (y.at(i), ymin.at(i), alpha.at(i));
        if yi <= m {
            // F = 0: log CDF −∞, log CCDF 0 (partials 0)
            if !complement {
                value = f64::NEG_INFINITY;
            }
            continue;
        }
        let lr = (m / yi).ln();
        let c = a * lr;
        // d log(1 − e^c)/dc = −e^c/(1 − e^c) = −1/expm1(−c)
        let (v, h) = if complement {
            (c, 1.0)
        } else {
            (log1m_exp(c), -1.0 / (-c).exp_m1())
        };
        value += v;
        if v.is_finite() {
            term.add_partial(0, i, -h * a / yi);
            term.add_partial(1, i, h * a / m);
            term.add_partial(2, i, h * lr);
        }
    }
    term.value = value;
    Ok(term)
}

/// One draw from pareto(y_min, α) by inversion: y = y_min p^{−1/α}, p uniform on (0, 1).
/// `params` = (y_min, α), checked.
pub fn rng<R: Rng + ?Sized>(params: &[f64], rng: &mut R) -> f64 {
    let p: f64 = rand_distr::Open01.sample(rng);
    params[0] * p.powf(-1.0 / params[1])
}
