//! Packaging and the C++ API's error path:
//!
//! * `ffi/install.sh` installs headers, libraries, `icl.pc`, `icl-static.pc` and the CMake
//!   package into a fresh prefix; the link commands of `ffi/README.md` ("Link an installed icl",
//!   read from the README itself, so the test runs exactly what is documented) build a C and a
//!   C++ program against the shared and the static library, and every program runs: the shared
//!   ones find `libicl_ffi.so` through their run path, the static ones do not need it at all
//!   (checked with `readelf -d`); `find_package(icl)` builds the same programs with `icl::icl` and
//!   `icl::icl_static` (ffi/tests/cmake) and the examples (examples/CMakeLists.txt) and runs them.
//!   pkg-config and cmake are required under `CI` (the CI script installs them), otherwise their
//!   part is skipped with a note;
//! * `icl.h` compiles as strict C99 and as C++;
//! * C++ failures throw `rust::Error` with the library's message (ffi/tests/cpp/exceptions.cpp).
//! * C++'s `icl::eval_run`, `icl::eval_plot` and `icl::repro` give what the CLI's `icl eval --json`
//!   and `icl repro --json` give, and throw on bad options (ffi/tests/cpp/run_layer.cpp).
//! * C++'s progress receivers (`icl/progress.h`): `icl::repro_with_progress` reports every run,
//!   `icl::sweep_run_with_progress` stops when the receiver says so and resumes to the CLI's
//!   bytes, and a receiver's exception comes back as `rust::Error` (ffi/tests/cpp/progress.cpp).
mod ffi_common;

use ffi_common::{built, cli_train, compile_c, compile_cpp, run, scratch, workspace, Link};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Whether a tool runs; under `CI` a missing tool fails the test.
fn have(tool: &str) -> bool {
    let ok = Command::new(tool).arg("--version").output().is_ok();
    assert!(
        ok || std::env::var_os("CI").is_none(),
        "{tool} is required under CI"
    );
    if !ok {
        eprintln!("note: {tool} not found; its part of the install test is skipped");
    }
    ok
}

/// The link commands of ffi/README.md's "Link an installed icl" block: (command, comment).
fn documented_link_commands() -> Vec<(String, String)> {
    let readme = std::fs::read_to_string(workspace().join("ffi/README.md")).unwrap();
    let at = readme
        .find("<!-- link-commands")
        .expect("ffi/README.md has the link-commands block");
    let block = &readme[at..];
    let start = block.find("```sh\n").expect("a sh block") + 6;
    let end = start + block[start..].find("```").expect("end of the block");
    block[start..end]
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (cmd, comment) = l.split_once('#').unwrap_or((l, ""));
            (cmd.trim().to_string(), comment.trim().to_string())
        })
        .collect()
}

/// Libraries a program needs at run time (`readelf -d`'s NEEDED entries).
fn needed(exe: &Path) -> Vec<String> {
    let out = run(Command::new("readelf").arg("-d").arg(exe));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains("(NEEDED)"))
        .filter_map(|l| {
            l.split('[')
                .nth(1)
                .map(|s| s.trim_end_matches(']').to_string())
        })
        .collect()
}

/// The checks ffi/tests/cpp/exceptions.cpp prints (`ok NAME: message`), every one of which must run.
const EXCEPTION_CHECKS: usize = 24;

/// Run a built test program without any library search path of the environment and check its
/// output: header.c / capi.cpp print the version and eta*, exceptions.cpp its checks.
fn run_program(exe: &Path) {
    let out = run(Command::new(exe).env_remove("LD_LIBRARY_PATH"));
    let text = String::from_utf8(out.stdout).unwrap();
    let name = exe.file_name().unwrap().to_string_lossy();
    if name.contains("exceptions") || name == "cpp_static" {
        assert!(text.ends_with("0 failed\n"), "{name}: {text}");
        assert_eq!(
            text.lines().filter(|l| l.starts_with("ok ")).count(),
            EXCEPTION_CHECKS,
            "{text}"
        );
    } else {
        let want = format!("icl {} eta* 0.879120879120879", env!("CARGO_PKG_VERSION"));
        assert!(text.starts_with(&want), "{name}: {text}");
    }
}

