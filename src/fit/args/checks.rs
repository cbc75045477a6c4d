//! The checks of a fit's options that clap cannot express: value ranges, and options given
//! for another method than the chosen one (refused by `bayesc fit`, kept by the REPL's `:set`).

use super::*;

/// Checks of the options that clap cannot express (ranges, flags that do not apply to the
/// chosen method), shared by [`run`] and the REPL's `:fit`: [`check_values`], then the first of
/// [`misplaced_options`] is refused.
pub fn check_args(args: &FitArgs) -> Result<(), String> {
    check_values(args)?;
    match misplaced_options(args)?.into_iter().next() {
        Some(m) => Err(m.message),
        None => Ok(()),
    }
}

/// An option given for a method that does not use it (see [`misplaced_options`]).
#[derive(Clone, Debug, PartialEq)]
pub struct MisplacedOption {
    /// The long option without `--`, as the REPL's `:set` names it (`chains`, `max-depth`).
    pub name: &'static str,
    /// The methods it applies to, as the message names them (`nuts, hmc, mh, fixed_param`).
    pub methods: String,
    /// `bayesc fit`'s error for it (`--chains applies to --method nuts, …, not qbvi; …`).
    pub message: String,
}

/// Checks of the values of the options, whichever method uses them: ranges (`--step-size`,
/// `--adapt-delta`, the tolerances, `--init`), initial-value files that do not exist,
/// `--batch-over` without `--batch-size`, `--init pathfinder` with `fixed_param`. Options
/// that only belong to another method are [`misplaced_options`].
pub fn check_values(args: &FitArgs) -> Result<(), String> {
    use fit::Method as M;
    let method: fit::Method = args.method.into();
    let hmc_method = matches!(args.method, MethodArg::Nuts | MethodArg::Hmc);
    if let Some(b) = args.step_size {
        if hmc_method && !(b > 0.0 && b.is_finite()) {
            return Err(format!(
                "--step-size (the initial HMC step size) must be a positive number, got {b}"
            ));
        }
        if !hmc_method && !(b > 0.0 && b < 1.0) {
            return Err(format!("--step-size must be in (0, 1), got {b}"));
        }
    }
    if !(args.adapt_delta > 0.0 && args.adapt_delta < 1.0) {
        return Err(format!(
            "--adapt-delta must be in (0, 1), got {}",
            args.adapt_delta
        ));
    }
    if args.batch_over.is_some() && args.batch_size.is_none() {
        return Err("--batch-over names the rows to minibatch; it needs --batch-size".into());
    }
    for (flag, value) in [
        ("--tol-obj", args.tol_obj),
        ("--tol-rel-obj", args.tol_rel_obj),
        ("--tol-grad", args.tol_grad),
        ("--tol-rel-grad", args.tol_rel_grad),
        ("--tol-param", args.tol_param),
    ] {
        if let Some(v) = value
            && !(v >= 0.0 && v.is_finite())
        {
            return Err(format!("{flag} must be a finite number ≥ 0, got {v}"));
        }
    }
    let init = parse_init(args.init.as_deref())?;
    if let Some(InitArg::File(f)) = &init {
        // the files exist (CmdStan's per-chain names: `fit::inits::init_files`)
        let n = if method == M::Pathfinder {
            args.num_paths
        } else if method.is_mcmc() {
            args.chains
        } else {
            1
        };
        fit::inits::init_files(f, n as usize)?;
    }
    if method == M::FixedParam && init == Some(InitArg::Pathfinder) {
        return Err(
            "--init pathfinder: fixed_param keeps the parameters at their initial \
                    values; give a radius R or leave --init out"
                .into(),
        );
    }
    Ok(())
}

