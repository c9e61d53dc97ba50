//! Training protocols of Zhang et al. (2025): full-batch gradient descent on a fixed set of P
//! sequences (the paper's protocol; `task.P > 0`) or fresh data every step (`task.P = 0`, batch
//! `train.batch`), on the fixed-length loss or the next-token-prediction loss over all prefixes
//! (`task.ntp`). Linear attention on a fixed set runs on the exact sufficient statistics
//! ([`Moments`]); softmax attention and online training run token by token through an [`Engine`].
use crate::config::{AttentionKind, Config, LinNorm, TaskKind};
use crate::engine::Engine;
use crate::linattn::data::{generate, SetKind};
use crate::linattn::metrics::{alignment, conserved, effective_m, value_weights};
use crate::linattn::moments::{ntp_batches, Moments};
use crate::linattn::Spectrum;
use crate::model::{lin_norm_of, Circuits, Model, ModelSpec};
use crate::optim::Optimizer;
use crate::rng::Domain;
use crate::task::{Batch, Task};
use crate::theory::zhang2025::{mean_inv_uniform, plateau_losses_inv_n};
use crate::{Error, Result};
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

/// How a loss is computed.
enum Source {
    /// Exact sufficient statistics (linear attention, fixed set).
    Moments(Moments),
    /// Token level: batches (one per prefix length under next-token prediction) with the spec of
    /// each (its normaliser); the loss is the mean over them.
    Tokens(Vec<(Batch<f64>, ModelSpec)>),
    /// A fresh training batch every step.
    Online,
}

/// One logged row.
#[derive(Debug, Clone, PartialEq)]
pub struct LinLogRow {
    /// Steps completed (the loss is that of the parameters after `step` updates; for online
    /// training, the mean batch loss since the previous row).
    pub step: u64,
    pub loss: f64,
    /// Losses on the test sets (names in [`LinTrainer::test_names`]).
    pub tests: Vec<f64>,
    /// Value weights v_h.
    pub values: Vec<f64>,
    /// Effective matrix M in the paper's 1/N convention (row-major D x D).
    pub m: Vec<f64>,
    /// Key/eigenvector alignment (see [`alignment`]).
    pub align: Vec<f64>,
    /// max |c(t) - c(0)| over the conserved quantities (see [`conserved`]).
    pub conservation_drift: f64,
}

/// A Zhang et al. (2025) training run.
pub struct LinTrainer {
    pub cfg: Config,
    pub task: Task,
    pub model: Model<f64>,
    pub spectrum: Spectrum,
    /// 1/N (fixed length) or E(1/N) (next-token prediction): the theory's `inv_n`.
    pub inv_n: f64,
    /// Factor N / L_0 taking the model's M to the paper's 1/N convention.
    pub m_factor: f64,
    /// Theory plateau levels L(M_0) > .. > L(M_D) (eqs. 19, 26).
    pub levels: Vec<f64>,
    pub step: u64,
    pub log: Vec<LinLogRow>,
    pub test_names: Vec<String>,
    opt: Optimizer<f64>,
    source: Source,
    tests: Vec<Source>,
    circ: Circuits<f64>,
    gcirc: Circuits<f64>,
    gstep: Circuits<f64>,
    grad: Vec<f64>,
    cons0: Vec<f64>,
    window: (f64, u64),
}

