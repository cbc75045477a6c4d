//! A checked `.bayes` program (`_Program`) and the program bound to data (`_Model`): the log
//! density on the unconstrained scale, its gradient, the constraining transforms, and fits.

use std::path::Path;
use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use bayesc::data::DataSource;
use bayesc::data::csv::CsvSource;
use bayesc::data::json::JsonSource;
use bayesc::graph::Model;
use bayesc::inference::LogDensity;
use bayesc::inference::rng::stream;
use bayesc::pipeline::{self, Checked, Failure};
use bayesc::syntax::report::render_plain;
use bayesc::syntax::source::SourceMap;

use crate::{DataError, ModelError, bytes_of, f64s};

/// Renders a pipeline failure as the CLI prints it (codespan text with the source span),
/// without colour.
pub(crate) fn render(sources: &SourceMap, failure: Failure) -> String {
    failure
        .into_reports()
        .iter()
        .map(|d| render_plain(sources, d))
        .collect::<Vec<_>>()
        .join("")
        .trim_end()
        .to_string()
}

/// A parsed and checked program (`bayesc.Model` holds one): compiled once, bound to data
/// for each fit.
#[pyclass(name = "_Program", module = "bayesc._bayesc", frozen)]
pub struct Program {
    pub(crate) sources: SourceMap,
    pub(crate) checked: Checked,
    /// The model's name in messages and in the draws files' header (its path, or `<code>`).
    pub(crate) name: String,
}

#[pymethods]
impl Program {
    /// Parses and checks `text`, shown as `name` in messages; `include` lines are resolved in
    /// `folder` (the model file's folder; the current directory when `None`), then the stdlib.
    ///
    /// Raises `ModelError` with the rendered diagnostics (file:line:column and the source
    /// line with the offending span underlined).
    #[new]
    #[pyo3(signature = (name, text, folder=None))]
    fn new(name: String, text: String, folder: Option<String>) -> PyResult<Self> {
        let mut sources = SourceMap::new();
        let dir = folder.as_deref().map(Path::new);
        match pipeline::check_source_in(&mut sources, &name, &text, dir) {
            Ok(checked) => Ok(Program {
                sources,
                checked,
                name,
            }),
            Err(f) => Err(ModelError::new_err(render(&sources, f))),
        }
    }

    /// The semantic checks' warnings, rendered as the CLI prints them.
    fn warnings(&self) -> Vec<String> {
        self.checked
            .warnings
            .iter()
            .map(|w| render_plain(&self.sources, w).trim_end().to_string())
            .collect()
    }

    /// The names of the `data` block's variables, in declaration order.
    fn data_names(&self) -> Vec<String> {
        self.checked
            .program
            .data
            .iter()
            .map(|d| d.name.name.clone())
            .collect()
    }

    /// Binds data and compiles the log density (running `transformed data` once).
    ///
    /// `arrays`: `(key, dims, float64 bytes)` entries, as a JSON data file's keys (a dict of
    /// numpy arrays and scalars); `columns`: `(name, float64 bytes, [(row, text)])` columns, as
    /// a CSV file's (a pandas DataFrame; `text` for cells that are not numbers); `files`: data
    /// files read as `bayesc fit --data` reads them. Raises `DataError` naming the key and
    /// element (or column and row) at fault, with the declaration's span.
    #[pyo3(signature = (arrays, columns=None, files=Vec::new()))]
    fn bind<'py>(
        slf: &Bound<'py, Self>,
        arrays: Vec<(String, Vec<usize>, Bound<'py, PyBytes>)>,
        columns: Option<Vec<(String, Bound<'py, PyBytes>, Vec<(usize, String)>)>>,
        files: Vec<String>,
    ) -> PyResult<BoundModel> {
        let py = slf.py();
        let prog = slf.get();
        let data_error = |f: Failure| DataError::new_err(render(&prog.sources, f));
        let one = |e: bayesc::data::DataError| {
            use bayesc::syntax::report::ToDiagnostic;
            data_error(Failure::Reported(vec![e.to_diagnostic()]))
        };
        let mut data: Vec<DataSource> = Vec::new();
        if !files.is_empty() {
            let paths: Vec<_> = files.iter().map(std::path::PathBuf::from).collect();
            data.extend(pipeline::load_data(&paths).map_err(data_error)?);
        }
        if let Some(cols) = columns {
            let cols = cols
                .into_iter()
                .map(|(n, b, other)| Ok((n, f64s(b.as_bytes())?, other)))
                .collect::<PyResult<Vec<_>>>()?;
            data.push(DataSource::Csv(
                CsvSource::from_columns("DataFrame", cols).map_err(one)?,
            ));
        }
        if !arrays.is_empty() {
            let entries = arrays
                .into_iter()
                .map(|(k, dims, b)| Ok((k, dims, f64s(b.as_bytes())?)))
                .collect::<PyResult<Vec<_>>>()?;
            data.push(DataSource::Json(
                JsonSource::from_arrays("data", entries).map_err(one)?,
            ));
        }
        let model = py
            .detach(|| pipeline::compile(&prog.checked, &prog.sources, &data))
            .map_err(data_error)?;
        Ok(BoundModel {
            program: slf.clone().unbind(),
            model: Arc::new(model),
            data: Arc::new(data),
        })
    }
}

/// A program bound to data: the log density on the unconstrained scale and the fits.
#[pyclass(name = "_Model", module = "bayesc._bayesc", frozen)]
pub struct BoundModel {
    pub(crate) program: Py<Program>,
    pub(crate) model: Arc<Model>,
    /// The bound data sources (the minibatch plan reads the CSV row count from them).
    pub(crate) data: Arc<Vec<DataSource>>,
}

impl BoundModel {
    fn theta(&self, theta: &[u8]) -> PyResult<Vec<f64>> {
        let t = f64s(theta)?;
        if t.len() != self.model.dim() {
            return Err(PyValueError::new_err(format!(
                "theta has {} values, but the model has d = {} unconstrained parameters",
                t.len(),
                self.model.dim()
            )));
        }
        Ok(t)
    }
}

#[pymethods]
impl BoundModel {
    /// d, the number of unconstrained parameters.
    fn dim(&self) -> usize {
        self.model.dim()
    }

