//! Typing rules of the operators (Stan Reference Manual, "Expressions": arithmetic and matrix
//! operators): `int * int` is `int`, `vector * row_vector` is a `matrix`, `row_vector * vector` a
//! `real`, and so on. A mismatch comes back with a hint saying what to write instead.

use crate::syntax::ast::{BinOp, UnOp};

use super::types::{Base, Type};

/// The result type of `lhs op rhs`, or `Err(hint)` when the operator is not defined for these
/// types; the hint (possibly empty) says what to write instead.
pub fn binary(op: BinOp, lhs: Type, rhs: Type) -> Result<Type, &'static str> {
    use Base::*;
    use BinOp::*;
    let both_scalar = lhs.is_scalar() && rhs.is_scalar();
    let scalar_result = if lhs.is_int() && rhs.is_int() {
        Type::INT
    } else {
        Type::REAL
    };
    if (lhs.dims > 0 || rhs.dims > 0) && !matches!(op, And | Or) {
        return Err(
            "arithmetic is not defined on arrays; declare a `vector` instead, or convert with `to_vector`",
        );
    }
    let la = lhs.is_linear_algebra();
    let ra = rhs.is_linear_algebra();
    match op {
        Add | Sub => {
            if both_scalar {
                Ok(scalar_result)
            } else if la && rhs.is_scalar() {
                Ok(lhs)
            } else if lhs.is_scalar() && ra {
                Ok(rhs)
            } else if lhs == rhs {
                Ok(lhs)
            } else if matches!(
                (lhs.base, rhs.base),
                (Vector, RowVector) | (RowVector, Vector)
            ) {
                Err("transpose one side with `'` so both are `vector` or both `row_vector`")
            } else {
                Err("")
            }
        }
        Mul => match (lhs.base, rhs.base) {
            _ if both_scalar => Ok(scalar_result),
            _ if lhs.is_scalar() => Ok(rhs),
            _ if rhs.is_scalar() => Ok(lhs),
            (Vector, RowVector) => Ok(Type::MATRIX),
            (RowVector, Vector) => Ok(Type::REAL),
            (Matrix, Vector) => Ok(Type::VECTOR),
            (RowVector, Matrix) => Ok(Type::ROW_VECTOR),
            (Matrix, Matrix) => Ok(Type::MATRIX),
            (Vector, Vector) | (RowVector, RowVector) => {
                Err("use `.*` for elementwise multiplication or `dot_product`")
            }
            (Vector, Matrix) => {
                Err("transpose the vector with `'` to multiply a row_vector by a matrix")
            }
            (Matrix, RowVector) => {
                Err("transpose the row_vector with `'` to multiply a matrix by a vector")
            }
            _ => Err(""),
        },
        Div => match (lhs.base, rhs.base) {
            _ if both_scalar => Ok(scalar_result),
            _ if la && rhs.is_scalar() => Ok(lhs),
            (RowVector, Matrix) | (Matrix, Matrix) if la && ra => Ok(lhs),
            _ if lhs.is_scalar() || lhs == rhs => Err("use `./` for elementwise division"),
            _ => Err(""),
        },
        LeftDiv => match (lhs.base, rhs.base) {
            (Matrix, Vector | Matrix) if la && ra => Ok(rhs),
            _ => Err("`A \\ b` needs a matrix `A` and a vector or matrix `b`"),
        },
        EltMul | EltDiv | EltPow => {
            if both_scalar {
                Ok(Type::REAL)
            } else if la && rhs.is_scalar() {
                Ok(lhs)
            } else if lhs.is_scalar() && ra {
                Ok(rhs)
            } else if lhs == rhs {
                Ok(lhs)
            } else {
                Err("elementwise operators need two operands of the same type, or one scalar")
            }
        }
        Pow => {
            if both_scalar {
                Ok(Type::REAL)
            } else {
                Err("use `.^` for elementwise powers")
            }
        }
        Mod | IntDiv => {
            if lhs.is_int() && rhs.is_int() {
                Ok(Type::INT)
            } else {
                Err("`%` and `%/%` need two `int` operands")
            }
        }
        Lt | Le | Gt | Ge | Eq | Ne => {
            if both_scalar {
                Ok(Type::INT)
            } else {
                Err("comparisons are defined on `int` and `real` only")
            }
        }
        And | Or => {
            if both_scalar {
                Ok(Type::INT)
            } else {
                Err("`&&` and `||` need `int` or `real` operands")
            }
        }
    }
}

/// The result type of a prefix operator applied to `operand`.
pub fn unary(op: UnOp, operand: Type) -> Result<Type, &'static str> {
    match op {
        UnOp::Neg | UnOp::Plus => {
            if operand.dims == 0 {
                Ok(operand)
            } else {
                Err("arithmetic is not defined on arrays; declare a `vector` instead")
            }
        }
        UnOp::Not => {
            if operand.is_scalar() {
                Ok(Type::INT)
            } else {
                Err("`!` needs an `int` or `real` operand")
            }
        }
    }
}

