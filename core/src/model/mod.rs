//! One-layer attention models and their parameter layouts.
//!
//! Every parametrisation maps its parameters to per-head *effective circuits*
//! (He et al. 2025 §2.2): `KQ^(h)` (E x E, score scale included, so `s_l = z_l^T KQ z_q`) and
//! `OV^(h)` (n_out x E, the rows of O V that produce the outputs). Engines compute losses and
//! gradients with respect to the circuits; [`Model::backprop_circuits`] maps circuit gradients to
//! parameter gradients (the chain rule through K^T Q, O V, omega I, ...), once per batch.
//!
//! Parameters live in one flat buffer with named views ([`ModelSpec::tensors`]); gradients and
//! optimiser state mirror that layout.
use crate::config::{Activation, Arch, AttentionKind, Config, LinNorm, Param};
use crate::data::iv::Iv;
pub use crate::families::attention::act::{Act, HeadCache};
use crate::families::attention::param;
use crate::families::iv::IvSpec;
use crate::families::stack::StackSpec;
use crate::{Error, Result, Scalar};
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

/// Shape and options of a model (everything but the parameter values).
#[derive(Debug, Clone, PartialEq)]
pub struct ModelSpec {
    pub d: usize,
    pub n_out: usize,
    pub heads: usize,
    pub param: Param,
    pub attention: AttentionKind,
    pub activation: Activation,
    pub c: f64,
    /// Effective score scale (1/sqrt(E) for the reference code's full model).
    pub scale: f64,
    /// Whether the query attends to itself (otherwise strict causal mask: keys are z_1..z_L).
    pub self_attend: bool,
    /// Linear attention's frozen 1/L_0 normaliser (the training length).
    pub lin_norm: f64,
    /// Rank R of the separate key/query parametrisations (1 otherwise).
    pub rank: usize,
    /// The architecture: one attention layer (the fields above), or a multilayer stack.
    pub net: Net,
}

/// What the parameters of a model are.
#[derive(Debug, Clone, PartialEq)]
pub enum Net {
    /// One attention layer with per-head circuits (He et al. 2025, Zhang et al. 2025).
    Attention,
    /// A multi-layer transformer (multilayer paper §3.2).
    Stack(StackSpec),
    /// The two-block IV model (multilayer paper §6.2).
    Iv(IvSpec),
}

/// A named view into the flat parameter buffer.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorInfo {
    pub name: &'static str,
    pub shape: Vec<usize>,
    pub offset: usize,
}

impl TensorInfo {
    /// Number of values.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }
    /// Whether the view is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The linear-attention normaliser L_0 for context length `len`.
pub fn lin_norm_of(n: LinNorm, len: usize) -> f64 {
    match n {
        LinNorm::Len => len as f64,
        LinNorm::LenPlusOne => (len + 1) as f64,
        LinNorm::Value(x) => x,
    }
}

impl ModelSpec {
    /// The model a (validated) config describes.
    pub fn from_config(cfg: &Config) -> Result<Self> {
        cfg.validate()?;
        let m = &cfg.model;
        let stack = |e: usize, n_out: usize, layers: usize, looped: bool| StackSpec {
            e,
            n_out,
            heads: m.heads,
            layers,
            looped,
            attention: m.attention,
            scale: m.scale.unwrap_or(1.0 / libm::sqrt(e as f64)),
        };
        let (d, q) = (cfg.task.d, cfg.task.iv_q);
        let net = match m.arch {
            Arch::Attention => Net::Attention,
            Arch::Transformer => Net::Stack(stack(d + 1, 1, m.layers, m.looped)),
            Arch::Iv2Stage => Net::Iv(IvSpec {
                iv: Iv { q, p: d },
                st1: stack(q + d, d, 1, true),
                st2: stack(d + 1, 1, m.layers, m.looped),
            }),
        };
        Ok(ModelSpec {
            net,
            d: cfg.task.d,
            n_out: cfg.n_out(),
            heads: cfg.model.heads,
            param: cfg.model.param,
            attention: cfg.model.attention,
            activation: cfg.model.activation,
            c: cfg.model.c,
            scale: cfg.score_scale(),
            self_attend: cfg.self_attend(),
            lin_norm: lin_norm_of(cfg.model.lin_norm, cfg.task.len),
            rank: cfg.model.rank,
        })
    }

