//! `include "file.bayes";` resolution: finds each included library, parses it, merges its
//! `functions` block into the program before the semantic checks, and relocates errors found in
//! library code so that they name both the library line and the place in the model.
//!
//! **Resolution order** (documented for users in `docs/stdlib.md`): an include written in a file
//! is looked up
//! 1. in the folder of that file (for the model, the model file's folder; for the REPL or a
//!    model given as text without a path, the current directory), then
//! 2. in the installed standard library: the modules of `stdlib/*.bayes`, compiled into the
//!    binary with `include_str!` ([`STDLIB`]).
//!
//! A file next to the model therefore shadows a stdlib module of the same name. Includes inside a
//! stdlib module resolve in the stdlib only. The stdlib is embedded, not read from disk, so the
//! binary works wherever it is copied; each module is registered in the `SourceMap` under the
//! display name `stdlib/<name>.bayes`, so errors inside it point at real lines (STYLE.md §4,
//! "a stdlib embedded with real locations", after Nickel's `core/stdlib/std.ncl`).
//!
//! An included file holds a `functions { … }` block and possibly further `include` lines, and
//! nothing else. Each file is included at most once per program (a second `include` of the same
//! file is skipped, so diamonds are fine); an include that leads back to a file being included is
//! a cycle and an error at the include line. Library functions come before the model's own
//! functions in the merged program.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use codespan_reporting::diagnostic::{Diagnostic, Label};

use crate::syntax::ast::{
    Expr, ExprKind, FunctionDef, Index, LValue, PrintArg, Program, Stmt, StmtKind,
};
use crate::syntax::parser;
use crate::syntax::report::ToDiagnostic;
use crate::syntax::source::SourceMap;
use crate::syntax::span::{FileId, Span};

/// The installed standard library: (file name, source text) of every `stdlib/*.bayes` module,
/// embedded at build time.
pub const STDLIB: &[(&str, &str)] = &[
    ("glm.bayes", include_str!("../../stdlib/glm.bayes")),
    ("nn.bayes", include_str!("../../stdlib/nn.bayes")),
    ("reparam.bayes", include_str!("../../stdlib/reparam.bayes")),
    (
        "timeseries.bayes",
        include_str!("../../stdlib/timeseries.bayes"),
    ),
];

/// The source text of the stdlib module `name` (e.g. `"timeseries.bayes"`), if there is one.
pub fn stdlib_module(name: &str) -> Option<&'static str> {
    STDLIB.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// A file brought in by an `include`, as registered in the `SourceMap`.
#[derive(Clone, Debug, PartialEq)]
pub struct IncludedFile {
    /// Its id in the `SourceMap`.
    pub file: FileId,
    /// Its display name: a path on disk, or `stdlib/<name>.bayes`.
    pub name: String,
    /// The `include` line that brought it in (in the model or in another included file).
    pub included_at: Span,
}

/// Where an included file comes from; also its identity for "once each" and cycle detection.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Origin {
    /// A file on disk (canonical path when it can be canonicalised).
    Disk(PathBuf),
    /// An embedded stdlib module, by file name.
    Stdlib(&'static str),
}

/// Resolves every `include` of `program` (recursively), registering each library in `sources`
/// and prepending its functions to `program.functions`.
///
/// `dir` is the folder of the model file (`None`: the current directory). Returns the included
/// files in the order they were read.
///
/// Errors (as diagnostics): an include that is found nowhere (listing where it looked), a file
/// that cannot be read, a syntax error in a library (with an "included here" label), a library
/// holding anything other than `functions` and `include`, and an include cycle.
pub fn resolve(
    sources: &mut SourceMap,
    program: &mut Program,
    dir: Option<&Path>,
) -> Result<Vec<IncludedFile>, Vec<Diagnostic<FileId>>> {
    if program.includes.is_empty() {
        return Ok(Vec::new());
    }
    let mut r = Resolver {
        sources,
        done: HashMap::new(),
        stack: Vec::new(),
        included: Vec::new(),
        functions: Vec::new(),
    };
    let base = Base::Dir(dir.map(Path::to_path_buf).unwrap_or_default());
    for inc in &program.includes {
        r.include(&inc.path, inc.span, &base)?;
    }
    let mut functions = std::mem::take(&mut r.functions);
    functions.append(&mut program.functions);
    program.functions = functions;
    Ok(r.included)
}

