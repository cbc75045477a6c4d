//! CSV data files: a header row naming the columns, one value per cell, streamed row by row
//! (the csv crate's reader with one reused `ByteRecord`) into one `f64` buffer per column, so
//! that a loaded file takes about 8 bytes per cell. Cells that are not numbers (missing values,
//! text) are kept only for messages (see [`Column`]), so that unused text columns (dates,
//! labels) never cause an error and cost no more than a number.

use std::cell::RefCell;
use std::io::{self, BufRead, Read};
use std::rc::Rc;
use std::sync::Arc;

use super::error::{DataError, DataErrorKind, count};

/// One cell of a CSV column, after trimming whitespace.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// A number (Rust's `f64` syntax: `3`, `-0.5`, `1e-3`, `inf`).
    Number(f64),
    /// A missing value: empty, `NA`, `NaN`, `nan`, `.` (any spelling that parses to NaN), kept
    /// as written for messages.
    Missing(String),
    /// Anything else, kept as written.
    Text(String),
    /// A number too large in magnitude for a 64-bit float (`2e400`), kept as written: Rust's
    /// parser rounds it to ±inf, which binding refuses with its own message rather than as the
    /// `inf` the file does not say.
    Overflow(String),
}

/// How many non-numeric cells a column keeps as written (for messages); further ones are only
/// marked by a NaN in [`Column::values`], so that a text column of a large file stays small.
pub const KEPT_CELLS: usize = 1000;

/// One CSV column: its values, and the cells that are not numbers.
#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    /// `values[r]` is data row `r` (0-based): the number, NaN for a cell that is not one, or
    /// ±inf for a [`Cell::Overflow`].
    /// Shared (not copied) with the bound data and the compiled model when a variable binds to
    /// the whole column.
    pub values: Arc<Vec<f64>>,
    /// The first [`KEPT_CELLS`] non-numeric (or overflowing) cells as `(row, cell)`, by row.
    pub other: Vec<(usize, Cell)>,
    /// Whether more non-numeric cells exist than `other` holds.
    pub truncated: bool,
}

impl Column {
    /// Reserves room for `more` values.
    fn reserve(&mut self, more: usize) {
        if let Some(v) = Arc::get_mut(&mut self.values) {
            v.reserve(more);
        }
    }

    fn new() -> Self {
        Column {
            values: Arc::new(Vec::new()),
            other: Vec::new(),
            truncated: false,
        }
    }

    /// The cell of data row `row` as written, or `None` for a non-numeric cell past the first
    /// [`KEPT_CELLS`] (not kept).
    pub fn cell(&self, row: usize) -> Option<Cell> {
        let v = self.values[row];
        let kept = || {
            self.other
                .binary_search_by_key(&row, |(r, _)| *r)
                .ok()
                .map(|i| self.other[i].1.clone())
        };
        if v.is_infinite() {
            // an overflowing number if kept as such, else an `inf` of the file
            return kept().or(Some(Cell::Number(v)));
        }
        if !v.is_nan() {
            return Some(Cell::Number(v));
        }
        kept()
    }

    fn push(&mut self, row: usize, cell: Cell) {
        let values = Arc::get_mut(&mut self.values).expect("a column being read is not shared");
        match cell {
            Cell::Number(v) => values.push(v),
            other => {
                values.push(match &other {
                    Cell::Overflow(text) if text.starts_with('-') => f64::NEG_INFINITY,
                    Cell::Overflow(_) => f64::INFINITY,
                    _ => f64::NAN,
                });
                if self.other.len() < KEPT_CELLS {
                    self.other.push((row, other));
                } else {
                    self.truncated = true;
                }
            }
        }
    }
}

/// The line numbers of the data rows, stored as the rows where the line is not one more than
/// the previous row's (blank lines, multi-line quoted fields), so that a regular file costs
/// nothing per row.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LineMap {
    /// `(row, line)` at each break, by row; the first row is always a break.
    breaks: Vec<(usize, u64)>,
    rows: usize,
}

