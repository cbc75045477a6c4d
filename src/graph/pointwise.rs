//! The pointwise log-likelihood: one log density per observation, as PyMC's
//! `compute_log_likelihood` and Stan's `log_lik` generated quantity give, for LOO/WAIC and for the
//! scores of robust (sandwich) standard errors.
//!
//! An *observation statement* is a sampling statement `y ~ dist(…)` or a statement
//! `target += dist_lpdf(y | …)` (also `_lpmf`, `_lupdf`, `_lupmf`) whose whole right-hand side is
//! that one call, of a built-in family, and whose outcome `y` does not depend on parameters (data,
//! transformed data, or a local computed from them). Each executed observation statement
//! contributes one value per element of its outcome, in execution order: a vectorised statement
//! over N elements gives N values, a statement inside a loop one value (or N) per iteration. For
//! the multivariate families one value per outcome row (one vector of `multi_normal`, one integer
//! of `categorical`).
//!
//! The values are full log densities, with every constant term kept (`~` drops constants from
//! the model's log density in Stan's fashion, but the pointwise values do not), computed with
//! each family's own density evaluated on one element at a time. A truncated `y ~ dist(…) T[a, b]`
//! subtracts the truncation normaliser from each element. Not observations: priors (outcome
//! depends on parameters), user-defined densities, and `target +=` of any other expression.
//!
//! The interpreter ([`super::eval`]) calls the two hooks of this file only when
//! [`Ctx::pointwise`] is `Some`, so ordinary evaluation is unchanged.

use crate::distributions::multivariate::{self, MvArg, MvFamily, Shape};
use crate::distributions::{self, Arg, Family};
use crate::inference::DensityError;

use super::eval::{Ctx, Located};
use super::ir::Ex;
use super::tape::Tape;
use super::value::{Base, Fault, R, Value};
use super::{Model, with_tape};

impl Model {
    /// The pointwise log-likelihood at the unconstrained point `theta_unconstrained` (length
    /// [`crate::inference::LogDensity::dim`]): one full log density (constants included) per
    /// observation, in execution order, as described in the module documentation
    /// ([`crate::graph::pointwise`]). The values do not include priors or the Jacobian
    /// adjustment; for a model whose only statements are observations their sum is the log
    /// density of [`Model::with_jacobian`]`(false)` with every `~` written as `target +=`.
    ///
    /// Errors: those of the log density (a recoverable [`DensityError`] for a point outside the
    /// support, fatal for program errors), wrong length of `theta_unconstrained`, and a fatal
    /// error when the model executes no observation statement.
    pub fn pointwise_log_likelihood(
        &self,
        theta_unconstrained: &[f64],
    ) -> Result<Vec<f64>, DensityError> {
        self.check_len(theta_unconstrained)?;
        let values = with_tape(|tape| {
            tape.reset(false);
            for &z in theta_unconstrained {
                tape.leaf(z);
            }
            let mut ctx = Ctx::new(&self.globals, self.n_slots, tape);
            ctx.funcs = &self.funcs;
            ctx.pointwise = Some(Vec::new());
            let r = (|| -> Result<(), Located> {
                let mut log_jacobian = Vec::new();
                self.bind_params(&mut ctx, &mut log_jacobian)?;
                ctx.exec_all(&self.tp_body)?;
                self.check_outputs(&mut ctx, &self.tparams, true)?;
                ctx.exec_all(&self.model_body)?;
                Ok(())
            })();
            r.map_err(|l| self.density_error(l))?;
            Ok::<_, DensityError>(ctx.pointwise.take().unwrap_or_default())
        })?;
        if values.is_empty() {
            return Err(DensityError::fatal(
                "the model has no observations for a pointwise log-likelihood: it needs a \
                 statement `y ~ dist(…)` or `target += dist_lpdf(y | …)` whose outcome `y` is \
                 data (not a parameter)",
            ));
        }
        Ok(values)
    }
}

/// One flattened argument of a multivariate family: values, array length, element rows, columns.
type Flat = (Vec<f64>, Option<usize>, usize, usize);

