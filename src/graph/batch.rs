//! Minibatch evaluation of a compiled [`Model`]: slices the row-indexed data and scales the
//! separable likelihood terms by N/M (specs/survey_vi.md §2), as a
//! [`crate::inference::density::MinibatchDensity`].
//!
//! Which globals are sliced and which top-level model statements are scaled comes from the
//! compiler's proof ([`super::separability::analyse`]); this module only applies it. A batch
//! view holds a copy of the globals in which every sliced variable keeps the batch's rows (in
//! batch order) and the axis variable `N` is the batch size M, so `vector[N]` locals and
//! `for (n in 1:N)` loops run over the batch. Generated quantities and `write_array` always use
//! the full data.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::Model;
use super::eval::Ctx;
use super::separability::{Separability, TermKind};
use super::tape::S;
use super::value::{Base, Data, Tensor, Value};
use crate::inference::density::{DensityError, LogDensity, MinibatchDensity, row_moments};

/// A model whose log density is proved separable over the rows of its observation axis: the
/// full-data [`LogDensity`] of the model, plus batch estimates ([`MinibatchDensity`]).
pub struct MinibatchModel<'m> {
    model: &'m Model,
    /// N.
    n: usize,
    /// Global slot of the axis variable.
    axis_slot: usize,
    /// Global slots of the row-indexed data and transformed data.
    sliced: Vec<usize>,
    /// Per top-level model statement: scaled by N/M.
    scaled: Vec<bool>,
    /// False once the per-row reverse pass (`super::per_row`) found the model's shapes
    /// unsupported: then per-row gradients come from the loop.
    vectorised: AtomicBool,
}

impl Model {
    /// This model under the minibatch plan `sep` (from [`super::separability::analyse`] on the
    /// same program).
    ///
    /// Errors (as text): the axis is not an integer ≥ 1 in the data, a sliced variable does not
    /// have N rows, or the plan does not match the model's statements.
    pub fn minibatch(&self, sep: &Separability) -> Result<MinibatchModel<'_>, String> {
        let slot = |name: &str| {
            self.global_names
                .iter()
                .position(|g| g == name)
                .ok_or_else(|| format!("`{name}` is not a data or transformed data variable"))
        };
        let axis_slot = slot(&sep.axis)?;
        let n = match self.globals[axis_slot] {
            Value::Int(n) if n >= 1 => n as usize,
            _ => {
                return Err(format!(
                    "`{}` must be an integer ≥ 1 to minibatch",
                    sep.axis
                ));
            }
        };
        let mut sliced = Vec::new();
        for name in &sep.sliced {
            let s = slot(name)?;
            let rows = leading_len(&self.globals[s]);
            if rows != Some(n) {
                return Err(format!(
                    "`{name}` has leading size {rows:?}, but the observation axis `{}` is {n}",
                    sep.axis
                ));
            }
            sliced.push(s);
        }
        if sep.model_terms.len() != self.model_body.len() {
            return Err("internal error: the minibatch plan does not match the model block".into());
        }
        Ok(MinibatchModel {
            model: self,
            n,
            axis_slot,
            sliced,
            scaled: sep
                .model_terms
                .iter()
                .map(|t| *t == TermKind::Likelihood)
                .collect(),
            vectorised: AtomicBool::new(true),
        })
    }
}

impl Model {
    /// The value of an `int` scalar data (or transformed data) variable, if there is one of
    /// that name.
    pub fn data_int(&self, name: &str) -> Option<i64> {
        let i = self.global_names.iter().position(|g| g == name)?;
        match self.globals[i] {
            Value::Int(n) => Some(n),
            _ => None,
        }
    }
}

/// The leading size of a global (array size, else vector length or matrix rows).
fn leading_len(v: &Value) -> Option<usize> {
    match v {
        Value::T(t) => match (t.arr.first(), t.base) {
            (Some(&n), _) => Some(n),
            (None, Base::Vector(n) | Base::RowVector(n) | Base::Matrix(n, _)) => Some(n),
            _ => None,
        },
        _ => None,
    }
}

/// The rows `rows` (0-based) of a constant tensor, in that order.
fn slice_rows(v: &Value, rows: &[usize]) -> Value {
    let Value::T(t) = v else { return v.clone() };
    let (xs, int) = match &t.data {
        Data::Int(x) => (x, true),
        Data::Real(x) => (x, false),
        Data::Var(_) => return v.clone(),
    };
    let m = rows.len();
    let mut out = Vec::new();
    let (arr, base) = if let Some(&n) = t.arr.first() {
        let per = xs.len() / n.max(1);
        out.reserve(m * per);
        for &r in rows {
            out.extend_from_slice(&xs[r * per..(r + 1) * per]);
        }
        let mut arr = t.arr.clone();
        arr[0] = m;
        (arr, t.base)
    } else {
        match t.base {
            Base::Vector(_) | Base::RowVector(_) => {
                out.extend(rows.iter().map(|&r| xs[r]));
                let b = if matches!(t.base, Base::Vector(_)) {
                    Base::Vector(m)
                } else {
                    Base::RowVector(m)
                };
                (vec![], b)
            }
            Base::Matrix(r, c) => {
                // column-major
                out.reserve(m * c);
                for j in 0..c {
                    out.extend(rows.iter().map(|&i| xs[i + j * r]));
                }
                (vec![], Base::Matrix(m, c))
            }
            Base::Scalar => return v.clone(),
        }
    };
    let data = Arc::new(out);
    Value::from_tensor(Tensor {
        arr,
        base,
        data: if int {
            Data::Int(data)
        } else {
            Data::Real(data)
        },
    })
}

