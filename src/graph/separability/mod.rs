//! Separability analysis for minibatching: proves, from the program text, that the N/M-scaled
//! log density of a batch of rows is an unbiased estimate of the full log density
//! (specs/survey_vi.md §2, "Unbiased log joint"; issue 10 item 2).
//!
//! The observation axis is one `int` data variable `N` (the "size" of the rows). Every data or
//! transformed-data variable whose *leading* declared size is `N` is row-indexed: row i of it
//! belongs to observation i, and a batch slices those rows. The estimate
//! L̂_B = π + (N/M)·Σ_{i∈B} ℓ_i is unbiased when the log density splits as π + Σ_i ℓ_i with each
//! ℓ_i a function of row i alone and π a function of no row. The analysis proves that split by
//! tracking, for every expression, what it depends on ([`K`]):
//!
//! - row-wise computations keep rows apart: elementwise arithmetic and functions, `X * W` with the
//!   row-indexed operand on the left, `rep_matrix(b', N)`, `append_col`, indexing by the loop
//!   variable of a `for (n in 1:N)` loop whose iterations are independent, and user functions
//!   whose bodies are themselves row-wise;
//! - a vectorised `_lpdf`/`_lpmf` (or `sum`, `dot_self`) of row-indexed values is a sum over rows,
//!   which may only be (a linear part of) a log-density term;
//! - anything that combines rows — a reduction (`mean`, `sd`, `sum` outside a log-density term),
//!   `A * X` with the rows on the right, a transpose, indexing by a fixed or shifted row
//!   (`y[t - 1]`), state carried from one iteration of a row loop to the next — is an error at
//!   its span, saying why the estimate would be biased and how to fix it.
//!
//! The result ([`Separability`]) names the sliced variables and classifies every top-level
//! statement of the `model` block as a prior term (never scaled), a separable likelihood term
//! (scaled by N/M) or neither; a statement that adds both is refused with advice to split it.
//! The same classification identifies the terms whose per-observation gradients VOGN-type
//! methods need. Generated quantities are not analysed: they always run on the full data.

use std::collections::HashMap;

use codespan_reporting::diagnostic::{Diagnostic, Label};

use crate::syntax::ast::{
    BinOp, Expr, ExprKind, FunctionDef, Index, Program, SizedBase, SizedType, UnOp,
};
use crate::syntax::report::ToDiagnostic;
use crate::syntax::{FileId, Span};

/// Why a program cannot be minibatched: the expression or statement that mixes rows, what is
/// wrong with it, and how to fix it. Rendered like the semantic errors (codespan).
#[derive(Clone, Debug, PartialEq)]
pub struct SeparabilityError {
    /// One-line summary, e.g. "`mean(x)` combines the rows of the observation axis `N`".
    pub message: String,
    /// Why the N/M-scaled estimate would be biased (the label at the span).
    pub why: String,
    /// How to fix it.
    pub help: String,
    /// The offending expression or statement.
    pub span: Span,
}

impl std::fmt::Display for SeparabilityError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.message)
    }
}

impl ToDiagnostic for SeparabilityError {
    fn to_diagnostic(&self) -> Diagnostic<FileId> {
        Diagnostic::error()
            .with_message(format!("cannot minibatch: {}", self.message))
            .with_labels(vec![
                Label::primary(self.span.file, self.span.range()).with_message("here"),
            ])
            .with_notes(vec![
                format!("why: {}", self.why),
                format!("help: {}", self.help),
            ])
    }
}

/// What a top-level `model` statement adds to the log density under minibatching.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TermKind {
    /// Nothing (declarations, assignments, prints).
    None,
    /// Terms that depend on no row: priors (and any other row-free term); never scaled.
    Prior,
    /// A separable likelihood term Σ_{i∈rows} ℓ_i: scaled by N/M under minibatching.
    Likelihood,
}

/// The result of [`analyse`]: which variables are sliced and which model statements are scaled.
#[derive(Clone, Debug, PartialEq)]
pub struct Separability {
    /// The observation axis: the `int` data variable that sizes the rows.
    pub axis: String,
    /// Data and transformed-data variables whose leading size is the axis (declaration order).
    pub sliced: Vec<String>,
    /// One entry per top-level statement of the `model` block.
    pub model_terms: Vec<TermKind>,
}

