//! The figures icl writes (plotters draws SVG; [`png`] rasterises it): line figures of one or
//! more panels with log or linear axes whose every tick is labelled readably ([`ticks`]), error
//! bars and markers, and heatmaps. [`figures`] builds icl's own figures (loss, omega/mu
//! trajectories, risk against L'). A path ending in `.png` gets a PNG, any other an SVG; every
//! file is written atomically.
pub mod figures;
pub mod png;
pub mod ticks;

use crate::error::{Result, RunError};
use plotters::coord::ranged1d::{KeyPointHint, NoDefaultFormatting, Ranged, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::ops::Range;
use std::path::Path;
pub use ticks::Labels;

fn perr<E: std::fmt::Display>(e: E) -> RunError {
    RunError::Refused(format!("plotting failed: {e}"))
}

/// A matrix to draw as a heatmap: title, rows, cols, row-major values; `None` cells are masked
/// (drawn light grey, without a number; `note` says why).
pub struct Heatmap {
    pub title: String,
    pub rows: usize,
    pub cols: usize,
    pub values: Vec<Option<f64>>,
    /// A label per row, a label per column (shorter lists: the rest numbered from 1).
    pub row_labels: Vec<String>,
    pub col_labels: Vec<String>,
    /// The colour scale: maps with the same scale name share one symmetric scale and one
    /// colour bar, named so.
    pub scale: String,
    /// What the rows, columns and masked cells are, printed once under the figure.
    pub note: String,
}

impl Heatmap {
    /// A map with numbered rows and columns on scale `scale`, without a note.
    pub fn new(
        title: impl Into<String>,
        rows: usize,
        cols: usize,
        values: Vec<Option<f64>>,
    ) -> Self {
        Heatmap {
            title: title.into(),
            rows,
            cols,
            values,
            row_labels: Vec::new(),
            col_labels: Vec::new(),
            scale: String::new(),
            note: String::new(),
        }
    }
    /// The same map with these row and column labels.
    pub fn labelled(mut self, rows: Vec<String>, cols: Vec<String>) -> Self {
        self.row_labels = rows;
        self.col_labels = cols;
        self
    }
    /// The same map on the colour scale named `scale`.
    pub fn on_scale(mut self, scale: impl Into<String>) -> Self {
        self.scale = scale.into();
        self
    }
    /// The same map with a note under the figure.
    pub fn noted(mut self, note: impl Into<String>) -> Self {
        self.note = note.into();
        self
    }
    fn value(&self, r: usize, c: usize) -> Option<f64> {
        self.values
            .get(r * self.cols + c)
            .copied()
            .flatten()
            .filter(|v| v.is_finite())
    }
    fn label(list: &[String], i: usize) -> String {
        list.get(i).cloned().unwrap_or_else(|| (i + 1).to_string())
    }
}

/// The labels of a token's components: `x₁ … x_d`, then `y` (or `y₁ … y_n` for several
/// outputs), as the papers write them.
pub fn token_labels(d: usize, n_out: usize) -> Vec<String> {
    let mut v: Vec<String> = (1..=d).map(|i| format!("x{}", subscript(i))).collect();
    if n_out == 1 {
        v.push("y".into());
    } else {
        v.extend((1..=n_out).map(|i| format!("y{}", subscript(i))));
    }
    v
}

/// `i` in subscript digits (`12` -> `₁₂`).
pub fn subscript(i: usize) -> String {
    i.to_string()
        .chars()
        .map(|c| char::from_u32(0x2080 + c.to_digit(10).unwrap_or(0)).unwrap_or(c))
        .collect()
}

fn color(v: f64, vmax: f64) -> RGBColor {
    // blue-white-red, symmetric around 0
    let t = (v / vmax).clamp(-1.0, 1.0);
    let (r, g, b) = if t >= 0.0 {
        (255.0, 255.0 * (1.0 - t), 255.0 * (1.0 - t))
    } else {
        (255.0 * (1.0 + t), 255.0 * (1.0 + t), 255.0)
    };
    RGBColor(r as u8, g as u8, b as u8)
}

/// A cell's number with the decimals its scale needs; one that rounds to zero is `0` (never
/// `-0.00`).
fn cell_text(v: f64, vmax: f64) -> String {
    let dec = if vmax >= 10.0 {
        1
    } else if vmax >= 0.1 {
        2
    } else {
        3
    };
    let s = format!("{v:.dec$}");
    if s.parse::<f64>().is_ok_and(|x| x == 0.0) {
        "0".into()
    } else {
        s
    }
}

/// The symmetric colour range of each scale of `maps` (largest |value|), in first-use order.
fn heat_scales(maps: &[Heatmap]) -> Vec<(String, f64)> {
    let mut scales: Vec<(String, f64)> = Vec::new();
    for m in maps {
        let vmax = (0..m.rows * m.cols)
            .filter_map(|k| m.value(k / m.cols.max(1), k % m.cols.max(1)))
            .fold(0.0f64, |a, v| a.max(v.abs()));
        match scales.iter_mut().find(|s| s.0 == m.scale) {
            Some(s) => s.1 = s.1.max(vmax),
            None => scales.push((m.scale.clone(), vmax)),
        }
    }
    for s in &mut scales {
        if !(s.1 > 0.0) {
            s.1 = 1.0;
        }
    }
    scales
}

/// Draw heatmaps in rows (a new row when the next would pass 1600 pixels): each with its title,
/// row and column labels and its numbers (matrices up to 12 x 12); maps of the same scale share
/// one symmetric blue-white-red scale, shown by a labelled colour bar at the right; the notes
/// of the maps under the figure.
pub fn heatmaps_svg(path: &Path, maps: &[Heatmap]) -> Result<()> {
    write_svg_text(path, &heatmaps_text(maps)?)
}

/// The SVG text of [`heatmaps_svg`].
pub fn heatmaps_text(maps: &[Heatmap]) -> Result<String> {
    if maps.is_empty() {
        return Err(RunError::Refused("no heatmap to draw".into()));
    }
    let big = maps.iter().any(|m| m.rows.max(m.cols) > 12);
    let cell: i32 = if big { 22 } else { 44 };
    let (label_w, title_h, gap) = (34i32, 48i32, 28i32);
    let scales = heat_scales(maps);
    let bar_w = 110i32 * scales.len() as i32;
    // lay the maps out in rows
    let mut placed: Vec<(i32, i32)> = Vec::new();
    let (mut x, mut y, mut row_h, mut width) = (10i32, 10i32, 0i32, 0i32);
    for m in maps {
        let (w, h) = (
            label_w + cell * m.cols as i32,
            title_h + cell * m.rows as i32,
        );
        if x > 10 && x + w > 1600 {
            x = 10;
            y += row_h + gap;
            row_h = 0;
        }
        placed.push((x, y));
        x += w + gap;
        width = width.max(x);
        row_h = row_h.max(h);
    }
    let mut notes: Vec<&str> = Vec::new();
    for m in maps {
        if !m.note.is_empty() && !notes.contains(&m.note.as_str()) {
            notes.push(&m.note);
        }
    }
    let maps_h = y + row_h;
    let height = (maps_h.max(240) + 20 + 20 * notes.len() as i32) as u32;
    let width = (width + bar_w + 10) as u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(perr)?;
        let font = |px: u32| ("sans-serif", px).into_font();
        for (m, &(x0, y0)) in maps.iter().zip(&placed) {
            let vmax = scales.iter().find(|s| s.0 == m.scale).map_or(1.0, |s| s.1);
            root.draw(&Text::new(m.title.clone(), (x0, y0), font(15)))
                .map_err(perr)?;
            let (gx, gy) = (x0 + label_w, y0 + title_h);
            let small = font(if big { 10 } else { 13 });
            for c in 0..m.cols {
                root.draw(&Text::new(
                    Heatmap::label(&m.col_labels, c),
                    (gx + c as i32 * cell + cell / 2 - 6, gy - 18),
                    small.clone(),
                ))
                .map_err(perr)?;
            }
            for r in 0..m.rows {
                root.draw(&Text::new(
                    Heatmap::label(&m.row_labels, r),
                    (x0 + 2, gy + r as i32 * cell + cell / 2 - 7),
                    small.clone(),
                ))
                .map_err(perr)?;
                for c in 0..m.cols {
                    let (x, y) = (gx + c as i32 * cell, gy + r as i32 * cell);
                    let v = m.value(r, c);
                    let fill = v.map_or(RGBColor(225, 225, 225), |v| color(v, vmax));
                    let rect = [(x, y), (x + cell, y + cell)];
                    root.draw(&Rectangle::new(rect, fill.filled()))
                        .map_err(perr)?;
                    root.draw(&Rectangle::new(rect, BLACK.mix(0.3).stroke_width(1)))
                        .map_err(perr)?;
                    if let (Some(v), false) = (v, big) {
                        let ink = if v.abs() > 0.6 * vmax { &WHITE } else { &BLACK };
                        let t = cell_text(v, vmax);
                        let tw = 7 * t.chars().count() as i32;
                        root.draw(&Text::new(
                            t,
                            (x + (cell - tw) / 2, y + cell / 2 - 7),
                            font(12).color(ink),
                        ))
                        .map_err(perr)?;
                    }
                }
            }
        }
        // one colour bar per scale
        let bar_x0 = width as i32 - bar_w;
        for (k, (name, vmax)) in scales.iter().enumerate() {
            let (bx, by, bh) = (bar_x0 + 110 * k as i32, 10 + title_h, 160i32);
            root.draw(&Text::new(
                if name.is_empty() {
                    "value".to_string()
                } else {
                    name.clone()
                },
                (bx, 10),
                font(14),
            ))
            .map_err(perr)?;
            let steps = 40;
            for i in 0..steps {
                let t = 1.0 - 2.0 * (i as f64 + 0.5) / steps as f64;
                let y = by + bh * i / steps;
                root.draw(&Rectangle::new(
                    [(bx, y), (bx + 18, by + bh * (i + 1) / steps)],
                    color(t * vmax, *vmax).filled(),
                ))
                .map_err(perr)?;
            }
            root.draw(&Rectangle::new(
                [(bx, by), (bx + 18, by + bh)],
                BLACK.mix(0.5),
            ))
            .map_err(perr)?;
            for (v, y) in [(*vmax, by), (0.0, by + bh / 2), (-vmax, by + bh)] {
                root.draw(&PathElement::new(vec![(bx + 18, y), (bx + 23, y)], BLACK))
                    .map_err(perr)?;
                root.draw(&Text::new(cell_text(v, *vmax), (bx + 26, y - 7), font(12)))
                    .map_err(perr)?;
            }
        }
        for (i, n) in notes.iter().enumerate() {
            root.draw(&Text::new(
                n.to_string(),
                (10, maps_h.max(240) + 4 + 20 * i as i32),
                font(13),
            ))
            .map_err(perr)?;
        }
        root.present().map_err(perr)?;
    }
    Ok(svg)
}

