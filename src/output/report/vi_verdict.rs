//! The wording of the warning for a variational fit judged [`fit::ViVerdict::MeansUnreliable`]
//! (`fit::vi_gate`): what the evidence shows, and the remedy that matches the cause.
//!
//! A PSIS k̂ above 0.7 (or a PSIS ESS below 10 % of the draws) says that the importance
//! weights p/q are unreliable: q misses mass that the posterior p has, i.e. q is far from p in
//! the KL(p‖q) sense (Yao et al. 2018 §3). It does not say *how* q is wrong. For a mean-field
//! Gaussian on a posterior with correlated parameters this is expected even when the fit is
//! right: minimising KL(q‖p) over diagonal Gaussians gives marginal sds that are too narrow
//! (for a Gaussian p, σ_i² = 1/(Σ⁻¹)_ii ≤ Σ_ii) and no correlations, while the means of a
//! Gaussian p are exact. Measured on examples/labour (d = 8, seed 1): QBVI `--diagonal`, IVON,
//! variational Laplace and QNVB have means within 0.05 posterior sd of NUTS but the sd of
//! `alpha` 0.074–0.082 against 0.65, k̂ 0.87–1.01, PSIS ESS 25–33 of 4000; QBVI `--full` and
//! MGVB there give k̂ 0.32–0.42 and the NUTS sds. So the warning claims the means are off only
//! when importance reweighting showed it ([`fit::ViGate::means_moved`]).

use crate::fit::{self, FitDetails, FitResult, ViDiagnostics};
use crate::inference::qbvi::Covariance;

/// Why a fit of the QBVI family (QBVI and the survey's methods) is not a converged optimum
/// although its exit rule fired, as `:fit` and `bayesc fit` say it: the ELBO ran off
/// ([`fit::diverged_phrase`]), the steps made q worse or q is still moving
/// ([`fit::not_converged_phrase`]), q drifts along a direction without a mode, q collapsed to
/// a point, or updates were skipped by the positive-definiteness guard. `None` when none holds.
/// Shared by `bayesc fit` (its "converged:" line), the REPL's `:fit`, `:diagnostics` and
/// `:fits`, so that no view calls a fit converged that another calls not converged ([X]:
/// fresh-user findings: session 19, `:diagnostics` said "converged" after an IVON fit whose
/// steps made q worse; session 20, `:fit` said "converged" for a QBVI fit whose q collapsed to
/// a point, which `bayesc fit` called not converged).
pub fn exit_rule_not_converged(
    r: &FitResult,
    q: &crate::inference::qbvi::QbviFit,
    options: &fit::FitOptions,
) -> Option<String> {
    if let Some(d) = fit::diverged_phrase(q, r.method) {
        return Some(format!("{} diverged: {d}", r.method.display_name()));
    }
    // before the other causes but a q that is no approximation (`unusable`), as `bayesc fit`
    // says it: it is also why a refinement fails
    if let Some(u) = r.vi.as_ref().and_then(|v| v.undefined.as_ref())
        && q.unusable.is_none()
    {
        return Some(u.phrase());
    }
    if let Some(w) = fit::not_converged_phrase(q, r, options) {
        return Some(w);
    }
    if let Some(v) = &r.vi {
        if !v.unbounded.is_empty() {
            return Some(format!(
                "q drifts along {}, where the density has no interior mode",
                crate::words::name_list(&v.unbounded, 6)
            ));
        }
        if !v.collapsed.is_empty() {
            return Some("the approximation collapsed to a point".to_string());
        }
    }
    (q.skipped_steps > 0).then(|| {
        format!(
            "{} of {} updates were skipped by the positive-definiteness guard, so q stopped \
             moving rather than reaching the optimum",
            q.skipped_steps, q.iterations
        )
    })
}

