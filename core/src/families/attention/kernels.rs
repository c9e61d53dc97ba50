//! The kernels of one-layer attention: batched loss + circuit gradient and batched prediction
//! (candle/burn style). An [`AttentionKernels`] implements the arithmetic; a [`Runner`] is what callers
//! use: it checks every input **once**, before dispatch, owns the batch cache of the default
//! sampling path, and hands engines only valid inputs. The scalar reference
//! ([`super::reference::AttentionReference`]) is plain and obviously correct; fast engines (`icl-cpu-simd`,
//! `icl-gpu-vulkan`) implement the same trait and run the one conformance suite
//! ([`crate::conformance`]) against it.
use super::reference::AttentionReference;
use crate::data::{Batch, Task};
use crate::families::attention::{AttentionSpec, Circuits};
use crate::rng::Domain;
use crate::{Error, Result, Scalar};
use alloc::boxed::Box;
use alloc::format;
use alloc::vec::Vec;

/// Most outputs a model may have (the engines keep per-output scratch on the stack).
pub const MAX_OUTPUTS: usize = 16;

/// The training batch of one step: `n` sequences of context length `len`, sequence b drawn from
/// stream (seed, Train, step, b).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sampling {
    pub seed: u64,
    pub step: u64,
    pub n: usize,
    pub len: usize,
}

/// One run of a packed call ([`AttentionKernels::loss_grad_packed`]): its circuits and its
/// batch.
#[derive(Debug, Clone, Copy)]
pub struct PackedRun<'a, T: Scalar> {
    pub circ: &'a Circuits<T>,
    pub batch: &'a Batch<T>,
}

/// A way of running one-layer attention models over a batch.
///
/// Loss convention: mean squared error over sequences and outputs (PyTorch `MSELoss`),
/// `loss = sum_b sum_o (yhat_bo - y_bo)^2 / (n n_out)`.
///
/// Callers go through a [`Runner`]: the methods here may assume their inputs were checked by
/// [`check_batch`], [`check_circuits`] and [`check_task`] (shapes agree, n >= 1, at least one key,
/// n_out <= [`MAX_OUTPUTS`], output buffers of the right length).
pub trait AttentionKernels<T: Scalar>: Send {
    /// Short name (`scalar`, `simd`, `vulkan`).
    fn name(&self) -> &'static str;

    /// Loss on `batch` and its gradient with respect to the effective circuits (overwrites `grad`).
    fn loss_grad(
        &mut self,
        spec: &AttentionSpec,
        circ: &Circuits<T>,
        batch: &Batch<T>,
        grad: &mut Circuits<T>,
    ) -> Result<T>;

    /// Predictions for every sequence of `batch` into `out` (n * n_out values).
    fn predict(
        &mut self,
        spec: &AttentionSpec,
        circ: &Circuits<T>,
        batch: &Batch<T>,
        out: &mut [T],
    ) -> Result<()>;

    /// Loss and circuit gradient on the training batch `s`, for engines that generate the data
    /// themselves (bit-identical to [`Task::sample_into`]). `None`: the engine does not fuse, and
    /// the [`Runner`] samples the batch and calls [`AttentionKernels::loss_grad`].
    fn sampled_loss_grad(
        &mut self,
        _spec: &AttentionSpec,
        _circ: &Circuits<T>,
        _task: &Task,
        _s: Sampling,
        _grad: &mut Circuits<T>,
    ) -> Option<Result<T>> {
        None
    }

    /// Loss and circuit gradient of several runs of one spec and task in one call, each run's
    /// training batch made by the engine from its own sampling `runs[r]` (one n and len for all):
    /// for run r, bit for bit what [`AttentionKernels::sampled_loss_grad`] gives it alone, into
    /// `grads[r]`. `None`: the engine does not make these batches (callers then sample on the
    /// CPU and call [`AttentionKernels::loss_grad_packed`]).
    fn sampled_loss_grad_packed(
        &mut self,
        _spec: &AttentionSpec,
        _circs: &[&Circuits<T>],
        _task: &Task,
        _runs: &[Sampling],
        _grads: &mut [Circuits<T>],
    ) -> Option<Result<Vec<T>>> {
        None
    }

