//! The state of a sweep folder's runs, and their results as one tidy table.
//!
//! `results.csv` / `results.json`: one row per run and metric, with the run's name, its grid
//! values and seed as columns (`run, <grid keys...>, train.seed, metric, value`). The metrics are
//! every number and text (a head's `kind`) of the run's `summary.json` (dotted paths: `final_loss`, `risk.risk`,
//! `heads.0.omega`, `risks.ols.risk`, ...) except the config and the timing, so the table depends
//! on the configs only: the same sweep run anywhere (locally, on Slurm, with any `--jobs`) gives
//! the same bytes. The timing goes to `runs.csv` (`run, state, steps, seconds, steps_per_s`).
use super::plan::{load, PlannedRun, SEED_KEY};
use crate::checkpoint::load_config;
use crate::csv_text::csv_text;
use crate::error::{Result, RunError};
use crate::folder::{atomic_write, read_text, RunDir};
use crate::plot::{Axis, Figure, Panel, Series, Shape};
use crate::summary::Summary;
use crate::train::staging_path;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Where a run of a sweep stands.
#[derive(Debug, Clone, PartialEq)]
pub enum State {
    /// Its folder is complete.
    Complete {
        steps: u64,
        seconds: f64,
        steps_per_s: f64,
    },
    /// A process is writing it now (its staging folder is locked).
    Running,
    /// Stopped, with a checkpoint (at `step`, when readable) to resume from.
    Interrupted { step: Option<u64> },
    /// Not started.
    Pending,
    /// Its folder exists but is not a readable complete run (a deleted or corrupt
    /// `model.safetensors`, `summary.json` or `config.toml`): `sweep run` trains it again,
    /// `collect` counts it as incomplete. `reason` says what is wrong.
    Damaged { reason: String },
}

impl State {
    pub fn label(&self) -> &'static str {
        match self {
            State::Complete { .. } => "complete",
            State::Running => "running",
            State::Interrupted { .. } => "interrupted",
            State::Pending => "pending",
            State::Damaged { .. } => "damaged",
        }
    }
}

/// One run's state.
#[derive(Debug, Clone, PartialEq)]
pub struct RunState {
    pub index: usize,
    pub name: String,
    pub dir: PathBuf,
    pub state: State,
}

/// The state of every run of the sweep folder `dir`, from the run folders.
pub fn status(dir: &Path) -> Result<Vec<RunState>> {
    let runs = load(dir)?;
    runs.iter()
        .map(|r| {
            let out = dir.join(&r.name);
            Ok(RunState {
                index: r.index,
                name: r.name.clone(),
                state: state_of(&out)?,
                dir: out,
            })
        })
        .collect()
}

fn state_of(out: &Path) -> Result<State> {
    let damaged = match read_complete(out) {
        Ok(s) => {
            return Ok(State::Complete {
                steps: s.steps,
                seconds: s.training_seconds(),
                steps_per_s: s.steps_per_second,
            })
        }
        // nothing there: pending, unless a staging folder says otherwise
        Err(_) if !out.exists() => None,
        Err(e) => Some(e.to_string()),
    };
    let stage = RunDir::new(staging_path(out)?);
    if stage.dir.is_dir() {
        if let Ok(f) = std::fs::File::open(stage.file(".lock")) {
            if let Err(std::fs::TryLockError::WouldBlock) = f.try_lock() {
                return Ok(State::Running);
            }
        }
        let ckpt = stage.file("checkpoint.safetensors");
        if ckpt.is_file() {
            let step = crate::checkpoint::load(&ckpt).ok().map(|c| c.step);
            return Ok(State::Interrupted { step });
        }
    }
    Ok(match damaged {
        Some(reason) => State::Damaged { reason },
        None => State::Pending,
    })
}

/// The summary of the complete run in `out`, checked as `icl eval` checks a run before using
/// it: a run folder whose `model.safetensors` the strict reader accepts, a `config.toml` that
/// is the checkpoint's config, and a `summary.json` that decodes. `summary.json` alone is not
/// enough (a run whose model was deleted would count as done). Any failure is the error that
/// says what is wrong.
pub fn read_complete(out: &Path) -> Result<Summary> {
    let run = RunDir::new(out);
    run.check_run()?;
    let loaded = crate::checkpoint::load(&run.model())?;
    if load_config(&run.config())? != loaded.config {
        return Err(RunError::Corrupt(
            run.config(),
            "it is not the config of model.safetensors".into(),
        ));
    }
    read_summary(out)
}

fn read_summary(out: &Path) -> Result<Summary> {
    let p = RunDir::new(out).summary();
    serde_json::from_str(&read_text(&p)?).map_err(|e| RunError::Corrupt(p, e.to_string()))
}

