//! PyTorch checkpoints of Garg et al.'s GPT-2 in-context learner (Garg, Tsipras, Liang, Valiant
//! 2022, dtsip/in-context-learning, `src/models.py`, `TransformerModel`): its `state_dict()`,
//! saved as safetensors, read into the `gpt2` family's flat parameter buffer and written back.
//!
//! The model is `_read_in = nn.Linear(n_dims, n_embd)`, `_backbone = GPT2Model(GPT2Config(
//! n_positions = 2 n_positions, ...))`, `_read_out = nn.Linear(n_embd, 1)`. The flat buffer holds
//! these tensors in this order ([`Gpt2Shape::tensors`]; NL layers, C = embd, P positions, d dims;
//! row-major, the layer index outermost):
//!
//! | flat tensor | shape | state_dict tensor |
//! |---|---|---|
//! | `read_in.weight`, `read_in.bias` | [C, d], [C] | `_read_in.weight`, `_read_in.bias` |
//! | `wpe` | [2P, C] | `_backbone.wpe.weight` |
//! | `ln_1.weight`, `ln_1.bias` | [NL, C] | `_backbone.h.{l}.ln_1.*` |
//! | `attn.c_attn.weight`, `.bias` | [NL, C, 3C], [NL, 3C] | `_backbone.h.{l}.attn.c_attn.*` |
//! | `attn.c_proj.weight`, `.bias` | [NL, C, C], [NL, C] | `_backbone.h.{l}.attn.c_proj.*` |
//! | `ln_2.weight`, `ln_2.bias` | [NL, C] | `_backbone.h.{l}.ln_2.*` |
//! | `mlp.c_fc.weight`, `.bias` | [NL, C, 4C], [NL, 4C] | `_backbone.h.{l}.mlp.c_fc.*` |
//! | `mlp.c_proj.weight`, `.bias` | [NL, 4C, C], [NL, C] | `_backbone.h.{l}.mlp.c_proj.*` |
//! | `ln_f.weight`, `ln_f.bias` | [C] | `_backbone.ln_f.*` |
//! | `read_out.weight`, `read_out.bias` | [1, C], [1] | `_read_out.weight`, `_read_out.bias` |
//!
//! transformers' `Conv1D` weights are [in, out] and `nn.Linear`'s [out, in]; both are kept as
//! PyTorch stores them, so every slice of the buffer is the PyTorch tensor, element for element.
//!
//! Three tensors of the state_dict have no place in the buffer and are ignored on import: the
//! token embedding `_backbone.wte.weight` [vocab, C] (the model is fed `inputs_embeds`), and, in
//! transformers before 4.31 (Garg et al. pin 4.17), each layer's causal-mask buffers
//! `_backbone.h.{l}.attn.bias` ([1, 1, 2P, 2P] lower-triangular ones, `uint8` in 4.17, `bool`
//! later) and `_backbone.h.{l}.attn.masked_bias` (the scalar -1e4, f32).
use crate::any::AnyModel;
use crate::checkpoint::{encode, from_core, tensor_f64, Raw};
use crate::error::{Result, RunError};
use crate::folder::read_safetensors;
use icl_core::checkpoint::File;
use icl_core::config::Config;
use icl_core::model::{ModelSpec, Net};
use icl_core::Error;
use safetensors::tensor::{Dtype, SafeTensors, TensorView};
use std::collections::BTreeMap;
use std::path::Path;

/// The rows of GPT-2's token embedding, `GPT2Config().vocab_size`: [`export_state_dict`] writes
/// `_backbone.wte.weight` [`WTE_ROWS`, C] (zeros) so that a default `TransformerModel` loads the
/// file with `strict=True`.
pub const WTE_ROWS: usize = 50257;

/// The sizes of a Garg et al. `TransformerModel` (the number of heads does not change a shape).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gpt2Shape {
    /// `n_dims`: the width of an x (`task.d`).
    pub d: usize,
    /// `n_embd`: the residual stream's width C (`model.embd`).
    pub embd: usize,
    /// `n_layer` (`model.layers`).
    pub layers: usize,
    /// `n_positions`: the longest prompt, in (x, y) pairs (`model.positions`); GPT-2 has 2P
    /// positions.
    pub positions: usize,
}

impl From<&icl_core::families::gpt2::Gpt2Spec> for Gpt2Shape {
    fn from(s: &icl_core::families::gpt2::Gpt2Spec) -> Self {
        Gpt2Shape {
            d: s.d,
            embd: s.embd,
            layers: s.layers,
            positions: s.positions,
        }
    }
}

/// `icl export DIR --torch FILE`: the GPT-2 run in `dir` as a state_dict of Garg et al.'s
/// `TransformerModel` (safetensors, f32), written atomically; `legacy_buffers` adds the
/// per-layer mask buffers of the transformers versions they pinned (4.17).
pub fn export_run(dir: &crate::RunDir, out: &std::path::Path, legacy_buffers: bool) -> Result<()> {
    dir.check_run()?;
    let loaded = crate::checkpoint::load(&dir.model())?;
    let icl_core::model::Net::Gpt2(sp) = &loaded.model.spec().net else {
        return Err(RunError::Refused(
            "icl export --torch writes Garg et al.'s TransformerModel: it needs a GPT-2 run (model.arch = gpt2)".into(),
        ));
    };
    let bytes = export_state_dict(
        &loaded.model.params_f64(),
        &Gpt2Shape::from(sp),
        legacy_buffers,
    )?;
    crate::folder::atomic_write(out, &bytes)
}

