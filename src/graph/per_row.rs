//! Per-observation log-likelihood gradients of a batch from ONE forward pass and ONE reverse
//! pass, for the methods that need g_i = ∇ℓ_i or Σ_i g_i² (VOGN, `specs/survey_vi.md` §12;
//! VOGN's Gauss–Newton check; Vadam §11 through the same statistics).
//!
//! The batch of M rows is evaluated once, with the prior statements multiplied by 0 and the
//! Jacobian left out (so the log density is Σ_B ℓ_i). Inside the likelihood statements the
//! compiler proved separable (`super::separability`), every univariate log density (`~`,
//! `_lpdf`, `_lpmf`, the log CDFs) over row-indexed arguments is recorded as one term per
//! element, each tagged with its row (element e of a `vector[M]` is row e, of an
//! `array[M] …` row ⌊e / (len/M)⌋, of a `matrix[M, K]` row e mod M), and their sum. The
//! reverse sweep then carries per-row adjoints from those tags down to the parameters
//! ([`super::tape::Tape::per_row_gradient`], where the method and its sources are described).
//!
//! Where the shapes do not allow it the pass says so ([`Unsupported`]) and the caller falls
//! back to one reverse pass per row (`super::batch`): a log density with only scalar arguments
//! inside a likelihood statement (a `for (n in 1:N)` loop), a reduction over rows in a
//! `target +=` (`dot_self(y - mu)`), a multivariate density other than `categorical_logit`
//! with one row of log odds per observation (the softmax output layer, recorded per row by
//! [`Ctx::record_logit_rows`]) or a GLM function with one row of x per observation
//! (`poisson_log_glm`, `bernoulli_logit_glm`, `categorical_logit_glm`, recorded per row by
//! [`Ctx::record_glm_rows`]). GLM fusion and scalar kernels are switched off for this pass
//! (their nodes hold row sums).

use super::Model;
use super::eval::{Ctx, Flow, Kind};
use super::tape::{S, Unsupported};
use super::value::{Base, Data, Value};
use crate::distributions::{self, Arg, Family};
use crate::inference::density::DensityError;

/// The row tags of one per-row evaluation (a field of [`Ctx`]).
#[derive(Debug, Default)]
pub(crate) struct RowTags {
    /// M, the rows of the batch.
    pub m: usize,
    /// Inside a likelihood statement: densities are recorded per row.
    pub active: bool,
    /// (slot, row) of every per-row term recorded.
    pub tags: Vec<(u32, u32)>,
    /// Set when a density inside a likelihood statement could not be split into rows.
    pub failed: Option<&'static str>,
}

/// How the flat elements of a density's arguments map to rows.
#[derive(Clone, Copy, Debug, PartialEq)]
enum RowMap {
    /// Row ⌊e / per⌋ (a vector of M, or an array of M containers of `per` elements).
    Div(usize),
    /// Row e mod M (a column-major M × K matrix).
    Mod(usize),
}

impl RowMap {
    fn row(self, e: usize) -> u32 {
        match self {
            RowMap::Div(per) => (e / per) as u32,
            RowMap::Mod(m) => (e % m) as u32,
        }
    }
}

/// The row map shared by every container argument of a density over `n` elements, or why
/// there is none.
fn row_map(vals: &[Value], m: usize) -> Result<RowMap, &'static str> {
    let mut map: Option<RowMap> = None;
    for v in vals {
        let Value::T(t) = v else { continue };
        let n = t.data.len();
        let this = if n == m {
            RowMap::Div(1)
        } else if t.arr.first() == Some(&m) && m > 0 {
            RowMap::Div(n / m)
        } else if let (true, Base::Matrix(r, _)) = (t.arr.is_empty(), t.base) {
            if r != m {
                return Err("a density argument is not sized by the rows");
            }
            RowMap::Mod(m)
        } else {
            return Err("a density argument is not sized by the rows");
        };
        if map.is_some_and(|p| p != this) {
            return Err("density arguments with different row layouts");
        }
        map = Some(this);
    }
    map.ok_or("a log density with scalar arguments only in a likelihood statement")
}

