//! One multinomial NUTS transition with biased progressive sampling and the extra U-turn checks
//! across subtrees (`specs/nuts.md` §2; Betancourt 2017, arXiv:1701.02434, App. A).

use super::integrator::{PhasePoint, hamiltonian, leapfrog};
use super::{Metric, TransitionStats};
use crate::inference::density::{DensityError, LogDensity};
use crate::inference::rng::StreamRng;
use rand::RngExt;

/// Maximum tree depth D_max. `specs/nuts.md` §5.1, Stan default.
pub const MAX_DEPTH: usize = 10;
/// Divergence threshold ΔH_max on the energy error H − H₀. `specs/nuts.md` §5.1, Stan default.
pub const MAX_DELTA_H: f64 = 1000.0;

/// ok(a♯, b♯, r) = (a♯·r > 0) and (b♯·r > 0), with r = r₁ + r₂ formed on the fly
/// (`specs/nuts.md` §2.5).
#[inline]
fn ok_sum(a_sharp: &[f64], b_sharp: &[f64], r1: &[f64], r2: &[f64]) -> bool {
    let mut da = 0.0;
    let mut db = 0.0;
    for i in 0..r1.len() {
        let r = r1[i] + r2[i];
        da += a_sharp[i] * r;
        db += b_sharp[i] * r;
    }
    da > 0.0 && db > 0.0
}

/// The end momenta and momentum sum of one piece of trajectory, in time order.
#[derive(Clone, Copy)]
pub struct PieceView<'a> {
    /// ρ, the sum of the momenta of all states in the piece.
    pub rho: &'a [f64],
    /// Momentum of the leftmost (earliest) state.
    pub p_left: &'a [f64],
    /// Its sharp.
    pub sharp_left: &'a [f64],
    /// Momentum of the rightmost (latest) state.
    pub p_right: &'a [f64],
    /// Its sharp.
    pub sharp_right: &'a [f64],
}

/// The generalised no-U-turn criterion on two adjacent pieces A (left) and B (right), with the
/// two extra checks across the seam (`specs/nuts.md` §2.5). True if the merged piece passes.
///
/// The criterion is symmetric under reversing time (swap A ↔ B and left ↔ right), so it may
/// also be called with the pieces in build order.
pub fn merge_ok(a: PieceView<'_>, b: PieceView<'_>) -> bool {
    ok_sum(a.sharp_left, b.sharp_right, a.rho, b.rho)
        && ok_sum(a.sharp_left, b.sharp_left, a.rho, b.p_left)
        && ok_sum(a.sharp_right, b.sharp_right, b.rho, a.p_right)
}

/// Buffers describing one subtree, in build order (beginning = nearest the start state).
#[derive(Clone, Debug)]
struct Subtree {
    propose: PhasePoint,
    rho: Vec<f64>,
    p_beg: Vec<f64>,
    sharp_beg: Vec<f64>,
    p_end: Vec<f64>,
    sharp_end: Vec<f64>,
    log_weight: f64,
}

impl Subtree {
    fn new(dim: usize) -> Self {
        Subtree {
            propose: PhasePoint::new(dim),
            rho: vec![0.0; dim],
            p_beg: vec![0.0; dim],
            sharp_beg: vec![0.0; dim],
            p_end: vec![0.0; dim],
            sharp_end: vec![0.0; dim],
            log_weight: f64::NEG_INFINITY,
        }
    }

    /// In build order the beginning is "left", which the symmetric criterion allows.
    fn view(&self) -> PieceView<'_> {
        PieceView {
            rho: &self.rho,
            p_left: &self.p_beg,
            sharp_left: &self.sharp_beg,
            p_right: &self.p_end,
            sharp_right: &self.sharp_end,
        }
    }
}

fn log_sum_exp(a: f64, b: f64) -> f64 {
    let m = a.max(b);
    if m == f64::NEG_INFINITY {
        return m;
    }
    m + ((a - m).exp() + (b - m).exp()).ln()
}

