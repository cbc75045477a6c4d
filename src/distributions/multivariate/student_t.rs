//! Multivariate Student-t, multivariate normal in precision form, and the multivariate
//! Gaussian process in Cholesky form (Stan Functions Reference, "Multivariate Student-t
//! distribution", "Multivariate normal distribution, precision parameterization",
//! "Multivariate Gaussian process distribution, Cholesky parameterization"):
//!
//! log MultiStudentT(y | ν, μ, Σ) = log Γ((ν + K)/2) − log Γ(ν/2) − K/2 log(νπ) − ½ log det Σ
//! − (ν + K)/2 · log(1 + q/ν), q = (y − μ)ᵀΣ⁻¹(y − μ);
//! log MultiNormalPrec(y | μ, Ω) = −K/2 log 2π + ½ log det Ω − ½ (y − μ)ᵀΩ(y − μ);
//! log MultiGPCholesky(y | L, w) = Σᵢ log MultiNormal(yᵢ | 0, wᵢ⁻¹ L Lᵀ), yᵢ row i of the
//! K × N matrix y.

use super::linalg::{at, backward_solve, forward_solve, inverse_from_cholesky};
use super::matrix_checks::{cholesky_factor, log_diag_sum, square, symmetric_cholesky};
use super::normal::{sizes, sizes_at};
use super::{MvArg, MvDraw, MvSig, check_finite, err, vector_len};
use crate::distributions::args::{DistError, Term};
use crate::distributions::special::{HALF_LOG_TWO_PI, digamma, lgamma};
use rand::Rng;
use rand_distr::{ChiSquared, Distribution, StandardNormal};

const HALF_LOG_PI: f64 = 0.572_364_942_924_700_1;

/// Adds `sign · v` to the partials of argument `a` for observation `obs` (K entries).
fn add_vec(term: &mut Term, args: &[MvArg], a: usize, obs: usize, k: usize, sign: f64, v: &[f64]) {
    let off = if args[a].array.is_some() { obs * k } else { 0 };
    for (p, x) in term.partials[a][off..off + k].iter_mut().zip(v) {
        *p += sign * x;
    }
}

/// `multi_student_t_lpdf(y | ν, μ, Σ)` into `term` (y and μ vectors or arrays of vectors).
///
/// With r = y − μ, w = Σ⁻¹r, q = rᵀw and s = (ν + K)/(ν + q): ∂y = −s w, ∂μ = s w,
/// ∂Σ = ½(s w wᵀ − Σ⁻¹) per observation, ∂ν = ½ψ((ν + K)/2) − ½ψ(ν/2) − K/(2ν)
/// − ½ log(1 + q/ν) + (ν + K) q/(2ν(ν + q)).
/// Errors: ν not positive finite, sizes that do not match, μ not finite, y NaN, Σ not
/// symmetric positive definite.
pub fn lpdf(
    sig: &MvSig,
    args: &[MvArg],
    is_var: &[bool],
    propto: bool,
    term: &mut Term,
) -> Result<(), DistError> {
    let nu = args[1].data[0];
    if !(nu > 0.0 && nu.is_finite()) {
        return Err(err(
            sig,
            format!(
                "{} is {}, but must be positive finite",
                sig.params[0].name,
                crate::words::shown_zero(nu)
            ),
        ));
    }
    let (y, mu, s) = (args[0], args[2], args[3]);
    let (k, n) = sizes_at(sig, &[y, mu, s], [0, 2, 3])?;
    let l = symmetric_cholesky(sig, s.data, k, sig.params[2].name)?;
    if propto && !is_var.iter().any(|&v| v) {
        return Ok(());
    }
    let (kf, nf) = (k as f64, n as f64);
    if !propto || is_var[1] {
        term.value += nf * (lgamma(0.5 * (nu + kf)) - lgamma(0.5 * nu) - 0.5 * kf * nu.ln());
    }
    if !propto {
        term.value -= nf * kf * HALF_LOG_PI;
    }
    if !propto || is_var[3] {
        term.value -= nf * log_diag_sum(&l, k);
    }
    let mut ww = vec![0.0; if is_var[3] { k * k } else { 0 }];
    let mut d_nu = 0.0;
    let mut w = vec![0.0; k];
    for obs in 0..n {
        let (yi, mi) = (y.elem_b(obs), mu.elem_b(obs));
        for j in 0..k {
            w[j] = yi[j] - mi[j];
        }
        forward_solve(&l, k, &mut w);
        let q: f64 = w.iter().map(|v| v * v).sum();
        backward_solve(&l, k, &mut w);
        let log1p_q = (q / nu).ln_1p();
        term.value -= 0.5 * (nu + kf) * log1p_q;
        let sc = (nu + kf) / (nu + q);
        if is_var[0] {
            add_vec(term, args, 0, obs, k, -sc, &w);
        }
        if is_var[2] {
            add_vec(term, args, 2, obs, k, sc, &w);
        }
        if is_var[3] {
            for c in 0..k {
                for r in 0..k {
                    ww[r + c * k] += sc * w[r] * w[c];
                }
            }
        }
        d_nu += -0.5 * log1p_q + 0.5 * (nu + kf) * q / (nu * (nu + q));
    }
    if is_var[1] {
        term.partials[1][0] +=
            d_nu + nf * (0.5 * digamma(0.5 * (nu + kf)) - 0.5 * digamma(0.5 * nu) - 0.5 * kf / nu);
    }
    if is_var[3] {
        let inv = inverse_from_cholesky(&l, k);
        for (p, (a, b)) in term.partials[3].iter_mut().zip(ww.iter().zip(&inv)) {
            *p += 0.5 * (a - nf * b);
        }
    }
    Ok(())
}

