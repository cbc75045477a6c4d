//! JSON data files in Stan's (CmdStan's) data format: an object mapping each name to a number or
//! to nested arrays of numbers, row-major (a matrix is an array of its rows).

use std::collections::BTreeMap;

use serde_json::Value;

use super::error::{DataError, DataErrorKind, count};

/// One JSON entry after checking it is a rectangular nested array of numbers.
#[derive(Clone, Debug, PartialEq)]
pub struct JsonArray {
    /// Dimensions, outermost first (`[]` for a number, `[R, C]` for an array of R rows of C).
    pub dims: Vec<usize>,
    /// The numbers in row-major order over `dims` (shared with the bound data).
    pub values: std::sync::Arc<Vec<f64>>,
}

/// A loaded JSON data file.
///
/// Each key maps to its value, or to the error found in it (ragged or non-numeric); the error is
/// raised only when a declared data variable uses that key, so that unrelated keys (metadata) do
/// not stop a run.
#[derive(Clone, Debug, PartialEq)]
pub struct JsonSource {
    /// The file's display name (its path as given, or the name passed to [`crate::data::load_json_str`]).
    pub name: String,
    /// Entries by key.
    pub entries: BTreeMap<String, Result<JsonArray, DataError>>,
}

impl JsonSource {
    /// How element `flat` (row-major over `dims`) of key `key` is named in messages:
    /// ``data.json, key `y`, element `y[3]` `` or, for a scalar, ``data.json, key `J` ``.
    pub fn element_location(&self, key: &str, dims: &[usize], flat: usize) -> String {
        if dims.is_empty() {
            format!("{}, key `{key}`", self.name)
        } else {
            let idx: Vec<String> = unravel(flat, dims)
                .iter()
                .map(|i| (i + 1).to_string())
                .collect();
            format!(
                "{}, key `{key}`, element `{key}[{}]`",
                self.name,
                idx.join(", ")
            )
        }
    }
}

impl JsonSource {
    /// A source built in memory rather than parsed from a file (the Python package binds a
    /// dict of numpy arrays and scalars this way): each entry is `(key, dims, values)` with
    /// `dims` outermost first (`[]` for a scalar) and `values` in row-major order, as a JSON
    /// file's nested arrays give them; messages name elements as for a file shown as `name`
    /// (``data, key `y`, element `y[3]` ``, 1-based).
    ///
    /// Errors: values whose count is not the product of `dims` ([`DataErrorKind::Ragged`]), or a
    /// repeated key ([`DataErrorKind::MalformedJson`]), naming the key.
    pub fn from_arrays(
        name: &str,
        entries: Vec<(String, Vec<usize>, Vec<f64>)>,
    ) -> Result<JsonSource, DataError> {
        let mut map = BTreeMap::new();
        for (key, dims, values) in entries {
            let want: usize = dims.iter().product();
            if values.len() != want {
                return Err(DataError::new(
                    DataErrorKind::Ragged,
                    format!(
                        "{name}, key `{key}`: {} values for dimensions {dims:?} ({want} expected)",
                        values.len()
                    ),
                ));
            }
            let entry = Ok(JsonArray {
                dims,
                values: std::sync::Arc::new(values),
            });
            if map.insert(key.clone(), entry).is_some() {
                return Err(DataError::new(
                    DataErrorKind::MalformedJson,
                    format!("{name}: key `{key}` appears more than once"),
                ));
            }
        }
        Ok(JsonSource {
            name: name.to_string(),
            entries: map,
        })
    }
}

/// The 0-based multi-index of row-major position `flat` within `dims`.
pub(crate) fn unravel(mut flat: usize, dims: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; dims.len()];
    for d in (0..dims.len()).rev() {
        if dims[d] > 0 {
            idx[d] = flat % dims[d];
            flat /= dims[d];
        }
    }
    idx
}

