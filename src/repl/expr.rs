//! Posterior expressions typed at the REPL prompt: evaluated once per draw over a fit's
//! constrained draws (`alpha + beta[2]`, `beta[1] < 0`, `exp(sigma)`), then reduced
//! (`mean`, `sd`, `quantile`, `median`, or a default summary).

use std::cell::RefCell;

use codespan_reporting::diagnostic::{Diagnostic, Label};

use crate::graph::eval::{IntArithError, int_arith, int_overflow_message, to_int_value};
use crate::inference::Draws;
use crate::semantics::names::best_match;
use crate::semantics::{Warning, pretty};
use crate::syntax::ast::{BinOp, Expr, ExprKind, Index, UnOp, int_in_range};
use crate::syntax::span::{FileId, Span};

/// How the per-draw values of an expression are reduced to what is printed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Reduction {
    /// A bare expression: posterior mean with its Monte Carlo standard error, 5% and 95%
    /// quantiles.
    Summary,
    /// `mean(e)`: the posterior mean (with MCSE); of a comparison, a posterior probability.
    Mean,
    /// `sd(e)`: the posterior standard deviation.
    Sd,
    /// `quantile(e, p)`: the type-7 quantile at p ∈ [0, 1].
    Quantile(f64),
    /// `median(e)`: the 50% quantile.
    Median,
}

/// An expression that cannot be evaluated against the draws, with the span of the culprit.
#[derive(Clone, Debug, PartialEq)]
pub struct ExprError {
    pub message: String,
    pub span: Span,
    /// A `help:` line (e.g. a did-you-mean suggestion).
    pub help: Option<String>,
}

impl ExprError {
    fn new(message: impl Into<String>, span: Span) -> Self {
        ExprError {
            message: message.into(),
            span,
            help: None,
        }
    }

    fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// The error as a codespan diagnostic labelling the span.
    pub fn to_diagnostic(&self) -> Diagnostic<FileId> {
        Diagnostic::error()
            .with_message(&self.message)
            .with_labels(vec![Label::primary(
                self.span.file,
                self.span.start..self.span.end,
            )])
            .with_notes(self.help.iter().map(|h| format!("help: {h}")).collect())
    }
}

/// Names of the reducing functions, allowed only at the outermost level.
pub const REDUCERS: &[&str] = &["mean", "sd", "quantile", "median"];

/// Elementwise functions of one argument the evaluator knows.
pub const UNARY_FUNCTIONS: &[&str] = &[
    "exp",
    "log",
    "log1p",
    "expm1",
    "log2",
    "log10",
    "sqrt",
    "square",
    "abs",
    "fabs",
    "inv",
    "inv_logit",
    "logit",
    "Phi",
    "sin",
    "cos",
    "tan",
    "tanh",
    "sinh",
    "cosh",
    "lgamma",
    "tgamma",
    "floor",
    "ceil",
    "round",
    "step",
    "to_int",
];

/// Elementwise functions of two arguments the evaluator knows.
pub const BINARY_FUNCTIONS: &[&str] = &["pow", "fmin", "fmax", "hypot", "fdim"];

fn unary(name: &str, x: f64) -> f64 {
    match name {
        "exp" => x.exp(),
        "log" => x.ln(),
        "log1p" => x.ln_1p(),
        "expm1" => x.exp_m1(),
        "log2" => x.log2(),
        "log10" => x.log10(),
        "sqrt" => x.sqrt(),
        "square" => x * x,
        "abs" | "fabs" => x.abs(),
        "inv" => 1.0 / x,
        "inv_logit" => 1.0 / (1.0 + (-x).exp()),
        "logit" => (x / (1.0 - x)).ln(),
        "Phi" => 0.5 * libm::erfc(-x / std::f64::consts::SQRT_2),
        "sin" => x.sin(),
        "cos" => x.cos(),
        "tan" => x.tan(),
        "tanh" => x.tanh(),
        "sinh" => x.sinh(),
        "cosh" => x.cosh(),
        "lgamma" => libm::lgamma(x),
        "tgamma" => libm::tgamma(x),
        "floor" => x.floor(),
        "ceil" => x.ceil(),
        "round" => x.round(),
        "step" => {
            if x < 0.0 {
                0.0
            } else {
                1.0
            }
        }
        _ => f64::NAN,
    }
}

