//! The inference menu end to end on the shipped examples (issue 4): `optimize` against the
//! maximum-likelihood references (statsmodels for labour, the arch package for GARCH), QNVB and
//! the Laplace approximation against the NUTS reference of the labour posterior, the PSIS k̂
//! of good and bad approximations, and the density without the Jacobian adjustment.

mod common;

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;

use bayesc::fit::{self, FitDetails, FitOptions, FitResult, Method};
use bayesc::graph::Model;
use bayesc::inference::LogDensity;
use bayesc::inference::qbvi::Covariance;

fn run(model: &Model, options: &FitOptions) -> FitResult {
    let never = AtomicBool::new(false);
    let monitor = fit::Monitor {
        on_progress: &|_| {},
        stop: &never,
    };
    fit::fit(model, options, &monitor).expect("the fit runs")
}

fn labour() -> Model {
    common::compile(
        "examples/labour/model.bayes",
        &["examples/labour/labour.csv"],
    )
}

use common::{read_mle, rel};

#[test]
fn optimize_reproduces_labour_mle() {
    let model = common::compile("examples/labour/mle.bayes", &["examples/labour/labour.csv"]);
    let reference = read_mle("labour_mle.csv");
    let r = run(&model, &FitOptions::new(Method::Optimize, 1));
    let FitDetails::Optimize(o) = &r.details else {
        panic!("optimize details expected")
    };
    assert!(o.converged, "{}", o.lbfgs.message);
    for (k, name) in o.names.iter().enumerate() {
        let (est, se) = reference[name];
        assert!(
            rel(o.estimates[k], est) < 1e-4,
            "{name}: {} vs {est}",
            o.estimates[k]
        );
        assert!(
            rel(o.std_errors[k], se) < 0.02,
            "{name} std error: {} vs {se}",
            o.std_errors[k]
        );
    }
    let loglik = reference["loglik"].0;
    assert!(
        rel(o.log_density, loglik) < 1e-4,
        "{} vs {loglik}",
        o.log_density
    );
    // the reported draw is the optimum
    assert_eq!(r.draws.n_draws(), 1);
}

#[test]
fn optimize_reproduces_garch_mle() {
    let model = common::compile("examples/garch/mle.bayes", &["examples/garch/returns.csv"]);
    let reference = read_mle("garch_mle.csv");
    for seed in [1, 2] {
        let r = run(&model, &FitOptions::new(Method::Optimize, seed));
        let FitDetails::Optimize(o) = &r.details else {
            panic!("optimize details expected")
        };
        for (k, name) in o.names.iter().enumerate() {
            let (est, _) = reference[name];
            assert!(
                rel(o.estimates[k], est) < 1e-4,
                "seed {seed} {name}: {} vs {est}",
                o.estimates[k]
            );
        }
        let loglik = reference["loglik"].0;
        assert!(
            rel(o.log_density, loglik) < 1e-4,
            "seed {seed}: {} vs {loglik}",
            o.log_density
        );
        // The arch package reports robust (sandwich) standard errors by default; ours are the
        // inverse-Hessian ones, so only their order of magnitude is comparable: for mu, whose
        // score is close to Gaussian, they agree to 5 %.
        let mu = o.names.iter().position(|n| n == "mu").unwrap();
        assert!(rel(o.std_errors[mu], reference["mu"].1) < 0.05);
    }
}

#[test]
fn jacobian_switch_changes_the_mode() {
    // With the Jacobian the GARCH optimum moves: log|J| of omega's log transform pulls omega up.
    let model = common::compile("examples/garch/mle.bayes", &["examples/garch/returns.csv"]);
    let mut options = FitOptions::new(Method::Optimize, 1);
    let without = run(&model, &options);
    options.jacobian = true;
    let with = run(&model, &options);
    let (FitDetails::Optimize(a), FitDetails::Optimize(b)) = (&without.details, &with.details)
    else {
        panic!("optimize details expected")
    };
    assert!(b.jacobian && !a.jacobian);
    // the density with the Jacobian at its own optimum beats the Jacobian-free optimum point
    let at_a = model.log_density(&a.point).unwrap();
    assert!(b.log_density >= at_a - 1e-9);
    assert!(rel(a.estimates[1], b.estimates[1]) > 1e-3);
}

