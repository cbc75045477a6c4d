//! Text reports of a fit, shared by `bayesc fit` and the REPL: the settings line, the MCMC
//! report, sampler warnings and the variational diagnostics; the optimisation report is in
//! `report/optimize.rs`.

use crate::diagnostics::hmc_stats;
use crate::fit::{self, FitOptions, FitResult};
use crate::inference::mcmc::{self, McmcOutput};
use crate::inference::qbvi::Covariance;
use crate::output::summary;

mod optimize;
mod vi_verdict;
pub use optimize::*;
pub use vi_verdict::{exit_rule_not_converged, vi_not_converged};

/// How a variational fit starts, for the settings line.
fn vi_start_text(o: &FitOptions, d: usize) -> &'static str {
    match (o.vi_init, o.vi_init_for(d)) {
        (fit::ViInit::Mode, fit::ViInit::Mode) => "Laplace approximation at the mode",
        (fit::ViInit::Mode, fit::ViInit::Random) => {
            "random point (a minibatch fit at d > 200 skips the mode search)"
        }
        (fit::ViInit::Random, _) => "random point",
    }
}

/// The note that names the parameters standing for missing data entries
/// (`Model::imputed_entries`, docs/missing_data.md), one line per `@missing` variable: how many
/// entries, their parameter, and the first few of the map; `None` when no data is missing.
pub fn imputed_note(entries: &[crate::graph::ImputedEntry]) -> Option<String> {
    if entries.is_empty() {
        return None;
    }
    let mut lines = Vec::new();
    let mut rest = entries;
    while let Some(first) = rest.first() {
        let base = first.parameter.split('[').next().unwrap_or("");
        let n = rest
            .iter()
            .take_while(|e| e.parameter.split('[').next() == Some(base))
            .count();
        let (these, tail) = rest.split_at(n);
        let var = these[0].entry.split('[').next().unwrap_or("");
        let shown: Vec<String> = these
            .iter()
            .take(4)
            .map(|e| format!("{} = {}", e.parameter, e.entry))
            .collect();
        let more = if n > 4 { ", …" } else { "" };
        if n == 1 && !these[0].parameter.contains('[') && !these[0].entry.contains('[') {
            // a scalar `@missing real z`: one parameter, no indices
            lines.push(format!(
                "imputed: {var} is missing, fitted as the parameter {base}"
            ));
            rest = tail;
            continue;
        }
        lines.push(format!(
            "imputed: {var} has {n} missing {}, fitted as {base}[1..{n}] in {var}'s order ({}{more})",
            if n == 1 { "entry" } else { "entries" },
            shown.join(", ")
        ));
        rest = tail;
    }
    Some(lines.join("\n"))
}

/// The line `bayesc fit` and the REPL print after a minibatch fit: epochs run, batches per
/// epoch, how often the exit rule looked at the full-data ELBO and its last value (`last`,
/// nats). `iterations` is the number of steps taken.
pub fn epoch_line(plan: &fit::MinibatchPlan, iterations: usize, last: f64) -> String {
    let per = plan.batches_per_epoch().max(1);
    let every = match plan.epochs_per_check() {
        1 => check_period_text(plan),
        _ => format!(
            "{}, as an epoch has fewer than {} batches",
            check_period_text(plan),
            crate::inference::minibatch::MIN_BATCHES_PER_CHECK
        ),
    };
    use crate::words::counted;
    format!(
        "minibatch: {} of {} ({}); the exit rule used the full-data ELBO {every} (last \
         {}); the per-iteration ELBO values are batch estimates",
        counted(iterations / per, "epoch"),
        batches_text(per),
        counted(iterations, "iteration"),
        fit::fmt_elbo(last)
    )
}

/// "1 batch", "15 batches".
fn batches_text(n: usize) -> String {
    if n == 1 {
        "1 batch".to_string()
    } else {
        format!("{n} batches")
    }
}

/// How often the minibatch exit rule looks at the full-data ELBO, for the settings line:
/// "once per epoch" or "once every k epochs" ([`fit::MinibatchPlan::epochs_per_check`]).
fn check_period_text(plan: &fit::MinibatchPlan) -> String {
    match plan.epochs_per_check() {
        1 => "once per epoch".to_string(),
        k => format!("once every {k} epochs"),
    }
}

/// The best smoothed ELBO of a VI fit for a status line: the value to 3 decimals, or, when the
/// fit stopped before the smoothing window first filled (it is then −∞), words that say so.
pub fn smoothed_elbo_text(best: f64) -> String {
    if best.is_finite() {
        fit::fmt_elbo(best)
    } else {
        "not available (the fit stopped before the ELBO's smoothing window filled)".to_string()
    }
}

/// What `bayesc fit` and the REPL's `:fit` both print before a fit runs, each line ending in a
/// newline: the settings line ([`settings_line`], at the model's dimension) and, when data
/// entries are missing, the note naming the parameters that impute them ([`imputed_note`]).
pub fn fit_preamble(o: &FitOptions, model: &crate::graph::Model) -> String {
    use crate::inference::LogDensity;
    let mut text = settings_line(o, model.dim());
    text.push('\n');
    if let Some(note) = imputed_note(&model.imputed_entries()) {
        text.push_str(&note);
        text.push('\n');
    }
    text
}

