//! The log-joint graph: a checked program compiled against its data into a log density on the
//! unconstrained scale with reverse-mode gradients (Stan-like dynamic tape, vectorised nodes).
//!
//! [`Model::new`] lowers the AST once (names → slots, functions → built-ins, distributions →
//! families), binds the data and runs `transformed data`. Each call of
//! [`LogDensity::log_density_grad`] then interprets `parameters` (constraint transforms with
//! their Jacobian adjustments), `transformed parameters` and `model` against a reused tape and
//! sweeps it backwards. `log_density` runs the same interpreter with recording off, so both
//! paths return the same value. `generated quantities` run in [`Model::write_array`].

mod build;
mod fuse;
mod gq_deps;
mod gq_unobserved;
mod impute;
mod op_spans;
mod outputs;
mod unconstrain;

pub mod batch;
pub(crate) mod compile;
pub mod error;
pub(crate) mod eval;
pub(crate) mod ir;
pub(crate) mod kernel;
pub(crate) mod linalg;
pub mod ode;
pub(crate) mod ops;
pub(crate) mod per_row;
pub mod pointwise;
pub mod scalar;
pub mod separability;
pub(crate) mod tape;
pub(crate) mod transforms;
pub(crate) mod value;

use std::cell::RefCell;
use std::sync::Arc;

use crate::data::BoundData;
use crate::inference::rng::StreamRng;
use crate::inference::{DensityError, LogDensity};
use crate::syntax::Span;
use crate::syntax::ast::{self, SizedBase, StmtKind};
use crate::syntax::source::SourceMap;

pub use error::GraphError;

use compile::Compiler;
use eval::{Ctx, Located, check_shape};
pub use impute::ImputedEntry;
use ir::{Ex, St, StKind, Transform};
pub use outputs::GqFailure;
use tape::{S, Tape};
pub use unconstrain::{ParamLayout, UnconstrainFault};
use value::{Base, Data, Fault, Tensor, Value, stan_order_names, stan_order_offsets};

/// One declared parameter.
#[derive(Clone, Debug)]
struct ParamInfo {
    name: String,
    slot: u32,
    arr: Vec<usize>,
    base: Base,
    /// First unconstrained coordinate.
    offset: usize,
    /// Number of unconstrained coordinates.
    free: usize,
    transform: Transform,
    /// The drop rate of an `@dropout(p)` annotation (MC dropout only; no effect on L).
    dropout: Option<f64>,
    span: Span,
}

/// A parameter annotated `@dropout(p)`: the units MC dropout masks together, as groups of
/// unconstrained coordinates (`specs/survey_vi.md` §4: one Bernoulli variable per unit).
#[derive(Clone, Debug, PartialEq)]
pub struct DropoutSite {
    /// The parameter's name.
    pub name: String,
    /// p, the probability that a unit is dropped.
    pub rate: f64,
    /// The units: for a matrix, one per row (an input unit, all its outgoing weights; within
    /// each element of an array); for a vector, row vector or real, one per element. Each unit
    /// lists its 0-based unconstrained coordinates.
    pub units: Vec<Vec<usize>>,
}

/// A transformed parameter or generated quantity (a top-level declaration of its block).
#[derive(Clone, Debug)]
struct OutVar {
    name: String,
    slot: u32,
    arr: Vec<usize>,
    base: Base,
    lower: Option<Ex>,
    upper: Option<Ex>,
    span: Span,
}

