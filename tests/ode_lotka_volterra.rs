//! examples/lotka_volterra against NumPyro (`tests/reference/lotka_volterra_numpyro.py`, the same
//! model with `jax.experimental.ode.odeint` at rtol = atol = 1e-8): the ODE solution, the log
//! density and its gradient at three fixed points (fast), and a long NUTS run against NumPyro's
//! 4 × 10 000-draw posterior (`#[ignore]`).

mod common;

use std::collections::HashMap;

use bayesc::graph::Model;
use bayesc::inference::LogDensity;
use bayesc::inference::rng::stream;

/// The eight parameters, in the order of the model's `parameters` block.
const NAMES: [&str; 8] = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "z_init[1]",
    "z_init[2]",
    "sigma[1]",
    "sigma[2]",
];

/// The solver call of the example as shipped (the case study's control settings).
const SHIPPED: &str = "1e-5, 1e-3, 5000";

fn read(path: &str) -> String {
    std::fs::read_to_string(common::root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The example model with the solver's `rtol, atol, max_num_steps` replaced by `control`.
fn model(control: &str) -> Model {
    let text = read("examples/lotka_volterra/model.bayes");
    assert!(
        text.contains(SHIPPED),
        "the example's solver settings changed"
    );
    let data = read("examples/lotka_volterra/lynx_hare.json");
    common::compile_source(
        "model.bayes",
        &text.replace(SHIPPED, control),
        Some(&data),
        &[],
    )
}

/// `lotka_volterra_numpyro_points.csv`: (point, quantity) → value.
fn points() -> HashMap<(String, String), f64> {
    read("tests/reference/lotka_volterra_numpyro_points.csv")
        .lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            // quantity names such as z[3,1] contain a comma: the value is the last field
            let quantity = f[1..f.len() - 1].join(",");
            let value = f[f.len() - 1].parse().expect("a number");
            ((f[0].to_string(), quantity), value)
        })
        .collect()
}

/// At point `p` of the reference file: (unconstrained ζ, the constrained values x, the log
/// density without Jacobian, its gradient with respect to x, and the solution z[n,k] in the
/// order of the transformed parameter names).
fn at(m: &Model, refs: &HashMap<(String, String), f64>, p: &str) -> (f64, Vec<f64>, Vec<f64>) {
    let x: Vec<f64> = NAMES
        .iter()
        .map(|n| refs[&(p.to_string(), n.to_string())])
        .collect();
    let zeta = m.unconstrain(&x).expect("inside the support");
    let mut g = vec![0.0; zeta.len()];
    let lp = m
        .with_jacobian(false)
        .log_density_grad(&zeta, &mut g)
        .expect("finite density");
    // every parameter is <lower=0>: x = exp(ζ), so ∂lp/∂x = (∂lp/∂ζ) / x
    let grad: Vec<f64> = g.iter().zip(&x).map(|(g, x)| g / x).collect();
    let out = m
        .write_array(&zeta, true, false, &mut stream(1, 0))
        .expect("outputs");
    (lp, grad, out[NAMES.len()..].to_vec())
}

/// Central differences (step 1e-5 on the unconstrained scale) of the log density without
/// Jacobian at point `p`, as derivatives with respect to the constrained values.
fn central_differences(m: &Model, refs: &HashMap<(String, String), f64>, p: &str) -> Vec<f64> {
    let x: Vec<f64> = NAMES
        .iter()
        .map(|n| refs[&(p.to_string(), n.to_string())])
        .collect();
    let zeta = m.unconstrain(&x).expect("inside the support");
    let lp = |z: &[f64]| {
        m.with_jacobian(false)
            .log_density(z)
            .expect("finite density")
    };
    let h = 1e-5;
    (0..zeta.len())
        .map(|j| {
            let (mut up, mut down) = (zeta.clone(), zeta.clone());
            up[j] += h;
            down[j] -= h;
            (lp(&up) - lp(&down)) / (2.0 * h) / x[j]
        })
        .collect()
}

