//! `icl plot DIR [--json]`: draw a finished run's training figures again (`loss.svg` and its
//! family's: `omega_mu.svg`, `pattern.svg`, ...) with this icl's drawing code, from the training
//! log its `model.safetensors` keeps; `summary.json`, the model and `metrics.csv` stay as they are.
use super::common::outln;
use crate::error::CliResult;
use icl_core_run::RunDir;
use std::path::PathBuf;

/// Arguments of `icl plot`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Run folder of a finished `icl train` run.
    pub dir: PathBuf,
    /// Print JSON: {"dir", "figures": [the folder's figure files, by name]}.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: &Args) -> CliResult {
    let figures = icl_core_run::outputs::redraw(&RunDir::new(&a.dir))?;
    if a.json {
        let j = serde_json::json!({ "dir": a.dir.display().to_string(), "figures": figures });
        return outln(&icl_core_run::summary::pretty(&j));
    }
    outln(&format!(
        "drew the figures of {}: {}",
        a.dir.display(),
        figures.join(", ")
    ))
}
