//! MCMC draws streamed to the chain files as they are made (issue 13 item 7), as CmdStan
//! writes them, so that an interrupted run keeps what was sampled.
//!
//! Each chain writes its own file ([`super::fit_files::mcmc_chain_path`]), so chains running in
//! parallel never share a writer and the rows of a chain are in draw order whatever the thread
//! count. A chain's file gets, in order: the configuration comments and the column header when
//! the chain starts; with `--save-warmup` the kept warmup rows, all at once when warmup ends
//! (so that a chain restarted after a collapsed warmup writes only its last attempt's), then
//! the adaptation comments; one row per kept post-warmup
//! draw, each written with one `write` call and flushed at once (so after a `kill -9` the file
//! is readable up to its last row); and the timing footer when the chain ends. A finished run's
//! files are byte for byte those [`super::fit_files::write_outputs`] writes from the result.
//!
//! A run stopped by Ctrl-C or SIGTERM is finished by [`ChainFiles::finish`]: the kept chains are
//! rewritten, trimmed to a common length as the printed summary is
//! ([`crate::fit::trim_interrupted`]; cmdstanpy and ArviZ need equal chains), with a last line
//! `# interrupted: N of M draws` (Stan's comment style); files of chains without draws are
//! removed, except, with `--save-warmup`, those of chains stopped in warmup, which keep the
//! warmup draws made so far and end `# interrupted: 0 of M draws, K warmup draws (in warmup)`. A fit that fails removes its files ([`ChainFiles::discard`]).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::fit_files::{
    mcmc_adaptation_lines, mcmc_chain_path, mcmc_config_lines, model_name, write_outputs,
};
use super::format_f64_sig;
use super::stan_csv::{comment, timing_lines, to_stan_name};
use crate::fit::{FitDetails, FitOptions, FitResult, McmcStream, Method};
use crate::inference::mcmc;

/// One chain's file while it is written.
#[derive(Debug, Default)]
struct ChainFile {
    /// The open file, from [`McmcStream::start`] until [`McmcStream::finish`] or an error.
    writer: Option<BufWriter<File>>,
    /// Whether the file was created (so it is ours to rewrite or remove).
    created: bool,
    /// The first I/O error; the chain's later output is then dropped.
    error: Option<io::Error>,
    /// Warmup rows written (`--save-warmup`).
    warmup_rows: usize,
}

/// The chain files of one `bayesc fit --output PATH` MCMC run, written as the draws are made
/// (module docs). Give it to [`crate::fit::fit_with_stream`], then call [`ChainFiles::finish`]
/// with the result, or [`ChainFiles::discard`] if the fit failed.
#[derive(Debug)]
pub struct ChainFiles {
    path: PathBuf,
    model: PathBuf,
    model_name: String,
    options: FitOptions,
    /// The column header line (without newline).
    header: String,
    /// d, for the dense adaptation lines.
    dim: usize,
    chains: Vec<Mutex<ChainFile>>,
}

impl ChainFiles {
    /// The files for `--output path` of a fit of the model file `model` with `options` (an
    /// MCMC method; `options.mcmc.chains` files), whose draws have columns `names`
    /// (`crate::fit::draw_names`) over `dim` unconstrained parameters. Nothing is written yet.
    pub fn new(
        path: &Path,
        model: &Path,
        options: &FitOptions,
        names: &[String],
        dim: usize,
    ) -> Self {
        let method = match options.method {
            // fixed_param writes lp__ and accept_stat__, Metropolis's columns
            Method::Mh | Method::FixedParam => mcmc::Method::Mh,
            _ => mcmc::Method::Nuts,
        };
        let header = mcmc::sampler_columns(&method)
            .iter()
            .map(|s| s.to_string())
            .chain(names.iter().map(|n| to_stan_name(n)))
            .collect::<Vec<_>>()
            .join(",");
        ChainFiles {
            path: path.to_path_buf(),
            model: model.to_path_buf(),
            model_name: model_name(model),
            options: options.clone(),
            header,
            dim,
            chains: (0..options.mcmc.chains)
                .map(|_| Mutex::new(ChainFile::default()))
                .collect(),
        }
    }

    /// Runs `write` on chain `chain`'s open file; an error is kept and closes the file.
    fn with(&self, chain: usize, write: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>) {
        let Some(slot) = self.chains.get(chain) else {
            return;
        };
        let mut f = slot.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(w) = f.writer.as_mut()
            && let Err(e) = write(w).and_then(|()| w.flush())
        {
            f.writer = None;
            f.error = Some(e);
        }
    }

    /// Removes the files made so far (after a failed fit, which writes nothing).
    pub fn discard(self) {
        for (c, slot) in self.chains.into_iter().enumerate() {
            let f = slot.into_inner().unwrap_or_else(|e| e.into_inner());
            if f.created {
                drop(f.writer);
                let _ = std::fs::remove_file(mcmc_chain_path(&self.path, c));
            }
        }
    }

