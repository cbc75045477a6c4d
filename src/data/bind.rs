//! Binding loaded data files to the declarations of the `data` block: finds each variable in the
//! sources, infers row-count sizes, and checks shapes, integer values, bounds and the simple
//! structured constraints (simplex, ordered, covariance and correlation matrices).

// Checks are written `!(v >= lo)` on purpose: a NaN value must fail them.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::distributions::Family;
use crate::syntax::Span;
use crate::syntax::ast::{Expr, ExprKind, Program, SizedBase, VarDecl};

use super::constraints::Locate;
use super::csv::{Cell, CsvSource, KEPT_CELLS};
use super::error::{DataError, DataErrorKind, count};
use super::eval::{eval_size, expr_string, type_string};
use super::json::{JsonArray, JsonSource};
use super::{BoundData, DataSource, DataValue};

mod checks;
mod missing;
mod support;

use checks::{check_outcome, outcomes};
use support::{Ranged, ranged_outcomes, sized_decls};

/// Largest value of a data `int` (32-bit, as in Stan: 2^31 − 1).
const INT_MAX: f64 = i32::MAX as f64;
/// Smallest value of a data `int` (−2^31).
const INT_MIN: f64 = i32::MIN as f64;

/// Binds `sources` to the `data` block of `program`; see [`bind_decls`].
/// Also checks the parameters' bounds that the data fix (lower < upper, see
/// `param_bounds`), so that bounds reversed in the data file are a data error here rather
/// than a failure of every evaluation of the model.
pub fn bind(program: &Program, sources: &[DataSource]) -> Result<BoundData, DataError> {
    bind_decls_inner(
        &program.data,
        sources,
        None,
        &program.parameters,
        outcomes(program),
        (ranged_outcomes(program), sized_decls(program)),
    )
}

/// Binds `sources` to the data declarations `decls`, in declaration order.
///
/// Each variable is looked up by name: a CSV column (1-D variables, or a scalar when the file has
/// exactly one row), CSV columns `X.1 … X.K` or `X[1] … X[K]` (2-D variables), or a JSON key.
/// An `int` scalar absent from every source is inferred from the row count of the CSV that gives
/// a later variable declared with that name as its first size. Sizes and bounds are evaluated by
/// the small evaluator of [`super::eval`]. The result holds every declared variable with its
/// declared dims, row-major values and `is_int`; extra columns and keys are ignored.
///
/// Errors: every [`DataErrorKind`] of binding (missing, duplicate, size or shape mismatch,
/// non-integer, missing cell, bound or constraint violation), each naming file, row and column
/// (or key and element) and carrying the declaration's span: the first, with every further
/// error that does not follow from an earlier one in [`DataError::also`].
pub fn bind_decls(decls: &[VarDecl], sources: &[DataSource]) -> Result<BoundData, DataError> {
    bind_decls_inner(
        decls,
        sources,
        None,
        &[],
        HashMap::new(),
        (Vec::new(), HashMap::new()),
    )
}

/// Binds `sources` to the `data` block of `program` as [`bind`] does, except that the variable
/// `unobserved` (an outcome to be predicted) may be absent from every source: it is then bound
/// with its declared dims (evaluated from the other data) and every value NaN. Arithmetic
/// propagates the NaN, but not every function does (the log mass of some discrete families
/// treats a NaN variate as 0), so callers must not report quantities computed from it. When a
/// source does give it, it is bound and checked as usual.
///
/// Errors: those of [`bind_decls`].
pub fn bind_unobserved(
    program: &Program,
    sources: &[DataSource],
    unobserved: &str,
) -> Result<BoundData, DataError> {
    bind_decls_inner(
        &program.data,
        sources,
        Some(unobserved),
        &program.parameters,
        outcomes(program),
        (ranged_outcomes(program), sized_decls(program)),
    )
}

