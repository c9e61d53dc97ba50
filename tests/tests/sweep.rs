//! The sweep executor (`icl_core_run::sweep::run_specs`): same bytes for any number of parallel jobs,
//! complete runs skipped, interrupted and missing runs redone to the same bytes, bad specs
//! refused before anything is written.
use icl_core_run::sweep::{run_specs, RunSpec, RunStatus};
use icl_core_run::train::TrainOptions;
use std::path::{Path, PathBuf};

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("icl-sweep-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn spec(name: &str, sets: &[(&str, &str)]) -> RunSpec {
    RunSpec {
        name: name.into(),
        preset: Some("quick".into()),
        config: None,
        set: sets
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .chain([
                ("train.steps".to_string(), "120".to_string()),
                ("train.log_every".to_string(), "20".to_string()),
                ("train.batch".to_string(), "32".to_string()),
            ])
            .collect(),
    }
}

fn specs() -> Vec<RunSpec> {
    vec![
        spec(
            "heads=1,seed=1",
            &[("model.heads", "1"), ("train.seed", "1")],
        ),
        spec(
            "heads=2,seed=1",
            &[("model.heads", "2"), ("train.seed", "1")],
        ),
        spec(
            "heads=1,seed=2",
            &[("model.heads", "1"), ("train.seed", "2")],
        ),
    ]
}

fn opts() -> TrainOptions {
    TrainOptions {
        eval_samples: 200,
        ..TrainOptions::default()
    }
}

/// The bytes of a run folder that depend on the config only (not the timing in summary.json).
fn bytes(dir: &Path) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let r = |f: &str| std::fs::read(dir.join(f)).unwrap();
    (r("model.safetensors"), r("metrics.csv"), r("config.toml"))
}

fn go(_: usize, _: u64, _: u64, _: f64) -> bool {
    true
}

#[test]
fn jobs_do_not_change_bytes_and_complete_runs_are_skipped() {
    let (a, b) = (tmp("j1"), tmp("j2"));
    let s = specs();
    let ra = run_specs(&a, &s, 1, &opts(), &go).unwrap();
    let rb = run_specs(&b, &s, 2, &opts(), &go).unwrap();
    for (x, y) in ra.iter().zip(&rb) {
        assert!(matches!(x.status, RunStatus::Trained), "{x:?}");
        assert!(matches!(y.status, RunStatus::Trained), "{y:?}");
        assert_eq!(x.name, y.name);
        assert_eq!(x.steps, Some(120));
        assert!(x.seconds.unwrap() > 0.0 && x.steps_per_s.unwrap() > 0.0);
        assert_eq!(bytes(&x.dir), bytes(&y.dir), "{}", x.name);
    }
    // different seeds and heads give different runs
    assert_ne!(bytes(&ra[0].dir).0, bytes(&ra[2].dir).0);
    // again: everything is skipped, nothing rewritten
    let before = std::fs::read(a.join("heads=1,seed=1/summary.json")).unwrap();
    let again = run_specs(&a, &s, 2, &opts(), &go).unwrap();
    assert!(again
        .iter()
        .all(|r| matches!(r.status, RunStatus::Skipped) && r.seconds.is_some()));
    assert_eq!(
        before,
        std::fs::read(a.join("heads=1,seed=1/summary.json")).unwrap()
    );
    // a missing run is redone to the same bytes, the others skipped
    std::fs::remove_dir_all(a.join("heads=2,seed=1")).unwrap();
    let redo = run_specs(&a, &s, 1, &opts(), &go).unwrap();
    assert!(matches!(redo[0].status, RunStatus::Skipped));
    assert!(matches!(redo[1].status, RunStatus::Trained));
    assert!(matches!(redo[2].status, RunStatus::Skipped));
    assert_eq!(bytes(&redo[1].dir), bytes(&rb[1].dir));
    // the same name with another config in the folder is refused, not skipped
    let mut other = s.clone();
    other[0].set.push(("task.len".into(), "20".into()));
    let r = run_specs(&a, &other, 1, &opts(), &go).unwrap();
    assert!(matches!(r[0].status, RunStatus::Failed(_)), "{:?}", r[0]);
    let _ = std::fs::remove_dir_all(&a);
    let _ = std::fs::remove_dir_all(&b);
}

