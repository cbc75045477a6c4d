//! Online (Welford) estimators of the mean and the variance or covariance of warmup draws, with
//! Stan's shrinkage toward 10⁻³·I (`specs/nuts.md` §5.3 and §7; `specs/mh.md` §4).

/// Weight of the shrinkage prior, in pseudo-draws: var ← (n/(n+5))·var + 10⁻³·(5/(n+5)).
/// `specs/nuts.md` §5.3 step 2, Stan's `var_adaptation.hpp`.
pub const SHRINK_PSEUDO_DRAWS: f64 = 5.0;
/// Variance the estimate is shrunk toward. `specs/nuts.md` §5.3 step 2, Stan's default.
pub const SHRINK_TARGET: f64 = 1e-3;

/// Welford mean and per-coordinate variance of d-dimensional draws.
#[derive(Clone, Debug)]
pub struct WelfordVar {
    n: usize,
    mean: Vec<f64>,
    m2: Vec<f64>,
}

impl WelfordVar {
    /// An empty accumulator for vectors of length `dim`.
    pub fn new(dim: usize) -> Self {
        WelfordVar {
            n: 0,
            mean: vec![0.0; dim],
            m2: vec![0.0; dim],
        }
    }

    /// Number of draws added since the last [`WelfordVar::clear`].
    pub fn count(&self) -> usize {
        self.n
    }

    /// Add one draw `x` (length `dim`).
    pub fn add(&mut self, x: &[f64]) {
        self.n += 1;
        let n = self.n as f64;
        for ((m, s), &xi) in self.mean.iter_mut().zip(&mut self.m2).zip(x) {
            let delta = xi - *m;
            *m += delta / n;
            *s += delta * (xi - *m);
        }
    }

    /// Forget all draws.
    pub fn clear(&mut self) {
        self.n = 0;
        self.mean.iter_mut().for_each(|v| *v = 0.0);
        self.m2.iter_mut().for_each(|v| *v = 0.0);
    }

    /// Current mean (zeros if empty).
    pub fn mean(&self) -> &[f64] {
        &self.mean
    }

    /// Sample variance (denominator n − 1) regularised as (n/(n+5))·var + 10⁻³·(5/(n+5)),
    /// written into `out` (`specs/nuts.md` §5.3 steps 1–2). Needs n ≥ 2.
    pub fn regularized_variance(&self, out: &mut [f64]) {
        let n = self.n as f64;
        let w = n / (n + SHRINK_PSEUDO_DRAWS);
        let shrink = SHRINK_TARGET * SHRINK_PSEUDO_DRAWS / (n + SHRINK_PSEUDO_DRAWS);
        for (o, s) in out.iter_mut().zip(&self.m2) {
            *o = w * (s / (n - 1.0)) + shrink;
        }
    }

    /// As [`WelfordVar::regularized_variance`] but shrunk toward 10⁻³·`target` (length d)
    /// instead of 10⁻³: (n/(n+5))·var + 10⁻³·(5/(n+5))·target, written into `out`. Scale-aware
    /// shrinkage used by Metropolis–Hastings (see `inference::mh::AdaptiveMh`); needs n ≥ 2.
    pub fn regularized_variance_toward(&self, target: &[f64], out: &mut [f64]) {
        let n = self.n as f64;
        let w = n / (n + SHRINK_PSEUDO_DRAWS);
        let shrink = SHRINK_TARGET * SHRINK_PSEUDO_DRAWS / (n + SHRINK_PSEUDO_DRAWS);
        for ((o, s), t) in out.iter_mut().zip(&self.m2).zip(target) {
            *o = w * (s / (n - 1.0)) + shrink * t;
        }
    }
}

/// Welford mean and full covariance of d-dimensional draws (row-major d × d).
#[derive(Clone, Debug)]
pub struct WelfordCov {
    n: usize,
    dim: usize,
    mean: Vec<f64>,
    m2: Vec<f64>,
    delta: Vec<f64>,
}

impl WelfordCov {
    /// An empty accumulator for vectors of length `dim`.
    pub fn new(dim: usize) -> Self {
        WelfordCov {
            n: 0,
            dim,
            mean: vec![0.0; dim],
            m2: vec![0.0; dim * dim],
            delta: vec![0.0; dim],
        }
    }

    /// Number of draws added since the last [`WelfordCov::clear`].
    pub fn count(&self) -> usize {
        self.n
    }

    /// Add one draw `x` (length `dim`). Cost O(d²), no allocation.
    #[allow(clippy::needless_range_loop)] // three arrays indexed in step
    pub fn add(&mut self, x: &[f64]) {
        self.n += 1;
        let n = self.n as f64;
        for i in 0..self.dim {
            self.delta[i] = x[i] - self.mean[i];
            self.mean[i] += self.delta[i] / n;
        }
        // M2 += δ_old · (x − mean_new)ᵀ, symmetric.
        for i in 0..self.dim {
            let di = self.delta[i];
            let row = &mut self.m2[i * self.dim..(i + 1) * self.dim];
            for (j, r) in row.iter_mut().enumerate() {
                *r += di * (x[j] - self.mean[j]);
            }
        }
    }

    /// Forget all draws.
    pub fn clear(&mut self) {
        self.n = 0;
        self.mean.iter_mut().for_each(|v| *v = 0.0);
        self.m2.iter_mut().for_each(|v| *v = 0.0);
    }