/// Multiplies the log-density terms added since (`c0`, `v0`) by `c`: the constant part in place,
/// the variable terms through one tape node c·Σ terms.
pub(super) fn scale_terms(ctx: &mut Ctx, c0: f64, v0: usize, c: f64) {
    ctx.target_c = c0 + c * (ctx.target_c - c0);
    if ctx.target_v.len() > v0 {
        let terms: Vec<(S, f64)> = ctx.target_v[v0..].iter().map(|&q| (S::V(q), c)).collect();
        let value = c * terms.iter().map(|(s, _)| ctx.tape.value(*s)).sum::<f64>();
        ctx.target_v.truncate(v0);
        if let S::V(q) = ctx.tape.node(value, &terms) {
            ctx.target_v.push(q);
        }
    }
}

impl MinibatchModel<'_> {
    /// Which top-level model statements are separable likelihood terms (scaled by N/M): the terms
    /// whose per-observation gradients the VOGN-type methods need.
    pub fn likelihood_statements(&self) -> &[bool] {
        &self.scaled
    }
}

impl MinibatchModel<'_> {
    /// The per-row log-likelihood gradients ∇ℓ_i of the batch `rows` from one forward and one
    /// reverse pass over the batch (`super::per_row`; layout as
    /// [`MinibatchDensity::log_lik_grads`]: row k of `grads`, M × d row-major, is
    /// ∇ℓ_{rows[k]}). Returns Σ_B ℓ_i, or `Ok(None)` (and `grads` unspecified) when the model's
    /// shapes do not allow the vectorised pass; [`MinibatchDensity::log_lik_grads`] (one
    /// reverse pass per row) always works.
    ///
    /// Errors: an empty batch, a row out of range, a buffer of the wrong length, or a model
    /// error at `theta`.
    pub fn log_lik_grads_vectorised(
        &self,
        theta: &[f64],
        rows: &[usize],
        grads: &mut [f64],
    ) -> Result<Option<f64>, DensityError> {
        self.check_rows(rows)?;
        let globals = self.batch_globals(rows);
        self.model
            .run_per_row(&globals, &self.scaled, theta, rows.len(), grads)
    }

    /// Whether [`MinibatchDensity::log_lik_grad_moments`] still uses the vectorised per-row
    /// pass (false after it found the model's shapes unsupported and fell back to the loop).
    pub fn per_row_vectorised(&self) -> bool {
        self.vectorised.load(Ordering::Relaxed)
    }
}

impl LogDensity for MinibatchModel<'_> {
    fn dim(&self) -> usize {
        self.model.dim
    }

    fn log_density(&self, theta: &[f64]) -> Result<f64, DensityError> {
        self.model.log_density(theta)
    }

    fn log_density_grad(&self, theta: &[f64], grad: &mut [f64]) -> Result<f64, DensityError> {
        self.model.log_density_grad(theta, grad)
    }
}

/// One batch of a [`MinibatchModel`]: sliced globals and the N/M factor.
struct BatchView<'a> {
    model: &'a Model,
    globals: Vec<Value>,
    scaled: &'a [bool],
    factor: f64,
}

impl LogDensity for BatchView<'_> {
    fn dim(&self) -> usize {
        self.model.dim
    }

    fn log_density(&self, theta: &[f64]) -> Result<f64, DensityError> {
        self.model.run_on(
            &self.globals,
            Some((self.factor, 1.0, self.scaled)),
            theta,
            None,
            true,
        )
    }

    fn log_density_grad(&self, theta: &[f64], grad: &mut [f64]) -> Result<f64, DensityError> {
        if grad.len() != self.model.dim {
            return Err(DensityError::fatal(format!(
                "gradient buffer has length {}, expected {}",
                grad.len(),
                self.model.dim
            )));
        }
        self.model.run_on(
            &self.globals,
            Some((self.factor, 1.0, self.scaled)),
            theta,
            Some(grad),
            true,
        )
    }
}

