//! `icl repro`: one command per paper. Runs the paper's experiments as ordinary run folders under
//! `OUT/runs/` (complete runs are skipped, interrupted ones resumed), measures every claim from
//! those runs or from the theory registry, and writes `report.json` (the contract), `report.md`
//! and a self-contained `report.html`.
//!
//! A claim is one checkable sentence of the paper with its number; `measured` always comes from
//! icl (a run, a Monte Carlo, or a closed form evaluated by the registry), never from the paper.
//! Where a claim depends on the seed it is measured over several seeds and the statistic is
//! reported (mean and standard error, or the fraction of seeds).
//!
//! Each paper is one module (`repro/<paper>.rs` or `repro/<paper>/`) and one row of [`PAPERS`]:
//! its runs and claims (built with [`claim::claim`]), the experiments it computes rather than
//! trains, and its core part (the theory quantities it registers, its presets).
mod claim;
pub mod experiment;
mod garg;
mod he2025;
mod iv_study;
mod multilayer;
pub mod report;
mod temperature;
mod zhang2025;

use crate::error::{Result, RunError};
use crate::eval::{eval_run, EvalOptions, MlEvalOptions, Temper};
use crate::folder::RunDir;
use crate::summary::{EvalRows, Summary};
use crate::sweep::{run_specs_reporting, RunResult, RunStatus};
use crate::train::TrainOptions;
use claim::ClaimDef;
use experiment::{ExperimentSummary, Experiments};
use icl_core::presets::{self, Preset};
use icl_core::theory::registry;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub use report::{write_reports, Report};

/// One paper `icl repro` knows: its run part (its runs and claims, the experiments it computes)
/// and where its core part is (the theory quantities it registers, its presets).
pub struct PaperDef {
    /// What `icl repro` calls it (`he2025`).
    pub name: &'static str,
    /// Its quantities in the theory registry (`icl_core::theory::registry::<paper>`).
    pub quantities: registry::Quantities,
    /// Its presets (`icl_core::presets::<paper>`).
    pub presets: &'static [&'static [Preset]],
    /// Its runs and claims at a scale (`repro/<paper>.rs`).
    plan: fn(Scale) -> (Vec<RunSpec>, Vec<ClaimDef>),
    /// The figures it computes rather than trains (run folders of their own), if any.
    experiments: Option<Experiments>,
    /// Where its claims' rules come from unless a claim names its own source
    /// ([`claim::ClaimBuilder::source`]): the report's header says it beside each rule.
    rules_from: &'static str,
}

/// The papers, in the order their names are listed: adding a paper is one module and one row.
pub const PAPERS: &[PaperDef] = &[
    PaperDef {
        name: "he2025",
        quantities: registry::he2025::quantities,
        presets: &[presets::he2025::PRESETS],
        plan: he2025::plan,
        experiments: None,
        rules_from: "spec he2025 §5.1 (acceptance tests and tolerances)",
    },
    PaperDef {
        name: "zhang2025",
        quantities: registry::zhang2025::quantities,
        presets: &[presets::zhang2025::PRESETS],
        plan: zhang2025::plan,
        experiments: None,
        rules_from: "spec zhang2025 §6 (acceptance tests)",
    },
    PaperDef {
        name: "multilayer",
        quantities: registry::multilayer::quantities,
        presets: &[presets::multilayer::PRESETS, presets::multilayer::IV],
        plan: multilayer::plan,
        experiments: Some(iv_study::EXPERIMENTS),
        rules_from: "spec multilayer §9 (acceptance tests)",
    },
    PaperDef {
        name: "temperature",
        quantities: registry::temperature::quantities,
        presets: &[presets::temperature::PRESETS],
        plan: temperature::plan,
        experiments: Some(temperature::figures::EXPERIMENTS),
        rules_from: "spec temperature §10 (acceptance tests)",
    },
    PaperDef {
        name: "garg",
        quantities: garg::quantities,
        presets: &[presets::garg::PRESETS],
        plan: garg::plan,
        experiments: None,
        rules_from: "icl, fixed in advance (repro/garg.rs: the paper's orderings, read off its figures, with 2 SE)",
    },
];

