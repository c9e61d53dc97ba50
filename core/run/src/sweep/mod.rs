//! Sweeps: many run folders from one base configuration, trained locally in parallel or as a
//! Slurm job array, and collected into one tidy table.
//!
//! * [`exec`]: [`RunSpec`] (a named config: preset or config file plus overrides) and
//!   [`run_specs`], the local executor: every spec into `DIR/<name>` through the one run-folder
//!   writer ([`crate::train`]), complete runs skipped, interrupted ones resumed, `jobs` at a time.
//!
//! Every run folder is written by [`crate::train::train`] / [`crate::train::resume`], so a
//! sweep's folders are ordinary run folders (complete or absent, locked while written) and a
//! run's bytes depend on its config only, never on `jobs` or on the machine that ran it.
pub mod exec;

pub use exec::{run_specs, RunResult, RunSpec, RunStatus, SweepProgress};
