//! `icl eval` through C: the evaluation of a run folder, with every option of the CLI (test
//! lengths, attention temperatures, test-time shifts, the transformer options) as text pairs,
//! computed by the same library function ([`icl_core_run::eval::eval_run`]).
use super::{guard, json_call, text};
use crate::status::{icl_status, FfiError, FfiResult};
use icl_core_run::options::EvalArgs;
use std::ffi::c_char;

/// Evaluate the run folder `dir` like `icl eval DIR --json` and copy the JSON into `buf`
/// (capacity `cap`, NUL included; `needed`, optional, receives the size required; call with
/// `cap` = 0 to ask for it): `{"rows": [{"estimator", "L", "risk", "stderr", "tau", "shift",
/// ...}], "samples", "seed", "engine", ...}`. The options are `n` text pairs `keys[i]` =
/// `values[i]` (`icl_options_list` lists them): `lengths` (`"10,20,40,100"`), `samples`
/// (`"20000"`), `seed` (`"0"`), `engine`,
/// `tau` (`"0.5,1,2,opt"`: attention logits divided by tau; `opt` is chosen per length on
/// held-out sequences), `tau_holdout`, `shift.x_cov`, `shift.x_mean`, `shift.w_cov`,
/// `shift.w_mean`, `shift.noise` (e.g. `shift.x_cov` = `"3"`, `shift.x_mean` = `"2e1"`), and
/// for transformer runs `lambda_range`, `stack`, `layers_out`, `alignment`, `ref`. Statuses:
/// `ICL_ERR_ARGUMENT` (an unknown or repeated option or shift key, tau <= 0, a malformed value
/// or an empty item in a list, `tau_holdout` without `opt` among the temperatures, a tau, shift
/// or `lambda_range` so extreme that the evaluation is not finite in f64, a length outside
/// 1..=2^20, `samples` < 2, the engine `vulkan` for an f64 run),
/// `ICL_ERR_UNKNOWN_NAME` (an unknown `engine`; names are exact: "SIMD" is not "simd"),
/// `ICL_ERR_NONFINITE` (tau or a shift value NaN), `ICL_ERR_CONFIG` (a shift out of range, a
/// covariance that is not positive definite), `ICL_ERR_UNKNOWN_KEY` (an unknown shift key),
/// `ICL_ERR_UNSUPPORTED` (a shift on a task without one, `vulkan` without a Vulkan device),
/// `ICL_ERR_NUMERICAL` (a risk that is not finite without such values: the model itself
/// overflows on the samples),
/// `ICL_ERR_IO` (`dir` is missing, is
/// `""`, is a file, or holds no `model.safetensors`), `ICL_ERR_CHECKPOINT` (its
/// `model.safetensors` is refused as by `icl_model_load`), `ICL_ERR_NULL` (`dir` NULL, `keys` or
/// `values` NULL with `n` > 0, `buf` NULL with `cap` > 0), `ICL_ERR_UTF8` (a text not
/// UTF-8), `ICL_ERR_SIZE` (`cap` too small: nothing written, `*needed` set; more than 1024
/// options; `samples`, `tau_holdout` or `alignment` above 10^8; a transformer evaluation whose
/// memory (samples x the longest length, the depth) is above the 16 GiB budget or not available,
/// or `stack` beyond 1024 layers). A transformer option (`stack`, ...) on a one-layer run is `ICL_ERR_ARGUMENT`.
/// Every NULL and output pointer is checked before the evaluation. Nothing is written into
/// `dir`. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn icl_eval_run(
    dir: *const c_char,
    keys: *const *const c_char,
    values: *const *const c_char,
    n: usize,
    buf: *mut c_char,
    cap: usize,
    needed: *mut usize,
) -> icl_status {
    json_call(
        || text(dir, "dir"),
        keys,
        values,
        n,
        buf,
        cap,
        needed,
        |dir, a: EvalArgs| eval_json(dir, &a),
    )
}

/// `icl eval DIR --json` with the options as text pairs: the body of [`icl_eval_run`] and of
/// C++'s `icl::eval_run`.
pub(crate) fn eval_json(dir: &str, a: &EvalArgs) -> FfiResult<String> {
    // the options are checked before the folder
    a.options()?;
    let run = icl_core_run::RunDir::new(dir);
    // A folder that is not a run cannot be read as one: an I/O status, like a missing file.
    run.check_run().map_err(|e| match e {
        icl_core_run::RunError::Refused(m) => FfiError::new(icl_status::ICL_ERR_IO, m),
        other => other.into(),
    })?;
    let res = a.eval(&run)?;
    serde_json::to_string(&res).map_err(|e| FfiError::argument(e.to_string()))
}

/// Draw the rows of an evaluation (`rows_json`: the JSON `icl_eval_run` wrote, or `icl eval
/// --json`'s) against the test length L', model and every baseline with error bars of one
/// standard error, into the file `path`: PNG if it ends in `.png`, SVG otherwise (`icl eval
/// --plot`). Statuses: `ICL_ERR_ARGUMENT` (`rows_json` is not such JSON, or holds no row),
/// `ICL_ERR_IO` (`path` cannot be written), `ICL_ERR_NULL` (`rows_json` or `path` NULL),
/// `ICL_ERR_UTF8` (a text not UTF-8). Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn icl_eval_plot(
    rows_json: *const c_char,
    path: *const c_char,
) -> icl_status {
    guard(|| plot_rows(text(rows_json, "rows_json")?, text(path, "path")?))
}

/// `icl eval --plot` of evaluation rows given as JSON: the body of [`icl_eval_plot`] and of
/// C++'s `icl::eval_plot`.
pub(crate) fn plot_rows(json: &str, path: &str) -> FfiResult<()> {
    let rows: icl_core_run::summary::EvalRows = serde_json::from_str(json)
        .map_err(|e| FfiError::argument(format!("rows_json is not icl_eval_run's JSON: {e}")))?;
    if rows.rows.is_empty() {
        return Err(FfiError::argument("rows_json holds no row"));
    }
    icl_core_run::eval::write_risk_plot(&rows, std::path::Path::new(path))?;
    Ok(())
}