/// Why a variational fit (QBVI, QNVB and the survey's methods) is not a converged optimum, in
/// the words of `bayesc fit`'s WARNING line, without its prefix: the ELBO ran off, the
/// iteration cap came first, the run was interrupted, or the exit rule fired but
/// [`exit_rule_not_converged`] (or, for QNVB, drift or a moving q) finds a cause. `None` when
/// the fit converged, and for methods without such a verdict (MCMC, optimize, Laplace,
/// Pathfinder). Read by `bayesc evaluate`, which scores the fit, and by saved fits, whose
/// `bayesc predict` caveat then names the real cause and its remedy ([X]: fresh-user finding,
/// session 21: `evaluate` scored a variational Laplace fit whose ELBO ran to 1.2e11 without a
/// word, and `predict` blamed "the iteration cap or drift" on a QNVB fit stopped by a variance
/// mismatch, advising more iterations that did not help).
pub fn vi_not_converged(r: &FitResult, options: &fit::FitOptions) -> Option<String> {
    use crate::inference::qbvi::StopReason;
    use crate::inference::qnvb::QnvbStop;
    let cap = |iterations: usize| {
        format!(
            "it hit its iteration cap ({}) before its exit rule fired",
            crate::words::counted(iterations, "iteration")
        )
    };
    let interrupted = |iterations: usize| {
        format!(
            "it was interrupted after {}",
            crate::words::counted(iterations, "iteration")
        )
    };
    let drifting = |v: &ViDiagnostics| {
        (!v.unbounded.is_empty()).then(|| {
            format!(
                "q drifts along {}, where the density has no interior mode",
                crate::words::name_list(&v.unbounded, 6)
            )
        })
    };
    match &r.details {
        FitDetails::Qbvi(f) => match f.stop {
            StopReason::Interrupted => Some(interrupted(f.iterations)),
            StopReason::MaxIterations => Some(
                fit::diverged_phrase(f, r.method)
                    .map(|d| format!("{} diverged: {d}", r.method.display_name()))
                    .unwrap_or_else(|| cap(f.iterations)),
            ),
            // MC dropout whose objective never became finite took no step (the line of
            // `output::report::mcdropout_stop_line`): its weights are the start, not trained
            StopReason::ExitRule
                if r.method == fit::Method::Mcdropout && !f.best_smoothed_elbo.is_finite() =>
            {
                Some(format!(
                    "MC dropout's training objective was {} at every iteration, so the weights \
                     were not trained",
                    fit::fmt_elbo(f.best_smoothed_elbo)
                ))
            }
            StopReason::ExitRule => exit_rule_not_converged(r, f, options),
        },
        FitDetails::Qnvb(f) => match f.stop {
            QnvbStop::Interrupted => Some(interrupted(f.iterations)),
            QnvbStop::MaxIterations => Some(cap(f.iterations)),
            QnvbStop::Converged => {
                r.vi.as_ref()
                    .and_then(|v| drifting(v).or_else(|| v.moving.clone()))
            }
        },
        _ => None,
    }
}

/// The family of q for the wording: `Some(d)` for a mean-field (diagonal) Gaussian in d ≥ 2
/// unconstrained coordinates, `None` for an approximation that has correlations (full-covariance
/// VI, Laplace, Pathfinder's mixture) or a single coordinate.
fn mean_field_dim(result: &FitResult) -> Option<usize> {
    match &result.details {
        FitDetails::Qbvi(f) if f.family == Covariance::Diagonal => Some(f.mean.len()),
        FitDetails::Qnvb(f) => Some(f.mean.len()),
        _ => None,
    }
    // with one coordinate there is no correlation to miss
    .filter(|&d| d > 1)
}

/// Whether importance reweighting widened some coordinate's sd beyond the gate's tolerance
/// (e^[`fit::vi_gate::LOG_SD_SHIFT_MAX`]): q is narrower than the posterior there. PSIS
/// resampling then cannot correct the draws shown, whatever k̂ says: they are q's own draws,
/// which do not reach the posterior's tails, and k̂ from a too-narrow Gaussian q reads low
/// (`fit::vi_gate`, "misses"). Measured on the separated logistic regression
/// (tests/fixtures/khat, posterior of b 84.7 ± 59.0): QBVI seed 1 with `--psis-resample` has
/// k̂ 0.32, reweighting widens sd(b) by 1.52, and the resampled draws give 64.6 ± 37.1 — they
/// used to be called "usable".
pub(super) fn too_narrow(vi: &ViDiagnostics) -> bool {
    vi.gate
        .sd_shift
        .as_ref()
        .is_some_and(|(_, v)| *v > fit::vi_gate::LOG_SD_SHIFT_MAX)
}

/// Whether `result` is a Gaussian fit from the random start the user asked for
/// (`--random-init`) whose steps made q worse ([`fit::worsened_phrase`]).
fn diverged_from_random_start(result: &FitResult) -> bool {
    matches!(&result.details, FitDetails::Qbvi(f) if f.random_start && f.worsened().is_some())
}

