//! `icl_model`: a model (parameters, configuration, step) and the engine that runs it.
use super::{create, destroy, guard, hmut, href, icl_dims, path, put, slice, slice_mut, text};
use crate::handles::{check_len, icl_config, icl_model, icl_task, Dims, HasModel, HeadCircuits};
use crate::status::icl_status;
use std::ffi::c_char;

pub(crate) fn dims_c(d: Dims) -> icl_dims {
    icl_dims {
        d: d.d,
        n_out: d.n_out,
        heads: d.heads,
        n_params: d.n_params,
        train_len: d.train_len,
        is_f64: d.is_f64 as i32,
    }
}

// The accessors `icl_model_*` and `icl_trainer_*` share, written once over [`HasModel`] (the
// exported functions stay written out: cbindgen reads them from the source).

/// `*out` = the shape of handle `h`'s model.
pub(crate) unsafe fn dims_of<H: HasModel>(
    h: *const H,
    what: &str,
    out: *mut icl_dims,
) -> icl_status {
    guard(|| put(out, dims_c(href(h, what)?.dims()), "out"))
}

/// Copy the flat parameters of handle `h` (exactly `len` values) into `out`.
pub(crate) unsafe fn get_params<H: HasModel>(
    h: *const H,
    what: &str,
    out: *mut f64,
    len: usize,
) -> icl_status {
    guard(|| {
        let p = href(h, what)?.params();
        check_len("out", len, p.len())?;
        slice_mut(out, len, "out")?.copy_from_slice(&p);
        Ok(())
    })
}

/// Replace the flat parameters of handle `h` with `len` values.
pub(crate) unsafe fn set_params<H: HasModel>(
    h: *mut H,
    what: &str,
    params: *const f64,
    len: usize,
) -> icl_status {
    guard(|| {
        let m = hmut(h, what)?;
        m.set_params(slice(params, len, "params")?)
    })
}

/// Copy omega (H values) and mu (H n_out values, head-major) of handle `h` into caller buffers
/// (both checked before either is written).
pub(crate) unsafe fn circuits_of<H: HasModel>(
    h: *const H,
    what: &str,
    omega: *mut f64,
    omega_len: usize,
    mu: *mut f64,
    mu_len: usize,
) -> icl_status {
    guard(|| {
        let c: HeadCircuits = href(h, what)?.circuits()?;
        check_len("omega", omega_len, c.omega.len())?;
        check_len("mu", mu_len, c.mu.len())?;
        let (o, m) = (
            slice_mut(omega, omega_len, "omega")?,
            slice_mut(mu, mu_len, "mu")?,
        );
        o.copy_from_slice(&c.omega);
        m.copy_from_slice(&c.mu);
        Ok(())
    })
}

/// Create a freshly initialised model of a configuration (seed `train.seed`, precision
/// `train.dtype`, run by the default engine) into `*out`. Free with `icl_model_free`.
///
/// Returns ICL_OK, or:
/// - ICL_ERR_CONFIG: the configuration breaks a rule of `icl_config_validate`;
/// - ICL_ERR_NONFINITE: the initial parameters are not finite in the model's precision (a
///   Gaussian init with `model.init_scale` = 1e300 in an f32 model);
/// - ICL_ERR_UNSUPPORTED: the configuration's model cannot be built (an option combination that is
///   not implemented);
/// - ICL_ERR_NULL: `cfg` or `out` is NULL.
#[no_mangle]
pub unsafe extern "C" fn icl_model_new(
    cfg: *const icl_config,
    out: *mut *mut icl_model,
) -> icl_status {
    create(out, || icl_model::new(&href(cfg, "cfg")?.cfg))
}