/// The options given for another method than `args.method` — they would be silently
/// ignored — in the order `bayesc fit` reports them; [`check_args`] refuses the first. A
/// flag with a default counts as given when it was on the command line
/// (`FitArgs::explicit`, even at its default value) or differs from the default. The REPL
/// keeps such options as session defaults for the methods they apply to. Errors: an
/// `--init` value that is no radius, `pathfinder` or file name.
pub fn misplaced_options(args: &FitArgs) -> Result<Vec<MisplacedOption>, String> {
    use fit::Method as M;
    let method: fit::Method = args.method.into();
    let mut misplaced = Vec::new();
    let variational = "the variational methods (qbvi, qnvb, laplace and the survey methods)";
    if args.elbo_output.is_some() && !method.is_variational() {
        misplaced.push(MisplacedOption {
            name: "elbo-output",
            methods: variational.into(),
            message: format!("--elbo-output applies to {variational}, not {method}"),
        });
    }
    if args.psis_resample && !method.is_variational() {
        misplaced.push(MisplacedOption {
            name: "psis-resample",
            methods: variational.into(),
            message: format!("--psis-resample applies to {variational}, not {method}"),
        });
    }
    // MC dropout trains a point estimate of the weights by its dropout objective: it has no
    // ELBO to write and no density q whose importance weights could resample its draws (both
    // flags were accepted and did nothing: fresh-user finding, session 21)
    if args.elbo_output.is_some() && method == M::Mcdropout {
        misplaced.push(MisplacedOption {
            name: "elbo-output",
            methods: "the variational methods other than mcdropout".into(),
            message: "--elbo-output: MC dropout has no ELBO (it trains the weights by the \
                      dropout objective and draws by masking them); its training objective is \
                      shown by `bayesc fit` and the REPL's `:elbo`; remove the flag"
                .into(),
        });
    }
    if args.psis_resample && method == M::Mcdropout {
        misplaced.push(MisplacedOption {
            name: "psis-resample",
            methods: "the variational methods other than mcdropout".into(),
            message: "--psis-resample: MC dropout's draws are forward passes with masked \
                      weights, not draws of a density q, so there are no importance weights \
                      to resample them by; remove the flag"
                .into(),
        });
    }
    if args.psis_resample && method == M::Pathfinder {
        misplaced.push(MisplacedOption {
            name: "psis-resample",
            methods: "the variational methods other than pathfinder".into(),
            message: "--psis-resample: Pathfinder always importance-resamples its draws (as \
                      Stan's multi-path Pathfinder); remove the flag"
                .into(),
        });
    }
    if args.jacobian && method != M::Optimize {
        misplaced.push(MisplacedOption {
            name: "jacobian",
            methods: "optimize".into(),
            message: "--jacobian applies to --method optimize (the other methods always include \
                      the Jacobian adjustment)"
                .into(),
        });
    }
    if args.se.is_some() && method != M::Optimize {
        misplaced.push(MisplacedOption {
            name: "se",
            methods: "optimize".into(),
            message: format!(
                "--se applies to --method optimize, not {method} (the Laplace approximation \
                 always uses the inverse negative Hessian)"
            ),
        });
    }
    // QBVI and VON minibatch their diagonal family: asked for, or chosen by d (> 50) when
    // neither --full nor --diagonal is given (checked again once d is known).
    if args.batch_size.is_some() && !method.takes_batches(args.diagonal || !args.full) {
        misplaced.push(MisplacedOption {
            name: "batch-size",
            methods: fit::MINIBATCH_METHODS.into(),
            message: format!(
                "--batch-size applies to --method {}, not {}; the other methods need the full \
                 data at every step",
                fit::MINIBATCH_METHODS,
                if matches!(method, M::Qbvi | M::Von) {
                    format!(
                        "{method} with --full (minibatch {method} fits the diagonal family only: \
                         drop --full)"
                    )
                } else {
                    method.to_string()
                }
            ),
        });
    }
    let mcmc = method.is_mcmc();
    let hmc = matches!(method, M::Nuts | M::Hmc);
    let init = parse_init(args.init.as_deref())?;
    let pf = method == M::Pathfinder || init == Some(InitArg::Pathfinder);
    let optimize = method == M::Optimize;
    let lbfgs = args.algorithm.is_none_or(|a| a == AlgorithmArg::Lbfgs);
    let quasi_newton = optimize && args.algorithm != Some(AlgorithmArg::Newton);
    let adapting = mcmc && method != M::FixedParam;
    let init_file = matches!(init, Some(InitArg::File(_)));
    let tol = "optimize with --algorithm lbfgs or bfgs (newton reads only --iter)";
    let checks: [(&str, bool, bool, &str); 31] = [
        (
            "--init R|pathfinder",
            init.is_some(),
            mcmc || init_file,
            "nuts, hmc, mh, fixed_param (a JSON file of initial values applies to every method)",
        ),
        (
            "--algorithm",
            args.algorithm.is_some(),
            optimize,
            "optimize",
        ),
        ("--iter", args.iter.is_some(), optimize, "optimize"),
        ("--tol-obj", args.tol_obj.is_some(), quasi_newton, tol),
        (
            "--tol-rel-obj",
            args.tol_rel_obj.is_some(),
            quasi_newton,
            tol,
        ),
        ("--tol-grad", args.tol_grad.is_some(), quasi_newton, tol),
        (
            "--tol-rel-grad",
            args.tol_rel_grad.is_some(),
            quasi_newton,
            tol,
        ),
        ("--tol-param", args.tol_param.is_some(), quasi_newton, tol),
        ("--save-warmup", args.save_warmup, adapting, "nuts, hmc, mh"),
        (
            "--refresh",
            args.refresh.is_some(),
            mcmc,
            "nuts, hmc, mh, fixed_param",
        ),
        (
            "--draws",
            args.draws != 1000 || args.given("draws"),
            method.is_variational(),
            "qbvi, qnvb, laplace and the survey methods",
        ),
        (
            "--diagonal",
            args.diagonal,
            matches!(method, M::Qbvi | M::Ngvi | M::Von),
            "qbvi, ngvi, von",
        ),
        (
            "--full",
            args.full,
            matches!(method, M::Qbvi | M::Ngvi | M::Von),
            "qbvi, ngvi, von",
        ),
        (
            "--estimator",
            args.estimator != EstimatorArg::Auto,
            matches!(method, M::Qbvi),
            "qbvi",
        ),
        (
            "--mc-samples",
            args.mc_samples != 100 || args.given("mc_samples"),
            matches!(
                method,
                M::Qbvi | M::Bbvi | M::Mgvb | M::Emgvb | M::Ngbbvi | M::Vadam
            ),
            "qbvi, bbvi, mgvb, emgvb, ngbbvi, vadam",
        ),
        (
            "--max-iter",
            args.max_iter != 5000 || args.given("max_iter"),
            matches!(method, M::Qbvi | M::Qnvb | M::Pathfinder) || method.is_survey(),
            "qbvi, qnvb, pathfinder and the survey methods",
        ),
        (
            "--num-paths",
            args.num_paths != 4 || args.given("num_paths"),
            pf,
            "pathfinder",
        ),
        (
            "--history-size",
            args.history_size.is_some(),
            pf || (optimize && lbfgs),
            "pathfinder, optimize with --algorithm lbfgs",
        ),
        (
            "--num-elbo-draws",
            args.num_elbo_draws != 25 || args.given("num_elbo_draws"),
            pf,
            "pathfinder",
        ),
        (
            "--step-size",
            args.step_size.is_some(),
            method == M::Qbvi || method.is_survey() || hmc,
            "qbvi, nuts, hmc and the survey methods",
        ),
        (
            "--random-init",
            args.random_init,
            matches!(method, M::Qbvi | M::Qnvb) || method.is_survey(),
            "qbvi, qnvb and the survey methods",
        ),
        (
            "--no-refine",
            args.no_refine,
            (matches!(method, M::Qbvi | M::Qnvb) || method.is_survey()) && method != M::Mcdropout,
            "qbvi, qnvb and the survey methods except mcdropout",
        ),
        (
            "--chains",
            args.chains != 4 || args.given("chains"),
            mcmc,
            "nuts, hmc, mh, fixed_param",
        ),
        (
            "--warmup",
            args.warmup.is_some(),
            adapting,
            "nuts, hmc, mh (fixed_param has no warmup)",
        ),
        (
            "--samples",
            args.samples.is_some(),
            mcmc,
            "nuts, hmc, mh, fixed_param",
        ),
        (
            "--thin",
            args.thin != 1 || args.given("thin"),
            mcmc,
            "nuts, hmc, mh, fixed_param",
        ),
        (
            "--adapt-delta",
            args.adapt_delta != 0.8 || args.given("adapt_delta"),
            hmc,
            "nuts, hmc",
        ),
        (
            "--max-depth",
            args.max_depth != 10 || args.given("max_depth"),
            method == M::Nuts,
            "nuts",
        ),
        (
            "--metric",
            args.metric != MetricArg::Auto || args.given("metric"),
            hmc,
            "nuts, hmc",
        ),
        ("--dense", args.dense, hmc, "nuts, hmc"),
        (
            "--n-leapfrog",
            args.n_leapfrog.is_some(),
            method == M::Hmc,
            "hmc",
        ),
    ];
    for (flag, _, _, methods) in checks
        .iter()
        .filter(|(_, given, applies, _)| *given && !applies)
    {
        misplaced.push(MisplacedOption {
            name: long_name(flag),
            methods: methods.to_string(),
            message: format!(
                "{flag} applies to --method {methods}, not {method}; remove it or choose one of those methods"
            ),
        });
    }
    Ok(misplaced)
}

/// The long option that `flag` (`--chains`, `--init R|pathfinder`) names, without `--`.
fn long_name(flag: &'static str) -> &'static str {
    let f = flag.trim_start_matches('-');
    f.split(' ').next().unwrap_or(f)
}