/// Write SVG text to `path`, or its PNG rendering when `path` ends in `.png`.
pub fn write_svg_text(path: &Path, svg: &str) -> Result<()> {
    crate::folder::atomic_write(path, &file_bytes(path, svg)?)
}

/// A figure's file name must end in `.svg` or `.png` (any case): icl writes those two formats
/// and nothing else (a `.pdf` would get SVG text inside).
pub fn check_figure_path(path: &Path) -> Result<()> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    if ext.eq_ignore_ascii_case("svg") || ext.eq_ignore_ascii_case("png") {
        return Ok(());
    }
    Err(crate::error::RunError::Refused(format!(
        "{}: a figure is written as .svg or .png (for a PDF convert the SVG, e.g. `rsvg-convert -f pdf`)",
        path.display()
    )))
}

/// The bytes [`write_svg_text`] writes to `path`: the SVG text, or its PNG rendering when
/// `path` ends in `.png`; other names are refused ([`check_figure_path`]).
pub fn file_bytes(path: &Path, svg: &str) -> Result<Vec<u8>> {
    check_figure_path(path)?;
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("png"))
    {
        png::render(svg)
    } else {
        Ok(svg.as_bytes().to_vec())
    }
}

/// The scale of an axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    Linear,
    /// Base 10; values <= 0 are left out.
    Log,
}