/// Import a PyTorch `state_dict` saved as safetensors: for a GPT-2 configuration Garg et al.'s
/// `TransformerModel` ([`import_state_dict`]); otherwise the reference code's layout
/// (`q_proj.weight` [H(d+1), d+1], `k_proj.weight`, `v_proj.weight`, `o_proj.weight` [n_out, H(d+1)]).
/// The config must describe a full-parametrisation model of the same shape; a tensor of another
/// name (a bias) is refused, naming it, rather than dropped.
pub fn import_torch(path: &Path, cfg: &Config) -> Result<AnyModel> {
    import_torch_bytes(path, &read_safetensors(path)?, cfg)
}

/// [`import_torch`] from bytes in memory (`path` names them in messages).
pub fn import_torch_bytes(path: &Path, bytes: &[u8], cfg: &Config) -> Result<AnyModel> {
    let spec = ModelSpec::from_config(cfg)?;
    if let Net::Gpt2(sp) = &spec.net {
        let params = import_state_dict(bytes, &Gpt2Shape::from(sp))?;
        return AnyModel::from_f64(spec, params, cfg.train.dtype);
    }
    let f = File::parse(bytes).map_err(|e| from_core(path, e))?;
    if spec.as_attention()?.param != icl_core::config::Param::Full {
        return Err(RunError::Core(icl_core::Error::Unsupported(
            "torch import needs model.param = full".into(),
        )));
    }
    let tensors = spec.tensors();
    // a tensor the layout has no place for (a bias, a LayerNorm) would be dropped, and the
    // imported model would not be the one that was saved
    let extra: Vec<&str> = f
        .tensors
        .iter()
        .map(|t| t.name.as_str())
        .filter(|n| !tensors.iter().any(|t| t.name == *n))
        .collect();
    if !extra.is_empty() {
        return Err(RunError::Core(icl_core::Error::Unsupported(format!(
            "{}: unexpected tensor{} {} (the reference layout is the bias-free {}; icl's model has no place for more)",
            path.display(),
            if extra.len() > 1 { "s" } else { "" },
            extra.join(", "),
            tensors.iter().map(|t| t.name).collect::<Vec<_>>().join(", "),
        ))));
    }
    let mut params = Vec::with_capacity(spec.n_params());
    for t in tensors {
        params.extend(tensor_f64(path, &f, t.name, &t.shape)?);
    }
    AnyModel::from_f64(spec, params, cfg.train.dtype)
}

/// One tensor of the flat layout: its name, the state_dict's name for it (`None`: one tensor per
/// layer, `_backbone.h.{l}.<name>`), and its shape (of one layer's slice for those).
struct Slot {
    name: &'static str,
    torch: Option<&'static str>,
    shape: Vec<usize>,
}

/// What the state_dict keeps per layer besides the parameters: the causal-mask buffers of
/// transformers before 4.31.
const LAYER_BUFFERS: [&str; 2] = ["attn.bias", "attn.masked_bias"];

/// The token embedding, unused by a model fed `inputs_embeds`.
const WTE: &str = "_backbone.wte.weight";

impl Gpt2Shape {
    fn slots(&self) -> Vec<Slot> {
        // saturating: a shape too large for memory still has a layout, which no buffer fits
        let (d, c, p2) = (self.d, self.embd, self.positions.saturating_mul(2));
        let (c3, c4) = (c.saturating_mul(3), c.saturating_mul(4));
        let slot = |name, torch, shape| Slot { name, torch, shape };
        vec![
            slot("read_in.weight", Some("_read_in.weight"), vec![c, d]),
            slot("read_in.bias", Some("_read_in.bias"), vec![c]),
            slot("wpe", Some("_backbone.wpe.weight"), vec![p2, c]),
            slot("ln_1.weight", None, vec![c]),
            slot("ln_1.bias", None, vec![c]),
            slot("attn.c_attn.weight", None, vec![c, c3]),
            slot("attn.c_attn.bias", None, vec![c3]),
            slot("attn.c_proj.weight", None, vec![c, c]),
            slot("attn.c_proj.bias", None, vec![c]),
            slot("ln_2.weight", None, vec![c]),
            slot("ln_2.bias", None, vec![c]),
            slot("mlp.c_fc.weight", None, vec![c, c4]),
            slot("mlp.c_fc.bias", None, vec![c4]),
            slot("mlp.c_proj.weight", None, vec![c4, c]),
            slot("mlp.c_proj.bias", None, vec![c]),
            slot("ln_f.weight", Some("_backbone.ln_f.weight"), vec![c]),
            slot("ln_f.bias", Some("_backbone.ln_f.bias"), vec![c]),
            slot("read_out.weight", Some("_read_out.weight"), vec![1, c]),
            slot("read_out.bias", Some("_read_out.bias"), vec![1]),
        ]
    }

    /// The flat layout: each tensor's name and shape, in buffer order (the per-layer tensors with
    /// the layer index first).
    pub fn tensors(&self) -> Vec<(&'static str, Vec<usize>)> {
        self.slots()
            .into_iter()
            .map(|s| {
                let mut shape = s.shape;
                if s.torch.is_none() {
                    shape.insert(0, self.layers);
                }
                (s.name, shape)
            })
            .collect()
    }

    /// The length of the flat buffer (saturating: a shape too large for memory gives
    /// `usize::MAX`, which no buffer has).
    pub fn n_params(&self) -> usize {
        self.tensors()
            .iter()
            .map(|(_, s)| s.iter().fold(1usize, |n, &k| n.saturating_mul(k)))
            .fold(0usize, |n, k| n.saturating_add(k))
    }