fn bind_decls_inner(
    decls: &[VarDecl],
    sources: &[DataSource],
    unobserved: Option<&str>,
    params: &[VarDecl],
    outcomes: HashMap<String, (Family, Span)>,
    (ranged, sized): (Vec<Ranged>, HashMap<String, VarDecl>),
) -> Result<BoundData, DataError> {
    let mut binder = Binder {
        decls,
        sources,
        bound: BoundData::default(),
        origins: HashMap::new(),
        inferred: HashSet::new(),
        unobserved,
        outcomes,
        provs: HashMap::new(),
        sized: &sized,
    };
    // every independent error in one run: a declaration whose sizes or bounds read a
    // variable that failed is skipped (its error would follow from that one), and one
    // missing-variable error lists every variable missing from there on
    let mut errors: Vec<DataError> = Vec::new();
    let mut failed: Vec<&str> = Vec::new();
    let mut missing_reported = false;
    for (i, decl) in decls.iter().enumerate() {
        let name = decl.name.name.as_str();
        if failed.iter().any(|f| reads(decl, f)) {
            failed.push(name);
            continue;
        }
        if let Err(e) = binder.bind_one(i, decl) {
            failed.push(name);
            if e.kind == DataErrorKind::MissingVariable {
                if missing_reported {
                    continue;
                }
                missing_reported = true;
            }
            errors.push(e.with_declaration(decl.span));
        }
    }
    errors.extend(binder.check_supports(&ranged, &sized));
    if let Some(e) = DataError::all(errors) {
        return Err(e);
    }
    super::param_bounds::check_parameter_bounds(params, &binder.bound, &binder.origins)?;
    Ok(binder.bound)
}

/// Whether the sizes or bounds of `decl` read the variable `name`.
fn reads(decl: &VarDecl, name: &str) -> bool {
    let c = &decl.ty.constraint;
    decl.ty.size_exprs().iter().any(|e| e.mentions(name))
        || [&c.lower, &c.upper, &c.offset, &c.multiplier]
            .into_iter()
            .flatten()
            .any(|e| e.mentions(name))
}

/// Where a declared variable was found.
enum Found<'a> {
    /// One CSV column with the variable's name.
    Column { src: &'a CsvSource, col: usize },
    /// CSV columns `X.j` / `X[j]`: `(j, column index)` sorted by `j` (1-based).
    Columns {
        src: &'a CsvSource,
        cols: Vec<(usize, usize)>,
    },
    /// A JSON key.
    Json {
        src: &'a JsonSource,
        key: &'a str,
        entry: &'a Result<JsonArray, DataError>,
    },
}

impl Found<'_> {
    fn describe(&self) -> String {
        match self {
            Found::Column { src, col } => format!("{} (column `{}`)", src.name, src.header[*col]),
            Found::Columns { src, cols } => format!(
                "{} (columns {})",
                src.name,
                column_range(src, cols.iter().map(|&(_, c)| c))
            ),
            Found::Json { src, key, .. } => format!("{} (key `{key}`)", src.name),
        }
    }

    fn csv(&self) -> Option<&CsvSource> {
        match self {
            Found::Column { src, .. } | Found::Columns { src, .. } => Some(src),
            Found::Json { .. } => None,
        }
    }
}

/// "`X.1` … `X.7`", or the single column.
fn column_range(src: &CsvSource, mut cols: impl Iterator<Item = usize>) -> String {
    let first = cols.next();
    let last = cols.last();
    match (first, last) {
        (Some(a), Some(b)) => format!("`{}` … `{}`", src.header[a], src.header[b]),
        (Some(a), None) => format!("`{}`", src.header[a]),
        _ => String::new(),
    }
}

/// Per-value provenance of a bound variable, for messages.
enum Provenance<'a> {
    Column {
        src: &'a CsvSource,
        col: usize,
    },
    /// Row-major over (rows, `cols.len()`), or column-major when `column_major` holds the
    /// number of rows.
    Columns {
        src: &'a CsvSource,
        cols: Vec<usize>,
        column_major: Option<usize>,
    },
    Json {
        src: &'a JsonSource,
        key: &'a str,
        dims: Vec<usize>,
    },
    Inferred {
        text: String,
    },
}

