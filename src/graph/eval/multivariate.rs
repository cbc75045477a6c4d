//! The interpreter's calls into the multivariate families
//! ([`crate::distributions::multivariate`]): arguments flattened to [`MvArg`]s, the log density
//! recorded as one tape node holding its partials, `_rng` draws turned back into values.

use std::sync::Arc;

use crate::distributions;
use crate::distributions::multivariate::sizes::SizePart;
use crate::distributions::multivariate::{self, MvArg, MvDraw, MvFamily, MvSig};

use super::super::tape::S;
use super::super::value::{Base, Data, Fault, R, Tensor, Value};
use super::Ctx;

/// One argument's values with its array length and element (rows, cols).
struct Flat {
    data: Vec<f64>,
    array: Option<usize>,
    rows: usize,
    cols: usize,
}

/// The fault of `categorical_logit` with a log-odds matrix of `k` columns: a data error when
/// an outcome of `y` lies outside 1..k ([`super::density::support_fault`]).
fn rows_fault(e: &distributions::DistError, y: &MvArg, k: usize) -> Fault {
    let data = distributions::outcome::check_categories(y.data, k).is_some();
    super::density::support_fault(e, data)
}

impl Ctx<'_> {
    /// The sizes of `vals` (the density's arguments, or the `_rng`'s when `rng`) that must
    /// agree and differ ([`multivariate::sizes::relations`]): an error of the model, as sizes
    /// do not change with the parameters (the statement fails at every point).
    fn mv_size_fault(&self, sig: &MvSig, function: &str, vals: &[Value], rng: bool) -> R<()> {
        let size = |pos: usize, part: SizePart| -> Option<usize> {
            let (arr, base) = vals.get(pos)?.shape();
            match (part, base) {
                (SizePart::Array, _) if arr.len() == 1 => Some(arr[0]),
                (SizePart::Len, Base::Vector(n) | Base::RowVector(n)) => Some(n),
                (SizePart::Rows, Base::Matrix(r, _)) if arr.is_empty() => Some(r),
                (SizePart::Cols, Base::Matrix(_, c)) if arr.is_empty() => Some(c),
                (SizePart::Count, b) => {
                    let n = arr.iter().product::<usize>() * b.size();
                    // a single value (or a vector of one, broadcast as one) has no count
                    (!arr.is_empty() || (b != Base::Scalar && n != 1)).then_some(n)
                }
                _ => None,
            }
        };
        match multivariate::sizes::first_mismatch(sig, rng, size) {
            Some(m) => Err(Fault::fatal(format!(
                "{function}: size mismatch: {m} (sizes do not change with the parameters, so \
                 the statement fails at every point)"
            ))),
            None => Ok(()),
        }
    }

    fn flatten(&self, function: &str, v: &Value) -> R<Flat> {
        let (arr, base) = v.shape();
        if arr.len() > 1 {
            return Err(Fault::fatal(format!(
                "{function}: arguments may have at most one array dimension, found {}",
                v.describe()
            )));
        }
        let (rows, cols) = match base {
            Base::Scalar => (1, 1),
            b => b.matrix_dims(),
        };
        Ok(Flat {
            data: v.values(self.tape),
            array: arr.first().copied(),
            rows,
            cols,
        })
    }

    /// A multivariate log density as one tape node holding its partials (a constant when no
    /// argument depends on parameters).
    pub fn mv_density(&mut self, family: MvFamily, vals: &[Value], propto: bool) -> R<S> {
        let sig = family.sig();
        let fname = sig.density_name();
        self.mv_size_fault(sig, &fname, vals, false)?;
        if family == MvFamily::CategoricalLogit
            && let [y, Value::T(eta)] = vals
            && let ([], Base::Matrix(n, k)) = (eta.arr.as_slice(), eta.base)
        {
            return self.categorical_logit_rows(sig, y, &vals[1], n, k);
        }
        let flats = vals
            .iter()
            .map(|v| self.flatten(&fname, v))
            .collect::<R<Vec<Flat>>>()?;
        let args: Vec<MvArg> = flats
            .iter()
            .map(|f| MvArg {
                data: &f.data,
                array: f.array,
                rows: f.rows,
                cols: f.cols,
            })
            .collect();
        let is_var: Vec<bool> = vals.iter().map(Value::is_var).collect();
        // Without recording, partials are not needed: only `~` (propto) depends on the flags.
        let flags: Vec<bool> = if !self.tape.recording && !propto {
            vec![false; is_var.len()]
        } else {
            is_var.clone()
        };
        let term = multivariate::log_density(family, &args, &flags, propto).map_err(|e| {
            use distributions::outcome::{Violation, mv_outcome_violation};
            match mv_outcome_violation(family, &args) {
                // name the outcome value itself when another argument's check failed first
                Some(Violation::OutsideCategories { index, k })
                    if !e.to_string().contains(sig.variate.name) =>
                {
                    let which = if args[0].data.len() > 1 {
                        format!(" (element {})", index + 1)
                    } else {
                        String::new()
                    };
                    Fault::fatal(format!(
                        "{fname}: the outcome {}{which} is not a category in 1..{k}; this value \
                         is data outside the distribution's support, which no parameter value \
                         can fix: correct the data",
                        args[0].data[index]
                    ))
                }
                v => super::density::support_fault(&e, v.is_some()),
            }
        })?;
        if term.value.is_nan() {
            return Err(Fault::domain(format!("{fname}: log density is NaN")));
        }
        if !is_var.iter().any(|&b| b) {
            return Ok(S::C(term.value));
        }
        if !self.tape.recording {
            return Ok(S::V(self.tape.leaf(term.value)));
        }
        // Per-row pass (`graph::per_row`): a GLM records one tagged term per row of x.
        if let Some(rt) = self.rows.as_ref()
            && rt.active
        {
            let m = rt.m;
            match multivariate::glm_rows(family, &args, propto) {
                Ok(Some(rows)) if rows.n == m => {
                    let (xs, bs) = (&flats[1].data, &flats[3].data);
                    return Ok(self.record_glm_rows(vals, xs, bs, &rows, term.value));
                }
                Ok(Some(_)) => {
                    if let Some(rt) = self.rows.as_mut() {
                        rt.failed = Some("a GLM whose design matrix is not sized by the rows");
                    }
                }
                _ => {
                    if let Some(rt) = self.rows.as_mut() {
                        rt.failed = Some("a multivariate density in a likelihood statement");
                    }
                }
            }
        }
        let base = self.tape.entries_base();
        let out = self.tape.leaf(term.value);
        let mut k = 0;
        for (v, p) in vals.iter().zip(&term.partials) {
            match v {
                Value::Var(i) => {
                    self.tape.entry(*i, p[0]);
                    k += 1;
                }
                Value::T(t) => {
                    if let Data::Var(ix) = &t.data {
                        for (i, &d) in ix.iter().zip(p) {
                            self.tape.entry(i, d);
                        }
                        k += ix.len();
                    }
                }
                _ => {}
            }
        }
        self.tape.finish(out, 1, k, base);
        Ok(S::V(out))
    }

    /// `y ~ categorical_logit(Eta)` with one row of `Eta` (`n × k`) per outcome: one tape node
    /// over the contiguous slots of `Eta` (see
    /// [`multivariate::categorical::logit_rows_lpmf`]). The lpmf has no constant terms, so
    /// `propto` changes nothing.
    fn categorical_logit_rows(
        &mut self,
        sig: &'static multivariate::MvSig,
        y: &Value,
        eta: &Value,
        n: usize,
        k: usize,
    ) -> R<S> {
        let fname = sig.density_name();
        let yf = self.flatten(&fname, y)?;
        let ya = MvArg {
            data: &yf.data,
            array: yf.array,
            rows: yf.rows,
            cols: yf.cols,
        };
        let slots = match eta {
            Value::T(t) => match &t.data {
                Data::Var(s) => Some(s),
                _ => None,
            },
            _ => None,
        };
        let Some(slots) = slots else {
            let xs = eta.values(self.tape);
            let v = multivariate::categorical::logit_rows_lpmf(sig, &ya, &xs, n, k, None)
                .map_err(|e| rows_fault(&e, &ya, k))?;
            return Ok(S::C(v));
        };
        let x = self.tape.contiguous(slots);
        let nk = n * k;
        let xs = &self.tape.val[x as usize..x as usize + nk];
        let mut g = vec![0.0; if self.tape.recording { nk } else { 0 }];
        let grad = self.tape.recording.then_some(g.as_mut_slice());
        let v = multivariate::categorical::logit_rows_lpmf(sig, &ya, xs, n, k, grad)
            .map_err(|e| rows_fault(&e, &ya, k))?;
        // Per-row pass (`graph::per_row`): one tagged term per row of Eta.
        if self.tape.recording
            && let Some(rt) = self.rows.as_ref()
            && rt.active
        {
            if n == rt.m {
                return Ok(self.record_logit_rows(x, n, k, &g, &yf.data, v));
            }
            if let Some(rt) = self.rows.as_mut() {
                rt.failed = Some("categorical_logit with a log-odds matrix not sized by the rows");
            }
        }
        let out = self.tape.leaf(v);
        if self.tape.recording {
            self.tape.parts_scratch(nk).copy_from_slice(&g);
            self.tape.push_dot(out, x, nk);
        }
        Ok(S::V(out))
    }

    /// `foo_rng(…)` of a multivariate family: an int, a vector, an array of vectors or a matrix.
    pub fn mv_rng(&mut self, family: MvFamily, vals: &[Value]) -> R<Value> {
        let sig = family.sig();
        let fname = format!("{}_rng", sig.name);
        self.mv_size_fault(sig, &fname, vals, true)?;
        let flats = vals
            .iter()
            .map(|v| self.flatten(&fname, v))
            .collect::<R<Vec<Flat>>>()?;
        let args: Vec<MvArg> = flats
            .iter()
            .map(|f| MvArg {
                data: &f.data,
                array: f.array,
                rows: f.rows,
                cols: f.cols,
            })
            .collect();
        let Some(rng) = self.rng.as_deref_mut() else {
            return Err(Fault::fatal(format!(
                "{fname} is only allowed in generated quantities"
            )));
        };
        let draw =
            multivariate::rng(family, &args, rng).map_err(|e| Fault::domain(e.to_string()))?;
        let real = |arr: Vec<usize>, base: Base, data: Vec<f64>| {
            Value::from_tensor(Tensor {
                arr,
                base,
                data: Data::Real(Arc::new(data)),
            })
        };
        Ok(match draw {
            MvDraw::Int(i) => Value::Int(i),
            MvDraw::Vector(v) => real(vec![], Base::Vector(v.len()), v),
            MvDraw::Vectors(vs) => {
                let k = vs.first().map_or(0, Vec::len);
                real(vec![vs.len()], Base::Vector(k), vs.concat())
            }
            MvDraw::Matrix { k, data } => real(vec![], Base::Matrix(k, k), data),
        })
    }
}