/// One line naming the method and its settings (`d`: the number of unconstrained parameters).
pub fn settings_line(o: &FitOptions, d: usize) -> String {
    let mut line = method_settings(o, d);
    if o.method.is_mcmc() {
        match o.mcmc_init {
            fit::McmcInit::Pathfinder => line.push_str(&format!(
                "; chains start at importance-resampled draws of {}-path Pathfinder",
                o.pathfinder.num_paths
            )),
            fit::McmcInit::Random if o.mcmc.init_radius != mcmc::DEFAULT_INIT_RADIUS => line
                .push_str(&format!(
                    "; chains start {}",
                    if o.mcmc.init_radius == 0.0 {
                        "at zero on the unconstrained scale".to_string()
                    } else {
                        format!(
                            "uniform(-{r}, {r}) on the unconstrained scale",
                            r = o.mcmc.init_radius
                        )
                    }
                )),
            fit::McmcInit::Random => {}
        }
    }
    if let Some(f) = &o.init_file {
        line.push_str(&format!(
            "; starting from the initial values in {} (parameters it leaves out: uniform(-{r}, {r}) on the unconstrained scale)",
            f.display(),
            r = o.mcmc.init_radius
        ));
    }
    match &o.minibatch {
        None => line,
        Some(p) if p.settings.batch_size >= p.n_obs => format!(
            "{line}; full batch: all N = {} rows (`{}`) at every step{}",
            p.n_obs,
            p.separability.axis,
            if o.method.needs_rows() {
                ", per-observation gradients"
            } else {
                ""
            }
        ),
        Some(p) => {
            let per = p.batches_per_epoch().max(1);
            let max_iter = match o.method {
                fit::Method::Qnvb => o.qnvb.max_iter,
                fit::Method::Ivon => o.ivon.common.max_iter,
                fit::Method::Bbb => o.bbb.common.max_iter,
                fit::Method::Von => o.von.common.max_iter,
                fit::Method::Vadam => o.vadam.common.max_iter,
                fit::Method::Vogn => o.vogn.common.max_iter,
                fit::Method::Vlaplace => o.vlaplace.common.max_iter,
                fit::Method::Mcdropout => o.mcdropout.common.max_iter,
                _ => o.qbvi.max_iter,
            };
            format!(
                "{line}; minibatch: batch size M = {} of N = {} rows (`{}`), {} per epoch, at \
                 most {}; exit rule on the full-data ELBO {}{}",
                p.settings.batch_size,
                p.n_obs,
                p.separability.axis,
                batches_text(per),
                crate::words::counted(max_iter.div_ceil(per), "epoch"),
                check_period_text(p),
                if o.method == fit::Method::Qnvb {
                    "; RMS curvature average"
                } else {
                    ""
                }
            )
        }
    }
}

/// The length part of an MCMC settings line, saying what each chain keeps (as the
/// "draws per chain kept" line, the summary and the draws files do): "(1000 warmup + 1000
/// draws)"; with thinning "(1000 warmup + 1000 iterations), thin = 2: 500 draws per chain
/// kept"; for Metropolis–Hastings with its length chosen in rounds
/// ([`FitOptions::mh_auto_length`]) the rule, since the length is not known before the run:
/// "(3000 warmup + draws until mixed: 2000 in the first round, at most 20000; the length kept
/// is printed after the run)"; a first round at or above the budget
/// ([`MH_MAX_SAMPLES`](crate::fit::mh_length::MH_MAX_SAMPLES) per chain) is the only round and
/// is said so.
fn mcmc_length(o: &FitOptions) -> String {
    let (warmup, n, thin) = (o.mcmc.warmup, o.mcmc.samples, o.mcmc.thin.max(1));
    if o.mh_auto_length && o.method == fit::Method::Mh {
        let max = crate::fit::mh_length::MH_MAX_SAMPLES;
        // a first round at or above the budget is the only one (`fit::mh_length`)
        let what = if thin > 1 { "iterations" } else { "draws" };
        if n >= max {
            let kept = if thin > 1 {
                format!(", thin = {thin}: {} draws per chain kept", n.div_ceil(thin))
            } else {
                String::new()
            };
            return format!(
                "({warmup} warmup + {n} {what} in one round, the first being already at or above \
                 the budget of {max} {what} per chain){kept}"
            );
        }
        return if thin > 1 {
            format!(
                "({warmup} warmup + iterations until mixed: {n} in the first round, at most \
                 {max}), thin = {thin}: 1 in {thin} kept; the length kept is printed after \
                 the run"
            )
        } else {
            format!(
                "({warmup} warmup + draws until mixed: {n} in the first round, at most {max}; \
                 the length kept is printed after the run)"
            )
        };
    }
    if thin > 1 {
        format!(
            "({warmup} warmup + {n} iterations), thin = {thin}: {} draws per chain kept",
            n.div_ceil(thin)
        )
    } else {
        format!("({warmup} warmup + {n} draws)")
    }
}

