//! Commands on stored fits and settings: `:set`, `:unset`, `:fits`, `:summary`, `:param`,
//! `:compare`, `:save`, `:diagnostics`, `:elbo`, and posterior expressions.

use super::*;

impl Session {
    pub(super) fn set(&mut self, args: &[&str]) -> Output {
        match args {
            [] => {
                if self.defaults.is_empty() {
                    return Output::ok("no session defaults (e.g. `:set seed 3`)");
                }
                // the settings that the current method does not use say so
                let unused = self
                    .parse_fit_args(&[])
                    .map(|p| p.unused)
                    .unwrap_or_default();
                let lines: Vec<String> = self
                    .defaults
                    .iter()
                    .map(|(k, v)| {
                        let value = v.as_deref().unwrap_or("on");
                        match unused.iter().find(|u| u.key == *k) {
                            Some(u) => {
                                format!(
                                    "{k} = {value}  (for {}; not used by {})",
                                    u.methods, u.method
                                )
                            }
                            None => format!("{k} = {value}"),
                        }
                    })
                    .collect();
                Output::ok(lines.join("\n"))
            }
            [key, rest @ ..] if rest.len() <= 1 => {
                let key = key.trim_start_matches('-').replace('_', "-");
                let settings = settings();
                let Some(setting) = settings.iter().find(|s| s.name == key) else {
                    return Output::error(unknown_setting(&key, &settings));
                };
                let value = match (rest.first().copied(), setting.takes_value) {
                    // `:set diagonal` turns a flag on
                    (None, false) => None,
                    (None, true) => {
                        return Output::error(format!(
                            "usage: :set {key} VALUE (`{key}` takes a value, as `--{key}` does \
                             in `bayesc fit`)"
                        ));
                    }
                    (Some("on" | "true" | "yes"), false) => None,
                    (Some("off" | "false" | "no"), false) => {
                        self.defaults.retain(|(k, _)| *k != key);
                        return Output::ok(format!("{key} = off"));
                    }
                    (Some(v), false) => {
                        return Output::error(format!(
                            "error: `{key}` is on or off (`:set {key} on`, `:set {key} off`), \
                             not `{v}`"
                        ));
                    }
                    (Some(v), true) => Some(v.to_string()),
                };
                let old = self.defaults.clone();
                self.defaults.retain(|(k, _)| *k != key);
                self.defaults.push((key.clone(), value.clone()));
                // validate with the same parser as :fit: a bad value is refused; a setting of
                // another method than the session's is kept, with a note (it is left out of
                // fits with a method it does not apply to)
                let unused = match self.parse_fit_args(&[]) {
                    Ok(p) => p.unused,
                    Err(e) => {
                        self.defaults = old;
                        // clap's usage line is that of :fit, not of :set
                        let e: Vec<&str> = e.lines().filter(|l| !l.starts_with("Usage:")).collect();
                        return Output::error(format!(
                            "cannot set `{key}`:\n{}",
                            e.join("\n").trim_end()
                        ));
                    }
                };
                let mut text = format!("{key} = {}\n", value.as_deref().unwrap_or("on"));
                for u in &unused {
                    if u.key == key {
                        let _ = writeln!(
                            text,
                            "note: {key} applies to {}, not {} (the current method): kept for \
                             `:fit METHOD` with one of those, or after `:set method METHOD`",
                            u.methods, u.method
                        );
                    } else if key == "method" {
                        let _ = writeln!(
                            text,
                            "note: the session default {}: not used while the method is {}",
                            u.describe(),
                            u.method
                        );
                    }
                }
                Output::ok(text)
            }
            _ => Output::error("usage: :set KEY VALUE (e.g. `:set seed 3`, `:set diagonal on`)"),
        }
    }

    pub(super) fn unset(&mut self, args: &[&str]) -> Output {
        match args {
            [key] => {
                let key = key.trim_start_matches('-').replace('_', "-");
                let before = self.defaults.len();
                self.defaults.retain(|(k, _)| *k != key);
                if self.defaults.len() < before {
                    Output::ok(format!("{key} unset"))
                } else {
                    Output::error(format!("error: `{key}` has no session default"))
                }
            }
            _ => Output::error("usage: :unset KEY"),
        }
    }

    // ----- inspecting -----------------------------------------------------------------------

    /// The named fit, or the last one.
    pub(super) fn pick(&self, name: Option<&str>) -> Result<&StoredFit, Output> {
        let f = self.pick_any(name)?;
        match super::fitting::warmup_only_chains(&f.result) {
            Some(chains) => Err(Output::error(format!(
                "error: {} was stopped in warmup: it holds {chains} (--save-warmup) and no \
                 posterior draws\n  help: `:save {} FILE` writes them; `:fit` again for posterior \
                 draws",
                f.name, f.name
            ))),
            None => Ok(f),
        }
    }

