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

/// Run (train, resume or skip) run `index` of the sweep folder `dir` (a Slurm array task).
pub fn run_one(
    dir: &Path,
    index: usize,
    opts: &TrainOptions,
    progress: SweepProgress,
) -> Result<RunResult> {
    let specs = plan::specs(dir)?;
    let spec = specs.get(index).cloned().ok_or_else(|| {
        RunError::Refused(format!(
            "--index {index}: the sweep in {} has runs 0..={}",
            dir.display(),
            specs.len().saturating_sub(1)
        ))
    })?;
    let mut r = run_specs(dir, &[spec], 1, opts, &|_, s, t, l| {
        progress(index, s, t, l)
    })?;
    Ok(r.remove(0))
}