/// An axis: its label, scale and tick labels.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    pub label: String,
    pub scale: Scale,
    pub labels: Labels,
    /// The labelled ticks, when they are given (e.g. the evaluated lengths); used when every
    /// two are far enough apart to be read, otherwise the automatic ticks are.
    pub ticks: Option<Vec<f64>>,
    /// The highest value the axis shows (a y axis): where the data go higher, the axis ends
    /// there and the lines leave the plot at its top edge (points above it are not drawn).
    pub max: Option<f64>,
}

impl Axis {
    /// A linear axis of numbers.
    pub fn linear(label: &str) -> Axis {
        Axis {
            label: label.into(),
            scale: Scale::Linear,
            labels: Labels::Number,
            ticks: None,
            max: None,
        }
    }
    /// A log axis of numbers.
    pub fn log(label: &str) -> Axis {
        Axis {
            scale: Scale::Log,
            ..Axis::linear(label)
        }
    }
    /// Log when every value is positive and they span at least `ratio` (max / min), else linear.
    pub fn auto(label: &str, values: impl IntoIterator<Item = f64>, ratio: f64) -> Axis {
        let (mut lo, mut hi, mut any) = (f64::INFINITY, f64::NEG_INFINITY, false);
        for v in values.into_iter().filter(|v| v.is_finite()) {
            lo = lo.min(v);
            hi = hi.max(v);
            any = true;
        }
        if any && lo > 0.0 && hi / lo >= ratio {
            Axis::log(label)
        } else {
            Axis::linear(label)
        }
    }
    /// The same axis labelled at `ticks` where they are far enough apart.
    pub fn with_ticks(mut self, ticks: Vec<f64>) -> Axis {
        self.ticks = Some(ticks);
        self
    }
    /// The same axis ending at `max` at most (see [`Axis::max`]).
    pub fn with_max(mut self, max: f64) -> Axis {
        self.max = Some(max);
        self
    }
    /// The same axis with integer / SI tick labels (training steps).
    pub fn steps(mut self) -> Axis {
        self.labels = Labels::Steps;
        self
    }
}

/// How a series' line is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dash {
    Solid,
    /// Short dashes (a reference level, a closed form beside a measurement).
    Dashed,
    /// Dots.
    Dotted,
    /// Long dashes.
    Long,
}