impl LineMap {
    /// Appends the next row, found at 1-based `line`.
    pub fn push(&mut self, line: u64) {
        let next = self.breaks.last().map(|&(r, l)| l + (self.rows - r) as u64);
        if next != Some(line) {
            self.breaks.push((self.rows, line));
        }
        self.rows += 1;
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.rows
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// The 1-based line of row `row` (0-based), if there is such a row.
    pub fn get(&self, row: usize) -> Option<u64> {
        if row >= self.rows {
            return None;
        }
        let i = self.breaks.partition_point(|&(r, _)| r <= row) - 1;
        let (r, l) = self.breaks[i];
        Some(l + (row - r) as u64)
    }

    /// Every row's line, in order.
    pub fn to_vec(&self) -> Vec<u64> {
        (0..self.rows).filter_map(|r| self.get(r)).collect()
    }
}

/// A loaded CSV file: column names and values, column by column, with the line number of each row.
#[derive(Clone, Debug, PartialEq)]
pub struct CsvSource {
    /// The file's display name (its path as given, or the name passed to [`crate::data::load_csv_str`]).
    pub name: String,
    /// Column names from the header row, trimmed, in file order.
    pub header: Vec<String>,
    /// `columns[c]` holds the data rows of column `c`.
    pub columns: Vec<Column>,
    /// The 1-based line number in the file of each data row.
    pub lines: LineMap,
}

impl CsvSource {
    /// Number of data rows (not counting the header).
    pub fn n_rows(&self) -> usize {
        self.lines.len()
    }

    /// Index of the column named `name`, if present.
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.header.iter().position(|h| h == name)
    }

    /// How data row `row` (0-based) is named in messages: `labour.csv row 14 (line 15)`.
    pub fn row_location(&self, row: usize) -> String {
        match self.lines.get(row) {
            Some(line) if line > 0 => format!("{} row {} (line {})", self.name, row + 1, line),
            _ => format!("{} row {}", self.name, row + 1),
        }
    }

    /// A source built in memory rather than read from a file (the Python package binds a
    /// pandas DataFrame this way): one column per `(name, values, other)`, `values[r]` the number
    /// of row `r` (NaN for a cell that is not one) and `other` the cells that are not numbers as
    /// `(row, text)` for messages (as [`Column::other`], the first [`KEPT_CELLS`] are kept). Rows
    /// have no file line, so messages name them `NAME row R` (1-based).
    ///
    /// Errors: columns of different lengths, or an empty or repeated column name
    /// ([`DataErrorKind::MalformedCsv`], naming the column).
    pub fn from_columns(
        name: &str,
        columns: Vec<(String, Vec<f64>, Vec<(usize, String)>)>,
    ) -> Result<CsvSource, DataError> {
        let n_rows = columns.first().map_or(0, |c| c.1.len());
        let mut header = Vec::with_capacity(columns.len());
        let mut out = Vec::with_capacity(columns.len());
        for (col, values, other) in columns {
            let bad = |why: String| DataError::new(DataErrorKind::MalformedCsv, why);
            if col.trim().is_empty() {
                return Err(bad(format!("{name}: a column has an empty name")));
            }
            if header.contains(&col) {
                return Err(bad(format!(
                    "{name}: column `{col}` appears more than once"
                )));
            }
            if values.len() != n_rows {
                return Err(bad(format!(
                    "{name}: column `{col}` has {} rows, the first column {n_rows}",
                    values.len()
                )));
            }
            let truncated = other.len() > KEPT_CELLS;
            let other = other
                .into_iter()
                .take(KEPT_CELLS)
                .map(|(r, text)| {
                    let cell = match parse_cell(text.as_bytes()) {
                        Cell::Number(_) => Cell::Text(text),
                        c => c,
                    };
                    (r, cell)
                })
                .collect();
            header.push(col);
            out.push(Column {
                values: Arc::new(values),
                other,
                truncated,
            });
        }
        let mut lines = LineMap::default();
        for _ in 0..n_rows {
            lines.push(0);
        }
        Ok(CsvSource {
            name: name.to_string(),
            header,
            columns: out,
            lines,
        })
    }