impl LinTrainer {
    /// A run of a config with the `eigs` task; `test_size` sequences per test set (ICL and IWL
    /// test sets exist when `task.icl_fraction < 1`). Linear attention on a fixed set uses the
    /// sufficient statistics unless `tokens` is set.
    pub fn new(cfg: &Config, test_size: usize, tokens: bool) -> Result<LinTrainer> {
        cfg.validate()?;
        if cfg.task.kind != TaskKind::Eigs {
            return Err(Error::InvalidConfig(
                "the Zhang et al. protocol needs task.kind = eigs".into(),
            ));
        }
        let task = Task::new(cfg)?;
        let model = Model::<f64>::init(cfg)?;
        let spec = model.spec.clone();
        let t = &cfg.task;
        let n = t.len;
        let inv_n = if t.ntp {
            mean_inv_uniform(n)
        } else {
            1.0 / n as f64
        };
        let m_factor = match cfg.model.lin_norm {
            LinNorm::Value(x) => n as f64 / x,
            _ => 1.0,
        };
        let spectrum = Spectrum::of(&task);
        let levels = plateau_losses_inv_n(&spectrum.lambda, inv_n);
        let seed = cfg.train.seed;
        let linear = spec.attention == AttentionKind::Linear;
        let build = |set: Batch<f64>| -> Result<Source> {
            if linear && !tokens {
                Ok(Source::Moments(if t.ntp {
                    let ln = cfg.model.lin_norm;
                    Moments::ntp(&spec, &set, &|c| lin_norm_of(ln, c))?
                } else {
                    Moments::fixed(&spec, &set)?
                }))
            } else {
                Ok(Source::Tokens(token_batches(cfg, &spec, set)?))
            }
        };
        let source = if t.p > 0 {
            build(generate(cfg, &task, seed, SetKind::Train, t.p, n)?)?
        } else {
            Source::Online
        };
        let (mut tests, mut test_names) = (Vec::new(), Vec::new());
        if t.icl_fraction < 1.0 && test_size > 0 {
            for (name, kind) in [
                ("icl_test", SetKind::IclTest),
                ("iwl_test", SetKind::IwlTest),
            ] {
                tests.push(build(generate(cfg, &task, seed, kind, test_size, n)?)?);
                test_names.push(String::from(name));
            }
        }
        let np = model.params.len();
        let cons0 = conserved(&model);
        Ok(LinTrainer {
            cfg: cfg.clone(),
            opt: Optimizer::new(&cfg.train, np),
            circ: Circuits::zeros(&spec),
            gcirc: Circuits::zeros(&spec),
            gstep: Circuits::zeros(&spec),
            grad: vec![0.0; np],
            task,
            model,
            spectrum,
            inv_n,
            m_factor,
            levels,
            step: 0,
            log: Vec::new(),
            test_names,
            source,
            tests,
            cons0,
            window: (0.0, 0),
        })
    }

    /// Loss of the current parameters on a source (`Online`: NaN) and, with `grad`, its circuit gradient.
    fn eval(
        src: &mut Source,
        circ: &Circuits<f64>,
        engine: &mut dyn Engine<f64>,
        grad: Option<(&mut Circuits<f64>, &mut Circuits<f64>)>,
    ) -> Result<f64> {
        match src {
            Source::Moments(m) => Ok(match grad {
                Some((g, _)) => m.loss_grad(circ, g),
                None => m.loss(circ),
            }),
            Source::Tokens(list) => token_loss(list, circ, engine, grad),
            Source::Online => Ok(f64::NAN),
        }
    }

    /// One update; returns the loss before it (full batch) or the batch loss (online).
    pub fn step(&mut self, engine: &mut dyn Engine<f64>) -> Result<f64> {
        self.model.circuits_into(&mut self.circ);
        let loss = match &mut self.source {
            Source::Online => {
                let mut list = online_batches(&self.cfg, &self.task, &self.model.spec, self.step)?;
                token_loss(
                    &mut list,
                    &self.circ,
                    engine,
                    Some((&mut self.gcirc, &mut self.gstep)),
                )?
            }
            src => Self::eval(
                src,
                &self.circ,
                engine,
                Some((&mut self.gcirc, &mut self.gstep)),
            )?,
        };
        if !loss.is_finite() {
            return Err(Error::Numerical(format!(
                "training diverged at step {} (loss {loss})",
                self.step
            )));
        }
        let log_every = self.cfg.train.log_every.max(1);
        let online = matches!(self.source, Source::Online);
        self.window.0 += loss;
        self.window.1 += 1;
        if !online && self.step.checked_rem(log_every) == Some(0) {
            self.push_log(loss, engine)?;
        }
        self.model.backprop_circuits(&self.gcirc, &mut self.grad);
        self.opt.step(&mut self.model.params, &self.grad)?;
        self.step += 1;
        if online
            && (self.step.checked_rem(log_every) == Some(0) || self.step == self.cfg.train.steps)
        {
            let l = self.window.0 / self.window.1.max(1) as f64;
            self.push_log(l, engine)?;
        }
        Ok(loss)
    }

    /// The loss of the current parameters on the training set (NaN for online training).
    pub fn current_loss(&mut self, engine: &mut dyn Engine<f64>) -> Result<f64> {
        self.model.circuits_into(&mut self.circ);
        Self::eval(&mut self.source, &self.circ, engine, None)
    }

