//! Numerical integrators behind `ode_rk45` and `ode_bdf` (Stan Functions Reference, "Ordinary
//! Differential Equation (ODE) Solvers"), on plain `f64` state vectors.
//!
//! - [`rk45`]: the explicit Dormand–Prince 5(4) pair with local extrapolation and step-size
//!   control (Dormand & Prince 1980; Hairer, Nørsett & Wanner, *Solving ODEs I*, §II.4–II.5),
//!   for non-stiff systems;
//! - [`bdf`]: variable-order (1–5), variable-step backward differentiation formulas in the
//!   quasi-constant step-size form of Shampine & Reichelt (1997, *The MATLAB ODE Suite*, §2)
//!   with a modified Newton iteration (Hairer & Wanner, *Solving ODEs II*, §III.1, §IV.8), for
//!   stiff systems.
//!
//! Gradients of the solution are obtained by forward sensitivity analysis (Hairer, Nørsett &
//! Wanner I, §I.14): [`Coupled`] appends to the state `y` (size n) the sensitivities
//! `S_k = ∂y/∂θ_k` for k = 1..K, which obey `S_k' = J_y S_k + ∂f/∂θ_k` with
//! `S_k(t0) = ∂y0/∂θ_k`, and both integrators solve the coupled system of size n(K + 1), with
//! the error control over all of it (as Stan's coupled ODE system does).

pub(crate) mod bdf;
pub(crate) mod rk45;
#[cfg(test)]
mod tests;

use super::value::Fault;

/// Tolerances and step budget of one solve (Stan's `rtol`, `atol`, `max_num_steps`).
#[derive(Clone, Copy, Debug)]
pub struct OdeOptions {
    /// Relative tolerance (> 0).
    pub rtol: f64,
    /// Absolute tolerance (> 0).
    pub atol: f64,
    /// Most steps (accepted or rejected) between two consecutive output times.
    pub max_num_steps: u64,
}

impl OdeOptions {
    /// Stan's defaults (Stan User's Guide, "Control parameters for ODE solving"): for
    /// `ode_rk45` rtol = atol = 1e-6 and 10^6 steps, for `ode_bdf` rtol = atol = 1e-10 and
    /// 10^8 steps.
    pub fn stan_default(stiff: bool) -> Self {
        if stiff {
            OdeOptions {
                rtol: 1e-10,
                atol: 1e-10,
                max_num_steps: 100_000_000,
            }
        } else {
            OdeOptions {
                rtol: 1e-6,
                atol: 1e-6,
                max_num_steps: 1_000_000,
            }
        }
    }
}

/// A system `y' = F(t, y)` as the integrators see it.
///
/// The state is `dim() / block()` blocks of `block()` components; the Newton iteration of
/// [`bdf`] uses one `block() × block()` matrix `∂F₀/∂y₀` for every block (exact for the state
/// block, and for the sensitivity blocks up to second derivatives of f — the "simultaneous
/// corrector" of Maly & Petzold 1996).
pub trait OdeSystem {
    /// Total number of components.
    fn dim(&self) -> usize;
    /// Size of one block (the number of state variables n).
    fn block(&self) -> usize;
    /// Writes `F(t, y)` into `dy` (both of length `dim()`).
    fn rhs(&mut self, t: f64, y: &[f64], dy: &mut [f64]) -> Result<(), Fault>;
    /// Writes `∂F₀/∂y₀` at (t, y) (n × n, row-major) into `jac`: the Jacobian of the first block.
    fn jacobian(&mut self, t: f64, y: &[f64], jac: &mut [f64]) -> Result<(), Fault>;
}

/// The user's vector field `f(t, y)` with its Jacobians, as [`Coupled`] needs it.
pub trait VectorField {
    /// Number of state variables n.
    fn n(&self) -> usize;
    /// Number of parameters p that f depends on (besides y).
    fn p(&self) -> usize;
    /// Writes f(t, y) (length n) into `dy`; when `jac` is given, also `∂f/∂y` (n × n,
    /// row-major) and `∂f/∂θ` (n × p, row-major) at the same point.
    fn eval(
        &mut self,
        t: f64,
        y: &[f64],
        dy: &mut [f64],
        jac: Option<(&mut [f64], &mut [f64])>,
    ) -> Result<(), Fault>;
}

