//! The C API (`include/icl.h`): every function checks its pointers and lengths, runs in
//! [`guard`] (no panic crosses the boundary) and returns an [`icl_status`].
//!
//! Safety contract of every function (stated once here and in the header): a pointer argument is
//! either NULL (reported as `ICL_ERR_NULL` unless documented as optional) or valid for the length
//! passed with it; handles come from the matching `_new`/`_load` function and are not used after
//! their `_free`.
#![allow(clippy::missing_safety_doc)]

pub mod config;
pub mod eval;
pub mod model;
pub mod repro;
pub mod sweep;
pub mod task;
pub mod theory;
pub mod train;
pub mod trainer;

use crate::status::{guard, icl_status, last_error_ptr, FfiError, FfiResult};
use std::ffi::{c_char, CStr};
use std::path::Path;

/// Shape of a task sampler, model or trainer.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct icl_dims {
    /// Covariate dimension d.
    pub d: usize,
    /// Outputs per token (1 except for the multi-task task).
    pub n_out: usize,
    /// Heads H (0 for a task sampler).
    pub heads: usize,
    /// Number of flat parameters (0 for a task sampler).
    pub n_params: usize,
    /// Training context length L of the configuration.
    pub train_len: usize,
    /// 1 when the model computes in double precision, 0 for single (0 for a task sampler).
    pub is_f64: i32,
}

/// The major version of the library this header belongs to (`MAJOR` of `icl_version()`'s
/// "MAJOR.MINOR.PATCH"), for compile-time checks; `icl_version()` gives the version of the library
/// a program runs with.
pub const ICL_VERSION_MAJOR: u32 = 0;
/// The minor version of the library this header belongs to (see `ICL_VERSION_MAJOR`).
pub const ICL_VERSION_MINOR: u32 = 1;
/// The patch version of the library this header belongs to (see `ICL_VERSION_MAJOR`).
pub const ICL_VERSION_PATCH: u32 = 0;

/// Sequences drawn from the training streams (seed, train, step, b): the batch of a training step.
pub const ICL_DOMAIN_TRAIN: u32 = 0;
/// Sequences drawn from the evaluation streams (seed, eval, step, b); `icl eval` uses step = L.
pub const ICL_DOMAIN_EVAL: u32 = 1;

// ------------------------------------------------------------------------------------------------
// Pointer helpers (all return errors instead of dereferencing NULL or misaligned pointers).

fn aligned<T>(p: *const T, what: &str) -> FfiResult<()> {
    if !p.is_aligned() {
        return Err(FfiError::argument(format!("{what} is misaligned")));
    }
    Ok(())
}

/// A shared reference to a handle or struct.
pub(crate) unsafe fn href<'a, T>(p: *const T, what: &str) -> FfiResult<&'a T> {
    if p.is_null() {
        return Err(FfiError::null(what));
    }
    aligned(p, what)?;
    Ok(&*p)
}

/// A mutable reference to a handle or out-parameter.
pub(crate) unsafe fn hmut<'a, T>(p: *mut T, what: &str) -> FfiResult<&'a mut T> {
    if p.is_null() {
        return Err(FfiError::null(what));
    }
    aligned(p as *const T, what)?;
    Ok(&mut *p)
}

/// An input array of `len` values (`len` = 0 gives an empty slice, whatever the pointer).
pub(crate) unsafe fn slice<'a>(p: *const f64, len: usize, what: &str) -> FfiResult<&'a [f64]> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(FfiError::null(what));
    }
    aligned(p, what)?;
    Ok(std::slice::from_raw_parts(p, len))
}

/// An output array of `len` values.
pub(crate) unsafe fn slice_mut<'a>(
    p: *mut f64,
    len: usize,
    what: &str,
) -> FfiResult<&'a mut [f64]> {
    if len == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(FfiError::null(what));
    }
    aligned(p as *const f64, what)?;
    Ok(std::slice::from_raw_parts_mut(p, len))
}

