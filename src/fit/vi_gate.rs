//! The reliability gate of a variational (or Laplace) approximation q: what of its summary can
//! be trusted — everything, the means and central intervals but not the tails, or nothing
//! (issue 13, item 3; specs/diagnostics.md §6.2).
//!
//! # Why k̂ alone is not enough
//!
//! The Pareto k̂ of the importance ratios r = p/q estimates the tail shape of the ratios
//! (Vehtari et al. 2024, "Pareto smoothed importance sampling", JMLR 25(72), §3; Yao et al.
//! 2018, "Yes, but did it work?", ICML, §3.2). It answers "does q cover the tails of p?", and
//! only in the limit of many draws. Two failures of reading it as "is q right?" were measured:
//!
//! * *misses*: when q is too narrow and Gaussian-shaped, log r ≈ a + c·z²/2 with z the
//!   standardised draw, the true shape is k = c, but the Zhang–Stephens estimate from 1000 draws
//!   converges slowly and reads 0.26–0.55 (a logistic regression on separated data: q has sd 25
//!   where the posterior has 59, k̂ = 0.26–0.34). The posterior means are wrong all the same.
//! * *false alarms*: when q matches the bulk and differs only far out (a Student-t(5) target,
//!   or a beta posterior on the logit scale, whose ratio p/q is unbounded but varies by a few
//!   per cent where q puts its mass), k̂ is 0.9–2.2 while the PSIS ESS is 95–100 % of the draws
//!   and the means agree with NUTS.
//!
//! # The rule
//!
//! From S = [`super::FitOptions::psis_draws`] draws of q (default 4000), in
//! [`PSIS_BATCHES`] independent batches:
//!
//! 1. **q is far from p** (warning) when the bulk of q is off, shown by any of: (a) PSIS ESS < [`PSIS_ESS_FLOOR`]·S; (b) when k̂ is below the threshold of (c),
//!    importance reweighting moves some coordinate's mean by more than [`MEAN_SHIFT_MAX`] of
//!    q's sd, or changes its sd by more than a factor e^[`LOG_SD_SHIFT_MAX`] (each also above
//!    4 Monte Carlo standard errors, taken as sd/√ESS and 1/√(2·ESS));
//!    (c) pooled k̂ ≥ min(1 − 1/log₁₀ S, 0.7) (Vehtari et al. 2024 §3.3, the sample-size-aware
//!    threshold beyond which the importance-sampling estimate — hence check (b) — cannot be
//!    trusted) while the log ratios vary by more than [`LOG_RATIO_SD_MAX`] (sd of log r: the
//!    mismatch is not confined to the far tails).
//!
//!    Only (b) on a mean shows that q's means are off ([`ViGate::means_moved`]); (a), (c) and
//!    (b) on an sd say that q misses mass of p (far in KL(p‖q)), which a mean-field q on a
//!    posterior with correlated parameters always does — its marginal sds are too narrow —
//!    whether or not its means are right. The report words the warning accordingly
//!    (`output::report::vi_verdict`).
//! 2. **The tails are unreliable** (note) otherwise when k̂ ≥ 0.5 (pooled, or in some batch at
//!    its own threshold): the ratios have a heavy tail, i.e. p has more mass than q far out,
//!    but where q puts its mass p/q is nearly constant and reweighting does not move the means
//!    or sds. Means and central intervals are usable; extreme quantiles and tail probabilities
//!    are not.
//! 3. **Reliable** otherwise.
//!
//! Check (b) is the comparison Yao et al. (2018, §3.2) recommend when k̂ is small enough for
//! PSIS-corrected estimates to be trusted; (c) takes over when it is not. The variability of
//! k̂ is reported as its range over the batches of S/[`PSIS_BATCHES`] draws (independent
//! replicates of the 1000-draw estimate the report used to give).

use crate::diagnostics::psis::{KHat, Psis, khat_threshold, psis};