    /// [`Self::pick`] without refusing a fit stopped in warmup (`:save` writes its warmup
    /// draws).
    pub(super) fn pick_any(&self, name: Option<&str>) -> Result<&StoredFit, Output> {
        match name {
            None => self
                .fits
                .last()
                .ok_or_else(|| Output::error("error: no fits yet (use :fit)")),
            Some(n) => self.fits.iter().find(|f| f.name == n).ok_or_else(|| {
                let mut msg = format!("error: no fit named `{n}`");
                if let Some(s) = best_match(n, self.fits.iter().map(|f| f.name.as_str())) {
                    let _ = write!(msg, "\n  help: did you mean `{s}`?");
                } else if !self.fits.is_empty() {
                    let names: Vec<&str> = self.fits.iter().map(|f| f.name.as_str()).collect();
                    let _ = write!(msg, "\n  the fits are {}", names.join(", "));
                }
                Output::error(msg)
            }),
        }
    }

    /// `:fits`: one line per stored fit, in aligned columns — name, method, seed, what it holds
    /// (chains × draws, or a point estimate), how it ended with its objective (see
    /// [`fit_status`]), the time and the model.
    pub(super) fn list_fits(&self) -> Output {
        if self.fits.is_empty() {
            return Output::ok("no fits yet");
        }
        let rows: Vec<Vec<String>> = self
            .fits
            .iter()
            .map(|f| {
                let what = match &f.result.details {
                    FitDetails::Optimize(o) => {
                        format!("point estimate ({})", optimizer_name(o.algorithm))
                    }
                    _ if let Some(w) = super::fitting::warmup_only_chains(&f.result) => w,
                    _ => format!(
                        "{} chain(s) × {} draws",
                        f.result.draws.chains.len(),
                        f.result.draws.n_draws()
                    ),
                };
                vec![
                    f.name.clone(),
                    f.result.method.to_string(),
                    format!("seed {}", f.result.seed),
                    what,
                    fit_status(f),
                    format!("{:.2} s", f.result.seconds),
                    f.model_name.clone(),
                ]
            })
            .collect();
        let widths: Vec<usize> = (0..rows[0].len())
            .map(|j| rows.iter().map(|r| r[j].chars().count()).max().unwrap_or(0))
            .collect();
        let mut s = String::new();
        for r in &rows {
            let line: Vec<String> = r
                .iter()
                .zip(&widths)
                .map(|(c, w)| format!("{c:<w$}"))
                .collect();
            s.push_str(line.join("  ").trim_end());
            s.push('\n');
        }
        Output::ok(s)
    }

    /// `:summary [FIT]`: every quantity of one fit. More words are an error (they were once
    /// ignored): a quantity name among them points to `:param NAME [FIT]`.
    pub(super) fn summary(&self, args: &[&str]) -> Output {
        if args.len() > 1 {
            // in either order: `:summary q alpha`, `:summary alpha q`
            let fit = args.iter().find_map(|w| self.pick(Some(w)).ok());
            let quantity = args.iter().find(|w| {
                fit.or(self.fits.last())
                    .is_some_and(|f| !quantity_columns(&f.result.draws, w).is_empty())
            });
            let help = match (quantity, fit) {
                (Some(q), Some(f)) => format!("to summarise one quantity, `:param {q} {}`", f.name),
                (Some(q), None) => format!("to summarise one quantity, `:param {q} [FIT]`"),
                _ => "`:summary FIT` shows every quantity of one fit; `:param NAME [FIT]` one \
                      quantity; `:compare FIT_A FIT_B` two fits"
                    .to_string(),
            };
            return too_many_args("summary", args, 1, Some(help));
        }
        let f = match self.pick(args.first().copied()) {
            Ok(f) => f,
            Err(mut o) => {
                // `:summary alpha`: a quantity of the last fit, not a fit
                if let (Some(w), Some(last)) = (args.first(), self.fits.last())
                    && !quantity_columns(&last.result.draws, w).is_empty()
                {
                    let _ = writeln!(
                        o.text,
                        "  help: `{w}` is a quantity of {}, not a fit: `:param {w}` summarises it",
                        last.name
                    );
                }
                return o;
            }
        };
        // an optimize fit: what `bayesc fit --method optimize` prints — estimates, standard
        // errors, the log density at the optimum and whether it converged — with the generated
        // quantities at the estimate
        if let FitDetails::Optimize(o) = &f.result.details {
            let all: Vec<usize> = (0..f.result.draws.names.len()).collect();
            return Output::ok(format!(
                "{}\n{}\n{}",
                fit_header(f),
                optimize_param(o, &f.result.draws, &all),
                optimize_footer(&f.result, o)
            ));
        }
        let mcmc = f.result.method.is_mcmc();
        let rows = summary::summarize(&f.result.draws, mcmc);
        Output::ok(format!(
            "{}\n{}",
            fit_header(f),
            summary::format_table(&rows, mcmc)
        ))
    }

