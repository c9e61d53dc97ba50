//! The C and C++ example clients, built with the system gcc/g++ against the library and run:
//!
//! * `examples/c/predict.c` loads a checkpoint written by `icl train`; its predictions equal the
//!   Rust library's (`icl_io::load_model` + the scalar engine) bit for bit, linked statically and
//!   dynamically, for contexts read from text and for problems it samples itself;
//! * the same program runs clean under `valgrind --error-exitcode=1 --leak-check=full`
//!   (required when `CI` is set; skipped with a note otherwise if valgrind is missing);
//! * `examples/cpp/simulator.cpp` trains through the C++ API; its training log equals the
//!   `metrics.csv` of `icl train` with the same preset, seed and engine, its final parameters equal
//!   the CLI's checkpoint bit for bit, and its risk equals `icl_core::families::attention::eval::mc_risk` on that model.
//!
//! The engine is passed explicitly (`scalar`) to the CLI and the clients, so the comparisons hold
//! whatever the default engine is.
mod ffi_common;

use ffi_common::{
    built, cli_train, compile_c, compile_cpp, numbers, run, scratch, workspace, Link,
};
use icl_core::engine::Runner;
use icl_core::families::attention::analysis::analyze;
use icl_core::families::attention::eval::mc_risk;
use icl_core::rng::Domain;
use icl_core::{Batch, Model, Task};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

const ENGINE: &str = "scalar";

/// Problems with context length `len` drawn from the run's task, as (x, y, xq) arrays, and the
/// text predict.c reads (shortest round-trip decimal forms, so the doubles arrive exactly).
fn problems(task: &Task, n: usize, len: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>, String) {
    let b: Batch<f64> = task.sample_batch(99, Domain::Eval, 12345, n, len);
    let (d, no, e) = (b.d, b.n_out, b.e());
    let (mut x, mut y, mut xq) = (Vec::new(), Vec::new(), Vec::new());
    for s in 0..n {
        let q = b.seq(s);
        for l in 0..len {
            x.extend_from_slice(&q[l * e..l * e + d]);
            y.extend_from_slice(&q[l * e + d..l * e + d + no]);
        }
        xq.extend_from_slice(&q[len * e..len * e + d]);
    }
    let mut text = format!("{n} {len}\n");
    for v in x.iter().chain(&y).chain(&xq) {
        text.push_str(&format!("{v:?}\n"));
    }
    (x, y, xq, text)
}

/// The Rust library's predictions for the same problems: the checkpoint in its precision, the
/// inputs rounded to it, the scalar engine.
fn rust_predictions(model: &Model<f32>, len: usize, x: &[f64], y: &[f64], xq: &[f64]) -> Vec<f64> {
    let (d, no) = (model.spec.d, model.spec.n_out);
    let e = d + no;
    let n = xq.len() / d;
    let mut z = vec![0.0f32; n * (len + 1) * e];
    for s in 0..n {
        for l in 0..len {
            let t = &mut z[(s * (len + 1) + l) * e..][..e];
            for i in 0..d {
                t[i] = x[(s * len + l) * d + i] as f32;
            }
            for o in 0..no {
                t[d + o] = y[(s * len + l) * no + o] as f32;
            }
        }
        for i in 0..d {
            z[(s * (len + 1) + len) * e + i] = xq[s * d + i] as f32;
        }
    }
    let batch = Batch::from_parts(n, len, d, no, z, vec![0.0f32; n * no]).unwrap();
    let mut out = vec![0.0f32; n * no];
    Runner::<f32>::scalar()
        .predict(
            model.attention().unwrap(),
            &model.circuits().unwrap(),
            &batch,
            &mut out,
        )
        .unwrap();
    out.iter().map(|&v| v as f64).collect()
}

