//! `icl_trainer`: the training loop of `icl train`, stepped by the caller.
use super::model::{circuits_of, dims_of, get_params, set_params};
use super::{
    copy_f64s, copy_str, create, destroy, guard, hmut, href, icl_dims, opt_out, opt_slice_mut,
    opt_text, path, put, put_opt, slice, slice_mut,
};
use crate::handles::{check_len, icl_config, icl_model, icl_trainer};
use crate::status::icl_status;
use std::ffi::c_char;

/// Create a trainer for a configuration into `*out`: the model initialised from `train.seed`, the
/// optimiser of `train.*`, run by the engine `engine` (optional: NULL means `icl_default_engine()`,
/// the engine `icl train` uses without `--engine`; "" is not a name). With the same configuration
/// and engine, its steps reproduce `icl train` exactly. Free with `icl_trainer_free`.
///
/// Returns ICL_OK, or:
/// - ICL_ERR_CONFIG: the configuration breaks a rule of `icl_config_validate`;
/// - ICL_ERR_NONFINITE: the initial parameters are not finite in the model's precision (as in
///   `icl_model_new`);
/// - ICL_ERR_NUMERICAL: the task's covariance is not positive definite;
/// - ICL_ERR_UNKNOWN_NAME: no engine has this name (exact, case-sensitive);
/// - ICL_ERR_UNSUPPORTED: the engine cannot run this configuration ("vulkan" without a device, in
///   f64, or for a multi-layer model), or the configuration asks for an option combination that is
///   not implemented;
/// - ICL_ERR_NULL: `cfg` or `out` is NULL.
#[no_mangle]
pub unsafe extern "C" fn icl_trainer_new(
    cfg: *const icl_config,
    engine: *const c_char,
    out: *mut *mut icl_trainer,
) -> icl_status {
    create(out, || {
        icl_trainer::new(&href(cfg, "cfg")?.cfg, opt_text(engine, "engine")?)
    })
}

/// Create a trainer that continues from a checkpoint into `*out`: its configuration, parameters and
/// step count. A checkpoint with trainer state (written by `icl train` or `icl_trainer_save`)
/// continues bit for bit: optimiser moments, log and step, as if never interrupted. One without (an
/// `icl_model_save` checkpoint, an imported model) starts a fresh optimiser at the saved parameters
/// and step. `engine` is optional as in `icl_trainer_new`.
///
/// Returns ICL_OK, or those of `icl_model_load` (ICL_ERR_IO, ICL_ERR_CHECKPOINT) and of
/// `icl_trainer_new` for the engine (ICL_ERR_UNKNOWN_NAME, ICL_ERR_UNSUPPORTED).
#[no_mangle]
pub unsafe extern "C" fn icl_trainer_from_checkpoint(
    path_: *const c_char,
    engine: *const c_char,
    out: *mut *mut icl_trainer,
) -> icl_status {
    create(out, || {
        icl_trainer::from_checkpoint(path(path_, "path")?, opt_text(engine, "engine")?)
    })
}

/// Run `steps` optimiser steps of the configuration's protocol, exactly as `icl train` runs it:
/// fresh batches (the batch of step t from stream (seed, train, t, b)), or for the `eigs` task with
/// `task.P > 0` full-batch gradient descent on the fixed training set. The step that completes
/// `train.steps` adds the final log row as `icl train` does, so the log is the same however the
/// steps are split into calls; steps past `train.steps` are allowed (an extended run).
/// `losses` (optional; if given, `losses_len` >= steps) receives the loss of each step in its first
/// `steps` values; `mean_loss` (optional) their mean (0 for `steps` = 0).
///
/// Returns ICL_OK, or:
/// - ICL_ERR_NUMERICAL: a step diverged: its loss, its gradient or the updated parameters or
///   optimiser moments are not finite (e.g. `train.lr` = 1e300, or `train.eps` = 1e-300, which is
///   0 in f32). That step is undone: the parameters, optimiser state, log and step count are those
///   after the last good step (so the trainer stays finite, and `icl_trainer_save` writes a
///   checkpoint that `icl_trainer_from_checkpoint` continues). The steps before it are kept, with
///   their losses written to `losses` (the failing step's is not), and the trainer's step count
///   says how many; `*mean_loss` is left as it was;
/// - ICL_ERR_SIZE: `losses` is given with `losses_len` < steps (nothing done);
/// - ICL_ERR_NULL: `trainer` is NULL, or `losses` is NULL with `losses_len` > 0 (nothing done).
#[no_mangle]
pub unsafe extern "C" fn icl_trainer_train(
    trainer: *mut icl_trainer,
    steps: u64,
    losses: *mut f64,
    losses_len: usize,
    mean_loss: *mut f64,
) -> icl_status {
    guard(|| {
        let t = hmut(trainer, "trainer")?;
        let l = opt_slice_mut(losses, losses_len, "losses")?;
        opt_out(mean_loss, "mean_loss")?;
        let m = t.train(steps, l)?;
        put_opt(mean_loss, m, "mean_loss")?;
        Ok(())
    })
}