    pub(super) fn param(&self, args: &[&str]) -> Output {
        let (name, fit) = match args {
            [n] => (*n, None),
            [n, f] => (*n, Some(*f)),
            _ => return Output::error("usage: :param NAME [FIT]"),
        };
        let f = match self.pick(fit) {
            Ok(f) => f,
            Err(o) => return o,
        };
        let draws = &f.result.draws;
        let cols = quantity_columns(draws, name);
        if cols.is_empty() {
            let bases: BTreeSet<&str> = draws
                .names
                .iter()
                .map(|n| n.split('[').next().unwrap_or(n))
                .collect();
            let base = name.split('[').next().unwrap_or(name);
            // a decimal index (`beta[1.5]`) is not an element out of range but no position
            if let Some(msg) = crate::repl::expr::non_integer_index_message(name) {
                return Output::error(format!("error: {msg}"));
            }
            // an element of a variable the draws hold, with an index outside its range: the
            // wording of a posterior expression's (`beta[9]`)
            let elements: Vec<&String> = draws
                .names
                .iter()
                .filter(|n| n.starts_with(&format!("{base}[")))
                .collect();
            if let (true, Some(first), Some(last)) =
                (name.contains('['), elements.first(), elements.last())
            {
                return Output::error(format!(
                    "error: {}",
                    crate::repl::expr::out_of_range_message(name, first, last)
                ));
            }
            let mut msg = format!("error: `{name}` is not in the draws of {}", f.name);
            if let Some(s) = best_match(base, bases.iter().copied()) {
                let _ = write!(msg, "\n  help: did you mean `{s}`?");
            }
            return Output::error(msg);
        }
        if let FitDetails::Optimize(o) = &f.result.details {
            return Output::ok(optimize_param(o, draws, &cols));
        }
        let sub = select(draws, &cols);
        let mcmc = f.result.method.is_mcmc();
        let rows = summary::summarize(&sub, mcmc);
        Output::ok(summary::format_table(&rows, mcmc))
    }

    /// `:compare A B`: side by side, the posterior mean and sd of each quantity the two fits
    /// share and the difference in sd units. An optimize fit is a point estimate: its column
    /// holds the estimate, its sd is "—", and the difference is scaled by the other fit's sd
    /// (by nothing when both are point estimates). A value that is not a number prints as "—".
    pub(super) fn compare(&self, args: &[&str]) -> Output {
        let [a, b] = args else {
            return Output::error("usage: :compare FIT_A FIT_B");
        };
        let (fa, fb) = match (self.pick(Some(a)), self.pick(Some(b))) {
            (Ok(x), Ok(y)) => (x, y),
            (Err(o), _) | (_, Err(o)) => return o,
        };
        let point = |f: &StoredFit| f.result.method == fit::Method::Optimize;
        let (pa, pb) = (point(fa), point(fb));
        // a quantity NaN at some draws is not compared (its summary over the other draws
        // describes a different set of draws in each fit): it shows as `—`
        let whole = |rows: Vec<summary::SummaryRow>| -> Vec<summary::SummaryRow> {
            rows.into_iter()
                .map(|mut r| {
                    if r.partial() {
                        (r.mean, r.sd) = (f64::NAN, f64::NAN);
                    }
                    r
                })
                .collect()
        };
        let ra = whole(summary::summarize(&fa.result.draws, false));
        let rb = whole(summary::summarize(&fb.result.draws, false));
        let centre = |n: &str, p: bool| {
            if p {
                format!("est({n})")
            } else {
                format!("mean({n})")
            }
        };
        let (ca, cb) = (centre(a, pa), centre(b, pb));
        let diff_name = if pa && pb { "diff" } else { "diff/sd" };
        let mut cells = vec![vec![
            "name".to_string(),
            ca.clone(),
            format!("sd({a})"),
            cb.clone(),
            format!("sd({b})"),
            diff_name.to_string(),
        ]];
        let mut undefined = false;
        for x in &ra {
            let Some(y) = rb.iter().find(|y| y.name == x.name) else {
                continue;
            };
            let (sa, sb) = (
                if pa { f64::NAN } else { x.sd },
                if pb { f64::NAN } else { y.sd },
            );
            let scale = match (pa, pb) {
                (false, false) => ((sa * sa + sb * sb) / 2.0).sqrt(),
                (true, false) => sb,
                (false, true) => sa,
                (true, true) => 1.0,
            };
            let diff = (y.mean - x.mean) / scale;
            let diff = if diff.is_finite() && scale > 0.0 {
                if pa && pb {
                    format_sig(diff, 4)
                } else {
                    format!("{diff:+.2}")
                }
            } else {
                undefined = true;
                "—".to_string()
            };
            cells.push(vec![
                x.name.clone(),
                number_cell(Some(x.mean), &mut undefined),
                number_cell((!pa).then_some(sa), &mut undefined),
                number_cell(Some(y.mean), &mut undefined),
                number_cell((!pb).then_some(sb), &mut undefined),
                diff,
            ]);
        }
        if cells.len() == 1 {
            return Output::error(format!("error: {a} and {b} have no quantity in common"));
        }
        let mut s = format!("{}\n{}\n", fit_header(fa), fit_header(fb));
        let points: Vec<&str> = [(pa, *a), (pb, *b)]
            .iter()
            .filter(|(p, _)| *p)
            .map(|(_, n)| *n)
            .collect();
        match points.as_slice() {
            [p] => {
                let _ = writeln!(
                    s,
                    "{p} is a point estimate (optimize): est({p}) is its estimate and sd({p}) is \
                     \"—\" (no posterior sd; `:summary {p}` shows its standard errors)"
                );
            }
            [p, q] => {
                let _ = writeln!(
                    s,
                    "{p} and {q} are point estimates (optimize): est(·) is the estimate and \
                     sd(·) is \"—\" (no posterior sd; `:summary FIT` shows the standard errors)"
                );
            }
            _ => {}
        }
        let _ = match (pa, pb) {
            (false, false) => writeln!(s, "diff/sd = ({cb} − {ca}) / √((sd({a})² + sd({b})²)/2)"),
            (true, false) => writeln!(s, "diff/sd = ({cb} − {ca}) / sd({b})"),
            (false, true) => writeln!(s, "diff/sd = ({cb} − {ca}) / sd({a})"),
            (true, true) => writeln!(s, "diff = {cb} − {ca}"),
        };
        s.push('\n');
        s.push_str(&align(&cells));
        if undefined {
            s.push_str("—: not defined (the draws include NaN, or the sd to divide by is 0)\n");
        }
        Output::ok(s)
    }

