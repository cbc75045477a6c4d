//! From constrained parameter values back to the unconstrained scale: [`Model::unconstrain`]
//! (saved fits, predictions) and [`Model::unconstrain_partial`] (user initial values, where
//! some parameters are given and the others keep a random start), with each failure located
//! at its parameter and element ([`UnconstrainFault`]).

use super::*;

/// A parameter's declared layout, for reading values of it from a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamLayout {
    /// The name as declared.
    pub name: String,
    /// Declared sizes, outermost first: the array sizes, then the element's own (`[]` for a
    /// `real`, `[N]` for `vector[N]`, `[R, C]` for `matrix[R, C]`, `[K, K]` for
    /// `cov_matrix[K]`, `[N, K]` for `array[N] simplex[K]`). A JSON file gives such a value as
    /// nested arrays, row-major (a matrix as an array of its rows).
    pub dims: Vec<usize>,
}

/// Why a constrained value of a parameter has no unconstrained counterpart.
#[derive(Clone, Debug, PartialEq)]
pub struct UnconstrainFault {
    /// The parameter, as an index into [`Model::parameter_layouts`].
    pub param: usize,
    /// 1-based index (outermost first) of the offending element, or of the array element that
    /// holds an offending vector or matrix (a simplex, a covariance matrix); empty when the
    /// whole (non-array) parameter is at fault.
    pub index: Vec<usize>,
    /// The reason, e.g. "is below its lower bound 0".
    pub message: String,
}

/// The 1-based multi-index (array sizes `arr`, then the element's own) of internal offset
/// `off` of a parameter: arrays row-major, each element of `base.size()` values, matrices
/// column-major (the graph's layout; `value::stan_order_offsets`).
fn internal_index(arr: &[usize], base: Base, off: usize) -> Vec<usize> {
    let bs = base.size().max(1);
    let (mut a, w) = (off / bs, off % bs);
    let mut idx = vec![0; arr.len()];
    for k in (0..arr.len()).rev() {
        let n = arr[k].max(1);
        idx[k] = a % n;
        a /= n;
    }
    match base {
        Base::Scalar => {}
        Base::Vector(_) | Base::RowVector(_) => idx.push(w),
        Base::Matrix(r, _) => {
            idx.push(w % r.max(1));
            idx.push(w / r.max(1));
        }
    }
    idx.into_iter().map(|i| i + 1).collect()
}

/// The 1-based array index of chunk `c` (the c-th vector or matrix, row-major over `arr`).
fn chunk_index(arr: &[usize], c: usize) -> Vec<usize> {
    internal_index(arr, Base::Scalar, c)
}

/// A transform's message without its function-name prefix ("simplex_free: values …" →
/// "values …").
fn reason(fault: &Fault) -> String {
    let m = fault.message.as_str();
    match m.split_once(": ") {
        Some((head, rest)) if head.ends_with("_free") => rest.to_string(),
        _ => m.to_string(),
    }
}

/// Checks `x` against the bounds (lb, ub) of a bounded transform: inside them, or the reason.
fn check_bounds(x: f64, lb: f64, ub: f64) -> Result<(), String> {
    const AT: &str = "a value at a bound is ±∞ on the unconstrained scale, where the log \
                      density is −∞; give a value strictly inside the bounds";
    if x.is_nan() {
        return Err("is NaN".into());
    }
    if x == lb {
        return Err(format!("equals its lower bound {lb}: {AT}"));
    }
    if x == ub {
        return Err(format!("equals its upper bound {ub}: {AT}"));
    }
    if x < lb {
        return Err(format!("is below its lower bound {lb}"));
    }
    if x > ub {
        return Err(format!("is above its upper bound {ub}"));
    }
    Ok(())
}

impl Model {
    /// Each parameter's name and declared sizes, in declaration order (the order of the
    /// blocks of [`Model::parameter_names`]).
    pub fn parameter_layouts(&self) -> Vec<ParamLayout> {
        self.params
            .iter()
            .map(|p| {
                let mut dims = p.arr.clone();
                dims.extend(p.base.dims());
                ParamLayout {
                    name: p.name.clone(),
                    dims,
                }
            })
            .collect()
    }