#[test]
fn an_interrupted_sweep_resumes_to_the_same_bytes() {
    let (a, b) = (tmp("int-a"), tmp("int-b"));
    let s = specs();
    let whole = run_specs(&a, &s, 1, &opts(), &go).unwrap();
    // stop the sweep at step 50 of the first run: it is checkpointed, the rest never start
    let stop = |i: usize, step: u64, _: u64, _: f64| !(i == 0 && step >= 50);
    let cut = run_specs(&b, &s, 1, &opts(), &stop).unwrap();
    assert!(
        matches!(cut[0].status, RunStatus::Interrupted { step: 50 }),
        "{:?}",
        cut[0]
    );
    assert!(cut[1..]
        .iter()
        .all(|r| matches!(r.status, RunStatus::NotStarted)));
    assert!(!b.join("heads=1,seed=1").exists());
    let rest = run_specs(&b, &s, 2, &opts(), &go).unwrap();
    assert!(
        matches!(rest[0].status, RunStatus::Resumed),
        "{:?}",
        rest[0]
    );
    assert!(matches!(rest[1].status, RunStatus::Trained));
    for (x, y) in whole.iter().zip(&rest) {
        assert_eq!(bytes(&x.dir), bytes(&y.dir), "{}", x.name);
    }
    let _ = std::fs::remove_dir_all(&a);
    let _ = std::fs::remove_dir_all(&b);
}

#[test]
fn bad_specs_are_refused_before_anything_runs() {
    let d = tmp("bad");
    let cases: Vec<Vec<RunSpec>> = vec![
        vec![spec("a", &[("model.nope", "1")])],
        vec![spec("a", &[("model.heads", "0")])],
        vec![spec("a", &[]), spec("a", &[("train.seed", "2")])],
        vec![spec("../escape", &[])],
        vec![spec("", &[])],
        vec![RunSpec {
            preset: Some("no-such-preset".into()),
            ..spec("a", &[])
        }],
        vec![RunSpec {
            preset: None,
            ..spec("a", &[])
        }],
        vec![RunSpec {
            preset: None,
            config: Some(d.join("missing.toml")),
            ..spec("a", &[])
        }],
    ];
    for c in cases {
        let e = run_specs(&d, &c, 1, &opts(), &go).unwrap_err();
        assert!(e.is_input(), "{e}");
        assert!(!d.exists(), "{e}: wrote {}", d.display());
    }
}

#[test]
fn each_run_is_reported_done_as_it_ends() {
    let d = tmp("done");
    let s = specs();
    let log = std::sync::Mutex::new(Vec::<String>::new());
    let push = |e: String| log.lock().unwrap().push(e);
    let started = std::sync::Mutex::new(std::collections::HashSet::new());
    let progress = |i: usize, _: u64, _: u64, _: f64| {
        if started.lock().unwrap().insert(i) {
            push(format!("start {i}"));
        }
        true
    };
    let done = |i: usize, r: &icl_core_run::sweep::RunResult| push(format!("{} {i}", r.name));
    let r = icl_core_run::sweep::run_specs_reporting(&d, &s[..2], 1, &opts(), &progress, &done)
        .unwrap();
    assert!(r.iter().all(|r| matches!(r.status, RunStatus::Trained)));
    // one job: run 0 ends (and is reported) before run 1 starts
    let want = ["start 0", "heads=1,seed=1 0", "start 1", "heads=2,seed=1 1"];
    assert_eq!(*log.lock().unwrap(), want);
    // a complete run is reported too (skipped), a run never started is not
    log.lock().unwrap().clear();
    let stop = |_: usize, _: u64, _: u64, _: f64| false;
    let r = icl_core_run::sweep::run_specs_reporting(&d, &s, 1, &opts(), &stop, &done).unwrap();
    assert!(matches!(r[0].status, RunStatus::Skipped));
    assert!(matches!(r[2].status, RunStatus::Interrupted { .. }));
    assert_eq!(
        *log.lock().unwrap(),
        ["heads=1,seed=1 0", "heads=2,seed=1 1", "heads=1,seed=2 2"]
    );
    let _ = std::fs::remove_dir_all(&d);
}
