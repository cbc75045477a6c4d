//! The `:fit` command: its arguments (the same as `bayesc fit`), the run with progress and
//! Ctrl-C, and the stored fit.

use super::*;

impl Session {
    pub(super) fn fit(&mut self, args: &[&str]) -> Output {
        if self.model.is_none() && self.failed_load.is_none() {
            return Output::error(
                "error: no model to fit: load one with `:load FILE` or type a model",
            );
        }
        let mut prefix = String::new();
        // a file model is reloaded when it changed; a failed :load is retried (and fails again
        // until fixed), never replaced by the model before it
        if self.model.as_ref().is_some_and(|m| m.path.is_some()) || self.model.is_none() {
            let failed = self.failed_load.clone().filter(|_| self.model.is_none());
            let mut r = self.reload(true);
            if r.is_error {
                if let Some(path) = failed {
                    r.text = format!(
                        "nothing to fit: the last `:load {}` failed, and loading it again fails with\n{}",
                        path.display(),
                        r.text
                    );
                }
                return r;
            }
            // reloaded, but the bound data do not fit the new version: said once, by the reload
            if !r.text.is_empty() && self.compiled.is_none() && !self.data.is_empty() {
                return Output::error(r.text);
            }
            prefix = r.text;
        }
        // `as NAME` at the end
        let (args, name) = match args {
            [head @ .., "as", n] => (head, Some(n.to_string())),
            _ => (args, None),
        };
        // a stray `as` left in the options: `:fit qbvi as` (no name) or `as a b` (two words);
        // clap would only say "unexpected argument 'as'"
        if let Some(i) = args.iter().position(|w| *w == "as") {
            let rest = args[i + 1..].join(" ");
            let tail = match &name {
                Some(n) if rest.is_empty() => n.clone(),
                Some(n) => format!("{rest} as {n}"),
                None => rest,
            };
            return Output::error(if tail.is_empty() {
                "error: `as` at the end of `:fit` needs a name: `:fit [METHOD] [OPTIONS] as NAME`"
                    .to_string()
            } else {
                format!(
                    "error: `as NAME` ends the `:fit` line and names the fit with one word; got \
                     `as {tail}`\n  usage: :fit [METHOD] [OPTIONS] [as NAME]"
                )
            });
        }
        if let Some(n) = &name
            && (n.is_empty()
                || !n.chars().all(|c| c.is_alphanumeric() || c == '_')
                || n.starts_with(|c: char| c.is_ascii_digit()))
        {
            return Output::error(format!(
                "error: a fit name is letters, digits and `_`, not starting with a digit; got `{n}`"
            ));
        }
        let (mut fit_args, unused) = match self.parse_fit_args(args) {
            Ok(p) => (p.args, p.unused),
            Err(e) => return Output::error(e),
        };
        if let Some(e) = repl_refused_flag(&fit_args) {
            return Output::error(e);
        }
        // `bayesc fit`'s output flags: the folder is made and checked before the fit, the files
        // are written whole once it ends (the REPL does not stream draws); `--output-dir`'s
        // default file is named after the loaded file, or `repl.csv` for a typed model
        fit_args.model = self
            .model
            .as_ref()
            .and_then(|m| m.path.clone())
            .unwrap_or_else(|| PathBuf::from("repl.bayes"));
        if let Err(e) =
            place_in_output_dir(&mut fit_args).and_then(|()| check_output_folders(&fit_args))
        {
            return Output::error(format!("error: {e}"));
        }
        let needs_data = self
            .model
            .as_ref()
            .is_some_and(|m| !m.checked.program.data.is_empty());
        if needs_data && self.data.is_empty() {
            let m = self.model.as_ref().expect("checked above");
            let names: Vec<&str> = m
                .checked
                .program
                .data
                .iter()
                .map(|d| d.name.name.as_str())
                .collect();
            return Output::error(format!(
                "error: the model declares data ({}) but no data is loaded; use `:data FILE`",
                names.join(", ")
            ));
        }
        // the current model stayed loaded after a failed `:load` of another file: say (once,
        // for the first fit that runs) which model this fit is of
        if let (Some(failed), Some(m)) = (&self.failed_load, &self.model) {
            let _ = writeln!(
                prefix,
                "note: the last `:load {}` failed; fitting the loaded model, {}",
                failed.display(),
                m.name
            );
            self.failed_load = None;
        }
        let mut out = Output::ok(prefix);
        if self.compiled.is_none() && !self.try_compile(&mut out) {
            return out;
        }
        let model = self.compiled.as_ref().expect("compiled just above");
        let seed = fit_args
            .seed
            .unwrap_or_else(|| rand::rng().random::<u32>() as u64);
        // the same options as `bayesc fit` (pipeline::fit_options): the same model, data,
        // arguments and seed give the same fit
        let checked = &self.model.as_ref().expect("compiled above").checked;
        let unpriored = checked.unpriored.clone();
        let options = match pipeline::fit_options(checked, &self.data, model, &fit_args, seed) {
            Ok(setup) => {
                if let Some(note) = setup.note {
                    let _ = writeln!(out.text, "{note}");
                }
                setup.options
            }
            Err(f) => {
                out.text.push_str(&self.render(f));
                out.is_error = true;
                return out;
            }
        };
        let name = name.unwrap_or_else(|| {
            let mut k = self.counter + 1;
            while self.fits.iter().any(|f| f.name == format!("fit{k}")) {
                k += 1;
            }
            format!("fit{k}")
        });
        // refused before the settings line, which would describe a run that never starts
        if let Err(e) = fit::check_mh_dimension(model.dim(), options.method) {
            let _ = writeln!(out.text, "error: {e}");
            out.is_error = true;
            return out;
        }
        // the same lines as `bayesc fit` prints (one shared function), after the fit's name
        let _ = write!(out.text, "{name}: {}", fit_preamble(&options, model));
        for u in &unused {
            let _ = writeln!(
                out.text,
                "note: the session default {}: not used for this fit",
                u.describe()
            );
        }
        // `as NAME` of a stored fit replaces it, as `fit1 = …` does in Python or R; said before
        // the run (an error or an empty run keeps the old fit) and after it
        let replaced = self
            .fits
            .iter()
            .find(|f| f.name == name)
            .map(|f| format!("{}, seed {}", f.result.method, f.result.seed));
        if let Some(old) = &replaced {
            let _ = writeln!(
                out.text,
                "note: {name} exists ({old}); it is replaced when this fit ends (use another \
                 `as NAME` to keep both)"
            );
        }
        let result = run_fit(model, &options, &self.stop, &self.fitting, self.progress);
        let result = match result {
            Ok(r) => r,
            Err(e) => {
                let _ = writeln!(out.text, "error: {e}");
                out.is_error = true;
                return out;
            }
        };
        let interrupted = was_interrupted(&result);
        let warmup_only = warmup_only_chains(&result);
        if result.draws.n_draws() == 0 && warmup_only.is_none() {
            let _ = writeln!(
                out.text,
                "the fit returned no draws (an MCMC run interrupted before any chain finished \
                 warmup): nothing stored"
            );
            return out;
        }
        self.counter += 1;
        out.text
            .push_str(&result_text(&result, &options, interrupted, &unpriored));
        if let Some(chains) = &warmup_only {
            let _ = writeln!(
                out.text,
                "{chains} kept (--save-warmup): warmup draws, not posterior draws; `:save FILE` \
                 writes them as `bayesc fit --output` does, each file ending `# interrupted: … \
                 (in warmup)`; the other commands need post-warmup draws"
            );
        }
        // the fit is stored, but its generated quantities failed at some draws: an error, as
        // in `bayesc fit` (exit status 3), so that a script's exit code says so
        out.is_error |= result.gq_note.is_some();
        self.write_fit_files(&fit_args, &result, &options, &mut out);
        let _ = writeln!(
            out.text,
            "stored as {name}{}{}",
            if warmup_only.is_some() {
                " (interrupted in warmup: warmup draws only)"
            } else if interrupted {
                " (interrupted)"
            } else {
                ""
            },
            match &replaced {
                Some(old) => format!(", replacing the previous {name} ({old})"),
                None => String::new(),
            }
        );
        let stored = StoredFit {
            name: name.clone(),
            result,
            options,
            model_name: self
                .model
                .as_ref()
                .map(|m| m.name.clone())
                .unwrap_or_default(),
            interrupted,
            unpriored,
        };
        self.fits.retain(|f| f.name != name);
        self.fits.push(stored);
        out
    }

