//! Generated quantities that fail at some draws (docs/generated_quantities.md): only the
//! quantities that could not be computed are NaN there, the others keep their values; the
//! summary of a quantity with NaN draws is over the other draws and marked; and
//! `fit --method optimize` prints the generated quantities at the optimum.

mod common;

use std::path::Path;

use bayesc::inference::rng::stream;

/// `b` fails where `mu` ≤ 0 (a negative `normal_rng` scale), `d` is computed from `b`, `e`
/// indexes `v` out of range where `mu` ≤ 0, `f` breaks its declared bound there, `g` is
/// computed from `e` through a block of locals; `a`, `v` and `idx` never fail.
const MODEL: &str = "data { int<lower=0> N; vector[N] y; }
parameters { real mu; }
model { mu ~ normal(0, 10); y ~ normal(mu, 1); }
generated quantities {
  real b = normal_rng(0, mu);
  real a = normal_rng(mu, 1);
  real d = b + 1;
  vector[3] v;
  for (k in 1:3) v[k] = k * mu;
  int idx = mu > 0 ? 1 : 5;
  real e = v[idx];
  real<lower=0> f = mu;
  real g;
  {
    real t = 2 * e;
    g = t;
  }
}
";

/// Twenty values of `y` around 0.1, so that draws of `mu` (sd about 0.22) take both signs.
const YS: [f64; 20] = [
    0.3, -1.2, 0.9, 0.1, -0.4, 1.5, -0.8, 0.6, 0.2, -0.1, 1.1, -1.6, 0.4, 0.0, 0.7, -0.5, 1.9,
    -0.9, 0.5, -0.3,
];

fn json() -> String {
    let ys: Vec<String> = YS.iter().map(f64::to_string).collect();
    format!("{{\"N\": 20, \"y\": [{}]}}", ys.join(", "))
}

/// Writes `model.bayes` and `d.csv` into `dir`.
fn write_case(dir: &Path, model: &str) {
    std::fs::write(dir.join("model.bayes"), model).unwrap();
    let mut csv = String::from("y\n");
    for y in YS {
        csv.push_str(&format!("{y}\n"));
    }
    std::fs::write(dir.join("d.csv"), csv).unwrap();
}

/// The columns and data rows of a Stan CSV file.
fn read_csv(path: &Path) -> (Vec<String>, Vec<Vec<f64>>) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty());
    let header: Vec<String> = lines
        .next()
        .unwrap()
        .split(',')
        .map(str::to_string)
        .collect();
    let rows = lines
        .map(|l| {
            l.split(',')
                .map(|v| v.parse::<f64>().unwrap_or_else(|_| panic!("{v} in {l}")))
                .collect()
        })
        .collect();
    (header, rows)
}

/// Checks one row (by column name) against the model: what fails where `mu` ≤ 0 is NaN and
/// the rest holds its value. Returns whether `b` failed.
fn check_row(col: &dyn Fn(&str) -> f64) -> bool {
    let mu = col("mu");
    assert!(col("a").is_finite());
    for k in 1..=3 {
        assert_eq!(col(&format!("v.{k}")), k as f64 * mu);
    }
    if mu > 0.0 {
        assert_eq!(col("idx"), 1.0);
        assert!(col("b").is_finite());
        assert_eq!(col("d"), col("b") + 1.0);
        assert_eq!(col("e"), mu);
        assert_eq!(col("f"), mu);
        assert_eq!(col("g"), 2.0 * mu);
        false
    } else {
        assert_eq!(col("idx"), 5.0);
        for n in ["b", "d", "e", "f", "g"] {
            assert!(col(n).is_nan(), "{n} = {} at mu = {mu}", col(n));
        }
        true
    }
}