impl Dash {
    /// Every style, in the order [`Series::styled`] cycles through them.
    pub const ALL: [Dash; 4] = [Dash::Solid, Dash::Dashed, Dash::Dotted, Dash::Long];
    /// Dash and gap lengths in pixels (`None`: solid).
    fn pattern(self) -> Option<(u32, u32)> {
        match self {
            Dash::Solid => None,
            Dash::Dashed => Some((7, 4)),
            Dash::Dotted => Some((2, 3)),
            Dash::Long => Some((14, 4)),
        }
    }
    /// The pieces of a 22-pixel legend line.
    fn legend_pieces(self) -> &'static [(i32, i32)] {
        match self {
            Dash::Solid => &[(0, 22)],
            Dash::Dashed => &[(0, 6), (9, 14), (17, 22)],
            Dash::Dotted => &[(0, 2), (5, 7), (10, 12), (15, 17), (20, 22)],
            Dash::Long => &[(0, 9), (13, 22)],
        }
    }
}

/// The shape of a series' point markers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    Circle,
    Square,
    Triangle,
    Diamond,
    /// A triangle pointing down.
    Down,
    /// A plus sign.
    Plus,
}

impl Shape {
    /// Every shape, in the order [`Series::styled`] cycles through them.
    pub const ALL: [Shape; 6] = [
        Shape::Circle,
        Shape::Square,
        Shape::Triangle,
        Shape::Diamond,
        Shape::Down,
        Shape::Plus,
    ];
    /// The marker: the closed outline, unfilled, so that markers of several series on one point
    /// all show (ridge's under OLS's where the two agree).
    fn marker(self, col: RGBColor) -> PathElement<(i32, i32)> {
        let mut pts = self.outline();
        pts.push(pts[0]);
        PathElement::new(pts, col.stroke_width(2))
    }
    /// The outline, in pixels around the point (about 8 pixels across).
    fn outline(self) -> Vec<(i32, i32)> {
        match self {
            Shape::Circle => vec![
                (4, 0),
                (3, 3),
                (0, 4),
                (-3, 3),
                (-4, 0),
                (-3, -3),
                (0, -4),
                (3, -3),
            ],
            Shape::Square => vec![(-3, -3), (3, -3), (3, 3), (-3, 3)],
            Shape::Triangle => vec![(0, -5), (4, 3), (-4, 3)],
            Shape::Diamond => vec![(0, -5), (4, 0), (0, 5), (-4, 0)],
            Shape::Down => vec![(0, 5), (4, -3), (-4, -3)],
            Shape::Plus => vec![
                (-1, -5),
                (1, -5),
                (1, -1),
                (5, -1),
                (5, 1),
                (1, 1),
                (1, 5),
                (-1, 5),
                (-1, 1),
                (-5, 1),
                (-5, -1),
                (-1, -1),
            ],
        }
    }
}

/// A named series of (x, y) points.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// How the line is drawn.
    pub dash: Dash,
    /// Error bars: half-widths, one per point (empty: none).
    pub err: Vec<f64>,
    /// Mark every point (otherwise only points far from their neighbours are marked, so a
    /// sparse stretch of a curve shows where its points are).
    pub markers: bool,
    /// The markers' shape.
    pub shape: Shape,
    /// The colour (an index into the palette); `None`: the series' own index.
    pub color: Option<usize>,
    /// Draw the points only, without a line between them.
    pub scatter: bool,
}

impl Series {
    /// A solid line.
    pub fn line(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            points,
            dash: Dash::Solid,
            err: Vec::new(),
            markers: false,
            shape: Shape::Circle,
            color: None,
            scatter: false,
        }
    }
    /// A dashed line.
    pub fn dashed(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series::line(name, points).with_dash(Dash::Dashed)
    }
    /// A horizontal dashed reference at `y` from `x0` to `x1`.
    pub fn level(name: impl Into<String>, y: f64, x0: f64, x1: f64) -> Series {
        Series::dashed(name, vec![(x0, y), (x1, y)])
    }
    /// Points only (every point marked, no line), e.g. one per seed.
    pub fn points(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series {
            scatter: true,
            markers: true,
            ..Series::line(name, points)
        }
    }
    /// Points with markers and error bars of half-width `err` (one per point).
    pub fn with_errors(mut self, err: Vec<f64>) -> Series {
        self.err = err;
        self.markers = true;
        self
    }
    /// The same series drawn with `dash`.
    pub fn with_dash(mut self, dash: Dash) -> Series {
        self.dash = dash;
        self
    }
    /// The same series in palette colour `i`.
    pub fn with_color(mut self, i: usize) -> Series {
        self.color = Some(i);
        self
    }
    /// The same series with every point marked by `shape`.
    pub fn with_shape(mut self, shape: Shape) -> Series {
        self.shape = shape;
        self.markers = true;
        self
    }
    /// The `k`-th of several series that may lie on top of each other: its own line style and
    /// marker shape, so that one hidden under another still shows.
    pub fn styled(self, k: usize) -> Series {
        self.with_dash(Dash::ALL[k % Dash::ALL.len()])
            .with_shape(Shape::ALL[k % Shape::ALL.len()])
    }
}

/// One chart: a title, two axes and its series.
#[derive(Debug, Clone, PartialEq)]
pub struct Panel {
    pub title: String,
    pub x: Axis,
    pub y: Axis,
    pub series: Vec<Series>,
}