/// A paper of [`PAPERS`].
#[derive(Clone, Copy)]
pub struct Paper(&'static PaperDef);

impl Paper {
    /// Parse a paper name (`he2025`, `zhang2025`, `multilayer`, `temperature`, `garg`).
    pub fn parse(s: &str) -> Result<Paper> {
        PAPERS
            .iter()
            .find(|p| p.name == s)
            .map(Paper)
            .ok_or_else(|| {
                let names: Vec<&str> = PAPERS.iter().map(|p| p.name).collect();
                let hint = icl_core::config::did_you_mean(s, names.iter().copied());
                RunError::UnknownName(format!(
                    "unknown paper {s:?}{hint} (the papers are {})",
                    names.join(", ")
                ))
            })
    }
    pub fn name(self) -> &'static str {
        self.0.name
    }
    /// Its row of [`PAPERS`].
    pub fn def(self) -> &'static PaperDef {
        self.0
    }
}

impl PartialEq for Paper {
    fn eq(&self, other: &Paper) -> bool {
        self.0.name == other.0.name
    }
}

impl Eq for Paper {}

impl std::fmt::Debug for Paper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.name)
    }
}

/// How much compute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// Minutes on 2 cores, with the reductions each claim states.
    Smoke,
    /// The paper's sizes.
    Paper,
}

impl Scale {
    pub fn parse(s: &str) -> Result<Scale> {
        match s {
            "smoke" => Ok(Scale::Smoke),
            "paper" => Ok(Scale::Paper),
            _ => Err(RunError::Refused(format!(
                "unknown scale {s:?} (smoke, paper)"
            ))),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Scale::Smoke => "smoke",
            Scale::Paper => "paper",
        }
    }
}

/// What to reproduce.
#[derive(Debug, Clone)]
pub struct ReproOptions {
    pub paper: Paper,
    pub scale: Scale,
    /// Claim ids to check (empty: all); only the runs they need are trained.
    pub only: Vec<String>,
    /// Runs trained at once.
    pub jobs: usize,
    pub out: PathBuf,
    /// Engine name (default: the fastest built in).
    pub engine: Option<String>,
    /// Config overrides `(key, value)` applied to every trained run after the run's own (as
    /// `icl train --set`), e.g. `train.steps` for runs shorter than the paper's; recorded in the
    /// report. Set through [`ReproOptions::with_set`], which checks them.
    pub set: Vec<(String, String)>,
}

/// The most runs trained at once (`jobs` is `1..=MAX_JOBS`).
pub const MAX_JOBS: usize = 256;

impl ReproOptions {
    /// Checked options, as every front end builds them (from [`crate::options::ReproArgs`]): `paper` one of [`Paper::parse`]'s names
    /// (else [`RunError::UnknownName`]), `scale` `smoke` or `paper`, `only` claim ids of that paper
    /// (none: every claim; an empty id is refused, so `--only ,` never means every claim), `jobs`
    /// in `1..=MAX_JOBS`, `engine` one of [`crate::ENGINES`] (`None`: the default), `out` not
    /// empty and not a file. Every other failure is [`RunError::Refused`]. Nothing is written.
    pub fn new<S: AsRef<str>>(
        paper: &str,
        scale: &str,
        only: &[S],
        jobs: usize,
        engine: Option<&str>,
        out: impl Into<PathBuf>,
    ) -> Result<ReproOptions> {
        if jobs == 0 || jobs > MAX_JOBS {
            return Err(RunError::Refused(format!(
                "--jobs {jobs}: give 1..={MAX_JOBS}"
            )));
        }
        let out = out.into();
        if out.as_os_str().is_empty() {
            return Err(RunError::Refused("--out is empty: give a folder".into()));
        }
        if out.exists() && !out.is_dir() {
            return Err(RunError::Refused(format!(
                "--out {} is a file: give a folder",
                out.display()
            )));
        }
        if let Some(e) = engine {
            crate::engines::check(e, icl_core::config::Dtype::F32)?;
        }
        // `--only ,` must not read as "every claim" (hours at paper scale)
        if only.iter().any(|s| s.as_ref().trim().is_empty()) {
            return Err(RunError::Refused(format!(
                "--only has an empty claim id ({:?}): give ids separated by commas, or leave --only out for every claim",
                only.iter().map(|s| s.as_ref()).collect::<Vec<_>>().join(",")
            )));
        }
        let o = ReproOptions {
            paper: Paper::parse(paper)?,
            scale: Scale::parse(scale)?,
            only: only.iter().map(|s| s.as_ref().trim().to_string()).collect(),
            jobs,
            out,
            engine: engine.map(String::from),
            set: Vec::new(),
        };
        select(&o)?;
        Ok(o)
    }