impl Locate for Provenance<'_> {
    /// Names element `flat` (row-major over the declared dims).
    fn locate(&self, flat: usize) -> String {
        match self {
            Provenance::Column { src, col } => {
                format!("{}, column `{}`", src.row_location(flat), src.header[*col])
            }
            Provenance::Columns {
                src,
                cols,
                column_major: Some(rows),
            } => {
                let rows = (*rows).max(1);
                format!(
                    "{}, column `{}`",
                    src.row_location(flat % rows),
                    src.header[cols[(flat / rows).min(cols.len().saturating_sub(1))]]
                )
            }
            Provenance::Columns { src, cols, .. } => {
                let k = cols.len().max(1);
                format!(
                    "{}, column `{}`",
                    src.row_location(flat / k),
                    src.header[cols[flat % k]]
                )
            }
            Provenance::Json { src, key, dims } => src.element_location(key, dims, flat),
            Provenance::Inferred { text } => text.clone(),
        }
    }

    /// Names the whole value.
    fn whole(&self) -> String {
        match self {
            Provenance::Column { src, col } => {
                format!("{}, column `{}`", src.name, src.header[*col])
            }
            Provenance::Columns { src, cols, .. } => format!(
                "{}, columns {}",
                src.name,
                column_range(src, cols.iter().copied())
            ),
            Provenance::Json { src, key, .. } => format!("{}, key `{key}`", src.name),
            Provenance::Inferred { text } => text.clone(),
        }
    }
}

impl Provenance<'_> {
    /// Where a scalar's value came from, for the notes of size messages.
    fn origin(&self) -> String {
        match self {
            Provenance::Inferred { text } => text.clone(),
            other => format!("from {}", other.whole()),
        }
    }
}

struct Binder<'a> {
    decls: &'a [VarDecl],
    sources: &'a [DataSource],
    bound: BoundData,
    /// For each bound scalar, where its value came from ("from d.json, key `N`").
    origins: HashMap<String, String>,
    /// The sizes inferred from a CSV row count.
    inferred: HashSet<String>,
    /// A variable that may be absent (bound as NaN); see [`bind_unobserved`].
    unobserved: Option<&'a str>,
    /// Outcomes of unconditional `~` statements, checked against their family's support.
    outcomes: HashMap<String, (Family, Span)>,
    /// Where each variable bound from a source came from, for the messages of the checks
    /// made once every variable is bound (`support`).
    provs: HashMap<String, Provenance<'a>>,
    /// The declarations outside `data` whose sizes may name data ([`support::sized_decls`]).
    sized: &'a HashMap<String, VarDecl>,
}

/// The declared dims of a declaration with the expression that gave each one
/// ([`crate::syntax::ast::SizedType::size_exprs`]).
fn size_exprs(decl: &VarDecl) -> Vec<&Expr> {
    decl.ty.size_exprs()
}

/// `j` when `header` is `name.j` or `name[j]` with `j ≥ 1`.
fn indexed_column(header: &str, name: &str) -> Option<usize> {
    let rest = header.strip_prefix(name)?;
    let digits = rest
        .strip_prefix('.')
        .or_else(|| rest.strip_prefix('[').and_then(|r| r.strip_suffix(']')))?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<usize>().ok().filter(|&j| j >= 1)
}

fn fmt_dims(dims: &[usize]) -> String {
    let d: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
    format!("[{}]", d.join(", "))
}

