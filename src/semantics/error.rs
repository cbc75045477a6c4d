//! Semantic errors: one variant per kind, each holding the spans it points at (stanc3's
//! `Semantic_error`, rendered through codespan as in Nickel). `help:` notes say what to type.

use crate::syntax::span::Span;

/// An error found between parsing and compiling. Each variant's first span is the primary label.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SemanticError {
    /// A name that is not declared in any visible scope.
    #[error("undeclared variable `{name}`{}", did_you_mean(suggestion))]
    UndeclaredVariable {
        /// The name involved, as written in the source.
        name: String,
        /// Primary label: where the problem is.
        span: Span,
        /// The nearest visible name by edit distance, if close enough.
        suggestion: Option<String>,
    },
    /// A name used above its declaration in the same file.
    #[error("variable `{name}` is used before its declaration")]
    UsedBeforeDeclaration {
        /// The name involved, as written in the source.
        name: String,
        /// Primary label: where the problem is.
        span: Span,
        /// Where the variable was declared (secondary label).
        decl_span: Span,
    },
    /// A name declared twice in visible scopes (shadowing is not allowed).
    #[error("`{name}` is already declared")]
    Redeclaration {
        /// The name involved, as written in the source.
        name: String,
        /// Primary label: where the problem is.
        span: Span,
        /// The earlier declaration or definition (secondary label).
        previous: Span,
    },
    /// A call of a function that is neither built in, user-defined nor a distribution function.
    #[error("unknown function `{name}`{}", did_you_mean(suggestion))]
    UnknownFunction {
        /// The name involved, as written in the source.
        name: String,
        /// Primary label: where the problem is.
        span: Span,
        /// The nearest built-in, user-defined function or distribution name.
        suggestion: Option<String>,
    },
    /// A `~` statement with an unknown family.
    #[error("unknown distribution `{name}`{}", did_you_mean(suggestion))]
    UnknownDistribution {
        /// The name involved, as written in the source.
        name: String,
        /// Primary label: where the problem is.
        span: Span,
        /// The nearest known name by normalised edit distance, if close enough.
        suggestion: Option<String>,
    },
    /// A call or `~` with the wrong number of arguments.
    #[error("`{function}` takes {expected}, but {found} {} given", if *.found == 1 { "was" } else { "were" })]
    WrongArity {
        /// The function or distribution called.
        function: String,
        /// Primary label: where the problem is.
        span: Span,
        /// E.g. "2 arguments (mu, sigma)".
        expected: String,
        /// What was found: a type, a count or a list of types.
        found: usize,
    },
    /// A built-in function called with argument types it does not accept.
    #[error("no signature of `{function}` accepts arguments of type ({args})")]
    NoMatchingSignature {
        /// The function or distribution called.
        function: String,
        /// Primary label: where the problem is.
        span: Span,
        /// The argument types found, comma separated.
        args: String,
        /// The signatures that exist.
        signatures: String,
    },
    /// An operator applied to types it is not defined for.
    #[error("{message}")]
    OperatorMismatch {
        /// "cannot multiply `vector` by `vector` with `*`".
        message: String,
        /// Primary label: where the problem is.
        span: Span,
        /// What to write instead (may be empty).
        hint: String,
    },
    /// A misplaced or malformed annotation such as `@dropout(p)`.
    #[error("{message}")]
    BadAnnotation {
        /// The full message.
        message: String,
        /// Primary label: the annotation.
        span: Span,
        /// What to write instead.
        hint: String,
    },
    /// A value whose type is not the one required here.
    #[error("{what} must be {expected}, found `{found}`")]
    TypeMismatch {
        /// What was being checked: "the initialiser of `x`", "the condition of `if`", …
        what: String,
        /// The accepted type(s), already quoted.
        expected: String,
        /// What was found: a type, a count or a list of types.
        found: String,
        /// Primary label: where the problem is.
        span: Span,
        /// Extra `help:` text, if any.
        help: Option<String>,
    },
    /// An assignment to a variable that may not be assigned here.
    #[error("cannot assign to {kind} `{name}`")]
    ReadOnlyAssignment {
        /// The name involved, as written in the source.
        name: String,
        /// "data variable", "parameter", "loop variable", …
        kind: String,
        /// Primary label: where the problem is.
        span: Span,
        /// Where the variable was declared (secondary label).
        decl_span: Span,
        /// Extra `help:` text, if any.
        help: String,
    },
    /// An initialiser on a `data` or `parameters` declaration.
    #[error("a declaration in the `{block}` block takes no initialiser")]
    InitialiserNotAllowed {
        /// The block, as written in the source.
        block: String,
        /// Primary label: where the problem is.
        span: Span,
    },
    /// An `int` parameter or transformed parameter.
    #[error("{what} `{name}` is declared `int`; discrete parameters are not supported")]
    DiscreteParameter {
        /// The name involved, as written in the source.
        name: String,
        /// "parameter" or "transformed parameter".
        what: String,
        /// Primary label: where the problem is.
        span: Span,
    },
    /// `~`, `target +=`, `target()` or an `_lp` call outside the model block.
    #[error("`{what}` is only allowed in the `model` block and in functions ending in `_lp`")]
    TargetOutsideModel {
        /// What is being described, for the message.
        what: String,
        /// Primary label: where the problem is.
        span: Span,
    },
    /// A `_rng` call outside generated quantities and `_rng` functions.
    #[error("random number generator `{name}` cannot be used in {place}")]
    RngNotAllowed {
        /// The name involved, as written in the source.
        name: String,
        /// Primary label: where the problem is.
        span: Span,
        /// Where the call was found, for the message.
        place: String,
    },
    /// A bound or constrained type on a local variable.
    #[error("local variable `{name}` cannot have a constraint")]
    ConstraintOnLocal {
        /// The name involved, as written in the source.
        name: String,
        /// Primary label: where the problem is.
        span: Span,
    },
    /// A block-level size that depends on a non-data variable.
    #[error("the size of `{name}` depends on {kind} `{var}`; sizes must be data")]
    NonDataSize {
        /// The name involved, as written in the source.
        name: String,
        /// The offending variable.
        var: String,
        /// The kind of the variable or distribution, for the message.
        kind: String,
        /// Primary label: where the problem is.
        span: Span,
        /// Where the variable was declared (secondary label).
        decl_span: Span,
    },
    /// A discrete family whose variate is not an integer type.
    #[error("`{name}` is declared `{declared}` but `{family}` needs {values}")]
    DiscreteFamilyOnReal {
        /// The name involved, as written in the source.
        name: String,
        /// The declared type or bounds, in words.
        declared: String,
        /// The distribution family.
        family: String,
        /// "integer counts", "0/1 integers", "integers".
        values: String,
        /// Primary label: where the problem is.
        span: Span,
        /// Where the variable was declared (secondary label).
        decl_span: Option<Span>,
        /// The declaration to write instead, e.g. `array[N] int y`.
        suggested_decl: Option<String>,
    },
    /// Data whose declared bounds lie outside the support of its family.
    #[error("`{name}` is declared with `{bound}` but `{family}` needs {support}")]
    SupportContradiction {
        /// The name involved, as written in the source.
        name: String,
        /// The distribution family.
        family: String,
        /// "<upper=0>".
        bound: String,
        /// "positive values".
        support: String,
        /// Primary label: where the problem is.
        span: Span,
        /// Where the variable was declared (secondary label).
        decl_span: Span,
    },
    /// An index that is neither `int` nor `array[] int`.
    #[error("an index must be `int` or `array[] int`, found `{found}`")]
    NonIntIndex {
        /// What was found: a type, a count or a list of types.
        found: String,
        /// Primary label: where the problem is.
        span: Span,
        /// What to write instead, e.g. "write the position as an integer, `1` or `2`" for
        /// `beta[1.5]` (from `check::sizes::non_int_index_help`).
        help: String,
    },
    /// More indexes than the value has dimensions.
    #[error("too many indexes for a value of type `{ty}`: {found} given, at most {max}")]
    TooManyIndices {
        /// The indexed type.
        ty: String,
        /// What was found: a type, a count or a list of types.
        found: usize,
        /// The largest number of indexes the type takes.
        max: usize,
        /// Primary label: where the problem is.
        span: Span,
    },
    /// A non-void function whose body may end without `return`.
    #[error("function `{name}` may reach its end without returning a value")]
    MissingReturn {
        /// The name involved, as written in the source.
        name: String,
        /// Primary label: where the problem is.
        span: Span,
    },
    /// `return` outside a function, or with/without a value against the return type.
    #[error("{message}")]
    BadReturn {
        /// The full message.
        message: String,
        /// Primary label: where the problem is.
        span: Span,
    },
    /// A density call written without `|`.
    #[error("`{name}` needs `|` between the variate and the parameters")]
    ConditionalRequired {
        /// The name involved, as written in the source.
        name: String,
        /// Primary label: where the problem is.
        span: Span,
        /// The call written the right way.
        fixed: String,
    },
    /// `|` in a call that is not a density or distribution function.
    #[error(
        "`{name}` does not take `|`; only `_lpdf`, `_lpmf`, `_cdf`, `_lcdf` and `_lccdf` calls do"
    )]
    ConditionalNotAllowed {
        /// The name involved, as written in the source.
        name: String,
        /// Primary label: where the problem is.
        span: Span,
    },
    /// `break` or `continue` outside a loop.
    #[error("`{what}` outside a loop")]
    OutsideLoop {
        /// What is being described, for the message.
        what: String,
        /// Primary label: where the problem is.
        span: Span,
    },
    /// `_lpdf` on a discrete family or `_lpmf` on a continuous one.
    #[error("`{family}` is a {kind} distribution; call `{suggested}` instead of `{name}`")]
    WrongSuffix {
        /// The name involved, as written in the source.
        name: String,
        /// The distribution family.
        family: String,
        /// "discrete" or "continuous".
        kind: String,
        /// The name to write instead.
        suggested: String,
        /// Primary label: where the problem is.
        span: Span,
    },
    /// A non-void call used as a statement.
    #[error(
        "the result of `{name}` is discarded; only `void` functions can be called as statements"
    )]
    NonVoidStatement {
        /// The name involved, as written in the source.
        name: String,
        /// Primary label: where the problem is.
        span: Span,
    },
    /// A void function called inside an expression.
    #[error("`{name}` returns `void` and cannot be used in an expression")]
    VoidInExpression {
        /// The name involved, as written in the source.
        name: String,
        /// Primary label: where the problem is.
        span: Span,
    },
    /// A parameter-dependent value passed to a `data` function argument.
    #[error("argument {index} of `{function}` is declared `data` but depends on parameters")]
    NonDataArgument {
        /// The function or distribution called.
        function: String,
        /// 1-based position of the argument.
        index: usize,
        /// Primary label: where the problem is.
        span: Span,
    },
    /// A parameter-dependent argument of a built-in that takes data only (`to_int`, Stan's
    /// `int to_int(data real x)`): an integer carries no gradient, so in `transformed
    /// parameters`, `model` and function bodies its argument must not depend on parameters.
    #[error("the argument of `{function}` must be data, but it depends on parameters")]
    DataOnlyBuiltin {
        /// The built-in called.
        function: String,
        /// Primary label: the argument.
        span: Span,
    },
    /// A misused ODE solver call (`ode_rk45`, `ode_bdf`, their `_tol` forms): the system
    /// function, an argument's type, or a data-only argument (Stan Functions Reference,
    /// "Ordinary Differential Equation (ODE) Solvers").
    #[error("`{function}`: {problem}")]
    BadOdeCall {
        /// The solver called.
        function: String,
        /// What is wrong, e.g. "the initial time `t0` must be data".
        problem: String,
        /// Primary label: where the problem is.
        span: Span,
        /// The label text under the span.
        label: String,
        /// How to fix it.
        help: String,
    },
    /// `_cdf`/`_lcdf`/`_lccdf` or truncation on a family without a log CDF.
    #[error("`{family}` has no log CDF, which {what} needs")]
    NoLogCdf {
        /// The distribution family.
        family: String,
        /// "truncation `T[…]`" or the function called.
        what: String,
        /// Primary label: where the CDF is needed.
        span: Span,
    },
    /// A name used in a block that runs before the block declaring it.
    #[error("`{name}` is declared in the `{block}` block, which comes after the `{here}` block")]
    DeclaredInLaterBlock {
        /// The name involved, as written in the source.
        name: String,
        /// The block that declares it.
        block: String,
        /// The block of the use.
        here: String,
        /// Primary label: the use.
        span: Span,
        /// The declaration (secondary label).
        decl_span: Span,
    },
    /// A parameter with an unbounded flat prior that appears in no statement of `transformed
    /// parameters` or `model`: the log density does not depend on it, so its posterior is the
    /// improper flat prior and no method can fit it (issue 13, item 2).
    #[error(
        "parameter `{name}` appears in no statement of the `transformed parameters` or `model` \
         block, so its posterior is an improper flat density"
    )]
    UnusedParameter {
        /// The parameter.
        name: String,
        /// Primary label: its declaration.
        span: Span,
    },
    /// Constant bounds with lower ≥ upper: the declared set is empty (or a point).
    #[error(
        "the bounds of `{name}` are in the wrong order: lower = {lower} is not below upper = {upper}"
    )]
    BoundsReversed {
        /// The variable declared.
        name: String,
        /// The lower bound as written.
        lower: String,
        /// The upper bound as written.
        upper: String,
        /// Primary label: the constraint.
        span: Span,
    },
    /// Integer division or modulus by the literal 0.
    #[error("integer division by zero in `{expr}`")]
    DivisionByZero {
        /// The expression as written.
        expr: String,
        /// Primary label: the expression.
        span: Span,
    },
    /// Int arithmetic on literals whose result leaves the 32-bit range of `int`
    /// (`2147483647 + 1`): it would fail at every evaluation, at run time.
    #[error(
        "integer overflow: `{expr}` is {value}, outside the range of int (-2147483648 to \
         2147483647); int is 32-bit, as in Stan: to compute with larger values, convert to \
         real first (e.g. `1.0 * n`)"
    )]
    IntOverflow {
        /// The expression as written.
        expr: String,
        /// Its true value.
        value: i64,
        /// Primary label: the expression.
        span: Span,
    },
    /// Two operands whose declared sizes are different integer literals (e.g. `vector[3]` plus
    /// `vector[2]`): the expression can never be evaluated.
    #[error("`{lhs}` has size {lhs_size} but `{rhs}` has size {rhs_size} in {context}")]
    LiteralSizeMismatch {
        /// The first operand as written.
        lhs: String,
        /// Its declared size(s), e.g. "3" or "2 × 3".
        lhs_size: String,
        /// The second operand as written.
        rhs: String,
        /// Its declared size(s).
        rhs_size: String,
        /// "`a + b`" or "the arguments of `normal`".
        context: String,
        /// Primary label: the expression.
        span: Span,
    },
    /// An operation whose operands' sizes are known before any evaluation (literal sizes, or
    /// sizes from the data when checked with data) and cannot fit: `X * beta` with
    /// `matrix[N, 7] X` and `vector[6] beta`, `a + b` with sizes 10 and 6,
    /// `dot_product(a, b)` with 3 and 4 elements. Every evaluation would fail.
    #[error("size mismatch in `{expr}`: {what}")]
    SizeMismatch {
        /// The operation as written, e.g. "X * beta".
        expr: String,
        /// Which sizes disagree, e.g. "`X` has 7 columns but `beta` has 6 rows".
        what: String,
        /// The operands' sized types, e.g. "matrix[10, 7] times vector[6]" (primary label).
        sizes: String,
        /// Secondary labels: the declarations of the operands that are variables, each with
        /// the message for it (e.g. "`beta` declared with 6 rows").
        operands: Vec<(String, Span)>,
        /// The fix, e.g. "declare `beta` as `vector[7]`, one row per column of `X`".
        help: String,
        /// Primary label: the operation.
        span: Span,
    },
    /// The vectorised arguments of a univariate distribution (`y ~ normal(mu, s)`, the same
    /// through `normal_lpdf`, `_lcdf`, `_rng`, …) whose element counts are known before any
    /// evaluation and differ: every evaluation would fail, since the family pairs the i-th
    /// elements of its arguments (a scalar is shared by all). [X] session 19, tester finding:
    /// `y ~ normal(beta, s)` with sizes 4, 4 and 3 passed `check --data` and failed in `fit`.
    /// Also the sizes a multivariate family's arguments share (`check/mv_sizes.rs`): the
    /// variate, location and covariance of `multi_normal`, a Dirichlet's simplex and prior
    /// sizes, a Wishart's matrices, a GLM's rows and columns ([X] session 20).
    #[error("size mismatch in the arguments of `{function}`: {what}")]
    ArgumentSizeMismatch {
        /// The family or function as written (`normal`, `normal_lpdf`).
        function: String,
        /// Which sizes disagree, e.g. "`y` (the variate) has 4 elements but `s` (scale
        /// parameter) has 3", or "`y` (the variate) has 3 elements but `Sigma` (covariance
        /// matrix) has 2 rows and 2 columns".
        what: String,
        /// Primary labels, on the arguments whose sizes disagree (the odd ones first, then
        /// those that agree among themselves), each with its sized type (e.g. "vector[3]").
        args: Vec<(String, Span)>,
        /// Secondary labels: the declarations of those arguments that are variables.
        decls: Vec<(String, Span)>,
        /// The fix, e.g. "declare `vector[N] s;`".
        help: String,
        /// The first odd argument (the error's location).
        span: Span,
    },
    /// A value whose sizes, known before any evaluation, differ from those of the variable it
    /// initialises or is assigned to (`vector[2] c = b;` with `vector[N] b` and N = 3 in the
    /// data). [X] session 19, tester finding: such a declaration in `transformed data` passed
    /// `check --data` and failed when the block ran.
    #[error("size mismatch in {context}: `{target}` is {declared} but `{value}` is {found}")]
    AssignedSizeMismatch {
        /// "the declaration of `c`" or "the assignment to `c[1:2]`".
        context: String,
        /// The variable (possibly indexed) as written.
        target: String,
        /// Its sized type, e.g. "vector[2]".
        declared: String,
        /// The value as written.
        value: String,
        /// The value's sized type, e.g. "vector[3]".
        found: String,
        /// Secondary labels: the declarations of the target and of the value when it is a
        /// variable, with their sizes.
        decls: Vec<(String, Span)>,
        /// The fix.
        help: String,
        /// Primary label: the value.
        span: Span,
    },
    /// A declared size known before evaluation to be negative (`vector[-1] v;`, or
    /// `vector[N - 5] v;` with N = 3 from the data). [X] session 19, tester finding: it used
    /// to fail only when the block ran.
    #[error("{}", negative_size_message(name, size, *value))]
    NegativeSize {
        /// The declared variable.
        name: String,
        /// The size expression as written.
        size: String,
        /// Its value.
        value: i64,
        /// Secondary labels: the `int` data and transformed data the size is computed from,
        /// with their values.
        sources: Vec<(String, Span)>,
        /// Primary label: the size expression.
        span: Span,
    },
    /// A size argument of a built-in (`rep_vector(x, n)`'s n) known to be negative
    /// (session 21): every evaluation would fail.
    #[error("{}", negative_size_argument_message(function, size, *value))]
    NegativeSizeArgument {
        /// The built-in, e.g. `rep_vector`.
        function: String,
        /// The size as written.
        size: String,
        /// Its value.
        value: i64,
        /// Primary label: the size argument.
        span: Span,
    },
    /// A literal index outside the literal size of what it indexes (`y[4]` with `vector[3] y`),
    /// or below 1 whatever the size (`y[0]`): every evaluation would fail.
    #[error("{}", index_out_of_range_message(name, *index, *size))]
    IndexOutOfRange {
        /// The indexed variable.
        name: String,
        /// The literal index.
        index: i64,
        /// The size of the indexed dimension when it is a literal.
        size: Option<i64>,
        /// Primary label: the index.
        span: Span,
        /// The variable's declaration (secondary label).
        decl_span: Span,
    },
    /// A literal argument of a distribution outside that parameter's support, e.g.
    /// `normal(mu, -1)`: every evaluation would fail (issue 13, item 9).
    #[error("argument {position} of `{function}` ({role}) is {value}, but it must be {support}")]
    LiteralOutsideSupport {
        /// 1-based position of the argument in the call.
        position: usize,
        /// The function or family as written, e.g. `normal` or `normal_lpdf`.
        function: String,
        /// The parameter's name in Stan's wording, lower-case first ("scale parameter").
        role: String,
        /// The literal as written; for a variable set once to a literal, its name in backticks
        /// and its value (as in "`s` = 0").
        value: String,
        /// The support in words ("positive", "in [0, 1]").
        support: String,
        /// A value that is in the support, for the fix.
        example: String,
        /// Primary label: the argument.
        span: Span,
        /// When the argument is a variable set once to a literal (`real s = 0;`, never
        /// assigned): that initialiser (secondary label).
        declared: Option<Span>,
    },
    /// A literal outcome of a `~` statement outside its family's support, e.g.
    /// `3 ~ bernoulli(p)`: the density is zero whatever the parameters (session 21).
    #[error(
        "the outcome {value} of {context} is outside the family's support: it must be {support}"
    )]
    LiteralOutcomeOutsideSupport {
        /// The family as written after `~`, or the stem of the `_lpmf` call.
        family: String,
        /// The statement or call in words: "`~ bernoulli`", "`poisson_lpmf`".
        context: String,
        /// The literal as written.
        value: String,
        /// The support in words ("0 or 1", "a nonnegative integer", "in the interval [0, 1]").
        support: String,
        /// Primary label: the literal.
        span: Span,
    },
    /// `while` with a constant true condition and no `break`, `return` or `reject` in its body:
    /// the loop never ends (issue 13, item 9).
    #[error(
        "this `while` loop never ends: its condition `{cond}` is always true and its body has no `break`, `return` or `reject`"
    )]
    EndlessLoop {
        /// The condition as written.
        cond: String,
        /// Primary label: the condition.
        span: Span,
    },
    /// A `@missing` data variable used where only data is known (other data declarations,
    /// `transformed data`, parameter declarations): its missing entries are parameters, known
    /// from `transformed parameters` on (docs/missing_data.md).
    #[error(
        "`{name}` has missing entries, which are imputed as parameters, so it cannot be used in the `{block}` block"
    )]
    ImputedTooEarly {
        /// The variable.
        name: String,
        /// The block of the use.
        block: String,
        /// Primary label: the use.
        span: Span,
        /// The declaration (secondary label).
        decl_span: Span,
    },
    /// A `@missing` data variable that is the variate of no distribution statement: its
    /// imputed entries would have an improper flat density (docs/missing_data.md).
    #[error(
        "`{name}` is declared `@missing`, but no statement gives it a distribution, so its imputed entries would have an improper flat density"
    )]
    ImputedWithoutDistribution {
        /// The variable.
        name: String,
        /// Primary label: its declaration.
        span: Span,
    },
    /// A user-defined function defined twice.
    #[error("function `{name}` is already defined")]
    FunctionRedefinition {
        /// The name involved, as written in the source.
        name: String,
        /// Primary label: where the problem is.
        span: Span,
        /// The earlier declaration or definition (secondary label).
        previous: Span,
    },
}

