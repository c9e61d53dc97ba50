//! icl's own figures, built from what a run logs or an evaluation measures:
//! * [`loss`]: `loss.svg`, the training loss on log-log axes (a log step axis shows the first
//!   thousand steps as well as the last decade);
//! * [`omega_mu`]: `omega_mu.svg`, each head's omega and mu over training (He et al. 2025
//!   figures 1b and 2b);
//! * [`pattern`]: `pattern.svg`, the multilayer paper's ⟨u₁, ω⟩ and ⟨u₂, ω⟩ over training
//!   (Table 1's numbers as they settle; one pair per layer of a non-looped stack);
//! * [`risk_vs_len`]: the risk of the model and of every baseline against the test length L',
//!   with error bars of one standard error (He et al. 2025 figure 3).
use super::{Axis, Dash, Figure, Panel, Series};
use crate::error::{Result, RunError};
use crate::summary::EvalRows;

/// The training loss against the step, both axes log (a step-0 row is left out).
pub fn loss(curve: &[(f64, f64)]) -> Figure {
    Figure::single(Panel {
        title: "training loss".into(),
        x: Axis::log("step").steps(),
        y: Axis::log("MSE"),
        series: vec![Series::line("train loss", curve.to_vec())],
    })
}

/// [`loss`] over a curriculum (Garg et al.'s, which grows d and L as training goes): the raw loss,
/// which rises with d while the model learns, and below it the loss over E y² at each point's
/// dimension (`per_d`: (step, loss / E y²), their squared error / d).
pub fn loss_curriculum(curve: &[(f64, f64)], per_d: &[(f64, f64)]) -> Figure {
    Figure::stacked(vec![
        Panel {
            title: "training loss (the curriculum grows d, and E y² with it)".into(),
            x: Axis::log("step").steps(),
            y: Axis::log("MSE"),
            series: vec![Series::line("train loss", curve.to_vec())],
        },
        Panel {
            title: "training loss / E y² at the step's curriculum d".into(),
            x: Axis::log("step").steps(),
            y: Axis::log("MSE / E y²"),
            series: vec![Series::line("train loss / E y²", per_d.to_vec())],
        },
    ])
}

/// Each head's omega (mean diagonal of KQ_11) and mu (OV entry of the first output) against the
/// step, one panel each: `omega[h]` and `mu[h]` hold head h's value at every `steps` entry
/// (heads numbered from 0, as in `summary.json` and `circuits.svg`). `omega_refs` and
/// `mu_refs` are the theory's values, drawn as grey dashed levels (none: no reference).
pub fn omega_mu(
    steps: &[f64],
    omega: &[Vec<f64>],
    mu: &[Vec<f64>],
    omega_refs: &[(String, f64)],
    mu_refs: &[(String, f64)],
) -> Figure {
    let head = |h: usize| format!("head {h}");
    let mut om = over_steps("ω per head: mean diagonal of KQ₁₁", "ω", steps, omega, head);
    let mut mp = over_steps("μ per head: OV entry (y, y)", "μ", steps, mu, head);
    with_levels(&mut om, steps, omega_refs);
    with_levels(&mut mp, steps, mu_refs);
    Figure::stacked(vec![om, mp])
}

/// The smallest and largest of `v` (`(inf, -inf)` when empty: then `lo <= hi` is false).
fn min_max(v: impl IntoIterator<Item = f64>) -> (f64, f64) {
    v.into_iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
            (a.min(x), b.max(x))
        })
}

/// Grey dashed levels (name, y) across the steps of `panel`, each in its own dash.
fn with_levels(panel: &mut Panel, steps: &[f64], levels: &[(String, f64)]) {
    let x = steps.iter().copied().filter(|s| *s > 0.0 && s.is_finite());
    let (x0, x1) = min_max(x);
    if !(x0 <= x1) {
        return;
    }
    for (k, (name, y)) in levels.iter().enumerate() {
        let dash = [Dash::Dashed, Dash::Dotted, Dash::Long][k % 3];
        panel.series.push(
            Series::level(name.clone(), *y, x0, x1)
                .with_dash(dash)
                .with_color(7),
        );
    }
}

/// A panel of quantities against the step (log axis): `cols[k]` holds series k's value at every
/// `steps` entry, named `name(k)`.
fn over_steps(
    title: &str,
    y: &str,
    steps: &[f64],
    cols: &[Vec<f64>],
    name: impl Fn(usize) -> String,
) -> Panel {
    Panel {
        title: title.into(),
        x: Axis::log("step").steps(),
        y: Axis::linear(y),
        series: cols
            .iter()
            .enumerate()
            .map(|(k, col)| {
                Series::line(
                    name(k),
                    steps.iter().copied().zip(col.iter().copied()).collect(),
                )
            })
            .collect(),
    }
}

