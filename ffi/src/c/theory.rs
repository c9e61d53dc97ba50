//! The theory registry through C: every quantity of `icl theory`, by name, with its parameters as
//! text (the same names, defaults, kinds and ranges; `icl theory --list` or
//! [`icl_theory_list`] shows them).
use super::{copy_str, guard, put_opt, slice_mut, text};
use crate::status::{icl_status, FfiError, FfiResult};
use std::ffi::c_char;

/// Read `n` (key, value) string pairs.
unsafe fn pairs(
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

fn eval(
    name: &str,
    args: &[(String, String)],
) -> FfiResult<(
    icl_core::theory::registry::Out,
    std::collections::BTreeMap<String, String>,
)> {
    Ok(icl_core::theory::registry::evaluate(name, args)?)
}

/// Copy the list of every theory quantity as JSON into `buf` (capacity `cap` bytes, NUL included;
/// `needed`, optional, receives the size required; call with `cap` = 0 to ask for it):
/// `[{"name", "paper", "about", "params": [{"flag", "default", "help", "accepts"}]}]`, the same
/// text as `icl theory --list --json`. `default` is null for a required parameter. Statuses:
/// `ICL_ERR_SIZE` (buffer too small; nothing written), `ICL_ERR_NULL` (`buf` NULL with `cap` >=
/// the size). Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn icl_theory_list(
    buf: *mut c_char,
    cap: usize,
    needed: *mut usize,
) -> icl_status {
    guard(|| {
        let s = serde_json::to_string(&icl_run::theory::list_json())
            .map_err(|e| FfiError::argument(e.to_string()))?;
        copy_str(&s, buf, cap, needed)
    })
}

/// Evaluate the theory quantity `name` with `n` parameters given as text (`keys[i]` =
/// `values[i]`, names without the leading `--`; parameters not given take their defaults), and copy
/// the result as JSON into `buf` (capacity `cap`, NUL included; `needed` as in
/// [`icl_theory_list`]): `{"name", "value", <extra outputs>, "params"}`, the same text as
/// `icl theory NAME --json`. Statuses: `ICL_ERR_UNKNOWN_NAME` (no such quantity),
/// `ICL_ERR_ARGUMENT` (an unknown, repeated or missing parameter, or a value outside its kind or
/// range, e.g. `xi` = -1), `ICL_ERR_NONFINITE` (NaN or infinity), `ICL_ERR_NUMERICAL` (the
/// computation failed, e.g. a singular matrix), `ICL_ERR_NULL`, `ICL_ERR_UTF8`, `ICL_ERR_SIZE`.
/// Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn icl_theory_eval(
    name: *const c_char,
    keys: *const *const c_char,
    values: *const *const c_char,
    n: usize,
    buf: *mut c_char,
    cap: usize,
    needed: *mut usize,
) -> icl_status {
    guard(|| {
        let name = text(name, "name")?;
        let (out, vals) = eval(name, &pairs(keys, values, n)?)?;
        let j = icl_run::theory::result_json(name, &out, &vals);
        let s = serde_json::to_string(&j).map_err(|e| FfiError::argument(e.to_string()))?;
        copy_str(&s, buf, cap, needed)
    })
}

/// Evaluate like [`icl_theory_eval`] and copy the quantity's main value as numbers into `out`
/// (capacity `out_len`): one number for a scalar quantity, the list for a list-valued one.
/// `count` (optional) receives the number of values. Statuses: those of [`icl_theory_eval`], and
/// `ICL_ERR_SIZE` when `out_len` is too small (nothing written; `count` says how many are needed),
/// `ICL_ERR_UNSUPPORTED` when the value is not numeric. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn icl_theory_value(
    name: *const c_char,
    keys: *const *const c_char,
    values: *const *const c_char,
    n: usize,
    out: *mut f64,
    out_len: usize,
    count: *mut usize,
) -> icl_status {
    guard(|| {
        let name = text(name, "name")?;
        let (res, _) = eval(name, &pairs(keys, values, n)?)?;
        let v = res.value.as_f64s().ok_or_else(|| {
            FfiError::new(
                icl_status::ICL_ERR_UNSUPPORTED,
                format!("{name}: its value is not a number or a list of numbers"),
            )
        })?;
        put_opt(count, v.len());
        if out_len < v.len() {
            return Err(FfiError::size(format!(
                "out has {out_len} values; {} needed",
                v.len()
            )));
        }
        slice_mut(out, v.len(), "out")?.copy_from_slice(&v);
        Ok(())
    })
}
