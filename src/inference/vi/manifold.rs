//! The manifold machinery MGVB and EMGVB share (`specs/survey_vi.md` §14–§15): functions of
//! symmetric positive-definite matrices, the momentum transport E = (X·Y⁻¹)^{1/2} between the
//! tangent spaces of consecutive iterates, and the second-order retraction
//! R_X(ξ) = sym(X + ξ + ½ξ·X⁻¹·ξ) (Tran et al. 2021; Magris et al. 2022).

use faer::{Mat, Side};

/// f applied to the eigenvalues of the symmetric matrix `a` (U·f(Λ)·Uᵀ); `None` when the
/// eigendecomposition fails or f gives a non-finite value.
pub(crate) fn sym_apply(a: &Mat<f64>, f: impl Fn(f64) -> f64) -> Option<Mat<f64>> {
    let d = a.nrows();
    let s = Mat::from_fn(d, d, |i, j| 0.5 * (a[(i, j)] + a[(j, i)]));
    let evd = s.self_adjoint_eigen(Side::Lower).ok()?;
    let (u, lambda) = (evd.U(), evd.S().column_vector());
    let fl: Vec<f64> = (0..d).map(|k| f(lambda[k])).collect();
    if fl.iter().any(|x| !x.is_finite()) {
        return None;
    }
    Some(Mat::from_fn(d, d, |i, j| {
        (0..d).map(|k| u[(i, k)] * fl[k] * u[(j, k)]).sum()
    }))
}

/// E = (X·Y⁻¹)^{1/2} for symmetric positive-definite X and Y, the principal square root: with
/// R = Y^{−1/2}, X·Y⁻¹ = R⁻¹(R·X·R)R, so E = R⁻¹·(R·X·R)^{1/2}·R. `None` if X or Y is not
/// positive definite.
pub(crate) fn transport(x: &Mat<f64>, y: &Mat<f64>) -> Option<Mat<f64>> {
    let positive = |l: f64| if l > 0.0 { l } else { f64::NAN };
    let r = sym_apply(y, |l| 1.0 / positive(l).sqrt())?;
    let r_inv = sym_apply(y, |l| positive(l).sqrt())?;
    let rxr = &r * x * &r;
    let root = sym_apply(&rxr, |l| positive(l).sqrt())?;
    Some(&r_inv * root * &r)
}

/// M ← ω·E·M·Eᵀ + (1−ω)·G (the transported momentum of §14).
pub(crate) fn momentum(m: &mut Mat<f64>, e: Option<&Mat<f64>>, g: &Mat<f64>, omega: f64) {
    let moved = match e {
        Some(e) => e * &*m * e.transpose(),
        None => m.clone(),
    };
    let d = m.nrows();
    *m = Mat::from_fn(d, d, |i, j| {
        omega * moved[(i, j)] + (1.0 - omega) * g[(i, j)]
    });
}

