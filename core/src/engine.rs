//! The engine seam: batched loss + gradient and batched prediction for a model's effective
//! circuits. The scalar reference engine here is plain and obviously correct; fast engines
//! (`icl-simd`, `icl-vulkan`) implement the same trait and are tested against it.
use crate::model::attention::{head_backward, head_forward, HeadCache};
use crate::model::{Circuits, ModelSpec};
use crate::rng::Domain;
use crate::task::{Batch, Task};
use crate::{Error, Result, Scalar};
use alloc::boxed::Box;
use alloc::format;
use alloc::vec::Vec;

/// A way of running one-layer attention models over a batch.
///
/// Loss convention: mean squared error over sequences and outputs (PyTorch `MSELoss`),
/// `loss = sum_b sum_o (yhat_bo - y_bo)^2 / (n n_out)`.
pub trait Engine<T: Scalar>: Send {
    /// Short name (`scalar`, `simd`, `vulkan`).
    fn name(&self) -> &'static str;

    /// Loss on `batch` and its gradient with respect to the effective circuits (overwrites `grad`).
    fn loss_grad(
        &mut self,
        spec: &ModelSpec,
        circ: &Circuits<T>,
        batch: &Batch<T>,
        grad: &mut Circuits<T>,
    ) -> Result<T>;

    /// Predictions for every sequence of `batch` into `out` (n * n_out values).
    fn predict(
        &mut self,
        spec: &ModelSpec,
        circ: &Circuits<T>,
        batch: &Batch<T>,
        out: &mut [T],
    ) -> Result<()>;

    /// Loss and circuit gradient on the training batch of `step`: `n` sequences of context length
    /// `len`, sequence b from stream (seed, Train, step, b). Engines may fuse data generation;
    /// the default samples with [`Task::sample_into`] into an engine-owned buffer.
    #[allow(clippy::too_many_arguments)]
    fn sampled_loss_grad(
        &mut self,
        spec: &ModelSpec,
        circ: &Circuits<T>,
        task: &Task,
        seed: u64,
        step: u64,
        n: usize,
        len: usize,
        grad: &mut Circuits<T>,
    ) -> Result<T> {
        let mut batch = Batch::zeros(n, len, task.d, task.n_out);
        task.sample_into(seed, Domain::Train, step, 0, &mut batch, &mut Vec::new());
        self.loss_grad(spec, circ, &batch, grad)
    }
}

/// Check that a batch and circuits fit a spec.
pub fn check_shapes<T: Scalar>(
    spec: &ModelSpec,
    circ: &Circuits<T>,
    batch: &Batch<T>,
) -> Result<()> {
    if batch.d != spec.d || batch.n_out != spec.n_out {
        return Err(Error::Shape(format!(
            "batch has d={} n_out={}, model has d={} n_out={}",
            batch.d, batch.n_out, spec.d, spec.n_out
        )));
    }
    if circ.heads != spec.heads || circ.e != spec.e() || circ.n_out != spec.n_out {
        return Err(Error::Shape("circuits do not match the model spec".into()));
    }
    if batch.n == 0 {
        return Err(Error::Shape("empty batch".into()));
    }
    if spec.keys(batch.len) == 0 {
        return Err(Error::Shape(
            "the query has no keys to attend to (L = 0)".into(),
        ));
    }
    Ok(())
}

/// Per-sequence forward of all heads: fills `caches` and `yhat`.
pub fn sequence_forward<T: Scalar>(
    spec: &ModelSpec,
    circ: &Circuits<T>,
    seq: &[T],
    len: usize,
    caches: &mut [HeadCache<T>],
    yhat: &mut [T],
) {
    let e = spec.e();
    let act = spec.act();
    let keys = &seq[..spec.keys(len) * e];
    let zq = &seq[len * e..(len + 1) * e];
    yhat.iter_mut().for_each(|y| *y = T::zero());
    for (h, cache) in caches.iter_mut().enumerate() {
        head_forward(
            &act,
            e,
            spec.n_out,
            circ.kq_head(h),
            circ.ov_head(h),
            keys,
            zq,
            cache,
            yhat,
        );
    }
}

