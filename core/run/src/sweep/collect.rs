//! The state of a sweep folder's runs, and their results as one tidy table.
//!
//! `results.csv` / `results.json`: one row per run and metric, with the run's name, its grid
//! values and seed as columns (`run, <grid keys...>, train.seed, metric, value`). The metrics are
//! every number of the run's `summary.json` (dotted paths: `final_loss`, `risk.risk`,
//! `heads.0.omega`, `risks.ols.risk`, ...) except the config and the timing, so the table depends
//! on the configs only: the same sweep run anywhere (locally, on Slurm, with any `--jobs`) gives
//! the same bytes. The timing goes to `runs.csv` (`run, state, steps, seconds, steps_per_s`).
use super::plan::{load, PlannedRun, SEED_KEY};
use crate::checkpoint::load_config;
use crate::csv_text::csv_text;
use crate::error::{Result, RunError};
use crate::folder::{atomic_write, read_text, RunDir};
use crate::plot::{lines_svg, Series};
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
];

/// Every number of a summary's JSON as (dotted path, value); booleans as 0 / 1. Array entries
/// are named by their `estimator` where every entry has a distinct one, by index otherwise.
pub fn metrics(summary: &Value) -> Vec<(String, f64)> {
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

fn flatten(path: &str, v: &Value, out: &mut Vec<(String, f64)>) {
    match v {
        Value::Number(n) => {
            if let Some(x) = n.as_f64() {
                out.push((path.to_string(), x));
            }
        }
        Value::Bool(b) => out.push((path.to_string(), if *b { 1.0 } else { 0.0 })),
        Value::Object(m) => {
            for (k, x) in m {
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
        Value::Null | Value::String(_) => {}
    }
}

/// One row of the results.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Row {
    pub run: String,
    /// The grid values and the seed, in the manifest's order.
    pub values: Vec<(String, Value)>,
    pub metric: String,
    pub value: f64,
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
        fields.extend([row.metric.clone(), row.value.to_string()]);
        csv_rows.push(fields);
        obj.insert("metric".into(), Value::from(row.metric.clone()));
        obj.insert("value".into(), Value::from(row.value));
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

/// A summary plot of `metric`: its mean over seeds against the first numeric grid key (the seed
/// when nothing else varies), one line per combination of the other grid keys. `false` when no
/// run has the metric.
fn summary_plot(
    path: &Path,
    rows: &[Row],
    cols: &[String],
    metric: &str,
    title: &str,
) -> Result<bool> {
    let rows: Vec<&Row> = rows.iter().filter(|r| r.metric == metric).collect();
    if rows.is_empty() {
        return Ok(false);
    }
    let numeric = |c: &String| {
        rows.iter()
            .all(|r| lookup(r, c).is_some_and(|v| v.is_number()))
    };
    let varies = |c: &String| rows.iter().any(|r| lookup(r, c) != lookup(rows[0], c));
    let x_key = cols
        .iter()
        .find(|c| c.as_str() != SEED_KEY && numeric(c) && varies(c))
        .or_else(|| cols.iter().find(|c| c.as_str() == SEED_KEY))
        .cloned()
        .unwrap_or_else(|| SEED_KEY.into());
    let averaged = x_key != SEED_KEY;
    // series: the other grid keys (not the seed, which is averaged over)
    let others: Vec<&String> = cols
        .iter()
        .filter(|c| **c != x_key && c.as_str() != SEED_KEY && varies(c))
        .collect();
    // per series: (x, sum of the metric, count)
    type Sums = Vec<(f64, f64, usize)>;
    let mut series: Vec<(String, Sums)> = Vec::new();
    for r in &rows {
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
        let label = if label.is_empty() {
            if averaged {
                format!("{metric} (mean over seeds)")
            } else {
                metric.to_string()
            }
        } else {
            label.join(", ")
        };
        let x = lookup(r, &x_key)
            .and_then(Value::as_f64)
            .unwrap_or(f64::NAN);
        let s = match series.iter_mut().find(|(l, _)| *l == label) {
            Some(s) => s,
            None => {
                series.push((label, Vec::new()));
                series.last_mut().expect("just pushed")
            }
        };
        match s.1.iter_mut().find(|p| p.0 == x) {
            Some(p) => {
                p.1 += r.value;
                p.2 += 1;
            }
            None => s.1.push((x, r.value, 1)),
        }
    }
    let log_y = rows.iter().all(|r| r.value > 0.0);
    let series: Vec<Series> = series
        .into_iter()
        .map(|(name, mut pts)| {
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series::line(name, pts.iter().map(|p| (p.0, p.1 / p.2 as f64)).collect())
        })
        .collect();
    lines_svg(path, title, &x_key, metric, &series, log_y)?;
    Ok(true)
}

fn lookup<'a>(r: &'a Row, c: &str) -> Option<&'a Value> {
    r.values.iter().find(|(k, _)| k == c).map(|(_, v)| v)
}
