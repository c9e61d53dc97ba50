//! `icl.train`, `icl.resume`, `icl.load` and `icl.Run`: training runs into run folders
//! (`icl_core_run::train`, the one run-folder writer of `icl train`), and what a notebook does with a
//! finished run: its summary and metrics, `analyze` (`icl_core_run::analyze`), `eval`
//! (`icl_core_run::eval`) and `predict` (the engine's batched prediction, as `icl eval` predicts).
use crate::arrays::{new_f64, read_floats, read_tokens};
use crate::config::Config;
use crate::errors::{input_err, py_err, OrPy};
use crate::values::to_py;
use icl_core::budget::{try_map, try_vec};
use icl_core::{Batch, Model, Runner};
use icl_core_run::options::{EvalArgs, TrainArgs};
use icl_core_run::train::Outcome;
use icl_core_run::{dispatch, AnyModel, RunDir, RunScalar};
use pyo3::exceptions::PyKeyboardInterrupt;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A finished run folder (from `icl.train`, `icl train`, `icl import` or `icl.load`) with its
/// model loaded.
#[pyclass(module = "icl", name = "Run", frozen)]
pub struct Run {
    dir: PathBuf,
    config: icl_core::Config,
    step: u64,
    model: AnyModel,
}

impl Run {
    /// Load the run in `dir` (its `model.safetensors`).
    pub fn open(dir: &Path) -> PyResult<Run> {
        let rd = RunDir::new(dir);
        rd.check_run().or_py()?;
        let l = icl_core_run::checkpoint::load(&rd.model()).or_py()?;
        Ok(Run {
            dir: dir.to_path_buf(),
            config: l.config,
            step: l.step,
            model: l.model,
        })
    }
}

fn pathlib<'py>(py: Python<'py>, p: &Path) -> PyResult<Bound<'py, PyAny>> {
    py.import("pathlib")?.getattr("Path")?.call1((p,))
}

/// Rows as a pandas DataFrame when pandas is installed (and `as_frame` is not False), else the
/// list of dicts.
fn frame<'py>(
    py: Python<'py>,
    rows: Bound<'py, PyAny>,
    as_frame: Option<bool>,
) -> PyResult<Bound<'py, PyAny>> {
    match as_frame {
        Some(false) => Ok(rows),
        Some(true) => py.import("pandas")?.getattr("DataFrame")?.call1((rows,)),
        None => match py.import("pandas") {
            Ok(pd) => pd.getattr("DataFrame")?.call1((rows,)),
            Err(_) => Ok(rows),
        },
    }
}

fn predict_as<T: RunScalar>(
    m: &Model<T>,
    engine: &str,
    n: usize,
    len: usize,
    z: &[f64],
) -> icl_core_run::Result<Vec<f64>> {
    let spec = &m.spec;
    // the copies are allocated fallibly: an array that fits but whose copy does not is an error
    let zt: Vec<T> = try_map(z, "z in the model's precision", |&x| T::of(x))?;
    let batch = Batch::from_parts(
        n,
        len,
        spec.d,
        spec.n_out,
        zt,
        try_vec(n * spec.n_out, T::zero(), "targets")?,
    )?;
    let mut runner = Runner::new(T::engine(engine)?);
    let mut out = try_vec(n * spec.n_out, T::zero(), "predictions")?;
    runner.predict(m.attention()?, &m.circuits()?, &batch, &mut out)?;
    Ok(try_map(&out, "predictions", |x| x.to_f64())?)
}

#[pymethods]
impl Run {
    /// Open the run folder `dir` (same as `icl.load(dir)`).
    #[new]
    fn new(dir: PathBuf) -> PyResult<Run> {
        Run::open(&dir)
    }