/// The QBVI settings line's family when `--batch-size` chose it for `d` unconstrained
/// parameters ([`FitOptions::covariance_for_minibatch`]): bayesc's minibatch QBVI (batches,
/// batch-anchored control variates, the epoch exit rule) is implemented for the diagonal family
/// only, so a minibatch fit takes it whatever d, and `--full` with `--batch-size` is refused.
/// For d ≤ 50 the full family would have been the default, so the line says what is lost.
fn minibatch_diagonal(d: usize) -> String {
    let max = crate::inference::qbvi::FULL_COVARIANCE_MAX_DIM;
    if d > max {
        format!("diagonal (auto: d > {max}, and minibatch QBVI fits the diagonal family only)")
    } else {
        "diagonal (auto: --batch-size; minibatch QBVI fits the diagonal family only, so the \
         correlations between parameters are not fitted; drop --batch-size for the full \
         covariance)"
            .to_string()
    }
}

fn method_settings(o: &FitOptions, d: usize) -> String {
    let dims = format!(
        "d = {d} unconstrained parameter{}",
        if d == 1 { "" } else { "s" }
    );
    match o.method {
        fit::Method::Qbvi => format!(
            "method = qbvi (covariance = {}, residual form{}, start: {}); {dims}; N_s = {}; step size = {:.4}{}; max_iter = {}; seed = {}",
            match (o.qbvi.covariance, o.covariance_by_dimension) {
                (Covariance::Diagonal, _) if o.covariance_for_minibatch => minibatch_diagonal(d),
                (Covariance::Diagonal, false) => "diagonal".to_string(),
                (Covariance::Full, false) => "full".to_string(),
                (Covariance::Diagonal, true) => format!(
                    "diagonal (auto: d > {}; --full to override)",
                    crate::inference::qbvi::FULL_COVARIANCE_MAX_DIM
                ),
                (Covariance::Full, true) => format!(
                    "full (auto: d ≤ {}; --diagonal to override)",
                    crate::inference::qbvi::FULL_COVARIANCE_MAX_DIM
                ),
            },
            match o.qbvi.estimator {
                crate::inference::qbvi::Estimator::Score => "",
                crate::inference::qbvi::Estimator::Gradient =>
                    ", gradient estimator (Bonnet/Price identities; --estimator score for the paper's)",
            },
            if o.vi_init_for(d) == fit::ViInit::Mode {
                "Laplace at the mode, random if there is none"
            } else {
                vi_start_text(o, d)
            },
            o.qbvi.n_samples,
            o.qbvi_step_size(d),
            if o.qbvi_step_size(d) < o.qbvi.effective_step_size(d) {
                " (lowered for the minibatch noise, N/M; --step-size to override)"
            } else {
                ""
            },
            o.qbvi.max_iter,
            o.seed
        ),
        fit::Method::Qnvb => format!(
            "method = qnvb (mean-field, {} quadrature points per step, start: {}); {dims}; max_iter = {}; seed = {}",
            o.qnvb.n_e,
            if o.vi_init_for(d) == fit::ViInit::Mode {
                "the mode"
            } else {
                vi_start_text(o, d)
            },
            o.qnvb.max_iter,
            o.seed
        ),
        fit::Method::Optimize => format!(
            "method = optimize ({} + Newton polish, jacobian = {}: {}; se = {}); {dims}; seed = {}",
            optimizer_name(o.optimize.algorithm),
            o.jacobian,
            if o.jacobian {
                "mode of the unconstrained density"
            } else {
                "mode on the constrained scale, i.e. (penalised) maximum likelihood"
            },
            o.std_errors,
            o.seed
        ),
        fit::Method::Ivon => format!(
            "method = ivon (mean-field Gaussian, Price Hessian estimate, start: {}); {dims}; K = {}; lr = {}; beta1 = {}; beta2 = {}; ess = {}; weight decay = {}; max_iter = {}; seed = {}",
            vi_start_text(o, d),
            o.ivon.mc_samples,
            o.ivon.lr,
            o.ivon.beta1,
            o.ivon.beta2,
            match (&o.minibatch, o.ivon.ess == 1.0) {
                // `fit::survey_fit` takes λ = N when the rows are known (specs/survey_vi.md §17).
                (Some(plan), true) => format!("N = {} (auto)", plan.n_obs),
                _ => o.ivon.ess.to_string(),
            },
            o.ivon.weight_decay,
            o.ivon.common.max_iter,
            o.seed
        ),
        fit::Method::Bbb => format!(
            "method = bbb (mean-field Gaussian, {} parameterisation, Adam, start: {}); {dims}; S = {}; lr = {} (x{} on the scale); max_iter = {}; seed = {}",
            match o.bbb.parameterisation {
                crate::inference::vi::bbb::Parameterisation::Sigma => "sigma",
                crate::inference::vi::bbb::Parameterisation::SoftplusRho => "softplus-rho",
            },
            vi_start_text(o, d),
            o.bbb.mc_samples,
            o.bbb.lr,
            o.bbb.scale_lr_multiplier,
            o.bbb.common.max_iter,
            o.seed
        ),
        fit::Method::Bbvi => format!(
            "method = bbvi (mean-field Gaussian, score function, Rao-Blackwellised, {:?} control variates, AdaGrad, start: {}); {dims}; S = {}; eta = {}; max_iter = {}; seed = {}",
            o.bbvi.control_variate,
            vi_start_text(o, d),
            o.bbvi.mc_samples,
            o.bbvi.eta,
            o.bbvi.common.max_iter,
            o.seed
        ),
        fit::Method::Vlaplace => format!(
            "method = vlaplace (mean-field Gaussian, second-order ELBO with the {} Hessian diagonal at the mean, sigma at its stationary point, Adam on the mean, start: {}); {dims}; lr = {}; max_iter = {}; seed = {}",
            match o.vlaplace.curvature_for(d) {
                crate::inference::vi::vlaplace::Curvature::Exact => "exact",
                crate::inference::vi::vlaplace::Curvature::Hutchinson => "Hutchinson-estimated",
            },
            vi_start_text(o, d),
            o.vlaplace.lr,
            o.vlaplace.common.max_iter,
            o.seed
        ),
        fit::Method::Mcdropout => format!(
            "method = mcdropout (Bernoulli masks on the units of the @dropout parameters, Adam on the masked log joint, start: {}); {dims}; lr = {}; max_iter = {}; {} draws = stochastic forward passes; seed = {}",
            vi_start_text(o, d),
            o.mcdropout.lr,
            o.mcdropout.common.max_iter,
            o.vi_draws,
            o.seed
        ),
        fit::Method::Ngvi => format!(
            "method = ngvi ({} Gaussian, reparameterised gradients + Stein, start: {}); {dims}; S = {}; step size = {}; max_iter = {}; seed = {}",
            match o.ngvi.covariance {
                Covariance::Full => "full-covariance",
                Covariance::Diagonal => "mean-field",
            },
            vi_start_text(o, d),
            o.ngvi.mc_samples,
            o.ngvi.step_size,
            o.ngvi.common.max_iter,
            o.seed
        ),
        fit::Method::Mgvb | fit::Method::Emgvb => {
            let s = if o.method == fit::Method::Mgvb {
                &o.mgvb
            } else {
                &o.emgvb
            };
            format!(
                "method = {} (full-covariance Gaussian, score function, lagged control variates, manifold retraction, momentum {}, start: {}); {dims}; S = {}; step size = {}; max_iter = {}; seed = {}",
                o.method,
                s.momentum,
                vi_start_text(o, d),
                s.mc_samples,
                s.step_size,
                s.common.max_iter,
                o.seed
            )
        }
        fit::Method::Pathfinder => {
            let p = &o.pathfinder;
            format!(
                "method = pathfinder ({} L-BFGS paths in parallel, history J = {}, {} ELBO draws per iterate, at most {} L-BFGS iterations per path; draws from the mixture of the paths' Gaussians, PSIS-resampled); {dims}; seed = {}",
                p.num_paths, p.history, p.num_elbo_draws, p.optimize.max_iter, o.seed
            )
        }
        fit::Method::Ngbbvi => format!(
            "method = ngbbvi (mean-field Gaussian, score function, split control variates, {:?} Fisher, Adam, start: {}); {dims}; S = {}; lr = {} (1/t once the ELBO stops rising, after {} at the earliest); max_iter = {}; seed = {}",
            o.ngbbvi.fisher,
            vi_start_text(o, d),
            o.ngbbvi.mc_samples,
            o.ngbbvi.lr,
            o.ngbbvi.decay_after,
            o.ngbbvi.common.max_iter,
            o.seed
        ),
        fit::Method::Von => format!(
            "method = von ({}, finite-difference Hessian at one draw, negative-curvature guard, start: {}); {dims}; beta = {}; max_iter = {}; seed = {}",
            match o.von.covariance {
                Covariance::Full => "full-covariance Gaussian",
                Covariance::Diagonal if o.covariance_for_minibatch =>
                    "mean-field Gaussian (auto: --batch-size; minibatch VON fits the mean-field family only)",
                Covariance::Diagonal => "mean-field Gaussian",
            },
            vi_start_text(o, d),
            o.von.step_size,
            o.von.common.max_iter,
            o.seed
        ),
        fit::Method::Vadam => format!(
            "method = vadam (mean-field Gaussian, squared minibatch gradients, start: {}); {dims}; K = {}; lr = {}; beta1 = {}; beta2 = {}; max_iter = {}; seed = {}",
            vi_start_text(o, d),
            o.vadam.mc_samples,
            o.vadam.lr,
            o.vadam.beta1,
            o.vadam.beta2,
            o.vadam.common.max_iter,
            o.seed
        ),
        fit::Method::Vogn => format!(
            "method = vogn (mean-field Gaussian, per-example squared gradients = empirical Fisher, start: {}); {dims}; lr = {}; beta = {}; max_iter = {}; seed = {}",
            vi_start_text(o, d),
            match &o.minibatch {
                Some(p) if p.settings.batch_size < p.n_obs => o.vogn.lr_minibatch,
                _ => o.vogn.lr,
            },
            o.vogn.beta,
            o.vogn.common.max_iter,
            o.seed
        ),
        fit::Method::FixedParam => format!(
            "method = fixed_param (parameters fixed at their initial values, generated quantities drawn afresh each iteration); {dims}; {} × {} draws{}; seed = {}",
            crate::words::counted(o.mcmc.chains, "chain"),
            o.mcmc.samples,
            if o.mcmc.thin > 1 {
                format!(", thin = {}", o.mcmc.thin)
            } else {
                String::new()
            },
            o.seed
        ),
        fit::Method::Laplace => format!(
            "method = laplace (Gaussian at the mode of the unconstrained density, covariance = inverse negative Hessian); {dims}; seed = {}",
            o.seed
        ),
        m => format!(
            "method = {m}; {dims}; {} × {}; {}metric = {}; seed = {}",
            crate::words::counted(o.mcmc.chains, "chain"),
            mcmc_length(o),
            match m {
                fit::Method::Mh => String::new(),
                fit::Method::Hmc => match o.mcmc.method {
                    mcmc::Method::StaticHmc {
                        n_leapfrog: Some(n),
                    } => {
                        format!("adapt_delta = {}; {n} leapfrog steps; ", o.mcmc.adapt_delta)
                    }
                    _ => format!(
                        "adapt_delta = {}; leapfrog steps = ⌊2π/ε⌋ with ε jittered ±{:.0}%; \
                         metric adapted with NUTS, step size tuned for static HMC in the last \
                         warmup window; ",
                        o.mcmc.adapt_delta,
                        100.0 * o.mcmc.jitter
                    ),
                },
                _ => format!(
                    "adapt_delta = {}; max_depth = {}; ",
                    o.mcmc.adapt_delta, o.mcmc.max_depth
                ),
            },
            match (m, o.mcmc.metric_reason(d)) {
                (fit::Method::Mh, _) if o.mcmc.mh.dense => "dense proposal shape".to_string(),
                (fit::Method::Mh, _) => "diagonal proposal shape".to_string(),
                (_, (dense, why)) => {
                    let kind = if dense { "dense" } else { "diagonal" };
                    if why.is_empty() {
                        kind.to_string()
                    } else {
                        format!("{kind} ({why})")
                    }
                }
            },
            o.seed
        ),
    }
}

