//! ODE solver calls, `ode_rk45(f, y0, t0, ts, ...)` and `ode_bdf(…)` with their `_tol` forms
//! (Stan Functions Reference, "Ordinary Differential Equation (ODE) Solvers").
//!
//! The system function f is a user-defined function. Each evaluation of f runs it on a scratch
//! [`Tape`] whose leaves are the state y (slots `0..n`) and the distinct parameter-dependent
//! scalars of the trailing arguments θ (slots `n..n+p`); one reverse sweep per output component
//! then gives the rows of `∂f/∂y` and `∂f/∂θ`, which drive the forward sensitivity equations of
//! [`crate::graph::ode::Coupled`]. Each output element becomes one node of the model's tape
//! whose partials are the sensitivities with respect to the parameter-dependent inputs (the
//! elements of `y0` and of the trailing arguments). `t0`, `ts` and the tolerances are data
//! (checked by `semantics::check::ode`).

use std::collections::HashMap;

use super::Ctx;
use crate::graph::ir::{FuncIr, OdeEx, OdeMethod};
use crate::graph::ode::{self, Coupled, OdeFailure, OdeOptions, VectorField};
use crate::graph::tape::{S, Tape};
use crate::graph::value::{Base, Data, Fault, R, Slots, Tensor, Value, tensor_from_s};

/// A user-defined system function as a [`VectorField`].
struct UserField<'a> {
    globals: &'a [Value],
    funcs: &'a [FuncIr],
    f: &'a FuncIr,
    solver: &'static str,
    n: usize,
    /// Values of the parameter leaves θ.
    theta: Vec<f64>,
    /// The trailing arguments, their variable elements renumbered to the scratch slots of θ.
    args: Vec<Value>,
    tape: Tape,
    grad: Vec<f64>,
}

impl VectorField for UserField<'_> {
    fn n(&self) -> usize {
        self.n
    }

    fn p(&self) -> usize {
        self.theta.len()
    }

    fn eval(
        &mut self,
        t: f64,
        y: &[f64],
        dy: &mut [f64],
        jac: Option<(&mut [f64], &mut [f64])>,
    ) -> Result<(), Fault> {
        let (n, p) = (self.n, self.theta.len());
        self.tape.reset(jac.is_some());
        for &v in y {
            self.tape.leaf(v);
        }
        for &v in &self.theta {
            self.tape.leaf(v);
        }
        let state = Value::from_tensor(Tensor {
            arr: Vec::new(),
            base: Base::Vector(n),
            data: Data::Var(Slots::range(0, n)),
        });
        let mut vals = Vec::with_capacity(2 + self.args.len());
        vals.push(Value::Real(t));
        vals.push(state);
        vals.extend(self.args.iter().cloned());
        let out = {
            let mut ctx = Ctx::new(self.globals, 0, &mut self.tape);
            ctx.funcs = self.funcs;
            ctx.call_user(self.f, vals)?
        };
        match out.shape() {
            (arr, Base::Vector(m)) if arr.is_empty() && m == n => {}
            _ => {
                return Err(Fault::fatal(format!(
                    "{}: the system function `{}` returned {}, but the state y0 is vector[{n}]",
                    self.solver,
                    self.f.name,
                    out.describe()
                )));
            }
        }
        for (i, d) in dy.iter_mut().enumerate() {
            *d = self.tape.value(out.elem(i));
        }
        if let Some((jy, jp)) = jac {
            self.grad.resize(n + p, 0.0);
            for i in 0..n {
                match out.elem(i) {
                    S::C(_) => self.grad.fill(0.0),
                    S::V(s) => self.tape.gradient(&[s], &mut self.grad),
                }
                jy[i * n..(i + 1) * n].copy_from_slice(&self.grad[..n]);
                jp[i * p..(i + 1) * p].copy_from_slice(&self.grad[n..]);
            }
        }
        Ok(())
    }
}

/// The value of a scalar that must not depend on parameters.
fn data_scalar(v: &Value, solver: &str, what: &str) -> R<f64> {
    match v.as_s() {
        Some(S::C(x)) => Ok(x),
        Some(S::V(_)) => Err(Fault::fatal(format!("{solver}: {what} must be data"))),
        None => Err(Fault::fatal(format!(
            "{solver}: {what} must be a scalar, found {}",
            v.describe()
        ))),
    }
}

