//! [`Gpt2Simd`]: the GPT-2 family's engine (Garg et al. 2022's in-context learner,
//! [`icl_core::families::gpt2`]). The batch is cut into fixed chunks of [`GPT2_CHUNK`] prompts;
//! a chunk's N = B T rows (T = 2K tokens a prompt) go through every matrix of the model as one
//! product ([`gemm`], the `matrixmultiply` crate), with the row operations between them vector
//! loops ([`ops`], compiled at the baseline and inside the AVX2 / AVX-512 entry points of
//! [`crate::dispatch`]). The chunks run in parallel (rayon), each with its own activations and
//! its own gradient buffer; the chunks' losses and gradients are added in chunk order at the
//! end, so the result does not depend on the thread count.
//!
//! Equal to [`icl_core::engine::Gpt2Reference`] up to rounding (the products' summation order, the
//! exponential's polynomial, biases and residuals added before a product instead of after):
//! measured ~1e-15 relative (norm-wise) in f64 and ~5e-7 in f32 on the conformance suite.
//!
//! **Reproducibility.** On one machine the bytes do not depend on the thread count (fixed chunks,
//! gradients added in chunk order) nor on the forced vector level (the row operations round the
//! same way at every width; `tests/gpt2.rs` checks both). The matrix products' micro-kernel is
//! chosen by `matrixmultiply` from the CPU at run time (AVX-512, FMA + AVX2, AVX, or portable),
//! whatever the engine's level: kernels that fuse the multiply-add round differently from those
//! that do not, so machines with other instruction sets can give other bits.
//!
//! **Memory.** Each chunk in flight (at most one per thread) holds 20 N C + H B T^2 + 4 N values
//! a layer (N = B T rows: the reference's per-prompt workspace plus GELU's tanh) and its
//! backward's buffers; every chunk past the first holds a gradient of the model's size until
//! the final sum. Speed: `examples/gpt2.rs`.
pub mod gemm;
pub mod ops;
pub mod pass;

use crate::dispatch::{self, Kernel, Level};
use crate::par;
use icl_core::families::gpt2::model::Gpt2Tensors;
use icl_core::families::gpt2::{Gpt2Kernels, Gpt2Spec};
use icl_core::{Batch, Error, Result};
use pass::{ChunkWs, Gpt2Scalar};
use std::sync::Mutex;

/// Prompts per chunk: the unit of parallel work and of the fixed reduction order (8 prompts of
/// Garg et al.'s 41 pairs are 656 rows a product).
pub const GPT2_CHUNK: usize = 8;

/// Parameters per block of the final reduction (each block adds the chunks' gradients in chunk
/// order; the blocks run in parallel).
const SUM_BLOCK: usize = 1 << 14;

/// The SIMD engine for GPT-2 models.
#[derive(Debug)]
pub struct Gpt2Simd<T> {
    level: Level,
    /// Workspaces of the chunks in flight (one per busy thread at most), reused across calls.
    pool: Mutex<Vec<ChunkWs<T>>>,
    /// The gradients of chunks 1.. (chunk 0 writes into the caller's buffer).
    partials: Vec<Vec<T>>,
}

impl<T: Gpt2Scalar> Default for Gpt2Simd<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Gpt2Scalar> Gpt2Simd<T> {
    /// At the process's [`dispatch::level`].
    pub fn new() -> Self {
        Self::with_level(dispatch::level())
    }
    /// At `level` (capped at what the CPU has). The level sets the row operations' vector
    /// width; the matrix products pick their kernel from the CPU themselves.
    pub fn with_level(level: Level) -> Self {
        Gpt2Simd {
            level: level.min(dispatch::detected()),
            pool: Mutex::new(Vec::new()),
            partials: Vec::new(),
        }
    }
    /// The level the row operations run at.
    pub fn level(&self) -> Level {
        self.level
    }
}

/// A workspace from the pool (or a new one).
fn take<T>(pool: &Mutex<Vec<ChunkWs<T>>>) -> ChunkWs<T>
where
    ChunkWs<T>: Default,
{
    pool.lock()
        .unwrap_or_else(|e| e.into_inner())
        .pop()
        .unwrap_or_default()
}

fn give<T>(pool: &Mutex<Vec<ChunkWs<T>>>, ws: ChunkWs<T>) {
    pool.lock().unwrap_or_else(|e| e.into_inner()).push(ws);
}

/// One chunk's loss and gradient (into `grad`, overwritten).
struct LossGrad<'a, T> {
    spec: &'a Gpt2Spec,
    p: &'a Gpt2Tensors<&'a [T]>,
    batch: &'a Batch<T>,
    b0: usize,
    nb: usize,
    w: T,
    ws: &'a mut ChunkWs<T>,
    grad: &'a mut [T],
}

impl<T: Gpt2Scalar> Kernel for LossGrad<'_, T> {
    type Out = Result<T>;
    #[inline(always)]
    fn run(self) -> Result<T> {
        let LossGrad {
            spec,
            p,
            batch,
            b0,
            nb,
            w,
            ws,
            grad,
        } = self;
        let k = batch.len + 1;
        grad.iter_mut().for_each(|v| *v = T::zero());
        let mut g = Gpt2Tensors::new_mut(spec, grad)?;
        ws.load_batch(spec, batch, b0, nb);
        ws.forward(spec, p, nb, k);
        let loss = ws.loss(nb, k, w);
        ws.backward(spec, p, &mut g, nb, k);
        Ok(loss)
    }
}

