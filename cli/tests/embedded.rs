//! `icl embedded` (the host side of examples/firmware) against `icl train --engine scalar`: the
//! same training gives the same omega, mu, final loss and risk, bit for bit.
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

fn icl(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_icl"))
        .args(args)
        .output()
        .expect("run icl")
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

/// Train `preset` at the firmware's sizes (icl_core::embedded::sized) with icl train and the
/// scalar engine; returns its summary.json and the checkpoint's path.
fn train_like_the_firmware(preset: &str, out: &Path) -> Value {
    let _ = std::fs::remove_dir_all(out);
    let o = icl(&[
        "train",
        "--preset",
        preset,
        "--set",
        "task.L=20",
        "--set",
        "train.batch=8",
        "--set",
        "train.steps=200",
        "--set",
        "train.lr=1e-2",
        "--set",
        "train.log_every=20",
        "--engine",
        "scalar",
        "--eval-samples",
        "256",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
}

/// The training fields of `icl embedded`'s line equal icl train's summary.
fn same_training(e: &Value, summary: &Value) {
    let heads = summary["heads"].as_array().unwrap();
    let omega: Vec<f64> = heads.iter().map(|h| h["omega"].as_f64().unwrap()).collect();
    let mu: Vec<f64> = heads.iter().map(|h| h["mu"].as_f64().unwrap()).collect();
    assert_eq!(floats(&e["omega"]), omega);
    assert_eq!(floats(&e["mu"]), mu);
    let loss = e["loss"].as_array().unwrap();
    assert_eq!(loss.len(), 11, "rows at steps 1, 20, ..., 200");
    let last = loss.last().unwrap().as_array().unwrap();
    assert_eq!(last[0].as_u64(), Some(200));
    assert_eq!(last[1].as_f64(), summary["final_loss"].as_f64());
    assert_eq!(e["risk"].as_f64(), summary["risk"]["risk"].as_f64());
}

#[test]
fn embedded_equals_icl_train_with_the_scalar_engine() {
    let base = std::env::temp_dir().join(format!("icl-cli-embedded-{}", std::process::id()));
    let full = train_like_the_firmware("he2025", &base.join("full"));
    let reduced = train_like_the_firmware("he2025-reduced", &base.join("reduced"));
    let ckpt = base.join("full").join("model.safetensors");
    let o = icl(&["embedded", "--checkpoint", ckpt.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    assert_eq!(text.lines().count(), 1, "one JSON line");
    let e: Value = serde_json::from_str(&text).unwrap();
    same_training(&e, &full);
    same_training(&e["reduced"], &reduced);
    // predictions of the checkpoint (the full model) on the first 8 sequences of its evaluation
    // stream: the host's `icl predict` on those sequences gives the same values
    assert_eq!(e["checkpoint_step"].as_u64(), Some(200));
    same_predictions_as_the_host(&e, &base.join("full"));
    std::fs::remove_dir_all(&base).unwrap();
}

/// `icl embedded`'s predictions and targets for the run in `run` equal the host's: the targets are
/// the first sequences of the run's evaluation stream (drawn here with the core's sampler) and
/// the predictions `icl predict`'s on those sequences, bit for bit with the scalar engine (the
/// same f32 code) and within 1e-5 (norm-wise) with the default engine.
fn same_predictions_as_the_host(e: &Value, run: &Path) {
    use icl_core::rng::Domain;
    use safetensors::tensor::{Dtype, TensorView};
    // the embedded line prints f32 values in their shortest round-trip form
    let f32s = |v: &Value| -> Vec<f32> { floats(v).iter().map(|&x| x as f32).collect() };
    let (pred, targets) = (f32s(&e["predictions"]), f32s(&e["targets"]));
    let n = pred.len();
    assert_eq!(n, 8);
    let cfg =
        icl_core::Config::from_toml(&std::fs::read_to_string(run.join("config.toml")).unwrap())
            .unwrap();
    let task = icl_core::data::Task::new(&cfg).unwrap();
    let (len, d) = (cfg.task.len, task.d);
    let batch = task.sample_batch::<f32>(cfg.train.seed, Domain::Eval, len as u64, n, len);
    assert_eq!(targets, batch.y, "the targets are the evaluation stream's");
    // xs [n, len + 1, d] and ys [n, len + 1]: the context pairs, then the query and its target
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for b in 0..n {
        for i in 0..=len {
            let tok = &batch.z[(b * (len + 1) + i) * (d + 1)..][..d + 1];
            xs.extend_from_slice(&tok[..d]);
            ys.push(if i < len { tok[d] } else { batch.y[b] });
        }
    }
    let bytes = |v: &[f32]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
    let (xb, yb) = (bytes(&xs), bytes(&ys));
    let input = run.with_file_name("prompts.safetensors");
    let views = vec![
        (
            "xs",
            TensorView::new(Dtype::F32, vec![n, len + 1, d], &xb).unwrap(),
        ),
        (
            "ys",
            TensorView::new(Dtype::F32, vec![n, len + 1], &yb).unwrap(),
        ),
    ];
    std::fs::write(&input, safetensors::serialize(views, &None).unwrap()).unwrap();
    let host = |engine: Option<&str>| -> Vec<f64> {
        let out = run.with_file_name("pred.safetensors");
        let (input, out_s) = (input.to_str().unwrap(), out.to_str().unwrap());
        let mut args = vec![
            "predict",
            run.to_str().unwrap(),
            "--input",
            input,
            "--out",
            out_s,
        ];
        if let Some(engine) = engine {
            args.extend(["--engine", engine]);
        }
        let o = icl(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let bytes = std::fs::read(&out).unwrap();
        let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
        let t = st.tensor("pred").unwrap();
        assert_eq!(t.shape(), [n, 1]);
        t.data()
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
            .collect()
    };
    let scalar: Vec<f32> = host(Some("scalar")).iter().map(|&x| x as f32).collect();
    assert_eq!(pred, scalar, "embedded vs icl predict --engine scalar");
    assert!(pred.iter().any(|&p| p != 0.0), "all predictions zero");
    let default = host(None);
    let (num, den) = pred
        .iter()
        .zip(&default)
        .fold((0.0, 0.0), |(a, b), (&p, &q)| {
            (a + (p as f64 - q).powi(2), b + q * q)
        });
    let rel = (num / den).sqrt();
    assert!(
        rel < 1e-5,
        "embedded vs icl predict (default engine): {rel:e}"
    );
}

#[test]
fn embedded_rejects_a_missing_or_damaged_checkpoint() {
    let o = icl(&["embedded", "--checkpoint", "/nonexistent/model.safetensors"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).starts_with("icl: error: "));
    let p = std::env::temp_dir().join(format!("icl-cli-embedded-bad-{}", std::process::id()));
    std::fs::write(&p, b"\x10\0\0\0\0\0\0\0{\"a\":1}").unwrap();
    let o = icl(&["embedded", "--checkpoint", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("corrupt"));
    std::fs::remove_file(&p).unwrap();
}

/// A multi-layer transformer's checkpoint is refused (exit 2, one line, before any training):
/// the embedded path predicts with one attention layer's circuits, which a transformer does not
/// have, so it printed zeros before.
#[test]
fn embedded_refuses_a_multilayer_checkpoint() {
    let base = std::env::temp_dir().join(format!("icl-cli-embedded-ml-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let run = base.join("t2");
    let o = icl(&[
        "train",
        "--preset",
        "multilayer-t2",
        "--set",
        "task.L=8",
        "--set",
        "train.batch=4",
        "--steps",
        "5",
        "--eval-samples",
        "8",
        "--quiet",
        "--out",
        run.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let ckpt = run.join("model.safetensors");
    let o = icl(&["embedded", "--checkpoint", ckpt.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        o.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("icl: error: unsupported: ") && err.contains("transformer T=2"),
        "{err}"
    );
    std::fs::remove_dir_all(&base).unwrap();
}
