//! Scopes of variable names, and did-you-mean suggestions by normalised Damerau–Levenshtein
//! similarity (the scheme of Nickel's `error/suggest.rs`: similarity = 1 − distance / longer
//! length, accepted at ≥ 0.6).

use std::collections::HashMap;

use crate::syntax::ast::Expr;
use crate::syntax::span::Span;

use super::types::Type;

/// Minimum normalised similarity for a suggestion (Nickel uses the same threshold).
pub use crate::syntax::suggest::SUGGESTION_THRESHOLD;

/// Where a variable was declared; decides where it may be assigned and whether it counts as data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Declared in `data`: read-only everywhere.
    Data,
    /// Declared `@missing` in `data`: read-only, and its missing entries are parameters, so it
    /// counts as depending on parameters and is visible only from `transformed parameters` on
    /// (docs/missing_data.md).
    ImputedData,
    /// Declared at the top of `transformed data`: assigned there only.
    TransformedData,
    /// Declared in `parameters`: never assigned.
    Parameter,
    /// Declared at the top of `transformed parameters`: assigned there only.
    TransformedParameter,
    /// Declared at the top of `generated quantities`: assigned there only.
    GeneratedQuantity,
    /// A local variable of a block or a function body.
    Local,
    /// A loop variable (`for (i in …)`): read-only.
    LoopVar,
    /// An argument of a user-defined function: read-only; `data_only` for `data` arguments.
    FunctionArg {
        /// The argument was declared with the `data` qualifier.
        data_only: bool,
    },
}

impl Origin {
    /// The word used in messages: "data variable", "parameter", …
    pub fn describe(self) -> &'static str {
        match self {
            Origin::Data => "data variable",
            Origin::ImputedData => "data variable with missing entries",
            Origin::TransformedData => "transformed data variable",
            Origin::Parameter => "parameter",
            Origin::TransformedParameter => "transformed parameter",
            Origin::GeneratedQuantity => "generated quantity",
            Origin::Local => "local variable",
            Origin::LoopVar => "loop variable",
            Origin::FunctionArg { .. } => "function argument",
        }
    }

    /// Known before any parameter is drawn (allowed in sizes and in bounds of data).
    pub fn is_data(self) -> bool {
        matches!(
            self,
            Origin::Data | Origin::TransformedData | Origin::FunctionArg { data_only: true }
        )
    }
}

/// What the checker knows about one declared variable.
#[derive(Clone, Debug)]
pub struct VarInfo {
    /// The declared type (sizes dropped).
    pub ty: Type,
    /// Where it was declared.
    pub origin: Origin,
    /// The name's span in its declaration.
    pub decl_span: Span,
    /// Declared `<lower=…>`, if any.
    pub lower: Option<Expr>,
    /// Declared `<upper=…>`, if any.
    pub upper: Option<Expr>,
    /// The declaration's size expressions as source text, outermost first (`array[J] vector[K]`
    /// gives `["J", "K"]`), for `help:` notes that show a corrected declaration.
    pub sizes: Vec<String>,
    /// The values of those sizes where they are known before evaluation (integer literals and
    /// arithmetic on them, or `int` data when the program is checked with its data), parallel
    /// to `sizes`; `None` where unknown.
    pub known: Vec<Option<i64>>,
    /// Declared with a constrained type (`simplex`, `ordered`, `cov_matrix`, …).
    pub structured: bool,
}

/// A stack of lexical scopes. The language forbids shadowing, so a lookup finds at most one
/// declaration of a name.
#[derive(Debug, Default)]
pub struct Scopes {
    frames: Vec<HashMap<String, VarInfo>>,
}

impl Scopes {
    /// One empty global frame.
    pub fn new() -> Self {
        Scopes {
            frames: vec![HashMap::new()],
        }
    }

    /// Opens a nested scope (a `{ … }` block, a loop body, a function body).
    pub fn push(&mut self) {
        self.frames.push(HashMap::new());
    }

    /// Closes the innermost scope; the global frame is never popped.
    pub fn pop(&mut self) {
        if self.frames.len() > 1 {
            self.frames.pop();
        }
    }

    /// The declaration of `name` visible here.
    pub fn lookup(&self, name: &str) -> Option<&VarInfo> {
        self.frames.iter().rev().find_map(|f| f.get(name))
    }

    /// Declares `name` in the innermost scope, replacing nothing (callers check
    /// [`Scopes::lookup`] first and report a redeclaration).
    pub fn declare(&mut self, name: &str, info: VarInfo) {
        if let Some(frame) = self.frames.last_mut() {
            frame.entry(name.to_string()).or_insert(info);
        }
    }

    /// Every visible name, for suggestions.
    pub fn visible_names(&self) -> Vec<&str> {
        self.frames
            .iter()
            .flat_map(|f| f.keys().map(String::as_str))
            .collect()
    }
}

pub use crate::syntax::suggest::{edit_distance, similarity};

/// The candidate most similar to `name` (see [`crate::syntax::suggest::best_match`]), owned.
pub fn best_match<'a, I>(name: &str, candidates: I) -> Option<String>
where
    I: IntoIterator<Item = &'a str>,
{
    crate::syntax::suggest::best_match(name, candidates).map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distance_counts_transpositions_once() {
        assert_eq!(edit_distance("nromal", "normal"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("sigma", "sigma"), 0);
    }

    #[test]
    fn similarity_is_normalised() {
        assert!((similarity("nromal", "normal") - (1.0 - 1.0 / 6.0)).abs() < 1e-12);
        assert_eq!(similarity("abc", "xyz"), 0.0);
    }

    #[test]
    fn best_match_respects_threshold() {
        let names = ["sigma", "mu", "tau"];
        assert_eq!(best_match("sigmma", names), Some("sigma".into()));
        assert_eq!(best_match("zzz", names), None);
        // "ta" vs "tau": 1 − 1/3 ≈ 0.67 passes; "m" vs "mu": 0.5 fails.
        assert_eq!(best_match("ta", names), Some("tau".into()));
        assert_eq!(best_match("m", names), None);
    }

    #[test]
    fn scopes_nest_and_pop() {
        let mut s = Scopes::new();
        let info = VarInfo {
            ty: Type::REAL,
            origin: Origin::Local,
            decl_span: Span::default(),
            lower: None,
            upper: None,
            sizes: vec![],
            known: vec![],
            structured: false,
        };
        s.declare("x", info.clone());
        s.push();
        s.declare("y", info);
        assert!(s.lookup("x").is_some() && s.lookup("y").is_some());
        s.pop();
        assert!(s.lookup("y").is_none());
        s.pop();
        assert!(s.lookup("x").is_some(), "the global frame stays");
    }
}
