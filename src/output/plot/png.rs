//! PNG output: the plot's SVG rendered to pixels with `resvg`, its text set in DejaVu Sans
//! (`assets/fonts/DejaVuSans.ttf`, Bitstream Vera licence beside it), embedded in the binary,
//! so no system font or fontconfig is needed. The picture is the SVG's, at its size in pixels
//! (the plots are drawn at 1 px per SVG unit), on a white background.

use std::path::Path;
use std::sync::Arc;

use super::PlotError;

/// The embedded font (DejaVu Sans Book).
const FONT: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans.ttf");

/// Renders `svg` (as [`super::render_svg`] makes it) to a PNG image; returns the encoded file
/// and its width and height in pixels.
///
/// Errors: an SVG that cannot be parsed, an empty size, or a failure to encode.
pub fn svg_to_png(svg: &str) -> Result<(Vec<u8>, u32, u32), PlotError> {
    use resvg::{tiny_skia, usvg};
    let mut db = usvg::fontdb::Database::new();
    db.load_font_data(FONT.to_vec());
    // the plots ask for `sans-serif`
    db.set_sans_serif_family("DejaVu Sans");
    let options = usvg::Options {
        fontdb: Arc::new(db),
        font_family: "DejaVu Sans".to_string(),
        ..usvg::Options::default()
    };
    let tree = usvg::Tree::from_str(svg, &options)
        .map_err(|e| PlotError::new(format!("cannot render the plot as PNG: {e}")))?;
    let size = tree.size().to_int_size();
    let (w, h) = (size.width(), size.height());
    let mut pixmap = tiny_skia::Pixmap::new(w, h)
        .ok_or_else(|| PlotError::new(format!("cannot make a {w}×{h} image")))?;
    pixmap.fill(tiny_skia::Color::WHITE);
    resvg::render(&tree, tiny_skia::Transform::default(), &mut pixmap.as_mut());
    let png = pixmap
        .encode_png()
        .map_err(|e| PlotError::new(format!("cannot encode the PNG: {e}")))?;
    Ok((png, w, h))
}

/// Renders `svg` and writes it to `path` as PNG, atomically. Errors: as [`svg_to_png`], or the
/// write's, naming the file.
pub fn write_png(path: &Path, svg: &str) -> Result<(), PlotError> {
    let (png, _, _) = svg_to_png(svg)?;
    crate::output::write_atomic(path, |w| w.write_all(&png))
        .map_err(|e| PlotError::new(format!("cannot write `{}`: {e}", path.display())))
}
