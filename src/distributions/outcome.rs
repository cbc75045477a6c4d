//! The support of each family's outcome (the variate of a `~` statement or an `_lpmf` call) as
//! a table that can be checked against data before fitting, one row per family.
//!
//! Most supports are elementwise (a Poisson outcome is a nonnegative integer; see
//! [`super::variate_support`]). Some depend on another argument: a binomial outcome lies in
//! 0..N with N the number of trials, a categorical one in 1..K with K the length of the
//! probability vector, an ordered-logistic one in 1..K with K one more than the number of
//! cut-points. When the outcome and that argument (or its declared size) are data, a value
//! outside the support is a data error, reported with its file, row and column by the binder
//! (`data::bind`), instead of a log density that no parameter value can make finite.

use super::args::requirement::{BINARY, COUNT};
use super::args::{Arg, binary, count};
use super::multivariate::{MvArg, MvFamily};
use super::registry::Family;

/// What the outcome of a family must satisfy.
#[derive(Clone, Copy, Debug)]
pub enum OutcomeSupport {
    /// Each element passes `test`, described by `requirement` (bernoulli: "0 or 1").
    Elementwise {
        /// The requirement phrase, as in Stan Math's messages ("a nonnegative integer").
        requirement: &'static str,
        /// The elementwise test.
        test: fn(f64) -> bool,
    },
    /// Each element y lies in 0..=N, with N the argument at position `trials` (0 is the
    /// outcome), broadcast against the outcome; N must itself be a nonnegative integer.
    UpToTrials {
        /// The position of the number of trials among the arguments (0 is the outcome).
        trials: usize,
    },
    /// Each element lies in 1..=K, K being the length of the argument at position `arg` (0 is
    /// the outcome) plus `extra` (1 for the ordered families, given K − 1 cut-points).
    Categories {
        /// The position of the argument whose length gives K.
        arg: usize,
        /// What is added to that length to make K.
        extra: usize,
    },
}

/// The support of the outcome of the family called `name` (as written after `~`, univariate or
/// multivariate); `None` for an unknown name and for the continuous multivariate families,
/// whose variates are checked as structured values (simplex, correlation matrix, …).
pub fn outcome_support(name: &str) -> Option<OutcomeSupport> {
    use OutcomeSupport::*;
    Some(match name {
        "binomial" | "binomial_logit" | "beta_binomial" => UpToTrials { trials: 1 },
        "categorical" | "categorical_logit" => Categories { arg: 1, extra: 0 },
        "ordered_logistic" | "ordered_probit" => Categories { arg: 2, extra: 1 },
        "categorical_logit_glm" => Categories { arg: 2, extra: 0 },
        "poisson_log_glm" => Elementwise {
            requirement: COUNT,
            test: count,
        },
        "bernoulli_logit_glm" => Elementwise {
            requirement: BINARY,
            test: binary,
        },
        _ => {
            let family = super::lookup(name)?.family;
            let (requirement, test) = super::variate_support(family)?;
            Elementwise { requirement, test }
        }
    })
}

/// Why an outcome (or the number of trials bounding it) is outside the support.
#[derive(Clone, Debug, PartialEq)]
pub enum Violation {
    /// Outcome element `index` fails an elementwise requirement.
    Requirement {
        /// The 0-based element of the outcome.
        index: usize,
        /// The requirement phrase.
        requirement: &'static str,
    },
    /// Outcome element `index` is negative or not an integer (the binomial families).
    NotCount {
        /// The 0-based element of the outcome.
        index: usize,
    },
    /// Outcome element `index` exceeds its number of trials, element `trials_index` of the
    /// trials argument (0 when that is a scalar).
    AboveTrials {
        /// The 0-based element of the outcome.
        index: usize,
        /// The 0-based element of the trials argument.
        trials_index: usize,
        /// The number of trials.
        trials: f64,
    },
    /// Element `trials_index` of the trials argument is not a nonnegative integer.
    TrialsNotCount {
        /// The 0-based element of the trials argument.
        trials_index: usize,
    },
    /// Outcome element `index` is not an integer in 1..=k.
    OutsideCategories {
        /// The 0-based element of the outcome.
        index: usize,
        /// The number of categories.
        k: usize,
    },
}

