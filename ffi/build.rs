//! Compiles the C++ side of the `cxx` bridge (`src/cxx.rs`) with the system C++ compiler; the
//! objects go into the static library. The generated header is `include/icl.hpp` (kept equal to
//! `$OUT_DIR/cxxbridge/include/icl-ffi/src/cxx.rs.h` by a test).
fn main() {
    cxx_build::bridge("src/cxx.rs")
        .std("c++17")
        .compile("icl_cxxbridge");
    println!("cargo:rerun-if-changed=src/cxx.rs");
}