/// The model itself: at mu = −0.5 exactly the quantities that depend on the failures are NaN
/// (an `_rng` domain error, an index out of range, a broken bound, and what is computed from
/// them); at mu = 0.5 the row equals `write_array`'s, draw for draw of the same stream.
#[test]
fn write_outputs_makes_nan_only_what_failed() {
    let m = common::compile_source("gq.bayes", MODEL, Some(&json()), &[]);
    let names = m.generated_quantity_names();
    let at = |row: &[f64], n: &str| row[1 + names.iter().position(|x| x == n).unwrap()];
    let (row, failure) = m.write_outputs(&[-0.5], &mut stream(1, 7)).unwrap();
    let failure = failure.expect("mu < 0 fails");
    assert_eq!(failure.variables, ["b", "d", "e", "f", "g"]);
    assert!(
        failure.error.message.contains("normal_rng"),
        "{:?}",
        failure.error
    );
    assert_eq!(row[0], -0.5);
    assert!(at(&row, "a").is_finite());
    assert_eq!(
        [at(&row, "v[1]"), at(&row, "v[2]"), at(&row, "v[3]")],
        [-0.5, -1.0, -1.5]
    );
    assert_eq!(at(&row, "idx"), 5.0);
    for n in ["b", "d", "e", "f", "g"] {
        assert!(at(&row, n).is_nan(), "{n}");
    }
    let (row, failure) = m.write_outputs(&[0.5], &mut stream(1, 7)).unwrap();
    assert!(failure.is_none());
    let full = m
        .write_array(&[0.5], true, true, &mut stream(1, 7))
        .unwrap();
    assert_eq!(row, full);
    assert_eq!(at(&row, "d"), at(&row, "b") + 1.0);
    assert_eq!(
        [at(&row, "e"), at(&row, "f"), at(&row, "g")],
        [0.5, 0.5, 1.0]
    );
}

