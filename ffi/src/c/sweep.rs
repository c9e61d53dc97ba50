//! `icl sweep` through C: plan a sweep file into a sweep folder, train its runs, read their
//! states and collect their results, by the same library functions as the CLI
//! ([`icl_core_run::sweep`], [`SweepRunArgs`]), returning the same JSON.
use super::{check_str_out, copy_str, guard, json_call, text};
use crate::status::{icl_status, FfiError, FfiResult};
use icl_core_run::options::SweepRunArgs;
use icl_core_run::sweep::{self, front, SweepRunOptions};
use std::ffi::{c_char, c_void};
use std::path::Path;

/// Expand the sweep file `file` (TOML: `preset = "NAME"` or `config = "FILE"`, `seeds = [..]`,
/// `[set]` fixed overrides, `[grid]` lists of values, every combination) into the sweep folder
/// `out_dir`, like `icl sweep plan FILE --out OUT_DIR --json`: `OUT_DIR/manifest.jsonl` is
/// written (one line per run; a config-file sweep also copies the config to
/// `OUT_DIR/base.toml`), and the planned runs are copied into `buf` (capacity `cap`, NUL
/// included; `needed`, optional, receives the size required) as a JSON array of `{"index",
/// "name", "values", "preset" or "config", "set"}`, the seed fastest; `name` (the run's folder
/// under `out_dir`) is made of the grid values and seed, e.g. `"heads=2,seed=7"`. Planning the
/// same file into the same folder again changes nothing; a different plan into a folder that
/// holds one is refused. Statuses: `ICL_ERR_ARGUMENT` (the file is not a valid sweep file: bad
/// TOML, an unknown field, an unknown preset, a `[set]` or `[grid]` key or value the config
/// refuses, an empty grid list, a repeated seed, more than 100000 runs; or `out_dir` holds
/// another plan), `ICL_ERR_IO` (`file` or its `config` missing or unreadable, `out_dir` cannot
/// be created or written), `ICL_ERR_NULL` (`file` or `out_dir` NULL, `buf`
/// NULL with `cap` > 0), `ICL_ERR_UTF8`, `ICL_ERR_SIZE` (`cap` too small: nothing is copied
/// and `*needed` is set; the folder is planned, so calling again with `*needed` bytes is a
/// no-op that copies the runs). Thread-safe, but two calls must not share `out_dir`.
#[no_mangle]
pub unsafe extern "C" fn icl_sweep_plan(
    file: *const c_char,
    out_dir: *const c_char,
    buf: *mut c_char,
    cap: usize,
    needed: *mut usize,
) -> icl_status {
    guard(|| {
        let file = text(file, "file")?;
        let out = text(out_dir, "out_dir")?;
        check_str_out(buf, cap, needed)?;
        copy_str(&plan_json(file, out)?, buf, cap, needed)
    })
}

/// Train the runs of the sweep folder `dir` (made by `icl_sweep_plan` or `icl sweep plan`) into
/// `DIR/<name>`, like `icl sweep run DIR --json` (or `icl sweep run-one DIR --index I --json`),
/// and copy the results into `buf` (capacity `cap`, NUL included; `needed`, optional, receives
/// the size required) as a JSON array, in the manifest's order, of `{"name", "status",
/// "wall_seconds"}` with `status` `"skipped"` (already complete), `"trained"` or `"resumed"`
/// (an interrupted run continued from its checkpoint), plus `"steps"`, `"seconds"` and
/// `"steps_per_s"` (of the run's last training). The run folders are those of `icl train`, and
/// a run's bytes depend on its config only, not on `jobs` or the thread count. The options are
/// `n` text pairs `keys[i]` = `values[i]`, with the CLI's defaults: `jobs` (runs trained at
/// once, `"0"` (one per core) to `"256"`, default `"1"`), `index` (train only that run, from
/// `"0"`; not with `jobs`), `runs_per_task` (with `index`: train that Slurm array task's runs,
/// index·K .. index·K + K − 1 for K `"1"` to `"256"`, on `vulkan` the one-layer runs of one
/// shape among them as one pack), `engine` (`"simd"`, `"scalar"` or `"vulkan"`; unset:
/// `icl_default_engine()`), `eval_samples` (Monte Carlo samples for the final risk in each
/// `summary.json`, default `"20000"`, `"0"`: none), `checkpoint_minutes` (default `"0.5"`, `"0"`:
/// off), `checkpoint_every` (steps, default `"0"`: off) and `force` (`"true"`: retrain
/// complete runs too, replacing their folders; default `"false"`). Statuses:
/// `ICL_ERR_ARGUMENT` (an unknown or repeated key, a value not of its kind, `jobs` over 256,
/// `jobs` with `index`, `index` past the last run or task, `runs_per_task` without `index`, a negative or non-finite
/// `checkpoint_minutes`, `dir` not a sweep folder, a run's config refused), `ICL_ERR_UNKNOWN_NAME`
/// (an unknown `engine`, or a manifest edited to name an unknown preset), `ICL_ERR_CHECKPOINT` (the manifest or a run's file cannot be
/// decoded), `ICL_ERR_IO`, `ICL_ERR_NULL` (`dir` NULL, `keys` or `values` NULL with `n` > 0,
/// `buf` NULL with `cap` > 0), `ICL_ERR_UTF8`, `ICL_ERR_SIZE` (more than 1024 options, or `cap`
/// too small: nothing is copied and `*needed` is set, but the runs are trained, so calling again
/// with `*needed` bytes skips them and copies the results). Every bad option and NULL is
/// reported before anything is trained. A run that fails while training does not stop the
/// others: when every run has been tried, the call returns the first failure's status (e.g.
/// `ICL_ERR_NUMERICAL`, `ICL_ERR_UNSUPPORTED` for vulkan without a device) with a message naming
/// the run, and nothing is copied; the runs that completed are kept (`icl_sweep_status` lists
/// them, and calling again skips them). Blocks until every run is done. Thread-safe, but two
/// calls must not train the same folder at once (the second fails with `ICL_ERR_ARGUMENT` for a
/// run the first is writing).
#[no_mangle]
pub unsafe extern "C" fn icl_sweep_run(
    dir: *const c_char,
    keys: *const *const c_char,
    values: *const *const c_char,
    n: usize,
    buf: *mut c_char,
    cap: usize,
    needed: *mut usize,
) -> icl_status {
    // SAFETY: the caller's pointers, as this function's contract states them
    unsafe {
        icl_sweep_run_with_progress(
            dir,
            keys,
            values,
            n,
            None,
            std::ptr::null_mut(),
            buf,
            cap,
            needed,
        )
    }
}