/// A compiled model: data bound, `transformed data` evaluated, ready to evaluate the log density
/// L(ζ) = log p(θ(ζ), y) + log|det ∂θ/∂ζ| and its gradient. `Send + Sync`; evaluation takes
/// `&self` and reuses a per-thread tape.
pub struct Model {
    globals: Vec<Value>,
    /// The name of each global (data, then transformed data), parallel to `globals`.
    global_names: Vec<String>,
    n_slots: usize,
    params: Vec<ParamInfo>,
    tparams: Vec<OutVar>,
    gqs: Vec<OutVar>,
    tp_body: Vec<St>,
    model_body: Vec<St>,
    gq_body: Vec<St>,
    /// What each statement of `gq_body` reads and assigns (`gq_deps`), for
    /// [`Model::write_outputs`].
    gq_deps: Vec<gq_deps::Deps>,
    /// Per statement of `gq_body`, whether it may depend on the parameters
    /// ([`gq_deps::parameter_dependence`]), for the advice on a failure.
    gq_uses_params: Vec<bool>,
    /// Slots of the generated quantities left out because they would read an unobserved data
    /// variable ([`Model::set_unobserved`]); they hold NaN in every row. Empty by default.
    gq_left_out: Vec<u32>,
    dim: usize,
    /// User-defined functions.
    funcs: Vec<ir::FuncIr>,
    /// Per file id: display name and byte offsets of line starts (for error locations).
    files: Vec<Option<(String, Vec<usize>)>>,
    /// Run eligible `for` loops as compiled scalar kernels (default `true`).
    fast_loops: bool,
    /// Run kernels as native code where compiled (default `true`; feature `jit`).
    native_loops: bool,
    /// Run `y ~ family(α + X · β, …)` as one fused pass (default `true`; `fuse`).
    fuse_glm: bool,
    /// `@missing` data variables with missing entries (`impute`).
    imputed: Vec<impute::Imputed>,
    /// The data variables declared `@missing` (with or without missing entries).
    missing_declared: Vec<String>,
    /// The size-checked operations of each statement, to name the one a runtime size mismatch
    /// happened in (`op_spans`).
    op_spans: op_spans::OpSpans,
}

thread_local! {
    static SCRATCH: RefCell<Tape> = RefCell::new(Tape::default());
}

/// Runs `f` with this thread's scratch tape (or a fresh one when it is already in use).
fn with_tape<T>(f: impl FnOnce(&mut Tape) -> T) -> T {
    SCRATCH.with(|t| match t.try_borrow_mut() {
        Ok(mut tape) => f(&mut tape),
        Err(_) => f(&mut Tape::default()),
    })
}

fn eval_err(l: Located) -> GraphError {
    GraphError::Eval {
        message: match l.fault.iteration() {
            Some(it) => format!("{} ({it})", l.fault.message),
            None => l.fault.message.clone(),
        },
        span: l.span,
        origin: l.fault.origin,
    }
}

/// Converts a row-major `DataValue` layout to the graph's (matrix blocks column-major). Only
/// matrices change: in place when `values` is not shared (no copy), else transposed into a new
/// buffer. Every other layout is the same, and the buffer is kept (shared with the bound data
/// and through it with the data source).
fn data_to_storage(values: Arc<Vec<f64>>, base: Base) -> Arc<Vec<f64>> {
    match base {
        Base::Matrix(r, c) if r > 1 && c > 1 => match Arc::try_unwrap(values) {
            Ok(mut own) => {
                for block in own.chunks_mut(r * c) {
                    transpose_in_place(block, r, c);
                }
                Arc::new(own)
            }
            Err(shared) => {
                let mut out = vec![0.0; shared.len()];
                for (b, block) in shared.chunks(r * c).enumerate() {
                    for i in 0..r {
                        for j in 0..c {
                            out[b * r * c + i + j * r] = block[i * c + j];
                        }
                    }
                }
                Arc::new(out)
            }
        },
        _ => values,
    }
}

/// Transposes the row-major r × c matrix `a` into column-major order in place, by following
/// the cycles of the permutation s ↦ (s mod c)·r + ⌊s/c⌋ (element (i, j) moves from i·c + j to
/// i + j·r), with one bit per element to mark the moved ones.
fn transpose_in_place(a: &mut [f64], r: usize, c: usize) {
    let n = r * c;
    debug_assert_eq!(a.len(), n);
    let dest = |s: usize| (s % c) * r + s / c;
    let mut done = vec![0u64; n.div_ceil(64)];
    for start in 0..n {
        if done[start / 64] >> (start % 64) & 1 == 1 {
            continue;
        }
        let mut s = start;
        let mut carried = a[s];
        loop {
            done[s / 64] |= 1 << (s % 64);
            let d = dest(s);
            if d == start {
                a[d] = carried;
                break;
            }
            carried = std::mem::replace(&mut a[d], carried);
            s = d;
        }
    }
}

