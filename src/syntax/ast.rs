//! The abstract syntax tree of a `.bayes` program, as produced by [`crate::syntax::parser`].
//!
//! The tree mirrors the source closely (Stan's block structure and statements); every node
//! carries the [`Span`] of the text it came from. Later phases never mutate it: semantics checks
//! it, the graph compiler lowers it.

use super::span::Span;

/// A name as written in the source, with its location.
#[derive(Clone, Debug, PartialEq)]
pub struct Ident {
    /// The name.
    pub name: String,
    /// Where it was written.
    pub span: Span,
}

/// A whole program. Every block is optional in the source; an absent block is an empty list and
/// its `*_span` is `None`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Program {
    /// `include "file.bayes";` lines at the top of the file (resolved by the driver, not the parser).
    pub includes: Vec<Include>,
    /// `functions { … }`: user-defined functions.
    pub functions: Vec<FunctionDef>,
    /// `data { … }`: declarations only (no assignment).
    pub data: Vec<VarDecl>,
    /// `transformed data { … }`: declarations and statements, run once.
    pub transformed_data: Vec<Stmt>,
    /// `parameters { … }`: declarations only.
    pub parameters: Vec<VarDecl>,
    /// `transformed parameters { … }`: declarations and statements, run at every evaluation.
    pub transformed_parameters: Vec<Stmt>,
    /// `model { … }`: statements contributing to the log density.
    pub model: Vec<Stmt>,
    /// `generated quantities { … }`: declarations and statements, run once per draw.
    pub generated_quantities: Vec<Stmt>,
    /// The span of each block's header keyword(s), where the block is present.
    pub block_spans: BlockSpans,
}

/// Spans of the block headers (`data`, `parameters`, …) that appear in the program.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BlockSpans {
    pub functions: Option<Span>,
    pub data: Option<Span>,
    pub transformed_data: Option<Span>,
    pub parameters: Option<Span>,
    pub transformed_parameters: Option<Span>,
    pub model: Option<Span>,
    pub generated_quantities: Option<Span>,
}

/// `include "path";` — textual inclusion of a library file (resolution order: the model's
/// folder, then the installed stdlib).
#[derive(Clone, Debug, PartialEq)]
pub struct Include {
    /// The path as written between the quotes.
    pub path: String,
    pub span: Span,
}

/// A user-defined function in the `functions` block.
#[derive(Clone, Debug, PartialEq)]
pub struct FunctionDef {
    /// Declared return type (`void` is [`ReturnType::Void`]).
    pub return_type: ReturnType,
    pub name: Ident,
    pub params: Vec<FunctionParam>,
    /// `None` for a forward declaration (`real f(real x);`).
    pub body: Option<Stmt>,
    pub span: Span,
}

/// A function's return type.
#[derive(Clone, Debug, PartialEq)]
pub enum ReturnType {
    Void,
    Type(UnsizedType),
}

/// One argument of a user-defined function: `data real x`, `vector v`, `array[] int n`.
#[derive(Clone, Debug, PartialEq)]
pub struct FunctionParam {
    /// `data` qualifier: the argument may not depend on parameters.
    pub data_only: bool,
    pub ty: UnsizedType,
    pub name: Ident,
    pub span: Span,
}

/// A type without sizes, as used in function signatures: base type plus number of array dims.
#[derive(Clone, Debug, PartialEq)]
pub struct UnsizedType {
    pub base: UnsizedBase,
    /// `array[] real` has 1, `array[,] real` has 2.
    pub array_dims: usize,
    pub span: Span,
}

/// The base of an [`UnsizedType`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnsizedBase {
    Int,
    Real,
    Vector,
    RowVector,
    Matrix,
}

