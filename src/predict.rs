//! Saved fits (`--save-fit FIT.json`) and prediction: generated quantities of a model recompiled
//! on new data, evaluated for every saved posterior draw and summarised per quantity.

use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::diagnostics::quantile::quantile_sorted;
use crate::fit::FitResult;
use crate::graph::Model;
use crate::inference::DensityError;
use crate::inference::rng::stream;

/// The `format` tag written into every saved fit; files with another tag are refused.
pub const SAVED_FIT_FORMAT: &str = "bayesc-fit-1";

/// A fitted posterior saved to JSON so that prediction needs no refit.
///
/// `draws[s]` holds the constrained values of every parameter of draw `s` (all chains, one after
/// the other), in the order of `parameter_names` (Stan's flattened order, as
/// [`Model::parameter_names`]). Constrained values are stored because they are readable and
/// independent of the transforms; [`Model::unconstrain`] maps them back to ζ exactly (up to
/// rounding) when predicting.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SavedFit {
    /// Always [`SAVED_FIT_FORMAT`].
    pub format: String,
    /// The model file as given to `bayesc fit` (for messages only).
    pub model_path: String,
    /// [`model_hash`] of the model text the fit was made with.
    pub model_hash: String,
    /// The inference method (`qbvi`, `nuts`, …).
    pub method: String,
    /// The seed of the fit.
    pub seed: u64,
    /// Constrained parameter names, one per column of `draws`.
    pub parameter_names: Vec<String>,
    /// Posterior draws of the parameters on the constrained scale, one row per draw.
    pub draws: Vec<Vec<f64>>,
    /// Whether the fit was stopped (Ctrl-C, SIGTERM) before its exit rule or requested length.
    /// Absent in files written before this field existed: read as `false`.
    #[serde(default)]
    pub interrupted: bool,
    /// For a variational fit, whether its exit rule fired
    /// ([`FitResult::vi_converged`]); `None` for other methods and older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub converged: Option<bool>,
    /// For a variational fit that did not converge, why, in `bayesc fit`'s words
    /// (`output::report::vi_not_converged`, set by [`SavedFit::with_verdict`]); absent when it
    /// converged, for other methods and in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_converged_because: Option<String>,
}

/// Why a saved fit could not be written, read or used.
#[derive(Debug, thiserror::Error)]
pub enum PredictError {
    /// The fit file could not be read or written.
    #[error("cannot {action} fit file `{path}`: {source}")]
    Io {
        action: &'static str,
        path: String,
        source: io::Error,
    },
    /// The fit file is not valid JSON of the saved-fit layout.
    #[error("fit file `{path}` is not a bayesc fit (corrupt or not JSON): {message}")]
    Corrupt { path: String, message: String },
    /// The fit was made with a different model text.
    #[error(
        "fit file `{path}` was made with a different model (`{fitted}`, hash {fit_hash}); \
         `{model}` has hash {model_hash}: refit the model, or predict with the model the fit was made with"
    )]
    ModelMismatch {
        path: String,
        fitted: String,
        fit_hash: String,
        model: String,
        model_hash: String,
    },
    /// The saved parameter names do not match the model's (e.g. a parameter size that depends on
    /// the data differs in the new data).
    #[error(
        "the parameters of the fit ({saved} values) do not match those of the model on the new data ({model} values): {detail}"
    )]
    ParameterMismatch {
        saved: usize,
        model: usize,
        detail: String,
    },
    /// The model declares no generated quantities, so there is nothing to predict.
    #[error("the model has no generated quantities to predict")]
    NothingToPredict,
    /// A draw could not be mapped to the unconstrained scale.
    #[error("draw {draw}: {source}")]
    Density { draw: usize, source: DensityError },
    /// The generated quantities failed (a `reject`, an `_rng` argument outside its support, a
    /// domain error, a declared bound broken) at draw `draw` (1-based, of the draws given to
    /// [`generated_quantity_draws`]; `None` at a single point estimate), which `at` names for
    /// the message ("draw 3", "draw 3 of chain 1", "the posterior mean point"); the message
    /// ends with [`GQ_FAILURE_ADVICE`].
    #[error(
        "the generated quantities failed at {at}: {source}. {}",
        GQ_FAILURE_ADVICE
    )]
    GeneratedQuantities {
        at: String,
        draw: Option<usize>,
        source: DensityError,
    },
}

