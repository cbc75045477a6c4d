//! Checks of the structured data types (simplex, ordered, positive ordered, Cholesky factors,
//! covariance and correlation matrices) on bound values, one innermost block at a time.

// Checks are written `!(v >= 0.0)` on purpose: a NaN value must fail them.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

use crate::syntax::ast::{SizedBase, VarDecl};

use super::error::{DataError, DataErrorKind};
use super::eval::type_string;
use super::json::unravel;

/// Tolerance for a simplex's sum, a Cholesky factor of a correlation matrix's unit rows, a
/// correlation matrix's unit diagonal and the symmetry of covariance matrices (relative).
/// The brief's 1e-8, the order of magnitude Stan's `check_simplex` uses.
pub const CONSTRAINT_TOLERANCE: f64 = 1e-8;

/// How the binder names values in messages.
pub(crate) trait Locate {
    /// Names element `flat` (row-major over the declared dims), e.g. a CSV row and column.
    fn locate(&self, flat: usize) -> String;
    /// Names the whole value, e.g. a JSON key.
    fn whole(&self) -> String;
}

/// Simplex, ordered, positive ordered, Cholesky factors, covariance and correlation
/// matrices, checked on each innermost block (one per element of the enclosing array).
pub(crate) fn check_structure(
    decl: &VarDecl,
    dims: &[usize],
    values: &[f64],
    prov: &dyn Locate,
) -> Result<(), DataError> {
    let name = &decl.name.name;
    let ty = type_string(&decl.ty);
    let n_array = decl.ty.array_dims.len().min(dims.len());
    if values.is_empty() || matches!(decl.ty.base, SizedBase::Int | SizedBase::Real) {
        return Ok(());
    }
    // `dims` are the dims of `values` here (non-empty), so the product cannot overflow.
    let block: usize = dims[n_array..].iter().product();
    let help = format!("correct the data, or declare `{name}` without the constraint");
    for (b, chunk) in values.chunks(block).enumerate() {
        let start = b * block;
        let which = if n_array == 0 {
            format!("`{name}`")
        } else {
            let idx: Vec<String> = unravel(b, &dims[..n_array])
                .iter()
                .map(|i| (i + 1).to_string())
                .collect();
            format!("`{name}[{}]`", idx.join(", "))
        };
        let fail = |msg: String| {
            Err(DataError::new(DataErrorKind::ConstraintViolation, msg).with_help(help.clone()))
        };
        let k = *dims
            .last()
            .expect("a structured type has at least one dimension");
        match &decl.ty.base {
            SizedBase::Simplex(_) => {
                if let Some(i) = chunk.iter().position(|v| !(*v >= 0.0)) {
                    return fail(format!(
                        "{}: {} is negative, but `{name}` is declared `{ty}` (non-negative \
                         elements that sum to 1)",
                        prov.locate(start + i),
                        chunk[i]
                    ));
                }
                let sum: f64 = chunk.iter().sum();
                if !((sum - 1.0).abs() <= CONSTRAINT_TOLERANCE) {
                    return fail(format!(
                        "{}: the elements of {which} sum to {sum}, but `{name}` is declared \
                         `{ty}` (they must sum to 1 within {CONSTRAINT_TOLERANCE:e})",
                        prov.whole()
                    ));
                }
            }
            SizedBase::Ordered(_) | SizedBase::PositiveOrdered(_) => {
                let positive = matches!(decl.ty.base, SizedBase::PositiveOrdered(_));
                if positive && !(chunk[0] > 0.0) {
                    return fail(format!(
                        "{}: {} is not positive, but `{name}` is declared `{ty}`",
                        prov.locate(start),
                        chunk[0]
                    ));
                }
                for i in 1..chunk.len() {
                    if !(chunk[i] > chunk[i - 1]) {
                        return fail(format!(
                            "{}: {} is not greater than the element before it ({}), but \
                             `{name}` is declared `{ty}` (strictly increasing)",
                            prov.locate(start + i),
                            chunk[i],
                            chunk[i - 1]
                        ));
                    }
                }
            }
            SizedBase::CholeskyFactorCov(_) | SizedBase::CholeskyFactorCorr(_) => {
                for i in 0..k {
                    for j in i + 1..k {
                        if chunk[i * k + j] != 0.0 {
                            return fail(format!(
                                "{}: {} is above the diagonal, but `{name}` is declared \
                                 `{ty}` (lower triangular)",
                                prov.locate(start + i * k + j),
                                chunk[i * k + j]
                            ));
                        }
                    }
                    if !(chunk[i * k + i] > 0.0) {
                        return fail(format!(
                            "{}: the diagonal element {} is not positive, but `{name}` is \
                             declared `{ty}`",
                            prov.locate(start + i * k + i),
                            chunk[i * k + i]
                        ));
                    }
                    if matches!(decl.ty.base, SizedBase::CholeskyFactorCorr(_)) {
                        let norm2: f64 = chunk[i * k..i * k + k].iter().map(|x| x * x).sum();
                        if !((norm2 - 1.0).abs() <= CONSTRAINT_TOLERANCE) {
                            return fail(format!(
                                "{}: row {} of {which} has squared length {norm2}, but \
                                 `{name}` is declared `{ty}` (rows of unit length)",
                                prov.whole(),
                                i + 1
                            ));
                        }
                    }
                }
            }
            SizedBase::CovMatrix(_) | SizedBase::CorrMatrix(_) => {
                for i in 0..k {
                    for j in 0..i {
                        let (a, b) = (chunk[i * k + j], chunk[j * k + i]);
                        let scale = 1f64.max(a.abs()).max(b.abs());
                        if !((a - b).abs() <= CONSTRAINT_TOLERANCE * scale) {
                            return fail(format!(
                                "{}: {a} differs from its mirror element {b}, but `{name}` \
                                 is declared `{ty}` (symmetric)",
                                prov.locate(start + i * k + j)
                            ));
                        }
                    }
                    if matches!(decl.ty.base, SizedBase::CorrMatrix(_))
                        && !((chunk[i * k + i] - 1.0).abs() <= CONSTRAINT_TOLERANCE)
                    {
                        return fail(format!(
                            "{}: the diagonal element {} is not 1, but `{name}` is declared \
                             `{ty}`",
                            prov.locate(start + i * k + i),
                            chunk[i * k + i]
                        ));
                    }
                }
                if !is_positive_definite(chunk, k) {
                    return fail(format!(
                        "{}: {which} is not positive definite, but `{name}` is declared \
                         `{ty}`",
                        prov.whole()
                    ));
                }
            }
            SizedBase::Vector(_) | SizedBase::RowVector(_) | SizedBase::Matrix(..) => {}
            SizedBase::Int | SizedBase::Real => {}
        }
    }
    Ok(())
}