    /// The rows `r` with `keep[r]`, as a new source named `name` (same header; line numbers
    /// kept). Copies the kept values (the two parts of a split together hold one copy).
    pub fn select_rows(&self, keep: &[bool], name: String) -> CsvSource {
        let mut lines = LineMap::default();
        // new_row[r]: the row of old row r in the new source (for kept rows)
        let mut new_row = Vec::with_capacity(keep.len());
        for (r, &k) in keep.iter().enumerate() {
            new_row.push(lines.len());
            if k {
                lines.push(self.lines.get(r).unwrap_or(0));
            }
        }
        let columns = self
            .columns
            .iter()
            .map(|c| Column {
                values: Arc::new(
                    c.values
                        .iter()
                        .zip(keep)
                        .filter(|(_, k)| **k)
                        .map(|(v, _)| *v)
                        .collect(),
                ),
                other: c
                    .other
                    .iter()
                    .filter(|(r, _)| keep[*r])
                    .map(|(r, cell)| (new_row[*r], cell.clone()))
                    .collect(),
                truncated: c.truncated,
            })
            .collect();
        CsvSource {
            name,
            header: self.header.clone(),
            columns,
            lines,
        }
    }
}

/// The bytes read so far that the parser may still ask about, with newline counts, UTF-8
/// validation and the offset of an invalid byte. Shared between [`Tracked`] (which appends)
/// and [`parse_reader`] (which asks for line numbers and drops what it no longer needs).
#[derive(Default)]
struct Window {
    /// Bytes from file offset `base` on.
    bytes: Vec<u8>,
    /// Index in `bytes` of the first byte still needed.
    start: usize,
    /// File offset of `bytes[0]`.
    base: u64,
    /// Newlines before file offset `base + start`.
    newlines: u64,
    /// File offset up to which the bytes are valid UTF-8.
    valid: u64,
    /// File offset of the first byte that is not valid UTF-8.
    bad_utf8: Option<u64>,
}

impl Window {
    fn end(&self) -> u64 {
        self.base + self.bytes.len() as u64
    }

    fn at(&self, offset: u64) -> Option<u8> {
        let i = offset.checked_sub(self.base)? as usize;
        self.bytes.get(i).copied()
    }

    /// Counts the newlines up to `offset` and forgets the bytes before `offset − 1` (one byte
    /// before is kept, to tell how the previous record ended).
    fn advance(&mut self, offset: u64) {
        let keep_from = offset.saturating_sub(1).max(self.base + self.start as u64);
        let to = ((keep_from - self.base) as usize).min(self.bytes.len());
        self.newlines += self.bytes[self.start..to]
            .iter()
            .filter(|&&b| b == b'\n')
            .count() as u64;
        self.start = to;
        if self.start > 1 << 16 && self.start * 2 > self.bytes.len() {
            self.bytes.drain(..self.start);
            self.base += self.start as u64;
            self.start = 0;
        }
    }

    /// Newlines before `offset` (at or after the retained start).
    fn newlines_before(&self, offset: u64) -> u64 {
        let from = self.start;
        let to = ((offset - self.base) as usize).min(self.bytes.len());
        self.newlines
            + self.bytes[from..to.max(from)]
                .iter()
                .filter(|&&b| b == b'\n')
                .count() as u64
    }

    /// Validates the new bytes as UTF-8 (a sequence cut at the end waits for the next read).
    fn validate(&mut self, at_eof: bool) {
        let from = (self.valid - self.base) as usize;
        match std::str::from_utf8(&self.bytes[from..]) {
            Ok(_) => self.valid = self.end(),
            Err(e) => {
                let ok = self.valid + e.valid_up_to() as u64;
                if e.error_len().is_some() || at_eof {
                    self.bad_utf8 = Some(ok);
                }
                self.valid = ok;
            }
        }
    }
}

/// A reader that copies what it reads into the shared [`Window`] and fails at the first byte
/// that is not UTF-8.
struct Tracked<R> {
    inner: R,
    window: Rc<RefCell<Window>>,
}

