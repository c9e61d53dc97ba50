//! T attention layers with residuals (eq. (3)), looped (one parameter set applied T times) or not
//! (one set per layer), the readout `yhat = Z^(T)[last n_out rows, query]`, and the chain rule
//! between the parameters (K, Q, V, O per head) and the effective circuits.
use super::layer::{self, HeadCache, Mask};
use crate::config::AttentionKind;
use crate::data::Batch;
use crate::{Error, Result, Scalar};
use alloc::format;
use alloc::vec;
use alloc::vec::Vec;

/// Shape and options of a stack (everything but the parameter values).
#[derive(Debug, Clone, PartialEq)]
pub struct StackSpec {
    /// Token width D (d + n_out for regression: d + 1).
    pub e: usize,
    /// Outputs read at the query column (its last `n_out` rows).
    pub n_out: usize,
    pub heads: usize,
    /// Number of layers T (applications of the block when looped).
    pub layers: usize,
    /// One parameter set for all layers.
    pub looped: bool,
    pub attention: AttentionKind,
    /// Score scale folded into Phi = scale K^T Q.
    pub scale: f64,
}

impl StackSpec {
    /// Parameter sets: 1 when looped, T otherwise.
    pub fn sets(&self) -> usize {
        if self.looped {
            1
        } else {
            self.layers
        }
    }
    /// The parameter set layer t uses.
    #[inline]
    pub fn set_of(&self, t: usize) -> usize {
        if self.looped {
            0
        } else {
            t
        }
    }
    /// Values per circuit kind (Phi or Psi) of one parameter set: H D^2.
    pub fn per_set(&self) -> usize {
        self.heads * self.e * self.e
    }
    /// Number of parameters: K, Q, V, O of every head of every set.
    pub fn n_params(&self) -> usize {
        4 * self.sets() * self.per_set()
    }
    /// Floating-point operations of one training step's forward + backward (T layers over N =
    /// K + 1 columns, H heads, batch B): the arithmetic the loss gradient needs, i.e.
    /// [`column_flops`] over the N columns of layers 1..T-1 and the query column of layer T (the
    /// loss reads nothing else), without the first layer's input gradient; times H and B. Data
    /// generation is not counted.
    pub fn step_flops(&self, keys: usize, batch: usize) -> f64 {
        let (n, t) = (keys + 1, self.layers);
        let (f, b, input) = column_flops(self.e, keys);
        let cols = (t - 1) * n + 1;
        let first = if t == 1 { 1 } else { n };
        let per = cols * (f + b) - first * input;
        (per * self.heads * batch) as f64
    }
    /// The shape of each of the tensors `k`, `q`, `v`, `o`: [sets, H, D, D].
    pub fn tensor_shape(&self) -> Vec<usize> {
        vec![self.sets(), self.heads, self.e, self.e]
    }
    /// The tensors named `names` (k, q, v, o), [sets, H, D, D] each, one after another.
    pub fn tensor_shapes(&self, names: [&'static str; 4]) -> Vec<(&'static str, Vec<usize>)> {
        names
            .into_iter()
            .map(|n| (n, self.tensor_shape()))
            .collect()
    }
    /// The mask of training and prediction (the query is never a key).
    pub fn mask(&self) -> Mask {
        Mask {
            attention: self.attention,
            exclude_self: false,
        }
    }
    /// Check the shape rules (T >= 1, D >= 2, n_out < D).
    pub fn check(&self) -> Result<()> {
        if self.layers == 0
            || self.heads == 0
            || self.e < 2
            || self.n_out == 0
            || self.n_out >= self.e
        {
            return Err(Error::InvalidConfig(format!(
                "a transformer needs T >= 1 layers, H >= 1 heads and 1 <= n_out < D (got T = {}, H = {}, D = {}, n_out = {})",
                self.layers, self.heads, self.e, self.n_out
            )));
        }
        Ok(())
    }
}

/// Effective circuits of a stack: `phi`, `psi` are [sets, H, D, D] (Phi = scale K^T Q, Psi = O V).
#[derive(Debug, Clone, PartialEq)]
pub struct StackCircuits<T> {
    pub sets: usize,
    pub heads: usize,
    pub e: usize,
    pub phi: Vec<T>,
    pub psi: Vec<T>,
}

impl<T: Scalar> StackCircuits<T> {
    /// All zero (also the gradient accumulator).
    pub fn zeros(spec: &StackSpec) -> Self {
        let n = spec.sets() * spec.per_set();
        StackCircuits {
            sets: spec.sets(),
            heads: spec.heads,
            e: spec.e,
            phi: vec![T::zero(); n],
            psi: vec![T::zero(); n],
        }
    }
    /// Reset to zero.
    pub fn clear(&mut self) {
        self.phi.iter_mut().for_each(|x| *x = T::zero());
        self.psi.iter_mut().for_each(|x| *x = T::zero());
    }
    /// Phi of all heads of set s ([H, D, D]).
    pub fn phi_set(&self, s: usize) -> &[T] {
        let n = self.heads * self.e * self.e;
        &self.phi[s * n..(s + 1) * n]
    }
    /// Psi of all heads of set s ([H, D, D]).
    pub fn psi_set(&self, s: usize) -> &[T] {
        let n = self.heads * self.e * self.e;
        &self.psi[s * n..(s + 1) * n]
    }
    /// Add another accumulator of the same shape.
    pub fn add(&mut self, o: &StackCircuits<T>) {
        for (a, b) in self.phi.iter_mut().zip(&o.phi) {
            *a += *b;
        }
        for (a, b) in self.psi.iter_mut().zip(&o.psi) {
            *a += *b;
        }
    }
    /// Widened to f64.
    pub fn to_f64(&self) -> StackCircuits<f64> {
        StackCircuits {
            sets: self.sets,
            heads: self.heads,
            e: self.e,
            phi: self.phi.iter().map(|x| x.to_f64()).collect(),
            psi: self.psi.iter().map(|x| x.to_f64()).collect(),
        }
    }
}

/// Parameters -> circuits: per set and head, `Phi = scale K^T Q` and `Psi = O V` (`params` holds
/// the tensors k, q, v, o, each [sets, H, D, D], in that order).
pub fn circuits_forward<T: Scalar>(spec: &StackSpec, params: &[T], out: &mut StackCircuits<T>) {
    let (n, dd) = (spec.sets() * spec.per_set(), spec.e);
    let (k, q, v, o) = (
        &params[..n],
        &params[n..2 * n],
        &params[2 * n..3 * n],
        &params[3 * n..4 * n],
    );
    let sc = T::of(spec.scale);
    for m in 0..spec.sets() * spec.heads {
        let off = m * dd * dd;
        let (k, q, v, o) = (&k[off..], &q[off..], &v[off..], &o[off..]);
        for a in 0..dd {
            for b in 0..dd {
                // Phi[a][b] = scale sum_r K[r][a] Q[r][b]; Psi[a][b] = sum_r O[a][r] V[r][b]
                let (mut f, mut s) = (T::zero(), T::zero());
                for r in 0..dd {
                    f += k[r * dd + a] * q[r * dd + b];
                    s += o[a * dd + r] * v[r * dd + b];
                }
                out.phi[off + a * dd + b] = sc * f;
                out.psi[off + a * dd + b] = s;
            }
        }
    }
}

/// Circuits -> parameters (the backward of [`circuits_forward`], overwrites `grad`):
/// `dK = scale Q dPhi^T`, `dQ = scale K dPhi`, `dO = dPsi V^T`, `dV = O^T dPsi`.
pub fn circuits_backward<T: Scalar>(
    spec: &StackSpec,
    params: &[T],
    g: &StackCircuits<T>,
    grad: &mut [T],
) {
    let (n, dd) = (spec.sets() * spec.per_set(), spec.e);
    let sc = T::of(spec.scale);
    let (gk, rest) = grad.split_at_mut(n);
    let (gq, rest) = rest.split_at_mut(n);
    let (gv, go) = rest.split_at_mut(n);
    for m in 0..spec.sets() * spec.heads {
        let off = m * dd * dd;
        let k = &params[off..];
        let q = &params[n + off..];
        let v = &params[2 * n + off..];
        let o = &params[3 * n + off..];
        let (dphi, dpsi) = (&g.phi[off..], &g.psi[off..]);
        for r in 0..dd {
            for a in 0..dd {
                let (mut dk, mut dq, mut dov, mut dvv) =
                    (T::zero(), T::zero(), T::zero(), T::zero());
                for b in 0..dd {
                    // dK[r][a] = scale sum_b Q[r][b] dPhi[a][b]; dQ[r][a] = scale sum_b K[r][b] dPhi[b][a]
                    dk += q[r * dd + b] * dphi[a * dd + b];
                    dq += k[r * dd + b] * dphi[b * dd + a];
                    // dO[r][a] = sum_b dPsi[r][b] V[a][b]; dV[r][a] = sum_b O[b][r] dPsi[b][a]
                    dov += dpsi[r * dd + b] * v[a * dd + b];
                    dvv += o[b * dd + r] * dpsi[b * dd + a];
                }
                gk[off + r * dd + a] = sc * dk;
                gq[off + r * dd + a] = sc * dq;
                go[off + r * dd + a] = dov;
                gv[off + r * dd + a] = dvv;
            }
        }
    }
}

/// Options of a forward pass beyond the spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pass {
    /// Layers to apply (the block stacked: `k T` applies a looped block k times; non-looped sets
    /// repeat cyclically).
    pub layers: usize,
    /// Context columns do not attend to themselves.
    pub exclude_self: bool,
}