/// Load a checkpoint (the `model.safetensors` of a run folder written by `icl train`, or by
/// `icl_model_save`/`icl_trainer_save`) into `*out`, in its stored precision, with its
/// configuration and step, run by the default engine. The reader is strict: a file that could be
/// misread is refused rather than guessed at. Thread-safe.
///
/// Returns ICL_OK, or:
/// - ICL_ERR_IO: the file cannot be read (missing, a folder, no permission; "" is a missing file);
/// - ICL_ERR_CHECKPOINT: the file is not a valid icl checkpoint of this version: not safetensors
///   (truncated, bad header, overlapping or uncovered data), metadata `format` is not
///   "icl-checkpoint", metadata `version` is not "1" (unknown versions are refused, not read as
///   version 1), `step` is not an integer in 0..=2^53, `dtype` is not "f32" or "f64", disagrees
///   with a model tensor's dtype (an f64 label over F32 tensors is refused, not widened) or with
///   the embedded configuration's `train.dtype`, a model tensor is missing, misshapen or not
///   finite, a tensor is neither a model tensor nor trainer state (extra tensors are refused, not
///   ignored), the trainer state is incomplete or inconsistent (optimiser state not finite or
///   counting more updates than `step`, a loss window `train.window_sum` that is not finite or
///   `train.window_count` longer than the steps since the last log row), or the embedded
///   configuration is invalid or needs more than the memory budget (checked before any tensor is
///   allocated);
/// - ICL_ERR_NULL: `path_` or `out` is NULL.
#[no_mangle]
pub unsafe extern "C" fn icl_model_load(
    path_: *const c_char,
    out: *mut *mut icl_model,
) -> icl_status {
    create(out, || icl_model::load(path(path_, "path")?))
}

/// Write the model as a checkpoint (format version 1; atomically: a temporary file in the same
/// folder renamed into place, so a reader never sees a partial file). The same model gives the same
/// bytes.
///
/// Returns ICL_OK, or:
/// - ICL_ERR_IO: the file cannot be written (missing folder, no permission, full disk; "" is
///   refused by the operating system);
/// - ICL_ERR_NULL: `model` or `path_` is NULL.
#[no_mangle]
pub unsafe extern "C" fn icl_model_save(
    model: *const icl_model,
    path_: *const c_char,
) -> icl_status {
    guard(|| href(model, "model")?.save(path(path_, "path")?))
}

/// Run the model with another engine: "simd", "scalar" or "vulkan" (the names of `icl train
/// --engine`; exact and case-sensitive). On failure the model keeps its engine.
///
/// Returns ICL_OK, or:
/// - ICL_ERR_UNKNOWN_NAME: no engine has this name ("" included);
/// - ICL_ERR_UNSUPPORTED: the engine cannot run here: "vulkan" without a Vulkan device, or for a
///   model that computes in f64. (A multi-layer model accepts any engine here; its predictions,
///   losses and risks are ICL_ERR_UNSUPPORTED on every engine, see `icl_model_predict`.)
/// - ICL_ERR_NULL: `model` or `name` is NULL.
#[no_mangle]
pub unsafe extern "C" fn icl_model_set_engine(
    model: *mut icl_model,
    name: *const c_char,
) -> icl_status {
    guard(|| hmut(model, "model")?.set_engine(text(name, "name")?))
}

/// Shape of the model into `*out`.
///
/// Returns ICL_OK, or ICL_ERR_NULL (`model` or `out` is NULL).
#[no_mangle]
pub unsafe extern "C" fn icl_model_dims(model: *const icl_model, out: *mut icl_dims) -> icl_status {
    dims_of(model, "model", out)
}

/// Create a copy of the model's configuration into `*out` (for a loaded checkpoint: the
/// configuration it was trained with). Free with `icl_config_free`.
///
/// Returns ICL_OK, or ICL_ERR_NULL (`model` or `out` is NULL).
#[no_mangle]
pub unsafe extern "C" fn icl_model_config(
    model: *const icl_model,
    out: *mut *mut icl_config,
) -> icl_status {
    create(out, || {
        Ok(icl_config {
            cfg: href(model, "model")?.cfg.clone(),
        })
    })
}

