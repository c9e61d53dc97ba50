//! Checkpoints in safetensors:
//!
//! * `model.safetensors`: the model's named tensors ([`icl_core::ModelSpec::tensors`]) in its
//!   dtype, with metadata `format = "icl-checkpoint"`, `version = "1"`, `dtype`, `step` and the run
//!   `config` as TOML text; optionally the trainer's state for resuming (tensors `train.*`, see
//!   [`save`]).
//! * `snapshots.safetensors`: KQ snapshots, one tensor `kq.step_<N>` [H, E, E] (f64) each.
//!
//! Writing is deterministic (the header's keys are sorted, so the same run gives the same bytes)
//! and atomic. Reading is strict: an unknown format or version, a dtype that disagrees with the
//! tensors, a missing, extra, misshapen or non-finite tensor, an unparsable step, or a config
//! whose sizes would not fit in memory are errors, checked before anything large is allocated.
use crate::any::{AnyModel, Either};
use crate::error::{Result, RunError};
use crate::folder::{atomic_write, read_safetensors};
use icl_core::checkpoint::{decode_model, File};
use icl_core::config::Config;
use icl_core::families::iv::IvSpec;
use icl_core::model::{Model, ModelSpec, Net};
use icl_core::optim::Optimizer;
use icl_core::train::{LogRow, Snapshot, TrainState};
use icl_core::Scalar;
use safetensors::tensor::{Dtype as StDtype, TensorView};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// The checkpoint format version this build reads and writes.
pub const VERSION: &str = icl_core::checkpoint::VERSION;

fn corrupt(path: &Path, m: impl Into<String>) -> RunError {
    RunError::Corrupt(path.to_path_buf(), m.into())
}

fn le_bytes<T: Scalar>(xs: &[T]) -> (StDtype, Vec<u8>) {
    if T::NAME == "f32" {
        (
            StDtype::F32,
            xs.iter()
                .flat_map(|x| (x.to_f64() as f32).to_le_bytes())
                .collect(),
        )
    } else {
        (
            StDtype::F64,
            xs.iter().flat_map(|x| x.to_f64().to_le_bytes()).collect(),
        )
    }
}

/// One tensor to write: name, shape, dtype and little-endian bytes.
pub struct Raw {
    pub name: String,
    pub shape: Vec<usize>,
    pub dtype: StDtype,
    pub bytes: Vec<u8>,
}

impl Raw {
    /// A tensor of scalars `T` (stored as F32 or F64).
    pub fn new<T: Scalar>(name: impl Into<String>, shape: Vec<usize>, xs: &[T]) -> Raw {
        let (dtype, bytes) = le_bytes(xs);
        Raw {
            name: name.into(),
            shape,
            dtype,
            bytes,
        }
    }
}

/// Encode tensors and metadata as safetensors bytes with a sorted header (deterministic).
pub fn encode(tensors: &[Raw], meta: &BTreeMap<String, String>) -> Result<Vec<u8>> {
    let views: Vec<(String, TensorView)> = tensors
        .iter()
        .map(|t| {
            TensorView::new(t.dtype, t.shape.clone(), &t.bytes)
                .map(|v| (t.name.clone(), v))
                .map_err(|e| corrupt(Path::new(&t.name), e.to_string()))
        })
        .collect::<Result<_>>()?;
    let meta: HashMap<String, String> = meta.clone().into_iter().collect();
    let mut bytes = safetensors::serialize(views, &Some(meta))
        .map_err(|e| corrupt(Path::new("safetensors"), e.to_string()))?;
    // re-write the JSON header with sorted keys: the metadata map's order is random
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap_or([0; 8])) as usize;
    let header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + n])
        .map_err(|e| corrupt(Path::new("safetensors"), e.to_string()))?;
    let mut h = serde_json::to_vec(&sorted(header))
        .map_err(|e| corrupt(Path::new("safetensors"), e.to_string()))?;
    while h.len() % 8 != 0 {
        h.push(b' ');
    }
    // in place (the data is not copied again: a checkpoint is the largest thing icl writes)
    let mut head = (h.len() as u64).to_le_bytes().to_vec();
    head.extend(h);
    bytes.splice(..8 + n, head);
    Ok(bytes)
}

