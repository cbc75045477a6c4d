//! PNG plots: `bayesc plot … -o out.png` renders the SVG with an embedded font; the image has
//! the SVG's size, is not blank, and has text where the SVG has its title.

use std::process::Command;

use bayesc::inference::Draws;
use bayesc::output::plot::{self, PlotInput, PlotKind, PlotOptions};
use resvg::tiny_skia::Pixmap;

/// Two chains × 200 draws of (a, b): a sine wave plus a ramp, deterministic.
fn draws() -> Draws {
    let chain = |phase: f64| -> Vec<f64> {
        (0..200)
            .flat_map(|i| {
                let t = i as f64 / 10.0;
                [(t + phase).sin(), 0.01 * t + (3.0 * t).cos()]
            })
            .collect()
    };
    Draws {
        names: vec!["a".into(), "b".into()],
        chains: vec![chain(0.0), chain(1.3)],
    }
}

/// The `width="…"` and `height="…"` of an SVG document's root.
fn svg_size(svg: &str) -> (u32, u32) {
    let attr = |name: &str| -> u32 {
        let key = format!("{name}=\"");
        let start = svg.find(&key).expect("size attribute") + key.len();
        svg[start..]
            .split('"')
            .next()
            .and_then(|v| v.trim_end_matches("px").parse::<f64>().ok())
            .expect("a number") as u32
    };
    (attr("width"), attr("height"))
}

/// Pixels darker than light grey in the rows `rows` of `img`.
fn dark_pixels(img: &Pixmap, rows: std::ops::Range<u32>) -> usize {
    let w = img.width();
    rows.flat_map(|y| (0..w).map(move |x| (x, y)))
        .filter(|&(x, y)| {
            let p = img.pixel(x, y).expect("in range");
            (p.red() as u32 + p.green() as u32 + p.blue() as u32) < 3 * 160
        })
        .count()
}

#[test]
fn trace_plot_renders_to_a_png_of_the_svg_size_with_text() {
    let d = draws();
    let input = PlotInput {
        draws: Some(&d),
        divergent: None,
        elbo: None,
        observed: None,
    };
    let mut options = PlotOptions::new(PlotKind::Trace);
    options.title = Some("TITLE TEXT".into());
    let svg = plot::render_svg(&input, &options).expect("renders");
    let (png, w, h) = plot::png::svg_to_png(&svg).expect("png");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert_eq!((w, h), svg_size(&svg));
    let img = Pixmap::decode_png(&png).expect("decodes");
    assert_eq!((img.width(), img.height()), (w, h));
    // not blank: the lines, axes and labels cover a share of the picture
    let total = (w * h) as usize;
    let dark = dark_pixels(&img, 0..h);
    assert!(dark > total / 200, "{dark} of {total} pixels drawn");
    // and not all ink either
    assert!(dark < total / 2, "{dark} of {total}");
    // the picture is colour: the chains' lines are not grey
    let coloured = (0..h)
        .flat_map(|y| (0..w).map(move |x| (x, y)))
        .filter(|&(x, y)| {
            let p = img.pixel(x, y).unwrap();
            let (r, g, b) = (p.red() as i32, p.green() as i32, p.blue() as i32);
            (r - g).abs() > 60 || (g - b).abs() > 60 || (r - b).abs() > 60
        })
        .count();
    assert!(coloured > 100, "{coloured} coloured pixels");
    // the same plot without a title has less ink in the top rows: the font drew the text
    options.title = None;
    let plain = plot::render_svg(&input, &options).unwrap();
    let (png2, w2, h2) = plot::png::svg_to_png(&plain).unwrap();
    let img2 = Pixmap::decode_png(&png2).unwrap();
    let top = 0..(h.min(h2) / 20).max(10);
    assert!(
        dark_pixels(&img, top.clone()) > dark_pixels(&img2, top.clone()) + 20,
        "title ink {} vs {} ({w2}×{h2})",
        dark_pixels(&img, top.clone()),
        dark_pixels(&img2, top)
    );
}

#[test]
fn bayesc_plot_writes_png_files() {
    let dir = tempfile::tempdir().unwrap();
    // two chains in Stan's CSV layout
    for c in 1..=2 {
        let mut t = String::from("lp__,accept_stat__,mu,sigma\n");
        for i in 0..100 {
            let x = i as f64 / 7.0 + c as f64;
            t.push_str(&format!(
                "{},{},{},{}\n",
                -x.sin(),
                0.9,
                x.sin(),
                1.0 + 0.1 * x.cos()
            ));
        }
        std::fs::write(dir.path().join(format!("d_{c}.csv")), t).unwrap();
    }
    for kind in ["trace", "rank", "density", "forest"] {
        let out = dir.path().join(format!("{kind}.png"));
        let o = Command::new(env!("CARGO_BIN_EXE_bayesc"))
            .args(["plot", "d_1.csv", "d_2.csv", "--kind", kind, "-o"])
            .arg(&out)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{kind}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let bytes = std::fs::read(&out).unwrap();
        let img = Pixmap::decode_png(&bytes).expect("a PNG");
        assert!(img.width() >= 200 && img.height() >= 100, "{kind}");
        assert!(dark_pixels(&img, 0..img.height()) > 500, "{kind}: blank");
    }
}