    pub(super) fn save(&self, args: &[&str]) -> Output {
        let (fit, file) = match args {
            [file] => (None, *file),
            [fit, file] => (Some(*fit), *file),
            _ => return Output::error("usage: :save [FIT] FILE"),
        };
        // `:save fit1` means the fit, with its FILE forgotten, not a file called `fit1`
        if fit.is_none() && self.fits.iter().any(|f| f.name == file) {
            return Output::error(format!(
                "error: `{file}` is the name of a fit; give the file too: `:save {file} FILE` \
                 (`:save FILE` saves the last fit)\n  usage: :save [FIT] FILE"
            ));
        }
        let f = match self.pick_any(fit) {
            Ok(f) => f,
            Err(o) => return o,
        };
        let warmup_only = super::fitting::warmup_only_chains(&f.result);
        match write_outputs(
            Path::new(file),
            &f.result,
            &f.options,
            Path::new(&f.model_name),
        ) {
            Ok(files) if warmup_only.is_some() => Output::ok(format!(
                "{}: {} written to {} (the fit was stopped in warmup; each file ends \
                 `# interrupted: … (in warmup)`)",
                f.name,
                warmup_only.unwrap_or_default(),
                files.join(", ")
            )),
            Ok(files) if f.interrupted => Output::ok(format!(
                "{} draws written to {} (incomplete: the fit was interrupted)",
                f.name,
                files.join(", ")
            )),
            Ok(files) => Output::ok(format!("{} draws written to {}", f.name, files.join(", "))),
            Err(e) => Output::error(format!("error: cannot write draws to `{file}`: {e}")),
        }
    }

