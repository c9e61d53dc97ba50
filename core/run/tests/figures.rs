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
    assert!(
        t.iter().any(|x| x.starts_with("he2025-run: ω per head")),
        "{t:?}"
    );
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
        normalization: None,
        train_len: Some(40),
        log_lengths: false,
    }
}

#[test]
fn risk_figure_has_every_estimator_with_error_bars() {
    let res = rows();
    let fig = figures::risk_vs_len(&res).unwrap();
    // five estimators and the training length's line
    let series = &fig.panels[0].series;
    assert_eq!(series.len(), 6);
    for s in &series[..5] {
        assert_eq!(s.points.len(), 5);
        assert_eq!(s.err.len(), 5);
        assert!(s.markers);
    }
    // each estimator its own colour, and its own line style or marker from its neighbours
    for (i, a) in series[..5].iter().enumerate() {
        for b in &series[i + 1..5] {
            assert_ne!(a.color, b.color, "{} / {}", a.name, b.name);
            assert!(
                a.dash != b.dash || a.shape != b.shape,
                "{} / {}",
                a.name,
                b.name
            );
        }
    }
    let train = &series[5];
    assert_eq!(train.name, "training length L = 40");
    assert!(train.points.iter().all(|p| p.0 == 40.0));
    let svg = render(&fig, "risk");
    let t = texts(&svg);
    for l in [
        "model",
        "vanilla GD (η*)",
        "debiased GD (η*)",
        "ridge (Bayes λ)",
        "kernel regressor (ω*, μ*)",
        "training length L = 40",
    ] {
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
    // markers are outlines, not filled shapes: where two estimators agree (ridge and OLS), the
    // marker drawn first still shows inside the other
    assert!(!svg.contains("<polygon"), "a filled marker");
    no_float_noise(&t);
}

#[test]
fn styled_series_have_a_marker_shape_each_for_six_estimators() {
    // six estimators (the he2025 risk figure's model and five baselines) get six shapes
    let shapes: Vec<_> = (0..6)
        .map(|k| {
            icl_core_run::plot::Series::line("s", vec![(1.0, 1.0)])
                .styled(k)
                .shape
        })
        .collect();
    for (i, a) in shapes.iter().enumerate() {
        assert!(
            !shapes[i + 1..].contains(a),
            "shape {a:?} twice in {shapes:?}"
        );
    }
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
    assert!(names.contains(&"model, τ = 0.5"), "{names:?}");
    // five estimators, the tempered model, the training length
    assert_eq!(names.len(), 7);
}

/// `--tau 0.5,1,opt`: the model's curves in the model's colour, one line style each, the
/// chosen temperatures in the opt curve's name; `--log-lengths` puts L' on a log axis.
#[test]
fn tempered_model_curves_share_a_colour_and_differ_in_style() {
    let mut res = rows();
    let model: Vec<EvalRow> = res
        .rows
        .iter()
        .filter(|r| r.estimator == "model")
        .cloned()
        .collect();
    res.rows.retain(|r| r.estimator != "model");
    for (k, (tau, opt)) in [(0.5, false), (1.0, false), (0.0, true)]
        .into_iter()
        .enumerate()
    {
        for (i, r) in model.iter().enumerate() {
            res.rows.push(EvalRow {
                tau: Some(if opt { 0.4 + 0.05 * i as f64 } else { tau }),
                tau_opt: opt,
                risk: r.risk * (1.0 - 0.05 * k as f64),
                ..r.clone()
            });
        }
    }
    res.log_lengths = true;
    let fig = figures::risk_vs_len(&res).unwrap();
    let p = &fig.panels[0];
    assert_eq!(p.x.scale, icl_core_run::plot::Scale::Log);
    let models: Vec<_> = p
        .series
        .iter()
        .filter(|s| s.name.starts_with("model"))
        .collect();
    assert_eq!(models.len(), 3);
    assert!(models.iter().all(|s| s.color == Some(0)));
    assert!(models[0].dash != models[1].dash && models[1].dash != models[2].dash);
    assert!(p
        .series
        .iter()
        .all(|s| s.color != Some(0) || s.name.starts_with("model")));
    let t = texts(&render(&fig, "risk-tau"));
    for l in ["model, τ = 0.5", "model", "model, τ opt (0.4 … 0.6)"] {
        assert!(has(&t, l), "legend {l} missing in {t:?}");
    }
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
        train_len: None,
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
    for l in ["model", "least squares", "averaging"] {
        assert!(has(&t, l), "legend {l} missing in {t:?}");
    }
    no_float_noise(&t);
    // a sparse task's figure divides by E y² = k, as Garg et al.'s, and says so
    let sparse = EvalRows {
        normalization: Some(3.0),
        ..res.clone()
    };
    let fig = figures::risk_vs_len(&sparse).unwrap();
    let p = &fig.panels[0];
    // averaging's 30 / (3 L) at L = 1 is cut off above the model's highest point (5 / 3, the
    // axis ending at 1.1 x that, on its labelled tick 2), as Garg et al.'s axis cuts theirs
    assert_eq!(p.y.label, "squared error / 3 (cut at 2)");
    assert!(p.title.contains("E y² = 3"), "{}", p.title);
    let model = p.series.iter().find(|s| s.name == "model").unwrap();
    assert_eq!(model.points[0], (0.0, d as f64 / 3.0));
}

/// Render an SVG file icl wrote to PNG and check it the way [`render`] checks a figure: not
/// blank, its text drawn.
fn check_png_of(svg_path: &std::path::Path) -> String {
    let svg =
        std::fs::read_to_string(svg_path).unwrap_or_else(|e| panic!("{}: {e}", svg_path.display()));
    let png_bytes = png::render(&svg).unwrap();
    let out = svg_path.with_extension("png");
    std::fs::write(&out, &png_bytes).unwrap();
    let (w, h, _) = png::decode(&png_bytes).unwrap();
    let ink = inked(&png_bytes);
    assert!(
        ink > (w * h / 100) as usize,
        "{}: PNG nearly blank ({ink} pixels inked)",
        svg_path.display()
    );
    let bare = inked(&png::render(&without_text(&svg)).unwrap());
    assert!(ink > bare + 2000, "{}: text missing", svg_path.display());
    svg
}

/// He et al.'s Fig. 1a: every KQ and OV heatmap labelled by the token's components (x₁ … x_d,
/// y), one colour scale per kind with its colour bar, numbers without `-0.00`, masked cells
/// explained in a note instead of a `*`.
#[test]
fn circuit_heatmaps_are_labelled_and_share_a_scale() {
    use icl_core_run::plot::{heatmaps_text, token_labels, Heatmap};
    let d = 3;
    let e = d + 1;
    let comps = token_labels(d, 1);
    assert_eq!(comps, ["x₁", "x₂", "x₃", "y"]);
    let kq = |w: f64| -> Vec<Option<f64>> {
        (0..e * e)
            .map(|k| {
                if k % e >= d {
                    None
                } else if k / e == k % e {
                    Some(w)
                } else {
                    Some(-0.001)
                }
            })
            .collect()
    };
    let maps = vec![
        Heatmap::new("head 0 KQ (positive)", e, e, kq(0.13))
            .labelled(comps.clone(), comps.clone())
            .on_scale("KQ")
            .noted("KQ: rows the key token; grey: unused"),
        Heatmap::new(
            "head 0 OV",
            e,
            1,
            vec![Some(0.0), Some(0.0), Some(0.0), Some(3.46)],
        )
        .labelled(comps.clone(), vec!["ŷ".into()])
        .on_scale("OV"),
        Heatmap::new("head 1 KQ (negative)", e, e, kq(-0.12))
            .labelled(comps.clone(), comps.clone())
            .on_scale("KQ"),
        Heatmap::new(
            "head 1 OV",
            e,
            1,
            vec![Some(0.0), Some(0.0), Some(0.0), Some(-3.4)],
        )
        .labelled(comps.clone(), vec!["ŷ".into()])
        .on_scale("OV"),
    ];
    let svg = heatmaps_text(&maps).unwrap();
    let path = out_dir().join("circuits.svg");
    std::fs::write(&path, &svg).unwrap();
    check_png_of(&path);
    let t = texts(&svg);
    for l in [
        "x₁", "x₃", "y", "ŷ", "KQ", "OV", "0.13", "3.46", "-3.46", "0",
    ] {
        assert!(has(&t, l), "{l} missing in {t:?}");
    }
    assert!(
        !t.iter().any(|x| x == "*" || x == "-0.00" || x == "-0.000"),
        "{t:?}"
    );
    assert!(
        t.iter().any(|x| x.starts_with("KQ: rows the key token")),
        "{t:?}"
    );
    // both KQ maps on one scale: head 1's -0.12 is nearly as deep a blue as head 0's 0.13 red
    assert!(
        has(&t, "0.13") && has(&t, "-0.13"),
        "the KQ colour bar spans ±0.13"
    );
    // a map of nothing but masked or non-finite cells draws, and no map is refused
    let odd = vec![Heatmap::new(
        "empty",
        2,
        2,
        vec![None, Some(f64::NAN), None, None],
    )];
    assert!(heatmaps_text(&odd).is_ok());
    assert!(heatmaps_text(&[Heatmap::new("short", 2, 2, vec![Some(1.0)])]).is_ok());
    assert!(heatmaps_text(&[]).is_err());
}

/// `icl theory he2025-flow --svg`: all the dynamics happen by t = 10 of 2000, so the time axis
/// is logarithmic; the legend and the y label use the paper's symbols, not column names.
#[test]
fn he2025_flow_figure_has_a_log_time_axis_and_readable_names() {
    let (out, _) = icl_core_run::theory::evaluate("he2025-flow", &[]).unwrap();
    let traj = out.traj.unwrap();
    let path = out_dir().join("he2025-flow.svg");
    icl_core_run::theory::write_files(None, Some(&path), &traj).unwrap();
    let t = texts(&check_png_of(&path));
    for l in [
        "φ (KQ scale)",
        "ρ (OV scale)",
        "2φρ (effective step)",
        "η*, the optimal step",
    ] {
        assert!(has(&t, l), "legend {l} missing in {t:?}");
    }
    assert!(
        !t.iter().any(|x| x.contains("two_phi_rho") || x == "value"),
        "{t:?}"
    );
    // decades of time labelled
    for l in ["1", "10", "100", "1000"] {
        assert!(has(&t, l), "time label {l} missing in {t:?}");
    }
}

/// Axes and legends stay drawable on degenerate input: a lone point, NaN values, an empty
/// series beside a full one; a figure with nothing drawable is refused, not a panic.
#[test]
fn degenerate_series_draw_or_are_refused() {
    use icl_core_run::plot::{lines_figure, Series};
    let one = lines_figure(
        "one point",
        "step",
        "loss",
        &[Series::line("a", vec![(5.0, 0.3)])],
        true,
    );
    assert!(one.svg().is_ok());
    let nan = lines_figure(
        "nan",
        "x",
        "y",
        &[
            Series::line(
                "nan",
                vec![(1.0, f64::NAN), (2.0, 1.0), (3.0, f64::INFINITY)],
            ),
            Series::line("empty", Vec::new()),
        ],
        false,
    );
    assert!(nan.svg().is_ok());
    let none = lines_figure("none", "x", "y", &[Series::line("e", Vec::new())], true);
    assert!(none.svg().is_err());
    assert!(figures::loss(&[]).svg().is_err());
}

/// `sweep collect`'s `summary_risk.svg`: every seed drawn (a seed that did not split, risk 0.399
/// against 0.246, stands apart from the mean), integer keys labelled at their values, the y
/// axis named in words.
#[test]
fn sweep_summary_draws_every_seed() {
    use icl_core_run::sweep::collect::{summary_figure, Metric, Row};
    use serde_json::json;
    let cols = vec!["model.heads".to_string(), "train.seed".to_string()];
    let mut rows = Vec::new();
    for h in [1, 2] {
        for seed in 0..3 {
            let risk = if h == 2 && seed == 1 {
                0.399
            } else {
                0.246 + 0.1 * (h == 1) as i32 as f64
            };
            rows.push(Row {
                run: format!("heads={h},seed={seed}"),
                values: vec![
                    ("model.heads".into(), json!(h)),
                    ("train.seed".into(), json!(seed)),
                ],
                metric: "risk.risk".into(),
                value: Metric::Number(risk),
            });
            rows.push(Row {
                run: format!("heads={h},seed={seed}"),
                values: vec![
                    ("model.heads".into(), json!(h)),
                    ("train.seed".into(), json!(seed)),
                ],
                metric: "heads.0.kind".into(),
                value: Metric::Text("positive".into()),
            });
        }
    }
    let fig = summary_figure(&rows, &cols, "risk.risk", "risk at the training length").unwrap();
    let p = &fig.panels[0];
    let seeds = p.series.iter().find(|s| s.name == "each seed").unwrap();
    assert_eq!(seeds.points.len(), 6);
    assert!(seeds.points.contains(&(2.0, 0.399)));
    let svg = render(&fig, "summary_risk");
    let t = texts(&svg);
    assert!(has(&t, "1") && has(&t, "2"), "{t:?}");
    assert!(!has(&t, "1.2") && !has(&t, "1.4"), "{t:?}");
    assert!(
        has(&t, "risk at the training length (MSE)") && !has(&t, "risk.risk"),
        "{t:?}"
    );
    assert!(has(&t, "mean over seeds") && has(&t, "each seed"), "{t:?}");
    // a text metric has no plot
    assert!(summary_figure(&rows, &cols, "heads.0.kind", "kind").is_none());
}

/// Every figure a run writes, from tiny real runs of each family: `loss.svg` and `omega_mu.svg`
/// (one-layer attention), `circuits.svg` (its KQ / OV maps, and a transformer's Φ / Ψ),
/// `pattern.svg`, zhang2025's `loss.svg` and `values.svg`, GPT-2's `attention.svg`, and
/// `icl eval --plot`: each rendered to PNG and checked not blank.
#[test]
fn every_figure_of_a_run_renders() {
    use icl_core_run::options::{EvalArgs, List};
    use icl_core_run::train::{train, TrainOptions};
    use icl_core_run::RunDir;
    let root = out_dir().join("runs");
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    let run = |preset: &str, sets: &[(&str, &str)]| -> RunDir {
        let mut cfg = icl_core::presets::preset(preset).unwrap();
        for (k, v) in sets {
            cfg.set(k, v).unwrap();
        }
        let out = root.join(preset);
        let o = TrainOptions {
            eval_samples: 0,
            force: true,
            ..TrainOptions::default()
        };
        train(&cfg, &out, &o, &mut |_, _, _| true).unwrap();
        RunDir::new(out)
    };
    let check = |dir: &RunDir, files: &[&str]| {
        for f in files {
            check_png_of(&dir.file(f));
        }
    };
    // `icl plot`: the training figures drawn again from the model's training log are the bytes
    // training wrote, the run's other files untouched (checked before analyze and eval add theirs)
    let redraws = |dir: &RunDir, drawn: &[&str]| {
        let read = |f: &str| std::fs::read(dir.file(f)).unwrap();
        let kept: Vec<(&str, Vec<u8>)> = ["model.safetensors", "metrics.csv", "summary.json"]
            .iter()
            .map(|&f| (f, read(f)))
            .collect();
        let before: Vec<Vec<u8>> = drawn.iter().map(|f| read(f)).collect();
        for f in drawn {
            std::fs::remove_file(dir.file(f)).unwrap();
        }
        let figures = icl_core_run::outputs::redraw(dir).unwrap();
        let svgs: Vec<&str> = drawn
            .iter()
            .copied()
            .filter(|f| f.ends_with(".svg"))
            .collect();
        assert_eq!(figures, svgs, "{}", dir.dir.display());
        for (f, b) in drawn.iter().zip(before) {
            assert!(
                read(f) == b,
                "{f} of {} drawn differently",
                dir.dir.display()
            );
        }
        for (f, b) in kept {
            assert!(read(f) == b, "{f} of {} changed", dir.dir.display());
        }
    };
    let short = [("train.steps", "60"), ("train.log_every", "20")];
    let he = run("he2025", &short);
    redraws(&he, &["loss.svg", "omega_mu.svg"]);
    icl_core_run::analyze::analyze_run(&he, true).unwrap();
    check(&he, &["loss.svg", "omega_mu.svg", "circuits.svg"]);
    let loss_svg = std::fs::read_to_string(he.file("loss.svg")).unwrap();
    let t = texts(&loss_svg);
    assert!(
        t.iter().any(|x| x.starts_with("he2025: ")),
        "run in the title: {t:?}"
    );
    // the curve has a point per metrics.csv row, the early rows (2, 5, 10) with the regular ones
    // (1, 20, 40, 60): the first decades of the log step axis are drawn, not one straight line
    let rows = std::fs::read_to_string(he.file("metrics.csv"))
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap().to_string())
        .collect::<Vec<_>>();
    assert_eq!(rows, ["1", "2", "5", "10", "20", "40", "60"]);
    // (a line of n points is a polyline of n points; the markers' outlines have 4, 5, 9 or 13)
    let lines = |svg: &str| -> Vec<usize> {
        svg.split("points=\"")
            .skip(1)
            .map(|p| p.split('"').next().unwrap().split_whitespace().count())
            .collect()
    };
    assert!(
        lines(&loss_svg).contains(&rows.len()),
        "loss.svg's curve: {:?}",
        lines(&loss_svg)
    );
    // omega_mu.svg too: each head's line through every row
    let om = std::fs::read_to_string(he.file("omega_mu.svg")).unwrap();
    assert!(
        lines(&om).contains(&rows.len()),
        "omega_mu.svg's lines: {:?}",
        lines(&om)
    );
    let args = EvalArgs {
        lengths: List("10,40,100".into()),
        samples: 200,
        engine: Some("scalar".into()),
        log_lengths: true,
        ..EvalArgs::default()
    };
    let res = args.eval(&he).unwrap();
    assert_eq!(res.train_len, Some(40));
    let plot = root.join("risk.svg");
    icl_core_run::eval::write_risk_plot(&res, &plot).unwrap();
    check_png_of(&plot);

    let z = run(
        "zhang2025-fig1",
        &[("train.steps", "200"), ("train.log_every", "20")],
    );
    redraws(
        &z,
        &[
            "alignment.csv",
            "loss.csv",
            "loss.svg",
            "m.csv",
            "values.csv",
            "values.svg",
        ],
    );
    check(&z, &["loss.svg", "values.svg"]);
    // fig. 1's twin is dashed, so the loss under it still shows
    let t = texts(&std::fs::read_to_string(z.file("loss.svg")).unwrap());
    assert!(has(&t, "cubic-feature MLP (twin, dashed)"), "{t:?}");

    let ml = run("multilayer-t2", &short);
    redraws(&ml, &["loss.svg", "pattern.svg"]);
    icl_core_run::analyze::analyze_run(&ml, true).unwrap();
    check(&ml, &["loss.svg", "pattern.svg", "circuits.svg"]);

    let g = run(
        "garg-linear-tiny",
        &[("train.steps", "20"), ("train.log_every", "10")],
    );
    redraws(&g, &["loss.svg"]);
    icl_core_run::analyze::analyze_run(&g, true).unwrap();
    check(&g, &["loss.svg", "attention.svg"]);
}