#[allow(clippy::too_many_arguments)]
/// Per-sequence backward of all heads given `g = dLoss/dyhat`; accumulates into `grad`.
pub fn sequence_backward<T: Scalar>(
    spec: &ModelSpec,
    circ: &Circuits<T>,
    seq: &[T],
    len: usize,
    caches: &[HeadCache<T>],
    g: &[T],
    grad: &mut Circuits<T>,
    scratch: &mut Vec<T>,
) {
    let (e, no) = (spec.e(), spec.n_out);
    let act = spec.act();
    let keys = &seq[..spec.keys(len) * e];
    let zq = &seq[len * e..(len + 1) * e];
    for (h, cache) in caches.iter().enumerate() {
        let (kqs, ovs) = (e * e, no * e);
        let (gkq, gov) = (
            &mut grad.kq[h * kqs..(h + 1) * kqs],
            &mut grad.ov[h * ovs..(h + 1) * ovs],
        );
        head_backward(
            &act,
            e,
            no,
            circ.ov_head(h),
            keys,
            zq,
            cache,
            g,
            gkq,
            gov,
            scratch,
        );
    }
}

/// The plain scalar reference engine: one sequence at a time, one thread, no SIMD.
#[derive(Debug, Default)]
pub struct ScalarEngine<T> {
    caches: Vec<HeadCache<T>>,
    scratch: Vec<T>,
    normals: Vec<f64>,
    batch: Option<Batch<T>>,
}

impl<T: Scalar> ScalarEngine<T> {
    /// A new engine.
    pub fn new() -> Self {
        ScalarEngine {
            caches: Vec::new(),
            scratch: Vec::new(),
            normals: Vec::new(),
            batch: None,
        }
    }

    /// Boxed, for `dyn Engine` use.
    pub fn boxed() -> Box<dyn Engine<T>> {
        Box::new(Self::new())
    }

    fn fit(&mut self, spec: &ModelSpec, len: usize) {
        let nk = spec.keys(len);
        if self.caches.len() != spec.heads {
            self.caches = (0..spec.heads)
                .map(|_| HeadCache::new(nk, spec.e()))
                .collect();
        }
    }
}

impl<T: Scalar> Engine<T> for ScalarEngine<T> {
    fn name(&self) -> &'static str {
        "scalar"
    }

    fn loss_grad(
        &mut self,
        spec: &ModelSpec,
        circ: &Circuits<T>,
        batch: &Batch<T>,
        grad: &mut Circuits<T>,
    ) -> Result<T> {
        check_shapes(spec, circ, batch)?;
        self.fit(spec, batch.len);
        grad.clear();
        let no = spec.n_out;
        let inv = T::one() / T::of((batch.n * no) as f64);
        let two = T::one() + T::one();
        let (mut yhat, mut g) = ([T::zero(); 16], [T::zero(); 16]);
        if no > 16 {
            return Err(Error::Unsupported(format!("n_out = {no} > 16 outputs")));
        }
        let mut loss = T::zero();
        for b in 0..batch.n {
            let seq = batch.seq(b);
            sequence_forward(
                spec,
                circ,
                seq,
                batch.len,
                &mut self.caches,
                &mut yhat[..no],
            );
            // loss = sum_o r_o^2 / (n n_out)  =>  g_o = 2 r_o / (n n_out)
            for o in 0..no {
                let r = yhat[o] - batch.target(b)[o];
                loss += r * r * inv;
                g[o] = two * r * inv;
            }
            sequence_backward(
                spec,
                circ,
                seq,
                batch.len,
                &self.caches,
                &g[..no],
                grad,
                &mut self.scratch,
            );
        }
        Ok(loss)
    }

    fn predict(
        &mut self,
        spec: &ModelSpec,
        circ: &Circuits<T>,
        batch: &Batch<T>,
        out: &mut [T],
    ) -> Result<()> {
        check_shapes(spec, circ, batch)?;
        let no = spec.n_out;
        if out.len() != batch.n * no {
            return Err(Error::Shape(format!(
                "prediction buffer has {} values, {} needed",
                out.len(),
                batch.n * no
            )));
        }
        self.fit(spec, batch.len);
        for b in 0..batch.n {
            sequence_forward(
                spec,
                circ,
                batch.seq(b),
                batch.len,
                &mut self.caches,
                &mut out[b * no..(b + 1) * no],
            );
        }
        Ok(())
    }

    fn sampled_loss_grad(
        &mut self,
        spec: &ModelSpec,
        circ: &Circuits<T>,
        task: &Task,
        seed: u64,
        step: u64,
        n: usize,
        len: usize,
        grad: &mut Circuits<T>,
    ) -> Result<T> {
        let mut batch = match self.batch.take() {
            Some(b) if b.n == n && b.len == len && b.d == task.d && b.n_out == task.n_out => b,
            _ => Batch::zeros(n, len, task.d, task.n_out),
        };
        task.sample_into(seed, Domain::Train, step, 0, &mut batch, &mut self.normals);
        let r = self.loss_grad(spec, circ, &batch, grad);
        self.batch = Some(batch);
        r
    }
}