    /// Writes the files that `:fit`'s `--output`, `--elbo-output` and `--save-fit` ask for (as
    /// `bayesc fit` does, after [`place_in_output_dir`]), saying in `out` what was written; a
    /// file that cannot be written is reported and marks `out` as an error, the fit stays stored.
    fn write_fit_files(
        &self,
        args: &FitArgs,
        result: &FitResult,
        options: &FitOptions,
        out: &mut Output,
    ) {
        let model = self.model.as_ref().expect("a fit has a model");
        let model_path = model
            .path
            .clone()
            .unwrap_or_else(|| PathBuf::from(&model.name));
        if let (Some(path), Some(_)) = (&args.elbo_output, &result.vi) {
            match write_elbo(path, result, options) {
                Ok(()) => {
                    let _ = writeln!(out.text, "ELBO trace written to {}", path.display());
                }
                Err(e) => {
                    let _ = writeln!(
                        out.text,
                        "error: cannot write the ELBO trace to `{}`: {e}",
                        path.display()
                    );
                    out.is_error = true;
                }
            }
        }
        if let Some(path) = &args.output {
            match write_outputs(path, result, options, &model_path) {
                Ok(files) if warmup_only_chains(result).is_some() => {
                    let _ = writeln!(
                        out.text,
                        "warmup draws written to {} (the run was stopped in warmup, so there are \
                         no post-warmup draws; each ends with `# interrupted: … (in warmup)`)",
                        files.join(", ")
                    );
                }
                Ok(files) if was_interrupted(result) => {
                    let _ = writeln!(
                        out.text,
                        "draws written to {} (incomplete: the fit was interrupted)",
                        files.join(", ")
                    );
                }
                Ok(files) => {
                    let _ = writeln!(out.text, "draws written to {}", files.join(", "));
                }
                Err(e) => {
                    let _ = writeln!(
                        out.text,
                        "error: cannot write draws to `{}`: {e}",
                        path.display()
                    );
                    out.is_error = true;
                }
            }
        }
        if let (Some(path), Some(_)) = (&args.save_fit, warmup_only_chains(result)) {
            let _ = writeln!(
                out.text,
                "nothing saved to {}: the fit has no post-warmup draws to predict from",
                path.display()
            );
        } else if let (Some(path), Some(compiled)) = (&args.save_fit, self.compiled.as_ref()) {
            let saved = crate::predict::SavedFit::from_fit(
                compiled,
                &model_path.display().to_string(),
                &model.text,
                result,
            )
            .with_verdict(crate::output::report::vi_not_converged(result, options));
            match saved.save(path) {
                Ok(()) => {
                    let _ = writeln!(out.text, "fit saved to {}", path.display());
                }
                Err(e) => {
                    let _ = writeln!(out.text, "error: {e}");
                    out.is_error = true;
                }
            }
        }
    }