/// A JSON value with every object's keys in sorted order.
fn sorted(v: serde_json::Value) -> serde_json::Value {
    match v {
        serde_json::Value::Object(m) => {
            let b: BTreeMap<String, serde_json::Value> =
                m.into_iter().map(|(k, v)| (k, sorted(v))).collect();
            serde_json::Value::Object(b.into_iter().collect())
        }
        other => other,
    }
}

/// A core checkpoint error as this layer's (damaged files are [`RunError::Corrupt`]).
pub(crate) fn from_core(path: &Path, e: icl_core::Error) -> RunError {
    match e {
        icl_core::Error::Checkpoint(m) => corrupt(path, m),
        other => RunError::Core(other),
    }
}

/// A metadata value parsed as a number.
fn number<N: std::str::FromStr>(path: &Path, f: &File, key: &str) -> Result<N> {
    f.meta_number(key).map_err(|e| from_core(path, e))
}

/// Values of a tensor as f64 (F32 or F64 storage), checked for shape and finiteness.
pub(crate) fn tensor_f64(path: &Path, f: &File, name: &str, shape: &[usize]) -> Result<Vec<f64>> {
    f.tensor_required(name)
        .and_then(|t| t.to_f64(shape))
        .map_err(|e| from_core(path, e))
}

/// What a checkpoint holds.
pub struct Loaded {
    pub config: Config,
    pub model: AnyModel,
    pub step: u64,
    /// The trainer's state, when the checkpoint has one (a run that can be resumed or extended).
    pub state: Option<Either<TrainState<f32>, TrainState<f64>>>,
    /// Seconds of training up to this checkpoint, over every session of the run (`train.seconds`,
    /// kept in an interrupted run's staging checkpoint only; `None` in a run's
    /// `model.safetensors`, whose bytes depend on the seed alone, in checkpoints of the C/C++
    /// trainer and of older icl).
    pub seconds: Option<f64>,
}

fn model_tensors<T: Scalar>(model: &Model<T>) -> Vec<Raw> {
    model
        .spec
        .tensors()
        .into_iter()
        .map(|t| {
            Raw::new(
                t.name,
                t.shape.clone(),
                &model.params[t.offset..t.offset + t.len()],
            )
        })
        .collect()
}

fn base_meta(cfg: &Config, dtype: &str, step: u64) -> BTreeMap<String, String> {
    let mut meta = BTreeMap::new();
    meta.insert("format".into(), "icl-checkpoint".into());
    meta.insert("version".into(), VERSION.into());
    meta.insert("dtype".into(), dtype.into());
    meta.insert("step".into(), step.to_string());
    meta.insert("config".into(), cfg.to_toml());
    meta
}

/// Save a model with its config (no trainer state).
pub fn save_model<T: Scalar>(path: &Path, model: &Model<T>, cfg: &Config, step: u64) -> Result<()> {
    let meta = base_meta(cfg, T::NAME, step);
    atomic_write(path, &encode(&model_tensors(model), &meta)?)
}