/// Check a program's link: the shared ones need `libicl_ffi.so` by its SONAME (found through the
/// run path, not a build path), the static ones must not need it.
fn check_link(exe: &Path, shared: bool) {
    let libs = needed(exe);
    let has = libs.iter().any(|l| l == "libicl_ffi.so");
    assert_eq!(has, shared, "{}: NEEDED {libs:?}", exe.display());
}

#[test]
fn install_then_link_as_documented_and_run() {
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
        "include/icl/progress.h",
        "include/rust/cxx.h",
        "lib/libicl_ffi.a",
        "lib/libicl_ffi.so",
        "lib/pkgconfig/icl.pc",
        "lib/pkgconfig/icl-static.pc",
        "lib/cmake/icl/iclConfig.cmake",
        "lib/cmake/icl/iclConfigVersion.cmake",
    ] {
        assert!(prefix.join(f).is_file(), "{f} not installed");
    }
    let pc_path = prefix.join("lib/pkgconfig");
    if have("pkg-config") {
        for pc in ["icl", "icl-static"] {
            let out = run(Command::new("pkg-config")
                .args(["--modversion", pc])
                .env("PKG_CONFIG_PATH", &pc_path));
            assert_eq!(
                String::from_utf8_lossy(&out.stdout).trim(),
                env!("CARGO_PKG_VERSION")
            );
        }
        let cmds = documented_link_commands();
        assert_eq!(cmds.len(), 4, "four documented link commands: {cmds:?}");
        let tests = workspace().join("ffi/tests");
        let mut built_any = [false; 4]; // C shared, C static, C++ shared, C++ static
        for (cmd, comment) in &cmds {
            let shared = !cmd.contains("icl-static");
            let cpp = cmd.starts_with("c++");
            let sources: Vec<PathBuf> = if cpp {
                let mut v = vec![tests.join("cpp/capi.cpp")];
                if !shared {
                    v.push(tests.join("cpp/exceptions.cpp")); // the C++ API: static only
                }
                v
            } else {
                vec![tests.join("c/header.c")]
            };
            for src in sources {
                let stem = src.file_stem().unwrap().to_string_lossy().to_string();
                let exe = dir.join(format!(
                    "{stem}-{}",
                    if shared { "shared" } else { "static" }
                ));
                let ext = if cpp { "app.cpp" } else { "app.c" };
                assert!(cmd.contains(ext) && cmd.contains("-o app"), "{cmd}");
                let line = cmd
                    .replace(ext, &src.display().to_string())
                    .replace("-o app", &format!("-o {}", exe.display()));
                run(Command::new("sh")
                    .arg("-c")
                    .arg(&line)
                    .env("PKG_CONFIG_PATH", &pc_path)
                    .current_dir(&dir));
                check_link(&exe, shared);
                run_program(&exe);
                eprintln!("linked and ran: {line}  ({comment})");
            }
            built_any[(cpp as usize) * 2 + (!shared) as usize] = true;
        }
        assert_eq!(built_any, [true; 4], "C and C++, shared and static");
    }
    if have("cmake") {
        let build = dir.join("cmake-link");
        run(Command::new("cmake")
            .arg("-S")
            .arg(workspace().join("ffi/tests/cmake"))
            .arg("-B")
            .arg(&build)
            .arg(format!("-DCMAKE_PREFIX_PATH={}", prefix.display())));
        run(Command::new("cmake").arg("--build").arg(&build));
        for (exe, shared) in [
            ("c_shared", true),
            ("c_static", false),
            ("cpp_shared", true),
            ("cpp_static", false),
        ] {
            let exe = build.join(exe);
            check_link(&exe, shared);
            run_program(&exe);
        }
        let build = dir.join("cmake-examples");
        run(Command::new("cmake")
            .arg("-S")
            .arg(workspace().join("examples"))
            .arg("-B")
            .arg(&build)
            .arg(format!("-DCMAKE_PREFIX_PATH={}", prefix.display())));
        run(Command::new("cmake").arg("--build").arg(&build));
        let out = run(Command::new(build.join("simulator"))
            .args(["--steps", "20", "--chunk", "10", "--set", "task.L=8"]));
        assert!(String::from_utf8_lossy(&out.stdout).contains("tick 20 "));
        check_link(&build.join("predict"), true);
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
        EXCEPTION_CHECKS,
        "{text}"
    );
}