/// Number of independent batches of the PSIS draws whose k̂ values give the reported range
/// (the sampling variability of k̂, Vehtari et al. 2024 §3.3).
pub const PSIS_BATCHES: usize = 4;

/// Fraction of the PSIS draws below which the PSIS effective sample size alone makes the
/// means unreliable ([X], a design decision: 10 %; well-fitting approximations on the examples
/// give 79–99 %).
pub const PSIS_ESS_FLOOR: f64 = 0.1;

/// Largest shift of a coordinate's mean under importance reweighting, in sds of q, that still
/// counts as "the means agree" ([X]: 0.2 sd, a fifth of the usual posterior uncertainty).
/// Measured: 0.5–0.7 for QBVI on separated logistic data, ≤ 0.05 for Student-t(5) and beta
/// posteriors.
pub const MEAN_SHIFT_MAX: f64 = 0.2;

/// Largest |log(sd_reweighted/sd_q)| of a coordinate that still counts as "the sds agree"
/// ([X]: ln 1.25, a 25 % change).
pub const LOG_SD_SHIFT_MAX: f64 = 0.223;

/// Largest sd of the log ratios log p − log q for which a k̂ above the threshold is read as a
/// mismatch confined to the far tails ([X]: 0.5; for lognormal ratios the relative PSIS ESS is
/// about e^(−sd²) = 78 % there). Measured: 0.05–0.3 on the false alarms, ≥ 0.6 on the misses.
pub const LOG_RATIO_SD_MAX: f64 = 0.5;

/// k̂ below which importance resampling with the Pareto-smoothed weights corrects the draws of
/// an approximation whose means or sds are off (Vehtari et al. 2024: the PSIS estimate is then
/// reliable). The report of a resampled fit (Pathfinder, `--psis-resample`) uses it, together
/// with a PSIS ESS of at least [`PSIS_ESS_FLOOR`] of the draws, to say that the draws shown are
/// already corrected instead of warning.
pub const PSIS_KHAT_RESAMPLE_OK: f64 = 0.7;

/// What of a variational summary can be trusted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ViVerdict {
    /// Means, sds and tails.
    Reliable,
    /// Means and central intervals, not the tails (extreme quantiles, tail probabilities).
    TailsUnreliable,
    /// Nothing: the approximation is far from the posterior.
    MeansUnreliable,
}

/// The evidence behind a [`ViVerdict`], for the report.
#[derive(Clone, Debug)]
pub struct ViGate {
    /// The verdict.
    pub verdict: ViVerdict,
    /// k̂ of each of the [`PSIS_BATCHES`] batches (same conventions as the pooled k̂: +∞ for
    /// non-finite ratios or a failed fit, −∞ when constant); empty when S is too small.
    pub khat_batches: Vec<f64>,
    /// Sample sd of the finite log ratios log p − log q (NaN when fewer than 2).
    pub log_ratio_sd: f64,
    /// The coordinate whose mean moves most under reweighting: (name, |shift| in sds of q).
    pub mean_shift: Option<(String, f64)>,
    /// The coordinate whose sd changes most under reweighting: (name, log(sd_w / sd_q)).
    pub sd_shift: Option<(String, f64)>,
    /// Why the verdict, one phrase per reason (for the message).
    pub reasons: Vec<String>,
    /// Whether k̂ is undefined because only the largest log ratios are equal to rounding
    /// ([`KHat::TailTied`]), not all of them: the other checks still ran on the raw weights.
    pub tail_tied: bool,
    /// Largest minus smallest finite log ratio (nats; −∞ when none is finite).
    pub log_ratio_range: f64,
    /// Whether check (b) fired on a mean: with k̂ low enough for the reweighted moments to be
    /// trusted, importance reweighting moved some coordinate's mean by more than
    /// [`MEAN_SHIFT_MAX`] sd. Only then does the gate show that q's means are off; the other
    /// reasons for [`ViVerdict::MeansUnreliable`] (a low PSIS ESS, heavy-tailed weights) say
    /// that q is far from p without telling whether its means or only its spread is wrong.
    pub means_moved: bool,
    /// Whether the importance weights themselves are unreliable: the ratios are not finite,
    /// the PSIS ESS is below [`PSIS_ESS_FLOOR`] of the draws (a), or k̂ is above the threshold
    /// with spread-out log ratios (c). False when only check (b) fired: the weights are then
    /// trustworthy and show how q's means or sds are off.
    pub weights_unreliable: bool,
}

