//! Generated quantities that fail at some draws: the constrained row of a draw with NaN for
//! the quantities that could not be computed ([`crate::graph::Model::write_outputs`]), the
//! count of such draws per quantity over a fit, and the warning that reports them.

use crate::graph::{GqFailure, Model};
use crate::inference::DensityError;
use crate::inference::rng::StreamRng;

/// The constrained row of `z` (parameters, transformed parameters, generated quantities, in
/// [`super::draw_names`] order) with generated quantities from `rng`. A generated quantity
/// that cannot be computed at this draw (an `_rng` argument outside its support, a domain
/// error, an index out of range), or that is computed from one that cannot, holds NaN; the
/// others keep their values, and what failed is returned beside the row, so that one bad draw
/// does not throw away the fit. An error before the generated quantities is returned as the
/// error.
pub(crate) fn constrained_row(
    model: &Model,
    z: &[f64],
    rng: &mut StreamRng,
) -> Result<(Vec<f64>, Option<GqFailure>), DensityError> {
    model.write_outputs(z, rng)
}

/// The generated quantities that failed over a run of draws: how many draws had a failure,
/// how many draws each quantity failed at, and the first failure.
#[derive(Clone, Debug, Default)]
pub(crate) struct GqTally {
    /// Draws at which at least one generated quantity failed.
    pub draws: usize,
    /// Per quantity that failed at some draw (declared name), the number of such draws; in the
    /// order the quantities first failed.
    pub per_quantity: Vec<(String, usize)>,
    /// The first failure: its 1-based draw number in the run, the error, and whether it may
    /// depend on the parameters ([`GqFailure::involves_parameters`]).
    pub first: Option<(usize, DensityError, bool)>,
}

impl GqTally {
    /// Counts the failure `f` of draw number `draw` (1-based).
    pub fn add(&mut self, draw: usize, f: GqFailure) {
        self.draws += 1;
        for v in f.variables {
            match self.per_quantity.iter_mut().find(|(n, _)| *n == v) {
                Some((_, k)) => *k += 1,
                None => self.per_quantity.push((v, 1)),
            }
        }
        self.first
            .get_or_insert((draw, f.error, f.involves_parameters));
    }

    /// Adds the counts of `other` (a later chain); the first failure stays this tally's when
    /// it has one.
    pub fn merge(&mut self, other: GqTally) {
        self.draws += other.draws;
        for (v, k) in other.per_quantity {
            match self.per_quantity.iter_mut().find(|(n, _)| *n == v) {
                Some((_, j)) => *j += k,
                None => self.per_quantity.push((v, k)),
            }
        }
        if self.first.is_none() {
            self.first = other.first;
        }
    }

    /// [`gq_failure_note`] for `total` draws, the first failure placed by `at` (from its draw
    /// number: "draw 3 of chain 1", "draw 3"); `None` when nothing failed.
    pub fn note(&self, total: usize, at: impl Fn(usize) -> String) -> Option<String> {
        let (draw, e, involves_parameters) = self.first.as_ref()?;
        Some(gq_failure_note(
            self.draws,
            total,
            &self.per_quantity,
            (&at(*draw), e, *involves_parameters),
        ))
    }
}

/// The warning when generated quantities could not be computed at `failed` of `total` draws:
/// per quantity (`per_quantity`, declared names with their counts of draws) the draws at which
/// it holds NaN, that the other quantities keep their values and each summary is over the
/// draws where its quantity was computed, the first failure (at `at`, "draw 3 of
/// chain 1" or "draw 3", with its error `e`), and how to fix the model: a guard on the
/// parameter values when the failing statement may depend on them (`involves_parameters`),
/// else a change to the statement or the data, which fail whatever the parameters are. Shared
/// by the MCMC, variational and optimize fits.
pub fn gq_failure_note(
    failed: usize,
    total: usize,
    per_quantity: &[(String, usize)],
    (at, e, involves_parameters): (&str, &DensityError, bool),
) -> String {
    const SHOWN: usize = 6;
    let mut list: Vec<String> = per_quantity
        .iter()
        .take(SHOWN)
        .map(|(n, k)| format!("{n} at {k}"))
        .collect();
    if per_quantity.len() > SHOWN {
        list.push(format!("{} more", per_quantity.len() - SHOWN));
    }
    let fix = if involves_parameters {
        "Guard the statement against the parameter values that break it (e.g. `if (mu > 0)`), \
         or use a function defined for all of them"
    } else {
        "The statement does not involve the parameters (only data, constants and `_rng` \
         draws), so no parameter value avoids the failure: change the statement or the data \
         it reads"
    };
    format!(
        "the generated quantities failed at {failed} of {total} draws ({}); those draws hold NaN \
         for the quantities that failed and keep the others and the parameters, and each \
         quantity's summary is over the draws where it was computed. The first failure, at \
         {at}: {e}. {fix}",
        list.join(", "),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(vars: &[&str], msg: &str) -> GqFailure {
        GqFailure {
            error: DensityError::recoverable(msg),
            involves_parameters: true,
            variables: vars.iter().map(|v| v.to_string()).collect(),
        }
    }

    #[test]
    fn tally_counts_per_quantity_and_keeps_the_first_failure() {
        let mut a = GqTally::default();
        a.add(3, failure(&["b"], "first"));
        a.add(7, failure(&["b", "d"], "second"));
        let mut b = GqTally::default();
        b.add(1, failure(&["d"], "other chain"));
        a.merge(b);
        assert_eq!(a.draws, 3);
        assert_eq!(
            a.per_quantity,
            vec![("b".to_string(), 2), ("d".to_string(), 2)]
        );
        let note = a.note(100, |d| format!("draw {d} of chain 1")).unwrap();
        assert!(
            note.starts_with("the generated quantities failed at 3 of 100 draws (b at 2, d at 2)"),
            "{note}"
        );
        assert!(note.contains("at draw 3 of chain 1: first"), "{note}");
        assert!(GqTally::default().note(10, |d| d.to_string()).is_none());
    }
}