/// R_X(ξ) = sym(X + ξ + ½·ξ·X_inv·ξ), given X⁻¹ as `x_inv`.
pub(crate) fn retract(x: &Mat<f64>, x_inv: &Mat<f64>, xi: &Mat<f64>) -> Mat<f64> {
    let q = xi * x_inv * xi;
    let d = x.nrows();
    Mat::from_fn(d, d, |i, j| {
        let a = x[(i, j)] + xi[(i, j)] + 0.5 * q[(i, j)];
        let b = x[(j, i)] + xi[(j, i)] + 0.5 * q[(j, i)];
        0.5 * (a + b)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transport_squares_to_x_y_inverse() {
        let x = Mat::from_fn(2, 2, |i, j| [[2.0, 0.3], [0.3, 1.0]][i][j]);
        let y = Mat::from_fn(2, 2, |i, j| [[1.5, -0.4], [-0.4, 0.8]][i][j]);
        let e = transport(&x, &y).unwrap();
        let y_inv = sym_apply(&y, |l| 1.0 / l).unwrap();
        let want = &x * &y_inv;
        let got = &e * &e;
        for i in 0..2 {
            for j in 0..2 {
                assert!((got[(i, j)] - want[(i, j)]).abs() < 1e-12);
            }
        }
        // E = I when X = Y.
        let e = transport(&x, &x).unwrap();
        assert!((e[(0, 0)] - 1.0).abs() < 1e-12 && e[(0, 1)].abs() < 1e-12);
    }
}

/// Settings MGVB and EMGVB share (`survey_vi.md` §14–§15; defaults of the labour experiment of
/// §15 [C]: β₀ = 0.01, S = 50, ω = 0.4, Σ₀ = 0.05·I).
#[derive(Clone, Debug, PartialEq)]
pub struct ManifoldSettings {
    /// Exit rule, T_max, seed.
    pub common: super::ViSettings,
    /// S, draws per iteration; at least 2 (default 50).
    pub mc_samples: usize,
    /// β₀ (default 0.01).
    pub step_size: f64,
    /// t_d: β_t = β₀·t_d/t after it (default `None`: constant).
    pub decay_after: Option<usize>,
    /// ω, the momentum weight in [0, 1) (default 0.4).
    pub momentum: f64,
    /// Σ₀ = init_variance·I (default 0.05), unless `init_precision` is given.
    pub init_variance: f64,
    /// Initial precision P₀ (d×d row-major), e.g. the Laplace precision.
    pub init_precision: Option<Vec<f64>>,
}

impl Default for ManifoldSettings {
    fn default() -> Self {
        ManifoldSettings {
            common: super::ViSettings::default(),
            mc_samples: 50,
            step_size: 0.01,
            decay_after: None,
            momentum: 0.4,
            init_variance: 0.05,
            init_precision: None,
        }
    }
}

/// Above this d, MGVB and EMGVB refuse to run: a d×d matrix square root per step (O(d³)) and
/// several d×d matrices do not fit in time or memory.
pub const MANIFOLD_MAX_DIM: usize = 2000;

/// Halvings of β tried when the retraction is not positive definite (§14 [C]).
pub(crate) const MAX_HALVINGS: usize = 5;

impl ManifoldSettings {
    pub(crate) fn schedule(&self) -> super::schedule::Schedule {
        match self.decay_after {
            Some(after) => super::schedule::Schedule::DecayAfter {
                base: self.step_size,
                after,
            },
            None => super::schedule::Schedule::Constant(self.step_size),
        }
    }

    /// Checks the settings for dimension d; the message says what to use instead.
    pub(crate) fn validate(&self, d: usize, init: &[f64]) -> Result<(), super::ViError> {
        self.common.validate(d, init)?;
        let bad = |m: String| Err(super::ViError::InvalidSettings(m));
        if d > MANIFOLD_MAX_DIM {
            return Err(super::ViError::Unsuitable(format!(
                "MGVB and EMGVB fit a full d×d covariance with an O(d³) matrix square root per \
                 step; d = {d} exceeds {MANIFOLD_MAX_DIM}. Use a mean-field method instead \
                 (--method ivon, bbb or qbvi --diagonal)"
            )));
        }
        if self.mc_samples < 2 {
            return bad("mc_samples must be at least 2".into());
        }
        if !(self.step_size > 0.0 && self.step_size < 1.0) {
            return bad(format!(
                "step size is {}, but must lie in (0, 1)",
                self.step_size
            ));
        }
        if !(0.0..1.0).contains(&self.momentum) {
            return bad(format!(
                "momentum is {}, but must lie in [0, 1)",
                self.momentum
            ));
        }
        if !(self.init_variance > 0.0 && self.init_variance.is_finite()) {
            return bad("init_variance must be positive and finite".into());
        }
        if let Some(p) = &self.init_precision
            && p.len() != d * d
        {
            return bad(format!(
                "init_precision has {} entries, expected {}",
                p.len(),
                d * d
            ));
        }
        Ok(())
    }

    /// The initial q.
    pub(crate) fn initial_q(&self, init: &[f64]) -> Result<super::FullGaussian, super::ViError> {
        match &self.init_precision {
            Some(p) => super::FullGaussian::from_precision(init, p).ok_or_else(|| {
                super::ViError::InvalidSettings("init_precision is not positive definite".into())
            }),
            None => Ok(super::FullGaussian::isotropic(init, self.init_variance)),
        }
    }
}

/// Unpacks the stacked score-direction estimate (a, B_ij for i ≤ j) of a full family into Ĝ_a
/// and the symmetric Ĝ_B.
pub(crate) fn unpack(g: &[f64], d: usize) -> (Vec<f64>, Mat<f64>) {
    let mut b = Mat::zeros(d, d);
    let mut k = d;
    for i in 0..d {
        for j in i..d {
            b[(i, j)] = g[k];
            b[(j, i)] = g[k];
            k += 1;
        }
    }
    (g[..d].to_vec(), b)
}

/// Σ·v.
pub(crate) fn mat_vec(m: &Mat<f64>, v: &[f64]) -> Vec<f64> {
    (0..v.len())
        .map(|i| (0..v.len()).map(|j| m[(i, j)] * v[j]).sum())
        .collect()
}

/// Which manifold the Gaussian moves on: MGVB updates Σ with the approximate natural gradient
/// Σ·sym(Ĝ_Σ)·Σ and the retraction R_Σ (`survey_vi.md` §14); EMGVB updates P with the exact
/// natural gradient sym(Ĝ_P) and the retraction R_P (§15). Everything else — the draws, the
/// lagged control variates, the mean step, momentum with parallel transport, the halvings —
/// is the same, so both methods share [`ManifoldState`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Geometry {
    /// MGVB: q parameterised by Σ.
    Covariance,
    /// EMGVB: q parameterised by P = Σ⁻¹.
    Precision,
}

/// The state of an MGVB or EMGVB run: q, the momenta of μ and of the matrix parameter (Σ or P),
/// the previous matrix for the transport, the control variates and the draw batch.
#[derive(Clone, Debug)]
pub(crate) struct ManifoldState {
    geometry: Geometry,
    settings: ManifoldSettings,
    q: super::FullGaussian,
    /// Σ_{t−1} (MGVB) or P_{t−1} (EMGVB), for the transport E.
    prev: Option<Mat<f64>>,
    m_mu: Vec<f64>,
    m_mat: Mat<f64>,
    cv: super::ControlVariates,
    batch: super::Batch,
    g: Vec<f64>,
    skipped: usize,
}

impl ManifoldState {
    /// A run from mean `init`. Errors: settings out of range, or d too large
    /// ([`super::ViError::Unsuitable`]).
    pub(crate) fn new(
        init: &[f64],
        settings: &ManifoldSettings,
        geometry: Geometry,
    ) -> Result<Self, super::ViError> {
        use super::Family;
        let d = init.len();
        settings.validate(d, init)?;
        let q = settings.initial_q(init)?;
        let k = q.n_directions();
        Ok(ManifoldState {
            geometry,
            settings: settings.clone(),
            q,
            prev: None,
            m_mu: vec![0.0; d],
            m_mat: Mat::zeros(d, d),
            cv: super::ControlVariates::new(k),
            batch: super::Batch::new(settings.mc_samples, d, k),
            g: vec![0.0; k],
            skipped: 0,
        })
    }

    /// The pilot batch at t = 0 that gives the first control-variate coefficients
    /// (`qbvi.md` §5.5).
    fn pilot(
        &mut self,
        density: &dyn crate::inference::LogDensity,
        rng: &mut crate::inference::rng::StreamRng,
    ) -> Result<(), super::ViError> {
        self.batch.draw(&self.q, density, rng, 0)?;
        self.cv.estimate(&self.batch.u, &self.batch.f, None);
        Ok(())
    }

    /// One iteration at step t (§14 / §15); returns LB_t at the q that drew the batch.
    fn step(
        &mut self,
        density: &dyn crate::inference::LogDensity,
        rng: &mut crate::inference::rng::StreamRng,
        t: usize,
    ) -> Result<f64, super::ViError> {
        use super::Family;
        let d = self.q.dim();
        self.batch.draw(&self.q, density, rng, t)?;
        // Lagged coefficients (qbvi.md §5.3), then new ones from this batch.
        self.cv.gradient(&self.batch.u, &self.batch.f, &mut self.g);
        self.cv.estimate(&self.batch.u, &self.batch.f, None);
        let lb = self.batch.f.iter().sum::<f64>() / self.batch.f.len() as f64;
        // The stacked directions are (a, P − aaᵀ).
        let (g_a, g_b) = unpack(&self.g, d);
        let sigma = self.q.covariance_mat();
        let p = self.q.precision_mat().clone();
        let nat_mu = mat_vec(&sigma, &g_a);
        // The natural gradient of the matrix parameter, and the matrix it moves.
        let (nat_mat, current) = match self.geometry {
            // Ĝ_Σ = −½·Ĝ_B since U_Σ = −½(P − aaᵀ); ∇̃_Σ = Σ Ĝ_Σ Σ (§14).
            Geometry::Covariance => {
                let g_sigma = Mat::from_fn(d, d, |i, j| -0.5 * g_b[(i, j)]);
                (&sigma * g_sigma * &sigma, sigma.clone())
            }
            // ∇̃_P = sym(Ĝ_P) (§15).
            Geometry::Precision => (g_b, p.clone()),
        };
        let e = match &self.prev {
            Some(prev) => transport(&current, prev),
            None => None,
        };
        let omega = self.settings.momentum;
        for i in 0..d {
            self.m_mu[i] = omega * self.m_mu[i] + (1.0 - omega) * nat_mu[i];
        }
        momentum(&mut self.m_mat, e.as_ref(), &nat_mat, omega);
        let beta = self.settings.schedule().at(t);
        let mean: Vec<f64> = (0..d)
            .map(|i| self.q.mean()[i] + beta * self.m_mu[i])
            .collect();
        let mut b = beta;
        let mut new_p = None;
        for _ in 0..=MAX_HALVINGS {
            let xi = Mat::from_fn(d, d, |i, j| b * self.m_mat[(i, j)]);
            let candidate = match self.geometry {
                Geometry::Covariance => {
                    let cand = retract(&sigma, &p, &xi);
                    if super::cholesky_lower(&cand).is_some() {
                        sym_apply(&cand, |l| 1.0 / l)
                    } else {
                        None
                    }
                }
                Geometry::Precision => {
                    let cand = retract(&p, &sigma, &xi);
                    super::cholesky_lower(&cand).is_some().then_some(cand)
                }
            };
            if let Some(pc) = candidate {
                new_p = Some(pc);
                break;
            }
            b *= 0.5;
        }
        let p_next = new_p.unwrap_or_else(|| {
            self.skipped += 1;
            p.clone()
        });
        let row: Vec<f64> = (0..d * d).map(|k| p_next[(k / d, k % d)]).collect();
        match super::FullGaussian::from_precision(&mean, &row) {
            Some(q) if mean.iter().all(|m| m.is_finite()) => {
                self.prev = Some(current);
                self.q = q;
            }
            _ => self.skipped += 1,
        }
        Ok(lb)
    }
}

/// The loop of MGVB and EMGVB under the common exit rule: pilot batch from stream 0, the
/// iterations from stream 1 of the seed; returns the kept q.
pub(crate) fn run(
    density: &dyn crate::inference::LogDensity,
    init: &[f64],
    mut state: ManifoldState,
    settings: &ManifoldSettings,
    progress: &mut dyn FnMut(super::Progress) -> super::Control,
) -> Result<super::GaussianFit, super::ViError> {
    super::reparam::check_initial_point(density, init)?;
    state.pilot(
        density,
        &mut crate::inference::rng::stream(settings.common.seed, 0),
    )?;
    let start_sd = sample_sd(&state.batch.f);
    let start_q = state.q.clone();
    let mut rng = crate::inference::rng::stream(settings.common.seed, 1);
    let mut tracker = settings.common.tracker::<super::FullGaussian>();
    for t in 1..=settings.common.max_iter {
        let before = state.q.clone();
        tracker.watch(t, super::Family::mean(&before));
        let lb = state
            .step(density, &mut rng, t)
            .map_err(|e| diverged(e, &start_q, &state.q, start_sd))?;
        if tracker.observe(t, lb, &before, progress).is_some() {
            break;
        }
    }
    tracker.record.skipped_steps = state.skipped;
    let (q, record) = tracker.finish(state.q.clone());
    Ok(super::GaussianFit::full(&q, record))
}

/// The sample sd of `f` (NaN for fewer than 2 values).
fn sample_sd(f: &[f64]) -> f64 {
    let n = f.len() as f64;
    let mean = f.iter().sum::<f64>() / n;
    (f.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0)).sqrt()
}

/// `e` as [`super::ViError::Diverged`] when it is a non-finite log density at the draws of a q
/// whose mean has moved at least [`super::DIVERGED_SDS`] of `start`'s sds from `start`'s mean;
/// `e` unchanged otherwise.
fn diverged(
    e: super::ViError,
    start: &super::FullGaussian,
    now: &super::FullGaussian,
    start_sd: f64,
) -> super::ViError {
    use super::Family;
    let super::ViError::NonFiniteDensity {
        iteration, last, ..
    } = &e
    else {
        return e;
    };
    let sigma = start.covariance_mat();
    let moved = (0..start.dim())
        .map(|i| (now.mean()[i] - start.mean()[i]).abs() / sigma[(i, i)].sqrt())
        .fold(0.0, f64::max);
    if moved >= super::DIVERGED_SDS {
        super::ViError::Diverged {
            iteration: *iteration,
            moved,
            start_sd,
            last: last.clone(),
        }
    } else {
        e
    }
}
