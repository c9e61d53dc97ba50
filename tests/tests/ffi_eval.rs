//! `icl_eval_run` (the C API's `icl eval`): the same rows as the run layer's `eval_run` for the
//! same options (temperatures and shifts included), and typed statuses for bad options.
use icl_core_run::eval::{eval_run, temper_from_text, EvalOptions};
use icl_core_run::train::{train, TrainOptions};
use icl_core_run::RunDir;
use icl_ffi::{icl_eval_plot, icl_eval_run, icl_status};
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
    // each estimator in the legend by its reader's name ("vanilla GD (η*)", not vanilla_gd)
    for r in v["rows"].as_array().unwrap() {
        let name = icl_core_run::plot::figures::estimator_name(r["estimator"].as_str().unwrap());
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

/// `icl_train_run` (the C API's `icl train`): the run folder of the run layer's `train` with the
/// same options, byte for byte, and `summary.json`'s text copied out; typed statuses for bad
/// options, reported before anything is trained.
#[test]
fn c_train_run_is_icl_train() {
    let base = std::env::temp_dir().join(format!("icl-ffi-train-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let mut cfg = std::ptr::null_mut();
    let preset = CString::new("quick").unwrap();
    assert_eq!(
        unsafe { icl_ffi::icl_config_preset(preset.as_ptr(), &mut cfg) },
        icl_status::ICL_OK
    );
    let call = |out: &Path, opts: &[(&str, &str)], cap: usize| -> (icl_status, String, usize) {
        let d = CString::new(out.to_str().unwrap()).unwrap();
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
        let mut buf = vec![0u8; cap];
        let mut need = 0usize;
        let st = unsafe {
            icl_ffi::icl_train_run(
                cfg,
                d.as_ptr(),
                kp.as_ptr(),
                vp.as_ptr(),
                opts.len(),
                if cap == 0 {
                    std::ptr::null_mut()
                } else {
                    buf.as_mut_ptr() as *mut c_char
                },
                cap,
                &mut need,
            )
        };
        let text = buf.split(|&b| b == 0).next().unwrap_or(&[]).to_vec();
        (st, String::from_utf8(text).unwrap(), need)
    };
    let opts = [
        ("steps", "120"),
        ("seed", "5"),
        ("engine", "scalar"),
        ("eval_samples", "50"),
        ("checkpoint_every", "40"),
    ];
    let c_out = base.join("c");
    let (st, summary, need) = call(&c_out, &opts, 1 << 16);
    assert_eq!(st, icl_status::ICL_OK, "{}", unsafe {
        std::ffi::CStr::from_ptr(icl_ffi::icl_last_error()).to_string_lossy()
    });
    assert_eq!(need, summary.len() + 1);
    assert_eq!(
        summary,
        std::fs::read_to_string(c_out.join("summary.json")).unwrap()
    );
    // the run layer's train with the same options
    let mut want = icl_core::presets::preset("quick").unwrap();
    want.set("train.steps", "120").unwrap();
    want.set("train.seed", "5").unwrap();
    let o = TrainOptions {
        eval_samples: 50,
        engine: Some("scalar".into()),
        checkpoint_every: 40,
        ..TrainOptions::default()
    };
    let rl_out = base.join("rl");
    train(&want, &rl_out, &o, &mut |_, _, _| true).unwrap();
    for f in ["model.safetensors", "metrics.csv", "config.toml"] {
        assert_eq!(
            std::fs::read(c_out.join(f)).unwrap(),
            std::fs::read(rl_out.join(f)).unwrap(),
            "{f}"
        );
    }
    // a folder that holds a run is refused without force, replaced with it
    assert_eq!(call(&c_out, &opts, 0).0, icl_status::ICL_ERR_ARGUMENT);
    let mut forced = opts.to_vec();
    forced.push(("force", "true"));
    assert_eq!(call(&c_out, &forced, 1 << 16).0, icl_status::ICL_OK);
    // bad options: nothing is trained
    let bad = base.join("bad");
    for (o, status) in [
        (vec![("stpes", "10")], icl_status::ICL_ERR_ARGUMENT),
        (vec![("steps", "-1")], icl_status::ICL_ERR_ARGUMENT),
        (
            vec![("steps", "1000000000000000")],
            icl_status::ICL_ERR_CONFIG,
        ),
        (
            vec![("checkpoint_minutes", "-1")],
            icl_status::ICL_ERR_ARGUMENT,
        ),
        (
            vec![("checkpoint_minutes", "nan")],
            icl_status::ICL_ERR_ARGUMENT,
        ),
        (vec![("force", "maybe")], icl_status::ICL_ERR_ARGUMENT),
        (vec![("engine", "warp")], icl_status::ICL_ERR_UNKNOWN_NAME),
        (
            vec![("seed", "1"), ("seed", "2")],
            icl_status::ICL_ERR_ARGUMENT,
        ),
        (
            vec![("eval_samples", "1000000000")],
            icl_status::ICL_ERR_SIZE,
        ),
    ] {
        assert_eq!(call(&bad, &o, 0).0, status, "{o:?}");
        assert!(!bad.exists(), "{o:?}");
    }
    // NULL and output pointers are checked before training
    let d = CString::new(bad.to_str().unwrap()).unwrap();
    let (nk, nb, nn) = (
        std::ptr::null::<*const c_char>(),
        std::ptr::null_mut::<c_char>(),
        std::ptr::null_mut::<usize>(),
    );
    unsafe {
        use icl_ffi::icl_train_run as tr;
        let st = |s| assert_eq!(s, icl_status::ICL_ERR_NULL);
        st(tr(std::ptr::null(), d.as_ptr(), nk, nk, 0, nb, 0, nn));
        st(tr(cfg, std::ptr::null(), nk, nk, 0, nb, 0, nn));
        st(tr(cfg, d.as_ptr(), nk, nk, 1, nb, 0, nn));
        st(tr(cfg, d.as_ptr(), nk, nk, 0, nb, 8, nn));
        icl_ffi::icl_config_free(cfg);
    }
    assert!(!bad.exists());
    let _ = std::fs::remove_dir_all(&base);
}
