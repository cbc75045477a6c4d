//! Stan CSV files: the layout CmdStan writes, so that ArviZ, cmdstanpy and `posterior` read
//! our draws, and a reader so `bayesc summary FILES…` can recompute summaries.
//!
//! Layout (CmdStan Guide, appendix "Stan CSV File Format"), one file per chain:
//!
//! ```text
//! # model = eight_schools            ← configuration comments ([`cmdstan_config_lines`])
//! # method = sample
//! #   sample
//! #     num_samples = 1000
//! # ...
//! lp__,accept_stat__,stepsize__,treedepth__,n_leapfrog__,divergent__,energy__,mu,theta.1,…
//! # Adaptation terminated                ← adaptation comments ([`nuts_adaptation_lines`])
//! # Step size = 0.4
//! # Diagonal elements of inverse mass matrix:
//! # 1.2, 0.8, …
//! -4.1,0.93,0.4,3,7,0,5.2,1.03,…        ← one row per draw
//! #
//! #  Elapsed Time: 0.05 seconds (Warm-up) ← footer comments ([`timing_lines`])
//! # …
//! ```
//!
//! Sampler columns (names ending in `__`) come first and are supplied by the caller, so each
//! method writes its own: NUTS the seven above, static HMC/MH a subset, variational fits
//! `lp__,log_p__,log_g__`. Parameter names are converted from `beta[1]` / `Sigma[2,1]` to
//! Stan's `beta.1` / `Sigma.2.1` ([`to_stan_name`]) and back when reading ([`from_stan_name`]).
//!
//! Numbers are written with full round-trip precision ([`super::format_f64_roundtrip`]), not
//! Stan's default 6 significant digits, so a write/read cycle returns identical values.
//! The first comments are `stan_version_major/minor/patch` = [`CMDSTAN_FORMAT_VERSION`]: the
//! version of CmdStan whose CSV layout these files follow (cmdstanpy's `draws_xr` and ArviZ
//! read them), not a claim that Stan wrote the file; `bayesc_version` after them names the
//! writer.

use std::fs;
use std::io::{self, Write};
use std::path::Path;

use super::{format_f64_roundtrip, format_f64_sig, write_atomic};
use crate::inference::Draws;

/// What to write into one Stan CSV file (one chain).
#[derive(Clone, Copy, Debug)]
pub struct StanCsvLayout<'a> {
    /// Configuration comment lines written before the header, without the leading `#`
    /// (each is written as `# ` + line); see [`cmdstan_config_lines`].
    pub config_lines: &'a [String],
    /// Sampler column names (e.g. `lp__`, …, `energy__`), written before the parameters.
    pub sampler_cols: &'a [&'a str],
    /// Sampler values, `n_draws × sampler_cols.len()`, row-major.
    pub sampler_values: &'a [f64],
    /// The draws; only chain [`StanCsvLayout::chain`] is written.
    pub draws: &'a Draws,
    /// 0-based index of the chain of `draws` to write.
    pub chain: usize,
    /// Comment lines between the header and the first draw (adaptation results), without `#`.
    pub adaptation_lines: &'a [String],
    /// Comment lines after the last draw (timing), without `#`; see [`timing_lines`].
    pub footer_lines: &'a [String],
    /// How many of the first rows are warmup draws (`save_warmup`): the adaptation lines are
    /// written after them, as CmdStan does; 0 otherwise.
    pub warmup_rows: usize,
    /// Significant digits of the numbers (`--sig-figs`, [`super::format_f64_sig`]); `None`
    /// for full round-trip precision.
    pub sig_figs: Option<usize>,
}

