//! The seven plot kinds: what each needs from [`PlotInput`], its layout and its series.

use plotters::prelude::*;

use super::panels::*;
use super::stats::{hdi, kde, pooled_ranks, quantile};
use super::{PlotError, PlotInput, PlotKind, PlotOptions, select_columns};
use crate::inference::Draws;

/// Grid points of each kernel density estimate.
const GRID: usize = 160;
/// Probability of the HDI marked on density plots (ArviZ's default `hdi_prob`).
const HDI_PROB: f64 = 0.94;
/// Most points per scatter panel of the pair plot (draws are thinned evenly beyond it;
/// divergent draws are always drawn).
const MAX_SCATTER: usize = 800;
/// Most replicated data sets overlaid on the ppc plot.
const MAX_REPS: usize = 100;

/// Renders `options.kind` from `input`; see [`super::render_svg`].
pub(super) fn render(input: &PlotInput<'_>, options: &PlotOptions) -> Result<String, PlotError> {
    let title = options.title.as_deref();
    match options.kind {
        PlotKind::Elbo => {
            let trace = input.elbo.filter(|t| !t.is_empty()).ok_or_else(|| {
                PlotError::new(
                    "the elbo plot needs the ELBO trace of a variational fit: run `bayesc fit --method qbvi \
                     --elbo-output elbo.csv …` and pass `--elbo elbo.csv`",
                )
            })?;
            svg((820, 420), |root| {
                elbo(root, title, trace, options.minibatch_elbo)
            })
        }
        PlotKind::Ppc => {
            let draws = need_draws(input, options.kind)?;
            let cols = rep_columns(draws, &options.rep)?;
            let observed = input.observed.ok_or_else(|| {
                PlotError::new(format!(
                    "the ppc plot needs the observed data: pass `--data FILE --var {}`",
                    options.var
                ))
            })?;
            if observed.len() != cols.len() {
                return Err(PlotError::new(format!(
                    "the observed `{}` has {} values but the draws hold {} elements of `{}`",
                    options.var,
                    observed.len(),
                    cols.len(),
                    options.rep
                )));
            }
            svg((820, 460), |root| {
                ppc(root, title, draws, &cols, observed, options)
            })
        }
        kind => {
            let draws = need_draws(input, kind)?;
            let cols = select_columns(&draws.names, &options.params, kind.default_count())?;
            for &j in &cols {
                if draws.column(j).iter().flatten().all(|v| !v.is_finite()) {
                    return Err(PlotError::new(format!(
                        "`{}` has no finite draws to plot",
                        draws.names[j]
                    )));
                }
            }
            let k = cols.len() as u32;
            let m = draws.chains.len();
            match kind {
                PlotKind::Trace => svg((960, HEAD + 190 * k), |root| {
                    trace(root, title, draws, &cols)
                }),
                PlotKind::Rank => {
                    let rows = k.div_ceil(2);
                    svg((960, HEAD + rows * (60 + 34 * m as u32)), |root| {
                        rank(root, title, draws, &cols)
                    })
                }
                PlotKind::Pair => {
                    if cols.len() < 2 {
                        return Err(PlotError::new(
                            "the pair plot needs at least two quantities (give --params a,b)",
                        ));
                    }
                    let side = 200 * k + 40;
                    svg((side, side + HEAD), |root| {
                        pair(root, title, draws, &cols, input.divergent)
                    })
                }
                PlotKind::Density => {
                    let rows = k.div_ceil(3);
                    svg((960, HEAD + 230 * rows), |root| {
                        density(root, title, draws, &cols, options.combined)
                    })
                }
                _ => {
                    let per = if options.combined { 1 } else { m };
                    let h = HEAD + 70 + (cols.len() * (per * 14 + 14)) as u32;
                    svg((820, h), |root| {
                        forest(root, title, draws, &cols, options.combined)
                    })
                }
            }
        }
    }
}

fn need_draws<'a>(input: &PlotInput<'a>, kind: PlotKind) -> Result<&'a Draws, PlotError> {
    input
        .draws
        .filter(|d| !d.chains.is_empty() && d.n_draws() > 0)
        .ok_or_else(|| {
            PlotError::new(format!(
                "the {} plot needs draws (a fit with draws)",
                kind.name()
            ))
        })
}

