//! The checker proper: one pass over the program in block order, inferring the type of every
//! expression and recording errors and warnings (stanc3 `Typechecker.ml` plays this role).

mod calls;
mod decls;
mod dists;
mod exprs;
mod guards;
pub(crate) mod ode;
mod stmts;

use std::collections::{BTreeSet, HashMap, HashSet};

use crate::distributions::has_log_cdf;
use crate::distributions::multivariate as multivariate_registry;
use crate::distributions::registry::{self, FamilySig, Support};
use crate::syntax::ast::{
    AssignOp, BinOp, Expr, ExprKind, FunctionDef, Index, LValue, PrintArg, Program, ReturnType,
    SizedBase, Stmt, StmtKind, UnOp, VarDecl,
};
use crate::syntax::span::Span;

use super::CheckOutput;
use super::builtins;
use super::error::SemanticError;
use super::names::{Origin, Scopes, VarInfo, best_match};
use super::operators;
use super::pretty;
use super::types::{Base, IndexKind, Type, index_type, max_indices};
use super::warnings::Warning;

mod call_shapes;
mod multivariate;
mod mv_sizes;
mod size_checks;
mod sizes;

/// The block a statement belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Block {
    Functions,
    Data,
    TransformedData,
    Parameters,
    TransformedParameters,
    Model,
    GeneratedQuantities,
}

impl Block {
    fn name(self) -> &'static str {
        match self {
            Block::Functions => "functions",
            Block::Data => "data",
            Block::TransformedData => "transformed data",
            Block::Parameters => "parameters",
            Block::TransformedParameters => "transformed parameters",
            Block::Model => "model",
            Block::GeneratedQuantities => "generated quantities",
        }
    }

    /// The origin of a block-level declaration in this block.
    fn origin(self) -> Origin {
        match self {
            Block::Data => Origin::Data,
            Block::TransformedData => Origin::TransformedData,
            Block::Parameters => Origin::Parameter,
            Block::TransformedParameters => Origin::TransformedParameter,
            Block::GeneratedQuantities => Origin::GeneratedQuantity,
            Block::Model | Block::Functions => Origin::Local,
        }
    }
}

/// A user-defined function's signature.
#[derive(Clone, Debug)]
struct UserFn {
    params: Vec<Type>,
    /// `data` qualifiers of the parameters: such arguments may not depend on parameters.
    data_only: Vec<bool>,
    /// `None` for `void`.
    ret: Option<Type>,
    span: Span,
    defined: bool,
}

/// The function whose body is being checked.
#[derive(Clone, Debug)]
struct FnCtx {
    name: String,
    ret: Option<Type>,
    /// The known sizes of each `return`'s value so far (`None` where unknown), for
    /// [`Checker::fn_shapes`].
    ret_shapes: Vec<Option<Vec<Option<i64>>>>,
}

/// The outcome of checking a call.
#[derive(Clone, Copy, Debug, PartialEq)]
enum CallType {
    Value(Type),
    Void,
    /// An error was already reported.
    Error,
}

/// Suffixes of distribution functions, longest match first within each stem (`_cdf` after
/// `_lcdf` and `_lccdf`, of which it is a suffix).
const DIST_SUFFIXES: &[&str] = &[
    "_lupdf", "_lupmf", "_lpdf", "_lpmf", "_lccdf", "_lcdf", "_cdf", "_rng",
];

/// Splits `normal_lpdf` into (`normal`, `_lpdf`).
fn split_suffix(name: &str) -> Option<(&str, &'static str)> {
    DIST_SUFFIXES
        .iter()
        .find_map(|s| name.strip_suffix(s).map(|stem| (stem, *s)))
        .filter(|(stem, _)| !stem.is_empty())
}

/// The words describing a support in messages.
fn support_words(s: Support) -> &'static str {
    match s {
        Support::Real => "real values",
        Support::Positive => "positive values",
        Support::NonNegative => "non-negative values",
        Support::UnitInterval => "values in (0, 1)",
        Support::Count => "integer counts",
        Support::Binary => "0/1 integers",
        Support::Integer => "integers",
    }
}

fn is_discrete_support(s: Support) -> bool {
    matches!(s, Support::Count | Support::Binary | Support::Integer)
}

