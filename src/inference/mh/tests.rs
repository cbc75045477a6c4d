use super::*;
use crate::inference::rng::stream;

struct Normal1;
impl LogDensity for Normal1 {
    fn dim(&self) -> usize {
        1
    }
    fn log_density(&self, x: &[f64]) -> Result<f64, DensityError> {
        if x[0] > 3.0 {
            return Err(DensityError::recoverable("outside"));
        }
        Ok(-0.5 * x[0] * x[0])
    }
    fn log_density_grad(&self, x: &[f64], g: &mut [f64]) -> Result<f64, DensityError> {
        g[0] = -x[0];
        self.log_density(x)
    }
}

#[test]
fn acceptance_probability_and_rejection() {
    let mut mh = AdaptiveMh::new(vec![0.5], -0.125, MhOptions::default(), 0);
    let mut rng = stream(1, 1);
    for _ in 0..2000 {
        let before = (mh.q[0], mh.log_density);
        let s = mh.iterate(&Normal1, &mut rng, None).unwrap();
        let lp_prop = Normal1
            .log_density(&mh.proposal)
            .unwrap_or(f64::NEG_INFINITY);
        // log α = min(0, L(q′) − L(q)).
        let expect = (lp_prop - before.1).min(0.0).exp();
        assert!((s.accept_prob - expect).abs() < 1e-12);
        if mh.proposal[0] > 3.0 {
            assert!(!s.accepted && s.accept_prob == 0.0);
        }
        if !s.accepted {
            assert_eq!((mh.q[0], mh.log_density), before);
        }
        assert_eq!(s.log_density, mh.log_density);
    }
    assert_eq!(mh.scale(), 2.38, "no adaptation after warmup");
}

/// `specs/mh.md` §8.2: starting from exact N(0, 1) draws, one step of the frozen kernel
/// leaves N(0, 1) invariant (Kolmogorov–Smirnov, critical value 1.628/√n for p = 0.01).
#[test]
fn one_step_preserves_the_target() {
    struct Std;
    impl LogDensity for Std {
        fn dim(&self) -> usize {
            1
        }
        fn log_density(&self, x: &[f64]) -> Result<f64, DensityError> {
            Ok(-0.5 * x[0] * x[0])
        }
        fn log_density_grad(&self, x: &[f64], g: &mut [f64]) -> Result<f64, DensityError> {
            g[0] = -x[0];
            Ok(-0.5 * x[0] * x[0])
        }
    }
    let mut rng = stream(2, 1);
    let mut mh = AdaptiveMh::new(vec![0.0], 0.0, MhOptions::default(), 0);
    let n = 100_000;
    let mut after: Vec<f64> = (0..n)
        .map(|_| {
            let q0: f64 = rng.sample(StandardNormal);
            mh.q[0] = q0;
            mh.log_density = -0.5 * q0 * q0;
            mh.iterate(&Std, &mut rng, None).unwrap();
            mh.q[0]
        })
        .collect();
    after.sort_by(f64::total_cmp);
    let phi = |x: f64| 0.5 * libm::erfc(-x / std::f64::consts::SQRT_2);
    let d = after
        .iter()
        .enumerate()
        .map(|(i, &x)| {
            let f = phi(x);
            (f - i as f64 / n as f64)
                .abs()
                .max(((i + 1) as f64 / n as f64 - f).abs())
        })
        .fold(0.0, f64::max);
    assert!(
        d * (n as f64).sqrt() < 1.628,
        "KS statistic {}",
        d * (n as f64).sqrt()
    );
}

/// The kernel does not change after warmup: scale and shape are frozen.
#[test]
fn kernel_frozen_after_warmup() {
    let mut mh = AdaptiveMh::new(vec![0.1], -0.005, MhOptions::default(), 200);
    let mut rng = stream(4, 1);
    for c in 0..200 {
        mh.iterate(&Normal1, &mut rng, Some(c)).unwrap();
    }
    mh.finish_warmup();
    let (scale, shape) = (mh.scale(), mh.shape().to_vec());
    assert_ne!(scale, 2.38, "the scale adapted during warmup");
    for _ in 0..500 {
        mh.iterate(&Normal1, &mut rng, None).unwrap();
    }
    assert_eq!((mh.scale(), mh.shape().to_vec()), (scale, shape));
}

/// Doubling windows, the last stretched to the end of Phase II; a short Phase II is one
/// window (the spec's single estimate).
#[test]
fn shape_windows_double_and_cover_phase2() {
    // W = 2000: Phase II = 1800 − 100 = 1700; w = 106.
    assert_eq!(shape_window_ends(1700), vec![106, 318, 742, 1700]);
    assert_eq!(shape_window_ends(130), vec![130]);
    assert_eq!(shape_window_ends(0), vec![0]);
    let mh = AdaptiveMh::new(vec![0.0; 2], 0.0, MhOptions::default(), 2000);
    assert_eq!(mh.window_ends, vec![206, 418, 842, 1800]);
}

