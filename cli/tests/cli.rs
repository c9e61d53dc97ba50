//! End-to-end tests of the `icl` binary: run folders, JSON contracts, determinism, bad input.
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn icl(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_icl"))
        .args(args)
        .output()
        .expect("run icl")
}

fn tmp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("icl-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    p
}

/// The texts of an SVG's `<text>` elements, trimmed.
fn svg_texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| Some(t[t.find('>')? + 1..t.find("</text>")?].trim().to_string()))
        .collect()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn train(out: &Path, extra: &[&str]) -> Output {
    let mut a = vec![
        "train",
        "--preset",
        "quick",
        "--steps",
        "300",
        "--eval-samples",
        "500",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ];
    a.extend_from_slice(extra);
    icl(&a)
}

#[test]
fn train_writes_run_folder_and_prints_summary_path_last() {
    let out = tmp("train");
    let o = train(&out, &["--engine", "scalar"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let last = stdout(&o).lines().last().unwrap().to_string();
    assert_eq!(PathBuf::from(&last), out.join("summary.json"));
    for f in [
        "config.toml",
        "model.safetensors",
        "metrics.csv",
        "summary.json",
        "loss.svg",
        "omega_mu.svg",
    ] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    // loss.svg: log step axis labelled 1, 10, 100 (no "100.0"); omega_mu.svg: a line per head
    let loss = svg_texts(&std::fs::read_to_string(out.join("loss.svg")).unwrap());
    for l in ["1", "10", "100"] {
        assert!(
            loss.iter().any(|t| t == l),
            "loss.svg lacks the step label {l}: {loss:?}"
        );
    }
    assert!(
        !loss.iter().any(|t| t.ends_with(".0")),
        "loss.svg prints floats: {loss:?}"
    );
    let om = svg_texts(&std::fs::read_to_string(out.join("omega_mu.svg")).unwrap());
    assert!(om.iter().any(|t| t.contains("ω per head")), "{om:?}");
    assert!(om.iter().any(|t| t.contains("μ per head")), "{om:?}");
    // heads counted from 0, as everywhere else
    assert_eq!(
        om.iter().filter(|t| *t == "head 1").count(),
        2,
        "omega_mu.svg: head 1 in each panel"
    );
    assert!(!om.iter().any(|t| t == "head 2"), "{om:?}");
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["steps"], 300);
    assert_eq!(s["heads"].as_array().unwrap().len(), 2);
    // metrics.csv: header + a row at step 1 and every 100 steps, and the early rows at 2, 5, 10,
    // 20, 50 (below train.log_every = 100), by step
    let csv = std::fs::read_to_string(out.join("metrics.csv")).unwrap();
    assert!(csv.starts_with("step,loss,omega_0,omega_1,mu_0,mu_1"));
    let steps: Vec<&str> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap())
        .collect();
    assert_eq!(
        steps,
        ["1", "2", "5", "10", "20", "50", "100", "200", "300"]
    );

    // analyze --json contract
    let o = icl(&["analyze", out.to_str().unwrap(), "--json"]);
    assert!(o.status.success());
    let a: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    for h in a["heads"].as_array().unwrap() {
        assert!(h["omega"].is_f64() && h["mu"].is_f64());
        assert!(["positive", "negative", "dummy"].contains(&h["kind"].as_str().unwrap()));
    }
    assert!(out.join("circuits.svg").is_file());

    // plot --json: the training figures drawn again, the same bytes, listed with the folder's
    // other figures
    let loss_svg = std::fs::read(out.join("loss.svg")).unwrap();
    std::fs::write(out.join("loss.svg"), "stale").unwrap();
    let o = icl(&["plot", out.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let p: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        p["figures"],
        serde_json::json!(["circuits.svg", "loss.svg", "omega_mu.svg"])
    );
    assert!(std::fs::read(out.join("loss.svg")).unwrap() == loss_svg);
    // a folder that is not there: one line, exit 2
    let o = icl(&["plot", out.join("nothing").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&o.stderr).lines().count(), 1);

    // eval --json contract
    let o = icl(&[
        "eval",
        out.to_str().unwrap(),
        "--lengths",
        "10,50",
        "--samples",
        "300",
        "--json",
        "--engine",
        "scalar",
        "--plot",
        out.join("risk.png").to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let png = std::fs::read(out.join("risk.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "eval --plot wrote no PNG");
    let e: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let rows = e["rows"].as_array().unwrap();
    let names: Vec<&str> = rows
        .iter()
        .map(|r| r["estimator"].as_str().unwrap())
        .collect();
    for n in ["model", "vanilla_gd", "debiased_gd", "ridge", "ols", "nw"] {
        assert!(names.contains(&n), "{n} missing from {names:?}");
    }
    assert!(rows
        .iter()
        .all(|r| r["risk"].as_f64().unwrap() > 0.0 && r["stderr"].as_f64().unwrap() > 0.0));
    // --plot FILE.svg: a legend entry per estimator, the L' labels at the evaluated lengths
    let o = icl(&[
        "eval",
        out.to_str().unwrap(),
        "--lengths",
        "10,50",
        "--samples",
        "300",
        "--engine",
        "scalar",
        "--plot",
        out.join("risk.svg").to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let svg = svg_texts(&std::fs::read_to_string(out.join("risk.svg")).unwrap());
    // the legend in words, not identifiers
    for n in [
        "model",
        "vanilla GD (η*)",
        "debiased GD (η*)",
        "ridge (Bayes λ)",
        "OLS",
        "kernel regressor (ω*, μ*)",
        "10",
        "50",
    ] {
        assert!(svg.iter().any(|t| t == n), "risk.svg lacks {n}: {svg:?}");
    }
    // a --plot into a missing folder is one line, exit 2
    let o = icl(&[
        "eval",
        out.to_str().unwrap(),
        "--lengths",
        "10",
        "--samples",
        "300",
        "--plot",
        out.join("no/such/dir/risk.svg").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.starts_with("icl: error: ") && err.lines().count() == 1,
        "{err}"
    );
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn same_seed_same_numbers() {
    let (a, b) = (tmp("det-a"), tmp("det-b"));
    assert!(train(&a, &["--seed", "3"]).status.success());
    assert!(train(&b, &["--seed", "3"]).status.success());
    let ma = std::fs::read_to_string(a.join("metrics.csv")).unwrap();
    let mb = std::fs::read_to_string(b.join("metrics.csv")).unwrap();
    assert_eq!(ma, mb);
    let c = tmp("det-c");
    assert!(train(&c, &["--seed", "4"]).status.success());
    assert_ne!(ma, std::fs::read_to_string(c.join("metrics.csv")).unwrap());
    for d in [a, b, c] {
        std::fs::remove_dir_all(d).unwrap();
    }
}

#[test]
fn bad_input_exits_2_with_one_line_and_no_files() {
    let cases: &[&[&str]] = &[
        &["--preset", "nope"],
        &["--set", "task.nope=1"],
        &["--set", "task.d=0"],
        &["--set", "task.L=0"],
        &["--set", "task.sigma2=-0.1"],
        &["--set", "task.sigma2=NaN"],
        &["--set", "model.heads"],
        &["--engine", "warp-drive"],
    ];
    for (i, extra) in cases.iter().enumerate() {
        let out = tmp(&format!("bad-{i}"));
        let mut a = vec!["train", "--steps", "10", "--out", out.to_str().unwrap()];
        a.extend_from_slice(extra);
        let o = icl(&a);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{extra:?}: {err}");
        assert!(err.starts_with("icl: error: "), "{err}");
        assert!(!out.exists(), "{extra:?} left {out:?} behind");
    }
    // a missing required argument is named on the one line
    let o = icl(&["repro", "he2025"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("not provided: --out <OUT> (see --help)"),
        "{err}"
    );
    // missing and corrupt checkpoints
    let missing = tmp("missing");
    let o = icl(&["analyze", missing.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let corrupt = tmp("corrupt");
    std::fs::create_dir_all(&corrupt).unwrap();
    std::fs::write(
        corrupt.join("model.safetensors"),
        b"\x08\x00\x00\x00\x00\x00\x00\x00{garbage",
    )
    .unwrap();
    for cmd in ["analyze", "eval"] {
        let o = icl(&[cmd, corrupt.to_str().unwrap()]);
        assert_eq!(
            o.status.code(),
            Some(2),
            "{cmd}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&o.stderr).trim().lines().count(), 1);
    }
    assert!(!corrupt.join("circuits.svg").exists());
    std::fs::remove_dir_all(&corrupt).unwrap();
}

#[test]
fn existing_run_is_not_overwritten_without_force() {
    let out = tmp("force");
    assert!(train(&out, &[]).status.success());
    let before = std::fs::read(out.join("model.safetensors")).unwrap();
    let o = train(&out, &["--seed", "99"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        before,
        std::fs::read(out.join("model.safetensors")).unwrap()
    );
    assert!(train(&out, &["--seed", "99", "--force"]).status.success());
    std::fs::remove_dir_all(&out).unwrap();
}

/// `icl import --torch` of a state_dict in the reference code's layout: the run holds its
/// tensors, and `icl analyze` reads the circuits the file's tensors give; a wrong shape or a bias
/// is refused.
#[test]
fn import_torch_state_dict() {
    use safetensors::tensor::{Dtype, TensorView};
    // a state_dict in the reference layout: H=2, d=5 -> q/k/v [12, 6], o [1, 12]
    let (h, e) = (2usize, 6usize);
    let mk = |n: usize, salt: f32| -> Vec<u8> {
        (0..n)
            .flat_map(|i| ((i as f32 * 0.37 + salt).sin() * 0.4).to_le_bytes())
            .collect()
    };
    let (q, k, v, o_w) = (
        mk(h * e * e, 0.1),
        mk(h * e * e, 0.2),
        mk(h * e * e, 0.3),
        mk(h * e, 0.4),
    );
    let views = vec![
        (
            "q_proj.weight",
            TensorView::new(Dtype::F32, vec![h * e, e], &q).unwrap(),
        ),
        (
            "k_proj.weight",
            TensorView::new(Dtype::F32, vec![h * e, e], &k).unwrap(),
        ),
        (
            "v_proj.weight",
            TensorView::new(Dtype::F32, vec![h * e, e], &v).unwrap(),
        ),
        (
            "o_proj.weight",
            TensorView::new(Dtype::F32, vec![1, h * e], &o_w).unwrap(),
        ),
    ];
    let dir = tmp("import");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("sd.safetensors");
    std::fs::write(&file, safetensors::serialize(views.clone(), &None).unwrap()).unwrap();
    let run = dir.join("run");
    let o = icl(&[
        "import",
        "--torch",
        file.to_str().unwrap(),
        "--preset",
        "he2025",
        "--out",
        run.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // an imported model has no training log: `icl plot` refuses it, nothing written
    let files = |d: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        v.sort();
        v
    };
    let listed = files(&run);
    let o = icl(&["plot", run.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with("icl: error: ")
            && err.contains("no training log")
            && err.lines().count() == 1,
        "{err}"
    );
    assert_eq!(files(&run), listed);
    // the run's model holds the file's tensors, bit for bit
    let model = std::fs::read(run.join("model.safetensors")).unwrap();
    let model = safetensors::SafeTensors::deserialize(&model).unwrap();
    for (name, view) in &views {
        let t = model.tensor(name).unwrap();
        assert_eq!(t.dtype(), Dtype::F32, "{name}");
        assert_eq!(t.shape(), view.shape(), "{name}");
        assert!(t.data() == view.data(), "{name}: other values");
    }
    // the circuits `icl analyze` reads off it are the file's, computed here from the reference
    // code's formulas: head h's score z_l^T K_h^T Q_h z_q / sqrt(E), so KQ_h = K_h^T Q_h / sqrt(E)
    // (key side rows); OV_h = O[:, hE..(h+1)E] V_h; K_h, Q_h, V_h rows hE..(h+1)E
    let o = icl(&["analyze", run.to_str().unwrap(), "--json", "--no-plot"]);
    assert!(o.status.success());
    let a: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let heads = a["heads"].as_array().unwrap();
    assert_eq!(heads.len(), 2);
    let f = |b: &[u8]| -> Vec<f64> {
        b.chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()) as f64)
            .collect()
    };
    let (qf, kf, vf, of) = (f(&q), f(&k), f(&v), f(&o_w));
    let d = e - 1;
    let close = |got: f64, want: f64, what: String| {
        assert!(
            (got - want).abs() <= 1e-5 * (1.0 + want.abs()),
            "{what}: analyze says {got}, the file gives {want}"
        );
    };
    let num = |x: &serde_json::Value| x.as_f64().unwrap();
    for (hh, head) in heads.iter().enumerate() {
        let kq = |i: usize, j: usize| -> f64 {
            (0..e)
                .map(|r| kf[(hh * e + r) * e + i] * qf[(hh * e + r) * e + j])
                .sum::<f64>()
                / (e as f64).sqrt()
        };
        let ov = |c: usize| -> f64 {
            (0..e)
                .map(|r| of[hh * e + r] * vf[(hh * e + r) * e + c])
                .sum()
        };
        let diag: Vec<f64> = (0..d).map(|i| kq(i, i)).collect();
        let omega_diag = head["omega_diag"].as_array().unwrap();
        assert_eq!(omega_diag.len(), d);
        for (i, w) in diag.iter().enumerate() {
            close(num(&omega_diag[i]), *w, format!("head {hh} KQ[{i}][{i}]"));
        }
        close(
            num(&head["omega"]),
            diag.iter().sum::<f64>() / d as f64,
            format!("head {hh} omega"),
        );
        close(num(&head["mu"]), ov(d), format!("head {hh} mu = OV[0][d]"));
        let norm = |v: Vec<f64>| v.iter().map(|x| x * x).sum::<f64>().sqrt();
        close(
            num(&head["kq21_norm"]),
            norm((0..d).map(|j| kq(d, j)).collect()),
            format!("head {hh} ||KQ_21||"),
        );
        close(
            num(&head["ov21_norm"]),
            norm((0..d).map(ov).collect()),
            format!("head {hh} ||OV_21||"),
        );
    }
    // the wrong head count is a shape error, exit 2
    let run2 = dir.join("run2");
    let o = icl(&[
        "import",
        "--torch",
        file.to_str().unwrap(),
        "--set",
        "model.heads=3",
        "--out",
        run2.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!run2.exists());
    // a state_dict with biases (nn.Linear's default): refused, naming them, not dropped
    let (qb, ob) = (mk(h * e, 0.5), mk(1, 0.6));
    let mut with_bias = views.clone();
    with_bias.push((
        "q_proj.bias",
        TensorView::new(Dtype::F32, vec![h * e], &qb).unwrap(),
    ));
    with_bias.push((
        "o_proj.bias",
        TensorView::new(Dtype::F32, vec![1], &ob).unwrap(),
    ));
    let biased = dir.join("biased.safetensors");
    std::fs::write(&biased, safetensors::serialize(with_bias, &None).unwrap()).unwrap();
    let run3 = dir.join("run3");
    let o = icl(&[
        "import",
        "--torch",
        biased.to_str().unwrap(),
        "--preset",
        "he2025",
        "--out",
        run3.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("unexpected tensors")
            && err.contains("q_proj.bias")
            && err.contains("o_proj.bias"),
        "{err}"
    );
    assert!(!run3.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A multilayer run draws ⟨u₁, ω⟩ and ⟨u₂, ω⟩ over training in `pattern.svg` (a looped block:
/// one series per panel; a non-looped stack: one per layer), from the columns of metrics.csv.
#[test]
fn multilayer_run_draws_the_pattern_over_training() {
    for (looped, want) in [
        ("true", vec!["looped block"]),
        ("false", vec!["layer 1", "layer 2"]),
    ] {
        let out = tmp(&format!("pattern-{looped}"));
        let o = icl(&[
            "train",
            "--preset",
            "multilayer-t2",
            "--set",
            "task.L=8",
            "--set",
            "train.batch=4",
            "--set",
            "train.log_every=5",
            "--set",
            &format!("model.looped={looped}"),
            "--steps",
            "40",
            "--eval-samples",
            "20",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let csv = std::fs::read_to_string(out.join("metrics.csv")).unwrap();
        assert!(csv.lines().next().unwrap().contains("u1_omega"), "{csv}");
        let t = svg_texts(&std::fs::read_to_string(out.join("pattern.svg")).unwrap());
        assert!(t.iter().any(|x| x.starts_with("&lt;u₁, ω&gt;")), "{t:?}");
        for w in &want {
            assert_eq!(t.iter().filter(|x| x == w).count(), 2, "{w} in {t:?}");
        }
        let _ = std::fs::remove_dir_all(&out);
    }
}

/// A transformer wider than the SIMD kernels' tokens (d = 24: E = 25) says before training and
/// before evaluating that it runs on the scalar reference, and `summary.json` names the level
/// `scalar`; d = 23 (E = 24) runs vectorised, without the note.
#[test]
fn simd_scalar_fallback_is_announced_and_recorded() {
    for (d, fallback) in [("24", true), ("23", false)] {
        let out = tmp(&format!("fallback-{d}"));
        let o = icl(&[
            "train",
            "--preset",
            "multilayer-t2",
            "--set",
            &format!("task.d={d}"),
            "--set",
            "task.L=4",
            "--set",
            "train.batch=2",
            "--steps",
            "2",
            "--eval-samples",
            "0",
            "--out",
            out.to_str().unwrap(),
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{err}");
        let note = err.lines().find(|l| l.starts_with("icl: note: "));
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap())
                .unwrap();
        let level = summary["simd_level"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        // its evaluation says the same
        let e = icl(&[
            "eval",
            out.to_str().unwrap(),
            "--samples",
            "4",
            "--lengths",
            "4",
        ]);
        let eerr = String::from_utf8_lossy(&e.stderr);
        assert!(e.status.success(), "{eerr}");
        let enote = eerr.lines().find(|l| l.starts_with("icl: note: "));
        // and so does extending it with --resume
        let r = icl(&["train", "--resume", out.to_str().unwrap(), "--steps", "3"]);
        let rerr = String::from_utf8_lossy(&r.stderr);
        assert!(r.status.success(), "{rerr}");
        let rnote = rerr.lines().find(|l| l.starts_with("icl: note: "));
        if fallback {
            let note = note.unwrap_or_else(|| panic!("no note in {err}"));
            assert!(
                note.contains("E = 25") && note.contains("scalar reference"),
                "{note}"
            );
            assert_eq!(level, "scalar");
            assert_eq!(enote, Some(note), "{eerr}");
            assert_eq!(rnote, Some(note), "{rerr}");
        } else {
            assert!(note.is_none(), "{err}");
            assert!(enote.is_none(), "{eerr}");
            assert!(rnote.is_none(), "{rerr}");
            assert!(
                ["sse2", "avx2", "avx512"].contains(&level.as_str()),
                "{level}"
            );
        }
        let _ = std::fs::remove_dir_all(&out);
    }
}

#[test]
fn bench_table_marks_a_skipped_split_with_dashes() {
    let args = [
        "bench",
        "--heads",
        "1",
        "--dtypes",
        "f32",
        "--threads",
        "1",
        "--steps",
        "60",
    ];
    let o = icl(&[&args[..], &["--no-split"]].concat());
    assert!(o.status.success(), "{o:?}");
    let out = stdout(&o);
    let row = out.lines().nth(1).expect("a row under the header");
    let cols: Vec<&str> = row.split_whitespace().collect();
    // engine level type H L batch thr steps/s us/step | data fwbw optim | rss GFLOP/s
    assert_eq!(&cols[9..12], ["-", "-", "-"], "{out}");
    assert!(!out.contains("NaN"), "{out}");
    // with the split, the three columns are numbers
    let out = stdout(&icl(&args));
    let cols: Vec<String> = out
        .lines()
        .nth(1)
        .unwrap()
        .split_whitespace()
        .map(String::from)
        .collect();
    for c in &cols[9..12] {
        c.parse::<f64>()
            .unwrap_or_else(|_| panic!("{c:?} in {out}"));
    }
    // --repeat 3: each configuration's median with the spread, in the table and the JSON
    let two = [
        "bench",
        "--heads",
        "1",
        "--dtypes",
        "f32",
        "--steps",
        "60",
        "--threads",
        "1,2",
        "--no-split",
        "--repeat",
        "3",
    ];
    let out = stdout(&icl(&two));
    let rows: Vec<&str> = out.lines().skip(1).collect();
    assert_eq!(rows.len(), 2, "{out}");
    for r in rows {
        assert!(r.ends_with("(3 runs)"), "{out}");
    }
    let o = icl(&[&two[..], &["--json"]].concat());
    assert!(o.status.success(), "{o:?}");
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    for r in j["rows"].as_array().unwrap() {
        let (lo, hi) = (
            r["repeats"]["steps_per_s_min"].as_f64().unwrap(),
            r["repeats"]["steps_per_s_max"].as_f64().unwrap(),
        );
        let mid = r["steps_per_s"].as_f64().unwrap();
        assert!(lo <= mid && mid <= hi && r["repeats"]["n"] == 3, "{r}");
    }
    let o = icl(&[&args[..], &["--repeat", "0"]].concat());
    assert_eq!(o.status.code(), Some(2));
}

/// Where stderr is not a terminal (a log file, a cluster job's output) `icl train` prints a plain
/// progress line every ICL_PROGRESS_SECONDS (30 s by default) instead of a bar: step, loss,
/// steps/s and the time left; `-q` prints none, and an interval that is not a number of seconds
/// is refused before any work.
#[test]
fn train_logs_progress_lines_where_stderr_is_not_a_terminal() {
    let out = tmp("lines");
    let run = |env: &str, quiet: bool| -> Output {
        let mut a = vec![
            "train",
            "--preset",
            "quick",
            "--steps",
            "20000",
            "--eval-samples",
            "0",
            "--force",
            "--out",
        ];
        a.push(out.to_str().unwrap());
        if quiet {
            a.push("-q");
        }
        Command::new(env!("CARGO_BIN_EXE_icl"))
            .args(&a)
            .env("ICL_PROGRESS_SECONDS", env)
            .output()
            .unwrap()
    };
    let o = run("0.02", false);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(o.status.success(), "{err}");
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("icl: step "))
        .collect();
    assert!(lines.len() >= 2, "{err}");
    for l in &lines {
        assert!(
            l.contains("/20000, loss ") && l.contains(" steps/s, eta "),
            "{l}"
        );
    }
    let o = run("0.02", true);
    assert!(o.status.success() && o.stderr.is_empty(), "{o:?}");
    for bad in ["0", "abc", "-5"] {
        let o = run(bad, false);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{bad}: {err}");
        assert!(
            err.lines().count() == 1 && err.contains("ICL_PROGRESS_SECONDS"),
            "{bad}: {err}"
        );
    }
}