/// Everything a subtree build reads or updates, shared across the transition (`specs/nuts.md`
/// §2.4 notes: counters include states of rejected subtrees).
struct BuildCtx<'a> {
    density: &'a dyn LogDensity,
    metric: &'a Metric,
    rng: &'a mut StreamRng,
    z: &'a mut PhasePoint,
    velocity: &'a mut [f64],
    h0: f64,
    max_delta_h: f64,
    n_leapfrog: usize,
    accept_sum: f64,
    divergent: bool,
}

/// `build(z_start, depth, e)` of `specs/nuts.md` §2.4. The moving state `ctx.z` starts at the
/// subtree's start; results go to `out`; `levels[0..depth-1]` is scratch for final halves.
/// Returns whether the subtree is valid; Err only for unrecoverable density errors.
fn build(
    ctx: &mut BuildCtx<'_>,
    depth: usize,
    e: f64,
    out: &mut Subtree,
    levels: &mut [Subtree],
) -> Result<bool, DensityError> {
    if depth == 0 {
        leapfrog(ctx.density, ctx.metric, ctx.z, e, ctx.velocity)?;
        ctx.n_leapfrog += 1;
        ctx.metric.sharp(&ctx.z.p, &mut out.sharp_beg);
        let h = hamiltonian(ctx.z.log_density, &ctx.z.p, &out.sharp_beg);
        if h - ctx.h0 > ctx.max_delta_h {
            ctx.divergent = true;
        }
        out.log_weight = ctx.h0 - h;
        ctx.accept_sum += if ctx.h0 - h > 0.0 {
            1.0
        } else {
            (ctx.h0 - h).exp()
        };
        out.propose.assign(ctx.z);
        out.rho.copy_from_slice(&ctx.z.p);
        out.p_beg.copy_from_slice(&ctx.z.p);
        out.p_end.copy_from_slice(&ctx.z.p);
        out.sharp_end.copy_from_slice(&out.sharp_beg);
        return Ok(!ctx.divergent);
    }
    let (lower, upper) = levels.split_at_mut(depth - 1);
    let fin = &mut upper[0];
    if !build(ctx, depth - 1, e, out, lower)? {
        return Ok(false);
    }
    if !build(ctx, depth - 1, e, fin, lower)? {
        return Ok(false);
    }
    // Uniform progressive sampling within the subtree (§2.4 step 3).
    let log_w = log_sum_exp(out.log_weight, fin.log_weight);
    let accept = (fin.log_weight - log_w).exp();
    // `fin` is scratch that the next build overwrites entirely, so swapping buffers is enough.
    if ctx.rng.random::<f64>() < accept {
        std::mem::swap(&mut out.propose, &mut fin.propose);
    }
    let valid = merge_ok(out.view(), fin.view());
    for (r, f) in out.rho.iter_mut().zip(&fin.rho) {
        *r += f;
    }
    std::mem::swap(&mut out.p_end, &mut fin.p_end);
    std::mem::swap(&mut out.sharp_end, &mut fin.sharp_end);
    out.log_weight = log_w;
    Ok(valid)
}

/// Preallocated state of the NUTS transition for one chain: no allocation per leapfrog step or
/// per transition.
#[derive(Clone, Debug)]
pub struct Nuts {
    /// D_max (default [`MAX_DEPTH`]).
    pub max_depth: usize,
    /// ΔH_max (default [`MAX_DELTA_H`]).
    pub max_delta_h: f64,
    z: PhasePoint,
    z_fwd: PhasePoint,
    z_bck: PhasePoint,
    sample: PhasePoint,
    velocity: Vec<f64>,
    rho: Vec<f64>,
    p_fwd: Vec<f64>,
    sharp_fwd: Vec<f64>,
    p_bck: Vec<f64>,
    sharp_bck: Vec<f64>,
    sub: Subtree,
    levels: Vec<Subtree>,
}

impl Nuts {
    /// Workspace for dimension `dim` and maximum depth `max_depth` (≥ 1).
    pub fn new(dim: usize, max_depth: usize) -> Self {
        Nuts {
            max_depth,
            max_delta_h: MAX_DELTA_H,
            z: PhasePoint::new(dim),
            z_fwd: PhasePoint::new(dim),
            z_bck: PhasePoint::new(dim),
            sample: PhasePoint::new(dim),
            velocity: vec![0.0; dim],
            rho: vec![0.0; dim],
            p_fwd: vec![0.0; dim],
            sharp_fwd: vec![0.0; dim],
            p_bck: vec![0.0; dim],
            sharp_bck: vec![0.0; dim],
            sub: Subtree::new(dim),
            levels: (0..max_depth.max(1)).map(|_| Subtree::new(dim)).collect(),
        }
    }

