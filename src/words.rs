//! English phrasing shared by every layer's messages: lists of names cut to a readable length
//! and counted nouns. No layer below `output` may import `output`, so these live at the root.

/// Up to `max` names joined by commas, then "and k more" (a warning about a 3760-parameter
/// BNN names six of them, not all). `max` ≥ 1.
pub fn name_list<S: AsRef<str>>(names: &[S], max: usize) -> String {
    let max = max.max(1);
    let shown: Vec<&str> = names.iter().take(max).map(AsRef::as_ref).collect();
    if names.len() > max {
        format!("{} and {} more", shown.join(", "), names.len() - max)
    } else {
        shown.join(", ")
    }
}

/// "an" before a word that starts with a vowel letter ("an `optimize` fit"), else "a"; by
/// spelling, which fits the method names it is used with ([X] session 21, tester finding:
/// "a `optimize` fit").
pub fn article(word: &str) -> &'static str {
    match word.chars().next() {
        Some('a' | 'e' | 'i' | 'o' | 'u' | 'A' | 'E' | 'I' | 'O' | 'U') => "an",
        _ => "a",
    }
}

/// "1 iteration", "2 iterations": `n` and `word`, with an `s` unless `n` is 1.
pub fn counted(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// `x` for a message: a negative zero (`-0.0 * s`, `-0.0` written in the model) is shown as
/// `0`, since `-0` reads as a negative value and would hide that the value is zero (a scale of
/// 0); every other value, NaN and the infinities included, is returned unchanged.
pub fn shown_zero(x: f64) -> f64 {
    if x == 0.0 { 0.0 } else { x }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_cut_and_counts_agree() {
        let names: Vec<String> = (1..=9).map(|i| format!("w[{i}]")).collect();
        assert_eq!(
            name_list(&names, 6),
            "w[1], w[2], w[3], w[4], w[5], w[6] and 3 more"
        );
        assert_eq!(name_list(&names[..2], 6), "w[1], w[2]");
        assert_eq!(counted(1, "iteration"), "1 iteration");
        assert_eq!(counted(0, "draw"), "0 draws");
        assert_eq!(format!("{}", shown_zero(-0.0)), "0");
        assert_eq!(format!("{}", shown_zero(-0.5)), "-0.5");
    }
}
