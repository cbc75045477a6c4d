//! Text → AST: runs the pest grammar (`grammar/bayes.pest`) and builds [`crate::syntax::ast`]
//! nodes, resolving operator precedence with a Pratt parser.

use std::sync::LazyLock;

use pest::Parser;
use pest::iterators::Pair;
use pest::pratt_parser::{Assoc, Op, PrattParser};

use super::ast::*;
use super::error::SyntaxError;
use super::span::{FileId, Span};

mod complete;
pub use complete::{Unclosed, first_unclosed, input_is_complete};

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
        let mut annotations = Vec::new();
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::annotation => {
                    let span = self.span(&p);
                    let mut inner = p.into_inner();
                    let name = self.ident(inner.next().expect("annotation has a name"));
                    let value = inner
                        .find(|q| matches!(q.as_rule(), Rule::real_lit | Rule::int_lit))
                        .map(|q| q.as_str().parse::<f64>().unwrap_or(f64::NAN));
                    annotations.push(Annotation { name, value, span });
                }
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
            annotations,
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
            Rule::int_lit => {
                match crate::syntax::ast::int_in_range(pair.as_str().parse::<i64>().ok()) {
                    Some(v) => ExprKind::IntLit(v),
                    None => {
                        return Err(SyntaxError::IntegerTooLarge {
                            span,
                            text: pair.as_str().to_string(),
                        });
                    }
                }
            }
            Rule::real_lit => {
                let v = pair
                    .as_str()
                    .parse::<f64>()
                    .expect("the grammar only accepts valid decimal real literals");
                if v.is_infinite() {
                    return Err(SyntaxError::RealTooLarge {
                        span,
                        text: pair.as_str().to_string(),
                    });
                }
                ExprKind::RealLit(v)
            }
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
mod tests;
