//! SVG plots (plotters), rendered to a string and written atomically.
use crate::error::{Result, RunError};
use plotters::prelude::*;
use std::path::Path;

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
    crate::folder::atomic_write(path, svg.as_bytes())
}

/// A named series of (x, y) points.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// Draw as a dashed horizontal reference instead of a solid line.
    pub dashed: bool,
}

/// Line plot of several series.
pub fn lines_svg(
    path: &Path,
    title: &str,
    xlabel: &str,
    ylabel: &str,
    series: &[Series],
    log_y: bool,
) -> Result<()> {
    let pts = series
        .iter()
        .flat_map(|s| s.points.iter())
        .filter(|(x, y)| x.is_finite() && y.is_finite() && (!log_y || *y > 0.0));
    let (mut x0, mut x1, mut y0, mut y1) = (
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::INFINITY,
        f64::NEG_INFINITY,
    );
    for &(x, y) in pts {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if !x0.is_finite() {
        return Err(RunError::Refused("nothing to plot".into()));
    }
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    if y1 <= y0 {
        y1 = y0 + 1.0;
    }
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (800, 500)).into_drawing_area();
        root.fill(&WHITE).map_err(perr)?;
        let palette = [
            BLUE,
            RED,
            GREEN,
            MAGENTA,
            CYAN,
            BLACK,
            RGBColor(255, 140, 0),
            RGBColor(128, 0, 128),
        ];
        macro_rules! draw {
            ($chart:expr) => {{
                let mut chart = $chart;
                chart
                    .configure_mesh()
                    .x_desc(xlabel)
                    .y_desc(ylabel)
                    .draw()
                    .map_err(perr)?;
                for (i, s) in series.iter().enumerate() {
                    let col = palette[i % palette.len()];
                    let data: Vec<(f64, f64)> = s
                        .points
                        .iter()
                        .copied()
                        .filter(|(x, y)| x.is_finite() && y.is_finite() && (!log_y || *y > 0.0))
                        .collect();
                    let style = if s.dashed {
                        col.stroke_width(1)
                    } else {
                        col.stroke_width(2)
                    };
                    if s.dashed {
                        chart
                            .draw_series(DashedLineSeries::new(data, 6, 4, style))
                            .map_err(perr)?
                            .label(s.name.clone())
                            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], col));
                    } else {
                        chart
                            .draw_series(LineSeries::new(data, style))
                            .map_err(perr)?
                            .label(s.name.clone())
                            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], col));
                    }
                }
                chart
                    .configure_series_labels()
                    .background_style(WHITE.mix(0.8))
                    .border_style(BLACK)
                    .draw()
                    .map_err(perr)?;
            }};
        }
        let mut b = ChartBuilder::on(&root);
        b.caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60);
        if log_y {
            draw!(b
                .build_cartesian_2d(x0..x1, (y0 * 0.9..y1 * 1.1).log_scale())
                .map_err(perr)?);
        } else {
            let pad = 0.05 * (y1 - y0);
            draw!(b
                .build_cartesian_2d(x0..x1, (y0 - pad)..(y1 + pad))
                .map_err(perr)?);
        }
        root.present().map_err(perr)?;
    }
    crate::folder::atomic_write(path, svg.as_bytes())
}

/// How a [`Curve`] is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// A solid line (a closed form).
    Solid,
    /// A dashed line (a closed form beside a measurement, or a reference level).
    Dashed,
    /// Markers joined by a thin line, with ±1 standard-error bars (a Monte Carlo).
    ErrorBars,
}

/// A named curve: points `(x, y, standard error)` (the error is used by [`Style::ErrorBars`]).
pub struct Curve {
    pub name: String,
    pub points: Vec<(f64, f64, f64)>,
    pub style: Style,
}