/// Whether constant bounds `[lower, upper]` leave no value inside `support`.
fn contradicts(support: Support, lower: Option<f64>, upper: Option<f64>) -> bool {
    let (lo, hi) = (
        lower.unwrap_or(f64::NEG_INFINITY),
        upper.unwrap_or(f64::INFINITY),
    );
    match support {
        Support::Real | Support::Integer => false,
        // A continuous family puts no mass on the single point 0, so `<upper=0>` contradicts a
        // non-negative support as well as a positive one.
        Support::Positive | Support::NonNegative => hi <= 0.0,
        Support::Count => hi < 0.0,
        Support::UnitInterval => hi <= 0.0 || lo >= 1.0,
        Support::Binary => hi < 0.0 || lo > 1.0,
    }
}

/// The standard normal: `normal(0, 1)` without parameters (Stan's `std_normal`).
const STD_NORMAL: &str = "std_normal";

const REALS: &str = "`real`, `vector`, `row_vector` or `array[] real`";
const INTS: &str = "`int` or `array[] int`";

/// The name of the variable at the root of `x`, `x[i]`, `x[i][j]`.
fn root_var(e: &Expr) -> Option<&str> {
    match &e.kind {
        ExprKind::Var(n) => Some(n),
        ExprKind::Index { base, .. } => root_var(base),
        _ => None,
    }
}

/// Every variable referenced in `e`, with its span, in source order.
fn collect_vars<'e>(e: &'e Expr, out: &mut Vec<(&'e str, Span)>) {
    match &e.kind {
        ExprKind::IntLit(_) | ExprKind::RealLit(_) => {}
        ExprKind::Var(n) => out.push((n, e.span)),
        ExprKind::Binary { lhs, rhs, .. } => {
            collect_vars(lhs, out);
            collect_vars(rhs, out);
        }
        ExprKind::Unary { operand, .. } | ExprKind::Transpose(operand) => {
            collect_vars(operand, out)
        }
        ExprKind::Call { args, .. } | ExprKind::RowVectorLit(args) | ExprKind::ArrayLit(args) => {
            for a in args {
                collect_vars(a, out);
            }
        }
        ExprKind::Index { base, indices } => {
            collect_vars(base, out);
            for ix in indices {
                collect_index_vars(ix, out);
            }
        }
        ExprKind::Ternary {
            cond,
            then,
            otherwise,
        } => {
            collect_vars(cond, out);
            collect_vars(then, out);
            collect_vars(otherwise, out);
        }
    }
}

fn collect_index_vars<'e>(ix: &'e Index, out: &mut Vec<(&'e str, Span)>) {
    match ix {
        Index::Single(e) => collect_vars(e, out),
        Index::Range(lo, hi) => {
            for e in [lo, hi].into_iter().flatten() {
                collect_vars(e, out);
            }
        }
        Index::All => {}
    }
}

/// Whether every path through `s` ends in `return` or `reject` (best effort: loops never count).
fn always_returns(s: &Stmt) -> bool {
    match &s.kind {
        StmtKind::Return(_) | StmtKind::Reject(_) => true,
        StmtKind::Block(stmts) => stmts.iter().any(always_returns),
        StmtKind::If {
            then,
            otherwise: Some(other),
            ..
        } => always_returns(then) && always_returns(other),
        _ => false,
    }
}

/// The size expressions of a declaration, outermost first.
fn size_exprs(decl: &VarDecl) -> Vec<&Expr> {
    let mut out: Vec<&Expr> = decl.ty.array_dims.iter().collect();
    match &decl.ty.base {
        SizedBase::Int | SizedBase::Real => {}
        SizedBase::Vector(n)
        | SizedBase::RowVector(n)
        | SizedBase::Simplex(n)
        | SizedBase::Ordered(n)
        | SizedBase::PositiveOrdered(n)
        | SizedBase::CholeskyFactorCorr(n)
        | SizedBase::CholeskyFactorCov(n)
        | SizedBase::CovMatrix(n)
        | SizedBase::CorrMatrix(n) => out.push(n),
        SizedBase::Matrix(m, n) => {
            out.push(m);
            out.push(n);
        }
    }
    out
}

/// Types with a built-in constraint (`simplex`, `ordered`, …).
fn is_structured(b: &SizedBase) -> bool {
    !matches!(
        b,
        SizedBase::Int
            | SizedBase::Real
            | SizedBase::Vector(_)
            | SizedBase::RowVector(_)
            | SizedBase::Matrix(_, _)
    )
}

