//! Numbers written with a decimal comma (`1,5` for 1.5, as spreadsheets in many European
//! locales save them): in a comma-separated file each one splits into two fields, and quoted it
//! is a cell that is not a number. Both are named as such, with the fix, rather than as a
//! field count or a bad value alone.

use super::error::{DataError, DataErrorKind, count};

/// Whether `b` is a run of ASCII digits (at least one).
fn digits(b: &[u8]) -> bool {
    !b.is_empty() && b.iter().all(u8::is_ascii_digit)
}

/// `int,frac` written with a decimal point (`1` and `5` → `1.5`), when `int` is an optionally
/// signed run of digits and `frac` a run of digits (both trimmed); `None` otherwise.
fn joined(int: &[u8], frac: &[u8]) -> Option<String> {
    let (int, frac) = (int.trim_ascii(), frac.trim_ascii());
    let unsigned = int
        .strip_prefix(b"-")
        .or(int.strip_prefix(b"+"))
        .unwrap_or(int);
    if !(digits(unsigned) && digits(frac)) {
        return None;
    }
    Some(format!(
        "{}.{}",
        String::from_utf8_lossy(int),
        String::from_utf8_lossy(frac)
    ))
}

/// The value of a cell `text` such as `1,5` or `-0,25` (one comma between digits) written with
/// a decimal point (`1.5`); `None` for any other text.
pub(crate) fn with_point(text: &str) -> Option<String> {
    let (int, frac) = text.split_once(',')?;
    joined(int.as_bytes(), frac.as_bytes())
}

/// The help for a cell that is not a number but reads as one with a decimal comma.
pub(crate) fn cell_help(raw: &str, point: &str) -> String {
    format!(
        "`{raw}` seems to be {point} written with a decimal comma; write numbers with `.` as the \
         decimal point (in a spreadsheet, set the decimal separator to `.` before saving as \
         CSV, or replace each decimal `,` by `.`)"
    )
}

/// The error for the data row `row` (1-based, at `line` of the file `name`) whose `fields`
/// are twice as many as the `header`'s columns, when each pair of fields reads as one number
/// with a decimal comma (`1,5` → `1`, `5`): the file was written with decimal commas and `,`
/// as its delimiter. `None` for any other row.
pub(crate) fn split_row(
    name: &str,
    (line, row): (u64, usize),
    header: &[String],
    fields: &[&[u8]],
) -> Option<DataError> {
    if fields.len() != 2 * header.len() {
        return None;
    }
    let numbers = fields
        .chunks(2)
        .map(|p| joined(p[0], p[1]))
        .collect::<Option<Vec<String>>>()?;
    let written = format!(
        "{},{}",
        String::from_utf8_lossy(fields[0].trim_ascii()),
        String::from_utf8_lossy(fields[1].trim_ascii())
    );
    Some(
        DataError::new(
            DataErrorKind::FieldCount,
            format!(
                "{name} line {line} (row {row}), column `{}`: the file seems to use decimal \
                 commas: `{written}` would be {} with a decimal comma, but bayesc reads `,` only \
                 as the delimiter (the row has {}, but the header has {})",
                header[0],
                numbers[0],
                count(fields.len(), "field"),
                count(header.len(), "column"),
            ),
        )
        .with_help(
            "write the numbers with `.` as the decimal point (in a spreadsheet, set the decimal \
             separator to `.` before saving as CSV, or replace each decimal `,` by `.` in the \
             file); if the values are meant as separate columns, name each column in the header",
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_with_one_comma_between_digits() {
        assert_eq!(with_point("1,5").as_deref(), Some("1.5"));
        assert_eq!(with_point("-0,25").as_deref(), Some("-0.25"));
        for text in ["1,5,2", "a,5", "1,", ",5", "1,-5", "1.5"] {
            assert_eq!(with_point(text), None, "{text}");
        }
    }
}
