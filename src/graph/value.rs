//! Runtime values of the interpreter: integers, reals and tape variables, as scalars or as
//! (arrays of) vectors, row vectors and matrices, with indexing.
//!
//! Layout: an array's elements are stored one after another (row-major over the array
//! dimensions), and each element (a vector, row vector or matrix) is stored column-major, so a
//! matrix–vector product walks contiguous columns.

use std::sync::Arc;

use super::tape::{S, Tape};

/// The shape of one array element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Base {
    Scalar,
    Vector(usize),
    RowVector(usize),
    Matrix(usize, usize),
}

impl Base {
    /// Number of reals in one element.
    pub fn size(self) -> usize {
        match self {
            Base::Scalar => 1,
            Base::Vector(n) | Base::RowVector(n) => n,
            Base::Matrix(r, c) => r * c,
        }
    }

    /// (rows, cols) as a matrix: a vector is n × 1, a row vector 1 × n, a scalar 1 × 1.
    pub fn matrix_dims(self) -> (usize, usize) {
        match self {
            Base::Scalar => (1, 1),
            Base::Vector(n) => (n, 1),
            Base::RowVector(n) => (1, n),
            Base::Matrix(r, c) => (r, c),
        }
    }

    /// The sizes of the element's own dimensions.
    pub fn dims(self) -> Vec<usize> {
        match self {
            Base::Scalar => vec![],
            Base::Vector(n) | Base::RowVector(n) => vec![n],
            Base::Matrix(r, c) => vec![r, c],
        }
    }

    /// Type name for messages.
    pub fn describe(self) -> String {
        match self {
            Base::Scalar => "scalar".into(),
            Base::Vector(n) => format!("vector[{n}]"),
            Base::RowVector(n) => format!("row_vector[{n}]"),
            Base::Matrix(r, c) => format!("matrix[{r}, {c}]"),
        }
    }
}

/// Storage of a tensor's elements.
#[derive(Clone, Debug)]
pub enum Data {
    /// Integers (exact in f64), shared with the model's data.
    Int(Arc<Vec<f64>>),
    /// Reals that do not depend on parameters.
    Real(Arc<Vec<f64>>),
    /// Tape slots.
    Var(Slots),
}

/// The tape slots of a variable tensor, in storage order.
///
/// A node's outputs are allocated contiguously, so the common case is a range `start ..
/// start + n`, which costs nothing to build (no per-evaluation allocation) and lets dense nodes
/// read and write the tape's value and adjoint buffers in place. `rep_matrix(v', rows)` is a
/// [`Slots::RowRep`] (every row aliases the same `cols` slots) so that `M + rep_matrix(b', N)`
/// runs as one broadcast node. Anything else (indexing, concatenation, element assignment,
/// other aliasing) is an explicit [`Slots::List`].
#[derive(Clone, Debug, PartialEq)]
pub enum Slots {
    /// Slots `start .. start + n`.
    Range { start: u32, n: u32 },
    /// A `rows × cols` column-major matrix whose element (i, j) is slot `start + j`.
    RowRep { start: u32, rows: u32, cols: u32 },
    /// Arbitrary slots.
    List(Vec<u32>),
}

impl Slots {
    /// The range `start .. start + n`.
    #[inline]
    pub fn range(start: u32, n: usize) -> Slots {
        Slots::Range { start, n: n as u32 }
    }

    /// Number of elements.
    #[inline]
    pub fn len(&self) -> usize {
        match self {
            Slots::Range { n, .. } => *n as usize,
            Slots::RowRep { rows, cols, .. } => (*rows * *cols) as usize,
            Slots::List(v) => v.len(),
        }
    }

    /// The slot of element `i`.
    #[inline(always)]
    pub fn at(&self, i: usize) -> u32 {
        match self {
            Slots::Range { start, .. } => start + i as u32,
            Slots::RowRep { start, rows, .. } => start + i as u32 / rows,
            Slots::List(v) => v[i],
        }
    }

    /// The first slot when the elements are the contiguous slots `first .. first + len()`
    /// (a list is checked element by element).
    #[inline]
    pub fn contiguous(&self) -> Option<u32> {
        match self {
            Slots::Range { start, .. } => Some(*start),
            Slots::RowRep { start, rows, cols } if *rows == 1 || *cols == 0 => Some(*start),
            Slots::RowRep { .. } => None,
            Slots::List(v) => {
                let first = *v.first()?;
                v.iter()
                    .enumerate()
                    .all(|(k, &i)| i == first + k as u32)
                    .then_some(first)
            }
        }
    }

