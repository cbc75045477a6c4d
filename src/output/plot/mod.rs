//! Plots of a fit as SVG, drawn with `plotters` in the layout ArviZ users know: trace, rank,
//! pair, density, forest, ELBO and posterior predictive plots. Called by `bayesc plot` (on
//! Stan CSV draws files, see [`load_draws`]) and by the REPL's `:plot` (on a stored fit).
//!
//! The plots are drawn as SVG; a `.png` output is that SVG rendered with `resvg` and an
//! embedded font ([`png`]), so it needs no system fonts.

mod kinds;
mod panels;
pub mod png;
pub mod stats;

use std::path::{Path, PathBuf};

use crate::data::DataSource;
use crate::inference::Draws;
use crate::output::stan_csv;
use crate::semantics::names::best_match;

/// The seven kinds of plot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlotKind {
    /// Per quantity: kernel densities per chain (left) and draws against iteration, one line
    /// per chain (right), as ArviZ's `plot_trace`.
    Trace,
    /// Per quantity: histograms of the pooled ranks, one row per chain, with the uniform
    /// expectation dashed (Vehtari et al. 2021, §4.1).
    Rank,
    /// Scatter matrix of pairs of quantities (lower triangle) with densities on the diagonal;
    /// divergent transitions highlighted.
    Pair,
    /// Per quantity: kernel densities per chain (or pooled) with the 94% HDI.
    Density,
    /// One row per quantity: median, 50% and 90% central intervals per chain (or pooled), and
    /// R-hat.
    Forest,
    /// The ELBO trace of a variational fit, raw and smoothed, against iteration.
    Elbo,
    /// Posterior predictive check: densities of replicated data sets against the observed data.
    Ppc,
}

impl PlotKind {
    /// Every kind with its name on the command line.
    pub const ALL: [(&'static str, PlotKind); 7] = [
        ("trace", PlotKind::Trace),
        ("rank", PlotKind::Rank),
        ("pair", PlotKind::Pair),
        ("density", PlotKind::Density),
        ("forest", PlotKind::Forest),
        ("elbo", PlotKind::Elbo),
        ("ppc", PlotKind::Ppc),
    ];

    /// The kind called `name`. Errors: an unknown name, with the closest kind suggested.
    pub fn parse(name: &str) -> Result<PlotKind, PlotError> {
        if let Some((_, k)) = Self::ALL.iter().find(|(n, _)| *n == name) {
            return Ok(*k);
        }
        let mut msg = format!("unknown plot kind `{name}`");
        if let Some(s) = best_match(name, Self::ALL.iter().map(|(n, _)| *n)) {
            msg.push_str(&format!("; did you mean `{s}`?"));
        }
        let all: Vec<&str> = Self::ALL.iter().map(|(n, _)| *n).collect();
        msg.push_str(&format!(" (kinds: {})", all.join(", ")));
        Err(PlotError::new(msg))
    }

    /// The kind's name on the command line.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, k)| *k == self)
            .map_or("?", |(n, _)| n)
    }

    /// How many quantities are drawn when none are named: 4 for the pair plot, 6 otherwise.
    pub fn default_count(self) -> usize {
        match self {
            PlotKind::Pair => 4,
            _ => 6,
        }
    }
}

/// A plot that cannot be drawn, with the reason and how to fix it.
#[derive(Clone, Debug, PartialEq)]
pub struct PlotError {
    /// The message, without the `error:` prefix.
    pub message: String,
}

impl PlotError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        PlotError {
            message: message.into(),
        }
    }
}

impl std::fmt::Display for PlotError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for PlotError {}