    /// For each unconstrained coordinate (length d), the name of the parameter it belongs to
    /// (with its 1-based index for an array or vector element, as in
    /// [`Model::parameter_names`]) when that parameter is declared without bounds or other
    /// constraints, so that the coordinate is the parameter's value itself; `None` for the
    /// coordinates of a constrained parameter and of one with two or more indices (a matrix or
    /// an array of vectors). For advice that names a bound to declare ([X]:
    /// a fresh-user finding, session 21, `y ~ normal(log(mu), 1)` with `real mu`).
    pub fn identity_coordinates(&self) -> Vec<Option<String>> {
        let names = self.parameter_names();
        let mut out = vec![None; self.dim];
        let mut k = 0;
        for p in &self.params {
            let n_values =
                p.arr.iter().product::<usize>() * p.base.dims().iter().product::<usize>();
            // one index at most, where the names' order is the coordinates' order
            let flat = p.arr.len() + p.base.dims().len() <= 1;
            if flat && matches!(p.transform, Transform::Identity) && p.free == n_values {
                for i in 0..p.free {
                    if let (Some(o), Some(n)) = (out.get_mut(p.offset + i), names.get(k + i)) {
                        *o = Some(n.clone());
                    }
                }
            }
            k += n_values;
        }
        out
    }

    /// Constrained values (same order as [`Model::parameter_names`]) → ζ, for saved fits and
    /// predictions. Errors (unrecoverable): wrong length, a value outside its declared support
    /// (naming the parameter and element).
    pub fn unconstrain(&self, constrained: &[f64]) -> Result<Vec<f64>, DensityError> {
        let given = vec![true; self.params.len()];
        let fill = vec![0.0; self.dim];
        self.unconstrain_partial(constrained, &given, &fill)
            .map_err(|f| {
                let p = &self.params[f.param];
                let at = if f.index.is_empty() {
                    String::new()
                } else {
                    let i: Vec<String> = f.index.iter().map(|i| i.to_string()).collect();
                    format!("[{}]", i.join(", "))
                };
                let mut e = DensityError::fatal(format!("`{}{at}` {}", p.name, f.message));
                e.location = Some(self.location(p.span));
                e
            })
    }

