//! The pipeline as a library — parse → check → bind data → compile — shared by the CLI, the
//! REPL and the tests, so that all three take exactly the same path (STYLE.md §4, "a thin binary").

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use codespan_reporting::diagnostic::Diagnostic;

use crate::data::{self, DataSource};
use crate::fit::MinibatchPlan;
use crate::graph::{Model, separability};
use crate::inference::MinibatchDensity;
use crate::inference::minibatch::MinibatchSettings;
use crate::semantics;
use crate::syntax::ast::{Program, SizedBase};
use crate::syntax::parser;
use crate::syntax::report::ToDiagnostic;
use crate::syntax::source::SourceMap;
use crate::syntax::span::FileId;

pub mod include;

pub use include::IncludedFile;

/// A rendered-ready message about the user's model or data (error, warning or note).
pub type Report = Diagnostic<FileId>;

/// Why a pipeline step failed.
#[derive(Debug)]
pub enum Failure {
    /// Errors about the model or the data, as diagnostics (render them with the `SourceMap`).
    Reported(Vec<Report>),
    /// A file could not be read: the message names the path and the reason.
    Io(String),
    /// A command-line value that the model or data rule out (e.g. `--batch-size` larger than
    /// the number of rows): a usage error, exit status 2 like clap's own flag errors.
    Usage(String),
}

impl Failure {
    /// The failure as diagnostics (an I/O failure becomes a single error without a span).
    pub fn into_reports(self) -> Vec<Report> {
        match self {
            Failure::Reported(r) => r,
            Failure::Io(msg) | Failure::Usage(msg) => {
                vec![Diagnostic::error().with_message(msg)]
            }
        }
    }
}

/// A parsed program that passed the semantic checks, with its warnings.
#[derive(Debug, Clone)]
pub struct Checked {
    /// The program's AST.
    pub program: Program,
    /// The id of its source in the `SourceMap`.
    pub file: FileId,
    /// Warnings from the semantic checks (pedantic-mode style), to show the user.
    pub warnings: Vec<Report>,
    /// Parameters that appear in no `~` statement and no `target +=` (the `NoPrior` warning):
    /// they get an improper flat prior. Empty when every parameter has a prior, so that a
    /// degenerate fit is not blamed on priors.
    pub unpriored: Vec<String>,
    /// The library files brought in by `include` lines (their functions are already merged
    /// into `program.functions`), in the order they were read.
    pub includes: Vec<IncludedFile>,
}

/// Parses and checks `text`, registering it in `sources` under `name` (a path or `<repl>`).
///
/// `include "file.bayes";` lines are resolved first (see [`include`] for the order: the folder
/// of `name` — the current directory when `name` has none, as for `<repl>` — then the embedded
/// stdlib); the included functions are merged into the program before the semantic checks.
///
/// Errors: the syntax error, an include problem (missing file, cycle, a library with other blocks
/// than `functions`), or every semantic error, as diagnostics. An error or warning inside library
/// code also points at the model's call of that library function and at the `include` line.
pub fn check_source(sources: &mut SourceMap, name: &str, text: &str) -> Result<Checked, Failure> {
    let dir = Path::new(name).parent();
    check_source_in(sources, name, text, dir)
}

/// [`check_source`] with an explicit folder for resolving `include` lines (`None`: the current
/// directory), for callers whose `name` is not a path.
pub fn check_source_in(
    sources: &mut SourceMap,
    name: &str,
    text: &str,
    dir: Option<&Path>,
) -> Result<Checked, Failure> {
    let (program, file, includes, out) = parse_and_check(sources, name, text, dir)?;
    finish_check(program, file, includes, out)
}

/// Parses `text`, resolves its includes and checks it: the program with the check's output,
/// errors included.
fn parse_and_check(
    sources: &mut SourceMap,
    name: &str,
    text: &str,
    dir: Option<&Path>,
) -> Result<(Program, FileId, Vec<IncludedFile>, semantics::CheckOutput), Failure> {
    let file = sources.add(name, text);
    let mut program = parser::parse_program(text, file)
        .map_err(|e| Failure::Reported(vec![e.to_diagnostic()]))?;
    let includes = include::resolve(sources, &mut program, dir).map_err(Failure::Reported)?;
    let out = semantics::check(&program);
    Ok((program, file, includes, out))
}