/// The `int` data scalars that are the leading size of at least one other data variable: the
/// candidates for the observation axis, in declaration order.
pub fn candidate_axes(program: &Program) -> Vec<String> {
    let ints: Vec<&str> = program
        .data
        .iter()
        .filter(|d| matches!(d.ty.base, SizedBase::Int) && d.ty.array_dims.is_empty())
        .map(|d| d.name.name.as_str())
        .collect();
    ints.into_iter()
        .filter(|n| {
            program.data.iter().any(|d| {
                leading_size(&d.ty).is_some_and(|e| matches!(&e.kind, ExprKind::Var(v) if v == n))
            })
        })
        .map(str::to_string)
        .collect()
}

/// The expression of the leading declared size: the first array size, else the first size of
/// the vector or matrix; `None` for a scalar.
fn leading_size(ty: &SizedType) -> Option<&Expr> {
    if let Some(e) = ty.array_dims.first() {
        return Some(e);
    }
    match &ty.base {
        SizedBase::Int | SizedBase::Real => None,
        SizedBase::Vector(e)
        | SizedBase::RowVector(e)
        | SizedBase::Matrix(e, _)
        | SizedBase::Simplex(e)
        | SizedBase::Ordered(e)
        | SizedBase::PositiveOrdered(e)
        | SizedBase::CholeskyFactorCorr(e)
        | SizedBase::CholeskyFactorCov(e)
        | SizedBase::CovMatrix(e)
        | SizedBase::CorrMatrix(e) => Some(e),
    }
}

/// All declared size expressions after the leading one.
fn other_sizes(ty: &SizedType) -> Vec<&Expr> {
    let mut all: Vec<&Expr> = ty.array_dims.iter().collect();
    match &ty.base {
        SizedBase::Int | SizedBase::Real => {}
        SizedBase::Matrix(a, b) => {
            all.push(a);
            all.push(b);
        }
        SizedBase::Vector(e)
        | SizedBase::RowVector(e)
        | SizedBase::Simplex(e)
        | SizedBase::Ordered(e)
        | SizedBase::PositiveOrdered(e)
        | SizedBase::CholeskyFactorCorr(e)
        | SizedBase::CholeskyFactorCov(e)
        | SizedBase::CovMatrix(e)
        | SizedBase::CorrMatrix(e) => all.push(e),
    }
    all.into_iter().skip(1).collect()
}

/// What a value depends on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum K {
    /// No row: parameters, non-row data, literals.
    Const,
    /// The number of rows (the axis itself, `rows(X)` of a row-indexed `X`): allowed only as a
    /// size, a loop bound or the count of a `rep_*`.
    Size,
    /// The loop variable of the loop over rows: allowed only as the first index of a
    /// row-indexed value.
    RowIx,
    /// A value of the current row of the loop over rows (`y[n]`, `mu[n] + 1`).
    Row,
    /// A row-indexed container: element or row i belongs to observation i.
    Rows,
    /// A sum over rows of per-row terms (`normal_lpdf(y | mu, s)`, `sum(ll)`): allowed only as a
    /// linear part of a log-density term.
    RowSum,
}

#[derive(Clone, Copy, Debug)]
struct Var {
    kind: K,
    /// A scalar `int`/`real` (so `c * X` is elementwise).
    scalar: bool,
    /// Number of indices that make an element a scalar (array dims + vector/matrix dims).
    rank: usize,
    /// The leading size is an array size (so a multivariate density sees one row per element).
    array_rows: bool,
    /// Row-loop nesting level at the declaration (0 outside any loop over rows).
    level: usize,
}

type R<T> = Result<T, SeparabilityError>;

mod lists;
mod stmt;

use lists::{DENSITY_SUFFIXES, ELEMENTWISE, MULTIVARIATE, REDUCTIONS};

