//! Step-size schedules and the Adam optimiser shared by the survey's methods
//! (`specs/survey_vi.md` §4, §5, §8, §14; Kingma & Ba 2015, Algorithm 1).

/// A step size as a function of the iteration t (1-based).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Schedule {
    /// β_t = β₀.
    Constant(f64),
    /// β_t = β₀ for t ≤ t_d, then β₀·t_d/t (MGVB's code, `survey_vi.md` §14).
    DecayAfter {
        /// β₀.
        base: f64,
        /// t_d.
        after: usize,
    },
}

impl Schedule {
    /// β_t.
    pub fn at(&self, t: usize) -> f64 {
        match *self {
            Schedule::Constant(b) => b,
            Schedule::DecayAfter { base, after } => {
                if t <= after {
                    base
                } else {
                    base * after as f64 / t as f64
                }
            }
        }
    }

    /// β₀.
    pub fn base(&self) -> f64 {
        match *self {
            Schedule::Constant(b) | Schedule::DecayAfter { base: b, .. } => b,
        }
    }
}

/// Adam (Kingma & Ba 2015, Algorithm 1) on a parameter vector, as an ascent or descent
/// direction: [`Adam::step`] returns the increment lr_k·m̂/(√v̂ + ε) for the gradient it is
/// given, with a per-coordinate learning-rate multiplier (e.g. ×10 on log σ, `survey_vi.md`
/// §5 and §16).
#[derive(Clone, Debug, PartialEq)]
pub struct Adam {
    /// β₁ (default 0.9).
    pub beta1: f64,
    /// β₂ (default 0.999).
    pub beta2: f64,
    /// ε (default 1e-8).
    pub eps: f64,
    m: Vec<f64>,
    v: Vec<f64>,
    t: usize,
}

impl Adam {
    /// Adam with the standard constants for a vector of length n.
    pub fn new(n: usize) -> Self {
        Adam {
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            m: vec![0.0; n],
            v: vec![0.0; n],
            t: 0,
        }
    }

    /// Updates the moments with `grad` and writes the increment
    /// `lr·scale_k·m̂_k/(√v̂_k + ε)` into `out` (same sign as `grad`: add it to ascend along
    /// `grad`). `scale` is `None` for 1 everywhere.
    pub fn step(&mut self, grad: &[f64], lr: f64, scale: Option<&[f64]>, out: &mut [f64]) {
        self.t += 1;
        let c1 = 1.0 - self.beta1.powi(self.t as i32);
        let c2 = 1.0 - self.beta2.powi(self.t as i32);
        for k in 0..grad.len() {
            self.m[k] = self.beta1 * self.m[k] + (1.0 - self.beta1) * grad[k];
            self.v[k] = self.beta2 * self.v[k] + (1.0 - self.beta2) * grad[k] * grad[k];
            let s = scale.map_or(1.0, |s| s[k]);
            out[k] = lr * s * (self.m[k] / c1) / ((self.v[k] / c2).sqrt() + self.eps);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decay_schedule_and_first_adam_step() {
        let s = Schedule::DecayAfter {
            base: 0.1,
            after: 10,
        };
        assert_eq!(s.at(10), 0.1);
        assert!((s.at(20) - 0.05).abs() < 1e-15);
        // First Adam step: m̂ = g, v̂ = g², so the increment is lr·g/(|g| + ε) ≈ lr·sign(g).
        let mut a = Adam::new(2);
        let mut out = [0.0; 2];
        a.step(&[3.0, -0.5], 0.01, Some(&[1.0, 10.0]), &mut out);
        assert!((out[0] - 0.01).abs() < 1e-9 && (out[1] + 0.1).abs() < 1e-8);
    }
}
