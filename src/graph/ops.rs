//! Vectorised operations on runtime values: elementwise maps with scalar broadcast, products,
//! reductions and constructors. A vector operation records ONE tape node (with a hand-written
//! adjoint for products with data matrices), never one node per element.

use std::sync::Arc;

use super::scalar::{B, U};
use super::tape::{Acc, MatArg, S, Tape};
use super::value::{Base, Data, Fault, R, Slots, Tensor, Value, to_slot};

/// Applies `u` elementwise (integers are promoted to reals).
pub fn map_unary(tape: &mut Tape, u: U, v: &Value) -> Value {
    match v {
        Value::Int(i) => Value::Real(u.eval(*i as f64).0),
        Value::Real(x) => Value::Real(u.eval(*x).0),
        Value::Var(i) => {
            let x = tape.val[*i as usize];
            let (f, d) = u.eval(x);
            Value::from_s(tape.node(f, &[(S::V(*i), d)]))
        }
        Value::T(t) => {
            let data = match &t.data {
                Data::Int(xs) | Data::Real(xs) => {
                    Data::Real(Arc::new(xs.iter().map(|&x| u.eval(x).0).collect()))
                }
                Data::Var(ix) => {
                    let n = ix.len();
                    let x = tape.contiguous(ix);
                    // One monomorphised loop per common activation; the rest through `U::eval`.
                    let out = match u {
                        U::Tanh => tape.map1_with(x, n, crate::distributions::lanes::tanh_slices),
                        U::Exp => tape.map1(x, n, |x| {
                            let f = x.exp();
                            (f, f)
                        }),
                        // As `U::eval`'s arms, operation for operation (the same bits).
                        U::Sqrt => tape.map1(x, n, |x| {
                            let s = x.sqrt();
                            (s, 0.5 / s)
                        }),
                        U::Log => tape.map1(x, n, |x| (x.ln(), 1.0 / x)),
                        _ => tape.map1(x, n, |x| u.eval(x)),
                    };
                    Data::Var(Slots::range(out, n))
                }
            };
            Value::from_tensor(Tensor {
                arr: t.arr.clone(),
                base: t.base,
                data,
            })
        }
    }
}

/// Applies `b` elementwise with scalar broadcast; tensors must have the same shape.
/// `name` is the operator or function for the error message.
pub fn map_binary(tape: &mut Tape, b: B, x: &Value, y: &Value, name: &str) -> R<Value> {
    // Scalar–scalar fast path.
    if let (Some(sx), Some(sy)) = (x.as_s(), y.as_s()) {
        let (f, dx, dy) = b.eval(tape.value(sx), tape.value(sy));
        return Ok(Value::from_s(tape.node(f, &[(sx, dx), (sy, dy)])));
    }
    let (arr, base, n) = match (x, y) {
        (Value::T(a), Value::T(c)) => {
            if !a.same_shape(c) {
                return Err(Fault::fatal(format!(
                    "size mismatch in `{name}`: {} and {}",
                    a.describe(),
                    c.describe()
                )));
            }
            (a.arr.clone(), a.base, a.data.len())
        }
        (Value::T(a), _) | (_, Value::T(a)) => (a.arr.clone(), a.base, a.data.len()),
        _ => unreachable!("scalar–scalar handled above"),
    };
    let xs = !matches!(x, Value::T(_));
    let ys = !matches!(y, Value::T(_));
    let data = if !x.is_var() && !y.is_var() {
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let a = tape.value(x.elem(if xs { 0 } else { i }));
            let c = tape.value(y.elem(if ys { 0 } else { i }));
            out.push(b.eval(a, c).0);
        }
        Data::Real(Arc::new(out))
    } else {
        let ax = acc_of(x);
        let ay = acc_of(y);
        // One monomorphised loop per common operator; the rest go through `B::eval`.
        let out = match b {
            B::Add => tape.affine2(n, ax, ay, 1.0, 1.0),
            B::Sub => tape.affine2(n, ax, ay, 1.0, -1.0),
            B::Mul => tape.map2(n, ax, ay, |p, q| (p * q, q, p)),
            B::Div => tape.map2(n, ax, ay, |p, q| (p / q, 1.0 / q, -p / (q * q))),
            _ => tape.map2(n, ax, ay, |p, q| b.eval(p, q)),
        };
        Data::Var(Slots::range(out, n))
    };
    Ok(Value::from_tensor(Tensor { arr, base, data }))
}

