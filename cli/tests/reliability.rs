//! Reliability of the `icl` binary, one test per class of failure a hostile but realistic user
//! finds: one-line errors with exit 2 for every bad input (parser errors too), sizes that would not
//! fit in memory refused with the key and the memory, nothing silently accepted, output errors
//! reported, run folders that appear complete or not at all, runs that survive kill -9 and resume
//! to the same bytes, and the same bytes for the same seed.
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn icl(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_icl"))
        .args(args)
        .output()
        .expect("run icl")
}

fn tmp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("icl-rel-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    p
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// One line `icl: error: ...` on stderr, nothing on stdout, exit code `code`.
fn one_line_error(o: &Output, code: i32, what: &str) -> String {
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(code), "{what}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{what}: {err}");
    assert!(err.starts_with("icl: error: "), "{what}: {err}");
    assert!(
        o.stdout.is_empty(),
        "{what}: stdout {:?}",
        String::from_utf8_lossy(&o.stdout)
    );
    err
}

/// Files in a folder, hidden ones included.
fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|r| {
            r.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn class1_argument_errors_are_one_line_exit_2() {
    let d = tmp("c1");
    let out = d.join("run");
    let file = d.join("file.txt");
    std::fs::write(&file, "x").unwrap();
    for args in [
        vec!["train", "--nope"],
        vec!["train", "--steps"],
        vec!["train", "--steps", "-1", "--out", s(&out)],
        vec!["train", "--steps", "ten", "--out", s(&out)],
        vec![],
        vec!["frobnicate"],
        vec!["train", "--config", s(&d), "--out", s(&out)],
        vec!["eval", s(&file)],
        vec!["analyze", s(&file)],
    ] {
        one_line_error(&icl(&args), 2, &format!("{args:?}"));
    }
    let e = one_line_error(&icl(&["eval", s(&file)]), 2, "eval FILE");
    assert!(e.contains("is a file"), "{e}");
    // import --out an existing file
    let o = icl(&["import", "--torch", s(&file), "--out", s(&file)]);
    one_line_error(&o, 2, "import --out FILE");
    assert_eq!(entries(&d), ["file.txt"]);
    // --help and --version are not errors
    assert!(icl(&["--help"]).status.success());
    assert!(icl(&["train", "--help"]).status.success());
    assert!(icl(&["--version"]).status.success());
}

#[test]
fn class2_huge_sizes_are_refused_with_the_key_and_the_memory() {
    let d = tmp("c2");
    let out = d.join("run");
    for (args, needle) in [
        (vec!["--set", "task.L=1000000000"], "task.L"),
        (vec!["--set", "train.batch=1000000000"], "train.batch"),
        (
            vec!["--set", "task.d=4096", "--set", "model.heads=1024"],
            "GiB",
        ),
        (vec!["--set", "task.L=5000000"], "GiB"),
        (
            vec!["--preset", "zhang2025-fig3", "--set", "task.P=1000000000"],
            "task.P",
        ),
    ] {
        let mut a = vec!["train", "--out", s(&out)];
        a.extend(args.iter().copied());
        let e = one_line_error(&icl(&a), 2, &format!("{args:?}"));
        assert!(e.contains(needle), "{args:?}: {e}");
    }
    for args in [
        vec!["theory", "sigma-tilde", "--d", "100000"],
        vec!["bench", "--lens", "1000000000", "--steps", "1"],
        vec!["bench", "--threads", "100000", "--steps", "1"],
    ] {
        one_line_error(&icl(&args), 2, &format!("{args:?}"));
    }
    // eval at a length that would need too much memory
    let run = d.join("small");
    assert!(icl(&[
        "train",
        "--preset",
        "quick",
        "--steps",
        "5",
        "--eval-samples",
        "0",
        "-q",
        "--out",
        s(&run)
    ])
    .status
    .success());
    one_line_error(
        &icl(&["eval", s(&run), "--lengths", "1000000000"]),
        2,
        "eval huge L",
    );
    assert_eq!(entries(&d), ["small"]);
}

/// The size audit: in-range sizes that aborted the process (an allocation of hundreds of GB) or
/// ran without bound are refused at once, one line naming the parameter, exit 2, nothing written.
#[test]
fn class2_in_range_sizes_within_the_budget_or_refused_at_once() {
    let d = tmp("c2budget");
    let quick = |out: &Path, extra: &[&str]| {
        let mut a = vec![
            "train",
            "--preset",
            "quick",
            "--steps",
            "5",
            "-q",
            "--out",
            s(out),
        ];
        a.extend(extra);
        icl(&a)
    };
    let run = d.join("q1");
    assert!(quick(&run, &["--eval-samples", "0"]).status.success());
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![
                "theory",
                "bayes-risk-mc",
                "--n",
                "2",
                "--d",
                "4096",
                "--L",
                "10000000",
            ],
            "L x d",
        ),
        (
            vec![
                "theory", "iv-risk", "--n", "2", "--q", "4096", "--p", "4096", "--L", "10000000",
            ],
            "--L",
        ),
        (
            vec![
                "theory",
                "he2025-gd",
                "--omega",
                "1",
                "--mu",
                "1",
                "--steps",
                "1000000000",
                "--every",
                "1",
            ],
            "--steps",
        ),
        (
            vec![
                "theory",
                "white-loss",
                "--t",
                "1e300",
                "--sample-dt",
                "1e-300",
            ],
            "--sample-dt",
        ),
        (
            vec![
                "theory",
                "linattn-flow",
                "--eigs",
                "1,0.5",
                "--t-end",
                "1e9",
                "--every",
                "1",
            ],
            "--t-end / --dt",
        ),
        (
            vec!["theory", "he2025-flow", "--t-end", "1e308"],
            "--t-end / --dt",
        ),
        (
            vec!["theory", "he2025-flow", "--dt", "1e-300"],
            "--t-end / --dt",
        ),
        (
            vec!["eval", s(&run), "--samples", "100000000000"],
            "samples",
        ),
        (
            vec![
                "eval",
                s(&run),
                "--samples",
                "100",
                "--tau",
                "opt",
                "--tau-holdout",
                "100000000000",
            ],
            "tau_holdout",
        ),
    ];
    for (args, needle) in &cases {
        let t0 = Instant::now();
        let e = one_line_error(&icl(args), 2, &format!("{args:?}"));
        assert!(
            e.contains("too large") && e.contains(needle),
            "{args:?}: {e}"
        );
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "{args:?} took {:?}",
            t0.elapsed()
        );
    }
    // --stack 30000 used 2.4 GB, --stack 100000 aborted
    let ml = d.join("ml");
    let o = icl(&[
        "train",
        "--preset",
        "multilayer-t2",
        "--steps",
        "3",
        "--eval-samples",
        "0",
        "-q",
        "--out",
        s(&ml),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for k in ["30000", "100000"] {
        let e = one_line_error(
            &icl(&["eval", s(&ml), "--stack", k, "--lengths", "40"]),
            2,
            k,
        );
        assert!(e.contains("too large") && e.contains("--stack"), "{e}");
    }
    // long lengths within the layer limit: the engine's per-layer buffers count
    let e = one_line_error(
        &icl(&["eval", s(&ml), "--stack", "500", "--lengths", "1000000"]),
        2,
        "stack x length",
    );
    assert!(e.contains("too large") && e.contains("memory"), "{e}");
    // the final evaluation's samples are checked before training, not after it
    let late = d.join("late");
    let t0 = Instant::now();
    let o = icl(&[
        "train",
        "--preset",
        "quick",
        "--steps",
        "1000000",
        "--eval-samples",
        "100000000000",
        "-q",
        "--out",
        s(&late),
    ]);
    let e = one_line_error(&o, 2, "train --eval-samples");
    assert!(e.contains("eval_samples"), "{e}");
    assert!(t0.elapsed() < Duration::from_secs(20));
    assert_eq!(entries(&d), ["ml", "q1"]);
}

/// Peak resident memory of a child process (`wait4`'s rusage), in bytes, and its exit status.
fn peak_rss(mut cmd: Command) -> (u64, i32) {
    // reaped by the `wait4` below, which also returns the child's rusage
    #[allow(clippy::zombie_processes)]
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (mut status, mut ru) = (0, unsafe { std::mem::zeroed::<libc::rusage>() });
    // SAFETY: waiting for our own child with valid out-pointers.
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut ru) };
    assert_eq!(pid, child.id() as libc::pid_t);
    (ru.ru_maxrss as u64 * 1024, libc::WEXITSTATUS(status))
}

