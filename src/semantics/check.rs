//! The checker proper: one pass over the program in block order, inferring the type of every
//! expression and recording errors and warnings (stanc3 `Typechecker.ml` plays this role).

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

mod multivariate;

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
}

/// The outcome of checking a call.
#[derive(Clone, Copy, Debug, PartialEq)]
enum CallType {
    Value(Type),
    Void,
    /// An error was already reported.
    Error,
}

/// Suffixes of distribution functions, longest match first within each stem.
const DIST_SUFFIXES: &[&str] = &[
    "_lupdf", "_lupmf", "_lpdf", "_lpmf", "_lccdf", "_lcdf", "_rng",
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
    /// For transformed parameters and locals: the parameters their assigned values depend on.
    deps: HashMap<String, BTreeSet<String>>,
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
            deps: HashMap::new(),
        }
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
    }

    fn err(&mut self, e: SemanticError) {
        self.errors.push(e);
    }

    // ----- declarations -------------------------------------------------------------------

    fn collect_declarations(&mut self) {
        let p = self.program;
        let mut add = |d: &VarDecl, block: Block| {
            self.all_decls
                .entry(d.name.name.clone())
                .or_insert((d.name.span, block));
        };
        for d in &p.data {
            add(d, Block::Data);
        }
        for d in &p.parameters {
            add(d, Block::Parameters);
        }
        for (stmts, block) in [
            (&p.transformed_data, Block::TransformedData),
            (&p.transformed_parameters, Block::TransformedParameters),
            (&p.model, Block::Model),
            (&p.generated_quantities, Block::GeneratedQuantities),
        ] {
            for s in stmts {
                if let StmtKind::Decl(d) = &s.kind {
                    add(d, block);
                }
            }
        }
    }

    fn register_functions(&mut self) {
        for f in &self.program.functions {
            let sig = UserFn {
                params: f.params.iter().map(|p| Type::from_unsized(&p.ty)).collect(),
                data_only: f.params.iter().map(|p| p.data_only).collect(),
                ret: match &f.return_type {
                    ReturnType::Void => None,
                    ReturnType::Type(t) => Some(Type::from_unsized(t)),
                },
                span: f.name.span,
                defined: f.body.is_some(),
            };
            match self.functions.get(&f.name.name) {
                Some(prev) if prev.defined && sig.defined => {
                    let previous = prev.span;
                    self.err(SemanticError::FunctionRedefinition {
                        name: f.name.name.clone(),
                        span: f.name.span,
                        previous,
                    });
                }
                Some(prev) if prev.defined => {}
                _ => {
                    self.functions.insert(f.name.name.clone(), sig);
                }
            }
        }
    }

    fn check_function(&mut self, f: &FunctionDef) {
        let Some(body) = &f.body else { return };
        self.block = Block::Functions;
        let ret = match &f.return_type {
            ReturnType::Void => None,
            ReturnType::Type(t) => Some(Type::from_unsized(t)),
        };
        self.func = Some(FnCtx {
            name: f.name.name.clone(),
            ret,
        });
        self.scopes.push();
        for p in &f.params {
            if let Some(prev) = self.scopes.lookup(&p.name.name) {
                let previous = prev.decl_span;
                self.err(SemanticError::Redeclaration {
                    name: p.name.name.clone(),
                    span: p.name.span,
                    previous,
                });
                continue;
            }
            self.scopes.declare(
                &p.name.name,
                VarInfo {
                    ty: Type::from_unsized(&p.ty),
                    origin: Origin::FunctionArg {
                        data_only: p.data_only,
                    },
                    decl_span: p.name.span,
                    lower: None,
                    upper: None,
                    sizes: Vec::new(),
                    structured: false,
                },
            );
        }
        self.stmt(body, false);
        self.scopes.pop();
        if ret.is_some() && !always_returns(body) {
            self.err(SemanticError::MissingReturn {
                name: f.name.name.clone(),
                span: f.name.span,
            });
        }
        self.func = None;
    }

    /// Checks a declaration and adds it to the current scope. `top` is true for block-level
    /// declarations (constraints allowed, sizes must be data).
    fn decl(&mut self, d: &VarDecl, top: bool) {
        let name = &d.name.name;
        let origin = if top {
            self.block.origin()
        } else {
            Origin::Local
        };
        let base = Type::base_of_sized(&d.ty.base);
        let ty = Type::array(base, d.ty.array_dims.len());

        // Sizes: int, and data-only at block level.
        let mut sizes = Vec::new();
        for e in size_exprs(d) {
            sizes.push(pretty::expr(e));
            if let Some(t) = self.expr(e)
                && !t.is_int()
            {
                self.err(SemanticError::TypeMismatch {
                    what: format!("the size of `{name}`"),
                    expected: "`int`".into(),
                    found: t.to_string(),
                    span: e.span,
                    help: None,
                });
            }
            if top {
                self.require_data(e, |var, kind, span, decl_span| SemanticError::NonDataSize {
                    name: name.clone(),
                    var,
                    kind,
                    span,
                    decl_span,
                });
            }
        }

        // Constraints: block level only; bounds of the right type; data bounds are data.
        if !top && (!d.ty.constraint.is_empty() || is_structured(&d.ty.base)) {
            self.err(SemanticError::ConstraintOnLocal {
                name: name.clone(),
                span: d.ty.span,
            });
        }
        // Bounds of data may use only data, and bounds of parameters only data and earlier
        // parameters: both hold by scoping, since blocks are checked in order and a name is
        // visible only after its declaration.
        let c = &d.ty.constraint;
        for e in [&c.lower, &c.upper, &c.offset, &c.multiplier]
            .into_iter()
            .flatten()
        {
            if let Some(t) = self.expr(e) {
                let ok = if base == Base::Int {
                    t.is_int()
                } else {
                    t.is_scalar() || Type::scalar(base).accepts(t)
                };
                if !ok {
                    let expected = if base == Base::Int {
                        "`int`".to_string()
                    } else if base == Base::Real {
                        "`int` or `real`".to_string()
                    } else {
                        format!("`real` or `{}`", base.keyword())
                    };
                    self.err(SemanticError::TypeMismatch {
                        what: format!("a bound of `{name}`"),
                        expected,
                        found: t.to_string(),
                        span: e.span,
                        help: Some(format!(
                            "bounds of a `{}` are scalars or values of the same type",
                            base.keyword()
                        )),
                    });
                }
            }
        }

        if base == Base::Int && matches!(origin, Origin::Parameter | Origin::TransformedParameter) {
            self.err(SemanticError::DiscreteParameter {
                name: name.clone(),
                what: origin.describe().into(),
                span: d.ty.span,
            });
        }

        if let Some(init) = &d.init {
            if matches!(self.block, Block::Data | Block::Parameters) {
                self.err(SemanticError::InitialiserNotAllowed {
                    block: self.block.name().into(),
                    span: init.span,
                });
            } else {
                if let Some(t) = self.expr(init)
                    && !ty.accepts(t)
                {
                    self.err(SemanticError::TypeMismatch {
                        what: format!("the initial value of `{name}`"),
                        expected: format!("`{ty}`"),
                        found: t.to_string(),
                        span: init.span,
                        help: promotion_help(ty, t),
                    });
                }
                let deps = self.param_deps(init);
                self.deps.entry(name.clone()).or_default().extend(deps);
            }
        }

        if let Some(prev) = self.scopes.lookup(name) {
            let previous = prev.decl_span;
            self.err(SemanticError::Redeclaration {
                name: name.clone(),
                span: d.name.span,
                previous,
            });
            return;
        }
        // Discrete parameters were reported above; a missing prior would be noise on top. On a
        // bounded space the implicit flat prior is proper (uniform on an interval, Dirichlet(1)
        // on a simplex, LKJ(1) on correlation matrices), so no warning there either.
        let proper_flat = (d.ty.constraint.lower.is_some() && d.ty.constraint.upper.is_some())
            || matches!(
                d.ty.base,
                SizedBase::Simplex(_) | SizedBase::CholeskyFactorCorr(_) | SizedBase::CorrMatrix(_)
            );
        if origin == Origin::Parameter && base != Base::Int && !proper_flat {
            self.params.push((name.clone(), d.name.span));
        }
        self.scopes.declare(
            name,
            VarInfo {
                ty,
                origin,
                decl_span: d.name.span,
                lower: c.lower.clone(),
                upper: c.upper.clone(),
                sizes,
                structured: is_structured(&d.ty.base),
            },
        );
    }

    /// Reports (via `make`) the first variable in `e` that is not data; undeclared names were
    /// already reported by the type inference.
    fn require_data(
        &mut self,
        e: &Expr,
        make: impl Fn(String, String, Span, Span) -> SemanticError,
    ) {
        let mut vars = Vec::new();
        collect_vars(e, &mut vars);
        for (v, span) in vars {
            if let Some(info) = self.scopes.lookup(v)
                && !info.origin.is_data()
            {
                let err = make(
                    v.to_string(),
                    info.origin.describe().to_string(),
                    span,
                    info.decl_span,
                );
                self.err(err);
                return;
            }
        }
    }

    // ----- statements ---------------------------------------------------------------------

    fn stmt(&mut self, s: &Stmt, top: bool) {
        match &s.kind {
            StmtKind::Decl(d) => self.decl(d, top),
            StmtKind::Assign { lhs, op, rhs } => self.assign(lhs, *op, rhs),
            StmtKind::Tilde {
                lhs,
                dist,
                args,
                truncation,
            } => {
                self.require_target_allowed("~", s.span);
                self.tilde(lhs, dist, args, s.span);
                if let Some(t) = truncation {
                    for e in [&t.lower, &t.upper].into_iter().flatten() {
                        self.expect_scalar(e, "a truncation bound");
                    }
                    if let Some(sig) = registry::lookup(&dist.name)
                        && !has_log_cdf(sig.family)
                    {
                        self.err(SemanticError::NoLogCdf {
                            family: sig.name.into(),
                            what: "truncation `T[…]`".into(),
                            span: t.span,
                        });
                    }
                }
            }
            StmtKind::TargetPlus(e) => {
                self.require_target_allowed("target +=", s.span);
                if let Some(t) = self.expr(e)
                    && !matches!(t.base, Base::Int | Base::Real)
                    && !t.is_linear_algebra()
                {
                    self.err(SemanticError::TypeMismatch {
                        what: "the value added to `target`".into(),
                        expected: "`real` or a container of reals".into(),
                        found: t.to_string(),
                        span: e.span,
                        help: None,
                    });
                }
                self.mark_priors_in_target(e);
            }
            StmtKind::For { var, lo, hi, body } => {
                for (e, what) in [
                    (lo, "the lower bound of a `for` loop"),
                    (hi, "the upper bound of a `for` loop"),
                ] {
                    if let Some(t) = self.expr(e)
                        && !t.is_int()
                    {
                        self.err(SemanticError::TypeMismatch {
                            what: what.into(),
                            expected: "`int`".into(),
                            found: t.to_string(),
                            span: e.span,
                            help: None,
                        });
                    }
                }
                self.loop_body(var, Type::INT, body);
            }
            StmtKind::ForEach {
                var,
                collection,
                body,
            } => {
                let elem = match self.expr(collection) {
                    Some(t) if t.dims > 0 => t.element(),
                    Some(t) if t.is_linear_algebra() => Some(Type::REAL),
                    Some(t) => {
                        self.err(SemanticError::TypeMismatch {
                            what: "the collection of a `for` loop".into(),
                            expected: "an array, `vector`, `row_vector` or `matrix`".into(),
                            found: t.to_string(),
                            span: collection.span,
                            help: None,
                        });
                        None
                    }
                    None => None,
                };
                // An unknown element type still scopes the loop variable, as `real`.
                self.loop_body(var, elem.unwrap_or(Type::REAL), body);
            }
            StmtKind::While { cond, body } => {
                self.expect_scalar(cond, "the condition of `while`");
                self.loop_depth += 1;
                self.nested(body);
                self.loop_depth -= 1;
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                self.expect_scalar(cond, "the condition of `if`");
                self.nested(then);
                if let Some(o) = otherwise {
                    self.nested(o);
                }
            }
            StmtKind::Block(stmts) => {
                self.scopes.push();
                for s in stmts {
                    self.stmt(s, false);
                }
                self.scopes.pop();
            }
            StmtKind::Break | StmtKind::Continue => {
                if self.loop_depth == 0 {
                    let what = if s.kind == StmtKind::Break {
                        "break"
                    } else {
                        "continue"
                    };
                    self.err(SemanticError::OutsideLoop {
                        what: what.into(),
                        span: s.span,
                    });
                }
            }
            StmtKind::Return(value) => self.ret(value.as_ref(), s.span),
            StmtKind::Print(args) | StmtKind::Reject(args) => {
                for a in args {
                    if let PrintArg::Expr(e) = a {
                        self.expr(e);
                    }
                }
            }
            StmtKind::Expr(e) => match &e.kind {
                ExprKind::Call {
                    name,
                    args,
                    conditional,
                } => {
                    if let CallType::Value(_) = self.call(name, args, *conditional, e.span) {
                        self.err(SemanticError::NonVoidStatement {
                            name: name.name.clone(),
                            span: e.span,
                        });
                    }
                }
                _ => {
                    self.expr(e);
                    self.err(SemanticError::NonVoidStatement {
                        name: pretty::expr(e),
                        span: e.span,
                    });
                }
            },
        }
    }

    /// A statement in its own scope (the body of `if`/`while`/`for`).
    fn nested(&mut self, s: &Stmt) {
        self.scopes.push();
        self.stmt(s, false);
        self.scopes.pop();
    }

    fn loop_body(&mut self, var: &crate::syntax::ast::Ident, ty: Type, body: &Stmt) {
        self.scopes.push();
        if let Some(prev) = self.scopes.lookup(&var.name) {
            let previous = prev.decl_span;
            self.err(SemanticError::Redeclaration {
                name: var.name.clone(),
                span: var.span,
                previous,
            });
        } else {
            self.scopes.declare(
                &var.name,
                VarInfo {
                    ty,
                    origin: Origin::LoopVar,
                    decl_span: var.span,
                    lower: None,
                    upper: None,
                    sizes: Vec::new(),
                    structured: false,
                },
            );
        }
        self.loop_depth += 1;
        self.stmt(body, false);
        self.loop_depth -= 1;
        self.scopes.pop();
    }

    fn expect_scalar(&mut self, e: &Expr, what: &str) {
        if let Some(t) = self.expr(e)
            && !t.is_scalar()
        {
            self.err(SemanticError::TypeMismatch {
                what: what.into(),
                expected: "`int` or `real`".into(),
                found: t.to_string(),
                span: e.span,
                help: None,
            });
        }
    }

    fn target_allowed(&self) -> bool {
        match &self.func {
            Some(f) => f.name.ends_with("_lp"),
            None => self.block == Block::Model,
        }
    }

    fn require_target_allowed(&mut self, what: &str, span: Span) {
        if !self.target_allowed() {
            self.err(SemanticError::TargetOutsideModel {
                what: what.into(),
                span,
            });
        }
    }

    fn ret(&mut self, value: Option<&Expr>, span: Span) {
        let Some(f) = self.func.clone() else {
            self.err(SemanticError::BadReturn {
                message: "`return` is only allowed inside a function".into(),
                span,
            });
            return;
        };
        match (value, f.ret) {
            (None, None) => {}
            (Some(e), None) => {
                self.expr(e);
                self.err(SemanticError::BadReturn {
                    message: format!("`{}` returns `void` and cannot return a value", f.name),
                    span,
                });
            }
            (None, Some(t)) => self.err(SemanticError::BadReturn {
                message: format!("`{}` must return a value of type `{t}`", f.name),
                span,
            }),
            (Some(e), Some(t)) => {
                if let Some(found) = self.expr(e)
                    && !t.accepts(found)
                {
                    self.err(SemanticError::TypeMismatch {
                        what: format!("the return value of `{}`", f.name),
                        expected: format!("`{t}`"),
                        found: found.to_string(),
                        span: e.span,
                        help: promotion_help(t, found),
                    });
                }
            }
        }
    }

    fn assign(&mut self, lhs: &LValue, op: AssignOp, rhs: &Expr) {
        let rhs_ty = self.expr(rhs);
        let name = &lhs.name.name;
        let Some(info) = self.scopes.lookup(name).cloned() else {
            self.undeclared(name, lhs.name.span);
            return;
        };
        let allowed = match info.origin {
            Origin::Data | Origin::Parameter | Origin::LoopVar | Origin::FunctionArg { .. } => {
                false
            }
            Origin::TransformedData => self.block == Block::TransformedData && self.func.is_none(),
            Origin::TransformedParameter => {
                self.block == Block::TransformedParameters && self.func.is_none()
            }
            Origin::GeneratedQuantity => {
                self.block == Block::GeneratedQuantities && self.func.is_none()
            }
            Origin::Local => true,
        };
        if !allowed {
            let help = match info.origin {
                Origin::Data => format!(
                    "data is read-only; declare a copy in `transformed data`, e.g. `{} = {name};`, and assign to that",
                    sized_decl(info.ty, &info.sizes, &format!("{name}_2"))
                ),
                Origin::Parameter => "parameters are sampled, not assigned; compute derived values in `transformed parameters`".into(),
                Origin::LoopVar => "loop variables are read-only; copy the value into a local variable".into(),
                Origin::FunctionArg { .. } => "function arguments are read-only; copy the value into a local variable".into(),
                Origin::TransformedData => format!("`{name}` can only be assigned in the `transformed data` block"),
                Origin::TransformedParameter => format!("`{name}` can only be assigned in the `transformed parameters` block"),
                Origin::GeneratedQuantity | Origin::Local => format!("`{name}` can only be assigned in the `generated quantities` block"),
            };
            // Without indexes the name's own span is exact (the l-value's may run on over the
            // whitespace before `=`).
            let span = if lhs.indices.is_empty() {
                lhs.name.span
            } else {
                lhs.span
            };
            self.err(SemanticError::ReadOnlyAssignment {
                name: name.clone(),
                kind: info.origin.describe().into(),
                span,
                decl_span: info.decl_span,
                help,
            });
        }
        let mut ty = Some(info.ty);
        for group in &lhs.indices {
            ty = match ty {
                Some(t) => self.apply_indices(t, group, lhs.span),
                None => {
                    for ix in group {
                        self.index_kind(ix);
                    }
                    None
                }
            };
        }
        let (Some(lt), Some(rt)) = (ty, rhs_ty) else {
            return;
        };
        let bin = match op {
            AssignOp::Assign => None,
            AssignOp::AddAssign => Some(BinOp::Add),
            AssignOp::SubAssign => Some(BinOp::Sub),
            AssignOp::MulAssign => Some(BinOp::Mul),
            AssignOp::DivAssign => Some(BinOp::Div),
            AssignOp::EltMulAssign => Some(BinOp::EltMul),
            AssignOp::EltDivAssign => Some(BinOp::EltDiv),
        };
        let result = match bin {
            None => Some(rt),
            Some(b) => match operators::binary(b, lt, rt) {
                Ok(t) => Some(t),
                Err(hint) => {
                    self.err(SemanticError::OperatorMismatch {
                        message: operators::describe_mismatch(b, lt, rt),
                        span: lhs.span.to(rhs.span),
                        hint: hint.into(),
                    });
                    None
                }
            },
        };
        if let Some(r) = result
            && !lt.accepts(r)
        {
            self.err(SemanticError::TypeMismatch {
                what: format!("the value assigned to `{}`", pretty_lvalue(lhs)),
                expected: format!("`{lt}`"),
                found: r.to_string(),
                span: rhs.span,
                help: promotion_help(lt, r),
            });
        }
        let deps = self.param_deps(rhs);
        self.deps.entry(name.clone()).or_default().extend(deps);
    }

    // ----- `~` ----------------------------------------------------------------------------

    fn tilde(&mut self, lhs: &Expr, dist: &crate::syntax::ast::Ident, args: &[Expr], span: Span) {
        let lhs_ty = self.expr(lhs);
        let arg_tys: Vec<Option<Type>> = args.iter().map(|a| self.expr(a)).collect();
        let deps = self.param_deps(lhs);
        self.has_prior.extend(deps);

        if dist.name == STD_NORMAL {
            if !args.is_empty() {
                self.err(SemanticError::WrongArity {
                    function: STD_NORMAL.into(),
                    span: dist.span,
                    expected: "no arguments after `~` (it is `normal(0, 1)`)".into(),
                    found: args.len(),
                });
            }
            if let (Some(t), Some(sig)) = (lhs_ty, registry::lookup("normal")) {
                self.check_variate(sig, lhs, t);
            }
            self.check_nonlinear_lhs(lhs);
            return;
        }

        if let Some(sig) = multivariate_registry::lookup(&dist.name) {
            self.mv_tilde(sig, lhs, lhs_ty, args, &arg_tys, dist.span);
            return;
        }
        let Some(sig) = registry::lookup(&dist.name) else {
            // A user-defined distribution `foo_lpdf` / `foo_lpmf`.
            for suffix in ["_lpdf", "_lpmf"] {
                let fname = format!("{}{suffix}", dist.name);
                if let Some(f) = self.functions.get(&fname).cloned() {
                    let mut all = vec![lhs_ty];
                    all.extend(arg_tys.iter().copied());
                    let all_exprs: Vec<&Expr> = std::iter::once(lhs).chain(args).collect();
                    self.check_user_args(&fname, &f, &all, &all_exprs, span);
                    return;
                }
            }
            let stem = split_suffix(&dist.name).map_or(dist.name.as_str(), |(s, _)| s);
            let candidates = self.distribution_names();
            let suggestion = if registry::lookup(stem).is_some() {
                Some(stem.to_string())
            } else {
                best_match(&dist.name, candidates.iter().map(String::as_str))
            };
            self.err(SemanticError::UnknownDistribution {
                name: dist.name.clone(),
                span: dist.span,
                suggestion,
            });
            return;
        };

        if args.len() != sig.params.len() {
            self.err(SemanticError::WrongArity {
                function: sig.name.into(),
                span: dist.span,
                expected: format!(
                    "{} after `~` ({})",
                    plural(sig.params.len(), "argument"),
                    param_names(sig)
                ),
                found: args.len(),
            });
        } else {
            self.check_dist_params(sig, sig.name, args, &arg_tys, 1);
        }

        if let Some(t) = lhs_ty {
            self.check_variate(sig, lhs, t);
        }
        self.check_nonlinear_lhs(lhs);
        if sig.name == "uniform" && args.len() == 2 {
            self.check_uniform_bounds(lhs, &args[0], &args[1], span);
        }
    }

    /// The variate's type against the family's support, and data bounds against the support.
    fn check_variate(&mut self, sig: &FamilySig, lhs: &Expr, t: Type) {
        let info = root_var(lhs).and_then(|n| self.scopes.lookup(n).cloned().map(|i| (n, i)));
        if sig.discrete || is_discrete_support(sig.variate) {
            if !t.is_ints() {
                let (name, declared, decl_span, suggested_decl) = match &info {
                    // Parameters cannot be integers; the fix there is another family.
                    Some((n, i)) if !i.origin.is_data() => {
                        (n.to_string(), i.ty.to_string(), Some(i.decl_span), None)
                    }
                    Some((n, i)) => {
                        let decl = if i.sizes.is_empty() {
                            format!("int {n}")
                        } else {
                            format!("array[{}] int {n}", i.sizes.join(", "))
                        };
                        (
                            n.to_string(),
                            i.ty.to_string(),
                            Some(i.decl_span),
                            Some(decl),
                        )
                    }
                    None => (pretty::expr(lhs), t.to_string(), None, None),
                };
                self.err(SemanticError::DiscreteFamilyOnReal {
                    name,
                    declared,
                    family: sig.name.into(),
                    values: support_words(sig.variate).into(),
                    span: lhs.span,
                    decl_span,
                    suggested_decl,
                });
                return;
            }
        } else if !t.is_reals() {
            self.err(SemanticError::TypeMismatch {
                what: format!("the left side of `~ {}`", sig.name),
                expected: REALS.into(),
                found: t.to_string(),
                span: lhs.span,
                help: None,
            });
            return;
        }
        if let Some((name, i)) = &info
            && matches!(i.origin, Origin::Data | Origin::TransformedData)
        {
            let lo = i.lower.as_ref().and_then(pretty::constant_value);
            let hi = i.upper.as_ref().and_then(pretty::constant_value);
            if (lo.is_some() || hi.is_some()) && contradicts(sig.variate, lo, hi) {
                self.err(SemanticError::SupportContradiction {
                    name: name.to_string(),
                    family: sig.name.into(),
                    bound: bounds_text(i.lower.as_ref(), i.upper.as_ref()),
                    support: support_words(sig.variate).into(),
                    span: lhs.span,
                    decl_span: i.decl_span,
                });
            }
        } else if let Some((name, i)) = &info
            && i.origin == Origin::Parameter
            && !i.structured
        {
            self.check_parameter_support(sig, name, i, lhs.span);
        }
    }

    /// Warns when a parameter's declared bounds let it leave the support of its family (stanc3
    /// pedantic: "a parameter with a positive-support distribution has no lower bound"). Bounds
    /// that are not constants are given the benefit of the doubt.
    fn check_parameter_support(&mut self, sig: &FamilySig, name: &str, i: &VarInfo, span: Span) {
        let Some(needed) = bounds_needed(sig.variate, i) else {
            return;
        };
        self.warnings.push(Warning::ParameterOutsideSupport {
            name: name.into(),
            family: sig.name.into(),
            support: support_words(sig.variate).into(),
            needed: needed.into(),
            span,
            decl_span: i.decl_span,
        });
    }

    /// Types of a family's parameters: `ints` for discrete supports, `reals` otherwise.
    /// `first_arg` is the 1-based position of `params[0]` in the call, for messages.
    fn check_dist_params(
        &mut self,
        sig: &FamilySig,
        fname: &str,
        args: &[Expr],
        tys: &[Option<Type>],
        first_arg: usize,
    ) {
        for (k, ((p, a), t)) in sig.params.iter().zip(args).zip(tys).enumerate() {
            let Some(t) = t else { continue };
            let (ok, expected) = if is_discrete_support(p.support) {
                (t.is_ints(), INTS)
            } else {
                (t.is_reals(), REALS)
            };
            if !ok {
                self.err(SemanticError::TypeMismatch {
                    what: format!("argument {} of `{fname}` ({})", k + first_arg, p.name),
                    expected: expected.into(),
                    found: t.to_string(),
                    span: a.span,
                    help: None,
                });
                continue;
            }
            // A bare parameter as, say, a scale: its bounds should enforce the support.
            if let ExprKind::Var(name) = &a.kind
                && let Some(info) = self.scopes.lookup(name)
                && info.origin == Origin::Parameter
                && !info.structured
                && let Some(needed) = bounds_needed(p.support, info)
            {
                let w = Warning::ArgumentOutsideSupport {
                    name: name.clone(),
                    role: lowercase_first(p.name),
                    function: fname.into(),
                    support: support_words(p.support).into(),
                    needed: needed.into(),
                    span: a.span,
                    decl_span: info.decl_span,
                };
                self.warnings.push(w);
            }
        }
    }

    fn check_nonlinear_lhs(&mut self, lhs: &Expr) {
        if root_var(lhs).is_some() || !self.depends_on_parameters(lhs) {
            return;
        }
        if self.nonlinear(lhs) {
            self.warnings.push(Warning::NonLinearLhs { span: lhs.span });
        }
    }

    /// Whether `e` is a non-linear function of parameter-dependent values (best effort:
    /// reshapes and selections ([`RESHAPES`]) are transparent;
    /// any other function call or product of two parameter-dependent factors counts).
    fn nonlinear(&self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::IntLit(_) | ExprKind::RealLit(_) | ExprKind::Var(_) => false,
            // Reshaping and selecting elements, like indexing, changes no values: a density on
            // the result needs no Jacobian adjustment.
            ExprKind::Call { name, args, .. } if RESHAPES.contains(&name.name.as_str()) => {
                args.iter().any(|a| self.nonlinear(a))
            }
            ExprKind::Call { args, .. } => args.iter().any(|a| self.depends_on_parameters(a)),
            ExprKind::Binary { op, lhs, rhs } => {
                let (l, r) = (
                    self.depends_on_parameters(lhs),
                    self.depends_on_parameters(rhs),
                );
                match op {
                    BinOp::Add | BinOp::Sub => self.nonlinear(lhs) || self.nonlinear(rhs),
                    BinOp::Mul | BinOp::EltMul => {
                        (l && r) || self.nonlinear(lhs) || self.nonlinear(rhs)
                    }
                    BinOp::Div | BinOp::EltDiv => r || self.nonlinear(lhs),
                    _ => l || r,
                }
            }
            ExprKind::Unary { operand, .. } | ExprKind::Transpose(operand) => {
                self.nonlinear(operand)
            }
            ExprKind::Index { base, .. } => self.nonlinear(base),
            ExprKind::Ternary {
                then, otherwise, ..
            } => self.nonlinear(then) || self.nonlinear(otherwise),
            ExprKind::RowVectorLit(items) | ExprKind::ArrayLit(items) => {
                items.iter().any(|i| self.nonlinear(i))
            }
        }
    }

    fn check_uniform_bounds(&mut self, lhs: &Expr, a: &Expr, b: &Expr, span: Span) {
        let ExprKind::Var(name) = &lhs.kind else {
            return;
        };
        let Some(info) = self.scopes.lookup(name).cloned() else {
            return;
        };
        if info.origin != Origin::Parameter {
            return;
        }
        let same = |declared: Option<&Expr>, given: &Expr| match declared {
            None => false,
            Some(d) => match (pretty::constant_value(d), pretty::constant_value(given)) {
                (Some(x), Some(y)) => x == y,
                _ => pretty::expr(d) == pretty::expr(given),
            },
        };
        if same(info.lower.as_ref(), a) && same(info.upper.as_ref(), b) {
            return;
        }
        let declared = if info.lower.is_none() && info.upper.is_none() {
            "without bounds".to_string()
        } else {
            format!(
                "with `{}`",
                bounds_text(info.lower.as_ref(), info.upper.as_ref())
            )
        };
        let a_text = pretty::expr(a);
        let b_text = pretty::expr(b);
        let suggested_decl = if info.ty == Type::REAL {
            format!("real<lower={a_text}, upper={b_text}> {name}")
        } else {
            format!("{name}` with `<lower={a_text}, upper={b_text}>")
        };
        self.warnings.push(Warning::UniformBoundsMismatch {
            suggested_decl,
            name: name.clone(),
            a: pretty::expr(a),
            b: pretty::expr(b),
            declared,
            span,
            decl_span: info.decl_span,
        });
    }

    // ----- parameter dependence and priors -------------------------------------------------

    /// The parameters `e` depends on, directly or through transformed parameters and locals.
    fn param_deps(&self, e: &Expr) -> BTreeSet<String> {
        let mut vars = Vec::new();
        collect_vars(e, &mut vars);
        let mut out = BTreeSet::new();
        for (v, _) in vars {
            match self.scopes.lookup(v).map(|i| i.origin) {
                Some(Origin::Parameter) => {
                    out.insert(v.to_string());
                }
                Some(_) => {
                    if let Some(d) = self.deps.get(v) {
                        out.extend(d.iter().cloned());
                    }
                }
                None => {}
            }
        }
        out
    }

    /// Whether `e` depends on a parameter (or on a non-`data` function argument).
    fn depends_on_parameters(&self, e: &Expr) -> bool {
        let mut vars = Vec::new();
        collect_vars(e, &mut vars);
        vars.iter()
            .any(|(v, _)| match self.scopes.lookup(v).map(|i| i.origin) {
                Some(Origin::Parameter | Origin::TransformedParameter) => true,
                Some(Origin::FunctionArg { data_only }) => !data_only,
                Some(_) => self.deps.get(*v).is_some_and(|d| !d.is_empty()),
                None => false,
            })
    }

    /// In `target += e`: parameters in the variate of a distribution call, and parameters
    /// outside any distribution call, count as having a prior.
    fn mark_priors_in_target(&mut self, e: &Expr) {
        match &e.kind {
            ExprKind::Call { name, args, .. }
                if split_suffix(&name.name).is_some_and(|(_, s)| s != "_rng") =>
            {
                if let Some(first) = args.first() {
                    let d = self.param_deps(first);
                    self.has_prior.extend(d);
                }
            }
            ExprKind::Call { args, .. }
            | ExprKind::RowVectorLit(args)
            | ExprKind::ArrayLit(args) => {
                for a in args {
                    self.mark_priors_in_target(a);
                }
            }
            ExprKind::Binary { lhs, rhs, .. } => {
                self.mark_priors_in_target(lhs);
                self.mark_priors_in_target(rhs);
            }
            ExprKind::Unary { operand, .. } | ExprKind::Transpose(operand) => {
                self.mark_priors_in_target(operand)
            }
            ExprKind::Ternary {
                cond,
                then,
                otherwise,
            } => {
                self.mark_priors_in_target(cond);
                self.mark_priors_in_target(then);
                self.mark_priors_in_target(otherwise);
            }
            ExprKind::Var(_) | ExprKind::Index { .. } => {
                let d = self.param_deps(e);
                self.has_prior.extend(d);
            }
            ExprKind::IntLit(_) | ExprKind::RealLit(_) => {}
        }
    }

    // ----- expressions ---------------------------------------------------------------------

    fn undeclared(&mut self, name: &str, span: Span) {
        // Function bodies never see block-level variables, so "declared later" would mislead.
        if let Some(&(decl, block)) = self.all_decls.get(name)
            && self.func.is_none()
            && decl.start > span.start
            && decl.file == span.file
        {
            let err = if block == self.block {
                SemanticError::UsedBeforeDeclaration {
                    name: name.into(),
                    span,
                    decl_span: decl,
                }
            } else {
                SemanticError::DeclaredInLaterBlock {
                    name: name.into(),
                    block: block.name().into(),
                    here: self.block.name().into(),
                    span,
                    decl_span: decl,
                }
            };
            self.err(err);
            return;
        }
        let suggestion = best_match(name, self.scopes.visible_names());
        self.err(SemanticError::UndeclaredVariable {
            name: name.into(),
            span,
            suggestion,
        });
    }

    /// The type of `e`, or `None` after reporting an error in it.
    fn expr(&mut self, e: &Expr) -> Option<Type> {
        match &e.kind {
            ExprKind::IntLit(_) => Some(Type::INT),
            ExprKind::RealLit(_) => Some(Type::REAL),
            ExprKind::Var(name) => match self.scopes.lookup(name) {
                Some(info) => Some(info.ty),
                None => {
                    self.undeclared(name, e.span);
                    None
                }
            },
            ExprKind::Binary { op, lhs, rhs } => {
                let l = self.expr(lhs);
                let r = self.expr(rhs);
                let (l, r) = (l?, r?);
                match operators::binary(*op, l, r) {
                    Ok(t) => {
                        if *op == BinOp::Div && l.is_int() && r.is_int() {
                            let (a, b) = (pretty::expr(lhs), pretty::expr(rhs));
                            self.warnings.push(Warning::IntegerDivision {
                                expr: pretty::expr(e),
                                real_form: format!("{a} * 1.0 / {b}"),
                                int_form: format!("{a} %/% {b}"),
                                span: e.span,
                            });
                        }
                        Some(t)
                    }
                    Err(hint) => {
                        self.err(SemanticError::OperatorMismatch {
                            message: operators::describe_mismatch(*op, l, r),
                            span: e.span,
                            hint: hint.into(),
                        });
                        None
                    }
                }
            }
            ExprKind::Unary { op, operand } => {
                let t = self.expr(operand)?;
                match operators::unary(*op, t) {
                    Ok(t) => Some(t),
                    Err(hint) => {
                        let sym = match op {
                            UnOp::Neg => "-",
                            UnOp::Plus => "+",
                            UnOp::Not => "!",
                        };
                        self.err(SemanticError::OperatorMismatch {
                            message: format!("cannot apply `{sym}` to `{t}`"),
                            span: e.span,
                            hint: hint.into(),
                        });
                        None
                    }
                }
            }
            ExprKind::Call {
                name,
                args,
                conditional,
            } => match self.call(name, args, *conditional, e.span) {
                CallType::Value(t) => Some(t),
                CallType::Void => {
                    self.err(SemanticError::VoidInExpression {
                        name: name.name.clone(),
                        span: e.span,
                    });
                    None
                }
                CallType::Error => None,
            },
            ExprKind::Index { base, indices } => {
                let Some(t) = self.expr(base) else {
                    for ix in indices {
                        self.index_kind(ix);
                    }
                    return None;
                };
                self.apply_indices(t, indices, e.span)
            }
            ExprKind::Ternary {
                cond,
                then,
                otherwise,
            } => {
                self.expect_scalar(cond, "the condition of `?:`");
                let a = self.expr(then);
                let b = self.expr(otherwise);
                let (a, b) = (a?, b?);
                if a.accepts(b) {
                    Some(a)
                } else if b.accepts(a) {
                    Some(b)
                } else {
                    self.err(SemanticError::TypeMismatch {
                        what: "the second branch of `?:`".into(),
                        expected: format!("`{a}` like the first branch"),
                        found: b.to_string(),
                        span: otherwise.span,
                        help: None,
                    });
                    None
                }
            }
            ExprKind::RowVectorLit(items) => {
                let tys: Vec<Option<Type>> = items.iter().map(|i| self.expr(i)).collect();
                let tys: Vec<Type> = tys.into_iter().collect::<Option<_>>()?;
                if !tys.is_empty() && tys.iter().all(|t| t.is_scalar()) {
                    Some(Type::ROW_VECTOR)
                } else if !tys.is_empty() && tys.iter().all(|t| *t == Type::ROW_VECTOR) {
                    Some(Type::MATRIX)
                } else {
                    let found = tys
                        .iter()
                        .map(|t| t.to_string())
                        .collect::<Vec<_>>()
                        .join(", ");
                    self.err(SemanticError::TypeMismatch {
                        what: "the elements of `[…]`".into(),
                        expected: "all `int`/`real` (a row_vector) or all `row_vector` (a matrix)"
                            .into(),
                        found,
                        span: e.span,
                        help: None,
                    });
                    None
                }
            }
            ExprKind::ArrayLit(items) => {
                let tys: Vec<Option<Type>> = items.iter().map(|i| self.expr(i)).collect();
                let tys: Vec<Type> = tys.into_iter().collect::<Option<_>>()?;
                let mut acc = *tys.first()?;
                for (t, item) in tys.iter().zip(items) {
                    if acc.accepts(*t) {
                        continue;
                    } else if t.accepts(acc) {
                        acc = *t;
                    } else {
                        self.err(SemanticError::TypeMismatch {
                            what: "an element of `{…}`".into(),
                            expected: format!("`{acc}` like the first element"),
                            found: t.to_string(),
                            span: item.span,
                            help: None,
                        });
                        return None;
                    }
                }
                Some(Type::array(acc.base, acc.dims + 1))
            }
            ExprKind::Transpose(inner) => {
                let t = self.expr(inner)?;
                match operators::transpose(t) {
                    Some(r) => Some(r),
                    None => {
                        self.err(SemanticError::OperatorMismatch {
                            message: format!("cannot transpose `{t}` with `'`"),
                            span: e.span,
                            hint: "only `vector`, `row_vector` and `matrix` can be transposed"
                                .into(),
                        });
                        None
                    }
                }
            }
        }
    }

    /// How one index selects; reports a non-integer index (and treats it as a single index).
    fn index_kind(&mut self, ix: &Index) -> IndexKind {
        match ix {
            Index::Single(e) => match self.expr(e) {
                Some(t) if t.is_int() => IndexKind::Single,
                Some(t) if t == Type::array(Base::Int, 1) => IndexKind::Multi,
                Some(t) => {
                    self.err(SemanticError::NonIntIndex {
                        found: t.to_string(),
                        span: e.span,
                    });
                    IndexKind::Single
                }
                None => IndexKind::Single,
            },
            Index::Range(lo, hi) => {
                for e in [lo, hi].into_iter().flatten() {
                    if let Some(t) = self.expr(e)
                        && !t.is_int()
                    {
                        self.err(SemanticError::NonIntIndex {
                            found: t.to_string(),
                            span: e.span,
                        });
                    }
                }
                IndexKind::Multi
            }
            Index::All => IndexKind::Multi,
        }
    }

    fn apply_indices(&mut self, t: Type, indices: &[Index], span: Span) -> Option<Type> {
        let kinds: Vec<IndexKind> = indices.iter().map(|ix| self.index_kind(ix)).collect();
        match index_type(t, &kinds) {
            Some(r) => Some(r),
            None => {
                self.err(SemanticError::TooManyIndices {
                    ty: t.to_string(),
                    found: kinds.len(),
                    max: max_indices(t),
                    span,
                });
                None
            }
        }
    }

    // ----- calls --------------------------------------------------------------------------

    fn distribution_names(&self) -> Vec<String> {
        let mut names: Vec<String> = registry::FAMILIES
            .iter()
            .map(|f| f.name.to_string())
            .collect();
        names.push(STD_NORMAL.into());
        names.extend(
            multivariate_registry::MV_FAMILIES
                .iter()
                .map(|f| f.name.to_string()),
        );
        for f in self.functions.keys() {
            for suffix in ["_lpdf", "_lpmf"] {
                if let Some(stem) = f.strip_suffix(suffix) {
                    names.push(stem.to_string());
                }
            }
        }
        names.sort();
        names
    }

    fn function_names(&self) -> Vec<String> {
        let mut names: Vec<String> = builtins::BUILTINS
            .iter()
            .map(|b| b.name.to_string())
            .collect();
        let mut user: Vec<String> = self.functions.keys().cloned().collect();
        user.sort();
        names.extend(user);
        for s in ["_lpdf", "_lupdf", "_lcdf", "_lccdf", "_rng"] {
            names.push(format!("{STD_NORMAL}{s}"));
        }
        for f in registry::FAMILIES {
            let density = if f.discrete { "_lpmf" } else { "_lpdf" };
            let cdfs: &[&str] = if has_log_cdf(f.family) {
                &["_lcdf", "_lccdf"]
            } else {
                &[]
            };
            for s in [density, "_rng"].iter().chain(cdfs) {
                names.push(format!("{}{s}", f.name));
            }
        }
        names
    }

    /// The user-defined function `name`; `foo_lupdf`/`foo_lupmf` resolve to the definition of
    /// `foo_lpdf`/`foo_lpmf` (the unnormalised form of the same density).
    fn user_function(&self, name: &str) -> Option<UserFn> {
        if let Some(f) = self.functions.get(name) {
            return Some(f.clone());
        }
        let normalised = if let Some(stem) = name.strip_suffix("_lupdf") {
            format!("{stem}_lpdf")
        } else if let Some(stem) = name.strip_suffix("_lupmf") {
            format!("{stem}_lpmf")
        } else {
            return None;
        };
        self.functions.get(&normalised).cloned()
    }

    /// Functions ending in `_lp` may be called where `target` may change: the model block,
    /// transformed parameters, and other `_lp` functions.
    fn lp_call_allowed(&self) -> bool {
        self.target_allowed() || (self.func.is_none() && self.block == Block::TransformedParameters)
    }

    /// `_rng` calls: generated quantities and `_rng` functions. Stan also allows them in
    /// transformed data, but bayesc runs that block without a random stream, so `check`
    /// refuses them there rather than letting `fit` fail.
    fn rng_allowed(&self) -> bool {
        match &self.func {
            Some(f) => f.name.ends_with("_rng"),
            None => self.block == Block::GeneratedQuantities,
        }
    }

    fn call(
        &mut self,
        name: &crate::syntax::ast::Ident,
        args: &[Expr],
        conditional: bool,
        span: Span,
    ) -> CallType {
        let tys: Vec<Option<Type>> = args.iter().map(|a| self.expr(a)).collect();
        let fname = name.name.as_str();

        if fname.ends_with("_rng") && !self.rng_allowed() {
            let place = match &self.func {
                Some(f) => format!("function `{}` (its name does not end in `_rng`)", f.name),
                None if self.block == Block::TransformedData => {
                    "the `transformed data` block (not supported yet: bayesc evaluates it once, \
                     without a random stream)"
                        .to_string()
                }
                None => format!("the `{}` block", self.block.name()),
            };
            self.err(SemanticError::RngNotAllowed {
                name: fname.into(),
                span: name.span,
                place,
            });
        }

        if let Some(f) = self.user_function(fname) {
            let density = split_suffix(fname).is_some_and(|(_, s)| s != "_rng");
            if conditional && !density {
                self.err(SemanticError::ConditionalNotAllowed {
                    name: fname.into(),
                    span: name.span,
                });
            }
            if density && !conditional && !args.is_empty() {
                self.err(SemanticError::ConditionalRequired {
                    name: fname.into(),
                    span,
                    fixed: conditional_form(fname, args),
                });
            }
            if fname.ends_with("_lp") {
                if !self.lp_call_allowed() {
                    self.err(SemanticError::TargetOutsideModel {
                        what: format!("{fname}(…)"),
                        span,
                    });
                }
                // An `_lp` function adds to `target` (typically priors on its arguments).
                for a in args {
                    let d = self.param_deps(a);
                    self.has_prior.extend(d);
                }
            }
            let exprs: Vec<&Expr> = args.iter().collect();
            if !self.check_user_args(fname, &f, &tys, &exprs, span) {
                return CallType::Error;
            }
            return match f.ret {
                Some(t) => CallType::Value(t),
                None => CallType::Void,
            };
        }

        if let Some((STD_NORMAL, suffix)) = split_suffix(fname)
            && suffix != "_lpmf"
            && suffix != "_lupmf"
        {
            return self.std_normal_call(fname, suffix, args, &tys, span);
        }

        if let Some((stem, suffix)) = split_suffix(fname)
            && let Some(sig) = multivariate_registry::lookup(stem)
        {
            return self.mv_call(sig, fname, suffix, args, &tys, conditional, span);
        }

        if let Some((stem, suffix)) = split_suffix(fname)
            && let Some(sig) = registry::lookup(stem)
        {
            return self.distribution_call(sig, fname, suffix, args, &tys, conditional, span);
        }

        if let Some(b) = builtins::lookup(fname) {
            if conditional {
                self.err(SemanticError::ConditionalNotAllowed {
                    name: fname.into(),
                    span: name.span,
                });
            }
            if fname == "target" && !self.target_allowed() {
                self.err(SemanticError::TargetOutsideModel {
                    what: "target()".into(),
                    span,
                });
            }
            let n = args.len();
            if n < b.min_args || b.max_args.is_some_and(|m| n > m) {
                let expected = match b.max_args {
                    Some(m) if m == b.min_args => plural(m, "argument"),
                    Some(m) => format!("{} to {m} arguments", b.min_args),
                    None => format!("at least {} arguments", b.min_args),
                };
                self.err(SemanticError::WrongArity {
                    function: fname.into(),
                    span,
                    expected,
                    found: n,
                });
                return CallType::Error;
            }
            let Some(tys) = tys.into_iter().collect::<Option<Vec<Type>>>() else {
                return CallType::Error;
            };
            return match builtins::return_type(fname, &tys) {
                Some(t) => CallType::Value(t),
                None => {
                    self.err(SemanticError::NoMatchingSignature {
                        function: fname.into(),
                        span,
                        args: tys
                            .iter()
                            .map(|t| t.to_string())
                            .collect::<Vec<_>>()
                            .join(", "),
                        signatures: b.signatures.into(),
                    });
                    CallType::Error
                }
            };
        }

        let candidates = self.function_names();
        let suggestion = best_match(fname, candidates.iter().map(String::as_str));
        self.err(SemanticError::UnknownFunction {
            name: fname.into(),
            span: name.span,
            suggestion,
        });
        CallType::Error
    }

    /// `std_normal_lpdf(y)`, `_lupdf`, `_lcdf`, `_lccdf` (one argument, the `|` optional) and
    /// `std_normal_rng()`: the standard normal, `normal(0, 1)`, without parameters.
    fn std_normal_call(
        &mut self,
        fname: &str,
        suffix: &str,
        args: &[Expr],
        tys: &[Option<Type>],
        span: Span,
    ) -> CallType {
        let n_expected = usize::from(suffix != "_rng");
        if args.len() != n_expected {
            let expected = if n_expected == 0 {
                "no arguments".to_string()
            } else {
                "1 argument (the variate)".to_string()
            };
            self.err(SemanticError::WrongArity {
                function: fname.into(),
                span,
                expected,
                found: args.len(),
            });
            return CallType::Error;
        }
        if let (Some(Some(t)), Some(a)) = (tys.first(), args.first())
            && !t.is_reals()
        {
            self.err(SemanticError::TypeMismatch {
                what: format!("the variate of `{fname}`"),
                expected: REALS.into(),
                found: t.to_string(),
                span: a.span,
                help: None,
            });
            return CallType::Error;
        }
        CallType::Value(Type::REAL)
    }

    /// Arity and argument types of a user-defined function; false after an error.
    fn check_user_args(
        &mut self,
        fname: &str,
        f: &UserFn,
        tys: &[Option<Type>],
        exprs: &[&Expr],
        span: Span,
    ) -> bool {
        if tys.len() != f.params.len() {
            let list = f
                .params
                .iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(", ");
            self.err(SemanticError::WrongArity {
                function: fname.into(),
                span,
                expected: format!("{} ({list})", plural(f.params.len(), "argument")),
                found: tys.len(),
            });
            return false;
        }
        let mut ok = true;
        for (k, ((p, t), e)) in f.params.iter().zip(tys).zip(exprs).enumerate() {
            match t {
                Some(t) if !p.accepts(*t) => {
                    self.err(SemanticError::TypeMismatch {
                        what: format!("argument {} of `{fname}`", k + 1),
                        expected: format!("`{p}`"),
                        found: t.to_string(),
                        span: e.span,
                        help: promotion_help(*p, *t),
                    });
                    ok = false;
                }
                Some(_) => {}
                None => ok = false,
            }
            if f.data_only.get(k).copied().unwrap_or(false) && self.depends_on_parameters(e) {
                self.err(SemanticError::NonDataArgument {
                    function: fname.into(),
                    index: k + 1,
                    span: e.span,
                });
                ok = false;
            }
        }
        ok
    }

    #[allow(clippy::too_many_arguments)]
    fn distribution_call(
        &mut self,
        sig: &'static FamilySig,
        fname: &str,
        suffix: &str,
        args: &[Expr],
        tys: &[Option<Type>],
        conditional: bool,
        span: Span,
    ) -> CallType {
        let is_rng = suffix == "_rng";
        let discrete = sig.discrete || is_discrete_support(sig.variate);
        match suffix {
            "_lpdf" | "_lupdf" if discrete => {
                let good = if suffix == "_lpdf" { "_lpmf" } else { "_lupmf" };
                self.err(SemanticError::WrongSuffix {
                    name: fname.into(),
                    family: sig.name.into(),
                    kind: "discrete".into(),
                    suggested: format!("{}{good}", sig.name),
                    span,
                });
            }
            "_lpmf" | "_lupmf" if !discrete => {
                let good = if suffix == "_lpmf" { "_lpdf" } else { "_lupdf" };
                self.err(SemanticError::WrongSuffix {
                    name: fname.into(),
                    family: sig.name.into(),
                    kind: "continuous".into(),
                    suggested: format!("{}{good}", sig.name),
                    span,
                });
            }
            _ => {}
        }
        if matches!(suffix, "_lcdf" | "_lccdf") && !has_log_cdf(sig.family) {
            self.err(SemanticError::NoLogCdf {
                family: sig.name.into(),
                what: format!("`{fname}`"),
                span,
            });
        }
        if is_rng && conditional {
            self.err(SemanticError::ConditionalNotAllowed {
                name: fname.into(),
                span,
            });
        }
        if !is_rng && !conditional && !args.is_empty() {
            self.err(SemanticError::ConditionalRequired {
                name: fname.into(),
                span,
                fixed: conditional_form(fname, args),
            });
        }
        let n_expected = sig.params.len() + usize::from(!is_rng);
        if args.len() != n_expected {
            let expected = expected_arity(is_rng, n_expected, &param_names(sig));
            self.err(SemanticError::WrongArity {
                function: fname.into(),
                span,
                expected,
                found: args.len(),
            });
            return CallType::Error;
        }
        let (param_args, param_tys, first) = if is_rng {
            (args, tys, 1)
        } else {
            if let Some(t) = tys[0] {
                let (ok, expected) = if discrete {
                    (t.is_ints(), INTS)
                } else {
                    (t.is_reals(), REALS)
                };
                if !ok {
                    self.err(SemanticError::TypeMismatch {
                        what: format!("the variate of `{fname}`"),
                        expected: expected.into(),
                        found: t.to_string(),
                        span: args[0].span,
                        help: None,
                    });
                }
            }
            (&args[1..], &tys[1..], 2)
        };
        self.check_dist_params(sig, fname, param_args, param_tys, first);
        if is_rng {
            let elem = if discrete { Base::Int } else { Base::Real };
            let vectorised = param_tys.iter().flatten().any(|t| !t.is_scalar());
            CallType::Value(Type::array(elem, usize::from(vectorised)))
        } else {
            CallType::Value(Type::REAL)
        }
    }
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
