//! Closed-form targets and the summaries the sampler tests check them with.

use bayesc::inference::mcmc::McmcOutput;
use bayesc::inference::{DensityError, LogDensity};

// ---------------------------------------------------------------------------------------------
// Targets

/// Gaussian N(μ, Σ) with Σ = D R D, R equicorrelated with correlation ρ, D = diag(scales).
/// R⁻¹ = (I − ρ/(1 − ρ + dρ)·11ᵀ)/(1 − ρ) (Sherman–Morrison), so Σ⁻¹ = D⁻¹R⁻¹D⁻¹.
pub(crate) struct Gaussian {
    pub(crate) mean: Vec<f64>,
    pub(crate) scales: Vec<f64>,
    pub(crate) rho: f64,
    pub(crate) precision: Vec<f64>,
}

impl Gaussian {
    pub(crate) fn new(mean: Vec<f64>, scales: Vec<f64>, rho: f64) -> Self {
        let d = scales.len();
        let c = rho / (1.0 - rho + d as f64 * rho);
        let mut precision = vec![0.0; d * d];
        for i in 0..d {
            for j in 0..d {
                let r_inv = ((i == j) as u8 as f64 - c) / (1.0 - rho);
                precision[i * d + j] = r_inv / (scales[i] * scales[j]);
            }
        }
        Gaussian {
            mean,
            scales,
            rho,
            precision,
        }
    }

    pub(crate) fn cov(&self, i: usize, j: usize) -> f64 {
        let r = if i == j { 1.0 } else { self.rho };
        r * self.scales[i] * self.scales[j]
    }
}

impl LogDensity for Gaussian {
    fn dim(&self) -> usize {
        self.scales.len()
    }
    fn log_density(&self, x: &[f64]) -> Result<f64, DensityError> {
        let mut g = vec![0.0; x.len()];
        self.log_density_grad(x, &mut g)
    }
    fn log_density_grad(&self, x: &[f64], g: &mut [f64]) -> Result<f64, DensityError> {
        let d = x.len();
        let mut lp = 0.0;
        for i in 0..d {
            let mut s = 0.0;
            for j in 0..d {
                s += self.precision[i * d + j] * (x[j] - self.mean[j]);
            }
            g[i] = -s;
            lp -= 0.5 * (x[i] - self.mean[i]) * s;
        }
        Ok(lp)
    }
}

/// iid standard normal in d dimensions (no allocation, O(d)).
pub(crate) struct IidNormal(pub(crate) usize);

impl LogDensity for IidNormal {
    fn dim(&self) -> usize {
        self.0
    }
    fn log_density(&self, x: &[f64]) -> Result<f64, DensityError> {
        Ok(-0.5 * x.iter().map(|v| v * v).sum::<f64>())
    }
    fn log_density_grad(&self, x: &[f64], g: &mut [f64]) -> Result<f64, DensityError> {
        for (gi, xi) in g.iter_mut().zip(x) {
            *gi = -xi;
        }
        self.log_density(x)
    }
}

/// Neal's funnel, d = 10: v ~ N(0, 3²), x_i | v ~ N(0, e^v), i = 1..9 (centred), or the
/// non-centred version with standard normal coordinates (v = 3ṽ, x_i = e^{v/2} x̃_i).
pub(crate) struct Funnel {
    pub(crate) centred: bool,
}

impl LogDensity for Funnel {
    fn dim(&self) -> usize {
        10
    }
    fn log_density(&self, x: &[f64]) -> Result<f64, DensityError> {
        let mut g = vec![0.0; 10];
        self.log_density_grad(x, &mut g)
    }
    fn log_density_grad(&self, x: &[f64], g: &mut [f64]) -> Result<f64, DensityError> {
        if !self.centred {
            return IidNormal(10).log_density_grad(x, g);
        }
        let v = x[0];
        // log p = −v²/18 + Σ (−v/2 − x_i² e^{−v}/2)
        let ev = (-v).exp();
        let mut lp = -v * v / 18.0;
        g[0] = -v / 9.0;
        for i in 1..10 {
            lp += -0.5 * v - 0.5 * x[i] * x[i] * ev;
            g[0] += -0.5 + 0.5 * x[i] * x[i] * ev;
            g[i] = -x[i] * ev;
        }
        Ok(lp)
    }
}

// ---------------------------------------------------------------------------------------------
// Summaries (ESS as in `specs/diagnostics.md`: multi-chain autocorrelation, Geyer's initial
// positive sequence; not rank-normalised)

pub(crate) fn column(out: &McmcOutput, j: usize) -> Vec<Vec<f64>> {
    out.chains
        .iter()
        .map(|c| c.draws.iter().skip(j).step_by(out.dim).copied().collect())
        .collect()
}

