//! `bayesc plot` and the REPL's `:plot`: the seven kinds drawn for a labour NUTS fit (with
//! replicated data in generated quantities) and a QBVI ELBO trace, checked on the SVG's
//! structure (root element, one series per chain and panel, labels), and the errors for bad
//! input (never a panic).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The labour model with replicated outcomes in generated quantities, for the ppc plot.
const LABOUR_REP: &str = r#"
data {
  int<lower=0> N;
  array[N] int<lower=0, upper=1> lfp;
  vector[N] k5;  vector[N] k618;  vector[N] age;  vector[N] wc;
  vector[N] hc;  vector[N] lwg;   vector[N] inc;
}
transformed data {
  matrix[N, 7] X = append_col(k5, k618, age, wc, hc, lwg, inc);
}
parameters {
  real alpha;
  vector[7] beta;
}
model {
  alpha ~ normal(0, 10);
  beta ~ normal(0, 10);
  lfp ~ bernoulli_logit(alpha + X * beta);
}
generated quantities {
  array[N] int lfp_rep = bernoulli_logit_rng(alpha + X * beta);
}
"#;

const CHAINS: usize = 4;
const DRAWS: usize = 200;

fn bayesc(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_bayesc"))
        .args(args)
        .output()
        .expect("run bayesc");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "panic: {err}");
    out
}

fn data_path() -> String {
    common::root()
        .join("examples/labour/labour.csv")
        .display()
        .to_string()
}

/// The labour fit, made once: 4 NUTS chains of 200 draws (seed 11) and a QBVI ELBO trace.
struct Fit {
    dir: PathBuf,
    chains: Vec<String>,
    elbo: String,
}

fn fit() -> &'static Fit {
    static FIT: OnceLock<Fit> = OnceLock::new();
    FIT.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("plot_labour");
        std::fs::create_dir_all(&dir).unwrap();
        let model = dir.join("labour_rep.bayes");
        std::fs::write(&model, LABOUR_REP).unwrap();
        let m = model.display().to_string();
        let out = dir.join("labour.csv").display().to_string();
        let (w, s) = (DRAWS.to_string(), DRAWS.to_string());
        let o = bayesc(&[
            "fit",
            &m,
            "--data",
            &data_path(),
            "--method",
            "nuts",
            "--seed",
            "11",
            "--chains",
            "4",
            "--warmup",
            &w,
            "--samples",
            &s,
            "--output",
            &out,
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let elbo = dir.join("elbo.csv").display().to_string();
        let o = bayesc(&[
            "fit",
            &m,
            "--data",
            &data_path(),
            "--seed",
            "11",
            "--elbo-output",
            &elbo,
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let chains = (1..=CHAINS)
            .map(|c| dir.join(format!("labour_{c}.csv")).display().to_string())
            .collect();
        Fit { dir, chains, elbo }
    })
}

/// Runs `bayesc plot` on the labour chains with `extra` arguments, writing `name`; returns the SVG.
fn plot(name: &str, extra: &[&str]) -> String {
    let f = fit();
    let out = f.dir.join(name).display().to_string();
    let mut args: Vec<&str> = vec!["plot"];
    args.extend(f.chains.iter().map(String::as_str));
    args.extend(extra);
    args.extend(["-o", &out]);
    let o = bayesc(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let svg = std::fs::read_to_string(&out).unwrap();
    check_svg(&svg);
    svg
}

/// The document is an SVG: one `<svg` root, closed at the end, tags balanced.
fn check_svg(svg: &str) {
    let t = svg.trim();
    assert!(
        t.starts_with("<svg") && t.ends_with("</svg>"),
        "not an svg root: {}",
        &t[..t.len().min(80)]
    );
    assert_eq!(t.matches("<svg").count(), 1);
    assert_eq!(t.matches("<text").count(), t.matches("</text>").count());
    assert_eq!(t.matches('<').count(), t.matches('>').count());
}

/// The opening tags `<name …>` of the document.
fn elements<'a>(svg: &'a str, name: &str) -> Vec<&'a str> {
    let open = format!("<{name} ");
    svg.match_indices(&open)
        .map(|(i, _)| {
            let end = svg[i..].find('>').unwrap();
            &svg[i..i + end]
        })
        .collect()
}