/// Panels stacked top to bottom, each `width` x `height` pixels (of the SVG; the PNG doubles
/// them).
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    pub panels: Vec<Panel>,
    pub width: u32,
    pub height: u32,
}

/// Colour-blind-friendly (Tableau 10, its light yellow darkened to olive for contrast on white),
/// in series order.
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(128, 128, 0),
    RGBColor(23, 190, 207),
];

/// Every series colour, in order (for tests and legends drawn elsewhere).
pub fn palette(i: usize) -> (u8, u8, u8) {
    let c = PALETTE[i % PALETTE.len()];
    (c.0, c.1, c.2)
}

/// An axis in plotters' terms: its range, scale, ticks and labels.
#[derive(Debug, Clone)]
struct Coord {
    lo: f64,
    hi: f64,
    log: bool,
    labels: Labels,
    ticks: ticks::Ticks,
    decimals: usize,
}

impl Coord {
    fn new(axis: &Axis, (lo, hi): (f64, f64)) -> Coord {
        let log = axis.scale == Scale::Log;
        let t = if log {
            ticks::log_ticks(lo, hi)
        } else {
            ticks::Ticks {
                major: ticks::linear_ticks(lo, hi),
                minor: Vec::new(),
            }
        };
        let decimals = if log { 0 } else { ticks::decimals(&t.major) };
        let mut c = Coord {
            lo,
            hi,
            log,
            labels: axis.labels,
            ticks: t,
            decimals,
        };
        if let Some(given) = &axis.ticks {
            let mut g: Vec<f64> = given
                .iter()
                .copied()
                .filter(|&v| usable(axis, v) && v >= lo && v <= hi)
                .collect();
            g.sort_by(f64::total_cmp);
            g.dedup();
            // labels about 5% of the axis wide: keep them apart
            let apart = g.windows(2).all(|w| c.frac(w[1]) - c.frac(w[0]) >= 0.05);
            if g.len() >= 2 && apart {
                c.ticks.minor.retain(|v| !g.contains(v));
                c.ticks.major = g;
            }
        }
        c
    }
    /// Where `v` falls on the axis, 0 at `lo` and 1 at `hi` (clamped to -1..2).
    fn frac(&self, v: f64) -> f64 {
        let t = if self.log {
            (v.max(self.lo * 1e-3).ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        if t.is_nan() {
            0.0
        } else {
            t.clamp(-1.0, 2.0)
        }
    }
    fn label(&self, v: f64) -> String {
        match self.labels {
            Labels::Steps => ticks::si(v),
            Labels::Number if self.log => ticks::number(v, None),
            // a whole number without decimals (`1`, not `1.0`, beside `0.8`)
            Labels::Number if v.fract() == 0.0 => ticks::number(v, Some(0)),
            Labels::Number => ticks::number(v, Some(self.decimals)),
        }
    }
}

impl Ranged for Coord {
    type FormatOption = NoDefaultFormatting;
    type ValueType = f64;
    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        limit.0 + (self.frac(*v) * (limit.1 - limit.0) as f64).round() as i32
    }
    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            self.ticks.minor.clone()
        } else {
            self.ticks.major.clone()
        }
    }
    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}

impl ValueFormatter<f64> for Coord {
    fn format_ext(&self, v: &f64) -> String {
        self.label(*v)
    }
}

fn usable(axis: &Axis, v: f64) -> bool {
    v.is_finite() && (axis.scale == Scale::Linear || v > 0.0)
}

/// The range of an axis over `values` (with a margin); `None` if no value is usable.
fn range(axis: &Axis, values: impl Iterator<Item = f64>, pad: f64) -> Option<(f64, f64)> {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|&v| usable(axis, v)) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return None;
    }
    Some(match axis.scale {
        Scale::Log => {
            if hi <= lo {
                (lo / 2.0, hi * 2.0)
            } else {
                let f = (hi / lo).powf(pad).max(1.02);
                (lo / f, hi * f)
            }
        }
        Scale::Linear => {
            if hi <= lo {
                let w = if lo == 0.0 { 1.0 } else { 0.1 * lo.abs() };
                (lo - w, hi + w)
            } else {
                let w = pad * (hi - lo);
                (lo - w, hi + w)
            }
        }
    })
}

/// The points of a series that can be drawn on these axes, with their error half-widths.
fn drawable(p: &Panel, s: &Series) -> Vec<(f64, f64, f64)> {
    s.points
        .iter()
        .enumerate()
        .filter(|(_, (x, y))| usable(&p.x, *x) && usable(&p.y, *y))
        .map(|(i, &(x, y))| (x, y, s.err.get(i).copied().unwrap_or(0.0).abs()))
        .collect()
}

