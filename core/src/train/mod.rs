//! The one trainer: flat parameters, an optimiser, an [`Objective`] (the loss and its parameter
//! gradient at step t) and [`Probe`]s (the logged columns), with one log window and one divergence
//! check. Which objective and probes a configuration gets is decided here, in the core
//! ([`objective::build`]), so every front end (CLI, C, C++, Python) runs the same protocol for the
//! same config.
//!
//! Logging conventions:
//! * fresh data every step (online): after update s, a row when s = 1, s is a multiple of
//!   `train.log_every`, or s = `train.steps`, with the mean batch loss since the previous row and
//!   the probes at the updated parameters;
//! * full batch (fixed set): at step t a row when t is a multiple of `train.log_every`, with the
//!   loss of the parameters before update t and the probes at those parameters; the step that
//!   completes `train.steps` adds a final row for the parameters after that update.
//!
//! These are the regular rows ([`Trainer::log`]), which everything that needs an even spacing
//! reads (plateau detection, the curves of the outputs). Besides them, early rows
//! ([`Trainer::early`], [`early_row`]) at steps 1, 2, 5, 10, 20, 50, ... below `train.log_every`
//! give a log step axis points in its first decades; an early row's loss is that one step's (the
//! batch loss of step s online, the full-batch loss before update t on a fixed set), with the
//! probes as a regular row of that step would have them. `metrics.csv` lists both, by step.
//!
//! A step is all or nothing: one that diverges (a loss, gradient or update that is not finite)
//! fails with [`Error::Numerical`] and leaves the trainer exactly as the previous step left it.
//!
//! Resumable: [`Trainer::state`] is everything the trainer does not rebuild from its config
//! (step, parameters, optimiser moments, log, window, snapshots, probe states), and
//! [`Trainer::from_state`] continues bit for bit where it stopped.
pub mod objective;

pub use crate::objective::{Column, Objective, Options, Probe};

use crate::config::Config;
use crate::data::{Batch, Task};
use crate::engine::{Engine, Runner};
use crate::model::{Circuits, Model, ModelSpec};
use crate::optim::Optimizer;
use crate::{Error, Result, Scalar};
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

/// One logged row: the step, the loss, and one value per [`Column`].
#[derive(Debug, Clone, PartialEq)]
pub struct LogRow {
    /// Steps completed.
    pub step: u64,
    /// Training loss (see the module's logging conventions).
    pub loss: f64,
    /// The probes' values, in [`Trainer::columns`] order.
    pub values: Vec<f64>,
}

/// Whether step `step` gets an early row ([`Trainer::early`]): a step of the 1-2-5 sequence (1,
/// 2, 5, 10, 20, 50, 100, ...) below `every` (`train.log_every`) where the regular rule logs no
/// row (online: not step 1 nor `steps`; full batch: not a multiple of `every`, which step 0 is).
/// The one rule of the early rows.
pub fn early_row(step: u64, every: u64, steps: u64, full_batch: bool) -> bool {
    if step >= every || step == 0 || (!full_batch && (step == 1 || step == steps)) {
        return false;
    }
    let mut p = 1u64;
    while p <= step / 10 {
        p *= 10;
    }
    step.is_multiple_of(p) && matches!(step / p, 1 | 2 | 5)
}

/// The steps whose batch losses the regular row of step `step` averages on fresh data (see the
/// module's logging conventions): `(first, last)`, from the step after the previous regular row
/// through `step`.
pub fn row_window(step: u64, every: u64) -> (u64, u64) {
    if step <= 1 {
        return (step, step);
    }
    let prev = ((step - 1) / every.max(1) * every.max(1)).max(1);
    (prev + 1, step)
}

/// The effective KQ of every head after `step` steps ([H, E, E]; for transformers Phi of every
/// parameter set and head, [sets H, D, D], of stage 2 for the IV model).
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub step: u64,
    pub kq: Vec<f64>,
}