/// The checker's state during one pass.
pub(super) struct Checker<'p> {
    program: &'p Program,
    errors: Vec<SemanticError>,
    warnings: Vec<Warning>,
    scopes: Scopes,
    functions: HashMap<String, UserFn>,
    /// Every block-level declaration of the program (name → span), to tell "used before its
    /// declaration" from "undeclared".
    all_decls: HashMap<String, (Span, Block)>,
    block: Block,
    loop_depth: usize,
    func: Option<FnCtx>,
    /// Parameters in declaration order (name, declaration span).
    params: Vec<(String, Span)>,
    /// Parameters that appear on the left of `~` or in a `target +=`.
    has_prior: HashSet<String>,
    /// `@missing` data variables (name, declaration span): each must be the variate of a
    /// distribution statement.
    imputed: Vec<(String, Span)>,
    /// Names referenced in the `transformed parameters` and `model` blocks (the statements
    /// that make up the log density).
    used_in_density: HashSet<String>,
    /// For transformed parameters and locals: the parameters their assigned values depend on.
    deps: HashMap<String, BTreeSet<String>>,
    /// Transformed parameters and locals assigned a non-linear function of parameters
    /// ([`Checker::nonlinear`]), with the span of the first such value: `ls ~ …` after
    /// `real ls = log(s);` needs the Jacobian of `log` as much as `log(s) ~ …` does.
    nonlinear_defs: HashMap<String, Span>,
    /// The values of the `int` scalars of `data` and `transformed data` when the program is
    /// checked with its data ([`crate::semantics::check_with_data`]); empty otherwise.
    size_ints: HashMap<String, i64>,
    /// Names that are the target of an assignment anywhere in the program (any scope).
    /// Names assigned anywhere in the program (any scope), each with the end of its last
    /// assignment statement in the source.
    assigned: HashMap<String, usize>,
    /// While the sizes of a declaration outside functions and loops are evaluated: where the
    /// declaration starts. A transformed data `int` none of whose assignments come after it has
    /// its final value there (`int n = 0; for (…) n += 1; vector[n] v;`), known from the data
    /// pass that ran `transformed data` ([`Checker::size_value`]).
    size_at: Option<usize>,
    /// Scalars declared with a literal initialiser (`real s = 0;`) and never assigned: name →
    /// (the name's span in that declaration, the initialiser's span, its value). A use is
    /// that constant only when the declaration in scope is this one (names may be reused in
    /// sibling scopes); see [`Checker::constant_of`].
    constants: HashMap<String, (Span, Span, f64)>,
    /// `int` scalars declared outside functions with an initialiser of known value
    /// ([`Checker::size_value`]) and never assigned: name → (the name's span in that
    /// declaration, the value). Their value is known wherever that declaration is in scope.
    derived_ints: HashMap<String, (Span, i64)>,
    /// User-defined functions whose every `return` has the same sizes, all known without the
    /// arguments (`vector[3] r; …; return r;`): name → those sizes, outermost first.
    fn_shapes: HashMap<String, Vec<i64>>,
    /// How many enclosing bodies (`if`/`else` branches, loops, `?:` branches, right operands
    /// of `&&` `||`) are not known to run whenever the code around them does. Known-size
    /// errors are not reported there ([`guards`]): the body may be guarded by a condition on
    /// those sizes (`if (N_s > 0) y ~ normal(mu, s);` with `vector[N_s] s`, N_s = 0), so that
    /// it never runs with them.
    guard_depth: usize,
}

impl<'p> Checker<'p> {
    pub(super) fn new(program: &'p Program) -> Self {
        Checker {
            program,
            errors: Vec::new(),
            warnings: Vec::new(),
            scopes: Scopes::new(),
            functions: HashMap::new(),
            all_decls: HashMap::new(),
            block: Block::Functions,
            loop_depth: 0,
            func: None,
            params: Vec::new(),
            has_prior: HashSet::new(),
            imputed: Vec::new(),
            used_in_density: HashSet::new(),
            deps: HashMap::new(),
            nonlinear_defs: HashMap::new(),
            size_ints: HashMap::new(),
            assigned: HashMap::new(),
            size_at: None,
            constants: HashMap::new(),
            derived_ints: HashMap::new(),
            fn_shapes: HashMap::new(),
            guard_depth: 0,
        }
    }

    /// The same checker, knowing the values of `int` data and transformed data (name → value)
    /// for the sizes they declare ([`sizes`]).
    pub(super) fn with_size_ints(mut self, ints: HashMap<String, i64>) -> Self {
        self.size_ints = ints;
        self
    }