/// An optional output array: `None` when the pointer is NULL and `len` is 0. A NULL pointer with
/// a length is `ICL_ERR_NULL`: the caller meant to pass a buffer.
pub(crate) unsafe fn opt_slice_mut<'a>(
    p: *mut f64,
    len: usize,
    what: &str,
) -> FfiResult<Option<&'a mut [f64]>> {
    if p.is_null() && len != 0 {
        Err(FfiError::null(&format!("{what} (given with length {len})")))
    } else if p.is_null() {
        Ok(None)
    } else {
        slice_mut(p, len, what).map(Some)
    }
}

/// A NUL-terminated UTF-8 string argument.
pub(crate) unsafe fn text<'a>(p: *const c_char, what: &str) -> FfiResult<&'a str> {
    if p.is_null() {
        return Err(FfiError::null(what));
    }
    CStr::from_ptr(p)
        .to_str()
        .map_err(|_| FfiError::new(icl_status::ICL_ERR_UTF8, format!("{what} is not UTF-8")))
}

/// An optional string argument (NULL = `None`).
pub(crate) unsafe fn opt_text<'a>(p: *const c_char, what: &str) -> FfiResult<Option<&'a str>> {
    if p.is_null() {
        Ok(None)
    } else {
        text(p, what).map(Some)
    }
}

/// A path argument.
pub(crate) unsafe fn path<'a>(p: *const c_char, what: &str) -> FfiResult<&'a Path> {
    Ok(Path::new(text(p, what)?))
}

/// Write a scalar out-parameter.
pub(crate) unsafe fn put<T>(p: *mut T, v: T, what: &str) -> FfiResult<()> {
    *hmut(p, what)? = v;
    Ok(())
}

/// Check an optional out-parameter before any work is done (NULL is fine; misaligned is not).
pub(crate) fn opt_out<T>(p: *mut T, what: &str) -> FfiResult<()> {
    if p.is_null() {
        Ok(())
    } else {
        aligned(p as *const T, what)
    }
}

/// Write an optional scalar out-parameter (NULL: skipped; misaligned: `ICL_ERR_ARGUMENT`).
pub(crate) unsafe fn put_opt<T>(p: *mut T, v: T, what: &str) -> FfiResult<()> {
    if !p.is_null() {
        aligned(p as *const T, what)?;
        *p = v;
    }
    Ok(())
}

/// Create a handle into `*out` (`*out` is set to NULL first, so it is NULL on failure).
pub(crate) unsafe fn create<H, F: FnOnce() -> FfiResult<H>>(out: *mut *mut H, f: F) -> icl_status {
    guard(|| {
        let slot = hmut(out, "out")?;
        *slot = std::ptr::null_mut();
        *slot = Box::into_raw(Box::new(f()?));
        Ok(())
    })
}

/// Free a handle made by [`create`] (NULL is a no-op).
pub(crate) unsafe fn destroy<H>(p: *mut H) {
    if !p.is_null() {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(Box::from_raw(p))));
    }
}

/// Read `n` (key, value) string pairs.
pub(crate) unsafe fn pairs(
    keys: *const *const c_char,
    values: *const *const c_char,
    n: usize,
) -> FfiResult<Vec<(String, String)>> {
    if n == 0 {
        return Ok(Vec::new());
    }
    if keys.is_null() || values.is_null() {
        return Err(FfiError::null("keys/values"));
    }
    if n > 1024 {
        return Err(FfiError::size(format!("{n} parameters; at most 1024")));
    }
    (0..n)
        .map(|i| {
            let k = text(*keys.add(i), "keys[i]")?;
            let v = text(*values.add(i), "values[i]")?;
            Ok((k.to_string(), v.to_string()))
        })
        .collect()
}

/// What an entry point reads from its text pairs: an options struct of the run layer
/// ([`icl_core_run::options`], through its one reader), or the pairs as they are ([`Raw`]: a theory
/// quantity's parameters, which the registry reads).
pub(crate) trait FromPairs: Sized {
    fn from_pairs(p: Vec<(String, String)>) -> FfiResult<Self>;
}