/// Everything a trainer needs besides its config to continue a run bit for bit.
#[derive(Debug, Clone, PartialEq)]
pub struct TrainState<T> {
    pub step: u64,
    pub params: Vec<T>,
    pub opt: Optimizer<T>,
    pub log: Vec<LogRow>,
    /// The early rows ([`early_row`]), by step.
    pub early: Vec<LogRow>,
    pub snapshots: Vec<Snapshot>,
    /// Sum and count of the batch losses since the last row (online objectives).
    pub window: (f64, u64),
    /// Each probe's own state (e.g. the cubic twin's parameters and optimiser), in probe order.
    pub probes: Vec<Vec<f64>>,
}

/// Loss and parameter gradient of `model` on `batch` (overwrites `grad`).
pub fn loss_and_grad<T: Scalar>(
    runner: &mut Runner<T>,
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
    let spec = model.attention()?;
    let circ = model.circuits()?;
    let mut g = Circuits::zeros(spec);
    let loss = runner.loss_grad(spec, &circ, batch, &mut g)?;
    spec.backprop_circuits(&model.params, &g, grad);
    Ok(loss)
}

/// A training run in precision `T`.
pub struct Trainer<T: Scalar> {
    pub cfg: Config,
    pub task: Task,
    pub model: Model<T>,
    pub opt: Optimizer<T>,
    /// Steps completed.
    pub step: u64,
    /// The regular rows (see the module's logging conventions).
    pub log: Vec<LogRow>,
    /// The early rows ([`early_row`]), by step.
    pub early: Vec<LogRow>,
    pub snapshots: Vec<Snapshot>,
    columns: Vec<Column>,
    objective: Box<dyn Objective<T>>,
    probes: Vec<Box<dyn Probe<T>>>,
    grad: Vec<T>,
    window: (f64, u64),
}

impl<T: Scalar> core::fmt::Debug for Trainer<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "Trainer({}, {}, step {})",
            self.model.describe(),
            self.objective.protocol(),
            self.step
        )
    }
}

impl<T: Scalar> Trainer<T> {
    /// A trainer with a freshly initialised model and the default [`Options`].
    pub fn new(cfg: &Config, engines: &dyn Engine<T>) -> Result<Self> {
        Self::with_model(cfg, Model::init(cfg)?, engines, &Options::default())
    }

    /// A trainer starting from `model` (its spec must match the config).
    pub fn with_model(
        cfg: &Config,
        model: Model<T>,
        engines: &dyn Engine<T>,
        opts: &Options,
    ) -> Result<Self> {
        let task = Task::new(cfg)?;
        let spec = ModelSpec::from_config(cfg)?;
        if spec != model.spec {
            return Err(Error::Shape("model does not match the config".into()));
        }
        let (objective, probes) = objective::build(cfg, &task, &model, engines, opts)?;
        let columns = probes.iter().flat_map(|p| p.columns()).collect();
        let n = model.params.len();
        Ok(Trainer {
            cfg: cfg.clone(),
            opt: Optimizer::new(&cfg.train, n),
            grad: vec![T::zero(); n],
            task,
            model,
            step: 0,
            log: Vec::new(),
            early: Vec::new(),
            snapshots: Vec::new(),
            columns,
            objective,
            probes,
            window: (0.0, 0),
        })
    }

    /// A trainer that continues from `state` (taken with [`Trainer::state`] from a trainer of
    /// the same config). Probes that keep state (the cubic twin) are rebuilt from the initial
    /// model of the config and then restored.
    pub fn from_state(
        cfg: &Config,
        state: TrainState<T>,
        engines: &dyn Engine<T>,
        opts: &Options,
    ) -> Result<Self> {
        let mut tr = Self::with_model(cfg, Model::init(cfg)?, engines, opts)?;
        let n = tr.model.params.len();
        if state.params.len() != n || state.opt.len() != n {
            return Err(Error::Shape(format!(
                "the saved state has {} parameters and optimiser state for {}, the config's model {n}",
                state.params.len(),
                state.opt.len()
            )));
        }
        if state.probes.len() != tr.probes.len() {
            return Err(Error::Shape(format!(
                "the saved state has {} probe states, the config's protocol {}",
                state.probes.len(),
                tr.probes.len()
            )));
        }
        crate::scalar::check_finite("params", &state.params)?;
        for (p, s) in tr.probes.iter_mut().zip(&state.probes) {
            p.restore(s)?;
        }
        tr.model.params = state.params;
        tr.opt = state.opt;
        tr.step = state.step;
        tr.log = state.log;
        tr.early = state.early;
        tr.snapshots = state.snapshots;
        tr.window = state.window;
        Ok(tr)
    }