/// The colour `#RRGGBB` of chain `c` in the tab10 cycle, as plotters writes it.
fn chain_color(c: usize) -> &'static str {
    ["#1F77B4", "#FF7F0E", "#2CA02C", "#D62728"][c]
}

/// The polylines of data series (the axes and ticks are pure black).
fn series<'a>(svg: &'a str) -> Vec<&'a str> {
    elements(svg, "polyline")
        .into_iter()
        .filter(|l| !has_color(l, "\"#000000\""))
        .collect()
}

/// Near-black reference ink (uniform line, HDI bar, observed data).
const INK: &str = "#222222";

fn has_color(el: &str, color: &str) -> bool {
    el.to_uppercase().contains(color)
}

fn points(el: &str) -> usize {
    let Some(i) = el.find("points=\"") else {
        return 0;
    };
    el[i + 8..]
        .split('"')
        .next()
        .unwrap()
        .split_whitespace()
        .count()
}

fn texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .map(|t| {
            let body = &t[t.find('>').unwrap() + 1..];
            body[..body.find("</text>").unwrap()].trim().to_string()
        })
        .collect()
}

#[test]
fn trace_draws_one_line_per_chain_in_each_panel() {
    let svg = plot(
        "trace.svg",
        &["--kind", "trace", "--params", "alpha,beta[1],beta[2]"],
    );
    let lines = elements(&svg, "polyline");
    for c in 0..CHAINS {
        let mine: Vec<_> = lines
            .iter()
            .filter(|l| has_color(l, chain_color(c)))
            .collect();
        // per parameter: a density and a trace line
        assert_eq!(mine.len(), 6, "chain {c}: {} lines", mine.len());
        // the trace lines hold every post-warmup draw of the chain, no warmup
        assert_eq!(mine.iter().filter(|l| points(l) == DRAWS).count(), 3);
    }
    let t = texts(&svg);
    for name in ["alpha", "beta[1]", "beta[2]", "chain 1", "chain 4"] {
        assert!(t.iter().any(|s| s == name), "no label {name}: {t:?}");
    }
    assert!(!t.iter().any(|s| s == "beta[3]"));
}

#[test]
fn trace_defaults_to_the_first_six_quantities() {
    let svg = plot("trace_default.svg", &[]);
    let t = texts(&svg);
    let names = [
        "alpha", "beta[1]", "beta[2]", "beta[3]", "beta[4]", "beta[5]",
    ];
    for n in names {
        assert_eq!(t.iter().filter(|s| *s == n).count(), 2, "{n}: {t:?}");
    }
    assert!(!t.iter().any(|s| s == "beta[6]"));
    assert_eq!(series(&svg).len(), 6 * 2 * CHAINS);
}

#[test]
fn rank_histograms_have_twenty_bins_per_chain_and_a_uniform_line() {
    let svg = plot("rank.svg", &["--kind", "rank", "--params", "alpha,beta[7]"]);
    let rects = elements(&svg, "rect");
    for c in 0..CHAINS {
        let bars = rects
            .iter()
            .filter(|r| has_color(r, chain_color(c)))
            .count();
        assert_eq!(bars, 2 * 20, "chain {c}");
    }
    // a dashed uniform line per chain and panel: black pieces
    let dashes = series(&svg).iter().filter(|l| has_color(l, INK)).count();
    assert_eq!(dashes, 2 * CHAINS * 20);
    let t = texts(&svg);
    assert!(t.iter().any(|s| s == "beta[7]") && t.iter().any(|s| s == "rank (all chains)"));
}

