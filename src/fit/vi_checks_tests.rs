//! Tests of the advice in `vi_checks`: a remedy never names the method that was run.

use super::*;
use crate::inference::vi::{GaussianFit, RunRecord};

/// A one-coordinate fit whose ELBO went from `start` to a best smoothed `end`.
fn fit(start: f64, end: f64) -> GaussianFit {
    let mut record = RunRecord::empty();
    record.elbo_trace = vec![start];
    record.best_smoothed_elbo = end;
    GaussianFit::diagonal(vec![0.0], vec![1.0], record)
}

#[test]
fn other_methods_leave_out_the_method_that_ran() {
    let pair = [Method::Qnvb, Method::Ivon];
    assert_eq!(other_methods(Method::Ivon, &pair), "qnvb");
    assert_eq!(other_methods(Method::Qnvb, &pair), "ivon");
    assert_eq!(other_methods(Method::Bbb, &pair), "qnvb or ivon");
    let pair = [Method::Qbvi, Method::Nuts];
    assert_eq!(other_methods(Method::Qbvi, &pair), "nuts");
    assert_eq!(other_methods(Method::Ivon, &pair), "qbvi or nuts");
}

#[test]
fn a_worsened_ivon_fit_is_not_told_to_use_ivon() {
    // the REPL's IVON fit of labour from a random start (seed 1) before it had full-batch
    // IVON's plan: -15234.668 at the start, -13113158.473 at the end
    let f = fit(-15234.668, -13113158.473);
    let ivon = worsened_phrase(&f, Method::Ivon, true).unwrap();
    assert!(
        ivon.starts_with("the ELBO ended at -13113158.473, below the -15234.668"),
        "{ivon}"
    );
    assert!(
        ivon.ends_with(
            "the random start (--random-init) is far from the posterior, where the log density \
             is steep and the steps overshoot; start at the mode (drop \
             --random-init: the default), or use --method nuts"
        ),
        "{ivon}"
    );
    assert!(!ivon.contains("ivon"), "{ivon}");
    // from the mode there is no mode start to suggest
    let from_mode = worsened_phrase(&f, Method::Ivon, false).unwrap();
    assert!(
        from_mode.ends_with("(a tenth of the one above), or --method qnvb"),
        "{from_mode}"
    );
    // another method is offered both
    let bbb = worsened_phrase(&f, Method::Bbb, false).unwrap();
    assert!(bbb.ends_with("or --method qnvb or ivon"), "{bbb}");
    // the cause alone names no method
    let cause = worsened_cause(&f).unwrap();
    assert!(!cause.contains("--method"), "{cause}");
    // a fit that improved has neither
    assert_eq!(
        worsened_phrase(&fit(-15234.7, -471.9), Method::Ivon, true),
        None
    );
}

#[test]
fn the_not_converged_remedy_never_names_the_method_that_ran() {
    for method in [Method::Qbvi, Method::Ivon, Method::Bbb, Method::Vadam] {
        for random_start in [true, false] {
            let remedy = not_converged_remedy(random_start, method, "a cause");
            let named = remedy
                .split("--method ")
                .nth(1)
                .unwrap_or_else(|| panic!("no method in {remedy}"));
            assert!(
                named.split(" or ").all(|m| m != method.to_string()),
                "{method}: {remedy}"
            );
        }
    }
    assert_eq!(
        not_converged_remedy(true, Method::Qbvi, "a cause"),
        "start at the mode (drop --random-init), or use --method nuts"
    );
    assert_eq!(
        not_converged_remedy(false, Method::Ivon, "a cause"),
        "a cause; try another --step-size, or use --method qbvi or nuts"
    );
}

#[test]
fn the_advised_step_size_is_typed_with_two_digits() {
    assert_eq!(two_digits(0.00089), "0.00089");
    assert_eq!(two_digits(0.008_876), "0.0089");
    assert_eq!(two_digits(0.05), "0.050");
    assert_eq!(two_digits(0.005), "0.0050");
}

#[test]
fn a_minibatch_qbvi_fit_off_its_optimum_is_advised_a_tenth_of_its_step_size() {
    use super::super::stationarity::OffOptimum;
    let off = OffOptimum::Offset {
        coordinate: 0,
        sds: 0.26,
    };
    let batch = BatchNoise {
        batch_size: 32,
        n_obs: 753,
        spread: 0.0,
        step_size: Some(0.008_876),
    };
    let names = vec!["a".to_string()];
    let text = off_optimum_phrase(&off, &names, 1, false, Method::Qbvi, Some(batch));
    assert!(
        text.contains("lower --step-size to 0.00089 (a tenth of this fit's 0.0089)"),
        "{text}"
    );
    // the other methods keep their advice
    let other = BatchNoise {
        step_size: None,
        ..batch
    };
    let text = off_optimum_phrase(&off, &names, 1, false, Method::Ivon, Some(other));
    assert!(
        text.contains("raise --batch-size or lower --step-size"),
        "{text}"
    );
}
