//! Built-in function calls, and the shape helpers they share (`rep_rows`, `check_shape`,
//! `append_col`, `append_row`). Part of the interpreter ([`super`]).

use std::sync::Arc;

use super::super::ir::Builtin;
use super::super::ops::{
    concat, dense, map_binary, map_unary, matmul, permute, reduce, to_real, transpose,
};
use super::super::scalar::{B, U};
use super::super::tape::{S, Tape};
use super::super::value::{
    Base, Data, Fault, Ix, R, Slots, Tensor, Value, check_container_size, gather, select,
};

use super::matrix::{self, Side};
use super::*;

impl Ctx<'_> {
    /// Calls a built-in function.
    pub fn call(&mut self, b: Builtin, v: &[Value]) -> R<Value> {
        use Builtin::*;
        let tape = &mut *self.tape;
        let arity = |n: usize| -> R<()> {
            if v.len() != n {
                Err(Fault::fatal(format!(
                    "{b:?} expects {n} argument(s), got {}",
                    v.len()
                )))
            } else {
                Ok(())
            }
        };
        let int_arg = |k: usize| as_int(&v[k], "argument");
        Ok(match b {
            Unary(u) => {
                arity(1)?;
                map_unary(tape, u, &v[0])
            }
            Binary(f) => {
                arity(2)?;
                map_binary(tape, f, &v[0], &v[1], &format!("{f:?}").to_lowercase())?
            }
            Abs => {
                arity(1)?;
                match &v[0] {
                    Value::Int(i) => Value::Int(
                        crate::syntax::ast::int_in_range(i.checked_abs()).ok_or_else(|| {
                            super::expr::int_overflow(
                                &format!("`abs({i})`"),
                                Some((*i as i128).abs()),
                            )
                        })?,
                    ),
                    x => map_unary(tape, U::Abs, x),
                }
            }
            Const(x) => Value::Real(x),
            Target => {
                let value = self.target_c
                    + self
                        .target_v
                        .iter()
                        .map(|&i| tape.val[i as usize])
                        .sum::<f64>();
                let base = tape.entries_base();
                if self.target_v.is_empty() {
                    Value::Real(value)
                } else {
                    let out = tape.leaf(value);
                    for &q in &self.target_v {
                        tape.entry(q, 1.0);
                    }
                    tape.finish(out, 1, self.target_v.len(), base);
                    Value::Var(out)
                }
            }
            LogSumExp if v.len() == 2 => {
                map_binary(tape, B::LogSumExp, &v[0], &v[1], "log_sum_exp")?
            }
            Min | Max if v.len() == 2 => match (&v[0], &v[1]) {
                (Value::Int(x), Value::Int(y)) => {
                    Value::Int(if b == Min { *x.min(y) } else { *x.max(y) })
                }
                (x, y) => {
                    let f = if b == Min { B::Fmin } else { B::Fmax };
                    map_binary(tape, f, x, y, "min/max")?
                }
            },
            Sum | Prod | Mean | Sd | Variance | LogSumExp | Min | Max | DotSelf => {
                arity(1)?;
                let x = &v[0];
                // Constant storage is read in place (no copy).
                let xs: std::borrow::Cow<[f64]> = match x {
                    Value::T(t) => match &t.data {
                        Data::Real(a) | Data::Int(a) => std::borrow::Cow::Borrowed(&a[..]),
                        Data::Var(_) => std::borrow::Cow::Owned(x.values(tape)),
                    },
                    _ => std::borrow::Cow::Owned(x.values(tape)),
                };
                let n = xs.len();
                match b {
                    Sum => {
                        if x.is_int() {
                            Value::Int(int_total("sum", &xs, 0, i128::checked_add)?)
                        } else {
                            reduce(tape, x, xs.iter().sum(), |_| 1.0)
                        }
                    }
                    Prod => {
                        let p: f64 = xs.iter().product();
                        if x.is_int() {
                            Value::Int(int_total("prod", &xs, 1, i128::checked_mul)?)
                        } else {
                            reduce(tape, x, p, |i| {
                                xs.iter()
                                    .enumerate()
                                    .filter(|&(j, _)| j != i)
                                    .map(|(_, y)| y)
                                    .product()
                            })
                        }
                    }
                    Mean => {
                        if n == 0 {
                            return Err(Fault::fatal("mean of an empty container"));
                        }
                        let nf = n as f64;
                        reduce(tape, x, xs.iter().sum::<f64>() / nf, |_| 1.0 / nf)
                    }
                    Sd | Variance => {
                        if n == 0 {
                            return Err(Fault::fatal("variance of an empty container"));
                        }
                        if n == 1 {
                            return Ok(reduce(tape, x, 0.0, |_| 0.0));
                        }
                        let m = xs.iter().sum::<f64>() / n as f64;
                        let var =
                            xs.iter().map(|y| (y - m) * (y - m)).sum::<f64>() / (n as f64 - 1.0);
                        if b == Variance {
                            reduce(tape, x, var, |i| 2.0 * (xs[i] - m) / (n as f64 - 1.0))
                        } else {
                            let sd = var.sqrt();
                            reduce(tape, x, sd, |i| {
                                if sd == 0.0 {
                                    0.0
                                } else {
                                    (xs[i] - m) / ((n as f64 - 1.0) * sd)
                                }
                            })
                        }
                    }
                    LogSumExp => {
                        let m = xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                        if m.is_infinite() {
                            return Ok(reduce(tape, x, m, |_| 0.0));
                        }
                        let lse = m + xs.iter().map(|y| (y - m).exp()).sum::<f64>().ln();
                        reduce(tape, x, lse, |i| (xs[i] - lse).exp())
                    }
                    Min | Max => {
                        if n == 0 {
                            if x.is_int() {
                                return Err(Fault::fatal("min/max of an empty integer array"));
                            }
                            return Ok(Value::Real(if b == Min {
                                f64::INFINITY
                            } else {
                                f64::NEG_INFINITY
                            }));
                        }
                        let mut best = 0;
                        for i in 1..n {
                            if (b == Min && xs[i] < xs[best]) || (b == Max && xs[i] > xs[best]) {
                                best = i;
                            }
                        }
                        if x.is_int() {
                            Value::Int(xs[best] as i64)
                        } else {
                            reduce(tape, x, xs[best], |i| if i == best { 1.0 } else { 0.0 })
                        }
                    }
                    DotSelf => reduce(tape, x, xs.iter().map(|y| y * y).sum(), |i| 2.0 * xs[i]),
                    _ => unreachable!("outer match lists these"),
                }
            }
            DotProduct | SquaredDistance => {
                arity(2)?;
                let (x, y) = (&v[0], &v[1]);
                if x.num_elements() != y.num_elements() || x.as_s().is_some() != y.as_s().is_some()
                {
                    return Err(Fault::fatal(format!(
                        "size mismatch in {}: {} and {}",
                        if b == DotProduct {
                            "dot_product"
                        } else {
                            "squared_distance"
                        },
                        x.describe(),
                        y.describe()
                    )));
                }
                let xs = x.values(tape);
                let ys = y.values(tape);
                let n = xs.len();
                let (value, dx, dy): (f64, Vec<f64>, Vec<f64>) = if b == DotProduct {
                    (
                        xs.iter().zip(&ys).map(|(p, q)| p * q).sum(),
                        ys.clone(),
                        xs.clone(),
                    )
                } else {
                    let d: Vec<f64> = xs.iter().zip(&ys).map(|(p, q)| p - q).collect();
                    (
                        d.iter().map(|z| z * z).sum(),
                        d.iter().map(|z| 2.0 * z).collect(),
                        d.iter().map(|z| -2.0 * z).collect(),
                    )
                };
                if !x.is_var() && !y.is_var() {
                    Value::Real(value)
                } else {
                    let base = tape.entries_base();
                    let out = tape.leaf(value);
                    let mut k = 0;
                    for i in 0..n {
                        if let S::V(q) = x.elem(i) {
                            tape.entry(q, dx[i]);
                            k += 1;
                        }
                        if let S::V(q) = y.elem(i) {
                            tape.entry(q, dy[i]);
                            k += 1;
                        }
                    }
                    tape.finish(out, 1, k, base);
                    Value::Var(out)
                }
            }
            Rows | Cols | Size | NumElements => {
                arity(1)?;
                let (arr, base) = v[0].shape();
                let (r, c) = base.matrix_dims();
                Value::Int(match b {
                    Rows => {
                        if !arr.is_empty() {
                            return Err(Fault::fatal("rows() needs a vector or matrix"));
                        }
                        r as i64
                    }
                    Cols => {
                        if !arr.is_empty() {
                            return Err(Fault::fatal("cols() needs a vector or matrix"));
                        }
                        c as i64
                    }
                    Size => {
                        if let Some(&n) = arr.first() {
                            n as i64
                        } else {
                            base.size() as i64
                        }
                    }
                    _ => v[0].num_elements() as i64,
                })
            }
            RepVector | RepRowVector => {
                arity(2)?;
                let n = int_arg(1)?.max(0) as usize;
                check_container_size(&[n], 16, "rep_vector")?;
                let base = if b == RepVector {
                    Base::Vector(n)
                } else {
                    Base::RowVector(n)
                };
                permute(&to_real(scalar_arg(&v[0])?), &vec![0; n], vec![], base)
            }
            RepMatrix => match v.len() {
                3 => {
                    let (m, n) = (int_arg(1)?.max(0) as usize, int_arg(2)?.max(0) as usize);
                    check_container_size(&[m, n], 16, "rep_matrix")?;
                    permute(
                        &to_real(scalar_arg(&v[0])?),
                        &vec![0; m * n],
                        vec![],
                        Base::Matrix(m, n),
                    )
                }
                2 => {
                    let k = int_arg(1)?.max(0) as usize;
                    check_container_size(&[k, v[0].num_elements()], 16, "rep_matrix")?;
                    match v[0].shape() {
                        ([], Base::Vector(m)) => {
                            let offs: Vec<usize> = (0..k).flat_map(|_| 0..m).collect();
                            permute(&v[0], &offs, vec![], Base::Matrix(m, k))
                        }
                        ([], Base::RowVector(_)) => rep_rows(tape, &v[0], k),
                        _ => {
                            return Err(Fault::fatal(
                                "rep_matrix(v, n) needs a vector or row vector",
                            ));
                        }
                    }
                }
                _ => return Err(Fault::fatal("rep_matrix expects 2 or 3 arguments")),
            },
            RepArray => {
                if v.len() < 2 || v.len() > 4 {
                    return Err(Fault::fatal("rep_array expects 2 to 4 arguments"));
                }
                let mut dims = Vec::new();
                for k in 1..v.len() {
                    dims.push(int_arg(k)?.max(0) as usize);
                }
                let mut all = dims.clone();
                all.push(v[0].num_elements());
                check_container_size(&all, 16, "rep_array")?;
                let reps: usize = dims.iter().product();
                let (a, base) = v[0].shape();
                let mut arr = dims;
                arr.extend_from_slice(a);
                let m = v[0].num_elements();
                let offs: Vec<usize> = (0..reps).flat_map(|_| 0..m).collect();
                permute(&v[0], &offs, arr, base)
            }
            AppendCol => append_col(tape, &v.iter().collect::<Vec<_>>())?,
            AppendRow => append_row(tape, &v.iter().collect::<Vec<_>>())?,
            ToVector | ToRowVector | ToArray1d => {
                arity(1)?;
                let n = v[0].num_elements();
                let (arr, base) = match b {
                    ToVector => (vec![], Base::Vector(n)),
                    ToRowVector => (vec![], Base::RowVector(n)),
                    _ => (vec![n], Base::Scalar),
                };
                // Storage order is the result's order: the data as it is, reshaped (no copy
                // of a tensor's slots or values).
                let r = match &v[0] {
                    Value::T(t) => Value::from_tensor(Tensor {
                        arr,
                        base,
                        data: t.data.clone(),
                    }),
                    x => {
                        let offs: Vec<usize> = (0..n).collect();
                        permute(x, &offs, arr, base)
                    }
                };
                if b == ToArray1d { r } else { to_real(r) }
            }
            ToMatrix => match v.len() {
                1 => match v[0].shape() {
                    ([], Base::Matrix(..)) => v[0].clone(),
                    ([], Base::Vector(n)) => permute(
                        &v[0],
                        &(0..n).collect::<Vec<_>>(),
                        vec![],
                        Base::Matrix(n, 1),
                    ),
                    ([], Base::RowVector(n)) => permute(
                        &v[0],
                        &(0..n).collect::<Vec<_>>(),
                        vec![],
                        Base::Matrix(1, n),
                    ),
                    _ => return Err(Fault::fatal("to_matrix(x) needs a vector or matrix")),
                },
                3 => {
                    let (m, n) = (int_arg(1)?.max(0) as usize, int_arg(2)?.max(0) as usize);
                    check_container_size(&[m, n], 16, "rep_matrix")?;
                    if m * n != v[0].num_elements() {
                        return Err(Fault::fatal(format!(
                            "to_matrix: {} elements cannot fill a {m} × {n} matrix",
                            v[0].num_elements()
                        )));
                    }
                    to_real(permute(
                        &v[0],
                        &(0..m * n).collect::<Vec<_>>(),
                        vec![],
                        Base::Matrix(m, n),
                    ))
                }
                _ => return Err(Fault::fatal("to_matrix expects 1 or 3 arguments")),
            },
            Col | Row => {
                arity(2)?;
                let k = int_arg(1)?;
                let ix = if b == Col {
                    [Ix::All, Ix::One(k)]
                } else {
                    [Ix::One(k), Ix::All]
                };
                match &v[0] {
                    Value::T(t) if matches!(t.base, Base::Matrix(..)) && t.arr.is_empty() => {
                        let (a, bb, offs) = select(&t.arr, t.base, &ix)?;
                        gather(t, a, bb, &offs)
                    }
                    x => {
                        return Err(Fault::fatal(format!(
                            "col/row need a matrix, found {}",
                            x.describe()
                        )));
                    }
                }
            }
            DiagMatrix => {
                arity(1)?;
                let n = match v[0].shape() {
                    ([], Base::Vector(n) | Base::RowVector(n)) => n,
                    _ => return Err(Fault::fatal("diag_matrix needs a vector")),
                };
                let zero = if v[0].is_var() {
                    S::V(tape.leaf(0.0))
                } else {
                    S::C(0.0)
                };
                let mut e = vec![zero; n * n];
                for i in 0..n {
                    e[i + i * n] = v[0].elem(i);
                }
                super::super::value::tensor_from_s(tape, vec![], Base::Matrix(n, n), &e)
            }
            Diagonal => {
                arity(1)?;
                match v[0].shape() {
                    ([], Base::Matrix(r, c)) => {
                        let k = r.min(c);
                        let offs: Vec<usize> = (0..k).map(|i| i + i * r).collect();
                        permute(&v[0], &offs, vec![], Base::Vector(k))
                    }
                    _ => return Err(Fault::fatal("diagonal needs a matrix")),
                }
            }
            CumulativeSum => {
                arity(1)?;
                let (arr, base) = {
                    let (a, b) = v[0].shape();
                    (a.to_vec(), b)
                };
                let n = v[0].num_elements();
                if v[0].is_int() {
                    let xs = v[0].values(tape);
                    let mut acc = 0.0;
                    let out: Vec<f64> = xs
                        .iter()
                        .map(|x| {
                            acc += x;
                            acc
                        })
                        .collect();
                    Value::from_tensor(Tensor {
                        arr,
                        base,
                        data: Data::Int(Arc::new(out)),
                    })
                } else {
                    let mut out = Vec::with_capacity(n);
                    let mut acc = S::C(0.0);
                    for i in 0..n {
                        let x = v[0].elem(i);
                        let val = tape.value(acc) + tape.value(x);
                        acc = tape.node(val, &[(acc, 1.0), (x, 1.0)]);
                        out.push(acc);
                    }
                    super::super::value::tensor_from_s(tape, arr, base, &out)
                }
            }
            Segment | Head | Tail => {
                let (x, len_arg) = (&v[0], if b == Segment { 2 } else { 1 });
                if v.len() != len_arg + 1 {
                    return Err(Fault::fatal(
                        "wrong number of arguments to segment/head/tail",
                    ));
                }
                let Value::T(t) = x else {
                    return Err(Fault::fatal("segment/head/tail need a vector or array"));
                };
                let total = t.arr.first().copied().unwrap_or(t.base.size());
                let n = int_arg(len_arg)?;
                let lo = match b {
                    Segment => int_arg(1)?,
                    Head => 1,
                    _ => total as i64 - n + 1,
                };
                if n < 0 || lo < 1 || lo + n - 1 > total as i64 {
                    // in the words of the call that was written
                    let msg = match b {
                        Head => {
                            format!("head(x, {n}): {n} element(s) out of range for size {total}")
                        }
                        Tail => {
                            format!("tail(x, {n}): {n} element(s) out of range for size {total}")
                        }
                        _ => format!(
                            "segment(x, {lo}, {n}): {n} element(s) from {lo} out of range for size {total}"
                        ),
                    };
                    return Err(Fault::fatal(msg));
                }
                if n == 0 {
                    let base = match t.base {
                        Base::RowVector(_) if t.arr.is_empty() => Base::RowVector(0),
                        Base::Vector(_) if t.arr.is_empty() => Base::Vector(0),
                        bb => bb,
                    };
                    let arr = if t.arr.is_empty() { vec![] } else { vec![0] };
                    gather(t, arr, base, &[])
                } else {
                    let (a, bb, offs) =
                        select(&t.arr, t.base, &[Ix::Range(Some(lo), Some(lo + n - 1))])?;
                    gather(t, a, bb, &offs)
                }
            }
            AddRowVector => {
                arity(2)?;
                let (r, c) = match v[0].shape() {
                    ([], Base::Matrix(r, c)) => (r, c),
                    _ => {
                        return Err(Fault::fatal(format!(
                            "add_row_vector needs a matrix first, found {}",
                            v[0].describe()
                        )));
                    }
                };
                match v[1].shape() {
                    ([], Base::Vector(n) | Base::RowVector(n)) if n == c => {}
                    _ => {
                        return Err(Fault::fatal(format!(
                            "add_row_vector: the second argument must be a vector or row vector of \
                             {c} elements (the columns of the matrix), found {}",
                            v[1].describe()
                        )));
                    }
                }
                let rep = rep_rows(tape, &v[1], r);
                map_binary(tape, B::Add, &v[0], &rep, "add_row_vector")?
            }
            Softmax | LogSoftmax
                if matches!(v.first().map(Value::shape), Some(([], Base::Matrix(..)))) =>
            {
                arity(1)?;
                super::super::ops::softmax_rows(tape, &v[0], b == LogSoftmax)
            }
            Softmax | LogSoftmax => {
                arity(1)?;
                let n = match v[0].shape() {
                    ([], Base::Vector(n)) => n,
                    _ => return Err(Fault::fatal("softmax needs a vector or a matrix")),
                };
                let xs = v[0].values(tape);
                let m = xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let lse = m + xs.iter().map(|y| (y - m).exp()).sum::<f64>().ln();
                let s: Vec<f64> = xs.iter().map(|y| (y - lse).exp()).collect();
                if b == Softmax {
                    dense(tape, &v[0], vec![], Base::Vector(n), &s.clone(), |i, j| {
                        s[i] * (if i == j { 1.0 } else { 0.0 } - s[j])
                    })
                } else {
                    let f: Vec<f64> = xs.iter().map(|y| y - lse).collect();
                    dense(tape, &v[0], vec![], Base::Vector(n), &f, |i, j| {
                        (if i == j { 1.0 } else { 0.0 }) - s[j]
                    })
                }
            }
            DiagPreMultiply | DiagPostMultiply => {
                arity(2)?;
                let (d, m) = if b == DiagPreMultiply {
                    (&v[0], &v[1])
                } else {
                    (&v[1], &v[0])
                };
                let (r, c) = match m.shape() {
                    ([], Base::Matrix(r, c)) => (r, c),
                    _ => return Err(Fault::fatal("diag_pre/post_multiply needs a matrix")),
                };
                let need = if b == DiagPreMultiply { r } else { c };
                if d.num_elements() != need || d.as_s().is_some() {
                    return Err(Fault::fatal(format!(
                        "size mismatch in diag_pre/post_multiply: {} and {}",
                        d.describe(),
                        m.describe()
                    )));
                }
                let offs: Vec<usize> = (0..r * c)
                    .map(|o| if b == DiagPreMultiply { o % r } else { o / r })
                    .collect();
                let expanded = permute(d, &offs, vec![], Base::Matrix(r, c));
                map_binary(tape, B::Mul, &expanded, m, "diag_pre_multiply")?
            }
            Transpose => {
                arity(1)?;
                transpose(&v[0])?
            }
            Fma => {
                arity(3)?;
                let p = map_binary(tape, B::Mul, &v[0], &v[1], "fma")?;
                map_binary(tape, B::Add, &p, &v[2], "fma")?
            }
            IntStep | IsInf | IsNan => {
                arity(1)?;
                let x = match v[0].as_s() {
                    Some(s) => tape.value(s),
                    None => return Err(Fault::fatal("int_step/is_inf/is_nan need a scalar")),
                };
                Value::Int(match b {
                    IntStep => x > 0.0,
                    IsInf => x.is_infinite(),
                    _ => x.is_nan(),
                } as i64)
            }
            ToInt => {
                arity(1)?;
                let ints = v[0]
                    .values(tape)
                    .into_iter()
                    .map(to_int)
                    .collect::<R<Vec<f64>>>()?;
                match &v[0] {
                    Value::T(t) => Value::from_tensor(Tensor {
                        arr: t.arr.clone(),
                        base: t.base,
                        data: Data::Int(Arc::new(ints)),
                    }),
                    _ => Value::Int(ints[0] as i64),
                }
            }
            Reverse | SortAsc | SortDesc => {
                arity(1)?;
                let Value::T(t) = &v[0] else {
                    return Err(Fault::fatal("reverse/sort need a vector or array"));
                };
                let (outer, block) = match (t.arr.as_slice(), t.base) {
                    ([], bb) => (bb.size(), 1),
                    ([n, ..], _) => (*n, t.data.len() / (*n).max(1)),
                };
                let order: Vec<usize> = if b == Reverse {
                    (0..outer).rev().collect()
                } else {
                    if block != 1 {
                        return Err(Fault::fatal(
                            "sort needs a vector or a one-dimensional array",
                        ));
                    }
                    let xs = v[0].values(tape);
                    let mut o: Vec<usize> = (0..outer).collect();
                    o.sort_by(|&i, &j| xs[i].total_cmp(&xs[j]));
                    if b == SortDesc {
                        o.reverse();
                    }
                    o
                };
                let offs: Vec<usize> = order
                    .iter()
                    .flat_map(|&i| (i * block)..(i * block + block))
                    .collect();
                gather(t, t.arr.clone(), t.base, &offs)
            }
            RowsDotProduct | ColumnsDotProduct => {
                arity(2)?;
                let p = map_binary(tape, B::Mul, &v[0], &v[1], "rows_dot_product")?;
                let (r, c) = p.shape().1.matrix_dims();
                if b == RowsDotProduct {
                    let ones = Value::from_tensor(Tensor {
                        arr: vec![],
                        base: Base::Vector(c),
                        data: Data::Real(Arc::new(vec![1.0; c])),
                    });
                    matmul(tape, &p, &ones)?
                } else {
                    let ones = Value::from_tensor(Tensor {
                        arr: vec![],
                        base: Base::RowVector(r),
                        data: Data::Real(Arc::new(vec![1.0; r])),
                    });
                    matmul(tape, &ones, &p)?
                }
            }
            MultiplyLowerTriSelfTranspose => {
                arity(1)?;
                let l = matrix::lower_triangle(tape, &v[0])?;
                let t = transpose(&l)?;
                matmul(tape, &l, &t)?
            }
            Crossprod | Tcrossprod => {
                arity(1)?;
                let t = transpose(&v[0])?;
                if b == Crossprod {
                    matmul(tape, &t, &v[0])?
                } else {
                    matmul(tape, &v[0], &t)?
                }
            }
            QuadForm => {
                arity(2)?;
                let av = matmul(tape, &v[0], &v[1])?;
                let bt = transpose(&v[1])?;
                matmul(tape, &bt, &av)?
            }
            LinspacedVector => {
                arity(3)?;
                let n = int_arg(0)?.max(0) as usize;
                let lo = tape.value(scalar_arg(&v[1])?.as_s().expect("scalar"));
                let hi = tape.value(scalar_arg(&v[2])?.as_s().expect("scalar"));
                let xs: Vec<f64> = (0..n)
                    .map(|i| {
                        if n == 1 {
                            hi
                        } else {
                            lo + (hi - lo) * i as f64 / (n - 1) as f64
                        }
                    })
                    .collect();
                Value::from_tensor(Tensor {
                    arr: vec![],
                    base: Base::Vector(n),
                    data: Data::Real(Arc::new(xs)),
                })
            }
            CholeskyDecompose | Inverse | InverseSpd | Determinant | LogDeterminant => {
                arity(1)?;
                matrix::unary_linalg(tape, b, &v[0])?
            }
            MdivideLeft | MdivideLeftTriLow => {
                arity(2)?;
                matrix::divide(tape, Side::Left, &v[0], &v[1], b == MdivideLeftTriLow)?
            }
            MdivideRight | MdivideRightTriLow => {
                arity(2)?;
                matrix::divide(tape, Side::Right, &v[1], &v[0], b == MdivideRightTriLow)?
            }
            QuadFormDiag => {
                arity(2)?;
                matrix::quad_form_diag(tape, &v[0], &v[1])?
            }
            QuadFormSym => {
                arity(2)?;
                matrix::quad_form_sym(tape, &v[0], &v[1])?
            }
            Gp(kind) => matrix::gp_cov(tape, kind, v)?,
            Trace => {
                arity(1)?;
                let k = match v[0].shape() {
                    ([], Base::Matrix(r, c)) => r.min(c),
                    _ => return Err(Fault::fatal("trace needs a matrix")),
                };
                let r = v[0].shape().1.matrix_dims().0;
                let diag: Vec<usize> = (0..k).map(|i| i + i * r).collect();
                let d = permute(&v[0], &diag, vec![], Base::Vector(k));
                let xs = d.values(tape);
                reduce(tape, &d, xs.iter().sum(), |_| 1.0)
            }
            AddDiag => {
                arity(2)?;
                let k = match v[0].shape() {
                    ([], Base::Matrix(r, c)) if r == c => r,
                    _ => return Err(Fault::fatal("add_diag needs a square matrix")),
                };
                if v[1].as_s().is_none() && v[1].num_elements() != k {
                    return Err(Fault::fatal(format!(
                        "size mismatch in add_diag: {} and {}",
                        v[0].describe(),
                        v[1].describe()
                    )));
                }
                let mut e: Vec<S> = (0..k * k).map(|o| v[0].elem(o)).collect();
                for i in 0..k {
                    let di = match v[1].as_s() {
                        Some(s) => s,
                        None => v[1].elem(i),
                    };
                    let a = e[i + i * k];
                    let val = tape.value(a) + tape.value(di);
                    e[i + i * k] = tape.node(val, &[(a, 1.0), (di, 1.0)]);
                }
                super::super::value::tensor_from_s(tape, vec![], Base::Matrix(k, k), &e)
            }
            LogMix => {
                arity(3)?;
                let lt = map_unary(tape, U::Log, &v[0]);
                let l1t = map_unary(tape, U::Log1m, &v[0]);
                let a = map_binary(tape, B::Add, &lt, &v[1], "log_mix")?;
                let c = map_binary(tape, B::Add, &l1t, &v[2], "log_mix")?;
                map_binary(tape, B::LogSumExp, &a, &c, "log_mix")?
            }
        })
    }
}

