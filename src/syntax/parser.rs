//! Text → AST: runs the pest grammar (`grammar/bayes.pest`) and builds [`crate::syntax::ast`]
//! nodes, resolving operator precedence with a Pratt parser.

use std::sync::LazyLock;

use pest::Parser;
use pest::iterators::Pair;
use pest::pratt_parser::{Assoc, Op, PrattParser};

use super::ast::*;
use super::error::SyntaxError;
use super::span::{FileId, Span};

/// The pest parser generated from `grammar/bayes.pest`; its `Rule` enum is used by
/// [`crate::syntax::error`] to describe what was expected.
#[derive(pest_derive::Parser)]
#[grammar = "../grammar/bayes.pest"]
pub struct BayesParser;

/// Operator precedence, lowest first (Stan reference manual, "Operator precedence and
/// associativity"): `?:` (right), `||`, `&&`, `== !=`, `< <= > >=`, `+ -`, `* / % %/%`, `\`,
/// `.* ./`, prefix `! - +`, `^ .^` (right; binds tighter than prefix minus, so `-a^2` is
/// `-(a^2)`), postfix `'` and indexing.
static PRATT: LazyLock<PrattParser<Rule>> = LazyLock::new(|| {
    PrattParser::new()
        .op(Op::infix(Rule::ternary_op, Assoc::Right))
        .op(Op::infix(Rule::op_or, Assoc::Left))
        .op(Op::infix(Rule::op_and, Assoc::Left))
        .op(Op::infix(Rule::op_eq, Assoc::Left) | Op::infix(Rule::op_ne, Assoc::Left))
        .op(Op::infix(Rule::op_lt, Assoc::Left)
            | Op::infix(Rule::op_le, Assoc::Left)
            | Op::infix(Rule::op_gt, Assoc::Left)
            | Op::infix(Rule::op_ge, Assoc::Left))
        .op(Op::infix(Rule::op_add, Assoc::Left) | Op::infix(Rule::op_sub, Assoc::Left))
        .op(Op::infix(Rule::op_mul, Assoc::Left)
            | Op::infix(Rule::op_div, Assoc::Left)
            | Op::infix(Rule::op_mod, Assoc::Left)
            | Op::infix(Rule::op_intdiv, Assoc::Left))
        .op(Op::infix(Rule::op_ldiv, Assoc::Left))
        .op(Op::infix(Rule::op_eltmul, Assoc::Left) | Op::infix(Rule::op_eltdiv, Assoc::Left))
        .op(Op::prefix(Rule::op_not) | Op::prefix(Rule::op_neg) | Op::prefix(Rule::op_plus))
        .op(Op::infix(Rule::op_pow, Assoc::Right) | Op::infix(Rule::op_eltpow, Assoc::Right))
        .op(Op::postfix(Rule::op_transpose) | Op::postfix(Rule::index_group))
});

/// Parses a whole program. Every node's [`Span`] holds byte offsets into `source` in `file`;
/// `Program::block_spans` holds the span of each block header present.
///
/// Errors: the first syntax error, as a [`SyntaxError`] pointing at the offending position with a
/// hand-written message (see `syntax/error.rs`); also blocks out of order or repeated, removed
/// Stan syntax (`<-`, `increment_log_prob`, `real x[N]`), reserved words used as names, invalid
/// constraints and integer literals that do not fit in an `i64`.
pub fn parse_program(source: &str, file: FileId) -> std::result::Result<Program, SyntaxError> {
    guard(source, file, Rule::program)?;
    let mut pairs = BayesParser::parse(Rule::program, source)
        .map_err(|e| SyntaxError::from_pest(e, source, file))?;
    let program = pairs
        .next()
        .expect("a successful parse of `program` yields exactly one pair");
    Builder { file }.program(program)
}

/// Runs the nesting and operator-count guard ([`super::error::check_nesting`]), which protects
/// the recursive parser from stack overflow. When the guard trips at byte p, a syntax error
/// earlier in the file is the one to report (the guard fires on any long run of `+ - ^ ? !`, such
/// as random text): the prefix before p is parsed, and its error is returned if it lies before p
/// (an error at p itself only says that the prefix ends early).
fn guard(source: &str, file: FileId, rule: Rule) -> std::result::Result<(), SyntaxError> {
    let Err(tripped) = super::error::check_nesting(source, file) else {
        return Ok(());
    };
    let at = tripped.span().start;
    // Only an error on an earlier line is a real earlier error: the truncated statement itself
    // fails to parse at the cut (pest reports the furthest position) or as an unclosed bracket.
    let line_start = source[..at.min(source.len())]
        .rfind('\n')
        .map_or(0, |i| i + 1);
    if matches!(
        tripped,
        SyntaxError::TooManyOperators { .. } | SyntaxError::TooDeeplyNested { .. }
    ) && at <= source.len()
        && source.is_char_boundary(at)
        && let Err(e) = BayesParser::parse(rule, &source[..at])
    {
        let earlier = SyntaxError::from_pest(e, &source[..at], file);
        if earlier.span().start < line_start && !matches!(earlier, SyntaxError::Unclosed { .. }) {
            return Err(earlier);
        }
    }
    Err(tripped)
}

/// Parses a single expression (the REPL's input form), with the same errors as
/// [`parse_program`].
pub fn parse_expression(source: &str, file: FileId) -> std::result::Result<Expr, SyntaxError> {
    guard(source, file, Rule::expression_only)?;
    let mut pairs = BayesParser::parse(Rule::expression_only, source)
        .map_err(|e| SyntaxError::from_pest(e, source, file))?;
    let top = pairs
        .next()
        .expect("a successful parse of `expression_only` yields exactly one pair");
    let expr = top
        .into_inner()
        .next()
        .expect("`expression_only` contains one `expr`");
    Builder { file }.expr(expr)
}

/// Parses a sequence of statements and declarations, as typed at the REPL
/// (`real x = 2; y ~ normal(x, 1);`), with the same errors as [`parse_program`].
pub fn parse_statements(source: &str, file: FileId) -> std::result::Result<Vec<Stmt>, SyntaxError> {
    guard(source, file, Rule::statements_only)?;
    let mut pairs = BayesParser::parse(Rule::statements_only, source)
        .map_err(|e| SyntaxError::from_pest(e, source, file))?;
    let top = pairs
        .next()
        .expect("a successful parse of `statements_only` yields exactly one pair");
    let builder = Builder { file };
    top.into_inner()
        .filter(|p| p.as_rule() != Rule::EOI)
        .map(|p| builder.statement(p))
        .collect()
}

/// True when every `{`, `[` and `(` opened outside comments and string literals has been closed
/// and no block comment is left open, i.e. a multi-line REPL input can be submitted. Extra closing
/// brackets count as complete (the parser will report them).
pub fn input_is_complete(source: &str) -> bool {
    let scan = super::error::scan_trivia(source);
    if scan.open_comment {
        return false;
    }
    let mut depth: i64 = 0;
    for (i, b) in source.bytes().enumerate() {
        if scan.trivia[i] {
            continue;
        }
        match b {
            b'{' | b'[' | b'(' => depth += 1,
            b'}' | b']' | b')' => depth -= 1,
            _ => {}
        }
    }
    depth <= 0
}

/// Turns pest pairs into AST nodes for one file.
struct Builder {
    file: FileId,
}

type Result<T> = std::result::Result<T, SyntaxError>;

impl Builder {
    fn span(&self, pair: &Pair<Rule>) -> Span {
        let s = pair.as_span();
        Span::new(self.file, s.start(), s.end())
    }

    fn ident(&self, pair: Pair<Rule>) -> Ident {
        Ident {
            name: pair.as_str().to_string(),
            span: self.span(&pair),
        }
    }

