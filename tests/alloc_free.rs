//! `log_density_grad` allocates nothing in steady state (issue 12, "allocation-free
//! evaluation"): after a first evaluation has sized the per-thread tape and the scalar kernel's
//! buffers, further evaluations at other points reuse them. Counted with a per-thread counting
//! allocator, so this file is its own test binary (a `#[global_allocator]` is per binary) and
//! other tests' threads do not disturb the count.
//!
//! Models: labour (logistic regression, the fused GLM pass, d = 8), GARCH(1,1) (a scalar loop
//! run as a compiled kernel, d = 4) and the Boston BNN (a dense 13 × 50 × 1 network, d = 752).

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use bayesc::inference::LogDensity;

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
    /// While set (and `ALLOC_TRACE` is in the environment), each counted allocation prints
    /// its backtrace: a debugging aid for finding the allocation a failure reports.
    static TRACING: Cell<bool> = const { Cell::new(false) };
    static IN_TRACE: Cell<bool> = const { Cell::new(false) };
}

fn trace() {
    if TRACING.with(|t| t.get()) && !IN_TRACE.with(|t| t.replace(true)) {
        eprintln!(
            "allocation at:\n{}",
            std::backtrace::Backtrace::force_capture()
        );
        IN_TRACE.with(|t| t.set(false));
    }
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        trace();
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        trace();
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> usize {
    ALLOCATIONS.with(|c| c.get())
}

/// Allocations made by `evals` gradient evaluations at points spread around `base` (after a
/// warm-up pass over the same points), and the gradient norm of the last (to show the
/// evaluations did real work).
fn count(model: &dyn LogDensity, base: &[f64], evals: usize) -> (usize, f64) {
    let d = model.dim();
    let points: Vec<Vec<f64>> = (0..evals)
        .map(|e| {
            base.iter()
                .enumerate()
                .map(|(i, b)| b + 0.01 * (((i * 7 + e * 3) % 11) as f64 - 5.0))
                .collect()
        })
        .collect();
    let mut grad = vec![0.0; d];
    // Warm-up: one pass over the points lets the reused buffers reach their largest sizes.
    for p in &points {
        model
            .log_density_grad(p, &mut grad)
            .expect("finite at the warm-up points");
    }
    let before = allocations();
    let tracing = std::env::var_os("ALLOC_TRACE").is_some();
    for (e, p) in points.iter().enumerate() {
        TRACING.with(|t| t.set(tracing && e == 1));
        let r = model.log_density_grad(p, &mut grad);
        TRACING.with(|t| t.set(false));
        r.expect("finite");
    }
    let n = allocations() - before;
    (n, grad.iter().map(|g| g * g).sum::<f64>().sqrt())
}

#[test]
fn labour_gradient_allocates_nothing() {
    let m = common::compile(
        "examples/labour/model.bayes",
        &["examples/labour/labour.csv"],
    );
    let base: Vec<f64> = (0..m.dim()).map(|i| 0.1 - 0.02 * i as f64).collect();
    let (n, g) = count(&m, &base, 50);
    assert!(g > 1.0, "gradient norm {g}");
    assert_eq!(n, 0, "allocations in 50 labour gradients");
}

#[test]
fn garch_gradient_allocates_nothing() {
    let m = common::compile(
        "examples/garch/model.bayes",
        &["examples/garch/returns.csv"],
    );
    // mu, log omega, logit alpha1, logit(beta1 / (1 - alpha1))
    let base = [0.05, (0.02f64).ln(), -2.197, 2.83];
    let (n, g) = count(&m, &base, 50);
    assert!(g > 1.0, "gradient norm {g}");
    assert_eq!(n, 0, "allocations in 50 GARCH gradients");
}

#[test]
fn bnn_gradient_allocates_nothing() {
    let m = common::compile(
        "examples/bnn_regression/model.bayes",
        &["examples/bnn_regression/boston.csv"],
    );
    let base: Vec<f64> = (0..m.dim())
        .map(|i| 0.05 * ((i % 13) as f64 - 6.0))
        .collect();
    let (n, g) = count(&m, &base, 20);
    assert!(g > 1.0, "gradient norm {g}");
    assert_eq!(n, 0, "allocations in 20 BNN gradients");
}

/// N(1, diag(1/(i + 1))) in d = 20 coordinates, allocation-free.
struct Gaussian;

impl LogDensity for Gaussian {
    fn dim(&self) -> usize {
        20
    }
    fn log_density(&self, z: &[f64]) -> Result<f64, bayesc::inference::DensityError> {
        Ok(z.iter()
            .enumerate()
            .map(|(i, x)| -0.5 * (i + 1) as f64 * (x - 1.0).powi(2))
            .sum())
    }
    fn log_density_grad(
        &self,
        z: &[f64],
        grad: &mut [f64],
    ) -> Result<f64, bayesc::inference::DensityError> {
        for (i, (g, x)) in grad.iter_mut().zip(z).enumerate() {
            *g = -((i + 1) as f64) * (x - 1.0);
        }
        self.log_density(z)
    }
}

/// The full-batch loop of the single-draw methods (`reparam::run_probed`) adds each iterate
/// (μ, σ) to the running sums of its window average in place and forms the average only where
/// the exit rule or the drift check reads it, and BBB evaluates σ = softplus(ρ) once per step:
/// BBB allocates well under one block per iteration in steady state (the kept average when the
/// smoothed ELBO improves, a drift snapshot every 25 iterations, the traces' growth). Before,
/// (μ, σ) were copied into a queue and the average rebuilt at every iteration: 7.2 allocations
/// per iteration.
#[test]
fn full_batch_bbb_loop_allocates_next_to_nothing_per_iteration() {
    use bayesc::inference::vi::bbb::{BbbSettings, fit_bbb};
    use bayesc::inference::vi::{Control, ViSettings};
    let run = |iterations: usize| {
        let settings = BbbSettings {
            common: ViSettings {
                max_iter: iterations,
                min_iter: iterations,
                seed: 3,
                ..ViSettings::default()
            },
            init_sd: Some(vec![0.3; 20]),
            ..BbbSettings::default()
        };
        let before = allocations();
        let fit = fit_bbb(&Gaussian, &[0.0; 20], &settings, &mut |_| Control::Continue)
            .expect("BBB runs");
        let n = allocations() - before;
        assert_eq!(fit.iterations, iterations);
        // the fit did real work: the mean moved from 0 to about 1
        assert!((fit.mean[0] - 1.0).abs() < 0.3, "mean {:?}", fit.mean);
        n
    };
    let (short, long) = (run(1000), run(3000));
    let per_iteration = long.saturating_sub(short) as f64 / 2000.0;
    assert!(
        per_iteration < 0.5,
        "{per_iteration} allocations per iteration ({short} in 1000 iterations, {long} in 3000)"
    );
}
