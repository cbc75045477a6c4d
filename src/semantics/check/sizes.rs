//! Sizes known before any evaluation: literal sizes (`vector[6] beta`), arithmetic on them,
//! and, when the program is checked with its data ([`crate::semantics::check_with_data`]), the
//! `int` data that size declarations (`matrix[N, K] X`), as well as `int` scalars set once from
//! such values (`int M = N + 1;` in `transformed data` or a block, never assigned) and, once
//! `transformed data` has run, its `int`s in the sizes of declarations that no assignment of
//! them follows (`int n = 0; for (…) n += 1; vector[n] v;`). With them
//! the checker reports an operation whose operands cannot fit, at the operation, instead of a
//! failure of every evaluation at run time (session 18, tester finding 1; session 19).
//!
//! What is followed ([`Checker::shape`]): variables, indexing with `int` positions, `:`, ranges
//! with known bounds, transposes, negation, the arithmetic operators, `[…]` rows, a ternary
//! whose two branches have the same known sizes, the built-in functions of `call_shapes.rs`
//! (`head`, `segment`, `rep_vector`, `append_row`, elementwise functions, …) and user-defined
//! functions whose every `return` has the same sizes known without their arguments. Anything
//! else has unknown sizes, and is never reported. The reports are in `size_checks.rs`.

use super::*;

/// One known (or unknown) dimension of an expression: its size, and the declaration's text for
/// it when it comes straight from a declaration (`"K"` for the columns of `matrix[N, K] X`).
pub(super) type Dim = (Option<i64>, Option<String>);

/// What is known of the sizes of an expression.
#[derive(Clone, Debug)]
pub(super) struct Shape {
    /// Its type.
    pub(super) ty: Type,
    /// Array dimensions, then the vector's length or the matrix's rows and columns.
    pub(super) dims: Vec<Dim>,
    /// The variable it is (possibly indexed): name and declaration span, for labels.
    pub(super) var: Option<(String, Span)>,
}

impl Shape {
    pub(super) fn scalar(ty: Type) -> Shape {
        Shape {
            ty,
            dims: Vec::new(),
            var: None,
        }
    }

    /// "matrix[10, 7]", "vector[6]", "row_vector[?]" (the sized type, `?` where unknown).
    pub(super) fn describe(&self) -> String {
        let d: Vec<String> = self
            .dims
            .iter()
            .map(|(n, _)| n.map_or("?".to_string(), |n| n.to_string()))
            .collect();
        let n_arr = self.ty.dims.min(d.len());
        let base = match self.ty.base {
            Base::Int => "int".to_string(),
            Base::Real => "real".to_string(),
            Base::Vector => format!("vector[{}]", d[n_arr..].join(", ")),
            Base::RowVector => format!("row_vector[{}]", d[n_arr..].join(", ")),
            Base::Matrix => format!("matrix[{}]", d[n_arr..].join(", ")),
        };
        if n_arr == 0 {
            base
        } else {
            format!("array[{}] {base}", d[..n_arr].join(", "))
        }
    }

    /// The secondary label for the operand's declaration: its whole size (`size` in words, e.g.
    /// "size 10" or "3 elements") when every dimension is the declared one, else only where it
    /// is declared (an indexed operand's sizes are not the declaration's).
    pub(super) fn sized_label(&self, size: &str) -> Option<(String, Span)> {
        let (name, decl) = self.var.clone()?;
        let declared = self.dims.iter().all(|(_, t)| t.is_some());
        let msg = if declared {
            format!("`{name}` has {size}")
        } else {
            format!("`{name}` declared here")
        };
        Some((msg, decl))
    }

    /// The secondary label for the operand's declaration, saying its size `dim` in words
    /// (`"columns"`), or `None` when it is not a variable.
    pub(super) fn label(&self, dim: &Dim, words: &str) -> Option<(String, Span)> {
        let (name, decl) = self.var.clone()?;
        let msg = match dim {
            (Some(n), Some(t)) if t.parse::<i64>().is_ok() => {
                format!("`{name}` declared with {n} {words}")
            }
            (Some(n), Some(t)) => format!("`{name}` declared with `{t}` = {n} {words}"),
            _ => format!("`{name}` declared here"),
        };
        Some((msg, decl))
    }
}