/// The multilayer paper's ⟨u₁, ω⟩ (the covariate step, negative) and ⟨u₂, ω⟩ (the label step,
/// positive) against the step, one panel each: `u1[k]` and `u2[k]` hold parameter set k's value
/// at every `steps` entry (one set for a looped block, one per layer otherwise).
pub fn pattern(steps: &[f64], u1: &[Vec<f64>], u2: &[Vec<f64>]) -> Figure {
    let label = |k: usize| {
        if u1.len() == 1 {
            "looped block".to_string()
        } else {
            format!("layer {}", k + 1)
        }
    };
    Figure::stacked(vec![
        over_steps(
            "<u₁, ω>: the covariate step (Table 1)",
            "<u₁, ω>",
            steps,
            u1,
            label,
        ),
        over_steps(
            "<u₂, ω>: the label step (Table 1)",
            "<u₂, ω>",
            steps,
            u2,
            label,
        ),
    ])
}

/// A reader's name for an estimator of an evaluation (`vanilla_gd` -> `vanilla GD (η*)`); an
/// unknown one with its underscores as spaces.
pub fn estimator_name(id: &str) -> String {
    let layer = |prefix: &str| {
        id.strip_prefix(prefix)
            .and_then(|k| k.parse::<usize>().ok())
    };
    if let Some(k) = layer("model_t") {
        return format!("model after layer {k}");
    }
    if let Some(k) = layer("alg1_t") {
        return format!("Algorithm 1 after layer {k}");
    }
    if let Some(k) = layer("knn") {
        return format!("{k} nearest neighbours");
    }
    match id {
        "model" => "model".into(),
        "vanilla_gd" => "vanilla GD (η*)".into(),
        "debiased_gd" => "debiased GD (η*)".into(),
        "ridge" => "ridge (Bayes λ)".into(),
        "ols" => "OLS".into(),
        "nw" => "kernel regressor (ω*, μ*)".into(),
        "lstsq" => "least squares".into(),
        "averaging" => "averaging".into(),
        "zero" => "zero predictor".into(),
        "precond_gd" => "preconditioned GD".into(),
        "precond_debiased_gd" => "preconditioned debiased GD".into(),
        "alg1" => "Algorithm 1".into(),
        "2sls" => "2SLS".into(),
        "2sls_xq" => "2SLS at x_q".into(),
        "alg1_ideal_2stage" => "Algorithm 1, ideal two stages".into(),
        "alg1_1stage" => "Algorithm 1, one stage".into(),
        "tf_ref" => "one-stage transformer (ref)".into(),
        other => other.replace('_', " "),
    }
}

/// A temperature as a legend prints it (two decimals at most: `0.45`, `1`).
fn tau_text(t: f64) -> String {
    super::ticks::number((t * 100.0).round() / 100.0, None)
}

/// Risk against the test length L' of every estimator of `res` (one series each, in row
/// order), with error bars of one standard error, each estimator in its own colour, line style
/// and marker (so that one under another still shows), the model's temperatures in the model's
/// colour, one line style each; the training length marked by a dotted grey line. L' is on a
/// log axis when `res.log_lengths` or it spans a factor 20 or more, the risk when it spans a
/// factor 10 or more.
pub fn risk_vs_len(res: &EvalRows) -> Result<Figure> {
    if let Some(d) = res.d {
        return risk_per_position(res, d);
    }
    let series = eval_series(res, 1.0)?;
    let title = with_shift(
        res,
        String::from("test risk against L′ (±1 standard error)"),
    );
    let ylabel = match &res.target {
        Some(t) => format!("risk ({t} target)"),
        None => "risk".to_string(),
    };
    let lens: Vec<f64> = res.rows.iter().map(|r| r.len as f64).collect();
    let x = if res.log_lengths {
        Axis::log("test length L′")
    } else {
        Axis::auto("test length L′", lens.iter().copied(), 20.0)
    };
    Ok(Figure::single(Panel {
        title,
        x: x.steps().with_ticks(lens.clone()),
        y: Axis::auto(&ylabel, res.rows.iter().map(|r| r.risk), 10.0),
        series,
    }))
}

