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
}

const fn p(name: &'static str, support: Support) -> ParamSig {
    ParamSig { name, support }
}

/// The registry, one row per family.
pub static FAMILIES: &[FamilySig] = &[FamilySig {
    name: "normal",
    variate: Support::Real,
    params: &[
        p("Location parameter", Support::Real),
        p("Scale parameter", Support::Positive),
    ],
    discrete: false,
    family: Family::Normal,
}];

impl Family {
    /// This family's row of [`FAMILIES`].
    pub fn sig(self) -> &'static FamilySig {
        FAMILIES
            .iter()
            .find(|s| s.family == self)
            .expect("every Family has a row in FAMILIES")
    }
}

/// The family called `name` (as written after `~`, without `_lpdf`/`_lpmf`).
pub fn lookup(name: &str) -> Option<&'static FamilySig> {
    FAMILIES.iter().find(|s| s.name == name)
}
