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
    /// The trust region of the mean step ([X], see [`MEAN_TRUST_REGION`]): after a step from
    /// mean `old_mean`, limits each coordinate's move to `kappa` standard deviations of the new
    /// q, |μ_i − old_i| ≤ κ/√p_i, keeping its sign; returns how many coordinates were limited.
    /// `kappa` = ∞ leaves μ unchanged. The full family (d ≤ 50 by default, started at the
    /// Laplace mode) takes no trust region and returns 0: its steps were not measured to need one.
    fn limit_mean_step(&mut self, old_mean: &[f64], kappa: f64) -> usize;
}

/// κ, the default trust region of the diagonal natural-gradient mean step of QBVI and NGVI, in
/// standard deviations of q per coordinate per iteration ([X], a departure from `qbvi.md` §4 and
/// `survey_vi.md` §9, whose steps are unbounded). Its per-coordinate KL divergence is
/// ½·p_i·Δμ_i² ≤ κ²/2 = 1/8 nat: a KL trust region in the spirit of the proximal view of
/// natural-gradient VI (Khan & Nielsen 2018; Theis & Hoffman 2015), bounding each coordinate
/// rather than the sum. Why: the mean step β·ĝ_i/p_i is a damped Newton step, and where a
/// likelihood saturates (a softmax or tanh unit far into its tail) the gradient stays of order N
/// while the curvature, and with it p_i, falls towards the prior's. Measured on the digits BNN
/// (d = 3760, random start, seed 1; docs/bnn_methods.md): minibatch QBVI at β = 0.05 took steps
/// of 30 sd (median over iterations of the largest coordinate step) and up to 540 sd, and its
/// means ran to |μ| ≈ 100 (accuracy 0.52); NGVI from P₀ = I moved a weight 24 sd in its first
/// step. Healthy fits move at most 0.27 sd per step (β = 0.005) and never reach the bound; with
/// κ = 1 the same NGVI fit stopped at a full-data ELBO of −1909, with κ = 0.5 it passed +1300.
pub const MEAN_TRUST_REGION: f64 = 0.5;

/// How often the trust region of the mean step ([`Family::limit_mean_step`]) bound during a
/// run, for the fit's notes.
#[derive(Default, Clone, Debug)]
pub(crate) struct TrustRecord {
    /// Steps in which at least one coordinate was limited.
    pub(crate) steps: usize,
    /// Steps observed.
    pub(crate) total: usize,
    /// The most coordinates limited in one step.
    pub(crate) most: usize,
}

impl TrustRecord {
    /// Records one step that limited `limited` coordinates.
    pub(crate) fn observe(&mut self, limited: usize) {
        self.total += 1;
        if limited > 0 {
            self.steps += 1;
            self.most = self.most.max(limited);
        }
    }

    /// The note for the fit's report when the trust region bound at all.
    pub(crate) fn note(&self, kappa: f64) -> Option<String> {
        (self.steps > 0).then(|| {
            format!(
                "the trust region of the mean step ({kappa} sd of q per coordinate) limited {} \
                 of {} steps (at most {} coordinates at once): the natural-gradient step there \
                 was longer, as where a likelihood saturates and its curvature vanishes",
                self.steps, self.total, self.most
            )
        })
    }
}
