//! The objective of the two-block IV model: fresh data every step, the loss (11) (stage 1 +
//! stage 2, with the stop-gradient of §6.2).
use super::IvSpec;
use crate::config::Config;
use crate::data::iv::IvBatch;
use crate::families::stack::StackRunner;
use crate::objective::Objective;
use crate::rng::Domain;
use crate::{Result, Scalar};

/// Fresh data every step for the IV model.
pub struct Online<T: Scalar> {
    spec: IvSpec,
    runner: StackRunner<T>,
    seed: u64,
    /// Both views of the step's batch, reused every step.
    batch: IvBatch<T>,
}

impl<T: Scalar> Online<T> {
    /// The objective of `cfg` for an IV model of `spec`.
    pub fn new(cfg: &Config, spec: &IvSpec, runner: StackRunner<T>) -> Result<Self> {
        Ok(Online {
            spec: spec.clone(),
            runner,
            seed: cfg.train.seed,
            batch: IvBatch::try_zeros(spec.iv, cfg.train.batch, cfg.task.len)?,
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
        // sequence b from stream (seed, Train, step, b), filled by the engine
        let b = &mut self.batch;
        super::sample_into(
            &self.spec.iv,
            &mut self.runner,
            self.seed,
            Domain::Train,
            step,
            b,
        )?;
        Ok(
            super::loss_grad(&self.spec, params, b, &mut self.runner, grad)?
                .0
                .to_f64(),
        )
    }
    fn loss(&mut self, _params: &[T]) -> Result<Option<f64>> {
        Ok(None)
    }
}