/// Proves that the program's log density separates over the rows of `axis` (module docs), or
/// returns the first place where it does not.
///
/// Errors: [`SeparabilityError`] at the offending span (the axis is not an `int` data scalar;
/// a parameter sized by the axis; row mixing anywhere in transformed data, transformed
/// parameters or the model; a statement that adds both prior and likelihood terms).
pub fn analyse(program: &Program, axis: &str) -> R<Separability> {
    let Some(decl) = program.data.iter().find(|d| d.name.name == axis) else {
        let span = program.block_spans.data.unwrap_or_default();
        return Err(SeparabilityError {
            message: format!("`{axis}` is not a data variable"),
            why: "the observation axis is the data size that counts the rows".into(),
            help: "pass the name of the `int` data variable that sizes the rows with --batch-over"
                .into(),
            span,
        });
    };
    if !(matches!(decl.ty.base, SizedBase::Int) && decl.ty.array_dims.is_empty()) {
        return Err(SeparabilityError {
            message: format!("`{axis}` is not an `int` scalar"),
            why: "the observation axis is the data size that counts the rows".into(),
            help: "pass the name of the `int` data variable that sizes the rows with --batch-over"
                .into(),
            span: decl.span,
        });
    }
    let mut a = Analyser {
        axis: axis.to_string(),
        scopes: vec![HashMap::new()],
        row_loop: None,
        level: 0,
        funcs: program
            .functions
            .iter()
            .filter(|f| f.body.is_some())
            .map(|f| (f.name.name.clone(), f))
            .collect(),
        depth: 0,
        terms: (false, false),
        returns: Vec::new(),
        sliced: Vec::new(),
        in_tdata: false,
    };
    for d in &program.data {
        a.decl(d, Block::Data)?;
    }
    a.in_tdata = true;
    for s in &program.transformed_data {
        a.top_stmt(s, Block::TransformedData)?;
    }
    a.in_tdata = false;
    for d in &program.parameters {
        a.decl(d, Block::Parameters)?;
    }
    for s in &program.transformed_parameters {
        a.top_stmt(s, Block::Other)?;
    }
    let mut model_terms = Vec::new();
    a.scopes.push(HashMap::new());
    for s in &program.model {
        a.terms = (false, false);
        a.stmt(s)?;
        model_terms.push(match a.terms {
            (false, false) => TermKind::None,
            (true, false) => TermKind::Prior,
            (false, true) => TermKind::Likelihood,
            (true, true) => {
                return Err(SeparabilityError {
                    message: "this statement adds both row-free (prior) terms and terms that \
                              depend on the rows"
                        .into(),
                    why: "under --batch-size the per-row terms are scaled by N/M and the prior \
                          terms are not, so they must be separate statements"
                        .into(),
                    help: "split it into one statement for the prior terms and one (or one loop) \
                           for the likelihood terms"
                        .into(),
                    span: s.span,
                });
            }
        });
    }
    Ok(Separability {
        axis: axis.to_string(),
        sliced: a.sliced,
        model_terms,
    })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Block {
    Data,
    TransformedData,
    Parameters,
    Other,
}

struct Analyser<'p> {
    axis: String,
    scopes: Vec<HashMap<String, Var>>,
    /// The loop variable of the enclosing loop over rows, if any.
    row_loop: Option<String>,
    /// Row-loop nesting level (0 or 1).
    level: usize,
    funcs: HashMap<String, &'p FunctionDef>,
    /// Depth of user-function analysis (guards recursion).
    depth: usize,
    /// (prior terms seen, likelihood terms seen) in the current top-level model statement.
    terms: (bool, bool),
    /// Kinds of the `return` expressions of the function being analysed.
    returns: Vec<K>,
    sliced: Vec<String>,
    /// Analysing the `transformed data` block.
    in_tdata: bool,
}

fn err(span: Span, message: String, why: &str, help: &str) -> SeparabilityError {
    SeparabilityError {
        message,
        why: why.to_string(),
        help: help.to_string(),
        span,
    }
}

const WHY_MIX: &str = "under --batch-size each iteration sees a random batch of M of the N rows; \
    a value that combines rows is then computed from the batch instead of all rows, and no N/M \
    scaling of the log density makes that estimate unbiased";

const WHY_TDATA: &str = "under --batch-size transformed data are sliced row by row like the data, \
    and the compiler accepts only row-wise transformed data, so that every row the model sees is a \
    function of that row alone; a statistic over all rows has no row of its own, and the \
    guarantee that the N/M-scaled batch estimate is unbiased would no longer follow from the \
    program";

/// A short rendering of an expression for messages.
fn show(e: &Expr) -> String {
    crate::semantics::pretty::expr(e)
}

/// Whether `e` reads the variable `name` ([`Expr::mentions`]).
fn mentions(e: &Expr, name: &str) -> bool {
    e.mentions(name)
}