impl Model {
    /// Registers the source texts so that runtime errors carry "file:line:column" locations.
    pub fn with_sources(mut self, sources: &SourceMap) -> Self {
        use codespan_reporting::files::Files;
        let files = sources.files();
        let mut out = Vec::new();
        let mut id = 0;
        while let Ok(name) = files.name(id) {
            let text = files.source(id).map(|s| s.to_string()).unwrap_or_default();
            let mut starts = vec![0];
            starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
            out.push(Some((name.to_string(), starts)));
            id += 1;
        }
        self.files = out;
        self
    }

    fn location(&self, span: Span) -> String {
        match self.files.get(span.file) {
            Some(Some((name, starts))) => {
                let line = starts.partition_point(|&s| s <= span.start);
                let col = span.start - starts[line - 1] + 1;
                format!("{name}:{line}:{col}")
            }
            _ => format!("bytes {}..{} of file {}", span.start, span.end, span.file),
        }
    }

    fn density_error(&self, l: Located) -> DensityError {
        // A fault inside a user-defined function names the model statement that called it and
        // the statement in the function (which may be in an included library).
        // A size mismatch of the model's own statement: at the one operation it can be.
        let (at, message) = match l.fault.origin {
            None => op_spans::narrow(&self.op_spans, l.span, &l.fault.message)
                .unwrap_or_else(|| (l.span, l.fault.message.clone())),
            Some(_) => (l.span, l.fault.message.clone()),
        };
        let location = match l.fault.origin {
            Some(o) if o != l.span => {
                format!("{}, inside at {}", self.location(l.span), self.location(o))
            }
            _ => self.location(at),
        };
        let location = match l.fault.iteration() {
            Some(it) => format!("{location}, {it}"),
            None => location,
        };
        DensityError {
            message,
            location: Some(location),
            recoverable: l.fault.recoverable,
        }
    }

    /// A deterministic measure of the work of one gradient evaluation: the number of data values
    /// (data and transformed data, all elements) the model holds, each of which a log density
    /// over the data reads at least once per evaluation. Used by NUTS's automatic metric choice
    /// (`inference::mcmc::MetricChoice::Auto`) to weigh a dense metric's O(d²) per step.
    pub fn gradient_work(&self) -> usize {
        self.globals.iter().map(|v| v.num_elements()).sum()
    }

    /// d, the number of unconstrained coordinates.
    pub fn unconstrained_dim(&self) -> usize {
        self.dim
    }

    /// The parameters annotated `@dropout(p)`, with their units (see [`DropoutSite`]). The
    /// checker allows the annotation only on unconstrained parameters, whose constrained and
    /// unconstrained layouts coincide (matrices column-major).
    pub fn dropout_sites(&self) -> Vec<DropoutSite> {
        self.params
            .iter()
            .filter_map(|p| {
                let rate = p.dropout?;
                let n_arr: usize = p.arr.iter().product();
                let units = match p.base {
                    Base::Matrix(r, c) => (0..n_arr)
                        .flat_map(|b| {
                            (0..r).map(move |i| {
                                (0..c).map(|j| p.offset + b * r * c + i + j * r).collect()
                            })
                        })
                        .collect(),
                    _ => (0..p.free).map(|k| vec![p.offset + k]).collect(),
                };
                Some(DropoutSite {
                    name: p.name.clone(),
                    rate,
                    units,
                })
            })
            .collect()
    }

    /// The `int` scalars of `data` and `transformed data` with their values (transformed data
    /// after its block ran), e.g. `("K", 7)` for `int K = cols(X);`, for
    /// [`crate::semantics::check_with_data`].
    pub fn int_scalars(&self) -> Vec<(String, i64)> {
        self.global_names
            .iter()
            .zip(&self.globals)
            .filter_map(|(n, v)| match v {
                Value::Int(i) => Some((n.clone(), *i)),
                _ => None,
            })
            .collect()
    }