/// The int `sum` or `prod` (`what`) of the elements `xs` of an int array (exact integers),
/// folded exactly from `start` with `step`. Errors: the integer-overflow error when the result
/// is outside the range of `int`.
fn int_total(what: &str, xs: &[f64], start: i128, step: fn(i128, i128) -> Option<i128>) -> R<i64> {
    let exact = xs.iter().try_fold(start, |acc, &x| step(acc, x as i128));
    match exact.and_then(|v| i64::try_from(v).ok()) {
        Some(v) if crate::syntax::ast::int_in_range(Some(v)).is_some() => Ok(v),
        _ => Err(super::expr::int_overflow(
            &format!("the {what} of the int array"),
            exact,
        )),
    }
}

/// Stan's `to_int(x)` in the model: [`to_int_value`] as a domain error.
fn to_int(x: f64) -> R<f64> {
    to_int_value(x).map_err(Fault::domain)
}

/// Stan's `to_int(x)`: `x` truncated toward zero, as an `int` stored in an f64 (shared by the
/// model's evaluator and the REPL's posterior expressions). Errors: the message
/// `to_int: X is not in the range of int (-2147483648 to 2147483647)` when `x` is NaN or outside
/// the 32-bit `int` range (checked before truncating, as Stan does); X is in exponent form
/// (`1e300`) from 1e16 in magnitude.
pub fn to_int_value(x: f64) -> Result<f64, String> {
    const LO: f64 = i32::MIN as f64;
    const HI: f64 = i32::MAX as f64;
    if !(LO..=HI).contains(&x) {
        // a huge value in exponent form (`1e300`, not its 301 digits)
        let shown = if x.abs() >= 1e16 {
            format!("{x:e}")
        } else {
            format!("{x}")
        };
        return Err(format!(
            "to_int: {shown} is not in the range of int ({LO} to {HI})"
        ));
    }
    Ok(x.trunc())
}