/// Predict the query outputs of `n` problems with context length `len`: contexts `x`
/// ([n][len][d], `x_len` values), `y` ([n][len][n_out]), queries `xq` ([n][d]); predictions go
/// to `out` ([n][n_out], `out_len` values). Inputs are rounded to the model's precision.
///
/// Returns ICL_OK, or (`out` is left as it was on every failure):
/// - ICL_ERR_SIZE: `n` = 0, `len` = 0 or `len` > 2^24, the shape overflows, or a length differs
///   from its shape (`x_len` != n len d, `y_len` != n len n_out, `xq_len` != n d, `out_len` !=
///   n n_out), or the memory for the library's copy of the batch is not available;
/// - ICL_ERR_NONFINITE: an input is NaN, infinite, or overflows the model's precision;
/// - ICL_ERR_NUMERICAL: a prediction is not finite (the model overflows on this input, e.g.
///   inputs of 1e160 in f64 or parameters near the precision's limit);
/// - ICL_ERR_UNSUPPORTED: the model is a multi-layer model (`model.arch` = transformer or
///   iv2stage), on any engine: predictions, losses, gradients and risks here are those of
///   one-layer attention (evaluate a multi-layer run with `icl_eval_run`);
/// - ICL_ERR_NULL: `model`, or an array with a non-zero length, is NULL.
#[no_mangle]
pub unsafe extern "C" fn icl_model_predict(
    model: *mut icl_model,
    n: usize,
    len: usize,
    x: *const f64,
    x_len: usize,
    y: *const f64,
    y_len: usize,
    xq: *const f64,
    xq_len: usize,
    out: *mut f64,
    out_len: usize,
) -> icl_status {
    guard(|| {
        let m = hmut(model, "model")?;
        m.predict(
            n,
            len,
            slice(x, x_len, "x")?,
            slice(y, y_len, "y")?,
            slice(xq, xq_len, "xq")?,
            slice_mut(out, out_len, "out")?,
        )
    })
}

/// Predict on `n` prompts of `k` (x, y) pairs: `xs` ([n][k][d], `xs_len` values), `ys`
/// ([n][k]). For GPT-2 models (`model.arch = gpt2`) `out` ([n][k], `out_len` values) gets the
/// prediction at every x position (position i reads pairs 0..i-1 and x_i); for the other
/// families `out` ([n][n_out]) gets the prediction at the last x as the query (pairs 0..k-2 are
/// its context; the last y is not read).
///
/// Returns ICL_OK, or (`out` is left as it was on every failure):
/// - ICL_ERR_SIZE: a length differs from its shape, n or k is 0, k exceeds a GPT-2 model's
///   positions, or (other families) k < 2;
/// - ICL_ERR_NONFINITE: an input is NaN or infinite;
/// - ICL_ERR_UNSUPPORTED: the IV model (it reads instruments), or an engine that does not run
///   the model's family;
/// - ICL_ERR_NULL: `model`, `xs`, `ys` or `out` is NULL.
#[no_mangle]
pub unsafe extern "C" fn icl_model_predict_prompts(
    model: *mut icl_model,
    n: usize,
    k: usize,
    xs: *const f64,
    xs_len: usize,
    ys: *const f64,
    ys_len: usize,
    out: *mut f64,
    out_len: usize,
) -> icl_status {
    guard(|| {
        let m = hmut(model, "model")?;
        m.predict_prompts(
            n,
            k,
            slice(xs, xs_len, "xs")?,
            slice(ys, ys_len, "ys")?,
            slice_mut(out, out_len, "out")?,
        )
    })
}