fn fd_grad(density: &dyn LogDensity, z: &[f64]) -> Vec<f64> {
    (0..z.len())
        .map(|i| {
            let h = 1e-6;
            let (mut up, mut down) = (z.to_vec(), z.to_vec());
            up[i] += h;
            down[i] -= h;
            (density.log_density(&up).unwrap() - density.log_density(&down).unwrap()) / (2.0 * h)
        })
        .collect()
}

#[test]
fn density_without_jacobian_has_correct_value_and_gradient() {
    let src = "parameters { real<lower=0> s; real m; } \
               model { s ~ gamma(2, 1); m ~ normal(1, s); }";
    let prog = bayesc::syntax::parser::parse_program(src, 0).unwrap();
    let model = Model::new(&prog, &bayesc::data::BoundData::default()).unwrap();
    let z = [0.3_f64, -0.4];
    let s = z[0_usize].exp();
    let without = model.with_jacobian(false);
    let with = model.with_jacobian(true);
    // the Jacobian term of s = exp(ζ) is ζ
    let full = model.log_density(&z).unwrap();
    assert!((with.log_density(&z).unwrap() - full).abs() < 1e-12);
    assert!((full - without.log_density(&z).unwrap() - z[0]).abs() < 1e-12);
    // gamma(2,1) kernel log s − s and normal kernel −log s − (m−1)²/(2s²), up to constants
    let kernel = |z: &[f64]| {
        let s = z[0].exp();
        s.ln() - s - s.ln() - (z[1] - 1.0).powi(2) / (2.0 * s * s)
    };
    let z2 = [-0.1, 0.7];
    let diff = without.log_density(&z).unwrap() - without.log_density(&z2).unwrap();
    assert!((diff - (kernel(&z) - kernel(&z2))).abs() < 1e-10, "{s}");
    let mut g = vec![0.0; 2];
    without.log_density_grad(&z, &mut g).unwrap();
    let fd = fd_grad(&without, &z);
    for i in 0..2 {
        assert!((g[i] - fd[i]).abs() < 1e-6, "{i}: {} vs {}", g[i], fd[i]);
    }
}

fn labour_moments(result: &FitResult) -> HashMap<String, (f64, f64)> {
    let names = &result.draws.names;
    let m = common::column_moments(&result.draws.chains[0], names.len());
    names.iter().cloned().zip(m).collect()
}

#[test]
fn qnvb_labour_means_match_nuts_reference() {
    let model = labour();
    let reference =
        common::read_reference(&common::validation_dir().join("reference_fits/labour.csv"));
    for seed in 1..=5 {
        let mut options = FitOptions::new(Method::Qnvb, seed);
        options.vi_draws = 4000;
        options.psis_draws = 0;
        let r = run(&model, &options);
        assert!(r.vi.is_none(), "psis_draws = 0 skips the diagnostic");
        let m = labour_moments(&r);
        for row in &reference {
            let (mean, _) = m[&row.name];
            let z = (mean - row.mean).abs() / row.sd;
            assert!(
                z < 0.15,
                "seed {seed} {}: {mean} vs {} ({z:.3} sd)",
                row.name,
                row.mean
            );
        }
    }
}

