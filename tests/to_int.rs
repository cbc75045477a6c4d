//! `to_int` (Stan's `int to_int(data real x)`): its values in `transformed data` and
//! `generated quantities` (truncation toward zero, elementwise on arrays), its range errors, and
//! its use on data in the model block.

mod common;

use bayesc::graph::Model;
use bayesc::inference::LogDensity;

fn compile(text: &str, json: &str) -> Model {
    common::compile_source("to_int.bayes", text, Some(json), &[])
}

/// The generated quantities at the unconstrained point `zeta`.
fn outputs(model: &Model, zeta: &[f64]) -> Vec<f64> {
    let mut rng = bayesc::inference::rng::stream(1, 1);
    let all = model
        .write_array(zeta, false, true, &mut rng)
        .expect("generated quantities run");
    all[zeta.len()..].to_vec()
}

#[test]
fn truncates_toward_zero_in_transformed_data_and_generated_quantities() {
    let model = compile(
        "
data { real c; array[4] real xs; }
transformed data {
  int k = to_int(c);
  array[4] int ks = to_int(xs);
  int lo = to_int(-2147483648.0);
  int hi = to_int(2147483647.0);
  int same = to_int(-7);
}
parameters { real mu; }
model { mu ~ normal(0, 1); }
generated quantities {
  int gk = k;
  array[4] int gks = ks;
  int glo = lo;
  int ghi = hi;
  int gsame = same;
  int from_mu = to_int(mu * 10);
}",
        r#"{"c": -3.99, "xs": [2.5, -2.5, 0.999, -0.0]}"#,
    );
    assert_eq!(
        outputs(&model, &[0.37]),
        vec![
            -3.0,
            2.0,
            -2.0,
            0.0,
            0.0,
            -2147483648.0,
            2147483647.0,
            -7.0,
            3.0
        ]
    );
    assert_eq!(outputs(&model, &[-0.26])[8], -2.0);
}

#[test]
fn data_in_the_model_block_shifts_the_log_density_by_the_truncated_value() {
    // y ~ normal(mu + to_int(c), 1) with c = 2.9: the mean is mu + 2
    let with = compile(
        "data { real c; real y; } parameters { real mu; } \
         model { y ~ normal(mu + to_int(c), 1); }",
        r#"{"c": 2.9, "y": 1.5}"#,
    );
    let shifted = compile(
        "data { real y; } parameters { real mu; } model { y ~ normal(mu + 2, 1); }",
        r#"{"y": 1.5}"#,
    );
    for mu in [-1.0, 0.0, 0.8] {
        let a = with.log_density(&[mu]).expect("finite");
        let b = shifted.log_density(&[mu]).expect("finite");
        assert!((a - b).abs() < 1e-12, "mu = {mu}: {a} vs {b}");
    }
}

/// The rendered error of checking and compiling `text` against the JSON data `json`.
fn compile_error(text: &str, json: &str) -> String {
    use bayesc::data::{DataSource, json::parse_json};
    use bayesc::pipeline;
    let mut sources = bayesc::syntax::source::SourceMap::new();
    let result = pipeline::check_source(&mut sources, "to_int.bayes", text).and_then(|checked| {
        let data = vec![DataSource::Json(
            parse_json("data.json", json).expect("test data is valid JSON"),
        )];
        pipeline::compile(&checked, &sources, &data)
    });
    common::rendered(&sources, result)
}

#[test]
fn nan_and_out_of_range_values_are_errors_naming_the_value() {
    let model = |arg: &str| {
        format!(
            "data {{ real c; }} transformed data {{ int k = to_int({arg}); }} \
             parameters {{ real mu; }} model {{ mu ~ normal(0, 1); }}"
        )
    };
    for (json, arg, shown) in [
        (r#"{"c": 3e9}"#, "c", "3000000000"),
        (r#"{"c": -2147483649}"#, "c", "-2147483649"),
        (r#"{"c": 2147483647.5}"#, "c", "2147483647.5"),
        (r#"{"c": 0}"#, "not_a_number()", "NaN"),
        (r#"{"c": 0}"#, "positive_infinity()", "inf"),
        (r#"{"c": -1e300}"#, "c", "-1e300"),
    ] {
        let err = compile_error(&model(arg), json);
        assert!(
            err.contains(&format!(
                "to_int: {shown} is not in the range of int (-2147483648 to 2147483647)"
            )),
            "{json} {arg}: {err}"
        );
    }
    // as in Stan, the range is checked before truncating: -2147483648.9 is outside it
    let err = compile_error(&model("c"), r#"{"c": -2147483648.9}"#);
    assert!(
        err.contains("to_int: -2147483648.9 is not in the range"),
        "{err}"
    );
    assert_eq!(compile_error(&model("c"), r#"{"c": -2147483647.9}"#), "");
}