/// `s` with its first letter in upper case.
fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// What an MCMC fit prints (CLI and the REPL's `:fit`): how many chains and draws were kept
/// (for an interrupted run, after [`fit::trim_interrupted`]: "k chains × n draws kept"), the
/// summary table with MCSE, ESS and R-hat, and the sampler and convergence warnings. When an
/// interrupted run has no post-warmup draws it says so and prints no table. Ends with a newline.
pub fn mcmc_text(result: &FitResult, out: &McmcOutput, options: &FitOptions) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let kept = result.draws.n_draws();
    let k = result.draws.chains.len();
    if !out.interrupted {
        let _ = writeln!(
            s,
            "{} finished in {:.2} s (wall); {kept} draws per chain kept",
            crate::words::counted(out.chains.len(), "chain"),
            result.seconds,
        );
        if let Some(l) = &result.run_length {
            let _ = writeln!(s, "{l}");
        }
    } else if kept == 0 {
        let _ = writeln!(
            s,
            "INTERRUPTED after {:.2} s (wall), before any of the {} chains finished warmup: \
             there are no post-warmup draws to summarise",
            result.seconds, options.mcmc.chains
        );
        let _ = writeln!(s, "{}", capitalised(&out.interruption_note()));
        return s;
    } else {
        // which chains, by their own numbers (the output files keep them: `_3.csv`, `id = 3`)
        let ids: Vec<usize> = out.chain_ids().iter().map(|c| c + 1).collect();
        let _ = writeln!(
            s,
            "INTERRUPTED after {:.2} s (wall): {} × {kept} draws kept (of {} chains; \
             chains without post-warmup draws are dropped, the others cut to the shortest)",
            result.seconds,
            if ids.len() == k {
                format!(
                    "{k} {} ({})",
                    if k == 1 { "chain" } else { "chains" },
                    crate::inference::chain_end::chain_numbers(&ids)
                )
            } else {
                format!("{k} chains")
            },
            options.mcmc.chains
        );
        let _ = writeln!(s, "{}", capitalised(&out.interruption_note()));
    }
    // chains whose warmup collapsed and were started afresh (issue 13 item 8)
    for note in out.chains.iter().flat_map(|c| &c.restarts) {
        let _ = writeln!(s, "note: {note}");
    }
    let rows = summary::summarize(&result.draws, true);
    s.push('\n');
    s.push_str(&summary::format_table(&rows, true));
    let mut warnings = Vec::new();
    if result.method != fit::Method::FixedParam {
        // fixed_param has no transitions to diagnose
        warnings = out.warnings(&options.mcmc);
        warnings.extend(hmc_warnings(out, options));
    }
    if matches!(result.method, fit::Method::Nuts | fit::Method::Hmc) {
        warnings.extend(warmup_warning(options.mcmc.warmup));
    }
    let convergence = summary::convergence_warnings_for(&rows, &result.draws);
    if out.flat.is_empty() || convergence.is_empty() {
        warnings.extend(convergence);
    } else {
        // An improper direction explains poor mixing: running longer cannot fix it, so the
        // run-length advice is replaced by a pointer to the cause.
        warnings.push(
            "R-hat and the effective sample sizes are poor because the chains wander along the \
             improper direction named above: no run length fixes that; make the posterior \
             proper first"
                .to_string(),
        );
    }
    if !warnings.is_empty() {
        s.push_str("\nwarnings:\n");
        for w in warnings {
            let _ = writeln!(s, "  - {w}");
        }
    }
    if let Some(note) = &result.gq_note {
        let _ = writeln!(s, "\nERROR: {note}");
    }
    s
}