/// The type of `operand'`: vectors and row vectors swap, matrices stay matrices.
pub fn transpose(operand: Type) -> Option<Type> {
    match operand {
        Type::VECTOR => Some(Type::ROW_VECTOR),
        Type::ROW_VECTOR => Some(Type::VECTOR),
        Type::MATRIX => Some(Type::MATRIX),
        _ => None,
    }
}

/// The verb used in a mismatch message: "cannot multiply `vector` by `vector` with `*`".
pub fn describe_mismatch(op: BinOp, lhs: Type, rhs: Type) -> String {
    use BinOp::*;
    let s = op.symbol();
    match op {
        Add => format!("cannot add `{lhs}` and `{rhs}` with `{s}`"),
        Sub => format!("cannot subtract `{rhs}` from `{lhs}` with `{s}`"),
        Mul | EltMul => format!("cannot multiply `{lhs}` by `{rhs}` with `{s}`"),
        Div | EltDiv | IntDiv | LeftDiv => format!("cannot divide `{lhs}` by `{rhs}` with `{s}`"),
        Pow | EltPow => format!("cannot raise `{lhs}` to the power `{rhs}` with `{s}`"),
        Mod => format!("cannot take `{lhs}` modulo `{rhs}` with `{s}`"),
        Lt | Le | Gt | Ge | Eq | Ne => format!("cannot compare `{lhs}` and `{rhs}` with `{s}`"),
        And | Or => format!("cannot combine `{lhs}` and `{rhs}` with `{s}`"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use BinOp::*;

    #[test]
    fn scalar_arithmetic_keeps_int() {
        assert_eq!(binary(Mul, Type::INT, Type::INT), Ok(Type::INT));
        assert_eq!(binary(Div, Type::INT, Type::INT), Ok(Type::INT));
        assert_eq!(binary(Add, Type::INT, Type::REAL), Ok(Type::REAL));
        assert_eq!(binary(Pow, Type::INT, Type::INT), Ok(Type::REAL));
        assert_eq!(binary(Mod, Type::INT, Type::INT), Ok(Type::INT));
        assert!(binary(Mod, Type::REAL, Type::INT).is_err());
    }

    #[test]
    fn linear_algebra_products() {
        assert_eq!(
            binary(Mul, Type::VECTOR, Type::ROW_VECTOR),
            Ok(Type::MATRIX)
        );
        assert_eq!(binary(Mul, Type::ROW_VECTOR, Type::VECTOR), Ok(Type::REAL));
        assert_eq!(binary(Mul, Type::MATRIX, Type::VECTOR), Ok(Type::VECTOR));
        assert_eq!(
            binary(Mul, Type::ROW_VECTOR, Type::MATRIX),
            Ok(Type::ROW_VECTOR)
        );
        assert_eq!(binary(Mul, Type::REAL, Type::VECTOR), Ok(Type::VECTOR));
        // `A \ b` solves A x = b, `b / A` solves x A = b (mdivide_left / mdivide_right)
        for (op, l, r, t) in [
            (LeftDiv, Type::MATRIX, Type::VECTOR, Type::VECTOR),
            (LeftDiv, Type::MATRIX, Type::MATRIX, Type::MATRIX),
            (Div, Type::ROW_VECTOR, Type::MATRIX, Type::ROW_VECTOR),
            (Div, Type::MATRIX, Type::MATRIX, Type::MATRIX),
        ] {
            assert_eq!(binary(op, l, r), Ok(t));
        }
        assert!(binary(LeftDiv, Type::VECTOR, Type::MATRIX).is_err());
        assert!(binary(Div, Type::VECTOR, Type::MATRIX).is_err());
        let err = binary(Mul, Type::VECTOR, Type::VECTOR).unwrap_err();
        assert!(err.contains("`.*`") && err.contains("dot_product"));
    }

    #[test]
    fn elementwise_and_mismatches() {
        assert_eq!(binary(EltMul, Type::VECTOR, Type::VECTOR), Ok(Type::VECTOR));
        assert_eq!(binary(EltDiv, Type::REAL, Type::VECTOR), Ok(Type::VECTOR));
        assert!(binary(Add, Type::VECTOR, Type::ROW_VECTOR).is_err());
        assert!(binary(Add, Type::array(Base::Real, 1), Type::REAL).is_err());
        assert_eq!(binary(Lt, Type::REAL, Type::INT), Ok(Type::INT));
        assert!(binary(Lt, Type::VECTOR, Type::INT).is_err());
        assert_eq!(transpose(Type::VECTOR), Some(Type::ROW_VECTOR));
        assert_eq!(transpose(Type::REAL), None);
        assert_eq!(
            describe_mismatch(Mul, Type::VECTOR, Type::VECTOR),
            "cannot multiply `vector` by `vector` with `*`"
        );
    }
}