/// `multi_student_t_rng(ν, μ, Σ)`: μ + L z √(ν/u), z standard normal, u ~ χ²(ν), L the
/// Cholesky factor of Σ; one vector per location when μ is an array. Errors: as [`lpdf`].
pub fn rng<R: Rng + ?Sized>(
    sig: &MvSig,
    params: &[MvArg],
    rng: &mut R,
) -> Result<MvDraw, DistError> {
    let nu = params[0].data[0];
    let (mu, s) = (params[1], params[2]);
    let args = [params[1], params[0], mu, s];
    let mut term = Term {
        value: 0.0,
        partials: vec![Vec::new(); 4],
    };
    lpdf(sig, &args, &[false; 4], true, &mut term)?;
    let k = mu.rows * mu.cols;
    let l = symmetric_cholesky(sig, s.data, k, sig.params[2].name)?;
    let chi = ChiSquared::new(nu).expect("ν checked positive finite");
    let mut out = Vec::new();
    for obs in 0..mu.count() {
        let mi = mu.elem_b(obs);
        let scale = (nu / chi.sample(rng)).sqrt();
        let z: Vec<f64> = (0..k).map(|_| StandardNormal.sample(rng)).collect();
        out.push(
            (0..k)
                .map(|r| mi[r] + scale * (0..=r).map(|c| at(&l, k, r, c) * z[c]).sum::<f64>())
                .collect::<Vec<f64>>(),
        );
    }
    Ok(if mu.array.is_some() {
        MvDraw::Vectors(out)
    } else {
        MvDraw::Vector(out.pop().expect("one draw for a single location"))
    })
}

/// `multi_normal_prec_lpdf(y | μ, Ω)` into `term`. With r = y − μ: ∂y = −Ωr, ∂μ = Ωr,
/// ∂Ω = ½(N Ω⁻¹ − Σ_obs r rᵀ). Errors: sizes that do not match, μ not finite, y NaN, Ω not
/// symmetric positive definite.
pub fn prec_lpdf(
    sig: &MvSig,
    args: &[MvArg],
    is_var: &[bool],
    propto: bool,
    term: &mut Term,
) -> Result<(), DistError> {
    let (k, n) = sizes(sig, args)?;
    let om = args[2].data;
    let l = symmetric_cholesky(sig, om, k, sig.params[1].name)?;
    if propto && !is_var.iter().any(|&v| v) {
        return Ok(());
    }
    let nf = n as f64;
    if !propto {
        term.value -= nf * k as f64 * HALF_LOG_TWO_PI;
    }
    if !propto || is_var[2] {
        term.value += nf * log_diag_sum(&l, k);
    }
    let mut rr = vec![0.0; if is_var[2] { k * k } else { 0 }];
    let mut r = vec![0.0; k];
    let mut g = vec![0.0; k];
    for obs in 0..n {
        let (yi, mi) = (args[0].elem_b(obs), args[1].elem_b(obs));
        for j in 0..k {
            r[j] = yi[j] - mi[j];
        }
        for (i, gi) in g.iter_mut().enumerate() {
            *gi = (0..k).map(|j| at(om, k, i, j) * r[j]).sum();
        }
        term.value -= 0.5 * r.iter().zip(&g).map(|(a, b)| a * b).sum::<f64>();
        if is_var[0] {
            add_vec(term, args, 0, obs, k, -1.0, &g);
        }
        if is_var[1] {
            add_vec(term, args, 1, obs, k, 1.0, &g);
        }
        if is_var[2] {
            for c in 0..k {
                for i in 0..k {
                    rr[i + c * k] += r[i] * r[c];
                }
            }
        }
    }
    if is_var[2] {
        let inv = inverse_from_cholesky(&l, k);
        for (p, (a, b)) in term.partials[2].iter_mut().zip(rr.iter().zip(&inv)) {
            *p += 0.5 * (nf * b - a);
        }
    }
    Ok(())
}

