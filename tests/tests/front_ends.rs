//! One protocol for every front end: a preset trained through the C API follows exactly the run
//! that `icl train` writes (every logged loss and every parameter bit for bit, default engine),
//! for a he2025 preset (fresh batches) and a zhang2025 preset (full-batch descent on a fixed set).
//! Before the one trainer, the C API trained zhang2025 presets on fresh batches.
mod ffi_common;

use icl_ffi::*;
use std::ffi::CString;
use std::process::Command;
use std::ptr::{null, null_mut};

fn check(s: icl_status) {
    assert_eq!(s, icl_status::ICL_OK, "{}", unsafe {
        std::ffi::CStr::from_ptr(icl_last_error()).to_string_lossy()
    });
}

/// (step, loss) of every log row and the parameters, through the C API.
fn api_run(preset: &str, sets: &[(&str, &str)], steps: u64) -> (Vec<(u64, f64)>, Vec<f64>) {
    let mut h = null_mut();
    let name = CString::new(preset).unwrap();
    check(unsafe { icl_config_preset(name.as_ptr(), &mut h) });
    let steps_text = steps.to_string();
    for (k, v) in sets.iter().chain(&[("train.steps", steps_text.as_str())]) {
        let (k, v) = (CString::new(*k).unwrap(), CString::new(*v).unwrap());
        check(unsafe { icl_config_set(h, k.as_ptr(), v.as_ptr()) });
    }
    let mut tr = null_mut();
    check(unsafe { icl_trainer_new(h, null(), &mut tr) });
    check(unsafe { icl_trainer_train(tr, steps, null_mut(), 0, null_mut()) });
    let mut rows = 0;
    check(unsafe { icl_trainer_log_len(tr, &mut rows) });
    let mut heads = 0usize;
    let mut dims = icl_dims::default();
    check(unsafe { icl_trainer_dims(tr, &mut dims) });
    if preset.starts_with("he2025") || preset == "quick" {
        heads = dims.heads;
    }
    let mut log = Vec::new();
    for i in 0..rows {
        let (mut s, mut l) = (0u64, 0.0);
        let (mut om, mut mu) = (vec![0.0; heads], vec![0.0; heads]);
        check(unsafe {
            icl_trainer_log_row(
                tr,
                i,
                &mut s,
                &mut l,
                om.as_mut_ptr(),
                heads,
                mu.as_mut_ptr(),
                heads,
            )
        });
        log.push((s, l));
    }
    let mut p = vec![0.0; dims.n_params];
    check(unsafe { icl_trainer_get_params(tr, p.as_mut_ptr(), p.len()) });
    unsafe {
        icl_trainer_free(tr);
        icl_config_free(h);
    }
    (log, p)
}

/// The same through `icl train`: the log and parameters stored in the run's model.safetensors.
fn cli_run(
    preset: &str,
    sets: &[(&str, &str)],
    steps: u64,
    name: &str,
) -> (Vec<(u64, f64)>, Vec<f64>) {
    let out = ffi_common::scratch(name);
    let _ = std::fs::remove_dir_all(&out);
    let mut cmd = Command::new(&ffi_common::built().icl);
    cmd.args([
        "train",
        "--preset",
        preset,
        "--steps",
        &steps.to_string(),
        "--quiet",
    ])
    .args(["--eval-samples", "0", "--out"])
    .arg(&out);
    for (k, v) in sets {
        cmd.arg("--set").arg(format!("{k}={v}"));
    }
    ffi_common::run(&mut cmd);
    let l = icl_core_run::checkpoint::load(&out.join("model.safetensors")).unwrap();
    // the C log lists every row, the regular ones and the early ones, by step (as metrics.csv)
    let (mut log, params) = match l.state.expect("a trained run keeps its trainer state") {
        icl_core_run::any::Either::F32(s) => (
            [s.log, s.early].concat(),
            s.params.iter().map(|&x| x as f64).collect(),
        ),
        icl_core_run::any::Either::F64(s) => ([s.log, s.early].concat(), s.params),
    };
    log.sort_by_key(|r| r.step);
    (log.iter().map(|r| (r.step, r.loss)).collect(), params)
}

fn same(preset: &str, sets: &[(&str, &str)], steps: u64, name: &str) {
    let (la, pa) = api_run(preset, sets, steps);
    let (lc, pc) = cli_run(preset, sets, steps, name);
    assert!(!la.is_empty());
    assert_eq!(la.len(), lc.len(), "{preset}: log lengths");
    for (a, c) in la.iter().zip(&lc) {
        assert_eq!(a.0, c.0, "{preset}: logged steps");
        assert_eq!(
            a.1.to_bits(),
            c.1.to_bits(),
            "{preset} step {}: {} vs {}",
            a.0,
            a.1,
            c.1
        );
    }
    assert_eq!(pa, pc, "{preset}: parameters");
}

#[test]
fn a_he2025_preset_runs_the_same_protocol_from_c_and_the_cli() {
    same("quick", &[("train.batch", "32")], 250, "fe-quick");
}

#[test]
fn a_zhang2025_preset_runs_the_same_protocol_from_c_and_the_cli() {
    // full-batch GD on the fixed set of P sequences: the first logged loss is the set's loss at
    // initialisation, 1.0084... (fresh batches would give 1.02, 1.25, ...)
    same("zhang2025-fig3", &[("task.P", "2000")], 60, "fe-fig3");
    let (log, _) = api_run("zhang2025-fig3", &[("task.P", "2000")], 10);
    assert!((log[0].1 - log[1].1).abs() < 1e-4, "full batch: {log:?}");
}