    /// The run folder (a `pathlib.Path`).
    #[getter]
    fn dir<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        pathlib(py, &self.dir)
    }

    /// The run folder as text: a run is a path (`os.fspath(run)`; `icl.theory(..., run=run)`).
    fn __fspath__(&self) -> PyResult<String> {
        self.dir
            .to_str()
            .map(str::to_owned)
            .ok_or_else(|| crate::errors::input_err("the run folder's path is not UTF-8"))
    }

    /// The run's configuration (a copy).
    #[getter]
    fn config(&self) -> Config {
        Config {
            cfg: self.config.clone(),
            preset: None,
        }
    }

    /// Optimiser steps behind the model.
    #[getter]
    fn step(&self) -> u64 {
        self.step
    }

    /// Compute precision of the model (`"f32"` or `"f64"`, the config's `train.dtype`).
    #[getter]
    fn dtype(&self) -> &'static str {
        self.model.dtype().as_str()
    }

    /// `summary.json` as a dict: config, engine, protocol, steps/s, final loss, risk at the
    /// training length, per-head omega/mu/kind, ...
    #[getter]
    fn summary<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let text = icl_core_run::folder::read_text(&RunDir::new(&self.dir).summary()).or_py()?;
        if let Err(e) = serde_json::from_str::<serde_json::Value>(&text) {
            return Err(py_err(icl_core_run::RunError::Corrupt(
                RunDir::new(&self.dir).summary(),
                e.to_string(),
            )));
        }
        py.import("json")?.call_method1("loads", (text,))
    }

    /// The training log (`metrics.csv`): step, loss and one column per probe (omega_h, mu_h for
    /// the He et al. models). A pandas DataFrame when pandas is installed (and `as_frame` is not
    /// False), else a dict of column name -> float64 array.
    #[pyo3(signature = (as_frame = None))]
    fn metrics<'py>(&self, py: Python<'py>, as_frame: Option<bool>) -> PyResult<Bound<'py, PyAny>> {
        let path = RunDir::new(&self.dir).metrics();
        let text = icl_core_run::folder::read_text(&path).or_py()?;
        let corrupt = |m: String| py_err(icl_core_run::RunError::Corrupt(path.clone(), m));
        let mut lines = text.lines();
        let header: Vec<&str> = lines
            .next()
            .ok_or_else(|| corrupt("empty".into()))?
            .split(',')
            .collect();
        let mut cols: Vec<Vec<f64>> = vec![Vec::new(); header.len()];
        for (i, line) in lines.enumerate() {
            let vals: Vec<&str> = line.split(',').collect();
            if vals.len() != header.len() {
                return Err(corrupt(format!("row {} has {} values", i + 1, vals.len())));
            }
            for (c, v) in cols.iter_mut().zip(vals) {
                c.push(
                    v.trim()
                        .parse()
                        .map_err(|_| corrupt(format!("row {}: {v:?}", i + 1)))?,
                );
            }
        }
        let d = PyDict::new(py);
        for (name, c) in header.iter().zip(cols) {
            let n = c.len();
            d.set_item(name, new_f64(py, c, &[n])?)?;
        }
        frame(py, d.into_any(), as_frame)
    }

    /// Per-head analysis, the dict `icl analyze --json` prints: `{"step", "heads": [{"omega",
    /// "mu", "kind", ...}], "sign_matching", "gamma", "mu_plus", "mu_minus", "eta_eff", ...}`.
    /// With `plot=True` it also writes `circuits.svg` into the run folder (as `icl analyze`;
    /// `attention.svg` for a GPT-2 run).
    #[pyo3(signature = (plot = false))]
    fn analyze<'py>(&self, py: Python<'py>, plot: bool) -> PyResult<Bound<'py, PyAny>> {
        let dir = RunDir::new(&self.dir);
        let a = py
            .detach(|| icl_core_run::analyze::analyze_run(&dir, plot))
            .or_py()?;
        to_py(py, &a)
    }

    /// Draw the run's training figures again (as `icl plot DIR`): `loss.svg` and its family's
    /// (`omega_mu.svg`, `pattern.svg`, ...) from the training log its model keeps, with this
    /// icl's drawing code; returns the folder's figure files by name.
    fn plot(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        let dir = RunDir::new(&self.dir);
        py.detach(|| icl_core_run::outputs::redraw(&dir)).or_py()
    }

    /// The effective circuits: `{"kq": (H, E, E), "ov": (H, n_out, E), "omega": (H,),
    /// "mu": (H, n_out)}` float64 arrays (E = d + n_out; score of key z_l for query z_q is
    /// z_l^T KQ z_q).
    fn circuits<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let rep = icl_core_run::analyze::report(&self.model).or_py()?;
        let spec = self.model.spec();
        let (h, e, no) = (spec.heads(), spec.d + spec.n_out, spec.n_out);
        let cat = |f: &dyn Fn(&icl_core::families::attention::analysis::HeadReport) -> Vec<f64>| -> Vec<f64> {
            rep.heads.iter().flat_map(f).collect()
        };
        let d = PyDict::new(py);
        d.set_item("kq", new_f64(py, cat(&|r| r.kq.clone()), &[h, e, e])?)?;
        d.set_item("ov", new_f64(py, cat(&|r| r.ov.clone()), &[h, no, e])?)?;
        d.set_item("omega", new_f64(py, cat(&|r| vec![r.omega]), &[h])?)?;
        d.set_item("mu", new_f64(py, cat(&|r| r.mu_all.clone()), &[h, no])?)?;
        Ok(d)
    }

    /// The model's parameters in the checkpoint layout (`q_proj.weight`, ... for the full
    /// parametrisation; see docs/run-folders.md), as float64 arrays.
    fn params<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let p = self.model.params_f64();
        let d = PyDict::new(py);
        for t in self.model.spec().tensors() {
            let v = p[t.offset..t.offset + t.len()].to_vec();
            d.set_item(t.name, new_f64(py, v, &t.shape)?)?;
        }
        Ok(d)
    }

    /// Monte Carlo risk ± standard error of the model and the baselines (vanilla and debiased
    /// GD at eta*, ridge, NW, OLS) at each test length L', as `icl eval --json` computes it:
    /// rows `{"estimator", "L", "risk", "stderr", "tau", "shift"}` with the model as estimator
    /// `"model"` (one row per temperature, `"tau"` on model rows). The options are the keywords
    /// of `icl eval`'s flags, with its defaults (`icl.options("eval")` lists them): `lengths`
    /// (a list, `[10, 20, 40, 100]`), `samples` (20000), `seed`, `engine`, `tau` (temperatures:
    /// a list of numbers and `"opt"`, or the text `"0.5,1,opt"`; every attention logit divided
    /// by tau, `opt` chosen per length on held-out sequences), `tau_holdout`, `shift` (test-time
    /// shifts as a dict, `{"x_cov": 3, "x_mean": "2e1", "noise": 1.0}`, the keys of
    /// `icl eval --shift`), and for transformer runs `lambda_range`, `stack`, `layers_out`,
    /// `alignment`, `ref`. A pandas DataFrame when pandas is installed (and `as_frame` is not
    /// False), else a list of dicts. `plot`: a file to draw the risks against L' in
    /// (`icl eval --plot`; PNG if it ends in `.png`, SVG if in `.svg`; `log_lengths=True` for a
    /// log L' axis). The GIL is released while it runs.
    #[pyo3(
        signature = (*, as_frame = None, plot = None, **options),
        text_signature = "($self, *, as_frame=None, plot=None, **options)"
    )]
    fn eval<'py>(
        &self,
        py: Python<'py>,
        as_frame: Option<bool>,
        plot: Option<std::path::PathBuf>,
        options: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let args = crate::kwargs::options::<EvalArgs>("eval", options)?;
        args.options().or_py()?;
        let dir = RunDir::new(&self.dir);
        let res = py
            .detach(|| {
                let res = args.eval(&dir)?;
                if let Some(p) = &plot {
                    icl_core_run::eval::write_risk_plot(&res, p)?;
                }
                Ok::<_, icl_core_run::RunError>(res)
            })
            .or_py()?;
        let rows = to_py(py, &res.rows)?;
        frame(py, rows.cast_into::<PyList>()?.into_any(), as_frame)
    }

    /// The model's predictions for token-major sequences `z`: a float64 or float32 array of
    /// shape `(n, L+1, E)` (or `(L+1, E)` for one sequence), C-contiguous, each token
    /// `[x; y]` (E = d + n_out), the query last (its y-slots are ignored). Returns float64
    /// predictions of shape `(n, n_out)` (or `(n_out,)`). Inputs are rounded to the model's
    /// precision, as `icl.sample` data are when `icl eval` predicts them.
    #[pyo3(signature = (z, engine = None))]
    fn predict<'py>(
        &self,
        py: Python<'py>,
        z: &Bound<'py, PyAny>,
        engine: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let spec = self.model.spec();
        let (e, no) = (spec.d + spec.n_out, spec.n_out);
        let t = read_tokens("z", z, e)?;
        let engine = engine.unwrap_or_else(|| icl_core_run::default_engine().to_string());
        icl_core_run::engines::check(&engine, self.model.dtype()).or_py()?;
        let (n, len) = (t.n, t.tokens - 1);
        let out = py
            .detach(|| dispatch!(&self.model, m => predict_as(m, &engine, n, len, &t.values)))
            .or_py()?;
        if t.single {
            new_f64(py, out, &[no])
        } else {
            new_f64(py, out, &[n, no])
        }
    }

    /// The model's predictions on prompts: `xs` of shape `(n, k, d)` and `ys` of shape `(n, k)`
    /// (float64 or float32, C-contiguous). GPT-2 runs: float64 `(n, k)`, the prediction at
    /// every x position (position i reads pairs 0..i-1 and x_i; Garg et al.'s output). Other
    /// families: `(n, n_out)`, the prediction at the last x as the query (its y is not read).
    #[pyo3(signature = (xs, ys, engine = None))]
    fn predict_prompts<'py>(
        &self,
        py: Python<'py>,
        xs: &Bound<'py, PyAny>,
        ys: &Bound<'py, PyAny>,
        engine: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (xshape, xv) = read_floats("xs", xs)?;
        let (yshape, yv) = read_floats("ys", ys)?;
        let d = self.model.spec().d;
        let (n, k) = match (&xshape[..], &yshape[..]) {
            ([n, k, dd], [n2, k2]) if *dd == d && n == n2 && k == k2 => (*n, *k),
            _ => {
                return Err(crate::errors::input_err(format!(
                    "xs has shape {xshape:?} and ys {yshape:?}; (n, k, {d}) and (n, k) needed"
                )))
            }
        };
        let engine = engine.unwrap_or_else(|| icl_core_run::default_engine().to_string());
        let p = py
            .detach(|| icl_core_run::predict::predict_prompts(&self.model, &engine, &xv, &yv, n, k))
            .or_py()?;
        new_f64(py, p.values, &p.shape)
    }

    fn __repr__(&self) -> String {
        let s = self.model.spec();
        format!(
            "<icl.Run {} (step {}, {} heads, d={}, {})>",
            self.dir.display(),
            self.step,
            s.heads(),
            s.d,
            self.model.dtype().as_str()
        )
    }
}

