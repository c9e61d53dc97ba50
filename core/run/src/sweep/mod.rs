//! Sweeps: many run folders from one base configuration, trained locally in parallel or as a
//! Slurm job array, and collected into one tidy table.
//!
//! * [`plan`]: [`RunSpec`] (a named config: preset or config file plus overrides), and sweep
//!   files (preset or config, seeds, `[set]`, `[grid]`) expanded into a manifest of them;
//! * [`exec`]: [`run_specs`], the local executor: every spec into `DIR/<name>` through the one
//!   run-folder writer ([`crate::train`]), complete runs skipped, interrupted ones resumed, `jobs`
//!   at a time;
//! * [`collect`]: the state of a sweep's runs, and their results as a tidy table and plots;
//! * [`slurm`]: the sweep as an `sbatch --array` job;
//! * [`front`]: what the front ends share: checked training options and the JSON forms.
//!
//! Every run folder is written by [`crate::train::train`] / [`crate::train::resume`], so a
//! sweep's folders are ordinary run folders (complete or absent, locked while written) and a
//! run's bytes depend on its config only, never on `jobs` or on the machine that ran it.
pub mod collect;
pub mod exec;
pub mod front;
pub mod plan;
pub mod slurm;

pub use collect::{collect, status, Collected, RunState, State};
pub use exec::{run_specs, run_specs_reporting, RunResult, RunStatus, SweepDone, SweepProgress};
pub use front::{SweepRunOptions, Throttle};
pub use plan::{plan, read_sweep, Plan, PlannedRun, RunSpec};
pub use slurm::SlurmOptions;

use crate::error::{Result, RunError};
use crate::train::TrainOptions;
use std::path::Path;

/// Run (train, resume or skip) every run of the sweep folder `dir`, `jobs` at a time.
pub fn run(
    dir: &Path,
    jobs: usize,
    opts: &TrainOptions,
    progress: SweepProgress,
) -> Result<Vec<RunResult>> {
    run_specs(dir, &plan::specs(dir)?, jobs, opts, progress)
}

/// Run (train, resume or skip) the runs of Slurm array task `index` of the sweep folder `dir`,
/// `per_task` runs a task: runs index·per_task .. index·per_task + per_task − 1 (fewer in the
/// last task), one at a time, or on the Vulkan engine the one-layer runs of one shape as one
/// pack. Progress reports carry the runs' manifest indices.
pub fn run_task(
    dir: &Path,
    index: usize,
    per_task: usize,
    opts: &TrainOptions,
    progress: SweepProgress,
) -> Result<Vec<RunResult>> {
    let specs = plan::specs(dir)?;
    let per_task = per_task.max(1);
    let tasks = specs.len().div_ceil(per_task);
    let first = index.saturating_mul(per_task);
    if first >= specs.len() {
        let has = if per_task == 1 {
            format!("runs 0..={}", specs.len().saturating_sub(1))
        } else {
            format!(
                "{} runs, tasks 0..={} at {per_task} a task",
                specs.len(),
                tasks.saturating_sub(1)
            )
        };
        return Err(RunError::Refused(format!(
            "--index {index}: the sweep in {} has {has}",
            dir.display()
        )));
    }
    let last = (first + per_task).min(specs.len());
    run_specs(dir, &specs[first..last], 1, opts, &|i, s, t, l| {
        progress(first + i, s, t, l)
    })
}