/// A warning when `warmup` iterations are too few for NUTS's and HMC's adaptation, following
/// Stan's windowed adaptation (`stan::mcmc::windowed_adaptation`; `specs/nuts.md` §5.3, which
/// bayesc's schedule implements): below 20 iterations the metric is not adapted at all (Stan
/// warns "No … estimation is performed for num_warmup < 20"), and below the sum of its three
/// stages (initial buffer 75 + first slow window 25 + terminal buffer 50 = 150) the stages
/// are shrunk to 15% / 75% / 10% of the warmup (Stan warns "There aren't enough warmup
/// iterations to fit the three stages of adaptation"). With no warmup the chains also start
/// sampling at their initial values. `None` for 150 or more.
pub fn warmup_warning(warmup: usize) -> Option<String> {
    use crate::inference::adapt::windows::{
        BASE_WINDOW, INIT_BUFFER, MIN_WARMUP_FOR_METRIC, TERM_BUFFER,
    };
    let full = INIT_BUFFER + BASE_WINDOW + TERM_BUFFER;
    if warmup == 0 {
        Some(format!(
            "no warmup (--warmup 0): the step size and metric were not adapted and the draws \
             start at the initial values, so early draws may be far from the posterior; use \
             --warmup {full} or more (the default is 1000)"
        ))
    } else if warmup < MIN_WARMUP_FOR_METRIC {
        Some(format!(
            "--warmup {warmup} is below {MIN_WARMUP_FOR_METRIC}: the metric was not adapted \
             (as in Stan) and the step size hardly; use --warmup {full} or more"
        ))
    } else if warmup < full {
        Some(format!(
            "--warmup {warmup} is shorter than the {full} iterations of the three adaptation \
             stages ({INIT_BUFFER} + {BASE_WINDOW} + {TERM_BUFFER}, Stan's defaults): they were \
             shrunk to 15%/75%/10% of it, as Stan does, and the step size and metric may be \
             poorly adapted"
        ))
    } else {
        None
    }
}