    /// Constrained parameter names (`beta[1]`, `Sigma[2,1]`, …), Stan's order.
    fn parameter_names(&self) -> Vec<String> {
        self.model.parameter_names()
    }

    /// The draws' column names: parameters, transformed parameters, generated quantities.
    fn draw_names(&self) -> Vec<String> {
        bayesc::fit::draw_names(&self.model)
    }

    /// The log density at unconstrained `theta` (float64 bytes of length d), with the
    /// Jacobian adjustment of the constraining transforms (`jacobian=True`, what the samplers
    /// use) or without it. Raises `ValueError` when it cannot be evaluated there (the message
    /// names the statement).
    #[pyo3(signature = (theta, jacobian=true))]
    fn log_density(&self, py: Python<'_>, theta: &[u8], jacobian: bool) -> PyResult<f64> {
        let t = self.theta(theta)?;
        let m = &self.model;
        py.detach(|| {
            if jacobian {
                m.log_density(&t)
            } else {
                m.with_jacobian(false).log_density(&t)
            }
        })
        .map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// The log density and its gradient (float64 bytes of length d) at `theta`, by the graph's
    /// reverse mode. Errors as `log_density`.
    #[pyo3(signature = (theta, jacobian=true))]
    fn log_density_grad<'py>(
        &self,
        py: Python<'py>,
        theta: &[u8],
        jacobian: bool,
    ) -> PyResult<(f64, Bound<'py, PyBytes>)> {
        let t = self.theta(theta)?;
        let m = &self.model;
        let mut g = vec![0.0; t.len()];
        let lp = py
            .detach(|| {
                if jacobian {
                    m.log_density_grad(&t, &mut g)
                } else {
                    m.with_jacobian(false).log_density_grad(&t, &mut g)
                }
            })
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok((lp, bytes_of(py, &g)))
    }

    /// Fits the model with the options of `bayesc fit` written as its command-line words
    /// (`["--method", "nuts", "--seed", "1"]`), with the GIL released; see
    /// [`crate::fitting::run`]. `threads` sizes a thread pool for this fit; `progress` shows
    /// the CLI's progress bar when standard error is a terminal.
    #[pyo3(signature = (words, threads=None, progress=true))]
    fn fit(
        slf: &Bound<'_, Self>,
        words: Vec<String>,
        threads: Option<usize>,
        progress: bool,
    ) -> PyResult<crate::fitting::Fit> {
        crate::fitting::run(slf.py(), slf, words, threads, progress)
    }

    /// Unconstrained `theta` → the constrained parameters, then (if asked) transformed
    /// parameters and generated quantities, in the order of `draw_names` (float64 bytes).
    /// Generated quantities draw from random stream 999 of `seed`.
    #[pyo3(signature = (theta, include_tp=false, include_gq=false, seed=0))]
    fn constrain<'py>(
        &self,
        py: Python<'py>,
        theta: &[u8],
        include_tp: bool,
        include_gq: bool,
        seed: u64,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let t = self.theta(theta)?;
        let mut rng = stream(seed, 999);
        let out = self
            .model
            .write_array(&t, include_tp, include_gq, &mut rng)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(bytes_of(py, &out))
    }

    /// Constrained parameters (in the order of `parameter_names`, float64 bytes) → theta.
    /// Raises `ValueError` for a wrong length or a value outside its declared support.
    fn unconstrain<'py>(&self, py: Python<'py>, values: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
        let v = f64s(values)?;
        let out = self
            .model
            .unconstrain(&v)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(bytes_of(py, &out))
    }
}
