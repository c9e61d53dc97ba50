//! The local executor: train a list of named configs into `DIR/<name>`, `jobs` at a time.
//!
//! Each spec goes through [`crate::train::train`] or [`crate::train::resume`] (the one run-folder
//! writer), so the folders are complete or absent and locked while written. A spec whose folder
//! holds `summary.json` is skipped; one with an interrupted run (a staging folder with a
//! checkpoint or config) is resumed; a failed spec does not stop the others. Parallel runs share
//! the cores fairly (each trains in its own thread pool of `cores / jobs` threads); the engines'
//! results do not depend on the thread count, so a run's bytes do not depend on `jobs`.
use super::plan::{check_name, RunSpec};
use crate::checkpoint::load_config;
use crate::engines::Pack;
use crate::error::{Result, RunError};
use crate::folder::RunDir;
use crate::summary::Summary;
use crate::train::{resume, staging_path, train, Outcome, TrainOptions};
use icl_core::Config;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// What happened to one spec.
#[derive(Debug)]
pub enum RunStatus {
    /// Its folder was already complete.
    Skipped,
    /// Trained from the start.
    Trained,
    /// An interrupted run was continued.
    Resumed,
    /// The caller interrupted it (it is checkpointed; running the specs again resumes it).
    Interrupted { step: u64 },
    /// Not started: the caller interrupted the sweep first.
    NotStarted,
    /// It failed (the other specs went on).
    Failed(RunError),
}

/// One spec's result: its status and, when its folder is complete, the timing in its
/// `summary.json`.
#[derive(Debug)]
pub struct RunResult {
    pub name: String,
    pub dir: PathBuf,
    pub status: RunStatus,
    /// Training seconds and steps per second as recorded in `summary.json` (of the last
    /// training, i.e. the resumed part of a resumed run).
    pub seconds: Option<f64>,
    pub steps_per_s: Option<f64>,
    /// Steps of the finished run.
    pub steps: Option<u64>,
    /// Wall seconds this call spent on the spec (0 for a skipped one).
    pub wall_seconds: f64,
}

impl RunResult {
    /// Whether the run folder is complete.
    pub fn complete(&self) -> bool {
        matches!(
            self.status,
            RunStatus::Skipped | RunStatus::Trained | RunStatus::Resumed
        )
    }

    /// Whether the caller's interruption stopped it (checkpointed, or never started): running
    /// the sweep again continues it.
    pub fn stopped(&self) -> bool {
        matches!(
            self.status,
            RunStatus::Interrupted { .. } | RunStatus::NotStarted
        )
    }
}

/// Progress reports from the workers: `(spec index, steps done, total steps, last loss)`.
/// Called from several threads; returning `false` interrupts the sweep (running specs are
/// checkpointed, no new one starts).
pub type SweepProgress<'a> = &'a (dyn Fn(usize, u64, u64, f64) -> bool + Sync);

/// Train every spec into `dir/<name>`, `jobs` at a time (0: one per core). Bad specs (unknown
/// keys, invalid configs, duplicate or unusable names) are an error before anything runs; a
/// failure while training is recorded in that spec's [`RunStatus::Failed`] and the others go on.
/// The results are in the order of `specs`.
pub fn run_specs(
    dir: &Path,
    specs: &[RunSpec],
    jobs: usize,
    opts: &TrainOptions,
    progress: SweepProgress,
) -> Result<Vec<RunResult>> {
    run_specs_reporting(dir, specs, jobs, opts, progress, &|_, _| {})
}

/// A spec's result as soon as it is known: `(spec index, result)`, called from the worker that
/// ran it, right after the run (before the other specs finish).
pub type SweepDone<'a> = &'a (dyn Fn(usize, &RunResult) + Sync);