/// Draws an SVG of `size` pixels with `draw` and returns the document.
fn svg(
    size: (u32, u32),
    draw: impl FnOnce(&Area<'_>) -> Result<(), PlotError>,
) -> Result<String, PlotError> {
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, size).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        draw(&root)?;
        root.present().map_err(draw_err)?;
    }
    Ok(buf)
}

/// The finite range of all chains' draws of column `j`, padded.
fn range_of(chains: &[Vec<f64>]) -> std::ops::Range<f64> {
    let all = finite_sorted(&chains.concat());
    padded(all[0], all[all.len() - 1])
}

/// Trace plot (ArviZ `plot_trace`): per quantity a row with the chains' kernel densities
/// (left) and their draws against iteration (right), one line per chain in each.
fn trace(
    root: &Area<'_>,
    title: Option<&str>,
    draws: &Draws,
    cols: &[usize],
) -> Result<(), PlotError> {
    let (head, body) = root.split_vertically(HEAD);
    header(&head, title, &chain_legend(draws.chains.len()))?;
    let n = draws.n_draws();
    for (row, &j) in body.split_evenly((cols.len(), 1)).iter().zip(cols) {
        let name = &draws.names[j];
        let chains = draws.column(j);
        let xr = range_of(&chains);
        let dens: Vec<_> = chains
            .iter()
            .map(|c| kde(&finite_sorted(c), xr.start, xr.end, GRID))
            .collect();
        let top = dens
            .iter()
            .flatten()
            .flatten()
            .map(|p| p.1)
            .fold(0.0, f64::max);
        let (left, right) = row.split_horizontally(320);
        let mut ch = panel(
            &left,
            name,
            xr.clone(),
            0.0..(top * 1.08).max(1e-12),
            "",
            "",
            false,
        )?;
        for (c, d) in dens.into_iter().enumerate() {
            if let Some(d) = d {
                ch.draw_series(LineSeries::new(d, chain_color(c).stroke_width(1)))
                    .map_err(draw_err)?;
            }
        }
        let mut ch = panel(&right, name, 1.0..(n.max(2) as f64), xr, "", "", true)?;
        for (c, x) in chains.iter().enumerate() {
            let pts = x
                .iter()
                .enumerate()
                .filter(|(_, v)| v.is_finite())
                .map(|(i, &v)| ((i + 1) as f64, v));
            ch.draw_series(LineSeries::new(
                pts,
                chain_color(c).mix(0.85).stroke_width(1),
            ))
            .map_err(draw_err)?;
        }
    }
    Ok(())
}

/// Number of bins of a rank histogram: 20 (as in Vehtari et al. 2021, Fig. 3) when every bin
/// can expect at least 5 draws of a chain, fewer otherwise.
fn rank_bins(n: usize) -> usize {
    (n / 5).clamp(1, 20)
}

/// Rank plot (Vehtari et al. 2021, §4.1; ArviZ `plot_rank`): per quantity, histograms of the
/// pooled ranks of each chain's draws, one row per chain, the uniform expectation dashed.
fn rank(
    root: &Area<'_>,
    title: Option<&str>,
    draws: &Draws,
    cols: &[usize],
) -> Result<(), PlotError> {
    let (head, body) = root.split_vertically(HEAD);
    header(&head, title, &chain_legend(draws.chains.len()))?;
    let m = draws.chains.len();
    let n = draws.n_draws();
    let total = (n * m) as f64;
    let bins = rank_bins(n);
    let expected = n as f64 / bins as f64;
    let rows = cols.len().div_ceil(2);
    for (cell, &j) in body.split_evenly((rows, 2)).iter().zip(cols) {
        let ranks = pooled_ranks(&draws.column(j));
        let mut ch = panel(
            cell,
            &draws.names[j],
            0.0..total,
            0.0..m as f64,
            "rank (all chains)",
            "chain",
            false,
        )?;
        for (c, r) in ranks.iter().enumerate() {
            let base = (m - 1 - c) as f64;
            let mut counts = vec![0usize; bins];
            for &v in r {
                counts[(((v - 1.0) / total * bins as f64) as usize).min(bins - 1)] += 1;
            }
            let w = total / bins as f64;
            let color = chain_color(c);
            ch.draw_series(counts.iter().enumerate().map(|(b, &k)| {
                let h = (0.45 * k as f64 / expected).min(0.95);
                Rectangle::new(
                    [
                        (b as f64 * w + 0.06 * w, base),
                        ((b + 1) as f64 * w - 0.06 * w, base + h),
                    ],
                    color.filled(),
                )
            }))
            .map_err(draw_err)?;
            dashed(
                &mut ch,
                &segment((0.0, base + 0.45), (total, base + 0.45), 41),
                1,
                INK.stroke_width(1),
            )?;
            ch.draw_series(std::iter::once(Text::new(
                format!("{}", c + 1),
                (0.005 * total, base + 0.9),
                font(10),
            )))
            .map_err(draw_err)?;
        }
    }
    Ok(())
}

