//! The theory registry through C: every quantity of `icl theory`, by name, with its parameters as
//! text (the same names, defaults, kinds and ranges; `icl theory --list` or
//! [`icl_theory_list`] shows them).
use super::{check_f64s_out, copy_f64s, copy_str, guard, json_call, pairs, text, Raw};
use crate::status::{icl_status, FfiError, FfiResult};
use icl_core::theory::registry::Out;
use std::ffi::c_char;

/// Evaluate a quantity (the run layer refuses a result that is not finite with
/// `ICL_ERR_NUMERICAL`, for every front end).
fn eval(
    name: &str,
    args: &[(String, String)],
) -> FfiResult<(Out, std::collections::BTreeMap<String, String>)> {
    Ok(icl_core_run::theory::evaluate(name, args)?)
}

/// Copy the list of every theory quantity as JSON into `buf` (capacity `cap` bytes, NUL included;
/// `needed`, optional, receives the size required; call with `cap` = 0 to ask for it):
/// `[{"name", "paper", "about", "params": [{"flag", "default", "help", "accepts"}]}]`, the same
/// text as `icl theory --list --json`. `default` is null for a required parameter. Thread-safe.
///
/// Returns ICL_OK, or:
/// - ICL_ERR_SIZE: `cap` < the size needed (nothing written; `*needed` is set);
/// - ICL_ERR_NULL: `buf` is NULL with a large enough `cap`.
#[no_mangle]
pub unsafe extern "C" fn icl_theory_list(
    buf: *mut c_char,
    cap: usize,
    needed: *mut usize,
) -> icl_status {
    guard(|| {
        let s = serde_json::to_string(&icl_core_run::theory::list_json())
            .map_err(|e| FfiError::argument(e.to_string()))?;
        copy_str(&s, buf, cap, needed)
    })
}

/// Evaluate the theory quantity `name` with `n` parameters given as text (`keys[i]` =
/// `values[i]`, names without the leading `--`; parameters not given take their defaults), and copy
/// the result as JSON into `buf` (capacity `cap`, NUL included; `needed` as in
/// [`icl_theory_list`]): `{"name", "value", <extra outputs>, "params"}`, the same text as
/// `icl theory NAME --json`. With `n` = 0, `keys` and `values` may be NULL. Thread-safe.
///
/// The temperature quantities take `run` = a run folder (`icl train`'s, or one holding a
/// `model.safetensors` that `icl_model_save` wrote): its checkpoint is read and the closed forms
/// are evaluated at the linearised layer of its one softmax head, `d`, `l` and the test
/// distribution defaulting to the run's (as `icl theory ... --run DIR`; docs/papers/temperature.md,
/// "Temperature of a trained run").
///
/// Returns ICL_OK, or:
/// - ICL_ERR_UNKNOWN_NAME: no quantity has this name (exact, case-sensitive);
/// - ICL_ERR_ARGUMENT: an unknown, repeated or missing parameter, or a value outside its kind or
///   range (e.g. `xi` = -1, `rho` = 5, `d` = 100000), or outside the domain of the closed form
///   (`ols-risk` at L <= d + 1, `bayes-risk-mc` at `sigma2` = 0); with `run`, a `d` other than the run's or a
///   flag the run replaces (`train-*`, `l-train`, `pretrain-*`);
/// - ICL_ERR_NONFINITE: a parameter, or a number in a list parameter, is NaN or infinite;
/// - ICL_ERR_NUMERICAL: the computation failed (a singular matrix, a diverging trajectory) or its
///   value is not finite (a closed form that overflows at these parameters: reported, never
///   returned as inf or JSON null);
/// - ICL_ERR_SIZE: `n` > 1024, or `cap` < the size needed (nothing written; `*needed` is set), or
///   the parameters ask for more than the budget: working memory beyond 16 GiB or beyond what the
///   process can have (`bayes-risk-mc` with a large `L` x `d`), more than 10^7 integration steps or
///   trajectory rows (`t-end` / `dt`), a list longer than it takes (`omega` beyond 1024 heads);
///   checked before the computation starts;
/// - ICL_ERR_IO: `run` names no folder or file;
/// - ICL_ERR_CHECKPOINT: the run's `model.safetensors` is damaged;
/// - ICL_ERR_UNSUPPORTED: the run's model is not one softmax head with one output (several heads,
///   linear attention, a transformer);
/// - ICL_ERR_NULL: `name` is NULL, `keys`/`values` is NULL with `n` > 0, an entry of them is
///   NULL, or `buf` is NULL with `cap` > 0 (checked, like every output pointer, before the
///   computation).
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
    json_call(
        || text(name, "name"),
        keys,
        values,
        n,
        buf,
        cap,
        needed,
        |name, Raw(args)| {
            let (out, vals) = eval(name, &args)?;
            let j = icl_core_run::theory::result_json(name, &out, &vals);
            serde_json::to_string(&j).map_err(|e| FfiError::argument(e.to_string()))
        },
    )
}

/// Evaluate like [`icl_theory_eval`] and copy the quantity's main value as numbers into `out`
/// (capacity `out_len`): one number for a scalar quantity, the list for a list-valued one.
/// `count` (optional) receives the number of values, also when `out_len` is too small.
/// Thread-safe.
///
/// Returns ICL_OK, or those of [`icl_theory_eval`] (its `cap` cases aside), and:
/// - ICL_ERR_SIZE: `out_len` < the number of values (nothing written; `*count` is set);
/// - ICL_ERR_UNSUPPORTED: the value is not a number or a list of numbers;
/// - ICL_ERR_NULL: `out` is NULL with `out_len` > 0 (checked, like `count`, before the
///   computation).
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
        let args = pairs(keys, values, n)?;
        check_f64s_out(out, out_len, count)?;
        let (res, _) = eval(name, &args)?;
        let v = res.value.as_f64s().ok_or_else(|| {
            FfiError::new(
                icl_status::ICL_ERR_UNSUPPORTED,
                format!("{name}: its value is not a number or a list of numbers"),
            )
        })?;
        copy_f64s(&v, out, out_len, count)
    })
}