/// Writes one chain in Stan's CSV layout, atomically (module docs; [`super::write_atomic`]).
///
/// Errors: `InvalidInput` (nothing written) if `chain` is out of range or `sampler_values` does
/// not hold `n_draws × sampler_cols.len()` values; otherwise any I/O error of the write.
pub fn write_stan_csv(path: &Path, layout: &StanCsvLayout<'_>) -> io::Result<()> {
    let draws = layout.draws;
    let invalid = |msg: String| io::Error::new(io::ErrorKind::InvalidInput, msg);
    let chain = draws.chains.get(layout.chain).ok_or_else(|| {
        invalid(format!(
            "chain {} requested but the draws have {} chains",
            layout.chain + 1,
            draws.chains.len()
        ))
    })?;
    let k = draws.names.len();
    let ks = layout.sampler_cols.len();
    let n = match (k, ks) {
        (0, 0) => return Err(invalid("no columns to write".to_string())),
        (0, _) => layout.sampler_values.len() / ks,
        _ => chain.len() / k,
    };
    if layout.sampler_values.len() != n * ks || chain.len() != n * k {
        return Err(invalid(format!(
            "{} sampler values and {} parameter values do not fill {} draws of {} sampler and {} parameter columns",
            layout.sampler_values.len(),
            chain.len(),
            n,
            ks,
            k
        )));
    }
    write_atomic(path, |w| {
        for line in layout.config_lines {
            comment(w, line)?;
        }
        let header: Vec<String> = layout
            .sampler_cols
            .iter()
            .map(|s| s.to_string())
            .chain(draws.names.iter().map(|s| to_stan_name(s)))
            .collect();
        writeln!(w, "{}", header.join(","))?;
        let warmup = layout.warmup_rows.min(n);
        for i in 0..n {
            if i == warmup {
                for line in layout.adaptation_lines {
                    comment(w, line)?;
                }
            }
            let row = layout.sampler_values[i * ks..(i + 1) * ks]
                .iter()
                .chain(&chain[i * k..(i + 1) * k])
                .map(|v| format_f64_sig(*v, layout.sig_figs))
                .collect::<Vec<_>>()
                .join(",");
            writeln!(w, "{row}")?;
        }
        if warmup == n {
            for line in layout.adaptation_lines {
                comment(w, line)?;
            }
        }
        for line in layout.footer_lines {
            comment(w, line)?;
        }
        Ok(())
    })
}

/// Writes `# line` (or `#` for an empty line): a comment line of Stan's CSV layout.
pub(super) fn comment(w: &mut dyn Write, line: &str) -> io::Result<()> {
    if line.is_empty() {
        writeln!(w, "#")
    } else {
        writeln!(w, "# {line}")
    }
}

/// The CmdStan release whose Stan CSV layout bayesc writes (CmdStan Guide 2.36, "Stan CSV File
/// Format"), reported as `stan_version_major/minor/patch` in the configuration comments.
pub const CMDSTAN_FORMAT_VERSION: (u32, u32, u32) = (2, 36, 0);

/// Configuration comment lines in CmdStan's nested `key = value` structure:
///
/// ```text
/// stan_version_major = 2          (CMDSTAN_FORMAT_VERSION: the layout followed)
/// stan_version_minor = 36
/// stan_version_patch = 0
/// bayesc_version = <crate version>
/// model = <model>
/// method = <method>
///   <method>
///     <key> = <value>        (one per setting, in order)
/// id = <chain_id>
/// random
///   seed = <seed>
/// ```
///
/// `method` is CmdStan's word (`sample`, `variational`); put the algorithm in the settings
/// (e.g. `("algorithm", "nuts")`).
pub fn cmdstan_config_lines(
    model: &str,
    method: &str,
    settings: &[(&str, String)],
    seed: u64,
    chain_id: usize,
) -> Vec<String> {
    let (major, minor, patch) = CMDSTAN_FORMAT_VERSION;
    let mut out = vec![
        format!("stan_version_major = {major}"),
        format!("stan_version_minor = {minor}"),
        format!("stan_version_patch = {patch}"),
        format!("bayesc_version = {}", env!("CARGO_PKG_VERSION")),
        format!("model = {model}"),
        format!("method = {method}"),
        format!("  {method}"),
    ];
    out.extend(settings.iter().map(|(k, v)| format!("    {k} = {v}")));
    out.push(format!("id = {chain_id}"));
    out.push("random".to_string());
    out.push(format!("  seed = {seed}"));
    out
}

/// Adds CmdStan's top-level `init = <value>` line (e.g. the file of `--init FILE`) to
/// configuration lines made by [`cmdstan_config_lines`], where CmdStan writes it: after the
/// method's settings and `id`, before `random`.
pub fn add_init_line(config: &mut Vec<String>, init: &str) {
    let at = config
        .iter()
        .position(|l| l == "random")
        .unwrap_or(config.len());
    config.insert(at, format!("init = {init}"));
}