    /// Parses `:fit` arguments (first word: the method) plus the session defaults with the CLI's
    /// clap arguments, checked as `bayesc fit` checks them (`check_args`). A typed option of
    /// another method than the one run is refused with the CLI's message; a session default of
    /// another method (`:set chains 2` while the method is qbvi) is left out of this fit and
    /// listed in [`ParsedFit::unused`].
    pub(super) fn parse_fit_args(&self, args: &[&str]) -> Result<ParsedFit, String> {
        let mut head: Vec<String> = vec!["<repl>".into()];
        let mut rest = args;
        if let [m, tail @ ..] = args
            && !m.starts_with('-')
        {
            head.push("--method".into());
            head.push(m.to_string());
            rest = tail;
        }
        let given: Vec<&str> = args
            .iter()
            .filter_map(|a| a.strip_prefix("--"))
            .map(|a| a.split('=').next().unwrap_or(a))
            .collect();
        let method_given = head.len() > 1 || given.contains(&"method");
        // the `:set` defaults that this line does not override
        let mut defaults: Vec<&(String, Option<String>)> = self
            .defaults
            .iter()
            .filter(|(k, _)| {
                let overridden = given.contains(&k.as_str()) || (k == "method" && method_given);
                !overridden
            })
            .collect();
        let parse = |defaults: &[&(String, Option<String>)], explicit_defaults: bool| {
            let mut argv = head.clone();
            for (k, v) in defaults {
                argv.push(format!("--{k}"));
                if let Some(v) = v {
                    argv.push(v.clone());
                }
            }
            argv.extend(rest.iter().map(|s| s.to_string()));
            use clap::{CommandFactory, FromArgMatches};
            let matches = FitLine::command()
                .try_get_matches_from(&argv)
                .map_err(|e| e.render().to_string().trim_end().to_string())?;
            let mut parsed = FitLine::from_arg_matches(&matches)
                .map_err(|e| e.render().to_string().trim_end().to_string())?;
            // clap ids use `_`
            let ids: Vec<String> = defaults.iter().map(|(k, _)| k.replace('-', "_")).collect();
            let except: Vec<&str> = if explicit_defaults {
                Vec::new()
            } else {
                ids.iter().map(String::as_str).collect()
            };
            parsed.args.note_explicit(&matches, &except);
            Ok::<FitArgs, String>(parsed.args)
        };
        // Leave out the defaults of other methods, counting a default as given even at its
        // default value (so that `:set chains 4` under qbvi is noted too); leaving one out can
        // make another inapplicable (`init pathfinder` carries `num-paths` to nuts), so repeat.
        let mut unused: Vec<UnusedDefault> = Vec::new();
        loop {
            let probe = parse(&defaults, true)?;
            check_values(&probe).map_err(|m| format!("error: {m}"))?;
            let misplaced = misplaced_options(&probe).map_err(|m| format!("error: {m}"))?;
            let before = defaults.len();
            let method = fit::Method::from(probe.method);
            for m in misplaced {
                if let Some(i) = defaults.iter().position(|(k, _)| k == m.name) {
                    let (key, value) = defaults.remove(i);
                    unused.push(UnusedDefault {
                        key: key.clone(),
                        value: value.clone(),
                        methods: m.methods,
                        method,
                    });
                }
            }
            if defaults.len() == before {
                break;
            }
        }
        let parsed = parse(&defaults, false)?;
        check_args(&parsed).map_err(|m| format!("error: {m}"))?;
        Ok(ParsedFit {
            args: parsed,
            unused,
        })
    }
}