/// k̂ as reported: the estimate, −∞ undefined (constant ratios, or a tail of equal ratios:
/// bounded weights, below every threshold; [`ViGate::tail_tied`] tells them apart), +∞ failures.
pub fn khat_number(k: KHat) -> f64 {
    match k {
        KHat::Estimate(k) => k,
        KHat::Undefined | KHat::TailTied => f64::NEG_INFINITY,
        KHat::FitFailed | KHat::NonFinite => f64::INFINITY,
    }
}

/// Judges q from its S draws `draws` (unconstrained, S × d), their log ratios `ratios` and the
/// pooled PSIS `fit` of them (see the module doc for the rule); `names` are the coordinate
/// names (d of them, or empty for `zeta[i]`).
pub fn judge(draws: &[Vec<f64>], ratios: &[f64], fit: &Psis, names: &[String]) -> ViGate {
    use rayon::prelude::*;
    let s = ratios.len();
    let khat = khat_number(fit.khat);
    let per = s / PSIS_BATCHES;
    let khat_batches: Vec<f64> = if per >= 25 {
        (0..PSIS_BATCHES)
            .into_par_iter()
            .map(|b| match psis(&ratios[b * per..(b + 1) * per]) {
                Ok(f) => khat_number(f.khat),
                Err(_) => f64::NAN,
            })
            .collect()
    } else {
        Vec::new()
    };
    let finite: Vec<f64> = ratios.iter().copied().filter(|r| r.is_finite()).collect();
    // centred on the first ratio before summing: at |log p| ≈ 7e14 (ulp 0.125) the plain sum
    // of 4000 ratios carried a rounding error that put the mean 2.4 nats off, and that bias was
    // printed as "sd of log p - log q = 2.414" for ratios spanning under a nat ([X], session 21)
    let log_ratio_sd = if finite.len() >= 2 {
        let c = finite[0];
        let m = finite.iter().map(|r| r - c).sum::<f64>() / finite.len() as f64;
        (finite.iter().map(|r| (r - c - m).powi(2)).sum::<f64>() / (finite.len() - 1) as f64).sqrt()
    } else {
        f64::NAN
    };
    let log_ratio_range = finite.iter().copied().fold(f64::NEG_INFINITY, f64::max)
        - finite.iter().copied().fold(f64::INFINITY, f64::min);
    let mut gate = ViGate {
        verdict: ViVerdict::Reliable,
        khat_batches,
        log_ratio_sd,
        mean_shift: None,
        sd_shift: None,
        reasons: Vec::new(),
        means_moved: false,
        weights_unreliable: false,
        tail_tied: fit.khat == KHat::TailTied,
        log_ratio_range,
    };
    // q ∝ p; a tied tail (only the largest ratios equal) goes on to the other checks, which
    // see whether the raw weights move q's moments
    if khat == f64::NEG_INFINITY && !gate.tail_tied {
        return gate;
    }
    let threshold = khat_threshold(s);
    let mut means = Vec::new();
    if !fit.ess.is_finite() {
        means.push("the importance ratios are not finite".to_string());
        gate.weights_unreliable = true;
    } else {
        if fit.ess < PSIS_ESS_FLOOR * s as f64 {
            gate.weights_unreliable = true;
            means.push(format!(
                "a few draws carry most of the importance weight (PSIS ESS {:.0} of {s})",
                fit.ess
            ));
        }
        shifts(draws, fit, names, &mut gate);
        let ess = fit.ess.max(1.0);
        // (b) only where the reweighted moments can be trusted (k̂ below the threshold)
        let trusted = khat < threshold;
        let mut moved = false;
        if trusted
            && let Some((n, v)) = &gate.mean_shift
            && *v > MEAN_SHIFT_MAX.max(4.0 / ess.sqrt())
        {
            means.push(format!(
                "importance reweighting moves the mean of {n} by {v:.2} sd"
            ));
            moved = true;
        }
        gate.means_moved = moved;
        if trusted
            && let Some((n, v)) = &gate.sd_shift
            && v.abs() > LOG_SD_SHIFT_MAX.max(4.0 / (2.0 * ess).sqrt())
        {
            means.push(format!(
                "importance reweighting {} the sd of {n} by a factor {:.2}",
                if *v > 0.0 { "widens" } else { "narrows" },
                v.exp().max(1.0 / v.exp())
            ));
        }
        if khat >= threshold && !(log_ratio_sd <= LOG_RATIO_SD_MAX) {
            gate.weights_unreliable = true;
            means.push(format!(
                "k-hat {khat:.2} >= {threshold:.2} while log p - log q varies with sd {log_ratio_sd:.2}, so the importance weights are too heavy-tailed to correct or check q"
            ));
        }
    }
    if !means.is_empty() {
        gate.verdict = ViVerdict::MeansUnreliable;
        gate.reasons = means;
        return gate;
    }
    let batch_threshold = khat_threshold(per.max(25));
    let worst_batch = gate
        .khat_batches
        .iter()
        .copied()
        .filter(|k| !k.is_nan())
        .fold(f64::NEG_INFINITY, f64::max);
    if khat >= 0.5 || worst_batch >= batch_threshold {
        gate.verdict = ViVerdict::TailsUnreliable;
        let why = if khat >= threshold {
            format!(
                "log p - log q varies with sd only {log_ratio_sd:.2} where q puts its mass, so the bulk matches"
            )
        } else {
            "importance reweighting leaves the means and sds in place".to_string()
        };
        gate.reasons.push(format!(
            "k-hat {khat:.2}{}: p has more mass than q far out, but {why}",
            if khat < 0.5 {
                format!(" (up to {worst_batch:.2} in a batch)")
            } else {
                String::new()
            }
        ));
    }
    gate
}