    /// The elements in order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.len()).map(|i| self.at(i))
    }

    /// The slots as an explicit, mutable list (converting a range or a broadcast).
    pub fn make_list(&mut self) -> &mut Vec<u32> {
        if !matches!(self, Slots::List(_)) {
            *self = Slots::List(self.iter().collect());
        }
        match self {
            Slots::List(v) => v,
            _ => unreachable!("converted above"),
        }
    }
}

impl From<Vec<u32>> for Slots {
    fn from(v: Vec<u32>) -> Slots {
        Slots::List(v)
    }
}

impl Data {
    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            Data::Int(v) | Data::Real(v) => v.len(),
            Data::Var(v) => v.len(),
        }
    }

    /// Element `i` as a scalar.
    #[inline]
    pub fn at(&self, i: usize) -> S {
        match self {
            Data::Int(v) | Data::Real(v) => S::C(v[i]),
            Data::Var(v) => S::V(v.at(i)),
        }
    }
}

/// An array of vectors/row vectors/matrices/scalars (possibly with no array dimension).
#[derive(Clone, Debug)]
pub struct Tensor {
    /// Array dimensions, outermost first (empty for a plain vector or matrix).
    pub arr: Vec<usize>,
    pub base: Base,
    pub data: Data,
}

impl Tensor {
    /// Describes the type and sizes, e.g. `array[3] vector[2]`.
    pub fn describe(&self) -> String {
        let elem = match (self.base, &self.data) {
            (Base::Scalar, Data::Int(_)) => "int".to_string(),
            (Base::Scalar, _) => "real".to_string(),
            (b, _) => b.describe(),
        };
        if self.arr.is_empty() {
            elem
        } else {
            let dims: Vec<String> = self.arr.iter().map(|d| d.to_string()).collect();
            format!("array[{}] {}", dims.join(", "), elem)
        }
    }

    /// True when both have the same array dimensions and element shape.
    pub fn same_shape(&self, other: &Tensor) -> bool {
        self.arr == other.arr && self.base == other.base
    }
}

/// A runtime value.
#[derive(Clone, Debug)]
pub enum Value {
    Int(i64),
    Real(f64),
    Var(u32),
    /// Boxed so that scalar values (the inner loops) stay small.
    T(TBox),
}

/// Most boxes kept in the per-thread pool of [`TBox`].
const TBOX_POOL_MAX: usize = 256;

thread_local! {
    /// Spare tensor boxes, emptied ([`Tensor::EMPTY`]), for [`TBox::new`].
    static TBOX_POOL: std::cell::RefCell<Vec<Box<Tensor>>> = const {
        std::cell::RefCell::new(Vec::new())
    };
}

thread_local! {
    /// Spare uniquely owned buffers of reals, for [`pooled_reals`].
    static REALS_POOL: std::cell::RefCell<Vec<Arc<Vec<f64>>>> = const {
        std::cell::RefCell::new(Vec::new())
    };
}

/// A uniquely owned buffer of `n` copies of `fill`, reusing a buffer given back by
/// [`recycle_reals`] when there is one (the declarations of local containers in the model block
/// run at every evaluation; issue 12, allocation-free evaluation).
pub fn pooled_reals(n: usize, fill: f64) -> Arc<Vec<f64>> {
    let pooled = REALS_POOL
        .try_with(|p| p.try_borrow_mut().ok().and_then(|mut p| p.pop()))
        .ok()
        .flatten();
    if let Some(mut a) = pooled
        && let Some(v) = Arc::get_mut(&mut a)
    {
        v.clear();
        v.resize(n, fill);
        return a;
    }
    Arc::new(vec![fill; n])
}

/// Gives a buffer of reals back for [`pooled_reals`] when nothing else shares it (else just
/// drops this reference).
pub fn recycle_reals(mut a: Arc<Vec<f64>>) {
    if Arc::get_mut(&mut a).is_none() {
        return;
    }
    let _ = REALS_POOL.try_with(|p| {
        if let Ok(mut p) = p.try_borrow_mut()
            && p.len() < 64
        {
            p.push(a);
        }
    });
}