    pub(super) fn diagnostics(&self, args: &[&str]) -> Output {
        let f = match self.pick(args.first().copied()) {
            Ok(f) => f,
            Err(o) => return o,
        };
        let mut s = fit_header(f);
        s.push('\n');
        if let FitDetails::Qbvi(q) = &f.result.details {
            let _ = writeln!(
                s,
                "stop reason: {}\niterations: {} (returned iteration {})\nbest smoothed ELBO: {}\nlast ELBO estimate: {}\nskipped steps (positive-definiteness guard): {}",
                if f.result.method == fit::Method::Mcdropout
                    && q.stop == StopReason::ExitRule
                    && q.skipped_steps == 0
                {
                    "training finished (the exit rule fired; MC dropout's weights are a point \
                     estimate, not a posterior)"
                        .to_string()
                } else if q.stop == StopReason::ExitRule {
                    match exit_rule_not_converged(&f.result, q, &f.options) {
                        Some(why) => format!("the exit rule fired; NOT converged: {why}"),
                        None => "the exit rule fired; converged".to_string(),
                    }
                } else {
                    stop_reason(q.stop, q.skipped_steps).to_string()
                },
                q.iterations,
                q.returned_iteration,
                fit::fmt_elbo(q.best_smoothed_elbo),
                fit::fmt_elbo(q.elbo_trace.last().copied().unwrap_or(f64::NAN)),
                q.skipped_steps
            );
            s.push_str(&vi_diagnostics_text_with(&f.result, Some(&f.unpriored)));
        } else if let FitDetails::Mcmc(out) = &f.result.details {
            // the kept chains of an interrupted run keep their own numbers, as in the files
            // `:save` writes (`McmcOutput::chain_ids`)
            let ids = out.chain_ids();
            for (c, ch) in out.chains.iter().enumerate() {
                let bfmi = diagnostics::e_bfmi(&ch.stats.energy)
                    .map(|b| format!("{b:.3}"))
                    .unwrap_or_else(|_| "NA".into());
                let _ = writeln!(
                    s,
                    "chain {}: {} draws, step size {:.4}, mean accept_stat {:.3}, divergences {}, max tree depth hits {}, E-BFMI {}",
                    ids.get(c).copied().unwrap_or(c) + 1,
                    ch.stats.len(),
                    ch.step_size,
                    ch.mean_accept_stat(),
                    ch.divergences,
                    ch.max_treedepth_hits,
                    bfmi
                );
            }
            let rows = summary::summarize(&f.result.draws, true);
            let worst = |g: fn(&summary::SummaryRow) -> Option<f64>, max: bool| {
                rows.iter()
                    .filter_map(|r| g(r).map(|v| (v, r.name.as_str())))
                    .fold(None, |acc: Option<(f64, &str)>, (v, n)| match acc {
                        Some((a, _)) if (max && a >= v) || (!max && a <= v) => acc,
                        _ => Some((v, n)),
                    })
            };
            if let Some((v, n)) = worst(|r| r.rhat, true) {
                let _ = writeln!(s, "max R-hat: {v:.3} ({n})");
            }
            if let Some((v, n)) = worst(|r| r.ess_bulk, false) {
                let _ = writeln!(s, "min bulk ESS: {v:.0} ({n})");
            }
            if let Some((v, n)) = worst(|r| r.ess_tail, false) {
                let _ = writeln!(s, "min tail ESS: {v:.0} ({n})");
            }
            let mut warnings = out.warnings(&f.options.mcmc);
            warnings.extend(hmc_warnings(out, &f.options));
            warnings.extend(crate::output::summary::convergence_warnings_for(
                &rows,
                &f.result.draws,
            ));
            if warnings.is_empty() {
                s.push_str("no warnings\n");
            } else {
                s.push_str("warnings:\n");
                for w in warnings {
                    let _ = writeln!(s, "  - {w}");
                }
            }
            if let Some(note) = &f.result.gq_note {
                let _ = writeln!(s, "ERROR: {note}");
            }
        } else if let FitDetails::Qnvb(q) = &f.result.details {
            use crate::inference::qnvb::QnvbStop;
            let _ = writeln!(
                s,
                "stop reason: {}\niterations: {}",
                match (q.stop, not_converged(f)) {
                    (QnvbStop::Converged, Some(why)) =>
                        format!("NOT converged: the smoothed ELBO stopped improving, but {why}"),
                    (QnvbStop::Converged, None) => "converged (the smoothed ELBO stopped \
                                                    improving)"
                        .to_string(),
                    (QnvbStop::MaxIterations, _) => "the iteration cap".to_string(),
                    (QnvbStop::Interrupted, _) => "interrupted".to_string(),
                },
                q.iterations
            );
            s.push_str(&vi_diagnostics_text_with(&f.result, Some(&f.unpriored)));
        } else if f.result.vi.is_some() {
            s.push_str(
                vi_diagnostics_text_with(&f.result, Some(&f.unpriored)).trim_start_matches('\n'),
            );
        } else if let FitDetails::Optimize(o) = &f.result.details {
            s.push_str(&optimize_footer(&f.result, o));
        } else {
            let _ = writeln!(
                s,
                "no diagnostics beyond the summary for {} fits",
                f.result.method
            );
        }
        Output::ok(s)
    }

