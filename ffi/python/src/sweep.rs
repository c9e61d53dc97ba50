//! `icl.sweep_plan`, `icl.sweep_run`, `icl.sweep_status`, `icl.sweep_collect`: `icl sweep` from
//! Python, checked and done by the run layer ([`icl_core_run::sweep`], [`SweepRunArgs`])
//! and returning the JSON of the CLI's `--json`, exactly as the C API's `icl_sweep_*`.
use crate::errors::{py_err_in, OrPy};
use crate::run::{stderr_write, ProgressArg};
use crate::values::to_py;
use icl_core_run::options::SweepRunArgs;
use icl_core_run::sweep::{self, front};
use pyo3::exceptions::PyKeyboardInterrupt;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Expand the sweep file `file` (TOML: `preset` or `config`, `seeds`, `[set]`, `[grid]`) into the
/// sweep folder `out` (writes `out/manifest.jsonl`), as `icl sweep plan FILE --out OUT --json`,
/// and return the planned runs: a list of `{"index", "name", "values", "preset" or "config",
/// "set"}`, the seed fastest (`name`, e.g. `"heads=2,seed=7"`, is the run's folder under `out`).
/// Planning the same file again changes nothing. Raises `icl.InputError` (not a valid sweep file,
/// or `out` holds another plan) or `icl.RunNotFoundError` / `icl.FileError` (files) before
/// anything is written.
#[pyfunction]
#[pyo3(text_signature = "(file, out)")]
pub fn sweep_plan<'py>(
    py: Python<'py>,
    file: PathBuf,
    out: PathBuf,
) -> PyResult<Bound<'py, PyAny>> {
    let p = sweep::plan(&file, &out).or_py()?;
    to_py(py, &front::plan_json(&p.runs))
}