/// Started far from a narrow target, the adapted shape matches the target's variance, not
/// the transient's spread (the reason for the windows): N(50, 0.01²) in 1-D.
#[test]
fn shape_forgets_the_transient() {
    struct Far;
    impl LogDensity for Far {
        fn dim(&self) -> usize {
            1
        }
        fn log_density(&self, x: &[f64]) -> Result<f64, DensityError> {
            Ok(-0.5 * ((x[0] - 50.0) / 0.01).powi(2))
        }
        fn log_density_grad(&self, x: &[f64], g: &mut [f64]) -> Result<f64, DensityError> {
            g[0] = -(x[0] - 50.0) / 1e-4;
            self.log_density(x)
        }
    }
    // Without the curvature initialisation, which would start at the mode.
    let options = MhOptions {
        curvature_init: false,
        ..MhOptions::default()
    };
    let mut mh = AdaptiveMh::new(vec![0.0], Far.log_density(&[0.0]).unwrap(), options, 2000);
    let mut rng = stream(5, 1);
    for c in 0..2000 {
        mh.iterate(&Far, &mut rng, Some(c)).unwrap();
    }
    mh.finish_warmup();
    // Regularised estimate: (n/(n+5))·1e-4 + 1e-3·(5/(n+5))·C_ref with n = 958 draws.
    let c = mh.shape()[0];
    assert!((0.5e-4..2.5e-4).contains(&c), "shape {c}");
    assert!((mh.position()[0] - 50.0).abs() < 0.05);
}

/// A 2-D Gaussian shaped like the posterior of `kilpisjarvi_mod-kilpisjarvi` (intercept
/// and slope of a regression on the years 3952…4013, σ = 1.13, flat prior): precision
/// P = XᵀX/σ², correlation ≈ −0.99999, sds ≈ 33 and 0.0083. Value-only: the gradient
/// panics, since Metropolis–Hastings must not need it (`specs/mh.md` §1).
struct Ridge {
    mean: [f64; 2],
    precision: [f64; 4],
}

impl Ridge {
    fn new() -> Self {
        let xs: Vec<f64> = (3952..4014).map(f64::from).collect();
        let s2 = 1.13f64 * 1.13;
        let n = xs.len() as f64;
        let sx: f64 = xs.iter().sum();
        let sxx: f64 = xs.iter().map(|x| x * x).sum();
        Ridge {
            mean: [-60.7, 0.0176],
            precision: [n / s2, sx / s2, sx / s2, sxx / s2],
        }
    }
    /// Σ = P⁻¹ (2 × 2 closed form).
    fn covariance(&self) -> [f64; 4] {
        let [a, b, _, c] = self.precision;
        let det = a * c - b * b;
        [c / det, -b / det, -b / det, a / det]
    }
}

impl LogDensity for Ridge {
    fn dim(&self) -> usize {
        2
    }
    fn log_density(&self, x: &[f64]) -> Result<f64, DensityError> {
        let r = [x[0] - self.mean[0], x[1] - self.mean[1]];
        let p = &self.precision;
        Ok(-0.5 * (p[0] * r[0] * r[0] + 2.0 * p[1] * r[0] * r[1] + p[3] * r[1] * r[1]))
    }
    fn log_density_grad(&self, _: &[f64], _: &mut [f64]) -> Result<f64, DensityError> {
        panic!("Metropolis-Hastings must use log-density values only");
    }
}

fn correlation(c: &[f64]) -> f64 {
    c[1] / (c[0] * c[3]).sqrt()
}

/// On a quadratic L the value-only Newton search lands on the mode and (−H)⁻¹ is Σ, up to
/// rounding, even 60 sds away along a ridge of correlation −0.99999.
#[test]
fn curvature_start_recovers_mode_and_covariance_of_a_ridge() {
    let target = Ridge::new();
    let sigma = target.covariance();
    assert!(correlation(&sigma) < -0.99998);
    let cs = curvature_start(&target, &[1.5, -1.0], 100)
        .unwrap()
        .expect("a quadratic has a mode");
    // Whitened distance from the true mode: (m̂ − m)ᵀP(m̂ − m) ≈ 0.
    let r = [cs.mode[0] - target.mean[0], cs.mode[1] - target.mean[1]];
    let p = &target.precision;
    let dist2 = p[0] * r[0] * r[0] + 2.0 * p[1] * r[0] * r[1] + p[3] * r[1] * r[1];
    assert!(dist2 < 1e-6, "whitened squared distance {dist2}");
    for (k, (c, s)) in cs.covariance.iter().zip(&sigma).enumerate() {
        let rel = (c - s).abs() / s.abs();
        assert!(rel < 1e-3, "entry {k}: {c} vs {s}");
    }
    // 1 − |ρ| ≈ 1.6e-5 is resolved to a few per cent.
    let gap = 1.0 + correlation(&cs.covariance);
    let gap_true = 1.0 + correlation(&sigma);
    assert!((gap / gap_true - 1.0).abs() < 0.05, "{gap} vs {gap_true}");
    assert!(cs.iterations <= 3 && cs.evaluations < 100, "{cs:?}");
}

