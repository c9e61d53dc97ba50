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
/// (drawn grey: the ineffective "*" blocks).
pub struct Heatmap {
    pub title: String,
    pub rows: usize,
    pub cols: usize,
    pub values: Vec<Option<f64>>,
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

/// Draw heatmaps side by side, each with its own symmetric colour scale and the numbers printed.
pub fn heatmaps_svg(path: &Path, maps: &[Heatmap]) -> Result<()> {
    let cell = 44u32;
    let width: u32 = maps.iter().map(|m| m.cols as u32 * cell + 40).sum::<u32>() + 20;
    let height: u32 = maps.iter().map(|m| m.rows as u32).max().unwrap_or(1) * cell + 70;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(perr)?;
        let mut x0 = 20i32;
        for m in maps {
            let vmax = m
                .values
                .iter()
                .flatten()
                .fold(1e-12f64, |a, v| a.max(v.abs()));
            root.draw(&Text::new(
                m.title.clone(),
                (x0, 10),
                ("sans-serif", 14).into_font(),
            ))
            .map_err(perr)?;
            for r in 0..m.rows {
                for c in 0..m.cols {
                    let (x, y) = (x0 + (c as u32 * cell) as i32, 40 + (r as u32 * cell) as i32);
                    let v = m.values[r * m.cols + c];
                    let fill = v.map(|v| color(v, vmax)).unwrap_or(RGBColor(200, 200, 200));
                    root.draw(&Rectangle::new(
                        [(x, y), (x + cell as i32, y + cell as i32)],
                        fill.filled(),
                    ))
                    .map_err(perr)?;
                    root.draw(&Rectangle::new(
                        [(x, y), (x + cell as i32, y + cell as i32)],
                        BLACK.stroke_width(1),
                    ))
                    .map_err(perr)?;
                    let label = v.map(|v| format!("{v:.2}")).unwrap_or_else(|| "*".into());
                    let dark = v.map(|v| v.abs() > 0.6 * vmax).unwrap_or(false);
                    let ink = if dark { &WHITE } else { &BLACK };
                    root.draw(&Text::new(
                        label,
                        (x + 4, y + cell as i32 / 2 - 5),
                        ("sans-serif", 11).into_font().color(ink),
                    ))
                    .map_err(perr)?;
                }
            }
            x0 += (m.cols as u32 * cell + 40) as i32;
        }
        root.present().map_err(perr)?;
    }
    write_svg_text(path, &svg)
}

/// Write SVG text to `path`, or its PNG rendering when `path` ends in `.png`.
pub fn write_svg_text(path: &Path, svg: &str) -> Result<()> {
    crate::folder::atomic_write(path, &file_bytes(path, svg)?)
}

/// The bytes [`write_svg_text`] writes to `path`: the SVG text, or its PNG rendering when
/// `path` ends in `.png`.
pub fn file_bytes(path: &Path, svg: &str) -> Result<Vec<u8>> {
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
}

