//! # icl-io
//!
//! Run folders for icl, shared by the CLI and the C API:
//!
//! * `model.safetensors` — the model's named tensors (see [`icl_core::ModelSpec::tensors`]) in its
//!   dtype, with metadata `format = "icl-checkpoint"`, `version = "1"`, `dtype`, `step` and the
//!   whole run `config` as TOML text.
//! * `config.toml`, `metrics.csv`, `summary.json`, `snapshots.safetensors`.
//!
//! Every write goes to a temporary file in the same folder and is renamed into place, so an
//! interrupted run never leaves a half-written file behind.
use icl_core::config::{Config, Dtype};
use icl_core::model::{Model, ModelSpec};
use icl_core::train::{LogRow, Snapshot};
use icl_core::Scalar;
use safetensors::tensor::{Dtype as StDtype, SafeTensors, TensorView};
use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// What went wrong reading or writing a run folder.
#[derive(Debug)]
pub enum IoError {
    /// A file is missing.
    NotFound(PathBuf),
    /// A file exists but cannot be decoded.
    Corrupt(PathBuf, String),
    /// The operating system refused.
    Os(PathBuf, std::io::Error),
    /// The content decoded but is invalid for the core.
    Core(icl_core::Error),
}

impl fmt::Display for IoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IoError::NotFound(p) => write!(f, "{}: no such file", p.display()),
            IoError::Corrupt(p, m) => write!(f, "{}: corrupt or not an icl file: {m}", p.display()),
            IoError::Os(p, e) => write!(f, "{}: {e}", p.display()),
            IoError::Core(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for IoError {}

impl From<icl_core::Error> for IoError {
    fn from(e: icl_core::Error) -> Self {
        IoError::Core(e)
    }
}

/// Result alias.
pub type Result<T> = std::result::Result<T, IoError>;

/// Write `bytes` to `path` atomically: a temporary sibling file, fsync, then rename.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let res = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = res {
        let _ = std::fs::remove_file(&tmp);
        return Err(IoError::Os(path.to_path_buf(), e));
    }
    Ok(())
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            IoError::NotFound(path.to_path_buf())
        } else {
            IoError::Os(path.to_path_buf(), e)
        }
    })
}

/// A model of either compute precision.
#[derive(Debug, Clone, PartialEq)]
pub enum AnyModel {
    F32(Model<f32>),
    F64(Model<f64>),
}

impl AnyModel {
    /// The spec.
    pub fn spec(&self) -> &ModelSpec {
        match self {
            AnyModel::F32(m) => &m.spec,
            AnyModel::F64(m) => &m.spec,
        }
    }
    /// Parameters widened to f64.
    pub fn params_f64(&self) -> Vec<f64> {
        match self {
            AnyModel::F32(m) => m.params.iter().map(|&x| x as f64).collect(),
            AnyModel::F64(m) => m.params.clone(),
        }
    }
    /// Convert to a model of scalar `T`.
    pub fn to<T: Scalar>(&self) -> Model<T> {
        let spec = self.spec().clone();
        Model {
            spec,
            params: self.params_f64().into_iter().map(T::of).collect(),
        }
    }
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

/// Encode named tensors and metadata as safetensors bytes.
pub fn encode_tensors<T: Scalar>(
    tensors: &[(String, Vec<usize>, &[T])],
    meta: HashMap<String, String>,
) -> Result<Vec<u8>> {
    let bufs: Vec<(String, Vec<usize>, StDtype, Vec<u8>)> = tensors
        .iter()
        .map(|(n, s, v)| {
            let (dt, b) = le_bytes(v);
            (n.clone(), s.clone(), dt, b)
        })
        .collect();
    let views: Vec<(String, TensorView)> = bufs
        .iter()
        .map(|(n, s, dt, b)| {
            Ok((
                n.clone(),
                TensorView::new(*dt, s.clone(), b)
                    .map_err(|e| IoError::Corrupt(PathBuf::new(), e.to_string()))?,
            ))
        })
        .collect::<Result<_>>()?;
    safetensors::serialize(views, &Some(meta))
        .map_err(|e| IoError::Corrupt(PathBuf::new(), e.to_string()))
}

/// Values of a tensor as f64 (F32 or F64 storage).
fn tensor_f64(path: &Path, st: &SafeTensors, name: &str, shape: &[usize]) -> Result<Vec<f64>> {
    let t = st
        .tensor(name)
        .map_err(|_| IoError::Corrupt(path.into(), format!("tensor {name} missing")))?;
    if t.shape() != shape {
        return Err(IoError::Corrupt(
            path.into(),
            format!(
                "tensor {name} has shape {:?}, expected {:?}",
                t.shape(),
                shape
            ),
        ));
    }
    let d = t.data();
    let v: Vec<f64> = match t.dtype() {
        StDtype::F32 => d
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64)
            .collect(),
        StDtype::F64 => d
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
            .collect(),
        other => {
            return Err(IoError::Corrupt(
                path.into(),
                format!("tensor {name} has dtype {other:?}; F32 or F64 expected"),
            ))
        }
    };
    if let Some(i) = v.iter().position(|x| !x.is_finite()) {
        return Err(IoError::Corrupt(
            path.into(),
            format!("tensor {name} has a non-finite value at {i}"),
        ));
    }
    Ok(v)
}

