//! The two-block CoT model of in-context IV regression (§6.2, eqs. (9)–(11), Algorithm 2).
//!
//! Stage 1, a one-layer block over `[z; x]` ((q+p)-wide tokens), is trained to predict `x_q` at
//! the query (the training mask). Its fitted covariates are `xhat_l` = the stage-1 attention output
//! in the x-rows **with the residual excluded**, for every column, computed with the inference
//! mask that also hides each context token from itself (a leave-one-out fit; spec §6.2 [A]) and
//! with each column's own x hidden in its query role, as the query's is in training ([A]).
//! Stage 2, a looped block over `[sg(xhat); y]`, predicts `y_q`. The loss is the sum of the
//! stage-1 per-coordinate MSE and the stage-2 MSE; the stop-gradient means stage 1 learns from its
//! own term only.
pub mod eval;
pub mod objective;

use crate::data::iv::{Iv, IvBatch};
use crate::data::Batch;
use crate::families::stack::kernels::StackRunner;
use crate::families::stack::layers::{self, Pass, StackCircuits, StackSpec};
use crate::rng::Domain;
use crate::tensor::{layout, TensorInfo};
use crate::{Error, Result, Scalar};
use alloc::format;
use alloc::vec;
use alloc::vec::Vec;

/// The two blocks.
#[derive(Debug, Clone, PartialEq)]
pub struct IvSpec {
    pub iv: Iv,
    /// Stage 1: D = q + p, n_out = p.
    pub st1: StackSpec,
    /// Stage 2: D = p + 1, n_out = 1.
    pub st2: StackSpec,
}

impl IvSpec {
    /// The tensors: stage 1's `st1.k`, `st1.q`, `st1.v`, `st1.o`, then stage 2's.
    pub fn tensors(&self) -> Vec<TensorInfo> {
        let mut shapes = self.st1.tensor_shapes(["st1.k", "st1.q", "st1.v", "st1.o"]);
        shapes.extend(self.st2.tensor_shapes(["st2.k", "st2.q", "st2.v", "st2.o"]));
        layout(shapes)
    }
    /// Floating-point operations of one training step: stage 1's loss and gradient
    /// ([`StackSpec::step_flops`]), its forward over every column for the fitted covariates (the
    /// leave-one-out pass; counted with all K keys), and stage 2's loss and gradient.
    pub fn step_flops(&self, keys: usize, batch: usize) -> f64 {
        let (f, _, _) = layers::column_flops(self.st1.e, keys);
        let xhat = self.st1.layers * (keys + 1) * f * self.st1.heads * batch;
        self.st1.step_flops(keys, batch) + xhat as f64 + self.st2.step_flops(keys, batch)
    }
    /// Parameters: stage 1's k, q, v, o, then stage 2's.
    pub fn n_params(&self) -> usize {
        self.st1.n_params() + self.st2.n_params()
    }
    /// Check both blocks' shapes.
    pub fn check(&self) -> Result<()> {
        if self.st1.e != self.iv.q + self.iv.p || self.st1.n_out != self.iv.p {
            return Err(Error::InvalidConfig(format!(
                "IV stage 1 needs D = q + p = {} with p = {} outputs",
                self.iv.q + self.iv.p,
                self.iv.p
            )));
        }
        if self.st2.e != self.iv.p + 1 || self.st2.n_out != 1 {
            return Err(Error::InvalidConfig(format!(
                "IV stage 2 needs D = p + 1 = {} with one output",
                self.iv.p + 1
            )));
        }
        self.st1.check()?;
        self.st2.check()
    }
    /// Both blocks' circuits.
    pub fn circuits<T: Scalar>(&self, params: &[T]) -> (StackCircuits<T>, StackCircuits<T>) {
        let n1 = self.st1.n_params();
        let mut c1 = StackCircuits::zeros(&self.st1);
        let mut c2 = StackCircuits::zeros(&self.st2);
        layers::circuits_forward(&self.st1, &params[..n1], &mut c1);
        layers::circuits_forward(&self.st2, &params[n1..], &mut c2);
        (c1, c2)
    }
}

/// An all-zero batch of both views for `n` sequences of length `len`.
pub fn empty_batch<T: Scalar>(spec: &IvSpec, n: usize, len: usize) -> Result<IvBatch<T>> {
    IvBatch::try_zeros(spec.iv, n, len)
}

/// Fill `batch` with the sequences of (seed, domain, step), sequence b from stream
/// (seed, domain, step, b), through the engine (which may sample them in parallel; the same
/// values as [`Iv::sample_batch`]).
pub fn sample_into<T: Scalar>(
    iv: &Iv,
    runner: &mut StackRunner<T>,
    seed: u64,
    domain: Domain,
    step: u64,
    batch: &mut IvBatch<T>,
) -> Result<()> {
    let (n, len) = (batch.st1.n, batch.st1.len);
    if batch.st1.e() != iv.q + iv.p || batch.st1.n_out != iv.p || batch.y.len() != n * len {
        return Err(Error::Shape(format!(
            "the IV batch does not have q = {} instruments and p = {} regressors",
            iv.q, iv.p
        )));
    }
    runner.fill_rows(n, &mut batch.rows(), &|b, rows, _| {
        iv.write_sequence(seed, domain, step, b as u64, len, rows)
    })
}

