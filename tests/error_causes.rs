//! Errors that name their cause (issue 13, item 9): a non-finite gradient at the initial values
//! names the parameter, not "coordinate 1", and the advice mentions "the statement named above"
//! only when a statement was named.

mod common;

use std::sync::atomic::AtomicBool;

use bayesc::inference::mcmc::{McmcSettings, sample};
use bayesc::inference::{DensityError, LogDensity};

/// A density whose every evaluation fails with `error` (recoverable).
struct Failing {
    error: DensityError,
}

impl LogDensity for Failing {
    fn dim(&self) -> usize {
        1
    }
    fn log_density(&self, _: &[f64]) -> Result<f64, DensityError> {
        Err(self.error.clone())
    }
    fn log_density_grad(&self, _: &[f64], _: &mut [f64]) -> Result<f64, DensityError> {
        Err(self.error.clone())
    }
}

fn settings() -> McmcSettings {
    McmcSettings {
        chains: 1,
        ..McmcSettings::default()
    }
}

#[test]
fn a_nan_gradient_at_the_initial_values_names_the_parameter() {
    // d/dx sqrt(x²) at x = 0 is ∞·0 = NaN, while the value (0) is finite
    let model = common::compile_source(
        "nan_grad.bayes",
        "parameters { real mu; real x; }\nmodel {\n  mu ~ normal(0, 1);\n  x ~ normal(0, 1);\n  target += sqrt(square(x));\n}\n",
        None,
        &[],
    );
    let stop = AtomicBool::new(false);
    let err = sample(&model, &settings(), &[vec![0.5, 0.0]], &|_| {}, &stop).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("with respect to `x`"), "{text}");
    assert!(!text.contains("coordinate 2"), "{text}");
    assert!(!text.contains("statement named above"), "{text}");
    // a vector parameter names its element
    let model = common::compile_source(
        "nan_grad_vec.bayes",
        "parameters { vector[3] v; }\nmodel {\n  v ~ normal(0, 1);\n  target += sqrt(square(v[2]));\n}\n",
        None,
        &[],
    );
    let err = sample(&model, &settings(), &[vec![0.5, 0.0, 0.3]], &|_| {}, &stop).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("`v` (unconstrained coordinate 2 of 3)"),
        "{text}"
    );
}

#[test]
fn the_statement_named_above_is_mentioned_only_when_one_is_named() {
    let stop = AtomicBool::new(false);
    let unnamed = Failing {
        error: DensityError::recoverable("the log density is -inf"),
    };
    let text = sample(&unnamed, &settings(), &[], &|_| {}, &stop)
        .unwrap_err()
        .to_string();
    assert!(!text.contains("statement named above"), "{text}");
    assert!(text.contains("every statement of the model"), "{text}");
    let named = Failing {
        error: DensityError {
            message: "normal_lpdf: Scale parameter is -1, but must be positive finite".into(),
            location: Some("model.bayes:4:3".into()),
            recoverable: true,
        },
    };
    let text = sample(&named, &settings(), &[], &|_| {}, &stop)
        .unwrap_err()
        .to_string();
    assert!(
        text.contains("model.bayes:4:3") && text.contains("statement named above"),
        "{text}"
    );
}

/// What `bayesc check` prints for model `text`: the rendered errors, or "" when it checks.
fn check_errors(text: &str) -> String {
    use bayesc::pipeline;
    use bayesc::syntax::report::render_plain;
    use bayesc::syntax::source::SourceMap;
    let mut sources = SourceMap::new();
    match pipeline::check_source(&mut sources, "m.bayes", text) {
        Ok(_) => String::new(),
        Err(f) => f
            .into_reports()
            .iter()
            .map(|d| render_plain(&sources, d))
            .collect(),
    }
}

#[test]
fn what_check_accepts_runs_rng_in_transformed_data_is_refused_and_matrix_division_runs() {
    let rng = check_errors(
        "transformed data {\n  real z = normal_rng(0, 1);\n}\nparameters { real mu; }\nmodel { mu ~ normal(z, 1); }\n",
    );
    assert!(
        rng.contains("normal_rng")
            && rng.contains("transformed data")
            && rng.contains("not supported yet"),
        "{rng}"
    );
    // still allowed where it runs
    assert_eq!(
        check_errors(
            "parameters { real mu; }\nmodel { mu ~ normal(0, 1); }\ngenerated quantities { real z = normal_rng(mu, 1); }\n"
        ),
        ""
    );
    // Matrix division checks and runs: `A \ v` = mdivide_left(A, v), `v' / A` and `A / A` =
    // mdivide_right (values against numpy in tests/linalg_gp.rs).
    for (expr, value) in [("A \\ v", 1.75), ("v' / A", 1.625), ("A / A", 2.0)] {
        let text = format!(
            "data {{ matrix[2, 2] A; vector[2] v; }}\nparameters {{ real mu; }}\nmodel {{\n  target += sum({expr}) - 0.5 * mu^2;\n}}\n"
        );
        assert_eq!(check_errors(&text), "", "`{expr}`");
        // A = [[2, 1], [0, 4]], v = [3, 2]: A⁻¹v = [1.25, 0.5], v'A⁻¹ = [1.5, 0.125], A A⁻¹ = I;
        // evaluated at mu = 0, where the −½mu² term (which makes mu a used parameter) is 0.
        let m = common::compile_source(
            "div.bayes",
            &text,
            Some(r#"{"A": [[2, 1], [0, 4]], "v": [3, 2]}"#),
            &[],
        );
        let lp = bayesc::inference::LogDensity::log_density(&m, &[0.0]).unwrap();
        assert!((lp - value).abs() < 1e-12, "`{expr}`: {lp}");
    }
}
