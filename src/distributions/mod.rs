//! Probability distributions as pure math: vectorised log densities with their partial
//! derivatives, argument checks and random number generators.
//!
//! This module is a leaf (like Stan Math's `prim`): it knows nothing of the language or the
//! graph. The graph calls [`log_density`] once per `~` statement or `_lpdf` call, with every
//! argument already evaluated, and gets back the summed value and the partials it needs.

pub mod args;
pub mod normal;
pub mod registry;

pub use args::{Arg, DistError, Term};
pub use registry::{Family, FamilySig, Support, lookup};

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
/// argument is outside its support (e.g. a negative scale), or when vector lengths disagree.
pub fn log_density(
    family: Family,
    args: &[Arg],
    is_var: &[bool],
    propto: bool,
) -> Result<Term, DistError> {
    let sig = family.sig();
    args::check_arity(sig, args, is_var)?;
    let n = args::broadcast_len(sig, args)?;
    match family {
        Family::Normal => normal::lpdf(args, is_var, propto, n),
    }
}
