//! The quasirandom Hadamard quadrature directions of QNVB (specs/qnvb.md §4.1).

/// Sign of coordinate `j` of the `k`-th direction x_k ∈ {−1, +1}^d: +1 when popcount(k AND j) is
/// odd, −1 otherwise (specs/qnvb.md §4.1: row k of the Sylvester–Hadamard matrix with its sign
/// flipped; the overall sign does not matter because ±x_k are both used).
pub fn hadamard_sign(k: u64, j: u64) -> f64 {
    if (k & j).count_ones() % 2 == 1 {
        1.0
    } else {
        -1.0
    }
}

/// Writes x_k (length `out.len()` = d) into `out` (specs/qnvb.md §4.1).
pub fn hadamard_direction(k: u64, out: &mut [f64]) {
    for (j, x) in out.iter_mut().enumerate() {
        *x = hadamard_sign(k, j as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_example_d6() {
        // specs/qnvb.md §4.1 example
        let want = [
            [-1., -1., -1., -1., -1., -1.],
            [-1., 1., -1., 1., -1., 1.],
            [-1., -1., 1., 1., -1., -1.],
            [-1., 1., 1., -1., -1., 1.],
        ];
        let mut x = [0.0; 6];
        for (k, w) in want.iter().enumerate() {
            hadamard_direction(k as u64, &mut x);
            assert_eq!(&x, w);
        }
    }

    #[test]
    fn subsequence_exactness_d6() {
        // specs/qnvb.md §10.1: average of x_i·x_j over iterates {0, 1} is 1 when i ≡ j (mod 2)
        // and 0 otherwise; over {0, …, 7} it is the identity.
        let avg = |ks: std::ops::Range<u64>, i: u64, j: u64| {
            let n = (ks.end - ks.start) as f64;
            ks.map(|k| hadamard_sign(k, i) * hadamard_sign(k, j))
                .sum::<f64>()
                / n
        };
        for i in 0..6 {
            for j in 0..6 {
                let want2 = if i % 2 == j % 2 { 1.0 } else { 0.0 };
                assert_eq!(avg(0..2, i, j), want2, "{i} {j}");
                assert_eq!(avg(8..10, i, j), want2, "{i} {j}");
                assert_eq!(avg(0..8, i, j), if i == j { 1.0 } else { 0.0 });
            }
        }
    }
}