#[test]
fn pair_plot_is_a_lower_triangle_with_densities_on_the_diagonal() {
    let svg = plot(
        "pair.svg",
        &["--kind", "pair", "--params", "alpha,beta[3],beta[4]"],
    );
    // 3 diagonal densities, 3 scatter panels of all 800 draws
    assert_eq!(series(&svg).len(), 3);
    let dots = elements(&svg, "circle");
    let divergent = dots.iter().filter(|d| has_color(d, "#E41A1C")).count();
    let n_div = texts(&svg)
        .iter()
        .find_map(|s| {
            s.strip_prefix("divergent (")
                .and_then(|r| r.strip_suffix(')'))
                .map(|n| n.parse::<usize>().unwrap())
        })
        .expect("divergent legend");
    assert_eq!(divergent, 3 * n_div);
    assert_eq!(dots.len(), 3 * CHAINS * DRAWS);
    let t = texts(&svg);
    assert!(t.iter().any(|s| s == "alpha") && t.iter().any(|s| s == "beta[4]"));
}

#[test]
fn density_per_chain_or_pooled_with_the_hdi() {
    let svg = plot("density.svg", &["--kind", "density", "--params", "beta"]);
    let lines = series(&svg);
    for c in 0..CHAINS {
        assert_eq!(
            lines
                .iter()
                .filter(|l| has_color(l, chain_color(c)))
                .count(),
            7
        );
    }
    // the HDI bar of each of the 7 panels
    assert_eq!(lines.iter().filter(|l| has_color(l, INK)).count(), 7);
    assert!(texts(&svg).iter().any(|s| s == "94% HDI"));
    let pooled = plot(
        "density_pooled.svg",
        &["--kind", "density", "--combined", "--params", "alpha"],
    );
    assert_eq!(series(&pooled).len(), 2);
}

#[test]
fn forest_shows_each_chain_and_r_hat() {
    let svg = plot(
        "forest.svg",
        &["--kind", "forest", "--params", "alpha,beta"],
    );
    let dots = elements(&svg, "circle");
    for c in 0..CHAINS {
        assert_eq!(
            dots.iter().filter(|d| has_color(d, chain_color(c))).count(),
            8
        );
    }
    let t = texts(&svg);
    assert_eq!(t.iter().filter(|s| s.starts_with("R̂ ")).count(), 8);
    // R-hat of a well-mixed labour fit
    for s in t.iter().filter_map(|s| s.strip_prefix("R̂ ")) {
        let r: f64 = s.parse().unwrap();
        assert!((0.99..1.05).contains(&r), "R-hat {r}");
    }
    let combined = plot(
        "forest_combined.svg",
        &["--kind", "forest", "--combined", "--params", "alpha"],
    );
    assert_eq!(elements(&combined, "circle").len(), 1);
}

