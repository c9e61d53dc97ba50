//! Keyword arguments onto the run layer's options structs ([`icl_core_run::options`]): each keyword is
//! a field of the struct, written as the text the C API takes for it, by the field's kind, and
//! read by the same function ([`icl_core_run::options::from_pairs`]). A field added to a struct is a
//! keyword here with no change to this crate.
use crate::errors::{type_err, OrPy};
use crate::values::{param_text, to_toml};
use icl_core_run::options::{fields, from_pairs, Field, Kind, Options};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

/// Options struct `T` from the keyword arguments `kwargs` of the Python function `func` (`None`
/// values are unset). A keyword that is no field is a
/// `TypeError`, as for any Python function; a value of the wrong Python type too; a value out of
/// range is `icl.InputError`.
pub fn options<T: Options>(func: &str, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<T> {
    let fields = fields::<T>();
    let mut pairs = Vec::new();
    for (k, v) in kwargs.iter().flat_map(|d| d.iter()) {
        let k: String = k.extract()?;
        let f = fields.iter().find(|f| f.name == k).ok_or_else(|| {
            type_err(format!(
                "{func}() got an unexpected keyword argument '{k}' (its options: {})",
                fields.iter().map(|f| f.name).collect::<Vec<_>>().join(", ")
            ))
        })?;
        if !v.is_none() {
            pairs.extend(texts(f, &v)?);
        }
    }
    from_pairs(&pairs).or_py()
}

fn is_list(v: &Bound<'_, PyAny>) -> bool {
    v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() || is_numpy(v, "ndarray")
}

fn is_numpy(v: &Bound<'_, PyAny>, class: &str) -> bool {
    let t = v.get_type();
    t.module().map(|m| m.to_string()).unwrap_or_default() == "numpy"
        && t.name().map(|n| n.to_string()).unwrap_or_default() == class
}

/// The key/value texts of field `f` given as `v`.
fn texts(f: &Field, v: &Bound<'_, PyAny>) -> PyResult<Vec<(String, String)>> {
    let k = f.name;
    let wrong = |want: &str| {
        let got = v
            .get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_default();
        type_err(format!("{k} must be {want}, not {got}"))
    };
    let one = |t: String| Ok(vec![(k.to_string(), t)]);
    match f.kind {
        Kind::Bool => match v.extract::<bool>() {
            Ok(b) => one(b.to_string()),
            Err(_) => Err(wrong("a bool")),
        },
        Kind::Int => {
            // an int, or what indexes like one (numpy integers); not a bool, a float or text
            if v.is_instance_of::<PyBool>() || v.is_instance_of::<PyFloat>() {
                return Err(wrong("an int"));
            }
            let i = if v.is_instance_of::<PyInt>() {
                v.clone()
            } else if v.hasattr("__index__")? && !v.is_instance_of::<PyString>() {
                v.call_method0("__index__")?
            } else {
                return Err(wrong("an int"));
            };
            one(i.str()?.to_string())
        }
        Kind::Float => match v.extract::<f64>() {
            Ok(x) if !v.is_instance_of::<PyString>() => one(x.to_string()),
            _ => Err(wrong("a number")),
        },
        Kind::Text => one(param_text(v)?),
        Kind::List if is_list(v) => one(param_text(v)?),
        Kind::List => Err(wrong("a list")),
        Kind::Items => {
            if let Ok(d) = v.cast::<PyDict>() {
                let mut out = Vec::new();
                for (key, item) in d.iter() {
                    let key: String = key
                        .extract()
                        .map_err(|_| type_err(format!("{k} must map str keys to values")))?;
                    out.push((format!("{k}.{key}"), item_text(&item)?));
                }
                Ok(out)
            } else if let Ok(s) = v.cast::<PyString>() {
                one(s.to_cow()?.into_owned())
            } else if is_list(v) {
                let items = v
                    .try_iter()?
                    .map(|x| item_text(&x?))
                    .collect::<PyResult<Vec<_>>>()?;
                one(items.join(","))
            } else {
                Err(wrong("a dict, a list or a str"))
            }
        }
    }
}

/// One item of a list or dict option: a str as it is (`"2e1"`), else the text of its config value
/// (`True`: `true`, `[1, 2]`: `[1, 2]`), as `--set KEY=TEXT` would give it.
fn item_text(v: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(s) = v.cast::<PyString>() {
        return Ok(s.to_cow()?.into_owned());
    }
    Ok(match to_toml(v)? {
        toml::Value::String(s) => s,
        other => other.to_string(),
    })
}