/// A failing `reject` assigns no quantity: every generated quantity of that draw is NaN. A
/// quantity reassigned after it failed stays NaN for that draw.
#[test]
fn reject_fails_the_whole_draw_and_failed_quantities_stay_nan() {
    let src = "parameters { real mu; }
model { mu ~ normal(0, 1); }
generated quantities {
  real a = 2 * mu;
  real b = normal_rng(0, mu);
  b = 3;
  real c = mu + 1;
  if (mu < -1) reject(\"mu below -1\");
}
";
    let m = common::compile_source("rej.bayes", src, None, &[]);
    let (row, f) = m.write_outputs(&[-0.5], &mut stream(1, 0)).unwrap();
    assert_eq!(row[1], -1.0);
    assert!(row[2].is_nan(), "b stays NaN after `b = 3`");
    assert_eq!(row[3], 0.5);
    assert_eq!(f.unwrap().variables, ["b"]);
    let (row, f) = m.write_outputs(&[-2.0], &mut stream(1, 0)).unwrap();
    assert!(row[1..].iter().all(|v| v.is_nan()), "{row:?}");
    let f = f.unwrap();
    assert_eq!(f.variables, ["a", "b", "c"]);
    // the first failure in statement order is `b`'s
    assert!(f.error.message.contains("normal_rng"), "{:?}", f.error);
    assert_eq!(row[0], -2.0);
}

/// The parsed summary row `name`: (mean, sd, 5%, 50%, 95%) and the MCMC columns as text.
fn summary_row(text: &str, name: &str) -> (Vec<f64>, Vec<String>) {
    let l = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no row {name} in\n{text}"));
    let cells: Vec<&str> = l.split_whitespace().skip(1).collect();
    (
        cells[..5].iter().map(|c| c.parse().unwrap()).collect(),
        cells[5..].iter().map(|c| c.to_string()).collect(),
    )
}

/// NUTS and QBVI on the model: the draws files hold NaN exactly where the model cannot compute
/// a quantity; the summary keeps `a`, `v`, `idx` as usual, summarises `b`, `d`, `e`, `f`, `g`
/// over their computed draws (marked `*`, counted under the table, matching the files), and
/// the warning counts the failures per quantity.
#[test]
fn fits_keep_the_quantities_that_did_not_fail() {
    let dir = tempfile::tempdir().unwrap();
    write_case(dir.path(), MODEL);
    for (method, files) in [
        ("nuts", vec!["o_1.csv", "o_2.csv"]),
        ("qbvi", vec!["o.csv"]),
    ] {
        let mut args = vec![
            "fit",
            "model.bayes",
            "--data",
            "d.csv",
            "--method",
            method,
            "--seed",
            "1",
            "--output",
            "o.csv",
        ];
        if method == "nuts" {
            args.extend(["--chains", "2"]);
        }
        let o = common::bayesc_in(dir.path(), &args);
        let text = common::output_text(&o);
        // an error of the generated quantities: the outputs are whole, the status is 3
        assert_eq!(o.status.code(), Some(3), "{method}: {text}");
        assert!(
            text.contains("ERROR: the generated quantities failed at "),
            "{method}: {text}"
        );
        assert!(
            text.contains(
                "error: the generated quantities failed at some draws (the ERROR above says \
                 where and why); every output was written whole"
            ),
            "{method}: {text}"
        );
        let (mut total, mut failed, mut sum_e) = (0, 0, 0.0);
        for file in &files {
            let (header, rows) = read_csv(&dir.path().join(file));
            // a variational file's first row is at the mean of q, not a draw
            let draws = if method == "qbvi" {
                &rows[1..]
            } else {
                &rows[..]
            };
            for r in draws {
                let col = |n: &str| r[header.iter().position(|h| h == n).unwrap()];
                total += 1;
                if check_row(&col) {
                    failed += 1;
                } else {
                    sum_e += col("e");
                }
            }
        }
        assert!(
            failed > total / 10 && failed < total / 2,
            "{method}: {failed} of {total}"
        );
        assert!(
            text.contains(&format!(
                "the generated quantities failed at {failed} of {total} draws (b at {failed}, \
                 d at {failed}, e at {failed}, f at {failed}, g at {failed})"
            )),
            "{method}: {text}"
        );
        assert!(
            text.contains(&format!(
                "b {ok} of {total}, d {ok} of {total}, e {ok} of {total}, f {ok} of {total}, \
                 g {ok} of {total}",
                ok = total - failed
            )),
            "{method}: {text}"
        );
        // `e` is `mu` where it was computed: its summary is the mean over those draws
        let (e, e_mcmc) = summary_row(&text, "e*");
        let mean_e = sum_e / (total - failed) as f64;
        assert!(
            (e[0] - mean_e).abs() < 1e-3 * mean_e.abs(),
            "{method}: {e:?} vs {mean_e}"
        );
        assert!(e[2] > 0.0, "{method}: the 5% quantile of e is over mu > 0");
        let (a, a_mcmc) = summary_row(&text, "a");
        assert!(a.iter().all(|v| v.is_finite()), "{method}: {a:?}");
        if method == "nuts" {
            assert!(e_mcmc.iter().all(|c| c == "NA"), "{e_mcmc:?}");
            assert!(
                a_mcmc.iter().all(|c| c.parse::<f64>().is_ok()),
                "{a_mcmc:?}"
            );
        }
        for n in ["b*", "d*", "e*", "f*", "g*", "a", "v[3]", "idx"] {
            let (stats, _) = summary_row(&text, n);
            assert!(stats.iter().all(|v| v.is_finite()), "{method} {n}: {text}");
        }
    }
}

/// `fit --method optimize` prints the generated quantities at the optimum, without a standard
/// error, and the same values as its draws file.
#[test]
fn optimize_prints_generated_quantities() {
    let dir = tempfile::tempdir().unwrap();
    write_case(
        dir.path(),
        "data { int<lower=0> N; vector[N] y; }
parameters { real mu; real<lower=0> sigma; }
model { y ~ normal(mu, sigma); }
generated quantities {
  real twice = 2 * mu;
  vector[2] shifted = [mu + 1, sigma - 1]';
  real draw = normal_rng(mu, sigma);
  int k = poisson_rng(3);
  int seven = 7;
}
",
    );
    let o = common::bayesc_in(
        dir.path(),
        &[
            "fit",
            "model.bayes",
            "--data",
            "d.csv",
            "--method",
            "optimize",
            "--seed",
            "1",
            "--output",
            "opt.csv",
        ],
    );
    let text = common::output_text(&o);
    assert!(o.status.success(), "{text}");
    let row = |n: &str| -> (f64, String) {
        let l = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(n))
            .unwrap_or_else(|| panic!("no row {n} in\n{text}"));
        let c: Vec<&str> = l.split_whitespace().collect();
        (c[1].parse().unwrap(), c[2].to_string())
    };
    // the maximum-likelihood estimates of a normal sample
    let n = YS.len() as f64;
    let mean = YS.iter().sum::<f64>() / n;
    let sd = (YS.iter().map(|y| (y - mean).powi(2)).sum::<f64>() / n).sqrt();
    let (mu, mu_se) = row("mu");
    let (sigma, _) = row("sigma");
    assert!((mu - mean).abs() < 1e-4, "{text}");
    assert!((sigma - sd).abs() < 1e-4, "{text}");
    assert!(mu_se.parse::<f64>().is_ok(), "{text}");
    assert_eq!(row("twice").1, "-", "{text}");
    let close = |a: f64, b: f64| (a - b).abs() < 2e-6;
    assert!(close(row("twice").0, 2.0 * mu), "{text}");
    assert!(close(row("shifted[1]").0, mu + 1.0), "{text}");
    assert!(close(row("shifted[2]").0, sigma - 1.0), "{text}");
    assert_eq!(row("draw").1, "-", "{text}");
    // int quantities print as integers (`7`, not `7.000000`), as the posterior summaries do;
    // a real one keeps its 6 decimals
    let cell = |n: &str| row(n).0.to_string();
    let raw = |n: &str| {
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(n))
            .and_then(|l| l.split_whitespace().nth(1))
            .unwrap()
            .to_string()
    };
    assert_eq!(raw("seven"), "7", "{text}");
    assert_eq!(raw("k"), cell("k"), "{text}");
    assert!(!raw("k").contains('.'), "{text}");
    assert_eq!(
        raw("twice").split('.').nth(1).map(str::len),
        Some(6),
        "{text}"
    );
    assert!(
        text.contains(
            "twice, shifted, draw, k, seven: generated quantities, evaluated once at the \
             estimate (no standard error)"
        ),
        "{text}"
    );
    let (header, rows) = read_csv(&dir.path().join("opt.csv"));
    let col = |n: &str| rows[0][header.iter().position(|h| h == n).unwrap()];
    assert!(close(col("draw"), row("draw").0), "{text}");
    assert!(close(col("twice"), row("twice").0), "{text}");
}

