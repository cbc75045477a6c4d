//! Building a [`Model`]: lowering the checked program, binding the data, running
//! `transformed data`, and laying out parameters and outputs.

use super::*;

impl Model {
    /// Compiles a checked program against bound data: lowers every block, converts the data,
    /// and evaluates `transformed data` once.
    ///
    /// Errors: [`GraphError`] at the span of the offending declaration, statement or
    /// expression (missing or ill-shaped data, unknown names, unsupported features, failures in
    /// `transformed data`).
    pub fn new(program: &ast::Program, data: &BoundData) -> Result<Model, GraphError> {
        // Cloning shares the buffers (only matrices are then copied, to transpose them).
        Model::from_bound(program, data.clone())
    }

    /// As [`Model::new`], taking the bound data: every buffer is moved into the model, and a
    /// matrix that no data source shares (one bound from CSV columns) is transposed in place,
    /// so that the model holds the data's only copy (docs/memory.md).
    ///
    /// Errors: those of [`Model::new`].
    pub fn from_bound(program: &ast::Program, mut data: BoundData) -> Result<Model, GraphError> {
        let mut c = Compiler::new();
        let (table, funcs) = compile::lower_functions(&program.functions)?;
        c.funcs = table;
        let mut globals: Vec<Value> = Vec::new();
        let mut global_names: Vec<String> = Vec::new();
        let mut tape = Tape::default();
        tape.reset(false);

        // data
        let mut pending_imputed = Vec::new();
        for d in &program.data {
            let ty = c.decl_ty(&d.ty, false)?;
            let (arr, base) = {
                let mut ctx = Ctx::new(&globals, c.n_slots as usize, &mut tape);
                ctx.funcs = &funcs;
                ctx.eval_type(&ty).map_err(|f| GraphError::Eval {
                    message: f.message.clone(),
                    span: d.ty.span,
                    origin: f.origin,
                })?
            };
            let name = &d.name.name;
            let dv = data
                .values
                .remove(name)
                .ok_or_else(|| GraphError::MissingData {
                    name: name.clone(),
                    span: d.span,
                })?;
            let mut want = arr.clone();
            want.extend(base.dims());
            if dv.dims != want {
                return Err(GraphError::BadData {
                    name: name.clone(),
                    message: format!("declared with sizes {want:?}, data has sizes {:?}", dv.dims),
                    span: d.span,
                });
            }
            if dv.values.len() != want.iter().product::<usize>() {
                return Err(GraphError::BadData {
                    name: name.clone(),
                    message: format!("{} values given for sizes {want:?}", dv.values.len()),
                    span: d.span,
                });
            }
            // NaN marks an unobserved outcome (`data::bind_unobserved`); files cannot give NaN
            // to an int variable (binding refuses it).
            if ty.int && !dv.values.iter().all(|x| x.fract() == 0.0 || x.is_nan()) {
                return Err(GraphError::BadData {
                    name: name.clone(),
                    message: "declared int, but the data has non-integer values".into(),
                    span: d.span,
                });
            }
            let xs = if dv.column_major {
                dv.values
            } else {
                data_to_storage(dv.values, base)
            };
            let data = if ty.int {
                Data::Int(xs)
            } else {
                Data::Real(xs)
            };
            let imputed = d.annotations.iter().any(|a| a.name.name == "missing")
                && !ty.int
                && matches!(&data, Data::Real(xs) if xs.iter().any(|x| x.is_nan()));
            if imputed {
                let Data::Real(xs) = &data else {
                    unreachable!("checked real")
                };
                let (offsets, indices) = impute::missing_entries(&arr, base, xs);
                // The observed values live under an internal name; `name` itself is the
                // completed variable, a top-level slot bound after the parameters.
                let internal = format!("{name}__observed");
                c.bind_global(&internal, globals.len() as u32);
                global_names.push(internal);
                pending_imputed.push((d, globals.len(), arr.clone(), base, offsets, indices));
                globals.push(Value::from_tensor(Tensor { arr, base, data }));
                continue;
            }
            let v = Value::from_tensor(Tensor { arr, base, data });
            c.bind_global(name, globals.len() as u32);
            global_names.push(name.clone());
            globals.push(v);
        }

        // transformed data: lowered with top-level slots, run once, then moved to globals.
        let mut td_sts = Vec::new();
        let mut td_vars = Vec::new();
        for s in &program.transformed_data {
            let st = c.stmt(s)?;
            if let (StmtKind::Decl(d), StKind::Decl { slot, .. }) = (&s.kind, &st.kind) {
                let lower =
                    d.ty.constraint
                        .lower
                        .as_ref()
                        .map(|e| c.expr(e))
                        .transpose()?;
                let upper =
                    d.ty.constraint
                        .upper
                        .as_ref()
                        .map(|e| c.expr(e))
                        .transpose()?;
                td_vars.push((d.name.name.clone(), *slot, lower, upper, d.span));
            }
            td_sts.push(st);
        }
        if !td_sts.is_empty() {
            let mut ctx = Ctx::new(&globals, c.n_slots as usize, &mut tape);
            ctx.funcs = &funcs;
            ctx.exec_all(&td_sts).map_err(eval_err)?;
            for (name, slot, lower, upper, span) in &td_vars {
                let v = ctx.env[*slot as usize].clone();
                check_bounds(&mut ctx, name, &v, lower.as_ref(), upper.as_ref(), false)
                    .map_err(|fault| eval_err(Located { fault, span: *span }))?;
            }
            let mut env = std::mem::take(&mut ctx.env);
            drop(ctx);
            for (name, slot, ..) in td_vars {
                let v = std::mem::replace(&mut env[slot as usize], Value::Int(0));
                c.bind_global(&name, globals.len() as u32);
                global_names.push(name.clone());
                globals.push(v);
            }
        }

        // parameters
        let mut params = Vec::new();
        let mut dim = 0usize;
        for d in &program.parameters {
            if matches!(d.ty.base, SizedBase::Int) {
                return Err(GraphError::Unsupported {
                    what: "integer parameters".into(),
                    span: d.ty.span,
                });
            }
            let ty = c.decl_ty(&d.ty, false)?;
            let (arr, base) = {
                let mut ctx = Ctx::new(&globals, c.n_slots as usize, &mut tape);
                ctx.funcs = &funcs;
                ctx.eval_type(&ty).map_err(|f| GraphError::Eval {
                    message: f.message.clone(),
                    span: d.ty.span,
                    origin: f.origin,
                })?
            };
            let k = &d.ty.constraint;
            let special = matches!(
                d.ty.base,
                SizedBase::Simplex(_)
                    | SizedBase::Ordered(_)
                    | SizedBase::PositiveOrdered(_)
                    | SizedBase::CholeskyFactorCorr(_)
                    | SizedBase::CholeskyFactorCov(_)
                    | SizedBase::CovMatrix(_)
                    | SizedBase::CorrMatrix(_)
            );
            if special && !k.is_empty() {
                return Err(GraphError::Unsupported {
                    what: "bounds on simplex/ordered types".into(),
                    span: d.ty.span,
                });
            }
            let lower = k.lower.as_ref().map(|e| c.expr(e)).transpose()?;
            let upper = k.upper.as_ref().map(|e| c.expr(e)).transpose()?;
            let offset = k.offset.as_ref().map(|e| c.expr(e)).transpose()?;
            let mult = k.multiplier.as_ref().map(|e| c.expr(e)).transpose()?;
            let transform = match (&d.ty.base, lower, upper, offset, mult) {
                (SizedBase::Simplex(_), ..) => Transform::Simplex,
                (SizedBase::Ordered(_), ..) => Transform::Ordered,
                (SizedBase::PositiveOrdered(_), ..) => Transform::PositiveOrdered,
                (SizedBase::CholeskyFactorCorr(_), ..) => Transform::CholeskyCorr,
                (SizedBase::CholeskyFactorCov(_), ..) => Transform::CholeskyCov,
                (SizedBase::CovMatrix(_), ..) => Transform::CovMatrix,
                (SizedBase::CorrMatrix(_), ..) => Transform::CorrMatrix,
                (_, None, None, None, None) => Transform::Identity,
                (_, Some(l), None, None, None) => Transform::Lower(l),
                (_, None, Some(u), None, None) => Transform::Upper(u),
                (_, Some(l), Some(u), None, None) => Transform::LowerUpper(l, u),
                (_, None, None, o, m) => Transform::Affine(o, m),
                _ => {
                    return Err(GraphError::Unsupported {
                        what: "bounds combined with offset/multiplier".into(),
                        span: d.ty.span,
                    });
                }
            };
            let n = arr.iter().product::<usize>() * base.size();
            let free = match transform {
                Transform::Simplex => {
                    let k = base.size();
                    if k == 0 {
                        return Err(GraphError::Eval {
                            message: "a simplex needs at least one element".into(),
                            span: d.ty.span,
                            origin: None,
                        });
                    }
                    n - n / k
                }
                Transform::CholeskyCorr
                | Transform::CholeskyCov
                | Transform::CovMatrix
                | Transform::CorrMatrix => {
                    let (k, _) = base.matrix_dims();
                    let per =
                        if matches!(transform, Transform::CholeskyCorr | Transform::CorrMatrix) {
                            transforms::cholesky_corr_free_dim(k)
                        } else {
                            transforms::cholesky_cov_free_dim(k)
                        };
                    if k == 0 { 0 } else { n / (k * k) * per }
                }
                _ => n,
            };
            let slot = c.declare_local(&d.name.name);
            params.push(ParamInfo {
                name: d.name.name.clone(),
                slot,
                arr,
                base,
                offset: dim,
                free,
                transform,
                dropout: d
                    .annotations
                    .iter()
                    .find(|a| a.name.name == "dropout")
                    .and_then(|a| a.value),
                span: d.span,
            });
            dim += free;
        }

        // imputed data: one parameter per missing entry, then the completed variable's slot
        let mut imputed = Vec::new();
        for (d, observed, arr, base, offsets, indices) in pending_imputed {
            let k = &d.ty.constraint;
            let lower = k.lower.as_ref().map(|e| c.expr(e)).transpose()?;
            let upper = k.upper.as_ref().map(|e| c.expr(e)).transpose()?;
            let transform = match (lower, upper) {
                (None, None) => Transform::Identity,
                (Some(l), None) => Transform::Lower(l),
                (None, Some(u)) => Transform::Upper(u),
                (Some(l), Some(u)) => Transform::LowerUpper(l, u),
            };
            let name = &d.name.name;
            let n_missing = offsets.len();
            let slot = c.declare_local(&format!("{name}__missing"));
            imputed.push(impute::Imputed {
                name: name.clone(),
                slot: c.declare_local(name),
                observed,
                param: params.len(),
                arr,
                base,
                offsets,
                indices,
            });
            params.push(ParamInfo {
                name: format!("{name}_missing"),
                slot,
                arr: Vec::new(),
                base: Base::Vector(n_missing),
                offset: dim,
                free: n_missing,
                transform,
                dropout: None,
                span: d.span,
            });
            dim += n_missing;
        }

        // transformed parameters (top-level scope: visible in model and generated quantities)
        let tp_body = Self::lower_outputs(
            &mut c,
            &program.transformed_parameters,
            &globals,
            &mut tape,
            &mut Vec::new(),
        )?;
        let mut tparams = Vec::new();
        let tp_body = {
            let (b, outs) = tp_body;
            tparams.extend(outs);
            b
        };
        c.push();
        let model_body: Result<Vec<St>, GraphError> =
            program.model.iter().map(|s| c.stmt(s)).collect();
        c.pop();
        let mut model_body = model_body?;
        fuse::plan_model(&mut model_body, &globals, &global_names)?;
        let (gq_body, gqs) = Self::lower_outputs(
            &mut c,
            &program.generated_quantities,
            &globals,
            &mut tape,
            &mut Vec::new(),
        )?;

        let gq_deps = gq_deps::deps(&gq_body);
        let param_slots: Vec<u32> = params
            .iter()
            .map(|p| p.slot)
            .chain(tparams.iter().map(|t| t.slot))
            .collect();
        let gq_uses_params = gq_deps::parameter_dependence(&gq_deps, &param_slots);
        Ok(Model {
            globals,
            global_names,
            n_slots: c.n_slots as usize,
            params,
            tparams,
            gqs,
            tp_body,
            model_body,
            gq_deps,
            gq_uses_params,
            gq_left_out: Vec::new(),
            gq_body,
            dim,
            funcs,
            files: Vec::new(),
            fast_loops: true,
            native_loops: true,
            fuse_glm: true,
            imputed,
            missing_declared: program
                .data
                .iter()
                .filter(|d| d.annotations.iter().any(|a| a.name.name == "missing"))
                .map(|d| d.name.name.clone())
                .collect(),
            op_spans: op_spans::collect(program),
        })
    }

