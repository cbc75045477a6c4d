//! A batch of N_s draws from a Gaussian family with L − log q at each, for the score-function
//! methods (QBVI, `specs/qbvi.md` §5–§6; MGVB and EMGVB, `specs/survey_vi.md` §14–§15).
//! The ε are drawn sequentially from one stream and only the log densities run in parallel,
//! so a batch is bit-identical for any number of threads. Batches with a non-finite value are
//! redrawn up to [`MAX_REDRAWS`] times (`qbvi.md` §6).

use rand::RngExt;
use rand_distr::StandardNormal;
use rayon::prelude::*;

use super::{Family, ViError};
use crate::inference::density::{DensityError, LogDensity};
use crate::inference::rng::StreamRng;

/// Consecutive batches with a non-finite log density tolerated before giving up (§6).
pub(crate) const MAX_REDRAWS: usize = 10;

/// Buffers for one batch of N_s draws, reused across iterations.
#[derive(Clone, Debug)]
pub(crate) struct Batch {
    /// Draw ε in antithetic pairs (ε_s, −ε_s), s and s + N/2.
    pub(crate) antithetic: bool,
    pub(crate) eps: Vec<f64>,
    pub(crate) zeta: Vec<f64>,
    pub(crate) log_q: Vec<f64>,
    pub(crate) u: Vec<f64>,
    pub(crate) log_density: Vec<Result<f64, DensityError>>,
    /// The density's value at ζ_s: L(ζ_s) (residual form) or ℓ(ζ_s) (conjugate form).
    pub(crate) value: Vec<f64>,
    /// f_s = value_s − log q(ζ_s).
    pub(crate) f: Vec<f64>,
    /// ∇L(ζ_s) (N×d row-major) when [`Batch::with_gradients`] was called; empty otherwise.
    pub(crate) grad: Vec<f64>,
}

impl Batch {
    pub(crate) fn new(n: usize, d: usize, k: usize) -> Self {
        Batch {
            antithetic: false,
            eps: vec![0.0; n * d],
            zeta: vec![0.0; n * d],
            log_q: vec![0.0; n],
            u: vec![0.0; n * k],
            log_density: vec![Ok(0.0); n],
            value: vec![0.0; n],
            f: vec![0.0; n],
            grad: Vec::new(),
        }
    }

    /// Makes [`Batch::draw`] evaluate ∇L at every draw too (into `grad`), for the gradient
    /// (Stein/Price) estimators of the natural gradient (`specs/qbvi.md` §3.2).
    pub(crate) fn with_gradients(mut self) -> Self {
        self.grad = vec![0.0; self.zeta.len()];
        self
    }

    /// Draws a batch from q with finite f, redrawing up to [`MAX_REDRAWS`] times (§6).
    pub(crate) fn draw<F: Family>(
        &mut self,
        q: &F,
        density: &dyn LogDensity,
        rng: &mut StreamRng,
        iteration: usize,
    ) -> Result<(), ViError> {
        let d = q.dim();
        let mut last = String::new();
        for _ in 0..MAX_REDRAWS {
            // Sequential draws from one stream: reproducible for any thread count.
            if self.antithetic {
                let half = self.eps.len() / 2;
                let (first, second) = self.eps.split_at_mut(half);
                for (e, m) in first.iter_mut().zip(second.iter_mut()) {
                    *e = rng.sample(StandardNormal);
                    *m = -*e;
                }
            } else {
                for e in self.eps.iter_mut() {
                    *e = rng.sample(StandardNormal);
                }
            }
            q.prepare(&self.eps, &mut self.zeta, &mut self.log_q, &mut self.u);
            if self.grad.is_empty() {
                self.zeta
                    .par_chunks(d)
                    .zip(self.log_density.par_iter_mut())
                    .for_each(|(z, out)| *out = density.log_density(z));
            } else {
                self.zeta
                    .par_chunks(d)
                    .zip(self.grad.par_chunks_mut(d))
                    .zip(self.log_density.par_iter_mut())
                    .for_each(|((z, g), out)| {
                        *out = density.log_density_grad(z, g).and_then(|v| {
                            if g.iter().all(|x| x.is_finite()) {
                                Ok(v)
                            } else {
                                Err(DensityError::recoverable(format!(
                                    "the gradient of the log density {v} is not finite"
                                )))
                            }
                        })
                    });
            }
            let mut ok = true;
            for (s, r) in self.log_density.iter().enumerate() {
                match r {
                    Ok(v) => {
                        let f = v - self.log_q[s];
                        if !f.is_finite() {
                            ok = false;
                            last = format!("log density {v} at draw {s}");
                        }
                        self.value[s] = *v;
                        self.f[s] = f;
                    }
                    Err(e) if e.recoverable => {
                        ok = false;
                        last = e.to_string();
                    }
                    Err(e) => return Err(ViError::Density(e.clone())),
                }
            }
            if ok {
                return Ok(());
            }
        }
        Err(ViError::NonFiniteDensity {
            iteration,
            attempts: MAX_REDRAWS,
            last,
        })
    }
}