impl SemanticError {
    /// Whether this is an error about sizes known before any evaluation (literal sizes, or
    /// sizes from the data): sizes that cannot fit, an index out of range, a negative size.
    /// Such errors are reported only in code known to run (`check/guards.rs`), and a program
    /// whose only errors are these is checked again with its data's sizes when it has data
    /// ([`crate::pipeline::check_file_with_data`]). [X] session 19/20.
    pub fn is_known_size_error(&self) -> bool {
        matches!(
            self,
            SemanticError::LiteralSizeMismatch { .. }
                | SemanticError::SizeMismatch { .. }
                | SemanticError::ArgumentSizeMismatch { .. }
                | SemanticError::AssignedSizeMismatch { .. }
                | SemanticError::NegativeSize { .. }
                | SemanticError::NegativeSizeArgument { .. }
                | SemanticError::IndexOutOfRange { .. }
        )
    }

    /// The span of the primary label.
    pub fn span(&self) -> Span {
        use SemanticError::*;
        match self {
            UndeclaredVariable { span, .. }
            | UsedBeforeDeclaration { span, .. }
            | Redeclaration { span, .. }
            | UnknownFunction { span, .. }
            | UnknownDistribution { span, .. }
            | WrongArity { span, .. }
            | NoMatchingSignature { span, .. }
            | OperatorMismatch { span, .. }
            | BadAnnotation { span, .. }
            | TypeMismatch { span, .. }
            | ReadOnlyAssignment { span, .. }
            | InitialiserNotAllowed { span, .. }
            | DiscreteParameter { span, .. }
            | TargetOutsideModel { span, .. }
            | RngNotAllowed { span, .. }
            | ConstraintOnLocal { span, .. }
            | NonDataSize { span, .. }
            | DiscreteFamilyOnReal { span, .. }
            | SupportContradiction { span, .. }
            | NonIntIndex { span, .. }
            | TooManyIndices { span, .. }
            | MissingReturn { span, .. }
            | BadReturn { span, .. }
            | ConditionalRequired { span, .. }
            | ConditionalNotAllowed { span, .. }
            | OutsideLoop { span, .. }
            | WrongSuffix { span, .. }
            | NonVoidStatement { span, .. }
            | VoidInExpression { span, .. }
            | NonDataArgument { span, .. }
            | DataOnlyBuiltin { span, .. }
            | BadOdeCall { span, .. }
            | NoLogCdf { span, .. }
            | DeclaredInLaterBlock { span, .. }
            | FunctionRedefinition { span, .. }
            | UnusedParameter { span, .. }
            | BoundsReversed { span, .. }
            | DivisionByZero { span, .. }
            | IntOverflow { span, .. }
            | LiteralSizeMismatch { span, .. }
            | IndexOutOfRange { span, .. }
            | SizeMismatch { span, .. }
            | ArgumentSizeMismatch { span, .. }
            | AssignedSizeMismatch { span, .. }
            | NegativeSize { span, .. }
            | NegativeSizeArgument { span, .. }
            | LiteralOutsideSupport { span, .. }
            | LiteralOutcomeOutsideSupport { span, .. }
            | EndlessLoop { span, .. }
            | ImputedTooEarly { span, .. }
            | ImputedWithoutDistribution { span, .. } => *span,
        }
    }
}