    /// These options with the config overrides `set` for every run the selected claims train
    /// (`train.steps` = `"50000"`, as `icl train --set train.steps=50000`). Refused
    /// ([`RunError::Refused`], or the config's own error for an unknown key or a bad value):
    /// an empty or repeated key, an override that makes some run's config invalid, and any
    /// override when the selected claims train no run (it would change nothing). Nothing is
    /// written.
    pub fn with_set<K: AsRef<str>, V: AsRef<str>>(mut self, set: &[(K, V)]) -> Result<Self> {
        let mut keys = std::collections::BTreeSet::new();
        let mut out = Vec::with_capacity(set.len());
        for (k, v) in set {
            let (k, v) = (k.as_ref().trim(), v.as_ref().trim());
            if k.is_empty() {
                return Err(RunError::Refused(format!(
                    "--set ={v}: the key is empty (KEY=VALUE, e.g. train.steps=50000)"
                )));
            }
            if !keys.insert(k.to_string()) {
                return Err(RunError::Refused(format!("--set {k} given twice")));
            }
            out.push((k.to_string(), v.to_string()));
        }
        if !out.is_empty() {
            self.set.clear();
            let (specs, _) = select(&self)?;
            if specs.is_empty() {
                return Err(RunError::Refused(
                    "--set changes the trained runs, and the selected claims train none".into(),
                ));
            }
            let base: Vec<icl_core::Config> =
                specs.iter().map(|s| s.build()).collect::<Result<_>>()?;
            for (k, _) in &out {
                refuse_varied(k, &specs, &base)?;
            }
            // the config's own errors (unknown key, bad value, a broken rule between keys)
            for b in &base {
                let mut cfg = b.clone();
                for (k, v) in &out {
                    cfg.set(k, v)?;
                }
                cfg.validate()?;
            }
        }
        self.set = out;
        Ok(self)
    }
}

/// Refuse a `--set` of a key the paper's plan varies between the selected runs (he2025's
/// `train.seed` over `h2-seed1..`, the head counts of H = 3, 4, 8): one value for every run
/// would make them the same run, while the report still counted them as different ones. A key
/// is varied when some run's own spec sets it and the runs' configs disagree on it; a key the
/// runs share (he2025's `train.steps`) or that no spec sets (the multilayer presets' steps) can
/// be set. `base` are the specs' configs, in order.
fn refuse_varied(k: &str, specs: &[RunSpec], base: &[icl_core::Config]) -> Result<()> {
    let canon = |k: &str| icl_core::config::key(k).map(|x| x.dotted());
    let Some(kc) = canon(k) else {
        return Ok(()); // an unknown key: the config's own error follows
    };
    if !specs
        .iter()
        .any(|s| s.set.iter().any(|(sk, _)| canon(sk).as_ref() == Some(&kc)))
    {
        return Ok(());
    }
    let values: Vec<toml::Value> = base
        .iter()
        .map(|c| c.get(&kc))
        .collect::<icl_core::Result<_>>()?;
    if values.iter().all(|v| *v == values[0]) {
        return Ok(());
    }
    let per: Vec<String> = specs
        .iter()
        .zip(&values)
        .take(4)
        .map(|(s, v)| format!("{} {v}", s.name))
        .collect();
    Err(RunError::Refused(format!(
        "--set {k}: the paper's runs differ in {kc} ({}{}), so one value for all of them would make them the same run; leave it out (or select one run's claims with --only)",
        per.join(", "),
        if specs.len() > 4 { ", ..." } else { "" }
    )))
}

/// One run of a paper's plan: the sweep executor's spec, trained into `OUT/runs/<name>`.
pub use crate::sweep::RunSpec;

fn spec(name: impl Into<String>, preset: &str, set: &[(&str, String)]) -> RunSpec {
    RunSpec {
        name: name.into(),
        preset: Some(preset.into()),
        config: None,
        set: set
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
    }
}

/// One claim of the report (the `claims` entries of `report.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Claim {
    pub id: String,
    pub figure: String,
    pub description: String,
    /// The paper's number (or, where the paper gives none, the spec's value derived from it;
    /// `description` says which). `null` in JSON (NaN here) where the paper states the claim
    /// without a number (an ordering, a sign).
    #[serde(with = "nan_as_null")]
    pub paper_value: f64,
    /// NaN (`null` in JSON) when it could not be measured (e.g. no seed split); `pass` is then
    /// false and `note` says why.
    #[serde(with = "nan_as_null")]
    pub measured: f64,
    /// Standard error of `measured` over seeds or samples, where it has one.
    pub stderr: Option<f64>,
    /// How far `measured` is from the paper's value (or, where the paper has none, from the
    /// target of its `target ± tol` statement) in units of `stderr`; absent without either.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub z: Option<f64>,
    /// Where a claim has closed forms beside its measurement: the exact finite-size form and the
    /// paper's form (temperature paper: Theorem 4.6/4.7) of the same quantity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exact: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paper_form: Option<f64>,
    /// The accepted range, in words (e.g. "[0.84, 0.93]", "within 1e-6").
    pub tolerance: String,
    pub pass: bool,
    /// Why a claim is loosened at this scale, or what differs from the paper.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
    /// The run folders it was measured on (names under `runs/`).
    pub runs: Vec<String>,
}