/// `multi_gp_cholesky_lpdf(y | L, w)` into `term`: y a K × N matrix, L the N × N lower
/// Cholesky factor of the kernel, w K positive inverse scales. With zᵢ = L⁻¹yᵢᵀ and
/// aᵢ = L⁻ᵀzᵢ: ∂yᵢ = −wᵢaᵢ, ∂wᵢ = N/(2wᵢ) − ½‖zᵢ‖², ∂L = Σᵢ wᵢ aᵢzᵢᵀ − K diag(1/Lⱼⱼ) (lower
/// triangle). Errors: sizes that do not match, y not finite, L not a Cholesky factor, w not
/// positive finite.
pub fn gp_cholesky_lpdf(
    sig: &MvSig,
    args: &[MvArg],
    is_var: &[bool],
    propto: bool,
    term: &mut Term,
) -> Result<(), DistError> {
    let (y, l_arg, w_arg) = (&args[0], &args[1], &args[2]);
    let n = square(sig, l_arg, sig.params[0].name)?;
    let kw = vector_len(sig, w_arg, 2)?;
    if y.array.is_some() || y.rows != kw || y.cols != n {
        return Err(err(
            sig,
            format!(
                "{} must be a {kw} × {n} matrix (size of {} × side of {}), found {} × {}",
                sig.variate.name, sig.params[1].name, sig.params[0].name, y.rows, y.cols
            ),
        ));
    }
    check_finite(sig, y, 0)?;
    let l = l_arg.data;
    cholesky_factor(sig, l, n, sig.params[0].name)?;
    for (i, &wi) in w_arg.data.iter().enumerate() {
        if !(wi > 0.0 && wi.is_finite()) {
            return Err(err(
                sig,
                format!(
                    "{}[{}] is {}, but must be positive finite",
                    sig.params[1].name,
                    i + 1,
                    crate::words::shown_zero(wi)
                ),
            ));
        }
    }
    if propto && !is_var.iter().any(|&v| v) {
        return Ok(());
    }
    let (kf, nf) = (kw as f64, n as f64);
    if !propto {
        term.value -= kf * nf * HALF_LOG_TWO_PI;
    }
    if !propto || is_var[1] {
        term.value -= kf * log_diag_sum(l, n);
    }
    if !propto || is_var[2] {
        term.value += 0.5 * nf * w_arg.data.iter().map(|w| w.ln()).sum::<f64>();
    }
    let mut z = vec![0.0; n];
    let mut a = vec![0.0; n];
    for i in 0..kw {
        let wi = w_arg.data[i];
        for j in 0..n {
            z[j] = y.data[i + j * kw];
        }
        forward_solve(l, n, &mut z);
        let zz: f64 = z.iter().map(|v| v * v).sum();
        term.value -= 0.5 * wi * zz;
        if is_var[2] {
            term.partials[2][i] += 0.5 * nf / wi - 0.5 * zz;
        }
        if is_var[0] || is_var[1] {
            a.copy_from_slice(&z);
            backward_solve(l, n, &mut a);
        }
        if is_var[0] {
            for j in 0..n {
                term.partials[0][i + j * kw] -= wi * a[j];
            }
        }
        if is_var[1] {
            let p = &mut term.partials[1];
            for c in 0..n {
                for r in c..n {
                    p[r + c * n] += wi * a[r] * z[c];
                }
            }
        }
    }
    if is_var[1] {
        for c in 0..n {
            term.partials[1][c + c * n] -= kf / at(l, n, c, c);
        }
    }
    Ok(())
}
