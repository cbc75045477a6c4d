//! The survey's variational methods in the fit pipeline (`specs/survey_vi.md`): variational
//! Laplace, MC dropout, and the Gaussian methods on the shared core (IVON, BBB, BBVI, MGVB,
//! EMGVB, NGVI, NG-BBVI, VON, Vadam, VOGN), each started as QBVI is ([`vi_start`]) and ended by
//! [`finish_gaussian_fit`] or [`finish_gaussian`].

use super::*;

/// The error of `method` with message `e`.
fn algorithm(method: Method) -> impl Fn(&dyn fmt::Display) -> FitError {
    move |e: &dyn fmt::Display| FitError::Algorithm {
        method,
        message: e.to_string(),
    }
}

/// The error of survey method `method` from its loop's error `e`: a divergence
/// ([`ViError::Diverged`]) gets the cause and the remedy that match the start — from a random
/// start the user asked for, the start at the mode (a smaller step size did not help on labour:
/// see [`super::worsened_phrase`]); from the start the fit chose, a smaller step size, or NUTS.
fn survey_error(
    method: Method,
    e: ViError,
    options: &FitOptions,
    no_mode: Option<&str>,
) -> FitError {
    if matches!(
        e,
        ViError::NonFiniteDensity { .. } | ViError::Diverged { .. }
    ) && let Some(why) = no_mode
    {
        return FitError::Algorithm {
            method,
            message: format!("{e}. {}", improper_hint(why, &e.to_string())),
        };
    }
    let ViError::Diverged { start_sd, .. } = &e else {
        return algorithm(method)(&e);
    };
    let noise = if start_sd.is_finite() && matches!(method, Method::Mgvb | Method::Emgvb) {
        format!(
            " {method} estimates its natural gradient from values of the log density only, and \
             at the start log p - log q varied with sd {start_sd:.3e} over its draws, so the \
             steps were dominated by noise."
        )
    } else {
        String::new()
    };
    let remedy = if options.vi_init == ViInit::Random {
        "The random start (--random-init) is far from the posterior, where the log density is \
         steep: start at the mode (drop --random-init: the default), or use --method nuts."
            .to_string()
    } else {
        format!(
            "Try a smaller --step-size (a tenth of {}), or use --method nuts.",
            method_step_size(method, options)
        )
    };
    FitError::Algorithm {
        method,
        message: format!("{e}.{noise} {remedy}"),
    }
}

/// The cause and remedy of a variational fit that failed with a non-finite log density after
/// its mode search found no interior mode (`why`, [`super::mode::ViStart::no_mode`]): q drifted
/// along a direction where the log density does not decay — an improper posterior, such as
/// `target += 0 * normal_lpdf(y | mu, s)` without priors (measured: QBVI, IVON and MGVB failed
/// with "Scale parameter is inf" after 204–3354 iterations and no advice) — until a value
/// overflowed. `optimize` names the flat directions.
///
/// When `error` (the failure) says that cut-points were out of order, the cause is their
/// declaration, not impropriety: [`crate::distributions::multivariate::ordered_logistic::unordered_cuts_remedy`].
pub(super) fn improper_hint(why: &str, error: &str) -> String {
    if let Some(remedy) =
        crate::distributions::multivariate::ordered_logistic::unordered_cuts_remedy(error)
    {
        return remedy;
    }
    format!(
        "The mode search found no interior mode ({why}), so the posterior is probably improper: \
         q drifted along a direction where the log density does not decay until a value \
         overflowed. Give every parameter a proper prior and check that the likelihood depends \
         on each of them (e.g. no factor 0 in front of it); --method optimize names the flat \
         directions"
    )
}

/// The step size `method` ran with, for advice (MGVB and EMGVB, the methods whose loop
/// recognises a divergence; "the one used" otherwise).
fn method_step_size(method: Method, options: &FitOptions) -> String {
    match method {
        Method::Mgvb => options.mgvb.step_size.to_string(),
        Method::Emgvb => options.emgvb.step_size.to_string(),
        _ => "the one used".to_string(),
    }
}

