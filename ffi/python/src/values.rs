//! Conversions between Python values and the library's values: JSON (the contracts of
//! `--json`), TOML config values, and the text of theory parameters.
use crate::errors::type_err;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PyList, PyString, PyTuple};

/// A serialisable value (a `--json` contract) as Python objects: its JSON text read by Python's
/// `json` module, so dicts keep the field order of `--json` output and every number reads back
/// to the same double.
pub fn to_py<'py, T: serde::Serialize>(py: Python<'py>, v: &T) -> PyResult<Bound<'py, PyAny>> {
    let text = serde_json::to_string(v)
        .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))?;
    py.import("json")?.call_method1("loads", (text,))
}

fn describe(v: &Bound<'_, PyAny>) -> String {
    v.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}

/// numpy scalars and arrays as Python scalars and lists (`.tolist()`), anything else unchanged.
fn plain<'py>(v: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let np = v
        .get_type()
        .module()
        .map(|m| m.to_string())
        .unwrap_or_default();
    if np == "numpy" && v.hasattr("tolist")? {
        return v.call_method0("tolist");
    }
    Ok(v.clone())
}

/// A Python value as a config value: bool, int, float, a list (or tuple, numpy array) of them,
/// or text, which is read as `icl train --set key=TEXT` reads it (`"auto"`, `"N+1"`, `"1e-3"`).
pub fn to_toml(v: &Bound<'_, PyAny>) -> PyResult<toml::Value> {
    let v = plain(v)?;
    if v.is_instance_of::<PyBool>() {
        return Ok(toml::Value::Boolean(v.extract()?));
    }
    if v.is_instance_of::<PyInt>() {
        let i: i64 = v
            .extract()
            .map_err(|_| crate::errors::input_err(format!("{v} does not fit a 64-bit integer")))?;
        return Ok(toml::Value::Integer(i));
    }
    if v.is_instance_of::<PyFloat>() {
        return Ok(toml::Value::Float(v.extract()?));
    }
    if let Ok(s) = v.cast::<PyString>() {
        return Ok(icl_core::config::parse_value_text(&s.to_cow()?));
    }
    if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
        let items = v
            .try_iter()?
            .map(|x| to_toml(&x?))
            .collect::<PyResult<Vec<_>>>()?;
        return Ok(toml::Value::Array(items));
    }
    Err(type_err(format!(
        "a config value must be a bool, int, float, str or a list of them, not {}",
        describe(&v)
    )))
}

/// A config value as Python objects.
pub fn toml_to_py<'py>(py: Python<'py>, v: &toml::Value) -> PyResult<Bound<'py, PyAny>> {
    to_py(py, v)
}

fn scalar_text(v: &Bound<'_, PyAny>) -> PyResult<String> {
    if v.is_instance_of::<PyBool>() {
        return Ok(if v.extract::<bool>()? {
            "true"
        } else {
            "false"
        }
        .into());
    }
    if v.is_instance_of::<PyInt>() {
        return Ok(v.str()?.to_string());
    }
    if v.is_instance_of::<PyFloat>() {
        // repr: the shortest text that reads back to the same double
        return Ok(v.repr()?.to_string());
    }
    if let Ok(s) = v.cast::<PyString>() {
        return Ok(s.to_cow()?.into_owned());
    }
    if v.hasattr("__fspath__")? {
        // a path (e.g. pathlib.Path, for `run=`)
        return scalar_text(&v.call_method0("__fspath__")?);
    }
    Err(type_err(format!(
        "a parameter value must be a bool, int, float, str, path or a list of numbers, not {}",
        describe(v)
    )))
}

/// A Python value as the text of a theory parameter (`icl theory NAME --param TEXT`): numbers
/// exactly, lists (or numpy arrays, flattened row-major) comma-separated.
pub fn param_text(v: &Bound<'_, PyAny>) -> PyResult<String> {
    let v = plain(v)?;
    if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
        let mut parts = Vec::new();
        for x in v.try_iter()? {
            let x = x?;
            if x.is_instance_of::<PyList>() || x.is_instance_of::<PyTuple>() {
                parts.push(param_text(&x)?);
            } else {
                parts.push(scalar_text(&x)?);
            }
        }
        return Ok(parts.join(","));
    }
    scalar_text(&v)
}

/// An integer argument (a count, length, step, seed, ...): a Python int in the range of `T`.
/// pyo3 alone raises `OverflowError` for a negative value of an unsigned argument (`n=-1`) or
/// one past the range (`2**70`); here that is `icl.InputError` (a `ValueError`) naming the value
/// and the range, so everything icl raises derives from `icl.Error`. Other types still raise
/// `TypeError`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Int<T>(pub T);

macro_rules! int_arg {
    ($($t:ty),*) => {$(
        impl<'a, 'py> FromPyObject<'a, 'py> for Int<$t> {
            type Error = PyErr;
            fn extract(obj: pyo3::Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
                let py = obj.py();
                match obj.extract::<$t>() {
                    Ok(v) => Ok(Int(v)),
                    Err(e) if e.is_instance_of::<pyo3::exceptions::PyOverflowError>(py) => {
                        let text = obj.str().map(|s| s.to_string()).unwrap_or_default();
                        Err(crate::errors::input_err(format!(
                            "{text} is outside {}..={}, the range of this argument",
                            <$t>::MIN,
                            <$t>::MAX
                        )))
                    }
                    Err(e) => Err(e),
                }
            }
        }
    )*};
}

int_arg!(u64, usize, i64);