/// Pair plot (ArviZ `plot_pair` with marginals): scatter plots of every pair of quantities in
/// the lower triangle, pooled kernel densities on the diagonal, divergent transitions drawn
/// over the others in red.
fn pair(
    root: &Area<'_>,
    title: Option<&str>,
    draws: &Draws,
    cols: &[usize],
    divergent: Option<&[Vec<bool>]>,
) -> Result<(), PlotError> {
    let (head, body) = root.split_vertically(HEAD);
    let k = cols.len();
    let pooled: Vec<Vec<f64>> = cols.iter().map(|&j| draws.column(j).concat()).collect();
    let div: Vec<bool> = divergent.map(|d| d.concat()).unwrap_or_default();
    let div = if div.len() == pooled[0].len() {
        div
    } else {
        Vec::new()
    };
    let n_div = div.iter().filter(|&&d| d).count();
    let mut legend = vec![("draws".to_string(), PALETTE[0])];
    if divergent.is_some() {
        legend.push((format!("divergent ({n_div})"), DIVERGENT));
    }
    header(&head, title, &legend)?;
    let ranges: Vec<_> = pooled
        .iter()
        .map(|x| {
            let s = finite_sorted(x);
            padded(s[0], s[s.len() - 1])
        })
        .collect();
    let step = pooled[0].len().div_ceil(MAX_SCATTER).max(1);
    let cells = body.split_evenly((k, k));
    for i in 0..k {
        for j in 0..=i {
            let cell = &cells[i * k + j];
            let x_desc = if i == k - 1 {
                draws.names[cols[j]].as_str()
            } else {
                ""
            };
            let y_desc = if j == 0 && i > 0 {
                draws.names[cols[i]].as_str()
            } else {
                ""
            };
            if i == j {
                let s = finite_sorted(&pooled[i]);
                let d = kde(&s, ranges[i].start, ranges[i].end, GRID).unwrap_or_default();
                let top = d.iter().map(|p| p.1).fold(0.0, f64::max);
                let mut ch = panel(
                    cell,
                    "",
                    ranges[i].clone(),
                    0.0..(top * 1.08).max(1e-12),
                    x_desc,
                    y_desc,
                    false,
                )?;
                ch.draw_series(LineSeries::new(d, PALETTE[0].stroke_width(1)))
                    .map_err(draw_err)?;
                continue;
            }
            let (xs, ys) = (&pooled[j], &pooled[i]);
            let mut ch = panel(
                cell,
                "",
                ranges[j].clone(),
                ranges[i].clone(),
                x_desc,
                y_desc,
                j == 0,
            )?;
            let finite = |t: usize| xs[t].is_finite() && ys[t].is_finite();
            ch.draw_series(
                (0..xs.len())
                    .step_by(step)
                    .filter(|&t| finite(t) && !div.get(t).copied().unwrap_or(false))
                    .map(|t| Circle::new((xs[t], ys[t]), 1, PALETTE[0].mix(0.5).filled())),
            )
            .map_err(draw_err)?;
            ch.draw_series(
                (0..xs.len())
                    .filter(|&t| finite(t) && div.get(t).copied().unwrap_or(false))
                    .map(|t| Circle::new((xs[t], ys[t]), 2, DIVERGENT.filled())),
            )
            .map_err(draw_err)?;
        }
    }
    Ok(())
}

