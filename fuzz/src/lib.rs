//! Helpers shared by the fuzz targets: small configurations of every preset, valid checkpoints to
//! damage, and edits of a safetensors file (metadata, config keys, tensor names, shapes, dtypes
//! and bytes) re-encoded as a well-formed file, so the fuzzer reaches the checks behind the
//! safetensors parser as well as the parser itself.
use arbitrary::Arbitrary;
use icl_core::checkpoint::{File, StDtype};
use icl_core::config::Config;
use icl_core::presets::PRESETS;
use icl_core_run::checkpoint::{encode, Raw};
use safetensors::tensor::Dtype;
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// Working memory the harness lets a configuration ask for (the library's own budget, 16 GiB, is
/// above what a fuzzer process may use; inputs above this are skipped, not errors).
pub const HARNESS_BYTES: u64 = 64 << 20;

/// A preset reduced to a size that runs in milliseconds: L <= 8, batch <= 4, P <= 16, 2 steps.
pub fn small(name: &str) -> Option<Config> {
    let mut c = icl_core::presets::preset(name).ok()?;
    for (k, v) in [
        ("task.L", "8"),
        ("train.batch", "4"),
        ("train.steps", "2"),
        ("train.log_every", "1"),
        ("train.snapshot_every", "1"),
    ] {
        let _ = c.set(k, v);
    }
    if c.task.p > 0 {
        let _ = c.set("task.P", "16");
    }
    if c.model.arch == icl_core::config::Arch::Gpt2 {
        // Garg et al.'s GPT-2 at a harness size: d = 3, 2 layers, n_embd 8, positions for L = 8
        for (k, v) in [
            ("task.d", "3"),
            ("model.layers", "2"),
            ("model.embd", "8"),
            ("model.heads", "2"),
            ("model.positions", "9"),
        ] {
            let _ = c.set(k, v);
        }
    }
    c.validate().ok()?;
    Some(c)
}

/// The i-th preset reduced by [`small`] (the `quick` preset where a preset does not reduce).
pub fn small_preset(i: u8) -> Config {
    let (name, _, _) = PRESETS[i as usize % PRESETS.len()];
    small(name).unwrap_or_else(|| small("quick").expect("quick reduces"))
}

/// True when a config is small enough for the harness to build and run.
pub fn harness_sized(c: &Config) -> bool {
    c.memory_estimate().is_some_and(|(b, _)| b <= HARNESS_BYTES)
}

fn trained<T: icl_core::Scalar>(cfg: &Config, path: &std::path::Path) -> Option<Vec<u8>> {
    let mut tr = icl_core::train::Trainer::<T>::new(cfg, &icl_core::ScalarEngine).ok()?;
    for _ in 0..2 {
        tr.step().ok()?;
    }
    let cols: Vec<String> = tr.columns().iter().map(|c| c.name.clone()).collect();
    icl_core_run::checkpoint::save(path, cfg, &tr.state(), &tr.model, &cols, None).ok()?;
    std::fs::read(path).ok()
}

/// Valid checkpoints (trainer state included, 2 steps) of every preset reduced by [`small`], in
/// f32 and f64, and model-only checkpoints of the same models. Built once per process.
pub fn checkpoints() -> &'static [Vec<u8>] {
    static ALL: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    ALL.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("icl-fuzz-base-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join("m.safetensors");
        let mut out = Vec::new();
        for (name, _, _) in PRESETS {
            let Some(mut c) = small(name) else { continue };
            for dtype in ["f32", "f64"] {
                if c.set("train.dtype", dtype).is_err() {
                    continue;
                }
                let b = if dtype == "f32" {
                    trained::<f32>(&c, &path)
                } else {
                    trained::<f64>(&c, &path)
                };
                out.extend(b);
                if let Ok(m) = icl_core::Model::<f32>::init(&c) {
                    if icl_core_run::checkpoint::save_model(&path, &m, &c, 3).is_ok() {
                        out.extend(std::fs::read(&path).ok());
                    }
                }
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
        assert!(!out.is_empty(), "no base checkpoint");
        out
    })
}