fn binary_fn(name: &str, a: f64, b: f64) -> f64 {
    match name {
        "pow" => a.powf(b),
        "fmin" => a.min(b),
        "fmax" => a.max(b),
        "hypot" => a.hypot(b),
        "fdim" => (a - b).max(0.0),
        _ => f64::NAN,
    }
}

fn truth(b: bool) -> f64 {
    if b { 1.0 } else { 0.0 }
}

fn binary_op(op: BinOp, a: f64, b: f64) -> f64 {
    match op {
        BinOp::Add => a + b,
        BinOp::Sub => a - b,
        BinOp::Mul | BinOp::EltMul => a * b,
        BinOp::Div | BinOp::EltDiv => a / b,
        BinOp::IntDiv => (a / b).trunc(),
        BinOp::Mod => a % b,
        BinOp::Pow | BinOp::EltPow => a.powf(b),
        BinOp::LeftDiv => b / a,
        BinOp::Lt => truth(a < b),
        BinOp::Le => truth(a <= b),
        BinOp::Gt => truth(a > b),
        BinOp::Ge => truth(a >= b),
        BinOp::Eq => truth(a == b),
        BinOp::Ne => truth(a != b),
        BinOp::And => truth(a != 0.0 && b != 0.0),
        BinOp::Or => truth(a != 0.0 || b != 0.0),
    }
}

/// A posterior expression evaluated at every draw ([`evaluate`]).
#[derive(Clone, Debug)]
pub struct Evaluated {
    /// How the values are reduced to what is printed.
    pub reduction: Reduction,
    /// The value of the (inner) expression at every draw, one `Vec` per chain (the shape of
    /// the draws).
    pub values: Vec<Vec<f64>>,
    /// The model checker's warnings about the expression (`int / int` truncates), to print
    /// before the answer.
    pub warnings: Vec<Warning>,
}

/// Evaluates `expr` against `draws`: splits off an outer reducer, then computes the value of the
/// inner expression at every draw.
///
/// Values are typed as in a model: int literals, `to_int`, comparisons and int arithmetic on
/// ints are `int` (32-bit, as in Stan; `/` of two ints truncates toward zero, with the model's
/// warning); the draws are `real`.
///
/// Errors: unknown names (with a did-you-mean suggestion among the draws' names), a whole
/// vector where a scalar is needed, unknown functions, reducers below the outermost level,
/// non-constant indices, a quantile level outside [0, 1]; and at the first draw where it
/// happens (named in the help line): int arithmetic leaving the int range (the model's
/// integer-overflow message, with the true value), `/` of ints, `%/%` or `%` by zero, `to_int`
/// of NaN or a value outside the int range.
pub fn evaluate(expr: &Expr, draws: &Draws) -> Result<Evaluated, ExprError> {
    let eval = Evaluator {
        draws,
        warnings: RefCell::new(Vec::new()),
        live: RefCell::new(None),
    };
    let (reduction, inner) = match &expr.kind {
        ExprKind::Call { name, args, .. } if REDUCERS.contains(&name.name.as_str()) => {
            let want = if name.name == "quantile" { 2 } else { 1 };
            if args.len() != want {
                return Err(ExprError::new(
                    format!(
                        "`{}` takes {want} argument{}, got {}",
                        name.name,
                        if want == 1 { "" } else { "s" },
                        args.len()
                    ),
                    expr.span,
                ));
            }
            let r = match name.name.as_str() {
                "mean" => Reduction::Mean,
                "sd" => Reduction::Sd,
                "median" => Reduction::Median,
                _ => {
                    let p = constant(&args[1]).ok_or_else(|| {
                        ExprError::new("the quantile level must be a number", args[1].span)
                    })?;
                    if !(0.0..=1.0).contains(&p) {
                        return Err(ExprError::new(
                            format!("the quantile level must be in [0, 1], got {p}"),
                            args[1].span,
                        ));
                    }
                    Reduction::Quantile(p)
                }
            };
            (r, &args[0])
        }
        _ => (Reduction::Summary, expr),
    };
    let flat = eval.eval(inner)?.v;
    let n = draws.n_draws();
    let chains = if n == 0 {
        vec![Vec::new(); draws.chains.len()]
    } else {
        flat.chunks(n).map(<[f64]>::to_vec).collect()
    };
    Ok(Evaluated {
        reduction,
        values: chains,
        warnings: eval.warnings.into_inner(),
    })
}