/// No mode (L linear in x₀): the search reports failure and the chain keeps the spec's
/// start and identity shape.
#[test]
fn curvature_start_fails_without_a_mode() {
    struct Slope;
    impl LogDensity for Slope {
        fn dim(&self) -> usize {
            2
        }
        fn log_density(&self, x: &[f64]) -> Result<f64, DensityError> {
            Ok(x[0] - 0.5 * x[1] * x[1])
        }
        fn log_density_grad(&self, _: &[f64], _: &mut [f64]) -> Result<f64, DensityError> {
            unreachable!("value-only")
        }
    }
    assert_eq!(curvature_start(&Slope, &[0.3, 0.2], 50).unwrap(), None);
    let mut mh = AdaptiveMh::new(vec![0.3, 0.2], 0.28, MhOptions::default(), 500);
    let mut rng = stream(6, 1);
    mh.iterate(&Slope, &mut rng, Some(0)).unwrap();
    assert_eq!(mh.curvature_init(), None);
    assert_eq!(mh.shape(), &[1.0, 0.0, 0.0, 1.0]);
}

/// On the ridge, the default warmup of 2000 iterations learns C ≈ Σ (sds within 25 %,
/// 1 − |ρ| within a factor 2); without the curvature initialisation the shape collapses
/// across the ridge (the failure of `kilpisjarvi_mod-kilpisjarvi`): the intercept's sd is
/// under a tenth of the truth. No gradient is ever evaluated.
#[test]
fn warmup_learns_the_ridge() {
    let target = Ridge::new();
    let sigma = target.covariance();
    let run = |curvature_init: bool| {
        let options = MhOptions {
            curvature_init,
            ..MhOptions::default()
        };
        let init = vec![0.5, -0.5];
        let lp = target.log_density(&init).unwrap();
        let mut mh = AdaptiveMh::new(init, lp, options, 2000);
        let mut rng = stream(7, 1);
        for c in 0..2000 {
            mh.iterate(&target, &mut rng, Some(c)).unwrap();
        }
        mh.finish_warmup();
        mh
    };
    let mh = run(true);
    assert!(mh.curvature_init().is_some());
    let c = mh.shape();
    for k in [0, 3] {
        let ratio = (c[k] / sigma[k]).sqrt();
        assert!(
            (0.75..1.25).contains(&ratio),
            "sd ratio {ratio} of entry {k}"
        );
    }
    let gap = (1.0 + correlation(c)) / (1.0 + correlation(&sigma));
    assert!((0.5..2.0).contains(&gap), "1 − |ρ| ratio {gap}");
    let spec = run(false);
    assert!((spec.shape()[0] / sigma[0]).sqrt() < 0.1);
}

/// The flag band is [0.1, 0.7] for every default target; a healthy 0.38 at d = 10 (flagged
/// by the spec's [0.5·α*, 1.6·α*] = [0.117, 0.374]) is inside it.
#[test]
fn acceptance_flag_band() {
    for d in [1, 2, 3, 4, 5, 10, 50] {
        let (lo, hi) = accept_flag_band(target_accept(d));
        assert_eq!(lo, 0.1);
        assert!((0.7..=0.71).contains(&hi), "d = {d}: {hi}");
    }
    let (lo, hi) = accept_flag_band(target_accept(10));
    assert!(lo < 0.38 && 0.38 < hi);
    assert_eq!(accept_flag_band(0.05), (0.025, 0.7));
    assert_eq!(accept_flag_band(0.5), (0.1, 0.8));
}

#[test]
fn phase_lengths_and_targets() {
    let mh = AdaptiveMh::new(vec![0.0; 5], 0.0, MhOptions::default(), 2000);
    assert_eq!((mh.phase1_end, mh.phase3_start), (100, 1800));
    let mh = AdaptiveMh::new(vec![0.0; 2], 0.0, MhOptions::default(), 500);
    assert_eq!((mh.phase1_end, mh.phase3_start), (50, 450));
    assert_eq!(mh.target(), 0.35);
    assert_eq!(target_accept(12), 0.234);
    assert_eq!((default_warmup(10), default_samples(3)), (5000, 2000));
}
