//! PNG rendering of the SVG figures (resvg), at twice the SVG's size. Every text is drawn with
//! the embedded DejaVu Sans subset (`assets/DejaVuSans-subset.ttf`, its license beside it), so a
//! PNG has its labels on any machine and the same SVG gives the same bytes everywhere.
use crate::error::{Result, RunError};
use resvg::{tiny_skia, usvg};
use std::sync::{Arc, OnceLock};

/// The font of every text in a PNG.
static FONT: &[u8] = include_bytes!("../../assets/DejaVuSans-subset.ttf");
const FAMILY: &str = "DejaVu Sans";

/// Pixels of the PNG per SVG unit.
pub const SCALE: f32 = 2.0;

fn fonts() -> Arc<usvg::fontdb::Database> {
    static DB: OnceLock<Arc<usvg::fontdb::Database>> = OnceLock::new();
    DB.get_or_init(|| {
        let mut db = usvg::fontdb::Database::new();
        db.load_font_data(FONT.to_vec());
        db.set_sans_serif_family(FAMILY);
        db.set_serif_family(FAMILY);
        db.set_monospace_family(FAMILY);
        db.set_cursive_family(FAMILY);
        db.set_fantasy_family(FAMILY);
        Arc::new(db)
    })
    .clone()
}

fn err<E: std::fmt::Display>(e: E) -> RunError {
    RunError::Refused(format!("rendering a figure to PNG failed: {e}"))
}

/// The PNG bytes of an SVG figure.
pub fn render(svg: &str) -> Result<Vec<u8>> {
    let opt = usvg::Options {
        font_family: FAMILY.into(),
        fontdb: fonts(),
        ..usvg::Options::default()
    };
    let tree = usvg::Tree::from_str(svg, &opt).map_err(err)?;
    let size = tree
        .size()
        .to_int_size()
        .scale_by(SCALE)
        .ok_or_else(|| err("empty figure"))?;
    let mut pixmap =
        tiny_skia::Pixmap::new(size.width(), size.height()).ok_or_else(|| err("empty figure"))?;
    pixmap.fill(tiny_skia::Color::WHITE);
    resvg::render(
        &tree,
        tiny_skia::Transform::from_scale(SCALE, SCALE),
        &mut pixmap.as_mut(),
    );
    pixmap.encode_png().map_err(err)
}

/// A decoded PNG: width, height and RGBA pixels (for tests and checks).
pub fn decode(png: &[u8]) -> Result<(u32, u32, Vec<u8>)> {
    let p = tiny_skia::Pixmap::decode_png(png).map_err(err)?;
    Ok((p.width(), p.height(), p.data().to_vec()))
}