impl Ctx<'_> {
    /// Evaluates an ODE solver call: `array[size(ts)] vector[size(y0)]`.
    pub(super) fn ode(&mut self, o: &OdeEx) -> R<Value> {
        let name = o.name;
        let y0 = self.eval(&o.y0)?;
        let t0 = self.eval(&o.t0)?;
        let ts = self.eval(&o.ts)?;
        let opts = match &o.tol {
            None => OdeOptions::stan_default(o.method == OdeMethod::Bdf),
            Some(t) => {
                let rtol = data_scalar(&self.eval(&t[0])?, name, "the relative tolerance")?;
                let atol = data_scalar(&self.eval(&t[1])?, name, "the absolute tolerance")?;
                let max = self.eval(&t[2])?;
                let Some(max) = max.as_int() else {
                    return Err(Fault::fatal(format!(
                        "{name}: max_num_steps must be an integer"
                    )));
                };
                for (what, x) in [("relative", rtol), ("absolute", atol)] {
                    if !(x.is_finite() && x > 0.0) {
                        return Err(Fault::fatal(format!(
                            "{name}: the {what} tolerance is {x}, but must be positive and finite"
                        )));
                    }
                }
                if max <= 0 {
                    return Err(Fault::fatal(format!(
                        "{name}: max_num_steps is {max}, but must be positive"
                    )));
                }
                OdeOptions {
                    rtol,
                    atol,
                    max_num_steps: max as u64,
                }
            }
        };
        let mut args = Vec::with_capacity(o.args.len());
        for a in &o.args {
            args.push(self.eval(a)?);
        }
        let n = match y0.shape() {
            (arr, Base::Vector(n)) if arr.is_empty() => n,
            _ => {
                return Err(Fault::fatal(format!(
                    "{name}: the initial state y0 must be a vector, found {}",
                    y0.describe()
                )));
            }
        };
        let t0 = data_scalar(&t0, name, "the initial time t0")?;
        let m = match ts.shape() {
            (arr, Base::Scalar) if arr.len() == 1 => arr[0],
            _ => {
                return Err(Fault::fatal(format!(
                    "{name}: the output times ts must be an array of reals, found {}",
                    ts.describe()
                )));
            }
        };
        if ts.is_var() {
            return Err(Fault::fatal(format!(
                "{name}: the output times ts must be data"
            )));
        }
        let times = ts.values(self.tape);
        ode::check_times(t0, &times).map_err(|e| Fault::fatal(format!("{name}: {e}")))?;

        // The parameter-dependent inputs: one sensitivity column each.
        let mut cols: Vec<u32> = Vec::new();
        let mut col_of: HashMap<u32, usize> = HashMap::new();
        let mut col = |s: u32, cols: &mut Vec<u32>| {
            *col_of.entry(s).or_insert_with(|| {
                cols.push(s);
                cols.len() - 1
            })
        };
        let mut y0_col = vec![None; n];
        for (i, c) in y0_col.iter_mut().enumerate() {
            if let S::V(s) = y0.elem(i) {
                *c = Some(col(s, &mut cols));
            }
        }
        let mut theta_slots: Vec<u32> = Vec::new();
        let mut theta_of: HashMap<u32, u32> = HashMap::new();
        let mut local_args = Vec::with_capacity(args.len());
        for a in &args {
            let mut remap = |s: u32| -> u32 {
                col(s, &mut cols);
                *theta_of.entry(s).or_insert_with(|| {
                    theta_slots.push(s);
                    (n + theta_slots.len() - 1) as u32
                })
            };
            local_args.push(match a {
                Value::Var(s) => Value::Var(remap(*s)),
                Value::T(t) => match &t.data {
                    Data::Var(slots) => Value::from_tensor(Tensor {
                        arr: t.arr.clone(),
                        base: t.base,
                        data: Data::Var(Slots::List(slots.iter().map(&mut remap).collect())),
                    }),
                    _ => a.clone(),
                },
                _ => a.clone(),
            });
        }
        let theta: Vec<f64> = theta_slots
            .iter()
            .map(|&s| self.tape.value(S::V(s)))
            .collect();
        // The value-only path (recording off) integrates the sensitivities too: the error
        // control covers them, so dropping them would change the steps and the value would
        // differ from the gradient path's in the last digits of the tolerance.
        let theta_col: Vec<Option<usize>> = cols
            .iter()
            .map(|s| theta_of.get(s).map(|&l| l as usize - n))
            .collect();
        let k = theta_col.len();
        let mut start = y0.values(self.tape);
        start.resize(n * (k + 1), 0.0);
        for (i, c) in y0_col.iter().enumerate() {
            if let Some(c) = c
                && *c < k
            {
                start[n * (c + 1) + i] = 1.0;
            }
        }
        let funcs = self.funcs;
        let field = UserField {
            globals: self.globals,
            funcs,
            f: &funcs[o.func as usize],
            solver: name,
            n,
            theta,
            args: local_args,
            tape: Tape::default(),
            grad: Vec::new(),
        };
        let mut sys = Coupled::new(field, theta_col);
        let solved = match o.method {
            OdeMethod::Rk45 => ode::rk45::solve(&mut sys, &start, t0, &times, &opts),
            OdeMethod::Bdf => ode::bdf::solve(&mut sys, &start, t0, &times, &opts),
        };
        let sol = solved.map_err(|e| failure(name, &opts, e))?;
        let mut elems = Vec::with_capacity(m * n);
        let mut inputs = Vec::with_capacity(k);
        for yj in &sol {
            for i in 0..n {
                inputs.clear();
                inputs.extend(
                    cols.iter()
                        .enumerate()
                        .map(|(c, &s)| (S::V(s), yj[n * (c + 1) + i])),
                );
                elems.push(if k == 0 {
                    S::C(yj[i])
                } else {
                    self.tape.node(yj[i], &inputs)
                });
            }
        }
        Ok(tensor_from_s(self.tape, vec![m], Base::Vector(n), &elems))
    }
}

/// The fault of a failed solve: step-budget and non-finite failures reject the point, as Stan's
/// solvers do (a `std::domain_error`); a failure of the system function keeps its own kind.
fn failure(name: &str, o: &OdeOptions, e: OdeFailure) -> Fault {
    match e {
        OdeFailure::MaxSteps { t, target } => Fault::domain(format!(
            "{name}: max_num_steps = {} exceeded at t = {t} before the output time {target} \
             (the system may be stiff: try ode_bdf; or raise max_num_steps with the _tol form)",
            o.max_num_steps
        )),
        OdeFailure::NonFinite { t } => Fault::domain(format!(
            "{name}: the state became NaN or infinite at t = {t}"
        )),
        OdeFailure::StepTooSmall { t, h } => Fault::domain(format!(
            "{name}: the step size fell to {h:e} at t = {t}, below the resolution of t \
             (the solution may blow up there)"
        )),
        OdeFailure::Rhs(f) => f,
    }
}
