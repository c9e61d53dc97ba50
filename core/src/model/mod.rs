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
pub mod attention;

use crate::config::{Activation, AttentionKind, Config, LinNorm, Param};
use crate::{Error, Result, Scalar};
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
pub use attention::{Act, HeadCache};

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

/// Low-rank key/query product (Zhang et al. 2025 ATTN_S): for one head with `k`, `q` of shape
/// [R, w] (w = E for full weights, d for the reduced form), add
/// `KQ[i][j] += scale sum_r k[r][i] q[r][j]` for i, j < w into `kq` (E x E, row-major).
fn kq_lowrank_forward<T: Scalar>(
    k: &[T],
    q: &[T],
    rank: usize,
    w: usize,
    e: usize,
    sc: T,
    kq: &mut [T],
) {
    for r in 0..rank {
        for i in 0..w {
            let kri = k[r * w + i] * sc;
            for j in 0..w {
                kq[i * e + j] += kri * q[r * w + j];
            }
        }
    }
}

/// Backward of [`kq_lowrank_forward`]: forward `KQ[i][j] += scale sum_r k[r][i] q[r][j]`, so
/// `dq[r][j] += scale sum_i k[r][i] dKQ[i][j]` and `dk[r][i] += scale sum_j q[r][j] dKQ[i][j]`.
#[allow(clippy::too_many_arguments)]
fn kq_lowrank_backward<T: Scalar>(
    k: &[T],
    q: &[T],
    rank: usize,
    w: usize,
    e: usize,
    sc: T,
    gkq: &[T],
    dk: &mut [T],
    dq: &mut [T],
) {
    for r in 0..rank {
        for i in 0..w {
            let kri = k[r * w + i] * sc;
            let mut acc = T::zero();
            for j in 0..w {
                let gij = gkq[i * e + j];
                dq[r * w + j] += kri * gij;
                acc += q[r * w + j] * gij;
            }
            dk[r * w + i] += acc * sc;
        }
    }
}

