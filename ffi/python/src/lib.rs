//! # icl-ffi-python
//!
//! The Python API of icl (`import icl`): a thin shell over the run layer (`icl-core-run`) and the core
//! (`icl-core`), like the `icl` CLI and the C API, so a preset, an engine name, a seed or a JSON
//! contract means the same thing from Python as from the command line. Nothing is computed here:
//! this crate converts arguments (numpy arrays, Python values) and results, maps the library's
//! errors to the `icl.Error` exceptions, and releases the GIL around long computations.
//!
//! The extension module is `icl._icl`; the Python package around it (`python/icl/`) re-exports
//! it, declares the exception classes and ships the type stubs.
// `!(x >= 0.0)` rejects NaN along with out-of-range values.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

mod arrays;
mod config;
mod errors;
mod kwargs;
mod repro;
mod run;
mod sweep;
mod values;

use crate::arrays::new_f64;
use crate::errors::{input_err, OrPy};
use crate::values::{param_text, to_py, Int};
use icl_core::rng::Domain;
use icl_core::{Batch, Task};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

/// The presets: `{name: description}` in `icl presets` order.
#[pyfunction]
fn presets(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    for (name, description, _) in icl_core::presets::PRESETS {
        d.set_item(name, description)?;
    }
    Ok(d)
}

/// Sample `n` sequences of the config's task with context length `L` (default: the config's
/// `task.L`), exactly as the library draws them: sequence b comes from the random stream
/// (seed, domain, step, b).
///
/// * `domain="train"`: the batch of optimiser step `step` (default 0) of a run with this seed;
/// * `domain="eval"`: the Monte Carlo samples of `icl eval` (and `Run.eval`) at test length L
///   (`step` defaults to L, as there; seed 0 is `eval`'s default).
///
/// Returns `(z, y)`: float64 arrays of shape `(n, L+1, E)` (token-major, each token `[x; y]`,
/// E = d + n_out, the query last with its y-slots 0) and `(n, n_out)` (the query targets).
#[pyfunction]
#[pyo3(signature = (config, n, L = None, *, seed = None, step = None, domain = "train"))]
#[allow(non_snake_case)]
fn sample<'py>(
    py: Python<'py>,
    config: &Bound<'py, PyAny>,
    n: Int<usize>,
    L: Option<Int<usize>>,
    seed: Option<Int<u64>>,
    step: Option<Int<u64>>,
    domain: &str,
) -> PyResult<Bound<'py, PyTuple>> {
    let (n, L, seed, step) = (n.0, L.map(|v| v.0), seed.map(|v| v.0), step.map(|v| v.0));
    let cfg = config::Config::from_arg(config)?.cfg;
    let len = L.unwrap_or(cfg.task.len);
    let dom = match domain {
        "train" => Domain::Train,
        "eval" => Domain::Eval,
        _ => {
            return Err(input_err(format!(
                "domain {domain:?}; expected \"train\" or \"eval\""
            )))
        }
    };
    let step = step.unwrap_or(if dom == Domain::Eval { len as u64 } else { 0 });
    let seed = seed.unwrap_or(if dom == Domain::Eval {
        0
    } else {
        cfg.train.seed
    });
    if n == 0 || len == 0 {
        return Err(crate::errors::shape_err(format!(
            "need n >= 1 sequences and context length L >= 1 (n = {n}, L = {len})"
        )));
    }
    if len > icl_core_run::eval::MAX_EVAL_LEN {
        return Err(input_err(format!(
            "L = {len} is outside 1..={}",
            icl_core_run::eval::MAX_EVAL_LEN
        )));
    }
    let task = Task::new(&cfg).or_py()?;
    let (d, no) = (task.d, task.n_out);
    let b: Batch<f64> = py
        .detach(|| -> icl_core::Result<Batch<f64>> {
            let mut b = Batch::try_zeros(n, len, d, no)?;
            task.sample_into(seed, dom, step, 0, &mut b, &mut Vec::new());
            Ok(b)
        })
        .or_py()?;
    let z = new_f64(py, b.z, &[n, len + 1, d + no])?;
    let y = new_f64(py, b.y, &[n, no])?;
    PyTuple::new(py, [z, y])
}