/// Gives the buffers of reals held by `v` back for [`pooled_reals`] (see [`recycle_reals`]).
pub fn recycle_value(v: Value) {
    if let Value::T(t) = v {
        let t = t.into_inner();
        if let Data::Real(a) = t.data {
            recycle_reals(a);
        }
    }
}

impl Tensor {
    /// A tensor that owns nothing (what a pooled box holds while it waits).
    const EMPTY: Tensor = Tensor {
        arr: Vec::new(),
        base: Base::Scalar,
        data: Data::Var(Slots::Range { start: 0, n: 0 }),
    };
}

/// The box of a [`Value::T`]: a `Box<Tensor>` taken from, and given back to, a per-thread pool,
/// so that the interpreter's vector temporaries allocate nothing once an evaluation has been
/// run (issue 12, allocation-free evaluation). On drop the tensor's own buffers are released at
/// once (the pooled box holds [`Tensor::EMPTY`]); only the box itself is kept.
#[derive(Debug)]
pub struct TBox(Option<Box<Tensor>>);

impl TBox {
    /// Boxes `t`, reusing a pooled box when there is one.
    pub fn new(t: Tensor) -> TBox {
        let pooled = TBOX_POOL
            .try_with(|p| p.try_borrow_mut().ok().and_then(|mut p| p.pop()))
            .ok()
            .flatten();
        match pooled {
            Some(mut b) => {
                *b = t;
                TBox(Some(b))
            }
            None => TBox(Some(Box::new(t))),
        }
    }

    /// The tensor, moved out of the box (the box goes back to the pool).
    pub fn into_inner(mut self) -> Tensor {
        std::mem::replace(&mut *self, Tensor::EMPTY)
    }
}

impl Drop for TBox {
    fn drop(&mut self) {
        let Some(mut b) = self.0.take() else { return };
        *b = Tensor::EMPTY;
        let _ = TBOX_POOL.try_with(|p| {
            if let Ok(mut p) = p.try_borrow_mut()
                && p.len() < TBOX_POOL_MAX
            {
                p.push(b);
            }
        });
    }
}

impl Clone for TBox {
    fn clone(&self) -> TBox {
        TBox::new((**self).clone())
    }
}

impl std::ops::Deref for TBox {
    type Target = Tensor;
    #[inline(always)]
    fn deref(&self) -> &Tensor {
        self.0
            .as_deref()
            .expect("a TBox holds its box until dropped")
    }
}

impl std::ops::DerefMut for TBox {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut Tensor {
        self.0
            .as_deref_mut()
            .expect("a TBox holds its box until dropped")
    }
}

/// An index after evaluation (1-based, unchecked).
#[derive(Clone, Debug)]
pub enum Ix {
    One(i64),
    Many(Vec<i64>),
    /// `lo:hi` inclusive; either end defaults to the whole dimension.
    Range(Option<i64>, Option<i64>),
    All,
}

/// A failure during evaluation; the interpreter attaches the statement's span.
///
/// Boxed so that `Result<Value, Fault>` is two words and comes back in registers: the
/// interpreter returns one per expression node.
#[derive(Clone, Debug)]
pub struct Fault(Box<FaultInfo>);

/// What a [`Fault`] says.
#[derive(Clone, Debug)]
pub struct FaultInfo {
    /// The message, e.g. "normal_lpdf: Scale parameter is -0.2, but must be positive".
    pub message: String,
    /// Whether the algorithm may continue by rejecting the point.
    pub recoverable: bool,
    /// The innermost statement where the fault arose when that is inside a user-defined
    /// function (possibly in an included library); the interpreter attaches the call site's
    /// span separately, so an error can name both places.
    pub origin: Option<crate::syntax::Span>,
    /// The `for` loops the fault arose in, innermost first: each loop variable's name and
    /// value, so that a message can say which iteration (which observation) failed.
    pub loops: Vec<(String, i64)>,
}

impl std::ops::Deref for Fault {
    type Target = FaultInfo;
    fn deref(&self) -> &FaultInfo {
        &self.0
    }
}