/// The tensors and metadata of a valid safetensors file (sorted metadata).
pub fn split(bytes: &[u8]) -> (Vec<Raw>, BTreeMap<String, String>) {
    let f = File::parse(bytes).expect("a base file parses");
    let tensors = f
        .tensors
        .iter()
        .map(|t| Raw {
            name: t.name.clone(),
            shape: t.shape.clone(),
            dtype: st_dtype(t.dtype),
            bytes: t.data.to_vec(),
        })
        .collect();
    (tensors, f.metadata.into_iter().collect())
}

fn st_dtype(d: StDtype) -> Dtype {
    match d.name() {
        "F32" => Dtype::F32,
        "F64" => Dtype::F64,
        "F16" => Dtype::F16,
        "BF16" => Dtype::BF16,
        "I64" => Dtype::I64,
        "I32" => Dtype::I32,
        "U8" => Dtype::U8,
        _ => Dtype::BOOL,
    }
}

/// Metadata keys an icl checkpoint has (edits pick among them or use any text).
pub const META_KEYS: &[&str] = &[
    "format",
    "version",
    "dtype",
    "step",
    "config",
    "train.opt_counter",
    "train.window_sum",
    "train.window_count",
    "train.columns",
    "train.probes",
];

/// A key: one of a known list, or any text.
#[derive(Arbitrary, Debug, Clone)]
pub enum Name<'a> {
    Known(u8),
    Any(&'a str),
}

impl Name<'_> {
    pub fn pick(&self, known: &[String]) -> String {
        match self {
            Name::Known(i) if !known.is_empty() => known[*i as usize % known.len()].clone(),
            Name::Known(_) => String::new(),
            Name::Any(s) => s.to_string(),
        }
    }
}

/// Tensor element types an edit can give (F32, F64 and ones icl refuses).
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum EditDtype {
    F32,
    F64,
    F16,
    I64,
    U8,
    Bool,
}

impl EditDtype {
    fn dtype(self) -> Dtype {
        match self {
            EditDtype::F32 => Dtype::F32,
            EditDtype::F64 => Dtype::F64,
            EditDtype::F16 => Dtype::F16,
            EditDtype::I64 => Dtype::I64,
            EditDtype::U8 => Dtype::U8,
            EditDtype::Bool => Dtype::BOOL,
        }
    }
}

