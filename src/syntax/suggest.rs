//! "Did you mean …?": the one edit distance every phase uses to suggest a known name for an
//! unknown one (block names, variables, functions, distributions, data columns).
//!
//! The distance is the optimal-string-alignment variant of Damerau–Levenshtein: insertions,
//! deletions, substitutions and transpositions of adjacent characters each cost one, so
//! `nromal` is one edit from `normal`. Similarity normalises it by the longer name, and
//! [`best_match`] keeps a candidate only above [`SUGGESTION_THRESHOLD`] (Nickel's rule).

/// Minimum similarity for a suggestion (0.6, as Nickel's `error/suggest.rs`).
pub const SUGGESTION_THRESHOLD: f64 = 0.6;

/// Optimal-string-alignment distance between `a` and `b`, over Unicode scalar values.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
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

/// Similarity in [0, 1]: 1 − distance / length of the longer name (1 for two empty names).
pub fn similarity(a: &str, b: &str) -> f64 {
    let longer = a.chars().count().max(b.chars().count());
    if longer == 0 {
        return 1.0;
    }
    1.0 - edit_distance(a, b) as f64 / longer as f64
}

/// The candidate most similar to `name` with similarity ≥ [`SUGGESTION_THRESHOLD`]; ties go
/// to the earlier candidate, and `name` itself is never suggested.
pub fn best_match<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let mut best: Option<(&'a str, f64)> = None;
    for c in candidates {
        if c == name {
            continue;
        }
        let s = similarity(name, c);
        if s >= SUGGESTION_THRESHOLD && best.is_none_or(|(_, b)| s > b) {
            best = Some((c, s));
        }
    }
    best.map(|(c, _)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(edit_distance("nromal", "normal"), 1);
        assert_eq!(edit_distance("paramters", "parameters"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("sigma", "sigma"), 0);
    }

    #[test]
    fn suggestions() {
        assert_eq!(best_match("nromal", ["normal", "gamma"]), Some("normal"));
        assert_eq!(best_match("lpf", ["lfp", "k5"]), Some("lfp"));
        assert_eq!(best_match("xyz", ["normal"]), None);
        assert_eq!(best_match("mu", ["mu"]), None);
    }
}
