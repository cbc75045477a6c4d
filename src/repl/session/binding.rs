//! The model and its data: `:load`, `:reload`, model text typed at the prompt, `:data` and
//! `:show`, and the compiling of the current model against the bound data.

use super::*;

impl Session {
    /// `:load FILE`: checks the file and installs it as the current model ([`Self::set_model`]);
    /// a file that cannot be read or does not check leaves the current model, and says so.
    pub(super) fn load(&mut self, path: &Path) -> Output {
        let checked = match pipeline::check_file(&mut self.sources, path) {
            Ok(c) => c,
            Err(f) => {
                // The current model stays loaded (and compiled): the error says so, and the
                // next `:fit` says which model it fits.
                let mut text = self.render(f);
                let why = if std::fs::read_to_string(path).is_ok() {
                    "does not check"
                } else {
                    "could not be read"
                };
                let current = self
                    .model
                    .as_ref()
                    .map(|m| (m.name.clone(), m.path.clone()));
                match current {
                    Some((_, Some(p))) if p == path => {
                        let _ = writeln!(
                            text,
                            "note: {} {why}; the version loaded before is still the current model \
                             (`:fit` re-reads a changed file first, so it fails until the file checks)",
                            path.display()
                        );
                    }
                    Some((name, _)) => {
                        let _ = writeln!(
                            text,
                            "note: {} {why}; the previous model, {name}, is still loaded",
                            path.display()
                        );
                        self.failed_load = Some(path.to_path_buf());
                    }
                    None => {
                        let _ =
                            writeln!(text, "note: {} {why}; no model is loaded", path.display());
                        self.failed_load = Some(path.to_path_buf());
                    }
                }
                return Output::error(text);
            }
        };
        let text = self.sources.text(checked.file).to_string();
        let mtime = std::fs::metadata(path).and_then(|m| m.modified()).ok();
        self.set_model(CurrentModel {
            name: path.display().to_string(),
            path: Some(path.to_path_buf()),
            mtime,
            text,
            checked,
        })
    }

    /// `:reload` (and the check before `:fit`, `quiet_if_unchanged`: nothing happens when the
    /// file's modification time is unchanged): loads the current model's file again, or with
    /// no current model the file of the last failed `:load`.
    pub(super) fn reload(&mut self, quiet_if_unchanged: bool) -> Output {
        let path = match &self.model {
            Some(m) => m.path.clone(),
            None => self.failed_load.clone(),
        };
        let Some(path) = path else {
            return Output::error(
                "error: the current model was not loaded from a file (use :load FILE)",
            );
        };
        // (with no current model, the failed :load is retried, never passed over in silence)
        if quiet_if_unchanged && self.model.is_some() {
            let now = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
            if now == self.model.as_ref().and_then(|m| m.mtime) {
                return Output::default();
            }
        }
        let mut out = self.load(&path);
        if !out.is_error {
            out.text = format!("reloaded {}\n{}", path.display(), out.text);
        }
        out
    }