    /// Constrained parameter names, flattened in Stan's order (all indices column-major, first
    /// index fastest, 1-based): `alpha`, `beta[1]`, …, `Sigma[1,1]`, `Sigma[2,1]`, ….
    pub fn parameter_names(&self) -> Vec<String> {
        self.params
            .iter()
            .flat_map(|p| stan_order_names(&p.name, &p.arr, p.base))
            .collect()
    }

    /// Transformed parameter names, in the same convention as [`Model::parameter_names`].
    pub fn transformed_parameter_names(&self) -> Vec<String> {
        self.tparams
            .iter()
            .flat_map(|p| stan_order_names(&p.name, &p.arr, p.base))
            .collect()
    }

    /// Generated quantity names, in the same convention as [`Model::parameter_names`].
    pub fn generated_quantity_names(&self) -> Vec<String> {
        self.gqs
            .iter()
            .flat_map(|p| stan_order_names(&p.name, &p.arr, p.base))
            .collect()
    }

    /// Binds every parameter θ(ζ) (ζ occupies tape slots 0..d) and collects log|J| terms.
    fn bind_params(&self, ctx: &mut Ctx, log_jac: &mut Vec<S>) -> Result<(), Located> {
        for p in &self.params {
            let loc = |fault: Fault| Located {
                fault,
                span: p.span,
            };
            let n = p.arr.iter().product::<usize>() * p.base.size();
            // The unconstrained coordinates as scalars (built as a list only for the
            // transforms that take them in blocks).
            let u = |i: usize| S::V((p.offset + i) as u32);
            let u_list = || -> Vec<S> { (0..p.free).map(u).collect() };
            let bound = |ctx: &mut Ctx, e: Option<&Ex>| -> Result<Option<Value>, Located> {
                match e {
                    Some(e) => {
                        let v = ctx.eval(e).map_err(loc)?;
                        if v.as_s().is_none() && v.num_elements() != n {
                            return Err(loc(Fault::fatal(format!(
                                "bound of `{}` is {}, but the parameter has {n} element(s)",
                                p.name,
                                v.describe()
                            ))));
                        }
                        Ok(Some(v))
                    }
                    None => Ok(None),
                }
            };
            let at = |v: &Option<Value>, i: usize, default: f64| -> S {
                match v {
                    None => S::C(default),
                    Some(v) if v.as_s().is_some() => v.as_s().expect("checked scalar"),
                    Some(v) => v.elem(i),
                }
            };
            // The tape's spare buffer: no allocation per evaluation for the elementwise
            // transforms.
            let mut xs = std::mem::take(&mut ctx.tape.spare_s);
            xs.clear();
            match &p.transform {
                Transform::Identity => xs.extend((0..n).map(u)),
                Transform::Lower(l) => {
                    let lb = bound(ctx, Some(l))?;
                    for i in 0..n {
                        let x = transforms::lb_constrain(ctx.tape, u(i), at(&lb, i, 0.0), log_jac);
                        xs.push(x);
                    }
                }
                Transform::Upper(h) => {
                    let ub = bound(ctx, Some(h))?;
                    for i in 0..n {
                        let x = transforms::ub_constrain(ctx.tape, u(i), at(&ub, i, 0.0), log_jac);
                        xs.push(x);
                    }
                }
                Transform::LowerUpper(l, h) => {
                    let lb = bound(ctx, Some(l))?;
                    let ub = bound(ctx, Some(h))?;
                    for i in 0..n {
                        let (a, b) = (at(&lb, i, 0.0), at(&ub, i, 0.0));
                        xs.push(
                            transforms::lub_constrain(ctx.tape, u(i), a, b, log_jac)
                                .map_err(loc)?,
                        );
                    }
                }
                Transform::Affine(o, m) => {
                    let ov = bound(ctx, o.as_ref())?;
                    let mv = bound(ctx, m.as_ref())?;
                    for i in 0..n {
                        let (a, b) = (at(&ov, i, 0.0), at(&mv, i, 1.0));
                        xs.push(
                            transforms::affine_constrain(ctx.tape, u(i), a, b, log_jac)
                                .map_err(loc)?,
                        );
                    }
                }
                Transform::Ordered | Transform::PositiveOrdered => {
                    let k = p.base.size();
                    let pos = matches!(p.transform, Transform::PositiveOrdered);
                    let u = u_list();
                    xs.extend(
                        u.chunks(k.max(1))
                            .flat_map(|c| transforms::ordered_constrain(ctx.tape, c, pos, log_jac)),
                    );
                }
                Transform::CholeskyCorr
                | Transform::CholeskyCov
                | Transform::CovMatrix
                | Transform::CorrMatrix => {
                    let (k, _) = p.base.matrix_dims();
                    let per = p.free / (n / (k * k).max(1)).max(1);
                    let u = u_list();
                    for c in 0..n / (k * k).max(1) {
                        let y = &u[c * per..(c + 1) * per];
                        xs.extend(match p.transform {
                            Transform::CholeskyCorr => {
                                transforms::cholesky_corr_constrain(ctx.tape, y, k, log_jac)
                            }
                            Transform::CholeskyCov => {
                                transforms::cholesky_cov_constrain(ctx.tape, y, k, log_jac)
                            }
                            Transform::CorrMatrix => {
                                transforms::corr_matrix_constrain(ctx.tape, y, k, log_jac)
                            }
                            _ => transforms::cov_matrix_constrain(ctx.tape, y, k, log_jac),
                        });
                    }
                }
                Transform::Simplex => {
                    let k = p.base.size();
                    if k == 1 {
                        // simplex[1] has no free coordinate: every element is 1.
                        xs.resize(n, S::C(1.0));
                    } else {
                        let u = u_list();
                        xs.extend(
                            u.chunks(k - 1)
                                .flat_map(|c| transforms::simplex_constrain(ctx.tape, c, log_jac)),
                        );
                    }
                }
            }
            let v = value::tensor_from_s(ctx.tape, p.arr.clone(), p.base, &xs);
            ctx.tape.spare_s = xs;
            ctx.env[p.slot as usize] = v;
        }
        self.bind_imputed(ctx);
        Ok(())
    }