    fn push_log(&mut self, loss: f64, engine: &mut dyn Engine<f64>) -> Result<()> {
        self.window = (0.0, 0);
        self.model.circuits_into(&mut self.circ);
        let mut tests = Vec::with_capacity(self.tests.len());
        for t in self.tests.iter_mut() {
            tests.push(Self::eval(t, &self.circ, engine, None)?);
        }
        let d = self.model.spec.d;
        let c = conserved(&self.model);
        let drift = c
            .iter()
            .zip(&self.cons0)
            .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
        self.log.push(LinLogRow {
            step: self.step,
            loss,
            tests,
            values: value_weights(&self.circ, d),
            m: effective_m(&self.circ, d, self.m_factor),
            align: alignment(&self.model, &self.circ, &self.spectrum, self.inv_n),
            conservation_drift: drift,
        });
        Ok(())
    }

    /// Run until `train.steps` updates are done, then log the final state; `progress(step, loss)`
    /// returning false stops early.
    pub fn run(
        &mut self,
        engine: &mut dyn Engine<f64>,
        progress: &mut dyn FnMut(u64, f64) -> bool,
    ) -> Result<()> {
        while self.step < self.cfg.train.steps {
            let l = self.step(engine)?;
            if !progress(self.step, l) {
                break;
            }
        }
        if !matches!(self.source, Source::Online)
            && self.log.last().map(|r| r.step) != Some(self.step)
        {
            let l = self.current_loss(engine)?;
            self.push_log(l, engine)?;
        }
        Ok(())
    }

    /// The loss curve (step, loss) of the log.
    pub fn curve(&self) -> Vec<(f64, f64)> {
        self.log.iter().map(|r| (r.step as f64, r.loss)).collect()
    }
}

/// Token-level batches of a set: the set itself (fixed length) or its prefixes (next-token
/// prediction), each with its spec (normaliser of its length).
fn token_batches(
    cfg: &Config,
    spec: &ModelSpec,
    set: Batch<f64>,
) -> Result<Vec<(Batch<f64>, ModelSpec)>> {
    if !cfg.task.ntp {
        return Ok(vec![(set, spec.clone())]);
    }
    Ok(ntp_batches(&set)?
        .into_iter()
        .map(|b| {
            let mut s = spec.clone();
            s.lin_norm = lin_norm_of(cfg.model.lin_norm, b.len);
            (b, s)
        })
        .collect())
}

/// The fresh training batches of `step` (stream (seed, Train, step, b)).
fn online_batches(
    cfg: &Config,
    task: &Task,
    spec: &ModelSpec,
    step: u64,
) -> Result<Vec<(Batch<f64>, ModelSpec)>> {
    let b = task.sample_batch::<f64>(
        cfg.train.seed,
        Domain::Train,
        step,
        cfg.train.batch,
        cfg.task.len,
    );
    token_batches(cfg, spec, b)
}

/// Mean loss over token-level batches and (optionally) the mean circuit gradient.
fn token_loss(
    list: &mut [(Batch<f64>, ModelSpec)],
    circ: &Circuits<f64>,
    engine: &mut dyn Engine<f64>,
    grad: Option<(&mut Circuits<f64>, &mut Circuits<f64>)>,
) -> Result<f64> {
    let k = list.len() as f64;
    let mut loss = 0.0;
    match grad {
        Some((g, scratch)) => {
            g.clear();
            for (b, s) in list.iter() {
                loss += engine.loss_grad(s, circ, b, scratch)? / k;
                for (a, x) in g.kq.iter_mut().zip(&scratch.kq) {
                    *a += x / k;
                }
                for (a, x) in g.ov.iter_mut().zip(&scratch.ov) {
                    *a += x / k;
                }
            }
        }
        None => {
            for (b, s) in list.iter() {
                let mut out = vec![0.0; b.n * b.n_out];
                engine.predict(s, circ, b, &mut out)?;
                let mse: f64 = out
                    .iter()
                    .zip(&b.y)
                    .map(|(p, y)| (p - y) * (p - y))
                    .sum::<f64>()
                    / out.len() as f64;
                loss += mse / k;
            }
        }
    }
    Ok(loss)
}