/// The error for the element `name` (`beta[0]`, `Sigma[4,1]`) of a variable whose elements in
/// the draws run from `first` to `last` but do not include it: Stan indexes from 1. One
/// wording for posterior expressions and the REPL's `:param`.
pub(crate) fn out_of_range_message(name: &str, first: &str, last: &str) -> String {
    format!(
        "`{name}` is out of range: indices start at 1, as in Stan, and the elements run from \
         `{first}` to `{last}`"
    )
}

/// The error for an element `name` (`beta[1.5]`, `Sigma[1,x]`) whose index text is not an
/// integer: positions are whole numbers, so the range of the draws is not the problem. `None`
/// when every index in `name` is an integer (or `name` has none). One wording for `:param` and
/// posterior expressions; the help names the integer positions around a decimal index.
pub(crate) fn non_integer_index_message(name: &str) -> Option<String> {
    let (base, rest) = name.split_once('[')?;
    let inner = rest.trim_end().strip_suffix(']')?;
    let bad = inner
        .split(|c| c == ',' || c == '[' || c == ']')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .find(|p| p.parse::<i64>().is_err())?;
    Some(format!(
        "`{name}`: an index must be an integer, found `{bad}`\n  help: {}",
        integer_index_help(base, bad)
    ))
}

/// What to write instead of the index `bad` of `base`: the whole numbers around a decimal
/// (`1.5` → `base[1]` or `base[2]`), the number without its point (`2.0` → `base[2]`).
fn integer_index_help(base: &str, bad: &str) -> String {
    match bad.parse::<f64>() {
        Ok(v) if v.is_finite() && v.fract() == 0.0 => format!(
            "write the position without the decimal point: `{base}[{}]`",
            v as i64
        ),
        Ok(v) if v.is_finite() => {
            let lo = v.floor().max(1.0) as i64;
            let hi = (v.ceil() as i64).max(lo + 1);
            format!("positions are whole numbers counted from 1: `{base}[{lo}]` or `{base}[{hi}]`")
        }
        _ => format!("positions are whole numbers counted from 1, e.g. `{base}[1]`"),
    }
}

/// Whether `e` reads the draws (names a quantity); `false` for an expression of constants
/// only (`7 %/% 0`), whose value is the same at every draw.
fn reads_draws(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::IntLit(_) | ExprKind::RealLit(_) => false,
        ExprKind::Var(_) | ExprKind::Index { .. } => true,
        ExprKind::Binary { lhs, rhs, .. } => reads_draws(lhs) || reads_draws(rhs),
        ExprKind::Unary { operand, .. } => reads_draws(operand),
        ExprKind::Transpose(x) => reads_draws(x),
        ExprKind::Call { args, .. } | ExprKind::RowVectorLit(args) | ExprKind::ArrayLit(args) => {
            args.iter().any(reads_draws)
        }
        ExprKind::Ternary {
            cond,
            then,
            otherwise,
        } => reads_draws(cond) || reads_draws(then) || reads_draws(otherwise),
    }
}

