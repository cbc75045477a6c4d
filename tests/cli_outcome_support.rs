//! Data outside a likelihood's support (a binomial count above its number of trials, a category
//! outside 1..K, a negative Poisson count) is a data error naming the file, row, column and
//! value before fitting, not an initialisation failure; inside a loop, where it can only be
//! found at run time, the error names the iteration and says the value is data (tester
//! finding, "data outside support reported as an initialisation failure").

mod common;

use std::path::Path;

/// Writes `model.bayes` and `d.csv` into `dir`.
fn write_case(dir: &Path, model: &str, csv: &str) {
    std::fs::write(dir.join("model.bayes"), model).unwrap();
    std::fs::write(dir.join("d.csv"), csv).unwrap();
}

/// Runs `bayesc fit model.bayes --data d.csv --seed 1` on the case and returns whether it
/// succeeded and what it printed.
fn fit(model: &str, csv: &str) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    write_case(dir.path(), model, csv);
    let o = common::bayesc_in(
        dir.path(),
        &["fit", "model.bayes", "--data", "d.csv", "--seed", "1"],
    );
    (o.status.success(), common::output_text(&o))
}

/// Asserts a failed fit printed every piece of `want` and no initialisation failure.
fn assert_data_error(case: &str, (ok, text): (bool, String), want: &[&str]) {
    assert!(!ok, "{case}: the fit must fail\n{text}");
    for w in want {
        assert!(text.contains(w), "{case}: missing {w:?} in\n{text}");
    }
    assert!(
        !text.contains("initialisation failed") && !text.contains("initial point"),
        "{case}: reported as an initialisation failure\n{text}"
    );
}

const BINOMIAL: &str = "data {\n  int N;\n  array[N] int n;\n  array[N] int y;\n}\n\
    parameters {\n  real<lower=0, upper=1> theta;\n}\n\
    model {\n  theta ~ beta(1, 1);\n  y ~ binomial(n, theta);\n}\n";

#[test]
fn binomial_count_above_its_trials_names_row_column_and_both_values() {
    let csv = "n,y\n10,3\n10,4\n10,2\n10,5\n10,1\n10,6\n10,12\n10,3\n";
    assert_data_error(
        "y > n",
        fit(BINOMIAL, csv),
        &[
            "d.csv row 7 (line 8), column `y`: y[7] = 12 exceeds n[7] = 10 in \
             `y ~ binomial(n, theta)`; binomial outcomes must lie in 0..n",
            "model.bayes:11:3",
            "`y` is the outcome of `binomial` here",
        ],
    );
    let logit = BINOMIAL.replace("binomial(n, theta)", "binomial_logit(n, theta)");
    assert_data_error(
        "binomial_logit y > n",
        fit(&logit, csv),
        &["d.csv row 7 (line 8), column `y`: y[7] = 12 exceeds n[7] = 10"],
    );
}

#[test]
fn binomial_negative_count_or_negative_trials_is_a_data_error() {
    assert_data_error(
        "y < 0",
        fit(BINOMIAL, "n,y\n10,3\n10,-1\n10,2\n"),
        &[
            "d.csv row 2 (line 3), column `y`: y[2] = -1 in `y ~ binomial(n, theta)`, but \
             binomial outcomes must be integers in 0..n",
        ],
    );
    assert_data_error(
        "n < 0",
        fit(BINOMIAL, "n,y\n10,3\n-2,0\n10,2\n"),
        &[
            "d.csv row 2 (line 3), column `n`: n[2] = -2 in `y ~ binomial(n, theta)`, but the \
             number of trials of `binomial` must be a nonnegative integer",
        ],
    );
}

#[test]
fn categorical_and_ordered_outcomes_outside_one_to_k_name_k_and_where_it_comes_from() {
    let categorical = "data {\n  int N;\n  array[N] int y;\n}\n\
        parameters {\n  simplex[3] theta;\n}\n\
        model {\n  y ~ categorical(theta);\n}\n";
    assert_data_error(
        "categorical y = 4",
        fit(categorical, "y\n1\n2\n3\n4\n"),
        &[
            "d.csv row 4 (line 5), column `y`: y[4] = 4 is outside 1..3 in \
             `y ~ categorical(theta)`; categorical outcomes must lie in 1..K, and K = 3 here \
             (the size of `theta`)",
        ],
    );
    assert_data_error(
        "categorical y = 0",
        fit(categorical, "y\n1\n0\n3\n"),
        &["d.csv row 2 (line 3), column `y`: y[2] = 0 is outside 1..3"],
    );
    let logit = "data {\n  int N;\n  int K;\n  array[N] int y;\n}\n\
        parameters {\n  vector[K] beta;\n}\n\
        model {\n  beta ~ normal(0, 1);\n  y ~ categorical_logit(beta);\n}\n";
    let dir = tempfile::tempdir().unwrap();
    write_case(dir.path(), logit, "y\n1\n2\n5\n");
    std::fs::write(dir.path().join("k.json"), "{\"K\": 4}").unwrap();
    let o = common::bayesc_in(
        dir.path(),
        &[
            "fit",
            "model.bayes",
            "--data",
            "d.csv",
            "--data",
            "k.json",
            "--seed",
            "1",
        ],
    );
    assert_data_error(
        "categorical_logit, K from a size",
        (o.status.success(), common::output_text(&o)),
        &[
            "d.csv row 3 (line 4), column `y`: y[3] = 5 is outside 1..4 in \
           `y ~ categorical_logit(beta)`",
        ],
    );
    let ordered = "data {\n  int N;\n  vector[N] x;\n  array[N] int y;\n}\n\
        parameters {\n  real b;\n  ordered[3] c;\n}\n\
        model {\n  b ~ normal(0, 1);\n  c ~ normal(0, 3);\n  y ~ ordered_logistic(x * b, c);\n}\n";
    assert_data_error(
        "ordered_logistic y = 5",
        fit(ordered, "x,y\n0.1,1\n0.5,2\n-0.3,4\n1.2,5\n0.0,3\n"),
        &[
            "d.csv row 4 (line 5), column `y`: y[4] = 5 is outside 1..4 in \
             `y ~ ordered_logistic(x * b, c)`; ordered_logistic outcomes must lie in 1..K, and \
             K = 4 here (one more than the size of `c`)",
        ],
    );
}