/// What a plot is drawn from; which parts a kind needs is checked by [`render_svg`].
#[derive(Clone, Copy, Debug, Default)]
pub struct PlotInput<'a> {
    /// Post-warmup draws, one block per chain (trace, rank, pair, density, forest, ppc).
    pub draws: Option<&'a Draws>,
    /// Per chain, per draw: whether the transition diverged (`divergent__`), for the pair plot.
    pub divergent: Option<&'a [Vec<bool>]>,
    /// (iteration, ELBO, smoothed ELBO) rows of a variational fit (elbo); the smoothed value
    /// NaN where it is not defined.
    pub elbo: Option<&'a [(usize, f64, f64)]>,
    /// The observed data values of the variable the replicates copy (ppc).
    pub observed: Option<&'a [f64]>,
}

/// What to draw.
#[derive(Clone, Debug, PartialEq)]
pub struct PlotOptions {
    /// The kind of plot.
    pub kind: PlotKind,
    /// Quantities to draw, as named in the draws (`beta[2]`) or by variable (`beta`, all its
    /// elements); empty for the first [`PlotKind::default_count`] columns.
    pub params: Vec<String>,
    /// Pool the chains (density, forest) instead of one series per chain.
    pub combined: bool,
    /// ppc: the name of the observed variable (for labels), e.g. `y`.
    pub var: String,
    /// ppc: the replicated quantity in the draws, e.g. `y_rep` (columns `y_rep[1]`, …).
    pub rep: String,
    /// A title drawn above the plot, e.g. the files' names.
    pub title: Option<String>,
    /// elbo: the trace is a minibatch fit's (batch estimates per iteration, the smoothed
    /// full-data ELBO at the exit rule's checks; [`ElboTrace::minibatch`]), and the legend
    /// says so.
    pub minibatch_elbo: bool,
}

impl PlotOptions {
    /// Options for `kind` with the defaults: first quantities, chains separate, `y`/`y_rep`.
    pub fn new(kind: PlotKind) -> Self {
        PlotOptions {
            kind,
            params: Vec::new(),
            combined: false,
            var: "y".into(),
            rep: "y_rep".into(),
            title: None,
            minibatch_elbo: false,
        }
    }
}

/// Draws the plot and returns the SVG document.
///
/// Errors: a kind's input is missing (no draws; elbo without a trace; ppc without replicates in
/// the draws or without the observed values, or with lengths that differ), an unknown quantity
/// (with the closest name), a quantity without finite draws, or a drawing failure.
pub fn render_svg(input: &PlotInput<'_>, options: &PlotOptions) -> Result<String, PlotError> {
    kinds::render(input, options)
}

