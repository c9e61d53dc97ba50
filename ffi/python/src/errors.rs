//! The library's errors as Python exceptions of the `icl.Error` hierarchy (declared in
//! `python/icl/_errors.py`), classified from [`RunError`] as the CLI classifies them into exit codes
//! and the C API into status codes. The message is the library's, unchanged: `str(e)` is what
//! `icl` prints after `icl: error: `.
use icl_core_run::RunError;
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
    with_errno(new_err(class_of(&e), e.to_string()), &e)
}

/// The Python exception for run `run` of a sweep failing with `e` (the message names the run).
pub fn py_err_in(run: &str, e: RunError) -> PyErr {
    with_errno(new_err(class_of(&e), format!("run {run}: {e}")), &e)
}

/// `errno` on the `OSError`s, as Python's own file errors carry it: the system's code for a
/// refused file operation (`FileError`), `ENOENT` for a missing run or file (`RunNotFoundError`,
/// a `FileNotFoundError`). (Not `filename` or `strerror`: with them `str(e)` would become
/// Python's `[Errno 2] ...` form instead of the library's message.)
fn with_errno(err: PyErr, e: &RunError) -> PyErr {
    Python::attach(|py| {
        let v = err.value(py);
        match e {
            RunError::Os(_, io) => {
                if let Some(code) = io.raw_os_error() {
                    let _ = v.setattr("errno", code);
                }
            }
            RunError::NotFound(_) => {
                if let Ok(code) = py.import("errno").and_then(|m| m.getattr("ENOENT")) {
                    let _ = v.setattr("errno", code);
                }
            }
            _ => {}
        }
    });
    err
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