/// Adaptation comment lines as CmdStan writes them after the header for NUTS/HMC with a
/// diagonal metric: `Adaptation terminated`, `Step size = …`, `Diagonal elements of inverse mass
/// matrix:` and the diagonal, comma-separated (full precision).
pub fn nuts_adaptation_lines(step_size: f64, inv_metric_diag: &[f64]) -> Vec<String> {
    vec![
        "Adaptation terminated".to_string(),
        format!("Step size = {}", format_f64_roundtrip(step_size)),
        "Diagonal elements of inverse mass matrix:".to_string(),
        inv_metric_diag
            .iter()
            .map(|v| format_f64_roundtrip(*v))
            .collect::<Vec<_>>()
            .join(", "),
    ]
}

/// Timing footer lines as CmdStan writes them (seconds, 3 decimals):
///
/// ```text
/// (empty)
///  Elapsed Time: 1.234 seconds (Warm-up)
///                0.567 seconds (Sampling)
///                1.801 seconds (Total)
/// (empty)
/// ```
pub fn timing_lines(warmup_secs: f64, sampling_secs: f64) -> Vec<String> {
    vec![
        String::new(),
        format!(" Elapsed Time: {warmup_secs:.3} seconds (Warm-up)"),
        format!("               {sampling_secs:.3} seconds (Sampling)"),
        format!(
            "               {:.3} seconds (Total)",
            warmup_secs + sampling_secs
        ),
        String::new(),
    ]
}

/// Stan's column name for a user-facing name: `beta[1]` → `beta.1`, `Sigma[2,1]` →
/// `Sigma.2.1`; names without brackets are unchanged.
pub fn to_stan_name(name: &str) -> String {
    match name.find('[') {
        Some(open) if name.ends_with(']') => {
            let idx = &name[open + 1..name.len() - 1];
            let mut out = name[..open].to_string();
            for part in idx.split(',') {
                out.push('.');
                out.push_str(part.trim());
            }
            out
        }
        _ => name.to_string(),
    }
}

/// The user-facing name for a Stan column name: `beta.1` → `beta[1]`, `Sigma.2.1` →
/// `Sigma[2,1]`. Only a trailing run of all-digit dot-separated parts is converted, so names
/// like `a.b` stay as they are.
pub fn from_stan_name(name: &str) -> String {
    let parts: Vec<&str> = name.split('.').collect();
    let is_index = |p: &&&str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    let n_idx = parts.iter().rev().take_while(is_index).count();
    if n_idx == 0 || n_idx == parts.len() {
        return name.to_string();
    }
    let base = parts[..parts.len() - n_idx].join(".");
    format!("{base}[{}]", parts[parts.len() - n_idx..].join(","))
}

/// Why a Stan CSV file could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StanCsvError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The underlying error.
        source: io::Error,
    },
    /// No header row (every line is a comment or empty).
    #[error("{path}: no header row (is this a Stan CSV file?)")]
    NoHeader {
        /// The file.
        path: String,
    },
    /// A row has the wrong number of fields.
    #[error("{path}, line {line}: {got} values but the header has {expected} columns")]
    RowLength {
        /// The file.
        path: String,
        /// 1-based line number.
        line: usize,
        /// Columns in the header.
        expected: usize,
        /// Fields in the row.
        got: usize,
    },
    /// A field is not a number.
    #[error("{path}, line {line}, column `{column}`: `{text}` is not a number")]
    BadNumber {
        /// The file.
        path: String,
        /// 1-based line number.
        line: usize,
        /// Column name.
        column: String,
        /// The offending text.
        text: String,
    },
    /// The header has no sampler column (a name ending in `__`, such as `lp__`): the file is
    /// not draws in Stan's CSV layout (e.g. a data CSV).
    #[error(
        "{path}: no sampler column such as `lp__` or `log_p__` in the header (first columns: {first}); \
         this is not a draws file in Stan's CSV layout. Give the files that `bayesc fit --output` \
         or CmdStan write"
    )]
    NotDraws {
        /// The file.
        path: String,
        /// The first few column names, for the message.
        first: String,
    },
    /// Files to be combined as chains have different columns.
    #[error("{path}: its columns differ from those of the first file")]
    ColumnMismatch {
        /// The file.
        path: String,
    },
}