/// The WARNING line for a fit whose q collapsed to a point in `list`
/// ([`fit::ViDiagnostics::collapsed`]): [`fit::collapse_warning_for`], except after steps from
/// a random start that made q worse (EMGVB on labour from `--random-init`, seeds 1–4), where the
/// collapse is the end of that divergence and the remedy is the start at the mode.
pub(super) fn collapse_warning(
    result: &FitResult,
    list: &str,
    unpriored: Option<&[String]>,
) -> String {
    if diverged_from_random_start(result) {
        format!(
            "WARNING: the approximation collapsed to a point in {list} after the steps from the \
             random start made q worse (see above): start at the mode (drop --random-init: the \
             default), or use --method nuts. The summary above is not a posterior."
        )
    } else {
        fit::collapse_warning_for(list, unpriored)
    }
}

/// The cause of sds that importance reweighting shows off for the methods whose precision is
/// the empirical Fisher (Vadam and VOGN, `survey_vi.md` §11–§12): the squared per-example or
/// minibatch gradients, not the ELBO's curvature, so their sds are off even where a Gaussian
/// is exact and `--method nuts` is not the remedy, a method that targets the ELBO's optimum is
/// ([X]: fresh-user finding, session 21: VOGN on `y ~ normal(mu, 1)`, N = 20, whose posterior
/// is Gaussian, was told "Use --method nuts"; IVON and QBVI give its sd 0.224 exactly). `None`
/// for the other methods.
fn fisher_sds(result: &FitResult) -> Option<&'static str> {
    match result.method {
        fit::Method::Vogn => Some(
            " VOGN's precision is the empirical Fisher (per-example squared gradients, see the \
             note above), not the ELBO's curvature, so its sds are off even where the posterior \
             is Gaussian.",
        ),
        fit::Method::Vadam => Some(
            " Vadam's precision comes from squared minibatch gradients (see the note above), not \
             the ELBO's curvature, so its sds are off even where the posterior is Gaussian.",
        ),
        _ => None,
    }
}