#[test]
fn laplace_labour_matches_nuts_reference() {
    // The labour parameters are unconstrained, so q's mean and sds on the constrained scale are
    // the mode and √diag(Σ) exactly; the draws are checked too, with room for their Monte Carlo
    // error. The issue asks for means within 0.1 reference sd, but the mean of a Laplace
    // approximation is the posterior mode, and on this slightly skewed posterior the mode of
    // beta[1] is 0.158 sd from the NUTS mean, and alpha, beta[3] and beta[7] 0.109–0.115 sd
    // (Monte Carlo error of the reference ~0.02 sd; the offsets print with --nocapture). The
    // sds agree within 2 %. The bound here is therefore 0.17 sd.
    let model = labour();
    let reference =
        common::read_reference(&common::validation_dir().join("reference_fits/labour.csv"));
    let mut options = FitOptions::new(Method::Laplace, 3);
    options.vi_draws = 20000;
    let r = run(&model, &options);
    let FitDetails::Laplace(lap) = &r.details else {
        panic!("Laplace details expected")
    };
    let names = model.parameter_names();
    let se = lap.standard_errors();
    let m = labour_moments(&r);
    for row in &reference {
        let k = names.iter().position(|n| *n == row.name).unwrap();
        let z = (lap.mode[k] - row.mean).abs() / row.sd;
        eprintln!(
            "{}: mode {:.3} sd off, sd ratio {:.3}",
            row.name,
            z,
            se[k] / row.sd
        );
        let bound = 0.17;
        assert!(
            z < bound,
            "{}: mean {} vs {} ({z:.3} sd)",
            row.name,
            lap.mode[k],
            row.mean
        );
        assert!(
            rel(se[k], row.sd) < 0.1,
            "{}: sd {} vs {}",
            row.name,
            se[k],
            row.sd
        );
        let (mean, sd) = m[&row.name];
        let z = (mean - row.mean).abs() / row.sd;
        assert!(
            z < bound + 0.02,
            "{} draws: mean {mean} vs {} ({z:.3} sd)",
            row.name,
            row.mean
        );
        assert!(
            rel(sd, row.sd) < 0.1,
            "{} draws: sd {sd} vs {}",
            row.name,
            row.sd
        );
    }
    let vi = r.vi.expect("Laplace reports PSIS");
    assert!(vi.khat < 0.5, "k-hat {}", vi.khat);
}

#[test]
fn khat_small_for_full_qbvi_on_labour() {
    let model = labour();
    for seed in [1, 2] {
        let mut options = FitOptions::new(Method::Qbvi, seed);
        options.psis_draws = 4000;
        let r = run(&model, &options);
        let vi = r.vi.expect("QBVI reports PSIS");
        assert!(vi.khat < 0.5, "seed {seed}: k-hat {}", vi.khat);
        assert!(vi.collapsed.is_empty(), "{:?}", vi.collapsed);
        let FitDetails::Qbvi(q) = &r.details else {
            panic!("QBVI details expected")
        };
        // trace rows: iteration t, LB_t, and L̄_t from t = W + 1 on (specs/qbvi.md §7.2)
        assert_eq!(vi.trace.len(), q.iterations);
        let w = options.qbvi.window;
        assert!(vi.trace[w - 1].2.is_nan());
        assert_eq!(vi.trace[w], (w + 1, q.elbo_trace[w], q.smoothed_elbo[0]));
        // the Monte Carlo ELBO of the final q is close to the fit's best smoothed ELBO
        assert!(
            (vi.elbo - q.best_smoothed_elbo).abs() < 1.0,
            "{} vs {}",
            vi.elbo,
            q.best_smoothed_elbo
        );
    }
}

#[test]
fn khat_large_for_mean_field_on_funnel() {
    let model = common::compile("tests/fixtures/vi/funnel.bayes", &[]);
    let mut options = FitOptions::new(Method::Qbvi, 1);
    options.qbvi.covariance = Covariance::Diagonal;
    let r = run(&model, &options);
    let khat = r.vi.expect("QBVI reports PSIS").khat;
    assert!(khat > 0.7, "diagonal QBVI on the funnel: k-hat {khat}");
    let r = run(&model, &FitOptions::new(Method::Qnvb, 1));
    let vi = r.vi.expect("QNVB reports PSIS");
    assert!(vi.khat > 0.7, "QNVB on the funnel: k-hat {}", vi.khat);
    // smoothed ELBO = mean of the last W + 1 = 31 values (specs/qnvb.md §7.5)
    let FitDetails::Qnvb(q) = &r.details else {
        panic!("QNVB details expected")
    };
    assert!(vi.trace[29].2.is_nan());
    let mean31 = q.elbo_trace[10..41].iter().sum::<f64>() / 31.0;
    assert!((vi.trace[40].2 - mean31).abs() < 1e-9 * mean31.abs());
}

