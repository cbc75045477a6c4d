//! Ordered probit distribution over 1..K with location η and ordered cut-points
//! c₁ < … < c_{K−1} (Stan Functions Reference, "Ordered probit distribution"), Φ the standard
//! normal CDF: p(1) = 1 − Φ(η − c₁), p(k) = Φ(η − c_{k−1}) − Φ(η − c_k), p(K) = Φ(η − c_{K−1}).
//!
//! The middle categories take log(Φ(a) − Φ(b)), a = η − c_{k−1} > b = η − c_k, as
//! log Φ(a) ⊖ log Φ(b) when a + b ≤ 0 and as log Φ(−b) ⊖ log Φ(−a) otherwise, so that the two
//! probabilities are never both close to 1. Argument checks and broadcasting are those of
//! `ordered_logistic` ([`super::ordered_logistic::lpmf_with`]).

use super::ordered_logistic::{lpmf_with, rng_with};
use super::{MvArg, MvDraw, MvSig};
use crate::distributions::args::{DistError, Term};
use crate::distributions::special::{
    HALF_LOG_TWO_PI, log_diff_exp, std_normal_lcdf, std_normal_lcdf_deriv,
};
use rand::Rng;

/// log p(y | η, c) and (∂/∂η, ∂/∂c_{y−1}, ∂/∂c_y) for 1-based y; with r(x) = φ(x)/Φ(x):
/// y = 1: log Φ(c₁ − η), ∂/∂η = −r(c₁ − η); y = K: log Φ(η − c_{K−1}), ∂/∂η = r(η − c_{K−1});
/// otherwise ∂/∂a = φ(a)/p, ∂/∂b = −φ(b)/p.
fn one(y: usize, eta: f64, c: &[f64]) -> (f64, f64, f64, f64) {
    let k = c.len() + 1;
    if k == 1 {
        return (0.0, 0.0, 0.0, 0.0);
    }
    if y == 1 {
        let x = c[0] - eta;
        let r = std_normal_lcdf_deriv(x);
        (std_normal_lcdf(x), -r, 0.0, r)
    } else if y == k {
        let x = eta - c[k - 2];
        let r = std_normal_lcdf_deriv(x);
        (std_normal_lcdf(x), r, -r, 0.0)
    } else {
        let a = eta - c[y - 2];
        let b = eta - c[y - 1];
        let v = if a + b <= 0.0 {
            log_diff_exp(std_normal_lcdf(a), std_normal_lcdf(b))
        } else {
            log_diff_exp(std_normal_lcdf(-b), std_normal_lcdf(-a))
        };
        let da = (-0.5 * a * a - HALF_LOG_TWO_PI - v).exp();
        let db = -(-0.5 * b * b - HALF_LOG_TWO_PI - v).exp();
        (v, da + db, -da, -db)
    }
}

/// `ordered_probit_lpmf(k | η, c)` into `term`: k an int or array of N ints, η a real or a
/// vector of N, c one vector or an array of N vectors of K − 1 cut-points. The mass has no
/// constant terms, so `~` drops nothing. Errors: as `ordered_logistic_lpmf`.
pub fn lpmf(
    sig: &MvSig,
    args: &[MvArg],
    is_var: &[bool],
    propto: bool,
    term: &mut Term,
) -> Result<(), DistError> {
    lpmf_with(sig, args, is_var, propto, term, one)
}

/// `ordered_probit_rng(η, c)`: a category in 1..K by inverse CDF.
pub fn rng<R: Rng + ?Sized>(
    sig: &MvSig,
    params: &[MvArg],
    rng: &mut R,
) -> Result<MvDraw, DistError> {
    rng_with(sig, params, rng, one)
}