impl<'a> Binder<'a> {
    fn bind_one(&mut self, index: usize, decl: &'a VarDecl) -> Result<(), DataError> {
        let name = decl.name.name.as_str();
        let is_int = matches!(decl.ty.base, SizedBase::Int);
        let found = match self.find(name)? {
            Some(found) => found,
            None => {
                let scalar_int = is_int && decl.ty.array_dims.is_empty();
                if scalar_int && let Some((rows, text)) = self.infer_size(index, name)? {
                    let prov = Provenance::Inferred { text };
                    let values = Arc::new(vec![rows as f64]);
                    self.check_values(decl, &[], &values, &prov)?;
                    self.origins.insert(name.to_string(), prov.origin());
                    self.inferred.insert(name.to_string());
                    self.insert(name, Vec::new(), values, true);
                    return Ok(());
                }
                if self.unobserved == Some(name) {
                    let dims = self.dims(decl, &size_exprs(decl))?;
                    let values = Arc::new(vec![f64::NAN; dims.iter().product()]);
                    self.insert(name, dims, values, is_int);
                    return Ok(());
                }
                return Err(self.missing(index, decl));
            }
        };
        let exprs = size_exprs(decl);
        let dims = self.dims(decl, &exprs)?;
        let (values, prov) = match found {
            Found::Column { src, col } => self.column_value(decl, &dims, &exprs, src, col)?,
            Found::Columns { src, cols } => self.columns_value(decl, &dims, &exprs, src, &cols)?,
            Found::Json { src, key, entry } => {
                let arr = entry.as_ref().map_err(Clone::clone)?;
                self.check_json_dims(decl, &dims, &exprs, src, arr)?;
                let prov = Provenance::Json {
                    src,
                    key,
                    dims: dims.clone(),
                };
                (Arc::clone(&arr.values), prov)
            }
        };
        self.check_values(decl, &dims, &values, &prov)?;
        if let Some(&(family, span)) = self.outcomes.get(name) {
            check_outcome(decl, family, span, &values, &prov)?;
        }
        self.origins.insert(name.to_string(), prov.origin());
        let column_major = matches!(
            prov,
            Provenance::Columns {
                column_major: Some(_),
                ..
            }
        );
        self.insert_ordered(name, dims, values, is_int, column_major);
        self.provs.insert(name.to_string(), prov);
        Ok(())
    }

    /// The declared dims of `decl`, evaluated from the data bound so far.
    fn dims(&self, decl: &VarDecl, exprs: &[&Expr]) -> Result<Vec<usize>, DataError> {
        let name = decl.name.name.as_str();
        let mut dims = Vec::with_capacity(exprs.len());
        for e in exprs {
            let n = eval_size(e, &self.bound, name)?;
            let n = usize::try_from(n).map_err(|_| {
                DataError::new(
                    DataErrorKind::UnsupportedExpression,
                    format!(
                        "the size `{}` of `{name}` is {n}, but sizes must not be negative",
                        expr_string(e)
                    ),
                )
                .with_primary(e.span, format!("evaluates to {n}"))
                .with_help("check the values of the sizes it uses")
            })?;
            dims.push(n);
        }
        Ok(dims)
    }

    fn insert(&mut self, name: &str, dims: Vec<usize>, values: Arc<Vec<f64>>, is_int: bool) {
        self.insert_ordered(name, dims, values, is_int, false);
    }

    fn insert_ordered(
        &mut self,
        name: &str,
        dims: Vec<usize>,
        values: Arc<Vec<f64>>,
        is_int: bool,
        column_major: bool,
    ) {
        self.bound.values.insert(
            name.to_string(),
            DataValue {
                dims,
                values,
                is_int,
                column_major,
            },
        );
    }

