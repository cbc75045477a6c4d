//! The interpreter: executes lowered statements against a [`Tape`], building the log density
//! (with the tape recording) or only its value (recording off).
//!
//! The passes live in separate files: [`stmt`] executes statements, [`expr`] evaluates
//! expressions, [`call`] runs built-in functions, [`density`] (and [`multivariate`]) record log
//! densities. All of them are the forward pass; each records its reverse-mode partials on the
//! [`Tape`] (`super::tape`), whose `gradient` is the reverse pass. Compilation of the AST into the
//! lowered IR is in `super::compile` / `super::ir`, of `for` loops into scalar kernels in
//! `super::kernel`.

use crate::inference::rng::StreamRng;
use crate::syntax::Span;

use super::ir::{FuncIr, PArg};
use super::tape::{S, Tape};
use super::value::{Fault, R, Value};

mod call;
mod dense;
mod density;
mod expr;
mod glm;
pub(crate) mod matrix;
mod multivariate;
mod ode;
mod stmt;

pub use call::{append_row, check_shape, to_int_value};
pub use expr::{IntArithError, int_arith, int_overflow_message};

/// A fault with the span of the statement where it happened.
#[derive(Clone, Debug)]
pub struct Located {
    pub fault: Fault,
    pub span: Span,
}

/// Which function of a family to evaluate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The log density; `true` drops constant terms (as `~`).
    Density(bool),
    /// A cumulative function: `_cdf`, `_lcdf` or `_lccdf`.
    Cdf(crate::distributions::CdfKind),
}

/// Control flow after a statement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    Normal,
    Break,
    Continue,
    Return,
}

/// The state of one evaluation.
pub struct Ctx<'a> {
    /// Data and transformed data.
    pub globals: &'a [Value],
    /// Parameters, transformed parameters, locals, loop variables, by slot.
    pub env: Vec<Value>,
    pub tape: &'a mut Tape,
    /// Constant part of the log density.
    pub target_c: f64,
    /// Slots whose values are summed into the log density.
    pub target_v: Vec<u32>,
    /// Random numbers for `_rng` functions (generated quantities only).
    pub rng: Option<&'a mut StreamRng>,
    /// User-defined functions.
    pub funcs: &'a [FuncIr],
    /// The value of the last `return` executed.
    ret: Option<Value>,
    /// Current depth of user-defined function calls.
    depth: usize,
    /// Inside a user density called as `foo_lpdf(…)`: `_lupdf` and `~` keep their constants.
    normalised: bool,
    /// When `Some`, collects the pointwise log-likelihood (`graph::pointwise`).
    pub pointwise: Option<Vec<f64>>,
    /// Run `for` loops as compiled scalar kernels where possible (see [`Ctx::use_fast_path`]).
    pub fast_loops: bool,
    /// Run kernels' loops and reverse sweeps as native code where it was compiled (feature
    /// `jit`; `Model::set_native_loops`).
    pub native_loops: bool,
    /// Run `~` statements planned as generalised linear models as one fused pass
    /// ([`super::ir::TildePlan::glm`]).
    pub fuse_glm: bool,
    /// When `Some`, the log densities of likelihood statements are recorded one term per row
    /// and tagged with it, for the per-row reverse pass (`super::per_row`).
    pub(crate) rows: Option<super::per_row::RowTags>,
}

/// Maximum nesting of user-defined function calls (deeper recursion is reported as an error
/// instead of overflowing the stack).
const MAX_CALL_DEPTH: usize = 64;

fn as_int(v: &Value, what: &str) -> R<i64> {
    v.as_int()
        .ok_or_else(|| Fault::fatal(format!("{what} must be an integer, found {}", v.describe())))
}

fn truthy(tape: &Tape, v: &Value) -> R<bool> {
    match v.as_s() {
        Some(s) => Ok(tape.value(s) != 0.0),
        None => Err(Fault::fatal(format!(
            "condition must be a scalar, found {}",
            v.describe()
        ))),
    }
}

impl<'a> Ctx<'a> {
    /// A fresh context with `n_slots` local slots.
    /// The environment and target buffers are the tape's spares when it has them (see
    /// [`Ctx::recycle`]), so a reused tape makes a context without allocating.
    pub fn new(globals: &'a [Value], n_slots: usize, tape: &'a mut Tape) -> Self {
        let mut env = std::mem::take(&mut tape.spare_env);
        env.clear();
        env.resize(n_slots, Value::Int(0));
        let mut target_v = std::mem::take(&mut tape.spare_target);
        target_v.clear();
        Ctx {
            globals,
            env,
            tape,
            target_c: 0.0,
            target_v,
            rng: None,
            funcs: &[],
            ret: None,
            depth: 0,
            normalised: false,
            pointwise: None,
            fast_loops: true,
            native_loops: true,
            fuse_glm: true,
            rows: None,
        }
    }

    /// Ends the context, giving its environment buffer back to the tape (emptied, so that
    /// the values it held are released now) for the next [`Ctx::new`]; returns the slots of
    /// the log density's terms.
    pub fn recycle(mut self) -> Vec<u32> {
        let mut env = std::mem::take(&mut self.env);
        for v in env.drain(..) {
            super::value::recycle_value(v);
        }
        self.tape.spare_env = env;
        std::mem::take(&mut self.target_v)
    }

    /// Whether `for` loops may run as compiled scalar kernels (`super::kernel`). The single
    /// place to veto the fast path: kernels evaluate `~` and `target +=` inside loops without
    /// passing through [`Ctx::exec`] per statement, so anything that must observe individual
    /// statements as the interpreter runs them (e.g. recording a pointwise log-likelihood per
    /// sampling statement) must make this return `false` while it is active.
    #[inline]
    pub fn use_fast_path(&self) -> bool {
        self.fast_loops && self.pointwise.is_none()
    }

    /// The text of `print`/`reject` arguments: strings as written, values as [`Ctx::show`]s them.
    fn print_text(&mut self, args: &[PArg]) -> R<String> {
        let mut msg = String::new();
        for a in args {
            match a {
                PArg::Str(s) => msg.push_str(s),
                PArg::Ex(e) => {
                    let v = self.eval(e)?;
                    msg.push_str(&self.show(&v));
                }
            }
        }
        Ok(msg)
    }

    /// The current value of the log density.
    pub fn target_value(&self) -> f64 {
        self.target_c
            + self
                .target_v
                .iter()
                .map(|&i| self.tape.val[i as usize])
                .sum::<f64>()
    }

    /// Adds a scalar (or the sum of a container) to the log density.
    pub fn add_target(&mut self, v: &Value) {
        let n = v.num_elements();
        for i in 0..n {
            match v.elem(i) {
                S::C(x) => self.target_c += x,
                S::V(q) => self.target_v.push(q),
            }
        }
    }
}
