//! "Did you mean …?" for data names: the closest candidate by edit distance.

/// Edit distance between `a` and `b` over Unicode scalar values, case-insensitively: insertions,
/// deletions, substitutions and transpositions of adjacent characters each cost one (the
/// optimal string alignment variant of Damerau–Levenshtein), so `lpf` is one edit from `lfp`.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.to_lowercase().chars().collect();
    let b: Vec<char> = b.to_lowercase().chars().collect();
    let w = b.len() + 1;
    // d[i * w + j]: distance between the first i chars of a and the first j chars of b.
    let mut d = vec![0usize; (a.len() + 1) * w];
    for (j, cell) in d.iter_mut().take(w).enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        d[i * w] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[(i - 1) * w + j - 1] + cost)
                .min(d[(i - 1) * w + j] + 1)
                .min(d[i * w + j - 1] + 1);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[(i - 2) * w + j - 2] + 1);
            }
            d[i * w + j] = best;
        }
    }
    d[a.len() * w + b.len()]
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
        assert_eq!(edit_distance("lpf", "lfp"), 1);
    }

    #[test]
    fn suggestions() {
        assert_eq!(best_match("lfpp", ["k5", "lfp", "inc"]), Some("lfp"));
        assert_eq!(best_match("age", ["k5", "lfp", "inc"]), None);
        assert_eq!(best_match("income", ["inc", "incom"]), Some("incom"));
    }
}