/// Stage 1's fitted covariates for every column (n x (L+1) x p): the x-rows of the attention
/// output under the inference mask, residual excluded.
pub fn xhat<T: Scalar>(
    spec: &IvSpec,
    c1: &StackCircuits<T>,
    st1: &Batch<T>,
    runner: &mut StackRunner<T>,
) -> Result<Vec<T>> {
    let (q, p) = (spec.iv.q, spec.iv.p);
    let e = q + p;
    // Every column in its query role with its x hidden, as stage 1 sees the query in training
    // (x_q unknown, zero): the scores s_ij = z_i . Phi z_j are linear in the query z_j, so that is
    // Phi with its query-x columns zeroed. Keys and values keep their x. Without it the block of
    // Phi that reads a query's x, which training never reaches (it multiplies x_q = 0), weighs
    // the context columns' own x into their scores and x-hat degrades as stage 1 trains.
    let mut hidden = c1.clone();
    for row in hidden.phi.chunks_exact_mut(e) {
        row[q..].fill(T::zero());
    }
    let mut toks = vec![T::zero(); st1.z.len()];
    let pass = Pass {
        layers: spec.st1.layers,
        exclude_self: true,
    };
    runner.forward(&spec.st1, &hidden, pass, st1, &mut toks)?;
    let cols = st1.n * (st1.len + 1);
    let mut out = vec![T::zero(); cols * p];
    for c in 0..cols {
        for j in 0..p {
            out[c * p + j] = toks[c * e + q + j] - st1.z[c * e + q + j];
        }
    }
    Ok(out)
}

/// The stage-2 batch `[xhat; y]`, query `[xhat_q; 0]`, targets `y_q`.
pub fn stage2_batch<T: Scalar>(spec: &IvSpec, b: &IvBatch<T>, xh: &[T]) -> Result<Batch<T>> {
    let (p, n, len) = (spec.iv.p, b.st1.n, b.st1.len);
    let mut out = Batch::try_zeros(n, len, p, 1)?;
    let e = p + 1;
    for s in 0..n {
        for l in 0..=len {
            let c = s * (len + 1) + l;
            let tok = &mut out.z[c * e..(c + 1) * e];
            tok[..p].copy_from_slice(&xh[c * p..(c + 1) * p]);
            tok[p] = if l < len { b.y[s * len + l] } else { T::zero() };
        }
        out.y[s] = b.yq[s];
    }
    Ok(out)
}

/// Loss (stage 1 + stage 2) and parameter gradient (overwrites `grad`); returns
/// (total, stage-1 loss, stage-2 loss).
pub fn loss_grad<T: Scalar>(
    spec: &IvSpec,
    params: &[T],
    batch: &IvBatch<T>,
    runner: &mut StackRunner<T>,
    grad: &mut [T],
) -> Result<(T, T, T)> {
    if params.len() != spec.n_params() || grad.len() != spec.n_params() {
        return Err(Error::Shape(format!(
            "the IV model has {} parameters",
            spec.n_params()
        )));
    }
    let (c1, c2) = spec.circuits(params);
    let mut g1 = StackCircuits::zeros(&spec.st1);
    let mut g2 = StackCircuits::zeros(&spec.st2);
    let l1 = runner.loss_grad(&spec.st1, &c1, &batch.st1, &mut g1)?;
    // sg[xhat]: stage 2 sees stage 1's output as data
    let xh = xhat(spec, &c1, &batch.st1, runner)?;
    let b2 = stage2_batch(spec, batch, &xh)?;
    let l2 = runner.loss_grad(&spec.st2, &c2, &b2, &mut g2)?;
    let n1 = spec.st1.n_params();
    let (ga, gb) = grad.split_at_mut(n1);
    layers::circuits_backward(&spec.st1, &params[..n1], &g1, ga);
    layers::circuits_backward(&spec.st2, &params[n1..], &g2, gb);
    Ok((l1 + l2, l1, l2))
}

/// The two-stage predictions of `y_q` for every sequence of `batch`.
pub fn predict<T: Scalar>(
    spec: &IvSpec,
    params: &[T],
    batch: &IvBatch<T>,
    runner: &mut StackRunner<T>,
) -> Result<Vec<T>> {
    let (c1, c2) = spec.circuits(params);
    let xh = xhat(spec, &c1, &batch.st1, runner)?;
    let b2 = stage2_batch(spec, batch, &xh)?;
    let mut out = vec![T::zero(); b2.n];
    runner.predict(&spec.st2, &c2, Pass::of(&spec.st2), &b2, &mut out)?;
    Ok(out)
}
