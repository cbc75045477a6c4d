//! The dense and elementwise nodes of the graph engine (issue 10 item 1): every product shape
//! (var × var, var × data, data × var, matrix × vector, row vector × matrix), the activations,
//! row-wise softmax / log_softmax, `add_row_vector`, the `rep_matrix` broadcast and
//! `categorical_logit` over the rows of a matrix, each checked against central finite
//! differences of the log density and against a closed-form value; then a whole one-hidden-layer
//! BNN density against finite differences.

use bayesc::data::{BoundData, DataValue};
use bayesc::graph::Model;
use bayesc::inference::LogDensity;
use bayesc::pipeline;
use bayesc::syntax::parser::parse_program;
use bayesc::syntax::source::SourceMap;

/// Data: X (4 × 3), d (3), y (array[4] int in 1..2). Parameters: M (3 × 2), v (3), w (row 3),
/// u (2), and a matrix E (4 × 3) of log odds.
fn model(expr: &str) -> Model {
    let src = format!(
        "data {{ matrix[4, 3] X; vector[3] d; array[4] int y; }}
parameters {{ matrix[3, 2] M; vector[3] v; row_vector[3] w; vector[2] u; matrix[4, 3] E; }}
model {{ target += {expr}; }}"
    );
    let prog = parse_program(&src, 0).unwrap_or_else(|e| panic!("{expr}: parse error {e:?}"));
    let mut bd = BoundData::default();
    let real = |dims: Vec<usize>, values: Vec<f64>| DataValue {
        dims,
        values: std::sync::Arc::new(values),
        is_int: false,
        column_major: false,
    };
    bd.values.insert(
        "X".into(),
        real(
            vec![4, 3],
            vec![
                1.0, 0.5, -1.0, 2.0, -0.3, 0.4, 0.1, 0.9, 1.5, -1.2, 0.0, 0.6,
            ],
        ),
    );
    bd.values
        .insert("d".into(), real(vec![3], vec![1.5, -0.5, 2.0]));
    bd.values.insert(
        "y".into(),
        DataValue {
            dims: vec![4],
            values: std::sync::Arc::new(vec![1.0, 3.0, 2.0, 3.0]),
            is_int: true,
            column_major: false,
        },
    );
    Model::new(&prog, &bd).unwrap_or_else(|e| panic!("{expr}: {e}"))
}

/// The test point: M column-major, v, w, u, E column-major (d = 6 + 3 + 3 + 2 + 12 = 26).
fn point() -> Vec<f64> {
    (0..26)
        .map(|i| 0.9 * ((i as f64) * 1.3 + 0.2).sin())
        .collect()
}

/// Row-major views of the test point, for closed forms.
struct P {
    m: [[f64; 2]; 3],
    v: [f64; 3],
    w: [f64; 3],
    u: [f64; 2],
    e: [[f64; 3]; 4],
    x: [[f64; 3]; 4],
}

fn unpack(z: &[f64]) -> P {
    let mut p = P {
        m: [[0.0; 2]; 3],
        v: [0.0; 3],
        w: [0.0; 3],
        u: [0.0; 2],
        e: [[0.0; 3]; 4],
        // The data values above are row-major.
        x: [
            [1.0, 0.5, -1.0],
            [2.0, -0.3, 0.4],
            [0.1, 0.9, 1.5],
            [-1.2, 0.0, 0.6],
        ],
    };
    for j in 0..2 {
        for i in 0..3 {
            p.m[i][j] = z[i + 3 * j];
        }
    }
    p.v.copy_from_slice(&z[6..9]);
    p.w.copy_from_slice(&z[9..12]);
    p.u.copy_from_slice(&z[12..14]);
    for j in 0..3 {
        for i in 0..4 {
            p.e[i][j] = z[14 + i + 4 * j];
        }
    }
    p
}

/// Asserts the gradient of `m` at `z` equals central finite differences (relative `tol`).
fn check_fd(what: &str, m: &dyn LogDensity, z: &[f64], tol: f64) {
    let d = m.dim();
    let mut g = vec![0.0; d];
    let f0 = m.log_density_grad(z, &mut g).unwrap();
    let f1 = m.log_density(z).unwrap();
    assert!(
        (f0 - f1).abs() <= 1e-12 * f0.abs().max(1.0),
        "{what}: both paths"
    );
    let scale = g.iter().fold(1.0f64, |a, x| a.max(x.abs()));
    for i in 0..d {
        let h = 1e-5 * z[i].abs().max(1.0);
        let (mut zp, mut zm) = (z.to_vec(), z.to_vec());
        zp[i] += h;
        zm[i] -= h;
        let fd = (m.log_density(&zp).unwrap() - m.log_density(&zm).unwrap()) / (2.0 * h);
        assert!(
            (g[i] - fd).abs() <= tol * scale,
            "{what}: ∂/∂ζ[{i}] = {} vs finite difference {fd}",
            g[i]
        );
    }
}