impl<T: icl_core_run::options::Options> FromPairs for T {
    fn from_pairs(p: Vec<(String, String)>) -> FfiResult<Self> {
        Ok(icl_core_run::options::from_pairs(&p)?)
    }
}

/// Text pairs taken as they are.
pub(crate) struct Raw(pub Vec<(String, String)>);

impl FromPairs for Raw {
    fn from_pairs(p: Vec<(String, String)>) -> FfiResult<Self> {
        Ok(Raw(p))
    }
}

/// The one shape of every entry point that takes text pairs and gives JSON text
/// (`icl_eval_run`, `icl_train_run`, `icl_repro`, `icl_sweep_run`, `icl_theory_eval`): read the
/// leading arguments (`args`) and the `n` pairs into `T` ([`FromPairs`]), check the output
/// pointers, compute `f`, and copy its text into `buf` (see [`copy_str`]). Every NULL, bad option
/// and output pointer is reported before the computation.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn json_call<A, T: FromPairs>(
    args: impl FnOnce() -> FfiResult<A>,
    keys: *const *const c_char,
    values: *const *const c_char,
    n: usize,
    buf: *mut c_char,
    cap: usize,
    needed: *mut usize,
    f: impl FnOnce(A, T) -> FfiResult<String>,
) -> icl_status {
    guard(|| {
        let a = args()?;
        let o = T::from_pairs(pairs(keys, values, n)?)?;
        check_str_out(buf, cap, needed)?;
        let s = f(a, o)?;
        copy_str(&s, buf, cap, needed)
    })
}

/// Check the output pointers of a [`copy_str`] call before any long work (a call that trains
/// reports a NULL `buf` with `cap` > 0 or a misaligned `needed` before training, not after).
pub(crate) fn check_str_out(buf: *mut c_char, cap: usize, needed: *mut usize) -> FfiResult<()> {
    if buf.is_null() && cap > 0 {
        return Err(FfiError::null("buf"));
    }
    opt_out(needed, "needed")
}

/// Check the output pointers of a [`copy_f64s`] call before any long work: a NULL `out` with
/// `out_len` > 0, a misaligned `out` or `count`.
pub(crate) fn check_f64s_out(out: *mut f64, out_len: usize, count: *mut usize) -> FfiResult<()> {
    if out_len > 0 {
        if out.is_null() {
            return Err(FfiError::null("out"));
        }
        aligned(out as *const f64, "out")?;
    }
    opt_out(count, "count")
}

/// Copy `v` into `out` (capacity `out_len` values): `*count` (optional) receives `v.len()` on
/// success and with `ICL_ERR_SIZE` (a too-small `out`, left untouched), and on no other failure:
/// every output pointer is checked before anything is written.
pub(crate) unsafe fn copy_f64s(
    v: &[f64],
    out: *mut f64,
    out_len: usize,
    count: *mut usize,
) -> FfiResult<()> {
    opt_out(count, "count")?;
    let dst = if out_len >= v.len() {
        Some(slice_mut(out, v.len(), "out")?)
    } else {
        None
    };
    put_opt(count, v.len(), "count")?;
    let Some(dst) = dst else {
        return Err(FfiError::size(format!(
            "out has {out_len} values; {} needed",
            v.len()
        )));
    };
    dst.copy_from_slice(v);
    Ok(())
}

/// Copy `s` into `buf` (capacity `cap` bytes, NUL included) snprintf-style: `*needed` (optional)
/// receives `strlen(s) + 1` on success and with `ICL_ERR_SIZE` (a too-small buffer, left
/// untouched), and on no other failure: every output pointer is checked before anything is
/// written.
pub(crate) unsafe fn copy_str(
    s: &str,
    buf: *mut c_char,
    cap: usize,
    needed: *mut usize,
) -> FfiResult<()> {
    let n = s.len() + 1;
    opt_out(needed, "needed")?;
    if cap >= n && buf.is_null() {
        return Err(FfiError::null("buf"));
    }
    put_opt(needed, n, "needed")?;
    if cap < n {
        return Err(FfiError::size(format!(
            "string buffer has {cap} bytes; {n} needed (NUL included)"
        )));
    }
    std::ptr::copy_nonoverlapping(s.as_ptr(), buf as *mut u8, s.len());
    *buf.add(s.len()) = 0;
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// Library-wide functions.

/// The library version, "MAJOR.MINOR.PATCH" (e.g. "0.1.0", the crate's version): a static string,
/// never NULL. A program built against this header and linked with the same library finds
/// `ICL_VERSION_MAJOR`, `ICL_VERSION_MINOR` and `ICL_VERSION_PATCH` in it. Cannot fail.
/// Thread-safe.
#[no_mangle]
pub extern "C" fn icl_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr() as *const c_char
}