/// The [`Checked`] program, or its errors as diagnostics located in the model.
fn finish_check(
    program: Program,
    file: FileId,
    includes: Vec<IncludedFile>,
    out: semantics::CheckOutput,
) -> Result<Checked, Failure> {
    let relocate = |d: Report| include::locate_in_model(d, &program, file, &includes);
    if !out.errors.is_empty() {
        return Err(Failure::Reported(
            out.errors
                .iter()
                .map(|e| relocate(e.to_diagnostic()))
                .collect(),
        ));
    }
    let warnings = out
        .warnings
        .iter()
        .map(|w| relocate(w.to_diagnostic()))
        .collect();
    let unpriored = out
        .warnings
        .iter()
        .filter_map(|w| match w {
            crate::semantics::warnings::Warning::NoPrior { name, .. } => Some(name.clone()),
            _ => None,
        })
        .collect();
    Ok(Checked {
        program,
        file,
        warnings,
        unpriored,
        includes,
    })
}

/// Reads the model file at `path`, then [`check_source`].
///
/// Errors: the file cannot be read (named with its path), or the checks fail.
pub fn check_file(sources: &mut SourceMap, path: &Path) -> Result<Checked, Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::Io(format!("cannot read model file `{}`: {e}", path.display())))?;
    check_source(sources, &path.display().to_string(), &text)
}

/// [`check_file`] for a run with the data files `data` (`check --data`, `fit`): when the
/// checks fail with errors about sizes known before evaluation only
/// ([`semantics::SemanticError::is_known_size_error`], e.g. `vector[3] y` against
/// `vector[2] mu`), the program is checked again with the sizes the data give, as
/// [`compile`] does, and the errors of that check are reported instead: the same errors and
/// those the data's sizes reveal, in one run. When the data cannot be read or bound, the
/// first errors are reported (the data's own error comes once the model is fixed).
///
/// [X] session 20, tester finding: `matrix[N, 2] Z` times `vector[4] c` was reported, but not
/// `X * b` with `matrix[N, K] X`, K = 3, `vector[2] b` beside it, which appeared only after
/// the first was fixed.
///
/// Errors: those of [`check_file`], or the size errors of the program with its data.
pub fn check_file_with_data(
    sources: &mut SourceMap,
    path: &Path,
    data: &[PathBuf],
) -> Result<Checked, Failure> {
    check_file_with_data_unobserved(sources, path, data, None)
}

/// [`check_file_with_data`] for `bayesc predict` and `bayesc evaluate`: the data variable
/// `unobserved` (the outcome to predict) may be missing from the files, as in
/// [`compile_unobserved`]. [X] session 21, tester finding: `predict` and `evaluate` checked
/// the model without its data, so that a size error the data reveal came one run later than
/// in `fit`.
///
/// Errors: those of [`check_file_with_data`].
pub fn check_file_with_data_unobserved(
    sources: &mut SourceMap,
    path: &Path,
    data: &[PathBuf],
    unobserved: Option<&str>,
) -> Result<Checked, Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::Io(format!("cannot read model file `{}`: {e}", path.display())))?;
    let name = path.display().to_string();
    let (program, file, includes, out) =
        parse_and_check(sources, &name, &text, Path::new(&name).parent())?;
    let sizes_only = !out.errors.is_empty()
        && out
            .errors
            .iter()
            .all(semantics::SemanticError::is_known_size_error);
    if !sizes_only || data.is_empty() {
        return finish_check(program, file, includes, out);
    }
    let with_data = load_data(data).ok().and_then(|loaded| {
        let bound = match unobserved {
            Some(o) => data::bind_unobserved(&program, &loaded, o),
            None => data::bind(&program, &loaded),
        }
        .ok()?;
        // the checks passed but these sizes: the program as if checked, for `compile_bound`
        let checked = Checked {
            program: program.clone(),
            file,
            warnings: Vec::new(),
            unpriored: Vec::new(),
            includes: includes.clone(),
        };
        compile_bound(&checked, sources, bound).err()
    });
    match with_data {
        Some(f @ Failure::Reported(_)) => Err(f),
        _ => finish_check(program, file, includes, out),
    }
}