/// One change to a valid safetensors file.
#[derive(Arbitrary, Debug, Clone)]
pub enum Edit<'a> {
    /// Set a metadata entry.
    Meta(Name<'a>, &'a str),
    /// Remove a metadata entry.
    DropMeta(Name<'a>),
    /// Set one key of the TOML in metadata `config` to a value (any text, read as `--set` reads).
    ConfigKey(Name<'a>, &'a str),
    /// Append a line to the TOML in metadata `config`.
    ConfigLine(&'a str),
    /// Give a tensor another shape (its bytes repeated or cut to fit; at most 2^16 elements).
    Shape(u8, Vec<u32>),
    /// Give a tensor another element type (bytes refitted as for `Shape`).
    Dtype(u8, EditDtype),
    /// Overwrite bytes of a tensor from an offset.
    Bytes(u8, u32, &'a [u8]),
    /// Store a value at an element of an f32/f64 tensor (NaN, infinity, huge, ...).
    Value(u8, u32, f64),
    /// Remove a tensor.
    Drop(u8),
    /// Rename a tensor (to a known name or any text).
    Rename(u8, Name<'a>),
    /// Add a tensor (a copy of another under a new name).
    Copy(u8, Name<'a>),
}

fn refit(t: &mut Raw) {
    let n: usize = t.shape.iter().map(|&s| s as usize).product::<usize>() * t.dtype.size();
    if t.bytes.is_empty() {
        t.bytes = vec![0; n];
    } else {
        let src = t.bytes.clone();
        t.bytes = src.iter().copied().cycle().take(n).collect();
    }
}

/// Apply `edits` to a file's tensors and metadata and encode the result (None when the edits
/// make something safetensors itself cannot write, e.g. a duplicate tensor name).
pub fn edited(base: &[u8], edits: &[Edit]) -> Option<Vec<u8>> {
    let (mut tensors, mut meta) = split(base);
    let tensor_names = |ts: &Vec<Raw>| -> Vec<String> {
        let mut v: Vec<String> = ts.iter().map(|t| t.name.clone()).collect();
        v.extend(
            [
                "q_proj.weight",
                "train.log",
                "train.snapshots",
                "train.probe.0",
                "train.opt.adam.m",
                "kq",
            ]
            .map(String::from),
        );
        v
    };
    let meta_keys: Vec<String> = META_KEYS.iter().map(|s| s.to_string()).collect();
    let config_keys: Vec<String> = icl_core::config::keys().map(|k| k.dotted()).collect();
    for e in edits.iter().take(16) {
        let n = tensors.len();
        match e {
            Edit::Meta(k, v) => {
                meta.insert(k.pick(&meta_keys), v.to_string());
            }
            Edit::DropMeta(k) => {
                meta.remove(&k.pick(&meta_keys));
            }
            Edit::ConfigKey(k, v) => {
                let text = meta.get("config").cloned().unwrap_or_default();
                let Ok(mut table) = text.parse::<toml::Table>() else {
                    continue;
                };
                let key = k.pick(&config_keys);
                let (s, name) = key.split_once('.').unwrap_or(("task", key.as_str()));
                let sec = table
                    .entry(s.to_string())
                    .or_insert_with(|| toml::Value::Table(toml::Table::new()));
                if let toml::Value::Table(sec) = sec {
                    sec.insert(name.to_string(), icl_core::config::parse_value_text(v));
                }
                meta.insert("config".into(), table.to_string());
            }
            Edit::ConfigLine(l) => {
                meta.entry("config".into())
                    .or_default()
                    .push_str(&format!("\n{l}\n"));
            }
            Edit::Shape(i, shape) if n > 0 => {
                let t = &mut tensors[*i as usize % n];
                let shape: Vec<usize> = shape.iter().take(4).map(|&s| s as usize).collect();
                let numel = shape.iter().try_fold(1usize, |a, &s| a.checked_mul(s));
                if numel.is_none_or(|x| x > 1 << 16) {
                    continue;
                }
                t.shape = shape;
                refit(t);
            }
            Edit::Dtype(i, d) if n > 0 => {
                let t = &mut tensors[*i as usize % n];
                t.dtype = d.dtype();
                refit(t);
            }
            Edit::Bytes(i, at, b) if n > 0 => {
                let t = &mut tensors[*i as usize % n];
                let len = t.bytes.len();
                if len == 0 {
                    continue;
                }
                for (j, &x) in b.iter().enumerate() {
                    let k = (*at as usize + j) % len;
                    t.bytes[k] = x;
                }
            }
            Edit::Value(i, at, v) if n > 0 => {
                let t = &mut tensors[*i as usize % n];
                let size = t.dtype.size();
                let count = t.bytes.len() / size.max(1);
                if count == 0 {
                    continue;
                }
                let k = (*at as usize % count) * size;
                match t.dtype {
                    Dtype::F32 => t.bytes[k..k + 4].copy_from_slice(&(*v as f32).to_le_bytes()),
                    Dtype::F64 => t.bytes[k..k + 8].copy_from_slice(&v.to_le_bytes()),
                    _ => {}
                }
            }
            Edit::Drop(i) if n > 0 => {
                tensors.remove(*i as usize % n);
            }
            Edit::Rename(i, name) if n > 0 => {
                let new = name.pick(&tensor_names(&tensors));
                tensors[*i as usize % n].name = new;
            }
            Edit::Copy(i, name) if n > 0 => {
                let new = name.pick(&tensor_names(&tensors));
                let t = &tensors[*i as usize % n];
                let c = Raw {
                    name: new,
                    shape: t.shape.clone(),
                    dtype: t.dtype,
                    bytes: t.bytes.clone(),
                };
                tensors.push(c);
            }
            _ => {}
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    if !tensors
        .iter()
        .all(|t| seen.insert(t.name.clone()) && t.name != "__metadata__")
    {
        return None;
    }
    encode(&tensors, &meta).ok()
}
