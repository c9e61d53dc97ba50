//! The model registry: every model family ([`crate::families`]) as one [`Net`] variant, the spec
//! of a configured model ([`ModelSpec`]), and a model's flat parameter buffer ([`Model`]). This
//! is the one place that dispatches on the family: the trainer, the engines and the front ends
//! ask it, not the families.
//!
//! Parameters live in one flat buffer with named views ([`ModelSpec::tensors`]); gradients and
//! optimiser state mirror that layout.
pub use crate::families::attention::act::{Act, HeadCache};
pub use crate::families::attention::spec::lin_norm_of;
pub use crate::families::attention::{AttentionSpec, Circuits};
pub use crate::tensor::TensorInfo;

use crate::config::{Arch, Config};
use crate::data::iv::Iv;
use crate::families::gpt2::Gpt2Spec;
use crate::families::iv::IvSpec;
use crate::families::stack::{StackCircuits, StackSpec};
use crate::families::{attention, gpt2, stack};
use crate::{Error, Result, Scalar};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// The model families, with each one's spec.
#[derive(Debug, Clone, PartialEq)]
pub enum Net {
    /// One attention layer with per-head circuits (He et al. 2025, Zhang et al. 2025).
    Attention(AttentionSpec),
    /// A multi-layer transformer (multilayer paper §3.2).
    Stack(StackSpec),
    /// The two-block IV model (multilayer paper §6.2).
    Iv(IvSpec),
    /// Garg et al. (2022)'s GPT-2 in-context learner.
    Gpt2(Gpt2Spec),
}

/// Shape and options of a model (everything but the parameter values): the covariate dimension,
/// the outputs, and the family's own spec.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelSpec {
    pub d: usize,
    pub n_out: usize,
    pub net: Net,
}

impl ModelSpec {
    /// The model a (validated) config describes.
    pub fn from_config(cfg: &Config) -> Result<Self> {
        cfg.validate()?;
        let m = &cfg.model;
        let stack = |e: usize, n_out: usize, layers: usize, looped: bool| StackSpec {
            e,
            n_out,
            heads: m.heads,
            layers,
            looped,
            attention: m.attention,
            scale: m.scale.unwrap_or(1.0 / libm::sqrt(e as f64)),
        };
        let (d, q) = (cfg.task.d, cfg.task.iv_q);
        let net = match m.arch {
            Arch::Attention => Net::Attention(AttentionSpec::of_config(cfg)),
            Arch::Transformer => Net::Stack(stack(d + 1, 1, m.layers, m.looped)),
            Arch::Iv2Stage => Net::Iv(IvSpec {
                iv: Iv::of_task(&cfg.task),
                st1: stack(q + d, d, 1, true),
                st2: stack(d + 1, 1, m.layers, m.looped),
            }),
            Arch::Gpt2 => Net::Gpt2(Gpt2Spec {
                d,
                embd: m.embd,
                layers: m.layers,
                heads: m.heads,
                positions: m.positions,
                tau: 1.0,
            }),
        };
        Ok(ModelSpec {
            d,
            n_out: cfg.n_out(),
            net,
        })
    }

    /// A one-layer attention model of `spec`.
    pub fn attention(spec: AttentionSpec) -> Self {
        ModelSpec {
            d: spec.d,
            n_out: spec.n_out,
            net: Net::Attention(spec),
        }
    }

    /// The one-layer attention spec, or [`Error::Unsupported`] for the other families:
    /// multi-layer transformers and the IV model have no per-head KQ and OV circuits and run on a
    /// [`crate::families::stack::StackRunner`].
    pub fn as_attention(&self) -> Result<&AttentionSpec> {
        match &self.net {
            Net::Attention(s) => Ok(s),
            _ => Err(Error::Unsupported(
                "this is a multi-layer model (a transformer, the IV model or GPT-2): per-sequence predictions, losses and gradients are for one-layer attention models; evaluate it as a run (icl eval)".into(),
            )),
        }
    }

    /// The heads of the model's attention (of each layer for transformers, of either block for
    /// the IV model).
    pub fn heads(&self) -> usize {
        match &self.net {
            Net::Attention(s) => s.heads,
            Net::Stack(s) => s.heads,
            Net::Iv(s) => s.st2.heads,
            Net::Gpt2(s) => s.heads,
        }
    }

    /// Whether this is a one-layer attention model.
    pub fn is_attention(&self) -> bool {
        matches!(self.net, Net::Attention(_))
    }

    /// The named tensors of the flat parameter buffer, in order (each family's layout).
    pub fn tensors(&self) -> Vec<TensorInfo> {
        match &self.net {
            Net::Attention(s) => s.tensors(),
            Net::Stack(s) => crate::tensor::layout(s.tensor_shapes(["k", "q", "v", "o"])),
            Net::Iv(s) => s.tensors(),
            Net::Gpt2(s) => s.tensors(),
        }
    }