    /// Embedding width E = d + n_out.
    #[inline]
    pub fn e(&self) -> usize {
        self.d + self.n_out
    }

    /// The activation/normalisation of every head.
    pub fn act(&self) -> Act {
        Act {
            kind: self.attention,
            f: self.activation,
            c: self.c,
            lin_norm: self.lin_norm,
        }
    }

    /// First-order coefficient C_f of the activation (f ~ 1 + C_f x; He et al. 2025 §B.2, Table 1), or `None` for linear attention.
    pub fn c_f(&self) -> Option<f64> {
        match (self.attention, self.activation) {
            (AttentionKind::Linear, _) => None,
            (_, Activation::Exp | Activation::Tanh) => Some(1.0),
            (_, Activation::Affine) => Some(self.c),
            (_, Activation::Square) => Some(2.0 * self.c),
        }
    }

    /// Number of keys the query attends to at context length `len`.
    #[inline]
    pub fn keys(&self, len: usize) -> usize {
        len + self.self_attend as usize
    }

    /// The named tensors of the flat parameter buffer, in order.
    ///
    /// * full: `q_proj.weight` [H E, E], `k_proj.weight` [H E, E], `v_proj.weight` [H E, E],
    ///   `o_proj.weight` [n_out, H E] — PyTorch's layout in the reference code (row h E + r of
    ///   q_proj is row r of Q^(h)).
    /// * merged: `kq` [H, E, E] (raw, before the score scale), `ov` [H, n_out, E].
    /// * reduced: `omega` [H] (raw), `mu` [H, n_out].
    /// * separate: `k` [H, R, E], `q` [H, R, E] (raw), `ov` [H, n_out, E].
    /// * merged_reduced: `u` [H, d, d] (raw KQ_11), `v` [H, n_out] (OV_22).
    /// * separate_reduced: `k` [H, R, d], `q` [H, R, d] (raw), `v` [H, n_out] (OV_22).
    pub fn tensors(&self) -> Vec<TensorInfo> {
        let (h, e, no) = (self.heads, self.e(), self.n_out);
        let (r, d) = (self.rank, self.d);
        let shapes: Vec<(&'static str, Vec<usize>)> = match self.param {
            Param::Full => vec![
                ("q_proj.weight", vec![h * e, e]),
                ("k_proj.weight", vec![h * e, e]),
                ("v_proj.weight", vec![h * e, e]),
                ("o_proj.weight", vec![no, h * e]),
            ],
            Param::Merged => vec![("kq", vec![h, e, e]), ("ov", vec![h, no, e])],
            Param::Reduced => vec![("omega", vec![h]), ("mu", vec![h, no])],
            Param::Separate => vec![
                ("k", vec![h, r, e]),
                ("q", vec![h, r, e]),
                ("ov", vec![h, no, e]),
            ],
            Param::MergedReduced => vec![("u", vec![h, d, d]), ("v", vec![h, no])],
            Param::SeparateReduced => vec![
                ("k", vec![h, r, d]),
                ("q", vec![h, r, d]),
                ("v", vec![h, no]),
            ],
        };
        let shapes = match &self.net {
            Net::Attention => shapes,
            Net::Stack(s) => ["k", "q", "v", "o"]
                .into_iter()
                .map(|n| (n, s.tensor_shape()))
                .collect(),
            Net::Iv(iv) => ["st1.k", "st1.q", "st1.v", "st1.o"]
                .into_iter()
                .map(|n| (n, iv.st1.tensor_shape()))
                .chain(
                    ["st2.k", "st2.q", "st2.v", "st2.o"]
                        .into_iter()
                        .map(|n| (n, iv.st2.tensor_shape())),
                )
                .collect(),
        };
        let mut off = 0;
        shapes
            .into_iter()
            .map(|(name, shape)| {
                let t = TensorInfo {
                    name,
                    shape,
                    offset: off,
                };
                off += t.len();
                t
            })
            .collect()
    }