/// The WARNING line (no trailing newline) of a fit whose gate verdict is
/// [`fit::ViVerdict::MeansUnreliable`] and whose draws are not already corrected by PSIS
/// resampling: `khat` is the pooled k̂ as printed; `remedy` the advice when no better one
/// follows from the family ("Use --method nuts.", or the pointer to the drift warning when q
/// drifted along an improper direction, which no other method fixes); `not_converged` whether
/// the fit's own checks found it short of an optimum (then q is not what the family would give,
/// and the warning says so instead of blaming the family or the posterior's shape).
pub(super) fn means_unreliable_warning(
    result: &FitResult,
    vi: &ViDiagnostics,
    khat: &str,
    remedy: &str,
    not_converged: bool,
) -> String {
    let reasons = vi.gate.reasons.join("; ");
    let weights_ok = vi.khat < fit::vi_gate::PSIS_KHAT_RESAMPLE_OK
        && vi.psis_ess >= fit::vi_gate::PSIS_ESS_FLOOR * vi.n_draws as f64;
    let resample = if vi.resampled && weights_ok && too_narrow(vi) {
        ", and the PSIS resampling of the draws shown cannot widen them: they are q's own \
         draws, which do not reach as far as the posterior (k-hat reads low for a q that is too \
         narrow)"
            .to_string()
    } else if vi.resampled {
        format!(
            ", and with k-hat = {khat} the PSIS resampling of the draws shown cannot correct it (it needs k-hat < {} and a PSIS ESS of at least {:.0})",
            fit::vi_gate::PSIS_KHAT_RESAMPLE_OK,
            fit::vi_gate::PSIS_ESS_FLOOR * vi.n_draws as f64
        )
    } else {
        String::new()
    };
    if let Some(u) = &vi.undefined {
        // the not-converged line of a Gaussian fit gives the cause and the bound to declare
        let why = match &result.details {
            FitDetails::Qbvi(q)
                if q.stop == crate::inference::qbvi::StopReason::ExitRule
                    && q.unusable.is_none()
                    && fit::diverged_phrase(q, result.method).is_none() =>
            {
                "see above".to_string()
            }
            _ => u.phrase(),
        };
        return format!(
            "WARNING: the approximation is unreliable: q puts mass where the log density cannot \
             be evaluated ({why}), so the means, sds and intervals above are not the \
             posterior's{resample}."
        );
    }
    if vi.gate.means_moved {
        return format!(
            "WARNING: the approximation is unreliable: its means are off, not only its spread and tails ({reasons}){resample}. {remedy}"
        );
    }
    // the remedy for a mean-field q whose spread is the problem: a family with correlations
    let mean_field = mean_field_dim(result);
    let mf_advice = |d: usize| {
        if !vi.unbounded.is_empty() {
            return remedy.to_string();
        }
        let cost = if d > crate::inference::vi::FULL_COVARIANCE_MAX_DIM {
            format!("; O(d^3) per step at d = {d}")
        } else {
            String::new()
        };
        // the methods that have a full family of their own: dropping --diagonal is the remedy
        let own = match result.method {
            fit::Method::Von => "--method von --full, ",
            fit::Method::Ngvi => "--method ngvi without --diagonal, ",
            _ => "",
        };
        format!(
            "For calibrated sds and the correlations use a full-covariance family ({own}--method qbvi --full, mgvb or emgvb{cost}) or --method nuts."
        )
    };
    if !vi.gate.weights_unreliable {
        // only check (b) on an sd fired: the weights are trustworthy and show the spread off
        let (why, advice) = match (fisher_sds(result), mean_field) {
            (Some(why), Some(d)) => (why, mf_advice(d)),
            (Some(why), None) => (
                why,
                "For the ELBO's sds use --method ivon or qbvi (exact for a Gaussian posterior)."
                    .to_string(),
            ),
            (None, mean_field) => match mean_field {
                Some(d) => (
                    " That is expected of a mean-field (diagonal) Gaussian when the parameters are correlated: its marginal sds are too narrow and it has no correlations.",
                    mf_advice(d),
                ),
                None => ("", remedy.to_string()),
            },
        };
        return format!(
            "WARNING: the approximation is unreliable: its sds are off ({reasons}), while importance reweighting moves no mean by more than {} sd{resample}.{why} {advice}",
            fit::vi_gate::MEAN_SHIFT_MAX
        );
    }
    if !vi.psis_ess.is_finite() {
        return format!(
            "WARNING: the approximation is unreliable ({reasons}): q puts mass where the log density is -inf or undefined, so its draws cannot be weighed against the posterior{resample}. {remedy}"
        );
    }
    let far = format!(
        "WARNING: the approximation is not close to the posterior in the KL(p||q) sense (it misses mass that the posterior has): the importance weights p/q are unreliable ({reasons}){resample}."
    );
    if not_converged && vi.unbounded.is_empty() {
        return format!(
            "{far} The fit did not converge (see above), so this q is not the optimum of its \
             family and says nothing yet about the shape of the posterior; follow the advice \
             above."
        );
    }
    match mean_field {
        // no interior mode (a funnel or a flat direction): a full-covariance Gaussian fails
        // there as well, so the mean-field explanation and its remedy would mislead
        Some(_) if vi.no_mode.is_some() => format!(
            "{far} A Gaussian cannot follow this posterior well: the log density has no interior mode (see the start note below: a funnel, e.g. a hierarchical scale going to 0, or a flat direction), so the means, sds and intervals above may all be off. {remedy}"
        ),
        // Vadam and VOGN: their sds are not the ELBO's (on labour at --batch-size 32 Vadam's
        // are 3.0–3.6 times the mean-field optimum's, too wide, not too narrow)
        Some(d) if fisher_sds(result).is_some() => format!(
            "{far}{} For the mean-field ELBO's sds use --method ivon or qbvi --diagonal. {}",
            fisher_sds(result).unwrap_or_default(),
            mf_advice(d)
        ),
        Some(d) => format!(
            "{far} That is expected of a mean-field (diagonal) Gaussian when the parameters are correlated: its marginal sds are too narrow (underdispersed) and it has no correlations, so the sds and intervals above understate the uncertainty; its means can still be close (they are exact for a Gaussian posterior), but these weights cannot check them. {}",
            mf_advice(d)
        ),
        None => format!(
            "{far} q can already represent the correlations, so the posterior is not Gaussian-shaped here (skewed, heavy-tailed, a funnel or several modes) and the means, sds and intervals above may all be off. {remedy}"
        ),
    }
}