/// Scalar value of a constant or tape scalar.
fn scalar(tape: &Tape, v: &Value) -> R<f64> {
    v.as_s()
        .map(|s| tape.value(s))
        .ok_or_else(|| Fault::fatal(format!("expected a scalar, found {}", v.describe())))
}

impl Ctx<'_> {
    /// Hook of `y ~ family(…)`, called by the interpreter after the statement's density was
    /// evaluated (so the arguments passed its checks) and before truncation: appends one value
    /// per element of `y` when `y` is an observation. `vals` = [y, parameters…].
    pub(super) fn observe_tilde(
        &mut self,
        family: Family,
        vals: &[Value],
        trunc: Option<&(Option<Ex>, Option<Ex>)>,
    ) -> R<()> {
        if vals.first().is_none_or(Value::is_var) {
            return Ok(());
        }
        let mut values = self.elementwise(family, vals)?;
        if let Some((lo, hi)) = trunc {
            self.truncate_elements(family, vals, lo.as_ref(), hi.as_ref(), &mut values)?;
        }
        self.pointwise
            .as_mut()
            .expect("observe_tilde is called only when the sink is set")
            .extend(values);
        Ok(())
    }

    /// Hook of `target += e`: when `e` is one call `dist_lpdf(y | …)` of a built-in family with
    /// an outcome free of parameters, appends its pointwise values. The call's arguments are
    /// evaluated again (expressions of the model block have no side effects on the pointwise
    /// values; this runs only while collecting them).
    pub(super) fn observe_target(&mut self, e: &Ex) -> R<()> {
        let (args, family) = match e {
            Ex::Lpdf { family, args, .. } => (args, Ok(*family)),
            Ex::MvLpdf { family, args, .. } => (args, Err(*family)),
            _ => return Ok(()),
        };
        let mut vals = Vec::with_capacity(args.len());
        for a in args {
            vals.push(self.eval(a)?);
        }
        if vals.first().is_none_or(Value::is_var) {
            return Ok(());
        }
        let values = match family {
            Ok(f) => self.elementwise(f, &vals)?,
            Err(f) => self.rowwise(f, &vals)?,
        };
        self.pointwise
            .as_mut()
            .expect("observe_target is called only when the sink is set")
            .extend(values);
        Ok(())
    }

    /// The normalised log density of a univariate family at each broadcast element.
    fn elementwise(&self, family: Family, vals: &[Value]) -> R<Vec<f64>> {
        let data: Vec<(bool, Vec<f64>)> = vals
            .iter()
            .map(|v| (matches!(v, Value::T(_)), v.values(self.tape)))
            .collect();
        let n = data
            .iter()
            .filter(|(tensor, _)| *tensor)
            .map(|(_, xs)| xs.len())
            .max()
            .unwrap_or(1);
        let flags = vec![false; vals.len()];
        let mut out = Vec::with_capacity(n);
        let mut args = Vec::with_capacity(vals.len());
        for i in 0..n {
            args.clear();
            for (tensor, xs) in &data {
                // Vector arguments share one length (checked by the density already).
                args.push(Arg::Scalar(if *tensor { xs[i] } else { xs[0] }));
            }
            let term = distributions::log_density(family, &args, &flags, false)
                .map_err(|e| Fault::domain(e.to_string()))?;
            out.push(term.value);
        }
        Ok(out)
    }

    /// Subtracts the truncation normaliser of `y ~ family(θ) T[lo, hi]` from each element's
    /// value (Stan reference manual, "Truncated distributions"); −∞ outside [lo, hi].
    fn truncate_elements(
        &mut self,
        family: Family,
        vals: &[Value],
        lo: Option<&Ex>,
        hi: Option<&Ex>,
        values: &mut [f64],
    ) -> R<()> {
        let params = vals[1..]
            .iter()
            .map(|v| scalar(self.tape, v))
            .collect::<R<Vec<f64>>>()?;
        let lo = lo.map(|e| self.eval(e)).transpose()?;
        let hi = hi.map(|e| self.eval(e)).transpose()?;
        let lo = lo.map(|v| scalar(self.tape, &v)).transpose()?;
        let hi = hi.map(|v| scalar(self.tape, &v)).transpose()?;
        let cdf = |b: f64, complement: bool| -> R<f64> {
            let mut args = vec![Arg::Scalar(b)];
            args.extend(params.iter().map(|&p| Arg::Scalar(p)));
            let flags = vec![false; args.len()];
            distributions::log_cdf(family, &args, &flags, complement)
                .map(|t| t.value)
                .map_err(|e| Fault::domain(e.to_string()))
        };
        let norm = match (lo, hi) {
            (Some(l), Some(h)) => {
                crate::distributions::special::log_diff_exp(cdf(h, false)?, cdf(l, false)?)
            }
            (Some(l), None) => cdf(l, true)?,
            (None, Some(h)) => cdf(h, false)?,
            (None, None) => return Ok(()),
        };
        let ys = vals[0].values(self.tape);
        for (v, &y) in values.iter_mut().zip(&ys) {
            if lo.is_some_and(|l| y < l) || hi.is_some_and(|h| y > h) {
                *v = f64::NEG_INFINITY;
            } else {
                *v -= norm;
            }
        }
        Ok(())
    }

    /// The normalised log density of a multivariate family at each outcome row: arguments that
    /// are arrays of the outcome's length (or, for element-wise real arguments such as
    /// `ordered_logistic`'s η, vectors of that length) are split, the others shared. The split
    /// is checked against the density of the whole statement.
    fn rowwise(&self, family: MvFamily, vals: &[Value]) -> R<Vec<f64>> {
        let sig = family.sig();
        let flats: Vec<Flat> = vals
            .iter()
            .map(|v| {
                let (arr, base) = v.shape();
                let (rows, cols) = match base {
                    Base::Scalar => (1, 1),
                    b => b.matrix_dims(),
                };
                (v.values(self.tape), arr.first().copied(), rows, cols)
            })
            .collect();
        fn as_arg(f: &Flat) -> MvArg<'_> {
            MvArg {
                data: &f.0,
                array: f.1,
                rows: f.2,
                cols: f.3,
            }
        }
        let flags = vec![false; vals.len()];
        let density = |args: &[MvArg]| -> R<f64> {
            multivariate::log_density(family, args, &flags, false)
                .map(|t| t.value)
                .map_err(|e| Fault::domain(e.to_string()))
        };
        let whole: Vec<MvArg> = flats.iter().map(as_arg).collect();
        let total = density(&whole)?;
        let n = match flats[0].1 {
            Some(m) => m,
            None if sig.variate.shape == Shape::Ints => flats[0].0.len(),
            None => 1,
        };
        if n == 1 {
            return Ok(vec![total]);
        }
        let mut splits = true;
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let args: Vec<MvArg> = flats
                .iter()
                .enumerate()
                .map(|(k, f)| {
                    let (data, array, rows, cols) = f;
                    let per = rows * cols;
                    let elementwise = k > 0 && sig.params[k - 1].shape == Shape::Reals;
                    if *array == Some(n) {
                        MvArg {
                            data: &data[i * per..(i + 1) * per],
                            array: None,
                            rows: *rows,
                            cols: *cols,
                        }
                    } else if (k == 0 || elementwise) && array.is_none() && data.len() == n {
                        MvArg::scalar(&data[i..i + 1])
                    } else {
                        if array.is_some() {
                            splits = false;
                        }
                        as_arg(f)
                    }
                })
                .collect();
            out.push(density(&args)?);
        }
        let sum: f64 = out.iter().sum();
        if !splits || (sum - total).abs() > 1e-8 * total.abs().max(1.0) {
            return Err(Fault::fatal(format!(
                "pointwise log-likelihood: cannot split {} into one term per outcome",
                sig.density_name()
            )));
        }
        Ok(out)
    }
}