impl<R: Read> Read for Tracked<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut w = self.window.borrow_mut();
        if w.bad_utf8.is_some() {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "not UTF-8"));
        }
        let n = self.inner.read(buf)?;
        w.bytes.extend_from_slice(&buf[..n]);
        w.validate(n == 0);
        if w.bad_utf8.is_some() {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "not UTF-8"));
        }
        Ok(n)
    }
}

/// Parses CSV `text` (UTF-8; a leading byte-order mark is skipped) read from a file shown as
/// `name` in messages; see [`parse_reader`].
pub fn parse_csv(name: &str, text: &str) -> Result<CsvSource, DataError> {
    parse_reader(name, text.as_bytes())
}

/// Parses a CSV file streamed from `input`, shown as `name` in messages.
///
/// The first record is the header; every later record must have as many fields as the header.
/// Whitespace around fields and names is trimmed; blank lines are skipped, except in a file of one
/// column, where a blank line between data rows is an empty (missing) cell: skipping it would
/// drop an observation silently, so binding that column reports the row as missing. Memory: one
/// `f64` per cell, plus the reader's buffer; the text is never held whole.
/// Errors: [`DataErrorKind::Io`] (unreadable, or not UTF-8 text, with the byte offset),
/// [`DataErrorKind::MalformedCsv`] (no header, empty or repeated column name, a header with no
/// data rows), [`DataErrorKind::FieldCount`] (with the line number).
pub fn parse_reader(name: &str, input: impl Read) -> Result<CsvSource, DataError> {
    parse_reader_sized(name, input, None)
}

/// Rows read before [`parse_reader_sized`] reserves the columns from the size hint.
const RESERVE_AFTER_ROWS: usize = 1000;

