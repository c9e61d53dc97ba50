//! numpy arrays in and out. Inputs are checked before anything is computed: a numpy array
//! (`TypeError` otherwise), of dtype float64 or float32 (`TypeError`), C-contiguous and of the
//! documented shape (`icl.ShapeError`, a `ValueError`); finiteness is checked where the batch is
//! made (`icl.InputError`; the query's y-slots are ignored). Outputs are new float64 arrays.
use crate::errors::{shape_err, type_err};
use numpy::{
    dtype, PyArray1, PyArrayDescrMethods, PyArrayDyn, PyArrayMethods, PyUntypedArray,
    PyUntypedArrayMethods,
};
use pyo3::prelude::*;

/// A float64 array of `shape` holding `data` (row-major).
pub fn new_f64<'py>(
    py: Python<'py>,
    data: Vec<f64>,
    shape: &[usize],
) -> PyResult<Bound<'py, PyAny>> {
    Ok(PyArray1::from_vec(py, data)
        .reshape(shape.to_vec())?
        .into_any())
}

/// A token-major batch read from a numpy array: `n` sequences of `tokens` tokens of width `e`.
pub struct Tokens {
    pub n: usize,
    pub tokens: usize,
    /// The values, row-major, widened to f64 (float32 values are exact in f64).
    pub values: Vec<f64>,
    /// Whether the array was one sequence (2-D), so results drop the batch axis.
    pub single: bool,
}

/// A numpy array of float64 or float32, C-contiguous: its shape and its values widened to f64.
pub fn read_floats(name: &str, z: &Bound<'_, PyAny>) -> PyResult<(Vec<usize>, Vec<f64>)> {
    let arr = z.cast::<PyUntypedArray>().map_err(|_| {
        let t = z
            .get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_default();
        type_err(format!(
            "{name} must be a numpy array of float64 or float32, not {t} (use np.asarray)"
        ))
    })?;
    let py = z.py();
    let dt = arr.dtype();
    let is64 = dt.is_equiv_to(&dtype::<f64>(py));
    let is32 = dt.is_equiv_to(&dtype::<f32>(py));
    if !is64 && !is32 {
        return Err(type_err(format!(
            "{name} has dtype {}; float64 or float32 needed (use {name}.astype(np.float64))",
            dt.str()?
        )));
    }
    if !arr.is_c_contiguous() {
        return Err(shape_err(format!(
            "{name} is not C-contiguous (a transposed or strided view); pass np.ascontiguousarray({name})"
        )));
    }
    let shape = arr.shape().to_vec();
    let values = if is64 {
        let a = arr
            .cast::<PyArrayDyn<f64>>()?
            .try_readonly()
            .map_err(|e| crate::errors::input_err(format!("{name} cannot be read: {e}")))?;
        a.as_slice()
            .map_err(|e| shape_err(format!("{name}: {e}")))?
            .to_vec()
    } else {
        let a = arr
            .cast::<PyArrayDyn<f32>>()?
            .try_readonly()
            .map_err(|e| crate::errors::input_err(format!("{name} cannot be read: {e}")))?;
        a.as_slice()
            .map_err(|e| shape_err(format!("{name}: {e}")))?
            .iter()
            .map(|&x| x as f64)
            .collect()
    };
    Ok((shape, values))
}

/// Read `z` of shape `(n, L+1, e)` or `(L+1, e)` (one sequence).
pub fn read_tokens(name: &str, z: &Bound<'_, PyAny>, e: usize) -> PyResult<Tokens> {
    let (shape, values) = read_floats(name, z)?;
    let single = shape.len() == 2;
    let (n, tokens, width) = match shape[..] {
        [t, w] => (1, t, w),
        [n, t, w] => (n, t, w),
        _ => {
            return Err(shape_err(format!(
                "{name} has shape {shape:?}; (n, L+1, {e}) or (L+1, {e}) needed (token-major: n sequences of L context tokens and the query, each [x; y])"
            )))
        }
    };
    if width != e || tokens < 2 || n == 0 {
        return Err(shape_err(format!(
            "{name} has shape {shape:?}; (n, L+1, {e}) or (L+1, {e}) needed with n >= 1 and L >= 1 (each token is [x; y], d + n_out = {e} values)"
        )));
    }
    // finiteness is the library's check (`Batch::from_parts`), which ignores the query's y-slots
    Ok(Tokens {
        n,
        tokens,
        values,
        single,
    })
}
