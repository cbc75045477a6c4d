//! The table of distribution families and their signatures, read by semantics (to check
//! `~` statements and `_lpdf` calls) and by the graph (to dispatch).

/// The set of values a variate or parameter may take; used for argument checks and for the
/// semantic check "sampling statement on data with the wrong support".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Support {
    /// Any finite real.
    Real,
    /// Real > 0.
    Positive,
    /// Real ≥ 0.
    NonNegative,
    /// Real in (0, 1).
    UnitInterval,
    /// Integer ≥ 0.
    Count,
    /// Integer in {0, 1}.
    Binary,
    /// Any integer.
    Integer,
}

impl Support {
    /// True for the integer supports (`Count`, `Binary`, `Integer`): such arguments are data
    /// and never carry partial derivatives.
    pub fn is_integer(self) -> bool {
        matches!(self, Support::Count | Support::Binary | Support::Integer)
    }
}

/// One parameter of a family: its display name (Stan's wording) and its support.
#[derive(Clone, Copy, Debug)]
pub struct ParamSig {
    pub name: &'static str,
    pub support: Support,
}

/// The signature of a family.
#[derive(Clone, Copy, Debug)]
pub struct FamilySig {
    /// Name as used after `~` (e.g. `normal`).
    pub name: &'static str,
    /// Support of the variate.
    pub variate: Support,
    /// Parameters in call order.
    pub params: &'static [ParamSig],
    /// `true` for probability mass functions (`_lpmf`, integer variate).
    pub discrete: bool,
    pub family: Family,
}

/// Every family the language knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    Normal,
    StudentT,
    Cauchy,
    Exponential,
    Gamma,
    Bernoulli,
    BernoulliLogit,
    DoubleExponential,
    Logistic,
    Lognormal,
    InvGamma,
    Beta,
    Uniform,
    Weibull,
    Binomial,
    BinomialLogit,
    Poisson,
    PoissonLog,
    NegBinomial2,
    Gumbel,
    BetaBinomial,
    SkewNormal,
    Frechet,
    Pareto,
    ParetoType2,
    ExpModNormal,
    VonMises,
}

const fn p(name: &'static str, support: Support) -> ParamSig {
    ParamSig { name, support }
}

const fn continuous(
    name: &'static str,
    variate: Support,
    params: &'static [ParamSig],
    family: Family,
) -> FamilySig {
    FamilySig {
        name,
        variate,
        params,
        discrete: false,
        family,
    }
}

const fn discrete(
    name: &'static str,
    variate: Support,
    params: &'static [ParamSig],
    family: Family,
) -> FamilySig {
    FamilySig {
        name,
        variate,
        params,
        discrete: true,
        family,
    }
}

const LOCATION: ParamSig = p("Location parameter", Support::Real);
const SCALE: ParamSig = p("Scale parameter", Support::Positive);

