//! What every front end of `icl sweep` shares: the checked options of a sweep's training
//! ([`SweepRunOptions`], from [`crate::options::SweepRunArgs`]) and the JSON forms of a plan, of the runs'
//! states, of a run's results and of the collected table, so the CLI's `--json`, the C API,
//! C++ and Python return the same objects; and [`Throttle`], how often a front end passes the
//! runs' step reports on to its caller's callback.
use super::collect::{Collected, RunState, State};
use super::exec::{RunResult, RunStatus, SweepProgress};
use super::plan::PlannedRun;
use crate::error::{Result, RunError};
use crate::repro::MAX_JOBS;
use crate::train::TrainOptions;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How a sweep's runs are trained: `jobs` at a time, or only the runs of one Slurm array task
/// (`task`: its index and runs per task), each with `train`.
#[derive(Debug, Clone)]
pub struct SweepRunOptions {
    pub jobs: usize,
    pub task: Option<(usize, usize)>,
    pub train: TrainOptions,
}

impl SweepRunOptions {
    /// Checked options: `jobs` in `0..=MAX_JOBS` (0: one per core), `task` (index, runs per
    /// task from 1 to [`super::exec::MAX_PACK`]), `engine` one of
    /// [`crate::ENGINES`] (`None`: the default), `checkpoint_minutes` finite and >= 0 (0: only by
    /// steps and on interruption), `checkpoint_every` steps (0: off), `eval_samples` for the final
    /// risk in each `summary.json` (< 2: skip), `force` retrains complete runs. Anything else is
    /// [`RunError::Refused`] or, for the engine, [`RunError::UnknownName`].
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        jobs: usize,
        task: Option<(usize, usize)>,
        engine: Option<&str>,
        eval_samples: usize,
        checkpoint_minutes: f64,
        checkpoint_every: u64,
        force: bool,
    ) -> Result<Self> {
        if jobs > MAX_JOBS {
            return Err(RunError::Refused(format!(
                "jobs = {jobs}: give 0 (one per core) to {MAX_JOBS}"
            )));
        }
        if !checkpoint_minutes.is_finite() || checkpoint_minutes < 0.0 {
            return Err(RunError::Refused(format!(
                "checkpoint_minutes = {checkpoint_minutes}: give a number >= 0"
            )));
        }
        if let Some((_, k)) = task {
            super::exec::check_runs_per_task("runs_per_task =", k)?;
        }
        if let Some(e) = engine {
            crate::engines::check(e, icl_core::config::Dtype::F32)?;
        }
        Ok(SweepRunOptions {
            jobs,
            task,
            train: TrainOptions {
                engine: engine.map(String::from),
                preset: None,
                force,
                eval_samples,
                checkpoint_every,
                checkpoint_seconds: 60.0 * checkpoint_minutes,
                pack: None,
            },
        })
    }

    /// Train the sweep folder `dir` with these options: every run not complete, or one array
    /// task's runs.
    pub fn run(&self, dir: &Path, progress: SweepProgress) -> Result<Vec<RunResult>> {
        match self.task {
            Some((i, k)) => super::run_task(dir, i, k, &self.train, progress),
            None => super::run(dir, self.jobs, &self.train, progress),
        }
    }
}

/// The planned runs as JSON: the lines of `manifest.jsonl`, `{"index", "name", "values",
/// "preset" | "config", "set"}`.
pub fn plan_json(runs: &[PlannedRun]) -> Value {
    Value::Array(
        runs.iter()
            .map(|r| serde_json::to_value(r).unwrap_or(Value::Null))
            .collect(),
    )
}

/// One run's state as JSON (the lines of `icl sweep status --json`): `{"index", "name",
/// "state"}` (`complete`, `running`, `interrupted`, `pending`, `damaged`), with `"steps"`,
/// `"seconds"`, `"steps_per_s"` when complete, `"step"` when interrupted at a readable
/// checkpoint and `"reason"` when damaged.
pub fn state_json(s: &RunState) -> Value {
    let mut o = json!({ "index": s.index, "name": s.name, "state": s.state.label() });
    match s.state {
        State::Complete {
            steps,
            seconds,
            steps_per_s,
        } => {
            o["steps"] = steps.into();
            o["seconds"] = seconds.into();
            o["steps_per_s"] = steps_per_s.into();
        }
        State::Interrupted { step: Some(step) } => o["step"] = step.into(),
        State::Damaged { ref reason } => o["reason"] = reason.clone().into(),
        _ => {}
    }
    o
}

/// The word of a run's status in [`result_json`].
pub fn status_label(s: &RunStatus) -> &'static str {
    match s {
        RunStatus::Skipped => "skipped",
        RunStatus::Trained => "trained",
        RunStatus::Resumed => "resumed",
        RunStatus::Interrupted { .. } => "interrupted",
        RunStatus::NotStarted => "not_started",
        RunStatus::Failed(_) => "failed",
    }
}

/// What training did to one run, as JSON: `{"name", "status"}` (`skipped`, `trained`,
/// `resumed`, `interrupted`, `not_started`, `failed`), `"step"` when interrupted, `"error"`
/// when failed, `"steps"`, `"seconds"` and `"steps_per_s"` (of the run's last training) when
/// its folder is complete, and `"wall_seconds"` (this call's time on it).
pub fn result_json(r: &RunResult) -> Value {
    let mut o = json!({
        "name": r.name,
        "status": status_label(&r.status),
        "wall_seconds": r.wall_seconds,
    });
    match &r.status {
        RunStatus::Interrupted { step } => o["step"] = (*step).into(),
        RunStatus::Failed(e) => o["error"] = e.to_string().into(),
        _ => {}
    }
    for (k, v) in [("seconds", r.seconds), ("steps_per_s", r.steps_per_s)] {
        if let Some(v) = v {
            o[k] = v.into();
        }
    }
    if let Some(s) = r.steps {
        o["steps"] = s.into();
    }
    o
}

