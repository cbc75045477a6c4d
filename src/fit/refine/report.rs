//! The words of the refinement after the exit rule ([`super::refine_mean`]): why a refinement
//! that did not settle leaves the fit not converged ([`unsettled`]), and the note of what it
//! changed ([`note`]). Split from refine.rs, which keeps the numerics.

use super::*;

/// The reason a fit is not converged when its refinement did not settle
/// ([`Refinement::settled`]): the mean is then not at the ELBO's optimum, whatever the check
/// estimates afterwards (the check under-reads distances along ridges). `names`: the
/// coordinates' names; `random_start`: whether the fit started at the random point (the
/// remedy differs). `None` when there was no refinement or it settled.
pub(in crate::fit) fn unsettled(
    refined: Option<&Refinement>,
    names: &[String],
    options: &crate::fit::FitOptions,
    random_start: bool,
) -> Option<String> {
    let r = refined.filter(|r| !r.settled())?;
    let minibatch = options
        .minibatch
        .as_ref()
        .is_some_and(|p| p.settings.batch_size < p.n_obs);
    let name = |j: usize| {
        names
            .get(j)
            .cloned()
            .unwrap_or_else(|| format!("coordinate {j}"))
    };
    // Variational Laplace's fixed point depends on neither its step size nor its start (full
    // batch): the refinement failed to carry its mean to the ELBO's optimum, so neither is a
    // remedy ([`crate::fit::vi_checks::vlaplace_unsettled_phrase`]; on `p ~ normal(1, 1)`, p > 0,
    // seed 1 is unsettled from the mode and from --random-init alike).
    let vlaplace = options.method == crate::fit::Method::Vlaplace && !minibatch;
    if let Some((j, change)) = r.sd_unsettled {
        if vlaplace {
            return Some(crate::fit::vi_checks::vlaplace_unsettled_phrase(&format!(
                "its fixed-point iteration of the sds changed {}'s by {:.0}% in its last step",
                name(j),
                100.0 * change.min(9.99)
            )));
        }
        let cause = "the mean stopped where the sds of the mean-field ELBO's optimum are not yet \
                     known";
        let remedy = if random_start {
            crate::fit::vi_checks::not_converged_remedy(random_start, options.method, cause)
        } else {
            sd_unsettled_remedy(options.method, cause)
        };
        let how = if change.is_finite() {
            format!(
                "its last step changed {}'s by {:.0}%, at an optimum below {:.0}%",
                name(j),
                100.0 * change.min(9.99),
                100.0 * SD_SETTLED
            )
        } else {
            format!(
                "a step would have changed an sd by more than a factor {SD_STEP_MAX} or met a \
                 curvature that is not positive"
            )
        };
        return Some(format!(
            "the fixed-point iteration of the mean-field ELBO's sds after the exit rule did not \
             settle ({how}), so q is not at the ELBO's optimum: {remedy}"
        ));
    }
    if let Some((_, (js, change), spread)) = r.full {
        let remedy = crate::fit::vi_checks::not_converged_remedy(
            random_start,
            options.method,
            "the mean and covariance stopped away from the optimum",
        );
        let how = if r.refused {
            format!(
                "a further step, moving {} by {:.2} posterior sds, was too long to take",
                name(r.last_coordinate),
                r.last
            )
        } else {
            format!(
                "after {} its last step still moved {} by {:.3} posterior sds and changed q's \
                 sd along some direction by {:.1}% ({}'s by {:.1}%)",
                crate::words::counted(r.steps, "step"),
                name(r.last_coordinate),
                r.last,
                100.0 * spread,
                name(js),
                100.0 * change
            )
        };
        return Some(format!(
            "the refinement of the mean and covariance after the exit rule did not settle \
             ({how}; at an optimum its steps fall below {} sds and {:.0}%), so q is not at the \
             ELBO's optimum: {remedy}",
            crate::fit::refine_full::FULL_SETTLED,
            100.0 * crate::fit::refine_full::FULL_SD_SETTLED
        ));
    }
    let name = name(r.last_coordinate);
    if vlaplace {
        let how = if r.refused {
            format!("a further step of {name} was too long to take")
        } else {
            format!(
                "its last step still moved {name} by {:.2} posterior sds",
                r.last
            )
        };
        return Some(crate::fit::vi_checks::vlaplace_unsettled_phrase(&how));
    }
    Some(crate::fit::vi_checks::unsettled_phrase(
        &name,
        r.last,
        r.refused,
        random_start,
        options.method,
        minibatch,
    ))
}

/// The remedy for a fit from the mode whose sds' fixed-point iteration after the exit rule did
/// not settle ([`Refinement::sd_unsettled`]): `cause`, then the methods whose own steps set the
/// sds (QBVI, NGVI, EMGVB; not `method`), not another step size ([X]: fresh-user finding,
/// session 21: IVON on eight schools, seed 1, was not converged at --step-size 0.003, 0.01,
/// 0.03, 0.05 and 0.3 and converged at 0.2, seeds 1 and 4 of 5 at the default; BBB, VON, IVON
/// and VOGN on a gamma–Poisson with one y = 0 at every step size tried. QBVI, NGVI and EMGVB
/// converged on eight schools, seeds 1 and 4, and on the gamma–Poisson, seeds 1 and 2).
fn sd_unsettled_remedy(method: crate::fit::Method, cause: &str) -> String {
    use crate::fit::Method;
    let others: Vec<String> = [Method::Qbvi, Method::Ngvi, Method::Emgvb]
        .iter()
        .filter(|m| **m != method)
        .map(|m| m.to_string())
        .collect();
    let list = match others.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => others.join(""),
    };
    format!(
        "{cause}; another --step-size only changes where the run ends, not this iteration: use \
         --method {list}, whose own steps set the sds"
    )
}

