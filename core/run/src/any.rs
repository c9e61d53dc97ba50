//! Dtype dispatch, written once for every front end: models and trainers of either compute
//! precision (`train.dtype`), the same with the engine that runs them ([`Engined`]: the C and C++
//! handles), and [`dispatch!`] to run generic code on whichever is inside.
use crate::engines::{Engines, RunScalar};
use crate::error::Result;
use icl_core::budget::try_vec;
use icl_core::config::{Config, Dtype};
use icl_core::families::attention::eval::{mc_risk, RiskEstimate};
use icl_core::model::{Model, ModelSpec};
use icl_core::train::{loss_and_grad, Options, TrainState, Trainer};
use icl_core::{Batch, Runner, Scalar, Task};

/// Run `$body` with `$x` bound to the value inside an [`AnyModel`] or [`AnyTrainer`] (either
/// precision); the body is compiled once per precision.
#[macro_export]
macro_rules! dispatch {
    ($any:expr, $x:ident => $body:expr) => {
        match $any {
            $crate::any::Either::F32($x) => $body,
            $crate::any::Either::F64($x) => $body,
        }
    };
}

/// A value of either precision.
#[derive(Debug, Clone, PartialEq)]
pub enum Either<A, B> {
    F32(A),
    F64(B),
}

/// A model of either compute precision.
pub type AnyModel = Either<Model<f32>, Model<f64>>;

/// A trainer of either compute precision.
pub type AnyTrainer = Either<Trainer<f32>, Trainer<f64>>;

impl AnyModel {
    /// A freshly initialised model of `cfg` in its `train.dtype`.
    pub fn init(cfg: &Config) -> Result<AnyModel> {
        Ok(match cfg.train.dtype {
            Dtype::F32 => Either::F32(Model::init(cfg)?),
            Dtype::F64 => Either::F64(Model::init(cfg)?),
        })
    }
    /// A model in precision `dtype` from f64 parameter values.
    pub fn from_f64(spec: ModelSpec, params: Vec<f64>, dtype: Dtype) -> Result<AnyModel> {
        Ok(match dtype {
            Dtype::F64 => Either::F64(Model::from_params(spec, params)?),
            Dtype::F32 => Either::F32(Model::from_params(
                spec,
                params.into_iter().map(|x| x as f32).collect(),
            )?),
        })
    }
    /// The spec.
    pub fn spec(&self) -> &ModelSpec {
        dispatch!(self, m => &m.spec)
    }
    /// The compute precision.
    pub fn dtype(&self) -> Dtype {
        match self {
            Either::F32(_) => Dtype::F32,
            Either::F64(_) => Dtype::F64,
        }
    }
    /// Parameters widened to f64.
    pub fn params_f64(&self) -> Vec<f64> {
        dispatch!(self, m => m.params.iter().map(|x| icl_core::Scalar::to_f64(*x)).collect())
    }
    /// A model of either precision from a typed one.
    pub fn from_model<T: icl_core::Scalar>(m: &Model<T>) -> AnyModel {
        let p: Vec<f64> = m.params.iter().map(|x| x.to_f64()).collect();
        if T::NAME == "f64" {
            Either::F64(Model {
                spec: m.spec.clone(),
                params: p,
            })
        } else {
            Either::F32(Model {
                spec: m.spec.clone(),
                params: p.into_iter().map(|x| x as f32).collect(),
            })
        }
    }
    /// The same model in precision `T`.
    pub fn to<T: icl_core::Scalar>(&self) -> Model<T> {
        dispatch!(self, m => m.cast())
    }
}

/// How a trainer starts.
pub enum Start {
    /// A fresh model (the config's initialisation).
    Fresh,
    /// A given model.
    Model(Box<AnyModel>),
}

/// Start the engine once before the trainer, so a missing device is reported as the engine's
/// failure (a pack's device is open already).
fn opens<T: RunScalar>(engines: &Engines) -> Result<()> {
    if engines.1.is_none() {
        drop(T::engine(&engines.0)?);
    }
    Ok(())
}

fn start<T: RunScalar>(
    cfg: &Config,
    engines: &Engines,
    start: Start,
    opts: &Options,
) -> Result<Trainer<T>> {
    opens::<T>(engines)?;
    let model = match start {
        Start::Fresh => Model::init(cfg)?,
        Start::Model(m) => m.to::<T>(),
    };
    Ok(Trainer::with_model(cfg, model, engines, opts)?)
}

