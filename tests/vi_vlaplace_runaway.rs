//! Variational Laplace where its default objective has no maximum (`specs/survey_vi.md` §16
//! "Failure modes"; `inference::vi::vlaplace::fit_vlaplace`, "Fallback to the paper form").
//!
//! On `real<lower=0> p; p ~ normal(1, 1)` (ζ = log p) the log density is
//! L(ζ) = −½(e^ζ − 1)² + ζ, its curvature C(ζ) = 2e^{2ζ} − e^ζ vanishes at ζ = −log 2, and the
//! objective with σ² = 1/C, J(ζ) = L(ζ) − ½ log C(ζ), decreases on all of (−log 2, ∞): no
//! stationary point. The old loop followed −½ log C to ζ = −0.70, where C < 0, σ² was floored
//! at 10⁶ and the objective ran to 6·10⁴; p's mean printed as inf (seeds 1–6), and the advice
//! "a smaller --step-size" did not help. The fit now reruns in §16's paper form, whose fixed
//! point is the mode ζ* = log((1 + √5)/2) = 0.4812 with σ² = 1/C(ζ*) = 1/3.6180 = 0.27639.

mod common;

use bayesc::inference::vi::vlaplace::{VlaplaceSettings, fit_vlaplace};
use bayesc::inference::vi::{Control, StopReason};
use bayesc::inference::{DensityError, LogDensity};

/// L(ζ) = −½(e^ζ − 1)² + ζ, the unconstrained log density of `p ~ normal(1, 1)`, p > 0.
struct HalfNormalish;

impl LogDensity for HalfNormalish {
    fn dim(&self) -> usize {
        1
    }
    fn log_density(&self, z: &[f64]) -> Result<f64, DensityError> {
        let mut g = [0.0];
        self.log_density_grad(z, &mut g)
    }
    fn log_density_grad(&self, z: &[f64], g: &mut [f64]) -> Result<f64, DensityError> {
        let e = z[0].exp();
        g[0] = -(e - 1.0) * e + 1.0;
        Ok(-0.5 * (e - 1.0) * (e - 1.0) + z[0])
    }
}

fn never(_: bayesc::inference::vi::Progress) -> Control {
    Control::Continue
}

#[test]
fn vlaplace_without_a_maximum_falls_back_to_the_paper_forms_fixed_point() {
    let mode = ((1.0 + 5f64.sqrt()) / 2.0).ln();
    let curvature = 2.0 * (2.0 * mode).exp() - mode.exp();
    assert!((mode - 0.48121).abs() < 1e-5 && (curvature - 3.61803).abs() < 1e-5);
    for (seed, start) in [(1, mode), (2, mode), (3, 1.5)] {
        let mut s = VlaplaceSettings::default();
        s.common.seed = seed;
        let fit = fit_vlaplace(&HalfNormalish, &[start], &s, &mut never).unwrap();
        assert_eq!(fit.stop, StopReason::ExitRule, "seed {seed}");
        assert!(fit.unusable.is_none(), "{:?}", fit.unusable);
        assert!(
            (fit.mean[0] - mode).abs() < 2e-3,
            "seed {seed}: mean {} vs the mode {mode}",
            fit.mean[0]
        );
        let var = fit.variances()[0];
        assert!(
            (var - 1.0 / curvature).abs() < 2e-3,
            "seed {seed}: variance {var} vs {}",
            1.0 / curvature
        );
        let note = &fit.notes[0];
        assert!(note.contains("has no maximum on this model"), "{note}");
        assert!(
            note.contains("the curvature of -log p in unconstrained coordinate 1 fell to"),
            "{note}"
        );
        assert!(note.contains("rerun in the paper's form"), "{note}");
    }
}

/// The output of `bayesc fit` with `args` (from the repository root), asserting success.
fn fit(args: &[&str]) -> String {
    let (ok, out) = common::run_bayesc_in(".", args);
    assert!(ok, "{out}");
    out
}