/// The corner of the plot where the fewest points fall, for the legend, and how many fall there.
fn legend_corner(p: &Panel, xc: &Coord, yc: &Coord) -> (SeriesLabelPosition, usize) {
    let mut counts = [0usize; 4]; // upper right, upper left, lower right, lower left
    for s in &p.series {
        for (x, y, _) in drawable(p, s) {
            let (fx, fy) = (xc.frac(x), yc.frac(y));
            let (right, left, up, down) = (fx > 0.55, fx < 0.45, fy > 0.6, fy < 0.4);
            for (i, hit) in [right && up, left && up, right && down, left && down]
                .into_iter()
                .enumerate()
            {
                counts[i] += hit as usize;
            }
        }
    }
    let best = (0..4).min_by_key(|&i| counts[i]).unwrap_or(0);
    let pos = [
        SeriesLabelPosition::UpperRight,
        SeriesLabelPosition::UpperLeft,
        SeriesLabelPosition::LowerRight,
        SeriesLabelPosition::LowerLeft,
    ][best]
        .clone();
    (pos, counts[best])
}

/// Series at most this many get their legend inside the plot (in an empty corner).
const INSIDE_LEGEND: usize = 4;

/// The colour of series `i` of a panel.
fn series_color(s: &Series, i: usize) -> RGBColor {
    PALETTE[s.color.unwrap_or(i) % PALETTE.len()]
}

/// The legend's line for a series: its dash pieces and, where its points are marked, its
/// marker, drawn from (x, y) 22 pixels to the right.
fn draw_legend_glyph(
    area: &DrawingArea<SVGBackend, Shift>,
    (x, y): (i32, i32),
    s: &Series,
    col: RGBColor,
) -> Result<()> {
    if !s.scatter {
        for &(a, b) in s.dash.legend_pieces() {
            area.draw(&PathElement::new(
                vec![(x + a, y), (x + b, y)],
                col.stroke_width(2),
            ))
            .map_err(perr)?;
        }
    }
    if s.markers || s.scatter {
        area.draw(&(EmptyElement::at((x + 11, y)) + s.shape.marker(col)))
            .map_err(perr)?;
    }
    Ok(())
}

/// Pixels a legend needs across (about 7.5 per character of the longest name).
fn legend_width(p: &Panel) -> u32 {
    let chars = p
        .series
        .iter()
        .map(|s| s.name.chars().count())
        .max()
        .unwrap_or(0) as u32;
    (44 + chars * 15 / 2).min(320)
}

/// A legend with its top left corner at `(x, y)` of `area`: per series its line and name, on
/// a white box when `boxed`.
fn draw_legend(
    area: &DrawingArea<SVGBackend, Shift>,
    p: &Panel,
    (x, y): (i32, i32),
    boxed: bool,
) -> Result<()> {
    if boxed {
        let (w, h) = (legend_width(p) as i32, 22 * p.series.len() as i32 + 8);
        area.draw(&Rectangle::new(
            [(x, y), (x + w, y + h)],
            WHITE.mix(0.85).filled(),
        ))
        .map_err(perr)?;
        area.draw(&Rectangle::new([(x, y), (x + w, y + h)], BLACK.mix(0.5)))
            .map_err(perr)?;
    }
    for (i, s) in p.series.iter().enumerate() {
        let row = y + 15 + 22 * i as i32;
        draw_legend_glyph(area, (x + 8, row), s, series_color(s, i))?;
        area.draw(&Text::new(
            s.name.clone(),
            (x + 36, row - 8),
            ("sans-serif", 14).into_font(),
        ))
        .map_err(perr)?;
    }
    Ok(())
}

/// The indices of the points of `data` (sorted by x) to mark although the series is not marked
/// throughout: those at least 5% of the axis from each neighbour (a sparse stretch, e.g. the
/// first logged steps on a log step axis), and a lone point.
fn sparse_points(data: &[(f64, f64, f64)], xc: &Coord) -> Vec<usize> {
    let f: Vec<f64> = data.iter().map(|q| xc.frac(q.0)).collect();
    (0..f.len())
        .filter(|&i| {
            let before = i == 0 || (f[i] - f[i - 1]).abs() >= 0.05;
            let after = i + 1 == f.len() || (f[i + 1] - f[i]).abs() >= 0.05;
            before && after
        })
        .collect()
}

/// The y range `p` is drawn over (`None`: nothing to draw): its points and error bars, padded;
/// not below 0 for a quantity never negative; cut at the axis' [`Axis::max`] where the data go
/// higher; ending on labelled ticks, so that its bottom and top values can be read off.
pub(crate) fn y_extent(p: &Panel) -> Option<(f64, f64)> {
    let all: Vec<(f64, f64, f64)> = p.series.iter().flat_map(|s| drawable(p, s)).collect();
    let ys = all
        .iter()
        .flat_map(|&(_, y, e)| [y, y + e, if e > 0.0 && y - e > 0.0 { y - e } else { y }]);
    let yr = range(&p.y, ys, 0.05)?;
    let nonneg = all.iter().all(|q| q.1 >= 0.0);
    let yr = if nonneg && yr.0 < 0.0 {
        (0.0, yr.1)
    } else {
        yr
    };
    let yr = match p.y.max {
        Some(m) if yr.1 > m && yr.0 < m => (yr.0, m),
        _ => yr,
    };
    Some(ticks::outer(yr.0, yr.1, p.y.scale == Scale::Log))
}