#[test]
fn elbo_plot_draws_the_raw_and_smoothed_trace() {
    let f = fit();
    let out = f.dir.join("elbo.svg").display().to_string();
    let o = bayesc(&["plot", "--kind", "elbo", "--elbo", &f.elbo, "-o", &out]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let svg = std::fs::read_to_string(&out).unwrap();
    check_svg(&svg);
    let rows = std::fs::read_to_string(&f.elbo).unwrap().lines().count() - 1;
    let lines = series(&svg);
    assert_eq!(lines.len(), 2);
    assert_eq!(points(lines[0]), rows);
    let t = texts(&svg);
    assert!(t.iter().any(|s| s == "iteration") && t.iter().any(|s| s == "smoothed ELBO"));
}

#[test]
fn ppc_overlays_replicates_on_the_observed_data() {
    let svg = plot(
        "ppc.svg",
        &[
            "--kind",
            "ppc",
            "--data",
            &data_path(),
            "--var",
            "lfp",
            "--rep",
            "lfp_rep",
        ],
    );
    let lines = series(&svg);
    // binary outcome: frequency polygons over {0, 1}; 100 replicates, the observed, the mean
    let observed: Vec<_> = lines.iter().filter(|l| has_color(l, INK)).collect();
    assert_eq!(observed.len(), 1);
    assert_eq!(points(observed[0]), 2);
    let reps = lines
        .iter()
        .filter(|l| has_color(l, chain_color(0)))
        .count();
    assert_eq!(reps, 100);
    assert!(texts(&svg).iter().any(|s| s == "observed lfp"));
}

fn fails(args: &[&str], expect: &str) {
    let o = bayesc(args);
    assert_eq!(o.status.code(), Some(1), "{args:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(expect), "{args:?}: {err}");
}

#[test]
fn bad_input_gets_clear_errors() {
    let f = fit();
    let out = f.dir.join("bad.svg").display().to_string();
    let c1 = f.chains[0].as_str();
    fails(&["plot", "-o", &out], "no draws files given");
    fails(&["plot", &data_path(), "-o", &out], "labour.csv");
    fails(
        &["plot", c1, "--params", "alpah", "-o", &out],
        "did you mean `alpha`?",
    );
    fails(
        &["plot", c1, "--params", "bta[2]", "-o", &out],
        "did you mean `beta[2]`?",
    );
    fails(
        &["plot", c1, "--kind", "trac", "-o", &out],
        "did you mean `trace`?",
    );
    fails(&["plot", c1, "--kind", "elbo", "-o", &out], "ELBO trace");
    fails(
        &["plot", "--kind", "elbo", "--elbo", c1, "-o", &out],
        "not an ELBO trace",
    );
    fails(
        &[
            "plot",
            c1,
            "--kind",
            "ppc",
            "--var",
            "lfp",
            "--data",
            &data_path(),
            "-o",
            &out,
        ],
        "replicated data `y_rep`",
    );
    fails(
        &[
            "plot", c1, "--kind", "ppc", "--rep", "lfp_rep", "--var", "lfp", "-o", &out,
        ],
        "--data FILE",
    );
    fails(
        &[
            "plot",
            c1,
            "--kind",
            "ppc",
            "--rep",
            "lfp_rep",
            "--var",
            "lpf",
            "--data",
            &data_path(),
            "-o",
            &out,
        ],
        "did you mean `lfp`?",
    );
    fails(
        &[
            "plot", c1, "--kind", "pair", "--params", "alpha", "-o", &out,
        ],
        "at least two",
    );
    fails(
        &["plot", c1, "-o", &f.dir.join("x.pdf").display().to_string()],
        "must end in `.svg` or `.png`",
    );
    assert!(!Path::new(&out).exists());
}

#[test]
fn repl_plot_on_the_last_fit() {
    use bayesc::repl::Session;
    let mut s = Session::new();
    s.set_progress(false);
    let model = common::root().join("examples/labour/model.bayes");
    assert!(!s.execute(&format!(":load {}", model.display())).is_error);
    assert!(!s.execute(&format!(":data {}", data_path())).is_error);
    let no_fit = s.execute(":plot trace");
    assert!(
        no_fit.is_error && no_fit.text.contains("no fits"),
        "{}",
        no_fit.text
    );
    let o = s.execute(":fit nuts --seed 3 --chains 2 --warmup 150 --samples 150");
    assert!(!o.is_error, "{}", o.text);
    let out = fit().dir.join("repl_trace.svg");
    let o = s.execute(&format!(":plot trace alpha,beta[2] {}", out.display()));
    assert!(!o.is_error && o.text.contains("written to"), "{}", o.text);
    let svg = std::fs::read_to_string(&out).unwrap();
    check_svg(&svg);
    let lines = series(&svg);
    assert_eq!(lines.iter().filter(|l| points(l) == 150).count(), 2 * 2);
    let o = s.execute(":plot rank alpah");
    assert!(
        o.is_error && o.text.contains("did you mean `alpha`?"),
        "{}",
        o.text
    );
    let o = s.execute(":plot elbo");
    assert!(o.is_error && o.text.contains("ELBO trace"), "{}", o.text);
    let o = s.execute(":plot ppc lfp");
    assert!(o.is_error && o.text.contains("lfp_rep"), "{}", o.text);
}
