//! Every posteriordb example under `examples/posteriordb/` compiles against its data; at a fixed
//! point its log density is finite, the value-only and gradient paths agree, the gradient matches
//! central finite differences, and write_array/unconstrain round-trip.

use std::path::Path;

use bayesc::data::{BoundData, DataValue};
use bayesc::graph::Model;
use bayesc::inference::LogDensity;
use bayesc::inference::rng::stream;
use bayesc::syntax::parser::parse_program;

/// Stan-format JSON → BoundData (dims from the nesting, row-major values).
fn json_data(path: &Path) -> BoundData {
    let text = std::fs::read_to_string(path).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut bd = BoundData::default();
    for (name, val) in v.as_object().unwrap() {
        let mut dims = Vec::new();
        let mut cur = val;
        while let Some(a) = cur.as_array() {
            dims.push(a.len());
            match a.first() {
                Some(f) => cur = f,
                None => break,
            }
        }
        let mut values = Vec::new();
        fn flat(v: &serde_json::Value, out: &mut Vec<f64>) {
            match v {
                serde_json::Value::Array(a) => a.iter().for_each(|x| flat(x, out)),
                x => out.push(x.as_f64().unwrap()),
            }
        }
        flat(val, &mut values);
        let is_int = values.iter().all(|x| x.fract() == 0.0);
        bd.values.insert(
            name.clone(),
            DataValue {
                dims,
                values: std::sync::Arc::new(values),
                is_int,
                column_major: false,
            },
        );
    }
    bd
}

#[test]
fn posteriordb_examples_compile_and_differentiate() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/posteriordb");
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.join("model.bayes").exists())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 10, "examples found: {dirs:?}");
    let mut failures = Vec::new();
    for dir in dirs {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let src = std::fs::read_to_string(dir.join("model.bayes")).unwrap();
        let prog = match parse_program(&src, 0) {
            Ok(p) => p,
            Err(e) => {
                failures.push(format!("{name}: parse error {e:?}"));
                continue;
            }
        };
        let data = json_data(&dir.join("data.json"));
        let m = match Model::new(&prog, &data) {
            Ok(m) => m,
            Err(e) => {
                failures.push(format!("{name}: {e}"));
                continue;
            }
        };
        let d = m.unconstrained_dim();
        let z: Vec<f64> = (0..d)
            .map(|i| 0.3 * ((i as f64) * 1.7 + 0.4).sin())
            .collect();
        let mut g = vec![0.0; d];
        let f = match m.log_density_grad(&z, &mut g) {
            Ok(f) => f,
            Err(e) => {
                failures.push(format!("{name}: {e}"));
                continue;
            }
        };
        if !f.is_finite() || m.log_density(&z).unwrap() != f {
            failures.push(format!(
                "{name}: log density {f} (value-only path differs or not finite)"
            ));
        }
        for k in 0..d {
            let h = 1e-6;
            let mut zp = z.clone();
            let mut zm = z.clone();
            zp[k] += h;
            zm[k] -= h;
            let fd = (m.log_density(&zp).unwrap() - m.log_density(&zm).unwrap()) / (2.0 * h);
            if (g[k] - fd).abs() > 1e-5 * (g[k].abs() + 1.0) + 1e-8 * f.abs() {
                failures.push(format!(
                    "{name}: ∂/∂ζ[{k}] = {} vs finite difference {fd}",
                    g[k]
                ));
            }
        }
        let mut rng = stream(7, 1);
        match m.write_array(&z, true, true, &mut rng) {
            Ok(x) => {
                let np = m.parameter_names().len();
                let nt = m.transformed_parameter_names().len();
                let ng = m.generated_quantity_names().len();
                if x.len() != np + nt + ng {
                    failures.push(format!("{name}: write_array length {}", x.len()));
                }
                let back = m.unconstrain(&x[..np]).unwrap();
                if back.iter().zip(&z).any(|(a, b)| (a - b).abs() > 1e-8) {
                    failures.push(format!("{name}: unconstrain does not invert write_array"));
                }
            }
            Err(e) => failures.push(format!("{name}: write_array {e}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// CSV columns → BoundData (one vector per numeric column, plus the row count under `size`).
fn csv_data(path: &Path, size: &str) -> BoundData {
    let mut rdr = csv::Reader::from_path(path).unwrap();
    let headers: Vec<String> = rdr.headers().unwrap().iter().map(String::from).collect();
    let mut cols: Vec<Vec<f64>> = vec![Vec::new(); headers.len()];
    for rec in rdr.records() {
        for (k, v) in rec.unwrap().iter().enumerate() {
            cols[k].push(v.parse().unwrap_or(f64::NAN));
        }
    }
    let mut bd = BoundData::default();
    let n = cols[0].len();
    bd.values.insert(
        size.into(),
        DataValue {
            dims: vec![],
            values: std::sync::Arc::new(vec![n as f64]),
            is_int: true,
            column_major: false,
        },
    );
    for (h, c) in headers.iter().zip(cols) {
        if c.iter().all(|x| !x.is_nan()) {
            let is_int = c.iter().all(|x| x.fract() == 0.0);
            bd.values.insert(
                h.clone(),
                DataValue {
                    dims: vec![n],
                    values: std::sync::Arc::new(c),
                    is_int,
                    column_major: false,
                },
            );
        }
    }
    bd
}

#[test]
fn top_level_csv_examples_compile_and_differentiate() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    for (dir, csv, size) in [
        ("eight_schools", "schools.csv", "J"),
        ("garch", "returns.csv", "T"),
        ("labour", "labour.csv", "N"),
    ] {
        let src = std::fs::read_to_string(root.join(dir).join("model.bayes")).unwrap();
        let prog = parse_program(&src, 0).unwrap();
        let data = csv_data(&root.join(dir).join(csv), size);
        let m = Model::new(&prog, &data).unwrap_or_else(|e| panic!("{dir}: {e}"));
        let d = m.unconstrained_dim();
        let z: Vec<f64> = (0..d)
            .map(|i| 0.2 * ((i as f64) * 1.3).sin() - 0.5)
            .collect();
        let mut g = vec![0.0; d];
        let f = m.log_density_grad(&z, &mut g).unwrap();
        assert!(f.is_finite(), "{dir}: {f}");
        for k in 0..d {
            let h = 1e-6;
            let mut zp = z.clone();
            let mut zm = z.clone();
            zp[k] += h;
            zm[k] -= h;
            let fd = (m.log_density(&zp).unwrap() - m.log_density(&zm).unwrap()) / (2.0 * h);
            assert!(
                (g[k] - fd).abs() <= 1e-5 * (g[k].abs() + 1.0) + 1e-8 * f.abs(),
                "{dir}: ∂/∂ζ[{k}] = {} vs {fd}",
                g[k]
            );
        }
    }
}
