//! Dirichlet distribution on the simplex:
//! log p(θ | α) = log Γ(Σα) − Σ log Γ(αₖ) + Σ (αₖ − 1) log θₖ (Stan Functions Reference, "Dirichlet distribution"), with partials
//! ∂/∂θₖ = (αₖ − 1)/θₖ, ∂/∂αₖ = ψ(Σα) − ψ(αₖ) + log θₖ.

use super::{MvArg, MvDraw, MvSig, broadcast_count, check_simplex, err, vector_len};
use crate::distributions::args::{DistError, Term};
use crate::distributions::special::{digamma, lgamma};
use rand::Rng;
use rand::RngExt;
use rand_distr::Distribution;

fn check_alpha(sig: &MvSig, alpha: &[f64]) -> Result<(), DistError> {
    for (i, &a) in alpha.iter().enumerate() {
        if !(a > 0.0 && a.is_finite()) {
            return Err(err(
                sig,
                format!(
                    "{}[{}] is {}, but must be positive finite",
                    sig.params[0].name,
                    i + 1,
                    crate::words::shown_zero(a)
                ),
            ));
        }
    }
    Ok(())
}

/// `dirichlet_lpdf(θ | α)` into `term`; θ and α a vector each or arrays of vectors (one may be
/// a single vector, broadcast). Errors: sizes that differ, α not positive finite, θ not a
/// simplex.
pub fn lpdf(
    sig: &MvSig,
    args: &[MvArg],
    is_var: &[bool],
    propto: bool,
    term: &mut Term,
) -> Result<(), DistError> {
    let (theta, alpha) = (&args[0], &args[1]);
    let kt = vector_len(sig, theta, 0)?;
    let ka = vector_len(sig, alpha, 1)?;
    if kt != ka {
        return Err(err(
            sig,
            format!(
                "size of {} ({kt}) and size of {} ({ka}) must match in size",
                sig.variate.name, sig.params[0].name
            ),
        ));
    }
    let n = broadcast_count(sig, args, &[0, 1])?;
    for i in 0..alpha.count() {
        check_alpha(sig, alpha.elem(i))?;
    }
    for i in 0..theta.count() {
        check_simplex(sig, theta.elem(i), 0)?;
    }
    if propto && !is_var.iter().any(|&v| v) {
        return Ok(());
    }
    for obs in 0..n {
        let (t, a) = (theta.elem_b(obs), alpha.elem_b(obs));
        let sum_a: f64 = a.iter().sum();
        if !propto || is_var[1] {
            term.value += lgamma(sum_a) - a.iter().map(|&x| lgamma(x)).sum::<f64>();
        }
        let psi_sum = if is_var[1] { digamma(sum_a) } else { 0.0 };
        let (ot, oa) = (
            if theta.array.is_some() { obs * kt } else { 0 },
            if alpha.array.is_some() { obs * kt } else { 0 },
        );
        for j in 0..kt {
            let log_t = t[j].ln();
            if !propto || is_var[0] || is_var[1] {
                // (α − 1) log θ with the convention 0 · log 0 = 0 (α = 1 at a face of the simplex).
                if a[j] != 1.0 {
                    term.value += (a[j] - 1.0) * log_t;
                }
            }
            if is_var[0] {
                term.partials[0][ot + j] += (a[j] - 1.0) / t[j];
            }
            if is_var[1] {
                term.partials[1][oa + j] += psi_sum - digamma(a[j]) + log_t;
            }
        }
    }
    Ok(())
}

/// `dirichlet_rng(α)`: independent Gamma(αₖ, 1) draws normalised to sum 1.
pub fn rng<R: Rng + ?Sized>(
    sig: &MvSig,
    params: &[MvArg],
    rng: &mut R,
) -> Result<MvDraw, DistError> {
    let alpha = params[0];
    vector_len(sig, &alpha, 1)?;
    check_alpha(sig, alpha.data)?;
    let mut g: Vec<f64> = alpha
        .data
        .iter()
        .map(|&a| {
            rand_distr::Gamma::new(a, 1.0)
                .expect("α checked positive finite")
                .sample(rng)
        })
        .collect();
    let s: f64 = g.iter().sum();
    if s > 0.0 {
        g.iter_mut().for_each(|x| *x /= s);
    } else {
        // Every draw underflowed (all α tiny): the mass sits on one vertex.
        let n = g.len();
        g.iter_mut().for_each(|x| *x = 0.0);
        g[rng.random_range(0..n)] = 1.0;
    }
    Ok(MvDraw::Vector(g))
}