/// [`run_specs`], calling `done` with each spec's result as soon as that spec is finished,
/// skipped, failed or interrupted (specs never started are not reported).
pub fn run_specs_reporting(
    dir: &Path,
    specs: &[RunSpec],
    jobs: usize,
    opts: &TrainOptions,
    progress: SweepProgress,
    done: SweepDone,
) -> Result<Vec<RunResult>> {
    let mut configs = Vec::with_capacity(specs.len());
    for (i, s) in specs.iter().enumerate() {
        check_name(&s.name)?;
        if specs[..i].iter().any(|o| o.name == s.name) {
            return Err(RunError::Refused(format!(
                "two runs are named {:?}",
                s.name
            )));
        }
        let cfg = s.build()?;
        crate::engines::check(
            crate::engines::Engines::named(opts.engine.as_deref())
                .0
                .as_str(),
            cfg.train.dtype,
        )?;
        configs.push(cfg);
    }
    std::fs::create_dir_all(dir).map_err(|e| RunError::Os(dir.into(), e))?;
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let units = units(&configs, opts);
    let jobs = if jobs == 0 { cores } else { jobs }.clamp(1, units.len().max(1));
    let threads = (cores / jobs).max(1);

    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let results: Mutex<Vec<Option<RunResult>>> =
        Mutex::new((0..specs.len()).map(|_| None).collect());
    // one spec, in `pool` (a run alone) or on the calling thread (a run of a pack)
    let run_spec = |i: usize, pool: Option<&rayon::ThreadPool>, pack: Option<Pack>| {
        let spec = &specs[i];
        let out = dir.join(&spec.name);
        let r = if stop.load(Ordering::SeqCst) {
            result(spec, &out, RunStatus::NotStarted, 0.0)
        } else {
            let t0 = Instant::now();
            let mut report = |step: u64, total: u64, loss: f64| {
                let go = progress(i, step, total, loss) && !stop.load(Ordering::SeqCst);
                if !go {
                    stop.store(true, Ordering::SeqCst);
                }
                go
            };
            let o = TrainOptions {
                preset: spec.preset.clone(),
                pack,
                ..opts.clone()
            };
            let status = match pool {
                Some(pool) => pool.install(|| one(&configs[i], &out, &o, &mut report)),
                None => one(&configs[i], &out, &o, &mut report),
            };
            let status = status.unwrap_or_else(RunStatus::Failed);
            let r = result(spec, &out, status, t0.elapsed().as_secs_f64());
            done(i, &r);
            r
        };
        results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
    };
    let worker = || -> Result<()> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .map_err(|e| RunError::Engine(format!("thread pool: {e}")))?;
        loop {
            let u = next.fetch_add(1, Ordering::SeqCst);
            let Some(unit) = units.get(u) else {
                return Ok(());
            };
            match unit {
                Unit::Alone(i) => run_spec(*i, Some(&pool), None),
                Unit::Pack(members) => run_pack(members, &stop, &|i, p| run_spec(i, None, p)),
            }
        }
    };
    let outcomes: Vec<Result<()>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..jobs).map(|_| s.spawn(worker)).collect();
        hs.into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(RunError::Engine("a sweep worker panicked".into())))
            })
            .collect()
    });
    for o in outcomes {
        o?;
    }
    let results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    Ok(results
        .into_iter()
        .zip(specs)
        .map(|(r, s)| {
            r.unwrap_or_else(|| result(s, &dir.join(&s.name), RunStatus::NotStarted, 0.0))
        })
        .collect())
}

/// Most runs in one pack (each trains in a thread of its own).
pub const MAX_PACK: usize = 256;

/// Refuse runs per array task outside 1..=[`MAX_PACK`] (`what`: the option as the caller's
/// front end spells it, e.g. `--runs-per-task`).
pub fn check_runs_per_task(what: &str, k: usize) -> Result<()> {
    if (1..=MAX_PACK).contains(&k) {
        Ok(())
    } else {
        Err(RunError::Refused(format!(
            "{what} {k}: give 1 to {MAX_PACK}"
        )))
    }
}

/// What one worker takes at a time: a run alone, or a pack of runs that share one Vulkan
/// device and its calls ([`crate::pack`]).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Unit {
    Alone(usize),
    Pack(Vec<usize>),
}

/// The runs of a sweep as units, in the order of their first spec: under the Vulkan engine the
/// one-layer runs of one model shape, batch and length are packed ([`MAX_PACK`] at most), every
/// other run is alone.
fn units(configs: &[Config], opts: &TrainOptions) -> Vec<Unit> {
    let packing = opts.engine.as_deref() == Some("vulkan");
    let mut out: Vec<Unit> = Vec::new();
    // each shape's pack still taking runs: (key, its index in `out`)
    let mut open: Vec<(String, usize)> = Vec::new();
    for (i, cfg) in configs.iter().enumerate() {
        let Some(key) = packing.then(|| pack_key(cfg)).flatten() else {
            out.push(Unit::Alone(i));
            continue;
        };
        match open.iter().position(|(k, _)| *k == key) {
            Some(j) => {
                if let Unit::Pack(m) = &mut out[open[j].1] {
                    m.push(i);
                    if m.len() == MAX_PACK {
                        open.swap_remove(j);
                    }
                }
            }
            None => {
                open.push((key, out.len()));
                out.push(Unit::Pack(vec![i]));
            }
        }
    }
    out
}

/// The shape runs must share to be packed (`None`: not packable, or no Vulkan in this build).
fn pack_key(cfg: &Config) -> Option<String> {
    #[cfg(feature = "vulkan")]
    if crate::pack::packable(cfg) && cfg.train.dtype == icl_core::config::Dtype::F32 {
        let spec = icl_core::model::ModelSpec::from_config(cfg).ok()?;
        return Some(format!(
            "{:?} {} {}",
            spec.net, cfg.train.batch, cfg.task.len
        ));
    }
    let _ = cfg;
    None
}

/// Train the runs `members` of one pack, each in a thread of its own, on one device. Stopped
/// before it starts, or with a device that cannot be opened, the runs go one by one without a
/// pack (they are then reported not started, or fail with the engine's error themselves).
fn run_pack(members: &[usize], stop: &AtomicBool, run_spec: &(dyn Fn(usize, Option<Pack>) + Sync)) {
    #[cfg(feature = "vulkan")]
    if !stop.load(Ordering::SeqCst) {
        if let Ok(pack) = Pack::from_env() {
            std::thread::scope(|s| {
                for &i in members {
                    let p = pack.clone();
                    s.spawn(move || run_spec(i, Some(p)));
                }
            });
            return;
        }
    }
    let _ = stop;
    members.iter().for_each(|&i| run_spec(i, None));
}

