//! Every figure kind is rendered to SVG and PNG and checked the way a reader would: the tick
//! labels are the expected decades and SI steps, the series are there with their names, and the
//! PNG is not blank and carries its text (rendering it without its text changes the pixels).
use icl_core_run::plot::{figures, png, Figure};
use icl_core_run::summary::{EvalRow, EvalRows};
use std::path::PathBuf;

/// The texts of an SVG's `<text>` elements.
fn texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let start = t.find('>')? + 1;
            let end = t.find("</text>")?;
            Some(t[start..end].trim().to_string())
        })
        .collect()
}

fn out_dir() -> PathBuf {
    let d = std::env::temp_dir().join("icl-figures-test");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Non-white pixels of a PNG.
fn inked(png_bytes: &[u8]) -> usize {
    let (_, _, px) = png::decode(png_bytes).unwrap();
    px.chunks(4)
        .filter(|p| p[0] < 250 || p[1] < 250 || p[2] < 250)
        .count()
}

/// The SVG with every `<text>` element removed.
fn without_text(svg: &str) -> String {
    let mut s = String::new();
    let mut rest = svg;
    while let Some(i) = rest.find("<text") {
        s.push_str(&rest[..i]);
        match rest[i..].find("</text>") {
            Some(j) => rest = &rest[i + j + "</text>".len()..],
            None => break,
        }
    }
    s.push_str(rest);
    s
}

/// Render `fig` to SVG and PNG files named `name`, check the PNG, return the SVG text.
fn render(fig: &Figure, name: &str) -> String {
    let dir = out_dir();
    fig.write(&dir.join(format!("{name}.svg"))).unwrap();
    fig.write(&dir.join(format!("{name}.png"))).unwrap();
    let svg = std::fs::read_to_string(dir.join(format!("{name}.svg"))).unwrap();
    let png_bytes = std::fs::read(dir.join(format!("{name}.png"))).unwrap();
    assert_eq!(&png_bytes[..8], b"\x89PNG\r\n\x1a\n");
    let (w, h, _) = png::decode(&png_bytes).unwrap();
    assert_eq!(
        (w, h),
        (2 * fig.width, 2 * fig.height * fig.panels.len() as u32)
    );
    let ink = inked(&png_bytes);
    assert!(
        ink > (w * h / 100) as usize,
        "{name}: PNG nearly blank ({ink} pixels inked)"
    );
    // the text is drawn: without it, thousands of pixels fewer are inked
    let bare = inked(&png::render(&without_text(&svg)).unwrap());
    assert!(
        ink > bare + 2000,
        "{name}: text adds only {} inked pixels",
        ink as i64 - bare as i64
    );
    svg
}

fn has(t: &[String], label: &str) -> bool {
    t.iter().any(|x| x == label)
}

/// No tick label a reader would stumble over: `50000.0`, `1.0`, or long digit runs.
fn no_float_noise(t: &[String]) {
    for x in t {
        assert!(!x.ends_with(".0"), "label {x:?}");
        assert!(!x.contains("0000"), "label {x:?}");
    }
}

#[test]
fn loss_figure_labels_decades_and_si_steps() {
    // a he2025-like curve: 3.2 at the start, a plateau at 0.4 after a few thousand steps
    let mut steps = vec![1.0];
    steps.extend((1..=500).map(|k| 1000.0 * k as f64));
    let curve: Vec<(f64, f64)> = steps
        .iter()
        .map(|&s| (s, 0.38 + 2.8 * (-s / 3000.0).exp()))
        .collect();
    let svg = render(&figures::loss(&curve), "loss");
    let t = texts(&svg);
    // log step axis: every decade from 1 to 100k, in SI
    for l in ["1", "10", "100", "1k", "10k", "100k"] {
        assert!(has(&t, l), "step label {l} missing in {t:?}");
    }
    // 0.38 .. 3.2 spans less than a decade on the loss axis: 0.5, 1, 2 labelled
    for l in ["0.5", "1", "2"] {
        assert!(has(&t, l), "loss label {l} missing in {t:?}");
    }
    assert!(has(&t, "train loss") && has(&t, "step") && has(&t, "MSE"));
    no_float_noise(&t);
}

#[test]
fn loss_figure_over_several_decades_labels_each() {
    let curve: Vec<(f64, f64)> = (1..=200)
        .map(|k| (k as f64 * 50.0, 10f64.powf(1.0 - k as f64 / 40.0)))
        .collect();
    let t = texts(&render(&figures::loss(&curve), "loss_decades"));
    for l in ["1e-4", "0.001", "0.01", "0.1", "1", "10"] {
        assert!(has(&t, l), "decade {l} missing in {t:?}");
    }
    for l in ["100", "1k", "10k"] {
        assert!(has(&t, l), "step {l} missing in {t:?}");
    }
    no_float_noise(&t);
}

#[test]
fn omega_mu_figure_has_a_panel_each_and_a_series_per_head() {
    let steps: Vec<f64> = std::iter::once(1.0)
        .chain((1..=150).map(|k| 1000.0 * k as f64))
        .collect();
    let rise_fall =
        |s: f64| 0.5 * (1.0 - (-s / 2000.0).exp()) * (0.26 + 0.74 * (-s / 20000.0).exp());
    let omega = vec![
        steps.iter().map(|&s| rise_fall(s)).collect::<Vec<_>>(),
        steps.iter().map(|&s| -rise_fall(s)).collect(),
    ];
    let mu = vec![
        steps
            .iter()
            .map(|&s| 3.5 * (1.0 - (-s / 30000.0).exp()))
            .collect::<Vec<_>>(),
        steps
            .iter()
            .map(|&s| -3.5 * (1.0 - (-s / 30000.0).exp()))
            .collect(),
    ];
    let refs = vec![("+μ_γ".to_string(), 3.2), ("−μ_γ".to_string(), -3.2)];
    let svg = render(
        &figures::omega_mu(&steps, &omega, &mu, &[], &refs).for_run("he2025-run"),
        "omega_mu",
    );
    let t = texts(&svg);
        assert!(t.iter().any(|x| x.starts_with("μ per head")), "{t:?}");
    // each panel: a legend entry per head
    // heads numbered from 0, as in summary.json and circuits.svg
    assert_eq!(t.iter().filter(|x| *x == "head 0").count(), 2);
    assert_eq!(t.iter().filter(|x| *x == "head 1").count(), 2);
    assert!(has(&t, "+μ_γ") && has(&t, "−μ_γ"), "theory levels in {t:?}");
    assert!(t.iter().any(|x| x.starts_with("he2025-run: ω per head")), "{t:?}");
    // the step axis of each panel: 1 .. 100k by decades
    assert_eq!(t.iter().filter(|x| *x == "10k").count(), 2);
    assert!(has(&t, "-3") && has(&t, "3"), "mu ticks in {t:?}");
    // two coloured lines per panel
    for (r, g, b) in [
        icl_core_run::plot::palette(0),
        icl_core_run::plot::palette(1),
    ] {
        let c = format!("#{r:02X}{g:02X}{b:02X}");
        assert!(
            svg.matches(&format!(
                "<polyline fill=\"none\" opacity=\"1\" stroke=\"{c}\""
            ))
            .count()
                >= 2,
            "line {c} missing"
        );
    }
    no_float_noise(&t);
}

fn rows() -> EvalRows {
    // risks as in He et al. (2025) figure 3: the model near GD, ridge best, NW far above
    let lens = [10usize, 20, 40, 60, 100];
    let mut rows = Vec::new();
    for (name, level) in [
        ("model", 0.6),
        ("vanilla_gd", 0.62),
        ("debiased_gd", 0.55),
        ("ridge", 0.3),
        ("nw", 4.0),
    ] {
        for &l in &lens {
            rows.push(EvalRow {
                estimator: name.into(),
                len: l,
                risk: level * (1.0 + 10.0 / l as f64),
                stderr: 0.02 * level,
                eta: None,
                eta_x: None,
                tau: None,
                tau_opt: false,
                shift: None,
            });
        }
    }
    EvalRows {
        rows,
        samples: 20_000,
        seed: 0,
        engine: "scalar".into(),
        target: None,
        etas: Vec::new(),
        alignment: Vec::new(),
        lambda_range: None,
        stack: None,
        d: None,
    }
}

#[test]
fn risk_figure_has_every_estimator_with_error_bars() {
    let res = rows();
    let fig = figures::risk_vs_len(&res).unwrap();
    assert_eq!(fig.panels[0].series.len(), 5);
    for s in &fig.panels[0].series {
        assert_eq!(s.points.len(), 5);
        assert_eq!(s.err.len(), 5);
        assert!(s.markers);
    }
    let svg = render(&fig, "risk");
    let t = texts(&svg);
    for l in ["model", "vanilla_gd", "debiased_gd", "ridge", "nw"] {
        assert!(has(&t, l), "legend {l} missing in {t:?}");
    }
    // L' = 10 .. 100 spans a factor 10: linear axis labelled at the evaluated lengths
    for l in ["10", "20", "40", "60", "100"] {
        assert!(has(&t, l), "L' label {l} missing in {t:?}");
    }
    assert!(!has(&t, "80"), "{t:?}");
    // 0.3 .. 8 spans more than a decade: log axis with its decade 1 and the 2, 5 multiples
    for l in ["0.5", "1", "2", "5"] {
        assert!(has(&t, l), "risk label {l} missing in {t:?}");
    }
    // an error bar per point: two caps and a stem each (plus the legend's own lines)
    assert!(
        svg.matches("<polyline").count() >= 25 * 3,
        "error bars missing"
    );
    no_float_noise(&t);
}

#[test]
fn tempered_rows_are_their_own_series() {
    let mut res = rows();
    let extra: Vec<EvalRow> = res
        .rows
        .iter()
        .filter(|r| r.estimator == "model")
        .map(|r| EvalRow {
            tau: Some(0.5),
            risk: r.risk * 0.9,
            ..r.clone()
        })
        .collect();
    res.rows.extend(extra);
    let fig = figures::risk_vs_len(&res).unwrap();
    let names: Vec<&str> = fig.panels[0]
        .series
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    assert!(names.contains(&"model (τ = 0.5)"), "{names:?}");
    assert_eq!(names.len(), 6);
}

#[test]
fn same_figure_same_bytes() {
    let curve: Vec<(f64, f64)> = (1..50).map(|k| (k as f64, 1.0 / k as f64)).collect();
    let f = figures::loss(&curve);
    assert_eq!(f.svg().unwrap(), f.svg().unwrap());
    let a = png::render(&f.svg().unwrap()).unwrap();
    let b = png::render(&f.svg().unwrap()).unwrap();
    assert_eq!(a, b);
}

#[test]
fn pattern_figure_has_both_inner_products_per_layer() {
    let steps: Vec<f64> = (1..=100).map(|k| 500.0 * k as f64).collect();
    let settle = |a: f64, s: f64| a * (1.0 - (-s / 5000.0).exp());
    let u1 = vec![
        steps.iter().map(|&s| settle(-0.66, s)).collect::<Vec<_>>(),
        steps.iter().map(|&s| settle(-0.4, s)).collect(),
    ];
    let u2 = vec![
        steps.iter().map(|&s| settle(0.86, s)).collect::<Vec<_>>(),
        steps.iter().map(|&s| settle(0.5, s)).collect(),
    ];
    let svg = render(&figures::pattern(&steps, &u1, &u2), "pattern");
    let t = texts(&svg);
    assert!(
        t.iter()
            .any(|x| x.starts_with("&lt;u₁, ω&gt;: the covariate step")),
        "{t:?}"
    );
    assert!(
        t.iter()
            .any(|x| x.starts_with("&lt;u₂, ω&gt;: the label step")),
        "{t:?}"
    );
    assert_eq!(t.iter().filter(|x| *x == "layer 1").count(), 2);
    assert_eq!(t.iter().filter(|x| *x == "layer 2").count(), 2);
    assert_eq!(t.iter().filter(|x| *x == "10k").count(), 2);
    no_float_noise(&t);
    // a looped block: one series per panel, named so
    let svg = render(
        &figures::pattern(&steps, &u1[..1], &u2[..1]),
        "pattern-looped",
    );
    let t = texts(&svg);
    assert_eq!(t.iter().filter(|x| *x == "looped block").count(), 2);
    assert!(!t.iter().any(|x| x == "layer 1"));
}

/// A GPT-2 evaluation (Garg et al.'s Fig. 2): risk / d against the pairs before the prediction,
/// on a linear axis as theirs, even when least squares reaches its rounding error (1e-15) once
/// L >= d: the axis is labelled in plain numbers, not decades down to 1e-15.
#[test]
fn gpt2_figure_is_risk_over_d_on_a_linear_axis() {
    let d = 5usize;
    let mut rows = Vec::new();
    for (name, f) in [
        (
            "model",
            (|l: usize| 5.0 * (1.0 - 0.07 * l as f64)) as fn(usize) -> f64,
        ),
        ("lstsq", |l| if l < 5 { 5.0 - l as f64 } else { 1e-15 }),
        ("averaging", |l| if l == 0 { 5.0 } else { 30.0 / l as f64 }),
    ] {
        for l in 0..=10 {
            rows.push(EvalRow {
                estimator: name.into(),
                len: l,
                risk: f(l),
                stderr: 0.01,
                eta: None,
                eta_x: None,
                tau: None,
                tau_opt: false,
                shift: None,
            });
        }
    }
    let res = EvalRows {
        d: Some(d),
        target: Some("label".into()),
        rows,
        ..self::rows()
    };
    let fig = figures::risk_vs_len(&res).unwrap();
    let p = &fig.panels[0];
    assert_eq!(p.y.scale, icl_core_run::plot::Scale::Linear);
    assert!(p.y.label.contains("/ d"), "{}", p.y.label);
    // the points are divided by d
    let model = p.series.iter().find(|s| s.name == "model").unwrap();
    assert_eq!(model.points[0], (0.0, 1.0));
    let t = texts(&render(&fig, "gpt2-risk"));
    assert!(t.iter().all(|x| !x.contains("e-")), "{t:?}");
    for l in ["model", "lstsq", "averaging"] {
        assert!(has(&t, l), "legend {l} missing in {t:?}");
    }
    no_float_noise(&t);
}
