//! The objective of Zhang et al. (2025)'s protocol: full-batch gradient descent on a fixed set
//! of P sequences (§2, `task.P > 0`), by exact sufficient statistics for linear attention
//! ([`super::moments`]) or token by token through an engine otherwise.
use super::moments::Moments;
use crate::config::{AttentionKind, Config};
use crate::data::Batch;
use crate::families::attention::kernels::Runner;
use crate::families::attention::objective::{token_batches, token_loss};
use crate::families::attention::spec::lin_norm_of;
use crate::families::attention::{AttentionSpec, Circuits};
use crate::objective::{Objective, Options};
use crate::{Result, Scalar};
use alloc::vec::Vec;

/// The loss of a fixed set of sequences: exact sufficient statistics (linear attention) or token
/// batches through an engine (one batch, or one per prefix under next-token prediction, each with
/// the spec of its length; the loss is their mean).
pub enum SetLoss<T: Scalar> {
    Moments(Moments),
    Tokens(Vec<(Batch<T>, AttentionSpec)>, Runner<T>),
}

impl<T: Scalar> SetLoss<T> {
    /// The loss of `set` (f64, as generated) for models of `spec`.
    pub fn build(
        cfg: &Config,
        spec: &AttentionSpec,
        set: Batch<f64>,
        runner: impl FnOnce() -> Result<Runner<T>>,
        opts: &Options,
    ) -> Result<Self> {
        let ln = cfg.model.lin_norm;
        if spec.attention == AttentionKind::Linear && !opts.tokens {
            return Ok(SetLoss::Moments(if cfg.task.ntp {
                Moments::ntp(spec, &set, &|c| lin_norm_of(ln, c))?
            } else {
                Moments::fixed(spec, &set)?
            }));
        }
        Ok(SetLoss::Tokens(
            token_batches(spec, set, cfg.task.ntp.then_some(ln))?,
            runner()?,
        ))
    }

    /// The engine's name.
    pub fn engine(&self) -> &str {
        match self {
            SetLoss::Moments(_) => "moments",
            SetLoss::Tokens(_, r) => r.name(),
        }
    }

    /// The loss at circuits `circ` and, with `grad` (gradient and scratch), its circuit gradient.
    pub fn eval(
        &mut self,
        circ: &Circuits<T>,
        grad: Option<(&mut Circuits<T>, &mut Circuits<T>)>,
    ) -> Result<f64> {
        match self {
            SetLoss::Moments(m) => {
                let c64 = circ.to_f64();
                Ok(match grad {
                    Some((g, _)) => {
                        let mut g64 = Circuits::<f64>::zeros_like(&c64);
                        let l = m.loss_grad(&c64, &mut g64);
                        g.copy_from_f64(&g64);
                        l
                    }
                    None => m.loss(&c64),
                })
            }
            SetLoss::Tokens(list, runner) => token_loss(list, runner, circ, grad),
        }
    }
}

/// Full-batch gradient descent on a fixed set.
pub struct FixedSet<T: Scalar> {
    spec: AttentionSpec,
    set: SetLoss<T>,
    circ: Circuits<T>,
    gcirc: Circuits<T>,
    gstep: Circuits<T>,
}

impl<T: Scalar> FixedSet<T> {
    /// Full-batch descent on `set`.
    pub fn new(spec: &AttentionSpec, set: SetLoss<T>) -> Self {
        FixedSet {
            spec: spec.clone(),
            set,
            circ: Circuits::zeros(spec),
            gcirc: Circuits::zeros(spec),
            gstep: Circuits::zeros(spec),
        }
    }
}

impl<T: Scalar> Objective<T> for FixedSet<T> {
    fn protocol(&self) -> &'static str {
        "full-batch GD on a fixed set"
    }
    fn engine(&self) -> &str {
        self.set.engine()
    }
    fn full_batch(&self) -> bool {
        true
    }
    fn loss_grad(&mut self, _step: u64, params: &[T], grad: &mut [T]) -> Result<f64> {
        self.spec.circuits_into(params, &mut self.circ);
        let loss = self
            .set
            .eval(&self.circ, Some((&mut self.gcirc, &mut self.gstep)))?;
        self.spec.backprop_circuits(params, &self.gcirc, grad);
        Ok(loss)
    }
    fn loss(&mut self, params: &[T]) -> Result<Option<f64>> {
        self.spec.circuits_into(params, &mut self.circ);
        self.set.eval(&self.circ, None).map(Some)
    }
}