/// A variable declaration: `vector<lower=0>[N] sigma = rep_vector(1, N);`.
#[derive(Clone, Debug, PartialEq)]
pub struct VarDecl {
    pub ty: SizedType,
    pub name: Ident,
    /// The initialiser, if any (not allowed in `data` and `parameters`).
    pub init: Option<Expr>,
    /// Annotations written before the type, e.g. `@dropout(0.2)` or `@missing` (checked by the
    /// semantic pass: `dropout` only on parameters, `missing` only on data).
    pub annotations: Vec<Annotation>,
    pub span: Span,
}

/// `@name(value)` or `@name` before a declaration: metadata, not itself part of the model's log
/// density (`@dropout(p)` marks a parameter's units for MC dropout, docs/variational.md;
/// `@missing` lets a data variable have missing entries, which the fit imputes,
/// docs/missing_data.md).
#[derive(Clone, Debug, PartialEq)]
pub struct Annotation {
    pub name: Ident,
    /// The numeric argument, if written.
    pub value: Option<f64>,
    pub span: Span,
}

/// A sized type with its constraint: `array[J] vector<lower=0>[K]`.
#[derive(Clone, Debug, PartialEq)]
pub struct SizedType {
    pub base: SizedBase,
    /// Sizes of the enclosing array, outermost first (`array[J, 2] real` gives `[J, 2]`).
    pub array_dims: Vec<Expr>,
    pub constraint: Constraint,
    pub span: Span,
}

/// The base of a [`SizedType`], with its size expressions.
#[derive(Clone, Debug, PartialEq)]
pub enum SizedBase {
    Int,
    Real,
    /// `vector[n]`: column vector.
    Vector(Box<Expr>),
    /// `row_vector[n]`.
    RowVector(Box<Expr>),
    /// `matrix[rows, cols]`.
    Matrix(Box<Expr>, Box<Expr>),
    /// `simplex[K]`: non-negative, sums to one.
    Simplex(Box<Expr>),
    /// `ordered[K]`: strictly increasing.
    Ordered(Box<Expr>),
    /// `positive_ordered[K]`: positive and strictly increasing.
    PositiveOrdered(Box<Expr>),
    /// `cholesky_factor_corr[K]`.
    CholeskyFactorCorr(Box<Expr>),
    /// `cholesky_factor_cov[K]`.
    CholeskyFactorCov(Box<Expr>),
    /// `cov_matrix[K]`.
    CovMatrix(Box<Expr>),
    /// `corr_matrix[K]`.
    CorrMatrix(Box<Expr>),
}

/// `<lower=…, upper=…>` or `<offset=…, multiplier=…>`; every part is optional.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Constraint {
    pub lower: Option<Expr>,
    pub upper: Option<Expr>,
    pub offset: Option<Expr>,
    pub multiplier: Option<Expr>,
}

impl Constraint {
    /// True when no bound, offset or multiplier is given.
    pub fn is_empty(&self) -> bool {
        self.lower.is_none()
            && self.upper.is_none()
            && self.offset.is_none()
            && self.multiplier.is_none()
    }
}

/// A statement with its span.
#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

/// The statement forms of the language.
#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    /// A local or block-level declaration, possibly with an initialiser.
    Decl(VarDecl),
    /// `lhs = rhs;` and the compound forms `+= -= *= /= .*= ./=`.
    Assign {
        lhs: LValue,
        op: AssignOp,
        rhs: Expr,
    },
    /// `lhs ~ dist(args) T[lower, upper];` (vectorised; drops constant terms as Stan does).
    Tilde {
        lhs: Expr,
        dist: Ident,
        args: Vec<Expr>,
        truncation: Option<Truncation>,
    },
    /// `target += expr;`
    TargetPlus(Expr),
    /// `for (var in lo:hi) body` (inclusive on both ends, as in Stan).
    For {
        var: Ident,
        lo: Expr,
        hi: Expr,
        body: Box<Stmt>,
    },
    /// `for (var in collection) body`: loop over the elements of an array or vector.
    ForEach {
        var: Ident,
        collection: Expr,
        body: Box<Stmt>,
    },
    /// `while (cond) body`
    While {
        cond: Expr,
        body: Box<Stmt>,
    },
    /// `if (cond) then else other`
    If {
        cond: Expr,
        then: Box<Stmt>,
        otherwise: Option<Box<Stmt>>,
    },
    /// `{ … }`: a nested scope.
    Block(Vec<Stmt>),
    Break,
    Continue,
    /// `return expr;` / `return;` (functions only).
    Return(Option<Expr>),
    /// `print(…);`
    Print(Vec<PrintArg>),
    /// `reject(…);`: rejects the current evaluation (a recoverable error).
    Reject(Vec<PrintArg>),
    /// A function call used as a statement (a `void` function).
    Expr(Expr),
}