/// Matrix product with Stan's typing: matrix×vector → vector, row_vector×vector → real,
/// vector×row_vector → matrix, row_vector×matrix → row_vector, matrix×matrix → matrix.
pub fn matmul(tape: &mut Tape, x: &Value, y: &Value) -> R<Value> {
    let (ta, tb) = match (x, y) {
        (Value::T(a), Value::T(b)) if a.arr.is_empty() && b.arr.is_empty() => (a, b),
        _ => {
            return Err(Fault::fatal(format!(
                "cannot multiply {} by {}",
                x.describe(),
                y.describe()
            )));
        }
    };
    let (r, inner) = ta.base.matrix_dims();
    let (inner2, c) = tb.base.matrix_dims();
    if inner != inner2
        || matches!(ta.base, Base::Vector(_)) && !matches!(tb.base, Base::RowVector(_))
    {
        return Err(Fault::fatal(format!(
            "size mismatch in `*`: {} times {}",
            ta.describe(),
            tb.describe()
        )));
    }
    let out_base = match (ta.base, tb.base) {
        (Base::RowVector(_), Base::Vector(_)) => Base::Scalar,
        (_, Base::Vector(_)) => Base::Vector(r),
        (Base::RowVector(_), _) => Base::RowVector(c),
        _ => Base::Matrix(r, c),
    };
    let data = match (&ta.data, &tb.data) {
        (Data::Var(_), _) | (_, Data::Var(_)) => {
            let arg = |tape: &mut Tape, d: &'_ Data| -> u32 {
                match d {
                    Data::Var(s) => tape.contiguous(s),
                    _ => unreachable!("called on variables only"),
                }
            };
            let out = match (&ta.data, &tb.data) {
                (Data::Real(a) | Data::Int(a), Data::Var(_)) => {
                    let sb = arg(tape, &tb.data);
                    tape.matmul(MatArg::Data(a), MatArg::Var(sb), r, inner, c)
                }
                (Data::Var(_), Data::Real(b) | Data::Int(b)) => {
                    let sa = arg(tape, &ta.data);
                    tape.matmul(MatArg::Var(sa), MatArg::Data(b), r, inner, c)
                }
                _ => {
                    let sa = arg(tape, &ta.data);
                    let sb = arg(tape, &tb.data);
                    tape.matmul(MatArg::Var(sa), MatArg::Var(sb), r, inner, c)
                }
            };
            Data::Var(Slots::range(out, r * c))
        }
        (Data::Real(a) | Data::Int(a), Data::Real(b) | Data::Int(b)) => {
            let mut out = vec![0.0; r * c];
            for l in 0..c {
                for j in 0..inner {
                    let bj = b[j + l * inner];
                    for i in 0..r {
                        out[i + l * r] += a[i + j * r] * bj;
                    }
                }
            }
            Data::Real(Arc::new(out))
        }
    };
    Ok(Value::from_tensor(Tensor {
        arr: vec![],
        base: out_base,
        data,
    }))
}

impl Data {
    /// True for tape slots.
    pub fn is_var(&self) -> bool {
        matches!(self, Data::Var(_))
    }
}

