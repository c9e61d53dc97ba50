//! The training loop: a fresh batch every step (stream (seed, Train, step, b)), loss and gradient
//! from an [`Engine`], an optimiser update, logging of loss and per-head (omega, mu), KQ snapshots.
//! Deterministic for a seed. No I/O: callers write what they want from [`Trainer::log`].
use crate::analysis;
use crate::config::Config;
use crate::engine::Engine;
use crate::model::{Circuits, Model};
use crate::optim::Optimizer;
use crate::task::{Batch, Task};
use crate::{Error, Result, Scalar};
use alloc::format;
use alloc::vec;
use alloc::vec::Vec;

/// One logged row.
#[derive(Debug, Clone, PartialEq)]
pub struct LogRow {
    /// Steps completed.
    pub step: u64,
    /// Mean training loss over the steps since the previous row.
    pub loss: f64,
    /// Per-head omega and mu (effective; first output).
    pub omega: Vec<f64>,
    pub mu: Vec<f64>,
}

/// The effective KQ of every head after `step` steps ([H, E, E]).
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub step: u64,
    pub kq: Vec<f64>,
}

/// Loss and parameter gradient of `model` on `batch` through `engine` (overwrites `grad`).
pub fn loss_and_grad<T: Scalar>(
    engine: &mut dyn Engine<T>,
    model: &Model<T>,
    batch: &Batch<T>,
    grad: &mut [T],
) -> Result<T> {
    if grad.len() != model.params.len() {
        return Err(Error::Shape(format!(
            "gradient buffer has {} values, {} needed",
            grad.len(),
            model.params.len()
        )));
    }
    let circ = model.circuits();
    let mut g = Circuits::zeros(&model.spec);
    let loss = engine.loss_grad(&model.spec, &circ, batch, &mut g)?;
    model.backprop_circuits(&g, grad);
    Ok(loss)
}

/// Training state.
#[derive(Debug, Clone)]
pub struct Trainer<T> {
    pub cfg: Config,
    pub task: Task,
    pub model: Model<T>,
    pub opt: Optimizer<T>,
    /// Steps completed.
    pub step: u64,
    pub log: Vec<LogRow>,
    pub snapshots: Vec<Snapshot>,
    circ: Circuits<T>,
    gcirc: Circuits<T>,
    grad: Vec<T>,
    window: (f64, u64),
}

impl<T: Scalar> Trainer<T> {
    /// A trainer with a freshly initialised model.
    pub fn new(cfg: &Config) -> Result<Self> {
        Self::with_model(cfg, Model::init(cfg)?)
    }

    /// A trainer starting from a given model (its spec must match the config).
    pub fn with_model(cfg: &Config, model: Model<T>) -> Result<Self> {
        let task = Task::new(cfg)?;
        let spec = crate::model::ModelSpec::from_config(cfg)?;
        if spec != model.spec {
            return Err(Error::Shape("model does not match the config".into()));
        }
        let n = model.params.len();
        Ok(Trainer {
            cfg: cfg.clone(),
            task,
            opt: Optimizer::new(&cfg.train, n),
            circ: Circuits::zeros(&spec),
            gcirc: Circuits::zeros(&spec),
            grad: vec![T::zero(); n],
            model,
            step: 0,
            log: Vec::new(),
            snapshots: Vec::new(),
            window: (0.0, 0),
        })
    }

    /// The gradient of the last step.
    pub fn last_grad(&self) -> &[T] {
        &self.grad
    }

    /// One optimiser step on the batch of step `self.step`; returns its loss.
    pub fn step(&mut self, engine: &mut dyn Engine<T>) -> Result<f64> {
        let t = self.step;
        self.model.circuits_into(&mut self.circ);
        let tr = &self.cfg.train;
        let loss = engine
            .sampled_loss_grad(
                &self.model.spec,
                &self.circ,
                &self.task,
                tr.seed,
                t,
                tr.batch,
                self.cfg.task.len,
                &mut self.gcirc,
            )?
            .to_f64();
        if !loss.is_finite() {
            return Err(Error::Numerical(format!(
                "training diverged at step {t} (loss {loss})"
            )));
        }
        self.model.backprop_circuits(&self.gcirc, &mut self.grad);
        self.opt.step(&mut self.model.params, &self.grad)?;
        self.step += 1;
        self.window.0 += loss;
        self.window.1 += 1;
        let s = self.step;
        if s == 1 || s.is_multiple_of(tr.log_every) || s == tr.steps {
            self.push_log();
        }
        let snap = self.cfg.train.snapshot_every;
        if snap > 0 && (s == 1 || s.is_multiple_of(snap)) {
            self.model.circuits_into(&mut self.circ);
            self.snapshots.push(Snapshot {
                step: s,
                kq: self.circ.kq.iter().map(|x| x.to_f64()).collect(),
            });
        }
        Ok(loss)
    }

    fn push_log(&mut self) {
        self.model.circuits_into(&mut self.circ);
        let rep = analysis::analyze(&self.model.spec, &self.circ);
        let (sum, n) = self.window;
        self.log.push(LogRow {
            step: self.step,
            loss: sum / n.max(1) as f64,
            omega: rep.heads.iter().map(|h| h.omega).collect(),
            mu: rep.heads.iter().map(|h| h.mu).collect(),
        });
        self.window = (0.0, 0);
    }

    /// Run until `cfg.train.steps` steps are done, calling `progress(step, loss)` after each step;
    /// `progress` returning `false` stops early (the state stays consistent).
    pub fn run(
        &mut self,
        engine: &mut dyn Engine<T>,
        progress: &mut dyn FnMut(u64, f64) -> bool,
    ) -> Result<()> {
        while self.step < self.cfg.train.steps {
            let loss = self.step(engine)?;
            if !progress(self.step, loss) {
                break;
            }
        }
        Ok(())
    }
}