    pub(super) fn run(mut self) -> CheckOutput {
        self.check_program();
        CheckOutput {
            errors: self.errors,
            warnings: self.warnings,
        }
    }

    /// Checks the program, then `expr` in the scope of the end of `generated quantities`
    /// (every block-level variable visible, `_rng` allowed, `target` not). Returns the
    /// expression's type (`None` after an error) and the errors found in the expression only.
    pub(super) fn run_expression(mut self, expr: &Expr) -> (Option<Type>, Vec<SemanticError>) {
        self.check_program();
        let before = self.errors.len();
        self.block = Block::GeneratedQuantities;
        let t = self.expr(expr);
        (t, self.errors.split_off(before))
    }

    fn check_program(&mut self) {
        let p = self.program;
        self.assigned = assigned_names(p);
        self.collect_declarations();
        self.register_functions();
        for f in &p.functions {
            self.check_function(f);
        }
        self.block = Block::Data;
        for d in &p.data {
            self.decl(d, true);
        }
        self.block = Block::TransformedData;
        for s in &p.transformed_data {
            self.stmt(s, true);
        }
        self.block = Block::Parameters;
        for d in &p.parameters {
            self.decl(d, true);
        }
        self.block = Block::TransformedParameters;
        for s in &p.transformed_parameters {
            self.stmt(s, true);
        }
        self.block = Block::Model;
        self.scopes.push();
        for s in &p.model {
            self.stmt(s, false);
        }
        self.scopes.pop();
        self.block = Block::GeneratedQuantities;
        for s in &p.generated_quantities {
            self.stmt(s, true);
        }
        let no_prior: Vec<Warning> = self
            .params
            .iter()
            .filter(|(n, _)| !self.has_prior.contains(n))
            .map(|(n, s)| Warning::NoPrior {
                name: n.clone(),
                span: *s,
            })
            .collect();
        self.warnings.extend(no_prior);
        // A parameter with an improper flat prior (unbounded on a side) that the log density
        // does not depend on: its posterior is that flat prior (issue 13, item 2). Only once
        // the program has a model block: the REPL checks blocks as they are typed, and a
        // parameters block on its own is a model being written (a fit then reports the flat
        // direction at run time).
        let has_density = p.block_spans.model.is_some() || !p.transformed_parameters.is_empty();
        let unused: Vec<SemanticError> = if !has_density {
            Vec::new()
        } else {
            self.params
                .iter()
                .filter(|(n, _)| !self.used_in_density.contains(n))
                .map(|(n, s)| SemanticError::UnusedParameter {
                    name: n.clone(),
                    span: *s,
                })
                .collect()
        };
        self.errors.extend(unused);
        let unmodelled: Vec<SemanticError> = self
            .imputed
            .iter()
            .filter(|(n, _)| has_density && !self.has_prior.contains(n))
            .map(|(n, s)| SemanticError::ImputedWithoutDistribution {
                name: n.clone(),
                span: *s,
            })
            .collect();
        self.errors.extend(unmodelled);
    }

    /// Records `e`, unless it is a known-size error in code not known to run
    /// ([`guards`]).
    fn err(&mut self, e: SemanticError) {
        if self.guard_depth > 0 && guards::is_known_size_error(&e) {
            return;
        }
        self.errors.push(e);
    }

    // ----- declarations -------------------------------------------------------------------
}

/// The bounds a parameter must be declared with so that it stays inside `support`, when its
/// declaration does not already ensure that (`None` also for bounds that are not constants).
fn bounds_needed(support: Support, i: &VarInfo) -> Option<&'static str> {
    let lower_ok = match &i.lower {
        None => false,
        Some(e) => pretty::constant_value(e).is_none_or(|v| v >= 0.0),
    };
    let upper_ok = match &i.upper {
        None => false,
        Some(e) => pretty::constant_value(e).is_none_or(|v| v <= 1.0),
    };
    match support {
        Support::Positive | Support::NonNegative if !lower_ok => Some("<lower=0>"),
        Support::UnitInterval if !lower_ok || !upper_ok => Some("<lower=0, upper=1>"),
        _ => None,
    }
}

/// A declaration as source text, e.g. `array[J] vector[K] name`, from a type and its sizes
/// (array sizes first, as in [`VarInfo::sizes`]).
fn sized_decl(ty: Type, sizes: &[String], name: &str) -> String {
    let split = ty.dims.min(sizes.len());
    let (array, inner) = sizes.split_at(split);
    let mut out = String::new();
    if !array.is_empty() {
        out.push_str(&format!("array[{}] ", array.join(", ")));
    }
    out.push_str(ty.base.keyword());
    if !inner.is_empty() {
        out.push_str(&format!("[{}]", inner.join(", ")));
    }
    format!("{out} {name}")
}

