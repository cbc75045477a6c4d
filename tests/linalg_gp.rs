//! Value and gradient tests of the matrix functions and Gaussian-process covariance functions
//! (`src/graph/linalg.rs`, `src/graph/eval/matrix.rs`): for each row, `target += <expr>;` over
//! the parameters below is compiled; its value at the test point must equal the reference (to
//! 1e-10 relative) and its gradient the central finite differences of its value.
//!
//! The reference values were computed independently with numpy 2.4 (`numpy.linalg.inv`,
//! `solve`, `det`, `cholesky`, and the kernels written out from the Stan Functions Reference) by
//! `python3 tests/reference/linalg_gp.py`, which prints the numbers quoted in [`table`]. Each
//! expression is a weighted sum `sum(W .* f(…))` with fixed weights, so every output element
//! enters both the value and the gradient.

mod common;

use bayesc::graph::Model;
use bayesc::inference::LogDensity;

const MODEL: &str = "
data {
  matrix[3, 3] W33; matrix[3, 2] W32; matrix[2, 3] W23; vector[3] w3;
  array[5] real x; array[3] real x2; array[4] vector[2] X;
  matrix[5, 5] W55; matrix[5, 3] W53; matrix[4, 4] W44;
}
parameters {
  matrix[3, 3] A; matrix[3, 2] B; vector[3] b; row_vector[3] c;
  real sigma; real l; real p; array[4] real z;
}
model {
  matrix[3, 3] S = tcrossprod(A) + diag_matrix(rep_vector(1, 3));
  target += EXPR;
  // every parameter appears in the log density (a parameter in no statement is an error);
  // the term adds 0 to the value and to every partial
  target += 0 * (sum(A) + sum(B) + sum(b) + sum(c) + sigma + l + p + sum(z));
}";

/// The test point: A, B (column-major), b, c, sigma, l, p, z (as in the Python script).
fn theta() -> Vec<f64> {
    let a = [[2.0, 0.3, -0.5], [0.4, 1.5, 0.2], [-0.3, 0.6, 1.8]];
    let bm = [[0.7, -1.1], [0.2, 0.5], [-0.4, 0.9]];
    let mut t = Vec::new();
    for j in 0..3 {
        for row in &a {
            t.push(row[j]);
        }
    }
    for j in 0..2 {
        for row in &bm {
            t.push(row[j]);
        }
    }
    t.extend([0.6, -0.8, 1.3]);
    t.extend([-0.2, 0.9, 0.4]);
    t.extend([1.3, 0.8, 1.7]);
    t.extend([0.1, -0.7, 0.45, 1.2]);
    t
}

fn json_matrix(rows: usize, cols: usize, f: impl Fn(usize, usize) -> f64) -> String {
    let r: Vec<String> = (0..rows)
        .map(|i| {
            let c: Vec<String> = (0..cols).map(|j| format!("{}", f(i, j))).collect();
            format!("[{}]", c.join(", "))
        })
        .collect();
    format!("[{}]", r.join(", "))
}

fn data() -> String {
    let w33 = [[0.3, -0.2, 0.5], [1.1, 0.4, -0.6], [0.2, 0.9, -0.3]];
    let w32 = [[0.5, -0.4], [0.3, 0.8], [-0.7, 0.2]];
    let w55 =
        |i: usize, j: usize| (i + 1) as f64 * 0.1 - (j + 1) as f64 * 0.07 + 0.03 * (i * j) as f64;
    format!(
        r#"{{"W33": {}, "W32": {}, "W23": {}, "w3": [0.4, -1.2, 0.7],
            "x": [-1.0, -0.3, 0.2, 0.9, 1.6], "x2": [-0.6, 0.5, 1.1],
            "X": [[0.0, 0.5], [1.0, -0.2], [-0.4, 0.8], [0.3, 0.3]],
            "W55": {}, "W53": {}, "W44": {}}}"#,
        json_matrix(3, 3, |i, j| w33[i][j]),
        json_matrix(3, 2, |i, j| w32[i][j]),
        json_matrix(2, 3, |i, j| w32[j][i]),
        json_matrix(5, 5, w55),
        json_matrix(5, 3, w55),
        json_matrix(4, 4, w55),
    )
}

fn model(expr: &str) -> Model {
    common::compile_source(
        "linalg.bayes",
        &MODEL.replace("EXPR", expr),
        Some(&data()),
        &[],
    )
}