pub(crate) fn mean_var(chains: &[Vec<f64>]) -> (f64, f64) {
    let all: Vec<f64> = chains.iter().flatten().copied().collect();
    let n = all.len() as f64;
    let m = all.iter().sum::<f64>() / n;
    (
        m,
        all.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (n - 1.0),
    )
}

/// Effective sample size of one scalar over chains of equal length n.
pub(crate) fn ess(chains: &[Vec<f64>]) -> f64 {
    let m = chains.len();
    let n = chains[0].len();
    let means: Vec<f64> = chains
        .iter()
        .map(|c| c.iter().sum::<f64>() / n as f64)
        .collect();
    let vars: Vec<f64> = chains
        .iter()
        .zip(&means)
        .map(|(c, mu)| c.iter().map(|v| (v - mu).powi(2)).sum::<f64>() / (n as f64 - 1.0))
        .collect();
    let w = vars.iter().sum::<f64>() / m as f64;
    let grand = means.iter().sum::<f64>() / m as f64;
    let b = n as f64 * means.iter().map(|mu| (mu - grand).powi(2)).sum::<f64>() / (m as f64 - 1.0);
    let var_plus = (n as f64 - 1.0) / n as f64 * w + b / n as f64;
    let autocov = |t: usize| -> f64 {
        chains
            .iter()
            .zip(&means)
            .map(|(c, mu)| {
                (0..n - t)
                    .map(|i| (c[i] - mu) * (c[i + t] - mu))
                    .sum::<f64>()
                    / n as f64
            })
            .sum::<f64>()
            / m as f64
    };
    let rho = |t: usize| 1.0 - (w - autocov(t)) / var_plus;
    // Geyer: sum pairs Γ_k = ρ_{2k} + ρ_{2k+1} while positive, monotone.
    let mut sum = 0.0;
    let mut prev = f64::INFINITY;
    let mut k = 0;
    while 2 * k + 1 < n {
        let mut gamma = rho(2 * k) + rho(2 * k + 1);
        if gamma <= 0.0 {
            break;
        }
        gamma = gamma.min(prev);
        prev = gamma;
        sum += gamma;
        k += 1;
    }
    // Capped at N·log10(N) as Stan does (antithetic chains can make τ tiny or negative).
    let total = (m * n) as f64;
    let tau = (2.0 * sum - 1.0).max(1.0 / total.log10());
    total / tau
}

/// Checks every coordinate: |mean − μ| < 4 MCSE and |var − σ²| < 4 MCSE(var), where
/// MCSE(var) = sd((x − x̄)²)/√ESS((x − x̄)²) (the squares mix differently from x under HMC).
pub(crate) fn check_moments(out: &McmcOutput, mean: &[f64], var: &[f64]) {
    for j in 0..out.dim {
        check_scalar(&column(out, j), mean[j], var[j], j);
    }
}

/// The mean and variance checks of [`check_moments`] for one scalar quantity (`label` names it).
/// Returns the sample mean and its MCSE.
pub(crate) fn check_scalar(cols: &[Vec<f64>], mean: f64, var: f64, label: usize) -> (f64, f64) {
    let (m, v) = mean_var(cols);
    let n_eff = ess(cols);
    let mcse = v.sqrt() / n_eff.sqrt();
    assert!(
        (m - mean).abs() < 4.0 * mcse,
        "coord {label}: mean {m} vs {mean} (mcse {mcse}, ess {n_eff})"
    );
    let squares: Vec<Vec<f64>> = cols
        .iter()
        .map(|c| c.iter().map(|x| (x - m).powi(2)).collect())
        .collect();
    let (_, var_sq) = mean_var(&squares);
    let n_eff_sq = ess(&squares);
    let mcse_var = var_sq.sqrt() / n_eff_sq.sqrt();
    assert!(
        (v - var).abs() < 4.0 * mcse_var,
        "coord {label}: var {v} vs {var} (mcse {mcse_var}, ess {n_eff_sq})"
    );
    (m, mcse)
}

pub(crate) fn no_progress() -> impl Fn(bayesc::inference::mcmc::ChainProgress) + Sync {
    |_| {}
}

pub(crate) fn post_warmup_mean(
    out: &McmcOutput,
    f: impl Fn(&bayesc::inference::mcmc::ChainOutput) -> Vec<f64>,
) -> f64 {
    let all: Vec<f64> = out.chains.iter().flat_map(f).collect();
    all.iter().sum::<f64>() / all.len() as f64
}

pub(crate) fn spec_gaussian_5d() -> Gaussian {
    // `specs/nuts.md` §8.5: d = 5, scales 0.1 … 30 (geometric), correlation 0.5.
    let scales: Vec<f64> = (0..5).map(|k| 0.1 * 300f64.powf(k as f64 / 4.0)).collect();
    Gaussian::new(vec![0.0, 1.0, -2.0, 3.0, 0.5], scales, 0.5)
}