/// Density plot (ArviZ `plot_density`): per quantity the kernel density of each chain (or of
/// the pooled draws), with the pooled 94% HDI as a thick bar on the axis.
fn density(
    root: &Area<'_>,
    title: Option<&str>,
    draws: &Draws,
    cols: &[usize],
    combined: bool,
) -> Result<(), PlotError> {
    let (head, body) = root.split_vertically(HEAD);
    let m = draws.chains.len();
    let mut legend = if combined {
        vec![("all chains".to_string(), PALETTE[0])]
    } else {
        chain_legend(m)
    };
    legend.push((format!("{:.0}% HDI", HDI_PROB * 100.0), INK));
    header(&head, title, &legend)?;
    let rows = cols.len().div_ceil(3);
    for (cell, &j) in body.split_evenly((rows, 3)).iter().zip(cols) {
        let chains = draws.column(j);
        let xr = range_of(&chains);
        let pooled = finite_sorted(&chains.concat());
        let groups: Vec<Vec<f64>> = if combined {
            vec![pooled.clone()]
        } else {
            chains.iter().map(|c| finite_sorted(c)).collect()
        };
        let dens: Vec<_> = groups
            .iter()
            .map(|g| kde(g, xr.start, xr.end, GRID))
            .collect();
        let top = dens
            .iter()
            .flatten()
            .flatten()
            .map(|p| p.1)
            .fold(0.0, f64::max)
            .max(1e-12);
        // the HDI's ends are labelled as the x axis's ticks are (from its offset when it has
        // one, written under the axis)
        let (hdi_tick, _) = super::panels::axis_labels(&xr, "");
        let mut ch = panel(cell, &draws.names[j], xr, 0.0..top * 1.12, "", "", false)?;
        for (c, d) in dens.into_iter().enumerate() {
            if let Some(d) = d {
                ch.draw_series(LineSeries::new(d, chain_color(c).stroke_width(1)))
                    .map_err(draw_err)?;
            }
        }
        let (lo, hi) = hdi(&pooled, HDI_PROB);
        let y = 0.02 * top;
        ch.draw_series(std::iter::once(PathElement::new(
            vec![(lo, y), (hi, y)],
            INK.stroke_width(4),
        )))
        .map_err(draw_err)?;
        ch.draw_series([lo, hi].into_iter().map(|v| {
            Text::new(
                hdi_tick(&v),
                (v, 0.09 * top),
                font(10).pos(plotters::style::text_anchor::Pos::new(
                    plotters::style::text_anchor::HPos::Center,
                    plotters::style::text_anchor::VPos::Bottom,
                )),
            )
        }))
        .map_err(draw_err)?;
    }
    Ok(())
}

