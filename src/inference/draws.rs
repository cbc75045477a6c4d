//! Posterior draws on the constrained scale, as every backend returns them.

/// Draws of named quantities from one or more chains.
///
/// `chains[c]` holds `n_draws × names.len()` values in row-major order: draw `i` of chain `c`
/// is `chains[c][i * names.len() .. (i + 1) * names.len()]`. Variational fits return one "chain".
/// Names follow the user-facing convention `alpha`, `beta[1]`, `Sigma[1,2]` (1-based).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Draws {
    /// Column names, one per scalar quantity.
    pub names: Vec<String>,
    /// One row-major `n_draws × names.len()` block per chain.
    pub chains: Vec<Vec<f64>>,
}

impl Draws {
    /// Number of draws per chain (all chains have the same count).
    pub fn n_draws(&self) -> usize {
        match (self.chains.first(), self.names.len()) {
            (Some(c), k) if k > 0 => c.len() / k,
            _ => 0,
        }
    }

    /// The draws of column `j`, one `Vec` per chain.
    pub fn column(&self, j: usize) -> Vec<Vec<f64>> {
        let k = self.names.len();
        self.chains
            .iter()
            .map(|c| c.iter().skip(j).step_by(k).copied().collect())
            .collect()
    }

    /// Index of the column called `name`.
    pub fn position(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }
}