/// A number that may be NaN ("none"), as JSON `null`.
mod nan_as_null {
    use serde::{Deserialize, Deserializer, Serializer};
    pub fn serialize<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
        if x.is_finite() {
            s.serialize_f64(*x)
        } else {
            s.serialize_none()
        }
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
    }
}

/// One run's cost (the `runs` entries of `report.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRow {
    pub name: String,
    pub seconds: f64,
    pub steps_per_s: f64,
}

/// The finished runs of a report, by name.
pub struct Runs {
    dir: PathBuf,
}

impl Runs {
    fn summary(&self, name: &str) -> Result<Summary> {
        let p = RunDir::new(self.dir.join(name)).summary();
        let text = crate::folder::read_text(&p)?;
        serde_json::from_str(&text).map_err(|e| RunError::Corrupt(p.clone(), e.to_string()))
    }
    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
    fn experiment(&self, name: &str) -> Result<ExperimentSummary> {
        let p = self.dir.join(name).join("summary.json");
        let text = crate::folder::read_text(&p)?;
        serde_json::from_str(&text).map_err(|e| RunError::Corrupt(p.clone(), e.to_string()))
    }
    /// `icl eval` of run `name` at `lengths` (`samples` sequences each, evaluation streams seed 0,
    /// the default engine) with the transformer options `multilayer` and the temperatures and
    /// test-time shift `temper`.
    fn eval(
        &self,
        name: &str,
        lengths: &[usize],
        samples: usize,
        multilayer: MlEvalOptions,
        temper: Temper,
    ) -> Result<EvalRows> {
        eval_run(
            &RunDir::new(self.path(name)),
            &EvalOptions {
                lengths: lengths.to_vec(),
                samples,
                seed: 0,
                engine: None,
                multilayer,
                temper,
            },
        )
    }
}

/// The risk of `estimator` at length `len` and its standard error (NaN when absent).
fn risk_se(rows: &EvalRows, estimator: &str, len: usize) -> (f64, f64) {
    rows.rows
        .iter()
        .find(|x| x.estimator == estimator && x.len == len)
        .map_or((f64::NAN, f64::NAN), |x| (x.risk, x.stderr))
}

/// The model's risk and its standard error at each of `lengths` of run `name` (`samples`
/// sequences each).
fn model_risks(r: &Runs, name: &str, lengths: &[usize], samples: usize) -> Result<Vec<(f64, f64)>> {
    let rows = r.eval(
        name,
        lengths,
        samples,
        Default::default(),
        Default::default(),
    )?;
    Ok(lengths
        .iter()
        .map(|&l| risk_se(&rows, "model", l))
        .collect())
}

/// Progress of a reproduction: `(run name, index, number of runs, "start" | "done" | "skip")`.
pub type Progress<'a> = &'a mut (dyn FnMut(&str, usize, usize, &str) + Send);

/// The runs and claims of `o`: the claims `--only` selects (all without it) and the runs they
/// need, in plan order.
fn select(o: &ReproOptions) -> Result<(Vec<RunSpec>, Vec<ClaimDef>)> {
    let (specs, defs) = (o.paper.def().plan)(o.scale);
    let defs: Vec<ClaimDef> = defs
        .into_iter()
        .map(|d| d.sourced(o.paper.def().rules_from))
        .collect();
    for id in &o.only {
        if !defs.iter().any(|d| d.id == *id) {
            let ids: Vec<&str> = defs.iter().map(|d| d.id.as_str()).collect();
            return Err(RunError::Refused(format!(
                "--only: {} has no claim {id:?} (claims: {})",
                o.paper.name(),
                ids.join(", ")
            )));
        }
    }
    let defs: Vec<ClaimDef> = defs
        .into_iter()
        .filter(|d| o.only.is_empty() || o.only.contains(&d.id))
        .collect();
    let needed: Vec<RunSpec> = specs
        .into_iter()
        .filter(|s| defs.iter().any(|d| d.runs.contains(&s.name)))
        .map(|mut s| {
            s.set.extend(o.set.iter().cloned());
            s
        })
        .collect();
    Ok((needed, defs))
}