/// Forest plot (ArviZ `plot_forest`): per quantity and chain (or pooled), the median as a
/// point, the 50% central interval thick and the 90% central interval thin; R-hat (rank-
/// normalised split R-hat, Vehtari et al. 2021, the summary's value) at the right.
fn forest(
    root: &Area<'_>,
    title: Option<&str>,
    draws: &Draws,
    cols: &[usize],
    combined: bool,
) -> Result<(), PlotError> {
    let (head, body) = root.split_vertically(HEAD);
    let m = draws.chains.len();
    let mut legend = if combined {
        vec![("all chains".to_string(), PALETTE[0])]
    } else {
        chain_legend(m)
    };
    legend.push(("median, 50% and 90% intervals".to_string(), BLACK));
    header(&head, title, &legend)?;
    let per = if combined { 1 } else { m };
    let slot = per as f64 + 1.0;
    let total = slot * cols.len() as f64;
    let mut rows = Vec::new();
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for &j in cols {
        let chains = draws.column(j);
        let groups: Vec<Vec<f64>> = if combined {
            vec![finite_sorted(&chains.concat())]
        } else {
            chains.iter().map(|c| finite_sorted(c)).collect()
        };
        let q: Vec<[f64; 5]> = groups
            .iter()
            .map(|g| [0.05, 0.25, 0.5, 0.75, 0.95].map(|p| quantile(g, p)))
            .collect();
        for r in &q {
            if r[0].is_finite() {
                lo = lo.min(r[0]);
                hi = hi.max(r[4]);
            }
        }
        let slices: Vec<&[f64]> = chains.iter().map(Vec::as_slice).collect();
        let rhat = crate::diagnostics::convergence::convergence(&slices)
            .map(|c| c.rhat)
            .unwrap_or(f64::NAN);
        rows.push((j, q, rhat));
    }
    let (x_tick, x_desc) = super::panels::axis_labels(&padded(lo, hi), "");
    let mut ch = ChartBuilder::on(&body)
        .margin(8)
        .margin_left(150)
        .margin_right(90)
        .x_label_area_size(if x_desc.is_empty() { 30 } else { 44 })
        .y_label_area_size(0)
        .build_cartesian_2d(padded(lo, hi), 0.0..total)
        .map_err(draw_err)?;
    let mut mesh = ch.configure_mesh();
    mesh.disable_mesh()
        .y_labels(0)
        .x_labels(6)
        .x_label_formatter(&*x_tick)
        .label_style(font(11));
    if !x_desc.is_empty() {
        mesh.x_desc(x_desc.as_str()).axis_desc_style(font(12));
    }
    mesh.draw().map_err(draw_err)?;
    let x_right = ch.x_range().end;
    for (p, (j, q, rhat)) in rows.iter().enumerate() {
        let top = total - p as f64 * slot - 0.5;
        for (c, r) in q.iter().enumerate() {
            if !r[2].is_finite() {
                continue;
            }
            let y = top - 0.5 - c as f64;
            let color = chain_color(c);
            ch.draw_series([
                PathElement::new(vec![(r[0], y), (r[4], y)], color.stroke_width(1)),
                PathElement::new(vec![(r[1], y), (r[3], y)], color.stroke_width(3)),
            ])
            .map_err(draw_err)?;
            ch.draw_series(std::iter::once(Circle::new((r[2], y), 3, color.filled())))
                .map_err(draw_err)?;
        }
        let mid = top - per as f64 / 2.0;
        let (px, py) = ch.backend_coord(&(ch.x_range().start, mid));
        let anchor = |h| {
            plotters::style::text_anchor::Pos::new(h, plotters::style::text_anchor::VPos::Center)
        };
        root.draw(&Text::new(
            draws.names[*j].clone(),
            (px - 10, py + HEAD as i32),
            font(12).pos(anchor(plotters::style::text_anchor::HPos::Right)),
        ))
        .map_err(draw_err)?;
        let (rx, _) = ch.backend_coord(&(x_right, mid));
        let rh = if rhat.is_finite() {
            format!("R̂ {rhat:.3}")
        } else {
            "R̂ –".to_string()
        };
        let style = if *rhat > 1.01 {
            font(12).color(&DIVERGENT)
        } else {
            font(12)
        };
        root.draw(&Text::new(
            rh,
            (rx + 10, py + HEAD as i32),
            style.pos(anchor(plotters::style::text_anchor::HPos::Left)),
        ))
        .map_err(draw_err)?;
    }
    Ok(())
}

/// ELBO plot: the per-iteration ELBO estimate (thin) and its smoothed value (thick) against
/// iteration; the y axis starts at the 2% quantile so early transients do not flatten the rest.
/// A `minibatch` trace holds batch estimates and, at the exit rule's checks, the smoothed
/// full-data ELBO, and the legend names them so.
fn elbo(
    root: &Area<'_>,
    title: Option<&str>,
    trace: &[(usize, f64, f64)],
    minibatch: bool,
) -> Result<(), PlotError> {
    let (head, body) = root.split_vertically(HEAD);
    let (raw_label, smoothed_label) = if minibatch {
        (
            "batch ELBO estimate (per iteration)",
            "smoothed full-data ELBO (exit rule, per epoch check)",
        )
    } else {
        ("ELBO", "smoothed ELBO")
    };
    header(
        &head,
        title,
        &[
            (raw_label.into(), PALETTE[0]),
            (smoothed_label.into(), PALETTE[1]),
        ],
    )?;
    let vals = finite_sorted(&trace.iter().flat_map(|t| [t.1, t.2]).collect::<Vec<_>>());
    if vals.is_empty() {
        return Err(PlotError::new("the ELBO trace holds no finite values"));
    }
    let yr = padded(quantile(&vals, 0.02), vals[vals.len() - 1]);
    let x0 = trace[0].0 as f64;
    let x1 = (trace[trace.len() - 1].0 as f64).max(x0 + 1.0);
    let mut ch = panel(&body, "", x0..x1, yr.clone(), "iteration", "ELBO", true)?;
    let clamp = |v: f64| v.clamp(yr.start, yr.end);
    let raw = trace
        .iter()
        .filter(|t| t.1.is_finite())
        .map(|t| (t.0 as f64, clamp(t.1)));
    ch.draw_series(LineSeries::new(raw, PALETTE[0].mix(0.6).stroke_width(1)))
        .map_err(draw_err)?;
    let sm = trace
        .iter()
        .filter(|t| t.2.is_finite())
        .map(|t| (t.0 as f64, clamp(t.2)));
    ch.draw_series(LineSeries::new(sm, PALETTE[1].stroke_width(2)))
        .map_err(draw_err)?;
    Ok(())
}

