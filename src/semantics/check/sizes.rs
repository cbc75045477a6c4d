//! Sizes known before any evaluation: literal sizes (`vector[6] beta`), arithmetic on them,
//! and, when the program is checked with its data ([`crate::semantics::check_with_data`]), the
//! `int` data that size declarations (`matrix[N, K] X`). With them the checker reports an
//! operation whose operands cannot fit, at the operation, instead of a failure of every
//! evaluation at run time (session 18, tester finding 1).
//!
//! Covered: `*` of matrices, vectors and row vectors (the inner sizes), the elementwise
//! `+ - .* ./` of two non-scalars (every size), `dot_product`, `squared_distance`, `distance`,
//! `rows_dot_product` and `columns_dot_product`, and (through `declared_dims`) a literal index
//! outside a known size. Operands are followed through variables, indexing with `int` positions,
//! `:`, ranges with known bounds, transposes, negation and these same operations; a call of any
//! other function, a ternary or an array expression has unknown sizes, and is never reported.

use super::*;

/// One known (or unknown) dimension of an expression: its size, and the declaration's text for
/// it when it comes straight from a declaration (`"K"` for the columns of `matrix[N, K] X`).
type Dim = (Option<i64>, Option<String>);

/// What is known of the sizes of an expression.
#[derive(Clone, Debug)]
pub(super) struct Shape {
    /// Its type.
    ty: Type,
    /// Array dimensions, then the vector's length or the matrix's rows and columns.
    dims: Vec<Dim>,
    /// The variable it is (possibly indexed): name and declaration span, for labels.
    var: Option<(String, Span)>,
}

impl Shape {
    fn scalar(ty: Type) -> Shape {
        Shape {
            ty,
            dims: Vec::new(),
            var: None,
        }
    }