    pub(super) fn elbo(&self, args: &[&str]) -> Output {
        let f = match self.pick(args.first().copied()) {
            Ok(f) => f,
            Err(o) => return o,
        };
        // QBVI and the survey's methods keep a smoothed best; QNVB its per-step trace only
        let (trace, best) = match &f.result.details {
            FitDetails::Qbvi(q) => (&q.elbo_trace, Some(q.best_smoothed_elbo)),
            FitDetails::Qnvb(q) => (&q.elbo_trace, None),
            _ => {
                let method = f.result.method.to_string();
                let article = if method.starts_with(['a', 'e', 'i', 'o', 'u']) {
                    "an"
                } else {
                    "a"
                };
                return Output::error(format!(
                    "error: {} ({article} {method} fit) keeps no ELBO trace; :elbo applies to \
                     the iterative variational fits (qbvi, qnvb, ivon, bbb, bbvi, …)",
                    f.name
                ));
            }
        };
        if trace.is_empty() {
            return Output::error(format!("error: {} has no ELBO trace", f.name));
        }
        let (line, lo, hi) = sparkline(trace, 60);
        let first_last = |v: &[f64]| {
            format!(
                "first {}, last {}",
                fit::fmt_elbo(v[0]),
                fit::fmt_elbo(v[v.len() - 1])
            )
        };
        let checks = f.result.epoch_checks();
        if checks.is_empty() {
            let best = best.map_or(String::new(), |b| {
                format!(", best smoothed {}", fit::fmt_elbo(b))
            });
            // the full-batch stochastic-gradient methods estimate it every k-th iteration
            let over = match &f.result.details {
                FitDetails::Qbvi(q) if q.trace_stride > 1 => format!(
                    "{} (estimated at every {}th: {} values; ",
                    crate::words::counted(q.iterations, "iteration"),
                    q.trace_stride,
                    trace.len()
                ),
                _ => format!("{} (", crate::words::counted(trace.len(), "iteration")),
            };
            return Output::ok(format!(
                "ELBO over {over}{}{best}):\n{line}\nscale: ▁ ≤ {}, █ = {}",
                first_last(trace),
                fit::fmt_elbo(lo),
                fit::fmt_elbo(hi)
            ));
        }
        // a minibatch fit: the per-iteration values are batch estimates; the exit rule smooths
        // the full-data ELBO of its epoch checks, which is a series of its own
        let full: Vec<f64> = checks.iter().map(|c| c.elbo).collect();
        let (full_line, full_lo, full_hi) = sparkline(&full, 60);
        // the best smoothed value the fit kept (QNVB keeps none: the largest)
        let best = best.unwrap_or_else(|| {
            checks
                .iter()
                .map(|c| c.smoothed)
                .fold(f64::NEG_INFINITY, f64::max)
        });
        Output::ok(format!(
            "batch ELBO estimates over {}, one batch each ({}):\n{line}\nscale: ▁ ≤ {}, █ = \
             {}\nfull-data ELBO at {} (the exit rule's statistic; {}; smoothed: last {}, \
             best {}):\n{full_line}\nscale: ▁ ≤ {}, █ = {}",
            crate::words::counted(trace.len(), "iteration"),
            first_last(trace),
            fit::fmt_elbo(lo),
            fit::fmt_elbo(hi),
            crate::words::counted(checks.len(), "epoch check"),
            first_last(&full),
            fit::fmt_elbo(checks[checks.len() - 1].smoothed),
            fit::fmt_elbo(best),
            fit::fmt_elbo(full_lo),
            fit::fmt_elbo(full_hi),
        ))
    }

    // ----- expressions ----------------------------------------------------------------------

    pub(super) fn expression(&mut self, text: &str) -> Output {
        let file = self.sources.add("<input>", text);
        let e = match parser::parse_expression(text, file) {
            Ok(e) => e,
            Err(err) => {
                let mut msg = render_plain(&self.sources, &err.to_diagnostic());
                let first = text
                    .split(|c: char| !c.is_alphanumeric())
                    .next()
                    .unwrap_or("");
                let cmds = COMMANDS.iter().map(|c| &c.0[1..]);
                if let Some(c) = COMMANDS
                    .iter()
                    .find(|c| &c.0[1..] == first)
                    .map(|c| c.0)
                    .or_else(|| {
                        best_match(first, cmds)
                            .and_then(|s| COMMANDS.iter().find(|c| c.0[1..] == s).map(|c| c.0))
                    })
                {
                    let _ = writeln!(msg, "help: commands start with a colon, e.g. `{c}`");
                }
                return Output::error(msg);
            }
        };
        let Some(f) = self.fits.last() else {
            return Output::error(
                "error: expressions are evaluated against the posterior draws of the last fit; there is no fit yet (use :fit)",
            );
        };
        if let Err(o) = self.pick(Some(&f.name)) {
            // a fit stopped in warmup has no posterior draws
            return o;
        }
        let (reduction, values, warned) = match expr::evaluate(&e, &f.result.draws) {
            Ok(r) => {
                let warned: String = r
                    .warnings
                    .iter()
                    .map(|w| render_plain(&self.sources, &w.to_diagnostic()))
                    .collect();
                (r.reduction, r.values, warned)
            }
            Err(err) => return Output::error(render_plain(&self.sources, &err.to_diagnostic())),
        };
        // an optimize fit has one "draw", the estimate: a bare expression is its value there;
        // a reduction over draws (a posterior probability, sd or quantile) has no meaning
        if f.result.method == fit::Method::Optimize {
            let value = values.first().and_then(|c| c.first()).copied();
            return match (reduction, value) {
                (Reduction::Summary, Some(v)) => Output::ok(format!(
                    "{warned}{text} = {}  (at the estimate of {}, a point estimate: no posterior sd or \
                     quantiles; `:param NAME` shows standard errors)",
                    format_sig(v, 4),
                    f.name
                )),
                _ => Output::error(format!(
                    "error: {} is a point estimate (optimize), not posterior draws, so a mean, \
                     sd, quantile or probability over draws is not defined; a bare expression \
                     gives its value at the estimate",
                    f.name
                )),
            };
        }
        let mcmc = f.result.method.is_mcmc();
        Output::ok(format!(
            "{warned}{}",
            reduce(text, reduction, &values, mcmc, &f.name)
        ))
    }
}

