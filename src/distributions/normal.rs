//! Normal distribution: log p(y | μ, σ) = −½ log(2π) − log σ − ½((y − μ)/σ)².

use super::args::{Arg, DistError, Term, check_each};
use super::registry::Family;

const HALF_LOG_TWO_PI: f64 = 0.918_938_533_204_672_8;

/// Normal log density summed over `n` broadcast elements; args = (y, mu, sigma).
/// Partials: ∂/∂y = −z/σ, ∂/∂μ = z/σ, ∂/∂σ = (z² − 1)/σ with z = (y − μ)/σ.
pub fn lpdf(args: &[Arg], is_var: &[bool], propto: bool, n: usize) -> Result<Term, DistError> {
    let sig = Family::Normal.sig();
    check_each(sig, args, 0, "finite", |x| !x.is_nan())?;
    check_each(sig, args, 1, "finite", f64::is_finite)?;
    check_each(sig, args, 2, "positive and finite", |x| {
        x > 0.0 && x.is_finite()
    })?;
    let (y, mu, sigma) = (args[0], args[1], args[2]);
    let mut term = Term::zeros(args, is_var);
    let include_const = !propto;
    let include_log_sigma = !propto || is_var[2];
    let mut value = 0.0;
    for i in 0..n {
        let s = sigma.at(i);
        let inv_s = 1.0 / s;
        let z = (y.at(i) - mu.at(i)) * inv_s;
        value -= 0.5 * z * z;
        if include_log_sigma {
            value -= s.ln();
        }
        term.add_partial(0, i, -z * inv_s);
        term.add_partial(1, i, z * inv_s);
        term.add_partial(2, i, (z * z - 1.0) * inv_s);
    }
    if include_const {
        value -= HALF_LOG_TWO_PI * n as f64;
    }
    term.value = value;
    Ok(term)
}
