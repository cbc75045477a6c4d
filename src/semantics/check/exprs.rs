//! Expressions: names, operators, indexing, and the names offered in did-you-mean hints.

use super::*;

impl<'p> Checker<'p> {
    pub(super) fn undeclared(&mut self, name: &str, span: Span) {
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

    /// The declared sizes of `e` when it is a variable whose sizes are all integer literals
    /// (outermost first), as "3" or "2 × 3".
    pub(super) fn literal_sizes(&self, e: &Expr) -> Option<String> {
        let ExprKind::Var(name) = &e.kind else {
            return None;
        };
        let info = self.scopes.lookup(name)?;
        if info.sizes.is_empty() || info.sizes.iter().any(|s| s.parse::<u64>().is_err()) {
            return None;
        }
        Some(info.sizes.join(" × "))
    }

    /// [`Self::literal_sizes`], also for a vector literal `[a, b, c]` or its transpose (its
    /// element count).
    pub(super) fn value_literal_sizes(&self, e: &Expr) -> Option<String> {
        let flat = |es: &[Expr]| {
            es.iter()
                .all(|x| !matches!(x.kind, ExprKind::RowVectorLit(_)))
                .then(|| es.len().to_string())
        };
        match &e.kind {
            ExprKind::RowVectorLit(es) => flat(es),
            ExprKind::Transpose(inner) => match &inner.kind {
                ExprKind::RowVectorLit(es) => flat(es),
                _ => None,
            },
            _ => self.literal_sizes(e),
        }
    }

    /// Reports [`SemanticError::LiteralSizeMismatch`] when `a` and `b` are variables declared
    /// with different literal sizes (issue 13, item 9: such a model used to fail only at run
    /// time, as "initialisation failed").
    pub(super) fn literal_sizes_agree(&mut self, a: &Expr, b: &Expr, context: &str, span: Span) {
        if let (Some(x), Some(y)) = (self.literal_sizes(a), self.literal_sizes(b))
            && x != y
        {
            self.err(SemanticError::LiteralSizeMismatch {
                lhs: pretty::expr(a),
                lhs_size: x,
                rhs: pretty::expr(b),
                rhs_size: y,
                context: context.to_string(),
                span,
            });
        }
    }

    /// The literal sizes of the dimensions a variable `name` has (outermost first: array
    /// dimensions, then the vector's length or the matrix's rows and columns; `None` where a
    /// size is not an integer literal), with its declaration's span. `None` for an undeclared
    /// name or one without declared sizes (function arguments, loop variables).
    pub(super) fn declared_dims(&self, name: &str) -> Option<(Vec<Option<i64>>, Span)> {
        let info = self.scopes.lookup(name)?;
        if info.sizes.is_empty() {
            return None;
        }
        let mut dims: Vec<Option<i64>> = info.known.clone();
        let expected = info.ty.dims
            + match info.ty.base {
                Base::Int | Base::Real => 0,
                Base::Vector | Base::RowVector => 1,
                Base::Matrix => 2,
            };
        // `cov_matrix[K]`, `cholesky_factor_corr[K]`, …: one size for both dimensions
        if info.ty.base == Base::Matrix && dims.len() + 1 == expected {
            dims.push(*dims.last()?);
        }
        (dims.len() == expected).then_some((dims, info.decl_span))
    }

    /// The literal sizes of the dimensions `e` has ([`Self::declared_dims`]) when it is a
    /// variable or a variable indexed with literal positions, ranges and `:` (`x[1]`,
    /// `x[2:3]`), with the variable's name and declaration; `None` when they cannot be
    /// followed.
    pub(super) fn literal_dims(&self, e: &Expr) -> Option<(String, Vec<Option<i64>>, Span)> {
        match &e.kind {
            ExprKind::Var(name) => {
                let (dims, decl) = self.declared_dims(name)?;
                Some((name.clone(), dims, decl))
            }
            ExprKind::Index { base, indices } => {
                let (name, dims, decl) = self.literal_dims(base)?;
                Some((name, remaining_dims(&dims, indices)?, decl))
            }
            _ => None,
        }
    }

    /// Reports [`SemanticError::IndexOutOfRange`] for the first literal index (or literal bound
    /// of a range known not to be empty: `a:b` with `b < a` selects nothing, Stan's rule) of
    /// `indices`, one bracket group applied to variable `name` whose dimensions have
    /// the literal sizes `dims` ([`Self::literal_dims`]), that is below 1 or above its
    /// dimension's size: such an expression fails at every evaluation.
    pub(super) fn check_literal_indices(
        &mut self,
        name: &str,
        dims: &[Option<i64>],
        decl_span: Span,
        indices: &[Index],
    ) {
        for (ix, size) in indices.iter().zip(dims) {
            let bounds: Vec<&Expr> = match ix {
                Index::Single(e) => vec![e],
                // `a:b` with `b < a` is empty (and valid); a bound is out of range only when
                // the range is known not to be empty
                Index::Range(lo, hi) => {
                    let a = lo.as_ref().map_or(Some(1), |l| self.size_value(l));
                    let b = hi.as_ref().map_or(*size, |h| self.size_value(h));
                    if !matches!((a, b), (Some(a), Some(b)) if b >= a) {
                        continue;
                    }
                    lo.iter().chain(hi.iter()).collect()
                }
                Index::All => Vec::new(),
            };
            for e in bounds {
                let Some(i) = const_int(e) else { continue };
                if i < 1 || size.is_some_and(|n| i > n) {
                    self.err(SemanticError::IndexOutOfRange {
                        name: name.to_string(),
                        index: i,
                        size: *size,
                        span: e.span,
                        decl_span,
                    });
                    return;
                }
            }
        }
    }

    /// The type of `e`, or `None` after reporting an error in it.
    pub(super) fn expr(&mut self, e: &Expr) -> Option<Type> {
        match &e.kind {
            ExprKind::IntLit(_) => Some(Type::INT),
            ExprKind::RealLit(_) => Some(Type::REAL),
            ExprKind::Var(name) => match self.scopes.lookup(name) {
                Some(info) => {
                    if info.origin == Origin::ImputedData
                        && self.func.is_none()
                        && matches!(
                            self.block,
                            Block::Data | Block::TransformedData | Block::Parameters
                        )
                    {
                        let err = SemanticError::ImputedTooEarly {
                            name: name.clone(),
                            block: self.block.name().into(),
                            span: e.span,
                            decl_span: info.decl_span,
                        };
                        let ty = info.ty;
                        self.err(err);
                        return Some(ty);
                    }
                    if matches!(self.block, Block::TransformedParameters | Block::Model)
                        && self.func.is_none()
                    {
                        self.used_in_density.insert(name.clone());
                    }
                    Some(info.ty)
                }
                None => {
                    self.undeclared(name, e.span);
                    None
                }
            },
            ExprKind::Binary { op, lhs, rhs } => {
                let l = self.expr(lhs);
                // `a && b` evaluates `b` only when `a` is true, `a || b` only when it is false
                let r = match op {
                    BinOp::And | BinOp::Or => {
                        let runs = self
                            .guard_value(lhs)
                            .map(|v| v.truth() == (*op == BinOp::And));
                        self.guarded(runs, |c| c.expr(rhs))
                    }
                    _ => self.expr(rhs),
                };
                let (l, r) = (l?, r?);
                match operators::binary(*op, l, r) {
                    Ok(t) => {
                        if matches!(op, BinOp::IntDiv | BinOp::Mod | BinOp::Div)
                            && l.is_int()
                            && r.is_int()
                            && matches!(rhs.kind, ExprKind::IntLit(0))
                        {
                            self.err(SemanticError::DivisionByZero {
                                expr: pretty::expr(e),
                                span: e.span,
                            });
                        }
                        if matches!(op, BinOp::Add | BinOp::Sub | BinOp::EltMul | BinOp::EltDiv)
                            && !l.is_scalar()
                            && !r.is_scalar()
                        {
                            self.literal_sizes_agree(
                                lhs,
                                rhs,
                                &format!("`{}`", pretty::expr(e)),
                                e.span,
                            );
                        }
                        if matches!(
                            op,
                            BinOp::Add | BinOp::Sub | BinOp::EltMul | BinOp::EltDiv | BinOp::Mul
                        ) && !l.is_scalar()
                            && !r.is_scalar()
                        {
                            self.check_binary_sizes(e, *op, lhs, rhs);
                        }
                        if matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul)
                            && l.is_int()
                            && r.is_int()
                        {
                            self.int_overflow(e, lhs, rhs);
                        }
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
                CallType::Value(t) => {
                    self.check_call_sizes(e, &name.name, args);
                    Some(t)
                }
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
                let r = self.apply_indices(t, indices, e.span);
                if r.is_some()
                    && let Some((name, dims, decl)) = self.literal_dims(base)
                {
                    self.check_literal_indices(&name, &dims, decl, indices);
                }
                r
            }
            ExprKind::Ternary {
                cond,
                then,
                otherwise,
            } => {
                self.expect_scalar(cond, "the condition of `?:`");
                // each branch is evaluated only when the condition is known to choose it
                let value = self.guard_value(cond).map(|v| v.truth());
                let a = self.guarded(value, |c| c.expr(then));
                let b = self.guarded(value.map(|v| !v), |c| c.expr(otherwise));
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
    pub(super) fn index_kind(&mut self, ix: &Index) -> IndexKind {
        match ix {
            Index::Single(e) => match self.expr(e) {
                Some(t) if t.is_int() => IndexKind::Single,
                Some(t) if t == Type::array(Base::Int, 1) => IndexKind::Multi,
                Some(t) => {
                    let help = self.non_int_index_help(e, t);
                    self.err(SemanticError::NonIntIndex {
                        found: t.to_string(),
                        span: e.span,
                        help,
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
                        let help = self.non_int_index_help(e, t);
                        self.err(SemanticError::NonIntIndex {
                            found: t.to_string(),
                            span: e.span,
                            help,
                        });
                    }
                }
                IndexKind::Multi
            }
            Index::All => IndexKind::Multi,
        }
    }

    pub(super) fn apply_indices(&mut self, t: Type, indices: &[Index], span: Span) -> Option<Type> {
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

    pub(super) fn distribution_names(&self) -> Vec<String> {
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

    pub(super) fn function_names(&self) -> Vec<String> {
        let mut names: Vec<String> = builtins::BUILTINS
            .iter()
            .map(|b| b.name.to_string())
            .collect();
        let mut user: Vec<String> = self.functions.keys().cloned().collect();
        user.sort();
        names.extend(user);
        let cdfs = crate::distributions::CdfKind::ALL;
        for s in ["lpdf", "lupdf", "rng"]
            .into_iter()
            .chain(cdfs.iter().map(|k| k.suffix()))
        {
            names.push(format!("{STD_NORMAL}_{s}"));
        }
        for f in registry::FAMILIES {
            let density = if f.discrete { "lpmf" } else { "lpdf" };
            let with_cdfs = if has_log_cdf(f.family) {
                &cdfs[..]
            } else {
                &[]
            };
            for s in [density, "rng"]
                .into_iter()
                .chain(with_cdfs.iter().map(|k| k.suffix()))
            {
                names.push(format!("{}_{s}", f.name));
            }
        }
        names
    }

    /// The user-defined function `name`; `foo_lupdf`/`foo_lupmf` resolve to the definition of
    /// `foo_lpdf`/`foo_lpmf` (the unnormalised form of the same density).
    pub(super) fn user_function(&self, name: &str) -> Option<UserFn> {
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
    pub(super) fn lp_call_allowed(&self) -> bool {
        self.target_allowed() || (self.func.is_none() && self.block == Block::TransformedParameters)
    }

    /// `_rng` calls: generated quantities and `_rng` functions. Stan also allows them in
    /// transformed data, but bayesc runs that block without a random stream, so `check`
    /// refuses them there rather than letting `fit` fail.
    pub(super) fn rng_allowed(&self) -> bool {
        match &self.func {
            Some(f) => f.name.ends_with("_rng"),
            None => self.block == Block::GeneratedQuantities,
        }
    }
}

impl Checker<'_> {
    /// Reports `e` = `lhs` op `rhs` (`+`, `-` or `*` of ints) when both operands are int
    /// constants within the 32-bit range and the result is not: `2147483647 + 1` fails at run
    /// time whatever the data and parameters (an operand that overflows itself is reported
    /// at its own node).
    fn int_overflow(&mut self, e: &Expr, lhs: &Expr, rhs: &Expr) {
        use crate::syntax::ast::{INT_MAX, INT_MIN};
        let int = |x: &Expr| const_int(x).filter(|v| (INT_MIN..=INT_MAX).contains(v));
        if let (Some(_), Some(_), Some(value)) = (int(lhs), int(rhs), const_int(e))
            && !(INT_MIN..=INT_MAX).contains(&value)
        {
            self.err(SemanticError::IntOverflow {
                expr: pretty::expr(e),
                value,
                span: e.span,
            });
        }
    }
}

/// The value of an integer constant expression: an integer literal, or literals combined with
/// unary minus, `+`, `-` and `*` (without overflow). `None` otherwise.
pub(super) fn const_int(e: &Expr) -> Option<i64> {
    match &e.kind {
        ExprKind::IntLit(v) => Some(*v),
        ExprKind::Unary {
            op: UnOp::Neg,
            operand,
        } => const_int(operand)?.checked_neg(),
        ExprKind::Binary { op, lhs, rhs } => {
            let (a, b) = (const_int(lhs)?, const_int(rhs)?);
            match op {
                BinOp::Add => a.checked_add(b),
                BinOp::Sub => a.checked_sub(b),
                BinOp::Mul => a.checked_mul(b),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The sizes of the dimensions left after one bracket group `indices` (see
/// [`crate::semantics::types::index_type`]): a literal position removes its dimension, a range
/// or `:` keeps it (with a size known only for `:`). `None` when an index is not a literal,
/// since it could be a multi-index that keeps its dimension.
pub(super) fn remaining_dims(dims: &[Option<i64>], indices: &[Index]) -> Option<Vec<Option<i64>>> {
    if indices.len() > dims.len() {
        return None;
    }
    let mut out = Vec::with_capacity(dims.len());
    for (ix, size) in indices.iter().zip(dims) {
        match ix {
            Index::Single(e) => {
                const_int(e)?;
            }
            Index::Range(..) => out.push(None),
            Index::All => out.push(*size),
        }
    }
    out.extend_from_slice(&dims[indices.len()..]);
    Some(out)
}
