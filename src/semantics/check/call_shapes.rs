//! The sizes of calls, where they follow from the sizes of the arguments and from `int`
//! arguments of known value ([`Checker::size_value`]): `head(v, n)` has `n` elements,
//! `rep_matrix(x, m, n)` is `m × n`, `append_row(a, b)` stacks the two, `exp(v)` has the sizes
//! of `v`, a user-defined function has the sizes its `return` statements agree on, and a
//! multivariate `_rng` the sizes of its draw (`multi_normal_rng(mu, Sigma)` those of `mu`).
//! Anything not listed here has unknown sizes (never reported). [X] session 19, tester
//! finding 4: sizes through these calls were unknown, so mismatches in them failed only in `fit`.

use super::sizes::{Dim, Shape};
use super::*;

impl Checker<'_> {
    /// What is known of the sizes of `name(args)`; `None` when it is not followed, or when an
    /// argument's sizes are unknown where the result needs them. Every shape returned has one
    /// dimension per index its type takes.
    pub(super) fn call_shape(&self, name: &str, args: &[Expr]) -> Option<Shape> {
        let s = if self.user_function(name).is_some() {
            self.user_call_shape(name)
        } else if let Some(stem) = name.strip_suffix("_rng")
            && let Some(sig) = registry::lookup(stem)
        {
            self.rng_shape(sig, args)
        } else if let Some(stem) = name.strip_suffix("_rng")
            && let Some(sig) = multivariate_registry::lookup(stem)
        {
            if self.mv_rng_sizes_differ(sig, args) {
                return None;
            }
            self.mv_rng_shape(sig.family, args)
        } else {
            self.builtin_shape(name, args)
        }?;
        (s.dims.len() == max_indices(s.ty)).then_some(s)
    }

    /// A user-defined function's result: the sizes its returns agree on (`fn_shapes`).
    fn user_call_shape(&self, name: &str) -> Option<Shape> {
        let ty = self.user_function(name)?.ret?;
        let dims = self.fn_shapes.get(name)?;
        Some(Shape {
            ty,
            dims: dims.iter().map(|n| (Some(*n), None)).collect(),
            var: None,
        })
    }

    /// `normal_rng(mu, sigma)` and the other univariate families: one draw per element of the
    /// vectorised arguments (an array), a single draw when they are all scalars.
    fn rng_shape(&self, sig: &FamilySig, args: &[Expr]) -> Option<Shape> {
        let elem = if sig.discrete || is_discrete_support(sig.variate) {
            Base::Int
        } else {
            Base::Real
        };
        let mut count = None;
        for a in args {
            let s = self.shape(a)?;
            if s.ty.is_scalar() {
                continue;
            }
            let n = s.dims.iter().try_fold(1i64, |acc, d| acc.checked_mul(d.0?));
            count = count.or(Some(n));
            if let (Some(Some(a)), Some(b)) = (count, n)
                && a != b
            {
                return None;
            }
            count = count.map(|c| c.or(n));
        }
        match count {
            None => Some(Shape::scalar(Type::scalar(elem))),
            Some(n) => Some(Shape {
                ty: Type::array(elem, 1),
                dims: vec![(n, None)],
                var: None,
            }),
        }
    }

    /// A multivariate family's draw: `multi_normal_rng(μ, Σ)` has the sizes of μ (a vector,
    /// or an array of them), `dirichlet_rng(α)` those of α, `lkj_corr_rng(K, η)` is K × K,
    /// `wishart_rng(ν, S)` has the sizes of S; the categorical families draw one `int`.
    fn mv_rng_shape(
        &self,
        family: crate::distributions::multivariate::MvFamily,
        args: &[Expr],
    ) -> Option<Shape> {
        use crate::distributions::multivariate::MvFamily as F;
        let vectors = |s: Shape| -> Option<Shape> {
            if !matches!(s.ty.base, Base::Vector | Base::RowVector) || s.ty.dims > 1 {
                return None;
            }
            Some(Shape {
                ty: Type::array(Base::Vector, s.ty.dims),
                dims: s.dims,
                var: None,
            })
        };
        let matrix = |s: Shape| -> Option<Shape> {
            (s.ty == Type::MATRIX).then_some(Shape { var: None, ..s })
        };
        match (family, args.len()) {
            (F::MultiNormal | F::MultiNormalCholesky, 2) => vectors(self.shape(&args[0])?),
            (F::MultiStudentT, 3) => vectors(self.shape(&args[1])?),
            (F::Dirichlet, 1) => vectors(self.shape(&args[0])?),
            (F::LkjCorr | F::LkjCorrCholesky, 2) => {
                let k = (self.size_value(&args[0]), None);
                Some(Shape {
                    ty: Type::MATRIX,
                    dims: vec![k.clone(), k],
                    var: None,
                })
            }
            (F::Wishart | F::WishartCholesky | F::InvWishart, 2) => matrix(self.shape(&args[1])?),
            (F::Categorical | F::CategoricalLogit | F::OrderedLogistic | F::OrderedProbit, _) => {
                Some(Shape::scalar(Type::INT))
            }
            _ => None,
        }
    }

    fn builtin_shape(&self, name: &str, args: &[Expr]) -> Option<Shape> {
        // the value of the `int` argument at position `i`, as a dimension
        // a negative size is reported at the argument (`check_size_arguments`), not again
        // as a size that does not fit
        // unknown before the data, the size as written, for symbolic comparison (`N + 1`
        // against `N`: `mv_sizes.rs`)
        let n = |i: usize| -> Dim {
            match self.size_value(&args[i]) {
                Some(v) => (Some(v).filter(|&v| v >= 0), None),
                None => (None, Some(pretty::expr(&args[i]))),
            }
        };
        let arg = |i: usize| -> Option<Shape> {
            let mut s = self.shape(&args[i])?;
            // its declaration no longer describes the result
            s.var = None;
            Some(s)
        };
        let sized = |ty: Type, dims: Vec<Dim>| {
            Some(Shape {
                ty,
                dims,
                var: None,
            })
        };
        match (name, args.len()) {
            // a slice of the outermost dimension
            ("head" | "tail", 2) | ("segment", 3) => {
                let mut s = arg(0)?;
                *s.dims.first_mut()? = n(args.len() - 1);
                Some(s)
            }
            ("rep_vector", 2) => sized(Type::VECTOR, vec![n(1)]),
            ("rep_row_vector", 2) => sized(Type::ROW_VECTOR, vec![n(1)]),
            ("rep_matrix", 3) => sized(Type::MATRIX, vec![n(1), n(2)]),
            ("rep_matrix", 2) => {
                let v = arg(0)?;
                match v.ty {
                    Type::VECTOR => sized(Type::MATRIX, vec![v.dims.first()?.clone(), n(1)]),
                    Type::ROW_VECTOR => sized(Type::MATRIX, vec![n(1), v.dims.first()?.clone()]),
                    _ => None,
                }
            }
            ("rep_array", k) if k >= 2 => {
                let x = arg(0)?;
                let mut dims: Vec<Dim> = (1..k).map(n).collect();
                dims.extend(x.dims);
                sized(Type::array(x.ty.base, x.ty.dims + k - 1), dims)
            }
            ("linspaced_vector", 3) => sized(Type::VECTOR, vec![n(0)]),
            ("append_row", k) if k >= 2 => self.append_shape(args, Base::RowVector, Base::Vector),
            ("append_col", k) if k >= 2 => self.append_shape(args, Base::Vector, Base::RowVector),
            ("to_vector" | "to_row_vector" | "to_array_1d", 1) => {
                let x = arg(0)?;
                if x.dims.is_empty() {
                    return None;
                }
                let count = x.dims.iter().try_fold(1i64, |acc, d| acc.checked_mul(d.0?));
                let ty = match name {
                    "to_vector" => Type::VECTOR,
                    "to_row_vector" => Type::ROW_VECTOR,
                    _ if x.ty.base == Base::Int => Type::array(Base::Int, 1),
                    _ => Type::array(Base::Real, 1),
                };
                sized(ty, vec![(count, None)])
            }
            (
                "cumulative_sum" | "reverse" | "sort_asc" | "sort_desc" | "softmax" | "log_softmax"
                | "cholesky_decompose" | "inverse" | "inverse_spd",
                1,
            ) => arg(0),
            ("transpose", 1) => transposed(arg(0)?),
            ("col", 2) if self.shape(&args[0])?.ty == Type::MATRIX => {
                sized(Type::VECTOR, vec![arg(0)?.dims.first()?.clone()])
            }
            ("row", 2) if self.shape(&args[0])?.ty == Type::MATRIX => {
                sized(Type::ROW_VECTOR, vec![arg(0)?.dims.get(1)?.clone()])
            }
            ("diagonal", 1) => {
                let m = arg(0)?;
                let (r, c) = (m.dims.first()?.0, m.dims.get(1)?.0);
                let n = match (r, c) {
                    (Some(r), Some(c)) => Some(r.min(c)),
                    _ => None,
                };
                sized(Type::VECTOR, vec![(n, None)])
            }
            ("diag_matrix", 1) => {
                let v = arg(0)?;
                let d = v.dims.first()?.clone();
                sized(Type::MATRIX, vec![d.clone(), d])
            }
            ("crossprod" | "tcrossprod", 1) => {
                let m = arg(0)?;
                let d = m.dims.get(usize::from(name == "crossprod"))?.clone();
                sized(Type::MATRIX, vec![d.clone(), d])
            }
            ("rows_dot_product" | "columns_dot_product", 2) => {
                let a = arg(0)?;
                let one = (Some(1), None);
                let d = match (name, a.ty.base, a.ty.dims) {
                    (_, _, d) if d > 0 => return None,
                    ("rows_dot_product", Base::Vector | Base::Matrix, _) => a.dims.first()?.clone(),
                    ("rows_dot_product", Base::RowVector, _) => one,
                    ("columns_dot_product", Base::RowVector, _) => a.dims.first()?.clone(),
                    ("columns_dot_product", Base::Matrix, _) => a.dims.get(1)?.clone(),
                    ("columns_dot_product", Base::Vector, _) => one,
                    _ => return None,
                };
                let ty = if name == "rows_dot_product" {
                    Type::VECTOR
                } else {
                    Type::ROW_VECTOR
                };
                sized(ty, vec![d])
            }
            // the matrix argument's sizes
            ("diag_pre_multiply", 2) => arg(1),
            ("diag_post_multiply" | "add_diag" | "add_row_vector", 2) => arg(0),
            (f, 1) if builtins::ELEMENTWISE_UNARY.contains(&f) => {
                let s = arg(0)?;
                let ty = builtins::return_type(f, &[s.ty])?;
                sized(ty, s.dims)
            }
            _ => None,
        }
    }

    /// `append_row(a, b, …)` (`across` = row vector, `along` = vector) or `append_col` (the
    /// reverse): scalars and `along`-vectors stack into a longer `along`-vector, `across`-vectors
    /// and matrices into a matrix with the pieces' rows (columns) added up. The other dimension
    /// is the one the pieces agree on where known (they must agree for the call to run).
    fn append_shape(&self, args: &[Expr], across: Base, along: Base) -> Option<Shape> {
        let shapes: Vec<Shape> = args.iter().map(|a| self.shape(a)).collect::<Option<_>>()?;
        if shapes.iter().any(|s| s.ty.dims > 0) {
            return None;
        }
        let sum = |sizes: Vec<Option<i64>>| {
            sizes
                .into_iter()
                .try_fold(0i64, |acc, n| acc.checked_add(n?))
        };
        let stacks_vector = shapes
            .iter()
            .all(|s| s.ty.is_scalar() || s.ty.base == along);
        if stacks_vector {
            let n = sum(shapes
                .iter()
                .map(|s| {
                    if s.ty.is_scalar() {
                        Some(1)
                    } else {
                        s.dims.first().and_then(|d| d.0)
                    }
                })
                .collect());
            return Some(Shape {
                ty: Type::scalar(along),
                dims: vec![(n, None)],
                var: None,
            });
        }
        // a matrix: `stacked` is the index of the dimension the pieces add up in
        let stacked = usize::from(along == Base::RowVector);
        let mut added = Vec::new();
        let mut other: Option<i64> = None;
        for s in &shapes {
            let (k, o) = match s.ty.base {
                b if b == across => (Some(1), s.dims.first()?.0),
                Base::Matrix => (s.dims.get(stacked)?.0, s.dims.get(1 - stacked)?.0),
                _ => return None,
            };
            added.push(k);
            other = other.or(o);
        }
        let mut dims = vec![(sum(added), None), (other, None)];
        if stacked == 1 {
            dims.swap(0, 1);
        }
        Some(Shape {
            ty: Type::MATRIX,
            dims,
            var: None,
        })
    }
}

/// The sizes of `x'`: a vector's become a row vector's and the reverse, a matrix's rows and
/// columns swap; `None` for anything else.
pub(super) fn transposed(mut s: Shape) -> Option<Shape> {
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
