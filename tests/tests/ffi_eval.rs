//! `icl_eval_run` (the C API's `icl eval`): the same rows as the run layer's `eval_run` for the
//! same options (temperatures and shifts included), and typed statuses for bad options.
use icl_ffi::{icl_eval_plot, icl_eval_run, icl_status};
use icl_run::eval::{eval_run, temper_from_text, EvalOptions};
use icl_run::train::{train, TrainOptions};
use icl_run::RunDir;
use std::ffi::{c_char, CString};
use std::path::Path;

fn call(dir: &Path, opts: &[(&str, &str)]) -> (icl_status, String) {
    let d = CString::new(dir.to_str().unwrap()).unwrap();
    let ks: Vec<CString> = opts
        .iter()
        .map(|(k, _)| CString::new(*k).unwrap())
        .collect();
    let vs: Vec<CString> = opts
        .iter()
        .map(|(_, v)| CString::new(*v).unwrap())
        .collect();
    let kp: Vec<*const c_char> = ks.iter().map(|c| c.as_ptr()).collect();
    let vp: Vec<*const c_char> = vs.iter().map(|c| c.as_ptr()).collect();
    let mut need = 0usize;
    let st = unsafe {
        icl_eval_run(
            d.as_ptr(),
            kp.as_ptr(),
            vp.as_ptr(),
            opts.len(),
            std::ptr::null_mut(),
            0,
            &mut need,
        )
    };
    if st != icl_status::ICL_ERR_SIZE {
        return (st, String::new());
    }
    let mut buf = vec![0u8; need];
    let st = unsafe {
        icl_eval_run(
            d.as_ptr(),
            kp.as_ptr(),
            vp.as_ptr(),
            opts.len(),
            buf.as_mut_ptr() as *mut c_char,
            need,
            std::ptr::null_mut(),
        )
    };
    buf.pop();
    (st, String::from_utf8(buf).unwrap())
}

#[test]
fn c_eval_is_the_run_layer_eval_with_tau_and_shift() {
    let out = std::env::temp_dir().join(format!("icl-ffi-eval-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let mut cfg = icl_core::presets::preset("quick").unwrap();
    cfg.set("train.steps", "200").unwrap();
    let o = TrainOptions {
        eval_samples: 0,
        engine: Some("scalar".into()),
        ..TrainOptions::default()
    };
    train(&cfg, &out, &o, &mut |_, _, _| true).unwrap();
    let (st, json) = call(
        &out,
        &[
            ("lengths", "8,16"),
            ("samples", "300"),
            ("seed", "4"),
            ("engine", "scalar"),
            ("tau", "0.7,opt"),
            ("tau_holdout", "200"),
            ("shift.x_cov", "2"),
            ("shift.noise", "0.5"),
        ],
    );
    assert_eq!(st, icl_status::ICL_OK);
    let want = eval_run(
        &RunDir::new(&out),
        &EvalOptions {
            lengths: vec![8, 16],
            samples: 300,
            seed: 4,
            engine: Some("scalar".into()),
            multilayer: Default::default(),
            temper: temper_from_text(Some("0.7,opt"), &["x_cov=2", "noise=0.5"], Some(200))
                .unwrap(),
        },
    )
    .unwrap();
    assert_eq!(json, serde_json::to_string(&want).unwrap());
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["rows"][0]["tau"], 0.7);
    assert_eq!(v["rows"][1]["tau_opt"], true);
    assert_eq!(v["rows"][0]["shift"]["x_cov"], 2.0);
    // icl_eval_plot draws those rows: a legend entry per estimator; bad input is typed
    let svg = CString::new(out.join("risk.svg").to_str().unwrap()).unwrap();
    let rows = CString::new(json.clone()).unwrap();
    assert_eq!(
        unsafe { icl_eval_plot(rows.as_ptr(), svg.as_ptr()) },
        icl_status::ICL_OK
    );
    let text = std::fs::read_to_string(out.join("risk.svg")).unwrap();
    for r in v["rows"].as_array().unwrap() {
        let name = r["estimator"].as_str().unwrap();
        assert!(
            text.contains(&format!("\n{name}")),
            "{name} not in the figure"
        );
    }
    let bad = CString::new("{\"rows\": 3}").unwrap();
    assert_eq!(
        unsafe { icl_eval_plot(bad.as_ptr(), svg.as_ptr()) },
        icl_status::ICL_ERR_ARGUMENT
    );
    let nowhere = CString::new(out.join("no/such/risk.svg").to_str().unwrap()).unwrap();
    assert_eq!(
        unsafe { icl_eval_plot(rows.as_ptr(), nowhere.as_ptr()) },
        icl_status::ICL_ERR_IO
    );
    assert_eq!(
        unsafe { icl_eval_plot(std::ptr::null(), svg.as_ptr()) },
        icl_status::ICL_ERR_NULL
    );
    for (opts, status) in [
        (vec![("tau", "0")], icl_status::ICL_ERR_ARGUMENT),
        (vec![("tau", "nan")], icl_status::ICL_ERR_NONFINITE),
        (vec![("shift.bogus", "1")], icl_status::ICL_ERR_UNKNOWN_KEY),
        (
            vec![("shift.x_cov", "[1,2,2,1,-1]")],
            icl_status::ICL_ERR_CONFIG,
        ),
        (vec![("colour", "red")], icl_status::ICL_ERR_ARGUMENT),
        (
            vec![("seed", "1"), ("seed", "2")],
            icl_status::ICL_ERR_ARGUMENT,
        ),
    ] {
        let mut all = vec![("lengths", "8"), ("samples", "50")];
        all.extend(opts.iter().copied());
        assert_eq!(call(&out, &all).0, status, "{opts:?}");
    }
    let _ = std::fs::remove_dir_all(&out);
}
