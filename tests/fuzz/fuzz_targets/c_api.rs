//! The C API's text entry points: configs from TOML, keys set to values, checkpoint files loaded,
//! theory quantities (closed forms) evaluated with any parameter.
#![no_main]
use icl_ffi::*;
use libfuzzer_sys::fuzz_target;
use std::ffi::CString;
use std::ptr::null_mut;

fn c(s: &str) -> CString {
    CString::new(s.replace('\0', "")).unwrap_or_default()
}

fuzz_target!(|input: (&str, &str, &str, u8, &[u8])| {
    let (text, key, value, which, file) = input;
    unsafe {
        let mut h = null_mut();
        if icl_config_from_toml(c(text).as_ptr(), &mut h) == icl_status::ICL_OK {
            icl_config_free(h);
        }
        if icl_config_preset(c"quick".as_ptr(), &mut h) == icl_status::ICL_OK {
            let _ = icl_config_set(h, c(key).as_ptr(), c(value).as_ptr());
            let _ = icl_config_validate(h);
            icl_config_free(h);
        }
        let names = [c"eta-star", c"mu-gamma", c"gd-risk", c"sigma-tilde", c"optimal-temperature", c"plateaus", c"ols-risk"];
        let name = names[which as usize % names.len()];
        let (k, v) = (c(key), c(value));
        let (keys, vals) = ([k.as_ptr()], [v.as_ptr()]);
        let mut out = [0.0f64; 32];
        let _ = icl_theory_value(name.as_ptr(), keys.as_ptr(), vals.as_ptr(), 1, out.as_mut_ptr(), out.len(), null_mut());
        // a checkpoint file with arbitrary content
        let path = std::env::temp_dir().join(format!("icl-fuzz-{}.safetensors", std::process::id()));
        if std::fs::write(&path, file).is_ok() {
            let p = c(path.to_str().unwrap_or(""));
            let mut m = null_mut();
            if icl_model_load(p.as_ptr(), &mut m) == icl_status::ICL_OK {
                icl_model_free(m);
            }
        }
    }
});
