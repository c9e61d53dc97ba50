//! `icl embedded` (the host side of examples/firmware) against `icl train --engine scalar`: the
//! same training gives the same omega, mu, final loss and risk, bit for bit.
use serde_json::Value;
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

#[test]
fn embedded_equals_icl_train_with_the_scalar_engine() {
    let out = std::env::temp_dir().join(format!("icl-cli-embedded-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    // the firmware's config (icl_core::embedded::config), trained by icl train
    let o = icl(&[
        "train",
        "--preset",
        "he2025",
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
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let ckpt = out.join("model.safetensors");
    let o = icl(&["embedded", "--checkpoint", ckpt.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    assert_eq!(text.lines().count(), 1, "one JSON line");
    let e: Value = serde_json::from_str(&text).unwrap();
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
    // predictions of the checkpoint (the same model): 8 finite values and their targets
    assert_eq!(e["checkpoint_step"].as_u64(), Some(200));
    assert_eq!(floats(&e["predictions"]).len(), 8);
    assert_eq!(floats(&e["targets"]).len(), 8);
    std::fs::remove_dir_all(&out).unwrap();
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
