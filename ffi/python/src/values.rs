//! Conversions between Python values and the library's values: JSON (the contracts of
//! `--json`), TOML config values, and the text of theory parameters.
use crate::errors::type_err;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

/// A JSON value as plain Python objects (dict, list, str, int, float, bool, None).
pub fn json_to_py<'py>(py: Python<'py>, v: &serde_json::Value) -> PyResult<Bound<'py, PyAny>> {
    use serde_json::Value as J;
    Ok(match v {
        J::Null => py.None().into_bound(py),
        J::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        J::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any()
            }
        }
        J::String(s) => PyString::new(py, s).into_any(),
        J::Array(a) => {
            let items = a
                .iter()
                .map(|x| json_to_py(py, x))
                .collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)?.into_any()
        }
        J::Object(m) => {
            let d = PyDict::new(py);
            for (k, x) in m {
                d.set_item(k, json_to_py(py, x)?)?;
            }
            d.into_any()
        }
    })
}

/// A serialisable value (a `--json` contract) as Python objects.
pub fn to_py<'py, T: serde::Serialize>(py: Python<'py>, v: &T) -> PyResult<Bound<'py, PyAny>> {
    let j = serde_json::to_value(v)
        .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))?;
    json_to_py(py, &j)
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
    Err(type_err(format!(
        "a parameter value must be a bool, int, float, str or a list of numbers, not {}",
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