/// How to fix generated quantities that fail at some draws, as `bayesc evaluate` prints it (it
/// stops at the first failure, since its metrics need every draw) and `bayesc predict` when the
/// transformed parameters fail on the new data (docs/generated_quantities.md).
pub const GQ_FAILURE_ADVICE: &str = "Guard the statement against the values that break it \
     (e.g. `if (mu > 0)`), or use a function defined for all of them; `bayesc fit` on the same \
     model writes NaN where the generated quantities fail and counts the failures \
     (docs/generated_quantities.md)";

/// A content hash of a model's text: 64-bit FNV-1a (Fowler–Noll–Vo) of its UTF-8 bytes, with
/// line endings normalised to `\n`, written as `fnv1a64:` and 16 hex digits.
///
/// Detects a fit used with an edited model; not a cryptographic hash.
pub fn model_hash(text: &str) -> String {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h = OFFSET;
    for b in text.replace("\r\n", "\n").bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(PRIME);
    }
    format!("fnv1a64:{h:016x}")
}

impl SavedFit {
    /// The parameter draws of `result` (the first `model.parameter_names().len()` columns of its
    /// draws, all chains) with the model's path and text hash.
    pub fn from_fit(model: &Model, model_path: &str, model_text: &str, result: &FitResult) -> Self {
        let names = model.parameter_names();
        let k = result.draws.names.len();
        let p = names.len();
        let mut draws = Vec::new();
        for chain in &result.draws.chains {
            if k == 0 {
                continue;
            }
            for row in chain.chunks(k) {
                draws.push(row[..p].to_vec());
            }
        }
        SavedFit {
            format: SAVED_FIT_FORMAT.to_string(),
            model_path: model_path.to_string(),
            model_hash: model_hash(model_text),
            method: result.method.to_string(),
            seed: result.seed,
            parameter_names: names,
            draws,
            interrupted: result.stopped_early().unwrap_or(false),
            converged: result.vi_converged(),
            not_converged_because: None,
        }
    }

    /// This fit with the verdict `bayesc fit` printed for it: `why` is its reason for "not
    /// converged" (`output::report::vi_not_converged`), `None` when it converged. For a
    /// variational fit this replaces [`FitResult::vi_converged`], which knows only the exit rule,
    /// drift and a moving q, so that `predict` does not score a collapsed or diverged fit as
    /// converged; other methods (no `converged` field) are left as they are.
    pub fn with_verdict(mut self, why: Option<String>) -> Self {
        if self.converged.is_some() {
            self.converged = Some(why.is_none());
            self.not_converged_because = why;
        }
        self
    }

    /// The caveat to print before scoring or predicting with this fit: `Some` when it was
    /// interrupted or, for a variational fit, did not converge.
    pub fn caveat(&self) -> Option<String> {
        if self.interrupted {
            Some(format!(
                "the fit was interrupted before it finished ({} {}): predictions use the \
                 draws it had made; refit to completion before relying on them",
                self.method,
                if self.converged.is_some() {
                    "stopped before its exit rule"
                } else {
                    "stopped early"
                }
            ))
        } else if let (Some(false), Some(why)) = (self.converged, &self.not_converged_because) {
            Some(format!(
                "the {} fit did not converge: {why}. Predictions may be far off; follow the advice \
                 `bayesc fit` gave for it before relying on them",
                self.method
            ))
        } else if self.converged == Some(false) {
            Some(format!(
                "the {} fit did not converge (it hit its iteration cap or is drifting): \
                 predictions may be far off; refit with more iterations",
                self.method
            ))
        } else {
            None
        }
    }

    /// Writes the fit as JSON, atomically (`output::write_atomic`).
    ///
    /// Errors: [`PredictError::Io`].
    pub fn save(&self, path: &Path) -> Result<(), PredictError> {
        crate::output::write_atomic(path, |w| {
            serde_json::to_writer(&mut *w, self).map_err(io::Error::other)?;
            w.write_all(b"\n")
        })
        .map_err(|source| PredictError::Io {
            action: "write",
            path: path.display().to_string(),
            source,
        })
    }

