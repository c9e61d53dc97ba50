//! `icl_model`: a model (parameters, configuration, step) and the engine that runs it.
use super::{create, destroy, guard, hmut, href, icl_dims, path, put, slice, slice_mut, text};
use crate::handles::{check_len, icl_config, icl_model, icl_task, Dims, HeadCircuits};
use crate::status::{icl_status, FfiResult};
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

/// Copy omega (H values) and mu (H n_out values, head-major) into caller buffers.
pub(crate) unsafe fn write_circuits(
    c: &HeadCircuits,
    omega: *mut f64,
    omega_len: usize,
    mu: *mut f64,
    mu_len: usize,
) -> FfiResult<()> {
    check_len("omega", omega_len, c.omega.len())?;
    check_len("mu", mu_len, c.mu.len())?;
    slice_mut(omega, omega_len, "omega")?.copy_from_slice(&c.omega);
    slice_mut(mu, mu_len, "mu")?.copy_from_slice(&c.mu);
    Ok(())
}

/// Create a freshly initialised model of a configuration (seed `train.seed`, precision
/// `train.dtype`, run by the default engine) into `*out`. Free with `icl_model_free`.
#[no_mangle]
pub unsafe extern "C" fn icl_model_new(
    cfg: *const icl_config,
    out: *mut *mut icl_model,
) -> icl_status {
    create(out, || icl_model::new(&href(cfg, "cfg")?.cfg))
}

/// Load a checkpoint (the `model.safetensors` of a run folder written by `icl train`, or by
/// `icl_model_save`/`icl_trainer_save`) into `*out`, in its stored precision, with its
/// configuration and step. Missing files give `ICL_ERR_IO`, invalid ones `ICL_ERR_CHECKPOINT`.
#[no_mangle]
pub unsafe extern "C" fn icl_model_load(
    path_: *const c_char,
    out: *mut *mut icl_model,
) -> icl_status {
    create(out, || icl_model::load(path(path_, "path")?))
}

/// Write the model as a checkpoint (atomically: a temporary file renamed into place).
#[no_mangle]
pub unsafe extern "C" fn icl_model_save(
    model: *const icl_model,
    path_: *const c_char,
) -> icl_status {
    guard(|| href(model, "model")?.save(path(path_, "path")?))
}

/// Run the model with another engine ("scalar", ...; the names of `icl train --engine`).
#[no_mangle]
pub unsafe extern "C" fn icl_model_set_engine(
    model: *mut icl_model,
    name: *const c_char,
) -> icl_status {
    guard(|| hmut(model, "model")?.set_engine(text(name, "name")?))
}

/// Shape of the model.
#[no_mangle]
pub unsafe extern "C" fn icl_model_dims(model: *const icl_model, out: *mut icl_dims) -> icl_status {
    guard(|| put(out, dims_c(href(model, "model")?.dims()), "out"))
}

/// Create a copy of the model's configuration into `*out` (for a loaded checkpoint: the
/// configuration it was trained with). Free with `icl_config_free`.
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

/// Predict the query outputs of `n` problems with context length `len >= 1`: contexts `x`
/// ([n][len][d], `x_len` values), `y` ([n][len][n_out]), queries `xq` ([n][d]); predictions go
/// to `out` ([n][n_out], `out_len` values). Inputs are rounded to the model's precision.
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

/// Predict for a token-major batch `z` (the layout of `icl_task_sample`; the query's y-slots
/// are ignored) into `out` ([n][n_out]).
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
/// `grad` (`grad_len` = n_params).
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
#[no_mangle]
pub unsafe extern "C" fn icl_model_get_params(
    model: *const icl_model,
    out: *mut f64,
    len: usize,
) -> icl_status {
    guard(|| {
        let p = href(model, "model")?.params();
        check_len("out", len, p.len())?;
        slice_mut(out, len, "out")?.copy_from_slice(&p);
        Ok(())
    })
}

/// Replace the flat parameters (n_params finite values, rounded to the model's precision).
#[no_mangle]
pub unsafe extern "C" fn icl_model_set_params(
    model: *mut icl_model,
    params: *const f64,
    len: usize,
) -> icl_status {
    guard(|| {
        let m = hmut(model, "model")?;
        m.set_params(slice(params, len, "params")?)
    })
}

/// The circuits of every head (He et al. 2025 §3): `omega` (H values: the mean diagonal of the
/// effective KQ_11, score scale included) and `mu` (H n_out values, head-major: OV_22 per output).
#[no_mangle]
pub unsafe extern "C" fn icl_model_circuits(
    model: *const icl_model,
    omega: *mut f64,
    omega_len: usize,
    mu: *mut f64,
    mu_len: usize,
) -> icl_status {
    guard(|| {
        write_circuits(
            &href(model, "model")?.circuits(),
            omega,
            omega_len,
            mu,
            mu_len,
        )
    })
}

/// The effective circuit matrices: `kq` ([H][E][E], row-major, score scale included, E = d + n_out)
/// and `ov` ([H][n_out][E]).
#[no_mangle]
pub unsafe extern "C" fn icl_model_circuit_matrices(
    model: *const icl_model,
    kq: *mut f64,
    kq_len: usize,
    ov: *mut f64,
    ov_len: usize,
) -> icl_status {
    guard(|| {
        let c = href(model, "model")?.circuits();
        check_len("kq", kq_len, c.kq.len())?;
        check_len("ov", ov_len, c.ov.len())?;
        slice_mut(kq, kq_len, "kq")?.copy_from_slice(&c.kq);
        slice_mut(ov, ov_len, "ov")?.copy_from_slice(&c.ov);
        Ok(())
    })
}

/// Monte Carlo risk E[(y_q - yhat_q)^2] (query noise included) at test length `len` with
/// `samples` >= 2 sequences from stream (seed, eval, len, i), on the data of `task` (optional:
/// NULL means the model's own configuration), as `icl eval` computes it. Writes the mean to
/// `*risk` and its standard error to `*stderr_out`.
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