/// As [`parse_reader`], with the input's length in bytes when known (a file's size): after the
/// first rows, the columns reserve room for the rows the rest of the input will hold at the
/// same bytes per row (2% over), so that they do not grow by repeated reallocation and copying.
/// The reservation is trimmed at the end.
///
/// Errors: those of [`parse_reader`].
pub fn parse_reader_sized(
    name: &str,
    input: impl Read,
    size_hint: Option<u64>,
) -> Result<CsvSource, DataError> {
    let mut input = io::BufReader::with_capacity(1 << 16, input);
    // skip a byte-order mark (offsets and lines are counted after it)
    if let Ok(buf) = input.fill_buf()
        && buf.starts_with(b"\xEF\xBB\xBF")
    {
        input.consume(3);
    }
    let window = Rc::new(RefCell::new(Window::default()));
    let tracked = Tracked {
        inner: input,
        window: Rc::clone(&window),
    };
    let mut reader = ::csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        // Fields are trimmed by `parse_cell` and the header loop (cheaper than the crate's
        // `Trim::All`, which rewrites every record).
        .trim(::csv::Trim::None)
        // `#` comment lines (as CmdStan's CSV files carry) are skipped, before the header too
        .comment(Some(b'#'))
        .buffer_capacity(1 << 16)
        .from_reader(tracked);
    let mut record = ::csv::ByteRecord::new();
    let read = |reader: &mut ::csv::Reader<Tracked<_>>, record: &mut ::csv::ByteRecord| {
        reader
            .read_byte_record(record)
            .map_err(|e| read_error(name, &e, &window.borrow()))
    };
    // The line of a record: newlines before its first byte that is not a line ending (the csv
    // crate reports a record's start before the blank lines it skipped), plus one. Also the
    // number of blank lines skipped before it.
    let locate = |record: &::csv::ByteRecord| -> (u64, u64) {
        let Some(p) = record.position().map(|p| p.byte()) else {
            return (0, 0);
        };
        let mut w = window.borrow_mut();
        w.advance(p);
        let mut first = p;
        // comment lines skipped before the record: not blank lines (not missing cells)
        let mut comments = 0;
        loop {
            match w.at(first) {
                Some(b'\n' | b'\r') => first += 1,
                Some(b'#') if first == 0 || matches!(w.at(first - 1), Some(b'\n' | b'\r')) => {
                    while !matches!(w.at(first), Some(b'\n') | None) {
                        first += 1;
                    }
                    if w.at(first).is_some() {
                        first += 1;
                        comments += 1;
                    }
                }
                _ => break,
            }
        }
        let line = w.newlines_before(first) + 1;
        let mut blanks = (w.newlines_before(first) - w.newlines_before(p)).saturating_sub(comments);
        // a previous record ended by "\r" whose "\n" is counted here is not a blank line
        if p > 0 && w.at(p - 1) == Some(b'\r') && w.at(p) == Some(b'\n') {
            blanks = blanks.saturating_sub(1);
        }
        (line, blanks)
    };
    if !read(&mut reader, &mut record)? {
        return Err(empty_file(name));
    }
    let (mut previous, _) = locate(&record);
    let header: Vec<String> = record
        .iter()
        .map(|f| String::from_utf8_lossy(f.trim_ascii()).into_owned())
        .collect();
    if header.is_empty() || (header.len() == 1 && header[0].is_empty()) {
        return Err(empty_file(name));
    }
    if header[0].starts_with('{') || header[0].starts_with('[') {
        return Err(DataError::new(
            DataErrorKind::MalformedCsv,
            format!(
                "{name} line {previous}: the file looks like JSON (it starts with `{{` or `[`), not CSV"
            ),
        )
        .with_help(
            "bayesc reads a data file by its extension: name a JSON file `.json`, or write the \
             data as CSV with a header row of column names",
        ));
    }
    if let Some(e) = foreign_delimiter(name, &header) {
        return Err(e);
    }
    for (i, h) in header.iter().enumerate() {
        if h.is_empty() {
            return Err(DataError::new(
                DataErrorKind::MalformedCsv,
                format!("{name} line {previous}: column {} has an empty name", i + 1),
            )
            .with_help("every column needs a name in the header row"));
        }
        if let Some(j) = header[..i].iter().position(|g| g == h) {
            return Err(DataError::new(
                DataErrorKind::MalformedCsv,
                format!(
                    "{name} line {previous}: column `{h}` appears twice in the header (columns {} and {})",
                    j + 1,
                    i + 1
                ),
            )
            .with_help("rename or remove one of the two columns"));
        }
    }
    let mut columns: Vec<Column> = (0..header.len()).map(|_| Column::new()).collect();
    let mut lines = LineMap::default();
    // the last line of the previous record (a quoted field may span lines)
    let mut previous_end = previous;
    while read(&mut reader, &mut record)? {
        let (line, blanks) = locate(&record);
        // a quote left open swallows the rest of the file into one field: said as such, not
        // as a wrong field count or a cell that is not a number ([X] session 21, tester
        // finding: `3,"1,0` was reported as "2 fields, but the header has 3 columns")
        if (record.len() != header.len() || record.iter().any(|f| f.contains(&b'\n')))
            && let Some(p) = record.position().map(|p| p.byte())
        {
            let end = reader.position().byte();
            let w = window.borrow();
            let quotes = (p..end).filter(|&i| w.at(i) == Some(b'"')).count();
            if quotes % 2 == 1 {
                return Err(DataError::new(
                    DataErrorKind::MalformedCsv,
                    format!(
                        "{name} line {line} (row {}): a quoted field is never closed: the `\"` \
                         opened in this row has no closing `\"`, so the rest of the file was \
                         read as part of one field",
                        lines.len() + 1
                    ),
                )
                .with_help(
                    "close the quote, or remove it: a field in quotes may hold commas and line \
                     breaks, and ends only at the next `\"`",
                ));
            }
        }
        if record.len() != header.len() {
            let fields: Vec<&[u8]> = record.iter().collect();
            let at = (line, lines.len() + 1);
            if let Some(e) = super::decimal_comma::split_row(name, at, &header, &fields) {
                return Err(e);
            }
            return Err(DataError::new(
                DataErrorKind::FieldCount,
                format!(
                    "{name} line {line} (row {}): {}, but the header has {}",
                    lines.len() + 1,
                    count(record.len(), "field"),
                    count(header.len(), "column")
                ),
            )
            .with_help(
                "every row needs one value per column; a missing value cannot be left out \
                 (and is not allowed in a column the model uses)",
            ));
        }
        // In a one-column file a blank line is an empty cell, i.e. a missing value, which the
        // csv crate would skip silently (dropping an observation). Blank lines after the last
        // record are not rows. When the previous record spans several lines (a quoted
        // multi-line field), the lines in between are left alone.
        if header.len() == 1 && blanks > 0 && previous_end == previous {
            for blank in line - blanks..line {
                columns[0].push(lines.len(), Cell::Missing(String::new()));
                lines.push(blank);
            }
        }
        previous = line;
        // this record's last line: the line before its terminator
        previous_end = {
            let w = window.borrow();
            let end = reader.position().byte();
            let mut last = end;
            while last > 0 && matches!(w.at(last - 1), Some(b'\n' | b'\r')) {
                last -= 1;
            }
            if last >= w.base + w.start as u64 {
                w.newlines_before(last) + 1
            } else {
                line
            }
        };
        let row = lines.len();
        if row == RESERVE_AFTER_ROWS
            && let Some(total) = size_hint
        {
            let read = reader.position().byte().max(1);
            let expected = (total as f64 / read as f64 * row as f64 * 1.02) as usize;
            for c in &mut columns {
                c.reserve(expected.saturating_sub(row));
            }
        }
        for (c, field) in record.iter().enumerate() {
            columns[c].push(row, parse_cell(field));
        }
        lines.push(line);
    }
    if lines.is_empty() {
        return Err(DataError::new(
            DataErrorKind::MalformedCsv,
            format!(
                "{name}: the file has a header ({}) but no data rows",
                header.join(", ")
            ),
        )
        .with_note("fitting to it would silently sample the prior, with sizes of 0")
        .with_help(
            "add the data rows below the header; to sample the prior on purpose, leave the file \
             out and give the sizes in a JSON file",
        ));
    }
    for c in &mut columns {
        if let Some(v) = Arc::get_mut(&mut c.values) {
            v.shrink_to_fit();
        }
    }
    Ok(CsvSource {
        name: name.to_string(),
        header,
        columns,
        lines,
    })
}

