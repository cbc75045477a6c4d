//! Log cumulative distribution functions (`_lcdf`, `_lccdf`) with partials, used by truncation
//! `T[L, U]` and by calls such as `normal_lcdf(y | mu, sigma)`.
//!
//! Only families whose CDF and its gradient in every argument are available in closed form are
//! offered: normal, lognormal, cauchy, logistic, double_exponential, exponential, weibull,
//! uniform, gumbel, frechet, pareto, pareto_type_2, exp_mod_normal, and beta_binomial (a finite
//! sum of its mass). Families whose CDF needs an incomplete gamma or beta function (gamma, inv_gamma,
//! beta, student_t, poisson, binomial, neg_binomial_2), Owen's T (skew_normal) or a Bessel series
//! (von_mises) are deliberately absent: their shape
//! gradients are not implemented, and a CDF with wrong gradients is worse than none.

use super::args::{self, Arg, DistError, Term};
use super::registry::Family;

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
    let sig = family.sig();
    let function = format!("{}_{}", sig.name, if complement { "lccdf" } else { "lcdf" });
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
        | Family::NegBinomial2
        | Family::SkewNormal
        | Family::VonMises => {
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