/// The `rows × n` matrix whose every row is the (row) vector `v` of length `n`. For slots this
/// is a [`Slots::RowRep`] over `v`'s contiguous slots (nothing materialised), so that adding it
/// to a matrix is one broadcast node (`X * W + rep_matrix(b', N)`, `add_row_vector`).
pub fn rep_rows(tape: &mut Tape, v: &Value, rows: usize) -> Value {
    let n = v.num_elements();
    match v {
        Value::T(t) if t.data.is_var() => {
            let Data::Var(s) = &t.data else {
                unreachable!("checked var")
            };
            let start = tape.contiguous(s);
            Value::from_tensor(Tensor {
                arr: vec![],
                base: Base::Matrix(rows, n),
                data: Data::Var(Slots::RowRep {
                    start,
                    rows: rows as u32,
                    cols: n as u32,
                }),
            })
        }
        _ => {
            let offs: Vec<usize> = (0..n).flat_map(|j| std::iter::repeat_n(j, rows)).collect();
            permute(v, &offs, vec![], Base::Matrix(rows, n))
        }
    }
}

fn scalar_arg(v: &Value) -> R<Value> {
    if v.as_s().is_some() {
        Ok(v.clone())
    } else {
        Err(Fault::fatal(format!(
            "expected a scalar, found {}",
            v.describe()
        )))
    }
}

