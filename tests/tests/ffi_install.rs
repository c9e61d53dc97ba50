//! Packaging and the C++ API's error path:
//!
//! * `ffi/install.sh` installs headers, libraries, `icl.pc` and the CMake package; a C program
//!   builds with `pkg-config --cflags --libs icl` (shared) and `pkg-config --static` (static) and
//!   runs; with cmake installed, `find_package(icl)` builds the examples (examples/CMakeLists.txt);
//! * `icl.h` compiles as strict C99 and as C++;
//! * C++ failures throw `rust::Error` with the library's message (ffi/tests/cpp/exceptions.cpp).
mod ffi_common;

use ffi_common::{built, compile_c, compile_cpp, run, scratch, workspace, Link};
use std::path::Path;
use std::process::Command;

fn pkg_config(prefix: &Path, args: &[&str]) -> Vec<String> {
    let out = run(Command::new("pkg-config")
        .args(args)
        .arg("icl")
        .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig")));
    String::from_utf8(out.stdout)
        .unwrap()
        .split_whitespace()
        .map(String::from)
        .collect()
}

#[test]
fn install_then_build_with_pkg_config_and_cmake() {
    let b = built();
    let dir = scratch("install");
    let prefix = dir.join("prefix");
    run(Command::new("sh")
        .arg(workspace().join("ffi/install.sh"))
        .arg(&prefix)
        .arg(&b.lib_dir));
    for f in [
        "include/icl.h",
        "include/icl.hpp",
        "include/icl/bridge.h",
        "include/rust/cxx.h",
        "lib/libicl_ffi.a",
        "lib/libicl_ffi.so",
        "lib/pkgconfig/icl.pc",
        "lib/cmake/icl/iclConfig.cmake",
        "lib/cmake/icl/iclConfigVersion.cmake",
    ] {
        assert!(prefix.join(f).is_file(), "{f} not installed");
    }
    let have_pkg_config = Command::new("pkg-config").arg("--version").output().is_ok();
    if have_pkg_config {
        let v = pkg_config(&prefix, &["--modversion"]);
        assert_eq!(v, [env!("CARGO_PKG_VERSION")]);
        let src = workspace().join("ffi/tests/c/header.c");
        for (name, flags) in [
            ("shared", pkg_config(&prefix, &["--cflags", "--libs"])),
            (
                "static",
                pkg_config(&prefix, &["--static", "--cflags", "--libs"]),
            ),
        ] {
            let exe = dir.join(format!("header-{name}"));
            let mut cmd = Command::new("gcc");
            cmd.args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"])
                .arg(&src)
                .arg("-o")
                .arg(&exe);
            if name == "static" {
                // Link the archive, not the shared object next to it.
                let flags: Vec<&String> = flags.iter().filter(|f| *f != "-licl_ffi").collect();
                cmd.arg(prefix.join("lib/libicl_ffi.a")).args(flags);
            } else {
                cmd.args(&flags)
                    .arg(format!("-Wl,-rpath,{}", prefix.join("lib").display()));
            }
            run(&mut cmd);
            let out = run(&mut Command::new(&exe));
            let text = String::from_utf8(out.stdout).unwrap();
            assert!(
                text.starts_with(&format!(
                    "icl {} eta* 0.879120879120879",
                    env!("CARGO_PKG_VERSION")
                )),
                "{text}"
            );
        }
    } else {
        eprintln!("note: pkg-config not found; the pkg-config build is not exercised");
    }
    if Command::new("cmake").arg("--version").output().is_ok() {
        let build = dir.join("cmake-build");
        run(Command::new("cmake")
            .arg("-S")
            .arg(workspace().join("examples"))
            .arg("-B")
            .arg(&build)
            .arg(format!("-DCMAKE_PREFIX_PATH={}", prefix.display())));
        run(Command::new("cmake").arg("--build").arg(&build));
        for exe in ["predict", "simulator"] {
            assert!(build.join(exe).is_file(), "cmake did not build {exe}");
        }
        let out = run(Command::new(build.join("simulator"))
            .args(["--steps", "20", "--chunk", "10", "--set", "task.L=8"]));
        assert!(String::from_utf8_lossy(&out.stdout).contains("tick 20 "));
    } else {
        eprintln!("note: cmake not found; the find_package(icl) build is not exercised");
    }
}

#[test]
fn header_compiles_as_c99_and_cpp() {
    let b = built();
    let dir = scratch("header");
    let src = workspace().join("ffi/tests/c/header.c");
    compile_c(&src, &dir.join("header-c"), Link::Shared);
    let out = run(&mut Command::new(dir.join("header-c")));
    assert!(String::from_utf8_lossy(&out.stdout).contains("eta* 0.87912087912087911"));
    // The same file as C++ (the header's extern "C" block), linked statically.
    let cpp = dir.join("header.cpp");
    std::fs::copy(&src, &cpp).unwrap();
    compile_cpp(&cpp, &dir.join("header-cpp"));
    run(&mut Command::new(dir.join("header-cpp")));
    let _ = b;
}

#[test]
fn cpp_failures_throw_with_the_message() {
    let dir = scratch("cpp-exceptions");
    let exe = dir.join("exceptions");
    compile_cpp(&workspace().join("ffi/tests/cpp/exceptions.cpp"), &exe);
    let out = run(&mut Command::new(&exe));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.ends_with("0 failed\n"), "{text}");
    assert_eq!(
        text.lines().filter(|l| l.starts_with("ok ")).count(),
        14,
        "{text}"
    );
}