/// The error for a header that the csv crate read as one column whose name holds a `;` or a
/// tab: the file was written with that delimiter (a European spreadsheet export uses `;`, with
/// `,` as the decimal point), and reading it as comma-separated would report one column named
/// `N;y` or every data variable missing. `None` for any other header.
fn foreign_delimiter(name: &str, header: &[String]) -> Option<DataError> {
    let [only] = header else {
        return None;
    };
    let (delimiter, shown, fix) = if only.contains(';') {
        (
            ';',
            "`;`",
            "convert the file to comma-separated values with `.` as the decimal point (in a \
             spreadsheet, save as \"CSV (comma delimited)\"; or replace each `;` by `,` when no \
             value is written with a decimal comma)",
        )
    } else if only.contains('\t') {
        (
            '\t',
            "tabs",
            "convert the file to comma-separated values (in a spreadsheet, save as \"CSV (comma \
             delimited)\"; or replace each tab by `,`)",
        )
    } else {
        return None;
    };
    let columns: Vec<String> = only
        .split(delimiter)
        .map(|c| format!("`{}`", c.trim().trim_matches('"')))
        .collect();
    Some(
        DataError::new(
            DataErrorKind::MalformedCsv,
            format!(
                "{name} line 1: the file seems to use {shown} as its delimiter, but bayesc reads \
                 comma-separated CSV (the header is read as one column named `{}`)",
                only.escape_debug()
            ),
        )
        .with_note(format!(
            "split at {shown}, the header would name the columns {}",
            crate::words::name_list(&columns, 8)
        ))
        .with_help(fix),
    )
}

fn empty_file(name: &str) -> DataError {
    DataError::new(
        DataErrorKind::MalformedCsv,
        format!("{name}: the file is empty, but a CSV data file needs a header row"),
    )
    .with_help("put the column names on the first line, one data variable per column, e.g. `y,x`")
}