/// Loads every data file (CSV or Stan JSON, by extension).
///
/// Errors: the first file that cannot be read or parsed, with file, row and column.
pub fn load_data(paths: &[PathBuf]) -> Result<Vec<DataSource>, Failure> {
    paths
        .iter()
        .map(|p| data::load(p).map_err(|e| Failure::Reported(vec![e.to_diagnostic()])))
        .collect()
}

/// As [`compile`], but the data variable `unobserved` (an outcome to predict) may be missing from
/// the sources; it is then bound as NaN values of its declared size ([`data::bind_unobserved`]).
///
/// Errors: those of [`compile`].
pub fn compile_unobserved(
    checked: &Checked,
    files: &SourceMap,
    sources: &[DataSource],
    unobserved: &str,
) -> Result<Model, Failure> {
    let bound = data::bind_unobserved(&checked.program, sources, unobserved)
        .map_err(|e| Failure::Reported(e.to_diagnostics()))?;
    compile_bound(checked, files, bound)
}

/// Binds `sources` to the program's `data` block and compiles the log-joint graph (running
/// `transformed data` once).
///
/// Errors: data that does not fit the declarations (file, row, column named), or an error while
/// evaluating `transformed data` (with its span).
///
/// `files` gives runtime errors their location in the model ("model.bayes:14:3").
///
/// Memory: a variable bound to a whole CSV column or JSON array shares the source's buffer with
/// the model; a matrix bound from CSV columns is copied once, column by column (the graph's
/// column-major layout, so never transposed), so that
/// dropping `sources` afterwards leaves the model holding the data's only copy.
pub fn compile(
    checked: &Checked,
    files: &SourceMap,
    sources: &[DataSource],
) -> Result<Model, Failure> {
    let bound =
        data::bind(&checked.program, sources).map_err(|e| Failure::Reported(e.to_diagnostics()))?;
    compile_bound(checked, files, bound)
}

/// Compiles the program against bound data, after checking the sizes the data declare
/// ([`semantics::check_with_data`] with the `int` data scalars; again with the `int`
/// transformed data scalars once `transformed data` has run, when there are any), so that an
/// operation whose operands cannot fit is an error at that operation before any evaluation.
fn compile_bound(
    checked: &Checked,
    files: &SourceMap,
    bound: data::BoundData,
) -> Result<Model, Failure> {
    let program = &checked.program;
    let mut ints = HashMap::new();
    for d in &program.data {
        if matches!(d.ty.base, SizedBase::Int)
            && d.ty.array_dims.is_empty()
            && let Some(v) = bound.values.get(&d.name.name)
            && let [x] = v.values.as_slice()
            && x.fract() == 0.0
            && x.abs() < 2f64.powi(53)
        {
            ints.insert(d.name.name.clone(), *x as i64);
        }
    }
    // With size errors already, `transformed data` still runs when its `int` scalars may size
    // more of the program, so that the errors they reveal come in the same run (the second
    // check repeats the first's errors); when it cannot run, the first errors are reported.
    let first = match size_errors(checked, &ints) {
        Err(f) if !declares_int_scalars(&program.transformed_data) => return Err(f),
        r => r.err(),
    };
    let model = match Model::from_bound(program, bound) {
        Ok(m) => m.with_sources(files),
        Err(e) => return Err(first.unwrap_or_else(|| Failure::Reported(vec![e.to_diagnostic()]))),
    };
    let n = ints.len();
    ints.extend(model.int_scalars());
    if ints.len() > n {
        size_errors(checked, &ints)?;
    }
    match first {
        Some(f) => Err(f),
        None => Ok(model),
    }
}