fn lse(xs: &[f64]) -> f64 {
    let m = xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    m + xs.iter().map(|x| (x - m).exp()).sum::<f64>().ln()
}

type Closed = fn(&P) -> f64;

#[rustfmt::skip]
fn table() -> Vec<(&'static str, Closed)> {
    vec![
        // var × var (3×2 · 2×3), var × data, data × var, matrix × vector, row vector × matrix
        ("sum(M * M')", |p| { let mut s = 0.0; for i in 0..3 { for k in 0..3 { for j in 0..2 { s += p.m[i][j] * p.m[k][j]; } } } s }),
        ("sum(M' * X')", |p| { let mut s = 0.0; for j in 0..2 { for n in 0..4 { for i in 0..3 { s += p.m[i][j] * p.x[n][i]; } } } s }),
        ("sum(X * M)", |p| { let mut s = 0.0; for n in 0..4 { for j in 0..2 { for i in 0..3 { s += p.x[n][i] * p.m[i][j]; } } } s }),
        ("dot_self(M * u)", |p| (0..3).map(|i| (p.m[i][0] * p.u[0] + p.m[i][1] * p.u[1]).powi(2)).sum()),
        ("dot_self(w * M)", |p| (0..2).map(|j| (0..3).map(|i| p.w[i] * p.m[i][j]).sum::<f64>().powi(2)).sum()),
        ("sum((X * M) .* (X * M))", |p| { let mut s = 0.0; for n in 0..4 { for j in 0..2 { let a: f64 = (0..3).map(|i| p.x[n][i] * p.m[i][j]).sum(); s += a * a; } } s }),
        // activations over a matrix (a node per call, one partial per element)
        ("sum(tanh(E))", |p| p.e.iter().flatten().map(|x| x.tanh()).sum()),
        ("sum(relu(E) .* E)", |p| p.e.iter().flatten().map(|x| x.max(0.0) * x).sum()),
        ("sum(softplus(E))", |p| p.e.iter().flatten().map(|x| x.exp().ln_1p()).sum()),
        ("sum(inv_logit(E) .* E)", |p| p.e.iter().flatten().map(|x| x / (1.0 + (-x).exp())).sum()),
        ("sum(log1p_exp(E)) + sum(exp(E))", |p| p.e.iter().flatten().map(|x| x.exp().ln_1p() + x.exp()).sum()),
        // row-wise softmax / log_softmax, weighted so the gradient is not trivially zero
        ("sum(softmax(E) .* X)", |p| { let mut s = 0.0; for n in 0..4 { let l = lse(&p.e[n]); for k in 0..3 { s += (p.e[n][k] - l).exp() * p.x[n][k]; } } s }),
        ("sum(log_softmax(E) .* X)", |p| { let mut s = 0.0; for n in 0..4 { let l = lse(&p.e[n]); for k in 0..3 { s += (p.e[n][k] - l) * p.x[n][k]; } } s }),
        // broadcast of a row vector over rows: add_row_vector and rep_matrix(b', N)
        ("dot_self(to_vector(add_row_vector(E, v)))", |p| { let mut s = 0.0; for n in 0..4 { for k in 0..3 { s += (p.e[n][k] + p.v[k]).powi(2); } } s }),
        ("dot_self(to_vector(add_row_vector(X, w)))", |p| { let mut s = 0.0; for n in 0..4 { for k in 0..3 { s += (p.x[n][k] + p.w[k]).powi(2); } } s }),
        ("sum(tanh(E + rep_matrix(v', 4)))", |p| { let mut s = 0.0; for n in 0..4 { for k in 0..3 { s += (p.e[n][k] + p.v[k]).tanh(); } } s }),
        ("sum(tanh(X * M + rep_matrix(u', 4)))", |p| { let mut s = 0.0; for n in 0..4 { for j in 0..2 { s += ((0..3).map(|i| p.x[n][i] * p.m[i][j]).sum::<f64>() + p.u[j]).tanh(); } } s }),
        // categorical_logit over the rows of a matrix: y = {1, 3, 2, 3}
        ("categorical_logit_lpmf(y | E)", |p| { let y = [1, 3, 2, 3]; (0..4).map(|n| p.e[n][y[n] - 1] - lse(&p.e[n])).sum() }),
        ("categorical_logit_lupmf(y | X * append_col(M, v))", |p| { let y = [1, 3, 2, 3]; (0..4).map(|n| { let eta: Vec<f64> = (0..3).map(|k| (0..3).map(|i| p.x[n][i] * if k < 2 { p.m[i][k] } else { p.v[i] }).sum()).collect(); eta[y[n] - 1] - lse(&eta) }).sum() }),
    ]
}