    /// Lowers a block whose top-level declarations are outputs (transformed parameters,
    /// generated quantities); their sizes are evaluated now (they may depend on data only).
    #[allow(clippy::type_complexity)]
    pub(super) fn lower_outputs(
        c: &mut Compiler,
        stmts: &[ast::Stmt],
        globals: &[Value],
        tape: &mut Tape,
        _unused: &mut Vec<()>,
    ) -> Result<(Vec<St>, Vec<OutVar>), GraphError> {
        let mut body = Vec::new();
        let mut outs = Vec::new();
        for s in stmts {
            let st = c.stmt(s)?;
            if let (StmtKind::Decl(d), StKind::Decl { slot, ty, .. }) = (&s.kind, &st.kind) {
                let (arr, base) = {
                    let mut ctx = Ctx::new(globals, c.n_slots as usize, tape);
                    ctx.eval_type(ty).map_err(|f| GraphError::Eval {
                        message: f.message.clone(),
                        span: d.ty.span,
                        origin: f.origin,
                    })?
                };
                let k = &d.ty.constraint;
                outs.push(OutVar {
                    name: d.name.name.clone(),
                    slot: *slot,
                    arr,
                    base,
                    lower: k.lower.as_ref().map(|e| c.expr(e)).transpose()?,
                    upper: k.upper.as_ref().map(|e| c.expr(e)).transpose()?,
                    span: d.span,
                });
            }
            body.push(st);
        }
        Ok((body, outs))
    }
}
