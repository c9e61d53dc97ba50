//! `icl_sweep_plan`, `icl_sweep_run`, `icl_sweep_status`, `icl_sweep_collect` (the C API's
//! `icl sweep`): the runs and bytes of the run layer's sweep for the same file, the JSON forms,
//! and typed statuses for bad input with nothing written.
use icl_core_run::options::SweepRunArgs;
use icl_core_run::sweep::{self, front};
use icl_ffi::{
    icl_last_error, icl_status, icl_sweep_collect, icl_sweep_plan, icl_sweep_run, icl_sweep_status,
};
use serde_json::Value;
use std::ffi::{c_char, CStr, CString};
use std::path::{Path, PathBuf};

fn tmp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("icl-ffi-sweep-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    p
}

fn c(s: &str) -> CString {
    CString::new(s).unwrap()
}

fn cp(p: &Path) -> CString {
    c(p.to_str().unwrap())
}

fn last_error() -> String {
    unsafe { CStr::from_ptr(icl_last_error()) }
        .to_string_lossy()
        .into_owned()
}

/// Call `f(buf, cap, needed)` twice: for the size, then with a buffer of that size.
fn text(f: impl Fn(*mut c_char, usize, *mut usize) -> icl_status) -> (icl_status, String) {
    let mut need = 0usize;
    let st = f(std::ptr::null_mut(), 0, &mut need);
    if st != icl_status::ICL_ERR_SIZE {
        return (st, String::new());
    }
    let mut buf = vec![0u8; need];
    let st = f(buf.as_mut_ptr() as *mut c_char, need, std::ptr::null_mut());
    buf.pop();
    (st, String::from_utf8(buf).unwrap())
}

fn run(dir: &Path, opts: &[(&str, &str)]) -> (icl_status, String) {
    let d = cp(dir);
    let ks: Vec<CString> = opts.iter().map(|(k, _)| c(k)).collect();
    let vs: Vec<CString> = opts.iter().map(|(_, v)| c(v)).collect();
    let kp: Vec<*const c_char> = ks.iter().map(|x| x.as_ptr()).collect();
    let vp: Vec<*const c_char> = vs.iter().map(|x| x.as_ptr()).collect();
    // one call with room to spare: a second call would find the runs complete (skipped)
    let mut buf = vec![0u8; 1 << 20];
    let st = unsafe {
        icl_sweep_run(
            d.as_ptr(),
            kp.as_ptr(),
            vp.as_ptr(),
            opts.len(),
            buf.as_mut_ptr() as *mut c_char,
            buf.len(),
            std::ptr::null_mut(),
        )
    };
    let end = buf.iter().position(|&b| b == 0).unwrap_or(0);
    (st, String::from_utf8(buf[..end].to_vec()).unwrap())
}

fn plan(file: &Path, dir: &Path) -> (icl_status, String) {
    let (f, d) = (cp(file), cp(dir));
    text(|b, cap, n| unsafe { icl_sweep_plan(f.as_ptr(), d.as_ptr(), b, cap, n) })
}

fn status(dir: &Path) -> (icl_status, String) {
    let d = cp(dir);
    text(|b, cap, n| unsafe { icl_sweep_status(d.as_ptr(), b, cap, n) })
}

fn collect(dir: &Path, partial: bool) -> (icl_status, String) {
    let d = cp(dir);
    text(|b, cap, n| unsafe { icl_sweep_collect(d.as_ptr(), partial as i32, b, cap, n) })
}

const SWEEP: &str = r#"
preset = "quick"
seeds = [1, 2]
[set]
"train.steps" = 60
"train.log_every" = 20
"train.batch" = 8
[grid]
"model.heads" = [1, 2]
"#;