/// The message of the last failed `icl_` call on the calling thread ("" if none has failed). The
/// pointer is owned by the library and valid until the next failing call on the same thread; copy it
/// to keep it. Successful calls leave it as it was. Cannot fail; never NULL. Thread-safe (each
/// thread has its own message).
#[no_mangle]
pub extern "C" fn icl_last_error() -> *const c_char {
    last_error_ptr()
}

/// The name of a status code, e.g. "ICL_ERR_SIZE"; "ICL_UNKNOWN_STATUS" for a value that is not a
/// status (negative, or past ICL_ERR_PANIC). A static string, never NULL. Cannot fail. Thread-safe.
#[no_mangle]
pub extern "C" fn icl_status_name(status: i32) -> *const c_char {
    icl_status::from_code(status)
        .map_or(c"ICL_UNKNOWN_STATUS", icl_status::name_c)
        .as_ptr()
}

/// Copy the options of the entry point `name` as JSON into `buf` (capacity `cap` bytes, NUL
/// included; `needed`, optional, receives the size required; call with `cap` = 0 to ask for it):
/// `[{"name", "kind", "optional", "default", "flag", "help"}]`, one object per key the entry
/// point takes (`kind`: "bool", "int", "float", "text", "list" (comma-separated), "items"
/// (`NAME.KEY` keys); `flag`: the `icl` flag of the same option). `name` is `"train"`
/// (`icl_train_run`), `"eval"` (`icl_eval_run`), `"repro"` (`icl_repro`) or `"sweep_run"`
/// (`icl_sweep_run`). Thread-safe.
///
/// Returns ICL_OK, or:
/// - ICL_ERR_UNKNOWN_NAME: another `name`;
/// - ICL_ERR_SIZE: `cap` < the size needed (nothing written; `*needed` is set);
/// - ICL_ERR_NULL: `name` is NULL, or `buf` is NULL with a large enough `cap`;
/// - ICL_ERR_UTF8: `name` is not UTF-8.
#[no_mangle]
pub unsafe extern "C" fn icl_options_list(
    name: *const c_char,
    buf: *mut c_char,
    cap: usize,
    needed: *mut usize,
) -> icl_status {
    guard(|| {
        let s = icl_core_run::options::schema(text(name, "name")?)?.to_string();
        copy_str(&s, buf, cap, needed)
    })
}

/// The name of the default engine, the one `icl train` uses without `--engine` ("simd"): a static
/// string, never NULL. Cannot fail. Thread-safe.
#[no_mangle]
pub extern "C" fn icl_default_engine() -> *const c_char {
    static NAME: std::sync::OnceLock<std::ffi::CString> = std::sync::OnceLock::new();
    NAME.get_or_init(|| std::ffi::CString::new(icl_core_run::default_engine()).unwrap_or_default())
        .as_ptr()
}

#[cfg(test)]
mod tests {
    /// The header's version macros are the crate's version (a release that bumps Cargo's version
    /// must bump them too).
    #[test]
    fn version_constants_are_the_crate_version() {
        let v = |s: &str| s.parse::<u32>().unwrap();
        assert_eq!(super::ICL_VERSION_MAJOR, v(env!("CARGO_PKG_VERSION_MAJOR")));
        assert_eq!(super::ICL_VERSION_MINOR, v(env!("CARGO_PKG_VERSION_MINOR")));
        assert_eq!(super::ICL_VERSION_PATCH, v(env!("CARGO_PKG_VERSION_PATCH")));
    }
}
