//! Cumulative distribution functions with partials: `_lcdf`, `_lccdf` and `_cdf`, used by
//! truncation `T[L, U]` and by calls such as `normal_lcdf(y | mu, sigma)` or
//! `normal_cdf(y | mu, sigma)`.
//!
//! Each family implements only its log CDF and log CCDF ([`log_cdf`]); the plain CDF (`_cdf`) is
//! derived from the log CDF once, here, for every family ([`cdf_function`] with
//! [`CdfKind::Cdf`]), so the registry, `check`, the graph and `docs/functions.md` see the three
//! functions of a family together through [`has_log_cdf`] and [`CdfKind::ALL`].
//!
//! Only families whose CDF and its gradient in every argument are available are offered: normal,
//! lognormal, cauchy, logistic, double_exponential, exponential, weibull, uniform, gumbel,
//! frechet, pareto, pareto_type_2, exp_mod_normal, beta_binomial (a finite sum of its mass),
//! skew_normal (Owen's T, [`super::special::owens_t`]) and von_mises (a Fourier–Bessel series,
//! [`super::von_mises`]). Families whose CDF needs an incomplete gamma or beta function (gamma,
//! inv_gamma, beta, student_t, poisson, binomial, neg_binomial_2) are deliberately absent: their
//! shape gradients are not implemented, and a CDF with wrong gradients is worse than none.

use super::args::{self, Arg, DistError, Term};
use super::registry::Family;

/// Which cumulative function of a family a call names (Stan Functions Reference, "Cumulative
/// distribution functions"): the suffix after the family name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CdfKind {
    /// `_cdf`: P(Y ≤ y). With container arguments Stan's `_cdf` returns the *product* of the
    /// elementwise CDFs (the probability that every element is at most its bound).
    Cdf,
    /// `_lcdf`: log P(Y ≤ y), summed over elements.
    Lcdf,
    /// `_lccdf`: log P(Y > y), summed over elements.
    Lccdf,
}

impl CdfKind {
    /// The three kinds in the order the reference lists them.
    pub const ALL: [CdfKind; 3] = [CdfKind::Cdf, CdfKind::Lcdf, CdfKind::Lccdf];

    /// The suffix without its underscore: `cdf`, `lcdf` or `lccdf`.
    pub fn suffix(self) -> &'static str {
        match self {
            CdfKind::Cdf => "cdf",
            CdfKind::Lcdf => "lcdf",
            CdfKind::Lccdf => "lccdf",
        }
    }

    /// The kind whose [`CdfKind::suffix`] is `suffix` (given without its underscore).
    pub fn from_suffix(suffix: &str) -> Option<CdfKind> {
        CdfKind::ALL.into_iter().find(|k| k.suffix() == suffix)
    }

    /// The function name `<family>_<suffix>`, e.g. `normal_cdf`.
    pub fn function_name(self, family: &str) -> String {
        format!("{family}_{}", self.suffix())
    }
}

/// The cumulative function `kind` of `family` (value and partials, layout as
/// [`super::log_density`]): [`log_cdf`] for `_lcdf`/`_lccdf`; for `_cdf`,
/// F = exp(Σᵢ log Fᵢ) = Πᵢ Fᵢ with ∂F/∂θ = F · ∂(Σ log Fᵢ)/∂θ (Stan's `_cdf` multiplies over
/// container elements). Where F is 0 the partials are 0.
///
/// Errors: those of [`log_cdf`], reported under the name of `kind` (e.g. `normal_cdf: Scale
/// parameter is 0, but must be positive finite`).
pub fn cdf_function(
    family: Family,
    args: &[Arg],
    is_var: &[bool],
    kind: CdfKind,
) -> Result<Term, DistError> {
    let name = kind.function_name(family.sig().name);
    let mut term = log_cdf_named(family, args, is_var, kind == CdfKind::Lccdf, name)?;
    if kind == CdfKind::Cdf {
        let value = term.value.exp();
        term.value = value;
        for d in term.partials.iter_mut().flatten() {
            *d = if value == 0.0 { 0.0 } else { *d * value };
        }
    }
    Ok(term)
}

/// The log CDF (`complement = false`, log P(Y ≤ y)) or log complementary CDF (`complement =
/// true`, log P(Y > y)) of `family`, summed over the broadcast elements, with partials for each
/// `is_var` argument (same layout as [`super::log_density`]). There is no `propto` form.
///
/// Errors: argument checks as for the density, reported under `<name>_lcdf` / `<name>_lccdf`;
/// "not available" for families without a CDF here.
pub fn log_cdf(
    family: Family,
    args: &[Arg],
    is_var: &[bool],
    complement: bool,
) -> Result<Term, DistError> {
    let kind = if complement {
        CdfKind::Lccdf
    } else {
        CdfKind::Lcdf
    };
    log_cdf_named(
        family,
        args,
        is_var,
        complement,
        kind.function_name(family.sig().name),
    )
}