#[test]
fn dense_nodes_match_closed_forms_and_finite_differences() {
    let z = point();
    let p = unpack(&z);
    for (expr, closed) in table() {
        let m = model(expr);
        let v = m.log_density(&z).unwrap();
        let want = closed(&p);
        assert!(
            (v - want).abs() <= 1e-12 * want.abs().max(1.0),
            "{expr}: value {v}, closed form {want}"
        );
        check_fd(expr, &m, &z, 1e-7);
    }
}

#[test]
fn categorical_logit_rows_needs_one_outcome_per_row() {
    let m = model("categorical_logit_lpmf(y | E[1:3])");
    let err = m.log_density(&point()).unwrap_err().to_string();
    assert!(
        err.contains("Outcome has 4 elements but log odds parameter has 3 rows"),
        "message: {err}"
    );
}

#[test]
fn check_accepts_the_new_signatures_and_refuses_what_does_not_run() {
    let ok = "data { int N; matrix[N, 3] X; array[N] int y; }
parameters { matrix[3, 2] W; vector[2] b; }
model {
  matrix[N, 2] Z = relu(add_row_vector(X * W, b));
  y ~ categorical_logit(append_col(softplus(Z), log_softmax(Z)));
}";
    let mut sources = SourceMap::new();
    pipeline::check_source(&mut sources, "ok.bayes", ok).expect("new signatures check");
    for (bad, needle) in [
        ("add_row_vector(X, 1.0)", "add_row_vector"),
        ("categorical_logit_rng(X)", "categorical_logit_rng"),
    ] {
        let src = format!(
            "data {{ int N; matrix[N, 3] X; }}
generated quantities {{ real q = sum({bad}); }}"
        );
        let mut sources = SourceMap::new();
        let Err(pipeline::Failure::Reported(diags)) =
            pipeline::check_source(&mut sources, "bad.bayes", &src)
        else {
            panic!("{bad} should not check");
        };
        let text = format!("{diags:?}");
        assert!(text.contains(needle), "{bad}: {text}");
    }
}