impl Fault {
    /// A fault with the given message and recoverability.
    pub fn new(message: impl Into<String>, recoverable: bool) -> Self {
        Fault(Box::new(FaultInfo {
            message: message.into(),
            recoverable,
            origin: None,
            loops: Vec::new(),
        }))
    }
    /// The same fault, arisen in the iteration `var = i` of a `for` loop (called by each
    /// enclosing loop in turn, innermost first).
    pub fn in_loop(mut self, var: &str, i: i64) -> Self {
        self.0.loops.push((var.to_string(), i));
        self
    }
    /// The loop iterations the fault arose in, outermost first (`"where i = 7"`,
    /// `"where j = 2, i = 7"`); `None` outside loops.
    pub fn iteration(&self) -> Option<String> {
        if self.loops.is_empty() {
            return None;
        }
        let parts: Vec<String> = self
            .loops
            .iter()
            .rev()
            .map(|(v, i)| format!("{v} = {i}"))
            .collect();
        Some(format!("where {}", parts.join(", ")))
    }
    /// The same fault, located inside a user-defined function at `origin`.
    pub fn with_origin(mut self, origin: crate::syntax::Span) -> Self {
        self.0.origin = Some(origin);
        self
    }
    /// A domain error (the sampler may reject the point).
    pub fn domain(message: impl Into<String>) -> Self {
        Fault::new(message, true)
    }
    /// An error in the program or data (index out of range, size mismatch).
    pub fn fatal(message: impl Into<String>) -> Self {
        Fault::new(message, false)
    }
}

/// Result of an evaluation step.
pub type R<T> = Result<T, Fault>;

/// The memory this process may still allocate: Linux's `MemAvailable` in bytes, read once;
/// `None` where it is unknown (no `/proc/meminfo`).
pub fn available_memory() -> Option<u128> {
    static AVAILABLE: std::sync::OnceLock<Option<u128>> = std::sync::OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        std::fs::read_to_string("/proc/meminfo").ok().and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("MemAvailable:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u128>().ok())
                .map(|kb| kb * 1024)
        })
    })
}

/// Refuses to build a container of `dims` (array sizes then the element's rows and columns)
/// whose `bytes_per_element` storage exceeds the available memory ([`available_memory`], or
/// 2⁴⁸ bytes where unknown), so that a size from the data such as `matrix[N, N]` with
/// N = 3·10⁶ is an error naming the sizes instead of an allocation failure that aborts the
/// process. `what` names the construct ("`matrix[3000000, 3000000]`", "rep_vector").
pub fn check_container_size(dims: &[usize], bytes_per_element: u128, what: &str) -> R<()> {
    let limit = available_memory().unwrap_or(1 << 48);
    let bytes = dims
        .iter()
        .try_fold(bytes_per_element, |acc, &n| acc.checked_mul(n as u128));
    match bytes {
        Some(b) if b <= limit => Ok(()),
        _ => {
            let need = match bytes {
                Some(b) => format!("{:.1} GB", b as f64 / 1e9),
                None => "more bytes than can be counted".into(),
            };
            Err(Fault::fatal(format!(
                "{what} would need {need} of memory but {:.1} GB are available; check the sizes \
                 (they come from the data or from arguments computed from it)",
                limit as f64 / 1e9
            )))
        }
    }
}

impl Value {
    /// A tensor, or the bare scalar when it has no dimension at all.
    pub fn from_tensor(t: Tensor) -> Value {
        if t.arr.is_empty() && t.base == Base::Scalar {
            match t.data {
                Data::Int(v) => Value::Int(v[0] as i64),
                Data::Real(v) => Value::Real(v[0]),
                Data::Var(v) => Value::Var(v.at(0)),
            }
        } else {
            Value::T(TBox::new(t))
        }
    }

    /// From a scalar.
    pub fn from_s(s: S) -> Value {
        match s {
            S::C(x) => Value::Real(x),
            S::V(i) => Value::Var(i),
        }
    }

    /// The real scalar, if this is a scalar (integers convert).
    pub fn as_s(&self) -> Option<S> {
        match self {
            Value::Int(i) => Some(S::C(*i as f64)),
            Value::Real(x) => Some(S::C(*x)),
            Value::Var(i) => Some(S::V(*i)),
            Value::T(_) => None,
        }
    }

    /// The integer, if this is an integer scalar.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// True for integer scalars and integer arrays.
    pub fn is_int(&self) -> bool {
        matches!(self, Value::Int(_))
            || matches!(self, Value::T(t) if matches!(t.data, Data::Int(_)))
    }

    /// True when the value depends on parameters.
    pub fn is_var(&self) -> bool {
        matches!(self, Value::Var(_))
            || matches!(self, Value::T(t) if matches!(t.data, Data::Var(_)))
    }