/// Keys of `summary.json` that are not results of the config: where and how fast it ran.
const NOT_METRICS: &[&str] = &[
    "preset",
    "config",
    "engine",
    "dtype",
    "protocol",
    "seconds",
    "setup_seconds",
    "steps_per_second",
    "resumed_from",
    "total_seconds",
    "simd_level",
    "imported_from",
];

/// A metric's value: a number, or a text (a head's `kind`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(untagged)]
pub enum Metric {
    Number(f64),
    Text(String),
}

impl Metric {
    /// The number (`None` for a text).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Metric::Number(x) => Some(*x),
            Metric::Text(_) => None,
        }
    }
    /// As `results.csv` writes it.
    fn text(&self) -> String {
        match self {
            Metric::Number(x) => x.to_string(),
            Metric::Text(t) => t.clone(),
        }
    }
    fn json(&self) -> Value {
        match self {
            Metric::Number(x) => Value::from(*x),
            Metric::Text(t) => Value::from(t.clone()),
        }
    }
}

/// Every number and text of a summary's JSON as (dotted path, value); booleans as 0 / 1. Array
/// entries are named by their `estimator` where every entry has a distinct one, by index
/// otherwise.
pub fn metrics(summary: &Value) -> Vec<(String, Metric)> {
    let mut out = Vec::new();
    if let Value::Object(m) = summary {
        for (k, v) in m {
            if !NOT_METRICS.contains(&k.as_str()) {
                flatten(k, v, &mut out);
            }
        }
    }
    out
}

fn flatten(path: &str, v: &Value, out: &mut Vec<(String, Metric)>) {
    match v {
        Value::Number(n) => {
            if let Some(x) = n.as_f64() {
                out.push((path.to_string(), Metric::Number(x)));
            }
        }
        Value::Bool(b) => out.push((path.to_string(), Metric::Number(if *b { 1.0 } else { 0.0 }))),
        Value::String(t) => out.push((path.to_string(), Metric::Text(t.clone()))),
        Value::Object(m) => {
            for (k, x) in m {
                // an array entry's estimator names its rows already
                if k == "estimator" && x.is_string() {
                    continue;
                }
                flatten(&format!("{path}.{k}"), x, out);
            }
        }
        Value::Array(a) => {
            let names: Vec<Option<&str>> = a
                .iter()
                .map(|x| x.get("estimator").and_then(Value::as_str))
                .collect();
            let distinct = names.iter().enumerate().all(|(i, n)| {
                n.is_some_and(|n| !n.contains('.') && !names[..i].contains(&Some(n)))
            });
            for (i, x) in a.iter().enumerate() {
                let key = match names[i] {
                    Some(n) if distinct => n.to_string(),
                    _ => i.to_string(),
                };
                flatten(&format!("{path}.{key}"), x, out);
            }
        }
        Value::Null => {}
    }
}

/// One row of the results.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Row {
    pub run: String,
    /// The grid values and the seed, in the manifest's order.
    pub values: Vec<(String, Value)>,
    pub metric: String,
    pub value: Metric,
}

/// What [`collect`] wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Collected {
    pub rows: Vec<Row>,
    /// The runs not complete (their rows are missing).
    pub incomplete: Vec<String>,
    pub files: Vec<PathBuf>,
    /// `results.json`: `{"columns", "rows"}`.
    pub json: Value,
}

/// The value columns of a sweep: the planned grid keys and the seed.
fn columns(runs: &[PlannedRun]) -> Vec<String> {
    let mut cols: Vec<String> = Vec::new();
    for r in runs {
        for (k, _) in &r.values {
            if !cols.contains(k) {
                cols.push(k.clone());
            }
        }
    }
    if !cols.iter().any(|c| c == SEED_KEY) {
        cols.push(SEED_KEY.into());
    }
    cols
}

fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Read every complete run of the sweep folder `dir` and write `results.csv`, `results.json`,
/// `runs.csv` and the summary plots (`summary_final_loss.svg`, and `summary_risk.svg` where runs
/// have a risk). Incomplete runs are refused unless `partial` (then they are left out).
pub fn collect(dir: &Path, partial: bool) -> Result<Collected> {
    let runs = load(dir)?;
    let states = status(dir)?;
    let incomplete: Vec<String> = states
        .iter()
        .filter(|s| !matches!(s.state, State::Complete { .. }))
        .map(|s| s.name.clone())
        .collect();
    if !incomplete.is_empty() && !partial {
        return Err(RunError::Refused(format!(
            "{} of {} runs are not complete (first: {}); run them (`icl sweep run {}`) or collect with --partial",
            incomplete.len(),
            runs.len(),
            incomplete[0],
            dir.display()
        )));
    }
    let cols = columns(&runs);
    let mut rows = Vec::new();
    let mut timing: Vec<Vec<String>> = Vec::new();
    for (r, st) in runs.iter().zip(&states) {
        let out = dir.join(&r.name);
        match st.state {
            State::Complete {
                steps,
                seconds,
                steps_per_s,
            } => {
                timing.push(vec![
                    r.name.clone(),
                    "complete".into(),
                    steps.to_string(),
                    seconds.to_string(),
                    steps_per_s.to_string(),
                ]);
            }
            ref s => {
                timing.push(vec![
                    r.name.clone(),
                    s.label().to_string(),
                    String::new(),
                    String::new(),
                    String::new(),
                ]);
                continue;
            }
        }
        let p = RunDir::new(&out).summary();
        let json: Value = serde_json::from_str(&read_text(&p)?)
            .map_err(|e| RunError::Corrupt(p.clone(), e.to_string()))?;
        // every column, the seed read from the run's config when the sweep does not vary it
        let cfg = load_config(&RunDir::new(&out).config())?;
        let values: Vec<(String, Value)> = cols
            .iter()
            .map(|c| {
                let v = r
                    .values
                    .iter()
                    .find(|(k, _)| k == c)
                    .map(|(_, v)| v.clone())
                    .or_else(|| cfg.get(c).ok().and_then(|v| serde_json::to_value(v).ok()))
                    .unwrap_or(Value::Null);
                (c.clone(), v)
            })
            .collect();
        for (metric, value) in metrics(&json) {
            rows.push(Row {
                run: r.name.clone(),
                values: values.clone(),
                metric,
                value,
            });
        }
    }
    let mut header = vec!["run".to_string()];
    header.extend(cols.iter().cloned());
    header.extend(["metric".to_string(), "value".to_string()]);
    let mut csv_rows = Vec::with_capacity(rows.len());
    let mut json_rows = Vec::with_capacity(rows.len());
    for row in &rows {
        let mut fields = vec![row.run.clone()];
        let mut obj = serde_json::Map::new();
        obj.insert("run".into(), Value::from(row.run.clone()));
        for (k, v) in &row.values {
            fields.push(value_text(v));
            obj.insert(k.clone(), v.clone());
        }
        fields.extend([row.metric.clone(), row.value.text()]);
        csv_rows.push(fields);
        obj.insert("metric".into(), Value::from(row.metric.clone()));
        obj.insert("value".into(), row.value.json());
        json_rows.push(Value::Object(obj));
    }
    let json = serde_json::json!({ "columns": cols, "rows": json_rows });
    let mut files = Vec::new();
    let mut write = |name: &str, text: &str| -> Result<()> {
        let p = dir.join(name);
        atomic_write(&p, text.as_bytes())?;
        files.push(p);
        Ok(())
    };
    write("results.csv", &csv_text(&header, csv_rows)?)?;
    write("results.json", &crate::summary::pretty(&json))?;
    write(
        "runs.csv",
        &csv_text(&["run", "state", "steps", "seconds", "steps_per_s"], timing)?,
    )?;
    for (metric, file, title) in [
        (
            "final_loss",
            "summary_final_loss.svg",
            "final training loss",
        ),
        (
            "risk.risk",
            "summary_risk.svg",
            "risk at the training length",
        ),
    ] {
        let p = dir.join(file);
        if summary_plot(&p, &rows, &cols, metric, title)? {
            files.push(p);
        }
    }
    Ok(Collected {
        rows,
        incomplete,
        files,
        json,
    })
}

/// The y label of a summary plot's metric.
fn metric_label(metric: &str) -> String {
    match metric {
        "final_loss" => "final training loss (MSE)".into(),
        "risk.risk" => "risk at the training length (MSE)".into(),
        other => other.into(),
    }
}

/// Write [`summary_figure`] to `path`; `false` when no run has the metric as a number.
fn summary_plot(
    path: &Path,
    rows: &[Row],
    cols: &[String],
    metric: &str,
    title: &str,
) -> Result<bool> {
    match summary_figure(rows, cols, metric, title) {
        Some(f) => f.write(path).map(|_| true),
        None => Ok(false),
    }
}