/// One setting of `:set`: a long option of `:fit` (as of `bayesc fit`).
pub(super) struct Setting {
    /// The option name without `--`.
    pub name: String,
    /// False for a flag (on/off), true for an option with a value.
    pub takes_value: bool,
    /// The section of `bayesc fit --help` it is listed under (`None`: the general options).
    pub heading: Option<String>,
}

/// Options of `bayesc fit` that are not session defaults, with the reason.
const NOT_SETTINGS: &[(&str, &str)] = &[
    ("data", "data files are given with `:data FILE...`"),
    (
        "refresh",
        "the REPL shows its own progress (`--refresh` sets `bayesc fit`'s progress lines)",
    ),
    (
        "threads",
        "the thread count is set when the REPL starts (`RAYON_NUM_THREADS=N bayesc repl`)",
    ),
];

/// The settings `:set` accepts: the long options of `:fit`, less [`NOT_SETTINGS`].
pub(super) fn settings() -> Vec<Setting> {
    use clap::CommandFactory;
    FitLine::command()
        .get_arguments()
        .filter(|a| !a.is_hide_set())
        .filter_map(|a| {
            let name = a.get_long()?;
            (!NOT_SETTINGS.iter().any(|n| n.0 == name)).then(|| Setting {
                name: name.to_string(),
                takes_value: a.get_action().takes_values(),
                heading: a.get_help_heading().map(str::to_string),
            })
        })
        .collect()
}

/// The error for `:set KEY` with a key that is no setting: why (for an option of `bayesc fit`
/// that is no session default), a did-you-mean, and the settings by section.
pub(super) fn unknown_setting(key: &str, settings: &[Setting]) -> String {
    if let Some((_, why)) = NOT_SETTINGS.iter().find(|n| n.0 == key) {
        return format!("error: `{key}` is not a session default: {why}");
    }
    let mut msg = format!("error: unknown setting `{key}`");
    if let Some(s) = best_match(key, settings.iter().map(|s| s.name.as_str())) {
        let _ = write!(msg, "\n  help: did you mean `{s}`?");
    }
    msg.push_str("\nthe settings are the options of `:fit` (`bayesc fit --help` describes them):");
    let mut headings: Vec<Option<&str>> = Vec::new();
    for s in settings {
        if !headings.contains(&s.heading.as_deref()) {
            headings.push(s.heading.as_deref());
        }
    }
    for h in headings {
        let names: Vec<&str> = settings
            .iter()
            .filter(|s| s.heading.as_deref() == h)
            .map(|s| s.name.as_str())
            .collect();
        let _ = write!(
            msg,
            "\n  {}: {}",
            h.unwrap_or("general").to_lowercase(),
            names.join(", ")
        );
    }
    msg.push_str("\nflags are set with `:set NAME on` (or off), the others with `:set NAME VALUE`");
    msg
}

/// `:param` of an optimize fit: the estimate and standard error of the columns `cols` of its
/// draws (the draw is the estimate), labelled as `bayesc optimize` labels them
/// ([`optimize_rows_table`]), not a one-draw summary with sd NaN. A generated quantity has no
/// standard error (it is evaluated once at the estimate), and neither has a parameter when −H
/// is not positive definite; a line under the table says which applies.
/// The columns of `draws` that `name` names: the column itself (`beta[2]`, `alpha`) or every
/// element of a container (`beta` → `beta[1]`, `beta[2]`, …); empty when it names none.
fn quantity_columns(draws: &Draws, name: &str) -> Vec<usize> {
    (0..draws.names.len())
        .filter(|&j| {
            let n = &draws.names[j];
            n == name || (n.starts_with(name) && n[name.len()..].starts_with('['))
        })
        .collect()
}

