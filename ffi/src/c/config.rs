//! `icl_config`: a run configuration made from a preset name or a TOML text, edited by dotted keys.
use super::{copy_str, create, destroy, guard, hmut, href, text};
use crate::handles::icl_config;
use crate::status::icl_status;
use std::ffi::c_char;

/// Create the configuration of a preset (`he2025`, `he2025-h4`, `quick`, ...; `icl presets`
/// lists them) into `*out`. Unknown names give `ICL_ERR_UNKNOWN_NAME`. Free with `icl_config_free`.
#[no_mangle]
pub unsafe extern "C" fn icl_config_preset(
    name: *const c_char,
    out: *mut *mut icl_config,
) -> icl_status {
    create(out, || icl_config::preset(text(name, "name")?))
}

/// Create a configuration from a TOML text (`[task]`, `[model]`, `[train]` sections; keys not
/// given keep the `he2025` defaults) into `*out`, validated. Unknown keys give
/// `ICL_ERR_UNKNOWN_KEY`, bad values `ICL_ERR_CONFIG`. Free with `icl_config_free`.
#[no_mangle]
pub unsafe extern "C" fn icl_config_from_toml(
    toml: *const c_char,
    out: *mut *mut icl_config,
) -> icl_status {
    create(out, || icl_config::from_toml(text(toml, "toml")?))
}

/// Set one dotted key (e.g. "model.heads" = "4"; `icl presets --keys` lists every key with its
/// type and range). The value is a TOML value ("4", "1e-3", "true", "[0.5, 0.3]") or bare text
/// ("eigs", "auto", "0.4,0.3"). It is checked now against its key's type and range (for example
/// `task.d` in 1..=4096, `task.sigma2` >= 0, `train.lr` > 0, no NaN or infinity): a value outside
/// gives `ICL_ERR_CONFIG` (`ICL_ERR_NONFINITE` for NaN or infinity), an unknown key
/// `ICL_ERR_UNKNOWN_KEY`, and the config is unchanged on failure. Rules that involve several keys
/// (`task.eigs` has d values, a multi-task support index <= d, the memory the configuration needs
/// <= 16 GiB, ...) are checked by `icl_config_validate` and when the config is used.
#[no_mangle]
pub unsafe extern "C" fn icl_config_set(
    cfg: *mut icl_config,
    key: *const c_char,
    value: *const c_char,
) -> icl_status {
    guard(|| hmut(cfg, "cfg")?.set_key(text(key, "key")?, text(value, "value")?))
}

/// Copy the value of a key as text into `buf` (capacity `cap` bytes, NUL included). `needed`
/// (optional) receives the size required; a too-small buffer gives `ICL_ERR_SIZE` (call with
/// `cap` = 0 to ask for the size).
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

/// Check the rules that involve several keys (`ICL_ERR_CONFIG` with the reason).
#[no_mangle]
pub unsafe extern "C" fn icl_config_validate(cfg: *const icl_config) -> icl_status {
    guard(|| href(cfg, "cfg")?.validate())
}

/// Copy the configuration as TOML text into `buf` (capacity `cap` bytes, NUL included); `needed`
/// (optional) receives the size required, as in `icl_config_get`.
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