impl ModelSpec {
    /// The model a (validated) config describes.
    pub fn from_config(cfg: &Config) -> Result<Self> {
        cfg.validate()?;
        Ok(ModelSpec {
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

    /// First-order coefficient C_f of the activation (f ~ 1 + C_f x; spec §2.8), or `None` for linear attention.
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

    /// The values of a named tensor.
    pub fn tensor(&self, name: &str) -> Option<&[T]> {
        let t = self.spec.tensors().into_iter().find(|t| t.name == name)?;
        Some(&self.params[t.offset..t.offset + t.len()])
    }

    /// Compute the effective circuits into `out`.
    pub fn circuits_into(&self, out: &mut Circuits<T>) {
        let s = &self.spec;
        let (h_n, e, no, d) = (s.heads, s.e(), s.n_out, s.d);
        let sc = T::of(s.scale);
        let p = &self.params;
        out.clear();
        match s.param {
            Param::Full => {
                let (q, k, v, o) = (0, h_n * e * e, 2 * h_n * e * e, 3 * h_n * e * e);
                for h in 0..h_n {
                    let (qh, kh, vh) = (
                        &p[q + h * e * e..],
                        &p[k + h * e * e..],
                        &p[v + h * e * e..],
                    );
                    let kq = &mut out.kq[h * e * e..(h + 1) * e * e];
                    // KQ = scale K^T Q : KQ[i][j] = scale sum_r K[r][i] Q[r][j] (rank E)
                    kq_lowrank_forward(kh, qh, e, e, e, sc, kq);
                    // OV = O_h V_h : OV[o][c] = sum_r O[o][h E + r] V[r][c]
                    let ov = &mut out.ov[h * no * e..(h + 1) * no * e];
                    for oo in 0..no {
                        for r in 0..e {
                            let orr = p[o + oo * h_n * e + h * e + r];
                            for c in 0..e {
                                ov[oo * e + c] += orr * vh[r * e + c];
                            }
                        }
                    }
                }
            }
            Param::Merged => {
                for (dst, &src) in out.kq.iter_mut().zip(&p[..h_n * e * e]) {
                    *dst = src * sc;
                }
                out.ov.copy_from_slice(&p[h_n * e * e..]);
            }
            Param::Reduced => {
                for h in 0..h_n {
                    let w = p[h] * sc;
                    for i in 0..d {
                        out.kq[h * e * e + i * e + i] = w;
                    }
                    for oo in 0..no {
                        out.ov[h * no * e + oo * e + d + oo] = p[h_n + h * no + oo];
                    }
                }
            }
            Param::Separate => {
                // KQ = scale K^T Q (rank R) ; OV = ov
                let (r, q0, ov0) = (s.rank, h_n * s.rank * e, 2 * h_n * s.rank * e);
                for h in 0..h_n {
                    let (kh, qh) = (&p[h * r * e..], &p[q0 + h * r * e..]);
                    kq_lowrank_forward(
                        kh,
                        qh,
                        r,
                        e,
                        e,
                        sc,
                        &mut out.kq[h * e * e..(h + 1) * e * e],
                    );
                }
                out.ov.copy_from_slice(&p[ov0..]);
            }
            Param::MergedReduced => {
                // KQ_11 = scale U ; OV[o][d+o] = v[o]
                let v0 = h_n * d * d;
                for h in 0..h_n {
                    for a in 0..d {
                        for b in 0..d {
                            out.kq[h * e * e + a * e + b] = p[h * d * d + a * d + b] * sc;
                        }
                    }
                    for oo in 0..no {
                        out.ov[h * no * e + oo * e + d + oo] = p[v0 + h * no + oo];
                    }
                }
            }
            Param::SeparateReduced => {
                // KQ_11 = scale sum_r k_r q_r^T ; OV[o][d+o] = v[o]
                let (r, q0, v0) = (s.rank, h_n * s.rank * d, 2 * h_n * s.rank * d);
                for h in 0..h_n {
                    let (kh, qh) = (&p[h * r * d..], &p[q0 + h * r * d..]);
                    kq_lowrank_forward(
                        kh,
                        qh,
                        r,
                        d,
                        e,
                        sc,
                        &mut out.kq[h * e * e..(h + 1) * e * e],
                    );
                    for oo in 0..no {
                        out.ov[h * no * e + oo * e + d + oo] = p[v0 + h * no + oo];
                    }
                }
            }
        }
    }

    /// The effective circuits.
    pub fn circuits(&self) -> Circuits<T> {
        let mut c = Circuits::zeros(&self.spec);
        self.circuits_into(&mut c);
        c
    }

    /// Chain rule from circuit gradients (`g.kq`, `g.ov`) to parameter gradients (overwrites `grad`).
    pub fn backprop_circuits(&self, g: &Circuits<T>, grad: &mut [T]) {
        let s = &self.spec;
        let (h_n, e, no, d) = (s.heads, s.e(), s.n_out, s.d);
        let sc = T::of(s.scale);
        let p = &self.params;
        grad.iter_mut().for_each(|x| *x = T::zero());
        match s.param {
            Param::Full => {
                let (q, k, v, o) = (0, h_n * e * e, 2 * h_n * e * e, 3 * h_n * e * e);
                for h in 0..h_n {
                    let gkq = g.kq_head(h);
                    let gov = g.ov_head(h);
                    let hb = h * e * e;
                    // forward KQ = scale K^T Q (rank E): the shared low-rank backward
                    let (gq, gk) = grad[..k + (h + 1) * e * e].split_at_mut(k);
                    kq_lowrank_backward(
                        &p[k + hb..k + hb + e * e],
                        &p[q + hb..q + hb + e * e],
                        e,
                        e,
                        e,
                        sc,
                        gkq,
                        &mut gk[hb..hb + e * e],
                        &mut gq[hb..hb + e * e],
                    );
                    // forward OV[o][c] = sum_r O[o][hE+r] V[r][c]
                    //   => dO[o][hE+r] = sum_c dOV[o][c] V[r][c];  dV[r][c] = sum_o O[o][hE+r] dOV[o][c]
                    for oo in 0..no {
                        for r in 0..e {
                            let oi = o + oo * h_n * e + h * e + r;
                            let orr = p[oi];
                            let mut dov = T::zero();
                            for c in 0..e {
                                let goc = gov[oo * e + c];
                                dov += goc * p[v + hb + r * e + c];
                                grad[v + hb + r * e + c] += orr * goc;
                            }
                            grad[oi] += dov;
                        }
                    }
                }
            }
            Param::Merged => {
                // forward kq_eff = scale kq ; ov_eff = ov
                for (dst, &src) in grad.iter_mut().zip(&g.kq) {
                    *dst = src * sc;
                }
                grad[h_n * e * e..].copy_from_slice(&g.ov);
            }
            Param::Reduced => {
                // forward KQ[i][i] = scale omega (i < d) ; OV[o][d+o] = mu[o]
                for h in 0..h_n {
                    let gk = g.kq_head(h);
                    grad[h] = (0..d).fold(T::zero(), |acc, i| acc + gk[i * e + i]) * sc;
                    for oo in 0..no {
                        grad[h_n + h * no + oo] = g.ov_head(h)[oo * e + d + oo];
                    }
                }
            }
            Param::Separate => {
                // forward KQ = scale K^T Q (see kq_lowrank_backward) ; OV = ov  =>  dov = dOV
                let (r, q0) = (s.rank, h_n * s.rank * e);
                let (gk, rest) = grad.split_at_mut(q0);
                let (gq, gov) = rest.split_at_mut(q0);
                for h in 0..h_n {
                    kq_lowrank_backward(
                        &p[h * r * e..],
                        &p[q0 + h * r * e..],
                        r,
                        e,
                        e,
                        sc,
                        g.kq_head(h),
                        &mut gk[h * r * e..(h + 1) * r * e],
                        &mut gq[h * r * e..(h + 1) * r * e],
                    );
                }
                gov.copy_from_slice(&g.ov);
            }
            Param::MergedReduced => {
                // forward KQ[a][b] = scale U[a][b] (a, b < d) ; OV[o][d+o] = v[o]
                let v0 = h_n * d * d;
                for h in 0..h_n {
                    let gk = g.kq_head(h);
                    for a in 0..d {
                        for b in 0..d {
                            grad[h * d * d + a * d + b] = gk[a * e + b] * sc;
                        }
                    }
                    for oo in 0..no {
                        grad[v0 + h * no + oo] = g.ov_head(h)[oo * e + d + oo];
                    }
                }
            }
            Param::SeparateReduced => {
                // forward KQ_11 = scale sum_r k_r q_r^T ; OV[o][d+o] = v[o]
                let (r, q0) = (s.rank, h_n * s.rank * d);
                let (gk, rest) = grad.split_at_mut(q0);
                let (gq, gv) = rest.split_at_mut(q0);
                for h in 0..h_n {
                    kq_lowrank_backward(
                        &p[h * r * d..],
                        &p[q0 + h * r * d..],
                        r,
                        d,
                        e,
                        sc,
                        g.kq_head(h),
                        &mut gk[h * r * d..(h + 1) * r * d],
                        &mut gq[h * r * d..(h + 1) * r * d],
                    );
                    for oo in 0..no {
                        gv[h * no + oo] = g.ov_head(h)[oo * e + d + oo];
                    }
                }
            }
        }
    }

    /// A short description, e.g. "softmax/full H=2 d=5".
    pub fn describe(&self) -> String {
        format!(
            "{:?}/{:?} H={} d={} n_out={}",
            self.spec.attention, self.spec.param, self.spec.heads, self.spec.d, self.spec.n_out
        )
    }
}