/// Train the runs of the sweep folder `dir` into `dir/<name>`, as `icl sweep run DIR --json`:
/// complete runs are skipped, interrupted ones resumed, and a run's bytes depend on its config
/// only (not on `jobs`). Returns a list of `{"name", "status", "wall_seconds"}` (`status`:
/// `"skipped"`, `"trained"`, `"resumed"`) with `"steps"`, `"seconds"`, `"steps_per_s"`.
///
/// * the options of `icl sweep run`'s flags, with its defaults (`icl.options("sweep_run")` lists
///   them): `jobs` (runs at once, 0: one per core, at most 256), `index` (train only that run, a
///   Slurm array task's `icl sweep run-one`; not with `jobs`), `runs_per_task` (with `index`:
///   that array task's runs index*K .. index*K+K-1), `engine`, `eval_samples`,
///   `checkpoint_minutes`, `checkpoint_every`, `force`;
/// * `progress`: `True` prints a line per run and step on `sys.stderr`; a callable is called as
///   `progress(index, step, total, loss)` (`index`: the run's in the manifest) at each run's
///   first and last step and at most about ten times a second between, one call at a time; an
///   exception it raises stops the sweep like Ctrl-C and is raised in its place.
///
/// Raises `icl.InputError` / `icl.UnknownNameError` for bad options before anything runs. A run
/// that fails does not stop the others: when every run has been tried, its error is raised (the
/// message names the run; complete runs are kept). Ctrl-C (checked every 100 ms) checkpoints the
/// runs in progress and raises `KeyboardInterrupt`; calling again continues them.
#[pyfunction]
#[pyo3(
    signature = (dir, *, progress = ProgressArg::Flag(false), **options),
    text_signature = "(dir, *, progress=False, **options)"
)]
pub fn sweep_run<'py>(
    py: Python<'py>,
    dir: PathBuf,
    progress: ProgressArg,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let (progress, call) = progress.split(py)?;
    let o = crate::kwargs::options::<SweepRunArgs>("sweep_run", options)?
        .options()
        .or_py()?;
    // the runs train on another thread; this one (the main thread, where Python's signal
    // handlers run) checks for Ctrl-C every 100 ms and tells the workers to stop
    let stopped = AtomicBool::new(false);
    let last_line = Mutex::new(Instant::now());
    // the callable: the reports it gets, and the first exception it raised
    let gate = sweep::Throttle::default();
    let raised: Mutex<Option<PyErr>> = Mutex::new(None);
    let go = |i: usize, step: u64, total: u64, loss: f64| -> bool {
        if let Some(cb) = &call {
            gate.when_due(i, step, total, || {
                let mut r = raised.lock().unwrap_or_else(|e| e.into_inner());
                if r.is_none() {
                    if let Err(e) = Python::attach(|py| cb.call1(py, (i, step, total, loss))) {
                        *r = Some(e);
                        stopped.store(true, Ordering::Relaxed);
                    }
                }
            });
        }
        if progress {
            let say = last_line.lock().map(|mut t| {
                let due = t.elapsed() >= Duration::from_millis(500) || step == total;
                if due {
                    *t = Instant::now();
                }
                due
            });
            if say.unwrap_or(false) {
                Python::attach(|py| {
                    stderr_write(
                        py,
                        &format!("run {i}: step {step}/{total}  loss {loss:.6}\n"),
                    )
                });
            }
        }
        !stopped.load(Ordering::Relaxed)
    };
    let results = py
        .detach(|| {
            std::thread::scope(|s| {
                let h = s.spawn(|| o.run(&dir, &go));
                while !h.is_finished() {
                    std::thread::sleep(Duration::from_millis(100));
                    if Python::attach(|py| py.check_signals().is_err()) {
                        stopped.store(true, Ordering::Relaxed);
                    }
                }
                h.join()
            })
        })
        .map_err(|_| pyo3::exceptions::PyRuntimeError::new_err("the sweep's thread panicked"))?
        .or_py()?;
    let json: Vec<_> = results.iter().map(front::result_json).collect();
    if progress {
        for r in &json {
            let word = |k: &str| r[k].as_str().unwrap_or("").to_string();
            stderr_write(py, &format!("{}: {}\n", word("name"), word("status")));
        }
    }
    if let Some(e) = raised.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(e);
    }
    if results.iter().any(sweep::RunResult::stopped) {
        return Err(PyKeyboardInterrupt::new_err(
            "interrupted; the runs are checkpointed: call icl.sweep_run again to continue",
        ));
    }
    if let Some((name, e)) = front::first_failure(results) {
        return Err(py_err_in(&name, e));
    }
    to_py(py, &serde_json::Value::Array(json))
}

/// The state of every run of the sweep folder `dir`: the objects `icl sweep status DIR --json`
/// prints one per line, as a list of
/// `{"index", "name", "state"}` (`"complete"` with `"steps"`, `"seconds"`, `"steps_per_s"`;
/// `"running"`; `"interrupted"` with `"step"`; `"pending"`; `"damaged"` with `"reason"`, a
/// folder that is not a readable complete run, which `sweep_run` trains again). Writes nothing.
#[pyfunction]
#[pyo3(text_signature = "(dir)")]
pub fn sweep_status(py: Python<'_>, dir: PathBuf) -> PyResult<Bound<'_, PyAny>> {
    let st = sweep::status(&dir).or_py()?;
    to_py(
        py,
        &serde_json::Value::Array(st.iter().map(front::state_json).collect()),
    )
}

/// Collect the sweep folder `dir`, as `icl sweep collect DIR --json`: writes `results.csv`,
/// `results.json` (one row per run and metric, with the grid values and seed), `runs.csv` and
/// the summary plots, and returns `{"columns", "rows", "incomplete", "files"}`. Runs not
/// complete raise `icl.InputError` unless `partial` (then they are left out).
#[pyfunction]
#[pyo3(signature = (dir, *, partial = false), text_signature = "(dir, *, partial=False)")]
pub fn sweep_collect(py: Python<'_>, dir: PathBuf, partial: bool) -> PyResult<Bound<'_, PyAny>> {
    let c = sweep::collect(&dir, partial).or_py()?;
    to_py(py, &front::collected_json(&c))
}