/// Splits `a,b,Sigma[1,2]` at the commas outside brackets; empty items are dropped.
pub fn split_params(list: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut cur = String::new();
    for ch in list.chars() {
        match ch {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth <= 0 => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(ch);
    }
    out.push(cur);
    out.into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The column indices of `requested` in `names` (a variable name selects all its elements,
/// `beta` → `beta[1]`, `beta[2]`, …), or the first `default_count` columns when `requested` is
/// empty. Errors: a name that matches no column, with the closest column or variable suggested.
pub fn select_columns(
    names: &[String],
    requested: &[String],
    default_count: usize,
) -> Result<Vec<usize>, PlotError> {
    if names.is_empty() {
        return Err(PlotError::new("the draws hold no quantities"));
    }
    if requested.is_empty() {
        return Ok((0..names.len().min(default_count)).collect());
    }
    let mut out = Vec::new();
    for r in requested {
        let r = r.replace(' ', "");
        let hits: Vec<usize> = names
            .iter()
            .enumerate()
            .filter(|(_, n)| {
                n.replace(' ', "") == r
                    || n.strip_prefix(r.as_str())
                        .is_some_and(|t| t.starts_with('['))
            })
            .map(|(i, _)| i)
            .collect();
        if hits.is_empty() {
            let mut candidates: Vec<&str> = names.iter().map(String::as_str).collect();
            candidates.extend(names.iter().map(|n| n.split('[').next().unwrap_or(n)));
            let mut msg = format!("no quantity `{r}` in the draws");
            match best_match(&r, candidates) {
                Some(s) => msg.push_str(&format!("; did you mean `{s}`?")),
                None => {
                    let first: Vec<&str> = names.iter().take(8).map(String::as_str).collect();
                    let more = if names.len() > 8 { ", …" } else { "" };
                    msg.push_str(&format!(" (they are {}{more})", first.join(", ")));
                }
            }
            return Err(PlotError::new(msg));
        }
        for h in hits {
            if !out.contains(&h) {
                out.push(h);
            }
        }
    }
    Ok(out)
}

/// Draws read from Stan CSV files for plotting.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LoadedDraws {
    /// Post-warmup draws, one chain per file.
    pub draws: Draws,
    /// Per chain, per post-warmup draw, whether `divergent__` is 1; `None` when a file lacks the
    /// column (Metropolis, variational output).
    pub divergent: Option<Vec<Vec<bool>>>,
    /// Warmup draws dropped per file (files written with `save_warmup`).
    pub warmup_dropped: usize,
    /// Whether `draws` are warmup draws: the files hold no post-warmup draws (a
    /// `--save-warmup` run stopped in warmup), so their warmup draws are drawn instead, cut to
    /// the shortest chain; the caller must say so.
    pub warmup_only: bool,
}

/// Reads Stan CSV draws files (one per chain of one fit, as `bayesc fit --output` and CmdStan
/// write them) and drops the warmup rows of files written with `save_warmup = 1` (the first
/// ⌈num_warmup / thin⌉ rows).
///
/// Errors: no files; a file that cannot be read or is not Stan CSV (named, with the reader's
/// reason); files whose columns or lengths differ; files without draws.
pub fn load_draws(paths: &[PathBuf]) -> Result<LoadedDraws, PlotError> {
    if paths.is_empty() {
        return Err(PlotError::new(
            "no draws files given; pass the chains' Stan CSV files (e.g. from `bayesc fit --method nuts --output fit.csv`)",
        ));
    }
    let mut files = Vec::new();
    for p in paths {
        let f = stan_csv::read_stan_csv(p).map_err(|e| PlotError::new(e.to_string()))?;
        // [X] session 21, tester finding: a trace plot of an optimize file was drawn (one
        // point per "chain") as if it were a sample
        if f.is_optimize() {
            return Err(PlotError::new(format!(
                "`{}` holds a point estimate (the output of `--method optimize`), not draws: a \
                 mode is a single point, with no trace, ranks or distribution to plot; `bayesc \
                 summary {}` prints it, and `--method laplace` or `--method nuts` gives draws \
                 to plot",
                p.display(),
                p.display()
            )));
        }
        files.push(f);
    }
    // a `--save-warmup` run stopped in warmup: its warmup draws, marked as such ([X] session
    // 21, tester finding: such files gave "holds no draws after warmup", though a trace of
    // the warmup is what shows why the run was slow)
    if files.iter().all(|f| f.n_draws == 0) && files.iter().all(|f| f.warmup_draws > 0) {
        if let Some(i) = (1..files.len()).find(|&i| files[i].names != files[0].names) {
            return Err(PlotError::new(format!(
                "`{}` has other columns than `{}`; give the chains of one fit",
                paths[i].display(),
                paths[0].display()
            )));
        }
        let n = files.iter().map(|f| f.warmup_draws).min().unwrap_or(0);
        let k = files[0].names.len();
        let draws = Draws {
            names: files[0].names.clone(),
            chains: files
                .iter()
                .map(|f| f.warmup_values[..n * k].to_vec())
                .collect(),
        };
        return Ok(LoadedDraws {
            draws,
            divergent: None,
            warmup_dropped: 0,
            warmup_only: true,
        });
    }
    // the reader drops the warmup rows of `save_warmup` files
    let warmup = files.iter().map(|f| f.warmup_draws).max().unwrap_or(0);
    let refs: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
    let draws = stan_csv::draws_from_files(&files, &refs)
        .map_err(|e| PlotError::new(format!("{e}; give the chains of one fit")))?;
    for (i, f) in files.iter().enumerate() {
        if f.n_draws == 0 {
            return Err(PlotError::new(format!(
                "`{}` holds no draws after warmup",
                paths[i].display()
            )));
        }
        if f.n_draws != files[0].n_draws {
            return Err(PlotError::new(format!(
                "`{}` has {} draws but `{}` has {}; give the chains of one fit (equal lengths)",
                paths[i].display(),
                f.n_draws,
                paths[0].display(),
                files[0].n_draws
            )));
        }
    }
    let divergent = files
        .iter()
        .map(|f| {
            f.sampler_column("divergent__")
                .map(|c| c.iter().map(|&v| v != 0.0).collect())
        })
        .collect();
    Ok(LoadedDraws {
        draws,
        divergent,
        warmup_dropped: warmup,
        warmup_only: false,
    })
}

/// An ELBO trace read back from a file ([`read_elbo_trace`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ElboTrace {
    /// (iteration, ELBO, smoothed ELBO) rows, NaN where a value is not defined. Full-batch
    /// fits: the per-iteration estimate and its smoothed value. Minibatch fits: the batch
    /// estimate and, at the exit rule's checks only, the smoothed full-data ELBO.
    pub rows: Vec<(usize, f64, f64)>,
    /// Whether the file is a minibatch fit's (header
    /// [`crate::output::fit_files::MINIBATCH_ELBO_HEADER`]); the plot then labels its series as such.
    pub minibatch: bool,
}

/// The rows of a minibatch fit's ELBO plot ([`ElboTrace::rows`] of a minibatch file): each
/// iteration of `trace` (iteration, batch estimate, ignored) with the smoothed full-data ELBO
/// of the exit rule's check at that iteration (`checks`), NaN at the other iterations.
pub fn minibatch_elbo_rows(
    trace: &[(usize, f64, f64)],
    checks: &[crate::inference::minibatch::EpochCheck],
) -> Vec<(usize, f64, f64)> {
    let mut next = checks.iter().peekable();
    trace
        .iter()
        .map(|&(i, e, _)| {
            let sm = next
                .next_if(|c| c.iteration == i)
                .map_or(f64::NAN, |c| c.smoothed);
            (i, e, sm)
        })
        .collect()
}

/// Reads an ELBO trace written by `bayesc fit --elbo-output`: header `iteration,elbo,
/// smoothed_elbo` (full batch), or the minibatch header `iteration,batch_elbo,epoch,
/// full_data_elbo,smoothed_full_data_elbo` (docs/variational.md); an empty cell is NaN.
///
/// Errors: unreadable file, another header, or a bad number (naming the file and line).
pub fn read_elbo_trace(path: &Path) -> Result<ElboTrace, PlotError> {
    const FULL: &str = "iteration,elbo,smoothed_elbo";
    let shown = path.display();
    let text = std::fs::read_to_string(path)
        .map_err(|e| PlotError::new(format!("cannot read the ELBO trace `{shown}`: {e}")))?;
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let header = lines
        .next()
        .map(|(_, l)| l.replace(' ', ""))
        .unwrap_or_default();
    let minibatch = header == crate::output::fit_files::MINIBATCH_ELBO_HEADER;
    if header != FULL && !minibatch {
        return Err(PlotError::new(format!(
            "`{shown}` is not an ELBO trace: its header is `{header}`, not `{FULL}` (or a \
             minibatch fit's `{}`; write one with `bayesc fit --method qbvi --elbo-output FILE`)",
            crate::output::fit_files::MINIBATCH_ELBO_HEADER
        )));
    }
    let expected = if minibatch {
        crate::output::fit_files::MINIBATCH_ELBO_HEADER
    } else {
        FULL
    };
    // the columns read: iteration, per-iteration ELBO, smoothed ELBO
    let (width, smoothed_col) = if minibatch { (5, 4) } else { (3, 2) };
    let mut rows = Vec::new();
    for (i, line) in lines {
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        let bad = || {
            PlotError::new(format!(
                "`{shown}` line {}: expected `{expected}` numbers, found `{line}`",
                i + 1
            ))
        };
        if f.len() != width {
            return Err(bad());
        }
        let number = |cell: &str| -> Result<f64, PlotError> {
            if cell.is_empty() {
                Ok(f64::NAN)
            } else {
                cell.parse().map_err(|_| bad())
            }
        };
        let it: usize = f[0].parse().map_err(|_| bad())?;
        let e: f64 = f[1].parse().map_err(|_| bad())?;
        rows.push((it, e, number(f[smoothed_col])?));
    }
    if rows.is_empty() {
        return Err(PlotError::new(format!("`{shown}` holds no ELBO values")));
    }
    Ok(ElboTrace { rows, minibatch })
}

/// The values of data variable `var` in `sources` (a CSV column, or a JSON entry flattened
/// row-major), for the ppc plot. Errors: the variable is absent (with the closest name), or a
/// cell is not a number (naming file and row).
pub fn observed_values(sources: &[DataSource], var: &str) -> Result<Vec<f64>, PlotError> {
    let mut names: Vec<String> = Vec::new();
    for s in sources {
        match s {
            DataSource::Csv(c) => {
                if let Some(j) = c.column_index(var) {
                    let col = &c.columns[j];
                    return (0..col.values.len())
                        .map(|r| match col.cell(r) {
                            Some(crate::data::csv::Cell::Number(v)) => Ok(v),
                            Some(
                                crate::data::csv::Cell::Missing(t)
                                | crate::data::csv::Cell::Text(t)
                                | crate::data::csv::Cell::Overflow(t),
                            ) => Err(PlotError::new(format!(
                                "{}, column `{var}`: `{t}` is not a number",
                                c.row_location(r)
                            ))),
                            None => Err(PlotError::new(format!(
                                "{}, column `{var}`: the cell is not a number",
                                c.row_location(r)
                            ))),
                        })
                        .collect();
                }
                names.extend(c.header.iter().cloned());
            }
            DataSource::Json(j) => {
                if let Some(entry) = j.entries.get(var) {
                    return entry
                        .as_ref()
                        .map(|a| a.values.as_ref().clone())
                        .map_err(|e| PlotError::new(e.to_string()));
                }
                names.extend(j.entries.keys().cloned());
            }
        }
    }
    let files: Vec<&str> = sources.iter().map(DataSource::name).collect();
    let mut msg = format!("no variable `{var}` in the data ({})", files.join(", "));
    if let Some(s) = best_match(var, names.iter().map(String::as_str)) {
        msg.push_str(&format!("; did you mean `{s}`?"));
    }
    Err(PlotError::new(msg))
}

/// Writes `svg` to `path` atomically, rendered to PNG when `path` ends in `.png`
/// ([`png::write_png`]). Errors: another extension, or the write failing.
pub fn write_svg(path: &Path, svg: &str) -> Result<(), PlotError> {
    check_output_path(path)?;
    if is_png(path) {
        return png::write_png(path, svg);
    }
    crate::output::write_atomic(path, |w| w.write_all(svg.as_bytes()))
        .map_err(|e| PlotError::new(format!("cannot write `{}`: {e}", path.display())))
}

/// Whether `path` ends in `.png` (any case): [`write_svg`] then renders the SVG to PNG.
fn is_png(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("png"))
}

/// Checks that `path` names an SVG or PNG file (`.svg` or `.png`, any case). Errors: another
/// extension.
pub fn check_output_path(path: &Path) -> Result<(), PlotError> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_lowercase);
    match ext.as_deref() {
        Some("svg" | "png") => Ok(()),
        _ => Err(PlotError::new(format!(
            "`{}`: the output file must end in `.svg` or `.png`",
            path.display()
        ))),
    }
}
