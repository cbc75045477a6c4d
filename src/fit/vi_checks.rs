//! The checks that follow a variational or Laplace fit: PSIS k-hat of the approximation
//! (Yao et al. 2018), collapsed coordinates, directions along which q drifts without bound
//! (an improper posterior), the start message, and the smoothed ELBO trace.

use super::*;

/// VI diagnostics of a fitted approximation q (specs/diagnostics.md §6.2): the PSIS k̂ and an
/// ELBO estimate from S draws ζ_s ~ q, and the trace of the fit.
#[derive(Clone, Debug)]
pub struct ViDiagnostics {
    /// Pareto k̂ of log r_s = L(ζ_s) − log q(ζ_s); +∞ when the ratios are not finite or the
    /// tail fit failed, −∞ when they are constant (q ∝ target). < 0.5 good, 0.5–0.7 usable,
    /// > 0.7 unreliable (Yao et al. 2018 §3.2).
    pub khat: f64,
    /// PSIS effective sample size of the S draws.
    pub psis_ess: f64,
    /// S, the number of draws of q used.
    pub n_draws: usize,
    /// Monte Carlo ELBO estimate mean_s(log r_s) from the same draws (log-density scale of the
    /// model, with the Jacobian).
    pub elbo: f64,
    /// (iteration, ELBO, smoothed ELBO) per iteration of the fit; empty for Laplace. The
    /// smoothed value is NaN before the smoothing window is full.
    pub trace: Vec<(usize, f64, f64)>,
    /// Whether the reported draws were importance-resampled.
    pub resampled: bool,
    /// Parameters whose marginal in q has collapsed to a point (see [`collapsed_parameters`]):
    /// (name, mean, sd) on the constrained scale. Non-empty means the fit is degenerate,
    /// whatever k̂ says.
    pub collapsed: Vec<(String, f64, f64)>,
    /// Why the fit did not start at the mode although asked to (`ViInit::Mode`): the log
    /// density has no interior mode (see `find_mode`), so the fit started from the random point
    /// of specs/qbvi.md §11. `None` otherwise (and always for Laplace).
    pub no_mode: Option<String>,
    /// When `no_mode` is set: the unconstrained coordinates (parameter names when every
    /// parameter is one coordinate, else `zeta[i]`, 1-based) along which q would gain ELBO by
    /// shifting its mean (see [`UNBOUNDED_GAIN`]): the fit drifted along a direction in
    /// which the log density does not decay, i.e. the posterior is improper there. Empty
    /// otherwise.
    pub unbounded: Vec<String>,
    /// Why the fit had not converged although its exit rule fired: q's mean was still moving
    /// ([`crate::inference::vi::GaussianFit::drift`], the phrase of [`drift_phrase`] with the
    /// coordinate named), or it was off the optimum of the ELBO in its mean
    /// ([`super::stationarity`], the phrase of [`off_optimum_phrase`]). `None` otherwise.
    pub moving: Option<String>,
    /// What of the summary can be trusted, and why ([`super::vi_gate`]: k̂ over replicate
    /// batches, the sd of the log ratios, the PSIS ESS and the reweighted means and sds).
    pub gate: ViGate,
    /// The draws of q at which the log density could not be evaluated (a recoverable error, or
    /// −∞), which make the ELBO estimate −∞; `None` when every draw was evaluated.
    pub undefined: Option<UndefinedDraws>,
}

/// The warning for a non-empty [`ViDiagnostics::collapsed`] list; `list` names the collapsed
/// parameters. Not knowing which parameters have priors: see [`collapse_warning_for`]. Shared
/// by the CLI and the REPL renderers.
pub fn collapse_warning(list: &str) -> String {
    collapse_warning_for(list, None)
}