/// Runs `options.method`, one of the survey's methods; `start` is when the fit started.
///
/// Errors: see [`FitError`]; another method is an internal error.
pub(super) fn fit_survey(
    model: &Model,
    options: &FitOptions,
    monitor: &Monitor<'_>,
    start: Instant,
) -> Result<FitResult, FitError> {
    let seed = options.seed;
    match options.method {
        Method::Vlaplace => {
            let start_point = vi_start(
                model,
                options.vi_init_for(model.dim()),
                seed,
                inits::user_start(model, options)?,
            )?;
            let init = start_point.mean.clone();
            let d = init.len();
            let mut s = options.vlaplace.clone();
            s.common.seed = seed;
            if s.init_curvature.is_none() {
                s.init_curvature = start_point
                    .precision
                    .as_ref()
                    .map(|p| (0..d).map(|i| p[i * d + i]).collect());
            }
            let mut progress = vi_progress(monitor);
            let fit = match &options.minibatch {
                None => vlaplace::fit_vlaplace(model, &init, &s, &mut progress),
                Some(plan) => {
                    let mm = minibatch_model(model, plan, Method::Vlaplace)?;
                    vlaplace::fit_vlaplace_minibatch(&mm, &init, &s, &plan.settings, &mut progress)
                }
            }
            .map_err(|e| {
                survey_error(Method::Vlaplace, e, options, start_point.no_mode.as_deref())
            })?;
            let mut fit = GaussianFit {
                random_start: options.random_start_by_request(model.dim()),
                ..fit
            };
            let seconds = start.elapsed().as_secs_f64();
            let out = finish_gaussian_fit(
                model,
                options,
                &mut fit,
                s.common.window,
                start_point.no_mode,
            )?;
            Ok(out.into_result(Method::Vlaplace, seed, FitDetails::Qbvi(fit), seconds))
        }
        Method::Mcdropout => {
            let units: Vec<DropoutUnit> = model
                .dropout_sites()
                .into_iter()
                .flat_map(|site| {
                    let keep = 1.0 - site.rate;
                    site.units
                        .into_iter()
                        .map(move |coords| DropoutUnit { coords, keep })
                })
                .collect();
            if units.is_empty() {
                return Err(FitError::Algorithm {
                    method: Method::Mcdropout,
                    message: mcdropout::NO_DROPOUT_SITE.into(),
                });
            }
            let start_point = vi_start(
                model,
                options.vi_init_for(model.dim()),
                seed,
                inits::user_start(model, options)?,
            )?;
            let init = start_point.mean.clone();
            let mut s = options.mcdropout.clone();
            s.common.seed = seed;
            s.units = units;
            let mut progress = vi_progress(monitor);
            let fit = match &options.minibatch {
                None => mcdropout::fit_mcdropout(model, &init, &s, &mut progress),
                Some(plan) => {
                    let mm = minibatch_model(model, plan, Method::Mcdropout)?;
                    mcdropout::fit_mcdropout_minibatch(
                        &mm,
                        &init,
                        &s,
                        &plan.settings,
                        &mut progress,
                    )
                }
            }
            .map_err(|e| algorithm(Method::Mcdropout)(&e))?;
            let seconds = start.elapsed().as_secs_f64();
            // q is discrete (no density): no PSIS k̂; log_g__ is the mask's log probability.
            let mut o = options.clone();
            o.psis_draws = 0;
            let trace = fit
                .summary
                .elbo_trace
                .iter()
                .enumerate()
                .map(|(i, &e)| (fit.summary.trace_iteration(i), e, f64::NAN))
                .collect();
            let out = finish_gaussian(
                model,
                &o,
                |n, rng| fit.sample(n, rng),
                |z| fit.log_mask_probability(z),
                Some(&fit.summary.mean),
                trace,
                None,
            )?;
            Ok(out.into_result(
                Method::Mcdropout,
                seed,
                FitDetails::Qbvi(fit.summary),
                seconds,
            ))
        }
        m if m.is_survey() => {
            let start_point = vi_start(
                model,
                options.vi_init_for(model.dim()),
                seed,
                inits::user_start(model, options)?,
            )?;
            let init = start_point.mean.clone();
            let d = init.len();
            // The diagonal of the Laplace precision, when the start found a mode ([X], as QBVI).
            let diag: Option<Vec<f64>> = start_point
                .precision
                .as_ref()
                .map(|p| (0..d).map(|i| p[i * d + i]).collect())
                .filter(|v: &Vec<f64>| v.iter().all(|x| *x > 0.0 && x.is_finite()));
            let mut progress = vi_progress(monitor);
            let sd = diag
                .as_ref()
                .map(|p| p.iter().map(|x| 1.0 / x.sqrt()).collect::<Vec<f64>>());
            let mm = match &options.minibatch {
                Some(plan) => Some(minibatch_model(model, plan, m)?),
                None if m.needs_rows() => {
                    return Err(FitError::Algorithm {
                        method: m,
                        message: format!(
                            "{m} needs per-observation gradients, so a model whose log density \
                             the compiler has split over its rows (a minibatch plan, \
                             docs/minibatch.md); use ivon or ngvi --diagonal, which need only \
                             the gradient of the log density"
                        ),
                    });
                }
                None => None,
            };
            // Batches of M < N rows; M = N is the full-batch loop.
            let batches = options
                .minibatch
                .as_ref()
                .filter(|p| p.settings.batch_size < p.n_obs)
                .map(|p| &p.settings);
            let result: Result<GaussianFit, ViError> = match m {
                Method::Ivon => {
                    let mut s = options.ivon.clone();
                    s.common.seed = seed;
                    if let (Some(mm), true) = (&mm, s.ess == 1.0) {
                        // With a minibatch plan N is known, so the spec's λ = N (§17), the mean
                        // loss −L̂_B/N and σ = 1/√(N(h + δ)), in full batch too: h₀ = 1 is then
                        // a curvature of N in −L. With λ = 1 and h₀ = 1 a random start has
                        // σ = 1 and mean steps of α·∇L: the diabetes BNN diverged in 4 steps
                        // and labour (N = 753) ended at an ELBO of −1.3·10⁷. The fixed point
                        // λ(h + δ) ≈ E_q[diag ∇²(−L)] and the steps from a Laplace start do
                        // not depend on λ.
                        s.ess = crate::inference::MinibatchDensity::n_obs(mm) as f64;
                    }
                    if s.init_hessian.is_none() {
                        s.init_hessian = diag.map(|p| p.iter().map(|x| x / s.ess).collect());
                    }
                    match (&mm, batches) {
                        (Some(mm), Some(ms)) => {
                            ivon::fit_ivon_minibatch(mm, &init, &s, ms, &mut progress)
                        }
                        _ => ivon::fit_ivon(model, &init, &s, &mut progress),
                    }
                }
                Method::Bbb => {
                    let mut s = options.bbb.clone();
                    s.common.seed = seed;
                    if s.init_sd.is_none() {
                        s.init_sd = sd;
                    }
                    match (&mm, batches) {
                        (Some(mm), Some(ms)) => {
                            bbb::fit_bbb_minibatch(mm, &init, &s, ms, &mut progress)
                        }
                        _ => bbb::fit_bbb(model, &init, &s, &mut progress),
                    }
                }
                Method::Ngbbvi => {
                    let mut s = options.ngbbvi.clone();
                    s.common.seed = seed;
                    if s.init_sd.is_none() {
                        s.init_sd = sd;
                    }
                    ngbbvi::fit_ngbbvi(model, &init, &s, &mut progress)
                }
                Method::Von => {
                    let mut s = options.von.clone();
                    s.common.seed = seed;
                    if s.init_precision.is_none() {
                        s.init_precision = start_point.precision.clone();
                    }
                    match (&mm, batches) {
                        (Some(mm), Some(ms)) => {
                            von::fit_von_minibatch(mm, &init, &s, ms, &mut progress)
                        }
                        _ => von::fit_von(model, &init, &s, &mut progress),
                    }
                }
                Method::Vadam => {
                    let mut s = options.vadam.clone();
                    s.common.seed = seed;
                    if s.init_precision.is_none() {
                        s.init_precision = diag;
                    }
                    let plan = options.minibatch.as_ref().expect("checked above");
                    let mm = mm.as_ref().expect("checked above");
                    vadam::fit_vadam(mm, &init, &s, &plan.settings, &mut progress)
                }
                Method::Vogn => {
                    let mut s = options.vogn.clone();
                    s.common.seed = seed;
                    if s.init_precision.is_none() {
                        s.init_precision = diag;
                    }
                    if batches.is_some() {
                        s.lr = s.lr_minibatch;
                    }
                    let mm = mm.as_ref().expect("checked above");
                    vogn::fit_vogn(mm, &init, &s, batches, &mut progress)
                }
                Method::Bbvi => {
                    let mut s = options.bbvi.clone();
                    s.common.seed = seed;
                    if s.init_sd.is_none() {
                        s.init_sd = sd;
                    }
                    bbvi::fit_bbvi(model, &init, &s, &mut progress)
                }
                Method::Ngvi => {
                    let mut s = options.ngvi.clone();
                    s.common.seed = seed;
                    if s.init_precision.is_none() {
                        s.init_precision = start_point.precision.clone();
                    }
                    ngvi::fit_ngvi(model, &init, &s, &mut progress)
                }
                _ => {
                    let mut s = if m == Method::Mgvb {
                        options.mgvb.clone()
                    } else {
                        options.emgvb.clone()
                    };
                    s.common.seed = seed;
                    if s.init_precision.is_none() {
                        s.init_precision = start_point.precision.clone();
                    }
                    if m == Method::Mgvb {
                        mgvb::fit_mgvb(model, &init, &s, &mut progress)
                    } else {
                        emgvb::fit_emgvb(model, &init, &s, &mut progress)
                    }
                }
            };
            let mut fit = GaussianFit {
                random_start: options.random_start_by_request(model.dim()),
                ..result.map_err(|e| survey_error(m, e, options, start_point.no_mode.as_deref()))?
            };
            let seconds = start.elapsed().as_secs_f64();
            let out = finish_gaussian_fit(
                model,
                options,
                &mut fit,
                options.ivon.common.window,
                start_point.no_mode.clone(),
            )?;
            Ok(out.into_result(m, seed, FitDetails::Qbvi(fit), seconds))
        }
        m => Err(FitError::Algorithm {
            method: m,
            message: "internal: not one of the survey's methods".into(),
        }),
    }
}
