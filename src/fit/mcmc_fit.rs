//! The MCMC methods in the fit pipeline: NUTS, static HMC and Metropolis-Hastings
//! (`inference::mcmc`), their starts (`McmcInit`), constrained draws and interrupted runs.

use super::*;

/// The error of `method` with message `e`.
fn algorithm(method: Method) -> impl Fn(&dyn fmt::Display) -> FitError {
    move |e: &dyn fmt::Display| FitError::Algorithm {
        method,
        message: e.to_string(),
    }
}

/// Runs `options.method` (NUTS, HMC or MH) with `options.mcmc`; `start` is when the fit
/// started. An interrupted run is trimmed by [`trim_interrupted`].
///
/// Errors: see [`FitError`]; d = 0 is an algorithm error.
pub(super) fn fit_mcmc(
    model: &Model,
    options: &FitOptions,
    monitor: &Monitor<'_>,
    start: Instant,
) -> Result<FitResult, FitError> {
    let seed = options.seed;
    let mut settings = McmcSettings {
        seed,
        ..options.mcmc.clone()
    };
    settings.gradient_work = settings.gradient_work.or(Some(model.gradient_work()));
    settings.method = match options.method {
        Method::Nuts => mcmc::Method::Nuts,
        Method::Hmc => match settings.method {
            mcmc::Method::StaticHmc { n_leapfrog } => mcmc::Method::StaticHmc { n_leapfrog },
            _ => mcmc::Method::StaticHmc { n_leapfrog: None },
        },
        _ => mcmc::Method::Mh,
    };
    if model.dim() == 0 {
        return Err(FitError::Algorithm {
            method: options.method,
            message: if model.generated_quantity_names().is_empty() {
                "the model has no parameters (d = 0): there is nothing to sample".into()
            } else {
                "the model has no parameters (d = 0), only generated quantities: \
                         fixed_param sampling is not supported"
                    .into()
            },
        });
    }
    let inits = match options.mcmc_init {
        McmcInit::Random => Vec::new(),
        McmcInit::Pathfinder => pathfinder_fit::pathfinder_inits(model, options)?,
    };
    let progress = |p: ChainProgress| (monitor.on_progress)(ProgressEvent::Chain(p));
    let mut out = mcmc::sample(model, &settings, &inits, &progress, monitor.stop)
        .map_err(|e| algorithm(options.method)(&e))?;
    let names = model.parameter_names();
    if names.len() == model.dim() {
        for n in out.flat.iter_mut() {
            if let Some(i) = n
                .strip_prefix("zeta[")
                .and_then(|r| r.strip_suffix(']'))
                .and_then(|r| r.parse::<usize>().ok())
            {
                *n = names[i - 1].clone();
            }
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    let d = out.dim;
    let chains: Vec<Vec<Vec<f64>>> = out
        .chains
        .iter()
        .map(|c| {
            if d == 0 {
                vec![Vec::new(); c.stats.len()]
            } else {
                c.draws.chunks(d).map(<[f64]>::to_vec).collect()
            }
        })
        .collect();
    let mut draws = constrained_draws(model, &chains, seed).map_err(FitError::Constrain)?;
    if out.interrupted {
        trim_interrupted(&mut out, &mut draws);
    }
    Ok(FitResult {
        method: options.method,
        seed,
        draws,
        details: FitDetails::Mcmc(Box::new(out)),
        seconds,
        vi: None,
        run_length: None,
        approx_log_densities: Vec::new(),
        approx_mean_row: None,
    })
}
