//! From unconstrained draws to outputs and back: constrained parameters, transformed
//! parameters and generated quantities per draw ([`Model::write_array`]); the way back is
//! [`Model::unconstrain`] (`unconstrain.rs`).

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
            ctx.native_loops = self.native_loops;
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
}