    /// Reads a fit written by [`SavedFit::save`].
    ///
    /// Errors: [`PredictError::Io`]; [`PredictError::Corrupt`] for text that is not JSON of this
    /// layout, has another `format` tag, or rows whose length differs from the names.
    pub fn load(path: &Path) -> Result<Self, PredictError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| PredictError::Io {
            action: "read",
            path: shown.clone(),
            source,
        })?;
        Self::from_json(&shown, &text)
    }

    /// Parses a saved fit from JSON text shown as `name` in messages; see [`SavedFit::load`].
    pub fn from_json(name: &str, text: &str) -> Result<Self, PredictError> {
        let corrupt = |message: String| PredictError::Corrupt {
            path: name.to_string(),
            message,
        };
        let fit: SavedFit = serde_json::from_str(text).map_err(|e| corrupt(e.to_string()))?;
        if fit.format != SAVED_FIT_FORMAT {
            return Err(corrupt(format!(
                "format is `{}`, expected `{SAVED_FIT_FORMAT}`",
                fit.format
            )));
        }
        if let Some((i, row)) = fit
            .draws
            .iter()
            .enumerate()
            .find(|(_, r)| r.len() != fit.parameter_names.len())
        {
            return Err(corrupt(format!(
                "draw {} has {} values but {} parameter names are listed",
                i + 1,
                row.len(),
                fit.parameter_names.len()
            )));
        }
        Ok(fit)
    }

    /// Checks that `model_text` is the text this fit was made with.
    ///
    /// Errors: [`PredictError::ModelMismatch`] naming both files and hashes.
    pub fn check_model(
        &self,
        fit_path: &str,
        model_path: &str,
        model_text: &str,
    ) -> Result<(), PredictError> {
        let h = model_hash(model_text);
        if h == self.model_hash {
            Ok(())
        } else {
            Err(PredictError::ModelMismatch {
                path: fit_path.to_string(),
                fitted: self.model_path.clone(),
                fit_hash: self.model_hash.clone(),
                model: model_path.to_string(),
                model_hash: h,
            })
        }
    }

    /// The draws mapped to the unconstrained scale of `model` (compiled on any data).
    ///
    /// Errors: [`PredictError::ParameterMismatch`] when the model's parameter names differ from
    /// the saved ones; [`PredictError::Density`] when a value lies outside its support.
    ///
    /// The imputed entries of `@missing` training data (`x_missing[k]`, docs/missing_data.md)
    /// belong to the training rows: they are dropped from the draws. New data with missing
    /// entries is refused, since imputing new rows needs a fit that includes them.
    pub fn unconstrained_draws(&self, model: &Model) -> Result<Vec<Vec<f64>>, PredictError> {
        let names = model.parameter_names();
        if let Some(v) = model.imputed_variables().first() {
            return Err(PredictError::ParameterMismatch {
                saved: self.parameter_names.len(),
                model: names.len(),
                detail: format!(
                    "the new data has missing entries in `{v}` (declared `@missing`), whose \
                     imputed values would be new parameters; give complete rows, or refit with \
                     the new rows in the data"
                ),
            });
        }
        let imputed: Vec<String> = model
            .missing_declared()
            .iter()
            .map(|v| format!("{v}_missing["))
            .collect();
        let keep: Vec<usize> = (0..self.parameter_names.len())
            .filter(|&i| {
                !imputed
                    .iter()
                    .any(|p| self.parameter_names[i].starts_with(p.as_str()))
            })
            .collect();
        if keep.len() < self.parameter_names.len() {
            let kept: Vec<String> = keep
                .iter()
                .map(|&i| self.parameter_names[i].clone())
                .collect();
            let reduced = SavedFit {
                parameter_names: kept,
                draws: self
                    .draws
                    .iter()
                    .map(|row| keep.iter().map(|&i| row[i]).collect())
                    .collect(),
                ..self.clone()
            };
            return reduced.unconstrained_draws(model);
        }
        if names != self.parameter_names {
            let detail = match names
                .iter()
                .zip(&self.parameter_names)
                .position(|(a, b)| a != b)
            {
                Some(i) => format!(
                    "value {} is `{}` in the fit but `{}` in the model",
                    i + 1,
                    self.parameter_names[i],
                    names[i]
                ),
                None => "a parameter size differs (does it depend on a data size?)".to_string(),
            };
            return Err(PredictError::ParameterMismatch {
                saved: self.parameter_names.len(),
                model: names.len(),
                detail,
            });
        }
        self.draws
            .iter()
            .enumerate()
            .map(|(i, row)| {
                model
                    .unconstrain(row)
                    .map_err(|source| PredictError::Density {
                        draw: i + 1,
                        source,
                    })
            })
            .collect()
    }
}

