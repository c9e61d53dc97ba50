//! Input the CLI must refuse rather than ignore or misread (one line `icl: error: ...`, exit 2,
//! nothing written, and where there is work to do, before it): options that change nothing or
//! the wrong thing, empty list items, output paths that cannot be written, numbers f64 cannot
//! evaluate with, and the help that says what is accepted.
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

fn icl(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_icl"))
        .args(args)
        .env_remove("ICL_SIMD")
        .output()
        .expect("run icl")
}

fn tmp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("icl-inputs-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    p
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The one line of a refused command (exit 2, nothing on stdout).
fn refused(o: &Output, what: &str) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{what}: {err}");
    assert!(err.starts_with("icl: error: "), "{what}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{what}: {err}");
    assert!(
        o.stdout.is_empty(),
        "{what}: {}",
        String::from_utf8_lossy(&o.stdout)
    );
    err
}

fn ok(o: &Output, what: &str) -> String {
    assert!(
        o.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A small trained one-layer run, shared by the tests of this file.
fn run() -> &'static Path {
    static RUN: OnceLock<PathBuf> = OnceLock::new();
    RUN.get_or_init(|| {
        let d = tmp("run");
        let r = d.join("quick");
        let o = icl(&[
            "train",
            "--preset",
            "quick",
            "--steps",
            "50",
            "--eval-samples",
            "0",
            "-q",
            "--out",
            s(&r),
        ]);
        ok(&o, "train");
        r
    })
}

/// `repro --set` of a key the paper varies between runs (the seeds of h2-seed1..3) made the
/// three runs one run while the report counted "3 of 3 seeds split"; refused, nothing written.
#[test]
fn repro_refuses_a_set_of_a_key_its_runs_vary() {
    let d = tmp("repro-set");
    let out = d.join("rp");
    let o = icl(&[
        "repro",
        "he2025",
        "--out",
        s(&out),
        "--set",
        "train.seed=5",
        "--set",
        "train.steps=20",
        "--only",
        "h2-split",
    ]);
    let e = refused(&o, "--set train.seed");
    assert!(
        e.contains("train.seed") && e.contains("h2-seed1") && e.contains("differ"),
        "{e}"
    );
    assert!(!out.exists());
    let _ = std::fs::remove_dir_all(&d);
}

/// An empty item in a comma-separated list is an error wherever lists are read, never dropped;
/// `--only ,` selected every claim (hours at paper scale).
#[test]
fn empty_list_items_are_refused_everywhere() {
    let d = tmp("lists");
    let out = d.join("rp");
    for only in [",", "", "h2-mu,,mu-gamma"] {
        let e = refused(
            &icl(&["repro", "he2025", "--out", s(&out), "--only", only]),
            only,
        );
        assert!(e.contains("empty"), "{only:?}: {e}");
    }
    assert!(!out.exists());
    let r = s(run());
    for args in [
        vec!["eval", r, "--lengths", "10,,20"],
        vec!["eval", r, "--lengths", "10,"],
        vec!["eval", r, "--tau", "1,,2"],
        vec!["eval", r, "--lambda-range", "1,,2"],
        vec!["theory", "mu-star", "--omega", "1,,2"],
        vec!["theory", "plateaus", "--eigs", "0.4,,0.1"],
    ] {
        let e = refused(&icl(&args), &format!("{args:?}"));
        assert!(
            e.contains("empty") || e.contains("MIN,MAX"),
            "{args:?}: {e}"
        );
    }
    let t = d.join("t");
    let e = refused(
        &icl(&[
            "train",
            "--preset",
            "zhang2025-fig3",
            "--set",
            "task.eigs=0.5,,0.3",
            "--out",
            s(&t),
        ]),
        "task.eigs",
    );
    assert!(e.contains("empty"), "{e}");
    assert!(!t.exists());
    let _ = std::fs::remove_dir_all(&d);
}

/// `train --resume DIR` keeps the run's own config: --preset, --config and --set were ignored
/// (even `--set bogus.key=1`), now refused; --steps still extends.
#[test]
fn resume_refuses_options_that_change_the_config() {
    let d = tmp("resume");
    let cfg = d.join("c.toml");
    std::fs::write(&cfg, "").unwrap();
    let r = s(run());
    let before = std::fs::read(run().join("model.safetensors")).unwrap();
    for extra in [
        vec!["--set", "bogus.key=1"],
        vec!["--set", "train.lr=1"],
        vec!["--preset", "nosuchpreset"],
        vec!["--preset", "he2025"],
        vec!["--config", s(&cfg)],
    ] {
        let mut args = vec!["train", "--resume", r, "--steps", "60", "-q"];
        args.extend_from_slice(&extra);
        let e = refused(&icl(&args), &format!("{extra:?}"));
        assert!(e.contains("--resume"), "{extra:?}: {e}");
    }
    assert_eq!(
        std::fs::read(run().join("model.safetensors")).unwrap(),
        before
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// Output paths that cannot be written are input errors (exit 2, not 1), found before the work,
/// and leave nothing: a figure that is a folder, a folder that does not exist (the other
/// output not written either), `--out` that is a file or cannot be created, and a run folder
/// where circuits.svg cannot be written (analyze says to use --no-plot, which works).
#[test]
fn bad_output_paths_are_refused_before_the_work() {
    let d = tmp("paths");
    let r = s(run());
    let folder = d.join("afolder");
    std::fs::create_dir_all(&folder).unwrap();
    let t0 = std::time::Instant::now();
    let e = refused(
        &icl(&[
            "eval",
            r,
            "--lengths",
            "10,20,40,100,200",
            "--samples",
            "2000000",
            "--plot",
            s(&folder),
        ]),
        "--plot a folder",
    );
    assert!(e.contains("folder"), "{e}");
    assert!(
        t0.elapsed().as_secs() < 20,
        "refused after the Monte Carlo ({:?})",
        t0.elapsed()
    );
    let csv = d.join("th.csv");
    let e = refused(
        &icl(&[
            "theory",
            "he2025-flow",
            "--t-end",
            "50",
            "--csv",
            s(&csv),
            "--svg",
            "/nonexistent/x.svg",
        ]),
        "theory --svg in a missing folder",
    );
    assert!(e.contains("/nonexistent"), "{e}");
    assert!(!csv.exists(), "the CSV was written though the SVG failed");
    let afile = d.join("afile");
    std::fs::write(&afile, "x").unwrap();
    let e = refused(
        &icl(&["repro", "he2025", "--out", s(&afile), "--only", "mu-gamma"]),
        "repro --out a file",
    );
    assert!(e.contains("afile"), "{e}");
    let e = refused(
        &icl(&[
            "train",
            "--preset",
            "quick",
            "--steps",
            "10",
            "-q",
            "--out",
            "/proc/self/x",
        ]),
        "train --out /proc/self/x",
    );
    assert!(e.contains("/proc/self"), "{e}");
    // a run folder where circuits.svg cannot be written (here: a folder stands in its place,
    // as a read-only run folder would refuse it)
    let ro = d.join("ro");
    std::fs::create_dir_all(&ro).unwrap();
    for f in ["model.safetensors", "config.toml", "summary.json"] {
        std::fs::copy(run().join(f), ro.join(f)).unwrap();
    }
    std::fs::create_dir_all(ro.join("circuits.svg")).unwrap();
    for json in [false, true] {
        let mut args = vec!["analyze", s(&ro)];
        if json {
            args.push("--json");
        }
        let e = refused(&icl(&args), "analyze");
        assert!(e.contains("circuits.svg") && e.contains("--no-plot"), "{e}");
    }
    let out = ok(
        &icl(&["analyze", s(&ro), "--json", "--no-plot"]),
        "analyze --no-plot",
    );
    assert!(out.contains("\"heads\""), "{out}");
    let _ = std::fs::remove_dir_all(&d);
}

/// Accepted numbers that f64 cannot evaluate with (a temperature of 1e-300, a noise of 1e308)
/// gave "numerical failure", exit 1; now an input error naming the value.
#[test]
fn eval_with_numbers_f64_cannot_compute_names_them() {
    let r = s(run());
    for (flag, value, name) in [
        ("--tau", "1e-300", "tau"),
        ("--shift", "noise=1e308", "noise"),
        ("--shift", "x_cov=1e308", "x_cov"),
        ("--shift", "w_cov=1e308", "w_cov"),
    ] {
        let o = icl(&[
            "eval",
            r,
            "--lengths",
            "10",
            "--samples",
            "100",
            flag,
            value,
        ]);
        let e = refused(&o, value);
        assert!(e.contains(name) && e.contains("f64"), "{value}: {e}");
    }
}

/// Options that were silently ignored: each is refused, or does what it says.
#[test]
fn options_that_were_ignored_are_refused_or_honoured() {
    let d = tmp("ignored");
    let r = s(run());
    // presets --show --json prints JSON; --keys with --show is refused
    let out = ok(&icl(&["presets", "--show", "quick", "--json"]), "show json");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert!(v["task.d"].is_number(), "{out}");
    refused(
        &icl(&["presets", "--show", "quick", "--keys"]),
        "--keys --show",
    );
    // --tau-holdout sizes --tau opt; without opt it is refused
    for n in ["0", "100"] {
        let e = refused(
            &icl(&["eval", r, "--lengths", "10", "--tau-holdout", n]),
            "--tau-holdout",
        );
        assert!(e.contains("opt"), "{e}");
    }
    // a shift key given twice
    let e = refused(
        &icl(&[
            "eval",
            r,
            "--lengths",
            "10",
            "--shift",
            "x_mean=2e1",
            "--shift",
            "x_mean=3e1",
        ]),
        "x_mean twice",
    );
    assert!(e.contains("twice"), "{e}");
    // an engine named for a run that trains on sufficient statistics
    let z = d.join("z");
    let e = refused(
        &icl(&[
            "train",
            "--preset",
            "zhang2025-fig3",
            "--engine",
            "scalar",
            "--out",
            s(&z),
        ]),
        "zhang2025-fig3 --engine scalar",
    );
    assert!(e.contains("moments"), "{e}");
    assert!(!z.exists());
    // ICL_SIMD that names no level
    let o = Command::new(env!("CARGO_BIN_EXE_icl"))
        .args(["presets"])
        .env("ICL_SIMD", "bogus")
        .output()
        .unwrap();
    let e = refused(&o, "ICL_SIMD=bogus");
    assert!(e.contains("ICL_SIMD") && e.contains("avx2"), "{e}");
    // Slurm: a time sbatch would refuse, an icl that does not exist
    let f = d.join("sweep.toml");
    std::fs::write(
        &f,
        "preset = \"quick\"\nseeds = [1]\n[set]\n\"train.steps\" = 10\n",
    )
    .unwrap();
    let sw = d.join("sw");
    ok(&icl(&["sweep", "plan", s(&f), "--out", s(&sw)]), "plan");
    for (flag, v, want) in [
        ("--time", "abc", "time limit"),
        ("--time", "1:2:3:4", "time limit"),
        ("--icl", "/nonexistent/icl", "not an executable"),
    ] {
        let e = refused(
            &icl(&["sweep", "slurm", s(&sw), flag, v]),
            &format!("{flag} {v}"),
        );
        assert!(e.contains(want), "{flag} {v}: {e}");
        assert!(!sw.join("slurm.sh").exists());
    }
    for t in ["30", "10:00", "2:00:00", "1-00", "1-00:00:00", "infinite"] {
        ok(&icl(&["sweep", "slurm", s(&sw), "--time", t]), t);
    }
    // a grid value listed twice says so
    let g = d.join("grid.toml");
    std::fs::write(&g, "preset = \"quick\"\n[grid]\n\"model.heads\" = [1, 1]\n").unwrap();
    let e = refused(
        &icl(&["sweep", "plan", s(&g), "--out", s(&d.join("sg"))]),
        "grid [1, 1]",
    );
    assert!(e.contains("listed twice"), "{e}");
    let _ = std::fs::remove_dir_all(&d);
}

/// The help states defaults and describes every option; `icl sweep` alone names its own
/// subcommands; a negative number reaches the option's own check; `theory --list NAME` lists
/// that quantity.
#[test]
fn help_and_parsing_say_what_is_accepted() {
    let h = ok(&icl(&["eval", "--help"]), "eval --help");
    assert!(h.contains("default 4096"), "{h}");
    assert!(h.contains("simd (default"), "{h}");
    for sub in [["repro", "--help"], ["sweep", "slurm"]] {
        let mut args = sub.to_vec();
        if args[1] != "--help" {
            args.push("--help");
        }
        let h = ok(&icl(&args), "help");
        for flag in ["--partition", "--cpus-per-task", "--job-name"] {
            let line = h.lines().find(|l| l.contains(flag)).unwrap();
            assert!(line.trim().len() > flag.len() + 10, "{flag}: {line:?}");
        }
    }
    for sub in ["run", "run-one", "status", "collect", "slurm"] {
        let h = ok(&icl(&["sweep", sub, "--help"]), sub);
        assert!(h.contains("The sweep folder"), "{sub}: {h}");
    }
    let e = refused(&icl(&["sweep"]), "sweep alone");
    assert!(e.contains("plan") && e.contains("collect"), "{e}");
    let h = ok(&icl(&["train", "--help"]), "train --help");
    assert!(
        h.contains("--out <OUT>") && h.contains("--resume <DIR>"),
        "{h}"
    );
    let e = refused(&icl(&["eval", s(run()), "--seed", "-5"]), "--seed -5");
    assert!(!e.contains("unexpected argument"), "{e}");
    let e = refused(
        &icl(&["train", "--steps", "-5", "--out", "/nonexistent/x"]),
        "--steps -5",
    );
    assert!(
        e.contains("-5") && !e.contains("unexpected argument"),
        "{e}"
    );
    let l = ok(&icl(&["theory", "--list", "eta-star"]), "--list eta-star");
    assert!(l.contains("eta-star") && !l.contains("mu-gamma"), "{l}");
    refused(
        &icl(&["theory", "--list", "no-such-quantity"]),
        "--list unknown",
    );
}