#[test]
fn psis_resample_is_reproducible_and_changes_draws() {
    let model = common::compile("tests/fixtures/vi/funnel.bayes", &[]);
    let mut options = FitOptions::new(Method::Laplace, 4);
    options.vi_draws = 500;
    let plain = run(&model, &options);
    options.psis_resample = true;
    let a = run(&model, &options);
    let b = run(&model, &options);
    assert!(a.vi.as_ref().unwrap().resampled);
    assert_eq!(a.draws.chains, b.draws.chains);
    assert_ne!(a.draws.chains, plain.draws.chains);
    assert_eq!(a.draws.n_draws(), 500);
}

#[test]
fn delta_method_standard_error_through_a_log_transform() {
    // y_i ~ exponential(λ), λ > 0 flat: λ̂ = 1/ȳ and the inverse observed information gives
    // se(λ̂) = λ̂/√n; optimisation runs on ζ = log λ and the delta method maps se(ζ̂) = 1/√n back.
    use bayesc::data::{BoundData, DataValue};
    let src = "data { int N; vector[N] y; } parameters { real<lower=0> lambda; } \
               model { target += exponential_lpdf(y | lambda); }";
    let y = vec![0.5, 1.0, 1.5, 2.0, 3.0, 0.2, 0.7, 4.1];
    let n = y.len();
    let mut data = BoundData::default();
    data.values.insert(
        "N".into(),
        DataValue {
            dims: vec![],
            values: std::sync::Arc::new(vec![n as f64]),
            is_int: true,
            column_major: false,
        },
    );
    data.values.insert(
        "y".into(),
        DataValue {
            dims: vec![n],
            values: std::sync::Arc::new(y.clone()),
            is_int: false,
            column_major: false,
        },
    );
    let prog = bayesc::syntax::parser::parse_program(src, 0).unwrap();
    let model = Model::new(&prog, &data).unwrap();
    let r = run(&model, &FitOptions::new(Method::Optimize, 5));
    let FitDetails::Optimize(o) = &r.details else {
        panic!("optimize details expected")
    };
    let lambda = n as f64 / y.iter().sum::<f64>();
    assert!(
        rel(o.estimates[0], lambda) < 1e-6,
        "{} vs {lambda}",
        o.estimates[0]
    );
    let se = lambda / (n as f64).sqrt();
    assert!(
        rel(o.std_errors[0], se) < 1e-4,
        "{} vs {se}",
        o.std_errors[0]
    );
    assert!(rel(o.unconstrained_se[0], 1.0 / (n as f64).sqrt()) < 1e-4);
    // log-likelihood n·log λ̂ − λ̂·Σy = n·(log λ̂ − 1)
    assert!(rel(o.log_density, n as f64 * (lambda.ln() - 1.0)) < 1e-9);
}

#[test]
fn qnvb_reaches_the_mean_field_optimum_of_a_gaussian_regression() {
    // y_i ~ normal(a + b·x_i, 1), a, b ~ normal(0, 10): the posterior is Gaussian with precision
    // Λ = XᵀX + I/100 and mean Λ⁻¹Xᵀy; the mean-field optimum has that mean and variances
    // 1/Λ_ii (specs/qnvb.md §10.2), reached through the whole pipeline from a .bayes model.
    use bayesc::data::{BoundData, DataValue};
    let src = "data { int N; vector[N] x; vector[N] y; } parameters { real a; real b; } \
               model { a ~ normal(0, 10); b ~ normal(0, 10); y ~ normal(a + b * x, 1); }";
    let x = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0];
    let y = [1.1, 1.9, 3.2, 3.9, 5.2, 5.8];
    let n = x.len();
    let vector = |v: &[f64]| DataValue {
        dims: vec![v.len()],
        values: std::sync::Arc::new(v.to_vec()),
        is_int: false,
        column_major: false,
    };
    let mut data = BoundData::default();
    data.values.insert(
        "N".into(),
        DataValue {
            dims: vec![],
            values: std::sync::Arc::new(vec![n as f64]),
            is_int: true,
            column_major: false,
        },
    );
    data.values.insert("x".into(), vector(&x));
    data.values.insert("y".into(), vector(&y));
    let prog = bayesc::syntax::parser::parse_program(src, 0).unwrap();
    let model = Model::new(&prog, &data).unwrap();
    let r = run(&model, &FitOptions::new(Method::Qnvb, 2));
    let FitDetails::Qnvb(q) = &r.details else {
        panic!("QNVB details expected")
    };
    let (sx, sxx) = (x.iter().sum::<f64>(), x.iter().map(|v| v * v).sum::<f64>());
    let (sy, sxy) = (
        y.iter().sum::<f64>(),
        x.iter().zip(&y).map(|(a, b)| a * b).sum::<f64>(),
    );
    let (l11, l12, l22) = (n as f64 + 0.01, sx, sxx + 0.01);
    let det = l11 * l22 - l12 * l12;
    let mean = [(l22 * sy - l12 * sxy) / det, (l11 * sxy - l12 * sy) / det];
    let var = [1.0 / l11, 1.0 / l22];
    for i in 0..2 {
        assert!(
            (q.mean[i] - mean[i]).abs() < 1e-3 * var[i].sqrt(),
            "mean {i}: {} vs {}",
            q.mean[i],
            mean[i]
        );
        assert!(
            rel(q.variance[i], var[i]) < 1e-3,
            "variance {i}: {} vs {}",
            q.variance[i],
            var[i]
        );
    }
}

