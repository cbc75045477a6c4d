//! Data files → values bound to the `data` block: CSV (one column per variable) and JSON in
//! Stan's data format, checked against the declared types, sizes and bounds.

// `DataError` is large (message, spans, notes, help); errors are the cold path, so it is not boxed.
#![allow(clippy::result_large_err)]

use std::collections::BTreeMap;
use std::sync::Arc;

/// One data variable's value, in a layout independent of the graph.
///
/// `dims` are the declared sizes, outermost first: `[]` for a scalar, `[N]` for `vector[N]` or
/// `array[N] int`, `[R, C]` for `matrix[R, C]`, `[N, K]` for `array[N] vector[K]`.
/// `values` holds the elements in row-major (C) order over `dims` (a matrix bound from CSV columns:
/// column-major, see [`DataValue::column_major`]), integers stored exactly as f64.
/// It is shared, not copied: a variable bound to a whole CSV column or JSON array holds the
/// source's buffer, and the compiled model holds the same one (docs/memory.md).
#[derive(Clone, Debug, PartialEq)]
pub struct DataValue {
    pub dims: Vec<usize>,
    pub values: Arc<Vec<f64>>,
    /// True when declared `int` (every value is then an exact integer).
    pub is_int: bool,
    /// True when a `matrix` is held column-major instead (each column contiguous, the graph's
    /// layout): a matrix bound from CSV columns `X.1 … X.K` is built by appending its columns,
    /// so that it is never transposed (docs/memory.md).
    pub column_major: bool,
}

/// All data variables of a program after binding, by name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BoundData {
    pub values: BTreeMap<String, DataValue>,
}

pub mod bind;
pub mod constraints;
pub mod csv;
mod decimal_comma;
pub mod error;
pub mod eval;
pub mod json;
mod param_bounds;
pub mod suggest;

use std::path::Path;

pub use bind::{bind, bind_decls, bind_unobserved};
pub use error::{DataError, DataErrorKind};

/// One loaded data file, remembering its display name (path) and, per value, where it came from
/// (CSV row, file line and column; JSON key and element).
#[derive(Clone, Debug, PartialEq)]
pub enum DataSource {
    /// A CSV file: one variable per column.
    Csv(csv::CsvSource),
    /// A JSON file in Stan's data format.
    Json(json::JsonSource),
}

impl DataSource {
    /// The display name given when loading (the path for [`load`]).
    pub fn name(&self) -> &str {
        match self {
            DataSource::Csv(c) => &c.name,
            DataSource::Json(j) => &j.name,
        }
    }
}

/// Loads a data file, choosing the format by its extension (`.csv` or `.json`, any case).
///
/// Errors: [`DataErrorKind::UnknownExtension`] (naming the supported ones), [`DataErrorKind::Io`]
/// (unreadable, or not UTF-8 text), and the format's errors ([`load_csv_str`], [`load_json_str`]).
pub fn load(path: &Path) -> Result<DataSource, DataError> {
    let shown = path.display().to_string();
    if path.is_dir() {
        return Err(DataError::new(
            DataErrorKind::Io,
            format!("data path `{shown}` is a directory, not a data file"),
        )
        .with_help(
            "give the .csv or .json file inside it, e.g. `--data examples/labour/labour.csv`",
        ));
    }
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(|e| e.to_ascii_lowercase());
    let is_csv = match ext.as_deref() {
        Some("csv") => true,
        Some("json") => false,
        None if !path.exists() => {
            return Err(DataError::new(
                DataErrorKind::Io,
                format!("data file `{shown}` does not exist"),
            )
            .with_help("check the path (relative paths are taken from the current directory)"));
        }
        other => {
            let what = match other {
                Some(e) => format!("has the extension `.{e}`"),
                None => "has no extension".to_string(),
            };
            return Err(DataError::new(
                DataErrorKind::UnknownExtension,
                format!("data file `{shown}` {what}; the supported data formats are .csv and .json"),
            )
            .with_help("rename the file to end in .csv (a header row, one column per variable) or .json (Stan's JSON data format)"));
        }
    };
    let file = std::fs::File::open(path).map_err(|e| {
        DataError::new(
            DataErrorKind::Io,
            format!("cannot read data file `{shown}`: {e}"),
        )
        .with_help("check the path (relative paths are taken from the current directory)")
    })?;
    if is_csv {
        // streamed: the text is never held whole
        let size = file.metadata().ok().map(|m| m.len());
        return csv::parse_reader_sized(&shown, file, size).map(DataSource::Csv);
    }
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut std::io::BufReader::new(file), &mut bytes).map_err(|e| {
        DataError::new(
            DataErrorKind::Io,
            format!("cannot read data file `{shown}`: {e}"),
        )
        .with_help("check the path (relative paths are taken from the current directory)")
    })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        DataError::new(
            DataErrorKind::Io,
            format!(
                "data file `{shown}` is not UTF-8 text (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
        )
        .with_help("save the file as UTF-8")
    })?;
    load_json_str(&shown, &text)
}

/// Parses CSV text shown as `name` in messages (for tests and the REPL); see [`csv::parse_csv`].
pub fn load_csv_str(name: &str, text: &str) -> Result<DataSource, DataError> {
    csv::parse_csv(name, text).map(DataSource::Csv)
}

/// Parses JSON text shown as `name` in messages (for tests and the REPL); see
/// [`json::parse_json`].
pub fn load_json_str(name: &str, text: &str) -> Result<DataSource, DataError> {
    json::parse_json(name, text).map(DataSource::Json)
}