/// Predict for a token-major batch `z` (the layout of `icl_task_sample`, `z_len` = n (len+1)
/// (d+n_out); the query's y-slots are ignored) into `out` ([n][n_out]).
///
/// Returns ICL_OK, or (`out` is left as it was on every failure):
/// - ICL_ERR_SIZE: `n` = 0, `len` = 0 or `len` > 2^24, the shape overflows, `z_len` or
///   `out_len` differs from its shape, or the memory for the library's copy of the batch (in the
///   model's precision) is not available;
/// - ICL_ERR_NONFINITE: a value of `z` other than a query y-slot is NaN, infinite or overflows the
///   model's precision;
/// - ICL_ERR_NUMERICAL: a prediction is not finite, as in `icl_model_predict`;
/// - ICL_ERR_UNSUPPORTED: as in `icl_model_predict`;
/// - ICL_ERR_NULL: `model`, `z` or `out` is NULL.
#[no_mangle]
pub unsafe extern "C" fn icl_model_predict_batch(
    model: *mut icl_model,
    n: usize,
    len: usize,
    z: *const f64,
    z_len: usize,
    out: *mut f64,
    out_len: usize,
) -> icl_status {
    guard(|| {
        hmut(model, "model")?.predict_batch(
            n,
            len,
            slice(z, z_len, "z")?,
            slice_mut(out, out_len, "out")?,
        )
    })
}

/// Loss (mean squared error over sequences and outputs) of a token-major batch `z` with targets
/// `y` ([n][n_out]) into `*loss`, and its gradient with respect to the flat parameters into
/// `grad` (`grad_len` = n_params). The query's y-slots of `z` are ignored.
///
/// Returns ICL_OK, or:
/// - ICL_ERR_SIZE: `n` = 0, `len` = 0 or `len` > 2^24, the shape overflows, `z_len`, `y_len`
///   or `grad_len` differs from its shape, or the memory for the library's copy of the batch is
///   not available;
/// - ICL_ERR_NONFINITE: an input is NaN, infinite or overflows the model's precision;
/// - ICL_ERR_NUMERICAL: the loss or gradient is not finite (the model overflows on this batch;
///   `*loss` and `grad` are left as they were);
/// - ICL_ERR_UNSUPPORTED: as in `icl_model_predict`;
/// - ICL_ERR_NULL: `model`, `z`, `y`, `loss` or `grad` is NULL.
#[no_mangle]
pub unsafe extern "C" fn icl_model_loss_grad(
    model: *mut icl_model,
    n: usize,
    len: usize,
    z: *const f64,
    z_len: usize,
    y: *const f64,
    y_len: usize,
    loss: *mut f64,
    grad: *mut f64,
    grad_len: usize,
) -> icl_status {
    guard(|| {
        let m = hmut(model, "model")?;
        hmut(loss, "loss")?;
        let l = m.loss_grad(
            n,
            len,
            slice(z, z_len, "z")?,
            slice(y, y_len, "y")?,
            slice_mut(grad, grad_len, "grad")?,
        )?;
        put(loss, l, "loss")
    })
}

/// Copy the flat parameters (n_params values, the tensor order of the checkpoint) into `out`.
///
/// Returns ICL_OK, or ICL_ERR_SIZE (`len` != n_params), ICL_ERR_NULL (`model` or `out` NULL).
#[no_mangle]
pub unsafe extern "C" fn icl_model_get_params(
    model: *const icl_model,
    out: *mut f64,
    len: usize,
) -> icl_status {
    get_params(model, "model", out, len)
}

/// Replace the flat parameters (n_params finite values, rounded to the model's precision). On
/// failure the parameters are unchanged.
///
/// Returns ICL_OK, or:
/// - ICL_ERR_SIZE: `len` != n_params;
/// - ICL_ERR_NONFINITE: a value is NaN, infinite or overflows the model's precision;
/// - ICL_ERR_NULL: `model` or `params` is NULL.
#[no_mangle]
pub unsafe extern "C" fn icl_model_set_params(
    model: *mut icl_model,
    params: *const f64,
    len: usize,
) -> icl_status {
    set_params(model, "model", params, len)
}