/// Where the includes of one file are looked up first.
enum Base {
    /// The folder of a file on disk (empty path: the current directory).
    Dir(PathBuf),
    /// Inside a stdlib module: the stdlib only.
    Stdlib,
}

struct Resolver<'a> {
    sources: &'a mut SourceMap,
    /// Files already included, with their display names.
    done: HashMap<Origin, String>,
    /// The chain of files being included (for cycle detection), with display names.
    stack: Vec<(Origin, String)>,
    included: Vec<IncludedFile>,
    functions: Vec<FunctionDef>,
}

impl Resolver<'_> {
    fn include(
        &mut self,
        path: &str,
        at: Span,
        base: &Base,
    ) -> Result<(), Vec<Diagnostic<FileId>>> {
        let mut looked = Vec::new();
        let mut found: Option<(Origin, String, String, Base)> = None;
        if let Base::Dir(d) = base {
            let candidate = d.join(path);
            looked.push(format!("`{}`", candidate.display()));
            if candidate.is_file() {
                let text = std::fs::read_to_string(&candidate).map_err(|e| {
                    vec![
                        Diagnostic::error()
                            .with_message(format!(
                                "cannot read included file `{}`: {e}",
                                candidate.display()
                            ))
                            .with_labels(vec![
                                Label::primary(at.file, at.range()).with_message("included here"),
                            ]),
                    ]
                })?;
                let origin = Origin::Disk(candidate.canonicalize().unwrap_or(candidate.clone()));
                let next = Base::Dir(
                    candidate
                        .parent()
                        .map(Path::to_path_buf)
                        .unwrap_or_default(),
                );
                found = Some((origin, candidate.display().to_string(), text, next));
            }
        }
        if found.is_none() {
            looked.push("the installed stdlib".to_string());
            if let Some((name, text)) = STDLIB.iter().find(|(n, _)| *n == path) {
                found = Some((
                    Origin::Stdlib(name),
                    format!("stdlib/{name}"),
                    text.to_string(),
                    Base::Stdlib,
                ));
            }
        }
        let Some((origin, name, text, next)) = found else {
            return Err(vec![not_found(path, at, &looked)]);
        };
        if let Some(pos) = self.stack.iter().position(|(o, _)| *o == origin) {
            let mut chain: Vec<&str> = self.stack[pos..].iter().map(|(_, n)| n.as_str()).collect();
            chain.push(&name);
            return Err(vec![
                Diagnostic::error()
                    .with_message(format!("include cycle: `{name}` includes itself"))
                    .with_labels(vec![
                        Label::primary(at.file, at.range())
                            .with_message("this include leads back to a file being included"),
                    ])
                    .with_notes(vec![
                        format!("note: the chain is {}", chain.join(" → ")),
                        "help: move the shared functions into one file that the others include"
                            .to_string(),
                    ]),
            ]);
        }
        if self.done.contains_key(&origin) {
            return Ok(());
        }
        let file = self.sources.add(name.clone(), text.clone());
        let program = parser::parse_program(&text, file).map_err(|e| {
            vec![
                e.to_diagnostic()
                    .with_labels(vec![included_here(at, &name)]),
            ]
        })?;
        check_library_blocks(&program, &name, at)?;
        self.included.push(IncludedFile {
            file,
            name: name.clone(),
            included_at: at,
        });
        self.done.insert(origin.clone(), name.clone());
        self.stack.push((origin, name));
        for inc in &program.includes {
            self.include(&inc.path, inc.span, &next)?;
        }
        self.stack.pop();
        self.functions.extend(program.functions);
        Ok(())
    }
}

fn included_here(at: Span, name: &str) -> Label<FileId> {
    Label::secondary(at.file, at.range()).with_message(format!("`{name}` included here"))
}

