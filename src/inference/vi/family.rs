//! The interface between the QBVI loop and a Gaussian variational family (`specs/qbvi.md` §2.4).

use super::prior::ConjugatePrior;

/// ½·log 2π.
pub(crate) const HALF_LN_2PI: f64 = 0.918_938_533_204_672_8;

/// A Gaussian variational family on ζ ∈ ℝ^d as the QBVI loop sees it.
///
/// The score directions u(ζ) of §5.1 are stacked into K = [`Family::n_directions`] components:
/// (a, B_ij for i ≤ j) for the full family, (a, b) for the diagonal one.
pub(crate) trait Family: Clone {
    /// d.
    fn dim(&self) -> usize;
    /// K, the number of stacked score directions.
    fn n_directions(&self) -> usize;
    /// μ (length d).
    fn mean(&self) -> &[f64];
    /// Maps standard normal draws `eps` (N×d row-major) to draws `zeta` (N×d) of q, their log
    /// densities `log_q` (length N) and the directions `u` (N×K row-major).
    fn prepare(&self, eps: &[f64], zeta: &mut [f64], log_q: &mut [f64], u: &mut [f64]);
    /// The precision in the packing of the B-directions: p_i (diagonal) or P_ij for i ≤ j
    /// (full), length K − d.
    fn precision_packed(&self) -> Vec<f64>;
    /// The exact variances Var_q[u_k] of the K directions under the current q (§5.4), written
    /// into `out`: P_ii and P_ii·P_jj + P_ij² (full), p_i and 2p_i² (diagonal).
    fn direction_variances(&self, out: &mut [f64]);
    /// Conjugate form: turns the black-box estimate `g` = (Ĝ_a, Ĝ_B) of the log-likelihood into
    /// the full direction (P₀(μ₀ − μ) + Ĝ_a, P₀ − P + Ĝ_B) (§3.3; diagonal: §4).
    fn add_conjugate_prior(&self, prior: &ConjugatePrior, g: &mut [f64]);
    /// Takes one natural-gradient step of size `beta` along the estimate `g` (length K), with
    /// the retraction of §8.1 and up to `max_halvings` halvings of `beta` (§8.3). Returns
    /// `false`, leaving the state unchanged, if every attempt failed.
    fn step(&mut self, g: &[f64], beta: f64, max_halvings: usize) -> bool;
    /// The plain natural-gradient step P + βG_B (then the same μ-step) when it is positive
    /// definite, else [`Family::step`]: the retraction as a guard only (`survey_vi.md` §9
    /// "PD guard"), so that its ½β²GΣG term does not bias a noisy G at the fixed point.
    fn step_guarded(&mut self, g: &[f64], beta: f64, max_halvings: usize) -> bool;
}
