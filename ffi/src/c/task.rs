//! `icl_task`: the data sampler of a configuration.
use super::{create, destroy, guard, href, icl_dims, put, slice_mut};
use crate::handles::{domain_of, icl_config, icl_task};
use crate::status::icl_status;

/// Create the task sampler of a configuration into `*out`. Free with `icl_task_free`.
///
/// Returns ICL_OK, or:
/// - ICL_ERR_CONFIG: the configuration breaks a rule of `icl_config_validate`;
/// - ICL_ERR_NUMERICAL: the covariance is not positive definite (`task.cov`);
/// - ICL_ERR_NULL: `cfg` or `out` is NULL.
#[no_mangle]
pub unsafe extern "C" fn icl_task_new(
    cfg: *const icl_config,
    out: *mut *mut icl_task,
) -> icl_status {
    create(out, || icl_task::new(&href(cfg, "cfg")?.cfg))
}

/// Shape of the sampler: d, n_out and the training length L (heads, n_params, is_f64 are 0).
///
/// Returns ICL_OK, or ICL_ERR_NULL (`task` or `out` is NULL).
#[no_mangle]
pub unsafe extern "C" fn icl_task_dims(task: *const icl_task, out: *mut icl_dims) -> icl_status {
    guard(|| {
        let (d, n_out, train_len) = href(task, "task")?.dims();
        put(
            out,
            icl_dims {
                d,
                n_out,
                train_len,
                ..Default::default()
            },
            "out",
        )
    })
}

/// Sample `n` sequences of context length `len` into caller-owned buffers: `z` (`z_len` =
/// n (len+1) (d+n_out) values, token-major: token l of sequence b at `z[(b (len+1) + l) (d+n_out)]`,
/// x first then y, the query last with y-slots 0) and targets `y` (`y_len` = n n_out). Sequence b is
/// drawn from stream (seed, domain, step, b): with `ICL_DOMAIN_TRAIN` and `n` = train.batch,
/// `len` = L this is exactly the batch `icl train` uses at step `step` (with the simd engine on the
/// isotropic task, up to that engine's rounding: see CONVENTIONS).
///
/// Returns ICL_OK, or:
/// - ICL_ERR_ARGUMENT: `domain` is neither ICL_DOMAIN_TRAIN nor ICL_DOMAIN_EVAL;
/// - ICL_ERR_SIZE: `n` = 0, `len` = 0 or `len` > 2^24, the shape overflows, `z_len` or `y_len`
///   differs from its shape, or the memory for the batch is not available;
/// - ICL_ERR_NULL: `task`, `z` or `y` is NULL.
#[no_mangle]
pub unsafe extern "C" fn icl_task_sample(
    task: *const icl_task,
    seed: u64,
    domain: u32,
    step: u64,
    n: usize,
    len: usize,
    z: *mut f64,
    z_len: usize,
    y: *mut f64,
    y_len: usize,
) -> icl_status {
    guard(|| {
        let t = href(task, "task")?;
        let dom = domain_of(domain)?;
        t.sample(
            seed,
            dom,
            step,
            n,
            len,
            slice_mut(z, z_len, "z")?,
            slice_mut(y, y_len, "y")?,
        )
    })
}

/// Free a task sampler (NULL is a no-op).
#[no_mangle]
pub unsafe extern "C" fn icl_task_free(task: *mut icl_task) {
    destroy(task)
}
