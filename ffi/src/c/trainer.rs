//! `icl_trainer`: the training loop of `icl train`, stepped by the caller.
use super::model::{dims_c, write_circuits};
use super::{
    create, destroy, guard, hmut, href, icl_dims, opt_slice_mut, opt_text, path, put, put_opt,
    slice, slice_mut,
};
use crate::handles::{check_len, icl_config, icl_model, icl_trainer};
use crate::status::icl_status;
use std::ffi::c_char;

/// Create a trainer for a configuration into `*out`: the model initialised from `train.seed`, the
/// optimiser of `train.*`, run by the engine `engine` (optional: NULL means `icl_default_engine()`,
/// the engine `icl train` uses without `--engine`). With the same configuration and engine, its
/// steps reproduce `icl train` exactly. Free with `icl_trainer_free`.
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

/// Create a trainer that continues from a checkpoint: its configuration, parameters and step count,
/// with a fresh optimiser state (checkpoints do not hold one, so the continuation is not the
/// uninterrupted run). `engine` is optional as in `icl_trainer_new`.
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
/// `task.P > 0` full-batch gradient descent on the fixed training set. Reaching `train.steps` adds
/// the final log row as `icl train` does. `losses` (optional, `losses_len` >= steps) receives the
/// loss of each step,
/// `mean_loss` (optional) their mean. On a failure (e.g. `ICL_ERR_NUMERICAL` when the loss
/// diverges) the steps completed before it are kept.
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
        let m = t.train(steps, l)?;
        put_opt(mean_loss, m);
        Ok(())
    })
}

/// One optimiser step on a caller's token-major batch (`z`, `y` in the layout of
/// `icl_task_sample`; any n >= 1 and len >= 1). It counts as a step (later sampled steps use the
/// next stream) but is not entered in the log. `loss` (optional) receives the batch loss before
/// the update.
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
        let l = t.step_batch(n, len, slice(z, z_len, "z")?, slice(y, y_len, "y")?)?;
        put_opt(loss, l);
        Ok(())
    })
}

/// Steps completed.
#[no_mangle]
pub unsafe extern "C" fn icl_trainer_step_count(
    trainer: *const icl_trainer,
    out: *mut u64,
) -> icl_status {
    guard(|| put(out, href(trainer, "trainer")?.step(), "out"))
}

/// Shape of the trainer's model.
#[no_mangle]
pub unsafe extern "C" fn icl_trainer_dims(
    trainer: *const icl_trainer,
    out: *mut icl_dims,
) -> icl_status {
    guard(|| put(out, dims_c(href(trainer, "trainer")?.dims()), "out"))
}

/// Copy the flat parameters (n_params values) into `out`.
#[no_mangle]
pub unsafe extern "C" fn icl_trainer_get_params(
    trainer: *const icl_trainer,
    out: *mut f64,
    len: usize,
) -> icl_status {
    guard(|| {
        let p = href(trainer, "trainer")?.params();
        check_len("out", len, p.len())?;
        slice_mut(out, len, "out")?.copy_from_slice(&p);
        Ok(())
    })
}

/// Replace the flat parameters (n_params finite values); the optimiser state is kept.
#[no_mangle]
pub unsafe extern "C" fn icl_trainer_set_params(
    trainer: *mut icl_trainer,
    params: *const f64,
    len: usize,
) -> icl_status {
    guard(|| {
        let t = hmut(trainer, "trainer")?;
        t.set_params(slice(params, len, "params")?)
    })
}

/// Per-head omega (H values) and mu (H n_out values) of the current model, as in
/// `icl_model_circuits`.
#[no_mangle]
pub unsafe extern "C" fn icl_trainer_circuits(
    trainer: *const icl_trainer,
    omega: *mut f64,
    omega_len: usize,
    mu: *mut f64,
    mu_len: usize,
) -> icl_status {
    guard(|| {
        write_circuits(
            &href(trainer, "trainer")?.circuits(),
            omega,
            omega_len,
            mu,
            mu_len,
        )
    })
}

/// Create a copy of the current model (configuration, step and engine included) into `*out`.
/// Free with `icl_model_free`.
#[no_mangle]
pub unsafe extern "C" fn icl_trainer_model(
    trainer: *const icl_trainer,
    out: *mut *mut icl_model,
) -> icl_status {
    create(out, || href(trainer, "trainer")?.model())
}

/// Write the current model as a checkpoint (the `model.safetensors` that `icl train` writes).
#[no_mangle]
pub unsafe extern "C" fn icl_trainer_save(
    trainer: *const icl_trainer,
    path_: *const c_char,
) -> icl_status {
    guard(|| href(trainer, "trainer")?.save(path(path_, "path")?))
}

/// Number of rows in the training log (rows are written after step 1, every `train.log_every`
/// steps and at step `train.steps`, as in `metrics.csv`).
#[no_mangle]
pub unsafe extern "C" fn icl_trainer_log_len(
    trainer: *const icl_trainer,
    out: *mut usize,
) -> icl_status {
    guard(|| put(out, href(trainer, "trainer")?.log_len(), "out"))
}

/// Row `i` of the training log: the step, the mean training loss since the previous row, and the
/// per-head omega (H values) and mu (H values, first output). `step` and `loss` are optional.
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
        slice_mut(omega, omega_len, "omega")?.copy_from_slice(&r.omega);
        slice_mut(mu, mu_len, "mu")?.copy_from_slice(&r.mu);
        put_opt(step, r.step);
        put_opt(loss, r.loss);
        Ok(())
    })
}

/// Free a trainer (NULL is a no-op).
#[no_mangle]
pub unsafe extern "C" fn icl_trainer_free(trainer: *mut icl_trainer) {
    destroy(trainer)
}
