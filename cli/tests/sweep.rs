//! `icl sweep` end to end: plan naming and manifest, local runs (any --jobs) and Slurm-style
//! `run-one` tasks collecting to the same bytes, resuming a killed run, bad input.
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn icl(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_icl"))
        .args(args)
        .output()
        .expect("run icl")
}

fn tmp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("icl-sweep-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    p
}

fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

const SWEEP: &str = r#"
preset = "quick"
seeds = [1, 2]
[set]
"train.steps" = 100
"train.log_every" = 20
"train.batch" = 16
[grid]
"model.heads" = [1, 2]
"#;

fn write_sweep(dir: &Path, text: &str) -> PathBuf {
    let f = dir.join("sweep.toml");
    std::fs::write(&f, text).unwrap();
    f
}

fn plan(file: &Path, out: &Path) {
    ok(&icl(&["sweep", "plan", s(file), "--out", s(out)]));
}

#[test]
fn plan_names_runs_by_their_values_and_writes_one_manifest_line_each() {
    let t = tmp("plan");
    let f = write_sweep(&t, SWEEP);
    let dir = t.join("sw");
    let o = ok(&icl(&["sweep", "plan", s(&f), "--out", s(&dir)]));
    assert_eq!(o.trim(), s(&dir.join("manifest.jsonl")));
    let text = std::fs::read_to_string(dir.join("manifest.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // every combination, the seed fastest
    let mut want = Vec::new();
    for h in [1, 2] {
        for seed in [1, 2] {
            want.push((h, seed));
        }
    }
    assert_eq!(lines.len(), want.len());
    for (i, (l, (h, seed))) in lines.iter().zip(&want).enumerate() {
        assert_eq!(l["index"], i);
        assert_eq!(l["name"], format!("heads={h},seed={seed}"));
        assert_eq!(l["preset"], "quick");
        assert_eq!(
            l["values"],
            serde_json::json!([["model.heads", h], ["train.seed", seed]])
        );
        let set = l["set"].as_array().unwrap();
        assert!(set.contains(&serde_json::json!(["train.steps", "100"])));
        assert!(set.contains(&serde_json::json!(["model.heads", h.to_string()])));
        assert!(set.contains(&serde_json::json!(["train.seed", seed.to_string()])));
    }
    // planning again with the same file is a no-op; another plan into the folder is refused
    plan(&f, &dir);
    assert_eq!(
        std::fs::read_to_string(dir.join("manifest.jsonl")).unwrap(),
        text
    );
    let f2 = write_sweep(
        &t,
        &SWEEP.replace("\"train.steps\" = 100", "\"train.steps\" = 200"),
    );
    let o = icl(&["sweep", "plan", s(&f2), "--out", s(&dir)]);
    assert_eq!(o.status.code(), Some(2));
    // a config-file sweep: the config is copied into the folder; grid keys in sorted order,
    // string values as text
    let cfg = t.join("base.toml");
    std::fs::write(&cfg, icl_core::presets::preset("quick").unwrap().to_toml()).unwrap();
    let f3 = t.join("cfg-sweep.toml");
    std::fs::write(
        &f3,
        "config = \"base.toml\"\n[grid]\n\"task.d\" = [3]\n\"task.len\" = [10, 20]\n\"train.dtype\" = [\"f64\"]\n",
    )
    .unwrap();
    let dir3 = t.join("sw3");
    plan(&f3, &dir3);
    assert_eq!(
        std::fs::read(dir3.join("base.toml")).unwrap(),
        std::fs::read(&cfg).unwrap()
    );
    let names: Vec<String> = std::fs::read_to_string(dir3.join("manifest.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["name"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(names, ["d=3,len=10,dtype=f64", "d=3,len=20,dtype=f64"]);
    let _ = std::fs::remove_dir_all(&t);
}

fn collect(dir: &Path) -> (Vec<u8>, Vec<u8>) {
    ok(&icl(&["sweep", "collect", s(dir)]));
    (
        std::fs::read(dir.join("results.csv")).unwrap(),
        std::fs::read(dir.join("results.json")).unwrap(),
    )
}

#[test]
fn local_jobs_and_array_tasks_collect_the_same_bytes() {
    let t = tmp("run");
    let f = write_sweep(&t, SWEEP);
    let (a, b) = (t.join("a"), t.join("b"));
    plan(&f, &a);
    plan(&f, &b);
    // not complete yet: collect refuses (exit 2), status says pending
    assert_eq!(icl(&["sweep", "collect", s(&a)]).status.code(), Some(2));
    let st = ok(&icl(&["sweep", "status", s(&a)]));
    assert!(
        st.contains("4 runs: 0 complete, 0 running, 0 interrupted, 4 pending"),
        "{st}"
    );

    ok(&icl(&[
        "sweep",
        "run",
        s(&a),
        "--jobs",
        "2",
        "--eval-samples",
        "300",
        "-q",
    ]));
    for i in (0..4).rev() {
        ok(&icl(&[
            "sweep",
            "run-one",
            s(&b),
            "--index",
            &i.to_string(),
            "--eval-samples",
            "300",
            "-q",
        ]));
    }
    let st = ok(&icl(&["sweep", "status", s(&a)]));
    assert!(st.contains("4 runs: 4 complete"), "{st}");
    let ra = collect(&a);
    assert_eq!(ra, collect(&b), "local --jobs 2 and run-one tasks differ");

    // the table: one row per run x metric, grid values and seed as columns, numbers from the runs
    let csv = String::from_utf8(ra.0).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next().unwrap(),
        "run,model.heads,train.seed,metric,value"
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let json: serde_json::Value = serde_json::from_slice(&ra.1).unwrap();
    assert_eq!(json["rows"].as_array().unwrap().len(), rows.len());
    for (h, seed) in [(1, 1), (1, 2), (2, 1), (2, 2)] {
        let name = format!("heads={h},seed={seed}");
        let summary: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(a.join(&name).join("summary.json")).unwrap(),
        )
        .unwrap();
        // rows of this run: the CSV quotes names holding commas
        let quoted = format!("\"{name}\"");
        let mine: Vec<&str> = csv.lines().filter(|l| l.starts_with(&quoted)).collect();
        let get = |metric: &str| -> f64 {
            let l = mine
                .iter()
                .find(|l| l.split(',').nth(4) == Some(metric))
                .unwrap_or_else(|| panic!("{name}: no {metric} row"));
            assert!(
                l.starts_with(&format!("{quoted},{h},{seed},{metric},")),
                "{l}"
            );
            l.rsplit(',').next().unwrap().parse().unwrap()
        };
        assert_eq!(get("final_loss"), summary["final_loss"].as_f64().unwrap());
        assert_eq!(get("risk.risk"), summary["risk"]["risk"].as_f64().unwrap());
        assert_eq!(get("steps"), 100.0);
        for k in 0..h {
            assert_eq!(
                get(&format!("heads.{k}.omega")),
                summary["heads"][k]["omega"].as_f64().unwrap()
            );
        }
        // no timing among the metrics
        assert!(!mine.iter().any(|l| l.contains("seconds")), "{name}");
    }
    assert!(a.join("summary_final_loss.svg").is_file());
    assert!(a.join("summary_risk.svg").is_file());
    let runs = std::fs::read_to_string(a.join("runs.csv")).unwrap();
    assert_eq!(runs.lines().count(), 5);

    // a missing run is redone, the complete ones skipped; the results do not change
    std::fs::remove_dir_all(a.join("heads=2,seed=1")).unwrap();
    let o = icl(&["sweep", "run", s(&a), "--eval-samples", "300", "--json"]);
    let out = ok(&o);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.matches("complete (skipped)").count(), 3, "{err}");
    assert!(err.contains("heads=2,seed=1: trained"), "{err}");
    // --json: one object per run, in the manifest's order
    let res: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let got: Vec<(&str, &str)> = res
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["name"].as_str().unwrap(), r["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        got,
        [
            ("heads=1,seed=1", "skipped"),
            ("heads=1,seed=2", "skipped"),
            ("heads=2,seed=1", "trained"),
            ("heads=2,seed=2", "skipped")
        ]
    );
    assert_eq!(res[2]["steps"], 100);
    assert_eq!(collect(&a).0, csv.as_bytes());
    // collect --json: results.json's rows and columns, nothing left out, the files written
    let cj: serde_json::Value =
        serde_json::from_str(&ok(&icl(&["sweep", "collect", s(&a), "--json"]))).unwrap();
    assert_eq!(cj["rows"], json["rows"]);
    assert_eq!(cj["columns"], json["columns"]);
    assert_eq!(cj["incomplete"], serde_json::json!([]));
    assert!(cj["files"]
        .as_array()
        .unwrap()
        .contains(&serde_json::json!(a.join("results.csv").to_str().unwrap())));
    // plan --json: the manifest's lines as one array
    let pj: serde_json::Value = serde_json::from_str(&ok(&icl(&[
        "sweep",
        "plan",
        s(&f),
        "--out",
        s(&a),
        "--json",
    ])))
    .unwrap();
    let manifest: Vec<serde_json::Value> = std::fs::read_to_string(a.join("manifest.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(pj, serde_json::Value::Array(manifest));

    // Slurm: the array script runs run-one for each index
    let sh = ok(&icl(&[
        "sweep",
        "slurm",
        s(&a),
        "--partition",
        "debug",
        "--time",
        "10:00",
        "--cpus-per-task",
        "2",
        "--sbatch=--account=abc",
    ]));
    let script = std::fs::read_to_string(sh.trim()).unwrap();
    for want in [
        "#SBATCH --array=0-3",
        "#SBATCH --partition=debug",
        "#SBATCH --time=10:00",
        "#SBATCH --cpus-per-task=2",
        "#SBATCH --account=abc",
        "sweep run-one",
        "--index \"$SLURM_ARRAY_TASK_ID\"",
    ] {
        assert!(script.contains(want), "{want}: {script}");
    }
    // three runs a task: tasks 0 and 1 (runs 0-2 and 3), each told its share
    let sh = ok(&icl(&[
        "sweep",
        "slurm",
        s(&a),
        "--runs-per-task",
        "3",
        "--engine",
        "vulkan",
    ]));
    let script = std::fs::read_to_string(sh.trim()).unwrap();
    for want in [
        "#SBATCH --array=0-1\n",
        "--index \"$SLURM_ARRAY_TASK_ID\" --runs-per-task 3 --engine vulkan",
    ] {
        assert!(script.contains(want), "{want}: {script}");
    }
    let bad = icl(&["sweep", "slurm", s(&a), "--runs-per-task", "0"]);
    assert_eq!(bad.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&t);
}

#[test]
fn a_killed_run_resumes_to_the_bytes_of_an_uninterrupted_one() {
    let t = tmp("kill");
    let text = SWEEP
        .replace("\"train.steps\" = 100", "\"train.steps\" = 3000")
        .replace("seeds = [1, 2]", "seeds = [7]")
        .replace("[1, 2]\n", "[2]\n");
    let f = write_sweep(&t, &text);
    let (a, b) = (t.join("a"), t.join("b"));
    plan(&f, &a);
    plan(&f, &b);
    ok(&icl(&["sweep", "run", s(&a), "--eval-samples", "0", "-q"]));
    let mut child = Command::new(env!("CARGO_BIN_EXE_icl"))
        .args([
            "sweep",
            "run",
            s(&b),
            "--eval-samples",
            "0",
            "-q",
            "--checkpoint-every",
            "100",
        ])
        .spawn()
        .unwrap();
    let ckpt = b.join(".heads=2,seed=7.partial/checkpoint.safetensors");
    let t0 = std::time::Instant::now();
    while !ckpt.is_file() && t0.elapsed().as_secs() < 120 {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(ckpt.is_file(), "no checkpoint before the run ended");
    assert!(
        !b.join("heads=2,seed=7").exists(),
        "the run finished before it was killed"
    );
    let st = ok(&icl(&["sweep", "status", s(&b)]));
    assert!(st.contains("interrupted"), "{st}");
    let o = icl(&["sweep", "run", s(&b), "--eval-samples", "0"]);
    ok(&o);
    assert!(String::from_utf8_lossy(&o.stderr).contains("heads=2,seed=7: resumed"));
    for file in ["model.safetensors", "metrics.csv"] {
        assert_eq!(
            std::fs::read(a.join("heads=2,seed=7").join(file)).unwrap(),
            std::fs::read(b.join("heads=2,seed=7").join(file)).unwrap(),
            "{file}"
        );
    }
    assert_eq!(collect(&a), collect(&b));
    let _ = std::fs::remove_dir_all(&t);
}

/// A run is complete only if its folder is a readable complete run, not because summary.json
/// exists: a deleted model and a corrupt summary are `damaged` in status, incomplete for
/// collect, and trained again by run (to the same bytes), consistently.
#[test]
fn a_damaged_run_is_not_complete_for_run_status_or_collect() {
    let t = tmp("damaged");
    let text = SWEEP.replace("\"model.heads\" = [1, 2]", "\"model.heads\" = [1]");
    let f = write_sweep(&t, &text);
    let dir = t.join("sw");
    plan(&f, &dir);
    ok(&icl(&[
        "sweep",
        "run",
        s(&dir),
        "--eval-samples",
        "0",
        "-q",
    ]));
    let (a, b) = (dir.join("heads=1,seed=1"), dir.join("heads=1,seed=2"));
    let model_a = std::fs::read(a.join("model.safetensors")).unwrap();
    std::fs::remove_file(a.join("model.safetensors")).unwrap();
    std::fs::write(b.join("summary.json"), b"{\"steps\": ").unwrap();
    let st = ok(&icl(&["sweep", "status", s(&dir), "--json"]));
    let states: Vec<serde_json::Value> = st
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(states.len(), 2, "{st}");
    for v in &states {
        assert_eq!(v["state"], "damaged", "{st}");
        assert!(v["reason"].as_str().is_some_and(|r| !r.is_empty()), "{st}");
    }
    let text = ok(&icl(&["sweep", "status", s(&dir)]));
    assert!(text.contains("2 damaged"), "{text}");
    let o = icl(&["sweep", "collect", s(&dir)]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!dir.join("results.csv").exists());
    // run trains both again: not "skipped"
    let o = icl(&["sweep", "run", s(&dir), "--eval-samples", "0", "--json"]);
    let out = ok(&o);
    assert_eq!(out.matches("\"trained\"").count(), 2, "{out}");
    assert_eq!(std::fs::read(a.join("model.safetensors")).unwrap(), model_a);
    assert!(serde_json::from_slice::<serde_json::Value>(
        &std::fs::read(b.join("summary.json")).unwrap()
    )
    .is_ok());
    let st = ok(&icl(&["sweep", "status", s(&dir)]));
    assert!(st.contains("2 complete"), "{st}");
    collect(&dir);
    let _ = std::fs::remove_dir_all(&t);
}

#[test]
fn bad_input_exits_2_with_one_line_and_writes_nothing() {
    let t = tmp("bad");
    let cases = [
        (
            "unknown grid key",
            SWEEP.replace("\"model.heads\" = [1, 2]", "\"model.nope\" = [1, 2]"),
        ),
        (
            "empty grid list",
            SWEEP.replace("\"model.heads\" = [1, 2]", "\"model.heads\" = []"),
        ),
        (
            "grid value not a list",
            SWEEP.replace("\"model.heads\" = [1, 2]", "\"model.heads\" = 2"),
        ),
        (
            "grid value out of range",
            SWEEP.replace("\"model.heads\" = [1, 2]", "\"model.heads\" = [1, 0]"),
        ),
        (
            "unknown set key",
            SWEEP.replace("\"train.batch\"", "\"train.bach\""),
        ),
        ("unknown top-level key", format!("seed = 3\n{SWEEP}")),
        ("not TOML", "preset = \"quick\"\n[grid\n".to_string()),
        (
            "no preset or config",
            SWEEP.replace("preset = \"quick\"", ""),
        ),
        (
            "both",
            SWEEP.replace(
                "preset = \"quick\"",
                "preset = \"quick\"\nconfig = \"x.toml\"",
            ),
        ),
        ("unknown preset", SWEEP.replace("\"quick\"", "\"nope\"")),
        (
            "missing config",
            SWEEP.replace("preset = \"quick\"", "config = \"missing.toml\""),
        ),
        ("empty seeds", SWEEP.replace("seeds = [1, 2]", "seeds = []")),
        (
            "negative seed",
            SWEEP.replace("seeds = [1, 2]", "seeds = [-1]"),
        ),
        (
            "seed twice",
            SWEEP.replace("[set]", "[set]\n\"train.seed\" = 4"),
        ),
        (
            "key in set and grid",
            SWEEP.replace("[set]", "[set]\n\"model.heads\" = 4"),
        ),
    ];
    for (what, text) in cases {
        let f = write_sweep(&t, &text);
        let dir = t.join("out");
        let o = icl(&["sweep", "plan", s(&f), "--out", s(&dir)]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{what}: {err}");
        assert!(
            err.starts_with("icl: error: ") && err.lines().count() == 1,
            "{what}: {err}"
        );
        assert!(!dir.exists(), "{what}: wrote {}", dir.display());
    }
    // commands on folders that are not sweeps, and bad indices and options
    let f = write_sweep(&t, SWEEP);
    let dir = t.join("sw");
    plan(&f, &dir);
    let not = t.join("nothing");
    for args in [
        vec!["sweep", "run", s(&not)],
        vec!["sweep", "status", s(&not)],
        vec!["sweep", "collect", s(&not)],
        vec!["sweep", "slurm", s(&not)],
        vec!["sweep", "run-one", s(&dir), "--index", "4"],
        vec!["sweep", "run", s(&dir), "--checkpoint-minutes", "-1"],
        vec!["sweep", "slurm", s(&dir), "--cpus-per-task", "0"],
        vec!["sweep", "slurm", s(&dir), "--icl", "relative/icl"],
        vec!["sweep", "run", s(&dir), "--engine", "nope"],
    ] {
        let o = icl(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.starts_with("icl: error: ") && err.lines().count() == 1,
            "{args:?}: {err}"
        );
    }
    assert!(!dir.join("heads=1,seed=1").exists());
    let _ = std::fs::remove_dir_all(&t);
}
