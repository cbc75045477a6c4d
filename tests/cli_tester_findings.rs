//! Defects testers found at the command line: each test runs `bayesc` on a small model in a
//! temporary folder and checks the message a user sees.

mod common;

use std::path::Path;

/// Writes `model.bayes` (and `d.csv` when `csv` is given) into `dir`.
fn write_case(dir: &Path, model: &str, csv: Option<&str>) {
    std::fs::write(dir.join("model.bayes"), model).unwrap();
    if let Some(c) = csv {
        std::fs::write(dir.join("d.csv"), c).unwrap();
    }
}

/// Twenty values of `y` around 0.1, so that draws of `mu` take both signs.
fn y_csv() -> String {
    let ys = [
        0.3, -1.2, 0.9, 0.1, -0.4, 1.5, -0.8, 0.6, 0.2, -0.1, 1.1, -1.6, 0.4, 0.0, 0.7, -0.5, 1.9,
        -0.9, 0.5, -0.3,
    ];
    let mut s = String::from("y\n");
    for y in ys {
        s.push_str(&format!("{y}\n"));
    }
    s
}

/// A generated quantity that fails for some draws (`normal_rng` with a negative scale where
/// `mu < 0`) no longer aborts a variational fit: those draws hold NaN for it and a warning
/// counts them and quotes the first error, as NUTS does.
#[test]
fn variational_fits_keep_draws_whose_generated_quantities_fail() {
    let dir = tempfile::tempdir().unwrap();
    write_case(
        dir.path(),
        "data { int N; vector[N] y; }\n\
         parameters { real mu; real<lower=0> sigma; }\n\
         model { mu ~ normal(0, 5); sigma ~ normal(0, 2); y ~ normal(mu, sigma); }\n\
         generated quantities { real z = normal_rng(0, mu); }\n",
        Some(&y_csv()),
    );
    for method in ["qbvi", "laplace", "ivon", "pathfinder"] {
        let o = common::bayesc_in(
            dir.path(),
            &[
                "fit",
                "model.bayes",
                "--data",
                "d.csv",
                "--method",
                method,
                "--seed",
                "1",
                "--output",
                "out.csv",
            ],
        );
        let text = common::output_text(&o);
        assert_eq!(o.status.code(), Some(3), "{method}: {text}");
        assert!(
            text.contains("ERROR: the generated quantities failed at ")
                && text.contains("of 1000 draws (z at ")
                && text.contains("those draws hold NaN for the quantities that failed")
                && text.contains("normal_rng: Scale parameter is -")
                && text.contains("model.bayes:4:24"),
            "{method}: {text}"
        );
        let csv = std::fs::read_to_string(dir.path().join("out.csv")).unwrap();
        assert!(
            csv.contains(",nan") || csv.contains(",NaN"),
            "{method}: {csv}"
        );
    }
}

/// An output path that cannot be created (`/proc` takes no new files; a folder given as a
/// file) is refused before the fit runs, not after it; a probe leaves no empty file behind
/// when the fit then fails.
#[test]
fn unwritable_outputs_are_refused_before_the_fit() {
    let dir = tempfile::tempdir().unwrap();
    write_case(
        dir.path(),
        "data { int N; vector[N] y; }\n\
         parameters { real mu; real<lower=0> sigma; }\n\
         model { mu ~ normal(0, 5); sigma ~ normal(0, 2); y ~ normal(mu, sigma); }\n",
        Some(&y_csv()),
    );
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let sub = sub.to_string_lossy().into_owned();
    for (method, flag, path, shown) in [
        (
            "nuts",
            "--output",
            "/proc/x.csv",
            "`/proc/x_1.csv` (--output)",
        ),
        (
            "qbvi",
            "--output",
            "/proc/x.csv",
            "`/proc/x.csv` (--output)",
        ),
        (
            "nuts",
            "--save-fit",
            "/proc/x.json",
            "`/proc/x.json` (--save-fit)",
        ),
        (
            "qbvi",
            "--elbo-output",
            "/proc/e.csv",
            "`/proc/e.csv` (--elbo-output)",
        ),
        (
            "nuts",
            "--output",
            sub.as_str(),
            "(--output): it is a folder",
        ),
        (
            "laplace",
            "--output",
            sub.as_str(),
            "(--output): it is a folder",
        ),
    ] {
        let o = common::bayesc_in(
            dir.path(),
            &[
                "fit",
                "model.bayes",
                "--data",
                "d.csv",
                "--method",
                method,
                "--seed",
                "1",
                flag,
                path,
            ],
        );
        let text = common::output_text(&o);
        assert!(!o.status.success(), "{method} {flag} {path}: {text}");
        assert!(
            text.contains("error: cannot write ") && text.contains(shown),
            "{method} {flag} {path}: {text}"
        );
        // refused before fitting: no summary was printed
        assert!(
            !text.contains("mean") && !text.contains("chains finished"),
            "{method} {flag} {path}: {text}"
        );
    }
    // a writable path whose fit fails leaves no file made by the check
    write_case(
        dir.path(),
        "data { int N; vector[N] y; }\n\
         parameters { real mu; }\n\
         model { y ~ normal(mu, -1); }\n",
        None,
    );
    for method in ["nuts", "qbvi"] {
        let o = common::bayesc_in(
            dir.path(),
            &[
                "fit",
                "model.bayes",
                "--data",
                "d.csv",
                "--method",
                method,
                "--output",
                "gone.csv",
                "--save-fit",
                "gone.json",
            ],
        );
        assert!(!o.status.success(), "{}", common::output_text(&o));
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("gone"))
            .collect();
        assert!(left.is_empty(), "{method}: {left:?}");
    }
}