    /// Floating-point operations of one training step's forward + backward at context length
    /// `len` and batch `batch` (each family's count; data generation not counted).
    pub fn step_flops(&self, len: usize, batch: usize) -> f64 {
        match &self.net {
            Net::Attention(s) => s.step_flops(len, batch),
            Net::Stack(s) => s.step_flops(len, batch),
            Net::Iv(s) => s.step_flops(len, batch),
            Net::Gpt2(s) => s.step_flops(len, batch),
        }
    }

    /// Total number of parameters.
    pub fn n_params(&self) -> usize {
        self.tensors().iter().map(|t| t.len()).sum()
    }

    /// Initial parameters as `cfg.model.init` says (each family's initialisation).
    pub fn init_params<T: Scalar>(&self, cfg: &Config) -> Result<Vec<T>> {
        match &self.net {
            Net::Attention(s) => attention::init::init_params(s, cfg),
            Net::Stack(_) | Net::Iv(_) => stack::init::init_params(&self.tensors(), cfg),
            Net::Gpt2(s) => Ok(gpt2::init::init_params(s, cfg.train.seed)),
        }
    }
}

/// A model: its spec and its flat parameter buffer.
#[derive(Debug, Clone, PartialEq)]
pub struct Model<T> {
    pub spec: ModelSpec,
    pub params: Vec<T>,
}

impl<T: Scalar> Model<T> {
    /// A model with the given parameters (length and finiteness checked).
    pub fn from_params(spec: ModelSpec, params: Vec<T>) -> Result<Self> {
        if params.len() != spec.n_params() {
            return Err(Error::Shape(format!(
                "model needs {} parameters, got {}",
                spec.n_params(),
                params.len()
            )));
        }
        crate::scalar::check_finite("params", &params)?;
        Ok(Model { spec, params })
    }

    /// A model initialised as the config says (see [`crate::init`]).
    pub fn init(cfg: &Config) -> Result<Self> {
        let spec = ModelSpec::from_config(cfg)?;
        let params = spec.init_params::<T>(cfg)?;
        Model::from_params(spec, params)
    }

    /// The same model in precision `U` (parameters rounded).
    pub fn cast<U: Scalar>(&self) -> Model<U> {
        Model {
            spec: self.spec.clone(),
            params: self.params.iter().map(|x| U::of(x.to_f64())).collect(),
        }
    }

    /// The values of a named tensor.
    pub fn tensor(&self, name: &str) -> Option<&[T]> {
        let t = self.spec.tensors().into_iter().find(|t| t.name == name)?;
        Some(&self.params[t.offset..t.offset + t.len()])
    }

    /// The one-layer attention spec ([`ModelSpec::as_attention`]).
    pub fn attention(&self) -> Result<&AttentionSpec> {
        self.spec.as_attention()
    }

    /// The effective circuits of a one-layer attention model.
    pub fn circuits(&self) -> Result<Circuits<T>> {
        let s = self.attention()?;
        let mut c = Circuits::zeros(s);
        s.circuits_into(&self.params, &mut c);
        Ok(c)
    }

    /// The stack whose pattern the model shows (the transformer, or the IV model's stage 2) and
    /// its circuits in f64; `None` for one-layer attention models.
    pub fn readout_stack(&self) -> Option<(StackSpec, StackCircuits<f64>)> {
        let (sp, params) = match &self.spec.net {
            Net::Stack(s) => (s.clone(), &self.params[..]),
            Net::Iv(s) => (s.st2.clone(), &self.params[s.st1.n_params()..]),
            Net::Attention(_) | Net::Gpt2(_) => return None,
        };
        let mut c = StackCircuits::zeros(&sp);
        stack::layers::circuits_forward(&sp, params, &mut c);
        Some((sp, c.to_f64()))
    }

    /// What a KQ snapshot records: every head's effective KQ ([H, E, E]) for one-layer
    /// attention; Phi of every parameter set and head ([sets, H, D, D]) of the read-out stack
    /// ([`Model::readout_stack`]) otherwise.
    pub fn kq_snapshot(&self) -> Vec<f64> {
        match (self.readout_stack(), self.circuits()) {
            (Some((_, c)), _) => c.phi,
            (None, Ok(c)) => c.kq.iter().map(|x| x.to_f64()).collect(),
            (None, Err(_)) => Vec::new(),
        }
    }

    /// A short description, e.g. "softmax/full H=2 d=5".
    pub fn describe(&self) -> String {
        if let Net::Stack(s) = &self.spec.net {
            return format!(
                "{:?} transformer T={}{} H={} d={}",
                s.attention,
                s.layers,
                if s.looped { " looped" } else { "" },
                s.heads,
                self.spec.d
            );
        }
        if let Net::Iv(s) = &self.spec.net {
            return format!(
                "IV two-stage q={} p={} H={} T2={}",
                s.iv.q, s.iv.p, s.st2.heads, s.st2.layers
            );
        }
        if let Net::Gpt2(s) = &self.spec.net {
            return format!(
                "GPT-2 layers={} heads={} embd={} d={}",
                s.layers, s.heads, s.embd, s.d
            );
        }
        match &self.spec.net {
            Net::Attention(s) => format!(
                "{:?}/{:?} H={} d={} n_out={}",
                s.attention, s.param, s.heads, s.d, s.n_out
            ),
            _ => String::new(),
        }
    }
}
