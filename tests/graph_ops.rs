//! One table drives every built-in function and operator: for each row, the model
//! `target += <expr>;` over parameters of every shape is compiled, its gradient is compared with
//! central finite differences of its value, and (where given) its value with a closed form.

use bayesc::data::{BoundData, DataValue};
use bayesc::graph::Model;
use bayesc::inference::LogDensity;
use bayesc::syntax::parser::parse_program;

/// Values of the parameters and data at the test point.
struct P {
    a: f64,
    b: f64,
    v: [f64; 3],
    w: [f64; 3],
    /// m[i][j] = M[i+1, j+1]
    m: [[f64; 2]; 3],
    /// x[i][j] = X[i+1, j+1]
    x: [[f64; 3]; 4],
    d: [f64; 3],
}

const P0: P = P {
    a: 0.7,
    b: -0.4,
    v: [0.3, 1.2, 0.5],
    w: [-0.6, 0.4, 0.9],
    m: [[0.2, -0.5], [1.1, 0.3], [-0.7, 0.8]],
    x: [
        [1.0, 0.5, -1.0],
        [2.0, -0.3, 0.4],
        [0.1, 0.9, 1.5],
        [-1.2, 0.0, 0.6],
    ],
    d: [1.5, -0.5, 2.0],
};

fn zeta(p: &P) -> Vec<f64> {
    let mut z = vec![p.a, p.b];
    z.extend(p.v);
    z.extend(p.w);
    for j in 0..2 {
        for i in 0..3 {
            z.push(p.m[i][j]);
        }
    }
    z
}

fn model(expr: &str) -> Model {
    let src = format!(
        "data {{ matrix[4, 3] X; vector[3] d; }}
parameters {{ real a; real b; vector[3] v; row_vector[3] w; matrix[3, 2] M; }}
model {{ target += {expr}; }}"
    );
    let prog = parse_program(&src, 0).unwrap_or_else(|e| panic!("{expr}: parse error {e:?}"));
    let mut bd = BoundData::default();
    bd.values.insert(
        "X".into(),
        DataValue {
            dims: vec![4, 3],
            values: std::sync::Arc::new(P0.x.iter().flatten().copied().collect()),
            is_int: false,
            column_major: false,
        },
    );
    bd.values.insert(
        "d".into(),
        DataValue {
            dims: vec![3],
            values: std::sync::Arc::new(P0.d.to_vec()),
            is_int: false,
            column_major: false,
        },
    );
    Model::new(&prog, &bd).unwrap_or_else(|e| panic!("{expr}: {e}"))
}

type Closed = Option<fn(&P) -> f64>;

fn lse(xs: &[f64]) -> f64 {
    let m = xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    m + xs.iter().map(|x| (x - m).exp()).sum::<f64>().ln()
}

fn log1p_exp(x: f64) -> f64 {
    if x > 0.0 {
        x + (-x).exp().ln_1p()
    } else {
        x.exp().ln_1p()
    }
}

/// Mᵀ M (2 × 2).
fn mtm(p: &P) -> [[f64; 2]; 2] {
    let mut a = [[0.0; 2]; 2];
    for (j, row) in a.iter_mut().enumerate() {
        for (l, x) in row.iter_mut().enumerate() {
            *x = (0..3).map(|i| p.m[i][j] * p.m[i][l]).sum();
        }
    }
    a
}

/// Cholesky factor (L11, L21, L22) of Mᵀ M + I.
fn chol2(p: &P) -> (f64, f64, f64) {
    let a = mtm(p);
    let l11 = (a[0][0] + 1.0).sqrt();
    let l21 = a[1][0] / l11;
    (l11, l21, (a[1][1] + 1.0 - l21 * l21).sqrt())
}

const HALF_LOG_TWO_PI: f64 = 0.918_938_533_204_672_8;