/// The stretches of the polyline `xy` at or below `top`, each ending where the line crosses it
/// (linearly between two points): what a line leaving the plot at its top edge draws.
pub(crate) fn below_top(xy: &[(f64, f64)], top: f64) -> Vec<Vec<(f64, f64)>> {
    let mut out: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut cur: Vec<(f64, f64)> = Vec::new();
    let cross = |a: (f64, f64), b: (f64, f64)| {
        let t = (top - a.1) / (b.1 - a.1);
        (a.0 + t * (b.0 - a.0), top)
    };
    for (k, &p) in xy.iter().enumerate() {
        let prev = k.checked_sub(1).map(|j| xy[j]);
        match (prev, p.1 <= top) {
            (Some(a), true) if a.1 > top => cur.push(cross(a, p)),
            (Some(a), false) if a.1 <= top => {
                cur.push(cross(a, p));
                out.push(std::mem::take(&mut cur));
            }
            _ => {}
        }
        if p.1 <= top {
            cur.push(p);
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn draw_panel(area: &DrawingArea<SVGBackend, Shift>, p: &Panel) -> Result<()> {
    let all: Vec<Vec<(f64, f64, f64)>> = p.series.iter().map(|s| drawable(p, s)).collect();
    let xs = all.iter().flatten().map(|q| q.0);
    let markers = p.series.iter().any(|s| s.markers);
    let xr = range(&p.x, xs, if markers { 0.04 } else { 0.0 });
    let (Some(xr), Some(yr)) = (xr, y_extent(p)) else {
        return Err(RunError::Refused(format!(
            "nothing to plot in \"{}\"",
            p.title
        )));
    };
    let (xc, yc) = (Coord::new(&p.x, xr), Coord::new(&p.y, yr));
    let (corner, crowd) = legend_corner(p, &xc, &yc);
    let inside = p.series.len() <= INSIDE_LEGEND && crowd == 0;
    let (plot, side) = if inside {
        (area.clone(), None)
    } else {
        let w = area.dim_in_pixel().0;
        let (a, b) = area.split_horizontally(w.saturating_sub(legend_width(p)));
        (a, Some(b))
    };
    if let Some(side) = &side {
        draw_legend(side, p, (0, 49), false)?;
    }
    let mut chart = ChartBuilder::on(&plot)
        .caption(&p.title, ("sans-serif", 19))
        .margin(14)
        .x_label_area_size(50)
        .y_label_area_size(74)
        .build_cartesian_2d(xc.clone(), yc.clone())
        .map_err(perr)?;
    chart
        .configure_mesh()
        .x_desc(p.x.label.as_str())
        .y_desc(p.y.label.as_str())
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 16))
        .bold_line_style(BLACK.mix(0.18))
        .light_line_style(BLACK.mix(0.06))
        .x_labels(1000)
        .y_labels(1000)
        .max_light_lines(1000)
        .draw()
        .map_err(perr)?;
    for (i, (s, data)) in p.series.iter().zip(all).enumerate() {
        let col = series_color(s, i);
        let style = col.stroke_width(2);
        let xy: Vec<(f64, f64)> = data.iter().map(|q| (q.0, q.1)).collect();
        if !s.scatter {
            for piece in below_top(&xy, yc.hi) {
                match s.dash.pattern() {
                    Some((on, off)) => chart
                        .draw_series(DashedLineSeries::new(piece, on, off, style))
                        .map_err(perr)?,
                    None => chart
                        .draw_series(LineSeries::new(piece, style))
                        .map_err(perr)?,
                };
            }
        }
        // every point of a marked series; the sparse stretches of a measured (solid) one; none
        // above the axis
        let marked: Vec<usize> = if s.markers || s.scatter {
            (0..data.len()).collect()
        } else if s.dash == Dash::Solid {
            sparse_points(&data, &xc)
        } else {
            Vec::new()
        };
        let marked: Vec<usize> = marked.into_iter().filter(|&k| data[k].1 <= yc.hi).collect();
        chart
            .draw_series(
                marked
                    .iter()
                    .map(|&k| EmptyElement::at((data[k].0, data[k].1)) + s.shape.marker(col)),
            )
            .map_err(perr)?;
        let bar = col.stroke_width(1);
        for &(x, y, e) in data.iter().filter(|q| q.2 > 0.0 && q.1 <= yc.hi) {
            // clipped to the axis (a risk's bar does not reach below 0)
            let lo = if usable(&p.y, y - e) {
                (y - e).max(yc.lo)
            } else {
                yc.lo
            };
            let e = e.min(yc.hi - y).max(0.0);
            let cap =
                |v: f64| EmptyElement::at((x, v)) + PathElement::new(vec![(-4, 0), (4, 0)], bar);
            chart
                .draw_series([PathElement::new(vec![(x, lo), (x, y + e)], bar)])
                .map_err(perr)?;
            chart.draw_series([cap(lo), cap(y + e)]).map_err(perr)?;
        }
    }
    if inside {
        let pa = chart.plotting_area().strip_coord_spec();
        let (w, h) = pa.dim_in_pixel();
        let (lw, lh) = (legend_width(p) as i32, 22 * p.series.len() as i32 + 8);
        let (w, h) = (w as i32, h as i32);
        let at = match corner {
            SeriesLabelPosition::UpperLeft => (10, 10),
            SeriesLabelPosition::LowerRight => (w - lw - 10, h - lh - 10),
            SeriesLabelPosition::LowerLeft => (10, h - lh - 10),
            _ => (w - lw - 10, 10),
        };
        draw_legend(&pa, p, at, true)?;
    }
    Ok(())
}

impl Figure {
    /// The same figure with `run` (the run's name) before its first panel's title, so that a
    /// figure copied out of its folder still says which run it shows.
    pub fn for_run(mut self, run: &str) -> Figure {
        if let Some(p) = self.panels.first_mut() {
            if !run.is_empty() {
                p.title = format!("{run}: {}", p.title);
            }
        }
        self
    }

    /// One panel, 800 x 500.
    pub fn single(panel: Panel) -> Figure {
        Figure {
            panels: vec![panel],
            width: 800,
            height: 500,
        }
    }

    /// Panels stacked, each 800 x 380.
    pub fn stacked(panels: Vec<Panel>) -> Figure {
        Figure {
            panels,
            width: 800,
            height: 380,
        }
    }

    /// The SVG text.
    pub fn svg(&self) -> Result<String> {
        if self.panels.is_empty() {
            return Err(RunError::Refused("a figure without panels".into()));
        }
        let h = self.height * self.panels.len() as u32;
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, (self.width, h)).into_drawing_area();
            root.fill(&WHITE).map_err(perr)?;
            let areas = root.split_evenly((self.panels.len(), 1));
            for (a, p) in areas.iter().zip(&self.panels) {
                draw_panel(a, p)?;
            }
            root.present().map_err(perr)?;
        }
        Ok(svg)
    }

    /// Write the figure to `path`: PNG if it ends in `.png`, SVG if in `.svg`; other names are
    /// refused.
    pub fn write(&self, path: &Path) -> Result<()> {
        write_svg_text(path, &self.svg()?)
    }
}