/// The rows of the summary table (after the "posterior summary" line, its blank line and the
/// header, up to the blank line that ends it).
fn summary_rows(out: &str) -> Vec<&str> {
    out.lines()
        .skip_while(|l| !l.starts_with("posterior summary"))
        .skip(3)
        .take_while(|l| !l.trim().is_empty())
        .collect()
}

#[test]
fn vlaplace_on_a_positive_parameter_prints_a_finite_summary_near_the_target() {
    let dir = std::env::temp_dir().join(format!("bayesc_vlap_runaway_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let model = dir.join("p.bayes");
    std::fs::write(
        &model,
        "parameters { real<lower=0> p; }\nmodel { p ~ normal(1, 1); }\n",
    )
    .unwrap();
    let out_csv = dir.join("p.csv");
    for seed in ["1", "2", "3"] {
        let out = fit(&[
            "fit",
            model.to_str().unwrap(),
            "--method",
            "vlaplace",
            "--seed",
            seed,
            "-o",
            out_csv.to_str().unwrap(),
        ]);
        assert!(!out.contains("diverged"), "{out}");
        assert!(out.contains("rerun in the paper's form"), "{out}");
        // no advice that does not help: the fixed point does not depend on the step size
        assert!(!out.contains("--step-size"), "{out}");
        let rows = summary_rows(&out);
        assert_eq!(rows.len(), 1, "{out}");
        assert!(
            !rows[0].contains("inf") && !rows[0].contains("NaN"),
            "{}",
            rows[0]
        );
        // the mean of q (first row of the CSV, p = e^μ): refined from the mode 0.481 toward
        // the mean-field optimum μ = 0.115 (sd 0.550, by quadrature) at 0.15–0.22 of its sd
        let text = std::fs::read_to_string(&out_csv).unwrap();
        let first = text.lines().filter(|l| !l.starts_with('#')).nth(1).unwrap();
        let p: f64 = first.rsplit(',').next().unwrap().parse().unwrap();
        let mu = p.ln();
        assert!(
            (mu - 0.115).abs() < 0.25 * 0.550,
            "seed {seed}: mu {mu} vs the mean-field optimum 0.115"
        );
    }
    // from a random start the paper form ends at the same mode: neither the start nor the step
    // size is a remedy for an unsettled refinement (seed 1: its last step moved p 0.17 sds)
    let out = fit(&[
        "fit",
        model.to_str().unwrap(),
        "--method",
        "vlaplace",
        "--seed",
        "1",
        "--random-init",
    ]);
    assert!(out.contains("rerun in the paper's form"), "{out}");
    assert!(!out.contains("--step-size"), "{out}");
    assert!(!out.contains("drop --random-init"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Eight schools: the default objective's curvature in log tau turns negative at once (from
/// the mode 3.37 to 3.19), so the fit falls back to the paper form, which ends at the mode
/// (tau about 30, NUTS mean 3.6), far from the mean-field optimum; the Newton refinement does
/// not bridge it, so the fit says not converged, with another method, not a step size, as
/// the remedy. The old code diverged (smoothed ELBO 1.16 → 1.8·10⁷, every seed 1–20), printed
/// tau's mean as inf and advised a tenth of the step size.
#[test]
fn vlaplace_on_eight_schools_names_the_fixed_point_not_the_step_size() {
    let out = fit(&[
        "fit",
        "examples/eight_schools/model.bayes",
        "--data",
        "examples/eight_schools/schools.csv",
        "--method",
        "vlaplace",
        "--seed",
        "1",
    ]);
    assert!(out.contains("WARNING: not converged"), "{out}");
    assert!(!out.contains("\nconverged"), "{out}");
    assert!(!out.contains("diverged"), "{out}");
    assert!(out.contains("has no maximum on this model"), "{out}");
    assert!(
        out.contains(
            "variational Laplace's fixed point (its mean and the curvature there) lies far"
        ),
        "{out}"
    );
    assert!(out.contains("use --method qbvi or nuts"), "{out}");
    assert!(!out.contains("--step-size"), "{out}");
    let rows = summary_rows(&out);
    assert_eq!(rows.len(), 18, "{out}");
    for r in rows {
        assert!(!r.contains("inf") && !r.contains("NaN"), "{r}");
    }
}