/// The columns of replicated quantity `rep` (`y_rep` itself or its elements `y_rep[1]`, …).
/// Errors: none, with the closest name or advice to add it in generated quantities.
fn rep_columns(draws: &Draws, rep: &str) -> Result<Vec<usize>, PlotError> {
    let cols: Vec<usize> = draws
        .names
        .iter()
        .enumerate()
        .filter(|(_, n)| *n == rep || n.strip_prefix(rep).is_some_and(|t| t.starts_with('[')))
        .map(|(i, _)| i)
        .collect();
    if !cols.is_empty() {
        return Ok(cols);
    }
    let bases: Vec<&str> = draws
        .names
        .iter()
        .map(|n| n.split('[').next().unwrap_or(n))
        .collect();
    let mut msg = format!(
        "the ppc plot needs replicated data `{rep}` in the draws, and they hold none; add it in \
         generated quantities (e.g. `array[N] real {rep} = normal_rng(mu, sigma);`) and refit, or \
         name it with --rep"
    );
    if let Some(s) = crate::semantics::names::best_match(rep, bases) {
        msg.push_str(&format!(" (did you mean `{s}`?)"));
    }
    Err(PlotError::new(msg))
}

/// Posterior predictive check (ArviZ `plot_ppc`): densities of up to 100 replicated data sets
/// (thin), their mean (dashed) and the observed data (thick black). Integer data with at most
/// 50 distinct values are drawn as relative frequencies over the integers instead of kernel
/// densities.
fn ppc(
    root: &Area<'_>,
    title: Option<&str>,
    draws: &Draws,
    cols: &[usize],
    observed: &[f64],
    options: &PlotOptions,
) -> Result<(), PlotError> {
    let (head, body) = root.split_vertically(HEAD);
    header(
        &head,
        title,
        &[
            (format!("observed {}", options.var), INK),
            (format!("{} (draws)", options.rep), PALETTE[0]),
            (format!("mean of {}", options.rep), PALETTE[1]),
        ],
    )?;
    let k = draws.names.len();
    let all: Vec<&[f64]> = draws.chains.iter().flat_map(|c| c.chunks(k)).collect();
    let step = all.len().div_ceil(MAX_REPS).max(1);
    let reps: Vec<Vec<f64>> = all
        .iter()
        .step_by(step)
        .map(|row| finite_sorted(&cols.iter().map(|&j| row[j]).collect::<Vec<_>>()))
        .collect();
    let obs = finite_sorted(observed);
    if obs.is_empty() {
        return Err(PlotError::new(format!(
            "the observed `{}` has no finite values",
            options.var
        )));
    }
    let lo = reps
        .iter()
        .filter_map(|r| r.first())
        .fold(obs[0], |a, &b| a.min(b));
    let hi = reps
        .iter()
        .filter_map(|r| r.last())
        .fold(obs[obs.len() - 1], |a, &b| a.max(b));
    let integer = |v: &f64| v.fract() == 0.0;
    let discrete = obs.iter().all(integer) && reps.iter().flatten().all(integer) && hi - lo <= 50.0;
    let curve = |s: &[f64]| -> Vec<(f64, f64)> {
        if discrete {
            (lo as i64..=hi as i64)
                .map(|v| {
                    let c = s.iter().filter(|&&x| x == v as f64).count();
                    (v as f64, c as f64 / s.len().max(1) as f64)
                })
                .collect()
        } else {
            kde(s, lo, hi, GRID).unwrap_or_default()
        }
    };
    let obs_curve = curve(&obs);
    let rep_curves: Vec<Vec<(f64, f64)>> = reps.iter().map(|r| curve(r)).collect();
    let mean: Vec<(f64, f64)> = (0..obs_curve.len())
        .map(|i| {
            let vals: Vec<f64> = rep_curves
                .iter()
                .filter_map(|c| c.get(i).map(|p| p.1))
                .collect();
            (
                obs_curve[i].0,
                vals.iter().sum::<f64>() / vals.len().max(1) as f64,
            )
        })
        .collect();
    let top = rep_curves
        .iter()
        .flatten()
        .chain(&obs_curve)
        .map(|p| p.1)
        .fold(0.0, f64::max)
        .max(1e-12);
    let xr = if discrete {
        (lo - 0.5)..(hi + 0.5)
    } else {
        padded(lo, hi)
    };
    let y_desc = if discrete {
        "relative frequency"
    } else {
        "density"
    };
    let mut ch = panel(
        &body,
        "",
        xr,
        0.0..top * 1.08,
        options.var.as_str(),
        y_desc,
        true,
    )?;
    for c in rep_curves {
        ch.draw_series(LineSeries::new(c, PALETTE[0].mix(0.25).stroke_width(1)))
            .map_err(draw_err)?;
    }
    ch.draw_series(LineSeries::new(obs_curve, INK.stroke_width(2)))
        .map_err(draw_err)?;
    if mean.len() > 2 {
        dashed(
            &mut ch,
            &mean,
            (mean.len() / 40).max(1),
            PALETTE[1].stroke_width(2),
        )?;
    } else {
        ch.draw_series(LineSeries::new(mean, PALETTE[1].stroke_width(2)))
            .map_err(draw_err)?;
    }
    Ok(())
}

