//! The engine seam: an engine is a way of running every model family it supports (the scalar
//! reference, the SIMD engine, Vulkan). Each family declares its kernels in its own folder
//! ([`crate::families`]); an engine hands them out per family, and refuses a family it does not
//! run. Fast engines run the one conformance suite ([`crate::conformance`]) against the reference.
pub use crate::families::attention::kernels::{
    check_batch, check_circuits, check_task, Engine, Runner, Sampling, MAX_OUTPUTS,
};
pub use crate::families::attention::reference::{
    sequence_backward, sequence_forward, ScalarEngine,
};

use crate::Result;
use crate::Scalar;
use alloc::boxed::Box;

/// Where a trainer gets its engines: the run layer builds them by name (`simd`, `scalar`,
/// `vulkan`); the core's default is the scalar reference.
pub trait EngineFactory<T: Scalar> {
    /// The engine's name.
    fn name(&self) -> &str;
    /// A new engine for one-layer attention.
    fn attention(&self) -> Result<Box<dyn Engine<T>>>;
    /// A new engine for multi-layer transformer stacks.
    fn stack(&self) -> Result<Box<dyn crate::families::stack::StackEngine<T>>>;
}

/// The scalar reference engine as a factory.
#[derive(Debug, Clone, Copy, Default)]
pub struct ScalarFactory;

impl<T: Scalar> EngineFactory<T> for ScalarFactory {
    fn name(&self) -> &str {
        "scalar"
    }
    fn attention(&self) -> Result<Box<dyn Engine<T>>> {
        Ok(Box::new(ScalarEngine::new()))
    }
    fn stack(&self) -> Result<Box<dyn crate::families::stack::StackEngine<T>>> {
        Ok(Box::new(crate::families::stack::StackScalar::new()))
    }
}