/// (expression, closed-form value, gradient tolerance relative to max(|g|, 1)).
#[rustfmt::skip]
fn table() -> Vec<(&'static str, Closed, f64)> {
    vec![
        ("exp(a)", Some(|p| p.a.exp()), 1e-7),
        ("log(a)", Some(|p| p.a.ln()), 1e-7),
        ("log1p(a)", Some(|p| p.a.ln_1p()), 1e-7),
        ("expm1(b)", Some(|p| p.b.exp_m1()), 1e-7),
        ("sqrt(a)", Some(|p| p.a.sqrt()), 1e-7),
        ("square(b)", Some(|p| p.b * p.b), 1e-7),
        ("pow(a, b)", Some(|p| p.a.powf(p.b)), 1e-7),
        ("a ^ b", Some(|p| p.a.powf(p.b)), 1e-7),
        ("abs(b)", Some(|p| p.b.abs()), 1e-7),
        ("fabs(b)", Some(|p| p.b.abs()), 1e-7),
        ("inv(a)", Some(|p| 1.0 / p.a), 1e-7),
        ("inv_logit(b)", Some(|p| 1.0 / (1.0 + (-p.b).exp())), 1e-7),
        ("logit(a)", Some(|p| (p.a / (1.0 - p.a)).ln()), 1e-7),
        ("log1p_exp(b)", Some(|p| (1.0 + p.b.exp()).ln()), 1e-7),
        ("log_inv_logit(b)", Some(|p| -(1.0 + (-p.b).exp()).ln()), 1e-7),
        ("log1m(a)", Some(|p| (1.0 - p.a).ln()), 1e-7),
        ("log1m_exp(b)", Some(|p| (1.0 - p.b.exp()).ln()), 1e-7),
        ("lgamma(a)", Some(|_| 0.260_867_246_531_666_5), 1e-6),
        ("tanh(b)", Some(|p| p.b.tanh()), 1e-7),
        ("Phi(b)", Some(|_| 0.344_578_258_389_676), 1e-7),
        ("fmin(a, b)", Some(|p| p.b), 1e-7),
        ("fmax(a, b)", Some(|p| p.a), 1e-7),
        ("floor(a) + ceil(a) + round(a) + a", Some(|p| 0.0 + 1.0 + 1.0 + p.a), 1e-7),
        ("-a + +b", Some(|p| -p.a + p.b), 1e-7),
        ("a * b - a / b", Some(|p| p.a * p.b - p.a / p.b), 1e-7),
        ("(7 %/% 2) * a + (7 % 3) * b", Some(|p| 3.0 * p.a + p.b), 1e-7),
        ("(a > b ? a : b) * v[1] + (a < b) + !(a == b)", Some(|p| p.a * p.v[0] + 1.0), 1e-7),
        ("sum(v)", Some(|p| p.v.iter().sum()), 1e-7),
        ("prod(v)", Some(|p| p.v.iter().product()), 1e-7),
        ("mean(v)", Some(|p| p.v.iter().sum::<f64>() / 3.0), 1e-7),
        ("variance(v)", Some(|p| { let m = p.v.iter().sum::<f64>() / 3.0; p.v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / 2.0 }), 1e-7),
        ("sd(v)", Some(|p| { let m = p.v.iter().sum::<f64>() / 3.0; (p.v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / 2.0).sqrt() }), 1e-7),
        ("log_sum_exp(v)", Some(|p| lse(&p.v)), 1e-7),
        ("log_sum_exp(a, b)", Some(|p| lse(&[p.a, p.b])), 1e-7),
        ("min(v) + max(w)", Some(|p| p.v[0] + p.w[2]), 1e-7),
        ("min(2, 3) * a + max(2, 3) * b", Some(|p| 2.0 * p.a + 3.0 * p.b), 1e-7),
        ("dot_product(v, w)", Some(|p| (0..3).map(|i| p.v[i] * p.w[i]).sum()), 1e-7),
        ("dot_self(v)", Some(|p| p.v.iter().map(|x| x * x).sum()), 1e-7),
        ("w * v", Some(|p| (0..3).map(|i| p.v[i] * p.w[i]).sum()), 1e-7),
        ("sum(X * v)", Some(|p| (0..4).map(|i| (0..3).map(|j| p.x[i][j] * p.v[j]).sum::<f64>()).sum()), 1e-7),
        ("sum(M * [a, b]')", Some(|p| (0..3).map(|i| p.m[i][0] * p.a + p.m[i][1] * p.b).sum()), 1e-7),
        ("sum(M' * v)", Some(|p| (0..2).map(|j| (0..3).map(|i| p.m[i][j] * p.v[i]).sum::<f64>()).sum()), 1e-7),
        ("sum(v * w)", Some(|p| p.v.iter().sum::<f64>() * p.w.iter().sum::<f64>()), 1e-7),
        ("sum(w * M)", Some(|p| (0..2).map(|j| (0..3).map(|i| p.w[i] * p.m[i][j]).sum::<f64>()).sum()), 1e-7),
        ("sum(M * M')", Some(|p| { let mut s = 0.0; for i in 0..3 { for k in 0..3 { for j in 0..2 { s += p.m[i][j] * p.m[k][j]; } } } s }), 1e-7),
        ("sum(X * M)", Some(|p| { let mut s = 0.0; for i in 0..4 { for j in 0..3 { for l in 0..2 { s += p.x[i][j] * p.m[j][l]; } } } s }), 1e-7),
        ("sum(exp(v))", Some(|p| p.v.iter().map(|x| x.exp()).sum()), 1e-7),
        ("sum(v .* w')", Some(|p| (0..3).map(|i| p.v[i] * p.w[i]).sum()), 1e-7),
        ("sum(v ./ d) + sum(d ./ v)", Some(|p| (0..3).map(|i| p.v[i] / p.d[i] + p.d[i] / p.v[i]).sum()), 1e-7),
        ("sum(v .^ 2) + sum(a .^ v)", Some(|p| (0..3).map(|i| p.v[i].powi(2) + p.a.powf(p.v[i])).sum()), 1e-7),
        ("sum(a * v + b) + sum(v - a) + sum(-v) + sum(v / a)", Some(|p| (0..3).map(|i| p.a * p.v[i] + p.b + p.v[i] - p.a - p.v[i] + p.v[i] / p.a).sum()), 1e-7),
        ("sum(M + M) - sum(M - 1)", Some(|p| p.m.iter().flatten().sum::<f64>() + 6.0), 1e-7),
        ("rows(X) * a + cols(X) * b + size(v) * a + num_elements(M) * b", Some(|p| 4.0 * p.a + 3.0 * p.b + 3.0 * p.a + 6.0 * p.b), 1e-7),
        ("sum(rep_vector(a, 3)) + sum(rep_row_vector(b, 2))", Some(|p| 3.0 * p.a + 2.0 * p.b), 1e-7),
        ("sum(rep_array(a, 2, 2)) + sum(rep_matrix(b, 2, 3)) + sum(rep_matrix(v, 2))", Some(|p| 4.0 * p.a + 6.0 * p.b + 2.0 * p.v.iter().sum::<f64>()), 1e-7),
        ("sum(append_col(v, v, d) * [1, 2, 3]')", Some(|p| (0..3).map(|i| 3.0 * p.v[i] + 3.0 * p.d[i]).sum()), 1e-7),
        ("sum(append_row(v, d) .* append_row(d, v))", Some(|p| 2.0 * (0..3).map(|i| p.v[i] * p.d[i]).sum::<f64>()), 1e-7),
        ("sum(append_row(w, w) * v)", Some(|p| 2.0 * (0..3).map(|i| p.v[i] * p.w[i]).sum::<f64>()), 1e-7),
        ("sum(append_col(M, v) * [1, 2, 3]')", Some(|p| (0..3).map(|i| p.m[i][0] + 2.0 * p.m[i][1] + 3.0 * p.v[i]).sum()), 1e-7),
        ("dot_self(to_vector(M))", Some(|p| p.m.iter().flatten().map(|x| x * x).sum()), 1e-7),
        ("to_vector(M)[2] * a", Some(|p| p.m[1][0] * p.a), 1e-7),
        ("sum(col(M, 2)) * a + dot_self(row(M, 2))", Some(|p| (p.m[0][1] + p.m[1][1] + p.m[2][1]) * p.a + p.m[1][0].powi(2) + p.m[1][1].powi(2)), 1e-7),
        ("sum(diag_matrix(v) * d)", Some(|p| (0..3).map(|i| p.v[i] * p.d[i]).sum()), 1e-7),
        ("sum(cumulative_sum(v) .* d)", Some(|p| p.v[0] * p.d[0] + (p.v[0] + p.v[1]) * p.d[1] + (p.v[0] + p.v[1] + p.v[2]) * p.d[2]), 1e-7),
        ("sum(segment(v, 2, 2)) + dot_product(head(v, 2), tail(v, 2))", Some(|p| p.v[1] + p.v[2] + p.v[0] * p.v[1] + p.v[1] * p.v[2]), 1e-7),
        ("dot_product(softmax(v), d)", Some(|p| { let l = lse(&p.v); (0..3).map(|i| (p.v[i] - l).exp() * p.d[i]).sum() }), 1e-7),
        ("dot_product(log_softmax(v), d)", Some(|p| { let l = lse(&p.v); (0..3).map(|i| (p.v[i] - l) * p.d[i]).sum() }), 1e-7),
        ("M[2, 1] * v[3] + M[3][2]", Some(|p| p.m[1][0] * p.v[2] + p.m[2][1]), 1e-7),
        ("sum(M[2]) + sum(M[:, 2]) + sum(M[2:3, 1]) + sum(v[{3, 1}]) + sum(v[2:])", Some(|p| p.m[1][0] + p.m[1][1] + p.m[0][1] + p.m[1][1] + p.m[2][1] + p.m[1][0] + p.m[2][0] + p.v[2] + p.v[0] + p.v[1] + p.v[2]), 1e-7),
        ("sum(X[2:3] * v)", Some(|p| (1..3).map(|i| (0..3).map(|j| p.x[i][j] * p.v[j]).sum::<f64>()).sum()), 1e-7),
        ("sum(diag_pre_multiply(v, M)) + sum(diag_post_multiply(M, [a, b]'))", Some(|p| (0..3).map(|i| p.v[i] * (p.m[i][0] + p.m[i][1]) + p.a * p.m[i][0] + p.b * p.m[i][1]).sum()), 1e-7),
        ("normal_lpdf(v | a, exp(b))", Some(|p| { let s = p.b.exp(); p.v.iter().map(|x| -HALF_LOG_TWO_PI - s.ln() - 0.5 * ((x - p.a) / s).powi(2)).sum() }), 1e-7),
        ("normal_lupdf(v | a, 1)", Some(|p| p.v.iter().map(|x| -0.5 * (x - p.a).powi(2)).sum()), 1e-7),
        ("bernoulli_logit_lpmf({1, 0, 1} | v)", Some(|p| p.v[0] - log1p_exp(p.v[0]) - log1p_exp(p.v[1]) + p.v[2] - log1p_exp(p.v[2])), 1e-7),
        ("normal_lpdf(d | M * [a, b]', 2)", None, 1e-7),
        ("fma(a, b, v[1])", Some(|p| p.a * p.b + p.v[0]), 1e-7),
        ("int_step(a) * b + is_inf(a) + is_nan(a)", Some(|p| p.b), 1e-7),
        ("dot_product(reverse(v), d)", Some(|p| p.v[2] * p.d[0] + p.v[1] * p.d[1] + p.v[0] * p.d[2]), 1e-7),
        ("dot_product(sort_asc(v), d) + dot_product(sort_desc(v), d)", Some(|p| p.v[0] * p.d[0] + p.v[2] * p.d[1] + p.v[1] * p.d[2] + p.v[1] * p.d[0] + p.v[2] * p.d[1] + p.v[0] * p.d[2]), 1e-7),
        ("sum(rows_dot_product(M, M)) + sum(columns_dot_product(M, M))", Some(|p| 2.0 * p.m.iter().flatten().map(|x| x * x).sum::<f64>()), 1e-7),
        ("sum(crossprod(M))", Some(|p| { let mut s = 0.0; for j in 0..2 { for l in 0..2 { for i in 0..3 { s += p.m[i][j] * p.m[i][l]; } } } s }), 1e-7),
        ("sum(tcrossprod(M))", Some(|p| { let mut s = 0.0; for i in 0..3 { for k in 0..3 { for j in 0..2 { s += p.m[i][j] * p.m[k][j]; } } } s }), 1e-7),
        ("quad_form(diag_matrix(d), v)", Some(|p| (0..3).map(|i| p.d[i] * p.v[i] * p.v[i]).sum()), 1e-7),
        ("dot_product(linspaced_vector(3, 0, 1), v)", Some(|p| 0.5 * p.v[1] + p.v[2]), 1e-7),
        ("log_mix(inv_logit(b), a, v[1])", Some(|p| { let t = 1.0 / (1.0 + (-p.b).exp()); (t * p.a.exp() + (1.0 - t) * p.v[0].exp()).ln() }), 1e-7),
        ("std_normal_lpdf(v)", Some(|p| p.v.iter().map(|x| -HALF_LOG_TWO_PI - 0.5 * x * x).sum()), 1e-7),
        ("normal_lcdf(a | b, 2) + normal_lccdf(v[2] | a, exp(b))", None, 1e-7),
        ("sum(cholesky_decompose(add_diag(crossprod(M), 1)))", Some(|p| { let (l11, l21, l22) = chol2(p); l11 + l21 + l22 }), 1e-7),
        ("sum(mdivide_left_tri_low(cholesky_decompose(add_diag(crossprod(M), 1)), [a, b]'))", Some(|p| { let (l11, l21, l22) = chol2(p); let x1 = p.a / l11; x1 + (p.b - l21 * x1) / l22 }), 1e-7),
        ("trace(tcrossprod(M)) + sum(add_diag(crossprod(M), v[1:2]))", Some(|p| { let a = mtm(p); p.m.iter().flatten().map(|x| x * x).sum::<f64>() + a[0][0] + a[0][1] + a[1][0] + a[1][1] + p.v[0] + p.v[1] }), 1e-7),
        ("sum(to_row_vector(v) .* w) + sum(to_matrix(v, 3, 1))", Some(|p| (0..3).map(|i| p.v[i] * p.w[i] + p.v[i]).sum()), 1e-7),
    ]
}

