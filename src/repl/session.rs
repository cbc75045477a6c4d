//! The REPL backend: a session that holds the current model, data and named fits, and turns one
//! command, model text or posterior expression into text to print. It knows nothing of the
//! terminal (STYLE.md §4), so tests drive it directly.

mod text;
use text::*;

mod binding;
mod fitting;
mod inspect;
mod plot;

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
use crate::fit::args::{FitArgs, check_args, check_values, misplaced_options};
use crate::fit::{self, FitDetails, FitOptions, FitResult, Monitor, ProgressEvent};
use crate::graph::Model;
use crate::inference::qbvi::StopReason;
use crate::inference::{Draws, LogDensity};
use crate::output::fit_files::{
    check_output_folders, place_in_output_dir, write_elbo, write_outputs,
};
use crate::output::progress::DelayedBar;
use crate::output::report::{
    exit_rule_not_converged, fit_preamble, hmc_warnings, mcmc_text, optimize_footer,
    optimize_rows_table, optimize_text, optimizer_name, vi_diagnostics_text_with,
};
use crate::output::summary::{self, format_sig};
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
    /// True when the input failed (the session is unchanged apart from what the text says),
    /// and for a `:fit` whose generated quantities failed at some draws (the fit is stored).
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
        "load a model file (it becomes the current model; if it cannot be read or checked, the current one stays)",
    ),
    (
        ":reload",
        "",
        "re-read the current model file (done automatically before :fit when it changed)",
    ),
    (
        ":data",
        "FILE...",
        "bind these CSV/JSON data files in place of the previous ones if they fit the current model (if not, they are refused and the previous ones kept)",
    ),
    (":show", "", "print the current model with line numbers"),
    (
        ":fit",
        "[METHOD] [OPTIONS] [as NAME]",
        "fit the current model; methods and options as `bayesc fit` (e.g. nuts --seed 1 --chains 2); `as NAME` of an existing fit replaces it, with a note",
    ),
    (
        ":fits",
        "",
        "list the stored fits: method, seed, draws or point estimate, how each ended (convergence, ELBO, R-hat, log density at the mode)",
    ),
    (
        ":summary",
        "[FIT]",
        "posterior summary table of a fit (default: the last); an optimize fit: estimates, standard errors, log density at the optimum, convergence",
    ),
    (
        ":param",
        "NAME [FIT]",
        "summary of one parameter, element or all elements of a vector (an optimize fit: its estimate and standard error)",
    ),
    (
        ":compare",
        "FIT_A FIT_B",
        "side-by-side means and sds of two fits, difference in sd units (an optimize fit: its estimate, no sd)",
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
        "the ELBO trace of an iterative variational fit (qbvi, qnvb, ivon, …) as a sparkline",
    ),
    (
        ":plot",
        "KIND [PARAM,...] [FILE.svg] [combined]",
        "SVG plot of the last fit: trace, rank, pair, density, forest, elbo, ppc (as `bayesc plot`; `combined`: density and forest of the pooled chains)",
    ),
    (
        ":set",
        "[KEY VALUE]",
        "session default for :fit: an option of `bayesc fit` (seed, method, chains, warmup, samples, diagonal on/off, ...); one of another method is kept for fits with that method, with a note; no argument lists the defaults, an unknown KEY lists the settings",
    ),
    (":unset", "KEY", "remove a session default"),
    (
        ":help",
        "[COMMAND]",
        "this list, or the synopsis of one command",
    ),
    (":quit", "", "leave the REPL (also Ctrl-D)"),
];

/// Short forms of commands: (alias, command without its colon).
pub const ALIASES: &[(&str, &str)] = &[
    ("l", "load"),
    ("r", "reload"),
    ("d", "data"),
    ("f", "fit"),
    ("s", "summary"),
    ("p", "param"),
    ("diag", "diagnostics"),
    ("h", "help"),
    ("?", "help"),
    ("q", "quit"),
    ("exit", "quit"),
];