/// One optimiser step on a caller's token-major batch (`z`, `y` in the layout of
/// `icl_task_sample`; any n >= 1 and 1 <= len <= 2^24; the query's y-slots are ignored). It counts
/// as a step (later sampled steps use the next stream) but is not entered in the log. `loss`
/// (optional) receives the batch loss before the update.
///
/// Returns ICL_OK, or (the trainer is unchanged on every failure):
/// - ICL_ERR_SIZE: as in `icl_model_loss_grad`;
/// - ICL_ERR_NONFINITE: an input is NaN, infinite or overflows the model's precision;
/// - ICL_ERR_NUMERICAL: the loss or gradient on this batch, or the updated parameters or
///   optimiser moments, are not finite (the step diverged and is not taken);
/// - ICL_ERR_UNSUPPORTED: a multi-layer model (steps on caller batches are for one-layer
///   attention; train it with `icl_trainer_train`);
/// - ICL_ERR_NULL: `trainer`, `z` or `y` is NULL.
#[no_mangle]
pub unsafe extern "C" fn icl_trainer_step_batch(
    trainer: *mut icl_trainer,
    n: usize,
    len: usize,
    z: *const f64,
    z_len: usize,
    y: *const f64,
    y_len: usize,
    loss: *mut f64,
) -> icl_status {
    guard(|| {
        let t = hmut(trainer, "trainer")?;
        opt_out(loss, "loss")?;
        let l = t.step_batch(n, len, slice(z, z_len, "z")?, slice(y, y_len, "y")?)?;
        put_opt(loss, l, "loss")?;
        Ok(())
    })
}

/// Steps completed into `*out`.
///
/// Returns ICL_OK, or ICL_ERR_NULL (`trainer` or `out` is NULL).
#[no_mangle]
pub unsafe extern "C" fn icl_trainer_step_count(
    trainer: *const icl_trainer,
    out: *mut u64,
) -> icl_status {
    guard(|| put(out, href(trainer, "trainer")?.step(), "out"))
}

/// Shape of the trainer's model into `*out`.
///
/// Returns ICL_OK, or ICL_ERR_NULL (`trainer` or `out` is NULL).
#[no_mangle]
pub unsafe extern "C" fn icl_trainer_dims(
    trainer: *const icl_trainer,
    out: *mut icl_dims,
) -> icl_status {
    dims_of(trainer, "trainer", out)
}

/// Copy the flat parameters (n_params values) into `out`.
///
/// Returns ICL_OK, or ICL_ERR_SIZE (`len` != n_params), ICL_ERR_NULL.
#[no_mangle]
pub unsafe extern "C" fn icl_trainer_get_params(
    trainer: *const icl_trainer,
    out: *mut f64,
    len: usize,
) -> icl_status {
    get_params(trainer, "trainer", out, len)
}

/// Replace the flat parameters (n_params finite values); the optimiser state is kept. On failure
/// the parameters are unchanged.
///
/// Returns ICL_OK, or ICL_ERR_SIZE (`len` != n_params), ICL_ERR_NONFINITE (a value is NaN,
/// infinite or overflows the model's precision), ICL_ERR_NULL.
#[no_mangle]
pub unsafe extern "C" fn icl_trainer_set_params(
    trainer: *mut icl_trainer,
    params: *const f64,
    len: usize,
) -> icl_status {
    set_params(trainer, "trainer", params, len)
}

/// Per-head omega (H values) and mu (H n_out values) of the current model, as in
/// `icl_model_circuits` (both buffers checked before either is written).
///
/// Returns ICL_OK, or ICL_ERR_SIZE (`omega_len` != H or `mu_len` != H n_out), ICL_ERR_NULL,
/// ICL_ERR_UNSUPPORTED (a multi-layer model).
#[no_mangle]
pub unsafe extern "C" fn icl_trainer_circuits(
    trainer: *const icl_trainer,
    omega: *mut f64,
    omega_len: usize,
    mu: *mut f64,
    mu_len: usize,
) -> icl_status {
    circuits_of(trainer, "trainer", omega, omega_len, mu, mu_len)
}

/// Create a copy of the current model (configuration, step and engine included) into `*out`.
/// Free with `icl_model_free`.
///
/// Returns ICL_OK, or ICL_ERR_NULL (`trainer` or `out` is NULL).
#[no_mangle]
pub unsafe extern "C" fn icl_trainer_model(
    trainer: *const icl_trainer,
    out: *mut *mut icl_model,
) -> icl_status {
    create(out, || href(trainer, "trainer")?.model())
}

/// Write the current model with the trainer's whole state (optimiser moments, log, step: the
/// `model.safetensors` that `icl train` writes), atomically; `icl_trainer_from_checkpoint`
/// continues it bit for bit and `icl_model_load` reads its model.
///
/// Returns ICL_OK, or ICL_ERR_IO (the file cannot be written), ICL_ERR_NULL.
#[no_mangle]
pub unsafe extern "C" fn icl_trainer_save(
    trainer: *const icl_trainer,
    path_: *const c_char,
) -> icl_status {
    guard(|| href(trainer, "trainer")?.save(path(path_, "path")?))
}

