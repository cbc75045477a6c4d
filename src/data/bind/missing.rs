//! The error for declared data variables that no data file gives. One missing variable gets a
//! message of its own (with a "did you mean" from the unused columns and keys); when several
//! are missing — typically the wrong file was passed — the error names the file and lists every
//! missing variable at once, rather than blaming the first one (often a size such as `N` that
//! would have been inferred from the rows had the columns been there).

use crate::syntax::ast::{Expr, ExprKind, SizedBase, VarDecl};

use super::super::DataSource;
use super::super::error::{DataError, DataErrorKind, count};
use super::super::eval::type_string;
use super::super::suggest::{best_match, edit_distance};
use super::{Binder, indexed_column, size_exprs};

/// How many unused columns (or keys) of one file a message lists before "and k more".
const SHOWN_NAMES: usize = 20;

/// A declared data variable that no source gives and that cannot be inferred.
struct Absent<'d> {
    /// Its declaration.
    decl: &'d VarDecl,
    /// For a scalar `int`: the first later variable declared with it as its first size, whose
    /// length would give its value (the size is then inferred, not needed in the file).
    sizes: Option<&'d str>,
}

/// "`a`", "`a` and `b`", "`a`, `b` and `c`".
fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// "as a CSV column or JSON key", or the plural for `n` ≠ 1 variables.
fn as_columns(n: usize) -> &'static str {
    if n == 1 {
        "as a CSV column or JSON key"
    } else {
        "as CSV columns or JSON keys"
    }
}

/// The first declaration after `index` whose first size is the variable `name`, when the
/// `index`-th declaration is a scalar `int` (a size that a later variable's length may give).
fn sized_by<'d>(decls: &'d [VarDecl], index: usize, name: &str) -> Option<&'d str> {
    let decl = &decls[index];
    if !matches!(decl.ty.base, SizedBase::Int) || !decl.ty.array_dims.is_empty() {
        return None;
    }
    decls[index + 1..]
        .iter()
        .find(|d| {
            matches!(size_exprs(d).first(), Some(Expr { kind: ExprKind::Var(v), .. }) if v == name)
        })
        .map(|d| d.name.name.as_str())
}

/// The unused name (with "column" or "key") to suggest for the missing variable `name`: the
/// closest candidate ([`best_match`]), unless reaching it rewrites every character of `name`
/// (`N` → `x` is no suggestion).
fn suggest<'c>(
    name: &str,
    candidates: &[(&'c str, &'static str)],
) -> Option<(&'c str, &'static str)> {
    let m = best_match(name, candidates.iter().map(|(n, _)| *n))?;
    if edit_distance(name, m) >= name.chars().count() {
        return None;
    }
    candidates.iter().find(|(n, _)| *n == m).copied()
}

/// Where a variable was looked for: "a.csv", "any data file (a.csv, b.json)", or "any data
/// file" when none was given.
fn place(sources: &[DataSource]) -> String {
    let files: Vec<&str> = sources.iter().map(|s| s.name()).collect();
    match files.as_slice() {
        [] => "any data file".to_string(),
        [one] => one.to_string(),
        many => format!("any data file ({})", many.join(", ")),
    }
}

impl<'a> Binder<'a> {
    /// The error for the `index`-th declaration `decl`, which no source gives and which cannot
    /// be inferred ([`DataErrorKind::MissingVariable`]). When later declarations are missing
    /// too, the error lists all of them (see the module docs); otherwise it names `decl` alone.
    pub(super) fn missing(&self, index: usize, decl: &VarDecl) -> DataError {
        let absent = self.absent_from(index);
        if absent.len() > 1 {
            self.missing_many(&absent)
        } else {
            self.missing_one(index, decl)
        }
    }