    /// One NUTS transition from `current` (whose L and ∇L are cached) with step size `eps`
    /// (already jittered). On return `current` holds the selected state z_sel with its own
    /// momentum (`specs/nuts.md` §2.6). Err only for unrecoverable density errors.
    pub fn transition(
        &mut self,
        density: &dyn LogDensity,
        metric: &Metric,
        eps: f64,
        rng: &mut StreamRng,
        current: &mut PhasePoint,
    ) -> Result<TransitionStats, DensityError> {
        metric.sample_momentum(rng, &mut current.p);
        metric.sharp(&current.p, &mut self.sharp_fwd);
        let h0 = hamiltonian(current.log_density, &current.p, &self.sharp_fwd);
        self.sharp_bck.copy_from_slice(&self.sharp_fwd);
        self.z_fwd.assign(current);
        self.z_bck.assign(current);
        self.sample.assign(current);
        self.rho.copy_from_slice(&current.p);
        self.p_fwd.copy_from_slice(&current.p);
        self.p_bck.copy_from_slice(&current.p);

        let mut log_w = 0.0;
        let mut depth = 0;
        let mut ctx = BuildCtx {
            density,
            metric,
            rng,
            z: &mut self.z,
            velocity: &mut self.velocity,
            h0,
            max_delta_h: self.max_delta_h,
            n_leapfrog: 0,
            accept_sum: 0.0,
            divergent: false,
        };
        while depth < self.max_depth {
            let forward = ctx.rng.random::<f64>() > 0.5;
            ctx.z
                .assign(if forward { &self.z_fwd } else { &self.z_bck });
            let e = if forward { eps } else { -eps };
            let valid = build(&mut ctx, depth, e, &mut self.sub, &mut self.levels)?;
            if forward {
                self.z_fwd.assign(ctx.z);
            } else {
                self.z_bck.assign(ctx.z);
            }
            if !valid {
                break;
            }
            depth += 1;
            // Biased progressive sampling (§2.3 step 5). `self.sub` is overwritten entirely by
            // the next build, so its buffers can be swapped out instead of copied.
            let take = self.sub.log_weight > log_w
                || ctx.rng.random::<f64>() < (self.sub.log_weight - log_w).exp();
            if take {
                std::mem::swap(&mut self.sample, &mut self.sub.propose);
            }
            let sub = &self.sub;
            log_w = log_sum_exp(log_w, sub.log_weight);
            let old = PieceView {
                rho: &self.rho,
                p_left: &self.p_bck,
                sharp_left: &self.sharp_bck,
                p_right: &self.p_fwd,
                sharp_right: &self.sharp_fwd,
            };
            let new = PieceView {
                rho: &sub.rho,
                p_left: &sub.p_end,
                sharp_left: &sub.sharp_end,
                p_right: &sub.p_beg,
                sharp_right: &sub.sharp_beg,
            };
            let persist = if forward {
                merge_ok(old, sub.view())
            } else {
                merge_ok(new, old)
            };
            for (r, s) in self.rho.iter_mut().zip(&sub.rho) {
                *r += s;
            }
            let sub = &mut self.sub;
            if forward {
                std::mem::swap(&mut self.p_fwd, &mut sub.p_end);
                std::mem::swap(&mut self.sharp_fwd, &mut sub.sharp_end);
            } else {
                std::mem::swap(&mut self.p_bck, &mut sub.p_end);
                std::mem::swap(&mut self.sharp_bck, &mut sub.sharp_end);
            }
            if !persist {
                break;
            }
        }
        let (n_leapfrog, accept_sum, divergent) = (ctx.n_leapfrog, ctx.accept_sum, ctx.divergent);
        current.assign(&self.sample);
        metric.sharp(&current.p, &mut self.velocity);
        let energy = hamiltonian(current.log_density, &current.p, &self.velocity);
        Ok(TransitionStats {
            log_density: current.log_density,
            accept_stat: if n_leapfrog > 0 {
                accept_sum / n_leapfrog as f64
            } else {
                0.0
            },
            step_size: eps,
            tree_depth: depth as u32,
            n_leapfrog: n_leapfrog as u32,
            divergent,
            energy,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inference::rng::stream;

    fn piece<'a>(rho: &'a [f64], pl: &'a [f64], pr: &'a [f64]) -> PieceView<'a> {
        // Unit metric: sharp = p.
        PieceView {
            rho,
            p_left: pl,
            sharp_left: pl,
            p_right: pr,
            sharp_right: pr,
        }
    }

    #[test]
    fn criterion_on_hand_built_vectors() {
        // Both pieces moving right: all three checks pass.
        let a = piece(&[2.0, 0.0], &[1.0, 0.0], &[1.0, 0.0]);
        let b = piece(&[2.0, 0.0], &[1.0, 0.1], &[1.0, -0.1]);
        assert!(merge_ok(a, b));
        // B's right end turned back: check 1 fails (p_B^R · ρ < 0).
        let b = piece(&[1.0, 0.0], &[1.0, 0.0], &[-5.0, 0.0]);
        assert!(!merge_ok(a, b));
        // Only a seam check fails: the whole span and B pass check 1, but A's right end points
        // against ρ_B + p_A^R (check 3).
        let a = piece(&[10.0, 0.0], &[1.0, 0.0], &[-0.5, 0.0]);
        let b = piece(&[0.2, 0.0], &[1.0, 0.0], &[1.0, 0.0]);
        assert!(ok_sum(&[1.0, 0.0], &[1.0, 0.0], a.rho, b.rho));
        assert!(ok_sum(&[1.0, 0.0], &[1.0, 0.0], a.rho, b.p_left));
        assert!(!ok_sum(a.sharp_right, b.sharp_right, b.rho, a.p_right));
        assert!(!merge_ok(a, b));
        // Symmetry under time reversal.
        let a = piece(&[1.0, 2.0], &[0.5, 1.0], &[0.2, 0.9]);
        let b = piece(&[0.3, 1.0], &[0.1, 0.8], &[-0.1, 0.7]);
        assert!(merge_ok(a, b));
        assert_eq!(merge_ok(a, b), merge_ok(b, a));
    }

    struct StdNormal;
    impl LogDensity for StdNormal {
        fn dim(&self) -> usize {
            1
        }
        fn log_density(&self, x: &[f64]) -> Result<f64, DensityError> {
            Ok(-0.5 * x[0] * x[0])
        }
        fn log_density_grad(&self, x: &[f64], g: &mut [f64]) -> Result<f64, DensityError> {
            g[0] = -x[0];
            Ok(-0.5 * x[0] * x[0])
        }
    }

    /// `specs/nuts.md` §8.4 statistical sanity: the integration time n_leapfrog·ε stays short of
    /// a full orbit (95% point < 2π; the prototype's median is 1.59), and the tree-depth /
    /// n_leapfrog relation of §2.6 holds.
    #[test]
    fn trajectories_stop_before_a_full_orbit() {
        let metric = Metric::unit_diag(1);
        let mut nuts = Nuts::new(1, 12);
        let mut rng = stream(5, 1);
        let mut cur = PhasePoint::new(1);
        cur.q[0] = 0.3;
        cur.evaluate(&StdNormal).unwrap();
        let mut times = Vec::new();
        for _ in 0..400 {
            let s = nuts
                .transition(&StdNormal, &metric, 0.01, &mut rng, &mut cur)
                .unwrap();
            let d = s.tree_depth;
            assert!((1u32 << d) - 1 <= s.n_leapfrog && s.n_leapfrog < (1u32 << (d + 1)));
            assert!(!s.divergent && s.accept_stat > 0.99);
            times.push(s.n_leapfrog as f64 * 0.01);
        }
        times.sort_by(f64::total_cmp);
        let q95 = times[380];
        let q50 = times[200];
        assert!(q95 < 2.0 * std::f64::consts::PI, "q95 {q95}");
        assert!((0.8..2.6).contains(&q50), "median {q50}");
    }
}
