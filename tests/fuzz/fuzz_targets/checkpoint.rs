//! Checkpoint files: arbitrary bytes are decoded strictly, never panicking or allocating without
//! bound.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let _ = icl_run::checkpoint::decode(std::path::Path::new("fuzz"), bytes);
});
