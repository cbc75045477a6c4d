//! Initial values from JSON files: `--init FILE` (CmdStan's `init=FILE`).
//!
//! The file has the layout of a JSON data file (`data::json`): an object mapping parameter
//! names to numbers or nested arrays, row-major (a matrix is an array of its rows), with values
//! on the CONSTRAINED scale (σ = 0.5 for `real<lower=0> sigma`). It is read with the data
//! reader, so `"Infinity"`, `"NaN"` and `null` parse, and are then refused as non-finite.
//!
//! Parameters missing from the file start as the others do: uniform(−R, R) on the
//! unconstrained scale (R = `--init`'s default 2, [`crate::inference::mcmc::DEFAULT_INIT_RADIUS`]),
//! redrawn (up to [`MAX_FILL_TRIES`] times) until the log density and its gradient are finite.
//! A parameter whose bound depends on a missing parameter is checked against the bound at that
//! parameter's random start.
//!
//! Several chains (or Pathfinder's paths), as CmdStan: with n > 1 and a file `STEM_1.EXT`
//! beside `STEM.EXT`, chain c reads `STEM_c.EXT` (each must exist); otherwise every chain reads
//! the named file ([`init_files`]).
//!
//! Every problem is an error naming the file and the variable (and element): an unknown name
//! (with the closest parameter, or saying that it is a transformed parameter or generated
//! quantity), a wrong shape, a non-finite value, a value outside the declared support (below
//! or above a bound, exactly at one — its unconstrained value would be ±∞, where the log
//! density is −∞ — not a simplex, not ordered, not positive definite), and a point where the
//! log density is not finite.

use std::path::{Path, PathBuf};

use rand::RngExt;

use super::*;
use crate::data::json::JsonSource;

/// Random fills tried per chain for the parameters a file leaves out, before giving up on a
/// finite log density.
pub const MAX_FILL_TRIES: usize = 100;

/// The first random stream of the fills: chain (or path) c draws from stream 3000 + c of the
/// seed.
const FILL_STREAM: u64 = 3000;

/// The files giving the initial values of `n` chains from `--init file` (module docs):
/// `STEM_1.EXT` … `STEM_n.EXT` when n > 1 and `STEM_1.EXT` exists, else `file` n times.
///
/// Errors: a message naming the missing file (`file` itself, or `STEM_c.EXT` when the per-chain
/// files stop short of n), or saying that `file` does not end in `.json`.
pub fn init_files(file: &Path, n: usize) -> Result<Vec<PathBuf>, String> {
    let n = n.max(1);
    let ext = file
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    if ext.as_deref() != Some("json") {
        return Err(format!(
            "--init `{}`: initial values are read from a JSON file (ending in .json), as \
             CmdStan's `init=FILE`, e.g. {{\"mu\": 0.5, \"sigma\": 1.2}}; or give a radius R ≥ 0 \
             or `pathfinder`",
            file.display()
        ));
    }
    let per_chain = |c: usize| {
        let stem = file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let name = match file.extension() {
            Some(e) => format!("{stem}_{c}.{}", e.to_string_lossy()),
            None => format!("{stem}_{c}"),
        };
        file.with_file_name(name)
    };
    if n > 1 && per_chain(1).is_file() {
        let files: Vec<PathBuf> = (1..=n).map(per_chain).collect();
        if let Some(missing) = files.iter().find(|f| !f.is_file()) {
            return Err(format!(
                "--init {}: `{}` exists, so each of the {n} chains reads its own file, but \
                 `{}` does not exist; give every chain its file or remove `{}` to use `{}` for all",
                file.display(),
                files[0].display(),
                missing.display(),
                files[0].display(),
                file.display()
            ));
        }
        return Ok(files);
    }
    if !file.is_file() {
        return Err(format!(
            "--init `{}`: no such file; --init takes a radius R ≥ 0, `pathfinder`, or a JSON \
             file of initial values",
            file.display()
        ));
    }
    Ok(vec![file.to_path_buf(); n])
}