    fn program(&self, pair: Pair<Rule>) -> Result<Program> {
        let mut prog = Program::default();
        // (order, name, header span) of the last block seen, to check the fixed block order.
        let mut last: Option<(usize, &'static str, Span)> = None;
        for p in pair.into_inner() {
            let rule = p.as_rule();
            if rule == Rule::EOI {
                continue;
            }
            if rule == Rule::include {
                let span = self.span(&p);
                let lit = p
                    .into_inner()
                    .find(|q| q.as_rule() == Rule::string_lit)
                    .expect("`include` contains a string literal");
                prog.includes.push(Include {
                    path: string_body(&lit),
                    span,
                });
                continue;
            }
            let (order, name) = block_info(rule);
            let mut inner = p.into_inner();
            let head = inner.next().expect("a block starts with its header");
            let head_span = self.span(&head);
            if let Some((last_order, last_name, last_span)) = last {
                if order == last_order {
                    return Err(SyntaxError::DuplicateBlock {
                        block: name,
                        span: head_span,
                        first: last_span,
                    });
                }
                if order < last_order {
                    return Err(SyntaxError::BlockOutOfOrder {
                        block: name,
                        span: head_span,
                        after: last_name,
                        after_span: last_span,
                    });
                }
            }
            last = Some((order, name, head_span));
            let items: Vec<Pair<Rule>> = inner
                .filter(|q| !matches!(q.as_rule(), Rule::lbrace | Rule::rbrace))
                .collect();
            let spans = &mut prog.block_spans;
            match rule {
                Rule::functions_block => {
                    spans.functions = Some(head_span);
                    for q in items {
                        prog.functions.push(self.function_def(q)?);
                    }
                }
                Rule::data_block => {
                    spans.data = Some(head_span);
                    for q in items {
                        prog.data.push(self.var_decl(q)?);
                    }
                }
                Rule::params_block => {
                    spans.parameters = Some(head_span);
                    for q in items {
                        prog.parameters.push(self.var_decl(q)?);
                    }
                }
                Rule::tdata_block => {
                    spans.transformed_data = Some(head_span);
                    prog.transformed_data = self.statements(items)?;
                }
                Rule::tparams_block => {
                    spans.transformed_parameters = Some(head_span);
                    prog.transformed_parameters = self.statements(items)?;
                }
                Rule::model_block => {
                    spans.model = Some(head_span);
                    prog.model = self.statements(items)?;
                }
                Rule::gq_block => {
                    spans.generated_quantities = Some(head_span);
                    prog.generated_quantities = self.statements(items)?;
                }
                other => unreachable!("`program` contains only includes and blocks, got {other:?}"),
            }
        }
        Ok(prog)
    }

    fn statements(&self, items: Vec<Pair<Rule>>) -> Result<Vec<Stmt>> {
        items.into_iter().map(|q| self.statement(q)).collect()
    }

    // ---- functions ------------------------------------------------------------------------

    fn function_def(&self, pair: Pair<Rule>) -> Result<FunctionDef> {
        let span = self.span(&pair);
        let mut return_type = None;
        let mut name = None;
        let mut params = Vec::new();
        let mut body = None;
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::return_type => {
                    let inner = p.into_inner().next().expect("return type has one child");
                    return_type = Some(match inner.as_rule() {
                        Rule::kw_void => ReturnType::Void,
                        _ => ReturnType::Type(self.unsized_type(inner)),
                    });
                }
                Rule::ident => name = Some(self.ident(p)),
                Rule::fun_param => params.push(self.fun_param(p)),
                Rule::block_stmt => body = Some(self.statement(p)?),
                _ => {}
            }
        }
        Ok(FunctionDef {
            return_type: return_type.expect("function has a return type"),
            name: name.expect("function has a name"),
            params,
            body,
            span,
        })
    }

    fn unsized_type(&self, pair: Pair<Rule>) -> UnsizedType {
        let span = self.span(&pair);
        let mut array_dims = 0;
        let mut base = UnsizedBase::Real;
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::array_commas => array_dims = 1 + p.into_inner().count(),
                Rule::unsized_base => {
                    let kw = p.into_inner().next().expect("unsized base has a keyword");
                    base = match kw.as_rule() {
                        Rule::kw_int => UnsizedBase::Int,
                        Rule::kw_real => UnsizedBase::Real,
                        Rule::kw_vector => UnsizedBase::Vector,
                        Rule::kw_row_vector => UnsizedBase::RowVector,
                        Rule::kw_matrix => UnsizedBase::Matrix,
                        other => unreachable!("unsized base keyword, got {other:?}"),
                    };
                }
                _ => {}
            }
        }
        UnsizedType {
            base,
            array_dims,
            span,
        }
    }

    fn fun_param(&self, pair: Pair<Rule>) -> FunctionParam {
        let span = self.span(&pair);
        let mut data_only = false;
        let mut ty = None;
        let mut name = None;
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::data_qualifier => data_only = true,
                Rule::unsized_type => ty = Some(self.unsized_type(p)),
                Rule::ident => name = Some(self.ident(p)),
                _ => {}
            }
        }
        FunctionParam {
            data_only,
            ty: ty.expect("parameter has a type"),
            name: name.expect("parameter has a name"),
            span,
        }
    }

    // ---- declarations ----------------------------------------------------------------------

    fn var_decl(&self, pair: Pair<Rule>) -> Result<VarDecl> {
        let span = self.span(&pair);
        let mut ty = None;
        let mut name = None;
        let mut init = None;
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::sized_type => ty = Some(self.sized_type(p)?),
                Rule::decl_name => {
                    let inner = p.into_inner().next().expect("declared name has one child");
                    if inner.as_rule() == Rule::reserved_name {
                        return Err(SyntaxError::ReservedWord {
                            word: inner.as_str().to_string(),
                            span: self.span(&inner),
                        });
                    }
                    name = Some(self.ident(inner));
                }
                Rule::old_dims => {
                    let ty: &SizedType = ty.as_ref().expect("type precedes the name");
                    let name: &Ident = name.as_ref().expect("name precedes the sizes");
                    let dims: Vec<&str> = p
                        .clone()
                        .into_inner()
                        .filter(|q| q.as_rule() == Rule::expr)
                        .map(|q| q.as_str())
                        .collect();
                    let src = p.get_input();
                    let ty_text = &src[ty.span.start..ty.span.end];
                    return Err(SyntaxError::OldArraySyntax {
                        span: self.span(&p),
                        rewrite: format!("array[{}] {} {}", dims.join(", "), ty_text, name.name),
                    });
                }
                Rule::expr => init = Some(self.expr(p)?),
                _ => {}
            }
        }
        Ok(VarDecl {
            ty: ty.expect("declaration has a type"),
            name: name.expect("declaration has a name"),
            init,
            span,
        })
    }

    fn sized_type(&self, pair: Pair<Rule>) -> Result<SizedType> {
        let span = self.span(&pair);
        let mut array_dims = Vec::new();
        let mut base = None;
        let mut constraint = Constraint::default();
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::array_sizes => {
                    for q in p.into_inner().filter(|q| q.as_rule() == Rule::expr) {
                        array_dims.push(self.expr(q)?);
                    }
                }
                Rule::sized_base => {
                    let t = p.into_inner().next().expect("sized base has one child");
                    let rule = t.as_rule();
                    let mut sizes = Vec::new();
                    for q in t.into_inner() {
                        match q.as_rule() {
                            Rule::constraint => constraint = self.constraint(q)?,
                            Rule::expr => sizes.push(Box::new(self.expr(q)?)),
                            _ => {}
                        }
                    }
                    let mut sizes = sizes.into_iter();
                    let mut size = || sizes.next().expect("sized type has its size expressions");
                    base = Some(match rule {
                        Rule::int_type => SizedBase::Int,
                        Rule::real_type => SizedBase::Real,
                        Rule::vector_type => SizedBase::Vector(size()),
                        Rule::row_vector_type => SizedBase::RowVector(size()),
                        Rule::matrix_type => {
                            let r = size();
                            SizedBase::Matrix(r, size())
                        }
                        Rule::simplex_type => SizedBase::Simplex(size()),
                        Rule::ordered_type => SizedBase::Ordered(size()),
                        Rule::positive_ordered_type => SizedBase::PositiveOrdered(size()),
                        Rule::cholesky_factor_corr_type => SizedBase::CholeskyFactorCorr(size()),
                        Rule::cholesky_factor_cov_type => SizedBase::CholeskyFactorCov(size()),
                        Rule::cov_matrix_type => SizedBase::CovMatrix(size()),
                        Rule::corr_matrix_type => SizedBase::CorrMatrix(size()),
                        other => unreachable!("sized base type, got {other:?}"),
                    });
                }
                _ => {}
            }
        }
        Ok(SizedType {
            base: base.expect("sized type has a base"),
            array_dims,
            constraint,
            span,
        })
    }

    fn constraint(&self, pair: Pair<Rule>) -> Result<Constraint> {
        let mut c = Constraint::default();
        // (keyword, span) of the first bound and of the first offset/multiplier, to reject mixes.
        let mut bound_kw: Option<(&'static str, Span)> = None;
        let mut affine_kw: Option<(&'static str, Span)> = None;
        for item in pair
            .into_inner()
            .filter(|q| q.as_rule() == Rule::constraint_item)
        {
            let mut inner = item.into_inner();
            let kw = inner
                .next()
                .expect("constraint item starts with a keyword")
                .into_inner()
                .next()
                .expect("constraint keyword has one child");
            let kw_span = self.span(&kw);
            let value = inner
                .find(|q| q.as_rule() == Rule::cexpr)
                .expect("constraint item has a value");
            let value = self.expr(value)?;
            let (word, slot, is_bound) = match kw.as_rule() {
                Rule::kw_lower => ("lower", &mut c.lower, true),
                Rule::kw_upper => ("upper", &mut c.upper, true),
                Rule::kw_offset => ("offset", &mut c.offset, false),
                Rule::kw_multiplier => ("multiplier", &mut c.multiplier, false),
                other => unreachable!("constraint keyword, got {other:?}"),
            };
            if slot.is_some() {
                return Err(SyntaxError::InvalidConstraint {
                    span: kw_span,
                    message: format!("`{word}` is given twice"),
                    help: format!("keep one `{word}=…`"),
                });
            }
            *slot = Some(value);
            let (mine, other) = if is_bound {
                (&mut bound_kw, affine_kw)
            } else {
                (&mut affine_kw, bound_kw)
            };
            if let Some((other_word, _)) = other {
                return Err(SyntaxError::InvalidConstraint {
                    span: kw_span,
                    message: format!("`{word}` cannot be combined with `{other_word}`"),
                    help: "use either `<lower=…, upper=…>` or `<offset=…, multiplier=…>`"
                        .to_string(),
                });
            }
            if mine.is_none() {
                *mine = Some((word, kw_span));
            }
        }
        Ok(c)
    }

    // ---- statements --------------------------------------------------------------------------

    fn statement(&self, pair: Pair<Rule>) -> Result<Stmt> {
        let span = self.span(&pair);
        let rule = pair.as_rule();
        let kind = match rule {
            Rule::var_decl => StmtKind::Decl(self.var_decl(pair)?),
            Rule::block_stmt => StmtKind::Block(
                pair.into_inner()
                    .filter(|q| !matches!(q.as_rule(), Rule::lbrace | Rule::rbrace))
                    .map(|q| self.statement(q))
                    .collect::<Result<Vec<_>>>()?,
            ),
            Rule::for_stmt => {
                let mut var = None;
                let mut exprs = Vec::new();
                let mut body = None;
                let mut ranged = false;
                for p in pair.into_inner() {
                    match p.as_rule() {
                        Rule::ident => var = Some(self.ident(p)),
                        Rule::expr => exprs.push(self.expr(p)?),
                        Rule::range_colon => ranged = true,
                        Rule::kw_for | Rule::kw_in | Rule::lparen | Rule::rparen => {}
                        _ => body = Some(Box::new(self.statement(p)?)),
                    }
                }
                let var = var.expect("`for` has a loop variable");
                let body = body.expect("`for` has a body");
                let mut exprs = exprs.into_iter();
                let first = exprs.next().expect("`for` has a range or collection");
                if ranged {
                    StmtKind::For {
                        var,
                        lo: first,
                        hi: exprs.next().expect("a ranged `for` has an upper bound"),
                        body,
                    }
                } else {
                    StmtKind::ForEach {
                        var,
                        collection: first,
                        body,
                    }
                }
            }
            Rule::while_stmt => {
                let mut cond = None;
                let mut body = None;
                for p in pair.into_inner() {
                    match p.as_rule() {
                        Rule::expr => cond = Some(self.expr(p)?),
                        Rule::kw_while | Rule::lparen | Rule::rparen => {}
                        _ => body = Some(Box::new(self.statement(p)?)),
                    }
                }
                StmtKind::While {
                    cond: cond.expect("`while` has a condition"),
                    body: body.expect("`while` has a body"),
                }
            }
            Rule::if_stmt => {
                let mut cond = None;
                let mut branches = Vec::new();
                for p in pair.into_inner() {
                    match p.as_rule() {
                        Rule::expr => cond = Some(self.expr(p)?),
                        Rule::kw_if | Rule::kw_else | Rule::lparen | Rule::rparen => {}
                        _ => branches.push(Box::new(self.statement(p)?)),
                    }
                }
                let mut branches = branches.into_iter();
                StmtKind::If {
                    cond: cond.expect("`if` has a condition"),
                    then: branches.next().expect("`if` has a then-branch"),
                    otherwise: branches.next(),
                }
            }
            Rule::break_stmt => StmtKind::Break,
            Rule::continue_stmt => StmtKind::Continue,
            Rule::return_stmt => {
                let value = pair.into_inner().find(|q| q.as_rule() == Rule::expr);
                StmtKind::Return(value.map(|q| self.expr(q)).transpose()?)
            }
            Rule::print_stmt | Rule::reject_stmt => {
                let args = pair
                    .into_inner()
                    .filter(|q| q.as_rule() == Rule::print_arg)
                    .map(|q| self.print_arg(q))
                    .collect::<Result<Vec<_>>>()?;
                if rule == Rule::print_stmt {
                    StmtKind::Print(args)
                } else {
                    StmtKind::Reject(args)
                }
            }
            Rule::target_stmt => {
                let e = pair
                    .into_inner()
                    .find(|q| q.as_rule() == Rule::expr)
                    .expect("`target +=` has an expression");
                StmtKind::TargetPlus(self.expr(e)?)
            }
            Rule::assign_stmt => {
                let mut inner = pair.into_inner();
                let lhs = self.lvalue(inner.next().expect("assignment has a left side"))?;
                let op_pair = inner.next().expect("assignment has an operator");
                let op = match op_pair.as_str() {
                    "=" => AssignOp::Assign,
                    "+=" => AssignOp::AddAssign,
                    "-=" => AssignOp::SubAssign,
                    "*=" => AssignOp::MulAssign,
                    "/=" => AssignOp::DivAssign,
                    ".*=" => AssignOp::EltMulAssign,
                    "./=" => AssignOp::EltDivAssign,
                    "<-" => {
                        return Err(SyntaxError::OldAssignment {
                            span: self.span(&op_pair),
                        });
                    }
                    other => unreachable!("assignment operator, got {other:?}"),
                };
                let rhs = self.expr(inner.next().expect("assignment has a right side"))?;
                StmtKind::Assign { lhs, op, rhs }
            }
            Rule::call_stmt => {
                let call = pair.into_inner().next().expect("call statement has a call");
                StmtKind::Expr(self.call(call)?)
            }
            Rule::tilde_stmt => {
                let mut lhs = None;
                let mut dist = None;
                let mut args = Vec::new();
                let mut truncation = None;
                for p in pair.into_inner() {
                    match p.as_rule() {
                        Rule::expr if lhs.is_none() => lhs = Some(self.expr(p)?),
                        Rule::expr => args.push(self.expr(p)?),
                        Rule::dist_name => {
                            let id = p
                                .into_inner()
                                .next()
                                .expect("distribution name is an ident");
                            dist = Some(self.ident(id));
                        }
                        Rule::truncation => truncation = Some(self.truncation(p)?),
                        _ => {}
                    }
                }
                StmtKind::Tilde {
                    lhs: lhs.expect("`~` has a left side"),
                    dist: dist.expect("`~` has a distribution"),
                    args,
                    truncation,
                }
            }
            other => unreachable!("statement rule, got {other:?}"),
        };
        Ok(Stmt { kind, span })
    }

    fn print_arg(&self, pair: Pair<Rule>) -> Result<PrintArg> {
        let inner = pair
            .into_inner()
            .next()
            .expect("print argument has one child");
        if inner.as_rule() == Rule::string_lit {
            let span = self.span(&inner);
            Ok(PrintArg::Str(string_body(&inner), span))
        } else {
            Ok(PrintArg::Expr(self.expr(inner)?))
        }
    }

    fn truncation(&self, pair: Pair<Rule>) -> Result<Truncation> {
        let span = self.span(&pair);
        let mut lower = None;
        let mut upper = None;
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::trunc_lower => lower = Some(self.expr(first_child(p))?),
                Rule::trunc_upper => upper = Some(self.expr(first_child(p))?),
                _ => {}
            }
        }
        Ok(Truncation { lower, upper, span })
    }

    fn lvalue(&self, pair: Pair<Rule>) -> Result<LValue> {
        let span = self.span(&pair);
        let mut inner = pair.into_inner();
        let name = self.ident(inner.next().expect("lvalue starts with a name"));
        let indices = inner
            .map(|g| self.index_group(g))
            .collect::<Result<Vec<_>>>()?;
        Ok(LValue {
            name,
            indices,
            span,
        })
    }

    // ---- expressions -------------------------------------------------------------------------

    /// Builds an expression from an `expr` or `cexpr` pair (a flat operand/operator sequence).
    fn expr(&self, pair: Pair<Rule>) -> Result<Expr> {
        PRATT
            .map_primary(|p| self.primary(p))
            .map_prefix(|op, operand| {
                let operand = operand?;
                let op_span = self.span(&op);
                let op = match op.as_rule() {
                    Rule::op_neg => UnOp::Neg,
                    Rule::op_plus => UnOp::Plus,
                    Rule::op_not => UnOp::Not,
                    other => unreachable!("prefix operator, got {other:?}"),
                };
                let span = op_span.to(operand.span);
                Ok(Expr {
                    kind: ExprKind::Unary {
                        op,
                        operand: Box::new(operand),
                    },
                    span,
                })
            })
            .map_postfix(|base, op| {
                let base = base?;
                let span = base.span.to(self.span(&op));
                let kind = match op.as_rule() {
                    Rule::op_transpose => ExprKind::Transpose(Box::new(base)),
                    Rule::index_group => ExprKind::Index {
                        base: Box::new(base),
                        indices: self.index_group(op)?,
                    },
                    other => unreachable!("postfix operator, got {other:?}"),
                };
                Ok(Expr { kind, span })
            })
            .map_infix(|lhs, op, rhs| {
                let lhs = lhs?;
                let rhs = rhs?;
                let span = lhs.span.to(rhs.span);
                let bin = match op.as_rule() {
                    Rule::ternary_op => {
                        let then = op
                            .into_inner()
                            .find(|q| q.as_rule() == Rule::expr)
                            .expect("`?:` holds the then-expression");
                        return Ok(Expr {
                            kind: ExprKind::Ternary {
                                cond: Box::new(lhs),
                                then: Box::new(self.expr(then)?),
                                otherwise: Box::new(rhs),
                            },
                            span,
                        });
                    }
                    Rule::op_or => BinOp::Or,
                    Rule::op_and => BinOp::And,
                    Rule::op_eq => BinOp::Eq,
                    Rule::op_ne => BinOp::Ne,
                    Rule::op_lt => BinOp::Lt,
                    Rule::op_le => BinOp::Le,
                    Rule::op_gt => BinOp::Gt,
                    Rule::op_ge => BinOp::Ge,
                    Rule::op_add => BinOp::Add,
                    Rule::op_sub => BinOp::Sub,
                    Rule::op_mul => BinOp::Mul,
                    Rule::op_div => BinOp::Div,
                    Rule::op_mod => BinOp::Mod,
                    Rule::op_intdiv => BinOp::IntDiv,
                    Rule::op_ldiv => BinOp::LeftDiv,
                    Rule::op_eltmul => BinOp::EltMul,
                    Rule::op_eltdiv => BinOp::EltDiv,
                    Rule::op_pow => BinOp::Pow,
                    Rule::op_eltpow => BinOp::EltPow,
                    other => unreachable!("infix operator, got {other:?}"),
                };
                Ok(Expr {
                    kind: ExprKind::Binary {
                        op: bin,
                        lhs: Box::new(lhs),
                        rhs: Box::new(rhs),
                    },
                    span,
                })
            })
            .parse(pair.into_inner())
    }

    fn primary(&self, pair: Pair<Rule>) -> Result<Expr> {
        let span = self.span(&pair);
        let kind = match pair.as_rule() {
            Rule::int_lit => match pair.as_str().parse::<i64>() {
                Ok(v) => ExprKind::IntLit(v),
                Err(_) => {
                    return Err(SyntaxError::IntegerTooLarge {
                        span,
                        text: pair.as_str().to_string(),
                    });
                }
            },
            Rule::real_lit => ExprKind::RealLit(
                pair.as_str()
                    .parse::<f64>()
                    .expect("the grammar only accepts valid decimal real literals"),
            ),
            Rule::ident => ExprKind::Var(pair.as_str().to_string()),
            Rule::call => return self.call(pair),
            Rule::target_call => {
                let kw = pair
                    .into_inner()
                    .next()
                    .expect("`target()` starts with `target`");
                ExprKind::Call {
                    name: self.ident(kw),
                    args: Vec::new(),
                    conditional: false,
                }
            }
            Rule::paren_expr => {
                let inner = pair
                    .into_inner()
                    .find(|q| q.as_rule() == Rule::expr)
                    .expect("parentheses hold an expression");
                let e = self.expr(inner)?;
                return Ok(Expr { kind: e.kind, span });
            }
            Rule::row_vector_lit | Rule::array_lit => {
                let rule = pair.as_rule();
                let elems = pair
                    .into_inner()
                    .filter(|q| q.as_rule() == Rule::expr)
                    .map(|q| self.expr(q))
                    .collect::<Result<Vec<_>>>()?;
                if rule == Rule::row_vector_lit {
                    ExprKind::RowVectorLit(elems)
                } else {
                    ExprKind::ArrayLit(elems)
                }
            }
            other => unreachable!("primary expression, got {other:?}"),
        };
        Ok(Expr { kind, span })
    }

    fn call(&self, pair: Pair<Rule>) -> Result<Expr> {
        let span = self.span(&pair);
        let mut inner = pair.into_inner();
        let name = self.ident(inner.next().expect("a call starts with its name"));
        if name.name == "increment_log_prob" || name.name == "get_lp" {
            return Err(SyntaxError::OldTargetSyntax {
                span: name.span,
                word: name.name,
            });
        }
        let mut args = Vec::new();
        let mut conditional = false;
        if let Some(call_args) = inner.find(|q| q.as_rule() == Rule::call_args) {
            for q in call_args.into_inner() {
                match q.as_rule() {
                    Rule::expr => args.push(self.expr(q)?),
                    Rule::cond_bar => conditional = true,
                    _ => {}
                }
            }
        }
        Ok(Expr {
            kind: ExprKind::Call {
                name,
                args,
                conditional,
            },
            span,
        })
    }

    fn index_group(&self, pair: Pair<Rule>) -> Result<Vec<Index>> {
        pair.into_inner()
            .filter(|q| q.as_rule() == Rule::index_slot)
            .map(|slot| match slot.into_inner().next() {
                None => Ok(Index::All),
                Some(index) => self.index(index),
            })
            .collect()
    }

    fn index(&self, pair: Pair<Rule>) -> Result<Index> {
        let mut lo = None;
        let mut hi = None;
        let mut colon = false;
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::expr => lo = Some(self.expr(p)?),
                Rule::range_colon => colon = true,
                Rule::index_upper => hi = Some(self.expr(first_child(p))?),
                other => unreachable!("index part, got {other:?}"),
            }
        }
        Ok(match (colon, lo, hi) {
            (false, Some(e), _) => Index::Single(e),
            (true, None, None) => Index::All,
            (true, lo, hi) => Index::Range(lo, hi),
            (false, None, _) => unreachable!("an index without `:` holds an expression"),
        })
    }
}

