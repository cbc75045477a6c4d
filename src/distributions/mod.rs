//! Probability distributions as pure math: vectorised log densities with their partial
//! derivatives, argument checks and random number generators.
//!
//! This module is a leaf (like Stan Math's `prim`): it knows nothing of the language or the
//! graph. The graph calls [`log_density`] once per `~` statement or `_lpdf` call, with every
//! argument already evaluated, and gets back the summed value and the partials it needs.
//! One file per family; [`registry`] holds the signature table read by semantics.
//!
//! Families (Stan's parameterisations; variate first):
//! - continuous: `normal(μ, σ)`, `student_t(ν, μ, σ)`, `cauchy(μ, σ)`,
//!   `double_exponential(μ, σ)`, `logistic(μ, σ)`, `lognormal(μ, σ)`, `exponential(β = rate)`,
//!   `gamma(α = shape, β = rate)`, `inv_gamma(α = shape, β = scale)`, `beta(a, b)`,
//!   `uniform(α, β)`, `weibull(α = shape, σ = scale)`;
//! - discrete: `bernoulli(θ)`, `bernoulli_logit(α)`, `binomial(N, θ)`, `binomial_logit(N, α)`,
//!   `poisson(λ)`, `poisson_log(α)`, `neg_binomial_2(μ, φ)`, `beta_binomial(N, α, β)`;
//! - more continuous: `gumbel(μ, β)`, `skew_normal(ξ, ω, α)`, `frechet(α, σ)`,
//!   `pareto(y_min, α)`, `pareto_type_2(μ, λ, α)`, `exp_mod_normal(μ, σ, λ)`, `von_mises(μ, κ)`.
//!
//! - multivariate and categorical (own table and entry points, in [`multivariate`]):
//!   `multi_normal`, `multi_normal_cholesky`, `lkj_corr_cholesky`, `dirichlet`, `categorical`,
//!   `categorical_logit`, `ordered_logistic`.
//!
//! Entry points: [`log_density`] (value + partials, `propto` as Stan's `~`), [`log_cdf`]
//! (`_lcdf`/`_lccdf` for the families listed in [`cdf`]), [`cdf_function`] (those two and `_cdf`),
//! [`rng`] (`_rng`). Argument errors are
//! [`DistError`]s worded as Stan Math's checks ("normal_lpdf: Scale parameter[3] is -0.2, but
//! must be positive finite").

pub mod args;
pub mod bernoulli;
pub mod bernoulli_logit;
pub mod beta;
pub mod beta_binomial;
pub mod binomial;
pub mod binomial_logit;
pub mod cauchy;
pub mod cdf;
pub mod double_exponential;
pub mod exp_mod_normal;
pub mod exponential;
pub mod frechet;
pub mod gamma;
pub mod gumbel;
pub mod inv_gamma;
pub mod lanes;
pub mod logistic;
pub mod lognormal;
pub mod multivariate;
pub mod neg_binomial_2;
pub mod normal;
pub mod outcome;
pub mod pareto;
pub mod pareto_type_2;
pub mod poisson;
pub mod poisson_log;
pub mod quadrature;
pub mod registry;
pub mod skew_normal;
pub mod special;
pub mod student_t;
pub mod uniform;
pub mod von_mises;
pub mod weibull;

#[cfg(test)]
mod tests;

pub use args::{Arg, DistError, Term};
pub use cdf::{CdfKind, cdf_function, has_log_cdf, log_cdf};
pub use registry::{Family, FamilySig, FunctionKind, Support, lookup, lookup_function};

/// The log density (or log mass) of `family`, summed over the broadcast elements.
///
/// `args[0]` is the variate, the rest are the family's parameters in the order of
/// [`FamilySig::params`]. Vector arguments must share one length N; scalars broadcast. `is_var[k]`
/// says whether argument k depends on parameters: only those get partials, and with
/// `propto = true` (the `~` statement) every term that depends on no `is_var` argument is dropped,
/// exactly as Stan does. With `propto = false` (`target += foo_lpdf(…)`) the full normalised log
/// density is returned.
///
/// Errors: a [`DistError`] naming the function, argument, element index and value when an
/// argument is outside its support (e.g. a negative scale), when vector lengths disagree, or when
/// an integer argument (the variate of a discrete family, binomial's number of trials) is marked
/// `is_var`.
pub fn log_density(
    family: Family,
    args: &[Arg],
    is_var: &[bool],
    propto: bool,
) -> Result<Term, DistError> {
    log_density_checked(family, args, is_var, propto, false)
}

