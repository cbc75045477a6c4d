//! The REPL backend: a session that holds the current model, data and named fits, and turns one
//! command, model text or posterior expression into text to print. It knows nothing of the
//! terminal (STYLE.md §4), so tests drive it directly.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::SystemTime;

use clap::Parser;
use rand::RngExt;

use crate::data::DataSource;
use crate::diagnostics;
use crate::fit::args::{FitArgs, check_args, options_from_args};
use crate::fit::{self, FitDetails, FitOptions, FitResult, Monitor, ProgressEvent};
use crate::graph::Model;
use crate::inference::qbvi::StopReason;
use crate::inference::{Draws, LogDensity};
use crate::output::fit_files::write_outputs;
use crate::output::progress::DelayedBar;
use crate::output::report::{
    hmc_warnings, mcmc_text, optimize_table, optimize_text, vi_diagnostics_text,
};
use crate::output::summary::{self, convergence_warnings, format_sig};
use crate::pipeline::{self, Checked, Failure};
use crate::semantics::names::best_match;
use crate::syntax::parser;
use crate::syntax::report::{ToDiagnostic, render_plain};
use crate::syntax::source::SourceMap;

use super::expr::{self, Reduction};

/// What one input produced: the text to print and whether it was an error.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Output {
    /// Text to print (may be empty); ends with a newline when not empty.
    pub text: String,
    /// True when the input failed (the session is unchanged apart from what the text says).
    pub is_error: bool,
    /// True after `:quit`: the frontend should end the session.
    pub quit: bool,
}

impl Output {
    fn ok(text: impl Into<String>) -> Self {
        Output {
            text: ensure_newline(text.into()),
            ..Output::default()
        }
    }

    fn error(text: impl Into<String>) -> Self {
        Output {
            text: ensure_newline(text.into()),
            is_error: true,
            quit: false,
        }
    }
}

fn ensure_newline(mut s: String) -> String {
    if !s.is_empty() && !s.ends_with('\n') {
        s.push('\n');
    }
    s
}

/// Every command with its argument synopsis and a one-line description (`:help`).
pub const COMMANDS: &[(&str, &str, &str)] = &[
    (
        ":load",
        "FILE",
        "load a model file (it becomes the current model)",
    ),
    (
        ":reload",
        "",
        "re-read the current model file (done automatically before :fit when it changed)",
    ),
    (
        ":data",
        "FILE...",
        "use these CSV/JSON data files (replaces the previous ones)",
    ),
    (":show", "", "print the current model with line numbers"),
    (
        ":fit",
        "[METHOD] [OPTIONS] [as NAME]",
        "fit the current model; methods and options as `bayesc fit` (e.g. nuts --seed 1 --chains 2)",
    ),
    (":fits", "", "list the stored fits"),
    (
        ":summary",
        "[FIT]",
        "posterior summary table of a fit (default: the last)",
    ),
    (
        ":param",
        "NAME [FIT]",
        "summary of one parameter, element or all elements of a vector",
    ),
    (
        ":compare",
        "FIT_A FIT_B",
        "side-by-side means and sds of two fits, difference in sd units",
    ),
    (
        ":save",
        "[FIT] FILE",
        "write draws in Stan CSV: one file for variational fits, one per chain (FILE_1.csv, ...) for MCMC",
    ),
    (
        ":diagnostics",
        "[FIT]",
        "R-hat, ESS, divergences (MCMC); iterations, ELBO, stop reason (VI)",
    ),
    (
        ":elbo",
        "[FIT]",
        "the ELBO trace of a variational fit as a sparkline",
    ),
    (
        ":set",
        "[KEY VALUE]",
        "session default for :fit (seed, method, chains, warmup, samples, diagonal on/off, ...); no argument lists them",
    ),
    (":unset", "KEY", "remove a session default"),
    (":help", "", "this list"),
    (":quit", "", "leave the REPL (also Ctrl-D)"),
];

/// Keywords that begin model text typed at the prompt, in block order.
const BLOCK_KEYWORDS: &[&str] = &[
    "functions",
    "data",
    "transformed data",
    "parameters",
    "transformed parameters",
    "model",
    "generated quantities",
];

