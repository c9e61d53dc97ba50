//! The engine seam of multi-layer transformers: batched loss + circuit gradient and batched
//! forward passes. Callers go through a [`StackRunner`], which checks every input once; engines
//! ([`StackReference`] here, the SIMD engine in `icl-cpu-simd`) may assume valid inputs and run the one
//! [`crate::conformance::stack`] suite.
use super::layers::{self, Pass, StackCircuits, StackSpec, Workspace};
use crate::data::batch::{fill_rows_serial, Batch, RowsFill, SequenceFill};
use crate::{Error, Result, Scalar};
use alloc::boxed::Box;
use alloc::format;

/// A way of running transformer stacks over a batch. Loss convention as for one-layer engines:
/// `sum_b sum_o (yhat_bo - y_bo)^2 / (n n_out)`.
pub trait StackKernels<T: Scalar>: Send {
    /// Short name (`scalar`, `simd`).
    fn name(&self) -> &'static str;
    /// Loss on `batch` and its gradient with respect to the circuits (overwrites `g`).
    fn loss_grad(
        &mut self,
        spec: &StackSpec,
        c: &StackCircuits<T>,
        batch: &Batch<T>,
        g: &mut StackCircuits<T>,
    ) -> Result<T>;
    /// The final tokens of every sequence after `pass` (`out` has the batch's `z` shape).
    fn forward(
        &mut self,
        spec: &StackSpec,
        c: &StackCircuits<T>,
        pass: Pass,
        batch: &Batch<T>,
        out: &mut [T],
    ) -> Result<()>;
    /// Fill `n` sequences' blocks of the buffers `bufs` (buffer k holds n equal blocks, block b
    /// belonging to sequence b): `fill(b, blocks, scratch)` gets block b of every buffer, in the
    /// order of `bufs`, and may depend on nothing but b (an engine may run the sequences in
    /// parallel and in any order; `scratch` is a per-thread buffer). Callers go through
    /// [`StackRunner::fill_rows`], which checks the buffer lengths.
    fn fill_rows(&mut self, n: usize, bufs: &mut [&mut [T]], fill: &RowsFill<'_, T>) {
        fill_rows_serial(n, bufs, fill);
    }
    /// [`StackKernels::fill_rows`] for f64 buffers, whatever the engine's scalar (the evaluation's
    /// classical estimators run in f64); the same contract. Callers go through
    /// [`StackRunner::fill_rows_f64`].
    fn fill_rows_f64(&mut self, n: usize, bufs: &mut [&mut [f64]], fill: &RowsFill<'_, f64>) {
        fill_rows_serial(n, bufs, fill);
    }
    /// Fill every sequence of `batch`: `fill(b, z_b, y_b, scratch)` writes sequence b's tokens
    /// and targets ([`StackKernels::fill_rows`] over the batch's tokens and targets).
    fn fill_batch(&mut self, batch: &mut Batch<T>, fill: &SequenceFill<'_, T>) {
        let n = batch.n;
        self.fill_rows(
            n,
            &mut [&mut batch.z[..], &mut batch.y[..]],
            &|b, rows, s| {
                if let [z, y] = rows {
                    fill(b, z, y, s)
                }
            },
        );
    }
}

/// The scalar reference: one sequence after another.
#[derive(Debug, Default)]
pub struct StackReference<T> {
    ws: Workspace<T>,
}

impl<T: Scalar> StackReference<T> {
    pub fn new() -> Self {
        StackReference {
            ws: Workspace::default(),
        }
    }
}

impl<T: Scalar> StackKernels<T> for StackReference<T> {
    fn name(&self) -> &'static str {
        "scalar"
    }

    fn loss_grad(
        &mut self,
        spec: &StackSpec,
        c: &StackCircuits<T>,
        batch: &Batch<T>,
        g: &mut StackCircuits<T>,
    ) -> Result<T> {
        g.clear();
        let w = T::one() / T::of((batch.n * batch.n_out) as f64);
        let mut loss = T::zero();
        for b in 0..batch.n {
            loss += layers::sequence_loss_grad(
                spec,
                c,
                batch.seq(b),
                batch.target(b),
                w,
                &mut self.ws,
                g,
            );
        }
        Ok(loss)
    }

    fn forward(
        &mut self,
        spec: &StackSpec,
        c: &StackCircuits<T>,
        pass: Pass,
        batch: &Batch<T>,
        out: &mut [T],
    ) -> Result<()> {
        let w = (batch.len + 1) * batch.e();
        for b in 0..batch.n {
            layers::forward_sequence(spec, c, pass, batch.seq(b), batch.len + 1, &mut self.ws);
            out[b * w..(b + 1) * w].copy_from_slice(&self.ws.zs[pass.layers]);
        }
        Ok(())
    }
}