impl AnyTrainer {
    /// A trainer of `cfg` in its `train.dtype`, with the named engines.
    pub fn new(cfg: &Config, engines: &Engines, from: Start, opts: &Options) -> Result<Self> {
        Ok(match cfg.train.dtype {
            Dtype::F32 => Either::F32(start(cfg, engines, from, opts)?),
            Dtype::F64 => Either::F64(start(cfg, engines, from, opts)?),
        })
    }
    /// A trainer that continues from a saved state (of the config's precision).
    pub fn resume(
        cfg: &Config,
        engines: &Engines,
        state: Either<TrainState<f32>, TrainState<f64>>,
        opts: &Options,
    ) -> Result<Self> {
        Ok(match state {
            Either::F32(s) => {
                opens::<f32>(engines)?;
                Either::F32(Trainer::from_state(cfg, s, engines, opts)?)
            }
            Either::F64(s) => {
                opens::<f64>(engines)?;
                Either::F64(Trainer::from_state(cfg, s, engines, opts)?)
            }
        })
    }
    /// The trained model.
    pub fn model(&self) -> AnyModel {
        match self {
            Either::F32(t) => Either::F32(t.model.clone()),
            Either::F64(t) => Either::F64(t.model.clone()),
        }
    }
    /// The config.
    pub fn config(&self) -> &Config {
        dispatch!(self, t => &t.cfg)
    }
    /// Steps completed.
    pub fn step(&self) -> u64 {
        dispatch!(self, t => t.step)
    }
}

/// A value of precision `T` (a model, a trainer) with an engine of that precision that runs it on
/// a caller's batches: what the C and C++ model and trainer handles hold.
pub struct Engined<X, T: Scalar> {
    pub value: X,
    pub runner: Runner<T>,
    /// The engine's name (as `icl --engine` takes it).
    pub engine: String,
}

/// A model of either precision with its engine.
pub type EnginedModel = Either<Engined<Model<f32>, f32>, Engined<Model<f64>, f64>>;

/// A trainer of either precision with an engine for a caller's batches.
pub type EnginedTrainer = Either<Engined<Trainer<f32>, f32>, Engined<Trainer<f64>, f64>>;

impl<X, T: RunScalar> Engined<X, T> {
    /// `value` run by the named engine. An engine that cannot run precision `T` (vulkan in f64)
    /// is [`crate::RunError::Refused`].
    pub fn new(value: X, engine: &str) -> Result<Self> {
        Ok(Engined {
            value,
            runner: Runner::new(T::engine(engine)?),
            engine: engine.to_string(),
        })
    }
    /// The same value run by another engine.
    pub fn set_engine(&mut self, engine: &str) -> Result<()> {
        self.runner = Runner::new(T::engine(engine)?);
        self.engine = engine.to_string();
        Ok(())
    }
}

impl<T: RunScalar> Engined<Model<T>, T> {
    /// The model's predictions (`n x n_out`) for a batch, allocated fallibly.
    pub fn predict(&mut self, batch: &Batch<T>) -> Result<Vec<T>> {
        let m = &self.value;
        let mut out = try_vec(batch.n * m.spec.n_out, T::zero(), "predictions")?;
        let (spec, circ) = (m.attention()?, m.circuits()?);
        self.runner.predict(spec, &circ, batch, &mut out)?;
        Ok(out)
    }

    /// The loss of a batch and its gradient with respect to the flat parameters; a loss or
    /// gradient that is not finite is [`icl_core::Error::Numerical`].
    pub fn loss_grad(&mut self, batch: &Batch<T>) -> Result<(f64, Vec<T>)> {
        let mut g = try_vec(self.value.params.len(), T::zero(), "the gradient")?;
        let loss = loss_and_grad(&mut self.runner, &self.value, batch, &mut g)?.to_f64();
        if !loss.is_finite() || g.iter().any(|v| !v.finite()) {
            return Err(icl_core::Error::Numerical(format!(
                "the loss ({loss}) or its gradient is not finite on this batch"
            ))
            .into());
        }
        Ok((loss, g))
    }

    /// Monte Carlo risk at test length `len` with `n` samples from stream (seed, Eval, len, i) on
    /// the data of `task`, as `icl eval` computes it.
    pub fn risk(&mut self, task: &Task, len: usize, n: usize, seed: u64) -> Result<RiskEstimate> {
        let r = mc_risk(
            task,
            len,
            n,
            seed,
            Some((&self.value, &mut self.runner)),
            &[],
        )?;
        Ok(r[0])
    }
}

impl<T: RunScalar> Engined<Trainer<T>, T> {
    /// One optimiser step on a caller's batch (counted as a step, not entered in the log).
    pub fn step_on(&mut self, batch: &Batch<T>) -> Result<f64> {
        Ok(self.value.step_on(&mut self.runner, batch)?)
    }
}

impl AnyModel {
    /// The model run by the named engine.
    pub fn with_engine(self, engine: &str) -> Result<EnginedModel> {
        Ok(match self {
            Either::F32(m) => Either::F32(Engined::new(m, engine)?),
            Either::F64(m) => Either::F64(Engined::new(m, engine)?),
        })
    }
}

impl AnyTrainer {
    /// The trainer with a runner of the named engine for a caller's batches.
    pub fn with_engine(self, engine: &str) -> Result<EnginedTrainer> {
        Ok(match self {
            Either::F32(t) => Either::F32(Engined::new(t, engine)?),
            Either::F64(t) => Either::F64(Engined::new(t, engine)?),
        })
    }
}

impl<A, B> Either<A, B> {
    /// Whether the value is of double precision.
    pub fn is_f64(&self) -> bool {
        matches!(self, Either::F64(_))
    }
}