/// Parses JSON `text` read from a file shown as `name` in messages.
///
/// The top level must be an object. Numbers may also be written as the strings `"Infinity"`,
/// `"-Infinity"` and `"NaN"` (CmdStan's JSON format), or `"+inf"`, `"-inf"` (as CmdStanPy's
/// `write_stan_json` writes them), in any letter case and with an optional `+`.
/// Errors: [`DataErrorKind::MalformedJson`] with serde's line and column, when the top level
/// is not an object, or when a top-level key appears twice (naming the key);
/// [`DataErrorKind::Overflow`] for a number too large for a 64-bit float (`2e400`). Errors inside an entry ([`DataErrorKind::Ragged`],
/// [`DataErrorKind::InvalidJsonValue`]) are stored in [`JsonSource::entries`].
pub fn parse_json(name: &str, text: &str) -> Result<JsonSource, DataError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let value: Value = serde_json::from_str(text).map_err(|e| {
        let full = e.to_string();
        let why = strip_position(&full);
        if why == "number out of range" {
            // serde_json refuses `2e400` rather than rounding it to inf
            return DataError::new(
                DataErrorKind::Overflow,
                format!(
                    "{name} line {}, column {}: {} overflows a 64-bit float (the largest is \
                     about 1.8e308)",
                    e.line(),
                    e.column(),
                    number_ending_at(text, e.line(), e.column())
                        .map_or_else(|| "a number".to_string(), |n| format!("`{n}`"))
                ),
            )
            .with_help(
                "check the value (a typo in the exponent?); to keep it, rescale the variable, \
                 e.g. store it in units of 1e300",
            );
        }
        DataError::new(
            DataErrorKind::MalformedJson,
            format!(
                "{name} line {}, column {}: invalid JSON: {}",
                e.line(),
                e.column(),
                why
            ),
        )
        .with_help(
            "a JSON data file is one object mapping names to numbers or arrays, \
             e.g. {\"N\": 3, \"y\": [1.5, 2, 0.3]}",
        )
    })?;
    let Value::Object(map) = value else {
        return Err(DataError::new(
            DataErrorKind::MalformedJson,
            format!(
                "{name}: the top level is {}, but a JSON data file must be an object",
                describe(&value)
            ),
        )
        .with_help("write the data as {\"name\": value, …}"));
    };
    if let Some(key) = first_duplicate_key(text) {
        return Err(DataError::new(
            DataErrorKind::MalformedJson,
            format!("{name}: key `{key}` appears more than once at the top level"),
        )
        .with_help(format!(
            "keep one `\"{key}\": …` entry; a JSON object cannot say which of two values is meant"
        )));
    }
    let entries = map
        .iter()
        .map(|(key, v)| (key.clone(), convert(name, key, v)))
        .collect();
    Ok(JsonSource {
        name: name.to_string(),
        entries,
    })
}