    /// Checks declared bounds of block outputs (and that they are defined: not NaN).
    /// With `defined`, NaN values are errors too (Stan requires transformed parameters to be
    /// defined at the end of their block; generated quantities may be NaN).
    fn check_outputs(&self, ctx: &mut Ctx, outs: &[OutVar], defined: bool) -> Result<(), Located> {
        for o in outs {
            let v = ctx.env[o.slot as usize].clone();
            check_bounds(
                ctx,
                &o.name,
                &v,
                o.lower.as_ref(),
                o.upper.as_ref(),
                defined,
            )
            .map_err(|fault| Located {
                fault,
                span: o.span,
            })?;
        }
        Ok(())
    }

    /// Runs parameters, transformed parameters and model; returns the log density and, when
    /// `grad` is given, its gradient.
    fn run(
        &self,
        zeta: &[f64],
        grad: Option<&mut [f64]>,
        jacobian: bool,
    ) -> Result<f64, DensityError> {
        self.run_on(&self.globals, None, zeta, grad, jacobian)
    }

    /// `Ok` when ζ has the model's d values; else the fatal error every entry point returns.
    fn check_len(&self, zeta: &[f64]) -> Result<(), DensityError> {
        if zeta.len() != self.dim {
            return Err(DensityError::fatal(format!(
                "expected {} unconstrained values, got {}",
                self.dim,
                zeta.len()
            )));
        }
        Ok(())
    }

