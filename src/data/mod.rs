//! Data files → values bound to the `data` block: CSV (one column per variable) and JSON in
//! Stan's data format, checked against the declared types, sizes and bounds.

use std::collections::BTreeMap;

/// One data variable's value, in a layout independent of the graph.
///
/// `dims` are the declared sizes, outermost first: `[]` for a scalar, `[N]` for `vector[N]` or
/// `array[N] int`, `[R, C]` for `matrix[R, C]`, `[N, K]` for `array[N] vector[K]`.
/// `values` holds the elements in row-major (C) order over `dims`, integers stored exactly as f64.
#[derive(Clone, Debug, PartialEq)]
pub struct DataValue {
    pub dims: Vec<usize>,
    pub values: Vec<f64>,
    /// True when declared `int` (every value is then an exact integer).
    pub is_int: bool,
}

/// All data variables of a program after binding, by name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BoundData {
    pub values: BTreeMap<String, DataValue>,
}
