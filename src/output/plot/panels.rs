//! Drawing helpers shared by the plot kinds: the ArviZ colour cycle, one panel with axes,
//! the header line (title and chain legend), padded axis ranges and dashed lines.

use std::ops::Range;

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use super::PlotError;

/// A drawing area on the SVG backend.
pub(super) type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
/// A chart with f64 axes on the SVG backend.
pub(super) type Chart<'a, 'b> =
    ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// Matplotlib's `tab10` cycle, which ArviZ's default style uses for chains (C0, C1, …).
pub(super) const PALETTE: [RGBColor; 10] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x17, 0xbe, 0xcf),
];

/// The colour of divergent transitions in the pair plot (not in the chain cycle's first
/// entries, so it stands out on blue points).
pub(super) const DIVERGENT: RGBColor = RGBColor(0xe4, 0x1a, 0x1c);

/// Near-black ink of reference marks (the uniform line of rank plots, HDI bars, observed
/// data), distinct from the pure black of the axes.
pub(super) const INK: RGBColor = RGBColor(0x22, 0x22, 0x22);

/// Height in pixels of the header line above every plot.
pub(super) const HEAD: u32 = 28;

/// The colour of chain `c` (0-based), cycling.
pub(super) fn chain_color(c: usize) -> RGBColor {
    PALETTE[c % PALETTE.len()]
}

/// A drawing error as a [`PlotError`].
pub(super) fn draw_err<E: std::fmt::Display>(e: E) -> PlotError {
    PlotError::new(format!("drawing the plot failed: {e}"))
}

/// The finite values of `x`, ascending.
pub(super) fn finite_sorted(x: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = x.iter().copied().filter(|v| v.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    v
}

/// `[lo, hi]` widened by 5% each side; a point becomes an interval of ±0.5 (or ±5% of its
/// size) so that axes never collapse.
pub(super) fn padded(lo: f64, hi: f64) -> Range<f64> {
    if hi > lo {
        let d = 0.05 * (hi - lo);
        (lo - d)..(hi + d)
    } else {
        let d = if lo == 0.0 { 0.5 } else { 0.05 * lo.abs() };
        (lo - d)..(hi + d)
    }
}

/// The text style of labels at `size` pixels.
pub(super) fn font(size: u32) -> TextStyle<'static> {
    ("sans-serif", size).into_font().color(&BLACK)
}

/// A number with about four significant digits, for tick labels.
pub(super) fn tick(v: &f64) -> String {
    let a = v.abs();
    if a != 0.0 && !(1e-3..1e5).contains(&a) {
        format!("{v:.1e}")
    } else {
        let s = format!("{:.4}", v);
        let s = if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        };
        if s == "-0" { "0".into() } else { s }
    }
}

/// The decimal place of the spacing of about 5 ticks over `span` (−4 for ticks 10⁻⁴ apart),
/// `None` for an empty or non-finite span.
fn step_place(span: f64) -> Option<i32> {
    (span.is_finite() && span > 0.0).then(|| (span / 5.0).log10().floor() as i32)
}

/// A tick label of `v` with its last digit at decimal place `place` or finer, in the style of
/// [`tick`] (plain between 10⁻³ and 10⁵, else scientific).
fn tick_resolving(v: f64, place: i32) -> String {
    let a = v.abs();
    if a != 0.0 && !(1e-3..1e5).contains(&a) {
        // significant digits from the leading one down to `place`
        let lead = a.log10().floor() as i32;
        let decimals = (lead - place).clamp(1, 16) as usize;
        format!("{v:.decimals$e}")
    } else {
        let decimals = (-place).clamp(4, 16) as usize;
        let s = format!("{v:.decimals$}");
        let s = if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        };
        if s == "-0" { "0".into() } else { s }
    }
}

/// The significant digits above which an axis's labels are written relative to an offset
/// ([`axis_offset`]) rather than in full: about 5 ticks of 9 characters fit a panel's width.
const FULL_DIGITS: i32 = 7;

/// The offset an axis spanning `range` is labelled from, when its ticks written in full would
/// need more than [`FULL_DIGITS`] significant digits (123456789.1228 to 123456789.1232):
/// `range`'s middle rounded to the decimal place above the ticks' spacing, so that the labels
/// are the small differences from it. `None` when the full values are short enough.
/// [X] session 21, tester finding: a parameter at 123456789.123 ± 10⁻⁴ had every tick
/// labelled "1.2e8".
pub(super) fn axis_offset(range: &Range<f64>) -> Option<f64> {
    let span = (range.end - range.start).abs();
    let place = step_place(span)?;
    let mid = 0.5 * (range.start + range.end);
    let a = range.start.abs().max(range.end.abs());
    if !mid.is_finite() || a == 0.0 {
        return None;
    }
    let lead = a.log10().floor() as i32;
    if lead - place + 1 <= FULL_DIGITS {
        return None;
    }
    let unit = 10f64.powi(place + 1);
    Some((mid / unit).round() * unit)
}