/// The rank of the block that `input` begins with (index into [`BLOCK_KEYWORDS`]), if any.
pub fn block_rank(input: &str) -> Option<usize> {
    let t = input.trim_start();
    let words: Vec<&str> = t
        .split(|c: char| c.is_whitespace() || c == '{')
        .filter(|w| !w.is_empty())
        .take(2)
        .collect();
    let first = *words.first()?;
    // `first` begins `t` unless `t` starts with `{`; then it is no block keyword anyway
    let after_first = t.strip_prefix(first)?;
    let ends_ok = |rest: &str| {
        let r = rest.trim_start();
        r.is_empty() || r.starts_with('{')
    };
    match first {
        "functions" if ends_ok(after_first) => Some(0),
        "data" if ends_ok(after_first) => Some(1),
        "parameters" if ends_ok(after_first) => Some(3),
        "model" if ends_ok(after_first) => Some(5),
        "transformed" | "generated" => {
            let second = *words.get(1)?;
            let rest = after_first.trim_start().get(second.len()..)?;
            match (first, second) {
                ("transformed", "data") if ends_ok(rest) => Some(2),
                ("transformed", "parameters") if ends_ok(rest) => Some(4),
                ("generated", "quantities") if ends_ok(rest) => Some(6),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The current model: its text, where it came from and its checked AST.
struct CurrentModel {
    text: String,
    /// The path for `:load`ed models, `<repl>` for typed ones.
    name: String,
    path: Option<PathBuf>,
    mtime: Option<SystemTime>,
    checked: Checked,
}

/// A fit kept by the session under a name.
#[derive(Clone, Debug)]
pub struct StoredFit {
    /// `fit1`, `fit2`, … or the name given with `:fit … as NAME`.
    pub name: String,
    pub result: FitResult,
    /// The options it ran with.
    pub options: FitOptions,
    /// Which model it fitted (path or `<repl>`).
    pub model_name: String,
    /// True when Ctrl-C stopped the fit early: the draws are those made before the stop.
    pub interrupted: bool,
}

/// Lets another thread (the Ctrl-C handler) interrupt a running fit.
#[derive(Clone, Debug)]
pub struct Interrupt {
    stop: Arc<AtomicBool>,
    fitting: Arc<AtomicBool>,
}

impl Interrupt {
    /// Asks the running fit to stop; returns false (and does nothing) if no fit is running.
    pub fn interrupt(&self) -> bool {
        if self.fitting.load(Ordering::SeqCst) {
            self.stop.store(true, Ordering::SeqCst);
            true
        } else {
            false
        }
    }
}

/// A REPL session. See [`Session::execute`].
pub struct Session {
    sources: SourceMap,
    model: Option<CurrentModel>,
    /// The file of the last `:load` that failed to check (the current model was then dropped,
    /// so that `:fit` cannot silently fit the previous one); `:reload` retries it.
    failed_load: Option<PathBuf>,
    /// Model text typed since the last other input; consecutive blocks accumulate here.
    typed: String,
    /// Rank of the last block in `typed`.
    typed_rank: Option<usize>,
    data_paths: Vec<PathBuf>,
    data: Vec<DataSource>,
    compiled: Option<Model>,
    fits: Vec<StoredFit>,
    counter: usize,
    /// Session defaults for `:fit`: option name (without `--`) and value (`None` for flags).
    defaults: Vec<(String, Option<String>)>,
    stop: Arc<AtomicBool>,
    fitting: Arc<AtomicBool>,
    progress: bool,
}

impl Default for Session {
    fn default() -> Self {
        Self::new()
    }
}

/// `:fit` options parsed by the same clap arguments as `bayesc fit`.
#[derive(Parser, Debug)]
#[command(
    name = ":fit",
    no_binary_name = true,
    disable_help_flag = true,
    disable_version_flag = true,
    override_usage = ":fit [METHOD] [OPTIONS] [as NAME]"
)]
struct FitLine {
    #[command(flatten)]
    args: FitArgs,
}

impl Session {
    /// An empty session: no model, no data, no fits, no defaults; progress bars on (they show
    /// only when standard error is a terminal).
    pub fn new() -> Self {
        Session {
            sources: SourceMap::new(),
            model: None,
            failed_load: None,
            typed: String::new(),
            typed_rank: None,
            data_paths: Vec::new(),
            data: Vec::new(),
            compiled: None,
            fits: Vec::new(),
            counter: 0,
            defaults: Vec::new(),
            stop: Arc::new(AtomicBool::new(false)),
            fitting: Arc::new(AtomicBool::new(false)),
            progress: true,
        }
    }

    /// Turns progress bars on or off.
    pub fn set_progress(&mut self, on: bool) {
        self.progress = on;
    }

    /// A handle for interrupting fits from another thread (Ctrl-C).
    pub fn interrupt_handle(&self) -> Interrupt {
        Interrupt {
            stop: self.stop.clone(),
            fitting: self.fitting.clone(),
        }
    }

    /// The stored fits, oldest first.
    pub fn fits(&self) -> &[StoredFit] {
        &self.fits
    }

    /// Words for tab completion: commands, names of the current model's data and parameters
    /// (with the elements of the last fit's draws), distributions, functions and reducers.
    pub fn completion_words(&self) -> Vec<String> {
        let mut w: BTreeSet<String> = COMMANDS.iter().map(|c| c.0.to_string()).collect();
        w.insert(":q".into());
        if let Some(m) = &self.model {
            let p = &m.checked.program;
            for d in p.data.iter().chain(&p.parameters) {
                w.insert(d.name.name.clone());
            }
        }
        if let Some(f) = self.fits.last() {
            for n in &f.result.draws.names {
                w.insert(n.clone());
                w.insert(n.split('[').next().unwrap_or(n).to_string());
            }
        }
        for fam in crate::distributions::registry::FAMILIES {
            w.insert(fam.name.to_string());
        }
        for b in crate::semantics::builtins::BUILTINS {
            w.insert(b.name.to_string());
        }
        for f in expr::REDUCERS
            .iter()
            .chain(expr::UNARY_FUNCTIONS)
            .chain(expr::BINARY_FUNCTIONS)
        {
            w.insert(f.to_string());
        }
        for f in &self.fits {
            w.insert(f.name.clone());
        }
        for k in BLOCK_KEYWORDS {
            w.insert(k.split(' ').next().unwrap_or(k).to_string());
        }
        for m in ["qbvi", "nuts", "hmc", "mh"] {
            w.insert(m.into());
        }
        w.into_iter().collect()
    }

    /// Executes one input: a `:command`, model text (beginning with a block keyword; it must be
    /// complete, see `syntax::parser::input_is_complete`), or a posterior expression evaluated
    /// against the last fit. Never panics on user input; errors come back as text with
    /// `is_error` set and leave the session usable.
    pub fn execute(&mut self, input: &str) -> Output {
        let line = input.trim();
        if line.is_empty() || line.starts_with("//") && !line.contains('\n') {
            return Output::default();
        }
        if let Some(cmd) = line.strip_prefix(':') {
            self.typed.clear();
            self.typed_rank = None;
            return self.command(cmd);
        }
        if let Some(rank) = block_rank(line) {
            return self.model_text(line, rank);
        }
        self.typed.clear();
        self.typed_rank = None;
        self.expression(line)
    }

    fn render(&self, failure: Failure) -> String {
        failure
            .into_reports()
            .iter()
            .map(|d| render_plain(&self.sources, d))
            .collect()
    }

    fn command(&mut self, cmd: &str) -> Output {
        let mut words = cmd.split_whitespace();
        let name = words.next().unwrap_or("");
        let args: Vec<&str> = words.collect();
        match name {
            "load" | "l" => match args.as_slice() {
                [file] => self.load(Path::new(file)),
                _ => Output::error("usage: :load FILE"),
            },
            "reload" | "r" => self.reload(false),
            "data" | "d" => self.set_data(&args),
            "show" => self.show(),
            "fit" | "f" => self.fit(&args),
            "fits" => self.list_fits(),
            "summary" | "s" => self.summary(&args),
            "param" | "p" => self.param(&args),
            "compare" => self.compare(&args),
            "save" => self.save(&args),
            "diagnostics" | "diag" => self.diagnostics(&args),
            "elbo" => self.elbo(&args),
            "set" => self.set(&args),
            "unset" => self.unset(&args),
            "help" | "h" | "?" => Output::ok(help_text()),
            "quit" | "q" | "exit" => Output {
                quit: true,
                ..Output::default()
            },
            other => {
                let names = COMMANDS.iter().map(|c| &c.0[1..]);
                let mut msg = format!("error: unknown command `:{other}`");
                if let Some(s) = best_match(other, names) {
                    let _ = write!(msg, "\n  help: did you mean `:{s}`?");
                }
                msg.push_str("\n  (`:help` lists the commands)");
                Output::error(msg)
            }
        }
    }

    // ----- model and data -------------------------------------------------------------------

    fn load(&mut self, path: &Path) -> Output {
        let checked = match pipeline::check_file(&mut self.sources, path) {
            Ok(c) => c,
            Err(f) => {
                // Keeping the previous model would make the next `:fit` fit it without a word.
                let mut text = self.render(f);
                if let Some(old) = self.model.take() {
                    let _ = writeln!(
                        text,
                        "note: no current model now (the previous one, {}, was unloaded); \
                         fix the file and `:reload`",
                        old.name
                    );
                }
                self.compiled = None;
                self.failed_load = Some(path.to_path_buf());
                return Output::error(text);
            }
        };
        self.failed_load = None;
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

    fn reload(&mut self, quiet_if_unchanged: bool) -> Output {
        let path = self.model.as_ref().and_then(|m| m.path.clone());
        let Some(path) = path.or_else(|| self.failed_load.clone()) else {
            return Output::error(
                "error: the current model was not loaded from a file (use :load FILE)",
            );
        };
        if quiet_if_unchanged {
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

    /// Installs a checked model; compiles it when data is loaded.
    fn set_model(&mut self, m: CurrentModel) -> Output {
        let p = &m.checked.program;
        // Typed text arrives block by block: warnings about a program without its `model`
        // block yet (e.g. "parameter has no prior") would be noise, so they wait for it.
        let partial = m.path.is_none() && p.block_spans.model.is_none();
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
        if !self.data.is_empty() {
            self.try_compile(&mut out);
        }
        out
    }

    /// Compiles the current model with the current data; appends errors to `out`.
    fn try_compile(&mut self, out: &mut Output) -> bool {
        let Some(m) = &self.model else {
            return false;
        };
        match pipeline::compile(&m.checked, &self.sources, &self.data) {
            Ok(model) => {
                self.compiled = Some(model);
                true
            }
            Err(f) => {
                self.compiled = None;
                out.text.push_str(&self.render(f));
                out.is_error = true;
                false
            }
        }
    }

    fn model_text(&mut self, text: &str, rank: usize) -> Output {
        if !parser::input_is_complete(text) {
            return Output::error(
                "error: the model text is incomplete (unbalanced braces or an open comment)",
            );
        }
        if self.typed_rank.is_none_or(|r| rank <= r) {
            self.typed.clear();
        }
        if !self.typed.is_empty() {
            self.typed.push('\n');
        }
        self.typed.push_str(text);
        let source = self.typed.clone();
        match pipeline::check_source(&mut self.sources, "<repl>", &source) {
            Ok(checked) => {
                // the last block of the accumulated text decides where the next one may go
                self.typed_rank = Some(rank);
                self.set_model(CurrentModel {
                    text: source,
                    name: "<repl>".into(),
                    path: None,
                    mtime: None,
                    checked,
                })
            }
            Err(f) => {
                // keep earlier blocks only if they were fine on their own
                let mut t = self.typed.clone();
                t.truncate(t.len() - text.len());
                self.typed = t.trim_end().to_string();
                Output::error(self.render(f))
            }
        }
    }

    fn set_data(&mut self, files: &[&str]) -> Output {
        if files.is_empty() {
            if self.data_paths.is_empty() {
                return Output::ok("no data files (use :data FILE...)");
            }
            let list: Vec<String> = self
                .data_paths
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            return Output::ok(format!("data: {}", list.join(", ")));
        }
        let paths: Vec<PathBuf> = files.iter().map(PathBuf::from).collect();
        let data = match pipeline::load_data(&paths) {
            Ok(d) => d,
            Err(f) => return Output::error(self.render(f)),
        };
        self.data = data;
        self.data_paths = paths;
        self.compiled = None;
        let mut out = Output::ok(format!("data: {}", files.join(", ")));
        if self.model.is_some() && self.try_compile(&mut out) {
            out.text.push_str("the data fit the model\n");
        }
        out
    }

    fn show(&self) -> Output {
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

    // ----- fitting --------------------------------------------------------------------------

    fn fit(&mut self, args: &[&str]) -> Output {
        if self.model.is_none() && self.failed_load.is_none() {
            return Output::error(
                "error: no model to fit: load one with `:load FILE` or type a model",
            );
        }
        let mut prefix = String::new();
        // a file model is reloaded when it changed; a failed :load is retried (and fails again
        // until fixed), never replaced by the model before it
        if self.model.as_ref().is_some_and(|m| m.path.is_some()) || self.model.is_none() {
            let r = self.reload(true);
            if r.is_error {
                return r;
            }
            prefix = r.text;
        }
        // `as NAME` at the end
        let (args, name) = match args {
            [head @ .., "as", n] => (head, Some(n.to_string())),
            _ => (args, None),
        };
        if let Some(n) = &name
            && (n.is_empty()
                || !n.chars().all(|c| c.is_alphanumeric() || c == '_')
                || n.starts_with(|c: char| c.is_ascii_digit()))
        {
            return Output::error(format!(
                "error: a fit name is letters, digits and `_`, not starting with a digit; got `{n}`"
            ));
        }
        let fit_args = match self.parse_fit_args(args) {
            Ok(a) => a,
            Err(e) => return Output::error(e),
        };
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
        let mut out = Output::ok(prefix);
        if self.compiled.is_none() && !self.try_compile(&mut out) {
            return out;
        }
        let model = self.compiled.as_ref().expect("compiled just above");
        let seed = fit_args
            .seed
            .unwrap_or_else(|| rand::rng().random::<u32>() as u64);
        let mut options = options_from_args(&fit_args, model.dim(), seed);
        if let Some(m) = fit_args.batch_size {
            let checked = &self.model.as_ref().expect("compiled above").checked;
            match pipeline::minibatch_plan(
                checked,
                &self.data,
                model,
                m as usize,
                fit_args.batch_over.as_deref(),
            ) {
                Ok(plan) => options.minibatch = Some(plan),
                Err(f) => {
                    out.text.push_str(&self.render(f));
                    out.is_error = true;
                    return out;
                }
            }
        }
        let name = name.unwrap_or_else(|| {
            let mut k = self.counter + 1;
            while self.fits.iter().any(|f| f.name == format!("fit{k}")) {
                k += 1;
            }
            format!("fit{k}")
        });
        let _ = writeln!(out.text, "{name}: {}", settings_line(&options, model.dim()));
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
        if result.draws.n_draws() == 0 {
            let _ = writeln!(
                out.text,
                "the fit returned no draws (an MCMC run interrupted before any chain finished \
                 warmup): nothing stored"
            );
            return out;
        }
        self.counter += 1;
        out.text
            .push_str(&result_text(&result, &options, interrupted));
        let _ = writeln!(
            out.text,
            "stored as {name}{}",
            if interrupted { " (interrupted)" } else { "" }
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
        };
        self.fits.retain(|f| f.name != name);
        self.fits.push(stored);
        out
    }

    /// Parses `:fit` arguments (first word: the method) plus the session defaults with the CLI's
    /// clap arguments.
    fn parse_fit_args(&self, args: &[&str]) -> Result<FitArgs, String> {
        let mut argv: Vec<String> = vec!["<repl>".into()];
        let mut rest = args;
        if let [m, tail @ ..] = args
            && !m.starts_with('-')
        {
            argv.push("--method".into());
            argv.push(m.to_string());
            rest = tail;
        }
        let given: Vec<&str> = args
            .iter()
            .filter_map(|a| a.strip_prefix("--"))
            .map(|a| a.split('=').next().unwrap_or(a))
            .collect();
        let method_given = argv.len() > 1 || given.contains(&"method");
        for (k, v) in &self.defaults {
            if given.contains(&k.as_str()) || (k == "method" && method_given) {
                continue;
            }
            argv.push(format!("--{k}"));
            if let Some(v) = v {
                argv.push(v.clone());
            }
        }
        argv.extend(rest.iter().map(|s| s.to_string()));
        let parsed = FitLine::try_parse_from(&argv)
            .map_err(|e| e.render().to_string().trim_end().to_string())?;
        check_args(&parsed.args).map_err(|m| format!("error: {m}"))?;
        Ok(parsed.args)
    }

    fn set(&mut self, args: &[&str]) -> Output {
        match args {
            [] => {
                if self.defaults.is_empty() {
                    return Output::ok("no session defaults (e.g. `:set seed 3`)");
                }
                let lines: Vec<String> = self
                    .defaults
                    .iter()
                    .map(|(k, v)| match v {
                        Some(v) => format!("{k} = {v}"),
                        None => format!("{k} = on"),
                    })
                    .collect();
                Output::ok(lines.join("\n"))
            }
            [key, value] => {
                let key = key.trim_start_matches('-').replace('_', "-");
                let value = match *value {
                    "on" | "true" | "yes" => None,
                    "off" | "false" | "no" => {
                        self.defaults.retain(|(k, _)| *k != key);
                        return Output::ok(format!("{key} = off"));
                    }
                    v => Some(v.to_string()),
                };
                let old = self.defaults.clone();
                self.defaults.retain(|(k, _)| *k != key);
                self.defaults.push((key.clone(), value.clone()));
                // validate with the same parser as :fit
                if let Err(e) = self.parse_fit_args(&[]) {
                    self.defaults = old;
                    return Output::error(format!("cannot set `{key}`:\n{e}"));
                }
                Output::ok(format!("{key} = {}", value.as_deref().unwrap_or("on")))
            }
            _ => Output::error("usage: :set KEY VALUE (e.g. `:set seed 3`, `:set diagonal on`)"),
        }
    }

    fn unset(&mut self, args: &[&str]) -> Output {
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
    fn pick(&self, name: Option<&str>) -> Result<&StoredFit, Output> {
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

    fn list_fits(&self) -> Output {
        if self.fits.is_empty() {
            return Output::ok("no fits yet");
        }
        let mut s = String::new();
        for f in &self.fits {
            let _ = writeln!(
                s,
                "{:<10} {:<8} seed {:<6} {} chain(s) × {} draws  {:.2} s  {}{}",
                f.name,
                f.result.method.to_string(),
                f.result.seed,
                f.result.draws.chains.len(),
                f.result.draws.n_draws(),
                f.result.seconds,
                f.model_name,
                if f.interrupted { "  [interrupted]" } else { "" }
            );
        }
        Output::ok(s)
    }

    fn summary(&self, args: &[&str]) -> Output {
        let f = match self.pick(args.first().copied()) {
            Ok(f) => f,
            Err(o) => return o,
        };
        if let FitDetails::Optimize(o) = &f.result.details {
            return Output::ok(format!("{}\n{}", fit_header(f), optimize_table(o)));
        }
        let mcmc = f.result.method.is_mcmc();
        let rows = summary::summarize(&f.result.draws, mcmc);
        Output::ok(format!(
            "{}\n{}",
            fit_header(f),
            summary::format_table(&rows, mcmc)
        ))
    }

    fn param(&self, args: &[&str]) -> Output {
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
        let cols: Vec<usize> = (0..draws.names.len())
            .filter(|&j| {
                let n = &draws.names[j];
                n == name || (n.starts_with(name) && n[name.len()..].starts_with('['))
            })
            .collect();
        if cols.is_empty() {
            let bases: BTreeSet<&str> = draws
                .names
                .iter()
                .map(|n| n.split('[').next().unwrap_or(n))
                .collect();
            let mut msg = format!("error: `{name}` is not in the draws of {}", f.name);
            let base = name.split('[').next().unwrap_or(name);
            if let Some(s) = best_match(base, bases.iter().copied()) {
                let _ = write!(msg, "\n  help: did you mean `{s}`?");
            }
            return Output::error(msg);
        }
        let sub = select(draws, &cols);
        let mcmc = f.result.method.is_mcmc();
        let rows = summary::summarize(&sub, mcmc);
        Output::ok(summary::format_table(&rows, mcmc))
    }

    fn compare(&self, args: &[&str]) -> Output {
        let [a, b] = args else {
            return Output::error("usage: :compare FIT_A FIT_B");
        };
        let (fa, fb) = match (self.pick(Some(a)), self.pick(Some(b))) {
            (Ok(x), Ok(y)) => (x, y),
            (Err(o), _) | (_, Err(o)) => return o,
        };
        let ra = summary::summarize(&fa.result.draws, false);
        let rb = summary::summarize(&fb.result.draws, false);
        let mut cells = vec![vec![
            "name".to_string(),
            format!("mean({a})"),
            format!("sd({a})"),
            format!("mean({b})"),
            format!("sd({b})"),
            "diff/sd".to_string(),
        ]];
        for x in &ra {
            let Some(y) = rb.iter().find(|y| y.name == x.name) else {
                continue;
            };
            let pooled = ((x.sd * x.sd + y.sd * y.sd) / 2.0).sqrt();
            cells.push(vec![
                x.name.clone(),
                format_sig(x.mean, 4),
                format_sig(x.sd, 4),
                format_sig(y.mean, 4),
                format_sig(y.sd, 4),
                format!("{:+.2}", (y.mean - x.mean) / pooled),
            ]);
        }
        if cells.len() == 1 {
            return Output::error(format!("error: {a} and {b} have no quantity in common"));
        }
        let mut s = format!(
            "{}\n{}\ndiff/sd = (mean({b}) − mean({a})) / √((sd({a})² + sd({b})²)/2)\n\n",
            fit_header(fa),
            fit_header(fb)
        );
        s.push_str(&align(&cells));
        Output::ok(s)
    }

    fn save(&self, args: &[&str]) -> Output {
        let (fit, file) = match args {
            [file] => (None, *file),
            [fit, file] => (Some(*fit), *file),
            _ => return Output::error("usage: :save [FIT] FILE"),
        };
        let f = match self.pick(fit) {
            Ok(f) => f,
            Err(o) => return o,
        };
        match write_outputs(
            Path::new(file),
            &f.result,
            &f.options,
            Path::new(&f.model_name),
        ) {
            Ok(files) => Output::ok(format!("{} draws written to {}", f.name, files.join(", "))),
            Err(e) => Output::error(format!("error: cannot write draws to `{file}`: {e}")),
        }
    }

    fn diagnostics(&self, args: &[&str]) -> Output {
        let f = match self.pick(args.first().copied()) {
            Ok(f) => f,
            Err(o) => return o,
        };
        let mut s = fit_header(f);
        s.push('\n');
        if let FitDetails::Qbvi(q) = &f.result.details {
            let _ = writeln!(
                s,
                "stop reason: {}\niterations: {} (returned iteration {})\nbest smoothed ELBO: {:.3}\nlast ELBO estimate: {:.3}\nskipped steps (positive-definiteness guard): {}",
                stop_reason(q.stop, q.skipped_steps),
                q.iterations,
                q.returned_iteration,
                q.best_smoothed_elbo,
                q.elbo_trace.last().copied().unwrap_or(f64::NAN),
                q.skipped_steps
            );
            s.push_str(&vi_diagnostics_text(&f.result));
        } else if let FitDetails::Mcmc(out) = &f.result.details {
            for (c, ch) in out.chains.iter().enumerate() {
                let bfmi = diagnostics::e_bfmi(&ch.stats.energy)
                    .map(|b| format!("{b:.3}"))
                    .unwrap_or_else(|_| "NA".into());
                let _ = writeln!(
                    s,
                    "chain {}: {} draws, step size {:.4}, mean accept_stat {:.3}, divergences {}, max tree depth hits {}, E-BFMI {}",
                    c + 1,
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
            warnings.extend(convergence_warnings(&rows, f.result.draws.chains.len()));
            if warnings.is_empty() {
                s.push_str("no warnings\n");
            } else {
                s.push_str("warnings:\n");
                for w in warnings {
                    let _ = writeln!(s, "  - {w}");
                }
            }
        } else if f.result.vi.is_some() {
            s.push_str(vi_diagnostics_text(&f.result).trim_start_matches('\n'));
        } else {
            let _ = writeln!(
                s,
                "no diagnostics beyond the summary for {} fits",
                f.result.method
            );
        }
        Output::ok(s)
    }

    fn elbo(&self, args: &[&str]) -> Output {
        let f = match self.pick(args.first().copied()) {
            Ok(f) => f,
            Err(o) => return o,
        };
        let FitDetails::Qbvi(q) = &f.result.details else {
            return Output::error(format!(
                "error: {} is a {} fit; :elbo applies to QBVI fits, which keep an ELBO trace",
                f.name, f.result.method
            ));
        };
        if q.elbo_trace.is_empty() {
            return Output::error(format!("error: {} has no ELBO trace", f.name));
        }
        let (line, lo, hi) = sparkline(&q.elbo_trace, 60);
        Output::ok(format!(
            "ELBO over {} iterations (first {:.3}, last {:.3}, best smoothed {:.3}):\n{line}\nscale: ▁ ≤ {:.3}, █ = {:.3}",
            q.elbo_trace.len(),
            q.elbo_trace[0],
            q.elbo_trace[q.elbo_trace.len() - 1],
            q.best_smoothed_elbo,
            lo,
            hi
        ))
    }

    // ----- expressions ----------------------------------------------------------------------

    fn expression(&mut self, text: &str) -> Output {
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
        let (reduction, values) = match expr::evaluate(&e, &f.result.draws) {
            Ok(v) => v,
            Err(err) => return Output::error(render_plain(&self.sources, &err.to_diagnostic())),
        };
        let mcmc = f.result.method.is_mcmc();
        Output::ok(reduce(text, reduction, &values, mcmc, &f.name))
    }
}

fn help_text() -> String {
    let w = COMMANDS
        .iter()
        .map(|(c, a, _)| c.len() + a.len() + 1)
        .max()
        .unwrap_or(0);
    let mut s = String::from("commands:\n");
    for (c, a, h) in COMMANDS {
        let left = if a.is_empty() {
            c.to_string()
        } else {
            format!("{c} {a}")
        };
        let _ = writeln!(s, "  {left:<w$}  {h}");
    }
    s.push_str(
        "\nmodel text: a line starting with a block keyword (data, parameters, model, …) begins a\n\
         model; it continues until the braces balance, and consecutive blocks form the current model.\n\
         expressions: anything else is evaluated per draw of the last fit, e.g. `mean(beta[1] < 0)`,\n\
         `quantile(alpha, 0.9)`, `sd(alpha + beta[2])`, `median(exp(alpha))`; a bare expression\n\
         prints its mean with Monte Carlo standard error and its 5% and 95% quantiles.\n",
    );
    s
}

fn stop_reason(s: StopReason, skipped: usize) -> &'static str {
    match s {
        StopReason::ExitRule if skipped > 0 => {
            "NOT converged (the exit rule fired after skipped updates: q stopped moving)"
        }
        StopReason::ExitRule => "converged (the smoothed-ELBO exit rule fired)",
        StopReason::MaxIterations => {
            "iteration cap reached before the exit rule fired (may not have converged)"
        }
        StopReason::Interrupted => "interrupted (Ctrl-C)",
    }
}

fn fit_header(f: &StoredFit) -> String {
    if f.result.method == fit::Method::Optimize {
        return format!(
            "{}: optimize (seed {}), point estimate, model {}",
            f.name, f.result.seed, f.model_name
        );
    }
    format!(
        "{}: {} (seed {}), {} chain(s) × {} draws, model {}{}",
        f.name,
        f.result.method,
        f.result.seed,
        f.result.draws.chains.len(),
        f.result.draws.n_draws(),
        f.model_name,
        if f.interrupted { ", INTERRUPTED" } else { "" }
    )
}

/// One line naming the method and its main settings.
fn settings_line(o: &FitOptions, d: usize) -> String {
    let what = match o.method {
        m if m.is_mcmc() => {
            return format!(
                "{m} on d = {d}, {} chains × ({} warmup + {} draws), seed {}",
                o.mcmc.chains, o.mcmc.warmup, o.mcmc.samples, o.seed
            );
        }
        fit::Method::Optimize => {
            return format!(
                "optimize on d = {d}, L-BFGS + Newton polish, jacobian = {}, {} standard errors, seed {}",
                o.jacobian, o.std_errors, o.seed
            );
        }
        fit::Method::Qnvb => "the fitted mean-field Gaussian",
        fit::Method::Laplace => "the Laplace approximation",
        _ => "the fitted Gaussian",
    };
    let batch = match &o.minibatch {
        Some(p) => format!(
            ", minibatch M = {} of N = {} rows (`{}`), exit rule on the full-data ELBO per epoch",
            p.settings.batch_size, p.n_obs, p.separability.axis
        ),
        None => String::new(),
    };
    format!(
        "{} on d = {d}, {} draws from {what}, seed {}{batch}",
        o.method, o.vi_draws, o.seed
    )
}

/// Runs the fit with a progress bar and the session's stop flag.
fn run_fit(
    model: &Model,
    options: &FitOptions,
    stop: &AtomicBool,
    fitting: &AtomicBool,
    progress: bool,
) -> Result<FitResult, fit::FitError> {
    let (len, template) = if options.method.is_mcmc() {
        (
            ((options.mcmc.warmup + options.mcmc.samples) * options.mcmc.chains) as u64,
            "{bar:30} {pos}/{len} iterations (all chains) {msg} [{elapsed} < {eta}] Ctrl-C stops",
        )
    } else {
        (
            options.qbvi.max_iter as u64,
            "{spinner} QBVI iteration {pos}, {msg} [{elapsed}] Ctrl-C stops",
        )
    };
    let bar = DelayedBar::new(len, template, progress);
    let chain_pos: Vec<AtomicUsize> = (0..options.mcmc.chains)
        .map(|_| AtomicUsize::new(0))
        .collect();
    let on_progress = |e: ProgressEvent| match e {
        ProgressEvent::Qbvi(p) => bar.update(p.iteration as u64, || match p.smoothed_elbo {
            Some(s) => format!("smoothed ELBO {s:.3}"),
            None => format!("ELBO {:.3}", p.elbo),
        }),
        ProgressEvent::Chain(p) => {
            if let Some(slot) = chain_pos.get(p.chain) {
                slot.store(p.iteration, Ordering::Relaxed);
            }
            let pos: usize = chain_pos.iter().map(|a| a.load(Ordering::Relaxed)).sum();
            bar.update(pos as u64, || {
                if p.warmup { "warmup" } else { "sampling" }.into()
            });
        }
    };
    stop.store(false, Ordering::SeqCst);
    fitting.store(true, Ordering::SeqCst);
    let monitor = Monitor {
        on_progress: &on_progress,
        stop,
    };
    let r = fit::fit(model, options, &monitor);
    fitting.store(false, Ordering::SeqCst);
    stop.store(false, Ordering::SeqCst);
    bar.finish();
    r
}

/// Whether Ctrl-C stopped the fit early. An interrupted MCMC run arrives already trimmed to
/// chains of equal length by [`fit::trim_interrupted`].
fn was_interrupted(r: &FitResult) -> bool {
    match &r.details {
        FitDetails::Qbvi(q) => q.stop == StopReason::Interrupted,
        FitDetails::Qnvb(q) => q.stop == crate::inference::qnvb::QnvbStop::Interrupted,
        FitDetails::Mcmc(out) => out.interrupted,
        _ => false,
    }
}

/// The printed result of a fit: how it ended, the summary table and warnings; the MCMC,
/// optimisation and variational-diagnostic parts are shared with the CLI (`output::report`).
fn result_text(r: &FitResult, options: &FitOptions, interrupted: bool) -> String {
    let mut s = String::new();
    match &r.details {
        FitDetails::Mcmc(out) => return mcmc_text(r, out, options),
        FitDetails::Optimize(o) => return optimize_text(r, o),
        FitDetails::Qbvi(q) => {
            let _ = writeln!(
                s,
                "{} after {} iterations ({:.2} s); best smoothed ELBO = {:.3}",
                stop_reason(q.stop, q.skipped_steps),
                q.iterations,
                r.seconds,
                q.best_smoothed_elbo
            );
        }
        _ => {
            let _ = writeln!(
                s,
                "{} {} in {:.2} s",
                r.method,
                if interrupted {
                    "INTERRUPTED"
                } else {
                    "finished"
                },
                r.seconds
            );
        }
    }
    s.push('\n');
    s.push_str(&summary::format_table(
        &summary::summarize(&r.draws, false),
        false,
    ));
    s.push_str(&vi_diagnostics_text(r));
    s
}

/// The draws restricted to the columns `cols`.
fn select(d: &Draws, cols: &[usize]) -> Draws {
    let k = d.names.len();
    Draws {
        names: cols.iter().map(|&j| d.names[j].clone()).collect(),
        chains: d
            .chains
            .iter()
            .map(|c| {
                c.chunks(k)
                    .flat_map(|row| cols.iter().map(move |&j| row[j]))
                    .collect()
            })
            .collect(),
    }
}

/// Left-aligned first column, right-aligned others.
fn align(cells: &[Vec<String>]) -> String {
    let cols = cells.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..cols)
        .map(|j| {
            cells
                .iter()
                .map(|r| r[j].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in cells {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(j, (c, w))| {
                if j == 0 {
                    format!("{c:<w$}")
                } else {
                    format!("{c:>w$}")
                }
            })
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// Type-7 quantile of unsorted values (NaN if any is NaN or there are none).
fn quantile(values: &[f64], p: f64) -> f64 {
    if values.is_empty() || values.iter().any(|v| v.is_nan()) {
        return f64::NAN;
    }
    let mut v = values.to_vec();
    v.sort_unstable_by(f64::total_cmp);
    crate::diagnostics::quantile::quantile_sorted(&v, p)
}

/// Monte Carlo standard error of the mean: `diagnostics::mcse_mean` for MCMC (0 for constant
/// draws), sd/√S for independent variational draws.
fn mcse_mean(chains: &[Vec<f64>], mcmc: bool) -> Option<f64> {
    let pooled: Vec<f64> = chains.iter().flatten().copied().collect();
    let s = pooled.len() as f64;
    if pooled.len() < 2 {
        return None;
    }
    if pooled.iter().all(|v| *v == pooled[0]) {
        return Some(0.0);
    }
    if mcmc {
        let slices: Vec<&[f64]> = chains.iter().map(Vec::as_slice).collect();
        diagnostics::mcse_mean(&slices).ok()
    } else {
        let m = pooled.iter().sum::<f64>() / s;
        let sd = (pooled.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (s - 1.0)).sqrt();
        Some(sd / s.sqrt())
    }
}

/// The printed value of a reduced expression.
fn reduce(text: &str, r: Reduction, chains: &[Vec<f64>], mcmc: bool, fit: &str) -> String {
    let pooled: Vec<f64> = chains.iter().flatten().copied().collect();
    let s = pooled.len() as f64;
    let mean = pooled.iter().sum::<f64>() / s;
    let sd = (pooled.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (s - 1.0)).sqrt();
    let mcse = mcse_mean(chains, mcmc)
        .map(|v| format_sig(v, 2))
        .unwrap_or_else(|| "NA".into());
    let n = pooled.len();
    match r {
        Reduction::Summary => format!(
            "{text} = {}  (MCSE {mcse}; sd {}; 5% {}, 95% {}; {n} draws of {fit})",
            format_sig(mean, 4),
            format_sig(sd, 4),
            format_sig(quantile(&pooled, 0.05), 4),
            format_sig(quantile(&pooled, 0.95), 4)
        ),
        Reduction::Mean => format!(
            "{text} = {}  (MCSE {mcse}; {n} draws of {fit})",
            format_sig(mean, 4)
        ),
        Reduction::Sd => format!("{text} = {}  ({n} draws of {fit})", format_sig(sd, 4)),
        Reduction::Quantile(p) => format!(
            "{text} = {}  ({n} draws of {fit})",
            format_sig(quantile(&pooled, p), 4)
        ),
        Reduction::Median => format!(
            "{text} = {}  ({n} draws of {fit})",
            format_sig(quantile(&pooled, 0.5), 4)
        ),
    }
}

/// A text sparkline of `values` in at most `width` cells (bucket means), using ▁▂▃▄▅▆▇█. The
/// scale runs from the 5% quantile of the bucket means (lower values print as ▁, so a poor
/// start does not flatten the rest) to their maximum. Returns the line and the scale ends.
pub fn sparkline(values: &[f64], width: usize) -> (String, f64, f64) {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if finite.is_empty() || width == 0 {
        return (String::new(), f64::NAN, f64::NAN);
    }
    let cells = width.min(finite.len());
    let buckets: Vec<f64> = (0..cells)
        .map(|i| {
            let a = i * finite.len() / cells;
            let b = ((i + 1) * finite.len() / cells).max(a + 1);
            finite[a..b].iter().sum::<f64>() / (b - a) as f64
        })
        .collect();
    let lo = quantile(&buckets, 0.05);
    let hi = buckets.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let line = buckets
        .iter()
        .map(|&v| {
            if hi - lo <= 0.0 {
                BARS[3]
            } else {
                let t = ((v - lo) / (hi - lo)).clamp(0.0, 1.0);
                BARS[((t * 7.0).round() as usize).min(7)]
            }
        })
        .collect();
    (line, lo, hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_keywords() {
        assert_eq!(block_rank("data {"), Some(1));
        assert_eq!(block_rank("  transformed   parameters{ real x; }"), Some(4));
        assert_eq!(block_rank("generated quantities {"), Some(6));
        assert_eq!(block_rank("model"), Some(5));
        assert_eq!(block_rank("data_x + 1"), None);
        assert_eq!(block_rank("transformed_x"), None);
        assert_eq!(block_rank("mean(alpha)"), None);
    }

    #[test]
    fn sparkline_scales_to_the_range() {
        let (s, lo, hi) = sparkline(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], 8);
        assert_eq!(s, "▁▂▃▄▅▆▇█");
        assert!((lo - 0.35).abs() < 1e-12 && hi == 7.0);
        let (s, _, _) = sparkline(&[1.0; 100], 10);
        assert_eq!(s.chars().count(), 10);
    }

    #[test]
    fn errors_keep_the_session() {
        let mut s = Session::new();
        for bad in [
            ":fit",
            ":sumary",
            ":load /no/such/file.bayes",
            "alpha +",
            ":compare a",
            "mean(x)",
        ] {
            let o = s.execute(bad);
            assert!(o.is_error, "{bad}: {o:?}");
            assert!(!o.quit);
        }
        assert!(
            s.execute(":sumary")
                .text
                .contains("did you mean `:summary`")
        );
        assert!(s.execute(":help").text.contains(":compare FIT_A FIT_B"));
        assert!(s.execute(":quit").quit);
    }

    #[test]
    fn garbage_never_panics() {
        let mut s = Session::new();
        for junk in [
            "{ää",
            "}}}",
            ":",
            "::",
            ": fit",
            "data",
            "data {",
            "model }",
            "\u{0}",
            "ä[1]",
            "beta[1.5]",
            "x[",
            "1/0",
            ":set",
            ":set a b c",
            ":save",
            ":param",
            ":fit as",
            ":fit as 1x",
            ":data /nonexistent.csv",
            "generated quantities",
            "transformed",
        ] {
            let o = s.execute(junk);
            assert!(!o.quit, "{junk}");
        }
        assert!(block_rank("{ää").is_none());
    }
}