/// The content of one Stan CSV file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StanCsv {
    /// Comment lines before the header, without the leading `#` and one following space.
    pub config_lines: Vec<String>,
    /// Comment lines between the header and the first draw (adaptation).
    pub adaptation_lines: Vec<String>,
    /// Comment lines after the first draw (timing).
    pub footer_lines: Vec<String>,
    /// Sampler column names (those ending in `__`), as in the file.
    pub sampler_names: Vec<String>,
    /// Sampler values, `n_draws × sampler_names.len()`, row-major.
    pub sampler_values: Vec<f64>,
    /// Parameter names converted to the user-facing form (`beta[1]`).
    pub names: Vec<String>,
    /// Parameter values, `n_draws × names.len()`, row-major.
    pub values: Vec<f64>,
    /// Number of draws (data rows), without the warmup rows of a `save_warmup` file.
    pub n_draws: usize,
    /// Warmup rows dropped ([`read_stan_csv`]: files whose configuration says
    /// `save_warmup = true` or `1` start with ⌈num_warmup / thin⌉ of them).
    pub warmup_draws: usize,
    /// The parameter values of those warmup rows, `warmup_draws × names.len()`, row-major
    /// (`bayesc summary` of files with warmup draws only describes them, marked as warmup).
    pub warmup_values: Vec<f64>,
    /// Whether the file ended inside a draw row (no final newline): what a `kill -9` can leave,
    /// since Linux may cut a write short at a page boundary when a fatal signal is pending.
    /// That row is not read, since even one with every field may have lost digits of its last
    /// number (Stan's and bayesc's writers end every row with a newline).
    pub partial_last_row: bool,
}

impl StanCsv {
    /// Whether the configuration comments say `method = optimize` (CmdStan's and bayesc's
    /// optimize output: one row, the optimum, or with `save_iterations = true` one row per
    /// iteration, the optimum last): a point estimate, not draws.
    pub fn is_optimize(&self) -> bool {
        self.config_lines
            .iter()
            .any(|l| l.trim() == "method = optimize")
    }

    /// Whether the configuration comments say `method = variational` (CmdStan's and bayesc's
    /// variational output, whose first data row is the mean of the approximation; the reader
    /// drops that row).
    pub fn is_variational(&self) -> bool {
        self.config_lines
            .iter()
            .any(|l| l.trim() == "method = variational")
    }

    /// The `Step size = …` of the adaptation comments, if present.
    pub fn step_size(&self) -> Option<f64> {
        self.adaptation_lines
            .iter()
            .find_map(|l| l.trim().strip_prefix("Step size = "))
            .and_then(|v| v.trim().parse().ok())
    }

    /// The values of sampler column `name` (e.g. `energy__`), one per draw.
    pub fn sampler_column(&self, name: &str) -> Option<Vec<f64>> {
        let j = self.sampler_names.iter().position(|n| n == name)?;
        let k = self.sampler_names.len();
        Some(
            self.sampler_values
                .iter()
                .skip(j)
                .step_by(k)
                .copied()
                .collect(),
        )
    }
}

fn strip_comment(line: &str) -> String {
    let rest = line.trim_end().strip_prefix('#').unwrap_or(line);
    rest.strip_prefix(' ').unwrap_or(rest).to_string()
}