    /// The state [`Trainer::from_state`] continues from.
    pub fn state(&self) -> TrainState<T> {
        TrainState {
            step: self.step,
            params: self.model.params.clone(),
            opt: self.opt.clone(),
            log: self.log.clone(),
            early: self.early.clone(),
            snapshots: self.snapshots.clone(),
            window: self.window,
            probes: self.probes.iter().map(|p| p.state()).collect(),
        }
    }

    /// The logged columns, in [`LogRow::values`] order.
    pub fn columns(&self) -> &[Column] {
        &self.columns
    }

    /// The values of a row that belong to a probe group (`values`, `m`, `omega`, ...), in column
    /// order (empty if no such group).
    pub fn group(&self, row: &LogRow, group: &str) -> Vec<f64> {
        self.columns
            .iter()
            .zip(&row.values)
            .filter(|(c, _)| c.group == group)
            .map(|(_, v)| *v)
            .collect()
    }

    /// The values of one column over the log (`None` if no such column).
    pub fn column(&self, name: &str) -> Option<Vec<f64>> {
        let k = self.columns.iter().position(|c| c.name == name)?;
        Some(self.log.iter().map(|r| r.values[k]).collect())
    }

    /// The protocol, e.g. "fresh data every step", "full-batch GD on a fixed set".
    pub fn protocol(&self) -> &'static str {
        self.objective.protocol()
    }

    /// The engine that computes the loss ("moments" where sufficient statistics replace it).
    pub fn engine_name(&self) -> &str {
        self.objective.engine()
    }

    /// Whether the objective is full batch (see the module's logging conventions).
    pub fn full_batch(&self) -> bool {
        self.objective.full_batch()
    }

    /// The parameter gradient of the last step.
    pub fn last_grad(&self) -> &[T] {
        &self.grad
    }

    /// One optimiser step; returns the loss it computed (the batch loss, or the full-batch loss of
    /// the parameters before the update). The step that completes `train.steps` also logs the
    /// final row ([`Trainer::finish`]), so the log does not depend on how steps are grouped into
    /// calls.
    ///
    /// All or nothing: a step that fails (a loss, gradient or update that is not finite, i.e.
    /// training diverged: [`Error::Numerical`]) leaves the trainer as it was before it, with the
    /// parameters, optimiser state, log, window and step count of the previous step, so the
    /// state stays finite, saveable and resumable.
    pub fn step(&mut self) -> Result<f64> {
        let t = self.step;
        let diverged = |m: String| Error::Numerical(format!("training diverged at step {t}: {m}"));
        let loss = self
            .objective
            .loss_grad(t, &self.model.params, &mut self.grad)?;
        if !loss.is_finite() {
            return Err(Error::Numerical(format!(
                "training diverged at step {t} (loss {loss})"
            )));
        }
        self.opt
            .check_step(&self.model.params, &self.grad)
            .map_err(|e| match e {
                Error::Numerical(m) => diverged(m),
                other => other,
            })?;
        let full = self.objective.full_batch();
        let every = self.cfg.train.log_every.max(1);
        let rows = (self.log.len(), self.early.len());
        if full && t.is_multiple_of(every) {
            self.push_row(loss)?;
        } else if full && early_row(t, every, self.cfg.train.steps, true) {
            let row = self.row(loss)?;
            self.early.push(row);
        }
        // probes that train alongside (the cubic twin) step now; each is all or nothing, and
        // they are the last thing that can fail before the update is written
        for p in self.probes.iter_mut() {
            if let Err(e) = p.after_step(t) {
                self.log.truncate(rows.0);
                self.early.truncate(rows.1);
                return Err(e);
            }
        }
        // checked above (the parameters and gradient have not changed since)
        self.opt.apply(&mut self.model.params, &self.grad);
        self.step += 1;
        let s = self.step;
        if !full {
            self.window.0 += loss;
            self.window.1 += 1;
            if s == 1 || s.is_multiple_of(every) || s == self.cfg.train.steps {
                let mean = self.window.0 / self.window.1.max(1) as f64;
                self.window = (0.0, 0);
                self.push_row(mean)?;
            } else if early_row(s, every, self.cfg.train.steps, false) {
                let row = self.row(loss)?;
                self.early.push(row);
            }
        }
        let snap = self.cfg.train.snapshot_every;
        if snap > 0 && (s == 1 || s.is_multiple_of(snap)) {
            // GPT-2 models have no KQ circuits to snapshot
            let kq = self.model.kq_snapshot();
            if !kq.is_empty() {
                self.snapshots.push(Snapshot { step: s, kq });
            }
        }
        if s == self.cfg.train.steps {
            self.finish()?;
        }
        Ok(loss)
    }

    /// One optimiser step on a caller's `batch` instead of the objective's data, computed by
    /// `runner`: the loss and gradient of the batch, then the update, all or nothing as in
    /// [`Trainer::step`]. It counts as a step (the following steps use the next stream), but
    /// it is not entered in the log or its window, and probes do not step (one-layer attention
    /// only: [`Error::Unsupported`] for transformers).
    pub fn step_on(&mut self, runner: &mut Runner<T>, batch: &Batch<T>) -> Result<f64> {
        let t = self.step;
        let loss = loss_and_grad(runner, &self.model, batch, &mut self.grad)?.to_f64();
        let diverged = |m: String| Error::Numerical(format!("training diverged at step {t}: {m}"));
        if !loss.is_finite() {
            return Err(Error::Numerical(format!(
                "training diverged at step {t} (loss {loss} on this batch)"
            )));
        }
        self.opt
            .step(&mut self.model.params, &self.grad)
            .map_err(|e| match e {
                Error::Numerical(m) => diverged(m),
                other => other,
            })?;
        self.step += 1;
        Ok(loss)
    }

    /// A row of the current step: `loss` and the probes at the current parameters.
    fn row(&mut self, loss: f64) -> Result<LogRow> {
        let mut values = Vec::with_capacity(self.columns.len());
        for p in self.probes.iter_mut() {
            p.record(&self.model, &mut values)?;
        }
        Ok(LogRow {
            step: self.step,
            loss,
            values,
        })
    }

    fn push_row(&mut self, loss: f64) -> Result<()> {
        let row = self.row(loss)?;
        self.log.push(row);
        Ok(())
    }

    /// Every row, regular and early, by step (what `metrics.csv` lists; an early row's step is
    /// never a regular row's).
    pub fn rows(&self) -> Vec<&LogRow> {
        let mut out: Vec<&LogRow> = self.log.iter().chain(&self.early).collect();
        out.sort_by_key(|r| r.step);
        out
    }

    /// The loss of the current parameters on the training objective (full batch), or `None`
    /// (online objectives have no such loss).
    pub fn current_loss(&mut self) -> Result<Option<f64>> {
        self.objective.loss(&self.model.params)
    }

    /// Run until `train.steps` steps are done, calling `progress(step, loss)` after each step
    /// (`false` stops early; the state stays consistent), then [`Trainer::finish`].
    pub fn run(&mut self, progress: &mut dyn FnMut(u64, f64) -> bool) -> Result<()> {
        while self.step < self.cfg.train.steps {
            let loss = self.step()?;
            if !progress(self.step, loss) {
                return Ok(());
            }
        }
        self.finish()
    }

    /// For full-batch objectives, log the parameters after the last update if that row is not
    /// there yet (online objectives log at the last step already).
    pub fn finish(&mut self) -> Result<()> {
        if self.objective.full_batch() && self.log.last().map(|r| r.step) != Some(self.step) {
            if let Some(l) = self.current_loss()? {
                self.push_row(l)?;
            }
        }
        Ok(())
    }

    /// The loss curve (step, loss) of the regular rows.
    pub fn curve(&self) -> Vec<(f64, f64)> {
        self.log.iter().map(|r| (r.step as f64, r.loss)).collect()
    }
}