impl Pass {
    /// The spec's own pass.
    pub fn of(spec: &StackSpec) -> Pass {
        Pass {
            layers: spec.layers,
            exclude_self: false,
        }
    }
}

/// Forward/backward workspace of one sequence: every layer's input tokens and head caches.
#[derive(Debug, Clone, Default)]
pub struct Workspace<T> {
    /// `zs[t]` is the input of layer t; `zs[T]` the output (each N x D).
    pub zs: Vec<Vec<T>>,
    caches: Vec<Vec<HeadCache<T>>>,
    dz: Vec<T>,
    dz2: Vec<T>,
}

/// Forward one sequence `z` (N x D) through `pass.layers` layers, keeping what the backward needs
/// in `ws` (`ws.zs[T]` is the output).
pub fn forward_sequence<T: Scalar>(
    spec: &StackSpec,
    c: &StackCircuits<T>,
    pass: Pass,
    z: &[T],
    n: usize,
    ws: &mut Workspace<T>,
) {
    let dd = spec.e;
    let nl = pass.layers;
    ws.zs.resize_with(nl + 1, Vec::new);
    ws.caches.resize_with(nl, Vec::new);
    ws.zs[0].clear();
    ws.zs[0].extend_from_slice(z);
    let mask = Mask {
        attention: spec.attention,
        exclude_self: pass.exclude_self,
    };
    for t in 0..nl {
        let s = if spec.looped { 0 } else { t % spec.layers };
        let (head, tail) = ws.zs.split_at_mut(t + 1);
        let out = &mut tail[0];
        out.resize(n * dd, T::zero());
        layer::forward(
            &head[t],
            n,
            dd,
            c.phi_set(s),
            c.psi_set(s),
            spec.heads,
            mask,
            &mut ws.caches[t],
            out,
        );
    }
}