/// Whether `e` is an integer literal, possibly signed (`2`, `-1`; not `2.0`).
fn is_int_literal(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::IntLit(_) => true,
        ExprKind::Unary {
            op: UnOp::Neg | UnOp::Plus,
            operand,
        } => is_int_literal(operand),
        _ => false,
    }
}

/// A numeric constant (`0.9`, `-1`, `1e-3`), if `e` is one.
fn constant(e: &Expr) -> Option<f64> {
    match &e.kind {
        ExprKind::IntLit(i) => Some(*i as f64),
        ExprKind::RealLit(x) => Some(*x),
        ExprKind::Unary {
            op: UnOp::Neg,
            operand,
        } => constant(operand).map(|v| -v),
        ExprKind::Unary {
            op: UnOp::Plus,
            operand,
        } => constant(operand),
        _ => None,
    }
}

struct Evaluator<'a> {
    draws: &'a Draws,
    /// Warnings met so far (the evaluation itself takes `&self`).
    warnings: RefCell<Vec<Warning>>,
    /// Inside a branch of `?:`, the pooled draws where that branch is taken (nested branches
    /// narrow it); an error at any other draw is not raised. `None`: every draw.
    live: RefCell<Option<Vec<bool>>>,
}

/// The values of a subexpression at every draw (chain after chain), and whether the language
/// types it `int` (then every value is an integer in the int range).
struct Col {
    v: Vec<f64>,
    int: bool,
}

impl Col {
    fn real(v: Vec<f64>) -> Col {
        Col { v, int: false }
    }

    fn int(v: Vec<f64>) -> Col {
        Col { v, int: true }
    }
}

