//! Categorical distribution over 1..K: log p(y | θ) = log θ_y (θ a simplex), and its logit form
//! log p(y | β) = β_y − log Σₖ exp βₖ (Stan Functions Reference, "Categorical distribution").
//! Summed over an array of outcomes y₁..y_N sharing one parameter vector:
//! ∂/∂θₖ = nₖ/θₖ; ∂/∂βₖ = nₖ − N softmax(β)ₖ, nₖ the count of outcome k.

use super::{MvArg, MvDraw, MvSig, check_finite, check_simplex, err, vector_len};
use crate::distributions::args::{DistError, Term};
use rand::Rng;
use rand::RngExt;

/// The outcomes as 1-based categories, each checked to lie in 1..=k.
fn outcomes(sig: &MvSig, y: &MvArg, k: usize) -> Result<Vec<usize>, DistError> {
    y.data
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            if v >= 1.0 && v <= k as f64 && v.fract() == 0.0 {
                Ok(v as usize)
            } else {
                let which = if y.array.is_some() {
                    format!("{}[{}]", sig.variate.name, i + 1)
                } else {
                    sig.variate.name.to_string()
                };
                Err(err(
                    sig,
                    format!("{which} is {v}, but must be in the interval [1, {k}]"),
                ))
            }
        })
        .collect()
}

/// `categorical_lpmf(y | θ)` into `term`. Errors: θ not a simplex, an outcome outside 1..K.
pub fn lpmf(
    sig: &MvSig,
    args: &[MvArg],
    is_var: &[bool],
    propto: bool,
    term: &mut Term,
) -> Result<(), DistError> {
    let theta = &args[1];
    let k = vector_len(sig, theta, 1)?;
    check_simplex(sig, theta.data, 1)?;
    let ys = outcomes(sig, &args[0], k)?;
    if propto && !is_var[1] {
        return Ok(());
    }
    for &y in &ys {
        term.value += theta.data[y - 1].ln();
        if is_var[1] {
            term.partials[1][y - 1] += 1.0 / theta.data[y - 1];
        }
    }
    Ok(())
}

/// `categorical_logit_lpmf(y | β)` into `term`. Errors: β not finite, an outcome outside 1..K.
pub fn logit_lpmf(
    sig: &MvSig,
    args: &[MvArg],
    is_var: &[bool],
    propto: bool,
    term: &mut Term,
) -> Result<(), DistError> {
    let beta = &args[1];
    let k = vector_len(sig, beta, 1)?;
    check_finite(sig, beta, 1)?;
    let ys = outcomes(sig, &args[0], k)?;
    if propto && !is_var[1] {
        return Ok(());
    }
    let max = beta.data.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let sum_exp: f64 = beta.data.iter().map(|b| (b - max).exp()).sum();
    let lse = max + sum_exp.ln();
    let n = ys.len() as f64;
    for &y in &ys {
        term.value += beta.data[y - 1] - lse;
        if is_var[1] {
            term.partials[1][y - 1] += 1.0;
        }
    }
    if is_var[1] {
        for (p, b) in term.partials[1].iter_mut().zip(beta.data) {
            *p -= n * (b - lse).exp();
        }
    }
    Ok(())
}

/// `categorical_rng(θ)` / `categorical_logit_rng(β)`: inverse-CDF draw of a category in 1..K.
pub fn rng<R: Rng + ?Sized>(
    sig: &MvSig,
    params: &[MvArg],
    rng: &mut R,
) -> Result<MvDraw, DistError> {
    let p = &params[0];
    vector_len(sig, p, 1)?;
    let probs: Vec<f64> = if sig.family == super::MvFamily::Categorical {
        check_simplex(sig, p.data, 1)?;
        p.data.to_vec()
    } else {
        check_finite(sig, p, 1)?;
        let max = p.data.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = p.data.iter().map(|b| (b - max).exp()).collect();
        let s: f64 = e.iter().sum();
        e.iter().map(|x| x / s).collect()
    };
    Ok(MvDraw::Int(draw_index(&probs, rng) as i64 + 1))
}

/// A 0-based index drawn with probabilities `probs` (summing to 1 up to rounding).
pub(super) fn draw_index<R: Rng + ?Sized>(probs: &[f64], rng: &mut R) -> usize {
    let u: f64 = rng.random();
    let mut cum = 0.0;
    for (i, &p) in probs.iter().enumerate() {
        cum += p;
        if u < cum {
            return i;
        }
    }
    probs.len() - 1
}

/// `categorical_logit_lpmf(y | Eta)` over the rows of an `N × K` log-odds matrix (a bayesc
/// extension of Stan's signature): Σₙ [Eta[n, yₙ] − log Σₖ exp Eta[n, k]], each row's
/// log-sum-exp taken from its maximum. `eta` is column-major; `grad`, when given (length N·K,
/// column-major), receives ∂/∂Eta[n, k] = [k = yₙ] − softmax(Eta[n])ₖ.
///
/// Errors: `y` not of length N (one outcome per row), an outcome outside 1..K, a non-finite
/// log odds.
pub fn logit_rows_lpmf(
    sig: &MvSig,
    y: &MvArg,
    eta: &[f64],
    n: usize,
    k: usize,
    mut grad: Option<&mut [f64]>,
) -> Result<f64, DistError> {
    if y.data.len() != n {
        return Err(err(
            sig,
            format!(
                "the log-odds matrix has {n} rows but there are {} outcomes; \
                 give one row of log odds per outcome",
                y.data.len()
            ),
        ));
    }
    if let Some(x) = eta.iter().find(|x| !x.is_finite()) {
        return Err(err(
            sig,
            format!("log odds parameter is {x}, but must be finite"),
        ));
    }
    let ys = outcomes(sig, y, k)?;
    let mut total = 0.0;
    for (i, &yi) in ys.iter().enumerate() {
        let m = (0..k)
            .map(|j| eta[i + j * n])
            .fold(f64::NEG_INFINITY, f64::max);
        let se: f64 = (0..k).map(|j| (eta[i + j * n] - m).exp()).sum();
        let lse = m + se.ln();
        total += eta[i + (yi - 1) * n] - lse;
        if let Some(g) = grad.as_deref_mut() {
            for j in 0..k {
                let o = i + j * n;
                g[o] = if j + 1 == yi { 1.0 } else { 0.0 } - (eta[o] - lse).exp();
            }
        }
    }
    Ok(total)
}
