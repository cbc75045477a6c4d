//! Log densities, log CDFs, truncation and `_rng` draws of the univariate families, each
//! recorded as one tape node. Part of the interpreter ([`super`]).

use std::sync::Arc;

use crate::distributions::{self, Arg, Family};

use super::super::ir::Ex;
use super::super::ops::map_binary;
use super::super::scalar::B;
use super::super::tape::S;
use super::super::value::{Base, Data, Fault, R, Tensor, Value};

use super::*;

/// The fault of a density's argument error `e`: a rejection of the point (recoverable), or,
/// when `data` says the error lies in integer data outside the distribution's support (which
/// no parameter value can fix), an error of the data that stops the fit and says so.
pub(super) fn support_fault(e: &distributions::DistError, data: bool) -> Fault {
    if data {
        Fault::fatal(format!(
            "{e}; this value is data outside the distribution's support, which no parameter \
             value can fix: correct the data"
        ))
    } else {
        Fault::domain(e.to_string())
    }
}

impl Ctx<'_> {
    /// A distribution's log density as one tape node holding its partials.
    pub fn lpdf(&mut self, family: Family, vals: &[Value], propto: bool) -> R<S> {
        self.density(family, vals, Kind::Density(propto))
    }

    /// A log density, log CDF or log CCDF as one tape node holding its partials.
    pub fn density(&mut self, family: Family, vals: &[Value], kind: Kind) -> R<S> {
        self.density_checked(family, vals, kind, false)
    }

    /// As [`Ctx::density`]; `variate_checked` skips the support check of the variate, which
    /// model construction has done once ([`super::super::ir::TildePlan::variate_checked`]).
    pub fn density_checked(
        &mut self,
        family: Family,
        vals: &[Value],
        kind: Kind,
        variate_checked: bool,
    ) -> R<S> {
        let sig = family.sig();
        // Built only for error messages (no allocation on the success path).
        let fname = || match kind {
            Kind::Density(_) => distributions::args::function_name(sig),
            Kind::Cdf(c) => c.function_name(sig.name),
        };
        if vals.len() != sig.params.len() + 1 {
            return Err(Fault::fatal(format!(
                "{} expects {} arguments, got {}",
                fname(),
                sig.params.len() + 1,
                vals.len()
            )));
        }
        // Gather argument values; vector lengths must agree. Copies are made only of variable
        // vectors whose slots are not contiguous (`copies`, by argument position).
        let mut len: Option<usize> = None;
        let mut copies: Vec<(usize, Vec<f64>)> = Vec::new();
        for (a, v) in vals.iter().enumerate() {
            if let Value::T(t) = v {
                let n = t.data.len();
                if let Some(m) = len
                    && m != n
                {
                    return Err(Fault::fatal(format!(
                        "{}: size mismatch between vector arguments ({m} and {n} elements)",
                        fname()
                    )));
                }
                len = Some(n);
                // Slots of a fresh vector node are contiguous: read them in place.
                if let Data::Var(ix) = &t.data
                    && ix.contiguous().is_none()
                {
                    copies.push((a, ix.iter().map(|i| self.tape.val[i as usize]).collect()));
                }
            }
        }
        // Arguments and their variable flags, on the stack for the usual few arguments (a
        // scalar `y ~ normal(mu, sigma)` inside a loop then allocates nothing here).
        const ON_STACK: usize = 8;
        let mut args_stack = [Arg::Scalar(0.0); ON_STACK];
        let mut var_stack = [false; ON_STACK];
        let mut args_heap: Vec<Arg> = Vec::new();
        let mut var_heap: Vec<bool> = Vec::new();
        let tape = &*self.tape;
        for (a, v) in vals.iter().enumerate() {
            let arg = match v {
                Value::T(t) => match (&t.data, copies.iter().find(|(b, _)| *b == a)) {
                    (_, Some((_, xs))) => Arg::Vector(xs),
                    (Data::Real(xs) | Data::Int(xs), None) => Arg::Vector(xs),
                    (Data::Var(ix), None) => {
                        let start = ix.contiguous().map_or(0, |i| i as usize);
                        Arg::Vector(&tape.val[start..start + ix.len()])
                    }
                },
                s => Arg::Scalar(tape.value(s.as_s().expect("non-tensor is scalar"))),
            };
            if vals.len() <= ON_STACK {
                args_stack[a] = arg;
                var_stack[a] = v.is_var();
            } else {
                args_heap.push(arg);
                var_heap.push(v.is_var());
            }
        }
        let (args, is_var): (&[Arg], &[bool]) = if vals.len() <= ON_STACK {
            (&args_stack[..vals.len()], &var_stack[..vals.len()])
        } else {
            (&args_heap, &var_heap)
        };
        // Value-only path: partials are not needed, and a normalised density (or CDF) does not
        // depend on the flags, so no partials are computed; `~` keeps the flags because the
        // dropped constant terms depend on them.
        let no_vars = [false; 8];
        let flags: &[bool] = if !self.tape.recording
            && !matches!(kind, Kind::Density(true))
            && is_var.len() <= no_vars.len()
        {
            &no_vars[..is_var.len()]
        } else {
            is_var
        };
        let term = match kind {
            Kind::Density(propto) => {
                distributions::log_density_checked(family, args, flags, propto, variate_checked)
            }
            Kind::Cdf(c) => distributions::cdf_function(family, args, flags, c),
        }
        .map_err(|e| {
            let data = matches!(kind, Kind::Density(_))
                && distributions::outcome::integer_data_outside(family, args);
            support_fault(&e, data)
        })?;
        if term.value.is_nan() {
            return Err(Fault::domain(format!("{}: log density is NaN", fname())));
        }
        if !is_var.iter().any(|&b| b) {
            return Ok(S::C(term.value));
        }
        if !self.tape.recording {
            return Ok(S::V(self.tape.leaf(term.value)));
        }
        // Per-row pass (`graph::per_row`): one tagged term per row inside likelihood statements.
        if let Some(rt) = self.rows.as_ref()
            && rt.active
        {
            let m = rt.m;
            match super::super::per_row::element_terms(family, vals, args, is_var, kind, m)
                .map_err(|e| Fault::domain(e.to_string()))?
            {
                Ok(et) => return Ok(self.record_row_terms(vals, et, term.value)),
                Err(why) => {
                    if let Some(rt) = self.rows.as_mut() {
                        rt.failed = Some(why);
                    }
                }
            }
        }
        let out = self.tape.leaf(term.value);
        // One node per variable argument, pushed last argument first so that the reverse sweep
        // adds the partials in argument order: a scalar or scattered vector as a linear node
        // with entries, a vector of contiguous slots as a dot node (no index list).
        for (v, p) in vals.iter().zip(&term.partials).rev() {
            match v {
                Value::Var(i) => {
                    let base = self.tape.entries_base();
                    self.tape.entry(*i, p[0]);
                    self.tape.finish(out, 1, 1, base);
                }
                Value::T(t) => {
                    let Data::Var(ix) = &t.data else { continue };
                    if let Some(start) = ix.contiguous() {
                        self.tape.parts_scratch(p.len()).copy_from_slice(p);
                        self.tape.push_dot(out, start, p.len());
                    } else {
                        let base = self.tape.entries_base();
                        for (i, &d) in ix.iter().zip(p) {
                            self.tape.entry(i, d);
                        }
                        self.tape.finish(out, 1, ix.len(), base);
                    }
                }
                _ => {}
            }
        }
        Ok(S::V(out))
    }

    /// Subtracts the truncation normaliser of `y ~ family(θ) T[lo, hi]` (Stan reference manual,
    /// "Truncated distributions"): log(F(hi) − F(lo)), log(1 − F(lo)) or log F(hi). A variate
    /// outside [lo, hi] makes the log density −∞. Parameters must be scalars; a vector variate
    /// subtracts the normaliser once per element.
    pub(super) fn truncate(
        &mut self,
        family: Family,
        vals: &mut [Value],
        lo: Option<&Ex>,
        hi: Option<&Ex>,
    ) -> R<()> {
        if vals[1..].iter().any(|v| v.as_s().is_none()) {
            return Err(Fault::fatal(
                "truncation with vector parameters is not supported yet; use scalar parameters",
            ));
        }
        let lo = lo.map(|e| self.eval(e)).transpose()?;
        let hi = hi.map(|e| self.eval(e)).transpose()?;
        let n = vals[0].num_elements();
        let ys = vals[0].values(self.tape);
        let bound = |v: &Option<Value>| -> R<Option<S>> {
            match v {
                None => Ok(None),
                Some(v) => v.as_s().map(Some).ok_or_else(|| {
                    Fault::fatal(format!(
                        "truncation bounds must be scalars, found {}",
                        v.describe()
                    ))
                }),
            }
        };
        let (lo, hi) = (bound(&lo)?, bound(&hi)?);
        for &y in &ys {
            if lo.is_some_and(|l| y < self.tape.value(l))
                || hi.is_some_and(|h| y > self.tape.value(h))
            {
                self.target_c = f64::NEG_INFINITY;
                return Ok(());
            }
        }
        let mut at = |c: &mut Self, b: S, complement: bool| -> R<Value> {
            vals[0] = Value::from_s(b);
            Ok(Value::from_s(c.density(
                family,
                vals,
                Kind::Cdf(if complement {
                    distributions::CdfKind::Lccdf
                } else {
                    distributions::CdfKind::Lcdf
                }),
            )?))
        };
        let norm = match (lo, hi) {
            (Some(l), Some(h)) => {
                let fh = at(self, h, false)?;
                let fl = at(self, l, false)?;
                map_binary(self.tape, B::LogDiffExp, &fh, &fl, "truncation")?
            }
            (Some(l), None) => at(self, l, true)?,
            (None, Some(h)) => at(self, h, false)?,
            (None, None) => return Ok(()),
        };
        let scaled = map_binary(
            self.tape,
            B::Mul,
            &norm,
            &Value::Real(-(n as f64)),
            "truncation",
        )?;
        self.add_target(&scaled);
        Ok(())
    }

    /// `foo_rng(θ)`: one draw for scalar parameters, or an array of draws when a parameter is a
    /// container (broadcast as the densities are). Discrete families return integers.
    pub(super) fn rng_draw(&mut self, family: Family, vals: &[Value]) -> R<Value> {
        let sig = family.sig();
        let n = vals
            .iter()
            .filter(|v| v.as_s().is_none())
            .map(|v| v.num_elements())
            .max();
        for v in vals {
            if v.as_s().is_none() && Some(v.num_elements()) != n {
                return Err(Fault::fatal(format!(
                    "{}_rng: size mismatch between vector arguments",
                    sig.name
                )));
            }
        }
        let Some(rng) = self.rng.as_deref_mut() else {
            return Err(Fault::fatal(format!(
                "{}_rng is only allowed in generated quantities",
                sig.name
            )));
        };
        let count = n.unwrap_or(1);
        let mut out = Vec::with_capacity(count);
        let mut params = vec![0.0; vals.len()];
        for i in 0..count {
            for (k, v) in vals.iter().enumerate() {
                params[k] = match v.as_s() {
                    Some(s) => self.tape.value(s),
                    None => self.tape.value(v.elem(i)),
                };
            }
            out.push(
                distributions::rng(family, &params, rng)
                    .map_err(|e| Fault::domain(e.to_string()))?,
            );
        }
        Ok(match n {
            None if sig.discrete => Value::Int(out[0] as i64),
            None => Value::Real(out[0]),
            Some(_) => Value::from_tensor(Tensor {
                arr: vec![count],
                base: Base::Scalar,
                data: if sig.discrete {
                    Data::Int(Arc::new(out))
                } else {
                    Data::Real(Arc::new(out))
                },
            }),
        })
    }
}