    /// Number of scalar elements.
    pub fn num_elements(&self) -> usize {
        match self {
            Value::T(t) => t.data.len(),
            _ => 1,
        }
    }

    /// Element `i` (flat storage order) as a scalar.
    pub fn elem(&self, i: usize) -> S {
        match self {
            Value::T(t) => t.data.at(i),
            v => v.as_s().expect("non-tensor values are scalars"),
        }
    }

    /// Describes the type for messages.
    pub fn describe(&self) -> String {
        match self {
            Value::Int(_) => "int".into(),
            Value::Real(_) | Value::Var(_) => "real".into(),
            Value::T(t) => t.describe(),
        }
    }

    /// Array dims and element shape (a scalar has none and `Base::Scalar`).
    pub fn shape(&self) -> (&[usize], Base) {
        match self {
            Value::T(t) => (&t.arr, t.base),
            _ => (&[], Base::Scalar),
        }
    }

    /// All element values (constants or tape values).
    pub fn values(&self, tape: &Tape) -> Vec<f64> {
        (0..self.num_elements())
            .map(|i| tape.value(self.elem(i)))
            .collect()
    }
}

/// Builds a tensor from scalars: constant storage if none is a variable, else slots (constants
/// become leaves).
pub fn tensor_from_s(tape: &mut Tape, arr: Vec<usize>, base: Base, elems: &[S]) -> Value {
    // A bare scalar, and consecutive slots, need no list (no allocation).
    if arr.is_empty() && base == Base::Scalar && elems.len() == 1 {
        return Value::from_s(elems[0]);
    }
    if let Some(&S::V(first)) = elems.first()
        && elems
            .iter()
            .enumerate()
            .all(|(i, s)| *s == S::V(first.wrapping_add(i as u32)))
    {
        let data = Data::Var(Slots::range(first, elems.len()));
        return Value::from_tensor(Tensor { arr, base, data });
    }
    let data = if elems.iter().all(|s| matches!(s, S::C(_))) {
        Data::Real(Arc::new(
            elems
                .iter()
                .map(|s| match s {
                    S::C(x) => *x,
                    S::V(_) => unreachable!("checked all constant"),
                })
                .collect(),
        ))
    } else {
        Data::Var(Slots::List(
            elems.iter().map(|&s| to_slot(tape, s)).collect(),
        ))
    };
    Value::from_tensor(Tensor { arr, base, data })
}

/// A scalar as a slot (a constant becomes a new leaf).
#[inline]
pub fn to_slot(tape: &mut Tape, s: S) -> u32 {
    match s {
        S::V(i) => i,
        S::C(x) => tape.leaf(x),
    }
}

#[inline(always)]
fn check_index(i: i64, n: usize, what: &str) -> R<usize> {
    if i < 1 || i as usize > n {
        Err(index_fault(i, n, what))
    } else {
        Ok(i as usize - 1)
    }
}

/// The message of an index out of range (kept out of line: never on the hot path).
#[cold]
#[inline(never)]
fn index_fault(i: i64, n: usize, what: &str) -> Fault {
    Fault::fatal(format!(
        "index {i} out of range; expecting index to be between 1 and {n} ({what})"
    ))
}

