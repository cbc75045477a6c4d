//! The sizes a multivariate family's arguments must share, as one table ([`relations`]) read
//! by the model checker (sizes known before evaluation: `semantics/check/mv_sizes.rs`) and by
//! the graph before each evaluation ([`first_mismatch`] on the values' shapes), so that both
//! agree on what fits. Sizes never depend on parameter values, so a mismatch fails at every
//! point: the graph reports it as an error of the model, not as a rejected point.
//!
//! The relations are those each family checks when it runs (the `must match in size` and
//! `Expecting a square matrix` checks of its file, Stan Math's `check_size_match` and
//! `check_square`; Stan Functions Reference, "Multivariate distributions"). [X] session 20,
//! tester finding: `y ~ multi_normal(mu, Sigma)` with sizes 3, 2 and 2 × 2 passed `check` and
//! failed in `fit` as "initialisation failed: no valid initial point found in 100 attempts".

use super::{MvFamily, MvSig};

/// Which size of an argument a relation is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizePart {
    /// The length of a one-dimensional array of vectors (only when the argument is an array).
    Array,
    /// A vector's or row vector's length (each vector's, for an array of them).
    Len,
    /// A matrix's rows (not an array of matrices).
    Rows,
    /// A matrix's columns.
    Cols,
    /// The number of elements of an argument that is not a single value (an array of `int`
    /// outcomes, a vector of locations). Nothing for a single value, which every row shares,
    /// nor for a vector of one element that is not an array (the families broadcast it as a
    /// single value).
    Count,
}

impl SizePart {
    /// The unit of this size in messages: "elements", "rows", …
    pub fn words(self) -> &'static str {
        match self {
            SizePart::Array => "vectors",
            SizePart::Len | SizePart::Count => "elements",
            SizePart::Rows => "rows",
            SizePart::Cols => "columns",
        }
    }
}

use SizePart::{Array, Cols, Count, Len, Rows};

/// The sizes of `family`'s arguments that must agree, as groups of (position in the density's
/// arguments, the variate being 0; which size). Every group is one size (K, N, …) of the
/// family's definition. bayesc's row-wise `categorical_logit` (a matrix of log odds, one row
/// per outcome) is documented in `categorical.rs`.
pub fn relations(family: MvFamily) -> &'static [&'static [(usize, SizePart)]] {
    match family {
        // y, μ: K-vectors (arrays of the same length when both are), Σ (L, Ω): K × K
        MvFamily::MultiNormal | MvFamily::MultiNormalCholesky | MvFamily::MultiNormalPrec => &[
            &[(0, Array), (1, Array)],
            &[(0, Len), (1, Len), (2, Rows), (2, Cols)],
        ],
        // y | ν, μ, Σ
        MvFamily::MultiStudentT => &[
            &[(0, Array), (2, Array)],
            &[(0, Len), (2, Len), (3, Rows), (3, Cols)],
        ],
        // y: K × N, L: N × N, w: K
        MvFamily::MultiGpCholesky => &[&[(0, Rows), (2, Len)], &[(0, Cols), (1, Rows), (1, Cols)]],
        MvFamily::LkjCorrCholesky | MvFamily::LkjCorr => &[&[(0, Rows), (0, Cols)]],
        MvFamily::Dirichlet => &[&[(0, Array), (1, Array)], &[(0, Len), (1, Len)]],
        MvFamily::Categorical => &[],
        // one row of log odds per outcome when they are a matrix
        MvFamily::CategoricalLogit => &[&[(0, Count), (1, Rows)]],
        // one location per outcome when a vector, one cut-point vector each when an array
        MvFamily::OrderedLogistic | MvFamily::OrderedProbit => {
            &[&[(0, Count), (1, Count), (2, Array)]]
        }
        // W | ν, S: both K × K
        MvFamily::Wishart | MvFamily::WishartCholesky | MvFamily::InvWishart => {
            &[&[(0, Rows), (0, Cols), (2, Rows), (2, Cols)]]
        }
        // y: N, x: N × K, α: single or N, β: K
        MvFamily::PoissonLogGlm | MvFamily::BernoulliLogitGlm => {
            &[&[(0, Count), (1, Rows), (2, Count)], &[(1, Cols), (3, Len)]]
        }
        // y: N, x: N × K, α: C, β: K × C
        MvFamily::CategoricalLogitGlm => &[
            &[(0, Count), (1, Rows)],
            &[(1, Cols), (3, Rows)],
            &[(2, Len), (3, Cols)],
        ],
    }
}

