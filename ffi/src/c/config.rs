//! `icl_config`: a run configuration made from a preset name or a TOML text, edited by dotted keys.
use super::{copy_str, create, destroy, guard, hmut, href, text};
use crate::handles::icl_config;
use crate::status::icl_status;
use std::ffi::c_char;

/// Create the configuration of a preset (`he2025`, `he2025-h4`, `quick`, ...; `icl presets` lists
/// them) into `*out`. Free with `icl_config_free`. Thread-safe.
///
/// Returns ICL_OK, or:
/// - ICL_ERR_UNKNOWN_NAME: no preset has this name (exact and case-sensitive; "" is no name);
/// - ICL_ERR_NULL: `name` or `out` is NULL.
#[no_mangle]
pub unsafe extern "C" fn icl_config_preset(
    name: *const c_char,
    out: *mut *mut icl_config,
) -> icl_status {
    create(out, || icl_config::preset(text(name, "name")?))
}

/// Create a configuration from a TOML text (`[task]`, `[model]`, `[train]` sections; keys not
/// given keep the `he2025` defaults, so "" is the he2025 configuration) into `*out`, checked as
/// `icl_config_set` checks each value and then as `icl_config_validate` checks the whole. Free with
/// `icl_config_free`. Thread-safe.
///
/// Returns ICL_OK, or:
/// - ICL_ERR_UNKNOWN_KEY: an unknown section or key;
/// - ICL_ERR_CONFIG: the text is not TOML (a number TOML cannot hold as a double, such as
///   `1e400`, is not TOML either), a key or section appears twice, a key is outside a section, a
///   value has the wrong type or is outside its range, `[task]` gives both `eigs` and a `d` other
///   than the number of eigenvalues, or a rule between keys fails;
/// - ICL_ERR_NONFINITE: a number is NaN or infinite (`nan`, `inf` in TOML);
/// - ICL_ERR_NULL: `toml` or `out` is NULL; ICL_ERR_UTF8: `toml` is not UTF-8.
#[no_mangle]
pub unsafe extern "C" fn icl_config_from_toml(
    toml: *const c_char,
    out: *mut *mut icl_config,
) -> icl_status {
    create(out, || icl_config::from_toml(text(toml, "toml")?))
}

/// Set one dotted key (e.g. "model.heads" = "4"; `icl presets --keys` lists every key with its
/// type and range; aliases such as "task.len" for "task.L" are accepted). The value is a TOML value
/// ("4", "1e-3", "true", "[0.5, 0.3]") or bare text ("eigs", "auto", "0.4,0.3"); for a list key ""
/// is the empty list. The value is checked now against its key's type and range, the same range
/// `icl_config_validate`, the TOML reader and the CLI use (for example `task.d` in 1..=4096,
/// `task.sigma2` >= 0, `train.lr` > 0, `model.scale` a finite number other than 0); setting
/// `task.eigs` to a non-empty list also sets `task.d` to its length, which must then be in d's
/// range (the empty list clears the eigenvalues and leaves `task.d`). Rules that involve several
/// keys (`task.eigs` has d values, a
/// multi-task support index <= d, the memory the configuration needs <= 16 GiB, ...) are checked by
/// `icl_config_validate` and when the config is used, so a config may pass through states that
/// break them while being edited.
///
/// Returns ICL_OK, or (the config is unchanged on every failure):
/// - ICL_ERR_UNKNOWN_KEY: no such key (exact, case-sensitive; "" and "task" are not keys);
/// - ICL_ERR_CONFIG: the value has the wrong type ("" for a number, "4.5" or "-1" for an integer,
///   an unknown enum word) or is outside the key's range;
/// - ICL_ERR_NONFINITE: the value is a NaN or infinite number, or a number too large for a double
///   (`1e400`), also inside a list;
/// - ICL_ERR_NULL: `cfg`, `key` or `value` is NULL.
#[no_mangle]
pub unsafe extern "C" fn icl_config_set(
    cfg: *mut icl_config,
    key: *const c_char,
    value: *const c_char,
) -> icl_status {
    guard(|| hmut(cfg, "cfg")?.set_key(text(key, "key")?, text(value, "value")?))
}

/// Copy the value of a key as text (the form `icl_config_set` reads back) into `buf` (capacity
/// `cap` bytes, NUL included). `needed` (optional) receives strlen + 1.
///
/// Returns ICL_OK, or:
/// - ICL_ERR_UNKNOWN_KEY: no such key;
/// - ICL_ERR_SIZE: `cap` < the size needed (nothing written to `buf`; `*needed` is set), so `cap`
///   = 0 asks for the size, with `buf` NULL or not;
/// - ICL_ERR_NULL: `cfg` or `key` is NULL, or `buf` is NULL with a large enough `cap`.
#[no_mangle]
pub unsafe extern "C" fn icl_config_get(
    cfg: *const icl_config,
    key: *const c_char,
    buf: *mut c_char,
    cap: usize,
    needed: *mut usize,
) -> icl_status {
    guard(|| {
        let v = href(cfg, "cfg")?.get_key(text(key, "key")?)?;
        copy_str(&v, buf, cap, needed)
    })
}

/// Check every key's range again and the rules that involve several keys, for example: `task.eigs`,
/// when not empty, has `task.d` values (whatever the task), `task.cov` has d*d, multi-task
/// supports are non-empty and at most 16 with indices <= d, `model.arch = iv2stage` needs `task.kind = iv`, and the working memory of the
/// configuration is at most 16 GiB. Every creating function (`icl_task_new`, `icl_model_new`,
/// `icl_trainer_new`) runs the same check.
///
/// Returns ICL_OK, or:
/// - ICL_ERR_CONFIG: the first rule that fails, named in the message (with the memory needed for
///   the budget rule);
/// - ICL_ERR_NULL: `cfg` is NULL.
#[no_mangle]
pub unsafe extern "C" fn icl_config_validate(cfg: *const icl_config) -> icl_status {
    guard(|| href(cfg, "cfg")?.validate())
}

/// Copy the configuration as TOML text (every key; `icl_config_from_toml` reads it back to an equal
/// configuration, floats bit for bit) into `buf` (capacity `cap` bytes, NUL included); `needed`
/// (optional) receives the size required.
///
/// Returns ICL_OK, or:
/// - ICL_ERR_SIZE: `cap` < the size needed (nothing written; `*needed` is set);
/// - ICL_ERR_NULL: `cfg` is NULL, or `buf` is NULL with a large enough `cap`.
#[no_mangle]
pub unsafe extern "C" fn icl_config_to_toml(
    cfg: *const icl_config,
    buf: *mut c_char,
    cap: usize,
    needed: *mut usize,
) -> icl_status {
    guard(|| copy_str(&href(cfg, "cfg")?.toml(), buf, cap, needed))
}

/// Free a configuration (NULL is a no-op).
#[no_mangle]
pub unsafe extern "C" fn icl_config_free(cfg: *mut icl_config) {
    destroy(cfg)
}