/// Train every run the selected claims need, measure the claims, write the reports.
pub fn repro(o: &ReproOptions, progress: Progress) -> Result<Report> {
    repro_lines(o, progress, &mut |_| {})
}

/// [`repro`], also passing `lines` a line of the runs in training, their steps and time left
/// ([`crate::eta::RunsLines`]), every [`crate::eta::line_every`] while runs train.
pub fn repro_lines(
    o: &ReproOptions,
    progress: Progress,
    lines: &mut (dyn FnMut(&str) + Send),
) -> Result<Report> {
    crate::eta::check_progress_env()?;
    let (needed, defs) = select(o)?;
    let runs_dir = o.out.join("runs");
    std::fs::create_dir_all(&runs_dir).map_err(|e| RunError::Os(runs_dir.clone(), e))?;
    let mut rows = run_all(&runs_dir, &needed, o, &mut *progress, lines)?;
    // the experiments the claims need, computed in the paper's order
    if let Some(ex) = o.paper.def().experiments {
        let computed: Vec<&str> = ex
            .names
            .iter()
            .copied()
            .filter(|e| defs.iter().any(|d| d.runs.iter().any(|r| r == e)))
            .collect();
        for (i, e) in computed.iter().enumerate() {
            (*progress)(e, i, computed.len(), "start");
            let (s, fresh) = ex.run(e, o.scale, &runs_dir.join(e))?;
            (*progress)(e, i, computed.len(), if fresh { "done" } else { "skip" });
            rows.push(RunRow {
                name: e.to_string(),
                seconds: s.seconds,
                steps_per_s: s.prompts as f64 / s.seconds.max(1e-9),
            });
        }
    }
    let runs = Runs { dir: runs_dir };
    let claims = defs
        .iter()
        .map(|d| d.check(&runs))
        .collect::<Result<Vec<Claim>>>()?;
    let rules = claims
        .iter()
        .zip(&defs)
        .map(|(c, d)| report::Rule {
            id: c.id.clone(),
            rule: c.tolerance.clone(),
            source: d.source.clone(),
        })
        .collect();
    let report = Report {
        paper: o.paper.name().into(),
        scale: o.scale.name().into(),
        version: env!("CARGO_PKG_VERSION").into(),
        machine: report::machine(),
        set: o.set.iter().cloned().collect(),
        rules,
        claims,
        runs: rows,
    };
    write_reports(&o.out, &report, &runs)?;
    Ok(report)
}

/// What `icl repro --slurm` wrote (and submitted).
#[derive(Debug, Clone, PartialEq)]
pub struct SlurmPlan {
    /// Runs in the array (`OUT/runs/manifest.jsonl`); 0 when the claims need no training.
    pub runs: usize,
    /// `OUT/runs/slurm.sh`, the array job (None without runs).
    pub array_script: Option<PathBuf>,
    /// `OUT/report.sh`, the job that measures the claims and writes the reports.
    pub report_script: PathBuf,
    /// The job ids when submitted: the array's (None without runs) and the report's.
    pub jobs: Option<(Option<String>, String)>,
}

/// The file name of the report job in the output folder.
pub const REPORT_SCRIPT: &str = "report.sh";