/// Save a model with the trainer state that continues it: the optimiser buffers
/// (`train.opt.<name>`, the model's dtype), the log (`train.log` [rows, 2 + columns] f64: step,
/// loss, values; its early rows `train.early` alike, where there are any), the snapshots (`train.snapshots` [n, 1 + H E E] f64: step, KQ), each probe's
/// state (`train.probe.<i>` f64), and metadata `train.opt_counter`, `train.window_sum`,
/// `train.window_count`, `train.columns`, `train.probes`, and `train.seconds` (training seconds
/// so far, over every session) when `seconds` is given.
pub fn save<T: Scalar>(
    path: &Path,
    cfg: &Config,
    state: &TrainState<T>,
    model: &Model<T>,
    columns: &[String],
    seconds: Option<f64>,
) -> Result<()> {
    let mut tensors = model_tensors(model);
    let mut meta = base_meta(cfg, T::NAME, state.step);
    if let Some(s) = seconds.filter(|s| s.is_finite() && *s >= 0.0) {
        meta.insert("train.seconds".into(), format!("{s:?}"));
    }
    let n = model.params.len();
    for (name, buf) in state.opt.state() {
        tensors.push(Raw::new(format!("train.opt.{name}"), vec![n], buf));
    }
    let width = 2 + columns.len();
    let rows = |rows: &[LogRow]| -> Result<Vec<f64>> {
        let mut flat = Vec::with_capacity(rows.len() * width);
        for r in rows {
            if r.values.len() != columns.len() {
                return Err(RunError::Refused(
                    "log rows do not match the columns".into(),
                ));
            }
            flat.push(r.step as f64);
            flat.push(r.loss);
            flat.extend(&r.values);
        }
        Ok(flat)
    };
    let log = rows(&state.log)?;
    tensors.push(Raw::new("train.log", vec![state.log.len(), width], &log));
    // only where there are early rows: a run without them keeps the bytes of older versions
    if !state.early.is_empty() {
        let early = rows(&state.early)?;
        tensors.push(Raw::new(
            "train.early",
            vec![state.early.len(), width],
            &early,
        ));
    }
    let kq = state.snapshots.first().map(|s| s.kq.len()).unwrap_or(0);
    let mut snaps = Vec::with_capacity(state.snapshots.len() * (1 + kq));
    for s in &state.snapshots {
        snaps.push(s.step as f64);
        snaps.extend(&s.kq);
    }
    tensors.push(Raw::new(
        "train.snapshots",
        vec![state.snapshots.len(), 1 + kq],
        &snaps,
    ));
    for (i, p) in state.probes.iter().enumerate() {
        tensors.push(Raw::new(format!("train.probe.{i}"), vec![p.len()], p));
    }
    meta.insert("train.opt_counter".into(), state.opt.counter().to_string());
    meta.insert("train.window_sum".into(), format!("{:?}", state.window.0));
    meta.insert("train.window_count".into(), state.window.1.to_string());
    meta.insert("train.columns".into(), columns.join(","));
    meta.insert("train.probes".into(), state.probes.len().to_string());
    atomic_write(path, &encode(&tensors, &meta)?)
}

/// Load a checkpoint: config, model (in its stored precision), step, and the trainer state if
/// present.
pub fn load(path: &Path) -> Result<Loaded> {
    decode(path, &read_safetensors(path)?)
}

/// [`load`] from bytes in memory (`path` names them in messages). The file and the model are read
/// by the core's `no_std` reader ([`icl_core::checkpoint`], the one firmware uses); this layer adds
/// the trainer's state.
pub fn decode(path: &Path, bytes: &[u8]) -> Result<Loaded> {
    let f = File::parse(bytes).map_err(|e| from_core(path, e))?;
    let m = decode_model(&f).map_err(|e| from_core(path, e))?;
    let mut known: Vec<String> = m.names.iter().map(|n| n.to_string()).collect();
    let (config, step) = (m.config, m.step);
    let model = AnyModel::from_f64(m.spec, m.params, m.dtype)?;
    let state = if f.meta("train.opt_counter").is_some() {
        Some(match &model {
            Either::F32(m) => Either::F32(load_state(path, &f, &config, m, step, &mut known)?),
            Either::F64(m) => Either::F64(load_state(path, &f, &config, m, step, &mut known)?),
        })
    } else {
        None
    };
    if let Some(extra) = f.tensors.iter().find(|t| !known.contains(&t.name)) {
        return Err(corrupt(path, format!("unexpected tensor {}", extra.name)));
    }
    // optional: a missing or unreadable clock only loses the run's total time, never the run
    let seconds = f
        .meta("train.seconds")
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0);
    Ok(Loaded {
        config,
        model,
        step,
        state,
        seconds,
    })
}