    /// Installs a checked model; compiles it when data are bound (data that do not fit it are
    /// reported with a note, and stay bound; the model is installed all the same).
    pub(super) fn set_model(&mut self, m: CurrentModel) -> Output {
        self.failed_load = None;
        let p = &m.checked.program;
        // Typed text arrives block by block: warnings about a program without its `model`
        // block yet (e.g. "parameter has no prior") would be noise, so they wait for it.
        let typed = m.path.is_none();
        let partial = typed && p.block_spans.model.is_none();
        let mut text: String = if partial {
            String::new()
        } else {
            m.checked
                .warnings
                .iter()
                .map(|d| render_plain(&self.sources, d))
                .collect()
        };
        let names = |v: &[crate::syntax::ast::VarDecl]| {
            v.iter()
                .map(|d| d.name.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(
            text,
            "model {} ({} lines): data {{{}}}, parameters {{{}}}{}",
            m.name,
            m.text.lines().count(),
            names(&p.data),
            names(&p.parameters),
            if partial { " (no model block yet)" } else { "" }
        );
        self.model = Some(m);
        self.compiled = None;
        let mut out = Output::ok(text);
        // A model that checks is always installed, even when the bound data do not fit it:
        // refusing it would leave no way to switch to a model with other data (`:data` checks
        // new data against the current model). The data stay bound; the note says what to do.
        if self.data.is_empty() {
            return out;
        }
        match self.compile_current() {
            Ok(()) => self.mismatch_shown = None,
            // the next block of a typed model, with the error its previous block showed: once
            // is enough (each block repeated it in full)
            Err(why) if typed && self.mismatch_shown.as_deref() == Some(why.as_str()) => {
                let name = &self.model.as_ref().expect("installed above").name;
                let _ = writeln!(
                    out.text,
                    "note: the data bound from {} still do not fit {name} (the error above)",
                    self.data_list()
                );
            }
            Err(why) => {
                out.text.push_str(&why);
                let name = &self.model.as_ref().expect("installed above").name;
                let _ = writeln!(
                    out.text,
                    "note: {name} is loaded as the current model, but the data bound from {} do \
                     not fit it (above); they stay bound until `:data FILE...` binds data that \
                     fit it, and `:fit` needs those",
                    self.data_list()
                );
                self.mismatch_shown = Some(why);
            }
        }
        out
    }

    /// The bound data files, comma-separated, as given to `:data`.
    fn data_list(&self) -> String {
        let list: Vec<String> = self
            .data_paths
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        list.join(", ")
    }

    /// Compiles the current model with the bound data into `compiled`. Errors: the rendered
    /// diagnostics of why the data do not fit the model (`compiled` is then cleared).
    fn compile_current(&mut self) -> Result<(), String> {
        let Some(m) = &self.model else {
            return Err(String::new());
        };
        match pipeline::compile(&m.checked, &self.sources, &self.data) {
            Ok(model) => {
                self.compiled = Some(model);
                Ok(())
            }
            Err(f) => {
                self.compiled = None;
                Err(self.render(f))
            }
        }
    }

    /// Compiles the current model with the bound data; appends the errors to `out`, marked as
    /// an error, with a note naming the data files and how to bind others.
    pub(super) fn try_compile(&mut self, out: &mut Output) -> bool {
        match self.compile_current() {
            Ok(()) => true,
            Err(why) => {
                out.text.push_str(&why);
                if let Some(m) = &self.model
                    && !self.data.is_empty()
                {
                    let _ = writeln!(
                        out.text,
                        "note: the data bound from {} do not fit {}; bind data that fit it with \
                         `:data FILE...`",
                        self.data_list(),
                        m.name
                    );
                }
                out.is_error = true;
                false
            }
        }
    }

    /// Model text typed at the prompt, a block of `rank` (index into [`BLOCK_KEYWORDS`]): added
    /// to the blocks typed before it when it may follow them, else the start of a new typed
    /// model; the accumulated text is checked and installed, with a note when it replaces
    /// another model.
    pub(super) fn model_text(&mut self, text: &str, rank: usize) -> Output {
        if !parser::input_is_complete(text) {
            return Output::error(
                "error: the model text is incomplete (unbalanced braces or an open comment)",
            );
        }
        // a block that cannot continue the typed text begins a new model; when another model
        // is current, the answer says that the new one replaces it (never in silence)
        let restart = self.typed_rank.is_none_or(|r| rank <= r);
        let replaced = if restart {
            self.typed.clear();
            self.model
                .as_ref()
                .map(|m| replaced_model(m, rank, self.typed_rank))
        } else {
            None
        };
        if !self.typed.is_empty() {
            self.typed.push('\n');
        }
        self.typed.push_str(text);
        let source = self.typed.clone();
        match pipeline::check_source(&mut self.sources, "<repl>", &source) {
            Ok(checked) => {
                // the last block of the accumulated text decides where the next one may go
                self.typed_rank = Some(rank);
                let mut out = self.set_model(CurrentModel {
                    text: source,
                    name: "<repl>".into(),
                    path: None,
                    mtime: None,
                    checked,
                });
                if let Some((old, why)) = replaced {
                    let _ = writeln!(out.text, "note: the typed model replaces {old} ({why})");
                }
                out
            }
            Err(f) => {
                // keep earlier blocks only if they were fine on their own
                let mut t = self.typed.clone();
                t.truncate(t.len() - text.len());
                self.typed = t.trim_end().to_string();
                let mut text = self.render(f);
                if let Some((old, why)) = replaced {
                    let _ = writeln!(
                        text,
                        "note: the typed text began a new model ({why}), which does not check; \
                         {old} is still the current model"
                    );
                }
                Output::error(text)
            }
        }
    }

    /// `:data FILE...`: binds the files' data when they fit the current model (or when there
    /// is no model yet to check them against). Data that cannot be read or do not fit the model
    /// are refused with the reason, and the data bound before stay bound (the error says so).
    pub(super) fn set_data(&mut self, files: &[&str]) -> Output {
        if files.is_empty() {
            if self.data_paths.is_empty() {
                return Output::ok("no data files (use :data FILE...)");
            }
            return Output::ok(format!("data: {}", self.data_list()));
        }
        let paths: Vec<PathBuf> = files.iter().map(PathBuf::from).collect();
        let listed = files.join(", ");
        let data = match pipeline::load_data(&paths) {
            Ok(d) => d,
            Err(f) => {
                let mut text = self.render(f);
                text.push_str(&self.kept_data_note(None));
                return Output::error(text);
            }
        };
        let Some(m) = &self.model else {
            self.data = data;
            self.data_paths = paths;
            self.compiled = None;
            return Output::ok(format!(
                "data: {listed}
(no model yet: they are checked when a model is loaded)"
            ));
        };
        match pipeline::compile(&m.checked, &self.sources, &data) {
            Ok(model) => {
                self.data = data;
                self.data_paths = paths;
                self.compiled = Some(model);
                Output::ok(format!(
                    "data: {listed}
the data fit the model"
                ))
            }
            Err(f) => {
                let mut text = self.render(f);
                let why = format!("the data in {listed} do not fit the model {}", m.name);
                text.push_str(&self.kept_data_note(Some(&why)));
                Output::error(text)
            }
        }
    }

    /// The note after refused `:data` files — `misfit` says how they do not fit the model,
    /// `None` when they could not be read: they were not bound, and which data stay bound (with
    /// whether those fit the current model) or that none are; for a misfit, how to bind data for
    /// another model.
    fn kept_data_note(&self, misfit: Option<&str>) -> String {
        let kept = if self.data.is_empty() {
            "no data are bound".to_string()
        } else if self.model.is_some() && self.compiled.is_none() {
            format!(
                "kept the previous data from {}, which do not fit this model either",
                self.data_list()
            )
        } else {
            format!("kept the previous data from {}", self.data_list())
        };
        match misfit {
            None => format!("note: nothing was bound; {kept}\n"),
            Some(why) => format!(
                "note: {why}, so they were not bound; {kept}\n  help: to use them with another \
                 model, `:load` (or type) that model first, then `:data` them\n"
            ),
        }
    }

    /// `:show`: the current model's text with line numbers.
    pub(super) fn show(&self) -> Output {
        let Some(m) = &self.model else {
            return Output::error("error: no model yet (use :load FILE or type a model)");
        };
        let width = m.text.lines().count().to_string().len();
        let mut s = format!("// {}\n", m.name);
        for (i, l) in m.text.lines().enumerate() {
            let _ = writeln!(s, "{:>width$} | {l}", i + 1);
        }
        Output::ok(s)
    }
}

/// How a note names the current model `m` that typed text replaces — `the model loaded from
/// PATH` or `the model typed before` — and why a typed block of `rank` (index into
/// [`BLOCK_KEYWORDS`]) begins a new model rather than continuing the typed text, whose last
/// block had rank `last` (`None`: another input came between, or nothing was typed).
fn replaced_model(m: &CurrentModel, rank: usize, last: Option<usize>) -> (String, String) {
    if let Some(p) = &m.path {
        return (
            format!("the model loaded from {}", p.display()),
            "typed blocks begin a model of their own and never add to a loaded file; to change \
             the file, edit it and `:reload`"
                .to_string(),
        );
    }
    let why = match last {
        Some(r) => format!(
            "a `{}` block cannot follow `{}`, so it begins a new model; blocks typed in order \
             add to one",
            BLOCK_KEYWORDS[rank], BLOCK_KEYWORDS[r]
        ),
        None => "blocks typed after a command or an expression begin a new model; blocks typed \
                 one after another add to one"
            .to_string(),
    };
    ("the model typed before".to_string(), why)
}