    /// Loss and circuit gradient of several runs of one spec in one call, each run with its own
    /// circuits and batch (every batch of the same n and len): for run r, bit for bit what
    /// [`AttentionKernels::loss_grad`] gives on `runs[r]` alone, into `grads[r]`. For engines
    /// whose cost is per call (an accelerator's submission): a sweep's runs then share one.
    /// `None`: the engine does not pack (callers then call `loss_grad` run by run).
    fn loss_grad_packed(
        &mut self,
        _spec: &AttentionSpec,
        _runs: &[PackedRun<'_, T>],
        _grads: &mut [Circuits<T>],
    ) -> Option<Result<Vec<T>>> {
        None
    }
}

/// Check that a batch and circuits fit a spec.
pub fn check_batch<T: Scalar>(
    spec: &AttentionSpec,
    circ: &Circuits<T>,
    batch: &Batch<T>,
) -> Result<()> {
    if batch.d != spec.d || batch.n_out != spec.n_out {
        return Err(Error::Shape(format!(
            "batch has d={} n_out={}, model has d={} n_out={}",
            batch.d, batch.n_out, spec.d, spec.n_out
        )));
    }
    if batch.z.len() != batch.n * (batch.len + 1) * batch.e()
        || batch.y.len() != batch.n * batch.n_out
    {
        return Err(Error::Shape("batch buffers do not match its shape".into()));
    }
    check_circuits(spec, circ)?;
    check_counts(spec, batch.n, batch.len)
}

/// Check that circuits (values or gradient accumulators) fit a spec. (Multi-layer transformers
/// and the IV model have no such circuits and no [`AttentionSpec`]: the model registry refuses
/// them before they get here, [`crate::model::ModelSpec::as_attention`].)
pub fn check_circuits<T: Scalar>(spec: &AttentionSpec, circ: &Circuits<T>) -> Result<()> {
    let (h, e, no) = (spec.heads, spec.e(), spec.n_out);
    if circ.heads != h
        || circ.e != e
        || circ.n_out != no
        || circ.kq.len() != h * e * e
        || circ.ov.len() != h * no * e
    {
        return Err(Error::Shape("circuits do not match the model spec".into()));
    }
    Ok(())
}

/// Check that a task and a sampling fit a spec.
pub fn check_task(spec: &AttentionSpec, task: &Task, s: &Sampling) -> Result<()> {
    if task.d != spec.d || task.n_out != spec.n_out {
        return Err(Error::Shape(format!(
            "task has d={} n_out={}, model has d={} n_out={}",
            task.d, task.n_out, spec.d, spec.n_out
        )));
    }
    check_counts(spec, s.n, s.len)
}

fn check_counts(spec: &AttentionSpec, n: usize, len: usize) -> Result<()> {
    if n == 0 {
        return Err(Error::Shape("empty batch".into()));
    }
    if spec.keys(len) == 0 {
        return Err(Error::Shape(
            "the query has no keys to attend to (L = 0)".into(),
        ));
    }
    if spec.n_out > MAX_OUTPUTS {
        return Err(Error::Unsupported(format!(
            "n_out = {} > {MAX_OUTPUTS} outputs",
            spec.n_out
        )));
    }
    Ok(())
}

/// An engine behind its checks: the one way callers run engines. Owns the batch buffer of the
/// default sampling path (reused between steps).
pub struct Runner<T: Scalar> {
    engine: Box<dyn AttentionKernels<T>>,
    batch: Option<Batch<T>>,
    normals: Vec<f64>,
}

impl<T: Scalar> core::fmt::Debug for Runner<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Runner({})", self.engine.name())
    }
}

impl<T: Scalar> Runner<T> {
    /// Run `engine`.
    pub fn new(engine: Box<dyn AttentionKernels<T>>) -> Self {
        Runner {
            engine,
            batch: None,
            normals: Vec::new(),
        }
    }

    /// The scalar reference engine.
    pub fn scalar() -> Self {
        Self::new(Box::new(AttentionReference::new()))
    }

    /// The engine's name.
    pub fn name(&self) -> &'static str {
        self.engine.name()
    }

    /// Loss on `batch` and its circuit gradient (overwrites `grad`).
    pub fn loss_grad(
        &mut self,
        spec: &AttentionSpec,
        circ: &Circuits<T>,
        batch: &Batch<T>,
        grad: &mut Circuits<T>,
    ) -> Result<T> {
        check_batch(spec, circ, batch)?;
        check_circuits(spec, grad)?;
        self.engine.loss_grad(spec, circ, batch, grad)
    }

    /// Predictions for every sequence of `batch` into `out` (n * n_out values). A prediction
    /// that is not finite (the model overflows on this input, or its parameters do) is
    /// [`Error::Numerical`], as a loss that is not finite is: no caller receives NaN or infinity
    /// as a prediction.
    pub fn predict(
        &mut self,
        spec: &AttentionSpec,
        circ: &Circuits<T>,
        batch: &Batch<T>,
        out: &mut [T],
    ) -> Result<()> {
        check_batch(spec, circ, batch)?;
        if out.len() != batch.n * spec.n_out {
            return Err(Error::Shape(format!(
                "prediction buffer has {} values, {} needed",
                out.len(),
                batch.n * spec.n_out
            )));
        }
        self.engine.predict(spec, circ, batch, out)?;
        if let Some(i) = out.iter().position(|x| !x.finite()) {
            return Err(Error::Numerical(format!(
                "the prediction of sequence {} is {} (the model overflows on this input)",
                i / spec.n_out.max(1),
                out[i].to_f64()
            )));
        }
        Ok(())
    }

    /// Loss and circuit gradient on the training batch `s` (fused generation where the engine
    /// has it, otherwise [`Task::sample_into`] into the cached batch).
    pub fn sampled_loss_grad(
        &mut self,
        spec: &AttentionSpec,
        circ: &Circuits<T>,
        task: &Task,
        s: Sampling,
        grad: &mut Circuits<T>,
    ) -> Result<T> {
        check_task(spec, task, &s)?;
        check_circuits(spec, circ)?;
        check_circuits(spec, grad)?;
        if let Some(r) = self.engine.sampled_loss_grad(spec, circ, task, s, grad) {
            return r;
        }
        let mut batch = match self.batch.take() {
            Some(b) if b.n == s.n && b.len == s.len && b.d == task.d && b.n_out == task.n_out => b,
            _ => Batch::try_zeros(s.n, s.len, task.d, task.n_out)?,
        };
        task.sample_into(
            s.seed,
            Domain::Train,
            s.step,
            0,
            &mut batch,
            &mut self.normals,
        );
        let r = self.engine.loss_grad(spec, circ, &batch, grad);
        self.batch = Some(batch);
        r
    }
}
