//! Scalar functions with their derivatives: the building blocks of every elementwise node.
//!
//! Each unary function returns (f(x), f′(x)); each binary one (f(x, y), ∂f/∂x, ∂f/∂y). Formulas
//! follow Stan Math's `prim/fun` definitions (e.g. `log1p_exp(x) = x + log1p(exp(−x))` for
//! x > 0); derivatives are the textbook ones.

pub use crate::distributions::special::{lgamma, log_diff_exp};

/// √(2π)⁻¹, the standard normal density at 0.
const INV_SQRT_TWO_PI: f64 = 0.398_942_280_401_432_7;

/// log(1 + eˣ), stable for large |x|.
pub fn log1p_exp(x: f64) -> f64 {
    if x > 0.0 {
        x + (-x).exp().ln_1p()
    } else {
        x.exp().ln_1p()
    }
}

/// 1 / (1 + e⁻ˣ), stable for large |x|.
pub fn inv_logit(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

/// log(1 − eˣ) for x ≤ 0 (Mächler 2012, "Accurately computing log(1 − exp(−|a|))"): −∞ at
/// x = 0 (as Stan Math's `log1m_exp`), NaN for x > 0.
pub fn log1m_exp(x: f64) -> f64 {
    if x > 0.0 {
        f64::NAN
    } else if x == 0.0 {
        f64::NEG_INFINITY
    } else if x > -std::f64::consts::LN_2 {
        (-x.exp_m1()).ln()
    } else {
        (-x.exp()).ln_1p()
    }
}

/// log(eᵃ + eᵇ): +∞ when either argument is +∞, the other argument when one is −∞, NaN when
/// either is NaN (Stan Math's `log_sum_exp` edge values).
pub fn log_sum_exp2(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        return f64::NAN;
    }
    if a == f64::INFINITY || b == f64::INFINITY {
        return f64::INFINITY;
    }
    if a == f64::NEG_INFINITY {
        return b;
    }
    if b == f64::NEG_INFINITY {
        return a;
    }
    let m = a.max(b);
    m + (-(a - b).abs()).exp().ln_1p()
}

/// The partials (∂/∂a, ∂/∂b) of log(eᵃ + eᵇ): the softmax weights (eᵃ, eᵇ)/(eᵃ + eᵇ). Where
/// both arguments are infinite with the same sign the weights are split evenly; an argument
/// that is +∞ alone takes weight 1.
pub fn log_sum_exp2_partials(a: f64, b: f64) -> (f64, f64) {
    if a.is_infinite() && a == b {
        return (0.5, 0.5);
    }
    if a == f64::INFINITY {
        return (1.0, 0.0);
    }
    if b == f64::INFINITY {
        return (0.0, 1.0);
    }
    let wa = inv_logit(a - b);
    (wa, inv_logit(b - a))
}

/// Unary real functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum U {
    Neg,
    Exp,
    Log,
    Log1p,
    Expm1,
    Sqrt,
    Square,
    Abs,
    Inv,
    InvSqrt,
    InvSquare,
    InvLogit,
    Logit,
    Log1pExp,
    LogInvLogit,
    Log1mInvLogit,
    Log1m,
    Log1mExp,
    Lgamma,
    Digamma,
    Tanh,
    /// `relu(x) = max(x, 0)`; derivative 0 at x = 0 (a subgradient).
    Relu,
    Sinh,
    Cosh,
    Sin,
    Cos,
    Tan,
    Atan,
    Asin,
    Acos,
    Cbrt,
    Log2,
    Log10,
    Exp2,
    Erf,
    Erfc,
    Phi,
    InvCloglog,
    Floor,
    Ceil,
    Round,
    Trunc,
    Step,
}