fn run_with_stdin(cmd: &mut Command, input: &str) -> std::process::Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn load_f32(path: &Path) -> (icl_core::Config, Model<f32>) {
    let l = icl_core_run::checkpoint::load(path).unwrap();
    match l.model {
        icl_core_run::any::Either::F32(m) => (l.config, m),
        icl_core_run::any::Either::F64(_) => panic!("expected an f32 checkpoint"),
    }
}

#[test]
fn c_predict_equals_the_rust_library_bit_for_bit() {
    let dir = scratch("c-predict");
    let run_dir = cli_train(&dir.join("run"), 300, 11, ENGINE, &["train.batch=32"]);
    let ckpt = run_dir.join("model.safetensors");
    let (cfg, model) = load_f32(&ckpt);
    let task = Task::new(&cfg).unwrap();
    let src = workspace().join("examples/c/predict.c");

    for link in [Link::Static, Link::Shared] {
        let exe = dir.join(format!("predict-{link:?}"));
        compile_c(&src, &exe, link);

        // Contexts given by the caller, at the training length and at another length.
        for len in [cfg.task.len, 17] {
            let (x, y, xq, text) = problems(&task, 9, len);
            let out = run_with_stdin(
                Command::new(&exe).arg(&ckpt).args(["--engine", ENGINE]),
                &text,
            );
            let got: Vec<f64> = String::from_utf8(out.stdout)
                .unwrap()
                .lines()
                .flat_map(numbers)
                .collect();
            let want = rust_predictions(&model, len, &x, &y, &xq);
            assert_eq!(got.len(), want.len(), "{link:?} L={len}");
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert_eq!(
                    g.to_bits(),
                    w.to_bits(),
                    "{link:?} L={len} problem {i}: C {g} vs Rust {w}"
                );
            }
        }

        // Problems the C program samples from the checkpoint's own task (eval streams).
        let (n, len, seed) = (7usize, 25usize, 4242u64);
        let out = run(Command::new(&exe)
            .arg(&ckpt)
            .args(["--engine", ENGINE])
            .args([
                "--sample",
                &n.to_string(),
                &len.to_string(),
                &seed.to_string(),
            ]));
        let text = String::from_utf8(out.stdout).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let b: Batch<f64> = task.sample_batch(seed, Domain::Eval, len as u64, n, len);
        let (x, y, xq) = split(&b);
        let want = rust_predictions(&model, len, &x, &y, &xq);
        for i in 0..n {
            let v = numbers(lines[i]);
            assert_eq!(v[0].to_bits(), b.y[i].to_bits(), "target {i}");
            assert_eq!(v[1].to_bits(), want[i].to_bits(), "prediction {i}");
        }
        let mut sse = 0.0f64;
        for (w, t) in want.iter().zip(&b.y) {
            sse += (w - t) * (w - t);
        }
        let mse = numbers(lines[n].strip_prefix("mse ").expect("mse line"))[0];
        assert_eq!(mse.to_bits(), (sse / n as f64).to_bits(), "mse");
        let rep = analyze(model.attention().unwrap(), &model.circuits().unwrap());
        for (h, head) in rep.heads.iter().enumerate() {
            let v = numbers(
                lines[n + 1 + h]
                    .split_once("omega")
                    .unwrap()
                    .1
                    .replace("mu", " ")
                    .as_str(),
            );
            assert_eq!(v[0].to_bits(), head.omega.to_bits(), "omega of head {h}");
            assert_eq!(v[1].to_bits(), head.mu.to_bits(), "mu of head {h}");
        }
    }
}

/// x, y, xq arrays of a batch.
fn split(b: &Batch<f64>) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let (d, no, e, len) = (b.d, b.n_out, b.e(), b.len);
    let (mut x, mut y, mut xq) = (Vec::new(), Vec::new(), Vec::new());
    for s in 0..b.n {
        let q = b.seq(s);
        for l in 0..len {
            x.extend_from_slice(&q[l * e..l * e + d]);
            y.extend_from_slice(&q[l * e + d..l * e + d + no]);
        }
        xq.extend_from_slice(&q[len * e..len * e + d]);
    }
    (x, y, xq)
}