    /// "matrix[10, 7]", "vector[6]", "row_vector[?]" (the sized type, `?` where unknown).
    fn describe(&self) -> String {
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
    fn sized_label(&self, size: &str) -> Option<(String, Span)> {
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
    fn label(&self, dim: &Dim, words: &str) -> Option<(String, Span)> {
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

/// The functions whose two arguments must have the same size.
const SAME_SIZE_CALLS: &[&str] = &[
    "dot_product",
    "squared_distance",
    "distance",
    "rows_dot_product",
    "columns_dot_product",
];

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
                    // its final value: known to the blocks after `transformed data`
                    Origin::TransformedData => {
                        !matches!(self.block, Block::Data | Block::TransformedData)
                    }
                    _ => false,
                };
                if !known || info.ty != Type::INT {
                    return None;
                }
                self.size_ints.get(name).copied()
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
            ExprKind::Transpose(x) => {
                let mut s = self.shape(x)?;
                if s.ty.dims > 0 {
                    return None;
                }
                s.ty.base = match s.ty.base {
                    Base::Vector => Base::RowVector,
                    Base::RowVector => Base::Vector,
                    Base::Matrix => {
                        s.dims.swap(0, 1);
                        Base::Matrix
                    }
                    _ => return None,
                };
                // the declaration's words (rows, columns) no longer apply
                s.var = None;
                Some(s)
            }
            ExprKind::Unary {
                op: UnOp::Neg | UnOp::Plus,
                operand,
            } => self.shape(operand),
            ExprKind::Binary { op, lhs, rhs } => {
                let (l, r) = (self.shape(lhs)?, self.shape(rhs)?);
                let ty = operators::binary(*op, l.ty, r.ty).ok()?;
                let dims = if l.ty.is_scalar() {
                    r.dims
                } else if r.ty.is_scalar() {
                    l.dims
                } else {
                    match op {
                        BinOp::Add | BinOp::Sub | BinOp::EltMul | BinOp::EltDiv => {
                            if l.dims.len() != r.dims.len() {
                                return None;
                            }
                            l.dims
                                .into_iter()
                                .zip(r.dims)
                                .map(|(a, b)| if a.0.is_some() { a } else { b })
                                .collect()
                        }
                        BinOp::Mul if l.ty.dims == 0 && r.ty.dims == 0 => {
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

    /// Reports [`SemanticError::SizeMismatch`] for `e` = `lhs op rhs` (two non-scalar operands
    /// of types `l` and `r` that type-check) when the sizes that must agree are known and differ.
    pub(super) fn check_binary_sizes(&mut self, e: &Expr, op: BinOp, lhs: &Expr, rhs: &Expr) {
        let elementwise = matches!(op, BinOp::Add | BinOp::Sub | BinOp::EltMul | BinOp::EltDiv);
        if !elementwise && op != BinOp::Mul {
            return;
        }
        // two literal-sized variables: `LiteralSizeMismatch` already compared them
        if elementwise && self.literal_sizes(lhs).is_some() && self.literal_sizes(rhs).is_some() {
            return;
        }
        let (Some(l), Some(r)) = (self.shape(lhs), self.shape(rhs)) else {
            return;
        };
        let (ltext, rtext) = (pretty::expr(lhs), pretty::expr(rhs));
        let sizes = format!(
            "{} {} {}",
            l.describe(),
            if op == BinOp::Mul { "times" } else { "and" },
            r.describe()
        );
        if elementwise {
            if l.dims.len() != r.dims.len()
                || l.dims.iter().zip(&r.dims).all(|(a, b)| match (a.0, b.0) {
                    (Some(x), Some(y)) => x == y,
                    _ => true,
                })
            {
                return;
            }
            let size = |s: &Shape| {
                s.dims
                    .iter()
                    .map(|(n, _)| n.map_or("?".to_string(), |n| n.to_string()))
                    .collect::<Vec<_>>()
                    .join(" × ")
            };
            let operands = [&l, &r]
                .iter()
                .filter_map(|s| s.sized_label(&format!("size {}", size(s))))
                .collect();
            self.err(SemanticError::SizeMismatch {
                expr: pretty::expr(e),
                what: format!(
                    "`{ltext}` has size {} but `{rtext}` has size {}",
                    size(&l),
                    size(&r)
                ),
                sizes,
                operands,
                help: "an elementwise operation needs operands of the same size: declare them \
                       with the same sizes, or index the part that corresponds"
                    .into(),
                span: e.span,
            });
            return;
        }
        if l.ty.dims > 0 || r.ty.dims > 0 {
            return;
        }
        // the inner sizes of the product, with their names in words
        let (ld, lwords) = match l.ty.base {
            Base::Matrix | Base::RowVector => (l.dims.last().cloned(), "columns"),
            _ => return,
        };
        let (rd, rwords) = match r.ty.base {
            Base::Matrix | Base::Vector => (r.dims.first().cloned(), "rows"),
            _ => return,
        };
        let (Some(ld), Some(rd)) = (ld, rd) else {
            return;
        };
        let (Some(a), Some(b)) = (ld.0, rd.0) else {
            return;
        };
        if a == b {
            return;
        }
        let operands = [l.label(&ld, lwords), r.label(&rd, rwords)]
            .into_iter()
            .flatten()
            .collect();
        // the fix: size the right operand by the left's columns when it is a declared vector
        let wanted = ld.1.clone().unwrap_or_else(|| a.to_string());
        let help = match (&r.var, r.ty.base, &rhs.kind) {
            (Some((name, _)), Base::Vector, ExprKind::Var(_)) => format!(
                "a product needs as many rows on the right as columns on the left: declare \
                 `vector[{wanted}] {name};` (one coefficient per column of `{ltext}`), or \
                 check that `{ltext}` holds the columns you meant"
            ),
            _ => format!(
                "a product needs as many rows on the right ({b}) as columns on the left ({a}): \
                 resize one of the operands, or transpose one if that was meant"
            ),
        };
        self.err(SemanticError::SizeMismatch {
            expr: pretty::expr(e),
            what: format!("`{ltext}` has {a} {lwords} but `{rtext}` has {b} {rwords}"),
            sizes,
            operands,
            help,
            span: e.span,
        });
    }

    /// Reports [`SemanticError::SizeMismatch`] for a call of one of [`SAME_SIZE_CALLS`] whose
    /// two arguments have known, different sizes.
    pub(super) fn check_call_sizes(&mut self, e: &Expr, name: &str, args: &[Expr]) {
        if !SAME_SIZE_CALLS.contains(&name) || args.len() != 2 {
            return;
        }
        let (Some(a), Some(b)) = (self.shape(&args[0]), self.shape(&args[1])) else {
            return;
        };
        if a.ty.dims > 0 || b.ty.dims > 0 || a.dims.len() != b.dims.len() || a.dims.is_empty() {
            return;
        }
        let differ = a.dims.iter().zip(&b.dims).any(|(x, y)| match (x.0, y.0) {
            (Some(p), Some(q)) => p != q,
            _ => false,
        });
        if !differ {
            return;
        }
        let count = |s: &Shape| {
            s.dims
                .iter()
                .map(|(n, _)| n.map_or("?".to_string(), |n| n.to_string()))
                .collect::<Vec<_>>()
                .join(" × ")
        };
        let words = if a.dims.len() == 1 { "elements" } else { "" };
        let describe = |s: &Shape| format!("{} {words}", count(s)).trim_end().to_string();
        let operands = [&a, &b]
            .iter()
            .filter_map(|s| s.sized_label(&describe(s)))
            .collect();
        let (x, y) = (pretty::expr(&args[0]), pretty::expr(&args[1]));
        self.err(SemanticError::SizeMismatch {
            expr: pretty::expr(e),
            what: format!("`{x}` has {} but `{y}` has {}", describe(&a), describe(&b)),
            sizes: format!("{} and {}", a.describe(), b.describe()),
            operands,
            help: format!(
                "`{name}` pairs the elements of its two arguments, so they need the same size"
            ),
            span: e.span,
        });
    }

    /// The `help:` of [`SemanticError::NonIntIndex`] for the index `e` of type `t`: the integer
    /// positions around a real literal (`1.5` → `1` or `2`, `2.0` → `2`), `int` for a real
    /// variable, integer arithmetic for a real expression.
    pub(super) fn non_int_index_help(&self, e: &Expr, t: Type) -> String {
        if let Some(v) = super::dists::literal_value(e) {
            return if v.fract() == 0.0 && v.is_finite() {
                format!(
                    "positions are `int`: write `{}` (without the decimal point)",
                    v as i64
                )
            } else if v.is_finite() {
                let lo = v.floor().max(1.0) as i64;
                let hi = (v.ceil() as i64).max(lo + 1);
                format!(
                    "positions are whole numbers counted from 1: write the one you mean as an \
                     `int`, e.g. `{lo}` or `{hi}`"
                )
            } else {
                "positions are whole numbers counted from 1: write one as an `int`".into()
            };
        }
        if !t.is_scalar() {
            return "index with an `int` position, or an `array[] int` of positions".into();
        }
        match &e.kind {
            ExprKind::Var(v) => format!(
                "declare `{v}` as `int` if it holds a position, or compute the position with \
                 `int` arithmetic (`%/%` divides integers)"
            ),
            _ => "compute the position with `int` arithmetic (`%/%` divides integers) instead \
                  of real values"
                .into(),
        }
    }
}