/// E-BFMI per chain (`specs/diagnostics.md` §5).
pub fn hmc_warnings(out: &McmcOutput, options: &FitOptions) -> Vec<String> {
    if options.method == fit::Method::Mh {
        return Vec::new();
    }
    let mut w = Vec::new();
    let ids = out.chain_ids();
    for (c, chain) in out.chains.iter().enumerate() {
        let c = ids.get(c).copied().unwrap_or(c);
        if let Ok(b) = hmc_stats::e_bfmi(&chain.stats.energy)
            && b < hmc_stats::E_BFMI_THRESHOLD
        {
            w.push(format!(
                "chain {}: E-BFMI = {b:.3} is below {}: the sampler explores the energy distribution poorly; \
                 reparameterise the model (e.g. non-centred hierarchical parameters)",
                c + 1,
                hmc_stats::E_BFMI_THRESHOLD
            ));
        }
    }
    w
}

/// PSIS k̂, its verdict (or the collapse warning, [`fit::ViDiagnostics::collapsed`]) and the
/// ELBO estimate of a variational fit, as printed after the summary table by `bayesc fit` and
/// the REPL's `:fit` and `:diagnostics`: lines ending in a newline, starting with an empty
/// line; empty when the fit has no [`FitResult::vi`].
pub fn vi_diagnostics_text(result: &FitResult) -> String {
    vi_diagnostics_text_with(result, None)
}

/// [`vi_diagnostics_text`] knowing which parameters have no prior (`Checked::unpriored`), so
/// that the advice of a degenerate fit names the right cause.
pub fn vi_diagnostics_text_with(result: &FitResult, unpriored: Option<&[String]>) -> String {
    let mut s = vi_checks_text(result, unpriored);
    if let Some(note) = &result.gq_note {
        if s.is_empty() {
            s.push('\n');
        }
        s.push_str(&format!("ERROR: {note}\n"));
    }
    s
}