/// The circuits of every head (He et al. 2025 §3): `omega` (H values: the mean diagonal of the
/// effective KQ_11, score scale included) and `mu` (H n_out values, head-major: OV_22 per output).
/// Both buffers are checked before either is written.
///
/// Returns ICL_OK, or ICL_ERR_SIZE (`omega_len` != H or `mu_len` != H n_out), ICL_ERR_NULL,
/// ICL_ERR_UNSUPPORTED (a multi-layer model: it has no per-head KQ and OV).
#[no_mangle]
pub unsafe extern "C" fn icl_model_circuits(
    model: *const icl_model,
    omega: *mut f64,
    omega_len: usize,
    mu: *mut f64,
    mu_len: usize,
) -> icl_status {
    circuits_of(model, "model", omega, omega_len, mu, mu_len)
}

/// The effective circuit matrices: `kq` ([H][E][E], row-major, score scale included, E = d + n_out)
/// and `ov` ([H][n_out][E]). Both buffers are checked before either is written.
///
/// Returns ICL_OK, or ICL_ERR_SIZE (`kq_len` != H E E or `ov_len` != H n_out E), ICL_ERR_NULL,
/// ICL_ERR_UNSUPPORTED (a multi-layer model, as in `icl_model_circuits`).
#[no_mangle]
pub unsafe extern "C" fn icl_model_circuit_matrices(
    model: *const icl_model,
    kq: *mut f64,
    kq_len: usize,
    ov: *mut f64,
    ov_len: usize,
) -> icl_status {
    guard(|| {
        let c = href(model, "model")?.circuits()?;
        check_len("kq", kq_len, c.kq.len())?;
        check_len("ov", ov_len, c.ov.len())?;
        // both buffers are checked before either is written
        let (k, o) = (slice_mut(kq, kq_len, "kq")?, slice_mut(ov, ov_len, "ov")?);
        k.copy_from_slice(&c.kq);
        o.copy_from_slice(&c.ov);
        Ok(())
    })
}

/// Monte Carlo risk E[(y_q - yhat_q)^2] (query noise included) at test length `len` with
/// `samples` sequences from stream (seed, eval, len, i), on the data of `task` (optional: NULL
/// means the model's own configuration), as `icl eval` computes it. Writes the mean to `*risk` and
/// its standard error to `*stderr_out`. Memory stays bounded whatever `samples` (sequences are
/// drawn in chunks); time grows linearly with `samples` and `len`.
///
/// Returns ICL_OK, or:
/// - ICL_ERR_SIZE: `samples` < 2 (a standard error needs two) or > 10^8, `len` = 0 or
///   `len` > 2^24, or the task's d or n_out differs from the model's;
/// - ICL_ERR_CONFIG, ICL_ERR_NUMERICAL: with `task` NULL, the model's configuration cannot make
///   a task sampler (as in `icl_task_new`);
/// - ICL_ERR_NUMERICAL: a prediction or the risk is not finite (the model overflows on these
///   samples; `*risk` and `*stderr_out` are left as they were);
/// - ICL_ERR_UNSUPPORTED: as in `icl_model_predict`;
/// - ICL_ERR_NULL: `model`, `risk` or `stderr_out` is NULL.
#[no_mangle]
pub unsafe extern "C" fn icl_model_risk(
    model: *mut icl_model,
    task: *const icl_task,
    len: usize,
    samples: usize,
    seed: u64,
    risk: *mut f64,
    stderr_out: *mut f64,
) -> icl_status {
    guard(|| {
        let m = hmut(model, "model")?;
        let t = if task.is_null() {
            None
        } else {
            Some(href(task, "task")?)
        };
        hmut(risk, "risk")?;
        hmut(stderr_out, "stderr_out")?;
        let r = m.risk(t, len, samples, seed)?;
        put(risk, r.risk, "risk")?;
        put(stderr_out, r.stderr, "stderr_out")
    })
}

/// Free a model (NULL is a no-op).
#[no_mangle]
pub unsafe extern "C" fn icl_model_free(model: *mut icl_model) {
    destroy(model)
}