    /// Current mean (zeros if empty).
    pub fn mean(&self) -> &[f64] {
        &self.mean
    }

    /// Sample covariance (denominator n − 1) regularised as (n/(n+5))·Σ̂ + 10⁻³·(5/(n+5))·I,
    /// written row-major into `out` (d × d), exactly symmetric (`specs/nuts.md` §7, `specs/mh.md` §4). Needs n ≥ 2.
    pub fn regularized_covariance(&self, out: &mut [f64]) {
        let n = self.n as f64;
        let w = n / (n + SHRINK_PSEUDO_DRAWS);
        let shrink = SHRINK_TARGET * SHRINK_PSEUDO_DRAWS / (n + SHRINK_PSEUDO_DRAWS);
        for i in 0..self.dim {
            for j in 0..self.dim {
                let k = i * self.dim + j;
                // Symmetrised: the two triangles of M2 differ by round-off.
                let m2 = 0.5 * (self.m2[k] + self.m2[j * self.dim + i]);
                out[k] = w * m2 / (n - 1.0) + if i == j { shrink } else { 0.0 };
            }
        }
    }

    /// As [`WelfordCov::regularized_covariance`] but shrunk toward 10⁻³·`target` (d × d
    /// row-major, symmetric) instead of 10⁻³·I: (n/(n+5))·Σ̂ + 10⁻³·(5/(n+5))·target, written
    /// row-major into `out`. With a target proportional to the posterior covariance the
    /// shrinkage is affine-equivariant, so it does not swamp the small variances of a badly
    /// scaled or strongly correlated posterior (used by Metropolis–Hastings, see
    /// `inference::mh::AdaptiveMh`). Needs n ≥ 2.
    pub fn regularized_covariance_toward(&self, target: &[f64], out: &mut [f64]) {
        let n = self.n as f64;
        let w = n / (n + SHRINK_PSEUDO_DRAWS);
        let shrink = SHRINK_TARGET * SHRINK_PSEUDO_DRAWS / (n + SHRINK_PSEUDO_DRAWS);
        let d = self.dim;
        for i in 0..d {
            for j in 0..d {
                let k = i * d + j;
                let m2 = 0.5 * (self.m2[k] + self.m2[j * d + i]);
                let t = 0.5 * (target[k] + target[j * d + i]);
                out[k] = w * m2 / (n - 1.0) + shrink * t;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variance_matches_two_pass_with_shrinkage() {
        let xs = [[1.0, -2.0], [2.5, 0.0], [-0.5, 4.0], [3.0, 1.0]];
        let mut w = WelfordVar::new(2);
        let mut c = WelfordCov::new(2);
        for x in &xs {
            w.add(x);
            c.add(x);
        }
        let n = 4.0;
        let mean: Vec<f64> = (0..2)
            .map(|j| xs.iter().map(|x| x[j]).sum::<f64>() / n)
            .collect();
        let cov = |a: usize, b: usize| {
            xs.iter()
                .map(|x| (x[a] - mean[a]) * (x[b] - mean[b]))
                .sum::<f64>()
                / (n - 1.0)
        };
        let mut v = [0.0; 2];
        w.regularized_variance(&mut v);
        let mut full = [0.0; 4];
        c.regularized_covariance(&mut full);
        for j in 0..2 {
            let expect = n / (n + 5.0) * cov(j, j) + 1e-3 * 5.0 / (n + 5.0);
            assert!((v[j] - expect).abs() < 1e-12);
            assert!((full[j * 2 + j] - expect).abs() < 1e-12);
            assert!((w.mean()[j] - mean[j]).abs() < 1e-12);
        }
        assert!((full[1] - n / (n + 5.0) * cov(0, 1)).abs() < 1e-12);
        assert_eq!(full[2], full[1]);
        w.clear();
        assert_eq!(w.count(), 0);
    }

    /// Shrinkage toward a target T: (n/(n+5))·Σ̂ + 10⁻³·(5/(n+5))·T, entry by entry.
    #[test]
    fn shrinkage_toward_a_target() {
        let xs = [[1.0, -2.0], [2.5, 0.0], [-0.5, 4.0], [3.0, 1.0]];
        let mut w = WelfordVar::new(2);
        let mut c = WelfordCov::new(2);
        for x in &xs {
            w.add(x);
            c.add(x);
        }
        let n = 4.0;
        let (mut plain, mut toward) = ([0.0; 4], [0.0; 4]);
        c.regularized_covariance(&mut plain);
        let target = [400.0, -3.0, -3.0, 0.25];
        c.regularized_covariance_toward(&target, &mut toward);
        let shrink = 1e-3 * 5.0 / (n + 5.0);
        for k in 0..4 {
            let identity = if k % 3 == 0 { 1.0 } else { 0.0 };
            let expect = plain[k] - shrink * identity + shrink * target[k];
            assert!((toward[k] - expect).abs() < 1e-12, "entry {k}");
        }
        let (mut vplain, mut vtoward) = ([0.0; 2], [0.0; 2]);
        w.regularized_variance(&mut vplain);
        w.regularized_variance_toward(&[400.0, 0.25], &mut vtoward);
        assert!((vtoward[0] - (vplain[0] - shrink + shrink * 400.0)).abs() < 1e-12);
        assert!((vtoward[1] - (vplain[1] - shrink + shrink * 0.25)).abs() < 1e-12);
    }
}
