//! Static HMC: a fixed number of leapfrog steps and a Metropolis accept/reject
//! (`specs/nuts.md` §7, Stan's `base_static_hmc.hpp`).

use super::integrator::{PhasePoint, hamiltonian, leapfrog};
use super::nuts::MAX_DELTA_H;
use super::{Metric, TransitionStats};
use crate::inference::density::{DensityError, LogDensity};
use crate::inference::rng::StreamRng;
use rand::RngExt;

/// Default integration time T = 2π. `specs/nuts.md` §7, CmdStan's `arg_int_time.hpp`.
pub const INTEGRATION_TIME: f64 = 2.0 * std::f64::consts::PI;

/// L_steps = max(1, ⌊T/ε̄⌋) for integration time `time` and nominal step size `eps`
/// (`specs/nuts.md` §7).
pub fn steps_for_time(time: f64, eps: f64) -> usize {
    let n = (time / eps).floor();
    if n.is_finite() && n >= 1.0 {
        n.min(u32::MAX as f64) as usize
    } else {
        1
    }
}

/// Preallocated workspace of the static HMC transition for one chain.
#[derive(Clone, Debug)]
pub struct StaticHmc {
    z: PhasePoint,
    velocity: Vec<f64>,
}

impl StaticHmc {
    /// Workspace for dimension `dim`.
    pub fn new(dim: usize) -> Self {
        StaticHmc {
            z: PhasePoint::new(dim),
            velocity: vec![0.0; dim],
        }
    }

    /// One transition of `n_steps` leapfrog steps with step size `eps` from `current`
    /// (`specs/nuts.md` §7 steps 1–5). Divergent is flagged when H − H₀ > 1000 (the [X] of §7);
    /// a recoverable density error rejects. `tree_depth` is reported as 0.
    pub fn transition(
        &mut self,
        density: &dyn LogDensity,
        metric: &Metric,
        eps: f64,
        n_steps: usize,
        rng: &mut StreamRng,
        current: &mut PhasePoint,
    ) -> Result<TransitionStats, DensityError> {
        metric.sample_momentum(rng, &mut current.p);
        metric.sharp(&current.p, &mut self.velocity);
        let h0 = hamiltonian(current.log_density, &current.p, &self.velocity);
        self.z.assign(current);
        let mut taken = 0;
        for _ in 0..n_steps {
            leapfrog(density, metric, &mut self.z, eps, &mut self.velocity)?;
            taken += 1;
            if self.z.log_density == f64::NEG_INFINITY {
                break;
            }
        }
        metric.sharp(&self.z.p, &mut self.velocity);
        let h = hamiltonian(self.z.log_density, &self.z.p, &self.velocity);
        let accept_stat = if h0 - h > 0.0 { 1.0 } else { (h0 - h).exp() };
        let divergent = h - h0 > MAX_DELTA_H;
        let energy = if rng.random::<f64>() < accept_stat {
            current.assign(&self.z);
            h
        } else {
            h0
        };
        Ok(TransitionStats {
            log_density: current.log_density,
            accept_stat,
            step_size: eps,
            tree_depth: 0,
            n_leapfrog: taken as u32,
            divergent,
            energy,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_count_from_integration_time() {
        assert_eq!(steps_for_time(INTEGRATION_TIME, 0.1), 62);
        assert_eq!(steps_for_time(INTEGRATION_TIME, 10.0), 1);
        assert_eq!(steps_for_time(INTEGRATION_TIME, 0.0), 1);
    }
}