#[cfg(test)]
mod tick_tests {
    /// A tick computed as lo + k·step that should be 0 is labelled 0, not "-2.8e-17"; a small
    /// value on a small axis keeps its digits.
    #[test]
    fn a_rounding_residue_at_zero_is_labelled_zero() {
        let f = super::super::panels::tick_on(&(-1.0..1.0));
        assert_eq!(f(&-2.8e-17), "0");
        assert_eq!(f(&0.5), "0.5");
        let g = super::super::panels::tick_on(&(-1e-6..1e-6));
        assert_eq!(g(&5e-7), "5.0e-7");
        assert_eq!(super::super::panels::tick(&-2.8e-17), "-2.8e-17");
    }

    /// A narrow axis far from 0 (123456789.123 ± 10⁻⁴): the ticks are labelled by their
    /// differences from an offset written under the axis, and every label differs; before
    /// session 21 each was "1.2e8". An axis whose values are short keeps them in full.
    #[test]
    fn a_narrow_axis_far_from_zero_is_labelled_from_an_offset() {
        use super::super::panels::{axis_labels, axis_offset, tick_on};
        let r = 123456789.1228..123456789.1232;
        let o = axis_offset(&r).expect("an offset");
        assert!((o - 123456789.123).abs() < 1e-6, "{o}");
        let (f, desc) = axis_labels(&r, "");
        assert_eq!(desc, "+123456789.123");
        let labels: Vec<String> = [123456789.1229, 123456789.123, 123456789.1231]
            .iter()
            .map(|v| f(v))
            .collect();
        assert_eq!(labels, ["-1.0e-4", "0", "1.0e-4"], "{labels:?}");
        let (_, desc) = axis_labels(&r, "mu");
        assert_eq!(desc, "mu (+123456789.123)");
        // short values: in full, with the digits the spacing needs
        assert!(axis_offset(&(0.0..10.0)).is_none());
        let (g, desc) = axis_labels(&(1.0..1.00001), "");
        assert_eq!(desc, "");
        assert_eq!(g(&1.000002), "1.000002");
        assert_eq!(tick_on(&(2e5..2.1e5))(&2.05e5), "2.05e5");
        assert_eq!(tick_on(&(2e5..2e6))(&1e6), "1.0e6");
    }
}
