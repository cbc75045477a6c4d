//! Ordered logistic distribution over 1..K with location η and ordered cut-points c₁ < … < c_{K−1}
//! (Stan Functions Reference, "Ordered logistic distribution"), σ the logistic sigmoid:
//! p(1) = 1 − σ(η − c₁), p(k) = σ(η − c_{k−1}) − σ(η − c_k), p(K) = σ(η − c_{K−1}).
//!
//! The middle categories use σ(a) − σ(b) = σ(a) σ(−b) (1 − e^{b−a}) for a = η − c_{k−1} > b = η − c_k,
//! so log p(k) = log σ(a) + log σ(−b) + log(1 − e^{b−a}) has no cancellation;
//! ∂/∂a = σ(−a) + 1/(e^{a−b} − 1), ∂/∂b = −σ(b) − 1/(e^{a−b} − 1).

use super::{MvArg, MvDraw, MvSig, err, vector_len};
use crate::distributions::args::{DistError, Term};
use crate::distributions::special::{log1m_exp, logit_terms};
use rand::Rng;

/// The phrase of [`check_cuts`]'s error for cut-points out of order, which fit-level messages
/// look for ([`unordered_cuts_remedy`]).
pub const UNORDERED_CUTS: &str = "is not a valid ordered vector";

/// The cause and remedy to give when a fit failed (or its sampler was cut off) because the
/// log density could not be evaluated with cut-points out of order (`why` contains
/// [`UNORDERED_CUTS`]): a cut-point parameter declared as a plain `vector` lets the fit try
/// unordered values; `ordered[K-1]` cannot. `None` for any other error. [X]: fresh-user finding,
/// session 21: `vector[3] v` as the cut-points of `ordered_logistic_lpmf(2 | 0.5, v)` made QBVI,
/// IVON, BBB and MGVB fail with "the posterior is probably improper … give every parameter a
/// proper prior", and NUTS advise "<lower=0>".
pub fn unordered_cuts_remedy(why: &str) -> Option<String> {
    why.contains(UNORDERED_CUTS).then(|| {
        "The cut-points of ordered_logistic (and ordered_probit) must be strictly increasing, \
         and a cut-point parameter declared as a plain `vector[K-1]` lets the fit try values \
         that are not (the posterior then ends at the edge where two cut-points meet, which \
         is not a sign of an improper posterior): declare it `ordered[K-1]` (e.g. \
         `ordered[3] c;` instead of `vector[3] c;`), which keeps every value tried in order"
            .to_string()
    })
}

/// Stan's `check_ordered` and `check_finite` on one cut-point vector.
pub(super) fn check_cuts(sig: &MvSig, c: &[f64]) -> Result<(), DistError> {
    let name = sig.params[1].name;
    for (i, &x) in c.iter().enumerate() {
        if !x.is_finite() {
            return Err(err(
                sig,
                format!("{name}[{}] is {x}, but must be finite", i + 1),
            ));
        }
        if i > 0 && !(x > c[i - 1]) {
            return Err(err(
                sig,
                format!(
                    "{name} {UNORDERED_CUTS}. The element at {} is {x}, but should be greater than the previous element, {}",
                    i + 1,
                    c[i - 1]
                ),
            ));
        }
    }
    Ok(())
}

/// log p(y | η, c) and its derivatives (∂/∂η, ∂/∂c_{y−1}, ∂/∂c_y) for 1-based y.
fn one(y: usize, eta: f64, c: &[f64]) -> (f64, f64, f64, f64) {
    let k = c.len() + 1;
    if k == 1 {
        return (0.0, 0.0, 0.0, 0.0);
    }
    if y == 1 {
        // log σ(c₁ − η): derivative in x = η − c₁ is −σ(x).
        let (_, log_s_neg, s, _) = logit_terms(eta - c[0]);
        (log_s_neg, -s, 0.0, s)
    } else if y == k {
        let (log_s, _, _, s_neg) = logit_terms(eta - c[k - 2]);
        (log_s, s_neg, -s_neg, 0.0)
    } else {
        let a = eta - c[y - 2];
        let b = eta - c[y - 1];
        let (log_sa, _, _, sa_neg) = logit_terms(a);
        let (_, log_sb_neg, sb, _) = logit_terms(b);
        let v = log_sa + log_sb_neg + log1m_exp(b - a);
        let g = 1.0 / (a - b).exp_m1();
        let da = sa_neg + g;
        let db = -sb - g;
        (v, da + db, -da, -db)
    }
}

/// log p(y | η, c) of one outcome with (∂/∂η, ∂/∂c_{y−1}, ∂/∂c_y), for 1-based y.
pub(super) type OneFn = fn(usize, f64, &[f64]) -> (f64, f64, f64, f64);