/// The command (without its colon) that `word` names, directly or through [`ALIASES`].
pub fn command_name(word: &str) -> Option<&'static str> {
    COMMANDS
        .iter()
        .map(|c| &c.0[1..])
        .find(|c| *c == word)
        .or_else(|| ALIASES.iter().find(|a| a.0 == word).map(|a| a.1))
}

/// Whether `line` is a REPL command line: its first non-blank character is `:` and the word
/// right after it is a command or an alias (`:fit …`, `:q`). Such a line never continues an
/// unfinished multi-line entry; a line like `: sigma;` or `:sigma` (the end of a `? :`
/// expression) is not a command line.
pub fn is_command_line(line: &str) -> bool {
    line.trim_start().strip_prefix(':').is_some_and(|rest| {
        let word = rest.split_whitespace().next().unwrap_or("");
        rest.starts_with(word) && command_name(word).is_some()
    })
}

/// The words of a command line: separated by white space, except inside a pair of double or
/// single quotes, which group a path with spaces into one word (the quotes are dropped). An
/// unclosed quote is an error.
pub fn split_words(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => word.get_or_insert_with(String::new).push(c),
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            None if c.is_whitespace() => words.extend(word.take()),
            None => word.get_or_insert_with(String::new).push(c),
        }
    }
    if let Some(q) = quote {
        return Err(format!(
            "error: unclosed quote `{q}` in the command; close it (`{q}…{q}`) to give a word with \
             spaces"
        ));
    }
    words.extend(word);
    Ok(words)
}

/// The error for `:NAME` given more than `max` arguments (its synopsis in [`COMMANDS`]): the
/// words left over and the usage line, then `help` if given. A command never ignores words.
fn too_many_args(name: &str, args: &[&str], max: usize, help: Option<String>) -> Output {
    let synopsis = COMMANDS
        .iter()
        .find(|c| &c.0[1..] == name)
        .map_or("", |c| c.1);
    let takes = match max {
        0 => "takes no arguments".to_string(),
        1 => "takes at most one argument".to_string(),
        n => format!("takes at most {n} arguments"),
    };
    let mut msg = format!(
        "error: `:{name}` {takes}; `{}` is left over\n  usage: {}",
        args[max.min(args.len())..].join(" "),
        format!(":{name} {synopsis}").trim_end()
    );
    if let Some(h) = help {
        let _ = write!(msg, "\n  help: {h}");
    }
    Output::error(msg)
}

/// `:help COMMAND`: the synopsis and description of one command (with or without its colon,
/// or a short form), or an error with a did-you-mean.
fn command_help(word: &str) -> Output {
    let word = word.strip_prefix(':').unwrap_or(word);
    if let Some(name) = command_name(word)
        && let Some((c, a, h)) = COMMANDS.iter().find(|c| &c.0[1..] == name)
    {
        let head = format!("{c} {a}");
        let aliases: Vec<String> = ALIASES
            .iter()
            .filter(|al| al.1 == name)
            .map(|al| format!(":{}", al.0))
            .collect();
        let short = if aliases.is_empty() {
            String::new()
        } else {
            format!("\n  short form: {}", aliases.join(", "))
        };
        return Output::ok(format!("{}\n  {h}{short}", head.trim_end()));
    }
    let mut msg = format!("error: no command `:{word}`");
    if let Some(s) = best_match(word, COMMANDS.iter().map(|c| &c.0[1..])) {
        let _ = write!(msg, "\n  help: did you mean `:{s}`?");
    }
    msg.push_str("\n  (`:help` lists the commands)");
    Output::error(msg)
}

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

