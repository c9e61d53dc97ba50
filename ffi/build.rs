//! Compiles the C++ side of the `cxx` bridge (`src/cxx.rs`) with the system C++ compiler; the
//! objects go into the static library. The generated header ships as `include/icl/bridge.h` and
//! cxx's header as `include/rust/cxx.h` (kept equal to `$OUT_DIR/cxxbridge/include/...` by
//! `tests/tests/ffi_header.rs`).
fn main() {
    cxx_build::bridge("src/cxx.rs")
        .std("c++17")
        .compile("icl_cxxbridge");
    println!("cargo:rerun-if-changed=src/cxx.rs");
}