#[test]
fn psis_corrected_laplace_labour_means_match_nuts_reference() {
    // The plain Laplace mean is the mode (0.158 sd from the NUTS mean for beta[1], see above);
    // importance-resampling the Laplace draws with Pareto-smoothed weights (`--psis-resample`)
    // corrects for the skew. With 4000 draws the resampled means are within 0.1 reference sd
    // and the sds within 10 %, for 5 seeds.
    let model = labour();
    let reference =
        common::read_reference(&common::validation_dir().join("reference_fits/labour.csv"));
    for seed in 1..=5 {
        let mut options = FitOptions::new(Method::Laplace, seed);
        options.vi_draws = 4000;
        options.psis_resample = true;
        let r = run(&model, &options);
        assert!(r.vi.as_ref().expect("Laplace reports PSIS").resampled);
        let m = labour_moments(&r);
        let worst = reference
            .iter()
            .map(|row| (m[&row.name].0 - row.mean).abs() / row.sd)
            .fold(0.0, f64::max);
        eprintln!("seed {seed}: max |mean - reference| = {worst:.3} sd");
        for row in &reference {
            let (mean, sd) = m[&row.name];
            let z = (mean - row.mean).abs() / row.sd;
            assert!(
                z < 0.1,
                "seed {seed} {}: resampled mean {mean} vs {} ({z:.3} sd)",
                row.name,
                row.mean
            );
            assert!(
                rel(sd, row.sd) < 0.1,
                "seed {seed} {}: sd {sd} vs {}",
                row.name,
                row.sd
            );
        }
    }
}