/// (expression, reference value from `tests/reference/linalg_gp.py`).
#[rustfmt::skip]
fn table() -> Vec<(&'static str, f64)> {
    vec![
        ("sum(W33 .* inverse(A))", 0.074656188605108059),
        ("sum(W33 .* inverse_spd(S))", 0.066944758843904426),
        ("determinant(A)", 4.5809999999999995),
        ("log_determinant(A)", 1.521917314904605),
        ("log_determinant(S)", 4.1555832856356236),
        ("dot_product(w3, mdivide_left(A, b))", 2.128749181401441),
        ("dot_product(w3, A \\ b)", 2.128749181401441),
        ("sum(W32 .* mdivide_left(A, B))", 0.93968565815324168),
        ("sum(W32 .* (A \\ B))", 0.93968565815324168),
        ("dot_product(w3, mdivide_right(c, A))", -0.73569089718402092),
        ("dot_product(w3, c / A)", -0.73569089718402092),
        ("sum(W23 .* mdivide_right(B', A))", 0.84682383759004598),
        ("sum(W23 .* (B' / A))", 0.84682383759004598),
        ("dot_product(w3, mdivide_left_tri_low(A, b))", 1.5396666666666667),
        ("sum(W32 .* mdivide_left_tri_low(A, B))", 0.96472222222222237),
        ("dot_product(w3, mdivide_right_tri_low(c, A))", -0.52533333333333343),
        ("sum(W23 .* mdivide_right_tri_low(B', A))", 0.76566666666666672),
        ("sum(W33 .* cholesky_decompose(S))", 1.9791258399347955),
        ("sum(W33 .* multiply_lower_tri_self_transpose(A))", 1.5910000000000004),
        ("sum(W33 .* multiply_lower_tri_self_transpose(B))", 0.013000000000000012),
        ("sum(W33 .* quad_form_diag(A, b))", -1.1736000000000002),
        ("sum(W23[1:2, 1:2] .* quad_form_sym(S, B))", 13.663910000000001),
        ("quad_form_sym(S, b)", 6.5221),
        ("sum(W33 .* add_diag(A, sigma))", 1.6700000000000002),
        ("sum(W33 .* add_diag(A, b))", 0.62000000000000011),
        ("sum(W55 .* gp_exp_quad_cov(x, sigma, l))", 5.1469121864212255),
        ("sum(W55 .* cov_exp_quad(x, sigma, l))", 5.1469121864212255),
        ("sum(W53 .* gp_exp_quad_cov(x, x2, sigma, l))", 3.4060320338876462),
        ("sum(W44 .* gp_exp_quad_cov(X, sigma, l))", 2.5869484447965436),
        ("sum(W44 .* gp_exp_quad_cov(z, sigma, l))", 2.4112179023680622),
        ("sum(W55 .* gp_matern32_cov(x, sigma, l))", 4.690362992717473),
        ("sum(W53 .* gp_matern32_cov(x, x2, sigma, l))", 3.0128091913086172),
        ("sum(W44 .* gp_matern32_cov(z, sigma, l))", 2.2178207307981506),
        ("sum(W55 .* gp_matern52_cov(x, sigma, l))", 4.8509943499400414),
        ("sum(W44 .* gp_matern52_cov(X, sigma, l))", 2.4354780793646573),
        ("sum(W44 .* gp_matern52_cov(z, sigma, l))", 2.2839492182756822),
        ("sum(W55 .* gp_periodic_cov(x, sigma, l, p))", 3.8095258380290993),
        ("sum(W53 .* gp_periodic_cov(x, x2, sigma, l, p))", 1.4651639803841192),
        ("sum(W44 .* gp_periodic_cov(z, sigma, l, p))", 1.8089301964973923),
    ]
}

/// Value against the reference, gradient against central differences (h = 1e-6).
fn check(expr: &str, reference: f64) -> Result<(), String> {
    let m = model(expr);
    let t = theta();
    assert_eq!(m.dim(), t.len(), "{expr}: parameter count");
    let mut g = vec![0.0; t.len()];
    let v = m
        .log_density_grad(&t, &mut g)
        .map_err(|e| format!("{expr}: {e}"))?;
    let v0 = m.log_density(&t).map_err(|e| format!("{expr}: {e}"))?;
    if (v - reference).abs() > 1e-10 * reference.abs().max(1.0) || v != v0 {
        return Err(format!(
            "{expr}: value {v} (value-only path {v0}), reference {reference}"
        ));
    }
    let h = 1e-6;
    for i in 0..t.len() {
        let (mut up, mut dn) = (t.clone(), t.clone());
        up[i] += h;
        dn[i] -= h;
        let fd = (m.log_density(&up).unwrap() - m.log_density(&dn).unwrap()) / (2.0 * h);
        if (fd - g[i]).abs() > 1e-6 * g[i].abs().max(1.0) {
            return Err(format!(
                "{expr}: ∂/∂θ[{i}] = {} but finite differences give {fd}",
                g[i]
            ));
        }
    }
    Ok(())
}

#[test]
fn matrix_and_gp_functions_match_numpy_and_finite_differences() {
    let failures: Vec<String> = table()
        .into_iter()
        .filter_map(|(e, r)| check(e, r).err())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn triangular_solves_ignore_the_upper_triangle() {
    // Gradient with respect to the upper triangle of A (θ[3], θ[6], θ[7]) is exactly zero.
    for expr in [
        "dot_product(w3, mdivide_left_tri_low(A, b))",
        "sum(W23 .* mdivide_right_tri_low(B', A))",
        "sum(W33 .* multiply_lower_tri_self_transpose(A))",
    ] {
        let m = model(expr);
        let t = theta();
        let mut g = vec![0.0; t.len()];
        m.log_density_grad(&t, &mut g).unwrap();
        assert_eq!([g[3], g[6], g[7]], [0.0; 3], "{expr}");
        assert!(g[0] != 0.0, "{expr}");
    }
}

#[test]
fn singular_and_invalid_inputs_are_domain_errors() {
    let m = model("sum(inverse(A - A))");
    let e = m.log_density(&theta()).unwrap_err();
    assert!(e.to_string().contains("singular"), "{e}");
    assert!(e.recoverable, "{e}");
    let m = model("sum(cholesky_decompose(-S))");
    let e = m.log_density(&theta()).unwrap_err();
    assert!(e.to_string().contains("not positive definite"), "{e}");
    let m = model("sum(gp_exp_quad_cov(x, -sigma, l))");
    let e = m.log_density(&theta()).unwrap_err();
    assert!(e.to_string().contains("must be positive"), "{e}");
    let m = model("sum(inverse_spd(A))");
    let e = m.log_density(&theta()).unwrap_err();
    assert!(e.to_string().contains("not symmetric"), "{e}");
}
