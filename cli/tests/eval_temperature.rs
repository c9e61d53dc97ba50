//! `icl eval --tau ... --shift ...` end to end: the JSON rows gain "tau" and "shift", tau = 1
//! without a shift prints the plain evaluation's numbers, and bad temperatures or shifts exit 2
//! with one line and write nothing.
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn icl(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_icl"))
        .args(args)
        .output()
        .expect("run icl")
}

fn tmp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("icl-tempeval-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    p
}

fn train(out: &Path) {
    let o = icl(&[
        "train",
        "--preset",
        "quick",
        "--steps",
        "300",
        "--eval-samples",
        "200",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn eval_json(dir: &Path, extra: &[&str]) -> serde_json::Value {
    let mut a = vec![
        "eval",
        dir.to_str().unwrap(),
        "--lengths",
        "10,30",
        "--samples",
        "400",
        "--json",
    ];
    a.extend_from_slice(extra);
    let o = icl(&a);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn listing(dir: &Path) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                e.metadata().unwrap().len(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn tau_and_shift_rows_and_bad_input() {
    let dir = tmp("run");
    train(&dir);
    let plain = eval_json(&dir, &[]);
    let one = eval_json(&dir, &["--tau", "1"]);
    let rows = |v: &serde_json::Value| v["rows"].as_array().unwrap().clone();
    assert_eq!(rows(&plain).len(), rows(&one).len());
    for (a, b) in rows(&plain).iter().zip(&rows(&one)) {
        assert_eq!(a["estimator"], b["estimator"]);
        assert_eq!(
            a["risk"], b["risk"],
            "tau = 1 must reproduce the plain numbers"
        );
        assert_eq!(a["stderr"], b["stderr"]);
        assert!(a.get("shift").is_none());
    }
    // model rows carry tau; opt is reported with the tau it chose
    let t = eval_json(
        &dir,
        &[
            "--tau",
            "0.5,1,opt",
            "--shift",
            "x_cov=2",
            "--shift",
            "x_mean=2e1",
        ],
    );
    let models: Vec<&serde_json::Value> = t["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["estimator"] == "model")
        .collect();
    assert_eq!(models.len(), 6);
    for r in &models {
        assert!(r["tau"].as_f64().unwrap() > 0.0);
        assert_eq!(r["shift"]["x_cov"], 2.0);
        assert_eq!(r["shift"]["x_mean"], "2e1");
    }
    assert_eq!(models[2]["tau_opt"], true);
    assert!(models[0].get("tau_opt").is_none());
    let ridge = t["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["estimator"] == "ridge")
        .unwrap();
    assert!(ridge.get("tau").is_none());
    // the shift changes the data: the model's tau = 1 risk moves
    assert_ne!(models[1]["risk"], rows(&plain)[0]["risk"]);

    let before = listing(&dir);
    for bad in [
        vec!["--tau", "0"],
        vec!["--tau", "-1"],
        vec!["--tau", "nan"],
        vec!["--tau", "hot"],
        vec!["--shift", "x_cov=[1,2,2,1,0]"],
        vec!["--shift", "temperature=3"],
        vec!["--shift", "x_cov"],
        vec!["--shift", "x_cov=0"],
        vec!["--shift", "noise=-1"],
        vec!["--shift", "x_mean=1e9"],
        vec!["--tau", "opt", "--tau-holdout", "1"],
    ] {
        let mut a = vec![
            "eval",
            dir.to_str().unwrap(),
            "--lengths",
            "10",
            "--samples",
            "50",
        ];
        a.extend_from_slice(&bad);
        let o = icl(&a);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {err}");
        assert!(err.starts_with("icl: error: "), "{bad:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{bad:?}: {err}");
        assert!(o.stdout.is_empty(), "{bad:?}");
    }
    // quick's d = 5: a 5 x 5 matrix that is not positive definite
    let mut m = ["1"; 25];
    m[1] = "2";
    m[5] = "2";
    let arg = format!("x_cov=[{}]", m.join(","));
    let o = icl(&[
        "eval",
        dir.to_str().unwrap(),
        "--lengths",
        "10",
        "--shift",
        &arg,
    ]);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("positive definite"), "{err}");
    assert_eq!(listing(&dir), before, "eval wrote into the run folder");
    let _ = std::fs::remove_dir_all(&dir);
}
