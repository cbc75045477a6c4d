//! The types of the language as the checker sees them: a base (`int`, `real`, `vector`,
//! `row_vector`, `matrix`) plus a number of array dimensions, with promotion and indexing rules.
//!
//! Sizes are runtime values and are not part of a [`Type`]; the structured types (`simplex`,
//! `ordered`, `cov_matrix`, …) are vectors or matrices here, their constraint lives with the
//! declaration (stanc3's `UnsizedType` plays the same role).

use std::fmt;

use crate::syntax::ast::{SizedBase, UnsizedBase, UnsizedType};

/// The base of a [`Type`], without array dimensions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Base {
    /// `int`.
    Int,
    /// `real`.
    Real,
    /// `vector`: a column vector.
    Vector,
    /// `row_vector`.
    RowVector,
    /// `matrix`.
    Matrix,
}

impl Base {
    /// The keyword as written in source.
    pub fn keyword(self) -> &'static str {
        match self {
            Base::Int => "int",
            Base::Real => "real",
            Base::Vector => "vector",
            Base::RowVector => "row_vector",
            Base::Matrix => "matrix",
        }
    }
}

/// A type without sizes: `array[,] vector` is `Type { base: Vector, dims: 2 }`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Type {
    /// The element type of the array (or the whole type when `dims == 0`).
    pub base: Base,
    /// Number of array dimensions.
    pub dims: usize,
}

impl Type {
    /// `int`.
    pub const INT: Type = Type::scalar(Base::Int);
    /// `real`.
    pub const REAL: Type = Type::scalar(Base::Real);
    /// `vector`.
    pub const VECTOR: Type = Type::scalar(Base::Vector);
    /// `row_vector`.
    pub const ROW_VECTOR: Type = Type::scalar(Base::RowVector);
    /// `matrix`.
    pub const MATRIX: Type = Type::scalar(Base::Matrix);

    /// A non-array type with base `base`.
    pub const fn scalar(base: Base) -> Type {
        Type { base, dims: 0 }
    }

    /// An array of `dims` dimensions over `base`.
    pub const fn array(base: Base, dims: usize) -> Type {
        Type { base, dims }
    }

    /// `int` or `real` (not an array).
    pub fn is_scalar(self) -> bool {
        self.dims == 0 && matches!(self.base, Base::Int | Base::Real)
    }

    /// Exactly `int`.
    pub fn is_int(self) -> bool {
        self == Type::INT
    }

    /// `int`, or an array of `int` of any dimension.
    pub fn is_int_based(self) -> bool {
        self.base == Base::Int
    }

    /// `vector`, `row_vector` or `matrix` (not an array).
    pub fn is_linear_algebra(self) -> bool {
        self.dims == 0 && matches!(self.base, Base::Vector | Base::RowVector | Base::Matrix)
    }

    /// The type of one element of the outermost array dimension (`None` for non-arrays).
    pub fn element(self) -> Option<Type> {
        (self.dims > 0).then(|| Type::array(self.base, self.dims - 1))
    }

    /// The same shape with an `int` base promoted to `real`.
    pub fn promoted(self) -> Type {
        match self.base {
            Base::Int => Type::array(Base::Real, self.dims),
            _ => self,
        }
    }

    /// A one-dimensional container of reals or ints as distributions accept it (Stan's `reals`):
    /// `int`, `real`, `vector`, `row_vector`, `array[] int`, `array[] real`.
    pub fn is_reals(self) -> bool {
        match self.dims {
            0 => self.base != Base::Matrix,
            1 => matches!(self.base, Base::Int | Base::Real),
            _ => false,
        }
    }

    /// `int` or `array[] int` (Stan's `ints`).
    pub fn is_ints(self) -> bool {
        self.base == Base::Int && self.dims <= 1
    }

    /// Whether a value of type `from` may be stored in a variable of type `self`: equal types,
    /// or `int` promoted to `real` with the same array dimensions (never the reverse).
    pub fn accepts(self, from: Type) -> bool {
        self == from
            || (self.dims == from.dims && self.base == Base::Real && from.base == Base::Int)
    }

    /// The type of an unsized signature type (function parameters and return types).
    pub fn from_unsized(t: &UnsizedType) -> Type {
        let base = match t.base {
            UnsizedBase::Int => Base::Int,
            UnsizedBase::Real => Base::Real,
            UnsizedBase::Vector => Base::Vector,
            UnsizedBase::RowVector => Base::RowVector,
            UnsizedBase::Matrix => Base::Matrix,
        };
        Type::array(base, t.array_dims)
    }