/// Whether the row-major `k × k` matrix `a` has a Cholesky factor (is symmetric positive
/// definite, reading its lower triangle).
fn is_positive_definite(a: &[f64], k: usize) -> bool {
    let mut l = vec![0.0; k * k];
    for i in 0..k {
        for j in 0..=i {
            let mut s = a[i * k + j];
            for p in 0..j {
                s -= l[i * k + p] * l[j * k + p];
            }
            if i == j {
                if !(s > 0.0) {
                    return false;
                }
                l[i * k + i] = s.sqrt();
            } else {
                l[i * k + j] = s / l[j * k + j];
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    struct At;
    impl Locate for At {
        fn locate(&self, flat: usize) -> String {
            format!("at {flat}")
        }
        fn whole(&self) -> String {
            "whole".into()
        }
    }

    /// Checks `values` against the single declaration in `data { <decl> }`.
    fn check(decl: &str, dims: &[usize], values: &[f64]) -> Result<(), String> {
        let program = crate::syntax::parse_program(&format!("data {{ {decl} }}"), 0)
            .expect("test declaration parses");
        check_structure(&program.data[0], dims, values, &At).map_err(|e| e.message)
    }

    #[test]
    fn accepted_values() {
        assert_eq!(check("simplex[3] s;", &[3], &[0.25, 0.25, 0.5]), Ok(()));
        assert_eq!(check("positive_ordered[2] p;", &[2], &[0.5, 2.0]), Ok(()));
        assert_eq!(
            check("corr_matrix[2] R;", &[2, 2], &[1.0, 0.3, 0.3, 1.0]),
            Ok(())
        );
        assert_eq!(
            check("cholesky_factor_cov[2] L;", &[2, 2], &[2.0, 0.0, -1.0, 0.5]),
            Ok(())
        );
        assert_eq!(
            check("array[2] ordered[2] o;", &[2, 2], &[1.0, 2.0, -1.0, 0.0]),
            Ok(())
        );
    }

    #[test]
    fn violations_name_the_element() {
        assert_eq!(
            check("simplex[3] s;", &[3], &[-0.5, 0.5, 1.0]),
            Err(
                "at 0: -0.5 is negative, but `s` is declared `simplex[3]` (non-negative elements \
                 that sum to 1)"
                    .into()
            )
        );
        assert_eq!(
            check("positive_ordered[2] p;", &[2], &[0.0, 2.0]),
            Err("at 0: 0 is not positive, but `p` is declared `positive_ordered[2]`".into())
        );
        assert_eq!(
            check("array[2] ordered[2] o;", &[2, 2], &[1.0, 2.0, 0.0, 0.0]),
            Err(
                "at 3: 0 is not greater than the element before it (0), but `o` is declared \
                 `array[2] ordered[2]` (strictly increasing)"
                    .into()
            )
        );
        assert_eq!(
            check("corr_matrix[2] R;", &[2, 2], &[1.0, 0.3, 0.3, 2.0]),
            Err(
                "at 3: the diagonal element 2 is not 1, but `R` is declared `corr_matrix[2]`"
                    .into()
            )
        );
        assert_eq!(
            check("cov_matrix[2] S;", &[2, 2], &[1.0, 0.3, 0.2, 1.0]),
            Err(
                "at 2: 0.2 differs from its mirror element 0.3, but `S` is declared \
                 `cov_matrix[2]` (symmetric)"
                    .into()
            )
        );
        assert_eq!(
            check("cholesky_factor_cov[2] L;", &[2, 2], &[1.0, 0.1, 0.0, 1.0]),
            Err("at 1: 0.1 is above the diagonal, but `L` is declared \
                 `cholesky_factor_cov[2]` (lower triangular)"
                .into())
        );
        assert_eq!(
            check("cholesky_factor_corr[2] L;", &[2, 2], &[1.0, 0.0, 0.5, 0.5]),
            Err(
                "whole: row 2 of `L` has squared length 0.5, but `L` is declared \
                 `cholesky_factor_corr[2]` (rows of unit length)"
                    .into()
            )
        );
    }

    #[test]
    fn positive_definiteness() {
        assert!(is_positive_definite(&[2.0, 1.0, 1.0, 2.0], 2));
        assert!(!is_positive_definite(&[1.0, 2.0, 2.0, 1.0], 2));
        assert!(!is_positive_definite(&[1.0, 0.0, 0.0, f64::NAN], 2));
    }
}
