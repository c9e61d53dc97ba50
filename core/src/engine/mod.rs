//! The engine seam: an [`Engine`] is a way of running the model families (the scalar reference
//! here, the SIMD engine in `icl-cpu-simd`, Vulkan in `icl-gpu-vulkan`, chosen by name in the run layer).
//! Each family declares its kernels, the operations an engine implements for it, in its own
//! folder ([`crate::families`]: [`AttentionKernels`], [`StackKernels`]); an engine hands them out
//! per family and refuses ([`Error::Unsupported`]) a family it does not run. Every engine runs
//! the one conformance suite ([`crate::conformance`]) against the reference, for every family it
//! supports, and checks its refusal of the others.
pub use crate::families::attention::kernels::{
    check_batch, check_circuits, check_task, AttentionKernels, PackedRun, Runner, Sampling,
    MAX_OUTPUTS,
};
pub use crate::families::attention::reference::{
    sequence_backward, sequence_forward, AttentionReference,
};
pub use crate::families::gpt2::kernels::{Gpt2Kernels, Gpt2Reference, Gpt2Runner};
pub use crate::families::stack::kernels::{StackKernels, StackReference, StackRunner};

use crate::{Error, Result, Scalar};
use alloc::boxed::Box;
use alloc::format;

/// A way of running model families in precision `T`: new kernels per family (each owns its
/// scratch; a trainer takes one set per run).
pub trait Engine<T: Scalar> {
    /// The engine's name (`scalar`, `simd`, `vulkan`).
    fn name(&self) -> &str;
    /// Kernels for one-layer attention.
    fn attention(&self) -> Result<Box<dyn AttentionKernels<T>>> {
        Err(refusal(self.name(), "one-layer attention"))
    }
    /// Kernels for multi-layer transformer stacks (the IV model runs on two).
    fn stack(&self) -> Result<Box<dyn StackKernels<T>>> {
        Err(refusal(self.name(), "multi-layer transformers"))
    }
    /// Kernels for GPT-2 models (Garg et al. 2022).
    fn gpt2(&self) -> Result<Box<dyn Gpt2Kernels<T>>> {
        Err(refusal(self.name(), "GPT-2 models"))
    }
}

/// How an engine refuses a family it does not run.
pub fn refusal(engine: &str, family: &str) -> Error {
    Error::Unsupported(format!("the {engine} engine does not run {family}"))
}

/// The scalar reference: every family, plain and obviously correct.
#[derive(Debug, Clone, Copy, Default)]
pub struct ScalarEngine;

impl<T: Scalar> Engine<T> for ScalarEngine {
    fn name(&self) -> &str {
        "scalar"
    }
    fn attention(&self) -> Result<Box<dyn AttentionKernels<T>>> {
        Ok(Box::new(AttentionReference::new()))
    }
    fn stack(&self) -> Result<Box<dyn StackKernels<T>>> {
        Ok(Box::new(StackReference::new()))
    }
    fn gpt2(&self) -> Result<Box<dyn Gpt2Kernels<T>>> {
        Ok(Box::new(Gpt2Reference::new()))
    }
}