/// `offset` as written under its axis: "+123456789.123", with the digits down to the ticks'
/// spacing over `range`.
pub(super) fn offset_label(offset: f64, range: &Range<f64>) -> String {
    let place = step_place((range.end - range.start).abs()).unwrap_or(0);
    let decimals = (-(place + 1)).clamp(0, 16) as usize;
    let s = format!("{offset:.decimals$}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    if offset < 0.0 { s } else { format!("+{s}") }
}

/// [`tick`] on an axis spanning `range`: a value within 10⁻⁹ of the span from 0 is 0, the
/// rounding error of a tick computed as lo + k·step ([X]: fresh-user finding, session 20: a
/// pair plot labelled a tick "-2.8e-17"); and with as many digits as the ticks' spacing needs
/// to tell them apart (at least [`tick`]'s), so that a narrow axis far from 0 does not label
/// every tick alike (session 21).
pub(super) fn tick_on(range: &Range<f64>) -> impl Fn(&f64) -> String + use<> {
    let span = (range.end - range.start).abs();
    let place = step_place(span);
    move |v: &f64| {
        if v.abs() <= 1e-9 * span {
            "0".to_string()
        } else {
            match place {
                Some(p) => tick_resolving(*v, p),
                None => tick(v),
            }
        }
    }
}

/// The tick labels of an axis over `range` with its description `desc`: the values in full
/// ([`tick_on`]), or when they would be too long, their differences from [`axis_offset`], the
/// offset then appended to the description ("mu (+123456789.123)", or the offset alone).
pub(super) fn axis_labels(range: &Range<f64>, desc: &str) -> (Box<dyn Fn(&f64) -> String>, String) {
    match axis_offset(range) {
        None => (Box::new(tick_on(range)), desc.to_string()),
        Some(o) => {
            let shifted = (range.start - o)..(range.end - o);
            let f = tick_on(&shifted);
            let label = offset_label(o, range);
            // v − o carries the rounding of v (10⁻⁸ at 10⁸): rounded well below the spacing
            let q = 10f64.powi(step_place((range.end - range.start).abs()).unwrap_or(0) - 2);
            let desc = if desc.is_empty() {
                label
            } else {
                format!("{desc} ({label})")
            };
            (
                Box::new(move |v: &f64| f(&(((v - o) / q).round() * q))),
                desc,
            )
        }
    }
}

/// A chart on `area` with `caption` (may be empty), axes over `x` × `y`, `x_desc`/`y_desc`
/// labels (may be empty) and tick labels on the y axis when `y_ticks`; no grid, as ArviZ's
/// default style.
pub(super) fn panel<'a, 'b>(
    area: &'a Area<'b>,
    caption: &str,
    x: Range<f64>,
    y: Range<f64>,
    x_desc: &str,
    y_desc: &str,
    y_ticks: bool,
) -> Result<Chart<'a, 'b>, PlotError> {
    let (x_tick, x_desc) = axis_labels(&x, x_desc);
    let (y_tick, y_desc) = if y_ticks {
        axis_labels(&y, y_desc)
    } else {
        (
            Box::new(tick_on(&y)) as Box<dyn Fn(&f64) -> String>,
            y_desc.to_string(),
        )
    };
    let mut b = ChartBuilder::on(area);
    b.margin(6)
        .x_label_area_size(if x_desc.is_empty() { 22 } else { 36 })
        .y_label_area_size(match (y_ticks, y_desc.is_empty()) {
            (true, _) => 52,
            (false, false) => 20,
            (false, true) => 6,
        });
    if !caption.is_empty() {
        b.caption(caption, font(14));
    }
    let mut chart = b.build_cartesian_2d(x, y).map_err(draw_err)?;
    let mut mesh = chart.configure_mesh();
    mesh.disable_mesh()
        .x_labels(5)
        .y_labels(if y_ticks { 5 } else { 0 })
        .x_label_formatter(&*x_tick)
        .y_label_formatter(&*y_tick)
        .label_style(font(11));
    if !x_desc.is_empty() {
        mesh.x_desc(x_desc.as_str());
    }
    if !y_desc.is_empty() {
        mesh.y_desc(y_desc.as_str());
    }
    mesh.axis_desc_style(font(12)).draw().map_err(draw_err)?;
    Ok(chart)
}

/// The header line: `title` (if any) at the left, then `legend` entries as coloured words.
pub(super) fn header(
    area: &Area<'_>,
    title: Option<&str>,
    legend: &[(String, RGBColor)],
) -> Result<(), PlotError> {
    let mut x = 8;
    if let Some(t) = title {
        area.draw(&Text::new(t.to_string(), (x, 8), font(13)))
            .map_err(draw_err)?;
        x += (t.chars().count() as i32) * 7 + 20;
    }
    for (label, color) in legend {
        area.draw(&Text::new(label.clone(), (x, 8), font(12).color(color)))
            .map_err(draw_err)?;
        x += (label.chars().count() as i32) * 7 + 14;
    }
    Ok(())
}

/// The legend entries `chain 1`, `chain 2`, … in the chains' colours.
pub(super) fn chain_legend(m: usize) -> Vec<(String, RGBColor)> {
    (0..m)
        .map(|c| (format!("chain {}", c + 1), chain_color(c)))
        .collect()
}

/// Draws the polyline through `points` dashed (pieces of `on` segments, every other one drawn).
pub(super) fn dashed(
    chart: &mut Chart<'_, '_>,
    points: &[(f64, f64)],
    on: usize,
    style: ShapeStyle,
) -> Result<(), PlotError> {
    let pieces: Vec<Vec<(f64, f64)>> = points
        .windows(2)
        .collect::<Vec<_>>()
        .chunks(on.max(1))
        .step_by(2)
        .map(|c| {
            let mut v: Vec<(f64, f64)> = c.iter().map(|w| w[0]).collect();
            v.push(c[c.len() - 1][1]);
            v
        })
        .collect();
    chart
        .draw_series(pieces.into_iter().map(|p| PathElement::new(p, style)))
        .map_err(draw_err)?;
    Ok(())
}

/// Evenly spaced points between `a` and `b` (`n` ≥ 2), for dashing straight lines.
pub(super) fn segment(a: (f64, f64), b: (f64, f64), n: usize) -> Vec<(f64, f64)> {
    (0..n)
        .map(|i| {
            let t = i as f64 / (n - 1) as f64;
            (a.0 + t * (b.0 - a.0), a.1 + t * (b.1 - a.1))
        })
        .collect()
}