    /// Looks `name` up in every source; two hits are a [`DataErrorKind::Duplicate`].
    fn find(&self, name: &str) -> Result<Option<Found<'a>>, DataError> {
        let mut hits: Vec<Found<'a>> = Vec::new();
        for source in self.sources {
            match source {
                DataSource::Csv(src) => {
                    if let Some(col) = src.column_index(name) {
                        hits.push(Found::Column { src, col });
                    } else {
                        let mut cols: Vec<(usize, usize)> = src
                            .header
                            .iter()
                            .enumerate()
                            .filter_map(|(c, h)| indexed_column(h, name).map(|j| (j, c)))
                            .collect();
                        if !cols.is_empty() {
                            cols.sort();
                            hits.push(Found::Columns { src, cols });
                        }
                    }
                }
                DataSource::Json(src) => {
                    if let Some((key, entry)) = src.entries.get_key_value(name) {
                        hits.push(Found::Json {
                            src,
                            key: key.as_str(),
                            entry,
                        });
                    }
                }
            }
        }
        if hits.len() > 1 {
            return Err(DataError::new(
                DataErrorKind::Duplicate,
                format!(
                    "`{name}` is defined twice: in {} and in {}",
                    hits[0].describe(),
                    hits[1].describe()
                ),
            )
            .with_help(format!(
                "remove `{name}` from one of the files, so that its value is unambiguous"
            )));
        }
        Ok(hits.pop())
    }

    /// The value of a missing size `name` from a later variable whose first size it is: the row
    /// count of the CSV giving it, or the first dimension of its JSON array (when the array has
    /// the declared number of dimensions), with the provenance text. Errors: the later variable
    /// is in a JSON file with the wrong number of dimensions ([`DataErrorKind::ShapeMismatch`];
    /// reported here, as it is the real problem, rather than the missing size).
    fn infer_size(&self, index: usize, name: &str) -> Result<Option<(usize, String)>, DataError> {
        for later in &self.decls[index + 1..] {
            let exprs = size_exprs(later);
            let Some(Expr {
                kind: ExprKind::Var(v),
                ..
            }) = exprs.first()
            else {
                continue;
            };
            if v != name {
                continue;
            }
            let via = &later.name.name;
            // a duplicate definition of `via` is the real problem: report it, not the size
            match self.find(via).map_err(|e| e.with_declaration(later.span))? {
                Some(Found::Json {
                    src,
                    entry: Ok(arr),
                    ..
                }) => {
                    if arr.dims.len() == exprs.len() {
                        let n = arr.dims[0];
                        return Ok(Some((
                            n,
                            format!("inferred from the length {n} of `{via}` in {}", src.name),
                        )));
                    }
                    return Err(DataError::new(
                        DataErrorKind::ShapeMismatch,
                        format!(
                            "{}, key `{via}`: `{via}` is declared `{}` ({} dimension{}), but the \
                             value has {}",
                            src.name,
                            type_string(&later.ty),
                            exprs.len(),
                            if exprs.len() == 1 { "" } else { "s" },
                            if arr.dims.is_empty() {
                                "a single number".to_string()
                            } else {
                                format!("{} dimensions {}", arr.dims.len(), fmt_dims(&arr.dims))
                            }
                        ),
                    )
                    .with_help(
                        "give a number for a scalar, an array for a vector, and nested arrays for \
                         more dimensions (a matrix is an array of its rows)",
                    )
                    .with_declaration(later.span));
                }
                Some(found) => {
                    if let Some(src) = found.csv() {
                        let rows = src.n_rows();
                        return Ok(Some((
                            rows,
                            format!(
                                "inferred from the {rows} rows of {}, which gives `{via}`",
                                src.name
                            ),
                        )));
                    }
                }
                None => {}
            }
        }
        Ok(None)
    }

    /// "`N` = 753 (inferred from …)" or "`N + 1` = 754".
    fn size_desc(&self, expr: &Expr, value: usize) -> String {
        match &expr.kind {
            ExprKind::Var(v) => match self.origins.get(v) {
                Some(origin) => format!("`{v}` = {value} ({origin})"),
                None => format!("`{v}` = {value}"),
            },
            // a literal size is its own value: "size 3", not "`3` = 3" ([X] session 21)
            ExprKind::IntLit(_) => format!("size {value}"),
            _ => format!("`{}` = {value}", expr_string(expr)),
        }
    }

    fn check_rows(
        &self,
        decl: &VarDecl,
        dims: &[usize],
        exprs: &[&Expr],
        src: &CsvSource,
        what: &str,
    ) -> Result<(), DataError> {
        if dims[0] == src.n_rows() {
            return Ok(());
        }
        let name = &decl.name.name;
        let mut err = DataError::new(
            DataErrorKind::SizeMismatch,
            format!(
                "`{name}` is declared `{}` with {}, but {} has {} rows ({what})",
                type_string(&decl.ty),
                self.size_desc(exprs[0], dims[0]),
                src.name,
                src.n_rows()
            ),
        );
        if let ExprKind::Var(v) = &exprs[0].kind
            && self.inferred.contains(v)
        {
            err = err.with_help(format!(
                "`{v}` was inferred from another file's row count; every CSV file that gives a \
                 variable of size `{v}` must have the same number of rows"
            ));
        } else if let ExprKind::Var(v) = &exprs[0].kind {
            err = err.with_help(format!(
                "make `{v}` agree with the file, or leave `{v}` out of the data files so that it \
                 is inferred from the number of rows"
            ));
        } else {
            err = err.with_help("make the declared size agree with the number of rows");
        }
        Err(err)
    }

    fn column_value(
        &self,
        decl: &VarDecl,
        dims: &[usize],
        exprs: &[&Expr],
        src: &'a CsvSource,
        col: usize,
    ) -> Result<(Arc<Vec<f64>>, Provenance<'a>), DataError> {
        let name = &decl.name.name;
        let ty = type_string(&decl.ty);
        match dims.len() {
            0 if src.n_rows() != 1 => {
                return Err(DataError::new(
                    DataErrorKind::ShapeMismatch,
                    format!(
                        "`{name}` is declared as the scalar `{ty}`, but {} gives it as column \
                         `{name}` with {} rows; a CSV column binds to a one-dimensional variable, \
                         and to a scalar only when the file has exactly one row",
                        src.name,
                        src.n_rows()
                    ),
                )
                .with_help(format!(
                    "give `{name}` in a JSON file (e.g. {{\"{name}\": 3}}) or in a CSV file of \
                     one row, or declare it as an array"
                )));
            }
            0 => {}
            1 => self.check_rows(decl, dims, exprs, src, &format!("column `{name}`"))?,
            rank => {
                let cols = exprs
                    .get(1)
                    .map(|e| expr_string(e))
                    .unwrap_or_else(|| "K".into());
                return Err(DataError::new(
                    DataErrorKind::ShapeMismatch,
                    format!(
                        "`{name}` is declared `{ty}` ({rank} dimensions), but {} gives a single \
                         column `{name}`",
                        src.name
                    ),
                )
                .with_help(format!(
                    "give a 2-dimensional variable as columns `{name}.1` … `{name}.{cols}` (or \
                     `{name}[1]` … `{name}[{cols}]`), or use a JSON file"
                )));
            }
        }
        let column = &src.columns[col].values;
        let rows = src.n_rows().min(dims.first().copied().unwrap_or(1));
        let bad = bad_cell(decl);
        // A scalar may be infinite, as in JSON ("Infinity") and CmdStan: `inf`, `-inf`,
        // `Infinity` written in the file (not a number that overflows); its declared bounds and
        // type are checked with the other values (`check_values`).
        let scalar_inf = |row: usize, v: &f64| {
            dims.is_empty()
                && v.is_infinite()
                && matches!(src.columns[col].cell(row), Some(Cell::Number(_)))
        };
        if let Some(row) = (0..rows).find(|&r| bad(&column[r]) && !scalar_inf(r, &column[r])) {
            return Err(cell_value(src, col, row, name).expect_err("a non-finite cell is an error"));
        }
        // The whole column: shared with the source, not copied.
        let values = if rows == column.len() {
            Arc::clone(column)
        } else {
            Arc::new(column[..rows].to_vec())
        };
        Ok((values, Provenance::Column { src, col }))
    }

    fn columns_value(
        &self,
        decl: &VarDecl,
        dims: &[usize],
        exprs: &[&Expr],
        src: &'a CsvSource,
        cols: &[(usize, usize)],
    ) -> Result<(Arc<Vec<f64>>, Provenance<'a>), DataError> {
        let name = &decl.name.name;
        let ty = type_string(&decl.ty);
        let found = column_range(src, cols.iter().map(|&(_, c)| c));
        if dims.len() != 2 {
            return Err(DataError::new(
                DataErrorKind::ShapeMismatch,
                format!(
                    "`{name}` is declared `{ty}` ({}), but {} gives it as columns {found}",
                    count(dims.len(), "dimension"),
                    src.name
                ),
            )
            .with_help(
                "numbered columns bind to 2-dimensional variables only (`matrix[N, K]`, \
                 `array[N] vector[K]`, `array[N, K] real`); use a JSON file for other shapes",
            ));
        }
        let k = dims[1];
        let complete = cols.len() == k && cols.iter().enumerate().all(|(i, &(j, _))| j == i + 1);
        if !complete {
            let js: Vec<String> = cols
                .iter()
                .map(|&(_, c)| format!("`{}`", src.header[c]))
                .collect();
            return Err(DataError::new(
                DataErrorKind::SizeMismatch,
                format!(
                    "{} has the columns {} for `{name}`, but `{name}` is declared `{ty}` with {}, \
                     so it needs the columns `{name}.1` … `{name}.{k}`",
                    src.name,
                    js.join(", "),
                    match &exprs[1].kind {
                        ExprKind::IntLit(_) => count(k, "column"),
                        _ => self.size_desc(exprs[1], k),
                    }
                ),
            )
            .with_help(format!(
                "give exactly one column per column of `{name}`, numbered from 1 (`{name}.1` or `{name}[1]`)"
            )));
        }
        self.check_rows(decl, dims, exprs, src, &format!("columns {found}"))?;
        let mut values = Vec::with_capacity(dims[0] * k);
        // A `matrix` is stored column-major, the graph's layout: its columns are appended
        // whole (no transposition later). Other 2-D shapes (arrays of vectors, 2-D arrays) are
        // row-major.
        let column_major =
            matches!(decl.ty.base, SizedBase::Matrix(..)) && decl.ty.array_dims.is_empty();
        let bad = bad_cell(decl);
        if column_major {
            for &(_, c) in cols {
                let column = &src.columns[c].values[..dims[0]];
                if let Some(row) = column.iter().position(bad) {
                    return Err(cell_value(src, c, row, name).expect_err("a non-finite cell"));
                }
                values.extend_from_slice(column);
            }
        } else {
            for row in 0..dims[0] {
                for &(_, c) in cols {
                    let v = src.columns[c].values[row];
                    if bad(&v) {
                        return Err(cell_value(src, c, row, name).expect_err("a non-finite cell"));
                    }
                    values.push(v);
                }
            }
        }
        let values = Arc::new(values);
        let prov = Provenance::Columns {
            src,
            cols: cols.iter().map(|&(_, c)| c).collect(),
            column_major: column_major.then_some(dims[0]),
        };
        Ok((values, prov))
    }

    fn check_json_dims(
        &self,
        decl: &VarDecl,
        dims: &[usize],
        exprs: &[&Expr],
        src: &JsonSource,
        arr: &JsonArray,
    ) -> Result<(), DataError> {
        if arr.dims == dims {
            return Ok(());
        }
        // `contains(&0)` rather than a product, which could overflow for absurd declared sizes.
        if dims.contains(&0) && arr.values.is_empty() && !arr.dims.is_empty() {
            // An empty array stands for any empty value (`[]` for `matrix[0, 3]`).
            return Ok(());
        }
        let name = &decl.name.name;
        let ty = type_string(&decl.ty);
        let help = "give a number for a scalar, an array for a vector, and nested arrays for \
                    more dimensions (a matrix is an array of its rows)";
        if arr.dims.len() != dims.len() {
            let found = if arr.dims.is_empty() {
                "a single number".to_string()
            } else {
                format!(
                    "{} dimension{} {}",
                    arr.dims.len(),
                    if arr.dims.len() == 1 { "" } else { "s" },
                    fmt_dims(&arr.dims)
                )
            };
            let declared = if dims.is_empty() {
                "a scalar".to_string()
            } else {
                format!("{} dimensions {}", dims.len(), fmt_dims(dims))
            };
            return Err(DataError::new(
                DataErrorKind::ShapeMismatch,
                format!(
                    "{}, key `{name}`: `{name}` is declared `{ty}` ({declared}), but the value has {found}",
                    src.name
                ),
            )
            .with_help(help));
        }
        let d = (0..dims.len())
            .find(|&d| dims[d] != arr.dims[d])
            .expect("dims differ and have the same length, so some entry differs");
        let msg = if dims.len() == 1 {
            format!(
                "{}, key `{name}`: `{name}` has {}, but it is declared `{ty}` with {}",
                src.name,
                count(arr.dims[0], "element"),
                self.size_desc(exprs[0], dims[0])
            )
        } else {
            format!(
                "{}, key `{name}`: dimension {} of `{name}` has {} (the value's \
                 dimensions are {}), but `{name}` is declared `{ty}`, whose dimension {} has {}",
                src.name,
                d + 1,
                count(arr.dims[d], "element"),
                fmt_dims(&arr.dims),
                d + 1,
                self.size_desc(exprs[d], dims[d])
            )
        };
        Err(DataError::new(DataErrorKind::SizeMismatch, msg)
            .with_help("make the declared sizes agree with the data"))
    }
}