/// The message of [`SemanticError::IndexOutOfRange`].
fn index_out_of_range_message(name: &str, index: i64, size: Option<i64>) -> String {
    match size {
        Some(n) => format!(
            "index {index} is out of range for `{name}`, whose size there is {n}: indexes run from 1 to {n}"
        ),
        None => format!("index {index} is out of range for `{name}`: indexes start at 1"),
    }
}

/// The message of [`SemanticError::NegativeSize`]: the size as written, and its value when
/// that is not the literal itself.
fn negative_size_message(name: &str, size: &str, value: i64) -> String {
    if size.parse::<i64>().is_ok() {
        format!("`{name}` is declared with size {value}, but a size must be 0 or more")
    } else {
        format!("`{name}` is declared with size `{size}` = {value}, but a size must be 0 or more")
    }
}

/// The message of [`SemanticError::NegativeSizeArgument`].
fn negative_size_argument_message(function: &str, size: &str, value: i64) -> String {
    if size.parse::<i64>().is_ok() {
        format!("the size {value} given to `{function}` is negative, but a size must be 0 or more")
    } else {
        format!("the size `{size}` given to `{function}` is {value}, but a size must be 0 or more")
    }
}

/// "; did you mean `x`?" when there is a suggestion, else nothing.
fn did_you_mean(suggestion: &Option<String>) -> String {
    match suggestion {
        Some(s) => format!("; did you mean `{s}`?"),
        None => String::new(),
    }
}

mod render;