#[test]
fn elementwise_supports_of_poisson_neg_binomial_and_bernoulli() {
    let poisson = "data {\n  int N;\n  array[N] int y;\n}\n\
        parameters {\n  real<lower=0> lambda;\n}\n\
        model {\n  lambda ~ exponential(1);\n  y ~ poisson(lambda);\n}\n";
    assert_data_error(
        "poisson y < 0",
        fit(poisson, "y\n1\n2\n-1\n"),
        &["d.csv row 3 (line 4), column `y`: -1, but `y` is the outcome of `poisson`"],
    );
    let nb = poisson.replace("poisson(lambda)", "neg_binomial_2(lambda, 2)");
    assert_data_error(
        "neg_binomial_2 y < 0",
        fit(&nb, "y\n1\n2\n-1\n"),
        &["d.csv row 3 (line 4), column `y`: -1, but `y` is the outcome of `neg_binomial_2`"],
    );
    let bernoulli = "data {\n  int N;\n  array[N] int y;\n}\n\
        parameters {\n  real<lower=0, upper=1> p;\n}\n\
        model {\n  y ~ bernoulli(p);\n}\n";
    assert_data_error(
        "bernoulli y = 2",
        fit(bernoulli, "y\n1\n0\n2\n"),
        &[
            "d.csv row 3 (line 4), column `y`: 2, but `y` is the outcome of `bernoulli`, whose \
           values must be 0 or 1",
        ],
    );
}

/// Inside a loop the check is made at run time: the error names the iteration, says the value
/// is data, and is not an initialisation failure.
#[test]
fn in_a_loop_the_runtime_error_names_the_observation() {
    let model = "data {\n  int N;\n  array[N] int n;\n  array[N] int y;\n}\n\
        parameters {\n  real<lower=0, upper=1> theta;\n}\n\
        model {\n  theta ~ beta(1, 1);\n  for (i in 1:N)\n    y[i] ~ binomial(n[i], theta);\n}\n";
    let csv = "n,y\n10,3\n10,4\n10,2\n10,5\n10,1\n10,6\n10,12\n10,3\n";
    assert_data_error(
        "loop y > n",
        fit(model, csv),
        &[
            "binomial_lpmf: Random variable is 12, but must be in the interval [0, 10]",
            "data outside the distribution's support",
            "model.bayes:12:5, where i = 7",
        ],
    );
    let categorical = "data {\n  int N;\n  array[N] int y;\n}\n\
        parameters {\n  simplex[3] theta;\n}\n\
        model {\n  for (i in 1:N) y[i] ~ categorical(theta);\n}\n";
    assert_data_error(
        "loop categorical",
        fit(categorical, "y\n1\n2\n3\n4\n"),
        &[
            "categorical_lpmf: Number of categories is 4, but must be in the interval [1, 3]",
            "data outside the distribution's support",
            "where i = 4",
        ],
    );
}

/// Outcomes inside the support (0 and n included) still fit.
#[test]
fn outcomes_inside_the_support_still_fit() {
    let (ok, text) = fit(BINOMIAL, "n,y\n10,3\n10,4\n10,10\n10,0\n");
    assert!(ok, "{text}");
}

/// A literal outcome outside 1..K+1 of `ordered_logistic` beside cut-points that are a plain
/// (unordered) vector parameter: the error names the outcome value, which is what no parameter
/// can fix, not the cut-points check that failed first ("Cut-points is not a valid ordered
/// vector … correct the data"; fresh-user finding, session 20).
#[test]
fn an_outcome_outside_the_categories_is_named_whatever_check_fails_first() {
    let model = "data { int N; vector[N] x; }\nparameters { vector[3] v; }\n\
                 model { v ~ normal(0, 3); target += ordered_logistic_lpmf(5 | 0.5, v); }\n";
    let (ok, text) = fit(model, "x\n1\n2\n");
    assert_data_error(
        "ordered_logistic outcome 5 of 4",
        (ok, text.clone()),
        &[
            "the outcome 5 is not a category in 1..4",
            "correct the data",
        ],
    );
    assert!(!text.contains("Cut-points"), "{text}");
}