impl Axis {
    /// A linear axis of numbers.
    pub fn linear(label: &str) -> Axis {
        Axis {
            label: label.into(),
            scale: Scale::Linear,
            labels: Labels::Number,
            ticks: None,
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
    /// The same axis with integer / SI tick labels (training steps).
    pub fn steps(mut self) -> Axis {
        self.labels = Labels::Steps;
        self
    }
}

/// A named series of (x, y) points.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// Draw as a dashed line (a reference level) instead of a solid one.
    pub dashed: bool,
    /// Error bars: half-widths, one per point (empty: none).
    pub err: Vec<f64>,
    /// Mark every point with a dot.
    pub markers: bool,
}

impl Series {
    /// A solid line.
    pub fn line(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            points,
            dashed: false,
            err: Vec::new(),
            markers: false,
        }
    }
    /// A dashed line.
    pub fn dashed(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series {
            dashed: true,
            ..Series::line(name, points)
        }
    }
    /// A horizontal dashed reference at `y` from `x0` to `x1`.
    pub fn level(name: impl Into<String>, y: f64, x0: f64, x1: f64) -> Series {
        Series::dashed(name, vec![(x0, y), (x1, y)])
    }
    /// Points with dots and error bars of half-width `err` (one per point).
    pub fn with_errors(mut self, err: Vec<f64>) -> Series {
        self.err = err;
        self.markers = true;
        self
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

/// Colour-blind-friendly (Tableau 10), in series order.
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
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

/// The legend beside the plot (right of it): a line (with its dot) and the name per series.
fn draw_side_legend(area: &DrawingArea<SVGBackend, Shift>, p: &Panel) -> Result<()> {
    for (i, s) in p.series.iter().enumerate() {
        let col = PALETTE[i % PALETTE.len()];
        let y = 64 + 24 * i as i32;
        let style = col.stroke_width(2);
        let pieces: &[(i32, i32)] = if s.dashed {
            &[(6, 12), (16, 22), (26, 30)]
        } else {
            &[(6, 30)]
        };
        for &(a, b) in pieces {
            area.draw(&PathElement::new(vec![(a, y), (b, y)], style))
                .map_err(perr)?;
        }
        if s.markers {
            area.draw(&Circle::new((18, y), 3, col.filled()))
                .map_err(perr)?;
        }
        area.draw(&Text::new(
            s.name.clone(),
            (36, y - 8),
            ("sans-serif", 14).into_font(),
        ))
        .map_err(perr)?;
    }
    Ok(())
}

/// Pixels the side legend needs (about 7.5 per character of the longest name).
fn side_legend_width(p: &Panel) -> u32 {
    let chars = p
        .series
        .iter()
        .map(|s| s.name.chars().count())
        .max()
        .unwrap_or(0) as u32;
    (44 + chars * 15 / 2).min(320)
}

fn draw_panel(area: &DrawingArea<SVGBackend, Shift>, p: &Panel) -> Result<()> {
    let all: Vec<Vec<(f64, f64, f64)>> = p.series.iter().map(|s| drawable(p, s)).collect();
    let xs = all.iter().flatten().map(|q| q.0);
    let markers = p.series.iter().any(|s| s.markers);
    let xr = range(&p.x, xs, if markers { 0.04 } else { 0.0 });
    let ys = all
        .iter()
        .flatten()
        .flat_map(|&(_, y, e)| [y, y + e, if e > 0.0 && y - e > 0.0 { y - e } else { y }]);
    let (Some(xr), Some(yr)) = (xr, range(&p.y, ys, 0.05)) else {
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
        let (a, b) = area.split_horizontally(w.saturating_sub(side_legend_width(p)));
        (a, Some(b))
    };
    if let Some(side) = &side {
        draw_side_legend(side, p)?;
    }
    let mut chart = ChartBuilder::on(&plot)
        .caption(&p.title, ("sans-serif", 19))
        .margin(14)
        .x_label_area_size(50)
        .y_label_area_size(74)
        .build_cartesian_2d(xc, yc.clone())
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
        let col = PALETTE[i % PALETTE.len()];
        let style = col.stroke_width(2);
        let xy: Vec<(f64, f64)> = data.iter().map(|q| (q.0, q.1)).collect();
        let anno = if s.dashed {
            chart
                .draw_series(DashedLineSeries::new(xy, 7, 4, style))
                .map_err(perr)?
        } else {
            chart
                .draw_series(LineSeries::new(xy, style))
                .map_err(perr)?
        };
        let dots = s.markers;
        let dashed = s.dashed;
        anno.label(s.name.clone()).legend(move |(x, y)| {
            // three pieces: apart for a dashed line, touching for a solid one
            let [a, b, c] = if dashed {
                [(0, 6), (9, 14), (17, 22)]
            } else {
                [(0, 8), (8, 16), (16, 22)]
            };
            let piece = |(p, q): (i32, i32)| PathElement::new(vec![(x + p, y), (x + q, y)], style);
            let dot = Circle::new((x + 11, y), if dots { 3 } else { 0 }, col.filled());
            EmptyElement::at((0, 0)) + piece(a) + piece(b) + piece(c) + dot
        });
        if s.markers {
            chart
                .draw_series(
                    data.iter()
                        .map(|&(x, y, _)| Circle::new((x, y), 3, col.filled())),
                )
                .map_err(perr)?;
        }
        let bar = col.stroke_width(1);
        for &(x, y, e) in data.iter().filter(|q| q.2 > 0.0) {
            let lo = if usable(&p.y, y - e) { y - e } else { yc.lo };
            let cap =
                |v: f64| EmptyElement::at((x, v)) + PathElement::new(vec![(-4, 0), (4, 0)], bar);
            chart
                .draw_series([PathElement::new(vec![(x, lo), (x, y + e)], bar)])
                .map_err(perr)?;
            chart.draw_series([cap(lo), cap(y + e)]).map_err(perr)?;
        }
    }
    if !inside {
        return Ok(());
    }
    chart
        .configure_series_labels()
        .position(corner)
        .label_font(("sans-serif", 14))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.5))
        .draw()
        .map_err(perr)?;
    Ok(())
}

impl Figure {
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

    /// Write the figure to `path`: PNG if it ends in `.png`, SVG otherwise.
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