/// One hidden tanh layer on synthetic data (N = 12, p = 3, H = 4): the whole density, with a
/// scale parameter (its Jacobian adjustment included), against finite differences.
#[test]
fn bnn_density_gradient_matches_finite_differences() {
    let src = "data { int N; matrix[N, 3] X; vector[N] y; }
parameters { matrix[3, 4] W1; vector[4] b1; vector[4] w2; real b2; real<lower=0> sigma; }
model {
  matrix[N, 4] Z = tanh(X * W1 + rep_matrix(b1', N));
  to_vector(W1) ~ normal(0, 1);
  b1 ~ normal(0, 1);
  w2 ~ normal(0, 1);
  b2 ~ normal(0, 1);
  sigma ~ normal(0, 1);
  y ~ normal(Z * w2 + b2, sigma);
}";
    let prog = parse_program(src, 0).unwrap();
    let mut bd = BoundData::default();
    let n = 12;
    bd.values.insert(
        "N".into(),
        DataValue {
            dims: vec![],
            values: std::sync::Arc::new(vec![n as f64]),
            is_int: true,
            column_major: false,
        },
    );
    bd.values.insert(
        "X".into(),
        DataValue {
            dims: vec![n, 3],
            values: std::sync::Arc::new((0..3 * n).map(|i| ((i as f64) * 0.77).cos()).collect()),
            is_int: false,
            column_major: false,
        },
    );
    bd.values.insert(
        "y".into(),
        DataValue {
            dims: vec![n],
            values: std::sync::Arc::new((0..n).map(|i| ((i as f64) * 1.9).sin()).collect()),
            is_int: false,
            column_major: false,
        },
    );
    let m = Model::new(&prog, &bd).unwrap();
    assert_eq!(m.dim(), 12 + 4 + 4 + 2);
    let z: Vec<f64> = (0..m.dim())
        .map(|i| 0.5 * ((i as f64) * 0.9).sin())
        .collect();
    check_fd("bnn", &m, &z, 1e-7);
}

/// Data of the stdlib test: N = 10 rows, 3 features, a real outcome and a class in 1..3.
fn nn_data() -> BoundData {
    let n = 10;
    let mut bd = BoundData::default();
    let mut put = |name: &str, dims: Vec<usize>, values: Vec<f64>, is_int: bool| {
        bd.values.insert(
            name.into(),
            DataValue {
                dims,
                values: std::sync::Arc::new(values),
                is_int,
                column_major: false,
            },
        );
    };
    put("N", vec![], vec![n as f64], true);
    put(
        "X",
        vec![n, 3],
        (0..3 * n).map(|i| ((i as f64) * 0.61).sin()).collect(),
        false,
    );
    put(
        "y",
        vec![n],
        (0..n).map(|i| ((i as f64) * 0.3).cos()).collect(),
        false,
    );
    put(
        "c",
        vec![n],
        (0..n).map(|i| (1 + i % 3) as f64).collect(),
        true,
    );
    bd
}

fn compile_with_includes(src: &str) -> Model {
    let mut sources = SourceMap::new();
    let checked = pipeline::check_source(&mut sources, "nn_test.bayes", src)
        .unwrap_or_else(|_| panic!("checks:\n{src}"));
    Model::new(&checked.program, &nn_data()).expect("compiles")
}

/// `stdlib/nn.bayes`: a model written with its layers has the same log density and gradient as
/// the same model written out with built-ins, and its gradient matches finite differences.
#[test]
fn stdlib_nn_layers_equal_the_written_out_model() {
    let head = "data { int N; matrix[N, 3] X; vector[N] y; array[N] int c; }
parameters { matrix[3, 4] W1; vector[4] b1; vector[4] w2; real b2; real<lower=0> sigma;
  matrix[4, 3] W2; vector[3] b3; }
model {
  to_vector(W1) ~ std_normal(); b1 ~ std_normal(); w2 ~ std_normal(); b2 ~ std_normal();
  sigma ~ std_normal(); to_vector(W2) ~ std_normal(); b3 ~ std_normal();
";
    let with_lib = format!(
        "include \"nn.bayes\";\n{head}  y ~ normal(mlp_regression(X, W1, b1, w2, b2), sigma);
  c ~ categorical_logit(mlp_logits(X, W1, b1, W2, b3));
  target += sum(dense_relu(X, W1, b1));
}}"
    );
    let written = format!(
        "{head}  matrix[N, 4] Z = tanh(X * W1 + rep_matrix(b1', N));
  y ~ normal(Z * w2 + b2, sigma);
  c ~ categorical_logit(Z * W2 + rep_matrix(b3', N));
  target += sum(fmax(X * W1 + rep_matrix(b1', N), 0));
}}"
    );
    let (a, b) = (
        compile_with_includes(&with_lib),
        compile_with_includes(&written),
    );
    assert_eq!(a.dim(), 12 + 4 + 4 + 1 + 1 + 12 + 3);
    let z: Vec<f64> = (0..a.dim())
        .map(|i| 0.4 * ((i as f64) * 1.7).cos())
        .collect();
    let (mut ga, mut gb) = (vec![0.0; a.dim()], vec![0.0; a.dim()]);
    let va = a.log_density_grad(&z, &mut ga).unwrap();
    let vb = b.log_density_grad(&z, &mut gb).unwrap();
    assert!((va - vb).abs() <= 1e-12 * vb.abs(), "{va} vs {vb}");
    for i in 0..a.dim() {
        assert!(
            (ga[i] - gb[i]).abs() <= 1e-12 * (1.0 + gb[i].abs()),
            "∂/∂ζ[{i}]"
        );
    }
    check_fd("nn.bayes", &a, &z, 1e-7);
}

#[test]
fn stdlib_dense_rejects_mismatched_shapes() {
    let m = compile_with_includes(
        "include \"nn.bayes\";
data { int N; matrix[N, 3] X; }
parameters { matrix[2, 4] W; vector[4] b; }
model { target += sum(dense(X, W, b)); }",
    );
    let err = m.log_density(&vec![0.1; 12]).unwrap_err().to_string();
    assert!(err.contains("X has 3 columns but W has 2 rows"), "{err}");
}