/// [`vi_diagnostics_text_with`] without the error about failed generated quantities.
fn vi_checks_text(result: &FitResult, unpriored: Option<&[String]>) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let Some(vi) = &result.vi else {
        if result.method.is_variational() && crate::inference::interrupt::requested() {
            s.push_str(
                "note: the PSIS k-hat check was skipped after Ctrl-C, so nothing here says \
                 whether the approximation matches the posterior\n",
            );
        }
        return s;
    };
    let khat = if vi.khat == f64::NEG_INFINITY && vi.gate.tail_tied {
        "undefined (the largest log ratios log p - log q are equal to rounding, so k-hat \
         cannot be estimated; the other checks use the raw weights)"
            .to_string()
    } else if vi.khat == f64::NEG_INFINITY {
        format!(
            "undefined (the log ratios log p - log q are constant to rounding: they span {} nats)",
            crate::output::summary::format_sig(vi.gate.log_ratio_range, 2)
        )
    } else {
        format!("{:.3}", vi.khat)
    };
    let batches = &vi.gate.khat_batches;
    let spread = if batches.len() > 1 && vi.khat.is_finite() {
        let lo = batches.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = batches.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        format!(
            "; each batch of {1}, {0} batches: {2} to {3}, noisier than the pooled value",
            batches.len(),
            vi.n_draws / batches.len(),
            fmt_khat(lo),
            fmt_khat(hi)
        )
    } else {
        String::new()
    };
    let _ = writeln!(
        s,
        "\nPSIS k-hat = {khat} ({} draws of the approximation{spread}; PSIS ESS = {:.0}; sd of log p - log q = {}); ELBO estimate = {}",
        vi.n_draws,
        vi.psis_ess,
        fit::fmt_elbo(vi.gate.log_ratio_sd),
        fit::fmt_elbo(vi.elbo)
    );
    let not_converged = fit::vi_result_not_converged(result);
    if !vi.collapsed.is_empty() {
        let _ = writeln!(
            s,
            "{}",
            vi_verdict::collapse_warning(result, &collapsed_list(&vi.collapsed), unpriored)
        );
    } else {
        // When q drifts along a direction where the log density does not decay, the cause is
        // the model (or an unfinished fit), which the drift warning below names; another
        // method is no remedy for an improper posterior.
        let remedy = if vi.unbounded.is_empty() {
            "Use --method nuts."
        } else {
            "See the warning below about the direction it drifts along before trying another method."
        };
        match vi.gate.verdict {
            // The draws shown are importance-resampled (Pathfinder always, `--psis-resample`):
            // the reweighting that revealed the error of q has already corrected it, which is
            // sound while k̂ < PSIS_KHAT_RESAMPLE_OK (Vehtari et al. 2024) — unless q is too
            // narrow, which resampling q's own draws cannot undo (`vi_verdict::too_narrow`).
            fit::ViVerdict::MeansUnreliable
                if vi.resampled
                    && vi.khat < fit::vi_gate::PSIS_KHAT_RESAMPLE_OK
                    && vi.psis_ess >= PSIS_ESS_FLOOR * vi.n_draws as f64
                    && !vi_verdict::too_narrow(vi) =>
            {
                let _ = writeln!(
                    s,
                    "note: the fitted approximation itself is off in its means and sds, not only its tails ({}); the draws shown are PSIS-resampled, which corrects this while k-hat < {} (here {khat}), so the summary above is usable",
                    vi.gate.reasons.join("; "),
                    fit::vi_gate::PSIS_KHAT_RESAMPLE_OK
                );
            }
            fit::ViVerdict::MeansUnreliable => {
                let _ = writeln!(
                    s,
                    "{}",
                    vi_verdict::means_unreliable_warning(
                        result,
                        vi,
                        &khat,
                        remedy,
                        not_converged.is_some() || vi.moving.is_some()
                    )
                );
            }
            fit::ViVerdict::TailsUnreliable => {
                let _ = writeln!(
                    s,
                    "note: the tails of the approximation are unreliable ({}): means, sds and central intervals are usable; extreme quantiles and tail probabilities are not (use --method nuts for those).",
                    vi.gate.reasons.join("; ")
                );
            }
            fit::ViVerdict::Reliable => {}
        }
        // q's draws where the log density is undefined are left out of k̂, which then reads
        // the rest: a Gaussian q of QBVI's family says so in its not-converged line, the other
        // approximations (Laplace, QNVB, Pathfinder's mixture) here ([X]: fresh-user finding,
        // session 21: Laplace on `y ~ normal(log(mu), 1)` with `real mu` put 6 % of its draws
        // at mu < 0 and printed k-hat -1.56 without a warning)
        if let Some(u) = &vi.undefined
            && !matches!(vi.gate.verdict, fit::ViVerdict::MeansUnreliable)
            && !matches!(&result.details, fit::FitDetails::Qbvi(_))
            && !vi.resampled
        {
            // (resampled draws carry no weight where log p is undefined: Pathfinder's are fine)
            let _ = writeln!(
                s,
                "WARNING: {}. k-hat is computed from the other draws only; the summary above \
                 includes draws where the model is undefined, so it is not a posterior.",
                u.phrase()
            );
        }
    }
    if let Some(m) = fit::start_message_for(vi, not_converged.as_deref(), unpriored) {
        let _ = writeln!(s, "{m}");
    }
    if vi.resampled {
        s.push_str("the draws were importance-resampled with the Pareto-smoothed weights\n");
    }
    s
}