/// [`collapse_warning`] with `unpriored`, which lists the parameters without a prior (`Checked::unpriored`) when
/// known: when it is known to be empty the advice does not blame priors but names the other
/// causes (a funnel, or q stuck where the log density is extremely steep).
pub fn collapse_warning_for(list: &str, unpriored: Option<&[String]>) -> String {
    match unpriored {
        Some([]) => format!(
            "WARNING: the approximation collapsed to a point in {list}. Every parameter has a \
             prior, so the cause is not an improper flat prior: q got stuck where the log \
             density is extremely steep (e.g. a recursion that explodes for some parameter \
             values, or a start far from the posterior), or the posterior has a funnel (a \
             hierarchical scale going to 0) that a Gaussian cannot follow. Use --method nuts, \
             try another --seed, or a non-centred parameterisation. The summary above is not a \
             posterior."
        ),
        Some(names) => format!(
            "WARNING: the approximation collapsed to a point in {list}: the posterior may be \
             improper ({} get an improper flat prior) or unbounded, or has a funnel that a \
             Gaussian cannot follow; give those parameters proper priors, try a non-centred \
             parameterisation, or use --method nuts. The summary above is not a posterior.",
            names
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        None => format!(
            "WARNING: the approximation collapsed to a point in {list}: the posterior is \
             improper or unbounded, or has a funnel (a hierarchical scale going to 0) that a \
             Gaussian cannot follow, or q got stuck where the log density is extremely steep; \
             check priors, try a non-centred parameterisation, or use --method nuts. The \
             summary above is not a posterior."
        ),
    }
}

/// Why a Gaussian variational fit has not converged when its ELBO ended below where it
/// started ([`crate::inference::vi::GaussianFit::worsened`]), naming both values and the
/// cause, without a remedy; `None` when it did not. [`worsened_phrase`] adds the remedy. From
/// the mode (or a start the fit layer chose) the cause is a step size too large for the model,
/// as the digits BNN showed (docs/bnn_methods.md). From a random start the user asked for
/// ([`crate::inference::vi::GaussianFit::random_start`]) it is the start: far from the
/// posterior the log density is steep and the steps overshoot, and a smaller step size does
/// not cure that — measured on examples/labour, MGVB from the random start (seeds 1–3)
/// diverged at --step-size 0.01 and 0.001 and stalled far from the posterior at 0.0001 (not
/// converged after 3000–3700 iterations), as did EMGVB, QBVI (seed 1), IVON and QNVB at their
/// defaults, while every one converges from the mode.
pub fn worsened_cause(fit: &crate::inference::vi::GaussianFit) -> Option<String> {
    worsened_text(fit, fit.random_start)
}

/// [`worsened_cause`] with the start given (`random_start`: a random start the user asked for).
fn worsened_text(fit: &crate::inference::vi::GaussianFit, random_start: bool) -> Option<String> {
    let (start, end) = fit.worsened()?;
    let (start, end) = (fmt_elbo(start), fmt_elbo(end));
    let what = if fit.epoch_elbo.is_empty() {
        format!(
            "the ELBO ended at {end}, below the {start} of the initial approximation, so the \
             steps made q worse rather than better"
        )
    } else {
        format!(
            "the full-data ELBO averaged {end} over the last epochs, below the {start} of the \
             initial approximation, so the steps made q worse rather than better"
        )
    };
    Some(if random_start {
        format!(
            "{what}: the random start (--random-init) is far from the posterior, where the log \
             density is steep and the steps overshoot"
        )
    } else {
        format!(
            "{what}: the step size is too large for this model (the steps overshoot where the likelihood is steep or saturated, or the minibatch gradient is \
             too noisy for them)"
        )
    })
}

/// An ELBO value for a message: three decimals, or three significant digits in exponent form
/// when |v| ≥ 10⁹ (a diverged fit's ELBO can have hundreds of digits).
pub fn fmt_elbo(v: f64) -> String {
    if v.is_finite() && v.abs() >= 1e9 {
        format!("{v:.3e}")
    } else {
        format!("{v:.3}")
    }
}

/// Why a Gaussian fit of `result` (whose details are `fit`) is not converged, whatever
/// stopped it, for `bayesc fit` and the REPL alike; `None` when nothing says so. In order: a q
/// that is not an approximation ([`crate::inference::vi::GaussianFit::unusable`], whose ELBO
/// falls because of that), an ELBO that ended below its start ([`worsened_phrase`]; "start at
/// the mode" only where the user asked for the random start, as above d = 200 a minibatch fit
/// starts there by default), then the drift and stationarity checks (`ViDiagnostics::moving`).
pub fn not_converged_phrase(
    fit: &crate::inference::vi::GaussianFit,
    result: &super::FitResult,
    options: &super::FitOptions,
) -> Option<String> {
    let moving = result.vi.as_ref().and_then(|v| v.moving.clone());
    let random_start = options.random_start_by_request(fit.dim());
    moving
        .clone()
        .filter(|_| fit.unusable.is_some())
        .or_else(|| worsened_phrase(fit, result.method, random_start))
        .or(moving)
}

/// [`worsened_cause`] with what to do about it for a fit of `method` from a random start
/// (`random_start`) or the mode: a smaller step size, the mode start after a random one, or a
/// method whose steps do not overshoot so (QNVB, which takes no step size, or IVON, whose
/// steps are damped by its Hessian estimate), never `method` itself. `None` for Vadam and VOGN
/// from the mode ([`own_fixed_point`]).
pub fn worsened_phrase(
    fit: &crate::inference::vi::GaussianFit,
    method: Method,
    random_start: bool,
) -> Option<String> {
    let random_start = random_start || fit.random_start;
    if !random_start && own_fixed_point(method) {
        return None;
    }
    let cause = worsened_text(fit, random_start)?;
    // from a random start a smaller step does not cure it (worsened_cause)
    if random_start {
        return Some(format!(
            "{cause}; start at the mode (drop --random-init: the default), or use --method {}",
            other_methods(method, &[Method::Nuts])
        ));
    }
    Some(format!(
        "{cause}; try a smaller --step-size (a tenth of the one above), or --method {}",
        other_methods(method, &[Method::Qnvb, Method::Ivon])
    ))
}

/// The first two of `candidates` that are not `method`, joined by "or" (`qbvi or nuts`): the
/// methods a remedy suggests instead of the one that was run, which it never names.
pub fn other_methods(method: Method, candidates: &[Method]) -> String {
    let others: Vec<String> = candidates
        .iter()
        .filter(|m| **m != method)
        .take(2)
        .map(|m| m.to_string())
        .collect();
    others.join(" or ")
}

/// What a fit whose exit rule fired while the mean of q was still moving shows
/// ([`crate::inference::vi::GaussianFit::drift`]), naming the coordinate from `names` (the
/// parameter names when there is one per unconstrained coordinate, else `zeta[i]`); `None`
/// when it was not moving. A cause without a remedy: [`drift_phrase`] adds that.
pub fn drift_cause(fit: &crate::inference::vi::GaussianFit, names: &[String]) -> Option<String> {
    let dr = fit.drift.as_ref()?;
    let name = crate::inference::flat::coordinate_names(names, fit.dim(), &[dr.coordinate]);
    Some(format!(
        "the mean of {} was still moving ({:.1} sds of q over the last {} iterations) when the \
         smoothed ELBO stopped improving",
        name.first().map(String::as_str).unwrap_or("a coordinate"),
        dr.sds,
        dr.iterations
    ))
}

/// What to do about a variational fit of `method` that stopped short of the optimum: from a
/// random start, start at the mode; from the mode, `cause` (why the steps fell short) and
/// another step size. Either way another method (not `method` itself).
pub(super) fn not_converged_remedy(random_start: bool, method: Method, cause: &str) -> String {
    let others = other_methods(method, &[Method::Qbvi, Method::Nuts]);
    if random_start {
        format!("start at the mode (drop --random-init), or use --method {others}")
    } else if method == Method::Qnvb {
        // QNVB takes no step size (specs/qnvb.md)
        format!("{cause}; use --method {others}")
    } else {
        format!("{cause}; try another --step-size, or use --method {others}")
    }
}

/// The phrase for a fit whose Newton refinement of the mean did not settle
/// ([`super::refine::Refinement::settled`]): its last step moved `name` by `last` sds of the
/// curvature's Gaussian, or a later step was refused (`refused`). From a random start
/// (`random_start`) the remedy is the mode start, as for [`drift_phrase`]; from the mode, a
/// minibatch fit (`minibatch`) is put down to its batch noise.
pub fn unsettled_phrase(
    name: &str,
    last: f64,
    refused: bool,
    random_start: bool,
    method: Method,
    minibatch: bool,
) -> String {
    let how = if refused {
        format!("a further step of {name} was too long to take")
    } else {
        format!("its last step still moved {name} by {last:.2} posterior sds")
    };
    let cause = if minibatch && method == Method::Qnvb {
        // QNVB takes no step size (specs/qnvb.md)
        "the batches' noise left the mean far from the optimum: try a larger --batch-size"
    } else if minibatch {
        "the batches' noise left the mean far from the optimum: try a larger --batch-size or a \
         smaller --step-size"
    } else {
        "the mean stopped far from the optimum"
    };
    let remedy = not_converged_remedy(random_start, method, cause);
    format!(
        "the Newton refinement of the mean after the exit rule did not settle ({how}; at an \
         optimum its steps fall below {}), so q's mean is not at the ELBO's optimum: {remedy}",
        super::refine::REFINE_SETTLED
    )
}

/// The phrase for a full-batch variational-Laplace fit whose Newton refinement
/// after the exit rule did not settle (`how`: what its last step did). Variational Laplace's
/// fixed point is set by the curvature at its mean (`specs/survey_vi.md` §16: with the paper
/// form's fallback, [`crate::inference::vi::vlaplace::fit_vlaplace`], the mode and σ² =
/// 1/curvature there), not by its step size, so the remedy is another method, not the
/// "another --step-size" of [`unsettled_phrase`] ([X]). Measured: on `real<lower=0> p;
/// p ~ normal(1, 1)` the fit ends at the mode ζ = 0.481, 0.66 posterior sds from the
/// mean-field optimum's 0.115, and on eight schools at tau's mode (about 29, NUTS mean 3.6);
/// the refinement did not settle at seeds 1 and 3 of the first and every seed of the second.
pub fn vlaplace_unsettled_phrase(how: &str) -> String {
    format!(
        "variational Laplace's fixed point (its mean and the curvature there) lies far from the \
         mean-field ELBO's optimum on this model, and the Newton refinement after the exit rule \
         did not bring q there ({how}; at an optimum its steps fall below {}), so q is not at \
         the ELBO's optimum. Its step size does not move that fixed point: use --method qbvi \
         or nuts",
        super::refine::REFINE_SETTLED
    )
}

/// [`drift_cause`] with what to do about it. The exit rule, not the iteration cap, stopped the
/// run, so a larger --max-iter does not help: from a random start (`random_start`) the remedy
/// is the mode start (on labour, IVON from a random point moved alpha 3.8 sds over its last
/// 750 iterations; from the Laplace start it converges); from the mode, the steps are too
/// noisy or too small along that direction.
pub fn drift_phrase(
    fit: &crate::inference::vi::GaussianFit,
    names: &[String],
    random_start: bool,
    method: Method,
) -> Option<String> {
    let cause = drift_cause(fit, names)?;
    let remedy = not_converged_remedy(
        random_start,
        method,
        "the steps are too small along a poorly scaled direction or too noisy to show progress \
         in the ELBO",
    );
    Some(format!("{cause}, so q is not at an optimum: {remedy}"))
}

/// "M = 1 row" or "M = 50 rows".
fn rows(m: usize) -> String {
    format!("M = {m} row{}", if m == 1 { "" } else { "s" })
}

/// A minibatch fit's batch size and how far the batch noise moved its mean between epochs
/// (`fit::stationarity::epoch_spread`, in sds of q), for [`off_optimum_phrase`].
#[derive(Clone, Copy, Debug)]
pub struct BatchNoise {
    /// M, the rows per batch.
    pub batch_size: usize,
    /// N, the rows of the data (`--batch-size N` fits on the full data).
    pub n_obs: usize,
    /// The largest sd of the last epochs' average means over the sd of q (0 when not measured).
    pub spread: f64,
    /// β of a QBVI fit (`FitOptions::qbvi_step_size`), for the advice to use a tenth of it;
    /// `None` for the other methods.
    pub step_size: Option<f64>,
}

/// x with two significant digits and no exponent (0.00089, 0.0089, 0.050), for a value the
/// user is advised to type.
fn two_digits(x: f64) -> String {
    let digits = (1 - x.abs().log10().floor() as i32).max(0) as usize;
    format!("{x:.digits$}")
}

/// The factor by which the advice for a minibatch QBVI fit that is not converged lowers its step
/// size ([X], measured). After the control variates followed the batch
/// (`inference::vi::BatchAnchor`), the remaining cause is the batch noise of the mean iterate,
/// whose spread in sds of q is ≈ √(β·(N/M − 1)/2) and whose correlation time 1/β on
/// correlated coordinates outlasts the averaged epochs. On labour (seeds 1–5, M = 5, 16, 32,
/// 100, 200, 376), 5 of 30 default fits were not converged (M = 16, 32 seed 2; M = 100 seed 4;
/// M = 200 seeds 2, 3); a third of β left two of them 0.16 and 0.19 NUTS sds off, a tenth
/// converged all five within 0.15 (0.11–0.14). Raising --batch-size lowers the noise less
/// reliably: at M ≥ 200 the step size is already the full-data 0.05.
pub const QBVI_STEP_ADVICE_FACTOR: f64 = 10.0;

/// The phrase for a fit whose exit rule fired away from an optimum of the ELBO
/// ([`super::stationarity::OffOptimum`]), with the remedy for its start (`random_start`); the
/// coordinate is named as by [`drift_cause`]. A minibatch fit (`batch`) is put down to the
/// noise of its batches, with the remedies that removed it on labour (a larger --batch-size,
/// or a smaller --step-size for the methods that take one), and the spread of its epoch means
/// when above [`super::stationarity::NOISY_SPREAD`].
pub fn off_optimum_phrase(
    off: &super::stationarity::OffOptimum,
    names: &[String],
    d: usize,
    random_start: bool,
    method: Method,
    batch: Option<BatchNoise>,
) -> String {
    use super::stationarity::OffOptimum;
    let coordinate = match off {
        OffOptimum::Mean { coordinate, .. }
        | OffOptimum::Joint { coordinate, .. }
        | OffOptimum::Scale { coordinate, .. }
        | OffOptimum::Noisy { coordinate, .. }
        | OffOptimum::Offset { coordinate, .. }
        | OffOptimum::Diagonal { coordinate, .. } => *coordinate,
    };
    let name = crate::inference::flat::coordinate_names(names, d, &[coordinate]);
    let name = name.first().map(String::as_str).unwrap_or("a coordinate");
    let remedy = not_converged_remedy(
        random_start,
        method,
        "the steps stalled (a step size too small, or variances that shrank until the mean \
         could not move)",
    );
    let what = match off {
        // a cause with its own remedy, whatever the batch size
        OffOptimum::Diagonal {
            sds,
            rms,
            beyond,
            gradients,
            ..
        } => return diagonal_phrase(name, d, *sds, *rms, *beyond, *gradients, method),
        OffOptimum::Mean { sds, t, .. } => format!(
            "the ELBO's gradient in the mean of q is not zero: one Newton step would move the \
             mean of {name} by {sds:.1} sds of q ({t:.0} Monte Carlo standard errors from zero)"
        ),
        OffOptimum::Joint { sds, gain, .. } => format!(
            "the ELBO's gradient in the mean of q is not zero: one Newton step of the mean would \
             raise the ELBO by {gain:.1} nats, moving {name} by {sds:.1} sds of q (along \
             correlated coordinates, whose own steps are short)"
        ),
        OffOptimum::Offset { sds, .. } => format!(
            "the mean of q is not at the ELBO's optimum: one Newton step would move {name} by \
             {sds:.2} posterior sds (estimated from the log density's curvature under q) along \
             correlated coordinates, where the ELBO is nearly flat"
        ),
        OffOptimum::Scale { ratio, .. } if *ratio <= 0.0 => format!(
            "q's variance of {name} does not match the curvature of the log density under q \
             (which is not negative there on average)"
        ),
        OffOptimum::Scale { ratio, .. } => format!(
            "q's variance of {name} is {ratio:.2} times the inverse of the log density's \
             curvature under q (1 at an optimum of the ELBO)"
        ),
        OffOptimum::Noisy { spread, .. } => format!(
            "the batch noise moves the epoch-averaged mean of {name} by {spread:.1} sds of q \
             from one epoch to the next, more than q's own width, so the average of the last \
             epochs that is returned still carries that noise"
        ),
    };
    let lower = if method == Method::Qnvb {
        ""
    } else {
        " or lower --step-size"
    };
    let Some(b) = batch else {
        if matches!(off, OffOptimum::Offset { .. }) && !random_start {
            // the stochastic steps' own noise (draws of q), not a stall: on labour, full-batch
            // IVON at seed 3 was 0.27 posterior sds off at lr 0.1 and 0.14 at 0.05 (measured)
            return format!(
                "{what}; the average of the last iterates that is returned still carries the \
                 noise of the stochastic steps: lower --step-size, or use --method {}",
                other_methods(method, &[Method::Qbvi, Method::Nuts])
            );
        }
        return format!(
            "{what}, so the smoothed ELBO stopped improving short of the optimum: {remedy}"
        );
    };
    let moved = if b.spread > super::stationarity::NOISY_SPREAD
        && !matches!(off, OffOptimum::Noisy { .. })
    {
        format!(
            " (the batch noise moves the epoch-averaged mean by up to {:.1} sds of q from one \
             epoch to the next)",
            b.spread
        )
    } else {
        String::new()
    };
    // From a random start a larger batch did not help on labour (Vadam at M = 50 stalled with
    // alpha at 0.70 and 1.75, NUTS 3.21); the mode start did.
    let remedy = if random_start {
        "start at the mode (drop --random-init), or raise --batch-size".to_string()
    } else if let Some(beta) = b.step_size {
        format!(
            "lower --step-size to {} (a tenth of this fit's {}), or raise --batch-size \
             (--batch-size {} fits on the full data)",
            two_digits(beta / QBVI_STEP_ADVICE_FACTOR),
            two_digits(beta),
            b.n_obs
        )
    } else {
        // (Vadam's default batch is one row, so the full-data fit is --batch-size N, not a
        // flag to drop)
        format!(
            "raise --batch-size{lower} (--batch-size {} fits on the full data)",
            b.n_obs
        )
    };
    match off {
        OffOptimum::Scale { .. } => format!(
            "{what}: its variances carry the noise of the curvature estimates from batches of \
             {}{moved}; {remedy}",
            rows(b.batch_size)
        ),
        OffOptimum::Noisy { .. } => format!("{what}; {remedy}"),
        OffOptimum::Mean { .. }
        | OffOptimum::Joint { .. }
        | OffOptimum::Offset { .. }
        | OffOptimum::Diagonal { .. } => format!(
            "{what}: steps on batches of {} at a constant step size leave q short of the \
             full-data optimum{moved}; {remedy}",
            rows(b.batch_size)
        ),
    }
}

/// The phrase of [`off_optimum_phrase`] for [`super::stationarity::OffOptimum::Diagonal`] (a
/// mean-field fit with d > 50, `name` its longest step's coordinate): the RMS step and the
/// remedy that was measured to work. On the diabetes BNN (d = 602) BBB, IVON and Vadam stopped
/// 0.18–0.30 sds off whether the step size was lowered or raised or the batch doubled, where
/// QBVI and QNVB, whose steps are scaled by a curvature estimate, reached 0.03–0.10
/// (`fit::diagonal_step::DIAGONAL_RMS_MAX`), so the remedy is another method, not a setting.
fn diagonal_phrase(
    name: &str,
    d: usize,
    sds: f64,
    rms: f64,
    beyond: f64,
    gradients: usize,
    method: Method,
) -> String {
    format!(
        "the mean of q is not at the ELBO's optimum: moving each coordinate of the mean alone to \
         its optimum (one Newton step, the others held) would move it by {rms:.2} sds of the log \
         density's curvature under q in root mean square over the {d} coordinates ({:.0}% of \
         them by more than {}; the longest {:.2}, {name}), from {gradients} gradients of the \
         full-data log density; the smoothed ELBO stopped improving before the steps reached it \
         (for bbb, ivon and vadam on a BNN with d = 602, neither another --step-size nor a \
         larger --batch-size changed that): use --method {}, whose steps are scaled by the \
         curvature",
        100.0 * beyond,
        super::stationarity::MEAN_OFFSET_MAX,
        sds.abs(),
        other_methods(method, &[Method::Qnvb, Method::Qbvi]),
    )
}

/// Why the end point of a variational fit is not a converged optimum of the ELBO, if it is not
/// (a phrase for messages): QBVI stopped by its exit rule after updates the positive-
/// definiteness guard skipped (the ELBO stopped improving because q stopped moving), by the
/// iteration cap, or by an interruption; QNVB by its cap or an interruption. `None` for a clean
/// stop and for the other methods.
pub fn vi_not_converged(details: &FitDetails) -> Option<String> {
    not_converged_with(details, false)
}

/// [`vi_not_converged`] for a fit `result`, which knows its method: an ELBO that ended below
/// the start's is no cause for Vadam and VOGN from the mode ([`own_fixed_point`]).
pub fn vi_result_not_converged(result: &super::FitResult) -> Option<String> {
    let expected = match &result.details {
        FitDetails::Qbvi(f) => own_fixed_point(result.method) && !f.random_start,
        _ => false,
    };
    not_converged_with(&result.details, expected)
}

/// Whether `method`'s fixed point is not the ELBO's optimum, so that its ELBO may end below the
/// Laplace start's without any overshoot: Vadam and VOGN, whose precision is the empirical
/// Fisher or the squared minibatch gradient (`survey_vi.md` §11–§12), and whose fit says so in
/// a note instead ([X]: Vadam on labour at --batch-size 32, seeds 1–6, run to its fixed point:
/// sds 3.0–3.6 times the mean-field optimum's, the full-data ELBO 25–29 nats below the start's,
/// means within 0.06 NUTS sds; "the step size is too large" was the wrong cause).
pub fn own_fixed_point(method: Method) -> bool {
    matches!(method, Method::Vadam | Method::Vogn)
}

fn not_converged_with(details: &FitDetails, worse_expected: bool) -> Option<String> {
    match details {
        FitDetails::Qbvi(f)
            if !worse_expected
                && f.stop != qbvi::StopReason::Interrupted
                && f.worsened().is_some() =>
        {
            worsened_cause(f)
        }
        FitDetails::Qbvi(f) if f.stop == qbvi::StopReason::ExitRule && f.drift.is_some() => {
            drift_cause(f, &[])
        }
        FitDetails::Qbvi(f) => match f.stop {
            qbvi::StopReason::ExitRule if f.skipped_steps == 0 => None,
            qbvi::StopReason::ExitRule => Some(format!(
                "{} of {} updates were skipped by the positive-definiteness guard, so the ELBO \
                 stopped improving because q stopped moving",
                f.skipped_steps, f.iterations
            )),
            qbvi::StopReason::MaxIterations => Some(format!(
                "the fit stopped at the iteration cap ({} iterations)",
                f.iterations
            )),
            qbvi::StopReason::Interrupted => Some("the fit was interrupted".to_string()),
        },
        FitDetails::Qnvb(f) => match f.stop {
            qnvb::QnvbStop::Converged => None,
            qnvb::QnvbStop::MaxIterations => Some(format!(
                "the fit stopped at the iteration cap ({} iterations)",
                f.iterations
            )),
            qnvb::QnvbStop::Interrupted => Some("the fit was interrupted".to_string()),
        },
        _ => None,
    }
}

/// The note or warning about the start of a variational fit ([`ViDiagnostics::no_mode`],
/// [`ViDiagnostics::unbounded`]): `None` when the fit started at the mode (or randomly on
/// request). A line starting "WARNING" when q drifted along an unbounded direction, else a
/// "note" line. Shared by the CLI and the REPL renderers; [`start_message_for`] also knows how
/// the fit stopped and which parameters have priors.
pub fn start_message(vi: &ViDiagnostics) -> Option<String> {
    start_message_for(vi, None, None)
}

/// [`start_message`] knowing [`vi_not_converged`] of the fit and the parameters without a prior
/// (`Checked::unpriored`, `None` when unknown). With `not_converged` set, q is not at an
/// optimum, so a drift says nothing about the posterior being improper and the warning names
/// that cause instead; with `unpriored` known to be empty it does not advise proper priors.
pub fn start_message_for(
    vi: &ViDiagnostics,
    not_converged: Option<&str>,
    unpriored: Option<&[String]>,
) -> Option<String> {
    let reason = vi.no_mode.as_ref()?;
    if reason.starts_with(super::mode::INTERPOLATION) && vi.unbounded.is_empty() {
        return Some(format!(
            "WARNING: {reason}. The fit started from a random point, and the approximation may \
             not represent the posterior."
        ));
    }
    Some(if vi.unbounded.is_empty() {
        format!("note: start: random (the density has no interior mode: {reason})")
    } else if reason.contains(super::mode::FUNNEL_NECK) {
        // the mode search measured a funnel's neck: the drift check's direction is then the
        // ridge the meeting parameters share (mu + theta on the centred eight schools), which
        // a Gaussian q does not settle along; calling it unidentified blamed the data ([X],
        // fresh-user finding, session 21: IVON)
        format!(
            "WARNING: the density has no interior mode: {reason}. The approximation did not \
             settle along {}{} (shifting its mean there does not lower the ELBO), which a \
             Gaussian q does in a funnel and which does not by itself mean that the data leave \
             that direction unidentified. The summary above is not a posterior.",
            crate::words::name_list(
                &vi.unbounded
                    .iter()
                    .map(|u| u.replace(crate::inference::flat::UNIDENTIFIED, ""))
                    .collect::<Vec<_>>(),
                6
            ),
            not_converged.map_or(String::new(), |c| format!(" and did not converge ({c})"))
        )
    } else if let Some(cause) = not_converged {
        match unpriored {
            // every parameter has a prior: the drift is the unfinished fit, not impropriety
            Some([]) => format!(
                "WARNING: the approximation did not converge ({cause}); it is still moving \
                 along {} after a random start (the density has no interior mode there: \
                 {reason}). The summary above is not a posterior: use --method nuts, or check \
                 the initial values and the model along it, where the log density is flat (a \
                 term multiplied by 0, say) or extremely steep.",
                crate::words::name_list(&vi.unbounded, 6)
            ),
            // both causes are possible: say which evidence points where
            _ => format!(
                "WARNING: the approximation did not converge ({cause}) and is still moving along \
                 {} after a random start (the density has no interior mode there: {reason}); \
                 the posterior may be improper{}, or the fit was stopped too early. The summary \
                 above is not a posterior: check the priors, or use --method nuts.",
                crate::words::name_list(&vi.unbounded, 6),
                match unpriored {
                    Some(names) => format!(
                        " ({} get an improper flat prior)",
                        names
                            .iter()
                            .map(|n| format!("`{n}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    None => String::new(),
                }
            ),
        }
    } else if unpriored == Some(&[]) {
        format!(
            "WARNING: the posterior may be improper or unbounded: the density has no interior \
             mode ({reason}), and the approximation drifts along {}. Every parameter has a \
             prior, so check that the likelihood does not grow without bound along it (e.g. a \
             scale going to 0 at a repeated value) and that the data identify it; use --method \
             nuts to confirm. The summary above is not a posterior.",
            crate::words::name_list(&vi.unbounded, 6)
        )
    } else {
        format!(
            "WARNING: the posterior may be improper: the density has no interior mode ({reason}), \
             and the approximation drifts along {}; give the parameters proper priors \
             or check that the data identify them. The summary above is not a posterior.",
            crate::words::name_list(&vi.unbounded, 6)
        )
    })
}

/// k̂ above which a variational approximation is unreliable (Yao et al. 2018 §3.2).
pub const KHAT_BAD: f64 = 0.7;
/// k̂ above which a variational approximation is usable but estimates may be noisy.
pub const KHAT_OK: f64 = 0.5;

/// The smoothed ELBO of specs/qnvb.md §7.5: the mean of the last W + 1 values, once there
/// are that many.
pub(super) struct Smoother {
    pub(super) window: usize,
    pub(super) values: std::collections::VecDeque<f64>,
    pub(super) sum: f64,
}

impl Smoother {
    pub(super) fn new(window: usize) -> Self {
        Smoother {
            window,
            values: std::collections::VecDeque::new(),
            sum: 0.0,
        }
    }

    pub(super) fn push(&mut self, v: f64) -> Option<f64> {
        self.values.push_back(v);
        self.sum += v;
        if self.values.len() > self.window + 1 {
            self.sum -= self.values.pop_front().unwrap_or(0.0);
        }
        (self.values.len() == self.window + 1).then(|| self.sum / self.values.len() as f64)
    }
}

/// The reported unconstrained draws of a variational fit and its diagnostics: `psis_draws`
/// draws of q (stream 2) give k̂ and the ELBO estimate; the reported `vi_draws` draws are fresh
/// draws of q (stream 1) or, with `psis_resample`, systematic importance resampling of the
/// PSIS draws (uniform from stream 3). No diagnostics (`None`) when `psis_draws` is 0 or after
/// a Ctrl-C ([`crate::inference::interrupt::requested`]).
pub(super) fn vi_draws(
    model: &Model,
    options: &FitOptions,
    sample: impl Fn(usize, &mut StreamRng) -> Vec<Vec<f64>>,
    log_q: impl Fn(&[f64]) -> f64 + Sync,
    trace: Vec<(usize, f64, f64)>,
) -> Result<(Vec<Vec<f64>>, Option<ViDiagnostics>), FitError> {
    let seed = options.seed;
    let s = options.psis_draws;
    // After Ctrl-C the user wants the result now: the check costs `psis_draws` evaluations of
    // the whole log density (a minute on a large BNN), so it is skipped, and the report says so
    // (`output::report::vi_diagnostics_text_with`).
    if s == 0 || crate::inference::interrupt::requested() {
        let zetas = sample(options.vi_draws, &mut stream(seed, 1));
        return Ok((zetas, None));
    }
    let q_draws = sample(s, &mut stream(seed, 2));
    let (fit, elbo, ratios, first) =
        psis_ratios_with(model, &log_q, &q_draws).map_err(|message| FitError::Algorithm {
            method: options.method,
            message,
        })?;
    let undefined = first.map(|first| UndefinedDraws::new(model, &q_draws, &ratios, first));
    let khat = khat_number(fit.khat);
    let gate = judge(&q_draws, &ratios, &fit, &model.parameter_names());
    let resample = options.psis_resample && fit.ess.is_finite();
    let zetas = if resample {
        use rand::RngExt;
        let u: f64 = stream(seed, 3).random();
        fit.resample(options.vi_draws, u)
            .into_iter()
            .map(|i| q_draws[i].clone())
            .collect()
    } else {
        sample(options.vi_draws, &mut stream(seed, 1))
    };
    Ok((
        zetas,
        Some(ViDiagnostics {
            khat,
            psis_ess: fit.ess,
            n_draws: s,
            elbo,
            trace,
            resampled: resample,
            collapsed: Vec::new(),
            no_mode: None,
            unbounded: Vec::new(),
            moving: None,
            gate,
            undefined,
        }),
    ))
}

/// PSIS of the log ratios L(ζ) − log q(ζ) over `draws` (evaluated in parallel; a recoverable
/// density error counts as L = −∞) and their mean (the ELBO estimate). Ratios that differ only
/// by rounding (q ∝ target) give k̂ undefined: their range is within 256 ulps of the largest
/// |L| or |log q| and at most [`ROUNDING_RANGE_MAX`] nats.
pub(super) fn psis_of(
    model: &Model,
    log_q: &(impl Fn(&[f64]) -> f64 + Sync),
    draws: &[Vec<f64>],
) -> Result<(Psis, f64), String> {
    psis_ratios(model, log_q, draws).map(|(fit, elbo, _)| (fit, elbo))
}

/// The largest range (nats) of the log ratios L − log q that [`psis_of`] may put down to
/// rounding. [X] Without it, 256 ulps of |L| ≈ 1e15 (four observations of y ~ normal(mu, 0.01)
/// with y up to 3e5) allowed a range of 62 nats: Pathfinder's q there (b at 1.7 ± 0.36 where
/// the posterior is 3 ± 1, PSIS ESS 7 of 1000) had its k̂ declared undefined and no warning
/// (fresh-user finding, session 20). Weights that differ by more than a factor e are not equal
/// for any purpose, whatever their cause.
pub const ROUNDING_RANGE_MAX: f64 = 1.0;

/// [`psis_of`], also returning the log ratios (same order as `draws`).
pub(super) fn psis_ratios(
    model: &Model,
    log_q: &(impl Fn(&[f64]) -> f64 + Sync),
    draws: &[Vec<f64>],
) -> Result<(Psis, f64, Vec<f64>), String> {
    psis_ratios_with(model, log_q, draws).map(|(fit, elbo, ratios, _)| (fit, elbo, ratios))
}

/// [`psis_ratios`], also returning why the log density failed at the first draw (in `draws`'
/// order) where it did: the error's message with its location, or that it was −∞.
fn psis_ratios_with(
    model: &Model,
    log_q: &(impl Fn(&[f64]) -> f64 + Sync),
    draws: &[Vec<f64>],
) -> Result<(Psis, f64, Vec<f64>, Option<String>), String> {
    use rayon::prelude::*;
    let pairs: Vec<(f64, f64, Option<String>)> = draws
        .par_iter()
        .map(|z| match model.log_density(z) {
            Ok(lp) if lp == f64::NEG_INFINITY => Ok((
                f64::NEG_INFINITY,
                0.0,
                Some("the log density is -inf".to_string()),
            )),
            Ok(lp) => {
                let lq = log_q(z);
                Ok((lp - lq, lp.abs().max(lq.abs()), None))
            }
            Err(e) if e.recoverable => Ok((f64::NEG_INFINITY, 0.0, Some(e.to_string()))),
            Err(e) => Err(format!(
                "cannot evaluate the log density at a draw of the approximation: {e}"
            )),
        })
        .collect::<Result<_, _>>()?;
    let ratios: Vec<f64> = pairs.iter().map(|p| p.0).collect();
    let first = pairs.iter().find_map(|p| p.2.clone());
    let elbo = ratios.iter().sum::<f64>() / ratios.len() as f64;
    let mut fit = psis(&ratios).map_err(|e| e.to_string())?;
    if ratios.iter().all(|r| r.is_finite()) {
        let scale = pairs.iter().map(|p| p.1).fold(0.0, f64::max);
        let lo = ratios.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if hi - lo <= (256.0 * f64::EPSILON * scale.max(1.0)).min(ROUNDING_RANGE_MAX) {
            fit.khat = KHat::Undefined;
        }
    }
    Ok((fit, elbo, ratios, first))
}

/// The draws of q at which the log density could not be evaluated ([`ViDiagnostics::undefined`]):
/// q puts mass where the model is undefined, its ELBO is −∞ and it is no optimum of the ELBO,
/// whatever the exit rule said ([X]: fresh-user finding, session 21: `y ~ normal(log(mu), 1)`
/// with `real mu` and data pulling mu towards 0; EMGVB, NGVI, VON, BBB, IVON and VOGN said
/// "converged" and printed "ELBO estimate = -inf").
#[derive(Clone, Debug, PartialEq)]
pub struct UndefinedDraws {
    /// How many of the `of` draws failed.
    pub count: usize,
    /// The draws of q evaluated (S of [`ViDiagnostics::n_draws`]).
    pub of: usize,
    /// Why the first failing draw failed: the density's error message, which names the
    /// statement and its location (`file:line:column`), as NUTS's rejection note does.
    pub first: String,
    /// A parameter declared without bounds whose value separates the failing draws from the
    /// others: (name, lower, gap), `lower` when every failing draw has it below the gap
    /// (lo, hi) and every other above, else the reverse; `None` when no such parameter.
    pub bound: Option<(String, bool, (f64, f64))>,
}

impl UndefinedDraws {
    /// From the PSIS draws of q (`draws`, unconstrained), their log ratios (−∞ where the
    /// density failed) and the first failure's message.
    pub(super) fn new(model: &Model, draws: &[Vec<f64>], ratios: &[f64], first: String) -> Self {
        let bad = |i: usize| ratios[i] == f64::NEG_INFINITY;
        let count = (0..ratios.len()).filter(|&i| bad(i)).count();
        let mut bound = None;
        for (j, name) in model.identity_coordinates().into_iter().enumerate() {
            let Some(name) = name else { continue };
            let mut fail = (f64::INFINITY, f64::NEG_INFINITY);
            let mut pass = fail;
            for (i, z) in draws.iter().enumerate() {
                let r = if bad(i) { &mut fail } else { &mut pass };
                r.0 = r.0.min(z[j]);
                r.1 = r.1.max(z[j]);
            }
            if pass.0 > pass.1 {
                break; // every draw failed: nothing separates them
            }
            if fail.1 < pass.0 {
                bound = Some((name, true, (fail.1, pass.0)));
                break;
            }
            if fail.0 > pass.1 {
                bound = Some((name, false, (pass.1, fail.0)));
                break;
            }
        }
        UndefinedDraws {
            count,
            of: ratios.len(),
            first,
            bound,
        }
    }

    /// Why the fit is not converged and what to do: the failing draws, the first failure (its
    /// statement and location) and the bound to declare.
    pub fn phrase(&self) -> String {
        let advice = match &self.bound {
            Some((name, lower, (lo, hi))) => {
                let (side, fail, pass) = if *lower {
                    ("lower", format!("<= {lo:.4}"), format!(">= {hi:.4}"))
                } else {
                    ("upper", format!(">= {hi:.4}"), format!("<= {lo:.4}"))
                };
                let decl = if (*lo..=*hi).contains(&0.0) {
                    // zero separates them: the usual bound (of a log, a scale, a rate)
                    if name.contains('[') {
                        format!("declare its parameter with <{side}=0>")
                    } else {
                        format!("declare `real<{side}=0> {name}`")
                    }
                } else {
                    format!("declare the {side} bound of {name} where the model is defined")
                };
                format!("every failing draw has {name} {fail}, every other {pass}: {decl}")
            }
            None => "declare the bounds that keep the parameters where the model is defined \
                     (e.g. <lower=0>)"
                .to_string(),
        };
        format!(
            "q puts mass where the log density cannot be evaluated, so its ELBO is -inf: {} of \
             {} draws of q failed (first: {}); {advice}",
            self.count, self.of, self.first
        )
    }
}

#[cfg(test)]
#[path = "vi_checks_tests.rs"]
mod tests;