/// The only child of `pair` (for wrapper rules such as `trunc_lower`).
fn first_child(pair: Pair<Rule>) -> Pair<Rule> {
    pair.into_inner()
        .next()
        .expect("wrapper rule has exactly one child")
}

/// The text between the quotes of a `string_lit` pair.
fn string_body(lit: &Pair<Rule>) -> String {
    lit.clone()
        .into_inner()
        .next()
        .map(|b| b.as_str().to_string())
        .unwrap_or_default()
}

/// Position of a block in the fixed order, and its name as the user writes it.
pub(crate) fn block_info(rule: Rule) -> (usize, &'static str) {
    match rule {
        Rule::functions_block => (0, "functions"),
        Rule::data_block => (1, "data"),
        Rule::tdata_block => (2, "transformed data"),
        Rule::params_block => (3, "parameters"),
        Rule::tparams_block => (4, "transformed parameters"),
        Rule::model_block => (5, "model"),
        Rule::gq_block => (6, "generated quantities"),
        other => unreachable!("block rule, got {other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LABOUR: &str = r#"data {
  int<lower=0> N;                      // rows of the CSV, inferred
  array[N] int<lower=0, upper=1> lfp;  // CSV column
  vector[N] k5;  vector[N] k618;  vector[N] age;  vector[N] wc;
  vector[N] hc;  vector[N] lwg;   vector[N] inc;
}
transformed data {
  matrix[N, 7] X = append_col(k5, k618, age, wc, hc, lwg, inc);
}
parameters {
  real alpha;
  vector[7] beta;
}
model {
  alpha ~ normal(0, 10);
  beta ~ normal(0, 10);
  lfp ~ bernoulli_logit(alpha + X * beta);
}
"#;

    fn parse(src: &str) -> Program {
        match parse_program(src, 0) {
            Ok(p) => p,
            Err(e) => panic!("parse failed: {e} at {:?}", e.span()),
        }
    }

    /// An S-expression of `e`, so that tests can state the tree shape in one string.
    fn sx(e: &Expr) -> String {
        match &e.kind {
            ExprKind::IntLit(v) => v.to_string(),
            ExprKind::RealLit(v) => format!("{v:?}"),
            ExprKind::Var(n) => n.clone(),
            ExprKind::Binary { op, lhs, rhs } => {
                format!("({} {} {})", op.symbol(), sx(lhs), sx(rhs))
            }
            ExprKind::Unary { op, operand } => {
                let o = match op {
                    UnOp::Neg => "neg",
                    UnOp::Plus => "pos",
                    UnOp::Not => "not",
                };
                format!("({o} {})", sx(operand))
            }
            ExprKind::Call {
                name,
                args,
                conditional,
            } => {
                let args: Vec<String> = args.iter().map(sx).collect();
                let sep = if *conditional { " | " } else { " " };
                format!("({}{}{})", name.name, sep, args.join(" "))
            }
            ExprKind::Index { base, indices } => {
                let idx: Vec<String> = indices.iter().map(sx_index).collect();
                format!("(idx {} [{}])", sx(base), idx.join(", "))
            }
            ExprKind::Ternary {
                cond,
                then,
                otherwise,
            } => format!("(? {} {} {})", sx(cond), sx(then), sx(otherwise)),
            ExprKind::RowVectorLit(v) => {
                format!("[{}]", v.iter().map(sx).collect::<Vec<_>>().join(" "))
            }
            ExprKind::ArrayLit(v) => {
                format!("{{{}}}", v.iter().map(sx).collect::<Vec<_>>().join(" "))
            }
            ExprKind::Transpose(x) => format!("(' {})", sx(x)),
        }
    }

    fn sx_index(i: &Index) -> String {
        match i {
            Index::Single(e) => sx(e),
            Index::Range(lo, hi) => format!(
                "{}:{}",
                lo.as_ref().map(sx).unwrap_or_default(),
                hi.as_ref().map(sx).unwrap_or_default()
            ),
            Index::All => "all".to_string(),
        }
    }

    fn ex(src: &str) -> String {
        match parse_expression(src, 0) {
            Ok(e) => sx(&e),
            Err(err) => panic!("`{src}` failed: {err}"),
        }
    }

    /// The single statement of `model { <src> }`.
    fn stmt(src: &str) -> Stmt {
        let p = parse(&format!("model {{ {src} }}"));
        assert_eq!(p.model.len(), 1, "one statement in `{src}`");
        p.model.into_iter().next().unwrap()
    }

    #[test]
    fn labour_model_parses() {
        let p = parse(LABOUR);
        assert_eq!(p.data.len(), 9);
        assert_eq!(p.transformed_data.len(), 1);
        assert_eq!(p.parameters.len(), 2);
        assert_eq!(p.model.len(), 3);
    }

    #[test]
    fn posteriordb_models_parse() {
        let dir = std::path::Path::new("/work/shared/validation/posteriordb");
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut parsed = 0;
        for e in entries.flatten() {
            let path = e.path().join("model.stan");
            if let Ok(src) = std::fs::read_to_string(&path) {
                parsed += 1;
                if let Err(err) = parse_program(&src, 0) {
                    let s = err.span();
                    panic!("{}: {err} at {:?} {:?}", path.display(), s, &src[s.start..]);
                }
            }
        }
        assert!(
            parsed >= 10,
            "expected the posteriordb models, found {parsed}"
        );
    }

    #[test]
    fn precedence_and_associativity() {
        assert_eq!(ex("-a^2"), "(neg (^ a 2))");
        assert_eq!(ex("a - b - c"), "(- (- a b) c)");
        assert_eq!(ex("a ^ b ^ c"), "(^ a (^ b c))");
        assert_eq!(ex("a ? b : c ? d : e"), "(? a b (? c d e))");
        assert_eq!(ex("x'*y"), "(* (' x) y)");
        assert_eq!(ex("a + b * c"), "(+ a (* b c))");
        assert_eq!(ex("a * b + c"), "(+ (* a b) c)");
        assert_eq!(ex("a || b && c"), "(|| a (&& b c))");
        assert_eq!(ex("a == b < c"), "(== a (< b c))");
        assert_eq!(ex("a < b + 1"), "(< a (+ b 1))");
        assert_eq!(ex("!a && b"), "(&& (not a) b)");
        assert_eq!(ex("a * b \\ c"), "(* a (\\ b c))");
        assert_eq!(ex("a \\ b .* c"), "(\\ a (.* b c))");
        assert_eq!(ex("a ./ b * c"), "(* (./ a b) c)");
        assert_eq!(ex("-a .^ 2"), "(neg (.^ a 2))");
        assert_eq!(ex("a % b %/% c"), "(%/% (% a b) c)");
        assert_eq!(ex("+a >= -b"), "(>= (pos a) (neg b))");
        assert_eq!(ex("a != b || c <= d"), "(|| (!= a b) (<= c d))");
        assert_eq!(ex("(a + b) * c"), "(* (+ a b) c)");
        assert_eq!(ex("2 ^ -1"), "(^ 2 (neg 1))");
        assert_eq!(ex("a > b ? 1 : 0"), "(? (> a b) 1 0)");
        assert_eq!(ex("x[i]'"), "(' (idx x [i]))");
        assert_eq!(ex("-x[1]^2"), "(neg (^ (idx x [1]) 2))");
    }

    #[test]
    fn literals() {
        assert_eq!(ex("1.5"), "1.5");
        assert_eq!(ex(".5"), "0.5");
        assert_eq!(ex("2."), "2.0");
        assert_eq!(ex("1e-3"), "0.001");
        assert_eq!(ex("1.2E+4"), "12000.0");
        assert_eq!(ex("42"), "42");
        assert_eq!(ex("[a, b]"), "[a b]");
        assert_eq!(ex("[[1, 2], [3, 4]]"), "[[1 2] [3 4]]");
        assert_eq!(ex("{a, b}"), "{a b}");
        assert_eq!(ex("9223372036854775807"), "9223372036854775807");
        let err = parse_expression("9223372036854775808", 0).unwrap_err();
        assert!(
            matches!(err, SyntaxError::IntegerTooLarge { .. }),
            "{err:?}"
        );
        assert_eq!(err.span(), Span::new(0, 0, 19));
    }

    #[test]
    fn calls_and_conditional_calls() {
        assert_eq!(ex("f()"), "(f )");
        assert_eq!(ex("f(a, b + 1)"), "(f a (+ b 1))");
        assert_eq!(
            ex("normal_lpdf(y | mu, sigma)"),
            "(normal_lpdf | y mu sigma)"
        );
        assert_eq!(ex("std_normal_lpdf(y |)"), "(std_normal_lpdf | y)");
        assert_eq!(ex("f(a || b)"), "(f (|| a b))");
        assert_eq!(ex("target()"), "(target )");
        let e = parse_expression("normal_lpdf(y | mu, sigma)", 0).unwrap();
        let ExprKind::Call { name, args, .. } = &e.kind else {
            panic!("call expected")
        };
        assert_eq!(name.span, Span::new(0, 0, 11));
        assert_eq!(args[0].span, Span::new(0, 12, 13));
        assert_eq!(e.span, Span::new(0, 0, 26));
    }

    #[test]
    fn indexing_forms() {
        assert_eq!(ex("x[i, j]"), "(idx x [i, j])");
        assert_eq!(ex("x[i][j]"), "(idx (idx x [i]) [j])");
        assert_eq!(ex("x[lo:hi]"), "(idx x [lo:hi])");
        assert_eq!(ex("x[lo:]"), "(idx x [lo:])");
        assert_eq!(ex("x[:hi]"), "(idx x [:hi])");
        assert_eq!(ex("x[:]"), "(idx x [all])");
        assert_eq!(ex("x[, j]"), "(idx x [all, j])");
        assert_eq!(ex("x[i, ]"), "(idx x [i, all])");
        assert_eq!(ex("X[ : , i - 1]"), "(idx X [all, (- i 1)])");
        assert_eq!(ex("x[2:N - 1]"), "(idx x [2:(- N 1)])");
        assert_eq!(ex("x[idx[1]]"), "(idx x [(idx idx [1])])");
    }

    #[test]
    fn spans_are_byte_offsets() {
        let e = parse_expression("a + b*c", 0).unwrap();
        assert_eq!(e.span, Span::new(0, 0, 7));
        let ExprKind::Binary { rhs, .. } = &e.kind else {
            panic!("binary expected")
        };
        assert_eq!(rhs.span, Span::new(0, 4, 7));
        let e = parse_expression("-(a)", 3).unwrap();
        assert_eq!(e.span, Span::new(3, 0, 4));
        let p = parse("data { int N; }\nmodel { }\n");
        assert_eq!(p.block_spans.data, Some(Span::new(0, 0, 4)));
        assert_eq!(p.block_spans.model, Some(Span::new(0, 16, 21)));
        assert_eq!(p.block_spans.parameters, None);
        assert_eq!(p.data[0].span, Span::new(0, 7, 13));
        assert_eq!(p.data[0].name.span, Span::new(0, 11, 12));
    }

    #[test]
    fn all_blocks_in_order() {
        let p = parse(
            "include \"lib.bayes\";\nfunctions { real f(real x) { return x; } }\ndata { int N; }\n\
             transformed data { int M = N; }\nparameters { real mu; }\n\
             transformed parameters { real nu = mu; }\nmodel { mu ~ normal(0, 1); }\n\
             generated quantities { real z = mu; }",
        );
        assert_eq!(p.includes.len(), 1);
        assert_eq!(p.includes[0].path, "lib.bayes");
        assert_eq!(p.functions.len(), 1);
        assert_eq!(p.transformed_data.len(), 1);
        assert_eq!(p.transformed_parameters.len(), 1);
        assert_eq!(p.generated_quantities.len(), 1);
        let b = &p.block_spans;
        for s in [
            b.functions,
            b.data,
            b.transformed_data,
            b.parameters,
            b.transformed_parameters,
            b.model,
            b.generated_quantities,
        ] {
            assert!(s.is_some());
        }
        let tp = b.transformed_parameters.unwrap();
        assert_eq!(
            &"include \"lib.bayes\";\nfunctions { real f(real x) { return x; } }\ndata { int N; }\n\
             transformed data { int M = N; }\nparameters { real mu; }\n\
             transformed parameters { real nu = mu; }"[tp.start..tp.end],
            "transformed parameters"
        );
        assert_eq!(parse("").data.len(), 0);
        assert_eq!(
            parse("// only a comment\n/* and\nanother */").model.len(),
            0
        );
    }

    #[test]
    fn types_and_constraints() {
        let p = parse(
            "data {\n int<lower=0> N;\n real<lower=0, upper=1 - a> p;\n real<upper=b, lower=a> q;\n\
             vector<lower=0>[N] v;\n row_vector[N] r;\n matrix<lower=-1, upper=1>[N, 3] m;\n\
             simplex[K] s;\n ordered[K] o;\n positive_ordered[K] po;\n cholesky_factor_corr[K] lc;\n\
             cholesky_factor_cov[K] lv;\n cov_matrix[K] cv;\n corr_matrix[K] cr;\n\
             array[J, 2] vector<offset=mu, multiplier=tau>[K] z;\n real<lower=(a > b ? a : b)> w;\n}",
        );
        let d = &p.data;
        assert_eq!(d.len(), 15);
        assert_eq!(d[0].ty.base, SizedBase::Int);
        assert_eq!(sx(d[0].ty.constraint.lower.as_ref().unwrap()), "0");
        assert_eq!(sx(d[1].ty.constraint.upper.as_ref().unwrap()), "(- 1 a)");
        assert_eq!(sx(d[2].ty.constraint.lower.as_ref().unwrap()), "a");
        assert_eq!(sx(d[2].ty.constraint.upper.as_ref().unwrap()), "b");
        assert!(matches!(&d[3].ty.base, SizedBase::Vector(n) if sx(n) == "N"));
        assert!(matches!(&d[4].ty.base, SizedBase::RowVector(_)));
        assert!(matches!(&d[5].ty.base, SizedBase::Matrix(r, c) if sx(r) == "N" && sx(c) == "3"));
        assert_eq!(sx(d[5].ty.constraint.lower.as_ref().unwrap()), "(neg 1)");
        assert!(matches!(&d[6].ty.base, SizedBase::Simplex(_)));
        assert!(matches!(&d[7].ty.base, SizedBase::Ordered(_)));
        assert!(matches!(&d[8].ty.base, SizedBase::PositiveOrdered(_)));
        assert!(matches!(&d[9].ty.base, SizedBase::CholeskyFactorCorr(_)));
        assert!(matches!(&d[10].ty.base, SizedBase::CholeskyFactorCov(_)));
        assert!(matches!(&d[11].ty.base, SizedBase::CovMatrix(_)));
        assert!(matches!(&d[12].ty.base, SizedBase::CorrMatrix(_)));
        let z = &d[13].ty;
        assert_eq!(z.array_dims.iter().map(sx).collect::<Vec<_>>(), ["J", "2"]);
        assert_eq!(sx(z.constraint.offset.as_ref().unwrap()), "mu");
        assert_eq!(sx(z.constraint.multiplier.as_ref().unwrap()), "tau");
        assert!(z.constraint.lower.is_none());
        assert_eq!(
            sx(d[14].ty.constraint.lower.as_ref().unwrap()),
            "(? (> a b) a b)"
        );
        assert_eq!(d[14].name.name, "w");
    }

    #[test]
    fn bad_constraints_are_rejected() {
        let e = parse_program("data { real<lower=0, lower=1> x; }", 0).unwrap_err();
        assert!(matches!(e, SyntaxError::InvalidConstraint { .. }), "{e:?}");
        let e = parse_program("data { real<lower=0, offset=1> x; }", 0).unwrap_err();
        assert!(matches!(e, SyntaxError::InvalidConstraint { .. }), "{e:?}");
        assert_eq!(e.span(), Span::new(0, 21, 27));
        // A top-level comparison inside `<...>` is not a bound expression.
        assert!(parse_program("data { real<lower=a > b> x; }", 0).is_err());
    }

    #[test]
    fn declarations_with_initialisers() {
        let s = stmt("vector[N] mu = X * beta + alpha;");
        let StmtKind::Decl(d) = s.kind else {
            panic!("declaration expected")
        };
        assert_eq!(d.name.name, "mu");
        assert_eq!(sx(d.init.as_ref().unwrap()), "(+ (* X beta) alpha)");
        let s = stmt("real x;");
        assert!(matches!(s.kind, StmtKind::Decl(VarDecl { init: None, .. })));
    }

    #[test]
    fn assignments() {
        let cases = [
            ("x = 1;", AssignOp::Assign),
            ("x += 1;", AssignOp::AddAssign),
            ("x -= 1;", AssignOp::SubAssign),
            ("x *= 1;", AssignOp::MulAssign),
            ("x /= 1;", AssignOp::DivAssign),
            ("x .*= 1;", AssignOp::EltMulAssign),
            ("x ./= 1;", AssignOp::EltDivAssign),
        ];
        for (src, want) in cases {
            let StmtKind::Assign { op, lhs, rhs } = stmt(src).kind else {
                panic!("assignment expected for {src}")
            };
            assert_eq!(op, want, "{src}");
            assert_eq!(lhs.name.name, "x");
            assert_eq!(sx(&rhs), "1");
        }
        let StmtKind::Assign { lhs, .. } = stmt("x[i, j] = 0;").kind else {
            panic!("assignment expected")
        };
        assert_eq!(lhs.indices.len(), 1);
        assert_eq!(lhs.indices[0].len(), 2);
        let StmtKind::Assign { lhs, .. } = stmt("x[i][2:3] = 0;").kind else {
            panic!("assignment expected")
        };
        assert_eq!(lhs.indices.len(), 2);
        assert_eq!(sx_index(&lhs.indices[1][0]), "2:3");
        assert_eq!(lhs.span, Span::new(0, 8, 17));
    }

    #[test]
    fn tilde_and_target() {
        let StmtKind::Tilde {
            lhs,
            dist,
            args,
            truncation,
        } = stmt("y[n] ~ normal(mu, sigma);").kind
        else {
            panic!("tilde expected")
        };
        assert_eq!(sx(&lhs), "(idx y [n])");
        assert_eq!(dist.name, "normal");
        assert_eq!(args.len(), 2);
        assert!(truncation.is_none());
        let StmtKind::Tilde { truncation, .. } = stmt("y ~ normal(0, 1) T[0, ];").kind else {
            panic!("tilde expected")
        };
        let t = truncation.unwrap();
        assert_eq!(sx(t.lower.as_ref().unwrap()), "0");
        assert!(t.upper.is_none());
        let StmtKind::Tilde { truncation, .. } = stmt("y ~ normal(0, 1) T[, U];").kind else {
            panic!("tilde expected")
        };
        let t = truncation.unwrap();
        assert!(t.lower.is_none());
        assert_eq!(sx(t.upper.as_ref().unwrap()), "U");
        let StmtKind::Tilde { truncation, .. } = stmt("y ~ normal(0, 1) T[L, U];").kind else {
            panic!("tilde expected")
        };
        assert!(truncation.unwrap().upper.is_some());
        let StmtKind::TargetPlus(e) = stmt("target += normal_lpdf(y | 0, 1);").kind else {
            panic!("target += expected")
        };
        assert_eq!(sx(&e), "(normal_lpdf | y 0 1)");
        // `T` is an ordinary name outside truncations.
        let StmtKind::Tilde { lhs, .. } = stmt("y[T] ~ std_normal();").kind else {
            panic!("tilde expected")
        };
        assert_eq!(sx(&lhs), "(idx y [T])");
    }

    #[test]
    fn control_flow() {
        let StmtKind::For { var, lo, hi, body } = stmt("for (i in 1:N) y[i] ~ normal(0, 1);").kind
        else {
            panic!("for expected")
        };
        assert_eq!(var.name, "i");
        assert_eq!((sx(&lo), sx(&hi)), ("1".to_string(), "N".to_string()));
        assert!(matches!(body.kind, StmtKind::Tilde { .. }));
        let StmtKind::For { lo, .. } = stmt("for (t in (K + 1) : T) { }").kind else {
            panic!("for expected")
        };
        assert_eq!(sx(&lo), "(+ K 1)");
        let StmtKind::ForEach {
            var, collection, ..
        } = stmt("for (x in xs) { print(x); }").kind
        else {
            panic!("foreach expected")
        };
        assert_eq!((var.name.as_str(), sx(&collection).as_str()), ("x", "xs"));
        let StmtKind::While { cond, body } =
            stmt("while (n < 10) { n += 1; break; continue; }").kind
        else {
            panic!("while expected")
        };
        assert_eq!(sx(&cond), "(< n 10)");
        let StmtKind::Block(inner) = body.kind else {
            panic!("block expected")
        };
        assert_eq!(inner.len(), 3);
        assert_eq!(inner[1].kind, StmtKind::Break);
        assert_eq!(inner[2].kind, StmtKind::Continue);
        let StmtKind::If {
            cond,
            then,
            otherwise,
        } = stmt("if (a) x = 1; else if (b) x = 2; else x = 3;").kind
        else {
            panic!("if expected")
        };
        assert_eq!(sx(&cond), "a");
        assert!(matches!(then.kind, StmtKind::Assign { .. }));
        let other = otherwise.unwrap();
        assert!(matches!(
            other.kind,
            StmtKind::If {
                otherwise: Some(_),
                ..
            }
        ));
        let StmtKind::If { otherwise, .. } = stmt("if (a) { }").kind else {
            panic!("if expected")
        };
        assert!(otherwise.is_none());
    }

    #[test]
    fn print_reject_call_statements() {
        let StmtKind::Print(args) = stmt("print(\"x = \", x, \"\");").kind else {
            panic!("print expected")
        };
        assert_eq!(args.len(), 3);
        assert!(
            matches!(&args[0], PrintArg::Str(s, sp) if s == "x = " && *sp == Span::new(0, 14, 20))
        );
        assert!(matches!(&args[1], PrintArg::Expr(e) if sx(e) == "x"));
        assert!(matches!(&args[2], PrintArg::Str(s, _) if s.is_empty()));
        let StmtKind::Reject(args) = stmt("reject(\"sigma must be positive: \", sigma);").kind
        else {
            panic!("reject expected")
        };
        assert_eq!(args.len(), 2);
        let StmtKind::Expr(e) = stmt("my_void(x, 2);").kind else {
            panic!("call statement expected")
        };
        assert_eq!(sx(&e), "(my_void x 2)");
    }

    #[test]
    fn functions_block() {
        let p = parse(
            "functions {\n  real foo(real x, data vector y);\n  real foo(real x, data vector y) { return x + sum(y); }\n\
             void bar(array[] int n, array[,] real z, matrix m, row_vector r) { print(n); return; }\n\
             array[] real baz(int k) { return {1.0}; }\n}",
        );
        let f = &p.functions;
        assert_eq!(f.len(), 4);
        assert!(f[0].body.is_none());
        assert_eq!(f[0].name.name, "foo");
        assert_eq!(f[0].params.len(), 2);
        assert!(!f[0].params[0].data_only);
        assert!(f[0].params[1].data_only);
        assert_eq!(f[0].params[1].ty.base, UnsizedBase::Vector);
        assert!(matches!(
            &f[0].return_type,
            ReturnType::Type(UnsizedType {
                base: UnsizedBase::Real,
                array_dims: 0,
                ..
            })
        ));
        assert!(f[1].body.is_some());
        assert_eq!(f[2].return_type, ReturnType::Void);
        assert_eq!(f[2].params[0].ty.array_dims, 1);
        assert_eq!(f[2].params[0].ty.base, UnsizedBase::Int);
        assert_eq!(f[2].params[1].ty.array_dims, 2);
        assert_eq!(f[2].params[2].ty.base, UnsizedBase::Matrix);
        assert_eq!(f[2].params[3].ty.base, UnsizedBase::RowVector);
        let Some(Stmt {
            kind: StmtKind::Block(body),
            ..
        }) = &f[2].body
        else {
            panic!("body expected")
        };
        assert_eq!(body[1].kind, StmtKind::Return(None));
        assert!(matches!(
            &f[3].return_type,
            ReturnType::Type(UnsizedType { array_dims: 1, .. })
        ));
    }

    #[test]
    fn comments_and_identifiers() {
        let p = parse(
            "/* header\n comment */ data { int N; // trailing\n real x_1; real _y; real inner; real T; }",
        );
        let names: Vec<&str> = p.data.iter().map(|d| d.name.name.as_str()).collect();
        assert_eq!(names, ["N", "x_1", "_y", "inner", "T"]);
        assert!(parse_program("data { real __x; }", 0).is_err());
        assert!(parse_program("data { real 1x; }", 0).is_err());
        let e = parse_program("data { real lower; }", 0).unwrap_err();
        assert!(matches!(&e, SyntaxError::ReservedWord { word, .. } if word == "lower"));
        assert_eq!(e.span(), Span::new(0, 12, 17));
        let e = parse_program("model { for (in in 1:3) { } }", 0).unwrap_err();
        assert!(
            matches!(&e, SyntaxError::ReservedWord { word, .. } if word == "in"),
            "{e:?}"
        );
    }

    #[test]
    fn old_syntax_is_rejected_with_rewrites() {
        let e = parse_program("model { x <- 3; }", 0).unwrap_err();
        assert_eq!(
            e,
            SyntaxError::OldAssignment {
                span: Span::new(0, 10, 12)
            }
        );
        let e = parse_program("model { increment_log_prob(normal_log(y, 0, 1)); }", 0).unwrap_err();
        assert!(
            matches!(&e, SyntaxError::OldTargetSyntax { word, .. } if word == "increment_log_prob")
        );
        let e = parse_program("data { real<lower=0> x[N, 2]; }", 0).unwrap_err();
        assert_eq!(
            e,
            SyntaxError::OldArraySyntax {
                span: Span::new(0, 22, 28),
                rewrite: "array[N, 2] real<lower=0> x".to_string()
            }
        );
    }

    #[test]
    fn block_order_and_duplicates() {
        let e = parse_program("model { }\nparameters { }", 0).unwrap_err();
        assert_eq!(
            e,
            SyntaxError::BlockOutOfOrder {
                block: "parameters",
                span: Span::new(0, 10, 20),
                after: "model",
                after_span: Span::new(0, 0, 5),
            }
        );
        let e = parse_program("data { }\ndata { }", 0).unwrap_err();
        assert!(matches!(
            e,
            SyntaxError::DuplicateBlock { block: "data", .. }
        ));
    }

    #[test]
    fn error_positions() {
        let e =
            parse_program("model {\n  x ~ normal(0, 1)\n  y ~ normal(0, 1);\n}", 0).unwrap_err();
        assert!(matches!(e, SyntaxError::MissingSemicolon { .. }), "{e:?}");
        assert_eq!(e.span(), Span::new(0, 26, 26));
        let e = parse_program("paramters {\n real x;\n}", 0).unwrap_err();
        assert_eq!(
            e,
            SyntaxError::UnknownBlock {
                span: Span::new(0, 0, 9),
                name: "paramters".to_string(),
                suggestion: Some("parameters"),
            }
        );
        let e = parse_program("transformed paramters { }", 0).unwrap_err();
        assert!(
            matches!(
                &e,
                SyntaxError::UnknownBlock {
                    suggestion: Some("transformed parameters"),
                    ..
                }
            ),
            "{e:?}"
        );
        let e = parse_program("model {\n  x ~ normal(0, 1);\n", 0).unwrap_err();
        assert!(
            matches!(e, SyntaxError::Unclosed { delimiter: '{', open, at_end: true, .. } if open == Span::new(0, 6, 7)),
            "{e:?}"
        );
        let e = parse_program("model { x = ; }", 0).unwrap_err();
        let SyntaxError::Unexpected {
            span,
            expected,
            found,
            ..
        } = e
        else {
            panic!("unexpected-token error expected")
        };
        assert_eq!(span, Span::new(0, 12, 13));
        assert_eq!(found, "`;`");
        assert!(expected.contains(&"an expression"), "{expected:?}");
    }

    #[test]
    fn repl_statements() {
        let stmts = parse_statements("real x = 2;\ny ~ normal(x, 1); print(x);", 4).unwrap();
        assert_eq!(stmts.len(), 3);
        assert!(matches!(&stmts[0].kind, StmtKind::Decl(d) if d.name.name == "x"));
        assert!(matches!(&stmts[1].kind, StmtKind::Tilde { .. }));
        assert_eq!(stmts[1].span, Span::new(4, 12, 29));
        assert!(parse_statements("", 0).unwrap().is_empty());
        let e = parse_statements("x = 1\ny = 2;", 0).unwrap_err();
        assert!(matches!(e, SyntaxError::MissingSemicolon { .. }), "{e:?}");
    }

    #[test]
    fn completeness_of_repl_input() {
        assert!(input_is_complete("x = 1;"));
        assert!(!input_is_complete("model {"));
        assert!(!input_is_complete("f(a,\n b"));
        assert!(input_is_complete("f(a,\n b)"));
        assert!(input_is_complete("x = 1; // {"));
        assert!(input_is_complete("print(\"(\");"));
        assert!(!input_is_complete("x = 1; /* unfinished"));
        assert!(input_is_complete("}"));
    }

    #[test]
    fn edit_distance_values() {
        use crate::syntax::error::edit_distance;
        assert_eq!(edit_distance("paramters", "parameters"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
    }

    #[test]
    fn nesting_limit() {
        let ok = format!("{}x{}", "(".repeat(100), ")".repeat(100));
        assert_eq!(ex(&ok), "x");
        let deep = format!("{}x{}", "(".repeat(101), ")".repeat(101));
        let e = parse_expression(&deep, 0).unwrap_err();
        assert_eq!(
            e,
            SyntaxError::TooDeeplyNested {
                span: Span::new(0, 100, 101)
            }
        );
    }

    #[test]
    fn operator_chain_limit() {
        for chain in [
            format!("{}x", "-".repeat(1000)),
            format!("x{}", "^x".repeat(1000)),
        ] {
            assert!(parse_expression(&chain, 0).is_ok());
        }
        let e = parse_expression(&format!("{}x", "-".repeat(5000)), 0).unwrap_err();
        assert_eq!(
            e,
            SyntaxError::TooManyOperators {
                span: Span::new(0, 1000, 1001)
            }
        );
        let e = parse_expression(&format!("x{}", "^x".repeat(5000)), 0).unwrap_err();
        assert!(matches!(e, SyntaxError::TooManyOperators { .. }));
        // An earlier syntax error wins over the guard (random text trips it only later on).
        let src = format!("garbage here\nmodel {{ real x = {}1; }}", "-".repeat(5000));
        let e = parse_program(&src, 0).unwrap_err();
        assert!(
            matches!(e, SyntaxError::Unexpected { span, .. } if span.start == 0),
            "{e:?}"
        );
        let src = format!("model {{ real x = {}1; }}", "-".repeat(5000));
        let e = parse_program(&src, 0).unwrap_err();
        assert!(matches!(e, SyntaxError::TooManyOperators { .. }), "{e:?}");
        // a long sum in a valid program, also inside a call
        for body in [
            format!("target += 0{};", " + 1".repeat(1000)),
            format!("target += log(0{});", " + 1".repeat(1000)),
        ] {
            let src = format!("parameters {{ real x; }} model {{ x ~ normal(0, 1); {body} }}");
            let e = parse_program(&src, 0).unwrap_err();
            assert!(matches!(e, SyntaxError::TooManyOperators { .. }), "{e:?}");
        }
        // The count restarts at each statement.
        let many = "x = -1;\n".repeat(2000);
        assert_eq!(
            parse(&format!("model {{ real x; {many} }}")).model.len(),
            2001
        );
    }

    #[test]
    fn byte_order_mark_and_crlf() {
        let p = parse("\u{FEFF}data {\r\n  int N;\r\n}\r\n");
        assert_eq!(p.data.len(), 1);
    }

    #[test]
    fn unterminated_comment_and_string() {
        let e = parse_program("model { /* never closed\n }", 0).unwrap_err();
        assert_eq!(
            e,
            SyntaxError::UnterminatedComment {
                span: Span::new(0, 8, 10)
            }
        );
        let e = parse_program("model { print(\"abc); }", 0).unwrap_err();
        assert_eq!(
            e,
            SyntaxError::UnterminatedString {
                span: Span::new(0, 14, 15)
            }
        );
    }

    /// User input never panics: every prefix and every one-character deletion of valid programs
    /// either parses or gives an error whose diagnostic renders against the source.
    #[test]
    fn damaged_programs_never_panic() {
        use crate::syntax::report::{ToDiagnostic, render_plain};
        use crate::syntax::source::SourceMap;
        let sources = [
            LABOUR,
            "functions { real f(real x, data vector y) { if (x > 0) return x; else { while (1) break; } return -x^2; } }\n\
             parameters { real<lower=0, upper=1 - a> p; array[2] vector<offset=0, multiplier=2>[3] z; }\n\
             model { for (i in 1:N) y[i, :] ~ normal(x'[2:], s) T[, 1e3]; target += f(.5) ? a : b; print(\"x\", x); }",
        ];
        let mut errors = 0;
        for src in sources {
            let cuts: Vec<usize> = (0..=src.len())
                .filter(|&i| src.is_char_boundary(i))
                .collect();
            let mut variants: Vec<String> = cuts.iter().map(|&i| src[..i].to_string()).collect();
            for w in cuts.windows(2) {
                variants.push(format!("{}{}", &src[..w[0]], &src[w[1]..]));
            }
            for v in variants {
                let mut map = SourceMap::new();
                let file = map.add("m.bayes", v.clone());
                if let Err(e) = parse_program(&v, file) {
                    errors += 1;
                    let out = render_plain(&map, &e.to_diagnostic());
                    assert!(
                        out.contains("m.bayes:"),
                        "diagnostic did not render for {v:?}:\n{out}"
                    );
                }
            }
        }
        assert!(
            errors > 500,
            "most damaged programs should fail, got {errors}"
        );
    }
}
