//! Black-box variational inference with Rao–Blackwellisation and control variates (Ranganath,
//! Gerrish & Blei 2014; the survey's Algorithm 6), as specified in `specs/survey_vi.md` §7.
//!
//! q = ∏ N(μ_j, σ_j²) with λ_j = (μ_j, ω_j = log σ_j); scores h_j = ((ζ_j−μ_j)/σ_j²,
//! (ζ_j−μ_j)²/σ_j² − 1). Per factor j the Rao–Blackwellised integrand is
//! f_j = h_j·(L(ζ) − log q_j(ζ_j)): the Markov blanket L_j would need per-factor log densities,
//! which a `LogDensity` does not expose, so L_j = L (§7 "Without them, use L_i = L"); the
//! log q_k of the other factors are dropped, which is unbiased since they are independent of ζ_j
//! and E[h_j] = 0. One control-variate scalar per factor,
//! â_j = Σ_k Ĉov(f_jk, h_jk)/Σ_k V̂ar(h_jk), is estimated from the **previous** iteration's draws
//! (bayesc's [X] choice of §7: unbiased); [`ControlVariate::SameDraw`] is the paper's biased
//! same-draw estimate, kept to reproduce the spec's measured shrinkage. The step is AdaGrad,
//! λ ← λ + η·ĝ/√(Σ_τ ĝ_τ²), with the μ-step in units of the initial σ₀ ([X]: AdaGrad on
//! μ/σ₀, the paper's step when σ₀ = 1, the spec's default; from a Laplace start on labour
//! the unscaled first steps of η = 0.2 moved μ by several posterior sds). Needs values of L
//! only.

use rand::RngExt;
use rand_distr::StandardNormal;

use super::reparam::{MAX_REDRAWS, check_initial_point, run_averaged};
use super::{Control, GaussianFit, HALF_LN_2PI, Progress, ViError, ViSettings};
use crate::inference::LogDensity;
use crate::inference::rng::StreamRng;

/// Where the control-variate coefficients come from (§7).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ControlVariate {
    /// No control variate: the plain Rao–Blackwellised estimator.
    None,
    /// â from the previous iteration's draws: unbiased (the default, [X]).
    Lagged,
    /// â from the same draws, one coefficient per component (μ_j and ω_j separately): the
    /// biased estimate whose shrinkage the §7 test measures, (0.161, −0.878; −0.633, 0.002)
    /// at S = 10 on T1. For comparison only.
    SameDraw,
}

/// Settings of BBVI; `Default` gives the §7 [X] defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct BbviSettings {
    /// Exit rule, T_max, seed.
    pub common: ViSettings,
    /// S, draws per iteration (default 100).
    pub mc_samples: usize,
    /// η, the AdaGrad step (default 0.2).
    pub eta: f64,
    /// The control variate (default lagged).
    pub control_variate: ControlVariate,
    /// Initial σ in every coordinate (default 1), unless `init_sd` is given.
    pub sigma_init: f64,
    /// Per-coordinate initial σ (length d), e.g. the Laplace standard deviations.
    pub init_sd: Option<Vec<f64>>,
}

impl Default for BbviSettings {
    fn default() -> Self {
        BbviSettings {
            common: ViSettings {
                min_iter: 2000,
                ..ViSettings::default()
            },
            mc_samples: 100,
            eta: 0.2,
            control_variate: ControlVariate::Lagged,
            sigma_init: 1.0,
            init_sd: None,
        }
    }
}

/// The state of a BBVI run: λ = (μ, ω), the AdaGrad accumulator and the lagged â.
#[derive(Clone, Debug)]
pub struct Bbvi {
    settings: BbviSettings,
    /// μ (length d).
    pub mean: Vec<f64>,
    /// ω = log σ (length d).
    pub log_sd: Vec<f64>,
    sum_sq: Vec<f64>,
    a: Vec<f64>,
    /// σ₀, the units of the μ-step.
    unit: Vec<f64>,
}