/// A batch k̂ for the range in the report: "-inf" for constant ratios.
fn fmt_khat(k: f64) -> String {
    if k == f64::NEG_INFINITY {
        "-inf".to_string()
    } else {
        format!("{k:.2}")
    }
}

/// What a Pathfinder fit prints before its summary (shared by `bayesc fit` and the REPL): one
/// line per path with its L-BFGS run and the iterate whose Gaussian it kept, and which paths
/// failed. Pathfinder has no convergence claim of its own: how good the mixture is, is what
/// the PSIS k̂ below the summary says. Ends with a newline.
pub fn pathfinder_text(
    result: &FitResult,
    fit: &crate::inference::pathfinder::PathfinderFit,
) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} of {} paths found an approximation ({:.2} s):",
        fit.components.len(),
        fit.paths.len(),
        result.seconds
    );
    for (i, p) in fit.paths.iter().enumerate() {
        if p.approximation.is_some() {
            let _ = writeln!(
                s,
                "  path {}: {} L-BFGS iterations ({}); Gaussian of point {} of its path kept, ELBO = {}",
                i + 1,
                p.iterations,
                p.message,
                p.best_iteration,
                fit::fmt_elbo(p.elbo)
            );
        } else {
            let _ = writeln!(s, "  path {}: FAILED: {}", i + 1, p.message);
        }
    }
    let _ = writeln!(
        s,
        "posterior summary from {} draws of the mixture of the paths' Gaussians, importance-resampled (constrained scale):\n",
        result.draws.n_draws()
    );
    s
}

/// The line that replaces "converged" for an MC dropout fit whose training stopped by the exit
/// rule: MC dropout trains the weights to a point estimate, so the rule's firing says nothing
/// about a posterior (issue 13, item 9).
///
/// A smoothed objective that never became finite means no step was taken: the log density is
/// -inf or undefined with the masked weights (a division by a `@dropout` parameter, whose
/// masked value is 0), and the weights are still their start; the line then says so as a
/// WARNING ([X]: fresh-user finding, session 21: `y ~ normal(a + x / b, 1)` with `@dropout`
/// on b said "training finished" with the objective -inf throughout).
pub fn mcdropout_stop_line(iterations: usize, seconds: f64, objective: f64) -> String {
    if !objective.is_finite() {
        return format!(
            "WARNING: not trained: MC dropout's training objective was {} at every one of its \
             {iterations} iterations ({seconds:.2} s), so the weights stayed at their start: \
             with some weights masked to 0 the log density is -inf or undefined (a division \
             by a @dropout parameter, or its log?). Put @dropout on weights that can be 0, or \
             use another --method. The summary below is not trained.",
            fit::fmt_elbo(objective)
        );
    }
    format!(
        "training finished: the exit rule fired after {iterations} iterations ({seconds:.2} s); \
         smoothed training objective = {}. MC dropout fits the weights as a point \
         estimate, not a posterior",
        fit::fmt_elbo(objective)
    )
}

/// The summary table of an MC dropout fit and the note under it: the sd of a parameter
/// without `@dropout` is `point` (its draws are one value); the sd of a `@dropout` parameter is
/// the spread of its dropout masks, and only predictive quantities are approximately Bayesian.
pub fn mcdropout_table(draws: &crate::inference::draws::Draws) -> String {
    let rows = summary::summarize(draws, false);
    let mut s = summary::format_table_marking(&rows, false, &summary::is_point_estimate);
    let points: Vec<&str> = rows
        .iter()
        .filter(|r| summary::is_point_estimate(r))
        .map(|r| r.name.as_str())
        .collect();
    s.push_str(
        "\nnote: MC dropout (Gal & Ghahramani 2016) gives a point estimate of the weights, not a \
         posterior over them: the sd of a @dropout parameter is the spread of its dropout \
         masks, not posterior uncertainty, and only predictive quantities (generated \
         quantities, `bayesc predict`) are approximately Bayesian\n",
    );
    if !points.is_empty() {
        s.push_str(&format!(
            "note: `point` marks quantities that do not vary across the draws ({}): parameters \
             without @dropout and what depends only on them\n",
            points.join(", ")
        ));
    }
    s
}

/// At most [`COLLAPSED_SHOWN`] collapsed parameters by name (mean and sd), then how many more:
/// a network whose q collapsed everywhere has hundreds, and a list of them all hides the
/// message.
fn collapsed_list(collapsed: &[(String, f64, f64)]) -> String {
    let shown: Vec<String> = collapsed
        .iter()
        .take(COLLAPSED_SHOWN)
        .map(|(n, m, sd)| format!("`{n}` (mean {m:.3e}, sd {sd:.1e})"))
        .collect();
    let rest = collapsed.len().saturating_sub(COLLAPSED_SHOWN);
    if rest == 0 {
        shown.join(", ")
    } else {
        format!(
            "{} and {rest} more ({} parameters in all)",
            shown.join(", "),
            collapsed.len()
        )
    }
}

/// How many collapsed parameters the warning names.
const COLLAPSED_SHOWN: usize = 8;