    /// ζ from constrained values for the parameters with `given[p]` (indexed as
    /// [`Model::parameter_layouts`]) and from `fill` (length d, unconstrained) for the others.
    /// `constrained` holds every parameter's values in [`Model::parameter_names`] order; those
    /// of a parameter not given must be θ(`fill`) (e.g. from [`Model::write_array`]), since
    /// later bounds may refer to them.
    ///
    /// Errors: wrong lengths (`param` 0, empty index), a given value outside its declared
    /// support — below or above a bound, exactly at one (its unconstrained value would be
    /// ±∞), not a simplex, not ordered, not a valid covariance or correlation matrix or
    /// Cholesky factor, or any value mapping to a non-finite ζ — located at its parameter and
    /// element ([`UnconstrainFault`]), and bounds that cannot be evaluated.
    pub fn unconstrain_partial(
        &self,
        constrained: &[f64],
        given: &[bool],
        fill: &[f64],
    ) -> Result<Vec<f64>, UnconstrainFault> {
        let total: usize = self
            .params
            .iter()
            .map(|p| p.arr.iter().product::<usize>() * p.base.size())
            .sum();
        let whole = |message: String| UnconstrainFault {
            param: 0,
            index: Vec::new(),
            message,
        };
        if constrained.len() != total {
            return Err(whole(format!(
                "expected {total} constrained values, got {}",
                constrained.len()
            )));
        }
        if given.len() != self.params.len() || fill.len() != self.dim {
            return Err(whole(format!(
                "expected {} parameters and {} unconstrained values, got {} and {}",
                self.params.len(),
                self.dim,
                given.len(),
                fill.len()
            )));
        }
        with_tape(|tape| {
            tape.reset(false);
            let mut ctx = Ctx::new(&self.globals, self.n_slots, tape);
            ctx.funcs = &self.funcs;
            ctx.fast_loops = self.fast_loops;
            ctx.native_loops = self.native_loops;
            let mut zeta = vec![0.0; self.dim];
            let mut pos = 0;
            for (pi, p) in self.params.iter().enumerate() {
                let fault = |index: Vec<usize>, message: String| UnconstrainFault {
                    param: pi,
                    index,
                    message,
                };
                let n = p.arr.iter().product::<usize>() * p.base.size();
                let mut x = vec![0.0; n];
                for (k, o) in stan_order_offsets(&p.arr, p.base).into_iter().enumerate() {
                    x[o] = constrained[pos + k];
                }
                pos += n;
                if !given[pi] {
                    zeta[p.offset..p.offset + p.free]
                        .copy_from_slice(&fill[p.offset..p.offset + p.free]);
                    ctx.env[p.slot as usize] = Value::from_tensor(Tensor {
                        arr: p.arr.clone(),
                        base: p.base,
                        data: Data::Real(Arc::new(x)),
                    });
                    continue;
                }
                let mut bound =
                    |e: &Option<Ex>, i: usize, d: f64| -> Result<f64, UnconstrainFault> {
                        match e {
                            None => Ok(d),
                            Some(e) => {
                                let v = ctx.eval(e).map_err(|l| {
                                    fault(
                                        Vec::new(),
                                        format!(
                                            "has a bound that cannot be evaluated: {}",
                                            self.density_error(Located {
                                                fault: l,
                                                span: p.span
                                            })
                                        ),
                                    )
                                })?;
                                Ok(match v.as_s() {
                                    Some(s) => ctx.tape.value(s),
                                    None if v.num_elements() == n => ctx.tape.value(v.elem(i)),
                                    None => {
                                        return Err(fault(
                                            Vec::new(),
                                            format!(
                                                "has a bound of {} elements, but {n} elements",
                                                v.num_elements()
                                            ),
                                        ));
                                    }
                                })
                            }
                        }
                    };
                let at = |i: usize| internal_index(&p.arr, p.base, i);
                let elementwise = matches!(
                    p.transform,
                    Transform::Identity
                        | Transform::Lower(_)
                        | Transform::Upper(_)
                        | Transform::LowerUpper(..)
                        | Transform::Affine(..)
                );
                let u: Vec<f64> = match &p.transform {
                    Transform::Identity => x.clone(),
                    Transform::Lower(_) | Transform::Upper(_) | Transform::LowerUpper(..) => {
                        let (l, h) = match &p.transform {
                            Transform::Lower(l) => (Some(l.clone()), None),
                            Transform::Upper(h) => (None, Some(h.clone())),
                            Transform::LowerUpper(l, h) => (Some(l.clone()), Some(h.clone())),
                            _ => (None, None),
                        };
                        let mut u = Vec::with_capacity(n);
                        for (i, &xi) in x.iter().enumerate() {
                            let a = bound(&l, i, f64::NEG_INFINITY)?;
                            let b = bound(&h, i, f64::INFINITY)?;
                            check_bounds(xi, a, b).map_err(|m| fault(at(i), m))?;
                            u.push(
                                transforms::lub_free(xi, a, b)
                                    .map_err(|f| fault(at(i), reason(&f)))?,
                            );
                        }
                        u
                    }
                    Transform::Affine(o, m) => {
                        let mut u = Vec::with_capacity(n);
                        for (i, &xi) in x.iter().enumerate() {
                            let a = bound(o, i, 0.0)?;
                            let b = bound(m, i, 1.0)?;
                            u.push(
                                transforms::affine_free(xi, a, b)
                                    .map_err(|f| fault(at(i), reason(&f)))?,
                            );
                        }
                        u
                    }
                    Transform::Ordered | Transform::PositiveOrdered => {
                        let pos = matches!(p.transform, Transform::PositiveOrdered);
                        let mut u = Vec::with_capacity(n);
                        for (c, chunk) in x.chunks(p.base.size().max(1)).enumerate() {
                            u.extend(transforms::ordered_free(chunk, pos).map_err(|f| {
                                fault(
                                    chunk_index(&p.arr, c),
                                    format!(
                                        "is not {}: {}",
                                        if pos {
                                            "a positive ordered vector"
                                        } else {
                                            "an ordered vector"
                                        },
                                        reason(&f)
                                    ),
                                )
                            })?);
                        }
                        u
                    }
                    Transform::CholeskyCorr
                    | Transform::CholeskyCov
                    | Transform::CovMatrix
                    | Transform::CorrMatrix => {
                        let (k, _) = p.base.matrix_dims();
                        let mut u = Vec::with_capacity(p.free);
                        for (c, chunk) in x.chunks((k * k).max(1)).enumerate() {
                            u.extend(
                                match p.transform {
                                    Transform::CholeskyCorr => {
                                        transforms::cholesky_corr_free(chunk, k)
                                    }
                                    Transform::CholeskyCov => {
                                        transforms::cholesky_cov_free(chunk, k)
                                    }
                                    Transform::CorrMatrix => transforms::corr_matrix_free(chunk, k),
                                    _ => transforms::cov_matrix_free(chunk, k),
                                }
                                .map_err(|f| {
                                    let kind = match p.transform {
                                        Transform::CholeskyCorr => {
                                            "a Cholesky factor of a correlation matrix"
                                        }
                                        Transform::CholeskyCov => {
                                            "a Cholesky factor of a covariance matrix"
                                        }
                                        Transform::CorrMatrix => "a correlation matrix",
                                        _ => "a covariance matrix (symmetric positive definite)",
                                    };
                                    fault(
                                        chunk_index(&p.arr, c),
                                        format!("is not {kind}: {}", reason(&f)),
                                    )
                                })?,
                            );
                        }
                        u
                    }
                    Transform::Simplex => {
                        let mut u = Vec::with_capacity(p.free);
                        for (c, chunk) in x.chunks(p.base.size().max(1)).enumerate() {
                            u.extend(transforms::simplex_free(chunk).map_err(|f| {
                                fault(
                                    chunk_index(&p.arr, c),
                                    format!("is not a simplex: {}", reason(&f)),
                                )
                            })?);
                        }
                        u
                    }
                };
                if u.len() != p.free {
                    return Err(fault(
                        Vec::new(),
                        format!(
                            "gives {} unconstrained values, expected {}",
                            u.len(),
                            p.free
                        ),
                    ));
                }
                if let Some(j) = u.iter().position(|v| !v.is_finite()) {
                    // elementwise transforms map element j to coordinate j; the others map a
                    // whole vector or matrix to a block of coordinates
                    let index = if elementwise {
                        at(j)
                    } else {
                        let per = p.free / p.arr.iter().product::<usize>().max(1);
                        chunk_index(&p.arr, j / per.max(1))
                    };
                    return Err(fault(
                        index,
                        format!(
                            "lies on the boundary of its support: it maps to {} on the \
                             unconstrained scale, where the log density is −∞ (e.g. a simplex \
                             element or a correlation of exactly 0 or 1); give a value strictly \
                             inside",
                            u[j]
                        ),
                    ));
                }
                zeta[p.offset..p.offset + p.free].copy_from_slice(&u);
                // Later bounds may refer to this parameter.
                ctx.env[p.slot as usize] = Value::from_tensor(Tensor {
                    arr: p.arr.clone(),
                    base: p.base,
                    data: Data::Real(Arc::new(x)),
                });
            }
            Ok(zeta)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_offsets_map_to_one_based_indices() {
        // array[2] matrix[2, 3]: arrays row-major, matrices column-major inside
        let base = Base::Matrix(2, 3);
        assert_eq!(internal_index(&[2], base, 0), [1, 1, 1]);
        assert_eq!(internal_index(&[2], base, 1), [1, 2, 1]);
        assert_eq!(internal_index(&[2], base, 2), [1, 1, 2]);
        assert_eq!(internal_index(&[2], base, 7), [2, 2, 1]);
        assert_eq!(internal_index(&[], Base::Scalar, 0), Vec::<usize>::new());
        assert_eq!(internal_index(&[3, 2], Base::Scalar, 5), [3, 2]);
        assert_eq!(chunk_index(&[2, 2], 2), [2, 1]);
    }

    #[test]
    fn bounds_name_the_reason() {
        assert!(
            check_bounds(-1.0, 0.0, f64::INFINITY)
                .unwrap_err()
                .contains("below")
        );
        assert!(
            check_bounds(0.0, 0.0, f64::INFINITY)
                .unwrap_err()
                .starts_with("equals its lower bound 0")
        );
        assert!(
            check_bounds(1.0, 0.0, 1.0)
                .unwrap_err()
                .contains("upper bound 1")
        );
        assert!(check_bounds(0.5, 0.0, 1.0).is_ok());
    }
}