/// The progress callback of `icl_sweep_run_with_progress`: run `index` of the manifest (the
/// `"index"` of `icl_sweep_plan`'s runs) has done `step` of its `total` optimiser steps, `loss`
/// the loss of its last step. `user` is the pointer given to `icl_sweep_run_with_progress`,
/// passed as is. Return 0 to go on; any other value interrupts the sweep: the runs training then
/// are checkpointed and stop, no other run starts, and the call returns `ICL_OK` with those runs'
/// `status` `"interrupted"` (plus `"step"`, where it stopped) and the others' `"not_started"`;
/// calling again resumes them, to the same bytes as an uninterrupted run.
#[allow(non_camel_case_types)]
pub type icl_sweep_progress_fn = Option<
    unsafe extern "C" fn(user: *mut c_void, index: usize, step: u64, total: u64, loss: f64) -> i32,
>;

/// `icl_sweep_run` with progress reports: the same options, statuses, files and result, and
/// `progress` (NULL: none, as `icl_sweep_run`) called with `user` as
/// `icl_sweep_progress_fn` says: for each run, at its first step (the first after the
/// checkpoint when it resumes), at its last, and in between at most about ten times a second;
/// one call at a time, from icl's threads (several runs train at once when `jobs` > 1). The
/// callback must return normally (no `longjmp`, no C++ exception) and must not call
/// `icl_sweep_run` or `icl_sweep_run_with_progress` for the same folder. Only a call to this
/// function can interrupt a sweep without killing the process.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn icl_sweep_run_with_progress(
    dir: *const c_char,
    keys: *const *const c_char,
    values: *const *const c_char,
    n: usize,
    progress: icl_sweep_progress_fn,
    user: *mut c_void,
    buf: *mut c_char,
    cap: usize,
    needed: *mut usize,
) -> icl_status {
    json_call(
        || text(dir, "dir"),
        keys,
        values,
        n,
        buf,
        cap,
        needed,
        |dir, a: SweepRunArgs| {
            let o = a.options()?;
            let cb = Throttled {
                f: progress,
                user,
                gate: sweep::Throttle::default(),
            };
            let report = |i: usize, step: u64, total: u64, loss: f64| cb.call(i, step, total, loss);
            results_json(o.run(Path::new(dir), &report)?)
        },
    )
}

/// A C sweep callback, its user pointer, and which reports to pass on ([`sweep::Throttle`],
/// which also makes the calls one at a time).
struct Throttled {
    f: icl_sweep_progress_fn,
    user: *mut c_void,
    gate: sweep::Throttle,
}

// SAFETY: the pointer is never dereferenced here, only passed to the caller's own callback, one
// call at a time (under the throttle's lock); the header tells the caller it runs on icl's
// threads.
unsafe impl Sync for Throttled {}

impl Throttled {
    /// Report to the callback when due; `false` (interrupt) when it returns non-zero.
    fn call(&self, i: usize, step: u64, total: u64, loss: f64) -> bool {
        let Some(f) = self.f else { return true };
        self.gate
            // SAFETY: the caller gave a function of this signature
            .when_due(
                i,
                step,
                total,
                || unsafe { f(self.user, i, step, total, loss) } == 0,
            )
            .unwrap_or(true)
    }
}