/// Backward of [`forward_sequence`] (the spec's own pass) from `dout`, the gradient of the final
/// tokens (N x D), accumulating circuit gradients into `g`.
pub fn backward_sequence<T: Scalar>(
    spec: &StackSpec,
    c: &StackCircuits<T>,
    n: usize,
    ws: &mut Workspace<T>,
    dout: &[T],
    g: &mut StackCircuits<T>,
) {
    let dd = spec.e;
    let ph = spec.per_set();
    ws.dz.clear();
    ws.dz.extend_from_slice(dout);
    ws.dz2.resize(n * dd, T::zero());
    for t in (0..spec.layers).rev() {
        let s = spec.set_of(t);
        layer::backward(
            &ws.zs[t],
            n,
            dd,
            c.phi_set(s),
            c.psi_set(s),
            spec.heads,
            spec.mask(),
            &ws.caches[t],
            &ws.dz,
            &mut ws.dz2,
            &mut g.phi[s * ph..(s + 1) * ph],
            &mut g.psi[s * ph..(s + 1) * ph],
        );
        core::mem::swap(&mut ws.dz, &mut ws.dz2);
    }
}

/// Loss of one sequence and its circuit gradient (accumulated into `g`), with the loss weight
/// `w`: `w sum_o (yhat_o - y_o)^2`, yhat the last n_out rows of the query column.
pub fn sequence_loss_grad<T: Scalar>(
    spec: &StackSpec,
    c: &StackCircuits<T>,
    z: &[T],
    y: &[T],
    w: T,
    ws: &mut Workspace<T>,
    g: &mut StackCircuits<T>,
) -> T {
    let (dd, no) = (spec.e, spec.n_out);
    let n = z.len() / dd;
    forward_sequence(spec, c, Pass::of(spec), z, n, ws);
    let out = &ws.zs[spec.layers];
    let q = (n - 1) * dd + dd - no;
    let mut dout = vec![T::zero(); n * dd];
    let mut loss = T::zero();
    for o in 0..no {
        let r = out[q + o] - y[o];
        loss += r * r;
        dout[q + o] = (w + w) * r;
    }
    backward_sequence(spec, c, n, ws, &dout, g);
    loss * w
}

