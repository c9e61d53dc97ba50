//! The configuration section of one-layer attention: the shape and options of a model
//! (everything but the parameter values), its parameter layout, and the dispatch to its
//! parametrisations ([`super::param`]).
use super::act::Act;
use super::circuits::Circuits;
use super::param;
use crate::config::{Activation, Arch, AttentionKind, Config, LinNorm, Param};
use crate::tensor::{layout, TensorInfo};
use crate::{Error, Result, Scalar};
use alloc::format;
use alloc::vec;
use alloc::vec::Vec;

/// Shape and options of a one-layer attention model.
#[derive(Debug, Clone, PartialEq)]
pub struct AttentionSpec {
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
}

/// The linear-attention normaliser L_0 for context length `len`.
pub fn lin_norm_of(n: LinNorm, len: usize) -> f64 {
    match n {
        LinNorm::Len => len as f64,
        LinNorm::LenPlusOne => (len + 1) as f64,
        LinNorm::Value(x) => x,
    }
}

impl AttentionSpec {
    /// The one-layer model a config describes; [`Error::Unsupported`] for another family.
    pub fn from_config(cfg: &Config) -> Result<Self> {
        cfg.validate()?;
        if cfg.model.arch != Arch::Attention {
            return Err(Error::Unsupported(format!(
                "model.arch = {} is not one attention layer",
                cfg.model.arch.as_str()
            )));
        }
        Ok(Self::of_config(cfg))
    }

    /// The one-layer model a validated config describes (its `model.*` and `task.*` keys).
    pub fn of_config(cfg: &Config) -> Self {
        AttentionSpec {
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
        }
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

    /// Floating-point operations of one training step's forward + backward at context length
    /// `len` and batch `batch`, per sequence and head `2 (2 E^2 + 4 K E + 3 n_out E + 3 K)` (E the
    /// token width, K the keys; a multiply-add counts 2; `exp` and the data generation are not
    /// counted), times heads and batch.
    pub fn step_flops(&self, len: usize, batch: usize) -> f64 {
        let (e, k) = (self.e(), self.keys(len));
        let per = 2 * (2 * e * e + 4 * k * e + 3 * self.n_out * e + 3 * k);
        (per * self.heads * batch) as f64
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
        layout(shapes)
    }

    /// Total number of parameters.
    pub fn n_params(&self) -> usize {
        self.tensors().iter().map(|t| t.len()).sum()
    }

    /// The effective circuits of parameters `params` (n_params values) into `out`: each
    /// parametrisation's forward ([`param`]).
    pub fn circuits_into<T: Scalar>(&self, params: &[T], out: &mut Circuits<T>) {
        out.clear();
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