/// Every buffer splits into `n` equal blocks (and `n > 0`).
fn check_rows<U>(n: usize, bufs: &[&mut [U]]) -> Result<()> {
    match bufs.iter().find(|v| n == 0 || v.len() % n != 0) {
        Some(v) => Err(Error::Shape(format!(
            "a buffer of {} values does not split into {n} sequences",
            v.len()
        ))),
        None => Ok(()),
    }
}

/// An engine behind its checks.
pub struct StackRunner<T: Scalar> {
    engine: Box<dyn StackKernels<T>>,
}

impl<T: Scalar> core::fmt::Debug for StackRunner<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "StackRunner({})", self.engine.name())
    }
}

impl<T: Scalar> StackRunner<T> {
    pub fn new(engine: Box<dyn StackKernels<T>>) -> Self {
        StackRunner { engine }
    }
    /// The scalar reference.
    pub fn scalar() -> Self {
        Self::new(Box::new(StackReference::new()))
    }
    pub fn name(&self) -> &'static str {
        self.engine.name()
    }

    /// Loss and circuit gradient on `batch` (overwrites `g`).
    pub fn loss_grad(
        &mut self,
        spec: &StackSpec,
        c: &StackCircuits<T>,
        batch: &Batch<T>,
        g: &mut StackCircuits<T>,
    ) -> Result<T> {
        layers::check_batch(spec, c, batch)?;
        layers::check_batch(spec, g, batch)?;
        self.engine.loss_grad(spec, c, batch, g)
    }

    /// Final tokens after `pass` (`out`: the batch's `z` shape).
    pub fn forward(
        &mut self,
        spec: &StackSpec,
        c: &StackCircuits<T>,
        pass: Pass,
        batch: &Batch<T>,
        out: &mut [T],
    ) -> Result<()> {
        layers::check_batch(spec, c, batch)?;
        if pass.layers == 0 {
            return Err(Error::InvalidArgument(
                "a pass needs at least one layer".into(),
            ));
        }
        if out.len() != batch.z.len() {
            return Err(Error::Shape(format!(
                "output buffer has {} values, {} needed",
                out.len(),
                batch.z.len()
            )));
        }
        self.engine.forward(spec, c, pass, batch, out)
    }

    /// Fill `batch` sequence by sequence ([`StackKernels::fill_batch`]).
    pub fn fill_batch(&mut self, batch: &mut Batch<T>, fill: &SequenceFill<'_, T>) {
        self.engine.fill_batch(batch, fill)
    }

    /// Fill `n` sequences' blocks of `bufs` ([`StackKernels::fill_rows`]); every buffer's length
    /// must be a multiple of `n`.
    pub fn fill_rows(
        &mut self,
        n: usize,
        bufs: &mut [&mut [T]],
        fill: &RowsFill<'_, T>,
    ) -> Result<()> {
        check_rows(n, bufs)?;
        self.engine.fill_rows(n, bufs, fill);
        Ok(())
    }

    /// [`StackRunner::fill_rows`] for f64 buffers ([`StackKernels::fill_rows_f64`]).
    pub fn fill_rows_f64(
        &mut self,
        n: usize,
        bufs: &mut [&mut [f64]],
        fill: &RowsFill<'_, f64>,
    ) -> Result<()> {
        check_rows(n, bufs)?;
        self.engine.fill_rows_f64(n, bufs, fill);
        Ok(())
    }

    /// Predictions (the last n_out rows of every query column) into `out` (n n_out values).
    pub fn predict(
        &mut self,
        spec: &StackSpec,
        c: &StackCircuits<T>,
        pass: Pass,
        batch: &Batch<T>,
        out: &mut [T],
    ) -> Result<()> {
        if out.len() != batch.n * batch.n_out {
            return Err(Error::Shape(format!(
                "prediction buffer has {} values, {} needed",
                out.len(),
                batch.n * batch.n_out
            )));
        }
        let mut toks = alloc::vec![T::zero(); batch.z.len()];
        self.forward(spec, c, pass, batch, &mut toks)?;
        let (w, e, no) = ((batch.len + 1) * batch.e(), batch.e(), batch.n_out);
        for b in 0..batch.n {
            let q = b * w + batch.len * e + e - no;
            out[b * no..(b + 1) * no].copy_from_slice(&toks[q..q + no]);
        }
        Ok(())
    }
}
