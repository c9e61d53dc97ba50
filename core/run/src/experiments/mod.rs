//! Named experiments that are computed rather than trained (the figures of a paper that a
//! numerical toolkit reproduces): each writes its figure data as CSV, its figures as SVG and a
//! `summary.json` ([`ExperimentSummary`]) into a run folder. `icl repro` runs them beside the
//! trained runs; a complete folder (its `summary.json` exists) is not computed again.
pub mod temperature;

use crate::error::{Result, RunError};
use crate::folder::atomic_write;
use crate::repro::Scale;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// One row of a figure's data: column name -> value (`None`: not defined at this point).
pub type Row = BTreeMap<String, Option<f64>>;

/// `summary.json` of an experiment folder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentSummary {
    /// The experiment's name (`temperature-fig1b`).
    pub experiment: String,
    /// The paper's figure(s) it reproduces.
    pub figure: String,
    pub scale: String,
    /// What is computed, with the choices the paper leaves open.
    pub description: String,
    /// The fixed settings (dimension, noise, shifts, sample sizes).
    pub setting: BTreeMap<String, String>,
    /// Each table (named after its CSV file, without `.csv`) as rows.
    pub tables: BTreeMap<String, Vec<Row>>,
    /// Monte Carlo prompts drawn (model, baselines).
    pub prompts: u64,
    pub seconds: f64,
}

impl ExperimentSummary {
    /// The rows of table `name`.
    pub fn table(&self, name: &str) -> Result<&[Row]> {
        self.tables.get(name).map(|v| v.as_slice()).ok_or_else(|| {
            RunError::Refused(format!(
                "experiment {} has no table {name}",
                self.experiment
            ))
        })
    }
}

/// A value of a row (`NaN` when absent).
pub fn get(r: &Row, k: &str) -> f64 {
    r.get(k).copied().flatten().unwrap_or(f64::NAN)
}

/// The row of `table` whose column `k` equals `v` (to 1e-9).
pub fn row_at<'a>(table: &'a [Row], k: &str, v: f64) -> Result<&'a Row> {
    table
        .iter()
        .find(|r| (get(r, k) - v).abs() <= 1e-9 * (1.0 + v.abs()))
        .ok_or_else(|| RunError::Refused(format!("no row with {k} = {v}")))
}

/// The experiments, by name.
pub const EXPERIMENTS: &[&str] = temperature::NAMES;

/// Compute experiment `name` at `scale` into `dir` (created), unless `dir/summary.json` exists:
/// returns the summary and whether it was computed now.
pub fn run(name: &str, scale: Scale, dir: &Path) -> Result<(ExperimentSummary, bool)> {
    let p = dir.join("summary.json");
    if p.exists() {
        let text = crate::folder::read_text(&p)?;
        let s: ExperimentSummary =
            serde_json::from_str(&text).map_err(|e| RunError::Corrupt(p.clone(), e.to_string()))?;
        if s.scale == scale.name() && s.experiment == name {
            return Ok((s, false));
        }
    }
    std::fs::create_dir_all(dir).map_err(|e| RunError::Os(dir.to_path_buf(), e))?;
    let s = temperature::run(name, scale, dir)?;
    let json = serde_json::to_string_pretty(&s).unwrap_or_default();
    atomic_write(&p, format!("{json}\n").as_bytes())?;
    Ok((s, true))
}

/// Write rows as CSV (columns in `cols` order; absent values empty).
pub fn write_csv(path: &Path, cols: &[&str], rows: &[Row]) -> Result<()> {
    let mut s = cols.join(",");
    s.push('\n');
    for r in rows {
        let line: Vec<String> = cols
            .iter()
            .map(|c| match r.get(*c).copied().flatten() {
                Some(v) => format!("{v}"),
                None => String::new(),
            })
            .collect();
        s.push_str(&line.join(","));
        s.push('\n');
    }
    atomic_write(path, s.as_bytes())
}