/// The posterior predictive summary of one scalar generated quantity (one element of a vector
/// such as `y_rep[3]`).
#[derive(Clone, Debug, PartialEq)]
pub struct PredictionRow {
    /// The element's name, `y_rep[3]` (1-based, Stan's order).
    pub name: String,
    /// Mean over draws.
    pub mean: f64,
    /// Standard deviation over draws (denominator S − 1; 0 for a single draw).
    pub sd: f64,
    /// 5%, 50% and 95% quantiles over draws (type-7 interpolation, `diagnostics::quantile`).
    pub q5: f64,
    pub q50: f64,
    pub q95: f64,
    /// Draws the row summarises: those at which the quantity is not NaN (fewer than the fit's
    /// where its generated quantities failed, [`Prediction::gq_note`]).
    pub draws: usize,
}

/// What [`predict`] returns: the summary rows, and the warning (an error in Stan's terms)
/// when the generated quantities failed at some draws, which then hold NaN for the quantities
/// that failed ([`crate::fit::gq_failure_note`]); `None` when nothing failed.
#[derive(Clone, Debug, PartialEq)]
pub struct Prediction {
    /// One row per scalar generated quantity, in Stan's order.
    pub rows: Vec<PredictionRow>,
    /// The failures: count per quantity, the first by draw, and how to fix the model.
    pub gq_note: Option<String>,
    /// The declared names of the generated quantities that failed at some draw (`log_lik`,
    /// not `log_lik[3]`), in the order they first failed; empty when `gq_note` is `None`.
    pub failed: Vec<String>,
    /// The first failure's message and location (`file:line:column`, possibly with
    /// `, where n = 1`), as in `gq_note`; `None` when nothing failed. [`outcome_is_cause`]
    /// reads it.
    pub first_failure: Option<(String, Option<String>)>,
    /// The declared names of the generated quantities left out because they read an
    /// unobserved outcome ([`Model::left_out_quantities`]); their rows hold NaN and `draws` 0,
    /// and they are not failures.
    pub left_out: Vec<String>,
}

/// Whether a failure of the generated quantities (its `message` and `location`, as
/// [`crate::inference::DensityError`] holds them) comes from the outcome `outcome` missing
/// from the new data, whose entries are then NaN: the statement at `location`, looked up in
/// the model `source`, reads `outcome` (as a whole word), or, without a usable location, the
/// message names a NaN. [X]: fresh-user finding — `bayesc predict` blamed the missing outcome
/// for every failure, e.g. a `bernoulli_rng` of a probability above 1.
pub fn outcome_is_cause(
    message: &str,
    location: Option<&str>,
    source: &str,
    outcome: &str,
) -> bool {
    let line = location.and_then(|loc| {
        // "file:line:column" or "file:line:column, where n = 1"; the file may hold ':'
        let at = loc.split(", ").next()?;
        let mut parts = at.rsplitn(3, ':');
        let _column = parts.next()?;
        let line: usize = parts.next()?.trim().parse().ok()?;
        source.lines().nth(line.checked_sub(1)?)
    });
    match line {
        Some(text) => reads_word(text, outcome),
        None => message.to_ascii_lowercase().contains("nan"),
    }
}

/// Whether `word` occurs in `text` as an identifier (not inside a longer one).
fn reads_word(text: &str, word: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(word).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + word.len()..].chars().next();
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
}