/// Checks that `v` has the declared shape.
pub fn check_shape(v: &Value, arr: &[usize], base: Base, int: bool) -> R<()> {
    let (va, vb) = v.shape();
    if va != arr || vb != base || (int && !v.is_int()) {
        let declared = Value::from_tensor(Tensor {
            arr: arr.to_vec(),
            base,
            data: if int {
                Data::Int(Arc::new(vec![
                    0.0;
                    arr.iter().product::<usize>() * base.size()
                ]))
            } else {
                Data::Real(Arc::new(vec![
                    0.0;
                    arr.iter().product::<usize>() * base.size()
                ]))
            },
        });
        return Err(Fault::fatal(format!(
            "size mismatch: declared {}, assigned {}",
            declared.describe(),
            v.describe()
        )));
    }
    Ok(())
}

/// `append_col(a, b, …)`: columns of vectors/matrices side by side (one or more arguments), or
/// row vectors/scalars concatenated into a row vector.
pub fn append_col(tape: &mut Tape, parts: &[&Value]) -> R<Value> {
    if parts.is_empty() {
        return Err(Fault::fatal("append_col needs at least one argument"));
    }
    let mut rows: Option<usize> = None;
    let mut cols = 0;
    let all_row = parts.iter().all(|p| {
        matches!(p.shape().1, Base::RowVector(_) | Base::Scalar) && p.shape().0.is_empty()
    });
    for p in parts {
        let (a, b) = p.shape();
        if !a.is_empty() {
            return Err(Fault::fatal(format!(
                "append_col cannot take {}",
                p.describe()
            )));
        }
        let (r, c) = b.matrix_dims();
        if let Some(r0) = rows
            && r0 != r
        {
            return Err(Fault::fatal(format!(
                "size mismatch in append_col: {r0} rows and {r} rows"
            )));
        }
        rows = Some(r);
        cols += c;
    }
    let r = rows.unwrap_or(0);
    let base = if all_row {
        Base::RowVector(cols)
    } else {
        Base::Matrix(r, cols)
    };
    // Column-major storage: concatenating the parts' storage stacks their columns.
    Ok(concat(tape, parts, vec![], base))
}