/// A summary plot of `metric` against the first numeric grid key (the seed when nothing else
/// varies), one colour per combination of the other grid keys: every seed's value as a point
/// and, where several seeds share an x, their mean as a line (a seed that did not learn what
/// the others did stands apart). An integer key is labelled at its values. `None` when no run
/// has the metric as a number.
pub fn summary_figure(rows: &[Row], cols: &[String], metric: &str, title: &str) -> Option<Figure> {
    let rows: Vec<(&Row, f64)> = rows
        .iter()
        .filter(|r| r.metric == metric)
        .filter_map(|r| Some((r, r.value.as_f64()?)))
        .collect();
    if rows.is_empty() {
        return None;
    }
    let numeric = |c: &String| {
        rows.iter()
            .all(|(r, _)| lookup(r, c).is_some_and(|v| v.is_number()))
    };
    let varies = |c: &String| {
        rows.iter()
            .any(|(r, _)| lookup(r, c) != lookup(rows[0].0, c))
    };
    let x_key = cols
        .iter()
        .find(|c| c.as_str() != SEED_KEY && numeric(c) && varies(c))
        .or_else(|| cols.iter().find(|c| c.as_str() == SEED_KEY))
        .cloned()
        .unwrap_or_else(|| SEED_KEY.into());
    let averaged = x_key != SEED_KEY;
    // series: the other grid keys (not the seed, whose values are all drawn)
    let others: Vec<&String> = cols
        .iter()
        .filter(|c| **c != x_key && c.as_str() != SEED_KEY && varies(c))
        .collect();
    // per series: every (x, value)
    let mut groups: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for (r, value) in &rows {
        let label: Vec<String> = others
            .iter()
            .map(|c| {
                format!(
                    "{}={}",
                    c.rsplit('.').next().unwrap_or(c),
                    value_text(lookup(r, c).unwrap_or(&Value::Null))
                )
            })
            .collect();
        let label = label.join(", ");
        let x = lookup(r, &x_key)
            .and_then(Value::as_f64)
            .unwrap_or(f64::NAN);
        match groups.iter_mut().find(|(l, _)| *l == label) {
            Some(g) => g.1.push((x, *value)),
            None => groups.push((label, vec![(x, *value)])),
        }
    }
    let mut series: Vec<Series> = Vec::new();
    for (k, (label, mut pts)) in groups.into_iter().enumerate() {
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let named = |what: &str| {
            if label.is_empty() {
                what.to_string()
            } else {
                format!("{label}: {what}")
            }
        };
        let mut means: Vec<(f64, f64, usize)> = Vec::new();
        for &(x, v) in &pts {
            match means.iter_mut().find(|m| m.0 == x) {
                Some(m) => {
                    m.1 += v;
                    m.2 += 1;
                }
                None => means.push((x, v, 1)),
            }
        }
        let several = means.iter().any(|m| m.2 > 1);
        if averaged && several {
            series.push(
                Series::line(
                    named("mean over seeds"),
                    means.iter().map(|m| (m.0, m.1 / m.2 as f64)).collect(),
                )
                .with_color(k),
            );
            series.push(
                Series::points(named("each seed"), pts)
                    .with_color(k)
                    .with_shape(Shape::Diamond),
            );
        } else if averaged {
            series.push(
                Series::line(named("one seed"), pts)
                    .with_color(k)
                    .with_shape(Shape::Circle),
            );
        } else {
            series.push(Series::points(named("each seed"), pts).with_color(k));
        }
    }
    let xs: Vec<f64> = rows
        .iter()
        .filter_map(|(r, _)| lookup(r, &x_key).and_then(Value::as_f64))
        .filter(|x| x.is_finite())
        .collect();
    let mut x = Axis::auto(&x_key, xs.iter().copied(), 20.0).with_ticks(xs.clone());
    if xs.iter().all(|v| v.fract() == 0.0) {
        x = x.steps();
    }
    let y = if rows.iter().all(|(_, v)| *v > 0.0) {
        Axis::log(&metric_label(metric))
    } else {
        Axis::linear(&metric_label(metric))
    };
    Some(Figure::single(Panel {
        title: title.into(),
        x,
        y,
        series,
    }))
}

fn lookup<'a>(r: &'a Row, c: &str) -> Option<&'a Value> {
    r.values.iter().find(|(k, _)| k == c).map(|(_, v)| v)
}

#[cfg(test)]
mod tests {
    use super::{metrics, Metric};

    /// A head's `kind` is a metric (a text); the machine's SIMD level and the estimator names
    /// that already name their rows are not.
    #[test]
    fn text_metrics_are_kept() {
        let s = serde_json::json!({
            "final_loss": 0.25,
            "simd_level": "avx2",
            "heads": [{"omega": 0.1, "kind": "positive"}],
            "risks": [{"estimator": "ols", "risk": 0.5}, {"estimator": "nw", "risk": 0.7}],
        });
        let m = metrics(&s);
        assert!(m.contains(&("heads.0.kind".into(), Metric::Text("positive".into()))));
        assert!(m.contains(&("risks.ols.risk".into(), Metric::Number(0.5))));
        assert!(!m
            .iter()
            .any(|(k, _)| k == "simd_level" || k.ends_with(".estimator")));
    }
}