/// `ordered_logistic_lpmf(k | η, c)` into `term`: k an int or array of N ints, η a real or a
/// vector of N, c one vector or an array of N vectors of K − 1 cut-points. Errors: an outcome
/// outside 1..K, η not finite, cut-points not finite or not strictly increasing, sizes that do
/// not match.
pub fn lpmf(
    sig: &MvSig,
    args: &[MvArg],
    is_var: &[bool],
    propto: bool,
    term: &mut Term,
) -> Result<(), DistError> {
    lpmf_with(sig, args, is_var, propto, term, one)
}

/// The shared body of the ordered families ([`lpmf`], `ordered_probit`): argument checks and
/// broadcasting, with `one` giving each outcome's log mass and partials.
pub(super) fn lpmf_with(
    sig: &MvSig,
    args: &[MvArg],
    is_var: &[bool],
    propto: bool,
    term: &mut Term,
    one: OneFn,
) -> Result<(), DistError> {
    let (y, eta, cuts) = (&args[0], &args[1], &args[2]);
    let kc = vector_len(sig, cuts, 2)?;
    let k = kc + 1;
    // η given as a vector counts as N observations (its length).
    let eta_n = if eta.data.len() == 1 && eta.array.is_none() {
        None
    } else {
        Some(eta.data.len())
    };
    let y_n = if y.array.is_some() {
        Some(y.data.len())
    } else {
        None
    };
    let mut common: Option<(usize, &str)> = None;
    for (m, name) in [
        (y_n, sig.variate.name),
        (eta_n, sig.params[0].name),
        (cuts.array, sig.params[1].name),
    ] {
        if let Some(m) = m {
            match common {
                None => common = Some((m, name)),
                Some((p, pn)) if p != m => {
                    return Err(err(
                        sig,
                        format!("size of {pn} ({p}) and size of {name} ({m}) must match in size"),
                    ));
                }
                _ => {}
            }
        }
    }
    if y_n.is_none() && eta_n.is_some() {
        return Err(err(
            sig,
            format!(
                "{} is a single int but {} has {} elements; use an array of ints",
                sig.variate.name,
                sig.params[0].name,
                eta.data.len()
            ),
        ));
    }
    let n = common.map_or(1, |(m, _)| m);
    for (i, &x) in eta.data.iter().enumerate() {
        if !x.is_finite() {
            let which = if eta_n.is_some() {
                format!("{}[{}]", sig.params[0].name, i + 1)
            } else {
                sig.params[0].name.to_string()
            };
            return Err(err(sig, format!("{which} is {x}, but must be finite")));
        }
    }
    for i in 0..cuts.count() {
        check_cuts(sig, cuts.elem(i))?;
    }
    for (i, &v) in y.data.iter().enumerate() {
        if !(v >= 1.0 && v <= k as f64) {
            let which = if y_n.is_some() {
                format!("{}[{}]", sig.variate.name, i + 1)
            } else {
                sig.variate.name.to_string()
            };
            return Err(err(
                sig,
                format!("{which} is {v}, but must be in the interval [1, {k}]"),
            ));
        }
    }
    if propto && !is_var.iter().any(|&v| v) {
        return Ok(());
    }
    for obs in 0..n {
        let yi = y.data[if y_n.is_some() { obs } else { 0 }] as usize;
        let ei = if eta_n.is_some() { obs } else { 0 };
        let c = cuts.elem_b(obs);
        let (v, d_eta, d_lo, d_hi) = one(yi, eta.data[ei], c);
        term.value += v;
        if is_var[1] {
            term.partials[1][ei] += d_eta;
        }
        if is_var[2] {
            let off = if cuts.array.is_some() { obs * kc } else { 0 };
            if yi >= 2 {
                term.partials[2][off + yi - 2] += d_lo;
            }
            if yi <= kc {
                term.partials[2][off + yi - 1] += d_hi;
            }
        }
    }
    Ok(())
}

/// `ordered_logistic_rng(η, c)`: a category in 1..K by inverse CDF.
pub fn rng<R: Rng + ?Sized>(
    sig: &MvSig,
    params: &[MvArg],
    rng: &mut R,
) -> Result<MvDraw, DistError> {
    rng_with(sig, params, rng, one)
}

/// The shared `_rng` of the ordered families: the probabilities of 1..K from `one`, then an
/// inverse-CDF draw.
pub(super) fn rng_with<R: Rng + ?Sized>(
    sig: &MvSig,
    params: &[MvArg],
    rng: &mut R,
    one: OneFn,
) -> Result<MvDraw, DistError> {
    let (eta, cuts) = (params[0].data[0], &params[1]);
    vector_len(sig, cuts, 2)?;
    if !eta.is_finite() {
        return Err(err(
            sig,
            format!("{} is {eta}, but must be finite", sig.params[0].name),
        ));
    }
    check_cuts(sig, cuts.data)?;
    let k = cuts.data.len() + 1;
    let probs: Vec<f64> = (1..=k).map(|y| one(y, eta, cuts.data).0.exp()).collect();
    Ok(MvDraw::Int(
        super::categorical::draw_index(&probs, rng) as i64 + 1,
    ))
}