fn not_found(path: &str, at: Span, looked: &[String]) -> Diagnostic<FileId> {
    let modules: Vec<&str> = STDLIB.iter().map(|(n, _)| *n).collect();
    let mut notes = vec![
        format!("note: looked in {}", looked.join(", then ")),
        format!("note: the stdlib has {}", modules.join(", ")),
    ];
    if let Some(s) = crate::semantics::names::best_match(path, modules.iter().copied()) {
        notes.push(format!("help: did you mean `{s}`?"));
    }
    Diagnostic::error()
        .with_message(format!("cannot find included file `{path}`"))
        .with_labels(vec![
            Label::primary(at.file, at.range()).with_message("included here"),
        ])
        .with_notes(notes)
}

/// An included file may hold only `functions` (and `include` lines).
fn check_library_blocks(
    program: &Program,
    name: &str,
    at: Span,
) -> Result<(), Vec<Diagnostic<FileId>>> {
    let b = &program.block_spans;
    let others = [
        ("data", b.data),
        ("transformed data", b.transformed_data),
        ("parameters", b.parameters),
        ("transformed parameters", b.transformed_parameters),
        ("model", b.model),
        ("generated quantities", b.generated_quantities),
    ];
    let errors: Vec<Diagnostic<FileId>> = others
        .iter()
        .filter_map(|(block, span)| span.map(|s| (block, s)))
        .map(|(block, s)| {
            Diagnostic::error()
                .with_message(format!(
                    "an included file may only hold a `functions` block, but `{name}` has a `{block}` block"
                ))
                .with_labels(vec![
                    Label::primary(s.file, s.range()).with_message("not allowed in a library"),
                    included_here(at, name),
                ])
                .with_notes(vec![format!(
                    "help: move the `{block}` block into the model that includes `{name}`"
                )])
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// Adds to a diagnostic about library code (an error or warning whose primary label lies in an
/// included file) the places in the model that lead there: a secondary label at the model's
/// first call of the enclosing library function ("called here"), and one at the `include` line.
/// Diagnostics about the model itself are returned unchanged.
pub fn locate_in_model(
    mut diag: Diagnostic<FileId>,
    program: &Program,
    model: FileId,
    included: &[IncludedFile],
) -> Diagnostic<FileId> {
    let Some(primary) = diag
        .labels
        .iter()
        .find(|l| l.style == codespan_reporting::diagnostic::LabelStyle::Primary)
        .map(|l| (l.file_id, l.range.clone()))
    else {
        return diag;
    };
    let Some(inc) = included.iter().find(|f| f.file == primary.0) else {
        // An error in the model about a call of a library function (wrong arity or argument
        // type): also show the library's definition.
        if let Some(f) = library_function_named_in(&diag.message, program, included)
            && !diag
                .labels
                .iter()
                .any(|l| l.file_id == f.name.span.file && l.range == f.name.span.range())
        {
            let name = included
                .iter()
                .find(|i| i.file == f.span.file)
                .map_or("", |i| i.name.as_str());
            diag.labels.push(
                Label::secondary(f.name.span.file, f.name.span.range())
                    .with_message(format!("`{}` is defined here, in `{name}`", f.name.name)),
            );
        }
        return diag;
    };
    let mut extra = Vec::new();
    // The library function that contains the error, and the model's first call of it.
    let enclosing = program.functions.iter().find(|f| {
        f.span.file == primary.0 && f.span.start <= primary.1.start && primary.1.end <= f.span.end
    });
    if let Some(f) = enclosing {
        if let Some(call) = first_call_in_file(program, &f.name.name, model) {
            extra.push(
                Label::secondary(call.file, call.range())
                    .with_message(format!("`{}` is called here", f.name.name)),
            );
        }
        diag.notes.push(format!(
            "note: inside the library function `{}` of `{}`",
            f.name.name, inc.name
        ));
    }
    // The include line in the model, following nested includes back to the model file.
    let mut at = inc.included_at;
    let mut guard = 0;
    while at.file != model && guard <= included.len() {
        match included.iter().find(|f| f.file == at.file) {
            Some(parent) => at = parent.included_at,
            None => break,
        }
        guard += 1;
    }
    extra.push(included_here(at, &inc.name));
    diag.labels.extend(extra);
    diag
}

/// The first name quoted in backticks in `message` that is a function defined in an included
/// file.
fn library_function_named_in<'p>(
    message: &str,
    program: &'p Program,
    included: &[IncludedFile],
) -> Option<&'p FunctionDef> {
    message.split('`').skip(1).step_by(2).find_map(|quoted| {
        program.functions.iter().find(|f| {
            f.body.is_some()
                && f.name.name == quoted
                && included.iter().any(|i| i.file == f.span.file)
        })
    })
}

/// The span of the first call of `name` written in `file` (model blocks and the model's own
/// functions), searching in source order.
fn first_call_in_file(program: &Program, name: &str, file: FileId) -> Option<Span> {
    let mut found: Vec<Span> = Vec::new();
    let mut v = CallFinder {
        name,
        file,
        found: &mut found,
    };
    for f in &program.functions {
        if f.span.file == file
            && let Some(b) = &f.body
        {
            v.stmt(b);
        }
    }
    for d in program.data.iter().chain(&program.parameters) {
        v.decl(d);
    }
    for s in program
        .transformed_data
        .iter()
        .chain(&program.transformed_parameters)
        .chain(&program.model)
        .chain(&program.generated_quantities)
    {
        v.stmt(s);
    }
    found.into_iter().min_by_key(|s| s.start)
}

/// Collects the spans of calls of one function written in one file.
struct CallFinder<'a> {
    name: &'a str,
    file: FileId,
    found: &'a mut Vec<Span>,
}