/// Check a batch against a stack spec and circuits.
pub fn check_batch<T: Scalar>(spec: &StackSpec, c: &StackCircuits<T>, b: &Batch<T>) -> Result<()> {
    spec.check()?;
    if b.e() != spec.e || b.n_out != spec.n_out {
        return Err(Error::Shape(format!(
            "batch has tokens of width {} with {} outputs, the transformer {} with {}",
            b.e(),
            b.n_out,
            spec.e,
            spec.n_out
        )));
    }
    if b.n == 0 {
        return Err(Error::Shape("empty batch".into()));
    }
    if b.len < 2 {
        return Err(Error::Shape(format!(
            "a transformer needs L >= 2 context tokens (got L = {})",
            b.len
        )));
    }
    if b.z.len() != b.n * (b.len + 1) * b.e() || b.y.len() != b.n * b.n_out {
        return Err(Error::Shape("batch buffers do not match its shape".into()));
    }
    let n = spec.sets() * spec.per_set();
    if c.sets != spec.sets()
        || c.heads != spec.heads
        || c.e != spec.e
        || c.phi.len() != n
        || c.psi.len() != n
    {
        return Err(Error::Shape("circuits do not match the transformer".into()));
    }
    Ok(())
}

impl<T: Scalar> StackCircuits<T> {
    /// The circuits at temperature tau: `Phi / tau` in every layer and head.
    pub fn tempered(&self, tau: f64) -> Result<StackCircuits<T>> {
        crate::tempered::check_tau(tau)?;
        let mut c = self.clone();
        crate::tempered::divide_logits(&mut c.phi, tau);
        Ok(c)
    }
}

/// Floating-point operations of one head on one column (K keys, tokens of width E) of a
/// softmax attention layer: forward `4 K E + 4 E^2 + 3 K` (p = Phi z, the scores, the softmax,
/// the mixing m = sum a z, Psi m), backward `8 K E + 8 E^2 + 4 K` (the circuit gradients, the
/// score and mixing gradients, the softmax's), of which `4 K E + 2 E^2` is the gradient of the
/// layer's input. A multiply-add counts 2; `exp` is not counted.
pub fn column_flops(e: usize, keys: usize) -> (usize, usize, usize) {
    (
        4 * keys * e + 4 * e * e + 3 * keys,
        8 * keys * e + 8 * e * e + 4 * keys,
        4 * keys * e + 2 * e * e,
    )
}