/// Whether `decl` may have missing entries (`@missing`: the fit imputes them,
/// docs/missing_data.md).
pub(super) fn allows_missing(decl: &VarDecl) -> bool {
    decl.annotations.iter().any(|a| a.name.name == "missing")
}

/// The test for a CSV value that `decl` cannot take: not finite, or infinite only when the
/// declaration allows missing entries (a missing cell is NaN).
fn bad_cell(decl: &VarDecl) -> fn(&f64) -> bool {
    if allows_missing(decl) {
        |v| v.is_infinite()
    } else {
        |v| !v.is_finite()
    }
}

/// The value of data row `row` of column `col`, or the error for a missing or non-numeric cell.
fn cell_value(src: &CsvSource, col: usize, row: usize, name: &str) -> Result<f64, DataError> {
    let loc = || format!("{}, column `{}`", src.row_location(row), src.header[col]);
    match src.columns[col].cell(row) {
        Some(Cell::Number(v)) if v.is_finite() => Ok(v),
        Some(Cell::Number(v)) => Err(DataError::new(
            DataErrorKind::NotFinite,
            format!(
                "{}: `{v}` is not a finite number, but `{name}` needs finite values",
                loc()
            ),
        )
        .with_help(
            "replace the value with a finite number, or remove the row; an infinite observation \
             makes the log density -inf at every parameter value (an infinite value is accepted \
             for a scalar only, e.g. a bound `U` in a one-row file, as in JSON)",
        )),
        Some(Cell::Overflow(raw)) => Err(DataError::new(
            DataErrorKind::Overflow,
            format!(
                "{}: `{raw}` overflows a 64-bit float (the largest is about 1.8e308), but `{name}` \
                 needs finite values",
                loc()
            ),
        )
        .with_help(
            "check the value (a typo in the exponent?); to keep it, rescale the column, e.g. \
             store it in units of 1e300",
        )),
        Some(Cell::Missing(raw)) => {
            let what = if raw.is_empty() {
                "an empty cell".to_string()
            } else {
                format!("`{raw}`")
            };
            Err(DataError::new(
                DataErrorKind::MissingValue,
                format!(
                    "{}: missing value ({what}), but `{name}` needs a number in every row",
                    loc()
                ),
            )
            .with_help(
                "fill in the value, or remove the row (sizes inferred from the row count follow); \
                 or declare the variable `@missing` to impute its missing entries \
                 (docs/missing_data.md)",
            ))
        }
        Some(Cell::Text(raw)) => Err(DataError::new(
            DataErrorKind::NotANumber,
            format!(
                "{}: `{raw}` is not a number, but the column binds to `{name}`",
                loc()
            ),
        )
        .with_help(match super::decimal_comma::with_point(&raw) {
            Some(point) => super::decimal_comma::cell_help(&raw, &point),
            None => "data values must be numbers such as `3`, `-0.5` or `1e-3`".to_string(),
        })),
        None => Err(DataError::new(
            DataErrorKind::NotANumber,
            format!(
                "{}: not a number (the column has more than {KEPT_CELLS} cells that are not \
                 numbers, and only the first {KEPT_CELLS} are kept as written), but the column \
                 binds to `{name}`",
                loc()
            ),
        )
        .with_help("data values must be numbers such as `3`, `-0.5` or `1e-3`")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indexed_column_names() {
        assert_eq!(indexed_column("X.3", "X"), Some(3));
        assert_eq!(indexed_column("X[12]", "X"), Some(12));
        assert_eq!(indexed_column("X.0", "X"), None);
        assert_eq!(indexed_column("X.a", "X"), None);
        assert_eq!(indexed_column("XY.1", "X"), None);
        assert_eq!(indexed_column("X[1", "X"), None);
    }
}
