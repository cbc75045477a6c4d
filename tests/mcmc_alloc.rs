//! The NUTS, static HMC and Metropolis transitions allocate nothing per step (the gradient
//! evaluation should dominate the cost): counted with a per-thread counting allocator.

use bayesc::inference::hmc::{Metric, Nuts, PhasePoint, StaticHmc};
use bayesc::inference::mh::{AdaptiveMh, MhOptions};
use bayesc::inference::rng::stream;
use bayesc::inference::{DensityError, LogDensity};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> usize {
    ALLOCATIONS.with(|c| c.get())
}

/// iid normal with standard deviations 1, 2, …, d (allocation-free).
struct Scaled(usize);

impl LogDensity for Scaled {
    fn dim(&self) -> usize {
        self.0
    }
    fn log_density(&self, x: &[f64]) -> Result<f64, DensityError> {
        Ok(x.iter()
            .enumerate()
            .map(|(i, v)| -0.5 * (v / (i + 1) as f64).powi(2))
            .sum())
    }
    fn log_density_grad(&self, x: &[f64], g: &mut [f64]) -> Result<f64, DensityError> {
        for (i, (gi, xi)) in g.iter_mut().zip(x).enumerate() {
            *gi = -xi / ((i + 1) * (i + 1)) as f64;
        }
        self.log_density(x)
    }
}

#[test]
fn transitions_do_not_allocate() {
    let target = Scaled(20);
    let mut rng = stream(1, 1);
    for metric in [Metric::unit_diag(20), Metric::unit_dense(20)] {
        let mut nuts = Nuts::new(20, 10);
        let mut hmc = StaticHmc::new(20);
        let mut z = PhasePoint::new(20);
        z.q.fill(0.5);
        z.evaluate(&target).unwrap();
        let before = allocations();
        let mut leapfrogs = 0;
        for _ in 0..200 {
            leapfrogs += nuts
                .transition(&target, &metric, 0.3, &mut rng, &mut z)
                .unwrap()
                .n_leapfrog;
            leapfrogs += hmc
                .transition(&target, &metric, 0.3, 10, &mut rng, &mut z)
                .unwrap()
                .n_leapfrog;
        }
        assert!(leapfrogs > 2000);
        assert_eq!(
            allocations() - before,
            0,
            "allocations during {leapfrogs} leapfrog steps"
        );
    }
    let mut mh = AdaptiveMh::new(
        vec![0.5; 20],
        target.log_density(&[0.5; 20]).unwrap(),
        MhOptions::default(),
        0,
    );
    let before = allocations();
    for _ in 0..1000 {
        mh.iterate(&target, &mut rng, None).unwrap();
    }
    assert_eq!(allocations() - before, 0);
}