/// The first failed run's error, for front ends that report one status (the others' results
/// are in the JSON).
pub fn first_failure(results: Vec<RunResult>) -> Option<(String, RunError)> {
    results.into_iter().find_map(|r| match r.status {
        RunStatus::Failed(e) => Some((r.name, e)),
        _ => None,
    })
}

/// The collected table as JSON: `results.json`'s `{"columns", "rows"}` (one row per run and
/// metric: `"run"`, the grid values and seed, `"metric"`, `"value"`), with `"incomplete"` (the
/// runs left out) and `"files"` (the paths written).
pub fn collected_json(c: &Collected) -> Value {
    let mut o = c.json.clone();
    o["incomplete"] = json!(c.incomplete);
    o["files"] = json!(c
        .files
        .iter()
        .map(|f| f.display().to_string())
        .collect::<Vec<_>>());
    o
}

/// How often a run's step reports reach a caller's callback at most, between its first and
/// last step.
pub const REPORT_EVERY: Duration = Duration::from_millis(100);

/// Which of a sweep's step reports to pass on to a caller's callback: each run's first (in this
/// call) and last step, and at most one every [`REPORT_EVERY`] between; the callback runs under
/// a lock, so its calls are one at a time whatever the number of jobs.
#[derive(Debug, Default)]
pub struct Throttle {
    last: Mutex<HashMap<usize, Instant>>,
}

impl Throttle {
    /// Run `f` when run `i`'s report of `step` of `total` is due (`None` when it is not).
    pub fn when_due<R>(&self, i: usize, step: u64, total: u64, f: impl FnOnce() -> R) -> Option<R> {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        let due = last
            .get(&i)
            .is_none_or(|t| step >= total || now.duration_since(*t) >= REPORT_EVERY);
        if !due {
            return None;
        }
        last.insert(i, now);
        Some(f())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throttle_passes_first_last_and_every_tenth_of_a_second() {
        let t = Throttle::default();
        let due = |i, step| t.when_due(i, step, 100, || step).is_some();
        assert!(due(0, 1), "a run's first report");
        assert!(!due(0, 2), "right after it");
        assert!(due(1, 1), "another run's first report");
        assert!(due(0, 100), "the last step");
        std::thread::sleep(REPORT_EVERY);
        assert!(due(1, 3), "after the interval");
        assert!(!due(1, 4));
        assert_eq!(t.when_due(2, 5, 100, || 7), Some(7));
    }

    /// The options of the C API's and Python's text pairs.
    fn from_pairs(p: &[(&str, &str)]) -> Result<SweepRunOptions> {
        crate::options::from_pairs::<crate::options::SweepRunArgs, _, _>(p)?.options()
    }

    #[test]
    fn pairs_take_the_cli_defaults_and_refuse_what_the_cli_refuses() {
        let o = from_pairs(&[]).unwrap();
        assert_eq!((o.jobs, o.task), (1, None));
        assert_eq!(o.train.eval_samples, 20_000);
        assert_eq!(
            o.train.checkpoint_seconds,
            crate::train::CHECKPOINT_MINUTES * 60.0
        );
        assert!(!o.train.force);
        let o = from_pairs(&[
            ("index", "3"),
            ("engine", "scalar"),
            ("eval_samples", "0"),
            ("checkpoint_minutes", "0.5"),
            ("checkpoint_every", "100"),
            ("force", "true"),
        ])
        .unwrap();
        assert_eq!(o.task, Some((3, 1)));
        assert_eq!(o.train.engine.as_deref(), Some("scalar"));
        assert_eq!((o.train.eval_samples, o.train.checkpoint_every), (0, 100));
        assert_eq!(o.train.checkpoint_seconds, 30.0);
        assert!(o.train.force);
        let o = from_pairs(&[("index", "3"), ("runs_per_task", "8")]).unwrap();
        assert_eq!(o.task, Some((3, 8)));
        for (pairs, want) in [
            (vec![("jobs", "x")], "is not a non-negative integer"),
            (vec![("jobs", "-1")], "is outside 0..="),
            (vec![("jobs", "257")], "give 0 (one per core) to 256"),
            (vec![("jobs", "2"), ("index", "0")], "not both"),
            (vec![("runs_per_task", "2")], "goes with index"),
            (
                vec![("index", "0"), ("runs_per_task", "0")],
                "give 1 to 256",
            ),
            (
                vec![("index", "0"), ("runs_per_task", "257")],
                "give 1 to 256",
            ),
            (vec![("jobs", "1"), (" jobs", "2")], "given twice"),
            (vec![("checkpoint_minutes", "-1")], "give a number >= 0"),
            (vec![("checkpoint_minutes", "inf")], "give a number >= 0"),
            (vec![("force", "yes")], "true or false"),
            (vec![("nope", "1")], "unknown sweep option"),
            (vec![("engine", "cuda")], "unknown engine"),
        ] {
            let e = from_pairs(&pairs).unwrap_err().to_string();
            assert!(e.contains(want), "{pairs:?}: {e}");
        }
        assert!(matches!(
            from_pairs(&[("engine", "cuda")]),
            Err(RunError::UnknownName(_))
        ));
    }
}