    /// Every size is at least 1.
    fn check(&self) -> Result<()> {
        if self.d == 0 || self.embd == 0 || self.layers == 0 || self.positions == 0 {
            return Err(RunError::Core(Error::Shape(format!(
                "a GPT-2 of {} (every size is at least 1)",
                self.describe()
            ))));
        }
        Ok(())
    }

    /// The configuration this shape answers to, for messages.
    fn describe(&self) -> String {
        format!(
            "task.d={}, model.embd={}, model.layers={}, model.positions={}",
            self.d, self.embd, self.layers, self.positions
        )
    }

    /// The state_dict's tensors in buffer order: name and shape of each slice of the buffer
    /// (lazily: a file that claims absurdly many layers fails at the first missing one).
    fn state_dict_tensors(&self) -> impl Iterator<Item = (String, Vec<usize>)> + '_ {
        self.slots().into_iter().flat_map(move |s| {
            let copies = if s.torch.is_some() { 1 } else { self.layers };
            (0..copies).map(move |l| {
                let name = match s.torch {
                    Some(t) => t.to_string(),
                    None => format!("_backbone.h.{l}.{}", s.name),
                };
                (name, s.shape.clone())
            })
        })
    }
}

fn corrupt(m: String) -> RunError {
    RunError::Core(Error::Checkpoint(m))
}

/// What a state_dict name is to the import.
enum Key {
    /// A tensor of the flat layout (of layer `l` for the per-layer ones).
    Param(Option<usize>),
    /// A tensor the model has no use for (of layer `l` for the mask buffers).
    Ignored(Option<usize>),
    Unknown,
}

fn classify(name: &str, slots: &[Slot]) -> Key {
    if name == WTE {
        return Key::Ignored(None);
    }
    if slots.iter().any(|s| s.torch == Some(name)) {
        return Key::Param(None);
    }
    let Some(rest) = name.strip_prefix("_backbone.h.") else {
        return Key::Unknown;
    };
    let Some((l, suffix)) = rest.split_once('.') else {
        return Key::Unknown;
    };
    // PyTorch writes `h.3`, never `h.03` or `h.+3`: another spelling would alias a layer
    let l = match l.parse::<usize>() {
        Ok(n) if n.to_string() == l => n,
        _ => return Key::Unknown,
    };
    if slots.iter().any(|s| s.torch.is_none() && s.name == suffix) {
        Key::Param(Some(l))
    } else if LAYER_BUFFERS.contains(&suffix) {
        Key::Ignored(Some(l))
    } else {
        Key::Unknown
    }
}

/// The sizes a state_dict's tensors say its model has, where they say it; compared with the
/// configuration's so that a mismatch is refused with the `--set` that fits the file.
fn size_mismatch(st: &SafeTensors, shape: &Gpt2Shape, layers: Option<usize>) -> Result<()> {
    let dims = |name: &str| st.tensor(name).ok().map(|t| t.shape().to_vec());
    let mut found: Vec<(&str, usize, usize, String)> = Vec::new(); // key, file, config, why
    let read_in = dims("_read_in.weight").filter(|s| s.len() == 2);
    if let Some(s) = &read_in {
        found.push((
            "task.d",
            s[1],
            shape.d,
            format!("`_read_in.weight` is {s:?}"),
        ));
        found.push((
            "model.embd",
            s[0],
            shape.embd,
            format!("`_read_in.weight` is {s:?}"),
        ));
    } else if let Some(s) = dims("_backbone.ln_f.weight").filter(|s| s.len() == 1) {
        let why = format!("`_backbone.ln_f.weight` is {s:?}");
        found.push(("model.embd", s[0], shape.embd, why));
    }
    if let Some(s) = dims("_backbone.wpe.weight").filter(|s| !s.is_empty()) {
        let why = format!("`_backbone.wpe.weight` is {s:?}");
        if s[0] % 2 != 0 {
            return Err(RunError::Core(Error::Shape(format!(
                "{why}: a TransformerModel has 2 x n_positions positions, an even number"
            ))));
        }
        found.push(("model.positions", s[0] / 2, shape.positions, why));
    }
    if let Some(l) = layers {
        let why = format!("the last layer is `_backbone.h.{}`", l - 1);
        found.push(("model.layers", l, shape.layers, why));
    }
    let off: Vec<_> = found.iter().filter(|(_, f, c, _)| f != c).collect();
    if off.is_empty() {
        return Ok(());
    }
    let whys: Vec<String> = off
        .iter()
        .map(|(k, f, c, why)| format!("{why} ({k} = {f}; the configuration has {c})"))
        .collect();
    let sets: Vec<String> = off
        .iter()
        .map(|(k, f, ..)| format!("--set {k}={f}"))
        .collect();
    Err(RunError::Core(Error::Shape(format!(
        "the state_dict is of another model size: {}; to read it, `{}`",
        whys.join("; "),
        sets.join(" ")
    ))))
}

/// The values of a floating-point tensor (f32, f64, f16 or bf16), as f64.
fn values(name: &str, t: &TensorView) -> Result<Vec<f64>> {
    let data = t.data();
    let v: Vec<f64> = match t.dtype() {
        Dtype::F64 => data
            .chunks_exact(8)
            .map(|b| f64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
            .collect(),
        Dtype::F32 => data
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().unwrap_or([0; 4])) as f64)
            .collect(),
        Dtype::F16 => data
            .chunks_exact(2)
            .map(|b| f16_to_f64(u16::from_le_bytes([b[0], b[1]])))
            .collect(),
        Dtype::BF16 => data
            .chunks_exact(2)
            .map(|b| f32::from_bits((u16::from_le_bytes([b[0], b[1]]) as u32) << 16) as f64)
            .collect(),
        other => {
            return Err(corrupt(format!(
                "`{name}` is {other:?}; parameters are f32, f64, f16 or bf16"
            )))
        }
    };
    if let Some((i, x)) = v.iter().enumerate().find(|(_, x)| !x.is_finite()) {
        return Err(RunError::Core(Error::NonFinite(format!(
            "`{name}`[{i}] = {x} (flat index, row-major)"
        ))));
    }
    Ok(v)
}