    /// Total number of parameters.
    pub fn n_params(&self) -> usize {
        self.tensors().iter().map(|t| t.len()).sum()
    }

    /// The effective circuits of parameters `params` (n_params values) into `out`: each
    /// parametrisation's forward ([`param`]).
    pub fn circuits_into<T: Scalar>(&self, params: &[T], out: &mut Circuits<T>) {
        out.clear();
        if self.net != Net::Attention {
            return; // stacks have their own circuits (multilayer::stack)
        }
        match self.param {
            Param::Full => param::full::forward(self, params, out),
            Param::Merged => param::merged::forward(self, params, out),
            Param::Reduced => param::reduced::forward(self, params, out),
            Param::Separate => param::separate::forward(self, params, out),
            Param::MergedReduced => param::merged_reduced::forward(self, params, out),
            Param::SeparateReduced => param::separate_reduced::forward(self, params, out),
        }
    }

    /// Chain rule from circuit gradients `g` to parameter gradients (overwrites `grad`): each
    /// parametrisation's backward ([`param`]).
    pub fn backprop_circuits<T: Scalar>(&self, params: &[T], g: &Circuits<T>, grad: &mut [T]) {
        grad.iter_mut().for_each(|x| *x = T::zero());
        if self.net != Net::Attention {
            return;
        }
        match self.param {
            Param::Full => param::full::backward(self, params, g, grad),
            Param::Merged => param::merged::backward(self, params, g, grad),
            Param::Reduced => param::reduced::backward(self, params, g, grad),
            Param::Separate => param::separate::backward(self, params, g, grad),
            Param::MergedReduced => param::merged_reduced::backward(self, params, g, grad),
            Param::SeparateReduced => param::separate_reduced::backward(self, params, g, grad),
        }
    }
}

/// Effective circuits of all heads: `kq` is [H, E, E], `ov` is [H, n_out, E].
#[derive(Debug, Clone, PartialEq)]
pub struct Circuits<T> {
    pub heads: usize,
    pub e: usize,
    pub n_out: usize,
    pub kq: Vec<T>,
    pub ov: Vec<T>,
}

impl<T: Scalar> Circuits<T> {
    /// All-zero circuits (also used as gradient accumulators).
    pub fn zeros(spec: &ModelSpec) -> Self {
        let (h, e, no) = (spec.heads, spec.e(), spec.n_out);
        Circuits {
            heads: h,
            e,
            n_out: no,
            kq: vec![T::zero(); h * e * e],
            ov: vec![T::zero(); h * no * e],
        }
    }
    /// Reset to zero.
    pub fn clear(&mut self) {
        self.kq.iter_mut().for_each(|x| *x = T::zero());
        self.ov.iter_mut().for_each(|x| *x = T::zero());
    }
    /// KQ of head h (E x E, row-major).
    pub fn kq_head(&self, h: usize) -> &[T] {
        let s = self.e * self.e;
        &self.kq[h * s..(h + 1) * s]
    }
    /// OV of head h (n_out x E, row-major).
    pub fn ov_head(&self, h: usize) -> &[T] {
        let s = self.n_out * self.e;
        &self.ov[h * s..(h + 1) * s]
    }
    /// Circuits of the same shape, all zero.
    pub fn zeros_like<U: Scalar>(other: &Circuits<U>) -> Self {
        Circuits {
            heads: other.heads,
            e: other.e,
            n_out: other.n_out,
            kq: vec![T::zero(); other.kq.len()],
            ov: vec![T::zero(); other.ov.len()],
        }
    }
    /// Widened to f64.
    pub fn to_f64(&self) -> Circuits<f64> {
        Circuits {
            heads: self.heads,
            e: self.e,
            n_out: self.n_out,
            kq: self.kq.iter().map(|x| x.to_f64()).collect(),
            ov: self.ov.iter().map(|x| x.to_f64()).collect(),
        }
    }
    /// Overwrite with f64 circuits of the same shape (rounded to `T`).
    pub fn copy_from_f64(&mut self, src: &Circuits<f64>) {
        for (a, &b) in self.kq.iter_mut().zip(&src.kq) {
            *a = T::of(b);
        }
        for (a, &b) in self.ov.iter_mut().zip(&src.ov) {
            *a = T::of(b);
        }
    }
    /// Add another accumulator (same shape) into this one.
    pub fn add(&mut self, other: &Circuits<T>) {
        for (a, b) in self.kq.iter_mut().zip(&other.kq) {
            *a += *b;
        }
        for (a, b) in self.ov.iter_mut().zip(&other.ov) {
            *a += *b;
        }
    }
}

/// A model: its spec and its flat parameter buffer.
#[derive(Debug, Clone, PartialEq)]
pub struct Model<T> {
    pub spec: ModelSpec,
    pub params: Vec<T>,
}

impl<T: Scalar> Model<T> {
    /// A model with the given parameters (length and finiteness checked).
    pub fn from_params(spec: ModelSpec, params: Vec<T>) -> Result<Self> {
        if params.len() != spec.n_params() {
            return Err(Error::Shape(format!(
                "model needs {} parameters, got {}",
                spec.n_params(),
                params.len()
            )));
        }
        crate::scalar::check_finite("params", &params)?;
        Ok(Model { spec, params })
    }