impl U {
    /// The function's value and derivative at `x`.
    #[inline]
    pub fn eval(self, x: f64) -> (f64, f64) {
        match self {
            U::Neg => (-x, -1.0),
            U::Exp => {
                let e = x.exp();
                (e, e)
            }
            U::Log => (x.ln(), 1.0 / x),
            U::Log1p => (x.ln_1p(), 1.0 / (1.0 + x)),
            U::Expm1 => (x.exp_m1(), x.exp()),
            U::Sqrt => {
                let s = x.sqrt();
                (s, 0.5 / s)
            }
            U::Square => (x * x, 2.0 * x),
            U::Abs => (
                x.abs(),
                if x > 0.0 {
                    1.0
                } else if x < 0.0 {
                    -1.0
                } else {
                    0.0
                },
            ),
            U::Inv => (1.0 / x, -1.0 / (x * x)),
            U::InvSqrt => {
                let s = x.sqrt();
                (1.0 / s, -0.5 / (s * x))
            }
            U::InvSquare => (1.0 / (x * x), -2.0 / (x * x * x)),
            U::InvLogit => {
                // σ(x)σ(−x): does not round to 0 for x ≳ 37 as σ(x)(1 − σ(x)) does
                let s = inv_logit(x);
                (s, s * inv_logit(-x))
            }
            U::Logit => ((x / (1.0 - x)).ln(), 1.0 / (x * (1.0 - x))),
            U::Log1pExp => (log1p_exp(x), inv_logit(x)),
            U::LogInvLogit => (-log1p_exp(-x), inv_logit(-x)),
            U::Log1mInvLogit => (-log1p_exp(x), -inv_logit(x)),
            U::Log1m => ((-x).ln_1p(), -1.0 / (1.0 - x)),
            U::Log1mExp => {
                let d = if x == 0.0 {
                    f64::NEG_INFINITY
                } else {
                    -1.0 / (-x).exp_m1()
                };
                (log1m_exp(x), d)
            }
            U::Lgamma => (lgamma(x), statrs::function::gamma::digamma(x)),
            U::Digamma => {
                // trigamma by the recurrence ψ₁(x) = ψ₁(x + 1) + 1/x² and the asymptotic series.
                (statrs::function::gamma::digamma(x), trigamma(x))
            }
            U::Tanh => {
                let t = crate::distributions::lanes::tanh(x);
                (t, 1.0 - t * t)
            }
            U::Relu => {
                if x > 0.0 {
                    (x, 1.0)
                } else {
                    (0.0, 0.0)
                }
            }
            U::Sinh => (x.sinh(), x.cosh()),
            U::Cosh => (x.cosh(), x.sinh()),
            U::Sin => (x.sin(), x.cos()),
            U::Cos => (x.cos(), -x.sin()),
            U::Tan => {
                let t = x.tan();
                (t, 1.0 + t * t)
            }
            U::Atan => (x.atan(), 1.0 / (1.0 + x * x)),
            U::Asin => (x.asin(), 1.0 / (1.0 - x * x).sqrt()),
            U::Acos => (x.acos(), -1.0 / (1.0 - x * x).sqrt()),
            U::Cbrt => {
                let c = x.cbrt();
                (c, 1.0 / (3.0 * c * c))
            }
            U::Log2 => (x.log2(), 1.0 / (x * std::f64::consts::LN_2)),
            U::Log10 => (x.log10(), 1.0 / (x * std::f64::consts::LN_10)),
            U::Exp2 => {
                let e = x.exp2();
                (e, e * std::f64::consts::LN_2)
            }
            U::Erf => (
                libm::erf(x),
                2.0 * INV_SQRT_TWO_PI * std::f64::consts::SQRT_2 * (-x * x).exp(),
            ),
            U::Erfc => (
                libm::erfc(x),
                -2.0 * INV_SQRT_TWO_PI * std::f64::consts::SQRT_2 * (-x * x).exp(),
            ),
            U::Phi => (
                0.5 * libm::erfc(-x / std::f64::consts::SQRT_2),
                INV_SQRT_TWO_PI * (-0.5 * x * x).exp(),
            ),
            U::InvCloglog => {
                // derivative exp(x − eˣ), 0 (not ∞·0 = NaN) where eˣ overflows
                let e = x.exp();
                let d = if e.is_infinite() { 0.0 } else { (x - e).exp() };
                (-(-e).exp_m1(), d)
            }
            U::Floor => (x.floor(), 0.0),
            U::Ceil => (x.ceil(), 0.0),
            U::Round => (x.round(), 0.0),
            U::Trunc => (x.trunc(), 0.0),
            U::Step => (if x < 0.0 { 0.0 } else { 1.0 }, 0.0),
        }
    }
}