/// The first element of the outcome `y` outside an elementwise support; NaN (the mark of an
/// unobserved value) is skipped.
pub fn check_elementwise(
    requirement: &'static str,
    test: fn(f64) -> bool,
    y: &[f64],
) -> Option<Violation> {
    y.iter()
        .position(|&v| !v.is_nan() && !test(v))
        .map(|index| Violation::Requirement { index, requirement })
}

/// The first violation of 0 ≤ y ≤ N, N broadcast (`trials` of length 1, or of the length of
/// `y`; other lengths are left to evaluation, which reports the size mismatch). The trials are
/// checked first, as a bad N makes the outcome's bound meaningless. NaN outcomes are skipped.
pub fn check_trials(y: &[f64], trials: &[f64]) -> Option<Violation> {
    if trials.len() != 1 && trials.len() != y.len() {
        return None;
    }
    if let Some(trials_index) = trials.iter().position(|&n| !count(n)) {
        return Some(Violation::TrialsNotCount { trials_index });
    }
    for (index, &v) in y.iter().enumerate() {
        if v.is_nan() {
            continue;
        }
        if !count(v) {
            return Some(Violation::NotCount { index });
        }
        let trials_index = if trials.len() == 1 { 0 } else { index };
        let n = trials[trials_index];
        if v > n {
            return Some(Violation::AboveTrials {
                index,
                trials_index,
                trials: n,
            });
        }
    }
    None
}

/// The first element of `y` that is not an integer in 1..=k; NaN outcomes are skipped.
pub fn check_categories(y: &[f64], k: usize) -> Option<Violation> {
    let inside = |v: f64| (1.0..=k as f64).contains(&v) && v.fract() == 0.0;
    y.iter()
        .position(|&v| !v.is_nan() && !inside(v))
        .map(|index| Violation::OutsideCategories { index, k })
}

/// Whether the integer arguments of a univariate `family` (a discrete family's outcome, and
/// the number of trials that bounds it) are themselves outside the support, so that no
/// parameter value can make the log mass finite. Integer arguments never depend on parameters,
/// so the evaluator turns such an argument error into a data error rather than a rejection
/// (`graph::eval::density`). NaN outcomes (unobserved values) do not count; `false` for the
/// continuous families, whose outcome may be a parameter.
pub fn integer_data_outside(family: Family, args: &[Arg]) -> bool {
    let sig = family.sig();
    if !sig.variate.is_integer() || args.is_empty() {
        return false;
    }
    let y = &args[0];
    if y.is_empty() {
        return false;
    }
    match outcome_support(sig.name) {
        Some(OutcomeSupport::Elementwise { requirement, test }) => {
            let ys: Vec<f64> = (0..y.len()).map(|i| y.at(i)).collect();
            check_elementwise(requirement, test, &ys).is_some()
        }
        Some(OutcomeSupport::UpToTrials { trials }) => {
            let Some(n) = args.get(trials) else {
                return false;
            };
            // Broadcast the outcome against the trials (either may be a scalar).
            let len = y.len().max(n.len());
            let ys: Vec<f64> = (0..len).map(|i| y.at(i.min(y.len() - 1))).collect();
            let ns: Vec<f64> = (0..n.len()).map(|i| n.at(i)).collect();
            check_trials(&ys, &ns).is_some()
        }
        _ => false,
    }
}

/// As [`integer_data_outside`], for a discrete multivariate `family` (the categorical and
/// ordered families, the GLMs): its outcome outside 1..K, K read from the size of the argument
/// that fixes it (the columns of a log-odds matrix), or outside an elementwise support.
pub fn mv_integer_data_outside(family: MvFamily, args: &[MvArg]) -> bool {
    mv_outcome_violation(family, args).is_some()
}

