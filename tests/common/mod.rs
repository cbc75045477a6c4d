//! Helpers shared by the integration tests: compile shipped examples, read reference fits.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use bayesc::graph::Model;
use bayesc::pipeline;
use bayesc::syntax::report::render_plain;
use bayesc::syntax::source::SourceMap;

/// The repository root (where Cargo.toml is).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `../shared/validation` beside the checkout (present on developer machines and in CI).
pub fn validation_dir() -> PathBuf {
    root().join("../shared/validation")
}

/// Compiles `model` against `data` files (paths relative to the repository root), panicking with
/// the rendered diagnostics on failure.
pub fn compile(model: &str, data: &[&str]) -> Model {
    let mut sources = SourceMap::new();
    let result = pipeline::check_file(&mut sources, &root().join(model)).and_then(|checked| {
        let paths: Vec<PathBuf> = data.iter().map(|d| root().join(d)).collect();
        let data = pipeline::load_data(&paths)?;
        pipeline::compile(&checked, &sources, &data)
    });
    match result {
        Ok(m) => m,
        Err(f) => {
            let text: String = f
                .into_reports()
                .iter()
                .map(|d| render_plain(&sources, d))
                .collect();
            panic!("compiling {model} failed:\n{text}");
        }
    }
}

/// One row of a reference posterior summary.
#[derive(Debug, Clone)]
pub struct RefRow {
    pub name: String,
    pub mean: f64,
    pub sd: f64,
}

/// Reads a reference summary CSV with columns `name, mean, sd, …`.
pub fn read_reference(path: &Path) -> Vec<RefRow> {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("header").split(',').collect();
    let col = |n: &str| {
        header
            .iter()
            .position(|h| *h == n)
            .unwrap_or_else(|| panic!("no column {n}"))
    };
    let (ci, cm, cs) = (col("name"), col("mean"), col("sd"));
    lines
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            RefRow {
                name: f[ci].to_string(),
                mean: f[cm].parse().unwrap(),
                sd: f[cs].parse().unwrap(),
            }
        })
        .collect()
}

/// Mean and sd of each column of one-chain draws (`n × k` row-major).
pub fn column_moments(flat: &[f64], k: usize) -> Vec<(f64, f64)> {
    let n = flat.len() / k;
    (0..k)
        .map(|j| {
            let m = (0..n).map(|i| flat[i * k + j]).sum::<f64>() / n as f64;
            let v = (0..n).map(|i| (flat[i * k + j] - m).powi(2)).sum::<f64>() / (n as f64 - 1.0);
            (m, v.sqrt())
        })
        .collect()
}