/// The first key that appears twice in the top-level object of `text` (already known to be valid
/// JSON with an object at the top), in file order; `None` when every key is distinct. serde_json's
/// `Value` keeps the last of two equal keys silently, so the keys are read a second time here.
fn first_duplicate_key(text: &str) -> Option<String> {
    struct Keys;
    impl<'de> serde::de::Visitor<'de> for Keys {
        type Value = Option<String>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            let mut seen = std::collections::HashSet::new();
            let mut dup = None;
            while let Some(key) = map.next_key::<String>()? {
                map.next_value::<serde::de::IgnoredAny>()?;
                if dup.is_none() && !seen.insert(key.clone()) {
                    dup = Some(key);
                }
            }
            Ok(dup)
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    serde::Deserializer::deserialize_map(&mut de, Keys)
        .ok()
        .flatten()
}

/// serde's messages end with " at line L column C"; the position is already in our prefix.
/// The number that ends at 1-based `line` and `column` (serde_json's position of an error
/// in a number), for messages; `None` when no number ends there.
fn number_ending_at(text: &str, line: usize, column: usize) -> Option<&str> {
    let row = text.lines().nth(line.checked_sub(1)?)?;
    let end = column.min(row.len());
    if !row.is_char_boundary(end) {
        return None;
    }
    let head = &row[..end];
    let start = head
        .rfind(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-')))
        .map_or(0, |i| i + 1);
    let number = &head[start..];
    number.bytes().any(|b| b.is_ascii_digit()).then_some(number)
}

fn strip_position(msg: &str) -> &str {
    match msg.rfind(" at line ") {
        Some(i) => &msg[..i],
        None => msg,
    }
}

fn describe(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Checks that `v` is a rectangular nested array of numbers and flattens it row-major.
fn convert(file: &str, key: &str, v: &Value) -> Result<JsonArray, DataError> {
    // The shape is read off the first element at each depth; every other element must agree.
    let mut dims = Vec::new();
    let mut cur = v;
    while let Value::Array(items) = cur {
        dims.push(items.len());
        match items.first() {
            Some(first) => cur = first,
            None => break,
        }
    }
    let mut values = Vec::new();
    let mut path = Vec::new();
    flatten(file, key, v, &dims, &mut path, &mut values)?;
    Ok(JsonArray {
        dims,
        values: values.into(),
    })
}

fn path_name(key: &str, path: &[usize]) -> String {
    if path.is_empty() {
        format!("`{key}`")
    } else {
        let idx: Vec<String> = path.iter().map(|i| (i + 1).to_string()).collect();
        format!("`{key}[{}]`", idx.join(", "))
    }
}

fn flatten(
    file: &str,
    key: &str,
    v: &Value,
    dims: &[usize],
    path: &mut Vec<usize>,
    out: &mut Vec<f64>,
) -> Result<(), DataError> {
    let depth = path.len();
    let ragged_help = "every row of a nested array must have the same length (Stan's data format \
                       has no ragged arrays)";
    match v {
        Value::Array(items) => {
            let Some(&expected) = dims.get(depth) else {
                let first = path_name(key, &vec![0; depth]);
                return Err(DataError::new(
                    DataErrorKind::Ragged,
                    format!(
                        "{file}, key `{key}`: {} is an array, but {first} is a number",
                        path_name(key, path)
                    ),
                )
                .with_help(ragged_help));
            };
            if items.len() != expected {
                return Err(DataError::new(
                    DataErrorKind::Ragged,
                    format!(
                        "{file}, key `{key}`: {} has {}, expected {expected}",
                        path_name(key, path),
                        count(items.len(), "element")
                    ),
                )
                .with_help(ragged_help));
            }
            for (i, item) in items.iter().enumerate() {
                path.push(i);
                flatten(file, key, item, dims, path, out)?;
                path.pop();
            }
            Ok(())
        }
        _ if depth < dims.len() => Err(DataError::new(
            DataErrorKind::Ragged,
            format!(
                "{file}, key `{key}`: {} is {}, expected an array of {}",
                path_name(key, path),
                describe(v),
                count(dims[depth], "element")
            ),
        )
        .with_help(ragged_help)),
        Value::Number(n) => {
            // Every serde_json number (without arbitrary precision) has an f64 value.
            out.push(n.as_f64().unwrap_or(f64::NAN));
            Ok(())
        }
        Value::String(s) => match s.to_ascii_lowercase().as_str() {
            "infinity" | "+infinity" | "inf" | "+inf" => {
                out.push(f64::INFINITY);
                Ok(())
            }
            "-infinity" | "-inf" => {
                out.push(f64::NEG_INFINITY);
                Ok(())
            }
            // a missing entry: refused at binding unless the variable is `@missing`
            "nan" | "na" => {
                out.push(f64::NAN);
                Ok(())
            }
            _ => Err(DataError::new(
                DataErrorKind::InvalidJsonValue,
                format!(
                    "{file}, key `{key}`: {} is the string {s:?}, but data values must be numbers",
                    path_name(key, path)
                ),
            )
            .with_help(
                "write numbers without quotes; only \"Infinity\", \"-Infinity\" and \"NaN\" \
                 may be strings",
            )),
        },
        Value::Null => {
            // a missing entry, as `"NA"`
            out.push(f64::NAN);
            Ok(())
        }
        _ => Err(DataError::new(
            DataErrorKind::InvalidJsonValue,
            format!(
                "{file}, key `{key}`: {} is {}, but data values must be numbers or arrays",
                path_name(key, path),
                describe(v)
            ),
        )
        .with_help("give numbers, or nested arrays of numbers (a matrix is an array of rows)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(src: &JsonSource, key: &str) -> JsonArray {
        src.entries[key].clone().unwrap()
    }

    #[test]
    fn arrays_built_in_memory_name_their_elements() {
        let src = JsonSource::from_arrays(
            "data",
            vec![
                ("J".into(), vec![], vec![8.0]),
                ("X".into(), vec![2, 3], (0..6).map(f64::from).collect()),
            ],
        )
        .expect("valid entries");
        let x = src.entries["X"].as_ref().expect("an array");
        assert_eq!(x.dims, [2, 3]);
        assert_eq!(
            src.element_location("X", &x.dims, 4),
            "data, key `X`, element `X[2, 2]`"
        );
        let err =
            JsonSource::from_arrays("data", vec![("y".into(), vec![3], vec![1.0])]).unwrap_err();
        assert!(err.message.contains("key `y`"), "{}", err.message);
    }

    #[test]
    fn scalars_vectors_matrices_and_special_strings() {
        let src = parse_json(
            "d.json",
            r#"{"N": 3, "y": [1, "+inf", "-Infinity"], "X": [[1, 2], [3, 4], [5, "NaN"]], "e": []}"#,
        )
        .unwrap();
        assert_eq!(
            entry(&src, "N"),
            JsonArray {
                dims: vec![],
                values: vec![3.0].into()
            }
        );
        let y = entry(&src, "y");
        assert_eq!(y.dims, vec![3]);
        assert_eq!(*y.values, vec![1.0, f64::INFINITY, f64::NEG_INFINITY]);
        let x = entry(&src, "X");
        assert_eq!(x.dims, vec![3, 2]);
        assert_eq!(&x.values[..5], &[1.0, 2.0, 3.0, 4.0, 5.0]);
        assert!(x.values[5].is_nan());
        assert_eq!(entry(&src, "e").dims, vec![0]);
        assert_eq!(
            src.element_location("X", &[3, 2], 3),
            "d.json, key `X`, element `X[2, 2]`"
        );
    }

    #[test]
    fn ragged_arrays_name_key_and_path() {
        let src = parse_json(
            "d.json",
            r#"{"y": [[1,2,3,4],[1,2,3,4],[1,2]], "z": [[1], 2], "w": [1, [2]], "s": ["a"]}"#,
        )
        .unwrap();
        let e = src.entries["y"].clone().unwrap_err();
        assert_eq!(e.kind, DataErrorKind::Ragged);
        assert_eq!(
            e.message,
            "d.json, key `y`: `y[3]` has 2 elements, expected 4"
        );
        let e = src.entries["z"].clone().unwrap_err();
        assert_eq!(
            e.message,
            "d.json, key `z`: `z[2]` is a number, expected an array of 1 element"
        );
        let e = src.entries["w"].clone().unwrap_err();
        assert_eq!(
            e.message,
            "d.json, key `w`: `w[2]` is an array, but `w[1]` is a number"
        );
        let e = src.entries["s"].clone().unwrap_err();
        assert_eq!(e.kind, DataErrorKind::InvalidJsonValue);
    }

    #[test]
    fn malformed_json_has_line_and_column() {
        let e = parse_json("d.json", "{\n  \"N\": 3,\n  \"y\": [1, 2,, 3]\n}").unwrap_err();
        assert_eq!(e.kind, DataErrorKind::MalformedJson);
        assert!(
            e.message
                .starts_with("d.json line 3, column 14: invalid JSON: "),
            "{}",
            e.message
        );
        let e = parse_json("d.json", "[1, 2]").unwrap_err();
        assert_eq!(
            e.message,
            "d.json: the top level is an array, but a JSON data file must be an object"
        );
    }
}