/// Evaluates the generated quantities of `model` (compiled on the new data) at every
/// unconstrained draw in `zetas`, returning the `draws × generated_quantity_names()` values in
/// row-major order. `_rng` calls of draw `s` use random stream `3000 + s` of `seed`, so the result
/// (and the draw named by an error) does not depend on the number of threads.
///
/// Errors: [`PredictError::GeneratedQuantities`] naming the first draw (1-based, `draw N`) at
/// which the generated quantities (or the transformed parameters, recomputed on the new data)
/// fail.
pub fn generated_quantity_draws(
    model: &Model,
    zetas: &[Vec<f64>],
    seed: u64,
) -> Result<Vec<Vec<f64>>, PredictError> {
    use rayon::prelude::*;
    let n_before = model.parameter_names().len() + model.transformed_parameter_names().len();
    zetas
        .par_iter()
        .enumerate()
        .map(|(s, z)| {
            let mut rng = stream(seed, 3000 + s as u64);
            let all = model
                .write_array(z, true, true, &mut rng)
                .map_err(|source| PredictError::GeneratedQuantities {
                    at: format!("draw {}", s + 1),
                    draw: Some(s + 1),
                    source,
                })?;
            Ok(all[n_before..].to_vec())
        })
        .collect::<Vec<Result<Vec<f64>, PredictError>>>()
        // the first failing draw in draw order, whatever the threads' timing
        .into_iter()
        .collect()
}

/// Summarises `values` (draws × names, one `Vec` per draw) per column over the draws at which
/// the column is not NaN (a generated quantity that failed there, as `bayesc fit`'s summary
/// does): mean, sd and the 5%, 50% and 95% quantiles, and the count of those draws. A column
/// NaN at every draw is summarised as NaN.
pub fn summarize_columns(names: &[String], values: &[Vec<f64>]) -> Vec<PredictionRow> {
    names
        .iter()
        .enumerate()
        .map(|(j, name)| {
            let mut col: Vec<f64> = values
                .iter()
                .map(|r| r[j])
                .filter(|v| !v.is_nan())
                .collect();
            let (mean, sd) = match (col.len(), values.len()) {
                (_, 0) => (0.0, 0.0),
                (0, _) => (f64::NAN, f64::NAN),
                (1, _) => (col[0], 0.0),
                _ => crate::diagnostics::mean_sd(&col),
            };
            col.sort_by(f64::total_cmp);
            let q = |p: f64| {
                if col.is_empty() {
                    f64::NAN
                } else {
                    quantile_sorted(&col, p)
                }
            };
            PredictionRow {
                name: name.clone(),
                mean,
                sd,
                q5: q(0.05),
                q50: q(0.5),
                q95: q(0.95),
                draws: col.len(),
            }
        })
        .collect()
}

/// The generated quantities of `model` at every unconstrained draw in `zetas`, as
/// [`generated_quantity_draws`] (random stream `3000 + s` of `seed` for draw `s`), except that
/// a generated quantity that fails at a draw holds NaN there and the failures are counted
/// (`GqTally`, draws numbered from 1 in the order of `zetas`), as `bayesc fit` does.
///
/// Errors: [`PredictError::GeneratedQuantities`] for the first draw whose transformed
/// parameters (recomputed on the new data) fail, which leave no generated quantity.
pub(crate) fn generated_quantity_draws_counting(
    model: &Model,
    zetas: &[Vec<f64>],
    seed: u64,
) -> Result<(Vec<Vec<f64>>, crate::fit::GqTally), PredictError> {
    use rayon::prelude::*;
    let n_before = model.parameter_names().len() + model.transformed_parameter_names().len();
    let made: Vec<_> = zetas
        .par_iter()
        .enumerate()
        .map(|(s, z)| {
            let mut rng = stream(seed, 3000 + s as u64);
            crate::fit::constrained_row(model, z, &mut rng)
        })
        .collect();
    let mut tally = crate::fit::GqTally::default();
    let mut values = Vec::with_capacity(made.len());
    for (s, r) in made.into_iter().enumerate() {
        let (row, failure) = r.map_err(|source| PredictError::GeneratedQuantities {
            at: format!("draw {}", s + 1),
            draw: Some(s + 1),
            source,
        })?;
        if let Some(f) = failure {
            tally.add(s + 1, f);
        }
        values.push(row[n_before..].to_vec());
    }
    Ok((values, tally))
}

