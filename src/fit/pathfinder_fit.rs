//! `Method::Pathfinder` in the fit pipeline, and Pathfinder as the start of MCMC chains
//! (`McmcInit::Pathfinder`, as Stan initialises NUTS from Pathfinder draws).

use super::*;
use crate::inference::pathfinder;

/// Runs multi-path Pathfinder (`inference::pathfinder`) and ends as every variational fit does
/// ([`finish_gaussian`]): draws of the paths' mixture, always importance-resampled with Pareto
/// smoothing (Stan's `psis_resample = true`), PSIS k̂ of the mixture, the collapse check and
/// CmdStan's per-draw log densities. `start` is when the fit started (for its wall time).
///
/// Errors: [`FitError::Algorithm`] when every path fails or the model errors.
pub(super) fn fit_pathfinder(
    model: &Model,
    options: &FitOptions,
    start: Instant,
) -> Result<FitResult, FitError> {
    let seed = options.seed;
    let settings = PathfinderSettings {
        seed,
        inits: inits::user_starts(model, options, options.pathfinder.num_paths)?
            .unwrap_or_default(),
        ..options.pathfinder.clone()
    };
    let fit = pathfinder::pathfinder(model, &settings).map_err(|e| FitError::Algorithm {
        method: Method::Pathfinder,
        message: e.to_string(),
    })?;
    let seconds = start.elapsed().as_secs_f64();
    let resampling = FitOptions {
        psis_resample: true,
        ..options.clone()
    };
    let mut out = finish_gaussian(
        model,
        &resampling,
        |n, rng| fit.sample(n, rng),
        |z| fit.log_q(z),
        None,
        Vec::new(),
        None,
    )?;
    // Pathfinder's paths stop where L-BFGS's gradient test passes, which a density that only
    // flattens out (an improper posterior: separated logistic data under a flat prior) also
    // satisfies. For small d, a mode search from the mixture's mean is probed for flat
    // directions as `laplace` does; when there are some, the advice names the model, not
    // another method ([`start_message_for`]). (The drift check of QBVI is not used: the mixture
    // is not at an optimum of anything, so a gain from shifting it proves nothing.)
    if let Some(vi) = out.vi.as_mut()
        && model.dim() <= crate::inference::flat::FLAT_COMBINATION_MAX_DIM
    {
        let flat = mode::flat_beyond_mode(model, &fit.mean());
        if !flat.is_empty() {
            vi.no_mode = Some(mode::flat_reason(&flat));
            vi.unbounded = flat;
        }
    }
    Ok(out.into_result(
        Method::Pathfinder,
        seed,
        FitDetails::Pathfinder(fit),
        seconds,
    ))
}

/// One unconstrained initial point per MCMC chain from multi-path Pathfinder: `psis_draws`
/// draws of the paths' mixture (stream 5 of the seed), Pareto-smoothed importance weights, and
/// systematic resampling of one draw per chain (uniform from stream 6). The chains then start
/// inside the posterior's bulk instead of uniform(−2, 2), which shortens the early warmup and
/// avoids the ill-conditioned regions where a random start can stall a chain.
///
/// Errors: [`FitError::Algorithm`] (method `pathfinder`) when Pathfinder fails; the message
/// says the chains can start at random instead (drop `--init pathfinder`).
pub(super) fn pathfinder_inits(
    model: &Model,
    options: &FitOptions,
) -> Result<Vec<Vec<f64>>, FitError> {
    use rand::RngExt;
    let fail = |message: String| FitError::Algorithm {
        method: Method::Pathfinder,
        message: format!(
            "{message} (needed for --init pathfinder; remove it to start the chains at random)"
        ),
    };
    let settings = PathfinderSettings {
        seed: options.seed,
        ..options.pathfinder.clone()
    };
    let fit = pathfinder::pathfinder(model, &settings).map_err(|e| fail(e.to_string()))?;
    let n = options.psis_draws.max(options.mcmc.chains).max(100);
    let draws = fit.sample(n, &mut stream(options.seed, 5));
    let (weights, _) = psis_of(model, &|z: &[f64]| fit.log_q(z), &draws).map_err(fail)?;
    let u: f64 = stream(options.seed, 6).random();
    Ok(weights
        .resample(options.mcmc.chains, u)
        .into_iter()
        .map(|i| draws[i].clone())
        .collect())
}