impl Bbvi {
    /// A run from mean `init`. Errors: settings out of range.
    pub fn new(init: &[f64], settings: &BbviSettings) -> Result<Self, ViError> {
        let d = init.len();
        let bad = |m: String| Err(ViError::InvalidSettings(m));
        if settings.mc_samples < 2 {
            return bad("mc_samples must be at least 2 (control variates need a variance)".into());
        }
        if !(settings.eta > 0.0 && settings.eta.is_finite()) {
            return bad(format!("eta is {}, but must be positive", settings.eta));
        }
        let sd = match &settings.init_sd {
            Some(s) if s.len() == d => s.clone(),
            Some(s) => return bad(format!("init_sd has length {}, expected {d}", s.len())),
            None => vec![settings.sigma_init; d],
        };
        if sd.iter().any(|s| !(*s > 0.0 && s.is_finite())) {
            return bad("initial standard deviations must be positive and finite".into());
        }
        Ok(Bbvi {
            settings: settings.clone(),
            mean: init.to_vec(),
            log_sd: sd.iter().map(|s| s.ln()).collect(),
            unit: sd.clone(),
            sum_sq: vec![0.0; 2 * d],
            a: vec![0.0; d],
        })
    }

    /// σ (length d).
    pub fn sd(&self) -> Vec<f64> {
        self.log_sd.iter().map(|w| w.exp()).collect()
    }

    /// The estimate ĝ of ∇_λ ELBO (length 2d: ∂μ then ∂ω) from S draws, with the configured
    /// control variate; updates the lagged â. Returns the ELBO estimate mean(L − log q).
    pub fn gradient(
        &mut self,
        density: &dyn LogDensity,
        rng: &mut StreamRng,
        iteration: usize,
        out: &mut [f64],
    ) -> Result<f64, ViError> {
        let d = self.mean.len();
        let n = self.settings.mc_samples;
        let sd = self.sd();
        let (eps, value) = draw_values(density, &self.mean, &sd, n, rng, iteration)?;
        let log_q_j = |s: usize, j: usize| {
            let e = eps[s * d + j];
            -HALF_LN_2PI - self.log_sd[j] - 0.5 * e * e
        };
        let lb = (0..n)
            .map(|s| value[s] - (0..d).map(|j| log_q_j(s, j)).sum::<f64>())
            .sum::<f64>()
            / n as f64;
        let nf = n as f64;
        let mut new_a = vec![0.0; d];
        for j in 0..d {
            // h_j = (ε/σ, ε² − 1); f_jk = h_jk·(L − log q_j).
            let h = |s: usize| {
                let e = eps[s * d + j];
                [e / sd[j], e * e - 1.0]
            };
            let mut mean_h = [0.0; 2];
            let mut mean_f = [0.0; 2];
            for s in 0..n {
                let hs = h(s);
                let r = value[s] - log_q_j(s, j);
                for k in 0..2 {
                    mean_h[k] += hs[k] / nf;
                    mean_f[k] += hs[k] * r / nf;
                }
            }
            let (mut cov, mut var) = ([0.0; 2], [0.0; 2]);
            for s in 0..n {
                let hs = h(s);
                let r = value[s] - log_q_j(s, j);
                for k in 0..2 {
                    cov[k] += (hs[k] * r - mean_f[k]) * (hs[k] - mean_h[k]);
                    var[k] += (hs[k] - mean_h[k]) * (hs[k] - mean_h[k]);
                }
            }
            let same_draw = [0, 1].map(|k| if var[k] > 0.0 { cov[k] / var[k] } else { 0.0 });
            let (cov, var) = (cov[0] + cov[1], var[0] + var[1]);
            new_a[j] = if var > 0.0 { cov / var } else { 0.0 };
            for k in 0..2 {
                let a = match self.settings.control_variate {
                    ControlVariate::None => 0.0,
                    ControlVariate::Lagged => self.a[j],
                    ControlVariate::SameDraw => same_draw[k],
                };
                out[k * d + j] = mean_f[k] - a * mean_h[k];
            }
        }
        self.a = new_a;
        Ok(lb)
    }