/// `fixed_param` (here run by NUTS on a model without parameters) writes NaN where a quantity
/// fails and the draws files whole, counts the failures in its `ERROR:`, naming the first by
/// draw and chain, and exits with status 3, as the other methods do.
#[test]
fn fixed_param_writes_nan_and_exits_3() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("fp.bayes"),
        "generated quantities {\n  real z = normal_rng(0, 1);\n  real w = 2;\n  \
         if (z > 2) reject(\"z big \", z);\n}\n",
    )
    .unwrap();
    let o = common::bayesc_in(
        dir.path(),
        &[
            "fit", "fp.bayes", "--method", "nuts", "--seed", "1", "--chains", "2", "-o", "fp.csv",
        ],
    );
    let text = common::output_text(&o);
    assert_eq!(o.status.code(), Some(3), "{text}");
    let (mut total, mut failed) = (0, 0);
    let mut first = None;
    for c in 1..=2 {
        let (header, rows) = read_csv(&dir.path().join(format!("fp_{c}.csv")));
        assert_eq!(rows.len(), 1000, "chain {c}");
        let z = header.iter().position(|h| h == "z").unwrap();
        let w = header.iter().position(|h| h == "w").unwrap();
        for (i, r) in rows.iter().enumerate() {
            total += 1;
            // a reject fails the whole draw: every quantity is NaN there
            if r[z].is_nan() {
                assert!(r[w].is_nan(), "{r:?}");
                failed += 1;
                first.get_or_insert((i + 1, c));
            } else {
                assert!(r[z] <= 2.0 && r[w] == 2.0, "{r:?}");
            }
        }
    }
    // P(z > 2) = 0.023: about 45 of 2000
    assert!(failed > 20 && failed < 80, "{failed}");
    let (draw, chain) = first.unwrap();
    assert!(
        text.contains(&format!(
            "ERROR: the generated quantities failed at {failed} of {total} draws (z at {failed}, \
             w at {failed})"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "The first failure, at draw {draw} of chain {chain}: z big "
        )),
        "{text}"
    );
    assert!(!text.contains("computing constrained draws"), "{text}");
}