/// As [`log_density`], with `variate_checked = true` when the caller has already checked the
/// variate against [`variate_support`] (a data outcome checked once when the model was built,
/// issue 16 "data checks once"): the per-element support check of `args[0]` is then skipped.
/// Parameters are always checked.
///
/// Errors: those of [`log_density`].
pub fn log_density_checked(
    family: Family,
    args: &[Arg],
    is_var: &[bool],
    propto: bool,
    variate_checked: bool,
) -> Result<Term, DistError> {
    let sig = family.sig();
    args::check_arity(sig, args, is_var)?;
    let n = args::broadcast_len(sig, args)?;
    check_integer_args_are_data(sig, is_var)?;
    if !variate_checked {
        check_variate(family, &args[0])?;
    }
    match family {
        Family::Normal => normal::lpdf(args, is_var, propto, n),
        Family::StudentT => student_t::lpdf(args, is_var, propto, n),
        Family::Cauchy => cauchy::lpdf(args, is_var, propto, n),
        Family::Exponential => exponential::lpdf(args, is_var, propto, n),
        Family::Gamma => gamma::lpdf(args, is_var, propto, n),
        Family::Bernoulli => bernoulli::lpmf(args, is_var, propto, n),
        Family::BernoulliLogit => bernoulli_logit::lpmf(args, is_var, propto, n),
        Family::DoubleExponential => double_exponential::lpdf(args, is_var, propto, n),
        Family::Logistic => logistic::lpdf(args, is_var, propto, n),
        Family::Lognormal => lognormal::lpdf(args, is_var, propto, n),
        Family::InvGamma => inv_gamma::lpdf(args, is_var, propto, n),
        Family::Beta => beta::lpdf(args, is_var, propto, n),
        Family::Uniform => uniform::lpdf(args, is_var, propto, n),
        Family::Weibull => weibull::lpdf(args, is_var, propto, n),
        Family::Binomial => binomial::lpmf(args, is_var, propto, n),
        Family::BinomialLogit => binomial_logit::lpmf(args, is_var, propto, n),
        Family::Poisson => poisson::lpmf(args, is_var, propto, n),
        Family::PoissonLog => poisson_log::lpmf(args, is_var, propto, n),
        Family::NegBinomial2 => neg_binomial_2::lpmf(args, is_var, propto, n),
        Family::Gumbel => gumbel::lpdf(args, is_var, propto, n),
        Family::BetaBinomial => beta_binomial::lpmf(args, is_var, propto, n),
        Family::SkewNormal => skew_normal::lpdf(args, is_var, propto, n),
        Family::Frechet => frechet::lpdf(args, is_var, propto, n),
        Family::Pareto => pareto::lpdf(args, is_var, propto, n),
        Family::ParetoType2 => pareto_type_2::lpdf(args, is_var, propto, n),
        Family::ExpModNormal => exp_mod_normal::lpdf(args, is_var, propto, n),
        Family::VonMises => von_mises::lpdf(args, is_var, propto, n),
    }
}

/// The support of `family`'s variate as Stan Math checks it in `*_lpdf`/`*_lpmf`: the
/// requirement phrase and the elementwise test (e.g. bernoulli: "0 or 1"; poisson: "a nonnegative
/// integer"; normal: "not nan"). `None` for the binomial families, whose bound on the successes
/// depends on the number of trials (they check it themselves).
pub fn variate_support(family: Family) -> Option<(&'static str, fn(f64) -> bool)> {
    use args::requirement::*;
    use args::{binary, count, nonnegative, probability};
    fn not_nan(x: f64) -> bool {
        !x.is_nan()
    }
    Some(match family {
        Family::Normal
        | Family::StudentT
        | Family::Cauchy
        | Family::Gumbel
        | Family::Uniform
        | Family::SkewNormal
        | Family::ExpModNormal
        | Family::Pareto => (NOT_NAN, not_nan),
        Family::VonMises => (FINITE, f64::is_finite),
        Family::Frechet => ("positive", |x: f64| x > 0.0),
        Family::DoubleExponential | Family::Logistic => (FINITE, f64::is_finite),
        Family::Exponential
        | Family::Gamma
        | Family::InvGamma
        | Family::Lognormal
        | Family::Weibull => (NONNEGATIVE, nonnegative),
        Family::Beta => (PROBABILITY, probability),
        Family::Bernoulli | Family::BernoulliLogit => (BINARY, binary),
        Family::Poisson | Family::PoissonLog | Family::NegBinomial2 => (COUNT, count),
        Family::BetaBinomial => (COUNT, count),
        Family::Binomial | Family::BinomialLogit | Family::ParetoType2 => return None,
    })
}

/// The first observed element of `values` outside `family`'s support, with the support's
/// requirement phrase: `(index, requirement)`. NaN (an unobserved value) is skipped; `None`
/// when every element is inside, or the family has no elementwise support
/// ([`variate_support`]). Used to check data outcomes once, at binding or model build.
pub fn outside_support(family: Family, values: &[f64]) -> Option<(usize, &'static str)> {
    let (requirement, ok) = variate_support(family)?;
    values
        .iter()
        .position(|&x| !x.is_nan() && !ok(x))
        .map(|i| (i, requirement))
}

/// Checks every element of the variate `y` against [`variate_support`]`(family)`.
///
/// Errors: a [`DistError`] naming the function and the first element outside the support
/// (1-based, e.g. "bernoulli_logit_lpmf: Random variable[3] is 2, but must be 0 or 1").
pub fn check_variate(family: Family, y: &Arg) -> Result<(), DistError> {
    match variate_support(family) {
        Some((requirement, ok)) => {
            args::check_each(family.sig(), std::slice::from_ref(y), 0, requirement, ok)
        }
        None => Ok(()),
    }
}