fn load_state<T: Scalar>(
    path: &Path,
    f: &File,
    cfg: &Config,
    model: &Model<T>,
    step: u64,
    known: &mut Vec<String>,
) -> Result<TrainState<T>> {
    let n = model.params.len();
    let names: Vec<&str> = Optimizer::<T>::new(&cfg.train, 0)
        .state()
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    let mut bufs = Vec::new();
    for name in names {
        let full = format!("train.opt.{name}");
        bufs.push(
            tensor_f64(path, f, &full, &[n])?
                .into_iter()
                .map(T::of)
                .collect::<Vec<T>>(),
        );
        known.push(full);
    }
    let refs: Vec<&[T]> = bufs.iter().map(|b| b.as_slice()).collect();
    let counter: u64 = number(path, f, "train.opt_counter")?;
    // every optimiser update is a step, so the optimiser cannot have counted more than the steps
    if counter > step {
        return Err(corrupt(
            path,
            format!("metadata train.opt_counter = {counter} is more than the step, {step}"),
        ));
    }
    let opt = Optimizer::restore(&cfg.train, n, counter, &refs)?;
    let columns = f
        .meta_required("train.columns")
        .map_err(|e| from_core(path, e))?;
    let ncols = if columns.is_empty() {
        0
    } else {
        columns.split(',').count()
    };
    let shape_of = |name: &str| -> Result<Vec<usize>> {
        Ok(f.tensor_required(name)
            .map_err(|e| from_core(path, e))?
            .shape
            .clone())
    };
    let ls = shape_of("train.log")?;
    if ls.len() != 2 || ls[1] != 2 + ncols {
        return Err(corrupt(path, format!("train.log has shape {ls:?}")));
    }
    let to_rows = |flat: Vec<f64>| -> Vec<LogRow> {
        flat.chunks_exact(2 + ncols)
            .map(|r| LogRow {
                step: r[0] as u64,
                loss: r[1],
                values: r[2..].to_vec(),
            })
            .collect()
    };
    let log = to_rows(tensor_f64(path, f, "train.log", &ls)?);
    known.push("train.log".into());
    // the early rows (absent: none, as in a checkpoint of an older version)
    let early = match f.tensor("train.early") {
        None => Vec::new(),
        Some(t) => {
            let es = t.shape.clone();
            if es.len() != 2 || es[1] != 2 + ncols {
                return Err(corrupt(path, format!("train.early has shape {es:?}")));
            }
            let early = to_rows(tensor_f64(path, f, "train.early", &es)?);
            if let Some(r) = early.iter().find(|r| r.step > step) {
                return Err(corrupt(
                    path,
                    format!("train.early has a row of step {}, past step {step}", r.step),
                ));
            }
            known.push("train.early".into());
            early
        }
    };
    let ss = shape_of("train.snapshots")?;
    if ss.len() != 2 || ss[1] < 1 {
        return Err(corrupt(path, format!("train.snapshots has shape {ss:?}")));
    }
    let (heads, e) = snapshot_shape(&model.spec);
    if ss[0] > 0 && ss[1] != 1 + heads * e * e {
        return Err(corrupt(
            path,
            format!(
                "train.snapshots has shape {ss:?}; rows of 1 + {heads} x {e} x {e} values (step, KQ) expected"
            ),
        ));
    }
    let flat = tensor_f64(path, f, "train.snapshots", &ss)?;
    let snapshots = flat
        .chunks_exact(ss[1])
        .map(|r| Snapshot {
            step: r[0] as u64,
            kq: r[1..].to_vec(),
        })
        .collect();
    known.push("train.snapshots".into());
    let nprobes: usize = number(path, f, "train.probes")?;
    let mut probes = Vec::with_capacity(nprobes.min(64));
    for i in 0..nprobes {
        let name = format!("train.probe.{i}");
        let s = shape_of(&name)?;
        probes.push(tensor_f64(path, f, &name, &s)?);
        known.push(name);
    }
    // the window holds the losses of the steps since the last row: a finite sum of at most that
    // many steps (a larger count would give a wrong mean loss in the next row)
    let window_sum: f64 = number(path, f, "train.window_sum")?;
    let window_count: u64 = number(path, f, "train.window_count")?;
    if !window_sum.is_finite() {
        return Err(corrupt(
            path,
            format!("metadata train.window_sum = {window_sum} is not finite"),
        ));
    }
    let since_row = log.last().map_or(step, |r| step.saturating_sub(r.step));
    if window_count > since_row {
        return Err(corrupt(
            path,
            format!(
                "metadata train.window_count = {window_count} is more than the {since_row} steps since the last log row"
            ),
        ));
    }
    Ok(TrainState {
        step,
        params: model.params.clone(),
        opt,
        log,
        early,
        snapshots,
        window: (window_sum, window_count),
        probes,
    })
}