/// A vector field with its forward sensitivity equations (see the module documentation).
///
/// The augmented state is `[y, S_1, …, S_K]`, each of length n; column k is the derivative with
/// respect to the k-th input of the solve, which is either the parameter `theta_col[k]` of f or
/// an input that only enters `y0` (`None`: then `∂f/∂θ_k = 0`).
pub struct Coupled<F> {
    /// The vector field.
    pub f: F,
    /// For each sensitivity column, the index of its parameter of f, if any.
    pub theta_col: Vec<Option<usize>>,
    jy: Vec<f64>,
    jp: Vec<f64>,
}

impl<F: VectorField> Coupled<F> {
    /// The coupled system of `f` with one sensitivity column per entry of `theta_col`.
    pub fn new(f: F, theta_col: Vec<Option<usize>>) -> Self {
        let (n, p) = (f.n(), f.p());
        Coupled {
            f,
            theta_col,
            jy: vec![0.0; n * n],
            jp: vec![0.0; n * p],
        }
    }
}

impl<F: VectorField> OdeSystem for Coupled<F> {
    fn dim(&self) -> usize {
        self.f.n() * (1 + self.theta_col.len())
    }

    fn block(&self) -> usize {
        self.f.n()
    }

    fn rhs(&mut self, t: f64, y: &[f64], dy: &mut [f64]) -> Result<(), Fault> {
        let (n, p) = (self.f.n(), self.f.p());
        if self.theta_col.is_empty() {
            return self.f.eval(t, &y[..n], &mut dy[..n], None);
        }
        self.f
            .eval(t, &y[..n], &mut dy[..n], Some((&mut self.jy, &mut self.jp)))?;
        for (k, col) in self.theta_col.iter().enumerate() {
            let s = &y[n * (k + 1)..n * (k + 2)];
            let ds = &mut dy[n * (k + 1)..n * (k + 2)];
            for i in 0..n {
                let row = &self.jy[i * n..(i + 1) * n];
                let mut acc: f64 = row.iter().zip(s).map(|(a, b)| a * b).sum();
                if let Some(c) = col {
                    acc += self.jp[i * p + c];
                }
                ds[i] = acc;
            }
        }
        Ok(())
    }

    fn jacobian(&mut self, t: f64, y: &[f64], jac: &mut [f64]) -> Result<(), Fault> {
        let n = self.f.n();
        let mut dy = vec![0.0; n];
        self.f.eval(t, &y[..n], &mut dy, Some((jac, &mut self.jp)))
    }
}

/// Why a solve failed.
#[derive(Clone, Debug)]
pub enum OdeFailure {
    /// More than `max_num_steps` steps between two output times.
    MaxSteps {
        /// Where the integration stopped.
        t: f64,
        /// The output time it was heading for.
        target: f64,
    },
    /// The state or its derivative became NaN or infinite and smaller steps did not help.
    NonFinite {
        /// Where the integration stopped.
        t: f64,
    },
    /// The step size fell below the resolution of t (the problem is singular or too stiff for
    /// the method).
    StepTooSmall {
        /// Where the integration stopped.
        t: f64,
        /// The step size.
        h: f64,
    },
    /// The system function failed.
    Rhs(Fault),
}

impl From<Fault> for OdeFailure {
    fn from(f: Fault) -> Self {
        OdeFailure::Rhs(f)
    }
}

/// Root-mean-square norm of `v / (atol + rtol · max(|a|, |b|))` (Hairer, Nørsett & Wanner I,
/// §II.4, eq. 4.11).
pub(crate) fn scaled_rms(v: &[f64], a: &[f64], b: &[f64], o: &OdeOptions) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let s: f64 = v
        .iter()
        .zip(a.iter().zip(b))
        .map(|(x, (p, q))| {
            let sc = o.atol + o.rtol * p.abs().max(q.abs());
            (x / sc) * (x / sc)
        })
        .sum();
    (s / v.len() as f64).sqrt()
}