/// `icl repro --slurm`: the runs the selected claims need as a Slurm job array, and the job that
/// writes the report once they are done. `OUT/runs` becomes a sweep folder (its manifest, one
/// line per run, and `slurm.sh`, task `i` running `icl sweep run-one OUT/runs --index i`, so
/// Slurm trains exactly the run folders the local `icl repro` would); `OUT/report.sh` runs
/// `icl repro PAPER` with the same options (it finds every run complete, computes the claims and
/// any experiments, and writes the reports). With `submit`, the array is submitted and the
/// report job with `--dependency=afterok` on it. A folder whose `runs/` already holds another
/// plan (other claims or scale) is refused: its array may still be running.
pub fn slurm(o: &ReproOptions, s: &crate::sweep::SlurmOptions, submit: bool) -> Result<SlurmPlan> {
    use crate::sweep::{plan, slurm as sl};
    let (needed, _) = select(o)?;
    let runs_dir = o.out.join("runs");
    let out = std::path::absolute(&o.out).map_err(|e| RunError::Os(o.out.clone(), e))?;
    let planned: Vec<plan::PlannedRun> = needed
        .iter()
        .enumerate()
        .map(|(index, r)| plan::PlannedRun {
            index,
            name: r.name.clone(),
            values: Vec::new(),
            preset: r.preset.clone(),
            config: r.config.clone(),
            set: r.set.clone(),
        })
        .collect();
    let mut run_args = Vec::new();
    if let Some(e) = &o.engine {
        run_args.extend(["--engine".to_string(), e.clone()]);
    }
    // both scripts first: bad options are refused before anything is written
    let array_text = if planned.is_empty() {
        None
    } else {
        let a = crate::sweep::SlurmOptions {
            job_name: Some(
                s.job_name
                    .clone()
                    .unwrap_or_else(|| format!("icl-repro-{}-runs", o.paper.name())),
            ),
            run_args: run_args.clone(),
            ..s.clone()
        };
        Some(sl::array_script(&runs_dir, planned.len(), &a)?)
    };
    let name = s
        .job_name
        .clone()
        .map(|n| format!("{n}-report"))
        .unwrap_or_else(|| format!("icl-repro-{}-report", o.paper.name()));
    let mut lines = sl::header(
        &name,
        None,
        &format!("{}/slurm/report_%j.out", out.to_string_lossy()),
        s,
    )?;
    let mut words = vec![
        "repro".to_string(),
        o.paper.name().to_string(),
        "--scale".to_string(),
        o.scale.name().to_string(),
        "--out".to_string(),
        out.to_string_lossy().to_string(),
        "--quiet".to_string(),
    ];
    if !o.only.is_empty() {
        words.push(format!("--only={}", o.only.join(",")));
    }
    for (k, v) in &o.set {
        words.push(format!("--set={k}={v}"));
    }
    words.extend(run_args);
    lines.push(String::new());
    lines.push(format!(
        "# The report of `icl repro {}` once the {} runs of {}/runs are complete",
        o.paper.name(),
        planned.len(),
        out.to_string_lossy()
    ));
    lines.push(
        "# (submitted with --dependency=afterok on their array; run by hand any time).".into(),
    );
    lines.push("set -euo pipefail".into());
    lines.push("export RAYON_NUM_THREADS=${SLURM_CPUS_PER_TASK:-1}".into());
    lines.push(format!(
        "exec {} {}",
        sl::icl_text(s)?,
        sl::command(&words)?
    ));
    lines.push(String::new());
    // the manifest: the same plan again is fine, another one is refused
    let text = plan::manifest_text(&planned);
    let manifest = runs_dir.join(plan::MANIFEST);
    if manifest.exists() && crate::folder::read_text(&manifest)? != text {
        return Err(RunError::Refused(format!(
            "{} holds the Slurm plan of other claims or another scale (its jobs may still run); \
             choose another --out, or remove that file once its jobs are done",
            manifest.display()
        )));
    }
    let array_script = match &array_text {
        Some(t) => {
            std::fs::create_dir_all(&runs_dir).map_err(|e| RunError::Os(runs_dir.clone(), e))?;
            if !manifest.exists() {
                crate::folder::atomic_write(&manifest, text.as_bytes())?;
            }
            Some(sl::write_text(&runs_dir, sl::SCRIPT, t)?)
        }
        None => None,
    };
    std::fs::create_dir_all(&o.out).map_err(|e| RunError::Os(o.out.clone(), e))?;
    let report_script = sl::write_text(&o.out, REPORT_SCRIPT, &lines.join("\n"))?;
    let jobs = if submit {
        let array = match &array_script {
            Some(p) => Some(sl::submit(p)?),
            None => None,
        };
        let report = sl::submit_after(&report_script, array.as_deref())?;
        Some((array, report))
    } else {
        None
    };
    Ok(SlurmPlan {
        runs: planned.len(),
        array_script,
        report_script,
        jobs,
    })
}