#[test]
fn an_improper_posterior_with_an_unbounded_spike_is_flagged() {
    // Two points, a line through them and a flat-prior scale: the density grows without bound as
    // sigma -> 0, and QBVI ends on a spike where log p - log q is constant to rounding (k-hat
    // undefined). The collapse check names the parameters.
    let model = common::compile_source(
        "spike.bayes",
        "data { int N; vector[N] x; vector[N] y; }\n\
         parameters { real a; real b; real<lower=0> sigma; }\n\
         model { y ~ normal(a + b * x, sigma); }\n",
        Some(r#"{"N": 2, "x": [1, 2], "y": [2, 3.5]}"#),
        &[],
    );
    // The density has no interior mode (the Hessian is not negative definite where the mode
    // search ends), so QBVI starts randomly (it used to start at the spike and collapse there,
    // k-hat undefined) and drifts off along the improper directions: the start message is a
    // warning naming them.
    let r = run(&model, &FitOptions::new(Method::Qbvi, 1));
    let vi = r.vi.expect("QBVI reports PSIS");
    assert!(vi.no_mode.is_some());
    assert!(
        vi.unbounded.iter().any(|n| n == "sigma"),
        "{:?}",
        vi.unbounded
    );
    assert!(
        fit::start_message(&vi)
            .expect("a message")
            .starts_with("WARNING: the posterior may be improper")
    );
    // QNVB from the random start: k-hat flags it (> 0.7)
    let r = run(&model, &FitOptions::new(Method::Qnvb, 1));
    let vi = r.vi.expect("QNVB reports PSIS");
    assert!(vi.no_mode.is_some());
    assert!(vi.khat > fit::KHAT_BAD, "k-hat {}", vi.khat);
}

/// Column mean of parameter `name` in the draws of a variational fit.
fn draw_mean(r: &FitResult, name: &str) -> f64 {
    let j = r
        .draws
        .names
        .iter()
        .position(|n| n == name)
        .expect("parameter in the draws");
    let col: Vec<f64> = r.draws.column(j).concat();
    col.iter().sum::<f64>() / col.len() as f64
}

#[test]
fn qbvi_on_the_centred_eight_schools_funnel_starts_randomly_and_does_not_collapse() {
    // The centred parameterisation has no interior mode (the density is unbounded as tau -> 0
    // with theta = mu), so the Laplace start used to sit at a degenerate end point and QBVI
    // collapsed onto tau = 4.7e-13 (smoothed ELBO -822). Now the start falls back to the
    // random one of specs/qbvi.md §11 and records why; the fit matches --random-init
    // (tau ≈ 2.4 ± 0.67).
    let model = common::compile_source(
        "cent.bayes",
        "data { int<lower=0> J; vector[J] y; vector<lower=0>[J] sigma; }\n\
         parameters { real mu; real<lower=0> tau; vector[J] theta; }\n\
         model { mu ~ normal(0, 5); tau ~ cauchy(0, 5); theta ~ normal(mu, tau);\n\
                 y ~ normal(theta, sigma); }\n",
        Some(
            r#"{"J": 8, "y": [28, 8, -3, 7, -1, 1, 18, 12],
                "sigma": [15, 10, 16, 11, 9, 11, 10, 18]}"#,
        ),
        &[],
    );
    let r = run(&model, &FitOptions::new(Method::Qbvi, 1));
    let vi = r.vi.as_ref().expect("QBVI reports diagnostics");
    assert!(vi.collapsed.is_empty(), "{:?}", vi.collapsed);
    let tau = draw_mean(&r, "tau");
    assert!(tau > 1.0 && tau < 5.0, "tau mean {tau}");
    let reason = vi
        .no_mode
        .as_ref()
        .expect("the start says why it is random");
    // the mode search ran tau to 0 with the theta at mu: the reason names that neck (it said
    // only "the Hessian … is not negative definite (a flat or unbounded direction)")
    assert!(
        reason.contains("neck of a funnel") && reason.contains("as `tau` (at "),
        "{reason}"
    );
    assert!(
        vi.unbounded.is_empty(),
        "a proper posterior: {:?}",
        vi.unbounded
    );
    let note = fit::start_message(vi).expect("a note about the start");
    assert!(note.starts_with("note: start: random"), "{note}");
    match &r.details {
        FitDetails::Qbvi(f) => assert!(f.smoothed_elbo.last().copied().unwrap_or(f64::NAN) > 0.0),
        _ => panic!("QBVI details"),
    }
    // QNVB uses the same start rule
    let r = run(&model, &FitOptions::new(Method::Qnvb, 1));
    let vi = r.vi.as_ref().expect("QNVB reports diagnostics");
    assert!(vi.no_mode.is_some() && vi.unbounded.is_empty() && vi.collapsed.is_empty());
    assert!(draw_mean(&r, "tau") > 1.0);
    // the collapse warning names funnels
    assert!(fit::collapse_warning("`tau`").contains("funnel"));
}