/// Classifies one trimmed field.
fn parse_cell(field: &[u8]) -> Cell {
    let field = field.trim_ascii();
    if field.is_empty() || field == b"NA" || field == b"." {
        return Cell::Missing(String::from_utf8_lossy(field).into_owned());
    }
    // The file was validated as UTF-8 while reading; a number is ASCII, which is checked faster
    // than UTF-8 (`is_ascii` works a word at a time), so text goes the slower way.
    let text = if field.is_ascii() {
        // SAFETY: ASCII bytes are valid UTF-8.
        unsafe { std::str::from_utf8_unchecked(field) }
    } else {
        match std::str::from_utf8(field) {
            Ok(t) => t,
            Err(_) => return Cell::Text(String::from_utf8_lossy(field).into_owned()),
        }
    };
    match text.parse::<f64>() {
        Ok(v) if v.is_nan() => Cell::Missing(text.to_string()),
        // `inf` and `infinity` have no digit; `2e400` rounds to inf
        Ok(v) if v.is_infinite() && text.bytes().any(|b| b.is_ascii_digit()) => {
            Cell::Overflow(text.to_string())
        }
        Ok(v) => Cell::Number(v),
        Err(_) => Cell::Text(text.to_string()),
    }
}

fn read_error(name: &str, e: &::csv::Error, window: &Window) -> DataError {
    if let Some(offset) = window.bad_utf8 {
        return DataError::new(
            DataErrorKind::Io,
            format!("data file `{name}` is not UTF-8 text (invalid byte at offset {offset})"),
        )
        .with_help("save the file as UTF-8");
    }
    if let ::csv::ErrorKind::Io(io) = e.kind() {
        return DataError::new(
            DataErrorKind::Io,
            format!("cannot read data file `{name}`: {io}"),
        )
        .with_help("check the path (relative paths are taken from the current directory)");
    }
    let at = match e.position() {
        Some(p) => format!("{name} line {}", p.line()),
        None => name.to_string(),
    };
    DataError::new(DataErrorKind::MalformedCsv, format!("{at}: {e}"))
        .with_help("check the file is comma-separated text with a header row")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_built_in_memory_bind_as_a_file_would() {
        let src = CsvSource::from_columns(
            "DataFrame",
            vec![
                (
                    "x".into(),
                    vec![1.5, 2.0, f64::NAN],
                    vec![(2, "abc".into())],
                ),
                ("y".into(), vec![0.0, 1.0, 1.0], vec![]),
            ],
        )
        .expect("two columns of three rows");
        assert_eq!(src.n_rows(), 3);
        assert_eq!(src.header, ["x", "y"]);
        assert_eq!(src.columns[0].cell(2), Some(Cell::Text("abc".into())));
        assert_eq!(src.row_location(1), "DataFrame row 2");
        let err = CsvSource::from_columns(
            "DataFrame",
            vec![
                ("x".into(), vec![1.0], vec![]),
                ("y".into(), vec![], vec![]),
            ],
        )
        .unwrap_err();
        assert!(err.message.contains("`y` has 0 rows"), "{}", err.message);
    }

    #[test]
    fn reads_header_cells_and_line_numbers_with_bom_and_blank_lines() {
        let src = parse_csv("t.csv", "\u{feff} a , b\n1, 2.5\n\n NA ,x\n").unwrap();
        assert_eq!(src.header, vec!["a", "b"]);
        assert_eq!(src.n_rows(), 2);
        assert_eq!(src.lines.to_vec(), vec![2, 4]);
        let cells = |c: usize| (0..2).map(|r| src.columns[c].cell(r)).collect::<Vec<_>>();
        assert_eq!(
            cells(0),
            vec![Some(Cell::Number(1.0)), Some(Cell::Missing("NA".into()))]
        );
        assert_eq!(
            cells(1),
            vec![Some(Cell::Number(2.5)), Some(Cell::Text("x".into()))]
        );
        assert_eq!(src.row_location(1), "t.csv row 2 (line 4)");
    }

    #[test]
    fn crlf_line_endings_and_quoted_newlines_keep_line_numbers() {
        let src = parse_csv("t.csv", "a,b\r\n1,\"x\ny\"\r\n\r\n3,4\r\n").unwrap();
        assert_eq!(src.lines.to_vec(), vec![2, 5]);
        assert_eq!(src.columns[1].cell(0), Some(Cell::Text("x\ny".into())));
        let err = parse_csv("t.csv", "a,b\r\n1,2\r\n\r\n3\r\n").unwrap_err();
        assert_eq!(
            err.message,
            "t.csv line 4 (row 2): 1 field, but the header has 2 columns"
        );
    }

    #[test]
    fn missing_spellings() {
        for s in ["", "NA", "NaN", "nan", "."] {
            assert_eq!(
                parse_cell(s.as_bytes()),
                Cell::Missing(s.to_string()),
                "{s:?}"
            );
        }
        assert_eq!(parse_cell(b"-inf"), Cell::Number(f64::NEG_INFINITY));
    }

    #[test]
    fn wrong_field_count_names_line() {
        let err = parse_csv("t.csv", "a,b\n1,2\n3\n").unwrap_err();
        assert_eq!(err.kind, DataErrorKind::FieldCount);
        assert_eq!(
            err.message,
            "t.csv line 3 (row 2): 1 field, but the header has 2 columns"
        );
    }

    #[test]
    fn empty_and_duplicate_headers() {
        assert_eq!(
            parse_csv("t.csv", "").unwrap_err().kind,
            DataErrorKind::MalformedCsv
        );
        let err = parse_csv("t.csv", "a,b,a\n1,2,3\n").unwrap_err();
        assert_eq!(err.kind, DataErrorKind::MalformedCsv);
        assert!(
            err.message.contains("column `a` appears twice"),
            "{}",
            err.message
        );
    }

    #[test]
    fn one_column_blank_lines_are_missing_rows_with_their_lines() {
        let src = parse_csv("t.csv", "y\n1\n\n\n2\n\n").unwrap();
        assert_eq!(src.lines.to_vec(), vec![2, 3, 4, 5]);
        assert_eq!(src.columns[0].cell(1), Some(Cell::Missing(String::new())));
        assert_eq!(src.columns[0].cell(3), Some(Cell::Number(2.0)));
        let crlf = parse_csv("t.csv", "y\r\n1\r\n\r\n2\r\n").unwrap();
        assert_eq!(crlf.lines.to_vec(), vec![2, 3, 4]);
    }

    #[test]
    fn streaming_reads_large_files_in_pieces_with_exact_lines() {
        // Longer than the reader's buffers, with blank lines and CRLF far into the file.
        let mut text = String::from("a,b\n");
        for i in 0..50_000 {
            text.push_str(&format!("{i},{}.5\n", i % 7));
            if i == 40_000 {
                text.push_str("\r\n\n");
            }
        }
        let src = parse_csv("t.csv", &text).unwrap();
        assert_eq!(src.n_rows(), 50_000);
        assert_eq!(src.lines.get(40_000), Some(40_002));
        assert_eq!(src.lines.get(40_001), Some(40_005));
        assert_eq!(src.lines.get(49_999), Some(50_003));
        assert_eq!(src.columns[1].values[49_999], (49_999 % 7) as f64 + 0.5);
        assert!(src.lines.breaks.len() <= 3, "{:?}", src.lines.breaks);
    }

    #[test]
    fn invalid_utf8_names_the_byte_offset() {
        let mut bytes = b"a,b\n1,2\n".to_vec();
        bytes.extend_from_slice(b"3,\xff\n");
        let err = parse_reader("t.csv", &bytes[..]).unwrap_err();
        assert_eq!(err.kind, DataErrorKind::Io);
        assert!(
            err.message.ends_with("(invalid byte at offset 10)"),
            "{}",
            err.message
        );
    }

    #[test]
    fn select_rows_keeps_cells_and_lines() {
        let src = parse_csv("t.csv", "a\n1\nNA\n3\nx\n").unwrap();
        let part = src.select_rows(&[false, true, true, true], "p".into());
        assert_eq!(part.lines.to_vec(), vec![3, 4, 5]);
        assert_eq!(part.columns[0].cell(0), Some(Cell::Missing("NA".into())));
        assert_eq!(part.columns[0].cell(1), Some(Cell::Number(3.0)));
        assert_eq!(part.columns[0].cell(2), Some(Cell::Text("x".into())));
    }
}