/// `:fit`'s arguments with the session defaults, as [`Session::parse_fit_args`] made them.
pub(super) struct ParsedFit {
    /// The arguments of the fit to run.
    pub args: FitArgs,
    /// The session defaults left out because they apply to other methods.
    pub unused: Vec<UnusedDefault>,
}

/// A session default (`:set KEY VALUE`) that the method of a fit does not use.
pub(super) struct UnusedDefault {
    /// The setting (`chains`).
    pub key: String,
    /// Its value (`None`: a flag turned on).
    pub value: Option<String>,
    /// The methods it applies to, as `bayesc fit`'s message names them.
    pub methods: String,
    /// The method it does not apply to.
    pub method: fit::Method,
}

impl UnusedDefault {
    /// `chains = 2 applies to nuts, hmc, mh, fixed_param, not qbvi`.
    pub fn describe(&self) -> String {
        format!(
            "{} = {} applies to {}, not {}",
            self.key,
            self.value.as_deref().unwrap_or("on"),
            self.methods,
            self.method
        )
    }
}

/// A `bayesc fit` flag that has no meaning inside the REPL, with the reason, so that it is
/// refused instead of silently ignored: `--refresh` (the REPL shows its own progress) and
/// `--threads` (the thread pool is set once per process: start `bayesc repl` with
/// `RAYON_NUM_THREADS=N`).
fn repl_refused_flag(args: &FitArgs) -> Option<String> {
    if args.refresh.is_some() {
        return Some(
            "error: --refresh sets `bayesc fit`'s CmdStan-style progress lines; the REPL shows its \
             own progress (Ctrl-C stops a fit and keeps its draws)"
                .into(),
        );
    }
    if args.threads.is_some() {
        return Some(
            "error: --threads cannot change inside the REPL (the thread pool is set once per \
             process); start it as `RAYON_NUM_THREADS=N bayesc repl`"
                .into(),
        );
    }
    None
}

/// For an MCMC fit stopped in warmup before any chain had post-warmup draws, whose warmup
/// draws were kept (`--save-warmup`, `McmcOutput::warmup_stopped`): how many, and of which
/// chains ("1000 warmup draws of chains 1 and 2"); `None` for any other fit.
pub(super) fn warmup_only_chains(result: &FitResult) -> Option<String> {
    let FitDetails::Mcmc(out) = &result.details else {
        return None;
    };
    if result.draws.n_draws() > 0 || out.warmup_stopped.is_empty() {
        return None;
    }
    let n: usize = out
        .warmup_stopped
        .iter()
        .map(|w| w.chain.warmup_stats.len())
        .sum();
    let ids: Vec<usize> = out.warmup_stopped.iter().map(|w| w.id + 1).collect();
    Some(format!(
        "{} of {}",
        crate::words::counted(n, "warmup draw"),
        crate::inference::chain_end::chain_numbers(&ids)
    ))
}