/// Save a model checkpoint with its config in the metadata.
pub fn save_model<T: Scalar>(path: &Path, model: &Model<T>, cfg: &Config, step: u64) -> Result<()> {
    let tensors: Vec<(String, Vec<usize>, &[T])> = model
        .spec
        .tensors()
        .into_iter()
        .map(|t| {
            (
                t.name.to_string(),
                t.shape.clone(),
                &model.params[t.offset..t.offset + t.len()],
            )
        })
        .collect();
    let mut meta = HashMap::new();
    meta.insert("format".into(), "icl-checkpoint".into());
    meta.insert("version".into(), "1".into());
    meta.insert("dtype".into(), T::NAME.into());
    meta.insert("step".into(), step.to_string());
    meta.insert("config".into(), cfg.to_toml());
    atomic_write(path, &encode_tensors(&tensors, meta)?)
}

/// Load a checkpoint: its config, its model (in its stored precision) and its step.
pub fn load_model(path: &Path) -> Result<(Config, AnyModel, u64)> {
    let bytes = read(path)?;
    let corrupt = |m: String| IoError::Corrupt(path.into(), m);
    let (_, meta) = SafeTensors::read_metadata(&bytes).map_err(|e| corrupt(e.to_string()))?;
    let meta = meta
        .metadata()
        .clone()
        .ok_or_else(|| corrupt("no metadata".into()))?;
    if meta.get("format").map(String::as_str) != Some("icl-checkpoint") {
        return Err(corrupt("metadata format is not icl-checkpoint".into()));
    }
    let cfg = Config::from_toml(
        meta.get("config")
            .ok_or_else(|| corrupt("no config in metadata".into()))?,
    )?;
    let step = meta.get("step").and_then(|s| s.parse().ok()).unwrap_or(0);
    let st = SafeTensors::deserialize(&bytes).map_err(|e| corrupt(e.to_string()))?;
    let spec = ModelSpec::from_config(&cfg)?;
    let mut params = Vec::with_capacity(spec.n_params());
    for t in spec.tensors() {
        params.extend(tensor_f64(path, &st, t.name, &t.shape)?);
    }
    let model = match meta.get("dtype").map(String::as_str) {
        Some("f64") => AnyModel::F64(Model::from_params(spec, params)?),
        _ => AnyModel::F32(Model::from_params(
            spec,
            params.into_iter().map(|x| x as f32).collect(),
        )?),
    };
    Ok((cfg, model, step))
}

/// Import a PyTorch `state_dict` saved as safetensors in the reference code's layout
/// (`q_proj.weight` [H(d+1), d+1], `k_proj.weight`, `v_proj.weight`, `o_proj.weight` [n_out, H(d+1)]).
/// The config must describe a full-parametrisation model of the same shape.
pub fn import_torch(path: &Path, cfg: &Config) -> Result<AnyModel> {
    let bytes = read(path)?;
    let st = SafeTensors::deserialize(&bytes)
        .map_err(|e| IoError::Corrupt(path.into(), e.to_string()))?;
    let spec = ModelSpec::from_config(cfg)?;
    if spec.param != icl_core::config::Param::Full {
        return Err(IoError::Core(icl_core::Error::Unsupported(
            "torch import needs model.param = full".into(),
        )));
    }
    let mut params = Vec::with_capacity(spec.n_params());
    for t in spec.tensors() {
        params.extend(tensor_f64(path, &st, t.name, &t.shape)?);
    }
    Ok(match cfg.train.dtype {
        Dtype::F64 => AnyModel::F64(Model::from_params(spec, params)?),
        Dtype::F32 => AnyModel::F32(Model::from_params(
            spec,
            params.into_iter().map(|x| x as f32).collect(),
        )?),
    })
}