/// How training reports progress: nothing, a line on `sys.stderr`, or a callable.
enum Report {
    Quiet,
    Line,
    Call(Py<PyAny>),
}

/// The `progress` argument: a bool, or a callable (anything else counts by its truth value).
#[derive(FromPyObject)]
pub enum ProgressArg {
    Flag(bool),
    Other(Py<PyAny>),
}

impl ProgressArg {
    /// Whether to print lines, and the callable to call (the `progress` of the sweep and repro
    /// functions; `Report::of` for training).
    pub(crate) fn split(self, py: Python<'_>) -> PyResult<(bool, Option<Py<PyAny>>)> {
        Ok(match Report::of(py, self)? {
            Report::Quiet => (false, None),
            Report::Line => (true, None),
            Report::Call(f) => (false, Some(f)),
        })
    }
}

impl Report {
    fn of(py: Python<'_>, v: ProgressArg) -> PyResult<Report> {
        Ok(match v {
            ProgressArg::Flag(true) => Report::Line,
            ProgressArg::Flag(false) => Report::Quiet,
            ProgressArg::Other(f) if f.bind(py).is_callable() => Report::Call(f),
            ProgressArg::Other(f) if f.bind(py).is_truthy()? => Report::Line,
            ProgressArg::Other(_) => Report::Quiet,
        })
    }
}

