//! The library's errors as Python exceptions of the `icl.Error` hierarchy (declared in
//! `python/icl/_errors.py`), classified from [`RunError`] as the CLI classifies them into exit codes
//! and the C API into status codes. The message is the library's, unchanged: `str(e)` is what
//! `icl` prints after `icl: error: `.
use icl_run::RunError;
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;

/// The exception class (in `icl._errors`) for a run-layer error.
fn class_of(e: &RunError) -> &'static str {
    use icl_core::Error as C;
    match e {
        RunError::Core(c) => match c {
            C::UnknownKey(_) | C::UnknownPreset(_) | C::UnknownName(_) => "UnknownNameError",
            C::Shape(_) => "ShapeError",
            C::Checkpoint(_) => "CorruptFileError",
            C::Numerical(_) => "NumericalError",
            C::InvalidConfig(_)
            | C::NonFinite(_)
            | C::Unsupported(_)
            | C::InvalidArgument(_)
            | C::TooLarge(_) => "InputError",
        },
        RunError::NotFound(_) => "RunNotFoundError",
        RunError::Corrupt(..) => "CorruptFileError",
        RunError::Os(..) => "FileError",
        RunError::Refused(_) => "InputError",
        RunError::UnknownName(_) => "UnknownNameError",
        RunError::Engine(_) => "EngineError",
    }
}

/// An instance of `icl.<class>` with message `msg`.
pub fn new_err(class: &str, msg: impl Into<String>) -> PyErr {
    let msg = msg.into();
    Python::attach(|py| {
        let made = py
            .import("icl._errors")
            .and_then(|m| m.getattr(class))
            .and_then(|c| c.call1((msg.clone(),)));
        match made {
            Ok(inst) => PyErr::from_value(inst),
            // the package is broken (the module imported alone): still report the message
            Err(_) => PyRuntimeError::new_err(msg),
        }
    })
}

/// The Python exception for a run-layer error.
pub fn py_err(e: impl Into<RunError>) -> PyErr {
    let e = e.into();
    let err = new_err(class_of(&e), e.to_string());
    if let RunError::Os(_, io) = &e {
        if let Some(code) = io.raw_os_error() {
            // OSError's errno, as Python's own file errors carry it
            Python::attach(|py| {
                let _ = err.value(py).setattr("errno", code);
            });
        }
    }
    err
}

/// The Python exception for run `run` of a sweep failing with `e` (the message names the run).
pub fn py_err_in(run: &str, e: RunError) -> PyErr {
    new_err(class_of(&e), format!("run {run}: {e}"))
}

/// Map a run-layer result to a Python one.
pub trait OrPy<T> {
    fn or_py(self) -> PyResult<T>;
}

impl<T, E: Into<RunError>> OrPy<T> for Result<T, E> {
    fn or_py(self) -> PyResult<T> {
        self.map_err(py_err)
    }
}

/// `icl.ShapeError` (a `ValueError`): an array of the wrong shape or memory layout.
pub fn shape_err(msg: impl Into<String>) -> PyErr {
    new_err("ShapeError", msg)
}

/// `icl.InputError` (a `ValueError`): a bad argument.
pub fn input_err(msg: impl Into<String>) -> PyErr {
    new_err("InputError", msg)
}

/// `TypeError`: an argument of the wrong Python type or numpy dtype.
pub fn type_err(msg: impl Into<String>) -> PyErr {
    PyTypeError::new_err(msg.into())
}