/// With a tight solver (rtol = atol = 1e-10) bayesc's ODE solution, the differences of its log
/// density between the three points and its gradient (forward sensitivities) agree with
/// NumPyro's (odeint at 1e-10 for the solution; autodiff through odeint at 1e-8 for the
/// density and gradient) to 1e-6 relative, the gradient also to central differences of
/// bayesc's own log density to 1e-6 and to NumPyro's (adjoint sensitivities) to 1e-5.
/// With the example's own settings (rtol 1e-5,
/// atol 1e-3) the solution is within 2e-4 relative and the log density within 2e-3.
#[test]
fn lotka_volterra_density_and_gradient_match_numpyro_at_three_points() {
    let refs = points();
    let tight = model("1e-10, 1e-10, 1000000");
    let shipped = model(SHIPPED);
    let names = tight.transformed_parameter_names();
    assert_eq!(names.len(), 40);
    let (lp0, _, _) = at(&tight, &refs, "mean");
    let (lp0_shipped, _, _) = at(&shipped, &refs, "mean");
    let lj0 = refs[&("mean".to_string(), "log_joint".to_string())];
    for p in ["mean", "a", "b"] {
        let key = |q: &str| (p.to_string(), q.to_string());
        let (lp, grad, z) = at(&tight, &refs, p);
        let (lp_s, _, z_s) = at(&shipped, &refs, p);
        for (i, name) in names.iter().enumerate() {
            let want = refs[&key(name)];
            let rel = (z[i] - want).abs() / want.abs();
            assert!(rel < 1e-6, "{p} {name}: {} vs NumPyro's {want}", z[i]);
            let rel = (z_s[i] - want).abs() / want.abs();
            assert!(
                rel < 2e-4,
                "{p} {name} (shipped tolerances): {} vs {want}",
                z_s[i]
            );
        }
        // bayesc's `~` drops constants: compare log densities relative to the point "mean"
        let want = refs[&key("log_joint")] - lj0;
        assert!(
            ((lp - lp0) - want).abs() < 1e-6 * (1.0 + want.abs()),
            "{p}: log density difference {} vs NumPyro's {want}",
            lp - lp0
        );
        assert!(
            ((lp_s - lp0_shipped) - want).abs() < 2e-3,
            "{p} (shipped tolerances): {} vs NumPyro's {want}",
            lp_s - lp0_shipped
        );
        let fd = central_differences(&tight, &refs, p);
        for (j, n) in NAMES.iter().enumerate() {
            let want = refs[&key(&format!("grad[{n}]"))];
            eprintln!(
                "{p}: ∂lp/∂{n} = {:.10e}, central differences {:.10e}, NumPyro {want:.10e}",
                grad[j], fd[j]
            );
            assert!(
                (grad[j] - fd[j]).abs() < 1e-6 * fd[j].abs().max(1.0),
                "{p}: ∂lp/∂{n} = {} vs central differences {}",
                grad[j],
                fd[j]
            );
            assert!(
                (grad[j] - want).abs() < 1e-5 * want.abs().max(1.0),
                "{p}: ∂lp/∂{n} = {} vs NumPyro's {want}",
                grad[j]
            );
        }
    }
}

/// `lotka_volterra_numpyro.csv`: (name, mean, sd, MCSE of the mean) per row.
fn posterior() -> Vec<(String, f64, f64, f64)> {
    let text = read("tests/reference/lotka_volterra_numpyro.csv");
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("name,mean,sd,mcse,ess,rhat"));
    lines
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            // names such as z[1,2] contain a comma: the five numbers are the last fields
            let f: Vec<&str> = l.split(',').collect();
            let k = f.len() - 5;
            let num = |i: usize| f[k + i].parse::<f64>().expect("a number");
            (f[..k].join(","), num(0), num(1), num(2))
        })
        .collect()
}

/// The example as shipped (rtol 1e-5, atol 1e-3), NUTS with 4 chains × 5000 draws after 1000
/// warmup: every parameter's posterior mean, and that of z[n,k] for n = 1, 5, 10, 15, 20, within
/// 4 combined MCSE (bayesc's and NumPyro's) of NumPyro's 4 × 10 000 draws, and every sd within
/// 3 % of NumPyro's. Slow (about 3 CPU-minutes):
/// `cargo test --release --test ode_lotka_volterra -- --ignored`.
#[test]
#[ignore]
fn long_nuts_run_matches_numpyro() {
    use bayesc::fit::{FitOptions, Method};
    let m = model(SHIPPED);
    let mut options = FitOptions::new(Method::Nuts, 14);
    options.mcmc.chains = 4;
    options.mcmc.warmup = 1000;
    options.mcmc.samples = 5000;
    let r = common::fit_quietly(&m, &options);
    let reference = posterior();
    assert_eq!(reference.len(), 18);
    for (name, np_mean, np_sd, np_mcse) in reference {
        let j = r
            .draws
            .position(&name)
            .unwrap_or_else(|| panic!("no {name}"));
        let chains = r.draws.column(j);
        let refs: Vec<&[f64]> = chains.iter().map(|c| c.as_slice()).collect();
        let mcse = bayesc::diagnostics::mcse_mean(&refs).unwrap();
        let all: Vec<f64> = chains.concat();
        let n = all.len() as f64;
        let mean = all.iter().sum::<f64>() / n;
        let sd = (all.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
        let both = (mcse * mcse + np_mcse * np_mcse).sqrt();
        eprintln!(
            "{name}: mean {mean:.6} ± {mcse:.2e} (NumPyro {np_mean} ± {np_mcse:.2e}, z = {:.2}), \
             sd {sd:.6} (NumPyro {np_sd}, ratio {:.4})",
            (mean - np_mean) / both,
            sd / np_sd
        );
        assert!(
            (mean - np_mean).abs() < 4.0 * both,
            "{name}: mean {mean} vs NumPyro's {np_mean} (combined MCSE {both})"
        );
        assert!(
            (sd / np_sd - 1.0).abs() < 0.03,
            "{name}: sd {sd} vs NumPyro's {np_sd}"
        );
    }
}