/// A GPT-2 evaluation (Garg et al. 2022, Figs. 2 and 4): squared error / E y² against the
/// number of in-context examples, one line per estimator (±1 standard error, also divided), on a
/// linear axis as theirs (a log axis would spend most of its height on least squares' rounding
/// error, 1e-15 once L >= d without noise). E y² is `res.normalization`, Garg et al.'s: d for
/// linear functions and two-layer networks (the axis says "/ d"), k for sparse ones, 1 for trees.
fn risk_per_position(res: &EvalRows, d: usize) -> Result<Figure> {
    let df = d.max(1) as f64;
    let norm = res.normalization.filter(|n| *n > 0.0).unwrap_or(df);
    let (ylabel, what) = if norm == df {
        ("squared error / d".to_string(), format!("d = {d}"))
    } else {
        (
            format!("squared error / {}", super::ticks::number(norm, None)),
            format!("d = {d}, E y² = {}", super::ticks::number(norm, None)),
        )
    };
    let mut series = eval_series(res, norm)?;
    let lens: Vec<f64> = res.rows.iter().map(|r| r.len as f64).collect();
    // Garg et al.'s axis: up to 1.25, with the zero predictor's level at 1; higher where the
    // model goes higher, so that a baseline's blow-up at few examples (averaging's, ~d / L)
    // does not flatten every other line
    let (x0, x1) = min_max(lens.iter().copied());
    if x0 <= x1 {
        series.push(
            Series::level("predicting 0 (E y²)", 1.0, x0, x1)
                .with_dash(super::Dash::Dashed)
                .with_color(7),
        );
    }
    // each row's top (its risk + 1 SE, over E y²), of the model's rows or of all
    let tops = |model_only: bool| {
        res.rows
            .iter()
            .filter(move |r| !model_only || r.estimator == "model")
            .map(|r| (r.risk + r.stderr) / norm)
            .filter(|v| v.is_finite())
    };
    let top = tops(true).fold(1.25f64, |a, v| a.max(1.1 * v));
    let highest = min_max(tops(false)).1;
    let title = format!("{ylabel} ({what}) against in-context examples (±1 standard error)");
    let mut panel = Panel {
        title: with_shift(res, title),
        x: Axis::auto(
            "in-context examples (pairs before the prediction)",
            lens.iter().copied(),
            20.0,
        ),
        y: Axis::linear(&ylabel),
        series,
    };
    if highest > top {
        // the axis ends where the drawing will end it: on the labelled tick above `top`
        panel.y = panel.y.with_max(top);
        if let Some((_, end)) = super::y_extent(&panel) {
            panel.y.label = format!("{ylabel} (cut at {})", super::ticks::number(end, None));
        }
    }
    Ok(Figure::single(panel))
}

/// One line per estimator (and temperature) of `res`, risks and errors divided by `scale`, and
/// the training length's line.
fn eval_series(res: &EvalRows, scale: f64) -> Result<Vec<Series>> {
    // (estimator, temperature key) -> points, errors, chosen temperatures
    type Group = ((String, String), Vec<(f64, f64)>, Vec<f64>, Vec<f64>);
    let mut groups: Vec<Group> = Vec::new();
    for r in &res.rows {
        let tau = match r.tau {
            Some(_) if r.tau_opt => "opt".to_string(),
            Some(t) if t != 1.0 => format!("{t}"),
            _ => String::new(),
        };
        let key = (r.estimator.clone(), tau);
        let i = match groups.iter().position(|g| g.0 == key) {
            Some(i) => i,
            None => {
                groups.push((key, Vec::new(), Vec::new(), Vec::new()));
                groups.len() - 1
            }
        };
        let g = &mut groups[i];
        g.1.push((r.len as f64, r.risk / scale));
        g.2.push(r.stderr / scale);
        g.3.extend(r.tau);
    }
    if groups.is_empty() {
        return Err(RunError::Refused("no evaluation rows to plot".into()));
    }
    let (mut models, mut others) = (0usize, 0usize);
    let mut series: Vec<Series> = Vec::new();
    for ((est, tau), pts, err, taus) in groups {
        let mut name = estimator_name(&est);
        if tau == "opt" {
            let (lo, hi) = min_max(taus.iter().copied());
            name = if lo == hi {
                format!("{name}, τ opt = {}", tau_text(lo))
            } else {
                format!("{name}, τ opt ({} … {})", tau_text(lo), tau_text(hi))
            };
        } else if !tau.is_empty() {
            name = format!("{name}, τ = {tau}");
        }
        let s = Series::line(name, pts).with_errors(err);
        series.push(if est == "model" {
            // the model's temperatures: its colour, a line style and marker each
            models += 1;
            s.styled(models - 1).with_color(0)
        } else {
            others += 1;
            s.styled(others).with_color(others)
        });
    }
    if let Some(l) = res.train_len {
        let ys = series.iter().flat_map(|s| s.points.iter().map(|p| p.1));
        let ys: Vec<f64> = ys.filter(|y| y.is_finite() && *y > 0.0).collect();
        let (lo, hi) = min_max(ys);
        if lo <= hi {
            series.push(
                Series::line(
                    format!("training length L = {l}"),
                    vec![(l as f64, lo), (l as f64, hi)],
                )
                .with_dash(super::Dash::Dotted)
                .with_color(7),
            );
        }
    }
    Ok(series)
}