#[test]
fn c_sweeps_are_the_run_layer_sweeps() {
    let t = tmp("same");
    let file = t.join("sweep.toml");
    std::fs::write(&file, SWEEP).unwrap();
    let (a, b) = (t.join("a"), t.join("b"));
    // the plan: the manifest's lines, named by the values, the seed fastest
    let (st, json) = plan(&file, &a);
    assert_eq!(st, icl_status::ICL_OK, "{}", last_error());
    let runs: Value = serde_json::from_str(&json).unwrap();
    let names: Vec<&str> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "heads=1,seed=1",
            "heads=1,seed=2",
            "heads=2,seed=1",
            "heads=2,seed=2"
        ]
    );
    assert_eq!(runs[3]["index"], 3);
    assert_eq!(
        runs[3]["values"],
        serde_json::json!([["model.heads", 2], ["train.seed", 2]])
    );
    let p = sweep::plan(&file, &b).unwrap();
    assert_eq!(json, front::plan_json(&p.runs).to_string());
    // pending before, then run 2 alone (a Slurm task's run-one), then the rest two at a time
    let (st, json) = status(&a);
    assert_eq!(st, icl_status::ICL_OK);
    let v: Value = serde_json::from_str(&json).unwrap();
    assert!(v
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["state"] == "pending"));
    let opts = [("eval_samples", "0"), ("engine", "scalar")];
    let (st, json) = run(&a, &[("index", "2"), opts[0], opts[1]]);
    assert_eq!(st, icl_status::ICL_OK, "{}", last_error());
    let v: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 1);
    assert_eq!(v[0]["name"], "heads=2,seed=1");
    assert_eq!(v[0]["status"], "trained");
    assert_eq!(v[0]["steps"], 60);
    let (_, json) = status(&a);
    let v: Value = serde_json::from_str(&json).unwrap();
    let states: Vec<&str> = (0..4).map(|i| v[i]["state"].as_str().unwrap()).collect();
    assert_eq!(states, ["pending", "pending", "complete", "pending"]);
    assert_eq!(v[2]["steps"], 60);
    assert_eq!(
        json,
        Value::Array(
            sweep::status(&a)
                .unwrap()
                .iter()
                .map(front::state_json)
                .collect()
        )
        .to_string()
    );
    // the second Slurm task at two runs a task: runs 2 (complete, skipped) and 3
    let (st, task) = run(
        &a,
        &[("index", "1"), ("runs_per_task", "2"), opts[0], opts[1]],
    );
    assert_eq!(st, icl_status::ICL_OK, "{}", last_error());
    let v: Value = serde_json::from_str(&task).unwrap();
    let got: Vec<(&str, &str)> = (0..2)
        .map(|i| {
            (
                v[i]["name"].as_str().unwrap(),
                v[i]["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [("heads=2,seed=1", "skipped"), ("heads=2,seed=2", "trained")]
    );
    assert_eq!(v.as_array().unwrap().len(), 2);
    // a task past the last, and runs_per_task without a task, are refused
    for bad in [
        &[("index", "2"), ("runs_per_task", "2")][..],
        &[("runs_per_task", "2")][..],
        &[("index", "0"), ("runs_per_task", "0")][..],
    ] {
        let (st, _) = run(&a, bad);
        assert_eq!(st, icl_status::ICL_ERR_ARGUMENT, "{bad:?}");
    }
    let (st, json) = run(&a, &[("jobs", "2"), opts[0], opts[1]]);
    assert_eq!(st, icl_status::ICL_OK, "{}", last_error());
    let v: Value = serde_json::from_str(&json).unwrap();
    let got: Vec<&str> = (0..4).map(|i| v[i]["status"].as_str().unwrap()).collect();
    assert_eq!(got, ["trained", "trained", "skipped", "skipped"]);
    // the same sweep through the run layer, one at a time: the same bytes
    let o = icl_core_run::options::from_pairs::<SweepRunArgs, _, _>(&opts)
        .unwrap()
        .options()
        .unwrap();
    o.run(&b, &|_, _, _, _| true).unwrap();
    let (st, json) = collect(&a, false);
    assert_eq!(st, icl_status::ICL_OK, "{}", last_error());
    let want = sweep::collect(&b, false).unwrap();
    for f in ["results.csv", "results.json"] {
        assert_eq!(
            std::fs::read(a.join(f)).unwrap(),
            std::fs::read(b.join(f)).unwrap(),
            "{f}"
        );
    }
    let v: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["rows"], want.json["rows"]);
    assert_eq!(
        v["columns"],
        serde_json::json!(["model.heads", "train.seed"])
    );
    assert_eq!(v["incomplete"], serde_json::json!([]));
    let files: Vec<&str> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    assert!(
        files.contains(&a.join("results.csv").to_str().unwrap()),
        "{files:?}"
    );
    assert!(v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["metric"] == "final_loss" && r["run"] == "heads=2,seed=2"));
    let _ = std::fs::remove_dir_all(&t);
}