/// The shape (matrices, width) of one KQ snapshot of a model of `spec`: [H, E, E] for one-layer
/// attention; Phi of every parameter set and head, [sets H, D, D], for transformers (of stage 2
/// for the IV model).
pub fn snapshot_shape(spec: &ModelSpec) -> (usize, usize) {
    match &spec.net {
        Net::Stack(s) | Net::Iv(IvSpec { st2: s, .. }) => (s.sets() * s.heads, s.e),
        Net::Attention(s) => (s.heads, s.e()),
        Net::Gpt2(_) => (0, 0),
    }
}

/// Write `snapshots.safetensors`: one tensor `kq.step_<N>` [H, E, E] (f64) per snapshot.
pub fn save_snapshots(path: &Path, snaps: &[Snapshot], heads: usize, e: usize) -> Result<()> {
    let tensors: Vec<Raw> = snaps
        .iter()
        .map(|s| Raw::new(format!("kq.step_{:09}", s.step), vec![heads, e, e], &s.kq))
        .collect();
    let mut meta = BTreeMap::new();
    meta.insert("format".into(), "icl-snapshots".into());
    atomic_write(path, &encode(&tensors, &meta)?)
}

/// Read a config file.
pub fn load_config(path: &Path) -> Result<Config> {
    Ok(Config::from_toml(&crate::folder::read_text(path)?)?)
}