/// The per-element terms of one density: values, partials (element-major, one per argument)
/// and rows.
pub(super) struct ElementTerms {
    values: Vec<f64>,
    parts: Vec<f64>,
    rows: Vec<u32>,
}

/// Evaluates `family` element by element (the arguments of element e as scalars, the same
/// flags), for the rows `m`. `Ok(None)` (with the reason) when the arguments are not sized by
/// the rows. Errors: as the vectorised density.
pub(super) fn element_terms(
    family: Family,
    vals: &[Value],
    args: &[Arg],
    is_var: &[bool],
    kind: Kind,
    m: usize,
) -> Result<Result<ElementTerms, &'static str>, distributions::DistError> {
    let map = match row_map(vals, m) {
        Ok(map) => map,
        Err(why) => return Ok(Err(why)),
    };
    let n = args.iter().map(|a| a.len()).max().unwrap_or(1);
    let k = args.len();
    let mut out = ElementTerms {
        values: Vec::with_capacity(n),
        parts: vec![0.0; n * k],
        rows: Vec::with_capacity(n),
    };
    let mut sargs: Vec<Arg> = vec![Arg::Scalar(0.0); k];
    for e in 0..n {
        for (s, a) in sargs.iter_mut().zip(args) {
            *s = Arg::Scalar(a.at(e));
        }
        let term = match kind {
            Kind::Density(propto) => {
                distributions::log_density_checked(family, &sargs, is_var, propto, true)?
            }
            Kind::Cdf(c) => distributions::cdf_function(family, &sargs, is_var, c)?,
        };
        out.values.push(term.value);
        for (a, p) in term.partials.iter().enumerate().take(k) {
            if is_var[a] {
                out.parts[e * k + a] = p.first().copied().unwrap_or(0.0);
            }
        }
        out.rows.push(map.row(e));
    }
    Ok(Ok(out))
}

impl Ctx<'_> {
    /// Records the terms `et` of a density over `vals` one node per element, each tagged with
    /// its row, and their sum (value `total`, the vectorised density's) as the returned slot.
    pub(super) fn record_row_terms(&mut self, vals: &[Value], et: ElementTerms, total: f64) -> S {
        let k = vals.len();
        let n = et.values.len();
        let mut outs = Vec::with_capacity(n);
        for e in 0..n {
            let base = self.tape.entries_base();
            let out = self.tape.leaf(et.values[e]);
            let mut cnt = 0;
            for (a, v) in vals.iter().enumerate() {
                let p = et.parts[e * k + a];
                match v {
                    Value::Var(i) => {
                        self.tape.entry(*i, p);
                        cnt += 1;
                    }
                    Value::T(t) => {
                        if let Data::Var(ix) = &t.data {
                            self.tape.entry(ix.at(e), p);
                            cnt += 1;
                        }
                    }
                    _ => {}
                }
            }
            self.tape.finish(out, 1, cnt, base);
            outs.push(out);
        }
        let base = self.tape.entries_base();
        let out = self.tape.leaf(total);
        for &o in &outs {
            self.tape.entry(o, 1.0);
        }
        self.tape.finish(out, 1, n, base);
        if let Some(rt) = self.rows.as_mut() {
            rt.tags.extend(outs.iter().copied().zip(et.rows));
        }
        S::V(out)
    }
}

