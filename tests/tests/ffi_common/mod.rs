//! Shared plumbing of the `ffi_*` tests: build the C library and the `icl` binary, compile C and
//! C++ clients with the system gcc/g++, run them.
//!
//! Where things are: the test binary lives in `<target>/<profile>/deps/`, so `<target>/<profile>`
//! (`target/debug` for `cargo test`, or under `$CARGO_TARGET_DIR`) is its grandparent. The first
//! test that needs them runs `cargo build --workspace --lib --bins --tests --examples` with the
//! matching profile (`--profile test` for `target/debug`, `--release` for `target/release`; see
//! [`built`]), which leaves
//! `libicl_ffi.a`, `libicl_ffi.so` and the `icl` binary in that folder.
#![allow(dead_code)]
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

/// System libraries a program linked against the static library needs, from `ffi/native-libs`
/// (the file `icl-static.pc` and the CMake package are made from).
pub fn native_libs() -> Vec<String> {
    let path = workspace().join("ffi/native-libs");
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .split_whitespace()
        .map(String::from)
        .collect()
}

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// `<target>/<profile>` of this test binary.
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    exe.parent()
        .and_then(|deps| deps.parent())
        .expect("<target>/<profile>/deps/<test>")
        .to_path_buf()
}

/// Paths of the built artefacts.
pub struct Built {
    /// Folder holding libicl_ffi.a / libicl_ffi.so and the `icl` binary.
    pub lib_dir: PathBuf,
    pub icl: PathBuf,
    pub include: PathBuf,
}

/// Build the library and the CLI once per test binary (cargo does nothing when they are fresh).
///
/// The build selects the whole workspace and the targets `cargo test --workspace` builds, so that
/// cargo resolves the same features: a dev-dependency (cbindgen) turns on `std` in `toml` and
/// others, and a build of `-p icl-ffi -p icl-cli` alone resolves without it, which compiled every
/// crate from the core up a second time (minutes of CI). After `cargo test --workspace` this
/// only copies the artefacts into place (and compiles the Python extension's crate, which that
/// command leaves out).
pub fn built() -> &'static Built {
    static BUILT: OnceLock<Built> = OnceLock::new();
    BUILT.get_or_init(|| {
        let dir = profile_dir();
        let target = dir.parent().expect("target dir").to_path_buf();
        let profile: Vec<String> = match dir.file_name().and_then(|s| s.to_str()) {
            Some("debug") => vec!["--profile".into(), "test".into()],
            Some("release") => vec!["--release".into()],
            Some(other) => vec!["--profile".into(), other.into()],
            None => vec![],
        };
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let out = Command::new(cargo)
            .current_dir(workspace())
            .args([
                "build",
                "--workspace",
                "--lib",
                "--bins",
                "--tests",
                "--examples",
            ])
            .args(&profile)
            .env("CARGO_TARGET_DIR", &target)
            .stdin(Stdio::null())
            .output()
            .expect("run cargo build");
        assert!(
            out.status.success(),
            "cargo build --workspace (for libicl_ffi and icl) failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let b = Built {
            icl: dir.join("icl"),
            include: workspace().join("ffi/include"),
            lib_dir: dir,
        };
        for f in ["libicl_ffi.a", "libicl_ffi.so"] {
            assert!(
                b.lib_dir.join(f).is_file(),
                "{f} not built in {}",
                b.lib_dir.display()
            );
        }
        assert!(
            b.icl.is_file(),
            "icl binary not built at {}",
            b.icl.display()
        );
        b
    })
}

/// A fresh scratch folder for one test, removed when the test passes (kept when it fails, to
/// look at): a statically linked client weighs ~150 MB with debug info, and CI disks are small.
pub struct Scratch(PathBuf);

impl Scratch {
    /// Keep the folder past this value (for artefacts built once per test binary).
    pub fn keep(self) -> PathBuf {
        let path = self.0.clone();
        std::mem::forget(self);
        path
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for Scratch {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// A fresh scratch folder for one test (see [`Scratch`]).
pub fn scratch(name: &str) -> Scratch {
    let d = profile_dir()
        .join("ffi-tests")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch folder");
    Scratch(d)
}

/// Run a command, failing the test with its output if it fails.
pub fn run(cmd: &mut Command) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// How a client links the library.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    Static,
    Shared,
}

fn link_args(cmd: &mut Command, b: &Built, link: Link) {
    match link {
        Link::Static => {
            cmd.arg(b.lib_dir.join("libicl_ffi.a")).args(native_libs());
        }
        Link::Shared => {
            cmd.arg(format!("-L{}", b.lib_dir.display()))
                .arg("-licl_ffi")
                .arg(format!("-Wl,-rpath,{}", b.lib_dir.display()));
        }
    }
}

/// Compile a C source with the system gcc (warnings are errors).
pub fn compile_c(src: &Path, exe: &Path, link: Link) {
    let b = built();
    let mut cmd = Command::new("gcc");
    cmd.args([
        "-std=c11",
        "-O1",
        "-g",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-pedantic",
    ])
    .arg(format!("-I{}", b.include.display()))
    .arg(src)
    .arg("-o")
    .arg(exe);
    link_args(&mut cmd, b, link);
    run(&mut cmd);
}

/// Compile a C++ source with the system g++ against the static library (the C++ API lives there).
pub fn compile_cpp(src: &Path, exe: &Path) {
    let b = built();
    let mut cmd = Command::new("g++");
    cmd.args(["-std=c++17", "-O1", "-g", "-Wall", "-Wextra", "-Werror"])
        .arg(format!("-I{}", b.include.display()))
        .arg(src)
        .arg("-o")
        .arg(exe);
    link_args(&mut cmd, b, Link::Static);
    run(&mut cmd);
}

/// Train a small run with the CLI: `icl train --preset quick --steps N --seed S --engine E` plus
/// `--set` overrides, into `out`. Returns the run folder.
pub fn cli_train(out: &Path, steps: u64, seed: u64, engine: &str, sets: &[&str]) -> PathBuf {
    let mut cmd = Command::new(&built().icl);
    cmd.args([
        "train",
        "--preset",
        "quick",
        "--quiet",
        "--force",
        "--eval-samples",
        "0",
    ])
    .args([
        "--steps",
        &steps.to_string(),
        "--seed",
        &seed.to_string(),
        "--engine",
        engine,
    ])
    .arg("--out")
    .arg(out);
    for s in sets {
        cmd.args(["--set", s]);
    }
    run(&mut cmd);
    out.to_path_buf()
}

/// Parse whitespace-separated numbers of a line.
pub fn numbers(line: &str) -> Vec<f64> {
    line.split_whitespace()
        .map(|t| {
            t.parse::<f64>()
                .unwrap_or_else(|_| panic!("not a number: {t:?} in {line:?}"))
        })
        .collect()
}
