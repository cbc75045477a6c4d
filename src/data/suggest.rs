//! "Did you mean …?" for data names: the closest candidate by Levenshtein edit distance.

/// Levenshtein distance between `a` and `b` over Unicode scalar values, case-insensitively.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.to_lowercase().chars().collect();
    let b: Vec<char> = b.to_lowercase().chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=b.len() {
            let sub = prev[j - 1] + usize::from(a[i - 1] != b[j - 1]);
            cur[j] = sub.min(prev[j] + 1).min(cur[j - 1] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// The candidate closest to `target`, if it is close enough: at most one edit per three
/// characters of the longer name (at least one edit). Ties go to the earlier candidate.
pub fn best_match<'a>(
    target: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let mut best: Option<(usize, &'a str)> = None;
    for c in candidates {
        let d = edit_distance(target, c);
        let longer = target.chars().count().max(c.chars().count());
        let limit = (longer / 3).max(1);
        if d <= limit && best.is_none_or(|(bd, _)| d < bd) {
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
    }

    #[test]
    fn suggestions() {
        assert_eq!(best_match("lfpp", ["k5", "lfp", "inc"]), Some("lfp"));
        assert_eq!(best_match("age", ["k5", "lfp", "inc"]), None);
        assert_eq!(best_match("income", ["inc", "incom"]), Some("incom"));
    }
}