/// The registry, one row per family. Parameter names are Stan Math's (the names its argument
/// checks print); supports are those of the Stan Functions Reference. Probability parameters are
/// listed as [`Support::UnitInterval`] but accept the closed interval [0, 1] at run time, as Stan.
pub static FAMILIES: &[FamilySig] = &[
    continuous("normal", Support::Real, &[LOCATION, SCALE], Family::Normal),
    continuous(
        "student_t",
        Support::Real,
        &[
            p("Degrees of freedom parameter", Support::Positive),
            LOCATION,
            SCALE,
        ],
        Family::StudentT,
    ),
    continuous("cauchy", Support::Real, &[LOCATION, SCALE], Family::Cauchy),
    continuous(
        "exponential",
        Support::NonNegative,
        &[p("Inverse scale parameter", Support::Positive)],
        Family::Exponential,
    ),
    continuous(
        "gamma",
        Support::Positive,
        &[
            p("Shape parameter", Support::Positive),
            p("Inverse scale parameter", Support::Positive),
        ],
        Family::Gamma,
    ),
    discrete(
        "bernoulli",
        Support::Binary,
        &[p("Probability parameter", Support::UnitInterval)],
        Family::Bernoulli,
    ),
    discrete(
        "bernoulli_logit",
        Support::Binary,
        &[p("Logit transformed probability parameter", Support::Real)],
        Family::BernoulliLogit,
    ),
    continuous(
        "double_exponential",
        Support::Real,
        &[LOCATION, SCALE],
        Family::DoubleExponential,
    ),
    continuous(
        "logistic",
        Support::Real,
        &[LOCATION, SCALE],
        Family::Logistic,
    ),
    continuous(
        "lognormal",
        Support::Positive,
        &[LOCATION, SCALE],
        Family::Lognormal,
    ),
    continuous(
        "inv_gamma",
        Support::Positive,
        &[p("Shape parameter", Support::Positive), SCALE],
        Family::InvGamma,
    ),
    continuous(
        "beta",
        Support::UnitInterval,
        &[
            p("First shape parameter", Support::Positive),
            p("Second shape parameter", Support::Positive),
        ],
        Family::Beta,
    ),
    continuous(
        "uniform",
        Support::Real,
        &[
            p("Lower bound parameter", Support::Real),
            p("Upper bound parameter", Support::Real),
        ],
        Family::Uniform,
    ),
    continuous(
        "weibull",
        Support::NonNegative,
        &[p("Shape parameter", Support::Positive), SCALE],
        Family::Weibull,
    ),
    discrete(
        "binomial",
        Support::Count,
        &[
            p("Population size parameter", Support::Count),
            p("Probability parameter", Support::UnitInterval),
        ],
        Family::Binomial,
    ),
    discrete(
        "binomial_logit",
        Support::Count,
        &[
            p("Population size parameter", Support::Count),
            p("Probability parameter", Support::Real),
        ],
        Family::BinomialLogit,
    ),
    discrete(
        "poisson",
        Support::Count,
        &[p("Rate parameter", Support::NonNegative)],
        Family::Poisson,
    ),
    discrete(
        "poisson_log",
        Support::Count,
        &[p("Log rate parameter", Support::Real)],
        Family::PoissonLog,
    ),
    discrete(
        "neg_binomial_2",
        Support::Count,
        &[
            p("Location parameter", Support::Positive),
            p("Precision parameter", Support::Positive),
        ],
        Family::NegBinomial2,
    ),
    continuous("gumbel", Support::Real, &[LOCATION, SCALE], Family::Gumbel),
    discrete(
        "beta_binomial",
        Support::Count,
        &[
            p("Population size parameter", Support::Count),
            p("First prior sample size parameter", Support::Positive),
            p("Second prior sample size parameter", Support::Positive),
        ],
        Family::BetaBinomial,
    ),
    continuous(
        "skew_normal",
        Support::Real,
        &[LOCATION, SCALE, p("Shape parameter", Support::Real)],
        Family::SkewNormal,
    ),
    continuous(
        "frechet",
        Support::Positive,
        &[p("Shape parameter", Support::Positive), SCALE],
        Family::Frechet,
    ),
    continuous(
        "pareto",
        Support::Positive,
        &[SCALE, p("Shape parameter", Support::Positive)],
        Family::Pareto,
    ),
    continuous(
        "pareto_type_2",
        Support::Real,
        &[LOCATION, SCALE, p("Shape parameter", Support::Positive)],
        Family::ParetoType2,
    ),
    continuous(
        "exp_mod_normal",
        Support::Real,
        &[LOCATION, SCALE, p("Inv_scale parameter", Support::Positive)],
        Family::ExpModNormal,
    ),
    continuous(
        "von_mises",
        Support::Real,
        &[LOCATION, p("Scale parameter", Support::NonNegative)],
        Family::VonMises,
    ),
];

impl Family {
    /// This family's row of [`FAMILIES`].
    pub fn sig(self) -> &'static FamilySig {
        FAMILIES
            .iter()
            .find(|s| s.family == self)
            .expect("every Family has a row in FAMILIES")
    }
}

