//! "Did you mean …?" for data names: the closest candidate by edit distance.

/// Case-insensitive edit distance ([`crate::syntax::suggest::edit_distance`] of the lowercased
/// names), so `LFP` is zero edits from `lfp` and `lpf` one.
pub fn edit_distance(a: &str, b: &str) -> usize {
    crate::syntax::suggest::edit_distance(&a.to_lowercase(), &b.to_lowercase())
}

/// The candidate closest to `target` (case-insensitively), if it is close enough: at most one
/// edit per three characters of the longer name (at least one edit). Ties go to the earlier
/// candidate.
pub fn best_match<'a>(
    target: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let mut best: Option<(usize, &'a str)> = None;
    for c in candidates {
        let d = edit_distance(target, c);
        let longer = target.chars().count().max(c.chars().count());
        if d <= (longer / 3).max(1) && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("lfp", "LFP"), 0);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("lpf", "lfp"), 1);
    }

    #[test]
    fn suggestions() {
        assert_eq!(best_match("lfpp", ["k5", "lfp", "inc"]), Some("lfp"));
        assert_eq!(best_match("age", ["k5", "lfp", "inc"]), None);
        assert_eq!(best_match("income", ["inc", "incom"]), Some("incom"));
    }
}