    /// The declarations from `index` on (the `index`-th one is missing by assumption) that no
    /// source gives, that are not the variable allowed to be absent (`unobserved`), and that are
    /// not sizes inferred from a later variable's length. A later declaration whose lookup fails
    /// for another reason (defined twice, a JSON array of the wrong shape) is not listed: it is
    /// reported by itself once the missing ones are given.
    fn absent_from(&self, index: usize) -> Vec<Absent<'a>> {
        let decls = self.decls;
        let mut out = Vec::new();
        for (j, decl) in decls.iter().enumerate().skip(index) {
            let name = decl.name.name.as_str();
            let sizes = sized_by(decls, j, name);
            if j > index {
                if self.unobserved == Some(name) || !matches!(self.find(name), Ok(None)) {
                    continue;
                }
                let scalar_int =
                    matches!(decl.ty.base, SizedBase::Int) && decl.ty.array_dims.is_empty();
                if scalar_int && !matches!(self.infer_size(j, name), Ok(None)) {
                    continue;
                }
            }
            out.push(Absent { decl, sizes });
        }
        out
    }

    /// Names in the sources that no declared data variable uses, by source.
    fn unused_names(&self) -> Vec<(&'a DataSource, Vec<&'a str>)> {
        let declared = |n: &str| {
            self.decls.iter().any(|d| {
                let dn = d.name.name.as_str();
                n == dn || indexed_column(n, dn).is_some()
            })
        };
        self.sources
            .iter()
            .map(|s| {
                let names: Vec<&'a str> = match s {
                    DataSource::Csv(c) => c.header.iter().map(|h| h.as_str()).collect(),
                    DataSource::Json(j) => j.entries.keys().map(|k| k.as_str()).collect(),
                };
                (s, names.into_iter().filter(|n| !declared(n)).collect())
            })
            .collect()
    }

    /// Adds the note "not used by the model: columns of a.csv: `x`, …; keys of b.json: …"
    /// (at most [`SHOWN_NAMES`] names per file), unless every column and key is used. Returns
    /// the unused names with "column" or "key", the candidates of "did you mean".
    fn with_unused_note(&self, mut err: DataError) -> (DataError, Vec<(&'a str, &'static str)>) {
        let unused = self.unused_names();
        let mut listed = Vec::new();
        let mut candidates = Vec::new();
        for (src, names) in &unused {
            let (what, noun, file) = match src {
                DataSource::Csv(c) => ("columns", "column", &c.name),
                DataSource::Json(j) => ("keys", "key", &j.name),
            };
            candidates.extend(names.iter().map(|n| (*n, noun)));
            if names.is_empty() {
                continue;
            }
            let shown: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
            listed.push(format!(
                "{what} of {file}: {}",
                crate::words::name_list(&shown, SHOWN_NAMES)
            ));
        }
        if !listed.is_empty() {
            err = err.with_note(format!("not used by the model: {}", listed.join("; ")));
        }
        (err, candidates)
    }

    /// The error for one missing variable (no later declaration is missing too).
    fn missing_one(&self, index: usize, decl: &VarDecl) -> DataError {
        let name = decl.name.name.as_str();
        let ty = type_string(&decl.ty);
        let is_size = sized_by(self.decls, index, name).is_some();
        let place = place(self.sources);
        let err = if is_size {
            DataError::new(
                DataErrorKind::MissingVariable,
                format!(
                    "`{name}` is not in {place} and cannot be inferred: no CSV column or JSON \
                     array is declared with `{name}` as its first size"
                ),
            )
        } else {
            DataError::new(
                DataErrorKind::MissingVariable,
                format!("`{name}` (declared `{ty}`) is not in {place}"),
            )
        };
        if self.sources.is_empty() {
            return err.with_note("no data files were given").with_help(format!(
                "pass a CSV or JSON data file that defines `{name}`"
            ));
        }
        let (err, candidates) = self.with_unused_note(err);
        match suggest(name, &candidates) {
            Some((m, what)) => err.with_help(format!("did you mean {what} `{m}`?")),
            None if is_size => err.with_help(format!(
                "add `{name}` to a data file (e.g. a JSON file {{\"{name}\": 10}}), or give a CSV column or JSON \
                 array for a variable declared with `{name}` as its first size"
            )),
            None => err.with_help(format!(
                "add a column `{name}` to a CSV file or a key `{name}` to a JSON file"
            )),
        }
    }

    /// The error for several missing variables: names the file(s) and lists every one, with its
    /// declared type, the unused columns and keys, and a "did you mean" for each variable that
    /// has a close unused name.
    fn missing_many(&self, absent: &[Absent<'_>]) -> DataError {
        let names: Vec<String> = absent
            .iter()
            .map(|a| format!("`{}`", a.decl.name.name))
            .collect();
        let place = place(self.sources);
        let is_absent = |v: &str| absent.iter().any(|a| a.decl.name.name == v);
        let declared: Vec<String> = absent
            .iter()
            .map(|a| {
                let name = &a.decl.name.name;
                let ty = type_string(&a.decl.ty);
                match a.sizes {
                    Some(by) if is_absent(by) => format!(
                        "`{name}` is `{ty}`, inferred from the length of `{by}` once `{by}` is \
                         given"
                    ),
                    _ => format!("`{name}` is `{ty}`"),
                }
            })
            .collect();
        let mut err = DataError::new(
            DataErrorKind::MissingVariable,
            format!(
                "{} are not in {place}: {}",
                count(absent.len(), "data variable"),
                and_list(&names)
            ),
        )
        .with_note(format!("declared: {}", declared.join("; ")))
        .with_more_declarations(absent.iter().map(|a| a.decl.span));
        // the ones to add: a size inferred from a missing variable's length is not needed
        let needed: Vec<String> = absent
            .iter()
            .filter(|a| !a.sizes.is_some_and(is_absent))
            .map(|a| format!("`{}`", a.decl.name.name))
            .collect();
        if self.sources.is_empty() {
            return err.with_note("no data files were given").with_help(format!(
                "pass a CSV or JSON data file that defines {}",
                and_list(&needed)
            ));
        }
        let none_found = self
            .decls
            .iter()
            .all(|d| is_absent(&d.name.name) || self.unobserved == Some(d.name.name.as_str()));
        let (with_note, candidates) = self.with_unused_note(err);
        err = with_note;
        // no guess for a size that the length of a missing variable gives
        let mut guesses = Vec::new();
        let mut unguessed = Vec::new();
        for a in absent.iter().filter(|a| !a.sizes.is_some_and(is_absent)) {
            let name = a.decl.name.name.as_str();
            match suggest(name, &candidates) {
                Some((m, what)) => guesses.push(format!("{what} `{m}` for `{name}`")),
                None => unguessed.push(format!("`{name}`")),
            }
        }
        if !guesses.is_empty() {
            let mut help = format!("did you mean {}?", and_list(&guesses));
            if !unguessed.is_empty() {
                help += &format!(
                    " Give {} {}",
                    and_list(&unguessed),
                    as_columns(unguessed.len())
                );
            }
            return err.with_help(help);
        }
        let add = format!("give {} {}", and_list(&needed), as_columns(needed.len()));
        if none_found {
            let which = match self.sources {
                [one] => format!("{} has", one.name()),
                _ => "the data files have".to_string(),
            };
            err.with_help(format!(
                "{which} none of the model's data variables: pass this model's data file, or \
                 {add}"
            ))
        } else {
            err.with_help(add)
        }
    }
}