    /// Completes the files after the fit returned `result`; returns the names of the files
    /// kept. A finished run's files are already complete. An interrupted run's kept chains are
    /// rewritten trimmed, each with a last line `# interrupted: N of M draws`, and the other
    /// files removed (module docs).
    ///
    /// Errors: the first I/O error of any chain's file, or of the rewrite.
    pub fn finish(self, result: &FitResult) -> io::Result<Vec<String>> {
        let interrupted = matches!(&result.details, FitDetails::Mcmc(out) if out.interrupted);
        let mut created = Vec::with_capacity(self.chains.len());
        let mut warmup_rows = Vec::with_capacity(self.chains.len());
        let mut first_error = None;
        for slot in self.chains {
            let mut f = slot.into_inner().unwrap_or_else(|e| e.into_inner());
            if let Some(mut w) = f.writer.take()
                && let Err(e) = w.flush()
            {
                f.error.get_or_insert(e);
            }
            created.push(f.created);
            warmup_rows.push(f.warmup_rows);
            if first_error.is_none() {
                first_error = f.error;
            }
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        let kept = result.draws.chains.len();
        let mut files = Vec::with_capacity(kept);
        if interrupted {
            if kept > 0 {
                // each file ends `# interrupted: N of M draws`, and those of chains stopped in
                // warmup with `--save-warmup` are rewritten whole, as the REPL's `:save` writes
                // them (`fit_files::write_outputs`)
                files = write_outputs(&self.path, result, &self.options, &self.model)?;
            }
            // the kept chains keep their own numbers (`McmcOutput::chain_ids`): remove the
            // files of the others
            let ids = match &result.details {
                FitDetails::Mcmc(out) => out.chain_ids(),
                _ => (0..kept).collect(),
            };
            let requested = self.options.mcmc.samples.div_ceil(self.options.mcmc.thin);
            for (c, made) in created.iter().enumerate() {
                if !*made || ids.contains(&c) {
                    continue;
                }
                let file = mcmc_chain_path(&self.path, c);
                if files.contains(&file.display().to_string()) {
                    continue;
                }
                if self.options.mcmc.save_warmup && warmup_rows[c] > 0 {
                    // stopped in warmup: its saved warmup draws are kept, as streamed
                    let mut f = std::fs::OpenOptions::new().append(true).open(&file)?;
                    writeln!(
                        f,
                        "# interrupted: 0 of {requested} draws, {} warmup draws (in warmup)",
                        warmup_rows[c]
                    )?;
                    files.push(file.display().to_string());
                } else {
                    std::fs::remove_file(file)?;
                }
            }
        } else {
            for (c, made) in created.iter().enumerate() {
                if *made {
                    files.push(mcmc_chain_path(&self.path, c).display().to_string());
                }
            }
        }
        Ok(files)
    }
}

impl McmcStream for ChainFiles {
    fn start(&self, chain: usize, dense: bool) {
        let Some(slot) = self.chains.get(chain) else {
            return;
        };
        {
            let mut f = slot.lock().unwrap_or_else(|e| e.into_inner());
            match File::create(mcmc_chain_path(&self.path, chain)) {
                Ok(file) => {
                    f.writer = Some(BufWriter::new(file));
                    f.created = true;
                }
                Err(e) => {
                    f.error = Some(e);
                    return;
                }
            }
        }
        let config = mcmc_config_lines(
            &self.model_name,
            &self.options,
            self.options.seed,
            chain,
            dense,
            None,
        );
        self.with(chain, |w| {
            for line in &config {
                comment(w, line)?;
            }
            writeln!(w, "{}", self.header)
        });
    }

    fn adapted(&self, chain: usize, step_size: f64, inv_metric: &[f64], dense: bool) {
        let lines = mcmc_adaptation_lines(&self.options, step_size, inv_metric, dense, self.dim);
        self.with(chain, |w| {
            for line in &lines {
                comment(w, line)?;
            }
            Ok(())
        });
    }

    fn row(&self, chain: usize, sampler: &[f64], values: &[f64]) {
        let sig_figs = self.options.sig_figs;
        let mut line = sampler
            .iter()
            .chain(values)
            .map(|v| format_f64_sig(*v, sig_figs))
            .collect::<Vec<_>>()
            .join(",");
        line.push('\n');
        self.with(chain, |w| w.write_all(line.as_bytes()));
    }

    fn warmup_row(&self, chain: usize, sampler: &[f64], values: &[f64]) {
        // the same row layout; they come before the adaptation comments, as CmdStan's
        self.row(chain, sampler, values);
        if let Some(slot) = self.chains.get(chain) {
            slot.lock().unwrap_or_else(|e| e.into_inner()).warmup_rows += 1;
        }
    }

    fn finish(&self, chain: usize, warmup_seconds: f64, sampling_seconds: f64) {
        let lines = timing_lines(warmup_seconds, sampling_seconds);
        self.with(chain, |w| {
            for line in &lines {
                comment(w, line)?;
            }
            Ok(())
        });
    }
}