/// Train, resume or skip one run folder.
fn one(
    cfg: &Config,
    out: &Path,
    o: &TrainOptions,
    report: &mut dyn FnMut(u64, u64, f64) -> bool,
) -> Result<RunStatus> {
    let run = RunDir::new(out);
    if out.exists() && !o.force {
        // a run of another config is never replaced, complete or damaged
        if let Ok(have) = load_config(&run.config()) {
            if &have != cfg {
                return Err(RunError::Refused(format!(
                    "{} holds a run of another config; remove it, or use another sweep folder",
                    out.display()
                )));
            }
        }
        // complete only if `icl eval` could read it (not summary.json alone); a damaged run
        // (a deleted or corrupt model, summary or config) is trained again: its folder is
        // moved aside meanwhile and dropped only once the new run is complete
        if super::collect::read_complete(out).is_ok() {
            return Ok(RunStatus::Skipped);
        }
        let aside = out.with_file_name(format!(
            ".{}.damaged-{}",
            out.file_name().unwrap_or_default().to_string_lossy(),
            std::process::id()
        ));
        std::fs::rename(out, &aside).map_err(|e| RunError::Os(out.into(), e))?;
        let res = train_or_resume(cfg, out, o, report);
        if matches!(res, Ok(RunStatus::Trained | RunStatus::Resumed)) {
            let _ = std::fs::remove_dir_all(&aside);
        } else if !out.exists() {
            // interrupted or failed: the damaged folder is back as it was
            let _ = std::fs::rename(&aside, out);
        }
        return res;
    }
    train_or_resume(cfg, out, o, report)
}

/// Train `out` afresh, or resume its staged run of the same config.
fn train_or_resume(
    cfg: &Config,
    out: &Path,
    o: &TrainOptions,
    report: &mut dyn FnMut(u64, u64, f64) -> bool,
) -> Result<RunStatus> {
    let stage = RunDir::new(staging_path(out)?);
    let staged = stage.file("checkpoint.safetensors").is_file() || stage.config().is_file();
    let same = staged
        && load_config(&stage.config())
            .map(|c| &c == cfg)
            .unwrap_or(false);
    let (outcome, resumed) = if staged && same && !o.force {
        (resume(out, None, o, report)?, true)
    } else {
        // nothing staged, or a staged run of another config: start over
        let o = TrainOptions {
            force: true,
            ..o.clone()
        };
        (train(cfg, out, &o, report)?, false)
    };
    Ok(match outcome {
        Outcome::Finished { .. } if resumed => RunStatus::Resumed,
        Outcome::Finished { .. } => RunStatus::Trained,
        Outcome::Interrupted { step, .. } => RunStatus::Interrupted { step },
    })
}

fn result(spec: &RunSpec, out: &Path, status: RunStatus, wall: f64) -> RunResult {
    let summary: Option<Summary> = std::fs::read_to_string(RunDir::new(out).summary())
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    let complete = matches!(
        status,
        RunStatus::Skipped | RunStatus::Trained | RunStatus::Resumed
    );
    let summary = summary.filter(|_| complete);
    RunResult {
        name: spec.name.clone(),
        dir: out.to_path_buf(),
        status,
        seconds: summary.as_ref().map(|s| s.training_seconds()),
        steps_per_s: summary.as_ref().map(|s| s.steps_per_second),
        steps: summary.as_ref().map(|s| s.steps),
        wall_seconds: wall,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Under the Vulkan engine, one-layer runs of one shape share packs of at most
    /// [`MAX_PACK`] runs and a run of another shape opens its own; multi-layer runs, and every
    /// run under another engine, stay alone.
    #[cfg(feature = "vulkan")]
    #[test]
    fn runs_of_one_shape_are_packed_up_to_the_limit() {
        let he = icl_core::presets::preset("he2025").unwrap();
        let mut h1 = he.clone();
        h1.set("model.heads", "1").unwrap();
        let ml = icl_core::presets::preset("multilayer-t2").unwrap();
        let mut configs = vec![he.clone(); MAX_PACK + 1];
        configs.insert(1, h1);
        configs.insert(2, ml);
        let vk = TrainOptions {
            engine: Some("vulkan".into()),
            ..TrainOptions::default()
        };
        let mut first: Vec<usize> = (0..configs.len()).filter(|&i| i != 1 && i != 2).collect();
        let last = first.split_off(MAX_PACK);
        assert_eq!(
            units(&configs, &vk),
            vec![
                Unit::Pack(first),
                Unit::Pack(vec![1]),
                Unit::Alone(2),
                Unit::Pack(last),
            ]
        );
        let alone: Vec<Unit> = (0..configs.len()).map(Unit::Alone).collect();
        assert_eq!(units(&configs, &TrainOptions::default()), alone);
    }
}