/// A literal index outside a literal size (`y[4]`, `y[0]` with `vector[3] y`) is an error of
/// `bayesc check`, pointing at the index and the declaration; with a size known only from the
/// data, the fit's error names the span, the index and the size.
#[test]
fn literal_out_of_range_index_fails_the_check() {
    let dir = tempfile::tempdir().unwrap();
    for (index, col) in [("4", 30), ("0", 30), ("2, 4", 33)] {
        let decl = if index.contains(',') {
            "matrix[3, 3] y"
        } else {
            "vector[3] y"
        };
        write_case(
            dir.path(),
            &format!(
                "data {{ {decl}; }}\nparameters {{ real mu; }}\n\
                 model {{ mu ~ normal(0, 1); y[{index}] ~ normal(mu, 1); }}\n"
            ),
            None,
        );
        let o = common::bayesc_in(dir.path(), &["check", "model.bayes"]);
        let text = common::output_text(&o);
        assert!(!o.status.success(), "y[{index}]: {text}");
        let i = index.rsplit(", ").next().unwrap();
        assert!(
            text.contains(&format!(
                "error: index {i} is out of range for `y`, whose size there is 3: indexes run \
                 from 1 to 3"
            )) && text.contains(&format!("model.bayes:3:{col}"))
                && text.contains("declared with size 3"),
            "y[{index}]: {text}"
        );
    }
    // assignments too
    write_case(
        dir.path(),
        "transformed data { array[2] real w; w[3] = 1; }\nparameters { real mu; }\n\
         model { mu ~ normal(0, 1); }\n",
        None,
    );
    let o = common::bayesc_in(dir.path(), &["check", "model.bayes"]);
    let text = common::output_text(&o);
    assert!(
        !o.status.success() && text.contains("index 3 is out of range for `w`"),
        "{text}"
    );
    // in range, or sized by data: no error at check time
    write_case(
        dir.path(),
        "data { int N; vector[N] y; }\nparameters { real mu; }\n\
         model { mu ~ normal(0, 1); y[N + 1] ~ normal(mu, 1); y[3] ~ normal(mu, 1); }\n",
        None,
    );
    std::fs::write(dir.path().join("d.json"), r#"{"N": 3, "y": [1, 2, 3]}"#).unwrap();
    let o = common::bayesc_in(dir.path(), &["check", "model.bayes"]);
    assert!(o.status.success(), "{}", common::output_text(&o));
    let o = common::bayesc_in(
        dir.path(),
        &["fit", "model.bayes", "--data", "d.json", "--method", "nuts"],
    );
    let text = common::output_text(&o);
    assert!(
        !o.status.success()
            && text.contains("index 4 out of range; expecting index to be between 1 and 3")
            && text.contains("model.bayes:3:28"),
        "{text}"
    );
}

/// The centred eight-schools model (theta ~ normal(mu, tau)): a funnel with no mode.
const CENTRED_EIGHT_SCHOOLS: &str = "data { int<lower=0> J; vector[J] y; vector<lower=0>[J] sigma; }\n\
     parameters { real mu; real<lower=0> tau; vector[J] theta; }\n\
     model { mu ~ normal(0, 5); tau ~ cauchy(0, 5); theta ~ normal(mu, tau);\n\
     y ~ normal(theta, sigma); }\n";

/// `--method optimize` on the centred eight-schools model: the density grows without bound as
/// tau → 0 with every theta at mu, so there is no mode. The message says so, names `tau` and
/// suggests the non-centred form or NUTS, instead of only "did not converge"; the non-centred
/// example still converges.
#[test]
fn optimize_names_the_unbounded_scale_of_a_centred_hierarchy() {
    let dir = tempfile::tempdir().unwrap();
    write_case(dir.path(), CENTRED_EIGHT_SCHOOLS, None);
    let data = common::root().join("examples/eight_schools/schools.csv");
    let data = data.to_string_lossy();
    for extra in [None, Some("--jacobian")] {
        let mut args = vec![
            "fit",
            "model.bayes",
            "--data",
            &data,
            "--method",
            "optimize",
            "--seed",
            "1",
        ];
        args.extend(extra);
        let o = common::bayesc_in(dir.path(), &args);
        let text = common::output_text(&o);
        assert!(
            text.contains("WARNING: no optimum")
                && text.contains("there is no mode: the log density grows without bound as `tau`")
                && text.contains("non-centred parameterisation")
                && text.contains("--method nuts")
                && !text.contains("did not converge"),
            "{extra:?}: {text}"
        );
    }
    let o = common::bayesc_in(
        &common::root(),
        &[
            "fit",
            "examples/eight_schools/model.bayes",
            "--data",
            &data,
            "--method",
            "optimize",
            "--seed",
            "1",
        ],
    );
    let text = common::output_text(&o);
    assert!(
        text.contains("converged:") && !text.contains("no mode"),
        "{text}"
    );
}

/// A two-component normal mixture whose component means are unordered: chains settle on
/// different labellings (label switching). Each chain is stable, so R-hat's advice is not to
/// run longer but that the chains found different modes, with `ordered` as the fix; with
/// `ordered[2] mu` the warning is gone.
#[test]
fn label_switching_is_called_multimodality_not_a_short_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut csv = String::from("y\n");
    for n in 0..100 {
        let centre = if n % 2 == 0 { 3.0 } else { -3.0 };
        let noise = (n as f64 * 12.9898).sin() * 0.9;
        csv.push_str(&format!("{:.4}\n", centre + noise));
    }
    let model = |decl: &str| {
        format!(
            "data {{ int N; vector[N] y; }}\n\
             parameters {{ {decl} mu; real<lower=0> sigma; real<lower=0, upper=1> lambda; }}\n\
             model {{\n  mu ~ normal(0, 10); sigma ~ normal(0, 2); lambda ~ beta(2, 2);\n  \
             for (n in 1:N)\n    target += log_mix(lambda, normal_lpdf(y[n] | mu[1], sigma),\n      \
             normal_lpdf(y[n] | mu[2], sigma));\n}}\n"
        )
    };
    let run = |dir: &Path| {
        let o = common::bayesc_in(
            dir,
            &[
                "fit",
                "model.bayes",
                "--data",
                "d.csv",
                "--method",
                "nuts",
                "--seed",
                "2",
            ],
        );
        let text = common::output_text(&o);
        assert!(o.status.success(), "{text}");
        text
    };
    write_case(dir.path(), &model("vector[2]"), Some(&csv));
    let text = run(dir.path());
    assert!(
        text.contains("R-hat > 1.01 for mu[1], mu[2]: each chain is stable on its own")
            && text.contains("the chains settled in different modes")
            && text.contains("label switching")
            && text.contains("`ordered`")
            && !text.contains("run longer (--warmup, --samples)")
            && !text.contains("draw more samples"),
        "{text}"
    );
    write_case(dir.path(), &model("ordered[2]"), None);
    let text = run(dir.path());
    assert!(
        !text.contains("different modes") && !text.contains("R-hat >"),
        "{text}"
    );
}