/// Whether `input` starts like a block, one or two words and `{` (`paramters {`, `transformed
/// paramters {`), though [`block_rank`] found no block keyword: a misspelled block name.
fn looks_like_block(input: &str) -> bool {
    let Some((head, _)) = input.split_once('{') else {
        return false;
    };
    let words: Vec<&str> = head.split_whitespace().collect();
    (1..=2).contains(&words.len())
        && words.iter().all(|w| {
            w.starts_with(|c: char| c.is_ascii_alphabetic())
                && w.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

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
    /// The model's parameters without a prior (`Checked::unpriored`), so that the advice of a
    /// degenerate variational fit names the same cause as `bayesc fit`.
    pub unpriored: Vec<String>,
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
            // also stops a long `while` loop inside one evaluation of the model
            crate::inference::interrupt::request();
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
    /// The file of the last `:load` that failed (could not be read or does not check), of
    /// another file than the current model's, until a model is installed. The current model
    /// stays loaded; the next `:fit` names the model it fits, and with no current model it
    /// retries this file (and `:reload` does) rather than report "no model".
    failed_load: Option<PathBuf>,
    /// Model text typed since the last other input; consecutive blocks accumulate here.
    typed: String,
    /// Rank of the last block in `typed`.
    typed_rank: Option<usize>,
    /// Why the bound data did not fit the model the last time a typed block installed it (the
    /// rendered error), so that the next blocks of a model typed block by block do not repeat
    /// it; `None` once a model compiles with the data, and after any other input.
    mismatch_shown: Option<String>,
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
            mismatch_shown: None,
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
            self.mismatch_shown = None;
            return self.command(cmd);
        }
        if let Some(rank) = block_rank(line) {
            return self.model_text(line, rank);
        }
        // `paramters { … }`: a misspelled block name gets the parser's did-you-mean, as in
        // `bayesc check`, not an expression error
        if looks_like_block(line)
            && let Err(f) = pipeline::check_source(&mut self.sources, "<repl>", line)
        {
            return Output::error(self.render(f));
        }
        self.typed.clear();
        self.typed_rank = None;
        self.mismatch_shown = None;
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
        let words = match split_words(cmd) {
            Ok(w) => w,
            Err(e) => return Output::error(e),
        };
        let typed = words.first().map_or("", String::as_str);
        let args: Vec<&str> = words.iter().skip(1).map(String::as_str).collect();
        let name = command_name(typed).unwrap_or(typed);
        // words beyond a command's synopsis are an error, never ignored in silence
        let max_args = match name {
            "reload" | "show" | "fits" | "quit" => Some(0),
            "diagnostics" | "elbo" | "help" => Some(1),
            _ => None,
        };
        if let Some(max) = max_args
            && args.len() > max
        {
            return too_many_args(name, &args, max, None);
        }
        match name {
            "load" => match args.as_slice() {
                [file] => self.load(Path::new(file)),
                [] => Output::error("usage: :load FILE"),
                _ => Output::error(format!(
                    "error: `:load` takes one file; got {} words\n  usage: :load FILE\n  help: a \
                     path with spaces goes in quotes: `:load \"{}\"`",
                    args.len(),
                    args.join(" ")
                )),
            },
            "reload" => self.reload(false),
            "data" => self.set_data(&args),
            "show" => self.show(),
            "fit" => self.fit(&args),
            "fits" => self.list_fits(),
            "summary" => self.summary(&args),
            "param" => self.param(&args),
            "compare" => self.compare(&args),
            "save" => self.save(&args),
            "diagnostics" => self.diagnostics(&args),
            "elbo" => self.elbo(&args),
            "plot" => self.plot(&args),
            "set" => self.set(&args),
            "unset" => self.unset(&args),
            "help" => match args.first() {
                None => Output::ok(help_text()),
                Some(cmd) => command_help(cmd),
            },
            "quit" => Output {
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_words_and_quotes() {
        assert_eq!(split_words(" load  a.bayes ").unwrap(), ["load", "a.bayes"]);
        assert_eq!(
            split_words("load \"my dir/m.bayes\"").unwrap(),
            ["load", "my dir/m.bayes"]
        );
        assert_eq!(
            split_words("data 'a b.csv' c.csv \"\"").unwrap(),
            ["data", "a b.csv", "c.csv", ""]
        );
        assert!(
            split_words("load \"m.bayes")
                .unwrap_err()
                .contains("unclosed quote")
        );
    }

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