/// The first element of a multivariate discrete family's outcome (`args[0]`) outside its
/// support, as [`mv_integer_data_outside`] finds it: the violation names the element, so the
/// error can say which outcome value no parameter can fix rather than whichever argument check
/// the density happened to fail first (an unordered cut-point parameter beside an outcome 5 of
/// `ordered_logistic` with 3 cut-points was reported as the cut-points, blamed on the data;
/// fresh-user finding, session 20). `None` when every element is inside.
pub fn mv_outcome_violation(family: MvFamily, args: &[MvArg]) -> Option<Violation> {
    let sig = family.sig();
    if !sig.discrete || args.is_empty() {
        return None;
    }
    match outcome_support(sig.name) {
        Some(OutcomeSupport::Elementwise { requirement, test }) => {
            check_elementwise(requirement, test, args[0].data)
        }
        Some(OutcomeSupport::Categories { arg, extra }) => {
            let a = args.get(arg)?;
            let k = if a.rows > 1 && a.cols > 1 {
                a.cols
            } else {
                a.elem_len()
            };
            check_categories(args[0].data, k + extra)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_rows() {
        assert!(matches!(
            outcome_support("binomial"),
            Some(OutcomeSupport::UpToTrials { trials: 1 })
        ));
        assert!(matches!(
            outcome_support("ordered_logistic"),
            Some(OutcomeSupport::Categories { arg: 2, extra: 1 })
        ));
        assert!(matches!(
            outcome_support("poisson"),
            Some(OutcomeSupport::Elementwise { .. })
        ));
        assert!(matches!(
            outcome_support("bernoulli_logit_glm"),
            Some(OutcomeSupport::Elementwise { .. })
        ));
        assert!(outcome_support("multi_normal").is_none());
        assert!(outcome_support("no_such_family").is_none());
    }

    #[test]
    fn trials() {
        assert_eq!(check_trials(&[0.0, 3.0, 10.0], &[10.0]), None);
        assert_eq!(
            check_trials(&[1.0, 12.0], &[10.0, 10.0]),
            Some(Violation::AboveTrials {
                index: 1,
                trials_index: 1,
                trials: 10.0
            })
        );
        assert_eq!(
            check_trials(&[1.0, -1.0], &[10.0]),
            Some(Violation::NotCount { index: 1 })
        );
        assert_eq!(
            check_trials(&[1.0, 0.0], &[3.0, -2.0]),
            Some(Violation::TrialsNotCount { trials_index: 1 })
        );
        assert_eq!(check_trials(&[f64::NAN, 2.0], &[3.0]), None);
        // a size mismatch is left to evaluation
        assert_eq!(check_trials(&[1.0, 12.0], &[10.0, 10.0, 10.0]), None);
        let y = [3.0, 12.0];
        let args = [Arg::Vector(&y), Arg::Scalar(10.0), Arg::Scalar(0.5)];
        assert!(integer_data_outside(Family::Binomial, &args));
        let args = [Arg::Scalar(3.0), Arg::Scalar(10.0), Arg::Scalar(0.5)];
        assert!(!integer_data_outside(Family::Binomial, &args));
        assert!(integer_data_outside(
            Family::Poisson,
            &[Arg::Scalar(-1.0), Arg::Scalar(2.0)]
        ));
        // a continuous outcome may be a parameter: left to evaluation
        assert!(!integer_data_outside(
            Family::Exponential,
            &[Arg::Scalar(-1.0), Arg::Scalar(2.0)]
        ));
    }

    #[test]
    fn categories_and_elementwise() {
        assert_eq!(check_categories(&[1.0, 3.0], 3), None);
        assert_eq!(
            check_categories(&[1.0, 0.0], 3),
            Some(Violation::OutsideCategories { index: 1, k: 3 })
        );
        assert_eq!(
            check_categories(&[4.0], 3),
            Some(Violation::OutsideCategories { index: 0, k: 3 })
        );
        assert!(mv_integer_data_outside(
            MvFamily::Categorical,
            &[MvArg::vector(&[1.0, 4.0]), MvArg::vector(&[0.2, 0.3, 0.5])]
        ));
        assert!(!mv_integer_data_outside(
            MvFamily::OrderedLogistic,
            &[
                MvArg::vector(&[1.0, 3.0]),
                MvArg::scalar(&[0.0]),
                MvArg::vector(&[-1.0, 1.0])
            ]
        ));
        assert_eq!(
            check_elementwise(BINARY, binary, &[0.0, 1.0, 2.0]),
            Some(Violation::Requirement {
                index: 2,
                requirement: BINARY
            })
        );
    }
}
