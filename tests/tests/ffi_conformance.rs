//! The C conformance test (ffi/tests/c/conformance.c): a C program, built here with the system C
//! compiler against the shared library, walks `icl.h` function by function: every documented
//! status, every hostile input class (NULLs, zero, wrong, overflowing and huge sizes, NaN and
//! infinity, f32 overflow, unknown and wrongly cased names, "" versus NULL, misaligned pointers,
//! damaged and over-claiming checkpoints, closed forms that overflow) and the promises (nothing
//! changes on failure, same seed same numbers, save and resume bit-identical, gradients against
//! finite differences). Each case runs in its own child process, so an abort or a crash is a
//! failed case.
//!
//! * `every_declared_function_has_a_case`: the functions `icl.h` declares equal the functions the
//!   cases name (a new function without a case fails here);
//! * `conformance_cases_pass`: all cases pass (prints the count and the seconds);
//! * `conformance_is_clean_under_valgrind`: the same program under memcheck (definite leaks,
//!   invalid reads or writes and uses of uninitialised values are errors in the child, so its
//!   case fails). Skipped with a note without valgrind, except under `CI`.
mod ffi_common;

use ffi_common::{built, run, scratch, workspace};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Instant;

/// The conformance program, compiled once per test binary.
fn program() -> &'static PathBuf {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| {
        let b = built();
        let dir = scratch("conformance-build").keep();
        let exe = dir.join("conformance");
        run(Command::new("cc")
            .args([
                "-std=c11",
                "-O1",
                "-g",
                "-Wall",
                "-Wextra",
                "-Werror",
                "-pedantic",
            ])
            .arg(format!("-I{}", b.include.display()))
            .arg(workspace().join("ffi/tests/c/conformance.c"))
            .arg("-o")
            .arg(&exe)
            .arg(format!("-L{}", b.lib_dir.display()))
            .arg("-licl_ffi")
            .arg(format!("-Wl,-rpath,{}", b.lib_dir.display()))
            .args(["-lm", "-lpthread"]));
        exe
    })
}

/// The functions `icl.h` declares (every `icl_...(` at the start of a declaration).
fn declared_functions() -> BTreeSet<String> {
    let h = std::fs::read_to_string(workspace().join("ffi/include/icl.h")).unwrap();
    let mut out = BTreeSet::new();
    for line in h.lines() {
        let l = line.trim_start();
        if l.starts_with('*') || l.starts_with("/*") || l.starts_with("//") || l.starts_with('#') {
            continue;
        }
        let Some(paren) = l.find('(') else { continue };
        let head = &l[..paren];
        if let Some(name) = head.split([' ', '*']).next_back() {
            if name.starts_with("icl_") && head.len() > name.len() {
                out.insert(name.to_string());
            }
        }
    }
    out
}

#[test]
fn every_declared_function_has_a_case() {
    let declared = declared_functions();
    assert!(declared.len() >= 40, "parsed {declared:?}");
    let out = run(Command::new(program()).arg("--list"));
    let list = String::from_utf8(out.stdout).unwrap();
    let covered: BTreeSet<String> = list
        .lines()
        .filter_map(|l| l.split('\t').next())
        .map(String::from)
        .collect();
    let missing: Vec<&String> = declared.difference(&covered).collect();
    let unknown: Vec<&String> = covered.difference(&declared).collect();
    assert!(
        missing.is_empty(),
        "functions of icl.h without a conformance case in ffi/tests/c/conformance.c: {missing:?}"
    );
    assert!(
        unknown.is_empty(),
        "conformance cases name functions icl.h does not declare: {unknown:?}"
    );
    eprintln!(
        "{} functions declared, {} cases",
        declared.len(),
        list.lines().count()
    );
}

/// Run the program (optionally under a wrapper) and check its closing line.
fn run_cases(wrapper: &[&str], dir: &Path) -> (usize, f64) {
    let t = Instant::now();
    let mut cmd = if let Some((first, rest)) = wrapper.split_first() {
        let mut c = Command::new(first);
        c.args(rest).arg(program());
        c
    } else {
        Command::new(program())
    };
    let out = cmd.arg(dir).output().expect("run the conformance program");
    let secs = t.elapsed().as_secs_f64();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stdout.lines().last().unwrap_or("");
    let failed: Vec<&str> = stdout.lines().filter(|l| l.starts_with("not ok")).collect();
    assert!(
        out.status.success() && failed.is_empty() && last.ends_with(" 0 failed"),
        "conformance failed ({}):\n{}\nstderr:\n{stderr}",
        out.status,
        failed.join("\n")
    );
    let passed: usize = last
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    (passed, secs)
}

#[test]
fn conformance_cases_pass() {
    let dir = scratch("conformance");
    let (passed, secs) = run_cases(&[], &dir);
    let listed = String::from_utf8(run(Command::new(program()).arg("--list")).stdout)
        .unwrap()
        .lines()
        .count();
    assert_eq!(passed, listed, "every case ran");
    eprintln!("conformance: {passed} cases passed in {secs:.1} s");
}

#[test]
fn conformance_is_clean_under_valgrind() {
    if Command::new("valgrind").arg("--version").output().is_err() {
        assert!(
            std::env::var_os("CI").is_none(),
            "valgrind is required under CI"
        );
        eprintln!("note: valgrind not found; the memcheck run of the conformance test is skipped");
        return;
    }
    let dir = scratch("conformance-valgrind");
    let supp = workspace().join("ffi/valgrind.supp");
    let supp = format!("--suppressions={}", supp.display());
    let (passed, secs) = run_cases(
        &[
            "valgrind",
            "--quiet",
            "--error-exitcode=97",
            "--leak-check=full",
            "--errors-for-leak-kinds=definite",
            &supp,
        ],
        &dir,
    );
    eprintln!("conformance under valgrind memcheck: {passed} cases clean in {secs:.1} s");
}