/// The state of every run of the sweep folder `dir`, read from the run folders: the objects
/// `icl sweep status DIR --json` prints one per line, copied into `buf` (capacity `cap`, NUL
/// included; `needed`, optional, receives the size required) as one JSON array of `{"index",
/// "name", "state"}` with
/// `state` `"complete"` (plus `"steps"`, `"seconds"`, `"steps_per_s"`), `"running"` (another
/// process is writing it now), `"interrupted"` (plus `"step"`, the checkpoint's step, when it is
/// readable), `"pending"` or `"damaged"` (plus `"reason"`: the folder is not a readable complete
/// run, e.g. its model or summary was deleted or is corrupt; `icl_sweep_run` trains it again).
/// Writes nothing. Statuses: `ICL_ERR_ARGUMENT` (`dir` is not a sweep
/// folder), `ICL_ERR_CHECKPOINT` (its manifest cannot be decoded),
/// `ICL_ERR_IO`, `ICL_ERR_NULL` (`dir` NULL, `buf` NULL with `cap` > 0), `ICL_ERR_UTF8`,
/// `ICL_ERR_SIZE` (`cap` too small: nothing is copied and `*needed` is set). Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn icl_sweep_status(
    dir: *const c_char,
    buf: *mut c_char,
    cap: usize,
    needed: *mut usize,
) -> icl_status {
    guard(|| {
        let dir = text(dir, "dir")?;
        check_str_out(buf, cap, needed)?;
        copy_str(&status_json(dir)?, buf, cap, needed)
    })
}

/// Collect the results of the sweep folder `dir` like `icl sweep collect DIR --json`: write
/// `DIR/results.csv` and `DIR/results.json` (one row per run and metric: the run's name, its
/// grid values and seed, the metric, the value; the metrics are every number of the run's
/// `summary.json` but the config and the timing, so they depend on the configs only),
/// `DIR/runs.csv` (the timing) and the summary plots, and copy into `buf` (capacity `cap`, NUL
/// included; `needed`, optional, receives the size required) the JSON object `{"columns",
/// "rows", "incomplete", "files"}`: `results.json`'s columns and rows, the names of the runs left
/// out and the paths written. With `partial` = 0 a sweep with runs not complete is refused
/// (`ICL_ERR_ARGUMENT`, nothing written); with `partial` != 0 they are left out. Statuses:
/// `ICL_ERR_ARGUMENT` (`dir` is not a sweep folder, or runs not complete without `partial`),
/// `ICL_ERR_CHECKPOINT` (its manifest or a run's file cannot be decoded), `ICL_ERR_IO` (a
/// file cannot be written), `ICL_ERR_NULL` (`dir` NULL, `buf` NULL with `cap` > 0),
/// `ICL_ERR_UTF8`, `ICL_ERR_SIZE` (`cap` too small: nothing is copied and `*needed` is set, but
/// the files are written; calling again writes the same bytes). Thread-safe, but two calls must
/// not collect the same folder at once.
#[no_mangle]
pub unsafe extern "C" fn icl_sweep_collect(
    dir: *const c_char,
    partial: i32,
    buf: *mut c_char,
    cap: usize,
    needed: *mut usize,
) -> icl_status {
    guard(|| {
        let dir = text(dir, "dir")?;
        check_str_out(buf, cap, needed)?;
        copy_str(&collect_json(dir, partial != 0)?, buf, cap, needed)
    })
}

/// Plan a sweep file into a folder and return the runs as JSON: the body of [`icl_sweep_plan`]
/// and of C++'s `icl::sweep_plan`.
pub(crate) fn plan_json(file: &str, out: &str) -> FfiResult<String> {
    let p = sweep::plan(Path::new(file), Path::new(out))?;
    Ok(front::plan_json(&p.runs).to_string())
}

/// Train a sweep folder silently and return the results as JSON, or the first failure: the body
/// of `icl_sweep_run` and of C++'s `icl::sweep_run`.
pub(crate) fn run_json(dir: &str, o: &SweepRunOptions) -> FfiResult<String> {
    results_json(o.run(Path::new(dir), &|_, _, _, _| true)?)
}

/// The results of a sweep's runs as JSON, or the first failure's status.
pub(crate) fn results_json(results: Vec<sweep::RunResult>) -> FfiResult<String> {
    let json: Vec<_> = results.iter().map(front::result_json).collect();
    if let Some((name, e)) = front::first_failure(results) {
        let f = FfiError::from(e);
        return Err(FfiError::new(f.status, format!("run {name}: {}", f.msg)));
    }
    Ok(serde_json::Value::Array(json).to_string())
}

/// The states of a sweep's runs as JSON: the body of [`icl_sweep_status`] and of C++'s
/// `icl::sweep_status`.
pub(crate) fn status_json(dir: &str) -> FfiResult<String> {
    let st = sweep::status(Path::new(dir))?;
    Ok(serde_json::Value::Array(st.iter().map(front::state_json).collect()).to_string())
}

/// Collect a sweep and return the table as JSON: the body of [`icl_sweep_collect`] and of C++'s
/// `icl::sweep_collect`.
pub(crate) fn collect_json(dir: &str, partial: bool) -> FfiResult<String> {
    let c = sweep::collect(Path::new(dir), partial)?;
    Ok(front::collected_json(&c).to_string())
}