/// `Config::memory_estimate` bounds the measured peak of `icl train` (SIMD and scalar engines,
/// the final checkpoint write included) and of `icl bench`; before, it counted 4 values a
/// parameter and missed the checkpoint's copies and the SIMD engine's lane gradients (this shape:
/// 0.17 GB estimated against about 0.3 GB used).
#[test]
fn class2_the_memory_estimate_bounds_the_measured_peak() {
    let d = tmp("c2peak");
    let sets = [
        ("model.heads", "64"),
        ("task.d", "100"),
        ("train.batch", "64"),
        ("train.dtype", "f64"),
        ("train.steps", "2"),
    ];
    let mut cfg = icl_core::presets::preset("quick").unwrap();
    for (k, v) in sets {
        cfg.set(k, v).unwrap();
    }
    let (est, _) = cfg.memory_estimate().unwrap();
    let set_args: Vec<String> = sets.iter().map(|(k, v)| format!("{k}={v}")).collect();
    for engine in ["simd", "scalar"] {
        let mut c = Command::new(env!("CARGO_BIN_EXE_icl"));
        c.args([
            "train",
            "--preset",
            "quick",
            "-q",
            "--eval-samples",
            "0",
            "--engine",
            engine,
        ]);
        c.arg("--out").arg(d.join(engine));
        for a in &set_args {
            c.args(["--set", a]);
        }
        let (peak, code) = peak_rss(c);
        assert_eq!(code, 0, "{engine}");
        assert!(
            peak <= est,
            "{engine}: peak {peak} above the estimate {est}"
        );
        eprintln!(
            "train, {engine}: peak {:.3} GB, estimate {:.3} GB",
            peak as f64 / 1e9,
            est as f64 / 1e9
        );
    }
    let mut bench = icl_core::presets::preset("he2025").unwrap();
    bench.set("model.heads", "64").unwrap();
    bench.set("task.d", "100").unwrap();
    bench.set("train.steps", "70").unwrap();
    let (est, _) = bench.memory_estimate().unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_icl"));
    c.args([
        "bench",
        "--heads",
        "64",
        "--set",
        "task.d=100",
        "--threads",
        "1",
        "--steps",
        "50",
    ]);
    c.args(["--max-seconds", "0.2", "--no-split"]);
    let (peak, code) = peak_rss(c);
    assert_eq!(code, 0);
    assert!(peak <= est, "bench: peak {peak} above the estimate {est}");
    eprintln!(
        "bench: peak {:.3} GB, estimate {:.3} GB",
        peak as f64 / 1e9,
        est as f64 / 1e9
    );
}

/// Input files are read up to a limit per kind: a device that never ends (`/dev/zero`) is refused
/// after a bounded read, not read until the memory runs out.
#[test]
fn class2_endless_input_files_are_refused() {
    let d = tmp("c2files");
    let out = d.join("run");
    for (args, needle) in [
        (
            vec!["train", "--config", "/dev/zero", "--out", s(&out)],
            "/dev/zero",
        ),
        (vec!["embedded", "--checkpoint", "/dev/zero"], "/dev/zero"),
    ] {
        let t0 = Instant::now();
        let e = one_line_error(&icl(&args), 2, &format!("{args:?}"));
        assert!(e.contains(needle), "{args:?}: {e}");
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "{args:?} took {:?}",
            t0.elapsed()
        );
    }
    assert_eq!(entries(&d), Vec::<String>::new());
}

/// Before training starts (the config read from a pipe that nobody writes, then checked), a first
/// SIGTERM or SIGINT ends the process at once, by the signal (status 143 / 130 in a shell).
#[test]
fn class6_a_signal_before_training_ends_the_process() {
    use std::os::unix::process::ExitStatusExt;
    let d = tmp("c6early");
    for (name, sig) in [("term", libc::SIGTERM), ("int", libc::SIGINT)] {
        let fifo = d.join(format!("{name}.toml"));
        let c = std::ffi::CString::new(s(&fifo)).unwrap();
        // SAFETY: a plain mkfifo on a path we own.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let mut child = Command::new(env!("CARGO_BIN_EXE_icl"))
            .args([
                "train",
                "--config",
                s(&fifo),
                "-q",
                "--out",
                s(&d.join(name)),
            ])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(500));
        // SAFETY: signalling our own child process.
        unsafe { libc::kill(child.id() as libc::pid_t, sig) };
        let t0 = Instant::now();
        let status = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break st;
            }
            if t0.elapsed() > Duration::from_secs(10) {
                let _ = child.kill();
                panic!("{name}: still running 10 s after the signal");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(status.signal(), Some(sig), "{name}: {status:?}");
    }
    assert!(!d.join("term").exists() && !d.join("int").exists());
}

