//! From unconstrained draws to outputs and back: constrained parameters, transformed
//! parameters and generated quantities per draw ([`Model::write_array`], and
//! [`Model::write_outputs`], where a generated quantity that fails leaves the others); the way
//! back is [`Model::unconstrain`] (`unconstrain.rs`).

use super::*;

/// The generated quantities [`Model::write_outputs`] could not compute at one draw: they hold
/// NaN in its row, the others keep their values.
#[derive(Clone, Debug)]
pub struct GqFailure {
    /// The first failure, in statement order (then the declared bounds, in declaration order).
    pub error: DensityError,
    /// The generated quantities (declared names, each standing for all its elements) that hold
    /// NaN, in declaration order.
    pub variables: Vec<String>,
    /// Whether what failed first may depend on the parameters: false when its statement reads
    /// only data, constants and `_rng` draws (`int k = 2147483647 + 1;`), so that no guard on
    /// the parameter values can avoid the failure.
    pub involves_parameters: bool,
}

impl Model {
    /// Treats the data variable `name` as unobserved (its bound values are placeholders, e.g.
    /// the outcome missing from `bayesc predict`'s new data): the statements of `generated
    /// quantities` that read it, or read a variable computed from it, are removed at any
    /// nesting depth, and the generated quantities they would assign are left out whole
    /// ([`Model::left_out_quantities`]; NaN in every row of [`Model::write_outputs`] and
    /// [`Model::write_array`], and never counted as failures). Statements that do not depend
    /// on it, in the same loops, run as before (`gq_unobserved`, [X]: fresh-user finding,
    /// session 20). A name that is no global does nothing. Transformed data computed from the
    /// variable are not traced: a statement reading them runs on the placeholder.
    pub fn set_unobserved(&mut self, name: &str) {
        let Some(g) = self.global_names.iter().position(|n| n == name) else {
            return;
        };
        let mut taint = gq_unobserved::Taint {
            globals: vec![g as u32],
            slots: Vec::new(),
        };
        self.gq_body = gq_unobserved::prune_body(&self.gq_body, &mut taint);
        self.gq_deps = gq_deps::deps(&self.gq_body);
        self.gq_left_out = self
            .gqs
            .iter()
            .map(|q| q.slot)
            .filter(|s| taint.slots.contains(s))
            .collect();
    }

