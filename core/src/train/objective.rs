//! Objectives: the loss and its parameter gradient at step t, and the one function ([`build`])
//! that picks a configuration's objective and probes.
//!
//! * [`Online`]: fresh data every step from streams (seed, Train, t, b) (He et al. 2025 §3), on
//!   the fixed-length loss or, for the `eigs` task with `task.ntp`, the next-token-prediction loss
//!   over all prefixes (Zhang et al. 2025 App. A.3).
//! * [`FixedSet`]: full-batch gradient descent on a fixed set of P sequences (Zhang et al. 2025
//!   §2, `task.P > 0`), by exact sufficient statistics for linear attention
//!   ([`crate::families::linear_attention::moments`]) or token by token through an engine otherwise.
//!
//! * [`Multilayer`]: fresh data every step for the multilayer paper's transformers and the
//!   two-block IV model (stage-1 + stage-2 loss with the stop-gradient of §6.2).
use super::probe::{self, Probe};
use crate::config::{AttentionKind, Config, LinNorm, Param, TaskKind};
use crate::data::fixed_set::{generate, SetKind};
use crate::data::iv::IvBatch;
use crate::data::{Batch, Task};
use crate::engine::{EngineFactory, Runner, Sampling};
use crate::families::iv;
use crate::families::linear_attention::moments::{ntp_batches, Moments};
use crate::families::stack::{stack, StackCircuits, StackRunner};
use crate::model::{lin_norm_of, Circuits, Model, ModelSpec, Net};
use crate::rng::{self, Domain};
use crate::{Result, Scalar};
use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

/// Choices of the protocol that are not part of the run configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Sequences per in-context / in-weight test set of the `eigs` task (reference code: 5000).
    pub test_size: usize,
    /// Compute linear attention on a fixed set token by token instead of by its sufficient
    /// statistics (same loss up to rounding; for tests).
    pub tokens: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            test_size: 5000,
            tokens: false,
        }
    }
}

/// A training objective: the loss at step t and its gradient with respect to the flat parameters.
pub trait Objective<T: Scalar>: Send {
    /// The protocol in words, e.g. "fresh data every step".
    fn protocol(&self) -> &'static str;
    /// The engine that computes the loss ("moments" for sufficient statistics).
    fn engine(&self) -> &str;
    /// Whether the loss is the full-batch loss of the current parameters.
    fn full_batch(&self) -> bool;
    /// Loss at `params` on the data of step `step`; its gradient into `grad` (overwritten).
    fn loss_grad(&mut self, step: u64, params: &[T], grad: &mut [T]) -> Result<f64>;
    /// The loss at `params` without a gradient (`None` for online objectives).
    fn loss(&mut self, params: &[T]) -> Result<Option<f64>>;
}

/// Whether the training loss of `cfg` is computed from the fixed set's exact sufficient
/// statistics (the objective's engine reads `moments`) instead of by an engine: linear
/// attention on a fixed set of the `eigs` task (Zhang et al. 2025, `task.P > 0`), under the
/// default [`Options`]. The decision [`build`] makes, for front ends that must know it before
/// the set is generated (an `--engine` given for such a run would otherwise be ignored).
pub fn by_moments(cfg: &Config) -> bool {
    cfg.model.arch == crate::config::Arch::Attention
        && cfg.task.kind == TaskKind::Eigs
        && cfg.task.p > 0
        && cfg.model.attention == AttentionKind::Linear
}