/// Line plot of several series in one panel: log y when `log_y`, and a step axis (SI labels)
/// when `xlabel` is `step`.
pub fn lines_svg(
    path: &Path,
    title: &str,
    xlabel: &str,
    ylabel: &str,
    series: &[Series],
    log_y: bool,
) -> Result<()> {
    lines_figure(title, xlabel, ylabel, series, log_y).write(path)
}

/// The figure of [`lines_svg`].
pub fn lines_figure(
    title: &str,
    xlabel: &str,
    ylabel: &str,
    series: &[Series],
    log_y: bool,
) -> Figure {
    let x = if xlabel == "step" {
        Axis::linear(xlabel).steps()
    } else {
        Axis::linear(xlabel)
    };
    let y = if log_y {
        Axis::log(ylabel)
    } else {
        Axis::linear(ylabel)
    };
    Figure::single(Panel {
        title: title.into(),
        x,
        y,
        series: series.to_vec(),
    })
}

/// How a [`Curve`] is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// A solid line (a closed form).
    Solid,
    /// A dashed line (a closed form beside a measurement, or a reference level).
    Dashed,
    /// Markers joined by a line, with ±1 standard-error bars (a Monte Carlo).
    ErrorBars,
}

/// A named curve: points `(x, y, standard error)` (the error is used by [`Style::ErrorBars`]).
pub struct Curve {
    pub name: String,
    pub points: Vec<(f64, f64, f64)>,
    pub style: Style,
}

/// A figure of curves in one panel, optionally with log axes (points with a non-positive
/// coordinate on a log axis are left out).
pub fn curves_svg(
    path: &Path,
    title: &str,
    xlabel: &str,
    ylabel: &str,
    curves: &[Curve],
    log_x: bool,
    log_y: bool,
) -> Result<()> {
    let axis = |label: &str, log: bool| {
        let a = if log {
            Axis::log(label)
        } else {
            Axis::linear(label)
        };
        if label == "step" {
            a.steps()
        } else {
            a
        }
    };
    let series = curves
        .iter()
        .map(|c| {
            let xy = c.points.iter().map(|p| (p.0, p.1)).collect();
            match c.style {
                Style::Solid => Series::line(c.name.clone(), xy),
                Style::Dashed => Series::dashed(c.name.clone(), xy),
                Style::ErrorBars => Series::line(c.name.clone(), xy).with_errors(
                    c.points
                        .iter()
                        .map(|p| if p.2.is_finite() { p.2 } else { 0.0 })
                        .collect(),
                ),
            }
        })
        .collect();
    Figure::single(Panel {
        title: title.into(),
        x: axis(xlabel, log_x),
        y: axis(ylabel, log_y),
        series,
    })
    .write(path)
}