/// `title` with the evaluation's shift keys, if any.
fn with_shift(res: &EvalRows, mut title: String) -> String {
    if let Some(sh) = res.rows.first().and_then(|r| r.shift.as_ref()) {
        let keys: Vec<String> = sh.iter().map(|(k, v)| format!("{k}={v}")).collect();
        if !keys.is_empty() {
            title.push_str(&format!(", shift {}", keys.join(", ")));
        }
    }
    title
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A GPT-2 evaluation (d = 20) whose model peaks at `model_top` × d and whose averaging
    /// baseline reaches `avg_top` × d at one example.
    fn gpt2_rows(model_top: f64, avg_top: f64) -> EvalRows {
        let mut rows = Vec::new();
        for l in 0..=40usize {
            let m = model_top * (1.0 - l as f64 / 80.0);
            rows.push(
                serde_json::json!({"estimator": "model", "L": l, "risk": 20.0 * m, "stderr": 0.2}),
            );
            let a = if l == 1 { avg_top } else { 0.9 };
            rows.push(serde_json::json!({"estimator": "averaging", "L": l, "risk": 20.0 * a, "stderr": 0.2}));
        }
        serde_json::from_value(serde_json::json!({
            "rows": rows, "samples": 100, "seed": 1, "engine": "simd",
            "d": 20, "normalization": 20.0, "train_len": 40
        }))
        .unwrap()
    }

    #[test]
    fn a_gpt2_figure_cuts_its_axis_above_the_model_as_garg_et_al_do() {
        // averaging at 20 × E y² with one example: the axis ends at Garg et al.'s 1.25 (on its
        // labelled tick, 1.4) and says so; the zero predictor's level is drawn at 1
        let f = risk_vs_len(&gpt2_rows(1.0, 20.0)).unwrap();
        let p = &f.panels[0];
        assert_eq!(p.y.max, Some(1.25));
        assert!(p.y.label.contains("(cut at 1.4)"), "{}", p.y.label);
        assert!(p
            .series
            .iter()
            .any(|s| s.name == "predicting 0 (E y²)" && s.points.iter().all(|q| q.1 == 1.0)));
        // a model above 1.25 (under a shift) keeps its whole line: 1.1 × (its top + 1 SE)
        let f = risk_vs_len(&gpt2_rows(2.4, 20.0)).unwrap();
        let want = 1.1 * (2.4 + 0.2 / 20.0);
        assert!((f.panels[0].y.max.unwrap() - want).abs() < 1e-12);
        // nothing above: no cut
        let f = risk_vs_len(&gpt2_rows(1.0, 1.0)).unwrap();
        assert_eq!(f.panels[0].y.max, None);
        assert!(!f.panels[0].y.label.contains("cut"));
        f.svg().unwrap();
    }

    #[test]
    fn a_line_leaves_the_plot_where_it_crosses_the_top() {
        let pieces = crate::plot::below_top(&[(0.0, 0.0), (1.0, 2.0), (2.0, 0.0), (3.0, 0.5)], 1.0);
        assert_eq!(
            pieces,
            vec![
                vec![(0.0, 0.0), (0.5, 1.0)],
                vec![(1.5, 1.0), (2.0, 0.0), (3.0, 0.5)]
            ]
        );
        // entirely above: nothing; entirely below: the line itself
        assert!(crate::plot::below_top(&[(0.0, 2.0), (1.0, 3.0)], 1.0).is_empty());
        let low = [(0.0, 0.1), (1.0, 0.2)];
        assert_eq!(crate::plot::below_top(&low, 1.0), vec![low.to_vec()]);
    }
}