impl Evaluator<'_> {
    /// Total number of draws over all chains.
    fn len(&self) -> usize {
        self.draws.n_draws() * self.draws.chains.len()
    }

    /// The pooled draws of column `j`, chain after chain.
    fn column(&self, j: usize) -> Vec<f64> {
        self.draws.column(j).into_iter().flatten().collect()
    }

    /// Base names (before any `[`), in draw order, without repeats.
    fn base_names(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for n in &self.draws.names {
            let b = n.split('[').next().unwrap_or(n);
            if !out.contains(&b) {
                out.push(b);
            }
        }
        out
    }

    fn lookup(&self, name: &str, span: Span) -> Result<Vec<f64>, ExprError> {
        if let Some(j) = self.draws.position(name) {
            return Ok(self.column(j));
        }
        let base = name.split('[').next().unwrap_or(name);
        let elements: Vec<&String> = self
            .draws
            .names
            .iter()
            .filter(|n| n.starts_with(&format!("{base}[")))
            .collect();
        if !name.contains('[') && !elements.is_empty() {
            return Err(ExprError::new(
                format!(
                    "`{name}` has {} elements; the expression needs one, e.g. `{}`",
                    elements.len(),
                    elements[0]
                ),
                span,
            )
            .help(format!("`:param {name}` summarises every element")));
        }
        if !elements.is_empty() {
            let last = elements[elements.len() - 1];
            return Err(ExprError::new(
                out_of_range_message(name, elements[0], last),
                span,
            ));
        }
        // `mu[1]` of a scalar `mu`: the name exists, the index does not
        if name.contains('[') && self.draws.position(base).is_some() {
            return Err(ExprError::new(
                format!("`{base}` is a scalar; it has no elements to index (`{name}`)"),
                span,
            )
            .help(format!("write `{base}` without an index")));
        }
        let bases = self.base_names();
        let mut err = ExprError::new(
            format!("unknown name `{base}` in the posterior draws"),
            span,
        );
        if let Some(s) = best_match(base, bases.iter().copied()) {
            err = err.help(format!("did you mean `{s}`?"));
        } else if !bases.is_empty() {
            err = err.help(format!("the draws hold {}", bases.join(", ")));
        }
        Err(err)
    }

    /// The draw name of an indexed variable (`beta[2]`, `Sigma[1,2]`, `x[1][2]` → `x[1,2]`).
    fn indexed_name(&self, e: &Expr) -> Result<String, ExprError> {
        match &e.kind {
            ExprKind::Var(v) => Ok(v.clone()),
            ExprKind::Index { base, indices } => {
                let inner = self.indexed_name(base)?;
                let mut idx = Vec::with_capacity(indices.len());
                for i in indices {
                    match i {
                        Index::Single(ix) => match constant(ix) {
                            Some(v) if is_int_literal(ix) => idx.push(format!("{}", v as i64)),
                            Some(_) => {
                                let base = crate::semantics::pretty::expr(base);
                                let text = crate::semantics::pretty::expr(ix);
                                return Err(ExprError::new(
                                    format!("an index must be an integer, found `{text}`"),
                                    ix.span,
                                )
                                .help(integer_index_help(&base, &text)));
                            }
                            None => {
                                return Err(ExprError::new(
                                    "indices in posterior expressions must be integer constants",
                                    ix.span,
                                )
                                .help("index one element with integer positions, e.g. `beta[1]`"));
                            }
                        },
                        _ => {
                            return Err(ExprError::new(
                                "slices are not supported in posterior expressions; index one element",
                                e.span,
                            ));
                        }
                    }
                }
                let joined = idx.join(",");
                Ok(match inner.strip_suffix(']') {
                    Some(head) => format!("{head},{joined}]"),
                    None => format!("{inner}[{joined}]"),
                })
            }
            _ => Err(ExprError::new(
                "only named quantities can be indexed here",
                e.span,
            )),
        }
    }

    /// Stan's `to_int` at every draw (`graph::eval::to_int_value`: truncation toward zero);
    /// a draw that is NaN or outside the `int` range is the model's error at `e`, with where
    /// it is.
    fn to_int(&self, values: Vec<f64>, e: &Expr) -> Result<Vec<f64>, ExprError> {
        values
            .into_iter()
            .enumerate()
            .map(|(i, x)| to_int_value(x).or_else(|m| self.fail(m, e, i)))
            .collect()
    }

    /// Whether pooled draw `i` is evaluated: false where it lies in the branch of a `?:` that
    /// is not taken at that draw (a model evaluates only the branch taken).
    fn live(&self, i: usize) -> bool {
        self.live.borrow().as_ref().is_none_or(|m| m[i])
    }

    /// The error `message` of the subexpression `e`, at its span, with a help line naming
    /// pooled draw `i` (chain after chain) as the first where it fails, or, when `e` reads no
    /// draws and is evaluated at every draw (not inside a branch of `?:`), saying that it
    /// fails whatever the draws; NaN (a value never used) when the draw is not live.
    fn fail(&self, message: String, e: &Expr, i: usize) -> Result<f64, ExprError> {
        if !self.live(i) {
            return Ok(f64::NAN);
        }
        if !reads_draws(e) && self.live.borrow().is_none() {
            return Err(ExprError::new(message, e.span).help(
                "the expression is made of constants only (it reads no draws), so it fails as \
                 written, whatever the fit",
            ));
        }
        let n = self.draws.n_draws().max(1);
        Err(ExprError::new(message, e.span).help(format!(
            "at draw {} of chain {} (the first draw where it fails)",
            i % n + 1,
            i / n + 1
        )))
    }

    /// `op` (the exact result in i128) at every draw of an int `x`, an int, with the model's
    /// integer-overflow error where the result leaves int's range, the expression shown by
    /// `text`: -x and abs(x) overflow at -2147483648, as in a model.
    fn int_unary(
        &self,
        x: Vec<f64>,
        e: &Expr,
        op: fn(i128) -> i128,
        text: fn(i64) -> String,
    ) -> Result<Vec<f64>, ExprError> {
        x.into_iter()
            .enumerate()
            .map(|(k, v)| {
                let i = v as i64;
                let exact = op(i128::from(i));
                match int_in_range(i64::try_from(exact).ok()) {
                    Some(r) => Ok(r as f64),
                    None => self.fail(int_overflow_message(&text(i), Some(exact)), e, k),
                }
            })
            .collect()
    }

    /// The binary operation `e` (`lhs op rhs`) at every draw. Two int operands of `+ - * .* /
    /// %/% %` take the model's int arithmetic ([`int_arith`]: range-checked, an error for a
    /// zero divisor; `/` truncates, with the model's warning); `%/%` and `%` of reals (truncated
    /// quotient, remainder) also refuse a zero divisor. Comparisons and `&&`, `||` are ints (0
    /// or 1); the rest are reals.
    fn binary(&self, e: &Expr, op: BinOp, a: Col, b: Col) -> Result<Col, ExprError> {
        use BinOp::*;
        let by_zero = |k: usize| {
            let what = if op == Mod { "modulus" } else { "division" };
            self.fail(
                format!("integer {what} by zero in `{}`", pretty::expr(e)),
                e,
                k,
            )
        };
        if a.int
            && b.int
            && op == Div
            && let ExprKind::Binary { lhs, rhs, .. } = &e.kind
        {
            let (l, r) = (pretty::expr(lhs), pretty::expr(rhs));
            self.warnings.borrow_mut().push(Warning::IntegerDivision {
                expr: pretty::expr(e),
                real_form: format!("{l} * 1.0 / {r}"),
                int_form: format!("{l} %/% {r}"),
                span: e.span,
            });
        }
        if a.int && b.int && matches!(op, Add | Sub | Mul | EltMul | Div | IntDiv | Mod) {
            return a
                .v
                .iter()
                .zip(&b.v)
                .enumerate()
                .map(|(k, (x, y))| match int_arith(op, *x as i64, *y as i64) {
                    Some(Ok(r)) => Ok(r as f64),
                    Some(Err(IntArithError::Overflow(m))) => self.fail(m, e, k),
                    _ => by_zero(k),
                })
                .collect::<Result<_, _>>()
                .map(Col::int);
        }
        if matches!(op, IntDiv | Mod) {
            for (k, y) in b.v.iter().enumerate() {
                if *y == 0.0 {
                    by_zero(k)?;
                }
            }
        }
        let v =
            a.v.iter()
                .zip(&b.v)
                .map(|(x, y)| binary_op(op, *x, *y))
                .collect();
        let int = matches!(op, Lt | Le | Gt | Ge | Eq | Ne | And | Or);
        Ok(Col { v, int })
    }

    fn eval(&self, e: &Expr) -> Result<Col, ExprError> {
        let n = self.len();
        match &e.kind {
            ExprKind::IntLit(i) => Ok(Col::int(vec![*i as f64; n])),
            ExprKind::RealLit(x) => Ok(Col::real(vec![*x; n])),
            ExprKind::Var(v) => self.lookup(v, e.span).map(Col::real),
            ExprKind::Index { .. } => {
                let name = self.indexed_name(e)?;
                self.lookup(&name, e.span).map(Col::real)
            }
            ExprKind::Unary { op, operand } => {
                let x = self.eval(operand)?;
                Ok(match op {
                    UnOp::Neg if x.int => {
                        Col::int(self.int_unary(x.v, e, |i| -i, |i| format!("`-({i})`"))?)
                    }
                    UnOp::Neg => Col::real(x.v.into_iter().map(|v| -v).collect()),
                    UnOp::Plus => x,
                    UnOp::Not => Col::int(x.v.into_iter().map(|v| truth(v == 0.0)).collect()),
                })
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let a = self.eval(lhs)?;
                let b = self.eval(rhs)?;
                self.binary(e, *op, a, b)
            }
            ExprKind::Ternary {
                cond,
                then,
                otherwise,
            } => {
                let c = self.eval(cond)?.v;
                // each branch is evaluated only where it is taken, as in a model: an error
                // (a zero divisor, an overflow) where the other branch is taken is not raised
                let outer = self.live.borrow().clone();
                let taken = |when: bool| -> Vec<bool> {
                    (0..n)
                        .map(|i| (c[i] != 0.0) == when && outer.as_ref().is_none_or(|m| m[i]))
                        .collect()
                };
                *self.live.borrow_mut() = Some(taken(true));
                let t = self.eval(then);
                *self.live.borrow_mut() = Some(taken(false));
                let o = self.eval(otherwise);
                *self.live.borrow_mut() = outer;
                let (t, o) = (t?, o?);
                let v = (0..n)
                    .map(|i| if c[i] != 0.0 { t.v[i] } else { o.v[i] })
                    .collect();
                Ok(Col {
                    v,
                    int: t.int && o.int,
                })
            }
            ExprKind::Call { name, args, .. } => {
                let f = name.name.as_str();
                if REDUCERS.contains(&f) {
                    return Err(ExprError::new(
                        format!(
                            "`{f}` reduces over the draws; use it only around the whole expression"
                        ),
                        e.span,
                    )
                    .help(format!("write e.g. `{f}(alpha + beta[1])`")));
                }
                let arity = if UNARY_FUNCTIONS.contains(&f) {
                    1
                } else if BINARY_FUNCTIONS.contains(&f) {
                    2
                } else {
                    let all = REDUCERS
                        .iter()
                        .chain(UNARY_FUNCTIONS)
                        .chain(BINARY_FUNCTIONS)
                        .copied();
                    let mut err = ExprError::new(
                        format!("unknown function `{f}` in a posterior expression"),
                        name.span,
                    );
                    if let Some(s) = best_match(f, all) {
                        err = err.help(format!("did you mean `{s}`?"));
                    }
                    return Err(err);
                };
                if args.len() != arity {
                    return Err(ExprError::new(
                        format!("`{f}` takes {arity} argument(s), got {}", args.len()),
                        e.span,
                    ));
                }
                let a = self.eval(&args[0])?;
                if f == "to_int" {
                    return self.to_int(a.v, e).map(Col::int);
                }
                if f == "abs" && a.int {
                    return self
                        .int_unary(a.v, e, i128::abs, |i| format!("`abs({i})`"))
                        .map(Col::int);
                }
                if arity == 1 {
                    Ok(Col::real(a.v.into_iter().map(|x| unary(f, x)).collect()))
                } else {
                    let b = self.eval(&args[1])?.v;
                    Ok(Col::real(
                        a.v.iter()
                            .zip(&b)
                            .map(|(x, y)| binary_fn(f, *x, *y))
                            .collect(),
                    ))
                }
            }
            ExprKind::RowVectorLit(_) | ExprKind::ArrayLit(_) | ExprKind::Transpose(_) => {
                Err(ExprError::new(
                    "posterior expressions are scalar: vectors, arrays and transposes are not supported",
                    e.span,
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::parser::parse_expression;

    fn draws() -> Draws {
        // two chains of two draws; columns alpha, beta[1], beta[2]
        Draws {
            names: vec!["alpha".into(), "beta[1]".into(), "beta[2]".into()],
            chains: vec![
                vec![1.0, -1.0, 2.0, 3.0, 0.5, 4.0],
                vec![5.0, -2.0, 6.0, 7.0, 1.0, 8.0],
            ],
        }
    }

    fn run(src: &str) -> Result<(Reduction, Vec<Vec<f64>>), ExprError> {
        let e = parse_expression(src, 0).expect("test expressions parse");
        evaluate(&e, &draws()).map(|r| (r.reduction, r.values))
    }

    #[test]
    fn arithmetic_comparisons_and_functions() {
        let (r, v) = run("alpha + 2 * beta[2]").unwrap();
        assert_eq!(r, Reduction::Summary);
        assert_eq!(v, vec![vec![5.0, 11.0], vec![17.0, 23.0]]);
        let (r, v) = run("mean(beta[1] < 0)").unwrap();
        assert_eq!(r, Reduction::Mean);
        assert_eq!(v, vec![vec![1.0, 0.0], vec![1.0, 0.0]]);
        let (r, v) = run("quantile(exp(alpha) > 10 ? 1 : -1, 0.9)").unwrap();
        assert_eq!(r, Reduction::Quantile(0.9));
        assert_eq!(v, vec![vec![-1.0, 1.0], vec![1.0, 1.0]]);
        let (_, v) = run("pow(alpha, 2) - -1").unwrap();
        assert_eq!(v[1], vec![26.0, 50.0]);
    }

    #[test]
    fn to_int_truncates_toward_zero_at_every_draw() {
        let (r, v) = run("mean(to_int(beta[2] * 1.3 - 3))").unwrap();
        assert_eq!(r, Reduction::Mean);
        // beta[2] = 2, 4, 6, 8: -0.4, 2.2, 4.8, 7.4
        assert_eq!(v, vec![vec![0.0, 2.0], vec![4.0, 7.0]]);
        // beta[1] = -1, 0.5, -2, 1: -2.5, 1.25, -5, 2.5 truncate toward zero, not down
        let (_, v) = run("to_int(beta[1] * 2.5)").unwrap();
        assert_eq!(v, vec![vec![-2.0, 1.0], vec![-5.0, 2.0]]);
        assert_eq!(run("to_int(-7)").unwrap().1, vec![vec![-7.0; 2]; 2]);
    }

    #[test]
    fn to_int_out_of_range_is_the_models_error_with_its_draw() {
        // alpha = 1, 3, 5, 7: alpha * 1e9 leaves the int range first at draw 2 of chain 1
        let e = run("mean(to_int(alpha * 1e9) > 0)").unwrap_err();
        assert_eq!(
            e.message,
            "to_int: 3000000000 is not in the range of int (-2147483648 to 2147483647)"
        );
        assert_eq!(
            e.help.as_deref(),
            Some("at draw 2 of chain 1 (the first draw where it fails)")
        );
        assert_eq!((e.span.start, e.span.end), (5, 24));
        let e = run("to_int(log(alpha - 5))").unwrap_err();
        assert!(
            e.message.starts_with("to_int: NaN is not in the range"),
            "{e:?}"
        );
        assert!(
            run("to_int(alpha, 2)")
                .unwrap_err()
                .message
                .contains("takes 1 argument")
        );
    }

    #[test]
    fn errors_name_the_culprit() {
        let e = run("mean(alpah)").unwrap_err();
        assert!(e.message.contains("unknown name `alpah`"), "{e:?}");
        assert_eq!(e.help.as_deref(), Some("did you mean `alpha`?"));
        assert_eq!((e.span.start, e.span.end), (5, 10));
        assert!(
            run("beta + 1")
                .unwrap_err()
                .message
                .contains("has 2 elements")
        );
        assert!(run("beta[3]").unwrap_err().message.contains("out of range"));
        // indexing a scalar names the scalar, not an "unknown name" that the draws hold
        let e = run("mean(alpha[1] > 0)").unwrap_err();
        assert!(e.message.contains("`alpha` is a scalar"), "{e:?}");
        assert_eq!(e.help.as_deref(), Some("write `alpha` without an index"));
        let e = run("1 + mean(alpha)").unwrap_err();
        assert!(e.message.contains("reduces over the draws"), "{e:?}");
        let e = run("exq(alpha)").unwrap_err();
        assert_eq!(e.help.as_deref(), Some("did you mean `exp`?"));
        assert!(
            run("quantile(alpha, 2)")
                .unwrap_err()
                .message
                .contains("[0, 1]")
        );
    }
}