/// An IEEE half-precision number (1 sign, 5 exponent, 10 mantissa bits), exactly.
fn f16_to_f64(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((h >> 10) & 0x1f);
    let man = f64::from(h & 0x3ff);
    match exp {
        0 => sign * man * 2f64.powi(-24),
        31 if man == 0.0 => sign * f64::INFINITY,
        31 => f64::NAN,
        e => sign * (1.0 + man / 1024.0) * 2f64.powi(e - 15),
    }
}

/// Read a Garg et al. `TransformerModel.state_dict()` saved as safetensors (f32, f64, f16 or
/// bf16 tensors) into the flat buffer of a model of `shape` (layout: [`Gpt2Shape::tensors`]).
///
/// Refused, with a typed error ([`RunError::Core`]): bytes that are no safetensors file
/// (`Checkpoint`); a tensor the model has no place for (`Unsupported`: "not a Garg et al.
/// TransformerModel state_dict"); a model of other sizes than `shape` (`Shape`, naming the
/// `--set` of `task.d`, `model.embd`, `model.layers`, `model.positions` that fits the file); a
/// missing tensor or one of another dtype (`Checkpoint`), or of another shape (`Shape`); a NaN or
/// infinite value (`NonFinite`). The token embedding and the mask buffers are ignored, whatever
/// their size.
pub fn import_state_dict(bytes: &[u8], shape: &Gpt2Shape) -> Result<Vec<f64>> {
    shape.check()?;
    let st = SafeTensors::deserialize(bytes)
        .map_err(|e| corrupt(format!("not a safetensors file: {e}")))?;
    let slots = shape.slots();
    let mut unknown = Vec::new();
    let mut layers: Option<usize> = None;
    for name in st.names() {
        match classify(name, &slots) {
            Key::Unknown => unknown.push(name.as_str()),
            Key::Param(Some(l)) | Key::Ignored(Some(l)) => {
                layers = Some(layers.unwrap_or(0).max(l.saturating_add(1)))
            }
            Key::Param(None) | Key::Ignored(None) => {}
        }
    }
    if !unknown.is_empty() {
        unknown.sort_unstable();
        let more = if unknown.len() > 3 {
            format!(" and {} more", unknown.len() - 3)
        } else {
            String::new()
        };
        unknown.truncate(3);
        return Err(RunError::Core(Error::Unsupported(format!(
            "unexpected tensor {}{more}: not a Garg et al. TransformerModel state_dict (`_read_in`, \
             `_backbone` a transformers GPT2Model, `_read_out`)",
            unknown
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ))));
    }
    size_mismatch(&st, shape, layers)?;
    // every size now agrees with a tensor of the file (or the file lacks it, refused below), so
    // the buffer is no larger than the file
    let mut params = Vec::with_capacity(shape.n_params().min(bytes.len() / 2));
    for (name, want) in shape.state_dict_tensors() {
        let t = st.tensor(&name).map_err(|_| {
            corrupt(format!(
                "missing tensor `{name}`: not a complete Garg et al. TransformerModel state_dict \
                 of {}",
                shape.describe()
            ))
        })?;
        if t.shape() != want.as_slice() {
            return Err(RunError::Core(Error::Shape(format!(
                "`{name}` is {:?}; {want:?} expected for {}",
                t.shape(),
                shape.describe()
            ))));
        }
        params.extend(values(&name, &t)?);
    }
    Ok(params)
}

/// The state_dict of the model whose flat buffer is `params`, as f32 tensors named as PyTorch
/// names them, plus the token embedding (zeros) and, with `legacy_buffers`, the mask buffers of
/// transformers before 4.31.
fn state_dict(params: &[f64], shape: &Gpt2Shape, legacy_buffers: bool) -> Result<Vec<Raw>> {
    shape.check()?;
    let n = shape.n_params();
    if params.len() != n {
        return Err(RunError::Core(Error::Shape(format!(
            "{} parameters; a GPT-2 of {} has {n}",
            params.len(),
            shape.describe()
        ))));
    }
    let mut out = Vec::new();
    let mut rest = params;
    for (name, s) in shape.state_dict_tensors() {
        let (xs, tail) = rest.split_at(s.iter().product());
        rest = tail;
        let f: Vec<f32> = xs.iter().map(|&x| x as f32).collect();
        if let Some(i) = f.iter().position(|x| !x.is_finite()) {
            return Err(RunError::Core(Error::NonFinite(format!(
                "`{name}`[{i}] = {} (as f32: {})",
                xs[i], f[i]
            ))));
        }
        out.push(Raw::new(name, s, &f));
    }
    out.push(Raw::new(
        WTE,
        vec![WTE_ROWS, shape.embd],
        &vec![0f32; WTE_ROWS * shape.embd],
    ));
    if legacy_buffers {
        // transformers 4.17, GPT2Attention.__init__: `torch.tril(torch.ones((max_positions,
        // max_positions), dtype=torch.uint8)).view(1, 1, max_positions, max_positions)` and
        // `torch.tensor(-1e4)`, max_positions = GPT2Config.n_positions = 2P
        let p2 = 2 * shape.positions;
        let tril: Vec<u8> = (0..p2 * p2).map(|i| u8::from(i % p2 <= i / p2)).collect();
        for l in 0..shape.layers {
            out.push(Raw {
                name: format!("_backbone.h.{l}.attn.bias"),
                shape: vec![1, 1, p2, p2],
                dtype: Dtype::U8,
                bytes: tril.clone(),
            });
            out.push(Raw::new(
                format!("_backbone.h.{l}.attn.masked_bias"),
                vec![],
                &[-1e4f32],
            ));
        }
    }
    Ok(out)
}

