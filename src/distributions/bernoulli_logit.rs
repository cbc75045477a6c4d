//! Bernoulli distribution on the logit scale: log p(n | α) = n log σ(α) + (1 − n) log σ(−α),
//! σ the logistic sigmoid.

use super::args::requirement::NOT_NAN;
use super::args::{Arg, DistError, Term, check_each};
use super::lanes;
use super::registry::Family;
use super::special::{inv_logit, logit_terms};
use rand::Rng;

/// Checks α not NaN (args[1..]; Stan's `bernoulli_logit_lpmf` checks).
pub fn check_params(args: &[Arg]) -> Result<(), DistError> {
    check_each(Family::BernoulliLogit.sig(), args, 1, NOT_NAN, |x| {
        !x.is_nan()
    })
}

/// Bernoulli-logit log mass summed over `n` broadcast elements; args = (n, α).
///
/// Stable form: with e = exp(−|α|), log σ(α) = −(max(−α, 0) + log1p(e)) and
/// log σ(−α) = −(max(α, 0) + log1p(e)), so one exp and one log1p per element, no overflow for
/// any finite or infinite α. ∂/∂α = n − σ(α). The variate is data (no partial).
/// Errors: n not 0 or 1, α NaN.
pub fn lpmf(args: &[Arg], is_var: &[bool], propto: bool, n: usize) -> Result<Term, DistError> {
    let (y, alpha) = (args[0], args[1]);
    if let (Arg::Vector(ys), Arg::Vector(alphas)) = (y, alpha)
        && n > 1
        && ys.len() == n
        && alphas.len() == n
        && (!propto || is_var[1])
    {
        // One pass: a NaN logit makes the sum NaN, and only then are the rows checked, for the
        // error.
        let mut term = Term::zeros(args, is_var);
        let partial = term.partials[1].as_mut_slice();
        let partial = (partial.len() == n).then_some(partial);
        term.value = lpmf_rows(ys, alphas, partial);
        if term.value.is_nan() {
            check_params(args)?;
        }
        return Ok(term);
    }
    check_params(args)?;
    let mut term = Term::zeros(args, is_var);
    if propto && !is_var[1] {
        return Ok(term);
    }
    let hoisted = match alpha {
        Arg::Scalar(a) => Some(logit_terms(a)),
        Arg::Vector(_) => None,
    };
    let mut value = 0.0;
    for i in 0..n {
        let (log_s, log_s_neg, s, s_neg) = hoisted.unwrap_or_else(|| logit_terms(alpha.at(i)));
        if y.at(i) == 1.0 {
            value += log_s;
            term.add_partial(1, i, s_neg);
        } else {
            value += log_s_neg;
            term.add_partial(1, i, -s);
        }
    }
    term.value = value;
    Ok(term)
}

/// Rows per chunk of [`lpmf_rows`]: the chunk's log masses are kept on the stack and summed
/// in a fixed order.
const CHUNK: usize = 64;

/// Σᵢ log p(yᵢ | αᵢ) over rows with vector y (0 or 1, checked by the caller) and α, writing
/// ∂/∂αᵢ = yᵢ − σ(αᵢ) into `partial` when given (same length). The formulas of [`lpmf`] with
/// e = exp(−|α|) and log1p(e) from the branch-free [`lanes`] functions, so that the loop is
/// vectorised: on x86-64 it runs compiled for AVX-512F or AVX2 when the CPU has them
/// (logistic regressions spent most of their gradient in glibc's scalar `exp` and `log`).
/// Without FMA no multiply-add is fused, so every path performs the same IEEE operations and
/// the results are bit-identical whatever the CPU (tested). The sum is taken in chunks of
/// [`CHUNK`] rows with four interleaved accumulators, a fixed order.
pub fn lpmf_rows(y: &[f64], alpha: &[f64], partial: Option<&mut [f64]>) -> f64 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU supports AVX-512F (checked just above).
            return unsafe { lpmf_rows_avx512(y, alpha, partial) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above).
            return unsafe { lpmf_rows_avx2(y, alpha, partial) };
        }
    }
    lpmf_rows_generic(y, alpha, partial)
}

/// The loop of [`lpmf_rows`] as plain Rust, for every target.
#[inline(always)]
pub fn lpmf_rows_generic(y: &[f64], alpha: &[f64], mut partial: Option<&mut [f64]>) -> f64 {
    let mut value = 0.0;
    let mut vals = [0.0; CHUNK];
    let mut r0 = 0;
    while r0 < alpha.len() {
        let nb = CHUNK.min(alpha.len() - r0);
        let (a, yb) = (&alpha[r0..r0 + nb], &y[r0..r0 + nb]);
        let vals = &mut vals[..nb];
        match partial.as_deref_mut() {
            Some(p) => {
                let p = &mut p[r0..r0 + nb];
                for (((v, d), &a), &y) in vals.iter_mut().zip(p.iter_mut()).zip(a).zip(yb) {
                    let (lv, ld) = row(y, a);
                    *v = lv;
                    *d = ld;
                }
            }
            None => {
                for ((v, &a), &y) in vals.iter_mut().zip(a).zip(yb) {
                    *v = row(y, a).0;
                }
            }
        }
        let mut acc = [0.0; 4];
        let mut quads = vals.chunks_exact(4);
        for q in &mut quads {
            for (s, x) in acc.iter_mut().zip(q) {
                *s += x;
            }
        }
        for (s, x) in acc.iter_mut().zip(quads.remainder()) {
            *s += x;
        }
        value += (acc[0] + acc[1]) + (acc[2] + acc[3]);
        r0 += nb;
    }
    value
}

/// (log p(y | α), ∂/∂α) for one row, branch-free: `special::logit_terms`' formulas,
/// with σ(−|α|) = e·σ(|α|) (one division).
#[inline(always)]
fn row(y: f64, a: f64) -> (f64, f64) {
    let e = lanes::exp_neg(a.abs());
    let l = lanes::log1p_unit(e);
    let big = 1.0 / (1.0 + e);
    let small = e * big;
    let pos = a >= 0.0;
    let s = if pos { big } else { small };
    let s_neg = if pos { small } else { big };
    if y == 1.0 {
        (-((-a).max(0.0) + l), s_neg)
    } else {
        (-(a.max(0.0) + l), -s)
    }
}

/// [`lpmf_rows_generic`] compiled for AVX2 (4 lanes), FMA off.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub unsafe fn lpmf_rows_avx2(y: &[f64], alpha: &[f64], partial: Option<&mut [f64]>) -> f64 {
    lpmf_rows_generic(y, alpha, partial)
}

/// [`lpmf_rows_generic`] compiled for AVX-512F (8 lanes), FMA off.
///
/// # Safety
/// The CPU must support AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub unsafe fn lpmf_rows_avx512(y: &[f64], alpha: &[f64], partial: Option<&mut [f64]>) -> f64 {
    lpmf_rows_generic(y, alpha, partial)
}

/// One draw from bernoulli_logit(α), returned as 0.0 or 1.0; `params` = (α), checked.
pub fn rng<R: Rng + ?Sized>(params: &[f64], rng: &mut R) -> f64 {
    super::bernoulli::rng(&[inv_logit(params[0])], rng)
}
