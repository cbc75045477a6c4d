//! Argument handling shared by every family: broadcasting, partial accumulators, errors.

use std::fmt;

use super::registry::FamilySig;

/// One evaluated argument of a distribution: a scalar or a vector of N values.
#[derive(Clone, Copy, Debug)]
pub enum Arg<'a> {
    Scalar(f64),
    Vector(&'a [f64]),
}

impl<'a> Arg<'a> {
    /// Number of elements (1 for a scalar).
    pub fn len(&self) -> usize {
        match self {
            Arg::Scalar(_) => 1,
            Arg::Vector(v) => v.len(),
        }
    }

    /// True for an empty vector.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element `i` under broadcasting: a scalar returns itself for every `i`.
    #[inline]
    pub fn at(&self, i: usize) -> f64 {
        match self {
            Arg::Scalar(x) => *x,
            Arg::Vector(v) => v[i],
        }
    }

    /// True for [`Arg::Vector`].
    pub fn is_vector(&self) -> bool {
        matches!(self, Arg::Vector(_))
    }
}

/// The result of a vectorised log density: the summed value and, for each argument with
/// `is_var[k]`, the partial derivatives ∂value/∂arg_k (length 1 for a scalar argument, summed
/// over the broadcast; length N for a vector argument). `partials[k]` is empty when `!is_var[k]`.
///
/// The buffers of [`Term::zeros`] come from a per-thread pool and go back to it when the term
/// is dropped, so a log density evaluated again and again (every gradient of a model) allocates
/// nothing once the pool holds buffers of the sizes it needs (issue 12, allocation-free
/// evaluation).
#[derive(Clone, Debug, PartialEq)]
pub struct Term {
    pub value: f64,
    pub partials: Vec<Vec<f64>>,
}

/// Most buffers kept in each per-thread pool of [`Term`] partials.
const POOL_MAX: usize = 64;

thread_local! {
    /// Spare per-argument partial buffers and spare outer lists of [`Term::partials`].
    static POOL: std::cell::RefCell<(Vec<Vec<f64>>, Vec<Vec<Vec<f64>>>)> =
        const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

impl Drop for Term {
    fn drop(&mut self) {
        let mut outer = std::mem::take(&mut self.partials);
        if outer.capacity() == 0 {
            return;
        }
        // `try_with`: at thread exit the pool may already be gone; then the buffers are freed.
        let _ = POOL.try_with(|p| {
            let Ok(mut p) = p.try_borrow_mut() else {
                return;
            };
            let (inner, lists) = &mut *p;
            for v in outer.drain(..) {
                if v.capacity() > 0 && inner.len() < POOL_MAX {
                    inner.push(v);
                }
            }
            if lists.len() < POOL_MAX {
                lists.push(std::mem::take(&mut outer));
            }
        });
    }
}

impl Term {
    /// A zero term with partial buffers sized for `args` (empty for non-var arguments), taken
    /// from the per-thread pool when it has some.
    pub fn zeros(args: &[Arg], is_var: &[bool]) -> Term {
        let pooled = POOL.try_with(|p| {
            let mut p = p.try_borrow_mut().ok()?;
            let (inner, lists) = &mut *p;
            let mut outer = lists.pop().unwrap_or_default();
            outer.clear();
            for (a, &v) in args.iter().zip(is_var) {
                if v {
                    let mut b = inner.pop().unwrap_or_default();
                    b.clear();
                    b.resize(a.len(), 0.0);
                    outer.push(b);
                } else {
                    outer.push(Vec::new());
                }
            }
            Some(outer)
        });
        let partials = match pooled {
            Ok(Some(p)) => p,
            _ => args
                .iter()
                .zip(is_var)
                .map(|(a, &v)| if v { vec![0.0; a.len()] } else { Vec::new() })
                .collect(),
        };
        Term {
            value: 0.0,
            partials,
        }
    }

    /// Adds `d` to the partial of argument `k` at broadcast element `i` (no-op for non-var args).
    #[inline]
    pub fn add_partial(&mut self, k: usize, i: usize, d: f64) {
        let p = &mut self.partials[k];
        match p.len() {
            0 => {}
            1 => p[0] += d,
            _ => p[i] += d,
        }
    }
}

/// An argument outside its support, or arguments that do not fit together.
///
/// Displays in Stan's style: "normal_lpdf: Scale parameter[3] is -0.2, but must be positive".
#[derive(Clone, Debug, PartialEq)]
pub struct DistError {
    /// The function as the user would call it, e.g. `normal_lpdf`.
    pub function: String,
    /// What went wrong, starting with the argument's name.
    pub message: String,
}

impl fmt::Display for DistError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.function, self.message)
    }
}

impl std::error::Error for DistError {}

/// The function name the user sees for `sig`: `normal_lpdf` or `poisson_lpmf`.
pub fn function_name(sig: &FamilySig) -> String {
    format!(
        "{}_{}",
        sig.name,
        if sig.discrete { "lpmf" } else { "lpdf" }
    )
}

/// Checks the number of arguments (variate + parameters) and of `is_var` flags.
pub fn check_arity(sig: &FamilySig, args: &[Arg], is_var: &[bool]) -> Result<(), DistError> {
    if args.len() != sig.params.len() + 1 || is_var.len() != args.len() {
        return Err(DistError {
            function: function_name(sig),
            message: format!(
                "expects {} arguments (the variate and {} parameters), got {}",
                sig.params.len() + 1,
                sig.params.len(),
                args.len()
            ),
        });
    }
    Ok(())
}