/// A figure of curves, optionally with logarithmic axes (points with a non-positive coordinate on
/// a log axis are left out).
pub fn curves_svg(
    path: &Path,
    title: &str,
    xlabel: &str,
    ylabel: &str,
    curves: &[Curve],
    log_x: bool,
    log_y: bool,
) -> Result<()> {
    let ok = |x: f64, y: f64| {
        x.is_finite() && y.is_finite() && (!log_x || x > 0.0) && (!log_y || y > 0.0)
    };
    let (mut x0, mut x1, mut y0, mut y1) = (
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::INFINITY,
        f64::NEG_INFINITY,
    );
    for c in curves {
        for &(x, y, e) in &c.points {
            if !ok(x, y) {
                continue;
            }
            let e = if c.style == Style::ErrorBars && e.is_finite() {
                e
            } else {
                0.0
            };
            x0 = x0.min(x);
            x1 = x1.max(x);
            let lo = if log_y && y - e <= 0.0 { y } else { y - e };
            y0 = y0.min(lo);
            y1 = y1.max(y + e);
        }
    }
    if !x0.is_finite() {
        return Err(RunError::Refused("nothing to plot".into()));
    }
    if x1 <= x0 {
        x1 = x0 * 2.0 + 1.0;
    }
    if y1 <= y0 {
        y1 = y0 * 2.0 + 1.0;
    }
    let (ylo, yhi) = if log_y {
        (y0 / 1.3, y1 * 1.3)
    } else {
        let pad = 0.05 * (y1 - y0);
        (y0 - pad, y1 + pad)
    };
    let (xlo, xhi) = if log_x {
        (x0 / 1.1, x1 * 1.1)
    } else {
        let pad = 0.03 * (x1 - x0);
        (x0 - pad, x1 + pad)
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (820, 520)).into_drawing_area();
        root.fill(&WHITE).map_err(perr)?;
        let palette = [
            BLUE,
            RED,
            RGBColor(0, 140, 0),
            MAGENTA,
            RGBColor(0, 150, 170),
            BLACK,
            RGBColor(255, 140, 0),
            RGBColor(128, 0, 128),
        ];
        macro_rules! draw {
            ($chart:expr) => {{
                let mut chart = $chart;
                chart
                    .configure_mesh()
                    .x_desc(xlabel)
                    .y_desc(ylabel)
                    .draw()
                    .map_err(perr)?;
                for (i, c) in curves.iter().enumerate() {
                    let col = palette[i % palette.len()];
                    let data: Vec<(f64, f64, f64)> =
                        c.points.iter().copied().filter(|p| ok(p.0, p.1)).collect();
                    let line: Vec<(f64, f64)> = data.iter().map(|p| (p.0, p.1)).collect();
                    let legend = move |(x, y): (i32, i32)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], col.stroke_width(2))
                    };
                    match c.style {
                        Style::Solid => {
                            chart
                                .draw_series(LineSeries::new(line, col.stroke_width(2)))
                                .map_err(perr)?
                                .label(c.name.clone())
                                .legend(legend);
                        }
                        Style::Dashed => {
                            chart
                                .draw_series(DashedLineSeries::new(line, 7, 5, col.stroke_width(2)))
                                .map_err(perr)?
                                .label(c.name.clone())
                                .legend(legend);
                        }
                        Style::ErrorBars => {
                            chart
                                .draw_series(LineSeries::new(line, col.stroke_width(1)))
                                .map_err(perr)?
                                .label(c.name.clone())
                                .legend(legend);
                            for &(x, y, e) in &data {
                                chart
                                    .draw_series(std::iter::once(Circle::new(
                                        (x, y),
                                        3,
                                        col.filled(),
                                    )))
                                    .map_err(perr)?;
                                if e.is_finite() && e > 0.0 {
                                    let lo = if log_y && y - e <= 0.0 { y } else { y - e };
                                    chart
                                        .draw_series(std::iter::once(PathElement::new(
                                            vec![(x, lo), (x, y + e)],
                                            col.stroke_width(1),
                                        )))
                                        .map_err(perr)?;
                                }
                            }
                        }
                    }
                }
                chart
                    .configure_series_labels()
                    .background_style(WHITE.mix(0.8))
                    .border_style(BLACK)
                    .draw()
                    .map_err(perr)?;
            }};
        }
        let mut b = ChartBuilder::on(&root);
        b.caption(title, ("sans-serif", 17))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(65);
        match (log_x, log_y) {
            (true, true) => draw!(b
                .build_cartesian_2d((xlo..xhi).log_scale(), (ylo..yhi).log_scale())
                .map_err(perr)?),
            (true, false) => draw!(b
                .build_cartesian_2d((xlo..xhi).log_scale(), ylo..yhi)
                .map_err(perr)?),
            (false, true) => draw!(b
                .build_cartesian_2d(xlo..xhi, (ylo..yhi).log_scale())
                .map_err(perr)?),
            (false, false) => draw!(b.build_cartesian_2d(xlo..xhi, ylo..yhi).map_err(perr)?),
        }
        root.present().map_err(perr)?;
    }
    crate::folder::atomic_write(path, svg.as_bytes())
}
