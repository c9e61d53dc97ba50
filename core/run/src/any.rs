//! Dtype dispatch, written once: models and trainers of either compute precision
//! (`train.dtype`), and [`dispatch!`] to run generic code on whichever is inside.
use crate::engines::{Engines, RunScalar};
use crate::error::Result;
use icl_core::config::{Config, Dtype};
use icl_core::model::{Model, ModelSpec};
use icl_core::train::{Options, TrainState, Trainer};

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

fn start<T: RunScalar>(
    cfg: &Config,
    engines: &Engines,
    start: Start,
    opts: &Options,
) -> Result<Trainer<T>> {
    // start the engine once here, so a missing device is reported as the engine's failure
    drop(T::engine(&engines.0)?);
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
                drop(f32::engine(&engines.0)?);
                Either::F32(Trainer::from_state(cfg, s, engines, opts)?)
            }
            Either::F64(s) => {
                drop(f64::engine(&engines.0)?);
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