/// Transpose: vector ↔ row vector, matrix (r × c) → (c × r).
pub fn transpose(v: &Value) -> R<Value> {
    match v {
        Value::T(t) if t.arr.is_empty() => {
            let (base, data) = match t.base {
                Base::Vector(n) => (Base::RowVector(n), t.data.clone()),
                Base::RowVector(n) => (Base::Vector(n), t.data.clone()),
                Base::Matrix(r, c) => {
                    let perm: Vec<usize> = (0..r * c).map(|o| (o / c) + (o % c) * r).collect();
                    // Output (j, i) at j + i·c holds input (i, j) at i + j·r.
                    let data = match &t.data {
                        Data::Int(x) => Data::Int(Arc::new(perm.iter().map(|&p| x[p]).collect())),
                        Data::Real(x) => Data::Real(Arc::new(perm.iter().map(|&p| x[p]).collect())),
                        Data::Var(x) => {
                            Data::Var(Slots::List(perm.iter().map(|&p| x.at(p)).collect()))
                        }
                    };
                    (Base::Matrix(c, r), data)
                }
                Base::Scalar => (Base::Scalar, t.data.clone()),
            };
            Ok(Value::from_tensor(Tensor {
                arr: vec![],
                base,
                data,
            }))
        }
        Value::T(t) => Err(Fault::fatal(format!("cannot transpose {}", t.describe()))),
        s => Ok(s.clone()),
    }
}

/// A scalar reduction of `v` with value `value` and ∂value/∂element_i = `grad(i)`.
pub fn reduce(tape: &mut Tape, v: &Value, value: f64, grad: impl Fn(usize) -> f64) -> Value {
    if !v.is_var() {
        return Value::Real(value);
    }
    let n = v.num_elements();
    if let Value::T(t) = v
        && let Data::Var(s) = &t.data
        && let Some(x) = s.contiguous()
    {
        let out = tape.leaf(value);
        if tape.recording && n > 0 {
            let p = tape.parts_scratch(n);
            for (i, d) in p.iter_mut().enumerate() {
                *d = grad(i);
            }
            tape.push_dot(out, x, n);
        }
        return Value::Var(out);
    }
    let base = tape.entries_base();
    let out = tape.leaf(value);
    for i in 0..n {
        if let S::V(q) = v.elem(i) {
            tape.entry(q, grad(i));
        }
    }
    tape.finish(out, 1, n, base);
    Value::Var(out)
}

/// Dense vector function: outputs `f` (length m) with Jacobian `jac(i, j)` = ∂f_i/∂x_j.
pub fn dense(
    tape: &mut Tape,
    v: &Value,
    arr: Vec<usize>,
    base: Base,
    f: &[f64],
    jac: impl Fn(usize, usize) -> f64,
) -> Value {
    let m = f.len();
    if !v.is_var() {
        return Value::from_tensor(Tensor {
            arr,
            base,
            data: Data::Real(Arc::new(f.to_vec())),
        });
    }
    let n = v.num_elements();
    let out = tape.alloc(m);
    tape.val[out as usize..out as usize + m].copy_from_slice(f);
    let b = tape.entries_base();
    for i in 0..m {
        for j in 0..n {
            if let S::V(q) = v.elem(j) {
                tape.entry(q, jac(i, j));
            }
        }
    }
    tape.finish(out, m, n, b);
    Value::from_tensor(Tensor {
        arr,
        base,
        data: Data::Var(Slots::range(out, m)),
    })
}

/// Concatenates the storage of `parts` into a tensor of shape (`arr`, `base`).
pub fn concat(tape: &mut Tape, parts: &[&Value], arr: Vec<usize>, base: Base) -> Value {
    let any_var = parts.iter().any(|p| p.is_var());
    let all_int = parts.iter().all(|p| p.is_int());
    let data = if any_var {
        let mut ix = Vec::new();
        for p in parts {
            for i in 0..p.num_elements() {
                ix.push(to_slot(tape, p.elem(i)));
            }
        }
        Data::Var(Slots::List(ix))
    } else {
        let mut xs = Vec::new();
        for p in parts {
            for i in 0..p.num_elements() {
                xs.push(tape.value(p.elem(i)));
            }
        }
        if all_int {
            Data::Int(Arc::new(xs))
        } else {
            Data::Real(Arc::new(xs))
        }
    };
    Value::from_tensor(Tensor { arr, base, data })
}