pub(crate) fn stderr_write(py: Python<'_>, s: &str) {
    if let Ok(e) = py.import("sys").and_then(|m| m.getattr("stderr")) {
        let _ = e.call_method1("write", (s,));
        let _ = e.call_method0("flush");
    }
}

/// Run `f` (a training run) without the GIL; every 100 ms it takes the GIL back to check for
/// signals (Ctrl-C interrupts the run, which is checkpointed first) and report progress.
fn run_training(
    py: Python<'_>,
    report: Report,
    cfg: Option<icl_core::config::Config>,
    f: impl FnOnce(icl_core_run::train::Progress) -> icl_core_run::Result<Outcome> + Send,
) -> PyResult<Outcome> {
    let t0 = Instant::now();
    let mut last_check = Instant::now();
    let mut last_line = Instant::now();
    let mut stop: Option<PyErr> = None;
    let mut printed = false;
    // the curriculum's schedule is said once, before the first line
    let mut said = false;
    // the step this session started from (a resumed run's first call is after its step + 1)
    let mut start: Option<u64> = None;
    // the time left by the work of the steps left (`icl_core_run::eta`, as the CLI's bar)
    let mut eta: Option<icl_core_run::eta::Eta> = None;
    let mut progress = |step: u64, total: u64, loss: f64| -> bool {
        let from = *start.get_or_insert(step.saturating_sub(1));
        let eta = eta.get_or_insert_with(|| match &cfg {
            Some(c) => icl_core_run::eta::Eta::new(c, from),
            None => icl_core_run::eta::Eta::uniform(from),
        });
        if step < total && last_check.elapsed() < Duration::from_millis(100) {
            return true;
        }
        last_check = Instant::now();
        Python::attach(|py| {
            if let Err(e) = py.check_signals() {
                stop = Some(e);
                return false;
            }
            match &report {
                Report::Quiet => {}
                Report::Line => {
                    if !said {
                        // a fresh run under a curriculum says its schedule first
                        said = true;
                        let note = cfg.as_ref().and_then(icl_core_run::eta::curriculum_note);
                        if let Some(n) = note.filter(|_| from == 0) {
                            stderr_write(py, &format!("{n}\n"));
                        }
                    }
                    if step == total || last_line.elapsed() >= Duration::from_millis(500) {
                        last_line = Instant::now();
                        // this session's steps only: a resumed run's restored ones took no time
                        let secs = t0.elapsed().as_secs_f64();
                        let rate = (step - from) as f64 / secs.max(1e-9);
                        let left = eta.left(step, total, secs);
                        stderr_write(
                            py,
                            &format!(
                                "\rstep {step}/{total}  batch loss {loss:.6}  {rate:.0} steps/s  eta {left}  "
                            ),
                        );
                        printed = true;
                    }
                }
                Report::Call(cb) => {
                    if let Err(e) = cb.call1(py, (step, total, loss)) {
                        stop = Some(e);
                        return false;
                    }
                }
            }
            true
        })
    };
    let res = py.detach(|| f(&mut progress));
    if printed {
        stderr_write(py, "\n");
    }
    let outcome = res.map_err(py_err)?;
    if let Outcome::Interrupted { step, .. } = &outcome {
        let e = stop.unwrap_or_else(|| PyKeyboardInterrupt::new_err("interrupted"));
        if e.is_instance_of::<PyKeyboardInterrupt>(py) {
            return Err(PyKeyboardInterrupt::new_err(format!(
                "interrupted at step {step}; the run is checkpointed: continue it with icl.resume(dir)"
            )));
        }
        return Err(e);
    }
    Ok(outcome)
}