/// Train the runs through the sweep executor (`jobs` at a time; complete runs skipped,
/// interrupted ones resumed) and report each run's timing.
fn run_all(
    dir: &Path,
    specs: &[RunSpec],
    o: &ReproOptions,
    progress: Progress,
    lines: &mut (dyn FnMut(&str) + Send),
) -> Result<Vec<RunRow>> {
    let n = specs.len();
    let runs = crate::eta::RunsLines::new(specs, crate::eta::line_every());
    let lines = std::sync::Mutex::new(lines);
    let to = TrainOptions {
        engine: o.engine.clone(),
        ..TrainOptions::default()
    };
    let started: Vec<std::sync::atomic::AtomicBool> = (0..n)
        .map(|_| std::sync::atomic::AtomicBool::new(false))
        .collect();
    let progress = std::sync::Mutex::new(progress);
    let say = |i: usize, what: &str| {
        let mut p = progress.lock().unwrap_or_else(|e| e.into_inner());
        (*p)(&specs[i].name, i, n, what);
    };
    let on_step = |i: usize, step: u64, total: u64, _: f64| {
        if !started[i].swap(true, std::sync::atomic::Ordering::SeqCst) {
            say(i, "start");
        }
        if let Some(line) = runs.step(i, step, total) {
            let mut l = lines.lock().unwrap_or_else(|e| e.into_inner());
            (*l)(&line);
        }
        true
    };
    // each run's end as it happens (not once all are trained)
    let on_done = |i: usize, r: &RunResult| {
        runs.ended(i);
        match r.status {
            RunStatus::Skipped => say(i, "skip"),
            RunStatus::Trained | RunStatus::Resumed => say(i, "done"),
            _ => {}
        }
    };
    let results = run_specs_reporting(dir, specs, o.jobs, &to, &on_step, &on_done)?;
    let mut rows = Vec::with_capacity(n);
    for r in results {
        if let RunStatus::Failed(e) = r.status {
            return Err(e);
        }
        match (r.seconds, r.steps_per_s) {
            (Some(seconds), Some(steps_per_s)) => rows.push(RunRow {
                name: r.name,
                seconds,
                steps_per_s,
            }),
            _ => {
                return Err(RunError::Refused(format!(
                    "run {} did not finish; re-run icl repro to resume it",
                    r.name
                )))
            }
        }
    }
    Ok(rows)
}

/// A theory-registry quantity by name and parameters (the closed forms and Monte Carlo of the
/// claims).
fn theory_value<V: AsRef<str>>(name: &str, args: &[(&str, V)]) -> Result<registry::Value> {
    let a: Vec<(String, String)> = args
        .iter()
        .map(|(k, v)| (k.to_string(), v.as_ref().to_string()))
        .collect();
    Ok(registry::evaluate(name, &a)?.0.value)
}

/// A number of the theory registry.
fn theory<V: AsRef<str>>(name: &str, args: &[(&str, V)]) -> Result<f64> {
    theory_value(name, args)?
        .as_f64()
        .ok_or_else(|| RunError::Refused(format!("theory {name} returned no number")))
}