/// The operator of an assignment statement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AssignOp {
    Assign,
    AddAssign,
    SubAssign,
    MulAssign,
    DivAssign,
    EltMulAssign,
    EltDivAssign,
}

/// The left side of an assignment: a variable with optional indices, `x` or `x[i, j]` or `x[i][j]`.
#[derive(Clone, Debug, PartialEq)]
pub struct LValue {
    pub name: Ident,
    /// One entry per bracket group, each holding that group's comma-separated indices.
    pub indices: Vec<Vec<Index>>,
    pub span: Span,
}

/// `T[lower, upper]` truncation after a `~` statement; either bound may be omitted.
#[derive(Clone, Debug, PartialEq)]
pub struct Truncation {
    pub lower: Option<Expr>,
    pub upper: Option<Expr>,
    pub span: Span,
}

/// An argument of `print`/`reject`: a string literal or an expression.
#[derive(Clone, Debug, PartialEq)]
pub enum PrintArg {
    Str(String, Span),
    Expr(Expr),
}

/// An expression with its span.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

/// The expression forms of the language.
#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    IntLit(i64),
    RealLit(f64),
    /// A variable reference.
    Var(String),
    Binary {
        op: BinOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    Unary {
        op: UnOp,
        operand: Box<Expr>,
    },
    /// `f(a, b)`, or with `conditional = true`, `foo_lpdf(y | mu, sigma)` where `args[0]` is `y`.
    Call {
        name: Ident,
        args: Vec<Expr>,
        conditional: bool,
    },
    /// `base[i, j]`: one bracket group (chained groups `x[i][j]` nest).
    Index {
        base: Box<Expr>,
        indices: Vec<Index>,
    },
    /// `cond ? a : b`
    Ternary {
        cond: Box<Expr>,
        then: Box<Expr>,
        otherwise: Box<Expr>,
    },
    /// `[a, b, c]`: a row vector (or a matrix when the elements are row vectors).
    RowVectorLit(Vec<Expr>),
    /// `{a, b, c}`: an array.
    ArrayLit(Vec<Expr>),
    /// Postfix `'`: transpose.
    Transpose(Box<Expr>),
}

/// Binary operators, in the language's spelling.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*` (scalar, matrix–vector or matrix–matrix product depending on the operand types)
    Mul,
    /// `/`
    Div,
    /// `%/%` integer division
    IntDiv,
    /// `%` integer modulus
    Mod,
    /// `^`
    Pow,
    /// `.*`
    EltMul,
    /// `./`
    EltDiv,
    /// `.^`
    EltPow,
    /// `\` (left division, `A \ b` solves `A x = b`)
    LeftDiv,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    And,
    Or,
}

/// The smallest value of the language's `int` (32-bit, as Stan's `int` and `to_int`).
pub const INT_MIN: i64 = i32::MIN as i64;
/// The largest value of the language's `int` (32-bit, as Stan's `int` and `to_int`): int
/// literals above it are syntax errors, and int arithmetic leaving
/// [`INT_MIN`]..=[`INT_MAX`] is a runtime error, never a wrap.
pub const INT_MAX: i64 = i32::MAX as i64;