/// Fills `mean_shift` and `sd_shift` of `gate`: per coordinate, the reweighted mean and sd
/// (normalised smoothed weights of `fit`) against the plain ones of the same draws.
fn shifts(draws: &[Vec<f64>], fit: &Psis, names: &[String], gate: &mut ViGate) {
    let Some(d) = draws.first().map(Vec::len) else {
        return;
    };
    let w = fit.normalized_weights();
    let n = draws.len() as f64;
    let name = |j: usize| {
        if names.len() == d {
            names[j].clone()
        } else {
            format!("zeta[{}]", j + 1)
        }
    };
    let mut best_mean: Option<(usize, f64)> = None;
    let mut best_sd: Option<(usize, f64)> = None;
    for j in 0..d {
        let m = draws.iter().map(|z| z[j]).sum::<f64>() / n;
        let sd = (draws.iter().map(|z| (z[j] - m).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
        let mw: f64 = draws.iter().zip(&w).map(|(z, w)| w * z[j]).sum();
        let vw: f64 = draws
            .iter()
            .zip(&w)
            .map(|(z, w)| w * (z[j] - mw).powi(2))
            .sum();
        if !(sd > 0.0) || !mw.is_finite() || !(vw > 0.0) {
            continue;
        }
        let dm = (mw - m).abs() / sd;
        let ds = 0.5 * vw.ln() - sd.ln();
        if best_mean.is_none_or(|(_, v)| dm > v) {
            best_mean = Some((j, dm));
        }
        if best_sd.is_none_or(|(_, v)| ds.abs() > v.abs()) {
            best_sd = Some((j, ds));
        }
    }
    gate.mean_shift = best_mean.map(|(j, v)| (name(j), v));
    gate.sd_shift = best_sd.map(|(j, v)| (name(j), v));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostics::std_normal_quantile;

    /// S quasi-random draws of q = N(0, 1) in one coordinate (a shuffled quantile grid) and
    /// the log ratios of a target N(mu, s²), constants dropped.
    fn case(s: usize, mu: f64, sd: f64) -> (Vec<Vec<f64>>, Vec<f64>) {
        let z: Vec<f64> = (0..s)
            .map(|i| std_normal_quantile(((i * 7919) % s) as f64 / s as f64 + 0.5 / s as f64))
            .collect();
        let lr = z
            .iter()
            .map(|&x| -0.5 * ((x - mu) / sd).powi(2) + 0.5 * x * x)
            .collect();
        (z.into_iter().map(|x| vec![x]).collect(), lr)
    }

    fn verdict(mu: f64, sd: f64) -> ViGate {
        let (draws, lr) = case(4000, mu, sd);
        let fit = psis(&lr).unwrap();
        judge(&draws, &lr, &fit, &["x".to_string()])
    }

    #[test]
    fn a_tied_tail_still_gets_the_other_checks() {
        // q = N(0, 1) for a target N(0.6, 1), its largest log ratios cut to one value (as the
        // rounding of |log p| ≈ 7e14 quantizes them): k̂ cannot be estimated, but the raw
        // weights still move the mean by about 0.5 sd, so the verdict is not "reliable"
        // (before: the tied tail counted as constant ratios and the gate passed q)
        let (draws, lr) = case(4000, 0.6, 1.0);
        let cut = {
            let mut v = lr.clone();
            v.sort_by(f64::total_cmp);
            v[v.len() * 8 / 10]
        };
        let lr: Vec<f64> = lr.iter().map(|v| v.min(cut)).collect();
        let fit = psis(&lr).unwrap();
        assert_eq!(fit.khat, KHat::TailTied);
        let g = judge(&draws, &lr, &fit, &["x".to_string()]);
        assert!(g.tail_tied, "{g:?}");
        assert_eq!(g.verdict, ViVerdict::MeansUnreliable, "{g:?}");
        assert!(g.means_moved, "{g:?}");
    }

    #[test]
    fn a_too_narrow_q_makes_the_means_unreliable() {
        // target sd 2.5 against q sd 1: the reweighted sd grows, and k = 1 − 1/6.25 = 0.84
        let g = verdict(0.0, 2.5);
        assert_eq!(g.verdict, ViVerdict::MeansUnreliable, "{g:?}");
        assert_eq!(g.khat_batches.len(), PSIS_BATCHES);
        // k̂ is too high for reweighting to check the means: the gate does not claim they moved
        assert!(!g.means_moved && g.weights_unreliable, "{g:?}");
    }

    #[test]
    fn a_shifted_q_makes_the_means_unreliable() {
        // target N(0.6, 1): reweighting moves the mean by about 0.6 sd
        let g = verdict(0.6, 1.0);
        assert_eq!(g.verdict, ViVerdict::MeansUnreliable, "{g:?}");
        let (name, shift) = g.mean_shift.clone().unwrap();
        assert_eq!(name, "x");
        assert!((shift - 0.6).abs() < 0.15, "{g:?}");
        assert!(g.means_moved && !g.weights_unreliable, "{g:?}");
    }

    #[test]
    fn a_slightly_wider_q_is_reliable() {
        // target sd 0.9: bounded ratios (k < 0), reweighting changes the sd by 10 %
        let g = verdict(0.0, 0.9);
        assert_eq!(g.verdict, ViVerdict::Reliable, "{g:?}");
        assert!(g.log_ratio_sd < 0.2, "{g:?}");
    }
}