/// Offsets selected by `ixs` in a value with array dims `arr` and element shape `base`, in the
/// storage order of the result, with the result's shape.
pub fn select(arr: &[usize], base: Base, ixs: &[Ix]) -> R<(Vec<usize>, Base, Vec<usize>)> {
    let bdims = base.dims();
    let ndims = arr.len() + bdims.len();
    if ixs.len() > ndims {
        return Err(Fault::fatal(format!(
            "too many indexes ({}) for a value with {} dimension(s)",
            ixs.len(),
            ndims
        )));
    }
    let dim = |k: usize| -> usize {
        if k < arr.len() {
            arr[k]
        } else {
            bdims[k - arr.len()]
        }
    };
    // Per dimension: the selected 0-based positions, and whether the dimension is kept.
    let mut sel: Vec<(Vec<usize>, bool)> = Vec::with_capacity(ndims);
    for k in 0..ndims {
        let n = dim(k);
        let what = if k < arr.len() {
            "array"
        } else {
            "vector/matrix"
        };
        let s = match ixs.get(k).unwrap_or(&Ix::All) {
            Ix::One(i) => (vec![check_index(*i, n, what)?], false),
            Ix::Many(v) => (
                v.iter()
                    .map(|&i| check_index(i, n, what))
                    .collect::<R<Vec<_>>>()?,
                true,
            ),
            Ix::Range(lo, hi) => {
                let lo = lo.unwrap_or(1);
                let hi = hi.unwrap_or(n as i64);
                if hi < lo {
                    (vec![], true)
                } else {
                    check_index(lo, n, what)?;
                    check_index(hi, n, what)?;
                    ((lo as usize - 1..hi as usize).collect(), true)
                }
            }
            Ix::All => ((0..n).collect(), true),
        };
        sel.push(s);
    }
    let block = base.size();
    // Array part: row-major strides.
    let mut out_arr = Vec::new();
    let mut arr_offs = vec![0usize];
    let mut stride = block * arr.iter().product::<usize>();
    for (k, &n) in arr.iter().enumerate() {
        stride /= n.max(1);
        let (ref pos, kept) = sel[k];
        if kept {
            out_arr.push(pos.len());
        }
        let mut next = Vec::with_capacity(arr_offs.len() * pos.len());
        for &a in &arr_offs {
            for &p in pos {
                next.push(a + p * stride);
            }
        }
        arr_offs = next;
    }
    let b = &sel[arr.len()..];
    let (out_base, base_offs): (Base, Vec<usize>) = match base {
        Base::Scalar => (Base::Scalar, vec![0]),
        Base::Vector(_) | Base::RowVector(_) => {
            let (ref pos, kept) = b[0];
            let ob = if !kept {
                Base::Scalar
            } else if matches!(base, Base::Vector(_)) {
                Base::Vector(pos.len())
            } else {
                Base::RowVector(pos.len())
            };
            (ob, pos.clone())
        }
        Base::Matrix(r, _) => {
            let (ref rows, rk) = b[0];
            let (ref cols, ck) = b[1];
            let ob = match (rk, ck) {
                (true, true) => Base::Matrix(rows.len(), cols.len()),
                (false, true) => Base::RowVector(cols.len()),
                (true, false) => Base::Vector(rows.len()),
                (false, false) => Base::Scalar,
            };
            let mut offs = Vec::with_capacity(rows.len() * cols.len());
            for &j in cols {
                for &i in rows {
                    offs.push(i + j * r);
                }
            }
            (ob, offs)
        }
    };
    let mut offs = Vec::with_capacity(arr_offs.len() * base_offs.len());
    for &a in &arr_offs {
        for &o in &base_offs {
            offs.push(a + o);
        }
    }
    Ok((out_arr, out_base, offs))
}

/// Flat offset of a full single index (every dimension given as one 1-based integer), without
/// allocating; `None` when `idx` does not index every dimension.
#[inline]
pub fn single_offset(arr: &[usize], base: Base, idx: &[i64]) -> Option<R<usize>> {
    // The common case first: one index into a plain vector or a one-dimensional real array.
    if let [i] = idx {
        match (arr, base) {
            ([], Base::Vector(n) | Base::RowVector(n)) => {
                return Some(check_index(*i, n, "vector"));
            }
            ([n], Base::Scalar) => return Some(check_index(*i, *n, "array")),
            _ => {}
        }
    }
    let bd = match base {
        Base::Scalar => 0,
        Base::Vector(_) | Base::RowVector(_) => 1,
        Base::Matrix(..) => 2,
    };
    if idx.len() != arr.len() + bd {
        return None;
    }
    let mut off = 0usize;
    for (k, &n) in arr.iter().enumerate() {
        match check_index(idx[k], n, "array") {
            Ok(p) => off = off * n + p,
            Err(e) => return Some(Err(e)),
        }
    }
    off *= base.size();
    let a = arr.len();
    let r = match base {
        Base::Scalar => Ok(0),
        Base::Vector(n) | Base::RowVector(n) => check_index(idx[a], n, "vector"),
        Base::Matrix(r, c) => check_index(idx[a], r, "matrix row")
            .and_then(|i| check_index(idx[a + 1], c, "matrix column").map(|j| i + j * r)),
    };
    Some(r.map(|o| off + o))
}

/// Gathers `offs` of `t` into a new value of shape (`arr`, `base`).
pub fn gather(t: &Tensor, arr: Vec<usize>, base: Base, offs: &[usize]) -> Value {
    let data = match &t.data {
        Data::Int(v) => Data::Int(Arc::new(offs.iter().map(|&o| v[o]).collect())),
        Data::Real(v) => Data::Real(Arc::new(offs.iter().map(|&o| v[o]).collect())),
        Data::Var(v) => Data::Var(Slots::List(offs.iter().map(|&o| v.at(o)).collect())),
    };
    Value::from_tensor(Tensor { arr, base, data })
}