/// Reorders the elements of `v` by `offs` into shape (`arr`, `base`), keeping int/real/var.
pub fn permute(v: &Value, offs: &[usize], arr: Vec<usize>, base: Base) -> Value {
    match v {
        Value::T(t) => super::value::gather(t, arr, base, offs),
        s => {
            let d = match s {
                Value::Int(i) => Data::Int(Arc::new(vec![*i as f64; offs.len()])),
                Value::Real(x) => Data::Real(Arc::new(vec![*x; offs.len()])),
                Value::Var(i) => Data::Var(Slots::RowRep {
                    start: *i,
                    rows: offs.len() as u32,
                    cols: 1,
                }),
                Value::T(_) => unreachable!("matched above"),
            };
            Value::from_tensor(Tensor { arr, base, data: d })
        }
    }
}

/// Converts integer storage to real storage (for assignment to real variables).
pub fn to_real(v: Value) -> Value {
    match v {
        Value::Int(i) => Value::Real(i as f64),
        Value::T(mut t) => {
            if let Data::Int(x) = &t.data {
                t.data = Data::Real(x.clone());
            }
            Value::T(t)
        }
        v => v,
    }
}

/// The operand accessor of `v` for [`Tape::map2`].
fn acc_of(v: &Value) -> Acc<'_> {
    match v {
        Value::T(t) => match &t.data {
            Data::Int(x) | Data::Real(x) => Acc::Const(x),
            Data::Var(x) => Acc::Var(x),
        },
        s => Acc::Scalar(s.as_s().expect("non-tensor values are scalars")),
    }
}

/// Row-wise `softmax` (or `log_softmax` when `log`) of an `r × c` matrix: each row `x` maps to
/// `exp(x − lse(x))` (or `x − lse(x)`), computed stably from the row maximum. One tape node;
/// output `(i, j)` has the `c` partials of row `i`: ∂softmax_j/∂x_l = s_j (δ_jl − s_l) and
/// ∂log_softmax_j/∂x_l = δ_jl − s_l (Stan Functions Reference, "Softmax").
pub fn softmax_rows(tape: &mut Tape, v: &Value, log: bool) -> Value {
    let Value::T(t) = v else {
        unreachable!("called on a matrix")
    };
    let (r, c) = t.base.matrix_dims();
    let xs = v.values(tape);
    let mut s = vec![0.0; r * c];
    let mut f = vec![0.0; r * c];
    for i in 0..r {
        let m = (0..c)
            .map(|j| xs[i + j * r])
            .fold(f64::NEG_INFINITY, f64::max);
        let lse = m + (0..c).map(|j| (xs[i + j * r] - m).exp()).sum::<f64>().ln();
        for j in 0..c {
            let o = i + j * r;
            f[o] = xs[o] - lse;
            s[o] = f[o].exp();
            if !log {
                f[o] = s[o];
            }
        }
    }
    let base = t.base;
    let Data::Var(slots) = &t.data else {
        return Value::from_tensor(Tensor {
            arr: vec![],
            base,
            data: Data::Real(Arc::new(f)),
        });
    };
    let out = tape.alloc(r * c);
    tape.val[out as usize..out as usize + r * c].copy_from_slice(&f);
    let eb = tape.entries_base();
    for j in 0..c {
        for i in 0..r {
            let o = i + j * r;
            for l in 0..c {
                let q = i + l * r;
                let delta = if l == j { 1.0 } else { 0.0 };
                let d = if log {
                    delta - s[q]
                } else {
                    s[o] * (delta - s[q])
                };
                tape.entry(slots.at(q), d);
            }
        }
    }
    tape.finish(out, r * c, c, eb);
    Value::from_tensor(Tensor {
        arr: vec![],
        base,
        data: Data::Var(Slots::range(out, r * c)),
    })
}
