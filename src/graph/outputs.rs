//! From unconstrained draws to outputs and back: constrained parameters, transformed
//! parameters and generated quantities per draw ([`Model::write_array`]), and
//! [`Model::unconstrain`] for initial values and saved fits.

use super::*;

impl Model {
    /// ζ → constrained parameters, then transformed parameters (if `include_tp`), then
    /// generated quantities (if `include_gq`), one f64 per name of [`Model::parameter_names`],
    /// [`Model::transformed_parameter_names`], [`Model::generated_quantity_names`], in that order.
    ///
    /// Errors: as [`LogDensity::log_density`], plus failures in generated quantities.
    pub fn write_array(
        &self,
        zeta: &[f64],
        include_tp: bool,
        include_gq: bool,
        rng: &mut StreamRng,
    ) -> Result<Vec<f64>, DensityError> {
        if zeta.len() != self.dim {
            return Err(DensityError::fatal(format!(
                "expected {} unconstrained values, got {}",
                self.dim,
                zeta.len()
            )));
        }
        with_tape(|tape| {
            tape.reset(false);
            for &z in zeta {
                tape.leaf(z);
            }
            let mut ctx = Ctx::new(&self.globals, self.n_slots, tape);
            ctx.funcs = &self.funcs;
            ctx.fast_loops = self.fast_loops;
            ctx.rng = Some(rng);
            let r = (|| -> Result<(), Located> {
                let mut lj = Vec::new();
                self.bind_params(&mut ctx, &mut lj)?;
                if include_tp || include_gq {
                    ctx.exec_all(&self.tp_body)?;
                    self.check_outputs(&mut ctx, &self.tparams, true)?;
                }
                if include_gq {
                    ctx.exec_all(&self.gq_body)?;
                    self.check_outputs(&mut ctx, &self.gqs, false)?;
                }
                Ok(())
            })();
            r.map_err(|l| self.density_error(l))?;
            let mut out = Vec::new();
            let mut emit = |slot: u32, arr: &[usize], base: Base| {
                let v = &ctx.env[slot as usize];
                for o in stan_order_offsets(arr, base) {
                    out.push(ctx.tape.value(v.elem(o)));
                }
            };
            for p in &self.params {
                emit(p.slot, &p.arr, p.base);
            }
            if include_tp {
                for p in &self.tparams {
                    emit(p.slot, &p.arr, p.base);
                }
            }
            if include_gq {
                for p in &self.gqs {
                    emit(p.slot, &p.arr, p.base);
                }
            }
            Ok(out)
        })
    }

    /// Constrained values (same order as [`Model::parameter_names`]) → ζ, for user initial
    /// values. Errors (unrecoverable): wrong length, a value outside its declared support.
    pub fn unconstrain(&self, constrained: &[f64]) -> Result<Vec<f64>, DensityError> {
        let total: usize = self
            .params
            .iter()
            .map(|p| p.arr.iter().product::<usize>() * p.base.size())
            .sum();
        if constrained.len() != total {
            return Err(DensityError::fatal(format!(
                "expected {total} constrained values, got {}",
                constrained.len()
            )));
        }
        with_tape(|tape| {
            tape.reset(false);
            let mut ctx = Ctx::new(&self.globals, self.n_slots, tape);
            ctx.funcs = &self.funcs;
            ctx.fast_loops = self.fast_loops;
            let mut zeta = vec![0.0; self.dim];
            let mut pos = 0;
            for p in &self.params {
                let loc = |fault: Fault| {
                    self.density_error(Located {
                        fault,
                        span: p.span,
                    })
                };
                let n = p.arr.iter().product::<usize>() * p.base.size();
                let mut x = vec![0.0; n];
                for (k, o) in stan_order_offsets(&p.arr, p.base).into_iter().enumerate() {
                    x[o] = constrained[pos + k];
                }
                pos += n;
                let bound = |ctx: &mut Ctx,
                             e: &Option<Ex>,
                             i: usize,
                             d: f64|
                 -> Result<f64, DensityError> {
                    match e {
                        None => Ok(d),
                        Some(e) => {
                            let v = ctx.eval(e).map_err(loc)?;
                            Ok(match v.as_s() {
                                Some(s) => ctx.tape.value(s),
                                None if v.num_elements() == n => ctx.tape.value(v.elem(i)),
                                None => {
                                    return Err(loc(Fault::fatal(format!(
                                        "bound of `{}` has {} elements, the parameter {n}",
                                        p.name,
                                        v.num_elements()
                                    ))));
                                }
                            })
                        }
                    }
                };
                let u: Vec<f64> = match &p.transform {
                    Transform::Identity => x.clone(),
                    Transform::Lower(l) => {
                        let l = Some(l.clone());
                        (0..n)
                            .map(|i| {
                                transforms::lb_free(x[i], bound(&mut ctx, &l, i, 0.0)?).map_err(loc)
                            })
                            .collect::<Result<_, _>>()?
                    }
                    Transform::Upper(h) => {
                        let h = Some(h.clone());
                        (0..n)
                            .map(|i| {
                                transforms::ub_free(x[i], bound(&mut ctx, &h, i, 0.0)?).map_err(loc)
                            })
                            .collect::<Result<_, _>>()?
                    }
                    Transform::LowerUpper(l, h) => {
                        let (l, h) = (Some(l.clone()), Some(h.clone()));
                        (0..n)
                            .map(|i| {
                                let a = bound(&mut ctx, &l, i, 0.0)?;
                                let b = bound(&mut ctx, &h, i, 0.0)?;
                                transforms::lub_free(x[i], a, b).map_err(loc)
                            })
                            .collect::<Result<_, _>>()?
                    }
                    Transform::Affine(o, m) => (0..n)
                        .map(|i| {
                            let a = bound(&mut ctx, o, i, 0.0)?;
                            let b = bound(&mut ctx, m, i, 1.0)?;
                            transforms::affine_free(x[i], a, b).map_err(loc)
                        })
                        .collect::<Result<_, _>>()?,
                    Transform::Ordered | Transform::PositiveOrdered => {
                        let pos = matches!(p.transform, Transform::PositiveOrdered);
                        let mut u = Vec::with_capacity(n);
                        for c in x.chunks(p.base.size().max(1)) {
                            u.extend(transforms::ordered_free(c, pos).map_err(loc)?);
                        }
                        u
                    }
                    Transform::CholeskyCorr
                    | Transform::CholeskyCov
                    | Transform::CovMatrix
                    | Transform::CorrMatrix => {
                        let (k, _) = p.base.matrix_dims();
                        let mut u = Vec::with_capacity(p.free);
                        for c in x.chunks((k * k).max(1)) {
                            u.extend(
                                match p.transform {
                                    Transform::CholeskyCorr => transforms::cholesky_corr_free(c, k),
                                    Transform::CholeskyCov => transforms::cholesky_cov_free(c, k),
                                    Transform::CorrMatrix => transforms::corr_matrix_free(c, k),
                                    _ => transforms::cov_matrix_free(c, k),
                                }
                                .map_err(loc)?,
                            );
                        }
                        u
                    }
                    Transform::Simplex => {
                        let mut u = Vec::with_capacity(p.free);
                        for c in x.chunks(p.base.size().max(1)) {
                            u.extend(transforms::simplex_free(c).map_err(loc)?);
                        }
                        u
                    }
                };
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
