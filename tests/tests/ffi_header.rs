//! The shipped headers cannot drift from the Rust definitions:
//!
//! `ffi/include/icl/bridge.h` is the C++ header `cxx` generates for the bridge in `ffi/src/cxx.rs`
//! and `ffi/include/rust/cxx.h` cxx's own header (both compared with this build's; `icl.hpp`
//! includes them). `ffi/include/icl.h` is generated from the Rust definitions by cbindgen (config
//! `ffi/cbindgen.toml`) and must not drift: this test regenerates it and compares. To update the
//! committed header after changing the C API: `ICL_BLESS=1 cargo test -p icl-tests --test ffi_header`.
use std::path::Path;

#[test]
fn c_header_matches_the_rust_definitions() {
    let ffi = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ffi");
    let config = cbindgen::Config::from_file(ffi.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut out = Vec::new();
    cbindgen::Builder::new()
        .with_crate(&ffi)
        .with_config(config)
        .generate()
        .expect("cbindgen failed to parse ffi/src")
        .write(&mut out);
    let generated = String::from_utf8(out).expect("utf-8 header");
    let path = ffi.join("include/icl.h");
    if std::env::var_os("ICL_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("write icl.h");
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "ffi/include/icl.h is out of date with ffi/src; regenerate it with \
         `ICL_BLESS=1 cargo test -p icl-tests --test ffi_header`"
    );
    // Every exported function is declared.
    for f in [
        "icl_version",
        "icl_last_error",
        "icl_model_predict",
        "icl_trainer_train",
        "icl_theory_eval",
        "icl_theory_value",
        "icl_theory_list",
    ] {
        assert!(
            generated.contains(&format!("{f}(")),
            "{f} missing from the header"
        );
    }
}

#[test]
fn cpp_headers_are_the_generated_ones() {
    let inc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ffi/include");
    for (file, generated) in [
        ("icl/bridge.h", icl_ffi::cxx::GENERATED_HEADER),
        ("rust/cxx.h", icl_ffi::cxx::CXX_HEADER),
    ] {
        let path = inc.join(file);
        if std::env::var_os("ICL_BLESS").is_some() {
            std::fs::write(&path, generated).expect("write header");
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == generated,
            "ffi/include/{file} differs from what cxx generates for ffi/src/cxx.rs; regenerate \
             it with `ICL_BLESS=1 cargo test -p icl-tests --test ffi_header`"
        );
    }
    let bridge = icl_ffi::cxx::GENERATED_HEADER;
    for class in [
        "struct Config final",
        "struct Model final",
        "struct Trainer final",
        "struct TaskSampler final",
    ] {
        assert!(bridge.contains(class), "{class} missing");
    }
    let hpp = std::fs::read_to_string(inc.join("icl.hpp")).unwrap();
    assert!(hpp.contains("#include \"rust/cxx.h\"") && hpp.contains("#include \"icl/bridge.h\""));
}
