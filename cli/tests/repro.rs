//! `icl repro` at smoke scale, as CI runs it: every claim passes (or the test names the failing
//! claim with its numbers), report.json follows its contract, a second invocation skips the
//! complete runs and measures the same claims, and bad input is one line with exit 2.
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output};

fn icl(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_icl"))
        .args(args)
        .output()
        .expect("run icl")
}

fn tmp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("icl-repro-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    p
}

fn report(paper: &str, jobs: &str) -> (PathBuf, Value) {
    report_only(paper, jobs, None)
}

fn report_only(paper: &str, jobs: &str, only: Option<&str>) -> (PathBuf, Value) {
    let out = tmp(paper);
    let mut a = vec![
        "repro",
        paper,
        "--scale",
        "smoke",
        "--jobs",
        jobs,
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ];
    if let Some(ids) = only {
        a.extend(["--only", ids]);
    }
    let o = icl(&a);
    assert!(
        o.status.success(),
        "icl repro {paper}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let j: Value =
        serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
    (out, j)
}

fn check_contract(j: &Value, paper: &str) {
    check_claims(j, paper, 6)
}

fn check_claims(j: &Value, paper: &str, min: usize) {
    check_claims_failing(j, paper, min, &[], &[])
}

/// As [`check_claims`], with the claims `expected` failing (an honest outcome the report
/// explains in the claim's note), the claims `may_fail` passing or failing (a rule made for the
/// paper's scale, measured on the smoke's reduced runs, the note saying the reduction) and
/// every other claim passing.
fn check_claims_failing(j: &Value, paper: &str, min: usize, expected: &[&str], may_fail: &[&str]) {
    assert_eq!(j["paper"], paper);
    assert_eq!(j["scale"], "smoke");
    assert!(j["version"].is_string() && j["machine"].is_string());
    let claims = j["claims"].as_array().unwrap();
    assert!(claims.len() >= min, "{paper}: only {} claims", claims.len());
    let mut failed = Vec::new();
    for c in claims {
        for k in ["id", "figure", "description", "tolerance"] {
            assert!(c[k].is_string(), "{paper}: claim without {k}: {c}");
        }
        // null: the paper states the claim without a number (an ordering, a sign)
        assert!(
            (c["paper_value"].is_number() || c["paper_value"].is_null())
                && c["measured"].is_number()
                && c["pass"].is_boolean(),
            "{c}"
        );
        assert!(c["runs"].is_array());
        let id = c["id"].as_str().unwrap_or("");
        if may_fail.contains(&id) {
            assert!(
                c["note"].as_str().unwrap_or("").contains("smoke:"),
                "{paper}: {id} may fail only with its reduction in its note: {c}"
            );
        }
        if c["pass"] != true && !expected.contains(&id) && !may_fail.contains(&id) {
            failed.push(format!(
                "{} measured {} (paper {}, tolerance {}) {}",
                c["id"], c["measured"], c["paper_value"], c["tolerance"], c["note"]
            ));
        }
    }
    assert!(failed.is_empty(), "{paper}: failing claims: {failed:#?}");
    for id in expected {
        let c = claims.iter().find(|c| c["id"] == *id).unwrap();
        assert!(
            c["pass"] == false,
            "{paper}: {id} was expected to fail: {c}"
        );
    }
    // every claim's rule is in the header and in report.json's rules, with its source
    let rules = j["rules"].as_array().unwrap();
    assert_eq!(rules.len(), claims.len(), "{paper}: rules");
    for (r, c) in rules.iter().zip(claims) {
        assert!(r["id"] == c["id"] && r["rule"] == c["tolerance"], "{r} {c}");
        assert!(!r["source"].as_str().unwrap().is_empty(), "{r}");
    }
    for r in j["runs"].as_array().unwrap() {
        assert!(
            r["name"].is_string()
                && r["seconds"].as_f64().unwrap() > 0.0
                && r["steps_per_s"].as_f64().unwrap() > 0.0,
            "{r}"
        );
    }
}

#[test]
fn zhang2025_smoke_passes_and_resumes() {
    let (out, j) = report("zhang2025", "1");
    check_contract(&j, "zhang2025");
    for f in ["report.md", "report.html"] {
        let t = std::fs::read_to_string(out.join(f)).unwrap();
        assert!(t.contains("fig3-drops"), "{f} lacks the claims");
    }
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("<svg"), "report.html has no inline figure");
    // a second invocation trains nothing (every run's model file untouched) and measures the
    // same numbers
    let mtimes = |out: &std::path::Path| -> Vec<(String, std::time::SystemTime)> {
        let mut v: Vec<_> = std::fs::read_dir(out.join("runs"))
            .unwrap()
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let m = std::fs::metadata(e.path().join("model.safetensors")).ok()?;
                Some((
                    e.file_name().to_string_lossy().into_owned(),
                    m.modified().unwrap(),
                ))
            })
            .collect();
        v.sort();
        v
    };
    let before = mtimes(&out);
    assert!(!before.is_empty(), "no run folders under runs/");
    let o = icl(&[
        "repro",
        "zhang2025",
        "--quiet",
        "--json",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let j2: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["claims"], j2["claims"]);
    assert_eq!(mtimes(&out), before, "complete runs were retrained");
    let _ = std::fs::remove_dir_all(&out);
}