/// `bayesc predict` treats failing generated quantities as `bayesc fit` does: the table is
/// written whole, each quantity summarised over the draws where it was computed (the `draws`
/// column), the failures counted per quantity with the first named by its draw of the saved fit,
/// the statement and the advice, and the exit status is 3 (the old code stopped at the first
/// failing draw with status 1 and wrote nothing).
#[test]
fn predict_writes_the_table_whole_and_counts_the_failing_generated_quantities() {
    let dir = tempfile::tempdir().unwrap();
    write_case(dir.path(), MODEL);
    let fit = common::bayesc_in(
        dir.path(),
        &[
            "fit",
            "model.bayes",
            "--data",
            "d.csv",
            "--method",
            "nuts",
            "--seed",
            "1",
            "--chains",
            "2",
            "--save-fit",
            "f.json",
            "--output",
            "draws.csv",
        ],
    );
    assert_eq!(fit.status.code(), Some(3), "{}", common::output_text(&fit));
    let o = common::bayesc_in(
        dir.path(),
        &[
            "predict",
            "model.bayes",
            "--fit",
            "f.json",
            "--data",
            "d.csv",
            "--output",
            "p.csv",
        ],
    );
    let text = common::output_text(&o);
    assert_eq!(o.status.code(), Some(3), "{text}");
    // the fit's own draws: b fails where mu < 0, at the same draws in both runs
    let (names, rows) = read_csv(&dir.path().join("draws_1.csv"));
    let (names2, rows2) = read_csv(&dir.path().join("draws_2.csv"));
    assert_eq!(names, names2);
    let mu = names.iter().position(|n| n == "mu").unwrap();
    let negative = rows.iter().chain(&rows2).filter(|r| r[mu] < 0.0).count();
    assert!(negative > 0 && negative < 2000, "{negative}");
    let table = std::fs::read_to_string(dir.path().join("p.csv")).unwrap();
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines[0], "name,mean,sd,q5,q50,q95,draws");
    let row = |name: &str| -> Vec<String> {
        lines
            .iter()
            .find(|l| l.split(',').next() == Some(name))
            .unwrap_or_else(|| panic!("a row `{name}` in {table}"))
            .split(',')
            .map(str::to_string)
            .collect()
    };
    // b, d, e, f and g fail at the draws with mu < 0; a and v at none
    for q in ["b", "d", "e", "f", "g"] {
        let r = row(q);
        assert_eq!(r[6], (2000 - negative).to_string(), "{q}: {table}");
        assert!(r[1].parse::<f64>().unwrap().is_finite(), "{q}: {table}");
    }
    assert_eq!(row("a")[6], "2000", "{table}");
    // f = mu over the draws with mu ≥ 0 (its bound), so its 5% is not negative
    assert!(row("f")[3].parse::<f64>().unwrap() >= 0.0, "{table}");
    assert!(
        text.contains(&format!(
            "ERROR: the generated quantities failed at {negative} of 2000 draws (b at \
             {negative}, d at {negative}"
        )),
        "{text}"
    );
    assert!(
        text.contains(" of the fit's 2000 draws (its chains one after another): "),
        "{text}"
    );
    assert!(text.contains("model.bayes:"), "{text}");
    assert!(text.contains("Guard the statement"), "{text}");
    assert!(text.contains("exit status 3"), "{text}");
}