/// The safetensors bytes of the `TransformerModel.state_dict()` whose flat buffer is `params`
/// (layout: [`Gpt2Shape::tensors`]), for `model.load_state_dict(safetensors.torch.load_file(..),
/// strict=True)`: f32 tensors under PyTorch's names, the header's keys sorted (the same
/// parameters give the same bytes), metadata `format = "pt"` as `safetensors.torch.save_file`
/// writes. The unused token embedding `_backbone.wte.weight` is written as zeros of
/// [[`WTE_ROWS`], C], as a default `GPT2Config` has it. With `legacy_buffers`, each layer's
/// `attn.bias` ([1, 1, 2P, 2P] lower-triangular ones, uint8) and `attn.masked_bias` (-1e4, f32,
/// shape []) are added, which transformers before 4.31 (Garg et al. pin 4.17) keep in the
/// state_dict and a strict load there requires; later versions refuse them.
///
/// Refused: a buffer of another length than `shape`'s (`Shape`), a value that is not finite as
/// f32 (`NonFinite`).
pub fn export_state_dict(
    params: &[f64],
    shape: &Gpt2Shape,
    legacy_buffers: bool,
) -> Result<Vec<u8>> {
    let tensors = state_dict(params, shape, legacy_buffers)?;
    let meta = BTreeMap::from([("format".to_string(), "pt".to_string())]);
    encode(&tensors, &meta)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: Gpt2Shape = Gpt2Shape {
        d: 3,
        embd: 4,
        layers: 2,
        positions: 3,
    };

    /// Parameters that are f32 values (so the f32 export keeps them exactly), all different.
    fn params(shape: &Gpt2Shape) -> Vec<f64> {
        (0..shape.n_params())
            .map(|i| f64::from(((i as f32) * 0.618_034).sin() * 1.5))
            .collect()
    }

    /// The state_dict of [`params`] as tensors, for tests to damage.
    fn raw(shape: &Gpt2Shape) -> Vec<Raw> {
        state_dict(&params(shape), shape, false).unwrap()
    }

    fn bytes(tensors: &[Raw]) -> Vec<u8> {
        encode(tensors, &BTreeMap::new()).unwrap()
    }

    /// The message of a refused import, after checking the error's kind.
    fn refusal(tensors: &[Raw], shape: &Gpt2Shape, kind: fn(&Error) -> bool) -> String {
        match import_state_dict(&bytes(tensors), shape) {
            Err(RunError::Core(e)) if kind(&e) => e.to_string(),
            Err(e) => panic!("wrong error: {e:?}"),
            Ok(_) => panic!("accepted"),
        }
    }

    #[test]
    fn layout_is_the_papers() {
        let t = SMALL.tensors();
        assert_eq!(t.len(), 19);
        assert_eq!(t[0], ("read_in.weight", vec![4, 3]));
        assert_eq!(t[2], ("wpe", vec![6, 4]));
        assert_eq!(t[5], ("attn.c_attn.weight", vec![2, 4, 12]));
        assert_eq!(t[13], ("mlp.c_proj.weight", vec![2, 16, 4]));
        assert_eq!(t[18], ("read_out.bias", vec![1]));
        // by hand: read_in 4*3+4, wpe 6*4, per layer 12 C^2 + 13 C = 192 + 52, ln_f 8, read_out 5
        assert_eq!(SMALL.n_params(), 16 + 24 + 2 * 244 + 8 + 5);
        let huge = Gpt2Shape {
            embd: usize::MAX / 2,
            ..SMALL
        };
        assert_eq!(huge.n_params(), usize::MAX);
    }

    #[test]
    fn round_trip_is_exact_and_deterministic() {
        let p = params(&SMALL);
        for legacy in [false, true] {
            let b = export_state_dict(&p, &SMALL, legacy).unwrap();
            assert_eq!(b, export_state_dict(&p, &SMALL, legacy).unwrap());
            assert_eq!(import_state_dict(&b, &SMALL).unwrap(), p, "legacy {legacy}");
            let st = SafeTensors::deserialize(&b).unwrap();
            let wte = st.tensor(WTE).unwrap();
            assert_eq!((wte.dtype(), wte.shape()), (Dtype::F32, &[WTE_ROWS, 4][..]));
            assert!(wte.data().iter().all(|&x| x == 0));
            assert_eq!(st.len(), 7 + 12 * 2 + 1 + if legacy { 4 } else { 0 });
            let h = st.tensor("_backbone.h.1.attn.c_attn.weight").unwrap();
            assert_eq!((h.dtype(), h.shape()), (Dtype::F32, &[4, 12][..]));
        }
    }

    #[test]
    fn legacy_buffers_are_transformers_4_17s() {
        let b = export_state_dict(&params(&SMALL), &SMALL, true).unwrap();
        let st = SafeTensors::deserialize(&b).unwrap();
        for l in 0..2 {
            let mask = st.tensor(&format!("_backbone.h.{l}.attn.bias")).unwrap();
            assert_eq!((mask.dtype(), mask.shape()), (Dtype::U8, &[1, 1, 6, 6][..]));
            #[rustfmt::skip]
            let tril: [u8; 36] = [
                1, 0, 0, 0, 0, 0,
                1, 1, 0, 0, 0, 0,
                1, 1, 1, 0, 0, 0,
                1, 1, 1, 1, 0, 0,
                1, 1, 1, 1, 1, 0,
                1, 1, 1, 1, 1, 1,
            ];
            assert_eq!(mask.data(), tril);
            let mb = st
                .tensor(&format!("_backbone.h.{l}.attn.masked_bias"))
                .unwrap();
            assert_eq!((mb.dtype(), mb.shape()), (Dtype::F32, &[][..]));
            assert_eq!(mb.data(), (-1e4f32).to_le_bytes());
        }
        // masks of later versions (bool) or of any dtype, and a token embedding of any size,
        // are ignored
        let mut t = raw(&SMALL);
        t.retain(|r| r.name != WTE);
        t.push(Raw::new(WTE, vec![1, 4], &[0f32; 4]));
        t.push(Raw {
            name: "_backbone.h.0.attn.bias".into(),
            shape: vec![1, 1, 2, 2],
            dtype: Dtype::BOOL,
            bytes: vec![1, 0, 1, 1],
        });
        t.push(Raw::new(
            "_backbone.h.1.attn.bias",
            vec![2, 2],
            &[1f64, 0., 1., 1.],
        ));
        assert_eq!(
            import_state_dict(&bytes(&t), &SMALL).unwrap(),
            params(&SMALL)
        );
    }

    /// An f64 of at most 8 significant bits, in a normal f16's range, as f16 bits.
    fn to_f16(x: f64) -> u16 {
        if x == 0.0 {
            return 0;
        }
        let b = (x as f32).to_bits();
        let exp = ((b >> 23) & 0xff) as i32 - 127 + 15;
        assert!((1..31).contains(&exp) && b & 0x1fff == 0, "{x} is no f16");
        (((b >> 16) & 0x8000) | ((exp as u32) << 10) | ((b >> 13) & 0x3ff)) as u16
    }

    #[test]
    fn f16_bf16_and_f64_are_read() {
        // values of 8 significant bits (k / 64, |k| <= 128) are exact in f16 and bf16
        let p: Vec<f64> = params(&SMALL)
            .iter()
            .map(|x| (x * 64.0).round() / 64.0)
            .collect();
        let t = state_dict(&p, &SMALL, false).unwrap();
        let as_dtype = |dtype: Dtype| -> Vec<Raw> {
            t.iter()
                .map(|r| {
                    let xs: Vec<f32> = r
                        .bytes
                        .chunks_exact(4)
                        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
                        .collect();
                    let bytes = match dtype {
                        Dtype::F64 => xs
                            .iter()
                            .flat_map(|&x| f64::from(x).to_le_bytes())
                            .collect(),
                        Dtype::BF16 => xs
                            .iter()
                            .flat_map(|&x| ((x.to_bits() >> 16) as u16).to_le_bytes())
                            .collect(),
                        _ => xs
                            .iter()
                            .flat_map(|&x| to_f16(f64::from(x)).to_le_bytes())
                            .collect(),
                    };
                    Raw {
                        name: r.name.clone(),
                        shape: r.shape.clone(),
                        dtype,
                        bytes,
                    }
                })
                .collect()
        };
        for dtype in [Dtype::F64, Dtype::F16, Dtype::BF16] {
            let got = import_state_dict(&bytes(&as_dtype(dtype)), &SMALL).unwrap();
            assert_eq!(got, p, "{dtype:?}");
        }
        assert_eq!(f16_to_f64(0x3c00), 1.0);
        assert_eq!(f16_to_f64(0xc000), -2.0);
        assert_eq!(f16_to_f64(0x0001), 2f64.powi(-24));
        assert_eq!(f16_to_f64(0x7bff), 65504.0);
        assert!(f16_to_f64(0x7c00).is_infinite() && f16_to_f64(0x7e00).is_nan());
    }

    #[test]
    fn refuses_missing_unexpected_and_damaged_tensors() {
        let shape_err = |e: &Error| matches!(e, Error::Shape(_));
        let mut t = raw(&SMALL);
        t.retain(|r| r.name != "_backbone.h.1.ln_2.bias");
        let m = refusal(&t, &SMALL, |e| matches!(e, Error::Checkpoint(_)));
        assert!(
            m.contains("missing tensor `_backbone.h.1.ln_2.bias`"),
            "{m}"
        );

        for extra in [
            "lm_head.weight",
            "_backbone.h.0.attn.c_attn.lora",
            "_backbone.h.01.ln_1.weight",
        ] {
            let mut t = raw(&SMALL);
            t.push(Raw::new(extra, vec![1], &[0f32]));
            let m = refusal(&t, &SMALL, |e| matches!(e, Error::Unsupported(_)));
            assert!(
                m.contains(extra) && m.contains("not a Garg et al. TransformerModel state_dict"),
                "{m}"
            );
        }

        // one tensor of another shape than the sizes give (a GPT2Config with n_inner)
        let mut t = raw(&SMALL);
        let fc = t
            .iter_mut()
            .find(|r| r.name == "_backbone.h.0.mlp.c_fc.weight")
            .unwrap();
        fc.shape = vec![8, 8];
        let m = refusal(&t, &SMALL, shape_err);
        assert!(
            m.contains("`_backbone.h.0.mlp.c_fc.weight` is [8, 8]; [4, 16] expected"),
            "{m}"
        );

        // an integer tensor where a parameter belongs
        let mut t = raw(&SMALL);
        let b = t.iter_mut().find(|r| r.name == "_read_out.bias").unwrap();
        (b.dtype, b.bytes) = (Dtype::I32, 7i32.to_le_bytes().to_vec());
        let m = refusal(&t, &SMALL, |e| matches!(e, Error::Checkpoint(_)));
        assert!(m.contains("`_read_out.bias` is I32"), "{m}");

        for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            let mut t = raw(&SMALL);
            let w = t
                .iter_mut()
                .find(|r| r.name == "_backbone.h.1.ln_1.weight")
                .unwrap();
            w.bytes[8..12].copy_from_slice(&bad.to_le_bytes());
            let m = refusal(&t, &SMALL, |e| matches!(e, Error::NonFinite(_)));
            assert!(m.contains("`_backbone.h.1.ln_1.weight`[2]"), "{m}");
        }

        let e = import_state_dict(b"not safetensors", &SMALL).unwrap_err();
        assert!(matches!(e, RunError::Core(Error::Checkpoint(_))), "{e:?}");
    }

    /// A state_dict of other sizes is refused with the `--set` that reads it.
    #[test]
    fn size_mismatches_name_the_config_change() {
        let shape_err = |e: &Error| matches!(e, Error::Shape(_));
        let cases = [
            (
                Gpt2Shape {
                    positions: 11,
                    ..SMALL
                },
                "`--set model.positions=11`",
                "[22, 4]",
            ),
            (Gpt2Shape { d: 5, ..SMALL }, "`--set task.d=5`", "[4, 5]"),
            (
                Gpt2Shape { embd: 6, ..SMALL },
                "`--set model.embd=6`",
                "[6, 3]",
            ),
            (
                Gpt2Shape { layers: 3, ..SMALL },
                "`--set model.layers=3`",
                "`_backbone.h.2`",
            ),
            (
                Gpt2Shape { layers: 1, ..SMALL },
                "`--set model.layers=1`",
                "`_backbone.h.0`",
            ),
            (
                Gpt2Shape {
                    d: 1,
                    positions: 2,
                    ..SMALL
                },
                "`--set task.d=1 --set model.positions=2`",
                "[4, 1]",
            ),
        ];
        for (file, fix, why) in cases {
            let m = refusal(&raw(&file), &SMALL, shape_err);
            assert!(m.contains(fix) && m.contains(why), "{file:?}: {m}");
        }
        // embd read from ln_f where read_in is missing
        let mut t = raw(&Gpt2Shape { embd: 6, ..SMALL });
        t.retain(|r| r.name != "_read_in.weight");
        let m = refusal(&t, &SMALL, shape_err);
        assert!(m.contains("`--set model.embd=6`"), "{m}");
        // an odd number of positions is no TransformerModel's
        let mut t = raw(&SMALL);
        let wpe = t
            .iter_mut()
            .find(|r| r.name == "_backbone.wpe.weight")
            .unwrap();
        (wpe.shape, wpe.bytes) = (vec![5, 4], wpe.bytes[..80].to_vec());
        let m = refusal(&t, &SMALL, shape_err);
        assert!(m.contains("even"), "{m}");
        // a layer index far out is a size mismatch, not an allocation
        let mut t = raw(&SMALL);
        t.push(Raw::new(
            "_backbone.h.99999999999.attn.masked_bias",
            vec![],
            &[-1e4f32],
        ));
        let m = refusal(&t, &SMALL, shape_err);
        assert!(m.contains("`--set model.layers=100000000000`"), "{m}");
        // and with that many layers configured, the first missing one is refused
        let many = Gpt2Shape {
            layers: 100000000000,
            ..SMALL
        };
        let m = refusal(&t, &many, |e| matches!(e, Error::Checkpoint(_)));
        assert!(
            m.contains("missing tensor `_backbone.h.2.ln_1.weight`"),
            "{m}"
        );
    }

    #[test]
    fn export_refuses_wrong_lengths_and_non_finite_values() {
        let mut p = params(&SMALL);
        p.pop();
        let e = export_state_dict(&p, &SMALL, false).unwrap_err();
        assert!(matches!(e, RunError::Core(Error::Shape(_))), "{e:?}");
        // no size is 0 (an empty wpe would leave the positions free: a mask of any size)
        let flat = Gpt2Shape { embd: 0, ..SMALL };
        let e = export_state_dict(&params(&flat), &flat, true).unwrap_err();
        assert!(matches!(e, RunError::Core(Error::Shape(_))), "{e:?}");
        for bad in [f64::NAN, f64::INFINITY, 1e39] {
            let mut p = params(&SMALL);
            p[20] = bad;
            let e = export_state_dict(&p, &SMALL, false).unwrap_err();
            assert!(
                matches!(&e, RunError::Core(Error::NonFinite(m)) if m.contains("`_backbone.wpe.weight`[4]")),
                "{e:?}"
            );
        }
    }

    /// The fixture made by transformers (tests/fixtures/gpt2/make_fixture.py).
    const FIXTURE: &[u8] = include_bytes!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/gpt2/model.safetensors"
    ));

    const FIXTURE_SHAPE: Gpt2Shape = Gpt2Shape {
        d: 3,
        embd: 8,
        layers: 2,
        positions: 4,
    };

    #[test]
    fn imports_the_transformers_fixture() {
        let p = import_state_dict(FIXTURE, &FIXTURE_SHAPE).unwrap();
        // the numbers PyTorch printed when it made the file: the parameters' count without wte,
        // the first entries of each layer's ln_1.weight (after read_in, 8 x 3 + 8, and wpe,
        // 8 x 8), and read_out.bias, the last
        assert_eq!(p.len(), 1865);
        assert_eq!(FIXTURE_SHAPE.n_params(), 1865);
        let ln_1 = 8 * 3 + 8 + 8 * 8;
        assert_eq!(
            p[ln_1..ln_1 + 3],
            [0.9650478959083557, 0.8790411353111267, 1.2830322980880737]
        );
        assert_eq!(
            p[ln_1 + 8..ln_1 + 11],
            [0.9378024339675903, 0.8487993478775024, 0.8566240668296814]
        );
        assert_eq!(p[1864], -0.05603876709938049);
        // and back: the same tensors, under the same names (wte: [50257, 8] zeros in the export)
        let back = export_state_dict(&p, &FIXTURE_SHAPE, false).unwrap();
        let (a, b) = (
            SafeTensors::deserialize(FIXTURE).unwrap(),
            SafeTensors::deserialize(&back).unwrap(),
        );
        for (name, t) in a.tensors().into_iter().filter(|(n, _)| n != WTE) {
            let u = b.tensor(&name).unwrap();
            assert_eq!((t.dtype(), t.shape()), (u.dtype(), u.shape()), "{name}");
            assert_eq!(t.data(), u.data(), "{name}");
        }
        assert_eq!(a.len(), b.len());
    }

    /// The bridge's layout is the family's ([`icl_core::families::gpt2::Gpt2Spec::tensors`]).
    #[test]
    fn the_bridge_layout_is_the_familys() {
        let spec = icl_core::families::gpt2::Gpt2Spec {
            d: 3,
            embd: 8,
            layers: 2,
            heads: 2,
            positions: 4,
            tau: 1.0,
        };
        let ours: Vec<(&str, Vec<usize>)> = spec
            .tensors()
            .into_iter()
            .map(|t| (t.name, t.shape))
            .collect();
        assert_eq!(Gpt2Shape::from(&spec).tensors(), ours);
    }

    /// The imported fixture predicts what `transformers`' GPT2Model predicted in float64
    /// (`io.safetensors`: `pred` at k = 4 pairs, `pred3` at k = 3), through the core's forward.
    #[test]
    fn the_imported_fixture_predicts_as_pytorch() {
        const IO: &[u8] = include_bytes!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/gpt2/io.safetensors"
        ));
        let spec = icl_core::families::gpt2::Gpt2Spec {
            d: 3,
            embd: 8,
            layers: 2,
            heads: 2,
            positions: 4,
            tau: 1.0,
        };
        let p = import_state_dict(FIXTURE, &FIXTURE_SHAPE).unwrap();
        let io = icl_core::checkpoint::File::parse(IO).unwrap();
        for (xs, ys, pred, k) in [("xs", "ys", "pred", 4), ("xs3", "ys3", "pred3", 3)] {
            let xs = io.tensor_required(xs).unwrap().to_f64(&[2, k, 3]).unwrap();
            let ys = io.tensor_required(ys).unwrap().to_f64(&[2, k]).unwrap();
            let want = io.tensor_required(pred).unwrap().to_f64(&[2, k]).unwrap();
            let mut got = vec![0.0; 2 * k];
            let mut runner = icl_core::families::gpt2::Gpt2Runner::<f64>::scalar();
            runner.predict(&spec, &p, &xs, &ys, 2, k, &mut got).unwrap();
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).abs() < 1e-12, "k = {k}: {got:?} vs {want:?}");
            }
        }
    }

    /// transformers 4.17's state_dict of the same model (make_fixture.py `--legacy`): its mask
    /// buffers are ignored on import, and the legacy export writes them with the same dtype,
    /// shape and bytes.
    #[test]
    fn legacy_buffers_match_transformers_4_17() {
        const LEGACY: &[u8] = include_bytes!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/gpt2/legacy.safetensors"
        ));
        let p = import_state_dict(FIXTURE, &FIXTURE_SHAPE).unwrap();
        assert_eq!(import_state_dict(LEGACY, &FIXTURE_SHAPE).unwrap(), p);
        let ours = export_state_dict(&p, &FIXTURE_SHAPE, true).unwrap();
        let (theirs, ours) = (
            SafeTensors::deserialize(LEGACY).unwrap(),
            SafeTensors::deserialize(&ours).unwrap(),
        );
        let mut buffers = 0;
        // (the fixture's wte has one row, the export's 50257)
        for (name, t) in theirs.tensors().into_iter().filter(|(n, _)| n != WTE) {
            let u = ours.tensor(&name).unwrap();
            assert_eq!((t.dtype(), t.shape()), (u.dtype(), u.shape()), "{name}");
            assert_eq!(t.data(), u.data(), "{name}");
            buffers += usize::from(
                LAYER_BUFFERS
                    .iter()
                    .any(|b| name.ends_with(&format!(".{b}"))),
            );
        }
        assert_eq!((buffers, theirs.len()), (4, ours.len()));
    }

    /// Writes the fixture's parameters as icl exports them, for make_fixture.py's `--check`
    /// (a strict `load_state_dict` in PyTorch): `$ICL_GPT2_EXPORT_DIR` (default: the temporary
    /// folder)/icl-gpt2-export.safetensors and icl-gpt2-export-legacy.safetensors.
    #[test]
    #[ignore = "writes files for a check in PyTorch"]
    fn export_the_fixture() {
        let dir = std::env::var_os("ICL_GPT2_EXPORT_DIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(std::env::temp_dir);
        let p = import_state_dict(FIXTURE, &FIXTURE_SHAPE).unwrap();
        for (legacy, name) in [
            (false, "icl-gpt2-export.safetensors"),
            (true, "icl-gpt2-export-legacy.safetensors"),
        ] {
            let bytes = export_state_dict(&p, &FIXTURE_SHAPE, legacy).unwrap();
            crate::folder::atomic_write(&dir.join(name), &bytes).unwrap();
            println!("{}", dir.join(name).display());
        }
    }
}
