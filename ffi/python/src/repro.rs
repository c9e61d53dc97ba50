//! `icl.repro`: a paper's runs, claims and reports, as `icl repro PAPER --out DIR --json`. The
//! options are checked and the work done by the run layer ([`ReproArgs`],
//! [`icl_core_run::repro::repro`]), exactly as for the CLI and the C API's `icl_repro`.
use crate::errors::OrPy;
use crate::run::{stderr_write, ProgressArg};
use icl_core_run::options::ReproArgs;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;

/// Reproduce a paper, as `icl repro PAPER --out OUT --json`: train the runs its claims need as
/// run folders under `out/runs/` (a run already complete there is skipped and an interrupted
/// one resumed, so calling again trains nothing), measure every claim, write
/// `out/report.json`, `report.md`, `report.html` and the figures, and return `report.json` as a
/// dict: `{"paper", "scale", "version", "machine", "claims": [{"id", "figure", "description",
/// "paper_value", "measured", "stderr", "tolerance", "pass", "runs", ...}], "runs": [{"name",
/// "seconds", "steps_per_s"}]}` (`None` where the JSON has `null`).
///
/// * `paper`: `"he2025"`, `"zhang2025"`, `"multilayer"`, `"temperature"` or `"garg"`;
/// * the options of `icl repro`'s flags, with its defaults (`icl.options("repro")` lists them):
///   `scale`: `"smoke"` (minutes on 2 cores, with the reductions each claim states) or
///   `"paper"` (the paper's sizes);
/// * `only`: claim ids (a list, or one comma-separated str); only the runs they need are
///   trained; `None`: every claim;
/// * `jobs`: runs trained at once, 1 to 256;
/// * `engine`: `"simd"` (default, the fastest built in), `"scalar"` or `"vulkan"`;
/// * `set`: config overrides for every run the claims train, `{"train.steps": 50000}` (as
///   `icl repro --set train.steps=50000`; `report.json` lists them under `"set"`);
/// * `progress`: `True` prints a line per run (`[i/n] start|done|skip NAME`) on `sys.stderr`,
///   and every 30 s (`ICL_PROGRESS_SECONDS`) one of the runs in training with their steps and
///   time left; a
///   callable is called as `progress(name, index, count, event)` with those events (`"start"`
///   when a run starts training, `"done"` when it ends, `"skip"` for a complete run; then the
///   same for the computations without training, counted apart), one call at a time. It
///   cannot stop the runs: an exception it raises ends its calls and is raised when the work is
///   done.
///
/// Raises `icl.UnknownNameError` (an unknown paper, engine or `set` key), `icl.InputError` (an
/// unknown scale or claim id, `jobs` outside 1..=256, a bad `set` value, `set` when the claims
/// train no run) before anything is written, `icl.FileError` when
/// `out` cannot be written. The GIL is released while it runs; Ctrl-C takes effect when the
/// call returns (complete runs are kept: the next call skips them).
#[pyfunction]
#[pyo3(
    signature = (paper, out, *, progress = ProgressArg::Flag(false), **options),
    text_signature = "(paper, out, *, progress=False, **options)"
)]
pub fn repro<'py>(
    py: Python<'py>,
    paper: &str,
    out: PathBuf,
    progress: ProgressArg,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let (progress, call) = progress.split(py)?;
    let o = crate::kwargs::options::<ReproArgs>("repro", options)?
        .options(paper, out)
        .or_py()?;
    let mut raised: Option<PyErr> = None;
    let report = py
        .detach(|| {
            let mut say = |name: &str, i: usize, n: usize, what: &str| {
                if progress {
                    Python::attach(|py| {
                        stderr_write(py, &format!("[{}/{n}] {what:5} {name}\n", i + 1))
                    });
                }
                if let (Some(cb), None) = (&call, &raised) {
                    if let Err(e) = Python::attach(|py| cb.call1(py, (name, i, n, what))) {
                        raised = Some(e);
                    }
                }
            };
            let mut lines = |line: &str| {
                if progress {
                    Python::attach(|py| stderr_write(py, &format!("      {line}\n")));
                }
            };
            icl_core_run::repro::repro_lines(&o, &mut say, &mut lines)
        })
        .or_py()?;
    if let Some(e) = raised {
        return Err(e);
    }
    py.import("json")?
        .call_method1("loads", (icl_core_run::repro::report::json(&report),))
}
