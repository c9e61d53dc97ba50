//! Sweep files and plans: a TOML file naming a base config, seeds, fixed overrides and a grid,
//! expanded into one [`RunSpec`] per combination and written as a manifest.
//!
//! ```toml
//! preset = "he2025"          # or config = "path.toml" (relative to this file)
//! seeds = [1, 2, 3]          # optional: train.seed of each run (default: the config's)
//! [set]                      # fixed overrides, as --set
//! "train.steps" = 30000
//! [grid]                     # every combination
//! "model.heads" = [1, 2, 4]
//! ```
//!
//! The plan of a sweep folder `DIR` is `DIR/manifest.jsonl`, one JSON object per run and line
//! (`index`, `name`, `values` (the grid values and the seed, as `[key, value]` pairs), `preset`,
//! `config`, `set`), beside `DIR/sweep.toml` (the sweep file as given) and, for a config-file
//! sweep, `DIR/base.toml` (a copy of the config, so the folder is self-contained). Run folders are
//! `DIR/<name>`, the name made of the values: `heads=2,seed=1` (a key's last part, or the whole
//! key where two grid keys share their last part; grid keys in sorted order, the seed last).
use crate::checkpoint::load_config;
use crate::error::{Result, RunError};
use crate::folder::{atomic_write, read_text};
use icl_core::Config;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use toml::Value;

/// One run of a sweep: a name (its folder under the sweep folder) and its config, as a preset or
/// a config file plus `--set`-style overrides (`("train.seed", "3")`, `("model.heads", "2")`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RunSpec {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<PathBuf>,
    #[serde(default)]
    pub set: Vec<(String, String)>,
}

impl RunSpec {
    /// The validated config of this run (a relative `config` path is read as given, i.e.
    /// relative to the working folder).
    pub fn build(&self) -> Result<Config> {
        let mut cfg = match (&self.preset, &self.config) {
            (Some(p), None) => icl_core::presets::preset(p)?,
            (None, Some(path)) => load_config(path)?,
            (Some(_), Some(_)) => {
                return Err(RunError::Refused(format!(
                    "run {:?} names both a preset and a config file; give one",
                    self.name
                )))
            }
            (None, None) => {
                return Err(RunError::Refused(format!(
                    "run {:?} names neither a preset nor a config file",
                    self.name
                )))
            }
        };
        for (k, v) in &self.set {
            cfg.set(k, v)
                .map_err(|e| RunError::Refused(format!("run {:?}: {k} = {v}: {e}", self.name)))?;
        }
        cfg.validate()
            .map_err(|e| RunError::Refused(format!("run {:?}: {e}", self.name)))?;
        Ok(cfg)
    }
}

/// Check that `name` can name a folder under the sweep folder.
pub fn check_name(name: &str) -> Result<()> {
    let bad = name.is_empty()
        || name.starts_with('.')
        || name.contains(['/', '\\', '\0', '\n'])
        || name.len() > 200;
    if bad {
        return Err(RunError::Refused(format!(
            "{name:?} cannot name a run folder (empty, starting with '.', holding '/' or a newline, or over 200 bytes)"
        )));
    }
    Ok(())
}

/// The config key a sweep's `seeds` set.
pub const SEED_KEY: &str = "train.seed";
/// The manifest's file name in a sweep folder.
pub const MANIFEST: &str = "manifest.jsonl";
/// The base config's file name in a sweep folder (config-file sweeps).
pub const BASE: &str = "base.toml";

/// A sweep file (see the module doc).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepFile {
    pub preset: Option<String>,
    pub config: Option<PathBuf>,
    pub seeds: Option<Vec<u64>>,
    #[serde(default)]
    pub set: toml::Table,
    #[serde(default)]
    pub grid: toml::Table,
}

/// One run of a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedRun {
    pub index: usize,
    pub name: String,
    /// The grid values and the seed (`train.seed`), in the order of the name.
    pub values: Vec<(String, serde_json::Value)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// The base config, relative to the sweep folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<PathBuf>,
    pub set: Vec<(String, String)>,
}

impl PlannedRun {
    /// The run's spec, its config path resolved against the sweep folder `dir`.
    pub fn spec(&self, dir: &Path) -> RunSpec {
        RunSpec {
            name: self.name.clone(),
            preset: self.preset.clone(),
            config: self.config.as_ref().map(|c| dir.join(c)),
            set: self.set.clone(),
        }
    }
}

/// A plan: the runs of a sweep file, and the base config's text for a config-file sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub runs: Vec<PlannedRun>,
    /// The grid keys (in name order; the seed key last when the file gives seeds).
    pub keys: Vec<String>,
    pub base: Option<String>,
    pub source: String,
}

fn bad(file: &Path, msg: impl std::fmt::Display) -> RunError {
    RunError::Refused(format!("{}: {msg}", file.display()))
}