impl MinibatchModel<'_> {
    /// The globals of the batch `rows` (sliced variables cut to those rows, the axis set to M).
    fn batch_globals(&self, rows: &[usize]) -> Vec<Value> {
        let mut globals = self.model.globals.clone();
        globals[self.axis_slot] = Value::Int(rows.len() as i64);
        for &s in &self.sliced {
            globals[s] = slice_rows(&self.model.globals[s], rows);
        }
        globals
    }

    fn check_rows(&self, rows: &[usize]) -> Result<(), DensityError> {
        if rows.is_empty() {
            return Err(DensityError::fatal("a minibatch needs at least one row"));
        }
        if let Some(&r) = rows.iter().find(|&&r| r >= self.n) {
            return Err(DensityError::fatal(format!(
                "minibatch row {r} is out of range (N = {})",
                self.n
            )));
        }
        Ok(())
    }
}

impl MinibatchDensity for MinibatchModel<'_> {
    fn n_obs(&self) -> usize {
        self.n
    }

    /// One reverse pass per row, on a one-row batch with the likelihood statements unscaled
    /// and the prior statements and Jacobian dropped (factor 0); rows run in parallel (each
    /// writes its own slot, so the result does not depend on the thread count).
    fn log_lik_grads(
        &self,
        theta: &[f64],
        rows: &[usize],
        values: &mut [f64],
        grads: &mut [f64],
    ) -> Result<(), DensityError> {
        use rayon::prelude::*;
        self.check_rows(rows)?;
        let d = self.model.dim;
        if values.len() != rows.len() || grads.len() != rows.len() * d {
            return Err(DensityError::fatal(format!(
                "per-observation buffers have lengths {} and {}, expected {} and {}",
                values.len(),
                grads.len(),
                rows.len(),
                rows.len() * d
            )));
        }
        rows.par_iter()
            .zip(values.par_iter_mut())
            .zip(grads.par_chunks_mut(d.max(1)))
            .try_for_each(|((&r, v), g)| {
                let globals = self.batch_globals(&[r]);
                *v = self.model.run_on(
                    &globals,
                    Some((1.0, 0.0, &self.scaled)),
                    theta,
                    Some(g),
                    false,
                )?;
                Ok(())
            })
    }

    /// One forward and one reverse pass over the batch with per-row adjoint lanes
    /// ([`MinibatchModel::log_lik_grads_vectorised`]), then the sums in row order; the loop of
    /// [`MinibatchDensity::log_lik_grads`] where the shapes do not allow it (remembered for
    /// the later calls).
    fn log_lik_grad_moments(
        &self,
        theta: &[f64],
        rows: &[usize],
        grad_sum: &mut [f64],
        grad_sq_sum: &mut [f64],
    ) -> Result<f64, DensityError> {
        let d = self.model.dim;
        crate::inference::density::check_moment_buffers(d, grad_sum, grad_sq_sum)?;
        if self.vectorised.load(Ordering::Relaxed) {
            let mut grads = vec![0.0; rows.len() * d];
            if let Some(v) = self.log_lik_grads_vectorised(theta, rows, &mut grads)? {
                row_moments(&grads, d, grad_sum, grad_sq_sum);
                return Ok(v);
            }
            self.vectorised.store(false, Ordering::Relaxed);
        }
        crate::inference::density::moments_by_rows(self, theta, rows, grad_sum, grad_sq_sum)
    }

    /// One reverse pass over the batch with the likelihood statements unscaled and the prior
    /// statements and Jacobian dropped (factor 0), as each row's pass of
    /// [`MinibatchDensity::log_lik_grads`] but on all rows at once.
    fn log_lik_grad_sum(
        &self,
        theta: &[f64],
        rows: &[usize],
        grad_sum: &mut [f64],
    ) -> Result<f64, DensityError> {
        self.check_rows(rows)?;
        if grad_sum.len() != self.model.dim {
            return Err(DensityError::fatal(format!(
                "gradient buffer has length {}, expected {}",
                grad_sum.len(),
                self.model.dim
            )));
        }
        let globals = self.batch_globals(rows);
        self.model.run_on(
            &globals,
            Some((1.0, 0.0, &self.scaled)),
            theta,
            Some(grad_sum),
            false,
        )
    }

    /// One reverse pass on a one-row batch with the likelihood statements multiplied by 0.
    fn prior_grad(&self, theta: &[f64], grad: &mut [f64]) -> Result<f64, DensityError> {
        if grad.len() != self.model.dim {
            return Err(DensityError::fatal(format!(
                "gradient buffer has length {}, expected {}",
                grad.len(),
                self.model.dim
            )));
        }
        let globals = self.batch_globals(&[0]);
        self.model.run_on(
            &globals,
            Some((0.0, 1.0, &self.scaled)),
            theta,
            Some(grad),
            true,
        )
    }

    fn batch<'a>(&'a self, rows: &[usize]) -> Result<Box<dyn LogDensity + 'a>, DensityError> {
        self.check_rows(rows)?;
        let globals = self.batch_globals(rows);
        Ok(Box::new(BatchView {
            model: self.model,
            globals,
            scaled: &self.scaled,
            factor: self.n as f64 / rows.len() as f64,
        }))
    }
}