/// One chunk's predictions (into `out: [nb, k]`).
struct Predict<'a, T> {
    spec: &'a Gpt2Spec,
    p: &'a Gpt2Tensors<&'a [T]>,
    xs: &'a [T],
    ys: &'a [T],
    nb: usize,
    k: usize,
    ws: &'a mut ChunkWs<T>,
    out: &'a mut [T],
}

impl<T: Gpt2Scalar> Kernel for Predict<'_, T> {
    type Out = ();
    #[inline(always)]
    fn run(self) {
        let Predict {
            spec,
            p,
            xs,
            ys,
            nb,
            k,
            ws,
            out,
        } = self;
        ws.load_prompts(spec, xs, ys, nb, k);
        ws.forward(spec, p, nb, k);
        out.copy_from_slice(&ws.preds[..nb * k]);
    }
}

/// The checks an engine cannot do without (the runner does the rest): a valid spec, K pairs
/// the position table holds, the parameter count.
fn check(spec: &Gpt2Spec, params: usize, k: usize) -> Result<()> {
    spec.validate()?;
    spec.check_pairs(k)?;
    if params != spec.n_params() {
        return Err(Error::Shape(format!(
            "gpt2: {params} parameters given, the model has {}",
            spec.n_params()
        )));
    }
    Ok(())
}

impl<T: Gpt2Scalar> Gpt2Kernels<T> for Gpt2Simd<T> {
    fn name(&self) -> &'static str {
        "simd"
    }

    /// In parallel, one prompt per task, the results kept in index order and the first error
    /// by index returned (rayon's own `Result` collection returns any one of several errors):
    /// the sequential result at any thread count.
    fn map_prompts(&self, n: usize, f: &(dyn Fn(usize) -> Result<f64> + Sync)) -> Result<Vec<f64>> {
        par::map(n, f).into_iter().collect()
    }

    fn loss_grad(
        &mut self,
        spec: &Gpt2Spec,
        params: &[T],
        batch: &Batch<T>,
        grad: &mut [T],
    ) -> Result<T> {
        let (n, k, np) = (batch.n, batch.len + 1, params.len());
        check(spec, np, k)?;
        if grad.len() != np || n == 0 {
            return Err(Error::Shape(format!(
                "gpt2: a gradient of {} values for {np} parameters, {n} prompts",
                grad.len()
            )));
        }
        let p = Gpt2Tensors::new(spec, params)?;
        let chunks = n.div_ceil(GPT2_CHUNK);
        self.partials.resize_with(chunks - 1, Vec::new);
        let mut targets: Vec<&mut [T]> = core::iter::once(&mut *grad)
            .chain(self.partials.iter_mut().map(|v| {
                v.resize(np, T::zero());
                &mut v[..]
            }))
            .collect();
        let w = T::one() / T::of((n * k) as f64);
        let (level, pool, p) = (self.level, &self.pool, &p);
        let losses = par::map_mut(&mut targets, |ci, grad| {
            let b0 = ci * GPT2_CHUNK;
            let mut ws = take(pool);
            let job = LossGrad {
                spec,
                p,
                batch,
                b0,
                nb: GPT2_CHUNK.min(n - b0),
                w,
                ws: &mut ws,
                grad,
            };
            let loss = dispatch::run(level, job);
            give(pool, ws);
            loss
        });
        let mut loss = T::zero();
        for l in losses {
            loss += l?;
        }
        // grad = chunk 0 + chunk 1 + .. in chunk order, block by block
        let partials = &self.partials;
        let mut blocks: Vec<&mut [T]> = grad.chunks_mut(SUM_BLOCK).collect();
        par::each_mut(&mut blocks, |bi, blk| {
            for part in partials {
                ops::add(blk, &part[bi * SUM_BLOCK..][..blk.len()]);
            }
        });
        Ok(loss)
    }

    fn predict(
        &mut self,
        spec: &Gpt2Spec,
        params: &[T],
        xs: &[T],
        ys: &[T],
        n: usize,
        k: usize,
        out: &mut [T],
    ) -> Result<()> {
        check(spec, params.len(), k)?;
        let d = spec.d;
        if xs.len() != n * k * d || ys.len() != n * k || out.len() != n * k {
            return Err(Error::Shape(format!(
                "gpt2: n = {n} prompts of k = {k} pairs need xs [n, k, d], ys and out [n, k]"
            )));
        }
        let p = Gpt2Tensors::new(spec, params)?;
        let (level, pool, p) = (self.level, &self.pool, &p);
        let mut outs: Vec<&mut [T]> = out.chunks_mut(GPT2_CHUNK * k).collect();
        par::each_mut(&mut outs, |ci, out| {
            let (b0, nb) = (ci * GPT2_CHUNK, out.len() / k);
            let mut ws = take(pool);
            let job = Predict {
                spec,
                p,
                xs: &xs[b0 * k * d..][..nb * k * d],
                ys: &ys[b0 * k..][..nb * k],
                nb,
                k,
                ws: &mut ws,
                out,
            };
            dispatch::run(level, job);
            give(pool, ws);
        });
        Ok(())
    }
}