/// The text a value is set from (as `--set KEY=TEXT`).
fn set_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A value as a piece of a folder name: its text with anything but letters, digits and
/// `. + - _` replaced by `_`.
fn name_part(v: &Value) -> String {
    set_text(v)
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '+' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Read and expand a sweep file. Every run's config is built and validated here, so a bad key or
/// value is reported before anything runs.
pub fn read_sweep(file: &Path) -> Result<Plan> {
    let source = read_text(file)?;
    let sf: SweepFile = toml::from_str(&source).map_err(|e| {
        let msg = e.message().to_string();
        bad(file, format!("not a sweep file: {msg}"))
    })?;
    let base = match (&sf.preset, &sf.config) {
        (Some(_), Some(_)) => return Err(bad(file, "give `preset` or `config`, not both")),
        (None, None) => return Err(bad(file, "give `preset = \"NAME\"` or `config = \"FILE\"`")),
        (Some(p), None) => {
            icl_core::presets::preset(p).map_err(|e| bad(file, e))?;
            None
        }
        (None, Some(c)) => {
            let path = file.parent().unwrap_or(Path::new(".")).join(c);
            let text = read_text(&path)?;
            icl_core::Config::from_toml(&text).map_err(|e| bad(&path, e))?;
            Some(text)
        }
    };
    // keys in sorted order (a TOML table's order depends on the toml crate's features)
    let mut set_keys: Vec<&String> = sf.set.keys().collect();
    set_keys.sort();
    let mut grid_keys: Vec<&String> = sf.grid.keys().collect();
    grid_keys.sort();
    let mut set = Vec::new();
    for k in set_keys {
        let v = &sf.set[k];
        if matches!(v, Value::Table(_)) {
            return Err(bad(
                file,
                format!(
                    "[set] {k}: a table; write dotted keys in quotes, e.g. \"train.steps\" = 1000"
                ),
            ));
        }
        set.push((k.clone(), set_text(v)));
    }
    let mut axes: Vec<(String, Vec<Value>)> = Vec::new();
    for k in grid_keys {
        let Value::Array(vals) = &sf.grid[k] else {
            return Err(bad(
                file,
                format!("[grid] {k}: expected a list of values, e.g. [1, 2, 4]"),
            ));
        };
        if vals.is_empty() {
            return Err(bad(
                file,
                format!("[grid] {k}: the list of values is empty"),
            ));
        }
        if icl_core::config::key(k).is_none() {
            return Err(bad(
                file,
                format!("[grid] {k}: unknown key (`icl presets --keys` lists them)"),
            ));
        }
        if let Some((i, v)) = vals
            .iter()
            .enumerate()
            .find(|(i, v)| vals[..*i].contains(v))
        {
            return Err(bad(
                file,
                format!(
                    "[grid] {k}: the value {v} is listed twice (entries {} and {})",
                    vals.iter().position(|x| x == v).unwrap_or(0) + 1,
                    i + 1
                ),
            ));
        }
        axes.push((k.clone(), vals.clone()));
    }
    for (k, _) in &set {
        if icl_core::config::key(k).is_none() {
            return Err(bad(
                file,
                format!("[set] {k}: unknown key (`icl presets --keys` lists them)"),
            ));
        }
    }
    // the same key twice (also through an alias, or the seed beside `seeds`)
    let canon = |k: &str| icl_core::config::key(k).map(|x| (x.section, x.name));
    let mut used: Vec<(&str, &str)> = Vec::new();
    for k in sf.grid.keys().chain(sf.set.keys()) {
        let c = canon(k).unwrap_or(("", ""));
        let seed = sf.seeds.is_some() && Some(c) == canon(SEED_KEY);
        if used.contains(&c) || seed {
            return Err(bad(
                file,
                format!("{k} is given twice (in [set], [grid] or as `seeds`)"),
            ));
        }
        used.push(c);
    }
    if let Some(s) = &sf.seeds {
        if s.is_empty() {
            return Err(bad(file, "`seeds` is empty"));
        }
        for (i, x) in s.iter().enumerate() {
            if s[..i].contains(x) {
                return Err(bad(file, format!("seed {x} is listed twice")));
            }
        }
        axes.push((SEED_KEY.into(), s.iter().map(|&x| seed_value(x)).collect()));
    }
    // the name of a key: its last part, unless two keys share it
    let short = |k: &str| k.rsplit('.').next().unwrap_or(k).to_string();
    let labels: Vec<String> = axes
        .iter()
        .map(|(k, _)| {
            let s = short(k);
            if axes.iter().filter(|(o, _)| short(o) == s).count() > 1 {
                k.clone()
            } else {
                s
            }
        })
        .collect();
    // every combination, the last axis fastest
    let total: usize = axes.iter().map(|(_, v)| v.len()).product();
    if total > 100_000 {
        return Err(bad(file, format!("{total} runs: more than 100000")));
    }
    let mut runs = Vec::with_capacity(total);
    for index in 0..total {
        let mut rem = index;
        let mut pick = vec![0; axes.len()];
        for (a, (_, vals)) in axes.iter().enumerate().rev() {
            pick[a] = rem % vals.len();
            rem /= vals.len();
        }
        let mut name = Vec::new();
        let mut values = Vec::new();
        let mut run_set = set.clone();
        for (a, (k, vals)) in axes.iter().enumerate() {
            let v = &vals[pick[a]];
            name.push(format!("{}={}", labels[a], name_part(v)));
            values.push((
                k.clone(),
                serde_json::to_value(v).unwrap_or(serde_json::Value::Null),
            ));
            run_set.push((k.clone(), set_text(v)));
        }
        let name = if name.is_empty() {
            "run".to_string()
        } else {
            name.join(",")
        };
        let run = PlannedRun {
            index,
            name,
            values,
            preset: sf.preset.clone(),
            config: base.as_ref().map(|_| PathBuf::from(BASE)),
            set: run_set,
        };
        if let Some(o) = runs.iter().find(|o: &&PlannedRun| o.name == run.name) {
            return Err(bad(
                file,
                format!(
                    "runs {} and {} would share the folder {:?} (grid values that differ only in characters a folder name cannot hold)",
                    o.index, run.index, run.name
                ),
            ));
        }
        check_name(&run.name).map_err(|e| bad(file, e))?;
        runs.push(run);
    }
    // build every config now: unknown keys, values out of range, inconsistent configs
    let cfg_dir = file.parent().unwrap_or(Path::new("."));
    for r in &runs {
        let mut spec = r.spec(Path::new(""));
        spec.config = sf.config.as_ref().map(|c| cfg_dir.join(c));
        spec.build().map_err(|e| bad(file, e))?;
    }
    Ok(Plan {
        runs,
        keys: axes.into_iter().map(|(k, _)| k).collect(),
        base,
        source,
    })
}

/// A seed as a TOML value (TOML integers are i64: larger seeds as text, which `--set` reads).
fn seed_value(x: u64) -> Value {
    i64::try_from(x)
        .map(Value::Integer)
        .unwrap_or_else(|_| Value::String(x.to_string()))
}

/// The manifest text of a plan: one JSON object per line.
pub fn manifest_text(runs: &[PlannedRun]) -> String {
    let mut s = String::new();
    for r in runs {
        s.push_str(&serde_json::to_string(r).unwrap_or_default());
        s.push('\n');
    }
    s
}

/// Write the plan of `file` into the sweep folder `dir` (created). Planning again into a folder
/// with the same plan changes nothing; a folder holding another plan is refused.
pub fn plan(file: &Path, dir: &Path) -> Result<Plan> {
    let p = read_sweep(file)?;
    let manifest = dir.join(MANIFEST);
    let text = manifest_text(&p.runs);
    if manifest.exists() {
        if read_text(&manifest)? != text
            || p.base.as_deref() != read_text(&dir.join(BASE)).ok().as_deref()
        {
            return Err(RunError::Refused(format!(
                "{} already holds another sweep plan; choose another --out",
                dir.display()
            )));
        }
        return Ok(p);
    }
    if dir.is_file() {
        return Err(RunError::Refused(format!(
            "{} is a file; --out names a sweep folder",
            dir.display()
        )));
    }
    std::fs::create_dir_all(dir).map_err(|e| RunError::Os(dir.into(), e))?;
    if let Some(b) = &p.base {
        atomic_write(&dir.join(BASE), b.as_bytes())?;
    }
    atomic_write(&dir.join("sweep.toml"), p.source.as_bytes())?;
    atomic_write(&manifest, text.as_bytes())?;
    Ok(p)
}

/// The runs of the sweep folder `dir` (its manifest).
pub fn load(dir: &Path) -> Result<Vec<PlannedRun>> {
    let path = dir.join(MANIFEST);
    if !path.is_file() {
        return Err(RunError::Refused(format!(
            "{} is not a sweep folder (no {MANIFEST}; make one with `icl sweep plan FILE --out {}`)",
            dir.display(),
            dir.display()
        )));
    }
    let text = read_text(&path)?;
    let mut runs = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let r: PlannedRun = serde_json::from_str(line)
            .map_err(|e| RunError::Corrupt(path.clone(), format!("line {}: {e}", i + 1)))?;
        if r.index != i {
            return Err(RunError::Corrupt(
                path.clone(),
                format!("line {} holds run index {}", i + 1, r.index),
            ));
        }
        check_name(&r.name).map_err(|e| RunError::Corrupt(path.clone(), e.to_string()))?;
        runs.push(r);
    }
    Ok(runs)
}

/// The specs of the sweep folder `dir`, ready for [`super::run_specs`] into `dir`.
pub fn specs(dir: &Path) -> Result<Vec<RunSpec>> {
    Ok(load(dir)?.iter().map(|r| r.spec(dir)).collect())
}