/// Reads a Stan CSV file (ours or CmdStan's): comments, header, sampler columns (names ending
/// in `__`) and parameter columns, with names converted back to `beta[1]` form. Values may be
/// `NaN`, `nan`, `inf`, `+inf`, `-inf`. In variational output ([`StanCsv::is_variational`]) the
/// first row, the mean of the approximation, is dropped, so `n_draws` counts draws only; so
/// are the warmup rows of a file written with `save_warmup` ([`StanCsv::warmup_draws`]), whose
/// adaptation comments (after those rows) are still read as `adaptation_lines`.
///
/// A last draw row without its newline (a writer killed mid-row) is skipped and recorded in
/// [`StanCsv::partial_last_row`].
///
/// Errors: [`StanCsvError`] for unreadable files, a missing header, a header without sampler
/// columns ([`StanCsvError::NotDraws`]), ragged rows or non-numbers.
pub fn read_stan_csv(path: &Path) -> Result<StanCsv, StanCsvError> {
    let p = path.display().to_string();
    let text = fs::read_to_string(path).map_err(|source| StanCsvError::Io {
        path: p.clone(),
        source,
    })?;
    let mut out = StanCsv::default();
    let mut header: Option<Vec<String>> = None;
    let mut is_sampler = Vec::new();
    // A last line without its newline is a row cut by a killed writer (see `partial_last_row`).
    let n_lines = text.lines().count();
    let cut = !text.is_empty() && !text.ends_with('\n');
    for (lineno, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        if cut && lineno + 1 == n_lines && header.is_some() && !line.starts_with('#') {
            // even a row with every field may have lost digits of its last number
            out.partial_last_row = true;
            continue;
        }
        if line.starts_with('#') {
            let c = strip_comment(line);
            match (&header, out.n_draws) {
                (None, _) => out.config_lines.push(c),
                (Some(_), 0) => out.adaptation_lines.push(c),
                _ => out.footer_lines.push(c),
            }
            continue;
        }
        let Some(cols) = &header else {
            let cols: Vec<String> = line.split(',').map(|s| s.trim().to_string()).collect();
            is_sampler = cols.iter().map(|c| c.ends_with("__")).collect();
            for (c, s) in cols.iter().zip(&is_sampler) {
                if *s {
                    out.sampler_names.push(c.clone());
                } else {
                    out.names.push(from_stan_name(c));
                }
            }
            header = Some(cols);
            continue;
        };
        if !out.footer_lines.is_empty() {
            // comments between rows: the adaptation block after saved warmup rows
            out.adaptation_lines.append(&mut out.footer_lines);
        }
        let fields: Vec<&str> = line.split(',').collect();
        if fields.len() != cols.len() {
            return Err(StanCsvError::RowLength {
                path: p,
                line: lineno + 1,
                expected: cols.len(),
                got: fields.len(),
            });
        }
        for ((f, c), s) in fields.iter().zip(cols).zip(&is_sampler) {
            let t = f.trim();
            let v: f64 =
                t.strip_prefix('+')
                    .unwrap_or(t)
                    .parse()
                    .map_err(|_| StanCsvError::BadNumber {
                        path: p.clone(),
                        line: lineno + 1,
                        column: c.clone(),
                        text: t.to_string(),
                    })?;
            if *s {
                out.sampler_values.push(v);
            } else {
                out.values.push(v);
            }
        }
        out.n_draws += 1;
    }
    let Some(cols) = header else {
        return Err(StanCsvError::NoHeader { path: p });
    };
    if out.sampler_names.is_empty() {
        let mut first: Vec<String> = cols.iter().take(4).map(|c| format!("`{c}`")).collect();
        if cols.len() > 4 {
            first.push("…".into());
        }
        return Err(StanCsvError::NotDraws {
            path: p,
            first: first.join(", "),
        });
    }
    // CmdStan's variational output starts with a row at the mean of the approximation: not a
    // draw.
    if out.is_variational() && out.n_draws > 0 {
        out.sampler_values.drain(..out.sampler_names.len());
        out.values.drain(..out.names.len());
        out.n_draws -= 1;
    }
    // MCMC files with saved warmup: those rows come first and are not posterior draws
    let setting = |key: &str| {
        out.config_lines.iter().find_map(|l| {
            let rest = l.trim().strip_prefix(key)?.trim_start().strip_prefix('=')?;
            rest.split_whitespace().next().map(str::to_string)
        })
    };
    if matches!(setting("save_warmup").as_deref(), Some("1" | "true")) && !out.is_variational() {
        let n_w: usize = setting("num_warmup")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let thin: usize = setting("thin")
            .and_then(|v| v.parse().ok())
            .unwrap_or(1)
            .max(1);
        let drop = n_w.div_ceil(thin).min(out.n_draws);
        out.warmup_values = out.values.drain(..drop * out.names.len()).collect();
        out.sampler_values.drain(..drop * out.sampler_names.len());
        out.n_draws -= drop;
        out.warmup_draws = drop;
    }
    Ok(out)
}