/// `bayesc evaluate` stops at the first failure (status 1) and names where: the posterior
/// mean point, or a draw and its chain, and the training or test rows.
#[test]
fn evaluate_names_the_failing_generated_quantities() {
    let dir = tempfile::tempdir().unwrap();
    let mut csv = String::from("x,y\n");
    for (i, y) in YS.iter().enumerate() {
        csv.push_str(&format!("{},{}\n", i as f64 / 10.0, y + i as f64 / 10.0));
    }
    std::fs::write(dir.path().join("d.csv"), csv).unwrap();
    let model = |guard: &str| {
        format!(
            "// @outcome y
data {{ int<lower=0> N; vector[N] x; vector[N] y; }}
parameters {{ real a; real b; real<lower=0> sigma; }}
model {{ a ~ normal(0, 5); b ~ normal(0, 5); sigma ~ normal(0, 2); y ~ normal(a + b * x, sigma); }}
generated quantities {{
  vector[N] log_lik;
  vector[N] y_hat;
  for (n in 1:N) {{
    if ({guard}) reject(\"bad row \", n);
    log_lik[n] = normal_lpdf(y[n] | a + b * x[n], sigma);
    y_hat[n] = a + b * x[n];
  }}
}}
"
        )
    };
    // fails everywhere: first at the point estimate of the plug-in metrics
    // fails at about 1 in 37 draws (20 rows, P(z > 3) each): at a draw of some chain
    for (guard, at) in [
        (
            "sigma > 0",
            "the posterior mean point, on the training rows".to_string(),
        ),
        ("normal_rng(0, 1) > 3", " of chain ".to_string()),
    ] {
        std::fs::write(dir.path().join("m.bayes"), model(guard)).unwrap();
        let o = common::bayesc_in(
            dir.path(),
            &[
                "evaluate", "m.bayes", "--data", "d.csv", "--method", "nuts", "--seed", "1",
            ],
        );
        let text = common::output_text(&o);
        assert_eq!(o.status.code(), Some(1), "{guard}: {text}");
        assert!(
            text.contains("error: the generated quantities failed at "),
            "{guard}: {text}"
        );
        assert!(text.contains(&at), "{guard}: {text}");
        assert!(text.contains("bad row "), "{guard}: {text}");
        assert!(text.contains("(m.bayes:9:"), "{guard}: {text}");
        assert!(text.contains("Guard the statement"), "{guard}: {text}");
    }
}

/// Without the outcome in the new data, `log_lik` (which reads it) is left out, and is not
/// counted as a failure of what is written; `y_hat` is predicted and the status is 0. Another
/// quantity that reads the outcome (`r`) is left out too, named (session 20: it failed at
/// every draw, status 3); a quantity that fails for another reason makes the status 3 without
/// blaming the missing column. (The old code stopped at draw 1 with status 1 whenever
/// `log_lik` read the missing outcome.)
#[test]
fn predict_without_the_outcome_leaves_out_log_lik_and_counts_other_failures() {
    let dir = tempfile::tempdir().unwrap();
    let root = common::root();
    for f in ["lin.csv", "new_rows_without_y.csv"] {
        std::fs::copy(root.join("tests/fixtures/ux").join(f), dir.path().join(f)).unwrap();
    }
    let model = |extra: &str| {
        format!(
            "// @outcome y
data {{ int N; vector[N] x; vector[N] y; }}
parameters {{ real a; real b; real<lower=0> s; }}
model {{ a ~ normal(0, 5); b ~ normal(0, 5); s ~ normal(0, 2); y ~ normal(a + b * x, s); }}
generated quantities {{
  vector[N] log_lik;
  vector[N] y_hat = a + b * x;
  {extra}
  for (n in 1:N) log_lik[n] = normal_lpdf(y[n] | y_hat[n], s);
}}
"
        )
    };
    for (extra, code) in [
        ("", 0),
        ("real r = normal_rng(y[1], s);", 0),
        ("int r = bernoulli_rng(x[1] - 0.6);", 3),
    ] {
        std::fs::write(dir.path().join("m.bayes"), model(extra)).unwrap();
        let fit = common::bayesc_in(
            dir.path(),
            &[
                "fit",
                "m.bayes",
                "--data",
                "lin.csv",
                "--seed",
                "1",
                "-q",
                "--save-fit",
                "f.json",
            ],
        );
        assert!(fit.status.success(), "{}", common::output_text(&fit));
        let o = common::bayesc_in(
            dir.path(),
            &[
                "predict",
                "m.bayes",
                "--fit",
                "f.json",
                "--data",
                "new_rows_without_y.csv",
                "-o",
                "p.csv",
            ],
        );
        let text = common::output_text(&o);
        assert_eq!(o.status.code(), Some(code), "{extra}: {text}");
        let table = std::fs::read_to_string(dir.path().join("p.csv")).unwrap();
        assert!(table.contains("\ny_hat[1],"), "{table}");
        assert!(!table.contains("log_lik["), "{table}");
        if code == 3 {
            assert!(text.contains("(r at 1000)"), "{text}");
            assert!(!text.contains("the new data has no `y` column"), "{text}");
            assert!(table.contains("\nr,NaN,NaN,NaN,NaN,NaN,0"), "{table}");
        } else {
            assert!(!text.contains("ERROR"), "{text}");
            assert!(!table.contains("\nr,"), "{table}");
            let left = if extra.is_empty() {
                "`log_lik`"
            } else {
                "`log_lik`, `r`"
            };
            assert!(
                text.contains(&format!("left out, as computed from `y`: {left}\n")),
                "{text}"
            );
        }
    }
}
