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

/// Grey dashed levels (name, y) across the steps of `panel`, each in its own dash.
fn with_levels(panel: &mut Panel, steps: &[f64], levels: &[(String, f64)]) {
    let x = steps.iter().copied().filter(|s| *s > 0.0 && s.is_finite());
    let (x0, x1) = x.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), s| {
        (a.min(s), b.max(s))
    });
    if !(x0 <= x1) {
        return;
    }
    for (k, (name, y)) in levels.iter().enumerate() {
        let dash = [Dash::Dashed, Dash::Dotted, Dash::Long][k % 3];
        panel
            .series
            .push(Series::level(name.clone(), *y, x0, x1).with_dash(dash).with_color(7));
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

/// The name of an estimator row in the legend: `model (τ = 0.5)` for tempered model rows.
fn row_label(estimator: &str, tau: Option<f64>, tau_opt: bool) -> String {
    match tau {
        Some(_) if tau_opt => format!("{estimator} (τ opt)"),
        Some(t) if t != 1.0 => format!("{estimator} (τ = {t})"),
        _ => estimator.to_string(),
    }
}

/// Risk against the test length L' of every estimator of `res` (one series each, in row
/// order), with error bars of one standard error. L' is on a log axis when it spans a factor
/// 20 or more, the risk when it spans a factor 10 or more.
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
    Ok(Figure::single(Panel {
        title,
        x: Axis::auto("test length L′", lens.iter().copied(), 20.0)
            .steps()
            .with_ticks(lens.clone()),
        y: Axis::auto(&ylabel, res.rows.iter().map(|r| r.risk), 10.0),
        series,
    }))
}

/// A GPT-2 evaluation (Garg et al. 2022, Fig. 2): squared error / d against the number of
/// in-context examples, one line per estimator (±1 standard error, also / d), on a linear axis
/// as theirs (a log axis would spend most of its height on least squares' rounding error,
/// 1e-15 once L >= d without noise).
fn risk_per_position(res: &EvalRows, d: usize) -> Result<Figure> {
    let df = d.max(1) as f64;
    let series = eval_series(res, df)?;
    let title = with_shift(
        res,
        format!("squared error / d (d = {d}) against in-context examples (±1 standard error)"),
    );
    let lens: Vec<f64> = res.rows.iter().map(|r| r.len as f64).collect();
    Ok(Figure::single(Panel {
        title,
        x: Axis::auto(
            "in-context examples (pairs before the prediction)",
            lens.iter().copied(),
            20.0,
        ),
        y: Axis::linear("squared error / d"),
        series,
    }))
}

/// One line per estimator (and temperature) of `res`, risks and errors divided by `scale`.
fn eval_series(res: &EvalRows, scale: f64) -> Result<Vec<Series>> {
    let mut series: Vec<Series> = Vec::new();
    for r in &res.rows {
        let name = row_label(&r.estimator, r.tau, r.tau_opt);
        let i = match series.iter().position(|s| s.name == name) {
            Some(i) => i,
            None => {
                series.push(Series::line(name, Vec::new()).with_errors(Vec::new()));
                series.len() - 1
            }
        };
        series[i].points.push((r.len as f64, r.risk / scale));
        series[i].err.push(r.stderr / scale);
    }
    if series.is_empty() {
        return Err(RunError::Refused("no evaluation rows to plot".into()));
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