/// [`log_cdf`] with errors reported under `function`.
fn log_cdf_named(
    family: Family,
    args: &[Arg],
    is_var: &[bool],
    complement: bool,
    function: String,
) -> Result<Term, DistError> {
    let sig = family.sig();
    let rename = |e: DistError| DistError {
        function: function.clone(),
        message: e.message,
    };
    args::check_arity(sig, args, is_var).map_err(rename)?;
    let n = args::broadcast_len(sig, args).map_err(rename)?;
    let result = match family {
        Family::Normal => super::normal::lcdf(args, is_var, complement, n),
        Family::Lognormal => super::lognormal::lcdf(args, is_var, complement, n),
        Family::Cauchy => super::cauchy::lcdf(args, is_var, complement, n),
        Family::Logistic => super::logistic::lcdf(args, is_var, complement, n),
        Family::DoubleExponential => super::double_exponential::lcdf(args, is_var, complement, n),
        Family::Exponential => super::exponential::lcdf(args, is_var, complement, n),
        Family::Weibull => super::weibull::lcdf(args, is_var, complement, n),
        Family::Uniform => super::uniform::lcdf(args, is_var, complement, n),
        Family::Gumbel => super::gumbel::lcdf(args, is_var, complement, n),
        Family::Frechet => super::frechet::lcdf(args, is_var, complement, n),
        Family::Pareto => super::pareto::lcdf(args, is_var, complement, n),
        Family::ParetoType2 => super::pareto_type_2::lcdf(args, is_var, complement, n),
        Family::ExpModNormal => super::exp_mod_normal::lcdf(args, is_var, complement, n),
        Family::BetaBinomial => super::beta_binomial::lcdf(args, is_var, complement, n),
        Family::SkewNormal => super::skew_normal::lcdf(args, is_var, complement, n),
        Family::VonMises => super::von_mises::lcdf(args, is_var, complement, n),
        Family::StudentT
        | Family::Gamma
        | Family::InvGamma
        | Family::Beta
        | Family::Bernoulli
        | Family::BernoulliLogit
        | Family::Binomial
        | Family::BinomialLogit
        | Family::Poisson
        | Family::PoissonLog
        | Family::NegBinomial2 => {
            return Err(DistError {
                function,
                message: "not available (no log CDF with gradients is implemented for this family)"
                    .to_string(),
            });
        }
    };
    result.map_err(rename)
}

/// Whether [`log_cdf`] supports `family` (for truncation checks in semantics).
pub fn has_log_cdf(family: Family) -> bool {
    matches!(
        family,
        Family::Normal
            | Family::Lognormal
            | Family::Cauchy
            | Family::Logistic
            | Family::DoubleExponential
            | Family::Exponential
            | Family::Weibull
            | Family::Uniform
            | Family::Gumbel
            | Family::Frechet
            | Family::Pareto
            | Family::ParetoType2
            | Family::ExpModNormal
            | Family::BetaBinomial
            | Family::SkewNormal
            | Family::VonMises
    )
}

/// Chain rule for a symmetric location-scale family with args (y, μ, σ) and z = (y − μ)/σ.
///
/// `std_lcdf(z)` returns (log F(z), d/dz log F(z)) of the standard member; symmetry gives the
/// complement as log(1 − F(z)) = log F(−z). Then ∂/∂y = g/σ, ∂/∂μ = −g/σ, ∂/∂σ = −g z/σ. Where
/// the value is −∞ or 0 at an infinite z the partials are set to 0.
pub fn location_scale(
    args: &[Arg],
    is_var: &[bool],
    complement: bool,
    n: usize,
    std_lcdf: impl Fn(f64) -> (f64, f64),
) -> Term {
    let (y, mu, sigma) = (args[0], args[1], args[2]);
    let mut term = Term::zeros(args, is_var);
    let mut value = 0.0;
    for i in 0..n {
        let inv_s = 1.0 / sigma.at(i);
        let z = (y.at(i) - mu.at(i)) * inv_s;
        let (v, g) = if complement {
            let (v, g) = std_lcdf(-z);
            (v, -g)
        } else {
            std_lcdf(z)
        };
        value += v;
        if v.is_finite() && z.is_finite() {
            term.add_partial(0, i, g * inv_s);
            term.add_partial(1, i, -g * inv_s);
            term.add_partial(2, i, -g * z * inv_s);
        }
    }
    term.value = value;
    term
}
