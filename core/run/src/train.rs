//! A training run, from a config to a complete run folder: the one run-folder writer.
//!
//! The folder appears complete or not at all. Everything is written into a hidden sibling
//! `.NAME.partial/` (locked while a process writes it, so two runs cannot write one folder), with
//! `summary.json` last, and renamed into place at the end (an existing run is replaced only with
//! `force`, by swapping the folders). During training the trainer's whole state is checkpointed
//! into the staging folder (every `checkpoint_every` steps and every `checkpoint_seconds`), and
//! when the caller interrupts (its progress callback returns `false`, e.g. on SIGINT); a killed or
//! interrupted run continues with [`resume`] to the same bytes as an uninterrupted one. A finished
//! run keeps its optimiser state in `model.safetensors`, so [`resume`] can also extend it.
//!
//! The one exception to "complete or not at all" is the TensorBoard event file of a session
//! ([`crate::tensorboard`]): an append log in the staging folder, written row by row while the run
//! trains so that TensorBoard shows it live; its events carry wall times, outside the same-bytes
//! guarantee, and a resumed session continues its stream from the checkpoint.
use crate::any::{AnyTrainer, Start};
use crate::checkpoint;
use crate::csv_text::{csv_text, metrics_row};
use crate::dispatch;
use crate::engines::{Engines, RunScalar};
use crate::error::{Result, RunError};
use crate::folder::RunDir;
use crate::summary::{config_json, pretty, Summary};
use crate::tensorboard::EventLog;
use icl_core::config::Config;
use icl_core::train::{Options, Trainer};
use icl_core::Scalar;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Minutes of training between two checkpoints, by default (`--checkpoint-minutes`, C/C++
/// `checkpoint_minutes`, Python `checkpoint_minutes=`): a `kill -9` loses at most this much
/// work. A checkpoint of a one-layer model is a few kB and takes milliseconds, so half a minute
/// costs nothing measurable; a GPT-2 run's (MBs) well under 1% of its time.
pub const CHECKPOINT_MINUTES: f64 = 0.5;

/// How to run.
#[derive(Debug, Clone, PartialEq)]
pub struct TrainOptions {
    /// Engine name (default: the fastest built in).
    pub engine: Option<String>,
    /// The preset the config came from (recorded in the summary).
    pub preset: Option<String>,
    /// Replace an existing run folder (or discard an interrupted one).
    pub force: bool,
    /// Monte Carlo samples for the risk at the training length in the summary (< 2: skip).
    pub eval_samples: usize,
    /// Checkpoint every this many steps (0: only by time and on interruption).
    pub checkpoint_every: u64,
    /// Checkpoint every this many seconds of training (0: only by steps and on interruption).
    pub checkpoint_seconds: f64,
    /// Train in this pack of runs on one Vulkan device ([`crate::pack`]; the engine is then
    /// `vulkan`): what sweeps on the Vulkan engine give each of their one-layer runs.
    pub pack: Option<crate::engines::Pack>,
}

impl TrainOptions {
    /// The engines a run trains with: the named engine, or the pack.
    pub fn engines(&self) -> Engines {
        Engines(
            self.engine
                .clone()
                .unwrap_or(crate::engines::default_engine().into()),
            self.pack.clone(),
        )
    }

    /// Check the options before a run starts, not after hours of training: the final
    /// evaluation's samples within [`icl_core::budget::MAX_SAMPLES`].
    pub fn check(&self) -> Result<()> {
        Ok(icl_core::budget::samples(
            self.eval_samples as u64,
            "eval_samples",
        )?)
    }
}

/// The memory a run of `cfg` needs with this process's worker threads, within the budget and
/// available now ([`icl_core::budget::reserve`]): refused before the run starts, not by an
/// abort in the middle of it.
pub fn check_memory(cfg: &Config) -> Result<()> {
    let threads = rayon::current_num_threads() as u64;
    cfg.check_memory(threads)?;
    let bytes = cfg.memory_estimate_threads(threads).map(|(b, _)| b);
    Ok(icl_core::budget::reserve(bytes, || {
        "this run (Config::memory_estimate)".into()
    })?)
}

impl Default for TrainOptions {
    fn default() -> Self {
        TrainOptions {
            engine: None,
            preset: None,
            force: false,
            eval_samples: crate::eval::MC_SAMPLES,
            checkpoint_every: 0,
            checkpoint_seconds: 60.0 * CHECKPOINT_MINUTES,
            pack: None,
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The folder is complete.
    Finished { dir: RunDir, summary: Box<Summary> },
    /// The caller stopped the run; its state is in `checkpoint`, [`resume`] continues it.
    Interrupted { step: u64, checkpoint: PathBuf },
}

/// Progress reports: `(steps done, total steps, last loss)`; returning `false` interrupts the
/// run (it is checkpointed first).
pub type Progress<'a> = &'a mut dyn FnMut(u64, u64, f64) -> bool;

/// Refuse an engine named for a run whose loss no engine computes: linear attention on a fixed
/// set (the zhang2025 presets) trains on the set's exact sufficient statistics (`summary.json`
/// engine `moments`), so an `--engine` would be ignored. `icl train` asks this; sweeps and
/// `icl repro`, whose engine applies to many runs, do not.
pub fn check_engine_choice(cfg: &Config, engine: Option<&str>) -> Result<()> {
    match engine {
        Some(e) if icl_core::train::objective::by_moments(cfg) => Err(RunError::Refused(format!(
            "--engine {e}: this run (linear attention on a fixed set, task.P = {}) trains on the set's exact sufficient statistics (engine moments), not on an engine; leave --engine out",
            cfg.task.p
        ))),
        _ => Ok(()),
    }
}

/// Train `cfg` into the run folder `out`.
pub fn train(cfg: &Config, out: &Path, o: &TrainOptions, progress: Progress) -> Result<Outcome> {
    o.check()?;
    cfg.validate()?;
    check_steps(cfg)?;
    check_memory(cfg)?;
    let engines = o.engines();
    crate::engines::check(&engines.0, cfg.train.dtype)?;
    let stage = Stage::open(out, o.force, false)?;
    let staging = stage.dir.dir.clone();
    let ckpt = stage.checkpoint();
    let res = (|| {
        stage.check_space(cfg)?;
        let t0 = Instant::now();
        let tr = AnyTrainer::new(cfg, &engines, Start::Fresh, &Options::default())?;
        let setup = t0.elapsed().as_secs_f64();
        run(stage, tr, o, None, setup, progress)
    })();
    res.map_err(|e| abandoned(e, out, &staging, &ckpt))
}

/// A run needs at least one step: `train.steps = 0` would write a model that never trained,
/// with no loss (refused before anything is written).
fn check_steps(cfg: &Config) -> Result<()> {
    if cfg.train.steps == 0 {
        return Err(RunError::Refused(
            "train.steps = 0: a run needs at least one step (give --steps N, N >= 1)".into(),
        ));
    }
    Ok(())
}

/// A fresh run that failed: with no checkpoint there is nothing to keep, so its staging folder
/// goes (the destination never held anything); with one, the error says how to continue.
fn abandoned(e: RunError, out: &Path, staging: &Path, ckpt: &Path) -> RunError {
    if !ckpt.is_file() {
        let _ = std::fs::remove_dir_all(staging);
        return e;
    }
    match (e, checkpoint::load(ckpt)) {
        // a full disk or another write error: after freeing space the run continues
        (RunError::Os(p, io), Ok(l)) => RunError::Os(
            p,
            std::io::Error::new(
                io.kind(),
                format!(
                    "{io}; the run is checkpointed at step {} in {}: continue it with `icl train --resume {}`",
                    l.step,
                    staging.display(),
                    out.display()
                ),
            ),
        ),
        (e, _) => e,
    }
}

/// The config of the run [`resume`] would continue in `out`, from its config file (the staging
/// folder's for an interrupted run, else the finished run's); `None` if neither reads. For
/// notes before the resume starts (it does not check that the run can be resumed).
pub fn resume_config(out: &Path) -> Option<Config> {
    let staged = staging_path(out).ok().map(|p| RunDir::new(&p).config());
    staged
        .into_iter()
        .chain([RunDir::new(out).config()])
        .find_map(|path| checkpoint::load_config(&path).ok())
}

/// Continue the run of `out`: an interrupted run from its last checkpoint, or a finished one
/// (extended to `steps`, which must be larger than the steps done). A resume that is refused or
/// fails before it has a checkpoint of its own writes nothing: a folder with nothing to resume
/// is refused before anything is created, and a staging folder this call created (to extend a
/// finished run) is removed again unless it holds a checkpoint to continue from.
pub fn resume(
    out: &Path,
    steps: Option<u64>,
    o: &TrainOptions,
    progress: Progress,
) -> Result<Outcome> {
    o.check()?;
    let staging = staging_path(out)?;
    if !staging.is_dir() && !RunDir::new(out).model().is_file() {
        return Err(RunError::Refused(format!(
            "{} has no interrupted or finished run to resume",
            out.display()
        )));
    }
    let created = !staging.exists();
    let stage = Stage::open(out, false, true)?;
    let ckpt = stage.checkpoint();
    let config = stage.dir.config();
    resume_staged(stage, out, steps, o, progress).inspect_err(|_| {
        // nothing to continue from in the staging folder (a fresh one, or one holding only the
        // lock and no config of an interrupted run): remove it, under its lock again (the
        // stage's was released when the stage was dropped), so a process that took it over
        // in between keeps its folder
        if !ckpt.is_file() && (created || !config.is_file()) {
            if let Ok(lock) = File::open(staging.join(".lock")) {
                if lock.try_lock().is_ok() {
                    let _ = std::fs::remove_dir_all(&staging);
                }
            }
        }
    })
}

/// [`resume`] once the staging folder is open and locked.
fn resume_staged(
    stage: Stage,
    out: &Path,
    steps: Option<u64>,
    o: &TrainOptions,
    progress: Progress,
) -> Result<Outcome> {
    let (path, finished) = if stage.checkpoint().is_file() {
        (stage.checkpoint(), false)
    } else if RunDir::new(out).model().is_file() {
        (RunDir::new(out).model(), true)
    } else if stage.dir.config().is_file() {
        // interrupted before its first checkpoint: start it again from its config
        let mut cfg = checkpoint::load_config(&stage.dir.config())?;
        if let Some(s) = steps {
            cfg.train.steps = s;
        }
        cfg.validate()?;
        check_steps(&cfg)?;
        check_memory(&cfg)?;
        let engines = o.engines();
        crate::engines::check(&engines.0, cfg.train.dtype)?;
        stage.check_space(&cfg)?;
        let t0 = Instant::now();
        let tr = AnyTrainer::new(&cfg, &engines, Start::Fresh, &Options::default())?;
        let setup = t0.elapsed().as_secs_f64();
        return run(stage, tr, o, None, setup, progress);
    } else {
        return Err(RunError::Refused(format!(
            "{} has no interrupted or finished run to resume",
            out.display()
        )));
    };
    let loaded = checkpoint::load(&path)?;
    let Some(state) = loaded.state else {
        return Err(RunError::Refused(format!(
            "{} holds no trainer state (a run from an older icl, or an imported model): it cannot be resumed",
            path.display()
        )));
    };
    let mut cfg = loaded.config;
    if let Some(s) = steps {
        cfg.train.steps = s;
    }
    if finished && cfg.train.steps <= loaded.step {
        return Err(RunError::Refused(format!(
            "the run in {} is finished at step {}; give --steps N with N > {} to extend it",
            out.display(),
            loaded.step,
            loaded.step
        )));
    }
    if cfg.train.steps < loaded.step {
        return Err(RunError::Refused(format!(
            "the run is at step {}, beyond --steps {}",
            loaded.step, cfg.train.steps
        )));
    }
    cfg.validate()?;
    check_memory(&cfg)?;
    let engines = o.engines();
    crate::engines::check(&engines.0, cfg.train.dtype)?;
    stage.check_space(&cfg)?;
    // keep the preset name the run was started from
    let mut o = o.clone();
    if o.preset.is_none() {
        let earlier = [stage.dir.summary(), RunDir::new(out).summary()];
        o.preset = earlier.iter().find_map(|p| {
            let s: Summary = serde_json::from_str(&crate::folder::read_text(p).ok()?).ok()?;
            s.preset
        });
    }
    let t0 = Instant::now();
    let tr = AnyTrainer::resume(&cfg, &engines, state, &Options::default())?;
    let setup = t0.elapsed().as_secs_f64();
    // a finished run's model keeps no clock (its bytes depend on the seed alone): the seconds it
    // took are in its summary.json, so an extended run's total counts them too
    let seconds = loaded.seconds.or_else(|| {
        let p = RunDir::new(out).summary();
        let s: Summary = serde_json::from_str(&std::fs::read_to_string(p).ok()?).ok()?;
        finished.then(|| s.training_seconds())
    });
    let from = Resumed {
        step: loaded.step,
        seconds,
        finished,
    };
    run(stage, tr, &o, Some(from), setup, progress)
}

/// Where a resumed run took up: the checkpoint's step and its clock (training seconds so far),
/// and whether it extends a finished run (whose event files are in the run folder, not the
/// staging folder).
#[derive(Debug, Clone, Copy)]
struct Resumed {
    step: u64,
    seconds: Option<f64>,
    finished: bool,
}

/// The training clock of one session: seconds before it (`None`: unknown, a checkpoint that kept
/// no clock) plus the time since `t0`.
struct Clock {
    before: Option<f64>,
    t0: Instant,
}

impl Clock {
    fn session(&self) -> f64 {
        self.t0.elapsed().as_secs_f64()
    }
    fn total(&self) -> Option<f64> {
        self.before.map(|b| b + self.session())
    }
}

fn run(
    stage: Stage,
    mut tr: AnyTrainer,
    o: &TrainOptions,
    resumed: Option<Resumed>,
    setup_seconds: f64,
    progress: Progress,
) -> Result<Outcome> {
    let cfg = tr.config().clone();
    stage.dir.write_text("config.toml", &cfg.to_toml())?;
    let clock = Clock {
        // a fresh run starts its clock at 0; a resumed one where its checkpoint's stopped
        before: resumed.map_or(Some(0.0), |r| r.seconds),
        t0: Instant::now(),
    };
    // the TensorBoard stream continues from the staging folder's event files, or from the
    // finished run's when this session extends it
    let from = match resumed {
        Some(r) if r.finished => stage.out.clone(),
        _ => stage.dir.dir.clone(),
    };
    let mut events = dispatch!(&tr, t => EventLog::open(
        &stage.dir.dir,
        &from,
        &t.rows(),
        t.columns(),
        t.cfg.train.lr,
        t.step,
        clock.t0,
        Some(&t.cfg),
    )?);
    let finished =
        dispatch!(&mut tr, t => train_loop(t, &stage, o, &clock, &mut events, progress)?);
    if !finished {
        return Ok(Outcome::Interrupted {
            step: tr.step(),
            checkpoint: stage.checkpoint(),
        });
    }
    let summary =
        dispatch!(&mut tr, t => write_outputs(t, &stage, o, resumed, &clock, setup_seconds)?);
    let dir = stage.commit()?;
    Ok(Outcome::Finished {
        dir,
        summary: Box::new(summary),
    })
}

fn column_names<T: Scalar>(t: &Trainer<T>) -> Vec<String> {
    t.columns().iter().map(|c| c.name.clone()).collect()
}

fn save_checkpoint<T: Scalar>(t: &Trainer<T>, stage: &Stage, clock: &Clock) -> Result<()> {
    checkpoint::save(
        &stage.checkpoint(),
        &t.cfg,
        &t.state(),
        &t.model,
        &column_names(t),
        clock.total(),
    )
}

/// Steps to the end (`true`) or until the caller interrupts (`false`, after a checkpoint). Each
/// row the trainer logs goes to the TensorBoard event file at once, and the file is flushed to
/// the disk with every checkpoint (its events past the checkpoint are dropped on resume).
fn train_loop<T: Scalar>(
    t: &mut Trainer<T>,
    stage: &Stage,
    o: &TrainOptions,
    clock: &Clock,
    events: &mut EventLog,
    progress: Progress,
) -> Result<bool> {
    let total = t.cfg.train.steps;
    let mut last_ckpt = Instant::now();
    let logged = |t: &Trainer<T>| t.log.len() + t.early.len();
    let mut seen = logged(t);
    let checkpoint = |t: &Trainer<T>, events: &EventLog| -> Result<()> {
        events.sync()?;
        save_checkpoint(t, stage, clock)
    };
    while t.step < total {
        let loss = t.step()?;
        if logged(t) != seen {
            events.rows(&t.rows(), t.step)?;
            seen = logged(t);
        }
        let by_steps = o.checkpoint_every > 0 && t.step.is_multiple_of(o.checkpoint_every);
        let by_time =
            o.checkpoint_seconds > 0.0 && last_ckpt.elapsed().as_secs_f64() >= o.checkpoint_seconds;
        if (by_steps || by_time) && t.step < total {
            checkpoint(t, events)?;
            last_ckpt = Instant::now();
        }
        if !progress(t.step, total, loss) {
            checkpoint(t, events)?;
            return Ok(false);
        }
    }
    t.finish()?;
    events.rows(&t.rows(), t.step)?;
    events.sync()?;
    Ok(true)
}

/// `metrics.csv`: step, loss and every probe column; the regular rows and the early ones
/// ([`icl_core::train::early_row`]), by step.
fn metrics_csv<T: Scalar>(t: &Trainer<T>) -> Result<String> {
    let mut header = vec!["step", "loss"];
    header.extend(t.columns().iter().map(|c| c.name.as_str()));
    let rows = t
        .rows()
        .into_iter()
        .map(|r| metrics_row(r.step, r.loss, &r.values, true));
    csv_text(&header, rows)
}

fn write_outputs<T: RunScalar>(
    t: &mut Trainer<T>,
    stage: &Stage,
    o: &TrainOptions,
    resumed: Option<Resumed>,
    clock: &Clock,
    setup_seconds: f64,
) -> Result<Summary> {
    let cfg = t.cfg.clone();
    let dir = &stage.dir;
    let seconds = clock.session();
    let resumed_from = resumed.map(|r| r.step);
    // no clock in the run's model: the same seed gives the same bytes
    checkpoint::save(
        &dir.model(),
        &cfg,
        &t.state(),
        &t.model,
        &column_names(t),
        None,
    )?;
    dir.write_text("metrics.csv", &metrics_csv(t)?)?;
    if !t.snapshots.is_empty() {
        // transformers: Phi of every parameter set and head, each D x D
        let (heads, e) = checkpoint::snapshot_shape(&t.model.spec);
        checkpoint::save_snapshots(&dir.snapshots(), &t.snapshots, heads, e)?;
    }
    let steps_done = t.step - resumed_from.unwrap_or(0);
    let final_loss = t.log.last().map(|r| r.loss).unwrap_or(f64::NAN);
    let mut summary = Summary {
        preset: o.preset.clone(),
        config: config_json(&cfg),
        engine: t.engine_name().to_string(),
        simd_level: crate::engines::simd_level::<T>(t.engine_name(), &t.model.spec.net),
        dtype: T::NAME.into(),
        protocol: t.protocol().into(),
        steps: t.step,
        seconds,
        setup_seconds,
        steps_per_second: steps_done as f64 / seconds.max(1e-9),
        final_loss,
        resumed_from,
        total_seconds: resumed.and(clock.total()),
        risk: None,
        heads: Vec::new(),
        sign_matching: None,
        eta_eff: None,
        linattn: None,
        transformer: None,
        risks: Vec::new(),
    };
    crate::outputs::write(
        t,
        dir,
        o.engine.as_deref(),
        o.pack.as_ref(),
        o.eval_samples,
        &mut summary,
    )?;
    dir.write_text("summary.json", &pretty(&summary))?;
    Ok(summary)
}

/// The staging folder of a run: `.NAME.partial/` beside `out`, locked while we write it.
struct Stage {
    out: PathBuf,
    dir: RunDir,
    _lock: File,
}

pub(crate) fn staging_path(out: &Path) -> Result<PathBuf> {
    let name = out.file_name().ok_or_else(|| {
        RunError::Refused(format!(
            "{} names no folder (give a folder name, e.g. runs/he2025)",
            out.display()
        ))
    })?;
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    Ok(parent.join(format!(".{}.partial", name.to_string_lossy())))
}

impl Stage {
    /// Open (and lock) the staging folder of `out`. A fresh run refuses an existing run folder
    /// unless `force`, and an interrupted one unless `force` (which discards it); `resume` keeps
    /// both.
    fn open(out: &Path, force: bool, resume: bool) -> Result<Stage> {
        let run = RunDir::new(out);
        if out.exists() && !out.is_dir() {
            return Err(RunError::Refused(format!(
                "{} exists and is not a folder",
                out.display()
            )));
        }
        if out.is_dir() && !run.model().is_file() {
            let empty = std::fs::read_dir(out)
                .map_err(|e| RunError::Os(out.into(), e))?
                .next()
                .is_none();
            if !empty {
                return Err(RunError::Refused(format!(
                    "{} exists and is not an icl run folder; choose another --out",
                    out.display()
                )));
            }
        }
        if run.model().is_file() && !force && !resume {
            return Err(RunError::Refused(format!(
                "{} already holds a run (use --force to replace it, or --resume --steps N to extend it)",
                out.display()
            )));
        }
        let path = staging_path(out)?;
        let parent = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(parent).map_err(|e| RunError::Os(parent.into(), e))?;
        std::fs::create_dir_all(&path).map_err(|e| RunError::Os(path.clone(), e))?;
        let lock_path = path.join(".lock");
        let lock = File::create(&lock_path).map_err(|e| RunError::Os(lock_path.clone(), e))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(RunError::Refused(format!(
                    "another icl process is writing {} (its staging folder {} is locked)",
                    out.display(),
                    path.display()
                )))
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(RunError::Os(lock_path, e)),
        }
        let stage = Stage {
            out: out.to_path_buf(),
            dir: RunDir::new(&path),
            _lock: lock,
        };
        if resume {
            // a process killed while writing left its temporary file (`.NAME.tmp-PID`); we hold
            // the lock, so no writer owns one now, and it must not end up in the run folder
            stage.remove_stale_temporaries()?;
        }
        if !resume && stage.checkpoint().is_file() {
            if !force {
                return Err(RunError::Refused(format!(
                    "{} has an interrupted run (in {}): continue it with `icl train --resume {}` \
                     (icl.resume in Python), or start over with --force",
                    out.display(),
                    path.display(),
                    out.display()
                )));
            }
            stage.clear()?;
        } else if !resume {
            stage.clear()?;
        }
        Ok(stage)
    }

    /// The in-progress checkpoint.
    fn checkpoint(&self) -> PathBuf {
        self.dir.file("checkpoint.safetensors")
    }

    /// Remove the temporary files of killed writers (`.NAME.tmp-PID`, see
    /// [`crate::folder::atomic_write`]) from the staging folder.
    fn remove_stale_temporaries(&self) -> Result<()> {
        let entries =
            std::fs::read_dir(&self.dir.dir).map_err(|e| RunError::Os(self.dir.dir.clone(), e))?;
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') && name.contains(".tmp-") && e.path().is_file() {
                let p = e.path();
                std::fs::remove_file(&p).map_err(|e| RunError::Os(p.clone(), e))?;
            }
        }
        Ok(())
    }

    /// Remove everything but the lock from the staging folder.
    fn clear(&self) -> Result<()> {
        let entries =
            std::fs::read_dir(&self.dir.dir).map_err(|e| RunError::Os(self.dir.dir.clone(), e))?;
        for e in entries.flatten() {
            if e.file_name() == ".lock" {
                continue;
            }
            let p = e.path();
            let r = if p.is_dir() {
                std::fs::remove_dir_all(&p)
            } else {
                std::fs::remove_file(&p)
            };
            r.map_err(|e| RunError::Os(p.clone(), e))?;
        }
        Ok(())
    }

    /// Refuse to start when the file system has clearly less room than the outputs need.
    fn check_space(&self, cfg: &Config) -> Result<()> {
        let spec = icl_core::ModelSpec::from_config(cfg)?;
        let params = spec.n_params() as u64 * 8 * 3;
        // the regular rows, and at most 3 early ones a decade
        let rows = cfg.train.steps / cfg.train.log_every.max(1) + 2 + 40;
        // heads and token width as configured (a bound for every family)
        let (heads, e) = (cfg.model.heads, spec.d + spec.n_out);
        let cols = 2 + 2 * heads as u64 + (spec.d * spec.d) as u64;
        let snaps = cfg
            .train
            .steps
            .checked_div(cfg.train.snapshot_every)
            .map_or(0, |k| (k + 1) * (heads * e * e) as u64 * 16);
        let need = 2 * (params + rows * cols * 40 + snaps) + (1 << 20);
        if let Some(avail) = available_bytes(&self.dir.dir) {
            if avail < need {
                return Err(RunError::Refused(format!(
                    "not enough disk space in {}: the run needs about {}, {} is available",
                    self.dir.dir.display(),
                    icl_core::config::human_bytes(need),
                    icl_core::config::human_bytes(avail)
                )));
            }
        }
        Ok(())
    }

    /// Move the finished folder into place (swapping out a replaced run).
    fn commit(self) -> Result<RunDir> {
        let _ = std::fs::remove_file(self.checkpoint());
        let _ = std::fs::remove_file(self.dir.file(".lock"));
        let out = &self.out;
        let os = |p: &Path, e| RunError::Os(p.to_path_buf(), e);
        if out.is_dir() && std::fs::remove_dir(out).is_err() {
            // a run (or other files) is there: swap it out, then remove it
            let old = staging_path(out)?.with_extension(format!("old-{}", std::process::id()));
            std::fs::rename(out, &old).map_err(|e| os(out, e))?;
            std::fs::rename(&self.dir.dir, out).map_err(|e| os(out, e))?;
            let _ = std::fs::remove_dir_all(&old);
        } else {
            std::fs::rename(&self.dir.dir, out).map_err(|e| os(out, e))?;
        }
        Ok(RunDir::new(out))
    }
}

