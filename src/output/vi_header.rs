//! The configuration comments of a variational draws file (CmdStan's `variational` layout) as
//! true statements about the bayesc method that fitted it.
//!
//! cmdstanpy's `from_csv` identifies the file as variational by `method = variational` and
//! builds its `VariationalArgs` from eight keys, each of which must be present and positive:
//! `algorithm` (`meanfield` or `fullrank`), `iter`, `grad_samples`, `elbo_samples`, `eta`,
//! `tol_rel_obj`, `eval_elbo` and `output_samples` (cmdstanpy 1.3.2, `stanfit/__init__.py`;
//! 1.2.5 the same). `CmdStanVB` then reads `eta` from the line after the one that starts with
//! `Stepsize adaptation` (1.3.2: anywhere among the comments; 1.2.5: that line must be the
//! first after the column header, start with `Stepsize adaptation complete.`, and the `eta`
//! line must be followed directly by the mean row). Every configuration line with a single
//! ` = ` is read as a key (1.2.5 before the column header: a single `=`), so the notes written
//! here contain no `=`.
//!
//! What bayesc writes: the eight keys with bayesc's values where they have a meaning (`iter`
//! the iteration cap, `grad_samples` the draws per gradient step, `elbo_samples` the draws of
//! the ELBO estimate the exit rule compares, `eta` the configured step size or learning rate,
//! `eval_elbo` the iterations between those estimates), a note after each saying what it is
//! for this method, `tol_rel_obj` marked as unused (CmdStan's relative-tolerance rule is not
//! bayesc's), and bayesc's own keys for the step-size schedule (`eta_schedule`) and the exit
//! rule (`exit_rule`, `exit_*`). The adaptation line keeps CmdStan's words, followed by a note
//! that nothing was adapted.

use crate::fit::{self, FitDetails, FitOptions, FitResult};
use crate::inference::qbvi::Covariance;
use crate::inference::vi::PROBE_DRAWS;
use crate::inference::vi::mcdropout::PROBE_MASKS;
use crate::inference::vi::vlaplace::{Curvature, EXACT_CURVATURE_MAX_DIM};

/// The first comment line after the column header: CmdStan ADVI's, which cmdstanpy needs before
/// the `eta = …` line, with a note that bayesc adapted nothing (no `=` in it).
pub(crate) const ADAPTATION_LINE: &str = "Stepsize adaptation complete. (CmdStan's line, kept for \
     cmdstanpy, which reads eta on the next line; bayesc adapts no step size: eta is fixed \
     before the fit, configured or set by bayesc, see the eta note above)";