/// Joins the kinds of the operands of an elementwise operation.
fn join(a: K, b: K) -> Option<K> {
    use K::*;
    match (a, b) {
        (Const, x) | (x, Const) => Some(x),
        (Row, Row) => Some(Row),
        (Rows, Rows) => Some(Rows),
        _ => None,
    }
}

impl Analyser<'_> {
    fn lookup(&self, name: &str) -> Option<Var> {
        self.scopes.iter().rev().find_map(|s| s.get(name).copied())
    }

    fn bind(&mut self, name: &str, v: Var) {
        self.scopes
            .last_mut()
            .expect("a scope")
            .insert(name.to_string(), v);
    }

    /// An expression used as a value: no sum over rows, no bare row count or row index.
    fn val(&mut self, e: &Expr) -> R<K> {
        match self.expr(e)? {
            K::RowSum => Err(err(
                e.span,
                format!(
                    "`{}` sums over the rows of the observation axis `{}`",
                    show(e),
                    self.axis
                ),
                &format!(
                    "{WHY_MIX}; a sum over rows is only unbiased as a log-density term itself \
                     (`target += ...` or `~`), where it is scaled by N/M"
                ),
                "if it is a statistic of the data, compute it before the fit and pass it as data; \
                 if it is a likelihood, add it to the log density directly",
            )),
            K::Size => Err(err(
                e.span,
                format!("the row count `{}` is used as a number", show(e)),
                &format!(
                    "under --batch-size `{}` is the batch size M inside the model, not N",
                    self.axis
                ),
                "pass the number as a separate data variable, or use it only as a size or loop bound",
            )),
            K::RowIx => Err(err(
                e.span,
                format!("the row index `{}` is used as a number", show(e)),
                "under --batch-size the loop over rows visits the rows of a random batch, so the \
                 loop variable is a position in the batch, not the observation's number",
                "use the loop variable only to index row-indexed data; pass per-row values (e.g. a \
                 time) as a data column",
            )),
            k => Ok(k),
        }
    }

    fn known_scalar(&self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::IntLit(_) | ExprKind::RealLit(_) => true,
            ExprKind::Var(v) => self.lookup(v).is_some_and(|v| v.scalar),
            ExprKind::Unary { operand, .. } => self.known_scalar(operand),
            ExprKind::Binary { lhs, rhs, .. } => self.known_scalar(lhs) && self.known_scalar(rhs),
            ExprKind::Call { name, args, .. } => {
                ELEMENTWISE.contains(&name.name.as_str())
                    && args.iter().all(|a| self.known_scalar(a))
            }
            // v[i], M[i, j]: as many single indices as the variable has dimensions
            ExprKind::Index { base, indices } => match &base.kind {
                ExprKind::Var(v) => {
                    indices.iter().all(|i| matches!(i, Index::Single(_)))
                        && self.lookup(v).is_some_and(|v| v.rank == indices.len())
                }
                _ => false,
            },
            _ => false,
        }
    }

    fn expr(&mut self, e: &Expr) -> R<K> {
        match &e.kind {
            ExprKind::IntLit(_) | ExprKind::RealLit(_) => Ok(K::Const),
            ExprKind::Var(v) => Ok(self.lookup(v).map_or(K::Const, |v| v.kind)),
            ExprKind::Unary { op, operand } => {
                let k = self.val(operand)?;
                let _ = op == &UnOp::Neg;
                Ok(k)
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let (a, b) = (self.val(lhs)?, self.val(rhs)?);
                let mixed = |what: &str, help: &str| {
                    Err(err(e.span, format!("`{}` {what}", show(e)), WHY_MIX, help))
                };
                match op {
                    BinOp::Mul | BinOp::Div if a == K::Const && b == K::Rows => {
                        if self.known_scalar(lhs) {
                            Ok(K::Rows)
                        } else {
                            mixed(
                                "multiplies across the rows of its right operand",
                                "put the row-indexed operand on the left (`X * w`), or use `.*` \
                                 for an elementwise product",
                            )
                        }
                    }
                    BinOp::Mul | BinOp::Div if a == K::Rows && b == K::Rows => mixed(
                        "multiplies two row-indexed values as matrices, which combines rows",
                        "use `.*` for an elementwise product",
                    ),
                    BinOp::LeftDiv if a == K::Rows || b == K::Rows => mixed(
                        "solves a linear system that combines rows",
                        "keep the rows on the left of a product with a parameter (`X * w`)",
                    ),
                    _ => match join(a, b) {
                        Some(k) => Ok(k),
                        None => mixed(
                            "combines a single row with all rows",
                            "index both operands by the row: `x[n] ... y[n]`",
                        ),
                    },
                }
            }
            ExprKind::Ternary {
                cond,
                then,
                otherwise,
            } => {
                let c = self.val(cond)?;
                let t = self.val(then)?;
                let o = self.val(otherwise)?;
                match join(c, t).and_then(|k| join(k, o)) {
                    Some(k) => Ok(k),
                    None => Err(err(
                        e.span,
                        format!("`{}` combines a single row with all rows", show(e)),
                        WHY_MIX,
                        "index every operand by the row",
                    )),
                }
            }
            ExprKind::RowVectorLit(xs) | ExprKind::ArrayLit(xs) => {
                let mut k = K::Const;
                for x in xs {
                    let kx = self.val(x)?;
                    k = match (kx, join(k, kx)) {
                        (K::Rows, _) | (_, None) => {
                            return Err(err(
                                x.span,
                                format!("`{}` puts row-indexed values in a literal", show(x)),
                                WHY_MIX,
                                "keep row-indexed values in variables sized by the observation axis",
                            ));
                        }
                        (_, Some(k)) => k,
                    };
                }
                Ok(k)
            }
            ExprKind::Transpose(x) => match self.val(x)? {
                K::Rows => Err(err(
                    e.span,
                    format!("`{}` turns the rows into columns", show(e)),
                    WHY_MIX,
                    "write the product with the row-indexed matrix on the left (`X * w`, not \
                     `w' * X'`)",
                )),
                k => Ok(k),
            },
            ExprKind::Index { base, indices } => self.index(e, base, indices),
            ExprKind::Call { name, args, .. } => self.call(e, &name.name, args),
        }
    }

    fn index(&mut self, e: &Expr, base: &Expr, indices: &[Index]) -> R<K> {
        let bk = self.val(base)?;
        let row = self.row_loop.clone();
        let is_row_ix = |x: &Expr| matches!(&x.kind, ExprKind::Var(v) if Some(v) == row.as_ref());
        // the remaining indices: any row-free or same-row value
        let mut rest = K::Const;
        let first = indices.first();
        let skip = usize::from(bk == K::Rows);
        for (j, ix) in indices.iter().enumerate().skip(skip) {
            let parts: Vec<&Expr> = match ix {
                Index::Single(x) => vec![x],
                Index::Range(a, b) => a.iter().chain(b.iter()).collect(),
                Index::All => vec![],
            };
            for x in parts {
                if is_row_ix(x) {
                    if bk == K::Const && j == 0 {
                        let bname = show(base);
                        return Err(err(
                            x.span,
                            format!(
                                "`{bname}` is indexed by the row index `{}`, but its leading size \
                                 is not the observation axis `{}`",
                                show(x),
                                self.axis
                            ),
                            "only variables whose leading size is the observation axis are \
                             sliced into batches; inside a batch the loop variable counts the \
                             batch's rows, so it would pick the wrong element of this one",
                            &format!("declare `{bname}` with leading size `{}`", self.axis),
                        ));
                    }
                    return Err(err(
                        x.span,
                        format!(
                            "the row index `{}` indexes a non-leading dimension",
                            show(x)
                        ),
                        WHY_MIX,
                        "index the rows of row-indexed data only",
                    ));
                }
                let k = self.val(x)?;
                rest = match join(rest, k) {
                    Some(k) => k,
                    None => {
                        return Err(err(
                            x.span,
                            format!("`{}` combines a single row with all rows", show(x)),
                            WHY_MIX,
                            "index by values of the same row",
                        ));
                    }
                };
            }
        }
        if bk != K::Rows {
            // y[n][k], alpha[g[n]], alpha[g]
            return match join(bk, rest) {
                Some(k) => Ok(k),
                None => Err(err(
                    e.span,
                    format!("`{}` combines a single row with all rows", show(e)),
                    WHY_MIX,
                    "index by values of the same row",
                )),
            };
        }
        let Some(first) = first else {
            return Ok(K::Rows);
        };
        let out = match first {
            Index::All | Index::Range(None, None) => K::Rows,
            Index::Single(x) if is_row_ix(x) => K::Row,
            Index::Single(x) if row.as_ref().is_some_and(|r| mentions(x, r)) => {
                let r = row.clone().unwrap_or_default();
                return Err(err(
                    x.span,
                    format!(
                        "`{}` reads row `{}` in the iteration of row `{r}`: the loop carries \
                         state from row to row",
                        show(e),
                        show(x)
                    ),
                    "a batch holds M randomly chosen rows, not consecutive ones, so the \
                     neighbouring row is not in it; a recursion over rows (as in an \
                     autoregression) does not split into independent per-row terms, and the \
                     N/M-scaled batch sum would be biased",
                    "pass the lagged values as a data column (e.g. `y_lag`), so that every row \
                     holds what its term needs; or fit without --batch-size",
                ));
            }
            _ => {
                return Err(err(
                    e.span,
                    format!("`{}` picks particular rows of row-indexed data", show(e)),
                    "a batch holds M randomly chosen rows; which rows a fixed index or range \
                     picks changes from batch to batch, so the estimate would be biased",
                    "use all rows (`x[:, k]`) or index by the loop variable of `for (n in 1:N)`",
                ));
            }
        };
        match join(out, rest) {
            Some(k) => Ok(k),
            None => Err(err(
                e.span,
                format!("`{}` combines a single row with all rows", show(e)),
                WHY_MIX,
                "index by values of the same row",
            )),
        }
    }

    fn call(&mut self, e: &Expr, name: &str, args: &[Expr]) -> R<K> {
        // sizes: rows(X), size(y), num_elements(y) of row-indexed values are the row count
        if matches!(name, "rows" | "size" | "num_elements" | "cols") {
            let k = self.val(&args[0])?;
            return Ok(match (name, k) {
                ("cols", _) => K::Const,
                (_, K::Rows) => K::Size,
                (_, k) => k,
            });
        }
        if matches!(
            name,
            "rep_vector" | "rep_row_vector" | "rep_array" | "rep_matrix"
        ) {
            let x = self.val(&args[0])?;
            let mut sized = false;
            for (j, a) in args.iter().enumerate().skip(1) {
                match self.expr(a)? {
                    K::Size if j == 1 => sized = true,
                    K::Const => {}
                    _ => {
                        self.val(a)?;
                        return Err(err(
                            a.span,
                            format!(
                                "`{}` uses the row count as a size that is not the first",
                                show(a)
                            ),
                            "only the leading dimension can be sliced into batches",
                            "put the rows first",
                        ));
                    }
                }
            }
            return match (x, sized) {
                (K::Const, true) | (K::Rows, false) => Ok(K::Rows),
                (k, false) => Ok(k),
                _ => Err(err(
                    e.span,
                    format!("`{}` repeats row-indexed values over the rows", show(e)),
                    WHY_MIX,
                    "repeat values that do not depend on the rows",
                )),
            };
        }
        let density = DENSITY_SUFFIXES.iter().find_map(|s| name.strip_suffix(s));
        if let Some(f) = self.funcs.get(name).copied() {
            return self.user_call(e, f, args);
        }
        let mut kinds = Vec::with_capacity(args.len());
        for a in args {
            kinds.push(self.val(a)?);
        }
        let mut k = K::Const;
        let mut has_rows = false;
        for (a, &ka) in args.iter().zip(&kinds) {
            has_rows |= ka == K::Rows;
            k = match (k, ka) {
                (K::Rows, K::Row) | (K::Row, K::Rows) => {
                    return Err(err(
                        a.span,
                        format!("`{}` combines a single row with all rows", show(e)),
                        WHY_MIX,
                        "index every argument by the row",
                    ));
                }
                (K::Rows, _) | (_, K::Rows) => K::Rows,
                (K::Row, _) | (_, K::Row) => K::Row,
                _ => K::Const,
            };
        }
        if !has_rows {
            return Ok(k);
        }
        if let Some(family) = density {
            if MULTIVARIATE.contains(&family) {
                for (a, &ka) in args.iter().zip(&kinds) {
                    let plain_array = match &a.kind {
                        ExprKind::Var(v) => self.lookup(v).is_some_and(|v| v.array_rows),
                        _ => false,
                    };
                    if ka == K::Rows && !plain_array {
                        return Err(err(
                            a.span,
                            format!(
                                "`{family}` takes `{}` as one multivariate draw, not as one draw \
                                 per row",
                                show(a)
                            ),
                            "a multivariate density of a whole vector couples all of its \
                             elements, so it does not split into per-row terms",
                            "pass an array with one element per row (`array[N] vector[K]`)",
                        ));
                    }
                }
            }
            return Ok(K::RowSum);
        }
        match name {
            "sum" | "dot_self" | "dot_product" => Ok(K::RowSum),
            "append_col" | "rows_dot_product" | "rows_dot_self" | "col" | "add_row_vector"
            | "diag_post_multiply" => Ok(K::Rows),
            _ if ELEMENTWISE.contains(&name) => Ok(K::Rows),
            _ if REDUCTIONS.contains(&name) => Err(err(
                e.span,
                format!(
                    "`{}` combines the rows of the observation axis `{}`",
                    show(e),
                    self.axis
                ),
                if self.in_tdata { WHY_TDATA } else { WHY_MIX },
                "compute this statistic before the fit and pass it as data (or fit without \
                 --batch-size)",
            )),
            _ => Err(err(
                e.span,
                format!("`{name}` is not known to act row by row"),
                WHY_MIX,
                "write the computation with elementwise operations, `X * W` and vectorised \
                 densities, or fit without --batch-size",
            )),
        }
    }

    /// A call of a user-defined function: its body is analysed with the argument kinds.
    fn user_call(&mut self, e: &Expr, f: &FunctionDef, args: &[Expr]) -> R<K> {
        let mut kinds = Vec::with_capacity(args.len());
        for a in args {
            kinds.push(match self.expr(a)? {
                K::Size => K::Size,
                _ => self.val(a)?,
            });
        }
        if kinds.iter().all(|k| *k == K::Const) && !f.name.name.ends_with("_lp") {
            return Ok(K::Const);
        }
        if self.depth >= 8 {
            return Err(err(
                e.span,
                format!("`{}` is recursive", f.name.name),
                "the analysis cannot follow recursion over row-indexed values",
                "fit without --batch-size",
            ));
        }
        let Some(body) = &f.body else {
            return Ok(K::Const);
        };
        let saved_scopes = std::mem::replace(&mut self.scopes, vec![HashMap::new()]);
        let saved_row = self.row_loop.take();
        let saved_level = std::mem::replace(&mut self.level, 0);
        let saved_returns = std::mem::take(&mut self.returns);
        self.depth += 1;
        for (p, k) in f.params.iter().zip(&kinds) {
            let scalar = matches!(
                p.ty.base,
                crate::syntax::ast::UnsizedBase::Int | crate::syntax::ast::UnsizedBase::Real
            ) && p.ty.array_dims == 0;
            let array_rows = *k == K::Rows && p.ty.array_dims > 0;
            self.bind(
                &p.name.name,
                Var {
                    kind: *k,
                    scalar,
                    rank: p.ty.array_dims
                        + match p.ty.base {
                            crate::syntax::ast::UnsizedBase::Int
                            | crate::syntax::ast::UnsizedBase::Real => 0,
                            crate::syntax::ast::UnsizedBase::Vector
                            | crate::syntax::ast::UnsizedBase::RowVector => 1,
                            crate::syntax::ast::UnsizedBase::Matrix => 2,
                        },
                    array_rows,
                    level: 0,
                },
            );
        }
        let r = self.stmt(body);
        self.depth -= 1;
        let returns = std::mem::replace(&mut self.returns, saved_returns);
        self.scopes = saved_scopes;
        self.row_loop = saved_row;
        self.level = saved_level;
        r?;
        let mut out = K::Const;
        for k in returns {
            out = match (out, k) {
                (K::Const, k) | (k, K::Const) => k,
                (a, b) if a == b => a,
                (K::RowSum, _) | (_, K::RowSum) => K::RowSum,
                _ => {
                    return Err(err(
                        e.span,
                        format!("`{}` returns values of different rows", f.name.name),
                        WHY_MIX,
                        "make the function row-wise",
                    ));
                }
            };
        }
        Ok(out)
    }
}