/// The objective and probes of a configuration: the one place that decides the protocol.
#[allow(clippy::type_complexity)]
pub fn build<T: Scalar>(
    cfg: &Config,
    task: &Task,
    model: &Model<T>,
    engines: &dyn EngineFactory<T>,
    opts: &Options,
) -> Result<(Box<dyn Objective<T>>, Vec<Box<dyn Probe<T>>>)> {
    let spec = model.spec.clone();
    let t = &cfg.task;
    if spec.net != Net::Attention {
        let obj = Multilayer::new(cfg, task, &spec, StackRunner::new(engines.stack()?))?;
        return Ok((Box::new(obj), vec![Box::new(probe::Pattern::new(&spec))]));
    }
    if t.kind != TaskKind::Eigs {
        let obj = Online::new(cfg, task, &spec, Runner::new(engines.attention()?), None);
        return Ok((Box::new(obj), vec![Box::new(probe::Circuits::new(&spec))]));
    }
    // Zhang et al. (2025): the eigs task, on a fixed set (P > 0) or fresh data, fixed length or NTP
    let seed = cfg.train.seed;
    let obj: Box<dyn Objective<T>> = if t.p > 0 {
        let set = generate(cfg, task, seed, SetKind::Train, t.p, t.len)?;
        Box::new(FixedSet::new(
            &spec,
            SetLoss::build(cfg, &spec, set, engines, opts)?,
        ))
    } else {
        let ntp = t.ntp.then_some(cfg.model.lin_norm);
        Box::new(Online::new(
            cfg,
            task,
            &spec,
            Runner::new(engines.attention()?),
            ntp,
        ))
    };
    let mut tests = Vec::new();
    if t.icl_fraction < 1.0 && opts.test_size > 0 {
        for (name, kind) in [
            ("icl_test", SetKind::IclTest),
            ("iwl_test", SetKind::IwlTest),
        ] {
            let set = generate(cfg, task, seed, kind, opts.test_size, t.len)?;
            tests.push((
                String::from(name),
                SetLoss::build(cfg, &spec, set, engines, opts)?,
            ));
        }
    }
    let mut probes: Vec<Box<dyn Probe<T>>> =
        vec![Box::new(probe::Linattn::new(cfg, task, model, tests)?)];
    if cfg.model.param == Param::MergedReduced && t.p > 0 && !t.ntp {
        let set = generate(cfg, task, seed, SetKind::Train, t.p, t.len)?;
        probes.push(Box::new(probe::CubicTwin::new(cfg, model, &set)?));
    }
    Ok((obj, probes))
}

/// The loss of a fixed set of sequences: exact sufficient statistics (linear attention) or token
/// batches through an engine (one batch, or one per prefix under next-token prediction, each with
/// the spec of its length; the loss is their mean).
pub enum SetLoss<T: Scalar> {
    Moments(Moments),
    Tokens(Vec<(Batch<T>, ModelSpec)>, Runner<T>),
}