impl Ctx<'_> {
    /// `y ~ categorical_logit(Eta)` per row: Eta (`n` = M rows × `k`, column-major at slots
    /// `x ..`) with partials `g` (as the one-node form) and outcomes `y` (1..k, already
    /// checked); row i's term ℓ_i = Eta[i, y_i] − log Σ_j exp(Eta[i, j]) is one node tagged i,
    /// and the returned slot is their sum (value `total`).
    pub(super) fn record_logit_rows(
        &mut self,
        x: u32,
        n: usize,
        k: usize,
        g: &[f64],
        y: &[f64],
        total: f64,
    ) -> S {
        let mut outs = Vec::with_capacity(n);
        for i in 0..n {
            let at = |j: usize| self.tape.val[x as usize + i + j * n];
            let mx = (0..k).map(at).fold(f64::NEG_INFINITY, f64::max);
            let lse = mx + (0..k).map(|j| (at(j) - mx).exp()).sum::<f64>().ln();
            let yi = (y[i] as usize).clamp(1, k.max(1));
            let value = at(yi - 1) - lse;
            let base = self.tape.entries_base();
            let out = self.tape.leaf(value);
            for j in 0..k {
                self.tape.entry(x + (i + j * n) as u32, g[i + j * n]);
            }
            self.tape.finish(out, 1, k, base);
            outs.push(out);
        }
        let base = self.tape.entries_base();
        let out = self.tape.leaf(total);
        for &o in &outs {
            self.tape.entry(o, 1.0);
        }
        self.tape.finish(out, 1, n, base);
        if let Some(rt) = self.rows.as_mut() {
            rt.tags.extend(outs.iter().copied().zip(0..n as u32));
        }
        S::V(out)
    }
}

/// The tape slot of element `e` of `v`, when `v` holds parameters.
fn var_slot(v: &Value, e: usize) -> Option<u32> {
    match v {
        Value::Var(i) => Some(*i),
        Value::T(t) => match &t.data {
            Data::Var(ix) => Some(ix.at(e)),
            _ => None,
        },
        _ => None,
    }
}

impl Ctx<'_> {
    /// A GLM `y ~ f_glm(x, α, β)` per row: `vals` = [y, x, α, β], `xs` the N × K values of x
    /// (column-major), `bs` the values of β (K, or K × C column-major), `rows` the terms and
    /// ∂ℓₙ/∂ηₙ ([`distributions::multivariate::glm::GlmRows`]). Row n's term is one node with
    /// the chain rule through η = α + xβ: ∂ℓₙ/∂x_{n,m} = Σ_j ∂η_{n,j} β_{m,j},
    /// ∂ℓₙ/∂α = ∂ηₙ (of αₙ for a vector α of the scalar GLMs), ∂ℓₙ/∂β_{m,j} = x_{n,m} ∂η_{n,j};
    /// it is tagged n, and the returned slot is the sum (value `total`).
    pub(super) fn record_glm_rows(
        &mut self,
        vals: &[Value],
        xs: &[f64],
        bs: &[f64],
        rows: &distributions::multivariate::glm::GlmRows,
        total: f64,
    ) -> S {
        let (n, k, c) = (rows.n, rows.k, rows.c);
        let alpha_len = match &vals[2] {
            Value::T(t) => t.data.len(),
            _ => 1,
        };
        let mut outs = Vec::with_capacity(n);
        for i in 0..n {
            let d = &rows.d_eta[i * c..(i + 1) * c];
            let base = self.tape.entries_base();
            let out = self.tape.leaf(rows.values[i]);
            let mut cnt = 0;
            if var_slot(&vals[1], 0).is_some() {
                for m in 0..k {
                    let p: f64 = (0..c).map(|j| d[j] * bs[m + j * k]).sum();
                    if let Some(s) = var_slot(&vals[1], i + m * n) {
                        self.tape.entry(s, p);
                        cnt += 1;
                    }
                }
            }
            if var_slot(&vals[2], 0).is_some() {
                if c == 1 {
                    let e = if alpha_len == 1 { 0 } else { i };
                    if let Some(s) = var_slot(&vals[2], e) {
                        self.tape.entry(s, d[0]);
                        cnt += 1;
                    }
                } else {
                    for (j, &dj) in d.iter().enumerate() {
                        if let Some(s) = var_slot(&vals[2], j) {
                            self.tape.entry(s, dj);
                            cnt += 1;
                        }
                    }
                }
            }
            if var_slot(&vals[3], 0).is_some() {
                for (j, &dj) in d.iter().enumerate() {
                    for m in 0..k {
                        if let Some(s) = var_slot(&vals[3], m + j * k) {
                            self.tape.entry(s, xs[i + m * n] * dj);
                            cnt += 1;
                        }
                    }
                }
            }
            self.tape.finish(out, 1, cnt, base);
            outs.push(out);
        }
        let base = self.tape.entries_base();
        let out = self.tape.leaf(total);
        for &o in &outs {
            self.tape.entry(o, 1.0);
        }
        self.tape.finish(out, 1, n, base);
        if let Some(rt) = self.rows.as_mut() {
            rt.tags.extend(outs.iter().copied().zip(0..n as u32));
        }
        S::V(out)
    }
}