/// Whether `stmts` (a block) declare an `int` scalar at their top level.
fn declares_int_scalars(stmts: &[crate::syntax::ast::Stmt]) -> bool {
    stmts.iter().any(|s| {
        matches!(&s.kind, crate::syntax::ast::StmtKind::Decl(d)
            if matches!(d.ty.base, SizedBase::Int) && d.ty.array_dims.is_empty())
    })
}

/// The errors of [`semantics::check_with_data`] with `ints` (the size errors: the program
/// passed [`semantics::check`] already), located in the model as [`check_source`]'s are.
fn size_errors(checked: &Checked, ints: &HashMap<String, i64>) -> Result<(), Failure> {
    let out = semantics::check_with_data(&checked.program, ints.clone());
    if out.errors.is_empty() {
        return Ok(());
    }
    Err(Failure::Reported(
        out.errors
            .iter()
            .map(|e| {
                include::locate_in_model(
                    e.to_diagnostic(),
                    &checked.program,
                    checked.file,
                    &checked.includes,
                )
            })
            .collect(),
    ))
}

/// Chooses the observation axis, proves that the log density splits over its rows
/// (`graph::separability`) and builds the minibatch plan of `--batch-size M` (docs/minibatch.md).
///
/// The axis is `over` when given; otherwise the one `int` data variable that is the leading size
/// of other data, or, when several are, the one equal to the row count of a CSV data file.
///
/// Errors: no or several candidate axes (asks for `--batch-over`), an axis that is not a
/// candidate, a model that mixes rows (the separability error at its span), or M > N.
pub fn minibatch_plan(
    checked: &Checked,
    sources: &[DataSource],
    model: &Model,
    batch_size: usize,
    over: Option<&str>,
) -> Result<MinibatchPlan, Failure> {
    let plain = |msg: String| Failure::Reported(vec![Diagnostic::error().with_message(msg)]);
    if let Some(name) = model.imputed_variables().first() {
        return Err(plain(format!(
            "--batch-size: `{name}` has missing entries, imputed by parameters that belong to \
             their rows; a minibatch would leave each of them out of most updates, so fit on the \
             full data (drop --batch-size)"
        )));
    }
    let program = &checked.program;
    let candidates = separability::candidate_axes(program);
    let axis = match over {
        Some(name) => {
            if !candidates.iter().any(|c| c == name) {
                return Err(plain(format!(
                    "--batch-over {name}: `{name}` is not an `int` data variable that sizes the \
                     rows of other data (candidates: {})",
                    if candidates.is_empty() {
                        "none".to_string()
                    } else {
                        candidates.join(", ")
                    }
                )));
            }
            name.to_string()
        }
        None => {
            let csv_rows: Vec<usize> = sources
                .iter()
                .filter_map(|s| match s {
                    DataSource::Csv(c) => Some(c.n_rows()),
                    DataSource::Json(_) => None,
                })
                .collect();
            let by_csv: Vec<&String> = candidates
                .iter()
                .filter(|c| {
                    model
                        .data_int(c)
                        .is_some_and(|n| csv_rows.contains(&(n as usize)))
                })
                .collect();
            match (candidates.len(), by_csv.len()) {
                (0, _) => {
                    return Err(plain(
                        "--batch-size: no `int` data variable sizes the rows of the data, so \
                         there is nothing to minibatch"
                            .into(),
                    ));
                }
                (1, _) => candidates[0].clone(),
                (_, 1) => by_csv[0].clone(),
                _ => {
                    return Err(plain(format!(
                        "--batch-size: several data sizes could count the rows ({}); name the \
                         one to minibatch with --batch-over NAME",
                        candidates.join(", ")
                    )));
                }
            }
        }
    };
    let separability = separability::analyse(program, &axis)
        .map_err(|e| Failure::Reported(vec![e.to_diagnostic()]))?;
    let mm = model.minibatch(&separability).map_err(plain)?;
    let n_obs = mm.n_obs();
    if batch_size > n_obs {
        return Err(Failure::Usage(format!(
            "invalid value '{batch_size}' for '--batch-size <M>': larger than the number of \
             rows N = {n_obs} (`{axis}`)"
        )));
    }
    Ok(MinibatchPlan {
        separability,
        n_obs,
        settings: MinibatchSettings {
            batch_size,
            ..MinibatchSettings::default()
        },
    })
}