#[test]
fn c_predict_runs_clean_under_valgrind() {
    let have = Command::new("valgrind")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !have {
        assert!(
            std::env::var_os("CI").is_none(),
            "valgrind is not installed but CI is set: install it (apt-get install valgrind)"
        );
        eprintln!("note: valgrind not found; skipping the memcheck test (it is required in CI)");
        return;
    }
    let dir = scratch("c-valgrind");
    let run_dir = cli_train(&dir.join("run"), 50, 3, ENGINE, &["train.batch=16"]);
    let ckpt = run_dir.join("model.safetensors");
    let (cfg, _) = load_f32(&ckpt);
    let exe = dir.join("predict");
    compile_c(
        &workspace().join("examples/c/predict.c"),
        &exe,
        Link::Shared,
    );
    let (_, _, _, text) = problems(&Task::new(&cfg).unwrap(), 4, 12);
    // The command documented in ffi/README.md.
    // The commands documented in ffi/README.md: the scalar engine needs no suppression; the
    // default (simd) engine's rayon worker threads live until exit, whose TLS blocks
    // ffi/valgrind.supp suppresses.
    let supp = format!(
        "--suppressions={}",
        workspace().join("ffi/valgrind.supp").display()
    );
    let memcheck = |engine: Option<&str>, extra: &[&str], input: &str| {
        let mut cmd = Command::new("valgrind");
        cmd.args(["--error-exitcode=1", "--leak-check=full", "--quiet"]);
        if engine.is_none() {
            cmd.arg(&supp);
        }
        cmd.arg(&exe).arg(&ckpt);
        if let Some(e) = engine {
            cmd.args(["--engine", e]);
        }
        let out = run_with_stdin(cmd.args(extra), input);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !err.contains("Invalid read")
                && !err.contains("Invalid write")
                && !err.contains("definitely lost"),
            "valgrind reported errors:\n{err}"
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let plain = run_with_stdin(
        Command::new(&exe).arg(&ckpt).args(["--engine", ENGINE]),
        &text,
    );
    assert_eq!(
        memcheck(Some(ENGINE), &[], &text),
        String::from_utf8(plain.stdout).unwrap()
    );
    memcheck(Some(ENGINE), &["--sample", "3", "10", "1"], "");
    memcheck(None, &["--sample", "3", "10", "1"], "");
}

#[test]
fn cpp_simulator_follows_the_cli_trajectory() {
    let dir = scratch("cpp-simulator");
    let (steps, seed) = (2000u64, 5u64);
    let run_dir = cli_train(&dir.join("run"), steps, seed, ENGINE, &[]);
    let exe = dir.join("simulator");
    compile_cpp(&workspace().join("examples/cpp/simulator.cpp"), &exe);
    let sim_ckpt = dir.join("sim.safetensors");
    let out = run(Command::new(&exe)
        .args([
            "--preset",
            "quick",
            "--engine",
            ENGINE,
            "--chunk",
            "250",
            "--problems",
            "64",
        ])
        .args(["--steps", &steps.to_string(), "--seed", &seed.to_string()])
        .arg("--out")
        .arg(&sim_ckpt));
    let text = String::from_utf8(out.stdout).unwrap();

    // The training log equals metrics.csv row by row (the CSV holds each value as {:.8e}).
    let csv = std::fs::read_to_string(run_dir.join("metrics.csv")).unwrap();
    let rows: Vec<Vec<&str>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    let logs: Vec<Vec<f64>> = text
        .lines()
        .filter_map(|l| l.strip_prefix("log "))
        .map(numbers)
        .collect();
    assert_eq!(logs.len(), rows.len(), "log rows");
    assert!(rows.len() >= 20);
    for (r, l) in rows.iter().zip(&logs) {
        assert_eq!(r[0], format!("{}", l[0] as u64), "step");
        for (c, v) in r[1..].iter().zip(&l[1..]) {
            assert_eq!(*c, format!("{v:.8e}"), "row at step {}", r[0]);
        }
    }

    // The final parameters equal the CLI's bit for bit.
    let (cfg_cli, m_cli) = load_f32(&run_dir.join("model.safetensors"));
    let (cfg_sim, m_sim) = load_f32(&sim_ckpt);
    assert_eq!(cfg_sim, cfg_cli);
    assert_eq!(m_sim.params.len(), m_cli.params.len());
    for (i, (a, b)) in m_sim.params.iter().zip(&m_cli.params).enumerate() {
        assert_eq!(a.to_bits(), b.to_bits(), "parameter {i}");
    }

    // The risk it reports equals mc_risk on the CLI's model.
    let risk = numbers(
        text.lines()
            .find_map(|l| l.strip_prefix("risk "))
            .expect("risk line"),
    );
    let task = Task::new(&cfg_cli).unwrap();
    let mut eng = Runner::<f32>::scalar();
    let r = mc_risk(
        &task,
        cfg_cli.task.len,
        2000,
        seed,
        Some((&m_cli, &mut eng)),
        &[],
    )
    .unwrap();
    assert_eq!(risk[0] as usize, cfg_cli.task.len);
    assert_eq!(risk[1].to_bits(), r[0].risk.to_bits());
    assert_eq!(risk[2].to_bits(), r[0].stderr.to_bits());

    // The streamed error: one tick per chunk, finite, and learning shows (He et al. 2025 §3: the
    // zero predictor has risk 1 + sigma^2 = 1.1; the trained model must beat it on fresh problems).
    let ticks: Vec<Vec<f64>> = text
        .lines()
        .filter_map(|l| l.strip_prefix("tick "))
        .map(numbers)
        .collect();
    assert_eq!(ticks.len(), (steps / 250) as usize);
    assert_eq!(ticks.last().unwrap()[0] as u64, steps);
    assert!(ticks.iter().all(|t| t.iter().all(|v| v.is_finite())));
    let last = ticks.last().unwrap();
    assert!(last[1] < 1.0, "final training loss {}", last[1]);
    assert!(
        risk[1] < 1.1 - 3.0 * risk[2],
        "risk {} +- {}",
        risk[1],
        risk[2]
    );
    let _ = built();
}

#[test]
fn default_engine_is_the_clis_and_follows_its_trajectory() {
    // `icl train` without --engine, and a trainer made with engine NULL: same engine, same model.
    let dir = scratch("default-engine");
    let out = dir.join("run");
    run(Command::new(&built().icl)
        .args([
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
            "200",
            "--seed",
            "9",
            "--set",
            "task.L=12",
            "--set",
            "train.batch=32",
        ])
        .arg("--out")
        .arg(&out));
    let summary = std::fs::read_to_string(out.join("summary.json")).unwrap();
    let cli_engine = summary
        .split("\"engine\": \"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .expect("engine in summary.json");
    let ours = unsafe { std::ffi::CStr::from_ptr(icl_ffi::icl_default_engine()) };
    assert_eq!(ours.to_str().unwrap(), cli_engine);

    let (_, cli_model) = load_f32(&out.join("model.safetensors"));
    let cfg = icl_ffi::icl_config::preset("quick").unwrap();
    let mut cfg = cfg.cfg;
    for (k, v) in [
        ("task.L", "12"),
        ("train.batch", "32"),
        ("train.steps", "200"),
        ("train.seed", "9"),
    ] {
        cfg.set(k, v).unwrap();
    }
    let mut tr = icl_ffi::icl_trainer::new(&cfg, None).unwrap();
    assert_eq!(tr.engine_name(), cli_engine);
    tr.train(200, None).unwrap();
    let p = icl_ffi::handles::HasModel::params(&tr);
    assert_eq!(p.len(), cli_model.params.len());
    for (i, (a, b)) in p.iter().zip(&cli_model.params).enumerate() {
        assert_eq!(a.to_bits(), (*b as f64).to_bits(), "parameter {i}");
    }
}