/// The note of a Gaussian fit that [`refine_mean`] changed (its mean moved, or its sds
/// refined), or, beside "converged", whose estimated distance from the ELBO's optimum in the
/// mean (`offset`: coordinate, sds of the curvature's Gaussian;
/// `stationarity::Verdict::offset`) is at least [`OFFSET_NOTE_MIN`]; `None` otherwise.
/// `names`: the coordinates' names; `method`: the fit's, named where its sds were kept.
pub(in crate::fit) fn note(
    names: &[String],
    refined: Option<&Refinement>,
    offset: Option<(usize, f64)>,
    method: crate::fit::Method,
) -> Option<String> {
    let name = |j: usize| {
        names
            .get(j)
            .cloned()
            .unwrap_or_else(|| format!("coordinate {j}"))
    };
    let mut parts = Vec::new();
    if let Some(r) = refined.filter(|r| r.steps > 0 && r.full.is_some() && !r.settled()) {
        parts.push(format!(
            "after the exit rule a refinement of the mean and covariance took {} of the ELBO \
             without settling (its last moved {} by {:.3} posterior sds), so it was not kept: the \
             summary is the method's own q",
            crate::words::counted(r.steps, "step"),
            name(r.last_coordinate),
            r.last
        ));
    } else if let Some(r) = refined.filter(|r| r.steps > 0 && r.full.is_some()) {
        // a settled walk that moved the mean by less than OFFSET_NOTE_MIN sds is not worth a
        // line (2 steps of 0.00 sds on a 2-parameter model printed one; the covariance's change
        // has its own line below when it reaches SD_NOTE_MIN)
        if r.moved >= OFFSET_NOTE_MIN {
            parts.push(format!(
            "after the exit rule the mean was refined by {} of the ELBO in the mean, each with a \
             relaxed fixed-point step of the covariance (full-data gradients at the same {} \
             antithetic draws each), which moved it by up to {:.2} posterior sds ({}); the last \
             step estimated was {:.3} sds",
            crate::words::counted(r.steps, "Newton step"),
            2 * crate::fit::refine_full::FULL_REFINE_PAIRS,
            r.moved,
            name(r.coordinate),
            r.last
        ));
        }
    } else if let Some(r) = refined.filter(|r| r.steps > 0) {
        parts.push(format!(
            "after the exit rule the mean was refined by {} of the ELBO in the mean (full-data \
             gradients at {} draws each), which moved it by up to {:.2} posterior sds ({}); the \
             last step estimated was {:.3} sds",
            crate::words::counted(r.steps, "Newton step"),
            REFINE_DRAWS,
            r.moved,
            name(r.coordinate),
            r.last
        ));
    }
    let opening = |parts: &Vec<String>| {
        if parts.is_empty() {
            "after the exit rule "
        } else {
            ""
        }
    };
    if let Some(r) = refined
        && let Some((j, ratio)) = r.sd_ratio
        && (ratio - 1.0).abs() >= SD_NOTE_MIN
    {
        let text = if r.full.is_some() {
            format!(
                "{}the covariance moved towards the full-covariance ELBO's fixed point (Σ⁻¹ = \
                 E_q[−∇²log p]), which changed {}'s sd by a factor {:.2}",
                opening(&parts),
                name(j),
                ratio
            )
        } else if r.working_sd.is_some() {
            format!(
                "{}the mean's steps were taken at the sds of the mean-field ELBO's optimum \
                 (σ_j² = 1/E[−∂²log p/∂ζ_j²], {:.2} times {}'s own in {}), whose mean they \
                 target; {}'s own sds are the ones reported",
                opening(&parts),
                ratio,
                method.display_name(),
                name(j),
                method.display_name()
            )
        } else {
            format!(
                "{}the sds were set to the mean-field ELBO's fixed point (σ_j² = \
                 1/E[−∂²log p/∂ζ_j²] under q), which changed {}'s by a factor {:.2}",
                opening(&parts),
                name(j),
                ratio
            )
        };
        parts.push(text);
    }
    if let Some((j, change)) = refined.and_then(|r| r.sd_unsettled) {
        let text = format!(
            "{}the sds' fixed-point iteration of the mean-field ELBO (σ_j² = \
             1/E[−∂²log p/∂ζ_j²]) did not settle (its last step changed {}'s by {:.0}%), so \
             the mean was refined at {}'s own sds, which are kept",
            opening(&parts),
            name(j),
            100.0 * change.min(9.99),
            method.display_name()
        );
        parts.push(text);
    }
    if let Some((j, x)) = offset.filter(|(_, x)| *x >= OFFSET_NOTE_MIN) {
        parts.push(format!(
            "the mean is estimated to be {x:.2} posterior sds from the ELBO's optimum in {}",
            name(j)
        ));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// The estimated distance of a converged fit's mean from the ELBO's optimum (in sds of the
/// curvature's Gaussian) from which the report quotes it ([X]): below it, on labour, the
/// estimate is the size of its own noise (refined fits were all estimated below 0.05).
const OFFSET_NOTE_MIN: f64 = 0.05;

/// The change of an sd (as |ratio − 1|) from which [`note`] reports the sds' refinement ([X]:
/// below it the change is the size of the estimate's noise on labour).
const SD_NOTE_MIN: f64 = 0.02;
