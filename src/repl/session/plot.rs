//! `:plot KIND [PARAMS] [FILE.svg] [combined]` on the last fit: the plots of `bayesc plot`
//! ([`crate::output::plot`]), drawn from the stored draws instead of files.

use super::*;
use crate::output::plot::{self, PlotInput, PlotKind, PlotOptions};

/// The usage line of `:plot`.
const USAGE: &str = "usage: :plot KIND [PARAM,...] [FILE.svg] [combined]   (KIND: trace, rank, pair, \
                     density, forest, elbo, ppc; for ppc: :plot ppc [VAR [REP]] [FILE.svg])";

impl Session {
    pub(super) fn plot(&self, args: &[&str]) -> Output {
        let Some((kind, rest)) = args.split_first() else {
            return Output::error(USAGE);
        };
        let kind = match PlotKind::parse(kind) {
            Ok(k) => k,
            Err(e) => return Output::error(format!("error: {e}\n{USAGE}")),
        };
        let f = match self.pick(None) {
            Ok(f) => f,
            Err(o) => return o,
        };
        let mut options = PlotOptions::new(kind);
        let mut path = PathBuf::from(format!("{}_{}.svg", f.name, kind.name()));
        let mut words = Vec::new();
        for w in rest {
            if w.to_lowercase().ends_with(".svg") || w.to_lowercase().ends_with(".png") {
                path = PathBuf::from(w);
            } else if *w == "combined" {
                options.combined = true;
            } else {
                words.push(*w);
            }
        }
        if kind == PlotKind::Ppc {
            match words.as_slice() {
                [] => {}
                [var] => {
                    options.var = var.to_string();
                    options.rep = format!("{var}_rep");
                }
                [var, rep] => {
                    options.var = var.to_string();
                    options.rep = rep.to_string();
                }
                _ => return Output::error(USAGE),
            }
        } else {
            // `:plot trace mu fit1`: a fit's name is no quantity; `:plot` draws the last fit
            if let Some(w) = words.iter().find(|w| {
                self.fits.iter().any(|g| g.name == **w) && f.result.draws.position(w).is_none()
            }) {
                return Output::error(if *w == f.name {
                    format!(
                        "error: `{w}` is the last fit, which `:plot` draws anyway; leave its name \
                         out\n{USAGE}"
                    )
                } else {
                    format!(
                        "error: `{w}` is a fit, but `:plot` draws the last fit, {}; to plot {w}, \
                         `:save {w} FILE.csv` and run `bayesc plot` on the files written\n{USAGE}",
                        f.name
                    )
                });
            }
            options.params = words.iter().flat_map(|w| plot::split_params(w)).collect();
        }
        options.title = Some(format!(
            "{} ({}, {})",
            f.name, f.result.method, f.model_name
        ));
        let divergent: Option<Vec<Vec<bool>>> = match &f.result.details {
            FitDetails::Mcmc(m) if m.chains.iter().all(|c| !c.stats.divergent.is_empty()) => {
                Some(m.chains.iter().map(|c| c.stats.divergent.clone()).collect())
            }
            _ => None,
        };
        let observed = if kind == PlotKind::Ppc {
            if self.data.is_empty() {
                return Output::error(format!(
                    "error: the ppc plot needs the observed `{}`: load the data with :data FILE",
                    options.var
                ));
            }
            match plot::observed_values(&self.data, &options.var) {
                Ok(v) => Some(v),
                Err(e) => return Output::error(format!("error: {e}")),
            }
        } else {
            None
        };
        // a minibatch fit: batch estimates and the smoothed full-data ELBO of the exit rule
        let checks = f.result.epoch_checks();
        options.minibatch_elbo = !checks.is_empty();
        let minibatch_rows = f
            .result
            .vi
            .as_ref()
            .filter(|_| options.minibatch_elbo)
            .map(|v| plot::minibatch_elbo_rows(&v.trace, checks));
        let trace = minibatch_rows
            .as_deref()
            .or_else(|| f.result.vi.as_ref().map(|v| v.trace.as_slice()));
        let input = PlotInput {
            draws: Some(&f.result.draws),
            divergent: divergent.as_deref(),
            elbo: trace,
            observed: observed.as_deref(),
        };
        let written = plot::check_output_path(&path)
            .and_then(|()| plot::render_svg(&input, &options))
            .and_then(|svg| plot::write_svg(&path, &svg));
        match written {
            Ok(()) => Output::ok(format!(
                "{} plot of {} written to {}",
                kind.name(),
                f.name,
                path.display()
            )),
            Err(e) => Output::error(format!("error: {e}")),
        }
    }
}
