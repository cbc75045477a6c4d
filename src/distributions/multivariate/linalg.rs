//! Small dense linear algebra for the multivariate families: Cholesky factorisation and
//! triangular solves on column-major K × K matrices (K is a model's dimension, typically < 50).

/// Element (i, j) of a column-major matrix with `k` rows.
#[inline]
pub fn at(a: &[f64], k: usize, i: usize, j: usize) -> f64 {
    a[i + j * k]
}

/// The lower Cholesky factor L of a symmetric positive-definite K × K matrix `a` (column-major;
/// only the lower triangle is read), with L Lᵀ = a (Golub & Van Loan, *Matrix Computations*,
/// 4th ed., Algorithm 4.2.1). `None` when a pivot is not positive or not finite (the matrix is
/// not positive definite).
pub fn cholesky(a: &[f64], k: usize) -> Option<Vec<f64>> {
    let mut l = vec![0.0; k * k];
    for j in 0..k {
        let mut d = at(a, k, j, j);
        for p in 0..j {
            d -= l[j + p * k] * l[j + p * k];
        }
        if d.is_nan() || d <= 0.0 || !d.is_finite() {
            return None;
        }
        let djj = d.sqrt();
        l[j + j * k] = djj;
        for i in j + 1..k {
            let mut s = at(a, k, i, j);
            for p in 0..j {
                s -= l[i + p * k] * l[j + p * k];
            }
            l[i + j * k] = s / djj;
        }
    }
    Some(l)
}

/// Solves L z = r in place (forward substitution), L lower triangular K × K column-major
/// (the strict upper triangle is ignored).
pub fn forward_solve(l: &[f64], k: usize, r: &mut [f64]) {
    for i in 0..k {
        let mut s = r[i];
        for j in 0..i {
            s -= l[i + j * k] * r[j];
        }
        r[i] = s / l[i + i * k];
    }
}

/// Solves Lᵀ w = z in place (back substitution), L lower triangular K × K column-major.
pub fn backward_solve(l: &[f64], k: usize, z: &mut [f64]) {
    for i in (0..k).rev() {
        let mut s = z[i];
        for j in i + 1..k {
            s -= l[j + i * k] * z[j];
        }
        z[i] = s / l[i + i * k];
    }
}

/// (L Lᵀ)⁻¹ for a lower Cholesky factor L (column-major K × K), column by column.
pub fn inverse_from_cholesky(l: &[f64], k: usize) -> Vec<f64> {
    let mut inv = vec![0.0; k * k];
    for j in 0..k {
        let col = &mut inv[j * k..(j + 1) * k];
        col[j] = 1.0;
        forward_solve(l, k, col);
        backward_solve(l, k, col);
    }
    inv
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cholesky_reproduces_the_matrix_and_solves_invert_it() {
        // A = [[4, 2, 0.4], [2, 3, 0.5], [0.4, 0.5, 2]] (column-major = row-major: symmetric).
        let a = [4.0, 2.0, 0.4, 2.0, 3.0, 0.5, 0.4, 0.5, 2.0];
        let l = cholesky(&a, 3).expect("positive definite");
        for i in 0..3 {
            for j in 0..3 {
                let s: f64 = (0..3).map(|p| at(&l, 3, i, p) * at(&l, 3, j, p)).sum();
                assert!((s - at(&a, 3, i, j)).abs() < 1e-14);
            }
        }
        assert_eq!(at(&l, 3, 0, 1), 0.0);
        let inv = inverse_from_cholesky(&l, 3);
        for i in 0..3 {
            for j in 0..3 {
                let s: f64 = (0..3).map(|p| at(&a, 3, i, p) * at(&inv, 3, p, j)).sum();
                assert!((s - if i == j { 1.0 } else { 0.0 }).abs() < 1e-13);
            }
        }
        assert!(cholesky(&[1.0, 2.0, 2.0, 1.0], 2).is_none());
    }
}
