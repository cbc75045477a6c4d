//! Reproducibility for a seed at any thread count, errors, interruption, thinning.

use super::support::*;
use bayesc::inference::mcmc::{McmcError, McmcSettings, Method, sample};
use bayesc::inference::{DensityError, LogDensity};
use std::sync::atomic::{AtomicBool, Ordering};

// ---------------------------------------------------------------------------------------------
// Reproducibility, errors, interruption

#[test]
fn same_seed_same_draws_for_any_thread_count() {
    let target = spec_gaussian_5d();
    for method in [Method::Nuts, Method::Mh] {
        let settings = McmcSettings {
            method,
            warmup: 200,
            samples: 100,
            seed: 42,
            ..McmcSettings::default()
        };
        let run = |threads: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| {
                    sample(
                        &target,
                        &settings,
                        &[],
                        &no_progress(),
                        &AtomicBool::new(false),
                    )
                    .unwrap()
                })
        };
        let (a, b, c) = (run(1), run(2), run(2));
        for k in 0..4 {
            assert_eq!(a.chains[k].draws, b.chains[k].draws);
            assert_eq!(a.chains[k].stats, b.chains[k].stats);
            assert_eq!(b.chains[k].draws, c.chains[k].draws);
        }
        assert_ne!(a.chains[0].draws, a.chains[1].draws);
        let other = sample(
            &target,
            &McmcSettings {
                seed: 43,
                ..settings.clone()
            },
            &[],
            &no_progress(),
            &AtomicBool::new(false),
        )
        .unwrap();
        assert_ne!(other.chains[0].draws, a.chains[0].draws);
    }
}

/// Zero density everywhere, or a located domain error everywhere.
struct Nowhere {
    error: Option<DensityError>,
}

impl LogDensity for Nowhere {
    fn dim(&self) -> usize {
        2
    }
    fn log_density(&self, _x: &[f64]) -> Result<f64, DensityError> {
        match &self.error {
            Some(e) => Err(e.clone()),
            None => Ok(f64::NEG_INFINITY),
        }
    }
    fn log_density_grad(&self, x: &[f64], g: &mut [f64]) -> Result<f64, DensityError> {
        g.fill(0.0);
        self.log_density(x)
    }
}

#[test]
fn initialisation_failure_is_an_error() {
    let stop = AtomicBool::new(false);
    for method in [Method::Nuts, Method::Mh] {
        let settings = McmcSettings {
            method,
            ..McmcSettings::default()
        };
        match sample(
            &Nowhere { error: None },
            &settings,
            &[],
            &no_progress(),
            &stop,
        ) {
            Err(McmcError::Initialization {
                chain,
                attempts,
                message,
            }) => {
                assert_eq!((chain, attempts), (1, 100));
                assert!(message.contains("-inf"), "{message}");
            }
            other => panic!("expected an initialisation error, got {other:?}"),
        }
    }
    let located = DensityError {
        message: "normal: sigma is -1, must be positive".into(),
        location: Some("model.bayes:4:3".into()),
        recoverable: true,
    };
    let err = sample(
        &Nowhere {
            error: Some(located),
        },
        &McmcSettings::default(),
        &[],
        &no_progress(),
        &stop,
    )
    .unwrap_err();
    assert!(err.to_string().contains("model.bayes:4:3"), "{err}");
    // User inits: a single attempt.
    let err = sample(
        &Nowhere { error: None },
        &McmcSettings {
            chains: 2,
            ..McmcSettings::default()
        },
        &[vec![0.0, 0.0], vec![1.0, 1.0]],
        &no_progress(),
        &stop,
    )
    .unwrap_err();
    assert!(matches!(err, McmcError::Initialization { attempts: 1, .. }));
    // Unrecoverable errors abort at once.
    let err = sample(
        &Nowhere {
            error: Some(DensityError::fatal("index 3 out of range")),
        },
        &McmcSettings::default(),
        &[],
        &no_progress(),
        &stop,
    )
    .unwrap_err();
    assert!(matches!(err, McmcError::Density { chain: 1, .. }));
    // Bad settings.
    let err = sample(
        &IidNormal(2),
        &McmcSettings {
            adapt_delta: 1.5,
            ..McmcSettings::default()
        },
        &[],
        &no_progress(),
        &stop,
    )
    .unwrap_err();
    assert!(matches!(err, McmcError::InvalidSettings(_)));
}

#[test]
fn stop_flag_returns_draws_so_far() {
    let stop = AtomicBool::new(false);
    let settings = McmcSettings {
        chains: 1,
        warmup: 100,
        samples: 900,
        ..McmcSettings::default()
    };
    let out = sample(
        &IidNormal(3),
        &settings,
        &[],
        &|p: bayesc::inference::mcmc::ChainProgress| {
            if !p.warmup && p.iteration >= 300 {
                stop.store(true, Ordering::Relaxed);
            }
        },
        &stop,
    )
    .unwrap();
    assert!(out.interrupted);
    let n = out.chains[0].stats.len();
    assert_eq!(
        n, 200,
        "stopped right after the progress report at iteration 300"
    );
    assert_eq!(out.chains[0].draws.len(), n * 3);
}

#[test]
fn thinning_and_saved_warmup() {
    let settings = McmcSettings {
        chains: 2,
        warmup: 50,
        samples: 101,
        thin: 10,
        save_warmup: true,
        ..McmcSettings::default()
    };
    let out = sample(
        &IidNormal(2),
        &settings,
        &[vec![0.1, 0.2], vec![0.3, 0.4]],
        &no_progress(),
        &AtomicBool::new(false),
    )
    .unwrap();
    for c in &out.chains {
        assert_eq!(c.stats.len(), 11);
        assert_eq!(c.draws.len(), 22);
        assert_eq!(c.warmup_stats.len(), 5);
        assert_eq!(c.warmup_draws.len(), 10);
        assert_eq!(c.stats.columns().len(), 7);
        let d = &c.stats;
        for i in 0..d.len() {
            let t = d.treedepth[i];
            assert!((1 << t) - 1 <= d.n_leapfrog[i] && d.n_leapfrog[i] < (1 << (t + 1)));
        }
    }
}