/// `append_row(a, b, …)`: vectors/scalars into a vector, or row vectors/matrices stacked.
pub fn append_row(tape: &mut Tape, parts: &[&Value]) -> R<Value> {
    if parts.is_empty() {
        return Err(Fault::fatal("append_row needs at least one argument"));
    }
    for p in parts {
        if !p.shape().0.is_empty() {
            return Err(Fault::fatal(format!(
                "append_row cannot take {}",
                p.describe()
            )));
        }
    }
    let all_col = parts
        .iter()
        .all(|p| matches!(p.shape().1, Base::Vector(_) | Base::Scalar));
    if all_col {
        let n = parts.iter().map(|p| p.num_elements()).sum();
        return Ok(concat(tape, parts, vec![], Base::Vector(n)));
    }
    let mut cols: Option<usize> = None;
    let mut rows = 0;
    for p in parts {
        let (r, c) = p.shape().1.matrix_dims();
        if let Some(c0) = cols
            && c0 != c
        {
            return Err(Fault::fatal(format!(
                "size mismatch in append_row: {c0} columns and {c} columns"
            )));
        }
        cols = Some(c);
        rows += r;
    }
    let c = cols.unwrap_or(0);
    let mut e = Vec::with_capacity(rows * c);
    for j in 0..c {
        for p in parts {
            let (r, _) = p.shape().1.matrix_dims();
            for i in 0..r {
                e.push(p.elem(i + j * r));
            }
        }
    }
    Ok(super::super::value::tensor_from_s(
        tape,
        vec![],
        Base::Matrix(rows, c),
        &e,
    ))
}