/// The common length N of the vector arguments (1 if all are scalars).
///
/// Errors: vectors of different lengths, naming both arguments and lengths.
pub fn broadcast_len(sig: &FamilySig, args: &[Arg]) -> Result<usize, DistError> {
    let mut n: Option<(usize, usize)> = None;
    for (k, a) in args.iter().enumerate() {
        if let Arg::Vector(v) = a {
            match n {
                None => n = Some((v.len(), k)),
                Some((m, j)) if m != v.len() => {
                    return Err(DistError {
                        function: function_name(sig),
                        message: format!(
                            "{} has {} elements but {} has {}; vector arguments must have the same size",
                            arg_name(sig, j),
                            m,
                            arg_name(sig, k),
                            v.len()
                        ),
                    });
                }
                _ => {}
            }
        }
    }
    Ok(n.map_or(1, |(m, _)| m))
}

/// The display name of argument `k` of `sig` (0 is the variate).
pub fn arg_name(sig: &FamilySig, k: usize) -> &'static str {
    if k == 0 {
        "Random variable"
    } else {
        sig.params[k - 1].name
    }
}

/// Checks that every element of argument `k` satisfies `ok`; the error names the element
/// (1-based, as users index) and says it `must be` `requirement`.
pub fn check_each(
    sig: &FamilySig,
    args: &[Arg],
    k: usize,
    requirement: &str,
    ok: impl Fn(f64) -> bool,
) -> Result<(), DistError> {
    let a = &args[k];
    // The common case first: every element passes, tested without early exit so the loop
    // vectorises; the element-by-element loop below then only runs to name a failure.
    if let Arg::Vector(v) = a
        && v.iter().fold(true, |all, &x| all & ok(x))
    {
        return Ok(());
    }
    for i in 0..a.len() {
        let x = a.at(i);
        if !ok(x) {
            let x = crate::words::shown_zero(x);
            let which = if a.is_vector() {
                format!("{}[{}]", arg_name(sig, k), i + 1)
            } else {
                arg_name(sig, k).to_string()
            };
            return Err(DistError {
                function: function_name(sig),
                message: format!("{which} is {x}, but must be {requirement}"),
            });
        }
    }
    Ok(())
}

/// Requirement phrases for [`check_each`], in Stan Math's wording (`stan/math/prim/err`).
pub mod requirement {
    /// `check_positive_finite`.
    pub const POSITIVE_FINITE: &str = "positive finite";
    /// `check_finite`.
    pub const FINITE: &str = "finite";
    /// `check_not_nan`.
    pub const NOT_NAN: &str = "not nan";
    /// `check_nonnegative`.
    pub const NONNEGATIVE: &str = "nonnegative";
    /// `check_bounded(…, 0, 1)` for a probability.
    pub const PROBABILITY: &str = "in the interval [0, 1]";
    /// A count variate or parameter (Stan's `int` with `check_nonnegative`).
    pub const COUNT: &str = "a nonnegative integer";
    /// A binary variate (Stan's `check_bounded(n, 0, 1)` on an `int`).
    pub const BINARY: &str = "0 or 1";
}

/// `x > 0` and finite.
#[inline]
pub fn positive_finite(x: f64) -> bool {
    x > 0.0 && x.is_finite()
}

/// `x ≥ 0` (false for NaN).
#[inline]
pub fn nonnegative(x: f64) -> bool {
    x >= 0.0
}

/// `0 ≤ x ≤ 1` (false for NaN).
#[inline]
pub fn probability(x: f64) -> bool {
    (0.0..=1.0).contains(&x)
}

/// A finite integer ≥ 0.
#[inline]
pub fn count(x: f64) -> bool {
    x >= 0.0 && x.is_finite() && x.fract() == 0.0
}

/// Exactly 0 or 1.
#[inline]
pub fn binary(x: f64) -> bool {
    x == 0.0 || x == 1.0
}

/// A per-element function of one argument, computed once when the argument is a scalar.
///
/// Hoists work such as `log σ` or `lgamma(α)` out of the loop over N broadcast elements when
/// that argument is a scalar; for a vector it evaluates `f` at the requested element.
pub struct Hoisted<'a, F: Fn(f64) -> f64> {
    arg: Arg<'a>,
    scalar: f64,
    f: F,
}

impl<'a, F: Fn(f64) -> f64> Hoisted<'a, F> {
    /// Wraps `f` over `arg`; evaluates `f` once now if `arg` is a scalar.
    pub fn new(arg: Arg<'a>, f: F) -> Self {
        let scalar = match arg {
            Arg::Scalar(x) => f(x),
            Arg::Vector(_) => 0.0,
        };
        Hoisted { arg, scalar, f }
    }

    /// `f(arg[i])` under broadcasting.
    #[inline]
    pub fn at(&self, i: usize) -> f64 {
        match self.arg {
            Arg::Scalar(_) => self.scalar,
            Arg::Vector(v) => (self.f)(v[i]),
        }
    }
}

/// The result for a variate where the density (or mass) is zero: value −∞ and zero partials,
/// as Stan's `LOG_ZERO` return.
pub fn zero_density(args: &[Arg], is_var: &[bool]) -> Term {
    let mut term = Term::zeros(args, is_var);
    term.value = f64::NEG_INFINITY;
    term
}
