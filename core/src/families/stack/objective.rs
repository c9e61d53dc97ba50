//! The objective of multi-layer transformers: fresh data every step (spec §3: batches of n
//! sequences from streams (seed, Train, t, b)).
use super::kernels::StackRunner;
use super::layers::{self, StackCircuits, StackSpec};
use crate::config::Config;
use crate::data::{Batch, Task};
use crate::objective::Objective;
use crate::rng::Domain;
use crate::{Result, Scalar};

/// Fresh data every step for a transformer stack.
pub struct Online<T: Scalar> {
    spec: StackSpec,
    task: Task,
    runner: StackRunner<T>,
    seed: u64,
    batch: Batch<T>,
}

/// The training batch of `step` for a transformer stack: sequence b from stream
/// (seed, Train, step, b), as [`Task::sample_into`], filled by the engine (maybe in parallel).
pub fn sample_stack_batch<T: Scalar>(
    runner: &mut StackRunner<T>,
    task: &Task,
    seed: u64,
    step: u64,
    batch: &mut Batch<T>,
) {
    let len = batch.len;
    runner.fill_batch(batch, &|b, z, y, normals| {
        let mut r = task.stream(seed, Domain::Train, step, b as u64);
        task.sample_sequence(&mut r, len, normals, z, y);
    });
}

impl<T: Scalar> Online<T> {
    /// The objective of `cfg` for a stack of `spec`.
    pub fn new(
        cfg: &Config,
        task: &Task,
        spec: &StackSpec,
        runner: StackRunner<T>,
    ) -> Result<Self> {
        Ok(Online {
            spec: spec.clone(),
            task: task.clone(),
            runner,
            seed: cfg.train.seed,
            batch: Batch::try_zeros(cfg.train.batch, cfg.task.len, task.d, 1)?,
        })
    }
}

impl<T: Scalar> Objective<T> for Online<T> {
    fn protocol(&self) -> &'static str {
        "fresh data every step"
    }
    fn engine(&self) -> &str {
        self.runner.name()
    }
    fn full_batch(&self) -> bool {
        false
    }
    fn loss_grad(&mut self, step: u64, params: &[T], grad: &mut [T]) -> Result<f64> {
        let sp = &self.spec;
        sample_stack_batch(
            &mut self.runner,
            &self.task,
            self.seed,
            step,
            &mut self.batch,
        );
        let mut c = StackCircuits::zeros(sp);
        let mut g = StackCircuits::zeros(sp);
        layers::circuits_forward(sp, params, &mut c);
        let l = self.runner.loss_grad(sp, &c, &self.batch, &mut g)?;
        layers::circuits_backward(sp, params, &g, grad);
        Ok(l.to_f64())
    }
    fn loss(&mut self, _params: &[T]) -> Result<Option<f64>> {
        Ok(None)
    }
}