/// Read a run folder's `config.toml`.
pub fn load_config(path: &Path) -> Result<Config> {
    let bytes = read(path)?;
    let text =
        String::from_utf8(bytes).map_err(|_| IoError::Corrupt(path.into(), "not UTF-8".into()))?;
    Ok(Config::from_toml(&text)?)
}

/// `metrics.csv`: `step,loss,omega_0..omega_{H-1},mu_0..mu_{H-1}`.
pub fn metrics_csv(log: &[LogRow]) -> String {
    let h = log.first().map(|r| r.omega.len()).unwrap_or(0);
    let mut s = String::from("step,loss");
    for i in 0..h {
        s.push_str(&format!(",omega_{i}"));
    }
    for i in 0..h {
        s.push_str(&format!(",mu_{i}"));
    }
    s.push('\n');
    for r in log {
        s.push_str(&format!("{},{:.8e}", r.step, r.loss));
        for x in r.omega.iter().chain(&r.mu) {
            s.push_str(&format!(",{x:.8e}"));
        }
        s.push('\n');
    }
    s
}

/// `snapshots.safetensors`: one tensor `kq.step_<N>` [H, E, E] (f64) per snapshot.
pub fn save_snapshots(path: &Path, snaps: &[Snapshot], heads: usize, e: usize) -> Result<()> {
    let tensors: Vec<(String, Vec<usize>, &[f64])> = snaps
        .iter()
        .map(|s| {
            (
                format!("kq.step_{:09}", s.step),
                vec![heads, e, e],
                s.kq.as_slice(),
            )
        })
        .collect();
    let mut meta = HashMap::new();
    meta.insert("format".into(), "icl-snapshots".into());
    atomic_write(path, &encode_tensors(&tensors, meta)?)
}

/// The standard file names of a run folder.
pub struct RunDir {
    pub dir: PathBuf,
}

impl RunDir {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        RunDir { dir: dir.into() }
    }
    pub fn config(&self) -> PathBuf {
        self.dir.join("config.toml")
    }
    pub fn model(&self) -> PathBuf {
        self.dir.join("model.safetensors")
    }
    pub fn metrics(&self) -> PathBuf {
        self.dir.join("metrics.csv")
    }
    pub fn summary(&self) -> PathBuf {
        self.dir.join("summary.json")
    }
    pub fn snapshots(&self) -> PathBuf {
        self.dir.join("snapshots.safetensors")
    }
    pub fn circuits_svg(&self) -> PathBuf {
        self.dir.join("circuits.svg")
    }
    /// Create the folder (and parents).
    pub fn create(&self) -> Result<()> {
        std::fs::create_dir_all(&self.dir).map_err(|e| IoError::Os(self.dir.clone(), e))
    }
    /// Load the model of this run folder; its config comes from the checkpoint metadata.
    pub fn load(&self) -> Result<(Config, AnyModel, u64)> {
        if !self.dir.is_dir() {
            return Err(IoError::NotFound(self.dir.clone()));
        }
        load_model(&self.model())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoint_round_trip_and_corruption() {
        let dir = std::env::temp_dir().join(format!("icl-io-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut cfg = icl_core::presets::preset("he2025").unwrap();
        cfg.set("model.heads", "3").unwrap();
        let m = Model::<f32>::init(&cfg).unwrap();
        let p = dir.join("m.safetensors");
        save_model(&p, &m, &cfg, 7).unwrap();
        let (c2, m2, step) = load_model(&p).unwrap();
        assert_eq!(c2, cfg);
        assert_eq!(step, 7);
        assert_eq!(m2, AnyModel::F32(m.clone()));
        // truncated file
        let bytes = std::fs::read(&p).unwrap();
        std::fs::write(&p, &bytes[..bytes.len() / 2]).unwrap();
        assert!(matches!(load_model(&p), Err(IoError::Corrupt(..))));
        assert!(matches!(
            load_model(&dir.join("missing")),
            Err(IoError::NotFound(_))
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