/// The variational block of a draws file's configuration comments.
pub(super) struct ViHeader {
    /// (key, value) lines of the `variational` block, in order.
    pub settings: Vec<(&'static str, String)>,
    /// (key, note): a comment line (no `=`) to put after the line of `key`.
    pub notes: Vec<(&'static str, String)>,
    /// The value of `eta` as written, by [`eta_text`] (also written after [`ADAPTATION_LINE`]).
    pub eta: String,
}

/// `eta` as the header writes it: rounded to 6 significant digits and printed in the shortest
/// form that reads back as that rounded value (`0.05`, `0.0185776`, not the 17 digits of
/// 0.018577648766328014), which cmdstanpy parses with `float`. A step size set from the batch
/// size is computed, so its further digits carry nothing a reader needs.
pub(crate) fn eta_text(eta: f64) -> String {
    if !eta.is_finite() || eta == 0.0 {
        return eta.to_string();
    }
    format!("{eta:.5e}")
        .parse::<f64>()
        .unwrap_or(eta)
        .to_string()
}

/// What a method does per iteration, for the header.
struct MethodFacts {
    /// `iter`: the iteration cap.
    iter: usize,
    /// `eta`: the configured step size or learning rate.
    eta: f64,
    /// What eta is for this method and how its steps use it.
    eta_note: String,
    /// `eta_schedule`: `constant`, `adagrad` or `decay_1_over_t`.
    schedule: &'static str,
    /// `decay_after`, with the schedule `decay_1_over_t`.
    decay_after: Option<usize>,
    /// `grad_samples` and what they are.
    grad_samples: usize,
    grad_note: String,
    /// `elbo_samples` of the full-batch exit rule and what they are.
    elbo_samples: usize,
    elbo_note: String,
    /// Full-batch exit rule: window W, patience, minimum iterations, improvement margin.
    window: usize,
    patience: usize,
    min_iter: usize,
    min_improvement: Option<f64>,
    /// Extra keys (e.g. the curvature of vlaplace).
    extra: Vec<(&'static str, String)>,
}

/// Draws of q per step, the common case's note.
fn draws_note(n: usize, what: &str) -> String {
    format!(
        "grad_samples: {} of q per iteration {what}",
        crate::words::counted(n, "draw")
    )
}

/// The note of an ELBO estimated from the gradient's own draws.
fn same_draws_note(n: usize) -> String {
    format!(
        "elbo_samples: the ELBO of each iteration is the mean of log p - log q over its {} \
         (the gradient's draws)",
        crate::words::counted(n, "draw")
    )
}

/// The note of an ELBO estimated from draws fixed at the start.
fn fixed_draws_note(n: usize, what: &str) -> String {
    format!(
        "elbo_samples: the exit rule's ELBO uses {n} {what} drawn once and reused at each \
         estimate (common random numbers), not the gradient's draws"
    )
}

/// The facts of `method` under `options`; `d` is the number of unconstrained parameters.
fn method_facts(method: fit::Method, options: &FitOptions, d: usize) -> MethodFacts {
    use fit::Method as M;
    let probe = || fixed_draws_note(PROBE_DRAWS, "standard-normal draws");
    let base = |c: &crate::inference::vi::ViSettings| MethodFacts {
        iter: c.max_iter,
        eta: f64::NAN,
        eta_note: String::new(),
        schedule: "constant",
        decay_after: None,
        grad_samples: 1,
        grad_note: String::new(),
        elbo_samples: PROBE_DRAWS,
        elbo_note: probe(),
        window: c.window,
        patience: c.patience,
        min_iter: c.min_iter,
        min_improvement: None,
        extra: Vec::new(),
    };
    match method {
        M::Qnvb => {
            let o = &options.qnvb;
            let quad = format!(
                "{} deterministic quadrature points of q per step (not random draws)",
                o.n_e
            );
            MethodFacts {
                iter: o.max_iter,
                eta: o.lr,
                eta_note: "eta: QNVB's cap lr on the mean step per coordinate; the steps \
                           themselves are quasi-Newton (curvature-scaled), with no step size"
                    .into(),
                schedule: "constant",
                decay_after: None,
                grad_samples: o.n_e,
                grad_note: format!("grad_samples: {quad}"),
                elbo_samples: o.n_e,
                elbo_note: format!(
                    "elbo_samples: the ELBO of each step comes from the same {quad}"
                ),
                window: o.window,
                patience: o.patience,
                min_iter: o.min_iter,
                min_improvement: Some(o.min_improvement),
                extra: Vec::new(),
            }
        }
        M::Ivon => {
            let o = &options.ivon;
            // `fit::survey_fit`: with a minibatch plan (any --batch-size) and ess not set,
            // lambda is N, and the gradient is that of the mean loss -L/N
            let lambda = match &options.minibatch {
                Some(p) if o.ess == 1.0 => format!("N {} rows", p.n_obs),
                _ => crate::output::format_f64_roundtrip(o.ess),
            };
            let scale = if o.rescale_lr {
                format!(
                    "alpha (h0 + delta) with h0 {} and weight decay delta {}",
                    crate::output::format_f64_roundtrip(o.h0),
                    crate::output::format_f64_roundtrip(o.weight_decay)
                )
            } else {
                "alpha".to_string()
            };
            MethodFacts {
                eta: o.lr,
                eta_note: format!(
                    "eta: IVON's learning rate alpha, constant: each step moves the mean by \
                     {scale} times the debiased momentum of the gradient of -L/lambda (lambda \
                     {lambda}) plus delta m, over the curvature estimate h plus delta"
                ),
                grad_samples: o.mc_samples,
                grad_note: draws_note(o.mc_samples, "(reparameterised gradients)"),
                ..base(&o.common)
            }
        }
        M::Bbb => {
            let o = &options.bbb;
            MethodFacts {
                eta: o.lr,
                eta_note: "eta: Adam's learning rate on the mean and the scale parameters, \
                           constant"
                    .into(),
                grad_samples: o.mc_samples,
                grad_note: draws_note(o.mc_samples, "(reparameterised gradients)"),
                ..base(&o.common)
            }
        }
        M::Bbvi => {
            let o = &options.bbvi;
            MethodFacts {
                eta: o.eta,
                eta_note: "eta: AdaGrad's step; each coordinate moves by eta times its \
                           gradient over the root of its summed squared gradients, so the \
                           steps shrink as the run goes on"
                    .into(),
                schedule: "adagrad",
                grad_samples: o.mc_samples,
                grad_note: draws_note(o.mc_samples, "(score-function gradient, values of log p)"),
                elbo_samples: o.mc_samples,
                elbo_note: same_draws_note(o.mc_samples),
                ..base(&o.common)
            }
        }
        M::Ngbbvi => {
            let o = &options.ngbbvi;
            MethodFacts {
                eta: o.lr,
                eta_note: "eta: Adam's initial learning rate rho0 on the natural gradient; \
                           it decays as rho0 t0/t from the first iteration t0 at or after \
                           decay_after at which the ELBO stops rising"
                    .into(),
                schedule: "decay_1_over_t",
                decay_after: Some(o.decay_after),
                grad_samples: o.mc_samples,
                grad_note: draws_note(
                    o.mc_samples,
                    "(score-function gradient and Fisher matrix, half the draws each)",
                ),
                elbo_samples: o.mc_samples,
                elbo_note: same_draws_note(o.mc_samples),
                ..base(&o.common)
            }
        }
        M::Ngvi => {
            let o = &options.ngvi;
            MethodFacts {
                eta: o.step_size,
                eta_note: "eta: NGVI's step size beta on the natural parameters (mean and \
                           precision), constant"
                    .into(),
                grad_samples: o.mc_samples,
                grad_note: draws_note(o.mc_samples, "(gradients of log p)"),
                elbo_samples: o.mc_samples,
                elbo_note: same_draws_note(o.mc_samples),
                ..base(&o.common)
            }
        }
        M::Mgvb | M::Emgvb => {
            let o = if method == M::Mgvb {
                &options.mgvb
            } else {
                &options.emgvb
            };
            let (schedule, when) = match o.decay_after {
                Some(_) => ("decay_1_over_t", "decays as beta0 t_d/t after decay_after"),
                None => ("constant", "constant"),
            };
            MethodFacts {
                eta: o.step_size,
                eta_note: format!(
                    "eta: the step size beta0 on the manifold natural gradient (momentum \
                     weight {}), {when}",
                    o.momentum
                ),
                schedule,
                decay_after: o.decay_after,
                grad_samples: o.mc_samples,
                grad_note: draws_note(o.mc_samples, "(score-function gradient, values of log p)"),
                elbo_samples: o.mc_samples,
                elbo_note: same_draws_note(o.mc_samples),
                ..base(&o.common)
            }
        }
        M::Von => MethodFacts {
            eta: options.von.step_size,
            eta_note: "eta: VON's step size beta on the mean and precision, constant".into(),
            grad_note: "grad_samples: 1 draw of q per iteration (its gradient, and the \
                        Hessian by finite differences of the gradient)"
                .into(),
            ..base(&options.von.common)
        },
        M::Vadam => {
            let o = &options.vadam;
            MethodFacts {
                eta: o.lr,
                eta_note: "eta: Vadam's learning rate alpha (Adam-style step on the mean), \
                           constant"
                    .into(),
                grad_samples: o.mc_samples,
                grad_note: draws_note(o.mc_samples, "(per-row gradients on the batch)"),
                ..base(&o.common)
            }
        }
        M::Vogn => {
            let o = &options.vogn;
            let minibatch = matches!(&options.minibatch,
                Some(p) if p.settings.batch_size < p.n_obs);
            let defaults = crate::inference::vi::vogn::VognSettings::default();
            // --step-size sets both `lr` and `lr_minibatch`; unset, batches of M < N rows run
            // at the minibatch default in place of the full-batch one (`fit::survey_fit`)
            let configured = o.lr != defaults.lr || o.lr_minibatch != defaults.lr_minibatch;
            let which = match (minibatch, configured) {
                (_, true) => "configured by --step-size".to_string(),
                (true, false) => format!(
                    "set by bayesc, not configured: the minibatch default {} in place of the \
                     full-batch {}, since the batches are smaller than N (--step-size to \
                     override)",
                    eta_text(o.lr_minibatch),
                    eta_text(o.lr)
                ),
                (false, false) => "the full-batch default".to_string(),
            };
            MethodFacts {
                eta: if minibatch { o.lr_minibatch } else { o.lr },
                eta_note: format!(
                    "eta: VOGN's step alpha on the mean (each step moves it by alpha times the \
                     mean per-row gradient over the moving average of the squared per-row \
                     gradients plus the prior's curvature per row), constant; {which}"
                ),
                grad_note: "grad_samples: 1 draw of q per iteration (per-row gradients)".into(),
                ..base(&o.common)
            }
        }
        M::Vlaplace => {
            let o = &options.vlaplace;
            let exact = match o.curvature {
                Some(c) => c == Curvature::Exact,
                None => d <= EXACT_CURVATURE_MAX_DIM,
            };
            let mut extra = vec![(
                "curvature",
                if exact { "exact" } else { "hutchinson" }.to_string(),
            )];
            if !exact {
                extra.push(("curvature_probes", o.probes.to_string()));
            }
            MethodFacts {
                eta: o.lr,
                eta_note: "eta: Adam's learning rate on the mean, constant; the variances are \
                           the inverse curvature, not stepped"
                    .into(),
                grad_note: "grad_samples: no draws; 1 gradient at the mean per iteration \
                            (1 is written because cmdstanpy needs a positive count)"
                    .into(),
                elbo_samples: 1,
                elbo_note: "elbo_samples: no draws; the ELBO is vlaplace's closed-form \
                            objective at the mean (1 is written because cmdstanpy needs a \
                            positive count)"
                    .into(),
                extra,
                ..base(&o.common)
            }
        }
        M::Mcdropout => MethodFacts {
            eta: options.mcdropout.lr,
            eta_note: "eta: Adam's learning rate on the weights, constant".into(),
            grad_note: "grad_samples: 1 dropout mask per iteration".into(),
            elbo_samples: PROBE_MASKS,
            elbo_note: fixed_draws_note(PROBE_MASKS, "dropout masks"),
            ..base(&options.mcdropout.common)
        },
        // QBVI (and anything else reaching the variational writer with QBVI's details)
        _ => {
            let o = &options.qbvi;
            let (eta, default) = (options.qbvi_step_size(d), o.effective_step_size(d));
            let mut eta_note = "eta: QBVI's step size beta on the natural gradient of the mean \
                                and precision, constant"
                .to_string();
            let full_default = crate::inference::qbvi::QbviSettings {
                covariance: crate::inference::qbvi::Covariance::Diagonal,
                ..o.clone()
            }
            .effective_step_size(d);
            if o.step_size.is_none() && default < full_default {
                // the full family's rule of specs/qbvi.md §11 lowered it below 0.05 (d > S/10)
                eta_note.push_str(&format!(
                    "; set by bayesc from the dimension, not configured: the full-covariance \
                     rule min({}, 0.005 S/d) with S {} draws per step and d {d} parameters \
                     (specs/qbvi.md section 11; --step-size to override)",
                    eta_text(full_default),
                    o.n_samples
                ));
            }
            if let Some(p) = options.minibatch.as_ref().filter(|_| eta < default) {
                eta_note.push_str(&format!(
                    "; set by bayesc from the batch size, not configured: the default {} \
                     lowered to 2 r/(N/M - 1) with r {} for batches of M {} of N {} rows, so \
                     that the batch noise keeps the mean iterate within about 0.3 sd of the \
                     optimum (--step-size to override)",
                    eta_text(default),
                    crate::inference::qbvi::MINIBATCH_NOISE_RATIO,
                    p.settings.batch_size,
                    p.n_obs
                ));
            }
            MethodFacts {
                iter: o.max_iter,
                eta,
                eta_note,
                schedule: "constant",
                decay_after: None,
                grad_samples: o.n_samples,
                grad_note: draws_note(o.n_samples, "(natural-gradient estimate)"),
                elbo_samples: o.n_samples,
                elbo_note: same_draws_note(o.n_samples),
                window: o.window,
                patience: o.patience,
                min_iter: 0,
                min_improvement: None,
                extra: Vec::new(),
            }
        }
    }
}

/// Whether `method` under `options` stops by the epoch rule of the minibatch loops (full-data
/// ELBO every few epochs) rather than by the per-iteration smoothed-ELBO rule: any fit with a
/// minibatch plan, except IVON, BBB, VON and VOGN, which take the full-batch loop when the
/// batch is all N rows.
fn epoch_rule(method: fit::Method, options: &FitOptions) -> bool {
    use fit::Method as M;
    match &options.minibatch {
        None => false,
        Some(p) => match method {
            M::Ivon | M::Bbb | M::Von | M::Vogn => p.settings.batch_size < p.n_obs,
            _ => true,
        },
    }
}

/// The variational block for `result` fitted under `options`, with `n` draws written.
pub(super) fn vi_header(result: &FitResult, options: &FitOptions, n: usize) -> ViHeader {
    // `stride`: the iterations between the full-batch exit rule's ELBO estimates (5 for the
    // methods whose fixed-draw probe runs every PROBE_STRIDE-th iteration, else 1)
    let (family, d, stride) = match &result.details {
        FitDetails::Qbvi(f) => {
            let family = match (result.method, f.family) {
                (fit::Method::Mcdropout, _) | (_, Covariance::Diagonal) => "meanfield",
                (_, Covariance::Full) => "fullrank",
            };
            (family, f.mean.len(), f.trace_stride.max(1))
        }
        FitDetails::Qnvb(f) => ("meanfield", f.mean.len(), 1),
        _ => ("meanfield", 0, 1),
    };
    let m = method_facts(result.method, options, d);
    let mut notes: Vec<(&'static str, String)> = Vec::new();
    if result.method == fit::Method::Mcdropout {
        notes.push((
            "algorithm",
            "algorithm: q is a product of Bernoulli dropout masks on the weights, not a \
             Gaussian; meanfield is the nearest of CmdStan's two words"
                .into(),
        ));
    }
    notes.push((
        "iter",
        "iter: the iteration cap (the exit rule below usually stops the fit earlier)".into(),
    ));
    notes.push(("grad_samples", m.grad_note));
    let (elbo_samples, eval_elbo, exit) =
        match (&options.minibatch, epoch_rule(result.method, options)) {
            (Some(p), true) => {
                let s = &p.settings;
                let draws = if result.method == fit::Method::Mcdropout {
                    PROBE_MASKS
                } else {
                    s.elbo_draws
                };
                let every = p.batches_per_epoch() * p.epochs_per_check();
                notes.push((
                    "elbo_samples",
                    format!(
                        "elbo_samples: the exit rule's full-data ELBO uses {draws} draws fixed at \
                     the start; each iteration also records a batch estimate"
                    ),
                ));
                notes.push((
                    "eval_elbo",
                    format!(
                        "eval_elbo: the full-data ELBO is evaluated every {} (every {})",
                        crate::words::counted(every, "iteration"),
                        crate::words::counted(p.epochs_per_check(), "epoch")
                    ),
                ));
                let exit = vec![
                    ("exit_rule", "epoch_smoothed_elbo".to_string()),
                    ("exit_window_epochs", s.window_epochs.to_string()),
                    ("exit_patience_epochs", s.patience_epochs.to_string()),
                    ("exit_min_epochs", s.min_epochs.to_string()),
                    ("exit_min_iter", s.min_iterations.to_string()),
                    ("exit_min_improvement", s.min_improvement.to_string()),
                ];
                (draws, every, exit)
            }
            _ => {
                notes.push(("elbo_samples", m.elbo_note));
                if stride > 1 {
                    notes.push((
                        "eval_elbo",
                        format!(
                            "eval_elbo: the exit rule's ELBO is estimated every {stride}th \
                             iteration (1, {}, {}, ...); its window, patience and minimum below \
                             are in iterations",
                            stride + 1,
                            2 * stride + 1
                        ),
                    ));
                }
                let mut exit = vec![
                    ("exit_rule", "smoothed_elbo".to_string()),
                    ("exit_window", m.window.to_string()),
                    ("exit_patience", m.patience.to_string()),
                    ("exit_min_iter", m.min_iter.to_string()),
                ];
                if let Some(delta) = m.min_improvement {
                    exit.push(("exit_min_improvement", delta.to_string()));
                }
                (m.elbo_samples, stride, exit)
            }
        };
    notes.push(("eta", m.eta_note));
    notes.push((
        "tol_rel_obj",
        "tol_rel_obj: not used; CmdStan's default, written because cmdstanpy requires the key \
         (bayesc stops by exit_rule below)"
            .into(),
    ));
    let mut settings = vec![
        ("algorithm", family.to_string()),
        ("variational_method", result.method.to_string()),
        ("iter", m.iter.to_string()),
        ("grad_samples", m.grad_samples.to_string()),
        ("elbo_samples", elbo_samples.to_string()),
        ("eta", eta_text(m.eta)),
        ("tol_rel_obj", "0.01".to_string()),
        ("eval_elbo", eval_elbo.to_string()),
        ("output_samples", n.to_string()),
        ("eta_schedule", m.schedule.to_string()),
    ];
    if let Some(t) = m.decay_after {
        settings.push(("decay_after", t.to_string()));
    }
    settings.extend(m.extra);
    settings.extend(exit);
    // the Newton refinement of the mean after the exit rule (fit::refine_mean), where it applies
    let refines = result.method != fit::Method::Mcdropout
        && matches!(result.details, FitDetails::Qbvi(_) | FitDetails::Qnvb(_))
        && d <= crate::fit::stationarity::NEWTON_MAX_D;
    if refines {
        settings.push((
            "refine_mean",
            if options.refine_mean { "newton" } else { "off" }.to_string(),
        ));
        notes.push((
            "refine_mean",
            if options.refine_mean {
                format!(
                    "refine_mean: after the exit rule the mean takes up to {} Newton steps of the \
                     ELBO from full-data gradients at draws of q (a step longer than {} \
                     posterior sd is not taken), a mean-field q's at the ELBO's fixed-point sds, \
                     which the ELBO methods report (not VOGN, Vadam, vlaplace); the fit's report \
                     says how far they moved; --no-refine keeps the method's own end point",
                    crate::fit::refine::REFINE_STEPS_MAX,
                    crate::fit::refine::REFINE_MAX
                )
            } else {
                "refine_mean: off (--no-refine): the mean is the method's own end point".into()
            },
        ));
    }
    ViHeader {
        settings,
        notes,
        eta: eta_text(m.eta),
    }
}

/// Puts each note of `notes` as a comment line (indented under its key, in parentheses) after
/// the configuration line of its key in `config` (lines as made by
/// [`super::stan_csv::cmdstan_config_lines`]: `    key = value`); a note whose key is absent
/// goes nowhere.
pub(super) fn insert_notes(config: &mut Vec<String>, notes: &[(&'static str, String)]) {
    for (key, note) in notes {
        let prefix = format!("    {key} = ");
        if let Some(at) = config.iter().position(|l| l.starts_with(&prefix)) {
            config.insert(at + 1, format!("      ({note})"));
        }
    }
}
