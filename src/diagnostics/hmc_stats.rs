//! HMC/NUTS checks: E-BFMI per chain, divergences, tree-depth saturation
//! (specs/diagnostics.md §5; Betancourt 2016 for E-BFMI).

use super::DiagnosticsError;

/// E-BFMI warning threshold: values below it are reported (Stan's current message; §5).
pub const E_BFMI_THRESHOLD: f64 = 0.3;

/// E-BFMI of one chain's post-warmup energies E₁…E_N (specs/diagnostics.md §5):
/// Σ_{n=2}^{N}(E_n − E_{n−1})² / Σ_{n=1}^{N}(E_n − Ē)². NaN if any energy is non-finite or all
/// are equal. Errors: fewer than 2 energies.
pub fn e_bfmi(energy: &[f64]) -> Result<f64, DiagnosticsError> {
    if energy.len() < 2 {
        return Err(DiagnosticsError::TooFewValues {
            got: energy.len(),
            min: 2,
        });
    }
    let mean = energy.iter().sum::<f64>() / energy.len() as f64;
    let num: f64 = energy.windows(2).map(|w| (w[1] - w[0]).powi(2)).sum();
    let den: f64 = energy.iter().map(|e| (e - mean).powi(2)).sum();
    Ok(if den > 0.0 && num.is_finite() {
        num / den
    } else {
        f64::NAN
    })
}

/// Number of post-warmup draws of one chain flagged divergent (`divergent__` ≠ 0), and their
/// 0-based iteration indices, for plotting where they occur (specs/diagnostics.md §5).
pub fn divergences(divergent: &[f64]) -> (usize, Vec<usize>) {
    let iters: Vec<usize> = divergent
        .iter()
        .enumerate()
        .filter(|(_, d)| **d != 0.0)
        .map(|(i, _)| i)
        .collect();
    (iters.len(), iters)
}

/// Number of post-warmup draws whose tree depth reached `max_depth` (specs/diagnostics.md §5).
pub fn treedepth_saturation(treedepth: &[f64], max_depth: u32) -> usize {
    treedepth
        .iter()
        .filter(|d| **d >= f64::from(max_depth))
        .count()
}

/// The HMC checks of all chains together.
#[derive(Clone, Debug, PartialEq)]
pub struct HmcStats {
    /// E-BFMI per chain (NaN where undefined).
    pub e_bfmi: Vec<f64>,
    /// Divergent draws per chain.
    pub divergences: Vec<usize>,
    /// Draws per chain that hit the maximum tree depth.
    pub treedepth_saturated: Vec<usize>,
    /// Post-warmup draws per chain.
    pub draws_per_chain: Vec<usize>,
}

impl HmcStats {
    /// Computes the checks from per-chain `energy__`, `divergent__` and `treedepth__` columns
    /// (one `Vec` per chain, post-warmup). Errors: a chain with fewer than 2 energies.
    pub fn new(
        energy: &[Vec<f64>],
        divergent: &[Vec<f64>],
        treedepth: &[Vec<f64>],
        max_depth: u32,
    ) -> Result<Self, DiagnosticsError> {
        Ok(Self {
            e_bfmi: energy.iter().map(|e| e_bfmi(e)).collect::<Result<_, _>>()?,
            divergences: divergent.iter().map(|d| divergences(d).0).collect(),
            treedepth_saturated: treedepth
                .iter()
                .map(|t| treedepth_saturation(t, max_depth))
                .collect(),
            draws_per_chain: energy.iter().map(Vec::len).collect(),
        })
    }

    /// Total divergent draws over all chains.
    pub fn total_divergences(&self) -> usize {
        self.divergences.iter().sum()
    }

    /// Human-readable warnings (empty when every check passes), in Stan's wording style.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        let total: usize = self.draws_per_chain.iter().sum();
        let div = self.total_divergences();
        if div > 0 {
            out.push(format!(
                "{div} of {total} ({:.1}%) transitions ended with a divergence; consider a larger adapt_delta or reparameterising",
                100.0 * div as f64 / total.max(1) as f64
            ));
        }
        let sat: usize = self.treedepth_saturated.iter().sum();
        if sat > 0 {
            out.push(format!(
                "{sat} of {total} transitions hit the maximum tree depth (an efficiency concern, not a validity one)"
            ));
        }
        for (c, b) in self.e_bfmi.iter().enumerate() {
            if *b < E_BFMI_THRESHOLD {
                out.push(format!(
                    "chain {}: E-BFMI = {b:.3} is below {E_BFMI_THRESHOLD}; the momentum resampling explores the energy poorly",
                    c + 1
                ));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn e_bfmi_closed_form() {
        // E = [1, 3, 2, 4]: mean 2.5; num = 4 + 1 + 4 = 9; den = 2.25 + 0.25 + 0.25 + 2.25 = 5
        assert!((e_bfmi(&[1.0, 3.0, 2.0, 4.0]).unwrap() - 1.8).abs() < 1e-15);
        assert!(e_bfmi(&[2.0, 2.0]).unwrap().is_nan());
        assert!(e_bfmi(&[2.0]).is_err());
    }

    #[test]
    fn counts_and_warnings() {
        let (n, at) = divergences(&[0.0, 1.0, 0.0, 1.0]);
        assert_eq!((n, at), (2, vec![1, 3]));
        assert_eq!(treedepth_saturation(&[3.0, 10.0, 10.0, 9.0], 10), 2);
        let s = HmcStats::new(
            &[vec![1.0, 3.0, 2.0, 4.0], vec![1.0, 1.1, 1.2, 1.3]],
            &[vec![0.0, 1.0, 0.0, 0.0], vec![0.0; 4]],
            &[vec![10.0, 1.0, 1.0, 1.0], vec![1.0; 4]],
            10,
        )
        .unwrap();
        assert_eq!(s.total_divergences(), 1);
        // chain 2: num = 3·0.01, den = 0.05 → 0.6 (no warning); chain 1: 1.8
        assert!((s.e_bfmi[1] - 0.6).abs() < 1e-12);
        let w = s.warnings();
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].starts_with("1 of 8 (12.5%)"));
    }
}