/// The minibatch plan a fit of `method` needs: that of `--batch-size M` when given
/// ([`minibatch_plan`]); for the methods that need per-observation gradients
/// ([`crate::fit::Method::needs_rows`]: Vadam, VOGN) without it, the plan with M = N for VOGN
/// (full batch) and M = 1 for Vadam (`specs/survey_vi.md` §11, the paper's setting); for IVON
/// the plan with M = N when the model splits over its rows (it needs N for λ, §17), else
/// `None`; `None` for the other methods without `--batch-size`, or with `--batch-size` ≥ N (the
/// full-data fit).
///
/// Errors: as [`minibatch_plan`]; for Vadam and VOGN without `--batch-size` the diagnostics
/// gain a note that the method needs a log density split over rows and what to use instead.
/// MC dropout on a model with no `@dropout` site is a [`Failure::Usage`] saying how to add one.
pub fn plan_for_method(
    checked: &Checked,
    sources: &[DataSource],
    model: &Model,
    method: crate::fit::Method,
    batch_size: Option<usize>,
    over: Option<&str>,
) -> Result<Option<MinibatchPlan>, Failure> {
    // Checked here, before the settings line is printed, rather than when the fit starts.
    if method == crate::fit::Method::Mcdropout
        && model.dropout_sites().iter().all(|s| s.units.is_empty())
    {
        return Err(Failure::Usage(
            crate::inference::vi::mcdropout::NO_DROPOUT_SITE.to_string(),
        ));
    }
    if let Some(m) = batch_size {
        let plan = minibatch_plan(checked, sources, model, m, over)?;
        // A batch of all N rows is the full-data fit: the methods that do not need
        // per-observation gradients run it as such (QBVI keeps its full covariance).
        if plan.settings.batch_size >= plan.n_obs
            && !method.needs_rows()
            && method != crate::fit::Method::Ivon
        {
            return Ok(None);
        }
        return Ok(Some(plan));
    }
    if method == crate::fit::Method::Ivon {
        // Full-batch IVON takes λ = N when the rows are known (`fit::survey_fit`): a plan of
        // one batch of all N rows, when the model splits over its rows; none otherwise.
        return Ok(minibatch_plan(checked, sources, model, 1, over)
            .ok()
            .map(|mut plan| {
                plan.settings.batch_size = plan.n_obs;
                plan
            }));
    }
    if !method.needs_rows() {
        return Ok(None);
    }
    match minibatch_plan(checked, sources, model, 1, over) {
        Ok(mut plan) => {
            if method == crate::fit::Method::Vogn {
                plan.settings.batch_size = plan.n_obs;
            }
            Ok(Some(plan))
        }
        Err(Failure::Reported(reports)) => Err(Failure::Reported(
            reports
                .into_iter()
                .map(|mut d| {
                    // No --batch-size was given: the checks' "fit without --batch-size" advice
                    // does not apply to a method that needs the rows split either way.
                    for n in d.notes.iter_mut() {
                        if n.contains("without --batch-size") {
                            *n = n
                                .replace("or fit without --batch-size", "or use another method")
                                .replace(
                                    "fit this model without --batch-size",
                                    "use another method",
                                )
                                .replace("fit without --batch-size", "use another method");
                        }
                    }
                    // the user asked for no minibatches: say what the method needs instead
                    // of blaming a --batch-size that was not given (fresh-user finding,
                    // session 21: `--method vogn` on missing data said "drop --batch-size")
                    if let Some(rest) = d.message.strip_prefix("--batch-size: ") {
                        let rest = rest
                            .split_once("; a minibatch would")
                            .map_or(rest, |(r, _)| r)
                            .trim_end_matches(", so there is nothing to minibatch");
                        d.message = format!(
                            "--method {method} cannot split this model's log density over its \
                             rows: {rest}"
                        );
                    } else if let Some(rest) = d.message.strip_prefix("cannot minibatch: ") {
                        d.message = format!(
                            "--method {method} cannot split this model's log density over its \
                             rows: {rest}"
                        );
                    }
                    d.with_notes(vec![format!(
                        "--method {method} needs per-observation gradients, so a log density \
                         that splits over the rows of the data (docs/minibatch.md); use ivon \
                         or ngvi --diagonal, which need only the gradient of the log density"
                    )])
                })
                .collect(),
        )),
        Err(e) => Err(e),
    }
}