impl Model {
    /// Σ_B ℓ_i and the per-row gradients ∇ℓ_i (row k of `grads`, M × d row-major, for row k
    /// of `globals`' batch of `m` rows) from one forward and one reverse pass (module docs).
    /// `scaled` marks the likelihood statements.
    ///
    /// Returns `Ok(None)` when the model's shapes do not allow the per-row pass (the caller
    /// uses the loop); errors as [`Model::log_density_grad`].
    pub(super) fn run_per_row(
        &self,
        globals: &[Value],
        scaled: &[bool],
        zeta: &[f64],
        m: usize,
        grads: &mut [f64],
    ) -> Result<Option<f64>, DensityError> {
        if zeta.len() != self.dim || grads.len() != m * self.dim {
            return Err(DensityError::fatal(format!(
                "expected {} unconstrained values and {} gradient entries",
                self.dim,
                m * self.dim
            )));
        }
        super::with_tape(|tape| {
            tape.reset(true);
            for &z in zeta {
                tape.leaf(z);
            }
            let mut ctx = Ctx::new(globals, self.n_slots, tape);
            ctx.funcs = &self.funcs;
            ctx.fast_loops = false;
            ctx.fuse_glm = false;
            ctx.rows = Some(RowTags {
                m,
                ..RowTags::default()
            });
            let mut lj = std::mem::take(&mut ctx.tape.spare_s2);
            lj.clear();
            let r = (|| -> Result<(), super::eval::Located> {
                self.bind_params(&mut ctx, &mut lj)?;
                ctx.exec_all(&self.tp_body)?;
                self.check_outputs(&mut ctx, &self.tparams, true)?;
                for (i, st) in self.model_body.iter().enumerate() {
                    let likelihood = scaled.get(i).copied().unwrap_or(false);
                    if let Some(rt) = ctx.rows.as_mut() {
                        rt.active = likelihood;
                    }
                    let (c0, v0) = (ctx.target_c, ctx.target_v.len());
                    let flow = ctx.exec(st)?;
                    super::batch::scale_terms(&mut ctx, c0, v0, if likelihood { 1.0 } else { 0.0 });
                    if flow != Flow::Normal {
                        break;
                    }
                }
                Ok(())
            })();
            ctx.tape.spare_s2 = lj;
            r.map_err(|l| self.density_error(l))?;
            let value = ctx.target_value();
            if value.is_nan() {
                return Err(DensityError::recoverable("log density is NaN"));
            }
            let rows = ctx.rows.take().unwrap_or_default();
            let seeds = ctx.recycle();
            let out = if rows.failed.is_some() {
                None
            } else {
                match tape.per_row_gradient(&seeds, &rows.tags, m, grads) {
                    Ok(()) => Some(value),
                    Err(Unsupported(_)) => None,
                }
            };
            tape.spare_target = seeds;
            Ok(out)
        })
    }
}