/// A sweep file of four short quick runs (heads 1 and 2, seeds 1 and 2) in `dir`.
fn small_sweep_file(dir: &Path) -> PathBuf {
    let f = dir.join("sweep.toml");
    std::fs::write(
        &f,
        "preset = \"quick\"\nseeds = [1, 2]\n[set]\n\"train.steps\" = 60\n\"train.batch\" = 8\n[grid]\n\"model.heads\" = [1, 2]\n",
    )
    .unwrap();
    f
}

#[test]
fn cpp_eval_and_repro_are_the_clis() {
    let dir = scratch("cpp-run-layer");
    let exe = dir.join("run_layer");
    compile_cpp(&workspace().join("ffi/tests/cpp/run_layer.cpp"), &exe);
    let run_dir = cli_train(&dir.join("run"), 200, 3, "simd", &[]);
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let sweep_file = small_sweep_file(&dir);
    let text =
        String::from_utf8(run(Command::new(&exe).arg(&run_dir).arg(&out).arg(&sweep_file)).stdout)
            .unwrap();
    assert!(text.ends_with("0 failed\n"), "{text}");
    assert_eq!(
        text.lines().filter(|l| l.starts_with("ok ")).count(),
        19,
        "{text}"
    );
    // train_run: the run folder of `icl train` with the same options, byte for byte
    let cli_train = dir.join("cli-train");
    run(Command::new(&built().icl)
        .args(["train", "--preset", "quick", "--steps", "60", "--seed", "3"])
        .args(["--eval-samples", "0", "-q", "--out"])
        .arg(&cli_train));
    for f in ["model.safetensors", "metrics.csv"] {
        assert_eq!(
            std::fs::read(out.join("train").join(f)).unwrap(),
            std::fs::read(cli_train.join(f)).unwrap(),
            "{f}"
        );
    }
    assert_eq!(
        std::fs::read(out.join("train.json")).unwrap(),
        std::fs::read(out.join("train/summary.json")).unwrap()
    );
    assert!(!out.join("bad-train").exists());
    let json = |s: &[u8]| -> serde_json::Value { serde_json::from_slice(s).unwrap() };
    // eval: the rows of `icl eval DIR --json` with the same options
    let cli = run(Command::new(&built().icl)
        .args(["eval"])
        .arg(&run_dir)
        .args([
            "--lengths",
            "8,16",
            "--samples",
            "300",
            "--seed",
            "4",
            "--json",
        ]));
    let ours = json(&std::fs::read(out.join("eval.json")).unwrap());
    assert_eq!(ours, json(&cli.stdout));
    assert!(ours["rows"].as_array().unwrap().len() >= 2);
    let svg = std::fs::read_to_string(out.join("risk.svg")).unwrap();
    assert!(svg.contains("<svg") && svg.len() > 1000, "not a figure");
    // repro: the claims of `icl repro zhang2025 --only fig13-final --json`, and the reports
    let cli = run(Command::new(&built().icl)
        .args([
            "repro",
            "zhang2025",
            "--only",
            "fig13-final",
            "--quiet",
            "--json",
            "--out",
        ])
        .arg(dir.join("cli-repro")));
    let (ours, theirs) = (
        json(&std::fs::read(out.join("repro.json")).unwrap()),
        json(&cli.stdout),
    );
    assert_eq!(ours["claims"], theirs["claims"]);
    assert_eq!(ours["claims"][0]["id"], "fig13-final");
    assert_eq!(
        ours,
        json(&std::fs::read(out.join("repro/report.json")).unwrap())
    );
    assert!(out.join("repro/report.md").is_file() && out.join("repro/report.html").is_file());
    // the refused calls wrote nothing
    assert!(!out.join("bad").exists() && !out.join("bad.svg").exists());
    assert!(!out.join("no-such-sweep").exists());
    // sweeps: the plan, results and table of `icl sweep plan|run|status|collect --json`
    let cli_sweep = dir.join("cli-sweep");
    let icl = |args: &[&str]| -> serde_json::Value {
        json(&run(Command::new(&built().icl).args(args)).stdout)
    };
    let cs = cli_sweep.to_str().unwrap();
    let plan = icl(&[
        "sweep",
        "plan",
        sweep_file.to_str().unwrap(),
        "--out",
        cs,
        "--json",
    ]);
    assert_eq!(
        plan,
        json(&std::fs::read(out.join("sweep-plan.json")).unwrap())
    );
    let ran = icl(&[
        "sweep",
        "run",
        cs,
        "--jobs",
        "2",
        "--eval-samples",
        "0",
        "--json",
    ]);
    let ours = json(&std::fs::read(out.join("sweep-run.json")).unwrap());
    let status = |v: &serde_json::Value| -> Vec<(String, String)> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|r| (r["name"].to_string(), r["status"].to_string()))
            .collect()
    };
    assert_eq!(status(&ours), status(&ran));
    assert_eq!(status(&ours).len(), 4);
    assert!(
        ours[0]["status"] == "trained" && ours[3]["steps"] == 60,
        "{ours}"
    );
    // status --json prints one object per line; C++ returns them as one array
    let st = run(Command::new(&built().icl).args(["sweep", "status", cs, "--json"]));
    let lines: Vec<serde_json::Value> = String::from_utf8(st.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ours = json(&std::fs::read(out.join("sweep-status.json")).unwrap());
    assert_eq!(ours.as_array().unwrap().len(), 4);
    for (i, l) in lines.iter().enumerate() {
        assert_eq!(ours[i]["name"], l["name"]);
        assert_eq!(ours[i]["state"], "complete");
        assert_eq!(ours[i]["steps"], l["steps"]);
    }
    let table = icl(&["sweep", "collect", cs, "--json"]);
    let ours = json(&std::fs::read(out.join("sweep-collect.json")).unwrap());
    assert_eq!(ours["rows"], table["rows"]);
    assert_eq!(
        std::fs::read(out.join("sweep/results.csv")).unwrap(),
        std::fs::read(cli_sweep.join("results.csv")).unwrap()
    );
}