/// Combines files read by [`read_stan_csv`] as the chains of one [`Draws`] (parameter columns
/// only). Errors: [`StanCsvError::ColumnMismatch`] if a file's parameter names differ from the
/// first file's (`paths` name the files in the same order, for the message).
pub fn draws_from_files(files: &[StanCsv], paths: &[&Path]) -> Result<Draws, StanCsvError> {
    let mut draws = Draws::default();
    for (i, f) in files.iter().enumerate() {
        if i == 0 {
            draws.names = f.names.clone();
        } else if f.names != draws.names {
            return Err(StanCsvError::ColumnMismatch {
                path: paths
                    .get(i)
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|| format!("file {}", i + 1)),
            });
        }
        draws.chains.push(f.values.clone());
    }
    Ok(draws)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NUTS_COLS: [&str; 7] = [
        "lp__",
        "accept_stat__",
        "stepsize__",
        "treedepth__",
        "n_leapfrog__",
        "divergent__",
        "energy__",
    ];

    fn example() -> (Draws, Vec<f64>) {
        let names = vec![
            "mu".to_string(),
            "beta[1]".to_string(),
            "Sigma[2,1]".to_string(),
        ];
        let chain = vec![
            0.1,
            -1.0 / 3.0,
            2.5e-7,
            1e300,
            f64::NAN,
            -0.0,
            std::f64::consts::PI,
            f64::NEG_INFINITY,
            42.0,
        ];
        let sampler: Vec<f64> = (0..21).map(|i| i as f64 * 0.25 - 2.0).collect();
        (
            Draws {
                names,
                chains: vec![vec![0.0; 9], chain],
            },
            sampler,
        )
    }

    #[test]
    fn names_convert_both_ways() {
        assert_eq!(to_stan_name("beta[1]"), "beta.1");
        assert_eq!(to_stan_name("Sigma[2,1]"), "Sigma.2.1");
        assert_eq!(to_stan_name("Sigma[2, 1]"), "Sigma.2.1");
        assert_eq!(to_stan_name("alpha"), "alpha");
        assert_eq!(from_stan_name("beta.1"), "beta[1]");
        assert_eq!(from_stan_name("Sigma.2.1"), "Sigma[2,1]");
        assert_eq!(from_stan_name("a.b"), "a.b");
        assert_eq!(from_stan_name("alpha"), "alpha");
        assert_eq!(from_stan_name("x.y.3"), "x.y[3]");
    }

    #[test]
    fn round_trip_and_header_format() {
        let (draws, sampler) = example();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chain2.csv");
        let config = cmdstan_config_lines(
            "eight_schools",
            "sample",
            &[
                ("num_samples", "3".to_string()),
                ("num_warmup", "10".to_string()),
                ("algorithm", "nuts".to_string()),
            ],
            1234,
            2,
        );
        let adapt = nuts_adaptation_lines(0.5, &[1.0, 0.25, 2.0]);
        let footer = timing_lines(0.25, 0.5);
        write_stan_csv(
            &path,
            &StanCsvLayout {
                config_lines: &config,
                sampler_cols: &NUTS_COLS,
                sampler_values: &sampler,
                draws: &draws,
                chain: 1,
                adaptation_lines: &adapt,
                footer_lines: &footer,
                warmup_rows: 0,
                sig_figs: None,
            },
        )
        .unwrap();
        let text = fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let expected_head = [
            "# stan_version_major = 2".to_string(),
            "# stan_version_minor = 36".to_string(),
            "# stan_version_patch = 0".to_string(),
            format!("# bayesc_version = {}", env!("CARGO_PKG_VERSION")),
            "# model = eight_schools".to_string(),
            "# method = sample".to_string(),
            "#   sample".to_string(),
            "#     num_samples = 3".to_string(),
            "#     num_warmup = 10".to_string(),
            "#     algorithm = nuts".to_string(),
            "# id = 2".to_string(),
            "# random".to_string(),
            "#   seed = 1234".to_string(),
            "lp__,accept_stat__,stepsize__,treedepth__,n_leapfrog__,divergent__,energy__,mu,beta.1,Sigma.2.1"
                .to_string(),
            "# Adaptation terminated".to_string(),
            "# Step size = 0.5".to_string(),
            "# Diagonal elements of inverse mass matrix:".to_string(),
            "# 1, 0.25, 2".to_string(),
            "-2,-1.75,-1.5,-1.25,-1,-0.75,-0.5,0.1,-0.3333333333333333,2.5e-7"
                .to_string(),
        ];
        for (i, e) in expected_head.iter().enumerate() {
            assert_eq!(lines[i], e, "line {}", i + 1);
        }
        assert_eq!(lines.len(), expected_head.len() + 2 + 5);
        let tail = &lines[lines.len() - 5..];
        assert_eq!(
            tail,
            [
                "#",
                "#  Elapsed Time: 0.250 seconds (Warm-up)",
                "#                0.500 seconds (Sampling)",
                "#                0.750 seconds (Total)",
                "#"
            ]
        );

        let back = read_stan_csv(&path).unwrap();
        assert_eq!(back.names, draws.names);
        assert_eq!(back.sampler_names, NUTS_COLS);
        assert_eq!(back.n_draws, 3);
        assert_eq!(back.step_size(), Some(0.5));
        assert_eq!(back.config_lines, config);
        assert_eq!(back.adaptation_lines, adapt);
        assert_eq!(back.footer_lines, footer);
        let same = |a: &[f64], b: &[f64]| {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
        };
        assert!(same(&back.values, &draws.chains[1]), "{:?}", back.values);
        assert!(same(&back.sampler_values, &sampler));
        assert_eq!(
            back.sampler_column("energy__").unwrap(),
            vec![sampler[6], sampler[13], sampler[20]]
        );
        let d = draws_from_files(&[back.clone(), back], &[&path, &path]).unwrap();
        assert_eq!(d.names, draws.names);
        assert_eq!(d.n_draws(), 3);
    }

    #[test]
    fn a_row_cut_by_a_killed_writer_is_left_out_and_flagged() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.csv");
        let whole = "# model = m\nlp__,accept_stat__,mu\n-1.5,0.9,0.25\n-1.25,0.8,0.5\n";
        std::fs::write(&path, format!("{whole}-1.0,0.7")).unwrap();
        let cut = read_stan_csv(&path).unwrap();
        // every field, but the last number may be cut ("0.75" → "0.7"): left out too
        std::fs::write(&path, format!("{whole}-1.0,0.7,0.7")).unwrap();
        let all_fields = read_stan_csv(&path).unwrap();
        assert!(all_fields.partial_last_row);
        assert_eq!(all_fields.n_draws, 2);
        assert!(cut.partial_last_row);
        assert_eq!(cut.n_draws, 2);
        assert_eq!(cut.values, [0.25, 0.5]);
        std::fs::write(&path, whole).unwrap();
        let fine = read_stan_csv(&path).unwrap();
        assert!(!fine.partial_last_row);
        assert_eq!(fine.n_draws, 2);
    }

    #[test]
    fn rejects_bad_input() {
        let (draws, sampler) = example();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.csv");
        let layout = StanCsvLayout {
            config_lines: &[],
            sampler_cols: &NUTS_COLS,
            sampler_values: &sampler[..20],
            draws: &draws,
            chain: 0,
            adaptation_lines: &[],
            footer_lines: &[],
            warmup_rows: 0,
            sig_figs: None,
        };
        assert!(write_stan_csv(&path, &layout).is_err());
        assert!(write_stan_csv(&path, &StanCsvLayout { chain: 5, ..layout }).is_err());
        // missing directory: error, nothing created
        let missing = dir.path().join("nope").join("x.csv");
        let full = StanCsvLayout {
            sampler_values: &sampler,
            ..layout
        };
        assert!(write_stan_csv(&missing, &full).is_err());
        assert!(!missing.exists());
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);

        fs::write(&path, "# only comments\n").unwrap();
        assert!(matches!(
            read_stan_csv(&path),
            Err(StanCsvError::NoHeader { .. })
        ));
        fs::write(&path, "lp__,a\n1,2\n3\n").unwrap();
        assert!(matches!(
            read_stan_csv(&path),
            Err(StanCsvError::RowLength { line: 3, .. })
        ));
        fs::write(&path, "lp__,a\n1,x\n").unwrap();
        let e = read_stan_csv(&path).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{}, line 2, column `a`: `x` is not a number",
                path.display()
            )
        );
        fs::write(&path, "lp__,a\n1,+inf\n2,nan\n").unwrap();
        let ok = read_stan_csv(&path).unwrap();
        assert_eq!(ok.values[0], f64::INFINITY);
        assert!(ok.values[1].is_nan());
    }
}