/// With a data set of zero rows, `real<lower=0> s;` without a prior has an improper posterior:
/// NUTS says so (as the variational fits warn about unpriored parameters) instead of only
/// reporting divergences with advice to raise adapt_delta. A parameter with both bounds (a
/// proper uniform) or with data is not flagged.
#[test]
fn nuts_warns_of_an_improper_flat_prior_with_empty_data() {
    let dir = tempfile::tempdir().unwrap();
    write_case(
        dir.path(),
        "data { int N; vector[N] y; }\n\
         parameters { real<lower=0, upper=1> p; real<lower=0> s; }\n\
         model { y ~ normal(p, s); }\n",
        None,
    );
    let fit = |data: &str| {
        std::fs::write(dir.path().join("d.json"), data).unwrap();
        let o = common::bayesc_in(
            dir.path(),
            &[
                "fit",
                "model.bayes",
                "--data",
                "d.json",
                "--method",
                "nuts",
                "--seed",
                "1",
            ],
        );
        let text = common::output_text(&o);
        assert!(o.status.success(), "{text}");
        text
    };
    let text = fit(r#"{"N": 0, "y": []}"#);
    assert!(
        text.contains(
            "the posterior is improper: `s` has no prior (an improper flat prior) and the data \
             do not inform it"
        ) && text.contains("Give it a proper prior")
            && !text.contains("`p` has no prior (an"),
        "{text}"
    );
    let text = fit(r#"{"N": 4, "y": [0.2, 0.5, 0.9, 0.4]}"#);
    assert!(!text.contains("the posterior is improper"), "{text}");
}

/// Two output flags naming the same file are refused before the fit: the second write replaced
/// the first (`-o s.csv --save-fit s.csv` lost the draws; `--save-fit s_1.csv` replaced MCMC's
/// chain 1), found by a tester.
#[test]
fn two_outputs_naming_the_same_file_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    write_case(
        dir.path(),
        "data { int N; vector[N] y; }\n\
         parameters { real mu; real<lower=0> sigma; }\n\
         model { mu ~ normal(0, 5); sigma ~ normal(0, 2); y ~ normal(mu, sigma); }\n",
        Some(&y_csv()),
    );
    for (method, a, b, shown) in [
        (
            "qbvi",
            "s.csv",
            "s.csv",
            "--output and --save-fit would both write `s.csv`",
        ),
        (
            "nuts",
            "s.csv",
            "s_1.csv",
            "--output and --save-fit would both write `s_1.csv`",
        ),
        (
            "qbvi",
            "./s.csv",
            "s.csv",
            "--output and --save-fit would both write `./s.csv`",
        ),
    ] {
        let o = common::bayesc_in(
            dir.path(),
            &[
                "fit",
                "model.bayes",
                "--data",
                "d.csv",
                "--method",
                method,
                "-o",
                a,
                "--save-fit",
                b,
            ],
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success() && err.contains(shown),
            "{method} {a} {b}: {err}"
        );
        assert!(!dir.path().join("s.csv").exists() && !dir.path().join("s_1.csv").exists());
    }
}

/// NUTS's divergence advice does not repeat the adapt_delta the user already ran with: the
/// centred eight schools at `--adapt-delta 0.95` (seed 1) still diverges, and the advice used
/// to be "Increase adapt_delta (e.g. 0.95)"; it now names the value and asks for more or for
/// the non-centred form.
#[test]
fn nuts_divergence_advice_goes_beyond_the_adapt_delta_used() {
    let dir = tempfile::tempdir().unwrap();
    write_case(dir.path(), CENTRED_EIGHT_SCHOOLS, None);
    let data = common::root().join("examples/eight_schools/schools.csv");
    let data = data.to_string_lossy();
    let o = common::bayesc_in(
        dir.path(),
        &[
            "fit",
            "model.bayes",
            "--data",
            &data,
            "--method",
            "nuts",
            "--seed",
            "1",
            "--adapt-delta",
            "0.95",
        ],
    );
    let text = common::output_text(&o);
    assert!(text.contains("diverged"), "{text}");
    assert!(!text.contains("(e.g. 0.95)"), "{text}");
    assert!(
        text.contains("Increase adapt_delta further (e.g. 0.99; it is 0.95)")
            && text.contains("non-centred parameterisation"),
        "{text}"
    );
}