/// Trigamma ψ₁(x): recurrence up to x ≥ 10, then the asymptotic series
/// 1/x + 1/(2x²) + 1/(6x³) − 1/(30x⁵) + 1/(42x⁷) − 1/(30x⁹) + 5/(66x¹¹) (A&S 6.4.12; truncation
/// error below 691/(2730x¹³) ≤ 3·10⁻¹⁴); for x ≤ 0 the reflection
/// ψ₁(1 − x) + ψ₁(x) = π²/sin²(πx) (Abramowitz & Stegun 6.4.7). +∞ at the poles (0, −1, …),
/// NaN at −∞ and NaN, 0 at +∞.
pub fn trigamma(mut x: f64) -> f64 {
    if x.is_nan() || x == f64::NEG_INFINITY {
        return f64::NAN;
    }
    if x == f64::INFINITY {
        return 0.0;
    }
    if x <= 0.0 {
        if x == x.floor() {
            return f64::INFINITY;
        }
        let s = (std::f64::consts::PI * x).sin();
        return std::f64::consts::PI * std::f64::consts::PI / (s * s) - trigamma(1.0 - x);
    }
    let mut acc = 0.0;
    while x < 10.0 {
        acc += 1.0 / (x * x);
        x += 1.0;
    }
    let x2 = 1.0 / (x * x);
    acc + 1.0 / x
        + x2 / 2.0
        + x2 / x
            * (1.0 / 6.0
                - x2 * (1.0 / 30.0 - x2 * (1.0 / 42.0 - x2 * (1.0 / 30.0 - x2 * 5.0 / 66.0))))
}

/// Binary real functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum B {
    Add,
    Sub,
    Mul,
    Div,
    Pow,
    Fmin,
    Fmax,
    LogSumExp,
    LogDiffExp,
    Hypot,
    Fdim,
    Atan2,
    Lbeta,
    Lchoose,
}

impl B {
    /// (f(x, y), ∂f/∂x, ∂f/∂y).
    #[inline]
    pub fn eval(self, x: f64, y: f64) -> (f64, f64, f64) {
        use statrs::function::gamma::digamma;
        match self {
            B::Add => (x + y, 1.0, 1.0),
            B::Sub => (x - y, 1.0, -1.0),
            B::Mul => (x * y, y, x),
            // −(x/y)/y: −x/y² is 0/0 when y² underflows
            B::Div => (x / y, 1.0 / y, -(x / y) / y),
            B::Pow => {
                let p = x.powf(y);
                let dx = if y == 0.0 { 0.0 } else { y * x.powf(y - 1.0) };
                let dy = if x == 0.0 { 0.0 } else { p * x.ln() };
                (p, dx, dy)
            }
            B::Fmin => {
                if x <= y || y.is_nan() {
                    (x, 1.0, 0.0)
                } else {
                    (y, 0.0, 1.0)
                }
            }
            B::Fmax => {
                if x >= y || y.is_nan() {
                    (x, 1.0, 0.0)
                } else {
                    (y, 0.0, 1.0)
                }
            }
            B::LogSumExp => log_sum_exp2_partials(x, y).into_tuple(log_sum_exp2(x, y)),
            B::LogDiffExp => {
                // ∂/∂y = −1/(e^(x−y) − 1), ∂/∂x = 1 − ∂/∂y; 0 for y = −∞ (the value is x)
                let v = log_diff_exp(x, y);
                let dy = if y == f64::NEG_INFINITY {
                    0.0
                } else {
                    -1.0 / (x - y).exp_m1()
                };
                (v, 1.0 - dy, dy)
            }
            B::Hypot => {
                // the origin is a kink: partials 0 there (not 0/0)
                let h = x.hypot(y);
                if h == 0.0 {
                    (0.0, 0.0, 0.0)
                } else {
                    (h, x / h, y / h)
                }
            }
            B::Fdim => {
                if x > y {
                    (x - y, 1.0, -1.0)
                } else {
                    (0.0, 0.0, 0.0)
                }
            }
            B::Atan2 => {
                // the origin has no derivative: partials 0 there (not 0/0)
                let d = x * x + y * y;
                if d == 0.0 {
                    (x.atan2(y), 0.0, 0.0)
                } else {
                    (x.atan2(y), y / d, -x / d)
                }
            }
            B::Lbeta => {
                let v = lgamma(x) + lgamma(y) - lgamma(x + y);
                let dxy = digamma(x + y);
                (v, digamma(x) - dxy, digamma(y) - dxy)
            }
            B::Lchoose => {
                // log C(n, k) = lgamma(n+1) − lgamma(k+1) − lgamma(n−k+1)
                let v = lgamma(x + 1.0) - lgamma(y + 1.0) - lgamma(x - y + 1.0);
                let dn = digamma(x + 1.0) - digamma(x - y + 1.0);
                let dk = -digamma(y + 1.0) + digamma(x - y + 1.0);
                (v, dn, dk)
            }
        }
    }
}

trait IntoTuple {
    fn into_tuple(self, v: f64) -> (f64, f64, f64);
}
impl IntoTuple for (f64, f64) {
    fn into_tuple(self, v: f64) -> (f64, f64, f64) {
        (v, self.0, self.1)
    }
}