    /// The declared names of the generated quantities left out by [`Model::set_unobserved`]
    /// (`log_lik`, standing for all its elements), in declaration order; empty by default.
    pub fn left_out_quantities(&self) -> Vec<String> {
        self.gqs
            .iter()
            .filter(|q| self.gq_left_out.contains(&q.slot))
            .map(|q| q.name.clone())
            .collect()
    }

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
        self.check_len(zeta)?;
        with_tape(|tape| {
            tape.reset(false);
            for &z in zeta {
                tape.leaf(z);
            }
            let mut ctx = self.ctx(&self.globals, tape);
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
                    let computed: Vec<OutVar> = self
                        .gqs
                        .iter()
                        .filter(|g| !self.gq_left_out.contains(&g.slot))
                        .cloned()
                        .collect();
                    self.check_outputs(&mut ctx, &computed, false)?;
                }
                Ok(())
            })();
            r.map_err(|l| self.density_error(l))?;
            let mut out = Vec::new();
            // a left-out generated quantity (`set_unobserved`) holds NaN
            let mut emit = |slot: u32, arr: &[usize], base: Base| {
                if self.gq_left_out.contains(&slot) {
                    let n = arr.iter().product::<usize>() * base.size();
                    out.extend(std::iter::repeat_n(f64::NAN, n));
                    return;
                }
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

    /// ζ → the row of [`Model::write_array`] with transformed parameters and generated
    /// quantities, where a generated quantity that cannot be computed at this draw holds NaN
    /// and the others keep their values; what failed is returned beside the row.
    ///
    /// The statements of `generated quantities` run in order. A top-level statement that fails
    /// (an `_rng` argument outside its support, an index out of range, a declared bound broken)
    /// makes NaN the variables declared outside it that it assigns (all elements; for a
    /// declaration, its variable); a later statement that reads such a variable is skipped and
    /// what it assigns is NaN too, while every other statement runs as usual. A variable once
    /// NaN at a draw stays so for that draw. A failing statement that assigns no generated
    /// quantity (a `reject`, a block of locals only) makes them all NaN at that draw.
    ///
    /// Errors: as [`Model::write_array`] before the generated quantities (the parameters'
    /// transforms, the transformed parameters and their bounds).
    pub fn write_outputs(
        &self,
        zeta: &[f64],
        rng: &mut StreamRng,
    ) -> Result<(Vec<f64>, Option<GqFailure>), DensityError> {
        self.check_len(zeta)?;
        with_tape(|tape| {
            tape.reset(false);
            for &z in zeta {
                tape.leaf(z);
            }
            let mut ctx = self.ctx(&self.globals, tape);
            ctx.rng = Some(rng);
            (|| -> Result<(), Located> {
                let mut lj = Vec::new();
                self.bind_params(&mut ctx, &mut lj)?;
                ctx.exec_all(&self.tp_body)?;
                self.check_outputs(&mut ctx, &self.tparams, true)
            })()
            .map_err(|l| self.density_error(l))?;
            let (failed, first) = self.run_generated(&mut ctx);
            let mut out = Vec::new();
            for p in self.params.iter().map(|p| (p.slot, &p.arr, p.base)).chain(
                self.tparams
                    .iter()
                    .chain(&self.gqs)
                    .map(|p| (p.slot, &p.arr, p.base)),
            ) {
                let (slot, arr, base) = p;
                if failed.contains(&slot) || self.gq_left_out.contains(&slot) {
                    let n = arr.iter().product::<usize>() * base.size();
                    out.extend(std::iter::repeat_n(f64::NAN, n));
                    continue;
                }
                let v = &ctx.env[slot as usize];
                for o in stan_order_offsets(arr, base) {
                    out.push(ctx.tape.value(v.elem(o)));
                }
            }
            let failure = first.map(|(l, involves_parameters)| GqFailure {
                error: self.density_error(l),
                involves_parameters,
                variables: self
                    .gqs
                    .iter()
                    .filter(|g| failed.contains(&g.slot))
                    .map(|g| g.name.clone())
                    .collect(),
            });
            Ok((out, failure))
        })
    }

    /// Runs `generated quantities` in `ctx` statement by statement as
    /// [`Model::write_outputs`] describes, then checks the declared bounds of the quantities
    /// computed; returns the slots that hold no value (failed) and the first failure, with
    /// whether it may depend on the parameters ([`GqFailure::involves_parameters`]).
    fn run_generated(&self, ctx: &mut Ctx) -> (Vec<u32>, Option<(Located, bool)>) {
        let mut failed: Vec<u32> = Vec::new();
        let mut first: Option<(Located, bool)> = None;
        for (i, (st, deps)) in self.gq_body.iter().zip(&self.gq_deps).enumerate() {
            if deps.reads.iter().any(|s| failed.contains(s)) {
                failed.extend(&deps.writes);
                continue;
            }
            if let Err(l) = ctx.exec(st) {
                first.get_or_insert((l, self.gq_uses_params[i]));
                if deps.writes.is_empty() {
                    failed.extend(
                        self.gqs
                            .iter()
                            .map(|g| g.slot)
                            .filter(|s| !self.gq_left_out.contains(s)),
                    );
                    return (failed, first);
                }
                failed.extend(&deps.writes);
            }
        }
        for g in &self.gqs {
            if failed.contains(&g.slot) || self.gq_left_out.contains(&g.slot) {
                continue;
            }
            if let Err(l) = self.check_outputs(ctx, std::slice::from_ref(g), false) {
                // a declared bound: the quantity's value may depend on the parameters unless
                // every statement that assigns it does not
                let involves = self
                    .gq_deps
                    .iter()
                    .zip(&self.gq_uses_params)
                    .any(|(d, &uses)| uses && d.writes.contains(&g.slot));
                first.get_or_insert((l, involves));
                failed.push(g.slot);
            }
        }
        (failed, first)
    }
}