#[test]
fn class3_nothing_is_silently_accepted() {
    let d = tmp("c3");
    let cfg = d.join("dup.toml");
    std::fs::write(&cfg, "[task]\nd = 3\nd = 4\n").unwrap();
    let out = d.join("run");
    one_line_error(
        &icl(&["train", "--config", s(&cfg), "--out", s(&out)]),
        2,
        "duplicate key",
    );
    std::fs::write(&cfg, "[task]\nd = 3\n[task]\nL = 4\n").unwrap();
    one_line_error(
        &icl(&["train", "--config", s(&cfg), "--out", s(&out)]),
        2,
        "duplicate section",
    );
    let run = d.join("small");
    assert!(icl(&[
        "train",
        "--preset",
        "quick",
        "--steps",
        "5",
        "--eval-samples",
        "0",
        "-q",
        "--out",
        s(&run)
    ])
    .status
    .success());
    for l in ["", ",,,", "0", "-3"] {
        one_line_error(
            &icl(&["eval", s(&run), "--lengths", l]),
            2,
            &format!("--lengths {l:?}"),
        );
    }
    for args in [
        vec!["theory", "gd-risk-asymptotic", "--xi", "-1"],
        vec!["theory", "sigma-tilde", "--rho", "5"],
        vec![
            "bench",
            "--max-seconds",
            "nan",
            "--steps",
            "1",
            "--heads",
            "1",
            "--dtypes",
            "f32",
            "--threads",
            "1",
        ],
    ] {
        one_line_error(&icl(&args), 2, &format!("{args:?}"));
    }
}

