//! Compiles the C++ side of the `cxx` bridge (`src/cxx.rs`) with the system C++ compiler; the
//! objects go into the static library. The generated header ships as `include/icl/bridge.h` and
//! cxx's header as `include/rust/cxx.h` (kept equal to `$OUT_DIR/cxxbridge/include/...` by
//! `tests/tests/ffi_header.rs`).
fn main() {
    cxx_build::bridge("src/cxx.rs")
        // the bridge includes the progress receivers' header, icl/progress.h
        .include("include")
        .std("c++17")
        .compile("icl_cxxbridge");
    println!("cargo:rerun-if-changed=src/cxx.rs");
    println!("cargo:rerun-if-changed=include/icl/progress.h");
    // The shared library names itself, so programs record `libicl_ffi.so` (found through their
    // run path) rather than the path they were linked with (CMake links imported libraries by
    // full path).
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libicl_ffi.so");
    }
}
