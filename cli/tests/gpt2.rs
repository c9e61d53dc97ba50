//! Garg et al.'s GPT-2 through the CLI: their Fig. 2 in small (a tiny model trained on d = 5
//! linear regression whose error falls with L towards least squares), and the family's contracts
//! on that run: `eval --json` rows at every L with the top-level `d`, `eval --plot` in risk / d,
//! `predict`, `analyze` (attention.svg), `export --torch` -> `import --torch` (the same
//! predictions, bit for bit), `bench` (steps/s, GFLOP/s and the FLOP count), and bad input.
use safetensors::tensor::{Dtype, TensorView};
use safetensors::SafeTensors;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn icl(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_icl"))
        .args(args)
        .output()
        .expect("run icl")
}

fn ok(args: &[&str]) -> String {
    let o = icl(args);
    assert!(
        o.status.success(),
        "icl {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// Exit 2 with one line `icl: error: ...` containing `what`.
fn refused(args: &[&str], what: &str) {
    let o = icl(args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "icl {args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("icl: error: ") && err.contains(what),
        "{err}"
    );
}

fn tmp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("icl-gpt2-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    p
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The size of Fig. 2 in small: d = 5, trained at L = 10, 2 layers, 2 heads, n_embd 32.
const SMALL: [&str; 12] = [
    "--set",
    "task.d=5",
    "--set",
    "task.L=10",
    "--set",
    "model.positions=11",
    "--set",
    "model.layers=2",
    "--set",
    "model.embd=32",
    "--set",
    "train.lr=1e-3",
];

/// `risk[estimator][L]` of `icl eval --json` rows.
fn risks(ev: &Value, estimator: &str) -> Vec<(f64, f64)> {
    let rows: Vec<&Value> = ev["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["estimator"] == estimator)
        .collect();
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r["L"], i, "{estimator}: rows at every L from 0");
    }
    rows.iter()
        .map(|r| (r["risk"].as_f64().unwrap(), r["stderr"].as_f64().unwrap()))
        .collect()
}

/// `icl eval RUN --lengths 10 --json` with `extra` flags.
fn eval_json(run: &Path, extra: &[&str]) -> Value {
    let mut a = vec!["eval", s(run), "--lengths", "10", "--json"];
    a.extend(extra);
    serde_json::from_str(&ok(&a)).unwrap()
}

/// Prompts `xs` [n, k, d] and `ys` [n, k] (f32) as `icl predict` reads them.
fn write_prompts(path: &Path, n: usize, k: usize, d: usize) {
    let v = |len: usize, salt: f32| -> Vec<u8> {
        (0..len)
            .flat_map(|i| ((i as f32 * 0.73 + salt).sin() * 1.3).to_le_bytes())
            .collect()
    };
    let (x, y) = (v(n * k * d, 0.1), v(n * k, 0.7));
    let views = vec![
        (
            "xs",
            TensorView::new(Dtype::F32, vec![n, k, d], &x).unwrap(),
        ),
        ("ys", TensorView::new(Dtype::F32, vec![n, k], &y).unwrap()),
    ];
    std::fs::write(path, safetensors::serialize(views, &None).unwrap()).unwrap();
}

/// `pred` of an `icl predict` output: (shape, raw little-endian f64 bytes).
fn read_pred(path: &Path) -> (Vec<usize>, Vec<u8>) {
    let bytes = std::fs::read(path).unwrap();
    let st = SafeTensors::deserialize(&bytes).unwrap();
    let t = st.tensor("pred").unwrap();
    assert_eq!(t.dtype(), Dtype::F64);
    (t.shape().to_vec(), t.data().to_vec())
}

#[test]
fn fig2_in_small_and_the_family_contracts() {
    let dir = tmp("fig2");
    let run = dir.join("run");
    // Garg et al.'s curriculum in small: from d = 2, L = 4, one more dimension and two more pairs
    // every 300 steps (the full size from step 900); without it this model needs about twice
    // the steps to learn
    let mut a = vec![
        "train",
        "--preset",
        "garg-linear-tiny",
        "--steps",
        "3000",
        "--set",
        "task.curriculum_d=2",
        "--set",
        "task.curriculum_L=4",
        "--set",
        "task.curriculum_every=300",
        "--quiet",
        "--out",
        s(&run),
    ];
    a.extend(SMALL);
    ok(&a);
    // under the curriculum loss.svg has a second panel, the loss over E y² at the step's d
    let loss = std::fs::read_to_string(run.join("loss.svg")).unwrap();
    assert!(
        loss.contains("training loss / E y² at the step"),
        "loss.svg"
    );

    // Fig. 2 in small: the error at every number of examples L before the query
    let ev = eval_json(&run, &["--samples", "2000"]);
    assert_eq!(ev["d"], 5);
    let (model, lstsq, knn, avg) = (
        risks(&ev, "model"),
        risks(&ev, "lstsq"),
        risks(&ev, "knn3"),
        risks(&ev, "averaging"),
    );
    assert!([&model, &lstsq, &knn, &avg].iter().all(|v| v.len() == 11));
    // before any example every estimator predicts about 0: E[y^2] = d (the same prompts)
    assert!((model[0].0 / lstsq[0].0 - 1.0).abs() < 0.15, "{model:?}");
    assert!((lstsq[0].0 - 5.0).abs() < 4.0 * lstsq[0].1, "{lstsq:?}");
    // least squares is exact from d examples on (no noise)
    assert!(lstsq[5..].iter().all(|r| r.0 < 1e-9), "{lstsq:?}");
    // the model's error falls with L ...
    assert!(model[5].0 < 0.6 * model[0].0, "{model:?}");
    assert!(model[10].0 < 0.55 * model[0].0, "{model:?}");
    // ... below 3-nearest neighbours' and averaging's at L = 10 (towards least squares)
    for (name, other) in [("knn3", &knn), ("averaging", &avg)] {
        let (m, o) = (model[10], other[10]);
        assert!(
            m.0 + 4.0 * (m.1 * m.1 + o.1 * o.1).sqrt() < o.0,
            "model {m:?} vs {name} {o:?}"
        );
    }

    // --tau opt under a shift: one temperature per position, chosen on held-out prompts (tau = 1
    // at L = 0, where a token attends to itself alone), at least as good there as tau = 1 up to
    // the noise of the two estimates
    let ev = eval_json(
        &run,
        &[
            "--samples",
            "1000",
            "--tau",
            "1,opt",
            "--tau-holdout",
            "1000",
            "--shift",
            "x_cov=3",
        ],
    );
    let model_rows = |opt: bool| -> Vec<Value> {
        ev["rows"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["estimator"] == "model" && (r["tau_opt"] == true) == opt)
            .cloned()
            .collect()
    };
    let (one, opt) = (model_rows(false), model_rows(true));
    assert_eq!((one.len(), opt.len()), (11, 11));
    assert_eq!(opt[0]["tau"], 1.0);
    for (a, b) in one.iter().zip(&opt) {
        assert_eq!(a["L"], b["L"]);
        assert_eq!(b["shift"]["x_cov"], 3.0, "{b}");
        let tau = b["tau"].as_f64().unwrap();
        assert!((0.05..=20.0).contains(&tau), "{b}");
        let (r1, se1) = (a["risk"].as_f64().unwrap(), a["stderr"].as_f64().unwrap());
        let (r2, se2) = (b["risk"].as_f64().unwrap(), b["stderr"].as_f64().unwrap());
        assert!(r2 <= r1 + 4.0 * (se1 * se1 + se2 * se2).sqrt(), "{a} {b}");
    }

    // --plot: risk / d against L, as Garg et al.'s Fig. 2, said on the axis
    let svg = dir.join("fig2.svg");
    ok(&[
        "eval",
        s(&run),
        "--lengths",
        "10",
        "--samples",
        "200",
        "--plot",
        s(&svg),
    ]);
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("<svg") && text.contains("/ d"), "{text}");

    // predict: [n, k] at every x position; export -> import gives the same bits
    let prompts = dir.join("prompts.safetensors");
    write_prompts(&prompts, 3, 11, 5);
    let p1 = dir.join("p1.safetensors");
    ok(&["predict", s(&run), "--input", s(&prompts), "--out", s(&p1)]);
    let (shape, pred) = read_pred(&p1);
    assert_eq!(shape, vec![3, 11]);
    let sd = dir.join("state_dict.safetensors");
    ok(&["export", s(&run), "--torch", s(&sd)]);
    let back = dir.join("back");
    let mut a = vec![
        "import",
        "--torch",
        s(&sd),
        "--preset",
        "garg-linear-tiny",
        "--out",
        s(&back),
    ];
    a.extend(&SMALL[..10]);
    ok(&a);
    let p2 = dir.join("p2.safetensors");
    ok(&["predict", s(&back), "--input", s(&prompts), "--out", s(&p2)]);
    assert_eq!(read_pred(&p2), (shape, pred));
    // the size the config disagrees with is refused with the --set that fits, nothing written
    let wrong = dir.join("wrong");
    refused(
        &[
            "import",
            "--torch",
            s(&sd),
            "--preset",
            "garg-linear-tiny",
            "--out",
            s(&wrong),
        ],
        "--set task.d=5",
    );
    assert!(!wrong.exists());

    // analyze: every layer's and head's attention, drawn in attention.svg
    let out = ok(&["analyze", s(&run)]);
    let fig = run.join("attention.svg");
    assert!(out.contains(s(&fig)), "{out}");
    let svg = std::fs::read_to_string(&fig).unwrap();
    assert!(svg.contains("<svg"));
    // layers counted from 1, heads from 0, as in every other figure (a title is a text line)
    let lines: Vec<&str> = svg.lines().map(str::trim).collect();
    for title in [
        "layer 1 head 0",
        "layer 1 head 1",
        "layer 2 head 0",
        "layer 2 head 1",
    ] {
        assert!(lines.contains(&title), "attention.svg lacks {title}");
    }
    assert!(
        !lines.iter().any(|l| l.ends_with("head 2")),
        "attention.svg counts heads from 1"
    );
    let an: Value =
        serde_json::from_str(&ok(&["analyze", s(&run), "--json", "--no-plot"])).unwrap();
    assert_eq!(an["attention_heads"].as_array().unwrap().len(), 4);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bench_states_the_flop_count() {
    // one layer, d = 2, n_embd 4, L = 2 (K = 3 pairs, T = 6 tokens), batch 2: per sequence
    // read_in 2 T d C = 96, the layer 24 T C^2 + 2 C T (T + 1) = 2304 + 336, read_out 2 T C = 48:
    // 2784 forward, three times that with the backward
    let o = ok(&[
        "bench",
        "--preset",
        "garg-linear-tiny",
        "--heads",
        "2",
        "--dtypes",
        "f32",
        "--threads",
        "1",
        "--steps",
        "3",
        "--no-split",
        "--json",
        "--set",
        "task.d=2",
        "--set",
        "task.L=2",
        "--set",
        "model.positions=3",
        "--set",
        "model.embd=4",
        "--set",
        "model.layers=1",
        "--set",
        "train.batch=2",
    ]);
    let b: Value = serde_json::from_str(&o).unwrap();
    let row = &b["rows"][0];
    assert_eq!(row["flops_per_step"], 3.0 * 2784.0 * 2.0);
    let (gflops, steps, secs) = (
        row["gflops"].as_f64().unwrap(),
        row["steps"].as_f64().unwrap(),
        row["seconds"].as_f64().unwrap(),
    );
    assert!((gflops * 1e9 * secs / steps / 16704.0 - 1.0).abs() < 1e-9);
    assert!(row["steps_per_s"].as_f64().unwrap() > 0.0);
}

#[test]
fn bad_gpt2_input_exits_2_with_nothing_written() {
    let dir = tmp("bad");
    let run = dir.join("run");
    refused(
        &[
            "train",
            "--preset",
            "garg-linear-tiny",
            "--set",
            "model.embd=30",
            "--set",
            "model.heads=4",
            "--out",
            s(&run),
        ],
        "model.embd",
    );
    for key in ["model.looped=false", "model.activation=affine"] {
        refused(
            &[
                "train",
                "--preset",
                "garg-linear-tiny",
                "--set",
                key,
                "--out",
                s(&run),
            ],
            key.split('=').next().unwrap(),
        );
    }
    // a state_dict of another layout (the one-layer model's) is not a GPT-2
    let e = 6usize;
    let w: Vec<u8> = (0..e * e).flat_map(|i| (i as f32).to_le_bytes()).collect();
    let views = vec![(
        "q_proj.weight",
        TensorView::new(Dtype::F32, vec![e, e], &w).unwrap(),
    )];
    let other = dir.join("other.safetensors");
    std::fs::write(&other, safetensors::serialize(views, &None).unwrap()).unwrap();
    let o = icl(&[
        "import",
        "--torch",
        s(&other),
        "--preset",
        "garg-linear-tiny",
        "--out",
        s(&run),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&o.stderr).lines().count(), 1);
    assert!(!run.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Garg et al.'s function classes through the CLI: a sparse and a tree GPT-2 train a few steps
/// at d = 4 and their `eval --json` carries the class's baselines at every L (the Lasso over
/// Garg et al.'s alpha grid; CART of depth 4 and unbounded, boosted trees); bad input (k > d, a
/// tree of depth 0, an unknown task) exits 2 with nothing written.
#[test]
fn function_classes_train_and_evaluate_with_their_baselines() {
    let dir = tmp("classes");
    let tiny = [
        "--set",
        "task.d=4",
        "--set",
        "task.L=6",
        "--set",
        "model.positions=7",
        "--set",
        "model.layers=1",
        "--set",
        "model.embd=8",
        "--steps",
        "3",
        "--eval-samples",
        "0",
        "-q",
    ];
    for (preset, ests) in [
        (
            "garg-sparse-tiny",
            &["lstsq", "knn3", "averaging", "lasso_1", "lasso_0.0001"][..],
        ),
        (
            "garg-tree-tiny",
            &["tree_depth4", "tree", "boosted_trees", "knn3"][..],
        ),
        (
            "garg-relu2nn-tiny",
            &["lstsq", "averaging", "relu_net_adam"][..],
        ),
    ] {
        let run = dir.join(preset);
        let mut a = vec!["train", "--preset", preset, "--out", s(&run)];
        a.extend(tiny);
        ok(&a);
        let ev: Value = serde_json::from_str(&ok(&[
            "eval",
            s(&run),
            "--lengths",
            "6",
            "--samples",
            "20",
            "--json",
        ]))
        .unwrap();
        // a figure is .svg or .png: a .pdf is refused before the Monte Carlo, nothing written
        let pdf = dir.join("risk.pdf");
        refused(&["eval", s(&run), "--plot", s(&pdf)], ".svg or .png");
        assert!(!pdf.exists());
        for e in ests {
            let r = risks(&ev, e);
            assert_eq!(r.len(), 7, "{preset} {e}");
            assert!(r.iter().all(|(x, _)| x.is_finite()), "{preset} {e}");
        }
    }
    let run = dir.join("bad");
    for (preset, key, says) in [
        (
            "garg-sparse-tiny",
            "task.sparsity=21",
            "task.sparsity = 21 exceeds",
        ),
        ("garg-tree-tiny", "task.depth=0", "task.depth"),
        ("garg-tree-tiny", "task.kind=forest", "task.kind"),
    ] {
        refused(
            &["train", "--preset", preset, "--set", key, "--out", s(&run)],
            says,
        );
        assert!(!run.exists());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `icl train` says a curriculum's schedule and when it reaches the full size.
#[test]
fn train_says_the_curriculum_schedule() {
    let dir = tmp("schedule");
    let mut a = vec![
        "train",
        "--preset",
        "garg-linear-tiny",
        "--steps",
        "2",
        "--set",
        "task.curriculum_every=300",
        "--out",
        s(&dir),
    ];
    a.extend(SMALL);
    let o = icl(&a);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    // SMALL's d = 5, L = 10 from the preset's d = 5, L = 10 start: the full size at once, so
    // the schedule is said without a step
    assert!(
        err.contains("icl: curriculum: d 5 and L 10 from the start"),
        "{err}"
    );
    let mut b = a.clone();
    b.extend([
        "--set",
        "task.curriculum_d=2",
        "--set",
        "task.curriculum_L=4",
        "--force",
    ]);
    let o = icl(&b);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("icl: curriculum: d 2 -> 5 (+1) and L 4 -> 10 (+2) every 300 steps; the full size (d = 5, L = 10) not reached: it starts at step 900"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