#[test]
fn class4_output_errors_are_reported() {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full");
    let Ok(full) = full else {
        eprintln!("no /dev/full here: nothing to check");
        return;
    };
    for args in [
        vec!["presets"],
        vec!["presets", "--keys"],
        vec!["theory", "eta-star"],
        vec!["theory", "--list"],
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_icl"))
            .args(&args)
            .stdout(full.try_clone().unwrap())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{args:?}: {:?}", o.status);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.starts_with("icl: error: ") && err.contains("stdout"),
            "{args:?}: {err}"
        );
    }
    // commands that read or write a run folder: a trained run evaluated, analysed and trained
    // again with stdout on a full device report the lost output (exit 1) and write nothing wrong
    let d = tmp("c4");
    let run = d.join("run");
    assert!(train(&run, &["--steps", "50"]).status.success());
    let again = d.join("again");
    for args in [
        vec!["eval", s(&run), "--lengths", "8", "--samples", "100"],
        vec![
            "eval",
            s(&run),
            "--lengths",
            "8",
            "--samples",
            "100",
            "--json",
        ],
        vec!["analyze", s(&run)],
        vec!["analyze", s(&run), "--json"],
        vec![
            "train",
            "--preset",
            "quick",
            "--steps",
            "50",
            "--eval-samples",
            "0",
            "-q",
            "--out",
            s(&again),
        ],
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_icl"))
            .args(&args)
            .stdout(full.try_clone().unwrap())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{args:?}: {:?}", o.status);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.starts_with("icl: error: ") && err.contains("stdout") && !err.contains("panicked"),
            "{args:?}: {err}"
        );
    }
    // the run trained with its stdout lost is nonetheless complete (only the path it prints was lost)
    let a = Command::new(env!("CARGO_BIN_EXE_icl"))
        .args(["analyze", s(&again), "--json"])
        .output()
        .unwrap();
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    // a closed pipe stays quiet
    let mut child = Command::new(env!("CARGO_BIN_EXE_icl"))
        .args(["theory", "--list"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The quick preset: what `train`, `train_lasting` and `train_with_kills` run unless told otherwise.
const QUICK: &[&str] = &["--preset", "quick"];
/// A small looped two-layer transformer (multilayer paper).
const MULTILAYER: &[&str] = &[
    "--preset",
    "multilayer-t2",
    "--set",
    "task.L=8",
    "--set",
    "train.batch=4",
];
/// A small two-block IV model (multilayer paper §5).
const IV: &[&str] = &[
    "--preset",
    "iv-2stage",
    "--set",
    "task.L=8",
    "--set",
    "train.batch=4",
];

fn train(out: &Path, extra: &[&str]) -> Output {
    train_as(QUICK, out, extra)
}

/// Train `what` (a preset and its `--set`s) into `out`, quietly, without the final evaluation.
fn train_as(what: &[&str], out: &Path, extra: &[&str]) -> Output {
    let mut a = vec!["train"];
    a.extend_from_slice(what);
    a.extend(["--eval-samples", "0", "-q", "--out", s(out)]);
    a.extend_from_slice(extra);
    icl(&a)
}

/// Train the quick preset into `out` for at least `base` steps and at least `secs` seconds here:
/// `base` steps first, then, if that was quicker (an optimised build, a fast machine), again with
/// `base` times the shortfall into a fresh folder. Returns the steps of the run in `out`. The tests
/// that kill or signal a run mid-way need it to last longer than their delays.
fn train_lasting(out: &Path, base: u64, secs: f64) -> u64 {
    train_lasting_as(QUICK, out, base, secs)
}

/// [`train_lasting`] of `what`.
fn train_lasting_as(what: &[&str], out: &Path, base: u64, secs: f64) -> u64 {
    let t0 = Instant::now();
    let o = train_as(what, out, &["--steps", &base.to_string()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let t = t0.elapsed().as_secs_f64();
    if t >= secs {
        return base;
    }
    let steps = base * (secs / t).ceil() as u64;
    std::fs::remove_dir_all(out).unwrap();
    assert!(train_as(what, out, &["--steps", &steps.to_string()])
        .status
        .success());
    steps
}

#[test]
fn class5_run_folders_are_transactional() {
    let d = tmp("c5");
    let out = d.join("run");
    assert!(train(&out, &["--steps", "200"]).status.success());
    // files of the earlier run (analyze's circuits.svg) do not survive --force
    assert!(icl(&["analyze", s(&out)]).status.success());
    assert!(out.join("circuits.svg").is_file());
    assert!(train(
        &out,
        &[
            "--steps",
            "100",
            "--force",
            "--set",
            "train.snapshot_every=0"
        ]
    )
    .status
    .success());
    assert!(!out.join("circuits.svg").exists());
    assert!(!out.join("snapshots.safetensors").exists());
    assert_eq!(entries(&d), ["run"], "no staging or temporary files left");
    // two processes writing one new folder: the second is refused while the first runs
    let both = d.join("both");
    let mut first = Command::new(env!("CARGO_BIN_EXE_icl"))
        .args([
            "train",
            "--preset",
            "quick",
            "--steps",
            "200000",
            "--eval-samples",
            "0",
            "-q",
            "--out",
            s(&both),
        ])
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(400));
    let o = train(&both, &["--steps", "10"]);
    let e = one_line_error(&o, 2, "second writer");
    assert!(e.contains("another icl process"), "{e}");
    first.kill().unwrap();
    first.wait().unwrap();
    assert!(!both.exists(), "a killed run leaves no half folder");
}

/// The TensorBoard event files of the run in `out` hold each `metrics.csv` row once, in step
/// order, with its loss (as f32); their wall times differ between runs, so no test compares
/// their bytes (they are outside the same-bytes guarantee).
fn events_match_metrics(out: &Path, what: &str) {
    let csv = std::fs::read_to_string(out.join("metrics.csv")).unwrap();
    let rows: Vec<(i64, f64)> = csv
        .lines()
        .skip(1)
        .map(|l| {
            let mut f = l.split(',');
            let step = f.next().unwrap().parse().unwrap();
            (step, f.next().unwrap().parse().unwrap())
        })
        .collect();
    let events: Vec<(i64, f32)> = icl_core_run::tensorboard::read_run(out)
        .unwrap_or_else(|e| panic!("{what}: {e}"))
        .into_iter()
        .filter_map(|e| Some((e.step, e.value("train/loss")?)))
        .collect();
    assert_eq!(
        events.iter().map(|e| e.0).collect::<Vec<_>>(),
        rows.iter().map(|r| r.0).collect::<Vec<_>>(),
        "{what}: the event steps are not metrics.csv's"
    );
    for ((step, x), (_, loss)) in events.iter().zip(&rows) {
        assert!(
            (f64::from(*x) - loss).abs() <= 1e-6 * loss.abs(),
            "{what}: step {step}: loss {x} in the events, {loss} in metrics.csv"
        );
    }
}

/// Train `what` into `out`, killing the process (SIGKILL) after each of `kills` delays and
/// continuing with `--resume` (or afresh when the kill came before anything was written), until
/// done. Returns how many kills hit a running process.
fn train_with_kills(what: &[&str], out: &Path, steps: &str, kills: &[u64]) -> usize {
    let mut fresh = vec!["train"];
    fresh.extend_from_slice(what);
    fresh.extend([
        "--steps",
        steps,
        "--eval-samples",
        "0",
        "-q",
        "--checkpoint-every",
        "37",
        "--out",
        s(out),
    ]);
    let resume = vec![
        "train",
        "--resume",
        s(out),
        "-q",
        "--eval-samples",
        "0",
        "--checkpoint-every",
        "37",
    ];
    let staging = out.with_file_name(format!(
        ".{}.partial",
        out.file_name().unwrap().to_string_lossy()
    ));
    let args = || {
        if staging.exists() || out.exists() {
            resume.clone()
        } else {
            fresh.clone()
        }
    };
    let mut hits = 0;
    for &ms in kills {
        let mut child = Command::new(env!("CARGO_BIN_EXE_icl"))
            .args(args())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(ms));
        if child.try_wait().unwrap().is_none() {
            hits += 1;
        }
        let _ = child.kill();
        child.wait().unwrap();
        if out.join("model.safetensors").is_file() {
            return hits;
        }
    }
    let o = icl(&args());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    hits
}

/// The files of finished runs in `a` and `b` are the same, and equal byte for byte but for the
/// summary (its timings) and the figures (titled with the run's folder); `what` names the case.
fn same_run_files(a: &Path, b: &Path, what: &str) {
    // TensorBoard event files carry wall times and one file per session (their names differ):
    // outside the same-bytes guarantee, their rows are checked against metrics.csv instead
    let data_files = |p: &Path| -> Vec<String> {
        entries(p)
            .into_iter()
            .filter(|f| !f.starts_with(icl_core_run::tensorboard::FILE_PREFIX))
            .collect()
    };
    let files = data_files(a);
    assert_eq!(files, data_files(b), "{what}: other files");
    events_match_metrics(b, what);
    let data: Vec<String> = files
        .into_iter()
        .filter(|f| f != "summary.json" && !f.ends_with(".svg"))
        .collect();
    for f in ["model.safetensors", "metrics.csv", "config.toml"] {
        assert!(data.iter().any(|d| d == f), "{what}: no {f} in {data:?}");
    }
    for f in data {
        assert_eq!(
            std::fs::read(a.join(&f)).unwrap(),
            std::fs::read(b.join(&f)).unwrap(),
            "{what}: {f} differs"
        );
    }
}

#[test]
fn class6_kill_9_at_random_instants_then_resume_gives_the_same_bytes() {
    let d = tmp("c6");
    let straight = d.join("straight");
    // the kills come after 80 to 780 ms
    let steps = train_lasting(&straight, 6000, 2.0).to_string();
    // instants from a fixed pseudo-random sequence (kill timing itself is what varies)
    let mut x: u64 = 0x9E3779B97F4A7C15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        80 + x % 700
    };
    for trial in 0..3 {
        let out = d.join(format!("killed{trial}"));
        let kills: Vec<u64> = (0..3).map(|_| next()).collect();
        let hits = train_with_kills(QUICK, &out, &steps, &kills);
        let temps: Vec<String> = entries(&out)
            .into_iter()
            .filter(|e| e.contains(".tmp-"))
            .collect();
        assert!(
            temps.is_empty(),
            "trial {trial}: temporaries of killed writers in the run: {temps:?}"
        );
        assert!(
            hits >= 1,
            "trial {trial}: no kill hit a running process ({kills:?} ms)"
        );
        for f in [
            "model.safetensors",
            "metrics.csv",
            "snapshots.safetensors",
            "config.toml",
        ] {
            assert_eq!(
                std::fs::read(straight.join(f)).unwrap(),
                std::fs::read(out.join(f)).unwrap(),
                "trial {trial} (kills after {kills:?} ms): {f} differs"
            );
        }
        // the event files are not compared byte for byte (wall times): their rows are checked
        events_match_metrics(&out, &format!("trial {trial} (kills after {kills:?} ms)"));
    }
    // extending a finished run equals training the longer run at once
    let longer = d.join("longer");
    let more = (steps.parse::<u64>().unwrap() + 1000).to_string();
    assert!(train(&longer, &["--steps", &more]).status.success());
    let o = icl(&[
        "train",
        "--resume",
        s(&straight),
        "--steps",
        &more,
        "-q",
        "--eval-samples",
        "0",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        std::fs::read(longer.join("model.safetensors")).unwrap(),
        std::fs::read(straight.join("model.safetensors")).unwrap()
    );
    events_match_metrics(&straight, "the extended run");
    let hidden: Vec<String> = entries(&d)
        .into_iter()
        .filter(|e| e.starts_with('.'))
        .collect();
    assert!(hidden.is_empty(), "left behind: {hidden:?}");
}

/// Multi-layer transformers and the IV model survive kill -9 too: killed at fixed instants,
/// then resumed, a small looped transformer and a small two-block IV model end with the bytes of
/// the uninterrupted run (parameters, optimiser state through the trajectory, metrics).
#[test]
fn class6_multilayer_and_iv_runs_survive_kill_9() {
    let d = tmp("c6ml");
    for (name, what) in [("multilayer", MULTILAYER), ("iv", IV)] {
        let straight = d.join(format!("{name}-straight"));
        // the kills come after 150 and 450 ms
        let steps = train_lasting_as(what, &straight, 400, 1.0).to_string();
        let out = d.join(format!("{name}-killed"));
        let hits = train_with_kills(what, &out, &steps, &[150, 450]);
        assert!(hits >= 1, "{name}: no kill hit a running process");
        let temps: Vec<String> = entries(&out)
            .into_iter()
            .filter(|e| e.contains(".tmp-"))
            .collect();
        assert!(
            temps.is_empty(),
            "{name}: temporaries in the run: {temps:?}"
        );
        same_run_files(&straight, &out, name);
    }
    let hidden: Vec<String> = entries(&d)
        .into_iter()
        .filter(|e| e.starts_with('.'))
        .collect();
    assert!(hidden.is_empty(), "left behind: {hidden:?}");
}

/// A full disk. Two ways, both checked where possible: a 512 KiB tmpfs (mounted when the test runs
/// as root), which the space check before training refuses; and a write that fails half-way
/// through the run (RLIMIT_FSIZE: a write past 256 KiB fails with EFBIG, as on a disk that fills
/// up while the run writes its snapshots). One line, exit 2 for the refusal before training and 1
/// for the failure while running (the CLI's runtime-failure code), and the destination holds no
/// partial run; a staging folder stays only when it holds a checkpoint to resume from.
#[test]
fn class5_a_full_disk_leaves_no_partial_run() {
    let d = tmp("c5full");
    let train_into = |out: &Path, fsize: Option<u64>, every: &str| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_icl"));
        // snapshots every 2 steps make the run's files (and later checkpoints) larger than the limit
        cmd.args([
            "train",
            "--preset",
            "quick",
            "--steps",
            "2000",
            "--eval-samples",
            "0",
            "-q",
            "--set",
            "train.snapshot_every=2",
            "--checkpoint-every",
            every,
            "--out",
            s(out),
        ]);
        if let Some(limit) = fsize {
            use std::os::unix::process::CommandExt;
            // SAFETY: only async-signal-safe calls between fork and exec.
            unsafe {
                cmd.pre_exec(move || {
                    libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                    let lim = libc::rlimit {
                        rlim_cur: limit,
                        rlim_max: limit,
                    };
                    if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        cmd.output().unwrap()
    };
    // a write fails half-way
    let half = d.join("half");
    std::fs::create_dir_all(&half).unwrap();
    let o = train_into(&half.join("run"), Some(256 * 1024), "0");
    let e = one_line_error(&o, 1, "a write fails half-way");
    assert!(e.contains("too large"), "{e}");
    assert_eq!(
        entries(&half),
        Vec::<String>::new(),
        "left after a failed write"
    );
    // ... after a checkpoint: nothing is lost, the error says how to continue, and the run
    // continued once there is room ends with the same bytes as a run that never failed
    let kept = d.join("kept");
    std::fs::create_dir_all(&kept).unwrap();
    let run = kept.join("run");
    let o = train_into(&run, Some(256 * 1024), "500");
    let e = one_line_error(&o, 1, "a write fails after a checkpoint");
    assert!(
        e.contains("too large") && e.contains("checkpointed at step") && e.contains("--resume"),
        "{e}"
    );
    assert_eq!(entries(&kept), [".run.partial"]);
    let r = icl(&["train", "--resume", s(&run), "-q", "--eval-samples", "0"]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let straight = d.join("straight");
    let o = train_into(&straight, None, "500");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for f in ["model.safetensors", "metrics.csv", "snapshots.safetensors"] {
        assert_eq!(
            std::fs::read(straight.join(f)).unwrap(),
            std::fs::read(run.join(f)).unwrap(),
            "{f} differs after the resumed run"
        );
    }
    // a disk too small from the start
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("not root: the tmpfs case is not run");
        return;
    }
    let disk = d.join("disk");
    std::fs::create_dir_all(&disk).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=512k", "tmpfs", s(&disk)])
        .status()
        .map(|st| st.success())
        .unwrap_or(false);
    if !mounted {
        eprintln!(
            "mount -t tmpfs failed (a container without CAP_SYS_ADMIN?): the tmpfs case is not run"
        );
        return;
    }
    let o = train_into(&disk.join("run"), None, "0");
    let left = entries(&disk);
    let _ = Command::new("umount").arg(s(&disk)).status();
    let e = one_line_error(&o, 2, "full disk");
    assert!(e.contains("not enough disk space"), "{e}");
    assert_eq!(left, Vec::<String>::new(), "left on the full disk");
}

/// SIGTERM (a cluster's time limit) and SIGINT (Ctrl-C) during training: the run checkpoints, says
/// how to continue (exit 130), and `--resume` ends with the same bytes as the uninterrupted run.
/// A checkpoint cadence in minutes alone (--checkpoint-every 0) also saves an interrupted run from
/// kill -9.
#[test]
fn class6_sigterm_and_sigint_checkpoint_and_the_minute_cadence_survives_kill_9() {
    let d = tmp("c6sig");
    let straight = d.join("straight");
    // the signals come after 0.7 s, the kill after 1.5 s
    let steps = train_lasting(&straight, 60000, 4.0).to_string();
    let files = [
        "model.safetensors",
        "metrics.csv",
        "snapshots.safetensors",
        "config.toml",
    ];
    let resume = |out: &Path| icl(&["train", "--resume", s(out), "-q", "--eval-samples", "0"]);
    for (name, sig) in [("term", libc::SIGTERM), ("int", libc::SIGINT)] {
        let out = d.join(name);
        let child = Command::new(env!("CARGO_BIN_EXE_icl"))
            .args([
                "train",
                "--preset",
                "quick",
                "--steps",
                &steps,
                "--eval-samples",
                "0",
                "-q",
                "--out",
                s(&out),
            ])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(700));
        // SAFETY: signalling our own child process.
        unsafe { libc::kill(child.id() as libc::pid_t, sig) };
        let o = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        if o.status.success() {
            panic!("{name}: the run finished before the signal (make it longer): {err}");
        }
        assert_eq!(o.status.code(), Some(130), "{name}: {err}");
        assert!(
            err.contains("interrupted at step") && err.contains("--resume"),
            "{name}: {err}"
        );
        let r = resume(&out);
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        for f in files {
            assert_eq!(
                std::fs::read(straight.join(f)).unwrap(),
                std::fs::read(out.join(f)).unwrap(),
                "{name}: {f} differs after resume"
            );
        }
    }
    // the minute cadence alone: checkpoints every 0.3 s, kill -9 after 1.5 s
    let out = d.join("minutes");
    let mut child = Command::new(env!("CARGO_BIN_EXE_icl"))
        .args([
            "train",
            "--preset",
            "quick",
            "--steps",
            &steps,
            "--eval-samples",
            "0",
            "-q",
            "--checkpoint-every",
            "0",
            "--checkpoint-minutes",
            "0.005",
            "--out",
            s(&out),
        ])
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the run finished before the kill (make it longer)"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    // the kill found a checkpoint past step 0, written by the minute cadence alone
    let ckpt = d.join(".minutes.partial").join("checkpoint.safetensors");
    let bytes = std::fs::read(&ckpt).expect("a checkpoint written by the minute cadence");
    let (_, meta) = safetensors::SafeTensors::read_metadata(&bytes).unwrap();
    let step: u64 = meta.metadata().as_ref().unwrap()["step"].parse().unwrap();
    assert!(
        step > 0 && step < steps.parse().unwrap(),
        "checkpoint at step {step}"
    );
    // training into the folder again without --resume is refused, nothing touched, and the
    // error names the command that continues it
    let again = icl(&["train", "--preset", "quick", "-q", "--out", s(&out)]);
    let err = String::from_utf8_lossy(&again.stderr).to_string();
    assert_eq!(again.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("icl train --resume {}", out.display())),
        "{err}"
    );
    assert_eq!(
        std::fs::read(&ckpt).unwrap(),
        bytes,
        "the refusal touched the checkpoint"
    );
    let r = resume(&out);
    let err = String::from_utf8_lossy(&r.stderr).to_string();
    assert!(r.status.success(), "{err}");
    for f in files {
        assert_eq!(
            std::fs::read(straight.join(f)).unwrap(),
            std::fs::read(out.join(f)).unwrap(),
            "minute cadence: {f} differs after resume"
        );
    }
}

/// A second signal while the run stops (the first asks it to checkpoint at the next step) ends
/// the process at once, by the signal, not by exit 130 after the checkpoint; what it leaves is
/// complete or absent: `--resume` continues from the last cadence checkpoint to the bytes of the
/// uninterrupted run. The two signals are SIGINT and SIGTERM sent back to back (two of one kind
/// pending together would merge into one); a run that finished its checkpoint and exited in the
/// microseconds between them is tried again, up to three times.
#[test]
fn class6_a_second_signal_ends_the_process_at_once() {
    use std::os::unix::process::ExitStatusExt;
    let d = tmp("c6twice");
    let straight = d.join("straight");
    // the signals come after 0.7 s
    let steps = train_lasting(&straight, 20000, 2.0).to_string();
    let out = d.join("run");
    let mut outcome = Vec::new();
    let mut by_signal = false;
    for _ in 0..3 {
        let _ = std::fs::remove_dir_all(&out);
        let _ = std::fs::remove_dir_all(d.join(".run.partial"));
        let mut child = Command::new(env!("CARGO_BIN_EXE_icl"))
            .args([
                "train",
                "--preset",
                "quick",
                "--steps",
                &steps,
                "--eval-samples",
                "0",
                "-q",
                "--checkpoint-every",
                "37",
                "--out",
                s(&out),
            ])
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(700));
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run finished before the signals (make it longer)"
        );
        let pid = child.id() as libc::pid_t;
        // SAFETY: signalling our own child process (not yet waited for, so the pid is its).
        unsafe {
            libc::kill(pid, libc::SIGINT);
            libc::kill(pid, libc::SIGTERM);
        }
        let t0 = Instant::now();
        let status = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break st;
            }
            if t0.elapsed() > Duration::from_secs(10) {
                let _ = child.kill();
                panic!("still running 10 s after the second signal");
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        outcome.push(format!("{status:?} after {:?}", t0.elapsed()));
        if let Some(sig) = status.signal() {
            assert!(sig == libc::SIGINT || sig == libc::SIGTERM, "{status:?}");
            // at once: no step, checkpoint or output after the second signal
            assert!(
                t0.elapsed() < Duration::from_secs(2),
                "ended {:?} after the signals",
                t0.elapsed()
            );
            by_signal = true;
            break;
        }
        assert_eq!(status.code(), Some(130), "{status:?}");
    }
    assert!(
        by_signal,
        "three runs checkpointed and exited 130 despite a second signal: {outcome:?}"
    );
    assert!(!out.exists(), "a killed run leaves no half folder");
    // the staging folder's checkpoint (the cadence's, every 37 steps) is whole
    let bytes = std::fs::read(d.join(".run.partial").join("checkpoint.safetensors"))
        .expect("a checkpoint of the 37-step cadence");
    let (_, meta) = safetensors::SafeTensors::read_metadata(&bytes).unwrap();
    let step: u64 = meta.metadata().as_ref().unwrap()["step"].parse().unwrap();
    assert!(step > 0, "checkpoint at step {step}");
    let r = icl(&["train", "--resume", s(&out), "-q", "--eval-samples", "0"]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let temps: Vec<String> = entries(&out)
        .into_iter()
        .filter(|e| e.contains(".tmp-"))
        .collect();
    assert!(temps.is_empty(), "temporaries in the run: {temps:?}");
    same_run_files(&straight, &out, "after two signals");
    let hidden: Vec<String> = entries(&d)
        .into_iter()
        .filter(|e| e.starts_with('.'))
        .collect();
    assert!(hidden.is_empty(), "left behind: {hidden:?}");
}

#[test]
fn class7_same_seed_same_bytes() {
    let d = tmp("c7");
    // the same folder name under two parents: figures are titled with the run's name
    let (a, b) = (d.join("a").join("run"), d.join("b").join("run"));
    std::fs::create_dir_all(d.join("a")).unwrap();
    std::fs::create_dir_all(d.join("b")).unwrap();
    assert!(train(&a, &["--steps", "300"]).status.success());
    assert!(train(&b, &["--steps", "300"]).status.success());
    for f in [
        "model.safetensors",
        "snapshots.safetensors",
        "metrics.csv",
        "config.toml",
        "loss.svg",
    ] {
        assert_eq!(
            std::fs::read(a.join(f)).unwrap(),
            std::fs::read(b.join(f)).unwrap(),
            "{f}"
        );
    }
    // summary.json differs only in timings
    let strip = |p: &Path| -> serde_json::Value {
        let mut v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
        for k in ["seconds", "setup_seconds", "steps_per_second"] {
            v.as_object_mut().unwrap().remove(k);
        }
        v
    };
    assert_eq!(
        strip(&a.join("summary.json")),
        strip(&b.join("summary.json"))
    );
}

/// Small multilayer and IV runs (L = 8, batch 4, 3 steps) for the bad-input tests.
fn small_ml(out: &Path, preset: &str, extra: &[&str]) {
    let mut a = vec![
        "train",
        "--preset",
        preset,
        "--set",
        "task.L=8",
        "--set",
        "train.batch=4",
        "--steps",
        "3",
        "--eval-samples",
        "20",
        "-q",
        "--out",
        s(out),
    ];
    for e in extra {
        a.extend(["--set", e]);
    }
    let o = icl(&a);
    assert!(
        o.status.success(),
        "{preset} {extra:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The multilayer paper's bad input (issue 11): T = 0, L < 2, lambda_min > lambda_max, an IV
/// reference of another d, a reversed OOD range, --stack 0 and --ref on a non-IV run are one-line
/// errors with exit 2, and nothing is written (no run folder; the evaluated run unchanged).
#[test]
fn class8_multilayer_bad_input() {
    let d = tmp("c8");
    let out = d.join("run");
    for (preset, set) in [
        ("multilayer-t2", "model.layers=0"),
        ("multilayer-t2", "task.L=1"),
        ("multilayer-t2", "task.lambda_min=1.5"),
        ("multilayer-t2", "task.lambda_max=-1"),
        ("multilayer-t2", "task.covariance=banana"),
        ("multilayer-t2", "model.looped=maybe"),
        ("iv-2stage", "task.iv_q=0"),
        ("iv-2stage", "task.L=1"),
    ] {
        one_line_error(
            &icl(&["train", "--preset", preset, "--set", set, "--out", s(&out)]),
            2,
            &format!("{preset} {set}"),
        );
        assert!(entries(&d).is_empty(), "{preset} {set}: {:?}", entries(&d));
    }
    let (iv, ref3, t2) = (d.join("iv"), d.join("ref3"), d.join("t2"));
    small_ml(&iv, "iv-2stage", &[]);
    // a TF Ref run on its own is evaluated on the IV task (model, 2sls, ols)
    small_ml(&ref3, "iv-tf-ref", &["task.d=3"]);
    small_ml(&t2, "multilayer-t2", &[]);
    let before: Vec<_> = [&iv, &t2]
        .iter()
        .map(|r| {
            entries(r)
                .into_iter()
                .map(|f| (f.clone(), std::fs::read(r.join(&f)).unwrap()))
                .collect::<Vec<_>>()
        })
        .collect();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["eval", s(&iv), "--ref", s(&ref3)], "p = 4"),
        (vec!["eval", s(&iv), "--ref", s(&t2)], "d mismatch"),
        (vec!["eval", s(&t2), "--ref", s(&iv)], "--ref"),
        (
            vec!["eval", s(&t2), "--lambda-range", "1.5,1.1"],
            "0 < min <= max",
        ),
        (vec!["eval", s(&t2), "--lambda-range", "nan,1"], "0 < min"),
        (vec!["eval", s(&t2), "--lambda-range", "1"], "MIN,MAX"),
        (vec!["eval", s(&t2), "--stack", "0"], "--stack"),
        (vec!["eval", s(&t2), "--lengths", "1"], "L"),
    ];
    for (args, want) in cases {
        let mut a = args.clone();
        a.extend(["--samples", "10"]);
        let e = one_line_error(&icl(&a), 2, &format!("{args:?}"));
        assert!(e.contains(want), "{args:?}: {e}");
    }
    let after: Vec<_> = [&iv, &t2]
        .iter()
        .map(|r| {
            entries(r)
                .into_iter()
                .map(|f| (f.clone(), std::fs::read(r.join(&f)).unwrap()))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(before == after, "a failed eval changed a run folder");
    // the TF Ref run's own summary carries the IV estimators
    let sum: serde_json::Value =
        serde_json::from_slice(&std::fs::read(ref3.join("summary.json")).unwrap()).unwrap();
    let text = sum.to_string();
    assert!(
        text.contains("\"2sls\"") && text.contains("\"ols\""),
        "{text}"
    );
}

/// The temperature paper's theory quantities (issue 20): a non-SPD covariance, a mean of the wrong
/// length, l <= 1, tau <= 0 (or NaN), an unknown form are one-line errors with exit 2; a large mean
/// is accepted with a warning on stderr, and the JSON carries both forms and their gap.
#[test]
fn class9_temperature_theory_bad_input() {
    for (args, want) in [
        (
            vec![
                "optimal-temperature",
                "--d",
                "2",
                "--test-sigma-x",
                "1,2,2,1",
            ],
            "positive definite",
        ),
        (
            vec![
                "optimal-temperature",
                "--d",
                "3",
                "--train-sigma-w",
                "1,0,0",
            ],
            "positive definite",
        ),
        (
            vec!["temperature-error", "--d", "3", "--test-mu-x", "1,2"],
            "test-mu-x",
        ),
        (vec!["temperature-error", "--l", "1"], "--l"),
        (vec!["optimal-temperature", "--l-train", "0"], "--l-train"),
        (vec!["temperature-error", "--tau", "0"], "--tau"),
        (vec!["temperature-error", "--tau", "-2"], "--tau"),
        (vec!["temperature-error", "--tau", "nan"], "--tau"),
        (
            vec!["temperature-isotropic", "--form", "asymptotic"],
            "--form",
        ),
        (vec!["temperature-mc", "--n", "1"], "--n"),
    ] {
        let mut a = vec!["theory"];
        a.extend(args.iter().copied());
        let e = one_line_error(&icl(&a), 2, &format!("{args:?}"));
        assert!(e.contains(want), "{args:?}: {e}");
    }
    let o = icl(&[
        "theory",
        "optimal-temperature",
        "--d",
        "8",
        "--l",
        "16",
        "--test-mu-x",
        "1",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.starts_with("icl: warning: ") && err.contains("bounded mean"),
        "{err}"
    );
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["form"], "exact");
    let (e, p) = (
        j["tau_opt_exact"].as_f64().unwrap(),
        j["tau_opt_paper"].as_f64().unwrap(),
    );
    assert_eq!(j["value"].as_f64().unwrap(), e);
    assert!((j["rel_gap"].as_f64().unwrap() - (p / e - 1.0)).abs() < 1e-12);
    let o = icl(&["theory", "temperature-error", "--d", "8", "--l", "16"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.stderr.is_empty() && text.contains("form = exact") && text.contains("leading order"),
        "{text}"
    );
}

/// Closed forms that overflow at their parameters and refused resumes: one-line errors with exit
/// 2 that print no inf, NaN or null and leave nothing behind (no `.NAME.partial/.lock`).
#[test]
fn class10_overflows_and_refused_resumes_are_input_errors() {
    for args in [
        vec!["ols-risk", "--sigma2", "1e308", "--d", "1", "--L", "3"],
        vec![
            "ols-risk", "--sigma2", "1e308", "--d", "1", "--L", "3", "--json",
        ],
        vec!["mu-gamma", "--gamma", "1e308"],
        vec!["gd-risk", "--eta", "1e308"],
        vec!["bayes-risk", "--xi", "1e-320"],
        vec!["temperature-error", "--tau", "1e-300"],
    ] {
        let mut a = vec!["theory"];
        a.extend(args.iter().copied());
        let e = one_line_error(&icl(&a), 2, &format!("{args:?}"));
        assert!(e.contains("not finite"), "{args:?}: {e}");
    }
    let d = tmp("c10");
    let missing = d.join("missing");
    one_line_error(
        &icl(&["train", "--resume", s(&missing)]),
        2,
        "resume missing",
    );
    let run = d.join("run");
    let o = icl(&[
        "train",
        "--preset",
        "quick",
        "--steps",
        "5",
        "--eval-samples",
        "0",
        "-q",
        "--out",
        s(&run),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    one_line_error(
        &icl(&["train", "--resume", s(&run), "--steps", "3"]),
        2,
        "resume to fewer steps",
    );
    // a diverging run: exit 1, nothing written (no NaN checkpoint)
    let nan = d.join("nan");
    one_line_error(
        &icl(&[
            "train",
            "--preset",
            "quick",
            "--set",
            "train.optimizer=sgd",
            "--set",
            "train.lr=1e300",
            "--steps",
            "4",
            "-q",
            "--out",
            s(&nan),
        ]),
        1,
        "lr 1e300",
    );
    assert_eq!(entries(&d), ["run"]);
    let _ = std::fs::remove_dir_all(&d);
}

/// What a researcher is told: a fresh run names its preset (the default too) and its steps; a
/// resumed one the step it takes up (0 for a run stopped before its first checkpoint: it starts
/// over) and the steps of this session; the final loss says which steps it averages.
/// `--steps` reads what `--set train.steps=` reads; `--steps 0`, eigenvalues on a task that does
/// not read them, a misspelt preset or paper are one-line refusals that write nothing.
#[test]
fn class11_what_a_run_says_and_refuses() {
    let d = tmp("c11");
    let stderr = |o: &Output| String::from_utf8_lossy(&o.stderr).to_string();
    // the default preset, said before training: he2025, 5 steps (as a number --set reads)
    let def = d.join("default");
    let o = icl(&[
        "train",
        "--steps",
        "5e0",
        "--eval-samples",
        "0",
        "--out",
        s(&def),
    ]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains(
            "icl: training preset he2025 (the default; --preset NAME picks another): 5 steps\n"
        ),
        "{err}"
    );
    assert!(err.contains("trained 5 steps in "), "{err}");
    assert!(err.contains("final loss"), "{err}");
    // a named preset at its own length; the final loss's window
    let run = d.join("run");
    let o = icl(&[
        "train",
        "--preset",
        "quick",
        "--set",
        "train.steps=2e2",
        "--eval-samples",
        "0",
        "--out",
        s(&run),
    ]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("icl: training preset quick: 200 steps (--steps N sets another length)\n"),
        "{err}"
    );
    assert!(err.contains("(mean batch loss of steps 101-200)"), "{err}");
    // extending it: the session's steps, not the restored ones
    let o = icl(&[
        "train",
        "--resume",
        s(&run),
        "--steps",
        "3e2",
        "--eval-samples",
        "0",
    ]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains(&format!("icl: resuming {} from step 200 of 300\n", s(&run))),
        "{err}"
    );
    assert!(
        err.contains("trained steps 201-300 (100 steps, resumed at 200) in "),
        "{err}"
    );
    // a run killed before its first checkpoint (its staging folder holds only the config: the
    // extended run's, 300 steps)
    let early = d.join("early");
    let staging = d.join(".early.partial");
    std::fs::create_dir_all(&staging).unwrap();
    std::fs::copy(run.join("config.toml"), staging.join("config.toml")).unwrap();
    let o = icl(&["train", "--resume", s(&early), "--eval-samples", "0"]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains(
            "from step 0 of 300: it was stopped before its first checkpoint, so it starts over"
        ),
        "{err}"
    );
    assert!(err.contains("trained 300 steps in "), "{err}");
    // refusals: one line, exit 2, nothing written
    let bad = d.join("bad");
    for (args, want) in [
        (vec!["--steps", "0"], "train.steps = 0"),
        (vec!["--set", "train.steps=0"], "train.steps = 0"),
        (vec!["--steps", "1.5"], "--steps"),
        (
            vec!["--set", "task.eigs=0.5,0.3"],
            "not by task.kind = isotropic",
        ),
        (vec!["--preset", "he2052"], "did you mean he2025?"),
    ] {
        let mut a = vec!["train", "--out", s(&bad)];
        if args[0] != "--preset" {
            a.extend(["--preset", "quick"]);
        }
        a.extend(args.iter().copied());
        let e = one_line_error(&icl(&a), 2, &format!("{args:?}"));
        assert!(e.contains(want), "{args:?}: {e}");
        assert!(
            !bad.exists() && !d.join(".bad.partial").exists(),
            "{args:?}"
        );
    }
    let e = one_line_error(
        &icl(&["repro", "he2024", "--out", s(&bad)]),
        2,
        "repro he2024",
    );
    assert!(
        e.contains("unknown paper \"he2024\"; did you mean he2025?"),
        "{e}"
    );
    assert!(!bad.exists());
    // the default checkpoint cadence, declared once, is what --help says
    let help = String::from_utf8_lossy(&icl(&["train", "--help"]).stdout).to_string();
    assert!(help.contains("[default: 0.5]"), "{help}");
    let _ = std::fs::remove_dir_all(&d);
}

/// Data law 1 keeps its bytes: a run of `--preset quick --steps 20000` interrupted (SIGTERM at
/// step 13,358) by the main of before `task.data_law` (9970fdc), its config without the key,
/// resumes here to the bytes that main's uninterrupted run ended with (both committed:
/// `cli/tests/fixtures/law1-quick`).
#[test]
fn a_law1_checkpoint_from_before_data_law_2_resumes_to_its_bytes() {
    let fx = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/law1-quick");
    let d = tmp("law1");
    let staging = d.join(".part.partial");
    std::fs::create_dir_all(&staging).unwrap();
    for f in ["checkpoint.safetensors", "config.toml"] {
        std::fs::copy(fx.join("partial").join(f), staging.join(f)).unwrap();
    }
    assert!(!std::fs::read_to_string(staging.join("config.toml"))
        .unwrap()
        .contains("data_law"));
    let out = d.join("part");
    let r = icl(&["train", "--resume", s(&out), "-q", "--eval-samples", "0"]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    for f in ["model.safetensors", "metrics.csv", "snapshots.safetensors"] {
        assert_eq!(
            std::fs::read(fx.join("expected").join(f)).unwrap(),
            std::fs::read(out.join(f)).unwrap(),
            "{f} differs from the law-1 run's"
        );
    }
    // and the resumed run's config still reads as law 1 (the key is not written at 1)
    let cfg = std::fs::read_to_string(out.join("config.toml")).unwrap();
    assert!(!cfg.contains("data_law"), "{cfg}");
}