/// The positions of the relations for `sig`'s `_rng` (its parameters only, the variate's
/// relations dropped), or for its density: position `p` of [`relations`] is `p - 1` in an
/// `_rng` call. `None` for an `_rng` whose parameters are not the density's (the LKJ
/// families' `_rng(K, η)`).
pub fn position(sig: &MvSig, p: usize, rng: bool) -> Option<usize> {
    if !rng {
        return Some(p);
    }
    if sig.rng_params.is_none_or(|r| r.len() != sig.params.len()) {
        return None;
    }
    p.checked_sub(1)
}

/// The first relation of `sig` (density arguments, or `_rng` parameters when `rng`) whose
/// sizes differ, given each argument's size `size(position, part)` (`None` where the argument
/// has no such size): a message naming the two arguments (Stan Math's names) and their sizes,
/// e.g. "Random variable has 3 elements but Location parameter has 2 elements".
pub fn first_mismatch(
    sig: &MvSig,
    rng: bool,
    size: impl Fn(usize, SizePart) -> Option<usize>,
) -> Option<String> {
    let name = |p: usize| {
        if rng {
            sig.params[p].name
        } else {
            sig.arg_name(p)
        }
    };
    for group in relations(sig.family) {
        let mut first: Option<(usize, SizePart, usize)> = None;
        for &(p, part) in group.iter() {
            let Some(pos) = position(sig, p, rng) else {
                continue;
            };
            let Some(n) = size(pos, part) else { continue };
            match first {
                None => first = Some((pos, part, n)),
                Some((q, qpart, m)) if m != n => {
                    let other = if q == pos {
                        String::new()
                    } else {
                        format!("{} has ", name(pos))
                    };
                    return Some(format!(
                        "{} has {m} {} but {other}{n} {}",
                        name(q),
                        qpart.words(),
                        part.words()
                    ));
                }
                _ => {}
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_mismatch_names_the_two_sizes() {
        let sig = MvFamily::MultiNormal.sig();
        // y: vector[3], μ: vector[2], Σ: 2 × 2
        let sizes = |pos: usize, part: SizePart| match (pos, part) {
            (0, SizePart::Len) => Some(3),
            (1, SizePart::Len) => Some(2),
            (2, SizePart::Rows | SizePart::Cols) => Some(2),
            _ => None,
        };
        assert_eq!(
            first_mismatch(sig, false, sizes).as_deref(),
            Some("Random variable has 3 elements but Location parameter has 2 elements")
        );
        // `multi_normal_rng(μ, Σ)`: the same table, one position down; μ and Σ agree
        assert_eq!(first_mismatch(sig, true, |p, q| sizes(p + 1, q)), None);
        // a matrix that is not square, on its own
        let lkj = MvFamily::LkjCorr.sig();
        let rect = |_: usize, part: SizePart| match part {
            SizePart::Rows => Some(2),
            SizePart::Cols => Some(3),
            _ => None,
        };
        assert_eq!(
            first_mismatch(lkj, false, rect).as_deref(),
            Some("Correlation matrix has 2 rows but 3 columns")
        );
        // `lkj_corr_rng(K, η)` takes no sizes to compare
        assert_eq!(first_mismatch(lkj, true, rect), None);
    }
}
