//! `bayesc plot`: draw a trace, rank, pair, density, forest, ELBO or posterior predictive plot
//! of saved draws files (Stan's CSV layout, one per chain) as SVG or PNG. The drawing is
//! [`crate::output::plot`]'s.

use std::path::PathBuf;

use clap::Args;

use crate::output::plot::{self, PlotInput, PlotKind, PlotOptions};

/// Arguments of `bayesc plot`.
#[derive(Args, Debug)]
pub struct PlotArgs {
    /// Draws files in Stan's CSV layout, one per chain of the same fit (not needed for
    /// `--kind elbo`).
    pub files: Vec<PathBuf>,
    /// trace, rank, pair, density, forest, elbo or ppc.
    #[arg(long, default_value = "trace")]
    pub kind: String,
    /// The file to write: `.svg`, or `.png` (the SVG rendered with an embedded font).
    #[arg(short = 'o', long = "output", default_value = "plot.svg")]
    pub output: PathBuf,
    /// Quantities to draw, comma-separated (`alpha,beta[2]`; `beta` selects all its elements).
    /// Default: the first 6 (4 for pair).
    #[arg(long)]
    pub params: Option<String>,
    /// density, forest: pool the chains instead of one series per chain.
    #[arg(long)]
    pub combined: bool,
    /// elbo: the ELBO trace written by `bayesc fit --elbo-output FILE`.
    #[arg(long, value_name = "FILE")]
    pub elbo: Option<PathBuf>,
    /// ppc: the data file holding the observed variable.
    #[arg(long, value_name = "FILE")]
    pub data: Option<PathBuf>,
    /// ppc: the observed variable in the data.
    #[arg(long, default_value = "y")]
    pub var: String,
    /// ppc: the replicated quantity in the draws' generated quantities.
    #[arg(long, default_value = "y_rep")]
    pub rep: String,
}

/// Reads the inputs the kind needs, draws the plot and writes it; prints where.
pub fn run(args: PlotArgs) -> i32 {
    match plot_files(&args) {
        Ok(note) => {
            println!("{note}");
            0
        }
        Err(e) => {
            eprintln!("error: {e}");
            super::EXIT_ERROR
        }
    }
}

fn plot_files(args: &PlotArgs) -> Result<String, plot::PlotError> {
    let kind = PlotKind::parse(&args.kind)?;
    plot::check_output_path(&args.output)?;
    let mut options = PlotOptions::new(kind);
    options.params = args
        .params
        .as_deref()
        .map(plot::split_params)
        .unwrap_or_default();
    options.combined = args.combined;
    options.var = args.var.clone();
    options.rep = args.rep.clone();
    let names: Vec<String> = args
        .files
        .iter()
        .chain(&args.elbo)
        .map(|p| {
            p.file_name().map_or_else(
                || p.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            )
        })
        .collect();
    if !names.is_empty() {
        let mut t = names.join(", ");
        if t.chars().count() > 60 {
            t = format!("{}…", t.chars().take(59).collect::<String>());
        }
        options.title = Some(t);
    }
    let trace = match (&args.elbo, kind) {
        (Some(path), _) => Some(plot::read_elbo_trace(path)?),
        (None, PlotKind::Elbo) if args.files.len() == 1 => {
            Some(plot::read_elbo_trace(&args.files[0])?)
        }
        _ => None,
    };
    options.minibatch_elbo = trace.as_ref().is_some_and(|t| t.minibatch);
    let loaded = if kind == PlotKind::Elbo {
        None
    } else {
        Some(plot::load_draws(&args.files)?)
    };
    if let Some(l) = &loaded
        && l.warmup_only
        && let Some(t) = &mut options.title
    {
        t.push_str(" — WARMUP draws only (not a posterior)");
    }
    let observed = match (&args.data, kind) {
        (Some(path), PlotKind::Ppc) => {
            let source =
                crate::data::load(path).map_err(|e| plot::PlotError::new(e.to_string()))?;
            Some(plot::observed_values(
                std::slice::from_ref(&source),
                &args.var,
            )?)
        }
        _ => None,
    };
    let input = PlotInput {
        draws: loaded.as_ref().map(|l| &l.draws),
        divergent: loaded.as_ref().and_then(|l| l.divergent.as_deref()),
        elbo: trace.as_ref().map(|t| t.rows.as_slice()),
        observed: observed.as_deref(),
    };
    let svg = plot::render_svg(&input, &options)?;
    plot::write_svg(&args.output, &svg)?;
    let mut note = format!("{} plot written to {}", kind.name(), args.output.display());
    if let Some(l) = &loaded
        && l.warmup_only
    {
        note.push_str(&format!(
            " from WARMUP draws only ({} per chain): the files hold no post-warmup draws, so \
             the run was stopped in warmup; these show the sampler adapting, not a posterior \
             sample",
            l.draws.n_draws()
        ));
    }
    if let Some(l) = &loaded
        && l.warmup_dropped > 0
    {
        note.push_str(&format!(
            " ({} warmup draws per chain left out)",
            l.warmup_dropped
        ));
    }
    Ok(note)
}