fn optimize_param(o: &fit::OptimizeFit, draws: &Draws, cols: &[usize]) -> String {
    let at = |j: usize| draws.chains.first().and_then(|c| c.get(j)).copied();
    let mut rows: Vec<(&str, f64, f64, bool)> = Vec::new();
    let mut generated: Vec<&str> = Vec::new();
    let mut no_se = false;
    for &j in cols {
        let name = draws.names[j].as_str();
        match o.names.iter().position(|n| n == name) {
            Some(k) => {
                no_se |= o.std_errors[k].is_nan();
                rows.push((name, o.estimates[k], o.std_errors[k], false));
            }
            None => {
                generated.push(name);
                rows.push((name, at(j).unwrap_or(f64::NAN), f64::NAN, true));
            }
        }
    }
    let mut s = optimize_rows_table(o.std_error_kind, &rows);
    if no_se {
        s.push_str(
            "-: no standard error (the Hessian at the optimum is not negative definite, or could \
             not be computed)\n",
        );
    }
    if !generated.is_empty() {
        let _ = writeln!(
            s,
            "{}: generated {}, evaluated once at the estimate (no standard error)",
            generated.join(", "),
            if generated.len() == 1 {
                "quantity"
            } else {
                "quantities"
            }
        );
    }
    s
}

/// How a stored fit ended, for `:fits`, with its objective: an optimize fit's convergence and
/// the log density at the mode (with or without the Jacobian adjustment, as it was
/// maximised); a variational fit's stop (converged, not converged, iteration cap) with its
/// ELBO and PSIS k-hat; an MCMC fit's largest R-hat and its divergences. Never NaN: a value
/// that is not a number is left out. An interrupted fit says so first.
/// Why a variational fit whose exit rule fired has not converged (drift, stationarity, an
/// unusable end state: `ViDiagnostics::moving`), if it has not.
fn not_converged(f: &StoredFit) -> Option<String> {
    f.result.vi.as_ref().and_then(|v| v.moving.clone())
}

fn fit_status(f: &StoredFit) -> String {
    let r = &f.result;
    let mut parts: Vec<String> = Vec::new();
    if f.interrupted {
        parts.push("INTERRUPTED".into());
    }
    match &r.details {
        FitDetails::Optimize(o) => {
            parts.push(if !o.flat.is_empty() {
                format!("no optimum (flat along {})", o.flat.join(", "))
            } else if o.converged {
                "converged".into()
            } else {
                "NOT converged".into()
            });
            if o.log_density.is_finite() {
                parts.push(format!(
                    "log density at the mode {} ({} Jacobian)",
                    format_sig(o.log_density, 6),
                    if o.jacobian { "with" } else { "without" }
                ));
            }
        }
        FitDetails::Mcmc(out) => {
            let rows = summary::summarize(&r.draws, true);
            let max_rhat = rows
                .iter()
                .filter_map(|row| row.rhat)
                .filter(|v| v.is_finite())
                .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
            if let Some(v) = max_rhat {
                parts.push(format!("max R-hat {v:.3}"));
            }
            if r.method != fit::Method::FixedParam {
                let divergences: usize = out.chains.iter().map(|c| c.divergences).sum();
                parts.push(format!("{divergences} divergences"));
            }
        }
        FitDetails::Qbvi(q) if !f.interrupted => {
            let not_converged = exit_rule_not_converged(r, q, &f.options).is_some();
            parts.push(
                match q.stop {
                    StopReason::ExitRule if not_converged => "NOT converged",
                    StopReason::ExitRule if r.method == fit::Method::Mcdropout => {
                        "training finished"
                    }
                    StopReason::ExitRule => "converged",
                    StopReason::MaxIterations => "iteration cap",
                    StopReason::Interrupted => "INTERRUPTED",
                }
                .into(),
            );
        }
        FitDetails::Qnvb(q) if !f.interrupted => {
            use crate::inference::qnvb::QnvbStop;
            let unbounded = r.vi.as_ref().is_some_and(|v| !v.unbounded.is_empty());
            parts.push(
                match q.stop {
                    QnvbStop::Converged if unbounded || not_converged(f).is_some() => {
                        "NOT converged"
                    }
                    QnvbStop::Converged => "converged",
                    QnvbStop::MaxIterations => "iteration cap",
                    QnvbStop::Interrupted => "INTERRUPTED",
                }
                .into(),
            );
        }
        _ if !f.interrupted => parts.push("finished".into()),
        _ => {}
    }
    if let Some(v) = &r.vi {
        if v.elbo.is_finite() {
            parts.push(format!("ELBO {}", format_sig(v.elbo, 6)));
        }
        if v.khat.is_finite() {
            parts.push(format!("k-hat {:.2}", v.khat));
        }
    }
    parts.join(", ")
}

/// A number for a table cell with four significant digits; "—" for `None` (a value the fit
/// does not have, such as a point estimate's sd) and, setting `undefined`, for a value that is
/// not finite: NaN is never printed as if it were a number.
fn number_cell(v: Option<f64>, undefined: &mut bool) -> String {
    match v {
        Some(v) if v.is_finite() => format_sig(v, 4),
        Some(_) => {
            *undefined = true;
            "—".to_string()
        }
        None => "—".to_string(),
    }
}