#[test]
fn cpp_progress_receivers_report_stop_and_throw() {
    let dir = scratch("cpp-progress");
    let exe = dir.join("progress");
    compile_cpp(&workspace().join("ffi/tests/cpp/progress.cpp"), &exe);
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let sweep_file = small_sweep_file(&dir);
    let text =
        String::from_utf8(run(Command::new(&exe).arg(&out).arg(&sweep_file)).stdout).unwrap();
    assert!(text.ends_with("0 failed\n"), "{text}");
    assert_eq!(
        text.lines().filter(|l| l.starts_with("ok ")).count(),
        8,
        "{text}"
    );
    // the run stopped by the receiver and resumed is the CLI's uninterrupted run, byte for byte
    let cli = dir.join("cli-sweep");
    let icl = |args: &[&str]| run(Command::new(&built().icl).args(args));
    icl(&[
        "sweep",
        "plan",
        sweep_file.to_str().unwrap(),
        "--out",
        cli.to_str().unwrap(),
    ]);
    icl(&[
        "sweep",
        "run",
        cli.to_str().unwrap(),
        "--eval-samples",
        "0",
        "--quiet",
    ]);
    // the first line of `icl sweep status --json`: run 0, the one the receiver stopped
    let status = icl(&["sweep", "status", cli.to_str().unwrap(), "--json"]).stdout;
    let run0: serde_json::Value =
        serde_json::from_slice(status.split(|&b| b == b'\n').next().unwrap()).unwrap();
    assert_eq!(run0["index"], 0);
    let first = run0["name"].as_str().unwrap();
    let model = |root: &Path| std::fs::read(root.join(first).join("model.safetensors")).unwrap();
    assert_eq!(model(&out.join("sweep")), model(&cli), "run {first}");
}
