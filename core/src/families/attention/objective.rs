//! The objective of one-layer attention: fresh data every step from streams (seed, Train, t, b)
//! (He et al. 2025 §3), on the fixed-length loss or, for the `eigs` task with `task.ntp`, the
//! next-token-prediction loss over all prefixes (Zhang et al. 2025 App. A.3).
use super::kernels::{Runner, Sampling};
use super::spec::lin_norm_of;
use super::{AttentionSpec, Circuits};
use crate::config::{Config, LinNorm};
use crate::data::fixed_set::prefix_batches;
use crate::data::{Batch, Task};
use crate::objective::Objective;
use crate::rng::Domain;
use crate::{Result, Scalar};
use alloc::vec;
use alloc::vec::Vec;

/// The batches of a set (or of its prefixes under next-token prediction), in precision `T`.
pub fn token_batches<T: Scalar>(
    spec: &AttentionSpec,
    set: Batch<f64>,
    ntp: Option<LinNorm>,
) -> Result<Vec<(Batch<T>, AttentionSpec)>> {
    let Some(ln) = ntp else {
        return Ok(vec![(set.cast(), spec.clone())]);
    };
    Ok(prefix_batches(&set)?
        .into_iter()
        .map(|b| {
            let mut s = spec.clone();
            s.lin_norm = lin_norm_of(ln, b.len);
            (b.cast(), s)
        })
        .collect())
}

/// Mean loss over token batches and (with `grad`) the mean circuit gradient.
pub fn token_loss<T: Scalar>(
    list: &mut [(Batch<T>, AttentionSpec)],
    runner: &mut Runner<T>,
    circ: &Circuits<T>,
    grad: Option<(&mut Circuits<T>, &mut Circuits<T>)>,
) -> Result<f64> {
    let k = list.len() as f64;
    let kt = T::of(k);
    let mut loss = 0.0;
    match grad {
        Some((g, scratch)) => {
            g.clear();
            for (b, s) in list.iter() {
                loss += runner.loss_grad(s, circ, b, scratch)?.to_f64() / k;
                for (a, x) in g.kq.iter_mut().zip(&scratch.kq) {
                    *a += *x / kt;
                }
                for (a, x) in g.ov.iter_mut().zip(&scratch.ov) {
                    *a += *x / kt;
                }
            }
        }
        None => {
            for (b, s) in list.iter() {
                let mut out = vec![T::zero(); b.n * b.n_out];
                runner.predict(s, circ, b, &mut out)?;
                let mse: f64 = out
                    .iter()
                    .zip(&b.y)
                    .map(|(p, y)| {
                        let r = p.to_f64() - y.to_f64();
                        r * r
                    })
                    .sum::<f64>()
                    / out.len() as f64;
                loss += mse / k;
            }
        }
    }
    Ok(loss)
}

/// Fresh data every step: the batch of step t is n sequences from streams (seed, Train, t, b).
pub struct Online<T: Scalar> {
    spec: AttentionSpec,
    task: Task,
    runner: Runner<T>,
    seed: u64,
    n: usize,
    len: usize,
    /// Next-token prediction over all prefixes, with linear attention's normaliser rule.
    ntp: Option<LinNorm>,
    circ: Circuits<T>,
    gcirc: Circuits<T>,
    gstep: Circuits<T>,
}

impl<T: Scalar> Online<T> {
    /// The online objective of `cfg`.
    pub fn new(
        cfg: &Config,
        task: &Task,
        spec: &AttentionSpec,
        runner: Runner<T>,
        ntp: Option<LinNorm>,
    ) -> Self {
        Online {
            spec: spec.clone(),
            task: task.clone(),
            runner,
            seed: cfg.train.seed,
            n: cfg.train.batch,
            len: cfg.task.len,
            ntp,
            circ: Circuits::zeros(spec),
            gcirc: Circuits::zeros(spec),
            gstep: Circuits::zeros(spec),
        }
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
        self.spec.circuits_into(params, &mut self.circ);
        let loss = match self.ntp {
            None => {
                let s = Sampling {
                    seed: self.seed,
                    step,
                    n: self.n,
                    len: self.len,
                };
                let (spec, circ, task) = (&self.spec, &self.circ, &self.task);
                self.runner
                    .sampled_loss_grad(spec, circ, task, s, &mut self.gcirc)?
                    .to_f64()
            }
            Some(ln) => {
                let b =
                    self.task
                        .sample_batch::<f64>(self.seed, Domain::Train, step, self.n, self.len);
                let mut list = token_batches(&self.spec, b, Some(ln))?;
                token_loss(
                    &mut list,
                    &mut self.runner,
                    &self.circ,
                    Some((&mut self.gcirc, &mut self.gstep)),
                )?
            }
        };
        self.spec.backprop_circuits(params, &self.gcirc, grad);
        Ok(loss)
    }
    fn loss(&mut self, _params: &[T]) -> Result<Option<f64>> {
        Ok(None)
    }
}