/// Free bytes for unprivileged writes on the file system of `path`.
fn available_bytes(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid NUL-terminated path and `s` a writable statvfs.
    if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
        return None;
    }
    Some(s.f_bavail as u64 * s.f_frsize as u64)
}

/// A run folder from a PyTorch `state_dict` (see [`crate::torch::import_torch`]): `config.toml`,
/// `model.safetensors` (step 0, no trainer state) and `summary.json`, written like a trained run.
pub fn import(torch: &Path, cfg: &Config, out: &Path, force: bool) -> Result<RunDir> {
    cfg.validate()?;
    let model = crate::torch::import_torch(torch, cfg)?;
    let stage = Stage::open(out, force, false)?;
    stage.dir.write_text("config.toml", &cfg.to_toml())?;
    dispatch!(&model, m => checkpoint::save_model(&stage.dir.model(), m, cfg, 0)?);
    let summary = crate::summary::ImportSummary {
        imported_from: torch.display().to_string(),
        config: config_json(cfg),
    };
    stage.dir.write_text("summary.json", &pretty(&summary))?;
    stage.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An interrupted run's checkpoint keeps its clock and the resumed run's summary adds it up
    /// (`total_seconds`); the run's `model.safetensors` keeps none, so its bytes equal a straight
    /// run's.
    #[test]
    fn a_resumed_run_counts_the_seconds_of_every_session() {
        let base = std::env::temp_dir().join(format!("icl-clock-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let mut cfg = icl_core::presets::preset("quick").unwrap();
        cfg.set("train.steps", "400").unwrap();
        let o = TrainOptions {
            eval_samples: 0,
            engine: Some("scalar".into()),
            ..TrainOptions::default()
        };
        let out = base.join("run");
        let stopped = train(&cfg, &out, &o, &mut |step, _, _| {
            std::thread::sleep(std::time::Duration::from_millis(1));
            step < 150
        })
        .unwrap();
        let Outcome::Interrupted { step, checkpoint } = stopped else {
            panic!("not interrupted: {stopped:?}")
        };
        assert_eq!(step, 150);
        let before = checkpoint::load(&checkpoint).unwrap().seconds.unwrap();
        assert!(
            before >= 0.15,
            "checkpoint clock {before} s after 150 sleeps of 1 ms"
        );
        let Outcome::Finished { dir, summary } =
            resume(&out, None, &o, &mut |_, _, _| true).unwrap()
        else {
            panic!("not finished")
        };
        assert_eq!(summary.resumed_from, Some(150));
        let total = summary.total_seconds.unwrap();
        assert!(
            total >= before + summary.seconds - 1e-9 && total <= before + summary.seconds + 1.0
        );
        assert_eq!(summary.training_seconds(), total);
        let written: Summary =
            serde_json::from_str(&std::fs::read_to_string(dir.summary()).unwrap()).unwrap();
        assert_eq!(written.total_seconds, Some(total));
        assert_eq!(checkpoint::load(&dir.model()).unwrap().seconds, None);
        // the same bytes as a straight run, which has no total (it never resumed)
        let straight = base.join("straight");
        let Outcome::Finished { summary: s, .. } =
            train(&cfg, &straight, &o, &mut |_, _, _| true).unwrap()
        else {
            panic!("not finished")
        };
        assert_eq!((s.total_seconds, s.training_seconds()), (None, s.seconds));
        assert_eq!(
            std::fs::read(dir.model()).unwrap(),
            std::fs::read(straight.join("model.safetensors")).unwrap()
        );
        // a finished run extended with `--resume --steps N`: its model keeps no clock, and its
        // total adds the seconds of its summary (it had resumed_from and no total before)
        let Outcome::Finished { summary: e, .. } =
            resume(&straight, Some(500), &o, &mut |_, _, _| true).unwrap()
        else {
            panic!("not finished")
        };
        assert_eq!(e.resumed_from, Some(400));
        let total = e.total_seconds.expect("an extended run reports its total");
        let parts = s.seconds + e.seconds;
        assert!(
            total >= parts - 1e-9 && total <= parts + 1.0,
            "{total} against {} + {}",
            s.seconds,
            e.seconds
        );
        let _ = std::fs::remove_dir_all(&base);
    }

    /// `metrics.csv` of a run folder: its header and rows of numbers.
    fn metrics(dir: &Path) -> (Vec<String>, Vec<Vec<f64>>) {
        let text = std::fs::read_to_string(dir.join("metrics.csv")).unwrap();
        let mut lines = text.lines();
        let header = lines.next().unwrap().split(',').map(String::from).collect();
        let rows = lines
            .map(|l| l.split(',').map(|x| x.parse().unwrap()).collect())
            .collect();
        (header, rows)
    }

    /// The row events (those with a summary) of a folder's event files, in reading order.
    fn row_events(dir: &Path) -> Vec<crate::tensorboard::Event> {
        let mut evs = crate::tensorboard::read_run(dir).unwrap();
        evs.retain(|e| !e.values.is_empty());
        evs
    }

    /// Equal in f32: the event's value is the f64 rounded to f32, the CSV's the f64 in 9
    /// significant digits.
    fn same_f32(event: f32, csv: f64) -> bool {
        (event.is_nan() && csv.is_nan())
            || (f64::from(event) - csv).abs() <= 1e-6 * csv.abs() + f64::from(f32::MIN_POSITIVE)
    }

    /// The event files of a finished run hold each `metrics.csv` row once, in step order: the
    /// loss as `train/loss`, every probe column as `<group>/<column>`, `train/lr`; returns the
    /// events.
    fn check_events(dir: &Path, lr: f64) -> Vec<crate::tensorboard::Event> {
        let (header, rows) = metrics(dir);
        let evs = row_events(dir);
        let steps: Vec<i64> = evs.iter().map(|e| e.step).collect();
        let want: Vec<i64> = rows.iter().map(|r| r[0] as i64).collect();
        assert_eq!(
            steps,
            want,
            "{}: event steps against metrics.csv",
            dir.display()
        );
        for (e, r) in evs.iter().zip(&rows) {
            assert!(
                same_f32(e.value("train/loss").unwrap(), r[1]),
                "{e:?} {r:?}"
            );
            assert_eq!(e.value("train/lr"), Some(lr as f32));
            for (name, x) in header.iter().zip(r).skip(2) {
                let tagged: Vec<_> = e
                    .values
                    .iter()
                    .filter(|(t, _)| t.rsplit('/').next() == Some(name) && !t.starts_with("train/"))
                    .collect();
                assert_eq!(tagged.len(), 1, "column {name} in {e:?}");
                assert!(same_f32(tagged[0].1, *x), "{name}: {e:?} {r:?}");
            }
            assert_eq!(
                e.values.len(),
                header.len() + e.value("train/steps_per_second").map_or(0, |_| 1)
            );
        }
        evs
    }

    /// Every run writes its `metrics.csv` rows as TensorBoard events, live into its staging
    /// folder; a run killed after writing rows its checkpoint does not hold (and in the middle
    /// of a record) continues the stream from the checkpoint; extending a finished run keeps its
    /// events (bytes and wall times) and adds the new steps; a full-batch run's step-0 row is
    /// there too.
    #[test]
    fn runs_write_tensorboard_events_and_resumes_continue_the_stream() {
        let base = std::env::temp_dir().join(format!("icl-tb-run-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let mut cfg = icl_core::presets::preset("quick").unwrap();
        cfg.set("train.steps", "300").unwrap();
        cfg.set("train.log_every", "10").unwrap();
        let lr = cfg.train.lr;
        let o = TrainOptions {
            eval_samples: 0,
            engine: Some("scalar".into()),
            checkpoint_every: 40,
            checkpoint_seconds: 0.0,
            ..TrainOptions::default()
        };
        // live: at step 155 the staging folder's event file holds the rows so far
        let straight = base.join("straight");
        let staging = staging_path(&straight).unwrap();
        let mut live = None;
        train(&cfg, &straight, &o, &mut |step, _, _| {
            if step == 155 {
                live = Some(
                    row_events(&staging)
                        .iter()
                        .map(|e| e.step)
                        .collect::<Vec<_>>(),
                );
            }
            true
        })
        .unwrap();
        let mut want = vec![1, 2, 5];
        want.extend((1..=15).map(|k| k * 10));
        assert_eq!(live, Some(want));
        let evs = check_events(&straight, lr);
        assert!(evs
            .iter()
            .all(|e| e.value("train/steps_per_second").is_some_and(|x| x > 0.0)));
        let files = crate::tensorboard::event_files(&straight).unwrap();
        assert_eq!(files.len(), 1);
        let name = files[0].file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.starts_with("events.out.tfevents.") && name.ends_with(".icl"),
            "{name}"
        );

        // a kill at step 195: the last checkpoint is at step 160, the events go to step 190
        // and end with half a record
        let killed = base.join("killed");
        let staging = staging_path(&killed).unwrap();
        let snapshot = base.join("snapshot");
        let stopped = train(&cfg, &killed, &o, &mut |step, _, _| {
            if step == 195 {
                std::fs::create_dir_all(&snapshot).unwrap();
                for f in std::fs::read_dir(&staging).unwrap() {
                    let f = f.unwrap().path();
                    std::fs::copy(&f, snapshot.join(f.file_name().unwrap())).unwrap();
                }
            }
            step < 195
        })
        .unwrap();
        assert!(matches!(stopped, Outcome::Interrupted { step: 195, .. }));
        std::fs::remove_dir_all(&staging).unwrap();
        std::fs::rename(&snapshot, &staging).unwrap();
        let ckpt = checkpoint::load(&staging.join("checkpoint.safetensors")).unwrap();
        assert_eq!(ckpt.step, 160);
        let before = crate::tensorboard::event_files(&staging).unwrap();
        assert_eq!(row_events(&staging).last().unwrap().step, 190);
        let torn = std::fs::read(&before[0]).unwrap();
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&before[0])
            .unwrap();
        use std::io::Write;
        f.write_all(&torn[torn.len() - 30..]).unwrap();
        drop(f);
        let Outcome::Finished { .. } = resume(&killed, None, &o, &mut |_, _, _| true).unwrap()
        else {
            panic!("not finished")
        };
        let evs = check_events(&killed, lr);
        let files = crate::tensorboard::event_files(&killed).unwrap();
        assert_eq!(files.len(), 2);
        let first = crate::tensorboard::read_events(&files[0]).unwrap();
        assert_eq!(first.last().unwrap().step, 160);
        assert_eq!(
            first.len(),
            1 + evs.iter().filter(|e| e.step <= 160).count()
        );
        assert_eq!(
            std::fs::read(killed.join("metrics.csv")).unwrap(),
            std::fs::read(straight.join("metrics.csv")).unwrap()
        );

        // extending the finished run to 350 steps keeps its event file as it was
        let kept = std::fs::read(&crate::tensorboard::event_files(&straight).unwrap()[0]).unwrap();
        let Outcome::Finished { .. } =
            resume(&straight, Some(350), &o, &mut |_, _, _| true).unwrap()
        else {
            panic!("not finished")
        };
        let evs = check_events(&straight, lr);
        assert_eq!(evs.last().unwrap().step, 350);
        let files = crate::tensorboard::event_files(&straight).unwrap();
        assert_eq!(files.len(), 2);
        assert_eq!(std::fs::read(&files[0]).unwrap(), kept);

        // full batch on a fixed set: a row at step 0
        let mut fixed = icl_core::presets::preset("zhang2025-fig1").unwrap();
        fixed.set("train.steps", "30").unwrap();
        fixed.set("train.log_every", "10").unwrap();
        fixed.set("task.P", "64").unwrap();
        let full = base.join("full");
        let o = TrainOptions { engine: None, ..o };
        train(&fixed, &full, &o, &mut |_, _, _| true).unwrap();
        let evs = check_events(&full, fixed.train.lr);
        assert_eq!(evs[0].step, 0);
        let _ = std::fs::remove_dir_all(&base);
    }

    /// A resume that is refused writes nothing: no staging folder (`.NAME.partial/.lock`) is
    /// left for a folder with nothing to resume, nor for a finished run asked to shrink, and no
    /// parent folder is created for a missing one.
    #[test]
    fn a_refused_resume_writes_nothing() {
        let base = std::env::temp_dir().join(format!("icl-resume-refused-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).unwrap();
        let o = TrainOptions {
            eval_samples: 0,
            engine: Some("scalar".into()),
            ..TrainOptions::default()
        };
        let names = |d: &Path| -> Vec<String> {
            let mut v: Vec<String> = std::fs::read_dir(d)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            v.sort();
            v
        };
        let missing = base.join("missing");
        assert!(matches!(
            resume(&missing, None, &o, &mut |_, _, _| true),
            Err(RunError::Refused(_))
        ));
        assert!(matches!(
            resume(
                &base.join("no/such/parent/run"),
                None,
                &o,
                &mut |_, _, _| true
            ),
            Err(RunError::Refused(_))
        ));
        assert!(names(&base).is_empty(), "{:?}", names(&base));
        let mut cfg = icl_core::presets::preset("quick").unwrap();
        cfg.set("train.steps", "5").unwrap();
        let out = base.join("run");
        train(&cfg, &out, &o, &mut |_, _, _| true).unwrap();
        assert_eq!(names(&base), ["run"]);
        for steps in [Some(3), Some(5), None] {
            assert!(matches!(
                resume(&out, steps, &o, &mut |_, _, _| true),
                Err(RunError::Refused(_))
            ));
            assert_eq!(names(&base), ["run"], "--steps {steps:?}");
        }
        // an extension that fails before its first checkpoint leaves the finished run alone
        let before = std::fs::read(out.join("model.safetensors")).unwrap();
        let bad = TrainOptions {
            engine: Some("nope".into()),
            ..o.clone()
        };
        assert!(resume(&out, Some(9), &bad, &mut |_, _, _| true).is_err());
        assert_eq!(names(&base), ["run"]);
        assert_eq!(
            std::fs::read(out.join("model.safetensors")).unwrap(),
            before
        );
        // and one that succeeds extends it
        resume(&out, Some(9), &o, &mut |_, _, _| true).unwrap();
        assert_eq!(names(&base), ["run"]);
        let _ = std::fs::remove_dir_all(&base);
    }
}