/// Number of rows in the training log into `*out`: the rows of the `metrics.csv` that `icl train`
/// writes for the same steps, however the steps are split into calls (with fresh data a row after
/// step 1, every `train.log_every` steps and at step `train.steps`; full batch (`eigs` with
/// `task.P` > 0) a row at steps 0, `train.log_every`, ... before their update and one after the
/// update that completes `train.steps`; both also at the early steps 2, 5, 10, 20, 50, ... below
/// `train.log_every`, 1 too full batch), by step. Steps of `icl_trainer_step_batch` are not
/// logged.
///
/// Returns ICL_OK, or ICL_ERR_NULL (`trainer` or `out` is NULL).
#[no_mangle]
pub unsafe extern "C" fn icl_trainer_log_len(
    trainer: *const icl_trainer,
    out: *mut usize,
) -> icl_status {
    guard(|| put(out, href(trainer, "trainer")?.log_len(), "out"))
}

/// Row `i` (0-based) of the training log: the step, the training loss (as in `metrics.csv`),
/// and the per-head omega and mu (first output) columns of the log. `omega_len` and `mu_len` must
/// equal the number of those columns: H (`icl_trainer_dims`' heads) for one-layer attention on
/// every task but `eigs`, and 0 for the `eigs` task and for multi-layer models (`model.arch` =
/// transformer or iv2stage), whose logs hold other columns (`icl_trainer_log_columns` names
/// every column, `icl_trainer_log_values` reads them all). `step` and `loss` are optional;
/// `omega` and `mu` may be NULL when their length is 0. Every output is checked before any is
/// written.
///
/// Returns ICL_OK, or:
/// - ICL_ERR_SIZE: `i` >= the number of rows (an index past the end), or `omega_len` or `mu_len`
///   differs from the number of omega or mu columns;
/// - ICL_ERR_NULL: `trainer` is NULL, or `omega` or `mu` is NULL with a non-zero length.
#[no_mangle]
pub unsafe extern "C" fn icl_trainer_log_row(
    trainer: *const icl_trainer,
    i: usize,
    step: *mut u64,
    loss: *mut f64,
    omega: *mut f64,
    omega_len: usize,
    mu: *mut f64,
    mu_len: usize,
) -> icl_status {
    guard(|| {
        let r = href(trainer, "trainer")?.log_row(i)?;
        check_len("omega", omega_len, r.omega.len())?;
        check_len("mu", mu_len, r.mu.len())?;
        opt_out(step, "step")?;
        opt_out(loss, "loss")?;
        let (o, m) = (
            slice_mut(omega, omega_len, "omega")?,
            slice_mut(mu, mu_len, "mu")?,
        );
        o.copy_from_slice(&r.omega);
        m.copy_from_slice(&r.mu);
        put_opt(step, r.step, "step")?;
        put_opt(loss, r.loss, "loss")?;
        Ok(())
    })
}

/// Copy the names of the training log's columns, comma-separated, into `buf` (capacity `cap`
/// bytes, NUL included; `needed`, optional, receives the size required): the header line of the
/// `metrics.csv` that `icl train` writes for this configuration, "step,loss," then the logged
/// quantities (e.g. "step,loss,omega_0,omega_1,mu_0,mu_1" for two heads).
///
/// Returns ICL_OK, or:
/// - ICL_ERR_SIZE: `cap` < the size needed (nothing written; `*needed` is set);
/// - ICL_ERR_NULL: `trainer` is NULL, or `buf` is NULL with a large enough `cap`.
#[no_mangle]
pub unsafe extern "C" fn icl_trainer_log_columns(
    trainer: *const icl_trainer,
    buf: *mut c_char,
    cap: usize,
    needed: *mut usize,
) -> icl_status {
    guard(|| {
        let names = href(trainer, "trainer")?.log_columns().join(",");
        copy_str(&names, buf, cap, needed)
    })
}

/// Row `i` (0-based) of the training log as numbers, in the order of `icl_trainer_log_columns`:
/// the step, the loss and every logged quantity, at full precision (a row of `metrics.csv`, which
/// prints them with 9 significant digits). `out` has capacity
/// `out_len`; `count` (optional) receives the number of values (2 + the number of logged
/// quantities), also when `out_len` is too small.
///
/// Returns ICL_OK, or:
/// - ICL_ERR_SIZE: `i` >= the number of rows, or `out_len` < the number of values (nothing
///   written; `*count` is set);
/// - ICL_ERR_NULL: `trainer` is NULL, or `out` is NULL with a large enough `out_len`.
#[no_mangle]
pub unsafe extern "C" fn icl_trainer_log_values(
    trainer: *const icl_trainer,
    i: usize,
    out: *mut f64,
    out_len: usize,
    count: *mut usize,
) -> icl_status {
    guard(|| {
        let v = href(trainer, "trainer")?.log_values(i)?;
        copy_f64s(&v, out, out_len, count)
    })
}

/// Free a trainer (NULL is a no-op).
#[no_mangle]
pub unsafe extern "C" fn icl_trainer_free(trainer: *mut icl_trainer) {
    destroy(trainer)
}