    /// An evaluation context on `tape` over `globals` with this model's slots, functions and
    /// loop settings (no random stream: the caller sets `rng` where it needs one).
    fn ctx<'a>(&'a self, globals: &'a [Value], tape: &'a mut Tape) -> Ctx<'a> {
        let mut ctx = Ctx::new(globals, self.n_slots, tape);
        ctx.funcs = &self.funcs;
        ctx.fast_loops = self.fast_loops;
        ctx.native_loops = self.native_loops;
        ctx
    }

    /// [`Model::run`] against `globals` (the model's own, or a minibatch's sliced copy, see
    /// [`batch`]); with `scale = Some((c, c_prior, flags))` the log-density terms added by each
    /// top-level model statement `i` with `flags[i]` are multiplied by `c` (the N/M of
    /// specs/survey_vi.md §2) and those of the unflagged statements by `c_prior` (1 for a batch
    /// estimate; 0 to keep only the likelihood terms, as the per-observation gradients of
    /// [`batch::MinibatchModel`] do). Jacobians are added unscaled when `jacobian` is set.
    fn run_on(
        &self,
        globals: &[Value],
        scale: Option<(f64, f64, &[bool])>,
        zeta: &[f64],
        grad: Option<&mut [f64]>,
        jacobian: bool,
    ) -> Result<f64, DensityError> {
        self.check_len(zeta)?;
        with_tape(|tape| {
            tape.reset(grad.is_some());
            for &z in zeta {
                tape.leaf(z);
            }
            let mut ctx = self.ctx(globals, tape);
            ctx.fuse_glm = self.fuse_glm;
            let mut lj = std::mem::take(&mut ctx.tape.spare_s2);
            lj.clear();
            let r = (|| -> Result<(), Located> {
                self.bind_params(&mut ctx, &mut lj)?;
                if jacobian {
                    for s in &lj {
                        ctx.add_target(&Value::from_s(*s));
                    }
                }
                ctx.exec_all(&self.tp_body)?;
                self.check_outputs(&mut ctx, &self.tparams, true)?;
                match scale {
                    None => {
                        ctx.exec_all(&self.model_body)?;
                    }
                    Some((c, c_prior, flags)) => {
                        for (i, st) in self.model_body.iter().enumerate() {
                            let likelihood = flags.get(i).copied().unwrap_or(false);
                            if !likelihood && c_prior == 1.0 {
                                if ctx.exec(st)? != eval::Flow::Normal {
                                    break;
                                }
                                continue;
                            }
                            let (c0, v0) = (ctx.target_c, ctx.target_v.len());
                            let flow = ctx.exec(st)?;
                            batch::scale_terms(
                                &mut ctx,
                                c0,
                                v0,
                                if likelihood { c } else { c_prior },
                            );
                            if flow != eval::Flow::Normal {
                                break;
                            }
                        }
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
            let seeds = ctx.recycle();
            if let Some(g) = grad {
                tape.gradient(&seeds, g);
            }
            tape.spare_target = seeds;
            Ok(value)
        })
    }
}

/// Checks `lower ≤ v ≤ upper` elementwise and, with `defined`, that no element is NaN
/// (recoverable errors).
fn check_bounds(
    ctx: &mut Ctx,
    name: &str,
    v: &Value,
    lower: Option<&Ex>,
    upper: Option<&Ex>,
    defined: bool,
) -> Result<(), Fault> {
    let n = v.num_elements();
    let lb = lower.map(|e| ctx.eval(e)).transpose()?;
    let ub = upper.map(|e| ctx.eval(e)).transpose()?;
    let names = match v {
        Value::T(t) => {
            let offs = stan_order_offsets(&t.arr, t.base);
            let nm = stan_order_names(name, &t.arr, t.base);
            let mut by_off = vec![String::new(); n];
            for (o, s) in offs.into_iter().zip(nm) {
                by_off[o] = s;
            }
            by_off
        }
        _ => vec![name.to_string()],
    };
    let bound_at = |b: &Value, i: usize| -> f64 {
        match b.as_s() {
            Some(s) => ctx.tape.value(s),
            None => ctx
                .tape
                .value(b.elem(i.min(b.num_elements().saturating_sub(1)))),
        }
    };
    for i in 0..n {
        let x = ctx.tape.value(v.elem(i));
        if x.is_nan() {
            if defined {
                return Err(Fault::domain(format!(
                    "{} is nan, but must be defined",
                    names[i]
                )));
            }
            continue;
        }
        if let Some(b) = &lb {
            let l = bound_at(b, i);
            if x < l {
                return Err(Fault::domain(format!(
                    "{} is {x}, but must be greater than or equal to {l}",
                    names[i]
                )));
            }
        }
        if let Some(b) = &ub {
            let h = bound_at(b, i);
            if x > h {
                return Err(Fault::domain(format!(
                    "{} is {x}, but must be less than or equal to {h}",
                    names[i]
                )));
            }
        }
    }
    let _ = check_shape;
    Ok(())
}

impl Model {
    /// Turns the compiled scalar kernels of `for` loops on (the default) or off. Off, every loop
    /// runs in the statement interpreter; the log density and gradient are the same either way
    /// (bit for bit for values, to rounding for gradients), so this exists for tests and
    /// benchmarks of the fast path.
    pub fn set_fast_loops(&mut self, on: bool) {
        self.fast_loops = on;
    }

    /// Runs the scalar kernels of `for` loops as native code where it was compiled (the
    /// default, with the cargo feature `jit`) or always through the kernel interpreter (`false`).
    /// Log densities and gradients are bit for bit the same either way (`kernel::jit`), so this
    /// exists for tests and benchmarks of the native code.
    pub fn set_native_loops(&mut self, on: bool) {
        self.native_loops = on;
    }

    /// Turns the fused pass of `y ~ family(α + X · β, …)` (`fuse`) on (the default) or off.
    /// Off, such statements run as a matrix–vector product node, a sum node and a log-density
    /// node; the log density and gradient agree to rounding, so this exists for tests and
    /// benchmarks of the fused pass.
    pub fn set_fused_glm(&mut self, on: bool) {
        self.fuse_glm = on;
    }

    /// The number of statements of the model block planned as a fused pass (`fuse`).
    pub fn fused_statements(&self) -> usize {
        fn walk(st: &St) -> usize {
            match &st.kind {
                StKind::Fused { .. } => 1,
                StKind::Block(v) => v.iter().map(walk).sum(),
                StKind::Fast { plain, .. } => walk(plain),
                StKind::For { body, .. }
                | StKind::ForEach { body, .. }
                | StKind::While { body, .. } => walk(body),
                StKind::If {
                    then, otherwise, ..
                } => walk(then) + otherwise.as_deref().map_or(0, walk),
                _ => 0,
            }
        }
        self.model_body.iter().map(walk).sum()
    }
}

impl Model {
    /// How the `for` loops that have run so far are executed: (number compiled to scalar
    /// kernels, number run by the statement interpreter). Loops never executed (or only with
    /// [`Model::set_fast_loops`] off) are not counted. For tests and diagnostics of the fast path.
    pub fn loop_kernels(&self) -> (usize, usize) {
        let mut n = (0, 0);
        self.each_kernel(&mut |cache| match cache.compiled() {
            Some(true) => n.0 += 1,
            Some(false) => n.1 += 1,
            None => {}
        });
        n
    }

    /// The number of loops compiled to scalar kernels (see [`Model::loop_kernels`]) that have
    /// native code for at least one loop body (cargo feature `jit`; 0 without it or with
    /// `BAYESC_JIT=0`). For tests and diagnostics of the native code.
    pub fn native_loop_kernels(&self) -> usize {
        let mut n = 0;
        self.each_kernel(&mut |cache| n += cache.native() as usize);
        n
    }

    /// Calls `f` on the kernel cache of every `for` loop of the program.
    fn each_kernel(&self, f: &mut dyn FnMut(&kernel::KernelCache)) {
        fn walk(st: &St, f: &mut dyn FnMut(&kernel::KernelCache)) {
            match &st.kind {
                StKind::Fast { cache, plain } => {
                    f(cache);
                    walk(plain, f);
                }
                StKind::For { body, .. }
                | StKind::ForEach { body, .. }
                | StKind::While { body, .. } => walk(body, f),
                StKind::If {
                    then, otherwise, ..
                } => {
                    walk(then, f);
                    if let Some(o) = otherwise {
                        walk(o, f);
                    }
                }
                StKind::Block(sts) => sts.iter().for_each(|s| walk(s, f)),
                _ => {}
            }
        }
        for st in self
            .tp_body
            .iter()
            .chain(&self.model_body)
            .chain(&self.gq_body)
        {
            walk(st, f);
        }
        for func in &self.funcs {
            if let Some(b) = &func.body {
                walk(b, f);
            }
        }
    }
}

impl LogDensity for Model {
    fn dim(&self) -> usize {
        self.dim
    }

    fn log_density(&self, theta: &[f64]) -> Result<f64, DensityError> {
        self.run(theta, None, true)
    }

    fn log_density_grad(&self, theta: &[f64], grad: &mut [f64]) -> Result<f64, DensityError> {
        if grad.len() != self.dim {
            return Err(DensityError::fatal(format!(
                "gradient buffer has length {}, expected {}",
                grad.len(),
                self.dim
            )));
        }
        self.run(theta, Some(grad), true)
    }

    /// The parameter owning coordinate `i`: "`sigma`" for a one-coordinate parameter, else
    /// "`beta` (unconstrained coordinate 3 of 5)".
    fn coordinate_name(&self, i: usize) -> String {
        match self
            .params
            .iter()
            .find(|p| (p.offset..p.offset + p.free).contains(&i))
        {
            Some(p) if p.free == 1 => format!("`{}`", p.name),
            Some(p) => format!(
                "`{}` (unconstrained coordinate {} of {})",
                p.name,
                i - p.offset + 1,
                p.free
            ),
            None => format!("coordinate {}", i + 1),
        }
    }
}

/// The log density of a [`Model`] with or without the Jacobian adjustment, as a
/// [`LogDensity`]: made by [`Model::with_jacobian`].
///
/// With `jacobian = false` the value is log p(θ(ζ), y) without the log|det ∂θ/∂ζ| terms of the
/// constraining transforms, so its maximiser over ζ is the mode on the constrained scale (Stan's
/// `optimize` default, `jacobian=0`: a maximum-likelihood estimate when the model has no
/// priors, otherwise a penalised one). With `jacobian = true` it equals the model itself.
#[derive(Clone, Copy)]
pub struct JacobianView<'a> {
    model: &'a Model,
    jacobian: bool,
}

impl Model {
    /// This model's log density with (`true`, the same as the model) or without (`false`) the
    /// Jacobian adjustment of the constraining transforms; see [`JacobianView`].
    pub fn with_jacobian(&self, jacobian: bool) -> JacobianView<'_> {
        JacobianView {
            model: self,
            jacobian,
        }
    }
}

impl LogDensity for JacobianView<'_> {
    fn dim(&self) -> usize {
        self.model.dim
    }

    fn log_density(&self, theta: &[f64]) -> Result<f64, DensityError> {
        self.model.run(theta, None, self.jacobian)
    }

    fn log_density_grad(&self, theta: &[f64], grad: &mut [f64]) -> Result<f64, DensityError> {
        if grad.len() != self.model.dim {
            return Err(DensityError::fatal(format!(
                "gradient buffer has length {}, expected {}",
                grad.len(),
                self.model.dim
            )));
        }
        self.model.run(theta, Some(grad), self.jacobian)
    }

    fn coordinate_name(&self, i: usize) -> String {
        self.model.coordinate_name(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transpose_in_place_matches_the_copying_transpose() {
        for (r, c) in [(2, 3), (3, 2), (5, 7), (7, 1), (1, 4), (4, 4), (13, 6)] {
            let rowmajor: Vec<f64> = (0..r * c * 2).map(|x| x as f64).collect();
            let shared = Arc::new(rowmajor.clone());
            let copied = data_to_storage(Arc::clone(&shared), Base::Matrix(r, c));
            let in_place = data_to_storage(Arc::new(rowmajor.clone()), Base::Matrix(r, c));
            assert_eq!(copied, in_place, "{r} × {c}");
            for b in 0..2 {
                for i in 0..r {
                    for j in 0..c {
                        let want = rowmajor[b * r * c + i * c + j];
                        assert_eq!(in_place[b * r * c + i + j * r], want, "{r} × {c}");
                    }
                }
            }
        }
    }
}