/// The options of one fit and what to say about them before it runs ([`fit_options`]).
#[derive(Debug)]
pub struct FitSetup {
    /// The library options of the fit (method, seed, start, minibatch plan, …).
    pub options: crate::fit::FitOptions,
    /// A note to print before the fit when the method was changed: an MCMC method on a model
    /// without parameters runs `fixed_param`, as CmdStan does.
    pub note: Option<&'static str>,
}

/// The note of [`FitSetup::note`] when an MCMC method runs `fixed_param` on a model without
/// parameters.
pub const NO_PARAMETERS_NOTE: &str = "note: the model has no parameters: running fixed_param \
     sampling (the generated quantities are drawn afresh each iteration; warmup and sampler \
     settings do not apply)";

/// The options of a fit of `model` (compiled from `checked` and `sources`) that `bayesc fit`'s
/// arguments `args` and the seed `seed` describe: [`crate::fit::args::options_from_args`], the
/// model's gradient cost, `fixed_param` for an MCMC method on a model without parameters, and
/// the minibatch plan of [`plan_for_method`] (a full-batch IVON fit's plan sets its effective
/// sample size λ = N). `bayesc fit` and the REPL's `:fit` both take their options from here, so
/// that the same model, data, arguments and seed give the same fit in both.
///
/// Errors: those of [`plan_for_method`].
pub fn fit_options(
    checked: &Checked,
    sources: &[DataSource],
    model: &Model,
    args: &crate::fit::args::FitArgs,
    seed: u64,
) -> Result<FitSetup, Failure> {
    use crate::fit::Method;
    use crate::inference::LogDensity;
    let mut options = crate::fit::args::options_from_args(args, model.dim(), seed);
    options.mcmc.gradient_work = Some(model.gradient_work());
    let outputs =
        model.generated_quantity_names().len() + model.transformed_parameter_names().len();
    let mut note = None;
    if model.dim() == 0
        && outputs > 0
        && options.method.is_mcmc()
        && options.method != Method::FixedParam
    {
        // as CmdStan: nothing to sample, so the generated quantities are simulated
        options.method = Method::FixedParam;
        note = Some(NO_PARAMETERS_NOTE);
    }
    options.minibatch = plan_for_method(
        checked,
        sources,
        model,
        options.method,
        args.batch_size.map(|m| m as usize),
        args.batch_over.as_deref(),
    )?;
    // Minibatch QBVI and VON fit the mean-field family only: without --full or --diagonal a
    // minibatch fit takes it, whatever d (the full family used to be chosen for d ≤ 50 and the
    // fit then refused after printing its settings; fresh-user testing). An explicit --full is
    // still refused, by the method.
    let minibatching = options
        .minibatch
        .as_ref()
        .is_some_and(|p| p.settings.batch_size < p.n_obs);
    if minibatching && !args.full && !args.diagonal {
        use crate::inference::vi::Covariance;
        options.qbvi.covariance = Covariance::Diagonal;
        options.von.covariance = Covariance::Diagonal;
        options.covariance_by_dimension = false;
        options.covariance_for_minibatch = true;
    }
    Ok(FitSetup { options, note })
}