fn finished(outcome: Outcome) -> PyResult<Run> {
    match outcome {
        Outcome::Finished { dir, .. } => Run::open(&dir.dir),
        Outcome::Interrupted { .. } => Err(input_err("the run was interrupted")),
    }
}

/// Train a model and return the finished `Run`: the same run folder `icl train` writes (same
/// seed, same bytes), with the GIL released while it trains.
///
/// * `config`: an `icl.Config` or a preset name;
/// * `out`: the run folder (written completely or not at all); `None` makes a new folder under
///   the system's temporary directory (`Run.dir` tells where; it is not removed);
/// * `progress`: `True` prints step, loss, speed and the time left on `sys.stderr`; a callable
///   is called as `progress(step, total, loss)` about every 0.1 s (an exception it raises stops
///   the run);
/// * the options of `icl train`'s flags, with its defaults (`icl.options("train")` lists them):
///   `steps`, `seed` (override `train.steps`, `train.seed`), `engine` (`"simd"`, the default
///   and fastest built in, `"scalar"` or `"vulkan"`), `force` (replace an existing run in
///   `out`), `eval_samples` (Monte Carlo samples of the risk at the training length in the
///   summary), `checkpoint_every`, `checkpoint_minutes` (how often the trainer's state is
///   checkpointed).
///
/// Ctrl-C (SIGINT) stops training within 0.1 s: the run is checkpointed and `KeyboardInterrupt`
/// raised; `icl.resume(out)` continues it to the same bytes as an uninterrupted run.
#[pyfunction]
#[pyo3(
    signature = (config, *, out = None, progress = ProgressArg::Flag(true), **options),
    text_signature = "(config, *, out=None, progress=True, **options)"
)]
pub fn train(
    py: Python<'_>,
    config: &Bound<'_, PyAny>,
    out: Option<PathBuf>,
    progress: ProgressArg,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<Run> {
    let args: TrainArgs = crate::kwargs::options("train", options)?;
    let c = Config::from_arg(config)?;
    let mut cfg = c.cfg;
    args.apply(&mut cfg).or_py()?;
    let opts = args.options(c.preset).or_py()?;
    let out = match out {
        Some(o) => o,
        None => py
            .import("tempfile")?
            .call_method1("mkdtemp", ("", "icl-core-run-"))?
            .extract::<PathBuf>()?,
    };
    let report = Report::of(py, progress)?;
    let outcome = run_training(py, report, Some(cfg.clone()), |p| {
        icl_core_run::train::train(&cfg, &out, &opts, p)
    })?;
    finished(outcome)
}

/// Continue the run in `dir`: an interrupted run (Ctrl-C, a killed process) from its last
/// checkpoint, or a finished one extended to `steps`; ends with the same bytes as an
/// uninterrupted run (as `icl train --resume DIR`). Other arguments as in `icl.train` (`seed`
/// and `force` are refused: the run keeps its config and folder).
#[pyfunction]
#[pyo3(
    signature = (dir, *, progress = ProgressArg::Flag(true), **options),
    text_signature = "(dir, *, progress=True, **options)"
)]
pub fn resume(
    py: Python<'_>,
    dir: PathBuf,
    progress: ProgressArg,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<Run> {
    let args: TrainArgs = crate::kwargs::options("resume", options)?;
    let opts = args.resume_options().or_py()?;
    let steps = args.steps;
    let report = Report::of(py, progress)?;
    let cfg = icl_core_run::train::resume_config(&dir);
    let outcome = run_training(py, report, cfg, |p| {
        icl_core_run::train::resume(&dir, steps, &opts, p)
    })?;
    finished(outcome)
}

/// Open a run folder (from `icl.train`, `icl train` or `icl import`). Raises
/// `icl.RunNotFoundError` (a `FileNotFoundError`) or `icl.CorruptFileError`.
#[pyfunction]
pub fn load(dir: PathBuf) -> PyResult<Run> {
    Run::open(&dir)
}