/// The initial values one file gives: the constrained values of every parameter in
/// [`Model::parameter_names`] order (0 for those not given) and which parameters are given.
#[derive(Clone, Debug, PartialEq)]
pub struct InitValues {
    /// The file, as shown in messages.
    pub file: String,
    /// Constrained values, [`Model::parameter_names`] order.
    pub values: Vec<f64>,
    /// Per parameter ([`Model::parameter_layouts`] order): given by the file.
    pub given: Vec<bool>,
}

/// The base names (before any `[`) of `names`, deduplicated in order.
fn base_names(names: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for n in names {
        let b = n.split('[').next().unwrap_or(n).to_string();
        if out.last() != Some(&b) && !out.contains(&b) {
            out.push(b);
        }
    }
    out
}

/// `name[i, j]` for 1-based `index` (just `name` when empty).
fn element_name(name: &str, index: &[usize]) -> String {
    if index.is_empty() {
        name.to_string()
    } else {
        let i: Vec<String> = index.iter().map(|i| i.to_string()).collect();
        format!("{name}[{}]", i.join(", "))
    }
}

/// The row-major offset of 1-based `index` within `dims`.
fn row_major(dims: &[usize], index: &[usize]) -> usize {
    dims.iter()
        .zip(index)
        .fold(0, |off, (&n, &i)| off * n + (i - 1))
}