#[test]
fn qbvi_and_qnvb_warn_on_improper_posteriors() {
    // Flat priors on mu and sigma with one observation: the marginal of log sigma grows like
    // sigma, so there is no posterior. QBVI used to report "converged" with only a k-hat note.
    let flat = common::compile_source(
        "flat.bayes",
        "data{int N; vector[N] y;} parameters{real mu; real<lower=0> sigma;}\n\
         model{y ~ normal(mu,sigma);}\n",
        Some(r#"{"N": 1, "y": [1.5]}"#),
        &[],
    );
    for method in [Method::Qbvi, Method::Qnvb] {
        let r = run(&flat, &FitOptions::new(method, 1));
        let vi = r.vi.as_ref().expect("diagnostics");
        assert!(vi.no_mode.is_some(), "{method}: no interior mode");
        assert!(
            vi.unbounded.iter().any(|n| n == "sigma"),
            "{method}: {:?}",
            vi.unbounded
        );
        let m = fit::start_message(vi).expect("a message");
        assert!(
            m.starts_with("WARNING: the posterior may be improper"),
            "{m}"
        );
    }
    // L constant in z (a parameter in no statement is now a compile error, so the flat
    // direction is written out): q spreads without bound (QNVB: sd ≈ 1000).
    let z = common::compile_source(
        "z.bayes",
        "parameters { real z; }\nmodel { target += 0 * z; }\n",
        None,
        &[],
    );
    for method in [Method::Qnvb, Method::Qbvi] {
        let r = run(&z, &FitOptions::new(method, 1));
        let vi = r.vi.as_ref().expect("diagnostics");
        assert_eq!(vi.unbounded, vec!["z".to_string()], "{method}");
    }
    // A proper posterior with a mode keeps the Laplace start and no message
    let norm = common::compile_source(
        "norm.bayes",
        "data{int<lower=0> N; vector[N] y;} parameters{real mu;}\n\
         model{mu ~ normal(1,3); y ~ normal(mu,2);}\n",
        Some(r#"{"N": 3, "y": [0.5, 1.5, 2.0]}"#),
        &[],
    );
    let r = run(&norm, &FitOptions::new(Method::Qbvi, 1));
    let vi = r.vi.as_ref().expect("diagnostics");
    assert!(vi.no_mode.is_none() && fit::start_message(vi).is_none());
}

#[test]
fn qbvi_converges_when_the_laplace_start_is_exact() {
    // A Gaussian posterior: the Laplace start is q = posterior, f = L - log q is constant, q
    // stops changing and the ELBO repeats one value. The spec's `≥` rule counted every tie as an
    // improvement and ran to the cap of 5000 (seeds 1 and 6 of this data set did).
    let model = common::compile_source(
        "norm.bayes",
        "data{int<lower=0> N; vector[N] y;} parameters{real mu;}\n\
         model{mu ~ normal(1,3); y ~ normal(mu,2);}\n",
        Some(
            r#"{"N": 20, "y": [3.78, 4.1, 1.33, -0.33, -0.98, 1.26, -0.84, -1.67, 1.6, 1.47,
                2.29, -0.63, 1.21, 1.07, -1.81, 2.28, 1.84, 5.98, 1.61, 0.91]}"#,
        ),
        &[],
    );
    for seed in [1, 6, 20, 2, 3] {
        let mut o = FitOptions::new(Method::Qbvi, seed);
        o.psis_draws = 0;
        o.vi_draws = 10;
        let r = run(&model, &o);
        match &r.details {
            FitDetails::Qbvi(f) => {
                assert_eq!(
                    f.stop,
                    bayesc::inference::qbvi::StopReason::ExitRule,
                    "seed {seed}"
                );
                assert!(
                    f.iterations < 300,
                    "seed {seed}: {} iterations",
                    f.iterations
                );
                // posterior mean (1/9 + 20/4)⁻¹ (1/9 + Σy/4)
                let sum_y: f64 = 24.47;
                let m = (1.0 / 9.0 + sum_y / 4.0) / (1.0 / 9.0 + 5.0);
                assert!(
                    (f.mean[0] - m).abs() < 1e-6,
                    "seed {seed}: {} vs {m}",
                    f.mean[0]
                );
            }
            _ => panic!("QBVI details"),
        }
    }
}

#[test]
fn entries_fixed_by_the_type_are_not_a_collapse() {
    // the unit diagonal and the zeros above it of a Cholesky factor of a correlation matrix are
    // constant in every draw by construction
    let model = common::compile_source(
        "lkj.bayes",
        "parameters { cholesky_factor_corr[3] L; } model { L ~ lkj_corr_cholesky(2); }",
        None,
        &[],
    );
    let r = run(&model, &FitOptions::new(Method::Qbvi, 1));
    let vi = r.vi.expect("QBVI reports PSIS");
    assert!(vi.collapsed.is_empty(), "{:?}", vi.collapsed);
}
