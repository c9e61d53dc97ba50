//! `icl theory temperature-error | optimal-temperature | temperature-isotropic | temperature-mc
//! --run DIR` end to end (issue 20): the closed forms at a trained run's linearised layer agree
//! with the Monte Carlo of that layer (same parameters, the project's `temperature-mc`) within 4
//! standard errors, and runs that cannot be mapped exit 2 with one line.
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn icl(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_icl"))
        .args(args)
        .output()
        .expect("run icl")
}

fn tmp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("icl-temprun-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    p
}

fn train(out: &Path, preset: &str, steps: &str, sets: &[&str]) {
    let mut a = vec![
        "train",
        "--preset",
        preset,
        "--steps",
        steps,
        "--eval-samples",
        "0",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ];
    for s in sets {
        a.extend(["--set", s]);
    }
    let o = icl(&a);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn json(args: &[&str]) -> serde_json::Value {
    let o = icl(args);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

fn f(v: &serde_json::Value, k: &str) -> f64 {
    v[k].as_f64()
        .unwrap_or_else(|| panic!("{k} missing in {v}"))
}

#[test]
fn closed_forms_at_a_trained_run_match_the_monte_carlo_of_its_linearised_layer() {
    let dir = tmp("h1");
    // a single-head softmax run (d = 5, L = 10 to keep the test fast)
    train(&dir, "he2025-h1", "400", &["task.L=10"]);
    let d = dir.to_str().unwrap();
    let opt = json(&["theory", "optimal-temperature", "--run", d, "--json"]);
    assert_eq!(opt["params"]["d"], "5");
    assert_eq!(opt["params"]["l"], "11");
    assert_eq!(opt["form"], "exact");
    assert_eq!(opt["run_keys"], "context");
    assert!(f(&opt, "a") > 0.0 && f(&opt, "c") > 0.0);
    // the same parameters through temperature-mc, both estimators, and a test-time shift
    for shift in [vec![], vec!["--test-sigma-x", "2", "--test-sigma", "0.5"]] {
        let mut base = vec!["theory", "optimal-temperature", "--run", d, "--json"];
        base.extend(&shift);
        let e = json(&base);
        let (a, b, c) = (f(&e, "a"), f(&e, "b"), f(&e, "c"));
        for est in ["plain", "conditional"] {
            let mut mc = vec![
                "theory",
                "temperature-mc",
                "--run",
                d,
                "--n",
                "20000",
                "--estimator",
                est,
                "--json",
            ];
            mc.extend(&shift);
            let m = json(&mc);
            let se: Vec<f64> = m["abc_stderr"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect();
            for (i, (k, want)) in [("a", a), ("b", b), ("c", c)].into_iter().enumerate() {
                let z = (f(&m, k) - want) / se[i];
                assert!(
                    z.abs() < 4.0,
                    "{shift:?} {est}: {k} exact {want} vs Monte Carlo {} +- {} ({z:.2} SE)",
                    f(&m, k),
                    se[i]
                );
            }
            for tau in ["0.5", "1", "2"] {
                let mut g = vec![
                    "theory",
                    "temperature-error",
                    "--run",
                    d,
                    "--tau",
                    tau,
                    "--json",
                ];
                g.extend(&shift);
                let exact = f(&json(&g), "value");
                let mut mc_tau = mc.clone();
                mc_tau.extend(["--tau", tau]);
                let m = json(&mc_tau);
                let z = (f(&m, "value") - exact) / f(&m, "stderr");
                assert!(z.abs() < 4.0, "{shift:?} {est} G({tau}): {z:.2} SE");
            }
        }
    }
    // temperature-isotropic at alpha = 1 is the run's own distribution (Sigma_w = I/d)
    let iso = json(&["theory", "temperature-isotropic", "--run", d, "--json"]);
    assert!((f(&iso, "value") - f(&opt, "value")).abs() < 1e-12);
    let _ = std::fs::remove_dir_all(&dir);
}

fn fails(args: &[&str], want: &str) {
    let o = icl(args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert!(o.stdout.is_empty());
    assert!(
        err.starts_with("icl: error: ") && err.contains(want),
        "{args:?}: {err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}

#[test]
fn runs_that_cannot_be_mapped_exit_2() {
    let two = tmp("h2");
    train(&two, "quick", "5", &["task.L=6"]);
    let lin = tmp("lin");
    train(&lin, "he2025-linear", "5", &["task.L=6"]);
    let one = tmp("h1-small");
    train(&one, "he2025-h1", "5", &["task.L=6"]);
    let (two, lin, one) = (
        two.to_str().unwrap().to_string(),
        lin.to_str().unwrap().to_string(),
        one.to_str().unwrap().to_string(),
    );
    fails(&["theory", "optimal-temperature", "--run", &two], "2 heads");
    fails(
        &["theory", "temperature-error", "--run", &lin],
        "linear attention",
    );
    fails(
        &["theory", "optimal-temperature", "--run", "/no/such/run"],
        "no such file",
    );
    fails(
        &["theory", "optimal-temperature", "--run", &one, "--d", "50"],
        "d = 5",
    );
    fails(
        &[
            "theory",
            "temperature-isotropic",
            "--run",
            &one,
            "--train-sigma",
            "1",
        ],
        "does not apply with --run",
    );
    fails(
        &["theory", "eta-star", "--run", &one],
        "unknown parameter --run",
    );
    for p in [two, lin, one] {
        let _ = std::fs::remove_dir_all(p);
    }
}