#[test]
fn bad_sweep_calls_are_typed_and_write_nothing() {
    let t = tmp("bad");
    let file = t.join("sweep.toml");
    std::fs::write(&file, SWEEP).unwrap();
    let dir = t.join("sw");
    // bad sweep files: nothing planned
    for (body, st) in [
        (
            SWEEP.replace("\"quick\"", "\"nope\""),
            icl_status::ICL_ERR_ARGUMENT,
        ),
        (
            SWEEP.replace("[1, 2]\n", "[]\n"),
            icl_status::ICL_ERR_ARGUMENT,
        ),
        ("preset = [".to_string(), icl_status::ICL_ERR_ARGUMENT),
    ] {
        let f = t.join("bad.toml");
        std::fs::write(&f, body).unwrap();
        assert_eq!(plan(&f, &dir).0, st, "{}", last_error());
        assert!(!dir.exists());
    }
    assert_eq!(
        plan(&t.join("missing.toml"), &dir).0,
        icl_status::ICL_ERR_IO
    );
    assert!(!dir.exists());
    // not a sweep folder
    assert_eq!(status(&dir).0, icl_status::ICL_ERR_ARGUMENT);
    assert!(
        last_error().contains("is not a sweep folder"),
        "{}",
        last_error()
    );
    assert_eq!(run(&dir, &[]).0, icl_status::ICL_ERR_ARGUMENT);
    assert_eq!(collect(&dir, true).0, icl_status::ICL_ERR_ARGUMENT);
    assert!(!dir.exists());
    // bad options: refused before anything trains
    assert_eq!(plan(&file, &dir).0, icl_status::ICL_OK);
    for (opts, st, msg) in [
        (
            vec![("jobs", "two")],
            icl_status::ICL_ERR_ARGUMENT,
            "not a non-negative integer",
        ),
        (
            vec![("jobs", "1"), ("index", "0")],
            icl_status::ICL_ERR_ARGUMENT,
            "not both",
        ),
        (
            vec![("index", "4")],
            icl_status::ICL_ERR_ARGUMENT,
            "runs 0..=3",
        ),
        (
            vec![("colour", "red")],
            icl_status::ICL_ERR_ARGUMENT,
            "unknown sweep option",
        ),
        (
            vec![("checkpoint_minutes", "nan")],
            icl_status::ICL_ERR_ARGUMENT,
            ">= 0",
        ),
        (
            vec![("engine", "cuda")],
            icl_status::ICL_ERR_UNKNOWN_NAME,
            "unknown engine",
        ),
    ] {
        assert_eq!(run(&dir, &opts).0, st, "{opts:?}");
        assert!(last_error().contains(msg), "{opts:?}: {}", last_error());
    }
    // a sweep not complete is not collected (nothing written) unless partial
    assert_eq!(collect(&dir, false).0, icl_status::ICL_ERR_ARGUMENT);
    assert!(!dir.join("results.json").exists());
    let (st, json) = collect(&dir, true);
    assert_eq!(st, icl_status::ICL_OK);
    let v: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["incomplete"].as_array().unwrap().len(), 4);
    assert_eq!(v["rows"], serde_json::json!([]));
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("seed="))
        .collect();
    assert!(names.is_empty(), "trained {names:?}");
    // NULL pointers and small buffers
    let d = cp(&dir);
    let mut need = 0usize;
    unsafe {
        assert_eq!(
            icl_sweep_status(std::ptr::null(), std::ptr::null_mut(), 0, &mut need),
            icl_status::ICL_ERR_NULL
        );
        assert_eq!(
            icl_sweep_status(d.as_ptr(), std::ptr::null_mut(), 8, &mut need),
            icl_status::ICL_ERR_NULL
        );
        assert_eq!(
            icl_sweep_run(
                d.as_ptr(),
                std::ptr::null(),
                std::ptr::null(),
                1,
                std::ptr::null_mut(),
                0,
                &mut need
            ),
            icl_status::ICL_ERR_NULL
        );
        assert_eq!(
            icl_sweep_plan(
                std::ptr::null(),
                d.as_ptr(),
                std::ptr::null_mut(),
                0,
                &mut need
            ),
            icl_status::ICL_ERR_NULL
        );
        let mut small = [0 as c_char; 4];
        assert_eq!(
            icl_sweep_status(d.as_ptr(), small.as_mut_ptr(), 4, &mut need),
            icl_status::ICL_ERR_SIZE
        );
        assert!(need > 4);
        assert_eq!(need, status(&dir).1.len() + 1);
    }
    let _ = std::fs::remove_dir_all(&t);
}