/// "Scale parameter" → "scale parameter", for use inside a sentence.
fn lowercase_first(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// `f(a | b, c)`: a density call written with the conditioning bar.
fn conditional_form(fname: &str, args: &[Expr]) -> String {
    let first = args.first().map(pretty::expr).unwrap_or_default();
    let rest = args
        .iter()
        .skip(1)
        .map(pretty::expr)
        .collect::<Vec<_>>()
        .join(", ");
    format!("{fname}({first} | {rest})")
}

/// "3 arguments (the variate, then Location parameter, Scale parameter)" — the expected
/// arguments of a distribution function (`_rng` functions take no variate).
/// Every name that is the target of an assignment (`x = …`, `x[i] += …`) anywhere in `p`,
/// functions included, with the end of its last assignment statement in the source.
fn assigned_names(p: &Program) -> HashMap<String, usize> {
    fn walk(s: &Stmt, out: &mut HashMap<String, usize>) {
        match &s.kind {
            StmtKind::Assign { lhs, .. } => {
                let end = out.entry(lhs.name.name.clone()).or_insert(s.span.end);
                *end = (*end).max(s.span.end);
            }
            StmtKind::For { body, .. }
            | StmtKind::ForEach { body, .. }
            | StmtKind::While { body, .. } => walk(body, out),
            StmtKind::If {
                then, otherwise, ..
            } => {
                walk(then, out);
                if let Some(o) = otherwise {
                    walk(o, out);
                }
            }
            StmtKind::Block(stmts) => stmts.iter().for_each(|s| walk(s, out)),
            _ => {}
        }
    }
    let mut out = HashMap::new();
    let bodies = p.functions.iter().filter_map(|f| f.body.as_ref());
    let blocks = [
        &p.transformed_data,
        &p.transformed_parameters,
        &p.model,
        &p.generated_quantities,
    ];
    for s in bodies.chain(blocks.into_iter().flatten()) {
        walk(s, &mut out);
    }
    out
}

pub(super) fn expected_arity(is_rng: bool, n: usize, params: &str) -> String {
    if is_rng {
        format!("{} ({params})", plural(n, "argument"))
    } else {
        format!("{} (the variate, then {params})", plural(n, "argument"))
    }
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

fn param_names(sig: &FamilySig) -> String {
    sig.params
        .iter()
        .map(|p| lowercase_first(p.name))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `<lower=0, upper=1>` as written.
fn bounds_text(lower: Option<&Expr>, upper: Option<&Expr>) -> String {
    let mut parts = Vec::new();
    if let Some(l) = lower {
        parts.push(format!("lower={}", pretty::expr(l)));
    }
    if let Some(u) = upper {
        parts.push(format!("upper={}", pretty::expr(u)));
    }
    format!("<{}>", parts.join(", "))
}

fn pretty_lvalue(lv: &LValue) -> String {
    let mut s = lv.name.name.clone();
    for group in &lv.indices {
        let idx = Expr {
            kind: ExprKind::Index {
                base: Box::new(Expr {
                    kind: ExprKind::Var(String::new()),
                    span: lv.span,
                }),
                indices: group.clone(),
            },
            span: lv.span,
        };
        s.push_str(&pretty::expr(&idx));
    }
    s
}

/// A `help:` note for the common case of a real value where an int is needed.
fn promotion_help(expected: Type, found: Type) -> Option<String> {
    if expected.base == Base::Int && found.base == Base::Real && expected.dims == found.dims {
        Some(
            "a `real` is never converted to `int` implicitly; round explicitly or use `real` \
             for the destination"
                .into(),
        )
    } else {
        None
    }
}

/// Functions that only rearrange or select elements of their arguments (index arguments aside),
/// so that a sampling statement on their result needs no Jacobian adjustment.
const RESHAPES: &[&str] = &[
    "to_vector",
    "to_row_vector",
    "to_matrix",
    "to_array_1d",
    "to_array_2d",
    "segment",
    "head",
    "tail",
    "append_row",
    "append_col",
    "block",
    "col",
    "row",
    "sub_col",
    "sub_row",
    "diagonal",
    "reverse",
    "transpose",
];