/// Every claim passes but the length sweep, whose rule is the spec's ±0.01 for the paper's
/// trained model (5e5 steps): the smoke's 4e4-step model measured 0.0113 at L' = 10 once, so
/// it may fail here, its note saying the reduction.
#[test]
fn he2025_smoke_passes() {
    let (out, j) = report("he2025", "2");
    check_claims_failing(&j, "he2025", 6, &[], &["h2-length-sweep"]);
    let _ = std::fs::remove_dir_all(&out);
}

/// The multilayer report's claims that need no training (Algorithm 1 with Table 1's steps, the
/// ridge baseline, the out-of-distribution ordering, IV baselines): measured by Monte Carlo.
/// The paper's "Algorithm 1 beats 3-step GD" (Fig. 3a) fails at the η = 1 the spec names for
/// the paper's GD (the spec's Monte Carlo: 0.033 against 0.016), and the report says why.
#[test]
fn multilayer_smoke_theory_claims_pass() {
    let ids = "alg1-depth-t3,ridge-l120,alg1-beats-gd3,alg1-ood,iv-2sls-vs-ols";
    let (out, j) = report_only("multilayer", "1", Some(ids));
    check_claims_failing(&j, "multilayer", 5, &["alg1-beats-gd3"], &[]);
    let gd = &j["claims"][2];
    assert!(
        gd["paper_value"].is_null()
            && gd["measured"].as_f64().unwrap() > 0.0
            && gd["note"].as_str().unwrap().contains("below about 0.7"),
        "{gd}"
    );
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("## Rules") && md.contains("no number in the paper"),
        "{md}"
    );
    let got: Vec<&str> = j["claims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(got.join(","), ids);
    // Algorithm 1 at s = T = 3 with Table 1's steps: the spec's Monte Carlo 0.033 (±25 %)
    let t3 = &j["claims"][0];
    assert!(
        (t3["measured"].as_f64().unwrap() - 0.033).abs() < 0.033 * 0.25,
        "{t3}"
    );
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn temperature_smoke_passes_writes_figures_and_repeats() {
    let (out, j) = report("temperature", "1");
    check_contract(&j, "temperature");
    // closed forms beside the Monte Carlo, from icl (never the paper's numbers)
    let claims = j["claims"].as_array().unwrap();
    let c = claims.iter().find(|c| c["id"] == "fig1b-tau-opt").unwrap();
    assert!(c["exact"].is_number() && c["paper_form"].is_number() && c["stderr"].is_number());
    assert_ne!(c["measured"], c["paper_value"]);
    for (run, files) in [
        ("temperature-fig1a", &["fig1a.csv", "fig1a.svg"][..]),
        ("temperature-fig1b", &["fig1b.csv", "fig1b.svg"]),
        ("temperature-fig1c", &["fig1c.csv", "fig1c.svg"]),
        (
            "temperature-fig2",
            &[
                "fig2a.csv",
                "fig2a.svg",
                "fig2b.csv",
                "fig2b.svg",
                "fig2c.svg",
            ],
        ),
        ("temperature-fig4", &["fig4.csv", "fig4.svg"]),
        (
            "temperature-fig7",
            &[
                "fig7-alpha.csv",
                "fig7-alpha.svg",
                "fig8-sigma.svg",
                "fig7-beta.csv",
            ],
        ),
        ("temperature-fig5", &["fig5.svg"]),
    ] {
        let dir = out.join("runs").join(run);
        let s: Value =
            serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap();
        assert_eq!(s["experiment"], run);
        assert!(s["prompts"].as_u64().unwrap() > 0);
        for f in files {
            let t = std::fs::read_to_string(dir.join(f)).unwrap_or_else(|_| panic!("{run}/{f}"));
            if f.ends_with(".svg") {
                let mc = t.contains("Monte Carlo") || run.ends_with("fig5");
                assert!(t.contains("<svg") && mc, "{run}/{f}");
            } else {
                let head = t.lines().next().unwrap();
                assert!(
                    head.contains("G1_exact") && head.contains("G1_mc_se"),
                    "{run}/{f}: {head}"
                );
                assert!(t.lines().count() >= 4, "{run}/{f}");
            }
        }
    }
    // every run figure is in figures/ as SVG and PNG, and report.md shows the PNGs
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let mut n = 0;
    for run in std::fs::read_dir(out.join("runs")).unwrap() {
        let run = run.unwrap();
        let name = run.file_name().to_string_lossy().into_owned();
        for f in std::fs::read_dir(run.path()).unwrap() {
            let f = f.unwrap().path();
            if f.extension().is_some_and(|e| e == "svg") {
                let stem = f.file_stem().unwrap().to_string_lossy().into_owned();
                let png = std::fs::read(out.join(format!("figures/{name}-{stem}.png"))).unwrap();
                assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{name}-{stem}.png");
                assert!(out.join(format!("figures/{name}-{stem}.svg")).is_file());
                assert!(md.contains(&format!("(figures/{name}-{stem}.png)")));
                n += 1;
            }
        }
    }
    assert!(n >= 10, "only {n} figures");
    // a second invocation computes nothing and measures the same claims
    let o = icl(&[
        "repro",
        "temperature",
        "--quiet",
        "--json",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let j2: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["claims"], j2["claims"]);
    // --only computes only the experiments its claims need
    let only = tmp("temperature-only");
    let o = icl(&[
        "repro",
        "temperature",
        "--only",
        "fig7-alpha",
        "--quiet",
        "--out",
        only.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let names: Vec<String> = std::fs::read_dir(only.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["temperature-fig7".to_string()]);
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_dir_all(&only);
}

#[test]
fn bad_input_is_one_line_exit_2() {
    let out = tmp("bad");
    for args in [
        vec!["repro", "nosuch", "--out"],
        vec!["repro", "he2025", "--only", "nosuch-claim", "--out"],
        vec!["repro", "he2025", "--scale", "huge", "--out"],
        vec!["repro", "he2025", "--jobs", "0", "--out"],
        vec!["repro", "temperature", "--only", "nosuch-claim", "--out"],
        vec!["repro", "temperature", "--scale", "huge", "--out"],
        vec!["repro", "he2025", "--submit", "--out"],
        vec!["repro", "he2025", "--partition", "debug", "--out"],
        vec!["repro", "he2025", "--slurm", "--jobs", "2", "--out"],
        vec![
            "repro",
            "he2025",
            "--slurm",
            "--cpus-per-task",
            "0",
            "--out",
        ],
        vec![
            "repro",
            "he2025",
            "--slurm",
            "--sbatch",
            "account=x",
            "--out",
        ],
        vec![
            "repro",
            "he2025",
            "--slurm",
            "--icl",
            "relative/icl",
            "--out",
        ],
        vec!["repro", "he2025", "--set", "train.steps", "--out"],
        vec!["repro", "he2025", "--set", "no.such_key=1", "--out"],
        vec!["repro", "he2025", "--set", "train.steps=many", "--out"],
        vec!["repro", "he2025", "--set", "=5", "--out"],
        vec![
            "repro",
            "he2025",
            "--set",
            "train.steps=5",
            "--set",
            "train.steps=6",
            "--out",
        ],
        // the claims need no training: an override would change nothing
        vec![
            "repro",
            "multilayer",
            "--only",
            "ridge-l120",
            "--set",
            "train.steps=5",
            "--out",
        ],
    ] {
        let mut a = args.clone();
        a.push(out.to_str().unwrap());
        let o = icl(&a);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.starts_with("icl: error: ") && err.trim_end().lines().count() == 1,
            "{args:?}: {err}"
        );
        assert!(!out.join("runs").exists(), "{args:?} wrote runs");
    }
}

/// `--slurm` writes the array over exactly the runs the claims need (the names a local repro
/// trains, as a sweep manifest `icl sweep run-one` reads) and the report job running the same
/// repro command; it trains nothing, and a folder holding another plan is refused. The real
/// Slurm round trip is tests/slurm/run.sh.
#[test]
fn slurm_writes_the_array_and_the_report_job() {
    let out = tmp("slurm");
    let o = icl(&[
        "repro",
        "he2025",
        "--only",
        "h2-mu,mu-gamma",
        "--slurm",
        "--partition",
        "debug",
        "--time",
        "30",
        "--max-parallel",
        "2",
        "--engine",
        "scalar",
        "--json",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["runs"], 3, "{j}");
    assert!(j["array_job"].is_null() && j["report_job"].is_null(), "{j}");
    let manifest = std::fs::read_to_string(out.join("runs/manifest.jsonl")).unwrap();
    let names: Vec<String> = manifest
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["name"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(names, ["h2-seed1", "h2-seed2", "h2-seed3"]);
    let array = std::fs::read_to_string(out.join("runs/slurm.sh")).unwrap();
    for want in [
        "#SBATCH --array=0-2%2",
        "#SBATCH --partition=debug",
        "#SBATCH --time=30",
        "sweep run-one",
        "--index \"$SLURM_ARRAY_TASK_ID\" --engine scalar",
    ] {
        assert!(array.contains(want), "slurm.sh lacks {want:?}:\n{array}");
    }
    let report = std::fs::read_to_string(out.join("report.sh")).unwrap();
    assert!(!report.contains("--array"), "{report}");
    assert!(
        report.contains("repro he2025 --scale smoke --out ")
            && report.contains("--only=h2-mu,mu-gamma --engine scalar"),
        "{report}"
    );
    // --set reaches every run of the array (the manifest) and the report job
    let short = tmp("slurm-set");
    let o = icl(&[
        "repro",
        "he2025",
        "--only",
        "h2-mu",
        "--slurm",
        "--set",
        "train.steps=777",
        "--out",
        short.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let m = std::fs::read_to_string(short.join("runs/manifest.jsonl")).unwrap();
    assert!(
        m.lines().count() == 3 && m.lines().all(|l| l.contains("[\"train.steps\",\"777\"]")),
        "{m}"
    );
    let rs = std::fs::read_to_string(short.join("report.sh")).unwrap();
    assert!(rs.contains("--set=train.steps=777"), "{rs}");
    let _ = std::fs::remove_dir_all(&short);
    // nothing trained, nothing reported
    assert!(!out.join("runs/h2-seed1").exists() && !out.join("report.json").exists());
    // `icl sweep status` reads the folder as a sweep
    let st = icl(&["sweep", "status", out.join("runs").to_str().unwrap()]);
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&st.stdout)
            .lines()
            .filter(|l| l.contains(" pending "))
            .count(),
        3
    );
    // the same plan again is fine; another plan into the same folder is refused
    let again = icl(&[
        "repro",
        "he2025",
        "--only",
        "h2-omega",
        "--slurm",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    let other = icl(&[
        "repro",
        "he2025",
        "--only",
        "h1-omega",
        "--slurm",
        "--out",
        out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&other.stderr);
    assert_eq!(other.status.code(), Some(2), "{err}");
    assert!(
        err.contains("holds the Slurm plan of other claims"),
        "{err}"
    );
    // claims without runs: only the report job
    let theory = tmp("slurm-theory");
    let t = icl(&[
        "repro",
        "he2025",
        "--only",
        "mu-gamma",
        "--slurm",
        "--json",
        "--out",
        theory.to_str().unwrap(),
    ]);
    assert!(t.status.success(), "{}", String::from_utf8_lossy(&t.stderr));
    let tj: Value = serde_json::from_slice(&t.stdout).unwrap();
    assert_eq!(tj["runs"], 0);
    assert!(tj["array_script"].is_null() && theory.join("report.sh").is_file());
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_dir_all(&theory);
}

/// `icl repro garg --scale smoke`: Garg et al.'s four function classes, each model below the
/// classical learners its claim names (the orderings of Figs. 2 and 4), every claim stating its
/// reduction, and each run's risk figure (squared error / E y² at every L) in the report.
#[test]
fn garg_smoke_passes_with_its_baselines() {
    let (out, j) = report("garg", "2");
    check_claims(&j, "garg", 4);
    let claims = j["claims"].as_array().unwrap();
    for c in claims {
        let note = c["note"].as_str().unwrap();
        assert!(note.contains("smoke: 2 layers"), "{c}");
        let run = c["runs"][0].as_str().unwrap();
        let svg = std::fs::read_to_string(out.join("runs").join(run).join("risk.svg")).unwrap();
        assert!(svg.contains("squared error /"), "{run}");
    }
    let tree = claims.iter().find(|c| c["id"] == "tree-smoke").unwrap();
    for e in ["tree_depth4", "boosted_trees"] {
        assert!(tree["note"].as_str().unwrap().contains(e), "{tree}");
    }
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("sparse-smoke") && html.contains("<svg"));
    let _ = std::fs::remove_dir_all(&out);
}
