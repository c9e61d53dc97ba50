//! `icl train` through C: a training run into a run folder, with the CLI's options as text pairs,
//! checked and done by the same library functions ([`TrainArgs`], [`icl_core_run::train::train`]).
use super::{href, json_call, text};
use crate::handles::icl_config;
use crate::status::{icl_status, FfiError, FfiResult};
use icl_core::Config;
use icl_core_run::options::TrainArgs;
use icl_core_run::train::Outcome;
use std::ffi::c_char;
use std::path::Path;

/// Train the configuration `cfg` into the run folder `out_dir` like `icl train --config CFG --out
/// OUT_DIR` (same seed, same bytes: `model.safetensors`, `metrics.csv`, `summary.json`, ...), and
/// copy the text of the `summary.json` it writes into `buf` (capacity `cap`, NUL included;
/// `needed`, optional, receives the size required): `{"config", "engine", "protocol", "steps",
/// "seconds", "steps_per_second", "final_loss", "risk", "heads", ...}`. The folder is written
/// completely or not at all. The options are `n` text pairs `keys[i]` = `values[i]`, with the
/// CLI's defaults: `steps` and `seed` (override `train.steps` and `train.seed`), `engine`
/// (`"simd"`, `"scalar"` or `"vulkan"`; unset: `icl_default_engine()`), `force` (`"true"`:
/// replace an existing run in `out_dir`; default `"false"`), `eval_samples` (Monte Carlo samples
/// of the risk at the training length in `summary.json`, default `"20000"`, `"0"`: none),
/// `checkpoint_every` (steps, default `"0"`: off) and `checkpoint_minutes` (default `"0.5"`,
/// `"0"`: off); `icl_options_list` lists them. Blocks until the run is done; prints nothing.
/// Statuses: `ICL_ERR_ARGUMENT` (an unknown or repeated key, a value not of its kind, a negative
/// or non-finite `checkpoint_minutes`, `out_dir` `""` or holding a run or other files without
/// `force`, `engine` `"vulkan"` for an f64 configuration or an `engine` for a run that trains on
/// exact moments), `ICL_ERR_UNKNOWN_NAME` (an unknown `engine`), `ICL_ERR_CONFIG` (a `steps` or
/// `seed` the configuration refuses, or a configuration that breaks a rule of
/// `icl_config_validate` or needs more than the memory budget), `ICL_ERR_NUMERICAL` (training
/// diverged: nothing is left in `out_dir`), `ICL_ERR_UNSUPPORTED` (`vulkan` without a Vulkan
/// device), `ICL_ERR_IO` (`out_dir` cannot be created or written), `ICL_ERR_NULL` (`cfg` or
/// `out_dir` NULL, `keys` or `values` NULL with `n` > 0, `buf` NULL with `cap` > 0),
/// `ICL_ERR_UTF8` (a text not UTF-8), `ICL_ERR_SIZE` (more than 1024 options, `eval_samples`
/// above 10^8, or `cap` too small: nothing is copied and `*needed` is set, but the run is
/// trained: calling again with `*needed` bytes and `force` unset fails with `ICL_ERR_ARGUMENT`,
/// so read `OUT_DIR/summary.json` instead, or ask with a large enough buffer). Every bad option,
/// NULL and output pointer is reported before training. Thread-safe, but two calls must not
/// share `out_dir`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn icl_train_run(
    cfg: *const icl_config,
    out_dir: *const c_char,
    keys: *const *const c_char,
    values: *const *const c_char,
    n: usize,
    buf: *mut c_char,
    cap: usize,
    needed: *mut usize,
) -> icl_status {
    json_call(
        || Ok((href(cfg, "cfg")?, text(out_dir, "out_dir")?)),
        keys,
        values,
        n,
        buf,
        cap,
        needed,
        |(cfg, out), a: TrainArgs| train_json(&cfg.cfg, out, &a),
    )
}

/// Train `cfg` with checked options into `out` silently and return `summary.json`'s text: the
/// body of [`icl_train_run`] and of C++'s `icl::train_run`.
pub(crate) fn train_json(cfg: &Config, out: &str, a: &TrainArgs) -> FfiResult<String> {
    let mut cfg = cfg.clone();
    a.apply(&mut cfg)?;
    let o = a.options(None)?;
    icl_core_run::train::check_engine_choice(&cfg, a.engine.as_deref())?;
    match icl_core_run::train::train(&cfg, Path::new(out), &o, &mut |_, _, _| true)? {
        Outcome::Finished { dir, .. } => Ok(icl_core_run::folder::read_text(&dir.summary())?),
        Outcome::Interrupted { step, .. } => Err(FfiError::new(
            icl_status::ICL_ERR_ARGUMENT,
            format!("the run stopped at step {step}"),
        )),
    }
}

/// Draw the training figures of the finished run in `dir` again like `icl plot DIR --json`
/// (`loss.svg` and its family's: `omega_mu.svg`, `pattern.svg`, ...; a linear-attention run's
/// CSVs too) from the training log its `model.safetensors` keeps, and copy `{"dir", "figures"}`
/// (the folder's figure files by name) into `buf` (capacity `cap`, NUL included; `needed`,
/// optional, receives the size required). `summary.json`, the model and `metrics.csv` are not
/// touched. Statuses: `ICL_ERR_ARGUMENT` (`dir` is not a run folder, or its model keeps no
/// training log: an imported model, or one saved by `icl_model_save` or `icl_trainer_save`),
/// `ICL_ERR_IO` (`dir` is missing, or a figure cannot be written), `ICL_ERR_CHECKPOINT` (its
/// `model.safetensors` is refused as by `icl_model_load`), `ICL_ERR_NULL` (`dir` NULL, `buf`
/// NULL with `cap` > 0), `ICL_ERR_UTF8`, `ICL_ERR_SIZE` (`cap` too small: nothing is copied and
/// `*needed` is set, but the figures are drawn; calling again draws the same bytes).
/// Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn icl_run_plot(
    dir: *const c_char,
    buf: *mut c_char,
    cap: usize,
    needed: *mut usize,
) -> icl_status {
    super::guard(|| {
        let dir = text(dir, "dir")?;
        super::check_str_out(buf, cap, needed)?;
        super::copy_str(&plot_json(dir)?, buf, cap, needed)
    })
}

/// `icl plot DIR --json`: the body of [`icl_run_plot`] and of C++'s `icl::run_plot`.
pub(crate) fn plot_json(dir: &str) -> FfiResult<String> {
    let figures = icl_core_run::outputs::redraw(&icl_core_run::RunDir::new(dir))?;
    Ok(serde_json::json!({ "dir": dir, "figures": figures }).to_string())
}
