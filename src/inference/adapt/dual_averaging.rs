//! Nesterov dual averaging of log ε̄ (Hoffman & Gelman 2014, §3.2; `specs/nuts.md` §5.2).

/// Target mean `accept_stat` δ. `specs/nuts.md` §5.1, Stan default.
pub const TARGET_ACCEPT: f64 = 0.8;
/// Shrinkage strength γ. `specs/nuts.md` §5.1, Stan default.
pub const GAMMA: f64 = 0.05;
/// Iterate-averaging decay exponent κ. `specs/nuts.md` §5.1, Stan default.
pub const KAPPA: f64 = 0.75;
/// Early-iteration stabiliser t₀. `specs/nuts.md` §5.1, Stan default.
pub const T0: f64 = 10.0;

/// State of the dual-averaging step-size adaptation (`specs/nuts.md` §5.2).
///
/// Each [`DualAveraging::update`] takes the `accept_stat` of one warmup transition and returns
/// the step size for the next one; [`DualAveraging::final_step_size`] gives exp(x̄), the value
/// frozen at the end of warmup.
#[derive(Clone, Debug)]
pub struct DualAveraging {
    /// Shrinkage point μ_DA (natural log of a step size).
    pub mu: f64,
    /// Target acceptance statistic δ, in (0, 1).
    pub delta: f64,
    /// γ (default [`GAMMA`]).
    pub gamma: f64,
    /// κ (default [`KAPPA`]).
    pub kappa: f64,
    /// t₀ (default [`T0`]).
    pub t0: f64,
    n: f64,
    s_bar: f64,
    x_bar: f64,
}

impl DualAveraging {
    /// Dual averaging with μ_DA = log(10·`step_size_user`) and target `delta`, other
    /// constants at Stan's defaults (`specs/nuts.md` §5.2: μ uses the user's initial step size,
    /// not the heuristic's result).
    pub fn new(step_size_user: f64, delta: f64) -> Self {
        DualAveraging {
            mu: (10.0 * step_size_user).ln(),
            delta,
            gamma: GAMMA,
            kappa: KAPPA,
            t0: T0,
            n: 0.0,
            s_bar: 0.0,
            x_bar: 0.0,
        }
    }

    /// Restart (n = s̄ = x̄ = 0) with a new shrinkage point μ_DA = log(10·`step_size`), as after
    /// each metric update (`specs/nuts.md` §5.3 step 6).
    pub fn restart(&mut self, step_size: f64) {
        self.mu = (10.0 * step_size).ln();
        self.n = 0.0;
        self.s_bar = 0.0;
        self.x_bar = 0.0;
    }

    /// One update with the transition's `accept_stat` (capped at 1; NaN counts as 0).
    /// Returns the new step size ε̄ = exp(x) for the next transition (`specs/nuts.md` §5.2).
    pub fn update(&mut self, accept_stat: f64) -> f64 {
        let a = if accept_stat.is_nan() {
            0.0
        } else {
            accept_stat.min(1.0)
        };
        self.n += 1.0;
        let eta = 1.0 / (self.n + self.t0);
        self.s_bar = (1.0 - eta) * self.s_bar + eta * (self.delta - a);
        let x = self.mu - self.s_bar * self.n.sqrt() / self.gamma;
        let w = self.n.powf(-self.kappa);
        self.x_bar = (1.0 - w) * self.x_bar + w * x;
        x.exp()
    }

    /// exp(x̄), the step size frozen at the end of warmup (`specs/nuts.md` §5.2).
    pub fn final_step_size(&self) -> f64 {
        self.x_bar.exp()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The test vector of `specs/nuts.md` §5.2.
    #[test]
    fn spec_test_vector() {
        let mut da = DualAveraging::new(1.0, 0.8);
        let expected = [14.38551, 7.900159, 10.0, 2.39651, 2.252123];
        for (a, e) in [1.0, 0.5, 0.9, 0.3, 0.8].iter().zip(expected) {
            let eps = da.update(*a);
            assert!((eps - e).abs() < 1e-5 * e, "{eps} vs {e}");
        }
        assert!((da.final_step_size() - 4.502277).abs() < 1e-5);
    }

    /// Hand computation of the first update: η = 1/11, s̄ = (0.8 − 1)/11, x = log 10 + s̄/0.05.
    #[test]
    fn first_update_by_hand_and_restart() {
        let mut da = DualAveraging::new(0.5, 0.8);
        let s_bar = (0.8 - 1.0) / 11.0;
        let x = 5f64.ln() - s_bar / 0.05;
        assert!((da.update(1.7) - x.exp()).abs() < 1e-12);
        assert!((da.final_step_size() - x.exp()).abs() < 1e-12);
        da.restart(2.0);
        let x = 20f64.ln() - (0.8 - 0.8) / 11.0;
        assert!((da.update(0.8) - x.exp()).abs() < 1e-12);
    }
}