/// A path that names no file (for messages about in-memory data).
pub fn nowhere() -> PathBuf {
    PathBuf::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("icl-core-run-ckpt-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn round_trip_determinism_and_corruption() {
        let dir = tmp("rt");
        let mut cfg = icl_core::presets::preset("he2025").unwrap();
        cfg.set("model.heads", "3").unwrap();
        let m = Model::<f32>::init(&cfg).unwrap();
        let p = dir.join("m.safetensors");
        save_model(&p, &m, &cfg, 7).unwrap();
        let first = std::fs::read(&p).unwrap();
        save_model(&p, &m, &cfg, 7).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), first, "same model, same bytes");
        let l = load(&p).unwrap();
        assert_eq!(l.config, cfg);
        assert_eq!(l.step, 7);
        assert_eq!(l.model, Either::F32(m.clone()));
        assert!(l.state.is_none());
        std::fs::write(&p, &first[..first.len() / 2]).unwrap();
        assert!(matches!(load(&p), Err(RunError::Corrupt(..))));
        assert!(matches!(
            load(&dir.join("missing")),
            Err(RunError::NotFound(_))
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Rewrite one metadata entry of a checkpoint.
    fn with_meta(cfg: &Config, m: &Model<f32>, key: &str, value: &str) -> Vec<u8> {
        let mut meta = base_meta(cfg, "f32", 3);
        meta.insert(key.into(), value.into());
        encode(&model_tensors(m), &meta).unwrap()
    }

    #[test]
    fn strict_metadata() {
        let dir = tmp("strict");
        let cfg = icl_core::presets::preset("quick").unwrap();
        let m = Model::<f32>::init(&cfg).unwrap();
        let p = dir.join("m.safetensors");
        for (k, v) in [
            ("version", "99"),
            ("dtype", "f64"),
            ("dtype", "f16"),
            ("step", "minus one"),
            ("format", "other"),
        ] {
            std::fs::write(&p, with_meta(&cfg, &m, k, v)).unwrap();
            match load(&p) {
                Err(RunError::Corrupt(_, msg)) => assert!(
                    msg.contains(k) || msg.contains("version") || msg.contains("dtype"),
                    "{k}: {msg}"
                ),
                Err(e) => panic!("{k} = {v}: {e}"),
                Ok(_) => panic!("{k} = {v} accepted"),
            }
        }
        // an extra tensor
        let mut t = model_tensors(&m);
        t.push(Raw::new("extra", vec![1], &[1.0f32]));
        std::fs::write(&p, encode(&t, &base_meta(&cfg, "f32", 0)).unwrap()).unwrap();
        assert!(matches!(load(&p), Err(RunError::Corrupt(_, m)) if m.contains("extra")));
        // a config whose sizes would not fit in memory is refused before any allocation
        let mut big = cfg.clone();
        big.task.d = 4096;
        big.model.heads = 1024;
        std::fs::write(&p, with_meta(&big, &m, "step", "1")).unwrap();
        assert!(load(&p).is_err());
        // the config's precision disagrees with the metadata's (and the tensors')
        let mut f64_cfg = cfg.clone();
        f64_cfg.set("train.dtype", "f64").unwrap();
        std::fs::write(&p, with_meta(&f64_cfg, &m, "step", "1")).unwrap();
        assert!(
            matches!(load(&p), Err(RunError::Corrupt(_, m)) if m.contains("train.dtype = f64"))
        );
        // a step the log cannot hold, or that would wrap
        for step in ["9007199254740993", "18446744073709551615"] {
            std::fs::write(&p, with_meta(&cfg, &m, "step", step)).unwrap();
            assert!(
                matches!(load(&p), Err(RunError::Corrupt(_, m)) if m.contains("2^53")),
                "{step}"
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Trainer state that could be misread is refused: a loss window that is not finite or
    /// longer than the steps since the last row, an optimiser that counted more updates than
    /// steps, snapshots of another width.
    #[test]
    fn strict_trainer_state() {
        let dir = tmp("state");
        let mut cfg = icl_core::presets::preset("quick").unwrap();
        cfg.set("train.batch", "4").unwrap();
        cfg.set("train.log_every", "2").unwrap();
        cfg.set("train.snapshot_every", "2").unwrap();
        let mut t = icl_core::train::Trainer::<f32>::new(&cfg, &icl_core::ScalarEngine).unwrap();
        for _ in 0..3 {
            t.step().unwrap();
        }
        let cols: Vec<String> = t.columns().iter().map(|c| c.name.clone()).collect();
        let p = dir.join("t.safetensors");
        let good = t.state();
        assert_eq!(
            (good.window.1, good.log.last().map(|r| r.step)),
            (1, Some(2))
        );
        save(&p, &cfg, &good, &t.model, &cols, None).unwrap();
        assert!(
            load(&p).unwrap().state.is_some(),
            "the state as written loads"
        );
        let mut bad = Vec::new();
        let mut s = good.clone();
        s.window.0 = f64::NAN;
        bad.push((s, "window_sum"));
        let mut s = good.clone();
        s.window.1 = 2; // one step since the row of step 2
        bad.push((s, "window_count"));
        let mut s = good.clone();
        s.window.1 = u64::MAX;
        bad.push((s, "window_count"));
        let mut s = good.clone();
        s.step = 2; // Adam counted 3 updates
        s.window.1 = 0;
        bad.push((s, "opt_counter"));
        let mut s = good.clone();
        s.snapshots[0].kq.pop();
        s.snapshots[1].kq.pop();
        bad.push((s, "train.snapshots"));
        for (state, what) in bad {
            save(&p, &cfg, &state, &t.model, &cols, None).unwrap();
            match load(&p) {
                Err(RunError::Corrupt(_, m)) => assert!(m.contains(what), "{what}: {m}"),
                Err(e) => panic!("{what}: {e}"),
                Ok(_) => panic!("{what}: accepted"),
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
