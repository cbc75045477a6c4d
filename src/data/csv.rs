//! CSV data files: a header row naming the columns, one value per cell, parsed lazily per cell so
//! that unused text columns (dates, labels) never cause an error.

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
}

/// A loaded CSV file: column names and cells, column by column, with the line number of each row.
#[derive(Clone, Debug, PartialEq)]
pub struct CsvSource {
    /// The file's display name (its path as given, or the name passed to [`crate::data::load_csv_str`]).
    pub name: String,
    /// Column names from the header row, trimmed, in file order.
    pub header: Vec<String>,
    /// `columns[c][r]` is data row `r` (0-based) of column `c`.
    pub columns: Vec<Vec<Cell>>,
    /// `lines[r]` is the 1-based line number in the file of data row `r` (0-based).
    pub lines: Vec<u64>,
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
            Some(line) => format!("{} row {} (line {})", self.name, row + 1, line),
            None => format!("{} row {}", self.name, row + 1),
        }
    }
}

/// Parses CSV `text` (UTF-8; a leading byte-order mark is skipped) read from a file shown as
/// `name` in messages.
///
/// The first record is the header; every later record must have as many fields as the header.
/// Whitespace around fields and names is trimmed; blank lines are skipped, except in a file of one
/// column, where a blank line between data rows is an empty (missing) cell: skipping it would
/// drop an observation silently, so binding that column reports the row as missing.
/// Errors: [`DataErrorKind::MalformedCsv`] (no header, empty or repeated column name, a header
/// with no data rows, tokeniser error), [`DataErrorKind::FieldCount`] (with the line number).
pub fn parse_csv(name: &str, text: &str) -> Result<CsvSource, DataError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut reader = ::csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(true)
        .trim(::csv::Trim::All)
        .from_reader(text.as_bytes());
    let header: Vec<String> = match reader.headers() {
        Ok(h) => h.iter().map(|s| s.to_string()).collect(),
        Err(e) => return Err(csv_error(name, &e)),
    };
    if header.is_empty() || (header.len() == 1 && header[0].is_empty()) {
        return Err(DataError::new(
            DataErrorKind::MalformedCsv,
            format!("{name}: the file is empty, but a CSV data file needs a header row"),
        )
        .with_help(
            "put the column names on the first line, one data variable per column, e.g. `y,x`",
        ));
    }
    for (i, h) in header.iter().enumerate() {
        if h.is_empty() {
            return Err(DataError::new(
                DataErrorKind::MalformedCsv,
                format!("{name} line 1: column {} has an empty name", i + 1),
            )
            .with_help("every column needs a name in the header row"));
        }
        if let Some(j) = header[..i].iter().position(|g| g == h) {
            return Err(DataError::new(
                DataErrorKind::MalformedCsv,
                format!(
                    "{name} line 1: column `{h}` appears twice in the header (columns {} and {})",
                    j + 1,
                    i + 1
                ),
            )
            .with_help("rename or remove one of the two columns"));
        }
    }
    let newlines: Vec<usize> = text
        .bytes()
        .enumerate()
        .filter(|&(_, b)| b == b'\n')
        .map(|(i, _)| i)
        .collect();
    let mut columns: Vec<Vec<Cell>> = vec![Vec::new(); header.len()];
    let mut lines = Vec::new();
    let line_text: Vec<&str> = text.split('\n').collect();
    // The line of the previous record (the header's first), for finding blank lines in between.
    let mut previous = line_of(&newlines, skip_blank_lines(text, 0));
    for record in reader.records() {
        let record = record.map_err(|e| csv_error(name, &e))?;
        // The csv crate's own line count skips blank lines; count newlines before the record's
        // first byte instead, so that the number matches what an editor shows.
        let line = record
            .position()
            .map(|p| line_of(&newlines, skip_blank_lines(text, p.byte() as usize)))
            .unwrap_or(0);
        if record.len() != header.len() {
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
        // record are not rows. Lines in between that are not all blank belong to a quoted
        // multi-line field of the previous record and are left alone.
        if header.len() == 1 && line > previous + 1 {
            let between = previous as usize..line as usize - 1;
            if line_text[between.clone()]
                .iter()
                .all(|l| l.trim().is_empty())
            {
                for blank in between {
                    columns[0].push(Cell::Missing(String::new()));
                    lines.push(blank as u64 + 1);
                }
            }
        }
        previous = line;
        for (c, field) in record.iter().enumerate() {
            columns[c].push(parse_cell(field));
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
    Ok(CsvSource {
        name: name.to_string(),
        header,
        columns,
        lines,
    })
}

/// The offset of the first byte at or after `offset` that is not a line ending (the csv crate
/// reports a record's start before the blank lines it skipped).
fn skip_blank_lines(text: &str, offset: usize) -> usize {
    let bytes = text.as_bytes();
    let mut i = offset.min(bytes.len());
    while i < bytes.len() && (bytes[i] == b'\n' || bytes[i] == b'\r') {
        i += 1;
    }
    i
}

/// 1-based line number of byte `offset`, given the offsets of every `\n`.
fn line_of(newlines: &[usize], offset: usize) -> u64 {
    (newlines.partition_point(|&n| n < offset) + 1) as u64
}

/// Classifies one trimmed field.
fn parse_cell(field: &str) -> Cell {
    if field.is_empty() || field == "NA" || field == "." {
        return Cell::Missing(field.to_string());
    }
    match field.parse::<f64>() {
        Ok(v) if v.is_nan() => Cell::Missing(field.to_string()),
        Ok(v) => Cell::Number(v),
        Err(_) => Cell::Text(field.to_string()),
    }
}

fn csv_error(name: &str, e: &::csv::Error) -> DataError {
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
    fn reads_header_cells_and_line_numbers_with_bom_and_blank_lines() {
        let src = parse_csv("t.csv", "\u{feff} a , b\n1, 2.5\n\n NA ,x\n").unwrap();
        assert_eq!(src.header, vec!["a", "b"]);
        assert_eq!(src.n_rows(), 2);
        assert_eq!(src.lines, vec![2, 4]);
        assert_eq!(
            src.columns[0],
            vec![Cell::Number(1.0), Cell::Missing("NA".into())]
        );
        assert_eq!(
            src.columns[1],
            vec![Cell::Number(2.5), Cell::Text("x".into())]
        );
        assert_eq!(src.row_location(1), "t.csv row 2 (line 4)");
    }

    #[test]
    fn crlf_line_endings_and_quoted_newlines_keep_line_numbers() {
        let src = parse_csv("t.csv", "a,b\r\n1,\"x\ny\"\r\n\r\n3,4\r\n").unwrap();
        assert_eq!(src.lines, vec![2, 5]);
        assert_eq!(src.columns[1][0], Cell::Text("x\ny".into()));
        let err = parse_csv("t.csv", "a,b\r\n1,2\r\n\r\n3\r\n").unwrap_err();
        assert_eq!(
            err.message,
            "t.csv line 4 (row 2): 1 field, but the header has 2 columns"
        );
    }

    #[test]
    fn missing_spellings() {
        for s in ["", "NA", "NaN", "nan", "."] {
            assert_eq!(parse_cell(s), Cell::Missing(s.to_string()), "{s:?}");
        }
        assert_eq!(parse_cell("-inf"), Cell::Number(f64::NEG_INFINITY));
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
}