/// A list of the theory registry (e.g. an error per step).
fn theory_list<V: AsRef<str>>(name: &str, args: &[(&str, V)]) -> Result<Vec<f64>> {
    theory_value(name, args)?
        .as_f64s()
        .ok_or_else(|| RunError::Refused(format!("theory {name} returned no list")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The options of the C API's and Python's text pairs.
    fn from_pairs(paper: &str, out: &str, p: &[(&str, &str)]) -> Result<ReproOptions> {
        crate::options::from_pairs::<crate::options::ReproArgs, _, _>(p)?.options(paper, out)
    }

    /// `set.KEY` reaches every run the selected claims train, after the run's own overrides,
    /// and is checked (unknown key, bad value, empty or repeated key, no run to change) before
    /// anything is written.
    #[test]
    fn set_reaches_every_planned_run_and_is_checked() {
        let out = "/nonexistent/icl-repro-set";
        let o = from_pairs(
            "he2025",
            out,
            &[("only", "h2-mu"), ("set.train.steps", "77")],
        )
        .unwrap();
        assert_eq!(o.set, [("train.steps".to_string(), "77".to_string())]);
        let (specs, _) = select(&o).unwrap();
        assert_eq!(specs.len(), 3);
        let seeds: Vec<u64> = specs
            .iter()
            .map(|s| s.build().unwrap().train.seed)
            .collect();
        for s in &specs {
            assert_eq!(s.build().unwrap().train.steps, 77);
        }
        // the runs keep their own overrides (three seeds)
        assert!(seeds[0] != seeds[1] && seeds[1] != seeds[2], "{seeds:?}");
        let bad = |pairs: &[(&str, &str)]| {
            let mut p = vec![("only", "h2-mu")];
            p.extend_from_slice(pairs);
            from_pairs("he2025", out, &p).unwrap_err()
        };
        assert!(matches!(
            bad(&[("set.no.such_key", "1")]),
            RunError::Core(icl_core::Error::UnknownKey(_))
        ));
        assert!(matches!(
            bad(&[("set.train.steps", "many")]),
            RunError::Core(icl_core::Error::InvalidConfig(_))
        ));
        assert!(matches!(bad(&[("set.", "1")]), RunError::Refused(_)));
        assert!(matches!(
            bad(&[("set.train.steps", "1"), ("set.train.steps", "2")]),
            RunError::Refused(_)
        ));
        // claims measured without training: an override would change nothing
        let none = ReproOptions::new("multilayer", "smoke", &["ridge-l120"], 1, None, out)
            .unwrap()
            .with_set(&[("train.steps", "5")]);
        assert!(matches!(none, Err(RunError::Refused(_))));
        assert!(!std::path::Path::new(out).exists());
    }

    /// A `set` of a key the plan varies between the selected runs (the seeds of h2-seed1..3,
    /// the head counts of the paper-scale runs) is refused: it made the three seeds one run
    /// while the report counted "3 of 3 seeds split". A key the runs share, or one the plan
    /// does not set, is taken; one selected run's seed can be changed.
    #[test]
    fn set_of_a_key_the_runs_vary_is_refused() {
        let out = "/nonexistent/icl-repro-varied";
        let with = |paper: &str, scale: &str, only: &[&str], k: &str| {
            ReproOptions::new(paper, scale, only, 1, None, out)
                .unwrap()
                .with_set(&[(k, "5")])
        };
        for (paper, scale, only, k) in [
            ("he2025", "smoke", &["h2-split"][..], "train.seed"),
            ("he2025", "smoke", &[][..], "train.seed"),
            ("zhang2025", "smoke", &[][..], "train.seed"),
            ("he2025", "paper", &[][..], "model.heads"),
        ] {
            let e = with(paper, scale, only, k).unwrap_err();
            assert!(
                matches!(&e, RunError::Refused(m) if m.contains(k) && m.contains("differ")),
                "{paper} {k}: {e}"
            );
        }
        // shared by every run, or set by no run's spec
        with("he2025", "smoke", &["h2-split"], "train.steps").unwrap();
        with("multilayer", "paper", &["depth"], "train.steps").unwrap();
        // the one run of h1 claims: its seed can be changed
        let one = ReproOptions::new("he2025", "smoke", &["h1-omega"], 1, None, out).unwrap();
        assert_eq!(select(&one).unwrap().0.len(), 1);
        one.with_set(&[("train.seed", "5")]).unwrap();
        assert!(!std::path::Path::new(out).exists());
    }

    /// Each row of [`PAPERS`] names its part of the core: its quantities carry its name, its
    /// presets are listed by `icl presets`, and the rows hold every quantity and preset once.
    #[test]
    fn paper_table_matches_the_core() {
        let (mut quantities, mut names) = (Vec::new(), Vec::new());
        for p in PAPERS {
            assert_eq!(Paper::parse(p.name).unwrap().name(), p.name);
            for q in (p.quantities)() {
                assert_eq!(q.paper, p.name, "{}", q.name);
                quantities.push(q.name);
            }
            names.extend(p.presets.iter().flat_map(|l| l.iter().map(|x| x.0)));
        }
        let mut all: Vec<&str> = registry::registry().iter().map(|q| q.name).collect();
        all.sort();
        quantities.sort();
        assert_eq!(quantities, all);
        let mut all: Vec<&str> = presets::PRESETS.iter().map(|x| x.0).collect();
        all.sort();
        names.sort();
        assert_eq!(names, all);
        // every claim id once in its paper, at both scales
        for p in PAPERS {
            for scale in [Scale::Smoke, Scale::Paper] {
                let (_, defs) = (p.plan)(scale);
                let mut ids: Vec<&str> = defs.iter().map(|d| d.id.as_str()).collect();
                let n = ids.len();
                ids.sort_unstable();
                ids.dedup();
                assert_eq!(ids.len(), n, "{} {}", p.name, scale.name());
            }
        }
    }

    /// `only` with an empty id (`--only ,`, `--only a,,b`) is refused: it selected every claim.
    #[test]
    fn only_with_an_empty_id_is_refused() {
        let out = "/nonexistent/icl-repro-only";
        for only in [&[""][..], &["", ""][..], &["h2-mu", ""][..]] {
            let e = ReproOptions::new("he2025", "smoke", only, 1, None, out).unwrap_err();
            assert!(
                matches!(e, RunError::Refused(ref m) if m.contains("empty")),
                "{e}"
            );
        }
        for v in [",", "h2-mu,,h2-split", "h2-mu,"] {
            assert!(from_pairs("he2025", out, &[("only", v)]).is_err(), "{v:?}");
        }
        // the C API's documented "" (unset: every claim) stays
        let all = from_pairs("he2025", out, &[("only", "")]).unwrap();
        assert!(all.only.is_empty());
        assert!(ReproOptions::new("he2025", "smoke", &["h2-mu"], 1, None, out).is_ok());
    }
}