impl CallFinder<'_> {
    fn decl(&mut self, d: &crate::syntax::ast::VarDecl) {
        for e in &d.ty.array_dims {
            self.expr(e);
        }
        if let Some(e) = &d.init {
            self.expr(e);
        }
    }

    fn lvalue(&mut self, l: &LValue) {
        for group in &l.indices {
            self.indices(group);
        }
    }

    fn indices(&mut self, idx: &[Index]) {
        for i in idx {
            match i {
                Index::Single(e) => self.expr(e),
                Index::Range(a, b) => {
                    for e in a.iter().chain(b.iter()) {
                        self.expr(e);
                    }
                }
                Index::All => {}
            }
        }
    }

    fn stmt(&mut self, s: &Stmt) {
        match &s.kind {
            StmtKind::Decl(d) => self.decl(d),
            StmtKind::Assign { lhs, rhs, .. } => {
                self.lvalue(lhs);
                self.expr(rhs);
            }
            StmtKind::Tilde {
                lhs,
                dist,
                args,
                truncation,
            } => {
                self.expr(lhs);
                let base = self.name.rsplit_once('_').map(|(b, _)| b);
                if dist.span.file == self.file && base == Some(dist.name.as_str()) {
                    self.found.push(s.span);
                }
                for a in args {
                    self.expr(a);
                }
                if let Some(t) = truncation {
                    for e in t.lower.iter().chain(t.upper.iter()) {
                        self.expr(e);
                    }
                }
            }
            StmtKind::TargetPlus(e) => self.expr(e),
            StmtKind::For { lo, hi, body, .. } => {
                self.expr(lo);
                self.expr(hi);
                self.stmt(body);
            }
            StmtKind::ForEach {
                collection, body, ..
            } => {
                self.expr(collection);
                self.stmt(body);
            }
            StmtKind::While { cond, body } => {
                self.expr(cond);
                self.stmt(body);
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                self.expr(cond);
                self.stmt(then);
                if let Some(o) = otherwise {
                    self.stmt(o);
                }
            }
            StmtKind::Block(b) => b.iter().for_each(|s| self.stmt(s)),
            StmtKind::Return(e) => e.iter().for_each(|e| self.expr(e)),
            StmtKind::Print(args) | StmtKind::Reject(args) => {
                for a in args {
                    if let PrintArg::Expr(e) = a {
                        self.expr(e);
                    }
                }
            }
            StmtKind::Expr(e) => self.expr(e),
            StmtKind::Break | StmtKind::Continue => {}
        }
    }

    fn expr(&mut self, e: &Expr) {
        match &e.kind {
            ExprKind::IntLit(_) | ExprKind::RealLit(_) | ExprKind::Var(_) => {}
            ExprKind::Binary { lhs, rhs, .. } => {
                self.expr(lhs);
                self.expr(rhs);
            }
            ExprKind::Unary { operand, .. } => self.expr(operand),
            ExprKind::Call { name, args, .. } => {
                if name.span.file == self.file && name.name == self.name {
                    self.found.push(e.span);
                }
                args.iter().for_each(|a| self.expr(a));
            }
            ExprKind::Index { base, indices } => {
                self.expr(base);
                self.indices(indices);
            }
            ExprKind::Ternary {
                cond,
                then,
                otherwise,
            } => {
                self.expr(cond);
                self.expr(then);
                self.expr(otherwise);
            }
            ExprKind::RowVectorLit(xs) | ExprKind::ArrayLit(xs) => {
                xs.iter().for_each(|x| self.expr(x))
            }
            ExprKind::Transpose(a) => self.expr(a),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_stdlib_module_parses_and_holds_only_functions() {
        for (name, text) in STDLIB {
            let p = parser::parse_program(text, 0)
                .unwrap_or_else(|e| panic!("stdlib/{name} does not parse: {e:?}"));
            assert!(!p.functions.is_empty(), "stdlib/{name} defines no function");
            assert!(check_library_blocks(&p, name, Span::default()).is_ok());
        }
    }

    fn check_in(dir: &Path, text: &str) -> Result<crate::pipeline::Checked, Vec<String>> {
        let mut sources = SourceMap::new();
        crate::pipeline::check_source_in(&mut sources, "model.bayes", text, Some(dir)).map_err(
            |f| {
                f.into_reports()
                    .iter()
                    .map(|d| crate::syntax::report::render_plain(&sources, d))
                    .collect()
            },
        )
    }

    #[test]
    fn a_file_beside_the_model_shadows_the_stdlib_module() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        std::fs::write(
            dir.path().join("timeseries.bayes"),
            "functions { real local_marker() { return 1; } }",
        )
        .expect("writable");
        let c = check_in(
            dir.path(),
            "include \"timeseries.bayes\";\nfunctions { real g() { return local_marker(); } }\n",
        )
        .expect("checks");
        let names: Vec<&str> = c
            .program
            .functions
            .iter()
            .map(|f| f.name.name.as_str())
            .collect();
        // Library functions first, then the model's own.
        assert_eq!(names, ["local_marker", "g"]);
        assert_eq!(c.includes.len(), 1);
        assert!(c.includes[0].name.ends_with("timeseries.bayes"));
        assert!(!c.includes[0].name.starts_with("stdlib/"));
    }

    #[test]
    fn stdlib_modules_are_registered_under_their_stdlib_name_once() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        // glm.bayes twice (directly and through a local library): read once, no redefinition.
        std::fs::write(
            dir.path().join("mine.bayes"),
            "include \"glm.bayes\";\nfunctions { real one() { return 1; } }",
        )
        .expect("writable");
        let c = check_in(
            dir.path(),
            "include \"glm.bayes\";\ninclude \"mine.bayes\";\ninclude \"glm.bayes\";\n",
        )
        .expect("checks");
        let names: Vec<&str> = c.includes.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names.len(), 2, "{names:?}");
        assert_eq!(names[0], "stdlib/glm.bayes");
        let n_linpred = c
            .program
            .functions
            .iter()
            .filter(|f| f.name.name == "linear_predictor")
            .count();
        assert_eq!(n_linpred, 1);
    }

    #[test]
    fn a_missing_include_names_where_it_looked() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let errors = check_in(dir.path(), "include \"nowhere.bayes\";\n").expect_err("fails");
        assert_eq!(errors.len(), 1);
        let e = &errors[0];
        assert!(
            e.contains("cannot find included file `nowhere.bayes`"),
            "{e}"
        );
        assert!(
            e.contains("nowhere.bayes`, then the installed stdlib"),
            "{e}"
        );
        assert!(e.contains("model.bayes:1:1"), "{e}");
    }

    #[test]
    fn stdlib_lookup_by_file_name() {
        assert!(stdlib_module("timeseries.bayes").is_some());
        assert!(stdlib_module("timeseries").is_none());
    }
}