    /// The base of a sized declaration type; structured types map to vectors or matrices.
    pub fn base_of_sized(b: &SizedBase) -> Base {
        match b {
            SizedBase::Int => Base::Int,
            SizedBase::Real => Base::Real,
            SizedBase::Vector(_)
            | SizedBase::Simplex(_)
            | SizedBase::Ordered(_)
            | SizedBase::PositiveOrdered(_) => Base::Vector,
            SizedBase::RowVector(_) => Base::RowVector,
            SizedBase::Matrix(_, _)
            | SizedBase::CholeskyFactorCorr(_)
            | SizedBase::CholeskyFactorCov(_)
            | SizedBase::CovMatrix(_)
            | SizedBase::CorrMatrix(_) => Base::Matrix,
        }
    }
}

impl fmt::Display for Type {
    /// Stan's spelling: `real`, `vector`, `array[] int`, `array[,] matrix`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.dims > 0 {
            write!(f, "array[{}] ", ",".repeat(self.dims - 1))?;
        }
        f.write_str(self.base.keyword())
    }
}

/// How one index inside brackets selects along its dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexKind {
    /// A single `int` position: the dimension disappears.
    Single,
    /// A range, `:` or an `array[] int` multi-index: the dimension stays.
    Multi,
}

/// The type of `ty[indices]` for one bracket group, or `None` when there are more indices than
/// dimensions. Array dimensions are consumed first, then the vector/matrix dimensions
/// (`matrix[i]` is a `row_vector`, `matrix[:, j]` a `vector`, `matrix[i, j]` a `real`).
pub fn index_type(ty: Type, indices: &[IndexKind]) -> Option<Type> {
    let n_array = indices.len().min(ty.dims);
    let kept_array = indices[..n_array]
        .iter()
        .filter(|k| **k == IndexKind::Multi)
        .count();
    let rest = &indices[n_array..];
    let dims = ty.dims - n_array + kept_array;
    let base = match (ty.base, rest) {
        (b, []) => b,
        (Base::Vector | Base::RowVector, [IndexKind::Single]) => Base::Real,
        (b @ (Base::Vector | Base::RowVector), [IndexKind::Multi]) => b,
        (Base::Matrix, [IndexKind::Single]) => Base::RowVector,
        (Base::Matrix, [IndexKind::Multi]) => Base::Matrix,
        (Base::Matrix, [IndexKind::Single, IndexKind::Single]) => Base::Real,
        (Base::Matrix, [IndexKind::Single, IndexKind::Multi]) => Base::RowVector,
        (Base::Matrix, [IndexKind::Multi, IndexKind::Single]) => Base::Vector,
        (Base::Matrix, [IndexKind::Multi, IndexKind::Multi]) => Base::Matrix,
        _ => return None,
    };
    Some(Type::array(base, dims))
}

/// Number of indices `ty` can take in one bracket group (array dims plus 1 or 2).
pub fn max_indices(ty: Type) -> usize {
    ty.dims
        + match ty.base {
            Base::Int | Base::Real => 0,
            Base::Vector | Base::RowVector => 1,
            Base::Matrix => 2,
        }
}

#[cfg(test)]
mod tests {
    use super::*;
    use IndexKind::{Multi, Single};

    #[test]
    fn display_matches_stan_spelling() {
        assert_eq!(Type::REAL.to_string(), "real");
        assert_eq!(Type::array(Base::Int, 1).to_string(), "array[] int");
        assert_eq!(Type::array(Base::Matrix, 3).to_string(), "array[,,] matrix");
    }

    #[test]
    fn promotion_is_one_way() {
        assert!(Type::REAL.accepts(Type::INT));
        assert!(!Type::INT.accepts(Type::REAL));
        assert!(Type::array(Base::Real, 2).accepts(Type::array(Base::Int, 2)));
        assert!(!Type::array(Base::Real, 1).accepts(Type::array(Base::Int, 2)));
        assert!(!Type::VECTOR.accepts(Type::ROW_VECTOR));
    }

    #[test]
    fn indexing_reduces_types() {
        assert_eq!(index_type(Type::VECTOR, &[Single]), Some(Type::REAL));
        assert_eq!(index_type(Type::VECTOR, &[Multi]), Some(Type::VECTOR));
        assert_eq!(index_type(Type::MATRIX, &[Single]), Some(Type::ROW_VECTOR));
        assert_eq!(
            index_type(Type::MATRIX, &[Single, Single]),
            Some(Type::REAL)
        );
        assert_eq!(
            index_type(Type::MATRIX, &[Multi, Single]),
            Some(Type::VECTOR)
        );
        assert_eq!(
            index_type(Type::MATRIX, &[Multi, Multi]),
            Some(Type::MATRIX)
        );
        assert_eq!(
            index_type(Type::array(Base::Vector, 2), &[Single, Multi, Single]),
            Some(Type::array(Base::Real, 1))
        );
        assert_eq!(
            index_type(Type::array(Base::Real, 1), &[Single]),
            Some(Type::REAL)
        );
        assert_eq!(index_type(Type::REAL, &[Single]), None);
        assert_eq!(index_type(Type::VECTOR, &[Single, Single]), None);
        assert_eq!(max_indices(Type::array(Base::Matrix, 1)), 3);
    }
}
