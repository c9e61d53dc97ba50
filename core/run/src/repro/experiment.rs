//! Named experiments that are computed rather than trained (the figures of a paper that a
//! numerical toolkit reproduces): each writes its figure data as CSV, its figures as SVG and a
//! `summary.json` ([`ExperimentSummary`]) into a run folder. `icl repro` runs a paper's
//! experiments ([`Experiments`], its row of [`super::PAPERS`]) beside its trained runs; a
//! complete folder (its `summary.json` exists) is not computed again.
use super::Scale;
use crate::error::{Result, RunError};
use crate::folder::atomic_write;
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

/// A paper's computed experiments: their names, in the order they are computed, and the function
/// that computes one (by name, at a scale, into a folder).
#[derive(Clone, Copy)]
pub struct Experiments {
    pub names: &'static [&'static str],
    pub compute: fn(&str, Scale, &Path) -> Result<ExperimentSummary>,
}

impl Experiments {
    /// Compute experiment `name` at `scale` into `dir` (created), unless `dir/summary.json`
    /// holds it already: returns the summary and whether it was computed now.
    pub fn run(&self, name: &str, scale: Scale, dir: &Path) -> Result<(ExperimentSummary, bool)> {
        let p = dir.join("summary.json");
        if p.exists() {
            let text = crate::folder::read_text(&p)?;
            let s: ExperimentSummary = serde_json::from_str(&text)
                .map_err(|e| RunError::Corrupt(p.clone(), e.to_string()))?;
            if s.scale == scale.name() && s.experiment == name {
                return Ok((s, false));
            }
        }
        std::fs::create_dir_all(dir).map_err(|e| RunError::Os(dir.to_path_buf(), e))?;
        let s = (self.compute)(name, scale, dir)?;
        let json = serde_json::to_string_pretty(&s).unwrap_or_default();
        atomic_write(&p, format!("{json}\n").as_bytes())?;
        Ok((s, true))
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

/// Write rows as CSV (columns in `cols` order; numbers as Rust's `{}` writes them, absent values
/// empty).
pub fn write_csv(path: &Path, cols: &[&str], rows: &[Row]) -> Result<()> {
    let text = |r: &Row| -> Vec<String> {
        cols.iter()
            .map(|c| {
                r.get(*c)
                    .copied()
                    .flatten()
                    .map_or(String::new(), |v| format!("{v}"))
            })
            .collect()
    };
    write_csv_text(path, cols, rows.iter().map(text))
}

/// Write a CSV file (through the `csv` crate, `\n` line ends): the header, then each row's
/// fields as the caller wrote them.
pub fn write_csv_text<R: AsRef<[String]>>(
    path: &Path,
    header: &[&str],
    rows: impl IntoIterator<Item = R>,
) -> Result<()> {
    let fail = |e: std::io::Error| RunError::Os(path.to_path_buf(), e);
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(header).map_err(|e| fail(e.into()))?;
    for r in rows {
        w.write_record(r.as_ref()).map_err(|e| fail(e.into()))?;
    }
    let bytes = w.into_inner().map_err(|e| fail(e.into_error()))?;
    atomic_write(path, &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CSV files keep the bytes they had when written by hand: numbers as Rust's `{}` writes
    /// them (`100`, `0.0000001`, `NaN`), an absent value empty, `\n` line ends, no quotes.
    #[test]
    fn csv_numbers_are_written_as_before() {
        let dir = std::env::temp_dir().join(format!("icl-experiment-csv-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let row = |v: [Option<f64>; 3]| -> Row {
            ["l", "a", "b"]
                .iter()
                .zip(v)
                .map(|(k, x)| (k.to_string(), x))
                .collect()
        };
        let rows = [
            row([Some(100.0), Some(0.1), None]),
            row([Some(2.5), Some(1e-7), Some(-3.0)]),
        ];
        write_csv(&dir.join("t.csv"), &["l", "a", "b"], &rows).unwrap();
        let text = std::fs::read_to_string(dir.join("t.csv")).unwrap();
        assert_eq!(text, "l,a,b\n100,0.1,\n2.5,0.0000001,-3\n");
        let fields = [vec!["5".to_string(), format!("{}", f64::NAN)]];
        write_csv_text(&dir.join("u.csv"), &["l", "x"], fields).unwrap();
        let text = std::fs::read_to_string(dir.join("u.csv")).unwrap();
        assert_eq!(text, "l,x\n5,NaN\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