/// Maps a position in Stan's output order (all dimensions column-major: the first index varies
/// fastest) to the flat storage offset of a value with array dims `arr` and element `base`.
pub fn stan_order_offsets(arr: &[usize], base: Base) -> Vec<usize> {
    let mut dims: Vec<usize> = arr.to_vec();
    dims.extend(base.dims());
    let total: usize = dims.iter().product();
    let mut out = Vec::with_capacity(total);
    let mut idx = vec![0usize; dims.len()];
    for _ in 0..total {
        let mut off = 0usize;
        for (k, &n) in arr.iter().enumerate() {
            off = off * n + idx[k];
        }
        off *= base.size();
        let a = arr.len();
        off += match base {
            Base::Scalar => 0,
            Base::Vector(_) | Base::RowVector(_) => idx[a],
            Base::Matrix(r, _) => idx[a] + idx[a + 1] * r,
        };
        out.push(off);
        // Increment, first index fastest.
        for k in 0..dims.len() {
            idx[k] += 1;
            if idx[k] < dims[k] {
                break;
            }
            idx[k] = 0;
        }
    }
    out
}

/// Names in Stan's output order: `name`, `name[1]`, `name[2,1]`, …
pub fn stan_order_names(name: &str, arr: &[usize], base: Base) -> Vec<String> {
    let mut dims: Vec<usize> = arr.to_vec();
    dims.extend(base.dims());
    if dims.is_empty() {
        return vec![name.to_string()];
    }
    let total: usize = dims.iter().product();
    let mut out = Vec::with_capacity(total);
    let mut idx = vec![0usize; dims.len()];
    for _ in 0..total {
        let parts: Vec<String> = idx.iter().map(|i| (i + 1).to_string()).collect();
        out.push(format!("{name}[{}]", parts.join(",")));
        for k in 0..dims.len() {
            idx[k] += 1;
            if idx[k] < dims[k] {
                break;
            }
            idx[k] = 0;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn select_matrix_row_and_column() {
        // 2 × 3 matrix, column-major offsets: (i, j) → i + 2j.
        let (arr, b, offs) = select(&[], Base::Matrix(2, 3), &[Ix::One(2)]).unwrap();
        assert!(arr.is_empty());
        assert_eq!(b, Base::RowVector(3));
        assert_eq!(offs, vec![1, 3, 5]);
        let (_, b, offs) = select(&[], Base::Matrix(2, 3), &[Ix::All, Ix::One(3)]).unwrap();
        assert_eq!(b, Base::Vector(2));
        assert_eq!(offs, vec![4, 5]);
        let (_, b, offs) = select(
            &[],
            Base::Matrix(2, 3),
            &[Ix::Range(None, None), Ix::Many(vec![3, 1])],
        )
        .unwrap();
        assert_eq!(b, Base::Matrix(2, 2));
        assert_eq!(offs, vec![4, 5, 0, 1]);
        assert!(select(&[], Base::Vector(3), &[Ix::One(4)]).is_err());
    }

    #[test]
    fn select_array_of_vectors() {
        // array[2] vector[3]: element (a, i) at 3a + i.
        let (arr, b, offs) = select(&[2], Base::Vector(3), &[Ix::All, Ix::One(2)]).unwrap();
        assert_eq!(arr, vec![2]);
        assert_eq!(b, Base::Scalar);
        assert_eq!(offs, vec![1, 4]);
        assert_eq!(
            single_offset(&[2], Base::Vector(3), &[2, 3])
                .unwrap()
                .unwrap(),
            5
        );
    }

    #[test]
    fn stan_order_is_column_major() {
        assert_eq!(
            stan_order_names("S", &[], Base::Matrix(2, 2)),
            vec!["S[1,1]", "S[2,1]", "S[1,2]", "S[2,2]"]
        );
        // array[2] vector[3] stored [a0: 0 1 2, a1: 3 4 5]; Stan order a[1,1], a[2,1], a[1,2] …
        assert_eq!(
            stan_order_offsets(&[2], Base::Vector(3)),
            vec![0, 3, 1, 4, 2, 5]
        );
    }
}
