//! PyTorch state_dicts (safetensors) imported into the he2025 model.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let cfg = icl_core::config::Config::default();
    let _ = icl_run::checkpoint::import_torch_bytes(std::path::Path::new("fuzz"), bytes, &cfg);
});