/// `v` when it is a value of the language's `int` ([`INT_MIN`]..=[`INT_MAX`]), else `None`;
/// applied to the result of `checked_add` and the like so that `None` means "overflow".
pub fn int_in_range(v: Option<i64>) -> Option<i64> {
    v.filter(|x| (INT_MIN..=INT_MAX).contains(x))
}

impl BinOp {
    /// The operator as written in source, for messages.
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::IntDiv => "%/%",
            BinOp::Mod => "%",
            BinOp::Pow => "^",
            BinOp::EltMul => ".*",
            BinOp::EltDiv => "./",
            BinOp::EltPow => ".^",
            BinOp::LeftDiv => "\\",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::And => "&&",
            BinOp::Or => "||",
        }
    }
}

/// Unary prefix operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    /// `-x`
    Neg,
    /// `+x`
    Plus,
    /// `!x`
    Not,
}

/// One index inside brackets.
#[derive(Clone, Debug, PartialEq)]
pub enum Index {
    /// `x[i]`: a single integer position, or an array of integers (multi-indexing).
    Single(Expr),
    /// `x[lo:hi]`, `x[lo:]`, `x[:hi]` (inclusive).
    Range(Option<Expr>, Option<Expr>),
    /// `x[:]` or an omitted index `x[, j]`.
    All,
}

impl Expr {
    /// Whether the expression reads the variable `name` anywhere (in an operand, a call's
    /// argument, an index, a literal's element); a function's name is not a variable.
    pub fn mentions(&self, name: &str) -> bool {
        match &self.kind {
            ExprKind::Var(v) => v == name,
            ExprKind::IntLit(_) | ExprKind::RealLit(_) => false,
            ExprKind::Binary { lhs, rhs, .. } => lhs.mentions(name) || rhs.mentions(name),
            ExprKind::Unary { operand, .. } => operand.mentions(name),
            ExprKind::Call { args, .. } => args.iter().any(|a| a.mentions(name)),
            ExprKind::Index { base, indices } => {
                base.mentions(name) || indices.iter().any(|i| i.mentions(name))
            }
            ExprKind::Ternary {
                cond,
                then,
                otherwise,
            } => cond.mentions(name) || then.mentions(name) || otherwise.mentions(name),
            ExprKind::RowVectorLit(xs) | ExprKind::ArrayLit(xs) => {
                xs.iter().any(|a| a.mentions(name))
            }
            ExprKind::Transpose(x) => x.mentions(name),
        }
    }
}

impl Index {
    /// Whether the index reads the variable `name` ([`Expr::mentions`]).
    pub fn mentions(&self, name: &str) -> bool {
        match self {
            Index::Single(e) => e.mentions(name),
            Index::Range(a, b) => {
                a.as_ref().is_some_and(|e| e.mentions(name))
                    || b.as_ref().is_some_and(|e| e.mentions(name))
            }
            Index::All => false,
        }
    }
}

impl SizedType {
    /// The size expressions of the declared dims, outermost first: the array sizes, then the
    /// base's (`matrix[R, C]` gives R and C; the square types `cov_matrix[K]` and the like give
    /// K twice; `int` and `real` none).
    pub fn size_exprs(&self) -> Vec<&Expr> {
        let mut out: Vec<&Expr> = self.array_dims.iter().collect();
        match &self.base {
            SizedBase::Int | SizedBase::Real => {}
            SizedBase::Vector(n)
            | SizedBase::RowVector(n)
            | SizedBase::Simplex(n)
            | SizedBase::Ordered(n)
            | SizedBase::PositiveOrdered(n) => out.push(n),
            SizedBase::Matrix(r, c) => {
                out.push(r);
                out.push(c);
            }
            SizedBase::CholeskyFactorCorr(n)
            | SizedBase::CholeskyFactorCov(n)
            | SizedBase::CovMatrix(n)
            | SizedBase::CorrMatrix(n) => {
                out.push(n);
                out.push(n);
            }
        }
        out
    }
}
