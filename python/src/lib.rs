//! `bayesc._bayesc`: the compiled half of the Python package. It calls the same library
//! functions as `bayesc fit` — `pipeline::check_source` / `pipeline::compile`,
//! `fit::args::parse_option_words` / `options_from_args`, `fit::fit` and the output writers —
//! so that a Python fit is the CLI's fit (same draws for the same seed), with no subprocess
//! and no file in between. Numbers cross the boundary as native-endian `f64` bytes, which the
//! Python half (`bayesc/__init__.py`) views as numpy arrays; the classes here are private
//! (`_Program`, `_Model`, `_Fit`) and wrapped by the public ones in Python.

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

mod fitting;
mod program;

create_exception!(
    _bayesc,
    ModelError,
    PyException,
    "The model does not parse or check: the message is bayesc's diagnostic with its source span."
);
create_exception!(
    _bayesc,
    DataError,
    PyException,
    "The data do not fit the model's `data` block: the message names the key (or column) and \
     the element (or row)."
);
create_exception!(
    _bayesc,
    FitError,
    PyException,
    "A fit could not run or finish (initialisation failed, the model cannot be evaluated)."
);
create_exception!(
    _bayesc,
    OptionError,
    PyValueError,
    "A fit option is unknown, malformed or does not apply to the method: the message is the \
     CLI's."
);

/// `f64` values from native-endian bytes (numpy's `tobytes()` of a float64 array).
///
/// Errors: a byte count that is not a multiple of 8 (`ValueError`).
pub(crate) fn f64s(bytes: &[u8]) -> PyResult<Vec<f64>> {
    if bytes.len() % 8 != 0 {
        return Err(PyValueError::new_err(format!(
            "expected float64 bytes, got {} bytes (not a multiple of 8)",
            bytes.len()
        )));
    }
    Ok(bytes
        .chunks_exact(8)
        .map(|c| f64::from_ne_bytes(c.try_into().expect("chunks of 8")))
        .collect())
}

/// `values` as native-endian bytes, for `numpy.frombuffer`.
pub(crate) fn bytes_of<'py>(py: Python<'py>, values: &[f64]) -> Bound<'py, PyBytes> {
    let mut out = Vec::with_capacity(values.len() * 8);
    for v in values {
        out.extend_from_slice(&v.to_ne_bytes());
    }
    PyBytes::new(py, &out)
}

/// The extension module.
#[pymodule]
fn _bayesc(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("ModelError", py.get_type::<ModelError>())?;
    m.add("DataError", py.get_type::<DataError>())?;
    m.add("FitError", py.get_type::<FitError>())?;
    m.add("OptionError", py.get_type::<OptionError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<program::Program>()?;
    m.add_class::<program::BoundModel>()?;
    m.add_class::<fitting::Fit>()?;
    Ok(())
}