/// Posterior prediction: the generated quantities of `model` (compiled on the new data) for
/// every draw of `fit`, summarised per scalar quantity. A quantity that fails at some draws
/// holds NaN there and is summarised over the others ([`PredictionRow::draws`]); the failures
/// are reported in [`Prediction::gq_note`], the first named by its draw of the fit (its
/// chains one after another), as `bayesc fit` reports them.
///
/// Errors: [`PredictError::NothingToPredict`] when the model has no generated quantities, and
/// those of [`SavedFit::unconstrained_draws`] and [`generated_quantity_draws_counting`].
pub fn predict(model: &Model, fit: &SavedFit, seed: u64) -> Result<Prediction, PredictError> {
    let names = model.generated_quantity_names();
    if names.is_empty() {
        return Err(PredictError::NothingToPredict);
    }
    let zetas = fit.unconstrained_draws(model)?;
    let n = zetas.len();
    let placed =
        |d: usize| format!("draw {d} of the fit's {n} draws (its chains one after another)");
    let (values, tally) =
        generated_quantity_draws_counting(model, &zetas, seed).map_err(|e| match e {
            PredictError::GeneratedQuantities {
                draw: Some(d),
                source,
                ..
            } => PredictError::GeneratedQuantities {
                at: placed(d),
                draw: Some(d),
                source,
            },
            e => e,
        })?;
    Ok(Prediction {
        rows: summarize_columns(&names, &values),
        gq_note: tally.note(n, placed),
        failed: tally.per_quantity.iter().map(|(q, _)| q.clone()).collect(),
        first_failure: tally
            .first
            .as_ref()
            .map(|(_, e, _)| (e.message.clone(), e.location.clone())),
        left_out: model.left_out_quantities(),
    })
}

/// Writes prediction rows as CSV: `name,mean,sd,q5,q50,q95,draws`, values with round-trip
/// precision; `draws` is [`PredictionRow::draws`], the draws each row summarises (fewer than
/// the fit's where the quantity failed).
pub fn write_predictions_csv(w: &mut dyn io::Write, rows: &[PredictionRow]) -> io::Result<()> {
    use crate::output::format_f64_roundtrip as f;
    writeln!(w, "name,mean,sd,q5,q50,q95,draws")?;
    for r in rows {
        writeln!(
            w,
            "{},{},{},{},{},{},{}",
            r.name,
            f(r.mean),
            f(r.sd),
            f(r.q5),
            f(r.q50),
            f(r.q95),
            r.draws
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_published_vectors() {
        // FNV-1a 64 test vectors (Fowler, Noll, Vo: "" and "a").
        assert_eq!(model_hash(""), "fnv1a64:cbf29ce484222325");
        assert_eq!(model_hash("a"), "fnv1a64:af63dc4c8601ec8c");
        assert_eq!(model_hash("x\r\ny"), model_hash("x\ny"));
    }

    #[test]
    fn summary_of_known_column() {
        let names = vec!["a".to_string()];
        let values: Vec<Vec<f64>> = (1..=5).map(|i| vec![i as f64]).collect();
        let r = &summarize_columns(&names, &values)[0];
        assert_eq!(r.mean, 3.0);
        assert!((r.sd - 2.5f64.sqrt()).abs() < 1e-15);
        assert_eq!(r.q50, 3.0);
        assert!((r.q5 - 1.2).abs() < 1e-12);
        assert!((r.q95 - 4.8).abs() < 1e-12);
        assert_eq!(r.draws, 5);
        // NaN where a generated quantity failed: summarised over the other draws
        let values: Vec<Vec<f64>> = [1.0, f64::NAN, 2.0, 3.0, f64::NAN, 4.0, 5.0]
            .iter()
            .map(|&v| vec![v, f64::NAN])
            .collect();
        let names = vec!["a".to_string(), "b".to_string()];
        let rows = summarize_columns(&names, &values);
        assert_eq!((rows[0].mean, rows[0].q50, rows[0].draws), (3.0, 3.0, 5));
        assert!((rows[0].sd - 2.5f64.sqrt()).abs() < 1e-15);
        assert!(rows[1].mean.is_nan() && rows[1].q50.is_nan() && rows[1].draws == 0);
    }

    #[test]
    fn corrupt_json_is_refused() {
        assert!(matches!(
            SavedFit::from_json("f.json", "{not json"),
            Err(PredictError::Corrupt { .. })
        ));
        let bad = r#"{"format":"bayesc-fit-1","model_path":"m","model_hash":"h","method":"qbvi","seed":1,"parameter_names":["a","b"],"draws":[[1.0]]}"#;
        let e = SavedFit::from_json("f.json", bad).unwrap_err().to_string();
        assert!(e.contains("draw 1 has 1 values"), "{e}");
    }
}