/// Reads and checks the initial values in `path` for `model` (module docs; no random fill
/// yet: see [`initial_points`]).
///
/// Errors: the file cannot be read or is not JSON (the data reader's message), an unknown key,
/// a wrong shape, or a non-finite value; each message names the file and the key (and
/// element).
pub fn read_init_values(model: &Model, path: &Path) -> Result<InitValues, String> {
    let shown = path.display().to_string();
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    if ext.as_deref() != Some("json") {
        return Err(format!(
            "--init `{shown}`: initial values are read from a JSON file (ending in .json), as \
             CmdStan's `init=FILE`, e.g. {{\"mu\": 0.5, \"sigma\": 1.2}}"
        ));
    }
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("--init: cannot read `{shown}`: {e}"))?;
    let source: JsonSource = match crate::data::load_json_str(&shown, &text) {
        Ok(crate::data::DataSource::Json(j)) => j,
        Ok(_) => unreachable!("load_json_str returns JSON"),
        Err(e) => return Err(format!("--init: {}", e.message)),
    };
    let layouts = model.parameter_layouts();
    let names = model.parameter_names();
    let mut values = vec![0.0; names.len()];
    let mut given = vec![false; layouts.len()];
    // first constrained value of each parameter
    let mut starts = Vec::with_capacity(layouts.len());
    let mut pos = 0;
    for l in &layouts {
        starts.push(pos);
        pos += l.dims.iter().product::<usize>();
    }
    for (key, entry) in &source.entries {
        let Some(p) = layouts.iter().position(|l| &l.name == key) else {
            let outputs = base_names(&model.transformed_parameter_names());
            let gqs = base_names(&model.generated_quantity_names());
            let what = if outputs.contains(key) {
                " is a transformed parameter: initial values are given for parameters only"
                    .to_string()
            } else if gqs.contains(key) {
                " is a generated quantity: initial values are given for parameters only".to_string()
            } else {
                let params: Vec<&str> = layouts.iter().map(|l| l.name.as_str()).collect();
                let hint = crate::data::suggest::best_match(key, params.iter().copied())
                    .map(|m| format!("; did you mean `{m}`?"))
                    .unwrap_or_default();
                format!(
                    " is not a parameter of the model (its parameters: {}){hint}",
                    if params.is_empty() {
                        "none".to_string()
                    } else {
                        params
                            .iter()
                            .map(|n| format!("`{n}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    }
                )
            };
            return Err(format!("--init {shown}: key `{key}`{what}"));
        };
        let arr = entry
            .as_ref()
            .map_err(|e| format!("--init: {}", e.message))?;
        let want = &layouts[p].dims;
        let count: usize = want.iter().product();
        let same_shape = arr.dims == *want || (count == 0 && arr.values.is_empty());
        if !same_shape {
            let shape = |d: &[usize]| {
                if d.is_empty() {
                    "a number".to_string()
                } else {
                    format!(
                        "an array of shape [{}]",
                        d.iter()
                            .map(|n| n.to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                }
            };
            return Err(format!(
                "--init {shown}: key `{key}` is {}, but `{key}` is declared with shape {} \
                 ({}; a matrix is an array of its rows)",
                shape(&arr.dims),
                if want.is_empty() {
                    "[] (a scalar)".to_string()
                } else {
                    format!(
                        "[{}]",
                        want.iter()
                            .map(|n| n.to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                },
                if want.is_empty() {
                    "give a number".to_string()
                } else {
                    format!("give {}", shape(want))
                }
            ));
        }
        if let Some(bad) = arr.values.iter().position(|v| !v.is_finite()) {
            return Err(format!(
                "--init {}: the value {} is not finite; initial values must be finite numbers",
                source.element_location(key, &arr.dims, bad),
                arr.values[bad]
            ));
        }
        // Stan order (first index fastest) from the file's row-major nesting
        let start = starts[p];
        for (k, name) in names[start..start + count].iter().enumerate() {
            let index: Vec<usize> = match name.find('[') {
                Some(open) => name[open + 1..name.len() - 1]
                    .split(',')
                    .map(|i| i.trim().parse::<usize>().unwrap_or(1))
                    .collect(),
                None => Vec::new(),
            };
            values[start + k] = arr.values[row_major(want, &index)];
        }
        given[p] = true;
    }
    Ok(InitValues {
        file: shown,
        values,
        given,
    })
}

/// ζ for `init` on `model`, with the parameters it does not give drawn uniform(−`radius`,
/// `radius`) on the unconstrained scale from `rng` (redrawn until the log density and its
/// gradient are finite, at most [`MAX_FILL_TRIES`] times).
///
/// Errors ([`FitError::InitValues`]): a value outside its support (naming the file, the
/// parameter and the element, with the value and the reason), or no finite log density at the
/// given values (with the model's message); [`FitError::Model`] for an unrecoverable model
/// error.
pub fn initial_point(
    model: &Model,
    init: &InitValues,
    radius: f64,
    rng: &mut StreamRng,
) -> Result<Vec<f64>, FitError> {
    let d = model.dim();
    let layouts = model.parameter_layouts();
    let all_given = init.given.iter().all(|&g| g);
    let mut grad = vec![0.0; d];
    let mut last = String::new();
    for _ in 0..MAX_FILL_TRIES {
        let fill: Vec<f64> = (0..d)
            .map(|_| {
                if radius > 0.0 && !all_given {
                    rng.random_range(-radius..radius)
                } else {
                    0.0
                }
            })
            .collect();
        let mut theta = if all_given {
            init.values.clone()
        } else {
            match model.write_array(&fill, false, false, &mut stream(0, 0)) {
                Ok(t) => t,
                Err(e) if e.recoverable => {
                    last = e.to_string();
                    continue;
                }
                Err(e) => return Err(FitError::Model(e)),
            }
        };
        let mut pos = 0;
        for (p, l) in layouts.iter().enumerate() {
            let n: usize = l.dims.iter().product();
            if init.given[p] {
                theta[pos..pos + n].copy_from_slice(&init.values[pos..pos + n]);
            }
            pos += n;
        }
        let zeta = model
            .unconstrain_partial(&theta, &init.given, &fill)
            .map_err(|f| {
                let l = &layouts[f.param];
                let start: usize = layouts[..f.param]
                    .iter()
                    .map(|l| l.dims.iter().product::<usize>())
                    .sum();
                let value = if f.index.len() == l.dims.len() {
                    // Stan-order position of the element among the parameter's names
                    let target = element_name(&l.name, &f.index).replace(' ', "");
                    let names = model.parameter_names();
                    names[start..]
                        .iter()
                        .position(|n| n.replace(' ', "") == target)
                        .map(|k| format!(" = {}", theta[start + k]))
                        .unwrap_or_default()
                } else {
                    String::new()
                };
                FitError::InitValues(format!(
                    "--init {}: `{}`{value} {}",
                    init.file,
                    element_name(&l.name, &f.index),
                    f.message
                ))
            })?;
        match model.log_density_grad(&zeta, &mut grad) {
            Ok(lp) if lp.is_finite() && grad.iter().all(|g| g.is_finite()) => return Ok(zeta),
            Ok(lp) if !lp.is_finite() => last = format!("the log density is {lp}"),
            Ok(_) => {
                let i = grad.iter().position(|g| !g.is_finite()).unwrap_or(0);
                last = format!(
                    "the gradient of the log density with respect to {} is {}",
                    model.coordinate_name(i),
                    grad[i]
                );
            }
            Err(e) if !e.recoverable => return Err(FitError::Model(e)),
            Err(e) => last = e.to_string(),
        }
        if all_given || radius == 0.0 {
            break;
        }
    }
    Err(FitError::InitValues(if all_given || radius == 0.0 {
        format!(
            "--init {}: the model cannot start at these initial values: {last}",
            init.file
        )
    } else {
        format!(
            "--init {}: no start with a finite log density in {MAX_FILL_TRIES} random draws of \
             the parameters the file leaves out (last: {last}); give them in the file too",
            init.file
        )
    }))
}

/// The unconstrained starting points of `n` chains (or paths) from `--init file`: the files of
/// [`init_files`], read by [`read_init_values`], each completed by [`initial_point`] with
/// random stream 3000 + c of `seed` for chain c (0-based).
///
/// Errors: [`FitError::InitValues`] naming the file (and variable, element) at fault;
/// [`FitError::Model`] for an unrecoverable model error.
pub fn initial_points(
    model: &Model,
    file: &Path,
    n: usize,
    radius: f64,
    seed: u64,
) -> Result<Vec<Vec<f64>>, FitError> {
    let files = init_files(file, n).map_err(FitError::InitValues)?;
    let mut read: Vec<(PathBuf, InitValues)> = Vec::new();
    let mut points = Vec::with_capacity(files.len());
    for (c, f) in files.iter().enumerate() {
        let values = match read.iter().find(|(p, _)| p == f) {
            Some((_, v)) => v.clone(),
            None => {
                let v = read_init_values(model, f).map_err(FitError::InitValues)?;
                read.push((f.clone(), v.clone()));
                v
            }
        };
        let mut rng = stream(seed, FILL_STREAM + c as u64);
        points.push(initial_point(model, &values, radius, &mut rng)?);
    }
    Ok(points)
}

/// The starting points of `n` chains or paths for `options` when `--init FILE` was given
/// ([`FitOptions::init_file`]; R the MCMC radius `options.mcmc.init_radius`), else `None`.
///
/// Errors: as [`initial_points`].
pub(super) fn user_starts(
    model: &Model,
    options: &FitOptions,
    n: usize,
) -> Result<Option<Vec<Vec<f64>>>, FitError> {
    match &options.init_file {
        None => Ok(None),
        Some(f) => initial_points(model, f, n, options.mcmc.init_radius, options.seed).map(Some),
    }
}

/// The one starting point of a method that has one (optimize, Laplace's mode search, the
/// variational methods) with `--init FILE`: chain 1's point of [`user_starts`]; `None` without
/// the flag.
///
/// Errors: as [`initial_points`].
pub(super) fn user_start(
    model: &Model,
    options: &FitOptions,
) -> Result<Option<Vec<f64>>, FitError> {
    Ok(user_starts(model, options, 1)?.and_then(|mut v| v.pop()))
}