impl<T: Scalar> SetLoss<T> {
    /// The loss of `set` (f64, as generated) for models of `spec`.
    pub fn build(
        cfg: &Config,
        spec: &ModelSpec,
        set: Batch<f64>,
        engines: &dyn EngineFactory<T>,
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
            Runner::new(engines.attention()?),
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

/// The batches of a set (or of its prefixes under next-token prediction), in precision `T`.
fn token_batches<T: Scalar>(
    spec: &ModelSpec,
    set: Batch<f64>,
    ntp: Option<LinNorm>,
) -> Result<Vec<(Batch<T>, ModelSpec)>> {
    let Some(ln) = ntp else {
        return Ok(vec![(set.cast(), spec.clone())]);
    };
    Ok(ntp_batches(&set)?
        .into_iter()
        .map(|b| {
            let mut s = spec.clone();
            s.lin_norm = lin_norm_of(ln, b.len);
            (b.cast(), s)
        })
        .collect())
}

/// Mean loss over token batches and (with `grad`) the mean circuit gradient.
fn token_loss<T: Scalar>(
    list: &mut [(Batch<T>, ModelSpec)],
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
    spec: ModelSpec,
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
        spec: &ModelSpec,
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

/// Full-batch gradient descent on a fixed set.
pub struct FixedSet<T: Scalar> {
    spec: ModelSpec,
    set: SetLoss<T>,
    circ: Circuits<T>,
    gcirc: Circuits<T>,
    gstep: Circuits<T>,
}

impl<T: Scalar> FixedSet<T> {
    /// Full-batch descent on `set`.
    pub fn new(spec: &ModelSpec, set: SetLoss<T>) -> Self {
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

/// Fresh data every step for multilayer transformers (spec §3: batches of n sequences from
/// streams (seed, Train, t, b)) and for the two-block IV model (loss (11): stage 1 + stage 2).
pub struct Multilayer<T: Scalar> {
    net: Net,
    task: Task,
    runner: StackRunner<T>,
    seed: u64,
    n: usize,
    len: usize,
    batch: Batch<T>,
    /// The IV model's batch (both views), reused every step.
    iv_batch: Option<IvBatch<T>>,
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
        let mut r = rng::stream(seed, Domain::Train, step, b as u64);
        task.sample_sequence(&mut r, len, normals, z, y);
    });
}

impl<T: Scalar> Multilayer<T> {
    /// The objective of `cfg` for a model of `spec` (a stack or the IV model).
    pub fn new(
        cfg: &Config,
        task: &Task,
        spec: &ModelSpec,
        runner: StackRunner<T>,
    ) -> Result<Self> {
        let (n, len) = (cfg.train.batch, cfg.task.len);
        let (batch, iv_batch) = match &spec.net {
            Net::Iv(sp) => (
                Batch::try_zeros(0, len, 1, 1)?,
                Some(IvBatch::try_zeros(sp.iv, n, len)?),
            ),
            _ => (Batch::try_zeros(n, len, task.d, 1)?, None),
        };
        Ok(Multilayer {
            net: spec.net.clone(),
            task: task.clone(),
            runner,
            seed: cfg.train.seed,
            n,
            len,
            batch,
            iv_batch,
        })
    }
}

impl<T: Scalar> Objective<T> for Multilayer<T> {
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
        match &self.net {
            Net::Stack(sp) => {
                sample_stack_batch(
                    &mut self.runner,
                    &self.task,
                    self.seed,
                    step,
                    &mut self.batch,
                );
                let mut c = StackCircuits::zeros(sp);
                let mut g = StackCircuits::zeros(sp);
                stack::circuits_forward(sp, params, &mut c);
                let l = self.runner.loss_grad(sp, &c, &self.batch, &mut g)?;
                stack::circuits_backward(sp, params, &g, grad);
                Ok(l.to_f64())
            }
            Net::Iv(sp) => {
                // sequence b from stream (seed, Train, step, b), filled by the engine
                let b = match &mut self.iv_batch {
                    Some(b) => b,
                    None => self
                        .iv_batch
                        .insert(IvBatch::try_zeros(sp.iv, self.n, self.len)?),
                };
                iv::sample_into(&sp.iv, &mut self.runner, self.seed, Domain::Train, step, b)?;
                Ok(iv::loss_grad(sp, params, b, &mut self.runner, grad)?
                    .0
                    .to_f64())
            }
            Net::Attention => Err(crate::Error::Unsupported(
                "the multilayer objective trains transformers".into(),
            )),
        }
    }
    fn loss(&mut self, _params: &[T]) -> Result<Option<f64>> {
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::ScalarFactory;
    use crate::train::Trainer;

    /// [`by_moments`] is the decision [`build`] makes: the trainer's engine reads "moments"
    /// exactly when it says so (fixed sets kept small, lengths short).
    #[test]
    fn by_moments_is_what_build_decides() {
        for (name, _, _) in crate::presets::PRESETS {
            let mut cfg = crate::presets::preset(name).unwrap();
            if cfg.task.p > 0 {
                cfg.set("task.P", "16").unwrap();
            }
            if cfg.model.arch != crate::config::Arch::Attention {
                continue; // transformers: never moments (checked below for one)
            }
            cfg.set("train.batch", "2").unwrap();
            let tr = Trainer::<f64>::new(&cfg, &ScalarFactory).unwrap();
            assert_eq!(by_moments(&cfg), tr.engine_name() == "moments", "{name}");
        }
        let mut ml = crate::presets::preset("multilayer-t2").unwrap();
        ml.set("task.L", "8").unwrap();
        assert!(!by_moments(&ml));
        let mut online = crate::presets::preset("zhang2025-fig3").unwrap();
        online.set("task.P", "0").unwrap();
        assert!(!by_moments(&online));
        assert!(by_moments(
            &crate::presets::preset("zhang2025-fig3").unwrap()
        ));
    }
}