    /// One iteration: ĝ from S draws, then the AdaGrad ascent step. Returns the ELBO estimate
    /// at the q that drew them.
    pub fn step(
        &mut self,
        density: &dyn LogDensity,
        rng: &mut StreamRng,
        iteration: usize,
    ) -> Result<f64, ViError> {
        let d = self.mean.len();
        let mut g = vec![0.0; 2 * d];
        let lb = self.gradient(density, rng, iteration, &mut g)?;
        for k in 0..2 * d {
            self.sum_sq[k] += g[k] * g[k];
            // In the coordinates μ/σ₀ the gradient is σ₀·ĝ and AdaGrad's step is
            // η·σ₀ĝ/√Σ(σ₀ĝ)² = η·ĝ/√Σĝ², i.e. σ₀·(the unscaled step) in μ.
            let step = if self.sum_sq[k] > 0.0 {
                self.settings.eta * g[k] / self.sum_sq[k].sqrt()
            } else {
                0.0
            };
            if k < d {
                self.mean[k] += step * self.unit[k];
            } else {
                self.log_sd[k - d] += step;
            }
        }
        Ok(lb)
    }
}

/// `n` draws ζ_s = μ + σ⊙ε_s with finite L(ζ_s): their ε (n×d row-major) and L values, each
/// redrawn up to [`MAX_REDRAWS`] times (shared by BBVI and NG-BBVI, which use values only).
pub(crate) fn draw_values(
    density: &dyn LogDensity,
    mean: &[f64],
    sd: &[f64],
    n: usize,
    rng: &mut StreamRng,
    iteration: usize,
) -> Result<(Vec<f64>, Vec<f64>), ViError> {
    let d = mean.len();
    let mut eps = vec![0.0; n * d];
    let mut value = vec![0.0; n];
    let mut theta = vec![0.0; d];
    for s in 0..n {
        let mut last = String::new();
        let mut ok = false;
        for _ in 0..MAX_REDRAWS {
            let e = &mut eps[s * d..(s + 1) * d];
            for i in 0..d {
                e[i] = rng.sample(StandardNormal);
                theta[i] = mean[i] + sd[i] * e[i];
            }
            match density.log_density(&theta) {
                Ok(v) if v.is_finite() => {
                    value[s] = v;
                    ok = true;
                    break;
                }
                Ok(v) => last = format!("log density {v}"),
                Err(e) if e.recoverable => last = e.to_string(),
                Err(e) => return Err(ViError::Density(e)),
            }
        }
        if !ok {
            return Err(ViError::NonFiniteDensity {
                iteration,
                attempts: MAX_REDRAWS,
                last,
            });
        }
    }
    Ok((eps, value))
}

/// Fits q by BBVI with the common exit rule (`survey_vi.md` §1), returning the kept iterate.
/// Only values of L are used. Arguments and errors as [`super::ivon::fit_ivon`].
pub fn fit_bbvi(
    density: &dyn LogDensity,
    init: &[f64],
    settings: &BbviSettings,
    progress: &mut dyn FnMut(Progress) -> Control,
) -> Result<GaussianFit, ViError> {
    settings.common.validate(density.dim(), init)?;
    check_initial_point(density, init)?;
    let mut state = Bbvi::new(init, settings)?;
    run_averaged(
        &settings.common,
        &mut state,
        init.len(),
        |s, m, sd| {
            m.copy_from_slice(&s.mean);
            sd.iter_mut().zip(&s.log_sd).for_each(|(o, w)| *o = w.exp());
        },
        |s, rng, t| s.step(density, rng, t),
        progress,
    )
}