impl Checker<'_> {
    /// The value of a size expression when it is known before evaluation: integer literals,
    /// `int` data and transformed data given to [`crate::semantics::check_with_data`] (outside
    /// functions; transformed data only after its block), `rows`/`cols`/`num_elements`/`size` of
    /// a variable of known sizes, and `+ - * %/%` on those.
    pub(super) fn size_value(&self, e: &Expr) -> Option<i64> {
        match &e.kind {
            ExprKind::IntLit(v) => Some(*v),
            ExprKind::Unary {
                op: UnOp::Neg,
                operand,
            } => self.size_value(operand)?.checked_neg(),
            ExprKind::Binary { op, lhs, rhs } => {
                let (a, b) = (self.size_value(lhs)?, self.size_value(rhs)?);
                match op {
                    BinOp::Add => a.checked_add(b),
                    BinOp::Sub => a.checked_sub(b),
                    BinOp::Mul => a.checked_mul(b),
                    BinOp::IntDiv if b != 0 => a.checked_div(b),
                    _ => None,
                }
            }
            ExprKind::Var(name) => {
                if self.func.is_some() {
                    return None;
                }
                let info = self.scopes.lookup(name)?;
                let known = match info.origin {
                    Origin::Data => true,
                    // its final value: known to the blocks after `transformed data`, and in
                    // it to the sizes of a declaration that no assignment of it follows
                    Origin::TransformedData => match self.block {
                        Block::Data => false,
                        Block::TransformedData => self
                            .size_at
                            .is_some_and(|at| self.assigned.get(name).is_none_or(|end| *end <= at)),
                        _ => true,
                    },
                    _ => false,
                };
                if info.ty != Type::INT {
                    return None;
                }
                let given = if known {
                    self.size_ints.get(name).copied()
                } else {
                    None
                };
                // `int M = N + 1;` never assigned: the value of its initialiser, where it is
                // declared (names may be reused in sibling scopes)
                given.or_else(|| {
                    let (decl, v) = self.derived_ints.get(name)?;
                    (*decl == info.decl_span).then_some(*v)
                })
            }
            ExprKind::Call { name, args, .. } if args.len() == 1 => {
                let ExprKind::Var(v) = &args[0].kind else {
                    return None;
                };
                let info = self.scopes.lookup(v)?;
                let (dims, _) = self.declared_dims(v)?;
                let n_arr = info.ty.dims;
                let base = &dims[n_arr..];
                match (name.name.as_str(), info.ty.base, base) {
                    ("size", _, _) if n_arr > 0 => dims[0],
                    ("size" | "num_elements" | "rows", Base::Vector, [n]) if n_arr == 0 => *n,
                    ("size" | "num_elements" | "cols", Base::RowVector, [n]) if n_arr == 0 => *n,
                    ("rows", Base::RowVector, _) | ("cols", Base::Vector, _) if n_arr == 0 => {
                        Some(1)
                    }
                    ("rows", Base::Matrix, [r, _]) if n_arr == 0 => *r,
                    ("cols", Base::Matrix, [_, c]) if n_arr == 0 => *c,
                    ("num_elements", _, _) => {
                        dims.iter().try_fold(1i64, |acc, d| acc.checked_mul((*d)?))
                    }
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// Whether the index `e` is a single `int` position (literal, `int` variable, `int`
    /// arithmetic), as opposed to a multi-index.
    fn is_int_position(&self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::IntLit(_) => true,
            ExprKind::Var(v) => self.scopes.lookup(v).is_some_and(|i| i.ty == Type::INT),
            ExprKind::Unary { operand, .. } => self.is_int_position(operand),
            ExprKind::Binary { op, lhs, rhs } => {
                matches!(
                    op,
                    BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::IntDiv | BinOp::Mod
                ) && self.is_int_position(lhs)
                    && self.is_int_position(rhs)
            }
            _ => false,
        }
    }

    /// What is known of the sizes of `e` (see the module's documentation); `None` when its type
    /// or the way to follow its sizes is unknown.
    pub(super) fn shape(&self, e: &Expr) -> Option<Shape> {
        match &e.kind {
            ExprKind::IntLit(_) => Some(Shape::scalar(Type::INT)),
            ExprKind::RealLit(_) => Some(Shape::scalar(Type::REAL)),
            ExprKind::Var(name) => {
                let info = self.scopes.lookup(name)?;
                if info.ty.is_scalar() {
                    return Some(Shape::scalar(info.ty));
                }
                let (dims, decl) = self.declared_dims(name)?;
                let mut texts = info.sizes.clone();
                if texts.len() + 1 == dims.len() {
                    texts.push(texts.last()?.clone());
                }
                Some(Shape {
                    ty: info.ty,
                    dims: dims.into_iter().zip(texts.into_iter().map(Some)).collect(),
                    var: Some((name.clone(), decl)),
                })
            }
            ExprKind::Index { base, indices } => {
                let s = self.shape(base)?;
                if indices.len() > s.dims.len() {
                    return None;
                }
                let mut kinds = Vec::new();
                let mut dims = Vec::new();
                for (ix, dim) in indices.iter().zip(&s.dims) {
                    match ix {
                        Index::Single(i) if self.is_int_position(i) => {
                            kinds.push(IndexKind::Single)
                        }
                        Index::Single(_) => return None,
                        Index::All => {
                            kinds.push(IndexKind::Multi);
                            dims.push(dim.clone());
                        }
                        Index::Range(lo, hi) => {
                            kinds.push(IndexKind::Multi);
                            let lo = match lo {
                                Some(l) => self.size_value(l),
                                None => Some(1),
                            };
                            let hi = match hi {
                                Some(h) => self.size_value(h),
                                None => dim.0,
                            };
                            let n = match (lo, hi) {
                                (Some(l), Some(h)) => Some((h - l + 1).max(0)),
                                _ => None,
                            };
                            dims.push((n, None));
                        }
                    }
                }
                dims.extend(s.dims[indices.len()..].iter().cloned());
                let ty = index_type(s.ty, &kinds)?;
                Some(Shape {
                    ty,
                    dims,
                    var: s.var,
                })
            }
            ExprKind::Transpose(x) => super::call_shapes::transposed(self.shape(x)?),
            ExprKind::Unary {
                op: UnOp::Neg | UnOp::Plus,
                operand,
            } => self.shape(operand),
            ExprKind::Binary { op, lhs, rhs } => {
                let (l, r) = (self.shape(lhs)?, self.shape(rhs)?);
                let ty = operators::binary(*op, l.ty, r.ty).ok()?;
                let dims =
                    if l.ty.is_scalar() {
                        r.dims
                    } else if r.ty.is_scalar() {
                        l.dims
                    } else {
                        match op {
                            BinOp::Add | BinOp::Sub | BinOp::EltMul | BinOp::EltDiv => {
                                if l.dims.len() != r.dims.len() {
                                    return None;
                                }
                                // operands that cannot fit (reported at the operation) have no size
                                if l.dims.iter().zip(&r.dims).any(
                                    |(a, b)| matches!((a.0, b.0), (Some(x), Some(y)) if x != y),
                                ) {
                                    return None;
                                }
                                l.dims
                                    .into_iter()
                                    .zip(r.dims)
                                    .map(|(a, b)| if a.0.is_some() { a } else { b })
                                    .collect()
                            }
                            BinOp::Mul if l.ty.dims == 0 && r.ty.dims == 0 => {
                                let inner = (
                                    l.dims.last().and_then(|d| d.0),
                                    r.dims.first().and_then(|d| d.0),
                                );
                                if matches!(l.ty.base, Base::Matrix | Base::RowVector)
                                    && matches!(r.ty.base, Base::Matrix | Base::Vector)
                                    && matches!(inner, (Some(a), Some(b)) if a != b)
                                {
                                    return None;
                                }
                                match (l.ty.base, r.ty.base) {
                                    (Base::Matrix, Base::Vector) => vec![l.dims[0].clone()],
                                    (Base::RowVector, Base::Matrix) => vec![r.dims[1].clone()],
                                    (Base::Matrix, Base::Matrix) => {
                                        vec![l.dims[0].clone(), r.dims[1].clone()]
                                    }
                                    (Base::Vector, Base::RowVector) => {
                                        vec![l.dims[0].clone(), r.dims[0].clone()]
                                    }
                                    (Base::RowVector, Base::Vector) => Vec::new(),
                                    _ => return None,
                                }
                            }
                            _ => return None,
                        }
                    };
                let expected = max_indices(ty);
                (dims.len() == expected).then_some(Shape {
                    ty,
                    dims,
                    var: None,
                })
            }
            ExprKind::Call { name, args, .. } => self.call_shape(&name.name, args),
            ExprKind::Ternary {
                then, otherwise, ..
            } => {
                // known only where both branches agree: either may be taken
                let (a, b) = (self.shape(then)?, self.shape(otherwise)?);
                let ty = if a.ty.accepts(b.ty) {
                    a.ty
                } else if b.ty.accepts(a.ty) {
                    b.ty
                } else {
                    return None;
                };
                if a.dims.len() != b.dims.len() {
                    return None;
                }
                let dims = a
                    .dims
                    .into_iter()
                    .zip(b.dims)
                    .map(|(x, y)| match (x.0, y.0) {
                        (Some(p), Some(q)) if p == q => (Some(p), None),
                        _ => (None, None),
                    })
                    .collect();
                Some(Shape {
                    ty,
                    dims,
                    var: None,
                })
            }
            ExprKind::RowVectorLit(items) => {
                let shapes: Option<Vec<Shape>> = items.iter().map(|i| self.shape(i)).collect();
                let shapes = shapes?;
                let n = Some(items.len() as i64);
                if shapes.iter().all(|s| s.ty.is_scalar()) {
                    Some(Shape {
                        ty: Type::array(Base::RowVector, 0),
                        dims: vec![(n, None)],
                        var: None,
                    })
                } else {
                    None
                }
            }
            _ => None,
        }
    }
}