/// Which function of a family a call names: `foo_lpdf`/`foo_lpmf` (the density), `foo_cdf`,
/// `foo_lcdf`, `foo_lccdf` or `foo_rng`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FunctionKind {
    /// `_lpdf` for a continuous family, `_lpmf` for a discrete one (normalised: `propto = false`).
    LogDensity,
    /// `_lupdf` / `_lupmf`: the density without constant terms (`propto = true`, as `~`).
    UnnormalisedLogDensity,
    /// `_lcdf`: log P(Y ≤ y).
    LogCdf,
    /// `_lccdf`: log P(Y > y).
    LogCcdf,
    /// `_cdf`: P(Y ≤ y) (the product over container elements, as Stan).
    Cdf,
    /// `_rng`: one draw, for generated quantities.
    Rng,
}

/// Resolves a function name such as `normal_lpdf`, `normal_lupdf`, `poisson_lpmf`,
/// `exponential_lccdf`, `normal_cdf` or `gamma_rng` to its family and kind. `None` for unknown
/// names, for `_lpdf` on a discrete family or `_lpmf` on a continuous one (Stan rejects both),
/// and for `_cdf`/`_lcdf`/`_lccdf` on a family without a log CDF (see
/// [`super::cdf::has_log_cdf`]).
pub fn lookup_function(name: &str) -> Option<(&'static FamilySig, FunctionKind)> {
    let (base, suffix) = name.rsplit_once('_')?;
    let sig = lookup(base)?;
    let kind = match suffix {
        "lpdf" if !sig.discrete => FunctionKind::LogDensity,
        "lpmf" if sig.discrete => FunctionKind::LogDensity,
        "lupdf" if !sig.discrete => FunctionKind::UnnormalisedLogDensity,
        "lupmf" if sig.discrete => FunctionKind::UnnormalisedLogDensity,
        "lcdf" if super::cdf::has_log_cdf(sig.family) => FunctionKind::LogCdf,
        "lccdf" if super::cdf::has_log_cdf(sig.family) => FunctionKind::LogCcdf,
        "cdf" if super::cdf::has_log_cdf(sig.family) => FunctionKind::Cdf,
        "rng" => FunctionKind::Rng,
        _ => return None,
    };
    Some((sig, kind))
}

/// The family called `name` (as written after `~`, without `_lpdf`/`_lpmf`).
pub fn lookup(name: &str) -> Option<&'static FamilySig> {
    FAMILIES.iter().find(|s| s.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_has_exactly_one_row_and_resolves_by_name() {
        for row in FAMILIES {
            assert_eq!(
                FAMILIES.iter().filter(|r| r.family == row.family).count(),
                1
            );
            assert_eq!(lookup(row.name).map(|r| r.family), Some(row.family));
            assert_eq!(row.discrete, row.variate.is_integer(), "{}", row.name);
        }
        assert_eq!(FAMILIES.len(), 27);
    }

    #[test]
    fn function_names_resolve_with_their_kind() {
        let kind = |n: &str| lookup_function(n).map(|(s, k)| (s.family, k));
        assert_eq!(
            kind("normal_lpdf"),
            Some((Family::Normal, FunctionKind::LogDensity))
        );
        assert_eq!(
            kind("neg_binomial_2_lpmf"),
            Some((Family::NegBinomial2, FunctionKind::LogDensity))
        );
        assert_eq!(
            kind("bernoulli_logit_rng"),
            Some((Family::BernoulliLogit, FunctionKind::Rng))
        );
        assert_eq!(
            kind("exponential_lccdf"),
            Some((Family::Exponential, FunctionKind::LogCcdf))
        );
        assert_eq!(
            kind("poisson_lupmf"),
            Some((Family::Poisson, FunctionKind::UnnormalisedLogDensity))
        );
        assert_eq!(kind("poisson_lpdf"), None);
        assert_eq!(kind("beta_lupmf"), None);
        assert_eq!(kind("normal_lpmf"), None);
        assert_eq!(kind("gamma_lcdf"), None);
        assert_eq!(
            kind("normal_cdf"),
            Some((Family::Normal, FunctionKind::Cdf))
        );
        assert_eq!(kind("gamma_cdf"), None);
        assert_eq!(kind("normal"), None);
        assert_eq!(kind("nromal_lpdf"), None);
    }
}