#[test]
fn every_op_gradient_and_value() {
    let z = zeta(&P0);
    let mut failures = Vec::new();
    for (expr, closed, tol) in table() {
        let m = model(expr);
        let mut g = vec![0.0; z.len()];
        let value = match m.log_density_grad(&z, &mut g) {
            Ok(v) => v,
            Err(e) => {
                failures.push(format!("{expr}: error {e}"));
                continue;
            }
        };
        if m.log_density(&z).unwrap() != value {
            failures.push(format!("{expr}: value-only path differs"));
        }
        if let Some(f) = closed {
            let want = f(&P0);
            if (value - want).abs() > 1e-12 * want.abs().max(1.0) {
                failures.push(format!("{expr}: value {value} vs closed form {want}"));
            }
        }
        for k in 0..z.len() {
            let h = 1e-6;
            let mut zp = z.clone();
            let mut zm = z.clone();
            zp[k] += h;
            zm[k] -= h;
            let fd = (m.log_density(&zp).unwrap() - m.log_density(&zm).unwrap()) / (2.0 * h);
            if (g[k] - fd).abs() > tol * g[k].abs().max(1.0) * 10.0 {
                failures.push(format!(
                    "{expr}: ∂/∂ζ[{k}] = {} vs finite difference {fd}",
                    g[k]
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn local_assignment_loops_and_target() {
    let src = "
parameters { real a; vector[3] v; }
model {
  vector[3] u = v;
  matrix[2, 2] S = rep_matrix(0, 2, 2);
  real acc = 0;
  u[2] = a * u[1];
  u[1:2] = u[2:3];
  S[1, 2] = a;
  S[2] = [v[1], v[2]];
  for (i in 1:3) {
    if (i == 2) continue;
    acc += u[i] * i;
  }
  while (acc > 100) acc = acc / 2;
  target += acc + sum(S);
  target += 0.5 * target();
}";
    let prog = parse_program(src, 0).unwrap();
    let m = Model::new(&prog, &BoundData::default()).unwrap();
    let z = [0.7, 0.3, 1.2, 0.5];
    let (a, v) = (z[0], [z[1], z[2], z[3]]);
    // u = (a·v1, v3, v3) after the slice assignment; acc = u1 + 3·u3; S = [[0, a], [v1, v2]].
    let first = a * v[0] + 3.0 * v[2] + a + v[0] + v[1];
    let want = 1.5 * first;
    let mut g = vec![0.0; 4];
    let got = m.log_density_grad(&z, &mut g).unwrap();
    assert!((got - want).abs() < 1e-12, "{got} vs {want}");
    let want_g = [1.5 * (v[0] + 1.0), 1.5 * (a + 1.0), 1.5, 1.5 * 3.0];
    for k in 0..4 {
        assert!(
            (g[k] - want_g[k]).abs() < 1e-12,
            "{k}: {} vs {}",
            g[k],
            want_g[k]
        );
    }
}

#[test]
fn size_mismatch_is_unrecoverable_with_both_sizes() {
    let src = "parameters { vector[3] v; vector[2] w; } model { target += sum(v + w); }";
    let prog = parse_program(src, 0).unwrap();
    let m = Model::new(&prog, &BoundData::default()).unwrap();
    let e = m.log_density(&[0.0; 5]).unwrap_err();
    assert!(!e.recoverable);
    assert!(
        e.message.contains("vector[3]") && e.message.contains("vector[2]"),
        "{}",
        e.message
    );
}