/// One random draw from `family` given scalar parameters (in [`FamilySig::params`] order), for
/// the `_rng` functions of generated quantities. Integer-valued families return an f64 holding an
/// exact integer.
///
/// Errors: parameters outside their support, reported under `<name>_rng` with the density's
/// wording (e.g. "normal_rng: Scale parameter is 0, but must be positive finite"); a Poisson
/// rate ≥ 2³⁰; the wrong number of parameters.
pub fn rng<R: rand::Rng + ?Sized>(
    family: Family,
    params: &[f64],
    rng: &mut R,
) -> Result<f64, DistError> {
    let sig = family.sig();
    let function = format!("{}_rng", sig.name);
    if params.len() != sig.params.len() {
        return Err(DistError {
            function,
            message: format!(
                "expects {} parameters, got {}",
                sig.params.len(),
                params.len()
            ),
        });
    }
    let args: Vec<Arg> = std::iter::once(0.0)
        .chain(params.iter().copied())
        .map(Arg::Scalar)
        .collect();
    let checked = match family {
        Family::Normal => normal::check_params(&args),
        Family::StudentT => student_t::check_params(&args),
        Family::Cauchy => cauchy::check_params(&args),
        Family::Exponential => exponential::check_params(&args),
        Family::Gamma => gamma::check_params(&args),
        Family::Bernoulli => bernoulli::check_params(&args),
        Family::BernoulliLogit => bernoulli_logit::check_params(&args),
        Family::DoubleExponential => double_exponential::check_params(&args),
        Family::Logistic => logistic::check_params(&args),
        Family::Lognormal => lognormal::check_params(&args),
        Family::InvGamma => inv_gamma::check_params(&args),
        Family::Beta => beta::check_params(&args),
        Family::Uniform => uniform::check_params(&args),
        Family::Weibull => weibull::check_params(&args),
        Family::Binomial => binomial::check_params(&args),
        Family::BinomialLogit => binomial_logit::check_params(&args),
        Family::Poisson => poisson::check_params(&args),
        Family::PoissonLog => poisson_log::check_params(&args),
        Family::NegBinomial2 => neg_binomial_2::check_params(&args),
        Family::Gumbel => gumbel::check_params(&args),
        Family::BetaBinomial => beta_binomial::check_params(&args),
        Family::SkewNormal => skew_normal::check_params(&args),
        Family::Frechet => frechet::check_params(&args),
        Family::Pareto => pareto::check_params(&args),
        Family::ParetoType2 => pareto_type_2::check_params(&args),
        Family::ExpModNormal => exp_mod_normal::check_params(&args),
        Family::VonMises => von_mises::check_params(&args),
    };
    checked.map_err(|e| DistError {
        function,
        message: e.message,
    })?;
    let p = params;
    Ok(match family {
        Family::Normal => normal::rng(p, rng),
        Family::StudentT => student_t::rng(p, rng),
        Family::Cauchy => cauchy::rng(p, rng),
        Family::Exponential => exponential::rng(p, rng),
        Family::Gamma => gamma::rng(p, rng),
        Family::Bernoulli => bernoulli::rng(p, rng),
        Family::BernoulliLogit => bernoulli_logit::rng(p, rng),
        Family::DoubleExponential => double_exponential::rng(p, rng),
        Family::Logistic => logistic::rng(p, rng),
        Family::Lognormal => lognormal::rng(p, rng),
        Family::InvGamma => inv_gamma::rng(p, rng),
        Family::Beta => beta::rng(p, rng),
        Family::Uniform => uniform::rng(p, rng),
        Family::Weibull => weibull::rng(p, rng),
        Family::Binomial => binomial::rng(p, rng),
        Family::BinomialLogit => binomial_logit::rng(p, rng),
        Family::Poisson => poisson::rng(p, rng)?,
        Family::PoissonLog => poisson_log::rng(p, rng)?,
        Family::NegBinomial2 => neg_binomial_2::rng(p, rng)?,
        Family::Gumbel => gumbel::rng(p, rng),
        Family::BetaBinomial => beta_binomial::rng(p, rng),
        Family::SkewNormal => skew_normal::rng(p, rng),
        Family::Frechet => frechet::rng(p, rng),
        Family::Pareto => pareto::rng(p, rng),
        Family::ParetoType2 => pareto_type_2::rng(p, rng),
        Family::ExpModNormal => exp_mod_normal::rng(p, rng),
        Family::VonMises => von_mises::rng(p, rng),
    })
}

/// Integer arguments have no derivative: reject `is_var` on them.
fn check_integer_args_are_data(sig: &FamilySig, is_var: &[bool]) -> Result<(), DistError> {
    let supports = std::iter::once(sig.variate).chain(sig.params.iter().map(|p| p.support));
    for (k, (support, &var)) in supports.zip(is_var).enumerate() {
        if var && support.is_integer() {
            return Err(DistError {
                function: args::function_name(sig),
                message: format!(
                    "{} is an integer and cannot depend on parameters",
                    args::arg_name(sig, k)
                ),
            });
        }
    }
    Ok(())
}