    /// A model initialised as the config says (see [`crate::init`]).
    pub fn init(cfg: &Config) -> Result<Self> {
        let spec = ModelSpec::from_config(cfg)?;
        let params = crate::init::init_params::<T>(&spec, cfg)?;
        Model::from_params(spec, params)
    }

    /// The same model in precision `U` (parameters rounded).
    pub fn cast<U: Scalar>(&self) -> Model<U> {
        Model {
            spec: self.spec.clone(),
            params: self.params.iter().map(|x| U::of(x.to_f64())).collect(),
        }
    }

    /// The values of a named tensor.
    pub fn tensor(&self, name: &str) -> Option<&[T]> {
        let t = self.spec.tensors().into_iter().find(|t| t.name == name)?;
        Some(&self.params[t.offset..t.offset + t.len()])
    }

    /// Compute the effective circuits into `out`.
    pub fn circuits_into(&self, out: &mut Circuits<T>) {
        self.spec.circuits_into(&self.params, out);
    }

    /// The effective circuits.
    pub fn circuits(&self) -> Circuits<T> {
        let mut c = Circuits::zeros(&self.spec);
        self.circuits_into(&mut c);
        c
    }

    /// Chain rule from circuit gradients (`g.kq`, `g.ov`) to parameter gradients (overwrites `grad`).
    pub fn backprop_circuits(&self, g: &Circuits<T>, grad: &mut [T]) {
        self.spec.backprop_circuits(&self.params, g, grad);
    }

    /// A short description, e.g. "softmax/full H=2 d=5".
    pub fn describe(&self) -> String {
        if let Net::Stack(s) = &self.spec.net {
            return format!(
                "{:?} transformer T={}{} H={} d={}",
                s.attention,
                s.layers,
                if s.looped { " looped" } else { "" },
                s.heads,
                self.spec.d
            );
        }
        if let Net::Iv(s) = &self.spec.net {
            return format!(
                "IV two-stage q={} p={} H={} T2={}",
                s.iv.q, s.iv.p, s.st2.heads, s.st2.layers
            );
        }
        format!(
            "{:?}/{:?} H={} d={} n_out={}",
            self.spec.attention, self.spec.param, self.spec.heads, self.spec.d, self.spec.n_out
        )
    }
}