/// Compute a theory quantity of the papers (closed forms, ODEs, simulators) from the one theory
/// registry that `icl theory` uses, e.g. `icl.theory("eta-star", d=5, L=40, sigma2=0.1)`.
///
/// Parameters are keyword arguments named as `icl theory`'s flags (a `-` in a flag is `_` here:
/// `eta_x=` for `--eta-x`); lists and numpy arrays are passed as comma-separated values. Returns
/// the dict `icl theory NAME --json` prints: `{"name", "value", <extra outputs>..., "params"}`,
/// plus `"trajectory"` (`{column: float64 array}`) for ODE and simulator quantities. The GIL is
/// released while it computes. `icl.theories()` lists every quantity with its parameters.
#[pyfunction]
#[pyo3(signature = (name, **params))]
fn theory<'py>(
    py: Python<'py>,
    name: &str,
    params: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let mut args = Vec::new();
    if let Some(p) = params {
        for (k, v) in p.iter() {
            let k: String = k.extract()?;
            args.push((k.replace('_', "-"), param_text(&v)?));
        }
    }
    let name = name.to_string();
    let (out, vals) = py
        .detach(|| icl_core_run::theory::evaluate(&name, &args))
        .or_py()?;
    let res = to_py(py, &icl_core_run::theory::result_json(&name, &out, &vals))?;
    if let Some(t) = &out.traj {
        let d = PyDict::new(py);
        for (j, col) in t.columns.iter().enumerate() {
            let v: Vec<f64> = t.rows.iter().map(|r| r[j]).collect();
            let n = v.len();
            d.set_item(col, new_f64(py, v, &[n])?)?;
        }
        res.set_item("trajectory", d)?;
    }
    Ok(res)
}

/// Every theory quantity: `[{"name", "paper", "about", "params": [{"flag", "default", "help",
/// "accepts"}]}]` (as `icl theory --list --json`).
#[pyfunction]
fn theories(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    to_py(py, &icl_core_run::theory::list_json())
}

/// The options of an entry point, `"train"` (`icl.train`, `icl.resume`), `"eval"` (`Run.eval`),
/// `"repro"` (`icl.repro`) or `"sweep_run"` (`icl.sweep_run`): one dict per keyword argument,
/// `{"name", "kind", "optional", "default", "flag", "help"}` (`flag`: the `icl` flag of the same
/// option). Raises `icl.UnknownNameError` for another name.
#[pyfunction]
fn options<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    to_py(py, &icl_core_run::options::schema(name).or_py()?)
}

/// The extension module `icl._icl` (re-exported by the `icl` package).
#[pymodule]
fn _icl(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("ENGINES", PyTuple::new(m.py(), icl_core_run::ENGINES)?)?;
    m.add("DEFAULT_ENGINE", icl_core_run::default_engine())?;
    m.add_class::<config::Config>()?;
    m.add_class::<run::Run>()?;
    m.add_function(wrap_pyfunction!(presets, m)?)?;
    m.add_function(wrap_pyfunction!(sample, m)?)?;
    m.add_function(wrap_pyfunction!(theory, m)?)?;
    m.add_function(wrap_pyfunction!(theories, m)?)?;
    m.add_function(wrap_pyfunction!(options, m)?)?;
    m.add_function(wrap_pyfunction!(run::train, m)?)?;
    m.add_function(wrap_pyfunction!(run::resume, m)?)?;
    m.add_function(wrap_pyfunction!(run::load, m)?)?;
    m.add_function(wrap_pyfunction!(repro::repro, m)?)?;
    m.add_function(wrap_pyfunction!(sweep::sweep_plan, m)?)?;
    m.add_function(wrap_pyfunction!(sweep::sweep_run, m)?)?;
    m.add_function(wrap_pyfunction!(sweep::sweep_status, m)?)?;
    m.add_function(wrap_pyfunction!(sweep::sweep_collect, m)?)?;
    Ok(())
}