/// An initial step size for a method of order `order` (Hairer, Nørsett & Wanner I, §II.4,
/// "Starting step size"), capped at `span` (the distance to the last output time).
pub(crate) fn initial_step(
    sys: &mut dyn OdeSystem,
    t0: f64,
    y0: &[f64],
    f0: &[f64],
    order: usize,
    span: f64,
    o: &OdeOptions,
) -> Result<f64, OdeFailure> {
    let d0 = scaled_rms(y0, y0, y0, o);
    let d1 = scaled_rms(f0, y0, y0, o);
    let h0 = if d0 < 1e-5 || d1 < 1e-5 {
        1e-6
    } else {
        0.01 * d0 / d1
    };
    let h0 = h0.min(span);
    let y1: Vec<f64> = y0.iter().zip(f0).map(|(y, f)| y + h0 * f).collect();
    let mut f1 = vec![0.0; y0.len()];
    sys.rhs(t0 + h0, &y1, &mut f1)?;
    let df: Vec<f64> = f1.iter().zip(f0).map(|(a, b)| a - b).collect();
    let d2 = scaled_rms(&df, y0, y0, o) / h0;
    let m = d1.max(d2);
    let h1 = if !m.is_finite() {
        h0 * 1e-3
    } else if m <= 1e-15 {
        (h0 * 1e-3).max(1e-6)
    } else {
        (0.01 / m).powf(1.0 / (order as f64 + 1.0))
    };
    Ok((100.0 * h0).min(h1).min(span))
}

/// Whether every element is finite.
pub(crate) fn all_finite(v: &[f64]) -> bool {
    v.iter().all(|x| x.is_finite())
}

/// In-place LU factorisation with partial pivoting of the n × n row-major matrix `a`; false when
/// a pivot is zero or not finite (the matrix is singular to working precision).
pub(crate) fn lu_factor(a: &mut [f64], n: usize, piv: &mut [usize]) -> bool {
    for k in 0..n {
        let mut p = k;
        for i in k + 1..n {
            if a[i * n + k].abs() > a[p * n + k].abs() {
                p = i;
            }
        }
        piv[k] = p;
        let pivot = a[p * n + k];
        if pivot == 0.0 || !pivot.is_finite() {
            return false;
        }
        if p != k {
            for j in 0..n {
                a.swap(k * n + j, p * n + j);
            }
        }
        for i in k + 1..n {
            let l = a[i * n + k] / pivot;
            a[i * n + k] = l;
            for j in k + 1..n {
                a[i * n + j] -= l * a[k * n + j];
            }
        }
    }
    true
}

/// Solves `A x = b` in place given the factors of [`lu_factor`].
pub(crate) fn lu_solve(lu: &[f64], n: usize, piv: &[usize], b: &mut [f64]) {
    for k in 0..n {
        b.swap(k, piv[k]);
    }
    for i in 0..n {
        let mut s = b[i];
        for j in 0..i {
            s -= lu[i * n + j] * b[j];
        }
        b[i] = s;
    }
    for i in (0..n).rev() {
        let mut s = b[i];
        for j in i + 1..n {
            s -= lu[i * n + j] * b[j];
        }
        b[i] = s / lu[i * n + i];
    }
}

/// Checks the output times: finite, after `t0` and non-decreasing. Returns the message of the
/// first violation.
pub fn check_times(t0: f64, ts: &[f64]) -> Result<(), String> {
    if !t0.is_finite() {
        return Err(format!("the initial time t0 is {t0}, but must be finite"));
    }
    for (i, &t) in ts.iter().enumerate() {
        if !t.is_finite() {
            return Err(format!("ts[{}] is {t}, but must be finite", i + 1));
        }
        if t <= t0 {
            return Err(format!(
                "ts[{}] is {t}, but the output times must be after the initial time t0 = {t0}",
                i + 1
            ));
        }
        if i > 0 && t < ts[i - 1] {
            return Err(format!(
                "ts[{}] = {t} is before ts[{}] = {}: the output times must be in increasing order",
                i + 1,
                i,
                ts[i - 1]
            ));
        }
    }
    Ok(())
}
